#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Decode one capture with both iwarp-replay and tshark and compare them.

usage: wire_check.py [--expect-bad-crc N] [--allow-terminate] [--allow-empty]
                     REPLAY PCAP

Checks, for every FPDU of every direction of every iWARP connection:
  * iwarp-replay --check finds no protocol error (or exactly N bad CRCs,
    and nothing else, with --expect-bad-crc);
  * tshark's iwarp_mpa dissector finds the same FPDUs in the same order,
    and says "Good CRC32" for each (N "Bad CRC32" with --expect-bad-crc);
  * the fields both decoders report agree: ULPDU length, RDMAP opcode,
    STag and TO (tagged), QN/MSN/MO (untagged), and the CRC value.
Prints one summary line; exit 0 when everything holds, 1 otherwise.
Wireshark reads the CRC field as a big-endian number while iwarp-replay
shows the CRC32c value, which goes on the wire least significant octet
first (iwarp-wire.md): the comparison swaps one of them.
"""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

TSHARK_FIELDS = ["frame.number", "ip.src", "ipv6.src", "tcp.srcport",
                 "iwarp_mpa.ulpdulength", "iwarp_mpa.crc_check",
                 "iwarp_rdma.opcode", "iwarp_ddp.stag",
                 "iwarp_ddp.tagged_offset", "iwarp_ddp.qn", "iwarp_ddp.msn",
                 "iwarp_ddp.mo"]


def num(s):
    return int(s, 0) if s not in (None, "") else None


def bswap32(v):
    return int.from_bytes(v.to_bytes(4, "little"), "big")


def ours(replay, pcap):
    """FPDUs per direction ("addr:port" of the sender) from iwarp-replay."""
    out = subprocess.run([replay, "--json", pcap], capture_output=True,
                         text=True, check=False).stdout
    conns, fpdus = {}, {}
    for line in out.splitlines():
        r = json.loads(line)
        if r["type"] == "conn":
            conns[r["conn"]] = (r["initiator"], r["responder"])
        elif r["type"] == "fpdu":
            i, rr = conns[r["conn"]]
            src = i if r["dir"] == "i2r" else rr
            ddp, rdmap = r.get("ddp", {}), r.get("rdmap", {})
            tagged = ddp.get("t")
            fpdus.setdefault(src, []).append({
                "frame": r["first_frame"], "len": r["ulpdu_length"],
                "crc": num(r["crc"]) if r.get("crc_enabled") else None,
                "crc_ok": r.get("crc_ok", True),
                "op": rdmap.get("opcode"),
                "stag": ddp.get("stag") if tagged else None,
                "to": num(ddp.get("to")) if tagged else None,
                "qn": None if tagged else ddp.get("qn"),
                "msn": None if tagged else ddp.get("msn"),
                "mo": None if tagged else ddp.get("mo")})
    return fpdus


def theirs(pcap):
    """FPDUs per direction from tshark, and its Good/Bad CRC32 counts."""
    base = ["tshark", "-n", "-r", pcap, "--disable-protocol", "rpcordma"]
    args = base + ["-Y", "iwarp_mpa.ulpdulength", "-T", "fields",
                   "-E", "occurrence=a", "-E", "aggregator=;",
                   "-E", "separator=\t"]
    for f in TSHARK_FIELDS:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True,
                         check=False).stdout
    fpdus = {}
    for line in out.splitlines():
        c = line.split("\t")
        frame, src = int(c[0]), (c[1] or c[2])
        if ":" in src:
            src = "[" + src + "]"
        src += ":" + c[3]
        cols = [x.split(";") if x else [] for x in c[4:]]
        for k in range(len(cols[0])):
            def at(col):
                return cols[col][k] if k < len(cols[col]) else None
            # The DDP fields come per kind (tagged, untagged) in these
            # columns, so ddp_fields_tshark() reads them in FPDU order.
            fpdus.setdefault(src, []).append({
                "frame": frame, "len": num(at(0)), "crc": num(at(1)),
                "op": num(at(2))})
    out2 = subprocess.run(base + ["-V", "-O", "iwarp_mpa,iwarp_ddp_rdmap"],
                          capture_output=True, text=True, check=False).stdout
    good = out2.count("(Good CRC32)")
    bad = out2.count("(Bad CRC32")  # "(Bad CRC32, should be 0x...)"
    return fpdus, good, bad


def ddp_fields_tshark(pcap):
    """Per frame and sender, the DDP header fields in FPDU order."""
    base = ["tshark", "-n", "-r", pcap, "--disable-protocol", "rpcordma",
            "-Y", "iwarp_ddp", "-T", "pdml"]
    out = subprocess.run(base, capture_output=True, text=True,
                         check=False).stdout
    res = {}
    root = ET.fromstring(out)
    for pkt in root.iter("packet"):
        frame = None
        hdrs = []
        for proto in pkt.iter("proto"):
            if proto.get("name") == "geninfo":
                for f in proto.iter("field"):
                    if f.get("name") == "num":
                        frame = int(f.get("show"))
            if proto.get("name") == "iwarp_ddp_rdmap":
                h = {}
                for f in proto.iter("field"):
                    n = f.get("name")
                    if n in ("iwarp_ddp.stag", "iwarp_ddp.tagged_offset",
                             "iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo"):
                        key = n.split(".")[1]
                        key = "to" if key == "tagged_offset" else key
                        h[key] = int(f.get("show"), 0)
                hdrs.append(h)
        res[frame] = hdrs
    return res


def main():
    argv = sys.argv[1:]
    bad_expected, allow_term, allow_empty = 0, False, False
    while argv and argv[0].startswith("--"):
        if argv[0] == "--expect-bad-crc":
            bad_expected = int(argv[1])
            argv = argv[2:]
        elif argv[0] == "--allow-empty":
            allow_empty = True
            argv = argv[1:]
        elif argv[0] == "--allow-terminate":
            allow_term = True
            argv = argv[1:]
        else:
            sys.exit("wire_check: unknown option " + argv[0])
    if len(argv) != 2:
        sys.exit(__doc__)
    replay, pcap = argv
    problems = []
    check = subprocess.run([replay, "--check", "--quiet", pcap],
                           capture_output=True, text=True, check=False)
    mine = ours(replay, pcap)
    theirs_f, good, bad = theirs(pcap)
    ddp = ddp_fields_tshark(pcap)
    n_mine = sum(len(v) for v in mine.values())
    n_theirs = sum(len(v) for v in theirs_f.values())
    if n_mine == 0 and not allow_empty:
        problems.append("no FPDU in the capture")
    my_bad = sum(1 for v in mine.values() for f in v if not f["crc_ok"])
    if bad_expected == 0 and check.returncode != 0:
        last = (check.stdout + check.stderr).strip().splitlines()
        problems.append("iwarp-replay --check exit %d: %s" %
                        (check.returncode, last[-1] if last else ""))
    if my_bad != bad_expected:
        problems.append("iwarp-replay: %d bad CRCs, expected %d" %
                        (my_bad, bad_expected))
    if bad != bad_expected:
        problems.append("tshark: %d Bad CRC32, expected %d" %
                        (bad, bad_expected))
    # tshark gives a verdict only where the MPA frames negotiated CRC.
    n_crc = sum(1 for v in mine.values() for f in v if f["crc"] is not None)
    if good + bad != n_crc:
        problems.append("tshark checked %d CRCs, iwarp-replay found %d FPDUs "
                        "with CRC" % (good + bad, n_crc))
    if n_mine != n_theirs:
        problems.append("FPDU count: iwarp-replay %d, tshark %d" %
                        (n_mine, n_theirs))
    # Field by field, per sender, in stream order.
    seen = {}
    for src in sorted(set(mine) | set(theirs_f)):
        a, b = mine.get(src, []), theirs_f.get(src, [])
        for k, (x, y) in enumerate(zip(a, b)):
            frame_hdrs = ddp.get(y["frame"], [])
            idx = seen.get(y["frame"], 0)
            seen[y["frame"]] = idx + 1
            h = frame_hdrs[idx] if idx < len(frame_hdrs) else {}
            diffs = []
            if x["len"] != y["len"]:
                diffs.append("len %s/%s" % (x["len"], y["len"]))
            if x["op"] != y["op"]:
                diffs.append("opcode %s/%s" % (x["op"], y["op"]))
            if x["crc"] is not None and y["crc"] is not None and \
                    x["crc"] != bswap32(y["crc"]):
                diffs.append("crc %#x/%#x" % (x["crc"], bswap32(y["crc"])))
            for f in ("stag", "to", "qn", "msn", "mo"):
                if x[f] is not None and h.get(f) != x[f]:
                    diffs.append("%s %s/%s" % (f, x[f], h.get(f)))
            if diffs:
                problems.append("%s FPDU %d (frame %d): %s" %
                                (src, k + 1, y["frame"], ", ".join(diffs)))
                if len(problems) > 8:
                    break
    if not allow_term and '"TERMINATE' in check.stdout:
        problems.append("a TERMINATE is in the capture")
    name = pcap.rsplit("/", 1)[-1]
    if problems:
        print("wire %s: FAIL: %s" % (name, "; ".join(problems[:8])))
        return 1
    print("wire %s: %d FPDUs, iwarp-replay = tshark field by field, CRC "
          "good %d bad %d" % (name, n_mine, good, bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())
