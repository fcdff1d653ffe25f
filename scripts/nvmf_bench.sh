#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/nvmf_bench.sh [SECONDS]     (from the build directory)
#
# iwarp-nvmf-perf against iwarp-nvmet (RAM namespace) on 127.0.0.1, beside
# the same load through raw TCP sockets with the data inline (the
# NVMe/TCP-shaped baseline of iwarp-nvmf-perf --tcp / --tcp-server), in the
# same run: 4 KiB random read and write at QD 1 and 32, 128 KiB sequential
# read and write at QD 8; one queue, one target loop. Prints IOPS, MB/s,
# p99 and the iWARP/TCP ratio of IOPS. MPA CRC is on (the default).
# A benchmark, not a test: figures depend on the machine and its load.
set -u
secs=${1:-3}
B=${IW_BUILDDIR:-.}
TGT=$B/tools/iwarp-nvmet
PERF=$B/tools/iwarp-nvmf-perf
TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_nvmfb.XXXXXX") || exit 1
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
"$TGT" -a 127.0.0.1 -p 0 -N ram:256M >"$TMP/tgt.out" 2>&1 &
PIDS="$PIDS $!"
"$PERF" --tcp-server -a 127.0.0.1 -p 0 >"$TMP/tcp.out" 2>&1 &
PIDS="$PIDS $!"
sleep 0.5
NP=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/tgt.out")
TP=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/tcp.out")
[ -n "$NP" ] && [ -n "$TP" ] || { echo "nvmf_bench: servers did not start"; exit 1; }
field() { sed -n "s/^RESULT.* $1=\([0-9.]*\).*/\1/p" "$2"; }
printf '%-22s %12s %10s %10s   %12s %10s %10s   %6s\n' load "iWARP IOPS" "MB/s" "p99 us" \
	"TCP IOPS" "MB/s" "p99 us" ratio
for load in "randread 4096 1" "randread 4096 32" "randwrite 4096 1" "randwrite 4096 32" \
	"read 131072 8" "write 131072 8"; do
	set -- $load
	"$PERF" -a 127.0.0.1 -p "$NP" -r "$1" -b "$2" -d "$3" -t "$secs" >"$TMP/i" 2>&1
	"$PERF" --tcp -a 127.0.0.1 -p "$TP" -r "$1" -b "$2" -d "$3" -t "$secs" >"$TMP/t" 2>&1
	ii=$(field iops "$TMP/i"); ti=$(field iops "$TMP/t")
	printf '%-22s %12s %10s %10s   %12s %10s %10s   %6s\n' "$1 $2 qd$3" "$ii" \
		"$(field mbps "$TMP/i")" "$(field p99_us "$TMP/i")" "$ti" "$(field mbps "$TMP/t")" \
		"$(field p99_us "$TMP/t")" "$(awk -v a="$ii" -v b="$ti" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
done
