/* SPDX-License-Identifier: BSD-2-Clause */
/* A case's evidence and its verdict helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

/* Evidence is kept whole up to this size; later lines are dropped with a
 * note, so a 64 KiB data case does not produce megabytes of hex. */
#define LOG_MAX (64 * 1024)
#define HEX_SHOWN 48

static void vadd(struct cf_log *l, const char *fmt, va_list ap)
{
	char line[512];
	int n = vsnprintf(line, sizeof(line), fmt, ap);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (l->len + (size_t)n + 2 > LOG_MAX)
		return;
	if (l->len + (size_t)n + 2 > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		char *p;

		while (cap < l->len + (size_t)n + 2)
			cap *= 2;
		p = realloc(l->p, cap);
		if (!p)
			return;
		l->p = p;
		l->cap = cap;
	}
	memcpy(l->p + l->len, line, (size_t)n);
	l->len += (size_t)n;
	l->p[l->len++] = '\n';
	l->p[l->len] = 0;
}

void cf_log_add(struct cf_log *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vadd(l, fmt, ap);
	va_end(ap);
}

void cf_log_hex(struct cf_log *l, const char *dir, const uint8_t *p, size_t n)
{
	char hex[HEX_SHOWN * 3 + 8];
	size_t k = n < HEX_SHOWN ? n : HEX_SHOWN, o = 0;

	for (size_t i = 0; i < k; i++)
		o += (size_t)snprintf(hex + o, sizeof(hex) - o, "%02x%s", p[i], i + 1 < k ? " " : "");
	cf_log_add(l, "%s %zu octets: %s%s", dir, n, hex, n > k ? " ..." : "");
}

void cf_log_free(struct cf_log *l)
{
	free(l->p);
	memset(l, 0, sizeof(*l));
}

static void verdict(struct cf_ctx *c, enum cf_verdict v, const char *obs, const char *fmt,
		    va_list ap)
{
	c->r->v = v;
	vsnprintf(c->r->detail, sizeof(c->r->detail), fmt, ap);
	snprintf(c->r->observed, sizeof(c->r->observed), "%s", obs ? obs : "");
	cf_log_add(&c->r->log, "verdict %s: %s", cf_verdict_str(v), c->r->detail);
}

void cf_pass(struct cf_ctx *c, const char *obs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict(c, CF_PASS, obs, fmt, ap);
	va_end(ap);
}

void cf_fail(struct cf_ctx *c, const char *obs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict(c, CF_FAIL, obs, fmt, ap);
	va_end(ap);
}

void cf_skip(struct cf_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict(c, CF_SKIP, "skipped", fmt, ap);
	va_end(ap);
}

const char *cf_verdict_str(enum cf_verdict v)
{
	static const char *const s[] = {"PASS", "FAIL", "DEVIATES", "SKIP"};

	return v < CF__NVERDICT ? s[v] : "?";
}
