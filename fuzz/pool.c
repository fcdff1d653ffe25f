/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A context allocator for fuzz targets (pool.h): blocks of each exact size
 * are kept when freed and handed out again in a later input. A target that
 * creates its QP, SRQ and MRs per input made ~20 allocations an input, and
 * under ASan each cost a stack unwind, the quarantine's bookkeeping and
 * shadow poisoning: an eighth of fuzz_qp_rx's time (perf).
 *
 * What ASan checked stays checked, at the block's own granularity:
 *  - overflow: each block still comes from malloc, whose redzones are
 *    around it, and only goes to a request of its exact size;
 *  - use after free: a freed block is poisoned whole and not reused in the
 *    same input (no earlier than ASan's quarantine would give it back);
 *    ASan reports the access as use-after-poison;
 *  - double free: the pool's table says whether a block is out (abort
 *    otherwise); a pointer it never handed out goes to free(), which ASan
 *    checks;
 *  - uninitialised reads: malloc'd blocks are filled with ASan's 0xbe as
 *    ASan fills fresh ones, so an input sees the same octets whatever ran
 *    before it;
 *  - leaks: fuzz_pool_live() counts the blocks out, for the target to
 *    compare (LSan would not see a block that never came from malloc).
 * The pool's bookkeeping is beside the blocks, not in front of them: with
 * a poisoned header before each block, LSan reported the kept objects as
 * leaks (it ignores pointers it finds in poisoned memory; with
 * LSAN_OPTIONS=use_poisoned=1 the reports went).
 * Reports name no allocation or free stack: FUZZ_POOL=0 reproduces an
 * input with libc's allocator and ASan's full reports.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sanitizer/asan_interface.h>

#include "fuzz.h"
#include "pool.h"

#define NUM_SLOT 4096     /* blocks the pool tracks (a power of 2) */
#define NUM_CLASS 64      /* sizes it keeps blocks of */
#define MAX_POOLED (1u << 20)
#define FILL_BYTE 0xbe    /* ASan's malloc_fill_byte */
#define FILL_MAX 4096     /* and max_malloc_fill_size */

/* A block the pool made: open addressing on its address. */
static struct slot {
	void *p;
	size_t size;
	bool out;
	struct slot *next; /* its class's free list */
} slot[NUM_SLOT];
static size_t num_slot;

static struct cls {
	size_t size;
	struct slot *ready;   /* freed in an earlier input */
	struct slot *pending; /* freed in this one */
} cls[NUM_CLASS];
static size_t num_cls, live;

static struct slot *slot_of(const void *p, bool add)
{
	size_t i = ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 52;

	for (;; i = (i + 1) & (NUM_SLOT - 1)) {
		if (slot[i].p == p)
			return &slot[i];
		if (!slot[i].p)
			break;
	}
	/* Kept under three quarters full: probes stay short and end. */
	if (!add || num_slot >= NUM_SLOT / 4 * 3)
		return NULL;
	num_slot++;
	slot[i].p = (void *)p;
	return &slot[i];
}

static struct cls *class_of(size_t size)
{
	for (size_t i = 0; i < num_cls; i++)
		if (cls[i].size == size)
			return &cls[i];
	if (num_cls == NUM_CLASS || size > MAX_POOLED)
		return NULL;
	cls[num_cls].size = size;
	return &cls[num_cls++];
}

/* A block of size octets: a kept one, else malloc's (tracked if there is
 * room, else handed out as malloc's alone). */
static void *take(size_t size)
{
	struct cls *c = class_of(size);
	struct slot *s = c ? c->ready : NULL;
	void *p;

	if (s) {
		c->ready = s->next;
		ASAN_UNPOISON_MEMORY_REGION(s->p, size);
		live++;
	} else {
		p = malloc(size ? size : 1);
		if (!p)
			return NULL;
		live++;
		s = c ? slot_of(p, true) : NULL;
		if (!s)
			return p;
		s->size = size;
	}
	s->out = true;
	return s->p;
}

static void give(void *user, void *p)
{
	struct slot *s = p ? slot_of(p, false) : NULL;
	struct cls *c;

	(void)user;
	if (!p)
		return;
	live--;
	if (!s) {
		free(p); /* untracked: ASan checks it */
		return;
	}
	CHECK(s->out); /* freed twice */
	s->out = false;
	c = class_of(s->size);
	s->next = c->pending;
	c->pending = s;
	ASAN_POISON_MEMORY_REGION(p, s->size);
}

static void *pool_malloc(void *user, size_t size)
{
	void *p = take(size);

	(void)user;
	if (p)
		memset(p, FILL_BYTE, size < FILL_MAX ? size : FILL_MAX);
	return p;
}

static void *pool_calloc(void *user, size_t num, size_t size)
{
	void *p;

	(void)user;
	if (size && num > SIZE_MAX / size)
		return NULL;
	p = take(num * size);
	if (p)
		memset(p, 0, num * size);
	return p;
}

/* The old block's size: the pool's, else (an untracked block) malloc's. */
static void *pool_realloc(void *user, void *old, size_t size)
{
	struct slot *s = old ? slot_of(old, false) : NULL;
	void *p;

	if (old && !s)
		return realloc(old, size);
	p = pool_malloc(user, size);
	if (p && old) {
		CHECK(s->out);
		memcpy(p, old, s->size < size ? s->size : size);
		give(user, old);
	}
	return p;
}

void fuzz_pool_next_input(void)
{
	for (size_t i = 0; i < num_cls; i++) {
		struct cls *c = &cls[i];

		while (c->pending) {
			struct slot *s = c->pending;

			c->pending = s->next;
			s->next = c->ready;
			c->ready = s;
		}
	}
}

size_t fuzz_pool_live(void)
{
	return live;
}

const struct iw_alloc_ops *fuzz_pool_ops(void)
{
	static const struct iw_alloc_ops ops = {
		.malloc = pool_malloc,
		.calloc = pool_calloc,
		.realloc = pool_realloc,
		.free = give,
	};
	const char *env = getenv("FUZZ_POOL");

	return env && strcmp(env, "0") == 0 ? NULL : &ops;
}
