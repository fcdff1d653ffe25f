#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The man pages cannot fall behind the headers:
#  1. every function declared at column 0 in include/iwarp/*.h (static
#     inline helpers included) has man/man3/<name>.3, and no page is left
#     for a function that is gone;
#  2. every page renders with groff -man -ww without a warning (skipped
#     without groff);
#  3. scripts/gen_man.py, run into a temporary directory, reproduces the
#     committed man/ exactly (skipped without python3), except man/man1:
#     the programs' pages are hand-written;
#  4. no page points at text the reader of that page does not have: header
#     wording such as "this file", "the top of", "see there", an "above" or
#     "below" that is not a comparison ("above 512" is fine, "its rule
#     above" is not), or a file of the source tree that is not installed
#     (ARCHITECTURE.md, interop.md).
# Env: IW_SRCDIR (top source dir, default: this script's ..), PYTHON3.

srcdir=${IW_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
mandir="$srcdir/man"
py=${PYTHON3:-python3}

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iwman.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# 1. A page per declared function. A declaration starts in column 0 with a
# type and the first '(' on the line follows the function's name.
cat "$srcdir"/include/iwarp/*.h | grep -E '^[A-Za-z_]' | grep -v '^#' |
	sed -nE 's/^[^(]*[^A-Za-z0-9_](iw_[A-Za-z0-9_]+)\(.*/\1/p' | sort -u >"$tmp/declared"
n=$(wc -l <"$tmp/declared")
if [ "$n" -ge 90 ]; then ok; else bad "only $n functions found in include/iwarp/*.h"; fi
while read -r f; do
	if [ -f "$mandir/man3/$f.3" ]; then ok; else bad "no man page man/man3/$f.3"; fi
done <"$tmp/declared"
for p in "$mandir"/man3/*.3; do
	[ -f "$p" ] || continue
	b=$(basename "$p" .3)
	if grep -qx "$b" "$tmp/declared"; then ok; else bad "man/man3/$b.3 documents no declared function"; fi
done
if [ -f "$mandir/man7/libiwarp.7" ]; then ok; else bad "no man/man7/libiwarp.7"; fi

# 2. Rendering, as man -l would, with every groff warning enabled.
if command -v groff >/dev/null 2>&1; then
	for p in "$mandir"/man1/*.1 "$mandir"/man3/*.3 "$mandir"/man7/*.7; do
		[ -f "$p" ] || continue
		if groff -man -Tutf8 -ww -z "$p" >"$tmp/groff" 2>&1 && [ ! -s "$tmp/groff" ]; then
			ok
		else
			bad "groff warns on ${p#"$srcdir"/}:"
			head -5 "$tmp/groff"
		fi
	done
else
	echo "SKIP: groff not installed (apt-get install groff-base): rendering not checked"
fi

# 3. The committed pages are what the generator makes of the headers now.
if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info[0] != 3)' 2>/dev/null; then
	if "$py" "$srcdir/scripts/gen_man.py" --srcdir "$srcdir" --out "$tmp/gen" >"$tmp/out" 2>&1; then
		ok
		if diff -r -x man1 "$mandir" "$tmp/gen" >"$tmp/diff" 2>&1; then
			ok
		else
			bad "man/ differs from scripts/gen_man.py output (re-run: python3 scripts/gen_man.py)"
			head -40 "$tmp/diff"
		fi
	else
		bad "scripts/gen_man.py failed"
		cat "$tmp/out"
	fi
else
	echo "SKIP: no python3 (PYTHON3='$py'): pages not regenerated"
fi

# 4. Pages stand on their own. The text of a page, macros and font escapes
# dropped and lines joined, so that a phrase split over lines is found.
page_text() {
	grep -v '^\.\\"' "$1" | sed -e 's/^\.[A-Za-z]* *//' -e 's/\\f[BIRP]//g' \
		-e 's/\\-/-/g' -e 's/\\(bu//g' -e 's/\\&//g' | tr '\n' ' ' | tr -s ' '
}
# A comparison: "above"/"below" followed by a quantity (number, 2^n, an
# identifier, an acronym) or by what is compared against.
cmp_ok='^(above|below) (-?[0-9]|0x|2\^|[A-Za-z]*[_0-9][A-Za-z0-9_]*|[A-Z][A-Z]+|what |the |its |our |their |that |a |an |max)'
for p in "$mandir"/man3/*.3 "$mandir"/man7/*.7; do
	[ -f "$p" ] || continue
	t=$(page_text "$p")
	hits=$(printf '%s\n' "$t" | grep -oiE "this (file|header)|(top|bottom|end) of (this|the) (file|header)|see (there|here)|(described|given|listed|shown|defined|explained|stated|noted) (elsewhere|above|below)|ARCHITECTURE\.md|interop\.md|\.\./[a-z]+/" )
	refs=$(printf '%s\n' "$t" | grep -oiE "(^|[^A-Za-z0-9_])(above|below)( [^ ]+ ?)?" |
		sed -E 's/^[^A-Za-z]+//' | grep -viE "$cmp_ok")
	if [ -z "$hits$refs" ]; then
		ok
	else
		bad "${p#"$srcdir"/} refers to text it does not contain:" $hits $refs
	fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
