/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event queue behind the completion channel, the asynchronous events and
 * the CM event channel (see evq.h).
 *
 * The count and the list move together: a push links the node and then
 * adds one to the count; a pop first takes one from the count (read(),
 * which is where a blocking reader sleeps, outside the lock) and only then
 * unlinks a node under the lock. The count is the fd's plus, with a
 * notifier (evq.h), the one in memory (q->mem, under q->lock), which a pop
 * takes from first. So at every moment
 *
 *	count <= len, and len - count = pops that have read but not unlinked
 *	                                + pushes whose count is still owed,
 *
 * which means a pop that got its count always finds a node to unlink, and
 * once no count is owed the fd is readable or mem non-zero exactly when
 * there is a node nobody has claimed yet. Dead nodes keep their count: the
 * pop that meets one drops it and reads again.
 *
 * This file never takes another lock under q->lock (callbacks that run under
 * it must not lock either), and release callbacks run after it is dropped, so
 * owners may free or lock in them. An owner that holds q->lock itself (for
 * iw_evq_kill_locked) documents its own order (cq.h).
 *
 * The count is written after the node is linked and after q->lock (and,
 * inside a deferral scope, every engine lock) is released. The invariant
 * above only needs "link before count", so it holds: between the link and
 * the write the node is queued but not yet counted, a blocking reader
 * sleeps on a moment longer, and a reader that got a count always finds a
 * node. No wake-up is lost: every push owes exactly one count, and the
 * owing thread writes it (or, as the notifier's owner, adds it to memory
 * and notifies) when its outermost scope ends, which every engine lock's
 * release reaches before the call returns. The queue signalled is one
 * that outlives that scope: a CQ's channel outlives the CQ, which
 * outlives the QP whose lock the scope wraps; the context outlives both.
 * iw_evq_trypop cannot count on count == len any more, so it checks that
 * the fd is readable before reading (it alone reads that fd, under q->lock).
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/evq.h"

#ifdef IW_FUZZING
/* Fuzzing builds only (-DIW_FUZZING, never the library): the counts of
 * fds below FUZZ_FDS live here, not in the eventfd. A fuzz target takes
 * its events on the thread that raised them and never waits on the fd,
 * and the write, poll and read that each event cost were 7% of
 * fuzz_qp_rx's time (perf; strace: about one event per input). The
 * eventfds are still made, so that every fd the API hands out is real. */
#define FUZZ_FDS 1024
static _Atomic uint64_t fuzz_count[FUZZ_FDS];

static _Atomic uint64_t *fuzz_counter(int fd)
{
	return fd >= 0 && fd < FUZZ_FDS ? &fuzz_count[fd] : NULL;
}

/* One count off, if there is one: true. */
static bool fuzz_take(_Atomic uint64_t *c)
{
	uint64_t v = atomic_load(c);

	while (v && !atomic_compare_exchange_weak(c, &v, v - 1))
		;
	return v != 0;
}
#endif

int iw_evq_init(struct iw_evq *q)
{
	int fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
#ifdef IW_FUZZING
	if (fuzz_counter(fd))
		atomic_store(fuzz_counter(fd), 0); /* a closed queue's fd again */
#endif
	rc = pthread_mutex_init(&q->lock, NULL);
	if (rc) {
		close(fd);
		return -rc;
	}
	q->fd = fd;
	q->head = NULL;
	q->tail = &q->head;
	q->len = 0;
	q->mem = 0;
	atomic_init(&q->has_notifier, false);
	return 0;
}

void iw_evq_cleanup(struct iw_evq *q)
{
	/* fd < 0 marks a queue already cleaned up, so a second call is harmless. */
	if (!q || q->fd < 0)
		return;
	close(q->fd);
	q->fd = -1;
	q->head = NULL;
	q->tail = &q->head;
	q->len = 0;
	pthread_mutex_destroy(&q->lock);
}

void (*iw_evq_signal_hook)(int fd);

/* An eventfd write fails only for a bad fd or a count at 2^64 - 2, neither of
 * which an initialised queue holding fewer nodes than memory can reach. */
static void fd_add(int fd, uint64_t n)
{
	if (iw_evq_signal_hook)
		iw_evq_signal_hook(fd);
#ifdef IW_FUZZING
	if (fuzz_counter(fd)) {
		atomic_fetch_add(fuzz_counter(fd), n);
		return;
	}
#endif
	ssize_t w = write(fd, &n, sizeof(n));

	(void)w;
}

/* The notifier's owner counts in memory, then notifies with q->lock
 * dropped (notify may take the loop's own locks, if it has any). The
 * unlocked look at has_notifier is only a shortcut: the owner itself set
 * it, and any other thread re-checks under the lock and writes the fd.
 * true: counted here. */
static bool mem_add(struct iw_evq *q, uint64_t n)
{
	struct iw_evq_notifier nt;
	bool mine;

	if (!atomic_load_explicit(&q->has_notifier, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&q->lock);
	mine = q->has_notifier && pthread_equal(q->nt.owner, pthread_self());
	if (mine) {
		q->mem += n;
		nt = q->nt;
	}
	pthread_mutex_unlock(&q->lock);
	if (mine)
		nt.notify(nt.arg);
	return mine;
}

static void count_add(struct iw_evq *q, uint64_t n)
{
	if (!mem_add(q, n))
		fd_add(q->fd, n);
}

void iw_evq_set_notifier(struct iw_evq *q, void (*notify)(void *), void *arg)
{
	pthread_mutex_lock(&q->lock);
	q->nt.notify = notify;
	q->nt.arg = arg;
	q->nt.owner = pthread_self();
	atomic_store(&q->has_notifier, true);
	pthread_mutex_unlock(&q->lock);
}

void iw_evq_clear_notifier(struct iw_evq *q)
{
	uint64_t n;

	pthread_mutex_lock(&q->lock);
	n = q->mem;
	q->mem = 0;
	atomic_store(&q->has_notifier, false);
	pthread_mutex_unlock(&q->lock);
	/* Between the two, the nodes are queued and not counted: allowed. */
	if (n)
		fd_add(q->fd, n);
}

uint64_t iw_evq_mem_count(struct iw_evq *q)
{
	uint64_t n;

	pthread_mutex_lock(&q->lock);
	n = q->mem;
	pthread_mutex_unlock(&q->lock);
	return n;
}

_Thread_local struct iw_evq_defer iw_evq_defer_tls;
#define defer iw_evq_defer_tls

/* The outermost scope ended with counts owed (iw_evq_defer_end). n is
 * re-read: neither a hook (tests) nor a notifier may push, but be safe. */
void iw_evq_defer_flush(void)
{
	for (unsigned i = 0; i < defer.n; i++)
		count_add(defer.owed[i].q, defer.owed[i].count);
	defer.n = 0;
}

/* Owe one count on q if a scope is open. false: signal it now. */
static bool defer_count(struct iw_evq *q)
{
	if (!defer.depth)
		return false;
	for (unsigned i = 0; i < defer.n; i++) {
		if (defer.owed[i].q == q) {
			defer.owed[i].count++;
			return true;
		}
	}
	if (defer.n == IW_EVQ_DEFER_QS)
		return false;
	defer.owed[defer.n].q = q;
	defer.owed[defer.n++].count = 1;
	return true;
}

/* One count off the fd: sleeps if it is blocking and the count is 0. */
static int count_down(int fd)
{
	uint64_t v;
#ifdef IW_FUZZING
	/* Nobody could wake a wait on the fd: a count of 0 is EAGAIN. */
	if (fuzz_counter(fd))
		return fuzz_take(fuzz_counter(fd)) ? 0 : -EAGAIN;
#endif
	ssize_t n = read(fd, &v, sizeof(v));

	if (n == (ssize_t)sizeof(v))
		return 0;
	return n < 0 ? -errno : -EIO;
}

static bool fd_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

#ifdef IW_FUZZING
	if (fuzz_counter(fd))
		return atomic_load(fuzz_counter(fd)) > 0;
#endif
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void link_tail(struct iw_evq *q, struct iw_evq_node *n)
{
	n->next = NULL;
	n->queued = true;
	n->dead = false;
	*q->tail = n;
	q->tail = &n->next;
	q->len++;
}

/* The caller holds the lock and has checked that the list is not empty. */
static struct iw_evq_node *unlink_head(struct iw_evq *q)
{
	struct iw_evq_node *n = q->head;

	q->head = n->next;
	if (!q->head)
		q->tail = &q->head;
	n->next = NULL;
	n->queued = false;
	q->len--;
	return n;
}

bool iw_evq_push(struct iw_evq *q, struct iw_evq_node *n)
{
	pthread_mutex_lock(&q->lock);
	if (n->queued) {
		pthread_mutex_unlock(&q->lock);
		return false;
	}
	link_tail(q, n);
	pthread_mutex_unlock(&q->lock);
	if (!defer_count(q))
		count_add(q, 1);
	return true;
}

/*
 * Unlink the head node for a pop that owns one count. Returns the live node
 * taken, or NULL with *dead set to a dead node the caller must release (and
 * then read another count for). The list cannot be empty here unless
 * iw_evq_drain ran concurrently, which is a misuse; it is survived as "read
 * again" rather than a crash.
 */
static struct iw_evq_node *take_head(struct iw_evq *q, struct iw_evq_node **dead,
				     void (*take)(struct iw_evq_node *))
{
	*dead = NULL;
	if (!q->head)
		return NULL;
	if (q->head->dead) {
		*dead = unlink_head(q);
		return NULL;
	}
	if (take)
		take(q->head);
	return unlink_head(q);
}

/* Take one count for a pop that holds q->lock without blocking: from
 * memory first, else from the fd if it is readable. */
static int count_down_locked(struct iw_evq *q)
{
	if (q->mem) {
		q->mem--;
		return 0;
	}
	/* Every pop of this queue holds the lock, so nobody else takes a
	 * count: readable now means the read below cannot block. A node
	 * whose count is still owed waits for it (EAGAIN now; the signal
	 * that follows wakes the application). An empty queue needs no
	 * look at the fd, which saves a notifier's owner a poll(2) per
	 * "anything else?". */
	if (q->len == 0 || !fd_readable(q->fd))
		return -EAGAIN;
	return count_down(q->fd);
}

static int trypop_take(struct iw_evq *q, struct iw_evq_node **out,
		       void (*release)(struct iw_evq_node *), void (*take)(struct iw_evq_node *))
{
	for (;;) {
		struct iw_evq_node *n, *dead;
		int rc;

		pthread_mutex_lock(&q->lock);
		rc = count_down_locked(q);
		if (rc) {
			pthread_mutex_unlock(&q->lock);
			return rc;
		}
		n = take_head(q, &dead, take);
		pthread_mutex_unlock(&q->lock);
		if (n) {
			*out = n;
			return 0;
		}
		if (dead && release)
			release(dead);
	}
}

int iw_evq_trypop(struct iw_evq *q, struct iw_evq_node **out, void (*release)(struct iw_evq_node *))
{
	return trypop_take(q, out, release, NULL);
}

int iw_evq_pop_take(struct iw_evq *q, struct iw_evq_node **out,
		    void (*release)(struct iw_evq_node *), void (*take)(struct iw_evq_node *))
{
	/* With a notifier the pop never blocks: its owner pops from a
	 * callback of the loop it runs. */
	if (atomic_load(&q->has_notifier))
		return trypop_take(q, out, release, take);
	for (;;) {
		struct iw_evq_node *n, *dead;
		int rc = count_down(q->fd);

		if (rc)
			return rc;
		pthread_mutex_lock(&q->lock);
		n = take_head(q, &dead, take);
		pthread_mutex_unlock(&q->lock);
		if (n) {
			*out = n;
			return 0;
		}
		if (dead && release)
			release(dead);
	}
}

int iw_evq_pop(struct iw_evq *q, struct iw_evq_node **out, void (*release)(struct iw_evq_node *))
{
	return iw_evq_pop_take(q, out, release, NULL);
}

bool iw_evq_kill_locked(struct iw_evq *q, struct iw_evq_node *n)
{
	(void)q;
	if (!n->queued)
		return false;
	n->dead = true;
	return true;
}

bool iw_evq_kill(struct iw_evq *q, struct iw_evq_node *n)
{
	bool queued;

	pthread_mutex_lock(&q->lock);
	queued = iw_evq_kill_locked(q, n);
	pthread_mutex_unlock(&q->lock);
	return queued;
}

unsigned iw_evq_kill_if(struct iw_evq *q, bool (*match)(const struct iw_evq_node *, const void *),
			const void *arg)
{
	unsigned killed = 0;

	pthread_mutex_lock(&q->lock);
	for (struct iw_evq_node *n = q->head; n; n = n->next) {
		if (!n->dead && match(n, arg)) {
			n->dead = true;
			killed++;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return killed;
}

void iw_evq_drain(struct iw_evq *q, void (*release)(struct iw_evq_node *))
{
	struct iw_evq_node *list;

	/* Detach the whole list first so that release runs unlocked. */
	pthread_mutex_lock(&q->lock);
	list = q->head;
	q->head = NULL;
	q->tail = &q->head;
	q->len = 0;
	pthread_mutex_unlock(&q->lock);
	while (list) {
		struct iw_evq_node *n = list;

		list = n->next;
		n->next = NULL;
		n->queued = false;
		if (release)
			release(n);
	}
}
