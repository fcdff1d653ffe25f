/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Asynchronous events from the context's async_fd (libiwarp's event queue
 * fd; every context of the process shares it, as they share the
 * iw_context).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>

#include "cv.h"

static enum ibv_event_type cv_event_type(enum iw_event_type t)
{
	switch (t) {
	case IW_EVENT_CQ_ERR: return IBV_EVENT_CQ_ERR;
	case IW_EVENT_QP_FATAL: return IBV_EVENT_QP_FATAL;
	case IW_EVENT_QP_REQ_ERR: return IBV_EVENT_QP_REQ_ERR;
	case IW_EVENT_QP_ACCESS_ERR: return IBV_EVENT_QP_ACCESS_ERR;
	case IW_EVENT_QP_TERMINATE: return IBV_EVENT_QP_FATAL; /* no ibv_ name for it */
	case IW_EVENT_QP_LAST_WQE_REACHED: return IBV_EVENT_QP_LAST_WQE_REACHED;
	case IW_EVENT_SRQ_LIMIT_REACHED: return IBV_EVENT_SRQ_LIMIT_REACHED;
	case IW_EVENT_SQ_DRAINED: return IBV_EVENT_SQ_DRAINED;
	default: return IBV_EVENT_DEVICE_FATAL;
	}
}

/* The wrapper behind an event's element: the libiwarp objects carry ours
 * as their context (QP, SRQ); CQs are looked up. */
static void cv_event_element(struct cv_context *c, struct ibv_async_event *d,
			     const struct iw_async_event *s)
{
	struct iw_qp_attr qa;
	struct iw_qp_init_attr qia;

	switch (s->event_type) {
	case IW_EVENT_CQ_ERR:
		d->element.cq = cv_cq_lookup(c, s->element.cq);
		break;
	case IW_EVENT_SRQ_LIMIT_REACHED:
		d->element.srq = NULL; /* below, through iw_srq's context */
		break;
	default:
		if (iw_query_qp(s->element.qp, &qa, 0, &qia) == 0)
			d->element.qp = &((struct cv_qp *)qia.qp_context)->qp;
	}
}

/* iw_get_async_event never blocks; ibv_get_async_event does while the fd
 * is blocking (the application's O_NONBLOCK says which it wants). */
static int cv_wait_async(struct iw_context *iw, int fd, struct iw_async_event *e)
{
	for (;;) {
		int r = iw_get_async_event(iw, e);
		if (r != EAGAIN || (fcntl(fd, F_GETFL) & O_NONBLOCK))
			return r;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return errno;
	}
}

CV_EXPORT int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	struct iw_async_event e;

	if (!ctx || !event) {
		errno = EINVAL;
		return -1;
	}
	int r = cv_wait_async(cv_ctx(ctx)->iw, ctx->async_fd, &e);
	if (r) {
		errno = r;
		return -1;
	}
	memset(event, 0, sizeof(*event));
	event->event_type = cv_event_type(e.event_type);
	cv_event_element(cv_ctx(ctx), event, &e);
	return 0;
}

CV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event; /* the event is a copy: nothing waits for the ack */
}
