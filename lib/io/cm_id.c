/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CM ids, their events and their channel queue, and the loop work an id
 * asks for (cm_int.h). The API (lib/api/cm.c) calls down into this; the
 * socket pump (cm_conn.c) raises events through it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "base/alloc.h"
#include "io/cm_int.h"
#include "io/ev.h"

/* ------------------------------------------------------------ events */

struct cm_event {
	struct iw_evq_node node; /* first */
	const struct iw_alloc_ops *alloc; /* the context's, to free it */
	struct iw_cm_event pub;
	struct iw_cm_id_int *owner; /* id whose unacked count this holds */
	uint8_t pd[IW_MPA_PD_MAX];
};

struct iw_cm_event *iw_cm_event_new(struct iw_cm_id_int *id, enum iw_cm_event_type type,
				    int status)
{
	const struct iw_alloc_ops *a = id->pub.context->alloc;
	struct cm_event *e = iw_calloc(a, 1, sizeof(*e));
	if (!e) {
		e = atomic_exchange(&id->spare, NULL);
		if (!e)
			return NULL;
		memset(e, 0, sizeof(*e));
	}
	e->alloc = a;
	e->pub.event = type;
	e->pub.id = &id->pub;
	e->pub.status = status;
	e->pub.term = IW_TERM_NONE;
	e->pub.param.responder_resources = (uint8_t)(id->conn.res.ird > 255 ? 255 : id->conn.res.ird);
	e->pub.param.initiator_depth = (uint8_t)(id->conn.res.ord > 255 ? 255 : id->conn.res.ord);
	e->pub.mpa_rev = id->conn.res.rev;
	e->pub.crc = id->conn.res.crc;
	e->pub.markers_rx = id->conn.res.markers_rx;
	e->pub.markers_tx = id->conn.res.markers_tx;
	e->pub.rtr = id->conn.res.rtr;
	e->owner = id;
	return &e->pub;
}

void iw_cm_event_set_pd(struct iw_cm_event *ev, const uint8_t *pd, uint16_t len)
{
	struct cm_event *e = (struct cm_event *)((char *)ev - offsetof(struct cm_event, pub));
	if (len > sizeof(e->pd))
		len = sizeof(e->pd);
	if (len)
		memcpy(e->pd, pd, len);
	ev->param.private_data = len ? e->pd : NULL;
	ev->param.private_data_len = len;
}

void iw_cm_event_queue(struct iw_cm_id_int *id, struct iw_cm_event *ev)
{
	(void)id;
	struct cm_event *e = (struct cm_event *)((char *)ev - offsetof(struct cm_event, pub));
	iw_evq_push(&e->owner->ch->q, &e->node);
}

void iw_cm_raise(struct iw_cm_id_int *id, enum iw_cm_event_type type, int status)
{
	struct iw_cm_event *ev = iw_cm_event_new(id, type, status);
	/* Out of memory: the event is lost but the id's state is still
	 * right; nothing better can be done without blocking the loop. */
	if (ev)
		iw_cm_event_queue(id, ev);
}

/* Events of destroyed ids are skipped and freed by the pop. */
static void free_dead(struct iw_evq_node *n)
{
	struct cm_event *e = (struct cm_event *)n;
	iw_free(e->alloc, e);
}

void iw_cm_event_discard(struct iw_cm_event *ev)
{
	free_dead(&((struct cm_event *)((char *)ev - offsetof(struct cm_event, pub)))->node);
}

int iw_cm_event_take(struct iw_cm_channel_int *c, struct iw_cm_event **out)
{
	struct iw_evq_node *n;
	int rc = iw_evq_pop(&c->q, &n, free_dead);
	if (rc)
		return rc;
	struct cm_event *e = (struct cm_event *)n;
	atomic_fetch_add(&e->owner->unacked, 1);
	*out = &e->pub;
	return 0;
}

void iw_cm_event_done(struct iw_cm_event *event)
{
	struct cm_event *e = (struct cm_event *)((char *)event - offsetof(struct cm_event, pub));
	struct iw_cm_id_int *owner = e->owner;
	void *none = NULL;
	/* Refill the spare before the count drops: after it the id may go. */
	if (!atomic_compare_exchange_strong(&owner->spare, &none, e))
		iw_free(e->alloc, e);
	atomic_fetch_sub(&owner->unacked, 1);
}

void iw_cm_channel_drain(struct iw_cm_channel_int *c)
{
	iw_evq_drain(&c->q, free_dead);
}

/* ------------------------------------------------------------ work list */

/* Ids the loop must look at, queued from any thread on their own loop
 * (ev.h); the loop runs iw_cm_conn_work for each. */
static void run_work(struct iw_ev_work *w)
{
	iw_cm_conn_work((struct iw_cm_id_int *)((char *)w - offsetof(struct iw_cm_id_int, work)));
}

void iw_cm_want_work(struct iw_cm_id_int *id)
{
	iw_ev_work_queue(id->ev, &id->work);
}

void iw_cm_id_move(struct iw_cm_id_int *id, struct iw_ev *to)
{
	iw_ev_work_cancel(id->ev, &id->work);
	iw_ev_work_cancel(id->ev, &id->batch_work);
	iw_ev_ids_add(id->ev, -1);
	iw_ev_ids_add(to, 1);
	id->ev = to;
}

/* ------------------------------------------------------------ ids */

struct iw_cm_id_int *iw_cm_id_alloc(struct iw_cm_channel_int *ch, struct iw_ev *ev,
				    void *user_context)
{
	const struct iw_alloc_ops *a = ch->pub.context->alloc;
	struct iw_cm_id_int *id = iw_calloc(a, 1, sizeof(*id));
	if (!id)
		return NULL;
	void *spare = iw_calloc(a, 1, sizeof(struct cm_event));
	if (!spare) {
		iw_free(a, id);
		return NULL;
	}
	atomic_init(&id->spare, spare);
	id->pub.context = ch->pub.context;
	id->pub.channel = &ch->pub;
	id->pub.user_context = user_context;
	id->ch = ch;
	id->ev = ev;
	id->fd = -1;
	iw_conn_init(&id->conn, NULL);
	if (ch->pub.context->conn_opts) /* checked by iw_context_new */
		iw_conn_tune_set(&id->conn.tune, ch->pub.context->conn_opts);
	id->tmo_at = UINT64_MAX;
	pthread_mutex_init(&id->txlock, NULL);
	pthread_mutex_init(&id->rxlock, NULL);
	id->work.fn = run_work;
	iw_cm_batch_init(id);
	atomic_fetch_add(&ch->num_ids, 1);
	iw_ev_ids_add(ev, 1);
	return id;
}

/* Drop events of id still queued on its channel: nobody will read them. */
static bool event_of(const struct iw_evq_node *n, const void *id)
{
	const struct cm_event *e = (const struct cm_event *)n;
	return e->owner == id || e->pub.id == &((const struct iw_cm_id_int *)id)->pub;
}

static void kill_events(struct iw_cm_id_int *id)
{
	iw_evq_kill_if(&id->ch->q, event_of, id);
}

void iw_cm_child_link(struct iw_cm_id_int *l, struct iw_cm_id_int *id)
{
	id->listener = l;
	l->num_children++;
	id->child_prev = NULL;
	id->child_next = l->children;
	if (l->children)
		l->children->child_prev = id;
	else
		l->child_oldest = id;
	l->children = id;
}

void iw_cm_child_unlink(struct iw_cm_id_int *id)
{
	struct iw_cm_id_int *l = id->listener;
	if (!l)
		return;
	if (id->child_prev)
		id->child_prev->child_next = id->child_next;
	else
		l->children = id->child_next;
	if (id->child_next)
		id->child_next->child_prev = id->child_prev;
	else
		l->child_oldest = id->child_prev;
	l->num_children--;
	id->listener = id->child_prev = id->child_next = NULL;
}

struct iw_cm_lcount *iw_cm_lcount_new(const struct iw_alloc_ops *a)
{
	struct iw_cm_lcount *lc = iw_calloc(a, 1, sizeof(*lc));
	if (lc) {
		lc->alloc = a;
		atomic_init(&lc->bad_stag, 0);
		atomic_init(&lc->refs, 1);
		pthread_mutex_init(&lc->lock, NULL);
	}
	return lc;
}

struct iw_cm_lcount *iw_cm_lcount_get(struct iw_cm_lcount *lc)
{
	if (lc)
		atomic_fetch_add(&lc->refs, 1);
	return lc;
}

void iw_cm_lcount_put(struct iw_cm_lcount *lc)
{
	if (lc && atomic_fetch_sub(&lc->refs, 1) == 1) {
		pthread_mutex_destroy(&lc->lock);
		iw_free(lc->alloc, lc);
	}
}

/* A listener going away: CONNECT_REQUESTs still queued stop naming it. */
static void forget_listener(struct iw_cm_id_int *id)
{
	struct iw_evq *q = &id->ch->q;
	pthread_mutex_lock(&q->lock);
	for (struct iw_evq_node *n = q->head; n; n = n->next) {
		struct cm_event *e = (struct cm_event *)n;
		if (e->pub.listen_id == &id->pub)
			e->pub.listen_id = NULL;
	}
	pthread_mutex_unlock(&q->lock);
}

void iw_cm_id_release(struct iw_cm_id_int *id)
{
	iw_cm_child_unlink(id);
	iw_cm_spread_forget(id);
	forget_listener(id);
	iw_ev_work_cancel(id->ev, &id->work);
	iw_ev_work_cancel(id->ev, &id->batch_work);
	iw_cm_batch_forget(id);
	kill_events(id);
	if (id->handoff)
		iw_cm_event_discard(id->handoff);
	iw_cm_lcount_put(id->lcount);
	atomic_fetch_sub(&id->ch->num_ids, 1);
	iw_ev_ids_add(id->ev, -1);
	pthread_mutex_destroy(&id->txlock);
	pthread_mutex_destroy(&id->rxlock);
	iw_free(id->pub.context->alloc, atomic_load(&id->spare));
	iw_free(id->pub.context->alloc, id);
}

