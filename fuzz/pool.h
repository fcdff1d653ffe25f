/* SPDX-License-Identifier: BSD-2-Clause */
/* A context allocator for fuzz targets that reuses blocks (fuzz/pool.c). */
#ifndef IW_FUZZ_POOL_H
#define IW_FUZZ_POOL_H
#include <stddef.h>

#include "iwarp/verbs.h"

/* The allocator to give iw_context_core_new_alloc, or NULL (libc's) when
 * the environment says FUZZ_POOL=0. */
const struct iw_alloc_ops *fuzz_pool_ops(void);

/* Blocks handed out and not freed. */
size_t fuzz_pool_live(void);

/* An input ends: the blocks it freed may be handed out again. */
void fuzz_pool_next_input(void);

#endif
