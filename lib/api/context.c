/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs context (context.h): the core part (STag table, async events)
 * that tests and tools can use without any event loop, and the public
 * constructor that adds the libevent glue (ev.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn/conn.h"
#include "engine/context.h"
#include "base/alloc.h"
#include "io/ev.h"
#include "io/loop_group.h"
#include "io/cm_int.h"
#include "io/poll_buf.h"
#include "engine/qp_txq.h"
#include "diag/trace.h"
#include "base/visibility.h"

struct iw_context *iw_context_core_new(void)
{
	return iw_context_core_new_alloc(NULL);
}

struct iw_context *iw_context_core_new_alloc(const struct iw_alloc_ops *ops)
{
	struct iw_context *ctx = iw_calloc(ops, 1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	if (ops) {
		ctx->alloc_ops = *ops;
		ctx->alloc = &ctx->alloc_ops;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->held_lock, NULL);
	int rc = iw_mem_table_init(&ctx->mem);
	ctx->mem.alloc = ctx->alloc;
	if (rc == 0) {
		rc = iw_evq_init(&ctx->async);
		if (rc)
			iw_mem_table_cleanup(&ctx->mem);
	}
	ctx->poll.alloc = ctx->alloc;
	if (rc == 0 && iw_poll_set_init(&ctx->poll)) {
		iw_async_cleanup(ctx);
		iw_mem_table_cleanup(&ctx->mem);
		rc = -ENOMEM;
	}
	if (rc) {
		pthread_mutex_destroy(&ctx->held_lock);
		pthread_mutex_destroy(&ctx->lock);
		iw_free(ops, ctx);
		errno = -rc;
		return NULL;
	}
	return ctx;
}

void iw_context_core_free(struct iw_context *ctx)
{
	if (!ctx)
		return;
	iw_async_cleanup(ctx);
	iw_mem_table_cleanup(&ctx->mem);
	iw_poll_set_cleanup(&ctx->poll);
	iw_txq_spare_free(ctx);
	iw_poll_bufs_free(ctx->poll_bufs);
	pthread_mutex_destroy(&ctx->held_lock);
	pthread_mutex_destroy(&ctx->lock);
	iw_trace_free(ctx->trace, NULL);
	/* The allocator lives in ctx: use a copy to free ctx itself. */
	struct iw_alloc_ops ops = ctx->alloc_ops;
	const struct iw_alloc_ops *a = ctx->alloc ? &ops : NULL;
	iw_free(a, ctx->conn_opts);
	iw_free(a, ctx);
}

/* The loop threads' options, checked before anything is created. Linux
 * limits a thread name to 15 characters. */
static int loop_opts_get(struct iw_ev_group_opts *o, const struct iw_context_attr *attr)
{
	uint32_t m = attr ? attr->comp_mask : 0;
	if (!(m & (IW_CONTEXT_ATTR_LOOP_CPUSET | IW_CONTEXT_ATTR_LOOP_NAME)))
		return 0;
	if (attr->base || o->bases)
		return EINVAL; /* the application's loops: no thread of ours */
	if (m & IW_CONTEXT_ATTR_LOOP_CPUSET) {
		if (!attr->loop_cpuset || !attr->loop_cpuset_size)
			return EINVAL;
		o->cpuset = attr->loop_cpuset;
		o->cpuset_size = attr->loop_cpuset_size;
	}
	if (m & IW_CONTEXT_ATTR_LOOP_NAME) {
		if (!attr->loop_name || !attr->loop_name[0] || strlen(attr->loop_name) > 15)
			return EINVAL;
		o->name = attr->loop_name;
	}
	return 0;
}

/* The group's shape: IW_CONTEXT_ATTR_LOOPS; else attr->base, or our
 * threads, one per CPU we may use. */
static int group_get(struct iw_ev_group_opts *o, const struct iw_context_attr *attr)
{
	memset(o, 0, sizeof(*o));
	o->n = attr && attr->base ? 1 : 0;
	o->bases = attr && attr->base ? &attr->base : NULL;
	o->creator_runs = o->bases != NULL;
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_LOOPS)) {
		if (attr->base || (attr->bases && !attr->num_loops) ||
		    attr->num_loops > 1024 || (attr->loop_flags & ~(uint32_t)IW_LOOP_PIN) ||
		    ((attr->loop_flags & IW_LOOP_PIN) && attr->bases))
			return EINVAL;
		o->n = attr->num_loops;
		o->bases = attr->bases;
		o->creator_runs = false;
		o->pin = attr->loop_flags & IW_LOOP_PIN;
	}
	int rc = loop_opts_get(o, attr);
	if (!rc && !o->n)
		o->n = iw_ev_group_default_n(o->cpuset, o->cpuset_size);
	return rc;
}

/* Every id's starting options, checked now rather than at each id. */
static int conn_opts_take(struct iw_context *ctx, const struct iw_context_attr *attr)
{
	if (!attr || !(attr->comp_mask & IW_CONTEXT_ATTR_CONN_OPTS))
		return 0;
	struct iw_conn_tune scratch;
	if (!attr->conn_opts || iw_conn_tune_set(&scratch, attr->conn_opts))
		return EINVAL;
	ctx->conn_opts = iw_malloc(ctx->alloc, sizeof(*ctx->conn_opts));
	if (!ctx->conn_opts)
		return ENOMEM;
	*ctx->conn_opts = *attr->conn_opts;
	return 0;
}

IW_EXPORT struct iw_context *iw_context_new(const struct iw_context_attr *attr)
{
	struct iw_ev_group_opts lo;
	int rc = group_get(&lo, attr);
	if (rc) {
		errno = rc;
		return NULL;
	}
	const struct iw_alloc_ops *ops = NULL;
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_ALLOC)) {
		ops = attr->alloc;
		if (!ops || !ops->malloc || !ops->calloc || !ops->realloc || !ops->free) {
			errno = EINVAL;
			return NULL;
		}
	}
	struct iw_context *ctx = iw_context_core_new_alloc(ops);
	if (!ctx)
		return NULL;
	struct iw_trace_opts to;
	rc = iw_trace_opts_get(&to, attr);
	to.alloc = ctx->alloc;
	if (rc == 0 && to.path)
		rc = iw_trace_new(&ctx->trace, &to);
	if (rc) {
		iw_context_core_free(ctx);
		errno = rc;
		return NULL;
	}
	size_t bounce = IW_RX_BOUNCE_LEN_DEFAULT;
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_RX_BOUNCE) && attr->rx_bounce_len)
		bounce = attr->rx_bounce_len;
	rc = bounce < 4096 || bounce > (16u << 20) ? EINVAL : conn_opts_take(ctx, attr);
	if (rc) {
		iw_context_core_free(ctx);
		errno = rc;
		return NULL;
	}
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_FLAGS)) {
		if (attr->flags & ~(uint32_t)IW_CONTEXT_POLL) {
			iw_context_core_free(ctx);
			errno = EINVAL;
			return NULL;
		}
		ctx->poll_mode = attr->flags & IW_CONTEXT_POLL;
		ctx->progress = iw_cm_conn_poll;
		ctx->progress_armed = iw_cm_conn_poll_armed;
		ctx->progress_other = iw_cm_conn_poll_other;
		ctx->handback = iw_cm_conn_handback;
	}
	if (ctx->poll_mode && !(ctx->poll_bufs = iw_poll_bufs_new(ctx->alloc, bounce))) {
		iw_context_core_free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	ctx->flush_held = iw_cm_batch_flush;
	lo.bounce_len = bounce;
	rc = iw_ev_group_init(ctx, &lo);
	if (rc) {
		iw_context_core_free(ctx);
		errno = rc;
		return NULL;
	}
	return ctx;
}

IW_EXPORT int iw_context_free(struct iw_context *ctx)
{
	if (!ctx)
		return 0;
	/* Objects still alive would point into freed memory (their MRs live
	 * in the STag table freed below). */
	if (atomic_load(&ctx->num_objs) > 0)
		return EBUSY;
	int rc = iw_ev_group_cleanup(ctx);
	if (rc)
		return rc;
	iw_context_core_free(ctx);
	return 0;
}

IW_EXPORT unsigned iw_context_num_loops(struct iw_context *ctx)
{
	return ctx ? ctx->num_loops : 0;
}

/* Like iw_poll_cq, a count or a negative errno (verbs.h). */
IW_EXPORT int iw_progress(struct iw_context *ctx)
{
	if (!ctx)
		return -EINVAL;
	iw_context_flush_held(ctx);
	if (!ctx->poll_mode)
		return 0;
	return (int)iw_poll_set_run_quiet(&ctx->poll, ctx->progress);
}
