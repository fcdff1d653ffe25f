/* SPDX-License-Identifier: BSD-2-Clause */
/* The shared in-memory pump (mempump.h). */
#include <stdlib.h>
#include <string.h>

#include "mempump.h"

#define MP_IOV 512

uint32_t mp_rand(struct mp *m)
{
	uint32_t *s = m->rng ? m->rng : &m->own_rng;
	uint32_t x = *s ? *s : 0x9E3779B9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

static int stage_reserve(struct mp *m, size_t n)
{
	if (n <= m->stage_cap)
		return 0;
	free(m->stage);
	m->stage_cap = n < 65536 ? 65536 : n;
	m->stage = malloc(m->stage_cap);
	if (!m->stage)
		m->stage_cap = 0;
	return m->stage ? 0 : -1;
}

long mp_take(struct mp *m, const struct mp_ops *o, void *end)
{
	static struct iovec iov[MP_IOV];
	int cap = m->partial ? 1 + (int)(mp_rand(m) % 8) : MP_IOV;
	int n = o->tx_iov(end, iov, cap);
	if (n < 0 || n > cap)
		return -1;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (m->partial && total > 1 && (mp_rand(m) & 1))
		total = 1 + mp_rand(m) % total;
	if (stage_reserve(m, total))
		return -1;
	size_t off = 0;
	for (int i = 0; i < n && off < total; i++) {
		size_t k = iov[i].iov_len < total - off ? iov[i].iov_len : total - off;
		memcpy(m->stage + off, iov[i].iov_base, k);
		off += k;
	}
	if (total)
		o->tx_sent(end, total);
	return (long)total;
}

static size_t chunk(struct mp *m, size_t left)
{
	size_t n = left;
	switch (m->mode) {
	case MP_BYTES:
		n = 1;
		break;
	case MP_RANDOM:
		n = (mp_rand(m) & 3) ? 1 + mp_rand(m) % 7 : 1 + mp_rand(m) % 5000;
		break;
	case MP_DIRECT:
		n = 1 + mp_rand(m) % 24;
		break;
	default:
		break;
	}
	return n < left ? n : left;
}

/* The glue's recv() straight into the destination, when the end offers.
 * 1: placed *used octets; 0: no offer; -1: the end refused. */
static int feed_direct(struct mp *m, const struct mp_ops *o, void *end, const uint8_t *p,
		       size_t left, size_t *used)
{
	uint8_t *dst = NULL;
	size_t n = o->rx_direct ? o->rx_direct(end, &dst) : 0;
	if (n == 0)
		return 0;
	if (n > left)
		n = left;
	memcpy(dst, p, n);
	if (o->rx_placed(end, n))
		return -1;
	m->direct += n;
	*used = n;
	return 1;
}

/* A planned read of the end's (o->rx_read) that stops where TCP might:
 * after all that is there, or (every other time) after a random count. */
static int feed_read(struct mp *m, const struct mp_ops *o, void *end, const uint8_t *p,
		     size_t left, size_t *used)
{
	/* Whole, cut anywhere, or (as a reader that keeps up finds a
	 * header before its payload) a few octets. */
	uint32_t r = mp_rand(m) & 3;
	size_t lim = r == 0 ? left : r == 1 ? 1 + mp_rand(m) % left : 1 + mp_rand(m) % 24;
	if (m->read_lim)
		lim = m->read_lim;
	if (lim > left)
		lim = left;
	long n = o->rx_read(end, p, lim);
	if (n < 0 || (size_t)n > lim)
		return -1;
	*used = (size_t)n;
	return n > 0;
}

int mp_feed(struct mp *m, const struct mp_ops *o, void *end, const uint8_t *p, size_t len)
{
	size_t pos = 0;
	while (pos < len) {
		size_t n = 0;
		if (m->mode == MP_DIRECT && o->rx_read) {
			int rc = feed_read(m, o, end, p + pos, len - pos, &n);
			if (rc < 0)
				return -1;
			if (rc) {
				pos += n;
				continue;
			}
		} else if (m->mode == MP_DIRECT) {
			int rc = feed_direct(m, o, end, p + pos, len - pos, &n);
			if (rc < 0)
				return -1;
			if (rc) {
				pos += n;
				continue;
			}
		}
		n = chunk(m, len - pos);
		if (o->rx(end, p + pos, n))
			return -1;
		pos += n;
	}
	return 0;
}

void mp_free(struct mp *m)
{
	free(m->stage);
	m->stage = NULL;
	m->stage_cap = 0;
}
