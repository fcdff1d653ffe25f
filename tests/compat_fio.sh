#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Debian's fio, unmodified, with its rdma engine (--ioengine=rdma, rdma_cm)
# over 127.0.0.1, both ends under iwarp-run, every byte checked.
#
# fio's rdma engine: the server is the job with rw=read, the client the
# one with rw=write, whatever the verb. With verb=write the client RDMA
# Writes each of its buffers into a random one of the server's; with
# verb=read it RDMA Reads a random server buffer into each of its own;
# with verb=send it Sends its buffers into the server's posted receives.
# fio itself verifies only what completes as a read on a job with verify=:
# the server's receives of verb=send. Everything else is checked here, in
# three places, for a sweep of block sizes and depths (odd 1500-octet
# blocks 100 deep in flight twice, 64 KiB four in flight, 256 KiB eight):
#  - exits: both fio processes exit 0, the client issued SIZE/BS writes,
#    none short (and the verb=send server SIZE/BS full reads);
#  - memory: each fio keeps its buffers in a file we fill first and read
#    after (--mem=mmapshared:FILE, a MAP_SHARED mapping fio neither
#    truncates nor unlinks when the file exists). The server's starts as
#    32-bit counters, so no two buffers are alike. verb=write: every
#    server buffer is either the client's pattern (a 251-octet
#    verify_pattern, so no shift by less than 251 octets hides) or still
#    its own counters, at least one written. verb=read: every client
#    buffer (zeros before) is exactly one whole server buffer, and the
#    server's memory is unchanged. verb=send: every server buffer is the
#    client's pattern, and fio's own verify=pattern on the server checked
#    each receive as it completed;
#  - wire: the server (fio --thread: its forked jobs leave by _exit, which
#    skips the trace's flush at exit) traces with IWARP_PCAP; iwarp-replay
#    --json --payload decodes it: one connection, every FPDU with a good
#    CRC32c and no error, no TERMINATE, no gap (the 32 MiB trace queue holds
#    these runs whole), and SIZE/BS data messages (RDMA Writes to the
#    server, Read Responses from it, or the client's Sends after fio's
#    request) of BS octets each, segments contiguous, each the client's
#    pattern or one whole server buffer.
# The memory and wire checkers must also fail, on the same artefacts, when
# told a pattern one octet different (or another counter start): a checker
# that cannot fail proves nothing. COMPAT_FIO_KEEP=DIR keeps a failed run's
# logs, memory files and trace there.
#
# These checks found that fio's client lost data on a loaded machine: it
# destroys its id right after rdma_disconnect, which reset the connection
# and dropped the Writes its kernel still held for a slow server (both
# fios still exited 0); see test_close_destroy_after_disconnect.
#
# verb=send runs by default (COMPAT_FIO_SEND=0 leaves it out): fio's
# client streams Sends and counts on InfiniBand's RNR retry when it is
# ahead of the server's reposts; over iWARP a Send that finds no receive
# draws RFC 5041's "no buffer" TERMINATE (the trace shows it), the
# server's posted receives then flush and fio's server, whose getevents()
# answers an error completion by waiting for the next CQ event, waits for
# ever (it is blocked in ibv_get_cq_event, not in a teardown call; so it
# would on any RDMA device after a failed completion). compat/'s receive
# hold (IW_QP_CREATE_RECV_HOLD), which stands in for RNR retry, removes the
# TERMINATE, and keeps the messages it holds when the client's FIN
# arrives: fio's client disconnects as soon as its last Send completes
# locally (on InfiniBand, once the server has the message), so with a
# server a few receives behind (1500-octet Sends two deep) the FIN comes
# while messages are still held; the receives fio posts next take them.
# The send cases then passed 33 runs in a row (15 quiet, 12 beside two
# CPU hogs, 6 before) and joined the default run.
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need fio ss python3
FIO=$(command -v fio)
RP=$B/tools/iwarp-replay
CHK="python3 ${IW_SRCDIR:-.}/tests/compat_fio_check.py"
[ -x "$RP" ] || skip "tools/iwarp-replay not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/compat_fio.XXXXXX") || exit 1
trap 'rm -rf "$T"; [ -z "${wrap:-}" ] || rm -f "$wrap"' EXIT

# 251 octets, i*151+89: no period shorter than 251.
PAT=0x$(python3 -c 'print(bytes((i * 151 + 89) & 255 for i in range(251)).hex())')
SALT=305419896

verbs="write read"
[ "${COMPAT_FIO_SEND:-1}" = 0 ] || verbs="$verbs send"
fail=0

say_fail() {
	echo "FAIL: fio --verb=$verb bs=$bs iodepth=$depth size=$size: $*"
	sed 's/^/  client: /' "$T/c.log" | grep -v '^  client: *$' | tail -12
	sed 's/^/  server: /' "$T/s.log" | grep -v '^  server: *$' | tail -12
	fail=1
	[ -z "${COMPAT_FIO_KEEP:-}" ] || cp -r "$T" "$COMPAT_FIO_KEEP/$verb-$bs-$$-$(date +%s%N)"
}

# run VERB BS DEPTH SIZE: one server and one client, both checked.
run() {
	verb=$1 bs=$2 depth=$3 size=$4
	n=$((size / bs))
	mem=$((bs * depth + 4096))
	rm -f "$T"/*
	$CHK fill $mem $SALT "$T/srv.mem" "$T/cli.mem"
	vopt="--verify=pattern --verify_pattern=$PAT --verify_state_save=0"
	sv="" cv="$vopt --do_verify=0"
	[ "$verb" = send ] && sv=$vopt
	[ "$verb" = read ] && cv="--mem=mmapshared:$T/cli.mem"
	port=$(free_port)
	# shellcheck disable=SC2086 # sv and cv are option lists
	IWARP_PCAP=$T/srv.pcap "$RUN" "$FIO" --thread --name=srv --ioengine=rdma --port="$port" \
		--rw=read --bs=$bs --size=$size --iodepth=$depth --mem=mmapshared:"$T/srv.mem" $sv \
		>"$T/s.log" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		kill -9 $spid 2>/dev/null
		say_fail "the server never listened"
		return
	fi
	# shellcheck disable=SC2086
	timeout 60 "$RUN" "$FIO" --name=cli --ioengine=rdma --hostname=127.0.0.1 --port="$port" \
		--verb=$verb --rw=write --bs=$bs --size=$size --iodepth=$depth $cv \
		>"$T/c.log" 2>&1
	crc=$?
	[ $crc -ne 0 ] && kill $spid 2>/dev/null
	wait_pid $spid 30
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		say_fail "client exit $crc, server exit $src"
		return
	fi
	if ! grep -q "issued rwts: total=0,$n,0,0 short=0,0,0,0" "$T/c.log"; then
		say_fail "the client did not issue $n full writes"
		return
	fi
	if [ "$verb" = send ] && ! grep -q "issued rwts: total=$n,0,0,0 short=0,0,0,0" "$T/s.log"; then
		say_fail "the server did not complete $n full receives"
		return
	fi
	"$RP" --json --payload "$T/srv.pcap" >"$T/srv.json" 2>"$T/rp.err" ||
		{ say_fail "iwarp-replay: $(cat "$T/rp.err")"; return; }
	# The checkers' own failure, once per verb (a checker that cannot
	# fail proves nothing).
	neg=""
	[ "$first" = "$verb" ] || neg=negative
	first=$verb
	if ! $CHK check "$verb" "$bs" "$depth" "$size" "$PAT" "$SALT" "$T/srv.mem" "$T/cli.mem" \
		"$T/srv.json" $neg >"$T/chk"; then
		say_fail "$(sed -n 's/^FAIL: //p' "$T/chk")"
		return
	fi
	echo "ok: fio --ioengine=rdma --verb=$verb bs=$bs iodepth=$depth size=$size: both exit 0, $n transfers"
	cat "$T/chk"
}

for verb in $verbs; do
	first=""
	run $verb 65536 4 2097152
	run $verb 1500 2 150000
	run $verb 262144 8 4194304
done
exit $fail
