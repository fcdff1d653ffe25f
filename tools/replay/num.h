/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Numbers written to the report (stdout) without printf: the summary and
 * the JSON lines are mostly numbers, and a printf per number parses its
 * format string every time (under ASan twice: its interceptor checks the
 * arguments first). The output is octet for octet what printf's %u, %*u
 * and %0*x gave.
 */
#ifndef RP_NUM_H
#define RP_NUM_H

#include <stdint.h>

/* printf("%" PRIu64, v) */
void rp_put_u64(uint64_t v);
/* printf("%*" PRIu64, width, v): right-aligned in width columns. */
void rp_put_u64w(uint64_t v, int width);
/* printf("%0*" PRIu64, width, v): zero-padded. */
void rp_put_u64z(uint64_t v, int width);
/* printf("%0*" PRIx64, digits, v): lower-case, zero-padded. */
void rp_put_hex(uint64_t v, int digits);

#endif
