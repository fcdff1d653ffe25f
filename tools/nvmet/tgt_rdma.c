/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NVMe RDMA transport binding on libiwarp, as an application embeds
 * it: the application's libevent loop carries libiwarp (iw_context_new
 * with attr.base) and our three events (CM channel, completion channel, a
 * 100 ms tick), so every capsule is handled on one thread from receive to
 * response, with no hand-off.
 *
 * Resources: one SRQ shared by every queue, with `slots` receive buffers
 * (64-octet command + in-capsule data) and as many data buffers (max_io,
 * page aligned, registered for the host's RDMA READ Responses). Slot i's
 * data buffer belongs to the command received in slot i, until the Send of
 * its response completes; then the receive is posted again. A Send that
 * finds no receive is fatal on iWARP (no RNR retry), so a queue is only
 * accepted while the sizes of all queues stay within half the slots: up to
 * one response per slot may still be completing when its host, having
 * seen it, sends the next command.
 *
 * Data: host reads are RDMA WRITEs followed by the response Send (in
 * order on the QP, so the data is placed before the host sees the
 * response); host writes with a keyed SGL are RDMA READs, at most ORD
 * outstanding per queue (the rest wait in order); in-capsule data is used
 * where it landed. The response is a Send with Invalidate of the host's
 * key when its SGL asked for it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#include "tgt_rdma.h"

#define MAX_ORD 16
#define CQ_BATCH 32

/* At queue depth, capsules with in-capsule data arrive back to back: one
 * read into the bounce buffer for a run of them, and a copy of each, cost
 * less than a readv per capsule into its receive buffer (libiwarp's
 * default from 2 KiB). */
static const struct iw_conn_opts conn_opts = {.comp_mask = IW_CONN_OPTS_DIRECT_MIN,
					      .direct_min = 16384};

enum slot_state { S_POSTED, S_BUSY, S_HOLD, S_RDWAIT, S_READ, S_SEND };
enum wr_kind { WR_READ = 1, WR_WRITE, WR_SEND };

struct tr_conn;
struct tr_slot {
	uint32_t idx;
	enum slot_state st;
	struct tr_conn *conn;
	struct tgt_req req;
	struct tr_slot *next; /* ORD wait list */
	/* The response's WRs live here until they are posted (corked). */
	uint8_t cqe[NVMF_CQE_SIZE];
	struct iw_sge dsge, csge;
	struct iw_send_wr write, send;
};

struct tr_conn {
	struct tr *tr;
	struct iw_cm_id *id;
	struct tgt_queue q;
	uint32_t qp_num;
	uint32_t ord, reads_out;
	struct tr_slot *rd_head, *rd_tail;
	uint32_t refs;   /* slots that belong to this connection */
	bool dead;
	struct tr_conn *next;
	/* Responses corked during one batch of completions (cork_flush). */
	struct iw_send_wr *cork_head, **cork_tail;
	struct tr_conn *cork_next;
};

struct tr {
	struct tgt *t;
	const struct tr_opts *o;
	struct event_base *base;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *cm;
	struct iw_cm_id *listener;
	struct iw_comp_channel *cc;
	struct iw_cq *scq, *rcq;
	struct iw_srq *srq;
	uint8_t *rbufs, *dbufs;
	struct iw_mr *rmr, *dmr;
	uint32_t rsize, nslots, budget;
	struct tr_slot *slots;
	struct tr_conn *conns;
	bool wildcard;
	struct tr_conn *corked; /* connections with responses to post */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void say(const struct tr *tr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct tr *tr, const char *fmt, ...)
{
	if (!tr->t->cfg.verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("iwarp-nvmet: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static uint8_t *rbuf(struct tr *tr, uint32_t i) { return tr->rbufs + (size_t)i * tr->rsize; }
static uint8_t *dbuf(struct tr *tr, uint32_t i) { return tr->dbufs + (size_t)i * tr->t->cfg.max_io; }

/* ------------------------------------------------------------ slots */

static int post_slot(struct tr *tr, struct tr_slot *s)
{
	struct iw_sge sge = {.addr = (uintptr_t)rbuf(tr, s->idx), .length = tr->rsize,
			     .lkey = tr->rmr->lkey};
	struct iw_recv_wr wr = {.wr_id = s->idx, .sg_list = &sge, .num_sge = 1}, *bad;
	s->st = S_POSTED;
	s->conn = NULL;
	int rc = iw_post_srq_recv(tr->srq, &wr, &bad);
	if (rc)
		fprintf(stderr, "iwarp-nvmet: iw_post_srq_recv: %s\n", strerror(rc));
	return rc;
}

static void conn_free(struct tr_conn *c)
{
	struct tr *tr = c->tr;
	for (struct tr_conn **pp = &tr->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	free(c);
}

static void release(struct tr *tr, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	post_slot(tr, s);
	if (c && --c->refs == 0 && c->dead)
		conn_free(c);
}

/* ------------------------------------------------------------ commands */

/* Post a chain of responses; those from a refused WR on are released
 * (a refused WRITE's Send follows it in the chain). */
static void post_responses(struct tr *tr, struct tr_conn *c, struct iw_send_wr *first)
{
	struct iw_send_wr *bad = NULL;
	int rc = iw_post_send(c->id->qp, first, &bad);
	if (!rc)
		return;
	say(tr, "queue %u: posting the response: %s", c->q.qid, strerror(rc));
	for (struct iw_send_wr *w = bad; w; w = w->next)
		if (w->wr_id >> 32 == WR_SEND)
			release(tr, &tr->slots[(uint32_t)w->wr_id]);
}

/* Responses made while a batch of completions is handled go out together
 * at its end (cork_flush): one iw_post_send, so one write to the socket
 * for the batch, not one per command. */
static void cork(struct tr *tr, struct tr_conn *c, struct iw_send_wr *first,
		 struct iw_send_wr *last)
{
	if (!c->cork_head) {
		c->cork_tail = &c->cork_head;
		c->cork_next = tr->corked;
		tr->corked = c;
	}
	last->next = NULL;
	*c->cork_tail = first;
	c->cork_tail = &last->next;
}

static void cork_flush(struct tr *tr)
{
	while (tr->corked) {
		struct tr_conn *c = tr->corked;
		struct iw_send_wr *first = c->cork_head;
		tr->corked = c->cork_next;
		c->cork_head = NULL;
		post_responses(tr, c, first);
	}
}

static void respond(struct tr *tr, struct tr_slot *s)
{
	struct tgt_req *req = &s->req;
	struct tr_conn *c = s->conn;
	nvmf_cqe_put(s->cqe, &req->cqe);
	if (req->cqe.status)
		say(tr, "queue %u cid %u opcode 0x%02x: %s (0x%x)", c->q.qid, req->cmd.cid,
		    req->cmd.opc, nvmf_status_str(req->cqe.status), req->cqe.status);
	s->dsge = (struct iw_sge){.addr = (uintptr_t)req->data, .length = req->c2h_len,
				  .lkey = tr->dmr->lkey};
	s->csge = (struct iw_sge){.addr = (uintptr_t)s->cqe, .length = sizeof(s->cqe)};
	s->send = (struct iw_send_wr){.wr_id = (uint64_t)WR_SEND << 32 | s->idx,
				      .sg_list = &s->csge, .num_sge = 1, .opcode = IW_WR_SEND,
				      .send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE};
	s->write = (struct iw_send_wr){.wr_id = (uint64_t)WR_WRITE << 32 | s->idx,
				       .next = &s->send, .sg_list = &s->dsge, .num_sge = 1,
				       .opcode = IW_WR_RDMA_WRITE};
	if (req->sgl.kind == NVMF_SGL_KIND_KEYED && req->sgl.invalidate) {
		s->send.opcode = IW_WR_SEND_WITH_INV;
		s->send.invalidate_rkey = req->sgl.key;
	}
	s->write.wr.rdma.remote_addr = req->sgl.addr;
	s->write.wr.rdma.rkey = req->sgl.key;
	s->st = S_SEND;
	cork(tr, c, req->c2h_len ? &s->write : &s->send, &s->send);
}

static void exec(struct tr *tr, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	if (c->q.qid == 0 && tr->wildcard) {
		/* The discovery log names the address this host reached. */
		const struct sockaddr_storage *la = &c->id->local_addr;
		const void *a = la->ss_family == AF_INET6
					? (const void *)&((const struct sockaddr_in6 *)la)->sin6_addr
					: (const void *)&((const struct sockaddr_in *)la)->sin_addr;
		inet_ntop(la->ss_family, a, tr->t->cfg.traddr, sizeof(tr->t->cfg.traddr));
	}
	s->st = S_BUSY;
	if (tgt_cmd_exec(&s->req) == TGT_HOLD) {
		s->st = S_HOLD;
		return;
	}
	respond(tr, s);
}

static void start_read(struct tr *tr, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	struct tgt_req *req = &s->req;
	struct iw_sge sge = {.addr = (uintptr_t)req->data, .length = req->xfer_len,
			     .lkey = tr->dmr->lkey};
	struct iw_send_wr wr = {.wr_id = (uint64_t)WR_READ << 32 | s->idx, .sg_list = &sge,
				.num_sge = 1, .opcode = IW_WR_RDMA_READ,
				.send_flags = IW_SEND_SIGNALED}, *bad;
	wr.wr.rdma.remote_addr = req->sgl.addr;
	wr.wr.rdma.rkey = req->sgl.key;
	s->st = S_READ;
	c->reads_out++;
	int rc = iw_post_send(c->id->qp, &wr, &bad);
	if (rc) {
		c->reads_out--;
		say(tr, "queue %u: posting an RDMA READ: %s", c->q.qid, strerror(rc));
		release(tr, s);
	}
}

/* Host data is fetched with at most ORD READs outstanding, in order. */
static void want_read(struct tr *tr, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	if (c->reads_out < c->ord && !c->rd_head) {
		start_read(tr, s);
		return;
	}
	s->st = S_RDWAIT;
	s->next = NULL;
	if (c->rd_tail)
		c->rd_tail->next = s;
	else
		c->rd_head = s;
	c->rd_tail = s;
}

static void pump_reads(struct tr *tr, struct tr_conn *c)
{
	while (c->rd_head && c->reads_out < c->ord) {
		struct tr_slot *s = c->rd_head;
		c->rd_head = s->next;
		if (!c->rd_head)
			c->rd_tail = NULL;
		start_read(tr, s);
	}
}

static struct tr_conn *conn_by_qp(struct tr *tr, uint32_t qp_num)
{
	for (struct tr_conn *c = tr->conns; c; c = c->next)
		if (c->qp_num == qp_num)
			return c;
	return NULL;
}

static void on_recv(struct tr *tr, const struct iw_wc *wc)
{
	struct tr_slot *s = &tr->slots[wc->wr_id];
	struct tr_conn *c = wc->status == IW_WC_SUCCESS ? conn_by_qp(tr, wc->qp_num) : NULL;
	if (!c || c->dead) {
		post_slot(tr, s);
		return;
	}
	s->conn = c;
	c->refs++;
	s->req.data = dbuf(tr, s->idx);
	tr->t->now_ms = now_ms(); /* Keep Alive and Connect stamp the time they arrived */
	int step = tgt_cmd_begin(&c->q, &s->req, rbuf(tr, s->idx), wc->byte_len);
	if (step < 0) {
		/* No command ID to answer: a fatal transport error. */
		fprintf(stderr, "iwarp-nvmet: queue %u: capsule of %u octets (< 64): disconnecting\n",
			c->q.qid, wc->byte_len);
		if (c->q.ctrl)
			c->q.ctrl->csts |= NVME_CSTS_CFS;
		release(tr, s);
		iw_cm_disconnect(c->id);
		return;
	}
	if (step == TGT_FETCH)
		want_read(tr, s);
	else if (step == TGT_EXEC)
		exec(tr, s);
	else
		respond(tr, s);
}

static void on_send(struct tr *tr, const struct iw_wc *wc)
{
	struct tr_slot *s = &tr->slots[(uint32_t)wc->wr_id];
	enum wr_kind kind = (enum wr_kind)(wc->wr_id >> 32);
	struct tr_conn *c = s->conn;
	if (kind == WR_WRITE)
		return; /* unsignaled: only errors come here, and the Send behind follows */
	if (kind == WR_SEND) {
		release(tr, s);
		return;
	}
	c->reads_out--;
	if (wc->status != IW_WC_SUCCESS || c->dead) {
		if (wc->status != IW_WC_WR_FLUSH_ERR)
			say(tr, "queue %u: RDMA READ failed: %s", c->q.qid, iw_wc_status_str(wc->status));
		release(tr, s);
	} else {
		exec(tr, s);
	}
	if (!c->dead)
		pump_reads(tr, c);
}

static void poll_cq(struct tr *tr, struct iw_cq *cq, bool recv)
{
	struct iw_wc wc[CQ_BATCH];
	int n;
	while ((n = iw_poll_cq(cq, CQ_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			(recv ? on_recv : on_send)(tr, &wc[i]);
		cork_flush(tr);
	}
}

static void on_cq_event(evutil_socket_t fd, short what, void *arg)
{
	struct tr *tr = arg;
	struct iw_cq *cq;
	void *ctx;
	(void)fd;
	(void)what;
	while (iw_get_cq_event(tr->cc, &cq, &ctx) == 0) {
		iw_ack_cq_events(cq, 1);
		iw_req_notify_cq(cq, 0);
	}
	poll_cq(tr, tr->rcq, true);
	poll_cq(tr, tr->scq, false);
}

/* ------------------------------------------------------------ connections */

/* Slots a dead queue still holds without a WR (held AERs, reads waiting
 * for ORD) come back now; those with WRs come back with their flushes. */
static void conn_dead(struct tr *tr, struct tr_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	c->refs++; /* held until the end: releases below must not free c */
	tr->budget -= c->q.size;
	tgt_queue_gone(&c->q);
	for (uint32_t i = 0; i < tr->nslots; i++) {
		struct tr_slot *s = &tr->slots[i];
		if (s->conn == c && (s->st == S_HOLD || s->st == S_RDWAIT))
			release(tr, s);
	}
	c->rd_head = c->rd_tail = NULL;
	iw_cm_destroy_id(c->id);
	c->id = NULL;
	if (--c->refs == 0)
		conn_free(c);
	else
		poll_cq(tr, tr->scq, false);
}

static void ctrl_dead(struct tgt *t, struct tgt_ctrl *ctrl, const char *why)
{
	struct tr *tr = t->tp;
	/* A host that leaves is news only to the curious; a timeout always is. */
	if (t->cfg.verbose || ctrl->dead_loud)
		fprintf(stderr, "iwarp-nvmet: controller %u (%s): %s\n", ctrl->cntlid,
			ctrl->hostnqn, why);
	for (struct tr_conn *c = tr->conns; c; c = c->next)
		if (!c->dead && c->q.ctrl == ctrl)
			iw_cm_disconnect(c->id);
}

/* The binding's checks of the host's private data; 0 or a reject code. */
static int check_request(struct tr *tr, const struct nvmf_cm_req *r, uint8_t peer_ird)
{
	const struct tgt_cfg *cfg = &tr->t->cfg;
	uint32_t size = (uint32_t)r->hsqsize + 1;
	if (r->qid > cfg->max_qid)
		return NVMF_CM_INVALID_QID;
	if (size > (r->qid ? cfg->mqes : NVMF_AQ_DEPTH) || size < 2)
		return NVMF_CM_INVALID_HSQSIZE;
	if (r->hrqsize == 0)
		return NVMF_CM_INVALID_HRQSIZE;
	if (peer_ird == 0)
		return NVMF_CM_INVALID_IRD;
	if (tr->budget + size > tr->nslots / 2)
		return NVMF_CM_NO_RSC;
	return 0;
}

static int accept_conn(struct tr *tr, struct iw_cm_id *id, const struct nvmf_cm_req *r,
		       uint8_t peer_ird)
{
	uint16_t size = (uint16_t)(r->hsqsize + 1);
	struct tr_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NVMF_CM_NO_RSC;
	struct iw_qp_init_attr qa = {
		.send_cq = tr->scq, .recv_cq = tr->rcq, .srq = tr->srq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 3u * size + 8, .max_recv_wr = 1, .max_send_sge = 1,
			.max_recv_sge = 1, .max_inline_data = 64},
	};
	if (iw_cm_set_conn_opts(id, &conn_opts) || iw_cm_create_qp(id, tr->pd, &qa)) {
		free(c);
		return NVMF_CM_NO_RSC;
	}
	c->tr = tr;
	c->id = id;
	c->qp_num = iw_qp_num(id->qp);
	c->ord = peer_ird < MAX_ORD ? peer_ird : MAX_ORD;
	tgt_queue_init(&c->q, tr->t, r->qid, size);
	c->q.tp = c;
	uint8_t pd[NVMF_CM_PD_SIZE];
	struct nvmf_cm_rep rep = {.recfmt = 0, .crqsize = size};
	nvmf_cm_rep_put(pd, &rep);
	struct iw_conn_param p = {.private_data = pd, .private_data_len = sizeof(pd),
				  .responder_resources = 0, .initiator_depth = (uint8_t)c->ord};
	int rc = iw_cm_accept(id, &p);
	if (rc) {
		free(c);
		return NVMF_CM_NO_RSC;
	}
	tr->budget += size;
	c->next = tr->conns;
	tr->conns = c;
	say(tr, "queue %u: accepted (%u entries, ORD %u)", r->qid, size, c->ord);
	return 0;
}

static void on_request(struct tr *tr, struct iw_cm_id *id, const uint8_t *pd, size_t len,
		       uint8_t peer_ird)
{
	struct nvmf_cm_req r;
	int st = nvmf_cm_req_parse(&r, pd, len);
	if (!st)
		st = check_request(tr, &r, peer_ird);
	if (!st)
		st = accept_conn(tr, id, &r, peer_ird);
	if (!st)
		return;
	fprintf(stderr, "iwarp-nvmet: connection rejected: %s\n", nvmf_cm_status_str(st));
	uint8_t rej[NVMF_CM_REJ_SIZE];
	nvmf_cm_rej_put(rej, (uint16_t)st);
	iw_cm_reject(id, rej, sizeof(rej));
	iw_cm_destroy_id(id);
}

static struct tr_conn *conn_by_id(struct tr *tr, const struct iw_cm_id *id)
{
	for (struct tr_conn *c = tr->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void on_cm_event(evutil_socket_t fd, short what, void *arg)
{
	struct tr *tr = arg;
	struct iw_cm_event *ev;
	(void)fd;
	(void)what;
	while (iw_cm_get_event(tr->cm, &ev) == 0) {
		enum iw_cm_event_type type = ev->event;
		struct iw_cm_id *id = ev->id;
		uint8_t pd[512];
		size_t len = ev->param.private_data_len < sizeof(pd) ? ev->param.private_data_len : 0;
		if (len)
			memcpy(pd, ev->param.private_data, len);
		uint8_t ird = ev->param.responder_resources, ord = ev->param.initiator_depth;
		iw_cm_ack_event(ev);
		struct tr_conn *c = conn_by_id(tr, id);
		if (type == IW_CM_EVENT_CONNECT_REQUEST)
			on_request(tr, id, pd, len, ird);
		else if (type == IW_CM_EVENT_ESTABLISHED && c)
			c->ord = ord < MAX_ORD ? ord : MAX_ORD;
		else if (c && (type == IW_CM_EVENT_DISCONNECTED || type == IW_CM_EVENT_CONNECT_ERROR))
			conn_dead(tr, c);
	}
}

/* QP errors (a peer's TERMINATE, a protocol violation we answered): said
 * when verbose, and read so the queue of them does not grow; the
 * connection's DISCONNECTED follows and tears the queue down. */
static void on_async(evutil_socket_t fd, short what, void *arg)
{
	struct tr *tr = arg;
	struct iw_async_event ev;
	(void)fd;
	(void)what;
	while (iw_get_async_event(tr->ctx, &ev) == 0) {
		say(tr, "%s (TERMINATE %s%s)", iw_event_type_str(ev.event_type),
		    iw_term_str(ev.term), ev.term_from_peer ? ", from the host" : "");
		iw_ack_async_event(&ev);
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tr *tr = arg;
	(void)fd;
	(void)what;
	tgt_tick(tr->t, now_ms());
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

/* ------------------------------------------------------------ setup */

static void *page_alloc(size_t len)
{
	void *p = NULL;
	return posix_memalign(&p, 4096, len) ? NULL : p;
}

static int setup_verbs(struct tr *tr)
{
	struct tgt_cfg *cfg = &tr->t->cfg;
	struct iw_context_attr ca = {.base = tr->base};
	if (tr->o->pcap) {
		ca.comp_mask = IW_CONTEXT_ATTR_PCAP;
		ca.pcap_path = tr->o->pcap;
	}
	tr->rsize = NVMF_CMD_SIZE + cfg->icd_max;
	tr->ctx = iw_context_new(&ca);
	tr->pd = tr->ctx ? iw_alloc_pd(tr->ctx) : NULL;
	tr->cm = tr->ctx ? iw_cm_create_channel(tr->ctx) : NULL;
	tr->cc = tr->ctx ? iw_create_comp_channel(tr->ctx) : NULL;
	if (!tr->pd || !tr->cm || !tr->cc)
		return -1;
	tr->rcq = iw_create_cq(tr->ctx, (int)tr->nslots * 2, NULL, tr->cc, 0);
	tr->scq = iw_create_cq(tr->ctx, 1 << 16, NULL, tr->cc, 0);
	struct iw_srq_init_attr sa = {.attr = {.max_wr = tr->nslots, .max_sge = 1}};
	tr->srq = iw_create_srq(tr->pd, &sa);
	tr->rbufs = page_alloc((size_t)tr->nslots * tr->rsize);
	tr->dbufs = page_alloc((size_t)tr->nslots * cfg->max_io);
	tr->slots = calloc(tr->nslots, sizeof(*tr->slots));
	if (!tr->rcq || !tr->scq || !tr->srq || !tr->rbufs || !tr->dbufs || !tr->slots)
		return -1;
	/* Receive buffers are ours alone; data buffers are the sink of the
	 * host's READ Responses, which iWARP requires to be remotely
	 * writable. Two regions, so the first never is. */
	tr->rmr = iw_reg_mr(tr->pd, tr->rbufs, (size_t)tr->nslots * tr->rsize, IW_ACCESS_LOCAL_WRITE);
	tr->dmr = iw_reg_mr(tr->pd, tr->dbufs, (size_t)tr->nslots * cfg->max_io,
			    IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	if (!tr->rmr || !tr->dmr)
		return -1;
	for (uint32_t i = 0; i < tr->nslots; i++) {
		tr->slots[i].idx = i;
		if (post_slot(tr, &tr->slots[i]))
			return -1;
	}
	iw_req_notify_cq(tr->rcq, 0);
	iw_req_notify_cq(tr->scq, 0);
	return 0;
}

static int setup_listen(struct tr *tr)
{
	struct sockaddr_storage ss = {0};
	const char *addr = tr->o->addr ? tr->o->addr : "0.0.0.0";
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(tr->o->port);
		tr->wildcard = sin->sin_addr.s_addr == htonl(INADDR_ANY);
	} else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(tr->o->port);
		tr->wildcard = IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
	} else {
		fprintf(stderr, "iwarp-nvmet: %s: not an IPv4 or IPv6 address\n", addr);
		return -1;
	}
	int rc = iw_cm_create_id(tr->cm, &tr->listener, tr);
	if (!rc)
		rc = iw_cm_bind_addr(tr->listener, (struct sockaddr *)&ss);
	if (!rc)
		rc = iw_cm_listen(tr->listener, 0);
	if (rc) {
		fprintf(stderr, "iwarp-nvmet: listening on %s:%u: %s\n", addr, tr->o->port, strerror(rc));
		return -1;
	}
	const struct sockaddr_storage *la = &tr->listener->local_addr;
	uint16_t port = ntohs(la->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)la)->sin6_port
							: ((const struct sockaddr_in *)la)->sin_port);
	snprintf(tr->t->cfg.trsvcid, sizeof(tr->t->cfg.trsvcid), "%u", port);
	snprintf(tr->t->cfg.traddr, sizeof(tr->t->cfg.traddr), "%s", addr);
	printf("iwarp-nvmet: %s listening on %s:%u (%u namespace%s)\n", tr->t->cfg.subnqn, addr,
	       port, tr->t->cfg.nns, tr->t->cfg.nns == 1 ? "" : "s");
	fflush(stdout);
	return 0;
}

static void teardown(struct tr *tr)
{
	while (tr->conns) {
		struct tr_conn *c = tr->conns;
		if (!c->dead)
			conn_dead(tr, c);
		else /* still waiting for flushes that will not come now */
			conn_free(c);
	}
	iw_cm_destroy_id(tr->listener);
	iw_destroy_srq(tr->srq);
	iw_dereg_mr(tr->rmr);
	iw_dereg_mr(tr->dmr);
	iw_destroy_cq(tr->rcq);
	iw_destroy_cq(tr->scq);
	iw_destroy_comp_channel(tr->cc);
	iw_cm_destroy_channel(tr->cm);
	iw_dealloc_pd(tr->pd);
	iw_context_free(tr->ctx);
	free(tr->rbufs);
	free(tr->dbufs);
	free(tr->slots);
}

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int tr_run(struct tgt *t, const struct tr_opts *o)
{
	struct tr tr = {.t = t, .o = o, .nslots = o->slots};
	t->tp = &tr;
	t->ctrl_dead = ctrl_dead;
	t->now_ms = now_ms();
	tr.base = event_base_new();
	int rc = 1;
	if (!tr.base || setup_verbs(&tr)) {
		fprintf(stderr, "iwarp-nvmet: setting up libiwarp: %s\n", strerror(errno));
		goto out;
	}
	if (setup_listen(&tr))
		goto out;
	nonblock(tr.cm->fd);
	nonblock(tr.cc->fd);
	struct timeval tick = {0, 100000};
	struct event *evs[] = {
		event_new(tr.base, tr.cm->fd, EV_READ | EV_PERSIST, on_cm_event, &tr),
		event_new(tr.base, tr.cc->fd, EV_READ | EV_PERSIST, on_cq_event, &tr),
		event_new(tr.base, -1, EV_PERSIST, on_tick, &tr),
		evsignal_new(tr.base, SIGINT, on_signal, tr.base),
		evsignal_new(tr.base, SIGTERM, on_signal, tr.base),
		event_new(tr.base, iw_context_async_fd(tr.ctx), EV_READ | EV_PERSIST, on_async, &tr),
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		event_add(evs[i], i == 2 ? &tick : NULL);
	signal(SIGPIPE, SIG_IGN);
	event_base_dispatch(tr.base);
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		event_free(evs[i]);
	rc = 0;
out:
	teardown(&tr);
	if (tr.base)
		event_base_free(tr.base);
	return rc;
}
