/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared receive queues (srq.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/srq.h"
#include "base/visibility.h"
#include "engine/wr.h"

IW_EXPORT struct iw_srq *iw_create_srq(struct iw_pd *pd, struct iw_srq_init_attr *attr)
{
	if (!pd || !attr || attr->attr.max_wr == 0 || attr->attr.max_wr > IW_MAX_QP_WR ||
	    attr->attr.max_sge == 0 || attr->attr.max_sge > IW_MAX_SGE ||
	    attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	struct iw_srq *srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->ring = calloc(attr->attr.max_wr, sizeof(*srq->ring));
	if (!srq->ring || iw_wqe_sges_alloc(&srq->sges, attr->attr.max_wr, attr->attr.max_sge)) {
		free(srq->ring);
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < attr->attr.max_wr; i++)
		iw_wqe_sges_slice(&srq->sges, i, attr->attr.max_sge, &srq->ring[i].sge,
				  &srq->ring[i].sge_ptr, &srq->ring[i].sge_mr);
	srq->context = pd->context;
	srq->pd = pd;
	srq->srq_context = attr->srq_context;
	srq->size = attr->attr.max_wr;
	srq->max_sge = attr->attr.max_sge;
	srq->limit = attr->attr.srq_limit;
	pthread_mutex_init(&srq->lock, NULL);
	atomic_fetch_add(&pd->use, 1);
	return srq;
}

IW_EXPORT int iw_modify_srq(struct iw_srq *srq, struct iw_srq_attr *attr, int attr_mask)
{
	if (!srq || !attr || (attr_mask & ~(IW_SRQ_MAX_WR | IW_SRQ_LIMIT)))
		return EINVAL;
	/* Resizing a live ring is not supported: the ring is sized at create. */
	if (attr_mask & IW_SRQ_MAX_WR)
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	int rc = 0;
	if (attr->srq_limit > srq->size)
		rc = EINVAL;
	else
		srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&srq->lock);
	return rc;
}

IW_EXPORT int iw_destroy_srq(struct iw_srq *srq)
{
	if (!srq)
		return 0;
	if (atomic_load(&srq->use) > 0)
		return EBUSY;
	for (uint32_t i = 0; i < srq->count; i++)
		iw_rwqe_release(&srq->ring[(srq->head + i) % srq->size]);
	atomic_fetch_sub(&srq->pd->use, 1);
	/* A queued SRQ_LIMIT_REACHED must not name a freed SRQ. */
	iw_async_forget(srq->context, srq);
	pthread_mutex_destroy(&srq->lock);
	iw_wqe_sges_free(&srq->sges);
	free(srq->ring);
	free(srq);
	return 0;
}

IW_EXPORT int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr,
			       struct iw_recv_wr **bad_wr)
{
	if (!srq)
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	int rc = 0;
	for (; wr; wr = wr->next) {
		if (srq->count == srq->size) {
			rc = ENOMEM;
			break;
		}
		struct iw_rwqe *w = &srq->ring[(srq->head + srq->count) % srq->size];
		rc = iw_rwqe_fill(w, srq->context, srq->pd, wr, srq->max_sge);
		if (rc)
			break;
		srq->count++;
	}
	pthread_mutex_unlock(&srq->lock);
	if (rc && bad_wr)
		*bad_wr = wr;
	return rc;
}

bool iw_srq_take(struct iw_srq *srq, struct iw_rwqe_buf *out)
{
	bool fire = false, got = false;

	pthread_mutex_lock(&srq->lock);
	if (srq->count) {
		iw_rwqe_move(out, &srq->ring[srq->head]);
		srq->head = (srq->head + 1) % srq->size;
		srq->count--;
		got = true;
		if (srq->limit && srq->count < srq->limit) {
			srq->limit = 0; /* one-shot, as ibv_modify_srq's limit */
			fire = true;
		}
	}
	pthread_mutex_unlock(&srq->lock);
	if (fire) {
		struct iw_async_event ev = {.event_type = IW_EVENT_SRQ_LIMIT_REACHED};
		ev.element.srq = srq;
		iw_async_raise(srq->context, &ev);
	}
	return got;
}
