/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --churn N: connection churn (issue 13). N cycles, each a connection pair
 * between two contexts of this process over 127.0.0.1 (connect, MPA
 * exchange, ESTABLISHED on both sides), one SEND each way, a disconnect
 * (DISCONNECTED on both sides) and the destruction of both ids. The
 * process's descriptors, malloc's in-use octets and resident set are
 * printed before and after the first and the last 10,000 cycles (a tenth
 * of N when N is smaller): a leak per cycle shows as growth over the last
 * window. tests/test_accept.c's test_churn_flat is the short form.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define CHURN_WINDOW 10000
#define CHURN_DEPTH 4

struct churn_mark {
	int fds;
	size_t heap, rss;
};

struct churn_end {
	struct perf_end e;
	struct iw_mr *mr;
	uint8_t buf[64];
};

static int fds_now(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 3; /* ".", ".." and the directory's own descriptor */
}

static struct churn_mark mark_now(void)
{
	return (struct churn_mark){.fds = fds_now(), .heap = perf_heap_used(),
				   .rss = perf_rss_bytes()};
}

/* Both completions (the send and the peer's send received) of one end. */
static int two_completions(struct churn_end *x)
{
	double end = perf_now() + 10;
	for (int got = 0; got < 2;) {
		struct iw_wc wc;
		int n = iw_poll_cq(x->e.cq, 1, &wc);
		if (n < 0 || (n && wc.status != IW_WC_SUCCESS) || perf_now() > end)
			return -1;
		got += n;
		if (!n)
			sched_yield();
	}
	return 0;
}

static int down(struct churn_end *s, struct churn_end *c, struct iw_cm_id *cid)
{
	if (iw_cm_disconnect(cid))
		return -1;
	struct iw_cm_event *e1 = perf_wait_ev(c->e.cm, IW_CM_EVENT_DISCONNECTED);
	struct iw_cm_event *e2 = perf_wait_ev(s->e.cm, IW_CM_EVENT_DISCONNECTED);
	iw_cm_ack_event(e1);
	iw_cm_ack_event(e2);
	return e1 && e2 ? 0 : -1;
}

/* A receive on both ends before either sends: iWARP has no
 * receiver-not-ready, a Send finding no receive ends the connection. */
static int post_recv1(struct churn_end *x, struct iw_qp *qp, struct iw_sge *sge)
{
	*sge = (struct iw_sge){(uintptr_t)x->buf, sizeof(x->buf), x->mr->lkey};
	struct iw_recv_wr r = {.wr_id = 1, .sg_list = sge, .num_sge = 1}, *bad;
	return iw_post_recv(qp, &r, &bad);
}

static int post_send1(struct iw_qp *qp, struct iw_sge *sge)
{
	struct iw_send_wr s = {.wr_id = 2, .sg_list = sge, .num_sge = 1, .opcode = IW_WR_SEND,
			       .send_flags = IW_SEND_SIGNALED}, *bad;
	return iw_post_send(qp, &s, &bad);
}

static int xfer(struct churn_end *s, struct churn_end *c, struct iw_qp *sq, struct iw_qp *cq)
{
	struct iw_sge ss, cs;
	if (post_recv1(s, sq, &ss) || post_recv1(c, cq, &cs) || post_send1(sq, &ss) ||
	    post_send1(cq, &cs))
		return -1;
	return two_completions(s) || two_completions(c) ? -1 : 0;
}

static int cycle(struct churn_end *s, struct churn_end *c, const struct sockaddr_in *a)
{
	struct iw_cm_id *cid = NULL, *sid = NULL;
	int rc = perf_pair(&s->e, &c->e, a, CHURN_DEPTH, &cid, &sid);
	if (!rc)
		rc = xfer(s, c, sid->qp, cid->qp);
	if (!rc)
		rc = down(s, c, cid);
	iw_cm_destroy_id(cid);
	iw_cm_destroy_id(sid);
	return rc;
}

static int end_open(struct churn_end *x)
{
	if (perf_end_open(&x->e, CHURN_DEPTH))
		return -1;
	memset(x->buf, 0, sizeof(x->buf));
	x->mr = iw_reg_mr(x->e.pd, x->buf, sizeof(x->buf), IW_ACCESS_LOCAL_WRITE);
	return x->mr ? 0 : -1;
}

static void end_close(struct churn_end *x)
{
	iw_dereg_mr(x->mr);
	perf_end_close(&x->e);
}

static void print_row(const char *what, const struct churn_mark *m)
{
	printf(" %-26s %8d %14.1f %12.1f\n", what, m->fds, m->heap / 1024.0, m->rss / 1048576.0);
}

static void report(const struct perf_opts *o, uint64_t w, const struct churn_mark m[4],
		   double secs)
{
	if (o->json) {
		printf("{\"test\":\"churn\",\"cycles\":%" PRIu64 ",\"window\":%" PRIu64
		       ",\"seconds\":%.3f,\"cycles_per_sec\":%.0f,\"marks\":[",
		       o->churn, w, secs, o->churn / secs);
		for (int i = 0; i < 4; i++)
			printf("%s{\"fds\":%d,\"heap_bytes\":%zu,\"rss_bytes\":%zu}", i ? "," : "",
			       m[i].fds, m[i].heap, m[i].rss);
		printf("]}\n");
		return;
	}
	printf(" churn: %" PRIu64 " cycles (connect, one SEND each way, disconnect) in %.1f s, "
	       "%.0f per second, none failed\n", o->churn, secs, o->churn / secs);
	printf(" %-26s %8s %14s %12s\n", "", "fds", "heap [KiB]", "RSS [MiB]");
	char lbl[4][48];
	snprintf(lbl[0], sizeof(lbl[0]), "before cycle 1");
	snprintf(lbl[1], sizeof(lbl[1]), "after cycle %" PRIu64, w);
	snprintf(lbl[2], sizeof(lbl[2]), "before cycle %" PRIu64, o->churn - w + 1);
	snprintf(lbl[3], sizeof(lbl[3]), "after cycle %" PRIu64, o->churn);
	for (int i = 0; i < 4; i++)
		print_row(lbl[i], &m[i]);
}

int perf_churn_run(const struct perf_opts *o)
{
	struct churn_end s = {0}, c = {0};
	struct iw_cm_id *l = NULL;
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rc = PX_FAIL;
	if (end_open(&s) || end_open(&c) || iw_cm_create_id(s.e.cm, &l, NULL) ||
	    iw_cm_bind_addr(l, (struct sockaddr *)&a) || iw_cm_listen(l, 128)) {
		fprintf(stderr, "iwarp-perf: churn setup failed\n");
		goto out;
	}
	a.sin_port = ((struct sockaddr_in *)&l->local_addr)->sin_port;
	uint64_t w = o->churn >= 2 * CHURN_WINDOW ? CHURN_WINDOW : (o->churn + 9) / 10;
	struct churn_mark m[4];
	double t0 = perf_now();
	m[0] = mark_now();
	for (uint64_t i = 0; i < o->churn; i++) {
		if (i == w)
			m[1] = mark_now();
		if (i == o->churn - w)
			m[2] = mark_now();
		if (cycle(&s, &c, &a)) {
			fprintf(stderr, "iwarp-perf: churn cycle %" PRIu64 " failed\n", i + 1);
			goto out;
		}
	}
	m[3] = mark_now();
	report(o, w, m, perf_now() - t0);
	rc = PX_OK;
out:
	iw_cm_destroy_id(l);
	end_close(&c);
	end_close(&s);
	return rc;
}
