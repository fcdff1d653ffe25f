#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Debian's qperf (0.4.11), unmodified, both ends under iwarp-run over
# 127.0.0.1, connecting its QPs with rdma_cm (-cm1), one second a test:
#  - rc_lat, rc_rdma_write_lat, rc_rdma_read_lat and rc_rdma_read_bw;
#  - rc_compare_swap_mr and rc_fetch_add_mr, and rc_rdma_write_lat's
#    Writes with immediate data: RFC 7306, on with IWARP_RFC7306=1;
#  - rc_bw, rc_bi_bw and rc_rdma_write_bw, which stream Sends (or Writes
#    with immediate data, which take a receive) faster than the receiver
#    reposts receives, counting on InfiniBand's RNR retry: on iWARP such a
#    Send ends the connection (RFC 5041's "no buffer" TERMINATE), unless
#    the receiver holds it for the next receive, as compat/ does on every
#    QP (IW_QP_CREATE_RECV_HOLD, IWARP_RECV_HOLD).
# Each test must print its figure (none is judged: the machine is shared).
# Its server binds port 0 and sends rdma_get_src_port to the client before
# it listens, which needs a real port at rdma_bind_addr (compat/cm_port.c)
# and a client that dials a refused connection again; its one-way tests
# ask for a queue of 0 WRs (compat/ibv_qp.c).
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need qperf ss python3
QPERF=$(command -v qperf)
IWARP_RFC7306=1
export IWARP_RFC7306

tests="rc_lat rc_rdma_write_lat rc_rdma_read_lat rc_rdma_read_bw rc_compare_swap_mr rc_fetch_add_mr"
tests="$tests rc_bw rc_bi_bw rc_rdma_write_bw"
port=$(free_port)
"$RUN" "$QPERF" -lp "$port" >"$B/compat_qperf_s.log" 2>&1 &
spid=$!
if ! wait_listen "$port"; then
	kill -9 $spid 2>/dev/null
	cat "$B/compat_qperf_s.log"
	exit 1
fi
# shellcheck disable=SC2086
timeout 120 "$RUN" "$QPERF" -lp "$port" -cm1 -t 1 127.0.0.1 $tests >"$B/compat_qperf_c.log" 2>&1
crc=$?
kill $spid 2>/dev/null
wait $spid 2>/dev/null
fail=0
[ $crc -eq 0 ] || { echo "FAIL: qperf client exit $crc"; fail=1; }
for t in $tests; do
	# "rc_lat:" then its figure on the next line ("latency = ...", "bw = ...",
	# "msg_rate = ...").
	if awk -v t="$t:" '$1 == t {getline; if ($2 == "=") ok = 1} END {exit !ok}' \
		"$B/compat_qperf_c.log"; then
		echo "ok: qperf -cm1 $t"
	else
		echo "FAIL: qperf -cm1 $t"
		fail=1
	fi
done
if [ $fail -ne 0 ]; then
	sed 's/^/  client: /' "$B/compat_qperf_c.log"
	sed 's/^/  server: /' "$B/compat_qperf_s.log"
fi
rm -f "$B/compat_qperf_s.log" "$B/compat_qperf_c.log"
exit $fail
