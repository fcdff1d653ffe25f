#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Who receives under iwarp-run (tests/compat_poll.c): by default the thread
# that busy-polls ibv_poll_cq (libiwarp's run-to-completion mode), so the
# loop threads sleep through a ping-pong; with IWARP_POLL=0 the loop
# threads receive; IWARP_LOOPS sets how many loop threads run, and a value
# that is not a count makes ibv_open_device fail with EINVAL.
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
P=$B/tests/compat_poll
rc=0
timeout 60 "$RUN" "$P" poll || rc=1
IWARP_POLL=1 IWARP_LOOPS=1 timeout 60 "$RUN" "$P" poll 1 || rc=1
IWARP_POLL=0 IWARP_LOOPS=3 timeout 60 "$RUN" "$P" loop 3 || rc=1
IWARP_LOOPS=2x timeout 60 "$RUN" "$P" badloops || rc=1
exit $rc
