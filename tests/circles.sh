#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# No circles between the files of one folder (issue 12): within lib/engine/
# and within tools/replay/, file A may call file B or B may call A, never
# both, not even through other files of the folder; and no header of the
# folder may include itself back through other headers. A circle means
# that no file can be read, tested or changed without the others: the fix
# is a lower file for the shared pieces, or a result the caller acts on
# instead of a call back up.
#
# Calls are read from the compiled objects (nm: the global symbols each
# object defines and those it needs), so macros, comments and static
# functions of the same name cannot mislead it; includes from the headers.
# tsort finds the circles. Exit: 0 pass, 1 fail, 77 skip (no nm/tsort).
set -u
top=${IW_SRCDIR:-.}
build=${IW_BUILDDIR:-.}
command -v nm >/dev/null 2>&1 && command -v tsort >/dev/null 2>&1 || {
	echo "circles: SKIP: nm or tsort missing"
	exit 77
}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/iw_circles.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
bad=0

# The source file an object was compiled from: automake names objects
# <target>-<file>.o when a target has its own flags.
stem() {
	b=$(basename "$1" .o)
	echo "${b##*-}"
}

# edges OBJECTS...: "caller callee" for every global symbol one object
# needs that another object of the list defines.
edges() {
	for o in "$@"; do
		nm -g --defined-only "$o" 2>/dev/null | awk -v f="$(stem "$o")" 'NF == 3 { print $3, f }'
	done | sort -u >"$TMP/defs"
	for o in "$@"; do
		nm -u "$o" 2>/dev/null | awk -v f="$(stem "$o")" '{ print $NF, f }'
	done | sort -u >"$TMP/uses"
	# symbol caller + symbol callee -> caller callee
	join "$TMP/uses" "$TMP/defs" | awk '$2 != $3 { print $2, $3 }' | sort -u
}

# include_edges DIR: "a.h b.h" for every header of DIR including another.
include_edges() {
	for h in "$1"/*.h; do
		[ -f "$h" ] || continue
		sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h" | while read -r inc; do
			i=$(basename "$inc")
			[ -f "$1/$i" ] && [ "$i" != "$(basename "$h")" ] && echo "$(basename "$h") $i"
		done
	done | sort -u
}

# check NAME EDGES_FILE: report the circles tsort finds.
check() {
	if ! tsort "$2" >/dev/null 2>"$TMP/loop"; then
		echo "circles: $1: files call or include each other in a circle:"
		sed -n 's/^tsort: //p' "$TMP/loop" | grep -v 'input contains a loop' | sed 's/^/    /'
		awk '{ print "    " $1 " -> " $2 }' "$2" >"$TMP/all"
		echo "  (all edges of $1 follow)"
		cat "$TMP/all"
		bad=$((bad + 1))
	fi
}

dir_check() {
	name=$1 objs=$2 src=$3
	# shellcheck disable=SC2086
	set -- $objs
	[ -f "$1" ] || {
		echo "circles: FAIL: no objects for $name ($objs): build first"
		bad=$((bad + 1))
		return
	}
	edges "$@" >"$TMP/calls"
	n=$(wc -l <"$TMP/calls")
	[ "$n" -gt 3 ] || {
		echo "circles: FAIL: only $n calls found between the files of $name"
		bad=$((bad + 1))
		return
	}
	check "$name (calls)" "$TMP/calls"
	include_edges "$src" >"$TMP/incs"
	[ -s "$TMP/incs" ] && check "$name (headers)" "$TMP/incs"
	echo "circles: $name: $n calls between $# files"
}

dir_check lib/engine "$(ls "$build"/lib/engine/*.o 2>/dev/null | tr '\n' ' ')" "$top/lib/engine"
dir_check tools/replay "$(ls "$build"/tools/replay/*.o 2>/dev/null | tr '\n' ' ')" "$top/tools/replay"
if [ "$bad" -ne 0 ]; then
	echo "circles: FAIL"
	exit 1
fi
exit 0
