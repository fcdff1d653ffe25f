/* SPDX-License-Identifier: BSD-2-Clause */
/* The pollers' receive buffers (poll_buf.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/alloc.h"
#include "io/poll_buf.h"

/* Polling threads that read large messages at the same time, each with a
 * buffer of its own; a thread beyond these reads into its stack buffer.
 * Applications poll from about as many threads as they have cores for
 * I/O, and only reads in the middle of a large message take one. */
#define IW_POLL_BUFS 4

struct slot {
	struct iw_poll_buf buf; /* first: a taken buffer is its slot */
	atomic_bool busy;       /* the try-lock: held while taken */
};

struct iw_poll_bufs {
	const struct iw_alloc_ops *alloc;
	struct slot slot[IW_POLL_BUFS];
};

struct iw_poll_bufs *iw_poll_bufs_new(const struct iw_alloc_ops *a, size_t len)
{
	struct iw_poll_bufs *pb = iw_calloc(a, 1, sizeof(*pb));
	if (!pb)
		return NULL;
	pb->alloc = a;
	for (int i = 0; i < IW_POLL_BUFS; i++) {
		pb->slot[i].buf.len = len;
		atomic_init(&pb->slot[i].busy, false);
	}
	return pb;
}

void iw_poll_bufs_free(struct iw_poll_bufs *pb)
{
	if (!pb)
		return;
	for (int i = 0; i < IW_POLL_BUFS; i++)
		iw_free(pb->alloc, pb->slot[i].buf.p);
	iw_free(pb->alloc, pb);
}

/* The slot is ours: its buffer, allocated now if it was never needed. A
 * failed allocation is tried again at a later take (it may have been
 * transient); meanwhile the poller reads into its stack. */
static struct iw_poll_buf *fill(const struct iw_poll_bufs *pb, struct slot *s)
{
	if (!s->buf.p)
		s->buf.p = iw_malloc(pb->alloc, s->buf.len);
	if (s->buf.p)
		return &s->buf;
	atomic_store_explicit(&s->busy, false, memory_order_release);
	return NULL;
}

struct iw_poll_buf *iw_poll_buf_take(struct iw_poll_bufs *pb)
{
	if (!pb)
		return NULL;
	for (int i = 0; i < IW_POLL_BUFS; i++) {
		struct slot *s = &pb->slot[i];
		/* A plain load first: a taken slot costs no locked write. */
		if (atomic_load_explicit(&s->busy, memory_order_relaxed) ||
		    atomic_exchange_explicit(&s->busy, true, memory_order_acquire))
			continue;
		return fill(pb, s);
	}
	return NULL;
}

void iw_poll_buf_give(struct iw_poll_buf *b)
{
	if (b)
		atomic_store_explicit(&((struct slot *)(void *)b)->busy, false,
				      memory_order_release);
}
