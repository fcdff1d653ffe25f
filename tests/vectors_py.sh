#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Check rfc-vectors/*.iwv with the Python side of the project:
#  1. the shared checker (../shared/reference/vectors/verify_vectors.py next to
#     the source tree; our copy if that does not exist), per file;
#  2. our extended copy rfc-vectors/verify_vectors.py (new kinds, reference
#     decoder), per file;
#  3. scripts/gen_vectors.py re-run into a temporary directory: every
#     generated file must be byte-identical to the committed one.
# Env: IW_SRCDIR (top source dir, default: this script's ..), PYTHON3.
# Exit 77 (skip) only when no python3 is available.

srcdir=${IW_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
py=${PYTHON3:-python3}
if ! command -v "$py" >/dev/null 2>&1 || ! "$py" -c 'import sys; sys.exit(sys.version_info[0] != 3)' >/dev/null 2>&1; then
	echo "SKIP: no python3 (PYTHON3='$py')"
	exit 77
fi

vdir="$srcdir/rfc-vectors"
own="$vdir/verify_vectors.py"
shared="$srcdir/../shared/reference/vectors/verify_vectors.py"
if [ ! -f "$shared" ]; then
	echo "note: $shared not found; using our copy as the shared checker"
	shared="$own"
fi

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iwv.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

nfiles=0
for f in "$vdir"/*.iwv; do
	[ -f "$f" ] || continue
	nfiles=$((nfiles + 1))
	b=$(basename "$f")
	if "$py" "$shared" "$f" >"$tmp/out" 2>&1; then ok; else bad "shared checker on $b"; cat "$tmp/out"; fi
	if "$py" "$own" "$f" >"$tmp/out" 2>&1; then ok; else bad "extended checker on $b"; cat "$tmp/out"; fi
done
[ "$nfiles" -gt 0 ] && ok || bad "no *.iwv files in $vdir"

# At least 80 vectors in total.
n=$(cat "$vdir"/*.iwv | grep -c '^vector ')
if [ "$n" -ge 80 ]; then ok; else bad "only $n vectors (want >= 80)"; fi

# The generator must reproduce the committed files exactly.
mkdir "$tmp/gen"
if "$py" "$srcdir/scripts/gen_vectors.py" --out "$tmp/gen" >"$tmp/out" 2>&1; then
	ok
	for g in "$tmp/gen"/*.iwv; do
		b=$(basename "$g")
		if cmp -s "$g" "$vdir/$b"; then ok; else
			bad "$b differs from scripts/gen_vectors.py output (re-run: python3 scripts/gen_vectors.py --out rfc-vectors)"
			diff -u "$vdir/$b" "$g" | head -20
		fi
	done
	for f in "$vdir"/gen_*.iwv; do
		[ -f "$f" ] || continue
		[ -f "$tmp/gen/$(basename "$f")" ] || bad "$(basename "$f") is not produced by the generator any more"
	done
else
	bad "scripts/gen_vectors.py failed"
	cat "$tmp/out"
fi

# Informational: the copied shared files should match their origin.
sdir=$(dirname "$shared")
for f in "$vdir"/*.iwv; do
	b=$(basename "$f")
	case "$b" in gen_*) continue ;; esac
	if [ -f "$sdir/$b" ] && ! cmp -s "$f" "$sdir/$b"; then
		echo "note: $b differs from $sdir/$b"
	fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
