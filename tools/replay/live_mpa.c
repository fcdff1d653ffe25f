/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fresh MPA exchange for a live replay. Our frame is the recorded one of
 * the side we play (rev, flags, RFC 6581 block, private data), changed by
 * the overrides; without a recorded frame it is a plain rev 1 frame with
 * CRC. The live outcome (the library's rule, iw_mpa_framing) frames
 * everything we send and decodes everything we get.
 */
#include <errno.h>
#include <string.h>

#include "emit.h"
#include "replay.h"

static enum iw_mpa_kind kind_of(enum rp_role r)
{
	return r == RP_INITIATOR ? IW_MPA_REQUEST : IW_MPA_REPLY;
}

static void make_enhanced(struct iw_mpa_frame *f)
{
	if (iw_mpa_frame_enhanced(f))
		return;
	f->rev = 2;
	f->flags |= IW_MPA_FLAG_ENHANCED;
	f->ird = f->ord = 1;
}

/* The recorded frame, or a default one. */
static void recorded(const struct rp_session *s, struct iw_mpa_frame *f)
{
	const struct rp_record *r = s->rec;
	size_t used;
	enum iw_wire_err why;

	memset(f, 0, sizeof(*f));
	if (r->has_mpa[s->role] && iw_mpa_frame_parse(f, &used, &why, kind_of(s->role),
						       r->mpa[s->role], r->mpa_len[s->role], 0) == 0)
		return;
	memset(f, 0, sizeof(*f));
	f->kind = kind_of(s->role);
	f->rev = 1;
	f->flags = IW_MPA_FLAG_C;
}

static void overrides(const struct rp_session *s, struct iw_mpa_frame *f)
{
	const struct rp_opts *o = s->o;

	if (o->mpa_rev == 1) {
		f->rev = 1;
		f->flags &= (uint8_t)~IW_MPA_FLAG_ENHANCED;
	} else if (o->mpa_rev == 2) {
		make_enhanced(f);
	}
	if (o->ird >= 0 || o->ord >= 0)
		make_enhanced(f);
	if (o->ird >= 0)
		f->ird = (uint16_t)o->ird;
	if (o->ord >= 0)
		f->ord = (uint16_t)o->ord;
	if (o->rtr >= 0) {
		make_enhanced(f);
		f->p2p = o->rtr != 0;
		f->rtr = (uint8_t)o->rtr;
	}
	if (o->pd_len >= 0) {
		f->pd = o->pd;
		f->pd_len = (uint16_t)o->pd_len;
	}
	if (o->crc != RP_UNSET)
		f->flags = (uint8_t)((f->flags & ~IW_MPA_FLAG_C) | (o->crc == RP_ON ? IW_MPA_FLAG_C : 0));
	/* Our M asks the peer for markers on what it sends. */
	if (o->markers[s->peer_role] != RP_UNSET)
		f->flags = (uint8_t)((f->flags & ~IW_MPA_FLAG_M) |
				     (o->markers[s->peer_role] == RP_ON ? IW_MPA_FLAG_M : 0));
}

static int build(struct rp_session *s)
{
	struct iw_mpa_frame f;
	int n;

	recorded(s, &f);
	overrides(s, &f);
	n = iw_mpa_frame_build(s->mine, sizeof(s->mine), &f, 0);
	if (n < 0) {
		rp_emit_note(NULL, "cannot build our MPA %s: %s", s->role ? "Reply" : "Request",
			     strerror(-n));
		return RP_EXIT_USAGE;
	}
	s->mine_len = (size_t)n;
	return 0;
}

static void show(const struct rp_session *s, const char *dir, const uint8_t *raw, size_t len,
		 enum iw_mpa_kind kind)
{
	struct rp_mpa m = {.kind = kind, .raw = raw, .len = len};
	struct rp_origin o;
	size_t used;

	m.rc = iw_mpa_frame_parse(&m.f, &used, &m.err, kind, raw, len, IW_MPA_PARSE_COMPLETE);
	rp_live_origin(s, &o, dir);
	rp_emit_mpa(&o, &m);
}

static bool have_frame(const struct rp_session *s, const void *arg)
{
	struct iw_mpa_frame f;
	size_t used;
	enum iw_wire_err why;

	return iw_mpa_frame_parse(&f, &used, &why, *(const enum iw_mpa_kind *)arg, s->in.p,
				  s->in.len, 0) != -EAGAIN;
}

/* Wait for the peer's frame; its length, or -1 (reported). */
static int receive(struct rp_session *s, struct iw_mpa_frame *f)
{
	enum iw_mpa_kind kind = kind_of(s->peer_role);
	uint64_t deadline = rp_now_ns() + (uint64_t)s->o->timeout_ms * 1000000u;
	enum iw_wire_err why;
	size_t used = 0;
	int rc = rp_live_wait(s, have_frame, &kind, deadline);

	if (rc != 1) {
		rp_emit_note(NULL, "no MPA %s from the peer (%s)", s->peer_role ? "Reply" : "Request",
			     rc == 0 ? "timed out" : "connection closed");
		return -1;
	}
	rc = iw_mpa_frame_parse(f, &used, &why, kind, s->in.p, s->in.len, 0);
	show(s, "rx", s->in.p, rc ? (s->in.len < 20 ? s->in.len : 20) : used, kind);
	if (rc)
		return -1;
	return (int)used;
}

static void settle(struct rp_session *s, const struct iw_mpa_frame *theirs)
{
	uint8_t my_flags = s->mine[IW_MPA_KEY_LEN];

	bool init = s->role == RP_INITIATOR;
	struct iw_mpa_framing fr;
	iw_mpa_framing(&fr, init ? my_flags : theirs->flags, init ? theirs->flags : my_flags);
	s->crc = fr.crc;
	s->markers_tx = init ? fr.markers_to_rep : fr.markers_to_req;
	s->markers_rx = init ? fr.markers_to_req : fr.markers_to_rep;
	rp_emit_note(NULL, "live connection: CRC %s, markers tx %s, rx %s", s->crc ? "on" : "off",
		     s->markers_tx ? "on" : "off", s->markers_rx ? "on" : "off");
}

int rp_live_mpa(struct rp_session *s)
{
	struct iw_mpa_frame theirs;
	int used, rc = build(s);

	if (rc)
		return rc;
	if (s->role == RP_INITIATOR) {
		show(s, "tx", s->mine, s->mine_len, IW_MPA_REQUEST);
		if (rp_live_write(s, s->mine, s->mine_len))
			return RP_EXIT_NET;
	}
	used = receive(s, &theirs);
	if (used < 0)
		return RP_EXIT_NET;
	settle(s, &theirs);
	/* The frame's private data points into s->in: done with it now. */
	rp_buf_consume(&s->in, (size_t)used);
	if (s->role == RP_RESPONDER) {
		show(s, "tx", s->mine, s->mine_len, IW_MPA_REPLY);
		if (rp_live_write(s, s->mine, s->mine_len))
			return RP_EXIT_NET;
	}
	if (s->role == RP_INITIATOR && (theirs.flags & IW_MPA_FLAG_R)) {
		rp_emit_note(NULL, "the peer rejected the connection");
		return RP_EXIT_NET;
	}
	return 0;
}
