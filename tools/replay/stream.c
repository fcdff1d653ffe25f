/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One direction of a connection, from reassembled octets to reports: MPA
 * frame first, FPDUs once the connection's CRC and markers are settled.
 * Octets that arrive before that are kept with the frame they came in, so
 * that every FPDU is still reported with its own frame numbers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "emit.h"
#include "record.h"

/* Kept octets beyond this force the negotiation with what is known. */
#define PEND_MAX ((size_t)16 << 20)

void rp_stream_init(struct rp_stream *s, struct rp_conn *c, int ep)
{
	memset(s, 0, sizeof(*s));
	s->conn = c;
	s->ep = ep;
	s->state = RP_ST_MPA;
	rp_reasm_init(&s->ra, &rp_stream_reasm_ops, s);
}

/* ------------------------------------------------------------ decoder hooks */

static void on_start(void *ctx)
{
	struct rp_stream *s = ctx;
	const struct rp_stream *other = &s->conn->st[!s->ep];

	s->other_msgs = other->dec_on ? other->dec.msgs : 0;
}

static void on_fpdu(void *ctx, const struct rp_fpdu *f, uint64_t first_frame,
		    const struct rp_feed_meta *m)
{
	struct rp_stream *s = ctx;
	struct rp_origin o;

	rp_stream_origin_off(s, &o, f->stream_off);
	o.frame = m->frame;
	o.first_frame = first_frame;
	o.ts_ns = m->ts_ns;
	rp_conn_announce(s->conn);
	rp_emit_fpdu(&o, f);
	rp_record_fpdu(s->conn->id, rp_conn_role(s->conn, s->ep), f, m->frame, m->ts_ns,
		       s->other_msgs);
}

static void on_error(void *ctx, uint32_t off, enum iw_wire_err err, const struct rp_feed_meta *m)
{
	struct rp_stream *s = ctx;
	struct rp_origin o;
	char what[256];

	rp_stream_origin_off(s, &o, off);
	o.frame = m->frame;
	o.ts_ns = m->ts_ns;
	snprintf(what, sizeof(what), "%s: FPDU framing lost, decoding resumes at the next segment "
		 "that starts an FPDU", iw_wire_err_str(err));
	rp_conn_announce(s->conn);
	rp_emit_error(&o, true, off, err, what);
}

/* An FPDU that will never be complete. A FIN right after it is the
 * sender's fault; a gap or the end of the capture is the capture's. */
static void on_lost(void *ctx, uint32_t off, size_t have, bool end)
{
	struct rp_stream *s = ctx;
	struct rp_origin o;
	char what[200];

	rp_stream_origin_off(s, &o, off);
	rp_emit_stats()->lost++;
	rp_conn_announce(s->conn);
	if (end && s->ra.fin && s->ra.next == s->ra.fin_rel) {
		snprintf(what, sizeof(what), "%s: the sender closed (FIN) %zu octets into an FPDU",
			 iw_wire_err_str(IW_WERR_FPDU_TRUNCATED), have);
		rp_emit_error(&o, true, off, IW_WERR_FPDU_TRUNCATED, what);
		return;
	}
	rp_emit_note(&o, "%s inside an FPDU at stream offset %" PRIu32 ": its %zu octets seen are "
		     "not decoded", end ? "capture ends" : "gap", off, have);
}

static const struct rp_fpdu_dec_ops dec_ops = {
	.start = on_start, .fpdu = on_fpdu, .error = on_error, .lost = on_lost,
};

/* ------------------------------------------------------------ kept octets */

static void keep(struct rp_stream *s, const struct rp_chunk *c)
{
	if (s->pend.len == 0) {
		s->pend_rel = c->rel;
		s->nmarks = 0;
	}
	if (s->nmarks == s->marks_cap) {
		s->marks_cap = s->marks_cap ? 2 * s->marks_cap : 16;
		s->marks = rp_xrealloc(s->marks, s->marks_cap * sizeof(*s->marks));
	}
	s->marks[s->nmarks++] = (struct rp_pend_mark){s->pend.len, c->frame, c->ts_ns, c->seg_start};
	rp_buf_append(&s->pend, c->data, c->len);
}

/* Hand the kept octets to the decoder, each piece with its frame. */
static void flush_kept(struct rp_stream *s)
{
	for (size_t i = 0; i < s->nmarks; i++) {
		size_t from = s->marks[i].off;
		size_t to = i + 1 < s->nmarks ? s->marks[i + 1].off : s->pend.len;
		struct rp_feed_meta m = {s->marks[i].frame, s->marks[i].ts_ns, s->marks[i].seg_start};

		if (to > from)
			rp_fpdu_dec_feed(&s->dec, s->pend.p + from, to - from, &m);
	}
	s->pend.len = 0;
	s->nmarks = 0;
}

void rp_stream_start_fpdus(struct rp_stream *s, uint64_t rel, uint32_t off)
{
	const struct rp_opts *o = rp_conns_opts();
	struct rp_conn *c = s->conn;

	s->fpdu_rel = rel;
	s->off0 = off;
	rp_fpdu_dec_init(&s->dec, c->crc, c->markers[s->ep], o->siw[rp_conn_role(c, s->ep)], off,
			 &dec_ops, s);
	s->dec_on = true;
	s->state = RP_ST_FPDU;
	flush_kept(s);
}

/* CRC and markers settled now (the call that settles them starts every
 * direction waiting for them). */
void rp_stream_negotiate(struct rp_conn *c, bool force)
{
	if (!rp_mpa_negotiate(c, force))
		return;
	for (int i = 0; i < 2; i++)
		if (c->st[i].state == RP_ST_NEG)
			rp_stream_start_fpdus(&c->st[i], c->st[i].fpdu_rel, c->st[i].off0);
}

/* The direction knows where its FPDUs start: decode them at once if the
 * connection's settings are known, else wait for the negotiation. */
static void await_fpdus(struct rp_stream *s)
{
	s->state = RP_ST_NEG;
	if (s->conn->negotiated)
		rp_stream_start_fpdus(s, s->fpdu_rel, s->off0);
	else
		rp_stream_negotiate(s->conn, false);
}

void rp_stream_not_mpa(struct rp_stream *s, uint64_t rel)
{
	const struct rp_opts *o = rp_conns_opts();
	enum rp_role role = rp_conn_role(s->conn, s->ep);
	struct rp_origin org;

	s->decided = true;
	if (o->crc == RP_UNSET) {
		/* With a SYN seen this is just another TCP connection; without
		 * one it may be iWARP picked up mid-stream. */
		if (!s->conn->roles_known && !s->conn->st[!s->ep].decided) {
			rp_stream_origin(s, &org, rel);
			rp_emit_note(&org, "connection %u: no MPA frame at the start of the stream "
				     "(capture started mid-connection?); not decoded: give --crc on|off "
				     "(and --markers, --stream-offset) to decode it",
				     s->conn->id);
		}
		s->state = RP_ST_OFF;
		rp_buf_free(&s->pend);
		return;
	}
	s->fpdu_rel = rel;
	s->off0 = o->stream_off_set[role] ? o->stream_off[role] : 0;
	await_fpdus(s);
}

/* Look for the MPA frame in the kept octets. */
static void scan(struct rp_stream *s)
{
	switch (rp_mpa_scan(s)) {
	case RP_MPA_NONE:
		rp_stream_not_mpa(s, s->pend_rel);
		break;
	case RP_MPA_FOUND:
		await_fpdus(s);
		break;
	case RP_MPA_WAIT:
	case RP_MPA_BAD:
		break;
	}
}

/* ------------------------------------------------------------ reassembly */

static void on_data(void *ctx, const struct rp_chunk *c)
{
	struct rp_stream *s = ctx;
	struct rp_feed_meta m = {c->frame, c->ts_ns, c->seg_start};

	s->last_frame = c->frame;
	s->last_ts = c->ts_ns;
	switch (s->state) {
	case RP_ST_MPA:
		keep(s, c);
		scan(s);
		break;
	case RP_ST_NEG:
		keep(s, c);
		if (s->pend.len > PEND_MAX)
			rp_stream_negotiate(s->conn, true);
		break;
	case RP_ST_FPDU:
		rp_fpdu_dec_feed(&s->dec, c->data, c->len, &m);
		break;
	case RP_ST_OFF:
		break;
	}
}

static void on_gap(void *ctx, uint64_t from, uint64_t to, uint64_t frame)
{
	struct rp_stream *s = ctx;
	struct rp_origin o;

	if (s->state == RP_ST_OFF && s->conn->announced == false)
		return; /* not iWARP: nobody cares */
	rp_stream_origin(s, &o, from);
	if (frame)
		o.frame = frame;
	rp_conn_announce(s->conn);
	rp_emit_gap(&o, rp_reasm_seq(&s->ra, to), to - from);
	if (s->state == RP_ST_MPA) {
		rp_emit_note(&o, "the MPA frame is incomplete before the gap");
		rp_buf_free(&s->pend);
		s->nmarks = 0;
		rp_stream_not_mpa(s, to);
		return;
	}
	if (s->state == RP_ST_NEG)
		rp_stream_negotiate(s->conn, true);
	if (s->state == RP_ST_FPDU) {
		rp_fpdu_dec_gap(&s->dec, s->off0 + (uint32_t)(to - s->fpdu_rel));
		rp_emit_note(&o, "FPDU decoding resumes at the next segment that starts an FPDU");
	}
}

const struct rp_reasm_ops rp_stream_reasm_ops = {.deliver = on_data, .gap = on_gap};

/* ------------------------------------------------------------ the end */

static bool key_prefix(const uint8_t *p, size_t n)
{
	if (n > IW_MPA_KEY_LEN)
		n = IW_MPA_KEY_LEN;
	return !memcmp(p, IW_MPA_KEY_REQ, n) || !memcmp(p, IW_MPA_KEY_REP, n);
}

void rp_stream_settle(struct rp_stream *s)
{
	struct rp_origin o;

	if (s->state != RP_ST_MPA || s->pend.len == 0)
		return;
	if (key_prefix(s->pend.p, s->pend.len)) {
		rp_stream_origin(s, &o, s->pend_rel);
		rp_conn_announce(s->conn);
		rp_emit_note(&o, "capture ends inside an MPA frame (%zu octets seen)", s->pend.len);
		s->state = RP_ST_OFF;
		return;
	}
	rp_stream_not_mpa(s, s->pend_rel);
}

void rp_stream_finish(struct rp_stream *s)
{
	if (s->dec_on)
		rp_fpdu_dec_finish(&s->dec);
}

void rp_stream_free(struct rp_stream *s)
{
	if (s->dec_on)
		rp_fpdu_dec_free(&s->dec);
	s->dec_on = false;
	rp_buf_free(&s->pend);
	free(s->marks);
	s->marks = NULL;
}
