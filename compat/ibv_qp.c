/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs: reliable-connected only (iWARP has no UD, UC or XRC). A QP
 * made by ibv_create_qp is libiwarp's own; one made by rdma_create_qp
 * belongs to its CM id (cv_create_cm_qp), which moves it through its
 * states.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cv.h"

static int cv_iw_init_attr(struct iw_qp_init_attr *d, const struct ibv_qp_init_attr *s,
			   struct cv_qp *q)
{
	if (!s->send_cq || !s->recv_cq)
		return EINVAL;
	if (s->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	*d = (struct iw_qp_init_attr){
		.qp_context = q,
		.send_cq = cv_container_of(s->send_cq, struct cv_cq, cq)->iw,
		.recv_cq = cv_container_of(s->recv_cq, struct cv_cq, cq)->iw,
		.srq = s->srq ? cv_container_of(s->srq, struct cv_srq, srq)->iw : NULL,
		.cap = {.max_send_wr = s->cap.max_send_wr, .max_recv_wr = s->cap.max_recv_wr,
			.max_send_sge = s->cap.max_send_sge, .max_recv_sge = s->cap.max_recv_sge,
			.max_inline_data = s->cap.max_inline_data},
		.qp_type = IW_QPT_RC,
		.sq_sig_all = s->sq_sig_all,
		.create_flags = (cv_rfc7306() ? IW_QP_CREATE_RFC7306 : 0) | cv_hold_flag(s->srq != NULL),
	};
	/* Verbs allows a queue the application never posts to (qperf's
	 * one-way tests: max_recv_wr 0 on the sender, max_send_wr 0 on the
	 * receiver, and any QP on an SRQ); libiwarp's rings need one slot. */
	if (d->cap.max_send_wr == 0)
		d->cap.max_send_wr = 1;
	if (d->cap.max_recv_wr == 0)
		d->cap.max_recv_wr = 1;
	return 0;
}

void cv_qp_fill_cap(struct cv_qp *q, struct ibv_qp_cap *cap)
{
	struct iw_qp_attr a;
	struct iw_qp_init_attr ia;

	if (iw_query_qp(q->iw, &a, 0, &ia) == 0)
		*cap = (struct ibv_qp_cap){.max_send_wr = ia.cap.max_send_wr,
					   .max_recv_wr = ia.cap.max_recv_wr,
					   .max_send_sge = ia.cap.max_send_sge,
					   .max_recv_sge = ia.cap.max_recv_sge,
					   .max_inline_data = ia.cap.max_inline_data};
}

static struct cv_qp *cv_qp_wrap(struct cv_qp *q, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	q->qp = (struct ibv_qp){.context = pd->context, .qp_context = attr->qp_context, .pd = pd,
				.send_cq = attr->send_cq, .recv_cq = attr->recv_cq, .srq = attr->srq,
				.handle = iw_qp_num(q->iw), .qp_num = iw_qp_num(q->iw),
				.state = q->cm ? IBV_QPS_INIT : IBV_QPS_RESET, .qp_type = IBV_QPT_RC};
	q->sq_sig_all = attr->sq_sig_all;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	cv_qp_fill_cap(q, &attr->cap);
	return q;
}

/* libiwarp's QP: on its own (id NULL) or as id's (iw_cm_create_qp), the
 * id's receive hold sized first (IWARP_RECV_HOLD). */
static int cv_qp_iw(struct cv_qp *q, struct iw_cm_id *id, struct iw_pd *ipd,
		    struct iw_qp_init_attr *ia)
{
	int err;

	if (!id) {
		q->iw = iw_create_qp(ipd, ia);
		return q->iw ? 0 : errno;
	}
	err = cv_hold_limits(id, ia->cap.max_recv_wr);
	if (!err)
		err = iw_cm_create_qp(id, ipd, ia);
	q->iw = err ? NULL : id->qp;
	q->cm = id;
	return err;
}

/* Make the QP: on its own (id NULL) or as id's. */
static struct ibv_qp *cv_qp_new(struct iw_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct iw_qp_init_attr ia;
	int err = (!pd || !attr) ? EINVAL : 0;
	struct cv_qp *q = err ? NULL : calloc(1, sizeof(*q));

	if (!err && !q)
		err = ENOMEM;
	if (!err)
		err = cv_iw_init_attr(&ia, attr, q);
	if (!err)
		err = cv_qp_iw(q, id, cv_container_of(pd, struct cv_pd, pd)->iw, &ia);
	if (err) {
		free(q);
		errno = err;
		return NULL;
	}
	return &cv_qp_wrap(q, pd, attr)->qp;
}

CV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return cv_qp_new(NULL, pd, attr);
}

/* slot is cleared when the application destroys the QP with
 * ibv_destroy_qp (rping does, before rdma_destroy_id). */
CV_EXPORT struct ibv_qp *cv_create_cm_qp(struct iw_cm_id *id, struct ibv_qp **slot,
					 struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp = cv_qp_new(id, pd, attr);

	if (qp) {
		cv_container_of(qp, struct cv_qp, qp)->slot = slot;
		*slot = qp;
	}
	return qp;
}

struct ibv_qp *cv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	(void)ctx;
	if (attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD || attr->create_flags) {
		errno = EOPNOTSUPP; /* send_ops_flags, XRC, RSS, TSO ... */
		return NULL;
	}
	return ibv_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
}

static void cv_qp_free(struct cv_qp *q)
{
	pthread_mutex_destroy(&q->qp.mutex);
	pthread_cond_destroy(&q->qp.cond);
	free(q);
}

/* The CM id goes, and libiwarp's QP with it; rdma-core leaves the ibv_qp
 * to the application (rping destroys the id first, then the QP). The
 * wrapper stays, dead: posts and queries fail with EINVAL, ibv_destroy_qp
 * frees it. */
CV_EXPORT void cv_orphan_qp(struct ibv_qp *qp)
{
	if (!qp)
		return;
	struct cv_qp *q = cv_container_of(qp, struct cv_qp, qp);
	q->iw = NULL;
	q->cm = NULL;
	q->slot = NULL;
}

CV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!qp)
		return 0;
	struct cv_qp *q = cv_container_of(qp, struct cv_qp, qp);
	if (q->cm) {
		iw_cm_destroy_qp(q->cm);
		*q->slot = NULL;
	} else {
		int r = iw_destroy_qp(q->iw);
		if (r)
			return r;
	}
	cv_qp_free(q);
	return 0;
}

/* The attributes libiwarp keeps; the InfiniBand path and addressing ones
 * (P_Key, port, AV, MTU, PSNs, timeouts, retries) mean nothing over TCP
 * and are accepted and ignored, as iWARP RNICs do. */
#define CV_QP_IW_MASK (IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | \
		       IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC)

CV_SAME(IW_QP_STATE, IBV_QP_STATE);
CV_SAME(IW_QP_CUR_STATE, IBV_QP_CUR_STATE);
CV_SAME(IW_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
CV_SAME(IW_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
CV_SAME(IW_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
CV_SAME(IW_QPS_ERR, IBV_QPS_ERR);
CV_SAME(IW_QPS_SQE, IBV_QPS_SQE);

CV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	if (!qp || !attr)
		return EINVAL;
	struct cv_qp *q = cv_container_of(qp, struct cv_qp, qp);
	struct iw_qp_attr a = {.qp_state = (enum iw_qp_state)attr->qp_state,
			       .cur_qp_state = (enum iw_qp_state)attr->cur_qp_state,
			       .qp_access_flags = attr->qp_access_flags,
			       .max_rd_atomic = attr->max_rd_atomic,
			       .max_dest_rd_atomic = attr->max_dest_rd_atomic};
	int mask = attr_mask & CV_QP_IW_MASK;
	if (q->cm && (mask & IBV_QP_STATE) && attr->qp_state != IBV_QPS_ERR)
		mask &= ~IBV_QP_STATE; /* the CM moves its QP; only a failure is the app's */
	int r = mask ? iw_modify_qp(q->iw, &a, mask) : 0;
	if (r == 0 && (mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return r;
}

CV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			   struct ibv_qp_init_attr *init_attr)
{
	struct iw_qp_attr a;
	struct iw_qp_init_attr ia;

	if (!qp || !attr)
		return EINVAL;
	struct cv_qp *q = cv_container_of(qp, struct cv_qp, qp);
	int r = iw_query_qp(q->iw, &a, attr_mask, &ia);
	if (r)
		return r;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)a.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)a.cur_qp_state;
	attr->qp_access_flags = a.qp_access_flags;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->path_mtu = IBV_MTU_4096;
	attr->port_num = 1;
	cv_qp_fill_cap(q, &attr->cap);
	qp->state = attr->qp_state;
	if (init_attr)
		*init_attr = (struct ibv_qp_init_attr){
			.qp_context = qp->qp_context, .send_cq = qp->send_cq,
			.recv_cq = qp->recv_cq, .srq = qp->srq, .cap = attr->cap,
			.qp_type = IBV_QPT_RC, .sq_sig_all = q->sq_sig_all};
	return 0;
}

CV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	(void)qp;
	errno = EOPNOTSUPP; /* the ibv_wr_* posting API is not offered */
	return NULL;
}

CV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0; /* iWARP places data in any order */
}
