/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The process's CM state and the dispatcher: one thread reads libiwarp's
 * channel and turns each event into an rdma_cm_event on the channel of
 * the id it belongs to. A CONNECT_REQUEST brings a new id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

struct cm_global cm_g = {.lock = PTHREAD_MUTEX_INITIALIZER, .acked = PTHREAD_COND_INITIALIZER};

/* Under cm_g.lock. */
struct cm_id *cm_lookup(struct iw_cm_id *iw)
{
	for (struct cm_id *id = cm_g.ids; id; id = id->next)
		if (id->iw == iw)
			return id;
	return NULL;
}

void cm_register(struct cm_id *id)
{
	id->next = cm_g.ids;
	cm_g.ids = id;
}

void cm_unregister(struct cm_id *id)
{
	for (struct cm_id **p = &cm_g.ids; *p; p = &(*p)->next)
		if (*p == id) {
			*p = id->next;
			return;
		}
}

static enum rdma_cm_event_type cm_type(enum iw_cm_event_type t)
{
	switch (t) {
	case IW_CM_EVENT_CONNECT_REQUEST: return RDMA_CM_EVENT_CONNECT_REQUEST;
	case IW_CM_EVENT_CONNECT_RESPONSE: return RDMA_CM_EVENT_CONNECT_RESPONSE;
	case IW_CM_EVENT_CONNECT_ERROR: return RDMA_CM_EVENT_CONNECT_ERROR;
	case IW_CM_EVENT_UNREACHABLE: return RDMA_CM_EVENT_UNREACHABLE;
	case IW_CM_EVENT_REJECTED: return RDMA_CM_EVENT_REJECTED;
	case IW_CM_EVENT_ESTABLISHED: return RDMA_CM_EVENT_ESTABLISHED;
	case IW_CM_EVENT_DISCONNECTED: return RDMA_CM_EVENT_DISCONNECTED;
	default: return RDMA_CM_EVENT_TIMEWAIT_EXIT;
	}
}

/* Our copies of the addresses libiwarp keeps on the id (bound, listening,
 * connected), where rdma_get_local_addr and rdma_get_peer_addr read. */
void cm_sync_addrs(struct cm_id *id)
{
	if (id->iw->local_addr.ss_family)
		memcpy(&id->id.route.addr.src_storage, &id->iw->local_addr,
		       sizeof(id->iw->local_addr));
	if (id->iw->peer_addr.ss_family)
		memcpy(&id->id.route.addr.dst_storage, &id->iw->peer_addr,
		       sizeof(id->iw->peer_addr));
}

/* IRD/ORD as rdma_cm reports them: on a request, what the peer asks of us
 * (its ORD is the Reads we must answer, its IRD what we may send). */
static void cm_conn_param(struct rdma_conn_param *d, const struct iw_cm_event *s, struct cm_id *id)
{
	bool req = s->event == IW_CM_EVENT_CONNECT_REQUEST;

	d->private_data = s->param.private_data_len ? s->param.private_data : NULL;
	d->private_data_len = s->param.private_data_len > 255 ? 255 : s->param.private_data_len;
	d->responder_resources = req ? s->param.initiator_depth : s->param.responder_resources;
	d->initiator_depth = req ? s->param.responder_resources : s->param.initiator_depth;
	d->qp_num = id->id.qp ? id->id.qp->qp_num : 0;
}

/* The id an event belongs to; a CONNECT_REQUEST's new id is made here.
 * Under cm_g.lock. NULL: its id is gone, drop the event. */
static struct cm_id *cm_owner(struct iw_cm_event *e, struct cm_id **listener)
{
	*listener = NULL;
	if (e->event != IW_CM_EVENT_CONNECT_REQUEST)
		return cm_lookup(e->id);
	*listener = e->listen_id ? cm_lookup(e->listen_id) : NULL;
	if (!*listener)
		return NULL;
	struct cm_id *id = cm_id_new((*listener)->chan, e->id, (*listener)->id.context,
				     (*listener)->id.ps);
	if (id)
		cm_register(id);
	return id;
}

static void cm_dispatch_one(struct iw_cm_event *ie)
{
	struct cm_id *listener;
	struct cm_event *e = calloc(1, sizeof(*e));

	pthread_mutex_lock(&cm_g.lock);
	struct cm_id *id = e ? cm_owner(ie, &listener) : NULL;
	if (!id) {
		pthread_mutex_unlock(&cm_g.lock);
		free(e);
		struct iw_cm_id *orphan = ie->event == IW_CM_EVENT_CONNECT_REQUEST ? ie->id : NULL;
		iw_cm_ack_event(ie);
		iw_cm_destroy_id(orphan); /* a request nobody listens for any more */
		return;
	}
	cm_sync_addrs(id);
	e->iw = ie;
	e->owner = id;
	e->ev = (struct rdma_cm_event){.id = &id->id, .listen_id = listener ? &listener->id : NULL,
				       .event = cm_type(ie->event), .status = -ie->status};
	cm_conn_param(&e->ev.param.conn, ie, id);
	cm_enqueue(id->chan, e);
	pthread_mutex_unlock(&cm_g.lock);
}

static void *cm_dispatcher(void *arg)
{
	(void)arg;
	for (;;) {
		struct iw_cm_event *ie;
		int r = iw_cm_get_event(cm_g.ich, &ie);
		if (r == EINTR)
			continue;
		if (r)
			return NULL;
		cm_dispatch_one(ie);
	}
}

/* The device, libiwarp's channel and the dispatcher, made once. */
static int cm_global_start(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (!list)
		return errno;
	cm_g.verbs = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!cm_g.verbs)
		return errno;
	cm_g.ich = iw_cm_create_channel(cv_iw_context(cm_g.verbs));
	if (!cm_g.ich)
		return errno;
	pthread_t t;
	int r = pthread_create(&t, NULL, cm_dispatcher, NULL);
	if (r == 0)
		pthread_detach(t);
	return r;
}

static int cm_start_err;

static void cm_global_once(void)
{
	cm_start_err = cm_global_start();
}

int cm_global_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, cm_global_once);
	return cm_start_err;
}
