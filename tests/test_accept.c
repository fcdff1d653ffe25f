/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The accept path under load and the connection lifecycle over many
 * cycles (issue 13), over real TCP on 127.0.0.1 between two contexts in
 * convenience mode:
 *  - slow peers: a listener whose pending handshakes are all held by
 *    silent or half-Request peers still takes a well-behaved peer (the
 *    oldest pending one is reset to make room, not the newcomer);
 *  - burst: a thousand well-behaved connects at once behind a listener
 *    full of silent and half-Request peers all reach ESTABLISHED;
 *  - backlog: the backlog given to iw_cm_listen is the listening socket's
 *    (read back from the kernel through sock_diag, as ss -ltn shows it),
 *    also when it takes over a parked socket, and a burst of connects
 *    three times larger all gets through;
 *  - no hop: iw_cm_create_id and iw_cm_create_qp run on the calling thread
 *    under the loop's lock, so they return while the loop is not running;
 *  - churn: connect, one Send each way, disconnect, 2,000 times; the
 *    descriptors and the live heap bytes of both contexts (counted by an
 *    IW_CONTEXT_ATTR_ALLOC allocator) are the same at the end as after
 *    the first cycles;
 *  - relisten (iw_conn_opts.relisten_ms): a listener destroyed and made
 *    again on the same port takes the connections of peers that do not
 *    dial again and came in between; without the option they are
 *    refused; a parked socket nobody takes is closed when its time is up
 *    (its peers reset, the port refused again, no descriptor left), one
 *    on the same port and another address gives way, and the context's
 *    end closes them all.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>

#include <iwarp/iwarp.h>

#include "suites.h"
#include "testutil.h"

#define WAIT_MS 20000 /* a limit, not an expected duration (sanitizers) */

/* ------------------------------------------------------------ plumbing */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Live bytes of a context's allocations: each block carries its size. */
static atomic_long live_bytes;

static void *cnt_malloc(void *u, size_t n)
{
	(void)u;
	size_t *p = malloc(n + 16);
	if (!p)
		return NULL;
	*p = n;
	atomic_fetch_add(&live_bytes, (long)n);
	return (char *)p + 16;
}

static void *cnt_calloc(void *u, size_t k, size_t n)
{
	void *p = k && n > SIZE_MAX / 2 / k ? NULL : cnt_malloc(u, k * n);
	if (p)
		memset(p, 0, k * n);
	return p;
}

static void cnt_free(void *u, void *q)
{
	(void)u;
	if (!q)
		return;
	size_t *p = (size_t *)((char *)q - 16);
	atomic_fetch_sub(&live_bytes, (long)*p);
	free(p);
}

static void *cnt_realloc(void *u, void *q, size_t n)
{
	void *r = cnt_malloc(u, n);
	if (r && q) {
		size_t old = *(size_t *)((char *)q - 16);
		memcpy(r, q, old < n ? old : n);
	}
	if (r)
		cnt_free(u, q);
	return r;
}

static const struct iw_alloc_ops counting = {cnt_malloc, cnt_calloc, cnt_realloc, cnt_free,
					     NULL};

static int open_fds(void)
{
	int n = tu_open_fds();
	ck_assert_int_ge(n, 0);
	return n;
}

/* Room for n descriptors more than now, or skip: false. */
static bool fds_room(int n)
{
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return rl.rlim_cur == RLIM_INFINITY || (rlim_t)(open_fds() + n + 64) <= rl.rlim_cur;
}

struct side {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
};

static void side_open(struct side *s, struct iw_context_attr *a, int cqe)
{
	s->ctx = iw_context_new(a);
	ck_assert_ptr_nonnull(s->ctx);
	s->ch = iw_cm_create_channel(s->ctx);
	s->pd = iw_alloc_pd(s->ctx);
	s->cq = iw_create_cq(s->ctx, cqe, NULL, NULL, 0);
	ck_assert(s->ch && s->pd && s->cq);
	int fl = fcntl(s->ch->fd, F_GETFL);
	ck_assert_int_eq(fcntl(s->ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
}

static void side_init(struct side *s, const struct iw_alloc_ops *alloc, int cqe)
{
	struct iw_context_attr a = {.comp_mask = alloc ? IW_CONTEXT_ATTR_ALLOC : 0,
				    .alloc = alloc};
	side_open(s, &a, cqe);
}

static void side_fini(struct side *s)
{
	ck_assert_int_eq(iw_destroy_cq(s->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(s->pd), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(s->ch), 0);
	ck_assert_int_eq(iw_context_free(s->ctx), 0);
}

static void make_qp(struct side *s, struct iw_cm_id *id)
{
	struct iw_qp_init_attr qa = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1},
	};
	ck_assert_int_eq(iw_cm_create_qp(id, s->pd, &qa), 0);
}

/* A listener on 127.0.0.1 (port in *a) with this backlog and at most
 * max_pending handshakes waiting (0: the default). */
static struct iw_cm_id *listener_bl(struct side *s, uint32_t max_pending, int backlog,
				    struct sockaddr_in *a)
{
	struct iw_cm_id *l;
	*a = (struct sockaddr_in){.sin_family = AF_INET};
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(iw_cm_create_id(s->ch, &l, NULL), 0);
	if (max_pending) {
		struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_MAX_PENDING,
					 .max_pending = max_pending};
		ck_assert_int_eq(iw_cm_set_conn_opts(l, &o), 0);
	}
	ck_assert_int_eq(iw_cm_bind_addr(l, (struct sockaddr *)a), 0);
	ck_assert_int_eq(iw_cm_listen(l, backlog), 0);
	a->sin_port = ((struct sockaddr_in *)&l->local_addr)->sin_port;
	return l;
}

static struct iw_cm_id *listener(struct side *s, uint32_t max_pending, struct sockaddr_in *a)
{
	return listener_bl(s, max_pending, 2048, a);
}

static struct iw_cm_listener_stats stats_of(struct iw_cm_id *l)
{
	struct iw_cm_listener_stats st;
	ck_assert_int_eq(iw_cm_listener_stats(l, &st), 0);
	return st;
}

/* Wait until the listener holds exactly n pending handshakes. */
static void wait_pending(struct iw_cm_id *l, uint32_t n)
{
	int64_t end = now_ms() + WAIT_MS;
	while (stats_of(l).pending != n) {
		ck_assert_msg(now_ms() < end, "pending %u, want %u", stats_of(l).pending, n);
		poll(NULL, 0, 2);
	}
}

/* A raw TCP peer: silent, or the first half of an MPA Request key. */
static int raw_peer(const struct sockaddr_in *a, bool half)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)a, sizeof(*a)), 0);
	if (half)
		ck_assert_int_eq(send(fd, "MPA ID Req", 10, MSG_NOSIGNAL), 10);
	return fd;
}

/* The peer was reset (or closed): a read returns at once. */
static bool raw_was_dropped(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, WAIT_MS) != 1)
		return false;
	char c;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* ------------------------------------------------------------ pairs */

/* Connections driven through both channels: the client connects n, the
 * server accepts each request; done when both saw n ESTABLISHED. */
struct pairs {
	struct side *srv, *cli;
	struct iw_cm_id *l;
	struct event_base *srv_base; /* the server's loop, run here; NULL: its own thread */
	struct iw_cm_id **cids, **sids;
	int n, nsid, up_c, up_s, down_c, down_s;
};

static void pairs_connect(struct pairs *p, const struct sockaddr_in *a)
{
	for (int i = 0; i < p->n; i++) {
		struct iw_conn_param cp = {.connect_timeout_ms = WAIT_MS};
		ck_assert_int_eq(iw_cm_create_id(p->cli->ch, &p->cids[i], NULL), 0);
		make_qp(p->cli, p->cids[i]);
		ck_assert_int_eq(iw_cm_connect(p->cids[i], (const struct sockaddr *)a, &cp), 0);
	}
}

static void srv_event(struct pairs *p, struct iw_cm_event *ev)
{
	enum iw_cm_event_type t = ev->event;
	struct iw_cm_id *id = ev->id;
	ck_assert_msg(t == IW_CM_EVENT_CONNECT_REQUEST || t == IW_CM_EVENT_ESTABLISHED ||
			      t == IW_CM_EVENT_DISCONNECTED,
		      "server: %s", iw_cm_event_str(t));
	ck_assert_int_eq(iw_cm_ack_event(ev), 0);
	if (t == IW_CM_EVENT_CONNECT_REQUEST) {
		ck_assert_int_lt(p->nsid, p->n);
		p->sids[p->nsid++] = id;
		make_qp(p->srv, id);
		struct iw_conn_param cp = {0};
		ck_assert_int_eq(iw_cm_accept(id, &cp), 0);
	}
	p->up_s += t == IW_CM_EVENT_ESTABLISHED;
	p->down_s += t == IW_CM_EVENT_DISCONNECTED;
}

static void cli_event(struct pairs *p, struct iw_cm_event *ev)
{
	enum iw_cm_event_type t = ev->event;
	ck_assert_msg(t == IW_CM_EVENT_ESTABLISHED || t == IW_CM_EVENT_DISCONNECTED,
		      "client: %s (status %d)", iw_cm_event_str(t), ev->status);
	ck_assert_int_eq(iw_cm_ack_event(ev), 0);
	p->up_c += t == IW_CM_EVENT_ESTABLISHED;
	p->down_c += t == IW_CM_EVENT_DISCONNECTED;
}

/* Take events until done() holds. */
static void pairs_run(struct pairs *p, bool (*done)(const struct pairs *))
{
	int64_t end = now_ms() + WAIT_MS;
	while (!done(p)) {
		struct pollfd f[2] = {{.fd = p->srv->ch->fd, .events = POLLIN},
				      {.fd = p->cli->ch->fd, .events = POLLIN}};
		ck_assert_msg(now_ms() < end, "up %d/%d down %d/%d of %d", p->up_c, p->up_s,
			      p->down_c, p->down_s, p->n);
		if (p->srv_base)
			event_base_loop(p->srv_base, EVLOOP_NONBLOCK);
		poll(f, 2, p->srv_base ? 1 : 100);
		struct iw_cm_event *ev;
		while (iw_cm_get_event(p->srv->ch, &ev) == 0)
			srv_event(p, ev);
		while (iw_cm_get_event(p->cli->ch, &ev) == 0)
			cli_event(p, ev);
	}
}

static bool all_up(const struct pairs *p)
{
	return p->up_c == p->n && p->up_s == p->n;
}

static bool all_down(const struct pairs *p)
{
	return p->down_c == p->n && p->down_s == p->n;
}

static void pairs_init(struct pairs *p, struct side *srv, struct side *cli, int n)
{
	*p = (struct pairs){.srv = srv, .cli = cli, .n = n};
	p->cids = calloc((size_t)n, sizeof(*p->cids));
	p->sids = calloc((size_t)n, sizeof(*p->sids));
	ck_assert(p->cids && p->sids);
}

static void pairs_fini(struct pairs *p)
{
	for (int i = 0; i < p->n; i++)
		ck_assert_int_eq(iw_cm_destroy_id(p->cids[i]), 0);
	for (int i = 0; i < p->nsid; i++)
		ck_assert_int_eq(iw_cm_destroy_id(p->sids[i]), 0);
	free(p->cids);
	free(p->sids);
}

/* ------------------------------------------------------------ slow peers */

/* Four silent peers and a half-Request one hold every pending slot of a
 * listener allowing four; a well-behaved peer still gets in, and the
 * oldest pending peer is the one reset to make room. Without that the
 * newcomer was reset (rejected_full) for as long as the slow peers held
 * on: up to the MPA timeout each, or for ever for peers that reconnect. */
START_TEST(test_slow_peers_evicted)
{
	struct side srv, cli;
	side_init(&srv, NULL, 16);
	side_init(&cli, NULL, 16);
	struct sockaddr_in a;
	struct iw_cm_id *l = listener(&srv, 4, &a);
	int raw[5];
	for (int i = 0; i < 4; i++) {
		raw[i] = raw_peer(&a, i == 3);
		wait_pending(l, (uint32_t)i + 1);
	}
	raw[4] = raw_peer(&a, false); /* the fifth: the first one goes */
	ck_assert(raw_was_dropped(raw[0]));
	wait_pending(l, 4);
	struct pairs p;
	pairs_init(&p, &srv, &cli, 1);
	pairs_connect(&p, &a);
	pairs_run(&p, all_up);
	struct iw_cm_listener_stats st = stats_of(l);
	ck_assert_uint_eq(st.requests, 1);
	ck_assert_uint_eq(st.rejected_full, 2); /* raw[0], then raw[1] for the good one */
	ck_assert_uint_eq(st.pending, 3); /* raw[2..4]: the good one is raised */
	ck_assert(raw_was_dropped(raw[1]));
	pairs_fini(&p);
	for (int i = 0; i < 5; i++)
		close(raw[i]);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	side_fini(&cli);
	side_fini(&srv);
}
END_TEST

/* ------------------------------------------------------------ burst */

/* Silent and half-Request peers first, more than the listener lets wait;
 * then the well-behaved connects, all at once (a tenth under valgrind). */
static void burst_sizes(int *slow, int *good, uint32_t *pending)
{
	int div = tu_under_valgrind() ? 10 : 1;
	*slow = 300 / div;
	*good = 1000 / div;
	*pending = (uint32_t)(256 / div);
}

/* A listener full of slow peers, then a thousand connects at once: every
 * one is accepted and handshaken (the slow ones make room), none times
 * out, and the loop stays responsive enough that all finish. */
START_TEST(test_burst_with_slow_peers)
{
	int nslow, ngood;
	uint32_t npend;
	burst_sizes(&nslow, &ngood, &npend);
	if (!fds_room(2 * nslow + 2 * ngood)) {
		fprintf(stderr, "accept burst: RLIMIT_NOFILE too low, skipped\n");
		return;
	}
	struct side srv, cli;
	side_init(&srv, NULL, 4 * ngood);
	side_init(&cli, NULL, 4 * ngood);
	struct sockaddr_in a;
	struct iw_cm_id *l = listener(&srv, npend, &a);
	int *raw = calloc((size_t)nslow, sizeof(int));
	ck_assert_ptr_nonnull(raw);
	for (int i = 0; i < nslow; i++)
		raw[i] = raw_peer(&a, i % 2);
	wait_pending(l, npend);
	struct pairs p;
	pairs_init(&p, &srv, &cli, ngood);
	pairs_connect(&p, &a);
	pairs_run(&p, all_up);
	struct iw_cm_listener_stats st = stats_of(l);
	ck_assert_uint_eq(st.requests, (uint64_t)ngood);
	ck_assert_uint_eq(st.accepted, (uint64_t)(ngood + nslow));
	ck_assert_uint_eq(st.timed_out, 0);
	pairs_fini(&p);
	for (int i = 0; i < nslow; i++)
		close(raw[i]);
	free(raw);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	side_fini(&cli);
	side_fini(&srv);
}
END_TEST

/* ------------------------------------------------------------ backlog */

/* The kernel's view of the TCP socket listening on 127.0.0.1:port: for a
 * listening socket idiag_wqueue is its backlog (sk_max_ack_backlog, what
 * ss -ltn prints as Send-Q) and idiag_rqueue the connections waiting in
 * its accept queue (Recv-Q). sock_diag answers unprivileged processes. */
static void kernel_listen_q(uint16_t port_be, int *backlog, int *queued)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	ck_assert_int_ge(fd, 0);
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {.nh = {.nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		 .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = 1u << TCP_LISTEN}};
	ck_assert_int_eq(send(fd, &req, sizeof(req), 0), (ssize_t)sizeof(req));
	*backlog = *queued = -1;
	for (bool done = false; !done;) {
		static char buf[32768];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		ck_assert_int_gt(n, 0);
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			ck_assert_int_ne(h->nlmsg_type, NLMSG_ERROR);
			done = h->nlmsg_type == NLMSG_DONE;
			if (done)
				break;
			struct inet_diag_msg *m = NLMSG_DATA(h);
			if (m->id.idiag_sport == port_be && m->id.idiag_src[0] == htonl(INADDR_LOOPBACK)) {
				*backlog = (int)m->idiag_wqueue;
				*queued = (int)m->idiag_rqueue;
			}
		}
	}
	close(fd);
}

static int kernel_backlog(uint16_t port_be)
{
	int b, q;
	kernel_listen_q(port_be, &b, &q);
	return b;
}

/* Wait until the kernel holds at least n connections for the listener
 * on port; how many it holds. */
static int kernel_queued(uint16_t port_be, int n)
{
	int64_t end = now_ms() + WAIT_MS;
	int b, q;
	for (kernel_listen_q(port_be, &b, &q); q < n; kernel_listen_q(port_be, &b, &q)) {
		ck_assert_msg(now_ms() < end, "%d connections queued, want %d", q, n);
		poll(NULL, 0, 2);
	}
	return q;
}

static int somaxconn(void)
{
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
	int v = SOMAXCONN;
	if (f) {
		ck_assert_int_eq(fscanf(f, "%d", &v), 1);
		fclose(f);
	}
	return v < SOMAXCONN ? v : SOMAXCONN;
}

/* The backlog given is the kernel's (0 or less: SOMAXCONN, which the
 * kernel caps at net.core.somaxconn). An odd value, so that neither
 * default could pass for it. */
START_TEST(test_backlog_reaches_kernel)
{
	struct side srv;
	side_init(&srv, NULL, 16);
	const int given[] = {7, 1, 0, -1};
	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
		struct sockaddr_in a;
		struct iw_cm_id *l = listener_bl(&srv, 0, given[i], &a);
		int want = given[i] > 0 ? given[i] : somaxconn();
		ck_assert_int_eq(kernel_backlog(a.sin_port), want);
		ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	}
	side_fini(&srv);
}
END_TEST

/* A listener that takes over a parked socket (relisten_ms: the same
 * address and port listened on again) has its own backlog, not the one
 * the socket was parked with. */
START_TEST(test_backlog_after_relisten)
{
	struct side srv;
	side_init(&srv, NULL, 16);
	struct sockaddr_in a;
	struct iw_cm_id *l = listener_bl(&srv, 0, 7, &a);
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_RELISTEN, .relisten_ms = 5000};
	ck_assert_int_eq(iw_cm_set_conn_opts(l, &o), 0);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(kernel_backlog(a.sin_port), 7); /* parked: min(7, 16) */
	ck_assert_int_eq(iw_cm_create_id(srv.ch, &l, NULL), 0);
	ck_assert_int_eq(iw_cm_bind_addr(l, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(iw_cm_listen(l, 5), 0);
	ck_assert_int_eq(kernel_backlog(a.sin_port), 5);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(kernel_backlog(a.sin_port), -1);
	side_fini(&srv);
}
END_TEST

/* Three times the backlog connect at once while the server's loop (this
 * thread's base) is not running: the kernel's accept queue fills to the
 * backlog and no further (Linux holds backlog + 1 and drops the SYNs
 * beyond, which the peers send again a second later); then the loop runs,
 * drains the queue again and again, and every connection reaches
 * ESTABLISHED. */
START_TEST(test_burst_over_backlog)
{
	enum { BACKLOG = 16, N = 3 * BACKLOG };
	struct event_base *base = event_base_new();
	ck_assert_ptr_nonnull(base);
	struct iw_context_attr sa = {.base = base};
	struct side srv, cli;
	side_open(&srv, &sa, 4 * N);
	side_init(&cli, NULL, 4 * N);
	struct sockaddr_in a;
	struct iw_cm_id *l = listener_bl(&srv, 0, BACKLOG, &a);
	ck_assert_int_eq(kernel_backlog(a.sin_port), BACKLOG);
	struct pairs p;
	pairs_init(&p, &srv, &cli, N);
	p.srv_base = base;
	pairs_connect(&p, &a);
	ck_assert_int_le(kernel_queued(a.sin_port, BACKLOG), BACKLOG + 1);
	pairs_run(&p, all_up);
	struct iw_cm_listener_stats st = stats_of(l);
	ck_assert_uint_eq(st.accepted, (uint64_t)N);
	ck_assert_uint_eq(st.timed_out, 0);
	pairs_fini(&p);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	side_fini(&cli);
	side_fini(&srv);
	event_base_free(base);
}
END_TEST

/* ------------------------------------------------------------ churn */

#define CHURN_CYCLES 2000
#define CHURN_WARM 100

struct churn {
	struct side srv, cli;
	struct iw_cm_id *l;
	struct sockaddr_in a;
	struct iw_mr *smr, *cmr;
	uint8_t sbuf[64], cbuf[64];
};

/* One Send each way on a fresh pair: the data path is part of the cycle. */
static void churn_xfer(struct churn *c, struct pairs *p)
{
	struct iw_qp *qs = p->sids[0]->qp, *qc = p->cids[0]->qp;
	struct iw_sge ss = {(uintptr_t)c->sbuf, 64, c->smr->lkey};
	struct iw_sge cs = {(uintptr_t)c->cbuf, 64, c->cmr->lkey};
	struct iw_recv_wr rs = {.wr_id = 1, .sg_list = &ss, .num_sge = 1}, rc = rs, *bad_r;
	rc.sg_list = &cs;
	ck_assert_int_eq(iw_post_recv(qs, &rs, &bad_r), 0);
	ck_assert_int_eq(iw_post_recv(qc, &rc, &bad_r), 0);
	struct iw_send_wr w = {.wr_id = 2, .sg_list = &cs, .num_sge = 1, .opcode = IW_WR_SEND,
			       .send_flags = IW_SEND_SIGNALED}, *bad;
	ck_assert_int_eq(iw_post_send(qc, &w, &bad), 0);
	w.sg_list = &ss;
	ck_assert_int_eq(iw_post_send(qs, &w, &bad), 0);
	struct side *sd[2] = {&c->srv, &c->cli};
	for (int k = 0; k < 2; k++) {
		int got = 0;
		int64_t end = now_ms() + WAIT_MS;
		while (got < 2) {
			struct iw_wc wc;
			int n = iw_poll_cq(sd[k]->cq, 1, &wc);
			ck_assert_int_ge(n, 0);
			if (n)
				ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
			got += n;
			ck_assert(now_ms() < end);
			if (!n)
				poll(NULL, 0, 0);
		}
	}
}

static void churn_cycle(struct churn *c)
{
	struct pairs p;
	pairs_init(&p, &c->srv, &c->cli, 1);
	pairs_connect(&p, &c->a);
	pairs_run(&p, all_up);
	churn_xfer(c, &p);
	ck_assert_int_eq(iw_cm_disconnect(p.cids[0]), 0);
	pairs_run(&p, all_down);
	pairs_fini(&p);
}

/* 2,000 cycles: after the first hundred (caches, the loop's first
 * allocations) the descriptors and live heap bytes of both contexts do
 * not grow. A leak of one block or one socket per cycle shows here. */
START_TEST(test_churn_flat)
{
	struct churn c;
	memset(&c, 0, sizeof(c));
	live_bytes = 0;
	side_init(&c.srv, &counting, 64);
	side_init(&c.cli, &counting, 64);
	c.smr = iw_reg_mr(c.srv.pd, c.sbuf, sizeof(c.sbuf), IW_ACCESS_LOCAL_WRITE);
	c.cmr = iw_reg_mr(c.cli.pd, c.cbuf, sizeof(c.cbuf), IW_ACCESS_LOCAL_WRITE);
	ck_assert(c.smr && c.cmr);
	c.l = listener(&c.srv, 0, &c.a);
	int cycles = tu_under_valgrind() ? 200 : CHURN_CYCLES;
	long heap0 = 0;
	int fds0 = 0;
	for (int i = 0; i < cycles; i++) {
		if (i == CHURN_WARM) {
			heap0 = atomic_load(&live_bytes);
			fds0 = open_fds();
		}
		churn_cycle(&c);
	}
	long heap = atomic_load(&live_bytes);
	ck_assert_int_eq(open_fds(), fds0);
	ck_assert_msg(heap <= heap0, "live heap %ld after %d cycles, %ld after %d", heap, cycles,
		      heap0, CHURN_WARM);
	ck_assert_uint_eq(stats_of(c.l).requests, (uint64_t)cycles);
	ck_assert_int_eq(iw_cm_destroy_id(c.l), 0);
	ck_assert_int_eq(iw_dereg_mr(c.smr), 0);
	ck_assert_int_eq(iw_dereg_mr(c.cmr), 0);
	side_fini(&c.cli);
	side_fini(&c.srv);
	ck_assert_int_eq(atomic_load(&live_bytes), 0);
}
END_TEST

/* ------------------------------------------------------------ no hop */

struct nohop {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_id *id;
	int rc_id, rc_qp;
	atomic_bool done;
};

static void *nohop_main(void *arg)
{
	struct nohop *h = arg;
	h->rc_id = iw_cm_create_id(h->ch, &h->id, NULL);
	struct iw_qp_init_attr qa = {
		.send_cq = h->cq, .recv_cq = h->cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};
	h->rc_qp = h->rc_id ? -1 : iw_cm_create_qp(h->id, h->pd, &qa);
	atomic_store(&h->done, true);
	return NULL;
}

/* Creating an id and its QP from a thread that is not the loop's, with the
 * application's base not dispatched yet: both return at once. They used to
 * be queued to the loop and wait for it (two thread switches each, most of
 * a connection setup's cost beyond TCP), so here they never returned. */
START_TEST(test_create_without_hop)
{
	struct event_base *base = event_base_new();
	ck_assert_ptr_nonnull(base);
	struct iw_context_attr a = {.base = base};
	struct nohop h = {0};
	h.ctx = iw_context_new(&a);
	ck_assert_ptr_nonnull(h.ctx);
	h.ch = iw_cm_create_channel(h.ctx);
	h.pd = iw_alloc_pd(h.ctx);
	h.cq = iw_create_cq(h.ctx, 4, NULL, NULL, 0);
	ck_assert(h.ch && h.pd && h.cq);
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, nohop_main, &h), 0);
	int64_t end = now_ms() + WAIT_MS;
	while (!atomic_load(&h.done) && now_ms() < end)
		poll(NULL, 0, 1);
	ck_assert_msg(atomic_load(&h.done), "create_id/create_qp waited for a loop not running");
	pthread_join(th, NULL);
	ck_assert_int_eq(h.rc_id, 0);
	ck_assert_int_eq(h.rc_qp, 0);
	ck_assert_ptr_nonnull(h.id->qp);
	/* This thread made the context: its calls run inline. */
	ck_assert_int_eq(iw_cm_destroy_id(h.id), 0);
	ck_assert_int_eq(iw_destroy_cq(h.cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(h.pd), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(h.ch), 0);
	ck_assert_int_eq(iw_context_free(h.ctx), 0);
	event_base_free(base);
}
END_TEST

/* ------------------------------------------------------------ relisten */

/* A listener on a (127.0.0.1 or any, port given or 0, set in *a) that
 * parks its socket for ms when destroyed. */
static struct iw_cm_id *relistener(struct side *s, struct sockaddr_in *a, uint32_t ms)
{
	struct iw_cm_id *l;
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_RELISTEN, .relisten_ms = ms};
	ck_assert_int_eq(iw_cm_create_id(s->ch, &l, NULL), 0);
	ck_assert_int_eq(iw_cm_set_conn_opts(l, &o), 0);
	ck_assert_int_eq(iw_cm_bind_addr(l, (struct sockaddr *)a), 0);
	ck_assert_int_eq(iw_cm_listen(l, 4), 0);
	a->sin_port = ((struct sockaddr_in *)&l->local_addr)->sin_port;
	return l;
}

static struct sockaddr_in loopback_any_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* connect(2) once, no retry: 0 or the errno. */
static int dial_once(const struct sockaddr_in *a, int *out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a))) {
		int e = errno;
		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

/* perftest -R's server: its first listener goes, and the client's next
 * connection (which it does not dial again when refused) comes before the
 * second listener on the same port. Without relisten_ms it is refused;
 * with it, a plain TCP peer and a libiwarp client (refused_retry_ms 0)
 * that came in between are both accepted by the second listener, and the
 * libiwarp pair gets ESTABLISHED. */
START_TEST(test_relisten_gap)
{
	struct side srv, cli;
	side_init(&srv, NULL, 16);
	side_init(&cli, NULL, 16);
	struct sockaddr_in a = loopback_any_port();
	int raw;
	ck_assert_int_eq(iw_cm_destroy_id(relistener(&srv, &a, 0)), 0);
	ck_assert_int_eq(dial_once(&a, &raw), ECONNREFUSED);
	struct iw_cm_id *l = relistener(&srv, &a, WAIT_MS);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	ck_assert_int_eq(dial_once(&a, &raw), 0);
	struct pairs p;
	pairs_init(&p, &srv, &cli, 1);
	pairs_connect(&p, &a);
	l = relistener(&srv, &a, WAIT_MS);
	wait_pending(l, 1); /* the raw peer, which sends no Request */
	pairs_run(&p, all_up);
	ck_assert_uint_eq(stats_of(l).accepted, 2);
	close(raw);
	pairs_fini(&p);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	side_fini(&cli);
	side_fini(&srv);
}
END_TEST

/* Nobody listens again: the socket is closed once relisten_ms is up, not
 * before; the peer it queued is reset, the port refuses again and no
 * descriptor is left. */
START_TEST(test_relisten_expires)
{
	struct side srv;
	side_init(&srv, NULL, 16);
	int fds = open_fds();
	struct sockaddr_in a = loopback_any_port();
	struct iw_cm_id *l = relistener(&srv, &a, 200);
	int64_t t0 = now_ms();
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	int raw;
	ck_assert_int_eq(dial_once(&a, &raw), 0);
	ck_assert(raw_was_dropped(raw));
	ck_assert_int_ge(now_ms() - t0, 190); /* timers may round down a little */
	close(raw);
	ck_assert_int_eq(dial_once(&a, &raw), ECONNREFUSED);
	ck_assert_int_eq(open_fds(), fds);
	side_fini(&srv);
}
END_TEST

/* A listener on 127.0.0.1 (port in *a) destroyed with its socket parked
 * for WAIT_MS, and a plain TCP peer that connected since: its fd. */
static int parked_with_peer(struct side *srv, struct sockaddr_in *a)
{
	*a = loopback_any_port();
	ck_assert_int_eq(iw_cm_destroy_id(relistener(srv, a, WAIT_MS)), 0);
	int raw;
	ck_assert_int_eq(dial_once(a, &raw), 0);
	return raw;
}

/* A listener on the parked port and another address (any) gets it: the
 * parked socket, which would make its bind fail, is closed first. */
START_TEST(test_relisten_other_addr)
{
	struct side srv;
	side_init(&srv, NULL, 16);
	struct sockaddr_in a;
	int raw = parked_with_peer(&srv, &a);
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = a.sin_port};
	struct iw_cm_id *l = relistener(&srv, &any, 0);
	ck_assert(raw_was_dropped(raw));
	ck_assert_uint_eq(stats_of(l).accepted, 0);
	close(raw);
	ck_assert_int_eq(iw_cm_destroy_id(l), 0);
	side_fini(&srv);
}
END_TEST

/* The context's end does not wait for relisten_ms: its parked sockets
 * close with it (the peers reset, no descriptor left; valgrind sees the
 * entries freed). */
START_TEST(test_relisten_context_free)
{
	int fds = open_fds();
	struct side srv;
	side_init(&srv, NULL, 16);
	struct sockaddr_in a;
	int raw = parked_with_peer(&srv, &a);
	side_fini(&srv);
	ck_assert(raw_was_dropped(raw));
	close(raw);
	ck_assert_int_eq(open_fds(), fds);
}
END_TEST

Suite *suite_accept(void)
{
	Suite *s = suite_create("accept");
	TCase *tc = tcase_create("accept");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_slow_peers_evicted);
	tcase_add_test(tc, test_burst_with_slow_peers);
	tcase_add_test(tc, test_create_without_hop);
	tcase_add_test(tc, test_backlog_reaches_kernel);
	tcase_add_test(tc, test_backlog_after_relisten);
	tcase_add_test(tc, test_burst_over_backlog);
	tcase_add_test(tc, test_relisten_gap);
	tcase_add_test(tc, test_relisten_expires);
	tcase_add_test(tc, test_relisten_other_addr);
	tcase_add_test(tc, test_relisten_context_free);
	suite_add_tcase(s, tc);
	tc = tcase_create("churn");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_churn_flat);
	suite_add_tcase(s, tc);
	return s;
}
