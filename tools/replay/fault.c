/* SPDX-License-Identifier: BSD-2-Clause */
#include "fault.h"

#include <string.h>

#include "rewrite.h"
#include "util.h"

static bool number(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	char buf[32];

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return rp_parse_u64(buf, max, out);
}

/* "N" or "N:rest" after the kind; *rest is NULL without a second part. */
static bool fpdu_number(const char *s, uint64_t *n, const char **rest)
{
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);

	*rest = colon ? colon + 1 : NULL;
	return number(s, len, UINT64_MAX, n) && *n >= 1;
}

static const char *field_spec(const char *rest, struct rp_fault *f)
{
	const char *eq = rest ? strchr(rest, '=') : NULL;
	char name[32];

	if (!eq || (size_t)(eq - rest) >= sizeof(name))
		return "field fault: want field:N:name=value";
	memcpy(name, rest, (size_t)(eq - rest));
	name[eq - rest] = '\0';
	f->field = rp_field_lookup(name);
	if (f->field < 0)
		return "field fault: unknown field name";
	if (!rp_parse_u64(eq + 1, rp_field_max(f->field), &f->value))
		return "field fault: the value is not a number that fits the field";
	return NULL;
}

const char *rp_fault_parse(const char *spec, struct rp_fault *f)
{
	static const struct {
		const char *name;
		enum rp_fault_kind kind;
	} kinds[] = {
		{"crc:", RP_FAULT_CRC}, {"field:", RP_FAULT_FIELD}, {"truncate:", RP_FAULT_TRUNCATE},
		{"delay:", RP_FAULT_DELAY}, {"drop:", RP_FAULT_DROP},
	};
	const char *rest = NULL;
	uint64_t v;

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t k = strlen(kinds[i].name);

		if (strncmp(spec, kinds[i].name, k))
			continue;
		f->kind = kinds[i].kind;
		if (!fpdu_number(spec + k, &f->n, &rest))
			return "the FPDU number must be 1 or more";
		switch (f->kind) {
		case RP_FAULT_FIELD:
			return field_spec(rest, f);
		case RP_FAULT_DELAY:
			if (!rest || !rp_parse_u64(rest, 3600000, &v))
				return "delay fault: want delay:N:MS (at most one hour)";
			f->arg = (uint32_t)v;
			return NULL;
		case RP_FAULT_TRUNCATE:
			if (!rest)
				return NULL;
			if (!rp_parse_u64(rest, RP_MAX_TRUNCATE, &v))
				return "truncate fault: want truncate:N[:LEN]";
			f->arg = (uint32_t)v;
			f->has_arg = true;
			return NULL;
		default:
			return rest ? "this fault takes only an FPDU number" : NULL;
		}
	}
	return "unknown fault (crc:N, field:N:name=value, truncate:N[:LEN], delay:N:MS, drop:N)";
}

const struct rp_fault *rp_fault_find(const struct rp_opts *o, enum rp_fault_kind kind, uint64_t n)
{
	for (int i = 0; i < o->nfaults; i++)
		if (o->faults[i].kind == kind && o->faults[i].n == n)
			return &o->faults[i];
	return NULL;
}
