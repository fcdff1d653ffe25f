#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The drop-in libraries export what Debian's programs import: every
# IBVERBS_*, RDMACM_*, MLX5_* and EFA_* symbol (name and version) that
# rping, perftest's ib_*_bw/ib_*_lat, fio (its rdma engine is built in)
# and qperf import is exported by compat/.libs. They are linked with
# BIND_NOW: one missing symbol and the program does not start.
# And libibverbs.so.1 and librdmacm.so.1 export exactly rdma-core's version
# nodes, symbol by symbol, when the system's libraries are there to compare
# (IBVERBS_PRIVATE_*, the provider interface, excepted; our private node
# IWARP_COMPAT_PRIVATE excepted).
set -u
. "${IW_SRCDIR:-.}/tests/compat_lib.sh"
need objdump

exports() { # "VERSION NAME" lines of a library's defined dynamic symbols
	objdump -T "$1" | awk 'NF >= 7 && $4 != "*UND*" { print $(NF-1), $NF }' |
		grep -v -e PRIVATE -e '^Base ' | sort -u
}

imports() { # "VERSION NAME" lines of the rdma-core symbols a program imports
	objdump -T "$1" | awk '$3 == "*UND*" && $(NF-1) ~ /^\(?(IBVERBS|RDMACM|MLX5|EFA)_/ { print $(NF-1), $NF }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" ${wrap:+"$wrap"}' EXIT
for l in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1; do
	exports "$IWARP_COMPAT_DIR/$l"
done | sed 's/^(\(.*\))/\1/' | sort -u >"$tmp/ours"

fail=0
checked=0
for prog in /usr/bin/rping /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw \
	/usr/bin/ib_write_lat /usr/bin/ib_read_lat /usr/bin/ib_send_lat /usr/bin/ib_atomic_bw \
	/usr/bin/ib_atomic_lat /usr/bin/fio /usr/bin/qperf; do
	[ -x "$prog" ] || continue
	checked=$((checked + 1))
	imports "$prog" | sed 's/^(\(.*\))/\1/' | sort -u >"$tmp/want"
	missing=$(comm -23 "$tmp/want" "$tmp/ours")
	if [ -n "$missing" ]; then
		echo "FAIL: $prog imports what compat/ does not export:"
		echo "$missing" | sed 's/^/  /'
		fail=1
	else
		echo "ok: $prog: $(wc -l <"$tmp/want") imports, all exported"
	fi
done

for l in libibverbs.so.1 librdmacm.so.1; do
	real=/usr/lib/x86_64-linux-gnu/$l
	[ -e "$real" ] || continue
	checked=$((checked + 1))
	exports "$real" >"$tmp/real"
	exports "$IWARP_COMPAT_DIR/$l" | grep -v IWARP_COMPAT_PRIVATE >"$tmp/mine"
	if ! diff -u "$tmp/real" "$tmp/mine" >"$tmp/diff"; then
		echo "FAIL: $l: version nodes differ from rdma-core's ($real):"
		sed 's/^/  /' "$tmp/diff"
		fail=1
	else
		echo "ok: $l: $(wc -l <"$tmp/real") versioned symbols, as rdma-core's"
	fi
done
[ $checked -gt 0 ] || skip "no rdma-core program or library to compare with (scripts/deps.sh --test)"
exit $fail
