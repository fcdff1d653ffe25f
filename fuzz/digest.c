/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-input outcome digests (digest.h). A target that keeps its objects
 * across inputs must give every input the same start whatever ran before
 * it: fuzz/run.sh runs a corpus in two orders, and with nothing kept,
 * and compares each input's digest of what it made happen.
 */
#include <stdio.h>
#include <stdlib.h>

#include "digest.h"

#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static struct {
	FILE *out;
	int state; /* 0 not asked yet, 1 on, -1 off */
	uint64_t input, h;
} D;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * FNV_PRIME;
	return h;
}

bool fuzz_digest_on(const char *env)
{
	if (D.state == 0) {
		const char *path = getenv(env);

		D.state = -1;
		if (path && *path) {
			D.out = fopen(path, "a");
			if (!D.out) {
				perror(path);
				abort();
			}
			D.state = 1;
		}
	}
	return D.state > 0;
}

void fuzz_digest_begin(const uint8_t *data, size_t size)
{
	D.input = fnv(FNV_BASIS, data, size);
	D.h = FNV_BASIS;
}

void fuzz_digest_mix(const void *p, size_t n)
{
	D.h = fnv(D.h, p, n);
}

void fuzz_digest_end(void)
{
	fprintf(D.out, "%016llx %016llx\n", (unsigned long long)D.input,
		(unsigned long long)D.h);
	fflush(D.out);
}
