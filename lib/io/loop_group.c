/* SPDX-License-Identifier: BSD-2-Clause */
/* A context's loop group (loop_group.h). */
#define _GNU_SOURCE /* CPU_ALLOC, sched_getaffinity */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/context.h"
#include "base/alloc.h"
#include "io/cm_int.h"
#include "io/ev.h"
#include "io/loop_group.h"

/* Enough loops for any machine this runs on; more is a mistake. */
#define IW_MAX_LOOPS 1024

/* One loop per CPU the threads may run on: those of the set, or of the
 * process's affinity (a process started under taskset -c 3 gets one). */
unsigned iw_ev_group_default_n(const void *cpuset, size_t size)
{
	cpu_set_t mine;
	long n;
	if (cpuset)
		n = CPU_COUNT_S(size, (const cpu_set_t *)cpuset);
	else if (sched_getaffinity(0, sizeof(mine), &mine) == 0)
		n = CPU_COUNT(&mine);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > IW_MAX_LOOPS ? IW_MAX_LOOPS : (unsigned)n;
}

/* The n-th CPU (wrapping) of set, or -1 if the set is empty. */
static int nth_cpu(const cpu_set_t *set, size_t size, unsigned n)
{
	int count = CPU_COUNT_S(size, set);
	if (count == 0)
		return -1;
	unsigned want = n % (unsigned)count;
	for (int c = 0; c < (int)(size * 8); c++)
		if (CPU_ISSET_S(c, size, set) && want-- == 0)
			return c;
	return -1;
}

/* Loop i's CPU set when pinned: the i-th CPU of the given set, or of the
 * process's own. */
static int pin_set(cpu_set_t *one, size_t size, const struct iw_ev_group_opts *o, unsigned i)
{
	cpu_set_t *from = CPU_ALLOC(size * 8);
	if (!from)
		return ENOMEM;
	CPU_ZERO_S(size, from);
	int rc = 0;
	if (o->cpuset)
		memcpy(from, o->cpuset, o->cpuset_size < size ? o->cpuset_size : size);
	else if (sched_getaffinity(0, size, from))
		rc = errno;
	int c = rc ? -1 : nth_cpu(from, size, i);
	CPU_FREE(from);
	if (c < 0)
		return rc ? rc : EINVAL;
	CPU_ZERO_S(size, one);
	CPU_SET_S(c, size, one);
	return 0;
}

/* Thread names: the name itself for one loop, "<name>-<i>" for several
 * (cut to Linux's 15 characters). */
static void loop_name(char *out, size_t len, const struct iw_ev_group_opts *o, unsigned i)
{
	const char *name = o->name ? o->name : IW_EV_THREAD_NAME;
	char num[12];
	int k = snprintf(num, sizeof(num), "-%u", i);
	if (o->n == 1)
		snprintf(out, len, "%s", name);
	else
		snprintf(out, len, "%.*s%s", 15 - k, name, num);
}

static int start_loop(struct iw_context *ctx, const struct iw_ev_group_opts *o, unsigned i)
{
	char name[16];
	struct iw_ev_thread_opts t = {.cpuset = o->cpuset, .cpuset_size = o->cpuset_size,
				      .name = name};
	size_t size = o->cpuset ? o->cpuset_size : sizeof(cpu_set_t);
	cpu_set_t *one = NULL;
	loop_name(name, sizeof(name), o, i);
	if (o->pin && !o->bases) {
		one = CPU_ALLOC(size * 8);
		int rc = one ? pin_set(one, size, o, i) : ENOMEM;
		if (rc) {
			CPU_FREE(one);
			return rc;
		}
		t.cpuset = one;
		t.cpuset_size = size;
	}
	int rc = iw_ev_new(&ctx->loops[i], ctx->alloc, o->bases ? o->bases[i] : NULL,
			   o->bounce_len, &t, i, o->creator_runs);
	CPU_FREE(one);
	return rc;
}

static void free_loops(struct iw_context *ctx)
{
	for (unsigned i = 0; i < ctx->num_loops; i++)
		iw_ev_free(ctx->loops[i]);
	iw_free(ctx->alloc, ctx->loops);
	ctx->loops = NULL;
	ctx->num_loops = 0;
}

int iw_ev_group_init(struct iw_context *ctx, const struct iw_ev_group_opts *o)
{
	if (o->n < 1 || o->n > IW_MAX_LOOPS)
		return EINVAL;
	ctx->loops = iw_calloc(ctx->alloc, o->n, sizeof(*ctx->loops));
	if (!ctx->loops)
		return ENOMEM;
	ctx->num_loops = o->n;
	for (unsigned i = 0; i < o->n; i++) {
		int rc = start_loop(ctx, o, i);
		if (rc) {
			free_loops(ctx);
			return rc;
		}
	}
	return 0;
}

int iw_ev_group_cleanup(struct iw_context *ctx)
{
	for (unsigned i = 0; i < ctx->num_loops; i++)
		if (iw_ev_ids(ctx->loops[i]))
			return EBUSY;
	iw_cm_park_cleanup(ctx);
	free_loops(ctx);
	return 0;
}

struct iw_ev *iw_ev_group_at(struct iw_context *ctx, unsigned i)
{
	return ctx->loops[i];
}

struct iw_ev *iw_ev_group_next(struct iw_context *ctx)
{
	unsigned i = atomic_fetch_add_explicit(&ctx->next_loop, 1, memory_order_relaxed);
	return ctx->loops[i % ctx->num_loops];
}

struct iw_ev *iw_ev_group_least(struct iw_context *ctx)
{
	struct iw_ev *best = ctx->loops[0];
	int low = iw_ev_ids(best);
	for (unsigned i = 1; i < ctx->num_loops; i++) {
		int n = iw_ev_ids(ctx->loops[i]);
		if (n < low) {
			low = n;
			best = ctx->loops[i];
		}
	}
	return best;
}
