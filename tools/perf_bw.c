/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bandwidth loops: RDMA WRITE, READ or SEND from every QP in turn, keep
 * tx_depth of them in flight, and (send tests) receive with credits.
 *
 * What is mirrored from perftest (src/perftest_resources.c):
 *  - run_iter_bw: per QP post while scnt - ccnt < tx_depth; only every
 *    cq_mod-th WR and the last one are signaled; addresses, local and
 *    remote, advance by INC(size) = size rounded up to the cache line and
 *    wrap inside cycle_buffer when size <= cycle_buffer / 2
 *    (increase_loc_addr, increase_rem_addr), so the peer's buffer of
 *    max(size, cycle_buffer) is never overrun.
 *  - Send over iWARP has no receiver-not-ready retry, so ib_send_bw uses
 *    credits (send_rcredit, ctx_alloc_credit, ctx_set_credit_wqes): the
 *    receiver posts rx_depth receives, reposts one per completion while
 *    fewer than iters were posted (all of them with -D), and every
 *    rx_depth/3 receives RDMA-WRITEs its count of receives (a u32 in its
 *    own byte order) to the sender's credit word for that QP, whose address
 *    and rkey travel in pingpong_dest; the sender does not post while
 *    scnt + 1 - credit >= rx_depth (run_iter_bw, run_iter_bw_server,
 *    run_iter_bi).
 *  - The receiver's clock starts at its first receive (set_on_first_rx_packet).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define CREDIT_TAG (1ull << 63)
#define SEQ_MASK ((1ull << 48) - 1)

struct bw_qp {
	uint64_t scnt, ccnt, last_sig; /* posted, completed, after the last signaled */
	uint64_t rcnt, rposted;
	uint32_t credits_out;
	uint64_t loc, rem;             /* the next addresses */
};

/* One application thread's share: all the QPs, or with --threads the QPs
 * of one loop and that loop's CQs. */
struct bw_run {
	struct perf_sess *s;
	uint32_t qp[PERF_MAX_QPS], nq;  /* the QPs it drives */
	struct iw_cq *scq, *rcq;
	struct iw_comp_channel *cc;
	bool lead;                      /* the calling thread: watches the CM channel */
	int rc;
	struct perf_cpu_thread cpu;     /* a thread of its own: its CPU at the end */
	uint32_t grp;                   /* its loop */
	const cpu_set_t *pin;           /* --pin: the CPUs to pick from; NULL: stay */
	uint64_t size, iters;
	bool tx, rx, timed, armed;
	double deadline, t0, t_end, rx_t0, rx_end, last_move;
	uint32_t cq_mod, inc, per_cycle, rx_depth, credit_every, sq_cap;
	struct bw_qp q[PERF_MAX_QPS];
	uint64_t tx_msgs, rx_msgs;
	struct perf_trace trace;
	struct perf_progress prog;
};

static uint32_t inc_of(uint64_t size, uint32_t cl)
{
	if (size <= cl)
		return cl;
	return (uint32_t)((size + cl - 1) / cl * cl);
}

static enum iw_wr_opcode opcode(enum perf_test t)
{
	return t == PT_READ ? IW_WR_RDMA_READ : t == PT_SEND ? IW_WR_SEND : IW_WR_RDMA_WRITE;
}

static volatile uint32_t *credit_word(struct bw_run *b, uint32_t i)
{
	return &b->s->ctrl[b->s->nqp + i];
}

/* The receiver's count of our messages on QP i. A count above what we
 * have sent is its last credit of the previous size, landing after the
 * reset that follows the hs (perftest resets at the same point and races
 * the same write: the hs travels on another connection). Taken at face
 * value it wrapped the window below and stopped the sender for good
 * (tests/perf.sh, send -a as perftest, in a loaded ASan make distcheck).
 * Nothing of this size has been counted yet then. */
static uint32_t credit(struct bw_run *b, uint32_t i)
{
	uint32_t w = *credit_word(b, i);
	return (int32_t)(w - (uint32_t)b->q[i].scnt) > 0 ? 0 : w;
}

/* SEND: the receiver's credits allow no further message on QP i. */
static bool no_credit(struct bw_run *b, uint32_t i)
{
	return (uint32_t)(b->q[i].scnt + 1) - credit(b, i) >= b->rx_depth;
}

/* More to post on q: up to the count, or until the deadline and then
 * one more if the last one posted was unsignaled. Messages after the
 * last signaled one complete unseen and were not counted: a thread
 * descheduled for the last 50 ms before the deadline (next_wr) left up to
 * cq_mod - 1 of them sent but not in the result (the discard peer,
 * perf_sink.c, counted 59 more than the client at load average 6). */
static bool more_to_post(const struct bw_run *b, const struct bw_qp *q, double now)
{
	if (!b->timed)
		return q->scnt < b->iters;
	return now < b->deadline || q->scnt != q->last_sig;
}

static bool may_post(struct bw_run *b, uint32_t i, double now)
{
	struct bw_qp *q = &b->q[i];
	if (!more_to_post(b, q, now))
		return false;
	if (q->scnt - q->ccnt >= b->s->o.tx_depth)
		return false;
	return b->s->o.test != PT_SEND || !no_credit(b, i);
}

/* The next data WR of QP i into wr and sge, counted as posted. */
static void next_wr(struct bw_run *b, uint32_t i, struct iw_send_wr *wr, struct iw_sge *sge)
{
	struct perf_sess *s = b->s;
	struct bw_qp *q = &b->q[i];
	/* With -D the last WR is unknown: near the end signal them all, so the
	 * count of completed ones stays exact. */
	bool sig = q->scnt % b->cq_mod == b->cq_mod - 1 ||
		   (!b->timed && q->scnt == b->iters - 1) ||
		   (b->timed && perf_now() > b->deadline - 0.05);
	*sge = (struct iw_sge){.addr = q->loc, .length = (uint32_t)b->size, .lkey = s->mr->lkey};
	*wr = (struct iw_send_wr){.wr_id = (uint64_t)i << 48 | q->scnt, .sg_list = sge,
				  .num_sge = 1, .opcode = opcode(s->o.test),
				  .send_flags = sig ? IW_SEND_SIGNALED : 0};
	wr->wr.rdma.remote_addr = q->rem;
	wr->wr.rdma.rkey = s->rem[i].rkey;
	q->scnt++;
	if (sig)
		q->last_sig = q->scnt;
	if (b->per_cycle) {
		uint64_t base_l = (uintptr_t)perf_region_local(s, i);
		bool wrap = q->scnt % b->per_cycle == 0;
		q->loc = wrap ? base_l : q->loc + b->inc;
		q->rem = wrap ? s->rem[i].vaddr : q->rem + b->inc;
	}
}

/* Timed SEND, past the deadline, the last WR posted unsignaled and no
 * credit left to post a signaled one: the receiver may have finished its
 * own run and will send no more credits, so waiting for one hung both
 * ends (tests/perf.sh, send -b --loops 2 -q 4 --threads -D 0.3, once in
 * a loaded make check: the client "no progress for 30 s"). */
static bool fence_due(struct bw_run *b, uint32_t i, double now)
{
	const struct bw_qp *q = &b->q[i];
	if (!b->timed || now < b->deadline || q->scnt == q->last_sig || b->s->o.test != PT_SEND)
		return false;
	return no_credit(b, i);
}

/* Close the count instead with a signaled zero-length RDMA WRITE, which
 * takes no receive and so needs no credit: it completes after every WR
 * before it, and carries the last data WR's number, so poll_send counts
 * those as done and the WRITE itself as nothing. */
static int post_fence(struct bw_run *b, uint32_t i)
{
	struct bw_qp *q = &b->q[i];
	struct iw_send_wr wr = {.wr_id = (uint64_t)i << 48 | (q->scnt - 1),
				.opcode = IW_WR_RDMA_WRITE, .send_flags = IW_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = b->s->rem[i].vaddr;
	wr.wr.rdma.rkey = b->s->rem[i].rkey;
	struct iw_send_wr *bad;
	int rc = iw_post_send(b->s->ids[i]->qp, &wr, &bad);
	if (rc) {
		perf_err(b->s, "posting the last WR on QP %u: %s", i, strerror(rc));
		return -1;
	}
	q->last_sig = q->scnt;
	return 1;
}

/* As many WRs as QP i may take, up to --post-list of them chained in one
 * iw_post_send (perftest's -l): the library queues a chain under one lock
 * and hands it to one writev, so a sender pays a system call per list,
 * not per message. Returns how many, or -1. */
static int post_data(struct bw_run *b, uint32_t i, double now)
{
	struct iw_send_wr wr[PERF_MAX_POST_LIST];
	struct iw_sge sge[PERF_MAX_POST_LIST];
	uint32_t n = 0, max = b->s->o.post_list ? b->s->o.post_list : 1;
	if (fence_due(b, i, now))
		return post_fence(b, i);
	for (; n < max && may_post(b, i, now); n++) {
		next_wr(b, i, &wr[n], &sge[n]);
		if (n)
			wr[n - 1].next = &wr[n];
	}
	struct iw_send_wr *bad;
	int rc = n ? iw_post_send(b->s->ids[i]->qp, wr, &bad) : 0;
	if (rc) {
		perf_err(b->s, "posting on QP %u: %s", i, strerror(rc));
		return -1;
	}
	return (int)n;
}

/* The receiver's credit: how many receives it has seen on QP i. Inline, so
 * the word can change before the previous write has left. */
static int post_credit(struct bw_run *b, uint32_t i)
{
	struct perf_sess *s = b->s;
	s->ctrl[i] = (uint32_t)b->q[i].rcnt;
	struct iw_sge sge = {.addr = (uintptr_t)&s->ctrl[i], .length = 4,
			     .lkey = s->ctrl_mr->lkey};
	struct iw_send_wr wr = {.wr_id = CREDIT_TAG | (uint64_t)i << 48, .sg_list = &sge,
				.num_sge = 1, .opcode = IW_WR_RDMA_WRITE,
				.send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE};
	wr.wr.rdma.remote_addr = s->rem[i].vaddr;
	wr.wr.rdma.rkey = s->rem[i].rkey;
	struct iw_send_wr *bad;
	int rc = iw_post_send(s->ids[i]->qp, &wr, &bad);
	if (rc) {
		perf_err(s, "posting a credit on QP %u: %s", i, strerror(rc));
		return -1;
	}
	b->q[i].credits_out++;
	return 0;
}

static int bad_wc(struct bw_run *b, const struct iw_wc *wc, const char *what)
{
	if (b->lead)
		perf_alive(b->s); /* a flush usually means the peer went: say so */
	perf_err(b->s, "%s completion on QP %u: %s (TERMINATE: %s)%s", what,
		 (unsigned)((wc->wr_id >> 48) & 0x7fff), iw_wc_status_str(wc->status),
		 iw_term_str(wc->vendor_err), b->s->dead || b->s->data_dead ? ": the peer went away" : "");
	return -1;
}

static int poll_send(struct bw_run *b, bool *moved)
{
	struct iw_wc wc[32];
	int n = iw_poll_cq(b->scq, 32, wc);
	double now = n > 0 ? perf_now() : 0;
	for (int k = 0; k < n; k++) {
		if (wc[k].status != IW_WC_SUCCESS)
			return bad_wc(b, &wc[k], "send");
		uint32_t i = (uint32_t)((wc[k].wr_id >> 48) & 0x7fff);
		if (wc[k].wr_id & CREDIT_TAG) {
			b->q[i].credits_out--;
			continue;
		}
		uint64_t done = (wc[k].wr_id & SEQ_MASK) + 1;
		b->tx_msgs += done - b->q[i].ccnt;
		b->q[i].ccnt = done;
		b->t_end = now;
		*moved = true;
	}
	return n < 0 ? -1 : 0;
}

static int repost(struct bw_run *b, uint32_t i)
{
	struct bw_qp *q = &b->q[i];
	if (!b->timed && q->rposted >= b->iters)
		return 0;
	q->rposted++;
	return perf_post_recvs(b->s, i, 1, b->size);
}

static int poll_recv(struct bw_run *b, bool *moved)
{
	struct iw_wc wc[32];
	int n = iw_poll_cq(b->rcq, 32, wc);
	double now = n > 0 ? perf_now() : 0;
	for (int k = 0; k < n; k++) {
		if (wc[k].status != IW_WC_SUCCESS)
			return bad_wc(b, &wc[k], "receive");
		uint32_t i = (uint32_t)wc[k].wr_id;
		if (!b->rx_msgs++) {
			b->rx_t0 = now;
			if (b->timed && !b->tx)
				b->deadline = now + b->s->o.duration;
		}
		b->rx_end = now;
		b->q[i].rcnt++;
		*moved = true;
		if (repost(b, i))
			return -1;
		if ((b->q[i].rcnt % b->rx_depth) % b->credit_every)
			continue;
		/* Room for the credit: wait out our own sends if need be. */
		while (b->q[i].credits_out + (b->q[i].scnt - b->q[i].ccnt) + 1 >= b->sq_cap)
			if (poll_send(b, moved))
				return -1;
		if (post_credit(b, i))
			return -1;
	}
	return n < 0 ? -1 : 0;
}

/* Done when every WR posted is counted. Timed, that also needs the last
 * one posted to be signaled (more_to_post): a SEND run that the receiver's
 * credits held back after the deadline, with unsignaled WRs behind its
 * last signaled one, stopped there, sent but uncounted (the discard peer
 * counted 56 more than this client reported, once in tests/perf.sh). */
static bool tx_done(const struct bw_run *b, double now)
{
	if (b->timed && now < b->deadline)
		return false;
	for (uint32_t k = 0; k < b->nq; k++) {
		const struct bw_qp *q = &b->q[b->qp[k]];
		if (b->timed ? more_to_post(b, q, now) || q->ccnt < q->last_sig
			     : q->ccnt < b->iters)
			return false;
	}
	return true;
}

static bool rx_done(const struct bw_run *b, double now)
{
	if (b->timed)
		return b->rx_msgs && now >= b->deadline;
	return b->rx_msgs >= b->iters * b->nq;
}

static bool credits_done(const struct bw_run *b)
{
	for (uint32_t k = 0; k < b->nq; k++)
		if (b->q[b->qp[k]].credits_out)
			return false;
	return true;
}

/* Idle rounds spent yielding before sleeping. A receiver that does not
 * busy-poll sleeps at once, as a blocking application does: its loop
 * thread, on the same CPU, receives for it (IW_QP_CREATE_LOOP_RX), and
 * every round spent yielding takes CPU from that thread (64 KiB SEND:
 * 0.71-0.81x raw TCP with 16 rounds, 0.94-1.20x with none). A sender's
 * rounds save it the wake-ups of frequent completions. */
static int spin_rounds(const struct bw_run *b)
{
	return !b->tx && !perf_polling(&b->s->o) ? 0 : 16;
}

/* Nothing moved: yield while credits are awaited (they come by memory) or
 * for a few rounds, then arm the CQs and go round once more (a completion
 * that raced the arming is found by that round's polls), then sleep on the
 * completion channel: on two cores a spinning poller starves the loop
 * threads that move the data. */
static int idle(struct bw_run *b, int rounds, bool credit_bound)
{
	if (credit_bound || rounds < spin_rounds(b)) {
		sched_yield();
		return 0;
	}
	if (!b->armed) {
		b->armed = true;
		return iw_req_notify_cq(b->scq, 0) || iw_req_notify_cq(b->rcq, 0) ? -1 : 0;
	}
	struct pollfd p = {.fd = b->cc->fd, .events = POLLIN};
	if (poll(&p, 1, 5) == 1) {
		struct iw_cq *ecq;
		void *ectx;
		if (iw_get_cq_event(b->cc, &ecq, &ectx) == 0)
			iw_ack_cq_events(ecq, 1);
		b->armed = false;
	}
	return 0;
}

static bool credit_bound(struct bw_run *b, double now)
{
	if (!b->tx || b->s->o.test != PT_SEND)
		return false;
	for (uint32_t k = 0; k < b->nq; k++) {
		uint32_t i = b->qp[k];
		struct bw_qp *q = &b->q[i];
		if (more_to_post(b, q, now) && q->scnt - q->ccnt < b->s->o.tx_depth &&
		    no_credit(b, i))
			return true;
	}
	return false;
}

static int step(struct bw_run *b, double now, bool *moved)
{
	for (uint32_t k = 0; b->tx && k < b->nq; k++)
		for (int n; (n = post_data(b, b->qp[k], now)) != 0; *moved = true)
			if (n < 0)
				return -1;
	if (poll_send(b, moved))
		return -1;
	if (b->rx && poll_recv(b, moved))
		return -1;
	return 0;
}

/* A connection went: what had arrived before still counts, so take it
 * and fail only if the run is then not complete. */
static int last_round(struct bw_run *b)
{
	bool moved = false;
	double now = perf_now();
	if (!step(b, now, &moved) && (!b->tx || tx_done(b, now)) && (!b->rx || rx_done(b, now)))
		return 0;
	perf_err(b->s, "the peer closed a connection during the test");
	return -1;
}

/* Only the lead thread reads the CM channel; the others see what it
 * found. */
static bool peer_alive(struct bw_run *b)
{
	if (b->lead)
		return perf_alive(b->s);
	return !__atomic_load_n(&b->s->dead, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&b->s->data_dead, __ATOMIC_RELAXED);
}

static int loop(struct bw_run *b)
{
	struct perf_sess *s = b->s;
	int rounds = 0;
	double stall = s->o.timeout > 30 ? s->o.timeout : 30, last_check = 0;
	b->t0 = b->last_move = perf_now();
	b->deadline = b->t0 + s->o.duration;
	for (;;) {
		double now = perf_now();
		bool moved = false;
		if (step(b, now, &moved))
			return -1;
		bool txd = !b->tx || tx_done(b, now), rxd = !b->rx || rx_done(b, now);
		if (txd && rxd && credits_done(b))
			return 0;
		perf_trace_add(&b->trace, now, b->tx ? b->tx_msgs : b->rx_msgs);
		if (b->lead)
			perf_progress_tick(&b->prog, b->tx ? b->tx_msgs : b->rx_msgs);
		if (moved) {
			rounds = 0;
			b->last_move = now;
			continue;
		}
		if (now - last_check > 0.1) {
			last_check = now;
			if (!peer_alive(b))
				return last_round(b);
			if (now - b->last_move > stall) {
				perf_err(s, "no progress for %.0f s: giving up", stall);
				return -1;
			}
		}
		if (idle(b, ++rounds, credit_bound(b, now)))
			return -1;
	}
}

static void setup(struct bw_run *b, struct perf_sess *s, uint64_t size, bool tx, bool rx,
		  uint32_t g)
{
	memset(b, 0, sizeof(*b));
	b->s = s;
	for (uint32_t i = 0; i < s->nqp; i++)
		if (s->qp_grp[i] == g)
			b->qp[b->nq++] = i;
	b->grp = g;
	b->scq = s->grp[g].scq;
	b->rcq = s->grp[g].rcq;
	b->cc = s->grp[g].cc;
	b->size = size;
	b->tx = tx;
	b->rx = rx;
	b->timed = s->o.duration > 0;
	b->iters = s->o.iters;
	b->rx_depth = perf_rx_depth(&s->o);
	b->credit_every = b->rx_depth / 3 ? b->rx_depth / 3 : 1;
	uint32_t sq = 2 * s->o.tx_depth + 8;
	b->sq_cap = sq > 16384 ? 16384 : sq;
	/* Signal often enough to keep the pipe full, every WR for large ones
	 * (perftest turns moderation off above 8 KiB too). */
	uint32_t mod = s->o.tx_depth / 2;
	b->cq_mod = size > 8192 || !mod ? 1 : mod > 64 ? 64 : mod;
	b->inc = inc_of(size, s->cache_line);
	b->per_cycle = size <= s->cycle_buffer / 2 ? s->cycle_buffer / b->inc : 0;
	for (uint32_t k = 0; k < b->nq; k++) {
		uint32_t i = b->qp[k];
		b->q[i].loc = (uintptr_t)perf_region_local(s, i);
		b->q[i].rem = s->rem[i].vaddr;
		b->q[i].rposted = rx ? b->rx_depth : 0;
	}
	perf_progress_start(&b->prog, s, size);
}

/* The runs together: every thread's messages over the span from the
 * first start to the last completion. The peak is one thread's busiest
 * window; several threads have no common trace, so theirs is the
 * average. */
static void result(struct bw_run **runs, uint32_t n, struct perf_result *r)
{
	bool tx = runs[0]->tx;
	uint64_t msgs = 0;
	double t0 = 0, t1 = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct bw_run *b = runs[k];
		uint64_t m = tx ? b->tx_msgs : b->rx_msgs;
		double a = tx ? b->t0 : b->rx_t0, e = tx ? b->t_end : b->rx_end;
		if (!m)
			continue;
		t0 = !msgs || a < t0 ? a : t0;
		t1 = e > t1 ? e : t1;
		msgs += m;
	}
	double t = t1 - t0;
	/* #iterations counts every QP's messages, as perftest's report does
	 * (print_report_bw: iters * num_of_qps): a perftest server prints the
	 * figure we send it, so it must mean the same. */
	*r = (struct perf_result){.bytes = runs[0]->size, .msgs = msgs, .iters = msgs, .seconds = t};
	if (t > 0) {
		r->bw_avg = (double)msgs * (double)runs[0]->size / t;
		r->msg_rate = (double)msgs / t;
	}
	r->bw_peak = n == 1 ? perf_trace_peak(&runs[0]->trace, runs[0]->size) : 0;
	if (r->bw_peak < r->bw_avg)
		r->bw_peak = r->bw_avg;
}

/* --pin: loop g's thread on the g-th CPU of the set, where IW_LOOP_PIN
 * puts loop g, so that N loops with their threads use N cores. */
static void pin_self(const struct bw_run *b)
{
	int n = b->pin ? CPU_COUNT(b->pin) : 0;
	for (int c = 0, k = 0; n && c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, b->pin) || k++ != (int)(b->grp % (uint32_t)n))
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		(void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		return;
	}
}

static void *run_thread(void *arg)
{
	struct bw_run *b = arg;
	char name[16];
	snprintf(name, sizeof(name), "perf-app-%u", b->s->qp_grp[b->qp[0]]);
	(void)pthread_setname_np(pthread_self(), name);
	pin_self(b);
	b->rc = loop(b);
	perf_cpu_self(&b->cpu);
	return NULL;
}

/* The runs: the first on this thread, each other on a thread of its own;
 * this process's CPU per thread over them into *cpu. */
static int run_all(struct bw_run **runs, uint32_t n, struct perf_cpu *cpu)
{
	pthread_t th[PERF_MAX_QPS];
	struct perf_cpu before, after;
	uint32_t started = 1;
	cpu_set_t mine;
	bool pin = runs[0]->s->o.pin &&
		   !pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
	for (uint32_t k = 0; pin && k < n; k++)
		runs[k]->pin = &mine;
	perf_cpu_sample(&before);
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, run_thread, runs[started])) {
			perf_err(runs[0]->s, "no thread for loop %u", started);
			runs[0]->s->data_dead = 1; /* the others stop */
			break;
		}
	if (pin)
		pin_self(runs[0]);
	int rc = started < n ? -1 : loop(runs[0]);
	if (pin)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
	for (uint32_t k = 1; k < started; k++) {
		pthread_join(th[k], NULL);
		rc = rc ? rc : runs[k]->rc;
	}
	perf_cpu_sample(&after);
	perf_cpu_delta(&before, &after, cpu);
	for (uint32_t k = 1; k < started; k++)
		perf_cpu_put(cpu, &runs[k]->cpu);
	return rc;
}

/* One size, one side: send (client; both with -b) and/or receive (the
 * server of a send test; both with -b); with --threads one thread per
 * loop that has QPs. */
int perf_bw_duplex(struct perf_sess *s, uint64_t size, struct perf_result *r)
{
	bool send = s->o.test == PT_SEND;
	bool tx = !s->server || s->o.bidir;
	bool rx = send && (s->server || s->o.bidir);
	struct bw_run *runs[PERF_MAX_QPS];
	uint32_t n = 0;
	int rc = 0;
	for (uint32_t g = 0; g < s->ngrp && !rc; g++) {
		struct bw_run *b = calloc(1, sizeof(*b));
		if (!b) {
			rc = -1;
			break;
		}
		setup(b, s, size, tx, rx, g);
		if (b->nq)
			runs[n++] = b;
		else
			free(b);
	}
	if (!rc && n) {
		runs[0]->lead = true;
		struct perf_cpu cpu;
		rc = run_all(runs, n, &cpu);
		if (!rc) {
			result(runs, n, r);
			r->cpu = cpu;
			r->has_cpu = true;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		perf_trace_free(&runs[k]->trace);
		free(runs[k]);
	}
	return rc;
}
