/* SPDX-License-Identifier: BSD-2-Clause */
/* Work request intake (wr.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/wr.h"
#include "base/alloc.h"

static void put_refs(struct iw_mr_int **mr, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		iw_mem_put(mr[i]);
		mr[i] = NULL;
	}
}

/* Check n SGEs for op and take their references; on failure none is held.
 * The check's negative errno becomes the positive one verbs return. */
static int check_sges(struct iw_context *ctx, struct iw_pd *pd, const struct iw_sge *sge,
		      uint32_t n, enum iw_mem_op op, uint8_t **ptr, struct iw_mr_int **mr)
{
	for (uint32_t i = 0; i < n; i++) {
		int rc = iw_mem_check_local(&ctx->mem, pd, &sge[i], op, &mr[i], &ptr[i]);
		if (rc) {
			put_refs(mr, i);
			return -rc;
		}
	}
	return 0;
}

static uint64_t sge_total(const struct iw_sge *sge, uint32_t n)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < n; i++)
		t += sge[i].length;
	return t;
}

int iw_rwqe_fill(struct iw_rwqe *w, struct iw_context *ctx, struct iw_pd *pd,
		 const struct iw_recv_wr *wr, uint32_t max_sge)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	w->len = 0;
	if (w->num_sge)
		memcpy(w->sge, wr->sg_list, w->num_sge * sizeof(w->sge[0]));
	int rc = check_sges(ctx, pd, w->sge, w->num_sge, IW_MEM_LOCAL_WRITE, w->sge_ptr, w->sge_mr);
	if (rc)
		return rc;
	w->len = sge_total(w->sge, w->num_sge);
	return 0;
}

void iw_rwqe_release(struct iw_rwqe *w)
{
	put_refs(w->sge_mr, w->num_sge);
}

/* The send WR opcode facts (wr.h). */
const struct iw_wr_info iw_wr_infos[] = {
	[IW_WR_RDMA_WRITE] = {true, IW_WC_RDMA_WRITE, IW_OP_WRITE, IW_OP_WRITE, IW_WRF_TAGGED},
	[IW_WR_RDMA_WRITE_WITH_IMM] = {true, IW_WC_RDMA_WRITE, IW_OP_WRITE, IW_OP_WRITE,
				       IW_WRF_TAGGED | IW_WRF_IMM | IW_WRF_RFC7306},
	[IW_WR_SEND] = {true, IW_WC_SEND, IW_OP_SEND, IW_OP_SEND_SE, 0},
	/* no payload: one Immediate Data message */
	[IW_WR_SEND_WITH_IMM] = {true, IW_WC_SEND, IW_OP_IMM, IW_OP_IMM_SE,
				 IW_WRF_IMM | IW_WRF_RFC7306},
	[IW_WR_RDMA_READ] = {true, IW_WC_RDMA_READ, IW_OP_READ_REQ, IW_OP_READ_REQ, IW_WRF_ORQ},
	[IW_WR_ATOMIC_CMP_AND_SWP] = {true, IW_WC_COMP_SWAP, IW_OP_ATOMIC_REQ, IW_OP_ATOMIC_REQ,
				      IW_WRF_ORQ | IW_WRF_RFC7306},
	[IW_WR_ATOMIC_FETCH_AND_ADD] = {true, IW_WC_FETCH_ADD, IW_OP_ATOMIC_REQ,
					IW_OP_ATOMIC_REQ, IW_WRF_ORQ | IW_WRF_RFC7306},
	[IW_WR_LOCAL_INV] = {true, IW_WC_LOCAL_INV, 0, 0, IW_WRF_LOCAL},
	[IW_WR_BIND_MW] = {true, IW_WC_BIND_MW, 0, 0, IW_WRF_LOCAL},
	[IW_WR_SEND_WITH_INV] = {true, IW_WC_SEND, IW_OP_SEND_INV, IW_OP_SEND_SE_INV, 0},
	[IW_WR_REG_MR] = {true, IW_WC_REG_MR, 0, 0, IW_WRF_LOCAL},
};

const unsigned iw_wr_infos_len = sizeof(iw_wr_infos) / sizeof(iw_wr_infos[0]);

static int fill_inline(struct iw_swqe *w, const struct iw_qp *qp)
{
	uint64_t len = sge_total(w->sge, w->num_sge);
	if (len > qp->cap.max_inline_data)
		return EINVAL;
	w->inline_buf = len <= IW_INLINE_SMALL ? w->inline_small
					       : iw_malloc(qp->context->alloc, len);
	if (!w->inline_buf)
		return ENOMEM;
	uint64_t off = 0;
	for (uint32_t i = 0; i < w->num_sge; i++) {
		/* Inline data is read from the caller's buffers now; no lkey
		 * is needed (verbs semantics). */
		memcpy(w->inline_buf + off, (const void *)(uintptr_t)w->sge[i].addr,
		       w->sge[i].length);
		off += w->sge[i].length;
	}
	w->num_sge = len ? 1 : 0;
	w->sge[0].length = (uint32_t)len;
	w->sge_ptr[0] = w->inline_buf;
	w->len = len;
	return 0;
}

static int fill_payload(struct iw_swqe *w, struct iw_qp *qp, enum iw_mem_op op)
{
	if (w->flags & IW_SEND_INLINE)
		return fill_inline(w, qp);
	int rc = check_sges(qp->context, qp->pd, w->sge, w->num_sge, op, w->sge_ptr, w->sge_mr);
	if (rc)
		return rc;
	w->len = sge_total(w->sge, w->num_sge);
	return 0;
}

/* A Read's one sink SGE: an MR with REMOTE_WRITE or READ_SINK, or a window bound now
 * (type 2: to this QP) with REMOTE_WRITE; a reference held until the WR
 * completes, so the window cannot be freed under the Read. */
static int fill_sink(struct iw_swqe *w, struct iw_qp *qp)
{
	int rc = iw_mem_check_sink(&qp->context->mem, &qp->mreq, &w->sge[0], &w->sge_mr[0],
				   &w->sge_ptr[0]);
	if (rc)
		return -rc;
	w->len = w->sge[0].length;
	return 0;
}

/* The window and the MR are held until the WR completes, as REG_MR holds
 * its MR; the bind itself is checked when it runs (iw_mem_bind_mw). A
 * type 1 window is bound by iw_bind_mw only, a type 2 one by a posted
 * WR only (verbs); a type 1 unbind (length 0) names no MR. */
static int fill_bind_mw(struct iw_swqe *w, const struct iw_send_wr *wr)
{
	const struct iw_mw_bind_req *b = &wr->wr.bind_mw.bind_info;
	const struct iw_mw *mw = wr->wr.bind_mw.mw;
	bool verb = w->flags & IW_SEND_VERB_BIND;

	if (!mw || (mw->type == IW_MW_TYPE_1) != verb || (!b->mr && !(verb && !b->length)))
		return EINVAL;
	w->num_sge = 0;
	w->bind_mw = (struct iw_mw_int *)wr->wr.bind_mw.mw;
	iw_mem_hold(&w->bind_mw->win);
	w->reg_mr = b->mr ? iw_mr_int(b->mr) : NULL;
	if (w->reg_mr)
		iw_mem_hold(w->reg_mr);
	w->reg_key = wr->wr.bind_mw.rkey;
	w->reg_access = (int)b->mw_access_flags;
	w->reg_iova = b->addr;
	w->reg_len = b->length;
	return 0;
}

static int fill_by_opcode(struct iw_swqe *w, struct iw_qp *qp, const struct iw_send_wr *wr)
{
	switch (wr->opcode) {
	case IW_WR_SEND_WITH_IMM:
		/* RFC 7306 has Immediate Data messages but no Send that carries
		 * both payload and an immediate: a payload-less SEND_WITH_IMM is
		 * one Immediate Data message (one receive at the peer); with a
		 * payload it would take two receives, which is not verbs
		 * semantics, so it is refused. */
		if (sge_total(w->sge, w->num_sge) != 0)
			return EINVAL;
		w->num_sge = 0;
		w->data_done = true;
		return 0;
	case IW_WR_SEND:
	case IW_WR_SEND_WITH_INV:
	case IW_WR_RDMA_WRITE:
	case IW_WR_RDMA_WRITE_WITH_IMM:
		if (w->num_sge > qp->cap.max_send_sge)
			return EINVAL;
		return fill_payload(w, qp, IW_MEM_LOCAL_READ);
	case IW_WR_RDMA_READ:
		/* The sink is written by a tagged Read Response: one SGE whose
		 * MR allows REMOTE_WRITE, as on every iWARP device, or
		 * READ_SINK (iw_reg_mr). */
		if (w->num_sge != 1 || (w->flags & IW_SEND_INLINE))
			return EINVAL;
		return fill_sink(w, qp);
	case IW_WR_ATOMIC_CMP_AND_SWP:
	case IW_WR_ATOMIC_FETCH_AND_ADD:
		if (w->num_sge != 1 || w->sge[0].length != 8 || (w->flags & IW_SEND_INLINE) ||
		    (w->remote_addr & 7))
			return EINVAL;
		return fill_payload(w, qp, IW_MEM_LOCAL_WRITE);
	case IW_WR_LOCAL_INV:
		w->num_sge = 0;
		return 0;
	case IW_WR_REG_MR:
		if (!wr->reg.mr)
			return EINVAL;
		w->num_sge = 0;
		/* Held until the WR completes: the MR must not be freed
		 * before the WR registers it (iw_swqe_release drops it). */
		w->reg_mr = iw_mr_int(wr->reg.mr);
		iw_mem_hold(w->reg_mr);
		w->reg_key = wr->reg.key;
		w->reg_access = wr->reg.access;
		w->reg_iova = wr->reg.iova;
		w->reg_len = wr->reg.length;
		w->reg_addr = wr->reg.addr;
		return 0;
	case IW_WR_BIND_MW:
		return fill_bind_mw(w, wr);
	default:
		return EINVAL;
	}
}

int iw_swqe_fill(struct iw_swqe *w, struct iw_qp *qp, const struct iw_send_wr *wr)
{
	/* The WQE's SGE slice holds max_send_sge entries. */
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (iw_wr_has(wr->opcode, IW_WRF_RFC7306) && !(qp->create_flags & IW_QP_CREATE_RFC7306))
		return EINVAL;
	/* Reset everything but the out-of-line SGE arrays. */
	struct iw_sge *sge = w->sge;
	uint8_t **ptr = w->sge_ptr;
	struct iw_mr_int **mr = w->sge_mr;
	memset(w, 0, sizeof(*w));
	w->sge = sge;
	w->sge_ptr = ptr;
	w->sge_mr = mr;
	w->wr_id = wr->wr_id;
	w->vendor_err = IW_TERM_NONE;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IW_SEND_SIGNALED);
	w->num_sge = (uint32_t)wr->num_sge;
	if (w->num_sge)
		memcpy(w->sge, wr->sg_list, w->num_sge * sizeof(w->sge[0]));
	w->imm_or_inv = wr->imm_data;
	if (wr->opcode == IW_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IW_WR_ATOMIC_FETCH_AND_ADD) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	return fill_by_opcode(w, qp, wr);
}

void iw_swqe_release(struct iw_swqe *w, const struct iw_alloc_ops *a)
{
	if (w->reg_mr) {
		iw_mem_put(w->reg_mr);
		w->reg_mr = NULL;
	}
	if (w->bind_mw) {
		iw_mem_put(&w->bind_mw->win);
		w->bind_mw = NULL;
	}
	if (w->inline_buf) {
		if (w->inline_buf != w->inline_small)
			iw_free(a, w->inline_buf);
		w->inline_buf = NULL;
		w->num_sge = 0;
	}
	put_refs(w->sge_mr, w->num_sge);
}

/* Find the SGE holding message offset off: index and offset inside it. */
static bool sge_find(const struct iw_sge *sge, uint32_t n, uint64_t off, uint32_t *idx,
		     uint64_t *in)
{
	for (uint32_t i = 0; i < n; i++) {
		if (off < sge[i].length) {
			*idx = i;
			*in = off;
			return true;
		}
		off -= sge[i].length;
	}
	return false;
}

uint64_t iw_rwqe_span(struct iw_rwqe *w, uint64_t off, uint8_t **dst)
{
	uint32_t i;
	uint64_t in;
	if (!sge_find(w->sge, w->num_sge, off, &i, &in))
		return 0;
	*dst = w->sge_ptr[i] + in;
	return w->sge[i].length - in;
}

uint64_t iw_rwqe_scatter(struct iw_rwqe *w, uint64_t off, const uint8_t *src, uint64_t n)
{
	uint64_t done = 0;
	while (done < n) {
		uint8_t *dst;
		uint64_t span = iw_rwqe_span(w, off + done, &dst);
		if (span == 0)
			break;
		if (span > n - done)
			span = n - done;
		memcpy(dst, src + done, span);
		done += span;
	}
	return done;
}

int iw_swqe_gather(const struct iw_swqe *w, uint64_t off, uint64_t n, struct iovec *iov, int cap)
{
	uint32_t i;
	uint64_t in;
	int cnt = 0;
	if (n == 0 || !sge_find(w->sge, w->num_sge, off, &i, &in))
		return 0;
	for (; i < w->num_sge && n && cnt < cap; i++, in = 0) {
		uint64_t take = w->sge[i].length - in;
		if (take > n)
			take = n;
		if (take == 0)
			continue;
		iov[cnt].iov_base = w->sge_ptr[i] + in;
		iov[cnt].iov_len = take;
		cnt++;
		n -= take;
	}
	return cnt;
}

/* ------------------------------------------------------------ SGE storage */

int iw_wqe_sges_alloc(struct iw_wqe_sges *st, const struct iw_alloc_ops *a, uint32_t n,
		      uint32_t max_sge)
{
	size_t k = (size_t)n * max_sge;
	st->alloc = a;
	st->sge = iw_calloc(a, k, sizeof(*st->sge));
	st->ptr = iw_calloc(a, k, sizeof(*st->ptr));
	st->mr = iw_calloc(a, k, sizeof(*st->mr));
	if (!st->sge || !st->ptr || !st->mr) {
		iw_wqe_sges_free(st);
		return ENOMEM;
	}
	return 0;
}

void iw_wqe_sges_free(struct iw_wqe_sges *st)
{
	iw_free(st->alloc, st->sge);
	iw_free(st->alloc, st->ptr);
	iw_free(st->alloc, st->mr);
	st->sge = NULL;
	st->ptr = NULL;
	st->mr = NULL;
}

void iw_wqe_sges_slice(const struct iw_wqe_sges *st, uint32_t i, uint32_t max_sge,
		       struct iw_sge **sge, uint8_t ***ptr, struct iw_mr_int ***mr)
{
	size_t at = (size_t)i * max_sge;
	*sge = st->sge + at;
	*ptr = st->ptr + at;
	*mr = st->mr + at;
}

void iw_rwqe_move(struct iw_rwqe_buf *dst, struct iw_rwqe *src)
{
	dst->w.wr_id = src->wr_id;
	dst->w.num_sge = src->num_sge;
	dst->w.len = src->len;
	dst->w.sge = dst->sge;
	dst->w.sge_ptr = dst->ptr;
	dst->w.sge_mr = dst->mr;
	for (uint32_t i = 0; i < src->num_sge; i++) {
		dst->sge[i] = src->sge[i];
		dst->ptr[i] = src->sge_ptr[i];
		dst->mr[i] = src->sge_mr[i];
		src->sge_mr[i] = NULL;
	}
	src->num_sge = 0;
}
