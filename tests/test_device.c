/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iw_query_device (lib/api/device.c): the limits it reports are the ones
 * the calls enforce (each is accepted, one above it refused), and they meet
 * what SPDK's NVMe-oF RDMA target asks of a device. And the convenience
 * loop thread's options (lib/api/context.c, lib/io/ev.c): name and CPUs.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "engine/context.h"
#include "suites.h"

struct dev_env {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_device_attr da;
};

static void env_init(struct dev_env *e)
{
	e->ctx = iw_context_core_new();
	ck_assert_ptr_nonnull(e->ctx);
	e->pd = iw_alloc_pd(e->ctx);
	ck_assert_ptr_nonnull(e->pd);
	e->cq = iw_create_cq(e->ctx, 4, NULL, NULL, 0);
	ck_assert_ptr_nonnull(e->cq);
	memset(&e->da, 0xA5, sizeof(e->da));
	e->da.comp_mask = 0;
	ck_assert_int_eq(iw_query_device(e->ctx, &e->da), 0);
}

static void env_fini(struct dev_env *e)
{
	ck_assert_int_eq(iw_destroy_cq(e->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	iw_context_core_free(e->ctx);
}

START_TEST(query_einval_and_comp_mask)
{
	struct dev_env e;
	struct iw_device_attr da = {.comp_mask = 0xFFFFFFFFu};

	env_init(&e);
	ck_assert_int_eq(iw_query_device(NULL, &da), EINVAL);
	ck_assert_int_eq(iw_query_device(e.ctx, NULL), EINVAL);
	/* Groups this library does not know are cleared, the rest filled. */
	ck_assert_int_eq(iw_query_device(e.ctx, &da), 0);
	ck_assert_uint_eq(da.comp_mask, 0);
	ck_assert_uint_eq(da.max_qp_wr, e.da.max_qp_wr);
	ck_assert_uint_eq(e.da.comp_mask, 0);
	env_fini(&e);
}
END_TEST

/* What SPDK's RDMA transport reads (lib/nvmf/rdma.c and the host). */
START_TEST(meets_spdk)
{
	struct dev_env e;

	env_init(&e);
	ck_assert_uint_ge(e.da.max_cqe, 12288);
	ck_assert_uint_ge(e.da.max_srq_wr, 4096);
	ck_assert_uint_ge(e.da.max_qp_wr, 128);
	ck_assert_uint_ge(e.da.max_sge, 16);
	ck_assert_uint_ge(e.da.max_qp_rd_atom, 16);
	ck_assert_uint_ge(e.da.max_qp_init_rd_atom, 16);
	ck_assert_uint_ge(e.da.max_inline_data, 256);
	ck_assert_uint_ge(e.da.max_mr_size, (uint64_t)1 << 40);
	ck_assert_uint_ge(e.da.max_mr, 1 << 20);
	ck_assert_uint_ge(e.da.max_qp, 1 << 16);
	ck_assert_uint_eq(e.da.device_cap_flags,
			  IW_DEVICE_MEM_MGT_EXTENSIONS | IW_DEVICE_RFC7306 | IW_DEVICE_RESIZE_CQ |
				  IW_DEVICE_RESIZE_SRQ | IW_DEVICE_MEM_WINDOW |
				  IW_DEVICE_MEM_WINDOW_TYPE_2);
	env_fini(&e);
}
END_TEST

static struct iw_qp *qp_try(struct dev_env *e, struct iw_qp_cap cap)
{
	struct iw_qp_init_attr a = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IW_QPT_RC, .cap = cap};

	return iw_create_qp(e->pd, &a);
}

/* Each QP limit is accepted at the reported value and refused above it. */
START_TEST(qp_limits_enforced)
{
	struct dev_env e;
	const struct iw_qp_cap base = {.max_send_wr = 1, .max_recv_wr = 1};
	struct iw_qp_cap c;
	struct iw_qp *qp;

	env_init(&e);
	for (int field = 0; field < 5; field++) {
		for (uint32_t extra = 0; extra < 2; extra++) {
			c = base;
			uint32_t *f[] = {&c.max_send_wr, &c.max_recv_wr, &c.max_send_sge,
					 &c.max_recv_sge, &c.max_inline_data};
			uint32_t lim[] = {e.da.max_qp_wr, e.da.max_qp_wr, e.da.max_sge,
					  e.da.max_sge, e.da.max_inline_data};
			*f[field] = lim[field] + extra;
			qp = qp_try(&e, c);
			if (extra) {
				ck_assert_msg(qp == NULL && errno == EINVAL, "field %d above", field);
				continue;
			}
			ck_assert_msg(qp != NULL, "field %d at the limit", field);
			ck_assert_int_eq(iw_destroy_qp(qp), 0);
		}
	}
	/* ORD and IRD. */
	qp = qp_try(&e, base);
	ck_assert_ptr_nonnull(qp);
	struct iw_qp_attr qa = {.max_rd_atomic = (uint8_t)e.da.max_qp_init_rd_atom,
				.max_dest_rd_atomic = (uint8_t)e.da.max_qp_rd_atom};
	ck_assert_int_eq(iw_modify_qp(qp, &qa, IW_QP_MAX_QP_RD_ATOMIC | IW_QP_MAX_DEST_RD_ATOMIC), 0);
	qa.max_rd_atomic++;
	ck_assert_int_eq(iw_modify_qp(qp, &qa, IW_QP_MAX_QP_RD_ATOMIC), EINVAL);
	qa.max_dest_rd_atomic++;
	ck_assert_int_eq(iw_modify_qp(qp, &qa, IW_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	env_fini(&e);
}
END_TEST

START_TEST(cq_srq_limits_enforced)
{
	struct dev_env e;
	struct iw_cq *cq;

	env_init(&e);
	errno = 0;
	ck_assert_ptr_null(iw_create_cq(e.ctx, (int)e.da.max_cqe + 1, NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iw_resize_cq(e.cq, (int)e.da.max_cqe + 1), EINVAL);
	/* (At the limit the ring is 200 MB: SPDK's 12288 stands in.) */
	cq = iw_create_cq(e.ctx, 12288, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	struct iw_srq_init_attr sa = {.attr = {.max_wr = e.da.max_srq_wr + 1, .max_sge = 1}};
	errno = 0;
	ck_assert_ptr_null(iw_create_srq(e.pd, &sa));
	ck_assert_int_eq(errno, EINVAL);
	sa.attr.max_wr = e.da.max_srq_wr;
	sa.attr.max_sge = e.da.max_srq_sge + 1;
	ck_assert_ptr_null(iw_create_srq(e.pd, &sa));
	sa.attr.max_sge = e.da.max_srq_sge;
	struct iw_srq *srq = iw_create_srq(e.pd, &sa);
	ck_assert_ptr_nonnull(srq);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	env_fini(&e);
}
END_TEST

/* The id of this process's thread named name, or -1 (one match at most). */
static pid_t task_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	pid_t found = -1;
	int matches = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
		if (strcmp(comm, name) == 0) {
			found = (pid_t)atoi(de->d_name);
			matches++;
		}
	}
	closedir(d);
	ck_assert_int_le(matches, 1);
	return found;
}

/* _i = 0: the default name; _i = 1: a name and one CPU of our own set (the
 * lowest), so the thread's set differs from the process's when it has
 * several. */
START_TEST(loop_thread_opts)
{
	cpu_set_t mine, want, got;
	struct iw_context_attr a = {0};
	const char *name = "iwarp-loop";

	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	/* One loop thread: the name as given (several get "-<i>"). */
	a.comp_mask = IW_CONTEXT_ATTR_LOOPS;
	a.num_loops = 1;
	CPU_ZERO(&want);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &mine)) {
			CPU_SET(c, &want);
			break;
		}
	}
	if (_i) {
		name = "iwt-loop-7";
		a.comp_mask |= IW_CONTEXT_ATTR_LOOP_CPUSET | IW_CONTEXT_ATTR_LOOP_NAME;
		a.loop_cpuset = &want;
		a.loop_cpuset_size = sizeof(want);
		a.loop_name = name;
	}
	ck_assert_int_eq(task_named(name), -1);
	struct iw_context *ctx = iw_context_new(&a);
	ck_assert_ptr_nonnull(ctx);
	pid_t tid = task_named(name);
	ck_assert_int_gt(tid, 0);
	ck_assert_int_ne(tid, getpid()); /* the loop thread, not ours */
	ck_assert_int_eq(sched_getaffinity(tid, sizeof(got), &got), 0);
	ck_assert(CPU_EQUAL(&got, _i ? &want : &mine));
	ck_assert_int_eq(iw_context_free(ctx), 0);
	ck_assert_int_eq(task_named(name), -1);
}
END_TEST

START_TEST(loop_thread_einval)
{
	cpu_set_t none;
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_LOOP_NAME};

	CPU_ZERO(&none);
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&a)); /* NULL name */
	ck_assert_int_eq(errno, EINVAL);
	a.loop_name = "";
	ck_assert_ptr_null(iw_context_new(&a));
	a.loop_name = "sixteen-chars-xx";
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&a));
	ck_assert_int_eq(errno, EINVAL);
	/* An application base has no thread of ours to name (never touched). */
	a.loop_name = "ok";
	a.base = (struct event_base *)&a;
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&a));
	ck_assert_int_eq(errno, EINVAL);
	a.base = NULL;
	a.comp_mask = IW_CONTEXT_ATTR_LOOP_CPUSET;
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&a)); /* NULL set */
	ck_assert_int_eq(errno, EINVAL);
	a.loop_cpuset = &none;
	a.loop_cpuset_size = sizeof(none);
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&a)); /* no CPU at all */
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* One thread per loop, each pinned to its own CPU (IW_LOOP_PIN), named
 * "<name>-<i>". */
/* Convenience mode's default: one loop thread per CPU we may use, named
 * "iwarp-loop-<i>" when there are several; a loop_cpuset of one CPU gives
 * one loop (as a process under taskset -c N gets). */
START_TEST(test_loops_default)
{
	cpu_set_t mine, one;
	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	int n = CPU_COUNT(&mine);
	struct iw_context *ctx = iw_context_new(NULL);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_uint_eq(iw_context_num_loops(ctx), (unsigned)n);
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), n > 1 ? "iwarp-loop-%d" : "iwarp-loop", i);
		ck_assert_int_gt(task_named(name), 0);
	}
	ck_assert_int_eq(iw_context_free(ctx), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine)) {
			CPU_SET(c, &one);
			break;
		}
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_LOOP_CPUSET,
				    .loop_cpuset = &one, .loop_cpuset_size = sizeof(one)};
	ctx = iw_context_new(&a);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_uint_eq(iw_context_num_loops(ctx), 1);
	ck_assert_int_eq(iw_context_free(ctx), 0);
}
END_TEST

START_TEST(test_loops_pin)
{
	cpu_set_t mine;
	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_LOOPS | IW_CONTEXT_ATTR_LOOP_NAME,
				    .num_loops = 3, .loop_flags = IW_LOOP_PIN,
				    .loop_name = "iwt-pin-loop"};
	struct iw_context *ctx = iw_context_new(&a);
	ck_assert_ptr_nonnull(ctx);
	int count = CPU_COUNT(&mine);
	for (int i = 0; i < 3; i++) {
		char name[32]; /* room for any int: -O1's format-truncation check */
		snprintf(name, sizeof(name), "iwt-pin-loop-%d", i);
		pid_t tid = task_named(name);
		ck_assert_int_gt(tid, 0);
		cpu_set_t got;
		ck_assert_int_eq(sched_getaffinity(tid, sizeof(got), &got), 0);
		ck_assert_int_eq(CPU_COUNT(&got), 1);
		/* The (i mod count)-th CPU of ours. */
		int want = -1, k = i % count;
		for (int cpu = 0; cpu < CPU_SETSIZE && want < 0; cpu++)
			if (CPU_ISSET(cpu, &mine) && k-- == 0)
				want = cpu;
		ck_assert(CPU_ISSET(want, &got));
	}
	ck_assert_int_eq(iw_context_free(ctx), 0);
}
END_TEST

Suite *suite_device(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("query");

	tcase_add_test(tc, query_einval_and_comp_mask);
	tcase_add_test(tc, meets_spdk);
	tcase_add_test(tc, qp_limits_enforced);
	tcase_add_test(tc, cq_srq_limits_enforced);
	suite_add_tcase(s, tc);
	tc = tcase_create("loop_thread");
	tcase_add_loop_test(tc, loop_thread_opts, 0, 2);
	tcase_add_test(tc, loop_thread_einval);
	tcase_add_test(tc, test_loops_pin);
	tcase_add_test(tc, test_loops_default);
	suite_add_tcase(s, tc);
	return s;
}
