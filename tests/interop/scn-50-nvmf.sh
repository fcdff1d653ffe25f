#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Scenario 50 (issue 14): the Linux kernel's NVMe/RDMA host (nvme-rdma
# over siw, in the guest) against iwarp-nvmet (libiwarp, userspace, in our
# namespace), backed by a file on our side. Needs the rig's nvme_core,
# nvme_fabrics and nvme_rdma modules, nvme-cli, and coreutils dd and
# sha256sum in the guest (rig/build.sh).
#
#   1. discovery: `nvme discover` lists the subsystem at our address/port;
#   2. connect with 2 I/O queues (the guest's controller reports 2, the
#      target accepted queues 1 and 2); the guest writes pattern A with
#      O_DIRECT, half at 4 KiB and half at 128 KiB, reads it back at both
#      sizes; after a disconnect the backing file on our side has A's
#      checksum;
#   3. reconnect: A reads back the same;
#   4. keep alive: the link goes silent for twice the KATO; the target
#      tears the controller down ("keep alive timeout expired");
#   5. the target killed (SIGKILL) while the guest writes pattern B after
#      A (the kill waits until the guest's disk has written part of B and
#      dd still runs) and restarted: the kernel host reconnects
#      (reconnect_delay 1, "Successfully reconnected" in its log), dd ends
#      well, A is intact and B is whole, in the guest and in the file;
#   6. the capture of steps 1-2 decodes alike in iwarp-replay and tshark.
#
# Env: IWI_NVMF_PORT (default 4420), IWI_NVMF_MB (size of A, default 8;
# B is twice that).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

SCN=nvmf
ROLE="libiwarp target"
PORT=${IWI_NVMF_PORT:-4420}
MB=${IWI_NVMF_MB:-8}
NQN=nqn.2026-11.org.libiwarp:interop
IMG=$IWI_OUT/nvmf.img
SHARE=${IWI_SHARE:-}
TPID=

fail() {
	result "$SCN" "$ROLE" FAIL "$*"
	stop_target
	finish
}

# start_target [NAMESPACE]: the backing file by default.
start_target() {
	# Not through hx in a subshell: $! must be the target itself.
	ip netns exec "$IWI_NETNS" "$T/iwarp-nvmet" -a "$IWI_HOST_IP" -p "$PORT" -n "$NQN" \
		-N "${1:-$IMG}" -s 64M -b 512 -v >>"$IWI_OUT/nvmf-target.log" 2>&1 &
	TPID=$!
	host_listening "$PORT" 20
}

stop_target() {
	[ -n "$TPID" ] || return 0
	kill -TERM "$TPID" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$TPID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$TPID" 2>/dev/null
	wait "$TPID" 2>/dev/null
	TPID=
}

# The guest's block device of our subsystem (nvmeXnY), or nothing. With
# native multipath (Debian's kernel) the disk hangs off the subsystem and
# the controller only has hidden nvmeXcYnZ paths.
guest_dev() {
	gx -t 20 "for s in /sys/class/nvme-subsystem/* /sys/class/nvme/*; do [ \"\$(cat \$s/subsysnqn 2>/dev/null)\" = $NQN ] || continue; for n in \$s/nvme*n*; do b=\${n##*/}; case \$b in *c*) continue ;; esac; [ -b /dev/\$b ] && echo /dev/\$b && exit 0; done; done; exit 1"
}

guest_connect() {
	gx -t 60 "echo transport=rdma,traddr=$IWI_HOST_IP,trsvcid=$PORT,nqn=$NQN,nr_io_queues=2,reconnect_delay=1,ctrl_loss_tmo=60,keep_alive_tmo=${1:-5} > /dev/nvme-fabrics" ||
		return 1
	for _ in $(seq 100); do
		DEV=$(guest_dev) && [ -n "$DEV" ] && return 0
		sleep 0.2
	done
	return 1
}

guest_disconnect() {
	gx -t 60 "for c in /sys/class/nvme/nvme*; do [ \"\$(cat \$c/subsysnqn 2>/dev/null)\" = $NQN ] && echo 1 > \$c/delete_controller; done; true"
}

# guest_sum OFFSET_BLOCKS BS COUNT: sha256 of what O_DIRECT reads.
guest_sum() {
	gx -t 120 "dd if=$DEV iflag=direct bs=$2 skip=$1 count=$3 2>/dev/null | sha256sum | cut -c1-64"
}

# file_sum OFFSET_MIB MIB: sha256 of a part of the backing file.
file_sum() {
	dd if="$IMG" bs=1M skip="$1" count="$2" 2>/dev/null | sha256sum | cut -c1-64
}

# ctrl_attr NAME: a sysfs attribute of the guest's controller of our
# subsystem (the first one, there is only one).
ctrl_attr() {
	gx -t 20 "for c in /sys/class/nvme/nvme*; do [ \"\$(cat \$c/subsysnqn 2>/dev/null)\" = $NQN ] && cat \$c/$1 && exit 0; done; exit 1"
}

# guest_written: sectors the guest's disk has written (field 7 of stat),
# summed over the paths (nvmeXcYnZ): with native multipath the disk the
# scenario writes to keeps no statistics of its own.
WRITTEN="cat /sys/block/nvme*c*n*/stat | awk '{s += \$7} END {print s}'"
guest_written() { gx -t 20 "$WRITTEN"; }

reconnects() { gx -t 20 "dmesg | grep -c 'Successfully reconnected'; true"; }

# same ROLE GOT WANT PASS-DETAIL: one result from a comparison.
same() {
	if [ "$2" = "$3" ]; then
		result "$SCN" "$1" PASS "$4"
	else
		result "$SCN" "$1" FAIL "got $2, want $3"
	fi
}

# ------------------------------------------------------------ steps

step_discover() {
	local out
	out=$(gx -t 60 "nvme discover -t rdma -a $IWI_HOST_IP -s $PORT")
	if grep -q "subnqn: *$NQN" <<<"$out" && grep -q "trsvcid: *$PORT" <<<"$out"; then
		result "$SCN" discover PASS "nvme discover lists $NQN"
	else
		result "$SCN" discover FAIL "nvme discover: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	fi
}

# The host asked for 2 I/O queues: its controller counts them (plus the
# admin queue) and the target saw Connects for queue IDs 1 and 2.
check_queues() {
	local qc
	qc=$(ctrl_attr queue_count)
	if [ "$qc" = 3 ] && grep -q 'queue 2: accepted' "$IWI_OUT/nvmf-target.log"; then
		result "$SCN" queues PASS "connected with 2 I/O queues ($DEV)"
	else
		result "$SCN" queues FAIL "guest queue_count '$qc' (want 3 with the admin queue)"
	fi
}

# write_read_a ROLE: pattern A over the first MB MiB with O_DIRECT, half
# at 4 KiB and half at 128 KiB, read back whole at both sizes.
write_read_a() {
	local half=$((MB / 2)) got4 got128
	gx -t 180 "dd if=/mnt/host/nvmf-a of=$DEV oflag=direct bs=4k count=$((half * 256)) 2>/dev/null &&
		dd if=/mnt/host/nvmf-a of=$DEV oflag=direct bs=128k skip=$((half * 8)) seek=$((half * 8)) count=$((half * 8)) 2>/dev/null" ||
		fail "O_DIRECT writes failed"
	got4=$(guest_sum 0 4k $((MB * 256)))
	got128=$(guest_sum 0 128k $((MB * 8)))
	if [ "$got4" = "$WANT_A" ] && [ "$got128" = "$WANT_A" ]; then
		result "$SCN" "$1" PASS "$MB MiB at 4 KiB and 128 KiB O_DIRECT, read back at both sizes"
	else
		result "$SCN" "$1" FAIL "checksums 4k=$got4 128k=$got128, want $WANT_A"
	fi
}

step_write_read() { write_read_a "write/read"; }

# A RAM namespace moves its data in place: the target's RDMA READs land in
# the namespace itself and its RDMA WRITEs are sent from it (the exit
# summary counts them).
step_ram() {
	start_target "ram:${MB}M" || { result "$SCN" "RAM namespace" FAIL "no target" && return; }
	if guest_connect; then
		write_read_a "RAM namespace"
		guest_disconnect
	else
		result "$SCN" "RAM namespace" FAIL "no connect"
	fi
	stop_target
	grep -q '^iwarp-nvmet: loop .* [1-9][0-9]* in place, ' "$IWI_OUT/nvmf-target.log" &&
		result "$SCN" "RAM in place" PASS "the target counted I/Os in place" ||
		result "$SCN" "RAM in place" FAIL "no I/O in place in the target's summary"
}

check_file_a() {
	local got
	got=$(file_sum 0 "$MB")
	same "backing file" "$got" "$WANT_A" "checksum matches after disconnect"
}

step_reconnect() {
	local again
	guest_connect || { result "$SCN" reconnect FAIL "no reconnect" && return; }
	again=$(guest_sum 0 128k $((MB * 8)))
	same reconnect "$again" "$WANT_A" "data intact after reconnect"
	guest_disconnect
}

kato_expiries() { grep -c "keep alive timeout expired" "$IWI_OUT/nvmf-target.log"; }

# KATO 2 s; the link down for 4 s, so the host's keep alives (every
# KATO/2) stop reaching us. Exactly one expiry: none before (a host that
# kept talking must never be cut off).
step_keep_alive() {
	local n0 n
	n0=$(kato_expiries)
	guest_connect 2 || { result "$SCN" "keep alive" FAIL "no connect" && return; }
	hx ip link set "$IWI_BRIDGE" down
	sleep 4
	hx ip link set "$IWI_BRIDGE" up
	n=$(kato_expiries)
	if [ "$n0" = 0 ] && [ "$n" = 1 ]; then
		result "$SCN" "keep alive" PASS "silent host's controller torn down (KATO 2 s)"
	else
		result "$SCN" "keep alive" FAIL "'keep alive timeout expired' $n0 times before the silence, $n after (want 0, 1)"
	fi
	guest_disconnect
}

# kill_mid_write BASE: SIGKILL the target once the guest's disk has
# written 2 MiB of B past BASE sectors (watched in the guest: a round trip
# per look would be too slow) while dd still runs; false when dd ended
# before the kill.
kill_mid_write() {
	local go
	go=$(gx -t 90 "i=0; while [ ! -s /tmp/nvmf-dd.rc ] && [ \$i -lt 1200 ]; do
		[ \$(( \$($WRITTEN) - $1 )) -ge 4096 ] && echo go && exit 0; sleep 0.05; i=\$((i+1)); done; echo late")
	kill -KILL "$TPID"
	wait "$TPID" 2>/dev/null
	TPID=
	[ "$go" = go ] && gx -t 20 "[ ! -s /tmp/nvmf-dd.rc ]"
}

step_restart() {
	local base rc0 before b killed=1
	guest_connect || { result "$SCN" "target restart" FAIL "no connect" && return; }
	base=$(guest_written)
	rc0=$(reconnects)
	guest_bg nvmf-dd "dd if=/mnt/host/nvmf-b of=$DEV oflag=direct bs=128k seek=$((MB * 8))"
	kill_mid_write "$base" || killed=0
	sleep 2
	start_target || fail "iwarp-nvmet did not restart"
	if [ "$killed" = 0 ]; then
		result "$SCN" "target restart" FAIL "the write ended before the kill (not mid-I/O)"
	elif ! guest_wait nvmf-dd 180; then
		result "$SCN" "target restart" FAIL "dd failed: $(guest_log nvmf-dd | tr '\n' ' ')"
	else
		before=$(guest_sum 0 128k $((MB * 8)))
		b=$(guest_sum $((MB * 8)) 128k $((MB * 16)))
		if [ "$before" != "$WANT_A" ] || [ "$b" != "$WANT_B" ]; then
			result "$SCN" "target restart" FAIL "after the restart A=$before B=$b, want $WANT_A $WANT_B"
		elif [ "$(reconnects)" -le "$rc0" ]; then
			result "$SCN" "target restart" FAIL "no 'Successfully reconnected' in the guest's log"
		else
			result "$SCN" "target restart" PASS "killed mid-write, restarted, the host reconnected; A intact, B whole"
		fi
	fi
	guest_disconnect
}

check_file_ab() {
	local a b
	a=$(file_sum 0 "$MB")
	b=$(file_sum "$MB" $((MB * 2)))
	same "backing file 2" "$a $b" "$WANT_A $WANT_B" "A and B in the file after the restart"
}

# ------------------------------------------------------------ setup

[ -x "$T/iwarp-nvmet" ] || fail "$T/iwarp-nvmet not built"
[ -n "$SHARE" ] || { result "$SCN" "$ROLE" SKIP "no shared folder for the pattern"; finish; }
guest_healthy || fail "the guest kernel is not healthy before the run"
gx -t 30 "modprobe nvme-rdma" || fail "the guest has no nvme-rdma module (rig without the NVMe modules)"
gx -t 20 "command -v nvme" >/dev/null || fail "the guest has no nvme-cli (rig without it)"
rm -f "$IMG" "$IWI_OUT/nvmf-target.log"
head -c $((MB << 20)) /dev/urandom >"$SHARE/nvmf-a"
head -c $((MB << 21)) /dev/urandom >"$SHARE/nvmf-b"
WANT_A=$(sha256sum "$SHARE/nvmf-a" | cut -c1-64)
WANT_B=$(sha256sum "$SHARE/nvmf-b" | cut -c1-64)
start_target || fail "iwarp-nvmet did not listen on $IWI_HOST_IP:$PORT"

cap_start nvmf "tcp port $PORT" || fail "no capture"
step_discover
guest_connect || fail "the kernel host did not connect: $(gx -t 20 'dmesg | grep -i nvme | tail -5' | tr '\n' ' ')"
check_queues
step_write_read
guest_disconnect
cap_stop nvmf
check_file_a
step_reconnect
step_keep_alive
step_restart
stop_target
check_file_ab
step_ram
rm -f "$SHARE/nvmf-a" "$SHARE/nvmf-b"
guest_healthy || result "$SCN" guest FAIL "the guest kernel hit a BUG/oops"
wire nvmf
finish
