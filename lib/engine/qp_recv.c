/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting receives (iw_post_recv), and the receive hold, the RNR
 * emulation of IW_QP_CREATE_RECV_HOLD (verbs.h): the messages held for
 * receives not posted yet, delivered as receives are posted.
 *
 * Verbs applications written for InfiniBand count on RNR retry: a Send
 * that arrives before its receive is posted is retried by the sender's
 * HCA. iWARP has no such thing (RFC 5041 ends the connection with a "no
 * buffer" TERMINATE), so on such a QP the receiving side copies the
 * message aside instead, and the next receive posted takes it. Nothing of
 * this shows on the wire.
 *
 * Order: messages are held in MSN order and, while anything is held, new
 * ones are held too, so receives always complete in the order the peer
 * sent. Hence a receive posted while something is held is only ever
 * waiting for the message being assembled (the only one not done).
 *
 * Completion at post time, not at the next poll: iw_cq_push is then the
 * same path an arrival takes, so a solicited-only notification fires for
 * an SE message when it becomes visible, and a thread asleep on the
 * completion channel (which never polls) is woken.
 *
 * Memory comes from the context's allocator and is bounded per QP; no
 * room, no memory: the "no buffer" TERMINATE the RFC gives without hold.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "base/alloc.h"
#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"
#include "engine/wr.h"
#include "base/visibility.h"
#include "wire/opcode.h"

bool iw_qp_hold_on(const struct iw_qp *qp)
{
	return (qp->create_flags & IW_QP_CREATE_RECV_HOLD) && !qp->srq;
}

/* The fewest octets a message costs the stream (a zero-length Send: MPA
 * length, DDP/RDMAP header, CRC), and the most payload one segment's
 * header may ask the hold for (ULPDU_Length is 16 bits). */
#define HOLD_FPDU_MIN 24u
#define HOLD_SEG_MAX 65536u

#define PEEK(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Receives posted that take messages without the hold: only while
 * nothing is held (after that, messages are held behind what is). Only
 * this reader adds held messages, so a hold it sees empty stays so; a
 * receive it sees posted beside held messages is one that iw_post_recv is
 * about to give them. */
static uint64_t posted_free(const struct iw_qp *qp)
{
	if (PEEK(qp->hold.num))
		return 0;
	return (uint32_t)(PEEK(qp->rq_tail) - PEEK(qp->rq_head));
}

/* Messages that may still arrive: the hold's free places plus those. */
static uint64_t room_msgs(const struct iw_qp *qp)
{
	uint64_t max = PEEK(qp->hold.max_num), num = PEEK(qp->hold.num);
	uint64_t free_msgs = max > num ? max - num : 0;
	return free_msgs + posted_free(qp);
}

/* Octets a read may bring within the byte limit. A segment's header
 * counts its whole payload against the limit when it is parsed, and a
 * read can end early in the last segment it starts, so a read of n
 * octets counts at most n + HOLD_SEG_MAX: reading no more than that
 * leaves, the peer meets TCP's window, never "no buffer" (qperf's
 * rc_bi_bw did, on a loaded machine: a read that finished one message
 * brought the next one's header past the limit). Reads keep room for the
 * fewest octets of the messages posted receives take. A message that is
 * all the hold has, still arriving, is read on: nothing can make room
 * for it, and only its own growth past the limit ends the connection (a
 * single message longer than the limit). */
static uint64_t room_bytes(const struct iw_qp *qp)
{
	if (PEEK(qp->hold.num) == 1 && PEEK(qp->hold.assembling))
		return UINT64_MAX;
	uint64_t mb = PEEK(qp->hold.max_bytes), b = PEEK(qp->hold.bytes);
	uint64_t left = mb > b ? mb - b : 0;
	uint64_t r = left > HOLD_SEG_MAX ? left - HOLD_SEG_MAX : 0;
	uint64_t p = posted_free(qp) * HOLD_FPDU_MIN;
	return r > p ? r : p;
}

static size_t room_octets(const struct iw_qp *qp)
{
	uint64_t m = room_msgs(qp), b = room_bytes(qp);
	uint64_t o = m > UINT64_MAX / HOLD_FPDU_MIN ? UINT64_MAX : m * HOLD_FPDU_MIN;
	if (o > b)
		o = b;
	return o > SIZE_MAX ? SIZE_MAX : (size_t)o;
}

/* Starved: say so before looking again, as iw_post_recv adds room
 * before it looks at the flag, so that one of the two sees the other. */
size_t iw_qp_rx_room(struct iw_qp *qp)
{
	if (!iw_qp_hold_on(qp))
		return SIZE_MAX;
	size_t r = room_octets(qp);
	if (r)
		return r;
	atomic_store(&qp->hold.starved, true);
	atomic_thread_fence(memory_order_seq_cst);
	r = room_octets(qp);
	if (r)
		atomic_store(&qp->hold.starved, false);
	return r;
}

/* iw_post_recv's side of the starved flag: room was added (under the
 * lock just released) before the flag is looked at. */
static bool hold_unstarve(struct iw_qp *qp)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&qp->hold.starved, memory_order_relaxed) &&
	       atomic_exchange(&qp->hold.starved, false);
}

/* A new held message at the tail, or "no buffer". */
static uint16_t held_new(struct iw_qp *qp, unsigned op, struct iw_held **out)
{
	if (qp->hold.num >= qp->hold.max_num)
		return IW_TERM_DDP_U_NO_BUF;
	struct iw_held *h = iw_calloc(qp->context->alloc, 1, sizeof(*h));
	if (!h)
		return IW_TERM_DDP_U_NO_BUF;
	h->op = op;
	if (qp->hold.tail)
		qp->hold.tail->next = h;
	else
		qp->hold.head = h;
	qp->hold.tail = h;
	qp->hold.num++;
	qp->hold.assembling = true;
	*out = h;
	return 0;
}

/* Count the message's octets up to end against the byte limit (the
 * limit is on what headers announced, so that room_bytes can bound what a
 * read adds). */
static bool held_reserve(struct iw_qp *qp, struct iw_held *h, uint64_t end)
{
	uint64_t mb = qp->hold.max_bytes, b = qp->hold.bytes, add = end - h->resv;
	if (b > mb || add > mb - b)
		return false;
	qp->hold.bytes = b + add;
	h->resv = end;
	return true;
}

/* Room for end octets: just that for the message's last segment, else
 * doubling (a message of many segments is not copied once per segment).
 * Gaps a segment's MO leaves read as zeros. */
static bool held_grow(struct iw_qp *qp, struct iw_held *h, uint64_t end, bool last)
{
	uint64_t cap = h->cap * 2 > end && !last ? h->cap * 2 : end;
	uint8_t *p = iw_realloc(qp->context->alloc, h->data, (size_t)cap);
	if (!p)
		return false;
	memset(p + h->cap, 0, (size_t)(cap - h->cap));
	h->data = p;
	h->cap = cap;
	return true;
}

uint16_t iw_qp_hold_seg_locked(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	struct iw_held *h = qp->hold.tail;
	if (h && !h->done && h->op != op)
		return IW_TERM_RDMAP_OPCODE; /* another message inside this one */
	if (!h || h->done) {
		uint16_t t = held_new(qp, op, &h);
		if (t)
			return t;
		h->seg = *s;
	}
	/* Immediate Data carries no payload to keep (its value is in the
	 * header): the decoder drops any. */
	bool payload = iw_opcode_has(op, IW_OPF_SEND) && s->payload_len;
	uint64_t end = (uint64_t)s->ddp.mo + s->payload_len;
	if (payload && end > h->resv && !held_reserve(qp, h, end))
		return IW_TERM_DDP_U_NO_BUF;
	if (payload && end > h->cap && !held_grow(qp, h, end, iw_ddp_last(&s->ddp)))
		return IW_TERM_DDP_U_NO_BUF;
	qp->in.held = true;
	qp->in.dst = payload ? h->data + s->ddp.mo : NULL;
	return 0;
}

/* The completion fields of a message whose last segment is s. */
static uint16_t held_finish(struct iw_qp *qp, struct iw_held *h, const struct iw_ddp_seg *s)
{
	h->wc_op = IW_WC_RECV;
	if (iw_opcode_has(h->op, IW_OPF_SE))
		h->wc_flags |= IW_WC_SOLICITED;
	if (!iw_opcode_has(h->op, IW_OPF_SEND)) {
		memcpy(&h->imm, s->rdmap.u.imm, 4); /* network order, as verbs */
		h->wc_op = IW_WC_RECV_RDMA_WITH_IMM;
		h->wc_flags |= IW_WC_WITH_IMM;
		h->len = 0;
	}
	/* The STag goes now, as it would have with a receive posted. */
	if (iw_opcode_has(h->op, IW_OPF_INV)) {
		int t = iw_mem_invalidate(&qp->context->mem, &qp->mreq, s->ddp.inv_stag, true);
		if (t)
			return (uint16_t)t;
		h->wc_flags |= IW_WC_WITH_INV;
		h->inv = s->ddp.inv_stag;
	}
	h->done = true;
	qp->hold.assembling = false;
	return 0;
}

uint16_t iw_qp_hold_end_locked(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	struct iw_held *h = qp->hold.tail;
	uint64_t end = (uint64_t)s->ddp.mo + s->payload_len;
	if (end > h->len) {
		h->len = end;
		h->seg = *s;
	}
	if (!iw_ddp_last(&s->ddp))
		return 0;
	qp->rx_msn[IW_QN_SEND]++;
	uint16_t t = held_finish(qp, h, s);
	if (!t)
		iw_qp_hold_deliver_locked(qp);
	return t;
}

/* A held message too long for the receive at the RQ's head: that receive
 * is at fault (it completes with the status an overlong Send gives it)
 * and the QP ends as it would have at the message's arrival. */
static void deliver_too_long(struct iw_qp *qp, struct iw_held *h)
{
	iw_rwqe_move(&qp->in.wqe, &qp->rq[iw_qp_slot(qp->rq_head, qp->rq_size)]);
	qp->rq_head++;
	qp->in.rwqe = &qp->in.wqe.w;
	qp->in.have_rwqe = true;
	qp->in.rwqe_fault = iw_term_wc_status(IW_TERM_DDP_U_TOO_LONG, false);
	if (qp->state == IW_QPS_ERR) {
		iw_qp_hold_free_locked(qp); /* after a close: nobody to tell */
		return;
	}
	iw_qp_terminate_locked(qp, IW_TERM_DDP_U_TOO_LONG, &h->seg,
			       "a held message is longer than the receive posted for it");
}

static void deliver_one(struct iw_qp *qp, struct iw_held *h)
{
	struct iw_rwqe *w = &qp->rq[iw_qp_slot(qp->rq_head, qp->rq_size)];
	struct iw_wc wc = {
		.wr_id = w->wr_id,
		.status = IW_WC_SUCCESS,
		.vendor_err = IW_TERM_NONE,
		.opcode = h->wc_op,
		.byte_len = (uint32_t)h->len,
		.imm_data = h->imm,
		.invalidated_rkey = h->inv,
		.qp_num = qp->qp_num,
		.wc_flags = h->wc_flags,
	};
	iw_rwqe_scatter(w, 0, h->data, h->len);
	qp->rq_head++;
	qp->hold.head = h->next;
	if (!qp->hold.head)
		qp->hold.tail = NULL;
	iw_qp_held_free_locked(qp, h);
	iw_rwqe_release(w); /* before the completion is visible (dereg may follow) */
	iw_cq_push(qp->recv_cq, &wc, wc.wc_flags & IW_WC_SOLICITED);
}

void iw_qp_hold_deliver_locked(struct iw_qp *qp)
{
	/* In ERR the hold is what a close left (qp.c, hold_at_err). */
	while (qp->hold.head && qp->hold.head->done && qp->rq_head != qp->rq_tail) {
		struct iw_held *h = qp->hold.head;
		if (h->len > qp->rq[iw_qp_slot(qp->rq_head, qp->rq_size)].len) {
			deliver_too_long(qp, h);
			return;
		}
		deliver_one(qp, h);
	}
}

/* ------------------------------------------------------------ posting */

IW_EXPORT int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr)
{
	int rc = 0;

	if (!qp)
		return EINVAL;
	if (qp->srq) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	iw_qp_lock(qp);
	for (; wr; wr = wr->next) {
		if (qp->state == IW_QPS_RESET) {
			rc = EINVAL;
			break;
		}
		if (qp->rq_tail - qp->rq_head >= qp->cap.max_recv_wr || (!qp->rq && iw_qp_rq_alloc_locked(qp))) {
			rc = ENOMEM;
			break;
		}
		rc = iw_rwqe_fill(&qp->rq[iw_qp_slot(qp->rq_tail, qp->rq_size)], qp->context, qp->pd, wr,
				  qp->cap.max_recv_sge);
		if (rc)
			break;
		qp->rq_tail++;
	}
	/* Held messages first (in ERR, those a close left), then, in ERR,
	 * the rest flush at once: receives never wait for the transmit
	 * queue. */
	iw_qp_hold_deliver_locked(qp);
	if (qp->state == IW_QPS_ERR)
		iw_qp_flush_rq_locked(qp);
	/* A held message too long for its receive ended the QP just now:
	 * the glue sends the TERMINATE. */
	bool wake = qp->wake && (qp->events & IW_QPE_ERROR);
	iw_qp_unlock(qp);
	/* The receiving thread stopped for want of room: read again. Only a
	 * QP with a hold can starve, and the fence is not free on the
	 * latency path of every other post. */
	if (iw_qp_hold_on(qp) && hold_unstarve(qp))
		wake = qp->wake != NULL;
	if (wake)
		qp->wake(qp, false);
	if (rc && bad_wr)
		*bad_wr = wr;
	return rc;
}
