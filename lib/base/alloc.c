/* SPDX-License-Identifier: BSD-2-Clause */
/* The allocator of a context (alloc.h). */
#include <errno.h>
#include <stdlib.h>

#include "base/alloc.h"

/* An application's allocator need not set errno: ENOMEM is what every
 * caller reports for NULL. */
static void *nomem(void *p)
{
	if (!p)
		errno = ENOMEM;
	return p;
}

void *iw_malloc(const struct iw_alloc_ops *a, size_t size)
{
	return nomem(a ? a->malloc(a->user, size) : malloc(size));
}

void *iw_calloc(const struct iw_alloc_ops *a, size_t num, size_t size)
{
	return nomem(a ? a->calloc(a->user, num, size) : calloc(num, size));
}

void *iw_realloc(const struct iw_alloc_ops *a, void *p, size_t size)
{
	return nomem(a ? a->realloc(a->user, p, size) : realloc(p, size));
}

void iw_free(const struct iw_alloc_ops *a, void *p)
{
	if (!p)
		return;
	if (a)
		a->free(a->user, p);
	else
		free(p);
}
