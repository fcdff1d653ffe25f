/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-perf --server --sink: one client's send or write bandwidth test
 * received by a discard peer (perf_sink.h), in the order of a server's
 * perf_flow (perf_flow.c) with the same messages (perf_xchg.c, whose
 * comm transport a sink session routes over its raw socket):
 *
 *   comm connection, preamble, extension (the client's test, -q, -s, -r);
 *   hs, the data connections (the client connects them one at a time, so
 *   the i-th accepted is its QP i), hs;
 *   send:  n hs (the client's credit words), hs, n hs, hs, the run, hs;
 *   write: n hs, n hs, hs, the run, hs, the five report rounds, hs;
 *   then we close the data connections (as a server does) and count what
 *   arrived up to each client's FIN.
 *
 * The run ends when the client's next comm message arrives; one thread
 * waits on every socket with epoll.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf_sink.h"

struct sink_run {
	struct perf_sess s;
	struct perf_sink k;
	int lfd;
	double t0, t1; /* first and last data seen */
	struct perf_cpu cpu;
};

static int listen_on(struct sink_run *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(r->s.o.port)};
	socklen_t al = sizeof(a);
	int one = 1;
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (r->lfd < 0 || setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(r->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(r->lfd, PERF_MAX_QPS + 1) ||
	    getsockname(r->lfd, (struct sockaddr *)&a, &al)) {
		perf_err(&r->s, "listening on port %u: %s", r->s.o.port, strerror(errno));
		return PX_CONNECT;
	}
	fprintf(stderr, "iwarp-perf: listening on port %u\n", ntohs(a.sin_port));
	fflush(stderr);
	return PX_OK;
}

/* The next connection and its MPA exchange; ms -1: wait for ever. */
static int accept_conn(struct sink_run *r, struct sink_conn *k, int ms, const char *what)
{
	struct pollfd p = {.fd = r->lfd, .events = POLLIN};
	int one = 1;
	k->fd = -1;
	if (poll(&p, 1, ms) != 1 || (k->fd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK)) < 0) {
		perf_err(&r->s, "%s: no connection came", what);
		return PX_CONNECT;
	}
	(void)setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sink_mpa_accept(k, ms < 0 ? (int)(r->s.o.timeout * 1000) : ms)) {
		perf_err(&r->s, "%s: %s", what, k->err);
		return PX_CONNECT;
	}
	return PX_OK;
}

/* What the client asks for, if a sink can serve it. */
static int take_test(struct sink_run *r)
{
	struct perf_opts *o = &r->s.o;
	if ((o->test != PT_SEND && o->test != PT_WRITE) || o->bidir || o->sweep) {
		perf_err(&r->s, "the sink serves send and write bandwidth, one direction, one size "
				"(not %s%s%s)", perf_test_name(o->test), o->bidir ? " -b" : "",
			 o->sweep ? " -a" : "");
		return -1;
	}
	r->k.op = o->test == PT_SEND ? IW_OP_SEND : IW_OP_WRITE;
	r->k.size = o->size;
	r->k.rx_depth = perf_rx_depth(o);
	uint32_t step = r->k.rx_depth / 8;
	r->k.credit_step = step ? step : 1;
	r->s.nqp = r->k.ndata = o->qps;
	r->s.my = calloc(o->qps, sizeof(*r->s.my));
	r->s.rem = calloc(o->qps, sizeof(*r->s.rem));
	r->k.data = calloc(o->qps, sizeof(*r->k.data));
	if (!r->s.my || !r->s.rem || !r->k.data)
		return -1;
	for (uint32_t i = 0; i < o->qps; i++) {
		r->k.data[i] = (struct sink_conn){.fd = -1, .qp = i, .stag = SINK_STAG + i};
		r->s.my[i] = (struct perf_dest){.out_reads = o->out_reads, .qpn = i + 1,
						.rkey = SINK_STAG + i};
	}
	return 0;
}

static int setup(struct sink_run *r)
{
	struct perf_sess *s = &r->s;
	int rc = accept_conn(r, &r->k.comm, -1, "client connection");
	if (rc)
		return rc;
	if (perf_preamble(s) || perf_ext_exchange(s) || take_test(r) || perf_hand_shake(s, 0))
		return PX_FAIL;
	for (uint32_t i = 0; i < r->k.ndata; i++) {
		char what[32];
		snprintf(what, sizeof(what), "data connection %u", i);
		rc = accept_conn(r, &r->k.data[i], (int)(s->o.timeout * 1000), what);
		if (rc)
			return rc;
		if (sink_hello(&r->k.data[i])) {
			perf_err(s, "%s: %s", what, r->k.data[i].err);
			return PX_CONNECT;
		}
	}
	close(r->lfd);
	r->lfd = -1;
	return perf_hand_shake(s, 0) ? PX_FAIL : PX_OK;
}

static int drain_one(struct sink_run *r, struct sink_conn *k)
{
	uint64_t before = k->octets;
	if (sink_drain(&r->k, k)) {
		perf_err(&r->s, "data connection %u: %s", k->qp, k->err);
		return -1;
	}
	if (k->octets != before) {
		r->t1 = perf_now();
		if (!r->t0)
			r->t0 = r->t1;
	}
	return 0;
}

/* The run: data in on every connection until the client's comm message
 * says it is over (that message is then read by the next step). */
static int run(struct sink_run *r)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
	int rc = ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, r->k.comm.fd, &ev) ? -1 : 0;
	for (uint32_t i = 0; !rc && i < r->k.ndata; i++) {
		ev.data.u32 = i;
		rc = epoll_ctl(ep, EPOLL_CTL_ADD, r->k.data[i].fd, &ev);
	}
	for (bool over = false; !rc && !over;) {
		struct epoll_event got[PERF_MAX_QPS + 1];
		int n = epoll_wait(ep, got, PERF_MAX_QPS + 1, -1);
		if (n < 0 && errno != EINTR)
			rc = -1;
		for (int j = 0; !rc && j < n; j++) {
			if (got[j].data.u32 == UINT32_MAX)
				over = true;
			else
				rc = drain_one(r, &r->k.data[got[j].data.u32]);
		}
	}
	if (ep >= 0)
		close(ep);
	return rc;
}

/* After the last step: close each data connection (the server's part),
 * then count what arrives up to the client's FIN. */
static int finish(struct sink_run *r)
{
	double end = perf_now() + r->s.o.timeout;
	r->k.done = true;
	for (uint32_t i = 0; i < r->k.ndata; i++)
		(void)shutdown(r->k.data[i].fd, SHUT_WR);
	for (uint32_t i = 0; i < r->k.ndata; i++) {
		struct sink_conn *k = &r->k.data[i];
		while (!k->eof) {
			struct pollfd p = {.fd = k->fd, .events = POLLIN};
			if (perf_now() > end) {
				perf_err(&r->s, "data connection %u: the client did not close", i);
				return -1;
			}
			if (poll(&p, 1, 100) < 0 || drain_one(r, k))
				return -1;
		}
	}
	return 0;
}

/* The test between the set-up and the teardown; CPU over the run. */
static int flow(struct sink_run *r)
{
	struct perf_sess *s = &r->s;
	uint32_t n = r->k.ndata;
	struct perf_cpu before, after;
	if (r->k.op == IW_OP_SEND ? perf_hs_all(s) || perf_hand_shake(s, 0) || perf_hs_all(s) ||
					    perf_hs_patient(s)
				  : perf_hs_all(s) || perf_hs_all(s) || perf_hand_shake(s, 0))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		r->k.data[i].rkey = s->rem[i].rkey; /* the client's credit word */
		r->k.data[i].vaddr = s->rem[i].vaddr;
	}
	perf_cpu_sample(&before);
	if (run(r) || perf_hs_patient(s))
		return -1;
	if (r->k.op == IW_OP_WRITE) {
		struct perf_result none = {0}, theirs;
		if (perf_xchg_report(s, &none, &theirs) || perf_hand_shake(s, 0))
			return -1;
	}
	int rc = finish(r);
	perf_cpu_sample(&after);
	perf_cpu_delta(&before, &after, &r->cpu);
	return rc;
}

/* Every stream whole: ended at a message boundary. */
static int judge(struct sink_run *r)
{
	for (uint32_t i = 0; i < r->k.ndata; i++) {
		struct sink_conn *k = &r->k.data[i];
		bool raw_whole = !k->raw || (k->msg_wire && k->raw % k->msg_wire == 0);
		if (k->cur_len || k->in_len || !raw_whole || iw_fpdu_rx_finish(&k->rx)) {
			perf_err(&r->s, "data connection %u ended inside a message", i);
			return -1;
		}
	}
	return 0;
}

static void report(struct sink_run *r)
{
	uint64_t msgs = 0, octets = 0, checked = 0;
	for (uint32_t i = 0; i < r->k.ndata; i++) {
		msgs += sink_msgs(&r->k.data[i]);
		octets += r->k.data[i].octets;
		checked += r->k.data[i].checked;
	}
	double t = r->t1 - r->t0, rate = t > 0 ? msgs / t : 0;
	const char *test = perf_test_name(r->s.o.test);
	if (!r->s.o.json) {
		printf("sink: %s %" PRIu64 " B, %u connection(s): %" PRIu64 " messages, %" PRIu64
		       " octets in %.3f s (%.3f Mmsg/s); %" PRIu64 " checked (CRC %s): good; "
		       "CPU %.3f s\n", test, r->k.size, r->k.ndata, msgs, octets, t, rate / 1e6,
		       checked, r->k.data[0].crc ? "on" : "off", r->cpu.total);
		return;
	}
	printf("{\"sink\":{\"test\":\"%s\",\"size\":%" PRIu64 ",\"connections\":%u,"
	       "\"messages\":%" PRIu64 ",\"octets\":%" PRIu64 ",\"checked\":%" PRIu64
	       ",\"crc\":%s,\"seconds\":%.6f,\"msg_rate_mpps\":%.6f,\"cpu_s\":%.3f,"
	       "\"per_connection\":[", test, r->k.size, r->k.ndata, msgs, octets, checked,
	       r->k.data[0].crc ? "true" : "false", t, rate / 1e6, r->cpu.total);
	for (uint32_t i = 0; i < r->k.ndata; i++)
		printf("%s%" PRIu64, i ? "," : "", sink_msgs(&r->k.data[i]));
	printf("]}}\n");
}

static void teardown(struct sink_run *r)
{
	for (uint32_t i = 0; r->k.data && i < r->k.ndata; i++)
		sink_conn_free(&r->k.data[i]);
	sink_conn_free(&r->k.comm);
	if (r->lfd >= 0)
		close(r->lfd);
	free(r->k.data);
	free(r->s.my);
	free(r->s.rem);
}

int perf_sink_run(const struct perf_opts *o)
{
	struct sink_run r = {.s = {.o = *o, .server = true, .out = stdout, .who = "iwarp-perf (sink)"},
			     .lfd = -1, .k = {.comm = {.fd = -1}}};
	r.s.sink = &r.k;
	r.s.comm.wait_ms = (int)(o->timeout * 1000);
	int rc = listen_on(&r);
	if (!rc)
		rc = setup(&r);
	if (!rc && (flow(&r) || judge(&r)))
		rc = PX_FAIL;
	if (!rc)
		report(&r);
	teardown(&r);
	return rc;
}
