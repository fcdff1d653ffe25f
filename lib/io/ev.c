/* SPDX-License-Identifier: BSD-2-Clause */
/* One event loop of a context's loop group (ev.h). */
#define _GNU_SOURCE /* pthread_attr_setaffinity_np, pthread_setname_np */
#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/ev.h"

struct iw_ev_cmd {
	struct iw_ev_cmd *next;
	int (*fn)(void *);
	void *arg;
	int rc;
	bool done;
};

struct iw_ev {
	const struct iw_alloc_ops *alloc; /* the context's */
	struct event_base *base;
	unsigned index;        /* in the context's group */
	bool own;              /* base and thread are ours */
	pthread_t thread;
	bool thread_running;
	pthread_t loop_tid;    /* any thread reads it: atomic accesses only */
	bool tid_set;          /* loop_tid is known (atomic accesses) */
	pthread_mutex_t big;   /* the loop's lock */
	pthread_mutex_t qlock; /* cmds and stop */
	pthread_cond_t qcond;
	struct iw_ev_cmd *cmds, **cmd_tail;
	struct iw_ev_work *work, **work_tail; /* under qlock */
	bool stop;
	int num_ids;           /* atomic accesses */
	int kick_fd;
	struct event *kick_ev;
	unsigned char *bounce;
	size_t bounce_len;
};

/* The loop thread's id is rewritten by every callback while other threads
 * ask iw_ev_on_loop: relaxed atomic accesses (a thread only ever compares
 * it with itself, so no ordering is needed, but a plain access is a data
 * race). */
static void set_loop_tid(struct iw_ev *ev, pthread_t t)
{
	__atomic_store_n(&ev->loop_tid, t, __ATOMIC_RELAXED);
	__atomic_store_n(&ev->tid_set, true, __ATOMIC_RELEASE);
}

struct event_base *iw_ev_base(struct iw_ev *ev)
{
	return ev->base;
}

unsigned iw_ev_index(const struct iw_ev *ev)
{
	return ev->index;
}

bool iw_ev_on_loop(struct iw_ev *ev)
{
	if (!__atomic_load_n(&ev->tid_set, __ATOMIC_ACQUIRE))
		return false;
	pthread_t t = __atomic_load_n(&ev->loop_tid, __ATOMIC_RELAXED);
	return pthread_equal(pthread_self(), t);
}

void iw_ev_enter(struct iw_ev *ev)
{
	set_loop_tid(ev, pthread_self());
	pthread_mutex_lock(&ev->big);
}

void iw_ev_leave(struct iw_ev *ev)
{
	pthread_mutex_unlock(&ev->big);
}

unsigned char *iw_ev_bounce(struct iw_ev *ev, size_t *len)
{
	*len = ev->bounce_len;
	return ev->bounce;
}

void iw_ev_kick(struct iw_ev *ev)
{
	uint64_t one = 1;
	/* An eventfd write only fails when the counter would overflow, and
	 * then a kick is pending anyway. */
	if (write(ev->kick_fd, &one, sizeof(one)) < 0)
		return;
}

static void run_cmds(struct iw_ev *ev)
{
	for (;;) {
		pthread_mutex_lock(&ev->qlock);
		struct iw_ev_cmd *c = ev->cmds;
		if (c) {
			ev->cmds = c->next;
			if (!ev->cmds)
				ev->cmd_tail = &ev->cmds;
		}
		pthread_mutex_unlock(&ev->qlock);
		if (!c)
			return;
		int rc = c->fn(c->arg);
		pthread_mutex_lock(&ev->qlock);
		c->rc = rc;
		c->done = true;
		pthread_cond_broadcast(&ev->qcond);
		pthread_mutex_unlock(&ev->qlock);
	}
}

void iw_ev_work_queue(struct iw_ev *ev, struct iw_ev_work *w)
{
	pthread_mutex_lock(&ev->qlock);
	bool kick = !w->queued;
	if (kick) {
		w->queued = true;
		w->next = NULL;
		*ev->work_tail = w;
		ev->work_tail = &w->next;
	}
	pthread_mutex_unlock(&ev->qlock);
	if (kick)
		iw_ev_kick(ev);
}

void iw_ev_work_cancel(struct iw_ev *ev, struct iw_ev_work *w)
{
	pthread_mutex_lock(&ev->qlock);
	if (w->queued) {
		struct iw_ev_work **pp = &ev->work;
		while (*pp != w)
			pp = &(*pp)->next;
		*pp = w->next;
		if (ev->work_tail == &w->next)
			ev->work_tail = pp;
		w->queued = false;
	}
	pthread_mutex_unlock(&ev->qlock);
}

static void run_work(struct iw_ev *ev)
{
	for (;;) {
		pthread_mutex_lock(&ev->qlock);
		struct iw_ev_work *w = ev->work;
		if (w) {
			ev->work = w->next;
			if (!ev->work)
				ev->work_tail = &ev->work;
			w->queued = false;
		}
		pthread_mutex_unlock(&ev->qlock);
		if (!w)
			return;
		w->fn(w);
	}
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct iw_ev *ev = arg;
	uint64_t v;
	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	set_loop_tid(ev, pthread_self());
	pthread_mutex_lock(&ev->big);
	run_cmds(ev);
	run_work(ev);
	pthread_mutex_unlock(&ev->big);
	pthread_mutex_lock(&ev->qlock);
	bool stop = ev->stop;
	pthread_mutex_unlock(&ev->qlock);
	if (stop)
		event_base_loopbreak(ev->base);
}

int iw_ev_run_locked(struct iw_ev *ev, int (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&ev->big);
	int rc = fn(arg);
	pthread_mutex_unlock(&ev->big);
	return rc;
}

int iw_ev_call(struct iw_ev *ev, int (*fn)(void *), void *arg)
{
	if (iw_ev_on_loop(ev))
		return iw_ev_run_locked(ev, fn, arg);
	struct iw_ev_cmd c = {.fn = fn, .arg = arg};
	pthread_mutex_lock(&ev->qlock);
	*ev->cmd_tail = &c;
	ev->cmd_tail = &c.next;
	pthread_mutex_unlock(&ev->qlock);
	iw_ev_kick(ev);
	pthread_mutex_lock(&ev->qlock);
	while (!c.done)
		pthread_cond_wait(&ev->qcond, &ev->qlock);
	pthread_mutex_unlock(&ev->qlock);
	return c.rc;
}

int iw_ev_call_final(struct iw_ev *ev, int (*fn)(void *), void *arg)
{
	return ev->own ? iw_ev_call(ev, fn, arg) : iw_ev_run_locked(ev, fn, arg);
}

static void *loop_main(void *arg)
{
	struct iw_ev *ev = arg;
	for (;;) {
		event_base_loop(ev->base, EVLOOP_NO_EXIT_ON_EMPTY);
		pthread_mutex_lock(&ev->qlock);
		bool stop = ev->stop;
		pthread_mutex_unlock(&ev->qlock);
		if (stop)
			return NULL;
	}
}

/* The affinity is set before the thread runs, so it never runs elsewhere;
 * a set the kernel refuses fails pthread_create (EINVAL). The name only
 * labels it (ps -L, top -H, gdb): its failure is ignored. */
static int start_thread(struct iw_ev *ev, const struct iw_ev_thread_opts *t)
{
	pthread_attr_t a;
	int rc = pthread_attr_init(&a);
	if (rc)
		return rc;
	if (t && t->cpuset)
		rc = pthread_attr_setaffinity_np(&a, t->cpuset_size, t->cpuset);
	if (!rc)
		rc = pthread_create(&ev->thread, &a, loop_main, ev);
	pthread_attr_destroy(&a);
	if (rc)
		return rc;
	(void)pthread_setname_np(ev->thread, t && t->name ? t->name : IW_EV_THREAD_NAME);
	ev->thread_running = true;
	set_loop_tid(ev, ev->thread);
	return 0;
}

static void stop_thread(struct iw_ev *ev)
{
	if (!ev->thread_running)
		return;
	pthread_mutex_lock(&ev->qlock);
	ev->stop = true;
	pthread_mutex_unlock(&ev->qlock);
	iw_ev_kick(ev);
	pthread_join(ev->thread, NULL);
	ev->thread_running = false;
}

void iw_ev_free(struct iw_ev *ev)
{
	if (!ev)
		return;
	stop_thread(ev);
	if (ev->kick_ev)
		event_free(ev->kick_ev);
	if (ev->kick_fd >= 0)
		close(ev->kick_fd);
	if (ev->own && ev->base)
		event_base_free(ev->base);
	pthread_mutex_destroy(&ev->big);
	pthread_mutex_destroy(&ev->qlock);
	pthread_cond_destroy(&ev->qcond);
	iw_free(ev->alloc, ev->bounce);
	iw_free(ev->alloc, ev);
}

/* The base and its kick event; an application's base is kicked at once,
 * so that its first dispatch records the thread that runs it. */
static int ev_arm(struct iw_ev *ev, struct event_base *base)
{
	ev->own = base == NULL;
	ev->base = base ? base : event_base_new();
	ev->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ev->kick_fd < 0)
		return errno;
	if (!ev->base)
		return ENOMEM;
	ev->kick_ev = event_new(ev->base, ev->kick_fd, EV_READ | EV_PERSIST, on_kick, ev);
	if (!ev->kick_ev || event_add(ev->kick_ev, NULL))
		return ENOMEM;
	if (!ev->own)
		iw_ev_kick(ev);
	return 0;
}

int iw_ev_new(struct iw_ev **out, const struct iw_alloc_ops *a, struct event_base *base,
	      size_t bounce_len, const struct iw_ev_thread_opts *t, unsigned index,
	      bool creator_runs)
{
	struct iw_ev *ev = iw_calloc(a, 1, sizeof(*ev));
	if (!ev)
		return ENOMEM;
	ev->alloc = a;
	ev->index = index;
	ev->kick_fd = -1;
	pthread_mutex_init(&ev->big, NULL);
	pthread_mutex_init(&ev->qlock, NULL);
	pthread_cond_init(&ev->qcond, NULL);
	ev->cmd_tail = &ev->cmds;
	ev->work_tail = &ev->work;
	if (creator_runs || !base)
		set_loop_tid(ev, pthread_self());
	ev->bounce_len = bounce_len;
	ev->bounce = iw_malloc(a, bounce_len);
	int rc = ev->bounce ? ev_arm(ev, base) : ENOMEM;
	if (!rc && ev->own)
		rc = start_thread(ev, t);
	if (rc) {
		iw_ev_free(ev);
		return rc;
	}
	*out = ev;
	return 0;
}

void iw_ev_ids_add(struct iw_ev *ev, int delta)
{
	__atomic_add_fetch(&ev->num_ids, delta, __ATOMIC_RELAXED);
}

int iw_ev_ids(struct iw_ev *ev)
{
	return __atomic_load_n(&ev->num_ids, __ATOMIC_RELAXED);
}
