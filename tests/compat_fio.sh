#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Debian's fio, unmodified, with its rdma engine (--ioengine=rdma, rdma_cm)
# over 127.0.0.1, both ends under iwarp-run: the client (rw=write) moves
# 2 MiB in 64 KiB RDMA Writes (verb=write) and RDMA Reads (verb=read) of
# the server's buffers, four in flight; both ends must exit 0 and account
# every octet (io=2048KiB). fio's engine places each transfer in a random
# remote buffer, so its verify= cannot check these (no figure is judged).
# Not here: verb=send. fio's client disconnects as soon as its last Send
# completes locally, while the server still has receives posted and fio
# takes their flush as an I/O error (then its server never exits); and a
# client ahead of the server's reposts relies on InfiniBand's RNR retry,
# which iWARP lacks. COMPAT_FIO_FULL=1 runs it too.
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need fio ss python3
FIO=$(command -v fio)

verbs="write read"
[ "${COMPAT_FIO_FULL:-0}" = 1 ] && verbs="$verbs send"
fail=0
for verb in $verbs; do
	port=$(free_port)
	"$RUN" "$FIO" --name=srv --ioengine=rdma --port="$port" --rw=read --bs=64k --size=2m \
		--iodepth=4 >"$B/compat_fio_s.log" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		kill -9 $spid 2>/dev/null
		cat "$B/compat_fio_s.log"
		exit 1
	fi
	timeout 60 "$RUN" "$FIO" --name=cli --ioengine=rdma --hostname=127.0.0.1 --port="$port" \
		--verb=$verb --rw=write --bs=64k --size=2m --iodepth=4 >"$B/compat_fio_c.log" 2>&1
	crc=$?
	[ $crc -ne 0 ] && kill $spid 2>/dev/null
	wait_pid $spid 30
	src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "io=2048KiB" "$B/compat_fio_c.log"; then
		echo "ok: fio --ioengine=rdma --verb=$verb"
	else
		echo "FAIL: fio --ioengine=rdma --verb=$verb: client exit $crc, server exit $src"
		sed 's/^/  client: /' "$B/compat_fio_c.log" | tail -12
		sed 's/^/  server: /' "$B/compat_fio_s.log" | tail -12
		fail=1
	fi
done
rm -f "$B/compat_fio_s.log" "$B/compat_fio_c.log"
exit $fail
