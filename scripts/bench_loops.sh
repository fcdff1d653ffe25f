#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/bench_loops.sh [-D SECONDS] [-r RUNS] [-t "send write"]
#        [-s "4096 65536"] [-k "1 2 4"] [--poll | --no-poll] [--single]
#        [--crc on|off] [-l LIST] [-x "MORE CLIENT OPTIONS"] [--sink] [--pin]
#        (from the build directory; `make bench-loops` runs it, with
#        BENCH_LOOPS_ARGS="..." for these options)
#
# Aggregate throughput of a loop group (issue 13): iwarp-perf bandwidth
# tests (-t) at each size (-s) with K QPs per loop (-k), on one loop and
# on two (--loops 1 -q K against --loops 2 -q 2K), server and client as
# separate processes on 127.0.0.1 with the same number of loops. Each
# loop's QPs are driven by an application thread of their own on both
# sides (--threads; --single: one thread for all, as before). --poll
# (the default) makes those threads move the data themselves (libiwarp's
# run-to-completion mode); --no-poll leaves the sending side's receiving
# to its loop threads. -l chains LIST WRs per post on the sender (fewer,
# larger writes: a cheaper sender); -x adds client options (e.g. "-t 512").
#
# --sink: the server is `iwarp-perf --server --sink`, a discard peer (no
# iWARP stack: it answers the MPA exchange and the test's messages over
# raw sockets, grants SEND credits as messages arrive, CRC-checks the
# first 64 messages of each connection and counts the rest with
# recv(MSG_TRUNC), one thread), so that what is measured is the client's
# sending; the client then runs with --pin (loop i and its application
# thread on CPU i: two loops are two cores) and -r 4096 (a credit window
# of 4096 messages), and each run checks that the sink counted every
# message the client sent. --pin alone pins without the sink.
#
# Per row: the message rate (millions per second; the median of RUNS
# runs, then min-max) on one loop and on two and their ratio; then where
# the CPU went, in cores (CPU seconds per second of the run, from each
# process's /proc/self/task/*/stat, iwarp-perf --json's cpu object): the
# client's and the server's application threads and loop threads, and
# the whole machine's busy time (/proc/stat, every process); the CPU time
# per message of each process (client, the sender, + server, the
# receiver; microseconds; 1 / the server's figure is its messages per CPU
# second), on one loop and two; the sender's per thread (application
# threads, then loop threads: "app a,b loop c,d"); and "bound": the most two loops could
# gain over one on two otherwise idle cores at those costs, when one loop
# runs one thread per side (each at most one core) and two loops share
# both cores between the processes: (2 / (s2 + r2)) / min(1 / s1, 1 / r1,
# 2 / (s1 + r1)). The costs hold under load (CPU time, not wall time);
# the rates do not (other processes take their share). A benchmark, not a
# test: run it on a quiet machine (uptime's load below 0.5, printed
# first); progress goes to stderr.
#
# Environment: IW_BUILDDIR (default .), BENCH_SECONDS (2), BENCH_RUNS (5).
set -u
SECS=${BENCH_SECONDS:-2}
RUNS=${BENCH_RUNS:-5}
TESTS="send write"
SIZES="4096 65536"
KS="1 2 4"
POLL=--poll
THREADS=--threads
CRC=on
LIST=1
MORE=
SINK=
PIN=
while [ $# -gt 0 ]; do
	case $1 in
	-D) SECS=$2; shift 2 ;;
	-r) RUNS=$2; shift 2 ;;
	-t) TESTS=$2; shift 2 ;;
	-s) SIZES=$2; shift 2 ;;
	-k) KS=$2; shift 2 ;;
	--poll | --no-poll) POLL=$1; shift ;;
	--single) THREADS=; shift ;;
	--crc) CRC=$2; shift 2 ;;
	-l) LIST=$2; shift 2 ;;
	-x) MORE=$2; shift 2 ;;
	--sink) SINK=--sink PIN=--pin; shift ;;
	--pin) PIN=--pin; shift ;;
	-h | --help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench_loops: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
PERF=${IW_BUILDDIR:-.}/tools/iwarp-perf
[ -x "$PERF" ] || { echo "bench_loops: $PERF not built" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench_loops: needs python3" >&2; exit 1; }

TMP=$(mktemp -d) || exit 1
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$TMP"' EXIT

# A server on a port of the kernel's choice, which it announces on stderr;
# "" if it never does within 10 s (it is then killed).
server() { # loops
	: >"$TMP/srv.err"
	# shellcheck disable=SC2086
	"$PERF" --server $SINK -p 0 --loops "$1" --json >"$TMP/srv.json" 2>"$TMP/srv.err" &
	srv=$!
	w=0
	while [ $w -lt 200 ]; do
		port=$(sed -n 's/^iwarp-perf: listening on port \([0-9][0-9]*\)$/\1/p' "$TMP/srv.err")
		[ -n "$port" ] && return 0
		kill -0 $srv 2>/dev/null || break
		sleep 0.05
		w=$((w + 1))
	done
	kill $srv 2>/dev/null
	port=
}

# Wait for the server at most 20 s after its client ended: a client that
# failed must not leave the benchmark waiting for ever.
reap() {
	w=0
	while kill -0 $srv 2>/dev/null && [ $w -lt 200 ]; do
		sleep 0.1
		w=$((w + 1))
	done
	kill $srv 2>/dev/null && echo "bench_loops: the server outlived its client: killed" >&2
	wait $srv 2>/dev/null
	srv=
}

# One run: "rate cli_app cli_loop srv_app srv_loop machine srv_eff
# per_thread", or dashes (the reason on stderr).
one() { # test size loops qps
	server "$3"
	if [ -z "$port" ]; then
		sed 's/^/bench_loops: server: /' "$TMP/srv.err" >&2
		echo "- - - - - - - -"
		return
	fi
	head -1 /proc/stat >"$TMP/stat0"
	# shellcheck disable=SC2086
	"$PERF" --test "$1" -s "$2" -q "$4" --loops "$3" $POLL $THREADS $PIN ${SINK:+-r 4096} \
		--crc "$CRC" -l "$LIST" $MORE -D "$SECS" \
		--json -p "$port" 127.0.0.1 >"$TMP/cli.json" 2>"$TMP/cli.err" ||
		sed 's/^/bench_loops: client: /' "$TMP/cli.err" >&2
	head -1 /proc/stat >"$TMP/stat1"
	reap
	python3 - "$TMP" <<'EOF'
import json, os, sys
d = sys.argv[1]
def cores(r, secs):
    app = loop = 0.0
    for t in r.get("cpu", {}).get("threads", []):
        if t["name"].startswith("iwarp-loop"):
            loop += t["cpu_s"]
        else:
            app += t["cpu_s"]
    return app / secs, loop / secs
def per_thread(r):
    us = lambda ts: ",".join("%.2f" % (t["cpu_s"] * 1e6 / r["messages"]) for t in ts)
    ts = r["cpu"]["threads"]
    loops = [t for t in ts if t["name"].startswith("iwarp-loop")]
    return "app_%s_loop_%s" % (us([t for t in ts if t not in loops]), us(loops) or "-")
try:
    c = json.load(open(d + "/cli.json"))["results"][0]
    srv = json.load(open(d + "/srv.json"))
    secs = c["seconds"]
    ca, cl = cores(c, secs)
    if "sink" in srv:
        k = srv["sink"]
        if k["messages"] != c["messages"]:
            raise ValueError("the sink counted %d messages of %d" % (k["messages"], c["messages"]))
        s = {"cpu": {"process_s": k["cpu_s"]}}
        sa, sl = k["cpu_s"] / secs, 0.0
    else:
        s = srv["results"][0]
        sa, sl = cores(s, secs)
    st = [list(map(int, open(d + f).read().split()[1:])) for f in ("/stat0", "/stat1")]
    busy = lambda v: sum(v) - v[3] - v[4]
    machine = (busy(st[1]) - busy(st[0])) / ((sum(st[1]) - sum(st[0])) or 1) * os.cpu_count()
    spent = s["cpu"]["process_s"]
    eff = c["messages"] / spent / 1e6 if spent > 0 else 0
    print("%.4f %.2f %.2f %.2f %.2f %.2f %.3f %s" % (c["msg_rate_mpps"], ca, cl, sa, sl, machine, eff,
                                                  per_thread(c)))
except Exception as e:
    print("bench_loops: no figures (%s)" % e, file=sys.stderr)
    print("- - - - - - - -")
EOF
}

# RUNS runs, sorted by message rate: the median line, then the min and
# max rates. (sh has no local variables: the count is "run" because
# server() and reap() count with "w"; sharing one name made this loop
# start over whenever the server announced its port at the first look,
# so `make bench-loops` ran for ever without a row.)
median() {
	run=0
	while [ $run -lt "$RUNS" ]; do
		echo "bench_loops: $1 $2 B, $3 loop(s), -q $4: run $((run + 1)) of $RUNS" >&2
		one "$@"
		run=$((run + 1))
	done | sort -n | awk '{v[NR] = $0; r[NR] = $1}
		END {print v[int((NR + 1) / 2)], r[1] "-" r[NR]}'
}

# "s1+r1 | s2+r2 | bound" from "rate cli_app cli_loop srv_app srv_loop" of
# one loop and of two (see the top).
costs() {
	awk -v a="$1 $2 $3 $4 $5" -v b="$6 $7 $8 $9 ${10}" 'BEGIN {
		split(a, x); split(b, y)
		if (x[1] <= 0 || y[1] <= 0 || x[1] == "-" || y[1] == "-") { print "- | - | -"; exit }
		s1 = (x[2] + x[3]) / x[1]; r1 = (x[4] + x[5]) / x[1]
		s2 = (y[2] + y[3]) / y[1]; r2 = (y[4] + y[5]) / y[1]
		one = 1 / s1; if (1 / r1 < one) one = 1 / r1; if (2 / (s1 + r1) < one) one = 2 / (s1 + r1)
		printf "%.2f+%.2f | %.2f+%.2f | %.2f\n", s1, r1, s2, r2, 2 / (s2 + r2) / one
	}'
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (uptime), $(nproc) CPUs; iwarp-perf $POLL ${THREADS:---single} $PIN ${SINK:+-r 4096 (server --sink)} --crc $CRC -l $LIST $MORE -D $SECS, median of $RUNS runs"
echo
echo "| test | size | QPs/loop | 1 loop Mmsg/s (min-max) | 2 loops Mmsg/s (min-max) | 2/1 | cores 1 loop: client app+loops, server app+loops, machine | cores 2 loops | CPU µs/msg client+server, 1 loop | 2 loops | bound | sender µs/msg per thread, 1 loop | 2 loops |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for t in $TESTS; do
	for s in $SIZES; do
		for k in $KS; do
			# shellcheck disable=SC2046
			set -- $(median "$t" "$s" 1 "$k")
			a=$1 a1="$2+$3, $4+$5, $6" ar=$9 ac="$1 $2 $3 $4 $5" at=$(echo "$8" | tr _ ' ')
			# shellcheck disable=SC2046
			set -- $(median "$t" "$s" 2 $((2 * k)))
			b=$1 b1="$2+$3, $4+$5, $6" br=$9 bc="$1 $2 $3 $4 $5" bt=$(echo "$8" | tr _ ' ')
			r=$(awk -v a="$a" -v b="$b" 'BEGIN {print (a > 0 && b != "-") ? sprintf("%.2f", b / a) : "-"}')
			echo "| $t | $s | $k | $a ($ar) | $b ($br) | $r | $a1 | $b1 | $(costs $ac $bc) | $at | $bt |"
		done
	done
done
