/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Known peer quirks. A line of the deviations file is
 *   <case id> <TAB or spaces> <observed signature> | <why, with evidence>
 * (# starts a comment). A case that FAILs with exactly that signature is a
 * DEVIATES; a listed case that now behaves otherwise FAILs, saying the
 * peer's behaviour changed, so the file always matches the peer.
 * "sometimes SIGNATURE" marks a quirk the peer shows on some runs only:
 * a PASS of that case stays a PASS.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int parse_line(char *line, struct cf_quirk *q)
{
	char *s = trim(line), *bar, *sp;

	if (!*s || *s == '#')
		return 0;
	sp = s + strcspn(s, " \t");
	bar = strchr(s, '|');
	if (!*sp || !bar || bar < sp)
		return -1;
	*sp = 0;
	*bar = 0;
	memset(q, 0, sizeof(*q));
	snprintf(q->id, sizeof(q->id), "%s", s);
	snprintf(q->observed, sizeof(q->observed), "%s", trim(sp + 1));
	snprintf(q->why, sizeof(q->why), "%s", trim(bar + 1));
	return 1;
}

int cf_quirks_load(const char *path, struct cf_quirk **out, size_t *n)
{
	FILE *f = fopen(path, "r");
	char *line = NULL; /* a whole line however long: the evidence runs long */
	size_t cap = 0;
	unsigned lineno = 0;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0) {
		struct cf_quirk q, *p;
		int rc = parse_line(line, &q);

		lineno++;
		if (rc < 0) {
			fprintf(stderr, "%s:%u: expected \"ID OBSERVED | WHY\"\n", path, lineno);
			continue;
		}
		if (rc == 0 || !(p = realloc(*out, (*n + 1) * sizeof(*p))))
			continue;
		*out = p;
		p[(*n)++] = q;
	}
	free(line);
	fclose(f);
	return 0;
}

/* The signature without "sometimes ": a quirk the peer shows on some runs
 * only (a race in the peer); then a PASS stays a PASS. */
static const char *signature(const struct cf_quirk *q)
{
	return strncmp(q->observed, "sometimes ", 10) ? q->observed : q->observed + 10;
}

/* The entry for the case whose signature the failure shows, or NULL. A
 * case may have several entries: a race in the peer may end one way or
 * another on different runs. */
static const struct cf_quirk *matching(const struct cf_quirk *q, size_t n, const char *id,
				       const char *observed)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(q[i].id, id) && !strcmp(signature(&q[i]), observed))
			return &q[i];
	return NULL;
}

/* The case's first entry, and whether every entry is intermittent. */
static const struct cf_quirk *listed(const struct cf_quirk *q, size_t n, const char *id,
				     bool *all_sometimes)
{
	const struct cf_quirk *first = NULL;

	*all_sometimes = true;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(q[i].id, id))
			continue;
		first = first ? first : &q[i];
		*all_sometimes = *all_sometimes && signature(&q[i]) != q[i].observed;
	}
	return first;
}

void cf_quirks_apply(const struct cf_quirk *q, size_t n, const struct cf_case *cs,
		     struct cf_result *r)
{
	bool sometimes;
	const struct cf_quirk *first = listed(q, n, cs->id, &sometimes);
	const struct cf_quirk *m = r->v == CF_FAIL ? matching(q, n, cs->id, r->observed) : NULL;

	if (!first || r->v == CF_SKIP)
		return;
	if (m) {
		r->v = CF_DEVIATES;
		cf_log_add(&r->log, "known quirk: %s", m->why);
		snprintf(r->detail, sizeof(r->detail), "known quirk: %s", m->why);
	} else if (r->v == CF_PASS && sometimes) {
		cf_log_add(&r->log, "the intermittent quirk \"%s\" did not show this time",
			   signature(first));
	} else {
		cf_log_add(&r->log, "listed quirk \"%s\" not seen: the peer changed (now \"%s\")",
			   first->observed, r->observed);
		r->v = CF_FAIL;
		snprintf(r->detail, sizeof(r->detail), "the listed quirk \"%s\" is gone; now \"%s\"",
			 first->observed, r->observed);
	}
}
