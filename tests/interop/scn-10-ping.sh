#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# iwarp-ping against rping over siw, in both roles:
#   client: iwarp-ping -c in our namespace -> rping -s in the guest
#   server: rping -c in the guest -> iwarp-ping -s in our namespace
# -C 100 -V at each size: rping checks the data that came back when it is
# the client, iwarp-ping when we are. rping refuses sizes above 65535
# (RPING_BUFSIZE - 1), so its largest size stands in for 1 MiB here; the
# 1 MiB messages against siw are in the perftest scenario.
# Each run is captured on the link and checked by wire_check.py
# (iwarp-replay and tshark agree on every FPDU, all CRCs good).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

COUNT=${IWI_PING_COUNT:-100}
SIZES=${IWI_PING_SIZES:-"64 4096 65535"}
port=7200

ping_client() { # size
	local size=$1 name="ping-client-$1" rc out
	port=$((port + 1))
	guest_bg "$name" "rping -s -a $IWI_GUEST_IP -p $port -C $COUNT -V -S $size"
	if ! guest_listening "$port" 20; then
		result "ping-$size" "libiwarp client" FAIL "rping -s did not listen: $(guest_log "$name")"
		guest_kill "$name"
		return
	fi
	cap_start "$name" "tcp port $port"
	out=$(hx timeout 300 "$T/iwarp-ping" -c -a "$IWI_GUEST_IP" -p "$port" \
		-C "$COUNT" -V -S "$size" 2>&1)
	rc=$?
	guest_wait "$name" 60
	local grc=$?
	cap_stop "$name"
	wire "$name"
	if [ "$rc" = 0 ] && [ "$grc" = 0 ]; then
		result "ping-$size" "libiwarp client" PASS \
			"$COUNT pings verified by iwarp-ping -V; rping -s exit 0"
	else
		result "ping-$size" "libiwarp client" FAIL \
			"iwarp-ping exit $rc ($(tail -n 2 <<<"$out" | tr '\n' ' ')), rping exit $grc ($(guest_log "$name" | tail -n 2 | tr '\n' ' '))"
	fi
}

ping_server() { # size
	local size=$1 name="ping-server-$1" rc spid
	port=$((port + 1))
	cap_start "$name" "tcp port $port"
	hx timeout 300 "$T/iwarp-ping" -s -a "$IWI_HOST_IP" -p "$port" -C "$COUNT" -S "$size" \
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
	wire "$name"
	if [ "$rc" = 0 ] && [ "$grc" = 0 ]; then
		result "ping-$size" "libiwarp server" PASS \
			"$COUNT pings verified by rping -c -V; iwarp-ping -s exit 0"
	else
		result "ping-$size" "libiwarp server" FAIL \
			"iwarp-ping -s exit $rc ($(tail -n 2 "$IWI_OUT/$name.log" | tr '\n' ' ')), rping -c exit $grc ($(guest_log "$name" | tail -n 2 | tr '\n' ' '))"
	fi
}


for s in $SIZES; do
	ping_client "$s"
	ping_server "$s"
done
finish
