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
