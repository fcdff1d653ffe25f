/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion channels and completion queues. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "cv.h"

CV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct cv_channel *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->iw = iw_create_comp_channel(cv_ctx(ctx)->iw);
	if (!ch->iw)
		return cv_fail_free(ch);
	ch->ch.context = ctx;
	ch->ch.fd = ch->iw->fd;
	return &ch->ch;
}

CV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return 0;
	struct cv_channel *ch = cv_container_of(channel, struct cv_channel, ch);
	int r = iw_destroy_comp_channel(ch->iw);
	if (r == 0)
		free(ch);
	return r;
}

/* The context's CQs, so that an asynchronous CQ event names its ibv_cq. */
static pthread_mutex_t cv_cq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cv_cq *cv_cqs;

static void cv_cq_link(struct cv_cq *cq, int add)
{
	pthread_mutex_lock(&cv_cq_lock);
	if (add) {
		cq->next = cv_cqs;
		cv_cqs = cq;
	} else {
		for (struct cv_cq **p = &cv_cqs; *p; p = &(*p)->next)
			if (*p == cq) {
				*p = cq->next;
				break;
			}
	}
	pthread_mutex_unlock(&cv_cq_lock);
}

struct ibv_cq *cv_cq_lookup(struct cv_context *c, struct iw_cq *iw)
{
	struct ibv_cq *found = NULL;

	(void)c;
	pthread_mutex_lock(&cv_cq_lock);
	for (struct cv_cq *p = cv_cqs; p && !found; p = p->next)
		if (p->iw == iw)
			found = &p->cq;
	pthread_mutex_unlock(&cv_cq_lock);
	return found;
}

CV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct cv_cq *cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	struct iw_comp_channel *ich =
		channel ? cv_container_of(channel, struct cv_channel, ch)->iw : NULL;
	cq->iw = iw_create_cq(cv_ctx(ctx)->iw, cqe, cq, ich, comp_vector);
	if (!cq->iw)
		return cv_fail_free(cq);
	cq->cq.context = ctx;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	cv_cq_link(cq, 1);
	return &cq->cq;
}

CV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	if (!ibcq)
		return 0;
	struct cv_cq *cq = cv_container_of(ibcq, struct cv_cq, cq);
	int r = iw_destroy_cq(cq->iw);
	if (r)
		return r;
	cv_cq_link(cq, 0);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	free(cq);
	return 0;
}

CV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq;
	(void)cqe;
	return EOPNOTSUPP; /* libiwarp's CQs have a fixed size */
}

CV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			       void **cq_context)
{
	struct iw_cq *icq;
	void *mine;

	if (!channel || !cq) {
		errno = EINVAL;
		return -1;
	}
	int r = iw_get_cq_event(cv_container_of(channel, struct cv_channel, ch)->iw, &icq, &mine);
	if (r) {
		errno = r;
		return -1;
	}
	struct cv_cq *c = mine;
	*cq = &c->cq;
	if (cq_context)
		*cq_context = c->cq.cq_context;
	return 0;
}

CV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq)
		iw_ack_cq_events(cv_container_of(cq, struct cv_cq, cq)->iw, nevents);
}

int cv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return iw_req_notify_cq(cv_container_of(cq, struct cv_cq, cq)->iw, solicited_only);
}
