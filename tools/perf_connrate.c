/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --test connect: the connection setup rate (issue 13). The client keeps
 * -q setups in flight against an iwarp-perf server: each is a CM id with a
 * small QP, TCP connect, the MPA exchange, ESTABLISHED, a disconnect and
 * DISCONNECTED, after which the slot starts the next one. The server
 * accepts every request on its listener, counts its ESTABLISHED events and
 * destroys each id at DISCONNECTED, until the client's report on the
 * parameter-exchange connection says it is done; the client prints its
 * setups per second, the p50/p99 from iw_cm_connect to ESTABLISHED, and
 * how many the server saw established. With --tcp the same loop with plain
 * sockets follows (perf_connrate_tcp.c): connect, the server accepts and
 * closes, the client reads the end and closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

struct cr_slot {
	struct iw_cm_id *id;
	double t0;
};

struct cr_run {
	struct perf_sess *s;
	const struct sockaddr *dst;
	struct cr_slot *slots;
	struct iw_cq *cq;
	double end;            /* -D: no new setup after this */
	uint64_t started, done, failed;
	struct perf_samples lat; /* microseconds, connect to ESTABLISHED */
};

/* A QP as small as the API allows: the figure is the setup, not queues. */
static int cr_qp(struct perf_sess *s, struct iw_cm_id *id, struct iw_cq *cq)
{
	struct iw_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};
	return iw_cm_create_qp(id, s->pd, &qa);
}

static bool more_to_start(const struct cr_run *r)
{
	const struct perf_opts *o = &r->s->o;
	return o->duration > 0 ? perf_now() < r->end : r->started < o->iters;
}

static int cr_start(struct cr_run *r, struct cr_slot *sl)
{
	struct perf_sess *s = r->s;
	struct iw_conn_param p = {.connect_timeout_ms = (uint32_t)(s->o.timeout * 1000)};
	if (iw_cm_create_id(s->cm, &sl->id, sl))
		return -1;
	sl->t0 = perf_now();
	int rc = cr_qp(s, sl->id, r->cq);
	if (!rc)
		rc = iw_cm_connect(sl->id, r->dst, &p);
	if (rc) {
		perf_err(s, "connect: %s", strerror(rc));
		iw_cm_destroy_id(sl->id);
		sl->id = NULL;
		return -1;
	}
	r->started++;
	return 0;
}

/* The slot's setup is over (down or failed): the next one, if due. */
static int cr_next(struct cr_run *r, struct cr_slot *sl)
{
	iw_cm_destroy_id(sl->id);
	sl->id = NULL;
	return more_to_start(r) ? cr_start(r, sl) : 0;
}

static int cr_event(struct cr_run *r, struct iw_cm_event *ev)
{
	struct cr_slot *sl = ev->id->user_context;
	enum iw_cm_event_type t = ev->event;
	if (ev->id == r->s->comm.id || !sl || sl->id != ev->id) {
		iw_cm_ack_event(ev);
		return t == IW_CM_EVENT_DISCONNECTED ? -1 : 0; /* the comm connection */
	}
	iw_cm_ack_event(ev);
	if (t == IW_CM_EVENT_ESTABLISHED) {
		perf_samples_add(&r->lat, (perf_now() - sl->t0) * 1e6);
		return iw_cm_disconnect(sl->id) ? -1 : 0;
	}
	if (t == IW_CM_EVENT_DISCONNECTED)
		r->done++;
	else
		r->failed++;
	if (t != IW_CM_EVENT_DISCONNECTED && r->failed > 10 + r->done / 100) {
		perf_err(r->s, "setups fail: %s (%" PRIu64 " of %" PRIu64 ")",
			 iw_cm_event_str(t), r->failed, r->started);
		return -1;
	}
	return cr_next(r, sl);
}

static bool in_flight(const struct cr_run *r)
{
	for (uint32_t i = 0; i < r->s->o.qps; i++)
		if (r->slots[i].id)
			return true;
	return false;
}

static struct iw_cm_event *next_event(struct perf_sess *s, int ms)
{
	struct pollfd p = {.fd = s->cm->fd, .events = POLLIN};
	struct iw_cm_event *ev;
	if (iw_cm_get_event(s->cm, &ev) == 0)
		return ev;
	if (poll(&p, 1, ms) != 1 || iw_cm_get_event(s->cm, &ev))
		return NULL;
	return ev;
}

/* The channel's fd made nonblocking: events are taken until none is left
 * before sleeping in poll. */
static void cm_nonblock(struct perf_sess *s)
{
	fcntl(s->cm->fd, F_SETFL, fcntl(s->cm->fd, F_GETFL) | O_NONBLOCK);
}

static int cr_loop(struct cr_run *r)
{
	struct perf_sess *s = r->s;
	cm_nonblock(s);
	for (uint32_t i = 0; i < s->o.qps && more_to_start(r); i++)
		if (cr_start(r, &r->slots[i]))
			return -1;
	while (in_flight(r)) {
		struct iw_cm_event *ev = next_event(s, (int)(s->o.timeout * 1000) + 1000);
		if (!ev) {
			perf_err(s, "no connection event within %.0f s", s->o.timeout + 1);
			return -1;
		}
		if (cr_event(r, ev))
			return -1;
	}
	return 0;
}

static void cr_print(const struct perf_sess *s, const struct perf_result *r,
		     const struct perf_result *srv, const struct perf_result *tcp, uint64_t failed)
{
	const struct perf_opts *o = &s->o;
	double rate = r->seconds > 0 ? r->iters / r->seconds : 0;
	if (o->json) {
		printf("{\"tool\":\"iwarp-perf\",\"test\":\"connect\",\"role\":\"%s\","
		       "\"in_flight\":%u,\"crc\":%s,\"setups\":%" PRIu64 ",\"failed\":%" PRIu64
		       ",\"seconds\":%.3f,\"setups_per_sec\":%.0f,\"setup_p50_us\":%.1f,"
		       "\"setup_p99_us\":%.1f,\"server_established\":%" PRIu64,
		       o->role == ROLE_LOOPBACK ? "loopback" : "client", o->qps,
		       o->crc ? "true" : "false", r->iters, failed, r->seconds, rate, r->t_typ,
		       r->t_p99, srv->iters);
		if (tcp)
			printf(",\"tcp\":{\"setups\":%" PRIu64 ",\"setups_per_sec\":%.0f,"
			       "\"setup_p50_us\":%.1f,\"setup_p99_us\":%.1f}",
			       tcp->iters, tcp->iters / tcp->seconds, tcp->t_typ, tcp->t_p99);
		printf("}\n");
		return;
	}
	printf(" connection setups (TCP connect, MPA exchange, ESTABLISHED both sides,"
	       " disconnect), %u in flight\n", o->qps);
	printf(" %-6s %10s %9s %12s %12s %12s\n", "", "#setups", "seconds", "setups/sec",
	       "p50 [usec]", "p99 [usec]");
	printf(" %-6s %10" PRIu64 " %9.3f %12.0f %12.1f %12.1f\n", "iWARP", r->iters, r->seconds,
	       rate, r->t_typ, r->t_p99);
	if (tcp)
		printf(" %-6s %10" PRIu64 " %9.3f %12.0f %12.1f %12.1f\n", "TCP", tcp->iters,
		       tcp->seconds, tcp->iters / tcp->seconds, tcp->t_typ, tcp->t_p99);
	printf(" server saw %" PRIu64 " established; %" PRIu64 " setups failed\n", srv->iters,
	       failed);
}

int perf_connrate_client(struct perf_sess *s, const struct sockaddr *dst)
{
	struct cr_run r = {.s = s, .dst = dst};
	r.slots = calloc(s->o.qps, sizeof(*r.slots));
	r.cq = iw_create_cq(s->ctx, 16, NULL, NULL, 0);
	struct perf_result mine = {0}, srv = {0}, tcp = {0};
	int rc = r.slots && r.cq ? 0 : -1;
	double t0 = perf_now();
	r.end = t0 + s->o.duration;
	if (!rc)
		rc = cr_loop(&r);
	mine.seconds = perf_now() - t0;
	mine.iters = r.done;
	perf_lat_summary(&r.lat, &mine);
	for (uint32_t i = 0; r.slots && i < s->o.qps; i++)
		iw_cm_destroy_id(r.slots[i].id);
	if (!rc && s->o.tcp)
		rc = perf_connrate_tcp(s, dst, &tcp);
	if (!rc)
		rc = perf_xchg_report(s, &mine, &srv);
	if (!rc)
		cr_print(s, &mine, &srv, s->o.tcp ? &tcp : NULL, r.failed);
	perf_samples_free(&r.lat);
	iw_destroy_cq(r.cq);
	free(r.slots);
	return rc ? PX_FAIL : PX_OK;
}

/* ------------------------------------------------------------ server */

struct cr_srv {
	struct perf_sess *s;
	struct iw_cq *cq;
	uint64_t established, live;
};

static void srv_request(struct cr_srv *v, struct iw_cm_event *ev)
{
	struct iw_cm_id *id = ev->id;
	struct iw_conn_param p = {0};
	iw_cm_ack_event(ev);
	if (cr_qp(v->s, id, v->cq) || iw_cm_accept(id, &p)) {
		iw_cm_reject(id, NULL, 0);
		iw_cm_destroy_id(id);
		return;
	}
	v->live++;
}

/* Connections of the test carry no context; the comm connection's events
 * end the test (the client went away). */
static int srv_event(struct cr_srv *v, struct iw_cm_event *ev)
{
	struct perf_sess *s = v->s;
	enum iw_cm_event_type t = ev->event;
	struct iw_cm_id *id = ev->id;
	if (t == IW_CM_EVENT_CONNECT_REQUEST && ev->listen_id == s->listener) {
		srv_request(v, ev);
		return 0;
	}
	iw_cm_ack_event(ev);
	if (id == s->comm.id)
		return t == IW_CM_EVENT_DISCONNECTED ? -1 : 0;
	if (t == IW_CM_EVENT_ESTABLISHED) {
		v->established++;
		return 0;
	}
	if (t == IW_CM_EVENT_DISCONNECTED || t == IW_CM_EVENT_CONNECT_ERROR) {
		iw_cm_destroy_id(id);
		v->live--;
	}
	return 0;
}

int perf_connrate_server(struct perf_sess *s)
{
	struct cr_srv v = {.s = s};
	v.cq = iw_create_cq(s->ctx, 16, NULL, NULL, 0);
	if (!v.cq)
		return PX_FAIL;
	int rc = 0;
	cm_nonblock(s);
	while (!rc && !perf_comm_ready(s)) {
		struct iw_cm_event *ev = next_event(s, 20);
		if (ev)
			rc = srv_event(&v, ev);
	}
	/* Events that came before the client's report. */
	struct iw_cm_event *ev;
	while (!rc && (ev = next_event(s, 0)))
		rc = srv_event(&v, ev);
	struct perf_result mine = {.iters = v.established}, theirs;
	if (!rc)
		rc = perf_xchg_report(s, &mine, &theirs);
	if (!rc && s->out && !s->o.json)
		fprintf(s->out, " %" PRIu64 " connections established, %" PRIu64
			" set up by the client\n", v.established, theirs.iters);
	/* Ids still up (a client that stopped early) go with the context. */
	iw_destroy_cq(v.cq);
	return rc ? PX_FAIL : PX_OK;
}
