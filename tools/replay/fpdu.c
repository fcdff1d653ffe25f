/* SPDX-License-Identifier: BSD-2-Clause */
#include "fpdu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ulpdu.h"
#include "util.h"

enum { DEC_FEED, DEC_SKIP, DEC_LOST };

#define MARKER_MASK (IW_MPA_MARKER_INTERVAL - 1)

/* ------------------------------------------------------------ one FPDU */

/* Copy raw to plain without the markers, recording each one. */
static size_t strip_markers(struct rp_fpdu *f, const uint8_t *raw, size_t len, uint32_t off,
			    bool markers, uint8_t *plain)
{
	size_t i = 0, n = 0;

	f->markers_ok = true;
	while (i < len) {
		uint32_t to_marker = (IW_MPA_MARKER_INTERVAL - ((off + i) & MARKER_MASK)) & MARKER_MASK;
		size_t run = markers ? to_marker : len - i;

		if (markers && run == 0 && i + IW_MPA_MARKER_LEN <= len) {
			uint16_t ptr = (uint16_t)rp_get_be(raw + i + 2, 2);

			if (f->nmarkers < IW_FPDU_MARKERS_MAX)
				f->fpduptr[f->nmarkers++] = ptr;
			/* FPDUPTR points back at the FPDU's first octet. */
			if (rp_get_be(raw + i, 2) != 0 || ptr != i)
				f->markers_ok = false;
			i += IW_MPA_MARKER_LEN;
			continue;
		}
		if (run == 0 || run > len - i)
			run = len - i;
		memcpy(plain + n, raw + i, run);
		n += run;
		i += run;
	}
	return n;
}

void rp_fpdu_describe(struct rp_fpdu *f, const uint8_t *raw, size_t len, uint32_t stream_off,
		      bool crc, bool markers, bool siw, uint8_t *plain)
{
	size_t n, avail;

	memset(f, 0, sizeof(*f));
	f->stream_off = stream_off;
	f->wire_len = len;
	f->crc_on = crc;
	f->sent_len = len;
	n = strip_markers(f, raw, len, stream_off, markers, plain);
	if (n < 2 + IW_MPA_CRC_LEN) {
		f->u.err = IW_WERR_FPDU_TOO_SHORT;
		f->ulpdu = plain;
		return;
	}
	f->ulpdu_len = (uint16_t)rp_get_be(plain, 2);
	f->pad = (uint8_t)iw_mpa_pad(f->ulpdu_len);
	f->ulpdu = plain + 2;
	f->crc_wire = (uint32_t)plain[n - 4] | (uint32_t)plain[n - 3] << 8 |
		      (uint32_t)plain[n - 2] << 16 | (uint32_t)plain[n - 1] << 24;
	/* The CRC covers every octet before its field, markers included. */
	f->crc_calc = iw_crc32c(raw, len - IW_MPA_CRC_LEN);
	f->crc_ok = !crc || f->crc_calc == f->crc_wire;
	avail = n - 2 - IW_MPA_CRC_LEN;
	rp_ulpdu_decode(&f->u, f->ulpdu, avail < f->ulpdu_len ? avail : f->ulpdu_len, siw);
}

/* ------------------------------------------------------------ the stream */

void rp_fpdu_dec_init(struct rp_fpdu_dec *d, bool crc, bool markers, bool siw, uint32_t stream_off,
		      const struct rp_fpdu_dec_ops *ops, void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->crc = crc;
	d->markers = markers;
	d->siw = siw;
	d->pos = stream_off;
	d->ops = ops;
	d->ctx = ctx;
	/* The CRC is checked here, on the kept octets: the decoder must not
	 * stop at a bad one. */
	iw_fpdu_rx_init(&d->rx, crc, markers, stream_off, 0, IW_RX_SKIP_CRC);
	d->state = DEC_FEED;
}

void rp_fpdu_dec_free(struct rp_fpdu_dec *d)
{
	rp_buf_free(&d->raw);
	free(d->plain);
	d->plain = NULL;
	d->plain_cap = 0;
}

static void raw_add(struct rp_fpdu_dec *d, const uint8_t *p, size_t n, const struct rp_feed_meta *m)
{
	if (n == 0)
		return;
	if (d->raw.len == 0) {
		d->raw_off = d->pos;
		d->first_frame = m->frame;
		if (d->ops->start)
			d->ops->start(d->ctx);
	}
	/* The decoder never lets an FPDU grow past its largest size. */
	if (d->raw.len + n > RP_FPDU_WIRE_MAX)
		n = RP_FPDU_WIRE_MAX - d->raw.len;
	rp_buf_append(&d->raw, p, n);
}

/* Start the library decoder afresh at the current position. */
static void restart(struct rp_fpdu_dec *d)
{
	iw_fpdu_rx_init(&d->rx, d->crc, d->markers, d->pos, 0, IW_RX_SKIP_CRC);
	d->raw.len = 0;
	d->state = DEC_FEED;
}

static void complete(struct rp_fpdu_dec *d, enum iw_wire_err err, const struct rp_feed_meta *m)
{
	struct rp_fpdu f;

	if (d->plain_cap < d->raw.len) {
		d->plain_cap = d->raw.cap;
		free(d->plain);
		d->plain = rp_xmalloc(d->plain_cap);
	}
	rp_fpdu_describe(&f, d->raw.p, d->raw.len, d->raw_off, d->crc, d->markers, d->siw, d->plain);
	/* A siw Terminate fails the RFC parse but reads well the siw way. */
	if (err == IW_WERR_RDMAP_TERM && f.u.term_siw && f.u.err == IW_WERR_NONE)
		err = IW_WERR_NONE;
	f.frame_err = err;
	f.n = ++d->n;
	if (f.u.ddp_in && iw_ddp_last(&f.u.ddp))
		d->msgs++;
	d->resync = false;
	d->ops->fpdu(d->ctx, &f, d->first_frame, m);
	d->raw.len = 0;
}

/* ULPDU_Length of the FPDU in raw, past a leading marker. */
static bool raw_ulpdu_len(const struct rp_fpdu_dec *d, uint16_t *len)
{
	size_t at = (d->markers && (d->raw_off & MARKER_MASK) == 0) ? IW_MPA_MARKER_LEN : 0;

	if (d->raw.len < at + 2)
		return false;
	*len = (uint16_t)rp_get_be(d->raw.p + at, 2);
	return true;
}

static void decoder_failed(struct rp_fpdu_dec *d, const struct rp_feed_meta *m)
{
	enum iw_wire_err err = d->rx.err;
	uint16_t len;

	if (d->resync) { /* that segment did not start an FPDU after all */
		d->raw.len = 0;
		d->state = DEC_LOST;
		return;
	}
	if (err == IW_WERR_FPDU_MARKER || !raw_ulpdu_len(d, &len)) {
		d->ops->error(d->ctx, d->rx.err_off, err, m);
		d->raw.len = 0;
		d->state = DEC_LOST;
		return;
	}
	/* The header is bad but the length is there: step over the FPDU. */
	d->skip_end = d->raw_off + (uint32_t)iw_fpdu_wire_len(d->raw_off, len, d->markers);
	d->skip_err = err;
	d->state = DEC_SKIP;
}

/* Feed the library decoder; returns the octets used. */
static size_t feed_decoder(struct rp_fpdu_dec *d, const uint8_t *p, size_t n,
			   const struct rp_feed_meta *m)
{
	struct iw_rx_event ev;
	size_t used = 0;
	int rc = iw_fpdu_rx_next(&d->rx, &ev, p, n, &used);

	raw_add(d, p, used, m);
	d->pos += (uint32_t)used;
	if (rc == 1 && ev.kind == IW_RX_SEG_END)
		complete(d, IW_WERR_NONE, m);
	else if (rc < 0)
		decoder_failed(d, m);
	return used;
}

static size_t skip_bad(struct rp_fpdu_dec *d, const uint8_t *p, size_t n,
		       const struct rp_feed_meta *m)
{
	size_t k = d->skip_end - d->pos;

	if (k > n)
		k = n;
	raw_add(d, p, k, m);
	d->pos += (uint32_t)k;
	if (d->pos == d->skip_end) {
		complete(d, d->skip_err, m);
		restart(d);
	}
	return k;
}

void rp_fpdu_dec_feed(struct rp_fpdu_dec *d, const uint8_t *p, size_t n,
		      const struct rp_feed_meta *m)
{
	bool fresh = m->seg_start;

	while (n) {
		size_t k;

		if (d->state == DEC_LOST) {
			/* Only a segment's first octet may begin an FPDU. */
			if (!fresh) {
				d->pos += (uint32_t)n;
				return;
			}
			restart(d);
			d->resync = true;
			fresh = false; /* one attempt per segment */
		}
		k = d->state == DEC_SKIP ? skip_bad(d, p, n, m) : feed_decoder(d, p, n, m);
		if (k == 0 && d->state == DEC_FEED && d->rx.err == IW_WERR_NONE)
			break; /* cannot happen: the decoder takes all it is given */
		p += k;
		n -= k;
		if (k)
			fresh = false;
	}
}

void rp_fpdu_dec_gap(struct rp_fpdu_dec *d, uint32_t next)
{
	if (d->raw.len && !d->resync)
		d->ops->lost(d->ctx, d->raw_off, d->raw.len, false);
	d->raw.len = 0;
	d->pos = next;
	d->state = DEC_LOST;
}

size_t rp_fpdu_dec_finish(struct rp_fpdu_dec *d)
{
	size_t have = d->resync ? 0 : d->raw.len;

	if (have)
		d->ops->lost(d->ctx, d->raw_off, have, true);
	d->raw.len = 0;
	return have;
}
