#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: fuzz/cov.sh TARGET...     (from the build directory; `make fuzz-cov`)
#
# Line coverage that the corpora in fuzz/corpus-TARGET (left by fuzz/run.sh)
# reach, per source file: each target is rebuilt in fuzz/cov/ with the
# command make uses for it, clang's source-based coverage
# (-fprofile-instr-generate -fcoverage-mapping) instead of the sanitizers,
# runs its corpus once (-runs=0), and llvm-profdata and llvm-cov (Debian's
# llvm package; the versioned names of clang's version are tried too) merge
# and report the lot. Files of lib/ and tools/replay/ that no target is
# built from are listed after the table: nothing reaches them.
# Exits non-zero if a target could not be built or run.
set -u

CLANG=${CLANG:-clang}
MAKE=${MAKE:-make}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 TARGET..." >&2; exit 2; }

# llvm-profdata / llvm-cov, unversioned or of clang's major version.
ver=$("$CLANG" --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
tool() {
	for n in "$1" "$1-$ver"; do
		command -v "$n" >/dev/null 2>&1 && { echo "$n"; return 0; }
	done
	echo "fuzz/cov.sh: $1 not found (Debian: apt-get install llvm)" >&2
	return 1
}
PROFDATA=$(tool llvm-profdata) || exit 1
LLVMCOV=$(tool llvm-cov) || exit 1

out=fuzz/cov
mkdir -p "$out"
rm -f "$out"/*.profraw "$out"/all.profdata
status=0
objs=
for t in "$@"; do
	# make's own command for the target (printed, not run; the build
	# system's own files are never remade), with coverage for sanitizers.
	cmd=$($MAKE -s -n -B -o Makefile -o Makefile.in -o config.status -o configure \
		-o aclocal.m4 V=1 "fuzz/$t" 2>/dev/null | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
		grep -e "-o fuzz/$t[[:space:]]")
	if [ -z "$cmd" ]; then
		echo "fuzz/cov.sh: no build command for fuzz/$t" >&2
		status=1
		continue
	fi
	# The objects of sources compiled without comparison tracing
	# (fuzz/nocmp/, Makefile.am's FUZZ_NOCMP) carry the sanitizers:
	# their sources go in their place.
	cmd=$(printf '%s\n' "$cmd" | sed -e \
		's/-fsanitize=[^ ]*/-fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping/' \
		-e "s|-o fuzz/$t[[:space:]]|-o $out/$t |" \
		-e "s|[[:space:]]fuzz/nocmp/\([^[:space:]]*\)\.o| $srcdir/\1.c|g")
	if ! sh -c "$cmd" >"$out/$t.build.log" 2>&1; then
		echo "fuzz/cov.sh: building $out/$t failed; see $out/$t.build.log" >&2
		status=1
		continue
	fi
	objs="$objs $out/$t"
	if [ ! -d "fuzz/corpus-$t" ]; then
		echo "fuzz/cov.sh: $t: no corpus (run 'make fuzz-run' first); counted as nothing" >&2
		continue
	fi
	n=$(ls "fuzz/corpus-$t" | wc -l)
	echo "== $t: $n corpus inputs"
	LLVM_PROFILE_FILE="$out/$t-%p.profraw" "$out/$t" -runs=0 -rss_limit_mb=2048 \
		-timeout=30 "fuzz/corpus-$t" >"$out/$t.log" 2>&1 ||
		{ echo "fuzz/cov.sh: $t failed on its corpus; see $out/$t.log" >&2; status=1; }
done
[ -n "$objs" ] || exit 1
ls "$out"/*.profraw >/dev/null 2>&1 || { echo "fuzz/cov.sh: no profile written" >&2; exit 1; }
"$PROFDATA" merge -sparse "$out"/*.profraw -o "$out/all.profdata" || exit 1

# One line per source file (the harnesses and fuzz/pool.c left out): lines,
# lines never run, line coverage.
set -- $objs
first=$1
shift
others=
for o in "$@"; do others="$others -object $o"; done
# shellcheck disable=SC2086
"$LLVMCOV" report "$first" $others -instr-profile="$out/all.profdata" \
	-ignore-filename-regex='(^|/)fuzz/(fuzz_[^/]*|pool|digest)\.c$' >"$out/report.txt" || exit 1
awk -v root="$srcdir/" '
	/^Filename/ { printf "%-44s %7s %7s %8s\n", "file", "lines", "missed", "cover"; next }
	/^-+$/ || NF < 10 { next }
	{
		f = $1; sub("^" root, "", f); sub("^\\./", "", f)
		printf "%-44s %7s %7s %8s\n", f, $(NF - 5), $(NF - 4), $(NF - 3)
	}' "$out/report.txt"
# Library and replay files no target is built from.
for f in "$srcdir"/lib/*/*.c "$srcdir"/tools/replay/*.c; do
	rel=${f#"$srcdir"/}
	grep -q -e "$rel" "$out/report.txt" ||
		printf '%-44s %7s\n' "$rel" "in no target"
done
exit $status
