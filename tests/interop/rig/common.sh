# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash disable=SC2034 # the settings are used by the scripts that source us
# Settings shared by the libiwarp interop rig scripts (sourced, not run).
#
# The rig boots Debian 12's kernel in QEMU with siw.ko (which Debian ships
# disabled, so build.sh compiles it from linux-source-6.1) and the rdma-core
# userspace, and links the guest to a private network namespace. Every
# default below differs from other siw rigs on the same machine (cache,
# namespace, link names, addresses, QEMU name), so several can run at once.
# Override any of them through the environment.

IWI_RIG_CACHE=${IWI_RIG_CACHE:-${IWARP_INTEROP_CACHE:-/var/tmp/libiwarp-interop}}
IWI_RIG_NETNS=${IWI_RIG_NETNS:-iwarpi}
IWI_RIG_BRIDGE=${IWI_RIG_BRIDGE:-iwibr0}
IWI_RIG_TAP=${IWI_RIG_TAP:-iwitap0}
IWI_RIG_HOST_IP=${IWI_RIG_HOST_IP:-10.213.77.1}
IWI_RIG_GUEST_IP=${IWI_RIG_GUEST_IP:-10.213.77.2}
IWI_RIG_PREFIX=${IWI_RIG_PREFIX:-24}
IWI_RIG_MTU=${IWI_RIG_MTU:-1500}
IWI_RIG_MAC=${IWI_RIG_MAC:-52:54:00:d5:4d:02}
IWI_RIG_MEM=${IWI_RIG_MEM:-2048}              # guest RAM, MiB
IWI_RIG_SMP=${IWI_RIG_SMP:-2}                 # vCPUs (rping/perftest pin server and client apart)
IWI_RIG_NCMD=${IWI_RIG_NCMD:-6}               # command channels: commands that can run at once
IWI_RIG_BOOT_TIMEOUT=${IWI_RIG_BOOT_TIMEOUT:-300}
# auto | kvm | tcg. auto takes KVM only when a hardware module (kvm_intel,
# kvm_amd) backs /dev/kvm: where kvm_pvm provides it, an unmodified kernel
# crawls and then dies on "emulation failure", so TCG is the only choice.
IWI_RIG_ACCEL=${IWI_RIG_ACCEL:-auto}
IWI_RIG_PIN=${IWI_RIG_PIN:-1}                 # pin vCPU threads (see start.sh)
# 9p folder shared as /mnt/host in the guest; "none" leaves it out.
IWI_RIG_SHARE=${IWI_RIG_SHARE:-$IWI_RIG_CACHE/share}
# The name QEMU runs under; stop.sh checks it before it kills a pid.
IWI_RIG_QEMU_NAME=libiwarp-interop

C=$IWI_RIG_CACHE
DEBS=$C/debs       # downloaded .debs (guest packages, kernel image, kernel source)
KROOT=$C/kernel    # the linux-image package, extracted
SRCDIR=$C/src      # drivers/infiniband/sw/siw from linux-source
BUILDDIR=$C/siw    # out-of-tree build of siw.ko
ROOTFS=$C/rootfs   # guest root, packed into the initramfs
IMG=$C/images      # vmlinuz, initrd.img, siw.ko and their stamps
RUN=$C/run         # pid file, sockets, console log of the running guest

rig_log() { printf '[iwi-rig] %s\n' "$*" >&2; }
rig_die() {
	printf '[iwi-rig] ERROR: %s\n' "$*" >&2
	exit 1
}

case "$C" in
/*) ;;
*) rig_die "IWI_RIG_CACHE must be an absolute path, not '$C'" ;;
esac
[ "$C" != / ] || rig_die "refusing IWI_RIG_CACHE=/"

# pick_accel: kvm or tcg (see IWI_RIG_ACCEL).
pick_accel() {
	case "$IWI_RIG_ACCEL" in
	kvm | tcg) echo "$IWI_RIG_ACCEL" ;;
	auto)
		if [ -c /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] &&
			{ [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
			echo kvm
		else
			echo tcg
		fi
		;;
	*) rig_die "IWI_RIG_ACCEL must be auto, kvm or tcg" ;;
	esac
}

# qemu_alive: our QEMU is running. The pid file alone is not trusted: the
# process must carry our -name and our run directory on its command line.
qemu_alive() {
	local pid cmd
	[ -s "$RUN/qemu.pid" ] || return 1
	pid=$(cat "$RUN/qemu.pid")
	[ -r "/proc/$pid/cmdline" ] || return 1
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	case "$cmd" in
	*"-name $IWI_RIG_QEMU_NAME,"*"$RUN/"*) return 0 ;;
	esac
	return 1
}

# netns_exists NAME
netns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qxF "$1"; }
