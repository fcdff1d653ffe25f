#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# guest.sh [-t SECS] CMD...: run CMD in the running interop guest.
# The words are joined with spaces and run by /bin/sh (dash) in /root, as
# ssh would. stdout and stderr come back separately; the exit status is
# CMD's (255: the guest could not be reached). With -t, CMD and whatever it
# started in the foreground are SIGKILLed after SECS seconds (status 137).
# Several commands may run at once (IWI_RIG_NCMD channels). Start servers in
# the background with their output redirected:
#   guest.sh 'rping -s -a 10.213.77.2 -p 7174 > /tmp/rping.log 2>&1 &'
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"
# The system python3 (build.sh installs it), not whatever PATH finds first.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || rig_die "python3 not found (run build.sh)"
[ -S "$RUN/cmd0.sock" ] || {
	echo "guest.sh: the rig is not running (no $RUN/cmd0.sock); run start.sh" >&2
	exit 255
}
exec "$PY" "$HERE/guestcmd.py" "$RUN" "$(cat "$RUN/ncmd" 2>/dev/null || echo "$IWI_RIG_NCMD")" "$@"
