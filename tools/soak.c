/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-soak: many QPs with verified traffic for a long time, the load
 * scripts/soak.sh watches (RSS and open descriptors of both processes).
 *
 *   iwarp-soak -s [-p PORT] [-q QPS] [-z SIZE]
 *   iwarp-soak -c ADDR [-p PORT] [-q QPS] [-z SIZE] [-t SECONDS] [-i SECONDS]
 *
 * The client opens QPS connections to the server and runs, on each one,
 * rounds of: an RDMA WRITE of SIZE octets of a pattern (a function of the
 * connection, the round and the offset) into the connection's region at
 * the server, a SEND of the same octets, an RDMA READ of the region back;
 * the server checks each SEND against the pattern and answers with a small
 * SEND (the round and its verdict); the client checks what the READ
 * brought back and the answer. A round starts when the last one completed,
 * so every connection always has traffic in flight. After SECONDS the
 * client lets the rounds in flight finish, disconnects, and both print
 * their totals:
 *   soak: client rounds N bytes_verified N mismatches N errors N
 * Progress lines every -i seconds. Exit status 0, or 1 on a mismatch, a
 * completion error or a connection lost before the end; 2 usage; 3 setup.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#define ACK_LEN 16
#define RECVS 2 /* server receives per connection: a SEND and a spare */

enum { K_WRITE, K_SEND, K_READ, K_RECV, K_ACK, K_NUM };

struct opts {
	bool server;
	const char *addr;
	uint16_t port;
	int qps;
	uint32_t size;
	double seconds, every;
};

/* The server's part of a connection, sent in the accept's private data. */
struct soak_pd {
	uint64_t vaddr;
	uint32_t rkey;
	uint32_t index;
};

struct conn {
	struct iw_cm_id *id;
	int index;           /* the server's number for it: seeds the pattern */
	uint64_t rvaddr;     /* client: the region at the server */
	uint32_t rkey;
	uint64_t round;
	unsigned pending;    /* client: completions the round still waits for */
	bool up, gone;
	uint8_t *mem;        /* this connection's part of the registered buffer */
};

struct soak {
	struct opts o;
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_mr *mr;
	uint8_t *buf;
	size_t per_conn;
	struct conn *c;
	int nconn, nup, ngone;
	uint64_t rounds, bytes, mismatches, errors;
	bool stopping;
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t pattern(int conn, uint64_t round, uint32_t off)
{
	return (uint8_t)(off * 7u + (off >> 8) * 3u + (uint32_t)round * 13u + (uint32_t)conn * 31u);
}

static void fill(uint8_t *p, uint32_t n, int conn, uint64_t round)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = pattern(conn, round, i);
	if (n >= 8)
		memcpy(p, &round, 8); /* the server learns the round from it */
}

static bool matches(const uint8_t *p, uint32_t n, int conn, uint64_t round)
{
	for (uint32_t i = n >= 8 ? 8 : 0; i < n; i++)
		if (p[i] != pattern(conn, round, i))
			return false;
	return n < 8 || memcmp(p, &round, 8) == 0;
}

/* ------------------------------------------------------------ memory */

/* Client: source, READ sink, answer. Server: region, receives, answer. */
static uint8_t *part(struct soak *s, struct conn *c, int which)
{
	size_t size = s->o.size;
	return c->mem + (size_t)which * size;
}

static int mem_init(struct soak *s)
{
	s->per_conn = (size_t)s->o.size * (2 + RECVS) + 2 * ACK_LEN;
	s->buf = calloc((size_t)s->o.qps, s->per_conn);
	if (!s->buf)
		return -1;
	s->mr = iw_reg_mr(s->pd, s->buf, (size_t)s->o.qps * s->per_conn,
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	for (int i = 0; i < s->o.qps; i++)
		s->c[i].mem = s->buf + (size_t)i * s->per_conn;
	return s->mr ? 0 : -1;
}

static uint8_t *ack_buf(struct soak *s, struct conn *c)
{
	return c->mem + (size_t)s->o.size * (2 + RECVS);
}

/* ------------------------------------------------------------ posting */

static uint64_t wr_id(struct soak *s, struct conn *c, int kind, int slot)
{
	return ((uint64_t)(c - s->c) << 16) | (uint64_t)slot << 8 | (uint64_t)kind;
}

static int post_send(struct soak *s, struct conn *c, int kind, enum iw_wr_opcode op,
		     uint8_t *p, uint32_t len)
{
	struct iw_sge sg = {.addr = (uintptr_t)p, .length = len, .lkey = s->mr->lkey};
	struct iw_send_wr wr = {.wr_id = wr_id(s, c, kind, 0), .sg_list = &sg, .num_sge = 1,
				.opcode = op, .send_flags = IW_SEND_SIGNALED};
	struct iw_send_wr *bad;
	wr.wr.rdma.remote_addr = c->rvaddr;
	wr.wr.rdma.rkey = c->rkey;
	return iw_post_send(c->id->qp, &wr, &bad);
}

static int post_recv(struct soak *s, struct conn *c, int slot, uint8_t *p, uint32_t len)
{
	struct iw_sge sg = {.addr = (uintptr_t)p, .length = len, .lkey = s->mr->lkey};
	struct iw_recv_wr wr = {.wr_id = wr_id(s, c, K_RECV, slot), .sg_list = &sg, .num_sge = 1};
	struct iw_recv_wr *bad;
	return iw_post_recv(c->id->qp, &wr, &bad);
}

/* Client: one round (write, send, read; the answer's receive). */
static int start_round(struct soak *s, struct conn *c)
{
	uint32_t n = s->o.size;
	uint8_t *src = part(s, c, 0), *sink = part(s, c, 1);

	fill(src, n, c->index, c->round);
	memset(sink, 0, n);
	c->pending = 4;
	if (post_recv(s, c, 0, ack_buf(s, c), ACK_LEN) ||
	    post_send(s, c, K_WRITE, IW_WR_RDMA_WRITE, src, n) ||
	    post_send(s, c, K_SEND, IW_WR_SEND, src, n) ||
	    post_send(s, c, K_READ, IW_WR_RDMA_READ, sink, n))
		return -1;
	return 0;
}

/* ------------------------------------------------------------ completions */

static void count_error(struct soak *s, struct conn *c, const struct iw_wc *wc)
{
	if (s->errors++ < 5)
		fprintf(stderr, "iwarp-soak: connection %d: %s (%s)\n", (int)(c - s->c),
			iw_wc_status_str(wc->status), iw_term_str(wc->vendor_err));
}

static void mismatch(struct soak *s, struct conn *c, const char *what)
{
	if (s->mismatches++ < 5)
		fprintf(stderr, "iwarp-soak: connection %d round %llu: %s differs\n",
			(int)(c - s->c), (unsigned long long)c->round, what);
}

/* Server: a SEND arrived; check it, take the next, answer. */
static void server_recv(struct soak *s, struct conn *c, int slot, const struct iw_wc *wc)
{
	uint8_t *p = part(s, c, 1 + slot), *ack = ack_buf(s, c);
	uint64_t round = 0;
	bool ok;

	memcpy(&round, p, 8);
	ok = wc->byte_len == s->o.size && matches(p, s->o.size, c->index, round);
	if (!ok)
		mismatch(s, c, "SEND payload");
	s->rounds++;
	s->bytes += wc->byte_len;
	memcpy(ack, &round, 8);
	memset(ack + 8, ok ? 1 : 0, 8);
	if (post_recv(s, c, slot, p, s->o.size) ||
	    post_send(s, c, K_ACK, IW_WR_SEND, ack, ACK_LEN))
		s->errors++;
}

/* Client: a part of the round finished; the next round when all did. */
static void client_done(struct soak *s, struct conn *c, int kind)
{
	uint8_t *a = ack_buf(s, c);
	uint64_t r;

	if (kind == K_READ) {
		if (!matches(part(s, c, 1), s->o.size, c->index, c->round))
			mismatch(s, c, "READ of the WRITE");
		s->bytes += 2ull * s->o.size;
	} else if (kind == K_RECV) {
		memcpy(&r, a, 8);
		if (r != c->round || a[8] != 1)
			mismatch(s, c, "server's check of the SEND");
		s->bytes += s->o.size;
	}
	if (--c->pending)
		return;
	s->rounds++;
	c->round++;
	if (!s->stopping && start_round(s, c))
		s->errors++;
}

static void on_wc(struct soak *s, const struct iw_wc *wc)
{
	struct conn *c = &s->c[wc->wr_id >> 16];
	int kind = (int)(wc->wr_id & 0xFF), slot = (int)((wc->wr_id >> 8) & 0xFF);

	if (wc->status != IW_WC_SUCCESS) {
		/* The server's receives flush when the client disconnects;
		 * the client's WRs only flush if something failed. */
		if (wc->status != IW_WC_WR_FLUSH_ERR || !(s->stopping || s->o.server))
			count_error(s, c, wc);
		return;
	}
	if (s->o.server) {
		if (kind == K_RECV)
			server_recv(s, c, slot, wc);
		return;
	}
	client_done(s, c, kind);
}

static int poll_cq(struct soak *s)
{
	struct iw_wc wc[64];
	int n, total = 0;

	while ((n = iw_poll_cq(s->cq, 64, wc)) > 0) {
		for (int i = 0; i < n; i++)
			on_wc(s, &wc[i]);
		total += n;
	}
	return n < 0 ? -1 : total;
}

/* ------------------------------------------------------------ connections */

static int make_qp(struct soak *s, struct conn *c)
{
	struct iw_qp_init_attr qa = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IW_QPT_RC, .sq_sig_all = 1,
		.cap = {.max_send_wr = 4, .max_recv_wr = RECVS, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	return iw_cm_create_qp(c->id, s->pd, &qa);
}

/* Server: a new connection gets the next slot, its QP, receives, and the
 * region's address in the accept. */
static int server_accept(struct soak *s, struct iw_cm_id *id)
{
	struct iw_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct soak_pd pd;
	struct conn *c;

	if (s->nconn >= s->o.qps)
		return iw_cm_reject(id, NULL, 0);
	c = &s->c[s->nconn];
	c->id = id;
	c->index = s->nconn++;
	iw_cm_set_context(id, c);
	if (make_qp(s, c))
		return -1;
	for (int i = 0; i < RECVS; i++)
		if (post_recv(s, c, i, part(s, c, 1 + i), s->o.size))
			return -1;
	pd.vaddr = (uintptr_t)part(s, c, 0);
	pd.rkey = s->mr->rkey;
	pd.index = (uint32_t)c->index;
	p.private_data = &pd;
	p.private_data_len = sizeof(pd);
	return iw_cm_accept(id, &p);
}

static void client_established(struct soak *s, struct conn *c, const struct iw_cm_event *ev)
{
	struct soak_pd pd;

	if (ev->param.private_data_len < sizeof(pd)) {
		s->errors++;
		return;
	}
	memcpy(&pd, ev->param.private_data, sizeof(pd));
	c->rvaddr = pd.vaddr;
	c->rkey = pd.rkey;
	c->index = (int)pd.index;
	if (start_round(s, c))
		s->errors++;
}

static void on_cm(struct soak *s, struct iw_cm_event *ev)
{
	struct conn *c = ev->id->user_context;

	switch (ev->event) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		if (server_accept(s, ev->id))
			s->errors++;
		break;
	case IW_CM_EVENT_ESTABLISHED:
		c->up = true;
		s->nup++;
		if (!s->o.server)
			client_established(s, c, ev);
		break;
	case IW_CM_EVENT_DISCONNECTED:
		if (c && !c->gone) {
			c->gone = true;
			s->ngone++;
			if (!s->stopping && !s->o.server)
				s->errors++;
		}
		break;
	default:
		fprintf(stderr, "iwarp-soak: %s (%s)\n", iw_cm_event_str(ev->event),
			strerror(ev->status));
		s->errors++;
		if (c && !c->gone) {
			c->gone = true;
			s->ngone++;
		}
		break;
	}
}

static int take_cm(struct soak *s)
{
	struct pollfd p = {.fd = s->ch->fd, .events = POLLIN};
	struct iw_cm_event *ev;
	int n = 0;

	while (poll(&p, 1, 0) == 1) {
		if (iw_cm_get_event(s->ch, &ev))
			break;
		on_cm(s, ev);
		iw_cm_ack_event(ev);
		n++;
	}
	return n;
}

static int client_connect(struct soak *s)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct iw_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	char port[8];

	snprintf(port, sizeof(port), "%u", s->o.port);
	if (getaddrinfo(s->o.addr, port, &hints, &ai))
		return -1;
	for (int i = 0; i < s->o.qps; i++) {
		struct conn *c = &s->c[i];
		if (iw_cm_create_id(s->ch, &c->id, c) || make_qp(s, c) ||
		    iw_cm_connect(c->id, ai->ai_addr, &p)) {
			freeaddrinfo(ai);
			return -1;
		}
		s->nconn++;
		take_cm(s);
		poll_cq(s);
	}
	freeaddrinfo(ai);
	return 0;
}

/* ------------------------------------------------------------ main loop */

static void report(struct soak *s, const char *what, double t)
{
	printf("soak: %s t=%.0fs connections %d/%d rounds %llu bytes_verified %llu "
	       "mismatches %llu errors %llu\n",
	       what, t, s->nup - s->ngone, s->o.qps, (unsigned long long)s->rounds,
	       (unsigned long long)s->bytes, (unsigned long long)s->mismatches,
	       (unsigned long long)s->errors);
	fflush(stdout);
}

static bool in_flight(const struct soak *s)
{
	for (int i = 0; i < s->nconn; i++)
		if (s->c[i].up && !s->c[i].gone && s->c[i].pending)
			return true;
	return false;
}

static void idle_wait(void)
{
	struct timespec ts = {0, 200000};
	nanosleep(&ts, NULL);
}

/* Client: stop starting rounds, let those in flight finish, disconnect. */
static void client_finish(struct soak *s)
{
	double until = now() + 30;

	s->stopping = true;
	while (in_flight(s) && now() < until)
		if (poll_cq(s) + take_cm(s) == 0)
			idle_wait();
	if (in_flight(s)) {
		fprintf(stderr, "iwarp-soak: rounds still in flight after 30 s\n");
		s->errors++;
	}
	for (int i = 0; i < s->nconn; i++)
		if (s->c[i].up && !s->c[i].gone)
			iw_cm_disconnect(s->c[i].id);
	until = now() + 30;
	while (s->ngone < s->nup && now() < until)
		if (poll_cq(s) + take_cm(s) == 0)
			idle_wait();
}

static void run(struct soak *s)
{
	double start = now(), next = start + s->o.every;

	while (!got_signal) {
		double t = now();
		if (!s->o.server && t - start >= s->o.seconds)
			break;
		if (s->o.server && s->nconn == s->o.qps && s->ngone == s->nconn)
			break; /* the client disconnected every connection */
		if (t >= next) {
			report(s, s->o.server ? "server" : "client", t - start);
			next += s->o.every;
		}
		if (poll_cq(s) + take_cm(s) == 0)
			idle_wait();
	}
	if (!s->o.server)
		client_finish(s);
	s->stopping = true;
	poll_cq(s);
	report(s, s->o.server ? "server end" : "client end", now() - start);
}

/* ------------------------------------------------------------ setup */

static int usage(void)
{
	fprintf(stderr, "usage: iwarp-soak -s [-p PORT] [-q QPS] [-z SIZE]\n"
			"       iwarp-soak -c ADDR [-p PORT] [-q QPS] [-z SIZE] [-t SECONDS] "
			"[-i SECONDS]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int ch;

	*o = (struct opts){.port = 18600, .qps = 1000, .size = 4096, .seconds = 600, .every = 10};
	while ((ch = getopt(argc, argv, "sc:p:q:z:t:i:")) != -1) {
		switch (ch) {
		case 's': o->server = true; break;
		case 'c': o->addr = optarg; break;
		case 'p': o->port = (uint16_t)atoi(optarg); break;
		case 'q': o->qps = atoi(optarg); break;
		case 'z': o->size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': o->seconds = atof(optarg); break;
		case 'i': o->every = atof(optarg); break;
		default: return -1;
		}
	}
	if (o->server == (o->addr != NULL) || o->qps < 1 || o->qps > 65535 || o->size < 8 ||
	    o->size > (1u << 20) || o->seconds <= 0 || o->every <= 0 || optind != argc)
		return -1;
	return 0;
}

static int listen_on(struct soak *s)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(s->o.port)};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_cm_create_id(s->ch, &s->listen, NULL) ||
	    iw_cm_bind_addr(s->listen, (struct sockaddr *)&a) || iw_cm_listen(s->listen, 4096))
		return -1;
	printf("soak: server listening on 127.0.0.1:%u\n", s->o.port);
	fflush(stdout);
	return 0;
}

static int setup(struct soak *s)
{
	int cqe = s->o.qps * 5 + 64;

	s->c = calloc((size_t)s->o.qps, sizeof(*s->c));
	s->ctx = iw_context_new(NULL);
	s->ch = s->ctx ? iw_cm_create_channel(s->ctx) : NULL;
	s->pd = s->ctx ? iw_alloc_pd(s->ctx) : NULL;
	s->cq = s->ctx ? iw_create_cq(s->ctx, cqe, NULL, NULL, 0) : NULL;
	if (!s->c || !s->ch || !s->pd || !s->cq || mem_init(s))
		return -1;
	return s->o.server ? listen_on(s) : client_connect(s);
}

static void teardown(struct soak *s)
{
	for (int i = 0; s->c && i < s->nconn; i++)
		iw_cm_destroy_id(s->c[i].id);
	iw_cm_destroy_id(s->listen);
	iw_dereg_mr(s->mr);
	iw_destroy_cq(s->cq);
	iw_dealloc_pd(s->pd);
	iw_cm_destroy_channel(s->ch);
	iw_context_free(s->ctx);
	free(s->buf);
	free(s->c);
}

int main(int argc, char **argv)
{
	struct soak s = {0};
	int rc;

	if (parse(argc, argv, &s.o))
		return usage();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (setup(&s)) {
		fprintf(stderr, "iwarp-soak: setup: %s\n", strerror(errno));
		teardown(&s);
		return 3;
	}
	run(&s);
	rc = s.mismatches || s.errors ? 1 : 0;
	teardown(&s);
	return rc;
}
