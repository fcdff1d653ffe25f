#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Transport-level variants of a capture for tests/replay.sh.

    replay_pcapmod.py MODE IN.pcap OUT [ARG]

IN is a classic little-endian pcap of Ethernet frames (as lib/diag/pcap_writer
writes them). MODE:
  ooo        swap back-to-back data segments of one direction (every other pair)
  retrans    send every fourth data segment again two frames later
  overlap    split data segments of 60+ octets into two overlapping ones
  gap        drop the 8th data segment from the initiator (the SYN sender)
  snap       cut the 8th data segment from the initiator to 60 captured octets
  vlan       add an 802.1Q tag to every frame
  sll, sll2  Linux cooked capture v1 / v2
  raw        raw IP (LINKTYPE_RAW)
  null       BSD loopback (LINKTYPE_NULL, family in host order)
  pcapng     the same frames as pcapng (nanosecond timestamps)
  truncate   the file cut in the middle of its last record
  nontcp     UDP, ICMP and ARP frames between the TCP ones
  notcp      only UDP and ARP frames (no TCP at all)
  linktype   the file header's link type set to ARG (the frames unchanged)
  all        every mode but linktype, into OUT-MODE.pcap
Only the standard library is used.
"""
import struct
import sys

ETH_IP4, ETH_IP6, ETH_ARP = 0x0800, 0x86DD, 0x0806


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack_from("<I", data, 0)
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit("replay_pcapmod: %s: not a little-endian classic pcap" % path)
    nsec = magic == 0xA1B23C4D
    snaplen, linktype = struct.unpack_from("<II", data, 16)
    recs, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from("<IIII", data, off)
        recs.append([sec, frac, data[off + 16:off + 16 + incl], orig])
        off += 16 + incl
    return nsec, snaplen, linktype, recs


def write_pcap(path, nsec, snaplen, linktype, recs, cut_last=False):
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D if nsec else 0xA1B2C3D4, 2, 4, 0, 0,
                                snaplen, linktype))
    for i, (sec, frac, frame, orig) in enumerate(recs):
        rec = struct.pack("<IIII", sec, frac, len(frame), max(orig, len(frame))) + frame
        if cut_last and i == len(recs) - 1:
            rec = rec[:16 + len(frame) // 2]
        out += rec
    with open(path, "wb") as f:
        f.write(out)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def parse(frame):
    """(ip_off, ipver, tcp_off, payload_off, seq, flags, src, dst) or None."""
    et, = struct.unpack_from("!H", frame, 12)
    ip = 14
    if et == ETH_IP4 and frame[ip + 9] == 6:
        tcp = ip + (frame[ip] & 15) * 4
        src, dst = frame[ip + 12:ip + 16], frame[ip + 16:ip + 20]
        end = ip + struct.unpack_from("!H", frame, ip + 2)[0]
    elif et == ETH_IP6 and frame[ip + 6] == 6:
        tcp = ip + 40
        src, dst = frame[ip + 8:ip + 24], frame[ip + 24:ip + 40]
        end = tcp + struct.unpack_from("!H", frame, ip + 4)[0]
    else:
        return None
    pl = tcp + (frame[tcp + 12] >> 4) * 4
    seq, = struct.unpack_from("!I", frame, tcp + 4)
    return dict(ip=ip, v=4 if et == ETH_IP4 else 6, tcp=tcp, pl=pl, end=end, seq=seq,
                flags=frame[tcp + 13], src=src + frame[tcp:tcp + 2], dst=dst)


def rebuild(frame, p, payload, seq):
    """The frame with another TCP payload and sequence number, checksums fixed."""
    hdr = bytearray(frame[:p["pl"]])
    struct.pack_into("!I", hdr, p["tcp"] + 4, seq)
    tcp_len = len(hdr) - p["tcp"] + len(payload)
    ip = p["ip"]
    if p["v"] == 4:
        struct.pack_into("!H", hdr, ip + 2, tcp_len + (p["tcp"] - ip))
        struct.pack_into("!H", hdr, ip + 10, 0)
        struct.pack_into("!H", hdr, ip + 10, csum(bytes(hdr[ip:p["tcp"]])))
        pseudo = bytes(hdr[ip + 12:ip + 20]) + struct.pack("!BBH", 0, 6, tcp_len)
    else:
        struct.pack_into("!H", hdr, ip + 4, tcp_len)
        pseudo = bytes(hdr[ip + 8:ip + 40]) + struct.pack("!IxxxB", tcp_len, 6)
    struct.pack_into("!H", hdr, p["tcp"] + 16, 0)
    seg = bytes(hdr[p["tcp"]:]) + payload
    struct.pack_into("!H", hdr, p["tcp"] + 16, csum(pseudo + seg))
    return bytes(hdr) + payload


def data_segments(recs):
    """Indexes of TCP frames with payload, and the initiator's address."""
    init, idx = None, []
    for i, r in enumerate(recs):
        p = parse(r[2])
        if not p:
            continue
        if p["flags"] & 0x12 == 0x02 and init is None:
            init = p["src"]
        if p["end"] > p["pl"]:
            idx.append((i, p))
    return idx, init


def ooo(recs):
    # Only back-to-back segments of one direction trade places: an ACK from
    # the other side in between would acknowledge data not yet seen, which
    # no capture point can show (iwarp-replay takes that as proof of loss).
    idx, _ = data_segments(recs)
    pairs = [(a, b) for (a, pa), (b, pb) in zip(idx, idx[1:])
             if b == a + 1 and pa["src"] == pb["src"]]
    for n, (a, b) in enumerate(pairs):
        if n % 2 == 0 and (n == 0 or pairs[n - 1][1] != a):
            recs[a][2], recs[b][2] = recs[b][2], recs[a][2]
    return recs


def retrans(recs):
    idx, _ = data_segments(recs)
    extra = {}
    for n, (i, _) in enumerate(idx):
        if n % 4 == 3:
            extra.setdefault(min(i + 2, len(recs) - 1), []).append(list(recs[i]))
    out = []
    for i, r in enumerate(recs):
        out.append(r)
        out.extend(extra.get(i, []))
    return out


def overlap(recs):
    out = []
    for r in recs:
        p = parse(r[2])
        n = p["end"] - p["pl"] if p else 0
        if n < 60:
            out.append(r)
            continue
        pl = r[2][p["pl"]:p["end"]]
        a, b = 2 * n // 3, n // 3
        out.append([r[0], r[1], rebuild(r[2], p, pl[:a], p["seq"]), 0])
        out.append([r[0], r[1], rebuild(r[2], p, pl[b:], (p["seq"] + b) & 0xFFFFFFFF), 0])
    return out


def nth_initiator_segment(recs, n):
    idx, init = data_segments(recs)
    mine = [i for i, p in idx if p["src"] == init]
    return mine[n - 1]


def gap(recs):
    del recs[nth_initiator_segment(recs, 8)]
    return recs


def snap(recs):
    i = nth_initiator_segment(recs, 8)
    recs[i][3] = len(recs[i][2])
    recs[i][2] = recs[i][2][:60]
    return recs


def relink(recs, fn):
    return [[r[0], r[1], fn(r[2]), 0] for r in recs]


def vlan(frame):
    return frame[:12] + struct.pack("!HH", 0x8100, 7) + frame[12:]


def sll(frame):
    return struct.pack("!HHH8sH", 0, 1, 6, frame[6:12] + b"\0\0", struct.unpack_from("!H", frame, 12)[0]) + frame[14:]


def sll2(frame):
    et, = struct.unpack_from("!H", frame, 12)
    return struct.pack("!HHIHBB8s", et, 0, 1, 1, 0, 6, frame[6:12] + b"\0\0") + frame[14:]


def null(frame):
    et, = struct.unpack_from("!H", frame, 12)
    return struct.pack("<I", 2 if et == ETH_IP4 else 24) + frame[14:]


def extra_frames(ts):
    """A UDP datagram, an ICMP echo and an ARP request (Ethernet)."""
    eth = b"\x02\0\0\0\0\x09" + b"\x02\0\0\0\0\x0a"
    udp = struct.pack("!HHHH", 5000, 5001, 12, 0) + b"ping"
    ip_udp = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + udp
    icmp = struct.pack("!BBHHH", 8, 0, 0, 1, 1)
    ip_icmp = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 2, 0, 64, 1, 0,
                          bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + icmp
    arp = struct.pack("!HHBBH6s4s6s4s", 1, ETH_IP4, 6, 4, 1, eth[6:], bytes([10, 0, 0, 1]),
                      b"\0" * 6, bytes([10, 0, 0, 2]))
    return [[ts[0], ts[1], eth + struct.pack("!H", ETH_IP4) + ip_udp, 0],
            [ts[0], ts[1], eth + struct.pack("!H", ETH_IP4) + ip_icmp, 0],
            [ts[0], ts[1], eth + struct.pack("!H", ETH_ARP) + arp + b"\0" * 18, 0]]


def nontcp(recs):
    out = []
    for i, r in enumerate(recs):
        if i % 5 == 1:
            out.extend(extra_frames(r[:2]))
        out.append(r)
    return out


def write_pcapng(path, nsec, linktype, recs):
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

    out = bytearray(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
    opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)  # if_tsresol = 10^-9
    out += block(1, struct.pack("<HHI", linktype, 0, 262144) + opts)
    for sec, frac, frame, orig in recs:
        t = sec * 10**9 + (frac if nsec else frac * 1000)
        out += block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(frame),
                                    max(orig, len(frame))) + frame)
    with open(path, "wb") as f:
        f.write(out)


MODES = ("ooo", "retrans", "overlap", "gap", "snap", "vlan", "sll", "sll2", "raw", "null",
         "pcapng", "truncate", "nontcp", "notcp")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    mode, src, dst = sys.argv[1:4]
    if mode == "all":  # one start of the interpreter for every variant
        for m in MODES:
            make(m, src, "%s-%s.pcap" % (dst, m), None)
        return
    make(mode, src, dst, sys.argv[4] if len(sys.argv) > 4 else None)


def make(mode, src, dst, arg):
    nsec, snaplen, linktype, recs = read_pcap(src)
    cut = False
    if mode in ("ooo", "retrans", "overlap", "gap", "snap", "nontcp"):
        recs = globals()[mode](recs)
    elif mode == "vlan":
        recs = relink(recs, vlan)
    elif mode in ("sll", "sll2", "null"):
        recs = relink(recs, globals()[mode])
        linktype = {"sll": 113, "sll2": 276, "null": 0}[mode]
    elif mode == "raw":
        recs = relink(recs, lambda f: f[14:])
        linktype = 101
    elif mode == "pcapng":
        write_pcapng(dst, nsec, linktype, recs)
        return
    elif mode == "truncate":
        cut = True
    elif mode == "notcp":
        recs = extra_frames(recs[0][:2]) * 3
    elif mode == "linktype":
        linktype = int(arg)
    else:
        sys.exit("replay_pcapmod: unknown mode %s" % mode)
    write_pcap(dst, nsec, snaplen, linktype, recs, cut)


if __name__ == "__main__":
    main()
