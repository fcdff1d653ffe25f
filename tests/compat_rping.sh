#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Debian's own /usr/bin/rping (rdmacm-utils), unmodified, both ends under
# iwarp-run over 127.0.0.1: 1000 verified pings (-C 1000 -V) of 64, 4096
# and 65535 octets (rping's largest); each ping is a Send, an RDMA Read of
# the client's buffer by the server, an RDMA Write back and a Send, so the
# CM (rdma_cm events, private data, IRD/ORD), MRs, both CQ paths and the
# completion channels are all exercised. Both ends must exit 0. rping's
# server listens with rdma_listen(id, 3): the listening socket's backlog
# (ss -ltn's Send-Q) must be that 3, not a default.
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need rping ss python3
RPING=$(command -v rping)

fail=0
for size in 64 4096 65535; do
	port=$(free_port)
	"$RUN" "$RPING" -s -a 127.0.0.1 -p "$port" -C 1000 -S "$size" -V >"$B/compat_rping_s.log" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		kill -9 $spid 2>/dev/null
		cat "$B/compat_rping_s.log"
		exit 1
	fi
	backlog=$(ss -Hltn "sport = :$port" | awk '{print $3; exit}')
	if [ "$backlog" != 3 ]; then
		echo "FAIL: rping's rdma_listen backlog 3 is $backlog in the kernel (ss -ltn Send-Q)"
		fail=1
	fi
	# A client stuck past 60 s (normally 1-2 s) shows its threads' stacks
	# (once seen in CI at 4096 octets, server waiting for the next ping).
	"$RUN" "$RPING" -c -a 127.0.0.1 -p "$port" -C 1000 -S "$size" -V \
		>"$B/compat_rping_c.log" 2>&1 &
	wait_pid $! 60 stacks
	crc=$?
	[ $crc -eq 124 ] && stacks $spid
	wait_pid $spid 30
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "FAIL: rping -C 1000 -V -S $size: client exit $crc, server exit $src"
		sed 's/^/  client: /' "$B/compat_rping_c.log" | tail -5
		sed 's/^/  server: /' "$B/compat_rping_s.log" | tail -5
		fail=1
	else
		echo "ok: rping -C 1000 -V -S $size, both ends under iwarp-run"
	fi
done
rm -f "$B/compat_rping_s.log" "$B/compat_rping_c.log"
exit $fail
