/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rping's wire protocol (rdma-core librdmacm/examples/rping.c), shared by
 * iwarp-ping (over libiwarp) and the interop suite's bigping (over
 * librdmacm in the siw guest), so both build the same octets: the 16-octet
 * big-endian advertisement sent by Send, and the ping payload.
 */
#ifndef IW_RPING_PROTO_H
#define IW_RPING_PROTO_H

#include <stdint.h>
#include <stdio.h>

#define PING_FMT "rdma-ping-%ld: "
/* rping's RPING_MIN_BUFSIZE, as rping is built (INT_MAX is not defined
 * where its stringify() expands, so it is sizeof("INT_MAX") +
 * sizeof("rdma-ping-%d: ")): keep its limit so a size rping takes works. */
#define PING_MIN_SIZE 23
/* rping's struct rping_rdma_info: __be64 buf, __be32 rkey, __be32 size. */
#define ADV_LEN 16

struct advert {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static inline void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void advert_pack(uint8_t out[ADV_LEN], const struct advert *a)
{
	put_be(out, a->addr, 8);
	put_be(out + 8, a->rkey, 4);
	put_be(out + 12, a->len, 4);
}

static inline void advert_unpack(struct advert *a, const uint8_t in[ADV_LEN])
{
	a->addr = get_be(in, 8);
	a->rkey = (uint32_t)get_be(in + 8, 4);
	a->len = (uint32_t)get_be(in + 12, 4);
}

/* The ping payload, byte for byte as rping's client makes it: the header
 * "rdma-ping-<n>: ", then letters cycling through 'A'..'z' (ASCII 65..122)
 * from a start that moves one on per ping, then a NUL in the last octet.
 * The receiver can rebuild it from n and the size alone. size must be at
 * least PING_MIN_SIZE. */
static inline void fill_ping(char *buf, long size, long n)
{
	long cc = snprintf(buf, (size_t)size, PING_FMT, n);
	int c = 65 + (int)(n % 58);
	for (long i = cc; i < size; i++) {
		buf[i] = (char)c;
		if (++c > 122)
			c = 65;
	}
	buf[size - 1] = 0;
}

#endif
