/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion channels delivered on the application's loop
 * (iw_comp_channel_set_loop, lib/io/chan_loop.c and the evq's notifier):
 * events raised on the loop's thread reach the callback with no eventfd
 * write, events from other threads through the fd, none is stranded when
 * the callback takes one at a time, and destroy and "no loop" with events
 * pending. The loop is run with EVLOOP_NONBLOCK a bounded number of times:
 * each test asserts what the callback saw, never how long it took.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "suites.h"
#include "testutil.h"

static atomic_int fd_writes;

static void count_write(int fd)
{
	(void)fd;
	atomic_fetch_add(&fd_writes, 1);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, 0);

	ck_assert_int_ge(n, 0);
	return n == 1 && (p.revents & POLLIN);
}

static void push_ok(struct iw_cq *cq, uint64_t wr_id)
{
	struct iw_wc wc = {.wr_id = wr_id, .status = IW_WC_SUCCESS, .opcode = IW_WC_RECV};

	ck_assert_int_eq(iw_cq_push(cq, &wc, false), 0);
}

/* What the callback saw. take: events it pops per call (0: all). */
struct seen {
	int calls, take, got;
	struct iw_cq *cqs[8];
	bool unset_in_cb; /* set the loop to NULL after the first pop */
};

static void on_events(struct iw_comp_channel *ch, void *arg)
{
	struct seen *s = arg;
	struct iw_cq *cq;

	s->calls++;
	for (int i = 0; !s->take || i < s->take; i++) {
		if (iw_get_cq_event(ch, &cq, NULL))
			break;
		iw_ack_cq_events(cq, 1);
		ck_assert_int_lt(s->got, 8);
		s->cqs[s->got++] = cq;
		if (s->unset_in_cb)
			ck_assert_int_eq(iw_comp_channel_set_loop(ch, NULL, NULL, NULL), 0);
	}
}

/* Run the loop without waiting, n times. */
static void run_loop(struct event_base *base, int n)
{
	while (n--)
		ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
}

struct fixture {
	struct iw_context ctx;
	struct event_base *base;
	struct iw_comp_channel *ch;
	struct iw_cq *cq[2];
	struct seen seen;
};

static void fx_init(struct fixture *f)
{
	tu_cq_ctx_init(&f->ctx);
	memset(&f->seen, 0, sizeof(f->seen));
	f->base = event_base_new();
	ck_assert_ptr_nonnull(f->base);
	f->ch = iw_create_comp_channel(&f->ctx);
	ck_assert_ptr_nonnull(f->ch);
	for (int i = 0; i < 2; i++) {
		f->cq[i] = iw_create_cq(&f->ctx, 8, NULL, f->ch, 0);
		ck_assert_ptr_nonnull(f->cq[i]);
		ck_assert_int_eq(iw_req_notify_cq(f->cq[i], 0), 0);
	}
	ck_assert_int_eq(iw_comp_channel_set_loop(f->ch, f->base, on_events, &f->seen), 0);
	atomic_store(&fd_writes, 0);
	iw_evq_signal_hook = count_write;
}

static void fx_fini(struct fixture *f)
{
	iw_evq_signal_hook = NULL;
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(iw_destroy_cq(f->cq[i]), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(f->ch), 0);
	event_base_free(f->base);
	tu_cq_ctx_fini(&f->ctx);
}

/* ------------------------------------------------------------ loop thread */

/* Raised on the loop's thread, inside a deferral scope as the engine
 * raises it (_i == 1) or outside (_i == 0): no fd write, the fd stays
 * unreadable, and the callback runs on the next loop pass, once. */
START_TEST(loop_thread_no_fd_write)
{
	struct fixture f;

	fx_init(&f);
	if (_i)
		iw_evq_defer_begin();
	push_ok(f.cq[0], 1);
	if (_i)
		iw_evq_defer_end();
	ck_assert_int_eq(f.seen.calls, 0); /* not inside the push */
	ck_assert_int_eq(atomic_load(&fd_writes), 0);
	ck_assert(!readable(f.ch->fd));
	run_loop(f.base, 1);
	ck_assert_int_eq(f.seen.calls, 1);
	ck_assert_int_eq(f.seen.got, 1);
	ck_assert_ptr_eq(f.seen.cqs[0], f.cq[0]);
	run_loop(f.base, 3); /* nothing queued: no further call */
	ck_assert_int_eq(f.seen.calls, 1);
	ck_assert_int_eq(atomic_load(&fd_writes), 0);
	fx_fini(&f);
}
END_TEST

/* Arming is as without a loop: an unarmed CQ raises nothing, and two
 * firings before the event is taken make one event. */
START_TEST(arming_unchanged)
{
	struct fixture f;

	fx_init(&f);
	push_ok(f.cq[0], 1);
	push_ok(f.cq[0], 2); /* fired by 1, disarmed */
	run_loop(f.base, 2);
	ck_assert_int_eq(f.seen.got, 1);
	push_ok(f.cq[0], 3); /* unarmed: nothing */
	run_loop(f.base, 2);
	ck_assert_int_eq(f.seen.got, 1);
	ck_assert_int_eq(f.seen.calls, 1);
	ck_assert_int_eq(atomic_load(&fd_writes), 0);
	fx_fini(&f);
}
END_TEST

/* ------------------------------------------------------------ other threads */

struct pusher {
	struct iw_cq *cq;
	uint64_t wr_id;
};

static void *push_thread(void *arg)
{
	struct pusher *p = arg;

	push_ok(p->cq, p->wr_id);
	return NULL;
}

/* Joined before the loop runs: the thread's push is complete. */
static void push_elsewhere(struct iw_cq *cq, uint64_t wr_id)
{
	struct pusher p = {cq, wr_id};
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, push_thread, &p), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

START_TEST(other_thread_through_fd)
{
	struct fixture f;

	fx_init(&f);
	push_elsewhere(f.cq[0], 1);
	ck_assert_int_eq(atomic_load(&fd_writes), 1);
	ck_assert(readable(f.ch->fd));
	run_loop(f.base, 1);
	ck_assert_int_eq(f.seen.calls, 1);
	ck_assert_int_eq(f.seen.got, 1);
	ck_assert(!readable(f.ch->fd));
	run_loop(f.base, 3);
	ck_assert_int_eq(f.seen.calls, 1);
	fx_fini(&f);
}
END_TEST

/* The fd is left blocking: iw_get_cq_event still returns EAGAIN when
 * nothing is queued (a test that would hang otherwise). */
START_TEST(get_never_blocks)
{
	struct fixture f;
	struct iw_cq *cq;

	fx_init(&f);
	ck_assert_int_eq(fcntl(f.ch->fd, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_eq(iw_get_cq_event(f.ch, &cq, NULL), EAGAIN);
	push_elsewhere(f.cq[1], 1);
	ck_assert_int_eq(iw_get_cq_event(f.ch, &cq, NULL), 0);
	ck_assert_ptr_eq(cq, f.cq[1]);
	iw_ack_cq_events(cq, 1);
	ck_assert_int_eq(iw_get_cq_event(f.ch, &cq, NULL), EAGAIN);
	fx_fini(&f);
}
END_TEST

/* ------------------------------------------------------------ one at a time */

/* Two CQs' events, one from memory and (_i == 1) one from the fd; the
 * callback takes one per call and is called until both are taken. */
START_TEST(one_per_call_none_stranded)
{
	struct fixture f;

	fx_init(&f);
	f.seen.take = 1;
	push_ok(f.cq[0], 1);
	if (_i)
		push_elsewhere(f.cq[1], 2);
	else
		push_ok(f.cq[1], 2);
	run_loop(f.base, 4);
	ck_assert_int_eq(f.seen.got, 2);
	ck_assert_ptr_eq(f.seen.cqs[0], f.cq[0]);
	ck_assert_ptr_eq(f.seen.cqs[1], f.cq[1]);
	ck_assert_int_eq(f.seen.calls, 2);
	ck_assert(!readable(f.ch->fd));
	ck_assert_int_eq(atomic_load(&fd_writes), _i);
	fx_fini(&f);
}
END_TEST

/* ------------------------------------------------------------ teardown */

/* A CQ destroyed with its event queued in memory: the callback finds
 * nothing (the dead event is dropped) and is not called again. */
START_TEST(destroy_cq_pending)
{
	struct fixture f;

	fx_init(&f);
	push_ok(f.cq[0], 1);
	ck_assert_int_eq(iw_destroy_cq(f.cq[0]), 0);
	f.cq[0] = NULL;
	run_loop(f.base, 3);
	ck_assert_int_eq(f.seen.calls, 1);
	ck_assert_int_eq(f.seen.got, 0);
	fx_fini(&f);
}
END_TEST

/* The channel destroyed with an event counted in memory and its wake-up
 * active on the base: the loop then runs nothing of it (ASan: no use). */
START_TEST(destroy_channel_pending)
{
	struct fixture f;

	fx_init(&f);
	push_ok(f.cq[0], 1);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(iw_destroy_cq(f.cq[i]), 0);
		f.cq[i] = NULL;
	}
	ck_assert_int_eq(iw_destroy_comp_channel(f.ch), 0);
	f.ch = NULL;
	run_loop(f.base, 2);
	ck_assert_int_eq(f.seen.calls, 0);
	fx_fini(&f);
}
END_TEST

/* Back to the fd with an event in memory: the count moves to the fd
 * (one write), a reader of the fd gets it, and the loop calls nothing. */
START_TEST(unset_hands_to_fd)
{
	struct fixture f;
	struct iw_cq *cq;

	fx_init(&f);
	push_ok(f.cq[0], 1);
	ck_assert(!readable(f.ch->fd));
	ck_assert_int_eq(iw_comp_channel_set_loop(f.ch, NULL, NULL, NULL), 0);
	ck_assert_int_eq(atomic_load(&fd_writes), 1);
	ck_assert(readable(f.ch->fd));
	run_loop(f.base, 2);
	ck_assert_int_eq(f.seen.calls, 0);
	ck_assert_int_eq(iw_get_cq_event(f.ch, &cq, NULL), 0);
	ck_assert_ptr_eq(cq, f.cq[0]);
	iw_ack_cq_events(cq, 1);
	ck_assert(!readable(f.ch->fd));
	fx_fini(&f);
}
END_TEST

/* The callback sets the loop to NULL with a second event pending: that
 * one goes to the fd, the callback is not called again. */
START_TEST(unset_in_callback)
{
	struct fixture f;
	struct iw_cq *cq;

	fx_init(&f);
	f.seen.take = 1;
	f.seen.unset_in_cb = true;
	push_ok(f.cq[0], 1);
	push_ok(f.cq[1], 2);
	run_loop(f.base, 3);
	ck_assert_int_eq(f.seen.calls, 1);
	ck_assert_int_eq(f.seen.got, 1);
	ck_assert(readable(f.ch->fd));
	ck_assert_int_eq(iw_get_cq_event(f.ch, &cq, NULL), 0);
	ck_assert_ptr_eq(cq, f.cq[1]);
	iw_ack_cq_events(cq, 1);
	fx_fini(&f);
}
END_TEST

/* ------------------------------------------------------------ errors */

static void no_cb(struct iw_comp_channel *ch, void *arg)
{
	(void)ch;
	(void)arg;
	ck_abort_msg("called");
}

START_TEST(set_loop_errors)
{
	struct fixture f;

	fx_init(&f);
	ck_assert_int_eq(iw_comp_channel_set_loop(NULL, f.base, no_cb, NULL), EINVAL);
	ck_assert_int_eq(iw_comp_channel_set_loop(f.ch, f.base, NULL, NULL), EINVAL);
	ck_assert_int_eq(iw_comp_channel_set_loop(f.ch, f.base, no_cb, NULL), EBUSY);
	ck_assert_int_eq(iw_comp_channel_set_loop(f.ch, NULL, NULL, NULL), 0);
	ck_assert_int_eq(iw_comp_channel_set_loop(f.ch, NULL, NULL, NULL), 0);
	ck_assert_int_eq(iw_comp_channel_set_loop(f.ch, f.base, on_events, &f.seen), 0);
	push_ok(f.cq[0], 1);
	run_loop(f.base, 1);
	ck_assert_int_eq(f.seen.got, 1);
	ck_assert_int_eq(atomic_load(&fd_writes), 0);
	fx_fini(&f);
}
END_TEST

Suite *suite_chan_loop(void)
{
	Suite *s = suite_create("chan_loop");
	TCase *tc = tcase_create("chan_loop");

	tcase_add_loop_test(tc, loop_thread_no_fd_write, 0, 2);
	tcase_add_test(tc, arming_unchanged);
	tcase_add_test(tc, other_thread_through_fd);
	tcase_add_test(tc, get_never_blocks);
	tcase_add_loop_test(tc, one_per_call_none_stranded, 0, 2);
	tcase_add_test(tc, destroy_cq_pending);
	tcase_add_test(tc, destroy_channel_pending);
	tcase_add_test(tc, unset_hands_to_fd);
	tcase_add_test(tc, unset_in_callback);
	tcase_add_test(tc, set_loop_errors);
	suite_add_tcase(s, tc);
	return s;
}
