#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The layering of lib/ (ARCHITECTURE.md section 2): each folder may include
# only its own headers and those of the folders below it, in this order:
#   base < wire < diag < engine < conn < io < api
# and only lib/io/ may include libevent (<event2/...>) or call socket
# functions (recv, sendmsg, readv, accept, connect, ...). A file that includes
# a layer above its own, or a header path outside these folders, fails.
# Exit: 0 pass, 1 fail.
set -u
top=${IW_SRCDIR:-.}
rank() {
	case $1 in
	base) echo 0 ;; wire) echo 1 ;; diag) echo 2 ;; engine) echo 3 ;;
	conn) echo 4 ;; io) echo 5 ;; api) echo 6 ;; *) echo 99 ;;
	esac
}
bad=0
n=0
for f in "$top"/lib/*/*.[ch]; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	own=$(basename "$(dirname "$f")")
	r=$(rank "$own")
	if [ "$r" = 99 ]; then
		echo "layers: $f: folder '$own' is not a layer"
		bad=$((bad + 1))
		continue
	fi
	for inc in $(sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		case $inc in
		iwarp/*) continue ;;
		*/*) layer=${inc%%/*} ;;
		*) layer=$own ;;
		esac
		lr=$(rank "$layer")
		if [ "$lr" -gt "$r" ]; then
			echo "layers: $f ($own) includes $inc ($layer): a layer above its own"
			bad=$((bad + 1))
		fi
	done
	if [ "$own" != io ] && grep -q '^#[[:space:]]*include[[:space:]]*<event2/' "$f"; then
		echo "layers: $f ($own) includes libevent: only lib/io/ may"
		bad=$((bad + 1))
	fi
	# Socket I/O is the pump's (lib/io/): the layers below take octets
	# and hand out iovecs, never a file descriptor.
	if [ "$own" != io ] && grep -nE '(^|[^_a-zA-Z0-9.>])(recv|recvmsg|send|sendmsg|readv|writev|accept4?|connect|socket|listen|bind|shutdown|setsockopt|getsockopt)[[:space:]]*\(' "$f" |
		grep -v '^[0-9]*:[[:space:]]*\(/\*\|\*\)' | head -n 1 | grep -q .; then
		echo "layers: $f ($own) calls socket functions: only lib/io/ may"
		bad=$((bad + 1))
	fi
done
[ "$n" -gt 20 ] || { echo "layers: FAIL: only $n files found under $top/lib"; exit 1; }
if [ "$bad" -ne 0 ]; then
	echo "layers: FAIL: $bad violation(s) in $n files"
	exit 1
fi
echo "layers: $n files, every include points down"
