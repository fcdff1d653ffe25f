/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small cryptographic random stream: ChaCha20 (RFC 8439 block function)
 * keyed with 32 octets from getrandom(2), used where a peer must not be
 * able to predict a value (STag keys and slots, RFC 5042 section 5). One
 * getrandom per generator (and again after fork), then about 4 cycles per
 * octet, so drawing a value per registration costs nothing measurable.
 * Not thread safe: the owner serialises (the STag table draws under its
 * mutex).
 */
#ifndef IW_CSPRNG_H
#define IW_CSPRNG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct iw_csprng {
	uint32_t key[8];
	uint32_t nonce[3];
	uint32_t counter;
	uint8_t buf[64];  /* the current keystream block */
	unsigned pos;     /* octets of buf used */
	pid_t pid;        /* the process that seeded it: a forked child reseeds */
};

/* Seed from the kernel. 0, or -errno from getrandom (then from reading
 * /dev/urandom) when neither gives 44 octets. */
int iw_csprng_init(struct iw_csprng *r);

/* n random octets. Never fails: a generator that cannot reseed after fork
 * keeps its stream but moves to a fresh nonce drawn from its own output
 * mixed with the pid, so parent and child still part ways. */
void iw_csprng_bytes(struct iw_csprng *r, void *out, size_t n);

/* Uniform in [0, n) (n >= 1), without modulo bias. */
uint32_t iw_csprng_below(struct iw_csprng *r, uint32_t n);

/* The ChaCha20 block for (key, counter, nonce), for the RFC 8439 vector
 * test. */
void iw_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
		       uint8_t out[64]);

#endif
