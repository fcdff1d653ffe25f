/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A context's loop group: N event loops (ev.h), our own threads or the
 * application's bases, each with its own lock. CM ids are spread over
 * them (new ids round robin, accepted connections by their listener's
 * policy, cm_spread.c); nothing locks the group as a whole: the array is
 * fixed from iw_context_new to iw_context_free.
 */
#ifndef IW_LOOP_GROUP_H
#define IW_LOOP_GROUP_H

#include <stdbool.h>
#include <stddef.h>

struct iw_context;
struct iw_ev;
struct event_base;

struct iw_ev_group_opts {
	unsigned n;                      /* loops, at least 1 */
	struct event_base *const *bases; /* n application bases; NULL: our threads */
	size_t bounce_len;
	const void *cpuset;              /* our threads' CPUs; NULL: inherited */
	size_t cpuset_size;
	const char *name;                /* NULL: IW_EV_THREAD_NAME */
	bool pin;                        /* loop i on the i-th CPU of the set */
	/* One application base (iw_context_attr.base): the creating thread
	 * runs it until a callback runs elsewhere. With several, each loop's
	 * thread is the one that first dispatches its base. */
	bool creator_runs;
};

/* 0 or a positive errno (nothing left behind). */
int iw_ev_group_init(struct iw_context *ctx, const struct iw_ev_group_opts *o);
/* 0, or EBUSY while CM ids exist (then nothing is stopped). */
int iw_ev_group_cleanup(struct iw_context *ctx);
/* Loop i (i < ctx->num_loops). */
struct iw_ev *iw_ev_group_at(struct iw_context *ctx, unsigned i);
/* The loop of a new id: round robin over the group. */
struct iw_ev *iw_ev_group_next(struct iw_context *ctx);
/* The loop with the fewest CM ids (the lowest index on a tie). */
struct iw_ev *iw_ev_group_least(struct iw_context *ctx);
/* The default number of loops in convenience mode: one per CPU of
 * cpuset (NULL: of the process's affinity). */
unsigned iw_ev_group_default_n(const void *cpuset, size_t size);

#endif
