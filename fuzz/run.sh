#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: fuzz/run.sh [SECONDS]     (from the build directory; `make fuzz-run`)
#
# Runs every libFuzzer target that `make fuzz` built for SECONDS each
# (default 60), seeded from the vector files (fuzz_qp_rx also from the
# conversations fuzz/seed_qp.py writes against its memory layout; the
# replay and pcap targets from fuzz/seed_replay.py's captures). Corpora,
# logs and crash artifacts go to fuzz/ under the build directory: they are
# build output.
# Exits non-zero if a target crashed or could not run.
set -u

secs=${1:-60}
# A UBSan report is a failure like a crash (the targets are built with
# -fsanitize=undefined, which only warns by default).
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export UBSAN_OPTIONS
case $secs in '' | *[!0-9]*) echo "run.sh: SECONDS must be a number" >&2; exit 2 ;; esac
srcdir=$(cd "$(dirname "$0")/.." && pwd)
targets="fuzz_mpa_frame fuzz_fpdu_rx fuzz_qp_rx fuzz_nvmf_capsule"
targets="$targets fuzz_replay_capture fuzz_replay_reasm fuzz_pcap_roundtrip fuzz_conn"

# Vector files: $IW_VECTOR_DIR, else the tree's rfc-vectors/, else the
# shared reference set the tree's files were copied from.
vecdir=${IW_VECTOR_DIR:-$srcdir/rfc-vectors}
if ! ls "$vecdir"/*.iwv >/dev/null 2>&1; then
	vecdir=$srcdir/../shared/reference/vectors
fi
if ls "$vecdir"/*.iwv >/dev/null 2>&1; then
	python3 "$srcdir/fuzz/seed_from_vectors.py" fuzz "$vecdir"/*.iwv ||
		echo "run.sh: warning: some corpus got no seeds" >&2
else
	echo "run.sh: warning: no *.iwv vectors found; starting from empty corpora" >&2
fi
# Its conversations need no vector file; the vectors are added when found.
python3 "$srcdir/fuzz/seed_qp.py" fuzz $(ls "$vecdir"/*.iwv 2>/dev/null) ||
	echo "run.sh: warning: fuzz_qp_rx got no seeds" >&2
# Small captures, reassembly cases and writer runs, written by the script.
python3 "$srcdir/fuzz/seed_replay.py" fuzz ||
	echo "run.sh: warning: the replay and pcap targets got no seeds" >&2

python3 "$srcdir/fuzz/seed_conn.py" fuzz || echo "run.sh: warning: fuzz_conn got no seeds" >&2

status=0
for t in $targets; do
	bin=fuzz/$t
	if [ ! -x "$bin" ]; then
		echo "run.sh: $bin missing (run 'make fuzz' first)" >&2
		status=1
		continue
	fi
	mkdir -p "fuzz/corpus-$t" "fuzz/artifacts-$t"
	log=fuzz/$t.log
	echo "== $t: ${secs}s, corpus fuzz/corpus-$t, log $log"
	"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="fuzz/artifacts-$t/" "fuzz/corpus-$t" >"$log" 2>&1
	rc=$?
	# The last status line carries the coverage reached and the run count.
	grep -E '^#[0-9]+' "$log" | tail -n 1
	grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log"
	if [ $rc -ne 0 ]; then
		echo "== $t: FAILED (exit $rc); see $log"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -n 5
		status=1
	else
		echo "== $t: ok"
	fi
done
exit $status
