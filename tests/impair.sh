#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# iWARP over an impaired link (issue 15, "Network impairments"): two
# network namespaces made here, joined by tests/netem/iw_netem (TUN devices
# and a userspace forwarder: the kernels we run on have no sch_netem), one
# impairment profile at a time:
#   loss 2 %, reordering 25 %, duplication 1 %, delay 5 ms +- 2 ms jitter,
#   a 40 Mbit/s rate limit, MTU 1280, MTU 576.
# For each profile, in both directions (server in B, client in A, then the
# other way round), CRC on, markers off and on:
#   - iwarp-ping -V: every byte READ and WRITTEN back is compared (exit 3
#     on a mismatch);
#   - iwarp-perf --tcp: a WRITE, READ or SEND bandwidth run (all data under
#     the MPA CRC) with raw TCP timed over the same link beside it.
# Every step runs under timeout(1) (a hang fails), exits 0, and no output
# names a TERMINATE. The forwarder's counters show the impairment acted.
# At the end a table: profile, iWARP and raw TCP MB/s (client A -> B WRITE).
#
# IMPAIR_FORM=short (make check): 64 KiB pings, fewer iterations, markers
# on only in one direction per profile. IMPAIR_FORM=long (make impair):
# every combination, larger transfers. IMPAIR_SEED=N replays a run's
# forwarding decisions (default: a fixed seed).
#
# Needs root, /dev/net/tun and ip(8); otherwise SKIP (exit 77).
set -u

B=${IW_BUILDDIR:-.}
PING=$B/tools/iwarp-ping
PERF=$B/tools/iwarp-perf
NETEM=$B/tests/netem/iw_netem
FORM=${IMPAIR_FORM:-short}
SEED=${IMPAIR_SEED:-15}

skip() { echo "impair: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces and TUN devices)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v ip >/dev/null 2>&1 || skip "no ip(8) (iproute2)"
command -v timeout >/dev/null 2>&1 || skip "no timeout(1)"
for p in "$PING" "$PERF" "$NETEM"; do
	[ -x "$p" ] || { echo "impair: $p not built" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_impair.XXXXXX") || exit 1
# Unique per run: parallel runs never share a namespace.
TAG=iwimp-$$-$(basename "$TMP" | sed 's/.*\.//')
NSA=$TAG-a
NSB=$TAG-b
ADDR_A=10.213.90.1
ADDR_B=10.213.90.2
PIDS=
NETEM_PID=

cleanup() {
	for p in $PIDS $NETEM_PID; do kill "$p" 2>/dev/null; done
	for p in $PIDS $NETEM_PID; do wait "$p" 2>/dev/null; done
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$NSA" || skip "cannot create a network namespace"
ip netns add "$NSB" || skip "cannot create a network namespace"
ip -n "$NSA" link set lo up
ip -n "$NSB" link set lo up

if [ "$FORM" = long ]; then
	PING_SIZES="65536 1048576"
	PING_COUNT=10
	PERF_N=400
	MARKERS="off on"
else
	PING_SIZES=65536
	PING_COUNT=5
	PERF_N=100
	MARKERS=
fi
STEP_LIMIT=60

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*"
	for f in "$TMP"/server.out "$TMP"/client.out "$TMP"/netem.out; do
		[ -s "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
	done
}

# Wait (10 s at most) for a line matching $2 in $1, written by process $3.
wait_for() {
	i=0
	while [ $i -lt 200 ]; do
		grep -q "$2" "$1" && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# Start the forwarder with a profile's options; wait for "ready".
link_up() {
	: >"$TMP/netem.out"
	"$NETEM" --ns-a "$NSA" --ns-b "$NSB" --addr-a $ADDR_A --addr-b $ADDR_B \
		--seed "$SEED" --duration 600 "$@" >"$TMP/netem.out" 2>&1 &
	NETEM_PID=$!
	wait_for "$TMP/netem.out" '^ready' "$NETEM_PID"
}

link_down() {
	kill "$NETEM_PID" 2>/dev/null
	wait "$NETEM_PID" 2>/dev/null
	NETEM_PID=
}

# serve NS PATTERN COMMAND...: a server in NS (SPID), up when its output
# has PATTERN; the client's output file emptied.
serve() {
	ns=$1
	pat=$2
	shift 2
	: >"$TMP/server.out"
	: >"$TMP/client.out"
	ip netns exec "$ns" timeout $STEP_LIMIT "$@" >"$TMP/server.out" 2>&1 &
	SPID=$!
	PIDS="$SPID"
	wait_for "$TMP/server.out" "$pat" "$SPID"
}

# Neither side's output names a TERMINATE.
no_term() { ! grep -qi 'terminate' "$TMP/server.out" "$TMP/client.out"; }

finish_server() {
	i=0
	while kill -0 "$SPID" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill "$SPID" 2>/dev/null
	wait "$SPID"
}

# ping SERVER_NS SERVER_ADDR CLIENT_NS SIZE MARKERS(on|off) LABEL
ping_step() {
	m=
	[ "$5" = on ] && m=--markers
	if ! serve "$1" "listening on" "$PING" -s -d -a "$2" -p 7174 -S "$4" $m; then
		bad "$6: ping server did not start"
		return
	fi
	ip netns exec "$3" timeout $STEP_LIMIT "$PING" -c -V -a "$2" -p 7174 -C $PING_COUNT \
		-S "$4" $m >"$TMP/client.out" 2>&1
	rc=$?
	finish_server
	src=$?
	PIDS=
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && no_term; then
		ok "$6: iwarp-ping -V -S $4 x$PING_COUNT, markers $5"
	else
		bad "$6: iwarp-ping -S $4 markers $5: client exit $rc, server exit $src"
	fi
}

# perf SERVER_NS SERVER_ADDR CLIENT_NS TEST MARKERS LABEL
perf_step() {
	m=
	[ "$5" = on ] && m=--markers
	if ! serve "$1" "listening on port" "$PERF" --server -p 18515 --timeout 20; then
		bad "$6: perf server did not start"
		return
	fi
	ip netns exec "$3" timeout $STEP_LIMIT "$PERF" --test "$4" -s 65536 -n $PERF_N \
		--tcp --crc on $m --timeout 20 "$2" >"$TMP/client.out" 2>&1
	rc=$?
	finish_server
	src=$?
	PIDS=
	row=$(grep -E '^ 65536 ' "$TMP/client.out" | head -n 1)
	iw=$(echo "$row" | awk '{print $6}')
	tcp=$(echo "$row" | awk '{print $8}')
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && no_term && [ -n "$iw" ] && [ -n "$tcp" ]; then
		ok "$6: iwarp-perf $4 markers $5: iWARP $iw MB/s, TCP $tcp MB/s"
		echo "$PROFILE ${6#* } $4 $5 $iw $tcp" >>"$TMP/figures"
	else
		bad "$6: iwarp-perf $4 markers $5: client exit $rc, server exit $src"
	fi
}

# Did the forwarder do what the profile asks? $1: counter name (or "").
counters_ok() {
	[ -z "$1" ] && return 0
	n=$(grep -o "$1 [0-9]*" "$TMP/netem.out" | awk '{s += $2} END {print s + 0}')
	[ "$n" -gt 0 ]
}

# profile NAME COUNTER NETEM_OPTIONS...
profile() {
	PROFILE=$1
	want=$2
	shift 2
	MTU=
	[ "${1:-}" = --mtu ] && MTU=$2
	if ! link_up "$@"; then
		bad "$PROFILE: the forwarder did not start"
		return
	fi
	# Markers off A->B, on B->A; the long form does both ways each.
	for size in $PING_SIZES; do
		for mk in ${MARKERS:-off}; do
			ping_step "$NSB" $ADDR_B "$NSA" "$size" "$mk" "$PROFILE A->B"
		done
		for mk in ${MARKERS:-on}; do
			ping_step "$NSA" $ADDR_A "$NSB" "$size" "$mk" "$PROFILE B->A"
		done
	done
	perf_step "$NSB" $ADDR_B "$NSA" write off "$PROFILE A->B"
	perf_step "$NSA" $ADDR_A "$NSB" read on "$PROFILE B->A"
	if [ "$FORM" = long ]; then
		perf_step "$NSB" $ADDR_B "$NSA" send on "$PROFILE A->B"
		perf_step "$NSA" $ADDR_A "$NSB" write on "$PROFILE B->A"
		perf_step "$NSB" $ADDR_B "$NSA" read off "$PROFILE A->B"
		perf_step "$NSA" $ADDR_A "$NSB" send off "$PROFILE B->A"
	fi
	if [ -n "$MTU" ]; then
		if ip -n "$NSA" link show iwn0 | grep -q "mtu $MTU " &&
			ip -n "$NSB" link show iwn0 | grep -q "mtu $MTU "; then
			ok "$PROFILE: both ends have MTU $MTU"
		else
			bad "$PROFILE: the devices do not have MTU $MTU"
		fi
	fi
	link_down
	grep '^iw_netem:' "$TMP/netem.out" | sed "s/^/  $PROFILE /"
	if counters_ok "$want"; then
		ok "$PROFILE: the forwarder's counters show it ($want)"
	else
		bad "$PROFILE: no packet $want: the impairment did not act"
	fi
}

start=$(date +%s)
: >"$TMP/figures"
profile loss-2% dropped --loss 2
profile reorder-25% reordered --reorder 25
profile dup-1% duplicated --dup 1
profile delay-5ms-jitter-2ms "" --delay 5 --jitter 2
profile rate-40Mbit "" --rate 40
profile mtu-1280 "" --mtu 1280
profile mtu-576 "" --mtu 576
end=$(date +%s)

echo
echo "iWARP (CRC on) beside raw TCP over the same impaired link, 64 KiB messages,"
echo "$PERF_N per run, seed $SEED, form $FORM ($((end - start)) s):"
printf '%-22s %-7s %-6s %-8s %12s %12s\n' profile dir test markers "iWARP MB/s" "TCP MB/s"
while read -r prof dir t mk iw tcp; do
	printf '%-22s %-7s %-6s %-8s %12s %12s\n' "$prof" "$dir" "$t" "$mk" "$iw" "$tcp"
done <"$TMP/figures"
echo "impair: $pass passed, $fail failed"
[ $fail -eq 0 ]
