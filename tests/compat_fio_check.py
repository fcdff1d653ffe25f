#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""What tests/compat_fio.sh checks of a fio --ioengine=rdma run: the memory
fio's buffers live in (--mem=mmapshared:FILE, files this script fills
first and reads after) and the wire (the server's IWARP_PCAP trace, decoded
by iwarp-replay --json --payload).

    fill SIZE SALT SRV CLI
        SRV: SIZE octets of 32-bit big-endian words SALT, SALT+1, ... (no
        two blocks alike, so a block read or placed at the wrong offset
        shows); CLI: SIZE zeros.
    check VERB BS DEPTH SIZE PAT SALT SRV CLI JSON [negative]
        memory, VERB write: every one of the server's DEPTH buffers (BS
        octets each) is the client's pattern PAT (hex, repeated) or still
        its own counters, at least one written; read: every client buffer
        is one whole server buffer, the server's memory unchanged; send:
        every server buffer is PAT.
        wire (JSON): one connection, every FPDU with a good CRC and no
        error, no TERMINATE, no gap; the data messages of VERB (write: RDMA
        Writes to the server; read: RDMA Read Responses from it; send: the
        client's Sends but its first, fio's request) are SIZE/BS messages
        of BS octets, segments contiguous, each PAT (write, send) or one
        whole server buffer (read).
        With "negative", the same checks must then fail when told a pattern
        one octet off (write, send) or counters from SALT+1 (read).

Exit 0 when everything holds, 1 with the first difference named.
"""
import json
import sys
from array import array


class Mismatch(Exception):
    pass


def fail(msg):
    raise Mismatch(msg)


def pattern_bytes(hexstr, n):
    p = bytes.fromhex(hexstr[2:] if hexstr.startswith("0x") else hexstr)
    return (p * (n // len(p) + 1))[:n]


def counter_bytes(salt, n):
    words = array("I", ((salt + i) & 0xFFFFFFFF for i in range((n + 3) // 4)))
    if sys.byteorder == "little":
        words.byteswap()
    return words.tobytes()[:n]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def blocks(data, bs, depth):
    if len(data) < bs * depth:
        fail("%d octets, fewer than %d buffers of %d" % (len(data), depth, bs))
    return [data[i * bs:(i + 1) * bs] for i in range(depth)]


def first_diff(a, b):
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def counter_block(block, salt, bs, depth):
    """The server buffer index whose counter fill block is, or None."""
    if len(block) < 4 or bs % 4:
        return None
    k, rem = divmod(((int.from_bytes(block[:4], "big") - salt) & 0xFFFFFFFF) * 4, bs)
    if rem or k >= depth or block != counter_bytes(salt + k * bs // 4, bs):
        return None
    return k


def mem(verb, bs, depth, pat, salt, srv, cli):
    sdata = read(srv)
    if verb == "read":
        if sdata[:bs * depth] != counter_bytes(salt, bs * depth):
            fail("the server's memory changed")
        for i, b in enumerate(blocks(read(cli), bs, depth)):
            if counter_block(b, salt, bs, depth) is None:
                fail("client buffer %d is no whole server buffer (octets %s...)"
                     % (i, b[:8].hex()))
        return "client memory: all %d buffers hold a whole server buffer" % depth
    want = pattern_bytes(pat, bs)
    hit = 0
    for i, b in enumerate(blocks(sdata, bs, depth)):
        if b == want:
            hit += 1
        elif verb == "send" or counter_block(b, salt, bs, depth) != i:
            fail("server buffer %d differs from the client's pattern at octet %d"
                 % (i, first_diff(b, want)))
    if not hit:
        fail("no server buffer holds the client's pattern")
    return ("server memory: %d of %d buffers hold the client's pattern, %d untouched"
            % (hit, depth, depth - hit))


def reassemble(fpdus, dirn, opcode, tagged):
    """Messages of one opcode in one direction, each its octets, in order."""
    msgs, cur, base = [], None, None
    parts = {}
    for r in fpdus:
        if r["dir"] != dirn or r["rdmap"]["opcode"] != opcode:
            continue
        data = bytes.fromhex(r["payload"])
        d = r["ddp"]
        if tagged:
            to = int(d["to"], 16)
            if cur is None:
                cur, base = bytearray(), to
            if to != base + len(cur):
                fail("%s FPDU %d at TO %#x, not after the last one (%#x)"
                     % (dirn, r["n"], to, base + len(cur)))
            cur += data
            if d["l"]:
                msgs.append(bytes(cur))
                cur = None
        else:
            m = parts.setdefault((d["qn"], d["msn"]), bytearray())
            if d["mo"] != len(m):
                fail("%s FPDU %d at MO %d, not after the last one (%d)"
                     % (dirn, r["n"], d["mo"], len(m)))
            m += data
            if d["l"]:
                msgs.append(bytes(m))
    if cur is not None:
        fail("a message without its last segment")
    return msgs


def wire(verb, bs, depth, size, pat, salt, recs):
    summ = [r for r in recs if r["type"] == "summary"]
    if not summ:
        fail("no summary in the trace's decode")
    s = summ[-1]
    if s["iwarp_connections"] != 1:
        fail("%d iWARP connections in the trace, want 1" % s["iwarp_connections"])
    for k in ("errors", "gaps", "terminates", "crc_errors", "incomplete_fpdus"):
        if s[k]:
            fail("%s: %d" % (k, s[k]))
    fpdus = [r for r in recs if r["type"] == "fpdu"]
    bad = [r for r in fpdus if not (r["crc_enabled"] and r["crc_ok"] and r["ok"])]
    if bad:
        fail("FPDU %s %d: CRC %s, %s" % (bad[0]["dir"], bad[0]["n"], bad[0]["crc_ok"],
                                         bad[0].get("error_str", "ok")))
    if verb == "write":
        msgs = [m for m in reassemble(fpdus, "i2r", 0, True) if m]  # not the RTR's
    elif verb == "read":
        msgs = reassemble(fpdus, "r2i", 2, True)
    elif verb == "send":
        msgs = reassemble(fpdus, "i2r", 3, False)[1:]
    else:
        sys.exit(__doc__)
    if len(msgs) != size // bs:
        fail("%d %s messages, want %d" % (len(msgs), verb, size // bs))
    want = pattern_bytes(pat, bs) if verb != "read" else None
    for i, m in enumerate(msgs):
        if len(m) != bs:
            fail("%s message %d: %d octets, want %d" % (verb, i + 1, len(m), bs))
        if want is not None and m != want:
            fail("%s message %d differs from the client's pattern at octet %d"
                 % (verb, i + 1, first_diff(m, want)))
        if want is None and counter_block(m, salt, bs, depth) is None:
            fail("read message %d is no whole server buffer (octets %s...)" % (i + 1, m[:8].hex()))
    return ("wire: %d FPDUs, CRCs good; %d %s messages of %d octets (%d), each as sent"
            % (len(fpdus), len(msgs), verb, bs, len(msgs) * bs))


def check(a):
    verb, bs, depth, size, pat, salt = a[0], int(a[1]), int(a[2]), int(a[3]), a[4], int(a[5])
    srv, cli = a[6], a[7]
    with open(a[8]) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    try:
        print("  " + mem(verb, bs, depth, pat, salt, srv, cli))
        print("  " + wire(verb, bs, depth, size, pat, salt, recs))
    except Mismatch as e:
        print("FAIL: " + str(e))
        return 1
    if a[9:] != ["negative"]:
        return 0
    badpat = pat[:-2] + ("00" if pat[-2:] != "00" else "01")
    bad = [(badpat, salt)] if verb != "read" else [(pat, salt + 1)]
    for p, n in bad:
        for what, fn in (("memory", lambda: mem(verb, bs, depth, p, n, srv, cli)),
                         ("wire", lambda: wire(verb, bs, depth, size, p, n, recs))):
            try:
                fn()
            except Mismatch:
                continue
            print("FAIL: the %s check passed a wrong expectation" % what)
            return 1
    print("  ok: the memory and wire checks fail on a pattern one octet off"
          if verb != "read" else "  ok: the memory and wire checks fail on counters one off")
    return 0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "fill" and len(args) == 4:
        size, salt = int(args[0]), int(args[1])
        with open(args[2], "wb") as f:
            f.write(counter_bytes(salt, size))
        with open(args[3], "wb") as f:
            f.write(bytes(size))
    elif cmd == "check" and len(args) in (9, 10):
        sys.exit(check(args))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
