#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Silent-peer detection (issue 16): tests/liveness between two network
# namespaces made here and joined by a veth pair. One end goes silent (a
# blackhole route: its packets vanish, no RST, no ICMP) and the other must
# find out by itself within the time its options give: TCP_USER_TIMEOUT
# with data outstanding, then keepalive on an idle connection (set on the
# listener, inherited by the accepted id). A few seconds in all.
#
# Needs root and ip(8) with veth; otherwise SKIP (exit 77).
set -u

B=${IW_BUILDDIR:-.}
PROG=$B/tests/liveness

skip() { echo "liveness: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null 2>&1 || skip "no ip(8) (iproute2)"
command -v timeout >/dev/null 2>&1 || skip "no timeout(1)"
[ -x "$PROG" ] || { echo "liveness: $PROG not built" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_live.XXXXXX") || exit 1
TAG=iwlive-$$-$(basename "$TMP" | sed 's/.*\.//')
NSA=$TAG-a
NSB=$TAG-b
ADDR_A=10.213.92.1
ADDR_B=10.213.92.2

cleanup() {
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# A fresh pair of namespaces per mode: a blackhole route stays until then.
setup() {
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	ip netns add "$NSA" || skip "cannot create a network namespace"
	ip netns add "$NSB" || skip "cannot create a network namespace"
	ip link add lva netns "$NSA" type veth peer name lvb netns "$NSB" ||
		skip "cannot create a veth pair"
	ip -n "$NSA" addr add $ADDR_A/24 dev lva &&
		ip -n "$NSB" addr add $ADDR_B/24 dev lvb &&
		ip -n "$NSA" link set lva up && ip -n "$NSB" link set lvb up &&
		ip -n "$NSA" link set lo up && ip -n "$NSB" link set lo up ||
		{ echo "liveness: namespace setup failed" >&2; exit 1; }
}

rc=0
for mode in user-timeout keepalive; do
	setup
	if ! timeout 60 "$PROG" $mode "$NSA" "$NSB" $ADDR_A $ADDR_B; then
		echo "liveness: $mode FAILED" >&2
		rc=1
	fi
done
exit $rc
