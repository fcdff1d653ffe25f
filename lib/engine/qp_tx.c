/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit side of the engine: DDP segmentation of send WQEs and Read
 * Responses into FPDUs no larger than MULPDU, gathered into one transmit
 * queue that the glue hands to writev in one call. Payload iovecs point at
 * registered memory; only headers, markers and trailers are copied.
 *
 * Ordering (RFC 5040 section 5.5 and siw's receive rules): messages go out
 * whole; a Read Response may go between two send-queue messages but never
 * inside one, and send-queue messages start in posting order. A FENCEd WR
 * waits for earlier Reads and atomics; a Read waits while ORD are in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"
#include "engine/qp_txq.h"
#include "wire/mpa_tx.h"
#include "base/visibility.h"
#include "engine/wr.h"

/* Zero-length tagged frames never carry STag 0 (Chelsio drops them); siw
 * uses 1 for its RTRs and so do we. */
#define IW_RTR_STAG 1u

/* ------------------------------------------------------------ headers */

static size_t hdr_tagged(uint8_t *h, unsigned op, bool last, uint32_t stag, uint64_t to)
{
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(true, last), .rdmap_ctrl = iw_rdmap_ctrl(op)};
	d.stag = stag;
	d.to = to;
	return (size_t)iw_ddp_hdr_build(h, IW_FPDU_HDR_MAX, &d);
}

static size_t hdr_untagged(struct iw_qp *qp, uint8_t *h, unsigned op, bool last, uint32_t mo,
			   uint32_t inv_stag)
{
	int qn = iw_rdmap_opcode_qn(op);
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, last), .rdmap_ctrl = iw_rdmap_ctrl(op)};
	d.qn = (uint32_t)qn;
	d.msn = qp->tx_msn[qn];
	d.mo = mo;
	d.inv_stag = inv_stag;
	if (last)
		qp->tx_msn[qn]++;
	return (size_t)iw_ddp_hdr_build(h, IW_FPDU_HDR_MAX, &d);
}

/* ------------------------------------------------------------ RTR */

/* The RTR of RFC 6581: the initiator's first FPDU, a zero-length message
 * of the negotiated type; a READ RTR is answered by a zero-length Read
 * Response, and a responder answers nothing before its RTR arrives. */
static int emit_rtr(struct iw_qp *qp)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t n;
	if (!iw_txq_room(qp, IW_FPDU_HDR_MAX, 0, true))
		return -EAGAIN;
	if (qp->conn.rtr == IW_RTR_WRITE) {
		n = hdr_tagged(h, IW_OP_WRITE, true, IW_RTR_STAG, 0);
	} else if (qp->conn.rtr == IW_RTR_READ) {
		struct iw_read_req r = {.sink_stag = IW_RTR_STAG, .src_stag = IW_RTR_STAG};
		n = hdr_untagged(qp, h, IW_OP_READ_REQ, true, 0, 0);
		n += (size_t)iw_rdmap_read_req_build(h + n, sizeof(h) - n, &r);
		qp->rtr_read_sent = true;
	} else {
		n = hdr_untagged(qp, h, IW_OP_SEND, true, 0, 0);
	}
	int rc = iw_txq_fpdu(qp, h, n, NULL, 0);
	if (rc)
		return rc;
	qp->rtr_pending = false;
	qp->events |= IW_QPE_ESTABLISHED;
	return 0;
}

static int emit_rtr_read_resp(struct iw_qp *qp)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	if (!iw_txq_room(qp, IW_FPDU_HDR_MAX, 0, true))
		return -EAGAIN;
	size_t n = hdr_tagged(h, IW_OP_READ_RESP, true, qp->rtr_sink_stag, 0);
	int rc = iw_txq_fpdu(qp, h, n, NULL, 0);
	if (!rc)
		qp->rtr_read_resp = false;
	return rc;
}

/* A wake-up (iw_qp_wake) is a WRITE RTR sent again: zero octets, STag 1. */
static int emit_wake(struct iw_qp *qp)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	if (!iw_txq_room(qp, IW_FPDU_HDR_MAX, 0, true))
		return -EAGAIN;
	size_t n = hdr_tagged(h, IW_OP_WRITE, true, IW_RTR_STAG, 0);
	int rc = iw_txq_fpdu(qp, h, n, NULL, 0);
	if (!rc)
		qp->wake_pending = false;
	return rc;
}

void iw_qp_wake(struct iw_qp *qp)
{
	iw_qp_lock(qp);
	if (qp->connected && !qp->terminated && qp->state == IW_QPS_RTS)
		qp->wake_pending = true;
	iw_qp_unlock(qp);
}

/* ------------------------------------------------------------ IRQ */

/* The MSS moved (the connection looks again now and then: on loopback it
 * doubles once the peer's window has grown; a path MTU change shrinks
 * it). Segments framed from now on fit the new size; a message half cut
 * goes on with it, since each FPDU only has to fit the MSS of its time. */
void iw_qp_set_mulpdu(struct iw_qp *qp, uint32_t mulpdu)
{
	iw_qp_lock(qp);
	qp->conn.mulpdu = mulpdu;
	iw_qp_unlock(qp);
}

static uint32_t max_payload(const struct iw_qp *qp, size_t hdr_len)
{
	return qp->conn.mulpdu > hdr_len ? qp->conn.mulpdu - (uint32_t)hdr_len : 1;
}

static int emit_atomic_resp(struct iw_qp *qp, struct iw_irqe *e)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	struct iw_atomic_resp a = {.req_id = e->req_id, .orig_value = e->orig};
	size_t n = hdr_untagged(qp, h, IW_OP_ATOMIC_RESP, true, 0, 0);
	n += (size_t)iw_rdmap_atomic_resp_build(h + n, sizeof(h) - n, &a);
	return iw_txq_fpdu(qp, h, n, NULL, 0);
}

/* One segment of the Read Response at the IRQ head. */
static int emit_irq(struct iw_qp *qp)
{
	struct iw_irqe *e = &qp->irq[qp->irq_head % qp->irq_size];
	uint8_t h[IW_FPDU_HDR_MAX];
	uint32_t chunk = e->len - e->sent;
	uint32_t maxp = max_payload(qp, IW_DDP_TAGGED_HDR_LEN);
	if (chunk > maxp)
		chunk = maxp;
	if (!iw_txq_room(qp, IW_DDP_TAGGED_HDR_LEN + chunk, 1, true))
		return -EAGAIN;
	int rc;
	bool last = e->sent + chunk == e->len;
	if (e->atomic) {
		rc = emit_atomic_resp(qp, e);
		last = true;
	} else {
		/* A zero-length response never carries STag 0 (interop.md). */
		uint32_t stag = e->sink_stag || e->len ? e->sink_stag : IW_RTR_STAG;
		size_t n = hdr_tagged(h, IW_OP_READ_RESP, last, stag, e->sink_to + e->sent);
		/* A zero-length Read has no source (src NULL): no pointer
		 * arithmetic on it. */
		struct iovec pay = {.iov_base = chunk ? e->src + e->sent : NULL, .iov_len = chunk};
		rc = iw_txq_fpdu(qp, h, n, &pay, chunk ? 1 : 0);
	}
	if (rc)
		return rc;
	e->sent += chunk;
	qp->tx_cur = last ? IW_TX_NONE : IW_TX_IRQ;
	if (last) {
		/* The source stays referenced until its octets are written. */
		iw_txq_mark(qp, 0, false, e->mr);
		qp->irq_head++;
		qp->irq_cnt--;
	}
	return 0;
}

/* ------------------------------------------------------------ SQ */

static bool is_read_like(enum iw_wr_opcode op)
{
	return iw_wr_has(op, IW_WRF_ORQ);
}

/* Local operations execute when they reach the front, in order. One that
 * fails completes with its error and, as any WR completing in error, takes
 * the QP to ERR (verbs): the WRs behind it may depend on it, so they
 * flush, and the peer is told with a local catastrophic error. Returns
 * false then. */
static bool exec_local(struct iw_qp *qp, struct iw_swqe *w)
{
	int rc;
	if (w->opcode == IW_WR_LOCAL_INV)
		rc = iw_mem_invalidate(&qp->context->mem, &qp->mreq, w->imm_or_inv, false);
	else if (w->opcode == IW_WR_BIND_MW)
		rc = iw_mem_bind_mw(&qp->context->mem, &qp->mreq, w->bind_mw, w->reg_key, w->reg_mr,
				    w->reg_access, w->reg_iova, w->reg_len);
	else
		rc = iw_mem_fastreg(&qp->context->mem, qp->pd, w->reg_mr, w->reg_key,
				    w->reg_access, w->reg_iova, w->reg_len, w->reg_addr);
	w->tx_done = w->done = true;
	if (rc == IW_MEM_INV_WAIT) {
		/* Placements into the STag are under way: complete once they
		 * end (inv_settle), holding the WRs behind it. */
		w->done = false;
		qp->inv_wait = true;
		qp->inv_wait_idx = qp->sq_next;
		return true;
	}
	if (!rc)
		return true;
	if (w->opcode == IW_WR_BIND_MW)
		w->status = IW_WC_MW_BIND_ERR;
	else /* refused by the MR's own rights: the WR's protection error */
		w->status = rc == -EACCES ? IW_WC_LOC_PROT_ERR
					  : iw_term_wc_status(IW_TERM_RDMAP_CATASTROPHIC, false);
	w->vendor_err = IW_TERM_RDMAP_CATASTROPHIC;
	iw_qp_terminate_locked(qp, IW_TERM_RDMAP_CATASTROPHIC, NULL,
			       "a local work request failed");
	return false;
}

/* The RDMAP opcode of w's message, with SE when it asks (the table's). */
static unsigned wire_opcode(const struct iw_swqe *w)
{
	const struct iw_wr_info *i = iw_wr_info(w->opcode);
	return (w->flags & IW_SEND_SOLICITED) ? i->op_se : i->op;
}

static int emit_read_req(struct iw_qp *qp, struct iw_swqe *w, uint32_t idx)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	struct iw_read_req r = {
		.sink_stag = w->sge[0].lkey,
		.sink_to = w->sge[0].addr,
		.read_size = w->sge[0].length,
		.src_stag = w->rkey,
		.src_to = w->remote_addr,
	};
	w->req_msn = qp->tx_msn[IW_QN_READ_REQ]; /* a TERMINATE may name it */
	size_t n = hdr_untagged(qp, h, IW_OP_READ_REQ, true, 0, 0);
	n += (size_t)iw_rdmap_read_req_build(h + n, sizeof(h) - n, &r);
	int rc = iw_txq_fpdu(qp, h, n, NULL, 0);
	if (!rc)
		qp->orq[(qp->orq_head + qp->orq_cnt++) % qp->orq_size] = idx;
	return rc;
}

static int emit_atomic_req(struct iw_qp *qp, struct iw_swqe *w, uint32_t idx)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	struct iw_atomic_req a = {
		.req_id = qp->next_req_id++,
		.stag = w->rkey,
		.to = w->remote_addr,
		.add_swap_mask = ~0ull,
		.compare_mask = ~0ull,
	};
	if (w->opcode == IW_WR_ATOMIC_FETCH_AND_ADD) {
		a.atomic_op = IW_ATOMIC_FETCH_ADD;
		a.add_swap = w->compare_add;
	} else {
		a.atomic_op = IW_ATOMIC_CMP_SWAP;
		a.add_swap = w->swap;
		a.compare = w->compare_add;
	}
	w->req_msn = (uint32_t)qp->tx_msn[iw_rdmap_opcode_qn(IW_OP_ATOMIC_REQ)];
	size_t n = hdr_untagged(qp, h, IW_OP_ATOMIC_REQ, true, 0, 0);
	n += (size_t)iw_rdmap_atomic_req_build(h + n, sizeof(h) - n, &a);
	int rc = iw_txq_fpdu(qp, h, n, NULL, 0);
	if (!rc)
		qp->orq[(qp->orq_head + qp->orq_cnt++) % qp->orq_size] = idx;
	return rc;
}

/* RFC 7306 Immediate Data: 8 octets, the 32-bit immediate first. */
static int emit_imm(struct iw_qp *qp, struct iw_swqe *w)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	unsigned op = (w->flags & IW_SEND_SOLICITED) ? IW_OP_IMM_SE : IW_OP_IMM;
	size_t n = hdr_untagged(qp, h, op, true, 0, 0);
	memcpy(h + n, &w->imm_or_inv, 4); /* already in network order */
	memset(h + n + 4, 0, 4);
	return iw_txq_fpdu(qp, h, n + IW_RDMAP_IMM_LEN, NULL, 0);
}

/* One data segment (Send or Write) of w. */
static int emit_data(struct iw_qp *qp, struct iw_swqe *w)
{
	bool tagged = iw_wr_has(w->opcode, IW_WRF_TAGGED);
	size_t hl = tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
	uint64_t chunk = w->len - w->sent;
	uint32_t maxp = max_payload(qp, hl);
	if (chunk > maxp)
		chunk = maxp;
	if (!iw_txq_room(qp, hl + chunk, (int)w->num_sge, true))
		return -EAGAIN;
	bool last = w->sent + chunk == w->len;
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t n;
	if (tagged) {
		uint32_t stag = w->rkey ? w->rkey : (w->len ? 0 : IW_RTR_STAG);
		n = hdr_tagged(h, IW_OP_WRITE, last, stag, w->remote_addr + w->sent);
	} else {
		uint32_t inv = w->opcode == IW_WR_SEND_WITH_INV ? w->imm_or_inv : 0;
		n = hdr_untagged(qp, h, wire_opcode(w), last, (uint32_t)w->sent, inv);
	}
	struct iovec pay[IW_MAX_SGE];
	int cnt = iw_swqe_gather(w, w->sent, chunk, pay, IW_MAX_SGE);
	int rc = iw_txq_fpdu(qp, h, n, pay, cnt);
	if (rc)
		return rc;
	w->sent += chunk;
	if (last)
		w->data_done = true;
	return 0;
}

static bool has_imm(const struct iw_swqe *w)
{
	return iw_wr_has(w->opcode, IW_WRF_IMM);
}

/* Advance the WQE at sq_next by one FPDU. -EAGAIN: blocked (no room, fence,
 * ORD); 0: progress. */
static int emit_sq(struct iw_qp *qp)
{
	uint32_t idx = qp->sq_next;
	struct iw_swqe *w = &qp->sq[iw_qp_slot(idx, qp->sq_size)];
	int rc;

	if (qp->tx_cur == IW_TX_NONE) {
		if (qp->inv_wait)
			return -EAGAIN; /* nothing passes a LOCAL_INV still waiting */
		/* Starting a new WQE: fence and ORD gates. */
		if ((w->flags & IW_SEND_FENCE) && qp->orq_cnt)
			return -EAGAIN;
		if (is_read_like(w->opcode) && qp->orq_cnt >= qp->conn.ord)
			return -EAGAIN;
		if (iw_wr_has(w->opcode, IW_WRF_LOCAL)) {
			bool ok = exec_local(qp, w);
			qp->sq_next++;
			iw_qp_complete_sq_locked(qp);
			return ok ? 0 : -EAGAIN;
		}
	}
	if (is_read_like(w->opcode)) {
		if (!iw_txq_room(qp, IW_FPDU_HDR_MAX, 0, true))
			return -EAGAIN;
		rc = w->opcode == IW_WR_RDMA_READ ? emit_read_req(qp, w, idx)
						  : emit_atomic_req(qp, w, idx);
		if (rc)
			return rc;
		w->tx_done = true;
		qp->sq_next++;
		return 0;
	}
	if (!w->data_done) {
		rc = emit_data(qp, w);
		if (rc)
			return rc;
		qp->tx_cur = IW_TX_SQ;
		if (!w->data_done || has_imm(w))
			return 0;
	} else {
		if (!iw_txq_room(qp, IW_FPDU_HDR_MAX, 0, true))
			return -EAGAIN;
		rc = emit_imm(qp, w);
		if (rc)
			return rc;
	}
	/* The whole WQE is queued: it completes when its last octet is written. */
	w->tx_done = true;
	qp->tx_cur = IW_TX_NONE;
	iw_txq_mark(qp, idx, true, NULL);
	qp->sq_next++;
	return 0;
}

static int emit_one(struct iw_qp *qp)
{
	if (qp->rtr_pending)
		return emit_rtr(qp);
	if (qp->rtr_read_resp)
		return emit_rtr_read_resp(qp);
	bool sqd = qp->state == IW_QPS_SQD;
	if (qp->rtr_wait || (qp->state != IW_QPS_RTS && !sqd))
		return -EAGAIN;
	/* Between messages only: a tagged frame must not split another. */
	if (qp->wake_pending && qp->tx_cur == IW_TX_NONE)
		return emit_wake(qp);
	/* In SQD the responder side goes on (Read Responses are owed) and a
	 * message already begun is finished; no new WQE starts. */
	if (qp->tx_cur == IW_TX_IRQ || (qp->tx_cur == IW_TX_NONE && qp->irq_cnt))
		return emit_irq(qp);
	if (qp->sq_next != qp->sq_tail && (!sqd || qp->tx_cur == IW_TX_SQ))
		return emit_sq(qp);
	return -EAGAIN;
}

/* A waiting LOCAL_INV completes when the last placement into its STag
 * has ended (the receive side wakes the transmit side then). */
static void inv_settle(struct iw_qp *qp)
{
	struct iw_swqe *w = &qp->sq[iw_qp_slot(qp->inv_wait_idx, qp->sq_size)];

	if (!iw_mem_placements_done(&qp->context->mem, w->imm_or_inv))
		return;
	qp->inv_wait = false;
	w->done = true;
	iw_qp_complete_sq_locked(qp);
}

/* emit_one would find nothing at once (it may still find nothing when
 * this is false). */
static bool nothing_due(const struct iw_qp *qp)
{
	return !qp->rtr_pending && !qp->rtr_read_resp && !qp->wake_pending &&
	       qp->tx_cur == IW_TX_NONE && !qp->irq_cnt && qp->sq_next == qp->sq_tail;
}

int iw_qp_tx_build_locked(struct iw_qp *qp)
{
	if (!qp->connected || qp->terminated)
		return 0;
	if (qp->inv_wait)
		inv_settle(qp);
	/* The write after a ping-pong's one message drained the queue: no
	 * queue is taken (and given back) to build nothing. */
	if (!qp->txq && nothing_due(qp))
		return 0;
	if (!iw_txq_get(qp))
		return -ENOMEM;
	int rc;
	while ((rc = emit_one(qp)) == 0)
		;
	return rc == -EAGAIN ? 0 : rc;
}

/* ------------------------------------------------------------ glue side */

static int tx_iov_locked(struct iw_qp *qp, struct iovec *iov, int cap)
{
	int rc = iw_qp_tx_build_locked(qp);
	int n = 0;
	if (rc == 0 && qp->txq) {
		struct iw_txq *q = qp->txq;
		for (int i = q->first; i < q->cnt && n < cap; i++)
			iov[n++] = q->iov[i];
	}
	/* Nothing left to send: let the queue go (iw_txq_get). */
	if (iw_txq_empty(qp->txq) && qp->txq && qp->txq->num_mark == qp->txq->first_mark)
		iw_txq_put(qp);
	/* The writer has just built everything that may go: the TX event a
	 * post raised is answered, and a later step must not send the glue
	 * to build again for nothing (a poller's tx attempt after every
	 * receive of a ping-pong). Whatever lets more go later (a post, an
	 * RTR, a Read Response, SQD left) raises it again. */
	if (rc == 0 && n == 0 && cap > 0)
		qp->events &= ~(unsigned)IW_QPE_TX;
	return rc < 0 ? rc : n;
}

int iw_qp_tx_iov(struct iw_qp *qp, struct iovec *iov, int cap)
{
	iw_qp_lock(qp);
	int n = tx_iov_locked(qp, iov, cap);
	iw_qp_unlock(qp);
	return n;
}

/* A post whose write the glue may put off (lib/io/cm_batch.c): its FPDUs
 * are framed now, as a write would, so that a TERMINATE or a close
 * queued later still finds them ahead of it. */
int iw_qp_tx_stage(struct iw_qp *qp, uint32_t *out_msgs, size_t *out_bytes)
{
	iw_qp_lock(qp);
	int rc = iw_qp_tx_build_locked(qp);
	const struct iw_txq *q = qp->txq;
	*out_msgs = q ? (uint32_t)(q->num_mark - q->first_mark) : 0;
	*out_bytes = q ? (size_t)(q->queued - q->sent) : 0;
	/* Work left unframed (the queue is full, or a gate holds it): a
	 * write now, not a wait that the bound would never end. */
	if (rc == 0 && !nothing_due(qp))
		rc = 1;
	if (iw_txq_empty(q) && q && q->num_mark == q->first_mark)
		iw_txq_put(qp);
	iw_qp_unlock(qp);
	return rc;
}

bool iw_qp_tx_pending_locked(const struct iw_qp *qp)
{
	return !iw_txq_empty(qp->txq);
}

bool iw_qp_tx_pending(struct iw_qp *qp)
{
	iw_qp_lock(qp);
	bool p = iw_qp_tx_pending_locked(qp);
	iw_qp_unlock(qp);
	return p;
}

static void run_marks(struct iw_qp *qp)
{
	struct iw_txq *q = qp->txq;
	while (q->first_mark < q->num_mark && q->mark[q->first_mark].end <= q->sent) {
		struct iw_txmark *m = &q->mark[q->first_mark++];
		if (m->sq)
			qp->sq[iw_qp_slot(m->sq_idx, qp->sq_size)].done = true;
		iw_mem_put(m->put);
	}
}

/* The queue drained (every mark has run): let it go until the next burst;
 * a QP in ERR can flush now that nothing points into its WQEs. */
static void txq_drained(struct iw_qp *qp)
{
	iw_txq_put(qp);
	if (qp->state == IW_QPS_ERR)
		iw_qp_flush_locked(qp);
}

static void tx_sent_locked(struct iw_qp *qp, size_t n)
{
	struct iw_txq *q = qp->txq;
	if (!q)
		return;
	q->sent += n;
	while (n && q->first < q->cnt) {
		struct iovec *v = &q->iov[q->first];
		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			break;
		}
		n -= v->iov_len;
		q->first++;
	}
	run_marks(qp);
	iw_qp_complete_sq_locked(qp);
	if (q->first == q->cnt)
		txq_drained(qp);
}

void iw_qp_tx_sent(struct iw_qp *qp, size_t n)
{
	iw_qp_lock(qp);
	tx_sent_locked(qp, n);
	iw_qp_unlock(qp);
}

/* A write's outcome and the next write's iovecs in one locked step: the
 * small message of a ping-pong took two lock round trips here. */
int iw_qp_tx_sent_iov(struct iw_qp *qp, size_t n, struct iovec *iov, int cap)
{
	iw_qp_lock(qp);
	tx_sent_locked(qp, n);
	int rc = tx_iov_locked(qp, iov, cap);
	iw_qp_unlock(qp);
	return rc;
}

/* The connection is gone: queued octets will never be written. Drop their
 * references and flush. */
void iw_qp_conn_lost(struct iw_qp *qp, bool graceful)
{
	(void)graceful;
	iw_qp_lock(qp);
	iw_qp_txq_discard_locked(qp);
	qp->rx_direct_busy = false; /* whatever it was receiving is over */
	qp->connected = false;
	if (qp->state != IW_QPS_ERR)
		iw_qp_set_error_locked(qp);
	else
		iw_qp_flush_locked(qp);
	iw_qp_unlock(qp);
}

/* ------------------------------------------------------------ faults */

IW_EXPORT const char *iw_fault_str(enum iw_fault fault)
{
	return fault == IW_FAULT_TX_CRC ? "tx-crc" : "unknown";
}

/* Armed under the QP lock, like posting, so it counts from the next FPDU
 * framed whichever thread frames it. */
static int inject_locked(struct iw_qp *qp, uint32_t nth)
{
	if (nth == 0) {
		qp->fault_crc_nth = 0;
		return 0;
	}
	if (!qp->connected || qp->terminated ||
	    (qp->state != IW_QPS_RTS && qp->state != IW_QPS_SQD))
		return ENOTCONN;
	/* Without CRC the field is zero and unchecked: nothing to break. */
	if (!qp->conn.crc)
		return EOPNOTSUPP;
	qp->fault_crc_nth = nth;
	return 0;
}

IW_EXPORT int iw_qp_inject_fault(struct iw_qp *qp, enum iw_fault fault, uint32_t nth)
{
	if (!qp || fault != IW_FAULT_TX_CRC)
		return EINVAL;
	iw_qp_lock(qp);
	int rc = inject_locked(qp, nth);
	iw_qp_unlock(qp);
	return rc;
}
