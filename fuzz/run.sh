#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: fuzz/run.sh [SECONDS [TARGET...]]  (from the build directory;
#                                  `make fuzz-run`, `make fuzz-long`)
#
# Runs every libFuzzer target that `make fuzz` built for SECONDS each
# (default 60), starting from the minimized corpus committed in the tree
# (fuzz/corpus/TARGET/, see fuzz/minimize.sh) plus seeds from the vector
# files (fuzz_qp_rx also from the conversations fuzz/seed_qp.py writes
# against its memory layout; the replay and pcap targets from
# fuzz/seed_replay.py's captures). Corpora, logs and crash artifacts go to
# fuzz/ under the build directory: they are build output.
# Ends with a table (executions, exec/s, coverage per target) and one line
# naming the failed targets, each failure's ERROR/SUMMARY lines repeated
# below it: CI shows only the tail of the output.
# Exits non-zero if a target crashed or could not run.
#
# For campaigns (make fuzz-long) on a machine that does other work:
#   FUZZ_JOBS=N      run the targets in N lanes at once (dealt in turn),
#                    each lane one target at a time; default 1
#   FUZZ_NICE=K      run the fuzzers at nice K (idle cycles only at 19)
#   FUZZ_TIMEOUT=S   libFuzzer's -timeout (default 10). It is wall-clock
#                    time: at nice 19 under load an input can wait longer
#                    than 10 s for a CPU, which libFuzzer reports as a hang
#                    (seen: three "timeouts" in one campaign whose inputs
#                    ran in under 0.2 s alone). Campaigns use 900.
set -u

secs=${1:-60}
# A UBSan report is a failure like a crash (the targets are built with
# -fsanitize=undefined, which only warns by default).
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export UBSAN_OPTIONS
# ASan keeps freed memory in a 256 MiB quarantine by default, so a target
# that allocates per input cycles through 256 MiB of cold memory that the
# allocator periodically returns to the kernel: fuzz_replay_capture took
# about one page fault per execution, and page faults plus the allocator
# were a third of its time (perf, cpu-clock). Every input here allocates a
# few hundred KiB at most, so 16 MiB still catches a use after free within
# an input and long after it: minor faults per 100,000 executions fell
# from 142,000-167,000 to 77,000-105,000 and CPU time by 15-30 % (loaded
# machine, same seed and corpus).
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16}
export ASAN_OPTIONS
case $secs in '' | *[!0-9]*) echo "run.sh: SECONDS must be a number" >&2; exit 2 ;; esac
srcdir=$(cd "$(dirname "$0")/.." && pwd)
shift $(($# > 0 ? 1 : 0))
targets="fuzz_mpa_frame fuzz_fpdu_rx fuzz_qp_rx fuzz_nvmf_capsule"
targets="$targets fuzz_replay_capture fuzz_replay_reasm fuzz_pcap_roundtrip fuzz_conn"
[ $# -gt 0 ] && targets="$*"
jobs=${FUZZ_JOBS:-1}
nice=${FUZZ_NICE:-0}
tmo=${FUZZ_TIMEOUT:-10}
case $jobs$nice$tmo in *[!0-9]*) echo "run.sh: FUZZ_JOBS, FUZZ_NICE and FUZZ_TIMEOUT are numbers" >&2; exit 2 ;; esac

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

# libFuzzer's entropic schedule keeps a list of the rarest features, and
# searches it for every feature of every execution; the list is only cut
# back to its 100 entries once its most frequent one was seen more than this
# threshold (default 255) times. Targets that reach thousands of features
# at a few thousand executions a second spent two thirds of their time in
# that search (perf: InputCorpus::UpdateFeatureFrequency); at 2 the list
# stays short and fuzz_qp_rx runs 3x the executions per CPU second, with
# the same coverage.
FUZZ_FLAGS=${FUZZ_FLAGS:--entropic_feature_frequency_threshold=2}
# Per target, after FUZZ_FLAGS (the last of a repeated option wins).
# fuzz_conn at 2 still spent 42% of its time in that search (perf, a 10 s
# run from the committed corpus): the list is cut back only when a new
# feature is added, and fuzz_conn finds few once its corpus is loaded, so
# the list of its ~12,900 loaded features stayed long. At 1 it ran 1.6x
# the executions per CPU second (17,082 against 10,440 in 30 s runs, the
# same cov and ft) but still spent 32% there; at 0 (the list always cut
# to the 100 rarest) 5%. The other targets spend 1-2% there and keep 2.
target_flags() {
	case $1 in
	fuzz_conn) echo -entropic_feature_frequency_threshold=0 ;;
	esac
}

# fuzz_qp_rx keeps its QP, SRQ and MRs across inputs and makes them anew
# in place between them (fuzz/fuzz_qp_rx.c). Every input of the corpus a
# run leaves must then make the same things happen (FUZZ_QP_DIGEST: its
# completions, events, output octets and memory, fuzz/digest.c) whichever
# inputs ran before it: the corpus in name order, in reverse, and with
# every object made anew for each input (FUZZ_QP_FRESH=1) give each input
# one digest. Appends its verdict to the target's log; 0 if it holds.
keep_check() {
	bin=$1
	dir=$2
	log=$3
	out=fuzz/keep-check
	rm -rf "$out"
	mkdir -p "$out"
	ls -d "$dir"/* >"$out/files" || return 1
	sort -r "$out/files" >"$out/files-r"
	# shellcheck disable=SC2046 # one argument per corpus file
	if ! { FUZZ_QP_DIGEST=$out/a "$bin" $(cat "$out/files") >"$out/a.log" 2>&1 &&
		FUZZ_QP_DIGEST=$out/b "$bin" $(cat "$out/files-r") >"$out/b.log" 2>&1 &&
		FUZZ_QP_FRESH=1 FUZZ_QP_DIGEST=$out/c "$bin" $(cat "$out/files") >"$out/c.log" 2>&1; }; then
		echo "keep_check: ERROR: $bin failed on its corpus (logs in $out)" >>"$log"
		return 1
	fi
	# libFuzzer runs some inputs twice (its leak check): one line each.
	sort -u "$out/a" "$out/b" "$out/c" >"$out/all"
	inputs=$(cut -d' ' -f1 "$out/all" | sort -u | wc -l)
	if [ "$inputs" -ne "$(wc -l <"$out/all")" ] || [ "$inputs" -eq 0 ]; then
		echo "keep_check: ERROR: $(($(wc -l <"$out/all") - inputs)) inputs of $inputs" \
			"depend on what ran before them ($out/all: input hash, digest)" >>"$log"
		return 1
	fi
	echo "keep_check: $inputs inputs, each the same in 3 runs" >>"$log"
}

# One target: its log in fuzz/TARGET.log, its table row in fuzz/TARGET.row
# (a failure marked FAILED there), progress on stdout.
run_one() {
	t=$1
	bin=fuzz/$t
	if [ ! -x "$bin" ]; then
		echo "run.sh: $bin missing (run 'make fuzz' first)" >&2
		printf '%-22s %s\n' "$t" 'not built FAILED' >"fuzz/$t.row"
		return
	fi
	mkdir -p "fuzz/corpus-$t" "fuzz/artifacts-$t"
	# The committed corpus (cp: a read-only source tree stays untouched).
	if [ -d "$srcdir/fuzz/corpus/$t" ]; then
		cp "$srcdir/fuzz/corpus/$t"/* "fuzz/corpus-$t/" 2>/dev/null
		chmod u+w "fuzz/corpus-$t"/* 2>/dev/null
	fi
	log=fuzz/$t.log
	echo "== $t: ${secs}s, corpus fuzz/corpus-$t, log $log"
	# shellcheck disable=SC2086,SC2046 # FUZZ_FLAGS and target_flags are lists of options
	nice -n "$nice" "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout="$tmo" \
		-print_final_stats=1 $FUZZ_FLAGS $(target_flags "$t") \
		-artifact_prefix="fuzz/artifacts-$t/" "fuzz/corpus-$t" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && [ "$t" = fuzz_qp_rx ]; then
		keep_check "$bin" "fuzz/corpus-$t" "$log" || rc=1
		tail -n 1 "$log"
	fi
	# The last status line carries the coverage reached and the run count.
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	echo "$last"
	grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log"
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p')
	res=ok
	if [ $rc -ne 0 ]; then
		echo "== $t: FAILED (exit $rc); see $log"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -n 5
		res=FAILED
	else
		echo "== $t: ok"
	fi
	# shellcheck disable=SC2086 # cov is two fields
	printf '%-22s %12s %9s %6s %7s  %s\n' "$t" "${runs:-?}" "${rate:-?}" ${cov:-? ?} "$res" \
		>"fuzz/$t.row"
}

# Lane i of FUZZ_JOBS takes targets i, i + FUZZ_JOBS, ... in turn; with
# more than one lane each lane's progress goes to fuzz/lane-i.out and is
# shown when all lanes are done.
lane() {
	i=0
	for t in $targets; do
		[ $((i % jobs)) -eq "$1" ] && run_one "$t"
		i=$((i + 1))
	done
}

for t in $targets; do rm -f "fuzz/$t.row"; done
if [ "$jobs" -le 1 ]; then
	lane 0
else
	l=0
	while [ "$l" -lt "$jobs" ]; do
		lane "$l" >"fuzz/lane-$l.out" 2>&1 &
		l=$((l + 1))
	done
	wait
	l=0
	while [ "$l" -lt "$jobs" ]; do
		cat "fuzz/lane-$l.out"
		l=$((l + 1))
	done
fi

status=0
failed=
table=
for t in $targets; do
	row=$(cat "fuzz/$t.row" 2>/dev/null || printf '%-22s %s' "$t" 'no result FAILED')
	case $row in *FAILED*)
		status=1
		failed="$failed $t"
		;;
	esac
	table="$table$row
"
done

# The table and verdict, also kept in fuzz/summary.txt (make fuzz-long
# prints it again after the coverage report).
{
	echo
	echo "== summary: ${secs}s per target (load average:" \
		"$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
	printf '%-22s %12s %9s %6s %7s  %s\n' target executions exec/s cov ft result
	printf '%s' "$table"
	for t in $failed; do
		echo "-- $t (fuzz/$t.log):"
		grep -E 'ERROR|SUMMARY|Test unit written' "fuzz/$t.log" 2>/dev/null | head -n 5
	done
	if [ -n "$failed" ]; then
		echo "run.sh: FAILED:$failed"
	else
		echo "run.sh: all targets ok"
	fi
} | tee fuzz/summary.txt
exit $status
