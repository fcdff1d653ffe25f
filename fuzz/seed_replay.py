#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seeds for fuzz_replay_capture, fuzz_replay_reasm and fuzz_pcap_roundtrip.

usage: seed_replay.py OUTDIR

Writes OUTDIR/corpus-<target>/ files:
  fuzz_replay_capture  small captures of one iWARP connection (handshake,
      MPA Request and Reply, tagged Writes and Sends both ways, one
      segment out of order, one retransmitted, FINs) as classic pcap
      (Ethernet/IPv4, microsecond and nanosecond), pcapng (Linux cooked
      SLL/IPv6) and raw IPv4, each behind the target's options octet
      (plain text, JSON, --check with CRC forced on);
  fuzz_replay_reasm    SYN, in-order, out-of-order, overlapping and
      snapped segments, an ACK past a hole and a FIN, in the target's
      8-octet operations;
  fuzz_pcap_roundtrip  data both ways, FINs, a note, IPv6 with a cap.
The formats are the targets' own (see their header comments).
"""
import os
import struct
import sys

# The Internet checksum, as the replay tests compute it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from replay_pcapmod import csum  # noqa: E402


def tcp(src, dst, sport, dport, seq, ack, flags, payload, v6):
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
    if v6:
        pseudo = src + dst + struct.pack("!I3xB", len(hdr) + len(payload), 6)
    else:
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(hdr) + len(payload))
    c = csum(pseudo + hdr + payload)
    return hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload


def ip_packet(src, dst, seg, v6):
    if v6:
        return struct.pack("!IHBB", 6 << 28, len(seg), 6, 64) + src + dst + seg
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(seg), 1, 0x4000, 64, 6, 0, src, dst)
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + seg


def mpa_frame(req, pd):
    key = b"MPA ID Req Frame" if req else b"MPA ID Rep Frame"
    return key + struct.pack("!BBH", 0, 1, len(pd)) + pd


def fpdu(ulpdu):
    pad = (4 - (2 + len(ulpdu)) % 4) % 4
    return struct.pack("!H", len(ulpdu)) + ulpdu + b"\0" * pad + b"\0\0\0\0"


def write(stag, to, payload):
    return struct.pack("!BBIQ", 0xC1, 0x40, stag, to) + payload


def send(msn, payload):
    return struct.pack("!BB4xIII", 0x41, 0x43, 0, msn, 0) + payload


def conversation():
    """(from_initiator, flags, payload, stream offset) per segment, in
    capture order; offset None for the SYN."""
    i_data = [mpa_frame(True, b"seed"), fpdu(write(0x100, 0, b"w" * 40)),
              fpdu(send(1, b"hello")), fpdu(send(2, b""))]
    r_data = [mpa_frame(False, b""), fpdu(send(1, b"reply")), fpdu(write(0x200, 8, b"x" * 7))]
    io = [sum(len(x) for x in i_data[:k]) for k in range(len(i_data) + 1)]
    ro = [sum(len(x) for x in r_data[:k]) for k in range(len(r_data) + 1)]
    segs = [(True, 0x02, b"", None), (False, 0x12, b"", None), (True, 0x10, b"", 0)]
    segs += [(True, 0x18, i_data[0], io[0]), (False, 0x18, r_data[0], ro[0])]
    # The initiator's last FPDU before the one ahead of it (out of order),
    # then that one twice (the second a retransmission).
    segs += [(True, 0x18, i_data[1], io[1]), (True, 0x18, i_data[3], io[3]),
             (True, 0x18, i_data[2], io[2]), (True, 0x18, i_data[2], io[2])]
    segs += [(False, 0x18, r_data[1], ro[1]), (False, 0x18, r_data[2], ro[2])]
    segs += [(True, 0x11, b"", io[4]), (False, 0x11, b"", ro[3]), (True, 0x10, b"", io[4] + 1)]
    return segs


def frames(v6):
    a = (b"\xfd\0" + b"\0" * 13 + b"\1") if v6 else bytes([10, 0, 0, 1])
    b = (b"\xfd\0" + b"\0" * 13 + b"\2") if v6 else bytes([10, 0, 0, 2])
    isn = {True: 1000, False: 5000}
    nxt = {True: 1001, False: 5001}
    out = []
    for who, flags, payload, off in conversation():
        src, dst = (a, b) if who else (b, a)
        sport, dport = (40000, 50000) if who else (50000, 40000)
        seq = isn[who] if off is None else isn[who] + 1 + off
        ack = nxt[not who] if flags & 0x10 else 0
        seg = tcp(src, dst, sport, dport, seq, ack, flags, payload, v6)
        out.append(ip_packet(src, dst, seg, v6))
        nxt[who] = max(nxt[who], seq + len(payload) + (1 if flags & 0x03 else 0))
    return out


def pcap_classic(pkts, link, nsec, wrap):
    magic = 0xA1B23C4D if nsec else 0xA1B2C3D4
    out = struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, link)
    for i, p in enumerate(pkts):
        f = wrap(p)
        out += struct.pack("<IIII", 1700000000 + i, 1000 * i, len(f), len(f)) + f
    return out


def pcapng(pkts, link, wrap):
    def block(t, body):
        body += b"\0" * ((4 - len(body) % 4) % 4)
        n = 12 + len(body)
        return struct.pack("<II", t, n) + body + struct.pack("<I", n)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", link, 0, 65535))
    for i, p in enumerate(pkts):
        f = wrap(p)
        ts = (1700000000 + i) * 1000000
        out += block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(f), len(f)) + f)
    return out


def eth(p):
    et = 0x86DD if (p[0] >> 4) == 6 else 0x0800
    return b"\x02\0\0\0\0\2" + b"\x02\0\0\0\0\1" + struct.pack("!H", et) + p


def sll(p):
    et = 0x86DD if (p[0] >> 4) == 6 else 0x0800
    return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\1\0\0", et) + p


def captures():
    v4, v6 = frames(False), frames(True)
    return {
        "eth4_usec.pcap": pcap_classic(v4, 1, False, eth),
        "eth4_nsec.pcap": pcap_classic(v4, 1, True, eth),
        "sll6.pcapng": pcapng(v6, 113, sll),
        "raw4.pcap": pcap_classic(v4, 101, False, lambda p: p),
    }


def reasm_seeds():
    def op(kind, seq, length, missing=0, absolute=False, conflict=False):
        b0 = kind | (4 if absolute else 0) | (8 if conflict else 0)
        if absolute:
            return struct.pack("!BIHB", b0, seq, length, missing)
        return struct.pack("!BhxxHB", b0, seq, length, missing)
    syn = op(1, 1000, 0, absolute=True)
    return {
        "in_order": syn + op(0, 0, 100) + op(0, 0, 200) + op(3, 0, 0),
        "ooo": syn + op(0, 100, 50) + op(0, -150, 100) + op(0, 50, 10),
        "overlap": syn + op(0, 0, 100) + op(0, -50, 100) + op(0, -100, 100, conflict=True),
        "snapped": syn + op(0, 0, 60, missing=40) + op(0, 0, 30) + op(2, 500, 0) + op(3, 0, 0),
        "hole_ack": syn + op(0, 0, 10) + op(0, 20, 10) + op(2, 40, 0),
    }


def roundtrip_seeds():
    hdr4 = struct.pack("!BHII H", 0, 1460, 1, 2, 0)
    hdr6 = struct.pack("!BHII H", 1 | 2 | 4, 536, 0xFFFFFFF0, 7, 400)
    ops = bytes([0, 3, 4, 1, 3, 12]) + b"note text" + bytes([1, 5])
    return {"v4": hdr4 + ops + b"payload", "v6_cap": hdr6 + bytes([0, 60, 4, 60]) + b"abc"}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: seed_replay.py OUTDIR")
    out = sys.argv[1]
    sets = {
        "fuzz_replay_capture": {("%02x_%s" % (o, n)): bytes([o]) + c
                                for n, c in captures().items() for o in (0x00, 0x01, 0x12)},
        "fuzz_replay_reasm": reasm_seeds(),
        "fuzz_pcap_roundtrip": roundtrip_seeds(),
    }
    for target, seeds in sets.items():
        d = os.path.join(out, "corpus-" + target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, "seed_" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
