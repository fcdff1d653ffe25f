/* SPDX-License-Identifier: BSD-2-Clause */
/* A planned read over memory (conn_read.h). */
#include <string.h>

#include "conn_read.h"

/* Copy up to len octets of p into the plan's iovecs, in order. */
static size_t fill(const struct iw_conn_rxp *pl, const uint8_t *bounce, size_t cap,
		   const uint8_t *p, size_t len, struct conn_read_stats *st)
{
	size_t n = 0;
	for (int i = 0; i < pl->iovcnt && n < len; i++) {
		size_t k = pl->iov[i].iov_len < len - n ? pl->iov[i].iov_len : len - n;
		memcpy(pl->iov[i].iov_base, p + n, k);
		const uint8_t *b = pl->iov[i].iov_base;
		if (st && (b < bounce || b >= bounce + cap))
			st->in_place += k;
		n += k;
	}
	return n;
}

long conn_read(struct iw_conn *c, uint8_t *bounce, size_t cap, const uint8_t *p, size_t len,
	       unsigned *ev, struct conn_read_stats *st)
{
	struct iw_conn_rxp pl;
	iw_conn_rx_plan_iov(c, &pl, bounce, cap, false, 0);
	size_t n = fill(&pl, bounce, cap, p, len, st);
	if (!n)
		return 0;
	if (st) {
		st->reads++;
		st->spec_reads += pl.num_spec != 0;
		for (unsigned j = 0; j < pl.num_spec; j++) {
			const uint8_t *e = (const uint8_t *)pl.iov[2 * j + 2].iov_base +
					   pl.iov[2 * j + 2].iov_len;
			if (e > st->guess_end)
				st->guess_end = e;
		}
	}
	if (st && st->mid_read)
		st->mid_read(st->mid_arg);
	*ev |= iw_conn_rx_feed(c, &pl, n);
	return (long)n;
}
