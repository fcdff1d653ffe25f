/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Little-endian field access for NVMe structures, by shifts: no struct
 * overlays, no unaligned loads. The fixed-size structures (64-octet
 * command, 16-octet completion, 4 KiB Identify) are read through
 * nvmf_le_get at offsets the caller has already bounded by the structure's
 * size; variable-length input (private data, log pages, DSM ranges) goes
 * through the bounded cursor below, whose reads fail rather than overrun.
 * (lib/wire/cursor.h is big-endian and internal to the library.)
 */
#ifndef NVMF_LE_H
#define NVMF_LE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t nvmf_le_get(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static inline void nvmf_le_put(uint8_t *p, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

struct nvmf_cur {
	const uint8_t *p;
	size_t left;
};

static inline struct nvmf_cur nvmf_cur_make(const void *p, size_t len)
{
	struct nvmf_cur c = {(const uint8_t *)p, p ? len : 0};
	return c;
}

/* Read an n-octet little-endian integer (n <= 8); false and no move when
 * fewer than n octets remain. */
static inline bool nvmf_cur_le(struct nvmf_cur *c, size_t n, uint64_t *out)
{
	if (c->left < n)
		return false;
	*out = nvmf_le_get(c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static inline bool nvmf_cur_skip(struct nvmf_cur *c, size_t n)
{
	if (c->left < n)
		return false;
	c->p += n;
	c->left -= n;
	return true;
}

/* Copy a fixed-size text field (NQN, trsvcid) of n octets into out[n + 1]:
 * true only if the field holds a NUL within its n octets (the string then
 * ends there) or, with allow_full, fills the field entirely. */
static inline bool nvmf_cur_str(struct nvmf_cur *c, size_t n, char *out, bool allow_full)
{
	if (c->left < n)
		return false;
	const uint8_t *nul = memchr(c->p, 0, n);
	if (!nul && !allow_full)
		return false;
	size_t len = nul ? (size_t)(nul - c->p) : n;
	memcpy(out, c->p, len);
	out[len] = '\0';
	c->p += n;
	c->left -= n;
	return true;
}

/* Write a string into a fixed field of n octets, padded with pad. */
static inline void nvmf_put_str(uint8_t *p, size_t n, const char *s, char pad)
{
	size_t len = s ? strnlen(s, n) : 0;
	memcpy(p, s ? s : "", len);
	memset(p + len, pad, n - len);
}

#endif /* NVMF_LE_H */
