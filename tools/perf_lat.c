/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The latency ping-pongs, as perftest's (src/perftest_resources.c):
 *  - run_iter_lat_write: each side RDMA-WRITEs size octets to the other's
 *    buffer (rem_dest.vaddr), the last octet holding its count of writes
 *    (modulo 256), and waits for the peer's count in the last octet of its
 *    own buffer (my_dest.vaddr + size - 1). The server writes first, the
 *    client waits first; each write is signaled and its completion awaited
 *    before the next turn. With -a no exchange separates the sizes: the
 *    next size's octet lies beyond all earlier writes, so it starts at 0.
 *  - run_iter_lat_send: the client sends first; a side takes one receive
 *    completion, reposts while fewer than iters were posted (rx_depth were
 *    posted before the run), then sends.
 *  - run_iter_lat (read_lat): the client posts an RDMA READ of size
 *    octets and awaits its completion, over and over; the server only
 *    answers. A sample is a whole round trip (print_report_lat: a READ's
 *    rtt_factor is 1). Then the client RDMA-WRITEs an end mark into the
 *    octet the server watches (our addition: perftest's server waits in a
 *    handshake instead, and cannot drive a polled connection there).
 *  - The time of each post is kept (tposted); a sample is the time between
 *    consecutive posts, halved (print_report_lat: a round trip over 2).
 * The waits spin with sched_yield(): an incoming WRITE raises no completion,
 * and a sleeping waiter would add the wake-up to every sample. Busy-polling
 * (--poll, the latency tests' default) they spin without yielding and
 * drive the connection themselves: iw_progress while waiting for an octet,
 * iw_poll_cq for a completion (the context runs to completion).
 */
#include <sched.h>
#include <string.h>

#include "perf.h"

struct lat_run {
	struct perf_sess *s;
	uint64_t size, iters;
	bool timed;
	bool poll; /* busy-poll, driving the connection */
	double deadline, last_check, last_move, stall;
	struct perf_samples posts;
	struct perf_progress prog;
};

/* Liveness and stall checks, every 50 ms of waiting. */
static int check(struct lat_run *l, double now)
{
	if (now - l->last_check < 0.05)
		return 0;
	l->last_check = now;
	if (!perf_alive(l->s)) {
		perf_err(l->s, "the peer closed a connection during the test");
		return -1;
	}
	if (now - l->last_move > l->stall) {
		perf_err(l->s, "no reply for %.0f s: giving up", l->stall);
		return -1;
	}
	return 0;
}

/* Between two looks: receive on this thread, or let the loop thread run. */
static void idle(struct lat_run *l, bool progress)
{
	if (!l->poll)
		sched_yield();
	else if (progress)
		iw_progress(l->s->ctx);
}

/* 1: the duration ran out while waiting. The clock is read only after a
 * look that found nothing, as the raw TCP loop reads it only when recv(2)
 * found nothing: a message that came during idle() goes on to its answer
 * without one (a clock reading is 15-40 ns, about 1 % of a 4 KiB half
 * round trip). */
static int wait_octet(struct lat_run *l, volatile uint8_t *p, uint8_t want)
{
	for (;;) {
		if (*p == want)
			return 0;
		idle(l, true);
		if (*p == want)
			return 0;
		double now = perf_now();
		if (l->timed && now >= l->deadline)
			return 1;
		/* The peer's last write may land just before its disconnect:
		 * look once more before calling the loss a failure. */
		if (check(l, now))
			return *p == want ? 0 : -1;
	}
}

/* One completion if there is one: 0 it succeeded, -1 it failed (or the
 * poll did), 1 none. */
static int take_wc(struct lat_run *l, struct iw_cq *cq, const char *what)
{
	struct iw_wc wc;
	int n = iw_poll_cq(cq, 1, &wc);
	if (n <= 0)
		return n < 0 ? -1 : 1;
	if (wc.status == IW_WC_SUCCESS)
		return 0;
	bool gone = !perf_alive(l->s);
	perf_err(l->s, "%s completion: %s (TERMINATE: %s)%s", what, iw_wc_status_str(wc.status),
		 iw_term_str(wc.vendor_err), gone ? ": the peer went away" : "");
	return -1;
}

/* As wait_octet, the clock only after a look found nothing. */
static int wait_wc(struct lat_run *l, struct iw_cq *cq, const char *what)
{
	bool last = false;
	for (;;) {
		int rc = take_wc(l, cq, what);
		if (rc <= 0)
			return rc;
		if (last)
			return -1;
		idle(l, false);
		if ((rc = take_wc(l, cq, what)) <= 0)
			return rc;
		double now = perf_now();
		if (l->timed && now >= l->deadline + 1 && !strcmp(what, "receive"))
			return 1;
		/* As in wait_octet: one more look after a loss is seen. */
		if (check(l, now))
			last = true;
	}
}

/* now: the time of the post, the caller's clock reading (one per message,
 * as the raw TCP loop's). */
static int post_at(struct lat_run *l, enum iw_wr_opcode op, uint32_t len, uint64_t off,
		   unsigned flags, double now)
{
	struct perf_sess *s = l->s;
	struct iw_sge sge = {.addr = (uintptr_t)perf_region_local(s, 0), .length = len,
			     .lkey = s->mr->lkey};
	struct iw_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = op,
				.send_flags = IW_SEND_SIGNALED | flags};
	wr.wr.rdma.remote_addr = s->rem[0].vaddr + off;
	wr.wr.rdma.rkey = s->rem[0].rkey;
	struct iw_send_wr *bad;
	if (perf_samples_add(&l->posts, now))
		return -1;
	int rc = iw_post_send(s->ids[0]->qp, &wr, &bad);
	if (rc)
		perf_err(s, "posting: %s", strerror(rc));
	return rc ? -1 : 0;
}

/* Small Writes and Sends go inline, as perftest's latency tools post
 * them (their default inline sizes): the data is copied at the post, with
 * no registration to look up, as a socket's send(2) copies it. */
#define LAT_INLINE_WRITE 220
#define LAT_INLINE_SEND 236

static unsigned inline_flag(enum iw_wr_opcode op, uint64_t size)
{
	if (op == IW_WR_RDMA_WRITE)
		return size <= LAT_INLINE_WRITE ? IW_SEND_INLINE : 0;
	return op == IW_WR_SEND && size <= LAT_INLINE_SEND ? IW_SEND_INLINE : 0;
}

static int post(struct lat_run *l, enum iw_wr_opcode op, double now)
{
	return post_at(l, op, (uint32_t)l->size, 0, inline_flag(op, l->size), now);
}

static bool more(const struct lat_run *l, uint64_t cnt, double now)
{
	return l->timed ? now < l->deadline : cnt < l->iters;
}

static void start(struct lat_run *l, struct perf_sess *s, uint64_t size)
{
	memset(l, 0, sizeof(*l));
	l->s = s;
	l->size = size;
	l->iters = s->o.iters;
	l->timed = s->o.duration > 0;
	l->poll = perf_polling(&s->o);
	l->stall = s->o.timeout > 30 ? s->o.timeout : 30;
	l->last_move = perf_now();
	l->deadline = l->last_move + s->o.duration;
	perf_progress_start(&l->prog, s, size);
}

/* Samples from the post times: consecutive differences over div (2: half
 * round trips), in us. */
static int finish_by(struct lat_run *l, struct perf_result *r, double div)
{
	struct perf_samples d = {0};
	for (size_t i = 1; i < l->posts.n; i++)
		if (perf_samples_add(&d, (l->posts.v[i] - l->posts.v[i - 1]) * 1e6 / div)) {
			perf_samples_free(&d);
			return -1;
		}
	*r = (struct perf_result){.bytes = l->size, .iters = l->posts.n, .msgs = d.n};
	perf_lat_summary(&d, r);
	perf_samples_free(&d);
	perf_samples_free(&l->posts);
	return 0;
}

static int finish(struct lat_run *l, struct perf_result *r)
{
	return finish_by(l, r, 2);
}

int perf_lat_write(struct perf_sess *s, uint64_t size, struct perf_result *r)
{
	struct lat_run l;
	start(&l, s, size);
	volatile uint8_t *mine = perf_region_local(s, 0) + size - 1;
	volatile uint8_t *theirs = perf_region_remote(s, 0) + size - 1;
	uint64_t scnt = 0, rcnt = 0;
	for (;;) {
		if ((l.timed || rcnt < l.iters) && !(scnt < 1 && s->server)) {
			int w = wait_octet(&l, theirs, (uint8_t)++rcnt);
			if (w > 0)
				break; /* -D ran out */
			if (w < 0)
				goto fail;
		}
		double now = perf_now();
		if (!more(&l, scnt, now))
			break;
		*mine = (uint8_t)++scnt;
		if (post(&l, IW_WR_RDMA_WRITE, now) || wait_wc(&l, s->scq, "write") < 0)
			goto fail;
		l.last_move = now;
		perf_progress_tick(&l.prog, scnt);
		if (!l.timed && scnt == l.iters && rcnt == l.iters)
			break;
	}
	return finish(&l, r);
fail:
	perf_samples_free(&l.posts);
	return -1;
}

static int repost(struct lat_run *l, uint64_t rcnt, uint32_t rx)
{
	if (!l->timed && rcnt + rx > l->iters)
		return 0;
	return perf_post_recvs(l->s, 0, 1, l->size);
}

int perf_lat_send(struct perf_sess *s, uint64_t size, struct perf_result *r)
{
	struct lat_run l;
	start(&l, s, size);
	uint32_t rx = perf_rx_depth(&s->o);
	uint64_t scnt = 0, rcnt = 0;
	for (;;) {
		bool go_recv = (l.timed || rcnt < l.iters) && !(scnt < 1 && !s->server);
		/* The receive a message took is posted again after the answer
		 * went out, off the round trip's path, while others are posted
		 * (rx > 1); with one receive, before the answer (the peer's
		 * next message could otherwise find none). */
		bool after = false;
		if (go_recv) {
			int w = wait_wc(&l, s->rcq, "receive");
			if (w > 0)
				break;
			after = rx > 1;
			rcnt++;
			if (w < 0 || (!after && repost(&l, rcnt, rx)))
				goto fail;
		}
		double now = perf_now();
		if (!more(&l, scnt, now))
			break;
		scnt++;
		if (post(&l, IW_WR_SEND, now) || wait_wc(&l, s->scq, "send") < 0 ||
		    (after && repost(&l, rcnt, rx)))
			goto fail;
		l.last_move = now;
		perf_progress_tick(&l.prog, scnt);
		if (!l.timed && scnt == l.iters && (s->server || rcnt == l.iters))
			break;
	}
	return finish(&l, r);
fail:
	perf_samples_free(&l.posts);
	return -1;
}

/* The octet of the server's region that the end mark of size number idx
 * goes to, and its value (never 0, the region's initial content). */
static uint64_t mark_off(uint64_t size)
{
	return size - 1;
}

static uint8_t mark_of(uint32_t idx)
{
	return (uint8_t)(idx % 255 + 1);
}

int perf_lat_read(struct perf_sess *s, uint64_t size, uint32_t idx, struct perf_result *r)
{
	struct lat_run l;
	start(&l, s, size);
	double now = perf_now();
	for (uint64_t n = 0; more(&l, n, now); n++) {
		if (post(&l, IW_WR_RDMA_READ, now) || wait_wc(&l, s->scq, "read") < 0)
			goto fail;
		now = perf_now();
		l.last_move = now;
		perf_progress_tick(&l.prog, n + 1);
	}
	/* The last sample ends with the last completion. */
	if (perf_samples_add(&l.posts, now))
		goto fail;
	int rc = finish_by(&l, r, 1);
	/* The end mark: inline, so the octet may change at once. */
	*perf_region_local(s, 0) = mark_of(idx);
	if (!rc && (post_at(&l, IW_WR_RDMA_WRITE, 1, mark_off(size), IW_SEND_INLINE,
				  perf_now()) ||
		    wait_wc(&l, s->scq, "end mark") < 0))
		rc = -1;
	/* finish_by freed the samples; the end mark's post stamped a new one. */
	perf_samples_free(&l.posts);
	if (rc)
		return -1;
	/* finish_by counts the posts: the extra time stamp is no message. */
	r->iters = r->msgs;
	return 0;
fail:
	perf_samples_free(&l.posts);
	return -1;
}

int perf_lat_read_serve(struct perf_sess *s, uint64_t size, uint32_t idx)
{
	struct lat_run l;
	start(&l, s, size);
	l.timed = false;  /* the client keeps the time */
	l.stall = 1e30;   /* waits as long as the client's run; a lost peer still ends it */
	volatile uint8_t *mark = perf_region_remote(s, 0) + mark_off(size);
	return wait_octet(&l, mark, mark_of(idx)) ? -1 : 0;
}
