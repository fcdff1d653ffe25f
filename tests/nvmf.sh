#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# iwarp-nvmf-perf against iwarp-nvmet over 127.0.0.1 (NVMe over Fabrics,
# RDMA transport, both sides libiwarp), the target with two loops (one
# thread each) unless said otherwise:
#  - data verified at block sizes 512, 4096, 65536 and 131072, queue
#    depths 1 to 32, one and two queues: a sequential fill with a data
#    generation, then random reads checking every block they read, then a
#    random mix checking what it wrote; with in-capsule writes, without
#    them (RDMA READ), and with fast-registered buffers whose keyed SGLs ask
#    for Send with Invalidate;
#  - the discovery controller lists the subsystem and its port;
#  - a subsystem NQN that is not served, and a host NQN not allowed: the
#    host is refused (exit 3) and says why;
#  - tests/nvmf_hostile: malformed capsules, bad SGLs, out-of-range LBAs,
#    wrong NQNs, Connect for a queue that does not exist, the binding's
#    CM rejects, held AERs, Write Zeroes / DSM, a short capsule, a host
#    that stops sending Keep Alive: each gets the right status or a clean
#    disconnect;
#  - a host killed (SIGKILL) with 64 commands in flight: the target goes
#    on serving the next host;
#  - I/O queues spread over the loops: with four queues against --loops 2,
#    queues 1 and 3 are accepted on loop 0, 2 and 4 on loop 1, each serves
#    commands, and the exit summary shows both loops serving two I/O queues;
#    each loop posts two receives per entry of its queues and 32 more;
#  - capacity: against two loops of 256 slots and 32-entry queues, a host
#    asking for 16 I/O queues is granted 6 (what the loops hold) and serves
#    verified I/O on all 6; a second host whose queues would overfill a loop
#    is refused at CM time (no resources) while the first keeps serving, and
#    is served once it has left; a host that skips Number of Queues is
#    refused by Connect beyond the 6; --slots too small for one queue: no start;
#  - the raw-TCP baseline (--tcp against --tcp-server) runs the same shapes;
#  - a file namespace keeps its data across a restart of the target (one
#    loop), its 16 KiB writes in-capsule at the default IOCCSZ (the exit
#    summary counts no write by RDMA READ; the keyed-SGL runs above count
#    some);
#  - SIGTERM stops the target with exit 0.
# Uses the programs of IW_BUILDDIR (set by `make check`; . otherwise).
# Background programs are waited for with limits and killed on exit.
set -u

B=${IW_BUILDDIR:-.}
TGT=$B/tools/iwarp-nvmet
PERF=$B/tools/iwarp-nvmf-perf
HOSTILE=$B/tests/nvmf_hostile
for p in "$TGT" "$PERF" "$HOSTILE"; do
	[ -x "$p" ] || { echo "nvmf.sh: $p not built" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_nvmf.XXXXXX") || exit 1
PIDS=
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

LIMIT=60
TO=
command -v timeout >/dev/null 2>&1 && TO="timeout $LIMIT"
NQN=nqn.2026-11.org.libiwarp:check
HPERF=nqn.2014-08.org.example:perf
HBAD=nqn.2014-08.org.example:hostile

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*"
	for f in "$TMP"/perf.out "$TMP"/tgt.err; do
		[ -s "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
	done
}

# Start a target with the given namespace options on a free port: TPID, PORT.
start_target() {
	: >"$TMP/tgt.out"
	"$TGT" -a 127.0.0.1 -p 0 -n "$NQN" -H "$HPERF" -H "$HBAD" -v --loops 2 "$@" \
		>"$TMP/tgt.out" 2>"$TMP/tgt.err" &
	TPID=$!
	PIDS="$PIDS $TPID"
	i=0
	while [ $i -lt 200 ]; do
		PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/tgt.out")
		[ -n "$PORT" ] && return 0
		kill -0 "$TPID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	echo "nvmf.sh: the target did not start"; cat "$TMP/tgt.err"
	return 1
}

stop_target() {
	kill -TERM "$TPID"
	i=0
	while kill -0 "$TPID" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	wait "$TPID"
	rc=$?
	return $rc
}

# perf NAME ARGS...: one run that must exit 0 with no error and, with -V,
# verify at least one block.
perf() {
	name=$1
	shift
	if $TO "$PERF" -a 127.0.0.1 -p "$PORT" -n "$NQN" --hostnqn "$HPERF" "$@" \
		>"$TMP/perf.out" 2>&1; then
		res=$(grep '^RESULT' "$TMP/perf.out")
		case " $* " in
		*" -V "*)
			echo "$res" | grep -q ' errors=0 bad_data=0 ' &&
				! echo "$res" | grep -q ' verified=0 ' && { ok "$name"; return; } ;;
		*)
			echo "$res" | grep -q ' errors=0 bad_data=0 ' && { ok "$name"; return; } ;;
		esac
	fi
	bad "$name"
}

start_target -N ram:4M -b 512 || exit 1

# Fill (every block written once), then check every block read back.
perf "fill 4 KiB qd 8, generation 7" --fill -b 4096 -d 8 -g 7
perf "random reads 4 KiB qd 8 verify generation 7" -r randread -b 4096 -d 8 -c 2000 -V -g 7
perf "random reads 512 B qd 1 verify generation 7" -r randread -b 512 -d 1 -c 500 -V -g 7
perf "fill 64 KiB qd 4 two queues, generation 9" --fill -b 65536 -d 4 -q 2 -g 9
perf "random reads 64 KiB qd 4 two queues verify" -r randread -b 65536 -d 4 -q 2 -c 300 -V -g 9
perf "randrw 512 B qd 1 verify" -r randrw -b 512 -d 1 -c 3000 -V
perf "randrw 4 KiB qd 32 verify (in-capsule writes)" -r randrw -b 4096 -d 32 -c 6000 -V
perf "randrw 4 KiB qd 16 verify, no in-capsule data (RDMA READ)" -r randrw -b 4096 -d 16 -c 4000 -V --no-inline
perf "randrw 8 KiB qd 8 verify, Send with Invalidate" -r randrw -b 8192 -d 8 -c 3000 -V --invalidate
perf "sequential rw 128 KiB qd 2 verify" -r rw -b 131072 -d 2 -c 400 -V
perf "randrw 4 KiB qd 4 two queues verify" -r randrw -b 4096 -d 4 -q 2 -c 4000 -V
perf "randrw 4 KiB qd 127 verify (a full 128-entry queue)" -r randrw -b 4096 -d 127 -c 8000 -V

# Discovery.
if $TO "$PERF" -a 127.0.0.1 -p "$PORT" --hostnqn "$HPERF" --discover >"$TMP/perf.out" 2>&1 &&
	grep -q "^subnqn:  $NQN\$" "$TMP/perf.out" && grep -q "^trsvcid: $PORT\$" "$TMP/perf.out" &&
	grep -q '^traddr:  127.0.0.1$' "$TMP/perf.out" && grep -q '^trtype:  rdma$' "$TMP/perf.out"; then
	ok "discovery log page lists $NQN at 127.0.0.1:$PORT"
else
	bad "discovery"
fi

# Refusals the host reports and exits 3 for.
$TO "$PERF" -a 127.0.0.1 -p "$PORT" -n nqn.2026-11.org.libiwarp:other --hostnqn "$HPERF" -c 10 \
	>"$TMP/perf.out" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q 'connect invalid parameters' "$TMP/perf.out" &&
	ok "unknown subsystem NQN refused (exit 3)" || bad "unknown subsystem NQN (exit $rc)"
$TO "$PERF" -a 127.0.0.1 -p "$PORT" -n "$NQN" --hostnqn nqn.2014-08.org.example:nobody -c 10 \
	>"$TMP/perf.out" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q 'connect invalid host' "$TMP/perf.out" &&
	ok "host NQN not in the allow-list refused (exit 3)" || bad "host not allowed (exit $rc)"

# The hostile host.
if $TO "$HOSTILE" "$PORT" "$NQN" "$HBAD" >"$TMP/perf.out" 2>&1; then
	ok "hostile host: $(grep -c '^ok:' "$TMP/perf.out") checks"
else
	bad "hostile host"
fi

# A host that vanishes with commands in flight.
"$PERF" -a 127.0.0.1 -p "$PORT" -n "$NQN" --hostnqn "$HPERF" -r randrw -b 4096 -d 32 -q 2 -t 30 \
	>"$TMP/victim.out" 2>&1 &
VPID=$!
PIDS="$PIDS $VPID"
i=0
while ! grep -q 'queue 2: accepted' "$TMP/tgt.err" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.3
kill -9 "$VPID"
wait "$VPID" 2>/dev/null
perf "the next host is served after one vanished mid-I/O" -r randrw -b 4096 -d 8 -c 2000 -V
kill -0 "$TPID" 2>/dev/null && ok "target alive" || bad "target died"

stop_target && ok "SIGTERM: target exits 0" || bad "target exit status on SIGTERM"
# The --no-inline and --invalidate runs fetched their write data by RDMA READ.
grep -q '^iwarp-nvmet: loop .* [1-9][0-9]* writes by RDMA READ, ' "$TMP/tgt.out" &&
	ok "keyed SGL writes were fetched by RDMA READ" || bad "no RDMA READ counted"
# ... straight into the RAM namespace, and reads were sent from it.
grep -q '^iwarp-nvmet: loop .* [1-9][0-9]* in place, ' "$TMP/tgt.out" &&
	ok "RAM namespace data moved in place" || bad "no I/O in place counted"
# ... the Writes fetched by RDMA READ into the slots' buffers first (all
# of them fit the default --write-stage, twice the L2 cache or 2 MiB).
grep -q '^iwarp-nvmet: loop .* in place, [1-9][0-9]* staged, ' "$TMP/tgt.out" &&
	ok "writes by RDMA READ staged in the slots' buffers" || bad "no write staged"

# The same through the slots' buffers (--copy-ram): nothing in place.
start_target -N ram:4M -b 512 --loops 1 --copy-ram || exit 1
perf "--copy-ram: fill 128 KiB qd 4, generation 3" --fill -b 131072 -d 4 -g 3
perf "--copy-ram: random reads 8 KiB qd 8 verify generation 3" -r randread -b 8192 -d 8 \
	-c 1000 -V -g 3
perf "--copy-ram: randrw 4 KiB qd 16 verify, RDMA READ" -r randrw -b 4096 -d 16 -c 2000 -V \
	--no-inline
stop_target || bad "target exit status"
grep -q '^iwarp-nvmet: loop 0: .* [1-9][0-9]* writes by RDMA READ, 0 in place, ' "$TMP/tgt.out" &&
	ok "--copy-ram: writes fetched by RDMA READ, none in place" ||
	{ bad "--copy-ram: I/O in place"; cat "$TMP/tgt.out"; }

# --write-stage 0: Writes by RDMA READ straight into the namespace,
# verified by reading them back.
start_target -N ram:4M -b 512 --loops 1 --write-stage 0 || exit 1
perf "--write-stage 0: fill 128 KiB qd 4, RDMA READ, generation 4" --fill -b 131072 -d 4 -g 4 \
	--no-inline
perf "--write-stage 0: random reads 8 KiB qd 8 verify generation 4" -r randread -b 8192 -d 8 \
	-c 1000 -V -g 4
stop_target || bad "target exit status"
grep -q '^iwarp-nvmet: loop 0: .* [1-9][0-9]* writes by RDMA READ, [1-9][0-9]* in place, 0 staged, ' \
	"$TMP/tgt.out" && ok "--write-stage 0: writes in place, none staged" ||
	{ bad "--write-stage 0: writes staged"; cat "$TMP/tgt.out"; }

# --write-stage 128K: a 64 KiB Write staged while at most two are in
# flight (the first always), in place with 32 in flight. Writes only, so
# "in place" counts Writes.
start_target -N ram:8M -b 512 --loops 1 --write-stage 128K || exit 1
perf "--write-stage 128K: random writes 64 KiB qd 32, RDMA READ" -r randwrite -b 65536 -d 32 \
	-c 3000 --no-inline
stop_target || bad "target exit status"
grep -q '^iwarp-nvmet: loop 0: .* [1-9][0-9]* in place, [1-9][0-9]* staged, ' "$TMP/tgt.out" &&
	ok "--write-stage 128K: some writes staged, the rest in place" ||
	{ bad "--write-stage 128K: bound not kept"; cat "$TMP/tgt.out"; }

# --spin-us: a loop with its own RDMA READs out polls for their answers.
# Writes by RDMA READ (--no-inline) and by Send, verified, and the summary
# counts answers that polling found.
start_target -N ram:4M -b 512 --loops 1 --spin-us 2000 || exit 1
perf "--spin-us: randrw 64 KiB qd 8 verify, RDMA READ" -r randrw -b 65536 -d 8 -c 1500 -V \
	--no-inline
perf "--spin-us: randrw 4 KiB qd 16 verify (in-capsule writes)" -r randrw -b 4096 -d 16 -c 3000 -V
stop_target || bad "target exit status"
grep -q '^iwarp-nvmet: loop 0: .* writes by RDMA READ, .* staged, [1-9][0-9]* answers polled, ' \
	"$TMP/tgt.out" && ok "--spin-us: answers found by polling" ||
	{ bad "--spin-us: no answer polled"; cat "$TMP/tgt.out"; }

# I/O queue q on loop (q - 1) mod 2, each serving, as the verbose log and
# the exit summary say. Two hosts one after the other, five connections
# each, so that taking the loops in turn would put the second host's
# queues elsewhere.
start_target -N ram:4M -b 512 || exit 1
for h in 1 2; do
	perf "host $h: four queues over two loops, randrw 4 KiB qd 4 verify" \
		-r randrw -b 4096 -d 4 -q 4 -c 4000 -V
	i=0
	while [ "$(grep -c ': closed after' "$TMP/tgt.err")" -lt $((5 * h)) ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
done
placed=0
for q in 1 2 3 4; do
	l=$(((q - 1) % 2))
	n=$(sed -n "s/.*queue $q on loop $l: closed after \([1-9][0-9]*\) commands.*/\1/p" \
		"$TMP/tgt.err" | wc -l)
	a=$(grep -c "queue $q: accepted on loop " "$TMP/tgt.err")
	[ "$(grep -c "queue $q: accepted on loop $l " "$TMP/tgt.err")" -eq 2 ] && [ "$a" -eq 2 ] &&
		[ "$n" -eq 2 ] && placed=$((placed + 1))
done
[ $placed -eq 4 ] && ok "I/O queues 1-4 on loops 0,1,0,1 for both hosts, each served commands" ||
	bad "queue placement over loops ($placed of 4 as expected)"
# Each loop posts two receives per entry of its queues and 32 more, not
# all its 1024 slots: the first queue on each loop (admin on 1, queue 1 on 0).
for l in 0 1; do
	grep -m1 "accepted on loop $l " "$TMP/tgt.err" |
		sed -n 's/.*(\([0-9]*\) entries, ORD [0-9]*, \([0-9]*\) receives posted).*/\1 \2/p' |
		{ read -r e p && [ "$p" -eq $((2 * e + 32)) ]; } &&
		ok "loop $l posts 2 receives per queue entry + 32" ||
		bad "receives posted on loop $l: $(grep -m1 "accepted on loop $l " "$TMP/tgt.err")"
done
stop_target || bad "target exit status"
for l in 0 1; do
	grep -q "^iwarp-nvmet: loop $l: [1-9][0-9]* commands, [0-9]* queues (4 I/O), " "$TMP/tgt.out" &&
		ok "exit summary: loop $l served four I/O queues" ||
		{ bad "exit summary of loop $l"; cat "$TMP/tgt.out"; }
done

# Capacity: two loops of 256 slots serve 128 queue entries each, one
# admin queue (32) and three I/O queues of 32 (-Q 32): the target says so,
# grants 6 I/O queues to a host asking for 16 (Number of Queues), and all 6
# serve verified I/O. A host whose queues would overfill a loop held by
# another is refused at CM time (the binding's "no resources") while the
# first keeps serving, and is served once the first has left.
start_target -N ram:4M -b 512 --slots 256 -Q 32 || exit 1
grep -q 'serve 6 I/O queues of 32 entries per controller: granting 6, not 8' "$TMP/tgt.err" &&
	ok "the target says how many I/O queues its loops serve" || bad "capacity notice"
perf "16 queues asked, 6 granted, randrw 4 KiB qd 31 verify" -r randrw -b 4096 -d 31 -q 16 -c 4000 -V
grep -q 'the target grants 6 I/O queues of 16 asked: using 6' "$TMP/perf.out" &&
	grep -q ' queues=6 verify: ' "$TMP/perf.out" && ok "the host uses the 6 queues granted" ||
	bad "queues granted"
# Closed: 7 connections of the run above; host A then fills the loops
# (admin 32 + 3 x 24 on one, 3 x 24 on the other), so that B's admin queue
# or its I/O queue 1 (32 entries, loop 0) cannot fit anywhere; A runs
# until B has been refused, then SIGINT ends its load.
wait_closed() {
	i=0
	while [ "$(grep -c ': closed after' "$TMP/tgt.err")" -lt "$1" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
wait_closed 7
"$PERF" -a 127.0.0.1 -p "$PORT" -n "$NQN" --hostnqn "$HPERF" -r randrw -b 4096 -d 23 -q 6 -t 60 -V \
	>"$TMP/hosta.out" 2>&1 &
APID=$!
PIDS="$PIDS $APID"
i=0
while [ "$(grep -c 'queue 6: accepted' "$TMP/tgt.err")" -lt 2 ] && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
$TO "$PERF" -a 127.0.0.1 -p "$PORT" -n "$NQN" --hostnqn "$HPERF" -r randrw -b 4096 -d 31 -q 1 -c 500 -V \
	>"$TMP/perf.out" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q 'rejected: no resources' "$TMP/perf.out" &&
	grep -q 'connection rejected: no resources' "$TMP/tgt.err" &&
	ok "a host overfilling a loop is refused: CM reject, no resources (exit $rc)" ||
	bad "overfilling host (exit $rc): $(cat "$TMP/perf.out")"
kill -INT "$APID" # ends its load as its time would
wait "$APID"
rc=$?
grep -q ' errors=0 bad_data=0 ' "$TMP/hosta.out" && ! grep -q ' verified=0 ' "$TMP/hosta.out" &&
	[ $rc -eq 0 ] && ok "the host holding the loops kept serving verified I/O" ||
	bad "host A (exit $rc): $(cat "$TMP/hosta.out")"
wait_closed 14
perf "the refused host is served once the loops have room" -r randrw -b 4096 -d 31 -q 1 -c 500 -V
# A host that never sends Number of Queues may still connect only the 6
# I/O queues the loops serve, not the 8 of --queues: queue 7 is refused
# by Connect (invalid parameters, the queue ID), not served by loop 0.
if $TO "$HOSTILE" "$PORT" "$NQN" "$HBAD" --ungranted 6 >"$TMP/perf.out" 2>&1; then
	ok "without Number of Queues: I/O queue 6 served, queue 7 refused by Connect"
else
	bad "I/O queues beyond what the loops serve, without Number of Queues"
fi
stop_target || bad "target exit status"
if $TO "$TGT" -a 127.0.0.1 -p 0 --slots 256 >"$TMP/tgt.out" 2>"$TMP/tgt.err"; then
	bad "--slots 256 with 128-entry queues accepted"
else
	grep -q 'holds no I/O queue of 128 entries beside an admin queue: give at least --slots 320' \
		"$TMP/tgt.err" && ok "--slots too small for --queue-size: refused at start" ||
		bad "--slots too small: $(cat "$TMP/tgt.err")"
fi

# The raw-TCP baseline runs the same load shapes.
"$PERF" --tcp-server -a 127.0.0.1 -p 0 >"$TMP/tcp.out" 2>&1 &
SPID=$!
PIDS="$PIDS $SPID"
i=0
TP=
while [ -z "$TP" ] && [ $i -lt 100 ]; do
	sleep 0.05
	TP=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/tcp.out")
	i=$((i + 1))
done
for load in "randread 4096 32" "randwrite 4096 1" "rw 131072 4"; do
	set -- $load
	if [ -n "$TP" ] && $TO "$PERF" --tcp -a 127.0.0.1 -p "$TP" -r "$1" -b "$2" -d "$3" -c 500 \
		>"$TMP/perf.out" 2>&1 && grep -q '^RESULT ios=5[0-9][0-9] ' "$TMP/perf.out"; then
		ok "raw-TCP baseline $load"
	else
		bad "raw-TCP baseline $load"
	fi
done
kill "$SPID"

# A file namespace keeps what was written across a restart.
start_target -N "$TMP/ns.img" -s 2M -b 4096 --loops 1 || exit 1
perf "file namespace: fill generation 5" --fill -b 16384 -d 4 -g 5
stop_target || bad "target exit status"
# 16 KiB writes came in their capsules (the default IOCCSZ): no RDMA READ.
grep -q '^iwarp-nvmet: loop 0: [1-9][0-9]* commands, .* 0 writes by RDMA READ, 0 in place, ' "$TMP/tgt.out" &&
	ok "16 KiB writes in-capsule at the default size (no RDMA READ)" ||
	{ bad "16 KiB writes were not all in-capsule"; cat "$TMP/tgt.out"; }
start_target -N "$TMP/ns.img" -s 2M -b 4096 --loops 1 || exit 1
perf "file namespace after a restart: every block read checks generation 5" \
	-r randread -b 16384 -d 4 -c 400 -V -g 5
stop_target || bad "target exit status"

echo "nvmf.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
