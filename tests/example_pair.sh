#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The example pair over 127.0.0.1: examples/example_server on a free port,
# examples/example_client against it with -S 1, 65536 and 1048576. Passes
# when the client reports "source and destination buffers match" and the
# server verified what the client wrote, and both exit 0. Uses the programs
# of IW_BUILDDIR (set by `make check`; the current directory otherwise).
#
# The port: derived from the PID and moved on when the server cannot bind
# it (another program has it), up to 20 tries. The server is always killed
# on exit, whatever happens.
set -u

B=${IW_BUILDDIR:-.}
SRV=$B/examples/example_server
CLI=$B/examples/example_client
for p in "$SRV" "$CLI"; do
	if [ ! -x "$p" ]; then
		echo "example_pair: $p not built" >&2
		exit 1
	fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_example_pair.XXXXXX") || exit 1
SPID=
cleanup() {
	if [ -n "$SPID" ]; then
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Each run may take this long before it is called a failure (sanitizer
# builds are slow); a hang is never a pass.
LIMIT=60
if command -v timeout >/dev/null 2>&1; then
	TO="timeout $LIMIT"
else
	TO=
fi

fail() {
	echo "example_pair: $*" >&2
	for f in "$TMP"/server.out "$TMP"/client.out; do
		[ -f "$f" ] && { echo "--- $f"; cat "$f"; } >&2
	done
	exit 1
}

# Start the server on a free port; sets PORT and SPID.
start_server() {
	size=$1
	try=0
	while [ $try -lt 20 ]; do
		PORT=$((20000 + ($$ * 7 + try * 4099 + size % 9973) % 40000))
		: >"$TMP/server.out"
		$TO "$SRV" -p "$PORT" -S "$size" >"$TMP/server.out" 2>&1 &
		SPID=$!
		# Wait for "listening" (bound) or for the server to give up.
		i=0
		while [ $i -lt 200 ]; do
			if grep -q "listening on" "$TMP/server.out"; then
				return 0
			fi
			kill -0 "$SPID" 2>/dev/null || break
			sleep 0.05
			i=$((i + 1))
		done
		kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		SPID=
		try=$((try + 1))
	done
	fail "no port to listen on after $try tries"
}

for size in 1 65536 1048576; do
	start_server "$size"
	$TO "$CLI" -p "$PORT" -S "$size" >"$TMP/client.out" 2>&1
	crc=$?
	# A failed client: the server is killed by cleanup, not waited for.
	[ $crc -eq 0 ] || fail "client -S $size exited with $crc"
	wait "$SPID"
	src=$?
	SPID=
	[ $src -eq 0 ] || fail "server -S $size exited with $src"
	grep -q "source and destination buffers match ($size bytes)" "$TMP/client.out" ||
		fail "client -S $size: no match line"
	grep -q "server: $size bytes written by the client verified" "$TMP/server.out" ||
		fail "server -S $size: no verification line"
	echo "example_pair: $size bytes: ok (port $PORT)"
done
exit 0
