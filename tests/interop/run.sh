#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# run.sh [--keep] [--build DIR] [--list] [SCENARIO-GLOB...]
#
# The interop suite: libiwarp against the Linux kernel's siw, running in a
# QEMU guest that tests/interop/rig/ builds and boots (`make check-interop`
# calls this with IWI_BUILD set to the build tree).
#
#  1. Checks that this machine can run the rig at all. Where it cannot (not
#     root, no /dev/net/tun, no network namespaces, not Debian amd64, the
#     packages cannot be installed) it prints a "SKIP: interop suite: ..."
#     banner and exits 0: that is a property of the machine, not a failure.
#  2. Builds the guest (cached in $IWI_RIG_CACHE, quick when unchanged) and
#     starts it.
#  3. Runs every tests/interop/scn-*.sh in lexical order (or those that
#     match the globs, e.g. 'scn-0[01]*'; a word without wildcards is a
#     prefix: scn-00; a scenario with a "# interop: opt-in" line runs only
#     when a glob names it), each under a timeout (IWI_SCN_TIMEOUT, 1500 s),
#     streaming its output, which is also kept in $IWI_OUT/<scenario>.log.
#     After each one the guest's health is checked: iw_cm has a BUG_ON that
#     a connection closed before siw reported ESTABLISHED can reach, and a
#     crashed guest would fail every later scenario, so a crash is recorded
#     as a FAIL of the scenario that caused it and the rig is restarted.
#  4. Prints a table of scenario x role x result with totals, writes it to
#     $IWI_OUT/results.md, stops the rig (unless --keep) and exits 1 when
#     anything failed.
#
# Environment: IWI_BUILD (the configured build tree, default the current
# directory), IWI_OUT (default $IWI_BUILD/interop-out), IWI_SCN_TIMEOUT,
# IWI_BUDGET (seconds for the whole run; scenarios that would start after it
# is spent are recorded as FAIL), and the rig's IWI_RIG_* (rig/common.sh).
set -euo pipefail
export LC_ALL=C
export PATH=$PATH:/usr/sbin:/sbin
HERE=$(cd "$(dirname "$0")" && pwd)
RIG=$HERE/rig
T_START=$SECONDS

usage() {
	sed -n '3,4p' "$0" | sed 's/^# \{0,1\}//'
	echo "see the comment at the top of $0"
}
keep=0
list=0
globs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--keep) keep=1 ;;
	--list) list=1 ;;
	--build)
		[ $# -gt 1 ] || { usage >&2 && exit 2; }
		IWI_BUILD=$2
		shift
		;;
	-h | --help) usage && exit 0 ;;
	--) shift && globs+=("$@") && break ;;
	-*) usage >&2 && exit 2 ;;
	*) globs+=("$1") ;;
	esac
	shift
done

# ------------------------------------------------------------ scenarios
scns=()
for f in "$HERE"/scn-*.sh; do
	[ -e "$f" ] || continue
	n=${f##*/}
	if [ ${#globs[@]} -gt 0 ]; then
		hit=0
		for g in "${globs[@]}"; do
			# A glob matches the name with or without .sh; a plain word
			# is a prefix (scn-00 selects scn-00-rig).
			case "$g" in *[*?[]*) ;; *) g="$g*" ;; esac
			# shellcheck disable=SC2053 # $g is a glob on purpose
			if [[ $n == $g || ${n%.sh} == $g ]]; then hit=1; fi
		done
		[ "$hit" = 1 ] || continue
	elif grep -q '^# interop: opt-in' "$f"; then
		# Not ready for CI: runs only when named (INTEROP_ARGS=scn-60).
		continue
	fi
	scns+=("$f")
done
if [ "$list" = 1 ]; then
	for f in "${scns[@]}"; do echo "${f##*/}"; done
	exit 0
fi
if [ ${#scns[@]} = 0 ]; then
	echo "run.sh: no scenario matches: ${globs[*]:-(none in $HERE)}" >&2
	exit 2
fi

export IWI_SRC=${IWI_SRC:-$(cd "$HERE/../.." && pwd)}
IWI_BUILD=$(cd "${IWI_BUILD:-.}" && pwd)
export IWI_BUILD
export IWI_OUT=${IWI_OUT:-$IWI_BUILD/interop-out}
export IWI_RESULTS=$IWI_OUT/results.tsv
IWI_SCN_TIMEOUT=${IWI_SCN_TIMEOUT:-1500}
IWI_BUDGET=${IWI_BUDGET:-0}
mkdir -p "$IWI_OUT" 2>/dev/null || true # checked after the preflight

bar=$(printf '=%.0s' $(seq 72))
skip_suite() {
	printf '\n%s\nSKIP: interop suite: %s\n%s\n\n' "$bar" "$*" "$bar"
	{ printf '# Interop with Linux siw\n\nSKIP: interop suite: %s\n' "$*" >"$IWI_OUT/results.md"; } 2>/dev/null || true
	exit 0
}
say() { printf '[interop] %s\n' "$*"; }

# ------------------------------------------------------------ preflight
# Only what the machine cannot offer leads to a SKIP; everything after the
# rig is up is a real result.
[ "$(uname -s)" = Linux ] || skip_suite "needs Linux (network namespaces, tap devices)"
[ "$(id -u)" = 0 ] || skip_suite "needs root for the network namespace, the tap device and apt-get (sudo make check-interop)"
if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
	skip_suite "needs Debian's apt-get and dpkg to fetch the guest"
fi
[ "$(dpkg --print-architecture)" = amd64 ] ||
	skip_suite "the guest is Debian amd64; this machine is $(dpkg --print-architecture)"
[ -c /dev/net/tun ] || skip_suite "no /dev/net/tun (tap devices unavailable)"

if [ ! -d "$IWI_OUT" ] || [ ! -w "$IWI_OUT" ]; then
	echo "run.sh: cannot write to IWI_OUT=$IWI_OUT" >&2
	exit 1
fi
# shellcheck source=rig/common.sh
. "$RIG/common.sh"
export IWI_RIG_CACHE IWI_RIG_NETNS IWI_RIG_BRIDGE IWI_RIG_TAP IWI_RIG_HOST_IP IWI_RIG_GUEST_IP \
	IWI_RIG_PREFIX IWI_RIG_MTU IWI_RIG_NCMD IWI_RIG_ACCEL IWI_RIG_SHARE
export IWI_RIG=$RIG IWI_NETNS=$IWI_RIG_NETNS IWI_BRIDGE=$IWI_RIG_BRIDGE \
	IWI_HOST_IP=$IWI_RIG_HOST_IP IWI_GUEST_IP=$IWI_RIG_GUEST_IP
# The 9p folder the guest mounts at /mnt/host; empty when IWI_RIG_SHARE=none.
IWI_SHARE=$IWI_RIG_SHARE
[ "$IWI_SHARE" != none ] || IWI_SHARE=
export IWI_SHARE
[ -f "$IWI_BUILD/config.status" ] ||
	say "warning: IWI_BUILD=$IWI_BUILD is not a configured build tree; scenarios that run our programs will fail"

# One run at a time per rig: a second `make check-interop` waits for us.
# The rig's scripts and the scenarios get the lock fd closed (8>&-), so
# that a QEMU left running by --keep does not hold it.
mkdir -p "$C"
exec 8>"$C/run.lock"
if ! flock -n 8; then
	say "another interop run holds $C/run.lock; waiting (up to ${IWI_LOCK_WAIT:-3600}s)"
	flock -w "${IWI_LOCK_WAIT:-3600}" 8 || { echo "run.sh: $C/run.lock still held" >&2 && exit 1; }
fi
rig() { "$RIG/$1.sh" "${@:2}" 8>&-; }

cur=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$cur" ]; then
		kill -TERM -- -"$cur" 2>/dev/null || true
		sleep 1
		kill -KILL -- -"$cur" 2>/dev/null || true
	fi
	if [ "$keep" = 1 ]; then
		say "rig left running (--keep): $RIG/guest.sh CMD..., $RIG/stop.sh to stop it"
	else
		rig stop || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf '\n%s\nInterop with Linux siw: %d scenario(s), output in %s\n%s\n' \
	"$bar" "${#scns[@]}" "$IWI_OUT" "$bar"
t0=$SECONDS
set +e
rig build
rc=$?
set -e
case $rc in
0) ;;
77) skip_suite "$(cat "$C/build.cannot" 2>/dev/null || echo "the guest cannot be built on this machine")" ;;
*) echo "run.sh: building the rig failed (status $rc)" >&2 && exit 1 ;;
esac
T_BUILD=$((SECONDS - t0))
command -v qemu-system-x86_64 >/dev/null || skip_suite "qemu-system-x86_64 is not available"

# Network namespaces and tap devices can be refused even to root (in a
# container without CAP_NET_ADMIN/CAP_SYS_ADMIN): try both before booting.
if ! netns_exists "$IWI_RIG_NETNS"; then
	err=$(ip netns add "$IWI_RIG_NETNS" 2>&1) ||
		skip_suite "cannot create a network namespace: $err"
	mkdir -p "$RUN"
	echo "$IWI_RIG_NETNS" >"$RUN/netns" # stop.sh removes it
	if ! err=$(ip netns exec "$IWI_RIG_NETNS" ip tuntap add dev iwiprobe0 mode tap 2>&1); then
		ip netns del "$IWI_RIG_NETNS" 2>/dev/null || true
		skip_suite "cannot create a tap device: $err"
	fi
	ip netns exec "$IWI_RIG_NETNS" ip link del iwiprobe0 2>/dev/null || true
fi

t0=$SECONDS
rig_down=
rig start || rig_down="the rig did not start (see above; console log $RUN/console.log)"
T_BOOT=$((SECONDS - t0))
ACCEL=$(cat "$RUN/accel" 2>/dev/null || echo '?')
KVER=$(cat "$IMG/kver" 2>/dev/null || echo '?')

# ------------------------------------------------------------ scenarios
: >"$IWI_RESULTS"
: >"$IWI_OUT/times.tsv"
rm -f "$IWI_OUT"/.failed.* # lib.sh's markers from an interrupted run
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$IWI_RESULTS"; }

# crashed: QEMU is gone, or the guest kernel reported a BUG/oops on its
# console (read on the host: it needs no working guest).
# "traps:" lines are user programs' faults, as in lib.sh.
crashed() {
	qemu_alive || return 0
	grep -E 'kernel BUG|Oops|general protection' "$RUN/console.log" 2>/dev/null |
		grep -v 'traps:' | grep -q .
}
# healthy: not crashed, the guest answers and its dmesg is clean (lib.sh's
# guest_healthy, so that scenarios and runner agree).
healthy() {
	! crashed || return 1
	# shellcheck disable=SC1091
	(. "$HERE/lib.sh" && guest_healthy) >/dev/null 2>&1
}
restart_rig() {
	say "restarting the rig: $*"
	rig stop || true
	rig start
}

for scn in "${scns[@]}"; do
	name=${scn##*/}
	name=${name%.sh}
	log=$IWI_OUT/$name.log
	printf '\n=== %s ===\n' "$name"
	if [ -n "$rig_down" ]; then
		record "$name" scenario FAIL "not run: $rig_down"
		printf '%s\t%s\t%s\n' "$name" FAIL 0 >>"$IWI_OUT/times.tsv"
		continue
	fi
	tmo=$IWI_SCN_TIMEOUT
	if [ "$IWI_BUDGET" -gt 0 ]; then
		left=$((IWI_BUDGET - (SECONDS - T_START)))
		if [ "$left" -lt 60 ]; then
			record "$name" scenario FAIL "not run: the time budget (IWI_BUDGET=${IWI_BUDGET}s) is spent"
			printf '%s\t%s\t%s\n' "$name" FAIL 0 >>"$IWI_OUT/times.tsv"
			continue
		fi
		[ "$left" -ge "$tmo" ] || tmo=$left
	fi
	before=$(wc -l <"$IWI_RESULTS")
	t0=$SECONDS
	: >"$log"
	# timeout(1) makes itself the leader of a process group that holds the
	# scenario and all it starts: on expiry the group is killed, and after
	# a normal end whatever the scenario left running goes with it. The
	# output goes to the log file and tail streams it, so that a leftover
	# background job cannot keep a pipe open and stall us.
	IWI_SCENARIO=$name timeout -k 30 "$tmo" bash "$scn" </dev/null >"$log" 2>&1 8>&- &
	cur=$!
	tail -n +1 -f --pid="$cur" "$log" &
	tailpid=$!
	rc=0
	wait "$cur" || rc=$?
	if kill -0 -- -"$cur" 2>/dev/null; then
		kill -TERM -- -"$cur" 2>/dev/null || true
		sleep 1
		kill -KILL -- -"$cur" 2>/dev/null || true
	fi
	cur=
	wait "$tailpid" 2>/dev/null || true
	dt=$((SECONDS - t0))

	# Every line recorded meanwhile is this scenario's, whatever name it
	# gave itself in the first column.
	mine=$(tail -n +$((before + 1)) "$IWI_RESULTS")
	nfail=$(awk -F'\t' '$3 == "FAIL"' <<<"$mine" | grep -c . || true)
	restart=
	unhealthy=
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		record "$name" scenario FAIL "timed out after ${tmo}s (killed)"
		# The guest may still be busy with what the scenario left running:
		# restart it in any case, and call it a crash only if it was one.
		restart="after a timeout"
		! crashed || unhealthy=1
	elif [ "$rc" != 0 ] && [ "$nfail" = 0 ]; then
		record "$name" scenario FAIL "exited with status $rc without recording a failure"
	elif [ -z "$mine" ]; then
		record "$name" scenario FAIL "recorded no result (scenarios call lib.sh's result)"
	fi
	if [ -z "$restart" ] && ! healthy; then
		unhealthy=1
	fi
	if [ -n "$unhealthy" ]; then
		gx_dmesg=$("$RIG/guest.sh" -t 20 'dmesg' 2>/dev/null 8>&-) || gx_dmesg="(guest not answering)"
		printf '%s\n' "$gx_dmesg" >"$IWI_OUT/$name.dmesg"
		tail -n 100 "$RUN/console.log" >"$IWI_OUT/$name.console" 2>/dev/null || true
		record "$name" rig FAIL "guest kernel crashed during $name (dmesg: $IWI_OUT/$name.dmesg)"
		say "guest unhealthy after $name; its dmesg is in $IWI_OUT/$name.dmesg"
		restart="the guest kernel crashed during $name"
	fi
	st=$(tail -n +$((before + 1)) "$IWI_RESULTS" | awk -F'\t' '
		{ n[$3]++ } END { print n["FAIL"] ? "FAIL" : n["PASS"] ? "PASS" : "SKIP" }')
	printf '%s\t%s\t%s\n' "$name" "$st" "$dt" >>"$IWI_OUT/times.tsv"
	printf -- '--- %s: %s in %ds\n' "$name" "$st" "$dt"
	if [ -n "$restart" ] && [ "$scn" != "${scns[-1]}" ]; then
		restart_rig "$restart" || rig_down="the rig could not be restarted after $name"
	fi
done

# ------------------------------------------------------------ report
T_TOTAL=$((SECONDS - T_START))
npass=$(awk -F'\t' '$3 == "PASS"' "$IWI_RESULTS" | grep -c . || true)
nfail=$(awk -F'\t' '$3 == "FAIL"' "$IWI_RESULTS" | grep -c . || true)
nskip=$(awk -F'\t' '$3 == "SKIP"' "$IWI_RESULTS" | grep -c . || true)
totals="$npass PASS, $nfail FAIL, $nskip SKIP"
timing="build ${T_BUILD}s, boot ${T_BOOT}s, total ${T_TOTAL}s"

printf '\n%s\nInterop with Linux siw (guest %s, %s): results\n%s\n' "$bar" "$KVER" "$ACCEL" "$bar"
awk -F'\t' '
	{ s[NR] = $1; r[NR] = $2; st[NR] = $3; d[NR] = $4
	  if (length($1) > ws) ws = length($1); if (length($2) > wr) wr = length($2) }
	END {
		if (ws < 8) ws = 8; if (wr < 4) wr = 4
		printf "%-" ws "s  %-" wr "s  %-6s %s\n", "SCENARIO", "ROLE", "RESULT", "DETAIL"
		for (i = 1; i <= NR; i++) {
			det = d[i]; if (length(det) > 70) det = substr(det, 1, 67) "..."
			printf "%-" ws "s  %-" wr "s  %-6s %s\n", s[i], r[i], st[i], det
		}
	}' "$IWI_RESULTS"
echo
awk -F'\t' '{ printf "  %-32s %-5s %5ds\n", $1, $2, $3 }' "$IWI_OUT/times.tsv"
printf '\nTotal: %s (%s)\n%s\n' "$totals" "$timing" "$bar"

mdesc() { sed 's/|/\\|/g'; }
{
	echo "# Interop with Linux siw: results"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), guest kernel $KVER with siw ($ACCEL), $timing."
	echo
	echo "| scenario | role | result | detail |"
	echo "|---|---|---|---|"
	mdesc <"$IWI_RESULTS" | awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
	echo
	echo "| scenario | result | time |"
	echo "|---|---|---:|"
	awk -F'\t' '{ printf "| %s | %s | %ds |\n", $1, $2, $3 }' "$IWI_OUT/times.tsv"
	echo
	echo "**Total: $totals**"
} >"$IWI_OUT/results.md"
say "results: $IWI_OUT/results.md"
[ "$nfail" = 0 ]
