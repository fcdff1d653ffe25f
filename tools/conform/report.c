/* SPDX-License-Identifier: BSD-2-Clause */
/* The four outputs: a human summary, Markdown, JSON and JUnit XML. */
#include <stdio.h>
#include <string.h>

#include "conform.h"

static void counts(const struct cf_run *runs, size_t n, size_t c[CF__NVERDICT])
{
	memset(c, 0, CF__NVERDICT * sizeof(c[0]));
	for (size_t i = 0; i < n; i++)
		c[runs[i].r.v]++;
}

void cf_out_text(const struct cf_run *runs, size_t n, bool verbose)
{
	size_t c[CF__NVERDICT];
	char group = 0;

	for (size_t i = 0; i < n; i++) {
		const struct cf_run *x = &runs[i];

		if (x->cs->id[0] != group) {
			group = x->cs->id[0];
			printf("Group %c: %s\n", group, cf_group_name(group));
		}
		printf("  Test %-5s %-8s %-48s [%s] %s\n", x->cs->id, cf_verdict_str(x->r.v),
		       x->cs->name, x->cs->rfc, x->r.detail);
		if (verbose && x->r.log.p)
			printf("%s", x->r.log.p);
	}
	counts(runs, n, c);
	printf("%zu cases: %zu PASS, %zu FAIL, %zu DEVIATES, %zu SKIP\n", n, c[CF_PASS], c[CF_FAIL],
	       c[CF_DEVIATES], c[CF_SKIP]);
}

static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++)
		fputs(*s == '|' ? "\\|" : *s == '\n' ? " " : (char[]){*s, 0}, f);
}

int cf_out_md(const char *path, const struct cf_run *runs, size_t n, const struct cf_opts *o)
{
	FILE *f = fopen(path, "w");
	size_t c[CF__NVERDICT];

	if (!f)
		return -1;
	counts(runs, n, c);
	fprintf(f, "# iwarp-conform against %s:%s\n\n", o->host ? o->host : "-", o->port);
	fprintf(f, "%zu cases: %zu PASS, %zu FAIL, %zu DEVIATES, %zu SKIP\n\n", n, c[CF_PASS],
		c[CF_FAIL], c[CF_DEVIATES], c[CF_SKIP]);
	fprintf(f, "| Test | Result | Case | Checks | Detail |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "| %s | %s | ", runs[i].cs->id, cf_verdict_str(runs[i].r.v));
		md_cell(f, runs[i].cs->name);
		fprintf(f, " | %s | ", runs[i].cs->rfc);
		md_cell(f, runs[i].r.detail);
		fprintf(f, " |\n");
	}
	fprintf(f, "\n## Evidence\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\n### Test %s: %s\n\n```\n%s```\n", runs[i].cs->id, runs[i].cs->name,
			runs[i].r.log.p ? runs[i].r.log.p : "");
	return fclose(f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int cf_out_json(const char *path, const struct cf_run *runs, size_t n, const struct cf_opts *o)
{
	FILE *f = fopen(path, "w");
	size_t c[CF__NVERDICT];

	if (!f)
		return -1;
	counts(runs, n, c);
	fprintf(f, "{\"peer\": ");
	json_str(f, o->host ? o->host : "-");
	fprintf(f, ", \"port\": ");
	json_str(f, o->port);
	fprintf(f, ", \"summary\": {\"pass\": %zu, \"fail\": %zu, \"deviates\": %zu, \"skip\": %zu},\n"
		   " \"cases\": [", c[CF_PASS], c[CF_FAIL], c[CF_DEVIATES], c[CF_SKIP]);
	for (size_t i = 0; i < n; i++) {
		const struct cf_run *x = &runs[i];

		fprintf(f, "%s\n  {\"id\": ", i ? "," : "");
		json_str(f, x->cs->id);
		fprintf(f, ", \"name\": ");
		json_str(f, x->cs->name);
		fprintf(f, ", \"rfc\": ");
		json_str(f, x->cs->rfc);
		fprintf(f, ", \"result\": ");
		json_str(f, cf_verdict_str(x->r.v));
		fprintf(f, ", \"observed\": ");
		json_str(f, x->r.observed);
		fprintf(f, ", \"detail\": ");
		json_str(f, x->r.detail);
		fprintf(f, ", \"seconds\": %.3f, \"evidence\": ", x->r.secs);
		json_str(f, x->r.log.p);
		fputc('}', f);
	}
	fprintf(f, "\n]}\n");
	return fclose(f);
}

static void xml_str(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
				fputc(*s, f);
		}
	}
}

int cf_out_junit(const char *path, const struct cf_run *runs, size_t n, const struct cf_opts *o)
{
	FILE *f = fopen(path, "w");
	size_t c[CF__NVERDICT];

	if (!f)
		return -1;
	counts(runs, n, c);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuite name=\"iwarp-conform %s:%s\" tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\">\n",
		o->host ? o->host : "-", o->port, n, c[CF_FAIL], c[CF_SKIP]);
	for (size_t i = 0; i < n; i++) {
		const struct cf_run *x = &runs[i];

		fprintf(f, " <testcase classname=\"group%c\" name=\"%s ", x->cs->id[0], x->cs->id);
		xml_str(f, x->cs->name);
		fprintf(f, "\" time=\"%.3f\">\n", x->r.secs);
		if (x->r.v == CF_FAIL || x->r.v == CF_SKIP) {
			fprintf(f, "  <%s message=\"", x->r.v == CF_FAIL ? "failure" : "skipped");
			xml_str(f, x->r.detail);
			fprintf(f, "\"/>\n");
		}
		fprintf(f, "  <system-out>");
		if (x->r.v == CF_DEVIATES)
			fprintf(f, "DEVIATES: ");
		xml_str(f, x->r.log.p);
		fprintf(f, "</system-out>\n </testcase>\n");
	}
	fprintf(f, "</testsuite>\n");
	return fclose(f);
}
