#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seeds for fuzz_conn (fuzz/fuzz_conn.c's input format): an MPA Request
or Reply from the peer, then the application's and the clock's moves.

    fuzz/seed_conn.py OUTDIR     (writes OUTDIR/corpus-fuzz_conn/seed-*)
"""
import os
import struct
import sys


def frame(kind, flags, block):
    key = b"MPA ID Req Frame" if kind == "req" else b"MPA ID Rep Frame"
    return key + bytes([flags, 2]) + struct.pack(">H", len(block)) + block


def feed(b):
    out = b""
    while b:
        n = min(len(b), 0xC0)
        out += bytes([n - 1]) + b[:n]
        b = b[n:]
    return out


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "fuzz", "corpus-fuzz_conn")
    os.makedirs(out, exist_ok=True)
    p2p = struct.pack(">HH", 0xC004, 0xC004)  # IRD 4 with A, ORD 4 with WRITE RTR
    seeds = {
        "resp-accept": bytes([0]) + feed(frame("req", 0x50, p2p)) + bytes([0xE0, 0xE5, 0xC5, 0xE2, 0xDF]),
        "resp-reject": bytes([2]) + feed(frame("req", 0x40, p2p)) + bytes([0xE1, 0xDF]),
        "init-reply": bytes([1]) + feed(frame("rep", 0x50, p2p)) + bytes([0xE5, 0xC1, 0xC5, 0xE3]),
        "init-reject": bytes([1]) + feed(frame("rep", 0x70, p2p)) + bytes([0xDF]),
        "init-nop2p": bytes([0x21]) + feed(frame("rep", 0x40, b"")) + bytes([0xE6, 0xE5, 0xDF, 0xE4]),
        "init-timeout": bytes([1]) + bytes([0xDF] * 8),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
