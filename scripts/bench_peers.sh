#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/bench_peers.sh [-r RUNS] [-D SECONDS] [-c SERVER_CPU,CLIENT_CPU]
#        (from the build directory; `make bench-peers` runs it)
#
# iwarp-perf beside the transports users pick instead, on 127.0.0.1, in the
# same run, and one Markdown table of the figures:
#   - iwarp-perf: write_lat, send_lat and read_lat (when iwarp-perf has it)
#     at 2, 64 and 4096 octets, busy-polling (--poll) when iwarp-perf offers
#     it; WRITE, READ and SEND bandwidth at 4 KiB, 64 KiB and 1 MiB with the
#     MPA CRC on, and again with markers on. Each run also times raw TCP
#     with the same sizes, depth and waiting style (iwarp-perf --tcp).
#   - libfabric's tcp provider (libfabric-bin: fi_pingpong; fabtests'
#     fi_rma_pingpong for write_lat when installed), endpoint type msg,
#     provider forced to tcp (-p tcp, FI_PROVIDER=tcp) on lo.
#   - UCX over TCP (ucx-utils: ucx_perftest ucp_put_lat, tag_lat, ucp_get,
#     ucp_put_bw, tag_bw) with UCX_TLS=tcp and UCX_NET_DEVICES=lo, so no
#     shared-memory transport can stand in for the network stack.
#   - sockperf ping-pong (TCP; its smallest message is 14 octets) and
#     iperf3 (one TCP stream) as plain-socket references.
# Nothing is installed: a peer that is missing shows as "-". Client and
# server run as separate processes pinned to two different CPUs (taskset);
# every cell is the median of RUNS runs with the minimum and maximum run
# in brackets. Latency is a half round trip (read_lat: a whole one) in
# microseconds (each run's typical value: median for iwarp-perf, UCX and
# sockperf, mean for
# fi_pingpong, which prints no median); bandwidth is MiB/s. Sizes and depth
# are the same for every tool (latency depth 1; bandwidth depth DEPTH
# outstanding, iperf3 aside: a stream has no depth).
#
# "iwarp / best peer" divides the median by the better of libfabric's and
# UCX's medians (lower latency, higher bandwidth); "iwarp / raw TCP" is the
# median [min-max] of each run's own ratio to iwarp-perf --tcp, which times
# raw TCP right after iWARP, so that the machine's drift between runs
# cancels. Latency ratios below 1 and bandwidth ratios above 1 favour
# iWARP. A benchmark, not a test: run it on a quiet machine.
#
# Environment: IW_BUILDDIR (default .), BENCH_RUNS (5), BENCH_SECONDS (3),
# BENCH_DEPTH (128), BENCH_PORT (first TCP port used, default 21000).
set -u
RUNS=${BENCH_RUNS:-5}
SECS=${BENCH_SECONDS:-3}
DEPTH=${BENCH_DEPTH:-128}
CPUS=0,1
while [ $# -gt 0 ]; do
	case $1 in
	-r) RUNS=$2; shift 2 ;;
	-D) SECS=$2; shift 2 ;;
	-c) CPUS=$2; shift 2 ;;
	-h | --help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench_peers: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
B=${IW_BUILDDIR:-.}
PERF=$B/tools/iwarp-perf
[ -x "$PERF" ] || { echo "bench_peers: $PERF not built (run make first)" >&2; exit 1; }
CPU_S=${CPUS%,*}
CPU_C=${CPUS#*,}
PORT=${BENCH_PORT:-21000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_peers.XXXXXX") || exit 1
SRV=
trap 'stop_server; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

have() { command -v "$1" >/dev/null 2>&1; }

# Pinning needs taskset and two CPUs; without them both ends float.
PIN=no
if have taskset && [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then
	PIN=yes
fi
pin() {
	cpu=$1
	shift
	if [ $PIN = yes ]; then taskset -c "$cpu" "$@"; else "$@"; fi
}

# A client that hangs (its server died) is ended after this many seconds.
LIMIT=$(awk -v s="$SECS" 'BEGIN { printf "%d", s * 4 + 30 }')
client() {
	cpu=$1
	shift
	if have timeout; then pin "$cpu" timeout -k 2 "$LIMIT" "$@"; else pin "$cpu" "$@"; fi
}

# --------------------------------------------------------- servers

# Start a server in the background on a fresh port and wait until it
# listens (ss), so a client never races its start.
serve() {
	# "pin CPU CMD" is expanded here: a shell function sent to the
	# background runs in a subshell, and $! would then be the subshell's
	# pid, not the server's (kill left the server running). taskset
	# execs its command, so the pid is the server's own.
	if [ "$1" = pin ]; then
		cpu=$2
		shift 2
		[ $PIN = yes ] && set -- taskset -c "$cpu" "$@"
	fi
	"$@" >"$TMP/srv.out" 2>&1 &
	SRV=$!
	i=0
	while [ $i -lt 50 ]; do
		if have ss; then
			ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && return 0
		elif [ $i -ge 3 ]; then
			return 0
		fi
		kill -0 "$SRV" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# One-shot servers exit after their client; the others (sockperf) and
# any that hang are ended here, by their own process id.
stop_server() {
	[ -n "$SRV" ] || return 0
	i=0
	while kill -0 "$SRV" 2>/dev/null && [ $i -lt 20 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=
}

# The next port nobody listens on (a stale server must not answer).
next_port() {
	PORT=$((PORT + 1))
	while have ss && ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q .; do
		PORT=$((PORT + 1))
	done
}

# Iterations for tools that count instead of timing: about SECS seconds at
# the 20 000 round trips per second that loopback latency allows.
lat_iters() { awk -v s="$SECS" 'BEGIN { n = int(s * 20000); print n < 100 ? 100 : n }'; }
bw_iters() {
	awk -v s="$SECS" -v b="$1" 'BEGIN { n = int(s * 2e9 / b); print n < 200 ? 200 : n }'
}

# --------------------------------------------------------- one run each

# sockperf and iperf3 take whole seconds.
whole_secs() { awk -v s="$SECS" 'BEGIN { n = int(s + 0.999); print n < 1 ? 1 : n }'; }

# iwarp-perf TEST SIZE [options]: the iWARP figure into iw.v, the raw TCP
# figure of the same run into tcp.v.
run_iwarp() {
	t=$1 s=$2
	shift 2
	: >"$TMP/iw.v"
	: >"$TMP/tcp.v"
	next_port
	serve pin "$CPU_S" "$PERF" --server -p "$PORT" || { stop_server; return; }
	client "$CPU_C" "$PERF" --test "$t" -s "$s" -D "$SECS" --tcp --json "$@" -p "$PORT" \
		127.0.0.1 >"$TMP/iw.json" 2>"$TMP/iw.err"
	stop_server
	case $t in
	*_lat) k=t_typical_us ;;
	*) k=bw_avg_MiBps ;;
	esac
	sed -n "s/.*\"$k\":\([0-9.]*\).*/\1/p" "$TMP/iw.json" >"$TMP/iw.v"
	sed -n "s/.*\"tcp_$k\":\([0-9.]*\).*/\1/p" "$TMP/iw.json" >"$TMP/tcp.v"
}

# fi_pingpong (or fi_rma_pingpong) over the tcp provider's msg endpoints.
run_fabric() {
	tool=$1 fs=$2
	shift 2
	next_port
	n=$(lat_iters)
	export FI_PROVIDER=tcp FI_TCP_IFACE=lo
	serve pin "$CPU_S" "$tool" -p tcp -e msg "$@" -S "$fs" -I "$n" -B "$PORT" || {
		stop_server
		return
	}
	client "$CPU_C" "$tool" -p tcp -e msg "$@" -S "$fs" -I "$n" -P "$PORT" 127.0.0.1 \
		>"$TMP/fi.out" 2>&1
	stop_server
	unset FI_PROVIDER FI_TCP_IFACE
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec (sizes as "4k")
	awk 'h && NF >= 8 { v = $7 } $1 == "bytes" { h = 1 } END { if (v != "") print v }' "$TMP/fi.out"
}

# ucx_perftest TEST SIZE KIND [options]: KIND lat prints the run's median
# latency, bw its average bandwidth (MiB/s).
run_ucx() {
	ut=$1 us=$2 uk=$3
	shift 3
	next_port
	export UCX_TLS=tcp UCX_NET_DEVICES=lo
	if [ "$uk" = lat ]; then n=$(lat_iters); else n=$(bw_iters "$us"); fi
	serve pin "$CPU_S" ucx_perftest -p "$PORT" || { stop_server; return; }
	client "$CPU_C" ucx_perftest 127.0.0.1 -p "$PORT" -t "$ut" -s "$us" -n "$n" \
		-w $((n / 10 + 1)) -f -v "$@" >"$TMP/ucx.out" 2>&1
	stop_server
	unset UCX_TLS UCX_NET_DEVICES
	# iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,...
	col=2
	[ "$uk" = bw ] && col=5
	awk -F, -v c=$col '/^ *[0-9]+,/ { v = $c } END { if (v != "") print v }' "$TMP/ucx.out"
}

run_sockperf() {
	m=$1
	[ "$m" -lt 14 ] && m=14
	next_port
	serve pin "$CPU_S" sockperf server -i 127.0.0.1 -p "$PORT" --tcp || { stop_server; return; }
	client "$CPU_C" sockperf ping-pong -i 127.0.0.1 -p "$PORT" --tcp -m "$m" -t "$(whole_secs)" \
		>"$TMP/sp.out" 2>&1
	kill "$SRV" 2>/dev/null
	stop_server
	sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' "$TMP/sp.out" | tail -n 1
}

run_iperf() {
	next_port
	serve pin "$CPU_S" iperf3 -s -1 -B 127.0.0.1 -p "$PORT" || { stop_server; return; }
	client "$CPU_C" iperf3 -c 127.0.0.1 -p "$PORT" -l "$1" -t "$(whole_secs)" -J >"$TMP/ip.json" 2>&1
	stop_server
	tr -d ' \n\t' <"$TMP/ip.json" |
		sed -n 's/.*"sum_received":{[^}]*"bits_per_second":\([0-9.eE+]*\).*/\1/p' |
		awk '{ printf "%.2f\n", $1 / 8 / 1048576 }'
}

# --------------------------------------------------------- statistics

# measure SERIES COMMAND...: one run of a peer, its figure (if any)
# appended to the series. No command substitution: the port counter and
# the server's process id must stay in this shell.
measure() {
	series=$1
	shift
	"$@" >"$TMP/v"
	keep "$series" "$(cat "$TMP/v")"
}

# Append a value (if any) to a series file.
keep() {
	[ -n "$2" ] && echo "$2" >>"$TMP/$1"
	return 0
}

# "median [min-max]" of a series, or "-" when no run produced a number;
# FORMAT (default %.4g) prints each number (ratios: %.2f).
cell() {
	[ -s "$TMP/$1" ] || { echo "-"; return; }
	sort -g "$TMP/$1" | awk -v f="${2:-%.4g}" '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (NR == 1) printf f, m
		else printf f " [" f "-" f "]", m, v[1], v[NR] }'
}

median() {
	[ -s "$TMP/$1" ] || return 0
	sort -g "$TMP/$1" | awk '{ v[NR] = $1 } END {
		print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B: A/B with two decimals, or "-".
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else print "-" }'
}

# The better of two medians: the lower for latency, the higher otherwise.
best() {
	awk -v a="$1" -v b="$2" -v k="$3" 'BEGIN {
		if (a == "") { print b; exit } if (b == "") { print a; exit }
		if (k == "lat") print (a < b ? a : b); else print (a > b ? a : b) }'
}

# --------------------------------------------------------- rows

HELP=$("$PERF" --help 2>&1)
POLL=
case $HELP in *--poll*) POLL=--poll ;; esac
TESTS_LAT="write_lat send_lat"
case $HELP in *read_lat*) TESTS_LAT="$TESTS_LAT read_lat" ;; esac
FI_RMA=
have fi_rma_pingpong && FI_RMA=fi_rma_pingpong

ROWS=$TMP/rows
: >"$ROWS"

# row LABEL KIND SIZE: the runs of one table row, all tools interleaved in
# each run so that a change of load during the benchmark hits every column.
row() {
	label=$1 kind=$2 s=$3 t=$4
	shift 4
	rm -f "$TMP"/s.*
	r=1
	while [ "$r" -le "$RUNS" ]; do
		printf 'bench_peers: %s %s run %s/%s\n' "$label" "$s" "$r" "$RUNS" >&2
		run_iwarp "$t" "$s" "$@"
		keep s.iw "$(cat "$TMP/iw.v")"
		keep s.tcp "$(cat "$TMP/tcp.v")"
		# The run's own ratio: iwarp-perf --tcp times raw TCP right
		# after iWARP, so a drift of the machine between runs cancels.
		keep s.rt "$(ratio "$(cat "$TMP/iw.v")" "$(cat "$TMP/tcp.v")" | grep -v '^-$')"
		peers_of "$t" "$s"
		r=$((r + 1))
	done
	iw=$(median s.iw)
	fi=$(median s.fi)
	ucx=$(median s.ucx)
	bp=$(best "$fi" "$ucx" "$kind")
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$s" \
		"$(cell s.iw)" "$(cell s.tcp)" "$(cell s.fi)" "$(cell s.ucx)" "$(cell s.ref)" \
		"$(ratio "$iw" "$bp")" "$(cell s.rt %.2f)" >>"$ROWS"
}

# The peers' counterpart of one iwarp-perf test, one run each.
peers_of() {
	pt=$1 s=$2
	case $pt in
	write_lat)
		if [ -n "$FI_RMA" ]; then
			measure s.fi run_fabric "$FI_RMA" "$s" -o write
		elif have fi_pingpong; then
			measure s.fi run_fabric fi_pingpong "$s"
		fi
		have ucx_perftest && measure s.ucx run_ucx ucp_put_lat "$s" lat ;;
	send_lat)
		have fi_pingpong && measure s.fi run_fabric fi_pingpong "$s"
		have ucx_perftest && measure s.ucx run_ucx tag_lat "$s" lat ;;
	read_lat)
		have ucx_perftest && measure s.ucx run_ucx ucp_get "$s" lat ;;
	write)
		have ucx_perftest && measure s.ucx run_ucx ucp_put_bw "$s" bw -O "$DEPTH" ;;
	send)
		have ucx_perftest && measure s.ucx run_ucx tag_bw "$s" bw -O "$DEPTH" ;;
	read)
		have ucx_perftest && measure s.ucx run_ucx ucp_get "$s" bw -O "$DEPTH" ;;
	esac
	case $pt in
	*_lat) have sockperf && measure s.ref run_sockperf "$s" ;;
	*) have iperf3 && measure s.ref run_iperf "$s" ;;
	esac
	return 0
}

# read_lat is a whole round trip (a Read is one, as ib_read_lat and
# ucx_perftest's ucp_get report it); its raw TCP column is a 16-octet
# request answered with SIZE octets (iwarp-perf --tcp).
for t in $TESTS_LAT; do
	label="$t (us)"
	[ "$t" = read_lat ] && label="read_lat (us, round trip)"
	for s in 2 64 4096; do
		row "$label" lat "$s" "$t" $POLL
	done
done
for mk in "" --markers; do
	for t in write read send; do
		for s in 4096 65536 1048576; do
			label="$t (MiB/s)"
			[ -n "$mk" ] && label="$t markers (MiB/s)"
			row "$label" bw "$s" "$t" -t "$DEPTH" $mk
		done
	done
done

# --------------------------------------------------------- the table

ver() { "$@" 2>&1 | head -n 1 | tr -d '\r'; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo "Loopback (127.0.0.1), $(date -u +%Y-%m-%d), $(uname -sr), ${cpu:-unknown CPU}, $(nproc) CPUs;"
if [ $PIN = yes ]; then
	echo "server on CPU $CPU_S, client on CPU $CPU_C; $RUNS runs of about $SECS s per cell."
else
	echo "processes not pinned (no taskset or one CPU); $RUNS runs of about $SECS s per cell."
fi
echo "Command: BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_DEPTH=$DEPTH make bench-peers"
echo "iwarp-perf latency: ${POLL:-blocking (no --poll in this build)}, depth 1; bandwidth: depth $DEPTH, CRC on."
printf 'Peers: libfabric %s; UCX %s; sockperf %s; iperf3 %s.\n' \
	"$(have fi_info && ver fi_info --version | sed 's/.*: *//' || echo -)" \
	"$(have ucx_info && ver ucx_info -v | sed 's/.*[Vv]ersion[= ]*\([^ ]*\).*/\1/' || echo -)" \
	"$(have sockperf && ver sockperf --version | sed 's/.*version //' || echo -)" \
	"$(have iperf3 && ver iperf3 --version | sed 's/^iperf //' || echo -)"
echo
echo "| test | octets | iwarp-perf | raw TCP (iwarp-perf --tcp) | libfabric tcp | UCX tcp | sockperf / iperf3 | iwarp / best peer | iwarp / raw TCP |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
cat "$ROWS"
echo
echo "Cells: median [min-max] of the runs. Latency: half round trip (read_lat: whole), us (lower is better);"
echo "bandwidth: MiB/s (higher is better). Best peer: the better of libfabric and UCX."
echo "iwarp / best peer: ratio of the medians; iwarp / raw TCP: median [min-max] of each run's own"
echo "ratio (iwarp-perf --tcp times raw TCP right after iWARP in the same run)."
