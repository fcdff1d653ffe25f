/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-perf (first cut): bandwidth of RDMA WRITE, READ and SEND between
 * two libiwarp contexts over 127.0.0.1 in one process, beside a raw TCP
 * transfer of the same message size measured in the same run (--tcp), and
 * the heap memory an idle connection costs (--idle N).
 *
 *   iwarp-perf [--test write|read|send] [-s size] [-D seconds] [-t depth]
 *              [--crc on|off] [--markers] [--tcp] [--idle N] [--json]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#define WAIT_MS 10000

struct opts {
	const char *test;
	size_t size;
	double seconds;
	int depth;
	bool crc, markers, tcp, json;
	int idle;
};

struct end {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_cm_id *id;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *cq;
	struct iw_mr *mr;
	uint8_t *buf;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "iwarp-perf: %s: %s\n", what, strerror(err));
	exit(1);
}

static struct iw_cm_event *wait_cm(struct iw_cm_channel *ch, enum iw_cm_event_type want)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	if (poll(&p, 1, WAIT_MS) <= 0)
		die("waiting for a CM event", ETIMEDOUT);
	struct iw_cm_event *ev;
	int rc = iw_cm_get_event(ch, &ev);
	if (rc)
		die("iw_cm_get_event", rc);
	if (ev->event != want) {
		fprintf(stderr, "iwarp-perf: expected %s, got %s (%s)\n", iw_cm_event_str(want),
			iw_cm_event_str(ev->event), strerror(ev->status));
		exit(1);
	}
	return ev;
}

static void end_init(struct end *e, size_t size, int depth, int srq_depth)
{
	e->ctx = iw_context_new(NULL);
	if (!e->ctx)
		die("iw_context_new", errno);
	e->cm = iw_cm_create_channel(e->ctx);
	e->pd = iw_alloc_pd(e->ctx);
	e->cc = iw_create_comp_channel(e->ctx);
	e->cq = e->cc ? iw_create_cq(e->ctx, 2 * depth + srq_depth + 16, NULL, e->cc, 0) : NULL;
	if (!e->cm || !e->pd || !e->cq)
		die("setup", errno);
	if (size) {
		e->buf = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
		if (!e->buf)
			die("buffer", ENOMEM);
		memset(e->buf, 0x5a, size);
		e->mr = iw_reg_mr(e->pd, e->buf, size,
				  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE |
					  IW_ACCESS_REMOTE_READ);
		if (!e->mr)
			die("iw_reg_mr", errno);
	}
}

static void make_qp(struct end *e, struct iw_cm_id *id, int depth)
{
	struct iw_qp_init_attr qa = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = (uint32_t)depth, .max_recv_wr = (uint32_t)depth + 1,
			.max_send_sge = 1, .max_recv_sge = 1},
	};
	int rc = iw_cm_create_qp(id, e->pd, &qa);
	if (rc)
		die("iw_cm_create_qp", rc);
}

static struct iw_cm_id *listen_any(struct end *srv, uint16_t *port)
{
	struct iw_cm_id *l;
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_cm_create_id(srv->cm, &l, NULL) || iw_cm_bind_addr(l, (struct sockaddr *)&a) ||
	    iw_cm_listen(l, 1024))
		die("listen", errno);
	*port = ntohs(((struct sockaddr_in *)&l->local_addr)->sin_port);
	return l;
}

/* Connect one pair; the server side id is returned through *srv_id. */
static struct iw_cm_id *connect_pair(struct end *srv, struct end *cli, uint16_t port,
				     const struct opts *o, int depth, struct iw_cm_id **srv_id)
{
	struct iw_cm_id *id;
	int rc = iw_cm_create_id(cli->cm, &id, NULL);
	if (rc)
		die("iw_cm_create_id", rc);
	make_qp(cli, id, depth);
	struct iw_mpa_opts mo;
	iw_mpa_opts_default(&mo);
	mo.crc = o->crc;
	mo.markers = o->markers;
	struct iw_conn_param p = {.responder_resources = 16, .initiator_depth = 16, .mpa = &mo};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((rc = iw_cm_connect(id, (struct sockaddr *)&a, &p)))
		die("iw_cm_connect", rc);
	struct iw_cm_event *ev = wait_cm(srv->cm, IW_CM_EVENT_CONNECT_REQUEST);
	*srv_id = ev->id;
	iw_cm_ack_event(ev);
	make_qp(srv, *srv_id, depth);
	struct iw_mpa_opts so = mo;
	so.markers = o->markers;
	iw_cm_set_mpa_opts(*srv_id, &so);
	struct iw_conn_param sp = {.responder_resources = 16, .initiator_depth = 16};
	if ((rc = iw_cm_accept(*srv_id, &sp)))
		die("iw_cm_accept", rc);
	iw_cm_ack_event(wait_cm(cli->cm, IW_CM_EVENT_ESTABLISHED));
	iw_cm_ack_event(wait_cm(srv->cm, IW_CM_EVENT_ESTABLISHED));
	return id;
}

/* ------------------------------------------------------------ bandwidth */

static int post_one(struct end *c, struct end *s, const struct opts *o, uint64_t n)
{
	struct iw_sge sge = {.addr = (uintptr_t)c->buf, .length = (uint32_t)o->size,
			     .lkey = c->mr->lkey};
	struct iw_send_wr wr = {.wr_id = n, .sg_list = &sge, .num_sge = 1,
				.send_flags = IW_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = (uintptr_t)s->buf;
	wr.wr.rdma.rkey = s->mr->rkey;
	if (!strcmp(o->test, "read"))
		wr.opcode = IW_WR_RDMA_READ;
	else if (!strcmp(o->test, "send"))
		wr.opcode = IW_WR_SEND;
	else
		wr.opcode = IW_WR_RDMA_WRITE;
	struct iw_send_wr *bad;
	return iw_post_send(c->id->qp, &wr, &bad);
}

static int post_recv(struct end *s, struct iw_qp *qp, size_t size)
{
	struct iw_sge sge = {.addr = (uintptr_t)s->buf, .length = (uint32_t)size,
			     .lkey = s->mr->lkey};
	struct iw_recv_wr wr = {.sg_list = &sge, .num_sge = 1};
	struct iw_recv_wr *bad;
	return iw_post_recv(qp, &wr, &bad);
}

/* Nothing to do until a completion: sleep on the channel instead of
 * spinning (on a 2-core machine a spinning poller starves the two loop
 * threads that move the data). */
static int wait_cq(struct end *c, struct iw_wc *wc)
{
	if (iw_req_notify_cq(c->cq, 0))
		return 0;
	int n = iw_poll_cq(c->cq, 32, wc);
	if (n)
		return n;
	struct pollfd p = {.fd = c->cc->fd, .events = POLLIN};
	if (poll(&p, 1, 100) == 1) {
		struct iw_cq *ecq;
		void *ectx;
		if (iw_get_cq_event(c->cc, &ecq, &ectx) == 0)
			iw_ack_cq_events(ecq, 1);
	}
	return iw_poll_cq(c->cq, 32, wc);
}

/* Keep depth operations in flight for the duration; returns bytes/s. */
static double run_bw(struct end *c, struct end *s, struct iw_qp *sqp, const struct opts *o,
		     uint64_t *out_iters)
{
	bool send = !strcmp(o->test, "send");
	uint64_t posted = 0, done = 0, recvd = 0;
	struct iw_wc wc[32];
	if (send)
		for (int i = 0; i < o->depth; i++)
			post_recv(s, sqp, o->size);
	double t0 = now(), end = t0 + o->seconds;
	for (;;) {
		double t = now();
		/* A Send completes when TCP took it, not when the peer placed it:
		 * for SEND the receiver's completions are the credit (iWARP has
		 * no receiver-not-ready retry). */
		uint64_t inflight = send ? posted - recvd : posted - done;
		while (inflight < (uint64_t)o->depth && t < end) {
			int rc = post_one(c, s, o, posted);
			if (rc)
				die("iw_post_send", rc);
			posted++;
			inflight++;
		}
		if (t >= end && done == posted && (!send || recvd == posted))
			break;
		int n = iw_poll_cq(c->cq, 32, wc);
		if (n == 0 && !send)
			n = wait_cq(c, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != IW_WC_SUCCESS) {
				fprintf(stderr, "iwarp-perf: completion %s\n",
					iw_wc_status_str(wc[i].status));
				exit(1);
			}
		done += (uint64_t)(n > 0 ? n : 0);
		if (send) {
			int m = iw_poll_cq(s->cq, 32, wc);
			for (int i = 0; i < m; i++)
				post_recv(s, sqp, o->size);
			recvd += (uint64_t)(m > 0 ? m : 0);
		}
	}
	double dt = now() - t0;
	*out_iters = done;
	return (double)done * (double)o->size / dt;
}

/* ------------------------------------------------------------ raw TCP */

struct tcp_rx {
	int fd;
	size_t size;
	uint64_t bytes;
};

static void *tcp_reader(void *arg)
{
	struct tcp_rx *r = arg;
	uint8_t *buf = malloc(r->size);
	ssize_t n;
	while (buf && (n = recv(r->fd, buf, r->size, 0)) > 0)
		r->bytes += (uint64_t)n;
	free(buf);
	return NULL;
}

/* The same message size over a plain TCP connection on 127.0.0.1: the
 * kernel's copy on each side, as libiwarp's WRITE has. */
static double run_tcp(const struct opts *o)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, al) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		die("tcp listen", errno);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, al))
		die("tcp connect", errno);
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct tcp_rx r = {.fd = accept(l, NULL, NULL), .size = o->size};
	pthread_t th;
	pthread_create(&th, NULL, tcp_reader, &r);
	uint8_t *buf = malloc(o->size);
	memset(buf, 0x5a, o->size);
	uint64_t sent = 0;
	double t0 = now(), end = t0 + o->seconds;
	while (now() < end) {
		ssize_t w = send(c, buf, o->size, 0);
		if (w < 0)
			die("tcp send", errno);
		sent += (uint64_t)w;
	}
	shutdown(c, SHUT_WR);
	pthread_join(th, NULL);
	double dt = now() - t0;
	close(c);
	close(r.fd);
	close(l);
	free(buf);
	return (double)r.bytes / dt;
}

/* ------------------------------------------------------------ idle memory */

static size_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static void run_idle(const struct opts *o)
{
	struct end s = {0}, c = {0};
	end_init(&s, 0, 64, 0);
	end_init(&c, 0, 64, 0);
	uint16_t port;
	struct iw_cm_id *l = listen_any(&s, &port);
	struct iw_cm_id **ids = calloc((size_t)o->idle * 2, sizeof(*ids));
	size_t before = heap_used();
	for (int i = 0; i < o->idle; i++)
		ids[2 * i] = connect_pair(&s, &c, port, o, o->depth, &ids[2 * i + 1]);
	size_t after = heap_used();
	double per = (double)(after - before) / (2.0 * o->idle);
	if (o->json)
		printf("{\"test\":\"idle\",\"connections\":%d,\"depth\":%d,"
		       "\"heap_bytes_per_endpoint\":%.0f}\n",
		       o->idle, o->depth, per);
	else
		printf("idle connections: %d pairs, SQ/RQ depth %d: %.0f bytes of heap per "
		       "endpoint (QP, CM id, events; kernel socket buffers not counted)\n",
		       o->idle, o->depth, per);
	for (int i = 0; i < 2 * o->idle; i++)
		iw_cm_destroy_id(ids[i]);
	free(ids);
	iw_cm_destroy_id(l);
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
	puts("usage: iwarp-perf [--test write|read|send] [-s size] [-D seconds] [-t depth]\n"
	     "                  [--crc on|off] [--markers] [--tcp] [--idle N] [--json]\n"
	     "Runs both ends in this process over 127.0.0.1.\n"
	     "  --tcp      also time a raw TCP transfer of the same size and print the ratio\n"
	     "  --idle N   heap bytes per idle connection, over N connections\n"
	     "Exit status: 0 success, 1 failure, 2 usage error.");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"test", required_argument, NULL, 'T'}, {"crc", required_argument, NULL, 'C'},
		{"markers", no_argument, NULL, 'M'},    {"tcp", no_argument, NULL, 'P'},
		{"idle", required_argument, NULL, 'I'}, {"json", no_argument, NULL, 'J'},
		{"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "s:D:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->size = strtoul(optarg, NULL, 0); break;
		case 'D': o->seconds = atof(optarg); break;
		case 't': o->depth = atoi(optarg); break;
		case 'T': o->test = optarg; break;
		case 'C': o->crc = strcmp(optarg, "off") != 0; break;
		case 'M': o->markers = true; break;
		case 'P': o->tcp = true; break;
		case 'I': o->idle = atoi(optarg); break;
		case 'J': o->json = true; break;
		case 'h': usage(); exit(0);
		default: usage(); return -1;
		}
	}
	if (o->size == 0 || o->size > (1u << 30) || o->seconds <= 0 || o->depth < 1 ||
	    o->depth > 4096 || o->idle < 0 ||
	    (strcmp(o->test, "write") && strcmp(o->test, "read") && strcmp(o->test, "send"))) {
		fprintf(stderr, "iwarp-perf: bad option value\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.test = "write", .size = 65536, .seconds = 2, .depth = 32, .crc = true};
	if (parse(argc, argv, &o))
		return 2;
	if (o.idle) {
		run_idle(&o);
		return 0;
	}
	struct end s = {0}, c = {0};
	end_init(&s, o.size, o.depth, 0);
	end_init(&c, o.size, o.depth, 0);
	uint16_t port;
	struct iw_cm_id *l = listen_any(&s, &port), *sid;
	c.id = connect_pair(&s, &c, port, &o, o.depth, &sid);
	s.id = sid;
	uint64_t iters;
	double bw = run_bw(&c, &s, sid->qp, &o, &iters);
	double tcp = o.tcp ? run_tcp(&o) : 0;
	if (o.json) {
		printf("{\"test\":\"%s\",\"bytes\":%zu,\"iterations\":%llu,\"depth\":%d,"
		       "\"crc\":%s,\"markers\":%s,\"bw_MBps\":%.1f",
		       o.test, o.size, (unsigned long long)iters, o.depth, o.crc ? "true" : "false",
		       o.markers ? "true" : "false", bw / 1e6);
		if (o.tcp)
			printf(",\"tcp_MBps\":%.1f,\"ratio\":%.3f", tcp / 1e6, bw / tcp);
		printf("}\n");
	} else {
		printf(" #bytes     #iterations    BW average[Gb/s]   BW average[MB/s]%s\n",
		       o.tcp ? "   raw TCP[MB/s]   ratio" : "");
		printf(" %-10zu %-14llu %-18.2f %-18.1f", o.size, (unsigned long long)iters,
		       bw * 8 / 1e9, bw / 1e6);
		if (o.tcp)
			printf(" %-15.1f %.3f", tcp / 1e6, bw / tcp);
		printf("\n");
	}
	iw_cm_disconnect(c.id);
	iw_cm_destroy_id(c.id);
	iw_cm_destroy_id(sid);
	iw_cm_destroy_id(l);
	return 0;
}
