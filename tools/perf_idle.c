/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --idle N: the heap an idle connection costs. N connection pairs between
 * two contexts of this process over 127.0.0.1; the growth of malloc's
 * in-use figure (mallinfo2) and of the resident set over the pairs, per
 * endpoint. Kernel socket buffers are not counted. Every socket is a
 * descriptor: the soft RLIMIT_NOFILE is raised to the hard limit first,
 * and an N that cannot fit under it is refused before anything is made.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "perf.h"

size_t perf_heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* Descriptors besides the sockets: stdio, both contexts' loops and
 * channels, the listener, libevent's epoll and signal fds. */
#define IDLE_FD_SLACK 64

/* Resident set in bytes (/proc/self/statm), 0 if unknown. */
size_t perf_rss_bytes(void)
{
	unsigned long size, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(f);
	return res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Threads of this process (/proc/self/status), 0 if unknown. */
static int threads_now(void)
{
	char line[128];
	int n = 0;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* Raise the soft descriptor limit to the hard one; 0 if n pairs fit. */
static int fds_for(int n)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	rlim_t need = 2 * (rlim_t)n + IDLE_FD_SLACK;
	if (rl.rlim_cur != RLIM_INFINITY && need > rl.rlim_cur) {
		long fit = ((long)rl.rlim_cur - IDLE_FD_SLACK) / 2;
		fprintf(stderr, "iwarp-perf: --idle %d needs about %lu descriptors (two sockets a "
			"pair) but RLIMIT_NOFILE allows %lu (hard limit %lu): at most %ld pairs "
			"fit here\n", n, (unsigned long)need, (unsigned long)rl.rlim_cur,
			(unsigned long)rl.rlim_max, fit > 0 ? fit : 0);
		return -1;
	}
	return 0;
}

int perf_end_open(struct perf_end *e, int depth)
{
	e->ctx = iw_context_new(NULL);
	e->cm = e->ctx ? iw_cm_create_channel(e->ctx) : NULL;
	e->pd = e->ctx ? iw_alloc_pd(e->ctx) : NULL;
	e->cq = e->ctx ? iw_create_cq(e->ctx, 2 * depth + 16, NULL, NULL, 0) : NULL;
	return e->cm && e->pd && e->cq ? 0 : -1;
}

void perf_end_close(struct perf_end *e)
{
	iw_destroy_cq(e->cq);
	iw_dealloc_pd(e->pd);
	iw_cm_destroy_channel(e->cm);
	iw_context_free(e->ctx);
}

struct iw_cm_event *perf_wait_ev(struct iw_cm_channel *ch, enum iw_cm_event_type want)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct iw_cm_event *ev;
	if (poll(&p, 1, 10000) != 1 || iw_cm_get_event(ch, &ev))
		return NULL;
	if (ev->event != want) {
		fprintf(stderr, "iwarp-perf: expected %s, got %s\n", iw_cm_event_str(want),
			iw_cm_event_str(ev->event));
		iw_cm_ack_event(ev);
		return NULL;
	}
	return ev;
}

static int make_qp(struct perf_end *e, struct iw_cm_id *id, int depth)
{
	struct iw_qp_init_attr qa = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = (uint32_t)depth, .max_recv_wr = (uint32_t)depth + 1,
			.max_send_sge = 1, .max_recv_sge = 1},
	};
	return iw_cm_create_qp(id, e->pd, &qa);
}

/* One pair; the accepted id in *sid. */
int perf_pair(struct perf_end *s, struct perf_end *c, const struct sockaddr_in *a, int depth,
		struct iw_cm_id **cid, struct iw_cm_id **sid)
{
	struct iw_conn_param p = {.responder_resources = 16, .initiator_depth = 16};
	if (iw_cm_create_id(c->cm, cid, NULL) || make_qp(c, *cid, depth) ||
	    iw_cm_connect(*cid, (const struct sockaddr *)a, &p))
		return -1;
	struct iw_cm_event *ev = perf_wait_ev(s->cm, IW_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return -1;
	*sid = ev->id;
	iw_cm_ack_event(ev);
	if (make_qp(s, *sid, depth) || iw_cm_accept(*sid, &p))
		return -1;
	struct iw_cm_event *e1 = perf_wait_ev(c->cm, IW_CM_EVENT_ESTABLISHED);
	struct iw_cm_event *e2 = perf_wait_ev(s->cm, IW_CM_EVENT_ESTABLISHED);
	iw_cm_ack_event(e1);
	iw_cm_ack_event(e2);
	return e1 && e2 ? 0 : -1;
}

int perf_idle_run(const struct perf_opts *o)
{
	struct perf_end s = {0}, c = {0};
	int depth = (int)o->tx_depth, rc = PX_FAIL;
	if (fds_for(o->idle))
		return PX_CONNECT;
	struct iw_cm_id *l = NULL, **ids = calloc((size_t)o->idle * 2, sizeof(*ids));
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!ids || perf_end_open(&s, depth) || perf_end_open(&c, depth) ||
	    iw_cm_create_id(s.cm, &l, NULL) || iw_cm_bind_addr(l, (struct sockaddr *)&a) ||
	    iw_cm_listen(l, 1024)) {
		fprintf(stderr, "iwarp-perf: idle setup: %s\n", strerror(errno));
		goto out;
	}
	a.sin_port = ((struct sockaddr_in *)&l->local_addr)->sin_port;
	size_t before = perf_heap_used(), rss0 = perf_rss_bytes();
	for (int i = 0; i < o->idle; i++)
		if (perf_pair(&s, &c, &a, depth, &ids[2 * i], &ids[2 * i + 1])) {
			fprintf(stderr, "iwarp-perf: idle connection %d failed\n", i);
			goto out;
		}
	double per = (double)(perf_heap_used() - before) / (2.0 * o->idle);
	size_t rss = perf_rss_bytes();
	double rss_per = (double)(rss > rss0 ? rss - rss0 : 0) / (2.0 * o->idle);
	if (o->json)
		printf("{\"test\":\"idle\",\"connections\":%d,\"depth\":%d,"
		       "\"heap_bytes_per_endpoint\":%.0f,\"rss_bytes\":%zu,"
		       "\"rss_bytes_per_endpoint\":%.0f,\"threads\":%d}\n",
		       o->idle, depth, per, rss, rss_per, threads_now());
	else
		printf("idle connections: %d pairs, SQ/RQ depth %d: %.0f bytes of heap per "
		       "endpoint (QP, CM id, events; kernel socket buffers not counted); "
		       "RSS %.1f MiB, %.0f bytes per endpoint; %d threads in the process "
		       "(a loop thread per context, none per connection)\n",
		       o->idle, depth, per, rss / 1048576.0, rss_per, threads_now());
	rc = PX_OK;
out:
	for (int i = 0; ids && i < 2 * o->idle; i++)
		iw_cm_destroy_id(ids[i]);
	free(ids);
	iw_cm_destroy_id(l);
	perf_end_close(&c);
	perf_end_close(&s);
	return rc;
}
