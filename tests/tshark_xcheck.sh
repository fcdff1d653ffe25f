#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Cross-check our wire codecs against Wireshark's iwarp_mpa and
# iwarp_ddp_rdmap dissectors (tshark 4.0 on Debian 12).
#
# tests/gen_xcheck_pcap writes a capture of MPA frames and FPDUs of every
# kind, built with the public codecs, plus EXPECT.tsv: per frame, the field
# values the codecs were given, in the columns named by its first line and
# formatted as tshark prints them. Here tshark dissects the capture and must:
#   - recognise every FPDU as iwarp_mpa + iwarp_ddp_rdmap (heuristically: no
#     decode-as is needed once the capture holds the MPA Request);
#   - report every CRC as "Good CRC32" (4.0 has no CRC status field or expert
#     info: the verdict is only in the text of iwarp_mpa.crc_check, whose
#     value is the CRC field read big-endian);
#   - show the same value as EXPECT.tsv in every column of every row;
#   - leave TCP/IPv4 checksums good and flag nothing as malformed;
#   - and, on a second capture whose last FPDU has a corrupted CRC, report
#     exactly that one as bad, naming the right CRC.
# The RPC-over-RDMA heuristic is disabled: it claims Send payloads and then
# reports them malformed (interop.md says the same for perftest traffic).
#
# Environment: TSHARK (empty: skip), IW_BUILDDIR (where tests/ is built).
# Exit: 0 pass, 1 fail, 77 skip.

if [ -z "${TSHARK:-}" ]; then
	echo "tshark_xcheck: SKIP: tshark not found (TSHARK is empty); install tshark to run it"
	exit 77
fi
builddir=${IW_BUILDDIR:-.}
gen=$builddir/tests/gen_xcheck_pcap
if [ ! -x "$gen" ]; then
	echo "tshark_xcheck: FAIL: $gen not built (make check builds it)"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/iw_xcheck.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

ts() {
	"$TSHARK" -n -r "$@" --disable-protocol rpcordma \
		-o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE 2>tshark.err
}

if ! "$gen" out.pcap expect.tsv bad.pcap bad.tsv >gen.log 2>&1; then
	cat gen.log
	echo "tshark_xcheck: FAIL: gen_xcheck_pcap failed (our decoder disagrees with our encoder?)"
	exit 1
fi

# tshark's view of the frames EXPECT lists, in EXPECT's columns, followed by
# the extra columns checked below.
EXTRA="frame.protocols _ws.malformed ip.checksum.status tcp.checksum.status"
dissect() { # pcap expect.tsv -> got.tsv
	fields=$(head -n 1 "$2" | sed 's/^#//' | tr '\t' ' ')
	args=
	for f in $fields $EXTRA; do args="$args -e $f"; done
	# shellcheck disable=SC2086 # field list is split on purpose
	ts "$1" -T fields -E separator=/t -E occurrence=a $args >"$3" || return 1
}

# Per-frame CRC verdicts from the detail view: "frame good|bad shown should".
crc_verdicts() {
	ts "$1" -V | awk '
		/^Frame [0-9]+:/ { f = $2; sub(":", "", f) }
		/CRC check: .*Good CRC32/ { print f, "good", $3, "" }
		/CRC check: .*Bad CRC32/ { s = $NF; sub(/\)$/, "", s); print f, "bad", $3, s }'
}

# Compare EXPECT rows with tshark's rows by frame number; print one line per
# difference and, last, "checked <fpdus> <mpa frames> <problems>".
compare() { # expect.tsv got.tsv
	awk -F'\t' -v ncol="$(head -n 1 "$1" | awk -F'\t' '{ print NF }')" '
		FILENAME == ARGV[1] {
			if (FNR == 1) { for (i = 1; i <= NF; i++) name[i] = $i; sub("^#", "", name[1]); next }
			if ($0 ~ /^#/) next
			want[$1] = $0; order[++rows] = $1; next
		}
		{ got[$1] = $0 }
		END {
			for (r = 1; r <= rows; r++) {
				fr = order[r]
				nw = split(want[fr], W, "\t")
				if (!(fr in got)) { print "frame " fr ": not in the capture"; bad++; continue }
				split(got[fr], G, "\t")
				fpdu = W[8] != ""   # iwarp_mpa.ulpdulength
				for (i = 2; i <= ncol; i++)
					if (W[i] != G[i]) {
						printf "frame %s %s: expected [%s] tshark [%s]\n", fr, name[i], W[i], G[i]
						bad++
					}
				proto = G[ncol + 1]
				need = fpdu ? ":iwarp_mpa:iwarp_ddp_rdmap" : ":iwarp_mpa"
				if (index(proto, need) == 0 || (!fpdu && index(proto, "iwarp_ddp_rdmap"))) {
					print "frame " fr ": dissected as " proto; bad++
				}
				if (G[ncol + 2] != "") { print "frame " fr ": malformed"; bad++ }
				if ((G[ncol + 3] != "" && G[ncol + 3] != "1") || G[ncol + 4] != "1") {
					print "frame " fr ": IP/TCP checksum status [" G[ncol + 3] "/" G[ncol + 4] "]"; bad++
				}
				if (fpdu) nf++; else nm++
			}
			print "checked", nf + 0, nm + 0, bad + 0
		}' "$1" "$2"
}

fail=0
fpdus=0

# 1. The good capture: every field, every CRC good.
dissect out.pcap expect.tsv got.tsv || { cat tshark.err; exit 1; }
crc_verdicts out.pcap >crc.txt
compare expect.tsv got.tsv >cmp.txt
grep -v '^checked ' cmp.txt
read -r _ fpdus n_mpa n_diff <<EOF
$(grep '^checked ' cmp.txt)
EOF
fail=$((fail + n_diff))
echo "tshark_xcheck: out.pcap: $fpdus FPDUs and $n_mpa MPA frames compared, $n_diff differences"
good=$(awk '$2 == "good"' crc.txt | wc -l)
badcrc=$(awk '$2 == "bad"' crc.txt | wc -l)
if [ "$good" -ne "$fpdus" ] || [ "$badcrc" -ne 0 ]; then
	echo "tshark_xcheck: out.pcap: $good good and $badcrc bad CRCs for $fpdus FPDUs:"
	awk '$2 == "bad"' crc.txt
	fail=$((fail + 1))
fi
# Each FPDU's verdict must be on that FPDU's frame.
missing=$(awk -F'\t' '!/^#/ && $8 != "" { print $1 }' expect.tsv | while read -r f; do
	grep -q "^$f good " crc.txt || echo "frame $f: no Good CRC32 verdict"
done)
if [ -n "$missing" ]; then
	echo "$missing"
	fail=$((fail + 1))
fi

# 2. The corrupted capture: tshark must see exactly the one bad CRC.
dissect bad.pcap bad.tsv badgot.tsv || { cat tshark.err; exit 1; }
crc_verdicts bad.pcap >badcrc.txt
compare bad.tsv badgot.tsv >badcmp.txt
grep -v '^checked ' badcmp.txt
read -r _ n_fpdu _ n_diff <<EOF
$(grep '^checked ' badcmp.txt)
EOF
fpdus=$((fpdus + n_fpdu))
fail=$((fail + n_diff))
read -r bad_frame good_crc <<EOF
$(sed -n 's/^# bad_frame=\([0-9]*\) good_crc=\(0x[0-9a-f]*\)$/\1 \2/p' bad.tsv)
EOF
verdict=$(awk -v f="$bad_frame" '$1 == f { print $2, $4 }' badcrc.txt)
others=$(awk -v f="$bad_frame" '$1 != f && $2 == "bad"' badcrc.txt | wc -l)
if [ "$verdict" != "bad $good_crc" ] || [ "$others" -ne 0 ]; then
	echo "tshark_xcheck: bad.pcap: frame $bad_frame verdict [$verdict], want [bad $good_crc];" \
		"$others other bad CRCs"
	fail=$((fail + 1))
else
	echo "tshark_xcheck: bad.pcap: frame $bad_frame reported Bad CRC32, should be $good_crc (as planted)"
fi

if [ "$fail" -ne 0 ]; then
	echo "$fpdus FPDUs checked, $fail failed"
	exit 1
fi
echo "$fpdus passed, 0 failed"
exit 0
