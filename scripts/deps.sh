#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install the Debian 12 packages libiwarp needs that are not installed yet.
#   scripts/deps.sh          build + demo dependencies
#   scripts/deps.sh --test   also what the test suite and CI use
#   scripts/deps.sh --bench  also the peers make bench-peers compares with
set -eu

pkgs="gcc make autoconf automake libtool pkg-config libevent-dev libisal-dev check libpcap-dev python3"
if [ "${1:-}" = "--test" ]; then
	# tshark: Wireshark cross-checks; clang: libFuzzer; valgrind: leak checks;
	# groff-base: man page rendering check (tests/manpages.sh);
	# librdmacm-dev, libibverbs-dev: tests/interop/guest/bigping, built here
	# and run in the interop guest on siw (the 1 MiB rping-protocol pings).
	pkgs="$pkgs tshark clang valgrind groff-base librdmacm-dev libibverbs-dev"
	# The unmodified programs the compat tests run under iwarp-run
	# (tests/compat_*.sh); librdmacm-dev/libibverbs-dev also build compat/.
	pkgs="$pkgs rdmacm-utils perftest fio qperf ibverbs-utils"
	# The interop rig's host packages (qemu-system-x86, linux-headers for
	# the guest's kernel ABI, tcpdump, cpio, kmod, iproute2) are not listed
	# here: tests/interop/rig/build.sh installs them itself, only on
	# machines that can run the rig, and only it knows the ABI to fetch.
fi
if [ "${1:-}" = "--bench" ]; then
	# scripts/bench_peers.sh: libfabric's tcp provider (fi_pingpong), UCX
	# over TCP (ucx_perftest), sockperf and iperf3. Not needed for the tests.
	pkgs="$pkgs libfabric-bin ucx-utils sockperf iperf3"
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "deps.sh: installing:$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
