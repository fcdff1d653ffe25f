/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp-nvmf-perf: latency histogram and the verification pattern. */
#include "perf_load.h"

static unsigned bucket(uint64_t ns)
{
	if (ns < 16)
		return (unsigned)ns;
	unsigned lg = 63u - (unsigned)__builtin_clzll(ns);
	unsigned b = (lg - 3) * 16 + (unsigned)((ns >> (lg - 4)) & 15);
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

/* The middle of a bucket's range. */
static uint64_t bucket_value(unsigned b)
{
	if (b < 16)
		return b;
	unsigned lg = b / 16 + 3, sub = b % 16;
	uint64_t lo = (uint64_t)(16 + sub) << (lg - 4);
	return lo + ((1ull << (lg - 4)) >> 1);
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->n[bucket(ns)]++;
	h->count++;
}

uint64_t hist_pct(const struct hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->count), seen = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->n[b];
		if (seen > want)
			return bucket_value(b);
	}
	return 0;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void pattern_fill(void *buf, uint64_t off, uint32_t len, uint32_t version)
{
	uint64_t *w = buf, v = (uint64_t)version << 40;
	for (uint32_t i = 0; i < len / 8; i++)
		w[i] = mix((off + 8ull * i) ^ v);
}

int64_t pattern_check(const void *buf, uint64_t off, uint32_t len, uint32_t version)
{
	const uint64_t *w = buf;
	uint64_t v = (uint64_t)version << 40;
	for (uint32_t i = 0; i < len / 8; i++)
		if (w[i] != mix((off + 8ull * i) ^ v))
			return 8 * (int64_t)i;
	return -1;
}
