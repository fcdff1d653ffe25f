/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-input outcome digests for fuzz targets that keep state across
 * inputs (fuzz/digest.c). */
#ifndef IW_FUZZ_DIGEST_H
#define IW_FUZZ_DIGEST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Digests are taken only when the environment variable env names a file
 * (opened for appending at the first call); false otherwise. */
bool fuzz_digest_on(const char *env);

/* An input begins: its octets name its line. */
void fuzz_digest_begin(const uint8_t *data, size_t size);

/* Something the input made happen (octets written, a completion...). */
void fuzz_digest_mix(const void *p, size_t n);

/* The input ended: one line, "INPUT-HASH DIGEST". */
void fuzz_digest_end(void);

#endif
