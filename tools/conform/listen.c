/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Group 2's side of the socket: we listen (--listen) and the peer connects,
 * once per case. A peer's client makes one connection and gives up when it
 * is refused or broken (rping -c does not retry), so either someone runs it
 * in a loop on the peer or --client-cmd names a command we start before each
 * case and stop after it (its process group: the command may be a shell
 * pipeline or ssh). The command finds our port in $IWARP_CONFORM_PORT and
 * the case in $IWARP_CONFORM_CASE.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conform.h"

static int lfd = -1;
static char lport[NI_MAXSERV];
static pid_t child = -1;

/* "[ADDR:]PORT", the address defaulting to any IPv4 one. */
static int open_listener(const char *spec, struct cf_log *log)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[NI_MAXHOST] = "", *colon;
	int one = 1, rc;

	snprintf(host, sizeof(host), "%s", spec);
	colon = strrchr(host, ':');
	if (colon)
		*colon = 0;
	rc = getaddrinfo(colon ? host : NULL, colon ? colon + 1 : host, &hints, &ai);
	if (rc) {
		cf_log_add(log, "--listen %s: %s", spec, gai_strerror(rc));
		return -1;
	}
	lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd >= 0)
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 8) ||
	    getsockname(lfd, (struct sockaddr *)&ss, &sl) ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), lport, sizeof(lport),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		cf_log_add(log, "--listen %s: %s", spec, strerror(errno));
		freeaddrinfo(ai);
		cf_listen_close();
		return -1;
	}
	freeaddrinfo(ai);
	/* The harness (and the engineer) need the port the kernel chose. */
	fprintf(stderr, "iwarp-conform: listening on %s:%s\n", host, lport);
	return 0;
}

static void start_client(struct cf_ctx *c)
{
	int null;

	cf_log_add(&c->r->log, "starting the peer's client: %s", c->o->client_cmd);
	child = fork();
	if (child)
		return;
	setpgid(0, 0);
	setenv("IWARP_CONFORM_PORT", lport, 1);
	setenv("IWARP_CONFORM_CASE", c->id, 1);
	null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	execl("/bin/sh", "sh", "-c", c->o->client_cmd, (char *)NULL);
	_exit(127);
}

void cf_peer_done(void)
{
	if (child <= 0)
		return;
	kill(-child, SIGKILL);
	kill(child, SIGKILL); /* in case it exited before setpgid */
	waitpid(child, NULL, 0);
	child = -1;
}

void cf_listen_close(void)
{
	cf_peer_done();
	if (lfd >= 0)
		close(lfd);
	lfd = -1;
}

int cf_accept(struct cf_conn *k, struct cf_ctx *c)
{
	struct pollfd p = {.events = POLLIN};
	int rc;

	cf_conn_init(k, c);
	if (lfd < 0 && open_listener(c->o->listen, &c->r->log))
		return -1;
	if (c->o->client_cmd)
		start_client(c);
	p.fd = lfd;
	do
		rc = poll(&p, 1, (int)c->o->accept_ms);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0) {
		cf_log_add(&c->r->log, "nobody connected to port %s within %u ms", lport,
			   c->o->accept_ms);
		return -1;
	}
	k->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (k->fd < 0) {
		cf_log_add(&c->r->log, "accept: %s", strerror(errno));
		return -1;
	}
	cf_conn_opened(k);
	return 0;
}
