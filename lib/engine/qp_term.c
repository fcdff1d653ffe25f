/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sending TERMINATE (RFC 5040 section 4.8): the last FPDU a QP sends after
 * it detects a peer's violation. It copies the offending DDP header (and a
 * Read Request's RDMAP header) so the peer can tell which message failed;
 * LLP errors (CRC, markers, framing) copy nothing, since the header itself
 * cannot be trusted. The FPDUs already queued stay in front of it, so the
 * stream remains well-formed up to the end.
 */
#include <string.h>

#include "engine/context.h"
#include "engine/qp.h"

/* LLP errors and our own catastrophic errors are fatal; protection and
 * tagged-buffer errors are access errors, except a bad DDP version, which
 * is a malformed request like the other syntax errors. */
static enum iw_event_type event_for(uint16_t term)
{
	if (IW_TERM_LAYER(term) == IW_LAYER_LLP || term == IW_TERM_RDMAP_CATASTROPHIC)
		return IW_EVENT_QP_FATAL;
	if (term == IW_TERM_DDP_T_VERSION)
		return IW_EVENT_QP_REQ_ERR;
	if (IW_TERM_ETYPE(term) == 1) /* protection / tagged buffer errors */
		return IW_EVENT_QP_ACCESS_ERR;
	return IW_EVENT_QP_REQ_ERR;
}

/* ------------------------------------------------------------ WR at fault */

/*
 * The one table from a TERMINATE to the completion status of the work
 * request at fault (verbs.h, iw_poll_cq, has it for users). "sent": we
 * detected the error in the peer's message, and the WR at fault is ours
 * that the message was filling or answering (the receive of a Send, the
 * RDMA Read whose Read Response it was). "peer": the peer's TERMINATE
 * names our Read or atomic request. Statuses as libibverbs defines them:
 * REM_* say the responder refused the request, LOC_* that the local WR
 * could not be completed. Rows are tried in order; ecode -1 matches any.
 * LLP errors (CRC, markers, framing, RTR) break the stream, not a WR: no
 * row, every WR flushes.
 *
 * Facts: siw completes a receive whose Send with Invalidate it cannot
 * honour with REM_INV_REQ_ERR and an overlong Send's receive with
 * LOC_LEN_ERR; cxgb4 reports a tagged placement its hardware refuses as
 * LOC_ACCESS_ERR (siw says LOC_PROT_ERR, which verbs reserves for the
 * WR's own SGEs).
 */
struct term_status_row {
	uint8_t layer, etype;
	int16_t ecode;
	enum iw_wc_status sent, peer;
};

static const struct term_status_row term_status_rows[] = {
	/* RDMAP local catastrophic: our local WR failed (exec_local) */
	{IW_LAYER_RDMAP, 0, -1, IW_WC_LOC_QP_OP_ERR, IW_WC_REM_OP_ERR},
	/* RDMAP remote protection: a Send with Invalidate we cannot honour;
	 * the peer's: our Read/atomic's source STag, bounds or rights */
	{IW_LAYER_RDMAP, 1, -1, IW_WC_REM_INV_REQ_ERR, IW_WC_REM_ACCESS_ERR},
	/* RDMAP remote operation: version, opcode */
	{IW_LAYER_RDMAP, 2, 0x05, IW_WC_LOC_QP_OP_ERR, IW_WC_REM_INV_REQ_ERR},
	{IW_LAYER_RDMAP, 2, 0x06, IW_WC_LOC_QP_OP_ERR, IW_WC_REM_INV_REQ_ERR},
	/* STag cannot be invalidated */
	{IW_LAYER_RDMAP, 2, 0x09, IW_WC_REM_INV_REQ_ERR, IW_WC_REM_OP_ERR},
	/* catastrophic (stream, global), unspecified */
	{IW_LAYER_RDMAP, 2, -1, IW_WC_LOC_QP_OP_ERR, IW_WC_REM_OP_ERR},
	{IW_LAYER_DDP, 0, -1, IW_WC_LOC_QP_OP_ERR, IW_WC_REM_OP_ERR},
	/* DDP tagged buffer: a Read Response aimed outside our sink */
	{IW_LAYER_DDP, 1, -1, IW_WC_LOC_ACCESS_ERR, IW_WC_REM_ACCESS_ERR},
	/* DDP untagged: MO out of range, message too long for the receive */
	{IW_LAYER_DDP, 2, 0x04, IW_WC_LOC_LEN_ERR, IW_WC_REM_INV_REQ_ERR},
	{IW_LAYER_DDP, 2, 0x05, IW_WC_LOC_LEN_ERR, IW_WC_REM_INV_REQ_ERR},
	/* QN, MSN (IRD exceeded), no buffer, version */
	{IW_LAYER_DDP, 2, -1, IW_WC_LOC_QP_OP_ERR, IW_WC_REM_INV_REQ_ERR},
};

enum iw_wc_status iw_term_wc_status(uint32_t term, bool from_peer)
{
	if (!IW_TERM_IS_TRIPLE(term))
		return IW_WC_WR_FLUSH_ERR;
	for (size_t i = 0; i < sizeof(term_status_rows) / sizeof(term_status_rows[0]); i++) {
		const struct term_status_row *r = &term_status_rows[i];
		if (r->layer == IW_TERM_LAYER(term) && r->etype == IW_TERM_ETYPE(term) &&
		    (r->ecode < 0 || r->ecode == (int)IW_TERM_ECODE(term)))
			return from_peer ? r->peer : r->sent;
	}
	return IW_WC_WR_FLUSH_ERR;
}

void iw_qp_fault_swqe_locked(struct iw_swqe *w, uint32_t term, bool from_peer)
{
	enum iw_wc_status st = iw_term_wc_status(term, from_peer);
	if (st == IW_WC_WR_FLUSH_ERR || w->done)
		return;
	w->status = st;
	w->vendor_err = term;
	w->done = true;
}

/* ------------------------------------------------------------ TERMINATE */

static void fill_copies(struct iw_terminate *t, const struct iw_ddp_seg *seg)
{
	size_t hl = iw_ddp_hdr_len(&seg->ddp);
	if (seg->raw_hdr_len < hl)
		return;
	t->hdrct = IW_TERM_HDR_M | IW_TERM_HDR_D;
	t->ddp_seg_len = seg->ulpdu_len;
	memcpy(t->ddp_hdr, seg->raw_hdr, hl);
	t->ddp_hdr_len = (uint8_t)hl;
	if (iw_ddp_opcode(&seg->ddp) == IW_OP_READ_REQ &&
	    seg->raw_hdr_len >= hl + IW_RDMAP_READ_REQ_LEN) {
		t->hdrct |= IW_TERM_HDR_R;
		memcpy(t->rdma_hdr, seg->raw_hdr + hl, IW_RDMAP_READ_REQ_LEN);
	}
}

int iw_term_hdr_build(uint8_t *h, size_t cap, uint16_t term, uint32_t msn,
		      const struct iw_ddp_seg *seg)
{
	struct iw_terminate t = {.term = term};
	if (seg && IW_TERM_LAYER(term) != IW_LAYER_LLP)
		fill_copies(&t, seg);
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true),
			       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_TERMINATE)};
	d.qn = IW_QN_TERMINATE;
	d.msn = msn;
	int n = iw_ddp_hdr_build(h, cap, &d);
	if (n < 0)
		return n;
	int m = iw_rdmap_term_build(h + n, cap - (size_t)n, &t);
	return m < 0 ? m : n + m;
}

static void queue_terminate(struct iw_qp *qp, uint16_t term, const struct iw_ddp_seg *seg)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	int n = iw_term_hdr_build(h, sizeof(h), term, qp->tx_msn[IW_QN_TERMINATE]++, seg);
	if (n < 0 || iw_qp_tx_term_locked(qp, h, (size_t)n) < 0)
		qp->err_msg = "TERMINATE could not be queued (out of memory)";
}

void iw_qp_terminate_locked(struct iw_qp *qp, uint16_t term, const struct iw_ddp_seg *seg,
			    const char *why)
{
	if (qp->terminated || qp->state == IW_QPS_ERR)
		return;
	qp->term = term;
	qp->term_from_peer = false;
	qp->err_msg = why;
	if (qp->connected)
		queue_terminate(qp, term, seg);
	qp->terminated = true;
	struct iw_async_event ev = {.event_type = event_for(term), .term = term};
	ev.element.qp = qp;
	iw_async_raise(qp->context, &ev);
	iw_qp_set_error_locked(qp);
}
