/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-perf's roles: a client (an address given), a server (--server),
 * both in this process (--loopback, the default: a server thread on
 * 127.0.0.1 and a client, each with its own libiwarp context as two
 * processes would have), and --idle.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define MAX_ROWS 24

/* Connection setup: its failures are PX_CONNECT, later ones PX_FAIL. */
static int setup_client(struct perf_sess *s, const struct sockaddr *dst)
{
	int rc = perf_connect_comm(s, dst);
	if (rc)
		return rc;
	if (perf_preamble(s) || perf_ext_exchange(s))
		return PX_FAIL;
	if (s->o.tcp && !s->peer_iwpf) {
		perf_err(s, "--tcp needs iwarp-perf at the other end: no TCP baseline");
		s->o.tcp = false;
	}
	if (s->o.test == PT_CONNECT)
		return PX_OK; /* its connections are the test (perf_connrate.c) */
	if (perf_data_alloc(s) || perf_hand_shake(s, 0))
		return PX_FAIL;
	rc = perf_data_connect(s, dst);
	if (rc)
		return rc;
	return perf_hand_shake(s, 0) ? PX_FAIL : PX_OK;
}

static int setup_server(struct perf_sess *s, bool loop)
{
	int rc = perf_accept_comm(s, loop ? (int)(s->o.timeout * 1000) : -1);
	if (rc)
		return rc;
	if (perf_preamble(s) || perf_ext_exchange(s))
		return PX_FAIL;
	if (s->o.test == PT_CONNECT)
		return PX_OK;
	if (perf_data_alloc(s) || perf_hand_shake(s, 0))
		return PX_FAIL;
	rc = perf_data_accept(s);
	if (rc)
		return rc;
	return perf_hand_shake(s, 0) ? PX_FAIL : PX_OK;
}

/* The test, the teardown of the data connections, the TCP baseline and the
 * results. */
/* --test connect: the setup loop on both sides, the server's TCP baseline
 * acceptor beside it. */
static int run_connect(struct perf_sess *s, const struct sockaddr *peer)
{
	if (!s->server)
		return perf_connrate_client(s, peer);
	struct tcp_acceptor *a = s->o.tcp ? perf_connrate_tcp_serve(s) : NULL;
	int rc = perf_connrate_server(s);
	perf_connrate_tcp_stop(a);
	return rc;
}

static int run(struct perf_sess *s, const struct sockaddr *peer)
{
	struct perf_result rows[MAX_ROWS];
	int nrows = 0;
	if (s->o.test == PT_CONNECT)
		return run_connect(s, peer);
	perf_fill_dests(s);
	perf_out_header(s);
	if (perf_flow(s, rows, &nrows))
		return PX_FAIL;
	s->test_done = true;
	perf_data_close(s);
	if (s->o.tcp && perf_tcp_run(s, peer, rows, nrows))
		return PX_FAIL;
	if (s->o.tcp)
		for (int i = 0; i < nrows; i++)
			perf_out_row(s, &rows[i]);
	perf_out_footer(s);
	perf_out_json(s, rows, nrows);
	return PX_OK;
}

static int client(const struct perf_opts *o, const char *addr, uint16_t port, const char *who)
{
	struct perf_sess s = {.o = *o, .out = stdout, .who = who};
	struct sockaddr_storage dst;
	int rc = perf_resolve(addr, port, &dst);
	if (rc)
		return rc;
	rc = perf_sess_open(&s);
	s.comm.wait_ms = (int)(o->timeout * 1000);
	if (!rc)
		rc = setup_client(&s, (struct sockaddr *)&dst);
	if (!rc)
		rc = run(&s, (struct sockaddr *)&dst);
	perf_sess_close(&s);
	return rc;
}

/* The loopback server thread tells the client its port through this. */
struct srv_arg {
	struct perf_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int port; /* 0: not yet, -1: failed */
	int rc;
};

static void announce(struct srv_arg *a, int port)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->port = port;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static int server(const struct perf_opts *o, struct srv_arg *loop)
{
	struct perf_sess s = {.o = *o, .server = true, .out = loop ? NULL : stdout,
			      .who = loop ? "iwarp-perf (server)" : "iwarp-perf"};
	int rc = perf_sess_open(&s);
	s.comm.wait_ms = (int)(o->timeout * 1000);
	if (!rc)
		rc = perf_listen(&s, loop ? "127.0.0.1" : NULL, loop ? 0 : o->port);
	announce(loop, rc ? -1 : s.bound_port);
	if (!rc && !loop) {
		fprintf(stderr, "iwarp-perf: listening on port %u\n", s.bound_port);
		if (s.o.json)
			fflush(stderr);
	}
	if (!rc)
		rc = setup_server(&s, loop != NULL);
	if (!rc) {
		struct sockaddr_storage peer = {0};
		rc = run(&s, (struct sockaddr *)&peer);
	}
	perf_sess_close(&s);
	return rc;
}

static void *server_thread(void *arg)
{
	struct srv_arg *a = arg;
	a->rc = server(&a->o, a);
	return NULL;
}

static int loopback(const struct perf_opts *o)
{
	struct srv_arg a = {.o = *o, .mu = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER};
	pthread_t th;
	if (pthread_create(&th, NULL, server_thread, &a)) {
		fprintf(stderr, "iwarp-perf: no thread for the server: %s\n", strerror(errno));
		return PX_FAIL;
	}
	pthread_mutex_lock(&a.mu);
	while (!a.port)
		pthread_cond_wait(&a.cv, &a.mu);
	int port = a.port;
	pthread_mutex_unlock(&a.mu);
	int rc = port < 0 ? PX_CONNECT : client(o, "127.0.0.1", (uint16_t)port, "iwarp-perf");
	pthread_join(th, NULL);
	return rc ? rc : a.rc;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	int rc = perf_parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? PX_OK : rc;
	srand48((long)time(NULL) ^ getpid());
	switch (o.role) {
	case ROLE_IDLE:
		return perf_idle_run(&o);
	case ROLE_CHURN:
		return perf_churn_run(&o);
	case ROLE_SERVER:
		return o.sink ? perf_sink_run(&o) : server(&o, NULL);
	case ROLE_CLIENT:
		return client(&o, o.server, o.port, "iwarp-perf");
	case ROLE_LOOPBACK:
		return loopback(&o);
	}
	return PX_USAGE;
}
