/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Group 4: errors the wire can cause. After a good handshake (rev 2, P2P,
 * WRITE RTR, CRC), each case sends one faulty FPDU and expects the
 * TERMINATE RFC 5040 4.8 / RFC 5041 7 prescribe: layer, error type and
 * code; M and D with the segment length and the copied DDP header for a
 * DDP or RDMAP error (R and the copied Read Request header when the
 * faulty message was a Read Request); no copies for an LLP error; then the
 * close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conform.h"

enum fault {
	F_STAG, F_BOUNDS, F_RIGHTS, F_DDPV_U, F_DDPV_T, F_RDMAPV, F_OPCODE, F_QN, F_MSN, F_MO,
	F_CRC, F_TOO_LONG, F_NO_BUF, F_UNSOL, F_TRUNC, F_MARKER, F_IRD, F_INV,
};

struct g4 {
	enum fault f;
	uint16_t term; /* expected triple */
	uint8_t bits;  /* expected M/D/R */
	bool sink;     /* needs the peer's READ sink (rping) */
};

#define MD (IW_TERM_HDR_M | IW_TERM_HDR_D)
#define MDR (MD | IW_TERM_HDR_R)
#define HDRCT_BITS (IW_TERM_HDR_M | IW_TERM_HDR_D | IW_TERM_HDR_R)

/* What we sent that the TERMINATE must copy. */
struct sent {
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl;
	uint16_t ulpdu_len;
	/* F_NO_BUF: the Sends before the last; any of them may be the one
	 * that found no buffer. */
	uint8_t earlier[2][IW_DDP_UNTAGGED_HDR_LEN];
};

static const uint8_t pl8[8] = "conform";
#define MARKER_PL 600 /* octets: a marker falls inside whatever the stream offset */
#define IRD_EXTRA 8   /* Read Requests beyond the peer's IRD, in one segment */

static size_t untagged(struct cf_conn *k, uint8_t *h, unsigned op, uint32_t qn)
{
	return cf_hdr_untagged(h, op, qn, ++k->msn[qn < 4 ? qn : 0], 0, true);
}

/* Build the faulty header into s (and the payload length into *n). */
static void build(struct cf_conn *k, const struct g4 *a, const struct iw_read_req *rr,
		  struct sent *s, size_t *n)
{
	uint8_t *h = s->hdr;

	*n = sizeof(pl8);
	switch (a->f) {
	case F_STAG: s->hl = cf_hdr_tagged(h, IW_OP_WRITE, 0x00ABCD00u, 0, true); break;
	case F_BOUNDS:
		/* The sink is the peer's whole rping buffer (its -S). */
		s->hl = cf_hdr_tagged(h, IW_OP_WRITE, rr->sink_stag,
				      rr->sink_to + k->c->o->size - 4, true);
		break;
	case F_RIGHTS: {
		struct iw_read_req bad = {.sink_stag = CF_OUR_STAG, .sink_to = 0, .read_size = 8,
					  .src_stag = rr->sink_stag, .src_to = rr->sink_to};
		s->hl = untagged(k, h, IW_OP_READ_REQ, IW_QN_READ_REQ);
		s->hl += (size_t)iw_rdmap_read_req_build(h + s->hl, 64, &bad);
		*n = 0;
		break;
	}
	case F_DDPV_U: s->hl = untagged(k, h, IW_OP_SEND, 0); h[0] &= (uint8_t)~IW_DDP_DV; break;
	case F_DDPV_T:
		s->hl = cf_hdr_tagged(h, IW_OP_WRITE, 1, 0, true);
		h[0] = (uint8_t)((h[0] & ~IW_DDP_DV) | 2);
		break;
	case F_RDMAPV: s->hl = untagged(k, h, IW_OP_SEND, 0); h[1] = (uint8_t)((2 << 6) | IW_OP_SEND); break;
	case F_OPCODE: s->hl = untagged(k, h, 0xC, 0); break;
	case F_QN: s->hl = cf_hdr_untagged(h, IW_OP_SEND, 5, 1, 0, true); break;
	case F_MSN: s->hl = cf_hdr_untagged(h, IW_OP_SEND, 0, 1000, 0, true); break;
	case F_MO: s->hl = cf_hdr_untagged(h, IW_OP_SEND, 0, ++k->msn[0], 64, true); break;
	case F_CRC: s->hl = untagged(k, h, IW_OP_SEND, 0); break;
	case F_TOO_LONG: s->hl = untagged(k, h, IW_OP_SEND, 0); *n = 0; break;
	case F_NO_BUF: s->hl = untagged(k, h, IW_OP_SEND, 0); break;
	case F_UNSOL: s->hl = cf_hdr_tagged(h, IW_OP_READ_RESP, 0x00ABCD00u, 0, true); break;
	case F_TRUNC: s->hl = untagged(k, h, IW_OP_SEND, 0); break;
	case F_MARKER:
		/* A legal Write into the peer's sink, long enough to hold a marker. */
		s->hl = cf_hdr_tagged(h, IW_OP_WRITE, rr->sink_stag, rr->sink_to, true);
		*n = MARKER_PL;
		break;
	case F_INV: {
		struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true),
				       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND_INV),
				       .inv_stag = 0x00ABCD00u, .qn = IW_QN_SEND,
				       .msn = ++k->msn[IW_QN_SEND]};
		s->hl = (size_t)iw_ddp_hdr_build(h, IW_FPDU_HDR_MAX, &d);
		break;
	}
	case F_IRD: {
		struct iw_read_req z = {.sink_stag = CF_OUR_STAG, .src_stag = 1};
		s->hl = untagged(k, h, IW_OP_READ_REQ, IW_QN_READ_REQ);
		s->hl += (size_t)iw_rdmap_read_req_build(h + s->hl, 64, &z);
		*n = 0;
		break;
	}
	}
	s->ulpdu_len = (uint16_t)(s->hl + *n);
}

/* Frame the Write, then break the first marker in it: its FPDUPTR no
 * longer points at the FPDU's start (RFC 5044 5.1). The CRC does not cover
 * markers, so it stays good. */
static int send_bad_marker(struct cf_conn *k, struct sent *s)
{
	static uint8_t pl[MARKER_PL];
	uint8_t *frame = malloc(MARKER_PL + 256);
	size_t at = (IW_MPA_MARKER_INTERVAL - k->tx.stream_off % IW_MPA_MARKER_INTERVAL) %
		    IW_MPA_MARKER_INTERVAL;
	size_t len = frame ? cf_fpdu_frame(k, frame, MARKER_PL + 256, s->hdr, s->hl, pl,
					   sizeof(pl), false) : 0;
	int rc = -1;

	if (len > at + IW_MPA_MARKER_LEN) {
		cf_log_add(&k->c->r->log, "marker at frame offset %zu: FPDUPTR %02x %02x -> +0x100",
			   at, frame[at + 2], frame[at + 3]);
		frame[at + 2] ^= 0x01;
		rc = cf_send(k, frame, len, 0);
	}
	free(frame);
	return rc;
}

/* More zero-length Read Requests than the peer's IRD, in one segment, so
 * that they are all outstanding at once (RFC 5040 6.1). */
static int send_over_ird(struct cf_conn *k, struct sent *s)
{
	unsigned count = (k->peer_ird && k->peer_ird < 64 ? k->peer_ird : 1) + IRD_EXTRA;
	uint8_t *buf = malloc(count * 64);
	size_t used = 0;
	int rc = -1;

	for (unsigned i = 0; buf && i < count; i++) {
		size_t len = cf_fpdu_frame(k, buf + used, 64, s->hdr, s->hl, NULL, 0, false);

		if (!len)
			break;
		used += len;
		if (i + 1 < count)
			s->hl = untagged(k, s->hdr, IW_OP_READ_REQ, IW_QN_READ_REQ) +
				IW_RDMAP_READ_REQ_LEN;
		rc = i + 1 < count ? -1 : 0;
	}
	cf_log_add(&k->c->r->log, "%u Read Requests for a peer IRD of %u", count, k->peer_ird);
	if (!rc)
		rc = cf_send(k, buf, used, 0);
	free(buf);
	return rc;
}

/* Send the fault; a payload over the peer's 16-octet receive for F_TOO_LONG. */
static int inject(struct cf_conn *k, const struct g4 *a, struct sent *s, size_t n)
{
	static const uint8_t big[17] = "seventeen octets";
	uint8_t frame[256];
	size_t len;

	if (a->f == F_TOO_LONG) {
		s->ulpdu_len = (uint16_t)(s->hl + sizeof(big));
		return cf_fpdu_send(k, s->hdr, s->hl, big, sizeof(big), 0, false);
	}
	if (a->f == F_MARKER)
		return send_bad_marker(k, s);
	if (a->f == F_IRD)
		return send_over_ird(k, s);
	if (a->f == F_NO_BUF) {
		/* The first Send may find the buffer the peer reposted. */
		for (int i = 0; i < 2; i++) {
			memcpy(s->earlier[i], s->hdr, sizeof(s->earlier[i]));
			if (cf_fpdu_send(k, s->hdr, s->hl, pl8, n, 0, false))
				return -1;
			s->hl = untagged(k, s->hdr, IW_OP_SEND, 0);
		}
	}
	len = cf_fpdu_frame(k, frame, sizeof(frame), s->hdr, s->hl, pl8, n, a->f == F_CRC);
	if (a->f == F_TRUNC) {
		if (cf_send(k, frame, len / 2, 0))
			return -1;
		shutdown(k->fd, SHUT_WR);
		return 0;
	}
	return cf_send(k, frame, len, 0);
}

static void observed(char *o, size_t cap, const struct iw_terminate *t, bool closed)
{
	snprintf(o, cap, "term %02x %02x %02x, %s", t->term >> 8, t->term & 0xFF, t->hdrct,
		 closed ? "closed" : "open");
}

static const char *copies_problem(const struct g4 *a, const struct iw_terminate *t,
				  const struct sent *s)
{
	size_t dl = (s->hdr[0] & IW_DDP_T) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;

	if ((t->hdrct & HDRCT_BITS) != a->bits)
		return "the M/D/R bits are not the expected ones";
	if ((t->hdrct & IW_TERM_HDR_M) && t->ddp_seg_len != s->ulpdu_len)
		return "the copied DDP segment length is not the faulty segment's";
	/* F_IRD: any of the Read Requests past the IRD; they differ in MSN only. */
	size_t dcmp = a->f == F_IRD ? 10 : dl;

	if ((t->hdrct & IW_TERM_HDR_D) && memcmp(t->ddp_hdr, s->hdr, dcmp) &&
	    !(a->f == F_NO_BUF && (!memcmp(t->ddp_hdr, s->earlier[0], dl) ||
				   !memcmp(t->ddp_hdr, s->earlier[1], dl))))
		return "the copied DDP header is not the faulty segment's";
	if ((t->hdrct & IW_TERM_HDR_R) && memcmp(t->rdma_hdr, s->hdr + dl, IW_RDMAP_READ_REQ_LEN))
		return "the copied RDMAP header is not the faulty Read Request's";
	return NULL;
}

static void judge(struct cf_ctx *c, struct cf_conn *k, const struct g4 *a, const struct sent *s)
{
	struct cf_seg g = {0};
	const struct iw_terminate *t = &g.s.rdmap.u.term;
	int rc = cf_await_op(k, &g, IW_OP_TERMINATE, c->o->wait_ms);
	bool closed;
	const char *bad;
	char obs[96];

	if (rc) {
		/* After a frame we could not decode the peer's close may still
		 * be on its way: wait for it as after a TERMINATE, so that the
		 * signature does not depend on the timing. */
		closed = rc == CF_IO_CLOSED ||
			 cf_wait_close(k, rc == CF_IO_ERR ? c->o->wait_ms : 1) == CF_IO_CLOSED;
		if (a->f == F_TRUNC && closed)
			return cf_pass(c, "closed", "closed without a TERMINATE (the header was cut)");
		return cf_fail(c, closed ? "closed, no term" : "no term, open",
			       "no TERMINATE (%s)", cf_io_str(rc));
	}
	cf_log_add(&c->r->log, "TERMINATE: %s, hdrct 0x%02x, seg len %u", iw_term_str(t->term),
		   t->hdrct, t->ddp_seg_len);
	closed = cf_wait_close(k, c->o->wait_ms) == CF_IO_CLOSED;
	observed(obs, sizeof(obs), t, closed);
	if (a->f == F_TRUNC)
		return IW_TERM_LAYER(t->term) == IW_LAYER_LLP && closed
			       ? cf_pass(c, obs, "%s, then closed", iw_term_str(t->term))
			       : cf_fail(c, obs, "a TERMINATE %s for a cut FPDU", iw_term_str(t->term));
	if (t->term != a->term)
		return cf_fail(c, obs, "TERMINATE %s, expected %s", iw_term_str(t->term),
			       iw_term_str(a->term));
	if ((bad = copies_problem(a, t, s)))
		return cf_fail(c, obs, "%s", bad);
	if (!closed)
		return cf_fail(c, obs, "TERMINATE but the connection stayed open");
	cf_pass(c, obs, "TERMINATE %s with the right copies, then closed", iw_term_str(t->term));
}

static void run(struct cf_ctx *c, const void *arg)
{
	const struct g4 *a = arg;
	struct cf_conn *k = calloc(1, sizeof(*k));
	struct iw_read_req rr = {0};
	struct sent s = {0};
	size_t n;

	if (!k)
		return cf_fail(c, "", "out of memory");
	/* Faults go in, and a skipped case closes, only once the peer is
	 * established (cf_settle); the sink cases keep the peer's Read
	 * outstanding, the others finish the round so that nothing of ours is
	 * pending. */
	if (cf_establish(k, c, true, false)) {
		cf_fail(c, "no connection", "the handshake failed");
	} else if (cf_settle(k, !a->sink || (a->f == F_MARKER && !k->markers_tx)) && a->sink) {
		cf_skip(c, "the peer does not speak the rping protocol (no Read Request)");
	} else if (a->f == F_MARKER && !k->markers_tx) {
		cf_skip(c, "the peer does not ask for markers (no M in its Reply): run this case "
			   "against a peer that does (iwarp-ping -s --markers)");
	} else {
		rr = k->sink;
		build(k, a, &rr, &s, &n);
		if (inject(k, a, &s, n))
			cf_fail(c, "send failed", "could not send the faulty FPDU");
		else
			judge(c, k, a, &s);
	}
	cf_close(k);
	free(k);
}

static const struct g4 a[] = {
	{F_STAG, IW_TERM_DDP_T_INV_STAG, MD, false},
	{F_BOUNDS, IW_TERM_DDP_T_BASE_BOUNDS, MD, true},
	{F_RIGHTS, IW_TERM_RDMAP_ACCESS, MDR, true},
	{F_DDPV_U, IW_TERM_DDP_U_VERSION, MD, false},
	{F_DDPV_T, IW_TERM_DDP_T_VERSION, MD, false},
	{F_RDMAPV, IW_TERM_RDMAP_VERSION, MD, false},
	{F_OPCODE, IW_TERM_RDMAP_OPCODE, MD, false},
	{F_QN, IW_TERM_DDP_U_INV_QN, MD, false},
	{F_MSN, IW_TERM_DDP_U_MSN_RANGE, MD, false},
	{F_MO, IW_TERM_DDP_U_INV_MO, MD, false},
	{F_CRC, IW_TERM_LLP_CRC, 0, false},
	{F_TOO_LONG, IW_TERM_DDP_U_TOO_LONG, MD, false},
	{F_NO_BUF, IW_TERM_DDP_U_NO_BUF, MD, true},
	{F_UNSOL, IW_TERM_RDMAP_OPCODE, MD, false},
	{F_TRUNC, 0, 0, false},
	{F_MARKER, IW_TERM_LLP_MARKER, 0, true},
	{F_IRD, IW_TERM_DDP_U_MSN_RANGE, MDR, false},
	{F_INV, IW_TERM_RDMAP_OP_NOINV, MD, false},
};

const struct cf_case cf_group4[] = {
	{"4.1", "RDMA Write to an invalid STag", "RFC 5041 7.2", run, &a[0]},
	{"4.2", "RDMA Write past the buffer's bounds", "RFC 5041 7.2", run, &a[1]},
	{"4.3", "Read Request from a buffer without remote read", "RFC 5040 7.2", run, &a[2]},
	{"4.4", "untagged segment with DDP version 0", "RFC 5041 7.2", run, &a[3]},
	{"4.5", "tagged segment with DDP version 2", "RFC 5041 7.2", run, &a[4]},
	{"4.6", "RDMAP version 2", "RFC 5040 7.2", run, &a[5]},
	{"4.7", "undefined RDMAP opcode 0xC", "RFC 5040 7.2", run, &a[6]},
	{"4.8", "Send on QN 5", "RFC 5041 7.2", run, &a[7]},
	{"4.9", "Send with MSN 1000 (out of range)", "RFC 5041 7.2", run, &a[8]},
	{"4.10", "Send with MO 64 into a 16-octet buffer", "RFC 5041 7.2", run, &a[9]},
	{"4.11", "FPDU with a bad CRC", "RFC 5044 7.3", run, &a[10]},
	{"4.12", "Send longer than the posted receive", "RFC 5041 7.2", run, &a[11]},
	{"4.13", "Send with no receive posted", "RFC 5041 7.2", run, &a[12]},
	{"4.14", "unsolicited RDMA Read Response", "RFC 5040 7.2", run, &a[13]},
	{"4.15", "FPDU cut in half, then FIN", "RFC 5044 5", run, &a[14]},
	{"4.16", "FPDU with a marker that points elsewhere", "RFC 5044 5.1", run, &a[15]},
	{"4.17", "Read Requests beyond the peer's IRD", "RFC 5040 6.1", run, &a[16]},
	{"4.18", "Send with Invalidate of an STag that names nothing", "RFC 5040 7.2", run,
	 &a[17]},
};
const size_t cf_group4_n = sizeof(cf_group4) / sizeof(cf_group4[0]);
