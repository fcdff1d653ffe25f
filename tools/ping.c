/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-ping: rping (rdma-core librdmacm/examples/rping.c) over libiwarp.
 * Same command line, same application protocol, so that either role works
 * against an unmodified rping on siw or an iWARP adapter.
 *
 * One ping, as rping does it:
 *   client: Send  advertisement of its source buffer (filled with the ping)
 *   server: RDMA READ of that buffer into its own, then a go-ahead Send
 *   client: Send  advertisement of its sink buffer
 *   server: RDMA WRITE of what it read into that buffer, then a go-ahead
 *   client: with -V, compare source and sink; with -v, print the sink
 * An advertisement is 16 octets, big-endian: address (8), rkey (4), size
 * (4). A go-ahead is 16 octets whose content nobody reads (rping's server
 * sends zeros). The client disconnects after -C pings; the server takes a
 * disconnect between two pings as the end of a good run.
 *
 * Every wait has a deadline (--timeout), and a connection that goes away
 * surfaces as flushed completions, so a dead peer means an error exit,
 * never a hang. Exit status: see EXIT_* below and man/man1/iwarp-ping.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#include "rping_proto.h"

enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,     /* the run failed after connecting (peer lost, timeout, error) */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_MISMATCH = 3, /* -V: the data came back different */
	EXIT_NOCONN = 4,   /* no connection: resolve, listen or connect failed */
};

/* rping refuses more than 65535; larger pings are ours alone. */
#define RPING_MAX_SIZE 65535
#define PING_MAX_SIZE (1L << 30)
#define DEFAULT_PORT 7174
#define DEFAULT_SIZE 64 /* rping's code (its man page says 100) */
#define DEFAULT_TIMEOUT_S 10
/* How long a finished connection may take to report DISCONNECTED (the
 * library resets after 3 s) before it is torn down anyway. */
#define CLOSE_GRACE_MS 5000

struct opts {
	int role; /* 's', 'c', or 0 before parsing */
	const char *addr, *src_addr;
	int port;
	long count; /* 0: forever */
	long size;
	bool verbose, validate, persistent;
	bool no_crc, no_p2p; /* MPA knobs for interop experiments */
	int mpa_rev;         /* 1 or 2; 0: the library's default */
	bool no_enhanced;    /* rev 2 without the RFC 6581 block */
	uint8_t rtr;         /* IW_RTR_* offered (client) or accepted (server); 0: default */
	bool markers;        /* ask the peer for markers */
	bool refuse_markers; /* refuse a peer's request for markers, as siw does */
	uint16_t pd_len;     /* octets of private data in our Request or Reply */
	int timeout_ms;      /* 0: wait forever */
};

static int debug;

/* --------------------------------------------------------------- output */

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("iwarp-ping: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Debug lines go to stdout, as rping's; flushed so that they interleave
 * with -v lines in order and survive a kill. */
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

static const char *addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	/* Numeric only: an IPv6 address with its scope, and a port. Sized to
	 * that (getnameinfo fails rather than truncate), so that the callers'
	 * buffers provably hold the result; with NI_MAXHOST, builds whose
	 * inlining lets GCC see the 80-octet buffer (-fprofile-use) failed
	 * -Werror=format-truncation. */
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 1], serv[8];
	socklen_t sl = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						 : sizeof(struct sockaddr_in);
	if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(buf, len, "?");
		return buf;
	}
	snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
	return buf;
}

static const char *rtr_str(uint8_t rtr)
{
	switch (rtr) {
	case IW_RTR_WRITE: return "WRITE";
	case IW_RTR_READ: return "READ";
	case IW_RTR_SEND: return "SEND";
	default: return "none";
	}
}

/* "WRITE,READ" for a set of IW_RTR_* bits ("none" when empty). */
static const char *rtr_set_str(uint8_t set, char *buf, size_t len)
{
	static const uint8_t order[] = {IW_RTR_WRITE, IW_RTR_READ, IW_RTR_SEND};
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof(order) && n < len; i++)
		if (set & order[i])
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
					      rtr_str(order[i]));
	return n ? buf : "none";
}

/* A peer's private data for a -d line: its length, then its first octets
 * in hex (ours are 00 01 02 ...). */
static const char *pd_str(const struct iw_conn_param *p, char *buf, size_t len)
{
	const uint8_t *d = p->private_data;
	size_t n = (size_t)snprintf(buf, len, "%u octets", p->private_data_len);
	for (unsigned i = 0; d && i < p->private_data_len && i < 8 && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%02x", i ? " " : ": ", d[i]);
	if (d && p->private_data_len > 8 && n < len)
		snprintf(buf + n, len - n, " ...");
	return buf;
}

static const char *on_off(bool b)
{
	return b ? "on" : "off";
}

/* -d: the MPA parameters a connection came up with. markers rx: the peer
 * puts markers in what it sends us; tx: we put them in what we send. */
static void dbg_established(const char *peer, const struct iw_cm_event *ev, const char *pd)
{
	dbg("connected to %s: MPA rev %u, CRC %s, markers rx %s tx %s, P2P %s, RTR %s, "
	    "IRD %u ORD %u, peer private data %s",
	    peer, ev->mpa_rev, on_off(ev->crc), on_off(ev->markers_rx), on_off(ev->markers_tx),
	    on_off(ev->rtr != 0), rtr_str(ev->rtr), ev->param.responder_resources,
	    ev->param.initiator_depth, pd);
}

/* A TERMINATE explains a failed completion better than its status: show
 * what the context queued (the peer's, or the one we sent). */
static void report_async(struct iw_context *ctx)
{
	struct iw_async_event ae;
	while (iw_get_async_event(ctx, &ae) == 0) {
		if (ae.event_type >= IW_EVENT_QP_FATAL && ae.event_type <= IW_EVENT_QP_TERMINATE)
			say("QP %u: %s: %s TERMINATE 0x%04x (%s)", iw_qp_num(ae.element.qp),
			    iw_event_type_str(ae.event_type),
			    ae.term_from_peer ? "peer sent" : "we sent", ae.term,
			    iw_term_str(ae.term));
		else
			say("%s", iw_event_type_str(ae.event_type));
	}
}

/* ----------------------------------------------------------------- time */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A deadline ms from now; -1 (never) for ms 0. */
static int64_t deadline_in(int ms)
{
	return ms > 0 ? now_ms() + ms : -1;
}

/* The poll(2) timeout left until a deadline. */
static int left_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t r = deadline - now_ms();
	return r < 0 ? 0 : r > 86400000 ? 86400000 : (int)r;
}

/* The library's MPA defaults, but for the command line's knobs. */
static void mpa_opts(const struct opts *o, struct iw_mpa_opts *mo)
{
	iw_mpa_opts_default(mo);
	if (o->timeout_ms)
		mo->timeout_ms = (uint32_t)o->timeout_ms;
	if (o->no_crc)
		mo->crc = false;
	/* A responder without P2P would refuse every P2P initiator: this
	 * is the initiator's choice only. */
	if (o->no_p2p && o->role == 'c')
		mo->p2p = false;
	if (o->mpa_rev)
		mo->rev = (uint8_t)o->mpa_rev;
	if (o->no_enhanced)
		mo->enhanced = false;
	if (o->rtr && o->role == 'c')
		mo->rtr_offer = o->rtr;
	else if (o->rtr)
		mo->rtr_accept = o->rtr;
	mo->markers = o->markers;
	if (o->refuse_markers)
		mo->accept_markers = false;
}

/* Our private data: octet i is i mod 256, so that the peer's -d line (or a
 * capture) shows at a glance whether it arrived whole. */
static const uint8_t *private_data(void)
{
	static uint8_t pd[IW_MPA_PD_MAX];
	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)i;
	return pd;
}

/* ------------------------------------------------------------ connection */

/* Everything one connection uses: rping's control block. */
struct conn {
	const struct opts *o;
	struct iw_context *ctx;
	struct iw_cm_id *id;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *scq, *rcq; /* apart: a receive may complete before a send is reaped */
	struct iw_mr *recv_mr, *send_mr, *rdma_mr, *start_mr;
	uint8_t recv_msg[ADV_LEN], send_msg[ADV_LEN];
	char *rdma_buf;  /* server: READ sink, WRITE source; client: WRITE sink */
	char *start_buf; /* client: READ source */
	char peer[80];
	/* Server bookkeeping, touched by the main thread only (result: by
	 * the worker, read after the join). */
	struct server *srv;
	struct conn *next;
	pthread_t thread;
	bool started, finished, disconnected;
	bool req_markers; /* server: the Request asked for markers */
	int64_t free_by;
	int result;
};

static int alloc_bufs(struct conn *c, bool client)
{
	size_t n = (size_t)c->o->size;
	c->rdma_buf = calloc(1, n);
	if (!c->rdma_buf)
		return -1;
	c->recv_mr = iw_reg_mr(c->pd, c->recv_msg, ADV_LEN, IW_ACCESS_LOCAL_WRITE);
	c->send_mr = iw_reg_mr(c->pd, c->send_msg, ADV_LEN, 0);
	/* Server: the sink of a READ is written by a tagged Read Response,
	 * which on iWARP needs REMOTE_WRITE. Client: the WRITE sink. */
	c->rdma_mr = iw_reg_mr(c->pd, c->rdma_buf, n,
			       IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	if (!c->recv_mr || !c->send_mr || !c->rdma_mr)
		return -1;
	if (!client)
		return 0;
	c->start_buf = calloc(1, n);
	if (!c->start_buf)
		return -1;
	c->start_mr = iw_reg_mr(c->pd, c->start_buf, n, IW_ACCESS_REMOTE_READ);
	return c->start_mr ? 0 : -1;
}

static int post_recv_msg(struct conn *c)
{
	struct iw_sge sge = {(uintptr_t)c->recv_msg, ADV_LEN, c->recv_mr->lkey};
	struct iw_recv_wr wr = {.sg_list = &sge, .num_sge = 1};
	int rc = iw_post_recv(c->id->qp, &wr, NULL);
	if (rc)
		say("iw_post_recv: %s", strerror(rc));
	return rc ? -1 : 0;
}

/* PD, CQs, buffers, QP on id, and the first receive posted: iWARP has no
 * receiver-not-ready retry, so it must be there before the peer can send. */
static int conn_setup(struct conn *c, struct iw_cm_id *id, bool client)
{
	c->id = id;
	c->pd = iw_alloc_pd(c->ctx);
	c->cc = iw_create_comp_channel(c->ctx);
	c->scq = c->cc ? iw_create_cq(c->ctx, 8, NULL, c->cc, 0) : NULL;
	c->rcq = c->cc ? iw_create_cq(c->ctx, 8, NULL, c->cc, 0) : NULL;
	if (!c->pd || !c->scq || !c->rcq || alloc_bufs(c, client)) {
		say("cannot set up the connection's resources: %s", strerror(errno));
		return -1;
	}
	struct iw_qp_init_attr qa = {
		.send_cq = c->scq,
		.recv_cq = c->rcq,
		.qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1},
	};
	int rc = iw_cm_create_qp(id, c->pd, &qa);
	if (rc) {
		say("iw_cm_create_qp: %s", strerror(rc));
		return -1;
	}
	return post_recv_msg(c);
}

/* With the QP gone nothing may use an MR any more: a refusal here would be
 * a library bug worth seeing, not something to retry. */
static void dereg(struct iw_mr *mr)
{
	int rc = iw_dereg_mr(mr);
	if (rc)
		say("iw_dereg_mr: %s", strerror(rc));
}

/* Destroying the id first destroys the QP, which flushes its WRs and
 * drops their hold on the MRs. */
static void conn_free(struct conn *c)
{
	int rc = iw_cm_destroy_id(c->id);
	if (rc)
		say("iw_cm_destroy_id: %s", strerror(rc));
	dereg(c->recv_mr);
	dereg(c->send_mr);
	dereg(c->rdma_mr);
	dereg(c->start_mr);
	iw_destroy_cq(c->scq);
	iw_destroy_cq(c->rcq);
	iw_destroy_comp_channel(c->cc);
	iw_dealloc_pd(c->pd);
	free(c->rdma_buf);
	free(c->start_buf);
	free(c);
}

/* --------------------------------------------------------- completions */

enum step {
	STEP_OK,
	STEP_CLOSED,   /* flushed: the connection is gone */
	STEP_FAIL,     /* said why */
	STEP_MISMATCH, /* -V found different data */
};

/* Wait for the channel's fd until the deadline; 0, or -1 on timeout. */
static int wait_cc(struct conn *c, int64_t deadline)
{
	struct pollfd p = {.fd = c->cc->fd, .events = POLLIN};
	for (;;) {
		int n = poll(&p, 1, left_ms(deadline));
		if (n > 0)
			break;
		if (n == 0)
			return -1;
		if (errno != EINTR)
			return -1;
	}
	struct iw_cq *ecq;
	void *ectx;
	if (iw_get_cq_event(c->cc, &ecq, &ectx) == 0)
		iw_ack_cq_events(ecq, 1);
	return 0;
}

/* Take one completion from cq. Both CQs share the channel, so an event may
 * be the other CQ's: it is acked, and that CQ is polled before anyone
 * waits on it again. */
static int take_wc(struct conn *c, struct iw_cq *cq, struct iw_wc *wc, const char *what)
{
	int64_t deadline = deadline_in(c->o->timeout_ms);
	for (;;) {
		int n = iw_poll_cq(cq, 1, wc);
		/* Arm, then poll again: a completion that landed before the
		 * arm does not fire the channel. */
		if (n == 0 && iw_req_notify_cq(cq, 0) == 0)
			n = iw_poll_cq(cq, 1, wc);
		if (n == 1)
			return 0;
		if (n < 0) {
			say("iw_poll_cq: %s", strerror(-n));
			return -1;
		}
		if (wait_cc(c, deadline)) {
			say("%s: %s did not complete within %d s", c->peer, what, c->o->timeout_ms / 1000);
			return -1;
		}
	}
}

/* Wait for the completion of `what`: STEP_OK with its byte count,
 * STEP_CLOSED when it was flushed, STEP_FAIL for anything else. */
static enum step expect_wc(struct conn *c, struct iw_cq *cq, enum iw_wc_opcode want,
			   const char *what, uint32_t *byte_len)
{
	struct iw_wc wc;
	if (take_wc(c, cq, &wc, what))
		return STEP_FAIL;
	if (wc.status == IW_WC_WR_FLUSH_ERR) {
		dbg("%s flushed: the connection is closed", what);
		return STEP_CLOSED;
	}
	if (wc.status != IW_WC_SUCCESS || wc.opcode != want) {
		say("%s: %s completed with %s (TERMINATE: %s)", what, iw_wc_opcode_str(wc.opcode),
		    iw_wc_status_str(wc.status), iw_term_str(wc.vendor_err));
		report_async(c->ctx);
		return STEP_FAIL;
	}
	if (byte_len)
		*byte_len = wc.byte_len;
	return STEP_OK;
}

static enum step post_one(struct conn *c, struct iw_send_wr *wr, const char *what)
{
	int rc = iw_post_send(c->id->qp, wr, NULL);
	if (rc) {
		say("posting %s: %s", what, strerror(rc));
		return STEP_FAIL;
	}
	enum iw_wc_opcode want = IW_WC_SEND;
	if (wr->opcode == IW_WR_RDMA_READ)
		want = IW_WC_RDMA_READ;
	else if (wr->opcode == IW_WR_RDMA_WRITE)
		want = IW_WC_RDMA_WRITE;
	return expect_wc(c, c->scq, want, what, NULL);
}

/* Send the 16-octet message in send_msg and wait for it to complete (it
 * is the only send outstanding, so send_msg may be reused after). */
static enum step send_msg(struct conn *c, const char *what)
{
	struct iw_sge sge = {(uintptr_t)c->send_msg, ADV_LEN, c->send_mr->lkey};
	struct iw_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND,
				.send_flags = IW_SEND_SIGNALED};
	return post_one(c, &wr, what);
}

static enum step send_advert(struct conn *c, void *buf, struct iw_mr *mr, const char *what)
{
	struct advert a = {(uintptr_t)buf, mr->rkey, (uint32_t)c->o->size};
	advert_pack(c->send_msg, &a);
	dbg("RDMA addr %llx rkey %x len %u", (unsigned long long)a.addr, a.rkey, a.len);
	return send_msg(c, what);
}

static enum step send_go_ahead(struct conn *c)
{
	memset(c->send_msg, 0, ADV_LEN);
	return send_msg(c, "the go-ahead Send");
}

/* Receive one 16-octet message into out (may be NULL) and post the
 * receive for the next at once, before anything we send can make the peer
 * send again. */
static enum step recv_msg(struct conn *c, const char *what, uint8_t *out)
{
	uint32_t len = 0;
	enum step s = expect_wc(c, c->rcq, IW_WC_RECV, what, &len);
	if (s != STEP_OK)
		return s;
	if (len != ADV_LEN) {
		say("%s: received %u octets, expected %d", what, len, ADV_LEN);
		return STEP_FAIL;
	}
	if (out)
		memcpy(out, c->recv_msg, ADV_LEN);
	return post_recv_msg(c) ? STEP_FAIL : STEP_OK;
}

static enum step recv_advert(struct conn *c, struct advert *a, const char *what)
{
	uint8_t msg[ADV_LEN];
	enum step s = recv_msg(c, what, msg);
	if (s != STEP_OK)
		return s;
	advert_unpack(a, msg);
	dbg("received rkey %x addr %llx len %u from peer", a->rkey, (unsigned long long)a->addr,
	    a->len);
	return STEP_OK;
}

/* ----------------------------------------------------------------- server */

static enum step server_read(struct conn *c, const struct advert *src)
{
	if (src->len == 0 || src->len > (uint64_t)c->o->size) {
		say("%s advertised a %u-octet buffer; this server takes 1 to %ld (-S)", c->peer,
		    src->len, c->o->size);
		return STEP_FAIL;
	}
	struct iw_sge sge = {(uintptr_t)c->rdma_buf, src->len, c->rdma_mr->lkey};
	struct iw_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_READ,
				.send_flags = IW_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = src->addr;
	wr.wr.rdma.rkey = src->rkey;
	enum step s = post_one(c, &wr, "the RDMA READ of the client's buffer");
	if (s == STEP_OK && c->o->verbose) {
		printf("server ping data: %.*s\n", (int)strnlen(c->rdma_buf, src->len),
		       c->rdma_buf);
		fflush(stdout);
	}
	return s;
}

/* rping writes strlen(data) + 1 octets back, which for its own pings is
 * the length it read: write that length, without trusting a NUL. */
static enum step server_write(struct conn *c, const struct advert *src, const struct advert *dst)
{
	if (dst->len < src->len) {
		say("%s advertised a %u-octet sink for %u octets", c->peer, dst->len, src->len);
		return STEP_FAIL;
	}
	struct iw_sge sge = {(uintptr_t)c->rdma_buf, src->len, c->rdma_mr->lkey};
	struct iw_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IW_WR_RDMA_WRITE,
				.send_flags = IW_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = dst->addr;
	wr.wr.rdma.rkey = dst->rkey;
	return post_one(c, &wr, "the RDMA WRITE to the client's buffer");
}

/* One ping, server side. STEP_CLOSED only when the client left between
 * pings, which is how a run ends. */
static enum step server_ping(struct conn *c)
{
	struct advert src, dst;
	enum step s = recv_advert(c, &src, "source advertisement");
	if (s != STEP_OK)
		return s;
	s = server_read(c, &src);
	if (s == STEP_OK)
		s = send_go_ahead(c);
	if (s == STEP_OK)
		s = recv_advert(c, &dst, "sink advertisement");
	if (s == STEP_OK)
		s = server_write(c, &src, &dst);
	if (s == STEP_OK)
		s = send_go_ahead(c);
	if (s == STEP_CLOSED) {
		say("%s went away in the middle of a ping", c->peer);
		report_async(c->ctx);
		return STEP_FAIL;
	}
	return s;
}

static int server_session(struct conn *c)
{
	long n = 0;
	enum step s;
	while ((s = server_ping(c)) == STEP_OK)
		n++;
	/* A client that leaves before its first ping did not get what it
	 * came for: an MPA peer that refuses our Reply closes this way. */
	if (s == STEP_CLOSED && n == 0) {
		say("%s closed the connection before the first ping", c->peer);
		report_async(c->ctx);
		return EXIT_FAIL;
	}
	dbg("%s: %ld pings served, %s", c->peer, n, s == STEP_CLOSED ? "done" : "failed");
	return s == STEP_CLOSED ? EXIT_OK : EXIT_FAIL;
}

/*
 * The server: the main thread owns the CM channel and every id; each
 * established connection is served by a worker thread that only posts and
 * polls. A worker that is done disconnects and hands its conn back through
 * a pipe; the main thread frees it once DISCONNECTED has come too. Without
 * -P the first connection is the only one: later requests are rejected,
 * and the run ends with it.
 */
struct server {
	const struct opts *o;
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id;
	struct conn *conns;
	int wake[2];
	bool stop;
	int result;
};

static void *server_worker(void *arg)
{
	struct conn *c = arg;
	c->result = server_session(c);
	/* Graceful: queued FPDUs go out, then FIN (a no-op if closed). */
	iw_cm_disconnect(c->id);
	if (write(c->srv->wake[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
		say("cannot wake the main thread: %s", strerror(errno));
	return NULL;
}

static struct conn *server_find(struct server *s, struct iw_cm_id *id)
{
	for (struct conn *c = s->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void server_release(struct server *s, struct conn *c)
{
	for (struct conn **pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (!s->o->persistent) {
		s->stop = true;
		s->result = c->result;
	}
	conn_free(c);
}

/* A conn can go once its worker (if any) is joined and the CM has said
 * DISCONNECTED, so that no event can still name its id. */
static void server_maybe_release(struct server *s, struct conn *c)
{
	if ((!c->started || c->finished) && c->disconnected)
		server_release(s, c);
}

/* Accept with IRD/ORD 1/1, as rping_init_conn_param (its server accepts
 * with librdmacm defaults; siw showed 1/1 on the wire), and --pd's private
 * data. 0, or -1 after saying why. */
static int server_accept(struct conn *c)
{
	struct iw_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
				  .private_data = c->o->pd_len ? private_data() : NULL,
				  .private_data_len = c->o->pd_len};
	int rc = iw_cm_accept(c->id, &p);
	if (rc == EMSGSIZE)
		say("cannot accept %s: %u octets of private data and the 4-octet RFC 6581 block "
		    "exceed the MPA limit of %d; rejecting it", c->peer, c->o->pd_len, IW_MPA_PD_MAX);
	else if (rc)
		say("iw_cm_accept: %s", strerror(rc));
	if (rc)
		iw_cm_reject(c->id, NULL, 0);
	return rc ? -1 : 0;
}

static void server_on_request(struct server *s, struct iw_cm_id *id, const struct iw_cm_event *ev,
			      const char *pd)
{
	char peer[80];
	addr_str(&id->peer_addr, peer, sizeof(peer));
	dbg("connect request from %s (MPA rev %u, CRC %s, markers asked %s, peer IRD %u ORD %u, "
	    "peer private data %s)",
	    peer, ev->mpa_rev, on_off(ev->crc), on_off(ev->markers_tx),
	    ev->param.responder_resources, ev->param.initiator_depth, pd);
	if (!s->o->persistent && (s->conns || s->stop)) {
		dbg("rejecting %s: serving one client (-P serves more)", peer);
		iw_cm_reject(id, NULL, 0);
		iw_cm_destroy_id(id);
		return;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		iw_cm_reject(id, NULL, 0);
		iw_cm_destroy_id(id);
		return;
	}
	c->o = s->o;
	c->ctx = s->ctx;
	c->srv = s;
	c->result = EXIT_NOCONN;
	c->req_markers = ev->markers_tx;
	memcpy(c->peer, peer, sizeof(peer));
	c->next = s->conns;
	s->conns = c;
	if (conn_setup(c, id, false) || server_accept(c)) {
		c->disconnected = true;
		server_release(s, c);
	}
}

static void server_on_established(struct conn *c, const struct iw_cm_event *ev, const char *pd)
{
	dbg_established(c->peer, ev, pd);
	int rc = pthread_create(&c->thread, NULL, server_worker, c);
	if (rc) {
		say("pthread_create: %s", strerror(rc));
		c->result = EXIT_FAIL;
		iw_cm_disconnect(c->id);
		return;
	}
	c->started = true;
}

/* Why an accepted connection failed, as far as the event tells. */
static const char *accept_failure_why(const struct conn *c, const struct iw_cm_event *ev)
{
	if (ev->status == ECONNREFUSED && c->req_markers && c->o->refuse_markers)
		return ": we sent a Reject, the Request asked for markers (--refuse-markers)";
	if (ev->status == ECONNREFUSED)
		return ": we sent a Reject, the Request offered no RTR type we accept (--rtr)";
	if (ev->status == ECONNRESET)
		return ": the client closed the connection before it was up";
	return "";
}

/* Take one CM event and act on it (after acking: an id with an unacked
 * event cannot be destroyed). */
static void server_event(struct server *s)
{
	struct iw_cm_event *ev;
	int rc = iw_cm_get_event(s->ch, &ev);
	if (rc) {
		if (rc != EAGAIN && rc != EINTR)
			say("iw_cm_get_event: %s", strerror(rc));
		return;
	}
	/* The private data lives until the ack: describe it before. */
	char pd[80];
	pd_str(&ev->param, pd, sizeof(pd));
	struct iw_cm_event copy = *ev;
	copy.param.private_data = NULL;
	iw_cm_ack_event(ev);
	if (copy.event == IW_CM_EVENT_CONNECT_REQUEST) {
		server_on_request(s, copy.id, &copy, pd);
		return;
	}
	struct conn *c = server_find(s, copy.id);
	if (!c)
		return;
	switch (copy.event) {
	case IW_CM_EVENT_ESTABLISHED:
		server_on_established(c, &copy, pd);
		break;
	case IW_CM_EVENT_DISCONNECTED:
		dbg("%s: DISCONNECTED", c->peer);
		c->disconnected = true;
		server_maybe_release(s, c);
		break;
	default: /* CONNECT_ERROR and the like: the accept failed */
		say("connection from %s failed: %s (%s)%s", c->peer, iw_cm_event_str(copy.event),
		    strerror(copy.status), accept_failure_why(c, &copy));
		c->disconnected = true;
		server_maybe_release(s, c);
		break;
	}
}

static void server_on_wake(struct server *s)
{
	struct conn *c;
	if (read(s->wake[0], &c, sizeof(c)) != (ssize_t)sizeof(c))
		return;
	pthread_join(c->thread, NULL);
	c->finished = true;
	c->free_by = now_ms() + CLOSE_GRACE_MS;
	server_maybe_release(s, c);
}

/* The poll timeout: until the first finished conn's grace runs out. */
static int server_next_timeout(const struct server *s)
{
	int64_t first = -1;
	for (const struct conn *c = s->conns; c; c = c->next)
		if (c->finished && (first < 0 || c->free_by < first))
			first = c->free_by;
	return left_ms(first);
}

/* A finished conn whose DISCONNECTED never came is freed anyway (the
 * destroy resets the connection). */
static void server_expire(struct server *s)
{
	int64_t t = now_ms();
	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->finished && c->free_by <= t) {
			dbg("%s: no DISCONNECTED in time, resetting", c->peer);
			c->disconnected = true;
			server_maybe_release(s, c);
		}
	}
}

static int server_listen(struct server *s, const struct sockaddr_storage *addr)
{
	char a[80];
	struct iw_mpa_opts mo;
	mpa_opts(s->o, &mo);
	int rc = iw_cm_create_id(s->ch, &s->listen_id, NULL);
	if (!rc)
		rc = iw_cm_set_mpa_opts(s->listen_id, &mo);
	if (!rc)
		rc = iw_cm_bind_addr(s->listen_id, (const struct sockaddr *)addr);
	if (!rc)
		rc = iw_cm_listen(s->listen_id, 8);
	if (rc) {
		say("cannot listen on %s: %s", addr_str(addr, a, sizeof(a)), strerror(rc));
		return -1;
	}
	dbg("listening on %s", addr_str(&s->listen_id->local_addr, a, sizeof(a)));
	return 0;
}

static void server_loop(struct server *s)
{
	while (!s->stop) {
		struct pollfd p[2] = {{.fd = s->ch->fd, .events = POLLIN},
				      {.fd = s->wake[0], .events = POLLIN}};
		int n = poll(p, 2, server_next_timeout(s));
		if (n < 0 && errno != EINTR) {
			say("poll: %s", strerror(errno));
			s->result = EXIT_FAIL;
			return;
		}
		if (n > 0 && (p[1].revents & POLLIN))
			server_on_wake(s);
		if (n > 0 && (p[0].revents & POLLIN))
			server_event(s);
		server_expire(s);
	}
}

static int run_server(const struct opts *o, struct iw_context *ctx, struct iw_cm_channel *ch,
		      const struct sockaddr_storage *addr)
{
	struct server s = {.o = o, .ctx = ctx, .ch = ch, .result = EXIT_NOCONN};
	if (pipe(s.wake)) {
		say("pipe: %s", strerror(errno));
		return EXIT_FAIL;
	}
	if (server_listen(&s, addr) == 0)
		server_loop(&s);
	/* Only reached without -P, or on a fatal error: no worker runs. */
	while (s.conns)
		server_release(&s, s.conns);
	iw_cm_destroy_id(s.listen_id);
	close(s.wake[0]);
	close(s.wake[1]);
	return s.result;
}

/* ----------------------------------------------------------------- client */

static enum step client_check(struct conn *c, long n)
{
	size_t size = (size_t)c->o->size;
	if (c->o->validate && memcmp(c->start_buf, c->rdma_buf, size)) {
		size_t i = 0;
		while (c->start_buf[i] == c->rdma_buf[i])
			i++;
		say("data mismatch! ping %ld, offset %zu: sent 0x%02x, got 0x%02x", n, i,
		    (unsigned char)c->start_buf[i], (unsigned char)c->rdma_buf[i]);
		return STEP_MISMATCH;
	}
	if (c->o->verbose) {
		printf("ping data: %.*s\n", (int)strnlen(c->rdma_buf, size), c->rdma_buf);
		fflush(stdout);
	}
	return STEP_OK;
}

/* One ping, client side; the server closing the connection in it is a
 * failure. */
static enum step client_ping(struct conn *c, long n)
{
	fill_ping(c->start_buf, c->o->size, n);
	/* So that -V cannot pass on what an earlier ping left there. */
	if (c->o->validate)
		memset(c->rdma_buf, 0, (size_t)c->o->size);
	enum step s = send_advert(c, c->start_buf, c->start_mr, "the source advertisement");
	if (s == STEP_OK)
		s = recv_msg(c, "the go-ahead after the server's READ", NULL);
	if (s == STEP_OK)
		s = send_advert(c, c->rdma_buf, c->rdma_mr, "the sink advertisement");
	if (s == STEP_OK)
		s = recv_msg(c, "the go-ahead after the server's WRITE", NULL);
	if (s == STEP_OK)
		s = client_check(c, n);
	if (s == STEP_CLOSED) {
		say("%s closed the connection in ping %ld", c->peer, n);
		report_async(c->ctx);
		return STEP_FAIL;
	}
	return s;
}

/* Wait for the next CM event until the deadline; NULL on timeout. */
static struct iw_cm_event *wait_cm(struct iw_cm_channel *ch, int64_t deadline)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	for (;;) {
		int n = poll(&p, 1, left_ms(deadline));
		if (n == 0 || (n < 0 && errno != EINTR))
			return NULL;
		struct iw_cm_event *ev;
		if (n > 0 && iw_cm_get_event(ch, &ev) == 0)
			return ev;
	}
}

/* -d: what our MPA Request asks for. */
static void dbg_request(const struct iw_mpa_opts *mo, const struct iw_conn_param *p)
{
	char rtr[40];
	bool enh = mo->rev == 2 && mo->enhanced;
	dbg("MPA Request: rev %u, %s, P2P %s (RTR offered %s), CRC asked %s, markers asked %s, "
	    "IRD %u ORD %u, private data %u octets%s",
	    mo->rev, enh ? "enhanced" : "not enhanced", on_off(enh && mo->p2p),
	    enh && mo->p2p ? rtr_set_str(mo->rtr_offer, rtr, sizeof(rtr)) : "none",
	    on_off(mo->crc), on_off(mo->markers), p->responder_resources, p->initiator_depth,
	    p->private_data_len, enh ? " (+4 of RFC 6581 block)" : "");
}

/* Why the peer closed during the MPA exchange, as far as we can tell:
 * peers close a Request they cannot take without a Reply. */
static const char *reset_hint(const struct opts *o)
{
	if (o->pd_len)
		return "; a peer closes a Request whose private data is above its limit "
		       "(siw: 256 octets, RFC 6581 block included)";
	return "";
}

/* Say exactly why a connection attempt failed. */
static void client_failed(const struct conn *c, const struct iw_cm_event *ev)
{
	const struct opts *o = c->o;
	const char *ename = iw_cm_event_str(ev->event), *err = strerror(ev->status);
	struct iw_mpa_opts mo; /* for the MPA timeout in effect */
	mpa_opts(o, &mo);
	if (ev->event == IW_CM_EVENT_UNREACHABLE)
		say("%s is unreachable: %s", c->peer, err);
	else if (ev->event == IW_CM_EVENT_REJECTED)
		say("%s rejected the connection (REJECTED: MPA Reply with R set, %u octets of "
		    "private data)%s",
		    c->peer, ev->param.private_data_len,
		    o->markers ? "; we asked for markers (--markers), which a peer without "
				 "marker support (siw) refuses this way"
			       : "");
	else if (ev->status == ETIMEDOUT)
		say("connecting to %s failed: %s (%s): no MPA Reply within %u s", c->peer, ename,
		    err, mo.timeout_ms / 1000);
	else if (ev->status == ECONNRESET)
		say("connecting to %s failed: %s (%s): the peer closed the connection without an "
		    "MPA Reply%s",
		    c->peer, ename, err, reset_hint(o));
	else if (ev->status == EPROTO && ev->wire_err != IW_WERR_NONE)
		say("connecting to %s failed: %s (%s): malformed MPA Reply: %s (%s)", c->peer, ename,
		    err, iw_wire_err_str(ev->wire_err), iw_wire_err_name(ev->wire_err));
	else if (ev->status == EPROTO && ev->reason)
		say("connecting to %s failed: %s (%s): %s%s%s", c->peer, ename, err, ev->reason,
		    ev->term != IW_TERM_NONE ? "; we sent TERMINATE " : "",
		    ev->term != IW_TERM_NONE ? iw_term_str(ev->term) : "");
	else if (ev->status == EPROTO)
		say("connecting to %s failed: %s (%s): the MPA Reply does not match our Request "
		    "(revision, P2P/RTR, markers or IRD/ORD)",
		    c->peer, ename, err);
	else
		say("connecting to %s failed: %s (%s)", c->peer, ename, err);
	if (ev->event == IW_CM_EVENT_REJECTED && ev->param.private_data_len) {
		char pd[80];
		dbg("rejection's private data: %s", pd_str(&ev->param, pd, sizeof(pd)));
	}
}

static int client_connect(struct conn *c, struct iw_cm_channel *ch,
			  const struct sockaddr_storage *dst)
{
	const struct opts *o = c->o;
	struct iw_mpa_opts mo;
	mpa_opts(o, &mo);
	/* IRD/ORD 1/1, as rping_init_conn_param, and --pd's private data. */
	struct iw_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
				  .private_data = o->pd_len ? private_data() : NULL,
				  .private_data_len = o->pd_len,
				  .connect_timeout_ms = (uint32_t)o->timeout_ms, .mpa = &mo};
	dbg_request(&mo, &p);
	int rc = iw_cm_connect(c->id, (const struct sockaddr *)dst, &p);
	if (rc) {
		say("cannot connect to %s: %s", c->peer, strerror(rc));
		return EXIT_NOCONN;
	}
	/* The TCP deadline, then the MPA one, plus a margin. */
	struct iw_cm_event *ev = wait_cm(ch, o->timeout_ms ? now_ms() + 2L * o->timeout_ms + 2000
							   : -1);
	if (!ev) {
		say("%s: no answer to the connection request", c->peer);
		return EXIT_NOCONN;
	}
	int ret = EXIT_OK;
	if (ev->event == IW_CM_EVENT_ESTABLISHED) {
		char pd[80];
		dbg_established(c->peer, ev, pd_str(&ev->param, pd, sizeof(pd)));
	} else {
		client_failed(c, ev);
		ret = EXIT_NOCONN;
	}
	iw_cm_ack_event(ev);
	return ret;
}

static int client_pings(struct conn *c)
{
	enum step s = STEP_OK;
	long n;
	for (n = 0; s == STEP_OK && (!c->o->count || n < c->o->count); n++)
		s = client_ping(c, n);
	dbg("%ld pings %s", s == STEP_OK ? n : n - 1, s == STEP_OK ? "done" : "failed");
	return s == STEP_OK ? EXIT_OK : s == STEP_MISMATCH ? EXIT_MISMATCH : EXIT_FAIL;
}

/* Close gracefully and wait (bounded) for the CM to confirm. */
static void client_close(struct conn *c, struct iw_cm_channel *ch)
{
	iw_cm_disconnect(c->id);
	int64_t deadline = now_ms() + CLOSE_GRACE_MS;
	struct iw_cm_event *ev;
	while ((ev = wait_cm(ch, deadline)) != NULL) {
		bool done = ev->event == IW_CM_EVENT_DISCONNECTED;
		iw_cm_ack_event(ev);
		if (done) {
			dbg("DISCONNECTED");
			return;
		}
	}
	dbg("no DISCONNECTED within %d ms", CLOSE_GRACE_MS);
}

static int run_client(const struct opts *o, struct iw_context *ctx, struct iw_cm_channel *ch,
		      const struct sockaddr_storage *dst, const struct sockaddr_storage *src)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return EXIT_FAIL;
	c->o = o;
	c->ctx = ctx;
	addr_str(dst, c->peer, sizeof(c->peer));
	struct iw_cm_id *id;
	int rc = iw_cm_create_id(ch, &id, NULL);
	if (rc) {
		say("iw_cm_create_id: %s", strerror(rc));
		free(c);
		return EXIT_FAIL;
	}
	int ret = conn_setup(c, id, true) ? EXIT_FAIL : EXIT_OK;
	if (ret == EXIT_OK && src && (rc = iw_cm_bind_addr(id, (const struct sockaddr *)src))) {
		say("cannot bind to the -I address: %s", strerror(rc));
		ret = EXIT_USAGE;
	}
	if (ret == EXIT_OK)
		ret = client_connect(c, ch, dst);
	if (ret == EXIT_OK) {
		ret = client_pings(c);
		client_close(c, ch);
	}
	conn_free(c);
	return ret;
}

/* ------------------------------------------------------------ command line */

static void usage(void)
{
	printf(
		"usage: iwarp-ping -s [-vVd] [-P] [-S size] [-C count] [-a addr] [-p port]\n"
		"                  [MPA options]\n"
		"       iwarp-ping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n"
		"                  [MPA options]\n"
		"rping's ping-pong (RDMA READ and WRITE of a buffer, Send handshakes) over\n"
		"libiwarp; interoperates with rping in either role.\n"
		"  -s          server: waits for one client (all of them with -P)\n"
		"  -c          client\n"
		"  -a addr     server: address to listen on (default any IPv4 address);\n"
		"              client: the server's address (required)\n"
		"  -I addr     client: source address to bind to\n"
		"  -p port     port (default %d; a server with 0 takes a free one, see -d)\n"
		"  -C count    pings per connection (default 0: until interrupted)\n"
		"  -S size     ping size in octets, %d to %ld (default %d; rping takes at\n"
		"              most %d and both sides should use the same size)\n"
		"  -v          print the ping data\n"
		"  -V          client: check the data that came back\n"
		"  -d          debug output (connection parameters, advertisements)\n"
		"  -P          server: persistent, serves clients until killed\n"
		"  -q          accepted for rping compatibility; no effect\n"
		"  --timeout=S give up on any single wait after S seconds (default %d;\n"
		"              0: wait forever)\n"
		"MPA negotiation (both roles unless noted; -d prints the outcome):\n"
		"  --no-crc    do not ask for MPA CRC (used anyway if the peer asks)\n"
		"  --no-p2p    client: no MPA peer-to-peer mode, no RTR (as siw's client)\n"
		"  --mpa-rev N MPA revision 1 or 2 (default 2; a server answers with the\n"
		"              lower of its own and the Request's)\n"
		"  --no-enhanced  rev 2 without the RFC 6581 IRD/ORD block (and so no P2P)\n"
		"  --rtr LIST  client: the RTR types offered (default write,read);\n"
		"              server: those accepted; LIST: write, read, send, comma-separated\n"
		"  --markers   ask the peer to put MPA markers in what it sends\n"
		"  --refuse-markers  refuse a peer that asks us for markers (as siw does)\n"
		"  --pd N      send N octets of private data (00 01 02 ...) in the Request\n"
		"              or Reply: 0 to %d, at most %d with rev 2 enhanced\n"
		"  -h, --help  this text\n"
		"Exit status: 0 success, 1 failure after connecting, 2 usage error,\n"
		"3 data mismatch (-V), 4 no connection (resolve, listen or connect failed;\n"
		"the message says why: unreachable, rejected, MPA error, timeout).\n",
		DEFAULT_PORT, PING_MIN_SIZE, PING_MAX_SIZE, DEFAULT_SIZE, RPING_MAX_SIZE,
		DEFAULT_TIMEOUT_S, IW_MPA_PD_MAX, IW_MPA_PD_MAX - IW_MPA_6581_LEN);
}

/* A whole decimal number in [min, max], or -1 after saying why. */
static int parse_num(const char *s, long min, long max, long *out, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end) {
		say("invalid %s '%s': not a number", what, s);
		return -1;
	}
	if (v < min || v > max) {
		say("invalid %s %ld (valid range is %ld to %ld)", what, v, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* Long options without a short form. */
enum {
	OPT_MPA_REV = 256,
	OPT_NO_ENHANCED,
	OPT_RTR,
	OPT_MARKERS,
	OPT_REFUSE_MARKERS,
	OPT_PD,
};

/* "write", "read", "send" or a comma-separated list of them. */
static int parse_rtr(const char *s, uint8_t *out)
{
	static const struct {
		const char *name;
		uint8_t bit;
	} names[] = {{"write", IW_RTR_WRITE}, {"read", IW_RTR_READ}, {"send", IW_RTR_SEND}};
	uint8_t set = 0;
	while (*s) {
		size_t n = strcspn(s, ","), i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n && !strncmp(s, names[i].name, n))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			break;
		set |= names[i].bit;
		s += n + (s[n] == ',');
	}
	if (*s || !set) {
		say("invalid --rtr: write, read, send or a comma-separated list of them");
		return -1;
	}
	*out = set;
	return 0;
}

/* The MPA knobs, all long options. */
static int parse_mpa_opt(struct opts *o, int opt, const char *arg)
{
	long v;
	switch (opt) {
	case OPT_MPA_REV:
		if (parse_num(arg, 1, 2, &v, "MPA revision"))
			return -1;
		o->mpa_rev = (int)v;
		return 0;
	case OPT_NO_ENHANCED: o->no_enhanced = true; return 0;
	case OPT_RTR: return parse_rtr(arg, &o->rtr);
	case OPT_MARKERS: o->markers = true; return 0;
	case OPT_REFUSE_MARKERS: o->refuse_markers = true; return 0;
	case OPT_PD:
		if (parse_num(arg, 0, IW_MPA_PD_MAX, &v, "private data length"))
			return -1;
		o->pd_len = (uint16_t)v;
		return 0;
	default: return -1;
	}
}

static int parse_opt(struct opts *o, int opt, const char *arg)
{
	long v;
	if (opt >= OPT_MPA_REV)
		return parse_mpa_opt(o, opt, arg);
	switch (opt) {
	case 's':
	case 'c':
		if (o->role && o->role != opt) {
			say("-s and -c exclude each other");
			return -1;
		}
		o->role = opt;
		return 0;
	case 'a': o->addr = arg; return 0;
	case 'I': o->src_addr = arg; return 0;
	case 'P': o->persistent = true; return 0;
	case 'v': o->verbose = true; return 0;
	case 'V': o->validate = true; return 0;
	case 'd': debug++; return 0;
	case 'q': return 0;
	case 'K': o->no_crc = true; return 0;
	case 'R': o->no_p2p = true; return 0;
	case 'p':
		if (parse_num(arg, 0, 65535, &v, "port"))
			return -1;
		o->port = (int)v;
		return 0;
	case 'C':
		/* 0 is "forever", as in rping. */
		return parse_num(arg, 0, 2147483647L, &o->count, "count");
	case 'S':
		return parse_num(arg, PING_MIN_SIZE, PING_MAX_SIZE, &o->size, "size");
	case 'T':
		if (parse_num(arg, 0, 86400, &v, "timeout"))
			return -1;
		o->timeout_ms = (int)v * 1000;
		return 0;
	default: return -1;
	}
}

/* A client's Request has a known shape: with the RFC 6581 block (rev 2,
 * enhanced) 4 of MPA's 512 octets are taken. A server's Reply has the
 * block only if the Request had it, so its check waits for the accept. */
static int check_pd(const struct opts *o)
{
	bool enh = o->mpa_rev != 1 && !o->no_enhanced;
	int max = IW_MPA_PD_MAX - (enh ? IW_MPA_6581_LEN : 0);
	if (o->role == 'c' && o->pd_len > max) {
		say("invalid private data length %u: at most %d with MPA rev 2 enhanced (the "
		    "RFC 6581 block takes %d of %d octets; --mpa-rev 1 or --no-enhanced allow %d)",
		    o->pd_len, max, IW_MPA_6581_LEN, IW_MPA_PD_MAX, IW_MPA_PD_MAX);
		return -1;
	}
	return 0;
}

/* 0 to run, -1 for a usage error, 1 for --help. */
static int parse_args(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{"help", no_argument, NULL, 'h'},
		{"timeout", required_argument, NULL, 'T'},
		{"no-crc", no_argument, NULL, 'K'},
		{"no-p2p", no_argument, NULL, 'R'},
		{"mpa-rev", required_argument, NULL, OPT_MPA_REV},
		{"no-enhanced", no_argument, NULL, OPT_NO_ENHANCED},
		{"rtr", required_argument, NULL, OPT_RTR},
		{"markers", no_argument, NULL, OPT_MARKERS},
		{"refuse-markers", no_argument, NULL, OPT_REFUSE_MARKERS},
		{"pd", required_argument, NULL, OPT_PD},
		{NULL, 0, NULL, 0},
	};
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":a:I:Pp:C:S:scvVdqh", lo, NULL)) != -1) {
		if (opt == 'h')
			return 1;
		if (opt == '?' || opt == ':') {
			const char *what = opt == ':' ? "needs an argument" : "is unknown";
			if (optopt)
				say("option -%c %s", optopt, what);
			else
				say("option %s %s", argv[optind - 1], what);
			return -1;
		}
		if (parse_opt(o, opt, optarg))
			return -1;
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
	return check_pd(o);
}

/* Resolve host (first answer, as rping) with the port; 0 or -1 (said). */
static int resolve(const char *host, int port, struct sockaddr_storage *out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc) {
		say("cannot resolve '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	int ok = res->ai_family == AF_INET || res->ai_family == AF_INET6;
	if (ok)
		memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (!ok) {
		say("'%s' is neither IPv4 nor IPv6", host);
		return -1;
	}
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
	return 0;
}

static int resolve_all(const struct opts *o, struct sockaddr_storage *addr)
{
	if (o->addr)
		return resolve(o->addr, o->port, addr);
	/* A server without -a listens on every IPv4 address, as rping. */
	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	memset(addr, 0, sizeof(*addr));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)o->port);
	sin->sin_addr.s_addr = htonl(INADDR_ANY);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.port = DEFAULT_PORT, .size = DEFAULT_SIZE,
			 .timeout_ms = DEFAULT_TIMEOUT_S * 1000};
	int rc = parse_args(&o, argc, argv);
	if (rc > 0) {
		usage();
		return EXIT_OK;
	}
	if (rc < 0) {
		fputs("Try 'iwarp-ping --help'.\n", stderr);
		return EXIT_USAGE;
	}
	struct sockaddr_storage addr, src;
	if (resolve_all(&o, &addr))
		return EXIT_NOCONN;
	bool have_src = o.role == 'c' && o.src_addr;
	if (have_src && resolve(o.src_addr, 0, &src))
		return EXIT_NOCONN;
	/* A vanished peer must give an error, never kill us with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	struct iw_context *ctx = iw_context_new(NULL);
	struct iw_cm_channel *ch = ctx ? iw_cm_create_channel(ctx) : NULL;
	if (!ch) {
		say("cannot create the libiwarp context: %s", strerror(errno));
		iw_context_free(ctx);
		return EXIT_FAIL;
	}
	rc = o.role == 's' ? run_server(&o, ctx, ch, &addr)
			   : run_client(&o, ctx, ch, &addr, have_src ? &src : NULL);
	iw_cm_destroy_channel(ch);
	iw_context_free(ctx);
	return rc;
}
