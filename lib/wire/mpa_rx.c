/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FPDU stream decoder: a byte-driven state machine that takes the receive
 * stream in any segmentation and reports DDP segments as events.
 *
 *   IDLE -> LEN (2) -> HDR (ctrl octet, DDP header, RDMAP header)
 *        -> PAYLOAD (borrowed from the input, split only at markers)
 *        -> TRAILER (pad + CRC) -> IDLE
 *
 * A marker may interrupt any state; it is recognised purely by stream
 * offset. The CRC runs over the octets as they are consumed, so the payload
 * is touched once. Header syntax is left to iw_ddp_hdr_parse() and the
 * iw_rdmap_*_parse() calls: this file only frames.
 */
#include <errno.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/crc32c.h"
#include "wire/cursor.h"
#include "wire/mpa_rx.h"
#include "wire/mpa_tx.h"
#include "base/visibility.h"

enum rx_state { RX_IDLE = 0, RX_LEN, RX_HDR, RX_PAYLOAD, RX_TRAILER, RX_ERROR };

/* Largest Terminate the decoder accepts: control word, DDP segment length,
 * a copied untagged DDP header and a copied Read Request header. */
#define TERM_MAX (IW_RDMAP_TERM_MIN_LEN + 2 + IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN)

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static int err_code(enum iw_wire_err e) { return e == IW_WERR_FPDU_CRC ? -EBADMSG : -EPROTO; }

/* Stop the decoder for good: every later call reports the same error. */
static int fail(struct iw_fpdu_rx *rx, enum iw_wire_err why)
{
	rx->err = why;
	rx->err_term = iw_wire_err_term(why);
	rx->err_off = rx->fpdu_start;
	rx->state = RX_ERROR;
	return err_code(why);
}

static void crc_flush(struct iw_fpdu_rx *rx)
{
	if (rx->crc_pend_len)
		rx->crc_state = iw_crc32c_update(rx->crc_state, rx->crc_pend, rx->crc_pend_len);
	rx->crc_pend = NULL;
	rx->crc_pend_len = 0;
}

/* CRC-covered input octets are queued while they stay adjacent in the
 * input and then fed in one call, so a contiguous FPDU costs one call for
 * its length and headers and one for payload and pad, not one per state.
 * The queue points into the caller's input: it is flushed before
 * iw_fpdu_rx_next() returns. */
static void crc_feed(struct iw_fpdu_rx *rx, const uint8_t *p, size_t n)
{
	if (!rx->crc || n == 0)
		return;
	if (rx->crc_pend_len && rx->crc_pend + rx->crc_pend_len == p) {
		rx->crc_pend_len += n;
		return;
	}
	crc_flush(rx);
	rx->crc_pend = p;
	rx->crc_pend_len = n;
}

IW_EXPORT void iw_fpdu_rx_init(struct iw_fpdu_rx *rx, bool crc, bool markers, uint32_t stream_off,
			       uint32_t max_ulpdu, unsigned flags)
{
	memset(rx, 0, sizeof(*rx));
	rx->crc = crc;
	rx->markers = markers;
	rx->flags = flags;
	rx->stream_off = stream_off;
	rx->max_ulpdu = (max_ulpdu == 0 || max_ulpdu > IW_MPA_ULPDU_MAX) ? IW_MPA_ULPDU_MAX
									  : max_ulpdu;
	rx->state = RX_IDLE;
}

/* The first octet of an FPDU (its leading marker, if one is due) arrives.
 * seg is not cleared wholesale (that costs more than the rest of the
 * header path): every field is set before the events expose it, except the
 * rdmap union, which holds only the member the opcode names. */
static void begin_fpdu(struct iw_fpdu_rx *rx)
{
	rx->fpdu_start = rx->stream_off;
	rx->seg.fpdu_off = rx->stream_off;
	rx->seg.raw_hdr_len = 0;
	rx->seg.payload_len = 0;
	rx->seg.crc = 0;
	rx->crc_state = IW_CRC32C_INIT;
	rx->state = RX_LEN;
	rx->need = 2;
	rx->got = 0;
	rx->payload_done = 0;
	rx->payload_crc_done = false;
}

static void enter_trailer(struct iw_fpdu_rx *rx)
{
	rx->state = RX_TRAILER;
	rx->pad_crc_done = rx->payload_crc_done;
	rx->got = 0;
	rx->need = iw_mpa_pad(rx->seg.ulpdu_len) + IW_MPA_CRC_LEN;
}

/* A marker octet is CRC-covered unless it sits inside the CRC field, i.e.
 * after the field's first octet. One due right after the pad precedes the
 * field and is covered. */
static bool marker_covered(const struct iw_fpdu_rx *rx)
{
	return !(rx->state == RX_TRAILER && rx->got > iw_mpa_pad(rx->seg.ulpdu_len));
}

/* Marker octets: they sit at stream offsets 512k .. 512k+3, so the offset
 * itself says how many have been gathered. */
/* The marker at p, whole, is the one due at stream offset at and valid:
 * FPDUPTR points back at the FPDU's first octet, a leading marker being
 * part of its FPDU (FPDUPTR 0). */
static bool marker_ok(const struct iw_fpdu_rx *rx, const uint8_t *p, uint32_t at)
{
	return iw_get_be16(p) == 0 && iw_get_be16(p + 2) == at - rx->fpdu_start;
}

static void check_marker(struct iw_fpdu_rx *rx, const uint8_t *p, uint32_t at, int *rc)
{
	if (!marker_ok(rx, p, at))
		*rc = fail(rx, IW_WERR_FPDU_MARKER);
}

static size_t take_marker(struct iw_fpdu_rx *rx, const uint8_t *p, size_t n, int *rc)
{
	uint32_t phase = rx->stream_off & IW_MARKER_MASK;
	size_t k = min_sz(n, IW_MPA_MARKER_LEN - phase);

	if (k == IW_MPA_MARKER_LEN) {
		/* The usual case: all four octets at hand, checked in place. */
		if (marker_covered(rx))
			crc_feed(rx, p, k);
		check_marker(rx, p, rx->stream_off, rc);
		return k;
	}
	memcpy(rx->marker + phase, p, k);
	if (marker_covered(rx))
		crc_feed(rx, p, k);
	rx->marker_got = (uint8_t)(phase + k);
	if (rx->marker_got < IW_MPA_MARKER_LEN)
		return k;

	check_marker(rx, rx->marker, rx->stream_off + (uint32_t)k - IW_MPA_MARKER_LEN, rc);
	memset(rx->marker, 0, sizeof(rx->marker));
	rx->marker_got = 0;
	return k;
}

static size_t take_len(struct iw_fpdu_rx *rx, const uint8_t *p, size_t n, int *rc)
{
	size_t k;

	if (rx->got == 0 && n >= 2) {
		/* Both octets at hand: read them in place. */
		k = 2;
		rx->seg.ulpdu_len = iw_get_be16(p);
	} else {
		k = 1;
		rx->lenbuf[rx->got++] = p[0];
		rx->seg.ulpdu_len = iw_get_be16(rx->lenbuf);
	}
	crc_feed(rx, p, k);
	if (k == 1 && rx->got < 2)
		return k;

	if (rx->seg.ulpdu_len > rx->max_ulpdu) {
		*rc = fail(rx, IW_WERR_FPDU_TOO_LONG);
		return k;
	}
	/* No DDP header is shorter than a tagged one. */
	if (rx->seg.ulpdu_len < IW_DDP_TAGGED_HDR_LEN) {
		*rc = fail(rx, IW_WERR_FPDU_TOO_SHORT);
		return k;
	}
	rx->state = RX_HDR;
	rx->got = 0;
	rx->need = 0; /* set by the DDP control octet */
	return k;
}

static int parse_rdmap(struct iw_fpdu_rx *rx, unsigned op, const uint8_t *p, size_t len)
{
	struct iw_rdmap_hdr *r = &rx->seg.rdmap;
	enum iw_wire_err why = IW_WERR_NONE;
	int ret = 0;

	switch (op) {
	case IW_OP_READ_REQ:
		ret = iw_rdmap_read_req_parse(&r->u.read_req, p, len);
		why = IW_WERR_FPDU_TOO_SHORT;
		break;
	case IW_OP_TERMINATE:
		ret = iw_rdmap_term_parse(&r->u.term, &why, p, len);
		break;
	case IW_OP_ATOMIC_REQ:
		ret = iw_rdmap_atomic_req_parse(&r->u.atomic_req, &why, p, len);
		break;
	case IW_OP_ATOMIC_RESP:
		ret = iw_rdmap_atomic_resp_parse(&r->u.atomic_resp, p, len);
		why = IW_WERR_FPDU_TOO_SHORT;
		break;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		if (len == sizeof(r->u.imm))
			memcpy(r->u.imm, p, len);
		break;
	default:
		break;
	}
	if (ret < 0)
		return fail(rx, why != IW_WERR_NONE ? why : IW_WERR_RDMAP_TERM);
	return 0;
}

/* The DDP header is in: check its syntax and size the RDMAP header. */
static int ddp_done(struct iw_fpdu_rx *rx)
{
	struct iw_ddp_seg *s = &rx->seg;
	enum iw_wire_err why = IW_WERR_NONE;
	size_t extra;
	unsigned op;

	if (iw_ddp_hdr_parse(&s->ddp, &why, s->raw_hdr, rx->got) < 0)
		return fail(rx, why != IW_WERR_NONE ? why : IW_WERR_FPDU_TOO_SHORT);
	op = iw_ddp_opcode(&s->ddp);
	if (op == IW_OP_TERMINATE) {
		/* A Terminate is small: the whole ULPDU is its header. */
		extra = s->ulpdu_len - rx->got;
		if (extra > TERM_MAX)
			return fail(rx, IW_WERR_RDMAP_TERM);
	} else {
		extra = iw_rdmap_hdr_len(op);
		if (s->ulpdu_len < rx->got + extra)
			return fail(rx, IW_WERR_FPDU_TOO_SHORT);
	}
	if (rx->got + extra > sizeof(s->raw_hdr))
		return fail(rx, IW_WERR_RDMAP_OPCODE); /* never for a known opcode */
	rx->need = rx->got + (uint32_t)extra;
	return 0;
}

/* The whole header is in: decode the RDMAP part and announce the segment. */
static int hdr_done(struct iw_fpdu_rx *rx, struct iw_rx_event *ev)
{
	struct iw_ddp_seg *s = &rx->seg;
	size_t base = iw_ddp_hdr_len(&s->ddp);
	int rc = parse_rdmap(rx, iw_ddp_opcode(&s->ddp), s->raw_hdr + base, rx->got - base);

	if (rc)
		return rc;
	s->payload_len = s->ulpdu_len - s->raw_hdr_len;
	rx->payload_done = 0;
	if (s->payload_len) {
		rx->state = RX_PAYLOAD;
		rx->got = 0;
	} else {
		enter_trailer(rx);
	}
	ev->kind = IW_RX_SEG_HDR;
	ev->seg = s;
	ev->data = NULL;
	ev->len = 0;
	ev->off = 0;
	return 1;
}

/* When the rest of the FPDU's payload and pad already sit in the input (n
 * never crosses a marker), queue them behind the header so the whole FPDU
 * costs one CRC call: the fixed cost of a call is a large part of the
 * per-FPDU overhead at 4 KiB. The octets are the next stream octets
 * whether they are later fed or placed directly, so neither path feeds
 * them again. */
static void crc_read_ahead(struct iw_fpdu_rx *rx, const uint8_t *p, size_t n)
{
	size_t rest = rx->seg.payload_len + iw_mpa_pad(rx->seg.ulpdu_len);

	if (!rx->crc || n < rest)
		return;
	crc_feed(rx, p, rest);
	rx->payload_crc_done = true;
}

static size_t take_payload(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p,
			   size_t n, int *rc);

/* Header octets arrive; decide after each stage how many more are due.
 * hdr_data (iw_fpdu_rx_next_held): the SEG_HDR event also carries the
 * payload octets that follow the header in the input, as a PAYLOAD event
 * would (data, len, off 0), saving the caller a decoder call per FPDU. */
static size_t take_hdr(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p, size_t n,
		       int *rc, bool hdr_data)
{
	struct iw_ddp_seg *s = &rx->seg;
	const uint8_t ctrl = rx->got ? s->raw_hdr[0] : p[0];
	const size_t base = (ctrl & IW_DDP_T) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
	size_t k;

	/* The T bit of the first octet sizes the DDP header. */
	if (rx->got == 0) {
		if (s->ulpdu_len < base) {
			*rc = fail(rx, IW_WERR_FPDU_TOO_SHORT);
			return 0;
		}
		rx->need = (uint32_t)base;
	}
	k = min_sz(n, rx->need - rx->got);
	memcpy(s->raw_hdr + rx->got, p, k);
	crc_feed(rx, p, k);
	rx->got += (uint32_t)k;
	s->raw_hdr_len = (uint8_t)rx->got;
	if (rx->got < rx->need)
		return k;

	if (rx->got == base) {
		*rc = ddp_done(rx);
		/* Terminate always goes through its parser, even when empty. */
		if (*rc || (rx->need > rx->got))
			return k;
	}
	*rc = hdr_done(rx, ev);
	if (*rc != 1 || rx->state != RX_PAYLOAD)
		return k;
	crc_read_ahead(rx, p + k, n - k);
	if (hdr_data && n > k) {
		k += take_payload(rx, ev, p + k, n - k, rc);
		ev->kind = IW_RX_SEG_HDR;
	}
	return k;
}

/* Report len input octets at p that hold pay payload octets (markers
 * between them for a run); true when that ends the payload. */
static bool payload_event(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, enum iw_rx_kind kind,
			  const uint8_t *p, size_t len, size_t pay)
{
	if (!rx->payload_crc_done)
		crc_feed(rx, p, len);
	ev->kind = kind;
	ev->seg = &rx->seg;
	ev->data = p;
	ev->len = len;
	ev->off = rx->payload_done;
	rx->payload_done += (uint32_t)pay;
	if (rx->payload_done != rx->seg.payload_len)
		return false;
	enter_trailer(rx);
	return true;
}

/* Payload is never copied: the event points into the caller's input. */
static size_t take_payload(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p,
			   size_t n, int *rc)
{
	size_t k = min_sz(n, rx->seg.payload_len - rx->payload_done);
	uint32_t pad = iw_mpa_pad(rx->seg.ulpdu_len);

	if (payload_event(rx, ev, IW_RX_PAYLOAD, p, k, k)) {
		/* Read ahead: pad already in the input (n stops short of any
		 * marker) goes through the CRC with the payload, in one call.
		 * It is still consumed by the trailer state. */
		if (!rx->pad_crc_done && n - k >= pad) {
			crc_feed(rx, p + k, pad);
			rx->pad_crc_done = true;
		}
	}
	*rc = 1;
	return k;
}

/* The CRC field is in: record it, and whether it matches what was fed.
 * CRC off: the field is present but carries nothing (RFC 5044). */
static bool crc_holds(struct iw_fpdu_rx *rx, const uint8_t *crc_field)
{
	crc_flush(rx);
	rx->seg.crc = iw_crc32c_get_wire(crc_field);
	return !rx->crc || (rx->flags & IW_RX_SKIP_CRC) ||
	       iw_crc32c_final(rx->crc_state) == rx->seg.crc;
}

static int trailer_done(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *crc_field)
{
	struct iw_ddp_seg *s = &rx->seg;

	if (!crc_holds(rx, crc_field))
		return fail(rx, IW_WERR_FPDU_CRC);
	rx->state = RX_IDLE;
	ev->kind = IW_RX_SEG_END;
	ev->seg = s;
	ev->data = NULL;
	ev->len = 0;
	ev->off = s->payload_len;
	return 1;
}

/* Pad octets are CRC-covered, the CRC field's own octets are not. */
static size_t take_trailer(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p,
			   size_t n, int *rc)
{
	uint32_t pad = iw_mpa_pad(rx->seg.ulpdu_len);
	size_t k = min_sz(n, rx->need - rx->got);

	if (rx->got < pad && !rx->pad_crc_done)
		crc_feed(rx, p, min_sz(k, pad - rx->got));
	if (rx->got == 0 && k == rx->need) {
		/* All in the input: read the CRC field in place. */
		rx->got = rx->need;
		*rc = trailer_done(rx, ev, p + pad);
		return k;
	}
	for (size_t i = 0; i < k; i++)
		rx->trailer[rx->got + i] = p[i];
	rx->got += (uint32_t)k;
	if (rx->got == rx->need)
		*rc = trailer_done(rx, ev, rx->trailer + pad);
	return k;
}

/* Held decoding, markers off, right after an IW_RX_SEG_HDR event in ev
 * that carried the whole payload: when the trailer is in the input too
 * and the CRC holds, take it now and report the segment whole
 * (IW_RX_SEG_WHOLE). A bad CRC is left to the next call, which fails as
 * before, after the header event was handled. Returns the octets used. */
static size_t take_whole(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p,
			 size_t n)
{
	uint32_t pad = iw_mpa_pad(rx->seg.ulpdu_len);
	if (rx->state != RX_TRAILER || rx->got || n < rx->need)
		return 0;
	if (!rx->pad_crc_done)
		crc_feed(rx, p, pad);
	rx->pad_crc_done = true; /* fed: a bad CRC fails the next call */
	if (!crc_holds(rx, p + pad))
		return 0;
	rx->state = RX_IDLE;
	ev->kind = IW_RX_SEG_WHOLE;
	return rx->need;
}

/* One step in the current state over at most n octets (n never crosses a
 * marker). Returns the octets used. */
static size_t step(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p, size_t n,
		   int *rc, bool hdr_data)
{
	switch (rx->state) {
	case RX_LEN:
		return take_len(rx, p, n, rc);
	case RX_HDR:
		return take_hdr(rx, ev, p, n, rc, hdr_data);
	case RX_PAYLOAD:
		return take_payload(rx, ev, p, n, rc);
	case RX_TRAILER:
		return take_trailer(rx, ev, p, n, rc);
	default:
		*rc = fail(rx, IW_WERR_FPDU_TRUNCATED); /* unreachable */
		return 0;
	}
}

/* Held decoding, markers on, inside a payload (not at a marker): the
 * payload octets of p[0..n) up to the FPDU's payload end, across every
 * whole and valid marker followed by payload, as one IW_RX_PAYLOAD_RUN
 * event (mpa_rx.h), CRC'd in one feed. It stops short of a marker that is
 * cut or bad (the octet-wise path takes it next, and fails on a bad one).
 * 0: no marker crossed, the ordinary path applies. */
static size_t take_run(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *p, size_t n)
{
	size_t left = rx->seg.payload_len - rx->payload_done;
	size_t pos = min_sz(min_sz(n, left), iw_mpa_to_marker(rx->stream_off));
	size_t pay = pos;

	while (pay < left && pos + IW_MPA_MARKER_LEN < n &&
	       marker_ok(rx, p + pos, rx->stream_off + (uint32_t)pos)) {
		size_t k = min_sz(min_sz(IW_MARKER_GAP, left - pay), n - pos - IW_MPA_MARKER_LEN);

		pos += IW_MPA_MARKER_LEN + k;
		pay += k;
	}
	if (pay == pos)
		return 0;
	payload_event(rx, ev, IW_RX_PAYLOAD_RUN, p, pos, pay);
	return pos;
}

static int rx_next(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
		   size_t in_len, size_t *consumed, bool runs)
{
	size_t pos = 0;
	int rc = 0;

	*consumed = 0;
	if (rx->state == RX_ERROR)
		return err_code(rx->err);
	while (rc == 0 && pos < in_len) {
		size_t n = in_len - pos;

		if (rx->state == RX_IDLE)
			begin_fpdu(rx);
		if (rx->markers) {
			uint32_t phase = rx->stream_off & IW_MARKER_MASK;

			if (phase < IW_MPA_MARKER_LEN) {
				n = take_marker(rx, in + pos, n, &rc);
				pos += n;
				rx->stream_off += (uint32_t)n;
				continue;
			}
			if (runs && rx->state == RX_PAYLOAD) {
				n = take_run(rx, ev, in + pos, n);
				if (n) {
					pos += n;
					rx->stream_off += (uint32_t)n;
					rc = 1;
					break;
				}
				n = in_len - pos;
			}
			n = min_sz(n, IW_MPA_MARKER_INTERVAL - phase);
		}
		n = step(rx, ev, in + pos, n, &rc, runs);
		pos += n;
		rx->stream_off += (uint32_t)n;
		if (runs && !rx->markers && rc == 1 && ev->kind == IW_RX_SEG_HDR) {
			n = take_whole(rx, ev, in + pos, in_len - pos);
			pos += n;
			rx->stream_off += (uint32_t)n;
		}
	}
	*consumed = pos;
	return rc;
}

int iw_fpdu_rx_next_held(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
			 size_t in_len, size_t *consumed)
{
	return rx_next(rx, ev, in, in_len, consumed, true);
}

void iw_fpdu_rx_run_begin(struct iw_rx_run *r, const struct iw_fpdu_rx *rx,
			  const struct iw_rx_event *ev)
{
	r->p = ev->data;
	r->left = ev->len;
	r->off = ev->off;
	/* The run ends where the decoder stands now. */
	r->k = iw_mpa_to_marker(rx->stream_off - (uint32_t)ev->len);
}

void iw_fpdu_rx_crc_flush(struct iw_fpdu_rx *rx)
{
	crc_flush(rx);
}

IW_EXPORT int iw_fpdu_rx_next(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
			      size_t in_len, size_t *consumed)
{
	int rc = rx_next(rx, ev, in, in_len, consumed, false);

	crc_flush(rx); /* the queue must not outlive the caller's buffer */
	return rc;
}

IW_EXPORT size_t iw_fpdu_rx_direct_len(const struct iw_fpdu_rx *rx)
{
	size_t left;

	if (rx->state != RX_PAYLOAD)
		return 0;
	left = rx->seg.payload_len - rx->payload_done;
	if (rx->markers) {
		uint32_t phase = rx->stream_off & IW_MARKER_MASK;

		/* A marker is due first: it has to be fed, not placed. */
		if (phase < IW_MPA_MARKER_LEN)
			return 0;
		left = min_sz(left, IW_MPA_MARKER_INTERVAL - phase);
	}
	return left;
}

IW_EXPORT int iw_fpdu_rx_direct_done(struct iw_fpdu_rx *rx, const uint8_t *dst, size_t n)
{
	if (n > iw_fpdu_rx_direct_len(rx))
		return -EINVAL;
	if (n == 0)
		return 0;
	if (!rx->payload_crc_done) {
		crc_feed(rx, dst, n);
		crc_flush(rx);
	}
	rx->payload_done += (uint32_t)n;
	rx->stream_off += (uint32_t)n;
	if (rx->payload_done == rx->seg.payload_len)
		enter_trailer(rx);
	return 0;
}

IW_EXPORT int iw_fpdu_rx_finish(struct iw_fpdu_rx *rx)
{
	rx->flags |= IW_RX_COMPLETE;
	if (rx->state == RX_ERROR)
		return err_code(rx->err);
	if (rx->state != RX_IDLE)
		return fail(rx, IW_WERR_FPDU_TRUNCATED);
	return 0;
}
