/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the FPDU stream decoder (iw_fpdu_rx_*).
 *
 * Input: an 8-octet settings block, then the stream.
 *   0     bit 0 CRC, bit 1 markers, bit 2 enforce the CRC (default is
 *         IW_RX_SKIP_CRC so that mutated inputs get past the CRC),
 *         bit 3 direct placement (iw_fpdu_rx_direct_*) where allowed
 *   1..4  stream offset of the first octet (big-endian)
 *   5..6  max_ulpdu (big-endian, 0 = IW_MPA_ULPDU_MAX)
 *   7     chunking: 0 = the second run is fed one octet at a time for
 *         its first 256 octets, then in chunks of 1..8; else chunk sizes
 *         are drawn from 1..this value
 *
 * The stream is decoded twice: once in one piece, once in chunks (and with
 * direct placement if asked). Both runs check the decoder's invariants as
 * they go, and reduce what they saw to a digest that must not depend on how
 * the stream was cut up: the API promises that any segmentation works. The
 * chunked run uses a copy of the decoder whose comparisons are not traced
 * (fuzz/chunk_rx.c): the one-piece run traces the same ones.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "fuzz.h"

#define SETTINGS_LEN 8


struct settings {
	bool crc;
	bool markers;
	bool enforce_crc;
	bool direct;
	uint32_t stream_off;
	uint32_t max_ulpdu;
	uint8_t chunk_max;
};

/* A decoder: the library's (traced comparisons), or its copy in
 * fuzz/chunk_rx.c (untraced), whose functions have the library's types. */
struct rx_ops {
	__typeof__(iw_fpdu_rx_init) *init;
	__typeof__(iw_fpdu_rx_next) *next;
	__typeof__(iw_fpdu_rx_direct_len) *direct_len;
	__typeof__(iw_fpdu_rx_direct_done) *direct_done;
	__typeof__(iw_fpdu_rx_finish) *finish;
};

static const struct rx_ops lib_rx = {
	iw_fpdu_rx_init, iw_fpdu_rx_next, iw_fpdu_rx_direct_len, iw_fpdu_rx_direct_done,
	iw_fpdu_rx_finish,
};

__typeof__(iw_fpdu_rx_init) chunk_fpdu_rx_init;
__typeof__(iw_fpdu_rx_next) chunk_fpdu_rx_next;
__typeof__(iw_fpdu_rx_direct_len) chunk_fpdu_rx_direct_len;
__typeof__(iw_fpdu_rx_direct_done) chunk_fpdu_rx_direct_done;
__typeof__(iw_fpdu_rx_finish) chunk_fpdu_rx_finish;

static const struct rx_ops chunk_rx = {
	chunk_fpdu_rx_init, chunk_fpdu_rx_next, chunk_fpdu_rx_direct_len,
	chunk_fpdu_rx_direct_done, chunk_fpdu_rx_finish,
};

/* One decoding run over buf[0..len). */
struct run {
	const struct settings *set;
	const struct rx_ops *ops;
	const uint8_t *buf;
	size_t len;
	size_t pos;          /* octets of buf consumed (fed or placed) */
	uint32_t rng;        /* chunk sizes */
	bool in_seg;         /* SEG_HDR seen, SEG_END not yet */
	uint32_t payload_len;
	uint32_t payload_next; /* next payload offset expected */
	size_t last_end_pos; /* pos just after the last complete FPDU */
	uint64_t digest;
	const uint8_t *span; /* payload octets handed out and not yet in digest: */
	size_t span_len;     /* one range of buf (see take_payload) */
	int rc;              /* final: 0 or the sticky error */
	struct iw_fpdu_rx rx;
};

FUZZ_HARNESS static void mix(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;

	/* FNV-1a: order-sensitive and split-insensitive, which is what the
	 * comparison of a chunked run with a one-piece run needs. */
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ull;
}

FUZZ_HARNESS static void mix_u32(uint64_t *h, uint32_t v)
{
	mix(h, &v, sizeof(v));
}

FUZZ_HARNESS static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

FUZZ_HARNESS static uint32_t eff_max(const struct settings *set)
{
	return set->max_ulpdu ? set->max_ulpdu : IW_MPA_ULPDU_MAX;
}

/* Octets from stream offset s to the next marker (0 if one starts at s). */
FUZZ_HARNESS static uint32_t to_marker(uint32_t s)
{
	return (0u - s) & (IW_MPA_MARKER_INTERVAL - 1);
}

FUZZ_HARNESS static uint32_t stream_at(const struct run *r, size_t pos)
{
	return r->set->stream_off + (uint32_t)pos;
}

/* The payload range taken since the last other event goes into the
 * digest: where in buf it starts and how long it is. */
FUZZ_HARNESS static void span_flush(struct run *r)
{
	if (!r->span_len)
		return;
	mix_u32(&r->digest, (uint32_t)(r->span - r->buf));
	mix_u32(&r->digest, (uint32_t)r->span_len);
	r->span_len = 0;
}

/* Payload octets handed out (as events or for direct placement) lie in the
 * current segment, in order, and never include a marker. Both runs decode
 * the same buf, and the decoder hands out pointers into it, so the digest
 * takes the position and length of each maximal range handed out, which
 * does not depend on how the range was split and also pins the octets
 * themselves: hashing every payload octet (with ASan checking each load)
 * was a tenth of this target's time (perf). */
FUZZ_HARNESS static void take_payload(struct run *r, const uint8_t *p, size_t n, uint32_t off)
{
	CHECK(r->in_seg);
	CHECK(n > 0);
	CHECK(off == r->payload_next);
	CHECK(off + n <= r->payload_len);
	CHECK(p >= r->buf && p + n <= r->buf + r->len);
	if (r->set->markers)
		CHECK(to_marker(stream_at(r, (size_t)(p - r->buf))) >= n);
	r->payload_next += (uint32_t)n;
	if (r->span_len && r->span + r->span_len == p) {
		r->span_len += n;
		return;
	}
	span_flush(r);
	r->span = p;
	r->span_len = n;
}

FUZZ_HARNESS static void check_hdr(struct run *r, const struct iw_ddp_seg *seg)
{
	struct iw_ddp_hdr h;
	enum iw_wire_err why = IW_WERR_NONE;
	int n;

	CHECK(!r->in_seg);
	CHECK(seg->ulpdu_len <= eff_max(r->set));
	CHECK(seg->raw_hdr_len >= IW_DDP_TAGGED_HDR_LEN && seg->raw_hdr_len <= IW_FPDU_HDR_MAX);
	CHECK(seg->raw_hdr_len <= seg->ulpdu_len);
	CHECK(seg->payload_len == (uint32_t)seg->ulpdu_len - seg->raw_hdr_len);
	/* The FPDU started within what has been consumed. */
	CHECK(seg->fpdu_off - r->set->stream_off <= r->pos);

	/* The DDP parser on its own agrees with the decoder. */
	n = iw_ddp_hdr_parse(&h, &why, seg->raw_hdr, seg->raw_hdr_len);
	CHECK(n >= 0 && (size_t)n == iw_ddp_hdr_len(&seg->ddp));
	CHECK(h.ctrl == seg->ddp.ctrl && h.rdmap_ctrl == seg->ddp.rdmap_ctrl);

	r->in_seg = true;
	r->payload_len = seg->payload_len;
	r->payload_next = 0;
	span_flush(r);
	mix_u32(&r->digest, IW_RX_SEG_HDR);
	mix_u32(&r->digest, seg->fpdu_off);
	mix_u32(&r->digest, seg->ulpdu_len);
	mix(&r->digest, seg->raw_hdr, seg->raw_hdr_len);
}

/* With the CRC enforced, the value the decoder accepted must be the CRC32c
 * of every octet from the FPDU's start (leading marker included) to its CRC
 * field, computed here in one piece. Skipped when a marker sits in the CRC
 * field (only possible with a stream offset that is not 4-aligned). */
FUZZ_HARNESS static void check_crc(const struct run *r, const struct iw_ddp_seg *seg)
{
	size_t start = seg->fpdu_off - r->set->stream_off;
	uint32_t crc_at = stream_at(r, r->pos - IW_MPA_CRC_LEN);

	if (!r->set->crc || !r->set->enforce_crc || r->pos < IW_MPA_CRC_LEN)
		return;
	/* A marker starting in [crc_at - 3, crc_at + 3] overlaps the field. */
	if (r->set->markers && to_marker(crc_at - 3) <= 6)
		return;
	CHECK(start <= r->pos - IW_MPA_CRC_LEN);
	CHECK(iw_crc32c(r->buf + start, r->pos - IW_MPA_CRC_LEN - start) == seg->crc);
}

FUZZ_HARNESS static void check_end(struct run *r, const struct iw_ddp_seg *seg)
{
	CHECK(r->in_seg);
	CHECK(r->payload_next == r->payload_len);
	check_crc(r, seg);
	r->in_seg = false;
	r->last_end_pos = r->pos;
	span_flush(r);
	mix_u32(&r->digest, IW_RX_SEG_END);
	mix_u32(&r->digest, seg->crc);
}

FUZZ_HARNESS static void on_event(struct run *r, const struct iw_rx_event *ev)
{
	CHECK(ev->seg != NULL);
	switch (ev->kind) {
	case IW_RX_SEG_HDR:
		check_hdr(r, ev->seg);
		break;
	case IW_RX_PAYLOAD:
		take_payload(r, ev->data, ev->len, ev->off);
		break;
	case IW_RX_SEG_END:
		check_end(r, ev->seg);
		break;
	default:
		abort();
	}
}

/* An error: the reason is set, and asking again changes nothing. */
FUZZ_HARNESS static void check_error(struct run *r, int rc, const uint8_t *in, size_t n)
{
	struct iw_rx_event ev;
	enum iw_wire_err err = r->rx.err;
	size_t used = 0;

	CHECK(rc == -EPROTO || rc == -EBADMSG);
	CHECK(err > IW_WERR_NONE && err < IW_WERR__COUNT);
	CHECK(r->rx.err_term == iw_wire_err_term(err));
	CHECK((rc == -EBADMSG) == (err == IW_WERR_FPDU_CRC));
	if (rc == -EBADMSG)
		CHECK(r->set->crc && r->set->enforce_crc);
	CHECK(r->ops->next(&r->rx, &ev, in, n, &used) == rc);
	CHECK(r->rx.err == err);
	CHECK(r->ops->direct_len(&r->rx) == 0);
	span_flush(r);
	mix_u32(&r->digest, (uint32_t)-rc);
	mix_u32(&r->digest, err);
	mix_u32(&r->digest, r->rx.err_off);
}

/* Direct placement while the decoder allows it: take up to the allowed
 * length from the chunk as if it had been received into its destination. */
FUZZ_HARNESS static size_t place_direct(struct run *r, const uint8_t *in, size_t n)
{
	size_t allowed = r->ops->direct_len(&r->rx);
	size_t k;

	if (!allowed || !n)
		return 0;
	CHECK(r->in_seg);
	if (n > allowed) {
		/* One octet too many is refused and changes nothing. */
		static struct iw_fpdu_rx before;

		memcpy(&before, &r->rx, sizeof(before));
		CHECK(r->ops->direct_done(&r->rx, in, allowed + 1) == -EINVAL);
		CHECK(memcmp(&before, &r->rx, sizeof(before)) == 0);
	}
	k = n < allowed ? n : allowed;
	take_payload(r, in, k, r->payload_next);
	CHECK(r->ops->direct_done(&r->rx, in, k) == 0);
	CHECK(r->rx.stream_off == stream_at(r, r->pos + k));
	return k;
}

/* Feed one chunk until it is used up or the decoder fails. */
FUZZ_HARNESS static int feed(struct run *r, const uint8_t *in, size_t n)
{
	size_t calls = 0;

	while (n) {
		struct iw_rx_event ev;
		size_t used = (size_t)-1;
		size_t k = r->set->direct ? place_direct(r, in, n) : 0;
		int rc;

		r->pos += k;
		in += k;
		n -= k;
		if (!n)
			break;
		CHECK(++calls <= 4 * n + 16 + 4 * r->len);
		rc = r->ops->next(&r->rx, &ev, in, n, &used);
		if (rc < 0) {
			check_error(r, rc, in, n);
			return rc;
		}
		CHECK(rc == 0 || rc == 1);
		CHECK(used <= n);
		CHECK(rc == 1 || used == n);
		r->pos += used;
		CHECK(r->rx.stream_off == stream_at(r, r->pos));
		if (rc == 1)
			on_event(r, &ev);
		in += used;
		n -= used;
	}
	return 0;
}

/* Chunking 0 feeds one octet per call for the first OCTET_SPAN octets,
 * then chunks of 1..8: at one call per octet an input's cost grew with its
 * length (the corpus's octet-by-octet inputs average 970 octets, most of
 * the target's decoder calls), and splits past the opening FPDUs reached
 * no line that random small chunks do not. */
#define OCTET_SPAN 256

FUZZ_HARNESS static size_t chunk_len(struct run *r, size_t left, bool whole)
{
	size_t c;

	if (whole)
		return left;
	if (!r->set->chunk_max && r->pos < OCTET_SPAN)
		return 1;
	c = 1 + next_rand(&r->rng) % (r->set->chunk_max ? r->set->chunk_max : 8);
	return c < left ? c : left;
}

/* Input over: a partial FPDU is IW_WERR_FPDU_TRUNCATED, else fine. */
FUZZ_HARNESS static void finish(struct run *r)
{
	int rc = r->ops->finish(&r->rx);

	if (r->pos == r->last_end_pos) {
		CHECK(rc == 0);
	} else {
		CHECK(rc == -EPROTO && r->rx.err == IW_WERR_FPDU_TRUNCATED);
		CHECK(r->rx.err_term == iw_wire_err_term(IW_WERR_FPDU_TRUNCATED));
	}
	span_flush(r);
	mix_u32(&r->digest, (uint32_t)-rc);
	r->rc = rc;
}

FUZZ_HARNESS static void decode(struct run *r, const struct settings *set, const uint8_t *buf, size_t len,
		   bool whole)
{
	unsigned flags = set->enforce_crc ? 0 : IW_RX_SKIP_CRC;

	memset(r, 0, sizeof(*r));
	r->set = set;
	/* The one-piece run traces the comparisons, the chunked one (the
	 * same comparisons, many more calls) does not (fuzz/chunk_rx.c). */
	r->ops = whole ? &lib_rx : &chunk_rx;
	r->buf = buf;
	r->len = len;
	r->rng = 0x9e3779b9u ^ (uint32_t)len;
	r->digest = 0xcbf29ce484222325ull;
	r->ops->init(&r->rx, set->crc, set->markers, set->stream_off, set->max_ulpdu, flags);
	CHECK(r->rx.stream_off == set->stream_off);

	while (r->pos < len) {
		size_t n = chunk_len(r, len - r->pos, whole);

		r->rc = feed(r, buf + r->pos, n);
		if (r->rc)
			return;
	}
	finish(r);
}

FUZZ_HARNESS static void read_settings(struct settings *s, const uint8_t *p)
{
	s->crc = p[0] & 1;
	s->markers = p[0] & 2;
	s->enforce_crc = p[0] & 4;
	s->direct = p[0] & 8;
	s->stream_off = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
	s->max_ulpdu = (uint32_t)p[5] << 8 | p[6];
	s->chunk_max = p[7];
}

FUZZ_HARNESS int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run whole, chunked;
	struct settings set;
	bool direct;

	if (size < SETTINGS_LEN)
		return 0;
	read_settings(&set, data);
	data += SETTINGS_LEN;
	size -= SETTINGS_LEN;

	direct = set.direct;
	set.direct = false;
	decode(&whole, &set, data, size, true);
	set.direct = direct;
	decode(&chunked, &set, data, size, false);

	CHECK(whole.rc == chunked.rc);
	CHECK(whole.digest == chunked.digest);
	return 0;
}
