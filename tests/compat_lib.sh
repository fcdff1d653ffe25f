# SPDX-License-Identifier: BSD-2-Clause
# Sourced by tests/compat_*.sh: the build's drop-in libraries and iwarp-run,
# free ports on 127.0.0.1, waiting for a listener, skipping (exit 77) with
# the reason when a needed program is missing.

B=${IW_BUILDDIR:-.}
RUN=$B/tools/iwarp-run
# The uninstalled libraries: ours first (iwarp-run), libiwarp.so.0 next.
IWARP_COMPAT_DIR=$B/compat/.libs
export IWARP_COMPAT_DIR
LD_LIBRARY_PATH="$B/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH

skip() {
	echo "SKIP: $*"
	exit 77
}

need() {
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || skip "$p not installed (scripts/deps.sh --test)"
	done
}

[ -x "$RUN" ] && [ -e "$IWARP_COMPAT_DIR/libibverbs.so.1" ] ||
	skip "compat libraries not built (configure found no librdmacm-dev/libibverbs-dev)"

# In an ASan+UBSan build (CI's second tree) Debian's binaries are not
# instrumented, and the ASan runtime must come first in a process that
# loads our libraries: RUN becomes a wrapper that preloads it for them.
# The binaries' own allocations are not ours to judge, so LeakSanitizer is
# off there; our libraries' leaks are checked by the Check suites.
asan=$(ldd "$IWARP_COMPAT_DIR/libibverbs.so.1" 2>/dev/null |
	sed -n 's/.*libasan[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
if [ -n "$asan" ]; then
	wrap=$(mktemp "${TMPDIR:-/tmp}/iwarp-run-asan.XXXXXX") || exit 1
	printf '#!/bin/sh\nLD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD} ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 exec %s "$@"\n' \
		"$asan" "$RUN" >"$wrap"
	chmod +x "$wrap"
	RUN=$wrap
	trap 'rm -f "$wrap"' EXIT
fi

# A TCP port nobody listens on now (the kernel's pick, released).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Wait (5 s at most) until something listens on 127.0.0.1:$1.
wait_listen() {
	i=0
	while [ $i -lt 100 ]; do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
		i=$((i + 1))
	done
	echo "nothing listens on port $1 after 5 s" >&2
	return 1
}

# run_pair SLOG CLOG SERVER-CMD... -- CLIENT-CMD...: the server gets -p
# PORT (a free one) and writes SLOG; the client gets -p PORT 127.0.0.1,
# writes CLOG and has PAIR_TIMEOUT seconds (60). Sets crc and src, the
# two exit statuses (3 when nothing listened; a client that gave up has
# its server killed, which would otherwise wait for ever).
run_pair() {
	slog=$1 clog=$2
	shift 2
	port=$(free_port)
	srv=""
	while [ "$1" != "--" ]; do
		srv="$srv $1"
		shift
	done
	shift
	crc=3 src=3
	# shellcheck disable=SC2086
	$srv -p "$port" >"$slog" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		kill -9 $spid 2>/dev/null
		return
	fi
	timeout "${PAIR_TIMEOUT:-60}" "$@" -p "$port" 127.0.0.1 >"$clog" 2>&1
	crc=$?
	[ $crc -ne 0 ] && kill $spid 2>/dev/null
	wait_pid $spid 30
	src=$?
}

# stacks PID: every thread's stack of a process that seems stuck, so that
# a hang a test meets once leaves evidence in its log (gdb when installed,
# else each thread's name and kernel wait channel).
stacks() {
	echo "  stacks of pid $1:"
	if command -v gdb >/dev/null; then
		timeout 30 gdb -q -batch -p "$1" -ex "thread apply all bt" 2>&1 |
			grep -E '^(Thread|#)' | sed 's/^/    /' | head -200
	else
		for t in /proc/"$1"/task/*; do
			echo "    $(cat "$t/comm" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
		done
	fi
}

# Wait (limit $2 s) for background PID $1; kill it when it overruns.
# With $3 = stacks, print its stacks first. Returns its exit status (124
# after a kill).
wait_pid() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		if [ $i -ge $(($2 * 20)) ]; then
			[ "${3:-}" = stacks ] && stacks "$1"
			kill -9 "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			return 124
		fi
		sleep 0.05
		i=$((i + 1))
	done
	wait "$1"
}
