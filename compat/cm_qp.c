/* SPDX-License-Identifier: BSD-2-Clause */
/* The QP of a CM id, with CQs made for it when the application gives none. */
#include <errno.h>
#include <string.h>

#include "cm.h"

static int cm_make_cqs(struct rdma_cm_id *rid, struct ibv_qp_init_attr *attr)
{
	int depth = (int)(attr->cap.max_send_wr + attr->cap.max_recv_wr);

	rid->send_cq_channel = ibv_create_comp_channel(rid->verbs);
	rid->send_cq = rid->send_cq_channel ?
		ibv_create_cq(rid->verbs, depth ? depth : 1, rid, rid->send_cq_channel, 0) : NULL;
	if (!rid->send_cq) {
		int err = errno;
		ibv_destroy_comp_channel(rid->send_cq_channel);
		rid->send_cq_channel = NULL;
		return err;
	}
	/* One CQ serves both queues: ibv_get_cq_event finds it either way. */
	rid->recv_cq_channel = rid->send_cq_channel;
	rid->recv_cq = rid->send_cq;
	cm_of(rid)->owns_cqs = 1;
	return 0;
}

void cm_free_cqs(struct rdma_cm_id *rid)
{
	if (!cm_of(rid)->owns_cqs)
		return;
	ibv_destroy_cq(rid->send_cq);
	ibv_destroy_comp_channel(rid->send_cq_channel);
	rid->send_cq = rid->recv_cq = NULL;
	rid->send_cq_channel = rid->recv_cq_channel = NULL;
	cm_of(rid)->owns_cqs = 0;
}

CV_EXPORT int rdma_create_qp(struct rdma_cm_id *rid, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!rid || !attr)
		return cm_ret(EINVAL);
	if (!pd)
		pd = rid->pd;
	if (!pd)
		return cm_ret(EINVAL);
	if (rid->qp)
		return cm_ret(EEXIST);
	if (!attr->send_cq && !attr->recv_cq) {
		int err = cm_make_cqs(rid, attr);
		if (err)
			return cm_ret(err);
		attr->send_cq = rid->send_cq;
		attr->recv_cq = rid->recv_cq;
	}
	if (!cv_create_cm_qp(cm_of(rid)->iw, &rid->qp, pd, attr)) {
		int err = errno;
		cm_free_cqs(rid);
		return cm_ret(err);
	}
	return 0;
}

CV_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *rid, struct ibv_qp_init_attr_ex *attr)
{
	if (!rid || !attr)
		return cm_ret(EINVAL);
	if (attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD || attr->create_flags)
		return cm_ret(EOPNOTSUPP); /* XRC, send_ops_flags, RSS, TSO ... */
	struct ibv_pd *pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL;
	return rdma_create_qp(rid, pd, (struct ibv_qp_init_attr *)attr);
}

CV_EXPORT void rdma_destroy_qp(struct rdma_cm_id *rid)
{
	if (!rid || !rid->qp)
		return;
	ibv_destroy_qp(rid->qp); /* clears rid->qp */
	cm_free_cqs(rid);
}
