/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Asynchronous events: CQ overflow, QP errors and TERMINATEs, SRQ limit.
 * Each event is a small heap node on the context's event queue; the queue's
 * fd is what the application waits on.
 *
 * iw_get_async_event copies the event out and frees its node on the spot, so
 * iw_ack_async_event has nothing left to do and is kept only so that verbs
 * code ports unchanged. The price is that an event handed out does not pin
 * its object: the application must not destroy a QP or CQ while it still
 * uses an event naming it (with libibverbs destroy would wait for the ack).
 * Events still queued when their object is destroyed are dropped by
 * iw_async_forget, so the application is never handed a dangling pointer.
 *
 * The queue is popped only with iw_evq_trypop, so iw_get_async_event never
 * blocks whatever the application did to the fd's flags.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine/context.h"
#include "base/alloc.h"
#include "iwarp/wire.h"
#include "base/visibility.h"

static struct iw_async_node *async_node(const struct iw_evq_node *n)
{
	/* node is the first member */
	return (struct iw_async_node *)n;
}

static void node_free(struct iw_evq_node *n)
{
	struct iw_async_node *a = async_node(n);
	iw_free(a->alloc, a);
}

/* Only the QP error events (and LAST_WQE_REACHED, which repeats the QP's)
 * carry a TERMINATE triple; the others always say IW_TERM_NONE, whatever
 * their raiser left in the field. */
static bool carries_term(enum iw_event_type t)
{
	return t == IW_EVENT_QP_FATAL || t == IW_EVENT_QP_REQ_ERR || t == IW_EVENT_QP_ACCESS_ERR ||
	       t == IW_EVENT_QP_TERMINATE || t == IW_EVENT_QP_LAST_WQE_REACHED;
}

void iw_async_raise(struct iw_context *ctx, const struct iw_async_event *ev)
{
	struct iw_async_node *a = iw_calloc(ctx->alloc, 1, sizeof(*a));

	/* Raisers are deep in the data path (a CQ push, a TERMINATE): they
	 * cannot fail or wait, so a lost event is counted, not returned. */
	if (!a) {
		atomic_fetch_add(&ctx->async_lost, 1);
		return;
	}
	a->alloc = ctx->alloc;
	a->ev = *ev;
	if (!carries_term(ev->event_type)) {
		a->ev.term = IW_TERM_NONE;
		a->ev.term_from_peer = false;
	}
	iw_evq_push(&ctx->async, &a->node);
}

static bool names_element(const struct iw_evq_node *n, const void *element)
{
	/* The union holds one pointer; its members share a representation. */
	return (const void *)async_node(n)->ev.element.cq == element;
}

unsigned iw_async_forget(struct iw_context *ctx, const void *element)
{
	if (!ctx || !element)
		return 0;
	return iw_evq_kill_if(&ctx->async, names_element, element);
}

void iw_async_cleanup(struct iw_context *ctx)
{
	if (!ctx)
		return;
	iw_evq_drain(&ctx->async, node_free);
	iw_evq_cleanup(&ctx->async);
}

IW_EXPORT int iw_context_async_fd(struct iw_context *ctx)
{
	if (!ctx)
		return -1;
	return ctx->async.fd;
}

IW_EXPORT int iw_get_async_event(struct iw_context *ctx, struct iw_async_event *event)
{
	struct iw_evq_node *n;
	int rc;

	if (!ctx || !event)
		return EINVAL;
	rc = iw_evq_trypop(&ctx->async, &n, node_free);
	if (rc)
		return -rc;
	*event = async_node(n)->ev;
	node_free(n);
	return 0;
}

IW_EXPORT void iw_ack_async_event(struct iw_async_event *event)
{
	/* The node went back in iw_get_async_event. */
	(void)event;
}

IW_EXPORT const char *iw_event_type_str(enum iw_event_type t)
{
	switch (t) {
	case IW_EVENT_CQ_ERR:
		return "CQ error";
	case IW_EVENT_QP_FATAL:
		return "QP fatal error";
	case IW_EVENT_QP_REQ_ERR:
		return "QP invalid request error";
	case IW_EVENT_QP_ACCESS_ERR:
		return "QP access error";
	case IW_EVENT_QP_TERMINATE:
		return "QP terminated by peer";
	case IW_EVENT_QP_LAST_WQE_REACHED:
		return "last WQE reached";
	case IW_EVENT_SRQ_LIMIT_REACHED:
		return "SRQ limit reached";
	case IW_EVENT_SQ_DRAINED:
		return "SQ drained";
	}
	return "unknown";
}
