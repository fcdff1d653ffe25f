#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Scenario 60: iwarp-conform against siw (issue 15).
#
# One run of the whole catalogue from the namespace:
#   Groups 1, 3, 4  against rping -s -P in the guest (siw as responder;
#                   rping's buffer is 64 KiB - 1, so the 64 KiB and 1 MiB
#                   cases SKIP);
#   Group 2         iwarp-conform listens on our side and starts the
#                   guest's rping -c once per case through guest.sh
#                   (--client-cmd), siw as initiator.
# Every case must PASS, SKIP, or DEVIATE exactly as
# tests/interop/siw-deviations.txt says (a listed quirk that siw no longer
# shows FAILs, so a change in siw shows). One result per group; the reports
# (JSON, JUnit, Markdown), the text output and a capture per case go to
# $IWI_OUT/conform/.
#
# Left out, because they take the guest kernel down (scn-20-mpa.sh, README
# "Interop with Linux siw"):
#   1.4   an RTR offer of SEND only: siw answers WRITE, we close before the
#         RTR, and iw_cm's BUG() in cm_close_handler fires;
#   1.11  IRD/ORD 0/0: siw forces ORD >= 1 in P2P mode, so its Reply's ORD
#         is above our IRD and we close before the RTR, as above;
#   2.16, 2.28  a Reply with more than 256 octets of private data (512,
#         and 513 which is illegal) to siw's initiator: iw_cm's
#         cm_event_handler dereferences NULL + 4 (seen with 2.28 in the
#         first run of this scenario: "BUG: kernel NULL pointer dereference,
#         address: 0000000000000004" in siw_cm_wq; siw's CM is dead after
#         it and every later case fails).
#
# siw's MPA timeout is 5 s (cases 1.29 and 1.31 of that run): --peer-timeout
# 8000 leaves a margin under TCG.
# Ports 7450 (rping -s) and 7451 (ours); IWI_CONFORM_PORT moves both.
# Bounded: iwarp-conform gets 20 minutes at most; about 4 under TCG.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

SCN=conform
PORT=${IWI_CONFORM_PORT:-7450}
LPORT=$((PORT + 1))
OUT=$IWI_OUT/conform
DEV=$IWI_SRC/tests/interop/siw-deviations.txt
SKIP=1.4,1.11,2.16,2.28

mkdir -p "$OUT"
if ! guest_healthy; then
	result "$SCN" all FAIL "the guest kernel is not healthy before the run"
	finish
fi
guest_bg conform-rping "rping -s -P -a $IWI_GUEST_IP -p $PORT -S 65535"
if ! guest_listening "$PORT" 20; then
	guest_kill conform-rping
	result "$SCN" all FAIL "rping -s did not listen on $PORT: $(guest_log conform-rping | tr '\n' ' ')"
	finish
fi

# Expanded by the sh -c that iwarp-conform runs: the port is its own.
CLIENT="$IWI_RIG/guest.sh -t 30 rping -c -a $IWI_HOST_IP -p \$IWARP_CONFORM_PORT -C 1 -S 64"
hx timeout 1200 "$T/iwarp-conform" --peer-timeout 8000 --wait 4000 --size 65535 \
	--skip "$SKIP" --deviations "$DEV" \
	--listen "$IWI_HOST_IP:$LPORT" --client-cmd "$CLIENT" --accept-wait 60000 \
	--json "$OUT/conform.json" --junit "$OUT/conform.xml" --markdown "$OUT/conform.md" \
	--pcap-dir "$OUT" -v "$IWI_GUEST_IP" "$PORT" >"$OUT/conform.out" 2>&1
rc=$?
guest_kill conform-rping
grep -E '^(Group|  Test|[0-9]+ cases)' "$OUT/conform.out" >&2
log "iwarp-conform exit $rc"

# One result per group: PASS when no case of it FAILed.
python3 - "$OUT/conform.json" <<'PY' >"$OUT/groups.tsv" || true
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
roles = {"1": "siw responder (MPA)", "2": "siw initiator (MPA)",
         "3": "siw responder (data)", "4": "siw responder (errors)"}
for g in "1234":
    cs = [c for c in cases if c["id"].split(".")[0] == g]
    n = {k: sum(c["result"] == k for c in cs) for k in ("PASS", "FAIL", "DEVIATES", "SKIP")}
    bad = ", ".join("%s: %s" % (c["id"], c["detail"]) for c in cs if c["result"] == "FAIL")
    print("%s\t%s\t%s\t%d PASS, %d DEVIATES, %d SKIP, %d FAIL%s" % (
        g, roles[g], "FAIL" if n["FAIL"] or not cs else "PASS", n["PASS"], n["DEVIATES"],
        n["SKIP"], n["FAIL"], "; " + bad if bad else ""))
PY
if [ ! -s "$OUT/groups.tsv" ]; then
	result "$SCN" all FAIL "no report from iwarp-conform (exit $rc): $(tail -n 3 "$OUT/conform.out" | tr '\n' ' ')"
fi
while IFS=$'\t' read -r g role st detail; do
	result "$SCN-g$g" "$role" "$st" "$detail"
done <"$OUT/groups.tsv"

# A crash this run causes may come with siw's MPA timer: wait it out, so
# that it is counted here and not in the next scenario.
sleep 6
guest_healthy || result "$SCN" all FAIL "the guest kernel hit a BUG/oops"
finish
