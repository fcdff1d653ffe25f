#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/bench_loops.sh [-D SECONDS] [-r RUNS]
#        (from the build directory; `make bench-loops` runs it)
#
# Aggregate throughput of a loop group (issue 13): iwarp-perf WRITE and
# SEND bandwidth at 4 KiB and 64 KiB with 1, 2 and 4 QPs per loop, on one
# loop and on two (--loops 1 -q K against --loops 2 -q 2K), server and
# client as separate processes on 127.0.0.1, both with the same number of
# loops, waiting as blocking applications do (--no-poll: the loop threads
# receive). Prints one Markdown table: messages per second (millions) and
# MiB/s of each run (the median of RUNS), and "2 loops / 1 loop", the
# message rate of two loops over one at the same QPs per loop. On a 2-core
# machine the two processes share the cores: each loop group competes
# with the peer's, so the ratio is a floor of what separate hosts would
# show. A benchmark, not a test: run it on a quiet machine (uptime's load
# below 0.5).
#
# Environment: IW_BUILDDIR (default .), BENCH_SECONDS (2), BENCH_RUNS (3).
set -u
SECS=${BENCH_SECONDS:-2}
RUNS=${BENCH_RUNS:-3}
while [ $# -gt 0 ]; do
	case $1 in
	-D) SECS=$2; shift 2 ;;
	-r) RUNS=$2; shift 2 ;;
	-h | --help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench_loops: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
PERF=${IW_BUILDDIR:-.}/tools/iwarp-perf
[ -x "$PERF" ] || { echo "bench_loops: $PERF not built" >&2; exit 1; }

TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

# A server on a port of the kernel's choice, which it announces on stderr;
# "" if it never does within 10 s (it is then killed).
server() { # loops
	: >"$TMP/srv"
	"$PERF" --server -p 0 --loops "$1" >/dev/null 2>"$TMP/srv" &
	srv=$!
	i=0
	while [ $i -lt 200 ]; do
		port=$(sed -n 's/^iwarp-perf: listening on port \([0-9][0-9]*\)$/\1/p' "$TMP/srv")
		[ -n "$port" ] && return 0
		kill -0 $srv 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	kill $srv 2>/dev/null
	port=
}

# One run: "mpps MiBps" of a client against a fresh server.
one() { # test size loops qps
	server "$3"
	[ -n "$port" ] || { echo "- -"; return; }
	out=$("$PERF" --test "$1" -s "$2" -q "$4" --loops "$3" --no-poll -D "$SECS" --json \
		-p "$port" 127.0.0.1 2>/dev/null)
	wait $srv
	printf '%s\n' "$out" | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["results"][0]
    print("%.4f %.0f" % (r["msg_rate_mpps"], r["bw_avg_MiBps"]))
except Exception:
    print("- -")'
}

# The median of RUNS runs (by message rate).
median() {
	i=0
	while [ $i -lt "$RUNS" ]; do
		one "$@"
		i=$((i + 1))
	done | sort -n | awk '{v[NR] = $0} END {print v[int((NR + 1) / 2)]}'
}

echo "| test | size | QPs/loop | 1 loop Mmsg/s | MiB/s | 2 loops Mmsg/s | MiB/s | 2 loops / 1 loop |"
echo "|---|---|---|---|---|---|---|---|"
for t in send write; do
	for s in 4096 65536; do
		for k in 1 2 4; do
			set -- $(median $t $s 1 $k)
			a=$1 am=$2
			set -- $(median $t $s 2 $((2 * k)))
			b=$1 bm=$2
			r=$(awk -v a="$a" -v b="$b" 'BEGIN {print (a > 0 && b != "-") ? sprintf("%.2f", b / a) : "-"}')
			echo "| $t | $s | $k | $a | $am | $b | $bm | $r |"
		done
	done
done
