/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pcap tracing (lib/diag/trace.c and its hooks in lib/io/cm_conn.c), read back with
 * libpcap and decoded with our own codecs (tests/trace_read.c):
 *   loopback  a real connection on 127.0.0.1 between two traced contexts
 *             (one through the attribute, one through IWARP_PCAP): Sends
 *             both ways, Writes and Reads up to 3 MiB (direct placement),
 *             graceful close. Each file holds one connection with the
 *             handshake, both FINs, no gap, every FPDU decoded with a good
 *             CRC, the FPDU counts and payload CRCs of what was done, and
 *             the two files agree octet for octet.
 *   cap       a 64 KiB cap: the file stops under it, stays a valid pcap
 *             that begins with the whole MPA exchange, and ends with a
 *             note saying why.
 *   config    IWARP_PCAP_MAX parsing, the cap's minimum, "%p", and two
 *             contexts given one path.
 *   queue     the tracer alone, its writer held: what does not fit the
 *             queue is dropped and counted, shown as a gap, and noted;
 *             RST on an abortive close; both ends of one connection in one
 *             tracer are traced once.
 *   mss_follow  segments follow the socket's MSS as it moves.
 *   tx_copy   transmits copied before sendmsg: a change after the copy
 *             does not show, octets the kernel took beyond it do.
 *   dribble   octets handed over in records that end a few octets into
 *             each PDU (short reads, partial writes; trace_dribble.c):
 *             every MPA frame and FPDU still begins a segment holding at
 *             least its first 20 octets, as Wireshark needs to follow the
 *             stream, and octets held back for that go out before the FIN.
 *   exit_drains  a program that exits without iw_context_free still
 *             leaves a whole, valid trace.
 *   ipv6_one_context  IPv6 framing; both ends in one context traced once.
 *   wake      the initiator's wake-ups (iw_mpa_opts.wake_ms): a client
 *             whose peer stays silent sends zero-length Writes on the
 *             given schedule, the responder takes them as nothing, and
 *             they stop once the peer has spoken. The other cases turn
 *             wake-ups off, so a slow run (valgrind) adds no FPDU.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iwarp/iwarp.h>

#include "suites.h"
#include "diag/trace.h"
#include "trace_dribble.h"
#include "trace_read.h"

#define WAIT_MS 30000
#define MIB (1024u * 1024u)
#define BUF_LEN (8 * MIB)
#define RECV_SLOT (256 * 1024u) /* per posted receive */
#define SEND_AREA (4 * MIB)     /* Sends go out from here; Writes land at 0 */

/* ============================================================ files */

static char tmpdir[256];

static void tmp_init(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/iw_trace.XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_path(char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", tmpdir, name);
	ck_assert(n > 0 && (size_t)n < cap);
}

static void tmp_fini(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static off_t file_size(const char *path)
{
	struct stat st;
	ck_assert_msg(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return st.st_size;
}

/* ============================================================ waiting */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next CM event of ch, acked; returns its type and fills the rest. */
static enum iw_cm_event_type cm_wait(struct iw_cm_channel *ch, struct iw_cm_id **id,
				     uint8_t *rtr)
{
	int64_t dl = now_ms() + WAIT_MS;
	for (;;) {
		struct iw_cm_event *ev;
		int rc = iw_cm_get_event(ch, &ev);
		if (rc == 0) {
			enum iw_cm_event_type t = ev->event;
			if (id)
				*id = ev->id;
			if (rtr)
				*rtr = ev->rtr;
			ck_assert_int_eq(iw_cm_ack_event(ev), 0);
			return t;
		}
		ck_assert_int_eq(rc, EAGAIN);
		ck_assert_msg(now_ms() < dl, "no CM event within %d ms", WAIT_MS);
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		poll(&p, 1, 100);
	}
}

static void cm_expect(struct iw_cm_channel *ch, enum iw_cm_event_type want, struct iw_cm_id **id,
		      uint8_t *rtr)
{
	enum iw_cm_event_type t = cm_wait(ch, id, rtr);
	ck_assert_msg(t == want, "CM event %s, expected %s", iw_cm_event_str(t),
		      iw_cm_event_str(want));
}

static void wc_wait(struct iw_cq *cq, enum iw_wc_opcode op, uint32_t len)
{
	int64_t dl = now_ms() + WAIT_MS;
	struct iw_wc wc;
	int n;
	while ((n = iw_poll_cq(cq, 1, &wc)) == 0) {
		ck_assert_msg(now_ms() < dl, "no %s completion within %d ms", iw_wc_opcode_str(op),
			      WAIT_MS);
		usleep(100);
	}
	ck_assert_int_eq(n, 1);
	ck_assert_msg(wc.status == IW_WC_SUCCESS && wc.opcode == op,
		      "completion %s %s, expected %s", iw_wc_opcode_str(wc.opcode),
		      iw_wc_status_str(wc.status), iw_wc_opcode_str(op));
	if (op == IW_WC_RECV || op == IW_WC_RDMA_READ)
		ck_assert_uint_eq(wc.byte_len, len);
}

/* ============================================================ a connection */

struct side {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_id *id, *listen;
	uint8_t *buf;
	struct iw_mr *mr;
};

/* A context: traced into path with cap max (0: the default) when path is
 * set; else whatever the environment says. */
static struct iw_context *ctx_new(const char *path, uint64_t max)
{
	struct iw_context_attr a = {0};
	if (path) {
		a.comp_mask = IW_CONTEXT_ATTR_PCAP | (max ? IW_CONTEXT_ATTR_PCAP_MAX : 0);
		a.pcap_path = path;
		a.pcap_max_bytes = max;
	}
	struct iw_context *ctx = iw_context_new(&a);
	ck_assert_msg(ctx != NULL, "iw_context_new: %s", strerror(errno));
	return ctx;
}

static void side_init(struct side *s, struct iw_context *ctx)
{
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->cm = iw_cm_create_channel(ctx);
	s->pd = iw_alloc_pd(ctx);
	s->cq = iw_create_cq(ctx, 64, NULL, NULL, 0);
	s->buf = calloc(1, BUF_LEN);
	ck_assert(s->cm && s->pd && s->cq && s->buf);
	s->mr = iw_reg_mr(s->pd, s->buf, BUF_LEN,
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(s->mr);
}

static void side_qp(struct side *s, struct iw_cm_id *id)
{
	struct iw_qp_init_attr qa = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	s->id = id;
	ck_assert_int_eq(iw_cm_create_qp(id, s->pd, &qa), 0);
}

static void side_fini(struct side *s)
{
	ck_assert_int_eq(iw_cm_destroy_id(s->id), 0);
	ck_assert_int_eq(iw_cm_destroy_id(s->listen), 0);
	ck_assert_int_eq(iw_dereg_mr(s->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(s->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(s->pd), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(s->cm), 0);
	ck_assert_int_eq(iw_context_free(s->ctx), 0); /* NULL: shared, freed by the caller */
	free(s->buf);
}

static void post_recv(struct side *s, uint32_t off, uint32_t len)
{
	struct iw_sge sge = {.addr = (uintptr_t)(s->buf + off), .length = len, .lkey = s->mr->lkey};
	struct iw_recv_wr wr = {.wr_id = off, .sg_list = &sge, .num_sge = 1}, *bad;
	ck_assert_int_eq(iw_post_recv(s->id->qp, &wr, &bad), 0);
}

/* A Send from off, or a Write/Read between local off and the peer's roff. */
static void post(struct side *s, enum iw_wr_opcode op, uint32_t off, uint32_t len,
		 const struct side *peer, uint32_t roff)
{
	struct iw_sge sge = {.addr = (uintptr_t)(s->buf + off), .length = len, .lkey = s->mr->lkey};
	struct iw_send_wr wr = {.wr_id = off, .sg_list = &sge, .num_sge = 1, .opcode = op,
				.send_flags = IW_SEND_SIGNALED}, *bad;
	if (peer) {
		wr.wr.rdma.remote_addr = (uintptr_t)(peer->buf + roff);
		wr.wr.rdma.rkey = peer->mr->rkey;
	}
	ck_assert_int_eq(iw_post_send(s->id->qp, &wr, &bad), 0);
}

/* Server listening on 127.0.0.1 or ::1 (kernel's port), client connected
 * to it. */
/* The client's iw_mpa_opts.wake_ms (0: none, for exact FPDU counts). */
static uint16_t cli_wake_ms;

static uint8_t pair_connect_fam(struct side *srv, struct side *cli, int family)
{
	ck_assert_int_eq(iw_cm_create_id(srv->cm, &srv->listen, NULL), 0);
	struct sockaddr_storage ss = {0};
	if (family == AF_INET6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_loopback;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		a4->sin_family = AF_INET;
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	ck_assert_int_eq(iw_cm_bind_addr(srv->listen, (struct sockaddr *)&ss), 0);
	ck_assert_int_eq(iw_cm_listen(srv->listen, 0), 0);
	struct iw_cm_id *cid, *sid;
	ck_assert_int_eq(iw_cm_create_id(cli->cm, &cid, NULL), 0);
	struct iw_mpa_opts o;
	iw_mpa_opts_default(&o);
	o.wake_ms = cli_wake_ms;
	ck_assert_int_eq(iw_cm_set_mpa_opts(cid, &o), 0);
	side_qp(cli, cid);
	struct iw_conn_param cp = {.responder_resources = 4, .initiator_depth = 4};
	ck_assert_int_eq(iw_cm_connect(cid, (struct sockaddr *)&srv->listen->local_addr, &cp), 0);
	cm_expect(srv->cm, IW_CM_EVENT_CONNECT_REQUEST, &sid, NULL);
	side_qp(srv, sid);
	for (uint32_t i = 0; i < 4; i++)
		post_recv(srv, SEND_AREA + i * RECV_SLOT, RECV_SLOT);
	ck_assert_int_eq(iw_cm_accept(sid, &cp), 0);
	uint8_t rtr = 0;
	cm_expect(cli->cm, IW_CM_EVENT_ESTABLISHED, NULL, &rtr);
	cm_expect(srv->cm, IW_CM_EVENT_ESTABLISHED, NULL, NULL);
	return rtr;
}

static uint8_t pair_connect(struct side *srv, struct side *cli)
{
	return pair_connect_fam(srv, cli, AF_INET);
}

static void pair_close(struct side *srv, struct side *cli)
{
	ck_assert_int_eq(iw_cm_disconnect(cli->id), 0);
	/* Flushed receives come first on the server; then the event. */
	cm_expect(cli->cm, IW_CM_EVENT_DISCONNECTED, NULL, NULL);
	cm_expect(srv->cm, IW_CM_EVENT_DISCONNECTED, NULL, NULL);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static uint32_t crc_of(uint32_t st, const uint8_t *p, size_t n)
{
	return iw_crc32c_update(st, p, n);
}

/* ============================================================ loopback */

static const uint32_t send_len[] = {1, 1000, 200000};
static const uint32_t write_len[] = {4096, 3 * MIB};
static const uint32_t read_len[] = {100, MIB};
#define SRV_SEND_LEN 5000u
#define SRV_SEND_OFF (7 * MIB)
#define READ_SRC (5 * MIB) /* on the server */
#define READ_DST (5 * MIB) /* on the client */

/* What the client did, as CRCs of each opcode's payload stream. */
struct expect {
	uint32_t send, write, read_resp, srv_send;
	uint64_t send_len, write_len, read_len;
};

static void run_traffic(struct side *srv, struct side *cli, struct expect *e)
{
	uint32_t s = IW_CRC32C_INIT, w = IW_CRC32C_INIT, r = IW_CRC32C_INIT, ss = IW_CRC32C_INIT;
	memset(e, 0, sizeof(*e));
	for (unsigned i = 0; i < 3; i++) {
		fill(cli->buf + SEND_AREA, send_len[i], 10 + i);
		s = crc_of(s, cli->buf + SEND_AREA, send_len[i]);
		e->send_len += send_len[i];
		post(cli, IW_WR_SEND, SEND_AREA, send_len[i], NULL, 0);
		wc_wait(cli->cq, IW_WC_SEND, 0);
		wc_wait(srv->cq, IW_WC_RECV, send_len[i]);
	}
	post_recv(cli, SEND_AREA, RECV_SLOT);
	fill(srv->buf + SRV_SEND_OFF, SRV_SEND_LEN, 20);
	ss = crc_of(ss, srv->buf + SRV_SEND_OFF, SRV_SEND_LEN);
	post(srv, IW_WR_SEND, SRV_SEND_OFF, SRV_SEND_LEN, NULL, 0);
	wc_wait(srv->cq, IW_WC_SEND, 0);
	wc_wait(cli->cq, IW_WC_RECV, SRV_SEND_LEN);
	for (unsigned i = 0; i < 2; i++) {
		fill(cli->buf, write_len[i], 30 + i);
		w = crc_of(w, cli->buf, write_len[i]);
		e->write_len += write_len[i];
		post(cli, IW_WR_RDMA_WRITE, 0, write_len[i], srv, 0);
		wc_wait(cli->cq, IW_WC_RDMA_WRITE, 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		/* A fresh source each time: nothing but the TCP stream orders the
		 * server's sending of the last one with a rewrite (ThreadSanitizer
		 * cannot see that). */
		uint32_t src = READ_SRC + i * 65536;
		fill(srv->buf + src, read_len[i], 40 + i);
		r = crc_of(r, srv->buf + src, read_len[i]);
		e->read_len += read_len[i];
		post(cli, IW_WR_RDMA_READ, READ_DST, read_len[i], srv, src);
		wc_wait(cli->cq, IW_WC_RDMA_READ, read_len[i]);
		ck_assert(!memcmp(cli->buf + READ_DST, srv->buf + src, read_len[i]));
	}
	/* The last Write is placed once its Read has been answered (one
	 * stream, in order): check the data went where the trace says. */
	ck_assert(!memcmp(srv->buf, cli->buf, write_len[1]));
	e->send = iw_crc32c_final(s);
	e->write = iw_crc32c_final(w);
	e->read_resp = iw_crc32c_final(r);
	e->srv_send = iw_crc32c_final(ss);
}

/* One file: one complete connection carrying exactly the traffic of e. */
static void check_file(const char *path, const struct expect *e, uint8_t rtr,
		       uint16_t cli_port, uint16_t srv_port, struct rt_capture *cap)
{
	ck_assert_msg(rt_read(cap, path) == 0, "%s: %s", path, cap->why);
	ck_assert_msg(cap->problems == 0, "%s: %u problems, first: %s", path, cap->problems,
		      cap->why);
	ck_assert_uint_eq(cap->notes, 0);
	ck_assert_int_eq(cap->num_conns, 1);
	const struct rt_conn *c = &cap->conn[0];
	ck_assert_int_eq(c->family, 4);
	ck_assert_uint_eq(c->port[0], cli_port);
	ck_assert_uint_eq(c->port[1], srv_port);
	ck_assert(c->synack && c->ack);
	ck_assert_msg(c->dir[0].fin && c->dir[1].fin && !c->rst, "close: fin %d/%d rst %d",
		      c->dir[0].fin, c->dir[1].fin, c->rst);
	ck_assert_uint_eq(c->bad_acks, 0);
	for (int d = 0; d < 2; d++)
		ck_assert_uint_eq(c->dir[d].gaps + c->dir[d].backs, 0);

	struct rt_iwarp iw;
	int rc = rt_decode(c, &iw);
	const struct rt_flow *f0 = &iw.dir[0], *f1 = &iw.dir[1];
	ck_assert_msg(rc == 0, "%s: decode: req %d rep %d, err %d/%d (%s/%s), truncated %d/%d",
		      path, iw.req_ok, iw.rep_ok, f0->err, f1->err, iw_wire_err_name(f0->why),
		      iw_wire_err_name(f1->why), f0->truncated, f1->truncated);
	ck_assert(iw.crc);
	ck_assert_uint_eq(iw.req.rev, 2);
	/* Initiator to responder: the RTR, the Sends, the Writes, the Read
	 * Requests. */
	bool wr_rtr = rtr == IW_RTR_WRITE, rd_rtr = rtr == IW_RTR_READ;
	ck_assert_uint_eq(f0->msgs[IW_OP_SEND], 3);
	ck_assert_uint_eq(f0->payload[IW_OP_SEND], e->send_len);
	ck_assert_uint_eq(f0->payload_crc[IW_OP_SEND], e->send);
	ck_assert_uint_eq(f0->msgs[IW_OP_WRITE], 2 + wr_rtr);
	ck_assert_uint_eq(f0->zero_len_writes, wr_rtr);
	ck_assert_uint_eq(f0->payload[IW_OP_WRITE], e->write_len);
	ck_assert_uint_eq(f0->payload_crc[IW_OP_WRITE], e->write);
	ck_assert_uint_eq(f0->msgs[IW_OP_READ_REQ], 2 + rd_rtr);
	ck_assert_uint_eq(f0->segs[IW_OP_READ_RESP] + f0->segs[IW_OP_TERMINATE], 0);
	/* Back: the Read Responses and the server's Send. */
	ck_assert_uint_eq(f1->msgs[IW_OP_READ_RESP], 2 + rd_rtr);
	ck_assert_uint_eq(f1->payload[IW_OP_READ_RESP], e->read_len);
	ck_assert_uint_eq(f1->payload_crc[IW_OP_READ_RESP], e->read_resp);
	ck_assert_uint_eq(f1->msgs[IW_OP_SEND], 1);
	ck_assert_uint_eq(f1->payload_crc[IW_OP_SEND], e->srv_send);
	ck_assert_uint_eq(f1->segs[IW_OP_WRITE] + f1->segs[IW_OP_READ_REQ], 0);
	/* Large messages were cut into many FPDUs, which span segments. */
	ck_assert_uint_gt(f0->segs[IW_OP_WRITE], 3 * MIB / 65536);
	ck_assert_uint_gt(c->dir[0].segs, 3 * MIB / 65536);
}

START_TEST(loopback)
{
	char sp[300], cp[300];
	tmp_init();
	tmp_path(sp, sizeof(sp), "server.pcap");
	tmp_path(cp, sizeof(cp), "client.pcap");
	struct side srv, cli;
	side_init(&srv, ctx_new(sp, 0));
	/* The client's trace comes from the environment, as for a program
	 * that knows nothing about tracing. */
	ck_assert_int_eq(setenv("IWARP_PCAP", cp, 1), 0);
	side_init(&cli, ctx_new(NULL, 0));
	unsetenv("IWARP_PCAP");

	uint8_t rtr = pair_connect(&srv, &cli);
	uint16_t cport = ntohs(((struct sockaddr_in *)&cli.id->local_addr)->sin_port);
	uint16_t sport = ntohs(((struct sockaddr_in *)&srv.listen->local_addr)->sin_port);
	struct expect e;
	run_traffic(&srv, &cli, &e);
	pair_close(&srv, &cli);
	side_fini(&cli);
	side_fini(&srv);

	static struct rt_capture a, b;
	check_file(cp, &e, rtr, cport, sport, &a);
	check_file(sp, &e, rtr, cport, sport, &b);
	/* Both ends saw the same two streams. */
	for (int d = 0; d < 2; d++) {
		ck_assert_uint_eq(a.conn[0].dir[d].len, b.conn[0].dir[d].len);
		ck_assert(!memcmp(a.conn[0].dir[d].data, b.conn[0].dir[d].data, a.conn[0].dir[d].len));
	}
	rt_free(&a);
	rt_free(&b);
	tmp_fini();
}
END_TEST

/* ============================================================ cap */

START_TEST(size_cap)
{
	char cp[300];
	const uint64_t cap_bytes = 64 * 1024;
	tmp_init();
	tmp_path(cp, sizeof(cp), "capped.pcap");
	struct side srv, cli;
	side_init(&srv, ctx_new(NULL, 0));
	side_init(&cli, ctx_new(cp, cap_bytes));
	pair_connect(&srv, &cli);
	for (unsigned i = 0; i < 4; i++) {
		post(&cli, IW_WR_RDMA_WRITE, 0, MIB, &srv, 0);
		wc_wait(cli.cq, IW_WC_RDMA_WRITE, 0);
	}
	pair_close(&srv, &cli);
	side_fini(&cli);
	side_fini(&srv);

	/* Under the cap, and filled up to it (a record of up to 1 MiB is cut
	 * to the segments that fit). */
	ck_assert_int_le(file_size(cp), (off_t)cap_bytes);
	ck_assert_int_gt(file_size(cp), (off_t)(cap_bytes - 1024));
	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, cp) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_uint_eq(cap.notes, 1);
	ck_assert_msg(strstr(cap.note, "size cap of 65536") != NULL, "note: %s", cap.note);
	ck_assert_int_eq(cap.num_conns, 1);
	const struct rt_conn *c = &cap.conn[0];
	ck_assert(c->synack && c->ack && !c->dir[0].gaps && !c->dir[1].gaps);
	struct rt_iwarp iw;
	rt_decode(c, &iw);
	/* Cut at a record, maybe inside an FPDU, but never a bad one. */
	ck_assert(iw.req_ok && iw.rep_ok);
	ck_assert_int_eq(iw.dir[0].err, 0);
	ck_assert_int_eq(iw.dir[1].err, 0);
	ck_assert_uint_gt(iw.dir[0].fpdus, 0);
	ck_assert(iw.dir[0].truncated);
	ck_assert_uint_le(iw.dir[0].crc_good, iw.dir[0].fpdus);
	ck_assert_uint_ge(iw.dir[0].crc_good + 1, iw.dir[0].fpdus);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* ============================================================ config */

static void ctx_fails(const char *max, int want)
{
	ck_assert_int_eq(setenv("IWARP_PCAP_MAX", max, 1), 0);
	errno = 0;
	struct iw_context *ctx = iw_context_new(NULL);
	ck_assert_msg(ctx == NULL && errno == want, "IWARP_PCAP_MAX=%s: %p, errno %d", max,
		      (void *)ctx, errno);
}

START_TEST(config)
{
	char p[300], q[300], pid[300];
	tmp_init();
	tmp_path(p, sizeof(p), "same.pcap");
	ck_assert_int_eq(setenv("IWARP_PCAP", p, 1), 0);
	ctx_fails("junk", EINVAL);
	ctx_fails("12Q", EINVAL);
	ctx_fails("-5", EINVAL);
	ctx_fails("1000", EINVAL);                 /* under the minimum */
	ctx_fails("99999999999999999999T", EINVAL); /* overflow */
	ck_assert_int_eq(access(p, F_OK), -1);     /* nothing was created */
	ck_assert_int_eq(setenv("IWARP_PCAP_MAX", "64k", 1), 0);
	struct iw_context *a = iw_context_new(NULL);
	ck_assert_ptr_nonnull(a);
	/* The attribute's cap wins over the environment's; its path too. */
	struct iw_context_attr at = {.comp_mask = IW_CONTEXT_ATTR_PCAP_MAX, .pcap_max_bytes = 512};
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&at));
	ck_assert_int_eq(errno, EINVAL);
	/* A second context on the same path writes next to the first. */
	struct iw_context *b = iw_context_new(NULL);
	ck_assert_ptr_nonnull(b);
	tmp_path(q, sizeof(q), "same-2.pcap");
	ck_assert_int_eq(access(p, F_OK), 0);
	ck_assert_int_eq(access(q, F_OK), 0);
	/* "%p" is the process. */
	tmp_path(q, sizeof(q), "pid-%p.pcap");
	at.comp_mask = IW_CONTEXT_ATTR_PCAP;
	at.pcap_path = q;
	struct iw_context *c = iw_context_new(&at);
	ck_assert_ptr_nonnull(c);
	snprintf(q, sizeof(q), "pid-%ld.pcap", (long)getpid());
	tmp_path(pid, sizeof(pid), q);
	ck_assert_int_eq(access(pid, F_OK), 0);
	ck_assert_int_eq(iw_context_free(a), 0);
	ck_assert_int_eq(iw_context_free(b), 0);
	ck_assert_int_eq(iw_context_free(c), 0);
	/* An untouched trace is a valid empty pcap, without a note. */
	static struct rt_capture cap;
	ck_assert_int_eq(rt_read(&cap, p), 0);
	ck_assert_uint_eq(cap.records, 0);
	ck_assert_int_eq(file_size(p), 24);
	/* A device is shared, not renamed ("/dev/null-2" would be a file). */
	ck_assert_int_eq(setenv("IWARP_PCAP", "/dev/null", 1), 0);
	a = iw_context_new(NULL);
	b = iw_context_new(NULL);
	ck_assert(a && b);
	ck_assert_int_eq(access("/dev/null-2", F_OK), -1);
	ck_assert_int_eq(iw_context_free(a), 0);
	ck_assert_int_eq(iw_context_free(b), 0);
	/* A path that cannot be created fails the context. */
	ck_assert_int_eq(setenv("IWARP_PCAP", "/nonexistent-dir/x.pcap", 1), 0);
	unsetenv("IWARP_PCAP_MAX");
	errno = 0;
	ck_assert_ptr_null(iw_context_new(NULL));
	ck_assert_int_eq(errno, ENOENT);
	unsetenv("IWARP_PCAP");
	tmp_fini();
}
END_TEST

/* ============================================================ queue */

static void sin4(struct sockaddr_in *s, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	s->sin_addr.s_addr = htonl(0xC0000201u); /* 192.0.2.1 */
}

START_TEST(queue)
{
	char p[300];
	static uint8_t data[16384];
	tmp_init();
	tmp_path(p, sizeof(p), "queue.pcap");
	struct iw_trace_opts o = {.path = p, .queue_bytes = 65536, .paused = true};
	struct iw_trace *t;
	ck_assert_int_eq(iw_trace_new(&t, &o), 0);
	struct sockaddr_in me, peer;
	sin4(&me, 40000);
	sin4(&peer, 50000);
	struct iw_trace_conn *c = iw_trace_conn_new(t, (void *)&me, (void *)&peer, true, 1460);
	ck_assert_ptr_nonnull(c);
	/* The other end of the same connection in the same tracer: once. */
	ck_assert_ptr_null(iw_trace_conn_new(t, (void *)&peer, (void *)&me, false, 1460));
	/* The writer is held: three 16 KiB pieces fit the 64 KiB queue, the
	 * next two do not, a small one still does. */
	fill(data, sizeof(data), 7);
	struct iovec v[2] = {{data, 10000}, {data + 10000, sizeof(data) - 10000}};
	for (int i = 0; i < 5; i++)
		iw_trace_data(c, IW_TRACE_TX, v, 2, sizeof(data));
	iw_trace_data(c, IW_TRACE_TX, v, 1, 1000);
	iw_trace_data(c, IW_TRACE_RX, v, 1, 100);
	iw_trace_fin(c, IW_TRACE_RX);
	iw_trace_conn_end(c, true);
	/* A second connection, closed gracefully with nothing sent. */
	sin4(&me, 40001);
	struct iw_trace_conn *c2 = iw_trace_conn_new(t, (void *)&me, (void *)&peer, false, 0);
	ck_assert_ptr_nonnull(c2);
	iw_trace_conn_end(c2, false);
	struct iw_trace_stats st;
	iw_trace_free(t, &st);
	ck_assert_uint_eq(st.dropped_records, 2);
	ck_assert_uint_eq(st.dropped_bytes, 2 * sizeof(data));
	ck_assert(!st.capped);
	ck_assert_int_eq(st.err, 0);
	ck_assert_str_eq(st.path, p);
	ck_assert_int_eq(file_size(p), (off_t)st.file_bytes);

	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, p) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_uint_eq(cap.records, st.records);
	ck_assert_uint_eq(cap.notes, 1);
	ck_assert_msg(strstr(cap.note, "32768 octets in 2 pieces dropped") != NULL, "note: %s",
		      cap.note);
	ck_assert_int_eq(cap.num_conns, 2);
	const struct rt_conn *a = &cap.conn[0];
	ck_assert(a->synack && a->ack && a->rst);
	ck_assert_uint_eq(a->port[0], 40000);
	ck_assert_uint_eq(a->dir[0].len, 3 * sizeof(data) + 1000);
	ck_assert_uint_eq(a->dir[0].gaps, 1); /* the hole before the 1000 */
	ck_assert_uint_eq(a->dir[0].nxt - a->dir[0].isn - 1, 5 * sizeof(data) + 1000);
	ck_assert(!memcmp(a->dir[0].data + 2 * sizeof(data), data, sizeof(data)));
	ck_assert(!memcmp(a->dir[0].data + 3 * sizeof(data), data, 1000));
	ck_assert_uint_eq(a->dir[1].len, 100);
	ck_assert(a->dir[1].fin);
	ck_assert_uint_eq(a->dir[0].segs, 3 * 12 + 1); /* 16384 = 11 x 1460 + 324 */
	/* The accepted one: the peer is the initiator; our close() sent a
	 * FIN, the peer's was never read. */
	const struct rt_conn *b = &cap.conn[1];
	ck_assert_uint_eq(b->port[0], 50000);
	ck_assert_uint_eq(b->port[1], 40001);
	ck_assert(b->synack && b->ack && !b->rst && !b->dir[0].fin && b->dir[1].fin);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* A tracer as o says, and in it one connection we opened, from
 * 192.0.2.1:40000 to :50000, with that MSS. */
static struct iw_trace_conn *lone_conn(const struct iw_trace_opts *o, struct iw_trace **t,
				       uint32_t mss)
{
	ck_assert_int_eq(iw_trace_new(t, o), 0);
	struct sockaddr_in me, peer;
	sin4(&me, 40000);
	sin4(&peer, 50000);
	struct iw_trace_conn *c = iw_trace_conn_new(*t, (void *)&me, (void *)&peer, true, mss);
	ck_assert_ptr_nonnull(c);
	return c;
}

/* The socket's MSS moves (iw_trace_conn_mss): octets queued after that go
 * in segments of the new size, those queued before keep the old one,
 * however late the writer gets to them (it is held here until the end). */
START_TEST(mss_follow)
{
	char p[300];
	static uint8_t data[16384];
	tmp_init();
	tmp_path(p, sizeof(p), "mss.pcap");
	struct iw_trace_opts o = {.path = p, .queue_bytes = 1u << 20, .paused = true};
	struct iw_trace *t;
	struct iw_trace_conn *c = lone_conn(&o, &t, 1460);
	fill(data, sizeof(data), 9);
	struct iovec v = {data, sizeof(data)};
	iw_trace_data(c, IW_TRACE_TX, &v, 1, sizeof(data));
	iw_trace_conn_mss(c, 4000);
	iw_trace_data(c, IW_TRACE_TX, &v, 1, sizeof(data));
	iw_trace_conn_mss(NULL, 4000);
	iw_trace_conn_end(c, false);
	struct iw_trace_stats st;
	iw_trace_free(t, &st);
	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, p) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_int_eq(cap.num_conns, 1);
	const struct rt_dir *d = &cap.conn[0].dir[0];
	ck_assert_uint_eq(d->len, 2 * sizeof(data));
	ck_assert(!memcmp(d->data + sizeof(data), data, sizeof(data)));
	/* 16384 = 11 x 1460 + 324, then 4 x 4000 + 384. */
	ck_assert_uint_eq(d->segs, 12 + 5);
	for (unsigned i = 0; i < d->segs; i++)
		ck_assert_uint_le(d->seg[i].len, i < 12 ? 1460 : 4000);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* Transmits traced around sendmsg: the copy is taken before the octets go
 * out (a change made after that does not show), and what the kernel took
 * beyond the copy is taken from the iovecs afterwards. */
START_TEST(tx_copy)
{
	char p[300];
	static uint8_t a[200000], b[50000], c3[3000], want[200000 + 50000 + 3000];
	tmp_init();
	tmp_path(p, sizeof(p), "tx.pcap");
	struct iw_trace_opts o = {.path = p, .queue_bytes = 1 << 20};
	struct iw_trace *t;
	struct iw_trace_conn *c = lone_conn(&o, &t, 0);
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	fill(c3, sizeof(c3), 3);
	struct iw_trace_tx tx;
	/* No hint yet: 64 KiB copied, the kernel takes 150000. */
	struct iovec va[3] = {{a, 1000}, {NULL, 0}, {a + 1000, sizeof(a) - 1000}};
	iw_trace_tx_begin(c, &tx, va, 3);
	ck_assert_uint_eq(tx.len, 65536);
	iw_trace_tx_end(c, &tx, va, 3, 150000);
	/* Twice the last: all 50000 copied, 20000 taken. */
	struct iovec vb = {b, sizeof(b)};
	iw_trace_tx_begin(c, &tx, &vb, 1);
	ck_assert_uint_eq(tx.len, sizeof(b));
	iw_trace_tx_end(c, &tx, &vb, 1, 20000);
	/* A full socket takes nothing. */
	iw_trace_tx_begin(c, &tx, &vb, 1);
	iw_trace_tx_end(c, &tx, &vb, 1, 0);
	/* Changed while in flight: the trace has what was handed over. */
	struct iovec vc = {c3, sizeof(c3)};
	iw_trace_tx_begin(c, &tx, &vc, 1);
	memcpy(want, a, 150000);
	memcpy(want + 150000, b, 20000);
	memcpy(want + 170000, c3, sizeof(c3));
	memset(c3, 0xEE, sizeof(c3));
	iw_trace_tx_end(c, &tx, &vc, 1, sizeof(c3));
	iw_trace_conn_end(c, false);
	struct iw_trace_stats st;
	iw_trace_free(t, &st);
	ck_assert_uint_eq(st.dropped_records, 0);

	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, p) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_int_eq(cap.num_conns, 1);
	const struct rt_conn *k = &cap.conn[0];
	ck_assert_uint_eq(k->dir[0].len, 173000);
	ck_assert_uint_eq(k->dir[0].gaps, 0);
	ck_assert(!memcmp(k->dir[0].data, want, 173000));
	ck_assert(k->dir[0].fin && !k->rst);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* Records ending 1 to 19 octets into each PDU (trace_dribble.h). */
START_TEST(dribble)
{
	char p[300];
	static struct td_trace td;
	static struct rt_capture cap;
	tmp_init();
	tmp_path(p, sizeof(p), "dribble.pcap");
	ck_assert_int_eq(td_write(&td, p, true), 0);
	ck_assert_msg(rt_read(&cap, p) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_int_eq(cap.num_conns, 1);
	const struct rt_conn *c = &cap.conn[0];
	struct rt_iwarp iw;
	rt_decode(c, &iw);
	ck_assert(iw.req_ok && iw.rep_ok);
	for (int d = 0; d < 2; d++) {
		const struct rt_flow *f = &iw.dir[d];
		ck_assert_uint_eq(c->dir[d].len, td.len[d]);
		ck_assert(!memcmp(c->dir[d].data, td.stream[d], td.len[d]));
		ck_assert_uint_eq(c->dir[d].gaps, 0);
		ck_assert(c->dir[d].fin);
		ck_assert_int_eq(f->err, 0);
		ck_assert_uint_eq(f->fpdus, td.fpdus[d]);
		ck_assert_uint_eq(f->crc_good, td.fpdus[d]);
		for (int op = 0; op < 4; op++)
			ck_assert_uint_eq(f->segs[op], td.by_op[d][op]);
		ck_assert_msg(f->pdu_unaligned == 0 && f->pdu_short_starts == 0,
			      "dir %d: %u PDUs not at a segment start, %u with a short first segment",
			      d, f->pdu_unaligned, f->pdu_short_starts);
	}
	/* The initiator's last 3 octets, held back, went out before its FIN. */
	ck_assert(iw.dir[0].truncated && !iw.dir[1].truncated);
	ck_assert_uint_eq(c->bad_acks, 0);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* Over IPv6 (::1): IPv6 framing with the real addresses, both ends in one
 * context, traced once. */
START_TEST(ipv6_one_context)
{
	char p[300];
	tmp_init();
	tmp_path(p, sizeof(p), "v6.pcap");
	struct iw_context *ctx = ctx_new(p, 0);
	struct side srv, cli;
	side_init(&srv, ctx);
	side_init(&cli, ctx);
	pair_connect_fam(&srv, &cli, AF_INET6);
	fill(cli.buf, 300000, 5);
	post(&cli, IW_WR_RDMA_WRITE, 0, 300000, &srv, 0);
	wc_wait(cli.cq, IW_WC_RDMA_WRITE, 0);
	post(&cli, IW_WR_RDMA_READ, READ_DST, 300000, &srv, 0);
	wc_wait(cli.cq, IW_WC_RDMA_READ, 300000);
	pair_close(&srv, &cli);
	/* Both sides share the context: free it once, after both. */
	srv.ctx = cli.ctx = NULL;
	side_fini(&cli);
	side_fini(&srv);
	ck_assert_int_eq(iw_context_free(ctx), 0);

	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, p) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_int_eq(cap.num_conns, 1); /* not once per end */
	const struct rt_conn *c = &cap.conn[0];
	ck_assert_int_eq(c->family, 6);
	ck_assert(!memcmp(c->addr[0], &in6addr_loopback, 16));
	ck_assert(c->dir[0].fin && c->dir[1].fin && !c->rst);
	struct rt_iwarp iw;
	ck_assert_int_eq(rt_decode(c, &iw), 0);
	ck_assert_uint_eq(iw.dir[0].payload[IW_OP_WRITE], 300000);
	ck_assert_uint_eq(iw.dir[1].payload[IW_OP_READ_RESP], 300000);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* A program that exits with its context alive (never calls
 * iw_context_free, as many do) still leaves a whole trace: the writer is
 * drained at exit, and no record is torn. */
START_TEST(exit_drains)
{
	char p[300];
	tmp_init();
	tmp_path(p, sizeof(p), "exit.pcap");
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct side srv, cli;
		side_init(&srv, ctx_new(NULL, 0));
		side_init(&cli, ctx_new(p, 0));
		pair_connect(&srv, &cli);
		for (unsigned i = 0; i < 8; i++) {
			post(&cli, IW_WR_RDMA_WRITE, 0, MIB, &srv, 0);
			wc_wait(cli.cq, IW_WC_RDMA_WRITE, 0);
		}
		exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, p) == 0, "%s", cap.why);
	ck_assert_msg(cap.problems == 0, "%s", cap.why);
	ck_assert_int_eq(cap.num_conns, 1);
	const struct rt_conn *c = &cap.conn[0];
	ck_assert(c->synack && c->ack && !c->rst && !c->dir[0].fin);
	struct rt_iwarp iw;
	ck_assert_int_eq(rt_decode(c, &iw), 0);
	/* Every Write completed before exit, so all of it is in the file. */
	ck_assert_uint_eq(iw.dir[0].payload[IW_OP_WRITE], 8ull * MIB);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

/* ============================================================ wake-ups */

static struct iw_qp_attr qp_attr_of(struct iw_qp *qp)
{
	struct iw_qp_attr a;
	struct iw_qp_init_attr ia;
	ck_assert_int_eq(iw_query_qp(qp, &a, IW_QP_STATE, &ia), 0);
	return a;
}

START_TEST(wake)
{
	char sp[300];
	tmp_init();
	tmp_path(sp, sizeof(sp), "wake.pcap");
	struct side srv, cli;
	side_init(&srv, ctx_new(sp, 0));
	side_init(&cli, ctx_new(NULL, 0));
	cli_wake_ms = 20;
	uint8_t rtr = pair_connect(&srv, &cli);
	cli_wake_ms = 0;
	ck_assert_uint_eq(rtr, IW_RTR_WRITE);
	/* A Send the server takes without a word back; the wake-ups due at
	 * 20, 60 and 140 ms after the start follow it. */
	post(&cli, IW_WR_SEND, SEND_AREA, 100, NULL, 0);
	wc_wait(cli.cq, IW_WC_SEND, 0);
	wc_wait(srv.cq, IW_WC_RECV, 100);
	struct timespec ts = {0, 400 * 1000 * 1000};
	nanosleep(&ts, NULL);
	/* The server speaks: no wake-up after this one is read. The rest of
	 * the schedule (300, 620, 1260 ms) passes in silence. */
	post_recv(&cli, SEND_AREA, RECV_SLOT);
	post(&srv, IW_WR_SEND, SRV_SEND_OFF, 10, NULL, 0);
	wc_wait(srv.cq, IW_WC_SEND, 0);
	wc_wait(cli.cq, IW_WC_RECV, 10);
	ts.tv_sec = 1;
	nanosleep(&ts, NULL);
	/* The Writes did the responder no harm: both QPs are in RTS and a
	 * Send still goes through. */
	ck_assert_int_eq(qp_attr_of(srv.id->qp).qp_state, IW_QPS_RTS);
	ck_assert_int_eq(qp_attr_of(cli.id->qp).qp_state, IW_QPS_RTS);
	post(&cli, IW_WR_SEND, SEND_AREA, 100, NULL, 0);
	wc_wait(cli.cq, IW_WC_SEND, 0);
	wc_wait(srv.cq, IW_WC_RECV, 100);
	pair_close(&srv, &cli);
	side_fini(&cli);
	side_fini(&srv);

	static struct rt_capture cap;
	ck_assert_msg(rt_read(&cap, sp) == 0, "%s", cap.why);
	struct rt_iwarp iw;
	ck_assert_int_eq(rt_decode(&cap.conn[0], &iw), 0);
	unsigned z = iw.dir[0].zero_len_writes;
	/* The RTR, then at least one wake-up (three are due in the first
	 * 400 ms; a loaded machine or valgrind may fire them late), and
	 * never the last, due 1260 ms in: the server's Send, read at about
	 * 400 ms, ended the schedule. */
	ck_assert_msg(z >= 1 + 1 && z <= 1 + 5, "zero-length Writes: %u", z);
	ck_assert_uint_eq(iw.dir[0].msgs[IW_OP_SEND], 2);
	ck_assert_uint_eq(iw.dir[1].segs[IW_OP_TERMINATE], 0);
	rt_free(&cap);
	tmp_fini();
}
END_TEST

Suite *suite_trace(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("trace");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, loopback);
	tcase_add_test(tc, size_cap);
	tcase_add_test(tc, config);
	tcase_add_test(tc, queue);
	tcase_add_test(tc, tx_copy);
	tcase_add_test(tc, dribble);
	tcase_add_test(tc, mss_follow);
	tcase_add_test(tc, exit_drains);
	tcase_add_test(tc, ipv6_one_context);
	tcase_add_test(tc, wake);
	suite_add_tcase(s, tc);
	return s;
}
