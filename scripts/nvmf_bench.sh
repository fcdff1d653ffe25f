#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/nvmf_bench.sh [SECONDS]     (from the build directory;
#        make nvmf-bench; NVMF_BENCH_RUNS rounds, NVMF_BENCH_LOOPS loops)
#
# iwarp-nvmf-perf against iwarp-nvmet (64 MiB RAM namespace, the size of
# the baseline's store, made alike: tools/nvmet/ram_map.c) on 127.0.0.1, beside
# the same load through raw TCP sockets with the data inline (the
# NVMe/TCP-shaped baseline of iwarp-nvmf-perf --tcp / --tcp-server), in the
# same run: 4 KiB random read and write at QD 1 and 32, 128 KiB sequential
# read and write at QD 8 with one queue, and 4 KiB random read and write
# at QD 32 on each of two queues, and 128 KiB writes at QD 8 and 32
# again against a second target that takes them in the capsule (-I 131072:
# 128 MiB more receive buffers per loop; the default IOCCSZ is 16 KiB, as
# far as Linux's host uses in-capsule data), and against a third target
# whose loops poll while their own RDMA READs are out (--spin-us 50),
# beside the default target at QD 32; last, 4 KiB random writes at QD 1
# and 128 KiB writes at QD 8 and 32 with both hosts polling instead of
# sleeping when idle (iwarp-nvmf-perf --spin, the baseline's too). The
# targets run NVMF_BENCH_LOOPS loops (default 2): I/O queue q is served
# by loop (q - 1) mod loops. Prints
# IOPS, MB/s, p99, the iWARP/TCP ratio of IOPS, the CPU seconds the
# target's loop threads used during the load (from /proc/PID/task, so the
# machine's other load does not count) and the IOPS per CPU-second of
# those loops together. Each row is NVMF_BENCH_RUNS rounds (default 3) of
# the iWARP run followed by the raw TCP run, printed as median [min-max];
# the ratio is the median of the rounds' own ratios, so that a drift of
# the machine between rounds cancels. MPA CRC is on (the default). A
# benchmark, not a test: figures depend on the machine and its load.
set -u
secs=${1:-3}
runs=${NVMF_BENCH_RUNS:-3}
loops=${NVMF_BENCH_LOOPS:-2}
B=${IW_BUILDDIR:-.}
TGT=$B/tools/iwarp-nvmet
PERF=$B/tools/iwarp-nvmf-perf
TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_nvmfb.XXXXXX") || exit 1
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
"$TGT" -a 127.0.0.1 -p 0 -N ram:64M --loops "$loops" >"$TMP/tgt.out" 2>&1 &
TPID1=$!
"$TGT" -a 127.0.0.1 -p 0 -N ram:64M --loops "$loops" -I 131072 >"$TMP/tgt2.out" 2>&1 &
TPID2=$!
"$TGT" -a 127.0.0.1 -p 0 -N ram:64M --loops "$loops" --spin-us 50 >"$TMP/tgt3.out" 2>&1 &
TPID3=$!
PIDS="$PIDS $TPID1 $TPID2 $TPID3"
"$PERF" --tcp-server -a 127.0.0.1 -p 0 >"$TMP/tcp.out" 2>&1 &
PIDS="$PIDS $!"
port_of() { sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1"; }
# The targets map their RAM namespaces whole before they listen.
i=0
while [ $i -lt 200 ]; do
	NP1=$(port_of "$TMP/tgt.out") NP2=$(port_of "$TMP/tgt2.out") NP3=$(port_of "$TMP/tgt3.out")
	TP=$(port_of "$TMP/tcp.out")
	[ -n "$NP1" ] && [ -n "$NP2" ] && [ -n "$NP3" ] && [ -n "$TP" ] && break
	sleep 0.1
	i=$((i + 1))
done
[ -n "$NP1" ] && [ -n "$NP2" ] && [ -n "$NP3" ] && [ -n "$TP" ] || { echo "nvmf_bench: servers did not start"; exit 1; }
HZ=$(getconf CLK_TCK)
field() { sed -n "s/^RESULT.* $1=\([0-9.]*\).*/\1/p" "$2"; }
# CPU ticks (user + system) of each target loop thread, in loop order.
loop_ticks() {
	for t in /proc/$TPID/task/*; do
		c=$(cat "$t/comm" 2>/dev/null) || continue
		case $c in nvmet-loop-*) ;; *) continue ;; esac
		# Fields after the ")" of comm: state is 3rd, utime 14th, stime 15th.
		echo "${c#nvmet-loop-} $(sed 's/.*) //' "$t/stat" | awk '{ print $12 + $13 }')"
	done | sort -n | awk '{ print $2 }' | tr '\n' ' '
}
# "a b" before, "c d" after: per loop seconds "s0+s1" and their sum.
cpu_delta() {
	awk -v a="$1" -v b="$2" -v hz="$HZ" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); s = ""; t = 0
		for (i = 1; i <= n; i++) { d = (y[i] - x[i]) / hz; t += d; s = s (i > 1 ? "+" : "") sprintf("%.2f", d) }
		printf "%s %.3f", s, t }'
}
# med FILE COLUMN FORMAT: "median [min-max]" of a column of numbers,
# printed with FORMAT (the median of an even count is the mean of the
# middle two); "-" when there are none. mid: the median alone.
med() {
	awk -v c="$2" '$c != "" { print $c }' "$1" | sort -g | awk -v f="$3" '
		{ v[NR] = $1 }
		END {
			if (!NR) { print "-"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			if (NR == 1) { printf f "\n", m; exit }
			printf f " [" f "-" f "]\n", m, v[1], v[NR] }'
}
mid() { med "$1" "$2" "$3" | cut -d' ' -f1; }
# One row: RUNS rounds, each the iWARP load then the same through raw TCP
# (so that both see the machine alike), then medians. A run's line in
# $TMP/rows: iops mbps p99 tcp_iops tcp_mbps tcp_p99 ratio cpu_sum iops_per_core.
row() {
	: >"$TMP/rows"
	r=0
	while [ $r -lt "$runs" ]; do
		before=$(loop_ticks)
		"$PERF" -a 127.0.0.1 -p "$NP" -r "$1" -b "$2" -d "$3" -q "$4" -t "$secs" $HOSTF \
			>"$TMP/i" 2>&1
		cpu=$(cpu_delta "$before" "$(loop_ticks)")
		"$PERF" --tcp -a 127.0.0.1 -p "$TP" -r "$1" -b "$2" -d "$3" -q "$4" -t "$secs" $HOSTF \
			>"$TMP/t" 2>&1
		ios=$(sed -n 's/^RESULT ios=\([0-9]*\).*/\1/p' "$TMP/i")
		echo "$(field iops "$TMP/i") $(field mbps "$TMP/i") $(field p99_us "$TMP/i")" \
			"$(field iops "$TMP/t") $(field mbps "$TMP/t") $(field p99_us "$TMP/t") ${cpu#* }" \
			"${ios:-0}" | awk '{ r = $4 > 0 ? sprintf("%.2f", $1 / $4) : ""
				c = $7 > 0 ? sprintf("%.0f", $8 / $7) : ""
				print $1, $2, $3, $4, $5, $6, r, $7, c }' >>"$TMP/rows"
		r=$((r + 1))
	done
}
printf '%-26s %-24s %7s %7s   %-24s %7s %7s   %-16s %6s %-20s\n' load "iWARP IOPS" "MB/s" \
	"p99 us" "TCP IOPS" "MB/s" "p99 us" ratio "CPU s" "IOPS/core"
# LOAD BS QD QUEUES TARGET (1: default, 2: -I 131072, 3: --spin-us 50)
# [poll: both hosts, iWARP's and the baseline's, poll without sleeping]
for load in "randread 4096 1 1 1" "randread 4096 32 1 1" "randwrite 4096 1 1 1" \
	"randwrite 4096 32 1 1" "read 131072 8 1 1" "write 131072 8 1 1" "write 131072 8 1 2" \
	"randread 4096 32 2 1" "randwrite 4096 32 2 1" "write 131072 8 1 3" \
	"write 131072 32 1 1" "write 131072 32 1 2" "write 131072 32 1 3" \
	"randwrite 4096 1 1 1 poll" "write 131072 8 1 1 poll" "write 131072 32 1 1 poll"; do
	set -- $load
	HOSTF=
	[ "${6:-}" = poll ] && HOSTF=--spin
	eval "TPID=\$TPID$5 NP=\$NP$5"
	row "$@"
	name="$1 $2 qd$3 q$4"
	[ "$5" = 2 ] && name="$name I128K"
	[ "$5" = 3 ] && name="$name spin"
	[ -n "$HOSTF" ] && name="$name poll"
	printf '%-26s %-24s %7s %7s   %-24s %7s %7s   %-16s %6s %-20s\n' "$name" \
		"$(med "$TMP/rows" 1 %.0f)" "$(mid "$TMP/rows" 2 %.1f)" "$(mid "$TMP/rows" 3 %.1f)" \
		"$(med "$TMP/rows" 4 %.0f)" "$(mid "$TMP/rows" 5 %.1f)" "$(mid "$TMP/rows" 6 %.1f)" \
		"$(med "$TMP/rows" 7 %.2f)" "$(mid "$TMP/rows" 8 %.2f)" "$(med "$TMP/rows" 9 %.0f)"
done
echo "(Cells: median [min-max] of $runs rounds, each the iWARP run and then the raw TCP one; ratio:"
echo " the median of the rounds' iWARP/TCP IOPS ratios; CPU s: CPU seconds of the target's loops"
echo " together during the iWARP load; IOPS/core: I/Os per CPU-second of those loops;"
echo " $loops target loops; I128K: the target with -I 131072;"
echo " spin: the target with --spin-us 50, its loops poll while their RDMA READs are out;"
echo " poll: both hosts (iwarp-nvmf-perf and its --tcp baseline) poll and never sleep (--spin);"
echo " load average $(cut -d' ' -f1 /proc/loadavg))"
