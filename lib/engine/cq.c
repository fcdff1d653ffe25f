/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues and completion channels (see cq.h for the lock order).
 *
 * Notification follows libibverbs:
 * - Arming is one-shot. iw_req_notify_cq(cq, 0) fires on the next completion
 *   added after the call; completions already in the CQ do not fire it, so
 *   the usual loop is "arm, then poll until empty, then wait".
 * - Solicited-only arming fires on a completion for a message that carried
 *   SE, or on any completion whose status is not success (as ibv defines a
 *   solicited CQE). A NEXT arming is not narrowed by a later solicited one.
 * - A fired CQ queues its one event node on the channel; if that node is
 *   still queued when the CQ fires again, the two events coalesce.
 * - iw_get_cq_event counts the events it hands out; iw_destroy_cq refuses
 *   (EBUSY) until they are all acked. An event still queued at destroy is
 *   killed: the channel drops it, and frees the CQ's memory then.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "base/alloc.h"
#include "base/visibility.h"

static struct iw_comp_channel_int *chan_int(struct iw_comp_channel *ch)
{
	/* pub is the first member */
	return (struct iw_comp_channel_int *)ch;
}

static struct iw_cq *ev_cq(struct iw_evq_node *n)
{
	return (struct iw_cq *)((char *)n - offsetof(struct iw_cq, ev));
}

/* ------------------------------------------------------------ channel */

IW_EXPORT struct iw_comp_channel *iw_create_comp_channel(struct iw_context *ctx)
{
	struct iw_comp_channel_int *ch;
	int rc;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ch = iw_calloc(ctx->alloc, 1, sizeof(*ch));
	if (!ch)
		return NULL;
	rc = iw_evq_init(&ch->q);
	if (rc) {
		iw_free(ctx->alloc, ch);
		errno = -rc;
		return NULL;
	}
	ch->pub.context = ctx;
	ch->pub.fd = ch->q.fd;
	ch->pub.refcnt = 0;
	atomic_fetch_add(&ctx->num_objs, 1);
	return &ch->pub;
}

/* Release for a CQ event node found dead: its CQ was destroyed while the
 * event was queued and left its memory for us to free. */
static void cq_release(struct iw_evq_node *n)
{
	struct iw_cq *cq = ev_cq(n);
	iw_free(cq->context->alloc, cq);
}

IW_EXPORT int iw_destroy_comp_channel(struct iw_comp_channel *channel)
{
	struct iw_comp_channel_int *ch;
	int refcnt;

	if (!channel)
		return 0;
	ch = chan_int(channel);
	pthread_mutex_lock(&ch->q.lock);
	refcnt = ch->pub.refcnt;
	pthread_mutex_unlock(&ch->q.lock);
	if (refcnt > 0)
		return EBUSY;
	atomic_fetch_sub(&ch->pub.context->num_objs, 1);
	if (ch->loop)
		ch->loop_free(ch->loop);
	/* With no CQ left, anything still queued is dead. */
	iw_evq_drain(&ch->q, cq_release);
	iw_evq_cleanup(&ch->q);
	iw_free(ch->pub.context->alloc, ch);
	return 0;
}

/* Runs under the channel's lock as the event is unlinked, so destroy (which
 * checks under the same lock) never sees an event that is neither queued nor
 * counted. */
static void cq_take(struct iw_evq_node *n)
{
	ev_cq(n)->events_raised++;
}

IW_EXPORT int iw_get_cq_event(struct iw_comp_channel *channel, struct iw_cq **cq,
			      void **cq_context)
{
	struct iw_evq_node *n;
	struct iw_cq *c;
	int rc;

	if (!channel || !cq)
		return EINVAL;
	rc = iw_evq_pop_take(&chan_int(channel)->q, &n, cq_release, cq_take);
	if (rc)
		return -rc;
	/* The event is counted and not acked: c cannot be destroyed now. */
	c = ev_cq(n);
	*cq = c;
	if (cq_context)
		*cq_context = c->cq_context;
	return 0;
}

IW_EXPORT void iw_ack_cq_events(struct iw_cq *cq, unsigned int nevents)
{
	struct iw_comp_channel_int *ch;

	/* Without a channel no event was ever handed out. */
	if (!cq || !cq->channel || !nevents)
		return;
	ch = chan_int(cq->channel);
	pthread_mutex_lock(&ch->q.lock);
	cq->events_acked += nevents;
	pthread_mutex_unlock(&ch->q.lock);
}

/* ------------------------------------------------------------ CQ */

IW_EXPORT struct iw_cq *iw_create_cq(struct iw_context *ctx, int cqe, void *cq_context,
				     struct iw_comp_channel *channel, int comp_vector)
{
	struct iw_cq *cq;
	int rc;

	/* One loop delivers every completion: there is no vector to pick. */
	(void)comp_vector;
	if (!ctx || cqe < 1 || cqe > IW_CQ_MAX_CQE || (channel && channel->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	cq = iw_calloc(ctx->alloc, 1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->ring = iw_calloc(ctx->alloc, (size_t)cqe, sizeof(*cq->ring));
	if (!cq->ring) {
		iw_free(ctx->alloc, cq);
		return NULL;
	}
	rc = pthread_mutex_init(&cq->lock, NULL);
	if (!rc && (rc = iw_poll_set_init(&cq->poll)))
		pthread_mutex_destroy(&cq->lock);
	cq->poll.alloc = ctx->alloc;
	if (rc) {
		iw_free(ctx->alloc, cq->ring);
		iw_free(ctx->alloc, cq);
		errno = rc;
		return NULL;
	}
	cq->context = ctx;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->cap = (uint32_t)cqe;
	cq->armed = IW_CQ_UNARMED;
	atomic_init(&cq->use, 0);
	if (channel) {
		pthread_mutex_lock(&chan_int(channel)->q.lock);
		channel->refcnt++;
		pthread_mutex_unlock(&chan_int(channel)->q.lock);
	}
	atomic_fetch_add(&ctx->num_objs, 1);
	return cq;
}

static void cq_teardown(struct iw_cq *cq)
{
	atomic_fetch_sub(&cq->context->num_objs, 1);
	pthread_mutex_destroy(&cq->lock);
	iw_poll_set_cleanup(&cq->poll);
	iw_free(cq->context->alloc, cq->ring);
	cq->ring = NULL;
}

/* Everything under the channel's lock: the check against events handed out,
 * the kill of a queued event and the teardown all happen before any pop can
 * meet the dead node and free the CQ. */
static int destroy_on_channel(struct iw_cq *cq)
{
	struct iw_comp_channel_int *ch = chan_int(cq->channel);
	bool deferred;

	pthread_mutex_lock(&ch->q.lock);
	if (cq->events_raised != cq->events_acked) {
		pthread_mutex_unlock(&ch->q.lock);
		return EBUSY;
	}
	ch->pub.refcnt--;
	iw_async_forget(cq->context, cq);
	cq_teardown(cq);
	deferred = iw_evq_kill_locked(&ch->q, &cq->ev);
	pthread_mutex_unlock(&ch->q.lock);
	if (!deferred)
		iw_free(cq->context->alloc, cq);
	return 0;
}

IW_EXPORT int iw_destroy_cq(struct iw_cq *cq)
{
	if (!cq)
		return 0;
	if (atomic_load(&cq->use) > 0)
		return EBUSY;
	if (cq->channel)
		return destroy_on_channel(cq);
	iw_async_forget(cq->context, cq);
	cq_teardown(cq);
	iw_free(cq->context->alloc, cq);
	return 0;
}

/* count and armed change under cq->lock, through these stores, so that a
 * poller may look at them without it (take). */
static void set_count(struct iw_cq *cq, uint32_t n)
{
	__atomic_store_n(&cq->count, n, __ATOMIC_RELEASE);
}

static void set_armed(struct iw_cq *cq, int armed)
{
	__atomic_store_n(&cq->armed, armed, __ATOMIC_RELAXED);
}

/* An index past the end of the ring, brought back: i < 2 * cap, as head and
 * count (or n <= count) each stay below cap. A compare instead of %, whose
 * division is on every completion pushed and taken. */
static uint32_t ring_wrap(const struct iw_cq *cq, uint32_t i)
{
	return i >= cq->cap ? i - cq->cap : i;
}

/* The caller holds cq->lock. Copies n entries from the head, in at most two
 * runs because the ring wraps. */
static void ring_take(struct iw_cq *cq, struct iw_wc *out, uint32_t n)
{
	uint32_t first = cq->cap - cq->head;

	if (first > n)
		first = n;
	memcpy(out, cq->ring + cq->head, first * sizeof(*out));
	if (n > first)
		memcpy(out + first, cq->ring, (n - first) * sizeof(*out));
	cq->head = ring_wrap(cq, cq->head + n);
	set_count(cq, cq->count - n);
}

/* The caller holds cq->lock and has checked that ring holds cq->count
 * entries: the queued completions move to its front, oldest first. */
static void ring_swap(struct iw_cq *cq, struct iw_wc **ring, uint32_t cap)
{
	struct iw_wc *old = cq->ring;
	uint32_t n = cq->count;

	ring_take(cq, *ring, n);
	cq->ring = *ring;
	cq->cap = cap;
	cq->head = 0;
	set_count(cq, n);
	if (n < cap)
		cq->overflow = false; /* room again: the overflow episode is over */
	*ring = old;
}

/* The new ring is allocated before the lock is taken, so pushes from the
 * loop thread never wait on malloc; completions are copied under the lock
 * in one step, so none is lost or seen twice. */
IW_EXPORT int iw_resize_cq(struct iw_cq *cq, int cqe)
{
	struct iw_wc *ring;
	int rc = 0;

	if (!cq || cqe < 1 || cqe > IW_CQ_MAX_CQE)
		return EINVAL;
	ring = iw_calloc(cq->context->alloc, (size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	pthread_mutex_lock(&cq->lock);
	if (cq->count > (uint32_t)cqe)
		rc = EINVAL;
	else
		ring_swap(cq, &ring, (uint32_t)cqe);
	pthread_mutex_unlock(&cq->lock);
	iw_free(cq->context->alloc, ring); /* the old ring, or the new one if refused */
	return rc;
}

IW_EXPORT int iw_req_notify_cq(struct iw_cq *cq, int solicited_only)
{
	if (!cq)
		return EINVAL;
	/* The thread may sleep next: nothing it posted may wait for it. */
	iw_context_flush_held(cq->context);
	pthread_mutex_lock(&cq->lock);
	if (!solicited_only)
		set_armed(cq, IW_CQ_ARM_NEXT);
	else if (cq->armed != IW_CQ_ARM_NEXT)
		set_armed(cq, IW_CQ_ARM_SOLICITED);
	pthread_mutex_unlock(&cq->lock);
	atomic_store(&cq->arm_polls, atomic_load_explicit(&cq->polls, memory_order_relaxed));
	/* A polling thread that arms is about to sleep on the channel: the
	 * loop must read for it now, not when its pause ends. */
	struct iw_context *ctx = cq->context;
	if (ctx->poll_mode && ctx->handback)
		iw_poll_set_run(&cq->poll, ctx->handback);
	return 0;
}

static int take(struct iw_cq *cq, int num_entries, struct iw_wc *wc, bool *armed)
{
	uint32_t n;

	/* An empty ring, the busy poller's usual find, costs no lock round
	 * trip: a completion pushed meanwhile is taken by the next look, as
	 * if it had come just after the lock. */
	if (!__atomic_load_n(&cq->count, __ATOMIC_ACQUIRE)) {
		*armed = __atomic_load_n(&cq->armed, __ATOMIC_RELAXED) != IW_CQ_UNARMED;
		return 0;
	}
	pthread_mutex_lock(&cq->lock);
	n = cq->count < (uint32_t)num_entries ? cq->count : (uint32_t)num_entries;
	if (n) {
		ring_take(cq, wc, n);
		/* Below capacity again: the overflow episode is over. */
		cq->overflow = false;
	}
	*armed = cq->armed != IW_CQ_UNARMED;
	pthread_mutex_unlock(&cq->lock);
	return (int)n;
}

/* A poll that finds nothing also visits the context's connections that
 * complete into other CQs and that no poller of their own keeps (the
 * hook skips those), without keeping the loop off them (this thread may
 * stop polling at any time): at every such poll while the
 * last visit moved octets, else at every IW_POLL_OTHERS_EVERY-th (cq.h). A
 * thread that spins on one CQ while another connection's octets stream
 * in (the server of ib_write_bw spins on its handshake QP's CQ while the
 * Writes land on the data QP, whose CQs no thread polls) otherwise only
 * takes a CPU from the loop thread that must read them; on two cores
 * that loop thread waited for a CPU longer than it ran. Rarely while
 * they are quiet, so that a thread waiting for its own CQ (a latency
 * loop) pays a system call on one empty poll in so many. What a visit
 * completes goes to other CQs. */
static void visit_others(struct iw_cq *cq)
{
	/* A count, not a lock: pollers of one CQ that race here lose an
	 * increment, which only moves the next visit. */
	unsigned k = atomic_load_explicit(&cq->idle_polls, memory_order_relaxed) + 1;
	atomic_store_explicit(&cq->idle_polls, k, memory_order_relaxed);
	if (k % IW_POLL_OTHERS_EVERY && !atomic_load_explicit(&cq->others_hot, memory_order_relaxed))
		return;
	struct iw_context *ctx = cq->context;
	if (!ctx->progress_other)
		return;
	unsigned got = iw_poll_set_run_others(&ctx->poll, cq, ctx->progress_other);
	atomic_store_explicit(&cq->others_hot, got != 0, memory_order_relaxed);
}

/* A plain load and store, not a locked add: the count is only ever
 * compared for change, and pollers of one CQ need not serialise on it. */
static void count_poll(struct iw_cq *cq)
{
	unsigned k = atomic_load_explicit(&cq->polls, memory_order_relaxed);
	atomic_store_explicit(&cq->polls, k + 1, memory_order_relaxed);
}

/* In a polling context the caller's thread receives for the CQ's QPs
 * when the ring has less than it asked for, then takes what that
 * completed: no hand-off to the loop thread. */
IW_EXPORT int iw_poll_cq(struct iw_cq *cq, int num_entries, struct iw_wc *wc)
{
	if (!cq || num_entries < 0 || (num_entries > 0 && !wc))
		return -EINVAL;
	/* Written first: the completions of what it writes are found now. */
	iw_context_flush_held(cq->context);
	bool armed;
	int n = take(cq, num_entries, wc, &armed);
	struct iw_context *ctx = cq->context;
	if (!ctx->poll_mode || !ctx->progress)
		return n;
	if (!armed)
		count_poll(cq);
	if (n == num_entries)
		return n;
	/* Through an armed CQ the thread is checking once more before it
	 * sleeps (iw_req_notify_cq handed its connections back); otherwise it
	 * keeps the loop off only the connections whose octets it waits for
	 * (iw_qp_rx_feeds). */
	unsigned got;
	if (!ctx->progress_armed)
		got = iw_poll_set_run(&cq->poll, ctx->progress);
	else if (armed)
		got = iw_poll_set_run(&cq->poll, ctx->progress_armed);
	else
		got = iw_poll_set_run_cq(&cq->poll, cq, ctx->progress, ctx->progress_armed);
	if (!got) {
		visit_others(cq);
		return n;
	}
	return n + take(cq, num_entries - n, wc + n, &armed);
}

/* The caller holds cq->lock and has just added wc: does it fire the arming? */
static bool fires(struct iw_cq *cq, const struct iw_wc *wc, bool solicited)
{
	if (cq->armed == IW_CQ_ARM_NEXT)
		return true;
	return cq->armed == IW_CQ_ARM_SOLICITED && (solicited || wc->status != IW_WC_SUCCESS);
}

static int overflowed(struct iw_cq *cq)
{
	bool raise;

	cq->lost++;
	raise = !cq->overflow;
	cq->overflow = true;
	pthread_mutex_unlock(&cq->lock);
	if (raise) {
		struct iw_async_event ev = {
			.event_type = IW_EVENT_CQ_ERR,
			.element.cq = cq,
		};

		iw_async_raise(cq->context, &ev);
	}
	return -ENOSPC;
}

static int push_locked(struct iw_cq *cq, const struct iw_wc *wc, bool solicited)
{
	if (cq->count == cq->cap)
		return overflowed(cq); /* unlocks */
	cq->ring[ring_wrap(cq, cq->head + cq->count)] = *wc;
	set_count(cq, cq->count + 1);
	if (fires(cq, wc, solicited)) {
		set_armed(cq, IW_CQ_UNARMED);
		/* Lock order cq->lock then the channel's: queuing here keeps
		 * the event ordered after the completion it announces. */
		if (cq->channel)
			iw_evq_push(&chan_int(cq->channel)->q, &cq->ev);
	}
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/* The channel's eventfd is written after cq->lock is released (and after
 * the caller's qp->lock, when it holds one: iw_qp_lock opens the outer
 * scope), so the woken poller never meets the lock still held. */
int iw_cq_push(struct iw_cq *cq, const struct iw_wc *wc, bool solicited)
{
	int rc;

	iw_evq_defer_begin();
	pthread_mutex_lock(&cq->lock);
	rc = push_locked(cq, wc, solicited); /* unlocks */
	iw_evq_defer_end();
	return rc;
}

uint32_t iw_cq_room(struct iw_cq *cq)
{
	uint32_t room;

	pthread_mutex_lock(&cq->lock);
	room = cq->cap - cq->count;
	pthread_mutex_unlock(&cq->lock);
	return room;
}

/* ------------------------------------------------------------ strings */

IW_EXPORT const char *iw_wc_status_str(enum iw_wc_status status)
{
	static const char *const str[] = {
		[IW_WC_SUCCESS] = "success",
		[IW_WC_LOC_LEN_ERR] = "local length error",
		[IW_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IW_WC_LOC_PROT_ERR] = "local protection error",
		[IW_WC_WR_FLUSH_ERR] = "work request flushed error",
		[IW_WC_MW_BIND_ERR] = "memory window bind error",
		[IW_WC_BAD_RESP_ERR] = "bad response error",
		[IW_WC_LOC_ACCESS_ERR] = "local access error",
		[IW_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IW_WC_REM_ACCESS_ERR] = "remote access error",
		[IW_WC_REM_OP_ERR] = "remote operation error",
		[IW_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IW_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IW_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IW_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IW_WC_REM_ABORT_ERR] = "operation aborted",
		[IW_WC_INV_EECN_ERR] = "invalid EECN",
		[IW_WC_INV_EEC_STATE_ERR] = "invalid EEC state",
		[IW_WC_FATAL_ERR] = "fatal error",
		[IW_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IW_WC_GENERAL_ERR] = "general error",
	};

	/* Range-check before indexing: the value may come from anywhere. */
	if ((unsigned)status >= sizeof(str) / sizeof(str[0]) || !str[status])
		return "unknown";
	return str[status];
}

IW_EXPORT const char *iw_wc_opcode_str(enum iw_wc_opcode op)
{
	switch (op) {
	case IW_WC_SEND:
		return "send";
	case IW_WC_RDMA_WRITE:
		return "RDMA write";
	case IW_WC_RDMA_READ:
		return "RDMA read";
	case IW_WC_COMP_SWAP:
		return "compare and swap";
	case IW_WC_FETCH_ADD:
		return "fetch and add";
	case IW_WC_BIND_MW:
		return "bind MW";
	case IW_WC_LOCAL_INV:
		return "local invalidate";
	case IW_WC_REG_MR:
		return "register MR";
	case IW_WC_RECV:
		return "recv";
	case IW_WC_RECV_RDMA_WITH_IMM:
		return "recv RDMA with immediate";
	}
	return "unknown";
}
