#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seed the libFuzzer corpora from iwv/1 vector files.

usage: seed_from_vectors.py OUTDIR VECTOR_FILE...

Writes OUTDIR/corpus-fuzz_mpa_frame/ and OUTDIR/corpus-fuzz_fpdu_rx/, each
seed being the settings octet(s) the target reads first followed by the hex
blob of one record. Kinds mpa-frame* feed the frame parser; mpa-fpdu* and
mpa-stream* feed the stream decoder. The settings layouts are documented at
the top of fuzz_mpa_frame.c and fuzz_fpdu_rx.c.
"""
import hashlib
import os
import sys

REQ_KEY = b"MPA ID Req Frame"
REP_KEY = b"MPA ID Rep Frame"


def records(path):
    """Yield (id, kind, settings dict, bytes) for each record in an iwv file."""
    rec = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            if key == "vector":
                rec = {"id": rest, "kind": "", "settings": {}, "hex": []}
            elif rec is None:
                continue
            elif key == "kind":
                rec["kind"] = rest.strip()
            elif key == "settings":
                for kv in rest.split():
                    k, _, v = kv.partition("=")
                    rec["settings"][k] = v
            elif key == "hex":
                rec["hex"].append(rest)
            elif key == "end":
                blob = bytes.fromhex(" ".join(rec["hex"]))
                yield rec["id"], rec["kind"], rec["settings"], blob
                rec = None


def write_seed(d, data):
    # Content-addressed like libFuzzer's own corpus files: reruns add
    # nothing twice.
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def frame_seeds(blob):
    """One seed per kind the key allows and per strict/complete setting."""
    kinds = []
    if blob.startswith(REQ_KEY) or not blob.startswith(REP_KEY):
        kinds.append(0)
    if blob.startswith(REP_KEY) or not blob.startswith(REQ_KEY):
        kinds.append(1)
    for kind in kinds:
        for flags in (0, 2, 4, 6):
            yield bytes([kind | flags]) + blob
    # A short prefix, so that the incomplete paths are seeded too.
    yield bytes([kinds[0]]) + blob[: len(blob) // 2]


def fpdu_settings(s, enforce, direct, chunk):
    bits = 0
    bits |= 1 if s.get("crc", "on") == "on" else 0
    bits |= 2 if s.get("markers", "off") == "on" else 0
    bits |= 4 if enforce else 0
    bits |= 8 if direct else 0
    off = int(s.get("stream_offset", "0"), 0) & 0xFFFFFFFF
    mul = int(s.get("max_ulpdu", "0"), 0) & 0xFFFF
    return bytes([bits]) + off.to_bytes(4, "big") + mul.to_bytes(2, "big") + bytes([chunk])


def fpdu_seeds(settings, blob):
    for enforce, direct, chunk in ((1, 0, 0), (0, 0, 7), (0, 1, 64), (1, 1, 3)):
        yield fpdu_settings(settings, enforce, direct, chunk) + blob


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def frame_fpdu(ulpdu):
    """Length, ULPDU and PAD: an FPDU without markers and CRC."""
    pad = (4 - (2 + len(ulpdu)) % 4) % 4
    return len(ulpdu).to_bytes(2, "big") + ulpdu + bytes(pad)


def lay_out(bodies, start, markers, crc):
    """Lay FPDU bodies (frame_fpdu output) out as a stream starting at
    stream offset start: a marker before every octet whose offset is a
    multiple of 512 (FPDUPTR back to the ULPDU_Length octet, 0 for a marker
    at the FPDU's start), then the CRC over everything laid out for the
    FPDU, markers included (ARCHITECTURE.md / iwarp-wire.md 2.4)."""
    out = bytearray()
    for body in bodies:
        fpdu = bytearray()
        len_at = None

        def put(octets):
            nonlocal len_at
            for b in octets:
                pos = start + len(out) + len(fpdu)
                if markers and pos % 512 == 0:
                    ptr = 0 if len_at is None else pos - len_at
                    fpdu.extend(b"\0\0" + ptr.to_bytes(2, "big"))
                    pos += 4
                if len_at is None:
                    len_at = pos
                fpdu.append(b)

        put(body)
        pos = start + len(out) + len(fpdu)
        if markers and pos % 512 == 0:
            fpdu.extend(b"\0\0" + (pos - len_at).to_bytes(2, "big"))
        value = crc32c(bytes(fpdu)) if crc else 0
        fpdu.extend(value.to_bytes(4, "little"))
        out.extend(fpdu)
    return bytes(out)


def synth_bodies():
    """A few FPDUs long enough to span markers: Sends and Writes with
    pseudo-random payload."""
    rnd = hashlib.sha256(b"libiwarp fuzz seed").digest() * 200
    send = bytes([0x41, 0x43]) + bytes(4) + (0).to_bytes(4, "big")
    write = bytes([0xC1, 0x40]) + (0x1FF8B7).to_bytes(4, "big") + (0x22BC850).to_bytes(8, "big")
    bodies = []
    for i, n in enumerate((1, 300, 700, 1301)):
        msn_mo = (i + 1).to_bytes(4, "big") + bytes(4)
        bodies.append(frame_fpdu(send + msn_mo + rnd[:n]))
        bodies.append(frame_fpdu(write + rnd[n : 2 * n]))
    return bodies


def synth_seeds(chained):
    """Streams with markers (the vectors have one marker between them) and
    a multi-marker stream each way."""
    for crc in (True, False):
        for markers in (False, True):
            for start in (0, 508, 4092, 0xFFFFFF00):
                bodies = synth_bodies() + chained
                s = {"crc": "on" if crc else "off", "markers": "on" if markers else "off",
                     "stream_offset": str(start)}
                yield from fpdu_seeds(s, lay_out(bodies, start, markers, crc))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[0]
    dirs = {t: os.path.join(out, "corpus-" + t) for t in ("fuzz_mpa_frame", "fuzz_fpdu_rx")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    counts = dict.fromkeys(dirs, 0)
    # FPDUs without markers, all starting at offset 0, can be chained into
    # one stream: the decoder then sees FPDU after FPDU.
    chain = {}
    for path in argv[1:]:
        for _id, kind, settings, blob in records(path):
            if not blob:
                continue
            if kind.startswith("mpa-frame"):
                for seed in frame_seeds(blob):
                    write_seed(dirs["fuzz_mpa_frame"], seed)
                    counts["fuzz_mpa_frame"] += 1
            elif kind.startswith("mpa-fpdu") or kind.startswith("mpa-stream"):
                for seed in fpdu_seeds(settings, blob):
                    write_seed(dirs["fuzz_fpdu_rx"], seed)
                    counts["fuzz_fpdu_rx"] += 1
                # Only good single FPDUs chain into a good stream.
                if (kind == "mpa-fpdu" and "expect" not in settings
                        and settings.get("markers", "off") == "off" and len(blob) % 4 == 0):
                    chain.setdefault(settings.get("crc", "on"), []).append(blob)
    for crc, blobs in chain.items():
        if len(blobs) > 1:
            s = {"crc": crc, "markers": "off"}
            for seed in fpdu_seeds(s, b"".join(blobs)):
                write_seed(dirs["fuzz_fpdu_rx"], seed)
                counts["fuzz_fpdu_rx"] += 1
    # Vector FPDUs (CRC stripped) re-laid with markers, plus long ones.
    bodies = [b[:-4] for b in chain.get("on", [])]
    for seed in synth_seeds(bodies):
        write_seed(dirs["fuzz_fpdu_rx"], seed)
        counts["fuzz_fpdu_rx"] += 1
    for t, n in counts.items():
        print(f"seed_from_vectors: {n} seeds -> {dirs[t]}")
    return 0 if all(counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
