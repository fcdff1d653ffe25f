/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the Check suites. */
#ifndef IW_TEST_UTIL_H
#define IW_TEST_UTIL_H
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* CRC32c by its reflected bitwise definition, independent of ISA-L. */
uint32_t tu_ref_crc32c(const uint8_t *p, size_t n);
/* Hex octets ("aa bb" or "aabb") into out; fails the test if malformed. */
size_t tu_unhex(uint8_t *out, size_t cap, const char *s);
/* True when the suite runs under valgrind (its preload is in LD_PRELOAD). */
bool tu_under_valgrind(void);
struct iw_context;
/* A context with just what CQs and channels use (no iw_context_new: no
 * loop, no device); fails the test if it cannot be made. */
void tu_cq_ctx_init(struct iw_context *ctx);
void tu_cq_ctx_fini(struct iw_context *ctx);
/* Descriptors open in this process (entries of /proc/self/fd), -1 if unknown. */
int tu_open_fds(void);
#endif
