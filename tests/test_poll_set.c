/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lib/engine/poll_set.c and the polling half of iw_poll_cq / iw_progress,
 * on a context without a loop (the progress hook is the test's): which QPs
 * a CQ and the context drive, a completion made by progress returned by
 * the same iw_poll_cq, and the detach barrier that keeps pollers off a
 * connection being freed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "engine/poll_set.h"
#include "engine/qp.h"
#include "suites.h"

struct ps_env {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *a, *b;
};

/* What the test's progress hook saw and does. */
static struct iw_qp *visited[8];
static atomic_int nvisit;
static struct iw_cq *push_to;         /* push one completion there */
static atomic_bool inside, release_hook;

static unsigned hook(struct iw_qp *qp)
{
	int i = atomic_fetch_add(&nvisit, 1);
	if (i < 8)
		visited[i] = qp;
	if (push_to) {
		struct iw_wc wc = {.wr_id = 77, .status = IW_WC_SUCCESS, .opcode = IW_WC_RECV};
		ck_assert_int_eq(iw_cq_push(push_to, &wc, false), 0);
		push_to = NULL;
		return 1;
	}
	atomic_store(&inside, true);
	while (!atomic_load(&release_hook))
		;
	return 0;
}

static void env_init(struct ps_env *e)
{
	e->ctx = iw_context_core_new();
	ck_assert_ptr_nonnull(e->ctx);
	e->ctx->poll_mode = true;
	e->ctx->progress = hook;
	e->pd = iw_alloc_pd(e->ctx);
	e->a = iw_create_cq(e->ctx, 8, NULL, NULL, 0);
	e->b = iw_create_cq(e->ctx, 8, NULL, NULL, 0);
	ck_assert(e->pd && e->a && e->b);
	atomic_store(&nvisit, 0);
	atomic_store(&release_hook, true);
	atomic_store(&inside, false);
}

static struct iw_qp *qp_new(struct ps_env *e, struct iw_cq *scq, struct iw_cq *rcq)
{
	struct iw_qp_init_attr qa = {.send_cq = scq, .recv_cq = rcq, .qp_type = IW_QPT_RC,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4}};
	struct iw_qp *qp = iw_create_qp(e->pd, &qa);
	ck_assert_ptr_nonnull(qp);
	return qp;
}

static void env_fini(struct ps_env *e)
{
	ck_assert_int_eq(iw_destroy_cq(e->a), 0);
	ck_assert_int_eq(iw_destroy_cq(e->b), 0);
	ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	iw_context_core_free(e->ctx);
}

static bool saw(struct iw_qp *qp)
{
	for (int i = 0; i < atomic_load(&nvisit) && i < 8; i++)
		if (visited[i] == qp)
			return true;
	return false;
}

/* A CQ drives the QPs that complete into it, iw_progress every QP; a
 * destroyed QP is driven no more. */
START_TEST(test_membership)
{
	struct ps_env e;
	env_init(&e);
	struct iw_qp *q1 = qp_new(&e, e.a, e.b), *q2 = qp_new(&e, e.b, e.b);
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(e.a, 1, &wc), 0);
	ck_assert_int_eq(atomic_load(&nvisit), 1);
	ck_assert(saw(q1));
	atomic_store(&nvisit, 0);
	ck_assert_int_eq(iw_poll_cq(e.b, 1, &wc), 0);
	ck_assert_int_eq(atomic_load(&nvisit), 2); /* q2 once though both its CQs are b */
	ck_assert(saw(q1) && saw(q2));
	atomic_store(&nvisit, 0);
	ck_assert_int_eq(iw_progress(e.ctx), 0);
	ck_assert_int_eq(atomic_load(&nvisit), 2);
	ck_assert_int_eq(iw_destroy_qp(q1), 0);
	atomic_store(&nvisit, 0);
	ck_assert_int_eq(iw_poll_cq(e.a, 1, &wc), 0);
	ck_assert_int_eq(iw_progress(e.ctx), 0);
	ck_assert_int_eq(atomic_load(&nvisit), 1);
	ck_assert(saw(q2));
	/* Asking for nothing, or a context that does not poll: no visit. */
	atomic_store(&nvisit, 0);
	ck_assert_int_eq(iw_poll_cq(e.b, 0, &wc), 0);
	e.ctx->poll_mode = false;
	ck_assert_int_eq(iw_poll_cq(e.b, 1, &wc), 0);
	ck_assert_int_eq(iw_progress(e.ctx), 0);
	e.ctx->poll_mode = true;
	ck_assert_int_eq(atomic_load(&nvisit), 0);
	ck_assert_int_eq(iw_progress(NULL), -EINVAL);
	ck_assert_int_eq(iw_destroy_qp(q2), 0);
	env_fini(&e);
}
END_TEST

/* What progress completed comes back from the same iw_poll_cq. */
START_TEST(test_same_call)
{
	struct ps_env e;
	env_init(&e);
	struct iw_qp *q = qp_new(&e, e.a, e.a);
	push_to = e.a;
	struct iw_wc wc[2];
	ck_assert_int_eq(iw_poll_cq(e.a, 2, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 77);
	ck_assert_int_eq(iw_destroy_qp(q), 0);
	env_fini(&e);
}
END_TEST

/* The other-CQ visit hook: counts the visits to one QP, and says it moved
 * octets (others_ret) or not. */
static struct iw_qp *watch;
static atomic_int others_seen;
static unsigned others_ret;

static unsigned hook_other(struct iw_qp *qp)
{
	if (qp != watch)
		return 0;
	atomic_fetch_add(&others_seen, 1);
	return others_ret;
}

static void poll_empty(struct ps_env *e, int times)
{
	struct iw_wc wc;
	for (int i = 0; i < times; i++)
		ck_assert_int_eq(iw_poll_cq(e->a, 1, &wc), 0);
}

/* A poll that finds nothing also visits the context's QPs that complete
 * into other CQs (and only those), without claiming them: once in
 * IW_POLL_OTHERS_EVERY polls while they are quiet, at every poll while
 * the last visit moved octets. */
START_TEST(test_others)
{
	struct ps_env e;
	env_init(&e);
	e.ctx->progress_other = hook_other;
	struct iw_qp *q1 = qp_new(&e, e.a, e.a), *q2 = qp_new(&e, e.b, e.b);
	watch = q2;
	others_ret = 0;
	atomic_store(&others_seen, 0);
	ck_assert_uint_eq(iw_poll_set_run_others(&e.ctx->poll, e.b, hook_other), 0);
	ck_assert_int_eq(atomic_load(&others_seen), 0); /* q2 completes into b */
	poll_empty(&e, IW_POLL_OTHERS_EVERY - 1);
	ck_assert_int_eq(atomic_load(&others_seen), 0);
	poll_empty(&e, 1);
	ck_assert_int_eq(atomic_load(&others_seen), 1);
	others_ret = 1; /* octets moved: visit at every poll */
	poll_empty(&e, IW_POLL_OTHERS_EVERY);
	ck_assert_int_eq(atomic_load(&others_seen), 2);
	poll_empty(&e, 3);
	ck_assert_int_eq(atomic_load(&others_seen), 5);
	others_ret = 0; /* quiet again: this visit is the last for a while */
	poll_empty(&e, 1);
	poll_empty(&e, IW_POLL_OTHERS_EVERY - 5);
	ck_assert_int_eq(atomic_load(&others_seen), 6);
	/* No such hook (a context without connections): no visit. */
	e.ctx->progress_other = NULL;
	poll_empty(&e, 2 * IW_POLL_OTHERS_EVERY);
	ck_assert_int_eq(atomic_load(&others_seen), 6);
	ck_assert_int_eq(iw_destroy_qp(q1), 0);
	ck_assert_int_eq(iw_destroy_qp(q2), 0);
	env_fini(&e);
}
END_TEST

/* iw_progress's hook for test_progress_quiet: counts the visits to each of
 * two QPs; the first moves octets while hot_ret says so, the second when
 * quiet_ret does. */
static struct iw_qp *pq[2];
static int pq_seen[2];
static unsigned hot_ret, quiet_ret;

static unsigned hook_quiet(struct iw_qp *qp)
{
	int i = qp == pq[1];
	pq_seen[i]++;
	return i ? quiet_ret : hot_ret;
}

static void walks(struct ps_env *e, int n)
{
	for (int i = 0; i < n; i++)
		iw_progress(e->ctx);
}

static void seen_reset(void)
{
	pq_seen[0] = pq_seen[1] = 0;
}

/* iw_progress visits a QP whose last octets are more than
 * IW_PROGRESS_QUIET_AFTER walks older than another QP's at one walk in
 * IW_PROGRESS_QUIET_EVERY (an idle connection cost a busy-polling thread
 * one system call per walk); at every walk once it moves octets itself,
 * while it has output queued, and while the set's last octets are more
 * than IW_PROGRESS_HOT_WALKS walks old. The QP that moved the last
 * octets is read at every walk however long ago that was (a slow
 * ping-pong's one connection). */
START_TEST(test_progress_quiet)
{
	struct ps_env e;
	env_init(&e);
	e.ctx->progress = hook_quiet;
	pq[0] = qp_new(&e, e.a, e.a);
	pq[1] = qp_new(&e, e.b, e.b);
	hot_ret = 1;
	quiet_ret = 0;
	seen_reset();
	walks(&e, IW_PROGRESS_QUIET_AFTER + 1);
	ck_assert_int_eq(pq_seen[0], IW_PROGRESS_QUIET_AFTER + 1);
	ck_assert_int_eq(pq_seen[1], IW_PROGRESS_QUIET_AFTER + 1);
	seen_reset();
	walks(&e, 3 * IW_PROGRESS_QUIET_EVERY);
	ck_assert_int_eq(pq_seen[0], 3 * IW_PROGRESS_QUIET_EVERY);
	ck_assert_int_eq(pq_seen[1], 3);
	/* The busy QP goes quiet for long: it is still read at every walk,
	 * the other one still on its turns only. */
	hot_ret = 0;
	seen_reset();
	walks(&e, 2 * IW_PROGRESS_QUIET_AFTER);
	ck_assert_int_eq(pq_seen[0], 2 * IW_PROGRESS_QUIET_AFTER);
	ck_assert_int_eq(pq_seen[1], 2 * IW_PROGRESS_QUIET_AFTER / IW_PROGRESS_QUIET_EVERY);
	/* Output queued: visited at every walk (the visit writes it). */
	pq[1]->txq = (struct iw_txq *)&e;
	seen_reset();
	walks(&e, 5);
	pq[1]->txq = NULL;
	ck_assert_int_eq(pq_seen[1], 5);
	/* It moves octets on its turn: at every walk from then on (the
	 * other one too, from its own turn). */
	hot_ret = quiet_ret = 1;
	walks(&e, IW_PROGRESS_QUIET_EVERY);
	seen_reset();
	walks(&e, 7);
	ck_assert_int_eq(pq_seen[1], 7);
	ck_assert_int_eq(pq_seen[0], 7);
	/* Both quiet since the same walk: neither is quieter, both are read
	 * at every walk, within the hot window and after it. */
	hot_ret = quiet_ret = 0;
	seen_reset();
	walks(&e, IW_PROGRESS_HOT_WALKS + 9);
	ck_assert_int_eq(pq_seen[0], IW_PROGRESS_HOT_WALKS + 9);
	ck_assert_int_eq(pq_seen[1], IW_PROGRESS_HOT_WALKS + 9);
	ck_assert_int_eq(iw_destroy_qp(pq[0]), 0);
	ck_assert_int_eq(iw_destroy_qp(pq[1]), 0);
	env_fini(&e);
}
END_TEST

struct detach_arg {
	struct iw_qp *qp;
	atomic_bool done;
};

static void *poll_main(void *arg)
{
	iw_progress(((struct iw_qp *)arg)->context);
	return NULL;
}

static void *detach_main(void *arg)
{
	struct detach_arg *d = arg;
	iw_qp_set_glue(d->qp, NULL, NULL);
	atomic_store(&d->done, true);
	return NULL;
}

/* Detaching a connection waits for a poller inside the QP's sets: after
 * it, nobody can still use the old glue. */
START_TEST(test_detach_barrier)
{
	struct ps_env e;
	env_init(&e);
	struct iw_qp *q = qp_new(&e, e.a, e.b);
	static int glue;
	iw_qp_set_glue(q, &glue, NULL);
	ck_assert_ptr_eq(iw_qp_glue(q), &glue);
	atomic_store(&release_hook, false);
	pthread_t p, d;
	ck_assert_int_eq(pthread_create(&p, NULL, poll_main, q), 0);
	while (!atomic_load(&inside))
		;
	struct detach_arg da = {.qp = q};
	ck_assert_int_eq(pthread_create(&d, NULL, detach_main, &da), 0);
	/* Give the detach every chance to return early (it must not). */
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	ck_assert_msg(!atomic_load(&da.done), "detached while a poller was inside");
	atomic_store(&release_hook, true);
	pthread_join(p, NULL);
	pthread_join(d, NULL);
	ck_assert(atomic_load(&da.done));
	ck_assert_ptr_null(iw_qp_glue(q));
	ck_assert_int_eq(iw_destroy_qp(q), 0);
	env_fini(&e);
}
END_TEST

Suite *suite_poll_set(void)
{
	Suite *s = suite_create("poll_set");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_membership);
	tcase_add_test(tc, test_same_call);
	tcase_add_test(tc, test_others);
	tcase_add_test(tc, test_progress_quiet);
	tcase_add_test(tc, test_detach_barrier);
	suite_add_tcase(s, tc);
	return s;
}
