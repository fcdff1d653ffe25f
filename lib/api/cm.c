/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection manager API (cm.h): channels, ids, events, and the calls
 * that hand work to the loop thread (cm_conn.c does the socket side).
 *
 * Every state change of an id happens on its loop's thread under that
 * loop's lock (iw_ev_call on id->ev), so an application may call from any
 * thread and an id's events come out of the channel in the order things
 * happened.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "io/cm_int.h"
#include "engine/context.h"
#include "base/alloc.h"
#include "io/ev.h"
#include "io/loop_group.h"
#include "engine/qp.h"
#include "base/visibility.h"

IW_EXPORT const char *iw_cm_event_str(enum iw_cm_event_type ev)
{
	static const char *const names[] = {
		[IW_CM_EVENT_CONNECT_REQUEST] = "CONNECT_REQUEST",
		[IW_CM_EVENT_CONNECT_RESPONSE] = "CONNECT_RESPONSE",
		[IW_CM_EVENT_CONNECT_ERROR] = "CONNECT_ERROR",
		[IW_CM_EVENT_UNREACHABLE] = "UNREACHABLE",
		[IW_CM_EVENT_REJECTED] = "REJECTED",
		[IW_CM_EVENT_ESTABLISHED] = "ESTABLISHED",
		[IW_CM_EVENT_DISCONNECTED] = "DISCONNECTED",
		[IW_CM_EVENT_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	};
	if ((unsigned)ev < sizeof(names) / sizeof(names[0]) && names[ev])
		return names[ev];
	return "unknown";
}

/* ------------------------------------------------------------ events */

IW_EXPORT int iw_cm_get_event(struct iw_cm_channel *ch, struct iw_cm_event **out_event)
{
	if (!ch || !out_event)
		return EINVAL;
	return -iw_cm_event_take((struct iw_cm_channel_int *)ch, out_event);
}

/* An event handed out keeps its id alive (destroy says EBUSY) until this. */
IW_EXPORT int iw_cm_ack_event(struct iw_cm_event *event)
{
	if (!event)
		return EINVAL;
	iw_cm_event_done(event);
	return 0;
}

/* ------------------------------------------------------------ channel */

IW_EXPORT struct iw_cm_channel *iw_cm_create_channel(struct iw_context *ctx)
{
	if (!ctx || !ctx->num_loops) {
		errno = EINVAL;
		return NULL;
	}
	struct iw_cm_channel_int *c = iw_calloc(ctx->alloc, 1, sizeof(*c));
	if (!c)
		return NULL;
	int rc = iw_evq_init(&c->q);
	if (rc) {
		iw_free(ctx->alloc, c);
		errno = -rc;
		return NULL;
	}
	c->pub.context = ctx;
	c->pub.fd = c->q.fd;
	return &c->pub;
}

IW_EXPORT int iw_cm_destroy_channel(struct iw_cm_channel *ch)
{
	if (!ch)
		return 0;
	struct iw_cm_channel_int *c = (struct iw_cm_channel_int *)ch;
	if (atomic_load(&c->num_ids))
		return EBUSY;
	iw_cm_channel_drain(c);
	iw_evq_cleanup(&c->q);
	iw_free(ch->context->alloc, c);
	return 0;
}

struct create_args {
	struct iw_cm_channel_int *ch;
	struct iw_ev *ev;
	void *user;
	struct iw_cm_id_int *out;
};

static int do_create(void *arg)
{
	struct create_args *a = arg;
	a->out = iw_cm_id_alloc(a->ch, a->ev, a->user);
	return a->out ? 0 : ENOMEM;
}

IW_EXPORT int iw_cm_create_id(struct iw_cm_channel *ch, struct iw_cm_id **out_id,
			      void *user_context)
{
	if (!ch || !out_id)
		return EINVAL;
	/* New ids take the loops in turn (iw_cm_set_loop moves one). */
	struct iw_ev *ev = iw_ev_group_next(ch->context);
	struct create_args a = {.ch = (struct iw_cm_channel_int *)ch, .ev = ev, .user = user_context};
	int rc = iw_ev_run_locked(ev, do_create, &a); /* no libevent: no hop */
	if (!rc)
		*out_id = &a.out->pub;
	return rc;
}

/* The loop thread reads a listener's context as it accepts (cm_conn.c):
 * atomic on both sides, so no lock and no hop to the loop. */
IW_EXPORT int iw_cm_set_context(struct iw_cm_id *id, void *user_context)
{
	if (!id)
		return EINVAL;
	__atomic_store_n(&id->user_context, user_context, __ATOMIC_RELEASE);
	return 0;
}

/* The id lets go of its QP (NULL if none): no more wake-ups, and no more
 * counting into a listener's STag count the id may outlive. */
static struct iw_qp *qp_detach(struct iw_cm_id_int *id)
{
	struct iw_qp *qp = id->qp;
	if (!qp)
		return NULL;
	iw_qp_set_glue(qp, NULL, NULL);
	qp->mreq.bad_stag_group = NULL;
	id->qp = NULL;
	id->pub.qp = NULL;
	return qp;
}

static int do_destroy(void *arg)
{
	struct iw_cm_id_int *id = arg;
	if (atomic_load(&id->unacked))
		return EBUSY;
	iw_cm_conn_abort(id);
	struct iw_qp *qp = qp_detach(id);
	if (qp && id->own_qp)
		iw_destroy_qp(qp);
	iw_cm_id_release(id);
	return 0;
}

IW_EXPORT int iw_cm_destroy_id(struct iw_cm_id *id)
{
	if (!id)
		return 0;
	return iw_ev_call(iw_cm_id_int(id)->ev, do_destroy, iw_cm_id_int(id));
}

struct opts_args {
	struct iw_cm_id_int *id;
	const struct iw_mpa_opts *opts;
};

static int do_set_opts(void *arg)
{
	struct opts_args *a = arg;
	a->id->conn.opts = *a->opts;
	return 0;
}

struct tune_args {
	struct iw_cm_id_int *id;
	const struct iw_conn_opts *in;
	struct iw_conn_opts *out;
};

static int do_conn_opts(void *arg)
{
	struct tune_args *a = arg;
	if (a->out) {
		iw_conn_tune_get(&a->id->conn.tune, a->out);
		return 0;
	}
	return -iw_conn_tune_set(&a->id->conn.tune, a->in);
}

IW_EXPORT int iw_cm_set_conn_opts(struct iw_cm_id *id, const struct iw_conn_opts *opts)
{
	if (!id || !opts)
		return EINVAL;
	struct tune_args a = {iw_cm_id_int(id), opts, NULL};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_conn_opts, &a);
}

IW_EXPORT int iw_cm_get_conn_opts(struct iw_cm_id *id, struct iw_conn_opts *opts)
{
	if (!id || !opts)
		return EINVAL;
	struct tune_args a = {iw_cm_id_int(id), NULL, opts};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_conn_opts, &a);
}

struct lstats_args {
	struct iw_cm_id_int *id;
	struct iw_cm_listener_stats *out;
};

static int do_listener_stats(void *arg)
{
	struct lstats_args *a = arg;
	if (a->id->conn.state != IW_CONN_LISTEN)
		return EINVAL;
	*a->out = a->id->lstats;
	a->out->pending = a->id->num_children;
	a->out->invalid_stag = a->id->lcount ? atomic_load(&a->id->lcount->bad_stag) : 0;
	return 0;
}

IW_EXPORT int iw_cm_listener_stats(struct iw_cm_id *id, struct iw_cm_listener_stats *out)
{
	if (!id || !out)
		return EINVAL;
	struct lstats_args a = {iw_cm_id_int(id), out};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_listener_stats, &a);
}

/* On the loop thread, like every other change to an id. */
IW_EXPORT int iw_cm_set_mpa_opts(struct iw_cm_id *id, const struct iw_mpa_opts *opts)
{
	if (!id || !opts || (opts->rev != 1 && opts->rev != 2) || opts->pd_cap > IW_MPA_PD_MAX)
		return EINVAL;
	struct opts_args a = {iw_cm_id_int(id), opts};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_set_opts, &a);
}

struct addr_args {
	struct iw_cm_id_int *id;
	const struct sockaddr *addr;
	int backlog;
	const struct iw_conn_param *param;
};

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int do_bind(void *arg)
{
	struct addr_args *a = arg;
	if (a->id->bound || a->id->conn.state != IW_CONN_IDLE)
		return EINVAL;
	memcpy(&a->id->pub.local_addr, a->addr, addr_len(a->addr));
	a->id->bound = true;
	return 0;
}

IW_EXPORT int iw_cm_bind_addr(struct iw_cm_id *id, const struct sockaddr *addr)
{
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return EINVAL;
	struct addr_args a = {.id = iw_cm_id_int(id), .addr = addr};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_bind, &a);
}

static int do_listen(void *arg)
{
	struct addr_args *a = arg;
	if (!a->id->bound || a->id->conn.state != IW_CONN_IDLE)
		return EINVAL;
	a->id->backlog = a->backlog;
	return iw_cm_conn_listen(a->id);
}

IW_EXPORT int iw_cm_listen(struct iw_cm_id *id, int backlog)
{
	if (!id)
		return EINVAL;
	struct addr_args a = {.id = iw_cm_id_int(id), .backlog = backlog};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_listen, &a);
}

/* ------------------------------------------------------------ QP */

/* Posted Sends and Writes may wait to share a write (cm_batch.c);
 * everything else is written now. */
static void qp_wake(struct iw_qp *qp, bool posted)
{
	struct iw_cm_id_int *id = qp->glue;
	if (id && posted)
		iw_cm_conn_post(id);
	else if (id)
		iw_cm_conn_tx(id);
}

struct qp_args {
	struct iw_cm_id_int *id;
	struct iw_pd *pd;
	struct iw_qp_init_attr *attr;
};

static int do_create_qp(void *arg)
{
	struct qp_args *a = arg;
	if (a->id->qp)
		return EEXIST;
	struct iw_qp *qp = iw_create_qp(a->pd, a->attr);
	if (!qp)
		return errno;
	struct iw_qp_attr qa = {.qp_state = IW_QPS_INIT};
	iw_modify_qp(qp, &qa, IW_QP_STATE);
	/* An accepted connection's refused STags count for its listener too
	 * (iw_cm_listener_stats); set before any receive path (the loop's or
	 * a poller's) can see the QP, cleared in qp_detach once none can. */
	if (a->id->lcount)
		qp->mreq.bad_stag_group = &a->id->lcount->bad_stag;
	iw_qp_set_glue(qp, a->id, qp_wake);
	a->id->qp = qp;
	a->id->pub.qp = qp;
	a->id->own_qp = true;
	return 0;
}

IW_EXPORT int iw_cm_create_qp(struct iw_cm_id *id, struct iw_pd *pd, struct iw_qp_init_attr *attr)
{
	if (!id || !pd || !attr)
		return EINVAL;
	struct qp_args a = {.id = iw_cm_id_int(id), .pd = pd, .attr = attr};
	/* Engine objects only (the socket's events are armed by connect or
	 * accept): under the loop's lock on this thread, no hop. */
	return iw_ev_run_locked(iw_cm_id_int(id)->ev, do_create_qp, &a);
}

static int do_destroy_qp(void *arg)
{
	struct iw_cm_id_int *id = arg;
	if (!id->qp)
		return 0;
	iw_cm_conn_abort(id);
	return iw_destroy_qp(qp_detach(id));
}

IW_EXPORT void iw_cm_destroy_qp(struct iw_cm_id *id)
{
	if (id)
		iw_ev_call(iw_cm_id_int(id)->ev, do_destroy_qp, iw_cm_id_int(id));
}

/* ------------------------------------------------------------ connect */

static int take_param(struct iw_cm_id_int *id, const struct iw_conn_param *p)
{
	if (!p)
		return 0;
	if (p->private_data_len > IW_MPA_PD_MAX || (p->private_data_len && !p->private_data))
		return EINVAL;
	if (p->mpa) {
		if (p->mpa->rev != 1 && p->mpa->rev != 2)
			return EINVAL;
		id->conn.opts = *p->mpa;
	}
	id->pd_len = p->private_data_len;
	if (id->pd_len)
		memcpy(id->pd, p->private_data, id->pd_len);
	id->ird = p->responder_resources;
	id->ord = p->initiator_depth;
	id->connect_timeout_ms = p->connect_timeout_ms ? p->connect_timeout_ms : IW_CONNECT_TIMEOUT_MS_DEFAULT;
	return 0;
}

static int do_connect(void *arg)
{
	struct addr_args *a = arg;
	struct iw_cm_id_int *id = a->id;
	if (!id->qp)
		return EINVAL;
	if (id->conn.state != IW_CONN_IDLE)
		return EISCONN;
	int rc = take_param(id, a->param);
	if (rc)
		return rc;
	if (!a->param)
		id->connect_timeout_ms = IW_CONNECT_TIMEOUT_MS_DEFAULT, id->ird = id->ord = 1;
	return iw_cm_conn_connect(id, a->addr);
}

IW_EXPORT int iw_cm_connect(struct iw_cm_id *id, const struct sockaddr *dst,
			    const struct iw_conn_param *param)
{
	if (!id || !dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return EINVAL;
	struct addr_args a = {.id = iw_cm_id_int(id), .addr = dst, .param = param};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_connect, &a);
}

static int do_accept(void *arg)
{
	struct addr_args *a = arg;
	struct iw_cm_id_int *id = a->id;
	if (!id->qp || id->conn.state != IW_CONN_CONNREQ)
		return EINVAL;
	/* The id starts with the listener's options; iw_cm_set_mpa_opts on
	 * the new id or param->mpa may change the responder's choices (RTR,
	 * CRC, markers, private data cap) up to this point: the Reply is
	 * built from them now. */
	int rc = take_param(id, a->param);
	if (rc)
		return rc;
	if (!a->param)
		id->ird = id->ord = 1;
	return iw_cm_conn_accept(id);
}

IW_EXPORT int iw_cm_accept(struct iw_cm_id *id, const struct iw_conn_param *param)
{
	if (!id)
		return EINVAL;
	struct addr_args a = {.id = iw_cm_id_int(id), .param = param};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_accept, &a);
}

struct reject_args {
	struct iw_cm_id_int *id;
	const void *pd;
	uint16_t len;
};

static int do_reject(void *arg)
{
	struct reject_args *a = arg;
	if (a->id->conn.state != IW_CONN_CONNREQ)
		return EINVAL;
	return iw_cm_conn_reject(a->id, a->pd, a->len);
}

IW_EXPORT int iw_cm_reject(struct iw_cm_id *id, const void *private_data,
			   uint16_t private_data_len)
{
	if (!id || private_data_len > IW_MPA_PD_MAX || (private_data_len && !private_data))
		return EINVAL;
	struct reject_args a = {iw_cm_id_int(id), private_data, private_data_len};
	return iw_ev_call(iw_cm_id_int(id)->ev, do_reject, &a);
}

static int do_disconnect(void *arg)
{
	return iw_cm_conn_disconnect(arg);
}

IW_EXPORT int iw_cm_disconnect(struct iw_cm_id *id)
{
	if (!id)
		return EINVAL;
	return iw_ev_call(iw_cm_id_int(id)->ev, do_disconnect, iw_cm_id_int(id));
}
