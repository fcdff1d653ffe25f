/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections: the libiwarp context, the parameter-exchange ("comm")
 * connection, the data connections and their buffers, and waiting.
 *
 * What perftest's rdma_cm path does, mirrored here (perftest 4.5-0.17, whose
 * VERSION is "6.06"; src/perftest_communication.c unless said otherwise):
 *  - rdma_server_connect/rdma_client_connect: the comm connection is an RC QP
 *    made through rdma_cm with conn_param.responder_resources and
 *    initiator_depth 0 (its parameters are a copy with verb SEND, so the
 *    READ branch that sets out_reads is not taken): IRD/ORD 0/0 on the wire.
 *    One receive of sizeof(struct pingpong_dest) (56 octets) is posted before
 *    connecting or accepting (post_one_recv_wqe) and reposted after each
 *    message read. The server accepts without waiting for ESTABLISHED and
 *    destroys its listening id (cm_id_control) right after.
 *  - create_rdma_cm_connection: after one ctx_hand_shake the client resolves
 *    and connects num_of_qps data connections to the same address and port;
 *    the server listens on that port again (rdma_cm_server_connection,
 *    backlog num_of_qps) and accepts each CONNECT_REQUEST
 *    (rdma_cm_connection_request_handler), then destroys the listener; one
 *    more ctx_hand_shake follows. A client that meets a listener not yet
 *    there retries the whole set up to 10 times, 100 ms apart
 *    (rdma_cm_client_connection).
 *  - Data conn_param: READ (and ATOMIC) tests ask for IRD = ORD = out_reads
 *    (rdma_cm_route_handler); the server clamps its answer to the client's
 *    offer (responder_resources <= initiator_depth and the reverse). Other
 *    tests leave both 0. No private data is sent on iWARP.
 *  - destroy_ctx -> rdma_cm_disconnect_nodes: the server rdma_disconnect()s
 *    each data connection, and both sides wait for one DISCONNECTED per
 *    connection. The comm connection is then destroyed without a disconnect.
 *
 * Here the server keeps one listener for the comm and the data connections
 * (the first CONNECT_REQUEST is the comm connection) so a client is never
 * refused between the two; the listener goes once the data connections are
 * accepted, as perftest's.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define COMM_MSG 64   /* room per message buffer; perftest's are <= 56 octets */
#define COMM_RECVS 2

void perf_err(const struct perf_sess *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", s && s->who ? s->who : "iwarp-perf");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int ms_of(const struct perf_sess *s)
{
	return (int)(s->o.timeout * 1000);
}

/* ------------------------------------------------------------ CM events */

/* The next CM event within ms (-1: no limit), or NULL. */
static struct iw_cm_event *cm_next(struct perf_sess *s, int ms)
{
	struct pollfd p = {.fd = s->cm->fd, .events = POLLIN};
	int n;
	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return NULL;
	struct iw_cm_event *ev;
	if (iw_cm_get_event(s->cm, &ev))
		return NULL;
	return ev;
}

static bool is_data_id(const struct perf_sess *s, const struct iw_cm_id *id, uint32_t *idx)
{
	for (uint32_t i = 0; s->ids && i < s->nqp; i++)
		if (s->ids[i] == id) {
			if (idx)
				*idx = i;
			return true;
		}
	return false;
}

/* An event nobody waits for: note a lost connection, turn away strangers. */
static void cm_stray(struct perf_sess *s, struct iw_cm_event *ev)
{
	uint32_t i;
	struct iw_cm_id *stranger = NULL;
	if (ev->event == IW_CM_EVENT_DISCONNECTED || ev->event == IW_CM_EVENT_CONNECT_ERROR) {
		if (ev->id == s->comm.id)
			s->dead = 1;
		else if (is_data_id(s, ev->id, &i)) {
			s->disconnected[i] = true;
			s->data_dead = 1;
		}
	} else if (ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
		stranger = ev->id;
	}
	iw_cm_ack_event(ev);
	if (stranger) {
		iw_cm_reject(stranger, NULL, 0);
		iw_cm_destroy_id(stranger);
	}
}

bool perf_alive(struct perf_sess *s)
{
	struct iw_cm_event *ev;
	while ((ev = cm_next(s, 0)))
		cm_stray(s, ev);
	return !s->dead && !s->data_dead;
}

/* Wait for an event of id (any id when NULL), handling others meanwhile. */
static struct iw_cm_event *cm_wait_id(struct perf_sess *s, const struct iw_cm_id *id, int ms)
{
	double end = perf_now() + ms / 1000.0;
	for (;;) {
		int left = ms < 0 ? -1 : (int)((end - perf_now()) * 1000);
		if (ms >= 0 && left < 0)
			left = 0;
		struct iw_cm_event *ev = cm_next(s, left);
		if (!ev)
			return NULL;
		if (!id || ev->id == id)
			return ev;
		cm_stray(s, ev);
	}
}

/* ------------------------------------------------------------ session */

int perf_sess_open(struct perf_sess *s)
{
	s->tcp_listen_fd = -1;
	/* A server learns whether to poll from the client, after this: its
	 * context can always be polled (unpolled, it behaves as any other),
	 * and data QPs made for a client that does not poll are left to the
	 * loop (data_qp). */
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_FLAGS,
				    .flags = s->server || perf_polling(&s->o) ? IW_CONTEXT_POLL : 0};
	if (s->o.loops) {
		/* A loop group: the data connections take the loops in turn
		 * (new ids on the client, the listener's round robin here). */
		a.comp_mask |= IW_CONTEXT_ATTR_LOOPS;
		a.num_loops = s->o.loops;
	}
	if (s->o.pin) {
		a.comp_mask |= IW_CONTEXT_ATTR_LOOPS;
		a.loop_flags = IW_LOOP_PIN;
	}
	s->ctx = iw_context_new(&a);
	if (!s->ctx) {
		perf_err(s, "iw_context_new: %s", strerror(errno));
		return PX_FAIL;
	}
	s->cm = iw_cm_create_channel(s->ctx);
	s->pd = iw_alloc_pd(s->ctx);
	struct perf_comm *c = &s->comm;
	c->cc = iw_create_comp_channel(s->ctx);
	c->cq = c->cc ? iw_create_cq(s->ctx, 16, NULL, c->cc, 0) : NULL;
	c->buf = calloc(1, COMM_MSG * (1 + COMM_RECVS));
	c->mr = c->buf && s->pd ? iw_reg_mr(s->pd, c->buf, COMM_MSG * (1 + COMM_RECVS),
					     IW_ACCESS_LOCAL_WRITE) : NULL;
	if (!s->cm || !s->pd || !c->cq || !c->mr) {
		perf_err(s, "setting up the context: %s", strerror(errno));
		return PX_FAIL;
	}
	return PX_OK;
}

static void free_data(struct perf_sess *s)
{
	iw_dereg_mr(s->mr);
	iw_dereg_mr(s->ctrl_mr);
	free(s->buf);
	free(s->ctrl);
	free(s->my);
	free(s->rem);
	free(s->ids);
	free(s->disconnected);
	free(s->qp_grp);
	for (uint32_t g = 0; s->grp && g < s->ngrp; g++) {
		iw_destroy_cq(s->grp[g].scq);
		iw_destroy_cq(s->grp[g].rcq);
		iw_destroy_comp_channel(s->grp[g].cc);
	}
	free(s->grp);
	s->grp = NULL;
	s->qp_grp = NULL;
	s->ngrp = 0;
	s->mr = s->ctrl_mr = NULL;
	s->buf = NULL;
	s->ctrl = NULL;
	s->my = s->rem = NULL;
	s->ids = NULL;
	s->disconnected = NULL;
	s->scq = s->rcq = NULL;
	s->dcc = NULL;
}

void perf_sess_close(struct perf_sess *s)
{
	perf_data_close(s);
	iw_cm_destroy_id(s->comm.id);
	iw_cm_destroy_id(s->listener);
	s->comm.id = s->listener = NULL;
	free_data(s);
	iw_dereg_mr(s->comm.mr);
	free(s->comm.buf);
	iw_destroy_cq(s->comm.cq);
	iw_destroy_comp_channel(s->comm.cc);
	iw_dealloc_pd(s->pd);
	iw_cm_destroy_channel(s->cm);
	iw_context_free(s->ctx);
	if (s->tcp_listen_fd >= 0)
		close(s->tcp_listen_fd);
	memset(s, 0, sizeof(*s));
	s->tcp_listen_fd = -1;
}

/* IPv4 first, as perftest (ai_family AF_INET unless --ipv6) and as our
 * server listens; a name with only an IPv6 address still works. */
int perf_resolve(const char *name, uint16_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	char svc[8];
	snprintf(svc, sizeof(svc), "%u", port);
	int rc = getaddrinfo(name, svc, &hints, &res);
	if (rc) {
		hints.ai_family = AF_UNSPEC;
		rc = getaddrinfo(name, svc, &hints, &res);
	}
	if (rc) {
		fprintf(stderr, "iwarp-perf: %s: %s\n", name, gai_strerror(rc));
		return PX_CONNECT;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return PX_OK;
}

/* ------------------------------------------------------------ comm */

static int comm_qp(struct perf_sess *s, struct iw_cm_id *id)
{
	struct iw_qp_init_attr qa = {
		.send_cq = s->comm.cq, .recv_cq = s->comm.cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 2, .max_recv_wr = COMM_RECVS, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	int rc = iw_cm_create_qp(id, s->pd, &qa);
	for (int i = 0; !rc && i < COMM_RECVS; i++) {
		struct iw_sge sge = {.addr = (uintptr_t)s->comm.buf + COMM_MSG * (1 + i),
				     .length = COMM_MSG, .lkey = s->comm.mr->lkey};
		struct iw_recv_wr wr = {.wr_id = (uint64_t)i + 1, .sg_list = &sge, .num_sge = 1};
		struct iw_recv_wr *bad;
		rc = iw_post_recv(id->qp, &wr, &bad);
	}
	if (rc)
		perf_err(s, "comm QP: %s", strerror(rc));
	return rc;
}

static const char *why(const struct iw_cm_event *ev)
{
	if (ev->event == IW_CM_EVENT_REJECTED)
		return "rejected by the peer";
	if (ev->event == IW_CM_EVENT_UNREACHABLE)
		return ev->status == ECONNREFUSED ? "connection refused (is the server running?)"
						   : strerror(ev->status);
	return ev->status ? strerror(ev->status) : iw_cm_event_str(ev->event);
}

int perf_listen(struct perf_sess *s, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	if (addr) {
		if (perf_resolve(addr, port, &ss))
			return PX_CONNECT;
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		*in = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(port)};
		in->sin_addr.s_addr = htonl(INADDR_ANY);
	}
	int rc = iw_cm_create_id(s->cm, &s->listener, NULL);
	if (!rc)
		rc = iw_cm_bind_addr(s->listener, (struct sockaddr *)&ss);
	if (!rc)
		rc = iw_cm_listen(s->listener, PERF_MAX_QPS + 1);
	if (rc) {
		perf_err(s, "listening on port %u: %s", port, strerror(rc));
		return PX_CONNECT;
	}
	s->bound_port = ntohs(((struct sockaddr_in *)&s->listener->local_addr)->sin_port);
	return PX_OK;
}

/* The exchange connection's ESTABLISHED within ms, or PX_CONNECT (said,
 * prefixed with what). */
static int comm_established(struct perf_sess *s, int ms, const char *what)
{
	struct iw_cm_event *ev = cm_wait_id(s, s->comm.id, ms);
	if (!ev || ev->event != IW_CM_EVENT_ESTABLISHED) {
		perf_err(s, "%s: %s", what, ev ? why(ev) : "timed out");
		if (ev)
			iw_cm_ack_event(ev);
		return PX_CONNECT;
	}
	iw_cm_ack_event(ev);
	s->comm.up = true;
	return PX_OK;
}

/* Accept the first connection: the comm connection. A server waits as long
 * as it takes (as perftest's), the loopback one no longer than --timeout. */
int perf_accept_comm(struct perf_sess *s, int ms)
{
	struct iw_cm_event *ev;
	for (;;) {
		ev = cm_wait_id(s, NULL, ms);
		if (!ev) {
			perf_err(s, "no client came");
			return PX_CONNECT;
		}
		if (ev->event == IW_CM_EVENT_CONNECT_REQUEST)
			break;
		iw_cm_ack_event(ev);
	}
	s->comm.id = ev->id;
	iw_cm_ack_event(ev);
	if (comm_qp(s, s->comm.id))
		return PX_CONNECT;
	struct iw_conn_param p = {.responder_resources = 0, .initiator_depth = 0};
	int rc = iw_cm_accept(s->comm.id, &p);
	if (rc) {
		perf_err(s, "accepting: %s", strerror(rc));
		return PX_CONNECT;
	}
	return comm_established(s, ms_of(s), "client connection");
}

int perf_connect_comm(struct perf_sess *s, const struct sockaddr *dst)
{
	int rc = iw_cm_create_id(s->cm, &s->comm.id, NULL);
	if (rc || comm_qp(s, s->comm.id))
		return PX_CONNECT;
	struct iw_conn_param p = {.connect_timeout_ms = (uint32_t)ms_of(s)};
	rc = iw_cm_connect(s->comm.id, dst, &p);
	if (rc) {
		perf_err(s, "connecting: %s", strerror(rc));
		return PX_CONNECT;
	}
	return comm_established(s, ms_of(s) + 1000, "connecting to the server");
}

/* ------------------------------------------------------------ data */

uint8_t *perf_region_local(const struct perf_sess *s, uint32_t qp)
{
	return s->buf + (size_t)qp * s->region;
}

uint8_t *perf_region_remote(const struct perf_sess *s, uint32_t qp)
{
	return s->buf + (size_t)(s->nqp + qp) * s->region;
}

static uint64_t largest_size(const struct perf_opts *o)
{
	if (!o->sweep)
		return o->size;
	uint64_t m = 2;
	while (m * 2 <= o->max_size)
		m *= 2;
	return m;
}

/* One set of CQs and a channel, or with --threads one per loop (each
 * sized for every QP: which loops the QPs land on is known only as they
 * connect). */
static int alloc_cqs(struct perf_sess *s)
{
	const struct perf_opts *o = &s->o;
	s->ngrp = o->threads ? iw_context_num_loops(s->ctx) : 1;
	s->grp = calloc(s->ngrp, sizeof(*s->grp));
	s->qp_grp = calloc(s->nqp, sizeof(*s->qp_grp));
	if (!s->grp || !s->qp_grp)
		return -1;
	int scqe = (int)(s->nqp * (2 * o->tx_depth + 16) + 16);
	int rcqe = (int)(s->nqp * (perf_rx_depth(o) + 16) + 16);
	for (uint32_t g = 0; g < s->ngrp; g++) {
		struct perf_cqs *c = &s->grp[g];
		c->cc = iw_create_comp_channel(s->ctx);
		c->scq = c->cc ? iw_create_cq(s->ctx, scqe, NULL, c->cc, 0) : NULL;
		c->rcq = c->cc ? iw_create_cq(s->ctx, rcqe, NULL, c->cc, 0) : NULL;
		if (!c->scq || !c->rcq)
			return -1;
	}
	s->dcc = s->grp[0].cc;
	s->scq = s->grp[0].scq;
	s->rcq = s->grp[0].rcq;
	return 0;
}

/* Buffers as perftest lays them out (set_up_connection): per QP a region
 * we send from and, after all of those, one the peer writes to, reads from
 * or we receive into; each max(size, cycle_buffer). Zeroed: write_lat waits
 * for a counter in the last octet. */
int perf_data_alloc(struct perf_sess *s)
{
	const struct perf_opts *o = &s->o;
	s->nqp = o->qps;
	size_t r = largest_size(o);
	if (r < s->cycle_buffer)
		r = s->cycle_buffer;
	s->region = (r + 4095) / 4096 * 4096;
	size_t len = 2 * s->nqp * s->region;
	if (len > (1ul << 30)) {
		perf_err(s, "%zu MiB of buffers: too much (fewer -q or a smaller -a range)",
			 len >> 20);
		return PX_FAIL;
	}
	s->buf = aligned_alloc(4096, len);
	s->ctrl = calloc(2 * s->nqp, sizeof(uint32_t));
	s->my = calloc(s->nqp, sizeof(*s->my));
	s->rem = calloc(s->nqp, sizeof(*s->rem));
	s->ids = calloc(s->nqp, sizeof(*s->ids));
	s->disconnected = calloc(s->nqp, sizeof(bool));
	if (!s->buf || !s->ctrl || !s->my || !s->rem || !s->ids || !s->disconnected) {
		perf_err(s, "out of memory for %zu MiB of buffers", len >> 20);
		return PX_FAIL;
	}
	memset(s->buf, 0, len);
	int acc = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	s->mr = iw_reg_mr(s->pd, s->buf, len, acc);
	s->ctrl_mr = iw_reg_mr(s->pd, s->ctrl, 2 * s->nqp * sizeof(uint32_t), acc);
	if (!s->mr || !s->ctrl_mr || alloc_cqs(s)) {
		perf_err(s, "registering buffers: %s", strerror(errno));
		return PX_FAIL;
	}
	return PX_OK;
}

/* Data QP i on id; with --threads its CQs are those of the id's loop. */
static int data_qp(struct perf_sess *s, struct iw_cm_id *id, uint32_t i)
{
	unsigned loop = 0;
	if (s->ngrp > 1 && iw_cm_get_loop(id, &loop))
		loop = 0;
	s->qp_grp[i] = loop % s->ngrp;
	const struct perf_cqs *g = &s->grp[s->qp_grp[i]];
	uint32_t sq = 2 * s->o.tx_depth + 8, rq = perf_rx_depth(&s->o) + 8;
	/* Not busy-polling, the server's polling context leaves the data
	 * connections to its loop, as a blocking application's context
	 * would: its thread's polls between sleeps would otherwise read the
	 * stream in small pieces as it arrives (IW_QP_CREATE_LOOP_RX). */
	struct iw_qp_init_attr qa = {
		.send_cq = g->scq, .recv_cq = g->rcq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = sq > 16384 ? 16384 : sq, .max_recv_wr = rq,
			.max_send_sge = 1, .max_recv_sge = 1},
		.create_flags = perf_polling(&s->o) ? 0 : IW_QP_CREATE_LOOP_RX,
	};
	int rc = iw_cm_create_qp(id, s->pd, &qa);
	if (rc)
		perf_err(s, "data QP: %s", strerror(rc));
	return rc;
}

static void data_mpa(const struct perf_sess *s, struct iw_mpa_opts *mo)
{
	iw_mpa_opts_default(mo);
	mo->crc = s->o.crc;
	mo->markers = s->o.markers;
	mo->timeout_ms = (uint32_t)ms_of(s);
}

static uint8_t reads_of(const struct perf_sess *s)
{
	bool reads = s->o.test == PT_READ || s->o.test == PT_READ_LAT;
	return reads ? (uint8_t)s->o.out_reads : 0;
}

/* One data connection from the client: 0, 1 to try again (refused: the
 * server is not listening yet), -1 to give up; *why says what happened. */
static int connect_one(struct perf_sess *s, uint32_t i, const struct sockaddr *dst, char *why_buf,
		       size_t why_len)
{
	struct iw_mpa_opts mo;
	data_mpa(s, &mo);
	struct iw_conn_param p = {.responder_resources = reads_of(s),
				  .initiator_depth = reads_of(s),
				  .connect_timeout_ms = (uint32_t)ms_of(s), .mpa = &mo};
	struct iw_cm_id *id;
	if (iw_cm_create_id(s->cm, &id, NULL))
		return -1;
	int rc = data_qp(s, id, i) ? EINVAL : iw_cm_connect(id, dst, &p);
	if (rc) {
		snprintf(why_buf, why_len, "%s", strerror(rc));
		iw_cm_destroy_id(id);
		return -1;
	}
	struct iw_cm_event *ev = cm_wait_id(s, id, ms_of(s) + 1000);
	if (ev && ev->event == IW_CM_EVENT_ESTABLISHED) {
		iw_cm_ack_event(ev);
		s->ids[i] = id;
		return 0;
	}
	snprintf(why_buf, why_len, "%s", ev ? why(ev) : "timed out");
	/* An MPA failure (markers, CRC, RTR) will not go away by trying again. */
	rc = ev && ev->event != IW_CM_EVENT_CONNECT_ERROR ? 1 : -1;
	if (ev)
		iw_cm_ack_event(ev);
	iw_cm_destroy_id(id);
	return rc;
}

/* A refused data connection is tried again 100 ms later, as perftest does,
 * but for up to --timeout rather than perftest's 10 tries: a perftest server
 * listens again for the data connections only after the first handshake,
 * and on a slow host (siw in an emulated guest) that takes longer than the
 * second perftest allows itself. */
int perf_data_connect(struct perf_sess *s, const struct sockaddr *dst)
{
	for (uint32_t i = 0; i < s->nqp; i++) {
		char why_buf[128] = "";
		int rc = 1;
		double end = perf_now() + s->o.timeout;
		for (int t = 0; rc == 1 && (t < 10 || perf_now() < end); t++) {
			if (t)
				usleep(100000);
			rc = connect_one(s, i, dst, why_buf, sizeof(why_buf));
		}
		if (rc) {
			perf_err(s, "data connection %u: %s", i, why_buf);
			return PX_CONNECT;
		}
	}
	return PX_OK;
}

static int accept_one(struct perf_sess *s, struct iw_cm_event *ev, uint32_t i)
{
	struct iw_cm_id *id = ev->id;
	uint8_t want = reads_of(s);
	/* perftest's clamp: answer no more than the initiator offers. */
	uint8_t ird = want < ev->param.initiator_depth ? want : ev->param.initiator_depth;
	uint8_t ord = want < ev->param.responder_resources ? want : ev->param.responder_resources;
	iw_cm_ack_event(ev);
	struct iw_mpa_opts mo;
	data_mpa(s, &mo);
	struct iw_conn_param p = {.responder_resources = ird, .initiator_depth = ord, .mpa = &mo};
	if (data_qp(s, id, i) || iw_cm_accept(id, &p)) {
		perf_err(s, "accepting data connection %u", i);
		iw_cm_destroy_id(id);
		return PX_CONNECT;
	}
	s->ids[i] = id;
	return PX_OK;
}

int perf_data_accept(struct perf_sess *s)
{
	uint32_t accepted = 0, up = 0;
	while (up < s->nqp) {
		struct iw_cm_event *ev = cm_wait_id(s, NULL, ms_of(s));
		if (!ev) {
			perf_err(s, "data connections: %u of %u up after %.0f s", up, s->nqp,
				 s->o.timeout);
			return PX_CONNECT;
		}
		uint32_t i;
		if (ev->event == IW_CM_EVENT_CONNECT_REQUEST && ev->listen_id == s->listener &&
		    accepted < s->nqp) {
			if (accept_one(s, ev, accepted++))
				return PX_CONNECT;
		} else if (ev->event == IW_CM_EVENT_ESTABLISHED && is_data_id(s, ev->id, &i)) {
			up++;
			iw_cm_ack_event(ev);
		} else if (is_data_id(s, ev->id, &i)) {
			perf_err(s, "data connection %u: %s", i, why(ev));
			iw_cm_ack_event(ev);
			return PX_CONNECT;
		} else if (ev->id == s->comm.id) {
			perf_err(s, "the client went away: %s", why(ev));
			iw_cm_ack_event(ev);
			return PX_FAIL;
		} else {
			cm_stray(s, ev);
		}
	}
	iw_cm_destroy_id(s->listener);
	s->listener = NULL;
	return PX_OK;
}

/* Wait up to ms for DISCONNECTED on every data connection not yet down. */
static void wait_data_down(struct perf_sess *s, int ms)
{
	double end = perf_now() + ms / 1000.0;
	for (;;) {
		uint32_t left = 0;
		for (uint32_t i = 0; i < s->nqp; i++)
			left += s->ids[i] && !s->disconnected[i];
		int rest = (int)((end - perf_now()) * 1000);
		if (!left || rest <= 0)
			return;
		struct iw_cm_event *ev = cm_wait_id(s, NULL, rest);
		if (!ev)
			return;
		cm_stray(s, ev);
	}
}

/* The end of the data connections, as perftest's rdma_cm_disconnect_nodes:
 * the server disconnects them, the client waits for that and only then
 * closes what is left. A client must not close first: in write_lat no
 * message follows the server's last write, and siw fails a WQE whose last
 * segment has left when the peer's FIN lands before its send routine has
 * returned (siw_qp_sq_proc_tx checks tx_suspend after each segment), so
 * the perftest server reported "Failed status 2" for its 300th write of
 * 300. A client whose test failed (test_done false) does not wait. */
void perf_data_close(struct perf_sess *s)
{
	if (!s->ids)
		return;
	if (!s->server && s->test_done)
		wait_data_down(s, ms_of(s));
	for (uint32_t i = 0; i < s->nqp; i++)
		if (s->ids[i] && !s->disconnected[i])
			iw_cm_disconnect(s->ids[i]);
	wait_data_down(s, 4000);
	for (uint32_t i = 0; i < s->nqp; i++) {
		iw_cm_destroy_id(s->ids[i]);
		s->ids[i] = NULL;
	}
}

int perf_post_recvs(struct perf_sess *s, uint32_t qp, uint32_t count, uint64_t size)
{
	struct iw_sge sge = {.addr = (uintptr_t)perf_region_remote(s, qp),
			     .length = (uint32_t)size, .lkey = s->mr->lkey};
	struct iw_recv_wr wr = {.wr_id = qp, .sg_list = &sge, .num_sge = 1};
	for (uint32_t k = 0; k < count; k++) {
		struct iw_recv_wr *bad;
		int rc = iw_post_recv(s->ids[qp]->qp, &wr, &bad);
		if (rc) {
			perf_err(s, "posting receives: %s", strerror(rc));
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ waiting */

int perf_wait_cq(struct perf_sess *s, struct iw_comp_channel *cc, struct iw_cq *cq,
		 struct iw_wc *wc, int n, int max_ms)
{
	int got = iw_poll_cq(cq, n, wc);
	if (got)
		return got;
	/* Arm, poll again (a completion that raced the arming is found now),
	 * then sleep on the channel: on two cores a spinning poller starves
	 * the loop threads that move the data. */
	if (iw_req_notify_cq(cq, 0))
		return -1;
	got = iw_poll_cq(cq, n, wc);
	if (got)
		return got;
	struct pollfd p = {.fd = cc->fd, .events = POLLIN};
	if (poll(&p, 1, max_ms) == 1) {
		struct iw_cq *ecq;
		void *ectx;
		if (iw_get_cq_event(cc, &ecq, &ectx) == 0)
			iw_ack_cq_events(ecq, 1);
	}
	perf_alive(s); /* takes CM events: a lost connection shows in s->dead */
	return iw_poll_cq(cq, n, wc);
}
