/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-conform: run the catalogue (or the cases whose id starts with
 * --only) against HOST:PORT and report. Exit status: 0 if no case FAILs,
 * 1 if one does, 2 on a usage error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

const char *cf_group_name(char g)
{
	switch (g) {
	case '1': return "MPA, the peer as responder";
	case '2': return "MPA, the peer as initiator (it connects to us)";
	case '3': return "data transfer (rping protocol)";
	case '4': return "errors the wire can cause";
	default: return "?";
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: iwarp-conform [options] HOST [PORT]\n"
		"  --list             list the cases and exit\n"
		"  --only=PREFIX      run the cases whose id starts with PREFIX (\"1.\", \"4.3\")\n"
		"  --skip=ID[,ID...]  leave out these cases\n"
		"  --deviations=FILE  known peer quirks (ID OBSERVED | WHY per line)\n"
		"  --peer-timeout=MS  the peer's MPA handshake timeout (default 12000)\n"
		"  --wait=MS          how long to wait for any answer (default 2000)\n"
		"  --size=N           the peer's rping buffer size, iwarp-ping -S (default 65536)\n"
		"  --json=F --markdown=F --junit=F   write those reports\n"
		"  --pcap-dir=DIR     write each case's exchange to DIR/case-ID.pcap\n"
		"  --server-cmd=CMD   when a connect to the peer is refused, run CMD (sh -c,\n"
		"                     $IWARP_CONFORM_CASE set) to restart its server, then\n"
		"                     connect once more; the case before it is told\n"
		"  --server-each      run --server-cmd before every Group 1, 3, 4 case too\n"
		"Group 2 (the peer connects to us, one connection per case):\n"
		"  --listen=[ADDR:]PORT  listen there (port 0: the kernel picks; printed)\n"
		"  --client-cmd=CMD   start CMD (sh -c) before each Group 2 case, stop it after;\n"
		"                     it finds the port in $IWARP_CONFORM_PORT, the case in\n"
		"                     $IWARP_CONFORM_CASE\n"
		"  --accept-wait=MS   how long to wait for the peer to connect (default 60000)\n"
		"  -v                 print each case's evidence\n");
}

static int parse(int argc, char **argv, struct cf_opts *o, bool *list)
{
	static const struct option lo[] = {
		{"list", no_argument, NULL, 'l'}, {"only", required_argument, NULL, 'o'},
		{"skip", required_argument, NULL, 's'},
		{"deviations", required_argument, NULL, 'd'},
		{"peer-timeout", required_argument, NULL, 't'}, {"wait", required_argument, NULL, 'w'},
		{"size", required_argument, NULL, 'S'}, {"json", required_argument, NULL, 'j'},
		{"markdown", required_argument, NULL, 'm'}, {"junit", required_argument, NULL, 'x'},
		{"pcap-dir", required_argument, NULL, 'P'}, {"listen", required_argument, NULL, 'L'},
		{"client-cmd", required_argument, NULL, 'C'},
		{"accept-wait", required_argument, NULL, 'A'},
		{"server-cmd", required_argument, NULL, 'R'},
		{"server-each", no_argument, NULL, 'E'},
		{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (ch) {
		case 'l': *list = true; break;
		case 'o': o->only = optarg; break;
		case 's': o->skip = optarg; break;
		case 'd': o->quirks = optarg; break;
		case 't': o->peer_timeout_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': o->wait_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'S': o->size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'j': o->json = optarg; break;
		case 'm': o->md = optarg; break;
		case 'x': o->junit = optarg; break;
		case 'v': o->verbose = true; break;
		case 'P': o->pcap_dir = optarg; break;
		case 'L': o->listen = optarg; break;
		case 'C': o->client_cmd = optarg; break;
		case 'R': o->server_cmd = optarg; break;
		case 'E': o->server_each = true; break;
		case 'A': o->accept_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc)
		o->port = argv[optind++];
	return (o->host || o->listen || *list) && optind == argc && o->wait_ms ? 0 : -1;
}

struct group {
	const struct cf_case *c;
	const size_t *n;
};
static const struct group groups[] = {
	{cf_group1, &cf_group1_n}, {cf_group2, &cf_group2_n}, {cf_group3, &cf_group3_n},
	{cf_group4, &cf_group4_n}};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

/* Is id one of the comma-separated list? */
static bool listed(const char *list, const char *id)
{
	size_t n = strlen(id);

	while (list && *list) {
		size_t len = strcspn(list, ",");

		if (len == n && !strncmp(list, id, n))
			return true;
		list += len + (list[len] == ',');
	}
	return false;
}

static size_t select_cases(const struct cf_opts *o, struct cf_run *runs)
{
	size_t n = 0;

	for (size_t g = 0; g < NGROUPS; g++)
		for (size_t i = 0; i < *groups[g].n; i++) {
			const struct cf_case *cs = &groups[g].c[i];

			if ((o->only && strncmp(cs->id, o->only, strlen(o->only))) ||
			    listed(o->skip, cs->id))
				continue;
			if (runs)
				runs[n].cs = cs;
			n++;
		}
	return n;
}

/* The peer's server stopped listening after case prev (the next case's
 * connect was refused and --server-cmd restarted it): evidence about prev,
 * whatever its verdict. */
static void server_died_after(struct cf_run *prev, const char *next_id)
{
	struct cf_result *r = &prev->r;
	size_t len = strlen(r->detail);

	snprintf(r->detail + len, sizeof(r->detail) - len,
		 "; the peer's server stopped listening after this case (restarted by --server-cmd)");
	cf_log_add(&r->log, "the peer's server was not listening after this case: case %s's "
			    "connect was refused and --server-cmd restarted it",
		   next_id);
}

static void run_one(const struct cf_opts *o, struct cf_run *x, const struct cf_quirk *q, size_t nq)
{
	static struct cf_run *prev; /* the last case that connected to the peer */
	struct cf_ctx c = {x->cs->id, o, &x->r};
	uint64_t t0 = cf_now_ns();
	unsigned restarts = cf_server_restarts();

	x->r.v = CF_FAIL;
	snprintf(x->r.detail, sizeof(x->r.detail), "the case gave no verdict");
	cf_server_fresh(&c);
	x->cs->run(&c, x->cs->arg);
	x->r.secs = (double)(cf_now_ns() - t0) / 1e9;
	cf_quirks_apply(q, nq, x->cs, &x->r);
	if (cf_server_restarts() != restarts && prev)
		server_died_after(prev, x->cs->id);
	if (x->cs->id[0] != '2')
		prev = x;
	/* Progress as we go: a run cut short still says how far it got. */
	fprintf(stderr, "iwarp-conform: %s %s (%.1f s)\n", x->cs->id, cf_verdict_str(x->r.v),
		x->r.secs);
}

static int outputs(const struct cf_opts *o, const struct cf_run *runs, size_t n)
{
	int bad = 0;

	cf_out_text(runs, n, o->verbose);
	if (o->json && cf_out_json(o->json, runs, n, o))
		bad = fprintf(stderr, "cannot write %s\n", o->json);
	if (o->md && cf_out_md(o->md, runs, n, o))
		bad = fprintf(stderr, "cannot write %s\n", o->md);
	if (o->junit && cf_out_junit(o->junit, runs, n, o))
		bad = fprintf(stderr, "cannot write %s\n", o->junit);
	return bad;
}

int main(int argc, char **argv)
{
	struct cf_opts o = {.port = "7174", .peer_timeout_ms = 12000, .wait_ms = 2000,
			    .size = 65536, .accept_ms = 60000};
	struct cf_quirk *q = NULL;
	struct cf_run *runs;
	size_t n, nq = 0, fails = 0;
	bool list = false;

	if (parse(argc, argv, &o, &list)) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (o.quirks && cf_quirks_load(o.quirks, &q, &nq)) {
		fprintf(stderr, "cannot read %s\n", o.quirks);
		return 2;
	}
	n = select_cases(&o, NULL);
	runs = calloc(n ? n : 1, sizeof(*runs));
	if (!runs)
		return 1;
	select_cases(&o, runs);
	for (size_t i = 0; i < n; i++) {
		if (list) {
			printf("%-6s %-50s %s\n", runs[i].cs->id, runs[i].cs->name, runs[i].cs->rfc);
			continue;
		}
		run_one(&o, &runs[i], q, nq);
		fails += runs[i].r.v == CF_FAIL;
	}
	if (!list && outputs(&o, runs, n))
		fails++;
	cf_listen_close();
	for (size_t i = 0; i < n; i++)
		cf_log_free(&runs[i].r.log);
	free(runs);
	free(q);
	return fails ? 1 : 0;
}
