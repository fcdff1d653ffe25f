#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The block example over 127.0.0.1: examples/blk_target (libiwarp in the
# application's event_base, one SRQ for every connection, per-I/O fast
# registration of RDMA READ sinks) serving four examples/blk_initiator at
# once, each on its own connection and its own 64 blocks. Data really
# moved when:
#  - each initiator read back, block by block, what it had written (its
#    buffers were filled with 0xEE before each read) and every response
#    was a Send with Invalidate of that I/O's STag (128 of 128);
#  - the target found blk_pattern in all 256 blocks the initiators wrote
#    into its zeroed disk, after 512 I/Os over 4 connections, and counted
#    no access refused for its STag (iw_query_stag_stats);
#  - all five exit 0.
# A second round with two initiators and blk_target -i (odd blocks answered
# with a plain Send) proves the other path: each initiator sees 64 responses
# without IW_WC_WITH_INV, revokes those grants with LOCAL_INV and reuses
# its MRs.
# Uses the programs of IW_BUILDDIR (set by `make check`; . otherwise).
set -u

B=${IW_BUILDDIR:-.}
TGT=$B/examples/blk_target
INI=$B/examples/blk_initiator
for p in "$TGT" "$INI"; do
	[ -x "$p" ] || { echo "blk_pair: $p not built" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_blk_pair.XXXXXX") || exit 1
TPID=
cleanup() {
	[ -n "$TPID" ] && kill "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# A hang is never a pass (sanitizer builds are slow: generous limit).
TO=
command -v timeout >/dev/null 2>&1 && TO="timeout 120"

fail() {
	echo "blk_pair: $*" >&2
	for f in "$TMP"/*.out; do
		[ -f "$f" ] && { echo "--- $f"; cat "$f"; } >&2
	done
	exit 1
}

# One round: the target (with the options in $2...) serving $1 initiators
# at once, initiator k on blocks 64k..64k+63. $INV: the responses each
# initiator must see with IW_WC_WITH_INV, of 128.
round() {
	n=$1
	shift
	: >"$TMP/target.out"
	# Port 0: the target takes a free port and prints it.
	$TO "$TGT" -n "$n" -b $((n * 64)) "$@" >"$TMP/target.out" 2>&1 &
	TPID=$!
	i=0
	PORT=
	while [ $i -lt 200 ]; do
		PORT=$(sed -n 's/^target: listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$TMP/target.out")
		[ -n "$PORT" ] && break
		kill -0 "$TPID" 2>/dev/null || fail "target exited before listening"
		sleep 0.05
		i=$((i + 1))
	done
	[ -n "$PORT" ] || fail "target did not listen"
	pids=
	k=0
	while [ $k -lt "$n" ]; do
		$TO "$INI" -p "$PORT" -o $((k * 64)) -c 64 >"$TMP/ini$k.out" 2>&1 &
		pids="$pids $!"
		k=$((k + 1))
	done
	k=0
	for p in $pids; do
		wait "$p" || fail "initiator $k exited with $?"
		first=$((k * 64))
		grep -q "^initiator: blocks $first\.\.$((first + 63)) written and read back, all match; $INV of 128 responses invalidated our STag, $((128 - INV)) LOCAL_INV$" \
			"$TMP/ini$k.out" || fail "initiator $k: no verification line"
		k=$((k + 1))
	done
	wait "$TPID" || { TPID=; fail "target exited with $?"; }
	TPID=
	grep -q "^target: $((n * 64)) blocks written by initiators verified; $((n * 128)) I/Os ($((n * 64)) reads, $((n * 64)) writes), $((n * 128 * 4096)) octets moved over $n connections$" \
		"$TMP/target.out" || fail "target: no verification line"
	grep -q "^target: 0 remote accesses refused for their STag$" "$TMP/target.out" ||
		fail "target: STag refusals counted (or no count)"
	echo "blk_pair: $n connections, $((n * 128)) I/Os of 4096 octets verified at both ends, $INV of 128 grants per connection revoked by the target (port $PORT)"
}

INV=128 round 4
# Odd blocks answered without invalidation: the initiators revoke those.
INV=64 round 2 -i
exit 0
