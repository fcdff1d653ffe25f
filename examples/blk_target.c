/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Example block target (see blk_proto.h): libiwarp embedded in the
 * application's own libevent loop, any number of connections sharing one
 * SRQ and one CQ, and per-I/O fast registration of the disk block an RDMA
 * READ lands in, so that no initiator can ever write to the disk on its own.
 * (Memory windows do the same with one registration of the disk, made with
 * IW_ACCESS_MW_BIND: iw_alloc_mw, then per I/O an IW_WR_BIND_MW on the
 * connection's QP over the block, usable only by that QP's peer.)
 *
 *   blk_target [-a addr] [-p port] [-n connections] [-b blocks] [-i]
 *
 * It serves until n connections have come and gone, then checks that every
 * block an initiator wrote holds blk_pattern, prints what it moved and
 * exits 0 (1 on any failure). -p 0 (the default) takes a free port; the
 * "listening on" line says which. -i answers the commands for odd blocks
 * with a plain Send, which leaves the initiator's grant in place: the
 * initiator must notice (no IW_WC_WITH_INV) and revoke it with LOCAL_INV.
 *
 * What embedding takes (README: "Embedding libiwarp in your event loop"):
 *  - iw_context_new with attr.base = our event_base, called on the thread
 *    that dispatches it.
 *  - Three fds to watch, level-triggered (EV_READ | EV_PERSIST): the CM
 *    channel's, the completion channel's and iw_context_async_fd. The
 *    first two are blocking by default and must be made nonblocking: a
 *    get_event that blocks would stop the loop and every connection on it.
 *  - CM calls made in these callbacks run inline: this is the loop thread.
 *  - Per-connection state without tables: iw_cm_set_context on
 *    CONNECT_REQUEST (later events carry it in id->user_context) and
 *    qp_context (iw_qp_get_context for asynchronous events); the CQ grows
 *    with each connection (iw_resize_cq). SRQ receives name their QP only
 *    by wc.qp_num, looked up here in the connection list.
 *  - One iw_get_cq_event per wake of the completion channel is enough:
 *    firings of a CQ before its event is read make one event. Ack it,
 *    re-arm, then poll the CQ empty (a completion that comes after the
 *    re-arm wakes us again).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#include "blk_proto.h"

#define RECV_BIT (1ull << 63) /* wr_id of an SRQ receive: RECV_BIT | buffer */
#define DEADLINE_S 60         /* a hang is a failure, not a pass */

struct conn;

/* One command in progress. wr_id of its signaled WRs: the struct's address
 * (its unsignaled WRs carry 0: they complete only when flushed). */
struct io {
	struct conn *c;
	/* Fast-registration MR for the RDMA READ's sink. Its STags only ever
	 * go to this connection's peer, so iw_inc_rkey's next key will do; a
	 * pool shared by all connections would draw random keys. */
	struct iw_mr *mr;
	uint32_t stag; /* mr's STag from the last REG_MR */
	struct blk_cmd cmd;
	bool busy;
};

struct conn {
	struct target *t;
	struct iw_cm_id *id;
	uint32_t qpn;
	struct io io[BLK_QD];
	unsigned inflight; /* signaled WRs whose completion is not polled yet */
	bool gone;         /* id destroyed: free when inflight reaches 0 */
	struct conn *next;
};

struct target {
	struct event_base *base;
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_cm_id *listener;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *cq;
	struct iw_srq *srq;
	uint8_t *disk;
	uint32_t blocks;
	bool *written;
	struct iw_mr *disk_mr; /* local reads only: sources of RDMA WRITEs */
	struct blk_cmd *cmds;  /* the SRQ's receive buffers */
	uint32_t ncmds;
	int cqe; /* the CQ's size: grown with each connection accepted */
	struct iw_mr *cmds_mr;
	struct event *ev[4];
	struct conn *conns;
	int want, accepted, closed;
	bool plain_odd; /* -i */
	unsigned long ios, reads, writes, async;
	bool failed;
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

static void fail(struct target *t, const char *what)
{
	fprintf(stderr, "target: %s\n", what);
	t->failed = true;
	event_base_loopbreak(t->base);
}

/* ------------------------------------------------------------ posting */

static int post(struct conn *c, struct iw_send_wr *wr)
{
	struct iw_send_wr *bad;
	int rc = iw_post_send(c->id->qp, wr, &bad);
	/* Count what was posted: the WRs before *bad when it failed. */
	for (; wr && !(rc && wr == bad); wr = wr->next)
		c->inflight += (wr->send_flags & IW_SEND_SIGNALED) != 0;
	if (rc)
		fprintf(stderr, "target: iw_post_send: %s\n", strerror(rc));
	return rc ? -1 : 0;
}

static int repost_cmd(struct target *t, uint64_t i)
{
	struct iw_sge sge = {.addr = (uintptr_t)&t->cmds[i], .length = sizeof(t->cmds[i]),
			     .lkey = t->cmds_mr->lkey};
	struct iw_recv_wr wr = {.wr_id = RECV_BIT | i, .sg_list = &sge, .num_sge = 1};
	struct iw_recv_wr *bad;
	return iw_post_srq_recv(t->srq, &wr, &bad) ? -1 : 0;
}

/* The response ends the I/O and the initiator's grant: a Send with
 * Invalidate of its STag. Inline: nothing to register for 8 octets.
 * before (may be NULL) goes first in the same post. */
static int respond(struct io *io, struct iw_send_wr *before)
{
	struct blk_resp r = {.tag = htonl(io->cmd.tag), .status = 0};
	struct iw_sge sge = {.addr = (uintptr_t)&r, .length = sizeof(r)};
	struct iw_send_wr wr = {.wr_id = (uintptr_t)io, .sg_list = &sge, .num_sge = 1,
				.opcode = IW_WR_SEND_WITH_INV,
				.send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE};
	wr.invalidate_rkey = io->cmd.stag;
	if (io->c->t->plain_odd && (io->cmd.lba & 1))
		wr.opcode = IW_WR_SEND;
	if (!before)
		return post(io->c, &wr);
	before->next = &wr;
	return post(io->c, before);
}

/* A read command: RDMA WRITE the block into the initiator's buffer, then
 * the response. No fence needed: a Send never overtakes a WRITE. */
static int start_read(struct io *io)
{
	struct target *t = io->c->t;
	struct iw_sge sge = {.addr = (uintptr_t)(t->disk + (size_t)io->cmd.lba * BLK_SIZE),
			     .length = BLK_SIZE, .lkey = t->disk_mr->lkey};
	struct iw_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_WRITE};
	wr.wr.rdma.remote_addr = io->cmd.to;
	wr.wr.rdma.rkey = io->cmd.stag;
	t->reads++;
	return respond(io, &wr);
}

/* A write command, step 1: register the disk block as the READ's sink, for
 * this I/O only. iova 0: the READ's SGE addresses the block from 0. */
static int start_write(struct io *io)
{
	struct target *t = io->c->t;
	struct iw_send_wr wr = {.wr_id = (uintptr_t)io, .opcode = IW_WR_REG_MR,
				.send_flags = IW_SEND_SIGNALED};
	io->stag = iw_inc_rkey(io->stag);
	wr.reg.mr = io->mr;
	wr.reg.key = io->stag;
	wr.reg.access = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE;
	wr.reg.iova = 0;
	wr.reg.length = BLK_SIZE;
	wr.reg.addr = t->disk + (size_t)io->cmd.lba * BLK_SIZE;
	t->writes++;
	return post(io->c, &wr);
}

/* Step 2, once the REG_MR completed (the READ's SGE is checked when it is
 * posted, so not before): pull the initiator's block. */
static int pull_block(struct io *io)
{
	struct iw_sge sge = {.addr = 0, .length = BLK_SIZE, .lkey = io->stag};
	struct iw_send_wr wr = {.wr_id = (uintptr_t)io, .sg_list = &sge, .num_sge = 1,
				.opcode = IW_WR_RDMA_READ, .send_flags = IW_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = io->cmd.to;
	wr.wr.rdma.rkey = io->cmd.stag;
	return post(io->c, &wr);
}

/* Step 3, the block is in: revoke our sink's STag, then respond. The
 * LOCAL_INV runs before the response starts; the MR is ready for the next
 * REG_MR when the response completes. */
static int finish_write(struct io *io)
{
	struct iw_send_wr inv = {.opcode = IW_WR_LOCAL_INV};
	inv.invalidate_rkey = io->stag;
	io->c->t->written[io->cmd.lba] = true;
	return respond(io, &inv);
}

/* --------------------------------------------------------- completions */

static struct conn *conn_by_qpn(struct target *t, uint32_t qpn)
{
	for (struct conn *c = t->conns; c; c = c->next)
		if (!c->gone && c->qpn == qpn)
			return c;
	return NULL;
}

static int start_io(struct conn *c, const struct blk_cmd *wire)
{
	struct blk_cmd cmd = {.op = ntohl(wire->op), .tag = ntohl(wire->tag),
			      .lba = ntohl(wire->lba), .stag = ntohl(wire->stag),
			      .to = be64toh(wire->to)};
	struct io *io = NULL;
	for (unsigned i = 0; i < BLK_QD && !io; i++)
		if (!c->io[i].busy)
			io = &c->io[i];
	if (!io || cmd.lba >= c->t->blocks || (cmd.op != BLK_READ && cmd.op != BLK_WRITE)) {
		fprintf(stderr, "target: bad command (op %u lba %u) or queue depth exceeded\n",
			cmd.op, cmd.lba);
		return -1;
	}
	io->cmd = cmd;
	io->busy = true;
	return cmd.op == BLK_READ ? start_read(io) : start_write(io);
}

static void free_conn(struct target *t, struct conn *c)
{
	for (struct conn **p = &t->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	for (unsigned i = 0; i < BLK_QD; i++)
		if (iw_dereg_mr(c->io[i].mr))
			fprintf(stderr, "target: iw_dereg_mr refused\n");
	free(c);
	if (t->closed == t->want && !t->conns)
		event_base_loopbreak(t->base);
}

static void on_recv(struct target *t, const struct iw_wc *wc)
{
	uint64_t i = wc->wr_id & ~RECV_BIT;
	struct blk_cmd cmd = t->cmds[i];
	/* A receive flushed by a QP that went away is the SRQ's buffer: it
	 * goes back on the SRQ like any other. */
	if (repost_cmd(t, i))
		return fail(t, "iw_post_srq_recv failed");
	if (wc->status != IW_WC_SUCCESS)
		return;
	struct conn *c = conn_by_qpn(t, wc->qp_num);
	if (c && start_io(c, &cmd))
		iw_cm_disconnect(c->id); /* runs inline: we are on the loop thread */
}

static void on_send(struct target *t, const struct iw_wc *wc)
{
	struct io *io = (struct io *)(uintptr_t)wc->wr_id;
	struct conn *c = io->c;
	int rc = 0;
	c->inflight--;
	if (wc->status != IW_WC_SUCCESS) {
		if (!c->gone)
			fprintf(stderr, "target: %s: %s\n", iw_wc_opcode_str(wc->opcode),
				iw_wc_status_str(wc->status));
		io->busy = false;
	} else if (wc->opcode == IW_WC_REG_MR) {
		rc = pull_block(io);
	} else if (wc->opcode == IW_WC_RDMA_READ) {
		rc = finish_write(io);
	} else {
		io->busy = false; /* the response went out: the I/O is done */
		t->ios++;
	}
	if (rc && !c->gone)
		iw_cm_disconnect(c->id);
	if (c->gone && c->inflight == 0)
		free_conn(t, c);
}

static void drain_cq(struct target *t)
{
	struct iw_wc wc[16];
	int n;
	while ((n = iw_poll_cq(t->cq, 16, wc)) > 0)
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id & RECV_BIT)
				on_recv(t, &wc[k]);
			else if (wc[k].wr_id)
				on_send(t, &wc[k]);
			/* wr_id 0: an unsignaled WR flushed with its QP */
		}
}

static void on_cq(evutil_socket_t fd, short what, void *arg)
{
	struct target *t = arg;
	struct iw_cq *cq;
	void *cq_ctx;
	(void)fd, (void)what;
	/* One event per wake: it stands for every firing since the last. */
	if (iw_get_cq_event(t->cc, &cq, &cq_ctx) == 0)
		iw_ack_cq_events(cq, 1);
	if (iw_req_notify_cq(t->cq, 0))
		return fail(t, "iw_req_notify_cq failed");
	drain_cq(t);
}

/* ------------------------------------------------------------------ CM */

static int accept_conn(struct target *t, struct iw_cm_id *id)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->t = t;
	c->id = id;
	c->next = t->conns;
	t->conns = c;
	/* The id's events lead to c (event->id->user_context), and so do
	 * asynchronous events of its QP (iw_qp_get_context), without a table. */
	iw_cm_set_context(id, c);
	for (unsigned i = 0; i < BLK_QD; i++) {
		c->io[i].c = c;
		c->io[i].mr = iw_alloc_mr(t->pd, 1);
		if (!c->io[i].mr)
			return -1;
		c->io[i].stag = c->io[i].mr->rkey;
	}
	struct iw_qp_init_attr qa = {
		.qp_context = c,
		.send_cq = t->cq, .recv_cq = t->cq, .srq = t->srq, .qp_type = IW_QPT_RC,
		/* Per I/O at most LOCAL_INV + response, or WRITE + response. */
		.cap = {.max_send_wr = 2 * BLK_QD, .max_recv_wr = 1, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	/* Per I/O one signaled WR plus, when flushed, its unsignaled one.
	 * The CQ grows while in use; it is never shrunk here, as flushes of
	 * connections that are gone may still sit in it. */
	if (iw_resize_cq(t->cq, t->cqe + 2 * (int)BLK_QD))
		return -1;
	t->cqe += 2 * (int)BLK_QD;
	if (iw_cm_create_qp(id, t->pd, &qa))
		return -1;
	c->qpn = iw_qp_num(id->qp);
	/* Our ORD: the READs we keep outstanding; IRD: none served. */
	struct iw_conn_param p = {.responder_resources = 1, .initiator_depth = BLK_QD};
	return iw_cm_accept(id, &p) ? -1 : 0;
}

/* The connection is over: destroying the id flushes its WRs to the CQ;
 * the conn lives until their completions are polled. */
static void close_conn(struct target *t, struct iw_cm_id *id)
{
	struct conn *c = id->user_context; /* NULL: never accepted */
	iw_cm_destroy_id(id);
	t->closed++;
	if (!c) {
		if (t->closed == t->want && !t->conns)
			event_base_loopbreak(t->base);
		return;
	}
	c->gone = true;
	if (c->inflight == 0)
		free_conn(t, c);
	else
		drain_cq(t); /* frees c when its last completion is polled */
}

static void on_cm_event(struct target *t, enum iw_cm_event_type type, struct iw_cm_id *id,
			int status)
{
	switch (type) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		if (t->accepted == t->want || accept_conn(t, id)) {
			struct conn *c = id->user_context;
			iw_cm_reject(id, NULL, 0);
			iw_cm_destroy_id(id);
			if (c) {
				c->gone = true;
				free_conn(t, c);
			}
			return;
		}
		t->accepted++;
		return;
	case IW_CM_EVENT_ESTABLISHED:
		printf("target: connection %d established\n", t->accepted);
		return;
	case IW_CM_EVENT_DISCONNECTED:
	case IW_CM_EVENT_CONNECT_ERROR:
		if (status)
			fprintf(stderr, "target: %s: %s\n", iw_cm_event_str(type), strerror(status));
		close_conn(t, id);
		return;
	default:
		return;
	}
}

static void on_cm(evutil_socket_t fd, short what, void *arg)
{
	struct target *t = arg;
	struct iw_cm_event *ev;
	(void)fd, (void)what;
	/* Nonblocking fd: read until EAGAIN. Ack first: an id with an
	 * unacked event cannot be destroyed. */
	while (iw_cm_get_event(t->cm, &ev) == 0) {
		enum iw_cm_event_type type = ev->event;
		struct iw_cm_id *id = ev->id;
		int status = ev->status;
		iw_cm_ack_event(ev);
		on_cm_event(t, type, id, status);
	}
}

static void on_async(evutil_socket_t fd, short what, void *arg)
{
	struct target *t = arg;
	struct iw_async_event ev;
	(void)fd, (void)what;
	while (iw_get_async_event(t->ctx, &ev) == 0) {
		/* A QP on the SRQ that leaves (its initiator disconnected)
		 * takes no more SRQ WRs: expected, not an error. */
		if (ev.event_type == IW_EVENT_QP_LAST_WQE_REACHED) {
			iw_ack_async_event(&ev);
			continue;
		}
		t->async++;
		bool on_qp = ev.event_type >= IW_EVENT_QP_FATAL &&
			     ev.event_type <= IW_EVENT_QP_TERMINATE;
		const struct conn *c = on_qp ? iw_qp_get_context(ev.element.qp) : NULL;
		fprintf(stderr, "target: async event: %s (QP %u, TERMINATE %s)\n",
			iw_event_type_str(ev.event_type), c ? c->qpn : 0,
			iw_term_str(ev.term));
		iw_ack_async_event(&ev);
	}
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	fail(arg, "deadline passed");
}

/* --------------------------------------------------------------- setup */

static int setup_verbs(struct target *t)
{
	t->pd = iw_alloc_pd(t->ctx);
	t->cc = iw_create_comp_channel(t->ctx);
	/* Every completion that can be outstanding: each receive now; each
	 * connection adds its share when it is accepted (accept_conn). */
	t->cqe = (int)t->ncmds + 16;
	t->cq = t->cc ? iw_create_cq(t->ctx, t->cqe, NULL, t->cc, 0) : NULL;
	struct iw_srq_init_attr sa = {.attr = {.max_wr = t->ncmds, .max_sge = 1}};
	t->srq = t->pd ? iw_create_srq(t->pd, &sa) : NULL;
	t->disk = calloc(t->blocks, BLK_SIZE);
	t->written = calloc(t->blocks, sizeof(bool));
	t->cmds = calloc(t->ncmds, sizeof(*t->cmds));
	if (!t->cq || !t->srq || !t->disk || !t->written || !t->cmds)
		return -1;
	/* The disk is registered once, for local reads only: nothing in it is
	 * reachable by an initiator except through a per-I/O registration. */
	t->disk_mr = iw_reg_mr(t->pd, t->disk, (size_t)t->blocks * BLK_SIZE, 0);
	t->cmds_mr = iw_reg_mr(t->pd, t->cmds, t->ncmds * sizeof(*t->cmds),
			       IW_ACCESS_LOCAL_WRITE);
	if (!t->disk_mr || !t->cmds_mr || iw_req_notify_cq(t->cq, 0))
		return -1;
	for (uint32_t i = 0; i < t->ncmds; i++)
		if (repost_cmd(t, i))
			return -1;
	return 0;
}

static int watch(struct target *t, int k, int fd, event_callback_fn cb)
{
	t->ev[k] = event_new(t->base, fd, EV_READ | EV_PERSIST, cb, t);
	return t->ev[k] && event_add(t->ev[k], NULL) == 0 ? 0 : -1;
}

static int setup_loop(struct target *t)
{
	struct timeval dl = {.tv_sec = DEADLINE_S};
	if (set_nonblock(t->cm->fd) || set_nonblock(t->cc->fd))
		return -1;
	if (watch(t, 0, t->cm->fd, on_cm) || watch(t, 1, t->cc->fd, on_cq) ||
	    watch(t, 2, iw_context_async_fd(t->ctx), on_async))
		return -1;
	t->ev[3] = evtimer_new(t->base, on_deadline, t);
	return t->ev[3] && evtimer_add(t->ev[3], &dl) == 0 ? 0 : -1;
}

static int setup_listener(struct target *t, const char *addr, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return -1;
	/* Called before dispatching, on the thread that will dispatch: the
	 * CM calls run inline. */
	if (iw_cm_create_id(t->cm, &t->listener, NULL) ||
	    iw_cm_bind_addr(t->listener, (struct sockaddr *)&a) || iw_cm_listen(t->listener, 0))
		return -1;
	const struct sockaddr_in *la = (const struct sockaddr_in *)&t->listener->local_addr;
	printf("target: listening on %s:%u\n", addr, ntohs(la->sin_port));
	fflush(stdout);
	return 0;
}

/* Every block an initiator wrote holds what it wrote. */
static uint32_t verify_disk(struct target *t, bool *ok)
{
	uint32_t n = 0;
	*ok = true;
	for (uint32_t b = 0; b < t->blocks; b++) {
		if (!t->written[b])
			continue;
		n++;
		for (uint32_t i = 0; i < BLK_SIZE; i++)
			if (t->disk[(size_t)b * BLK_SIZE + i] != blk_pattern(b, i)) {
				fprintf(stderr, "target: block %u octet %u differs\n", b, i);
				*ok = false;
				break;
			}
	}
	return n;
}

static void teardown(struct target *t)
{
	for (int k = 0; k < 4; k++)
		if (t->ev[k])
			event_free(t->ev[k]);
	while (t->conns) {
		struct conn *c = t->conns;
		if (!c->gone)
			iw_cm_destroy_id(c->id);
		t->conns = c->next;
		for (unsigned i = 0; i < BLK_QD; i++)
			iw_dereg_mr(c->io[i].mr);
		free(c);
	}
	iw_cm_destroy_id(t->listener);
	iw_destroy_srq(t->srq);
	iw_dereg_mr(t->disk_mr);
	iw_dereg_mr(t->cmds_mr);
	iw_destroy_cq(t->cq);
	iw_destroy_comp_channel(t->cc);
	iw_dealloc_pd(t->pd);
	iw_cm_destroy_channel(t->cm);
	iw_context_free(t->ctx);
	event_base_free(t->base);
	free(t->disk);
	free(t->written);
	free(t->cmds);
}

static int run(struct target *t, const char *addr, uint16_t port)
{
	struct iw_context_attr attr = {.base = t->base};
	t->ctx = iw_context_new(&attr);
	t->cm = t->ctx ? iw_cm_create_channel(t->ctx) : NULL;
	if (!t->cm || setup_verbs(t) || setup_loop(t) || setup_listener(t, addr, port)) {
		perror("target: setup");
		return -1;
	}
	event_base_dispatch(t->base);
	bool ok;
	uint32_t n = verify_disk(t, &ok);
	if (t->failed || !ok || n == 0)
		return -1;
	printf("target: %u blocks written by initiators verified; %lu I/Os (%lu reads, %lu "
	       "writes), %lu octets moved over %d connections\n",
	       n, t->ios, t->reads, t->writes, t->ios * (unsigned long)BLK_SIZE, t->closed);
	/* A peer guessing STags shows here (and TERMINATEs its connection). */
	struct iw_stag_stats st = {0};
	if (iw_query_stag_stats(t->ctx, &st) == 0)
		printf("target: %llu remote accesses refused for their STag\n",
		       (unsigned long long)st.invalid_stag);
	return t->async ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct target t = {.want = 4, .blocks = 256};
	const char *addr = "127.0.0.1";
	uint16_t port = 0;
	int opt;
	while ((opt = getopt(argc, argv, "a:p:n:b:i")) != -1) {
		if (opt == 'a')
			addr = optarg;
		else if (opt == 'p')
			port = (uint16_t)atoi(optarg);
		else if (opt == 'n')
			t.want = atoi(optarg);
		else if (opt == 'b')
			t.blocks = (uint32_t)strtoul(optarg, NULL, 0);
		else if (opt == 'i')
			t.plain_odd = true;
		else {
			fprintf(stderr, "usage: %s [-a addr] [-p port] [-n conns] [-b blocks] [-i]\n",
				argv[0]);
			return 2;
		}
	}
	if (t.want < 1 || t.want > 256 || t.blocks < 1 || t.blocks > 65536) {
		fprintf(stderr, "target: -n 1..256, -b 1..65536\n");
		return 2;
	}
	t.ncmds = BLK_QD * (uint32_t)t.want + BLK_QD;
	t.base = event_base_new();
	int rc = t.base ? run(&t, addr, port) : -1;
	if (t.base)
		teardown(&t);
	printf("target: %s\n", rc ? "FAILED" : "done");
	return rc ? 1 : 0;
}
