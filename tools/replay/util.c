/* SPDX-License-Identifier: BSD-2-Clause */
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool rp_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	/* strtoull accepts a sign and leading blanks: refuse both. */
	if (!s || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

bool rp_parse_delta(const char *s, uint64_t *out)
{
	bool neg = s && s[0] == '-';
	uint64_t v;

	if (!rp_parse_u64(neg ? s + 1 : s, UINT64_MAX, &v))
		return false;
	*out = neg ? (uint64_t)0 - v : v;
	return true;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

int rp_parse_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*s) {
		int hi, lo;

		if (*s == ':' || *s == ' ') {
			s++;
			continue;
		}
		hi = hexval((unsigned char)s[0]);
		lo = hi < 0 ? -1 : hexval((unsigned char)s[1]);
		if (lo < 0 || n == cap)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return (int)n;
}

uint64_t rp_get_be(const uint8_t *p, unsigned width)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < width; i++)
		v = v << 8 | p[i];
	return v;
}

void rp_put_be(uint8_t *p, unsigned width, uint64_t v)
{
	for (unsigned i = width; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

void rp_ep_str(const struct rp_ep *e, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(e->family, e->addr, a, sizeof(a));
	if (e->family == AF_INET6)
		snprintf(buf, cap, "[%s]:%u", a, e->port);
	else
		snprintf(buf, cap, "%s:%u", a, e->port);
}

static void __attribute__((noreturn)) oom(size_t n)
{
	fprintf(stderr, "iwarp-replay: out of memory (%zu octets)\n", n);
	exit(RP_EXIT_INPUT);
}

void *rp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom(n);
	return p;
}

void *rp_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		oom(n);
	return q;
}

void rp_buf_append(struct rp_buf *b, const uint8_t *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		b->p = rp_xrealloc(b->p, cap);
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void rp_buf_consume(struct rp_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

void rp_buf_free(struct rp_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}
