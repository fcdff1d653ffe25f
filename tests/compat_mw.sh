#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Memory windows through rdma-core's API under iwarp-run: tests/compat_mw
# (compiled against rdma-core's headers) binds type 1 and type 2 windows on
# a connection to itself over 127.0.0.1 and uses, rebinds, unbinds and
# invalidates them (see its header comment). It must exit 0.
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
timeout 60 "$RUN" "$B/tests/compat_mw"
