#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# tools/iwarp-ping over 127.0.0.1, both roles ours:
#  - 10 verified pings (-C 10 -V) of 64, 4096 and 1048576 octets; with -v
#    the client prints rping's "ping data: rdma-ping-N: ..." lines and the
#    server its "server ping data: ..." lines;
#  - a client shaped like siw's (--no-crc --no-p2p): no RTR, CRC still on
#    because the server asks;
#  - the MPA knobs: private data of 0, 252, 508 and (rev 1) 512 octets
#    arrives whole both ways; rev 1 and rev 2 without the RFC 6581 block
#    work; markers asked for are inserted by a default server and refused
#    (REJECTED, exit 4, both sides say why) by one with --refuse-markers
#    (siw's behaviour); READ RTR offered or imposed; no common RTR is a
#    clean rejection; private data too large is a usage error or a
#    rejection;
#  - a persistent server (-P) serving two clients in turn, then two at once;
#  - without -P, a second client is rejected while the first is served;
#  - command line errors exit 2 with a message; --help exits 0;
#  - a client to a closed port exits 4 saying "unreachable" within seconds,
#    one to a server that never answers the MPA Request after --timeout;
#  - a server killed mid-run makes the client exit 1, a client killed
#    mid-run makes the server exit promptly; a stopped (SIGSTOP) server
#    makes the client give up after --timeout.
# Uses the programs of IW_BUILDDIR (set by `make check`; the current
# directory otherwise).
#
# Ports: servers listen on port 0 and the kernel's choice is read from
# their -d line "listening on 127.0.0.1:PORT", so two runs never collide.
# Programs in the background run without timeout(1), so that their PID is
# theirs (kill -9 and SIGSTOP reach them); each is waited for with a limit
# and killed on exit, whatever happens. Foreground runs have timeout(1):
# a hang is never a pass.
set -u

B=${IW_BUILDDIR:-.}
PING=$B/tools/iwarp-ping
if [ ! -x "$PING" ]; then
	echo "ping: $PING not built" >&2
	exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_ping.XXXXXX") || exit 1
PIDS=
cleanup() {
	for p in $PIDS; do
		kill -CONT "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Sanitizer builds are slow; this is a limit, not an expected duration.
LIMIT=60
if command -v timeout >/dev/null 2>&1; then
	TO="timeout $LIMIT"
else
	TO=
fi

fail() {
	echo "ping: FAIL: $*" >&2
	for f in "$TMP"/*.out "$TMP"/*.err; do
		[ -s "$f" ] && { echo "--- $f"; tail -n 15 "$f" | cut -c 1-160; } >&2
	done
	exit 1
}

pass() { echo "ping: $*: ok"; }

# start_server NAME ARGS...: a server on 127.0.0.1, port 0; sets SPID and
# PORT once it listens. Output in $TMP/NAME.out.
start_server() {
	name=$1
	shift
	: >"$TMP/$name.out"
	"$PING" -s -a 127.0.0.1 -p 0 -d "$@" >"$TMP/$name.out" 2>&1 &
	SPID=$!
	PIDS="$PIDS $SPID"
	i=0
	while [ $i -lt 400 ]; do
		PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$TMP/$name.out")
		[ -n "$PORT" ] && return 0
		kill -0 "$SPID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	fail "server $name did not start listening"
}

# wait_pid PID SECONDS: the exit status of PID, or 124 if it is still
# running after SECONDS (it is then killed).
wait_pid() {
	n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt $(($2 * 10)) ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}

# wait_for FILE PATTERN SECONDS: until grep finds PATTERN in FILE.
wait_for() {
	n=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		[ $n -lt $(($3 * 20)) ] || return 1
		sleep 0.05
		n=$((n + 1))
	done
}

# expect_usage TEXT ARGS...: exit status 2 and TEXT on stderr.
expect_usage() {
	text=$1
	shift
	$TO "$PING" "$@" >"$TMP/cli.out" 2>"$TMP/cli.err"
	rc=$?
	[ $rc -eq 2 ] || fail "iwarp-ping $* exited with $rc, not 2"
	grep -q "$text" "$TMP/cli.err" || fail "iwarp-ping $*: no '$text' on stderr"
}

# ---------------------------------------------------------------- sizes
for size in 64 4096 1048576; do
	start_server "s$size" -v -S "$size"
	$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 10 -V -v -S "$size" \
		>"$TMP/c$size.out" 2>"$TMP/c$size.err"
	rc=$?
	[ $rc -eq 0 ] || fail "client -S $size exited with $rc"
	wait_pid "$SPID" 20
	rc=$?
	[ $rc -eq 0 ] || fail "server -S $size exited with $rc"
	n=$(grep -c '^ping data: rdma-ping-[0-9]*: ' "$TMP/c$size.out")
	[ "$n" -eq 10 ] || fail "client -S $size printed $n ping data lines, not 10"
	grep -q '^ping data: rdma-ping-9: JKLMNOP' "$TMP/c$size.out" ||
		fail "client -S $size: no line for ping 9"
	n=$(grep -c '^server ping data: rdma-ping-[0-9]*: ' "$TMP/s$size.out")
	[ "$n" -eq 10 ] || fail "server -S $size printed $n ping data lines, not 10"
	[ ! -s "$TMP/c$size.err" ] || fail "client -S $size wrote to stderr"
	pass "10 verified pings of $size octets (port $PORT)"
done
# rping's exact text for ping 0 of 64 octets: 13 header octets, 50
# letters from 'A', the NUL.
grep -qxF 'ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqr' \
	"$TMP/c64.out" || fail "ping 0 of 64 octets differs from rping's"
grep -qxF 'server ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrs' \
	"$TMP/s64.out" || fail "server's ping 1 of 64 octets differs from rping's"
pass "ping data lines as rping prints them"

# A client shaped like siw's initiator (no CRC asked, no P2P, so no RTR).
start_server siwlike -S 4096
$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 10 -V -S 4096 -d --no-crc --no-p2p \
	>"$TMP/siwlike-c.out" 2>&1 || fail "the --no-crc --no-p2p client failed"
wait_pid "$SPID" 20 || fail "the server of the --no-crc --no-p2p client failed"
grep -q 'MPA rev 2, CRC on, markers rx off tx off, P2P off, RTR none, IRD 1 ORD 1' "$TMP/siwlike-c.out" ||
	fail "--no-crc --no-p2p: not the expected MPA parameters"
pass "client without P2P and CRC request (as siw's)"

# ------------------------------------------------------------ MPA knobs
# mpa_pair NAME "SERVER-ARGS" "CLIENT-ARGS": a server and a client with
# -d and 2 verified pings; CRC and SRC are their exit statuses, the
# outputs $TMP/NAME-s.out and $TMP/NAME-c.out.
mpa_pair() {
	# shellcheck disable=SC2086 # argument lists on purpose
	start_server "$1-s" -S 64 $2
	# shellcheck disable=SC2086
	$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 2 -V -S 64 -d $3 >"$TMP/$1-c.out" 2>&1
	CRC=$?
	wait_pid "$SPID" 20
	SRC=$?
}
# expect_in NAME SIDE TEXT: TEXT is in NAME's SIDE (s or c) output.
expect_in() {
	grep -qF -- "$3" "$TMP/$1-$2.out" || fail "$1: no '$3' in the $2 output"
}
# mpa_ok NAME "SERVER-ARGS" "CLIENT-ARGS": the pair must work.
mpa_ok() {
	mpa_pair "$@"
	[ "$CRC" -eq 0 ] || fail "$1: client exited with $CRC"
	[ "$SRC" -eq 0 ] || fail "$1: server exited with $SRC"
	expect_in "$1" c '2 pings done'
}

# (wait_pid and start_server use n and name: another loop variable.)
for pdn in 0 252 508; do
	mpa_ok "pd$pdn" "--pd $pdn" "--pd $pdn"
	expect_in "pd$pdn" s "MPA rev 2, CRC on, markers asked off, peer IRD 1 ORD 1, peer private data $pdn octets"
	expect_in "pd$pdn" c "P2P on, RTR WRITE, IRD 1 ORD 1, peer private data $pdn octets"
done
expect_in pd252 s 'peer private data 252 octets: 00 01 02 03 04 05 06 07 ...'
expect_in pd252 c 'private data 252 octets (+4 of RFC 6581 block)'
pass "private data of 0, 252 and 508 octets both ways"

mpa_ok rev1 "--mpa-rev 1 --pd 512" "--mpa-rev 1 --pd 512"
expect_in rev1 c 'MPA rev 1, CRC on, markers rx off tx off, P2P off, RTR none, IRD 1 ORD 1, peer private data 512 octets'
expect_in rev1 s 'connect request from 127.0.0.1:'
expect_in rev1 s '(MPA rev 1, CRC on, markers asked off, peer IRD 0 ORD 0, peer private data 512 octets'
# A rev-2 server answers a rev-1 client in rev 1.
mpa_ok rev1to2 "" "--mpa-rev 1"
expect_in rev1to2 s 'MPA rev 1, CRC on'
mpa_ok noenh "" "--no-enhanced --no-crc"
expect_in noenh c 'MPA rev 2, CRC on, markers rx off tx off, P2P off, RTR none, IRD 1 ORD 1'
pass "rev 1 (512 octets of private data) and rev 2 without the RFC 6581 block"

mpa_ok markers "" "--markers --no-crc"
expect_in markers c 'markers asked on'
expect_in markers c 'MPA rev 2, CRC on, markers rx on tx off, P2P on'
expect_in markers s 'markers asked on'
expect_in markers s 'markers rx off tx on'
mpa_pair markers-no "--refuse-markers" "--markers"
[ "$CRC" -eq 4 ] || fail "client asking a --refuse-markers server for markers exited with $CRC, not 4"
[ "$SRC" -eq 4 ] || fail "--refuse-markers server exited with $SRC, not 4"
expect_in markers-no c 'rejected the connection (REJECTED: MPA Reply with R set, 0 octets of private data); we asked for markers (--markers)'
expect_in markers-no s 'CONNECT_ERROR (Connection refused): we sent a Reject, the Request asked for markers (--refuse-markers)'
pass "markers: inserted when asked; refused cleanly by --refuse-markers (as siw)"

mpa_ok rtrread "" "--rtr read"
expect_in rtrread c 'P2P on (RTR offered READ)'
expect_in rtrread c 'P2P on, RTR READ, IRD 1 ORD 1'
mpa_ok rtrforce "--rtr read" ""
expect_in rtrforce s 'P2P on, RTR READ'
mpa_pair rtrnone "" "--rtr send"
[ "$CRC" -eq 4 ] || fail "client offering only SEND exited with $CRC, not 4"
expect_in rtrnone c 'REJECTED: MPA Reply with R set'
expect_in rtrnone s 'we sent a Reject, the Request offered no RTR type we accept'
pass "RTR: READ offered, READ imposed by the server, no common RTR rejected"

expect_usage 'invalid private data length 513 (valid range is 0 to 512)' -c -a 127.0.0.1 --pd 513
expect_usage 'invalid private data length 509: at most 508 with MPA rev 2 enhanced' \
	-c -a 127.0.0.1 --pd 509
expect_usage 'invalid MPA revision 3' -c -a 127.0.0.1 --mpa-rev 3
expect_usage 'invalid --rtr' -c -a 127.0.0.1 --rtr write,bogus
expect_usage 'invalid --rtr' -c -a 127.0.0.1 --rtr ''
# The server learns whether its Reply has the block only from the Request.
mpa_pair pdbig "--pd 512" ""
[ "$CRC" -eq 4 ] || fail "client of a server whose Reply is too large exited with $CRC, not 4"
expect_in pdbig s 'cannot accept 127.0.0.1:'
expect_in pdbig s '512 octets of private data and the 4-octet RFC 6581 block exceed the MPA limit of 512; rejecting it'
expect_in pdbig c 'rejected the connection (REJECTED'
pass "private data too large: usage error (client), clean rejection (server)"

# ----------------------------------------------------------- persistent
start_server persist -P -S 4096
for k in 1 2; do
	$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 5 -V -S 4096 >"$TMP/p$k.out" 2>&1 ||
		fail "client $k of the -P server failed"
done
kill -0 "$SPID" 2>/dev/null || fail "the -P server exited after two clients"
"$PING" -c -a 127.0.0.1 -p "$PORT" -C 200 -V -S 4096 >"$TMP/p3.out" 2>&1 &
P3=$!
"$PING" -c -a 127.0.0.1 -p "$PORT" -C 200 -V -S 4096 >"$TMP/p4.out" 2>&1 &
P4=$!
PIDS="$PIDS $P3 $P4"
wait_pid "$P3" 50 || fail "concurrent client 3 of the -P server failed"
wait_pid "$P4" 50 || fail "concurrent client 4 of the -P server failed"
kill -0 "$SPID" 2>/dev/null || fail "the -P server exited after four clients"
n=$(grep -c 'pings served, done' "$TMP/persist.out")
[ "$n" -eq 4 ] || fail "the -P server finished $n clients well, not 4"
kill "$SPID"
wait "$SPID" 2>/dev/null
pass "-P server: two clients in turn, then two at once"

# ---------------------------------------------- one client without -P
start_server single -S 64
"$PING" -c -a 127.0.0.1 -p "$PORT" -C 0 -v >"$TMP/first.out" 2>&1 &
FIRST=$!
PIDS="$PIDS $FIRST"
wait_for "$TMP/first.out" 'rdma-ping-3:' 20 || fail "the first client did not ping"
$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 1 >"$TMP/second.out" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "a second client of a server without -P exited with $rc, not 4"
grep -q 'rejected' "$TMP/second.out" || fail "the second client does not say it was rejected"
kill -9 "$FIRST"
wait "$FIRST" 2>/dev/null
# Killed between two pings, the client looks like one that finished (an
# rping client just closes too): 0 or 1, but promptly.
wait_pid "$SPID" 20
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] ||
	fail "the server whose client was killed exited with $rc, not 0 or 1"
pass "without -P: second client rejected; client killed: server exits $rc"

# ---------------------------------------------------------- command line
expect_usage 'option -x is unknown' -c -a 127.0.0.1 -x
expect_usage 'option --bogus is unknown' -s --bogus
expect_usage 'needs the server' -c
expect_usage 'option -S needs an argument' -c -a 127.0.0.1 -S
expect_usage 'invalid size 10 (valid range is 23' -c -a 127.0.0.1 -S 10
expect_usage 'invalid size 2000000000' -s -S 2000000000
expect_usage "invalid size 'abc'" -s -S abc
expect_usage 'invalid count -1' -c -a 127.0.0.1 -C -1
expect_usage 'invalid port 70000' -s -p 70000
expect_usage 'choose -s (server) or -c' -a 127.0.0.1
expect_usage 'exclude each other' -s -c -a 127.0.0.1
expect_usage "unexpected argument 'extra'" -s extra
expect_usage 'invalid timeout' -s --timeout=-1
$TO "$PING" --help >"$TMP/help.out" 2>&1 || fail "--help did not exit 0"
grep -q '^usage: iwarp-ping -s' "$TMP/help.out" || fail "--help prints no usage"
pass "command line errors exit 2 with a message; --help exits 0"

# ---------------------------------------------------------- closed port
# A port that was just listened on and is closed now.
start_server gone -S 64
kill "$SPID"
wait "$SPID" 2>/dev/null
t0=$(date +%s)
$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 1 >"$TMP/refused.out" 2>&1
rc=$?
t1=$(date +%s)
[ $rc -eq 4 ] || fail "client to a closed port exited with $rc, not 4"
grep -q 'unreachable: Connection refused' "$TMP/refused.out" ||
	fail "client to a closed port: no 'unreachable: Connection refused'"
[ $((t1 - t0)) -le 5 ] || fail "client to a closed port took $((t1 - t0)) s"
pass "closed port: exit 4, unreachable, in $((t1 - t0)) s"

# A stopped server: the kernel completes the TCP handshake, the MPA Reply
# never comes.
start_server mute-srv -S 64
kill -STOP "$SPID"
t0=$(date +%s)
$TO "$PING" -c -a 127.0.0.1 -p "$PORT" -C 1 --timeout=2 >"$TMP/mute.out" 2>&1
rc=$?
t1=$(date +%s)
kill -CONT "$SPID"
kill "$SPID"
wait "$SPID" 2>/dev/null
[ $rc -eq 4 ] || fail "client of a server that never answers MPA exited with $rc, not 4"
grep -q 'CONNECT_ERROR (Connection timed out)' "$TMP/mute.out" ||
	fail "client of a server that never answers MPA: no timeout message"
[ $((t1 - t0)) -le 8 ] || fail "client of a mute server took $((t1 - t0)) s"
pass "no MPA Reply: exit 4 after --timeout=2 ($((t1 - t0)) s)"

# ---------------------------------------------------------- peer failures
start_server killed -S 4096
"$PING" -c -a 127.0.0.1 -p "$PORT" -C 0 -v -S 4096 >"$TMP/orphan.out" 2>&1 &
CPID=$!
PIDS="$PIDS $CPID"
wait_for "$TMP/orphan.out" 'rdma-ping-5:' 20 || fail "the client did not ping"
kill -9 "$SPID"
wait "$SPID" 2>/dev/null
wait_pid "$CPID" 15
rc=$?
[ $rc -eq 1 ] || fail "client whose server was killed exited with $rc, not 1"
grep -q 'closed the connection in ping' "$TMP/orphan.out" ||
	fail "client whose server was killed does not say so"
pass "server killed mid-run: client exits 1"

start_server stopped -S 64
"$PING" -c -a 127.0.0.1 -p "$PORT" -C 0 -v --timeout=2 >"$TMP/stalled.out" 2>&1 &
CPID=$!
PIDS="$PIDS $CPID"
wait_for "$TMP/stalled.out" 'rdma-ping-5:' 20 || fail "the client did not ping"
kill -STOP "$SPID"
wait_pid "$CPID" 15
rc=$?
[ $rc -eq 1 ] || fail "client of a stopped server exited with $rc, not 1"
grep -q 'within 2 s' "$TMP/stalled.out" || fail "client of a stopped server: no timeout message"
kill -CONT "$SPID"
kill "$SPID"
wait "$SPID" 2>/dev/null
pass "server stopped mid-run: client times out and exits 1"
exit 0
