/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NVMe RDMA transport binding on libiwarp, as an application embeds
 * it: a loop group of our own event_bases (iw_context_attr.bases), one
 * thread each, so every capsule is handled on one thread from receive to
 * response, with no hand-off. A listener on loop 0 spreads connections by
 * the binding's CM private data (iw_cm_set_spread): I/O queue q goes to
 * loop (q - 1) mod N, as a Linux host runs queue q on CPU q - 1; admin and
 * discovery queues take the loops in turn. Each loop has its own
 * completion channel, CQs, SRQ and buffers, so a queue's data path never
 * leaves its loop's thread. CM events come through one channel (that of
 * the listener), read on loop 0 and handed to the loop of their id by a
 * mailbox (an eventfd and a list). Controller state that queues on
 * different loops share is guarded in tgt.h (tgt.lock); when a controller
 * dies, its queues are told to disconnect through their loops' mailboxes.
 *
 * Resources, per loop: one SRQ shared by the loop's queues, with `slots` receive buffers
 * (64-octet command + in-capsule data) and as many data buffers (max_io,
 * page aligned, registered as the sink of our RDMA READs and of nothing a
 * host could send on its own: IW_ACCESS_READ_SINK). Slot i's
 * data buffer belongs to the command received in slot i, until the Send of
 * its response completes; then the receive is posted again, or kept
 * spare. A Send that finds no receive is fatal on iWARP (no RNR retry), so
 * a queue is only accepted while the sizes of the loop's queues stay within
 * half the slots: up to one response per slot may still be completing when
 * its host, having seen it, sends the next command (else it is rejected
 * with the binding's "no resources"; Number of Queues grants a controller
 * only as many I/O queues as fit, fit_queues). Only that many (two
 * per entry, and SLOT_SLACK) are posted or in use at a time, the spare
 * ones most recently used first, so that the buffers a loop touches are
 * as few as its queues need (want_slots).
 *
 * Data: host reads are RDMA WRITEs followed by the response Send (in
 * order on the QP, so the data is placed before the host sees the
 * response); host writes with a keyed SGL are RDMA READs, at most ORD
 * outstanding per queue (the rest wait in order); in-capsule data is used
 * where it landed. A RAM namespace is registered whole, as a READ sink too,
 * and its Reads and Writes move in place: the WRITE's source and the
 * READ's sink are the namespace's own blocks (tgt_io_in_place), so the
 * target copies nothing. The response is a Send with Invalidate of the
 * host's key when its SGL asked for it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#include "tgt_rdma.h"

#define MAX_ORD 16
/* Completions taken per poll, and so responses per sendmsg (cork_flush
 * after each batch). Not the whole queue: with batches of 32 at QD 32 the
 * host and the target took turns, each asleep while the other worked on
 * all 32 (4 KiB random writes at QD 32: 210 K IOPS, 0.4 CPU on each
 * side); batches of 8 keep both at work, 500 K (README, "Serving
 * NVMe-oF from userspace"). nh.c takes its responses the same way. */
#define CQ_BATCH 8
#define SLOT_SLACK 32 /* receives posted beyond two per queue entry */
#define LOOP_EVS 4 /* mailbox; loop 0: CM, async events, tick */

/* At queue depth, capsules with in-capsule data arrive back to back: one
 * read into the bounce buffer for a run of them, and a copy of each, cost
 * less than a readv per capsule into its receive buffer (libiwarp's
 * default from 2 KiB). */
static const struct iw_conn_opts conn_opts = {.comp_mask = IW_CONN_OPTS_DIRECT_MIN,
					      .direct_min = 16384};

enum slot_state { S_POSTED, S_SPARE, S_BUSY, S_HOLD, S_RDWAIT, S_READ, S_SEND };
enum wr_kind { WR_READ = 1, WR_WRITE, WR_SEND };

struct tr_conn;
struct tr_loop;
struct tr_slot {
	uint32_t idx;
	enum slot_state st;
	struct tr_conn *conn;
	struct tgt_req req;
	struct tr_slot *next; /* ORD wait list, or the spare stack */
	uint32_t held;        /* octets of data counted in held_now (stage_write) */
	/* The response's WRs live here until they are posted (corked). */
	uint8_t cqe[NVMF_CQE_SIZE];
	struct iw_sge dsge, csge;
	struct iw_send_wr write, send;
};

struct tr_conn {
	struct tr_loop *lp;
	struct iw_cm_id *id;
	struct tgt_queue q;
	uint64_t serial;  /* names the queue in mailbox messages (never reused) */
	uint32_t qp_num;
	uint32_t ord, reads_out;
	struct tr_slot *rd_head, *rd_tail;
	uint32_t refs;   /* slots that belong to this connection */
	uint64_t cmds;   /* commands received */
	bool dead;
	struct tr_conn *next;
	/* Responses corked during one batch of completions (cork_flush). */
	struct iw_send_wr *cork_head, **cork_tail;
	struct tr_conn *cork_next;
};

/* Work handed to a loop by another thread. */
enum msg_kind { M_CM, M_KILL, M_STOP };
struct tr_msg {
	struct tr_msg *next;
	enum msg_kind kind;
	enum iw_cm_event_type type; /* M_CM: the event, copied */
	struct iw_cm_id *id;
	uint8_t ird, ord;
	size_t len;
	uint8_t pd[NVMF_CM_PD_SIZE];
	uint64_t serial;            /* M_KILL: the queue to disconnect */
};

/* One loop: its thread, base and everything its queues use. Only its
 * thread touches it, but for the mailbox (mlock). */
struct tr_loop {
	struct tr *tr;
	unsigned idx;
	pthread_t thread;
	struct event_base *base;
	struct iw_comp_channel *cc;
	struct iw_cq *scq, *rcq;
	struct iw_srq *srq;
	uint8_t *rbufs, *dbufs;
	struct iw_mr *rmr, *dmr;
	uint32_t budget;
	uint32_t posted, nspare; /* slots in the SRQ, and on the spare stack */
	struct tr_slot *slots, *spare;
	struct tr_conn *conns;
	struct tr_conn *corked; /* connections with responses to post */
	uint32_t sq_out;        /* signaled WRs posted and not yet completed */
	bool scq_armed;         /* scq will raise an event (watch_sends) */
	struct event *evs[LOOP_EVS];
	int mfd;                /* eventfd: the mailbox has mail */
	pthread_mutex_t mlock;
	struct tr_msg *mail, **mail_tail;
	struct tr_msg stop;     /* M_STOP, ready: stopping needs no memory */
	/* For the summary at exit (iwarp-nvmet(1), make nvmf-bench). */
	uint64_t cmds, queues, io_queues, write_reads, in_place, staged;
	uint64_t held_now;   /* octets of data of the commands in flight (stage_write) */
	uint64_t polled, poll_slept; /* --spin-us: answers polled for; polls that slept */
	double cpu_s;
};

struct tr {
	struct tgt *t;
	const struct tr_opts *o;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *cm;
	struct iw_cm_id *listener;
	/* Held from iw_cm_get_event to its ack on loop 0, and around
	 * iw_cm_destroy_id on every loop: an id is never destroyed while an
	 * event of it is taken and not acked (that would fail with EBUSY). */
	pthread_mutex_t cm_lock;
	uint32_t rsize, nslots, nloops;
	uint64_t stage_max; /* write_stage resolved */
	struct tr_loop *loops;
	/* Every RAM namespace, registered for in-place I/O, unless copy_ram */
	struct iw_mr *ns_mr[TGT_MAX_NS];
	bool in_place;
	uint64_t serial;
	bool wildcard;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void say(const struct tr_loop *lp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct tr_loop *lp, const char *fmt, ...)
{
	if (!lp->tr->t->cfg.verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("iwarp-nvmet: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static uint8_t *rbuf(struct tr_loop *lp, uint32_t i) { return lp->rbufs + (size_t)i * lp->tr->rsize; }
static uint8_t *dbuf(struct tr_loop *lp, uint32_t i)
{
	return lp->dbufs + (size_t)i * lp->tr->t->cfg.max_io;
}

/* ------------------------------------------------------------ slots */

/* The MR holding a command's data: its slot's buffer or its namespace. */
static uint32_t data_lkey(const struct tr_loop *lp, const struct tgt_req *req)
{
	if (!req->in_place)
		return lp->dmr->lkey;
	return lp->tr->ns_mr[req->in_place - lp->tr->t->cfg.ns]->lkey;
}

static int post_slot(struct tr_loop *lp, struct tr_slot *s)
{
	struct iw_sge sge = {.addr = (uintptr_t)rbuf(lp, s->idx), .length = lp->tr->rsize,
			     .lkey = lp->rmr->lkey};
	struct iw_recv_wr wr = {.wr_id = s->idx, .sg_list = &sge, .num_sge = 1}, *bad;
	s->st = S_POSTED;
	s->conn = NULL;
	int rc = iw_post_srq_recv(lp->srq, &wr, &bad);
	if (rc)
		fprintf(stderr, "iwarp-nvmet: iw_post_srq_recv: %s\n", strerror(rc));
	else
		lp->posted++;
	return rc;
}

static void conn_free(struct tr_conn *c)
{
	struct tr_loop *lp = c->lp;
	for (struct tr_conn **pp = &lp->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	free(c);
}

/* Receives posted (or in use) for the loop's queues: two per entry, as
 * a host that has seen a response may send its next command before that
 * response's Send completes here, and some to spare. The SRQ hands out
 * the receive posted last, and the rest wait on a stack, the most
 * recently used on top, so the buffers in use stay few and warm however
 * many slots there are. */
static uint32_t want_slots(const struct tr_loop *lp)
{
	uint32_t want = 2 * lp->budget + SLOT_SLACK;
	return want < lp->tr->nslots ? want : lp->tr->nslots;
}

static void spare_push(struct tr_loop *lp, struct tr_slot *s)
{
	s->st = S_SPARE;
	s->conn = NULL;
	s->next = lp->spare;
	lp->spare = s;
	lp->nspare++;
}

/* Post spare slots until the loop's queues have what they need. */
static void refill(struct tr_loop *lp)
{
	while (lp->spare && lp->tr->nslots - lp->nspare < want_slots(lp)) {
		struct tr_slot *s = lp->spare;
		lp->spare = s->next;
		lp->nspare--;
		post_slot(lp, s);
	}
}

/* A slot's command is done: posted again while the queues need it
 * (posted or in use below want_slots), else kept spare. */
static void recycle(struct tr_loop *lp, struct tr_slot *s)
{
	lp->held_now -= s->held;
	s->held = 0;
	if (lp->tr->nslots - lp->nspare - 1 >= want_slots(lp))
		spare_push(lp, s);
	else
		post_slot(lp, s);
}

static void release(struct tr_loop *lp, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	recycle(lp, s);
	if (c && --c->refs == 0 && c->dead)
		conn_free(c);
}

/* ------------------------------------------------------------ commands */

/* Post a chain of responses; those from a refused WR on are released
 * (a refused WRITE's Send follows it in the chain). */
static void post_responses(struct tr_loop *lp, struct tr_conn *c, struct iw_send_wr *first)
{
	struct iw_send_wr *bad = NULL;
	int rc = iw_post_send(c->id->qp, first, &bad);
	for (struct iw_send_wr *w = first; w && w != bad; w = w->next)
		lp->sq_out += w->wr_id >> 32 == WR_SEND;
	if (!rc)
		return;
	say(lp, "queue %u: posting the response: %s", c->q.qid, strerror(rc));
	for (struct iw_send_wr *w = bad; w; w = w->next)
		if (w->wr_id >> 32 == WR_SEND)
			release(lp, &lp->slots[(uint32_t)w->wr_id]);
}

/* Responses made while a batch of completions is handled go out together
 * at its end (cork_flush): one iw_post_send, so one write to the socket
 * for the batch, not one per command. */
static void cork(struct tr_loop *lp, struct tr_conn *c, struct iw_send_wr *first,
		 struct iw_send_wr *last)
{
	if (!c->cork_head) {
		c->cork_tail = &c->cork_head;
		c->cork_next = lp->corked;
		lp->corked = c;
	}
	last->next = NULL;
	*c->cork_tail = first;
	c->cork_tail = &last->next;
}

static void cork_flush(struct tr_loop *lp)
{
	while (lp->corked) {
		struct tr_conn *c = lp->corked;
		struct iw_send_wr *first = c->cork_head;
		lp->corked = c->cork_next;
		c->cork_head = NULL;
		post_responses(lp, c, first);
	}
}

static void respond(struct tr_loop *lp, struct tr_slot *s)
{
	struct tgt_req *req = &s->req;
	struct tr_conn *c = s->conn;
	nvmf_cqe_put(s->cqe, &req->cqe);
	if (req->cqe.status)
		say(lp, "queue %u cid %u opcode 0x%02x: %s (0x%x)", c->q.qid, req->cmd.cid,
		    req->cmd.opc, nvmf_status_str(req->cqe.status), req->cqe.status);
	s->dsge = (struct iw_sge){.addr = (uintptr_t)req->data, .length = req->c2h_len,
				  .lkey = data_lkey(lp, req)};
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
	cork(lp, c, req->c2h_len ? &s->write : &s->send, &s->send);
}

static void exec(struct tr_loop *lp, struct tr_slot *s)
{
	s->st = S_BUSY;
	if (tgt_cmd_exec(&s->req) == TGT_HOLD) {
		s->st = S_HOLD;
		return;
	}
	respond(lp, s);
}

static void start_read(struct tr_loop *lp, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	struct tgt_req *req = &s->req;
	struct iw_sge sge = {.addr = (uintptr_t)req->data, .length = req->xfer_len,
			     .lkey = data_lkey(lp, req)};
	struct iw_send_wr wr = {.wr_id = (uint64_t)WR_READ << 32 | s->idx, .sg_list = &sge,
				.num_sge = 1, .opcode = IW_WR_RDMA_READ,
				.send_flags = IW_SEND_SIGNALED}, *bad;
	wr.wr.rdma.remote_addr = req->sgl.addr;
	wr.wr.rdma.rkey = req->sgl.key;
	s->st = S_READ;
	c->reads_out++;
	lp->write_reads += req->cmd.opc == NVME_IO_WRITE && c->q.qid;
	int rc = iw_post_send(c->id->qp, &wr, &bad);
	lp->sq_out += !rc;
	if (rc) {
		c->reads_out--;
		say(lp, "queue %u: posting an RDMA READ: %s", c->q.qid, strerror(rc));
		release(lp, s);
	}
}

/* Host data is fetched with at most ORD READs outstanding, in order. */
static void want_read(struct tr_loop *lp, struct tr_slot *s)
{
	struct tr_conn *c = s->conn;
	if (c->reads_out < c->ord && !c->rd_head) {
		start_read(lp, s);
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

static void pump_reads(struct tr_loop *lp, struct tr_conn *c)
{
	while (c->rd_head && c->reads_out < c->ord) {
		struct tr_slot *s = c->rd_head;
		c->rd_head = s->next;
		if (!c->rd_head)
			c->rd_tail = NULL;
		start_read(lp, s);
	}
}

static struct tr_conn *conn_by_qp(struct tr_loop *lp, uint32_t qp_num)
{
	for (struct tr_conn *c = lp->conns; c; c = c->next)
		if (c->qp_num == qp_num)
			return c;
	return NULL;
}

/*
 * A host write fetched by RDMA READ into a RAM namespace: into the slot's
 * own buffer first, then stored into the namespace (ram_store), while the
 * data of all the commands in flight on this loop is small enough for
 * that buffer to be still in the caches, else in place. In place, the
 * kernel's copy out of the socket writes into memory no cache holds,
 * reading each line from memory first; into a buffer the caches still
 * hold (slots are reused most recently freed first) it is faster by more
 * than the store afterwards costs, and the Read Response, on the write's
 * critical path, is taken sooner. With much more data in flight the
 * buffer was used too long ago, the store is a copy more, and the loop,
 * busier, pays it in throughput. Measured (128 KiB writes by READ, one
 * queue, one loop, target and host on one CPU each, paired rounds against
 * --write-stage 0, 2026-11-28): with the bound at 2 MiB (twice this
 * machine's L2; every write staged at QD 8, 44 % at QD 16, 2 % at QD 32)
 * 1.16x the IOPS at QD 8 (0.91x-1.34x) and 1.03x at QD 32 (0.91x-1.10x);
 * staging every write, 1.17x at QD 8 but 0.95x at QD 32; with the bound
 * at 1 MiB, fewer than half the writes at QD 8 fit and nothing changed.
 */
static void stage_write(struct tr_loop *lp, struct tr_slot *s)
{
	if (lp->held_now > lp->tr->stage_max)
		return;
	s->req.in_place = NULL;
	s->req.data = dbuf(lp, s->idx);
	lp->staged++;
}

/* The data of a command, counted while its slot is held. */
static void hold(struct tr_loop *lp, struct tr_slot *s)
{
	s->held = s->req.xfer_len;
	lp->held_now += s->held;
}

static void on_recv(struct tr_loop *lp, const struct iw_wc *wc)
{
	struct tr_slot *s = &lp->slots[wc->wr_id];
	struct tr_conn *c = wc->status == IW_WC_SUCCESS ? conn_by_qp(lp, wc->qp_num) : NULL;
	lp->posted--;
	if (!c || c->dead) {
		recycle(lp, s);
		return;
	}
	s->conn = c;
	c->refs++;
	c->cmds++;
	lp->cmds++;
	s->req.data = dbuf(lp, s->idx);
	/* Keep Alive and Connect stamp the time they arrived; the I/O path
	 * does not look at the clock. */
	s->req.now_ms = c->q.qid && c->q.ctrl ? 0 : now_ms();
	int step = tgt_cmd_begin(&c->q, &s->req, rbuf(lp, s->idx), wc->byte_len);
	if (step < 0) {
		/* No command ID to answer: a fatal transport error. */
		fprintf(stderr, "iwarp-nvmet: queue %u: capsule of %u octets (< 64): disconnecting\n",
			c->q.qid, wc->byte_len);
		tgt_queue_fatal(&c->q);
		release(lp, s);
		iw_cm_disconnect(c->id);
		return;
	}
	if ((step == TGT_FETCH || step == TGT_EXEC) && lp->tr->in_place) {
		hold(lp, s);
		tgt_io_in_place(&s->req);
		if (s->req.in_place && step == TGT_FETCH)
			stage_write(lp, s); /* a Write by RDMA READ */
		lp->in_place += s->req.in_place != NULL;
	}
	if (step == TGT_FETCH)
		want_read(lp, s);
	else if (step == TGT_EXEC)
		exec(lp, s);
	else
		respond(lp, s);
}

static void on_send(struct tr_loop *lp, const struct iw_wc *wc)
{
	struct tr_slot *s = &lp->slots[(uint32_t)wc->wr_id];
	enum wr_kind kind = (enum wr_kind)(wc->wr_id >> 32);
	struct tr_conn *c = s->conn;
	if (kind == WR_WRITE)
		return; /* unsignaled: only errors come here, and the Send behind follows */
	lp->sq_out--;
	if (kind == WR_SEND) {
		release(lp, s);
		return;
	}
	c->reads_out--;
	if (wc->status != IW_WC_SUCCESS || c->dead) {
		if (wc->status != IW_WC_WR_FLUSH_ERR)
			say(lp, "queue %u: RDMA READ failed: %s", c->q.qid, iw_wc_status_str(wc->status));
		release(lp, s);
	} else {
		exec(lp, s);
	}
	if (!c->dead)
		pump_reads(lp, c);
}

static void poll_cq(struct tr_loop *lp, struct iw_cq *cq, bool recv)
{
	struct iw_wc wc[CQ_BATCH];
	int n;
	while ((n = iw_poll_cq(cq, CQ_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			(recv ? on_recv : on_send)(lp, &wc[i]);
		cork_flush(lp);
	}
}

/* The send CQ is armed only while signaled WRs are out. A response's Send
 * usually completes inside the iw_post_send that wrote it and is polled
 * right after (on_cq_event), so an armed CQ only had the library write the
 * channel's eventfd and the loop wake again to read it: 3 of the target's
 * 10 system calls per QD 1 read (strace -c). A READ, or a Send the socket
 * could not take at once, completes later on the loop: those keep it
 * armed. Arm, then poll: a completion that came before the arm is found
 * there, one after it raises the event. */
static void watch_sends(struct tr_loop *lp)
{
	if (lp->sq_out && !lp->scq_armed) {
		iw_req_notify_cq(lp->scq, 0);
		lp->scq_armed = true;
		poll_cq(lp, lp->scq, false);
	}
}

/* The channel's callback on this loop (iw_comp_channel_set_loop): the
 * commands this loop's connections received raised their events here,
 * so they cost no system call. One event per call, as the library calls
 * again while events remain (one from another thread would cost a read
 * of the channel's fd). The receive CQ is armed again before it is
 * polled, so no command goes unseen. */
static void on_cq_event(struct iw_comp_channel *cc, void *arg)
{
	struct tr_loop *lp = arg;
	struct iw_cq *cq;
	void *ctx;
	if (iw_get_cq_event(cc, &cq, &ctx) == 0) {
		iw_ack_cq_events(cq, 1);
		if (cq == lp->scq)
			lp->scq_armed = false;
		else
			iw_req_notify_cq(cq, 0);
	}
	poll_cq(lp, lp->rcq, true);
	poll_cq(lp, lp->scq, false);
	watch_sends(lp);
}

/* ------------------------------------------------------------ mailboxes */

static void mail(struct tr_loop *lp, struct tr_msg *m)
{
	uint64_t one = 1;
	m->next = NULL;
	pthread_mutex_lock(&lp->mlock);
	*lp->mail_tail = m;
	lp->mail_tail = &m->next;
	pthread_mutex_unlock(&lp->mlock);
	/* Fails only when the counter would overflow: a wake-up is pending. */
	if (write(lp->mfd, &one, sizeof(one)) < 0)
		return;
}

static void mail_simple(struct tr_loop *lp, enum msg_kind kind, uint64_t serial)
{
	struct tr_msg *m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "iwarp-nvmet: no memory for a message to loop %u\n", lp->idx);
		return;
	}
	m->kind = kind;
	m->serial = serial;
	mail(lp, m);
}

static struct tr_msg *mail_take(struct tr_loop *lp)
{
	pthread_mutex_lock(&lp->mlock);
	struct tr_msg *m = lp->mail;
	lp->mail = NULL;
	lp->mail_tail = &lp->mail;
	pthread_mutex_unlock(&lp->mlock);
	return m;
}

/* ------------------------------------------------------------ connections */

static void destroy_id(struct tr *tr, struct iw_cm_id *id)
{
	pthread_mutex_lock(&tr->cm_lock);
	int rc = iw_cm_destroy_id(id);
	pthread_mutex_unlock(&tr->cm_lock);
	if (rc)
		fprintf(stderr, "iwarp-nvmet: iw_cm_destroy_id: %s\n", strerror(rc));
}

/* Slots a dead queue still holds without a WR (held AERs, reads waiting
 * for ORD) come back now; those with WRs come back with their flushes. */
static void conn_dead(struct tr_loop *lp, struct tr_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	c->refs++; /* held until the end: releases below must not free c */
	lp->budget -= c->q.size;
	say(lp, "queue %u on loop %u: closed after %" PRIu64 " commands", c->q.qid, lp->idx,
	    c->cmds);
	tgt_queue_gone(&c->q);
	for (uint32_t i = 0; i < lp->tr->nslots; i++) {
		struct tr_slot *s = &lp->slots[i];
		if (s->conn == c && (s->st == S_HOLD || s->st == S_RDWAIT))
			release(lp, s);
	}
	c->rd_head = c->rd_tail = NULL;
	destroy_id(lp->tr, c->id);
	c->id = NULL;
	if (--c->refs == 0)
		conn_free(c);
	else
		poll_cq(lp, lp->scq, false);
	watch_sends(lp);
}

/* Under tgt.lock, from any loop: each queue of the controller is told to
 * disconnect by its own loop (a CM call for another loop's id would wait
 * for that loop, which may be waiting for tgt.lock). */
static void ctrl_dead(struct tgt *t, struct tgt_ctrl *ctrl, const char *why)
{
	/* A host that leaves is news only to the curious; a timeout always is. */
	if (t->cfg.verbose || ctrl->dead_loud)
		fprintf(stderr, "iwarp-nvmet: controller %u (%s): %s\n", ctrl->cntlid,
			ctrl->hostnqn, why);
	for (uint32_t i = 0; i <= t->cfg.max_qid; i++) {
		struct tgt_queue *q = ctrl->queues[i];
		struct tr_conn *c = q ? q->tp : NULL;
		if (c)
			mail_simple(c->lp, M_KILL, c->serial);
	}
}

static void on_kill(struct tr_loop *lp, uint64_t serial)
{
	for (struct tr_conn *c = lp->conns; c; c = c->next)
		if (c->serial == serial && !c->dead)
			iw_cm_disconnect(c->id);
}

/* The binding's checks of the host's private data; 0 or a reject code. */
static int check_request(struct tr_loop *lp, const struct nvmf_cm_req *r, uint8_t peer_ird)
{
	const struct tgt_cfg *cfg = &lp->tr->t->cfg;
	uint32_t size = (uint32_t)r->hsqsize + 1;
	if (r->qid > cfg->max_qid)
		return NVMF_CM_INVALID_QID;
	if (size > (r->qid ? cfg->mqes : NVMF_AQ_DEPTH) || size < 2)
		return NVMF_CM_INVALID_HSQSIZE;
	if (r->hrqsize == 0)
		return NVMF_CM_INVALID_HRQSIZE;
	if (peer_ird == 0)
		return NVMF_CM_INVALID_IRD;
	if (lp->budget + size > lp->tr->nslots / 2)
		return NVMF_CM_NO_RSC;
	return 0;
}

/* The discovery log names the address this host reached when we listen
 * on a wildcard address. */
static void local_name(struct tr_conn *c)
{
	const struct sockaddr_storage *la = &c->id->local_addr;
	const void *a = la->ss_family == AF_INET6
				? (const void *)&((const struct sockaddr_in6 *)la)->sin6_addr
				: (const void *)&((const struct sockaddr_in *)la)->sin_addr;
	if (c->lp->tr->wildcard)
		inet_ntop(la->ss_family, a, c->q.traddr, sizeof(c->q.traddr));
}

static int accept_conn(struct tr_loop *lp, struct iw_cm_id *id, const struct nvmf_cm_req *r,
		       uint8_t peer_ird)
{
	struct tr *tr = lp->tr;
	uint16_t size = (uint16_t)(r->hsqsize + 1);
	struct tr_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NVMF_CM_NO_RSC;
	struct iw_qp_init_attr qa = {
		.send_cq = lp->scq, .recv_cq = lp->rcq, .srq = lp->srq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 3u * size + 8, .max_recv_wr = 1, .max_send_sge = 1,
			.max_recv_sge = 1, .max_inline_data = 64},
	};
	if (iw_cm_set_conn_opts(id, &conn_opts) || iw_cm_create_qp(id, tr->pd, &qa)) {
		free(c);
		return NVMF_CM_NO_RSC;
	}
	c->lp = lp;
	c->id = id;
	c->serial = __atomic_add_fetch(&tr->serial, 1, __ATOMIC_RELAXED);
	c->qp_num = iw_qp_num(id->qp);
	c->ord = peer_ird < MAX_ORD ? peer_ird : MAX_ORD;
	tgt_queue_init(&c->q, tr->t, r->qid, size);
	c->q.tp = c;
	local_name(c);
	uint8_t pd[NVMF_CM_PD_SIZE];
	struct nvmf_cm_rep rep = {.recfmt = 0, .crqsize = size};
	nvmf_cm_rep_put(pd, &rep);
	struct iw_conn_param p = {.private_data = pd, .private_data_len = sizeof(pd),
				  .responder_resources = 0, .initiator_depth = (uint8_t)c->ord};
	/* The host may send as soon as it is connected: its receives first. */
	lp->budget += size;
	refill(lp);
	int rc = iw_cm_accept(id, &p);
	if (rc) {
		lp->budget -= size;
		free(c);
		return NVMF_CM_NO_RSC;
	}
	lp->queues++;
	lp->io_queues += r->qid != 0;
	c->next = lp->conns;
	lp->conns = c;
	say(lp, "queue %u: accepted on loop %u (%u entries, ORD %u, %u receives posted)", r->qid,
	    lp->idx, size, c->ord, lp->posted);
	return 0;
}

static void on_request(struct tr_loop *lp, struct iw_cm_id *id, const uint8_t *pd, size_t len,
		       uint8_t peer_ird)
{
	struct nvmf_cm_req r;
	int st = nvmf_cm_req_parse(&r, pd, len);
	if (!st)
		st = check_request(lp, &r, peer_ird);
	if (!st)
		st = accept_conn(lp, id, &r, peer_ird);
	if (!st)
		return;
	fprintf(stderr, "iwarp-nvmet: connection rejected: %s\n", nvmf_cm_status_str(st));
	uint8_t rej[NVMF_CM_REJ_SIZE];
	nvmf_cm_rej_put(rej, (uint16_t)st);
	iw_cm_reject(id, rej, sizeof(rej));
	destroy_id(lp->tr, id);
}

static struct tr_conn *conn_by_id(struct tr_loop *lp, const struct iw_cm_id *id)
{
	for (struct tr_conn *c = lp->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* A CM event on the loop of its id. The id of an event read before it was
 * destroyed matches no connection (c->id is cleared then): ignored. */
static void on_cm(struct tr_loop *lp, const struct tr_msg *m)
{
	struct tr_conn *c = conn_by_id(lp, m->id);
	if (m->type == IW_CM_EVENT_CONNECT_REQUEST)
		on_request(lp, m->id, m->pd, m->len, m->ird);
	else if (m->type == IW_CM_EVENT_ESTABLISHED && c)
		c->ord = m->ord < MAX_ORD ? m->ord : MAX_ORD;
	else if (c && (m->type == IW_CM_EVENT_DISCONNECTED || m->type == IW_CM_EVENT_CONNECT_ERROR))
		conn_dead(lp, c);
}

static void on_mail(evutil_socket_t fd, short what, void *arg)
{
	struct tr_loop *lp = arg;
	uint64_t v;
	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	for (struct tr_msg *m = mail_take(lp), *next; m; m = next) {
		next = m->next;
		if (m->kind == M_CM)
			on_cm(lp, m);
		else if (m->kind == M_KILL)
			on_kill(lp, m->serial);
		else
			event_base_loopbreak(lp->base);
		if (m != &lp->stop)
			free(m);
	}
}

/* Read one CM event and copy what we need, under cm_lock until it is
 * acked; NULL when none is queued. The message is allocated first: no
 * CM call that could wait for another loop is made under cm_lock (that
 * loop may be waiting for it in destroy_id), and without memory the event
 * stays queued for the next time the channel is readable. */
static struct tr_msg *cm_take(struct tr *tr, unsigned *loop)
{
	struct iw_cm_event *ev;
	struct tr_msg *m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "iwarp-nvmet: no memory for a CM event\n");
		return NULL;
	}
	pthread_mutex_lock(&tr->cm_lock);
	if (iw_cm_get_event(tr->cm, &ev)) {
		pthread_mutex_unlock(&tr->cm_lock);
		free(m);
		return NULL;
	}
	m->kind = M_CM;
	m->type = ev->event;
	m->id = ev->id;
	m->len = ev->param.private_data_len <= sizeof(m->pd) ? ev->param.private_data_len : 0;
	if (m->len)
		memcpy(m->pd, ev->param.private_data, m->len);
	m->ird = ev->param.responder_resources;
	m->ord = ev->param.initiator_depth;
	if (iw_cm_get_loop(ev->id, loop) || *loop >= tr->nloops)
		*loop = 0;
	iw_cm_ack_event(ev);
	pthread_mutex_unlock(&tr->cm_lock);
	return m;
}

/* Loop 0 reads the listener's channel and hands each event to its id's
 * loop, in order. */
static void on_cm_event(evutil_socket_t fd, short what, void *arg)
{
	struct tr_loop *lp = arg;
	struct tr_msg *m;
	unsigned loop;
	(void)fd;
	(void)what;
	while ((m = cm_take(lp->tr, &loop)) != NULL) {
		if (loop == lp->idx) {
			on_cm(lp, m);
			free(m);
		} else {
			mail(&lp->tr->loops[loop], m);
		}
	}
}

/* I/O queue q on loop (q - 1) mod N; the admin and discovery queues (and
 * requests we will reject) in turn. Runs on the listener's loop. */
static int pick_loop(struct iw_cm_id *listener, const struct iw_cm_event *req, void *arg)
{
	const struct tr *tr = arg;
	struct nvmf_cm_req r;
	(void)listener;
	if (nvmf_cm_req_parse(&r, req->param.private_data, req->param.private_data_len) ||
	    r.qid == 0)
		return -1;
	return (int)((r.qid - 1u) % tr->nloops);
}

/* QP errors (a peer's TERMINATE, a protocol violation we answered): said
 * when verbose, and read so the queue of them does not grow; the
 * connection's DISCONNECTED follows and tears the queue down. */
static void on_async(evutil_socket_t fd, short what, void *arg)
{
	struct tr_loop *lp = arg;
	struct iw_async_event ev;
	(void)fd;
	(void)what;
	while (iw_get_async_event(lp->tr->ctx, &ev) == 0) {
		say(lp, "%s (TERMINATE %s%s)", iw_event_type_str(ev.event_type),
		    iw_term_str(ev.term), ev.term_from_peer ? ", from the host" : "");
		iw_ack_async_event(&ev);
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tr_loop *lp = arg;
	(void)fd;
	(void)what;
	tgt_tick(lp->tr->t, now_ms());
}

/* ------------------------------------------------------------ setup */

static void *page_alloc(size_t len)
{
	void *p = NULL;
	return posix_memalign(&p, 4096, len) ? NULL : p;
}

static int setup_context(struct tr *tr)
{
	struct event_base *bases[TR_MAX_LOOPS];
	struct iw_context_attr ca = {.comp_mask = IW_CONTEXT_ATTR_LOOPS, .num_loops = tr->nloops,
				     .bases = bases};
	if (tr->o->pcap) {
		ca.comp_mask |= IW_CONTEXT_ATTR_PCAP;
		ca.pcap_path = tr->o->pcap;
	}
	for (uint32_t i = 0; i < tr->nloops; i++)
		bases[i] = tr->loops[i].base;
	tr->rsize = NVMF_CMD_SIZE + tr->t->cfg.icd_max;
	tr->ctx = iw_context_new(&ca);
	tr->pd = tr->ctx ? iw_alloc_pd(tr->ctx) : NULL;
	tr->cm = tr->ctx ? iw_cm_create_channel(tr->ctx) : NULL;
	return tr->pd && tr->cm ? 0 : -1;
}

/* The bound of stage_write: the option, or twice the L2 cache of the
 * CPU (2 MiB where the C library cannot tell). */
static uint64_t stage_max(const struct tr_opts *o)
{
	if (o->write_stage >= 0)
		return (uint64_t)o->write_stage;
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	return 2 * (l2 > 0 ? (uint64_t)l2 : 1u << 20);
}

/* A RAM namespace is the sink of the host's Write data and the source of
 * its Read data: one registration each, local only (READ_SINK: no host
 * can reach a namespace but through its own commands). */
static int setup_in_place(struct tr *tr)
{
	const struct tgt_cfg *cfg = &tr->t->cfg;
	tr->stage_max = stage_max(tr->o);
	for (uint32_t i = 0; i < cfg->nns && !tr->o->copy_ram; i++) {
		if (!cfg->ns[i].ram)
			continue;
		tr->ns_mr[i] = iw_reg_mr(tr->pd, cfg->ns[i].ram, cfg->ns[i].ram_len,
					 IW_ACCESS_LOCAL_WRITE | IW_ACCESS_READ_SINK);
		if (!tr->ns_mr[i])
			return -1;
		tr->in_place = true;
	}
	return 0;
}

static int setup_loop_verbs(struct tr_loop *lp)
{
	struct tr *tr = lp->tr;
	size_t max_io = tr->t->cfg.max_io;
	lp->cc = iw_create_comp_channel(tr->ctx);
	if (!lp->cc)
		return -1;
	lp->rcq = iw_create_cq(tr->ctx, (int)tr->nslots * 2, NULL, lp->cc, 0);
	lp->scq = iw_create_cq(tr->ctx, 1 << 16, NULL, lp->cc, 0);
	struct iw_srq_init_attr sa = {.attr = {.max_wr = tr->nslots, .max_sge = 1}};
	lp->srq = iw_create_srq(tr->pd, &sa);
	lp->rbufs = page_alloc((size_t)tr->nslots * tr->rsize);
	lp->dbufs = page_alloc((size_t)tr->nslots * max_io);
	lp->slots = calloc(tr->nslots, sizeof(*lp->slots));
	if (!lp->rcq || !lp->scq || !lp->srq || !lp->rbufs || !lp->dbufs || !lp->slots)
		return -1;
	/* Commands land in the slot reposted last, still in cache: taken
	 * oldest first, every posted slot's buffer would be cold by its turn
	 * (a third fewer 128 KiB in-capsule writes; README). */
	if (iw_set_srq_order(lp->srq, IW_SRQ_NEWEST_FIRST))
		return -1;
	/* Receive buffers are ours alone; data buffers are also the sink of
	 * the host's READ Responses, and of nothing else a host sends: a
	 * host sees their STag in every READ Request, and with a remote
	 * right could write into other hosts' commands (READ_SINK). */
	lp->rmr = iw_reg_mr(tr->pd, lp->rbufs, (size_t)tr->nslots * tr->rsize, IW_ACCESS_LOCAL_WRITE);
	lp->dmr = iw_reg_mr(tr->pd, lp->dbufs, (size_t)tr->nslots * max_io,
			    IW_ACCESS_LOCAL_WRITE | IW_ACCESS_READ_SINK);
	if (!lp->rmr || !lp->dmr)
		return -1;
	for (uint32_t i = tr->nslots; i-- > 0;) {
		lp->slots[i].idx = i;
		spare_push(lp, &lp->slots[i]);
	}
	refill(lp);
	if (lp->posted != want_slots(lp))
		return -1;
	iw_req_notify_cq(lp->rcq, 0);
	return 0;
}

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The loop's events: its mailbox; loop 0 also reads the CM channel and
 * the asynchronous events and runs the tick. The completion channel is
 * handed to the loop by its own thread (loop_main). */
static int setup_loop_events(struct tr_loop *lp)
{
	struct tr *tr = lp->tr;
	struct timeval tick = {0, 100000};
	int n = lp->idx == 0 ? LOOP_EVS : 1;
	lp->evs[0] = event_new(lp->base, lp->mfd, EV_READ | EV_PERSIST, on_mail, lp);
	if (lp->idx == 0) {
		nonblock(tr->cm->fd);
		lp->evs[1] = event_new(lp->base, tr->cm->fd, EV_READ | EV_PERSIST, on_cm_event, lp);
		lp->evs[2] = event_new(lp->base, iw_context_async_fd(tr->ctx), EV_READ | EV_PERSIST,
				       on_async, lp);
		lp->evs[3] = event_new(lp->base, -1, EV_PERSIST, on_tick, lp);
	}
	for (int i = 0; i < n; i++)
		if (!lp->evs[i] || event_add(lp->evs[i], i == 3 ? &tick : NULL))
			return -1;
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
	struct iw_cm_spread sp = {.policy = IW_CM_SPREAD_CALLBACK, .pick = pick_loop, .pick_arg = tr};
	int rc = iw_cm_create_id(tr->cm, &tr->listener, tr);
	if (!rc)
		rc = iw_cm_set_loop(tr->listener, 0);
	if (!rc)
		rc = iw_cm_set_spread(tr->listener, &sp);
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
	/* The loops already serve (discovery reads these under the lock). */
	pthread_mutex_lock(&tr->t->lock);
	snprintf(tr->t->cfg.trsvcid, sizeof(tr->t->cfg.trsvcid), "%u", port);
	snprintf(tr->t->cfg.traddr, sizeof(tr->t->cfg.traddr), "%s", addr);
	pthread_mutex_unlock(&tr->t->lock);
	printf("iwarp-nvmet: %s listening on %s:%u (%u namespace%s, %u loop%s)\n",
	       tr->t->cfg.subnqn, addr, port, tr->t->cfg.nns, tr->t->cfg.nns == 1 ? "" : "s",
	       tr->nloops, tr->nloops == 1 ? "" : "s");
	fflush(stdout);
	return 0;
}

/* ------------------------------------------------------------ loops */

/* Ends what the loop still serves; on its own thread, after its base
 * stopped (CM calls for its ids run inline there). */
static void loop_close(struct tr_loop *lp)
{
	while (lp->conns) {
		struct tr_conn *c = lp->conns;
		if (!c->dead)
			conn_dead(lp, c);
		else /* still waiting for flushes that will not come now */
			conn_free(c);
	}
	if (lp->idx == 0 && lp->tr->listener) {
		destroy_id(lp->tr, lp->tr->listener);
		lp->tr->listener = NULL;
	}
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass of the loop; false once dispatching would have ended (a
 * loopbreak from the stop message, or nothing left to wait for). */
static bool loop_pass(struct tr_loop *lp, int flags)
{
	return event_base_loop(lp->base, flags) == 0 && !event_base_got_break(lp->base) &&
	       !event_base_got_exit(lp->base);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* With an RDMA READ (or a Send the socket held) of its own out, the loop
 * knows an answer is a round trip away: it polls for it (libevent without
 * waiting) up to spin_us, instead of sleeping and paying a context switch
 * and a wake-up for it, the READ path's extra message each way. Nothing
 * out, or no answer in time: it sleeps as before, so an idle loop or a
 * silent host costs no CPU. false: the loop is stopping. */
static bool spin_pass(struct tr_loop *lp, uint32_t spin_us)
{
	uint64_t end = now_us() + spin_us;
	uint32_t out = lp->sq_out;
	do {
		if (!loop_pass(lp, EVLOOP_NONBLOCK))
			return false;
	} while (lp->sq_out == out && now_us() < end);
	if (lp->sq_out != out) {
		lp->polled++;
		return true;
	}
	lp->poll_slept++;
	return loop_pass(lp, EVLOOP_ONCE);
}

static void run_loop(struct tr_loop *lp)
{
	uint32_t spin_us = lp->tr->o->spin_us;
	if (!spin_us) {
		event_base_dispatch(lp->base);
		return;
	}
	for (bool on = true; on;)
		on = lp->sq_out ? spin_pass(lp, spin_us) : loop_pass(lp, EVLOOP_ONCE);
}

static void *loop_main(void *arg)
{
	struct tr_loop *lp = arg;
	char name[16];
	snprintf(name, sizeof(name), "nvmet-loop-%u", lp->idx);
	pthread_setname_np(pthread_self(), name); /* for ps -L, top -H, make nvmf-bench */
	/* On this thread, which runs the base: the completions it raises
	 * reach on_cq_event without the channel's eventfd. Fails only for
	 * memory, at start. */
	if (iw_comp_channel_set_loop(lp->cc, lp->base, on_cq_event, lp)) {
		fprintf(stderr, "iwarp-nvmet: loop %u: completion channel: out of memory\n", lp->idx);
		exit(1);
	}
	run_loop(lp);
	loop_close(lp);
	tgt_ns_buffers_free();
	lp->cpu_s = thread_cpu_s();
	return NULL;
}

static int loop_init(struct tr *tr, unsigned i)
{
	struct tr_loop *lp = &tr->loops[i];
	lp->tr = tr;
	lp->idx = i;
	lp->mail_tail = &lp->mail;
	pthread_mutex_init(&lp->mlock, NULL);
	lp->base = event_base_new();
	lp->mfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return lp->base && lp->mfd >= 0 ? 0 : -1;
}

static void loop_free(struct tr_loop *lp)
{
	for (int i = 0; i < LOOP_EVS; i++)
		if (lp->evs[i])
			event_free(lp->evs[i]);
	for (struct tr_msg *m = mail_take(lp), *next; m; m = next) {
		next = m->next;
		if (m != &lp->stop)
			free(m);
	}
	iw_destroy_srq(lp->srq);
	iw_dereg_mr(lp->rmr);
	iw_dereg_mr(lp->dmr);
	iw_destroy_cq(lp->rcq);
	iw_destroy_cq(lp->scq);
	iw_destroy_comp_channel(lp->cc);
	free(lp->rbufs);
	free(lp->dbufs);
	free(lp->slots);
	if (lp->mfd >= 0)
		close(lp->mfd);
	pthread_mutex_destroy(&lp->mlock);
}

/* Per loop: what it served and the CPU time of its thread (iwarp-nvmet(1)). */
static void summary(const struct tr *tr)
{
	for (uint32_t i = 0; i < tr->nloops; i++) {
		const struct tr_loop *lp = &tr->loops[i];
		printf("iwarp-nvmet: loop %u: %" PRIu64 " commands, %" PRIu64 " queues (%" PRIu64
		       " I/O), %" PRIu64 " writes by RDMA READ, %" PRIu64 " in place, %" PRIu64
		       " staged, %" PRIu64 " answers polled, %" PRIu64 " polls slept, %.3f s CPU\n",
		       i, lp->cmds, lp->queues, lp->io_queues, lp->write_reads, lp->in_place,
		       lp->staged, lp->polled, lp->poll_slept, lp->cpu_s);
	}
	fflush(stdout);
}

static void teardown(struct tr *tr, uint32_t started)
{
	for (uint32_t i = 0; i < started; i++) {
		tr->loops[i].stop.kind = M_STOP;
		mail(&tr->loops[i], &tr->loops[i].stop);
	}
	for (uint32_t i = 0; i < started; i++)
		pthread_join(tr->loops[i].thread, NULL);
	if (started)
		summary(tr);
	for (uint32_t i = 0; i < tr->nloops && tr->loops[i].base; i++)
		loop_free(&tr->loops[i]);
	iw_cm_destroy_channel(tr->cm);
	for (uint32_t i = 0; i < TGT_MAX_NS; i++)
		iw_dereg_mr(tr->ns_mr[i]);
	iw_dealloc_pd(tr->pd);
	iw_context_free(tr->ctx);
	for (uint32_t i = 0; i < tr->nloops; i++)
		if (tr->loops[i].base)
			event_base_free(tr->loops[i].base);
	free(tr->loops);
	pthread_mutex_destroy(&tr->cm_lock);
}

/* What one controller's queues may take, granted by Number of Queues:
 * I/O queue q is served by loop (q - 1) mod N, each loop by half its
 * slots, of which an admin queue may take NVMF_AQ_DEPTH (those take the
 * loops in turn). A host learns mqes from CAP and sizes its queues up to
 * it, so each granted queue is counted at mqes entries. */
static int fit_queues(struct tr *tr)
{
	struct tgt_cfg *cfg = &tr->t->cfg;
	uint32_t cap = tr->nslots / 2, per_loop = 0;
	if (cap >= NVMF_AQ_DEPTH + (uint32_t)cfg->mqes)
		per_loop = (cap - NVMF_AQ_DEPTH) / cfg->mqes;
	if (per_loop == 0) {
		fprintf(stderr,
			"iwarp-nvmet: --slots %u holds no I/O queue of %u entries beside an admin "
			"queue: give at least --slots %u, or a smaller --queue-size\n",
			tr->nslots, cfg->mqes, 2 * (NVMF_AQ_DEPTH + cfg->mqes));
		return -1;
	}
	uint64_t fit = (uint64_t)per_loop * tr->nloops;
	cfg->nq_fit = (uint16_t)(fit < cfg->max_qid ? fit : cfg->max_qid);
	if (cfg->nq_fit < cfg->max_qid)
		fprintf(stderr,
			"iwarp-nvmet: %u loop%s of %u slots serve %u I/O queues of %u entries per "
			"controller: granting %u, not %u (--queues); more takes --slots or --loops\n",
			tr->nloops, tr->nloops == 1 ? "" : "s", tr->nslots, cfg->nq_fit, cfg->mqes,
			cfg->nq_fit, cfg->max_qid);
	return 0;
}

static int setup(struct tr *tr)
{
	for (uint32_t i = 0; i < tr->nloops; i++)
		if (loop_init(tr, i))
			return -1;
	if (setup_context(tr) || setup_in_place(tr))
		return -1;
	for (uint32_t i = 0; i < tr->nloops; i++)
		if (setup_loop_verbs(&tr->loops[i]) || setup_loop_events(&tr->loops[i]))
			return -1;
	return 0;
}

/* SIGINT and SIGTERM are taken by sigwait on the main thread; the loop
 * threads start with them blocked. */
static void block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int tr_run(struct tgt *t, const struct tr_opts *o)
{
	struct tr tr = {.t = t, .o = o, .nslots = o->slots, .nloops = o->loops};
	sigset_t set;
	uint32_t started = 0;
	int rc = 1, sig;
	t->tp = &tr;
	t->ctrl_dead = ctrl_dead;
	t->now_ms = now_ms();
	pthread_mutex_init(&tr.cm_lock, NULL);
	block_signals(&set);
	if (fit_queues(&tr))
		goto out;
	tr.loops = calloc(tr.nloops, sizeof(*tr.loops));
	if (!tr.loops || setup(&tr)) {
		fprintf(stderr, "iwarp-nvmet: setting up libiwarp: %s\n", strerror(errno));
		goto out;
	}
	for (; started < tr.nloops; started++)
		if (pthread_create(&tr.loops[started].thread, NULL, loop_main, &tr.loops[started])) {
			fprintf(stderr, "iwarp-nvmet: starting loop %u failed\n", started);
			goto out;
		}
	/* CM calls from here wait for loop 0, which runs now. */
	if (setup_listen(&tr))
		goto out;
	sigwait(&set, &sig);
	rc = 0;
out:
	if (tr.loops)
		teardown(&tr, started);
	return rc;
}
