/* SPDX-License-Identifier: BSD-2-Clause */
/* iwv/1 vector file reader (see iwv.h). Strict: any malformed line fails the
 * whole file, so a typo in a vector cannot silently drop a check. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwv.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int iwv_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		if (isspace((unsigned char)*s))
			continue;
		int v = hexval((unsigned char)*s);
		if (v < 0)
			return -1;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n >= cap)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 ? (int)n : -1;
}

/* Bounded copy that always terminates (truncation is fine for names). */
static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int parse_settings(struct iwv_rec *r, char *rest)
{
	for (char *tok = strtok(rest, " \t"); tok; tok = strtok(NULL, " \t")) {
		char *eq = strchr(tok, '=');
		if (!eq || r->num_settings >= IWV_MAX_SETTINGS)
			return -1;
		*eq = '\0';
		struct iwv_setting *s = &r->settings[r->num_settings++];
		copy_str(s->key, sizeof(s->key), tok);
		copy_str(s->val, sizeof(s->val), eq + 1);
		s->used = false;
	}
	return 0;
}

/* Apply one line to the record being read; -1 on a malformed line. */
static int apply_line(struct iwv_rec *r, int lineno, const char *key, char *rest)
{
	if (strcmp(key, "hex") == 0) {
		int n = iwv_hex(rest, r->blob + r->blob_len, IWV_MAX_BLOB - r->blob_len);
		if (n < 0)
			return -1;
		r->blob_len += (size_t)n;
		return 0;
	}
	if (strcmp(key, "kind") == 0) {
		copy_str(r->kind, sizeof(r->kind), rest);
		return 0;
	}
	if (strcmp(key, "origin") == 0) {
		copy_str(r->origin, sizeof(r->origin), rest);
		return 0;
	}
	if (strcmp(key, "source") == 0)
		return 0;
	if (strcmp(key, "settings") == 0)
		return parse_settings(r, rest);
	if (r->num_lines >= IWV_MAX_LINES || strlen(key) >= sizeof(r->lines[0].key))
		return -1;
	struct iwv_line *l = &r->lines[r->num_lines++];
	l->lineno = lineno;
	copy_str(l->key, sizeof(l->key), key);
	copy_str(l->rest, sizeof(l->rest), rest);
	l->used = strcmp(key, "note") == 0;
	return 0;
}

static void strip(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

int iwv_load(const char *path, struct iwv_rec **out, char *err, size_t err_len)
{
	FILE *f = fopen(path, "r");
	struct iwv_rec *recs = NULL, *cur = NULL;
	int n = 0, lineno = 0;
	char line[2048];

	if (!f) {
		snprintf(err, err_len, "%s: cannot open", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		strip(line);
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		char *sp = strpbrk(p, " \t");
		char *rest = sp ? sp + 1 : p + strlen(p);
		if (sp)
			*sp = '\0';
		while (isspace((unsigned char)*rest))
			rest++;
		if (strcmp(p, "vector") == 0) {
			if (cur)
				goto bad;
			struct iwv_rec *nr = realloc(recs, sizeof(*recs) * (size_t)(n + 1));
			if (!nr)
				goto bad;
			recs = nr;
			cur = &recs[n];
			memset(cur, 0, sizeof(*cur));
			copy_str(cur->file, sizeof(cur->file), strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
			copy_str(cur->id, sizeof(cur->id), rest);
			continue;
		}
		if (!cur)
			goto bad;
		if (strcmp(p, "end") == 0) {
			n++;
			cur = NULL;
			continue;
		}
		if (apply_line(cur, lineno, p, rest) < 0)
			goto bad;
	}
	fclose(f);
	if (cur) {
		snprintf(err, err_len, "%s: record not ended", path);
		free(recs);
		return -1;
	}
	*out = recs;
	return n;
bad:
	snprintf(err, err_len, "%s:%d: malformed line", path, lineno);
	fclose(f);
	free(recs);
	return -1;
}

const char *iwv_setting(struct iwv_rec *r, const char *key)
{
	for (int i = 0; i < r->num_settings; i++)
		if (strcmp(r->settings[i].key, key) == 0) {
			r->settings[i].used = true;
			return r->settings[i].val;
		}
	return NULL;
}

long iwv_setting_long(struct iwv_rec *r, const char *key, long dflt)
{
	const char *v = iwv_setting(r, key);
	return v ? strtol(v, NULL, 0) : dflt;
}

bool iwv_setting_on(struct iwv_rec *r, const char *key, bool dflt)
{
	const char *v = iwv_setting(r, key);
	return v ? strcmp(v, "on") == 0 : dflt;
}
