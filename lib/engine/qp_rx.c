/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive side of the engine: each DDP segment the FPDU decoder
 * announces is checked against QP and memory state before a single payload
 * octet is placed (ARCHITECTURE.md section 4), then placed straight into
 * the MR or the posted receive; its completion waits for the good CRC at
 * the segment's end. Any violation queues the exact TERMINATE (RFC 5040
 * section 7, RFC 5041 section 7) and moves the QP to ERR.
 *
 * Choices the RFCs leave open, and what we do:
 *  - MSN of an untagged segment other than the one expected: DDP "MSN out
 *    of range" (1/2/0x03).
 *  - A Read Request beyond IRD: DDP "MSN out of range" on QN 1 (the IRD is
 *    the number of QN 1 buffers in RFC 5041's model). siw is known to be
 *    lax here (interop.md).
 *  - A Send longer than the posted receive: DDP "message too long"
 *    (1/2/0x05); siw reports "no buffer" (0x02) instead.
 *  - Zero-length tagged segments are not validated (interop.md rule 4).
 *  - A Send or Immediate Data message that finds no receive: "no buffer"
 *    (1/2/0x02), unless the QP holds it for a later receive
 *    (IW_QP_CREATE_RECV_HOLD, qp_recv.c).
 */
#include <errno.h>
#include <string.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"
#include "engine/srq.h"
#include "engine/wr.h"
#include "wire/mpa_rx.h"
#include "wire/opcode.h"

/* ------------------------------------------------------------ helpers */

static void wake_tx(struct iw_qp *qp)
{
	qp->events |= IW_QPE_TX;
}

/* The WQE is moved out of its ring (its MR references with it): a slot
 * left in the ring while being filled could be overwritten by the next
 * post once the ring looks non-full. The flush finds it via have_rwqe. */
static uint16_t take_rwqe(struct iw_qp *qp)
{
	if (qp->srq) {
		if (!iw_srq_take(qp->srq, &qp->in.wqe))
			return IW_TERM_DDP_U_NO_BUF;
	} else {
		if (qp->rq_head == qp->rq_tail)
			return IW_TERM_DDP_U_NO_BUF;
		iw_rwqe_move(&qp->in.wqe, &qp->rq[iw_qp_slot(qp->rq_head, qp->rq_size)]);
		qp->rq_head++;
	}
	qp->in.rwqe = &qp->in.wqe.w;
	qp->in.have_rwqe = true;
	qp->in.rwqe_fault = 0;
	qp->in.msg_len = 0;
	return 0;
}

/* The receive being filled is the WR at fault for term (verbs.h): it
 * completes with the table's status instead of flushing. */
static uint16_t fault_rwqe(struct iw_qp *qp, uint16_t term)
{
	qp->in.rwqe_fault = iw_term_wc_status(term, false);
	return term;
}

static void complete_rwqe(struct iw_qp *qp, enum iw_wc_opcode op, unsigned flags, uint32_t imm,
			  uint32_t inv)
{
	struct iw_rwqe *w = qp->in.rwqe;
	struct iw_wc wc = {
		.wr_id = w->wr_id,
		.status = IW_WC_SUCCESS,
		.vendor_err = IW_TERM_NONE,
		.opcode = op,
		.byte_len = (uint32_t)qp->in.msg_len,
		.imm_data = imm,
		.invalidated_rkey = inv,
		.qp_num = qp->qp_num,
		.wc_flags = flags,
	};
	iw_rwqe_release(w); /* before the completion is visible (dereg may follow) */
	iw_cq_push(qp->recv_cq, &wc, flags & IW_WC_SOLICITED);
	qp->in.have_rwqe = false;
	qp->in.rwqe = NULL;
}

static bool op_send(unsigned op)
{
	return iw_opcode_has(op, IW_OPF_SEND);
}

/* A Read or atomic response retired an ORQ entry. Only a WQE not yet
 * started can have waited for that (ORD or a fence): with none, raising
 * the transmit event sent the glue to build and lock again for nothing,
 * once per batch of Read Responses a poller received (issue 12). Reads
 * held for a batch stay held while enough responses are still owed. */
static void orq_retired(struct iw_qp *qp)
{
	if (qp->sq_next != qp->sq_tail && !iw_qp_reads_held_locked(qp))
		wake_tx(qp);
}

/* ------------------------------------------------------------ headers */

/* Where the Write began, and at its last segment its length (a hint for
 * the read plan: msg_tail). */
static void track_write(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	if (!qp->rx_wr.in_msg) {
		qp->rx_wr.in_msg = true;
		qp->rx_wr.start = s->ddp.to;
	}
	if (iw_ddp_last(&s->ddp)) {
		qp->rx_wr.in_msg = false;
		qp->rx_wr.last_len = s->ddp.to + s->payload_len - qp->rx_wr.start;
	}
}

static uint16_t hdr_write(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	if (s->payload_len == 0) {
		/* Zero-length tagged frames are not validated (interop.md). */
		qp->in.skip = true;
		return 0;
	}
	track_write(qp, s);
	return iw_mem_check_remote(&qp->context->mem, &qp->mreq, s->ddp.stag, s->ddp.to,
				   s->payload_len, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &qp->in.mr,
				   &qp->in.dst);
}

/* The sink is our own MR, but the peer chose STag and TO: check them like
 * any tagged placement, and against the Read we asked for. */
static uint16_t read_resp_sink(struct iw_qp *qp, const struct iw_ddp_seg *s,
			       const struct iw_swqe *w)
{
	if (s->ddp.stag != w->sge[0].lkey)
		return IW_TERM_DDP_T_INV_STAG;
	if (s->ddp.to < w->sge[0].addr ||
	    s->ddp.to - w->sge[0].addr + s->payload_len > w->sge[0].length)
		return IW_TERM_DDP_T_BASE_BOUNDS;
	uint64_t room = 0;
	uint16_t t = iw_mem_check_remote_room(&qp->context->mem, &qp->mreq, s->ddp.stag, s->ddp.to,
					      s->payload_len, IW_MEM_READ_SINK, IW_MEM_BY_DDP,
					      &qp->in.mr, &qp->in.dst, &room);
	uint64_t sink_left = w->sge[0].length - (s->ddp.to - w->sge[0].addr);
	qp->in.dst_room = t ? 0 : room < sink_left ? room : sink_left;
	return t;
}

static uint16_t hdr_read_resp(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	if (qp->rtr_read_sent) {
		/* The zero-length answer to our READ RTR: responses come in
		 * request order and the RTR was our first request, whatever
		 * Reads the application queued behind it. */
		if (s->payload_len || !iw_ddp_last(&s->ddp))
			return IW_TERM_RDMAP_OPCODE;
		qp->in.skip = true;
		return 0;
	}
	if (qp->orq_cnt == 0)
		return IW_TERM_RDMAP_OPCODE; /* a response nobody asked for */
	struct iw_swqe *w = &qp->sq[iw_qp_slot(qp->orq[qp->orq_head % qp->orq_size], qp->sq_size)];
	if (w->opcode != IW_WR_RDMA_READ)
		return IW_TERM_RDMAP_OPCODE;
	if (s->payload_len == 0) {
		qp->in.skip = true;
		return 0;
	}
	/* A response outside the sink fails our Read, not just the QP. */
	uint16_t t = read_resp_sink(qp, s, w);
	if (t)
		iw_qp_fault_swqe_locked(w, t, false);
	return t;
}

/* A receive for a new untagged message, or (RNR emulation) the message
 * held: behind what is held already, or when the RQ is empty. */
static uint16_t take_or_hold(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	if (iw_qp_holding(qp))
		return iw_qp_hold_seg_locked(qp, s, op);
	uint16_t t = take_rwqe(qp);
	if (t == IW_TERM_DDP_U_NO_BUF && iw_qp_hold_on(qp))
		return iw_qp_hold_seg_locked(qp, s, op);
	return t;
}

static uint16_t hdr_send(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	if (s->ddp.msn != qp->rx_msn[IW_QN_SEND])
		return IW_TERM_DDP_U_MSN_RANGE;
	if (qp->in.have_rwqe) {
		if (qp->in.send_op != op) /* another message inside this one */
			return fault_rwqe(qp, IW_TERM_RDMAP_OPCODE);
	} else {
		uint16_t t = take_or_hold(qp, s, op);
		if (t || qp->in.held)
			return t;
	}
	/* A segment that starts outside the buffer has a bad MO (RFC 5041
	 * 7.2, 0x04); one that starts inside and runs past it is too long. */
	if (s->ddp.mo > qp->in.rwqe->len)
		return fault_rwqe(qp, IW_TERM_DDP_U_INV_MO);
	if ((uint64_t)s->ddp.mo + s->payload_len > qp->in.rwqe->len)
		return fault_rwqe(qp, IW_TERM_DDP_U_TOO_LONG);
	qp->in.mo = s->ddp.mo;
	qp->in.send_op = op;
	return 0;
}

static uint16_t hdr_read_req(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	const struct iw_read_req *r = &s->rdmap.u.read_req;
	if (s->ddp.msn != qp->rx_msn[IW_QN_READ_REQ])
		return IW_TERM_DDP_U_MSN_RANGE;
	if (qp->irq_cnt >= qp->conn.ird || qp->irq_cnt >= qp->irq_size)
		return IW_TERM_DDP_U_MSN_RANGE;
	struct iw_irqe *e = &qp->in.irqe;
	memset(e, 0, sizeof(*e));
	e->sink_stag = r->sink_stag;
	e->sink_to = r->sink_to;
	e->len = r->read_size;
	if (r->read_size == 0)
		return 0;
	return iw_mem_check_remote(&qp->context->mem, &qp->mreq, r->src_stag, r->src_to,
				   r->read_size, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP, &e->mr, &e->src);
}

static uint16_t hdr_atomic_req(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	const struct iw_atomic_req *a = &s->rdmap.u.atomic_req;
	int qn = iw_rdmap_opcode_qn(IW_OP_ATOMIC_REQ);
	if (s->ddp.msn != qp->rx_msn[qn])
		return IW_TERM_DDP_U_MSN_RANGE;
	if (qp->irq_cnt >= qp->conn.ird || qp->irq_cnt >= qp->irq_size)
		return IW_TERM_DDP_U_MSN_RANGE;
	if (a->to & 7)
		return IW_TERM_RDMAP_BASE_BOUNDS; /* atomics act on aligned 8 octets */
	struct iw_irqe *e = &qp->in.irqe;
	memset(e, 0, sizeof(*e));
	e->atomic = true;
	e->req_id = a->req_id;
	uint16_t t = iw_mem_check_remote(&qp->context->mem, &qp->mreq, a->stag, a->to, 8,
					 IW_MEM_REMOTE_ATOMIC, IW_MEM_BY_RDMAP, &e->mr, &e->src);
	/* An aligned TO is not enough: a fast-reg MR may map it to a host
	 * address of another alignment, and the 64-bit atomic needs one. */
	if (!t && ((uintptr_t)e->src & 7)) {
		iw_mem_put_placed(e->mr);
		e->mr = NULL;
		e->src = NULL;
		t = IW_TERM_RDMAP_BASE_BOUNDS;
	}
	return t;
}

static uint16_t hdr_untagged_simple(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	int qn = iw_rdmap_opcode_qn(op);
	if (s->ddp.msn != qp->rx_msn[qn])
		return IW_TERM_DDP_U_MSN_RANGE;
	if (op == IW_OP_IMM || op == IW_OP_IMM_SE) {
		if (qp->in.have_rwqe)
			return IW_TERM_RDMAP_OPCODE;
		return take_or_hold(qp, s, op);
	}
	/* Atomic response: ours must be the oldest outstanding request. */
	if (qp->orq_cnt == 0)
		return IW_TERM_RDMAP_OPCODE;
	struct iw_swqe *w = &qp->sq[iw_qp_slot(qp->orq[qp->orq_head % qp->orq_size], qp->sq_size)];
	if (w->opcode == IW_WR_RDMA_READ)
		return IW_TERM_RDMAP_OPCODE;
	return 0;
}

/* A P2P responder takes exactly the negotiated RTR first (RFC 6581): a
 * zero-length message of that type, never handed to the application and
 * consuming no receive. Anything else is TERMINATE LLP 0x07. A READ RTR is
 * answered before anything else (emit_rtr_read_resp). */
static uint16_t on_rtr(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	bool last = iw_ddp_last(&s->ddp);
	bool ok = false;
	if (qp->conn.rtr == IW_RTR_WRITE)
		ok = op == IW_OP_WRITE && s->payload_len == 0 && last;
	else if (qp->conn.rtr == IW_RTR_READ)
		ok = op == IW_OP_READ_REQ && s->ddp.msn == qp->rx_msn[IW_QN_READ_REQ] &&
		     s->rdmap.u.read_req.read_size == 0;
	else if (qp->conn.rtr == IW_RTR_SEND)
		ok = op == IW_OP_SEND && s->ddp.msn == qp->rx_msn[IW_QN_SEND] &&
		     s->payload_len == 0 && last;
	if (!ok)
		return IW_TERM_LLP_NO_RTR;
	if (op == IW_OP_READ_REQ) {
		qp->rtr_read_resp = true;
		qp->rtr_sink_stag = s->rdmap.u.read_req.sink_stag;
		qp->rx_msn[IW_QN_READ_REQ]++;
	} else if (op == IW_OP_SEND) {
		qp->rx_msn[IW_QN_SEND]++;
	}
	qp->rtr_wait = false;
	qp->events |= IW_QPE_ESTABLISHED;
	qp->in.op = op;
	qp->in.skip = true; /* consumed here: nothing to place or complete */
	wake_tx(qp);
	return 0;
}

static uint16_t on_hdr(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	unsigned op = iw_ddp_opcode(&s->ddp);
	qp->in.skip = false;
	qp->in.held = false;
	qp->in.dst = NULL;
	qp->in.dst_room = 0;
	qp->in.last = iw_ddp_last(&s->ddp);
	if (op == IW_OP_TERMINATE) {
		qp->in.op = op;
		return 0;
	}
	if (qp->rtr_wait)
		return on_rtr(qp, s, op);
	if (iw_opcode_has(op, IW_OPF_RFC7306) && !(qp->create_flags & IW_QP_CREATE_RFC7306))
		return IW_TERM_RDMAP_OPCODE; /* as siw and Chelsio answer them */
	if (!op_send(op))
		qp->in.op = op;
	switch (op) {
	case IW_OP_WRITE:
		return hdr_write(qp, s);
	case IW_OP_READ_RESP:
		return hdr_read_resp(qp, s);
	case IW_OP_READ_REQ:
		return hdr_read_req(qp, s);
	case IW_OP_ATOMIC_REQ:
		return hdr_atomic_req(qp, s);
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
	case IW_OP_ATOMIC_RESP:
		return hdr_untagged_simple(qp, s, op);
	default: {
		uint16_t t = hdr_send(qp, s, op);
		if (!t && !qp->in.skip)
			qp->in.op = op;
		return t;
	}
	}
}

/* ------------------------------------------------------------ payload */

static void on_payload(struct iw_qp *qp, const uint8_t *p, size_t n, uint32_t off)
{
	if (qp->in.skip || n == 0)
		return;
	if (qp->in.dst) {
		memcpy(qp->in.dst + off, p, n);
		return;
	}
	if (qp->in.have_rwqe && op_send(qp->in.op))
		iw_rwqe_scatter(qp->in.rwqe, (uint64_t)qp->in.mo + off, p, n);
}

/* Payload across markers (held decoding): each piece between them. A
 * receive's SGE is looked up once for the run, not once per piece; a piece
 * past that SGE goes the general way. */
static void on_run(struct iw_qp *qp, const struct iw_rx_event *ev)
{
	struct iw_rx_run r;
	const uint8_t *p;
	size_t n;
	uint32_t off;
	uint8_t *dst = NULL;
	uint64_t span = 0;
	if (!qp->in.skip && !qp->in.dst && qp->in.have_rwqe && op_send(qp->in.op))
		span = iw_rwqe_span(qp->in.rwqe, (uint64_t)qp->in.mo + ev->off, &dst);
	iw_fpdu_rx_run_begin(&r, &qp->frx, ev);
	while (iw_fpdu_rx_run_piece(&r, &p, &n, &off)) {
		if ((uint64_t)(off - ev->off) + n <= span)
			memcpy(dst + (off - ev->off), p, n);
		else
			on_payload(qp, p, n, off);
	}
}

/* ------------------------------------------------------------ segment end */

static void end_read_resp(struct iw_qp *qp)
{
	if (qp->rtr_read_sent) {
		qp->rtr_read_sent = false;
		return;
	}
	if (!qp->in.last)
		return;
	uint32_t idx = qp->orq[qp->orq_head % qp->orq_size];
	qp->orq_head++;
	qp->orq_cnt--;
	qp->sq[iw_qp_slot(idx, qp->sq_size)].done = true;
	iw_qp_complete_sq_locked(qp);
	orq_retired(qp);
}

static uint16_t end_send(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	uint64_t end = (uint64_t)qp->in.mo + s->payload_len;
	if (end > qp->in.msg_len)
		qp->in.msg_len = end;
	if (!qp->in.last)
		return 0;
	qp->rx_msn[IW_QN_SEND]++;
	unsigned flags = 0;
	uint32_t inv = 0;
	if (iw_opcode_has(op, IW_OPF_SE))
		flags |= IW_WC_SOLICITED;
	if (iw_opcode_has(op, IW_OPF_INV)) {
		int t = iw_mem_invalidate(&qp->context->mem, &qp->mreq, s->ddp.inv_stag, true);
		if (t)
			return fault_rwqe(qp, (uint16_t)t);
		flags |= IW_WC_WITH_INV;
		inv = s->ddp.inv_stag;
	}
	complete_rwqe(qp, IW_WC_RECV, flags, 0, inv);
	return 0;
}

static void end_imm(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op)
{
	uint32_t imm;
	memcpy(&imm, s->rdmap.u.imm, 4); /* stays in network order, as verbs */
	qp->rx_msn[IW_QN_SEND]++;
	qp->in.msg_len = 0;
	complete_rwqe(qp, IW_WC_RECV_RDMA_WITH_IMM,
		      IW_WC_WITH_IMM | (iw_opcode_has(op, IW_OPF_SE) ? IW_WC_SOLICITED : 0), imm, 0);
}

static void queue_irq(struct iw_qp *qp)
{
	qp->irq[(qp->irq_head + qp->irq_cnt++) % qp->irq_size] = qp->in.irqe;
	memset(&qp->in.irqe, 0, sizeof(qp->in.irqe));
	wake_tx(qp);
}

static void end_atomic_req(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	const struct iw_atomic_req *a = &s->rdmap.u.atomic_req;
	uint64_t *tgt = (uint64_t *)(void *)qp->in.irqe.src;
	uint64_t old = __atomic_load_n(tgt, __ATOMIC_SEQ_CST);
	if (a->atomic_op == IW_ATOMIC_FETCH_ADD) {
		old = __atomic_fetch_add(tgt, a->add_swap, __ATOMIC_SEQ_CST);
	} else {
		uint64_t expect = a->compare;
		__atomic_compare_exchange_n(tgt, &expect, a->add_swap, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
		old = expect;
	}
	qp->in.irqe.orig = old;
	iw_mem_placed(qp->in.irqe.mr); /* landed; the reference stays for the response */
	qp->rx_msn[iw_rdmap_opcode_qn(IW_OP_ATOMIC_REQ)]++;
	queue_irq(qp);
}

static void end_atomic_resp(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	uint32_t idx = qp->orq[qp->orq_head % qp->orq_size];
	struct iw_swqe *w = &qp->sq[iw_qp_slot(idx, qp->sq_size)];
	uint64_t v = s->rdmap.u.atomic_resp.orig_value;
	memcpy(w->sge_ptr[0], &v, sizeof(v));
	qp->rx_msn[IW_QN_ATOMIC_RESP]++;
	qp->orq_head++;
	qp->orq_cnt--;
	w->done = true;
	iw_qp_complete_sq_locked(qp);
	orq_retired(qp);
}

static struct iw_swqe *orq_entry(struct iw_qp *qp, uint32_t i)
{
	return &qp->sq[iw_qp_slot(qp->orq[(qp->orq_head + i) % qp->orq_size], qp->sq_size)];
}

/* Our outstanding Read or atomic request whose DDP header the TERMINATE
 * copied: same queue, same MSN. */
static struct iw_swqe *request_copied(struct iw_qp *qp, const struct iw_terminate *t)
{
	struct iw_ddp_hdr d;
	if (iw_ddp_hdr_parse(&d, NULL, t->ddp_hdr, t->ddp_hdr_len) < 0 || (d.ctrl & IW_DDP_T))
		return NULL;
	for (uint32_t i = 0; i < qp->orq_cnt; i++) {
		struct iw_swqe *w = orq_entry(qp, i);
		unsigned op = iw_wr_info(w->opcode)->op; /* a Read or atomic request */
		if (w->req_msn == d.msn && (int)d.qn == iw_rdmap_opcode_qn(op))
			return w;
	}
	return NULL;
}

/* The WR a peer's TERMINATE names, if still outstanding: only our Reads
 * and atomics are (a Send or Write completed when it was written). By the
 * DDP header it copied; without a copy (siw's layout, or none sent), an
 * RDMAP protection error on an STag, bounds, rights or TO (0/1/0x00-0x04)
 * can only be a request's, and requests are answered in order: the
 * oldest. */
static struct iw_swqe *term_names_request(struct iw_qp *qp, uint32_t term,
					  const struct iw_terminate *t)
{
	if (qp->orq_cnt == 0)
		return NULL;
	if (t && (t->hdrct & IW_TERM_HDR_D))
		return request_copied(qp, t);
	if (IW_TERM_LAYER(term) == IW_LAYER_RDMAP && IW_TERM_ETYPE(term) == 1 &&
	    IW_TERM_ECODE(term) <= 0x04)
		return orq_entry(qp, 0);
	return NULL;
}

static void peer_terminate(struct iw_qp *qp, const struct iw_ddp_seg *s, bool parsed)
{
	const uint8_t *raw = s->raw_hdr + IW_DDP_UNTAGGED_HDR_LEN;
	uint32_t t;
	if (qp->conn.peer_siw_term)
		t = iw_rdmap_term_siw_code(raw);
	else
		t = parsed ? s->rdmap.u.term.term : (uint16_t)(raw[0] << 8 | raw[1]);
	if (parsed)
		qp->peer_term = s->rdmap.u.term;
	bool copies = parsed && !qp->conn.peer_siw_term;
	struct iw_swqe *w = term_names_request(qp, t, copies ? &qp->peer_term : NULL);
	if (w)
		iw_qp_fault_swqe_locked(w, t, true);
	qp->term = t;
	qp->term_from_peer = true;
	qp->terminated = true;
	qp->err_msg = "the peer sent TERMINATE";
	struct iw_async_event ev = {.event_type = IW_EVENT_QP_TERMINATE, .term = t,
				    .term_from_peer = true};
	ev.element.qp = qp;
	iw_async_raise(qp->context, &ev);
	iw_qp_set_error_locked(qp);
}

static uint16_t on_end(struct iw_qp *qp, const struct iw_ddp_seg *s)
{
	unsigned op = qp->in.op;
	if (op_send(op) && iw_ddp_last(&s->ddp))
		qp->rx_send_last = (uint64_t)s->ddp.mo + s->payload_len; /* msg_tail */
	if (qp->in.mr) {
		iw_mem_put_placed(qp->in.mr);
		qp->in.mr = NULL;
		if (qp->inv_wait)
			wake_tx(qp); /* a LOCAL_INV may have waited for this */
	}
	if (qp->in.skip && op != IW_OP_READ_RESP)
		return 0;
	if (qp->in.held)
		return iw_qp_hold_end_locked(qp, s);
	switch (op) {
	case IW_OP_WRITE:
		return 0;
	case IW_OP_READ_RESP:
		end_read_resp(qp);
		return 0;
	case IW_OP_READ_REQ:
		qp->rx_msn[IW_QN_READ_REQ]++;
		queue_irq(qp);
		return 0;
	case IW_OP_TERMINATE:
		peer_terminate(qp, s, true);
		return 0;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		end_imm(qp, s, op);
		return 0;
	case IW_OP_ATOMIC_REQ:
		end_atomic_req(qp, s);
		return 0;
	case IW_OP_ATOMIC_RESP:
		end_atomic_resp(qp, s);
		return 0;
	default:
		return end_send(qp, s, op);
	}
}

/* ------------------------------------------------------------ feeding */

static bool rx_live(const struct iw_qp *qp)
{
	return qp->connected && !qp->terminated && qp->state != IW_QPS_ERR;
}

/* Errors found in a DDP or RDMAP header that arrived whole: the header can
 * be copied into the TERMINATE (RFC 5040 section 4.8) so the peer sees
 * which segment failed. Framing errors (length, CRC, markers) copy nothing. */
static bool header_error(enum iw_wire_err e)
{
	switch (e) {
	case IW_WERR_DDP_T_VERSION:
	case IW_WERR_DDP_U_VERSION:
	case IW_WERR_DDP_QN:
	case IW_WERR_RDMAP_VERSION:
	case IW_WERR_RDMAP_OPCODE:
	case IW_WERR_RDMAP_NOT_LAST:
	case IW_WERR_RDMAP_ATOMIC_OP:
		return true;
	default:
		return false;
	}
}

/* A decoder error. A Terminate whose body our strict parser refuses (siw
 * writes M/D/R in other bit positions) is still the peer's TERMINATE. */
static void decoder_error(struct iw_qp *qp, int rc)
{
	const struct iw_ddp_seg *s = &qp->frx.seg;
	if (rc == -EPROTO && qp->frx.err == IW_WERR_RDMAP_TERM &&
	    s->raw_hdr_len >= IW_DDP_UNTAGGED_HDR_LEN + 2 &&
	    (s->raw_hdr[1] & IW_RDMAP_OPMASK) == IW_OP_TERMINATE) {
		peer_terminate(qp, s, false);
		return;
	}
	uint16_t t = rc == -EBADMSG ? IW_TERM_LLP_CRC : qp->frx.err_term;
	bool copy = rc == -EPROTO && header_error(qp->frx.err);
	iw_qp_terminate_locked(qp, t, copy ? s : NULL, iw_wire_err_str(qp->frx.err));
}

static void handle(struct iw_qp *qp, const struct iw_rx_event *ev)
{
	uint16_t t = 0;
	/* IW_RX_PAYLOAD_RUN and IW_RX_SEG_WHOLE are no public kinds */
	switch ((unsigned)ev->kind) {
	case IW_RX_SEG_HDR:
	case IW_RX_SEG_WHOLE:
		/* With the payload that came with it (iw_fpdu_rx_next_held),
		 * and for a whole segment its end too. */
		t = on_hdr(qp, ev->seg);
		if (!t && ev->len && rx_live(qp))
			on_payload(qp, ev->data, ev->len, ev->off);
		if (!t && ev->kind == IW_RX_SEG_WHOLE && rx_live(qp))
			t = on_end(qp, ev->seg);
		break;
	case IW_RX_PAYLOAD:
		on_payload(qp, ev->data, ev->len, ev->off);
		break;
	case IW_RX_PAYLOAD_RUN:
		on_run(qp, ev);
		break;
	case IW_RX_SEG_END:
		t = on_end(qp, ev->seg);
		break;
	}
	if (t)
		iw_qp_terminate_locked(qp, t, ev->seg, iw_term_str(t));
}

/* The octets of one read, through the decoder (qp->lock held). */
static size_t rx_locked(struct iw_qp *qp, const uint8_t *in, size_t len)
{
	size_t total = 0;
	while (total < len && rx_live(qp)) {
		struct iw_rx_event ev;
		size_t used = 0;
		/* in stays put until the flush below: the CRC runs over it in
		 * one call per contiguous run, not one per marker interval. */
		int rc = iw_fpdu_rx_next_held(&qp->frx, &ev, in + total, len - total, &used);
		total += used;
		if (rc == 0)
			break;
		if (rc < 0) {
			decoder_error(qp, rc);
			break;
		}
		handle(qp, &ev);
	}
	iw_fpdu_rx_crc_flush(&qp->frx);
	/* After an error the rest of the stream is read and dropped. */
	return rx_live(qp) ? total : len;
}

int iw_qp_rx(struct iw_qp *qp, const uint8_t *in, size_t len, size_t *consumed)
{
	iw_qp_lock(qp);
	iw_qp_rx_direct_settle_locked(qp);
	*consumed = rx_locked(qp, in, len);
	iw_qp_unlock(qp);
	return 0;
}

/* Where the next payload octets may be received directly: the tagged
 * destination, or the span of the receive WQE at the current offset. */
static size_t direct_locked(struct iw_qp *qp, uint8_t **dst)
{
	size_t n = 0;
	iw_qp_rx_direct_settle_locked(qp);
	size_t d = rx_live(qp) ? iw_fpdu_rx_direct_len(&qp->frx) : 0;
	uint32_t off = qp->frx.payload_done;
	if (d && !qp->in.skip) {
		if (qp->in.dst) {
			*dst = qp->in.dst + off;
			n = d;
		} else if (qp->in.have_rwqe && op_send(qp->in.op)) {
			uint64_t span = iw_rwqe_span(qp->in.rwqe, (uint64_t)qp->in.mo + off, dst);
			n = span < d ? (size_t)span : d;
		}
	}
	qp->rx_direct_busy = n > 0;
	return n;
}

size_t iw_qp_rx_direct(struct iw_qp *qp, uint8_t **dst)
{
	iw_qp_lock(qp);
	size_t n = direct_locked(qp, dst);
	iw_qp_unlock(qp);
	return n;
}

size_t iw_qp_rx_direct_hint(struct iw_qp *qp, uint8_t **dst, uint32_t *seg_len)
{
	iw_qp_lock(qp);
	size_t n = direct_locked(qp, dst);
	*seg_len = qp->frx.seg.payload_len;
	iw_qp_unlock(qp);
	return n;
}

static int direct_done_locked(struct iw_qp *qp, size_t n)
{
	uint8_t *dst = NULL;
	uint32_t off = qp->frx.payload_done;
	if (qp->in.dst)
		dst = qp->in.dst + off;
	else if (qp->in.have_rwqe)
		iw_rwqe_span(qp->in.rwqe, (uint64_t)qp->in.mo + off, &dst);
	int rc = dst ? iw_fpdu_rx_direct_done(&qp->frx, dst, n) : -EINVAL;
	iw_qp_rx_direct_settle_locked(qp);
	return rc;
}

int iw_qp_rx_direct_done(struct iw_qp *qp, size_t n)
{
	iw_qp_lock(qp);
	int rc = direct_done_locked(qp, n);
	iw_qp_unlock(qp);
	return rc;
}

/* The QP's events and state, taken with the receive batch under its lock
 * (qp_link.h). */
void iw_qp_status_locked(struct iw_qp *qp, struct iw_qp_status *st)
{
	st->events = qp->events;
	qp->events = 0;
	st->err = qp->state == IW_QPS_ERR;
	st->tx_pending = iw_qp_tx_pending_locked(qp);
}

/* Where the segment being received ends in its message, and how long the
 * message most likely is: a Write or a Send as long as the last one of its
 * kind (an application's fixed I/O size), a Read Response as long as its
 * sink. false: no guess. */
static bool msg_extent(const struct iw_qp *qp, uint64_t *end, uint64_t *total)
{
	const struct iw_ddp_seg *s = &qp->frx.seg;
	if (qp->in.op == IW_OP_WRITE) {
		*end = s->ddp.to + s->payload_len - qp->rx_wr.start;
		*total = qp->rx_wr.last_len;
		return qp->rx_wr.in_msg;
	}
	if (qp->in.op == IW_OP_READ_RESP) {
		*end = s->payload_len;
		*total = qp->in.dst_room;
		return true;
	}
	*end = (uint64_t)s->ddp.mo + s->payload_len;
	*total = qp->rx_send_last;
	return op_send(qp->in.op);
}

/* Peers cut a message at their MULPDU, so equal messages end each in the
 * same short segment: its length, if the message in progress ends in the
 * segment after this one. A hint for the read plan, never trusted. */
static uint32_t msg_tail(const struct iw_qp *qp)
{
	uint64_t end, total;
	const struct iw_ddp_seg *s = &qp->frx.seg;
	if (iw_ddp_last(&s->ddp) || !msg_extent(qp, &end, &total))
		return 0;
	if (end >= total || total - end > s->payload_len)
		return 0;
	return (uint32_t)(total - end);
}

int iw_qp_rx_batch(struct iw_qp *qp, const struct iw_qp_rx_batch *b, struct iw_qp_status *st)
{
	int rc = 0;
	iw_qp_lock(qp);
	if (b->placed)
		rc = direct_done_locked(qp, b->placed);
	iw_qp_rx_direct_settle_locked(qp);
	if (b->len)
		rx_locked(qp, b->in, b->len);
	st->direct = direct_locked(qp, &st->direct_dst);
	st->seg_len = qp->frx.seg.payload_len;
	st->in_payload = iw_fpdu_rx_direct_len(&qp->frx) > 0;
	st->tail = st->in_payload ? msg_tail(qp) : 0;
	st->num_spec = iw_qp_rx_spec_locked(qp, st->direct, st->direct_dst, st->spec);
	iw_qp_status_locked(qp, st);
	iw_qp_unlock(qp);
	return rc;
}
