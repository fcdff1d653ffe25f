#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Debian's perftest, unmodified, over 127.0.0.1 with -R (rdma_cm):
#  - ib_write_bw, ib_read_bw and ib_send_bw, both ends under iwarp-run,
#    over perftest's own size sweep (-a: 2, 4, ... 8388608 octets), 5
#    iterations each; ib_write_lat, ib_read_lat and ib_send_lat at 64 and
#    65536 octets, 50 iterations (each end spins on its CQ, which on a
#    loaded 2-core machine leaves libiwarp's loop thread little time: a
#    sweep to 8 MiB takes minutes there);
#  - crossed with the native tools/iwarp-perf at 4096 octets: write, read
#    and send bandwidth in each role (perftest client under iwarp-run
#    against iwarp-perf --server, iwarp-perf client against a perftest
#    server under iwarp-run), write_lat and send_lat one role each.
# make check runs a quick subset (ib_write_bw -a, ib_read_bw -a,
# ib_send_lat -s 64, iwarp-perf crossed with ib_write_bw both roles); the
# whole matrix with COMPAT_PERFTEST_FULL=1 (minutes on a loaded machine).
# A pair passes when both ends exit 0 and the client printed its result row
# for the last size (no figure is judged: the machine is shared). Most of
# the time is perftest's own (a 1 s sleep and its clock calibration).
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need ib_write_bw ss python3
PERF=$B/tools/iwarp-perf
[ -x "$PERF" ] || skip "$PERF not built"

SLOG=$B/compat_perftest_s.log
CLOG=$B/compat_perftest_c.log
fail=0

# pair DESC SIZE SERVER-CMD... -- CLIENT-CMD...: the client gets the port
# and 127.0.0.1 appended, the server the port.
pair() {
	desc=$1 size=$2
	shift 2
	port=$(free_port)
	srv=""
	while [ "$1" != "--" ]; do
		srv="$srv $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	$srv -p "$port" >"$SLOG" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		kill -9 $spid 2>/dev/null
		echo "FAIL: $desc: the server did not listen"
		sed 's/^/  server: /' "$SLOG" | tail -5
		fail=1
		return
	fi
	timeout 60 "$@" -p "$port" 127.0.0.1 >"$CLOG" 2>&1
	crc=$?
	wait_pid $spid 30
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! grep -Eq "^ *$size +[0-9]" "$CLOG"; then
		echo "FAIL: $desc: client exit $crc, server exit $src"
		sed 's/^/  client: /' "$CLOG" | tail -8
		sed 's/^/  server: /' "$SLOG" | tail -8
		fail=1
	else
		echo "ok: $desc"
	fi
}

for tool in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
	command -v $tool >/dev/null || skip "$tool not installed (scripts/deps.sh --test)"
done
full=${COMPAT_PERFTEST_FULL:-0}
bw="ib_write_bw ib_read_bw"
lat="ib_send_lat"
sizes=64
[ "$full" = 1 ] && bw="$bw ib_send_bw" && lat="ib_write_lat ib_read_lat ib_send_lat" && sizes="64 65536"
for tool in $bw; do
	p=$(command -v $tool)
	pair "$tool -R -a -n 5, both ends under iwarp-run" 8388608 \
		"$RUN" "$p" -R -a -n 5 -- "$RUN" "$p" -R -a -n 5
done
for tool in $lat; do
	p=$(command -v $tool)
	for size in $sizes; do
		pair "$tool -R -s $size -n 50, both ends under iwarp-run" $size \
			"$RUN" "$p" -R -s $size -n 50 -- "$RUN" "$p" -R -s $size -n 50
	done
done

# cross ROLES TEST TOOL: ROLES "both", "server" (iwarp-perf serves) or
# "client" (iwarp-perf connects).
cross() {
	p=$(command -v "$3")
	case $1 in both | server)
		pair "$3 -R client under iwarp-run -> iwarp-perf --server --test $2" 4096 \
			"$PERF" --server --test "$2" -s 4096 -n 100 -- "$RUN" "$p" -R -s 4096 -n 100 ;;
	esac
	case $1 in both | client)
		pair "iwarp-perf --test $2 -> $3 -R server under iwarp-run" 4096 \
			"$RUN" "$p" -R -s 4096 -n 100 -- "$PERF" --test "$2" -s 4096 -n 100 ;;
	esac
}
cross both write ib_write_bw
[ "$full" = 1 ] || { rm -f "$SLOG" "$CLOG"; exit $fail; }
cross both read ib_read_bw
cross both send ib_send_bw
cross server write_lat ib_write_lat
cross client send_lat ib_send_lat
rm -f "$SLOG" "$CLOG"
exit $fail
