#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job's demo (make demo, from the build directory): libiwarp's wire
# codecs build an MPA exchange and FPDUs of every kind, written as a pcap
# with synthetic TCP/IP headers; Wireshark's dissectors decode it (when
# tshark is installed); the codec benchmark runs briefly; the example pair
# runs the classic flow; iwarp-perf compares RDMA bandwidth with raw TCP.
set -eu
srcdir=$(cd "$(dirname "$0")/.." && pwd)
out=${IW_DEMO_DIR:-${TMPDIR:-/tmp}/libiwarp-demo}
mkdir -p "$out"

echo "== 1. encode: MPA Request/Reply and FPDUs of every kind -> $out/demo.pcap"
tests/gen_xcheck_pcap "$out/demo.pcap" "$out/expect.tsv"
echo "   $(($(wc -l <"$out/expect.tsv") - 1)) FPDUs and frames written"

if command -v tshark >/dev/null 2>&1; then
	echo "== 2. decode with Wireshark's iwarp_mpa / iwarp_ddp_rdmap dissectors"
	tshark -r "$out/demo.pcap" --disable-protocol rpcordma -Y iwarp_ddp_rdmap \
		-T fields -E separator=' ' -e frame.number -e iwarp_rdma.opcode \
		-e iwarp_mpa.ulpdulength -e iwarp_mpa.crc_check 2>/dev/null | head -n 20 |
		awk '{printf "   frame %-4s opcode %-4s ULPDU_Length %-5s CRC %s\n", $1, $2, $3, $4}'
	echo "   (first 20 FPDUs; CRC as Wireshark shows it: our CRC32c read big-endian)"
	good=$(tshark -r "$out/demo.pcap" --disable-protocol rpcordma -V 2>/dev/null | grep -c 'Good CRC32' || true)
	bad=$(tshark -r "$out/demo.pcap" --disable-protocol rpcordma -V 2>/dev/null | grep -c 'Bad CRC32' || true)
	echo "   Wireshark CRC verdicts: $good good, $bad bad"
else
	echo "== 2. tshark not installed: skipping the Wireshark decode (scripts/deps.sh --test installs it)"
fi

echo "== 3. codec throughput (CRC32c via ISA-L's crc32_iscsi)"
tools/iwarp-codec-bench --sizes 4096,65000 --seconds 0.1

echo "== 4. the classic flow over 127.0.0.1: examples/example_server + examples/example_client"
port=$((20000 + $$ % 20000))
examples/example_server -p "$port" -S 1048576 >"$out/server.log" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
sleep 0.3
examples/example_client -p "$port" -S 1048576 | sed 's/^/   /'
wait $srv && sed 's/^/   /' "$out/server.log"

echo "== 5. iwarp-ping (rping's protocol) against a local iwarp-ping server, traced with IWARP_PCAP"
pport=$((port + 1))
tools/iwarp-ping -s -a 127.0.0.1 -p "$pport" >"$out/ping-server.log" 2>&1 &
psrv=$!
trap 'kill $srv $psrv 2>/dev/null || true' EXIT
sleep 0.3
rm -f "$out/ping.pcap"
IWARP_PCAP="$out/ping.pcap" tools/iwarp-ping -c -a 127.0.0.1 -p "$pport" -C 3 -S 64 -V -v | sed 's/^/   /'
wait $psrv || true

echo "== 6. the client's trace decoded by iwarp-replay ($out/ping.pcap)"
tools/iwarp-replay "$out/ping.pcap" | head -n 12 | sed 's/^/   /'
echo "   ..."
tools/iwarp-replay --check "$out/ping.pcap" | tail -n 9 | sed 's/^/   /'

echo "== 7. iwarp-perf against a local iwarp-perf server: RDMA WRITE 64 KiB beside raw TCP"
fport=$((port + 2))
tools/iwarp-perf --server -p "$fport" >"$out/perf-server.log" 2>&1 &
fsrv=$!
trap 'kill $srv $psrv $fsrv 2>/dev/null || true' EXIT
sleep 0.3
tools/iwarp-perf --test write -s 65536 -D 1 --tcp -p "$fport" 127.0.0.1 | sed 's/^/   /'
wait $fsrv || true

echo "== 8. in-process loopback: READ and SEND 64 KiB beside raw TCP, and idle memory"
for t in read send; do
	tools/iwarp-perf --test $t -s 65536 -D 1 --tcp | sed "s/^/   $t /"
done
echo "   heap per idle connection:"
tools/iwarp-perf --idle 100 | sed 's/^/   /'
