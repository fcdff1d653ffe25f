/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The allocator of a context (struct iw_alloc_ops in <iwarp/verbs.h>):
 * every allocation the library makes for a context goes through these, so
 * that an application can account for it or fail it on purpose (the
 * failing-allocation suite does, one allocation after another). A NULL
 * allocator means libc's.
 */
#ifndef IW_ALLOC_H
#define IW_ALLOC_H

#include <stddef.h>

#include "iwarp/verbs.h"

/* NULL with errno ENOMEM on failure. */
void *iw_malloc(const struct iw_alloc_ops *a, size_t size);
void *iw_calloc(const struct iw_alloc_ops *a, size_t num, size_t size);
void *iw_realloc(const struct iw_alloc_ops *a, void *p, size_t size);
/* Accepts NULL. */
void iw_free(const struct iw_alloc_ops *a, void *p);

#endif
