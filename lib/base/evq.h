/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An event queue with an fd: the shape shared by the completion channel,
 * the context's asynchronous events and the CM event channel. The fd is an
 * eventfd in semaphore mode: it is readable while at least one node is
 * queued, so any event loop can wait on it, and a blocking reader sleeps in
 * read() until something arrives. Nodes are intrusive (embedded in the
 * owner's struct) so pushing never allocates and cannot fail.
 */
#ifndef IW_EVQ_H
#define IW_EVQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct iw_evq_node {
	struct iw_evq_node *next;
	bool queued; /* on a queue now */
	bool dead;   /* dropped while queued: pop skips and releases it */
};

/*
 * An optional notifier (iw_evq_set_notifier): a count owed by the owner
 * thread goes to mem instead of the fd, and notify(arg) runs on that thread
 * once the count is there, so an event loop run by the owner learns of it
 * without a system call. Every other thread still writes the fd. The upper
 * layer (lib/io) supplies notify; this file knows nothing of event loops.
 */
struct iw_evq_notifier {
	void (*notify)(void *arg);
	void *arg;
	pthread_t owner;
};

struct iw_evq {
	pthread_mutex_t lock;
	int fd; /* eventfd(EFD_SEMAPHORE | EFD_CLOEXEC): one count per node pushed */
	struct iw_evq_node *head, **tail;
	unsigned len; /* live and dead nodes queued */
	/* Counts held in memory (only with a notifier), under lock. */
	uint64_t mem;
	/* Set only under lock; read without it first, so that a queue with
	 * no notifier (the common case) takes no extra lock per count. */
	_Atomic bool has_notifier;
	struct iw_evq_notifier nt; /* under lock, valid while has_notifier */
};

/* 0 or -errno (EMFILE, ENFILE, ENOMEM from eventfd). */
int iw_evq_init(struct iw_evq *q);
/* Closes the fd. Nodes still queued are forgotten (their owners free them). */
void iw_evq_cleanup(struct iw_evq *q);
/* Queue a node that is not queued (a queued node is left where it is and
 * false is returned, so a CQ's event cannot be queued twice). */
bool iw_evq_push(struct iw_evq *q, struct iw_evq_node *n);
/* Take the next live node. Reads one count from the fd first: blocks if the
 * fd is blocking and nothing is queued; -EAGAIN if it is nonblocking. Dead
 * nodes are unlinked, passed to release (may be NULL) and skipped. */
int iw_evq_pop(struct iw_evq *q, struct iw_evq_node **out, void (*release)(struct iw_evq_node *));
/* Mark a queued node dead (it stays counted by the fd until popped). Returns
 * true if it was queued. The owner must not free it until release runs;
 * with release == NULL the node must outlive the queue's next pops. */
bool iw_evq_kill(struct iw_evq *q, struct iw_evq_node *n);

/*
 * Additions for owners that must decide and act atomically with the poppers
 * (the CQ's event accounting, the context's asynchronous events).
 */

/* As iw_evq_pop; take (may be NULL) runs on the live node under q->lock in
 * the same critical section that unlinks it, so anyone holding q->lock sees
 * the node either still queued or already taken, never in between. take
 * must not block or take another lock. */
int iw_evq_pop_take(struct iw_evq *q, struct iw_evq_node **out,
		    void (*release)(struct iw_evq_node *), void (*take)(struct iw_evq_node *));
/* As iw_evq_pop, but never blocks whatever the fd's flags: -EAGAIN when no
 * live node is queued. The whole pop runs under q->lock, which is only safe
 * if nobody pops the same queue with iw_evq_pop/iw_evq_pop_take (a blocking
 * reader holding a count would make this read block under the lock): pick
 * one kind of pop per queue. */
int iw_evq_trypop(struct iw_evq *q, struct iw_evq_node **out, void (*release)(struct iw_evq_node *));
/*
 * Deferred signals: between iw_evq_defer_begin and the matching
 * iw_evq_defer_end (scopes nest, per thread), a push links its node at once
 * but leaves the fd's count to be written when the outermost scope ends.
 * Engine locks wrap their critical sections in a scope (iw_qp_lock, the
 * CQ's push), so the eventfd write(2), a system call that may wake another
 * thread, happens after those locks are released instead of under them.
 * Outside any scope a push writes the count itself, after q->lock.
 */
/* The counts this thread owes, by queue, until its outermost scope ends. A
 * thread rarely owes more than a CQ channel and the async queue at once;
 * past IW_EVQ_DEFER_QS distinct queues a push signals at once (still after
 * q->lock). */
#define IW_EVQ_DEFER_QS 8
struct iw_evq_defer {
	unsigned depth, n;
	struct {
		struct iw_evq *q;
		uint64_t count;
	} owed[IW_EVQ_DEFER_QS];
};
/* Every engine lock round trip opens a scope, several per message posted
 * or received: initial-exec TLS makes each one an %fs-relative increment
 * instead of a __tls_get_addr call (the library is never dlopen'ed, and
 * glibc keeps static TLS room for a small block even then). */
extern _Thread_local struct iw_evq_defer iw_evq_defer_tls
	__attribute__((tls_model("initial-exec")));
/* Signal the counts owed (the outermost scope ended). */
void iw_evq_defer_flush(void);
static inline void iw_evq_defer_begin(void)
{
	iw_evq_defer_tls.depth++;
}
static inline void iw_evq_defer_end(void)
{
	if (!--iw_evq_defer_tls.depth && iw_evq_defer_tls.n)
		iw_evq_defer_flush();
}
/* Tests only: called just before each count is written to an fd, on the
 * writing thread (NULL: nothing). Counts that go to a notifier's memory
 * are not written, so they do not call it. */
extern void (*iw_evq_signal_hook)(int fd);

/* Make the calling thread q's notifier owner (replacing any notifier): from
 * now on its counts go to memory and notify(arg) runs on it after each.
 * Pops of q never block from then on (iw_evq_pop_take reads the fd only
 * when it is readable): nobody may be sleeping in a pop of q when this is
 * called. */
void iw_evq_set_notifier(struct iw_evq *q, void (*notify)(void *), void *arg);
/* Remove the notifier and move the counts in memory to the fd, so that a
 * reader waiting on it sees them. Call on the owner thread (or once no
 * thread can push on q any more). */
void iw_evq_clear_notifier(struct iw_evq *q);
/* Counts in memory now (a notifier's owner asks whether to notify again). */
uint64_t iw_evq_mem_count(struct iw_evq *q);

/* iw_evq_kill for a caller that holds q->lock. */
bool iw_evq_kill_locked(struct iw_evq *q, struct iw_evq_node *n);
/* Kill every queued node for which match(n, arg) is true (runs under
 * q->lock; must not block or lock). Returns how many were killed. */
unsigned iw_evq_kill_if(struct iw_evq *q, bool (*match)(const struct iw_evq_node *, const void *),
			const void *arg);
/* Unlink every queued node, live or dead, passing each to release (may be
 * NULL). For an owner tearing the queue down: nobody may pop concurrently.
 * The fd keeps its count; iw_evq_cleanup closes it next. */
void iw_evq_drain(struct iw_evq *q, void (*release)(struct iw_evq_node *));

#endif
