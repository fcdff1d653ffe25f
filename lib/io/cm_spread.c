/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Spreading accepted connections over the loop group (loop_group.h).
 *
 * One listening socket per listener, on the listener's loop, which
 * accepts and reads each connection's MPA Request (its own MPA timeout
 * running per connection). When the Request is complete the listener's
 * policy (iw_cm_set_spread) picks a loop: round robin, the loop with the
 * fewest ids, or the application's callback, which sees the
 * CONNECT_REQUEST (private data, peer address, IRD/ORD), so that e.g. an
 * NVMe-oF target puts each I/O queue's connection on the core its host
 * asked for. The id then leaves the listener's loop: its libevent events
 * are freed here and made again by the new loop, which raises the
 * CONNECT_REQUEST; the application only ever sees the id on its final
 * loop, so no lock is ever shared between two loops.
 *
 * Why not SO_REUSEPORT listeners, one per loop: the kernel then picks the
 * loop by a hash of the 4-tuple, before any octet of the Request is read,
 * so neither the application's choice from the private data nor least
 * loaded could be honoured, a listener's backlog and max_pending would be
 * split N ways, and a loop whose socket is closed drops the connections
 * in its queue. Accepting plus the MPA Request is a small part of a
 * connection's setup (the QP, the Reply, RTR and ESTABLISHED run on the
 * chosen loop).
 */
#include <stddef.h>

#include "engine/context.h"
#include "io/cm_int.h"
#include "io/ev.h"
#include "io/loop_group.h"

/* Round robin, starting with the loop after the listener's: the first
 * connection already leaves the accepting loop. */
static struct iw_ev *pick_next(struct iw_cm_id_int *l)
{
	struct iw_context *ctx = l->pub.context;
	unsigned i = iw_ev_index(l->ev) + 1 + l->spread_next++;
	return iw_ev_group_at(ctx, i % ctx->num_loops);
}

/* The application's pick, or round robin when it returns no loop of the
 * group. */
static struct iw_ev *pick_app(struct iw_cm_id_int *l, struct iw_cm_event *req)
{
	struct iw_context *ctx = l->pub.context;
	req->listen_id = &l->pub;
	int i = l->spread.pick(&l->pub, req, l->spread.pick_arg);
	req->listen_id = NULL;
	if (i >= 0 && (unsigned)i < ctx->num_loops)
		return iw_ev_group_at(ctx, (unsigned)i);
	return pick_next(l);
}

static struct iw_ev *pick(struct iw_cm_id_int *l, struct iw_cm_event *req)
{
	struct iw_context *ctx = l->pub.context;
	switch (l->spread.policy) {
	case IW_CM_SPREAD_LISTENER:
		return l->ev;
	case IW_CM_SPREAD_LEAST_LOADED:
		return iw_ev_group_least(ctx);
	case IW_CM_SPREAD_CALLBACK:
		return pick_app(l, req);
	default:
		return pick_next(l);
	}
}

bool iw_cm_spread_handoff(struct iw_cm_id_int *id, struct iw_cm_event *req)
{
	struct iw_cm_id_int *l = id->listener;
	if (!l || l->pub.context->num_loops == 1)
		return false;
	struct iw_ev *to = pick(l, req);
	if (to == id->ev)
		return false;
	/* What raise_request does for an id that stays (cm_conn.c). */
	l->lstats.requests++;
	iw_cm_child_unlink(id);
	iw_cm_conn_unhook(id);
	iw_cm_id_move(id, to);
	id->handoff = req;
	/* The new loop adopts it (iw_cm_conn_work); from here on this loop
	 * no longer touches the id. */
	iw_cm_want_work(id);
	return true;
}

/* The listener is named under its count's lock, which its destruction
 * takes too before it forgets the queued requests that name it. */
void iw_cm_spread_deliver(struct iw_cm_id_int *id, struct iw_cm_event *req)
{
	struct iw_cm_lcount *lc = id->lcount;
	if (!lc) {
		iw_cm_event_queue(id, req);
		return;
	}
	pthread_mutex_lock(&lc->lock);
	req->listen_id = lc->listener ? &lc->listener->pub : NULL;
	iw_cm_event_queue(id, req);
	pthread_mutex_unlock(&lc->lock);
}

void iw_cm_spread_forget(struct iw_cm_id_int *l)
{
	struct iw_cm_lcount *lc = l->lcount;
	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	if (lc->listener == l)
		lc->listener = NULL;
	pthread_mutex_unlock(&lc->lock);
}
