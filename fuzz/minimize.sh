#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: fuzz/minimize.sh [TARGET...]   (from the build directory, after
#                                        `make fuzz-run` or `make fuzz-long`)
#
# Replaces the corpus committed in the tree (fuzz/corpus/TARGET/, the seed
# corpus fuzz/run.sh starts from) with the smallest set of inputs that
# keeps every feature of the committed one and of the build directory's
# fuzz/corpus-TARGET (libFuzzer -merge=1). Files are named by their SHA-1,
# as libFuzzer names them. Prints the sizes; commit the result.
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)
targets=${*:-"fuzz_mpa_frame fuzz_fpdu_rx fuzz_qp_rx fuzz_nvmf_capsule
	fuzz_replay_capture fuzz_replay_reasm fuzz_pcap_roundtrip fuzz_conn"}
status=0
for t in $targets; do
	keep=$srcdir/fuzz/corpus/$t
	new=fuzz/min-$t
	if [ ! -x "fuzz/$t" ]; then
		echo "minimize.sh: fuzz/$t missing (make fuzz)" >&2
		status=1
		continue
	fi
	rm -rf "$new"
	mkdir -p "$new" "$keep" "fuzz/corpus-$t"
	if ! "fuzz/$t" -merge=1 -rss_limit_mb=2048 -timeout=10 "$new" "$keep" "fuzz/corpus-$t" \
		>"fuzz/min-$t.log" 2>&1; then
		echo "minimize.sh: $t: merge failed; see fuzz/min-$t.log" >&2
		status=1
		continue
	fi
	rm -rf "$keep"
	mv "$new" "$keep"
	echo "$t: $(ls "$keep" | wc -l) inputs, $(du -sk "$keep" | cut -f1) kB"
done
echo "total: $(du -sk "$srcdir/fuzz/corpus" | cut -f1) kB in $srcdir/fuzz/corpus"
exit $status
