/* SPDX-License-Identifier: BSD-2-Clause */
/* ChaCha20 keystream seeded by getrandom (csprng.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/csprng.h"

static uint32_t rotl(uint32_t v, int n)
{
	return (v << n) | (v >> (32 - n));
}

static void quarter(uint32_t *x, int a, int b, int c, int d)
{
	x[a] += x[b];
	x[d] = rotl(x[d] ^ x[a], 16);
	x[c] += x[d];
	x[b] = rotl(x[b] ^ x[c], 12);
	x[a] += x[b];
	x[d] = rotl(x[d] ^ x[a], 8);
	x[c] += x[d];
	x[b] = rotl(x[b] ^ x[c], 7);
}

void iw_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
		       uint8_t out[64])
{
	uint32_t s[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
	uint32_t x[16];

	memcpy(s + 4, key, 32);
	s[12] = counter;
	memcpy(s + 13, nonce, 12);
	memcpy(x, s, sizeof(x));
	for (int i = 0; i < 10; i++) {
		quarter(x, 0, 4, 8, 12);
		quarter(x, 1, 5, 9, 13);
		quarter(x, 2, 6, 10, 14);
		quarter(x, 3, 7, 11, 15);
		quarter(x, 0, 5, 10, 15);
		quarter(x, 1, 6, 11, 12);
		quarter(x, 2, 7, 8, 13);
		quarter(x, 3, 4, 9, 14);
	}
	for (int i = 0; i < 16; i++) {
		uint32_t v = x[i] + s[i];

		out[4 * i] = (uint8_t)v; /* little endian, as RFC 8439 */
		out[4 * i + 1] = (uint8_t)(v >> 8);
		out[4 * i + 2] = (uint8_t)(v >> 16);
		out[4 * i + 3] = (uint8_t)(v >> 24);
	}
}

static int urandom(void *out, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -errno;
	got = read(fd, out, n);
	close(fd);
	return got == (ssize_t)n ? 0 : -EIO;
}

/* Key and nonce from the kernel. */
static int seed(struct iw_csprng *r)
{
	uint8_t s[44];
	ssize_t got = getrandom(s, sizeof(s), 0);
	int rc = got == (ssize_t)sizeof(s) ? 0 : urandom(s, sizeof(s));

	if (rc < 0)
		return rc;
	memcpy(r->key, s, 32);
	memcpy(r->nonce, s + 32, 12);
	memset(s, 0, sizeof(s));
	r->counter = 0;
	r->pos = sizeof(r->buf);
	r->pid = getpid();
	return 0;
}

int iw_csprng_init(struct iw_csprng *r)
{
	return seed(r);
}

/* The next block. After fork the child reseeds; should that fail, the pid
 * goes into the nonce so the two streams still differ. A counter that wraps
 * (2^32 blocks, 256 GiB of output) moves the nonce on. */
static void refill(struct iw_csprng *r)
{
	pid_t pid = getpid();

	if (pid != r->pid && seed(r) < 0) {
		r->nonce[0] ^= (uint32_t)pid;
		r->pid = pid;
	}
	if (r->counter == UINT32_MAX) {
		r->nonce[1]++;
		r->counter = 0;
	}
	iw_chacha20_block(r->key, r->counter++, r->nonce, r->buf);
	r->pos = 0;
}

void iw_csprng_bytes(struct iw_csprng *r, void *out, size_t n)
{
	uint8_t *o = out;

	while (n) {
		size_t k;

		if (r->pos == sizeof(r->buf))
			refill(r);
		k = sizeof(r->buf) - r->pos;
		if (k > n)
			k = n;
		memcpy(o, r->buf + r->pos, k);
		memset(r->buf + r->pos, 0, k); /* what was handed out is not kept */
		r->pos += (unsigned)k;
		o += k;
		n -= k;
	}
}

uint32_t iw_csprng_below(struct iw_csprng *r, uint32_t n)
{
	/* Reject the top partial range of 2^32 so every residue is equally
	 * likely; fewer than half the draws are rejected for any n. */
	uint32_t limit = n ? UINT32_MAX - (UINT32_MAX % n + 1) % n : 0;
	uint32_t v;

	if (n <= 1)
		return 0;
	do
		iw_csprng_bytes(r, &v, sizeof(v));
	while (v > limit);
	return v % n;
}
