/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QPs a polling thread drives (run-to-completion mode, iw_context_attr
 * IW_CONTEXT_POLL): each CQ keeps the QPs that complete into it, and the
 * context keeps all of its QPs, for iw_poll_cq and iw_progress.
 *
 * Pollers walk a set under its read lock, so any number of threads poll at
 * once; adding and removing a QP, and attaching or detaching its connection
 * (iw_qp_set_glue), take the write lock of every set the QP is in. That is
 * the hazard barrier that keeps a poller off a freed QP or connection: once
 * the write lock is held no poller is inside either. The lock is per CQ
 * (and one for the context's iw_progress): nothing process-wide.
 */
#ifndef IW_POLL_SET_H
#define IW_POLL_SET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct iw_qp;
struct iw_cq;

struct iw_poll_set {
	const struct iw_alloc_ops *alloc; /* the context's (set after init) */
	pthread_rwlock_t lock;
	struct iw_qp **qps;
	uint32_t n, cap;
	/* iw_poll_set_run_quiet's walks, and the last one that moved octets
	 * (loose counts: racing pollers lose increments). */
	unsigned walks, hot_walk;
};

/* iw_poll_set_run_quiet: a QP whose last octets are more than
 * IW_PROGRESS_QUIET_AFTER walks older than the set's last octets is
 * visited at one walk in IW_PROGRESS_QUIET_EVERY, while those are at
 * most IW_PROGRESS_HOT_WALKS walks old (a ping-pong's walks between two
 * messages, even on a loaded machine where one walk is a system call of
 * 0.1-0.2 us). */
#define IW_PROGRESS_QUIET_AFTER 256
#define IW_PROGRESS_QUIET_EVERY 64
#define IW_PROGRESS_HOT_WALKS 4096

/* 0 or a positive errno. */
int iw_poll_set_init(struct iw_poll_set *s);
void iw_poll_set_cleanup(struct iw_poll_set *s);
/* 0 or ENOMEM (write lock). */
int iw_poll_set_add(struct iw_poll_set *s, struct iw_qp *qp);
void iw_poll_set_del(struct iw_poll_set *s, struct iw_qp *qp);
/* fn(qp) for each QP under the read lock; the sum of what it returned. */
unsigned iw_poll_set_run(struct iw_poll_set *s, unsigned (*fn)(struct iw_qp *qp));
/* The same for a context's set (iw_progress), leaving out most of the
 * time the QPs that were quiet long before others last moved octets: a thread
 * that spins in iw_progress for one connection's octets otherwise pays a
 * system call per walk for every idle connection of the context (the
 * spin grows, and so does the wait to see what arrived). While every QP
 * is quiet each is visited at every walk, so a first message after a
 * lull waits for no skipped walk; a QP with output queued is never
 * skipped (a visit writes what a full socket left). */
unsigned iw_poll_set_run_quiet(struct iw_poll_set *s, unsigned (*fn)(struct iw_qp *qp));
/* The same for a CQ's set: claim(qp) for the QPs whose arriving octets
 * can complete work into cq (iw_qp_rx_feeds), visit(qp) for the others. */
unsigned iw_poll_set_run_cq(struct iw_poll_set *s, const struct iw_cq *cq,
			    unsigned (*claim)(struct iw_qp *qp), unsigned (*visit)(struct iw_qp *qp));
/* fn(qp) for the QPs of s (a context's set) that complete into neither
 * queue of cq: the connections a poller of cq visits besides its own. */
unsigned iw_poll_set_run_others(struct iw_poll_set *s, const struct iw_cq *cq,
				unsigned (*fn)(struct iw_qp *qp));
/* Can what arrives on qp's connection complete a work request into cq
 * now: a receive posted (or an SRQ) when cq is the receive CQ, Read or
 * atomic responses or a LOCAL_INV awaited when it is the send CQ? A
 * thread that polls cq only for its Writes' and Sends' completions (which
 * the sending completes) is not waiting for the socket, and may stop
 * polling as soon as it has them: a Write that lands later must not wait
 * for a loop that the poll kept off. Read without the QP's lock: a stale
 * answer costs a loop wake-up or one pause, never a lost octet. */
bool iw_qp_rx_feeds(const struct iw_qp *qp, const struct iw_cq *cq);

/* Was a CQ that qp's arriving octets would complete into now
 * (iw_qp_rx_feeds) polled, unarmed, since the last call and since it
 * was last armed (a thread that arms goes to sleep)? seen holds
 * the caller's last look at the receive and send CQs' poll counts and is
 * updated. A poller whose every poll finds a completion never visits
 * the connection, so only this tells the loop that it is there. */
bool iw_qp_feed_polled(const struct iw_qp *qp, unsigned seen[2]);

/* Do pollers read for qp: its context polls and the QP did not ask to be
 * left to the loop (IW_QP_CREATE_LOOP_RX)? */
bool iw_qp_polled(const struct iw_qp *qp);
/* A polled QP (iw_qp_polled) enters its context's and CQs' sets when it
 * is created and leaves them when destroyed (0 or ENOMEM). */
int iw_qp_poll_join(struct iw_qp *qp);
void iw_qp_poll_leave(struct iw_qp *qp);
/* Attach (glue non-NULL) or detach the connection driving qp, with its
 * transmit hook. Detaching returns once no poller can still use the old
 * glue. */
void iw_qp_set_glue(struct iw_qp *qp, void *glue, void (*wake)(struct iw_qp *qp, bool posted));
/* The glue, read the way pollers must read it. */
void *iw_qp_glue(struct iw_qp *qp);

#endif
