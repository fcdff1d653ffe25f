#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# stop.sh: stop the interop guest and remove its network namespace.
# QEMU is killed by the pid start.sh recorded, and only after its command
# line shows it is this rig's. Programs still running inside the rig's own
# namespace (a listener a scenario left behind) are ended by pid too: the
# namespace is private to the rig and has to go.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

[ "$(id -u)" = 0 ] || rig_die "must run as root"
# kill_wait SECS PID...: SIGTERM, then SIGKILL what is left after SECS.
kill_wait() {
	local secs=$1 p i alive
	shift
	kill -TERM "$@" 2>/dev/null || true
	for ((i = 0; i < secs * 10; i++)); do
		alive=0
		for p in "$@"; do [ -d "/proc/$p" ] && alive=1; done
		[ "$alive" = 1 ] || return 0
		sleep 0.1
	done
	rig_log "still alive after ${secs}s, SIGKILL: $*"
	kill -KILL "$@" 2>/dev/null || true
}

if qemu_alive; then
	pid=$(cat "$RUN/qemu.pid")
	rig_log "stopping qemu (pid $pid)"
	kill_wait 10 "$pid"
else
	rig_log "qemu not running"
fi
rm -f "$RUN/qemu.pid" "$RUN"/*.sock "$RUN/booted.stamp"

# Only the namespace start.sh (or run.sh's probe) recorded as ours.
ns=$(cat "$RUN/netns" 2>/dev/null || true)
if [ -n "$ns" ] && netns_exists "$ns"; then
	mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
	if [ ${#pids[@]} -gt 0 ]; then
		rig_log "ending what still runs in netns $ns: $(ps -o pid=,comm= -p "${pids[@]}" | tr -s ' \n' ' ')"
		kill_wait 5 "${pids[@]}"
	fi
	ip netns del "$ns" && rig_log "removed netns $ns"
fi
rm -f "$RUN/netns"
