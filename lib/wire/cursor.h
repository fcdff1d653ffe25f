/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bounded cursor and writer for every parse and build in the core
 * (ARCHITECTURE.md section 4): big-endian by shifts, no struct overlays, no
 * unaligned loads. A getter that fails returns false and leaves the cursor
 * where it was, so a caller can stop at the first short read and report it.
 */
#ifndef IW_CURSOR_H
#define IW_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct iw_cur {
	const uint8_t *p;
	size_t left;
};

static inline struct iw_cur iw_cur_make(const void *p, size_t len)
{
	struct iw_cur c = {(const uint8_t *)p, len};
	return c;
}

static inline bool iw_cur_skip(struct iw_cur *c, size_t n)
{
	if (c->left < n)
		return false;
	c->p += n;
	c->left -= n;
	return true;
}

static inline bool iw_cur_bytes(struct iw_cur *c, void *out, size_t n)
{
	if (c->left < n)
		return false;
	if (n)
		memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

/* Read an n-octet big-endian integer (n <= 8). */
static inline bool iw_cur_be(struct iw_cur *c, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (c->left < n)
		return false;
	for (size_t i = 0; i < n; i++)
		v = (v << 8) | c->p[i];
	c->p += n;
	c->left -= n;
	*out = v;
	return true;
}

static inline bool iw_cur_u8(struct iw_cur *c, uint8_t *out)
{
	uint64_t v;
	if (!iw_cur_be(c, 1, &v))
		return false;
	*out = (uint8_t)v;
	return true;
}

/* The fixed widths spell out their shifts: gcc -O2 leaves iw_cur_be's
 * loop a loop (about 100 instructions per DDP header parsed, callgrind),
 * while these become one load and a byte swap. */
static inline uint32_t iw_get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
	       (uint32_t)p[3];
}

static inline uint64_t iw_get_be64(const uint8_t *p)
{
	return ((uint64_t)iw_get_be32(p) << 32) | iw_get_be32(p + 4);
}

static inline bool iw_cur_u16(struct iw_cur *c, uint16_t *out)
{
	if (c->left < 2)
		return false;
	*out = (uint16_t)((c->p[0] << 8) | c->p[1]);
	c->p += 2;
	c->left -= 2;
	return true;
}

static inline bool iw_cur_u32(struct iw_cur *c, uint32_t *out)
{
	if (c->left < 4)
		return false;
	*out = iw_get_be32(c->p);
	c->p += 4;
	c->left -= 4;
	return true;
}

static inline bool iw_cur_u64(struct iw_cur *c, uint64_t *out)
{
	if (c->left < 8)
		return false;
	*out = iw_get_be64(c->p);
	c->p += 8;
	c->left -= 8;
	return true;
}

/* Writer: the same discipline for output. Once a put fails the writer is
 * marked failed and every later put fails too, so a builder can emit all
 * fields and check once at the end. */
struct iw_wr {
	uint8_t *p;
	size_t cap;
	size_t len;
	bool failed;
};

static inline struct iw_wr iw_wr_make(void *p, size_t cap)
{
	struct iw_wr w = {(uint8_t *)p, cap, 0, false};
	return w;
}

/* Room for n more octets, else the writer fails for good. */
static inline bool iw_wr_room(struct iw_wr *w, size_t n)
{
	if (w->failed || w->cap - w->len < n) {
		w->failed = true;
		return false;
	}
	return true;
}

static inline bool iw_wr_be(struct iw_wr *w, size_t n, uint64_t v)
{
	if (!iw_wr_room(w, n))
		return false;
	for (size_t i = 0; i < n; i++)
		w->p[w->len + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	w->len += n;
	return true;
}

static inline void iw_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline bool iw_wr_u8(struct iw_wr *w, uint8_t v)
{
	if (!iw_wr_room(w, 1))
		return false;
	w->p[w->len++] = v;
	return true;
}

static inline bool iw_wr_u16(struct iw_wr *w, uint16_t v)
{
	if (!iw_wr_room(w, 2))
		return false;
	w->p[w->len] = (uint8_t)(v >> 8);
	w->p[w->len + 1] = (uint8_t)v;
	w->len += 2;
	return true;
}

static inline bool iw_wr_u32(struct iw_wr *w, uint32_t v)
{
	if (!iw_wr_room(w, 4))
		return false;
	iw_put_be32(w->p + w->len, v);
	w->len += 4;
	return true;
}

static inline bool iw_wr_u64(struct iw_wr *w, uint64_t v)
{
	if (!iw_wr_room(w, 8))
		return false;
	iw_put_be32(w->p + w->len, (uint32_t)(v >> 32));
	iw_put_be32(w->p + w->len + 4, (uint32_t)v);
	w->len += 8;
	return true;
}

static inline bool iw_wr_bytes(struct iw_wr *w, const void *src, size_t n)
{
	if (!iw_wr_room(w, n))
		return false;
	if (n)
		memcpy(w->p + w->len, src, n);
	w->len += n;
	return true;
}

/* Big-endian helpers for fixed small buffers whose bounds the caller owns. */
static inline void iw_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t iw_get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline void iw_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t iw_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

#endif /* IW_CURSOR_H */
