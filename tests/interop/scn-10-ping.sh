#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# iwarp-ping against rping over siw, in both roles:
#   client: iwarp-ping -c in our namespace -> rping -s in the guest
#   server: rping -c in the guest -> iwarp-ping -s in our namespace
# -C 100 -V at each size: rping checks the data that came back when it is
# the client, iwarp-ping when we are. rping refuses sizes above 65535
# (RPING_BUFSIZE - 1), so the 1 MiB pings run against bigping
# (tests/interop/guest/bigping.c): rping's protocol over librdmacm and
# libibverbs on the guest's siw, built on the host against Debian's
# rdma-core and run in the guest from the rig's shared folder. It checks
# too: as client it compares the round trip, as server what its READ
# brought. Without librdmacm-dev at configure time those cases SKIP.
# iwarp-ping waits up to 60 s for each step (--timeout; 10 s by default):
# a TCG guest on a loaded 2-core host can stall for seconds (TCP
# retransmission backoff after tap drops), which is not what is tested.
# Each run is captured on the link and checked by wire_check.py
# (iwarp-replay and tshark agree on every FPDU, all CRCs good). At 1 MiB
# the -C 100 runs move 200 MiB each: a capture of that takes tshark
# minutes and wire_check's PDML read overflows, so there a separate run of
# IWI_PING_BIG_CAP_COUNT pings (default 2) is captured and checked. It
# has every FPDU kind the long run has (1 MiB READ answered by hundreds of
# Read Response segments, WRITE likewise, a buffer reused by the second
# ping), and it checks in seconds.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

COUNT=${IWI_PING_COUNT:-100}
SIZES=${IWI_PING_SIZES:-"64 4096 65535"}
BIG_SIZES=${IWI_PING_BIG_SIZES:-1048576}
BIG_CAP_COUNT=${IWI_PING_BIG_CAP_COUNT:-2}
BIG_PEER="bigping: rping protocol over librdmacm on siw; rping itself caps -S at 65535"
port=7200

# siw_bad_crc NAME: the failure in NAME.pcap is siw's, and we handled it:
# every FPDU with a bad CRC came from the guest, and we answered with a
# TERMINATE. siw (6.1, zero-copy transmit of user pages) now and then puts
# an FPDU on the wire whose CRC does not match its payload; iwarp-replay
# confirms it on the link, independently of the library that caught it.
siw_bad_crc() {
	"$T/iwarp-replay" --json "$IWI_OUT/$1.pcap" 2>/dev/null | python3 -c '
import json, sys
guest = sys.argv[1] + ":"
conns, bad, ours_term = {}, [], False
for line in sys.stdin:
    r = json.loads(line)
    if r["type"] == "conn":
        conns[r["conn"]] = (r["initiator"], r["responder"])
    elif r["type"] == "fpdu":
        i, rr = conns[r["conn"]]
        src = i if r["dir"] == "i2r" else rr
        if not r.get("crc_ok", True):
            bad.append(src)
        if r.get("rdmap", {}).get("opcode") == 7 and not src.startswith(guest):
            ours_term = True
sys.exit(0 if bad and ours_term and all(b.startswith(guest) for b in bad) else 1)
' "$IWI_GUEST_IP"
}

# retry_after_siw NAME SIZE ROLE RETRIED: after a failed run, when siw sent
# the bad CRC (siw_bad_crc) and this is the first try: record that (the
# capture checked with the one bad CRC and our TERMINATE allowed) and
# return 0 so that the caller runs the case once more.
retry_after_siw() {
	[ "$4" = 0 ] && siw_bad_crc "$1" || return 1
	result "siw-bad-crc-$1" "$3" PASS \
		"siw sent an FPDU with a bad CRC (seen on the link); we answered TERMINATE LLP/MPA/CRC and closed; the case runs once more"
	wire "$1" --expect-bad-crc 1 --allow-terminate
	return 0
}

ping_client() { # size [retried]
	local size=$1 name="ping-client-$1${2:+-again}" rc out
	port=$((port + 1))
	guest_bg "$name" "rping -s -a $IWI_GUEST_IP -p $port -C $COUNT -V -S $size"
	if ! guest_listening "$port" 20; then
		result "ping-$size" "libiwarp client" FAIL "rping -s did not listen: $(guest_log "$name")"
		guest_kill "$name"
		return
	fi
	cap_start "$name" "tcp port $port"
	out=$(hx timeout 300 "$T/iwarp-ping" --timeout=60 -c -a "$IWI_GUEST_IP" -p "$port" \
		-C "$COUNT" -V -S "$size" 2>&1)
	rc=$?
	guest_wait "$name" 60
	local grc=$?
	cap_stop "$name"
	if [ "$rc" != 0 ] && retry_after_siw "$name" "$size" "libiwarp client" "${2:-0}"; then
		ping_client "$size" 1
		return
	fi
	wire "$name"
	if [ "$rc" = 0 ] && [ "$grc" = 0 ]; then
		result "ping-$size" "libiwarp client" PASS \
			"$COUNT pings verified by iwarp-ping -V; rping -s exit 0"
	else
		result "ping-$size" "libiwarp client" FAIL \
			"iwarp-ping exit $rc ($(tail -n 2 <<<"$out" | tr '\n' ' ')), rping exit $grc ($(guest_log "$name" | tail -n 2 | tr '\n' ' '))"
	fi
}

ping_server() { # size [retried]
	local size=$1 name="ping-server-$1${2:+-again}" rc spid
	port=$((port + 1))
	cap_start "$name" "tcp port $port"
	hx timeout 300 "$T/iwarp-ping" --timeout=60 -s -a "$IWI_HOST_IP" -p "$port" -C "$COUNT" -S "$size" \
		>"$IWI_OUT/$name.log" 2>&1 &
	spid=$!
	if ! host_listening "$port" 20; then
		result "ping-$size" "libiwarp server" FAIL "iwarp-ping -s did not listen: $(cat "$IWI_OUT/$name.log")"
		kill "$spid" 2>/dev/null
		cap_stop "$name"
		return
	fi
	guest_bg "$name" "rping -c -a $IWI_HOST_IP -p $port -C $COUNT -V -S $size"
	guest_wait "$name" 240
	local grc=$?
	wait "$spid"
	rc=$?
	cap_stop "$name"
	if [ "$rc" != 0 ] && retry_after_siw "$name" "$size" "libiwarp server" "${2:-0}"; then
		ping_server "$size" 1
		return
	fi
	wire "$name"
	if [ "$rc" = 0 ] && [ "$grc" = 0 ]; then
		result "ping-$size" "libiwarp server" PASS \
			"$COUNT pings verified by rping -c -V; iwarp-ping -s exit 0"
	else
		result "ping-$size" "libiwarp server" FAIL \
			"iwarp-ping -s exit $rc ($(tail -n 2 "$IWI_OUT/$name.log" | tr '\n' ' ')), rping -c exit $grc ($(guest_log "$name" | tail -n 2 | tr '\n' ' '))"
	fi
}

# bigping_install: make the host-built bigping runnable in the guest and
# set GBIG to its path there. Otherwise set BIG_WHY, and BIG_ST to SKIP
# (not built: this machine lacks librdmacm-dev) or FAIL, and return 1.
GBIG="" BIG_WHY="" BIG_ST=FAIL
bigping_install() {
	local bin=$IWI_BUILD/tests/interop/guest/bigping share=${IWI_SHARE:-${IWI_RIG_SHARE:-}}
	local tmp sum out=""
	if [ ! -x "$bin" ]; then
		BIG_WHY="bigping not built (make check-interop builds it when configure finds librdmacm-dev and libibverbs-dev); $BIG_PEER"
		BIG_ST=SKIP
		return 1
	fi
	sum=$(md5sum <"$bin" | cut -d' ' -f1)
	# The rig's 9p folder, guest /mnt/host. Renamed into place: a guest
	# program still running an older copy keeps its file. The checksum
	# proves the guest sees this folder (and not another rig's).
	if [ -n "$share" ] && [ -d "$share" ] && cp "$bin" "$share/.bigping.$$" &&
		mv -f "$share/.bigping.$$" "$share/bigping" &&
		[ "$(gx -t 20 'md5sum < /mnt/host/bigping' 2>/dev/null | cut -d' ' -f1)" = "$sum" ]; then
		GBIG=/mnt/host/bigping
	else
		# No shared folder: base64 through the command channel, in
		# chunks that keep each command small; stripped, a third the size.
		log "bigping: the guest does not see ${share:-a shared folder} at /mnt/host; copying it in through the command channel"
		tmp=$(mktemp)
		strip -o "$tmp" "$bin" 2>/dev/null || cp "$bin" "$tmp"
		sum=$(md5sum <"$tmp" | cut -d' ' -f1)
		gx -t 20 ': > /tmp/bigping.b64' &&
			base64 -w 32768 "$tmp" | while read -r part; do
				gx -t 20 "printf %s '$part' >> /tmp/bigping.b64" || exit 1
			done &&
			out=$(gx -t 20 'base64 -d /tmp/bigping.b64 > /tmp/bigping && chmod +x /tmp/bigping && md5sum < /tmp/bigping')
		rm -f "$tmp"
		if [ "${out%% *}" != "$sum" ]; then
			BIG_WHY="cannot copy bigping into the guest (no shared folder, command channel copy failed); $BIG_PEER"
			return 1
		fi
		GBIG=/tmp/bigping
	fi
	# It must also run there: built with other flags (sanitizers) or
	# against another libc than the guest's Debian 12, it would not.
	if ! out=$(gx -t 20 "$GBIG -h 2>&1 >/dev/null"); then
		BIG_WHY="bigping does not run in the guest: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
		GBIG=
		return 1
	fi
}

# big_run client|server NAME COUNT SIZE [cap]: one run of bigping in the
# guest against iwarp-ping here, COUNT pings of SIZE, -V on both sides,
# captured into NAME.pcap with cap. Sets brc (iwarp-ping's exit), bgrc
# (bigping's), bout (what each said last) and bsecs.
big_run() {
	local role=$1 name=$2 count=$3 size=$4 cap=${5:-} spid t0=$SECONDS
	port=$((port + 1))
	if [ "$role" = client ]; then
		guest_bg "$name" "$GBIG -s -a $IWI_GUEST_IP -p $port -C $count -V -S $size -T 60"
		if ! guest_listening "$port" 20; then
			brc=125 bgrc=125 bout="bigping -s did not listen: $(guest_log "$name")"
			guest_kill "$name"
			return
		fi
		[ -z "$cap" ] || cap_start "$name" "tcp port $port"
		bout=$(hx timeout 300 "$T/iwarp-ping" --timeout=60 -c -a "$IWI_GUEST_IP" -p "$port" \
			-C "$count" -V -S "$size" 2>&1)
		brc=$?
		guest_wait "$name" 60
		bgrc=$?
	else
		[ -z "$cap" ] || cap_start "$name" "tcp port $port"
		hx timeout 300 "$T/iwarp-ping" --timeout=60 -s -a "$IWI_HOST_IP" -p "$port" -C "$count" \
			-S "$size" >"$IWI_OUT/$name.log" 2>&1 &
		spid=$!
		if ! host_listening "$port" 20; then
			brc=125 bgrc=125 bout="iwarp-ping -s did not listen: $(cat "$IWI_OUT/$name.log")"
			kill "$spid" 2>/dev/null
			[ -z "$cap" ] || cap_stop "$name"
			return
		fi
		guest_bg "$name" "$GBIG -c -a $IWI_HOST_IP -p $port -C $count -V -S $size -T 60"
		guest_wait "$name" 240
		bgrc=$?
		wait "$spid"
		brc=$?
		bout=$(cat "$IWI_OUT/$name.log")
	fi
	[ -z "$cap" ] || cap_stop "$name"
	bsecs=$((SECONDS - t0))
	bout="iwarp-ping exit $brc ($(tail -n 2 <<<"$bout" | tr '\n' ' ')), bigping exit $bgrc ($(guest_log "$name" | tail -n 2 | tr '\n' ' '))"
}

ping_big() { # client|server size
	local role=$1 size=$2 who="libiwarp $1" name="ping-$1-$2" capfail=
	if [ -z "$GBIG" ]; then
		result "ping-$size" "$who" "$BIG_ST" "$BIG_WHY"
		return
	fi
	big_run "$role" "$name" "$BIG_CAP_COUNT" "$size" cap
	wire "$name"
	[ "$brc" = 0 ] && [ "$bgrc" = 0 ] || capfail="captured $BIG_CAP_COUNT-ping run: $bout; "
	big_run "$role" "$name-run" "$COUNT" "$size"
	if [ -z "$capfail" ] && [ "$brc" = 0 ] && [ "$bgrc" = 0 ]; then
		if [ "$role" = client ]; then
			result "ping-$size" "$who" PASS "$COUNT pings in ${bsecs}s, verified by iwarp-ping -V and bigping -s -V ($BIG_PEER)"
		else
			result "ping-$size" "$who" PASS "$COUNT pings in ${bsecs}s, verified by bigping -c -V ($BIG_PEER); iwarp-ping -s exit 0"
		fi
	else
		result "ping-$size" "$who" FAIL "$capfail$COUNT-ping run: $bout ($BIG_PEER)"
	fi
}

for s in $SIZES; do
	ping_client "$s"
	ping_server "$s"
done
[ -z "$BIG_SIZES" ] || bigping_install || log "$BIG_WHY"
for s in $BIG_SIZES; do
	ping_big client "$s"
	ping_big server "$s"
done
finish
