/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Group 2: MPA with the peer as initiator (RFC 5044 section 7.1, RFC
 * 6581). The peer connects to us (listen.c) and sends its Request; we
 * record what it offers and answer with one Reply per case, legal or not.
 * After a legal Reply the peer must proceed: the RTR of the type we chose
 * (RFC 6581 7.1), then its first message, framed as the handshake agreed
 * (CRC, markers towards us). After an illegal one it must close, with the
 * TERMINATE RFC 6581 prescribes where there is one; after a Reject it must
 * close without sending anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conform.h"

enum want { W_PROCEED, W_CLOSE, W_TERM, W_REJECTED, W_PROCEED_OR_TERM };
enum rtr_how { RTR_BEST, RTR_ONLY, RTR_UNOFFERED, RTR_NONE };

/* Fields are 0 for "the natural answer to the offer", else V(value). */
#define V(x) ((x) + 1)
struct g2 {
	enum want want;
	uint16_t term; /* W_TERM, W_PROCEED_OR_TERM */
	int rev, crc, ird, ord, pd_len, trunc;
	bool markers, reserved, reject, bad_key, no_p2p, no_enhanced, ord_over;
	bool fin_after, stall, needs_enh, needs_rev1, show_offer;
	enum rtr_how rtr_how;
	uint8_t rtr; /* RTR_ONLY */
	size_t seg;
};

/* The peer's Request, kept for the evidence and the decisions. */
struct offer {
	struct iw_mpa_frame f;
	bool enh, p2p;
};

/* "rev 2, M 0, C 1, enhanced, P2P, RTR WRITE READ, IRD 1 ORD 1, PD 0" */
static void offer_str(const struct offer *o, char *s, size_t cap)
{
	const struct iw_mpa_frame *f = &o->f;

	snprintf(s, cap, "rev %u, M %u, C %u%s, %s, %s, RTR%s%s%s%s, IRD %u ORD %u, PD %u", f->rev,
		 !!(f->flags & IW_MPA_FLAG_M), !!(f->flags & IW_MPA_FLAG_C),
		 (f->flags & IW_MPA_FLAG_RES) ? ", reserved bits" : "",
		 o->enh ? "enhanced" : "not enhanced", o->p2p ? "P2P" : "no P2P",
		 f->rtr ? "" : " none", (f->rtr & IW_RTR_SEND) ? " SEND" : "",
		 (f->rtr & IW_RTR_WRITE) ? " WRITE" : "", (f->rtr & IW_RTR_READ) ? " READ" : "",
		 f->ird, f->ord, f->pd_len);
}

static void log_offer(struct cf_ctx *c, const struct offer *o)
{
	char s[128];

	offer_str(o, s, sizeof(s));
	cf_log_add(&c->r->log, "the peer offers: %s (flags 0x%02x)", s, o->f.flags);
}

/* 2.1 reports the offer itself: what an engineer asks first. */
static void report_offer(struct cf_ctx *c, const struct offer *o)
{
	char s[128], d[sizeof(c->r->detail)];

	offer_str(o, s, sizeof(s));
	snprintf(d, sizeof(d), "offer: %s; %.100s", s, c->r->detail);
	memcpy(c->r->detail, d, sizeof(d));
}

static uint8_t pick(uint8_t set, const uint8_t *order)
{
	for (; *order; order++)
		if (set & *order)
			return *order;
	return 0;
}

/* The RTR type our Reply names (0: none); a reason to skip in *why. */
static uint8_t choose_rtr(const struct g2 *a, const struct offer *o, const char **why)
{
	static const uint8_t best[] = {IW_RTR_WRITE, IW_RTR_READ, IW_RTR_SEND, 0};
	static const uint8_t odd[] = {IW_RTR_SEND, IW_RTR_READ, IW_RTR_WRITE, 0};
	uint8_t all = IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ;

	if (!o->p2p)
		return 0;
	switch (a->rtr_how) {
	case RTR_ONLY:
		if (!(o->f.rtr & a->rtr))
			*why = "the peer does not offer this RTR type";
		return a->rtr;
	case RTR_UNOFFERED:
		if ((o->f.rtr & all) == all)
			*why = "the peer offers every RTR type";
		return pick((uint8_t)(all & ~o->f.rtr), odd);
	case RTR_NONE: return 0;
	default: return pick(o->f.rtr, best);
	}
}

static const char *not_applicable(const struct g2 *a, const struct offer *o)
{
	if (a->needs_enh && !o->enh)
		return "the peer's Request is not enhanced (RFC 6581)";
	if ((a->rtr_how != RTR_BEST || a->no_p2p) && !o->p2p)
		return "the peer's Request is not enhanced with P2P (RFC 6581 A)";
	if (a->needs_rev1 && o->f.rev != 1)
		return "the peer's Request is not revision 1";
	return NULL;
}

static uint16_t min16(uint16_t x, uint16_t y)
{
	return x < y ? x : y;
}

/* Our Reply, as a Request-shaped frame with the Reply key. */
static void make_reply(const struct g2 *a, const struct offer *o, uint8_t rtr, struct cf_req *q)
{
	cf_req_default(q);
	q->key = a->bad_key ? "MPA ID Rep Fraxx" : IW_MPA_KEY_REP;
	q->rev = a->rev ? (uint8_t)(a->rev - 1) : o->f.rev;
	q->enhanced = o->enh && q->rev == 2 && !a->no_enhanced;
	q->flags = (uint8_t)((o->f.flags & IW_MPA_FLAG_C) | (q->enhanced ? IW_MPA_FLAG_ENHANCED : 0));
	if (a->crc)
		q->flags = (uint8_t)((q->flags & ~IW_MPA_FLAG_C) | (a->crc == V(1) ? IW_MPA_FLAG_C : 0));
	q->flags |= (uint8_t)((a->markers ? IW_MPA_FLAG_M : 0) | (a->reserved ? IW_MPA_FLAG_RES : 0) |
			      (a->reject ? IW_MPA_FLAG_R : 0));
	q->p2p = o->p2p && !a->no_p2p && q->enhanced;
	q->rtr = q->p2p ? rtr : 0;
	q->ird = a->ird ? (uint16_t)(a->ird - 1) : o->f.ord;
	q->ord = a->ord ? (uint16_t)(a->ord - 1) : min16(1, o->f.ird);
	if (!a->ord_over && o->f.ird != IW_MPA_IRD_ORD_MAX)
		q->ord = min16(q->ord, o->f.ird);
	q->pd_len = a->pd_len ? (uint16_t)(a->pd_len - 1) : q->enhanced ? IW_MPA_6581_LEN : 0;
	q->trunc = a->trunc - 1;
	q->seg = a->seg;
}

static int send_reply(struct cf_conn *k, const struct cf_req *q, bool fin)
{
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + 1024];
	size_t n = cf_req_build(q, buf, sizeof(buf));

	if (q->trunc >= 0 && (size_t)q->trunc < n)
		n = (size_t)q->trunc;
	if (n && cf_send(k, buf, n, q->seg))
		return -1;
	if (!n)
		cf_log_add(&k->c->r->log, "no Reply sent");
	if (fin)
		shutdown(k->fd, SHUT_WR);
	return 0;
}

/* The framing the handshake agreed (RFC 5044 7.1.2), from our side. */
static void set_framing(struct cf_conn *k, const struct offer *o, const struct cf_req *q)
{
	struct iw_mpa_framing fr;

	iw_mpa_framing(&fr, o->f.flags, q->flags);
	k->crc = fr.crc;
	k->markers_tx = fr.markers_to_req;
	k->markers_rx = fr.markers_to_rep;
	iw_fpdu_tx_init(&k->tx, k->crc, k->markers_tx, 0);
	iw_fpdu_rx_init(&k->rx, k->crc, k->markers_rx, 0, 0, 0);
}

static void term_obs(char *obs, size_t cap, const struct iw_terminate *t, bool closed)
{
	snprintf(obs, cap, "term %02x %02x %02x, %s", t->term >> 8, t->term & 0xFF, t->hdrct,
		 closed ? "closed" : "open");
}

/* The RTR must be the one we chose (RFC 6581 7.1); a READ RTR is answered
 * with a zero-length Read Response. NULL or what was wrong. */
static const char *take_rtr(struct cf_conn *k, struct cf_seg *g, uint8_t rtr)
{
	unsigned op = iw_ddp_opcode(&g->s.ddp), want = rtr == IW_RTR_WRITE  ? IW_OP_WRITE
						       : rtr == IW_RTR_READ ? IW_OP_READ_REQ
									    : IW_OP_SEND;
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t hl;

	if (op != want)
		return "the first FPDU is not the RTR we chose";
	if (g->pl_len || (op == IW_OP_READ_REQ && g->s.rdmap.u.read_req.read_size))
		return "the RTR is not zero-length";
	if (op != IW_OP_READ_REQ)
		return NULL;
	hl = cf_hdr_tagged(h, IW_OP_READ_RESP, g->s.rdmap.u.read_req.sink_stag,
			   g->s.rdmap.u.read_req.sink_to, true);
	return cf_fpdu_send(k, h, hl, NULL, 0, 0, false) ? "cannot answer the READ RTR" : NULL;
}

/* After a legal Reply: the RTR (if any), then the application's first
 * message (an rping client advertises its buffer by Send). */
static void judge_proceed(struct cf_ctx *c, struct cf_conn *k, uint8_t rtr, uint16_t alt_term)
{
	struct cf_seg g = {0};
	const char *bad = NULL;
	char obs[96];
	int rc = cf_seg_recv(k, &g, c->o->wait_ms);

	if (!rc && iw_ddp_opcode(&g.s.ddp) != IW_OP_TERMINATE && rtr) {
		if ((bad = take_rtr(k, &g, rtr)))
			return cf_fail(c, "bad rtr", "%s", bad);
		rc = cf_seg_recv(k, &g, c->o->wait_ms);
	}
	if (rc)
		return cf_fail(c, rc == CF_IO_CLOSED ? "closed" : "no fpdu",
			       "the peer did not proceed: %s", cf_io_str(rc));
	if (iw_ddp_opcode(&g.s.ddp) == IW_OP_TERMINATE) {
		const struct iw_terminate *t = &g.s.rdmap.u.term;
		bool closed = cf_wait_close(k, c->o->wait_ms) == CF_IO_CLOSED;

		term_obs(obs, sizeof(obs), t, closed);
		if (alt_term && t->term == alt_term && closed)
			return cf_pass(c, obs, "TERMINATE %s, then closed", iw_term_str(t->term));
		return cf_fail(c, obs, "TERMINATE %s after a legal Reply", iw_term_str(t->term));
	}
	snprintf(obs, sizeof(obs), "proceeds%s", rtr ? " after the rtr" : "");
	cf_pass(c, obs, "proceeds: %sthen %s of %zu octets (CRC %s, markers to us %s)",
		rtr ? "the RTR we chose, " : "", iw_rdmap_opcode_str(iw_ddp_opcode(&g.s.ddp)),
		g.pl_len, k->crc ? "on" : "off", k->markers_rx ? "on" : "off");
}

/* After an illegal Reply or a Reject: the peer must close; a TERMINATE
 * before it must be term (0: any LLP/MPA TERMINATE without copies). */
static void judge_close(struct cf_ctx *c, struct cf_conn *k, const struct g2 *a, unsigned ms)
{
	struct cf_seg g = {0};
	const struct iw_terminate *t = &g.s.rdmap.u.term;
	bool closed = cf_wait_close(k, ms) == CF_IO_CLOSED;
	size_t sent = k->in_len;
	char obs[96];
	int rc = sent ? cf_seg_recv(k, &g, 0) : CF_IO_CLOSED;

	if (rc == CF_IO_OK && iw_ddp_opcode(&g.s.ddp) == IW_OP_TERMINATE) {
		term_obs(obs, sizeof(obs), t, closed);
		if (a->want == W_REJECTED)
			return cf_fail(c, obs, "a TERMINATE after our Reject");
		if (a->want == W_TERM ? t->term != a->term
				      : t->term != IW_TERM_LLP_BAD_FRAME)
			return cf_fail(c, obs, "TERMINATE %s, expected %s", iw_term_str(t->term),
				       iw_term_str(a->want == W_TERM ? a->term : IW_TERM_LLP_BAD_FRAME));
		if (t->hdrct & (IW_TERM_HDR_M | IW_TERM_HDR_D | IW_TERM_HDR_R))
			return cf_fail(c, obs, "an MPA-level TERMINATE with copied headers");
		if (!closed)
			return cf_fail(c, obs, "TERMINATE, but the connection stayed open");
		return cf_pass(c, obs, "TERMINATE %s, then closed", iw_term_str(t->term));
	}
	if (!closed)
		return cf_fail(c, sent ? "sent, open" : "open", "the peer kept the connection open");
	if (sent)
		return cf_fail(c, "sent, closed", "%zu octets that are no TERMINATE, then closed", sent);
	if (a->want == W_TERM)
		return cf_fail(c, "closed", "closed without the TERMINATE %s", iw_term_str(a->term));
	cf_pass(c, "closed", "closed%s", a->want == W_REJECTED ? " after our Reject" : "");
}

static int read_offer(struct cf_ctx *c, struct cf_conn *k, struct offer *o)
{
	struct cf_reply rep;

	if (cf_mpa_read(k, &rep, c->o->wait_ms, IW_MPA_REQUEST) || rep.out != CF_MPA_ACCEPT) {
		cf_fail(c, "no request", "no valid MPA Request from the peer (%s)",
			cf_mpa_out_str(rep.out));
		return -1;
	}
	o->f = rep.f;
	o->enh = iw_mpa_frame_enhanced(&rep.f);
	o->p2p = o->enh && rep.f.p2p;
	log_offer(c, o);
	return 0;
}

static void answer(struct cf_ctx *c, struct cf_conn *k, const struct g2 *a, const struct offer *o)
{
	const char *why = not_applicable(a, o);
	uint8_t rtr = choose_rtr(a, o, &why);
	struct cf_req q;
	unsigned ms = a->stall ? c->o->peer_timeout_ms + c->o->wait_ms : c->o->wait_ms;

	if (why)
		return cf_skip(c, "%s", why);
	make_reply(a, o, rtr, &q);
	if (send_reply(k, &q, a->fin_after))
		return cf_fail(c, "send failed", "could not send the Reply");
	set_framing(k, o, &q);
	if (a->stall)
		cf_log_add(&c->r->log, "stalled, waiting up to %u ms for the peer to close", ms);
	if (a->want == W_PROCEED || a->want == W_PROCEED_OR_TERM)
		judge_proceed(c, k, q.p2p ? rtr : 0, a->want == W_PROCEED_OR_TERM ? a->term : 0);
	else
		judge_close(c, k, a, ms);
	if (a->show_offer)
		report_offer(c, o);
}

static void run(struct cf_ctx *c, const void *arg)
{
	struct cf_conn *k = calloc(1, sizeof(*k));
	struct offer o;

	if (!k)
		return cf_fail(c, "", "out of memory");
	if (!c->o->listen)
		cf_skip(c, "Group 2 needs --listen (the peer connects to us)");
	else if (cf_accept(k, c))
		cf_fail(c, "no connection", "the peer did not connect");
	else if (!read_offer(c, k, &o))
		answer(c, k, arg, &o);
	cf_close(k);
	cf_peer_done();
	free(k);
}

#define GO .want = W_PROCEED
#define END .want = W_CLOSE
#define NO_RTR .want = W_TERM, .term = IW_TERM_LLP_NO_RTR
static const struct g2 a[] = {
	{GO, .show_offer = true},
	{GO, .crc = V(1)},
	{GO, .crc = V(0)},
	{GO, .markers = true},
	{GO, .rtr_how = RTR_ONLY, .rtr = IW_RTR_WRITE},
	{GO, .rtr_how = RTR_ONLY, .rtr = IW_RTR_READ},
	{GO, .rtr_how = RTR_ONLY, .rtr = IW_RTR_SEND},
	{GO, .needs_enh = true, .ird = V(0), .ord = V(0)},
	{GO, .needs_enh = true, .ird = V(1), .ord = V(1)},
	{GO, .needs_enh = true, .ird = V(32), .ord = V(32)},
	{GO, .needs_enh = true, .ird = V(128), .ord = V(128)},
	/* 0x3FFF means "no IRD/ORD negotiation" to Intel's drivers but is a
	 * plain depth to siw, above its IRD: proceed, or TERMINATE 0x06. */
	{.want = W_PROCEED_OR_TERM, .term = IW_TERM_LLP_IRD, .needs_enh = true,
	 .ird = V(IW_MPA_IRD_ORD_MAX), .ord = V(IW_MPA_IRD_ORD_MAX), .ord_over = true},
	{GO, .rev = V(1)},
	{GO, .no_enhanced = true},
	{GO, .pd_len = V(255)},
	{GO, .pd_len = V(512)},
	{GO, .reserved = true},
	{GO, .seg = 1},
	{.want = W_REJECTED, .reject = true, .pd_len = V(20)},
	{END, .bad_key = true},
	{END, .rev = V(3)},
	{END, .rev = V(0)},
	{END, .rev = V(2), .needs_rev1 = true},
	{NO_RTR, .rtr_how = RTR_UNOFFERED},
	{NO_RTR, .rtr_how = RTR_NONE},
	{NO_RTR, .no_p2p = true},
	{.want = W_PROCEED_OR_TERM, .term = IW_TERM_LLP_IRD, .needs_enh = true, .ord = V(128),
	 .ord_over = true},
	{END, .pd_len = V(513)},
	{END, .needs_enh = true, .pd_len = V(2)},
	{END, .trunc = V(12), .fin_after = true},
	{END, .trunc = V(12), .stall = true},
	{END, .trunc = V(0), .stall = true},
};

const struct cf_case cf_group2[] = {
	{"2.1", "the peer's Request recorded, answered as asked", "RFC 6581 7.1", run, &a[0]},
	{"2.2", "Reply with C: CRC both ways", "RFC 5044 7.1.2", run, &a[1]},
	{"2.3", "Reply without C (CRC only if the Request had C)", "RFC 5044 7.1.2", run, &a[2]},
	{"2.4", "Reply with M: the peer sends markers", "RFC 5044 7.1.2", run, &a[3]},
	{"2.5", "RTR WRITE chosen", "RFC 6581 7.1", run, &a[4]},
	{"2.6", "RTR READ chosen (zero-length Read answered)", "RFC 6581 7.1", run, &a[5]},
	{"2.7", "RTR SEND chosen", "RFC 6581 7.1", run, &a[6]},
	{"2.8", "Reply IRD/ORD 0/0", "RFC 6581 7.1", run, &a[7]},
	{"2.9", "Reply IRD/ORD 1/1", "RFC 6581 7.1", run, &a[8]},
	{"2.10", "Reply IRD 32, ORD 32 up to the peer's IRD", "RFC 6581 7.1", run, &a[9]},
	{"2.11", "Reply IRD 128, ORD 128 up to the peer's IRD", "RFC 6581 7.1", run, &a[10]},
	{"2.12", "Reply IRD/ORD 0x3FFF: raise or TERMINATE 0x06", "RFC 6581 7.1", run, &a[11]},
	{"2.13", "rev 1 Reply to a rev 2 Request", "RFC 6581 5", run, &a[12]},
	{"2.14", "rev 2 Reply without the RFC 6581 block", "RFC 6581 5", run, &a[13]},
	{"2.15", "Reply with PD_Length 255", "RFC 5044 7.1.3", run, &a[14]},
	{"2.16", "Reply with PD_Length 512 (the maximum)", "RFC 5044 7.1.3", run, &a[15]},
	{"2.17", "Reply with reserved flag bits set", "RFC 5044 7.1.2", run, &a[16]},
	{"2.18", "Reply dribbled one octet per segment", "RFC 5044 7.1", run, &a[17]},
	{"2.19", "Reject with private data: closed, nothing sent", "RFC 5044 7.1.2", run, &a[18]},
	{"2.20", "Reply with a bad key: closed", "RFC 5044 7.1.2", run, &a[19]},
	{"2.21", "Reply revision 3: closed", "RFC 5044 7.1.2", run, &a[20]},
	{"2.22", "Reply revision 0: closed", "RFC 5044 7.1.2", run, &a[21]},
	{"2.23", "rev 2 Reply to a rev 1 Request: closed", "RFC 5044 7.1.2", run, &a[22]},
	{"2.24", "RTR type not offered: TERMINATE 0x07", "RFC 6581 7.1", run, &a[23]},
	{"2.25", "P2P without an RTR type: TERMINATE 0x07", "RFC 6581 7.1", run, &a[24]},
	{"2.26", "A cleared in the Reply: TERMINATE 0x07", "RFC 6581 9.2", run, &a[25]},
	{"2.27", "ORD above the peer's IRD: raise or TERMINATE 0x06", "RFC 6581 7.1", run, &a[26]},
	{"2.28", "Reply with PD_Length 513: closed", "RFC 5044 7.1.3", run, &a[27]},
	{"2.29", "enhanced Reply with PD_Length 2: closed", "RFC 6581 5", run, &a[28]},
	{"2.30", "truncated Reply, then FIN: closed", "RFC 5044 7.1.1", run, &a[29]},
	{"2.31", "truncated Reply, stalled: the peer's timeout", "RFC 5044 7.1.1", run, &a[30]},
	{"2.32", "no Reply: the peer's MPA timeout", "RFC 5044 7.1.1", run, &a[31]},
};
const size_t cf_group2_n = sizeof(cf_group2) / sizeof(cf_group2[0]);
