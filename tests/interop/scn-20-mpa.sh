#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Scenario 20: MPA negotiation against siw (issue 5), with iwarp-ping's MPA
# knobs on our side and rping on siw's.
#
# Our initiator (iwarp-ping -c in the namespace -> rping -s in the guest),
# one case per knob set, each on its own port (a siw listener stuck on a
# failed case cannot disturb the next) and with its own capture
# ($IWI_OUT/mpa-<case>.pcap, decoded by iwarp-replay --json):
#   p2p-write-read  rev 2 enhanced, P2P offering WRITE|READ: siw picks
#                   WRITE, our zero-length RDMA Write is the first FPDU
#   p2p-read        P2P offering READ only: siw picks READ and answers our
#                   zero-length Read Request with a zero-length Read Response
#   no-p2p          rev 2 enhanced without P2P or C (siw's own initiator's
#                   shape): no RTR, our Send comes first
#   rev1            rev 1: siw's Reply is rev 1 without IRD/ORD, and siw
#                   hands rping IRD = ORD = 0 (siw_proc_mpareq only reads
#                   them from an RFC 6581 block), so rping's RDMA READ
#                   cannot be posted: rping closes in ping 0 and we exit 1
#   rev2-not-enhanced  the same with rev 2 but no 0x10 flag
#   crc-on, crc-off the C flag in siw's Reply follows ours (siw's
#                   mpa_crc_required is off); every FPDU carries a good
#                   CRC32c, or a zero CRC field (crc-on without P2P,
#                   crc-off with it)
#   markers         siw refuses M: a Reply with R (rev 2, C and 0x10 kept,
#                   M cleared, block 00000000), then FIN; we report
#                   REJECTED and exit 4 at once
#   pd-0, pd-252    private data up to siw's MPA_MAX_PRIVDATA (256 octets
#                   with the 4-octet RFC 6581 block) is taken
#   pd-256, pd-300  above it siw_recv_mpa_rr returns -EPROTO on the
#                   header: the socket is closed without a Reply (a reset,
#                   since our private data is still unread); we report
#                   CONNECT_ERROR and exit 4 at once
#   pd-256-rev1     rev 1 has no block, so 256 octets fit: siw replies
#                   (rev 1), and the run then fails as rev1 does
#   pd-300-rev1     300 octets are above the limit in any revision
# rping's server in each case is started in one guest command beforehand
# and the outcomes are collected in one at the end (each guest command
# costs seconds under TCG).
#
# siw's initiator (rping -c in the guest -> iwarp-ping -s here). siw sends
# rev 2, 0x10, no C, no P2P, IRD/ORD 1/1; our Reply decides:
#   srv-crc-on      we set C in the Reply (our default): CRC both ways
#   srv-crc-off     --no-crc: no C, CRC fields zero
#   srv-pd-252      256 octets of Reply private data: taken
#   srv-rev1        a rev-1 Reply to siw's enhanced Request: siw fails the
#                   connect ("MPA reply error: vers 1")
#   srv-markers     a Reply with M: siw refuses it (markers unsupported)
#
# Not run, because each takes the guest kernel down:
#  - a Reply with more than 256 octets of private data to siw's initiator
#    (e.g. iwarp-ping -s --pd 300). siw_recv_mpa_rr fails on the header
#    (-EPROTO) before it allocated cep->mpa.pdata, and siw_proc_mpareply's
#    error path still reports CONNECT_REPLY through siw_cm_upcall, which
#    hands iw_cm private_data = NULL + 4 (the RFC 6581 block it skips) with
#    the header's length: cm_event_handler's kmemdup oopses ("BUG: kernel
#    NULL pointer dereference, address: 0000000000000004", seen on 6.1.192).
#    Any peer can do this to a siw initiator.
#  - an RTR offer of SEND only. siw answers it with WRITE anyway, our
#    initiator must then fail the connection while siw waits for the RTR,
#    and a siw QP closed before ESTABLISHED hits iw_cm's BUG() in
#    cm_close_handler (iwcm.c:969).
#
# Ports 7300-7399 (client cases from 7310, server cases from 7350); env
# IWI_MPA_PORT moves the whole block, IWI_MPA_ONLY (an extended regular
# expression) runs only the cases whose names match. Every wait is
# bounded, and no client case starts after 150 s: the scenario takes about
# 50 s under TCG, and under 6 minutes if every bound is reached.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

BASE=${IWI_MPA_PORT:-7300}
PING=$T/iwarp-ping
SIZE=64
COUNT=3

# name|iwarp-ping options: our initiator against rping -s.
CLIENT_CASES=(
	"p2p-write-read|"
	"p2p-read|--rtr read"
	"no-p2p|--no-p2p --no-crc"
	"rev1|--mpa-rev 1"
	"rev2-not-enhanced|--no-enhanced"
	"crc-on|--no-p2p"
	"crc-off|--no-crc"
	"markers|--markers"
	"pd-0|--pd 0"
	"pd-252|--pd 252"
	"pd-256|--pd 256"
	"pd-256-rev1|--pd 256 --mpa-rev 1"
	"pd-300|--pd 300"
	"pd-300-rev1|--pd 300 --mpa-rev 1"
)
# name|iwarp-ping -s options: rping -c against our responder.
SERVER_CASES=(
	"srv-crc-on|"
	"srv-crc-off|--no-crc"
	"srv-pd-252|--pd 252"
	"srv-rev1|--mpa-rev 1"
	"srv-markers|--markers"
)

declare -A PORT OPTS RC OUT SECS GRC GLOG

# select CASE-ENTRY...: the entries IWI_MPA_ONLY lets through, one a line.
select_cases() {
	local e
	for e in "$@"; do
		[[ ${e%%|*} =~ ${IWI_MPA_ONLY:-.} ]] && printf '%s\n' "$e"
	done
}
mapfile -t CLIENT_CASES < <(select_cases "${CLIENT_CASES[@]}")
mapfile -t SERVER_CASES < <(select_cases "${SERVER_CASES[@]}")

one_line() { tr '\n\t' '  ' | sed 's/  */ /g; s/^ //; s/ $//'; }

# ------------------------------------------------------------ the guest

# guest_jobs CMD-LINES: start each line (NAME<TAB>COMMAND) in the guest in
# the background in one guest command, as guest_bg does: output in
# /tmp/NAME.log, exit status in /tmp/NAME.rc, pid in /tmp/NAME.pid.
guest_jobs() {
	local script="" name cmd
	while IFS=$'\t' read -r name cmd; do
		script+="rm -f /tmp/$name.rc /tmp/$name.log; ($cmd & echo \$! > /tmp/$name.pid; wait \$!; echo \$? > /tmp/$name.rc) > /tmp/$name.log 2>&1 < /dev/null & "
	done
	gx -t 30 "$script true"
}

# guest_ports_listening SECS PORT...: wait until all listen; prints the
# ports that do not.
guest_ports_listening() {
	local secs=$1
	shift
	gx -t $((secs + 15)) "i=0; while [ \$i -lt $((secs * 10)) ]; do missing=''; l=\$(ss -ltnH | awk '{print \$4}'); for p in $*; do echo \"\$l\" | grep -q \":\$p\\\$\" || missing=\"\$missing \$p\"; done; [ -z \"\$missing\" ] && exit 0; sleep 0.2; i=\$((i+2)); done; echo \$missing; exit 1"
}

# guest_collect SECS WAIT-NAMES -- ALL-NAMES: wait up to SECS for the jobs
# in WAIT-NAMES to end, then kill whatever of ALL-NAMES still runs (with
# its children) and print, per name, "@@ NAME RC" (RC "killed" when it
# was) and its log. Fills GRC and GLOG.
guest_collect() {
	local secs=$1 waitn="" alln="" n line cur=""
	shift
	while [ "$1" != -- ]; do waitn+=" $1" && shift; done
	shift
	alln="$*"
	local out
	out=$(gx -t $((secs + 30)) "
		kt() { for c in \$(ps -o pid,ppid | awk -v p=\$1 '\$2==p{print \$1}'); do kt \$c; done; kill -9 \$1 2>/dev/null; }
		i=0
		while [ \$i -lt $((secs * 10)) ]; do
			left=''; for n in $waitn; do [ -s /tmp/\$n.rc ] || left=1; done
			[ -z \"\$left\" ] && break
			sleep 0.2; i=\$((i+2))
		done
		for n in $alln; do
			if [ -s /tmp/\$n.rc ]; then rc=\$(cat /tmp/\$n.rc); else rc=killed; p=\$(cat /tmp/\$n.pid 2>/dev/null) && kt \$p; fi
			echo \"@@ \$n \$rc\"; cat /tmp/\$n.log 2>/dev/null
		done")
	while IFS= read -r line; do
		if [[ $line == "@@ "* ]]; then
			read -r _ cur n <<<"$line"
			GRC[$cur]=$n
			GLOG[$cur]=""
		elif [ -n "$cur" ]; then
			GLOG[$cur]+="$line"$'\n'
		fi
	done <<<"$out"
	for n in $alln; do
		[ -n "${GRC[$n]:-}" ] || GRC[$n]="lost"
		printf '%s' "${GLOG[$n]:-}" >"$IWI_OUT/$n.guest.log"
	done
}

# ------------------------------------------------------------ the wire

# wire_facts CASE: the capture as iwarp-replay decodes it, as shell
# assignments: REQ and REP (each MPA frame's fields, "none" if absent),
# FIRST_I2R and FIRST_R2I (opcode:payload length[:Read size] of each
# side's first FPDU), NFPDU, CRC_ON (FPDUs with CRC negotiated), CRC_BAD,
# CRC_ZERO (CRC fields that are zero).
wire_facts() {
	"$T/iwarp-replay" --json "$IWI_OUT/mpa-$1.pcap" 2>/dev/null | python3 -c '
import json, sys
frames = {"request": "none", "reply": "none"}
first = {"i2r": "none", "r2i": "none"}
n = crc_on = crc_bad = crc_zero = 0
for line in sys.stdin:
    r = json.loads(line)
    if r.get("type") == "mpa" and r.get("conn") == 1:
        frames[r["kind"]] = "rev=%d m=%d c=%d r=%d enh=%d p2p=%d rtr=%s pd=%d ulp=%d ird=%d ord=%d" % (
            r["rev"], r["m"], r["c"], r["r"], r.get("enhanced", False),
            r.get("p2p", False), ",".join(r.get("rtr", [])) or "none",
            r["pd_length"], len(r.get("ulp_private_data", "")) // 2,
            r.get("ird", 0), r.get("ord", 0))
    elif r.get("type") == "fpdu" and r.get("conn") == 1:
        n += 1
        op = r.get("rdmap", {}).get("name", "?").replace(" ", "_")
        desc = "%s:%d" % (op, r.get("payload_len", -1))
        if "read_req" in r:
            desc += ":%d" % r["read_req"]["size"]
        if first[r["dir"]] == "none":
            first[r["dir"]] = desc
        if r.get("crc_enabled"):
            crc_on += 1
            crc_bad += not r.get("crc_ok", False)
        crc_zero += int(r.get("crc", "0x0"), 16) == 0
print("REQ=%r REP=%r FIRST_I2R=%r FIRST_R2I=%r NFPDU=%d CRC_ON=%d CRC_BAD=%d CRC_ZERO=%d" % (
    frames["request"], frames["reply"], first["i2r"], first["r2i"], n, crc_on, crc_bad, crc_zero))
'
}

# ------------------------------------------------------------ checking

bad=""
# want DESCRIPTION TEST...: a failed TEST adds DESCRIPTION to $bad.
want() {
	local d=$1
	shift
	"$@" || bad+="${bad:+; }$d"
}
# like STRING GLOB: STRING matches the shell pattern GLOB.
# shellcheck disable=SC2053 # the pattern is the point
like() { [[ $1 == $2 ]]; }
says() { grep -qE -- "$2" <<<"$1"; }

# verdict CASE ROLE DETAIL: PASS with DETAIL unless a want failed.
verdict() {
	if [ -z "$bad" ]; then
		result "mpa-$1" "$2" PASS "$3"
	else
		result "mpa-$1" "$2" FAIL "$bad | $(one_line <<<"${OUT[$1]:-}" | cut -c1-300) | rping ${GRC[$1]:-?}: $(one_line <<<"${GLOG[$1]:-}" | cut -c1-200)"
	fi
	bad=""
}

# The run of a case that must work: 3 verified pings, rping content too.
want_pings() {
	want "iwarp-ping exit ${RC[$1]}, not 0" [ "${RC[$1]}" = 0 ]
	want "rping exit ${GRC[$1]}, not 0" [ "${GRC[$1]}" = 0 ]
	want "no '$COUNT pings done'" says "${OUT[$1]}" "^$COUNT pings done"
}
# Every FPDU with a CRC, each good (and at least the pings' worth).
want_crc_good() {
	want "only $NFPDU FPDUs" [ "$NFPDU" -ge $((COUNT * 4)) ]
	want "$CRC_ON of $NFPDU FPDUs with CRC" [ "$CRC_ON" = "$NFPDU" ]
	want "$CRC_BAD bad CRCs" [ "$CRC_BAD" = 0 ]
}
want_crc_off() {
	want "only $NFPDU FPDUs" [ "$NFPDU" -ge $((COUNT * 4)) ]
	want "$CRC_ON FPDUs with CRC" [ "$CRC_ON" = 0 ]
	want "$CRC_ZERO of $NFPDU CRC fields zero" [ "$CRC_ZERO" = "$NFPDU" ]
}
# A connection refused during MPA: exit 4 with MESSAGE, promptly, no
# FPDU, and rping never saw it (still listening, killed at the end).
want_refused() { # case message
	want "iwarp-ping exit ${RC[$1]}, not 4" [ "${RC[$1]}" = 4 ]
	want "no '$2' message" says "${OUT[$1]}" "$2"
	want "took ${SECS[$1]} s" [ "${SECS[$1]}" -le 3 ]
	want "$NFPDU FPDUs" [ "$NFPDU" = 0 ]
	want "rping ended (${GRC[$1]}), it should never have seen the connection" [ "${GRC[$1]}" = killed ]
}
# The rev-1 outcome: connected, then rping cannot post its READ (ORD 0)
# and closes in ping 0.
want_rev1_run() {
	want "iwarp-ping exit ${RC[$1]}, not 1" [ "${RC[$1]}" = 1 ]
	want "not connected with MPA rev $2, P2P off" \
		says "${OUT[$1]}" "^connected to .*: MPA rev $2, .*P2P off, RTR none"
	want "no 'closed the connection in ping 0'" says "${OUT[$1]}" "closed the connection in ping 0"
	want "rping exit 0 (its READ should have failed)" [ "${GRC[$1]}" != 0 ]
	want "rping did not fail its READ post" says "${GLOG[$1]}" "post send error"
}

# ------------------------------------------------------------ our initiator

# run_client CASE: capture, run iwarp-ping -c, decode; fills RC OUT SECS.
run_client() {
	local c=$1 t0
	cap_start "mpa-$c" "tcp port ${PORT[$c]}"
	t0=$SECONDS
	# shellcheck disable=SC2086 # options are words
	OUT[$c]=$(hx timeout 20 "$PING" -c -a "$IWI_GUEST_IP" -p "${PORT[$c]}" -C $COUNT -V \
		-S $SIZE -d --timeout=5 ${OPTS[$c]} 2>&1)
	RC[$c]=$?
	SECS[$c]=$((SECONDS - t0))
	cap_stop "mpa-$c"
	printf '%s\n' "${OUT[$c]}" >"$IWI_OUT/mpa-$c.out"
}

judge_client() { # case
	local c=$1 REQ REP FIRST_I2R FIRST_R2I NFPDU CRC_ON CRC_BAD CRC_ZERO d
	eval "$(wire_facts "$c")"
	d="REQ [$REQ] REP [$REP]"
	case $c in
	p2p-write-read)
		want_pings "$c"
		want "Request not rev 2 P2P WRITE|READ" like "$REQ" "rev=2 m=0 c=1 r=0 enh=1 p2p=1 rtr=write,read pd=4 *"
		want "Reply not rev 2 P2P WRITE" like "$REP" "rev=2 m=0 c=1 r=0 enh=1 p2p=1 rtr=write pd=4 *"
		want "first FPDU $FIRST_I2R, not a zero-length Write" [ "$FIRST_I2R" = RDMA_Write:0 ]
		want "not 'P2P on, RTR WRITE'" says "${OUT[$c]}" "P2P on, RTR WRITE, IRD 1 ORD 1"
		want_crc_good
		d="siw chose WRITE; RTR = zero-length RDMA Write; $COUNT pings; $d" ;;
	p2p-read)
		want_pings "$c"
		want "Request not P2P READ only" like "$REQ" "rev=2 m=0 c=1 r=0 enh=1 p2p=1 rtr=read pd=4 *"
		want "Reply not P2P READ" like "$REP" "rev=2 m=0 c=1 r=0 enh=1 p2p=1 rtr=read pd=4 *"
		want "first FPDU $FIRST_I2R, not a zero-length Read Request" [ "$FIRST_I2R" = RDMA_Read_Request:0:0 ]
		want "siw's first FPDU $FIRST_R2I, not a zero-length Read Response" [ "$FIRST_R2I" = RDMA_Read_Response:0 ]
		want "not 'RTR READ'" says "${OUT[$c]}" "P2P on, RTR READ"
		want_crc_good
		d="siw chose READ and answered the zero-length Read Request with a zero-length Read Response; $d" ;;
	no-p2p)
		want_pings "$c"
		want "Request not siw's own shape" like "$REQ" "rev=2 m=0 c=0 r=0 enh=1 p2p=0 rtr=none pd=4 *"
		want "Reply not rev 2 enhanced without P2P and C" like "$REP" "rev=2 m=0 c=0 r=0 enh=1 p2p=0 rtr=none pd=4 ulp=0 ird=1 ord=1"
		want "first FPDU $FIRST_I2R, not our Send" [ "$FIRST_I2R" = Send:16 ]
		want "not 'CRC off ... P2P off'" says "${OUT[$c]}" "CRC off, markers rx off tx off, P2P off, RTR none"
		want_crc_off
		d="siw's own initiator shape: no RTR, the first FPDU is our Send, no CRC; $d" ;;
	crc-on)
		want_pings "$c"
		want "Request without C" like "$REQ" "rev=2 m=0 c=1 r=0 enh=1 p2p=0 rtr=none pd=4 *"
		want "Reply without C" like "$REP" "rev=2 m=0 c=1 r=0 enh=1 p2p=0 rtr=none pd=4 ulp=0 ird=1 ord=1"
		want "not 'CRC on'" says "${OUT[$c]}" "MPA rev 2, CRC on, markers rx off tx off, P2P off"
		want_crc_good
		d="siw echoed C; all $NFPDU FPDUs (both ways) carry a good CRC32c; $d" ;;
	crc-off)
		want_pings "$c"
		want "Request has C" like "$REQ" "rev=2 m=0 c=0 *"
		want "Reply has C" like "$REP" "rev=2 m=0 c=0 r=0 enh=1 p2p=1 rtr=write *"
		want "not 'CRC off'" says "${OUT[$c]}" "MPA rev 2, CRC off"
		want_crc_off
		d="siw left C clear; $NFPDU FPDUs, every CRC field zero; $d" ;;
	rev1 | pd-256-rev1)
		want_rev1_run "$c" 1
		want "Request not rev 1" like "$REQ" "rev=1 m=0 c=1 r=0 enh=0 p2p=0 *"
		want "Reply not rev 1 with C and no private data" like "$REP" "rev=1 m=0 c=1 r=0 enh=0 p2p=0 rtr=none pd=0 *"
		[ "$c" = rev1 ] || want "Request private data not 256" like "$REQ" "* pd=256 *"
		want_crc_good_some
		d="siw replied rev 1 (no IRD/ORD) and gave rping ORD 0: rping's READ post failed, it closed in ping 0 (our exit 1); $d" ;;
	rev2-not-enhanced)
		want_rev1_run "$c" 2
		want "Request not rev 2 without 0x10" like "$REQ" "rev=2 m=0 c=1 r=0 enh=0 p2p=0 rtr=none pd=0 *"
		want "Reply not rev 2 without 0x10" like "$REP" "rev=2 m=0 c=1 r=0 enh=0 p2p=0 rtr=none pd=0 *"
		want_crc_good_some
		d="as rev 1: no IRD/ORD block, rping got ORD 0 and its READ post failed; $d" ;;
	markers)
		want_refused "$c" "rejected the connection \(REJECTED: MPA Reply with R set, 0 octets of private data\); we asked for markers"
		want "Request without M" like "$REQ" "rev=2 m=1 c=1 r=0 enh=1 *"
		want "Reply not a Reject (R, no M, C, 0x10, block 0)" like "$REP" "rev=2 m=0 c=1 r=1 enh=1 p2p=0 rtr=none pd=4 ulp=0 ird=0 ord=0"
		d="siw rejected M at once: Reply with R, M cleared, block 00000000; REJECTED, exit 4 in ${SECS[$c]} s; $d" ;;
	pd-0 | pd-252)
		want_pings "$c"
		local n=${c#pd-}
		want "Request private data not $n+4" like "$REQ" "rev=2 m=0 c=1 r=0 enh=1 p2p=1 rtr=write,read pd=$((n + 4)) ulp=$n *"
		want "Reply not P2P WRITE" like "$REP" "rev=2 m=0 c=1 r=0 enh=1 p2p=1 rtr=write pd=4 *"
		want_crc_good
		d="$n octets of private data (+4 block) taken; $d" ;;
	pd-256 | pd-300 | pd-300-rev1)
		want_refused "$c" "CONNECT_ERROR \(Connection reset by peer\): the peer closed the connection without an MPA Reply"
		want "Request private data wrong" like "$REQ" "* pd=$(pd_total "$c") *"
		want "siw replied" [ "$REP" = none ]
		d="siw closed the connection without a Reply (private data $(pd_total "$c") > 256); CONNECT_ERROR, exit 4 in ${SECS[$c]} s; $d" ;;
	esac
	verdict "$c" "libiwarp client" "$d"
}

# A failed run has fewer FPDUs: just every one with a good CRC.
want_crc_good_some() {
	want "$CRC_ON of $NFPDU FPDUs with CRC" [ "$CRC_ON" = "$NFPDU" ]
	want "$CRC_BAD bad CRCs" [ "$CRC_BAD" = 0 ]
}

# The MPA private data length a case's Request carries.
pd_total() {
	local n=${1#pd-}
	n=${n%-rev1}
	case $1 in *-rev1) echo "$n" ;; *) echo $((n + 4)) ;; esac
}

client_cases() {
	local i=0 entry c jobs="" names="" waitn="" missing
	for entry in "${CLIENT_CASES[@]}"; do
		c=${entry%%|*}
		PORT[$c]=$((BASE + 10 + i))
		OPTS[$c]=${entry#*|}
		jobs+="mpa-$c"$'\t'"rping -s -a $IWI_GUEST_IP -p ${PORT[$c]} -C $COUNT -V -S $SIZE"$'\n'
		names+=" mpa-$c"
		i=$((i + 1))
	done
	guest_jobs <<<"${jobs%$'\n'}"
	# shellcheck disable=SC2046
	missing=$(guest_ports_listening 30 $(for c in "${!PORT[@]}"; do echo "${PORT[$c]}"; done))
	for entry in "${CLIENT_CASES[@]}"; do
		c=${entry%%|*}
		if [ $SECONDS -gt 150 ]; then
			OUT[$c]="not run: the client cases' 150 s are spent"
			RC[$c]=-
			SECS[$c]=0
			continue
		fi
		if [[ " $missing " == *" ${PORT[$c]} "* ]]; then
			OUT[$c]="rping -s did not listen on ${PORT[$c]}"
			RC[$c]=-
			SECS[$c]=0
			continue
		fi
		run_client "$c"
		# rping ends by itself once it had a connection.
		! says "${OUT[$c]}" "^connected to" || waitn+=" mpa-$c"
	done
	# shellcheck disable=SC2086
	guest_collect 20 $waitn -- $names
	for entry in "${CLIENT_CASES[@]}"; do
		c=${entry%%|*}
		GRC[$c]=${GRC[mpa-$c]}
		GLOG[$c]=${GLOG[mpa-$c]}
		judge_client "$c"
	done
}

# ------------------------------------------------------------ siw's initiator

judge_server() { # case
	local c=$1 REQ REP FIRST_I2R FIRST_R2I NFPDU CRC_ON CRC_BAD CRC_ZERO d
	eval "$(wire_facts "$c")"
	d="REQ [$REQ] REP [$REP]"
	want "siw's Request not rev 2, 0x10, no C, no P2P, IRD/ORD 1/1" \
		like "$REQ" "rev=2 m=0 c=0 r=0 enh=1 p2p=0 rtr=none pd=4 ulp=0 ird=1 ord=1"
	case $c in
	srv-crc-on | srv-crc-off | srv-pd-252)
		want "rping -c exit ${GRC[$c]}, not 0" [ "${GRC[$c]}" = 0 ]
		want "iwarp-ping -s exit ${RC[$c]}, not 0" [ "${RC[$c]}" = 0 ]
		want "server did not serve $COUNT pings" says "${OUT[$c]}" ": $COUNT pings served, done"
		want "first FPDU $FIRST_I2R, not rping's Send" [ "$FIRST_I2R" = Send:16 ] ;;
	*)
		want "rping -c exit 0" [ "${GRC[$c]}" != 0 ]
		want "rping -c did not report the failed connect" says "${GLOG[$c]}" "cma event RDMA_CM_EVENT_(CONNECT_ERROR|REJECTED|UNREACHABLE)"
		want "iwarp-ping -s exit ${RC[$c]}, not 1" [ "${RC[$c]}" = 1 ]
		want "server does not say the client left first" says "${OUT[$c]}" "closed the connection before the first ping"
		want "$NFPDU FPDUs" [ "$NFPDU" = 0 ] ;;
	esac
	case $c in
	srv-crc-on)
		want "Reply not C, no P2P" like "$REP" "rev=2 m=0 c=1 r=0 enh=1 p2p=0 rtr=none pd=4 ulp=0 ird=1 ord=1"
		want_crc_good
		d="our C turned CRC on both ways, every CRC good; $d" ;;
	srv-crc-off)
		want "Reply has C" like "$REP" "rev=2 m=0 c=0 r=0 enh=1 p2p=0 rtr=none pd=4 *"
		want_crc_off
		d="no C either way: every CRC field zero; $d" ;;
	srv-pd-252)
		want "Reply private data not 256" like "$REP" "rev=2 m=0 c=1 r=0 enh=1 p2p=0 rtr=none pd=256 ulp=252 *"
		want_crc_good
		d="siw took 252+4 octets of Reply private data; $d" ;;
	srv-rev1)
		want "Reply not rev 1" like "$REP" "rev=1 m=0 c=1 r=0 enh=0 *"
		d="siw's initiator refused a rev-1 Reply to its enhanced Request: $(one_line <<<"${GLOG[$c]}" | cut -c1-120); $d" ;;
	srv-markers)
		want "Reply without M" like "$REP" "rev=2 m=1 c=1 r=0 enh=1 *"
		d="siw's initiator refused markers: $(one_line <<<"${GLOG[$c]}" | cut -c1-120); $d" ;;
	esac
	verdict "$c" "libiwarp server" "$d"
}

server_cases() {
	local i=0 entry c script="" names="" pids=()
	for entry in "${SERVER_CASES[@]}"; do
		c=${entry%%|*}
		PORT[$c]=$((BASE + 50 + i))
		OPTS[$c]=${entry#*|}
		i=$((i + 1))
		cap_start "mpa-$c" "tcp port ${PORT[$c]}"
		# shellcheck disable=SC2086
		hx timeout 90 "$PING" -s -a "$IWI_HOST_IP" -p "${PORT[$c]}" -S $SIZE -d --timeout=5 \
			${OPTS[$c]} >"$IWI_OUT/mpa-$c.out" 2>&1 &
		pids+=("$c:$!")
		host_listening "${PORT[$c]}" 10 || log "iwarp-ping -s $c did not listen"
		# One after another, each bounded (busybox timeout).
		script+="timeout 15 rping -c -a $IWI_HOST_IP -p ${PORT[$c]} -C $COUNT -V -S $SIZE > /tmp/mpa-$c.log 2>&1; echo \$? > /tmp/mpa-$c.rc; "
		names+=" mpa-$c"
	done
	gx -t 120 "rm -f /tmp/mpa-srv-*.rc; $script true" >/dev/null
	for entry in "${pids[@]}"; do
		c=${entry%%:*}
		wait "${entry#*:}"
		RC[$c]=$?
		OUT[$c]=$(cat "$IWI_OUT/mpa-$c.out")
		cap_stop "mpa-$c"
	done
	# shellcheck disable=SC2086
	guest_collect 1 -- $names
	for entry in "${SERVER_CASES[@]}"; do
		c=${entry%%|*}
		GRC[$c]=${GRC[mpa-$c]}
		GLOG[$c]=${GLOG[mpa-$c]}
		judge_server "$c"
	done
}

[ ${#CLIENT_CASES[@]} = 0 ] || client_cases
[ ${#SERVER_CASES[@]} = 0 ] || server_cases
# Every capture through both decoders (wire_check.py): the same frames and
# fields, every CRC good; rejected and refused cases carry no FPDU.
for entry in "${CLIENT_CASES[@]}" "${SERVER_CASES[@]}"; do
	wire "mpa-${entry%%|*}" --allow-empty
done
if guest_healthy; then
	result mpa-guest rig PASS "no kernel BUG/oops in the guest after every case"
else
	result mpa-guest rig FAIL "the guest kernel reported a BUG/oops (or stopped answering)"
fi
finish
