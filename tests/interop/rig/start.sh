#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# start.sh: boot the interop guest (built by build.sh) in the background,
# wait until it is ready, add the siw link and print how to reach it. Does
# nothing when it is already running the current image.
#
# Network: QEMU runs inside the namespace $IWI_RIG_NETNS (iwarpi), on tap
# $IWI_RIG_TAP enslaved to bridge $IWI_RIG_BRIDGE, which holds
# $IWI_RIG_HOST_IP; the guest's eth0 is $IWI_RIG_GUEST_IP. The namespace has
# no other link and no route, so nothing leaves the machine and no host
# interface is touched. Host programs reach the guest with
#   ip netns exec iwarpi PROGRAM ...
#
# Accelerator: KVM when a hardware KVM module backs /dev/kvm, TCG otherwise
# (see common.sh); the guest boots in seconds under TCG as well.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

[ "$(id -u)" = 0 ] || rig_die "must run as root (network namespace, tap device)"
for f in vmlinuz initrd.img initrd.stamp kver; do
	[ -s "$IMG/$f" ] || rig_die "$IMG/$f missing: run build.sh first"
done
if qemu_alive; then
	if [ "$(cat "$RUN/booted.stamp" 2>/dev/null)" = "$(cat "$IMG/initrd.stamp")" ]; then
		rig_log "already running (qemu pid $(cat "$RUN/qemu.pid"))"
		exit 0
	fi
	rig_log "running an older guest image: restarting"
	"$HERE/stop.sh"
fi
T0=$SECONDS
mkdir -p "$RUN"
rm -f "$RUN"/*.sock "$RUN/qemu.pid" "$RUN/console.log" "$RUN/booted.stamp"
echo "$IWI_RIG_NCMD" >"$RUN/ncmd"

# ------------------------------------------------------------ network
NS=$IWI_RIG_NETNS
netns_exists "$NS" || ip netns add "$NS"
echo "$NS" >"$RUN/netns"
nsx() { ip netns exec "$NS" "$@"; }
nsx ip link set lo up
nsx ip link show "$IWI_RIG_BRIDGE" >/dev/null 2>&1 ||
	nsx ip link add "$IWI_RIG_BRIDGE" type bridge
nsx ip link show "$IWI_RIG_TAP" >/dev/null 2>&1 ||
	nsx ip tuntap add dev "$IWI_RIG_TAP" mode tap
nsx ip link set "$IWI_RIG_TAP" master "$IWI_RIG_BRIDGE"
nsx ip link set "$IWI_RIG_BRIDGE" mtu "$IWI_RIG_MTU"
nsx ip link set "$IWI_RIG_TAP" mtu "$IWI_RIG_MTU"
nsx ip addr replace "$IWI_RIG_HOST_IP/$IWI_RIG_PREFIX" dev "$IWI_RIG_BRIDGE"
nsx ip link set "$IWI_RIG_TAP" up
nsx ip link set "$IWI_RIG_BRIDGE" up

# ------------------------------------------------------------ QEMU
ACCEL=$(pick_accel)
echo "$ACCEL" >"$RUN/accel"
# shellcheck disable=SC2054 # QEMU's own comma-separated options
if [ "$ACCEL" = kvm ]; then
	ACCEL_ARGS=(-accel kvm -cpu host)
else
	ACCEL_ARGS=(-accel tcg,thread=multi,tb-size=512 -cpu max)
fi
# The guest's clock: without help the kernel finds TCG's vCPU TSCs
# "unsynchronized" at boot and falls back to the HPET, so gettimeofday is an
# emulated device read and perftest's rdtsc-against-gettimeofday regression
# failed in about half the runs (r^2 < 0.9, then 0.00 MB/sec), each a repeat
# in scenario 40. TCG's rdtsc is the host's TSC for every vCPU, so it is in
# step across them: tsc=reliable keeps it as the clocksource (0 failures in
# 18 runs of ib_write_bw, 3 in 6 before).
KARGS="tsc=reliable clocksource=tsc"
[ "$ACCEL" = kvm ] && KARGS=""
SHARE_ARGS=()
share=0
if [ "$IWI_RIG_SHARE" != none ]; then
	mkdir -p "$IWI_RIG_SHARE"
	SHARE_ARGS=(-virtfs "local,path=$IWI_RIG_SHARE,mount_tag=hostshare,security_model=none,id=fs0")
	share=1
fi
# shellcheck disable=SC2054 # QEMU's own comma-separated options
QARGS=(
	-name "$IWI_RIG_QEMU_NAME,process=iwi-qemu,debug-threads=on"
	-machine q35 "${ACCEL_ARGS[@]}" -smp "$IWI_RIG_SMP" -m "$IWI_RIG_MEM"
	-kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img"
	-append "console=ttyS0 panic=-1 loglevel=5 $KARGS iwi.ip=$IWI_RIG_GUEST_IP/$IWI_RIG_PREFIX iwi.mtu=$IWI_RIG_MTU iwi.share=$share"
	-display none -no-reboot -nodefaults
	-chardev "socket,id=ser0,path=$RUN/console.sock,server=on,wait=off,logfile=$RUN/console.log"
	-serial chardev:ser0
	-monitor "unix:$RUN/monitor.sock,server=on,wait=off"
	-device virtio-serial-pci,id=vser0
	"${SHARE_ARGS[@]}"
	-netdev "tap,id=n0,ifname=$IWI_RIG_TAP,script=no,downscript=no"
	-device "virtio-net-pci,netdev=n0,mac=$IWI_RIG_MAC"
	-pidfile "$RUN/qemu.pid" -daemonize
)
for ((i = 0; i < IWI_RIG_NCMD; i++)); do
	QARGS+=(-chardev "socket,id=cmd$i,path=$RUN/cmd$i.sock,server=on,wait=off"
		-device "virtserialport,bus=vser0.0,chardev=cmd$i,name=iwi.cmd$i")
done

rig_log "booting the guest ($ACCEL, kernel $(cat "$IMG/kver"))"
nsx qemu-system-x86_64 "${QARGS[@]}" 2>"$RUN/qemu.err" || {
	cat "$RUN/qemu.err" >&2
	rig_die "qemu did not start"
}
booted=0
for ((i = 0; i < IWI_RIG_BOOT_TIMEOUT * 10; i++)); do
	if grep -q IWI-GUEST-READY "$RUN/console.log" 2>/dev/null; then
		booted=1
		break
	fi
	qemu_alive || {
		tail -n 30 "$RUN/console.log" >&2 || true
		rig_die "qemu exited during boot"
	}
	sleep 0.1
done
if [ "$booted" = 0 ]; then
	tail -n 30 "$RUN/console.log" >&2 || true
	rig_die "guest not ready after ${IWI_RIG_BOOT_TIMEOUT}s (console: $RUN/console.log; stop.sh to clean up)"
fi

# Pin each vCPU thread to a host CPU (vCPU n -> CPU n mod nproc). Under TCG
# the guest's TSC is the TSC of whichever host CPU runs the vCPU thread, so
# a migrating thread makes time jump for rdtsc users (perftest prints 0.00
# MB/s or inf usec).
if [ "$IWI_RIG_PIN" = 1 ]; then
	qpid=$(cat "$RUN/qemu.pid")
	ncpu=$(nproc)
	for t in /proc/"$qpid"/task/*; do
		comm=$(cat "$t/comm" 2>/dev/null) || continue
		case "$comm" in
		"CPU "*/*)
			n=${comm#CPU }
			n=${n%%/*}
			taskset -pc $((n % ncpu)) "${t##*/}" >/dev/null 2>&1 || true
			;;
		esac
	done
fi

"$HERE/guest.sh" -t 30 true || rig_die "the guest's command channel does not answer"
# siw on eth0 only: rdma_cm cannot use a siw device on lo in this kernel
# (loopback addresses resolve to ENOENT/ENODEV), and a second device only
# makes a wildcard listener bind twice. Guest-local siw1<->siw1 traffic
# still works over the guest address.
"$HERE/guest.sh" -t 30 'rdma link add siw1 type siw netdev eth0' ||
	rig_die "rdma link add siw1 failed (see the guest's dmesg)"
links=$("$HERE/guest.sh" -t 30 'rdma link show siw1/1')
case "$links" in
*"state ACTIVE"*) ;;
*) rig_die "siw1 is not ACTIVE: $links" ;;
esac
cp "$IMG/initrd.stamp" "$RUN/booted.stamp"

cat <<INFO
[iwi-rig] up in $((SECONDS - T0))s: qemu pid $(cat "$RUN/qemu.pid"), $ACCEL, console log $RUN/console.log
  guest:          $HERE/guest.sh [-t SECS] 'CMD...'
  siw device:     siw1 on eth0, $IWI_RIG_GUEST_IP
  network:        netns $NS, $IWI_RIG_BRIDGE $IWI_RIG_HOST_IP/$IWI_RIG_PREFIX <-> guest eth0 $IWI_RIG_GUEST_IP
  host programs:  ip netns exec $NS PROGRAM...
  capture:        ip netns exec $NS tcpdump -i $IWI_RIG_BRIDGE -w FILE
  shared folder:  $([ "$share" = 1 ] && echo "$IWI_RIG_SHARE <-> guest /mnt/host" || echo none)
  guest shell:    socat -,raw,echo=0 UNIX-CONNECT:$RUN/console.sock
  stop:           $HERE/stop.sh
INFO
