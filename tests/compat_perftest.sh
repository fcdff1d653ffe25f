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
# iwarp-perf crossed with ib_write_bw both roles); the whole matrix with
# COMPAT_PERFTEST_FULL=1 (minutes on a loaded machine). The latency tools
# make their second connection 0.15 s after the first, which a loaded
# server often misses (see pair): they run only in the whole matrix.
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

# attempt SIZE SERVER-CMD... -- CLIENT-CMD...: one server and one client;
# sets crc and src (exit statuses) and ok.
attempt() {
	size=$1
	shift
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
	crc=3 src=3 ok=0
	if ! wait_listen "$port"; then
		kill -9 $spid 2>/dev/null
		return
	fi
	timeout 60 "$@" -p "$port" 127.0.0.1 >"$CLOG" 2>&1
	crc=$?
	# A client that gave up leaves its server waiting for ever.
	[ $crc -ne 0 ] && kill $spid 2>/dev/null
	wait_pid $spid 30
	src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] && grep -Eq "^ *$size +[0-9]" "$CLOG" && ok=1
}

# pair DESC SIZE SERVER-CMD... -- CLIENT-CMD...: the client gets the port
# and 127.0.0.1 appended, the server the port. perftest -R makes two
# connections: the client makes the second 1 s after the first, while the
# server listens anew, which a loaded machine may not have done by then
# (connection refused: UNREACHABLE -111, then perftest crashes). That one
# race, and only it, gets a second attempt.
pair() {
	desc=$1
	shift
	attempt "$@"
	if [ $ok = 0 ] && grep -q "RDMA_CM_EVENT_UNREACHABLE; error: -111" "$CLOG"; then
		echo "note: $desc: perftest's second connection was refused (its server was not listening again yet); once more"
		attempt "$@"
	fi
	if [ $ok = 0 ]; then
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
lat=""
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
