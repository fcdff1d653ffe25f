#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# build.sh [--clean]: build the interop rig's guest into $IWI_RIG_CACHE
# (default /var/tmp/libiwarp-interop, outside any source tree, so a fresh
# clone or another build tree reuses it).
#
# Debian's kernel is built with CONFIG_RDMA_SIW off, so this script:
#  1. installs the host packages it needs (QEMU, the guest kernel's headers,
#     a compiler, cpio, tcpdump, tshark...) with apt-get, only when missing;
#  2. downloads Debian's linux-image for that ABI, linux-source-6.1 and the
#     guest's userspace (.debs, with their dependency closure);
#  3. builds siw.ko out of tree from linux-source's drivers/infiniband/sw/siw
#     against linux-headers-$KVER (same ABI, so the vermagic matches);
#  4. assembles a small root (busybox, dash, rdma-core, perftest, tcpdump,
#     iproute2, kmod and the kernel modules siw needs) into an initramfs.
# Each step keeps a stamp of its inputs and is skipped when they have not
# changed, so a second run takes a few seconds.
#
# Exit status: 0 when the guest is built (or already was); 77 when this
# machine cannot build it (not root, not Debian amd64, a package cannot be
# installed or is not in the archive); 1 for anything else.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

cannot() {
	printf '[iwi-rig] cannot build the guest on this machine: %s\n' "$*" >&2
	{ echo "$*" >"$C/build.cannot"; } 2>/dev/null || true # for run.sh's banner
	exit 77
}

T0=$SECONDS
[ "$(id -u)" = 0 ] || cannot "must run as root (apt-get, depmod, chroot)"
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
	cannot "not a Debian system (no apt-get/dpkg-deb)"
fi
arch=$(dpkg --print-architecture)
[ "$arch" = amd64 ] || cannot "the guest is Debian amd64 and this host is $arch"

if [ "${1:-}" = --clean ]; then
	! qemu_alive || rig_die "the rig is running; run stop.sh first"
	rig_log "removing $C"
	rm -rf "$C"
elif [ $# -gt 0 ]; then
	rig_die "usage: build.sh [--clean]"
fi
mkdir -p "$C" "$DEBS" "$IMG" "$RUN"
rm -f "$C/build.cannot"

# One build at a time per cache (two test trees may call us together).
exec 9>"$C/build.lock"
flock -w 1800 9 || rig_die "another build.sh still holds $C/build.lock after 30 min"

export DEBIAN_FRONTEND=noninteractive
# Others may be running apt on this machine: wait for the dpkg lock.
APT=(apt-get -q -o DPkg::Lock::Timeout=600)
apt_updated=0
apt_update() {
	[ "$apt_updated" = 0 ] || return 0
	rig_log "apt-get update"
	"${APT[@]}" update >"$C/apt.log" 2>&1 ||
		cannot "apt-get update failed (see $C/apt.log)"
	apt_updated=1
}

# ------------------------------------------------------------ guest kernel ABI
# Debian removes old ABIs from the archive, so the default is whatever
# linux-image-amd64 points at now; the image, headers and source must match.
kver_from_archive() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1
}
KVER=${IWI_RIG_KVER:-}
if [ -z "$KVER" ]; then
	KVER=$(kver_from_archive)
	[ -n "$KVER" ] || { apt_update && KVER=$(kver_from_archive); }
	[ -n "$KVER" ] || cannot "the archive has no linux-image-amd64 (Debian 12 main expected)"
fi
case "$KVER" in
6.1.*) ;;
*) cannot "siw is built from linux-source-6.1, but the kernel ABI is $KVER (set IWI_RIG_KVER)" ;;
esac
HDRDIR=/usr/src/linux-headers-$KVER

# ------------------------------------------------------------ host packages
HOST_PKGS=(qemu-system-x86 "linux-headers-$KVER" make gcc libc6-dev kmod cpio gzip
	xz-utils python3 tshark tcpdump iproute2 binutils util-linux)
missing=()
# (dpkg-query fails when it has never heard of one of them: not an error)
installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${HOST_PKGS[@]}" 2>/dev/null |
	awk '$2 == "ii" {print $1}') || true
for p in "${HOST_PKGS[@]}"; do
	grep -qxF "$p" <<<"$installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	rig_log "installing host packages: ${missing[*]}"
	if ! "${APT[@]}" install -y --no-install-recommends "${missing[@]}" >"$C/apt.log" 2>&1; then
		apt_update
		"${APT[@]}" install -y --no-install-recommends "${missing[@]}" >"$C/apt.log" 2>&1 ||
			cannot "apt-get cannot install ${missing[*]} (see $C/apt.log)"
	fi
fi
[ -f "$HDRDIR/Makefile" ] || rig_die "kernel headers missing at $HDRDIR"

# ------------------------------------------------------------ guest packages
# The guest's userspace with its Depends/Pre-Depends closure, minus the
# packaging and login machinery that a busybox init never runs.
GUEST_PKGS="busybox-static dash libc6 libibverbs1 ibverbs-providers librdmacm1
 rdmacm-utils perftest ibverbs-utils iproute2 kmod tcpdump ethtool netbase nvme-cli"
EXCLUDE_RE='^(adduser|cdebconf|debconf|dpkg|install-info|passwd|libpam.*|libsemanage.*|libsepol.*|libaudit.*|libdebian-installer.*|libnewt.*|libslang.*|libtextwrap.*|tar|readline-common|libreadline.*|libelogind0|libcap2-bin|perl-base|init-system-helpers|lsb-base|udev|systemd.*|sysvinit-utils|debianutils|coreutils|base-files|mawk|gawk|libcrypt1|cpio|util-linux.*|psmisc)$'
# Single binaries taken from these (libc only): busybox's applets of the same
# names resolve commands to its own applets first (`timeout 5 sh` would run
# busybox's ash, `taskset -c 0 ip` its ip), which scenarios must not trip on.
PICK_PKGS="util-linux coreutils psmisc"
PICK_BINS="usr/bin/taskset usr/bin/setsid usr/bin/timeout usr/bin/killall bin/dd usr/bin/sha256sum"

# The manifest (package and .deb file name) is recomputed only when the apt
# lists or the package selection change.
key=$({
	echo "$KVER|$GUEST_PKGS|$EXCLUDE_RE|$PICK_PKGS"
	stat -c '%n %Y %s' /var/lib/apt/lists/*_Packages* 2>/dev/null || true
} | sha256sum | cut -c1-32)
manifest() {
	local pkgs uris
	# shellcheck disable=SC2086 # a word list
	pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances $GUEST_PKGS 2>/dev/null |
		grep -v '^[ <]' | sort -u | grep -Ev "$EXCLUDE_RE") || return 1
	# shellcheck disable=SC2086 # word lists
	uris=$(apt-get download --print-uris $pkgs $PICK_PKGS "linux-image-$KVER" linux-source-6.1 2>/dev/null) ||
		return 1
	awk '{f = $2; p = f; sub(/_.*/, "", p); print p, f}' <<<"$uris" | sort
}
make_manifest() {
	if ! manifest >"$DEBS/manifest.tmp" || ! grep -q '^linux-source-6.1 ' "$DEBS/manifest.tmp"; then
		apt_update
		if ! manifest >"$DEBS/manifest.tmp" || ! grep -q '^linux-source-6.1 ' "$DEBS/manifest.tmp"; then
			cannot "the archive lacks a guest package (apt-get download --print-uris failed)"
		fi
	fi
	mv "$DEBS/manifest.tmp" "$DEBS/manifest"
	echo "$key" >"$DEBS/manifest.key"
}
if [ "$(cat "$DEBS/manifest.key" 2>/dev/null)" != "$key" ] || [ ! -s "$DEBS/manifest" ]; then
	make_manifest
fi
deb_of() { awk -v p="$1" '$1 == p {print $2}' "$DEBS/manifest"; }

# download: fetch the manifest's .debs that are not here yet.
download() {
	local need=() p f
	while read -r p f; do
		[ -s "$DEBS/$f" ] || need+=("$p")
	done <"$DEBS/manifest"
	[ ${#need[@]} -gt 0 ] || return 0
	rig_log "downloading ${#need[@]} packages"
	(cd "$DEBS" && apt-get -q download "${need[@]}" >"$C/download.log" 2>&1)
}
if ! download; then
	# Stale package lists name versions the mirror no longer has.
	apt_update
	make_manifest
	download || cannot "apt-get download failed (see $C/download.log)"
fi
# Drop .debs that the archive has replaced since the last build.
for f in "$DEBS"/*.deb; do
	[ -e "$f" ] || continue
	grep -qF " ${f##*/}" "$DEBS/manifest" || rm -f "$f"
done

KDEB=$(deb_of "linux-image-$KVER")
SDEB=$(deb_of linux-source-6.1)
if [ -z "$KDEB" ] || [ -z "$SDEB" ]; then
	rig_die "the manifest lacks the kernel image or source"
fi
KV=$(dpkg-deb -f "$DEBS/$KDEB" Version)
SV=$(dpkg-deb -f "$DEBS/$SDEB" Version)
HV=$(dpkg-query -W -f='${Version}' "linux-headers-$KVER")
if [ "$KV" != "$SV" ] || [ "$KV" != "$HV" ]; then
	rig_log "note: versions differ (image $KV, source $SV, headers $HV); the ABI $KVER is the same"
fi

# ------------------------------------------------------------ kernel image
if [ "$(cat "$KROOT/.stamp" 2>/dev/null)" != "$KDEB" ]; then
	rig_log "extracting $KDEB"
	rm -rf "$KROOT"
	mkdir -p "$KROOT"
	dpkg-deb -x "$DEBS/$KDEB" "$KROOT"
	depmod -b "$KROOT" "$KVER"
	echo "$KDEB" >"$KROOT/.stamp"
fi
cmp -s "$KROOT/boot/vmlinuz-$KVER" "$IMG/vmlinuz" || cp "$KROOT/boot/vmlinuz-$KVER" "$IMG/vmlinuz"

# ------------------------------------------------------------ siw.ko
SIWSRC=$SRCDIR/drivers/infiniband/sw/siw
if [ "$(cat "$SRCDIR/.stamp" 2>/dev/null)" != "$SDEB" ]; then
	rig_log "extracting drivers/infiniband/sw/siw from $SDEB"
	rm -rf "$SRCDIR"
	mkdir -p "$SRCDIR"
	dpkg-deb --fsys-tarfile "$DEBS/$SDEB" |
		tar -xO ./usr/src/linux-source-6.1.tar.xz |
		tar -xJ -C "$SRCDIR" --strip-components=1 --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*'
	[ -s "$SIWSRC/Makefile" ] || rig_die "no siw sources in $SDEB"
	echo "$SDEB" >"$SRCDIR/.stamp"
fi
want="$SDEB $KVER $HV"
if [ ! -s "$IMG/siw.ko" ] || [ "$(cat "$IMG/siw.ko.stamp" 2>/dev/null)" != "$want" ]; then
	rig_log "building siw.ko against $HDRDIR"
	rm -rf "$BUILDDIR"
	mkdir -p "$BUILDDIR"
	cp "$SIWSRC"/*.[ch] "$BUILDDIR/"
	# The object list comes from upstream's own Makefile; only the
	# CONFIG_RDMA_SIW condition (off in Debian's config) is replaced.
	# shellcheck disable=SC2016 # a literal $(CONFIG_...)
	sed 's/^obj-\$(CONFIG_RDMA_SIW)/obj-m/' "$SIWSRC/Makefile" >"$BUILDDIR/Kbuild"
	grep -q '^obj-m' "$BUILDDIR/Kbuild" || rig_die "unexpected $SIWSRC/Makefile"
	make -C "$HDRDIR" M="$BUILDDIR" -j"$(nproc)" modules >"$BUILDDIR/build.log" 2>&1 || {
		tail -n 40 "$BUILDDIR/build.log" >&2
		rig_die "siw.ko build failed (log: $BUILDDIR/build.log)"
	}
	vm=$(modinfo -F vermagic "$BUILDDIR/siw.ko")
	case "$vm" in "$KVER "*) ;; *) rig_die "siw.ko vermagic '$vm' is not $KVER" ;; esac
	strip --strip-debug -o "$IMG/siw.ko" "$BUILDDIR/siw.ko"
	echo "$want" >"$IMG/siw.ko.stamp"
fi

# ------------------------------------------------------------ guest root
stamp=$({
	echo "$KVER $IWI_RIG_HOST_IP $IWI_RIG_GUEST_IP"
	cat "$DEBS/manifest" "$IMG/siw.ko" "$HERE/build.sh" "$HERE/guest/inittab" \
		"$HERE/guest/rcS" "$HERE/guest/cmdloop"
} | sha256sum | cut -c1-32)
if [ -s "$IMG/initrd.img" ] && [ "$(cat "$IMG/initrd.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$KVER" >"$IMG/kver"
	rig_log "guest image up to date ($KVER, $((SECONDS - T0))s)"
	exit 0
fi

rig_log "assembling the guest root"
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"
while read -r p f; do
	case " $PICK_PKGS linux-image-$KVER linux-source-6.1 " in *" $p "*) continue ;; esac
	dpkg-deb -x "$DEBS/$f" "$ROOTFS"
done <"$DEBS/manifest"
# Merged /usr, as on a current Debian system.
for d in bin sbin lib lib64; do
	if [ -d "$ROOTFS/$d" ] && [ ! -L "$ROOTFS/$d" ]; then
		mkdir -p "$ROOTFS/usr/$d"
		cp -a "$ROOTFS/$d/." "$ROOTFS/usr/$d/"
		rm -rf "${ROOTFS:?}/$d"
	fi
	mkdir -p "$ROOTFS/usr/$d"
	ln -sfn "usr/$d" "$ROOTFS/$d"
done
rm -rf "$ROOTFS"/usr/share/{doc,man,info,locale,lintian,bug}
pick=$(mktemp -d)
trap 'rm -rf "$pick"' EXIT
for p in $PICK_PKGS; do
	dpkg-deb -x "$DEBS/$(deb_of "$p")" "$pick"
done
for b in $PICK_BINS; do
	[ -x "$pick/$b" ] || rig_die "$b not found in $PICK_PKGS"
	cp "$pick/$b" "$ROOTFS/$b"
done
# Busybox applets for every command no package provides.
"$ROOTFS/usr/bin/busybox" --list-full | while read -r a; do
	a=${a#/}
	b=${a##*/}
	if [ -e "$ROOTFS/usr/bin/$b" ] || [ -e "$ROOTFS/usr/sbin/$b" ] ||
		[ -L "$ROOTFS/usr/bin/$b" ] || [ -L "$ROOTFS/usr/sbin/$b" ]; then
		continue
	fi
	case "$a" in bin/* | sbin/*) a=usr/$a ;; esac
	ln -s /usr/bin/busybox "$ROOTFS/$a"
done
# /bin/sh is dash: busybox ash would run its own applets (ip, modprobe...)
# before the real tools on PATH.
ln -sfn dash "$ROOTFS/usr/bin/sh"
ln -sfn /usr/bin/busybox "$ROOTFS/init"
mkdir -p "$ROOTFS"/{proc,sys,dev,tmp,run,root,mnt/host,etc/iwi,var/log}
chmod 1777 "$ROOTFS/tmp"
cat >"$ROOTFS/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
tcpdump:x:100:101::/nonexistent:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PW
cat >"$ROOTFS/etc/group" <<'GR'
root:x:0:
tcpdump:x:101:
nogroup:x:65534:
GR
printf '127.0.0.1 localhost\n%s iwi-guest\n%s iwi-host\n' \
	"$IWI_RIG_GUEST_IP" "$IWI_RIG_HOST_IP" >"$ROOTFS/etc/hosts"
echo iwi-guest >"$ROOTFS/etc/hostname"
echo 'include /etc/ld.so.conf.d/*.conf' >"$ROOTFS/etc/ld.so.conf"
cat >"$ROOTFS/etc/profile" <<'PR'
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
PS1='iwi-guest# '
PR
install -m 644 "$HERE/guest/inittab" "$ROOTFS/etc/inittab"
install -m 755 "$HERE/guest/rcS" "$HERE/guest/cmdloop" "$ROOTFS/etc/iwi/"
ldconfig -r "$ROOTFS"

# Kernel modules: what siw, virtio and 9p need, with their dependencies.
MODS="virtio_pci virtio_net virtio_console 9pnet_virtio 9p ib_core ib_cm iw_cm rdma_cm
 ib_uverbs rdma_ucm crc32c_generic crc32c_intel libcrc32c nvme_core nvme_fabrics nvme_rdma"
MD=lib/modules/$KVER
for m in $MODS; do
	modprobe -d "$KROOT" -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r f; do
	rel=${f#"$KROOT"/}
	mkdir -p "$ROOTFS/usr/${rel%/*}"
	cp "$f" "$ROOTFS/usr/$rel"
done
cp "$KROOT/$MD"/modules.{order,builtin,builtin.modinfo} "$ROOTFS/usr/$MD/"
mkdir -p "$ROOTFS/usr/$MD/extra"
cp "$IMG/siw.ko" "$ROOTFS/usr/$MD/extra/siw.ko"
depmod -b "$ROOTFS" "$KVER"
modprobe -d "$ROOTFS" -S "$KVER" --show-depends siw >/dev/null ||
	rig_die "siw.ko's dependencies are not in the guest tree"

# Every program the scenarios use must find its libraries in the guest.
bad=0
for p in rping ucmatose ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_write_lat \
	ib_read_lat ibv_devices ibv_devinfo rdma ip ss tcpdump kmod ethtool \
	taskset setsid timeout killall dash nvme dd sha256sum; do
	f=
	for d in usr/bin usr/sbin; do
		if [ -e "$ROOTFS/$d/$p" ]; then
			f=$d/$p
			break
		fi
	done
	if [ -z "$f" ]; then
		rig_log "missing in the guest: $p"
		bad=1
		continue
	fi
	if out=$(chroot "$ROOTFS" /lib64/ld-linux-x86-64.so.2 --list "/$f" 2>&1) &&
		! grep -q 'not found' <<<"$out"; then
		continue
	fi
	rig_log "unresolved libraries for /$f:"
	printf '%s\n' "$out" >&2
	bad=1
done
ls "$ROOTFS"/usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav*.so >/dev/null 2>&1 || {
	rig_log "missing in the guest: the libsiw verbs provider"
	bad=1
}
[ "$bad" = 0 ] || rig_die "the guest root is incomplete"

rig_log "packing the initramfs"
(cd "$ROOTFS" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -1 >"$IMG/initrd.img.tmp"
mv "$IMG/initrd.img.tmp" "$IMG/initrd.img"
echo "$stamp" >"$IMG/initrd.stamp"
echo "$KVER" >"$IMG/kver"
rig_log "guest built in $((SECONDS - T0))s: kernel $KVER ($KV), initramfs $(du -h "$IMG/initrd.img" | cut -f1)"
