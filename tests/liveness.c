/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Silent-peer detection (issue 16, "socket and liveness options"): a
 * connection between two network namespaces (made by tests/liveness.sh,
 * joined by a veth pair) whose one end goes silent, packets dropped and
 * nothing sent back (a blackhole route on its side: no RST, no ICMP, no
 * carrier change on the other side). The other end, told how long to wait
 * by its connection options, must end the connection itself: DISCONNECTED
 * with status ETIMEDOUT, the QP in ERR, every outstanding WR completed
 * once with IW_WC_WR_FLUSH_ERR.
 *
 *   liveness user-timeout NS_A NS_B ADDR_A ADDR_B
 *     The client (in NS_A) sets TCP_USER_TIMEOUT 1 s and a 16 KiB send
 *     buffer on its id, posts receives, connects; the server goes silent;
 *     the client posts four 1 MiB Sends, an RDMA Read and an RDMA Write
 *     that cannot get through.
 *   liveness keepalive NS_A NS_B ADDR_A ADDR_B
 *     The listener (in NS_B) sets keepalive (idle 1 s, every 1 s, 2
 *     probes); the accepted id inherits it; the client goes silent while
 *     the connection is idle with receives posted on the server.
 *
 * One process: each context's loop thread is started in its side's
 * namespace (setns before iw_context_new; a socket stays in the namespace
 * it was made in). Detection is asserted within a generous bound (10x the
 * configured time; without the option the kernel would wait minutes) and
 * not implausibly early: at least half the configured time (a segment
 * sent just before the silence, whose ACK the blackhole ate, may start
 * the user timeout a little before the test's clock). Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#define MIB (1024u * 1024u)
#define NUM_RECV 4
#define NUM_SEND 6 /* four Sends, a Read, a Write */
#define RECV_ID 100
#define SETUP_MS 10000

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("liveness: FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#define CHECK(cond, ...)                  \
	do {                              \
		if (!(cond))              \
			fail(__VA_ARGS__); \
	} while (0)

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void enter_ns(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK(setns(fd, CLONE_NEWNET) == 0, "setns %s: %s", name, strerror(errno));
	close(fd);
}

/* ------------------------------------------------------------ a side */

struct side {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_id *id; /* the connection's */
	uint8_t *buf;
	struct iw_mr *mr;
};

/* A context whose loop thread (and so every socket it makes) lives in ns. */
static void side_init(struct side *s, const char *ns)
{
	enter_ns(ns);
	s->ctx = iw_context_new(NULL);
	CHECK(s->ctx, "iw_context_new: %s", strerror(errno));
	s->ch = iw_cm_create_channel(s->ctx);
	CHECK(s->ch, "iw_cm_create_channel: %s", strerror(errno));
	int fl = fcntl(s->ch->fd, F_GETFL);
	CHECK(fcntl(s->ch->fd, F_SETFL, fl | O_NONBLOCK) == 0, "fcntl");
	s->pd = iw_alloc_pd(s->ctx);
	s->cq = iw_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->buf = calloc(1, MIB);
	CHECK(s->pd && s->cq && s->buf, "pd, cq or buffer: %s", strerror(errno));
	s->mr = iw_reg_mr(s->pd, s->buf, MIB,
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	CHECK(s->mr, "iw_reg_mr: %s", strerror(errno));
}

static void side_fini(struct side *s)
{
	CHECK(iw_cm_destroy_id(s->id) == 0, "destroy id");
	CHECK(iw_dereg_mr(s->mr) == 0, "dereg");
	CHECK(iw_destroy_cq(s->cq) == 0, "destroy cq");
	CHECK(iw_dealloc_pd(s->pd) == 0, "dealloc pd");
	CHECK(iw_cm_destroy_channel(s->ch) == 0, "destroy channel");
	CHECK(iw_context_free(s->ctx) == 0, "context free");
	free(s->buf);
}

static void make_qp(struct side *s, struct iw_cm_id *id)
{
	struct iw_qp_init_attr qa = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	int rc = iw_cm_create_qp(id, s->pd, &qa);
	CHECK(rc == 0, "iw_cm_create_qp: %s", strerror(rc));
	s->id = id;
}

static void post_recvs(struct side *s)
{
	for (int i = 0; i < NUM_RECV; i++) {
		struct iw_sge sge = {.addr = (uintptr_t)s->buf + (size_t)i * 4096, .length = 4096,
				     .lkey = s->mr->lkey};
		struct iw_recv_wr wr = {.wr_id = RECV_ID + (uint64_t)i, .sg_list = &sge, .num_sge = 1};
		struct iw_recv_wr *bad;
		CHECK(iw_post_recv(s->id->qp, &wr, &bad) == 0, "iw_post_recv");
	}
}

/* The next CM event of s, which must be want; returns its status. */
static int expect_event(struct side *s, enum iw_cm_event_type want, long long deadline,
			struct iw_cm_id **out_id, struct iw_conn_param *out_pd)
{
	struct iw_cm_event *ev;
	int rc;
	while ((rc = iw_cm_get_event(s->ch, &ev)) == EAGAIN) {
		long long left = deadline - now_ms();
		CHECK(left > 0, "no %s in time", iw_cm_event_str(want));
		struct pollfd p = {.fd = s->ch->fd, .events = POLLIN};
		poll(&p, 1, (int)left);
	}
	CHECK(rc == 0, "iw_cm_get_event: %s", strerror(rc));
	CHECK(ev->event == want, "expected %s, got %s (status %d)", iw_cm_event_str(want),
	      iw_cm_event_str(ev->event), ev->status);
	int status = ev->status;
	if (out_id)
		*out_id = ev->id;
	if (out_pd && ev->param.private_data_len == sizeof(uint64_t) + sizeof(uint32_t))
		memcpy((void *)out_pd->private_data, ev->param.private_data, 12);
	iw_cm_ack_event(ev);
	return status;
}

/* ------------------------------------------------------------ the pair */

struct pair {
	struct side srv, cli;
	struct iw_cm_id *listen;
	uint64_t raddr; /* the server's buffer, for the Read and Write */
	uint32_t rkey;
};

static void pair_listen(struct pair *p, const char *addr, const struct iw_conn_opts *lopts)
{
	CHECK(iw_cm_create_id(p->srv.ch, &p->listen, NULL) == 0, "create listen id");
	if (lopts)
		CHECK(iw_cm_set_conn_opts(p->listen, lopts) == 0, "listener options");
	struct sockaddr_in a = {.sin_family = AF_INET};
	CHECK(inet_pton(AF_INET, addr, &a.sin_addr) == 1, "address %s", addr);
	CHECK(iw_cm_bind_addr(p->listen, (struct sockaddr *)&a) == 0, "bind");
	int rc = iw_cm_listen(p->listen, 4);
	CHECK(rc == 0, "listen on %s: %s", addr, strerror(rc));
}

static void pair_connect(struct pair *p, const struct iw_conn_opts *copts)
{
	long long dl = now_ms() + SETUP_MS;
	struct iw_cm_id *cid, *sid;
	CHECK(iw_cm_create_id(p->cli.ch, &cid, NULL) == 0, "create client id");
	if (copts)
		CHECK(iw_cm_set_conn_opts(cid, copts) == 0, "client options");
	make_qp(&p->cli, cid);
	post_recvs(&p->cli);
	int rc = iw_cm_connect(cid, (struct sockaddr *)&p->listen->local_addr, NULL);
	CHECK(rc == 0, "connect: %s", strerror(rc));
	expect_event(&p->srv, IW_CM_EVENT_CONNECT_REQUEST, dl, &sid, NULL);
	make_qp(&p->srv, sid);
	post_recvs(&p->srv);
	uint8_t pd[12];
	uint64_t addr = (uintptr_t)p->srv.buf;
	memcpy(pd, &addr, 8);
	memcpy(pd + 8, &p->srv.mr->rkey, 4);
	struct iw_conn_param cp = {.private_data = pd, .private_data_len = 12,
				   .responder_resources = 4, .initiator_depth = 4};
	CHECK(iw_cm_accept(sid, &cp) == 0, "accept");
	uint8_t got[12] = {0};
	struct iw_conn_param gp = {.private_data = got};
	CHECK(expect_event(&p->cli, IW_CM_EVENT_ESTABLISHED, dl, NULL, &gp) == 0, "client up");
	CHECK(expect_event(&p->srv, IW_CM_EVENT_ESTABLISHED, dl, NULL, NULL) == 0, "server up");
	memcpy(&p->raddr, got, 8);
	memcpy(&p->rkey, got + 8, 4);
	CHECK(p->rkey == p->srv.mr->rkey, "the server's STag came through");
}

/* Drop everything ns sends to addr: its peer hears nothing more. */
static void silence(const char *ns, const char *addr)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "ip -n %s route add blackhole %s/32", ns, addr);
	CHECK(system(cmd) == 0, "%s failed", cmd);
}

/* Every WR of s outstanding at the end completes once, flushed; nothing
 * else arrives. send_ids: wr_ids 1..n_send were posted to the SQ. */
static void check_flushed(struct side *s, int n_send)
{
	int seen[RECV_ID + NUM_RECV] = {0}, total = 0;
	long long dl = now_ms() + SETUP_MS;
	while (total < n_send + NUM_RECV) {
		struct iw_wc wc[16];
		int n = iw_poll_cq(s->cq, 16, wc);
		CHECK(n >= 0, "iw_poll_cq: %d", n);
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;
			CHECK((id >= 1 && id <= (uint64_t)n_send) ||
				      (id >= RECV_ID && id < RECV_ID + NUM_RECV),
			      "unknown wr_id %llu", (unsigned long long)id);
			CHECK(!seen[id]++, "wr_id %llu completed twice", (unsigned long long)id);
			CHECK(wc[i].status == IW_WC_WR_FLUSH_ERR, "wr_id %llu: %s, not flushed",
			      (unsigned long long)id, iw_wc_status_str(wc[i].status));
		}
		total += n;
		CHECK(now_ms() < dl, "only %d of %d WRs completed", total, n_send + NUM_RECV);
		if (!n)
			usleep(1000);
	}
	usleep(100 * 1000);
	struct iw_wc extra;
	CHECK(iw_poll_cq(s->cq, 1, &extra) == 0, "a completion after all were flushed");
	struct iw_qp_attr qa;
	struct iw_qp_init_attr qi;
	CHECK(iw_query_qp(s->id->qp, &qa, IW_QP_STATE, &qi) == 0, "query qp");
	CHECK(qa.qp_state == IW_QPS_ERR, "QP state %d, not ERR", (int)qa.qp_state);
}

/* Wait for s's DISCONNECTED: status ETIMEDOUT, in [lo_ms, hi_ms] after t0. */
static long long detected(struct side *s, long long t0, long long lo_ms, long long hi_ms)
{
	int st = expect_event(s, IW_CM_EVENT_DISCONNECTED, t0 + hi_ms, NULL, NULL);
	long long took = now_ms() - t0;
	CHECK(st == ETIMEDOUT, "DISCONNECTED status %d (%s), not ETIMEDOUT", st, strerror(st));
	CHECK(took >= lo_ms, "detected after %lld ms, sooner than the options allow (%lld ms)",
	      took, lo_ms);
	return took;
}

static void post_stuck_work(struct pair *p)
{
	struct iw_qp *qp = p->cli.id->qp;
	for (uint64_t i = 1; i <= NUM_SEND; i++) {
		uint32_t len = i <= 4 ? MIB : 65536;
		struct iw_sge sge = {.addr = (uintptr_t)p->cli.buf, .length = len,
				     .lkey = p->cli.mr->lkey};
		struct iw_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1,
					.opcode = IW_WR_SEND, .send_flags = IW_SEND_SIGNALED};
		if (i == 5)
			wr.opcode = IW_WR_RDMA_READ;
		if (i == 6)
			wr.opcode = IW_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = p->raddr;
		wr.wr.rdma.rkey = p->rkey;
		struct iw_send_wr *bad;
		int rc = iw_post_send(qp, &wr, &bad);
		CHECK(rc == 0, "iw_post_send %llu: %s", (unsigned long long)i, strerror(rc));
	}
}

/* TCP_USER_TIMEOUT on the client's id, with data it cannot deliver. */
static void run_user_timeout(struct pair *p, const char *ns_b, const char *addr_a)
{
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_USER_TIMEOUT | IW_CONN_OPTS_SNDBUF,
				 .user_timeout_ms = 1000, .sndbuf = 16384};
	pair_connect(p, &o);
	silence(ns_b, addr_a);
	long long t0 = now_ms();
	post_stuck_work(p);
	long long took = detected(&p->cli, t0, 500, 10 * 1000);
	check_flushed(&p->cli, NUM_SEND);
	printf("liveness: user-timeout 1000 ms: DISCONNECTED ETIMEDOUT after %lld ms, "
	       "%d WRs flushed once each\n", took, NUM_SEND + NUM_RECV);
}

/* Keepalive set on the listener, inherited by the id it accepts. */
static void run_keepalive(struct pair *p, const char *ns_a, const char *addr_b)
{
	pair_connect(p, NULL);
	struct iw_conn_opts got;
	CHECK(iw_cm_get_conn_opts(p->srv.id, &got) == 0, "get options");
	CHECK(got.keepalive && got.keepalive_idle_s == 1 && got.keepalive_cnt == 2,
	      "the accepted id did not inherit the listener's keepalive");
	silence(ns_a, addr_b);
	long long t0 = now_ms();
	/* Probes start within idle (1 s) of the last segment, which came
	 * before t0; the peer is given up 2 unanswered probes 1 s apart. */
	long long took = detected(&p->srv, t0, 2000, 10 * 3000);
	check_flushed(&p->srv, 0);
	printf("liveness: keepalive 1 s + 2 x 1 s: DISCONNECTED ETIMEDOUT after %lld ms, "
	       "%d receives flushed once each\n", took, NUM_RECV);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: liveness user-timeout|keepalive NS_A NS_B ADDR_A ADDR_B\n");
		return 2;
	}
	const char *mode = argv[1], *ns_a = argv[2], *ns_b = argv[3];
	const char *addr_a = argv[4], *addr_b = argv[5];
	struct pair p;
	memset(&p, 0, sizeof(p));
	struct iw_conn_opts ka = {.comp_mask = IW_CONN_OPTS_KEEPALIVE, .keepalive = true,
				  .keepalive_idle_s = 1, .keepalive_intvl_s = 1,
				  .keepalive_cnt = 2};
	side_init(&p.srv, ns_b);
	pair_listen(&p, addr_b, strcmp(mode, "keepalive") ? NULL : &ka);
	side_init(&p.cli, ns_a);
	if (!strcmp(mode, "user-timeout"))
		run_user_timeout(&p, ns_b, addr_a);
	else if (!strcmp(mode, "keepalive"))
		run_keepalive(&p, ns_a, addr_b);
	else
		fail("unknown mode %s", mode);
	side_fini(&p.cli);
	CHECK(iw_cm_destroy_id(p.listen) == 0, "destroy listener");
	side_fini(&p.srv);
	return 0;
}
