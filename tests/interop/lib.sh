# SPDX-License-Identifier: BSD-2-Clause
# Helpers shared by the interop scenarios (sourced, not executed).
#
# The runner (tests/interop/run.sh) exports:
#   IWI_RIG      directory holding the rig's guest.sh (tests/interop/rig)
#   IWI_NETNS    network namespace the host-side programs run in
#   IWI_HOST_IP  our address inside that namespace (bridge side)
#   IWI_GUEST_IP the guest's address (siw1 is bound to it)
#   IWI_BRIDGE   the namespace-side link device, where captures are taken
#   IWI_BUILD    the configured build tree (tools/, tests/ binaries)
#   IWI_SRC      the source tree (tests/interop/...)
#   IWI_OUT      where logs and captures of this run go
#   IWI_RESULTS  tab-separated result lines: scenario, role, status, detail
#   IWI_SHARE    host folder the guest sees at /mnt/host (9p), for programs
#                built on the host to run in the guest
# A scenario script sources this file, runs its cases, records each with
# `result`, and exits 0 when all of its cases passed.

: "${IWI_RIG:?}" "${IWI_NETNS:?}" "${IWI_BRIDGE:?}" "${IWI_HOST_IP:?}" "${IWI_GUEST_IP:?}"
: "${IWI_BUILD:?}" "${IWI_OUT:?}" "${IWI_RESULTS:?}"
IWI_SRC=${IWI_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=$IWI_BUILD/tools
mkdir -p "$IWI_OUT"
rm -f "$IWI_OUT/.failed.$$"

log() { printf '[interop] %s\n' "$*" >&2; }

# result SCENARIO ROLE PASS|FAIL|SKIP DETAIL...
result() {
	local scn=$1 role=$2 st=$3
	shift 3
	printf '%s\t%s\t%s\t%s\n' "$scn" "$role" "$st" "$*" >>"$IWI_RESULTS"
	printf '[interop] %-4s %s (%s): %s\n' "$st" "$scn" "$role" "$*"
	# A file, not a variable: results recorded in a $(...) subshell count.
	[ "$st" != FAIL ] || : >"$IWI_OUT/.failed.$$"
}

# gx [-t SECS] CMD...: run a shell command in the guest; exit status is its.
gx() { "$IWI_RIG/guest.sh" "$@"; }

# hx CMD...: run a host program inside the rig's namespace.
hx() { ip netns exec "$IWI_NETNS" "$@"; }

# guest_bg NAME CMD: start CMD in the guest in the background. Its output
# goes to /tmp/NAME.log and its exit status to /tmp/NAME.rc when it ends.
guest_bg() {
	local name=$1
	shift
	gx -t 20 "rm -f /tmp/$name.rc /tmp/$name.log; (sh -c '$*' & echo \$! > /tmp/$name.pid; wait \$!; echo \$? > /tmp/$name.rc) > /tmp/$name.log 2>&1 < /dev/null &"
}

# guest_wait NAME SECS: wait for a guest_bg job; prints nothing, returns
# its exit status (124 and kills it after SECS seconds).
guest_wait() {
	local name=$1 secs=$2 rc
	rc=$(gx -t $((secs + 15)) "i=0; while [ ! -s /tmp/$name.rc ] && [ \$i -lt $((secs * 10)) ]; do sleep 0.1; i=\$((i+1)); done; cat /tmp/$name.rc 2>/dev/null || echo 124") || rc=125
	[ "$rc" = 124 ] && guest_kill "$name"
	return "$rc"
}

# guest_log NAME: the output of a guest_bg job.
guest_log() { gx -t 20 "cat /tmp/$1.log 2>/dev/null"; }

# guest_kill NAME: kill a guest_bg job and everything it started (the guest
# has no pkill; walk the parent links that busybox ps shows).
guest_kill() {
	gx -t 20 "kt() { for c in \$(ps -o pid,ppid | awk -v p=\$1 '\$2==p{print \$1}'); do kt \$c; done; kill -9 \$1 2>/dev/null; }; p=\$(cat /tmp/$1.pid 2>/dev/null) && kt \$p; true" >/dev/null 2>&1 || true
}

# guest_listening PORT [SECS]: wait until a TCP listener on PORT exists in
# the guest (rdma_cm's listen is a kernel socket, shown by ss like any).
guest_listening() {
	local port=$1 secs=${2:-20}
	gx -t $((secs + 10)) "i=0; while [ \$i -lt $((secs * 10)) ]; do ss -ltnH 2>/dev/null | awk '{print \$4}' | grep -q ':$port\$' && exit 0; sleep 0.1; i=\$((i+1)); done; exit 1"
}

# host_listening PORT [SECS]: the same for a listener in our namespace.
host_listening() {
	local port=$1 secs=${2:-20} i
	for ((i = 0; i < secs * 10; i++)); do
		hx ss -ltnH 2>/dev/null | awk '{print $4}' | grep -q ":$port\$" && return 0
		sleep 0.1
	done
	return 1
}

# guest_healthy: false once the guest kernel hit a BUG/oops (iw_cm has a
# BUG_ON that a close before ESTABLISHED reaches) or stopped answering.
guest_healthy() {
	local n
	# grep -c exits 1 when it counts 0: "; true" keeps only gx's own failure.
	# "traps:" lines are user programs' faults (perftest's librdmacm
	# crashes this way), not the kernel's.
	n=$(gx -t 20 "dmesg | grep -E 'kernel BUG|Oops|general protection' | grep -vc 'traps:'; true") ||
		return 1
	[ "$n" = 0 ]
}

# cap_start NAME [FILTER]: capture the link on the host side (the bridge in
# our namespace) into $IWI_OUT/NAME.pcap; cap_stop NAME ends it.
cap_start() {
	local name=$1 filter=${2:-tcp}
	# Not through hx: a function in the background is a subshell, so $!
	# would be that shell (which ignores SIGINT as an asynchronous
	# command) and cap_stop would wait forever. This way $! is tcpdump.
	# --immediate-mode: libpcap's TPACKET_V3 ring otherwise hands packets
	# over in blocks, up to a second late, and a capture stopped sooner
	# loses them all ("10 packets received by filter, 0 captured").
	# -B 131072 (KiB) and -s 65549: a ring that holds a whole burst (a
	# 1 MiB ping is about 1500 frames) while tcpdump is starved of CPU.
	# In immediate mode libpcap uses TPACKET_V2, whose ring has one slot
	# per frame sized for the snapshot length (the MTU is not used: the
	# bridge has offloads on, and the host's own frames are GSO frames up
	# to 64 KiB). With -s 0 (262144) a 32 MiB ring had 128 slots, and a
	# busy host lost 1,557 of the 5,600 1514-octet frames perftest's
	# ib_write_bw -s 4096 sent from the guest. 65549 is the largest frame
	# (an IP datagram of 65535 octets and its Ethernet header): about
	# 2,000 slots.
	# The log of an earlier run of NAME must go first: the redirection
	# below truncates it only once the background job runs, and the wait
	# for "listening on" could read the stale line before that and start
	# the traffic uncaptured (seen: a 24-octet pcap, "0 packets
	# received", in a tree where check-interop had run before).
	rm -f "$IWI_OUT/$name.tcpdump.log" "$IWI_OUT/$name.pcap"
	ip netns exec "$IWI_NETNS" tcpdump -i "$IWI_BRIDGE" -s 65549 -B 131072 -U --immediate-mode \
		-w "$IWI_OUT/$name.pcap" "$filter" >"$IWI_OUT/$name.tcpdump.log" 2>&1 &
	echo $! >"$IWI_OUT/$name.cap.pid"
	# tcpdump says "listening on" once the capture is open
	for _ in $(seq 50); do
		grep -q 'listening on' "$IWI_OUT/$name.tcpdump.log" 2>/dev/null && return 0
		sleep 0.1
	done
	log "tcpdump for $name did not start"
	return 1
}
cap_stop() {
	local pid
	pid=$(cat "$IWI_OUT/$1.cap.pid" 2>/dev/null) || return 0
	sleep 0.3 # let the last segments reach the capture
	# TERM, not INT: a background job of a non-interactive shell starts
	# with SIGINT ignored, and tcpdump then never ends (-U has written
	# every packet already; TERM closes the file the same way).
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$IWI_OUT/$1.cap.pid"
}

# wire NAME: decode $IWI_OUT/NAME.pcap with iwarp-replay and tshark
# (wire_check.py: no protocol error, every CRC good, both decoders agree
# field by field) and record the outcome. Extra arguments go to the check.
wire() {
	local name=$1 line rc drops
	shift
	# A capture with holes says nothing about the wire (both decoders
	# lose the stream at the first hole): report the loss instead.
	drops=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel$/\1/p' \
		"$IWI_OUT/$name.tcpdump.log" 2>/dev/null)
	if [ "${drops:-0}" != 0 ]; then
		result "wire-$name" capture FAIL "the capture lost $drops packets (tcpdump dropped them: host too busy); no verdict on the wire"
		return
	fi
	line=$(python3 "$IWI_SRC/tests/interop/wire_check.py" "$@" "$T/iwarp-replay" \
		"$IWI_OUT/$name.pcap" 2>&1)
	rc=$?
	# Its exit status too: a check that crashed (a Python traceback, e.g.
	# tshark's PDML for a capture of hundreds of MB) printed no FAIL line.
	case "$rc:$line" in
	*": FAIL"*) result "wire-$name" capture FAIL "$line" ;;
	0:?*) result "wire-$name" capture PASS "${line#wire }" ;;
	*) result "wire-$name" capture FAIL \
		"wire_check exit $rc: $(tail -n 3 <<<"${line:-printed nothing}" | tr '\n' ' ')" ;;
	esac
}

# finish: the scenario's exit status.
finish() {
	if [ -e "$IWI_OUT/.failed.$$" ]; then
		rm -f "$IWI_OUT/.failed.$$"
		exit 1
	fi
	exit 0
}
