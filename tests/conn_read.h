/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A connection's read as lib/io/cm_conn.c does it, over octets in memory:
 * plan the iovecs (iw_conn_rx_plan_iov), fill them in order as readv would
 * with at most len octets of the stream, feed what was read
 * (iw_conn_rx_feed). For the pump ends of test_conn and fuzz_conn.
 */
#ifndef IW_CONN_READ_H
#define IW_CONN_READ_H
#include <stdint.h>

#include "conn/conn.h"

struct conn_read_stats {
	uint64_t reads;      /* planned reads that took octets */
	uint64_t spec_reads; /* of them, reads with read-ahead guesses */
	uint64_t in_place;   /* octets read outside the bounce buffer */
	const uint8_t *guess_end; /* the highest end of a guessed payload */
	/* Called after the iovecs were filled and before the engine is fed
	 * (NULL: none): what another thread may do while readv runs. */
	void (*mid_read)(void *arg);
	void *mid_arg;
};

/* Returns the octets read (0: the plan offered none); events into *ev. */
long conn_read(struct iw_conn *c, uint8_t *bounce, size_t cap, const uint8_t *p, size_t len,
	       unsigned *ev, struct conn_read_stats *st);

#endif
