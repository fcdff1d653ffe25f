#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Generate the project's iWARP wire vectors (rfc-vectors/*.iwv, format iwv/1).

This is an independent second encoder, written from
shared/reference/iwarp-wire.md only (not from lib/), so that the C codec can
be checked against it.  Python 3 standard library only; deterministic.

    python3 scripts/gen_vectors.py --out rfc-vectors

rewrites the generated files (GENERATED below).  The six files copied from
shared/reference/vectors are not touched.
"""
import argparse
import os
import sys

# ------------------------------------------------------------------ CRC32c

_CRC_TABLE = []
for _i in range(256):
    _r = _i
    for _ in range(8):
        _r = (_r >> 1) ^ (0x82F63B78 if _r & 1 else 0)
    _CRC_TABLE.append(_r)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _CRC_TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


# ------------------------------------------------------------------ constants

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_M, F_C, F_R, F_ENH = 0x80, 0x40, 0x20, 0x10
MARKER_INTERVAL = 512
# Limits of the C reader (tests/iwv.h): a line's text after its key is kept in
# 512 octets, and a record holds at most 96 note/field/bits/crc/marker lines.
MAX_LINE_REST = 500
MAX_REC_LINES = 96

OP_WRITE, OP_RREQ, OP_RRESP, OP_SEND, OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, \
    OP_TERM, OP_IMM, OP_IMM_SE, OP_ATOMIC_REQ, OP_ATOMIC_RESP = range(12)
OP_NAMES = {0: "RDMA Write", 1: "RDMA Read Request", 2: "RDMA Read Response", 3: "Send",
            4: "Send with Invalidate", 5: "Send with SE", 6: "Send with SE and Invalidate",
            7: "Terminate", 8: "Immediate Data", 9: "Immediate Data with SE",
            10: "Atomic Request", 11: "Atomic Response"}

# reason name -> TERMINATE triple (layer<<12 | etype<<8 | ecode)
REASONS = {
    "mpa_key": 0x2004, "mpa_rev": 0x2004, "mpa_reserved": 0x2004, "mpa_pd_len": 0x2004,
    "mpa_truncated": 0x2004, "mpa_enh_short": 0x2004, "mpa_reject_req": 0x2004,
    "fpdu_crc": 0x2002, "fpdu_marker": 0x2003, "fpdu_too_long": 0x1000,
    "fpdu_too_short": 0x1000, "fpdu_truncated": 0x2001, "ddp_t_version": 0x1104,
    "ddp_u_version": 0x1206, "ddp_qn": 0x1201, "rdmap_version": 0x0205,
    "rdmap_opcode": 0x0206, "rdmap_not_last": 0x0206, "rdmap_term": 0x02FF,
    "rdmap_atomic_op": 0x0206,
}

SRC_DOC = "computed here by scripts/gen_vectors.py from shared/reference/iwarp-wire.md"


def be(v, n):
    return (v & ((1 << (8 * n)) - 1)).to_bytes(n, "big")


def pattern(n, seed=0):
    """Deterministic payload: octet i = (i*37 + 11 + seed) mod 256."""
    return bytes(((i * 37 + 11 + seed) & 0xFF) for i in range(n))


def pad_len(ulen):
    return (-(2 + ulen)) % 4


# ------------------------------------------------------------------ headers

def ddp_ctrl(tagged, last, dv=1, rsvd=0):
    return (0x80 if tagged else 0) | (0x40 if last else 0) | ((rsvd & 0xF) << 2) | (dv & 3)


def rdmap_ctrl(op, rv=1, rsvd=0):
    return ((rv & 3) << 6) | ((rsvd & 3) << 4) | (op & 0xF)


def tagged_hdr(op, stag, to, last=True, dv=1, rv=1):
    return bytes([ddp_ctrl(True, last, dv), rdmap_ctrl(op, rv)]) + be(stag, 4) + be(to, 8)


def untagged_hdr(op, qn, msn, mo=0, last=True, inv=0, dv=1, rv=1):
    return (bytes([ddp_ctrl(False, last, dv), rdmap_ctrl(op, rv)]) + be(inv, 4) + be(qn, 4)
            + be(msn, 4) + be(mo, 4))


def read_req_body(sink_stag, sink_to, size, src_stag, src_to):
    return be(sink_stag, 4) + be(sink_to, 8) + be(size, 4) + be(src_stag, 4) + be(src_to, 8)


def term_body(layer, etype, ecode, m=0, d=0, r=0, seglen=None, ddp_hdr=b"", rdma_hdr=b""):
    out = bytes([(layer << 4) | etype, ecode, (m << 7) | (d << 6) | (r << 5), 0])
    if seglen is not None:
        out += be(seglen, 2)
    return out + ddp_hdr + rdma_hdr


def atomic_req_body(aop, req_id, stag, to, add_swap, add_swap_mask, cmp_data, cmp_mask):
    return (be(aop, 4) + be(req_id, 4) + be(stag, 4) + be(to, 8) + be(add_swap, 8)
            + be(add_swap_mask, 8) + be(cmp_data, 8) + be(cmp_mask, 8))


def atomic_resp_body(req_id, orig):
    return be(req_id, 4) + be(orig, 8)


# ------------------------------------------------------------------ records

class Rec:
    def __init__(self, vid, kind, source=SRC_DOC, origin="computed"):
        self.vid, self.kind, self.source, self.origin = vid, kind, source, origin
        self.settings = []
        self.notes = []
        self.blob = b""
        self.lines = []

    def set(self, **kw):
        for k, v in kw.items():
            self.settings.append(f"{k}={v}")
        return self

    def note(self, text):
        self.notes.append(text)
        return self

    def field(self, off, ln, name, value):
        line = f"field {off} {ln} {name} {value}"
        if len(line) > MAX_LINE_REST:
            self.notes.append(f"{name} ({ln} octets at {off}) has no field line: it would exceed "
                              f"the C reader's {MAX_LINE_REST}-character line limit")
            return
        self.lines.append(line)

    def bits(self, off, mask, name, val):
        self.lines.append(f"bits {off} 0x{mask:02x} {name} {val}")

    def render(self):
        n = len(self.notes) + len(self.lines)
        assert n <= MAX_REC_LINES, f"{self.vid}: {n} lines > {MAX_REC_LINES} (tests/iwv.h)"
        out = [f"vector {self.vid}", f"origin {self.origin}", f"kind {self.kind}",
               f"source {self.source}"]
        if self.settings:
            out.append("settings " + " ".join(self.settings))
        out += [f"note {n}" for n in self.notes]
        for i in range(0, len(self.blob), 16):
            out.append("hex " + " ".join(f"{b:02x}" for b in self.blob[i:i + 16]))
        out += self.lines
        out.append("end")
        return "\n".join(out) + "\n"


def fmt_val(chunk, style):
    if style == "dec":
        return str(int.from_bytes(chunk, "big"))
    if style == "hex":
        return "0x" + chunk.hex()
    if style == "ascii":
        return '"' + chunk.decode("ascii") + '"'
    return "bytes:" + chunk.hex()


# ------------------------------------------------------------------ FPDU stream layout

class Laid:
    """One FPDU laid out in a raw stream blob."""

    def __init__(self):
        self.start = 0        # raw offset of the FPDU's first octet (a leading marker included)
        self.map = []         # logical (marker-free) index -> raw offset
        self.crc_off = 0      # raw offset of the CRC field
        self.crc = 0
        self.ulpdu = b""
        self.markers = []     # (raw offset, fpduptr)
        self.logical = b""


def layout(ulpdus, crc_on=True, markers_on=False, stream_offset=0, corrupt=None):
    """Lay out FPDUs (each given by its ULPDU = DDP segment) into one blob.

    Markers (if on) go at every stream offset that is a multiple of 512
    (stream offset = stream_offset + raw index, modulo 2^32); a marker due
    exactly at an FPDU's first octet belongs to that FPDU (FPDUPTR 0). The
    CRC covers every FPDU octet before the CRC field, markers included.
    corrupt: optional callable(list of Laid, bytearray) for bad vectors.
    """
    assert stream_offset % 4 == 0, "FPDUs are 4-aligned in stream space"
    raw = bytearray()
    laid = []
    for ulpdu in ulpdus:
        lf = Laid()
        lf.ulpdu = ulpdu
        logical = be(len(ulpdu), 2) + ulpdu + bytes(pad_len(len(ulpdu)))
        lf.logical = logical
        lf.start = len(raw)

        def due():
            return markers_on and (stream_offset + len(raw)) % MARKER_INTERVAL == 0

        for b in logical:
            if due():
                ptr = len(raw) - lf.start
                lf.markers.append((len(raw), ptr))
                raw += be(0, 2) + be(ptr, 2)
            lf.map.append(len(raw))
            raw.append(b)
        if due():  # between PAD and CRC
            ptr = len(raw) - lf.start
            lf.markers.append((len(raw), ptr))
            raw += be(0, 2) + be(ptr, 2)
        lf.crc_off = len(raw)
        lf.crc = crc32c(raw[lf.start:]) if crc_on else 0
        raw += lf.crc.to_bytes(4, "little")
        laid.append(lf)
    if corrupt:
        corrupt(laid, raw)
    return laid, bytes(raw)


def contiguous(lf, loff, ln):
    a = lf.map[loff]
    return lf.map[loff + ln - 1] == a + ln - 1


class FpduRec(Rec):
    """A record holding one or more FPDUs, with helpers to describe fields."""

    def __init__(self, vid, kind, crc_on=True, markers_on=False, stream_offset=0, **kw):
        super().__init__(vid, kind, **kw)
        self.crc_on, self.markers_on, self.stream_offset = crc_on, markers_on, stream_offset
        self.split_notes = []

    def build(self, ulpdus, describe=None, corrupt=None, crc_lines=True, truncate=None):
        """describe: how many leading FPDUs get field/bits/marker lines (None = all).
        A runner checks those lines against what its decoder produced, so the
        FPDU a bad vector fails on is described by notes only."""
        self.laid, blob = layout(ulpdus, self.crc_on, self.markers_on, self.stream_offset,
                                 corrupt)
        if truncate is not None:
            blob = blob[:truncate]
        self.blob = blob
        s = dict(crc="on" if self.crc_on else "off", markers="on" if self.markers_on else "off",
                 stream_offset=self.stream_offset)
        self.settings = [f"{k}={v}" for k, v in s.items()] + self.settings
        for i, lf in enumerate(self.laid):
            described = describe is None or i < describe
            if described:
                self.describe(lf)
            else:
                self.note_fpdu(i, lf)
            for off, ptr in lf.markers:
                if described and off + 4 <= len(blob):
                    self.lines.append(f"marker {off} {ptr}")
                    self.field(off, 2, "mpa.marker.reserved", "0x0000")
                    self.field(off + 2, 2, "mpa.marker.fpduptr", ptr)
            if crc_lines and lf.crc_off + 4 <= len(blob):
                if self.crc_on:
                    self.lines.append(f"crc32c 0x{lf.crc:08x} {lf.start} {lf.crc_off}")
                    if lf.start == 0:
                        self.lines.append("crc_wire %d %s" % (
                            lf.crc_off, " ".join(f"{b:02x}" for b in lf.crc.to_bytes(4, "little"))))
        if not self.crc_on:
            self.note("CRC not negotiated: every CRC field is sent as 00 00 00 00")
        for n in self.split_notes:
            self.note(n)
        return self

    def note_fpdu(self, i, lf):
        got = [self.blob[r] for r in lf.map if r < len(self.blob)]
        txt = (f"FPDU {i} (the one the decoder must reject) starts at blob offset {lf.start}; "
               f"its marker-free octets begin {bytes(got[:24]).hex(' ')}")
        if lf.markers:
            txt += "; markers at " + ", ".join(
                f"{o} ({self.blob[o:o + 4].hex(' ')})" for o, _ in lf.markers if o < len(self.blob))
        self.note(txt)

    def f(self, lf, loff, ln, name, style="dec"):
        """field line at logical offset loff of FPDU lf (skipped if a marker splits it)."""
        if loff + ln > len(lf.map):
            return
        if lf.map[loff + ln - 1] >= len(self.blob):
            return
        if not contiguous(lf, loff, ln):
            self.split_notes.append(
                f"{name} (FPDU {self.laid.index(lf)}) is split by a marker, so it has no field line")
            return
        off = lf.map[loff]
        self.field(off, ln, name, fmt_val(self.blob[off:off + ln], style))

    def b(self, lf, loff, mask, name):
        off = lf.map[loff]
        if off >= len(self.blob):
            return
        shift = (mask & -mask).bit_length() - 1
        self.bits(off, mask, name, (self.blob[off] & mask) >> shift)

    def describe(self, lf):
        u = lf.ulpdu
        self.f(lf, 0, 2, "mpa.ulpdu_length")
        if len(u) < 2:
            return
        self.f(lf, 2, 1, "ddp.ctrl", "hex")
        self.b(lf, 2, 0x80, "ddp.t")
        self.b(lf, 2, 0x40, "ddp.l")
        self.b(lf, 2, 0x3C, "ddp.rsvd")
        self.b(lf, 2, 0x03, "ddp.dv")
        self.f(lf, 3, 1, "rdmap.ctrl", "hex")
        self.b(lf, 3, 0xC0, "rdmap.rv")
        self.b(lf, 3, 0x30, "rdmap.rsvd")
        self.b(lf, 3, 0x0F, "rdmap.opcode")
        tagged = bool(u[0] & 0x80)
        op = u[1] & 0x0F
        if tagged:
            if len(u) < 14:
                return
            self.f(lf, 4, 4, "ddp.stag", "hex")
            self.f(lf, 8, 8, "ddp.to", "hex")
            hl = 14
        else:
            if len(u) < 18:
                return
            self.f(lf, 4, 4, "rdmap.inv_stag" if op in (4, 6) else "rdmap.reserved", "hex")
            self.f(lf, 8, 4, "ddp.qn")
            self.f(lf, 12, 4, "ddp.msn")
            self.f(lf, 16, 4, "ddp.mo")
            hl = 18
        b = 2 + hl
        rest = len(u) - hl
        if not tagged and op == OP_RREQ and rest >= 28:
            self.f(lf, b, 4, "rdmap.rr.sink_stag", "hex")
            self.f(lf, b + 4, 8, "rdmap.rr.sink_to", "hex")
            self.f(lf, b + 12, 4, "rdmap.rr.read_size")
            self.f(lf, b + 16, 4, "rdmap.rr.source_stag", "hex")
            self.f(lf, b + 20, 8, "rdmap.rr.source_to", "hex")
            used = 28
        elif not tagged and op == OP_TERM and rest >= 4:
            self.b(lf, b, 0xF0, "term.layer")
            self.b(lf, b, 0x0F, "term.etype")
            self.f(lf, b + 1, 1, "term.ecode", "hex")
            self.b(lf, b + 2, 0x80, "term.m")
            self.b(lf, b + 2, 0x40, "term.d")
            self.b(lf, b + 2, 0x20, "term.r")
            used = 4
            flags = u[hl + 2]
            if flags & 0x80 and rest >= 6:
                self.f(lf, b + 4, 2, "term.ddp_segment_length")
                used = 6
            if flags & 0x40 and rest >= used + 14:
                dl = 14 if u[hl + used] & 0x80 else 18
                if rest >= used + dl:
                    self.f(lf, b + used, dl, "term.ddp_header", "bytes")
                    used += dl
            if flags & 0x20 and rest >= used + 28:
                self.f(lf, b + used, 28, "term.rdma_header", "bytes")
                used += 28
        elif not tagged and op == OP_ATOMIC_REQ and rest >= 52:
            self.f(lf, b, 4, "rdmap.atomic.opcode_word", "hex")
            self.f(lf, b + 4, 4, "rdmap.atomic.request_id")
            self.f(lf, b + 8, 4, "rdmap.atomic.remote_stag", "hex")
            self.f(lf, b + 12, 8, "rdmap.atomic.remote_to", "hex")
            self.f(lf, b + 20, 8, "rdmap.atomic.add_or_swap_data", "hex")
            self.f(lf, b + 28, 8, "rdmap.atomic.add_or_swap_mask", "hex")
            self.f(lf, b + 36, 8, "rdmap.atomic.compare_data", "hex")
            self.f(lf, b + 44, 8, "rdmap.atomic.compare_mask", "hex")
            used = 52
        elif not tagged and op == OP_ATOMIC_RESP and rest >= 12:
            self.f(lf, b, 4, "rdmap.atomic.original_request_id")
            self.f(lf, b + 4, 8, "rdmap.atomic.original_remote_value", "hex")
            used = 12
        elif not tagged and op in (OP_IMM, OP_IMM_SE) and rest >= 8:
            self.f(lf, b, 8, "rdmap.immediate_data", "hex")
            used = 8
        else:
            used = 0
            if rest > 0 and op in (0, 2, 3, 4, 5, 6):
                p = u[hl:]
                style = "ascii" if all(0x21 <= c < 0x7F and c != 0x22 for c in p) else "bytes"
                self.f(lf, b, rest, "payload", style)
                used = rest
        pad = pad_len(len(u))
        if pad:
            self.f(lf, 2 + len(u), pad, "mpa.pad", "bytes")


# ------------------------------------------------------------------ file: crc32c_more.iwv

def gen_crc():
    recs = []
    for fill, nm in ((0x00, "zeros"), (0xFF, "ones")):
        for n in (1, 2, 3, 4, 7, 8, 15, 16, 31, 33, 63, 64):
            r = Rec(f"crc_{nm}_{n}", "crc32c")
            r.blob = bytes([fill]) * n
            r.note(f"{n} octets of 0x{fill:02x}")
            c = crc32c(r.blob)
            r.lines.append(f"crc32c 0x{c:08x} 0 {n}")
            recs.append(r)
    r = Rec("crc_incrementing_64", "crc32c")
    r.blob = bytes(range(64))
    r.note("64 octets 0x00, 0x01, ..., 0x3f")
    r.lines.append(f"crc32c 0x{crc32c(r.blob):08x} 0 64")
    recs.append(r)
    r = Rec("crc_residue_zeros32", "crc32c")
    data = bytes(32)
    c = crc32c(data)
    r.blob = data + c.to_bytes(4, "little")
    r.note("32 zero octets followed by their CRC (0x8a9136aa) stored least-significant octet first")
    r.note("a CRC over data + its LSB-first CRC always gives the residue 0x48674bc7 (iwarp-wire.md 4.1)")
    r.lines.append(f"crc32c 0x{c:08x} 0 32")
    r.lines.append(f"crc32c 0x{crc32c(r.blob):08x} 0 36")
    recs.append(r)
    r = Rec("crc_sub_range", "crc32c")
    r.blob = b"xx123456789yy"
    r.note("the catalogue check string inside other octets: CRC over [2,11) is the check value 0xe3069283")
    r.lines.append(f"crc32c 0x{crc32c(r.blob[2:11]):08x} 2 11")
    recs.append(r)
    return recs


# ------------------------------------------------------------------ MPA frames

def frame_bytes(req, flags, rev, pd=b"", pd_len=None, key=None):
    k = key if key is not None else (KEY_REQ if req else KEY_REP)
    n = len(pd) if pd_len is None else pd_len
    return k + bytes([flags, rev]) + be(n, 2) + pd


def block6581(a=0, b=0, c=0, d=0, ird=0, ord_=0):
    return be((a << 15) | (b << 14) | (ird & 0x3FFF), 2) + be((c << 15) | (d << 14) | (ord_ & 0x3FFF), 2)


def describe_frame(r, blob, full=True):
    key = blob[:16]
    if len(key) == 16:
        if key in (KEY_REQ, KEY_REP):
            r.field(0, 16, "mpa.key", '"' + key.decode() + '"')
        else:
            r.field(0, 16, "mpa.key", "bytes:" + key.hex())
    if len(blob) < 20:
        return
    fl = blob[16]
    r.field(16, 1, "mpa.flags", f"0x{fl:02x}")
    r.bits(16, 0x80, "mpa.m", fl >> 7 & 1)
    r.bits(16, 0x40, "mpa.c", fl >> 6 & 1)
    r.bits(16, 0x20, "mpa.r", fl >> 5 & 1)
    r.bits(16, 0x10, "mpa.enhanced", fl >> 4 & 1)
    r.bits(16, 0x0F, "mpa.res", fl & 0xF)
    r.field(17, 1, "mpa.rev", blob[17])
    pdl = int.from_bytes(blob[18:20], "big")
    r.field(18, 2, "mpa.pd_length", pdl)
    if not full:
        return
    off = 20
    if blob[17] == 2 and fl & F_ENH and pdl >= 4 and len(blob) >= 24:
        iw = int.from_bytes(blob[20:22], "big")
        ow = int.from_bytes(blob[22:24], "big")
        r.field(20, 2, "mpa6581.ird_word", f"0x{iw:04x}")
        r.bits(20, 0x80, "mpa6581.a_p2p", iw >> 15)
        r.bits(20, 0x40, "mpa6581.b_send_rtr", iw >> 14 & 1)
        r.field(20, 2, "mpa6581.ird", f"mask:0x3fff:{iw & 0x3FFF}")
        r.field(22, 2, "mpa6581.ord_word", f"0x{ow:04x}")
        r.bits(22, 0x80, "mpa6581.c_write_rtr", ow >> 15)
        r.bits(22, 0x40, "mpa6581.d_read_rtr", ow >> 14 & 1)
        r.field(22, 2, "mpa6581.ord", f"mask:0x3fff:{ow & 0x3FFF}")
        off = 24
    ulp = blob[off:20 + pdl]
    if ulp:
        if all(0x21 <= c < 0x7F and c != 0x22 for c in ulp):
            r.field(off, len(ulp), "mpa.private_data", '"' + ulp.decode() + '"')
        else:
            r.field(off, len(ulp), "mpa.private_data", "bytes:" + ulp.hex())


def flag_text(fl):
    s = [n for m, n in ((F_M, "M"), (F_C, "C"), (F_R, "R"), (F_ENH, "enhanced")) if fl & m]
    if fl & 0x0F:
        s.append(f"Res=0x{fl & 0xF:x}")
    return "+".join(s) if s else "no flags"


def frame_rec(vid, req, flags, rev, pd=b"", block=None, note=None, extra=None):
    r = Rec(vid, "mpa-frame", source=SRC_DOC + " (RFC 5044 / RFC 6581 frame)")
    r.set(frame="request" if req else "reply")
    full_pd = (block or b"") + pd
    r.blob = frame_bytes(req, flags, rev, full_pd)
    what = "Request" if req else "Reply"
    r.note(f"Rev {rev} {what}, flags {flag_text(flags)} (0x{flags:02x}), PD_Length {len(full_pd)}"
           + (f" = 4-octet RFC 6581 block + {len(pd)} octets of ULP private data" if block else ""))
    if note:
        r.note(note)
    if extra:
        for e in extra:
            r.note(e)
    describe_frame(r, r.blob)
    return r


def gen_frames():
    recs = []
    # Rev 1: every M/C combination in a Request, every M/C/R combination in a Reply
    for fl in (0x00, F_C, F_M, F_M | F_C):
        recs.append(frame_rec(f"frame_req_rev1_{flag_text(fl).replace('+', '_').replace(' ', '_').lower()}",
                              True, fl, 1))
    for fl in range(0, 0x100, 0x20):
        recs.append(frame_rec(f"frame_rep_rev1_{flag_text(fl).replace('+', '_').replace(' ', '_').lower()}",
                              False, fl, 1,
                              pd=(b"rejected" if fl & F_R else b""),
                              note="R=1: the Responder's ULP rejects the connection" if fl & F_R else None))
    # Rev 2 without the enhanced flag: no RFC 6581 block
    recs.append(frame_rec("frame_req_rev2_not_enhanced", True, F_C, 2,
                          note="Rev 2 without the enhanced flag: no IRD/ORD block, private data is all ULP"))
    recs.append(frame_rec("frame_rep_rev2_not_enhanced_pd", False, F_C, 2, pd=b"hello"))
    # Rev 2 enhanced: IRD/ORD/A/B/C/D combinations
    enh = [
        ("frame_req_rev2_siw_default_no_a", True, dict(ird=1, ord_=1),
         "siw default (peer_to_peer off): 00 01 00 01, IRD 1 ORD 1, no A; Intel drivers refuse this"),
        ("frame_req_rev2_p2p_write_rtr", True, dict(a=1, c=1, ird=16, ord_=16), "A + zero-length Write RTR offered"),
        ("frame_req_rev2_p2p_read_rtr", True, dict(a=1, d=1, ird=16, ord_=16), "A + zero-length Read RTR offered (cxgb4 default)"),
        ("frame_req_rev2_p2p_send_rtr", True, dict(a=1, b=1, ird=16, ord_=16), "A + zero-length Send RTR offered"),
        ("frame_req_rev2_p2p_write_read_rtr", True, dict(a=1, c=1, d=1, ird=8, ord_=4), "A + Write and Read RTR offered (siw, irdma)"),
        ("frame_req_rev2_p2p_all_rtr", True, dict(a=1, b=1, c=1, d=1, ird=2, ord_=2), "A + all three RTR types offered"),
        ("frame_req_rev2_ird_ord_3fff", True, dict(ird=0x3FFF, ord_=0x3FFF), "IRD = ORD = 0x3FFF (Intel: no IRD/ORD negotiation), no flags"),
        ("frame_req_rev2_p2p_ird_ord_3fff", True, dict(a=1, c=1, d=1, ird=0x3FFF, ord_=0x3FFF), "A+C+D with IRD = ORD = 0x3FFF: ff ff ff ff"),
        ("frame_req_rev2_ird_ord_128", True, dict(a=1, d=1, ird=128, ord_=128), "IRD 128 ORD 128 with A+D"),
        ("frame_req_rev2_ird_ord_0", True, dict(ird=0, ord_=0), "IRD 0 ORD 0, no flags: 00 00 00 00"),
        ("frame_rep_rev2_p2p_chose_write", False, dict(a=1, c=1, ird=16, ord_=16), "Reply echoes A and selects exactly one RTR: Write"),
        ("frame_rep_rev2_p2p_chose_read", False, dict(a=1, d=1, ird=4, ord_=8), "Reply echoes A and selects the Read RTR"),
        ("frame_rep_rev2_p2p_chose_send", False, dict(a=1, b=1, ird=1, ord_=1), "Reply echoes A and selects the Send RTR"),
        ("frame_rep_rev2_ird_ord_3fff", False, dict(ird=0x3FFF, ord_=0x3FFF), "Reply with IRD = ORD = 0x3FFF, no P2P"),
        ("frame_rep_rev2_ird_ord_0", False, dict(ird=0, ord_=0), "Reply with IRD 0 ORD 0, no P2P"),
    ]
    for vid, req, blk, note in enh:
        recs.append(frame_rec(vid, req, F_C | F_ENH, 2, block=block6581(**blk), note=note))
    recs.append(frame_rec("frame_req_rev2_markers_crc_p2p", True, F_M | F_C | F_ENH, 2,
                          block=block6581(a=1, c=1, d=1, ird=16, ord_=16),
                          note="M, C and enhanced together"))
    recs.append(frame_rec("frame_req_rev2_no_crc_p2p", True, F_ENH, 2,
                          block=block6581(a=1, c=1, ird=16, ord_=16), note="enhanced without C"))
    recs.append(frame_rec("frame_rep_rev2_reject_pd", False, F_C | F_R | F_ENH, 2,
                          block=block6581(a=1, c=1, ird=16, ord_=16), pd=b"no-resources",
                          note="enhanced Reject: R=1, RFC 6581 block still present (cxgb4 style), then ULP private data"))
    recs.append(frame_rec("frame_rep_rev1_reject_no_pd", False, F_C | F_R, 1,
                          note="Reject without private data"))
    # private data sizes
    for n in (1, 252, 256, 508, 512):
        recs.append(frame_rec(f"frame_req_rev1_pd_{n}", True, F_C, 1, pd=pattern(n, n),
                              note=f"{n} octets of ULP private data (pattern (i*37+11+{n}) mod 256)"
                              + ("; 512 is the RFC maximum" if n == 512 else "")))
    for n in (0, 1, 252, 508):
        recs.append(frame_rec(f"frame_req_rev2_enh_pd_{n}", True, F_C | F_ENH, 2,
                              block=block6581(a=1, c=1, d=1, ird=16, ord_=16), pd=pattern(n, n),
                              note=f"{n} octets of ULP private data after the block"
                              + ("; 252 + 4 = 256 = Linux RDMA_MAX_PRIVATE_DATA" if n == 252 else "")
                              + ("; 508 + 4 = 512, the RFC maximum" if n == 508 else "")))
    recs.append(frame_rec("frame_rep_rev2_enh_pd_252", False, F_C | F_ENH, 2,
                          block=block6581(a=1, c=1, ird=16, ord_=16), pd=pattern(252, 7)))
    # lenient parsing: reserved flag bits are kept and ignored
    recs.append(frame_rec("frame_req_rev1_reserved_bit_lenient", True, F_C | 0x08, 1,
                          note="Res bit 0x08 set (siw MPA_RR_FLAG_GSO_EXP): valid in the default lenient parse; "
                          "the same frame with parse=strict is frame_bad_reserved_bits_strict"))
    return recs


def bad_frame_rec(vid, expect, frame, blob, notes, parse=None, full=True):
    del full  # bad frames get no field lines (see below)
    r = Rec(vid, "mpa-frame-bad", source=SRC_DOC + " (RFC 5044 / RFC 6581 frame validation)")
    kw = dict(frame=frame, expect=expect, term=f"0x{REASONS[expect]:04x}")
    if parse:
        kw["parse"] = parse
    r.set(**kw)
    for n in notes:
        r.note(n)
    r.blob = blob
    # no field/bits lines: a runner checks those against a parsed frame, and
    # this one must not parse
    r.note(f"octets: key {blob[:16].hex(' ')}"
           + (f", flags 0x{blob[16]:02x}" if len(blob) > 16 else "")
           + (f", rev {blob[17]}" if len(blob) > 17 else "")
           + (f", PD_Length {int.from_bytes(blob[18:20], 'big')}" if len(blob) >= 20 else "")
           + f", {max(0, len(blob) - 20)} octets of private data present")
    return r


def gen_bad_frames():
    R = []
    R.append(bad_frame_rec("frame_bad_req_key_as_reply", "mpa_key", "reply",
                           frame_bytes(True, F_C, 1), ["a Request key where the parser expects a Reply"]))
    R.append(bad_frame_rec("frame_bad_rep_key_as_request", "mpa_key", "request",
                           frame_bytes(False, F_C, 1), ["a Reply key where the parser expects a Request"]))
    R.append(bad_frame_rec("frame_bad_garbage_key", "mpa_key", "request",
                           frame_bytes(True, F_C, 1, key=b"MPA ID Xyz Frame"), ["key is neither Request nor Reply"]))
    R.append(bad_frame_rec("frame_bad_lowercase_key", "mpa_key", "reply",
                           frame_bytes(False, F_C, 1, key=b"mpa id rep frame"), ["key compare is exact, case-sensitive"]))
    R.append(bad_frame_rec("frame_bad_http_key", "mpa_key", "request",
                           b"GET / HTTP/1.1\r\n" + bytes([0x40, 1, 0, 0]), ["an HTTP request line instead of the key"]))
    for rev in (0, 3, 255):
        R.append(bad_frame_rec(f"frame_bad_rev_{rev}", "mpa_rev", "request",
                               frame_bytes(True, F_C, rev), [f"Rev {rev}: only 1 and 2 are supported"
                                                           + (" (0 = pre-RFC draft MPA)" if rev == 0 else "")]))
    R.append(bad_frame_rec("frame_bad_reply_rev_0", "mpa_rev", "reply",
                           frame_bytes(False, F_C, 0), ["Reply with Rev 0"]))
    R.append(bad_frame_rec("frame_bad_pd_len_513", "mpa_pd_len", "request",
                           frame_bytes(True, F_C, 1, pattern(513)), ["PD_Length 513 > 512; all 513 octets are present"]))
    R.append(bad_frame_rec("frame_bad_pd_len_ffff", "mpa_pd_len", "reply",
                           frame_bytes(False, F_C, 1, b"", pd_len=0xFFFF),
                           ["PD_Length 0xFFFF; only the 20-octet header is present: the parser must reject it "
                            "from the header alone (before waiting for private data)"]))
    R.append(bad_frame_rec("frame_bad_enh_pd_len_2", "mpa_enh_short", "request",
                           frame_bytes(True, F_C | F_ENH, 2, b"\x80\x10"),
                           ["Rev 2 + enhanced flag but PD_Length 2 < 4 (no room for the IRD/ORD block)"], full=False))
    R.append(bad_frame_rec("frame_bad_enh_pd_len_0", "mpa_enh_short", "reply",
                           frame_bytes(False, F_C | F_ENH, 2, b""),
                           ["Rev 2 + enhanced flag but PD_Length 0"], full=False))
    R.append(bad_frame_rec("frame_bad_truncated_header", "mpa_truncated", "request",
                           frame_bytes(True, F_C, 1)[:12],
                           ["only 12 of the 20 header octets; parse=complete: the input is all there is"],
                           parse="complete"))
    R.append(bad_frame_rec("frame_bad_truncated_header_19", "mpa_truncated", "reply",
                           frame_bytes(False, F_C, 1)[:19],
                           ["19 of the 20 header octets; parse=complete"], parse="complete"))
    R.append(bad_frame_rec("frame_bad_truncated_pd", "mpa_truncated", "request",
                           frame_bytes(True, F_C, 1, b"abc", pd_len=8),
                           ["PD_Length 8 but only 3 octets of private data; parse=complete"],
                           parse="complete", full=False))
    R.append(bad_frame_rec("frame_bad_truncated_enh_block", "mpa_truncated", "request",
                           frame_bytes(True, F_C | F_ENH, 2, b"\x80\x10", pd_len=4),
                           ["enhanced, PD_Length 4 but the IRD/ORD block stops after 2 octets; parse=complete"],
                           parse="complete", full=False))
    R.append(bad_frame_rec("frame_bad_reserved_bits_strict", "mpa_reserved", "request",
                           frame_bytes(True, F_C | 0x08, 1),
                           ["Res bit 0x08 set; an error only with parse=strict (lenient: frame_req_rev1_reserved_bit_lenient)"],
                           parse="strict"))
    R.append(bad_frame_rec("frame_bad_reserved_all_strict", "mpa_reserved", "reply",
                           frame_bytes(False, F_C | 0x0F, 1),
                           ["all four Res bits (0x0f) set in a Reply; parse=strict"], parse="strict"))
    R.append(bad_frame_rec("frame_bad_reject_in_request_strict", "mpa_reject_req", "request",
                           frame_bytes(True, F_C | F_R, 1),
                           ["R (reject) set in a Request; an error only with parse=strict"], parse="strict"))
    return R


# ------------------------------------------------------------------ valid FPDUs

RT = b"rdma_test"


def fpdu(vid, ulpdu, notes, crc_on=True, markers_on=False, stream_offset=0, kind="mpa-fpdu"):
    r = FpduRec(vid, kind, crc_on, markers_on, stream_offset)
    for n in notes:
        r.note(n)
    r.build([ulpdu])
    return r


def gen_fpdu_ops():
    R = []
    R.append(fpdu("fpdu_send_se", untagged_hdr(OP_SEND_SE, 0, 2) + RT,
                  ["Send with Solicited Event (opcode 0x5), QN 0 MSN 2, 'rdma_test'"]))
    R.append(fpdu("fpdu_send_inv", untagged_hdr(OP_SEND_INV, 0, 3, inv=0x00ABCD01) + RT,
                  ["Send with Invalidate (opcode 0x4): octets 2-5 of the DDP header carry the STag 0x00abcd01 to invalidate"]))
    R.append(fpdu("fpdu_send_se_inv", untagged_hdr(OP_SEND_SE_INV, 0, 4, inv=0x12345678) + RT,
                  ["Send with SE and Invalidate (opcode 0x6), Invalidate STag 0x12345678"]))
    R.append(fpdu("fpdu_write_8k_to", tagged_hdr(OP_WRITE, 0x00001234, 0x00007F0000002000) + pattern(40),
                  ["RDMA Write of 40 octets to STag 0x1234 at a 64-bit TO 0x00007f0000002000"]))
    R.append(fpdu("fpdu_read_request_siw_style",
                  untagged_hdr(OP_RREQ, 1, 3) + read_req_body(0x00005501, 0x7F00DEAD0000, 65536, 0x0000AA02, 0x1000),
                  ["RDMA Read Request QN 1 MSN 3: read 65536 octets from source STag 0xaa02 TO 0x1000 into sink STag 0x5501 TO 0x7f00dead0000"]))
    R.append(fpdu("fpdu_read_response_last", tagged_hdr(OP_RRESP, 0x00005501, 0x7F00DEAD0000 + 4096) + pattern(64, 1),
                  ["RDMA Read Response segment (L=1) of 64 octets at sink TO + 4096"]))
    # Terminates at each layer
    R.append(fpdu("fpdu_term_llp_crc", untagged_hdr(OP_TERM, 2, 1) + term_body(2, 0, 0x02),
                  ["Terminate, Layer 2 (LLP/MPA) EType 0 ECode 0x02 (CRC error), M=D=R=0, ULPDU_Length 22"]))
    R.append(fpdu("fpdu_term_llp_no_rtr", untagged_hdr(OP_TERM, 2, 1) + term_body(2, 0, 0x07),
                  ["Terminate, LLP ECode 0x07 No Matching RTR Option (RFC 6581)"]))
    bad_write = tagged_hdr(OP_WRITE, 0x0BADBAD0, 0x1000) + pattern(100)
    R.append(fpdu("fpdu_term_ddp_tagged_inv_stag",
                  untagged_hdr(OP_TERM, 2, 1) + term_body(1, 1, 0x00, m=1, d=1, seglen=len(bad_write),
                                                          ddp_hdr=bad_write[:14]),
                  ["Terminate, Layer 1 (DDP) EType 1 (tagged) ECode 0x00 Invalid STag; M=1 D=1 R=0",
                   "DDP Segment Length 114 = ULPDU_Length of the offending 100-octet Write; copied 14-octet tagged header (STag 0x0badbad0)"]))
    bad_send = untagged_hdr(OP_SEND, 0, 7) + pattern(200)
    R.append(fpdu("fpdu_term_ddp_untagged_no_buf",
                  untagged_hdr(OP_TERM, 2, 1) + term_body(1, 2, 0x02, m=1, d=1, seglen=len(bad_send),
                                                          ddp_hdr=bad_send[:18]),
                  ["Terminate, DDP EType 2 (untagged) ECode 0x02 Invalid MSN, no buffer; M=1 D=1; copied 18-octet header of Send MSN 7"]))
    rr = untagged_hdr(OP_RREQ, 1, 1) + read_req_body(0x00005501, 0x2000, 4096, 0x0000AA02, 0x0)
    R.append(fpdu("fpdu_term_rdmap_access_rreq",
                  untagged_hdr(OP_TERM, 2, 1) + term_body(0, 1, 0x02, m=1, d=1, r=1, seglen=len(rr),
                                                          ddp_hdr=rr[:18], rdma_hdr=rr[18:46]),
                  ["Terminate, Layer 0 (RDMAP) EType 1 (remote protection) ECode 0x02 access rights violation on a Read Request",
                   "M=1 D=1 R=1: DDP Segment Length 46, copied 18-octet DDP header, copied 28-octet Read Request header; ULPDU_Length 70"]))
    R.append(fpdu("fpdu_term_rdmap_catastrophic", untagged_hdr(OP_TERM, 2, 1) + term_body(0, 0, 0x00),
                  ["Terminate, RDMAP local catastrophic error, no copied headers"]))
    # zero-length messages and RTRs
    R.append(fpdu("fpdu_zero_len_send", untagged_hdr(OP_SEND, 0, 5),
                  ["zero-length Send QN 0 MSN 5: ULPDU_Length 18, no pad"]))
    R.append(fpdu("fpdu_zero_len_write", tagged_hdr(OP_WRITE, 0x00001234, 0x5000),
                  ["zero-length RDMA Write: ULPDU_Length 14 (smallest FPDU, 20 octets)"]))
    R.append(fpdu("fpdu_zero_len_read_response", tagged_hdr(OP_RRESP, 0x00005501, 0x0),
                  ["zero-length RDMA Read Response (answers a zero-length Read Request)"]))
    R.append(fpdu("fpdu_rtr_zero_len_write_stag1_crc_off", tagged_hdr(OP_WRITE, 1, 0),
                  ["RFC 6581 Write RTR: zero-length RDMA Write, STag 1 TO 0 (siw), CRC off"], crc_on=False))
    R.append(fpdu("fpdu_rtr_zero_len_read", untagged_hdr(OP_RREQ, 1, 1) + read_req_body(0, 0, 0, 1, 0),
                  ["RFC 6581 Read RTR: Read Request QN 1 MSN 1 of size 0; sink STag 0 (siw's unused local SGE), source STag 1"]))
    R.append(fpdu("fpdu_rtr_zero_len_send", untagged_hdr(OP_SEND, 0, 1),
                  ["RFC 6581 Send RTR: zero-length Send QN 0 MSN 1 (consumes a receive buffer)"]))
    # atomics, immediate data
    R.append(fpdu("fpdu_atomic_fetchadd",
                  untagged_hdr(OP_ATOMIC_REQ, 1, 4) + atomic_req_body(0, 7, 0x0000C0DE, 0x10008, 0x10, 0, 0, 0),
                  ["RFC 7306 Atomic Request FetchAdd (atomic opcode 0) +16, QN 1 MSN 4, request id 7; compare fields 0"]))
    R.append(fpdu("fpdu_atomic_cmpswap",
                  untagged_hdr(OP_ATOMIC_REQ, 1, 5) + atomic_req_body(2, 8, 0x0000C0DE, 0x10010, 0xAAAA, 0xFFFFFFFFFFFFFFFF,
                                                                     0x5555, 0xFFFFFFFFFFFFFFFF),
                  ["RFC 7306 Atomic Request CmpSwap (atomic opcode 2): swap 0xaaaa if the target is 0x5555, full masks",
                   "mask semantics are (R) in iwarp-wire.md; the layout is what is tested"]))
    R.append(fpdu("fpdu_atomic_response_cmpswap", untagged_hdr(OP_ATOMIC_RESP, 3, 2) + atomic_resp_body(8, 0x5555),
                  ["RFC 7306 Atomic Response QN 3 MSN 2 for request id 8: original value 0x5555"]))
    R.append(fpdu("fpdu_immediate_data", untagged_hdr(OP_IMM, 0, 6) + be(0xFEEDFACECAFEBEEF, 8),
                  ["RFC 7306 Immediate Data (0x8) QN 0 MSN 6"]))
    R.append(fpdu("fpdu_immediate_data_se", untagged_hdr(OP_IMM_SE, 0, 7) + be(0x0000000000000001, 8),
                  ["RFC 7306 Immediate Data with SE (0x9) QN 0 MSN 7"]))
    # non-last segments
    R.append(fpdu("fpdu_send_middle_segment", untagged_hdr(OP_SEND, 0, 9, mo=1000, last=False) + pattern(500),
                  ["a non-last Send segment: L=0, MSN 9, MO 1000, 500 octets (DDP ctrl 0x01)"]))
    R.append(fpdu("fpdu_write_first_segment", tagged_hdr(OP_WRITE, 0x4444, 0x10000, last=False) + pattern(333),
                  ["a non-last RDMA Write segment: L=0 (DDP ctrl 0x81), 333 octets; pad 3"]))
    R.append(fpdu("fpdu_read_response_middle", tagged_hdr(OP_RRESP, 0x5501, 0x3000, last=False) + pattern(64),
                  ["a non-last Read Response segment: L=0"]))
    return R


def gen_fpdu_sizes():
    R = []
    for n in range(5):
        p = b"abcd"[:n]
        R.append(fpdu(f"fpdu_send_payload_{n}", untagged_hdr(OP_SEND, 0, 1 + n) + p,
                      [f"Send with {n} payload octets: ULPDU_Length {18 + n}, pad {pad_len(18 + n)}"]))
        R.append(fpdu(f"fpdu_write_payload_{n}", tagged_hdr(OP_WRITE, 0x77, 0x100) + p,
                      [f"RDMA Write with {n} payload octets: ULPDU_Length {14 + n}, pad {pad_len(14 + n)}"]))
    for n in (1, 2, 3):
        R.append(fpdu(f"fpdu_read_response_payload_{n}_crc_off", tagged_hdr(OP_RRESP, 0x88, 0x0) + b"xyz"[:n],
                      [f"Read Response with {n} octets, CRC off: pad {pad_len(14 + n)}"], crc_on=False))
    R.append(fpdu("fpdu_send_rdma_test_crc_off", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["send_rdma_test with CRC off: identical except the CRC field is zero"], crc_on=False))
    R.append(fpdu("fpdu_send_1442", untagged_hdr(OP_SEND, 0, 1) + pattern(1442 - 18),
                  ["Send whose ULPDU_Length is 1442 (the MULPDU for EMSS 1460 with markers), markers off here: pad 0, FPDU 1448 octets"]))
    return R


def gen_fpdu_markers():
    R = []
    R.append(fpdu("fpdu_marker_leading_at_0", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["markers on, FPDU at stream offset 0: a leading marker with FPDUPTR 0 precedes ULPDU_Length",
                   "the leading marker is covered by the CRC (iwarp-wire.md 2.4)"],
                  markers_on=True, stream_offset=0))
    R.append(fpdu("fpdu_marker_leading_at_512_write", tagged_hdr(OP_WRITE, 0x001FF8B7, 0x22BC850) + RT,
                  ["markers on, Write at stream offset 512: leading marker FPDUPTR 0"],
                  markers_on=True, stream_offset=512))
    R.append(fpdu("fpdu_marker_in_tagged_to", tagged_hdr(OP_WRITE, 0x001FF8B7, 0x22BC850) + RT,
                  ["markers on, Write at stream offset 500: the marker lands at FPDU offset 12, in the middle of the 8-octet TO"],
                  markers_on=True, stream_offset=500))
    R.append(fpdu("fpdu_marker_between_qn_msn", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["markers on, Send at stream offset 500: the marker lands at FPDU offset 12, between QN and MSN"],
                  markers_on=True, stream_offset=500))
    R.append(fpdu("fpdu_marker_in_payload", untagged_hdr(OP_SEND, 0, 2) + pattern(100),
                  ["markers on, Send of 100 octets at stream offset 440: the marker lands at FPDU offset 72, inside the payload"],
                  markers_on=True, stream_offset=440))
    R.append(fpdu("fpdu_marker_between_pad_and_crc", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["markers on, send_rdma_test at stream offset 480: the marker lands at FPDU offset 32, after the PAD and before the CRC",
                   "the CRC covers the marker; the CRC field follows it at offset 36"],
                  markers_on=True, stream_offset=480))
    R.append(fpdu("fpdu_marker_in_read_request_sink_to",
                  untagged_hdr(OP_RREQ, 1, 1) + read_req_body(0x5501, 0x1122334455667788, 4096, 0xAA02, 0x10),
                  ["markers on, Read Request at stream offset 484: the marker lands at FPDU offset 28, inside the sink TO"],
                  markers_on=True, stream_offset=484))
    R.append(fpdu("fpdu_marker_spans_three", untagged_hdr(OP_SEND, 0, 3) + pattern(1100),
                  ["markers on, Send of 1100 octets at stream offset 0: markers at FPDU offsets 0 (leading), 512 and 1024, all FPDUPTR = their offset",
                   "payload pattern: octet i = (i*37+11) mod 256"],
                  markers_on=True, stream_offset=0))
    R.append(fpdu("fpdu_marker_spans_two_from_100", tagged_hdr(OP_WRITE, 0x99, 0x0) + pattern(1000, 5),
                  ["markers on, Write of 1000 octets at stream offset 100: markers at FPDU offsets 412 and 924"],
                  markers_on=True, stream_offset=100))
    R.append(fpdu("fpdu_marker_crc_off", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["markers on and CRC off, stream offset 508: marker at FPDU offset 4"],
                  crc_on=False, markers_on=True, stream_offset=508))
    R.append(fpdu("fpdu_marker_stream_offset_wrap", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["markers on, stream offset 4294967292 (2^32 - 4): stream offsets are modulo 2^32, so a marker is due at FPDU offset 4"],
                  markers_on=True, stream_offset=4294967292))
    R.append(fpdu("fpdu_marker_none_due", untagged_hdr(OP_SEND, 0, 1) + RT,
                  ["markers on, stream offset 4: no marker falls inside this 36-octet FPDU"],
                  markers_on=True, stream_offset=4))
    return R


def stream(vid, ulpdus, notes, crc_on=True, markers_on=False, stream_offset=0):
    r = FpduRec(vid, "mpa-stream", crc_on, markers_on, stream_offset)
    for n in notes:
        r.note(n)
    r.set(segments=len(ulpdus))
    r.build(ulpdus)
    for i, lf in enumerate(r.laid):
        r.note(f"FPDU {i}: blob offsets {lf.start}..{lf.crc_off + 3}, ULPDU_Length {len(lf.ulpdu)}, "
               f"{OP_NAMES[lf.ulpdu[1] & 0xF]}" + (f", markers at {[m[0] for m in lf.markers]}" if lf.markers else ""))
    return r


def gen_streams():
    R = []
    R.append(stream("stream_leading_marker_send_write",
                    [untagged_hdr(OP_SEND, 0, 1) + RT, tagged_hdr(OP_WRITE, 0x001FF8B7, 0x22BC850) + RT],
                    ["markers on from stream offset 0: the first FPDU starts with a marker (FPDUPTR 0)"],
                    markers_on=True, stream_offset=0))
    R.append(stream("stream_marker_at_fpdu_boundary",
                    [untagged_hdr(OP_SEND, 0, 1) + RT, tagged_hdr(OP_WRITE, 0x001FF8B7, 0x22BC850) + RT],
                    ["stream offset 476: the 36-octet Send ends at 511, so the marker at 512 is the second FPDU's leading marker (FPDUPTR 0)"],
                    markers_on=True, stream_offset=476))
    R.append(stream("stream_marker_in_ddp_header",
                    [tagged_hdr(OP_WRITE, 0x001FF8B7, 0x22BC850) + RT, untagged_hdr(OP_SEND, 0, 1) + RT],
                    ["stream offset 500: the marker splits the Write's TO (FPDU offset 12)"],
                    markers_on=True, stream_offset=500))
    R.append(stream("stream_marker_after_ulpdu_length",
                    [untagged_hdr(OP_SEND, 0, 1) + RT, untagged_hdr(OP_SEND, 0, 2) + RT],
                    ["stream offset 508: marker at FPDU offset 4, right after ULPDU_Length and the two control octets"],
                    markers_on=True, stream_offset=508))
    R.append(stream("stream_marker_between_pad_and_crc",
                    [untagged_hdr(OP_SEND, 0, 1) + RT,
                     untagged_hdr(OP_RREQ, 1, 1) + read_req_body(0x5501, 0x1000, 9, 0x1FF8B7, 0x22BC850)],
                    ["stream offset 480: the marker sits between the Send's PAD and its CRC; then a Read Request"],
                    markers_on=True, stream_offset=480))
    R.append(stream("stream_marker_in_second_payload",
                    [tagged_hdr(OP_WRITE, 0x10, 0x0) + pattern(300), untagged_hdr(OP_SEND, 0, 1) + pattern(300, 3)],
                    ["stream offset 0: leading marker, then a marker inside the Send's payload"],
                    markers_on=True, stream_offset=0))
    R.append(stream("stream_fpdu_spanning_markers",
                    [untagged_hdr(OP_SEND, 0, 1) + pattern(1100), tagged_hdr(OP_WRITE, 0x20, 0x0) + RT],
                    ["stream offset 100: the 1100-octet Send spans the markers at stream 512 and 1024; then a small Write"],
                    markers_on=True, stream_offset=100))
    segs = []
    for k in range(3):
        segs.append(tagged_hdr(OP_WRITE, 0x00C0FFEE, 0x100000 + 400 * k, last=(k == 2)) + pattern(400, k))
    R.append(stream("stream_write_3_segments",
                    segs, ["one 1200-octet RDMA Write in 3 segments of 400: TO 0x100000, 0x100190, 0x100320; L only on the last"]))
    R.append(stream("stream_write_3_segments_markers", segs,
                    ["the same 3-segment Write with markers on from stream offset 0 (markers at 0, 512, 1024)"],
                    markers_on=True, stream_offset=0))
    segs = [untagged_hdr(OP_SEND, 0, 4, mo=300 * k, last=(k == 2)) + pattern(300, 9 + k) for k in range(3)]
    R.append(stream("stream_send_3_segments", segs,
                    ["one 900-octet Send (QN 0 MSN 4) in 3 segments: MO 0, 300, 600; same MSN; L only on the last"]))
    R.append(stream("stream_write_rtr_then_send",
                    [tagged_hdr(OP_WRITE, 1, 0), untagged_hdr(OP_SEND, 0, 1) + RT],
                    ["RFC 6581: the Initiator's first FPDUs: zero-length Write RTR (STag 1) then a Send (QN 0 MSN 1)"]))
    R.append(stream("stream_read_rtr_then_send_markers",
                    [untagged_hdr(OP_RREQ, 1, 1) + read_req_body(0, 0, 0, 1, 0), untagged_hdr(OP_SEND, 0, 1) + RT],
                    ["Read RTR (Read Request size 0, QN 1 MSN 1) then a Send, markers on from stream offset 0"],
                    markers_on=True, stream_offset=0))
    R.append(stream("stream_send_rtr_then_send_crc_off",
                    [untagged_hdr(OP_SEND, 0, 1), untagged_hdr(OP_SEND, 0, 2) + RT],
                    ["Send RTR (zero-length Send, MSN 1) then a Send with MSN 2; CRC off"], crc_on=False))
    R.append(stream("stream_read_request_response",
                    [untagged_hdr(OP_RREQ, 1, 1) + read_req_body(0x5501, 0x1000, 9, 0x1FF8B7, 0x22BC850),
                     tagged_hdr(OP_RRESP, 0x5501, 0x1000) + RT,
                     untagged_hdr(OP_TERM, 2, 1) + term_body(0, 2, 0x07)],
                    ["three FPDUs with markers at stream offset 468: Read Request, Read Response, Terminate"],
                    markers_on=True, stream_offset=468))
    return R


# ------------------------------------------------------------------ bad FPDUs

def bad(vid, ulpdus, expect, notes, crc_on=True, markers_on=False, stream_offset=0, corrupt=None,
        good=0, max_ulpdu=None, crc_lines=True, truncate=None):
    r = FpduRec(vid, "mpa-fpdu-bad", crc_on, markers_on, stream_offset)
    kw = dict(expect=expect, term=f"0x{REASONS[expect]:04x}")
    if max_ulpdu is not None:
        kw["max_ulpdu"] = max_ulpdu
    if good:
        kw["good"] = good
    r.set(**kw)
    for n in notes:
        r.note(n)
    r.build(ulpdus, describe=good, corrupt=corrupt, crc_lines=crc_lines, truncate=truncate)
    return r


def gen_bad_fpdus():
    R = []
    send = untagged_hdr(OP_SEND, 0, 1) + RT
    write = tagged_hdr(OP_WRITE, 0x001FF8B7, 0x22BC850) + RT

    def flip_crc(laid, raw):
        raw[laid[-1].crc_off] ^= 0x01

    def flip_payload(laid, raw):
        raw[laid[-1].map[20]] ^= 0x20

    R.append(bad("bad_crc_field_flipped", [send], "fpdu_crc",
                 ["send_rdma_test with bit 0 of the first CRC octet flipped (d8 instead of d9)",
                  "no crc32c/crc_wire line on purpose: the CRC field is wrong"], corrupt=flip_crc, crc_lines=False))
    R.append(bad("bad_crc_payload_flipped", [send], "fpdu_crc",
                 ["send_rdma_test with payload octet 0 changed from 'r' to 'R' after the CRC was computed"],
                 corrupt=flip_payload, crc_lines=False))

    def crc_without_marker(laid, raw):
        lf = laid[-1]
        cov = bytes(raw[b] for b in lf.map)  # logical octets only: marker left out
        raw[lf.crc_off:lf.crc_off + 4] = crc32c(cov).to_bytes(4, "little")

    R.append(bad("bad_crc_excludes_marker", [send], "fpdu_crc",
                 ["markers on at stream offset 508: the CRC field holds the CRC of the FPDU with its marker left OUT",
                  "the marker must be covered by the CRC, so this CRC is wrong"],
                 markers_on=True, stream_offset=508, corrupt=crc_without_marker, crc_lines=False))

    def recrc(lf, raw):
        raw[lf.crc_off:lf.crc_off + 4] = crc32c(raw[lf.start:lf.crc_off]).to_bytes(4, "little")

    def marker_ptr(v):
        def c(laid, raw):
            lf = laid[-1]
            off = lf.markers[0][0]
            raw[off + 2:off + 4] = be(v, 2)
            lf.markers[0] = (off, v)
            recrc(lf, raw)
            lf.crc = int.from_bytes(raw[lf.crc_off:lf.crc_off + 4], "little")
        return c

    def marker_rsvd(laid, raw):
        lf = laid[-1]
        off = lf.markers[0][0]
        raw[off] = 0x01
        lf.markers = []  # no 'marker' line: its reserved field is not 00 00
        recrc(lf, raw)
        lf.crc = int.from_bytes(raw[lf.crc_off:lf.crc_off + 4], "little")

    R.append(bad("bad_marker_fpduptr", [send], "fpdu_marker",
                 ["markers on at stream offset 508: the marker at FPDU offset 4 says FPDUPTR 8 instead of 4 (CRC recomputed, valid)"],
                 markers_on=True, stream_offset=508, corrupt=marker_ptr(8)))
    R.append(bad("bad_marker_leading_fpduptr", [send], "fpdu_marker",
                 ["markers on at stream offset 0: the leading marker says FPDUPTR 4 instead of 0 (CRC valid)"],
                 markers_on=True, stream_offset=0, corrupt=marker_ptr(4)))
    R.append(bad("bad_marker_reserved", [send], "fpdu_marker",
                 ["markers on at stream offset 508: the marker at FPDU offset 4 reads 01 00 00 04 (reserved field non-zero; CRC valid)"],
                 markers_on=True, stream_offset=508, corrupt=marker_rsvd))
    R.append(bad("bad_ulpdu_above_max", [untagged_hdr(OP_SEND, 0, 1) + pattern(100)], "fpdu_too_long",
                 ["ULPDU_Length 118 above the receiver's limit max_ulpdu=64 (the whole, otherwise valid FPDU is present)"],
                 max_ulpdu=64))
    R.append(bad("bad_ulpdu_10_tagged", [bytes([0xC1, 0x40]) + be(0x1234, 4) + be(0, 4)], "fpdu_too_short",
                 ["ULPDU_Length 10 with a tagged DDP control octet: shorter than the 14-octet tagged header"]))
    R.append(bad("bad_ulpdu_16_untagged", [untagged_hdr(OP_SEND, 0, 1)[:16]], "fpdu_too_short",
                 ["untagged Send with ULPDU_Length 16: shorter than the 18-octet untagged header (MO cut off)"]))
    R.append(bad("bad_ddp_tagged_dv2", [tagged_hdr(OP_WRITE, 0x1234, 0, dv=2) + RT], "ddp_t_version",
                 ["tagged Write with DDP version 2 (DDP ctrl 0xc2)"]))
    R.append(bad("bad_ddp_untagged_dv0", [untagged_hdr(OP_SEND, 0, 1, dv=0) + RT], "ddp_u_version",
                 ["untagged Send with DDP version 0 (DDP ctrl 0x40)"]))
    R.append(bad("bad_rdmap_rv0", [untagged_hdr(OP_SEND, 0, 1, rv=0) + RT], "rdmap_version",
                 ["Send with RDMAP version 0 (RDMAP ctrl 0x03)"]))
    R.append(bad("bad_rdmap_rv2_write", [tagged_hdr(OP_WRITE, 0x1234, 0, rv=2) + RT], "rdmap_version",
                 ["Write with RDMAP version 2 (RDMAP ctrl 0x80)"]))
    for op in range(0xC, 0x10):
        R.append(bad(f"bad_opcode_0x{op:x}", [untagged_hdr(op, 0, 1) + RT], "rdmap_opcode",
                     [f"untagged QN 0 segment with unassigned RDMAP opcode 0x{op:X}"]))
    R.append(bad("bad_opcode_0xc_tagged", [tagged_hdr(0xC, 0x1234, 0) + RT], "rdmap_opcode",
                 ["tagged segment with unassigned opcode 0xC"]))
    R.append(bad("bad_send_tagged", [tagged_hdr(OP_SEND, 0x1234, 0) + RT], "rdmap_opcode",
                 ["a Send (opcode 0x3) in a tagged segment (DDP ctrl 0xc1, RDMAP ctrl 0x43)"]))
    R.append(bad("bad_write_untagged", [untagged_hdr(OP_WRITE, 0, 1) + RT], "rdmap_opcode",
                 ["an RDMA Write (opcode 0x0) in an untagged segment (DDP ctrl 0x41, RDMAP ctrl 0x40)"]))
    R.append(bad("bad_read_response_untagged", [untagged_hdr(OP_RRESP, 0, 1) + RT], "rdmap_opcode",
                 ["a Read Response (opcode 0x2) in an untagged segment"]))
    R.append(bad("bad_send_qn1", [untagged_hdr(OP_SEND, 1, 1) + RT], "ddp_qn",
                 ["Send on QN 1 (the Read Request queue)"]))
    R.append(bad("bad_read_request_qn0", [untagged_hdr(OP_RREQ, 0, 1) + read_req_body(0x5501, 0, 9, 0xAA02, 0)], "ddp_qn",
                 ["Read Request on QN 0"]))
    R.append(bad("bad_terminate_qn0", [untagged_hdr(OP_TERM, 0, 1) + term_body(2, 0, 2)], "ddp_qn",
                 ["Terminate on QN 0 instead of QN 2"]))
    R.append(bad("bad_atomic_response_qn1", [untagged_hdr(OP_ATOMIC_RESP, 1, 1) + atomic_resp_body(1, 5)], "ddp_qn",
                 ["Atomic Response on QN 1 instead of QN 3"]))
    R.append(bad("bad_send_qn5", [untagged_hdr(OP_SEND, 5, 1) + RT], "ddp_qn",
                 ["Send on QN 5 (no such queue)"]))
    R.append(bad("bad_read_request_not_last",
                 [untagged_hdr(OP_RREQ, 1, 1, last=False) + read_req_body(0x5501, 0, 9, 0xAA02, 0)], "rdmap_not_last",
                 ["Read Request without L (DDP ctrl 0x01): a single-segment message type must have L=1"]))
    R.append(bad("bad_terminate_m_too_short", [untagged_hdr(OP_TERM, 2, 1) + term_body(1, 2, 0x02, m=1)], "rdmap_term",
                 ["Terminate with M=1 (DDP Segment Length valid) but only the 4 control octets: ULPDU_Length 22"]))
    R.append(bad("bad_terminate_d_no_header",
                 [untagged_hdr(OP_TERM, 2, 1) + term_body(1, 2, 0x02, m=1, d=1, seglen=27)], "rdmap_term",
                 ["Terminate with M=1 D=1: segment length present but the copied DDP header is missing: ULPDU_Length 24"]))
    R.append(bad("bad_atomic_opcode_1",
                 [untagged_hdr(OP_ATOMIC_REQ, 1, 1) + atomic_req_body(1, 1, 0xC0DE, 0x10008, 1, 0, 0, 0)], "rdmap_atomic_op",
                 ["Atomic Request with atomic opcode 1 (reserved; only 0 FetchAdd and 2 CmpSwap exist)"]))
    R.append(bad("bad_truncated_mid_fpdu", [send], "fpdu_truncated",
                 ["send_rdma_test cut after 20 of its 36 octets; the input ends there (the runner calls finish)"],
                 truncate=20))
    R.append(bad("bad_truncated_crc", [send, write], "fpdu_truncated",
                 ["a complete Send, then a Write whose CRC field is cut after 2 octets"], good=1, truncate=36 + 30))
    R.append(bad("bad_after_good_rv2", [send, untagged_hdr(OP_SEND, 0, 2, rv=2) + RT], "rdmap_version",
                 ["a valid Send (MSN 1), then a Send (MSN 2) with RDMAP version 2: one good FPDU precedes the bad one"], good=1))
    R.append(bad("bad_after_good_crc_markers", [send, write], "fpdu_crc",
                 ["markers on at stream offset 500: a valid Send, then a Write with its last CRC octet flipped"],
                 markers_on=True, stream_offset=500, good=1, crc_lines=False,
                 corrupt=lambda laid, raw: raw.__setitem__(laid[1].crc_off + 3, raw[laid[1].crc_off + 3] ^ 0x80)))
    R.append(bad("bad_crc_off_still_checks_headers", [untagged_hdr(OP_SEND, 0, 1, dv=2) + RT], "ddp_u_version",
                 ["CRC off: header checks still apply (untagged DDP version 2)"], crc_on=False))
    return R


# ------------------------------------------------------------------ output

GENERATED = {
    "gen_crc32c.iwv": ("CRC32c: all-zero / all-0xff inputs of several lengths, residue, sub-range", gen_crc),
    "gen_mpa_frames.iwv": ("valid MPA Request/Reply frames (RFC 5044 Rev 1, RFC 6581 Rev 2)", gen_frames),
    "gen_mpa_frames_bad.iwv": ("invalid MPA frames with the expected parse error", gen_bad_frames),
    "gen_fpdu_ops.iwv": ("one valid FPDU per RDMAP message type / Terminate layer / RTR / RFC 7306", gen_fpdu_ops),
    "gen_fpdu_sizes.iwv": ("payload sizes 0..4 (every pad), CRC off, a large FPDU", gen_fpdu_sizes),
    "gen_fpdu_markers.iwv": ("single FPDUs with markers at several stream offsets", gen_fpdu_markers),
    "gen_mpa_streams.iwv": ("several FPDUs back to back (kind mpa-stream), markers anywhere", gen_streams),
    "gen_fpdu_bad.iwv": ("invalid FPDU streams with the expected decoder error", gen_bad_fpdus),
}


def render_file(desc, recs):
    head = ("# SPDX-License-Identifier: BSD-2-Clause\n"
            "# iWARP wire vectors, format iwv/1 -- see README.md in this directory.\n"
            "# GENERATED by scripts/gen_vectors.py; do not edit (tests/vectors_py.sh checks for drift).\n"
            f"# {desc}\n"
            "# origin computed = computed in this project by an independent Python encoder; not published.\n")
    return head + "".join("\n" + r.render() for r in recs)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rfc-vectors"))
    args = ap.parse_args(argv[1:])
    os.makedirs(args.out, exist_ok=True)
    ids = set()
    total = 0
    for name, (desc, fn) in GENERATED.items():
        recs = fn()
        for r in recs:
            if r.vid in ids:
                raise SystemExit(f"duplicate vector id {r.vid}")
            ids.add(r.vid)
        total += len(recs)
        with open(os.path.join(args.out, name), "w", newline="\n") as f:
            f.write(render_file(desc, recs))
    print(f"wrote {total} vectors in {len(GENERATED)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
