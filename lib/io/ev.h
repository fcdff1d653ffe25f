/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One event loop of a context's loop group (loop_group.h): the libevent
 * base (the application's, or one we run on our own thread), a kick
 * eventfd that lets any thread hand work to the loop, the loop's lock, and
 * iw_ev_call, which runs a function on the loop thread and returns its
 * result. Only lib/io/ includes libevent.
 *
 * Every CM id belongs to one loop (iw_cm_id_int.ev): its callbacks run on
 * that loop's thread under that loop's lock, and nothing else takes that
 * lock, so loops never wait for each other.
 *
 * Thread rule: libiwarp touches a base only on its loop thread. A call
 * made on the loop thread (inside or outside our callbacks) runs inline; a
 * call from another thread is queued and waited for, so the loop must be
 * running (it always is in convenience mode). With creator_runs, the loop
 * thread is the thread that created the context until one of our
 * callbacks runs elsewhere; without it (one of several application
 * bases) it is unknown until the base first runs, so every call waits for
 * that. An application base gets a kick at creation, so its first
 * dispatch records its thread.
 */
#ifndef IW_EV_H
#define IW_EV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "iwarp/verbs.h"

struct iw_ev;
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
 * size; index: the loop's number in its group; creator_runs: see above. */
int iw_ev_new(struct iw_ev **out, const struct iw_alloc_ops *a, struct event_base *base,
	      size_t bounce_len, const struct iw_ev_thread_opts *t, unsigned index,
	      bool creator_runs);
/* Stops and joins our loop thread, frees everything (NULL-safe). */
void iw_ev_free(struct iw_ev *ev);
struct event_base *iw_ev_base(struct iw_ev *ev);
unsigned iw_ev_index(const struct iw_ev *ev);

/* Run fn(arg) on the loop thread with the loop's lock held and return
 * its result. */
int iw_ev_call(struct iw_ev *ev, int (*fn)(void *), void *arg);
/* Teardown (iw_context_free): iw_ev_call on a loop of our own thread;
 * on an application's base, fn runs on this thread, as the application
 * no longer dispatches it then (iw_ev_free assumes the same). */
int iw_ev_call_final(struct iw_ev *ev, int (*fn)(void *), void *arg);
/* Run fn(arg) on the calling thread with the loop's lock held: for work
 * that touches no libevent object (allocating an id, attaching a QP). A
 * hop to the loop thread costs two thread switches, which were most of a
 * connection setup's time beyond TCP (issue 13), and needs the loop to
 * be running. */
int iw_ev_run_locked(struct iw_ev *ev, int (*fn)(void *), void *arg);
/* Wake the loop: queued commands and work run (any thread, never blocks). */
void iw_ev_kick(struct iw_ev *ev);
/* True on the loop thread. */
bool iw_ev_on_loop(struct iw_ev *ev);
/* Every libiwarp libevent callback starts with enter (records the loop
 * thread, takes the loop's lock) and ends with leave. */
void iw_ev_enter(struct iw_ev *ev);
void iw_ev_leave(struct iw_ev *ev);
/* The receive bounce buffer (iw_context_attr.rx_bounce_len), used only on
 * the loop thread. */
unsigned char *iw_ev_bounce(struct iw_ev *ev, size_t *len);

/* CM ids on the loop: the least-loaded spreading reads it, and the
 * context refuses to go while any exist. Any thread. */
void iw_ev_ids_add(struct iw_ev *ev, int delta);
int iw_ev_ids(struct iw_ev *ev);

/* Work for the loop, queued from any thread: the loop calls fn(w) soon,
 * with its lock held, once however often it was queued meanwhile. The
 * owner embeds it; cancel before freeing it (loop thread). */
struct iw_ev_work {
	struct iw_ev_work *next;
	bool queued;
	void (*fn)(struct iw_ev_work *w);
};
void iw_ev_work_queue(struct iw_ev *ev, struct iw_ev_work *w);
void iw_ev_work_cancel(struct iw_ev *ev, struct iw_ev_work *w);

#endif
