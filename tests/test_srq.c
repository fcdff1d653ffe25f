/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues (lib/engine/srq.c) without a connection: posting,
 * resizing while WRs are posted (order, MR references, refusals), the limit
 * event as ibv_modify_srq arms it, iw_query_srq, and iw_set_srq_order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/srq.h"
#include "engine/wr.h"
#include "suites.h"

struct srq_env {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	uint8_t buf[4096];
};

static void env_init(struct srq_env *e)
{
	e->ctx = iw_context_core_new();
	ck_assert_ptr_nonnull(e->ctx);
	e->pd = iw_alloc_pd(e->ctx);
	ck_assert_ptr_nonnull(e->pd);
	e->mr = iw_reg_mr(e->pd, e->buf, sizeof(e->buf), IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(e->mr);
}

static void env_fini(struct srq_env *e)
{
	ck_assert_int_eq(iw_dereg_mr(e->mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	iw_context_core_free(e->ctx);
}

static struct iw_srq *srq_new(struct srq_env *e, uint32_t max_wr, uint32_t max_sge)
{
	struct iw_srq_init_attr a = {.attr = {.max_wr = max_wr, .max_sge = max_sge}};
	struct iw_srq *srq = iw_create_srq(e->pd, &a);

	ck_assert_ptr_nonnull(srq);
	return srq;
}

/* Post WR wr_id with (wr_id % 3) + 1 SGEs, each 16 octets of e->buf. */
static int post(struct srq_env *e, struct iw_srq *srq, uint64_t wr_id)
{
	struct iw_sge sge[3];
	struct iw_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = (int)(wr_id % 3) + 1};
	struct iw_recv_wr *bad = NULL;

	for (int i = 0; i < wr.num_sge; i++)
		sge[i] = (struct iw_sge){.addr = (uintptr_t)e->buf + (wr_id % 64) * 48 + i * 16,
					 .length = 16, .lkey = e->mr->lkey};
	return iw_post_srq_recv(srq, &wr, &bad);
}

/* Take one WR as a QP would and check it is wr_id, with its SGEs intact;
 * then drop its MR references as a completion does. */
static void take_expect(struct iw_srq *srq, struct srq_env *e, uint64_t wr_id)
{
	struct iw_rwqe_buf b;

	ck_assert(iw_srq_take(srq, &b));
	ck_assert_uint_eq(b.w.wr_id, wr_id);
	ck_assert_uint_eq(b.w.num_sge, wr_id % 3 + 1);
	ck_assert_uint_eq(b.w.len, 16 * (wr_id % 3 + 1));
	for (uint32_t i = 0; i < b.w.num_sge; i++) {
		ck_assert_uint_eq(b.sge[i].addr, (uintptr_t)e->buf + (wr_id % 64) * 48 + i * 16);
		ck_assert_ptr_eq(b.ptr[i], e->buf + (wr_id % 64) * 48 + i * 16);
		ck_assert_ptr_nonnull(b.mr[i]);
	}
	iw_rwqe_release(&b.w);
}

static void query_expect(struct iw_srq *srq, uint32_t max_wr, uint32_t max_sge, uint32_t limit)
{
	struct iw_srq_attr a;

	memset(&a, 0xA5, sizeof(a));
	ck_assert_int_eq(iw_query_srq(srq, &a), 0);
	ck_assert_uint_eq(a.max_wr, max_wr);
	ck_assert_uint_eq(a.max_sge, max_sge);
	ck_assert_uint_eq(a.srq_limit, limit);
}

/* Grow and shrink an SRQ whose ring has wrapped: the posted WRs stay, in
 * order, with their SGEs and MR references; the new size is exact. */
START_TEST(resize_keeps_wrs)
{
	struct srq_env e;
	struct iw_srq *srq;
	struct iw_srq_attr a = {0};

	env_init(&e);
	srq = srq_new(&e, 4, 3);
	for (uint64_t i = 0; i < 4; i++)
		ck_assert_int_eq(post(&e, srq, i), 0);
	take_expect(srq, &e, 0);
	take_expect(srq, &e, 1);
	ck_assert_int_eq(post(&e, srq, 4), 0);
	ck_assert_int_eq(post(&e, srq, 5), 0); /* 2..5 posted, wrapped */
	ck_assert_int_eq(post(&e, srq, 6), ENOMEM);
	/* The MR is pinned by what is posted. */
	ck_assert_int_eq(iw_dereg_mr(e.mr), EBUSY);
	a.max_wr = 9;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), 0);
	query_expect(srq, 9, 3, 0);
	for (uint64_t i = 6; i < 11; i++)
		ck_assert_int_eq(post(&e, srq, i), 0);
	ck_assert_int_eq(post(&e, srq, 11), ENOMEM);
	take_expect(srq, &e, 2);
	take_expect(srq, &e, 3);
	/* 4..10 posted: 7 WRs. */
	a.max_wr = 6;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), EINVAL);
	query_expect(srq, 9, 3, 0);
	a.max_wr = 7;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), 0);
	query_expect(srq, 7, 3, 0);
	ck_assert_int_eq(post(&e, srq, 11), ENOMEM);
	for (uint64_t i = 4; i < 11; i++)
		take_expect(srq, &e, i);
	struct iw_rwqe_buf b;
	ck_assert(!iw_srq_take(srq, &b));
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	env_fini(&e);
}
END_TEST

START_TEST(modify_einval)
{
	struct srq_env e;
	struct iw_srq *srq;
	struct iw_srq_attr a = {.max_wr = 8, .srq_limit = 2};

	env_init(&e);
	srq = srq_new(&e, 8, 1);
	ck_assert_int_eq(iw_modify_srq(NULL, &a, IW_SRQ_LIMIT), EINVAL);
	ck_assert_int_eq(iw_modify_srq(srq, NULL, IW_SRQ_LIMIT), EINVAL);
	ck_assert_int_eq(iw_modify_srq(srq, &a, 1 << 5), EINVAL);
	ck_assert_int_eq(iw_query_srq(NULL, &a), EINVAL);
	ck_assert_int_eq(iw_query_srq(srq, NULL), EINVAL);
	a.max_wr = 0;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), EINVAL);
	a.max_wr = IW_MAX_SRQ_WR + 1;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), EINVAL);
	/* The limit may not exceed the size, the new one when both change. */
	a.max_wr = 4;
	a.srq_limit = 5;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR | IW_SRQ_LIMIT), EINVAL);
	query_expect(srq, 8, 1, 0);
	a.srq_limit = 6;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_LIMIT), 0);
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), EINVAL); /* armed 6 > 4 */
	query_expect(srq, 8, 1, 6);
	a.srq_limit = 4;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR | IW_SRQ_LIMIT), 0);
	query_expect(srq, 4, 1, 4);
	a.max_wr = IW_MAX_SRQ_WR;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), 0);
	query_expect(srq, IW_MAX_SRQ_WR, 1, 4);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	env_fini(&e);
}
END_TEST

static void expect_limit_event(struct srq_env *e, struct iw_srq *srq, bool want)
{
	struct iw_async_event ev;
	int rc = iw_get_async_event(e->ctx, &ev);

	if (!want) {
		ck_assert_int_eq(rc, EAGAIN);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(ev.event_type, IW_EVENT_SRQ_LIMIT_REACHED);
	ck_assert_ptr_eq(ev.element.srq, srq);
	ck_assert_int_eq(iw_get_async_event(e->ctx, &ev), EAGAIN);
}

/* The limit fires once when a take leaves fewer WRs than it, then
 * disarms (query reports 0); re-arming, also after a resize, works. */
START_TEST(limit_one_shot)
{
	struct srq_env e;
	struct iw_srq *srq;
	struct iw_srq_attr a = {.srq_limit = 3};

	env_init(&e);
	srq = srq_new(&e, 8, 3);
	for (uint64_t i = 0; i < 6; i++)
		ck_assert_int_eq(post(&e, srq, i), 0);
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_LIMIT), 0);
	take_expect(srq, &e, 0); /* 5 left */
	take_expect(srq, &e, 1);
	take_expect(srq, &e, 2); /* 3 left: not below */
	expect_limit_event(&e, srq, false);
	query_expect(srq, 8, 3, 3);
	take_expect(srq, &e, 3); /* 2 left */
	expect_limit_event(&e, srq, true);
	query_expect(srq, 8, 3, 0);
	take_expect(srq, &e, 4);
	expect_limit_event(&e, srq, false);
	/* Re-armed with a resize in the same call. */
	a.max_wr = 16;
	a.srq_limit = 10;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR | IW_SRQ_LIMIT), 0);
	for (uint64_t i = 6; i < 16; i++)
		ck_assert_int_eq(post(&e, srq, i), 0); /* 5..15: 11 posted */
	take_expect(srq, &e, 5);
	expect_limit_event(&e, srq, false);
	take_expect(srq, &e, 6); /* 9 left */
	expect_limit_event(&e, srq, true);
	/* Disarmed by 0. */
	a.srq_limit = 0;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_LIMIT), 0);
	for (uint64_t i = 7; i < 16; i++)
		take_expect(srq, &e, i);
	expect_limit_event(&e, srq, false);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	env_fini(&e);
}
END_TEST

/* Newest first takes from the posting end of a wrapped ring, keeps
 * doing so across a resize, fires the limit as oldest first does, and
 * can be switched back: then the oldest left goes first. */
START_TEST(order_newest_first)
{
	struct srq_env e;
	struct iw_srq *srq;
	struct iw_srq_attr a = {.srq_limit = 2};

	env_init(&e);
	srq = srq_new(&e, 4, 3);
	ck_assert_int_eq(iw_set_srq_order(NULL, IW_SRQ_NEWEST_FIRST), EINVAL);
	ck_assert_int_eq(iw_set_srq_order(srq, (enum iw_srq_order)2), EINVAL);
	for (uint64_t i = 0; i < 3; i++)
		ck_assert_int_eq(post(&e, srq, i), 0);
	take_expect(srq, &e, 0); /* head moves: the ring wraps below */
	ck_assert_int_eq(iw_set_srq_order(srq, IW_SRQ_NEWEST_FIRST), 0);
	for (uint64_t i = 3; i < 5; i++)
		ck_assert_int_eq(post(&e, srq, i), 0); /* 1..4 posted, wrapped */
	take_expect(srq, &e, 4);
	ck_assert_int_eq(post(&e, srq, 5), 0);
	take_expect(srq, &e, 5);
	take_expect(srq, &e, 3);
	a.max_wr = 8;
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR | IW_SRQ_LIMIT), 0);
	for (uint64_t i = 6; i < 9; i++)
		ck_assert_int_eq(post(&e, srq, i), 0); /* 1, 2, 6, 7, 8 */
	take_expect(srq, &e, 8);
	take_expect(srq, &e, 7); /* 3 left: not below 2 */
	expect_limit_event(&e, srq, false);
	take_expect(srq, &e, 6); /* 2 left */
	expect_limit_event(&e, srq, false);
	ck_assert_int_eq(iw_set_srq_order(srq, IW_SRQ_OLDEST_FIRST), 0);
	take_expect(srq, &e, 1); /* 1 left */
	expect_limit_event(&e, srq, true);
	take_expect(srq, &e, 2);
	struct iw_rwqe_buf b;
	ck_assert(!iw_srq_take(srq, &b));
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	env_fini(&e);
}
END_TEST

/* Destroy releases what is still posted without a completion: the MR it
 * pinned can be deregistered afterwards. */
START_TEST(destroy_releases_posted)
{
	struct srq_env e;
	struct iw_srq *srq;
	struct iw_srq_attr a = {.max_wr = 32};

	env_init(&e);
	srq = srq_new(&e, 4, 3);
	for (uint64_t i = 0; i < 4; i++)
		ck_assert_int_eq(post(&e, srq, i), 0);
	ck_assert_int_eq(iw_modify_srq(srq, &a, IW_SRQ_MAX_WR), 0);
	for (uint64_t i = 4; i < 20; i++)
		ck_assert_int_eq(post(&e, srq, i), 0);
	ck_assert_int_eq(iw_dereg_mr(e.mr), EBUSY);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	ck_assert_int_eq(iw_dereg_mr(e.mr), 0);
	e.mr = iw_reg_mr(e.pd, e.buf, sizeof(e.buf), IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(e.mr);
	env_fini(&e);
}
END_TEST

Suite *suite_srq(void)
{
	Suite *s = suite_create("srq");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, resize_keeps_wrs);
	tcase_add_test(tc, modify_einval);
	tcase_add_test(tc, limit_one_shot);
	tcase_add_test(tc, destroy_releases_posted);
	tcase_add_test(tc, order_newest_first);
	suite_add_tcase(s, tc);
	return s;
}
