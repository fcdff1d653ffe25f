#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# iwarp-perf over 127.0.0.1, kept short for CI:
#  - a server process and a client process for each test (write, read, send,
#    write_lat, send_lat), once with the iwarp-perf extension and once as
#    two perftests would talk (--as-perftest on both, same options): both
#    exit 0, bandwidth rows are non-zero, latency rows carry figures;
#    read_lat (iwarp-perf peers only; the server prints no rows) polling
#    and not, swept, in JSON and with its request/response TCP baseline;
#  - an -a sweep over a small range, -q 2, -b, -D, --loops 2 on both sides;
#  - busy-polling (--poll, the latency tests' default) and --no-poll, the
#    server taking the client's choice;
#  - --json parses (python3 -m json.tool), --tcp prints an iWARP/TCP ratio,
#    the in-process --loopback mode, --idle;
#  - bad options exit 2, a server that is not there exits 3 at once;
#  - the discard peer (--server --sink) counts every message a client on
#    2 loops x 2 QPs sends (SEND with its credits, WRITE, -D, CRC off),
#    refuses markers and the tests it does not serve.
# Uses tools/iwarp-perf of IW_BUILDDIR (set by make check; . otherwise).
# Every program runs under a time limit: a hang is a failure, never a pass.
set -u

B=${IW_BUILDDIR:-.}
PERF=$B/tools/iwarp-perf
PY=${PYTHON3:-python3}
[ -x "$PERF" ] || { echo "perf.sh: $PERF not built" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_perf.XXXXXX") || exit 1
SPID=
cleanup() {
	[ -n "$SPID" ] && { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

LIMIT=60
TO=
command -v timeout >/dev/null 2>&1 && TO="timeout $LIMIT"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*"
	for f in "$TMP"/server.out "$TMP"/client.out; do
		[ -s "$f" ] && { echo "--- $f"; cat "$f"; }
	done
}

# Start a server with the given options: sets PORT, SPID. It listens on
# port 0 and PORT is the kernel's choice, read from its exact line
# "iwarp-perf: listening on port N": a port the script picked could be in
# use (the ephemeral range holds the local ports of every other test's
# connections), and the server's error "listening on port N: Address already
# in use" must not pass for readiness. Waits while the server lives, up to
# LIMIT seconds (a loaded machine may take seconds to start it); fails at
# once if it exits without listening.
start_server() {
	PORT=
	: >"$TMP/server.out"
	$TO "$PERF" --server -p 0 "$@" >"$TMP/server.out" 2>&1 &
	SPID=$!
	i=0
	while [ $i -lt $((LIMIT * 20)) ]; do
		alive=0
		kill -0 "$SPID" 2>/dev/null && alive=1
		PORT=$(sed -n 's/^iwarp-perf: listening on port \([0-9][0-9]*\)$/\1/p' "$TMP/server.out")
		[ -n "$PORT" ] && return 0
		[ $alive -eq 1 ] || break
		sleep 0.05
		i=$((i + 1))
	done
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	SPID=
	return 1
}

# The data rows of a table: lines that start with a size.
rows() { grep -E '^ [0-9]+ ' "$1"; }

# At least $2 rows, each with a non-zero figure: t_typical[usec] (column 4)
# in a latency table, MsgRate[Mpps] (column 7, six decimals) otherwise.
rows_nonzero() {
	c=7
	grep -q 't_typical' "$1" && c=4
	n=$(rows "$1" | wc -l)
	z=$(rows "$1" | awk -v c="$c" '$c + 0 <= 0' | wc -l)
	[ "$n" -ge "$2" ] && [ "$z" -eq 0 ]
}

# pair NAME EXPECTED_ROWS OPTIONS...: server and client with the options.
pair() {
	name=$1
	want=$2
	shift 2
	if ! start_server "$@"; then
		bad "$name: the server never listened"
		return
	fi
	$TO "$PERF" -p "$PORT" "$@" 127.0.0.1 >"$TMP/client.out" 2>&1
	crc=$?
	wait "$SPID"
	src=$?
	SPID=
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		bad "$name: client exited $crc, server $src"
		# What each said: the reason of a rare failure is in it.
		tail -n 15 "$TMP/client.out" | sed 's/^/  client: /'
		tail -n 15 "$TMP/server.out" | sed 's/^/  server: /'
	elif ! rows_nonzero "$TMP/client.out" "$want"; then
		bad "$name: client table has not $want non-zero rows"
	elif [ "${SROWS:-1}" -gt 0 ] && ! rows_nonzero "$TMP/server.out" "${SROWS:-1}"; then
		bad "$name: server table has no non-zero row"
	else
		ok "$name ($(rows "$TMP/client.out" | wc -l) rows)"
	fi
}

for t in write read send write_lat send_lat; do
	pair "$t" 1 --test "$t" -s 4096 -n 200
	pair "$t as perftest" 1 --as-perftest --test "$t" -s 4096 -n 200
done
pair "write -a 2..1024" 10 --test write -a --max-size 1024 -n 50
pair "send -a as perftest" 8 --as-perftest --test send -a --max-size 256 -n 50
pair "write_lat -a as perftest" 6 --as-perftest --test write_lat -a --max-size 64 -n 50
pair "read -q 2" 1 --test read -q 2 -s 8192 -n 200
# #iterations counts both QPs' messages, as perftest's report (the server
# prints the client's report: a perftest server would show the same).
if rows "$TMP/client.out" | awk '$2 != 400 { exit 1 }' &&
	rows "$TMP/server.out" | awk '$2 != 400 { exit 1 }'; then
	ok "read -q 2 -n 200 reports 400 iterations on both sides"
else
	bad "read -q 2 -n 200: #iterations is not 400"
fi
# Busy-polling (run to completion): the latency tests' default, any test
# with --poll, none with --no-poll; the server takes the client's choice
# (its header says which way it waited).
waits() {
	grep -q "   $2   " "$TMP/client.out" && grep -q "   $2   " "$TMP/server.out" &&
		ok "$1: both ends $2" || bad "$1: not both ends $2"
}
pair "send_lat (polls by default)" 1 --test send_lat -s 64 -n 500
waits "send_lat" busy-poll
# A taken receive is posted again after the answer while others are
# posted (-r 2: one other), before it with a single one (-r 1); the sizes
# cross the inline bound (236 octets).
pair "send_lat -r 1" 1 --test send_lat -s 64 -n 500 -r 1
pair "send_lat -r 2 -a" 9 --test send_lat -a --max-size 512 -n 200 -r 2
pair "write_lat --no-poll" 1 --test write_lat -s 64 -n 500 --no-poll
waits "write_lat --no-poll" blocking
pair "write --poll" 1 --test write --poll -s 65536 -n 300
waits "write --poll" busy-poll
pair "send -b --poll" 1 --test send -b --poll -s 4096 -n 300
pair "read --poll" 1 --test read --poll -s 1048576 -n 20
pair "write_lat -a --poll" 6 --test write_lat -a --max-size 64 -n 50 --poll
# read_lat: the client has the figures, the server none (SROWS=0).
SROWS=0 pair "read_lat" 1 --test read_lat -s 4096 -n 300
waits "read_lat" busy-poll
SROWS=0 pair "read_lat --no-poll" 1 --test read_lat -s 64 -n 300 --no-poll
waits "read_lat --no-poll" blocking
SROWS=0 pair "read_lat -a" 6 --test read_lat -a --max-size 64 -n 50
[ -z "$(rows "$TMP/server.out")" ] && ok "read_lat: no server rows" || bad "read_lat: server rows"
SROWS=0 pair "read_lat --tcp" 1 --test read_lat -s 1024 -n 200 --tcp
grep -q 'iWARP/TCP' "$TMP/client.out" && grep -q 'whole round trips' "$TMP/client.out" &&
	ok "read_lat --tcp: a ratio of whole round trips" || bad "read_lat --tcp: no ratio"
# A perftest command line carries over: -R, -F and -d are taken.
pair "perftest options -R -F -d" 1 --as-perftest --test send -R -F -d siw1 -s 4096 -n 200
pair "send -q 2 -b" 1 --test send -q 2 -b -s 1024 -n 300
pair "write -b as perftest" 1 --as-perftest --test write -b -s 65536 -n 200
pair "send -D 0.3" 1 --test send -D 0.3 -s 2048
# A loop group on both sides: four data connections over two loops each.
pair "write --loops 2 -q 4" 1 --test write --loops 2 -q 4 -s 4096 -n 300 --no-poll
grep -q 'loops: 2' "$TMP/client.out" && grep -q 'loops: 2' "$TMP/server.out" &&
	ok "--loops 2: both sides run two loops" || bad "--loops 2: not in the headers"
$TO "$PERF" --loops 0 >/dev/null 2>&1
[ $? -eq 2 ] && ok "--loops 0 is a usage error" || bad "--loops 0 accepted"
# --threads: one application thread per loop on each side (the server takes
# it from the client), counted and timed runs, both directions, polling.
pair "send --loops 2 -q 4 --threads" 1 --test send --loops 2 -q 4 --threads -s 4096 -n 300 --no-poll
pair "write --loops 2 -q 2 --threads --poll" 1 --test write --loops 2 -q 2 --threads -s 65536 -n 200 --poll
pair "send -b --loops 2 -q 4 --threads -D 0.3" 1 --test send -b --loops 2 -q 4 --threads -s 1024 -D 0.3 --poll
# -l: chains of WRs per post; a count that is no multiple of the list.
pair "send -l 8 -q 2" 1 --test send -l 8 -q 2 -s 4096 -n 301
pair "write -l 16 --threads --loops 2 -q 2" 1 --test write -l 16 --threads --loops 2 -q 2 -s 1024 -n 301
$TO "$PERF" --test send_lat --threads >/dev/null 2>&1
[ $? -eq 2 ] && ok "--threads with a latency test is a usage error" || bad "--threads send_lat accepted"

# --json: one document.
if command -v "$PY" >/dev/null 2>&1; then
	if $TO "$PERF" --test read -s 1024 -n 100 --json >"$TMP/client.out" 2>&1 &&
		"$PY" -m json.tool "$TMP/client.out" >/dev/null 2>&1 &&
		grep -q '"bw_avg_gbps"' "$TMP/client.out"; then
		ok "--json parses"
	else
		bad "--json does not parse"
	fi
	if start_server --json && $TO "$PERF" -p "$PORT" --test write_lat -n 100 --json 127.0.0.1 \
		>"$TMP/client.out" 2>&1 && wait "$SPID" && "$PY" -m json.tool "$TMP/client.out" \
		>/dev/null 2>&1 && grep -q '"t_p999_us"' "$TMP/client.out"; then
		ok "--json of a latency client parses"
	else
		bad "--json of a latency client"
	fi
	SPID=
	if start_server --json && $TO "$PERF" -p "$PORT" --test read_lat -n 100 --json 127.0.0.1 \
		>"$TMP/client.out" 2>&1 && wait "$SPID" && "$PY" -m json.tool "$TMP/client.out" \
		>/dev/null 2>&1 && grep -q '"whole round trip' "$TMP/client.out" &&
		grep -q '"t_typical_us"' "$TMP/client.out"; then
		ok "--json of a read_lat client parses"
	else
		bad "--json of a read_lat client"
	fi
	# --threads: the client's second loop has an application
	# thread of its own, and the cpu object names it.
	if $TO "$PERF" --test send --loops 2 -q 2 --threads -s 4096 -n 300 --json \
		>"$TMP/client.out" 2>&1 && "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = [t["name"] for t in d["results"][0]["cpu"]["threads"]]
sys.exit(0 if d["threads"] and "perf-app-1" in names else 1)' "$TMP/client.out"; then
		ok "--json --threads: perf-app-1 in the cpu object"
	else
		bad "--json --threads: no per-thread cpu"
	fi
else
	echo "SKIP: no python3 for --json"
fi

# --tcp: a ratio column, in-process and between processes.
$TO "$PERF" --test write -s 65536 -n 300 --tcp >"$TMP/client.out" 2>&1
if [ $? -eq 0 ] && grep -q 'iWARP/TCP' "$TMP/client.out" &&
	rows "$TMP/client.out" | awk '{ if ($NF + 0 <= 0) exit 1 }'; then
	ok "--tcp prints a ratio (loopback)"
else
	bad "--tcp (loopback)"
fi
# -l: the raw TCP sender writes lists too (writev), within a depth and a
# count that the list size does not divide.
$TO "$PERF" --test send -s 4096 -n 301 -t 40 -l 16 --tcp >"$TMP/client.out" 2>&1
if [ $? -eq 0 ] && rows "$TMP/client.out" | awk '{ if ($NF + 0 <= 0) exit 1 }'; then
	ok "-l 16 --tcp prints a ratio"
else
	bad "-l 16 --tcp"
fi
pair "send_lat --tcp" 1 --test send_lat -n 200 --tcp
grep -q "iWARP/TCP" "$TMP/client.out" && ok "--tcp ratio, busy-polling" || bad "--tcp busy-polling: no ratio"
pair "write_lat --tcp --no-poll" 1 --test write_lat -n 200 --tcp --no-poll
grep -q 'iWARP/TCP' "$TMP/client.out" && ok "--tcp ratio between processes" ||
	bad "--tcp between processes: no ratio"

# The in-process mode, as scripts/demo.sh runs it, and --idle.
if $TO "$PERF" --test send -s 65536 -D 0.2 >"$TMP/client.out" 2>&1 &&
	rows_nonzero "$TMP/client.out" 1; then
	ok "default (loopback) mode"
else
	bad "default (loopback) mode"
fi
if $TO "$PERF" --idle 4 >"$TMP/client.out" 2>&1 && grep -q 'bytes of heap per endpoint' "$TMP/client.out"; then
	ok "--idle"
else
	bad "--idle"
fi

# Usage errors: exit 2 and a message.
for args in "--bogus" "-s 0" "-s 9m" "--test nope" "-n 5 -D 1" "--test write_lat -b" \
	"-q 0" "-t 0" "--crc maybe" "-a -D 1" "a b" "-s"; do
	# shellcheck disable=SC2086
	$TO "$PERF" $args >"$TMP/client.out" 2>&1
	rc=$?
	if [ $rc -eq 2 ] && [ -s "$TMP/client.out" ]; then
		ok "usage error: $args"
	else
		bad "usage error: $args exited $rc"
	fi
done

# A port already taken: the second server exits 3 saying so, and prints no
# line that start_server would take for readiness.
if start_server --test write -n 100; then
	$TO "$PERF" --server -p "$PORT" >"$TMP/client.out" 2>&1
	rc=$?
	if [ $rc -eq 3 ] && grep -q 'Address already in use' "$TMP/client.out" &&
		! grep -q '^iwarp-perf: listening on port [0-9]*$' "$TMP/client.out"; then
		ok "port in use: exit 3, not listening"
	else
		bad "port in use: exit $rc"
	fi
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	SPID=
else
	bad "port in use: the first server never listened"
fi

# Nobody listening: exit 3, at once.
start=$(date +%s)
$TO "$PERF" -p 9 --test write -n 100 127.0.0.1 >"$TMP/client.out" 2>&1
rc=$?
took=$(($(date +%s) - start))
if [ $rc -eq 3 ] && [ $took -le 5 ] && grep -q 'refused' "$TMP/client.out"; then
	ok "no server: exit 3 in ${took}s"
else
	bad "no server: exit $rc after ${took}s"
fi

# The discard peer (--server --sink; scripts/bench_loops.sh --sink):
# sink_run NAME CLIENT_OPTIONS... sets CRC and SRC (exit statuses).
sink_run() {
	name=$1
	shift
	CRC=x SRC=x
	if ! start_server --sink --json; then
		bad "$name: the sink never listened"
		return 1
	fi
	$TO "$PERF" -p "$PORT" --json "$@" 127.0.0.1 >"$TMP/client.out" 2>&1
	CRC=$?
	wait "$SPID"
	SRC=$?
	SPID=
}

# sink_counted NAME WIRE PER_CONN CLIENT_OPTIONS...: both exit 0, the
# sink counted what the client sent (PER_CONN on each connection unless
# 0), WIRE octets each, and decoded and CRC-checked 64 per connection.
sink_counted() {
	name=$1 wire=$2 per=$3
	shift 3
	sink_run "$name" "$@" || return
	if [ "$CRC" -ne 0 ] || [ "$SRC" -ne 0 ]; then
		bad "$name: client exited $CRC, sink $SRC"
		return
	fi
	why=$("$PY" - "$TMP" "$wire" "$per" "$@" <<'EOF'
import json, sys
d, wire, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
crc = "off" not in sys.argv[4:]
c = json.load(open(d + "/client.out"))["results"][0]
s = [json.loads(l)["sink"] for l in open(d + "/server.out") if l.startswith('{"sink"')][0]
n = s["connections"]
if c["messages"] != s["messages"]:
    print("client sent %d, sink counted %d" % (c["messages"], s["messages"]))
elif per and s["per_connection"] != [per] * n:
    print("per connection %s, not %d each" % (s["per_connection"], per))
elif s["octets"] != s["messages"] * wire:
    print("%d octets for %d messages of %d" % (s["octets"], s["messages"], wire))
elif s["checked"] != 64 * n or s["crc"] != crc:
    print("%d messages checked (CRC %s), not 64 on each of %d" % (s["checked"], s["crc"], n))
elif s["messages"] == 0:
    print("nothing sent")
EOF
)
	if [ -n "$why" ]; then
		bad "$name: $why"
	else
		ok "$name"
	fi
}

# 4 KiB SEND on 2 loops x 2 QPs: 12,000 messages of 4,120 octets (2 + 18
# + 4096 + CRC 4; no pad) both counted, so a message lost, cut or
# duplicated by either side fails; 3,000 per QP need the sink's credits
# (-r 512). WRITE: 4,116 octets (a 14-octet header). --crc off still
# sends the CRC field (zero). -D: a count known only at the end. WRITE
# for longer than the client's 200 ms wake (a zero-length Write from a
# client that has heard nothing): the sink's hello keeps it out.
sink_counted "sink: send 2 loops x 2 QPs" 4120 3000 --test send -s 4096 -n 3000 -q 4 --loops 2 --threads --pin
sink_counted "sink: write 2 loops x 2 QPs" 4116 3000 --test write -s 4096 -n 3000 -q 4 --loops 2 --threads
sink_counted "sink: send --crc off -D" 4120 0 --test send -s 4096 -D 0.3 -q 2 --loops 2 --threads --poll --crc off
sink_counted "sink: write -D 0.5" 4116 0 --test write -s 4096 -D 0.5 -q 2 --loops 2 --threads
# Markers are refused at the MPA exchange (the client retries a rejected
# data connection for --timeout); a test the sink does not serve ends
# both, the sink saying so.
sink_run "sink: markers" --test send -s 4096 -n 100 --markers --timeout 1
if [ "$CRC" != 0 ] && [ "$SRC" = 3 ] && grep -q "markers" "$TMP/server.out"; then
	ok "sink: markers rejected at the MPA exchange"
else
	bad "sink: markers: client exited $CRC, sink $SRC"
fi
sink_run "sink: read" --test read -s 4096 -n 100
if [ "$CRC" != 0 ] && [ "$SRC" = 1 ] && grep -q "serves send and write" "$TMP/server.out"; then
	ok "sink: read refused, saying so"
else
	bad "sink: read: client exited $CRC, sink $SRC"
fi

echo "perf.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
