/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Group 1: MPA with the peer as responder (RFC 5044 section 7, RFC 6581).
 * Each case changes one thing in a good Request; legal ones must be
 * accepted with a legal Reply (and the chosen RTR must then work), illegal
 * ones must end in a Reject or a closed connection, never an accept or a
 * connection left hanging.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conform.h"

/* W_EITHER: the Request is legal but the peer need not support what it
 * offers (RFC 6581 7.1: no common RTR is a Reject). */
enum want { W_ACCEPT, W_REFUSE, W_EITHER };

/* Fields are 0 for "as in the good Request", else V(value). */
#define V(x) ((x) + 1)
struct g1 {
	enum want want;
	int rev, enhanced, p2p, rtr, crc, ird, ord, pd_len, trunc;
	bool markers, reserved, bad_key, fin_after, wait_timeout;
	size_t seg;
};

static void make_req(const struct g1 *a, struct cf_req *q)
{
	cf_req_default(q);
	if (a->rev)
		q->rev = (uint8_t)(a->rev - 1);
	if (a->enhanced == V(0) || q->rev == 1) {
		q->enhanced = false;
		q->flags &= (uint8_t)~IW_MPA_FLAG_ENHANCED;
		q->pd_len = 0;
	}
	if (a->p2p)
		q->p2p = a->p2p - 1;
	if (a->rtr)
		q->rtr = (uint8_t)(a->rtr - 1);
	if (a->crc == V(0))
		q->flags &= (uint8_t)~IW_MPA_FLAG_C;
	if (a->markers)
		q->flags |= IW_MPA_FLAG_M;
	if (a->reserved)
		q->flags |= IW_MPA_FLAG_RES;
	if (a->bad_key)
		q->key = "MPA ID Req Fraxx";
	if (a->ird)
		q->ird = (uint16_t)(a->ird - 1);
	if (a->ord)
		q->ord = (uint16_t)(a->ord - 1);
	if (a->pd_len)
		q->pd_len = (uint16_t)(a->pd_len - 1);
	q->trunc = a->trunc - 1;
	q->seg = a->seg;
}

/* A Reply that accepts must answer our Request legally. */
static const char *reply_problem(const struct cf_req *q, const struct cf_reply *rep)
{
	const struct iw_mpa_frame *f = &rep->f;

	if (f->rev > q->rev)
		return "the Reply's revision is above the Request's";
	if (f->rev == 2 && (f->flags & IW_MPA_FLAG_ENHANCED) && !(q->flags & IW_MPA_FLAG_ENHANCED))
		return "an enhanced Reply to a Request that was not";
	if (!iw_mpa_frame_enhanced(f) || !q->enhanced)
		return NULL;
	if (q->p2p && !f->p2p)
		return "the Request had P2P (A) and the Reply does not";
	if (q->ird != IW_MPA_IRD_ORD_MAX && f->ord > q->ird)
		return "the Reply's ORD is above the Request's IRD";
	return NULL;
}

/* A peer that accepted is settled (cf_settle) before the case closes, also
 * after a Reply we fail: the verdict is about the Reply, and a close in the
 * middle of the peer's handshake only provokes a crash of its CM. */
static void judge_accept(struct cf_ctx *c, struct cf_conn *k, const struct cf_req *q,
			 const struct cf_reply *rep)
{
	const char *bad = reply_problem(q, rep);
	char obs[96];

	snprintf(obs, sizeof(obs), "accepted rev %u%s", rep->f.rev,
		 iw_mpa_frame_enhanced(&rep->f) ? " enhanced" : "");
	if (!bad && (bad = cf_mpa_rtr_problem(q, rep)))
		cf_log_add(&c->r->log, "the Reply's RTR types 0x%x, ours 0x%x", rep->f.rtr, q->rtr);
	if (bad) {
		cf_mpa_complete_anyway(k, q, rep);
		return cf_fail(c, obs, "%s", bad);
	}
	if (cf_mpa_finish(k, q, rep))
		return cf_fail(c, "rtr failed", "accepted, but the RTR exchange failed");
	cf_settle(k, true);
	cf_pass(c, obs, "accepted: rev %u, flags 0x%02x, IRD %u ORD %u, RTR 0x%x, %u octets of private data",
		rep->f.rev, rep->f.flags, rep->f.ird, rep->f.ord, rep->f.rtr, rep->f.pd_len);
}

static void judge_refuse(struct cf_ctx *c, struct cf_conn *k, const struct cf_reply *rep)
{
	if (rep->out == CF_MPA_ACCEPT)
		return cf_fail(c, "accepted", "the peer accepted an illegal Request");
	if (rep->out == CF_MPA_TIMEOUT)
		return cf_fail(c, "no answer", "the peer neither answered nor closed");
	if (rep->out == CF_MPA_REJECT || rep->out == CF_MPA_BAD) {
		int rc = cf_wait_close(k, c->o->wait_ms);
		if (rc != CF_IO_CLOSED)
			return cf_fail(c, "rejected, left open", "rejected but did not close");
	}
	cf_pass(c, cf_mpa_out_str(rep->out), "refused: %s", cf_mpa_out_str(rep->out));
}

/* Send what the case sends (maybe nothing), maybe a FIN, and see whether
 * the peer closes in time. */
static void stall(struct cf_ctx *c, struct cf_conn *k, const struct cf_req *q, bool fin,
		  unsigned ms, struct cf_reply *rep)
{
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + 1024];
	size_t n = cf_req_build(q, buf, sizeof(buf));

	if (q->trunc >= 0 && (size_t)q->trunc < n)
		n = (size_t)q->trunc;
	if (n)
		cf_send(k, buf, n, 0);
	if (fin)
		shutdown(k->fd, SHUT_WR);
	cf_log_add(&c->r->log, "%s, waiting up to %u ms for the peer to close",
		   fin ? "sent FIN" : "stalled", ms);
	memset(rep, 0, sizeof(*rep));
	rep->out = cf_wait_close(k, ms) == CF_IO_CLOSED ? CF_MPA_CLOSED : CF_MPA_TIMEOUT;
}

static void run(struct cf_ctx *c, const void *arg)
{
	const struct g1 *a = arg;
	struct cf_conn *k = calloc(1, sizeof(*k));
	struct cf_req q;
	struct cf_reply rep;
	/* A legal Request may be answered late (cf_patience_ms). */
	unsigned ms = a->wait_timeout || a->want != W_REFUSE ? cf_patience_ms(c->o) : c->o->wait_ms;

	if (!k)
		return cf_fail(c, "", "out of memory");
	make_req(a, &q);
	if (a->fin_after || a->wait_timeout) {
		if (cf_connect(k, c)) {
			cf_fail(c, "no connection", "could not connect");
			goto out;
		}
		stall(c, k, &q, a->fin_after, ms, &rep);
	} else if (cf_mpa_try(k, c, &q, &rep, ms)) {
		cf_fail(c, "no connection", "could not connect or send");
		goto out;
	}
	if (a->want == W_EITHER && rep.out == CF_MPA_REJECT) {
		judge_refuse(c, k, &rep);
	} else if (a->want != W_REFUSE) {
		if (rep.out != CF_MPA_ACCEPT)
			cf_fail(c, cf_mpa_out_str(rep.out), "a legal Request was %s",
				cf_mpa_out_str(rep.out));
		else
			judge_accept(c, k, &q, &rep);
	} else {
		judge_refuse(c, k, &rep);
	}
out:
	cf_close(k);
	free(k);
}

#define ACC .want = W_ACCEPT
#define REF .want = W_REFUSE
#define R_ALL (IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ)
static const struct g1 a[] = {
	{ACC, .rev = V(1)},
	{ACC, .enhanced = V(0)},
	{ACC},
	{.want = W_EITHER, .rtr = V(IW_RTR_SEND)},
	{ACC, .rtr = V(IW_RTR_WRITE)},
	{ACC, .rtr = V(IW_RTR_READ)},
	{ACC, .rtr = V(R_ALL)},
	{ACC, .p2p = V(0), .rtr = V(0)},
	{ACC, .crc = V(0)},
	{ACC, .markers = true, .rtr = V(IW_RTR_READ)},
	{ACC, .rtr = V(IW_RTR_WRITE), .ird = V(0), .ord = V(0)},
	{ACC, .rtr = V(IW_RTR_WRITE), .ird = V(1), .ord = V(1)},
	{ACC, .rtr = V(IW_RTR_WRITE), .ird = V(32), .ord = V(32)},
	{ACC, .rtr = V(IW_RTR_WRITE), .ird = V(128), .ord = V(128)},
	{ACC, .rtr = V(IW_RTR_WRITE), .ird = V(IW_MPA_IRD_ORD_MAX), .ord = V(IW_MPA_IRD_ORD_MAX)},
	{ACC, .rev = V(1), .pd_len = V(0)},
	{ACC, .pd_len = V(252)},
	{ACC, .pd_len = V(255)},
	{ACC, .pd_len = V(256)},
	{ACC, .pd_len = V(300)},
	{ACC, .pd_len = V(512)},
	{REF, .pd_len = V(513)},
	{REF, .pd_len = V(2)},
	{ACC, .reserved = true},
	{REF, .bad_key = true},
	{REF, .rev = V(3)},
	{REF, .rev = V(0)},
	{REF, .trunc = V(12), .fin_after = true},
	{REF, .trunc = V(12), .wait_timeout = true},
	{ACC, .seg = 1},
	{REF, .trunc = V(0), .wait_timeout = true},
};

const struct cf_case cf_group1[] = {
	{"1.1", "MPA rev 1 Request", "RFC 5044 7.1", run, &a[0]},
	{"1.2", "rev 2 without the RFC 6581 block", "RFC 6581 5", run, &a[1]},
	{"1.3", "rev 2 enhanced, P2P, RTR WRITE+READ offered", "RFC 6581 7.1", run, &a[2]},
	{"1.4", "RTR SEND alone (accept, or reject if unsupported)", "RFC 6581 7.1", run, &a[3]},
	{"1.5", "RTR WRITE (zero-length Write) alone", "RFC 6581 7.1", run, &a[4]},
	{"1.6", "RTR READ (zero-length Read) alone", "RFC 6581 7.1", run, &a[5]},
	{"1.7", "RTR SEND+WRITE+READ combined", "RFC 6581 7.1", run, &a[6]},
	{"1.8", "enhanced without P2P", "RFC 6581 7.1", run, &a[7]},
	{"1.9", "CRC not requested", "RFC 5044 7.1.2", run, &a[8]},
	{"1.10", "markers requested (READ RTR answered with markers)", "RFC 5044 7.1.2", run, &a[9]},
	{"1.11", "IRD/ORD 0/0", "RFC 6581 7.1", run, &a[10]},
	{"1.12", "IRD/ORD 1/1", "RFC 6581 7.1", run, &a[11]},
	{"1.13", "IRD/ORD 32/32", "RFC 6581 7.1", run, &a[12]},
	{"1.14", "IRD/ORD 128/128", "RFC 6581 7.1", run, &a[13]},
	{"1.15", "IRD/ORD 0x3FFF (no negotiation)", "RFC 6581 7.1", run, &a[14]},
	{"1.16", "private data 0 octets (rev 1)", "RFC 5044 7.1.3", run, &a[15]},
	{"1.17", "PD_Length 252", "RFC 5044 7.1.3", run, &a[16]},
	{"1.18", "PD_Length 255", "RFC 5044 7.1.3", run, &a[17]},
	{"1.19", "PD_Length 256", "RFC 5044 7.1.3", run, &a[18]},
	{"1.20", "PD_Length 300", "RFC 5044 7.1.3", run, &a[19]},
	{"1.21", "PD_Length 512 (the maximum)", "RFC 5044 7.1.3", run, &a[20]},
	{"1.22", "PD_Length 513 refused", "RFC 5044 7.1.3", run, &a[21]},
	{"1.23", "enhanced with PD_Length 2 refused", "RFC 6581 5", run, &a[22]},
	{"1.24", "reserved flag bits set are ignored", "RFC 5044 7.1.2", run, &a[23]},
	{"1.25", "bad key refused", "RFC 5044 7.1.2", run, &a[24]},
	{"1.26", "revision 3 refused", "RFC 5044 7.1.2", run, &a[25]},
	{"1.27", "revision 0 refused", "RFC 5044 7.1.2", run, &a[26]},
	{"1.28", "truncated Request then FIN", "RFC 5044 7.1.1", run, &a[27]},
	{"1.29", "truncated Request, stalled (peer's timeout)", "RFC 5044 7.1.1", run, &a[28]},
	{"1.30", "Request dribbled one octet per segment", "RFC 5044 7.1", run, &a[29]},
	{"1.31", "no Request at all (peer's timeout)", "RFC 5044 7.1.1", run, &a[30]},
};
const size_t cf_group1_n = sizeof(cf_group1) / sizeof(cf_group1[0]);
