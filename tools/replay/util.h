/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small helpers of iwarp-replay: strict number parsing for options,
 * big-endian field access for the header rewriter, endpoint formatting and
 * a growable byte buffer. Allocation failure ends the program (exit 3): a
 * decoder that silently drops data would report a wrong capture.
 */
#ifndef RP_UTIL_H
#define RP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp.h"

/* Whole-string unsigned number, decimal or 0x hex, at most max. */
bool rp_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* Like rp_parse_u64 but a leading '-' negates modulo 2^64 (a TO delta). */
bool rp_parse_delta(const char *s, uint64_t *out);
/* Hex octets ("0a0b", "0a:0b" or "0a 0b") into out; the count or -1. */
int rp_parse_hex(const char *s, uint8_t *out, size_t cap);

uint64_t rp_get_be(const uint8_t *p, unsigned width);
void rp_put_be(uint8_t *p, unsigned width, uint64_t v);

/* "192.0.2.1:40001" or "[2001:db8::1]:40001". */
void rp_ep_str(const struct rp_ep *e, char *buf, size_t cap);

void *rp_xmalloc(size_t n);
void *rp_xrealloc(void *p, size_t n);

struct rp_buf {
	uint8_t *p;
	size_t len, cap;
};
void rp_buf_append(struct rp_buf *b, const uint8_t *p, size_t n);
/* Drop the first n octets. */
void rp_buf_consume(struct rp_buf *b, size_t n);
void rp_buf_free(struct rp_buf *b);

#endif
