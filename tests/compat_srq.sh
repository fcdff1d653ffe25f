#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The order of an SRQ's receives under iwarp-run (tests/compat_srq.c):
# oldest first by default and with IWARP_SRQ_ORDER=oldest, the receive
# posted last first with IWARP_SRQ_ORDER=newest, and any other value
# makes ibv_create_srq fail with EINVAL.
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
P=$B/tests/compat_srq
rc=0
timeout 60 "$RUN" "$P" oldest || rc=1
IWARP_SRQ_ORDER=oldest timeout 60 "$RUN" "$P" oldest || rc=1
IWARP_SRQ_ORDER=newest timeout 60 "$RUN" "$P" newest || rc=1
IWARP_SRQ_ORDER=lifo timeout 60 "$RUN" "$P" bad || rc=1
exit $rc
