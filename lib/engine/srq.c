/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues (srq.h).
 *
 * What happens to SRQ WRs (also told in iw_modify_srq(3) and iw_destroy_srq(3)):
 * - A QP takes a WR when the first segment of an untagged message arrives,
 *   and owns it from then on: if that QP dies mid-message, the WR completes
 *   on the QP's receive CQ with IW_WC_WR_FLUSH_ERR and that QP's qp_num.
 *   The application reposts it to the SRQ if it wants the buffer used again.
 * - WRs still on the SRQ belong to no QP: a QP that dies leaves them there
 *   for the others (no completion), and IW_EVENT_QP_LAST_WQE_REACHED says
 *   that QP takes no more.
 * - iw_destroy_srq, allowed only once no QP uses the SRQ, releases the WRs
 *   still posted without a completion: their wr_ids are never reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/srq.h"
#include "base/alloc.h"
#include "base/visibility.h"
#include "engine/wr.h"

/* A ring of n WQEs with their SGE storage, not yet in any SRQ. */
struct srq_ring {
	struct iw_rwqe *ring;
	struct iw_wqe_sges sges;
};

static int ring_alloc(struct srq_ring *r, const struct iw_alloc_ops *a, uint32_t n,
		      uint32_t max_sge)
{
	r->ring = iw_calloc(a, n, sizeof(*r->ring));
	if (!r->ring || iw_wqe_sges_alloc(&r->sges, a, n, max_sge)) {
		iw_free(a, r->ring);
		r->ring = NULL;
		return ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		iw_wqe_sges_slice(&r->sges, i, max_sge, &r->ring[i].sge, &r->ring[i].sge_ptr,
				  &r->ring[i].sge_mr);
	return 0;
}

static void ring_free(struct srq_ring *r)
{
	iw_wqe_sges_free(&r->sges);
	iw_free(r->sges.alloc, r->ring);
}

static bool attr_ok(const struct iw_srq_attr *a)
{
	return a->max_wr != 0 && a->max_wr <= IW_MAX_SRQ_WR && a->max_sge != 0 &&
	       a->max_sge <= IW_MAX_SGE && a->srq_limit <= a->max_wr;
}

IW_EXPORT struct iw_srq *iw_create_srq(struct iw_pd *pd, struct iw_srq_init_attr *attr)
{
	struct srq_ring r;

	if (!pd || !attr || !attr_ok(&attr->attr)) {
		errno = EINVAL;
		return NULL;
	}
	const struct iw_alloc_ops *a = pd->context->alloc;
	struct iw_srq *srq = iw_calloc(a, 1, sizeof(*srq));
	if (!srq || ring_alloc(&r, a, attr->attr.max_wr, attr->attr.max_sge)) {
		iw_free(a, srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->ring = r.ring;
	srq->sges = r.sges;
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

/* Copy a posted WQE into an empty slot of another ring (same max_sge). */
static void wqe_copy(struct iw_rwqe *dst, const struct iw_rwqe *src)
{
	dst->wr_id = src->wr_id;
	dst->num_sge = src->num_sge;
	dst->len = src->len;
	memcpy(dst->sge, src->sge, src->num_sge * sizeof(dst->sge[0]));
	memcpy(dst->sge_ptr, src->sge_ptr, src->num_sge * sizeof(dst->sge_ptr[0]));
	memcpy(dst->sge_mr, src->sge_mr, src->num_sge * sizeof(dst->sge_mr[0]));
}

/* The caller holds srq->lock and has checked that r has room for every
 * posted WQE: they move to r's front, oldest first, with their MR
 * references; r gets the old ring for the caller to free. */
static void ring_swap(struct iw_srq *srq, struct srq_ring *r, uint32_t size)
{
	struct srq_ring old = {.ring = srq->ring, .sges = srq->sges};

	for (uint32_t i = 0; i < srq->count; i++)
		wqe_copy(&r->ring[i], &srq->ring[(srq->head + i) % srq->size]);
	srq->ring = r->ring;
	srq->sges = r->sges;
	srq->size = size;
	srq->head = 0;
	*r = old;
}

/* Under srq->lock: the checks that depend on what is posted, then the
 * changes, all or nothing. r is NULL unless IW_SRQ_MAX_WR is asked. */
static int modify_locked(struct iw_srq *srq, const struct iw_srq_attr *attr, int mask,
			 struct srq_ring *r)
{
	uint32_t size = r ? attr->max_wr : srq->size;

	if (srq->count > size)
		return EINVAL;
	if ((mask & IW_SRQ_LIMIT) && attr->srq_limit > size)
		return EINVAL;
	if (!(mask & IW_SRQ_LIMIT) && srq->limit > size)
		return EINVAL;
	if (r)
		ring_swap(srq, r, size);
	if (mask & IW_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	return 0;
}

/* A new ring is allocated before the lock is taken (QPs take WQEs under it
 * on the loop thread); the WQEs move under the lock in one step, so none is
 * lost, repeated or reordered. */
IW_EXPORT int iw_modify_srq(struct iw_srq *srq, struct iw_srq_attr *attr, int attr_mask)
{
	struct srq_ring r, *rp = NULL;
	int rc;

	if (!srq || !attr || (attr_mask & ~(IW_SRQ_MAX_WR | IW_SRQ_LIMIT)))
		return EINVAL;
	if (attr_mask & IW_SRQ_MAX_WR) {
		if (attr->max_wr == 0 || attr->max_wr > IW_MAX_SRQ_WR)
			return EINVAL;
		if (ring_alloc(&r, srq->context->alloc, attr->max_wr, srq->max_sge))
			return ENOMEM;
		rp = &r;
	}
	pthread_mutex_lock(&srq->lock);
	rc = modify_locked(srq, attr, attr_mask, rp);
	pthread_mutex_unlock(&srq->lock);
	if (rp)
		ring_free(rp); /* the old ring, or the new one if refused */
	return rc;
}

IW_EXPORT int iw_query_srq(struct iw_srq *srq, struct iw_srq_attr *attr)
{
	if (!srq || !attr)
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

/* The WRs still posted go without a completion. */
static void release_posted(struct iw_srq *srq)
{
	for (uint32_t i = 0; i < srq->count; i++)
		iw_rwqe_release(&srq->ring[(srq->head + i) % srq->size]);
}

#ifdef IW_FUZZING
/* Fuzzing builds only (-DIW_FUZZING, never the library): see srq.h. */
int iw_fuzz_srq_renew(struct iw_srq *srq, const struct iw_srq_attr *attr)
{
	if (atomic_load(&srq->use) > 0)
		return EBUSY;
	if (!attr_ok(attr) || attr->max_wr != srq->size || attr->max_sge != srq->max_sge)
		return EINVAL;
	release_posted(srq);
	iw_async_forget(srq->context, srq);
	srq->head = srq->count = 0;
	srq->limit = attr->srq_limit;
	srq->newest_first = false;
	return 0;
}
#endif

IW_EXPORT int iw_destroy_srq(struct iw_srq *srq)
{
	if (!srq)
		return 0;
	if (atomic_load(&srq->use) > 0)
		return EBUSY;
	release_posted(srq);
	atomic_fetch_sub(&srq->pd->use, 1);
	/* A queued SRQ_LIMIT_REACHED must not name a freed SRQ. */
	iw_async_forget(srq->context, srq);
	pthread_mutex_destroy(&srq->lock);
	iw_wqe_sges_free(&srq->sges);
	iw_free(srq->context->alloc, srq->ring);
	iw_free(srq->context->alloc, srq);
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

/* The ring keeps posting order either way: the oldest at head, the
 * newest at head + count - 1. */
static void take_locked(struct iw_srq *srq, struct iw_rwqe_buf *out)
{
	srq->count--;
	if (srq->newest_first) {
		iw_rwqe_move(out, &srq->ring[(srq->head + srq->count) % srq->size]);
		return;
	}
	iw_rwqe_move(out, &srq->ring[srq->head]);
	srq->head = (srq->head + 1) % srq->size;
}

IW_EXPORT int iw_set_srq_order(struct iw_srq *srq, enum iw_srq_order order)
{
	if (!srq || (order != IW_SRQ_OLDEST_FIRST && order != IW_SRQ_NEWEST_FIRST))
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	srq->newest_first = order == IW_SRQ_NEWEST_FIRST;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

bool iw_srq_take(struct iw_srq *srq, struct iw_rwqe_buf *out)
{
	bool fire = false, got = false;

	pthread_mutex_lock(&srq->lock);
	if (srq->count) {
		take_locked(srq, out);
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
