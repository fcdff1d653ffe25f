/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libevent glue's per-context part: the loop (the application's
 * event_base, or one we run on our own thread), a kick eventfd that lets any
 * thread hand work to the loop, and iw_ev_call, which runs a function on the
 * loop thread and returns its result. Only lib/io/ includes libevent.
 *
 * Thread rule: libiwarp touches libevent only on the loop thread. A call
 * made on the loop thread (inside or outside our callbacks) runs inline; a
 * call from another thread is queued and waited for, so the loop must be
 * running (it always is in convenience mode). The loop thread is the thread
 * that created the context until one of our callbacks runs elsewhere.
 */
#ifndef IW_EV_H
#define IW_EV_H

#include <pthread.h>
#include <stdbool.h>

struct iw_context;
struct event_base;

/* How our own loop thread starts (iw_context_attr's LOOP_* options). */
struct iw_ev_thread_opts {
	const void *cpuset; /* cpu_set_t for pthread_attr_setaffinity_np; NULL: inherit */
	size_t cpuset_size;
	const char *name;   /* NULL: IW_EV_THREAD_NAME */
};
#define IW_EV_THREAD_NAME "iwarp-loop"

/* 0 or a positive errno. base NULL: create a base and a loop thread
 * started with t (may be NULL). bounce_len: the receive bounce buffer's
 * size. */
int iw_ev_init(struct iw_context *ctx, struct event_base *base, size_t bounce_len,
	       const struct iw_ev_thread_opts *t);
/* 0, or EBUSY while CM ids exist. Stops and joins our loop thread. */
int iw_ev_cleanup(struct iw_context *ctx);
struct event_base *iw_ev_base(struct iw_context *ctx);

/* Run fn(arg) on the loop thread with the context's CM lock held and
 * return its result. */
int iw_ev_call(struct iw_context *ctx, int (*fn)(void *), void *arg);
/* Wake the loop: queued commands and work run (any thread, never blocks). */
void iw_ev_kick(struct iw_context *ctx);
/* True on the loop thread. */
bool iw_ev_on_loop(struct iw_context *ctx);
/* The CM lock: held by every libiwarp callback and every iw_ev_call. */
void iw_ev_lock(struct iw_context *ctx);
void iw_ev_unlock(struct iw_context *ctx);
/* Every libiwarp libevent callback starts with enter (records the loop
 * thread, takes the CM lock) and ends with leave. */
void iw_ev_enter(struct iw_context *ctx);
void iw_ev_leave(struct iw_context *ctx);
/* The receive bounce buffer (iw_context_attr.rx_bounce_len), used only on
 * the loop thread. */
unsigned char *iw_ev_bounce(struct iw_context *ctx, size_t *len);

/* CM ids alive on the context (cleanup refuses while any exist). */
void iw_ev_ids_add(struct iw_context *ctx, int delta);

/* Work for the loop, queued from any thread: the loop calls fn(w) soon,
 * with the CM lock held, once however often it was queued meanwhile. The
 * owner embeds it; cancel before freeing it (loop thread). */
struct iw_ev_work {
	struct iw_ev_work *next;
	bool queued;
	void (*fn)(struct iw_ev_work *w);
};
void iw_ev_work_queue(struct iw_context *ctx, struct iw_ev_work *w);
void iw_ev_work_cancel(struct iw_context *ctx, struct iw_ev_work *w);

#endif
