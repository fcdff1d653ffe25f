#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Decode one interop capture with both iwarp-replay and tshark.

usage: wire_check.py [--expect-bad-crc N] [--allow-terminate] [--allow-empty]
                     REPLAY PCAP

Checks that
  * iwarp-replay --check finds no protocol error (with --expect-bad-crc:
    exactly N bad CRCs and nothing else);
  * tshark agrees with iwarp-replay frame by frame on every field both
    decode, and on every CRC verdict: tests/replay_tshark.py, the
    cross-check the replay tests already use, does this;
  * the capture holds FPDUs (unless --allow-empty) and no TERMINATE
    (unless --allow-terminate).
Prints one summary line; exit 0 when everything holds, 1 otherwise.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CROSS = os.path.join(HERE, "..", "replay_tshark.py")
# An ephemeral port that is some protocol's well-known one (44322 is
# pmproxy's) hides the stream from iwarp_mpa's heuristic unless
# heuristics go first.
TSHARK_OPTS = ["-o", "tcp.try_heuristic_first:TRUE"]


def counts(replay, pcap):
    """FPDUs, bad CRCs and TERMINATEs as iwarp-replay decodes them."""
    out = subprocess.run([replay, "--json", pcap], capture_output=True,
                         text=True, check=False).stdout
    n = bad = term = 0
    for line in out.splitlines():
        r = json.loads(line)
        if r["type"] != "fpdu":
            continue
        n += 1
        bad += not r.get("crc_ok", True)
        term += r.get("rdmap", {}).get("opcode") == 7  # RDMAP Terminate
    return n, bad, term


def last_line(p):
    lines = (p.stdout + p.stderr).strip().splitlines()
    return lines[-1] if lines else ""


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
    if bad_expected == 0 and check.returncode != 0:
        problems.append("iwarp-replay --check exit %d: %s" %
                        (check.returncode, last_line(check)))
    n, bad, term = counts(replay, pcap)
    if n == 0 and not allow_empty:
        problems.append("no FPDU in the capture")
    if bad != bad_expected:
        problems.append("%d bad CRCs, expected %d" % (bad, bad_expected))
    if term and not allow_term:
        problems.append("%d TERMINATE in the capture" % term)
    cross = subprocess.run([sys.executable, CROSS, "tshark", replay, pcap]
                           + TSHARK_OPTS, capture_output=True, text=True,
                           check=False)
    if cross.returncode != 0:
        problems.append("tshark disagrees: " + last_line(cross))
    name = os.path.basename(pcap)
    if problems:
        print("wire %s: FAIL: %s" % (name, "; ".join(problems)))
        return 1
    print("wire %s: %d FPDUs, iwarp-replay = tshark frame by frame and "
          "field by field, %d bad CRCs" % (name, n, bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())
