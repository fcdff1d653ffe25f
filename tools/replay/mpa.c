/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA frames in a capture: each direction starts with the sender's Request
 * or Reply (RFC 5044 section 7.1), parsed with iw_mpa_frame_parse (lenient,
 * like the engine). The connection's FPDU settings follow from the two
 * frames by the library's rule (iw_mpa_framing: CRC if either has C;
 * markers towards a side that set M in its own frame). Options override each of them, and
 * stand in for frames a capture started too late to see.
 */
#include <errno.h>
#include <string.h>

#include "conn.h"
#include "emit.h"
#include "record.h"

/* Which frame the kept octets start with: 0 if they cannot be one. */
static enum iw_mpa_kind key_kind(const uint8_t *p, size_t n)
{
	size_t k = n < IW_MPA_KEY_LEN ? n : IW_MPA_KEY_LEN;

	if (!memcmp(p, IW_MPA_KEY_REQ, k))
		return IW_MPA_REQUEST;
	if (!memcmp(p, IW_MPA_KEY_REP, k))
		return IW_MPA_REPLY;
	return 0;
}

static void report(struct rp_stream *s, struct rp_mpa *m)
{
	struct rp_origin o;

	rp_stream_origin(s, &o, s->pend_rel);
	o.first_frame = s->nmarks ? s->marks[0].frame : o.frame;
	if (m->kind == IW_MPA_REQUEST)
		rp_conn_roles_from_mpa(s->conn, s->ep);
	rp_conn_announce(s->conn);
	rp_emit_mpa(&o, m);
}

/* A valid frame: keep it, and the FPDU stream begins right after it. */
static void found(struct rp_stream *s, struct rp_mpa *m)
{
	memcpy(s->mpa_raw, s->pend.p, m->len);
	m->raw = s->mpa_raw;
	/* A frame without private data has no pd pointer to move: offsetting
	 * NULL from the pending buffer was out of bounds (fuzz_replay_capture). */
	if (m->f.pd)
		m->f.pd = s->mpa_raw + (size_t)(m->f.pd - s->pend.p);
	s->mpa = *m;
	s->has_mpa = true;
	report(s, m);
	rp_record_mpa(s->conn->id, rp_conn_role(s->conn, s->ep), m->raw, m->len);
	rp_stream_consume(s, m->len);
	s->decided = true;
	s->fpdu_rel = s->pend_rel;
	s->off0 = 0; /* SeqStart: the first octet after the frame */
}

enum rp_mpa_scan rp_mpa_scan(struct rp_stream *s)
{
	struct rp_mpa m = {0};
	size_t used = 0;

	if (s->pend.len == 0)
		return RP_MPA_WAIT;
	m.kind = key_kind(s->pend.p, s->pend.len);
	if (!m.kind)
		return RP_MPA_NONE;
	if (s->pend.len < IW_MPA_KEY_LEN)
		return RP_MPA_WAIT;
	m.rc = iw_mpa_frame_parse(&m.f, &used, &m.err, m.kind, s->pend.p, s->pend.len, 0);
	if (m.rc == -EAGAIN)
		return RP_MPA_WAIT;
	if (m.rc) {
		/* Without a trustworthy PD_Length nothing after it can be framed. */
		m.raw = s->pend.p;
		m.len = s->pend.len < IW_MPA_FRAME_HDR_LEN ? s->pend.len : IW_MPA_FRAME_HDR_LEN;
		report(s, &m);
		s->decided = true;
		s->state = RP_ST_OFF;
		rp_buf_free(&s->pend);
		return RP_MPA_BAD;
	}
	m.len = used;
	found(s, &m);
	return RP_MPA_FOUND;
}

/* ------------------------------------------------------------ negotiation */

static const struct rp_mpa *frame_of(const struct rp_conn *c, enum rp_role r)
{
	const struct rp_stream *s = &c->st[r == RP_INITIATOR ? c->init_ep : !c->init_ep];

	return s->has_mpa ? &s->mpa : NULL;
}

static const char *source(const struct rp_mpa *req, const struct rp_mpa *rep, bool opts)
{
	if (req && rep)
		return opts ? "MPA frames and options" : "MPA frames";
	if (req || rep)
		return req ? "MPA Request only, the rest from options/defaults"
			   : "MPA Reply only, the rest from options/defaults";
	return "options";
}

bool rp_mpa_negotiate(struct rp_conn *c, bool force)
{
	const struct rp_opts *o = rp_conns_opts();
	const struct rp_mpa *req = frame_of(c, RP_INITIATOR), *rep = frame_of(c, RP_RESPONDER);
	bool opt_used = o->crc != RP_UNSET || o->markers[0] != RP_UNSET || o->markers[1] != RP_UNSET;
	struct rp_neg_info n = {0};
	bool ready = c->st[0].decided && c->st[1].decided;

	if (c->negotiated)
		return false;
	/* Nothing to settle on a connection that is not iWARP. */
	if (c->st[0].state != RP_ST_NEG && c->st[1].state != RP_ST_NEG && !req && !rep)
		return false;
	/* Options that cover the CRC let a mid-stream capture go on without
	 * waiting for the other direction. */
	if (!ready && !force && !(o->crc != RP_UNSET && !req && !rep))
		return false;
	if (!ready && !force && !(c->st[0].decided || c->st[1].decided))
		return false;
	/* The library's rule (iw_mpa_framing); options override each part. */
	struct iw_mpa_framing fr;
	iw_mpa_framing(&fr, req ? req->f.flags : 0, rep ? rep->f.flags : 0);
	n.crc = o->crc != RP_UNSET ? o->crc == RP_ON : fr.crc;
	/* markers[side]: in what that side sends, i.e. towards its peer. */
	n.markers[RP_INITIATOR] = o->markers[RP_INITIATOR] != RP_UNSET
					  ? o->markers[RP_INITIATOR] == RP_ON
					  : fr.markers_to_rep;
	n.markers[RP_RESPONDER] = o->markers[RP_RESPONDER] != RP_UNSET
					  ? o->markers[RP_RESPONDER] == RP_ON
					  : fr.markers_to_req;
	n.rejected = rep && (rep->f.flags & IW_MPA_FLAG_R);
	n.source = source(req, rep, opt_used);
	c->negotiated = true;
	c->crc = n.crc;
	c->markers[c->init_ep] = n.markers[RP_INITIATOR];
	c->markers[!c->init_ep] = n.markers[RP_RESPONDER];
	c->rejected = n.rejected;
	rp_conn_announce(c);
	rp_emit_neg(c->id, &n);
	rp_record_neg(c->id, n.crc, n.markers);
	return true;
}
