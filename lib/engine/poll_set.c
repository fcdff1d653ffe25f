/* SPDX-License-Identifier: BSD-2-Clause */
/* The QPs a polling thread drives (poll_set.h). */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#include <errno.h>
#include <stdlib.h>

#include "engine/poll_set.h"
#include "base/alloc.h"
#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"

int iw_poll_set_init(struct iw_poll_set *s)
{
	s->qps = NULL;
	s->n = s->cap = 0;
	s->walks = s->hot_walk = 0;
	/* Writers (connection setup and teardown) must not starve behind
	 * threads that poll without pause. */
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	int rc = pthread_rwlock_init(&s->lock, &a);
	pthread_rwlockattr_destroy(&a);
	return rc;
}

void iw_poll_set_cleanup(struct iw_poll_set *s)
{
	pthread_rwlock_destroy(&s->lock);
	iw_free(s->alloc, s->qps);
	s->qps = NULL;
}

static int grow(struct iw_poll_set *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : 4;
	struct iw_qp **q = iw_realloc(s->alloc, s->qps, cap * sizeof(*q));
	if (!q)
		return ENOMEM;
	s->qps = q;
	s->cap = cap;
	return 0;
}

int iw_poll_set_add(struct iw_poll_set *s, struct iw_qp *qp)
{
	int rc = 0;
	pthread_rwlock_wrlock(&s->lock);
	if (s->n == s->cap)
		rc = grow(s);
	if (!rc)
		s->qps[s->n++] = qp;
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

/* Order does not matter to pollers: the last entry fills the hole. */
void iw_poll_set_del(struct iw_poll_set *s, struct iw_qp *qp)
{
	pthread_rwlock_wrlock(&s->lock);
	for (uint32_t i = 0; i < s->n; i++) {
		if (s->qps[i] == qp) {
			s->qps[i] = s->qps[--s->n];
			break;
		}
	}
	pthread_rwlock_unlock(&s->lock);
}

unsigned iw_poll_set_run(struct iw_poll_set *s, unsigned (*fn)(struct iw_qp *qp))
{
	unsigned got = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (uint32_t i = 0; i < s->n; i++)
		got += fn(s->qps[i]);
	pthread_rwlock_unlock(&s->lock);
	return got;
}

#define PEEK(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define LOOSE_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Quiet for long before the set's last octets (hot_walk, read when the
 * walk began: a QP that moved octets in this walk is later, and never
 * skipped), nothing to write, and the walk's turn is not its own (the
 * turns of several quiet QPs are spread over the walks). Relative to the
 * others, not to the walk: the one connection of a slow ping-pong, quiet
 * for many walks between messages, is still read at every walk. */
static bool skip_quiet(struct iw_qp *qp, unsigned hot_walk, unsigned walk, uint32_t i)
{
	return (int)(hot_walk - PEEK(qp->progress_got)) > IW_PROGRESS_QUIET_AFTER &&
	       (walk + i) % IW_PROGRESS_QUIET_EVERY && !PEEK(qp->txq);
}

static unsigned visit_count(struct iw_qp *qp, unsigned (*fn)(struct iw_qp *qp), unsigned walk)
{
	unsigned got = fn(qp);
	if (got)
		LOOSE_STORE(qp->progress_got, walk);
	return got;
}

unsigned iw_poll_set_run_quiet(struct iw_poll_set *s, unsigned (*fn)(struct iw_qp *qp))
{
	unsigned walk = PEEK(s->walks) + 1, hot_walk = PEEK(s->hot_walk);
	LOOSE_STORE(s->walks, walk);
	bool hot = walk - hot_walk <= IW_PROGRESS_HOT_WALKS;
	unsigned got = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (uint32_t i = 0; i < s->n; i++)
		if (!hot || !skip_quiet(s->qps[i], hot_walk, walk, i))
			got += visit_count(s->qps[i], fn, walk);
	pthread_rwlock_unlock(&s->lock);
	if (got)
		LOOSE_STORE(s->hot_walk, walk);
	return got;
}

unsigned iw_poll_set_run_cq(struct iw_poll_set *s, const struct iw_cq *cq,
			    unsigned (*claim)(struct iw_qp *qp), unsigned (*visit)(struct iw_qp *qp))
{
	unsigned got = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (uint32_t i = 0; i < s->n; i++) {
		struct iw_qp *qp = s->qps[i];
		got += (iw_qp_rx_feeds(qp, cq) ? claim : visit)(qp);
	}
	pthread_rwlock_unlock(&s->lock);
	return got;
}

unsigned iw_poll_set_run_others(struct iw_poll_set *s, const struct iw_cq *cq,
				unsigned (*fn)(struct iw_qp *qp))
{
	unsigned got = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (uint32_t i = 0; i < s->n; i++) {
		struct iw_qp *qp = s->qps[i];
		if (qp->send_cq != cq && qp->recv_cq != cq)
			got += fn(qp);
	}
	pthread_rwlock_unlock(&s->lock);
	return got;
}

/* ------------------------------------------------------------ QPs */

bool iw_qp_rx_feeds(const struct iw_qp *qp, const struct iw_cq *cq)
{
	if (cq == qp->recv_cq && (qp->srq || PEEK(qp->rq_tail) != PEEK(qp->rq_head)))
		return true;
	return cq == qp->send_cq && (PEEK(qp->orq_cnt) || PEEK(qp->inv_wait));
}

static bool cq_polled(const struct iw_qp *qp, const struct iw_cq *cq, unsigned *seen)
{
	unsigned now = atomic_load(&cq->polls);
	bool changed = now != *seen;
	*seen = now;
	return changed && now != atomic_load(&cq->arm_polls) && iw_qp_rx_feeds(qp, cq);
}

bool iw_qp_polled(const struct iw_qp *qp)
{
	return qp->context->poll_mode && !(qp->create_flags & IW_QP_CREATE_LOOP_RX);
}

bool iw_qp_feed_polled(const struct iw_qp *qp, unsigned seen[2])
{
	bool r = cq_polled(qp, qp->recv_cq, &seen[0]);
	if (qp->send_cq != qp->recv_cq)
		r |= cq_polled(qp, qp->send_cq, &seen[1]);
	return r;
}

static struct iw_poll_set *qp_sets(struct iw_qp *qp, struct iw_poll_set **v)
{
	v[0] = &qp->context->poll;
	v[1] = &qp->send_cq->poll;
	v[2] = qp->recv_cq != qp->send_cq ? &qp->recv_cq->poll : NULL;
	return v[0];
}

int iw_qp_poll_join(struct iw_qp *qp)
{
	struct iw_poll_set *v[3];
	qp_sets(qp, v);
	/* New is not quiet: iw_progress reads it at every walk until it has
	 * been quiet for long before another QP's octets. */
	qp->progress_got = PEEK(v[0]->walks);
	for (int i = 0; i < 3; i++) {
		if (v[i] && iw_poll_set_add(v[i], qp)) {
			while (i-- > 0)
				if (v[i])
					iw_poll_set_del(v[i], qp);
			return ENOMEM;
		}
	}
	return 0;
}

void iw_qp_poll_leave(struct iw_qp *qp)
{
	struct iw_poll_set *v[3];
	qp_sets(qp, v);
	for (int i = 0; i < 3; i++)
		if (v[i])
			iw_poll_set_del(v[i], qp);
}

/* Detaching waits for every poller already inside the QP's sets: each one
 * may have read the old glue pointer, and none can once it is NULL. */
void iw_qp_set_glue(struct iw_qp *qp, void *glue, void (*wake)(struct iw_qp *qp, bool posted))
{
	__atomic_store_n(&qp->wake, wake, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->glue, glue, __ATOMIC_RELEASE);
	if (glue || !iw_qp_polled(qp))
		return;
	struct iw_poll_set *v[3];
	qp_sets(qp, v);
	for (int i = 0; i < 3; i++) {
		if (v[i]) {
			pthread_rwlock_wrlock(&v[i]->lock);
			pthread_rwlock_unlock(&v[i]->lock);
		}
	}
}

void *iw_qp_glue(struct iw_qp *qp)
{
	return __atomic_load_n(&qp->glue, __ATOMIC_ACQUIRE);
}
