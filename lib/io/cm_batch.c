/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transmit coalescing (iw_conn_opts.tx_batch_*): posts that arrive close
 * together share one sendmsg. At 4 KiB a Send's sender is bound by its
 * system calls: one sendmsg per message cost it more than raw TCP's one
 * send per message, and only fewer calls per message than that gets it
 * to TCP's speed.
 *
 * The same holds for larger messages: a 64 KiB Write stream written a
 * message per sendmsg ran at 0.86-1.04x raw TCP on loopback (the kernel
 * did more of TCP's work on the writer's CPU with smaller writes), and at
 * 1.24-1.49x sharing writes of up to 512 KiB, the default byte bound.
 *
 * A post that comes within tx_batch_us of the connection's previous post,
 * with nothing read from the socket in between, has its FPDUs framed into
 * the transmit queue (iw_conn_tx_stage: a TERMINATE or a close queued
 * later still finds them ahead) but not written while fewer than
 * tx_batch_msgs messages and tx_batch_bytes octets wait. Any write of the
 * connection then takes them with it, in order. What ends the wait:
 *  - the bound: the post that reaches it writes everything;
 *  - the next iw_poll_cq, iw_req_notify_cq or iw_progress on any CQ of the
 *    context (iw_cm_batch_flush through the context's held list): a
 *    thread that polls never waits for its own octets, and a thread that
 *    arms a CQ before it sleeps has written them;
 *  - the connection's end: a disconnect or a TERMINATE writes what is
 *    queued before its FIN (the loop's flush), a close unlists the id;
 *  - the backstop: a timer of the loop thread, ticking every tx_batch_us
 *    while posts keep being held, writes what was held over a whole tick
 *    with nobody writing (at most about 2 x tx_batch_us after the post;
 *    libevent over epoll waits in whole milliseconds, so a tick is at
 *    least 1 ms: 2 ms at most for the default, and about a loop wake-up
 *    per millisecond, not per 100 us, while posts keep being held).
 *    A post starts it only when it is off: no system call per message.
 * The first post after a pause, and a post that answers octets read (a
 * ping-pong), are written at once, as before: latency does not wait.
 * A WR still completes only once its last octet is written (qp_tx.c's
 * marks), so a held WR's completion waits with it.
 */
#include <event2/event.h>
#include <stddef.h>
#include <time.h>

#include "engine/context.h"
#include "io/cm_int.h"
#include "io/ev.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define RELAXED memory_order_relaxed

/* Does this post arrive together with the previous one: within the
 * window, nothing read in between? Records it for the next post. A post
 * that answers octets read is never held, so it reads no clock before
 * its write: *stamp asks the caller to record the time after it (a
 * ping-pong's answer then waits for no clock read, 25 ns a post on the
 * machine of the README's tables; the next post measures its window from
 * a few microseconds later, against a window of 100). */
static bool together(struct iw_cm_id_int *id, bool *stamp)
{
	unsigned rx = atomic_load_explicit(&id->rx_seq, RELAXED);
	if (rx != atomic_load_explicit(&id->batch_rx, RELAXED)) {
		atomic_store_explicit(&id->batch_rx, rx, RELAXED);
		*stamp = true;
		return false;
	}
	uint64_t now = now_ns();
	uint64_t last = atomic_load_explicit(&id->batch_at, RELAXED);
	atomic_store_explicit(&id->batch_at, now, RELAXED);
	return now - last < (uint64_t)id->conn.tune.tx_batch_us * 1000;
}

/* On the context's held list, so that the next poll writes it. False:
 * the socket is closed (write now, which finds it closed). */
static bool list_add(struct iw_cm_id_int *id)
{
	if (atomic_load(&id->held_listed))
		return true;
	struct iw_context *ctx = id->pub.context;
	bool ok;
	pthread_mutex_lock(&ctx->held_lock);
	ok = !id->batch_closed;
	if (ok && !atomic_load_explicit(&id->held_listed, RELAXED)) {
		id->held_next = ctx->held;
		ctx->held = id;
		atomic_store(&id->held_listed, true);
		atomic_store(&ctx->held_n, atomic_load_explicit(&ctx->held_n, RELAXED) + 1);
	}
	pthread_mutex_unlock(&ctx->held_lock);
	return ok;
}

/* A post held: the backstop must run. Only when it is off does this cost
 * a wake-up of the loop. */
static void backstop_want(struct iw_cm_id_int *id)
{
	atomic_store(&id->batch_fresh, true);
	if (!atomic_load(&id->batch_on) && !atomic_exchange(&id->batch_on, true))
		iw_ev_work_queue(id->ev, &id->batch_work);
}

/* Hold the post's FPDUs? Not when the connection needs a write or the
 * loop anyway (full socket, starved receive, QP in ERR). */
static bool hold(struct iw_cm_id_int *id, bool *stamp)
{
	const struct iw_conn_tune *t = &id->conn.tune;
	if (t->tx_batch_msgs <= 1 || !together(id, stamp))
		return false;
	if (atomic_load_explicit(&id->tx_full, RELAXED) || iw_conn_rx_starved(&id->conn) ||
	    iw_conn_wants_loop(&id->conn))
		return false;
	uint32_t msgs = 0;
	size_t bytes = 0;
	if (iw_conn_tx_stage(&id->conn, &msgs, &bytes) || msgs >= t->tx_batch_msgs ||
	    bytes >= t->tx_batch_bytes)
		return false;
	if (!bytes)
		return true; /* nothing to write (a local WR) */
	/* After the framing: a write that began before it clears the flag
	 * before it takes the queue (write_loop), so it is never left set
	 * with the octets unwritten... */
	atomic_store(&id->held, true);
	/* ... and a socket closed meanwhile gets the write that finds it so. */
	if (!list_add(id))
		return false;
	backstop_want(id);
	return true;
}

void iw_cm_conn_post(struct iw_cm_id_int *id)
{
	bool stamp = false;
	if (hold(id, &stamp))
		return;
	iw_cm_conn_tx(id);
	if (stamp)
		atomic_store_explicit(&id->batch_at, now_ns(), RELAXED);
}

/* Under held_lock, so that the loop cannot close and free an id that
 * this thread is about to write (iw_cm_batch_forget waits for it). */
void iw_cm_batch_flush(struct iw_context *ctx)
{
	pthread_mutex_lock(&ctx->held_lock);
	struct iw_cm_id_int *id = ctx->held;
	ctx->held = NULL;
	atomic_store(&ctx->held_n, 0);
	while (id) {
		struct iw_cm_id_int *next = id->held_next;
		atomic_store(&id->held_listed, false);
		if (atomic_load(&id->held))
			iw_cm_conn_tx(id);
		id = next;
	}
	pthread_mutex_unlock(&ctx->held_lock);
}

static void unlist(struct iw_context *ctx, struct iw_cm_id_int *id)
{
	for (struct iw_cm_id_int **pp = &ctx->held; *pp; pp = &(*pp)->held_next) {
		if (*pp == id) {
			*pp = id->held_next;
			atomic_store(&ctx->held_n, atomic_load_explicit(&ctx->held_n, RELAXED) - 1);
			break;
		}
	}
	atomic_store(&id->held_listed, false);
}

void iw_cm_batch_forget(struct iw_cm_id_int *id)
{
	struct iw_context *ctx = id->pub.context;
	pthread_mutex_lock(&ctx->held_lock);
	id->batch_closed = true;
	if (atomic_load_explicit(&id->held_listed, RELAXED))
		unlist(ctx, id);
	pthread_mutex_unlock(&ctx->held_lock);
}

void iw_cm_batch_reopen(struct iw_cm_id_int *id)
{
	struct iw_context *ctx = id->pub.context;
	pthread_mutex_lock(&ctx->held_lock);
	id->batch_closed = false;
	pthread_mutex_unlock(&ctx->held_lock);
}

/* ------------------------------------------------------------ backstop */

static void tick_arm(struct iw_cm_id_int *id)
{
	uint32_t us = id->conn.tune.tx_batch_us;
	struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
			     .tv_usec = (suseconds_t)(us % 1000000)};
	evtimer_add(id->batch_ev, &tv);
}

/* Off, unless a post held after the tick looked (it found the backstop
 * on and did not ask again). */
static void backstop_stop(struct iw_cm_id_int *id)
{
	atomic_store(&id->batch_on, false);
	if (atomic_load(&id->batch_fresh) && !atomic_exchange(&id->batch_on, true))
		tick_arm(id);
}

/* Held over a whole tick with no write since the last one: write. The
 * writes a poller or the bound made meanwhile took everything held before
 * them, so nothing waits longer than about two ticks. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	(void)fd;
	(void)what;
	iw_ev_enter(id->ev);
	bool fresh = atomic_exchange(&id->batch_fresh, false);
	if (atomic_load(&id->held) && atomic_load(&id->tx_writes) == id->tick_writes) {
		atomic_fetch_add_explicit(&id->dbg_batch_ticks, 1, RELAXED);
		iw_cm_conn_tx(id);
	}
	id->tick_writes = atomic_load(&id->tx_writes);
	if (fresh || atomic_load(&id->held))
		tick_arm(id);
	else
		backstop_stop(id);
	iw_ev_leave(id->ev);
}

/* Loop work a held post asked for: start ticking. Without a socket or a
 * timer, write instead, so that nothing waits for a tick that never
 * comes (the next hold asks again). */
static void backstop_start(struct iw_ev_work *w)
{
	struct iw_cm_id_int *id =
		(struct iw_cm_id_int *)((char *)w - offsetof(struct iw_cm_id_int, batch_work));
	if (id->fd >= 0 && !id->batch_ev)
		id->batch_ev = evtimer_new(iw_ev_base(id->ev), on_tick, id);
	if (id->fd < 0 || !id->batch_ev) {
		atomic_store(&id->batch_on, false);
		iw_cm_conn_tx(id);
		return;
	}
	id->tick_writes = atomic_load(&id->tx_writes);
	tick_arm(id);
}

void iw_cm_batch_unhook(struct iw_cm_id_int *id)
{
	if (id->batch_ev) {
		event_free(id->batch_ev);
		id->batch_ev = NULL;
	}
	atomic_store(&id->batch_on, false);
}

void iw_cm_batch_init(struct iw_cm_id_int *id)
{
	id->batch_work.fn = backstop_start;
}
