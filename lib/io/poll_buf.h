/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive buffers for polling threads (run-to-completion mode): a few per
 * context, each as large as the loop's bounce buffer, so that a poller
 * reading a large message gets the read-ahead the loop gets
 * (lib/conn/rx_plan.c needs a gather area as large as what it reads
 * ahead). A poller tries to take one only while a large message is being
 * placed; when none is free, or allocating it fails, it reads into its
 * small stack buffer as before: slower, never wrong.
 *
 * Why a pool in the context and not a buffer per thread (pthread key):
 * the buffers come from the context's allocator, whose hooks may not
 * outlive the context, while a thread may outlive it or poll several
 * contexts; key destructors never run for a thread that ends the process
 * with exit(); and memory stays bounded by the pool, not by how many
 * threads ever polled. Why not one per connection: thousands of
 * connections, most of them idle.
 */
#ifndef IW_POLL_BUF_H
#define IW_POLL_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "iwarp/verbs.h"

struct iw_poll_bufs;

/* One buffer taken from the pool (iw_poll_buf_take). */
struct iw_poll_buf {
	uint8_t *p;
	size_t len;
};

/* A pool of buffers of len octets, none allocated yet. NULL with errno
 * ENOMEM. */
struct iw_poll_bufs *iw_poll_bufs_new(const struct iw_alloc_ops *a, size_t len);
/* Frees the pool and its buffers; no poller may hold one. Accepts NULL. */
void iw_poll_bufs_free(struct iw_poll_bufs *pb);

/* A free buffer, allocated on first use, or NULL (pb NULL, all taken, or
 * the allocation failed): never waits. */
struct iw_poll_buf *iw_poll_buf_take(struct iw_poll_bufs *pb);
/* Give it back for the next poller. Accepts NULL. */
void iw_poll_buf_give(struct iw_poll_buf *b);

#endif
