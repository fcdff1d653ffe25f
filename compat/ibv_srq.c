/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared receive queues. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cv.h"

/* IWARP_SRQ_ORDER (iwarp-run(1)): unset, empty or "oldest", verbs' order;
 * "newest", the receive posted last goes first (iw_set_srq_order: a
 * server's buffers stay warm in the caches); anything else, EINVAL. */
static int cv_srq_order(enum iw_srq_order *o)
{
	const char *e = getenv("IWARP_SRQ_ORDER");

	*o = IW_SRQ_OLDEST_FIRST;
	if (!e || !*e || !strcmp(e, "oldest"))
		return 0;
	if (strcmp(e, "newest"))
		return EINVAL;
	*o = IW_SRQ_NEWEST_FIRST;
	return 0;
}

CV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	enum iw_srq_order order;

	if (!pd || !attr || cv_srq_order(&order)) {
		errno = EINVAL;
		return NULL;
	}
	struct cv_srq *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	struct iw_srq_init_attr ia = {.srq_context = s,
				      .attr = {.max_wr = attr->attr.max_wr,
					       .max_sge = attr->attr.max_sge,
					       .srq_limit = attr->attr.srq_limit}};
	s->iw = iw_create_srq(cv_container_of(pd, struct cv_pd, pd)->iw, &ia);
	if (!s->iw)
		return cv_fail_free(s);
	if (order != IW_SRQ_OLDEST_FIRST)
		iw_set_srq_order(s->iw, order); /* valid SRQ and order: cannot fail */
	s->srq = (struct ibv_srq){.context = pd->context, .srq_context = attr->srq_context, .pd = pd};
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

CV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
	if (!srq || !attr)
		return EINVAL;
	if (attr_mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP; /* fixed size */
	struct iw_srq_attr a = {.max_wr = attr->max_wr, .max_sge = attr->max_sge,
				.srq_limit = attr->srq_limit};
	return iw_modify_srq(cv_container_of(srq, struct cv_srq, srq)->iw, &a,
			     attr_mask & IBV_SRQ_LIMIT ? IW_SRQ_LIMIT : 0);
}

CV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	(void)srq;
	(void)attr;
	return EOPNOTSUPP; /* libiwarp has no SRQ query */
}

CV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	if (!srq)
		return 0;
	struct cv_srq *s = cv_container_of(srq, struct cv_srq, srq);
	int r = iw_destroy_srq(s->iw);
	if (r)
		return r;
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(s);
	return 0;
}
