#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/nvmf_bench.sh [SECONDS]     (from the build directory)
#
# iwarp-nvmf-perf against iwarp-nvmet (64 MiB RAM namespace, the size of
# the baseline's store, made alike: tools/nvmet/ram_map.c) on 127.0.0.1, beside
# the same load through raw TCP sockets with the data inline (the
# NVMe/TCP-shaped baseline of iwarp-nvmf-perf --tcp / --tcp-server), in the
# same run: 4 KiB random read and write at QD 1 and 32, 128 KiB sequential
# read and write at QD 8 with one queue, and 4 KiB random read and write
# at QD 32 on each of two queues, and 128 KiB writes again against a
# second target that takes them in the capsule (-I 131072: 128 MiB more
# receive buffers per loop; the default IOCCSZ is 16 KiB, as far as Linux's
# host uses in-capsule data). The targets run NVMF_BENCH_LOOPS loops
# (default 2): I/O queue q is served by loop (q - 1) mod loops. Prints
# IOPS, MB/s, p99, the iWARP/TCP ratio of IOPS, and per target core: the
# CPU seconds each target loop thread used during the load (from
# /proc/PID/task, so the machine's other load does not count) and the
# IOPS per CPU-second of the target's loops together. MPA CRC is on (the
# default). A benchmark, not a test: figures depend on the machine and its
# load.
set -u
secs=${1:-3}
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
PIDS="$PIDS $TPID1 $TPID2"
"$PERF" --tcp-server -a 127.0.0.1 -p 0 >"$TMP/tcp.out" 2>&1 &
PIDS="$PIDS $!"
port_of() { sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1"; }
# The targets map their RAM namespaces whole before they listen.
i=0
while [ $i -lt 200 ]; do
	NP1=$(port_of "$TMP/tgt.out") NP2=$(port_of "$TMP/tgt2.out") TP=$(port_of "$TMP/tcp.out")
	[ -n "$NP1" ] && [ -n "$NP2" ] && [ -n "$TP" ] && break
	sleep 0.1
	i=$((i + 1))
done
[ -n "$NP1" ] && [ -n "$NP2" ] && [ -n "$TP" ] || { echo "nvmf_bench: servers did not start"; exit 1; }
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
printf '%-24s %10s %8s %8s   %10s %8s %8s   %5s   %-12s %10s\n' load "iWARP IOPS" "MB/s" "p99 us" \
	"TCP IOPS" "MB/s" "p99 us" ratio "tgt CPU s" "IOPS/core"
# LOAD BS QD QUEUES TARGET (1: default, 2: -I 131072)
for load in "randread 4096 1 1 1" "randread 4096 32 1 1" "randwrite 4096 1 1 1" \
	"randwrite 4096 32 1 1" "read 131072 8 1 1" "write 131072 8 1 1" "write 131072 8 1 2" \
	"randread 4096 32 2 1" "randwrite 4096 32 2 1"; do
	set -- $load
	eval "TPID=\$TPID$5 NP=\$NP$5"
	before=$(loop_ticks)
	"$PERF" -a 127.0.0.1 -p "$NP" -r "$1" -b "$2" -d "$3" -q "$4" -t "$secs" >"$TMP/i" 2>&1
	set -- $1 $2 $3 $4 $5 $(cpu_delta "$before" "$(loop_ticks)")
	"$PERF" --tcp -a 127.0.0.1 -p "$TP" -r "$1" -b "$2" -d "$3" -q "$4" -t "$secs" >"$TMP/t" 2>&1
	ii=$(field iops "$TMP/i"); ti=$(field iops "$TMP/t")
	ios=$(sed -n 's/^RESULT ios=\([0-9]*\).*/\1/p' "$TMP/i")
	name="$1 $2 qd$3 q$4"
	[ "$5" = 2 ] && name="$name I128K"
	printf '%-24s %10s %8s %8s   %10s %8s %8s   %5s   %-12s %10s\n' "$name" "$ii" \
		"$(field mbps "$TMP/i")" "$(field p99_us "$TMP/i")" "$ti" "$(field mbps "$TMP/t")" \
		"$(field p99_us "$TMP/t")" \
		"$(awk -v a="$ii" -v b="$ti" 'BEGIN { if (b > 0) printf "%.2f", a / b }')" "$6" \
		"$(awk -v n="${ios:-0}" -v c="$7" 'BEGIN { if (c > 0) printf "%.0f", n / c }')"
done
echo "(tgt CPU s: CPU seconds of target loops 0+1+... during the iWARP load; IOPS/core: I/Os per"
echo " CPU-second of those loops together; $loops target loops; I128K: the target with -I 131072;"
echo " load average $(cut -d' ' -f1 /proc/loadavg))"
