/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs context: owner of the STag table, the asynchronous event queue
 * and the group of libevent loops the connections run on. Only lib/io
 * touches the loops.
 */
#ifndef IW_CONTEXT_H
#define IW_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/evq.h"
#include "iwarp/verbs.h"
#include "engine/mem.h"
#include "engine/poll_set.h"

struct iw_ev;    /* ev.c's state of one loop */
struct iw_trace; /* trace.c */
struct iw_qp;

struct iw_txq;
struct iw_cm_parked; /* lib/io/cm_park.c */
struct iw_cm_id_int; /* lib/io/cm_int.h */
struct iw_poll_bufs; /* lib/io/poll_buf.h */

struct iw_context {
	/* The application's allocator (NULL: libc's), a copy in alloc_ops. */
	const struct iw_alloc_ops *alloc;
	struct iw_alloc_ops alloc_ops;
	pthread_mutex_t lock; /* object lists and numbering */
	struct iw_mem_table mem;
	struct iw_evq async;  /* struct iw_async_node entries */
	atomic_uint next_qpn;
	atomic_uint next_pd;
	atomic_int num_objs;  /* PDs, CQs and completion channels alive */
	atomic_uint num_qps;  /* QPs alive (at most IW_MAX_QP) */
	/* The loop group (lib/io/loop_group.h), fixed for the context's
	 * life: num_loops loops, and the round robin of new CM ids. */
	struct iw_ev **loops;
	unsigned num_loops;
	atomic_uint next_loop;
	struct iw_trace *trace; /* NULL: no tracing (trace.h) */
	atomic_uint async_lost; /* events iw_async_raise could not allocate */
	/* iw_context_attr.conn_opts, copied (heap), that every CM id starts
	 * with; NULL: the defaults. */
	struct iw_conn_opts *conn_opts;
	/* Run-to-completion mode (IW_CONTEXT_POLL): every QP is in poll, and
	 * iw_poll_cq / iw_progress call progress (the glue's) for each QP
	 * they drive; it returns how many receive batches it handled. */
	bool poll_mode;
	struct iw_poll_set poll;
	unsigned (*progress)(struct iw_qp *qp);
	/* The same for a CQ the application armed (it is about to sleep:
	 * reading must not keep the loop off), and, when it arms one, for
	 * each QP completing into it: the loop reads for them again. */
	unsigned (*progress_armed)(struct iw_qp *qp);
	/* The same for a QP of another CQ that iw_poll_cq visits (cq.c): it
	 * skips connections that pollers of their own CQs keep. */
	unsigned (*progress_other)(struct iw_qp *qp);
	unsigned (*handback)(struct iw_qp *qp);
	/* The receive buffers pollers read large messages into, as large as
	 * the loop's (lib/io/poll_buf.h); NULL when not polling. */
	struct iw_poll_bufs *poll_bufs;
	/* Transmit coalescing (lib/io/cm_batch.c): the connections whose
	 * posts left FPDUs unwritten, a list under held_lock, and whether
	 * any are listed (held_n), so that a poll with none costs one load.
	 * iw_poll_cq, iw_req_notify_cq and iw_progress call flush_held (the
	 * glue's; NULL without one) while held_n is not 0. */
	pthread_mutex_t held_lock;
	struct iw_cm_id_int *held;
	atomic_uint held_n;
	void (*flush_held)(struct iw_context *ctx);
	/* One drained transmit queue kept for the next QP that transmits
	 * (qp_txq.c): idle QPs hold none. */
	struct iw_txq *_Atomic txq_spare;
	/* Listening sockets of destroyed listeners, kept for a while
	 * (iw_conn_opts.relisten_ms; lib/io/cm_park.c), under lock. */
	struct iw_cm_parked *parked;
};

/* One queued asynchronous event (heap). iw_get_async_event copies the event
 * out and frees the node at once; iw_ack_async_event is a no-op kept for the
 * verbs shape. */
struct iw_async_node {
	struct iw_evq_node node; /* first: node == &async_node */
	const struct iw_alloc_ops *alloc; /* the context's, to free the node */
	struct iw_async_event ev;
};

/* Queue an asynchronous event for the application. Allocation failure is
 * counted in ctx->async_lost (ctx never blocks or crashes; the public event
 * has no field to carry the count). Safe from any thread. */
void iw_async_raise(struct iw_context *ctx, const struct iw_async_event *ev);

/* Drop the queued events that name element (a CQ, QP or SRQ about to be
 * destroyed), so the application is never handed a dangling pointer. The
 * nodes are freed by whichever pop meets them. Returns how many. */
unsigned iw_async_forget(struct iw_context *ctx, const void *element);

/* For iw_context_free: free every queued event, then clean up ctx->async. */
void iw_async_cleanup(struct iw_context *ctx);

/* Write what posts left held on the context's connections (flush_held):
 * before a poll looks at a CQ, so that it finds their completions. */
static inline void iw_context_flush_held(struct iw_context *ctx)
{
	if (atomic_load_explicit(&ctx->held_n, memory_order_relaxed) && ctx->flush_held)
		ctx->flush_held(ctx);
}

/* A context without an event loop (tests, tools, fuzzers drive QPs by
 * hand). NULL with errno on failure. */
struct iw_context *iw_context_core_new(void);
/* The same with the application's allocator (NULL: libc's). */
struct iw_context *iw_context_core_new_alloc(const struct iw_alloc_ops *ops);
void iw_context_core_free(struct iw_context *ctx);

#endif
