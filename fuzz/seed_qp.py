#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seed the fuzz_qp_rx corpus.

usage: seed_qp.py OUTDIR [VECTOR_FILE...]

Writes OUTDIR/corpus-fuzz_qp_rx/: each seed is the 8-octet settings block
fuzz_qp_rx.c reads first (layout at the top of that file) followed by a
peer's FPDU stream from offset 0. Two sources:
  - the mpa-fpdu* and mpa-stream* vectors that start at stream offset 0,
    alone and chained, under a few settings;
  - conversations written here against the target's fixed memory layout
    (arena address, region sizes, STags, the WRs it posts), so that Sends
    fill the posted receives, Writes and Reads hit real MRs, and Read and
    atomic Responses answer the QP's own requests. Keep ARENA, SIZES and
    the WR groups in step with fuzz_qp_rx.c.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_from_vectors as sv  # noqa: E402

TARGET = "fuzz_qp_rx"

# ---------------------------------------------------------------- layout
ARENA = 0x10000000
CANARY = 32
SIZES = [256, 256, 128, 128, 128, 128, 16, 128, 128, 64]
R_RECV, R_RW, R_RD, R_SRC, R_PD2, R_SINK, R_ARES, R_F1, R_F2, R_NONE = range(10)
IOVA = {R_F1: 0x100000, R_F2: 2**64 - 128}

# WR groups (settings octet 5)
G_REG, G_SEND, G_READ, G_WRITE, G_7306, G_ZERO, G_INV, G_BIGREAD = (1 << i for i in range(8))

# RDMAP opcodes and queues
OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND, OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, \
    OP_TERM, OP_IMM, OP_IMM_SE, OP_ATOMIC_REQ, OP_ATOMIC_RESP = range(12)
QN = {OP_SEND: 0, OP_SEND_INV: 0, OP_SEND_SE: 0, OP_SEND_SE_INV: 0, OP_IMM: 0,
      OP_IMM_SE: 0, OP_READ_REQ: 1, OP_ATOMIC_REQ: 1, OP_TERM: 2, OP_ATOMIC_RESP: 3}
RTR_NONE, RTR_SEND, RTR_WRITE, RTR_READ = range(4)


def host(r):
    return ARENA + CANARY + sum(SIZES[j] + CANARY for j in range(r))


def stag(r):
    return (r + 1) << 8 | (1 if r in IOVA else 0)


def to(r, off=0):
    return (IOVA.get(r, host(r)) + off) % 2**64


def settings(crc=True, mk_rx=False, mk_tx=False, enforce=False, p2p=False, initiator=False,
             rfc7306=False, srq=False, rtr=RTR_NONE, ird=4, ord_=4, seg=0, direct=False,
             tx_each=True, tx_partial=False, half_sig=False, siw=False, direct_skip=False,
             seed=0, emss=88, groups=0, act_at=0, act=0):
    b0 = (crc | mk_rx << 1 | mk_tx << 2 | enforce << 3 | p2p << 4 | initiator << 5 |
          rfc7306 << 6 | srq << 7)
    b1 = rtr | (ird & 7) << 2 | (ord_ & 7) << 5
    b2 = (seg | direct << 2 | tx_each << 3 | tx_partial << 4 | half_sig << 5 | siw << 6 |
          direct_skip << 7)
    return bytes([b0, b1, b2, seed & 255, emss & 255, groups & 255, act_at & 255, act & 255])


# ---------------------------------------------------------------- messages
def u32(v):
    return struct.pack(">I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack(">Q", v % 2**64)


def untagged(op, msn, pay=b"", mo=0, last=True, inv=0, rdmap=b"", qn=None):
    ctrl = 0x01 | (0x40 if last else 0)
    q = QN[op] if qn is None else qn
    return bytes([ctrl, 0x40 | op]) + u32(inv) + u32(q) + u32(msn) + u32(mo) + rdmap + pay


def tagged(op, st, t, pay=b"", last=True):
    ctrl = 0x81 | (0x40 if last else 0)
    return bytes([ctrl, 0x40 | op]) + u32(st) + u64(t) + pay


def read_req_hdr(sink_stag, sink_to, size, src_stag, src_to):
    return u32(sink_stag) + u64(sink_to) + u32(size) + u32(src_stag) + u64(src_to)


def atomic_req_hdr(op, req_id, st, t, add_swap, compare=0):
    return (u32(op) + u32(req_id) + u32(st) + u64(t) + u64(add_swap) + u64(~0) + u64(compare) +
            u64(~0))


def pattern(n, k):
    return bytes((i * 7 + k * 13 + 1) & 255 for i in range(n))


class Peer:
    """Builds ULPDUs with per-queue MSNs from 1."""

    def __init__(self):
        self.msn = [1, 1, 1, 1]
        self.out = []

    def send(self, pay, op=OP_SEND, inv=0, segs=1):
        msn = self.msn[0]
        self.msn[0] += 1
        cut = [len(pay) * i // segs for i in range(segs + 1)]
        # MO out of order, but the segment with L last.
        parts = list(range(1, segs - 1)) + [0] + ([segs - 1] if segs > 1 else [])
        for i in parts:
            self.out.append(untagged(op, msn, pay[cut[i]:cut[i + 1]], mo=cut[i],
                                     last=(i == segs - 1), inv=inv))

    def imm(self, value, se=False):
        msn = self.msn[0]
        self.msn[0] += 1
        self.out.append(untagged(OP_IMM_SE if se else OP_IMM, msn, rdmap=u32(value) + u32(0)))

    def write(self, st, t, pay, segs=1):
        cut = [len(pay) * i // segs for i in range(segs + 1)]
        for i in range(segs):
            self.out.append(tagged(OP_WRITE, st, t + cut[i], pay[cut[i]:cut[i + 1]],
                                   last=(i == segs - 1)))

    def read_req(self, src_stag, src_to, size, sink_stag=0x4242, sink_to=0x1000):
        msn = self.msn[1]
        self.msn[1] += 1
        self.out.append(untagged(OP_READ_REQ, msn,
                                 rdmap=read_req_hdr(sink_stag, sink_to, size, src_stag, src_to)))

    def atomic_req(self, op, st, t, add_swap, compare=0):
        msn = self.msn[1]
        self.msn[1] += 1
        self.out.append(untagged(OP_ATOMIC_REQ, msn,
                                 rdmap=atomic_req_hdr(op, msn, st, t, add_swap, compare)))

    def read_resp(self, st, t, pay, segs=1):
        cut = [len(pay) * i // segs for i in range(segs + 1)]
        for i in range(segs):
            self.out.append(tagged(OP_READ_RESP, st, t + cut[i], pay[cut[i]:cut[i + 1]],
                                   last=(i == segs - 1)))

    def atomic_resp(self, req_id, orig):
        msn = self.msn[3]
        self.msn[3] += 1
        self.out.append(untagged(OP_ATOMIC_RESP, msn, rdmap=u32(req_id) + u64(orig)))

    def terminate(self, term, siw=False):
        msn = self.msn[2]
        self.msn[2] += 1
        if siw:
            body = bytes([(term >> 8 & 0xF) << 4 | term >> 12, term & 0xFF, 1, 0, 0, 28])
        else:
            body = struct.pack(">HBBH", term, 0x80, 0, 28)
        self.out.append(untagged(OP_TERM, msn, pay=body))

    def rtr(self, kind):
        if kind == RTR_WRITE:
            self.out.append(tagged(OP_WRITE, 1, 0))
        elif kind == RTR_READ:
            self.read_req(1, 0, 0, sink_stag=1, sink_to=0)
        else:
            self.send(b"")

    def stream(self, crc, markers):
        return sv.lay_out([sv.frame_fpdu(u) for u in self.out], 0, markers, crc)


# ---------------------------------------------------------------- scenarios
def sc_receives(p):
    """Sends that fill the five posted receives (and one repost)."""
    p.send(pattern(40, 1))
    p.send(pattern(64, 2), segs=2)
    p.send(b"")
    p.send(pattern(16, 3), op=OP_SEND_SE)
    p.send(pattern(80, 4), segs=3)


def sc_repost(p):
    """A sixth Send: it needs a receive reposted after a completion."""
    p.send(pattern(8, 5))


def sc_tagged(p):
    """Writes to every writable MR, zero-length ones, and the TO space's end."""
    p.write(stag(R_RW), to(R_RW, 16), pattern(32, 6))
    p.write(stag(R_RW), to(R_RW), pattern(256, 7), segs=3)
    p.write(stag(R_SINK), to(R_SINK, 100), pattern(28, 8))
    p.write(0, 0, b"")
    p.write(stag(R_F1), to(R_F1, 8), pattern(16, 9))
    p.write(stag(R_F2), to(R_F2, 100), pattern(28, 10))


def sc_reads(p):
    """The peer reads from us."""
    p.read_req(stag(R_RD), to(R_RD, 4), 20)
    p.read_req(stag(R_RW), to(R_RW), 256)
    p.read_req(0, 0, 0, sink_stag=0)
    p.read_req(stag(R_F2), to(R_F2, 64), 64)


def sc_flood(p):
    """Seven large Reads at the smallest MULPDU: hundreds of FPDUs queued."""
    for _ in range(7):
        p.read_req(stag(R_RW), to(R_RW), 256)


def sc_responses(p, groups):
    """Answers to the QP's own Reads, in the order they are posted."""
    if groups & G_READ:
        p.read_resp(stag(R_SINK), to(R_SINK), pattern(64, 11), segs=2)
        p.read_resp(stag(R_SINK), to(R_SINK, 64), pattern(40, 12))
    if groups & G_ZERO:
        p.read_resp(stag(R_SINK), to(R_SINK), b"")
    if groups & G_BIGREAD:
        p.read_resp(stag(R_RW), to(R_RW), pattern(256, 13), segs=3)


def sc_7306(p, groups):
    p.atomic_req(0, stag(R_RW), to(R_RW, 8), 5)
    p.atomic_req(2, stag(R_RW), to(R_RW, 16), 9, compare=0)
    p.atomic_req(0, stag(R_F2), to(R_F2, 120), 1)
    p.imm(0x11223344)
    p.imm(0x55667788, se=True)
    # Responses in the order of the QP's requests: its Reads come before
    # its atomics, the zero-length and large Reads after them.
    sc_responses(p, groups & G_READ)
    if groups & G_7306:
        p.atomic_resp(0, 0x1234)
        p.atomic_resp(1, 0x5678)
    sc_responses(p, groups & (G_ZERO | G_BIGREAD))


def sc_invalidate(p):
    p.send(pattern(8, 14), op=OP_SEND_INV, inv=stag(R_F1))
    p.write(stag(R_F1), to(R_F1), pattern(8, 15))  # now refused


def conversations():
    """(settings kwargs, Peer) pairs."""
    out = []

    def add(kw, *steps):
        p = Peer()
        p.g = kw.get("groups", 0)  # the WR groups the QP posts
        if kw.get("p2p") and not kw.get("initiator"):
            p.rtr(kw.get("rtr", RTR_NONE))
        if kw.get("p2p") and kw.get("initiator") and kw.get("rtr") == RTR_READ:
            p.read_resp(1, 0, b"")  # the answer to our READ RTR
        for s in steps:
            s(p)
        out.append((kw, p))

    all_g = G_REG | G_SEND | G_READ | G_WRITE | G_ZERO | G_BIGREAD
    add({}, sc_receives)
    add({"srq": True}, sc_receives)
    add({"srq": True, "seed": 1}, sc_receives)  # newest receive first
    add({"seg": 1}, sc_receives, sc_repost)
    add({"groups": G_REG}, sc_tagged)
    add({"ird": 7, "groups": G_REG}, sc_reads)
    add({"groups": G_READ | G_ZERO | G_BIGREAD, "ord_": 7}, lambda p: sc_responses(p, p.g))
    add({"groups": all_g | G_7306, "rfc7306": True, "ird": 7, "ord_": 7},
        lambda p: sc_7306(p, all_g | G_7306))
    add({"groups": G_REG}, sc_invalidate)
    add({"ird": 7, "groups": G_SEND, "emss": 0, "mk_tx": True, "tx_each": False}, sc_flood)
    add({"groups": all_g, "ird": 7, "ord_": 7}, sc_receives, sc_tagged, sc_reads,
        lambda p: sc_responses(p, all_g))
    for rtr in (RTR_SEND, RTR_WRITE, RTR_READ):
        add({"p2p": True, "rtr": rtr, "groups": G_SEND | G_READ}, sc_receives,
            lambda p: sc_responses(p, G_READ))
        add({"p2p": True, "initiator": True, "rtr": rtr, "groups": G_SEND | G_READ},
            lambda p: sc_responses(p, G_READ), sc_receives)
    add({"groups": G_SEND | G_READ}, lambda p: p.terminate(0x0102))
    add({"groups": G_SEND | G_READ, "siw": True}, lambda p: p.terminate(0x0102, siw=True))
    return out


def conversation_seeds():
    variants = [
        dict(),
        dict(crc=False),
        dict(mk_rx=True, mk_tx=True, seg=1),
        dict(seg=3, direct=True, seed=7),
        dict(seg=2, direct=True, direct_skip=True, tx_partial=True, seed=3),
        dict(enforce=True, emss=0),
        dict(half_sig=True, emss=2, seg=3, seed=9),
        dict(act_at=128, act=2),   # try to deregister every MR midway
        dict(act_at=100, act=4),   # post more WRs midway
        dict(act_at=200, act=8),   # SQD and back
        dict(act_at=64, act=1 | 16),
        dict(seg=3, direct=True, act=32, seed=5),  # ERR while receiving directly
        dict(tx_each=False),
        dict(act=128),             # destroyed without losing the connection
        dict(act=128, tx_partial=True, seed=11),
    ]
    for kw, p in conversations():
        # Octet by octet by default: the QP's fenced Read goes out only
        # after the first one is answered, and receives are reposted.
        kw.setdefault("seg", 1)
        for v in variants:
            s = dict(kw)
            s.update(v)
            markers = s.get("mk_rx", False)
            crc = s.get("crc", True)
            yield settings(**s) + p.stream(crc, markers)


def reconnect_seeds():
    """Two connections on the same QP (action bit 6): the second stream
    starts exactly where the action fires (octet by octet, it fires at
    len * settings[6] // 256), which zero-length Writes at the end of the
    second stream line up."""
    convs = conversations()
    pairs = [(0, 0), (0, 3), (1, 1), (8, 0)]
    for a, b in pairs:
        kw1, p1 = convs[a]
        kw2, p2 = convs[b]
        kw = dict(kw2)
        kw.update(kw1)
        kw["seg"] = 1
        crc = kw.get("crc", True)
        s1 = p1.stream(crc, kw.get("mk_rx", False))
        for extra in range(40):
            p2x = Peer()
            p2x.out = p2.out + [tagged(OP_WRITE, 0, 0)] * extra
            s2 = p2x.stream(crc, kw.get("mk_rx", False))
            total = len(s1) + len(s2)
            k = [k for k in range(256) if total * k // 256 == len(s1)]
            if k:
                kw["act_at"] = k[0]
                kw["act"] = 64
                yield settings(**kw) + s1 + s2
                break


# ---------------------------------------------------------------- vectors
def vector_seeds(paths):
    chain = {}
    for path in paths:
        for _id, kind, st, blob in sv.records(path):
            if not blob or not (kind.startswith("mpa-fpdu") or kind.startswith("mpa-stream")):
                continue
            if int(st.get("stream_offset", "0"), 0) != 0:
                continue
            crc = st.get("crc", "on") == "on"
            mk = st.get("markers", "off") == "on"
            for extra in (dict(), dict(srq=True, seg=2, seed=1),
                          dict(rfc7306=True, groups=0xFF, ird=7, ord_=7, seg=1),
                          dict(direct=True, seg=3, enforce=True)):
                yield settings(crc=crc, mk_rx=mk, **extra) + blob
            if kind == "mpa-fpdu" and "expect" not in st and not mk:
                chain.setdefault(crc, []).append(blob)
    for crc, blobs in chain.items():
        for extra in (dict(), dict(rfc7306=True, groups=0xFF, ird=7, ord_=7, seg=3, seed=2)):
            yield settings(crc=crc, **extra) + b"".join(blobs)


def main(argv):
    if len(argv) < 1:
        sys.stderr.write(__doc__)
        return 2
    d = os.path.join(argv[0], "corpus-" + TARGET)
    os.makedirs(d, exist_ok=True)
    n = 0
    for seed in conversation_seeds():
        sv.write_seed(d, seed)
        n += 1
    for seed in reconnect_seeds():
        sv.write_seed(d, seed)
        n += 1
    for seed in vector_seeds(argv[1:]):
        sv.write_seed(d, seed)
        n += 1
    print(f"seed_qp: {n} seeds -> {d}")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
