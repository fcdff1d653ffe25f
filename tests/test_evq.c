/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event queue (lib/base/evq.c): order, refusal of a double push, dead nodes,
 * the fd's readability tracking the queue, blocking and nonblocking pops.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/evq.h"
#include "suites.h"

struct tnode {
	struct iw_evq_node n; /* first */
	int id;
};

static struct tnode *tn(struct iw_evq_node *n)
{
	return (struct tnode *)n;
}

/* Released nodes, recorded by id. Reset by every test (CK_FORK=no shares
 * them). */
static atomic_int num_released;
static int released_ids[64];

static void record_release(struct iw_evq_node *n)
{
	int i = atomic_fetch_add(&num_released, 1);

	if (i < 64)
		released_ids[i] = tn(n)->id;
}

static int released(void)
{
	return atomic_load(&num_released);
}

static void make_nodes(struct tnode *t, int num)
{
	for (int i = 0; i < num; i++)
		t[i] = (struct tnode){.id = i};
	atomic_store(&num_released, 0);
}

static void q_init(struct iw_evq *q)
{
	ck_assert_int_eq(iw_evq_init(q), 0);
	ck_assert_int_ge(q->fd, 0);
}

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

/* Pop one node expecting success; returns its id. */
static int pop_id(struct iw_evq *q)
{
	struct iw_evq_node *n = NULL;

	ck_assert_int_eq(iw_evq_pop(q, &n, record_release), 0);
	ck_assert_ptr_nonnull(n);
	ck_assert(!n->queued);
	return tn(n)->id;
}

START_TEST(init_cleanup)
{
	struct iw_evq q;

	q_init(&q);
	ck_assert_ptr_null(q.head);
	ck_assert_uint_eq(q.len, 0);
	/* Not inherited across exec: the fd is the library's. */
	ck_assert(fcntl(q.fd, F_GETFD) & FD_CLOEXEC);
	ck_assert(!readable(q.fd));
	iw_evq_cleanup(&q);
	ck_assert_int_eq(q.fd, -1);
	iw_evq_cleanup(&q); /* second cleanup is harmless */
	iw_evq_cleanup(NULL);
}
END_TEST

START_TEST(push_pop_order)
{
	struct iw_evq q;
	struct tnode t[8];

	q_init(&q);
	make_nodes(t, 8);
	for (int i = 0; i < 8; i++) {
		ck_assert(iw_evq_push(&q, &t[i].n));
		ck_assert(t[i].n.queued);
		ck_assert_uint_eq(q.len, (unsigned)i + 1);
	}
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(pop_id(&q), i);
		ck_assert_uint_eq(q.len, 7u - (unsigned)i);
	}
	ck_assert_ptr_null(q.head);
	/* Popped nodes can go round again, and the tail was reset. */
	ck_assert(iw_evq_push(&q, &t[5].n));
	ck_assert(iw_evq_push(&q, &t[2].n));
	ck_assert_int_eq(pop_id(&q), 5);
	ck_assert_int_eq(pop_id(&q), 2);
	ck_assert_int_eq(released(), 0);
	iw_evq_cleanup(&q);
}
END_TEST

START_TEST(double_push_refused)
{
	struct iw_evq q;
	struct tnode t[2];
	struct iw_evq_node *n;

	q_init(&q);
	set_nonblock(q.fd);
	make_nodes(t, 2);
	ck_assert(iw_evq_push(&q, &t[0].n));
	ck_assert(iw_evq_push(&q, &t[1].n));
	ck_assert(!iw_evq_push(&q, &t[0].n));
	ck_assert_uint_eq(q.len, 2);
	ck_assert_int_eq(pop_id(&q), 0);
	ck_assert_int_eq(pop_id(&q), 1);
	/* The refused push added no count either. */
	ck_assert_int_eq(iw_evq_pop(&q, &n, NULL), -EAGAIN);
	ck_assert(iw_evq_push(&q, &t[0].n));
	ck_assert_int_eq(pop_id(&q), 0);
	iw_evq_cleanup(&q);
}
END_TEST

START_TEST(kill_dead_skipped)
{
	struct iw_evq q;
	struct tnode t[4];
	struct iw_evq_node *n;

	q_init(&q);
	set_nonblock(q.fd);
	make_nodes(t, 4);
	for (int i = 0; i < 3; i++)
		ck_assert(iw_evq_push(&q, &t[i].n));
	ck_assert(iw_evq_kill(&q, &t[1].n));
	ck_assert(t[1].n.dead);
	ck_assert(!iw_evq_kill(&q, &t[3].n)); /* never queued */
	/* A dead node still holds its place: no re-push while queued. */
	ck_assert(!iw_evq_push(&q, &t[1].n));
	ck_assert_uint_eq(q.len, 3);
	ck_assert_int_eq(pop_id(&q), 0);
	ck_assert_int_eq(released(), 0);
	ck_assert_int_eq(pop_id(&q), 2);
	ck_assert_int_eq(released(), 1);
	ck_assert_int_eq(released_ids[0], 1);
	ck_assert_uint_eq(q.len, 0);
	ck_assert_int_eq(iw_evq_pop(&q, &n, record_release), -EAGAIN);
	ck_assert(!readable(q.fd));
	iw_evq_cleanup(&q);
}
END_TEST

/* A queue of nothing but dead nodes reads as empty once the pop has
 * released them all; a NULL release is allowed. */
START_TEST(only_dead_is_empty)
{
	struct iw_evq q;
	struct tnode t[3];
	struct iw_evq_node *n;

	q_init(&q);
	set_nonblock(q.fd);
	make_nodes(t, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert(iw_evq_push(&q, &t[i].n));
		ck_assert(iw_evq_kill(&q, &t[i].n));
	}
	/* Dead nodes keep their count until a pop meets them. */
	ck_assert(readable(q.fd));
	ck_assert_int_eq(iw_evq_pop(&q, &n, _i ? NULL : record_release), -EAGAIN);
	ck_assert_int_eq(released(), _i ? 0 : 3);
	ck_assert_uint_eq(q.len, 0);
	for (int i = 0; i < 3; i++)
		ck_assert(!t[i].n.queued);
	ck_assert(!readable(q.fd));
	iw_evq_cleanup(&q);
}
END_TEST

START_TEST(nonblocking_eagain)
{
	struct iw_evq q;
	struct iw_evq_node *n = (struct iw_evq_node *)&q; /* must stay untouched */

	q_init(&q);
	set_nonblock(q.fd);
	ck_assert_int_eq(iw_evq_pop(&q, &n, NULL), -EAGAIN);
	ck_assert_ptr_eq(n, (struct iw_evq_node *)&q);
	iw_evq_cleanup(&q);
}
END_TEST

START_TEST(fd_readable_iff_queued)
{
	struct iw_evq q;
	struct tnode t[2];

	q_init(&q);
	make_nodes(t, 2);
	ck_assert(!readable(q.fd));
	ck_assert(iw_evq_push(&q, &t[0].n));
	ck_assert(readable(q.fd));
	ck_assert(iw_evq_push(&q, &t[1].n));
	ck_assert(readable(q.fd));
	ck_assert_int_eq(pop_id(&q), 0);
	ck_assert(readable(q.fd));
	ck_assert_int_eq(pop_id(&q), 1);
	ck_assert(!readable(q.fd));
	/* Blocking fd: the pops above returned because nodes were there. */
	ck_assert_int_eq(fcntl(q.fd, F_GETFL) & O_NONBLOCK, 0);
	iw_evq_cleanup(&q);
}
END_TEST

struct waiter {
	struct iw_evq *q;
	struct iw_evq_node *got;
	int rc;
	atomic_bool done;
};

static void *wait_pop(void *arg)
{
	struct waiter *w = arg;

	w->rc = iw_evq_pop(w->q, &w->got, record_release);
	atomic_store(&w->done, true);
	return NULL;
}

START_TEST(blocking_pop_woken_by_push)
{
	struct iw_evq q;
	struct tnode t[2];
	struct waiter w = {.q = &q};
	pthread_t th;

	q_init(&q);
	make_nodes(t, 2);
	/* A dead node first: the sleeper must skip it and sleep on. */
	ck_assert(iw_evq_push(&q, &t[0].n));
	ck_assert(iw_evq_kill(&q, &t[0].n));
	ck_assert_int_eq(pthread_create(&th, NULL, wait_pop, &w), 0);
	usleep(50 * 1000);
	/* Nothing live was queued, so the pop cannot have returned. */
	ck_assert(!atomic_load(&w.done));
	ck_assert(iw_evq_push(&q, &t[1].n));
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_ptr_eq(w.got, &t[1].n);
	ck_assert_int_eq(released(), 1);
	ck_assert_int_eq(released_ids[0], 0);
	ck_assert(!readable(q.fd));
	iw_evq_cleanup(&q);
}
END_TEST

START_TEST(trypop_never_blocks)
{
	struct iw_evq q;
	struct tnode t[3];
	struct iw_evq_node *n;

	q_init(&q);
	make_nodes(t, 3);
	/* The fd is blocking, yet an empty queue answers at once. */
	ck_assert_int_eq(iw_evq_trypop(&q, &n, record_release), -EAGAIN);
	for (int i = 0; i < 3; i++)
		ck_assert(iw_evq_push(&q, &t[i].n));
	ck_assert(iw_evq_kill(&q, &t[0].n));
	ck_assert_int_eq(iw_evq_trypop(&q, &n, record_release), 0);
	ck_assert_ptr_eq(n, &t[1].n);
	ck_assert_int_eq(released(), 1);
	ck_assert_int_eq(iw_evq_trypop(&q, &n, record_release), 0);
	ck_assert_ptr_eq(n, &t[2].n);
	ck_assert(!readable(q.fd));
	ck_assert_int_eq(iw_evq_trypop(&q, &n, record_release), -EAGAIN);
	iw_evq_cleanup(&q);
}
END_TEST

/* Inside a deferral scope a push links its node but owes the count: the
 * fd turns readable only when the outermost scope ends, with one count per
 * push; the nonblocking pop meanwhile answers EAGAIN instead of blocking on
 * the blocking fd. */
START_TEST(defer_until_scope_ends)
{
	struct iw_evq q, r;
	struct tnode t[4];
	struct iw_evq_node *n;

	q_init(&q);
	q_init(&r);
	make_nodes(t, 4);
	iw_evq_defer_begin();
	ck_assert(iw_evq_push(&q, &t[0].n));
	iw_evq_defer_begin(); /* nested: still owed */
	ck_assert(iw_evq_push(&q, &t[1].n));
	ck_assert(iw_evq_push(&r, &t[2].n));
	iw_evq_defer_end();
	ck_assert(t[0].n.queued && t[1].n.queued && t[2].n.queued);
	ck_assert_uint_eq(q.len, 2);
	ck_assert(!readable(q.fd));
	ck_assert(!readable(r.fd));
	ck_assert_int_eq(iw_evq_trypop(&q, &n, record_release), -EAGAIN);
	iw_evq_defer_end();
	ck_assert(readable(q.fd));
	ck_assert(readable(r.fd));
	ck_assert_int_eq(iw_evq_trypop(&q, &n, record_release), 0);
	ck_assert_ptr_eq(n, &t[0].n);
	ck_assert_int_eq(pop_id(&q), 1);
	ck_assert(!readable(q.fd)); /* exactly one count per push */
	ck_assert_int_eq(pop_id(&r), 2);
	ck_assert(!readable(r.fd));
	/* Outside a scope the count is written by the push itself. */
	ck_assert(iw_evq_push(&q, &t[3].n));
	ck_assert(readable(q.fd));
	ck_assert_int_eq(pop_id(&q), 3);
	iw_evq_cleanup(&q);
	iw_evq_cleanup(&r);
}
END_TEST

/* More queues than the thread's table of owed counts holds: the pushes
 * beyond it write at once, nothing is lost or doubled. */
START_TEST(defer_table_full)
{
	enum { NQ = 12 };
	struct iw_evq q[NQ];
	struct tnode t[NQ];
	int early = 0;

	make_nodes(t, NQ);
	for (int i = 0; i < NQ; i++)
		q_init(&q[i]);
	iw_evq_defer_begin();
	for (int i = 0; i < NQ; i++)
		ck_assert(iw_evq_push(&q[i], &t[i].n));
	for (int i = 0; i < NQ; i++)
		early += readable(q[i].fd);
	ck_assert_int_gt(early, 0);
	ck_assert_int_lt(early, NQ);
	iw_evq_defer_end();
	for (int i = 0; i < NQ; i++) {
		ck_assert_int_eq(pop_id(&q[i]), i);
		ck_assert(!readable(q[i].fd));
		iw_evq_cleanup(&q[i]);
	}
}
END_TEST

static atomic_int num_taken;

static void count_take(struct iw_evq_node *n)
{
	/* Runs before the unlink: the node is still queued. */
	ck_assert(n->queued);
	atomic_fetch_add(&num_taken, 1);
}

START_TEST(pop_take_live_only)
{
	struct iw_evq q;
	struct tnode t[3];
	struct iw_evq_node *n;

	q_init(&q);
	make_nodes(t, 3);
	atomic_store(&num_taken, 0);
	for (int i = 0; i < 3; i++)
		ck_assert(iw_evq_push(&q, &t[i].n));
	ck_assert(iw_evq_kill(&q, &t[1].n));
	ck_assert_int_eq(iw_evq_pop_take(&q, &n, record_release, count_take), 0);
	ck_assert_ptr_eq(n, &t[0].n);
	ck_assert_int_eq(iw_evq_pop_take(&q, &n, record_release, count_take), 0);
	ck_assert_ptr_eq(n, &t[2].n);
	ck_assert_int_eq(atomic_load(&num_taken), 2);
	ck_assert_int_eq(released(), 1);
	iw_evq_cleanup(&q);
}
END_TEST

static bool is_even(const struct iw_evq_node *n, const void *arg)
{
	ck_assert_ptr_eq(arg, &num_taken);
	return ((const struct tnode *)n)->id % 2 == 0;
}

START_TEST(kill_if_matches)
{
	struct iw_evq q;
	struct tnode t[6];

	q_init(&q);
	make_nodes(t, 6);
	for (int i = 0; i < 6; i++)
		ck_assert(iw_evq_push(&q, &t[i].n));
	ck_assert_uint_eq(iw_evq_kill_if(&q, is_even, &num_taken), 3);
	/* Already dead nodes are not counted again. */
	ck_assert_uint_eq(iw_evq_kill_if(&q, is_even, &num_taken), 0);
	/* Each pop releases the dead node in front of its live one. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pop_id(&q), 2 * i + 1);
		ck_assert_int_eq(released(), i + 1);
		ck_assert_int_eq(released_ids[i], 2 * i);
	}
	ck_assert_uint_eq(q.len, 0);
	ck_assert(!readable(q.fd));
	iw_evq_cleanup(&q);
}
END_TEST

START_TEST(drain_releases_all)
{
	struct iw_evq q;
	struct tnode t[4];
	struct iw_evq_node *n;

	q_init(&q);
	make_nodes(t, 4);
	for (int i = 0; i < 4; i++)
		ck_assert(iw_evq_push(&q, &t[i].n));
	ck_assert(iw_evq_kill(&q, &t[2].n));
	iw_evq_drain(&q, record_release);
	ck_assert_int_eq(released(), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(released_ids[i], i);
		ck_assert(!t[i].n.queued);
	}
	ck_assert_uint_eq(q.len, 0);
	ck_assert_ptr_null(q.head);
	/* The queue still works after a drain (tail was reset). */
	ck_assert(iw_evq_push(&q, &t[3].n));
	ck_assert_int_eq(iw_evq_trypop(&q, &n, NULL), 0);
	ck_assert_ptr_eq(n, &t[3].n);
	iw_evq_cleanup(&q);
}
END_TEST

/* ------------------------------------------------------------ threads */

#define MT_PRODUCERS 4
#define MT_CONSUMERS 2
#define MT_PER 2000

struct mt {
	struct iw_evq q;
	struct tnode nodes[MT_PRODUCERS * MT_PER];
	atomic_int seen[MT_PRODUCERS * MT_PER];
	atomic_int base;
};

static void *mt_produce(void *arg)
{
	struct mt *m = arg;
	int base = atomic_fetch_add(&m->base, MT_PER);

	for (int i = 0; i < MT_PER; i++)
		ck_assert(iw_evq_push(&m->q, &m->nodes[base + i].n));
	return NULL;
}

static void *mt_consume(void *arg)
{
	struct mt *m = arg;

	/* Each consumer takes its exact share, blocking when it runs ahead. */
	for (int i = 0; i < MT_PRODUCERS * MT_PER / MT_CONSUMERS; i++) {
		struct iw_evq_node *n;

		ck_assert_int_eq(iw_evq_pop(&m->q, &n, NULL), 0);
		atomic_fetch_add(&m->seen[tn(n)->id], 1);
	}
	return NULL;
}

START_TEST(threads_each_node_once)
{
	struct mt *m = calloc(1, sizeof(*m));
	pthread_t p[MT_PRODUCERS], c[MT_CONSUMERS];

	ck_assert_ptr_nonnull(m);
	q_init(&m->q);
	make_nodes(m->nodes, MT_PRODUCERS * MT_PER);
	for (int i = 0; i < MT_CONSUMERS; i++)
		ck_assert_int_eq(pthread_create(&c[i], NULL, mt_consume, m), 0);
	for (int i = 0; i < MT_PRODUCERS; i++)
		ck_assert_int_eq(pthread_create(&p[i], NULL, mt_produce, m), 0);
	for (int i = 0; i < MT_PRODUCERS; i++)
		ck_assert_int_eq(pthread_join(p[i], NULL), 0);
	for (int i = 0; i < MT_CONSUMERS; i++)
		ck_assert_int_eq(pthread_join(c[i], NULL), 0);
	for (int i = 0; i < MT_PRODUCERS * MT_PER; i++) {
		int seen = atomic_load(&m->seen[i]);

		ck_assert_int_eq(seen, 1);
	}
	ck_assert_uint_eq(m->q.len, 0);
	ck_assert(!readable(m->q.fd));
	iw_evq_cleanup(&m->q);
	free(m);
}
END_TEST

Suite *suite_evq(void)
{
	Suite *s = suite_create("evq");
	TCase *tc = tcase_create("evq");

	tcase_add_test(tc, init_cleanup);
	tcase_add_test(tc, push_pop_order);
	tcase_add_test(tc, double_push_refused);
	tcase_add_test(tc, kill_dead_skipped);
	tcase_add_loop_test(tc, only_dead_is_empty, 0, 2);
	tcase_add_test(tc, nonblocking_eagain);
	tcase_add_test(tc, fd_readable_iff_queued);
	tcase_add_test(tc, blocking_pop_woken_by_push);
	tcase_add_test(tc, trypop_never_blocks);
	tcase_add_test(tc, defer_until_scope_ends);
	tcase_add_test(tc, defer_table_full);
	tcase_add_test(tc, pop_take_live_only);
	tcase_add_test(tc, kill_if_matches);
	tcase_add_test(tc, drain_releases_all);
	tcase_add_test(tc, threads_each_node_once);
	suite_add_tcase(s, tc);
	return s;
}
