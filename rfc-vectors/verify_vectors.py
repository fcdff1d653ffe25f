#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Check the iWARP wire-format vectors (*.iwv) in this directory.

libiwarp copy of shared/reference/vectors/verify_vectors.py, extended with
the kinds mpa-stream, mpa-frame-bad and mpa-fpdu-bad, and with a small
reference decoder (decode_frame / decode_stream below) that every frame and
FPDU vector is run through: valid kinds must decode cleanly, *-bad kinds must
fail with exactly their settings expect=<reason> (after good=K FPDUs).

Standalone (Python 3 standard library only).  Written for this project.
It re-derives everything from the hex bytes: the CRC32c (own bitwise code),
the CRC field byte order, every `field`/`bits` line, marker placement and
FPDUPTR values, ULPDU_Length/PAD arithmetic, DDP/RDMAP header sanity and a
simulation of how Wireshark's MPA dissector compares the CRC.

Usage:  python3 verify_vectors.py [file.iwv ...]   (default: all *.iwv here)
Exit status 0 when every check passes.
"""
import glob
import os
import sys

MARKER_INTERVAL = 512
MAX_PD = 512
KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"

# Untagged queue number each untagged opcode must use (RFC 5040, RFC 7306).
UNTAGGED_QN = {0x1: 1, 0x3: 0, 0x4: 0, 0x5: 0, 0x6: 0, 0x7: 2,
               0x8: 0, 0x9: 0, 0xA: 1, 0xB: 3}
TAGGED_OPS = {0x0, 0x2}


def crc32c(data):
    """CRC-32C: reflected poly 0x82F63B78, init and final XOR 0xFFFFFFFF."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def wireshark_style_check(data, crc_field):
    """Mimic Wireshark: table CRC with a byte-swapped register, complemented,
    compared against the CRC field read as a big-endian integer."""
    table = []
    for i in range(256):
        r = i
        for _ in range(8):
            r = (r >> 1) ^ (0x82F63B78 if r & 1 else 0)
        table.append(r)

    def swap(v):
        return int.from_bytes(v.to_bytes(4, "big"), "little")
    reg = swap(0xFFFFFFFF)
    for byte in data:
        reg = (reg >> 8) ^ table[(reg ^ byte) & 0xFF]
    computed = (~swap(reg)) & 0xFFFFFFFF
    return computed == int.from_bytes(crc_field, "big")


class Rec:
    def __init__(self, vid, path):
        self.vid, self.path = vid, path
        self.kv = {}
        self.lines = []
        self.blob = bytearray()


def parse(path):
    recs, cur = [], None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            if key == "vector":
                cur = Rec(rest.strip(), path)
                continue
            if cur is None:
                raise SystemExit(f"{path}:{n}: line outside a record")
            if key == "end":
                recs.append(cur)
                cur = None
            elif key == "hex":
                cur.blob += bytes.fromhex(rest)
            elif key in ("origin", "kind", "source", "settings"):
                cur.kv[key] = rest.strip()
            else:
                cur.lines.append((n, key, rest))
    if cur is not None:
        raise SystemExit(f"{path}: record {cur.vid} not terminated by 'end'")
    return recs


def settings(rec):
    out = {}
    for tok in rec.kv.get("settings", "").split():
        k, _, v = tok.partition("=")
        out[k] = v
    return out


def value_matches(chunk, spec):
    spec = spec.strip()
    if spec.startswith('"') and spec.endswith('"'):
        return chunk == spec[1:-1].encode("ascii")
    if spec.startswith("bytes:"):
        return chunk == bytes.fromhex(spec[6:])
    if spec.startswith("mask:"):
        _, mask, val = spec.split(":")
        return int.from_bytes(chunk, "big") & int(mask, 16) == int(val, 0)
    return int.from_bytes(chunk, "big") == int(spec, 0)


def check_record(rec, errors):
    b = bytes(rec.blob)
    st = settings(rec)
    ctx = f"{os.path.basename(rec.path)}:{rec.vid}"

    def err(msg):
        errors.append(f"{ctx}: {msg}")

    declared_markers = []
    crc_value = None
    for n, key, rest in rec.lines:
        p = rest.split()
        if key == "field":
            off, ln = int(p[0]), int(p[1])
            spec = rest.split(None, 3)[3]
            if off + ln > len(b):
                err(f"line {n}: field {p[2]} beyond end")
            elif not value_matches(b[off:off + ln], spec):
                err(f"line {n}: field {p[2]} = {b[off:off + ln].hex()} does not match {spec}")
        elif key == "bits":
            off, mask, val = int(p[0]), int(p[1], 16), int(p[3], 0)
            shift = (mask & -mask).bit_length() - 1
            if (b[off] & mask) >> shift != val:
                err(f"line {n}: bits {p[2]} mismatch")
        elif key == "crc32c":
            crc_value, start, end = int(p[0], 16), int(p[1]), int(p[2])
            got = crc32c(b[start:end])
            if got != crc_value:
                err(f"line {n}: crc32c over [{start},{end}) is 0x{got:08x}, file says 0x{crc_value:08x}")
        elif key == "crc_wire":
            off, octets = int(p[0]), bytes.fromhex("".join(p[1:]))
            if b[off:off + 4] != octets:
                err(f"line {n}: crc_wire differs from the hex bytes")
            if crc_value is None or octets != crc_value.to_bytes(4, "little"):
                err(f"line {n}: crc_wire is not the CRC value least-significant octet first")
            if not wireshark_style_check(b[:off], octets):
                err(f"line {n}: Wireshark-style comparison would report a bad CRC")
        elif key == "crc_published":
            octets = bytes.fromhex("".join(p))
            if crc_value is None or octets != crc_value.to_bytes(4, "little"):
                err(f"line {n}: published CRC octets do not equal the value stored LSB-first")
        elif key == "marker":
            off, ptr = int(p[0]), int(p[1])
            declared_markers.append(off)
            if b[off:off + 4] != bytes([0, 0]) + ptr.to_bytes(2, "big"):
                err(f"line {n}: marker bytes wrong")
            if ptr & 3:
                err(f"line {n}: FPDUPTR low two bits must be zero")
        elif key == "note":
            pass
        else:
            err(f"line {n}: unknown key {key}")

    kind = rec.kv.get("kind")
    if kind == "mpa-fpdu":
        check_fpdu(b, st, declared_markers, err)
    elif kind == "mpa-frame":
        check_frame(b, err)
    check_extended(rec, kind, b, st, declared_markers, err)


def check_fpdu(b, st, declared_markers, err):
    markers_on = st.get("markers") == "on"
    stream = int(st.get("stream_offset", "0"))
    body = b[:-4]
    # strip markers: they sit wherever (stream + offset) % 512 == 0
    stripped, found = bytearray(), []
    i = 0
    while i < len(body):
        if markers_on and (stream + i) % MARKER_INTERVAL == 0:
            found.append(i)
            ptr = int.from_bytes(body[i + 2:i + 4], "big")
            if body[i:i + 2] != b"\0\0":
                err(f"marker at {i}: reserved field not zero")
            # FPDUPTR = distance from ULPDU_Length's first octet back to the marker
            if ptr != i:
                err(f"marker at {i}: FPDUPTR {ptr}, expected {i}")
            i += 4
            continue
        stripped.append(body[i])
        i += 1
    if sorted(found) != sorted(declared_markers):
        err(f"marker positions {found} differ from declared {declared_markers}")
    ulen = int.from_bytes(stripped[0:2], "big")
    pad = (-(2 + ulen)) % 4
    if len(stripped) != 2 + ulen + pad:
        err(f"length: ULPDU_Length {ulen} + pad {pad} + 2 != {len(stripped)} (markers removed)")
        return
    if any(stripped[2 + ulen:]):
        err("pad octets not zero")
    ddp = stripped[2:2 + ulen]
    ctrl, rctrl = ddp[0], ddp[1]
    tagged = bool(ctrl & 0x80)
    if ctrl & 0x3C:
        err("DDP reserved bits set")
    if ctrl & 0x03 != 1:
        err("DDP version is not 1")
    if rctrl >> 6 != 1:
        err("RDMAP version is not 1")
    if rctrl & 0x30:
        err("RDMAP reserved bits set")
    op = rctrl & 0x0F
    if tagged:
        if op not in TAGGED_OPS:
            err(f"opcode {op:#x} is not a tagged message type")
        if len(ddp) < 14:
            err("tagged header truncated")
    else:
        if op not in UNTAGGED_QN:
            err(f"opcode {op:#x} is not an untagged message type")
        if len(ddp) < 18:
            err("untagged header truncated")
            return
        qn = int.from_bytes(ddp[6:10], "big")
        msn = int.from_bytes(ddp[10:14], "big")
        if UNTAGGED_QN.get(op) != qn:
            err(f"opcode {op:#x} must use QN {UNTAGGED_QN.get(op)}, has {qn}")
        if msn == 0:
            err("MSN 0 is never the first MSN (queues start at 1)")
        if op not in (0x4, 0x6) and int.from_bytes(ddp[2:6], "big") != 0:
            err("reserved 32-bit RDMAP field (Invalidate STag only for 0x4/0x6) not zero")


def check_frame(b, err):
    if b[:16] not in (KEY_REQ, KEY_REP):
        err("unknown MPA key")
    flags, rev = b[16], b[17]
    pdlen = int.from_bytes(b[18:20], "big")
    if pdlen != len(b) - 20:
        err("PD_Length does not match the bytes present")
    if pdlen > MAX_PD:
        err("PD_Length above 512")
    if b[:16] == KEY_REQ and flags & 0x20:
        err("R (reject) set in a Request")
    if flags & 0x10 and (rev != 2 or pdlen < 4):
        err("enhanced flag needs Rev 2 and at least 4 octets of private data")


# ---------------------------------------------------------------------------
# libiwarp extensions
# ---------------------------------------------------------------------------

KINDS = {"crc32c", "mpa-frame", "mpa-fpdu", "mpa-stream", "mpa-frame-bad", "mpa-fpdu-bad"}

# reason name (lib/wire/wire_err.c) -> TERMINATE triple layer<<12 | etype<<8 | ecode
REASONS = {
    "mpa_key": 0x2004, "mpa_rev": 0x2004, "mpa_reserved": 0x2004, "mpa_pd_len": 0x2004,
    "mpa_truncated": 0x2004, "mpa_enh_short": 0x2004, "mpa_reject_req": 0x2004,
    "fpdu_crc": 0x2002, "fpdu_marker": 0x2003, "fpdu_too_long": 0x1000,
    "fpdu_too_short": 0x1000, "fpdu_truncated": 0x2001, "ddp_t_version": 0x1104,
    "ddp_u_version": 0x1206, "ddp_qn": 0x1201, "ddp_msn_zero": 0x1203,
    "rdmap_version": 0x0205, "rdmap_opcode": 0x0206, "rdmap_not_last": 0x0206,
    "rdmap_term": 0x02FF, "rdmap_atomic_op": 0x0206,
}
FRAME_REASONS = {k for k in REASONS if k.startswith("mpa_")}
SINGLE_SEGMENT_OPS = {0x1, 0x7, 0x8, 0x9, 0xA, 0xB}


def decode_frame(b, st):
    """Reference MPA frame parser. Returns None (valid, exactly 20 + PD_Length
    octets), "need_more" (incomplete, lenient input) or a reason name."""
    frame = st.get("frame")
    if frame is None:   # shared vectors carry no frame= setting: infer from the key
        frame = "reply" if b[:16] == KEY_REP else "request"
    parse = st.get("parse", "").split(",")
    strict, complete = "strict" in parse, "complete" in parse
    if len(b) < 20:
        return "mpa_truncated" if complete else "need_more"
    if b[:16] != (KEY_REQ if frame == "request" else KEY_REP):
        return "mpa_key"
    flags, rev = b[16], b[17]
    pdlen = int.from_bytes(b[18:20], "big")
    if rev not in (1, 2):
        return "mpa_rev"
    if pdlen > MAX_PD:
        return "mpa_pd_len"
    if strict and flags & 0x0F:
        return "mpa_reserved"
    if strict and frame == "request" and flags & 0x20:
        return "mpa_reject_req"
    if rev == 2 and flags & 0x10 and pdlen < 4:
        return "mpa_enh_short"
    if len(b) < 20 + pdlen:
        return "mpa_truncated" if complete else "need_more"
    if len(b) != 20 + pdlen:
        return "trailing octets after the frame"
    return None


class _Stop(Exception):
    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def decode_stream(b, st):
    """Reference FPDU stream decoder over a complete input.
    Returns (reason or None, number of good FPDUs, marker offsets found,
    list of (start, crc_off) per good FPDU)."""
    crc_on = st.get("crc") == "on"
    markers_on = st.get("markers") == "on"
    stream = int(st.get("stream_offset", "0"))
    max_ulpdu = int(st.get("max_ulpdu", "0")) or 65535
    pos = 0
    good = 0
    found, spans = [], []

    def take(n, start, acc, covered=True):
        nonlocal pos
        out = bytearray()
        while len(out) < n:
            if markers_on and (stream + pos) % MARKER_INTERVAL == 0:
                if pos + 4 > len(b):
                    raise _Stop("fpdu_truncated")
                m = b[pos:pos + 4]
                if m[:2] != b"\0\0" or int.from_bytes(m[2:], "big") != pos - start:
                    raise _Stop("fpdu_marker")
                found.append(pos)
                acc += m          # markers are covered by the CRC
                pos += 4
                continue
            if pos >= len(b):
                raise _Stop("fpdu_truncated")
            out.append(b[pos])
            if covered:
                acc.append(b[pos])
            pos += 1
        return bytes(out)

    try:
        while pos < len(b):
            start, acc = pos, bytearray()
            ulen = int.from_bytes(take(2, start, acc), "big")
            if ulen > max_ulpdu:
                raise _Stop("fpdu_too_long")
            ddp = take(ulen, start, acc)
            take((-(2 + ulen)) % 4, start, acc)
            crc_field = take(4, start, acc, covered=False)
            crc_off = pos - 4
            check_segment(ddp)
            if crc_on and crc32c(bytes(acc)) != int.from_bytes(crc_field, "little"):
                raise _Stop("fpdu_crc")
            if not crc_on and crc_field != b"\0\0\0\0":
                raise _Stop("CRC off but CRC field not zero")
            spans.append((start, crc_off))
            good += 1
    except _Stop as e:
        return e.reason, good, found, spans
    return None, good, found, spans


def check_segment(ddp):
    if len(ddp) < 2:
        raise _Stop("fpdu_too_short")
    ctrl, rctrl = ddp[0], ddp[1]
    tagged = bool(ctrl & 0x80)
    if len(ddp) < (14 if tagged else 18):
        raise _Stop("fpdu_too_short")
    if ctrl & 0x03 != 1:
        raise _Stop("ddp_t_version" if tagged else "ddp_u_version")
    if rctrl >> 6 != 1:
        raise _Stop("rdmap_version")
    op = rctrl & 0x0F
    if tagged != (op in TAGGED_OPS) or (not tagged and op not in UNTAGGED_QN):
        raise _Stop("rdmap_opcode")
    if tagged:
        return
    qn = int.from_bytes(ddp[6:10], "big")
    if UNTAGGED_QN[op] != qn:
        raise _Stop("ddp_qn")
    if op in SINGLE_SEGMENT_OPS and not ctrl & 0x40:
        raise _Stop("rdmap_not_last")
    body = ddp[18:]
    need = {0x1: 28, 0x7: 4, 0x8: 8, 0x9: 8, 0xA: 52, 0xB: 12}.get(op, 0)
    if len(body) < need:
        raise _Stop("rdmap_term" if op == 0x7 else "fpdu_too_short")
    if op == 0x7:
        hdrct = body[2]
        n = 4
        if hdrct & 0xC0:          # M or D: the DDP Segment Length field is present
            n += 2
        if hdrct & 0x40:          # D: copied DDP header, 14 or 18 by its T bit
            if len(body) < n + 1:
                raise _Stop("rdmap_term")
            n += 14 if body[n] & 0x80 else 18
        if hdrct & 0x20:          # R: copied 28-octet RDMA header
            n += 28
        if len(body) < n:
            raise _Stop("rdmap_term")
    if op == 0xA and body[3] & 0x0F not in (0x0, 0x2):
        raise _Stop("rdmap_atomic_op")


def check_extended(rec, kind, b, st, declared_markers, err):
    # limits of the C reader, tests/iwv.h
    if len(rec.lines) > 96:
        err(f"{len(rec.lines)} note/field/bits/crc/marker lines; the C reader keeps 96")
    for n, key, rest in rec.lines:
        if len(rest) > 511:
            err(f"line {n}: {len(rest)} characters after '{key}'; the C reader keeps 511")
    if len(b) > 8192:
        err(f"blob of {len(b)} octets; the C reader keeps 8192")
    if kind not in KINDS:
        err(f"unknown kind {kind}")
        return
    if "source" not in rec.kv or "origin" not in rec.kv:
        err("origin and source lines are required")
    if kind in ("mpa-frame", "mpa-frame-bad"):
        if kind == "mpa-frame-bad" and st.get("frame") not in ("request", "reply"):
            err("mpa-frame-bad needs settings frame=request|reply")
        if "frame" in st and st["frame"] not in ("request", "reply"):
            err("frame= must be request or reply")
        got = decode_frame(b, st)
        if kind == "mpa-frame":
            if got is not None:
                err(f"reference frame parser says {got}")
        else:
            check_expect(st, err, FRAME_REASONS)
            if got != st.get("expect"):
                err(f"reference frame parser says {got}, vector expects {st.get('expect')}")
    elif kind in ("mpa-fpdu", "mpa-stream", "mpa-fpdu-bad"):
        for k in ("crc", "markers"):
            if st.get(k) not in ("on", "off"):
                err(f"settings {k}=on|off missing")
        if kind != "mpa-fpdu" and "stream_offset" not in st:
            err("settings stream_offset=N missing")
        if int(st.get("stream_offset", "0")) % 4:
            err("stream_offset must be a multiple of 4 (FPDUs are 4-aligned in stream space)")
        reason, good, found, spans = decode_stream(b, st)
        if kind == "mpa-fpdu-bad":
            check_expect(st, err, set(REASONS) - FRAME_REASONS)
            if reason != st.get("expect"):
                err(f"reference decoder says {reason}, vector expects {st.get('expect')}")
            if good != int(st.get("good", "0")):
                err(f"reference decoder found {good} good FPDUs before the error, settings good={st.get('good', '0')}")
            return
        if reason is not None:
            err(f"reference decoder says {reason} (after {good} good FPDUs)")
            return
        want = 1 if kind == "mpa-fpdu" else int(st.get("segments", "0"))
        if good != want:
            err(f"{good} FPDUs decoded, expected {want} (segments=)")
        if sorted(found) != sorted(declared_markers):
            err(f"markers found at {found}, declared {sorted(declared_markers)}")


def check_expect(st, err, allowed):
    exp = st.get("expect")
    if exp not in allowed:
        err(f"settings expect={exp} is not a known reason for this kind")
        return
    term = st.get("term")
    if term is None:
        err("settings term=0xLTCC missing")
    elif int(term, 16) != REASONS[exp]:
        err(f"term={term} but reason {exp} maps to 0x{REASONS[exp]:04x}")


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    files = argv[1:] or sorted(glob.glob(os.path.join(here, "*.iwv")))
    errors, count = [], 0
    for path in files:
        for rec in parse(path):
            count += 1
            check_record(rec, errors)
    for e in errors:
        print("FAIL", e)
    print(f"{count} vectors checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
