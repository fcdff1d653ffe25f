#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# make compat-bench: what the drop-in libibverbs/librdmacm cost. Debian's
# ib_write_bw -R and ib_send_lat -R, both ends under iwarp-run, beside the
# native tools/iwarp-perf (which speaks perftest's -R protocol over
# libiwarp's own API), same sizes, iterations and depth, in one run, each
# pair as a server and a client process on 127.0.0.1. Prints one Markdown
# table: bandwidth (BW average, MiB/s: perftest's MB/sec are 2^20 octets)
# with the ratio compat/native, and latency (t_typical, half round trip,
# microseconds) with the difference, against iwarp-perf's client in the
# same mode as the compat libraries (--poll: the thread that polls
# receives, IW_CONTEXT_POLL, as under iwarp-run unless IWARP_POLL=0), and
# beside it iwarp-perf --no-poll (libiwarp's loop thread receives). The
# line above the table gives the CPUs and the load average before and
# after. A benchmark, not a test: nothing is judged; take the figures on a
# quiet machine (the issue's goal is at least 0.95x native bandwidth and
# at most +1 us latency).
# COMPAT_BENCH_BW_SIZES (default "4096 65536 1048576"),
# COMPAT_BENCH_LAT_SIZES ("2 64 4096"), COMPAT_BENCH_BW_ITERS (5000) and
# COMPAT_BENCH_LAT_ITERS (10000).
set -u
B=${IW_BUILDDIR:-.}
. "${IW_SRCDIR:-$(dirname "$0")/..}/tests/compat_lib.sh"
need ib_write_bw ib_send_lat ss python3
PERF=$B/tools/iwarp-perf
[ -x "$PERF" ] || skip "$PERF not built"
BW_SIZES=${COMPAT_BENCH_BW_SIZES:-4096 65536 1048576}
LAT_SIZES=${COMPAT_BENCH_LAT_SIZES:-2 64 4096}
BW_N=${COMPAT_BENCH_BW_ITERS:-5000}
LAT_N=${COMPAT_BENCH_LAT_ITERS:-10000}
OUT=$(mktemp "${TMPDIR:-/tmp}/compat-bench.XXXXXX") || exit 1
trap 'rm -f "$OUT" "$OUT.s" "$OUT.t"' EXIT

# run SERVER-CMD... -- CLIENT-CMD...: run_pair, the client's output in
# $OUT; the client's status.
run() {
	PAIR_TIMEOUT=300 run_pair "$OUT.s" "$OUT" "$@"
	return $crc
}

# perftest's result row for SIZE: column COL.
pt_col() {
	awk -v s="$1" -v c="$2" '$1 == s && $2 ~ /^[0-9]+$/ {v = $c} END {print v == "" ? "-" : v}' "$OUT"
}

# iwarp-perf --json: KEY of its one result.
ip_key() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0][sys.argv[2]])' \
		"$OUT" "$1" 2>/dev/null || echo -
}

ratio() {
	python3 -c 'import sys
a, b, op = sys.argv[1:4]
try:
    a, b = float(a), float(b)
    print("%.2fx" % (a / b) if op == "/" else "%+.2f us" % (a - b))
except ValueError:
    print("-")' "$1" "$2" "$3"
}

# row LABEL SIZE PERFTEST COLUMN TEST KEY OP N: one line of the table.
row() {
	p=$(command -v "$3")
	run "$RUN" "$p" -R -s "$2" -n "$8" -- "$RUN" "$p" -R -s "$2" -n "$8"
	c=$(pt_col "$2" "$4")
	run "$PERF" --server -- "$PERF" --test "$5" -s "$2" -n "$8" --poll --json
	n=$(ip_key "$6")
	run "$PERF" --server -- "$PERF" --test "$5" -s "$2" -n "$8" --no-poll --json
	echo "| $1 | $2 | $c | $n | $(ratio "$c" "$n" "$7") | $(ip_key "$6") |"
}

load() {
	cut -d' ' -f1-3 /proc/loadavg
}

l0=$(load)
{
	echo "| test | octets | under iwarp-run | iwarp-perf --poll | compat vs it | iwarp-perf --no-poll |"
	echo "|---|---:|---:|---:|---:|---:|"
	for s in $BW_SIZES; do
		row "ib_write_bw -R, MiB/s" "$s" ib_write_bw 4 write bw_avg_MiBps / "$BW_N"
	done
	for s in $LAT_SIZES; do
		row "ib_send_lat -R, t_typical us" "$s" ib_send_lat 5 send_lat t_typical_us - "$LAT_N"
	done
} >"$OUT.t"
echo "$(nproc) CPUs, load average before $l0, after $(load)"
echo
cat "$OUT.t"
