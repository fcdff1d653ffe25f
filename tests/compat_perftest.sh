#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Debian's perftest, unmodified, over 127.0.0.1 with -R (rdma_cm), both
# ends under iwarp-run, a pair passing when both ends exit 0 and the client
# printed its result row for the last size (no figure is judged).
# make check (about 20 s on a loaded machine): ib_write_bw at 2 and 262144
# octets (where a loaded sweep once stalled), ib_read_bw and ib_send_bw at
# 65536, the three latency tools at 64; ib_send_lat against a server whose
# second rdma_listen is 300 ms late (tests/slow_listen.c: perftest -R's
# client connects again as soon as its handshake is done, and before
# libiwarp dialled a refused connection again perftest crashed in its
# retry), and ib_write_bw against such a server with a client that does
# not dial again (tests/no_redial.c, as siw's rdma-core client: only the
# server's parked listening socket, relisten_ms, lets it in); crossed with the native tools/iwarp-perf at 4096 octets: write,
# read and send bandwidth in each role, write_lat and send_lat one role
# each. COMPAT_PERFTEST_FULL=1 adds perftest's own sweep (-a: 2 ... 8 MiB)
# for all six tools (minutes when loaded: about a second per size).
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need ib_write_bw ss python3
PERF=$B/tools/iwarp-perf
[ -x "$PERF" ] || skip "$PERF not built"

SLOG=$B/compat_perftest_s.log
CLOG=$B/compat_perftest_c.log
fail=0

# attempt SIZE SERVER-CMD... -- CLIENT-CMD...: one server and one client
# (run_pair); sets ok when both exit 0 and the client printed SIZE's row.
attempt() {
	size=$1
	shift
	ok=0
	run_pair "$SLOG" "$CLOG" "$@"
	[ $crc -eq 0 ] && [ $src -eq 0 ] && grep -Eq "^ *$size +[0-9]" "$CLOG" && ok=1
}

# pair DESC SIZE SERVER-CMD... -- CLIENT-CMD...: the client gets the port
# and 127.0.0.1 appended, the server the port.
pair() {
	desc=$1
	shift
	attempt "$@"
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

# one TOOL SIZE ITERS: both ends under iwarp-run at one size.
one() {
	p=$(command -v "$1")
	pair "$1 -R -s $2 -n $3, both ends under iwarp-run" "$2" \
		"$RUN" "$p" -R -s "$2" -n "$3" -- "$RUN" "$p" -R -s "$2" -n "$3"
}
one ib_write_bw 2 5
one ib_write_bw 262144 20
one ib_read_bw 65536 20
one ib_send_bw 65536 20
for tool in ib_write_lat ib_read_lat ib_send_lat; do
	one $tool 64 20
done
# wrap SHIM: a wrapper that runs its arguments with SHIM preloaded, after
# whatever iwarp-run's caller preloads (the ASan runtime must come first
# in a sanitizer build); its path on stdout.
wrap() {
	w=$(mktemp "${TMPDIR:-/tmp}/compat-shim.XXXXXX") || exit 1
	printf '#!/bin/sh\nLD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}%s" exec "$@"\n' "$1" >"$w"
	chmod +x "$w"
	echo "$w"
}
SHIM=$B/tests/.libs/slow_listen.so
NOREDIAL=$B/tests/.libs/no_redial.so
if [ -e "$SHIM" ] && [ -e "$NOREDIAL" ]; then
	late=$(wrap "$SHIM")
	final=$(wrap "$NOREDIAL")
	p=$(command -v ib_send_lat)
	pair "ib_send_lat -R -s 64 -n 20, the server's second listen 300 ms late" 64 \
		"$RUN" "$late" "$p" -R -s 64 -n 20 -- "$RUN" "$p" -R -s 64 -n 20
	# As siw's rdma-core client in scn-45: no second dial. The server's
	# first listening socket, parked (relisten_ms), queues the connection.
	p=$(command -v ib_write_bw)
	pair "ib_write_bw -R -s 65536 -n 20, the server's second listen 300 ms late, a client that takes a refusal as final" 65536 \
		"$RUN" "$late" "$p" -R -s 65536 -n 20 -- "$RUN" "$final" "$p" -R -s 65536 -n 20
	rm -f "$late" "$final"
else
	echo "FAIL: $SHIM or $NOREDIAL not built (make check builds them)"
	fail=1
fi
if [ "$full" = 1 ]; then
	for tool in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
		p=$(command -v $tool)
		pair "$tool -R -a -n 5, both ends under iwarp-run" 8388608 \
			"$RUN" "$p" -R -a -n 5 -- "$RUN" "$p" -R -a -n 5
	done
fi

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
cross both read ib_read_bw
cross both send ib_send_bw
cross server write_lat ib_write_lat
cross client send_lat ib_send_lat
rm -f "$SLOG" "$CLOG"
exit $fail
