#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The shared library exports iw_* and nothing else, and every function the
# public headers declare (not static inline) is exported.
set -u
so="$IW_BUILDDIR/lib/.libs/libiwarp.so"
[ -f "$so" ] || { echo "exports: $so not built"; exit 1; }

exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRV]$/ {print $3}' | sed 's/@.*//' | sort -u)
fail=0; pass=0
bad=$(printf '%s\n' "$exported" | grep -v '^iw_' || true)
if [ -n "$bad" ]; then
	echo "exports: symbols outside iw_*:"; printf '  %s\n' $bad; fail=$((fail + 1))
else
	pass=$((pass + 1))
fi

# Declared functions: prototypes start in column 0 ('type iw_name('), inline ones excluded.
declared=$(cat "$IW_SRCDIR"/include/iwarp/*.h | grep -E '^[a-z]' | grep -v 'static inline' |
	grep -oE '\b(iw_[a-z0-9_]+)\(' | tr -d '(' | sort -u)
for f in $declared; do
	if printf '%s\n' "$exported" | grep -qx "$f"; then
		pass=$((pass + 1))
	else
		echo "exports: declared but not exported: $f"; fail=$((fail + 1))
	fi
done
echo "exports: $(printf '%s\n' "$exported" | wc -l) symbols exported"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
