/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared receive queues. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "cv.h"

CV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!pd || !attr) {
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
