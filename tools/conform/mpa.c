/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Our MPA Request, built field by field (the codec refuses illegal frames,
 * and the cases need them), and the reading of the peer's Reply.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

void cf_req_default(struct cf_req *q)
{
	memset(q, 0, sizeof(*q));
	q->rev = 2;
	q->flags = IW_MPA_FLAG_C | IW_MPA_FLAG_ENHANCED;
	q->enhanced = true;
	q->p2p = true;
	q->rtr = IW_RTR_WRITE | IW_RTR_READ;
	q->ird = q->ord = 1;
	q->pd_len = IW_MPA_6581_LEN;
	q->trunc = -1;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* RFC 6581 block: A and B in IRD's top bits, C and D in ORD's. */
static void block(const struct cf_req *q, uint8_t *p)
{
	uint16_t ird = q->ird & 0x3FFF, ord = q->ord & 0x3FFF;

	if (q->p2p)
		ird |= 0x8000;
	if (q->rtr & IW_RTR_SEND)
		ird |= 0x4000;
	if (q->rtr & IW_RTR_WRITE)
		ord |= 0x8000;
	if (q->rtr & IW_RTR_READ)
		ord |= 0x4000;
	put16(p, ird);
	put16(p + 2, ord);
}

size_t cf_req_build(const struct cf_req *q, uint8_t *out, size_t cap)
{
	size_t n = IW_MPA_FRAME_HDR_LEN + q->pd_len;

	if (cap < n)
		return 0;
	memcpy(out, q->key ? q->key : IW_MPA_KEY_REQ, IW_MPA_KEY_LEN);
	out[16] = q->flags;
	out[17] = q->rev;
	put16(out + 18, q->pd_len);
	for (size_t i = 0; i < q->pd_len; i++)
		out[20 + i] = (uint8_t)(0xA0 + i);
	if (q->enhanced && q->pd_len >= IW_MPA_6581_LEN)
		block(q, out + 20);
	return n;
}

const char *cf_mpa_out_str(enum cf_mpa_out o)
{
	static const char *const s[] = {"accepted", "rejected", "closed", "no answer", "bad reply"};

	return s[o];
}

static bool reply_in(struct cf_conn *k, struct cf_reply *rep, size_t *used, enum iw_mpa_kind kind)
{
	int rc = iw_mpa_frame_parse(&rep->f, used, &rep->why, kind, k->in, k->in_len, 0);

	if (rc == -EAGAIN)
		return false;
	rep->out = rc ? CF_MPA_BAD : (rep->f.flags & IW_MPA_FLAG_R) ? CF_MPA_REJECT : CF_MPA_ACCEPT;
	return true;
}

static void keep_raw(struct cf_conn *k, struct cf_reply *rep, size_t used)
{
	rep->raw_len = used < sizeof(rep->raw) ? used : sizeof(rep->raw);
	memcpy(rep->raw, k->in, rep->raw_len);
	cf_log_hex(&k->c->r->log, "rx", rep->raw, rep->raw_len);
	if (rep->out == CF_MPA_BAD)
		cf_log_add(&k->c->r->log, "   the frame is invalid: %s", iw_wire_err_str(rep->why));
	/* The frame's private data points into k->in: move it to raw. */
	if (rep->out != CF_MPA_BAD && rep->f.pd_len)
		rep->f.pd = rep->raw + (rep->f.pd - k->in);
	memmove(k->in, k->in + used, k->in_len - used);
	k->in_len -= used;
}

int cf_mpa_read(struct cf_conn *k, struct cf_reply *rep, unsigned ms, enum iw_mpa_kind kind)
{
	uint64_t deadline = cf_now_ns() + (uint64_t)ms * 1000000u;
	size_t used = 0;

	for (;;) {
		int rc;

		if (reply_in(k, rep, &used, kind)) {
			if (rep->out == CF_MPA_BAD)
				used = k->in_len;
			keep_raw(k, rep, used);
			return 0;
		}
		rc = cf_fill(k, deadline);
		if (rc == CF_IO_TIMEOUT || rc == CF_IO_CLOSED) {
			rep->out = rc == CF_IO_TIMEOUT ? CF_MPA_TIMEOUT : CF_MPA_CLOSED;
			if (k->in_len)
				cf_log_hex(&k->c->r->log, "rx (partial)", k->in, k->in_len);
			return 0;
		}
		if (rc)
			return -1;
	}
}

int cf_mpa_try(struct cf_conn *k, struct cf_ctx *c, const struct cf_req *q, struct cf_reply *rep,
	       unsigned ms)
{
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + 1024];
	size_t n = cf_req_build(q, buf, sizeof(buf));

	memset(rep, 0, sizeof(*rep));
	if (!n || cf_connect(k, c))
		return -1;
	if (q->trunc >= 0 && (size_t)q->trunc < n)
		n = (size_t)q->trunc;
	if (n && cf_send(k, buf, n, q->seg))
		return -1;
	return cf_mpa_read(k, rep, ms, IW_MPA_REPLY);
}

static int await_read_resp(struct cf_conn *k)
{
	struct cf_seg g = {0};
	int rc = cf_await_first(k, &g, IW_OP_READ_RESP, cf_patience_ms(k->c->o));

	if (rc) {
		cf_log_add(&k->c->r->log, "no Read Response to the READ RTR: %s", cf_io_str(rc));
		return -1;
	}
	if (g.pl_len) {
		cf_log_add(&k->c->r->log, "the READ RTR was answered by %s, %zu octets",
			   iw_rdmap_opcode_str(iw_ddp_opcode(&g.s.ddp)), g.pl_len);
		return -1;
	}
	return 0;
}

static int send_rtr(struct cf_conn *k, uint8_t rtr)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t n;

	if (rtr & IW_RTR_WRITE) {
		n = cf_hdr_tagged(h, IW_OP_WRITE, 1, 0, true);
		return cf_fpdu_send(k, h, n, NULL, 0, 0, false);
	}
	if (rtr & IW_RTR_SEND) {
		n = cf_hdr_untagged(h, IW_OP_SEND, IW_QN_SEND, ++k->msn[IW_QN_SEND], 0, true);
		return cf_fpdu_send(k, h, n, NULL, 0, 0, false);
	}
	struct iw_read_req r = {.sink_stag = 1, .sink_to = 0, .read_size = 0, .src_stag = 1};
	n = cf_hdr_untagged(h, IW_OP_READ_REQ, IW_QN_READ_REQ, ++k->msn[IW_QN_READ_REQ], 0, true);
	n += (size_t)iw_rdmap_read_req_build(h + n, sizeof(h) - n, &r);
	if (cf_fpdu_send(k, h, n, NULL, 0, 0, false))
		return -1;
	return await_read_resp(k);
}

const char *cf_mpa_rtr_problem(const struct cf_req *q, const struct cf_reply *rep)
{
	uint8_t rtr = rep->f.rtr;

	if (!iw_mpa_frame_enhanced(&rep->f) || !rep->f.p2p)
		return NULL;
	if (!rtr || (rtr & (rtr - 1)))
		return "the Reply chose no single RTR type";
	return (rtr & q->rtr) ? NULL : "the Reply chose an RTR type we did not offer";
}

/* The FPDU codecs for what the Request and Reply agreed. */
static void agree(struct cf_conn *k, const struct cf_req *q, const struct cf_reply *rep)
{
	k->crc = ((q->flags | rep->f.flags) & IW_MPA_FLAG_C) != 0;
	k->markers_tx = (rep->f.flags & IW_MPA_FLAG_M) != 0;
	k->markers_rx = (q->flags & IW_MPA_FLAG_M) != 0;
	iw_fpdu_tx_init(&k->tx, k->crc, k->markers_tx, 0);
	iw_fpdu_rx_init(&k->rx, k->crc, k->markers_rx, 0, 0, 0);
	k->peer_ird = iw_mpa_frame_enhanced(&rep->f) ? rep->f.ird : 0;
	k->peer_reads = !iw_mpa_frame_enhanced(&rep->f) || rep->f.ord > 0;
}

int cf_mpa_finish(struct cf_conn *k, const struct cf_req *q, const struct cf_reply *rep)
{
	const char *bad = cf_mpa_rtr_problem(q, rep);

	agree(k, q, rep);
	if (!iw_mpa_frame_enhanced(&rep->f) || !rep->f.p2p)
		return 0;
	if (bad) {
		cf_log_add(&k->c->r->log, "%s: 0x%x of our 0x%x", bad, rep->f.rtr, q->rtr);
		return -1;
	}
	return send_rtr(k, rep->f.rtr);
}

int cf_mpa_complete_anyway(struct cf_conn *k, const struct cf_req *q, const struct cf_reply *rep)
{
	uint8_t rtr = rep->f.rtr;

	agree(k, q, rep);
	cf_log_add(&k->c->r->log, "completing the handshake the Reply asked for, so that the "
				  "peer is established before we close");
	if (iw_mpa_frame_enhanced(&rep->f) && rep->f.p2p) {
		if (!rtr || (rtr & (rtr - 1)) || send_rtr(k, rtr))
			return -1;
	}
	return cf_settle(k, true);
}

int cf_establish(struct cf_conn *k, struct cf_ctx *c, bool crc, bool markers)
{
	struct cf_req q;
	struct cf_reply rep;

	cf_req_default(&q);
	q.rtr = IW_RTR_WRITE;
	if (!crc)
		q.flags &= (uint8_t)~IW_MPA_FLAG_C;
	if (markers)
		q.flags |= IW_MPA_FLAG_M;
	if (cf_mpa_try(k, c, &q, &rep, cf_patience_ms(c->o)))
		return -1;
	if (rep.out != CF_MPA_ACCEPT) {
		cf_log_add(&c->r->log, "handshake: %s", cf_mpa_out_str(rep.out));
		return -1;
	}
	return cf_mpa_finish(k, &q, &rep);
}
