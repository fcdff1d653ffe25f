#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# usage: scripts/soak.sh      (from the build directory; `make soak`)
#
# The soak test: one iwarp-soak server and one client on 127.0.0.1,
# SOAK_QPS connections (default 1000) with verified WRITE, SEND and READ
# traffic for SOAK_SECONDS (default 600; tools/soak.c says what is checked).
# Every SOAK_EVERY seconds (default 10) prints the RSS and the open file
# descriptors of both processes; at the end the first sample taken with
# every connection up beside the last, the growth, and the totals of both.
# Exits non-zero on a data mismatch, a completion or connection error, a
# process that failed, or growth past the threshold: RSS more than
# SOAK_RSS_GROWTH_KB (default 16384) or any open descriptor more, in
# either process, between the first full sample and the last.
set -u

qps=${SOAK_QPS:-1000}
secs=${SOAK_SECONDS:-600}
every=${SOAK_EVERY:-10}
rss_max=${SOAK_RSS_GROWTH_KB:-16384}
port=${SOAK_PORT:-18600}
size=${SOAK_SIZE:-4096}
bin=${SOAK_BIN:-tools/iwarp-soak}
out=${SOAK_DIR:-soak}

[ -x "$bin" ] || { echo "soak.sh: $bin missing (make tools/iwarp-soak)" >&2; exit 2; }
mkdir -p "$out"
# A QP is a socket: room for all of them and the rest.
ulimit -n $((qps + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

"$bin" -s -p "$port" -q "$qps" -z "$size" -i "$every" >"$out/server.log" 2>&1 &
spid=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
	grep -q listening "$out/server.log" 2>/dev/null && break
	sleep 0.5
done
"$bin" -c 127.0.0.1 -p "$port" -q "$qps" -z "$size" -t "$secs" -i "$every" \
	>"$out/client.log" 2>&1 &
cpid=$!

rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
sample() { echo "$1 $(rss "$spid") $(fds "$spid") $(rss "$cpid") $(fds "$cpid")"; }

echo "soak: $qps QPs, ${secs}s, ${size}-octet rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%8s %12s %8s %12s %8s  %s\n' seconds server_kB fds client_kB fds client
start=$(date +%s)
first=
last=
while kill -0 "$cpid" 2>/dev/null; do
	sleep "$every"
	kill -0 "$cpid" 2>/dev/null || break
	t=$(($(date +%s) - start))
	s=$(sample "$t")
	line=$(grep '^soak: client t=' "$out/client.log" | tail -n 1 | sed 's/^soak: client //')
	set -- $s
	printf '%8s %12s %8s %12s %8s  %s\n' "$1" "$2" "$3" "$4" "$5" "$line"
	# The first sample counts once every connection is up.
	case $line in *"connections $qps/$qps"*) [ -n "$first" ] || first=$s ;; esac
	last=$s
done
wait "$cpid"
crc=$?
# The server ends when the client has disconnected every connection.
for _ in $(seq 1 60); do kill -0 "$spid" 2>/dev/null || break; sleep 0.5; done
kill "$spid" 2>/dev/null
wait "$spid"
src=$?

echo
grep -h '^soak: .* end ' "$out/server.log" "$out/client.log"
grep -hv '^soak: ' "$out/server.log" "$out/client.log" | head -n 10
status=0
if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
	echo "soak: FAILED: client exit $crc, server exit $src (logs in $out/)"
	status=1
fi
if [ -z "$first" ] || [ "$first" = "$last" ]; then
	echo "soak: FAILED: no two samples with all $qps connections up (SOAK_SECONDS > 2 * SOAK_EVERY?)"
	exit 1
fi
set -- $first
f_srss=$2 f_sfd=$3 f_crss=$4 f_cfd=$5 f_t=$1
set -- $last
echo "soak: first full sample at ${f_t}s, last at ${1}s"
printf 'soak: server RSS %s -> %s kB (%+d), fds %s -> %s (%+d)\n' \
	"$f_srss" "$2" $(($2 - f_srss)) "$f_sfd" "$3" $(($3 - f_sfd))
printf 'soak: client RSS %s -> %s kB (%+d), fds %s -> %s (%+d)\n' \
	"$f_crss" "$4" $(($4 - f_crss)) "$f_cfd" "$5" $(($5 - f_cfd))
if [ $(($2 - f_srss)) -gt "$rss_max" ] || [ $(($4 - f_crss)) -gt "$rss_max" ] ||
	[ "$3" -gt "$f_sfd" ] || [ "$5" -gt "$f_cfd" ]; then
	echo "soak: FAILED: growth past the threshold (RSS $rss_max kB, fds 0)"
	status=1
fi
[ $status -eq 0 ] && echo "soak: ok"
exit $status
