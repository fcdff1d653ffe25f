#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Check iwarp-conform's reports: the JSON parses and every case in it has
an id, an RFC reference, a known result and evidence; the JUnit XML parses
and has the same cases, failures and skips; the Markdown names each case.
Every case must PASS, except those in the optional comma-separated list,
which must SKIP."""
import json
import sys
import xml.etree.ElementTree as ET


def main(js, xm, md, skips=""):
    r = json.load(open(js))
    cases = r["cases"]
    assert cases, "no cases"
    may_skip = set(filter(None, skips.split(",")))
    for c in cases:
        want = "SKIP" if c["id"] in may_skip else "PASS"
        assert c["result"] == want, "case %s: %s (%s), want %s" % (
            c["id"], c["result"], c["detail"], want)
        assert c["result"] in ("PASS", "FAIL", "DEVIATES", "SKIP"), c
        assert c["id"] and c["rfc"].startswith("RFC "), c
        assert c["evidence"], "case %s has no evidence" % c["id"]
    counts = {k: sum(c["result"] == k.upper() for c in cases)
              for k in ("pass", "fail", "deviates", "skip")}
    assert counts == r["summary"], (counts, r["summary"])
    suite = ET.parse(xm).getroot()
    assert suite.tag == "testsuite"
    tcs = suite.findall("testcase")
    assert len(tcs) == len(cases) == int(suite.get("tests"))
    assert int(suite.get("failures")) == counts["fail"]
    assert int(suite.get("skipped")) == counts["skip"]
    for tc, c in zip(tcs, cases):
        assert tc.get("name").split(" ")[0] == c["id"]
    text = open(md).read()
    for c in cases:
        assert "| %s | %s |" % (c["id"], c["result"]) in text, c["id"]
    print("conform_check: %d cases, %s" % (len(cases), counts))


if __name__ == "__main__":
    main(*sys.argv[1:5])
