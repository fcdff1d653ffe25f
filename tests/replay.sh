#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# tools/iwarp-replay end to end:
#  1. usage and input errors: exit 2 for bad options, 3 for a missing,
#     truncated, TCP-less or unknown-link-type capture, with a message;
#  2. the tshark cross-check capture (tests/gen_xcheck_pcap): every FPDU,
#     every CRC good, --check 0; its corrupted twin flagged, --check 1;
#  3. tests/gen_replay_pcap scenarios: markers, FPDUs across segments,
#     mid-stream pick-up with options, protocol errors (counted, first error
#     with its stream offset), CRC off, siw TERMINATEs, an MPA reject;
#  4. transport variants (tests/replay_pcapmod.py): reordered, retransmitted,
#     overlapping segments decode exactly like the original; a lost segment
#     and a snapped one are reported as gaps with their sequence numbers
#     and the rest still decodes; other link types, VLAN, pcapng, non-TCP
#     frames decode alike;
#  5. field agreement with tshark on the same frames (tests/replay_tshark.py;
#     skipped without tshark);
#  6. live replay against tests/replay_peer (a libiwarp endpoint): clean
#     replays as initiator and responder complete on the peer's side; each
#     fault draws the TERMINATE it should from the live engine; the peer's
#     own IWARP_PCAP trace (if the library writes one) shows the fault; an
#     unreachable peer is exit 4.
# Every wait is bounded: `timeout` around each program, --timeout on the
# replays, 10 s inside replay_peer.
# Env: IW_BUILDDIR, IW_SRCDIR, PYTHON3, TSHARK (empty: skip 5).
# Exit: 0 pass, 1 fail, 77 skip (python3 missing).
set -u

B=${IW_BUILDDIR:-.}
S=${IW_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
RP=$B/tools/iwarp-replay
GENX=$B/tests/gen_xcheck_pcap
GEN=$B/tests/gen_replay_pcap
PEER=$B/tests/replay_peer
PY=${PYTHON3:-python3}
TSHARK=${TSHARK-}

for p in "$RP" "$GENX" "$GEN" "$PEER"; do
	if [ ! -x "$p" ]; then
		echo "replay: FAIL: $p not built (make check builds it)"
		exit 1
	fi
done
if ! command -v "$PY" >/dev/null 2>&1; then
	echo "replay: SKIP: no python3 (PYTHON3='$PY'): the captures are made and read with it"
	exit 77
fi

# The interpreter itself, not a version-manager shim: it is started ~150 times.
PY=$("$PY" -c 'import sys; print(sys.executable)') || exit 1

T=$(mktemp -d "${TMPDIR:-/tmp}/iw_replay.XXXXXX") || exit 1
PIDS=
cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if command -v timeout >/dev/null 2>&1; then TO="timeout 60"; else TO=; fi
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*"
}
check() { # description command...: passes if the command succeeds
	d=$1
	shift
	if "$@"; then ok; else bad "$d"; fi
}
rp() { $TO "$RP" "$@"; }
js() { "$PY" "$S/tests/replay_json.py" "$@"; }
mod() { "$PY" "$S/tests/replay_pcapmod.py" "$@"; }
# status of the last command equals $1
st() { [ "$RC" -eq "$1" ] || { echo "  (exit $RC, want $1)"; return 1; }; }
has() { grep -q -- "$1" "$2" || { echo "  ('$1' not in $2:)"; head -5 "$2"; return 1; }; }

# ------------------------------------------------------------ captures
"$GENX" "$T/x.pcap" "$T/x.tsv" "$T/bad.pcap" "$T/bad.tsv" >/dev/null || bad "gen_xcheck_pcap"
for s in client server markers markers-ws smallmss midstream errors crcoff siwterm reject; do
	"$GEN" "$s" "$T/$s.pcap" || bad "gen_replay_pcap $s"
done

# ------------------------------------------------------------ 1. usage and input
rp --help >"$T/help" 2>&1; RC=$?
check "--help" st 0 && check "--help names the exit codes" has "Exit status" "$T/help"
for args in "" "--bogus $T/x.pcap" "--crc maybe $T/x.pcap" "--markers sideways $T/x.pcap" \
	"--fault crc:0 --replay initiator --peer 127.0.0.1:9 $T/x.pcap" \
	"--fault field:1:nosuch=1 --replay initiator --peer 127.0.0.1:9 $T/x.pcap" \
	"--fault field:1:dv=9 --replay initiator --peer 127.0.0.1:9 $T/x.pcap" \
	"--replay initiator $T/x.pcap" "--replay responder --peer 127.0.0.1:9 $T/x.pcap" \
	"--peer 127.0.0.1:9 $T/x.pcap" "--conn 0 $T/x.pcap" "--split 0 --replay initiator --peer 1:1 $T/x.pcap" \
	"$T/x.pcap $T/bad.pcap" "--payload $T/x.pcap"; do
	# shellcheck disable=SC2086 # the argument lists are split on purpose
	rp $args >"$T/out" 2>"$T/err"; RC=$?
	check "usage error exit 2: '$args'" st 2
	check "usage error says why: '$args'" has "iwarp-replay" "$T/err"
done
rp "$T/nonexistent.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "missing file: exit 3" st 3 && check "missing file: message" has "nonexistent.pcap" "$T/err"
: >"$T/empty.pcap"
rp "$T/empty.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "empty file: exit 3" st 3
mod linktype "$T/x.pcap" "$T/lt147.pcap" 147
rp "$T/lt147.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "unknown link type: exit 3" st 3 && check "unknown link type: message" has "link type 147" "$T/err"
mod truncate "$T/x.pcap" "$T/trunc.pcap"
rp --json "$T/trunc.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "truncated file: exit 3" st 3 && check "truncated file: message" has "truncated" "$T/err"
check "truncated file: what was read is reported" test "$(js summary "$T/out" fpdus)" -ge 50
mod notcp "$T/x.pcap" "$T/notcp.pcap"
rp "$T/notcp.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "no TCP: exit 3" st 3 && check "no TCP: message" has "no TCP segments" "$T/err"

# ------------------------------------------------------------ 2. the cross-check captures
rp --check --json "$T/x.pcap" >"$T/x.json"; RC=$?
check "xcheck capture: --check exit 0" st 0
check "xcheck capture: JSON Lines parse" js valid "$T/x.json" >/dev/null
check "xcheck capture: json.tool accepts a line" sh -c "head -1 '$T/x.json' | '$PY' -m json.tool >/dev/null"
check "xcheck capture: 55 FPDUs" test "$(js count "$T/x.json" fpdu)" -eq 55
check "xcheck capture: every CRC good" test "$(grep -c '"crc_ok":true' "$T/x.json")" -eq 55
check "xcheck capture: 4 MPA frames" test "$(js count "$T/x.json" mpa)" -eq 4
check "xcheck capture: 4 TERMINATEs" test "$(js summary "$T/x.json" terminates)" -eq 4
# --payload: the octets gen_xcheck_pcap sent (its pattern, octet i = i*31+7)
# in STag 0x100's 64-octet Write and STag 0x300's 2000-octet Read Response
# from pattern[5], however the FPDUs cut them.
rp --json --payload "$T/x.pcap" >"$T/xp.json"; RC=$?
check "--payload: exit 0" st 0
xpat() { "$PY" -c "import sys; print(bytes((i*31+7)&255 for i in range($1, $1+$2)).hex())"; }
check "--payload: the 64-octet Write" test "$(js payload "$T/xp.json" 256)" = "$(xpat 0 64)"
check "--payload: the 2000-octet Read Response" test "$(js payload "$T/xp.json" 768)" = "$(xpat 5 2000)"
check "--payload: every FPDU's payload_len octets" js payload_lens "$T/xp.json"
rp "$T/x.pcap" >"$T/x.txt"; RC=$?
check "xcheck capture: text output" st 0
check "xcheck capture: TERMINATE named" has '"DDP untagged buffer: invalid MSN, no buffer available"' "$T/x.txt"
check "xcheck capture: summary" has "result: no protocol errors" "$T/x.txt"
rp --json "$T/bad.pcap" >"$T/bad.json"; RC=$?
check "corrupted CRC: exit 0 without --check" st 0
rp --check "$T/bad.pcap" >"$T/bad.txt"; RC=$?
check "corrupted CRC: --check exit 1" st 1
check "corrupted CRC: one CRC error" test "$(js summary "$T/bad.json" crc_errors)" -eq 1
check "corrupted CRC: first error at stream offset 28" test "$(js summary "$T/bad.json" first_error.stream_off)" -eq 28
check "corrupted CRC: reported" has "CRC BAD" "$T/bad.txt"

# ------------------------------------------------------------ 3. scenarios
rp --check --json "$T/markers.pcap" >"$T/markers.json"; RC=$?
check "markers: --check exit 0" st 0
check "markers: 47 FPDUs" test "$(js count "$T/markers.json" fpdu)" -eq 47
check "markers: a leading marker" grep -q '"markers":\[0,512\]' "$T/markers.json"
check "markers: marker positions all checked" test "$(grep -c '"markers_ok":true' "$T/markers.json")" -eq 47
rp --check --json "$T/smallmss.pcap" >"$T/smallmss.json"; RC=$?
check "FPDUs across segments: --check exit 0" st 0
check "FPDUs across segments: 47 FPDUs" test "$(js count "$T/smallmss.json" fpdu)" -eq 47
check "FPDUs across segments: some span frames" test "$(js span "$T/smallmss.json")" -gt 10
rp --json "$T/midstream.pcap" >"$T/mid0.json"; RC=$?
check "mid-stream without options: nothing decoded" test "$(js count "$T/mid0.json" fpdu)" -eq 0
check "mid-stream without options: says what to give" grep -q -- "--crc on|off" "$T/mid0.json"
rp --check --json --crc on --markers initiator --stream-offset initiator:1000 \
	--stream-offset responder:5000 --responder-port 41001 "$T/midstream.pcap" >"$T/mid.json"; RC=$?
check "mid-stream with options: --check exit 0" st 0
check "mid-stream with options: 47 FPDUs" test "$(js count "$T/mid.json" fpdu)" -eq 47
rp --json --crc on --markers initiator --responder-port 41001 "$T/midstream.pcap" >"$T/mid2.json"
check "mid-stream, wrong stream offset: marker errors" test "$(js summary "$T/mid2.json" marker_errors)" -gt 0
rp --check --json "$T/errors.pcap" >"$T/errors.json"; RC=$?
check "errors: --check exit 1" st 1
check "errors: 1 CRC error" test "$(js summary "$T/errors.json" crc_errors)" -eq 1
check "errors: 1 marker error" test "$(js summary "$T/errors.json" marker_errors)" -eq 1
check "errors: 3 other errors (DDP version, opcode, FIN in an FPDU)" test "$(js summary "$T/errors.json" protocol_errors)" -eq 3
check "errors: first error at stream offset 28" test "$(js summary "$T/errors.json" first_error.stream_off)" -eq 28
check "errors: decoding goes on after a bad header" test "$(js count "$T/errors.json" fpdu)" -eq 9
rp "$T/errors.pcap" >"$T/errors.txt"
check "errors: first error in the summary" has "first error: connection 1 I>R frame 7 stream offset 28" "$T/errors.txt"
rp --check --json "$T/crcoff.pcap" >"$T/crcoff.json"; RC=$?
check "CRC off: --check exit 0" st 0
check "CRC off: not checked" test "$(grep -c '"crc_enabled":false' "$T/crcoff.json")" -eq 3
rp --json "$T/siwterm.pcap" >"$T/siw0.json"
check "siw TERMINATE, RFC reading: malformed" test "$(js summary "$T/siw0.json" protocol_errors)" -eq 1
rp --check --json --peer-siw "$T/siwterm.pcap" >"$T/siw.json"; RC=$?
check "siw TERMINATE, --peer-siw: exit 0" st 0
check "siw TERMINATE, --peer-siw: DDP no buffer, MPA CRC" test "$(js terms "$T/siw.json" r2i) $(js terms "$T/siw.json" i2r)" = "0x1202 0x2002"
rp --json --conn 2 "$T/x.pcap" >"$T/conn2.json"
check "--conn 2: only its 28 FPDUs" test "$(js count "$T/conn2.json" fpdu)" -eq 28 -a "$(grep -c '"conn":1,' "$T/conn2.json")" -eq 0
rp --conn 5 "$T/x.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "--conn naming no connection: exit 3" st 3 && check "--conn naming no connection: message" has "2 TCP connections" "$T/err"
rp --json "$T/reject.pcap" >"$T/reject.json"
check "MPA reject: noticed" grep -q '"rejected":true' "$T/reject.json"

# ------------------------------------------------------------ 4. transport variants
js fpdus "$T/x.json" >"$T/x.fpdus"
js fpdus "$T/markers.json" >"$T/markers.fpdus"
for base in x markers; do
	mod all "$T/$base.pcap" "$T/$base" || bad "replay_pcapmod all $base"
	for m in ooo retrans overlap vlan sll sll2 raw null pcapng nontcp; do
		rp --check --json "$T/$base-$m.pcap" >"$T/$base-$m.json"; RC=$?
		check "$base $m: --check exit 0" st 0
		js fpdus "$T/$base-$m.json" >"$T/$base-$m.fpdus"
		check "$base $m: the same FPDUs as in order" cmp -s "$T/$base.fpdus" "$T/$base-$m.fpdus"
	done
	for m in gap snap; do
		rp --json "$T/$base-$m.pcap" >"$T/$base-$m.json"
		rp "$T/$base-$m.pcap" >"$T/$base-$m.txt"
		js fpdus "$T/$base-$m.json" >"$T/$base-$m.fpdus"
		check "$base $m: one gap" test "$(js summary "$T/$base-$m.json" gaps)" -eq 1
		check "$base $m: gap with sequence numbers" grep -q "GAP: [0-9]* octets missing, seq [0-9]* to [0-9]*" "$T/$base-$m.txt"
		check "$base $m: one FPDU lost, no error" test "$(wc -l <"$T/$base-$m.fpdus")" -eq $(($(wc -l <"$T/$base.fpdus") - 1)) -a "$(js summary "$T/$base-$m.json" errors)" -eq 0
		sort "$T/$base.fpdus" >"$T/$base.sorted"
		sort "$T/$base-$m.fpdus" | comm -23 - "$T/$base.sorted" >"$T/$base-$m.extra"
		check "$base $m: the others decoded as in order" test ! -s "$T/$base-$m.extra"
	done
done
if command -v editcap >/dev/null 2>&1; then
	editcap -F pcapng "$T/markers.pcap" "$T/markers-editcap.pcapng" 2>/dev/null
	rp --json "$T/markers-editcap.pcapng" >"$T/me.json"
	js fpdus "$T/me.json" >"$T/me.fpdus"
	check "pcapng from editcap: the same FPDUs" cmp -s "$T/markers.fpdus" "$T/me.fpdus"
else
	echo "SKIP: editcap not installed: pcapng written by replay_pcapmod.py only"
fi

# ------------------------------------------------------------ 5. tshark
if [ -n "$TSHARK" ] && [ -x "$TSHARK" ]; then
	# tshark takes a second to start: four comparisons at a time.
	tsh() { # capture [tshark options]
		c=$1
		shift
		"$PY" "$S/tests/replay_tshark.py" "$TSHARK" "$RP" "$T/$c.pcap" "$@" >"$T/ts-$c.out" 2>&1
		echo $? >"$T/ts-$c.rc"
	}
	# tshark 4.0 leaves out-of-order segments undissected unless it is told
	# not to track sequence numbers (each segment here holds whole FPDUs).
	NOSEQ="-o tcp.analyze_sequence_numbers:FALSE"
	# One capture per dissection path (the other link types decode to the
	# same FPDUs as x.pcap, checked above, and cost a tshark start each).
	set -- x bad client server crcoff siwterm reject markers-ws x-retrans x-gap x-sll2 \
		x-pcapng "x-ooo $NOSEQ" "x-overlap $NOSEQ"
	while [ $# -gt 0 ]; do
		n=0
		while [ $# -gt 0 ] && [ $n -lt 4 ]; do
			# shellcheck disable=SC2086 # capture name and options
			tsh $1 &
			shift
			n=$((n + 1))
		done
		wait
	done
	for f in "$T"/ts-*.rc; do
		c=$(basename "$f" .rc)
		c=${c#ts-}
		tail -n 1 "$T/ts-$c.out"
		if [ "$(cat "$f")" = 0 ]; then ok; else bad "tshark disagrees on $c:"; cat "$T/ts-$c.out"; fi
	done
	# The comparison itself must see a wrong value.
	sed 's/"msn":6,/"msn":9,/' "$T/x.json" >"$T/x-wrong.json"
	if "$PY" "$S/tests/replay_tshark.py" "$TSHARK" "$T/x-wrong.json" "$T/x.pcap" >/dev/null; then
		bad "the tshark comparison missed a wrong MSN"
	else
		ok
	fi
else
	echo "SKIP: tshark not found (TSHARK is empty): field agreement not checked"
fi

# ------------------------------------------------------------ 6. live replay
# Start the libiwarp server; sets PORT RKEY OFF (the TO shift) and PPID_.
start_peer() {
	: >"$T/peer.out"
	$TO env ${PEER_TRACE:+IWARP_PCAP="$PEER_TRACE"} "$PEER" server >"$T/peer.out" 2>&1 &
	PPID_=$!
	PIDS="$PIDS $PPID_"
	i=0
	while [ $i -lt 200 ] && ! grep -q listening "$T/peer.out"; do
		kill -0 "$PPID_" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	l=$(grep listening "$T/peer.out") || return 1
	PORT=$(echo "$l" | sed 's/.*port=\([0-9]*\).*/\1/')
	RKEY=$(echo "$l" | sed 's/.*rkey=\(0x[0-9a-f]*\).*/\1/')
	ADDR=$(echo "$l" | sed 's/.*addr=\(0x[0-9a-f]*\).*/\1/')
	OFF=$(printf '0x%x' $((ADDR - 0x10000)))
}

replay() { # fault-args...: replays client.pcap against a fresh peer; sets RC and PRC
	if ! start_peer; then
		bad "replay_peer did not start"
		cat "$T/peer.out"
		RC=99
		return
	fi
	rp --replay initiator --peer "127.0.0.1:$PORT" --map-stag "0x1000=$RKEY" --to-offset "$OFF" \
		--timeout 10000 --linger 300 --json --check "$@" "$T/client.pcap" >"$T/live.json" 2>"$T/live.err"
	RC=$?
	wait "$PPID_"
	PRC=$?
	# A sanitizer build reports on stderr; its exit status alone could pass
	# for the expected 1.
	if grep -q "Sanitizer\|runtime error" "$T/live.err" "$T/peer.out"; then
		bad "sanitizer report in a live replay ($*)"
		cat "$T/live.err"
	fi
}

replay --pace fast
check "live replay: exit 0" st 0
check "live replay: the peer's side completed" has "replay_peer: ok" "$T/peer.out"
check "live replay: peer exit 0" test "$PRC" -eq 0
check "live replay: JSON Lines parse" js valid "$T/live.json" >/dev/null
check "live replay: the Read Response decoded" grep -q '"dir":"rx".*"name":"RDMA Read Response"' "$T/live.json"
replay --split 1 --pace recorded --fault delay:2:200
check "live replay, 1-octet writes and a delay: exit 0" st 0
check "live replay, 1-octet writes and a delay: the peer completed" has "replay_peer: ok" "$T/peer.out"

# fault, the TERMINATE the live engine must send (any: the peer's choice)
for spec in "crc:2 0x2002" "field:3:stag=0xdeadbeef 0x1100" "field:2:msn=7 0x1203" \
	"field:2:opcode=12 0x0206" "field:2:dv=2 0x1206" "field:2:qn=1 0x1201" \
	"field:6:read_size=100000 0x0101" "drop:2 0x1203" "truncate:2 any" \
	"field:2:ulpdu_len=200 any"; do
	f=${spec% *}
	want=${spec#* }
	replay --pace fast --fault "$f"
	check "fault $f: --check exit 1" st 1
	got=$(js terms "$T/live.json" rx)
	if [ "$want" = any ]; then
		check "fault $f: the peer sent a TERMINATE ($got)" test -n "$got"
	else
		check "fault $f: the peer sent TERMINATE $want (got '$got')" test "$got" = "$want"
		check "fault $f: the peer says it sent $want" grep -q "term $want" "$T/peer.out"
	fi
	check "fault $f: the peer's side did not complete" test "$PRC" -ne 0
done

# The live peer's own trace of a replay (IWARP_PCAP, when the library
# writes one): the decoder must find in it the CRC we spoilt and the
# TERMINATE that answered it, and tshark must agree.
rm -f "$T/peer-trace.pcap"
PEER_TRACE=$T/peer-trace.pcap
replay --pace fast --fault crc:2
PEER_TRACE=
if [ -s "$T/peer-trace.pcap" ]; then
	rp --json "$T/peer-trace.pcap" >"$T/peer-trace.json"
	check "peer's trace: the spoilt CRC" test "$(js summary "$T/peer-trace.json" crc_errors)" -eq 1
	check "peer's trace: at FPDU 2 of the initiator" test "$(js field "$T/peer-trace.json" 1 "(r['dir'], r['n'], r['crc_ok'])")" = "('i2r', 2, False)"
	check "peer's trace: its TERMINATE" test "$(js terms "$T/peer-trace.json" r2i)" = 0x2002
	if [ -n "$TSHARK" ] && [ -x "$TSHARK" ]; then
		check "tshark agrees on the peer's trace" "$PY" "$S/tests/replay_tshark.py" "$TSHARK" "$RP" "$T/peer-trace.pcap"
	fi
else
	echo "SKIP: the library wrote no IWARP_PCAP trace: the peer's view not checked"
fi

# Responder: wait for replay_peer's client on a port the kernel picks.
: >"$T/resp.err"
rp --replay responder --listen 127.0.0.1:0 --timeout 10000 --linger 300 --check --json \
	"$T/server.pcap" >"$T/resp.json" 2>"$T/resp.err" &
RPID=$!
PIDS="$PIDS $RPID"
i=0
while [ $i -lt 200 ] && ! grep -q "listening on" "$T/resp.err"; do
	sleep 0.05
	i=$((i + 1))
done
RPORT=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\),.*/\1/p' "$T/resp.err")
if [ -n "$RPORT" ]; then
	$TO "$PEER" client "$RPORT" >"$T/client.out" 2>&1
	CRC_=$?
	wait "$RPID"
	RC=$?
	check "responder replay: exit 0" st 0
	check "responder replay: the client completed" test "$CRC_" -eq 0
	check "responder replay: the client got the recorded answer" has 'received "welcome"' "$T/client.out"
else
	bad "responder replay: no listening line"
	cat "$T/resp.err"
fi

rp --replay initiator --peer 127.0.0.1:1 --timeout 2000 "$T/client.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "unreachable peer: exit 4" st 4 && check "unreachable peer: message" has "connect" "$T/err"
rp --replay initiator --peer 127.0.0.1:1 --fault crc:99 "$T/client.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "fault on a missing FPDU: exit 2 before connecting" st 2
rp --replay initiator --peer 127.0.0.1:1 --fault field:2:stag=1 "$T/client.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "field the FPDU lacks: exit 2" st 2 && check "field the FPDU lacks: message" has "no such field" "$T/err"
rp --replay initiator --peer 127.0.0.1:1 "$T/notcp.pcap" >"$T/out" 2>"$T/err"; RC=$?
check "replay of a capture without iWARP: exit 3" st 3

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
