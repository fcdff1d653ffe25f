/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --server-cmd: the peer's server (rping -s -P, iwarp-ping -s -P) may exit
 * on a case's error (Linux siw and Chelsio both do, through rping). When a
 * case's connect is refused, the command (sh -c) restarts it and the
 * connect is tried once more, so one dead server does not fail every later
 * case. Its output goes into the case's evidence; main.c tells the case
 * that ran before that the server stopped after it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "conform.h"

static unsigned restarts;
static char port[16]; /* "port N" from the command: the server moved */

const char *cf_server_port(const struct cf_opts *o)
{
	return port[0] ? port : o->port;
}

unsigned cf_server_restarts(void)
{
	return restarts;
}

/* "port N" from --server-cmd: N digits only, a TCP port 1-65535 (an empty
 * or oversized N would leave the next connect without a usable port). */
static bool port_line(const char *line)
{
	if (strncmp(line, "port ", 5))
		return false;
	size_t nd = strspn(line + 5, "0123456789");
	return nd && nd <= 5 && !line[5 + nd] && atoi(line + 5) > 0 && atoi(line + 5) <= 65535;
}

/* Run --server-cmd, its output into the case's log; 0 if it exited 0. */
static int run_cmd(struct cf_ctx *c)
{
	char line[256];
	FILE *f;
	int st;

	setenv("IWARP_CONFORM_CASE", c->id, 1);
	fflush(NULL);
	if (!(f = popen(c->o->server_cmd, "r"))) {
		cf_log_add(&c->r->log, "cannot run --server-cmd");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		cf_log_add(&c->r->log, "server-cmd: %s", line);
		if (port_line(line))
			snprintf(port, sizeof(port), "%.15s", line + 5);
	}
	st = pclose(f);
	cf_log_add(&c->r->log, "--server-cmd exited %d",
		   WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

int cf_server_restart(struct cf_ctx *c)
{
	if (!c->o->server_cmd)
		return -1;
	restarts++;
	cf_log_add(&c->r->log, "the peer's server is not listening: running --server-cmd");
	return run_cmd(c);
}

void cf_server_fresh(struct cf_ctx *c)
{
	if (!c->o->server_cmd || !c->o->server_each || c->id[0] == '2')
		return;
	cf_log_add(&c->r->log, "a fresh server for this case (--server-each): running --server-cmd");
	run_cmd(c);
}
