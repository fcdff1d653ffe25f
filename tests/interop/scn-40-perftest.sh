#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Scenario 40 (issue 5): iwarp-perf against perftest run with -R (rdma_cm) on
# siw in the guest, and the same tests siw<->siw inside the guest.
#
# For ib_write_bw, ib_read_bw, ib_send_bw (64 B, 4 KiB, 64 KiB, 1 MiB) and
# ib_write_lat, ib_send_lat (64 B, 4 KiB, 64 KiB), in two roles:
#   client  iwarp-perf (our namespace) -> perftest server in the guest
#   server  perftest client in the guest -> iwarp-perf --server
# a case passes when both programs exit 0, each printed its result row for
# that size and count, and the figures are real: bandwidth above 0, latency
# above 0 and finite. perftest derives its clock from an rdtsc regression,
# which TCG spoiled in about half the runs while the guest kept time with
# the HPET ("Correlation coefficient r^2 < 0.9", then 0.00 MB/sec or inf
# usec); the rig now boots the guest with the TSC as its clocksource
# (rig/start.sh), and a run whose clock still fails is repeated, at most
# twice. A run that still has no clock is judged on iwarp-perf's figures and
# says so.
# Then the baseline: the same tests and sizes siw<->siw in the guest (server
# on vCPU 1, client on vCPU 0), all in one guest command.
# $IWI_OUT/perf.md gets the table (the client's figure in every column:
# perftest's client is what measures a write or read bandwidth) and the
# commands; $IWI_OUT/scn40/ keeps each run's output.
#
# iwarp-perf runs with --crc off: siw never asks for the MPA CRC, so
# siw<->siw runs without it, and the comparison is like for like
# (SCN40_CRC=on turns it on for the whole matrix). Two more cases per role
# run with the CRC on (ib_write_bw 64 KiB, ib_send_bw 4 KiB), and a raw TCP
# stream from the guest to the host is timed for reference.
# The whole run keeps to SCN40_BUDGET seconds (default 690): cases that
# would start after it are SKIPped.
# Env (for development): SCN40_TESTS, SCN40_SIZES_BW, SCN40_SIZES_LAT,
# SCN40_CRC_CASES (test:size words; empty: none), SCN40_CRC, SCN40_BUDGET.
# Ports: 18600-18649 for the interop runs, 18650 for raw TCP,
# 18660-18699 for the baseline; a fresh one for every run so a lingering
# listener cannot interfere.
set -u
. "$(dirname "$0")/lib.sh"

SCN=perftest
PERF=$T/iwarp-perf
D=$IWI_OUT/scn40
MD=$IWI_OUT/perf.md
CRC=${SCN40_CRC:-off}
BUDGET=${SCN40_BUDGET:-690}
RESERVE=150 # of the budget, for the baseline (about 100 s) and the table
SIZES_BW=${SCN40_SIZES_BW:-"64 4096 65536 1048576"}
SIZES_LAT=${SCN40_SIZES_LAT:-"64 4096 65536"}
TESTS=${SCN40_TESTS:-"write read send write_lat send_lat"}
CRC_CASES=${SCN40_CRC_CASES-"write:65536 send:4096"} # test:size, run with --crc on
RUN_LIMIT=60 # seconds for one program's run (the longest takes a few)
mkdir -p "$D"
: >"$D/commands.txt"
t_start=$(date +%s)
port=18599

declare -A CELL  # "test size role" -> the client's figure for the table
declare -A NOTE  # "test size role" -> a footnote mark
CUR_CRC=$CRC     # the MPA CRC of the case being run

next_port() {
	port=$((port + 1))
	[ "$port" -le 18649 ] || port=18600
}

# Seconds left for interop cases: the budget less the baseline's reserve.
left() { echo $((BUDGET - RESERVE - ($(date +%s) - t_start))); }

# tool_of TEST: the perftest program (write -> ib_write_bw, write_lat ->
# ib_write_lat).
tool_of() { case $1 in *_lat) echo "ib_$1" ;; *) echo "ib_$1_bw" ;; esac; }
is_lat() { case $1 in *_lat) return 0 ;; esac; return 1; }

# Counts that keep each run near a second under TCG (~10-60 MB/s, latency
# in the hundreds of microseconds); send_bw at 64 B and 4 KiB runs past
# its 512 receives so the credit words are exercised.
iters_of() {
	local t=$1 s=$2
	if is_lat "$t"; then
		case $s in 65536) echo 100 ;; *) echo 300 ;; esac
	else
		case $s in 64) echo 2000 ;; 4096) echo 1000 ;; 65536) echo 200 ;; *) echo 20 ;; esac
	fi
}

# ------------------------------------------------------------ parsing

# pt_line LOG SIZE ITERS: perftest's result row for that size and count.
pt_line() { awk -v s="$2" -v n="$3" '$1 == s && $2 == n { print; exit }' "$1"; }

# pt_fig TEST LINE: the figure of a perftest row, empty when it is not real:
# BW average [MB/sec] (column 4), or t_typical and t_avg [usec] (5 and 6).
pt_fig() {
	local t=$1 line=$2
	if is_lat "$t"; then
		echo "$line" | awk '$5 + 0 > 0 && $5 !~ /inf|nan/ && $6 !~ /inf|nan/ { printf "%.2f/%.2f", $5, $6 }'
	else
		echo "$line" | awk '$4 + 0 > 0 && $4 !~ /inf|nan/ { printf "%.2f", $4 }'
	fi
}

# pt_clockless LOG: perftest said its clock regression failed.
pt_clockless() { grep -q 'Correlation coefficient' "$1"; }

# iw_fig TEST JSON SIZE ITERS: iwarp-perf's figure when its one row is that
# size and count and the figures are real; "unreal" when the row is there
# but its figures are zero or not finite (a write or read server prints the
# client's report: perftest's figures); nothing without such a row.
iw_fig() {
	python3 - "$1" "$2" "$3" "$4" <<'EOF'
import json, math, sys
t, path, size, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
try:
    rows = json.load(open(path))["results"]
except Exception:
    sys.exit(0)
if len(rows) != 1 or rows[0]["bytes"] != size or rows[0]["iterations"] != iters:
    sys.exit(0)
r = rows[0]
if t.endswith("_lat"):
    keys = ("t_typical_us", "t_avg_us", "t_max_us")
    real = all(math.isfinite(r[k]) for k in keys) and 0 < r["t_typical_us"] <= r["t_max_us"]
    fig = "%.2f/%.2f" % (r["t_typical_us"], r["t_avg_us"])
else:
    real = math.isfinite(r["bw_avg_MiBps"]) and r["bw_avg_MiBps"] > 0
    fig = "%.2f" % r["bw_avg_MiBps"]
print(fig if real else "unreal")
EOF
}

cmdlog() { printf '%s\n' "$*" >>"$D/commands.txt"; }

# ------------------------------------------------------------ guest jobs

# srv_start NAME PORT CMD: start CMD in the guest in the background (output
# in /tmp/NAME.log, status in /tmp/NAME.rc, as guest_bg) and wait in the
# same guest command until it listens on PORT: 0 listening, 1 not within
# 20 s, 2 it ended first. One guest command instead of two: each costs
# about 2 s under TCG.
srv_start() {
	local name=$1 p=$2
	shift 2
	gx -t 40 "rm -f /tmp/$name.rc /tmp/$name.log; (sh -c '$*' & echo \$! > /tmp/$name.pid; wait \$!; echo \$? > /tmp/$name.rc) > /tmp/$name.log 2>&1 < /dev/null & i=0; while [ \$i -lt 200 ]; do ss -ltnH 2>/dev/null | awk '{print \$4}' | grep -q ':$p\$' && exit 0; [ -s /tmp/$name.rc ] && exit 2; sleep 0.1; i=\$((i+1)); done; exit 1"
}

# srv_finish NAME SECS: wait up to SECS for a srv_start job, kill what is
# left of it, and print "rc=N" (124: it had to be killed) and its log.
srv_finish() {
	local name=$1 secs=$2
	gx -t $((secs + 20)) "i=0; while [ ! -s /tmp/$name.rc ] && [ \$i -lt $((secs * 10)) ]; do sleep 0.1; i=\$((i+1)); done; if [ -s /tmp/$name.rc ]; then echo rc=\$(cat /tmp/$name.rc); else echo rc=124; kt() { for c in \$(ps -o pid,ppid | awk -v p=\$1 '\$2==p{print \$1}'); do kt \$c; done; kill -9 \$1 2>/dev/null; }; p=\$(cat /tmp/$name.pid 2>/dev/null) && kt \$p; fi; cat /tmp/$name.log"
}

# ------------------------------------------------------------ one case

# The outcome of the last attempt, for the callers below.
A_RC_IW='' A_RC_PT='' A_IW='' A_PT='' A_PTLINE='' A_CLOCKLESS=''

# attempt_client TEST SIZE ITERS TAG: iwarp-perf -> perftest server.
attempt_client() {
	local t=$1 s=$2 n=$3 tag=$4 tool
	tool=$(tool_of "$t")
	next_port
	local pt="taskset -c 1 $tool -R -d siw1 -F -s $s -n $n -p $port"
	local iw=("$PERF" --test "$t" -s "$s" -n "$n" -p "$port" --crc "$CUR_CRC" --json
		--timeout 10 "$IWI_GUEST_IP")
	cmdlog "guest:     $pt"
	cmdlog "namespace: ${iw[*]}"
	A_RC_IW=125 A_RC_PT=125 A_IW='' A_PT='' A_PTLINE='' A_CLOCKLESS=''
	if ! srv_start s40srv "$port" "$pt"; then
		log "$tool server did not listen on $port"
		srv_finish s40srv 1 >"$D/$tag.pt.log" 2>&1
		return
	fi
	hx timeout -k 5 "$RUN_LIMIT" "${iw[@]}" >"$D/$tag.iw.json" 2>"$D/$tag.iw.err"
	A_RC_IW=$?
	# A failed client leaves the server waiting: no need to give it long.
	local grace=3
	[ "$A_RC_IW" = 0 ] && grace=20
	srv_finish s40srv "$grace" >"$D/$tag.pt.log" 2>&1
	A_RC_PT=$(sed -n '1s/^rc=//p' "$D/$tag.pt.log")
	A_IW=$(iw_fig "$t" "$D/$tag.iw.json" "$s" "$n")
	A_PTLINE=$(pt_line "$D/$tag.pt.log" "$s" "$n")
	A_PT=$(pt_fig "$t" "$A_PTLINE")
	pt_clockless "$D/$tag.pt.log" && A_CLOCKLESS=1
}

# attempt_server TEST SIZE ITERS TAG: perftest client -> iwarp-perf --server.
attempt_server() {
	local t=$1 s=$2 n=$3 tag=$4 tool spid i wait_ds
	tool=$(tool_of "$t")
	next_port
	local pt="taskset -c 0 $tool -R -d siw1 -F -s $s -n $n -p $port $IWI_HOST_IP"
	local iw=("$PERF" --server --test "$t" -s "$s" -n "$n" -p "$port" --crc "$CUR_CRC" --json
		--timeout 10)
	cmdlog "namespace: ${iw[*]}"
	cmdlog "guest:     $pt"
	A_RC_IW=125 A_RC_PT=125 A_IW='' A_PT='' A_PTLINE='' A_CLOCKLESS=''
	# Not through hx: $! must be ip, which execs timeout, which passes a
	# TERM on to iwarp-perf (and KILLs it 5 s later if need be).
	ip netns exec "$IWI_NETNS" timeout -k 5 $((RUN_LIMIT + 30)) "${iw[@]}" >"$D/$tag.iw.json" \
		2>"$D/$tag.iw.err" &
	spid=$!
	if ! host_listening "$port" 10; then
		log "iwarp-perf --server did not listen on $port"
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		return
	fi
	gx -t $((RUN_LIMIT + 20)) "timeout $RUN_LIMIT $pt > /tmp/s40cli.log 2>&1; echo rc=\$?; cat /tmp/s40cli.log" \
		>"$D/$tag.pt.log" 2>&1
	A_RC_PT=$(sed -n '1s/^rc=//p' "$D/$tag.pt.log")
	# The server ends within seconds of its client (the data connections'
	# teardown); a failed client leaves it waiting: stop it.
	wait_ds=30
	[ "${A_RC_PT:-1}" = 0 ] && wait_ds=200
	for ((i = 0; i < wait_ds; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$spid" 2>/dev/null
	wait "$spid"
	A_RC_IW=$?
	A_IW=$(iw_fig "$t" "$D/$tag.iw.json" "$s" "$n")
	A_PTLINE=$(pt_line "$D/$tag.pt.log" "$s" "$n")
	A_PT=$(pt_fig "$t" "$A_PTLINE")
	pt_clockless "$D/$tag.pt.log" && A_CLOCKLESS=1
}

# perftest's own figure is needed where it measures: a write or read
# bandwidth server only prints the report iwarp-perf sent it.
pt_measures() { [ "$1" = server ] || [ "$2" = send ] || is_lat "$2"; }

# clock_spoilt TEST ROLE: whether the last attempt is worth repeating: both
# ended well, perftest's clock failed, and a figure is missing because of it.
clock_spoilt() {
	local t=$1 role=$2
	[ "$A_RC_IW" = 0 ] && [ "$A_RC_PT" = 0 ] && [ -n "$A_CLOCKLESS" ] || return 1
	[ "$A_IW" = unreal ] && return 0
	pt_measures "$role" "$t" && [ -z "$A_PT" ]
}

# judge TEST ROLE: PASS, SKIP or FAIL for the last attempt in ST, with the
# reason added to DETAIL. Both must exit 0 with their row for the size and
# count; then the figures must be real. A run whose only figures come from
# a perftest clock that failed three times completed but measured nothing:
# SKIP. One where iwarp-perf's own figure is real passes with a note.
judge() {
	local t=$1 role=$2
	ST=FAIL
	if [ "$A_RC_IW" != 0 ] || [ "$A_RC_PT" != 0 ]; then
		DETAIL="$DETAIL; an exit status is not 0"
	elif [ -z "$A_IW" ] || [ -z "$A_PTLINE" ]; then
		DETAIL="$DETAIL; a result row for this size and count is missing"
	elif [ "$A_IW" != unreal ] && { [ -n "$A_PT" ] || ! pt_measures "$role" "$t"; }; then
		ST=PASS
	elif [ -n "$A_CLOCKLESS" ] && [ "$A_IW" != unreal ]; then
		ST=PASS
		DETAIL="$DETAIL; perftest's clock failed 3 times: its row has no figure"
	elif [ -n "$A_CLOCKLESS" ]; then
		ST=SKIP
		DETAIL="$DETAIL; completed, but perftest's clock failed 3 times and its figures are all there are"
	else
		DETAIL="$DETAIL; the figures are not real (zero or not finite)"
	fi
}

# one_case TEST SIZE ROLE [CRC]: up to three attempts (two repeats for a
# spoilt clock), then the result line and the table cell. With CRC "on" the
# case is a CRC variant: named ...-crc, kept apart in the table.
one_case() {
	local t=$1 s=$2 role=$3 n try tag pt_fig unit="MB/s" key="$1 $2 $3" name="$SCN-$1-$2"
	CUR_CRC=${4:-$CRC}
	if [ -n "${4:-}" ]; then
		key="$key crc"
		name="$name-crc"
	fi
	n=$(iters_of "$t" "$s")
	if [ "$(left)" -le 0 ]; then
		result "$name" "$role" SKIP "the scenario's time budget ($BUDGET s) is spent"
		CELL[$key]="not run"
		return
	fi
	# The 4 KiB runs of every test and role are captured and decoded by
	# both iwarp-replay and tshark (lib.sh wire): both connections of
	# perftest's -R (the exchange and the data QP), every FPDU.
	local cap=""
	[ "$s" = 4096 ] && [ -z "${4:-}" ] && cap="perf-$t-$s-$role"
	[ -z "$cap" ] || cap_start "$cap" "tcp portrange 18600-18649"
	for try in 1 2 3; do
		tag=$t-$s-$role${4:+-crc}-$try
		"attempt_$role" "$t" "$s" "$n" "$tag"
		clock_spoilt "$t" "$role" || break
		log "$t $s $role: perftest's clock failed (attempt $try)"
	done
	if [ -n "$cap" ]; then
		cap_stop "$cap"
		wire "$cap"
	fi
	is_lat "$t" && unit="us typ/avg"
	pt_fig=${A_PT:-no figure}
	[ -n "$A_PTLINE" ] || pt_fig="no row"
	DETAIL="n=$n iwarp-perf rc=$A_RC_IW ${A_IW:-no row}; perftest rc=$A_RC_PT $pt_fig ($unit)"
	[ "$try" -gt 1 ] && DETAIL="$DETAIL; attempt $try"
	judge "$t" "$role"
	[ "$ST" = PASS ] || DETAIL="$DETAIL; logs $D/$tag.*"
	result "$name" "$role" "$ST" "$DETAIL"
	# The table shows the client's figure: ours as client, perftest's as
	# server (ours, marked, when its clock failed).
	case $ST in
	FAIL) CELL[$key]=FAIL ;;
	SKIP) CELL[$key]="no clock" ;;
	*)
		if [ "$role" = client ]; then
			CELL[$key]=$A_IW
		elif [ -n "$A_PT" ]; then
			CELL[$key]=$A_PT
		else
			CELL[$key]=$A_IW
			NOTE[$key]="*"
		fi
		;;
	esac
}

# ------------------------------------------------------------ baseline

# The whole siw<->siw baseline as one guest command (each guest command
# costs about 2 s): for every case a server pinned to vCPU 1 and a client
# pinned to vCPU 0, bounded waits, up to three attempts; one line per case,
# "B test size iters server_rc client_rc attempts clockless refused | row",
# and the tails of both logs ("L ...") when it failed. An attempt is
# repeated when perftest's clock failed, or when perftest's own client gave
# up on the data connections ("Connection refused", then it segfaults):
# its server listens again for them only after the first handshake, which
# in this guest can take longer than the second the client allows (a
# case where that happens three times is a SKIP: perftest against itself
# is not under test). Cases that would start after SECS seconds are not
# run ("B ... skip").
# siw_setup_hang: siw against itself sometimes never finishes setting up
# the connection (a loop of ib_send_lat -s 65536 in the guest hung at its
# ninth attempt on a loaded host; as a 60 s timeout of both ends it failed
# a CI run and two of four runs of this scenario on a loaded host).
# What the guest shows then, every time: both perftest processes spin in
# user space, both their cm_ids are in CONNECT, both QPs still in RESET,
# and the passive side's socket holds 40 octets it never reads. libiwarp
# is not involved, and the same perftest programs against libiwarp have
# not shown it. A watchdog in the guest looks 15 s into each attempt
# (a whole run takes a second or two): if no QP of the case reached RTS it
# records the evidence above, kills both ends, and the attempt is made
# again, up to three times, as for a refused connection; three in a row
# are a SKIP that says so, with the evidence in baseline.log. A case that
# hangs later (after RTS) is still a FAIL, with the same evidence.
baseline() {
	local cases="" t s secs
	for t in $TESTS; do
		if is_lat "$t"; then
			for s in $SIZES_LAT; do cases="$cases $t:$(tool_of "$t"):$s:$(iters_of "$t" "$s")"; done
		else
			for s in $SIZES_BW; do cases="$cases $t:$(tool_of "$t"):$s:$(iters_of "$t" "$s")"; done
		fi
	done
	secs=$(($(left) + RESERVE - 30))
	[ "$secs" -ge 60 ] || secs=60
	local gs
	read -r -d '' gs <<'EOF'
port=18659 end=$(($(date +%s) + SECS))
tool_pids() { for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = "$tool" ] && echo ${p#/proc/}; done; }
hang_evidence() {
  for p in $(tool_pids); do
    echo "$tool pid $p: $(tr '\0' ' ' < /proc/$p/cmdline)"
    for th in /proc/$p/task/*; do
      echo "  thread ${th##*/} $(awk '{print $3}' $th/stat) wchan $(cat $th/wchan)"
      sed 's/^/    /' $th/stack
    done
  done
  echo "rdma res show qp:"; rdma res show qp
  echo "rdma res show cm_id:"; rdma res show cm_id
  echo "ss -tnio:"; ss -tnio
}
watchdog() {
  sleep 15
  [ -n "$(tool_pids)" ] || return
  # No QP in RTS and no banner from the client (perftest prints it once
  # connected): not a case that just ended as the watchdog woke.
  if ! rdma res show qp | grep "comm $tool" | grep -q "state RTS" &&
    ! grep -q -- '-----' /tmp/s40b_cli.log; then
    hang_evidence > /tmp/s40b_hang.log 2>&1
    echo setup > /tmp/s40b_hang.kind
    kill -9 $(tool_pids) 2>/dev/null
    return
  fi
  sleep $((LIMIT - 17))
  [ -n "$(tool_pids)" ] && hang_evidence > /tmp/s40b_hang.log 2>&1 && echo data > /tmp/s40b_hang.kind
}
for c in $CASES; do
  set -- $(echo $c | tr : ' ')
  t=$1 tool=$2 s=$3 n=$4 try=0
  if [ $(date +%s) -ge $end ]; then echo "B $t $s $n - - 0 skip 0 - |"; continue; fi
  while :; do
    try=$((try + 1)); port=$((port + 1)); [ $port -le 18699 ] || port=18660
    taskset -c 1 $tool -R -d siw1 -F -s $s -n $n -p $port > /tmp/s40b_srv.log 2>&1 &
    spid=$!
    i=0; while [ $i -lt 150 ] && ! ss -ltnH | awk '{print $4}' | grep -q ":$port\$"; do sleep 0.1; i=$((i + 1)); done
    rm -f /tmp/s40b_hang.log /tmp/s40b_hang.kind
    watchdog & wpid=$!
    timeout LIMIT taskset -c 0 $tool -R -d siw1 -F -s $s -n $n -p $port ADDR > /tmp/s40b_cli.log 2>&1; crc=$?
    kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
    hung=-; [ -s /tmp/s40b_hang.kind ] && hung=$(cat /tmp/s40b_hang.kind)
    i=0; while [ $i -lt 150 ] && kill -0 $spid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    if kill -0 $spid 2>/dev/null; then kill -9 $spid; wait $spid; src=124; else wait $spid; src=$?; fi
    line=$(awk -v s=$s -v n=$n '$1 == s && $2 == n { print; exit }' /tmp/s40b_cli.log)
    bad=0; grep -q 'Correlation coefficient' /tmp/s40b_cli.log && bad=1
    ref=0; [ $crc != 0 ] && grep -q 'Connection refused' /tmp/s40b_cli.log && ref=1
    again=0
    [ $crc = 0 ] && [ $src = 0 ] && [ $bad = 1 ] && again=1
    [ $ref = 1 ] && again=1
    [ $hung = setup ] && again=1
    if [ $again = 1 ] && [ $try -lt 3 ]; then
      echo "R $t $s $n attempt $try again: clockless=$bad refused=$ref hung=$hung"
      continue
    fi
    echo "B $t $s $n $src $crc $try $bad $ref $hung | $line"
    echo "CMD taskset -c 1 $tool -R -d siw1 -F -s $s -n $n -p $port"
    echo "CMD taskset -c 0 $tool -R -d siw1 -F -s $s -n $n -p $port ADDR"
    if [ $crc != 0 ] || [ $src != 0 ]; then
      tail -5 /tmp/s40b_cli.log | sed 's/^/L client: /'; tail -5 /tmp/s40b_srv.log | sed 's/^/L server: /'
      [ -s /tmp/s40b_hang.log ] && sed 's/^/L hung: /' /tmp/s40b_hang.log
    fi
    break
  done
done
EOF
	gs=${gs//LIMIT/$RUN_LIMIT}
	gs=${gs//ADDR/$IWI_GUEST_IP}
	gs=${gs//SECS/$secs}
	gx -t $((secs + 2 * RUN_LIMIT)) "CASES='$cases'; $gs" >"$D/baseline.log" 2>&1
	local b tt ss nn src crc tries clockless refused hung line key fig
	while read -r b tt ss nn src crc tries clockless refused hung line; do
		[ "$b" = B ] || continue
		line=${line#*|}
		key="$tt $ss siw"
		fig=$(pt_fig "$tt" "$line")
		if [ "$clockless" = skip ]; then
			CELL[$key]="not run"
			result "$SCN-$tt-$ss" siw-siw SKIP "the scenario's time budget ($BUDGET s) is spent"
		elif [ "$refused" = 1 ]; then
			# perftest against itself: not what this scenario tests.
			CELL[$key]="perftest crashed"
			result "$SCN-$tt-$ss" siw-siw SKIP "n=$nn perftest's own client gave up on its data connections (refused) and crashed, $tries times; $D/baseline.log"
		elif [ "$hung" = setup ]; then
			# siw against itself: its passive side never read the MPA Request.
			CELL[$key]="siw hung"
			result "$SCN-$tt-$ss" siw-siw SKIP "n=$nn siw<->siw never established the connection, $tries times (no QP reached RTS in 15 s; see siw_setup_hang in the scenario): siw's own connection setup, not under test; evidence in $D/baseline.log"
		elif [ "$src" != 0 ] || [ "$crc" != 0 ] || [ -z "${line// /}" ]; then
			CELL[$key]=FAIL
			result "$SCN-$tt-$ss" siw-siw FAIL "n=$nn server rc=$src client rc=$crc; attempt $tries; $D/baseline.log"
		elif [ -n "$fig" ]; then
			CELL[$key]=$fig
			result "$SCN-$tt-$ss" siw-siw PASS "n=$nn $fig; attempt $tries"
		elif [ "$clockless" = 1 ]; then
			CELL[$key]="no clock"
			result "$SCN-$tt-$ss" siw-siw SKIP "n=$nn completed, but perftest's clock failed $tries times"
		else
			CELL[$key]=FAIL
			result "$SCN-$tt-$ss" siw-siw FAIL "n=$nn the figures are not real; $D/baseline.log"
		fi
	done <"$D/baseline.log"
	grep '^CMD ' "$D/baseline.log" | sed 's/^CMD /guest:     /' >>"$D/commands.txt"
}

# ------------------------------------------------------------ raw TCP

# tcp_ref: a raw TCP stream from the guest to the host over the same link
# (dd | nc in the guest, 64 KiB blocks, into a Python sink in the namespace:
# the namespace has no nc), for reading the table: when siw sends, the
# guest's transmit path under TCG is the limit, not the receiver.
TCP_UP=''
tcp_ref() {
	cat >"$D/tcpsink.py" <<'EOF'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
s.settimeout(30)
c, _ = s.accept()
c.settimeout(30)
n, t0 = 0, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    t0 = t0 or time.time()
    n += len(b)
dt = time.time() - t0
print("%d %.3f %.2f" % (n, dt, n / dt / 1048576))
EOF
	local sp
	hx timeout -k 5 40 python3 "$D/tcpsink.py" "$IWI_HOST_IP" 18650 >"$D/tcp_up.txt" 2>&1 &
	sp=$!
	host_listening 18650 5 &&
		gx -t 40 "dd if=/dev/zero bs=65536 count=64 2>/dev/null | timeout 30 nc $IWI_HOST_IP 18650" >/dev/null 2>&1
	wait "$sp" && TCP_UP=$(awk '$1 == 4194304 {print $3}' "$D/tcp_up.txt")
	cmdlog "namespace: python3 tcpsink.py $IWI_HOST_IP 18650"
	cmdlog "guest:     dd if=/dev/zero bs=65536 count=64 | nc $IWI_HOST_IP 18650"
	result "$SCN-tcp-link" guest-to-host "$([ -n "$TCP_UP" ] && echo PASS || echo SKIP)" \
		"${TCP_UP:-not measured} MB/s (raw TCP, 4 MiB, dd | nc in the guest)"
}

# ------------------------------------------------------------ the table

write_md() {
	local t s sizes unit secs
	secs=$(($(date +%s) - t_start))
	{
		echo "# iwarp-perf against perftest -R on siw, beside siw<->siw"
		echo
		echo "Measured by tests/interop/scn-40-perftest.sh on $(date -u +%FT%TZ), in ${secs} s."
		echo "Guest: $(gx -t 20 'uname -r; ib_write_bw --version 2>&1 | head -1' 2>/dev/null | tr '\n' ' ')"
		echo "(QEMU; siw on the guest's eth0, siw1). Host: iwarp-perf in namespace $IWI_NETNS."
		echo
		echo "Each cell is the client's figure: bandwidth tests BW average in MB/sec"
		echo "(2^20 octets/s), latency tests t_typical/t_avg in usec (half round trips)."
		echo "- libiwarp->siw: iwarp-perf client, perftest server in the guest."
		echo "- siw->libiwarp: perftest client in the guest, iwarp-perf --server"
		echo "  (\\* iwarp-perf's own figure where perftest's clock calibration failed)."
		echo "- siw<->siw: perftest client and server in the guest (vCPU 0 and 1)."
		echo "iwarp-perf ran with --crc $CRC; siw asks for no CRC, so siw<->siw has none."
		echo "The host<->guest path crosses the guest's emulated virtio-net, while"
		echo "siw<->siw stays inside the guest; on a shared host the figures are noisy."
		echo "A raw TCP stream from the guest to the host (dd | nc, 4 MiB) made"
		echo "${TCP_UP:-?} MB/s in this run: whenever siw sends to the host (write and send"
		echo "from siw's client, read responses to libiwarp's client, every latency"
		echo "test) the guest's transmit path (under TCG: emulated) is the limit,"
		echo "and iwarp-perf sits nearly idle waiting for data."
		echo "A WRITE or SEND completes once its bytes are in the sender's socket, so"
		echo "where a run's bytes fit in the socket buffers (2000 x 64 B) the"
		echo "libiwarp->siw bandwidth says how fast iwarp-perf queues, not what siw"
		echo "absorbs; from 64 KiB up (13 MiB and more per run) it is the link's."
		echo
		echo "| test | size | iterations | libiwarp->siw | siw->libiwarp | siw<->siw | unit |"
		echo "|---|---|---|---|---|---|---|"
		for t in $TESTS; do
			sizes=$SIZES_BW unit="MB/s"
			is_lat "$t" && sizes=$SIZES_LAT unit="us typ/avg"
			for s in $sizes; do
				echo "| $(tool_of "$t") | $s | $(iters_of "$t" "$s") | ${CELL["$t $s client"]:-} |" \
					"${CELL["$t $s server"]:-}${NOTE["$t $s server"]:-} | ${CELL["$t $s siw"]:-} | $unit |"
			done
		done
		echo
		[ -z "$CRC_CASES" ] || {
			echo "With the MPA CRC (iwarp-perf --crc on; siw then computes it too):"
			echo
			echo "| test | size | iterations | libiwarp->siw | siw->libiwarp | unit |"
			echo "|---|---|---|---|---|---|"
		}
		for ts in $CRC_CASES; do
			t=${ts%:*} s=${ts#*:}
			echo "| $(tool_of "$t") | $s | $(iters_of "$t" "$s") | ${CELL["$t $s client crc"]:-} |" \
				"${CELL["$t $s server crc"]:-}${NOTE["$t $s server crc"]:-} | MB/s |"
		done
		echo
		echo "## Commands"
		echo
		echo "Guest commands ran in the guest (perftest, siw1); namespace commands"
		echo "ran on the host as \`ip netns exec $IWI_NETNS ...\`. In run order:"
		echo
		echo '```'
		cat "$D/commands.txt"
		echo '```'
	} >"$MD"
}

# ------------------------------------------------------------ main

if ! guest_healthy; then
	result "$SCN" all FAIL "the guest is not healthy before the scenario"
	finish
fi
tcp_ref
for t in $TESTS; do
	sizes=$SIZES_BW
	is_lat "$t" && sizes=$SIZES_LAT
	for s in $sizes; do
		one_case "$t" "$s" client
		one_case "$t" "$s" server
	done
done
for ts in $CRC_CASES; do
	one_case "${ts%:*}" "${ts#*:}" client on
	one_case "${ts%:*}" "${ts#*:}" server on
done
baseline
if ! guest_healthy; then
	result "$SCN" all FAIL "the guest kernel is not healthy after the scenario (dmesg)"
fi
write_md
log "scenario 40 took $(($(date +%s) - t_start)) s; table in $MD"
finish
