/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues and completion channels. A CQ is a ring of work
 * completions under a mutex (poll from any thread); arming is one-shot as
 * in verbs; an armed CQ that receives a completion (or a solicited one when
 * armed solicited-only) queues itself once on its channel, whose fd the
 * application waits on. A full CQ drops nothing silently: the completion is
 * counted as lost and IW_EVENT_CQ_ERR is raised on the context.
 */
#ifndef IW_CQ_H
#define IW_CQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/evq.h"
#include "engine/poll_set.h"
#include "iwarp/verbs.h"

enum { IW_CQ_UNARMED = 0, IW_CQ_ARM_NEXT, IW_CQ_ARM_SOLICITED };

/* Largest cqe iw_create_cq accepts (a ring of 4 Mi entries, ~200 MB). */
#define IW_CQ_MAX_CQE (1 << 22)

/*
 * Locks, always taken in this order:
 *   cq->lock          the ring, armed, lost, overflow
 *   channel q.lock    events_raised, events_acked, the channel's refcnt
 *   context async.lock
 * events_raised counts events handed out by iw_get_cq_event (not queued), as
 * libibverbs counts events reported: an event still queued when the CQ is
 * destroyed is killed, and does not hold destruction up.
 */

struct iw_cq {
	struct iw_context *context;
	struct iw_comp_channel *channel;
	void *cq_context;
	pthread_mutex_t lock;
	struct iw_wc *ring;
	uint32_t cap, head, count;
	int armed;
	uint64_t lost;           /* completions dropped on overflow */
	bool overflow;           /* in an overflow episode: CQ_ERR already raised */
	struct iw_evq_node ev;   /* queued on the channel when the CQ fires */
	unsigned events_raised;  /* channel events handed out ... */
	unsigned events_acked;   /* ... and acked (destroy needs them equal) */
	atomic_int use;          /* QPs and SRQs using it */
	struct iw_poll_set poll; /* polling context: the QPs completing here */
	/* iw_poll_cq's visits to the context's other connections: polls
	 * that found nothing, and whether the last visit moved octets. */
	atomic_uint idle_polls;
	atomic_bool others_hot;
	/* Unarmed iw_poll_cq calls, counted loosely (racing pollers may
	 * lose an increment; only "changed since" is ever asked), so the
	 * loop can tell a busy poller from an idle CQ even when every poll
	 * finds a completion and visits nothing (iw_qp_feed_polled). */
	atomic_uint polls;
	/* polls when the CQ was last armed: a thread whose latest act on
	 * the CQ was to arm it sleeps, whatever it polled before. */
	atomic_uint arm_polls;
};

/* An iw_poll_cq that finds nothing visits the context's other
 * connections once in this many while they are quiet (cq.c). */
#define IW_POLL_OTHERS_EVERY 128

/* The channel's private part; the public struct is its first member. */
struct iw_comp_channel_int {
	struct iw_comp_channel pub;
	struct iw_evq q;
	/* The event loop that delivers its events (iw_comp_channel_set_loop):
	 * lib/io's, opaque here; loop_free frees it on destroy. */
	void *loop;
	void (*loop_free)(void *loop);
};

/* Add a completion; solicited marks a message that carried SE. Returns 0, or
 * -ENOSPC when the CQ is full (the completion is lost, counted, and
 * IW_EVENT_CQ_ERR raised once per overflow episode). Thread safe. */
int iw_cq_push(struct iw_cq *cq, const struct iw_wc *wc, bool solicited);

/* Free ring slots now (for callers that want to avoid an overflow). */
uint32_t iw_cq_room(struct iw_cq *cq);

#endif
