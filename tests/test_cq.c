/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues, completion channels and asynchronous events
 * (lib/engine/cq.c, lib/engine/async.c): ring order and wrap, one-shot arming, event
 * accounting against destroy, overflow reporting, and many threads at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "suites.h"
#include "testutil.h"

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	ck_assert_int_ge(fl, 0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, 0);

	ck_assert_int_ge(n, 0);
	return n == 1 && (p.revents & POLLIN);
}

static struct iw_wc wc_of(uint64_t wr_id, enum iw_wc_status status)
{
	return (struct iw_wc){
		.wr_id = wr_id,
		.status = status,
		.opcode = IW_WC_RECV,
		.byte_len = (uint32_t)wr_id * 3,
		.qp_num = 7,
	};
}

static void push_ok(struct iw_cq *cq, uint64_t wr_id, bool solicited)
{
	struct iw_wc wc = wc_of(wr_id, IW_WC_SUCCESS);

	ck_assert_int_eq(iw_cq_push(cq, &wc, solicited), 0);
}

/* A channel whose fd never blocks, so "no event" is EAGAIN, not a hang. */
static struct iw_comp_channel *nb_channel(struct iw_context *ctx)
{
	struct iw_comp_channel *ch = iw_create_comp_channel(ctx);

	ck_assert_ptr_nonnull(ch);
	set_nonblock(ch->fd);
	return ch;
}

/* Expect exactly one event, for cq with cq_context want_ctx. */
static void expect_event(struct iw_comp_channel *ch, struct iw_cq *cq, void *want_ctx)
{
	struct iw_cq *got = NULL;
	void *got_ctx = NULL;

	ck_assert(readable(ch->fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got, &got_ctx), 0);
	ck_assert_ptr_eq(got, cq);
	ck_assert_ptr_eq(got_ctx, want_ctx);
	ck_assert(!readable(ch->fd));
}

static void expect_no_event(struct iw_comp_channel *ch)
{
	struct iw_cq *got = NULL;
	void *got_ctx = NULL;

	ck_assert(!readable(ch->fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got, &got_ctx), EAGAIN);
	ck_assert_ptr_null(got);
}

/* ------------------------------------------------------------ create */

START_TEST(create_einval)
{
	struct iw_context ctx, other;
	struct iw_comp_channel *ch;

	tu_cq_ctx_init(&ctx);
	tu_cq_ctx_init(&other);
	errno = 0;
	ck_assert_ptr_null(iw_create_cq(&ctx, 0, NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_create_cq(&ctx, -5, NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_create_cq(NULL, 4, NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_create_cq(&ctx, IW_CQ_MAX_CQE + 1, NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_create_comp_channel(NULL));
	ck_assert_int_eq(errno, EINVAL);
	/* A channel belongs to one context. */
	ch = iw_create_comp_channel(&other);
	ck_assert_ptr_nonnull(ch);
	errno = 0;
	ck_assert_ptr_null(iw_create_cq(&ctx, 4, NULL, ch, 0));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ch->refcnt, 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	ck_assert_int_eq(iw_destroy_cq(NULL), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(NULL), 0);
	ck_assert_int_eq(iw_req_notify_cq(NULL, 0), EINVAL);
	ck_assert_int_eq(iw_poll_cq(NULL, 1, NULL), -EINVAL);
	iw_ack_cq_events(NULL, 1);
	tu_cq_ctx_fini(&other);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(create_fields)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;
	int tag;

	tu_cq_ctx_init(&ctx);
	ch = iw_create_comp_channel(&ctx);
	ck_assert_ptr_nonnull(ch);
	ck_assert_ptr_eq(ch->context, &ctx);
	ck_assert_int_eq(ch->fd, ((struct iw_comp_channel_int *)ch)->q.fd);
	ck_assert(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC);
	cq = iw_create_cq(&ctx, 5, &tag, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_ptr_eq(cq->context, &ctx);
	ck_assert_ptr_eq(cq->channel, ch);
	ck_assert_ptr_eq(cq->cq_context, &tag);
	ck_assert_uint_ge(cq->cap, 5);
	ck_assert_uint_eq(iw_cq_room(cq), cq->cap);
	ck_assert_int_eq(ch->refcnt, 1);
	ck_assert_int_eq(cq->armed, IW_CQ_UNARMED);
	ck_assert_int_eq(atomic_load(&cq->use), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(ch->refcnt, 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ poll */

START_TEST(poll_order)
{
	struct iw_context ctx;
	struct iw_cq *cq;
	struct iw_wc wc[16];

	tu_cq_ctx_init(&ctx);
	cq = iw_create_cq(&ctx, 16, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(iw_poll_cq(cq, 16, wc), 0);
	for (uint64_t i = 0; i < 10; i++) {
		struct iw_wc in = wc_of(100 + i, i % 3 ? IW_WC_SUCCESS : IW_WC_WR_FLUSH_ERR);

		in.imm_data = (uint32_t)i;
		in.wc_flags = IW_WC_WITH_IMM;
		ck_assert_int_eq(iw_cq_push(cq, &in, false), 0);
	}
	ck_assert_uint_eq(iw_cq_room(cq), cq->cap - 10);
	ck_assert_int_eq(iw_poll_cq(cq, 16, wc), 10);
	for (uint64_t i = 0; i < 10; i++) {
		struct iw_wc want = wc_of(100 + i, i % 3 ? IW_WC_SUCCESS : IW_WC_WR_FLUSH_ERR);

		want.imm_data = (uint32_t)i;
		want.wc_flags = IW_WC_WITH_IMM;
		ck_assert_mem_eq(&wc[i], &want, sizeof(want));
	}
	ck_assert_int_eq(iw_poll_cq(cq, 16, wc), 0);
	ck_assert_uint_eq(iw_cq_room(cq), cq->cap);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(poll_partial)
{
	struct iw_context ctx;
	struct iw_cq *cq;
	struct iw_wc wc[4];
	uint64_t next = 0;
	/* 3 + 3 + 1: a poll returns what is there, up to what was asked. */
	static const int want[] = {3, 3, 1, 0};

	tu_cq_ctx_init(&ctx);
	cq = iw_create_cq(&ctx, 8, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	for (uint64_t i = 0; i < 7; i++)
		push_ok(cq, i, false);
	ck_assert_int_eq(iw_poll_cq(cq, 0, NULL), 0);
	ck_assert_int_eq(iw_poll_cq(cq, -1, wc), -EINVAL);
	ck_assert_int_eq(iw_poll_cq(cq, 1, NULL), -EINVAL);
	for (int r = 0; r < 4; r++) {
		int n = iw_poll_cq(cq, 3, wc);

		ck_assert_int_eq(n, want[r]);
		for (int i = 0; i < n; i++)
			ck_assert_uint_eq(wc[i].wr_id, next++);
	}
	ck_assert_uint_eq(next, 7);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* Odd capacity and chunk sizes that are coprime with it, so head and tail
 * cross the end of the ring at every offset, many times over. */
START_TEST(ring_wraps)
{
	struct iw_context ctx;
	struct iw_cq *cq;
	struct iw_wc wc[7];
	uint64_t pushed = 0, polled = 0;
	unsigned seed = 12345;

	tu_cq_ctx_init(&ctx);
	cq = iw_create_cq(&ctx, 7, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_uint_eq(cq->cap, 7);
	for (int round = 0; round < 5000; round++) {
		uint32_t room = iw_cq_room(cq);
		uint32_t k = (uint32_t)rand_r(&seed) % (room + 1);
		int n;

		for (uint32_t i = 0; i < k; i++)
			push_ok(cq, pushed++, false);
		ck_assert_uint_eq(iw_cq_room(cq), room - k);
		n = iw_poll_cq(cq, 1 + rand_r(&seed) % 7, wc);
		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++) {
			ck_assert_uint_eq(wc[i].wr_id, polled);
			ck_assert_uint_eq(wc[i].byte_len, (uint32_t)polled * 3);
			polled++;
		}
	}
	while (polled < pushed) {
		int n = iw_poll_cq(cq, 7, wc);

		ck_assert_int_gt(n, 0);
		for (int i = 0; i < n; i++)
			ck_assert_uint_eq(wc[i].wr_id, polled++);
	}
	/* The ring went round thousands of times, none lost. */
	ck_assert_uint_gt(pushed, 7 * 1000);
	ck_assert_uint_eq(cq->lost, 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ arming */

START_TEST(arm_next_fires_once)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;
	struct iw_wc wc[4];
	int tag;

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 8, &tag, ch, 0);
	ck_assert_ptr_nonnull(cq);
	/* Unarmed: completions raise nothing. */
	push_ok(cq, 1, true);
	expect_no_event(ch);
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	ck_assert(!readable(ch->fd));
	push_ok(cq, 2, false);
	expect_event(ch, cq, &tag);
	/* One-shot: the next completions are silent until re-armed. */
	push_ok(cq, 3, false);
	push_ok(cq, 4, true);
	expect_no_event(ch);
	ck_assert_int_eq(iw_poll_cq(cq, 4, wc), 4);
	iw_ack_cq_events(cq, 1);
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	push_ok(cq, 5, false);
	expect_event(ch, cq, &tag);
	iw_ack_cq_events(cq, 1);
	ck_assert_uint_eq(cq->events_raised, 2);
	ck_assert_uint_eq(cq->events_acked, 2);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* As in libibverbs, arming looks forward: what is already in the CQ does
 * not fire it (callers arm, then poll, then wait). */
START_TEST(arm_ignores_existing)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 8, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	push_ok(cq, 1, true);
	push_ok(cq, 2, false);
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	expect_no_event(ch);
	push_ok(cq, 3, false);
	expect_event(ch, cq, NULL);
	iw_ack_cq_events(cq, 1);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(arm_solicited)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;
	struct iw_wc err = wc_of(9, IW_WC_REM_ACCESS_ERR);

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 16, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(iw_req_notify_cq(cq, 1), 0);
	push_ok(cq, 1, false);
	push_ok(cq, 2, false);
	expect_no_event(ch);
	push_ok(cq, 3, true);
	expect_event(ch, cq, NULL);
	/* An unsuccessful completion counts as solicited (ibv semantics). */
	ck_assert_int_eq(iw_req_notify_cq(cq, 1), 0);
	ck_assert_int_eq(iw_cq_push(cq, &err, false), 0);
	expect_event(ch, cq, NULL);
	/* A later solicited-only request does not narrow a NEXT arming. */
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	ck_assert_int_eq(iw_req_notify_cq(cq, 1), 0);
	push_ok(cq, 4, false);
	expect_event(ch, cq, NULL);
	/* But a NEXT request widens a solicited one. */
	ck_assert_int_eq(iw_req_notify_cq(cq, 1), 0);
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	push_ok(cq, 5, false);
	expect_event(ch, cq, NULL);
	iw_ack_cq_events(cq, 4);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* Two CQs on one channel: events come out in firing order, each naming
 * its own CQ; a CQ that fires twice before being read coalesces. */
START_TEST(channel_shared)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *a, *b, *got;
	void *got_ctx;
	int ta, tb;

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	a = iw_create_cq(&ctx, 4, &ta, ch, 0);
	b = iw_create_cq(&ctx, 4, &tb, ch, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(ch->refcnt, 2);
	ck_assert_int_eq(iw_req_notify_cq(b, 0), 0);
	ck_assert_int_eq(iw_req_notify_cq(a, 0), 0);
	push_ok(b, 1, false);
	ck_assert_int_eq(iw_req_notify_cq(b, 0), 0);
	push_ok(b, 2, false); /* b's event is still queued */
	push_ok(a, 3, false);
	ck_assert(readable(ch->fd));
	ck_assert_int_eq(iw_get_cq_event(ch, &got, &got_ctx), 0);
	ck_assert_ptr_eq(got, b);
	ck_assert_ptr_eq(got_ctx, &tb);
	expect_event(ch, a, &ta);
	expect_no_event(ch);
	iw_ack_cq_events(a, 1);
	iw_ack_cq_events(b, 1);
	ck_assert_int_eq(iw_destroy_cq(a), 0);
	ck_assert_int_eq(iw_destroy_cq(b), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ destroy */

START_TEST(destroy_busy_until_acked)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 4, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
		push_ok(cq, (uint64_t)i, false);
		expect_event(ch, cq, NULL);
	}
	ck_assert_int_eq(iw_destroy_cq(cq), EBUSY);
	iw_ack_cq_events(cq, 2);
	ck_assert_int_eq(iw_destroy_cq(cq), EBUSY);
	iw_ack_cq_events(cq, 0);
	ck_assert_int_eq(iw_destroy_cq(cq), EBUSY);
	/* The refused destroys changed nothing. */
	ck_assert_int_eq(ch->refcnt, 1);
	iw_ack_cq_events(cq, 1);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(ch->refcnt, 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(destroy_busy_while_used)
{
	struct iw_context ctx;
	struct iw_cq *cq;

	tu_cq_ctx_init(&ctx);
	cq = iw_create_cq(&ctx, 4, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	atomic_fetch_add(&cq->use, 2);
	ck_assert_int_eq(iw_destroy_cq(cq), EBUSY);
	atomic_fetch_sub(&cq->use, 1);
	ck_assert_int_eq(iw_destroy_cq(cq), EBUSY);
	push_ok(cq, 1, false); /* still fully alive */
	atomic_fetch_sub(&cq->use, 1);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* An event not yet read does not hold destroy up (libibverbs drops it
 * too); the channel then forgets it and frees the CQ's memory. _i = 0:
 * the next get meets the dead event; _i = 1: channel destroy does. ASan and
 * valgrind check that the memory is neither leaked nor touched after. */
START_TEST(destroy_kills_queued_event)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq, *other;

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 4, NULL, ch, 0);
	other = iw_create_cq(&ctx, 4, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_ptr_nonnull(other);
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	ck_assert_int_eq(iw_req_notify_cq(other, 0), 0);
	push_ok(cq, 1, false);
	push_ok(other, 2, false);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(ch->refcnt, 1);
	if (_i == 0) {
		/* The dead event is skipped; the live one behind it comes out. */
		expect_event(ch, other, NULL);
		expect_no_event(ch);
		iw_ack_cq_events(other, 1);
		ck_assert_int_eq(iw_destroy_cq(other), 0);
	} else {
		ck_assert_int_eq(iw_destroy_cq(other), 0);
	}
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(destroy_channel_busy)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *a, *b, *plain;

	tu_cq_ctx_init(&ctx);
	ch = iw_create_comp_channel(&ctx);
	ck_assert_ptr_nonnull(ch);
	a = iw_create_cq(&ctx, 2, NULL, ch, 0);
	b = iw_create_cq(&ctx, 2, NULL, ch, 0);
	plain = iw_create_cq(&ctx, 2, NULL, NULL, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(plain);
	ck_assert_int_eq(ch->refcnt, 2);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), EBUSY);
	ck_assert_int_eq(iw_destroy_cq(a), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), EBUSY);
	ck_assert_int_eq(iw_destroy_cq(plain), 0); /* not on the channel */
	ck_assert_int_eq(iw_destroy_comp_channel(ch), EBUSY);
	ck_assert_int_eq(iw_destroy_cq(b), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ overflow */

static void expect_cq_err(struct iw_context *ctx, struct iw_cq *cq)
{
	struct iw_async_event ev;

	memset(&ev, 0xa5, sizeof(ev));
	ck_assert(readable(iw_context_async_fd(ctx)));
	ck_assert_int_eq(iw_get_async_event(ctx, &ev), 0);
	ck_assert_int_eq(ev.event_type, IW_EVENT_CQ_ERR);
	ck_assert_ptr_eq(ev.element.cq, cq);
	ck_assert_uint_eq(ev.term, IW_TERM_NONE);
	ck_assert(!ev.term_from_peer);
	iw_ack_async_event(&ev);
}

static void expect_no_async(struct iw_context *ctx)
{
	struct iw_async_event ev = {0};

	ck_assert(!readable(iw_context_async_fd(ctx)));
	ck_assert_int_eq(iw_get_async_event(ctx, &ev), EAGAIN);
	ck_assert_int_eq(ev.event_type, 0);
}

START_TEST(overflow_once_per_episode)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;
	struct iw_wc wc[8];
	struct iw_wc extra = wc_of(99, IW_WC_SUCCESS);

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 4, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_uint_eq(cq->cap, 4);
	for (uint64_t i = 0; i < 4; i++)
		push_ok(cq, i, false);
	ck_assert_uint_eq(iw_cq_room(cq), 0);
	expect_no_async(&ctx);
	/* A rejected completion fires no arming either: it is not there. */
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iw_cq_push(cq, &extra, true), -ENOSPC);
	ck_assert_uint_eq(cq->lost, 3);
	expect_no_event(ch);
	expect_cq_err(&ctx, cq);
	expect_no_async(&ctx); /* one per episode, not one per loss */
	/* One slot freed ends the episode; the next overflow is a new one. */
	ck_assert_int_eq(iw_poll_cq(cq, 1, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 0);
	push_ok(cq, 4, false);
	expect_event(ch, cq, NULL);
	ck_assert_int_eq(iw_cq_push(cq, &extra, false), -ENOSPC);
	ck_assert_int_eq(iw_cq_push(cq, &extra, false), -ENOSPC);
	ck_assert_uint_eq(cq->lost, 5);
	expect_cq_err(&ctx, cq);
	expect_no_async(&ctx);
	/* What was accepted is intact and in order. */
	ck_assert_int_eq(iw_poll_cq(cq, 8, wc), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 1);
	ck_assert_uint_eq(ctx.async_lost, 0);
	iw_ack_cq_events(cq, 1);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* An unread CQ_ERR naming a destroyed CQ is never handed out. */
START_TEST(destroy_forgets_async)
{
	struct iw_context ctx;
	struct iw_cq *cq, *keep;
	struct iw_wc wc = wc_of(1, IW_WC_SUCCESS);

	tu_cq_ctx_init(&ctx);
	cq = iw_create_cq(&ctx, 1, NULL, NULL, 0);
	keep = iw_create_cq(&ctx, 1, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_ptr_nonnull(keep);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(iw_cq_push(cq, &wc, false), i ? -ENOSPC : 0);
		ck_assert_int_eq(iw_cq_push(keep, &wc, false), i ? -ENOSPC : 0);
	}
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	expect_cq_err(&ctx, keep);
	expect_no_async(&ctx);
	ck_assert_int_eq(iw_destroy_cq(keep), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(async_fifo_and_eagain)
{
	struct iw_context ctx;
	struct iw_async_event ev;
	static const enum iw_event_type types[] = {
		IW_EVENT_QP_FATAL, IW_EVENT_QP_TERMINATE, IW_EVENT_SRQ_LIMIT_REACHED,
	};
	int fd;

	tu_cq_ctx_init(&ctx);
	fd = iw_context_async_fd(&ctx);
	ck_assert_int_eq(fd, ctx.async.fd);
	/* Never blocks, though nobody made the fd nonblocking. */
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	expect_no_async(&ctx);
	ck_assert_int_eq(iw_get_async_event(&ctx, NULL), EINVAL);
	ck_assert_int_eq(iw_get_async_event(NULL, &ev), EINVAL);
	for (int i = 0; i < 3; i++) {
		struct iw_async_event in = {
			.event_type = types[i],
			.element.qp = (struct iw_qp *)(uintptr_t)(0x1000 + i),
			.term = (uint16_t)(0x100 + i),
			.term_from_peer = i == 1,
		};

		iw_async_raise(&ctx, &in);
	}
	for (int i = 0; i < 3; i++) {
		ck_assert(readable(fd));
		ck_assert_int_eq(iw_get_async_event(&ctx, &ev), 0);
		ck_assert_int_eq(ev.event_type, types[i]);
		ck_assert_ptr_eq(ev.element.qp, (struct iw_qp *)(uintptr_t)(0x1000 + i));
		/* Only the QP events carry a triple; the others say none. */
		ck_assert_uint_eq(ev.term, types[i] == IW_EVENT_SRQ_LIMIT_REACHED ? IW_TERM_NONE
										   : 0x100u + i);
		ck_assert(ev.term_from_peer == (i == 1));
		iw_ack_async_event(&ev);
	}
	expect_no_async(&ctx);
	iw_ack_async_event(NULL);
	/* Events left queued are freed by the context's cleanup. */
	iw_async_raise(&ctx, &ev);
	iw_async_raise(&ctx, &ev);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

START_TEST(async_forget_by_element)
{
	struct iw_context ctx;
	struct iw_async_event ev;
	int a, b;

	tu_cq_ctx_init(&ctx);
	for (int i = 0; i < 4; i++) {
		struct iw_async_event in = {
			.event_type = IW_EVENT_QP_FATAL,
			.element.qp = (struct iw_qp *)(i % 2 ? (void *)&b : (void *)&a),
		};

		iw_async_raise(&ctx, &in);
	}
	ck_assert_uint_eq(iw_async_forget(&ctx, &a), 2);
	ck_assert_uint_eq(iw_async_forget(&ctx, &a), 0);
	ck_assert_uint_eq(iw_async_forget(NULL, &a), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(iw_get_async_event(&ctx, &ev), 0);
		ck_assert_ptr_eq((void *)ev.element.qp, &b);
	}
	expect_no_async(&ctx);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ threads */

#define MT_PRODUCERS 4
#define MT_CONSUMERS 2
#define MT_PER 20000
#define MT_TOTAL (MT_PRODUCERS * MT_PER)

struct mt {
	struct iw_cq *cq;
	atomic_int next_producer;
	atomic_int polled;
	atomic_ulong rejected;
	atomic_uchar seen[MT_TOTAL];
};

static void *mt_produce(void *arg)
{
	struct mt *m = arg;
	uint64_t base = (uint64_t)atomic_fetch_add(&m->next_producer, 1) * MT_PER;
	unsigned long rejected = 0;

	for (uint64_t i = 0; i < MT_PER; i++) {
		struct iw_wc wc = wc_of(base + i, IW_WC_SUCCESS);
		int rc;

		/* A full ring refuses and counts; the producer retries. */
		while ((rc = iw_cq_push(m->cq, &wc, (i & 7) == 0)) == -ENOSPC) {
			rejected++;
			sched_yield();
		}
		ck_assert_int_eq(rc, 0);
	}
	atomic_fetch_add(&m->rejected, rejected);
	return NULL;
}

static void *mt_consume(void *arg)
{
	struct mt *m = arg;
	/* Within one consumer, each producer's completions come in order:
	 * the ring is FIFO and this consumer's polls are sequential. */
	int64_t last[MT_PRODUCERS];
	unsigned seed = (unsigned)(uintptr_t)&last;
	struct iw_wc wc[16];

	for (int p = 0; p < MT_PRODUCERS; p++)
		last[p] = -1;
	while (atomic_load(&m->polled) < MT_TOTAL) {
		int n = iw_poll_cq(m->cq, 1 + rand_r(&seed) % 16, wc);

		ck_assert_int_ge(n, 0);
		if (n == 0) {
			sched_yield();
			continue;
		}
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;
			int p = (int)(id / MT_PER);

			ck_assert_uint_lt(id, MT_TOTAL);
			ck_assert_uint_eq(wc[i].byte_len, (uint32_t)id * 3);
			ck_assert_int_gt((int64_t)(id % MT_PER), last[p]);
			last[p] = (int64_t)(id % MT_PER);
			atomic_fetch_add(&m->seen[id], 1);
		}
		atomic_fetch_add(&m->polled, n);
	}
	return NULL;
}

/* _i = 0: a small ring that fills up all the time (rejections must equal
 * cq->lost); _i = 1: room for everything (nothing may be rejected). */
START_TEST(threads_every_wr_once)
{
	struct iw_context ctx;
	struct mt *m = calloc(1, sizeof(*m));
	pthread_t p[MT_PRODUCERS], c[MT_CONSUMERS];
	unsigned long rejected;
	int polled;

	ck_assert_ptr_nonnull(m);
	tu_cq_ctx_init(&ctx);
	m->cq = iw_create_cq(&ctx, _i ? MT_TOTAL : 64, NULL, NULL, 0);
	ck_assert_ptr_nonnull(m->cq);
	for (int i = 0; i < MT_CONSUMERS; i++)
		ck_assert_int_eq(pthread_create(&c[i], NULL, mt_consume, m), 0);
	for (int i = 0; i < MT_PRODUCERS; i++)
		ck_assert_int_eq(pthread_create(&p[i], NULL, mt_produce, m), 0);
	for (int i = 0; i < MT_PRODUCERS; i++)
		ck_assert_int_eq(pthread_join(p[i], NULL), 0);
	for (int i = 0; i < MT_CONSUMERS; i++)
		ck_assert_int_eq(pthread_join(c[i], NULL), 0);
	polled = atomic_load(&m->polled);
	rejected = atomic_load(&m->rejected);
	ck_assert_int_eq(polled, MT_TOTAL);
	for (int i = 0; i < MT_TOTAL; i++) {
		unsigned seen = atomic_load(&m->seen[i]);

		ck_assert_uint_eq(seen, 1);
	}
	ck_assert_uint_eq(m->cq->lost, rejected);
	if (_i)
		ck_assert_uint_eq(m->cq->lost, 0);
	ck_assert_uint_eq(iw_cq_room(m->cq), m->cq->cap);
	ck_assert_int_eq(iw_destroy_cq(m->cq), 0);
	tu_cq_ctx_fini(&ctx);
	free(m);
}
END_TEST

/* The classic verbs loop in a consumer thread: wait, ack, re-arm, drain.
 * A lost wake-up would leave it asleep in iw_get_cq_event forever (the
 * test's timeout reports that). */
#define NOTIFY_TOTAL 3000

struct notify {
	struct iw_comp_channel *ch;
	struct iw_cq *cq;
	int tag;
	int seen;
	unsigned events;
};

static int drain(struct notify *nt)
{
	struct iw_wc wc[8];
	int n, got = 0;

	while ((n = iw_poll_cq(nt->cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++)
			ck_assert_uint_eq(wc[i].wr_id, (uint64_t)nt->seen + (uint64_t)i);
		__atomic_store_n(&nt->seen, nt->seen + n, __ATOMIC_RELEASE);
		got += n;
	}
	ck_assert_int_eq(n, 0);
	return got;
}

#define NOTIFY_BATCH 64

/* The producer's side of the hand-off: wait (bounded by the test's
 * timeout) until the consumer has seen n completions. */
static void wait_seen(struct notify *nt, int n)
{
	while (__atomic_load_n(&nt->seen, __ATOMIC_ACQUIRE) < n)
		sched_yield();
}

static void *notify_consume(void *arg)
{
	struct notify *nt = arg;

	ck_assert_int_eq(iw_req_notify_cq(nt->cq, 0), 0);
	drain(nt);
	while (nt->seen < NOTIFY_TOTAL) {
		struct iw_cq *cq;
		void *cq_ctx;

		/* Blocking channel fd: sleeps until the next event. */
		ck_assert_int_eq(iw_get_cq_event(nt->ch, &cq, &cq_ctx), 0);
		ck_assert_ptr_eq(cq, nt->cq);
		ck_assert_ptr_eq(cq_ctx, &nt->tag);
		nt->events++;
		iw_ack_cq_events(cq, 1);
		ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
		drain(nt);
	}
	return NULL;
}

START_TEST(thread_waits_on_channel)
{
	struct iw_context ctx;
	struct notify nt = {0};
	pthread_t th;

	tu_cq_ctx_init(&ctx);
	nt.ch = iw_create_comp_channel(&ctx);
	ck_assert_ptr_nonnull(nt.ch);
	nt.cq = iw_create_cq(&ctx, NOTIFY_TOTAL, &nt.tag, nt.ch, 0);
	ck_assert_ptr_nonnull(nt.cq);
	ck_assert_int_eq(pthread_create(&th, NULL, notify_consume, &nt), 0);
	for (int i = 0; i < NOTIFY_TOTAL; i++) {
		/* Each batch starts only once the consumer has taken every
		 * completion before it, so it is asleep or about to be (a
		 * fixed sleep here left it unscheduled on a loaded host). */
		if (i % NOTIFY_BATCH == 0)
			wait_seen(&nt, i);
		push_ok(nt.cq, (uint64_t)i, false);
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(nt.seen, NOTIFY_TOTAL);
	/* Batch 1 is pushed only after batch 0 was drained, so either an
	 * arming was still pending then or it had fired: the wake-up path
	 * ran at least once, however the threads were scheduled. */
	ck_assert_uint_gt(nt.events, 0);
	/* The last arming may have fired after the consumer's final drain. */
	if (readable(nt.ch->fd)) {
		struct iw_cq *cq;
		void *cq_ctx;

		ck_assert_int_eq(iw_get_cq_event(nt.ch, &cq, &cq_ctx), 0);
		iw_ack_cq_events(cq, 1);
	}
	ck_assert_int_eq(iw_destroy_cq(nt.cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(nt.ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ resize */

static void poll_expect(struct iw_cq *cq, uint64_t from, uint64_t to)
{
	struct iw_wc wc;

	for (uint64_t i = from; i < to; i++) {
		ck_assert_int_eq(iw_poll_cq(cq, 1, &wc), 1);
		ck_assert_uint_eq(wc.wr_id, i);
		ck_assert_uint_eq(wc.byte_len, (uint32_t)i * 3);
	}
	ck_assert_int_eq(iw_poll_cq(cq, 1, &wc), 0);
}

/* Grow and shrink a CQ whose ring has wrapped: what it holds stays, in
 * order, once; the new size is exact; shrinking below what is queued is
 * refused and changes nothing. */
START_TEST(resize_keeps_completions)
{
	struct iw_context ctx;
	struct iw_comp_channel *ch;
	struct iw_cq *cq;
	struct iw_wc wc[4];
	struct iw_wc extra = wc_of(99, IW_WC_SUCCESS);

	tu_cq_ctx_init(&ctx);
	ch = nb_channel(&ctx);
	cq = iw_create_cq(&ctx, 4, NULL, ch, 0);
	ck_assert_ptr_nonnull(cq);
	for (uint64_t i = 0; i < 4; i++)
		push_ok(cq, i, false);
	ck_assert_int_eq(iw_poll_cq(cq, 3, wc), 3);
	for (uint64_t i = 4; i < 7; i++)
		push_ok(cq, i, false); /* 3..6 queued, wrapped around slot 0 */
	ck_assert_int_eq(iw_resize_cq(cq, 3), EINVAL);
	ck_assert_int_eq(iw_resize_cq(cq, 0), EINVAL);
	ck_assert_int_eq(iw_resize_cq(cq, IW_CQ_MAX_CQE + 1), EINVAL);
	ck_assert_int_eq(iw_resize_cq(NULL, 8), EINVAL);
	ck_assert_uint_eq(iw_cq_room(cq), 0);
	/* Full and overflowing: the episode ends once there is room. */
	ck_assert_int_eq(iw_cq_push(cq, &extra, false), -ENOSPC);
	expect_cq_err(&ctx, cq);
	ck_assert_int_eq(iw_resize_cq(cq, 10), 0);
	ck_assert_uint_eq(iw_cq_room(cq), 6);
	/* The arming survives the resize and fires on the next push. */
	ck_assert_int_eq(iw_req_notify_cq(cq, 0), 0);
	for (uint64_t i = 7; i < 13; i++)
		push_ok(cq, i, false);
	expect_event(ch, cq, NULL);
	ck_assert_int_eq(iw_cq_push(cq, &extra, false), -ENOSPC);
	expect_cq_err(&ctx, cq); /* a new episode after the resize */
	ck_assert_int_eq(iw_poll_cq(cq, 4, wc), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 3);
	/* Shrink to exactly what is queued (7..12). */
	ck_assert_int_eq(iw_resize_cq(cq, 5), EINVAL);
	ck_assert_int_eq(iw_resize_cq(cq, 6), 0);
	ck_assert_uint_eq(iw_cq_room(cq), 0);
	poll_expect(cq, 7, 13);
	ck_assert_int_eq(iw_resize_cq(cq, 1), 0);
	push_ok(cq, 13, false);
	ck_assert_int_eq(iw_cq_push(cq, &extra, false), -ENOSPC);
	poll_expect(cq, 13, 14);
	ck_assert_uint_eq(cq->lost, 3);
	iw_ack_cq_events(cq, 1);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(ch), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

#define RS_TOTAL 200000

struct resize_mt {
	struct iw_cq *cq;
	atomic_bool done;
	uint64_t next; /* poller: the wr_id expected next */
};

/* One producer in order, retrying a push the full CQ refused (a refused
 * completion is not in the CQ, so retrying cannot duplicate it). */
static void *rs_produce(void *arg)
{
	struct resize_mt *m = arg;

	for (uint64_t i = 0; i < RS_TOTAL; i++) {
		struct iw_wc wc = wc_of(i, IW_WC_SUCCESS);

		while (iw_cq_push(m->cq, &wc, false) == -ENOSPC)
			sched_yield();
	}
	atomic_store(&m->done, true);
	return NULL;
}

static void *rs_consume(void *arg)
{
	struct resize_mt *m = arg;
	struct iw_wc wc[16];

	while (m->next < RS_TOTAL) {
		int n = iw_poll_cq(m->cq, 16, wc);

		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++)
			ck_assert_uint_eq(wc[i].wr_id, m->next++);
		if (n == 0)
			sched_yield();
	}
	return NULL;
}

/* Resizing up and down while one thread pushes and another polls: every
 * completion comes out exactly once, in order. */
START_TEST(resize_while_busy)
{
	struct iw_context ctx;
	struct resize_mt m = {0};
	pthread_t p, c;
	unsigned ok = 0;

	tu_cq_ctx_init(&ctx);
	m.cq = iw_create_cq(&ctx, 64, NULL, NULL, 0);
	ck_assert_ptr_nonnull(m.cq);
	ck_assert_int_eq(pthread_create(&c, NULL, rs_consume, &m), 0);
	ck_assert_int_eq(pthread_create(&p, NULL, rs_produce, &m), 0);
	for (int i = 0; !atomic_load(&m.done); i++) {
		int rc = iw_resize_cq(m.cq, 8 + (i % 7) * 37);

		ck_assert(rc == 0 || rc == EINVAL); /* EINVAL: more queued than asked */
		ok += rc == 0;
	}
	ck_assert_int_eq(pthread_join(p, NULL), 0);
	ck_assert_int_eq(pthread_join(c, NULL), 0);
	ck_assert_uint_eq(m.next, RS_TOTAL);
	ck_assert_uint_gt(ok, 0);
	ck_assert_int_eq(iw_destroy_cq(m.cq), 0);
	tu_cq_ctx_fini(&ctx);
}
END_TEST

/* ------------------------------------------------------------ strings */

static void check_distinct(const char *const *s, int n)
{
	for (int i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(s[i]);
		ck_assert_str_ne(s[i], "unknown");
		ck_assert_int_gt((int)strlen(s[i]), 0);
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(s[i], s[j]);
	}
}

START_TEST(wc_status_strings)
{
	const char *s[IW_WC_GENERAL_ERR + 1];

	for (int i = IW_WC_SUCCESS; i <= IW_WC_GENERAL_ERR; i++)
		s[i] = iw_wc_status_str((enum iw_wc_status)i);
	check_distinct(s, IW_WC_GENERAL_ERR + 1);
	ck_assert_str_eq(iw_wc_status_str(IW_WC_SUCCESS), "success");
	ck_assert_str_eq(iw_wc_status_str((enum iw_wc_status)(IW_WC_GENERAL_ERR + 1)), "unknown");
	ck_assert_str_eq(iw_wc_status_str((enum iw_wc_status)-1), "unknown");
	ck_assert_str_eq(iw_wc_status_str((enum iw_wc_status)1000000), "unknown");
}
END_TEST

START_TEST(wc_opcode_strings)
{
	static const enum iw_wc_opcode ops[] = {
		IW_WC_SEND,     IW_WC_RDMA_WRITE, IW_WC_RDMA_READ, IW_WC_COMP_SWAP,
		IW_WC_FETCH_ADD, IW_WC_BIND_MW,   IW_WC_LOCAL_INV, IW_WC_REG_MR,
		IW_WC_RECV,     IW_WC_RECV_RDMA_WITH_IMM,
	};
	const char *s[10];

	for (int i = 0; i < 10; i++)
		s[i] = iw_wc_opcode_str(ops[i]);
	check_distinct(s, 10);
	/* The gap between REG_MR and RECV, and beyond the end. */
	ck_assert_str_eq(iw_wc_opcode_str((enum iw_wc_opcode)(IW_WC_REG_MR + 1)), "unknown");
	ck_assert_str_eq(iw_wc_opcode_str((enum iw_wc_opcode)(IW_WC_RECV - 1)), "unknown");
	ck_assert_str_eq(iw_wc_opcode_str((enum iw_wc_opcode)(IW_WC_RECV_RDMA_WITH_IMM + 1)),
			 "unknown");
}
END_TEST

START_TEST(event_type_strings)
{
	const char *s[IW_EVENT_SQ_DRAINED];

	for (int i = IW_EVENT_CQ_ERR; i <= IW_EVENT_SQ_DRAINED; i++)
		s[i - 1] = iw_event_type_str((enum iw_event_type)i);
	check_distinct(s, IW_EVENT_SQ_DRAINED);
	ck_assert_str_eq(iw_event_type_str((enum iw_event_type)0), "unknown");
	ck_assert_str_eq(iw_event_type_str((enum iw_event_type)(IW_EVENT_SQ_DRAINED + 1)),
			 "unknown");
}
END_TEST

Suite *suite_cq(void)
{
	Suite *s = suite_create("cq");
	TCase *tc = tcase_create("cq");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, create_einval);
	tcase_add_test(tc, create_fields);
	tcase_add_test(tc, poll_order);
	tcase_add_test(tc, poll_partial);
	tcase_add_test(tc, ring_wraps);
	tcase_add_test(tc, arm_next_fires_once);
	tcase_add_test(tc, arm_ignores_existing);
	tcase_add_test(tc, arm_solicited);
	tcase_add_test(tc, channel_shared);
	tcase_add_test(tc, destroy_busy_until_acked);
	tcase_add_test(tc, destroy_busy_while_used);
	tcase_add_loop_test(tc, destroy_kills_queued_event, 0, 2);
	tcase_add_test(tc, destroy_channel_busy);
	tcase_add_test(tc, overflow_once_per_episode);
	tcase_add_test(tc, destroy_forgets_async);
	tcase_add_test(tc, async_fifo_and_eagain);
	tcase_add_test(tc, async_forget_by_element);
	tcase_add_loop_test(tc, threads_every_wr_once, 0, 2);
	tcase_add_test(tc, thread_waits_on_channel);
	tcase_add_test(tc, resize_keeps_completions);
	tcase_add_test(tc, resize_while_busy);
	tcase_add_test(tc, wc_status_strings);
	tcase_add_test(tc, wc_opcode_strings);
	tcase_add_test(tc, event_type_strings);
	suite_add_tcase(s, tc);
	return s;
}
