/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * crc_term: the MPA CRC error path against a live peer (interop issue 5).
 *
 *   crc_term [-t SECS] ADDR PORT
 *
 * The peer is rping's server (`rping -s -a ADDR -p PORT -C 1 -S 64`) on
 * the kernel's siw. We connect with CRC on and peer_siw_term set (siw
 * writes its TERMINATE control word with little-endian bitfields), and
 * speak the first half of rping's ping: our Send advertises a 64-octet
 * buffer, the server RDMA READs it and Sends a go-ahead. That go-ahead is
 * the proof that siw is established: a siw QP that fails before it told
 * the kernel's iw_cm it was established crashes the guest on close.
 *
 * Then we post four receives and five send-queue WRs in one list, with
 * iw_qp_inject_fault arming the first FPDU: Send 1 (bad CRC), RDMA READ 2
 * and 3 (ORD 1 holds 3 back until 2 is answered), Send 4 and 5 (behind
 * 3). siw must find the CRC bad, TERMINATE with LLP / MPA / 0x02, and
 * close. We check that the TERMINATE reaches us as the peer's with that
 * triple, that every WR completes exactly once, in posting order, flushed
 * with that triple unless it truly completed (Send 1 was written before
 * the TERMINATE could come back), and that the connection ends. Every
 * wait is bounded.
 *
 * Output: one line, "crc_term: PASS: ..." or "crc_term: FAIL: ...", with
 * each failed check on stderr before it. Exit 0 only on PASS; 1 on a
 * failed check, 2 on usage, 3 when no connection was made.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iwarp/iwarp.h>

enum { EXIT_PASS = 0, EXIT_CHECK = 1, EXIT_USAGE = 2, EXIT_NOCONN = 3 };

#define ADV_LEN 16      /* rping's advertisement: be64 addr, be32 rkey, be32 len */
#define PING_SIZE 64    /* rping -S 64 */
#define NRECV 4         /* receives outstanding when the fault fires */
#define NSEND 5         /* send-queue WRs outstanding when the fault fires */
#define MAX_WC 32
#define MAX_AE 8
#define GRACE_MS 500    /* quiet time after the end, for late duplicates */
#define WR_ADVERT 900   /* the handshake's WRs */
#define WR_GO_AHEAD 910
#define WR_RECV0 101    /* the test's receives: 101..104 */

struct wcrec {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	uint32_t vendor_err;
};

/* Everything the peer and the library told us, in arrival order. */
struct seen {
	struct wcrec s[MAX_WC], r[MAX_WC];
	int ns, nr;
	struct iw_async_event ae[MAX_AE];
	int nae;
	bool established, disconnected, cm_failed;
	enum iw_cm_event_type cm_last;
	int cm_status;
	uint8_t ord;
	bool crc;
};

struct run {
	int timeout_ms;
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_id *id;
	struct iw_pd *pd;
	struct iw_cq *scq, *rcq;
	struct iw_mr *msg_mr, *src_mr, *sink_mr, *recv_mr;
	uint8_t msg[ADV_LEN];              /* what our Sends carry */
	uint8_t src[PING_SIZE];            /* the buffer rping READs */
	uint8_t sink[PING_SIZE];           /* our READ sink, rping's WRITE sink */
	uint8_t recv[NRECV + 1][ADV_LEN];
	struct seen seen;
	int failed;
};

/* ----------------------------------------------------------- output */

__attribute__((format(printf, 2, 3))) static void check(struct run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("crc_term: check failed: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	r->failed++;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(void)
{
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

/* ----------------------------------------------------------- collecting */

static void take_wcs(struct iw_cq *cq, struct wcrec *out, int *n)
{
	struct iw_wc wc;
	while (iw_poll_cq(cq, 1, &wc) == 1) {
		/* Past MAX_WC only the count goes on: an excess is a failure. */
		if (*n < MAX_WC)
			out[*n] = (struct wcrec){wc.wr_id, wc.status, wc.opcode, wc.vendor_err};
		(*n)++;
	}
}

static void take_cm_event(struct run *r, const struct iw_cm_event *ev)
{
	struct seen *s = &r->seen;
	s->cm_last = ev->event;
	s->cm_status = ev->status;
	if (ev->event == IW_CM_EVENT_ESTABLISHED) {
		s->established = true;
		s->ord = ev->param.initiator_depth;
		s->crc = ev->crc;
	} else if (ev->event == IW_CM_EVENT_DISCONNECTED) {
		s->disconnected = true;
	} else {
		s->cm_failed = true;
	}
}

/* Move whatever the CQs, the async queue and the CM channel hold into
 * r->seen. Nothing here blocks. */
static void collect(struct run *r)
{
	struct seen *s = &r->seen;
	take_wcs(r->scq, s->s, &s->ns);
	take_wcs(r->rcq, s->r, &s->nr);
	struct iw_async_event ae;
	while (iw_get_async_event(r->ctx, &ae) == 0) {
		if (s->nae < MAX_AE)
			s->ae[s->nae] = ae;
		s->nae++;
	}
	struct iw_cm_event *ev;
	while (iw_cm_get_event(r->ch, &ev) == 0) {
		take_cm_event(r, ev);
		iw_cm_ack_event(ev);
	}
}

/* Collect until done(r) holds or ms pass; returns done(r). */
static bool wait_for(struct run *r, bool (*done)(const struct run *), int ms)
{
	int64_t deadline = now_ms() + ms;
	for (;;) {
		collect(r);
		if (done(r))
			return true;
		if (now_ms() >= deadline)
			return false;
		nap();
	}
}

/* ----------------------------------------------------------- resources */

static struct iw_mr *reg(struct run *r, void *p, size_t n, int access)
{
	struct iw_mr *mr = iw_reg_mr(r->pd, p, n, access);
	if (!mr)
		fprintf(stderr, "crc_term: iw_reg_mr: %s\n", strerror(errno));
	return mr;
}

static int setup_mrs(struct run *r)
{
	r->msg_mr = reg(r, r->msg, sizeof(r->msg), 0);
	/* rping READs src; the sink of our READ is written by a tagged Read
	 * Response, which on iWARP needs REMOTE_WRITE. */
	r->src_mr = reg(r, r->src, sizeof(r->src), IW_ACCESS_REMOTE_READ);
	r->sink_mr = reg(r, r->sink, sizeof(r->sink),
			 IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	r->recv_mr = reg(r, r->recv, sizeof(r->recv), IW_ACCESS_LOCAL_WRITE);
	return r->msg_mr && r->src_mr && r->sink_mr && r->recv_mr ? 0 : -1;
}

static int setup(struct run *r)
{
	r->ctx = iw_context_new(NULL);
	r->ch = r->ctx ? iw_cm_create_channel(r->ctx) : NULL;
	if (!r->ch || fcntl(r->ch->fd, F_SETFL, O_NONBLOCK) || iw_cm_create_id(r->ch, &r->id, r))
		return -1;
	r->pd = iw_alloc_pd(r->ctx);
	r->scq = iw_create_cq(r->ctx, MAX_WC, NULL, NULL, 0);
	r->rcq = iw_create_cq(r->ctx, MAX_WC, NULL, NULL, 0);
	if (!r->pd || !r->scq || !r->rcq || setup_mrs(r))
		return -1;
	struct iw_qp_init_attr qa = {
		.send_cq = r->scq,
		.recv_cq = r->rcq,
		.qp_type = IW_QPT_RC,
		.sq_sig_all = 1,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	int rc = iw_cm_create_qp(r->id, r->pd, &qa);
	if (rc)
		fprintf(stderr, "crc_term: iw_cm_create_qp: %s\n", strerror(rc));
	return rc ? -1 : 0;
}

/* The id first: destroying it destroys the QP, which flushes the WRs that
 * still hold the MRs. */
static void teardown(struct run *r)
{
	if (r->id)
		iw_cm_destroy_id(r->id);
	iw_dereg_mr(r->msg_mr);
	iw_dereg_mr(r->src_mr);
	iw_dereg_mr(r->sink_mr);
	iw_dereg_mr(r->recv_mr);
	iw_destroy_cq(r->scq);
	iw_destroy_cq(r->rcq);
	iw_dealloc_pd(r->pd);
	iw_cm_destroy_channel(r->ch);
	iw_context_free(r->ctx);
}

/* ----------------------------------------------------------- posting */

static int post_recv(struct run *r, uint64_t id, int slot)
{
	struct iw_sge sge = {(uintptr_t)r->recv[slot], ADV_LEN, r->recv_mr->lkey};
	struct iw_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
	int rc = iw_post_recv(r->id->qp, &wr, NULL);
	if (rc)
		fprintf(stderr, "crc_term: iw_post_recv: %s\n", strerror(rc));
	return rc;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* rping's struct rping_rdma_info for one of our buffers, into r->msg. */
static void advert(struct run *r, const void *buf, const struct iw_mr *mr)
{
	put_be(r->msg, (uintptr_t)buf, 8);
	put_be(r->msg + 8, mr->rkey, 4);
	put_be(r->msg + 12, PING_SIZE, 4);
}

static struct iw_send_wr send_wr(struct run *r, uint64_t id, struct iw_sge *sge)
{
	*sge = (struct iw_sge){(uintptr_t)r->msg, ADV_LEN, r->msg_mr->lkey};
	return (struct iw_send_wr){.wr_id = id, .sg_list = sge, .num_sge = 1,
				   .opcode = IW_WR_SEND};
}

/* A READ of a buffer rping never advertised: siw must never get to it
 * (it stops reading at the bad CRC), so its STag only has to be
 * plausible; were it processed, the TERMINATE would name an STag error
 * and the run would fail on the triple. */
static struct iw_send_wr read_wr(struct run *r, uint64_t id, struct iw_sge *sge)
{
	*sge = (struct iw_sge){(uintptr_t)r->sink, PING_SIZE, r->sink_mr->lkey};
	struct iw_send_wr wr = {.wr_id = id, .sg_list = sge, .num_sge = 1,
				.opcode = IW_WR_RDMA_READ};
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x00010000;
	return wr;
}

/* ----------------------------------------------------------- phases */

static bool connected(const struct run *r)
{
	return r->seen.established || r->seen.cm_failed || r->seen.disconnected;
}

static int connect_peer(struct run *r, const struct sockaddr_in *dst)
{
	struct iw_mpa_opts mo;
	iw_mpa_opts_default(&mo);
	mo.crc = true;
	mo.peer_siw_term = true;
	/* IRD/ORD 1/1 as rping; ORD 1 is what holds READ 3 back. */
	struct iw_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
				  .connect_timeout_ms = (uint32_t)r->timeout_ms, .mpa = &mo};
	if (post_recv(r, WR_GO_AHEAD, NRECV))
		return -1;
	int rc = iw_cm_connect(r->id, (const struct sockaddr *)dst, &p);
	if (rc) {
		fprintf(stderr, "crc_term: iw_cm_connect: %s\n", strerror(rc));
		return -1;
	}
	if (!wait_for(r, connected, 2 * r->timeout_ms) || !r->seen.established) {
		fprintf(stderr, "crc_term: no connection: %s (%s)\n",
			r->seen.cm_last ? iw_cm_event_str(r->seen.cm_last) : "no event",
			strerror(r->seen.cm_status));
		return -1;
	}
	if (!r->seen.crc) {
		fprintf(stderr, "crc_term: the connection did not negotiate CRC\n");
		return -1;
	}
	return 0;
}

static bool handshake_done(const struct run *r)
{
	return (r->seen.ns >= 1 && r->seen.nr >= 1) || r->seen.nae || r->seen.disconnected;
}

/* rping's first half-ping: our advertisement, its READ, its go-ahead. */
static int handshake(struct run *r)
{
	for (size_t i = 0; i < sizeof(r->src); i++)
		r->src[i] = (uint8_t)('A' + i % 26);
	advert(r, r->src, r->src_mr);
	struct iw_sge sge;
	struct iw_send_wr wr = send_wr(r, WR_ADVERT, &sge);
	int rc = iw_post_send(r->id->qp, &wr, NULL);
	if (rc || !wait_for(r, handshake_done, r->timeout_ms)) {
		fprintf(stderr, "crc_term: handshake: %s\n", rc ? strerror(rc) : "timed out");
		return -1;
	}
	const struct seen *s = &r->seen;
	if (s->nae || s->ns != 1 || s->nr != 1 || s->s[0].status != IW_WC_SUCCESS ||
	    s->r[0].wr_id != WR_GO_AHEAD || s->r[0].status != IW_WC_SUCCESS) {
		fprintf(stderr, "crc_term: handshake failed (send %s, go-ahead %s, %d events)\n",
			s->ns ? iw_wc_status_str(s->s[0].status) : "-",
			s->nr ? iw_wc_status_str(s->r[0].status) : "-", s->nae);
		return -1;
	}
	memset(&r->seen.s, 0, sizeof(r->seen.s) + sizeof(r->seen.r));
	r->seen.ns = r->seen.nr = 0;
	return 0;
}

/* Four receives, the fault on the next FPDU, then the five WRs in one
 * list so that they are framed in one go behind the faulty Send. */
static int post_faulty(struct run *r)
{
	for (int i = 0; i < NRECV; i++)
		if (post_recv(r, WR_RECV0 + (uint64_t)i, i))
			return -1;
	/* What rping expects next: the sink advertisement. */
	advert(r, r->sink, r->sink_mr);
	struct iw_sge sg[NSEND];
	struct iw_send_wr wr[NSEND] = {send_wr(r, 1, &sg[0]), read_wr(r, 2, &sg[1]),
				       read_wr(r, 3, &sg[2]), send_wr(r, 4, &sg[3]),
				       send_wr(r, 5, &sg[4])};
	for (int i = 0; i + 1 < NSEND; i++)
		wr[i].next = &wr[i + 1];
	int rc = iw_qp_inject_fault(r->id->qp, IW_FAULT_TX_CRC, 1);
	if (rc) {
		fprintf(stderr, "crc_term: iw_qp_inject_fault: %s\n", strerror(rc));
		return -1;
	}
	rc = iw_post_send(r->id->qp, wr, NULL);
	if (rc)
		fprintf(stderr, "crc_term: iw_post_send: %s\n", strerror(rc));
	return rc ? -1 : 0;
}

static bool all_in(const struct run *r)
{
	const struct seen *s = &r->seen;
	return s->nae >= 1 && s->ns >= NSEND && s->nr >= NRECV &&
	       (s->disconnected || s->cm_failed);
}

/* ----------------------------------------------------------- checking */

static void check_event(struct run *r)
{
	const struct seen *s = &r->seen;
	if (s->nae != 1) {
		check(r, "%d asynchronous events, want exactly 1", s->nae);
		if (s->nae == 0)
			return;
	}
	const struct iw_async_event *e = &s->ae[0];
	uint32_t t = e->term;
	if (e->event_type != IW_EVENT_QP_TERMINATE || !e->term_from_peer)
		check(r, "event %s (%s TERMINATE 0x%04x), want the peer's TERMINATE",
		      iw_event_type_str(e->event_type), e->term_from_peer ? "peer's" : "our",
		      t);
	if (e->element.qp != r->id->qp)
		check(r, "the event names another QP");
	if (IW_TERM_LAYER(t) != IW_LAYER_LLP || IW_TERM_ETYPE(t) != 0 ||
	    IW_TERM_ECODE(t) != 0x02)
		check(r, "TERMINATE layer %u type %u code 0x%02x (%s), want LLP(2)/MPA(0)/0x02",
		      IW_TERM_LAYER(t), IW_TERM_ETYPE(t), IW_TERM_ECODE(t), iw_term_str(t));
}

/* One completion against what it must be: the right WR in posting order,
 * and flushed with the peer's triple, unless ok_success allows that it
 * truly completed first. Returns 1 if it was flushed. */
static int check_wc(struct run *r, const struct wcrec *w, uint64_t id, enum iw_wc_opcode op,
		    bool ok_success)
{
	if (w->wr_id != id || w->opcode != op) {
		check(r, "completion wr_id %llu (%s) where WR %llu (%s) was due",
		      (unsigned long long)w->wr_id, iw_wc_opcode_str(w->opcode),
		      (unsigned long long)id, iw_wc_opcode_str(op));
		return 0;
	}
	if (w->status == IW_WC_SUCCESS && ok_success)
		return 0;
	if (w->status != IW_WC_WR_FLUSH_ERR)
		check(r, "WR %llu completed with %s, want %s", (unsigned long long)id,
		      iw_wc_status_str(w->status), ok_success ? "SUCCESS or a flush" : "a flush");
	else if (w->vendor_err != IW_TERM_LLP_CRC)
		check(r, "WR %llu flushed with vendor_err 0x%04x, want 0x%04x",
		      (unsigned long long)id, w->vendor_err, IW_TERM_LLP_CRC);
	return w->status == IW_WC_WR_FLUSH_ERR;
}

/* Send 1 went out before the TERMINATE could come back, so SUCCESS is
 * right for it. Nothing answers the READs. With ORD 1, READ 3 and the
 * Sends behind it never left. */
static int check_sends(struct run *r, char *desc, size_t len)
{
	const struct seen *s = &r->seen;
	static const enum iw_wc_opcode ops[NSEND] = {IW_WC_SEND, IW_WC_RDMA_READ,
						     IW_WC_RDMA_READ, IW_WC_SEND, IW_WC_SEND};
	int flushed = 0;
	if (s->ns != NSEND)
		check(r, "%d send completions, want exactly %d", s->ns, NSEND);
	size_t off = (size_t)snprintf(desc, len, "send");
	for (int i = 0; i < s->ns && i < NSEND; i++) {
		bool may_succeed = i == 0 || (ops[i] == IW_WC_SEND && s->ord > 1);
		int f = check_wc(r, &s->s[i], (uint64_t)i + 1, ops[i], may_succeed);
		flushed += f;
		if (off < len)
			off += (size_t)snprintf(desc + off, len - off, " %d:%s", i + 1,
						f ? "FLUSH" : iw_wc_status_str(s->s[i].status));
	}
	return flushed;
}

static int check_recvs(struct run *r)
{
	const struct seen *s = &r->seen;
	int flushed = 0;
	if (s->nr != NRECV)
		check(r, "%d receive completions, want exactly %d", s->nr, NRECV);
	for (int i = 0; i < s->nr && i < NRECV; i++)
		flushed += check_wc(r, &s->r[i], WR_RECV0 + (uint64_t)i, IW_WC_RECV, false);
	return flushed;
}

static void check_end(struct run *r)
{
	const struct seen *s = &r->seen;
	if (!s->disconnected)
		check(r, "the connection did not end with DISCONNECTED (last CM event %s)",
		      s->cm_last ? iw_cm_event_str(s->cm_last) : "none");
	struct iw_qp_attr qa;
	if (iw_query_qp(r->id->qp, &qa, IW_QP_STATE, NULL) || qa.qp_state != IW_QPS_ERR)
		check(r, "the QP is not in ERR");
}

static bool never(const struct run *r)
{
	(void)r;
	return false;
}

static int verdict(struct run *r, bool complete)
{
	if (!complete)
		check(r, "not everything arrived within %d ms (events %d, send %d/%d, "
			 "receive %d/%d, %s)", r->timeout_ms, r->seen.nae, r->seen.ns, NSEND,
		      r->seen.nr, NRECV, r->seen.disconnected ? "disconnected" : "connected");
	/* Late arrivals would be duplicates or strays. */
	wait_for(r, never, GRACE_MS);
	char sends[128];
	check_event(r);
	int flushed = check_sends(r, sends, sizeof(sends));
	flushed += check_recvs(r);
	check_end(r);
	uint32_t t = r->seen.nae ? r->seen.ae[0].term : IW_TERM_NONE;
	printf("crc_term: %s: peer TERMINATE layer %s(%u) type %u code 0x%02x (%s); "
	       "ORD %u; %s; recv %d flushed; flushed %d WRs; %s\n",
	       r->failed ? "FAIL" : "PASS", iw_term_layer_str(IW_TERM_LAYER(t)),
	       IW_TERM_LAYER(t), IW_TERM_ETYPE(t), IW_TERM_ECODE(t),
	       iw_term_str(t), r->seen.ord, sends,
	       r->seen.nr, flushed, r->seen.disconnected ? "DISCONNECTED" : "not disconnected");
	return r->failed ? EXIT_CHECK : EXIT_PASS;
}

/* ----------------------------------------------------------- main */

static int parse(int argc, char **argv, struct run *r, struct sockaddr_in *dst)
{
	int i = 1;
	r->timeout_ms = 10000;
	if (argc > 2 && strcmp(argv[1], "-t") == 0) {
		r->timeout_ms = atoi(argv[2]) * 1000;
		i = 3;
	}
	if (argc - i != 2 || r->timeout_ms <= 0)
		return -1;
	memset(dst, 0, sizeof(*dst));
	dst->sin_family = AF_INET;
	int port = atoi(argv[i + 1]);
	if (inet_pton(AF_INET, argv[i], &dst->sin_addr) != 1 || port <= 0 || port > 65535)
		return -1;
	dst->sin_port = htons((uint16_t)port);
	return 0;
}

int main(int argc, char **argv)
{
	static struct run r;
	struct sockaddr_in dst;
	if (parse(argc, argv, &r, &dst)) {
		fprintf(stderr, "usage: crc_term [-t SECS] IPV4-ADDR PORT\n");
		return EXIT_USAGE;
	}
	int ret = EXIT_NOCONN;
	if (setup(&r) == 0 && connect_peer(&r, &dst) == 0 && handshake(&r) == 0) {
		ret = EXIT_CHECK;
		if (post_faulty(&r) == 0)
			ret = verdict(&r, wait_for(&r, all_in, r.timeout_ms));
	}
	if (ret == EXIT_NOCONN)
		printf("crc_term: FAIL: no connection or handshake with the peer\n");
	else if (ret == EXIT_CHECK && !r.failed)
		printf("crc_term: FAIL: the faulty WRs could not be posted\n");
	teardown(&r);
	return ret;
}
