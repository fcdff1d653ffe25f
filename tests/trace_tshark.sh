#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The library's pcap trace, checked by Wireshark: examples/example_server
# and examples/example_client run over 127.0.0.1 with IWARP_PCAP set (one
# file each), for -S 65536 and 1048576, plus tests/gen_trace_dribble's
# trace (octets handed to the tracer in records that end a few octets into
# each PDU, as short reads and partial writes on a loaded machine do: the
# examples' traces only sometimes have such records), and then for every file
#   - tests/trace_decode (our decoder) must read every connection to its end
#     with good CRCs and no framing problem, every MPA frame and FPDU
#     beginning a TCP segment that holds at least its first 20 octets (or
#     all of a shorter one: Wireshark's MPA heuristic needs them);
#   - tshark must find the MPA Request and Reply, decode as many FPDUs as we
#     did, with the same count per RDMAP opcode (Write, Read Request, Read
#     Response and Send all present), report "Good CRC32" for each and "Bad
#     CRC32" for none, flag nothing as malformed, find every IP and TCP
#     checksum good, and see no lost, retransmitted or out-of-order segment.
# tshark runs with heuristic dissectors first, so that whatever port the
# kernel picked no port-based dissector claims the stream, and without the
# RPC-over-RDMA heuristic, which claims Send payloads (tshark_xcheck.sh).
#
# Environment: TSHARK (empty: skip), IW_BUILDDIR (the build tree).
# Exit: 0 pass, 1 fail, 77 skip.
set -u

if [ -z "${TSHARK:-}" ]; then
	echo "trace_tshark: SKIP: tshark not found (TSHARK is empty); install tshark to run it"
	exit 77
fi
B=${IW_BUILDDIR:-.}
SRV=$B/examples/example_server
CLI=$B/examples/example_client
DEC=$B/tests/trace_decode
DRIB=$B/tests/gen_trace_dribble
for p in "$SRV" "$CLI" "$DEC" "$DRIB"; do
	if [ ! -x "$p" ]; then
		echo "trace_tshark: FAIL: $p not built (make check builds it)" >&2
		exit 1
	fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_trace_tshark.XXXXXX") || exit 1
SPID=
cleanup() {
	if [ -n "$SPID" ]; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

LIMIT=60
if command -v timeout >/dev/null 2>&1; then TO="timeout $LIMIT"; else TO=; fi

die() {
	echo "trace_tshark: FAIL: $*" >&2
	for f in "$TMP"/*.out; do
		[ -f "$f" ] && { echo "--- $f"; cat "$f"; } >&2
	done
	exit 1
}

# Start the traced server on a free port (as example_pair.sh); sets PORT
# and SPID. A server that could not bind leaves an empty trace behind.
start_server() {
	size=$1
	try=0
	while [ $try -lt 20 ]; do
		PORT=$((20000 + ($$ * 11 + try * 4099 + size % 9973) % 40000))
		: >"$TMP/server.out"
		IWARP_PCAP=$TMP/server-$size.pcap $TO "$SRV" -p "$PORT" -S "$size" \
			>"$TMP/server.out" 2>&1 &
		SPID=$!
		i=0
		while [ $i -lt 200 ]; do
			grep -q "listening on" "$TMP/server.out" && return 0
			kill -0 "$SPID" 2>/dev/null || break
			sleep 0.05
			i=$((i + 1))
		done
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		SPID=
		try=$((try + 1))
	done
	die "no port to listen on after $try tries"
}

for size in 65536 1048576; do
	start_server "$size"
	IWARP_PCAP=$TMP/client-$size.pcap $TO "$CLI" -p "$PORT" -S "$size" \
		>"$TMP/client.out" 2>&1 || die "client -S $size failed"
	wait "$SPID" || die "server -S $size failed"
	SPID=
	grep -q "source and destination buffers match ($size bytes)" "$TMP/client.out" ||
		die "client -S $size: no match line"
done

"$DRIB" "$TMP/dribble.pcap" >"$TMP/dribble.out" 2>&1 || die "gen_trace_dribble failed"

ts() {
	"$TSHARK" -n -r "$@" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE \
		-o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE 2>>"$TMP/tshark.err"
}

fail=0
total=0
for f in "$TMP"/*.pcap; do
	name=$(basename "$f")
	total=$((total + 1))
	"$DEC" "$f" >"$TMP/ours.txt" 2>&1 || {
		cat "$TMP/ours.txt"
		echo "trace_tshark: $name: our decoder refused the trace"
		fail=$((fail + 1))
		continue
	}
	read -r _ _ req rep fpdus good _ <<EOF
$(grep '^total ' "$TMP/ours.txt" | tr '=' ' ' | awk '{ print $1, $3, $5, $7, $9, $11 }')
EOF
	# tshark: one line per frame.
	ts "$f" -T fields -E separator=/t -E occurrence=a -e frame.number \
		-e iwarp_mpa.key.req -e iwarp_mpa.key.rep -e iwarp_mpa.ulpdulength \
		-e iwarp_rdma.opcode -e _ws.malformed -e ip.checksum.status \
		-e tcp.checksum.status -e tcp.analysis.lost_segment \
		-e tcp.analysis.retransmission -e tcp.analysis.out_of_order \
		-e tcp.analysis.ack_lost_segment >"$TMP/fields.tsv" ||
		{ cat "$TMP/tshark.err"; die "tshark failed on $name"; }
	t_req=$(awk -F'\t' '$2 != ""' "$TMP/fields.tsv" | wc -l)
	t_rep=$(awk -F'\t' '$3 != ""' "$TMP/fields.tsv" | wc -l)
	t_fpdus=$(awk -F'\t' '$4 != "" { n += split($4, a, ",") } END { print n + 0 }' "$TMP/fields.tsv")
	t_bad=$(awk -F'\t' '$6 != "" || ($7 != "" && $7 != "1") || ($8 != "" && $8 != "1") ||
		$9 $10 $11 $12 != ""' "$TMP/fields.tsv" | wc -l)
	ts "$f" -V >"$TMP/detail.txt" || die "tshark -V failed on $name"
	g=$(grep -c 'CRC check: .*Good CRC32' "$TMP/detail.txt")
	b=$(grep -c 'Bad CRC32' "$TMP/detail.txt")
	# FPDUs per opcode: tshark's against ours.
	awk -F'\t' '$5 != "" { n = split($5, a, ","); for (i = 1; i <= n; i++) c[a[i]]++ }
		END { for (k in c) print "fpdu_op", k, c[k] }' "$TMP/fields.tsv" | sort >"$TMP/t_ops.txt"
	grep '^fpdu_op ' "$TMP/ours.txt" | sort >"$TMP/o_ops.txt"
	problems=
	[ "$req" = 1 ] && [ "$rep" = 1 ] || problems="$problems ours:mpa=$req/$rep"
	[ "$t_req" = 1 ] && [ "$t_rep" = 1 ] || problems="$problems tshark:mpa=$t_req/$t_rep"
	[ "$fpdus" -gt 0 ] && [ "$good" = "$fpdus" ] || problems="$problems ours:fpdus=$fpdus,good=$good"
	[ "$t_fpdus" = "$fpdus" ] || problems="$problems tshark:fpdus=$t_fpdus(ours $fpdus)"
	[ "$g" = "$fpdus" ] && [ "$b" = 0 ] || problems="$problems tshark:good=$g,bad=$b"
	[ "$t_bad" = 0 ] || problems="$problems tshark:flagged_frames=$t_bad"
	cmp -s "$TMP/t_ops.txt" "$TMP/o_ops.txt" || problems="$problems opcodes_differ"
	for op in 0x00 0x01 0x02 0x03; do
		grep -q "^fpdu_op $op " "$TMP/t_ops.txt" || problems="$problems no_opcode_$op"
	done
	if [ -n "$problems" ]; then
		echo "trace_tshark: $name: FAIL:$problems"
		echo "  tshark per opcode: $(tr '\n' ' ' <"$TMP/t_ops.txt")"
		echo "  ours per opcode:   $(tr '\n' ' ' <"$TMP/o_ops.txt")"
		awk -F'\t' '$6 != "" || ($7 != "" && $7 != "1") || ($8 != "" && $8 != "1") ||
			$9 $10 $11 $12 != ""' "$TMP/fields.tsv" | head -5
		fail=$((fail + 1))
	else
		echo "trace_tshark: $name: MPA Request+Reply, $fpdus FPDUs, all Good CRC32 (tshark and ours agree)"
	fi
done

[ "$total" = 5 ] || { echo "trace_tshark: FAIL: $total traces, expected 5"; exit 1; }
if [ "$fail" -ne 0 ]; then
	echo "trace_tshark: $fail of $total traces failed"
	exit 1
fi
echo "trace_tshark: $total traces passed"
exit 0
