#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Questions tests/replay.sh asks of iwarp-replay's JSON Lines output.

    replay_json.py valid FILE          every line a JSON object with a "type"
    replay_json.py fpdus FILE          the FPDUs without frame numbers or times,
                                       one per line, for comparing decodes
    replay_json.py summary FILE KEY    a summary field (first_error.KEY too)
    replay_json.py count FILE TYPE     how many lines of a type
    replay_json.py span FILE           FPDUs that began in an earlier frame
    replay_json.py terms FILE DIR      the TERMINATE codes of a direction
    replay_json.py field FILE N EXPR   EXPR (Python, record as r) of fpdu line N
    replay_json.py payload FILE STAG   (--payload) the first connection's tagged
                                       FPDUs to STAG, payloads in TO order, hex
    replay_json.py payload_lens FILE   (--payload) every FPDU has a payload of
                                       payload_len octets
"""
import json
import sys


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    recs = lines(path)
    if cmd == "valid":
        bad = [r for r in recs if not isinstance(r, dict) or "type" not in r]
        print("%d lines, %d without a type" % (len(recs), len(bad)))
        sys.exit(1 if bad or not recs else 0)
    if cmd == "fpdus":
        for r in recs:
            if r["type"] == "fpdu":
                # n shifts when a gap swallows an FPDU; stream_off and dir
                # name an FPDU as well.
                for k in ("frame", "first_frame", "time", "seq", "conn", "n"):
                    r.pop(k, None)
                print(json.dumps(r, sort_keys=True))
    elif cmd == "summary":
        s = [r for r in recs if r["type"] == "summary"][-1]
        for k in sys.argv[3].split("."):
            s = s[k] if s is not None else None
        print(s)
    elif cmd == "span":
        print(sum(1 for r in recs if r["type"] == "fpdu" and r["first_frame"] != r["frame"]))
    elif cmd == "count":
        print(sum(1 for r in recs if r["type"] == sys.argv[3]))
    elif cmd == "terms":
        for r in recs:
            if r["type"] == "fpdu" and r["dir"] == sys.argv[3] and "terminate" in r:
                print(r["terminate"]["code"])
    elif cmd == "field":
        r = [x for x in recs if x["type"] == "fpdu"][int(sys.argv[3])]
        print(eval(sys.argv[4], {}, {"r": r}))
    elif cmd == "payload":
        stag = int(sys.argv[3], 0)
        segs = sorted((int(r["ddp"]["to"], 16), r["payload"]) for r in recs
                      if r["type"] == "fpdu" and r.get("conn") == 1
                      and r["ddp"].get("stag") == stag)
        print("".join(p for _, p in segs))
    elif cmd == "payload_lens":
        bad = [r for r in recs if r["type"] == "fpdu"
               and len(r.get("payload", "x")) != 2 * r["payload_len"]]
        print("%d FPDUs without payload_len octets" % len(bad))
        sys.exit(1 if bad else 0)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
