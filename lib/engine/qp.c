/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP objects, state transitions, posting, completion and flushing
 * (qp.h). The wire side lives in qp_tx.c and qp_rx.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"
#include "base/alloc.h"
#include "engine/srq.h"
#include "base/visibility.h"
#include "engine/wr.h"

IW_EXPORT const char *iw_qp_state_str(enum iw_qp_state s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	if ((unsigned)s < sizeof(names) / sizeof(names[0]))
		return names[s];
	return "unknown";
}

IW_EXPORT uint32_t iw_qp_num(const struct iw_qp *qp)
{
	return qp ? qp->qp_num : 0;
}

IW_EXPORT void *iw_qp_get_context(const struct iw_qp *qp)
{
	return qp ? qp->qp_context : NULL;
}

/* One of the context's IW_MAX_QP live QPs, or false when all are taken. */
static bool qp_slot_take(struct iw_context *ctx)
{
	if (atomic_fetch_add(&ctx->num_qps, 1) < IW_MAX_QP)
		return true;
	atomic_fetch_sub(&ctx->num_qps, 1);
	return false;
}

/* ------------------------------------------------------------ hold memory */

/* The held messages' memory (their delivery is qp_recv.c's): here, since
 * a QP that ends frees them wherever it is. */
void iw_qp_held_free_locked(struct iw_qp *qp, struct iw_held *h)
{
	qp->hold.num--;
	qp->hold.bytes -= h->resv;
	iw_free(qp->context->alloc, h->data);
	iw_free(qp->context->alloc, h);
}

void iw_qp_hold_free_locked(struct iw_qp *qp)
{
	if (qp->in.held) {
		qp->in.held = false;
		qp->in.dst = NULL; /* it pointed into hold.tail */
	}
	while (qp->hold.head) {
		struct iw_held *h = qp->hold.head;
		qp->hold.head = h->next;
		iw_qp_held_free_locked(qp, h);
	}
	qp->hold.tail = NULL;
	qp->hold.assembling = false;
}

/* The QP is in ERR. Held messages were never completions: nothing to
 * flush. Without a TERMINATE (the connection closed or was reset, or the
 * application failed the QP) they arrived whole before the end, as into
 * receives posted in time, so they stay for the receives posted next
 * (qp_recv.c): fio's client disconnects as soon as its last Send is
 * written. After a TERMINATE, or with a message cut short, they go. */
static void hold_at_err(struct iw_qp *qp)
{
	struct iw_held *t = qp->hold.tail;
	if (qp->terminated || (t && !t->done)) {
		iw_qp_hold_free_locked(qp);
		return;
	}
	qp->in.held = false;
	qp->in.dst = NULL;
}

/* ------------------------------------------------------------ create */

static int cap_valid(const struct iw_qp_init_attr *a)
{
	const struct iw_qp_cap *c = &a->cap;
	if (c->max_send_wr == 0 || c->max_send_wr > IW_MAX_QP_WR)
		return 0;
	if (!a->srq && (c->max_recv_wr == 0 || c->max_recv_wr > IW_MAX_QP_WR))
		return 0;
	if (c->max_send_sge > IW_MAX_SGE || c->max_recv_sge > IW_MAX_SGE)
		return 0;
	return c->max_inline_data <= IW_MAX_INLINE;
}

/* Ring indexes run freely over 2^32 and pick their slot by mask (iw_qp_slot): the
 * slot sequence only stays continuous across the wrap if the ring size
 * divides 2^32. Capacity is still the requested number of WRs. */
static uint32_t ring_size(uint32_t n)
{
	uint32_t r = 1;
	while (r < n)
		r <<= 1;
	return r;
}

/* The rings are allocated at the first post to them, not at creation: an
 * idle connection (a target's thousands waiting for their host) pays for
 * no WQE slots until it is used (issue 13). The sizes are fixed now. */
static void qp_size_rings(struct iw_qp *qp)
{
	qp->sq_size = ring_size(qp->cap.max_send_wr);
	if (!qp->srq)
		qp->rq_size = ring_size(qp->cap.max_recv_wr);
	/* The ORQ and IRQ are sized when the connection negotiates ORD and
	 * IRD (iw_qp_start): most of IW_MAX_ORD_IRD would sit unused. */
}

/* n WQEs of elem octets and their SGE storage, or NULL. */
static void *ring_alloc(struct iw_qp *qp, uint32_t n, size_t elem, struct iw_wqe_sges *st,
			uint32_t max_sge)
{
	const struct iw_alloc_ops *a = qp->context->alloc;
	void *ring = iw_calloc(a, n, elem);
	if (ring && iw_wqe_sges_alloc(st, a, n, max_sge)) {
		iw_free(a, ring);
		ring = NULL;
	}
	return ring;
}

static int sq_alloc(struct iw_qp *qp)
{
	struct iw_swqe *sq = ring_alloc(qp, qp->sq_size, sizeof(*sq), &qp->sq_sges,
					qp->cap.max_send_sge);
	for (uint32_t i = 0; sq && i < qp->sq_size; i++)
		iw_wqe_sges_slice(&qp->sq_sges, i, qp->cap.max_send_sge, &sq[i].sge,
				  &sq[i].sge_ptr, &sq[i].sge_mr);
	qp->sq = sq;
	return sq ? 0 : ENOMEM;
}

int iw_qp_rq_alloc_locked(struct iw_qp *qp)
{
	struct iw_rwqe *rq = ring_alloc(qp, qp->rq_size, sizeof(*rq), &qp->rq_sges,
					qp->cap.max_recv_sge);
	for (uint32_t i = 0; rq && i < qp->rq_size; i++)
		iw_wqe_sges_slice(&qp->rq_sges, i, qp->cap.max_recv_sge, &rq[i].sge,
				  &rq[i].sge_ptr, &rq[i].sge_mr);
	qp->rq = rq;
	return rq ? 0 : ENOMEM;
}

/* Everything the QP allocated after its creation. */
static void qp_free_parts(struct iw_qp *qp)
{
	const struct iw_alloc_ops *a = qp->context->alloc;
	iw_qp_hold_free_locked(qp); /* nobody else holds a pointer to it now */
	iw_free(a, qp->sq);
	iw_free(a, qp->rq);
	iw_wqe_sges_free(&qp->sq_sges);
	iw_wqe_sges_free(&qp->rq_sges);
	iw_free(a, qp->orq);
	iw_free(a, qp->irq);
	iw_free(a, qp->txq);
}

static void qp_free(struct iw_qp *qp)
{
	qp_free_parts(qp);
	iw_free(qp->context->alloc, qp);
}

static bool create_attr_ok(const struct iw_pd *pd, const struct iw_qp_init_attr *attr)
{
	return pd && attr && attr->send_cq && attr->recv_cq && attr->qp_type == IW_QPT_RC &&
	       !(attr->create_flags & ~(uint32_t)(IW_QP_CREATE_RFC7306 | IW_QP_CREATE_RECV_HOLD |
						 IW_QP_CREATE_LOOP_RX)) &&
	       !((attr->create_flags & IW_QP_CREATE_RECV_HOLD) && attr->srq) && cap_valid(attr);
}

/* A zeroed QP's fields from its attributes, before it takes a slot. */
static void qp_init_attr(struct iw_qp *qp, struct iw_pd *pd, const struct iw_qp_init_attr *attr)
{
	qp->context = pd->context;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_context = attr->qp_context;
	qp->create_flags = attr->create_flags;
	qp->sq_sig_all = attr->sq_sig_all != 0;
	qp->cap = attr->cap;
	if (qp->cap.max_send_sge == 0)
		qp->cap.max_send_sge = 1;
	if (qp->cap.max_recv_sge == 0)
		qp->cap.max_recv_sge = 1;
	/* Every QP inlines at least 256 octets (MPI stacks broke at 64). */
	if (qp->cap.max_inline_data < 256)
		qp->cap.max_inline_data = 256;
	qp_size_rings(qp);
	qp->hold.max_num = qp->cap.max_recv_wr;
	qp->hold.max_bytes = IW_RECV_HOLD_BYTES_DEFAULT;
}

/* Its number, lock and state, and the references on what it uses. */
static void qp_init_rest(struct iw_qp *qp, struct iw_pd *pd, const struct iw_qp_init_attr *attr)
{
	qp->qp_num = atomic_fetch_add(&pd->context->next_qpn, 1) + 1;
	qp->mreq = (struct iw_mem_req){.pd = pd, .qp_num = qp->qp_num, .bad_stag = &qp->bad_stag};
	qp->max_rd_atomic = qp->max_dest_rd_atomic = 16;
	qp->term = IW_TERM_NONE;
	pthread_mutex_init(&qp->lock, NULL);
	iw_qp_set_state(qp, IW_QPS_RESET);
	qp->init_attr = *attr;
	qp->init_attr.cap = qp->cap;
	atomic_fetch_add(&pd->use, 1);
	atomic_fetch_add(&qp->send_cq->use, 1);
	atomic_fetch_add(&qp->recv_cq->use, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->use, 1);
}

/* The references qp_init_rest took. */
static void qp_drop_uses(struct iw_qp *qp)
{
	atomic_fetch_sub(&qp->pd->use, 1);
	atomic_fetch_sub(&qp->send_cq->use, 1);
	atomic_fetch_sub(&qp->recv_cq->use, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->use, 1);
}

IW_EXPORT struct iw_qp *iw_create_qp(struct iw_pd *pd, struct iw_qp_init_attr *attr)
{
	if (!create_attr_ok(pd, attr)) {
		errno = EINVAL;
		return NULL;
	}
	struct iw_qp *qp = iw_calloc(pd->context->alloc, 1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp_init_attr(qp, pd, attr);
	if (!qp_slot_take(qp->context)) {
		qp_free(qp);
		errno = ENOMEM;
		return NULL;
	}
	if (iw_qp_polled(qp) && iw_qp_poll_join(qp)) {
		atomic_fetch_sub(&qp->context->num_qps, 1);
		qp_free(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp_init_rest(qp, pd, attr);
	return qp;
}

#ifdef IW_FUZZING
/* Fuzzing builds only (-DIW_FUZZING, never the library): see qp.h. */
int iw_fuzz_qp_renew(struct iw_qp *qp, struct iw_qp_init_attr *attr)
{
	struct iw_pd *pd = qp->pd;

	if (qp->state != IW_QPS_RESET || qp->connected || qp->glue || qp->context->poll_mode)
		return EBUSY;
	if (!create_attr_ok(pd, attr))
		return EINVAL;
	iw_qp_lock(qp);
	iw_qp_txq_discard_locked(qp); /* as iw_destroy_qp */
	iw_qp_unlock(qp);
	qp_drop_uses(qp);
	iw_async_forget(qp->context, qp);
	pthread_mutex_destroy(&qp->lock);
	qp_free_parts(qp);
	memset(qp, 0, sizeof(*qp));
	qp_init_attr(qp, pd, attr);
	qp_init_rest(qp, pd, attr);
	return 0;
}
#endif

/* Destroy: the caller (or iw_cm_destroy_qp) has detached the connection.
 * Outstanding WRs are flushed first so no completion is lost. */
IW_EXPORT int iw_destroy_qp(struct iw_qp *qp)
{
	if (!qp)
		return 0;
	if (qp->glue)
		return EBUSY; /* still owned by a CM id: use iw_cm_destroy_qp */
	if (iw_qp_polled(qp))
		iw_qp_poll_leave(qp); /* waits for pollers inside */
	iw_qp_lock(qp);
	/* Unsent Read Responses hold references on their source MRs. */
	iw_qp_txq_discard_locked(qp);
	qp->rx_direct_busy = false; /* no glue: nobody is receiving */
	if (qp->state != IW_QPS_RESET) {
		iw_qp_set_state(qp, IW_QPS_ERR);
		iw_qp_flush_locked(qp);
	}
	iw_qp_unlock(qp);
	qp_drop_uses(qp);
	/* Queued events must not hand the application a freed QP. */
	iw_async_forget(qp->context, qp);
	atomic_fetch_sub(&qp->context->num_qps, 1);
	pthread_mutex_destroy(&qp->lock);
	qp_free(qp);
	return 0;
}

/* ------------------------------------------------------------ modify */

/* Transitions an application may request (rdma-core's table, trimmed to
 * RC and to what an iWARP QP driven by the CM can do). */
static bool transition_ok(enum iw_qp_state cur, enum iw_qp_state next)
{
	if (next == IW_QPS_ERR || next == IW_QPS_RESET)
		return true;
	switch (cur) {
	case IW_QPS_RESET:
		return next == IW_QPS_INIT;
	case IW_QPS_INIT:
		return next == IW_QPS_INIT || next == IW_QPS_RTR;
	case IW_QPS_RTR:
		return next == IW_QPS_RTS;
	case IW_QPS_RTS:
		return next == IW_QPS_RTS || next == IW_QPS_SQD;
	case IW_QPS_SQD:
		return next == IW_QPS_RTS || next == IW_QPS_SQD;
	case IW_QPS_SQE:
		return next == IW_QPS_RTS;
	default:
		return false;
	}
}

static void reset_locked(struct iw_qp *qp)
{
	iw_qp_flush_locked(qp);
	iw_qp_hold_free_locked(qp); /* kept at ERR for receives; not past RESET */
	qp->sq_head = qp->sq_tail = qp->sq_next = 0;
	qp->rq_head = qp->rq_tail = 0;
	qp->orq_head = qp->orq_cnt = 0;
	qp->irq_head = qp->irq_cnt = 0;
	qp->connected = qp->terminated = false;
	qp->rtr_wait = qp->rtr_pending = qp->rtr_read_resp = qp->rtr_read_sent = false;
	qp->wake_pending = false;
	qp->last_wqe_raised = false;
	qp->tx_cur = IW_TX_NONE;
	qp->rx_direct_busy = false;
	qp->term = IW_TERM_NONE;
	qp->term_from_peer = false;
	memset(&qp->in, 0, sizeof(qp->in));
}

static int modify_locked(struct iw_qp *qp, struct iw_qp_attr *attr, int mask)
{
	if (mask & IW_QP_CUR_STATE && attr->cur_qp_state != qp->state)
		return EINVAL;
	if (mask & IW_QP_MAX_QP_RD_ATOMIC) {
		if (attr->max_rd_atomic > IW_MAX_ORD_IRD)
			return EINVAL;
		qp->max_rd_atomic = attr->max_rd_atomic;
	}
	if (mask & IW_QP_MAX_DEST_RD_ATOMIC) {
		if (attr->max_dest_rd_atomic > IW_MAX_ORD_IRD)
			return EINVAL;
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	}
	if (mask & IW_QP_ACCESS_FLAGS)
		qp->access_flags = attr->qp_access_flags;
	if (!(mask & IW_QP_STATE))
		return 0;
	if (!transition_ok(qp->state, attr->qp_state))
		return EINVAL;
	if (attr->qp_state == IW_QPS_ERR) {
		iw_qp_set_error_locked(qp);
		return 0;
	}
	if (attr->qp_state == IW_QPS_RESET) {
		if (qp->connected)
			return EBUSY; /* disconnect first */
		reset_locked(qp);
	}
	bool to_sqd = attr->qp_state == IW_QPS_SQD && qp->state != IW_QPS_SQD;
	iw_qp_set_state(qp, attr->qp_state);
	if (to_sqd) {
		qp->sqd_pending = true;
		iw_qp_check_drained_locked(qp);
	} else if (attr->qp_state == IW_QPS_RTS) {
		qp->events |= IW_QPE_TX; /* back from SQD: resume sending */
	}
	return 0;
}

IW_EXPORT int iw_modify_qp(struct iw_qp *qp, struct iw_qp_attr *attr, int attr_mask)
{
	if (!qp || !attr)
		return EINVAL;
	if (attr_mask & ~(IW_QP_STATE | IW_QP_CUR_STATE | IW_QP_ACCESS_FLAGS |
			  IW_QP_MAX_QP_RD_ATOMIC | IW_QP_MAX_DEST_RD_ATOMIC))
		return EINVAL;
	iw_qp_lock(qp);
	int rc = modify_locked(qp, attr, attr_mask);
	iw_qp_unlock(qp);
	if (!rc && qp->wake && (qp->events & (IW_QPE_ERROR | IW_QPE_TX)))
		qp->wake(qp, false);
	return rc;
}

IW_EXPORT int iw_query_qp(struct iw_qp *qp, struct iw_qp_attr *attr, int attr_mask,
			  struct iw_qp_init_attr *init_attr)
{
	(void)attr_mask; /* everything is cheap to report */
	if (!qp || !attr)
		return EINVAL;
	iw_qp_lock(qp);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = attr->cur_qp_state = qp->state;
	attr->qp_access_flags = qp->access_flags;
	attr->cap = qp->cap;
	attr->max_rd_atomic = qp->connected ? (uint8_t)qp->conn.ord : qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->connected ? (uint8_t)qp->conn.ird : qp->max_dest_rd_atomic;
	if (init_attr)
		*init_attr = qp->init_attr;
	iw_qp_unlock(qp);
	return 0;
}

/* ------------------------------------------------------------ completion */

static enum iw_wc_opcode wc_opcode(enum iw_wr_opcode op)
{
	const struct iw_wr_info *i = iw_wr_info(op);
	return i ? i->wc : IW_WC_SEND;
}

static void complete_swqe(struct iw_qp *qp, struct iw_swqe *w)
{
	/* Errors are always reported, successes only when signaled. */
	bool report = w->signaled || w->status != IW_WC_SUCCESS;
	struct iw_wc wc = {
		.wr_id = w->wr_id,
		.status = w->status,
		.opcode = wc_opcode(w->opcode),
		.vendor_err = w->vendor_err,
		.byte_len = (uint32_t)w->len,
		.qp_num = qp->qp_num,
	};
	/* MR references go before the completion is visible: an application
	 * that polled it may deregister the memory at once. */
	iw_swqe_release(w, qp->context->alloc);
	if (report)
		iw_cq_push(qp->send_cq, &wc, false);
}

/* Complete WQEs from the head while they are done: the SQ completes in
 * posting order whatever finishes first (a Send after a Read waits). */
void iw_qp_complete_sq_locked(struct iw_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		struct iw_swqe *w = &qp->sq[iw_qp_slot(qp->sq_head, qp->sq_size)];
		if (!w->done)
			break;
		complete_swqe(qp, w);
		qp->sq_head++;
	}
	iw_qp_check_drained_locked(qp);
}

/* SQD reached its point: every WQE started before the transition is
 * complete and nothing is half sent. Raised once per transition. */
void iw_qp_check_drained_locked(struct iw_qp *qp)
{
	if (qp->state != IW_QPS_SQD || !qp->sqd_pending || qp->tx_cur != IW_TX_NONE ||
	    qp->sq_head != qp->sq_next)
		return;
	qp->sqd_pending = false;
	struct iw_async_event ev = {.event_type = IW_EVENT_SQ_DRAINED};
	ev.element.qp = qp;
	iw_async_raise(qp->context, &ev);
}

static void flush_rwqe(struct iw_qp *qp, struct iw_rwqe *w, enum iw_wc_status st)
{
	struct iw_wc wc = {
		.wr_id = w->wr_id,
		.status = st ? st : IW_WC_WR_FLUSH_ERR,
		.opcode = IW_WC_RECV,
		.vendor_err = qp->term,
		.qp_num = qp->qp_num,
	};
	iw_rwqe_release(w); /* before the completion is visible */
	iw_cq_push(qp->recv_cq, &wc, false);
}

/* A QP on an SRQ is in ERR and has completed the SRQ WQE it was filling:
 * it takes no more, and the application may destroy it (verbs' "wait for
 * LAST_WQE_REACHED, then destroy"). Once per entry into ERR, and never
 * before that completion; a lost connection flushes before the CM raises
 * DISCONNECTED, so the event is queued ahead of it. */
static void last_wqe_reached(struct iw_qp *qp)
{
	if (!qp->srq || qp->state != IW_QPS_ERR || qp->last_wqe_raised)
		return;
	qp->last_wqe_raised = true;
	struct iw_async_event ev = {.event_type = IW_EVENT_QP_LAST_WQE_REACHED,
				    .term = qp->term,
				    .term_from_peer = qp->term_from_peer};
	ev.element.qp = qp;
	iw_async_raise(qp->context, &ev);
}

/* The receive side: the message being received, then the RQ, in order.
 * Nothing on the transmit queue points into receive WQEs, so this runs as
 * soon as the QP is in ERR, unless the glue may be receiving into the
 * current destination (rx_direct_busy). */
void iw_qp_flush_rq_locked(struct iw_qp *qp)
{
	if (qp->rx_direct_busy)
		return; /* iw_qp_rx_direct_settle_locked runs it */
	if (qp->in.mr) {
		iw_mem_put_placed(qp->in.mr);
		qp->in.mr = NULL;
	}
	/* A Read Request or atomic checked at its header whose segment never
	 * ended (CRC error, connection lost) still holds its source MR (an
	 * atomic's placement never happened). */
	if (qp->in.irqe.mr) {
		if (qp->in.irqe.atomic)
			iw_mem_placed(qp->in.irqe.mr);
		iw_mem_put(qp->in.irqe.mr);
		qp->in.irqe.mr = NULL;
	}
	if (qp->in.have_rwqe) {
		/* The receive being filled may be the WR at fault. */
		flush_rwqe(qp, qp->in.rwqe, qp->in.rwqe_fault);
		qp->in.have_rwqe = false;
	}
	while (qp->rq_head != qp->rq_tail) {
		flush_rwqe(qp, &qp->rq[iw_qp_slot(qp->rq_head, qp->rq_size)], IW_WC_WR_FLUSH_ERR);
		qp->rq_head++;
	}
	hold_at_err(qp);
	last_wqe_reached(qp);
}

void iw_qp_rx_direct_settle_locked(struct iw_qp *qp)
{
	if (!qp->rx_direct_busy)
		return;
	qp->rx_direct_busy = false;
	if (qp->state == IW_QPS_ERR)
		iw_qp_flush_rq_locked(qp);
}

/* Flush everything outstanding, in order: the SQ from its head (WQEs that
 * finished keep their status: a Send already written behind an unanswered
 * Read reports success), the IRQ's references, then the receive side.
 * Each WQE completes exactly once. Must not run while the transmit queue
 * still points into WQE memory. */
void iw_qp_flush_locked(struct iw_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		struct iw_swqe *w = &qp->sq[iw_qp_slot(qp->sq_head, qp->sq_size)];
		if (!w->done) {
			w->status = IW_WC_WR_FLUSH_ERR;
			w->vendor_err = qp->term;
		}
		complete_swqe(qp, w);
		qp->sq_head++;
	}
	qp->sq_next = qp->sq_tail;
	qp->inv_wait = false; /* a waiting LOCAL_INV flushed above */
	qp->tx_cur = IW_TX_NONE;
	qp->orq_cnt = 0;
	while (qp->irq_cnt) {
		iw_mem_put(qp->irq[qp->irq_head % qp->irq_size].mr);
		qp->irq_head++;
		qp->irq_cnt--;
	}
	iw_qp_flush_rq_locked(qp);
}

void iw_qp_set_error_locked(struct iw_qp *qp)
{
	if (qp->state == IW_QPS_ERR)
		return;
	iw_qp_set_state(qp, IW_QPS_ERR);
	qp->events |= IW_QPE_ERROR;
	/* The transmit queue may reference send WQE payload: flush the SQ
	 * once it is written or discarded (iw_qp_tx_sent / iw_qp_conn_lost);
	 * the receive side at once. */
	if (!qp->txq || qp->txq->first == qp->txq->cnt)
		iw_qp_flush_locked(qp);
	else
		iw_qp_flush_rq_locked(qp);
}

/* ------------------------------------------------------------ posting */

static bool sq_can_post(enum iw_qp_state s)
{
	return s == IW_QPS_RTS || s == IW_QPS_SQD || s == IW_QPS_ERR;
}

static bool flushing_now(const struct iw_qp *qp)
{
	return qp->state == IW_QPS_ERR && (!qp->txq || qp->txq->first == qp->txq->cnt);
}

/* Reads posted one call at a time while earlier ones stream in wait and
 * leave together instead of in a 44-octet write each (which on loopback
 * also cost the peer's receive processing and a responder wake-up per
 * request): held while at least IW_READ_HOLD_MIN responses are owed, so
 * the peer still has those to send meanwhile, and until IW_READ_HOLD_BATCH
 * are waiting. An application that keeps ORD full posts one Read per
 * completion: those go sixteen at a time too, with the window still at
 * least ORD - 16 deep. */
#define IW_READ_HOLD_MIN 8
#define IW_READ_HOLD_BATCH 16

bool iw_qp_reads_held_locked(const struct iw_qp *qp)
{
	uint32_t held = qp->sq_tail - qp->sq_next;
	if (qp->orq_cnt < IW_READ_HOLD_MIN || held >= IW_READ_HOLD_BATCH)
		return false;
	for (uint32_t i = qp->sq_next; i != qp->sq_tail; i++)
		if (qp->sq[iw_qp_slot(i, qp->sq_size)].opcode != IW_WR_RDMA_READ)
			return false;
	return true;
}

/* iw_post_send, and iw_bind_mw's one WR: verb is IW_SEND_VERB_BIND for
 * the latter, which only it may set. */
static int post_send(struct iw_qp *qp, struct iw_send_wr *wr, struct iw_send_wr **bad_wr,
		     unsigned verb)
{
	int rc = 0;

	if (!qp)
		return EINVAL;
	iw_qp_lock(qp);
	for (; wr; wr = wr->next) {
		if (!sq_can_post(qp->state) || (wr->send_flags & IW_SEND_VERB_BIND) != verb) {
			rc = EINVAL;
			break;
		}
		if (qp->sq_tail - qp->sq_head >= qp->cap.max_send_wr || (!qp->sq && sq_alloc(qp))) {
			rc = ENOMEM;
			break;
		}
		struct iw_swqe *w = &qp->sq[iw_qp_slot(qp->sq_tail, qp->sq_size)];
		rc = iw_swqe_fill(w, qp, wr);
		if (rc)
			break;
		qp->sq_tail++;
	}
	/* After an error new WRs complete with flush status at once, in
	 * order behind the ones already flushed (drain relies on it). */
	if (flushing_now(qp))
		iw_qp_flush_locked(qp);
	else if (qp->connected && !iw_qp_reads_held_locked(qp))
		qp->events |= IW_QPE_TX;
	bool wake = qp->wake && (qp->events & (IW_QPE_TX | IW_QPE_ERROR));
	iw_qp_unlock(qp);
	if (wake)
		qp->wake(qp, true);
	if (rc && bad_wr)
		*bad_wr = wr;
	return rc;
}

IW_EXPORT int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr, struct iw_send_wr **bad_wr)
{
	return post_send(qp, wr, bad_wr, 0);
}

/* The new STag is chosen and published now, as ibv_bind_mw does, so the
 * application can hand it to a peer in a Send posted behind the bind; it
 * works from when the bind runs. */
IW_EXPORT int iw_bind_mw(struct iw_qp *qp, struct iw_mw *mw, struct iw_mw_bind *mw_bind)
{
	struct iw_send_wr wr = {.opcode = IW_WR_BIND_MW};
	uint32_t old;
	int rc;

	if (!qp || !mw || !mw_bind || mw->type != IW_MW_TYPE_1 ||
	    (mw_bind->send_flags & IW_SEND_VERB_BIND))
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.send_flags = mw_bind->send_flags | IW_SEND_VERB_BIND;
	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.bind_info = mw_bind->bind_info;
	wr.wr.bind_mw.rkey = iw_mem_mw_next_key(&qp->context->mem, (struct iw_mw_int *)mw);
	old = mw->rkey;
	mw->rkey = wr.wr.bind_mw.rkey;
	rc = post_send(qp, &wr, NULL, IW_SEND_VERB_BIND);
	if (rc)
		mw->rkey = old;
	return rc;
}

unsigned iw_qp_take_events(struct iw_qp *qp)
{
	iw_qp_lock(qp);
	unsigned e = qp->events;
	qp->events = 0;
	iw_qp_unlock(qp);
	return e;
}

/* ------------------------------------------------------------ connection */

/* The CM finished MPA: the QP is in RTS with the negotiated parameters.
 * Each direction's FPDU stream starts at offset 0 right after the MPA
 * frames, and every untagged queue's MSN starts at 1 (RFC 5041). */
/* Size the ORQ and IRQ for the negotiated ORD and IRD (both empty now).
 * Out of memory leaves the depth at 0 and returns false: the caller takes
 * the QP to ERR, as a Read posted with no ORQ would wait for ever. */
static bool size_rd_queues(struct iw_qp *qp)
{
	bool ok = true;
	uint32_t n = ring_size(qp->conn.ird ? qp->conn.ird : 1);
	if (qp->irq_size < n) {
		iw_free(qp->context->alloc, qp->irq);
		qp->irq = iw_calloc(qp->context->alloc, n, sizeof(*qp->irq));
		qp->irq_size = qp->irq ? n : 0;
		ok = qp->irq != NULL;
	}
	n = ring_size(qp->conn.ord ? qp->conn.ord : 1);
	if (qp->orq_size < n) {
		iw_free(qp->context->alloc, qp->orq);
		qp->orq = iw_calloc(qp->context->alloc, n, sizeof(*qp->orq));
		qp->orq_size = qp->orq ? n : 0;
		ok = ok && qp->orq != NULL;
	}
	if (qp->conn.ird > qp->irq_size)
		qp->conn.ird = (uint16_t)qp->irq_size;
	if (qp->conn.ord > qp->orq_size)
		qp->conn.ord = (uint16_t)qp->orq_size;
	return ok;
}

#ifdef IW_FUZZING
/* Fuzzing builds only (-DIW_FUZZING, never the library): see qp.h. */
unsigned iw_fuzz_qp_rx_flags = IW_RX_SKIP_CRC;
#define IW_QP_RX_FLAGS iw_fuzz_qp_rx_flags
#else
#define IW_QP_RX_FLAGS 0
#endif

void iw_qp_start(struct iw_qp *qp, const struct iw_qp_conn *c)
{
	iw_qp_lock(qp);
	qp->conn = *c;
	if (qp->conn.ird > IW_MAX_ORD_IRD)
		qp->conn.ird = IW_MAX_ORD_IRD;
	if (qp->conn.ord > IW_MAX_ORD_IRD)
		qp->conn.ord = IW_MAX_ORD_IRD;
	bool rd_ok = size_rd_queues(qp);
	qp->connected = true;
	qp->terminated = false;
	qp->fault_crc_nth = 0; /* a fault is armed per connection */
	iw_qp_set_state(qp, IW_QPS_RTS);
	iw_fpdu_tx_init(&qp->ftx, c->crc, c->markers_tx, 0);
	iw_fpdu_rx_init(&qp->frx, c->crc, c->markers_rx, 0, 0, IW_QP_RX_FLAGS);
	for (int i = 0; i < 4; i++)
		qp->tx_msn[i] = qp->rx_msn[i] = 1;
	if (c->hold_msgs)
		qp->hold.max_num = c->hold_msgs;
	if (c->hold_bytes)
		qp->hold.max_bytes = c->hold_bytes;
	qp->rtr_pending = c->p2p && c->initiator;
	qp->rtr_wait = c->p2p && !c->initiator;
	if (!c->p2p)
		qp->events |= IW_QPE_ESTABLISHED;
	qp->events |= IW_QPE_TX;
	if (!rd_ok) {
		/* Connected but unable to hold its Reads: ERR (flushing
		 * anything posted), and the application is told why. */
		iw_qp_set_error_locked(qp);
		struct iw_async_event ev = {.event_type = IW_EVENT_QP_FATAL,
					    .term = IW_TERM_NONE};
		ev.element.qp = qp;
		iw_async_raise(qp->context, &ev);
	}
	iw_qp_unlock(qp);
}
