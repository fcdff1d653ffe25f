#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scn-00-rig: the rig itself, checked before any scenario relies on it.
#   siw1        siw1 is ACTIVE on the guest's eth0, which holds IWI_GUEST_IP
#   rping       rping siw1 <-> siw1 inside the guest: 10 verified iterations
#               of rping's Send / RDMA READ / RDMA WRITE exchange
#   tcp->guest  a TCP connection from our namespace reaches a guest listener
#   tcp->ns     and one from the guest reaches a listener in our namespace
# A failure here means the other scenarios' results say nothing about
# libiwarp. Ports 7100-7199 belong to this scenario.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
S="scn-00-rig"
G=$IWI_GUEST_IP
one_line() { tr -s '\n\t' '  ' | cut -c1-200; }
# send_tcp MSG ADDR PORT: one line over TCP from our namespace (bash /dev/tcp).
send_tcp() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	hx timeout 20 bash -c 'printf "%s\n" "$1" >"/dev/tcp/$2/$3"' _ "$@"
}

# ------------------------------------------------------------ siw1
out=$(gx -t 30 'rdma link show siw1/1; ip -4 -o addr show dev eth0' 2>&1) || true
printf '%s\n' "$out"
if grep -q 'siw1/1 state ACTIVE .*netdev eth0' <<<"$out" && grep -qF "inet $G/" <<<"$out"; then
	result $S siw1 PASS "siw1 ACTIVE on eth0, $G"
else
	result $S siw1 FAIL "siw1 is not ACTIVE on eth0 with $G: $(one_line <<<"$out")"
fi

# ------------------------------------------------------------ rping
P=7100
guest_bg rps "rping -s -a $G -p $P -C 10 -V -S 64"
if ! guest_listening $P 30; then
	result $S rping FAIL "rping server did not listen on $G:$P: $(guest_log rps | one_line)"
	guest_kill rps
else
	crc=0
	cout=$(gx -t 120 "rping -c -a $G -p $P -C 10 -V -S 64" 2>&1) || crc=$?
	src=0
	guest_wait rps 60 || src=$?
	slog=$(guest_log rps)
	printf 'client (status %s):\n%s\nserver (status %s):\n%s\n' "$crc" "$cout" "$src" "$slog"
	if [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		result $S rping PASS "siw1<->siw1, 10 verified iterations of 64 B"
	else
		result $S rping FAIL "client status $crc, server status $src: $(one_line <<<"$cout $slog")"
	fi
fi

# ------------------------------------------------------------ TCP ns -> guest
P=7101
msg="iwi-ns-to-guest-$$-$RANDOM"
guest_bg nc1 "nc -l -p $P > /tmp/nc1.data"
if ! guest_listening $P 30; then
	result $S 'tcp->guest' FAIL "nc did not listen in the guest: $(guest_log nc1 | one_line)"
	guest_kill nc1
elif ! send_tcp "$msg" "$G" "$P"; then
	result $S 'tcp->guest' FAIL "cannot connect from netns $IWI_NETNS to $G:$P"
	guest_kill nc1
else
	guest_wait nc1 20 || true
	got=$(gx -t 20 'cat /tmp/nc1.data' 2>&1) || true
	if [ "$got" = "$msg" ]; then
		result $S 'tcp->guest' PASS "$IWI_HOST_IP -> $G:$P, data received"
	else
		result $S 'tcp->guest' FAIL "the guest received '$(one_line <<<"$got")', not '$msg'"
	fi
fi

# ------------------------------------------------------------ TCP guest -> ns
P=7102
msg="iwi-guest-to-ns-$$-$RANDOM"
recv=$IWI_OUT/$S.tcp-recv
# shellcheck disable=SC2016 # python, not shell
hx timeout 60 python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
c, _ = s.accept()
c.settimeout(20)
data = b""
while True:
    b = c.recv(4096)
    if not b:
        break
    data += b
sys.stdout.write(data.decode(errors="replace"))
' "$IWI_HOST_IP" "$P" >"$recv" 2>"$recv.err" &
lpid=$!
if ! host_listening $P 20; then
	result $S 'tcp->ns' FAIL "no listener in netns $IWI_NETNS: $(one_line <"$recv.err")"
	kill "$lpid" 2>/dev/null || true
elif ! gout=$(gx -t 40 "echo $msg | timeout 30 nc $IWI_HOST_IP $P" 2>&1); then
	result $S 'tcp->ns' FAIL "the guest cannot connect to $IWI_HOST_IP:$P: $(one_line <<<"$gout")"
	kill "$lpid" 2>/dev/null || true
else
	wait "$lpid" || true
	got=$(cat "$recv")
	if [ "$got" = "$msg" ]; then
		result $S 'tcp->ns' PASS "$G -> $IWI_HOST_IP:$P, data received"
	else
		result $S 'tcp->ns' FAIL "our listener received '$(one_line <<<"$got")', not '$msg'"
	fi
fi
wait 2>/dev/null || true

finish
