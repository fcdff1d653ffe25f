/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bigping: rping's protocol over the standard rdma-core stack (librdmacm,
 * libibverbs), for pings larger than rping allows.
 *
 * It is not part of libiwarp. It runs in the interop guest, on the kernel's
 * siw, as the peer of iwarp-ping for the 1 MiB pings of
 * tests/interop/scn-10-ping.sh: rping (rdma-core's
 * librdmacm/examples/rping.c) refuses -S above 65535, and the point of the
 * case is a real kernel iWARP stack at the other end, reached through the
 * same verbs and CM calls every rdma-core application makes. It is built
 * on the host (Debian's librdmacm-dev and libibverbs-dev) and run in the
 * guest, which has the same Debian libraries and the siw provider.
 *
 * One ping, as rping does it (and iwarp-ping, tools/ping.c):
 *   client: Send   advertisement of its source buffer, filled with the ping
 *   server: RDMA READ of that buffer into its own, then a go-ahead Send
 *   client: Send   advertisement of its sink buffer
 *   server: RDMA WRITE of what it read into that sink, then a go-ahead Send
 *   client: -V compares source and sink; -v prints the sink
 * An advertisement is 16 octets, big-endian: address (8), rkey (4), size
 * (4). A go-ahead is 16 octets nobody reads (rping's server sends zeros).
 * The client disconnects after -C pings; a server takes a disconnect
 * between two pings as the end of the run.
 *
 * What differs from rping, and why:
 *  - Sizes up to 16 MiB (rping: 65535).
 *  - Every wait has a deadline (-T): a test must fail, never hang. The CM
 *    and completion channels are nonblocking and polled together, in one
 *    thread, so a DISCONNECTED event also ends a wait for a completion.
 *  - The server with -C stops after that many pings and fails if the client
 *    leaves earlier (rping's server ignores -C); with -V it checks that
 *    what its READ brought is the ping the client must have sent (rping's
 *    server checks nothing), so the data is verified in both directions.
 *  - Both roles ask for IRD = ORD = 1 explicitly (rping's server accepts
 *    with NULL parameters). siw takes the ULP's values as they are: a
 *    server whose ORD is 0 cannot post its RDMA READ at all.
 *  - Exit status: 0 success, 1 failure after connecting (peer lost,
 *    timeout, error), 2 usage, 3 data mismatch (-V), 4 no connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rping_proto.h"

enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_MISMATCH = 3,
	EXIT_NOCONN = 4,
};

#define MIN_SIZE PING_MIN_SIZE
#define MAX_SIZE (16L << 20)
#define DEFAULT_PORT 7174
#define DEFAULT_SIZE 64
#define DEFAULT_TIMEOUT_S 30
/* Address and route resolution: a local lookup, as rping's 2 s. */
#define RESOLVE_MS 2000
/* How long a disconnect may take to be confirmed before we tear down. */
#define CLOSE_GRACE_MS 5000

struct opts {
	int role; /* 's' or 'c' */
	const char *addr;
	int port;
	long count; /* 0: until the client leaves (server) or forever (client) */
	long size;
	bool verbose, validate;
	int debug;
	int timeout_ms;
};

/* Everything one connection uses. */
struct peer {
	const struct opts *o;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen_id; /* server */
	struct rdma_cm_id *id;        /* the connection */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	/* Apart, so that a wait for a Send's completion never has to set a
	 * Receive's aside (or the other way round). */
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *recv_mr, *send_mr, *rdma_mr, *start_mr;
	uint8_t recv_msg[ADV_LEN], send_msg[ADV_LEN];
	char *rdma_buf;   /* server: READ sink, WRITE source; client: WRITE sink */
	char *start_buf;  /* client: READ source */
	char *expect_buf; /* server -V: the ping the client must have sent */
	bool qp_made, disconnected;
	bool mismatch; /* server -V saw a bad ping */
};

enum step {
	STEP_OK,
	STEP_CLOSED, /* the connection went away (flushed or DISCONNECTED) */
	STEP_FAIL,   /* said why */
	STEP_MISMATCH,
};

/* --------------------------------------------------------------- output */

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bigping: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int debug;

/* -d lines go to stdout, flushed, so that they interleave with -v lines. */
__attribute__((format(printf, 1, 2))) static void dbg(const char *fmt, ...)
{
	if (!debug)
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	va_end(ap);
}

/* ----------------------------------------------------------------- time */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
	int64_t r = deadline - now_ms();
	return r < 0 ? 0 : r > 86400000 ? 86400000 : (int)r;
}

/* The first offset where a and b differ, or -1. */
static long first_diff(const char *a, const char *b, long len)
{
	if (!memcmp(a, b, (size_t)len))
		return -1;
	long i = 0;
	while (a[i] == b[i])
		i++;
	return i;
}

/* ------------------------------------------------------------- channels */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

/* The next CM event within ms (NULL on timeout or error, said). The
 * caller acks it: an id with an unacked event cannot be destroyed. */
static struct rdma_cm_event *next_cm_event(struct peer *p, int ms, const char *what)
{
	int64_t deadline = now_ms() + ms;
	struct pollfd pf = {.fd = p->ech->fd, .events = POLLIN};
	for (;;) {
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(p->ech, &ev) == 0)
			return ev;
		if (errno != EAGAIN && errno != EINTR) {
			say("rdma_get_cm_event: %s", strerror(errno));
			return NULL;
		}
		int n = poll(&pf, 1, left_ms(deadline));
		if (n == 0) {
			say("no %s within %.1f s", what, ms / 1000.0);
			return NULL;
		}
		if (n < 0 && errno != EINTR) {
			say("poll: %s", strerror(errno));
			return NULL;
		}
	}
}

/* A CM event that arrives while the connection is up: DISCONNECTED marks
 * the end; a second client's request is refused (one client per run). */
static void connected_cm_event(struct peer *p, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	struct rdma_cm_id *id = ev->id;
	bool other = id != p->id && type == RDMA_CM_EVENT_CONNECT_REQUEST;
	if (other) {
		dbg("refusing a second client");
		rdma_reject(id, NULL, 0);
	} else if (type == RDMA_CM_EVENT_DISCONNECTED) {
		dbg("DISCONNECTED");
		p->disconnected = true;
	} else if (id == p->id) {
		dbg("CM event %s (status %d)", rdma_event_str(type), ev->status);
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL || type == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			p->disconnected = true;
	}
	rdma_ack_cm_event(ev);
	if (other)
		rdma_destroy_id(id);
}

/* Wait until the completion channel or the CM has something, and take it
 * (a CQ event is acked at once: ibv_destroy_cq waits for every ack).
 * 0, or -1 on timeout or error. */
static int pump(struct peer *p, int64_t deadline)
{
	struct pollfd pf[2] = {{.fd = p->cc->fd, .events = POLLIN},
			       {.fd = p->ech->fd, .events = POLLIN}};
	int n = poll(pf, 2, left_ms(deadline));
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if (n == 0)
		return -1;
	if (pf[0].revents & POLLIN) {
		struct ibv_cq *cq;
		void *cq_ctx;
		if (ibv_get_cq_event(p->cc, &cq, &cq_ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	}
	if (pf[1].revents & POLLIN) {
		struct rdma_cm_event *ev;
		while (rdma_get_cm_event(p->ech, &ev) == 0)
			connected_cm_event(p, ev);
	}
	return 0;
}

/* ---------------------------------------------------------- completions */

static const char *opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	default: return "other";
	}
}

/* Wait for the completion of `what` on cq: STEP_OK (with its byte count),
 * STEP_CLOSED when the connection went away first, STEP_FAIL otherwise. */
static enum step expect_wc(struct peer *p, struct ibv_cq *cq, enum ibv_wc_opcode want,
			   const char *what, uint32_t *byte_len)
{
	int64_t deadline = now_ms() + p->o->timeout_ms;
	struct ibv_wc wc;
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);
		/* Arm, then look again: a completion that came before the
		 * arm raises no event. */
		if (n == 0) {
			if (ibv_req_notify_cq(cq, 0)) {
				say("ibv_req_notify_cq failed");
				return STEP_FAIL;
			}
			n = ibv_poll_cq(cq, 1, &wc);
		}
		if (n < 0) {
			say("ibv_poll_cq failed (%d)", n);
			return STEP_FAIL;
		}
		if (n == 1)
			break;
		/* The CQ is empty and the peer is gone: nothing more comes
		 * (the flushes, if any, say the same). */
		if (p->disconnected) {
			dbg("%s: the connection is closed", what);
			return STEP_CLOSED;
		}
		if (pump(p, deadline)) {
			say("no %s within %d s", what, p->o->timeout_ms / 1000);
			return STEP_FAIL;
		}
	}
	if (wc.status == IBV_WC_WR_FLUSH_ERR) {
		dbg("%s flushed: the connection is closed", what);
		return STEP_CLOSED;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != want) {
		say("%s: %s completed with %s (vendor_err 0x%x)", what, opcode_str(wc.opcode),
		    ibv_wc_status_str(wc.status), wc.vendor_err);
		return STEP_FAIL;
	}
	if (byte_len)
		*byte_len = wc.byte_len;
	return STEP_OK;
}

static int post_recv_msg(struct peer *p)
{
	struct ibv_sge sge = {(uintptr_t)p->recv_msg, ADV_LEN, p->recv_mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;
	int rc = ibv_post_recv(p->id->qp, &wr, &bad);
	if (rc)
		say("ibv_post_recv: %s", strerror(rc));
	return rc ? -1 : 0;
}

/* Post one signaled work request and wait for it: only one is ever
 * outstanding, so send_msg and the buffers can be reused right after. */
static enum step post_one(struct peer *p, struct ibv_send_wr *wr, enum ibv_wc_opcode want,
			  const char *what)
{
	struct ibv_send_wr *bad;
	wr->send_flags = IBV_SEND_SIGNALED;
	int rc = ibv_post_send(p->id->qp, wr, &bad);
	if (rc) {
		say("posting %s: %s", what, strerror(rc));
		return STEP_FAIL;
	}
	return expect_wc(p, p->scq, want, what, NULL);
}

static enum step send_msg(struct peer *p, const char *what)
{
	struct ibv_sge sge = {(uintptr_t)p->send_msg, ADV_LEN, p->send_mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	return post_one(p, &wr, IBV_WC_SEND, what);
}

static enum step send_advert(struct peer *p, void *buf, struct ibv_mr *mr, const char *what)
{
	struct advert a = {(uintptr_t)buf, mr->rkey, (uint32_t)p->o->size};
	advert_pack(p->send_msg, &a);
	dbg("RDMA addr %llx rkey %x len %ld", (unsigned long long)(uintptr_t)buf, mr->rkey,
	    p->o->size);
	return send_msg(p, what);
}

static enum step send_go_ahead(struct peer *p)
{
	memset(p->send_msg, 0, ADV_LEN);
	return send_msg(p, "the go-ahead Send");
}

/* Receive one 16-octet message (into a when not NULL) and post the next
 * receive at once, before anything we send can make the peer send again:
 * iWARP has no receiver-not-ready retry. */
static enum step recv_msg(struct peer *p, const char *what, struct advert *a)
{
	uint32_t len = 0;
	enum step s = expect_wc(p, p->rcq, IBV_WC_RECV, what, &len);
	if (s != STEP_OK)
		return s;
	if (len != ADV_LEN) {
		say("%s: received %u octets, expected %d", what, len, ADV_LEN);
		return STEP_FAIL;
	}
	if (a) {
		advert_unpack(a, p->recv_msg);
		dbg("received rkey %x addr %llx len %u from peer", a->rkey,
		    (unsigned long long)a->addr, a->len);
	}
	return post_recv_msg(p) ? STEP_FAIL : STEP_OK;
}

/* ------------------------------------------------------------ resources */

static void *alloc_buf(long size)
{
	void *b = NULL;
	/* Page-aligned, so that siw can send straight from the pages. */
	if (posix_memalign(&b, 4096, (size_t)size))
		return NULL;
	memset(b, 0, (size_t)size);
	return b;
}

/* PD, CQs, QP on p->id, buffers and their MRs, and the first receive
 * posted (before the connection exists, so the peer's first Send finds
 * it). 0, or -1 after saying why. */
static int setup(struct peer *p)
{
	const struct opts *o = p->o;
	bool client = o->role == 'c';
	struct ibv_context *vc = p->id->verbs;
	if (!vc) {
		say("no RDMA device for this address (is siw attached to its interface?)");
		return -1;
	}
	p->pd = ibv_alloc_pd(vc);
	p->cc = ibv_create_comp_channel(vc);
	if (!p->pd || !p->cc || set_nonblock(p->cc->fd)) {
		say("cannot allocate a PD or completion channel: %s", strerror(errno));
		return -1;
	}
	p->scq = ibv_create_cq(vc, 4, NULL, p->cc, 0);
	p->rcq = ibv_create_cq(vc, 4, NULL, p->cc, 0);
	if (!p->scq || !p->rcq) {
		say("ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = p->scq,
		.recv_cq = p->rcq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1},
	};
	if (rdma_create_qp(p->id, p->pd, &qa)) {
		say("rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	p->qp_made = true;
	p->rdma_buf = alloc_buf(o->size);
	if (!p->rdma_buf || (client && !(p->start_buf = alloc_buf(o->size))) ||
	    (!client && o->validate && !(p->expect_buf = alloc_buf(o->size)))) {
		say("cannot allocate %ld-octet buffers", o->size);
		return -1;
	}
	p->recv_mr = ibv_reg_mr(p->pd, p->recv_msg, ADV_LEN, IBV_ACCESS_LOCAL_WRITE);
	p->send_mr = ibv_reg_mr(p->pd, p->send_msg, ADV_LEN, 0);
	/* The server's buffer is the sink of its READ, which iWARP places
	 * with a tagged Read Response: it needs REMOTE_WRITE, as the
	 * client's WRITE sink does. */
	p->rdma_mr = ibv_reg_mr(p->pd, p->rdma_buf, (size_t)o->size,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (client)
		p->start_mr = ibv_reg_mr(p->pd, p->start_buf, (size_t)o->size,
					 IBV_ACCESS_REMOTE_READ);
	if (!p->recv_mr || !p->send_mr || !p->rdma_mr || (client && !p->start_mr)) {
		say("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	return post_recv_msg(p);
}

/* IRD = ORD = 1 in both roles, as rping's client asks: one READ at a time
 * is all the protocol needs, and siw refuses a READ with ORD 0. */
static void conn_param(struct rdma_conn_param *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->responder_resources = 1;
	cp->initiator_depth = 1;
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
}

/* Disconnect (when still connected) and wait a bounded time for the CM
 * to confirm, so that the peer sees an orderly close. */
static void disconnect(struct peer *p)
{
	if (!p->disconnected && rdma_disconnect(p->id))
		dbg("rdma_disconnect: %s", strerror(errno));
	int64_t deadline = now_ms() + CLOSE_GRACE_MS;
	while (!p->disconnected)
		if (pump(p, deadline)) {
			dbg("no DISCONNECTED within %d ms", CLOSE_GRACE_MS);
			break;
		}
}

static void teardown(struct peer *p)
{
	if (p->qp_made)
		rdma_destroy_qp(p->id);
	if (p->recv_mr)
		ibv_dereg_mr(p->recv_mr);
	if (p->send_mr)
		ibv_dereg_mr(p->send_mr);
	if (p->rdma_mr)
		ibv_dereg_mr(p->rdma_mr);
	if (p->start_mr)
		ibv_dereg_mr(p->start_mr);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
	if (p->cc)
		ibv_destroy_comp_channel(p->cc);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->id)
		rdma_destroy_id(p->id);
	if (p->listen_id)
		rdma_destroy_id(p->listen_id);
	if (p->ech)
		rdma_destroy_event_channel(p->ech);
	free(p->rdma_buf);
	free(p->start_buf);
	free(p->expect_buf);
}

/* ------------------------------------------------------------- summary */

/* The run in one line on stdout; "verified" only for a run that passed. */
static void summary(const struct peer *p, long pings, int64_t t0, bool ok)
{
	double s = (double)(now_ms() - t0) / 1000.0;
	/* Each ping moves the buffer twice: READ one way, WRITE back. */
	double mb = 2.0 * (double)pings * (double)p->o->size / 1e6;
	const char *how = "";
	if (!ok)
		how = ", then FAILED";
	else if (p->o->validate)
		how = p->o->role == 's' ? ", READ data checked" : ", round trip verified";
	printf("bigping %s: %ld pings of %ld octets%s in %.2f s (%.1f MB/s RDMA)\n",
	       p->o->role == 's' ? "server" : "client", pings, p->o->size, how, s,
	       s > 0 ? mb / s : 0.0);
	fflush(stdout);
}

/* --------------------------------------------------------------- server */

/* One ping, server side. STEP_CLOSED only when the client left before it
 * began, which is how a run without -C ends. */
static enum step serve_ping(struct peer *p, long n)
{
	const struct opts *o = p->o;
	struct advert src, dst;
	enum step s = recv_msg(p, "the source advertisement", &src);
	if (s != STEP_OK)
		return s;
	if (src.len == 0 || src.len > (uint64_t)o->size) {
		say("the client advertised %u octets; this server takes 1 to %ld (-S)", src.len,
		    o->size);
		return STEP_FAIL;
	}
	struct ibv_sge sge = {(uintptr_t)p->rdma_buf, src.len, p->rdma_mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ};
	wr.wr.rdma.remote_addr = src.addr;
	wr.wr.rdma.rkey = src.rkey;
	s = post_one(p, &wr, IBV_WC_RDMA_READ, "the RDMA READ of the client's buffer");
	if (s == STEP_OK && o->verbose) {
		printf("server ping data: %.*s\n", (int)strnlen(p->rdma_buf, src.len), p->rdma_buf);
		fflush(stdout);
	}
	if (s == STEP_OK && o->validate) {
		fill_ping(p->expect_buf, src.len, n);
		long at = first_diff(p->expect_buf, p->rdma_buf, src.len);
		if (at >= 0) {
			say("ping %ld: READ data differs from rping's pattern at offset %ld: "
			    "expected 0x%02x, got 0x%02x",
			    n, at, (unsigned char)p->expect_buf[at], (unsigned char)p->rdma_buf[at]);
			/* Serve on: the client's -V sees the same bytes. */
			p->mismatch = true;
		}
	}
	if (s == STEP_OK)
		s = send_go_ahead(p);
	if (s == STEP_OK)
		s = recv_msg(p, "the sink advertisement", &dst);
	/* rping writes back strlen() + 1 octets, which for its pings is what
	 * was read: write what was read, without trusting a NUL. */
	if (s == STEP_OK && dst.len < src.len) {
		say("the client advertised a %u-octet sink for %u octets", dst.len, src.len);
		s = STEP_FAIL;
	}
	if (s == STEP_OK) {
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = dst.addr;
		wr.wr.rdma.rkey = dst.rkey;
		s = post_one(p, &wr, IBV_WC_RDMA_WRITE, "the RDMA WRITE to the client's buffer");
	}
	if (s == STEP_OK)
		s = send_go_ahead(p);
	if (s == STEP_CLOSED) {
		say("the client went away in the middle of ping %ld", n);
		return STEP_FAIL;
	}
	return s;
}

static int server_listen(struct peer *p, struct sockaddr *addr)
{
	if (rdma_create_id(p->ech, &p->listen_id, NULL, RDMA_PS_TCP)) {
		say("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (rdma_bind_addr(p->listen_id, addr) || rdma_listen(p->listen_id, 4)) {
		say("cannot listen on %s port %d: %s", p->o->addr ? p->o->addr : "any address",
		    p->o->port, strerror(errno));
		return -1;
	}
	dbg("listening on port %d", p->o->port);
	return 0;
}

/* Wait for the client's request, set up, accept, and wait for ESTABLISHED.
 * EXIT_OK or EXIT_NOCONN. */
static int server_accept(struct peer *p)
{
	/* -T bounds the wait for the client too: a test that never starts
	 * one must not leave this server behind. */
	struct rdma_cm_event *ev = next_cm_event(p, p->o->timeout_ms, "connection request");
	if (!ev)
		return EXIT_NOCONN;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		say("unexpected CM event %s while listening", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		return EXIT_NOCONN;
	}
	p->id = ev->id;
	dbg("connect request: peer IRD %u ORD %u, %u octets of private data",
	    ev->param.conn.responder_resources, ev->param.conn.initiator_depth,
	    ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	if (setup(p)) {
		rdma_reject(p->id, NULL, 0);
		return EXIT_NOCONN;
	}
	struct rdma_conn_param cp;
	conn_param(&cp);
	if (rdma_accept(p->id, &cp)) {
		say("rdma_accept: %s", strerror(errno));
		return EXIT_NOCONN;
	}
	/* A second client's request may come first: refuse it and wait on.
	 * (A connection torn down before siw reported ESTABLISHED can hit
	 * a BUG_ON in the 6.1 kernel's iw_cm, so the wait is generous.) */
	while ((ev = next_cm_event(p, p->o->timeout_ms, "ESTABLISHED")) != NULL) {
		if (ev->id != p->id) {
			connected_cm_event(p, ev);
			continue;
		}
		enum rdma_cm_event_type type = ev->event;
		int status = ev->status;
		dbg("%s: IRD %u ORD %u", rdma_event_str(type), ev->param.conn.responder_resources,
		    ev->param.conn.initiator_depth);
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_ESTABLISHED)
			return EXIT_OK;
		say("accepting the client failed: %s (status %d)", rdma_event_str(type), status);
		p->disconnected = true;
		return EXIT_NOCONN;
	}
	return EXIT_NOCONN;
}

static int run_server(struct peer *p, struct sockaddr *addr)
{
	const struct opts *o = p->o;
	if (server_listen(p, addr))
		return EXIT_NOCONN;
	int ret = server_accept(p);
	if (ret != EXIT_OK)
		return ret;
	int64_t t0 = now_ms();
	long n = 0;
	enum step s = STEP_OK;
	while (s == STEP_OK && (!o->count || n < o->count))
		if ((s = serve_ping(p, n)) == STEP_OK)
			n++;
	if (s == STEP_OK) {
		/* -C pings done: the client closes next. Wait for it, so
		 * that our close never races its last check. */
		int64_t deadline = now_ms() + o->timeout_ms;
		while (!p->disconnected)
			if (pump(p, deadline)) {
				say("%ld pings served, but the client did not disconnect within %d s",
				    n, o->timeout_ms / 1000);
				break;
			}
		ret = EXIT_OK;
	} else if (s == STEP_CLOSED && n == 0) {
		say("the client closed the connection before the first ping");
		ret = EXIT_FAIL;
	} else if (s == STEP_CLOSED && o->count) {
		say("the client left after %ld of %ld pings", n, o->count);
		ret = EXIT_FAIL;
	} else {
		ret = s == STEP_CLOSED ? EXIT_OK : EXIT_FAIL;
	}
	/* A bad ping is the news even when the client then gave up. */
	if (p->mismatch)
		ret = EXIT_MISMATCH;
	summary(p, n, t0, ret == EXIT_OK);
	disconnect(p);
	return ret;
}

/* --------------------------------------------------------------- client */

/* Wait for one CM event of type want on the client's id; the others are
 * failures, said. */
static int client_expect(struct peer *p, enum rdma_cm_event_type want, int ms, const char *what)
{
	struct rdma_cm_event *ev = next_cm_event(p, ms, what);
	if (!ev)
		return -1;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	if (type == RDMA_CM_EVENT_ESTABLISHED)
		dbg("ESTABLISHED: IRD %u ORD %u", ev->param.conn.responder_resources,
		    ev->param.conn.initiator_depth);
	rdma_ack_cm_event(ev);
	if (type == want)
		return 0;
	say("waiting for %s: %s (status %d: %s)", what, rdma_event_str(type), status,
	    strerror(status < 0 ? -status : status));
	return -1;
}

static enum step client_ping(struct peer *p, long n)
{
	const struct opts *o = p->o;
	fill_ping(p->start_buf, o->size, n);
	/* So that -V cannot pass on what an earlier ping left there. */
	if (o->validate)
		memset(p->rdma_buf, 0, (size_t)o->size);
	enum step s = send_advert(p, p->start_buf, p->start_mr, "the source advertisement");
	if (s == STEP_OK)
		s = recv_msg(p, "the go-ahead after the server's READ", NULL);
	if (s == STEP_OK)
		s = send_advert(p, p->rdma_buf, p->rdma_mr, "the sink advertisement");
	if (s == STEP_OK)
		s = recv_msg(p, "the go-ahead after the server's WRITE", NULL);
	if (s == STEP_CLOSED) {
		say("the server closed the connection in ping %ld", n);
		return STEP_FAIL;
	}
	if (s != STEP_OK)
		return s;
	if (o->validate) {
		long at = first_diff(p->start_buf, p->rdma_buf, o->size);
		if (at >= 0) {
			say("data mismatch! ping %ld, offset %ld: sent 0x%02x, got 0x%02x", n, at,
			    (unsigned char)p->start_buf[at], (unsigned char)p->rdma_buf[at]);
			return STEP_MISMATCH;
		}
	}
	if (o->verbose) {
		printf("ping data: %.*s\n", (int)strnlen(p->rdma_buf, (size_t)o->size),
		       p->rdma_buf);
		fflush(stdout);
	}
	return STEP_OK;
}

static int run_client(struct peer *p, struct sockaddr *dst)
{
	const struct opts *o = p->o;
	if (rdma_create_id(p->ech, &p->id, NULL, RDMA_PS_TCP)) {
		say("rdma_create_id: %s", strerror(errno));
		return EXIT_FAIL;
	}
	if (rdma_resolve_addr(p->id, NULL, dst, RESOLVE_MS) ||
	    client_expect(p, RDMA_CM_EVENT_ADDR_RESOLVED, RESOLVE_MS + 1000, "ADDR_RESOLVED") ||
	    rdma_resolve_route(p->id, RESOLVE_MS) ||
	    client_expect(p, RDMA_CM_EVENT_ROUTE_RESOLVED, RESOLVE_MS + 1000, "ROUTE_RESOLVED")) {
		say("cannot resolve %s to an RDMA device", o->addr);
		return EXIT_NOCONN;
	}
	if (setup(p))
		return EXIT_FAIL;
	struct rdma_conn_param cp;
	conn_param(&cp);
	if (rdma_connect(p->id, &cp)) {
		say("rdma_connect: %s", strerror(errno));
		return EXIT_NOCONN;
	}
	/* siw waits 10 s for the MPA Reply; ours is the longer deadline. */
	if (client_expect(p, RDMA_CM_EVENT_ESTABLISHED, o->timeout_ms, "ESTABLISHED")) {
		p->disconnected = true;
		return EXIT_NOCONN;
	}
	int64_t t0 = now_ms();
	long n;
	enum step s = STEP_OK;
	for (n = 0; !o->count || n < o->count; n++)
		if ((s = client_ping(p, n)) != STEP_OK)
			break;
	summary(p, n, t0, s == STEP_OK);
	disconnect(p);
	return s == STEP_OK ? EXIT_OK : s == STEP_MISMATCH ? EXIT_MISMATCH : EXIT_FAIL;
}

/* --------------------------------------------------------- command line */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bigping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-T secs]\n"
		"       bigping -c [-vVd] [-S size] [-C count] -a addr [-p port] [-T secs]\n"
		"rping's ping-pong over librdmacm/libibverbs, with sizes up to %ld octets.\n"
		"  -s / -c    server / client\n"
		"  -a addr    server: address to listen on (default any); client: the server\n"
		"  -p port    port (default %d)\n"
		"  -C count   pings (client: default 0, forever; server: stop after count and\n"
		"             fail if the client leaves earlier; default: until it leaves)\n"
		"  -S size    ping size, %d to %ld (default %d; use the same on both sides)\n"
		"  -V         client: compare what came back; server: check what the READ\n"
		"             brought against rping's pattern\n"
		"  -v         print the ping data\n"
		"  -d         debug output (connection parameters, advertisements)\n"
		"  -T secs    give up on any single wait after secs (default %d)\n"
		"Exit status: 0 success, 1 failure after connecting, 2 usage, 3 data\n"
		"mismatch (-V), 4 no connection.\n",
		MAX_SIZE, DEFAULT_PORT, MIN_SIZE, MAX_SIZE, DEFAULT_SIZE, DEFAULT_TIMEOUT_S);
}

static int parse_num(const char *s, long min, long max, long *out, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		say("invalid %s '%s' (valid range is %ld to %ld)", what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* 0 to run, 1 for -h, -1 for a usage error (said). */
static int parse_args(struct opts *o, int argc, char **argv)
{
	int opt;
	long v;
	opterr = 0;
	while ((opt = getopt(argc, argv, ":scva:p:C:S:VdT:h")) != -1) {
		switch (opt) {
		case 's':
		case 'c':
			if (o->role && o->role != opt) {
				say("-s and -c exclude each other");
				return -1;
			}
			o->role = opt;
			break;
		case 'a': o->addr = optarg; break;
		case 'p':
			if (parse_num(optarg, 1, 65535, &v, "port"))
				return -1;
			o->port = (int)v;
			break;
		case 'C':
			if (parse_num(optarg, 0, 2147483647L, &o->count, "count"))
				return -1;
			break;
		case 'S':
			if (parse_num(optarg, MIN_SIZE, MAX_SIZE, &o->size, "size"))
				return -1;
			break;
		case 'T':
			if (parse_num(optarg, 1, 86400, &v, "timeout"))
				return -1;
			o->timeout_ms = (int)v * 1000;
			break;
		case 'v': o->verbose = true; break;
		case 'V': o->validate = true; break;
		case 'd': debug++; break;
		case 'h': return 1;
		case ':': say("option -%c needs an argument", optopt); return -1;
		default: say("option -%c is unknown", optopt); return -1;
		}
	}
	if (optind < argc) {
		say("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!o->role) {
		say("choose -s (server) or -c (client)");
		return -1;
	}
	if (o->role == 'c' && !o->addr) {
		say("the client needs the server's address: -a addr");
		return -1;
	}
	return 0;
}

/* The address with the port; a server without -a listens on any IPv4
 * address, as rping. 0 or -1 (said). */
static int resolve(const struct opts *o, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (!o->addr) {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)o->port);
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	int rc = getaddrinfo(o->addr, NULL, &hints, &res);
	if (rc) {
		say("cannot resolve '%s': %s", o->addr, gai_strerror(rc));
		return -1;
	}
	bool ok = res->ai_family == AF_INET || res->ai_family == AF_INET6;
	if (ok)
		memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (!ok) {
		say("'%s' is neither IPv4 nor IPv6", o->addr);
		return -1;
	}
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = htons((uint16_t)o->port);
	else
		((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)o->port);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.port = DEFAULT_PORT, .size = DEFAULT_SIZE,
			 .timeout_ms = DEFAULT_TIMEOUT_S * 1000};
	int rc = parse_args(&o, argc, argv);
	if (rc > 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (rc < 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	struct sockaddr_storage addr;
	if (resolve(&o, &addr))
		return EXIT_NOCONN;
	struct peer p = {.o = &o};
	p.ech = rdma_create_event_channel();
	if (!p.ech || set_nonblock(p.ech->fd)) {
		say("cannot open the RDMA CM (is rdma_ucm loaded?): %s", strerror(errno));
		if (p.ech)
			rdma_destroy_event_channel(p.ech);
		return EXIT_FAIL;
	}
	rc = o.role == 's' ? run_server(&p, (struct sockaddr *)&addr)
			   : run_client(&p, (struct sockaddr *)&addr);
	teardown(&p);
	return rc;
}
