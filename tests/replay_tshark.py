#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cross-check iwarp-replay's decode of a capture against tshark's.

    replay_tshark.py TSHARK IWARP_REPLAY CAPTURE [TSHARK OPTION...]

(IWARP_REPLAY may be a file.json of iwarp-replay --json output instead,
which is how the test checks that a wrong decode is caught.)

Runs `iwarp-replay --json CAPTURE` and `tshark -T pdml` on the same file
and compares, frame by frame, every iWARP field both report: for each frame
the list of values of a field over the FPDUs (and MPA frames) in it, in
order, must be the same. Also compared per frame: the number of FPDUs and
MPA frames, and the CRC verdict (tshark 4.0 has no CRC status field; the
verdict is the "Good CRC32"/"Bad CRC32" text of -V).

Our JSON fields with no Wireshark 4.0 counterpart are not compared: the
RFC 6581 block decoded (tshark shows it as private data, which is
compared), stream offsets, pad, payload length, immediate data, the CRC we
computed (tshark prints only the verdict), and the siw reading of a
TERMINATE. Exit: 0 agreement, 1 differences, 2 a tool failed.
"""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def norm(v):
    """Numbers compare by value: tshark prints some fields in hex (BASE_HEX)
    and some in decimal, and 4.0 is not always what its field list says."""
    if re.fullmatch(r"0x[0-9a-fA-F]+", v):
        return int(v, 16)
    if re.fullmatch(r"[0-9]+", v):
        return int(v)
    return v


def hx(v, width):
    return "0x%0*x" % (width, v)


def bswap32(v):
    return int.from_bytes(v.to_bytes(4, "little"), "big")


def b(v):
    return "1" if v else "0"


def mpa_fields(r):
    pd = r["private_data"]
    f = [("iwarp_mpa.rev", str(r["rev"])), ("iwarp_mpa.marker_flag", b(r["m"])),
         ("iwarp_mpa.crc_flag", b(r["c"])), ("iwarp_mpa.rej_flag", b(r["r"])),
         ("iwarp_mpa.pdlength", str(r["pd_length"]))]
    if pd:
        f.append(("iwarp_mpa.privatedata", pd))
    return f


def ddp_fields(r):
    d, m = r["ddp"], r["rdmap"]
    f = [("iwarp_ddp.tagged_flag", b(d["t"])), ("iwarp_ddp.last_flag", b(d["l"])),
         ("iwarp_ddp.rsvd", str(d["rsvd"])), ("iwarp_ddp.dv", str(d["dv"])),
         ("iwarp_rdma.version", str(m["rv"])), ("iwarp_rdma.rsv", str(m["rsvd"])),
         ("iwarp_rdma.opcode", hx(m["opcode"], 2))]
    if "stag" in d:
        f += [("iwarp_ddp.stag", hx(d["stag"], 8)), ("iwarp_ddp.tagged_offset", d["to"])]
    if "qn" in d:
        f += [("iwarp_ddp.qn", str(d["qn"])), ("iwarp_ddp.msn", str(d["msn"])),
              ("iwarp_ddp.mo", str(d["mo"]))]
    if "inv_stag" in d:
        f.append(("iwarp_rdma.inval_stag", str(d["inv_stag"])))
    return f


def term_fields(t):
    # Which fields Wireshark 4.0 files the type and code under depends on
    # the layer and, for DDP and LLP, on the type (as observed).
    layer, et, ec = t["layer"], t["etype"], t["ecode"]
    if layer == 0:
        names = ("term_etype_rdma", "term_errcode_rdma")
    elif layer == 1:
        names = ("term_etype_ddp", {1: "term_errcode_ddp_tagged",
                                    2: "term_errcode_ddp_untagged"}.get(et, "term_errcode"))
    elif layer == 2:
        names = ("term_etype_llp", "term_errcode_llp" if et == 0 else "term_errcode")
    else:
        names = ("term_etype", "term_errcode")
    f = [("iwarp_rdma.term_layer", hx(layer, 2)), ("iwarp_rdma." + names[0], hx(et, 2)),
         ("iwarp_rdma." + names[1], hx(ec, 2)),
         ("iwarp_rdma.term_hdrct_m", hx(int(t["m"]), 2)),
         ("iwarp_rdma.hdrct_d", hx(int(t["d"]), 2)), ("iwarp_rdma.hdrct_r", hx(int(t["r"]), 2))]
    if t["m"]:
        f.append(("iwarp_rdma.term_ddp_seg_len", "%04x" % t["ddp_seg_len"]))
    if t["d"]:
        f.append(("iwarp_rdma.term_ddp_h", t["ddp_hdr"]))
    if t["r"]:
        f.append(("iwarp_rdma.term_rdma_h", t["rdma_hdr"]))
    return f


def atomic_fields(a):
    p = "iwarp_rdma.atomic."
    f = [(p + "opcode", str(a["op"])), (p + "request_identifier", str(a["req_id"])),
         (p + "remote_stag", str(a["stag"])), (p + "remote_tagged_offset", str(int(a["to"], 16)))]
    if a["op"] == 0:
        f += [(p + "add_data", str(int(a["add_swap"], 16))),
              (p + "add_mask", str(int(a["add_swap_mask"], 16)))]
    else:
        f += [(p + "swap_data", str(int(a["add_swap"], 16))),
              (p + "swap_mask", a["add_swap_mask"])]
    return f + [(p + "compare_data", str(int(a["compare"], 16))),
                (p + "compare_mask", a["compare_mask"])]


def rdmap_fields(r):
    f = []
    if "read_req" in r:
        q = r["read_req"]
        f += [("iwarp_rdma.sinkstag", str(q["sink_stag"])),
              ("iwarp_rdma.sinkto", str(int(q["sink_to"], 16))),
              ("iwarp_rdma.rdmardsz", str(q["size"])), ("iwarp_rdma.srcstag", str(q["src_stag"])),
              ("iwarp_rdma.srcto", q["src_to"])]
    if "terminate" in r:
        f += term_fields(r["terminate"])
    if "atomic_req" in r:
        f += atomic_fields(r["atomic_req"])
    if "atomic_resp" in r:
        a = r["atomic_resp"]
        f += [("iwarp_rdma.atomic.original_request_identifier", str(a["req_id"])),
              ("iwarp_rdma.atomic.original_remote_data_value", str(int(a["orig_value"], 16)))]
    return f


def fpdu_fields(r):
    crc = hx(bswap32(int(r["crc"], 16)), 8)
    f = [("iwarp_mpa.ulpdulength", str(r["ulpdu_length"])),
         ("iwarp_mpa.crc_check" if r["crc_enabled"] else "iwarp_mpa.crc", crc)]
    f += [("iwarp_mpa.marker_fpduptr", str(m)) for m in r["markers"]]
    return f + ddp_fields(r) + rdmap_fields(r)


def ours(replay, capture):
    if replay.endswith(".json"):  # a decode made before (the test's self-check)
        with open(replay) as f:
            text = f.read()
    else:
        out = subprocess.run([replay, "--json", "--no-summary", capture], stdout=subprocess.PIPE,
                             universal_newlines=True)
        if out.returncode not in (0, 1):
            sys.exit("replay_tshark: iwarp-replay failed on %s (%d)" % (capture, out.returncode))
        text = out.stdout
    frames = defaultdict(lambda: {"fields": defaultdict(list), "fpdus": 0, "mpa": 0,
                                  "crc": []})
    for line in text.splitlines():
        r = json.loads(line)
        if r["type"] == "mpa" and r["valid"]:
            fr = frames[r["frame"]]
            fr["mpa"] += 1
            pairs = mpa_fields(r)
        elif r["type"] == "fpdu":
            fr = frames[r["frame"]]
            fr["fpdus"] += 1
            if r["crc_enabled"]:
                fr["crc"].append("good" if r["crc_ok"] else "bad")
            pairs = fpdu_fields(r)
        else:
            continue
        for k, v in pairs:
            fr["fields"][k].append(v)
    return frames


FIELDS = sorted({
    "iwarp_mpa.rev", "iwarp_mpa.marker_flag", "iwarp_mpa.crc_flag", "iwarp_mpa.rej_flag",
    "iwarp_mpa.pdlength", "iwarp_mpa.privatedata", "iwarp_mpa.ulpdulength", "iwarp_mpa.crc",
    "iwarp_mpa.crc_check", "iwarp_mpa.marker_fpduptr", "iwarp_ddp.tagged_flag",
    "iwarp_ddp.last_flag", "iwarp_ddp.rsvd", "iwarp_ddp.dv", "iwarp_rdma.version",
    "iwarp_rdma.rsv", "iwarp_rdma.opcode", "iwarp_ddp.stag", "iwarp_ddp.tagged_offset",
    "iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo", "iwarp_rdma.inval_stag",
    "iwarp_rdma.sinkstag", "iwarp_rdma.sinkto", "iwarp_rdma.rdmardsz", "iwarp_rdma.srcstag",
    "iwarp_rdma.srcto", "iwarp_rdma.term_layer", "iwarp_rdma.term_etype_rdma",
    "iwarp_rdma.term_etype_ddp", "iwarp_rdma.term_etype_llp", "iwarp_rdma.term_errcode_rdma",
    "iwarp_rdma.term_errcode_ddp_tagged", "iwarp_rdma.term_errcode_ddp_untagged",
    "iwarp_rdma.term_errcode_llp", "iwarp_rdma.term_hdrct_m", "iwarp_rdma.term_etype",
    "iwarp_rdma.term_errcode", "iwarp_rdma.hdrct_d",
    "iwarp_rdma.hdrct_r", "iwarp_rdma.term_ddp_seg_len", "iwarp_rdma.term_ddp_h",
    "iwarp_rdma.term_rdma_h", "iwarp_rdma.atomic.opcode",
    "iwarp_rdma.atomic.request_identifier", "iwarp_rdma.atomic.remote_stag",
    "iwarp_rdma.atomic.remote_tagged_offset", "iwarp_rdma.atomic.add_data",
    "iwarp_rdma.atomic.add_mask", "iwarp_rdma.atomic.swap_data", "iwarp_rdma.atomic.swap_mask",
    "iwarp_rdma.atomic.compare_data", "iwarp_rdma.atomic.compare_mask",
    "iwarp_rdma.atomic.original_request_identifier",
    "iwarp_rdma.atomic.original_remote_data_value"})


def theirs(tshark, capture, opts):
    """Per frame: {field: [values in tree order]}, and the CRC verdicts.
    One PDML run gives both: the values (bytes as plain hex) and the
    "Good CRC32"/"Bad CRC32" text tshark 4.0 has no field for."""
    args = [tshark, "-n", "-r", capture, "--disable-protocol", "rpcordma"] + opts + ["-T", "pdml"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    frames, verdicts = {}, defaultdict(list)
    wanted = set(FIELDS)
    frame, cur = 0, None
    for event, el in ET.iterparse(proc.stdout, events=("start", "end")):
        if event == "start" and el.tag == "packet":
            cur = {f: [] for f in FIELDS}
        if event != "end":
            continue
        if el.tag == "field" and el.get("name") == "num" and cur is not None and not frame:
            frame = int(el.get("show"))
        elif el.tag == "field" and el.get("name") in wanted and cur is not None:
            show = el.get("show", "")
            cur[el.get("name")].append(el.get("value", "") if ":" in show else show)
            if el.get("name") == "iwarp_mpa.crc_check":
                verdicts[frame].append("good" if "Good CRC32" in el.get("showname", "")
                                       else "bad")
        elif el.tag == "packet":
            frames[frame] = cur
            frame, cur = 0, None
            el.clear()
    if proc.wait():
        sys.exit("replay_tshark: tshark failed: " + proc.stderr.read().decode())
    return frames, verdicts


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    tshark, replay, capture = sys.argv[1:4]
    mine = ours(replay, capture)
    ts, verdicts = theirs(tshark, capture, sys.argv[4:])
    problems, values, fpdus = [], 0, 0
    same = lambda x, y: [norm(v) for v in x] == [norm(v) for v in y]
    for frame in sorted(set(mine) | set(f for f in ts if ts[f]["iwarp_mpa.ulpdulength"] or
                                        ts[f]["iwarp_mpa.rev"])):
        m = mine.get(frame, {"fields": {}, "fpdus": 0, "mpa": 0, "crc": []})
        t = ts.get(frame, {f: [] for f in FIELDS})
        if m["fpdus"] != len(t["iwarp_mpa.ulpdulength"]) or m["mpa"] != len(t["iwarp_mpa.rev"]):
            problems.append("frame %d: %d FPDUs and %d MPA frames, tshark %d and %d" % (
                frame, m["fpdus"], m["mpa"], len(t["iwarp_mpa.ulpdulength"]),
                len(t["iwarp_mpa.rev"])))
            continue
        fpdus += m["fpdus"]
        for f in FIELDS:
            want = m["fields"].get(f, [])
            values += len(want)
            if not same(want, t[f]):
                problems.append("frame %d %s: ours %s tshark %s" % (frame, f, want, t[f]))
        if m["crc"] != verdicts.get(frame, []):
            problems.append("frame %d CRC verdicts: ours %s tshark %s" % (
                frame, m["crc"], verdicts.get(frame, [])))
    for p in problems[:40]:
        print("  " + p)
    print("replay_tshark: %s: %d FPDUs, %d field values compared, %d differences" % (
        capture.split("/")[-1], fpdus, values, len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
