/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path behind ibv_post_send, ibv_post_recv, ibv_post_srq_recv and
 * ibv_poll_cq (static inline calls through ibv_context->ops): work
 * requests and completions are converted in batches on the stack, never
 * allocated. SGE lists are passed as they are: struct ibv_sge and struct
 * iw_sge have one layout.
 */
#include <errno.h>
#include <string.h>

#include "cv.h"

#define CV_BATCH 16

_Static_assert(sizeof(struct ibv_sge) == sizeof(struct iw_sge), "sge layout");
_Static_assert(offsetof(struct ibv_sge, addr) == offsetof(struct iw_sge, addr), "sge layout");
_Static_assert(offsetof(struct ibv_sge, length) == offsetof(struct iw_sge, length), "sge layout");
_Static_assert(offsetof(struct ibv_sge, lkey) == offsetof(struct iw_sge, lkey), "sge layout");
CV_SAME(IW_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);
CV_SAME(IW_WR_RDMA_READ, IBV_WR_RDMA_READ);
CV_SAME(IW_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
CV_SAME(IW_SEND_FENCE, IBV_SEND_FENCE);
CV_SAME(IW_SEND_SIGNALED, IBV_SEND_SIGNALED);
CV_SAME(IW_SEND_SOLICITED, IBV_SEND_SOLICITED);
CV_SAME(IW_SEND_INLINE, IBV_SEND_INLINE);

static int cv_send_wr(struct iw_send_wr *d, const struct ibv_send_wr *s)
{
	if (s->opcode > IBV_WR_SEND_WITH_INV)
		return EINVAL; /* TSO, driver opcodes */
	d->wr_id = s->wr_id;
	d->sg_list = (struct iw_sge *)s->sg_list;
	d->num_sge = s->num_sge;
	d->opcode = (enum iw_wr_opcode)s->opcode;
	d->send_flags = s->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
					 IBV_SEND_INLINE);
	d->imm_data = s->imm_data; /* shares its union with invalidate_rkey */
	if (s->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || s->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		d->wr.atomic.remote_addr = s->wr.atomic.remote_addr;
		d->wr.atomic.compare_add = s->wr.atomic.compare_add;
		d->wr.atomic.swap = s->wr.atomic.swap;
		d->wr.atomic.rkey = s->wr.atomic.rkey;
	} else if (s->opcode == IBV_WR_BIND_MW) {
		return cv_bind_wr(d, s);
	} else {
		d->wr.rdma.remote_addr = s->wr.rdma.remote_addr;
		d->wr.rdma.rkey = s->wr.rdma.rkey;
	}
	return 0;
}

int cv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct iw_qp *iw = cv_container_of(qp, struct cv_qp, qp)->iw;
	struct iw_send_wr batch[CV_BATCH];
	struct ibv_send_wr *src[CV_BATCH];

	while (wr) {
		int n = 0, r = 0;
		for (; wr && n < CV_BATCH; wr = wr->next, n++) {
			memset(&batch[n], 0, offsetof(struct iw_send_wr, reg));
			src[n] = wr;
			batch[n].next = &batch[n + 1];
			if ((r = cv_send_wr(&batch[n], wr)) != 0)
				break;
		}
		struct iw_send_wr *ibad = NULL;
		if (n > 0) {
			batch[n - 1].next = NULL;
			int pr = iw_post_send(iw, batch, &ibad);
			if (pr) {
				*bad_wr = ibad ? src[ibad - batch] : src[0];
				return pr;
			}
		}
		if (r) {
			*bad_wr = src[n];
			return r;
		}
	}
	return 0;
}

static int cv_recv_batch(struct iw_recv_wr *batch, struct ibv_recv_wr **src, struct ibv_recv_wr **wr)
{
	int n = 0;

	for (; *wr && n < CV_BATCH; *wr = (*wr)->next, n++) {
		src[n] = *wr;
		batch[n] = (struct iw_recv_wr){.wr_id = (*wr)->wr_id, .next = &batch[n + 1],
					       .sg_list = (struct iw_sge *)(*wr)->sg_list,
					       .num_sge = (*wr)->num_sge};
	}
	batch[n - 1].next = NULL;
	return n;
}

typedef int (*cv_recv_fn)(void *obj, struct iw_recv_wr *wr, struct iw_recv_wr **bad);

static int cv_post_recvs(void *obj, cv_recv_fn post, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct iw_recv_wr batch[CV_BATCH];
	struct ibv_recv_wr *src[CV_BATCH];

	while (wr) {
		cv_recv_batch(batch, src, &wr);
		struct iw_recv_wr *ibad = NULL;
		int r = post(obj, batch, &ibad);
		if (r) {
			*bad_wr = ibad ? src[ibad - batch] : src[0];
			return r;
		}
	}
	return 0;
}

static int cv_iw_post_recv(void *qp, struct iw_recv_wr *wr, struct iw_recv_wr **bad)
{
	return iw_post_recv(qp, wr, bad);
}

static int cv_iw_post_srq_recv(void *srq, struct iw_recv_wr *wr, struct iw_recv_wr **bad)
{
	return iw_post_srq_recv(srq, wr, bad);
}

int cv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return cv_post_recvs(cv_container_of(qp, struct cv_qp, qp)->iw, cv_iw_post_recv, wr, bad_wr);
}

int cv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return cv_post_recvs(cv_container_of(srq, struct cv_srq, srq)->iw, cv_iw_post_srq_recv, wr,
			     bad_wr);
}

/* libiwarp's statuses by name: the numbering differs (no EEC). */
static enum ibv_wc_status cv_wc_status(enum iw_wc_status s)
{
	static const enum ibv_wc_status map[] = {
		[IW_WC_SUCCESS] = IBV_WC_SUCCESS,
		[IW_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
		[IW_WC_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
		[IW_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
		[IW_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
		[IW_WC_MW_BIND_ERR] = IBV_WC_MW_BIND_ERR,
		[IW_WC_BAD_RESP_ERR] = IBV_WC_BAD_RESP_ERR,
		[IW_WC_LOC_ACCESS_ERR] = IBV_WC_LOC_ACCESS_ERR,
		[IW_WC_REM_INV_REQ_ERR] = IBV_WC_REM_INV_REQ_ERR,
		[IW_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
		[IW_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
		[IW_WC_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
		[IW_WC_RNR_RETRY_EXC_ERR] = IBV_WC_RNR_RETRY_EXC_ERR,
		[IW_WC_LOC_RDD_VIOL_ERR] = IBV_WC_LOC_RDD_VIOL_ERR,
		[IW_WC_REM_INV_RD_REQ_ERR] = IBV_WC_REM_INV_RD_REQ_ERR,
		[IW_WC_REM_ABORT_ERR] = IBV_WC_REM_ABORT_ERR,
		[IW_WC_INV_EECN_ERR] = IBV_WC_INV_EECN_ERR,
		[IW_WC_INV_EEC_STATE_ERR] = IBV_WC_INV_EEC_STATE_ERR,
		[IW_WC_FATAL_ERR] = IBV_WC_FATAL_ERR,
		[IW_WC_RESP_TIMEOUT_ERR] = IBV_WC_RESP_TIMEOUT_ERR,
		[IW_WC_GENERAL_ERR] = IBV_WC_GENERAL_ERR,
	};
	if ((unsigned int)s < sizeof(map) / sizeof(map[0]))
		return map[s];
	return IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode cv_wc_opcode(enum iw_wc_opcode op)
{
	switch (op) {
	case IW_WC_SEND: return IBV_WC_SEND;
	case IW_WC_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
	case IW_WC_RDMA_READ: return IBV_WC_RDMA_READ;
	case IW_WC_COMP_SWAP: return IBV_WC_COMP_SWAP;
	case IW_WC_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case IW_WC_BIND_MW: return IBV_WC_BIND_MW;
	case IW_WC_LOCAL_INV: return IBV_WC_LOCAL_INV;
	case IW_WC_RECV: return IBV_WC_RECV;
	case IW_WC_RECV_RDMA_WITH_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	default: return IBV_WC_DRIVER1; /* REG_MR: not postable through ibv_ */
	}
}

static void cv_wc(struct ibv_wc *d, const struct iw_wc *s)
{
	d->wr_id = s->wr_id;
	d->status = cv_wc_status(s->status);
	d->opcode = cv_wc_opcode(s->opcode);
	d->vendor_err = s->vendor_err;
	d->byte_len = s->byte_len;
	d->imm_data = (s->wc_flags & IW_WC_WITH_INV) ? s->invalidated_rkey : s->imm_data;
	d->qp_num = s->qp_num;
	d->src_qp = 0;
	d->wc_flags = s->wc_flags & (IW_WC_WITH_IMM | IW_WC_WITH_INV); /* same bits */
	d->pkey_index = 0;
	d->slid = 0;
	d->sl = 0;
	d->dlid_path_bits = 0;
}

CV_SAME(IW_WC_WITH_IMM, IBV_WC_WITH_IMM);
CV_SAME(IW_WC_WITH_INV, IBV_WC_WITH_INV);

int cv_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct iw_cq *iw = cv_container_of(cq, struct cv_cq, cq)->iw;
	struct iw_wc batch[CV_BATCH];
	int done = 0;

	while (done < num) {
		int want = num - done < CV_BATCH ? num - done : CV_BATCH;
		int got = iw_poll_cq(iw, want, batch);
		if (got < 0)
			return done ? done : got;
		for (int i = 0; i < got; i++)
			cv_wc(&wc[done + i], &batch[i]);
		done += got;
		if (got < want)
			break;
	}
	return done;
}
