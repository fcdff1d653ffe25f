/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A completion channel delivered on the application's loop (chan_loop.h).
 *
 * Two libevent events on the base, and libevent bases here are not
 * thread-safe, so each is touched only on the loop's thread:
 *   wake  no fd; the evq's notifier activates it when the loop's thread
 *         pushes an event (the count went to memory: nothing else would
 *         make the loop look);
 *   fdev  the eventfd, level-triggered: counts written by other threads.
 * Either runs the application's callback. Counts left in memory after it
 * returns activate wake again (an fd that stays readable fires again by
 * itself), so an event is never stranded, and nothing fires once none is
 * queued.
 *
 * The callback may set the loop to NULL or destroy the channel: the
 * struct is then only marked, and freed when the callback returns.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdbool.h>

#include "engine/context.h"
#include "base/alloc.h"
#include "io/chan_loop.h"

struct chan_loop {
	struct iw_comp_channel_int *ch; /* NULL once detached */
	const struct iw_alloc_ops *alloc;
	struct event *wake, *fdev;
	iw_chan_loop_cb *cb;
	void *arg;
	bool running; /* in cb: detaching only marks */
};

static void loop_free_now(struct chan_loop *l)
{
	if (l->wake)
		event_free(l->wake);
	if (l->fdev)
		event_free(l->fdev);
	iw_free(l->alloc, l);
}

/* The evq's notifier: on the loop's thread, right after a count went to
 * memory (no lock held). Activating an active event changes nothing. */
static void notify(void *arg)
{
	struct chan_loop *l = arg;

	event_active(l->wake, EV_READ, 1);
}

static void run(evutil_socket_t fd, short what, void *arg)
{
	struct chan_loop *l = arg;

	(void)fd;
	(void)what;
	l->running = true;
	l->cb(&l->ch->pub, l->arg);
	l->running = false;
	if (!l->ch)
		loop_free_now(l);
	else if (iw_evq_mem_count(&l->ch->q))
		event_active(l->wake, EV_READ, 1);
}

/* Take l off its channel: counts in memory go back to the fd. */
static void detach(void *loop)
{
	struct chan_loop *l = loop;

	iw_evq_clear_notifier(&l->ch->q);
	l->ch->loop = NULL;
	l->ch = NULL;
	if (!l->running)
		loop_free_now(l);
}

static struct chan_loop *loop_new(struct iw_comp_channel_int *ch, struct event_base *base)
{
	const struct iw_alloc_ops *alloc = ch->pub.context->alloc;
	struct chan_loop *l = iw_calloc(alloc, 1, sizeof(*l));

	if (!l)
		return NULL;
	l->alloc = alloc;
	l->wake = event_new(base, -1, 0, run, l);
	l->fdev = event_new(base, ch->q.fd, EV_READ | EV_PERSIST, run, l);
	if (!l->wake || !l->fdev || event_add(l->fdev, NULL)) {
		loop_free_now(l);
		return NULL;
	}
	return l;
}

int iw_chan_loop_set(struct iw_comp_channel_int *ch, struct event_base *base,
		     iw_chan_loop_cb *cb, void *arg)
{
	struct chan_loop *l;

	if (!base) {
		if (ch->loop)
			detach(ch->loop);
		return 0;
	}
	if (ch->loop)
		return EBUSY;
	l = loop_new(ch, base);
	if (!l)
		return ENOMEM;
	l->ch = ch;
	l->cb = cb;
	l->arg = arg;
	ch->loop = l;
	ch->loop_free = detach;
	iw_evq_set_notifier(&ch->q, notify, l);
	/* Counts already in memory cannot exist (a fresh notifier), and
	 * the fd's are seen by fdev. */
	return 0;
}
