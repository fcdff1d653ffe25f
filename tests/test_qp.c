/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP engine (lib/engine/qp.c, qp_tx.c, qp_rx.c, qp_term.c, wr.c, srq.c) with
 * no sockets.
 *
 *  - A pump wires two QPs back to back in memory: it takes each side's
 *    iw_qp_tx_iov, reports it sent (all of it, or a random prefix as a busy
 *    TCP would), and feeds the octets to the other side whole, one octet at
 *    a time, in random splits, or through the direct-placement pair
 *    (iw_qp_rx_direct / iw_qp_rx_direct_done), until both are quiet. A tap
 *    decodes every octet that crosses, so tests can check the wire itself:
 *    FPDUs no larger than MULPDU, the RTR first, no STag 0 on zero-length
 *    tagged frames, at most ORD reads in flight.
 *  - A scripted hostile peer feeds one QP FPDUs built with the public codecs
 *    (iw_ddp_hdr_build, iw_rdmap_*_build, iw_fpdu_encode), decodes what the
 *    QP answers with iw_fpdu_rx_next, and checks the exact TERMINATE, the
 *    ERR state, the asynchronous event and the flush completions.
 *
 * Every registered buffer sits between canaries that must come back
 * untouched, and every MR must deregister at the end: a reference that the
 * engine forgot to drop shows up as EBUSY.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"
#include "engine/srq.h"
#include "engine/wr.h"
#include "mempump.h"
#include "suites.h"

/* ================================================================ helpers */

#define CANARY 32
#define CANARY_BYTE 0xC3
#define MAX_BUFS 48
#define MAX_ENDS 4
#define CQE 8192
#define TAP_LOG 256
#define ACC_ALL                                                                   \
	(IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | \
	 IW_ACCESS_REMOTE_ATOMIC)
#define ACC_RW (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE)
#define ACC_RD (IW_ACCESS_REMOTE_READ)

static uint32_t xorshift(uint32_t *s)
{
	uint32_t x = *s ? *s : 0x9E3779B9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t s = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(xorshift(&s) >> 11);
}

/* A buffer between canaries, registered (or not, with pd NULL). */
struct buf {
	uint8_t *raw;
	uint8_t *p;
	size_t len; /* registered length (>= 1: zero-length MRs do not exist) */
	struct iw_mr *mr;
};

static void buf_check(const struct buf *b)
{
	for (size_t i = 0; i < CANARY; i++) {
		if (b->raw[i] != CANARY_BYTE || b->raw[CANARY + b->len + i] != CANARY_BYTE)
			ck_abort_msg("canary next to a %zu-octet buffer overwritten", b->len);
	}
}


/* What one end put on the wire, as an independent decoder saw it. */
struct tap_seg {
	uint8_t op;
	bool tagged, last;
	uint32_t stag, msn, qn, mo;
	uint32_t plen;
	struct iw_read_req rr;
};

struct tap {
	struct iw_fpdu_rx rx;
	int err;
	unsigned nseg;
	struct tap_seg log[TAP_LOG];
	uint32_t max_ulpdu;
	unsigned stag0;  /* zero-length tagged segments carrying STag 0 */
	unsigned nterm;
	struct iw_terminate term;
};

struct end {
	struct iw_qp *qp;
	struct iw_cq *scq, *rcq;
	struct iw_qp_conn conn;
	struct tap tap;  /* decodes what this end sends */
	unsigned events; /* IW_QPE_* taken so far */
	int reads_out;   /* read requests this end has on the wire */
	int reads_max;
};

struct cfg {
	bool crc, mk_ab, mk_ba; /* markers on A->B, on B->A */
	bool p2p;
	uint8_t rtr;
	uint16_t ird, ord;      /* 0: 16 */
	uint32_t emss;          /* 0: 1460 */
	uint32_t create_flags;
	bool srq;               /* the B ends share one SRQ */
	uint32_t sq, rq;        /* 0: 64 */
	bool no_sig_all;
	bool channel;           /* every CQ on one completion channel */
	int nqp;                /* 0: 2; 1 for a hostile peer; 4 = two pairs */
};

struct world {
	struct iw_context *ctx;
	struct iw_pd *pd, *pd2;
	struct iw_srq *srq;
	struct cfg cfg;
	int nends;
	struct end e[MAX_ENDS];
	struct mp mp; /* the shared in-memory pump (mode, partial, stage) */
	struct iw_comp_channel *ch; /* cfg.channel */
	bool tap;
	uint32_t rng;
	struct buf bufs[MAX_BUFS];
};

static struct buf *buf_new(struct world *w, struct iw_pd *pd, size_t len, int access)
{
	struct buf *b = NULL;
	for (int i = 0; i < MAX_BUFS && !b; i++)
		if (!w->bufs[i].raw)
			b = &w->bufs[i];
	ck_assert_ptr_nonnull(b);
	size_t cap = len ? len : 1;
	b->raw = malloc(cap + 2 * CANARY);
	ck_assert_ptr_nonnull(b->raw);
	memset(b->raw, CANARY_BYTE, CANARY);
	memset(b->raw + CANARY + cap, CANARY_BYTE, CANARY);
	b->p = b->raw + CANARY;
	b->len = cap;
	memset(b->p, 0, cap);
	b->mr = NULL;
	if (pd) {
		b->mr = iw_reg_mr(pd, b->p, cap, access);
		ck_assert_ptr_nonnull(b->mr);
	}
	return b;
}

/* Canaries intact, and the MR deregisters: no reference was leaked. */
static void buf_free(struct buf *b)
{
	if (!b || !b->raw)
		return;
	buf_check(b);
	if (b->mr)
		ck_assert_int_eq(iw_dereg_mr(b->mr), 0);
	free(b->raw);
	memset(b, 0, sizeof(*b));
}

static struct iw_sge sge_of(const struct buf *b, size_t off, size_t len)
{
	return (struct iw_sge){
		.addr = (uintptr_t)(b->p + off),
		.length = (uint32_t)len,
		.lkey = b->mr ? b->mr->lkey : 0,
	};
}

static int post_recv_sg(struct iw_qp *qp, uint64_t id, struct iw_sge *sg, int n)
{
	struct iw_recv_wr wr = {.wr_id = id, .sg_list = sg, .num_sge = n};
	struct iw_recv_wr *bad = NULL;
	int rc = iw_post_recv(qp, &wr, &bad);
	ck_assert_ptr_eq(bad, rc ? &wr : NULL);
	return rc;
}

static void post_recv_buf(struct iw_qp *qp, uint64_t id, const struct buf *b, size_t off,
			  size_t len)
{
	struct iw_sge s = sge_of(b, off, len);
	ck_assert_int_eq(post_recv_sg(qp, id, &s, 1), 0);
}

static struct iw_send_wr wr_of(uint64_t id, enum iw_wr_opcode op, unsigned flags,
			       struct iw_sge *sg, int n)
{
	struct iw_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = sg;
	wr.num_sge = n;
	return wr;
}

static int post_wr(struct iw_qp *qp, struct iw_send_wr *wr)
{
	struct iw_send_wr *bad = NULL;
	int rc = iw_post_send(qp, wr, &bad);
	ck_assert_ptr_eq(bad, rc ? wr : NULL);
	return rc;
}

static int post_rdma(struct iw_qp *qp, uint64_t id, enum iw_wr_opcode op, unsigned flags,
		     struct iw_sge *sg, int n, const void *raddr, uint32_t rkey)
{
	struct iw_send_wr wr = wr_of(id, op, flags, sg, n);
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	return post_wr(qp, &wr);
}

static int post_send_buf(struct iw_qp *qp, uint64_t id, unsigned flags, const struct buf *b,
			 size_t len)
{
	struct iw_sge s = sge_of(b, 0, len);
	struct iw_send_wr wr = wr_of(id, IW_WR_SEND, flags, &s, 1);
	return post_wr(qp, &wr);
}

/* ---------------------------------------------------------------- CQs */

static struct iw_wc poll1(struct iw_cq *cq)
{
	struct iw_wc wc;
	memset(&wc, 0, sizeof(wc));
	ck_assert_int_eq(iw_poll_cq(cq, 1, &wc), 1);
	return wc;
}

static void expect_empty(struct iw_cq *cq)
{
	struct iw_wc wc;
	int n = iw_poll_cq(cq, 1, &wc);
	ck_assert_msg(n == 0, "unexpected completion: wr_id %llu status %s opcode %s",
		      (unsigned long long)(n ? wc.wr_id : 0), n ? iw_wc_status_str(wc.status) : "",
		      n ? iw_wc_opcode_str(wc.opcode) : "");
}

static struct iw_wc expect_wc(struct iw_cq *cq, uint64_t id, enum iw_wc_status st,
			      enum iw_wc_opcode op)
{
	struct iw_wc wc = poll1(cq);
	ck_assert_msg(wc.wr_id == id && wc.status == st && wc.opcode == op,
		      "got wr_id %llu %s %s, want %llu %s %s", (unsigned long long)wc.wr_id,
		      iw_wc_status_str(wc.status), iw_wc_opcode_str(wc.opcode),
		      (unsigned long long)id, iw_wc_status_str(st), iw_wc_opcode_str(op));
	return wc;
}

static enum iw_qp_state qp_state(struct iw_qp *qp)
{
	struct iw_qp_attr a;
	ck_assert_int_eq(iw_query_qp(qp, &a, IW_QP_STATE, NULL), 0);
	return a.qp_state;
}

static int async_count(struct iw_context *ctx, struct iw_async_event *out, int max)
{
	int n = 0;
	struct iw_async_event ev;
	while (iw_get_async_event(ctx, &ev) == 0) {
		if (n < max)
			out[n] = ev;
		n++;
	}
	return n;
}

/* ================================================================ world */

static void conn_of(struct iw_qp_conn *c, const struct cfg *g, bool initiator)
{
	memset(c, 0, sizeof(*c));
	c->initiator = initiator;
	c->p2p = g->p2p;
	c->rtr = g->rtr;
	c->crc = g->crc;
	c->markers_tx = initiator ? g->mk_ab : g->mk_ba;
	c->markers_rx = initiator ? g->mk_ba : g->mk_ab;
	c->ird = g->ird ? g->ird : 16;
	c->ord = g->ord ? g->ord : 16;
	c->mulpdu = iw_mpa_mulpdu(g->emss ? g->emss : 1460, c->markers_tx);
}

static struct iw_qp *qp_new(struct world *w, struct end *e, struct iw_srq *srq)
{
	struct iw_qp_init_attr a;
	memset(&a, 0, sizeof(a));
	a.send_cq = e->scq;
	a.recv_cq = e->rcq;
	a.srq = srq;
	a.cap.max_send_wr = w->cfg.sq ? w->cfg.sq : 64;
	a.cap.max_recv_wr = srq ? 0 : (w->cfg.rq ? w->cfg.rq : 64);
	a.cap.max_send_sge = IW_MAX_SGE;
	a.cap.max_recv_sge = IW_MAX_SGE;
	a.qp_type = IW_QPT_RC;
	a.sq_sig_all = !w->cfg.no_sig_all;
	a.create_flags = w->cfg.create_flags;
	struct iw_qp *qp = iw_create_qp(w->pd, &a);
	ck_assert_ptr_nonnull(qp);
	return qp;
}

static void world_new(struct world *w, const struct cfg *g)
{
	memset(w, 0, sizeof(*w));
	w->cfg = *g;
	w->rng = 12345;
	w->tap = true;
	w->ctx = iw_context_core_new();
	ck_assert_ptr_nonnull(w->ctx);
	w->pd = iw_alloc_pd(w->ctx);
	w->pd2 = iw_alloc_pd(w->ctx);
	ck_assert_ptr_nonnull(w->pd);
	ck_assert_ptr_nonnull(w->pd2);
	if (g->srq) {
		struct iw_srq_init_attr sa = {.attr = {.max_wr = 64, .max_sge = IW_MAX_SGE}};
		w->srq = iw_create_srq(w->pd, &sa);
		ck_assert_ptr_nonnull(w->srq);
	}
	if (g->channel) {
		w->ch = iw_create_comp_channel(w->ctx);
		ck_assert_ptr_nonnull(w->ch);
	}
	w->nends = g->nqp ? g->nqp : 2;
	for (int i = 0; i < w->nends; i++) {
		struct end *e = &w->e[i];
		e->scq = iw_create_cq(w->ctx, CQE, e, w->ch, 0);
		e->rcq = iw_create_cq(w->ctx, CQE, e, w->ch, 0);
		ck_assert_ptr_nonnull(e->scq);
		ck_assert_ptr_nonnull(e->rcq);
		/* Odd ends are the B sides (responders); they share the SRQ. */
		e->qp = qp_new(w, e, (i & 1) ? w->srq : NULL);
		conn_of(&e->conn, g, !(i & 1) && w->nends > 1);
	}
}

static void world_start(struct world *w)
{
	for (int i = 0; i < w->nends; i++) {
		struct end *e = &w->e[i];
		iw_fpdu_rx_init(&e->tap.rx, e->conn.crc, e->conn.markers_tx, 0, 0, 0);
		iw_qp_start(e->qp, &e->conn);
	}
}

static void world_free(struct world *w)
{
	for (int i = 0; i < w->nends; i++)
		ck_assert_int_eq(iw_destroy_qp(w->e[i].qp), 0);
	/* The SRQ's WQEs hold references on their MRs. */
	ck_assert_int_eq(iw_destroy_srq(w->srq), 0);
	for (int i = 0; i < MAX_BUFS; i++)
		buf_free(&w->bufs[i]);
	for (int i = 0; i < w->nends; i++) {
		ck_assert_int_eq(iw_destroy_cq(w->e[i].scq), 0);
		ck_assert_int_eq(iw_destroy_cq(w->e[i].rcq), 0);
	}
	ck_assert_int_eq(iw_destroy_comp_channel(w->ch), 0);
	/* Nothing still holds the PDs: every MR, QP and SRQ let go. */
	ck_assert_int_eq(iw_dealloc_pd(w->pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(w->pd2), 0);
	iw_context_core_free(w->ctx);
	mp_free(&w->mp);
}

/* ---------------------------------------------------------------- tap */

static void tap_seg(struct world *w, int from, const struct iw_ddp_seg *s)
{
	struct end *e = &w->e[from];
	struct tap *t = &e->tap;
	unsigned op = iw_ddp_opcode(&s->ddp);
	if (t->nseg < TAP_LOG) {
		struct tap_seg *l = &t->log[t->nseg];
		l->op = (uint8_t)op;
		l->tagged = iw_ddp_tagged(&s->ddp);
		l->last = iw_ddp_last(&s->ddp);
		l->stag = s->ddp.stag;
		l->msn = s->ddp.msn;
		l->qn = s->ddp.qn;
		l->mo = s->ddp.mo;
		l->plen = s->payload_len;
		if (op == IW_OP_READ_REQ)
			l->rr = s->rdmap.u.read_req;
	}
	t->nseg++;
	if (s->ulpdu_len > t->max_ulpdu)
		t->max_ulpdu = s->ulpdu_len;
	if (iw_ddp_tagged(&s->ddp) && s->payload_len == 0 && s->ddp.stag == 0)
		t->stag0++;
	/* ORD as the wire shows it: requests out, last responses back. */
	if (op == IW_OP_READ_REQ && s->rdmap.u.read_req.read_size) {
		if (++e->reads_out > e->reads_max)
			e->reads_max = e->reads_out;
	}
	if (op == IW_OP_READ_RESP && iw_ddp_last(&s->ddp) && s->payload_len &&
	    w->e[from ^ 1].reads_out > 0)
		w->e[from ^ 1].reads_out--;
	if (op == IW_OP_TERMINATE) {
		t->nterm++;
		t->term = s->rdmap.u.term;
	}
}

static void tap_feed(struct world *w, int from, const uint8_t *p, size_t n)
{
	struct tap *t = &w->e[from].tap;
	while (n && !t->err) {
		struct iw_rx_event ev;
		size_t used = 0;
		int rc = iw_fpdu_rx_next(&t->rx, &ev, p, n, &used);
		p += used;
		n -= used;
		if (rc < 0)
			t->err = rc;
		if (rc <= 0)
			break;
		if (ev.kind == IW_RX_SEG_HDR)
			tap_seg(w, from, ev.seg);
	}
}

/* ---------------------------------------------------------------- pump */

/* The QP as a mempump end. */
static int qp_tx_iov(void *e, struct iovec *iov, int cap)
{
	return iw_qp_tx_iov(e, iov, cap);
}

static void qp_tx_sent(void *e, size_t n)
{
	iw_qp_tx_sent(e, n);
}

static int qp_rx(void *e, const uint8_t *p, size_t n)
{
	size_t used = 0;
	int rc = iw_qp_rx(e, p, n, &used);
	if (rc || used != n)
		ck_abort_msg("iw_qp_rx: rc %d, %zu of %zu consumed", rc, used, n);
	return 0;
}

static size_t qp_rx_direct(void *e, uint8_t **dst)
{
	return iw_qp_rx_direct(e, dst);
}

static int qp_rx_placed(void *e, size_t n)
{
	int rc = iw_qp_rx_direct_done(e, n);
	if (rc)
		ck_abort_msg("iw_qp_rx_direct_done: %d", rc);
	return 0;
}

static const struct mp_ops qp_end = {qp_tx_iov, qp_tx_sent, qp_rx, qp_rx_direct, qp_rx_placed,
				     NULL};

/* Take what qp has to send into w->mp.stage (in partial mode a random
 * prefix from a random number of iovecs) and report it written. */
static size_t take_tx(struct world *w, struct iw_qp *qp)
{
	w->mp.rng = &w->rng;
	long n = mp_take(&w->mp, &qp_end, qp);
	if (n < 0)
		ck_abort_msg("iw_qp_tx_iov failed");
	return (size_t)n;
}

static void feed(struct world *w, struct iw_qp *qp, const uint8_t *p, size_t len)
{
	w->mp.rng = &w->rng;
	ck_assert_int_eq(mp_feed(&w->mp, &qp_end, qp, p, len), 0);
}

/* One batch from end `from` to its peer; returns the octets moved. */
static size_t pump_dir(struct world *w, int from)
{
	struct end *e = &w->e[from];
	size_t n = take_tx(w, e->qp);
	if (n) {
		if (w->tap)
			tap_feed(w, from, w->mp.stage, n);
		feed(w, w->e[from ^ 1].qp, w->mp.stage, n);
	}
	e->events |= iw_qp_take_events(e->qp);
	w->e[from ^ 1].events |= iw_qp_take_events(w->e[from ^ 1].qp);
	return n;
}

/* Until every end is quiet in the same round. */
static void pump(struct world *w)
{
	for (;;) {
		size_t moved = 0;
		for (int i = 0; i < w->nends; i++)
			moved += pump_dir(w, i);
		if (!moved)
			break;
	}
}

static void tap_check(const struct world *w)
{
	for (int i = 0; i < w->nends; i++) {
		const struct end *e = &w->e[i];
		ck_assert_int_eq(e->tap.err, 0);
		ck_assert_uint_le(e->tap.max_ulpdu, e->conn.mulpdu);
		ck_assert_uint_eq(e->tap.stag0, 0);
		ck_assert_int_le(e->reads_max, e->conn.ord);
	}
}

/* ================================================================ transfers */

static const size_t xfer_sizes[] = {0, 1, 4095, 4096, 65536, 1u << 20};
#define NUM_SIZES (sizeof(xfer_sizes) / sizeof(xfer_sizes[0]))
enum xop { X_SEND, X_WRITE, X_READ };

/* Lay msg out over SGEs (off[i], len[i]) of an image of size cap. */
static void scatter_image(uint8_t *img, const uint8_t *msg, size_t len, const size_t *off,
			  const size_t *slen, int n)
{
	size_t pos = 0;
	for (int i = 0; i < n && pos < len; i++) {
		size_t k = slen[i] < len - pos ? slen[i] : len - pos;
		memcpy(img + off[i], msg + pos, k);
		pos += k;
	}
}

/* A Send of len octets gathered from two SGEs (in reverse order) into a
 * receive of three uneven SGEs, also in reverse order. */
static void xfer_send(struct world *w, int s, size_t len, uint32_t seed, bool se)
{
	struct end *S = &w->e[s], *D = &w->e[s ^ 1];
	uint8_t *msg = malloc(len + 1);
	fill(msg, len, seed);
	struct buf *src = buf_new(w, w->pd, len, 0);
	size_t h = len / 3;
	memcpy(src->p + h, msg, len - h);
	memcpy(src->p, msg + (len - h), h);
	struct iw_sge ss[2] = {sge_of(src, h, len - h), sge_of(src, 0, h)};

	size_t cap = len + 64;
	struct buf *dst = buf_new(w, w->pd, cap, IW_ACCESS_LOCAL_WRITE);
	size_t l0 = len / 3, l1 = cap / 4, l2 = cap - l0 - l1;
	size_t off[3] = {cap - l0, cap - l0 - l1, 0}, sl[3] = {l0, l1, l2};
	struct iw_sge rs[3];
	for (int i = 0; i < 3; i++)
		rs[i] = sge_of(dst, off[i], sl[i]);
	ck_assert_int_eq(post_recv_sg(D->qp, seed, rs, 3), 0);
	struct iw_send_wr wr = wr_of(seed, IW_WR_SEND, se ? IW_SEND_SOLICITED : 0, ss, 2);
	ck_assert_int_eq(post_wr(S->qp, &wr), 0);
	pump(w);

	struct iw_wc wc = expect_wc(S->scq, seed, IW_WC_SUCCESS, IW_WC_SEND);
	ck_assert_uint_eq(wc.byte_len, len);
	wc = expect_wc(D->rcq, seed, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_uint_eq(wc.wc_flags, se ? IW_WC_SOLICITED : 0);
	ck_assert_uint_eq(wc.qp_num, iw_qp_num(D->qp));
	uint8_t *img = calloc(1, cap);
	scatter_image(img, msg, len, off, sl, 3);
	ck_assert_msg(memcmp(dst->p, img, cap) == 0, "Send of %zu: data differs", len);
	free(img);
	free(msg);
	buf_free(src);
	buf_free(dst);
}

/* An RDMA Write of len octets from two SGEs to offset 16 of the peer's MR. */
static void xfer_write(struct world *w, int s, size_t len, uint32_t seed)
{
	struct end *S = &w->e[s], *D = &w->e[s ^ 1];
	struct buf *src = buf_new(w, w->pd, len, 0);
	fill(src->p, len, seed);
	struct buf *dst = buf_new(w, w->pd, len + 32, ACC_RW);
	size_t h = len / 2;
	struct iw_sge ss[2] = {sge_of(src, 0, h), sge_of(src, h, len - h)};
	ck_assert_int_eq(post_rdma(S->qp, seed, IW_WR_RDMA_WRITE, 0, ss, 2, dst->p + 16,
				   dst->mr->rkey),
			 0);
	pump(w);
	struct iw_wc wc = expect_wc(S->scq, seed, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	ck_assert_uint_eq(wc.byte_len, len);
	expect_empty(D->rcq);
	uint8_t *img = calloc(1, len + 32);
	memcpy(img + 16, src->p, len);
	ck_assert_msg(memcmp(dst->p, img, len + 32) == 0, "Write of %zu: data differs", len);
	free(img);
	buf_free(src);
	buf_free(dst);
}

/* An RDMA Read of len octets from offset 24 of the peer's MR into offset 8
 * of a sink that allows REMOTE_WRITE, or (odd seeds) only READ_SINK. */
static void xfer_read(struct world *w, int s, size_t len, uint32_t seed)
{
	struct end *S = &w->e[s], *D = &w->e[s ^ 1];
	struct buf *src = buf_new(w, w->pd, len + 32, ACC_RD);
	fill(src->p, len + 32, seed);
	struct buf *sink = buf_new(w, w->pd, len + 32,
				   (seed & 1) ? IW_ACCESS_LOCAL_WRITE | IW_ACCESS_READ_SINK : ACC_RW);
	struct iw_sge sg = sge_of(sink, 8, len);
	ck_assert_int_eq(post_rdma(S->qp, seed, IW_WR_RDMA_READ, 0, &sg, 1, src->p + 24,
				   src->mr->rkey),
			 0);
	pump(w);
	struct iw_wc wc = expect_wc(S->scq, seed, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, len);
	expect_empty(D->rcq);
	expect_empty(D->scq);
	uint8_t *img = calloc(1, len + 32);
	memcpy(img + 8, src->p + 24, len);
	ck_assert_msg(memcmp(sink->p, img, len + 32) == 0, "Read of %zu: data differs", len);
	free(img);
	buf_free(src);
	buf_free(sink);
}

/* Iteration i picks op (i % 3), EMSS (i % 2), CRC, markers per direction,
 * the RTR mode and the direction; each size gets its own feeding mode. */
START_TEST(test_xfer_matrix)
{
	const int i = _i;
	enum xop op = (enum xop)(i % 3);
	struct cfg g = {
		.emss = (i % 2) ? 65483 : 1460,
		.crc = (i / 6) & 1,
		.mk_ab = ((i / 12) & 1) != 0,
		.mk_ba = ((i / 24) & 1) != 0,
	};
	static const uint8_t rtrs[] = {0, IW_RTR_WRITE, IW_RTR_READ, IW_RTR_SEND};
	g.rtr = rtrs[(i / 3) % 4];
	g.p2p = g.rtr != 0;
	int s = (i / 48) & 1;
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	for (size_t k = 0; k < NUM_SIZES; k++) {
		size_t len = xfer_sizes[k];
		w.mp.mode = (enum mp_mode)((i + k) % MP_NUM_MODES);
		if (w.mp.mode == MP_BYTES && len > 65536)
			w.mp.mode = MP_RANDOM;
		w.mp.partial = (k + i) & 1;
		uint64_t direct0 = w.mp.direct;
		uint32_t seed = (uint32_t)(i * 100 + k + 1);
		if (op == X_SEND)
			xfer_send(&w, s, len, seed, k & 1);
		else if (op == X_WRITE)
			xfer_write(&w, s, len, seed);
		else
			xfer_read(&w, s, len, seed);
		if (w.mp.mode == MP_DIRECT && len >= 4096)
			ck_assert_uint_gt(w.mp.direct, direct0);
		tap_check(&w);
	}
	for (int e = 0; e < 2; e++) {
		ck_assert(!iw_qp_tx_pending(w.e[e].qp)); /* idle: nothing queued (the queue is kept) */
		ck_assert_int_eq(qp_state(w.e[e].qp), IW_QPS_RTS);
		ck_assert(w.e[e].events & IW_QPE_ESTABLISHED);
		ck_assert(!(w.e[e].events & IW_QPE_ERROR));
		expect_empty(w.e[e].scq);
		expect_empty(w.e[e].rcq);
	}
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(w.ctx, ev, 2), 0);
	world_free(&w);
}
END_TEST

/* Many messages of mixed kinds and sizes in flight at once, both ways. */
START_TEST(test_stream_mixed)
{
	struct cfg g = {.crc = _i & 1, .mk_ab = _i & 2, .mk_ba = _i & 1, .emss = 9000};
	struct world w;
	world_new(&w, &g);
	w.mp.mode = (enum mp_mode)(_i % MP_NUM_MODES);
	w.mp.partial = true;
	world_start(&w);
	enum { N = 40 };
	struct buf *src[2], *dst[2], *rsrc[2];
	for (int s = 0; s < 2; s++) {
		src[s] = buf_new(&w, w.pd, N * 3000, 0);
		fill(src[s]->p, N * 3000, (uint32_t)s + 7);
		dst[s] = buf_new(&w, w.pd, N * 3000, ACC_RW | IW_ACCESS_REMOTE_READ);
		rsrc[s] = buf_new(&w, w.pd, N * 3000, ACC_RD);
		fill(rsrc[s]->p, N * 3000, (uint32_t)s + 99);
	}
	for (int s = 0; s < 2; s++) {
		struct end *S = &w.e[s], *D = &w.e[s ^ 1];
		for (int m = 0; m < N; m++) {
			size_t len = (size_t)(m * 73) % 3000;
			struct iw_sge sg = sge_of(src[s], (size_t)m * 3000, len);
			if (m % 3 == 0) {
				post_recv_buf(D->qp, (uint64_t)m, dst[s ^ 1], (size_t)m * 3000, 3000);
				struct iw_send_wr wr = wr_of((uint64_t)m, IW_WR_SEND, 0, &sg, 1);
				ck_assert_int_eq(post_wr(S->qp, &wr), 0);
			} else if (m % 3 == 1) {
				ck_assert_int_eq(post_rdma(S->qp, (uint64_t)m, IW_WR_RDMA_WRITE, 0, &sg,
							   1, dst[s ^ 1]->p + (size_t)m * 3000,
							   dst[s ^ 1]->mr->rkey),
						 0);
			} else {
				/* Read the peer's rsrc into my own dst at the same offset. */
				struct iw_sge rs = sge_of(dst[s], (size_t)m * 3000, len);
				ck_assert_int_eq(post_rdma(S->qp, (uint64_t)m, IW_WR_RDMA_READ, 0, &rs,
							   1, rsrc[s ^ 1]->p + (size_t)m * 3000,
							   rsrc[s ^ 1]->mr->rkey),
						 0);
			}
		}
	}
	pump(&w);
	tap_check(&w);
	for (int s = 0; s < 2; s++) {
		static const enum iw_wc_opcode ops[] = {IW_WC_SEND, IW_WC_RDMA_WRITE,
							IW_WC_RDMA_READ};
		for (int m = 0; m < N; m++)
			expect_wc(w.e[s].scq, (uint64_t)m, IW_WC_SUCCESS, ops[m % 3]);
		expect_empty(w.e[s].scq);
		for (int m = 0; m < N; m += 3) {
			struct iw_wc wc = expect_wc(w.e[s ^ 1].rcq, (uint64_t)m, IW_WC_SUCCESS,
						    IW_WC_RECV);
			ck_assert_uint_eq(wc.byte_len, (size_t)(m * 73) % 3000);
		}
		expect_empty(w.e[s ^ 1].rcq);
	}
	for (int s = 0; s < 2; s++) {
		for (int m = 0; m < N; m++) {
			size_t off = (size_t)m * 3000, len = (size_t)(m * 73) % 3000;
			const uint8_t *want = m % 3 == 2 ? rsrc[s ^ 1]->p + off : src[s ^ 1]->p + off;
			ck_assert_msg(memcmp(dst[s]->p + off, want, len) == 0, "message %d", m);
		}
	}
	world_free(&w);
}
END_TEST

/* One 64 MiB RDMA Write and one 64 MiB RDMA Read, data verified. */
START_TEST(test_64mib)
{
	const size_t len = (size_t)64 << 20;
	struct cfg g = {.crc = true, .emss = 65483};
	struct world w;
	world_new(&w, &g);
	w.tap = false; /* a third CRC pass over 128 MiB buys nothing here */
	world_start(&w);
	struct buf *a = buf_new(&w, w.pd, len, ACC_RW);
	struct buf *b = buf_new(&w, w.pd, len, ACC_RW | IW_ACCESS_REMOTE_READ);
	fill(a->p, len, 64);
	struct iw_sge sg = sge_of(a, 0, len);
	ck_assert_int_eq(post_rdma(w.e[0].qp, 1, IW_WR_RDMA_WRITE, 0, &sg, 1, b->p, b->mr->rkey),
			 0);
	pump(&w);
	expect_wc(w.e[0].scq, 1, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	ck_assert(memcmp(a->p, b->p, len) == 0);
	fill(b->p, len, 65);
	ck_assert_int_eq(post_rdma(w.e[0].qp, 2, IW_WR_RDMA_READ, 0, &sg, 1, b->p, b->mr->rkey), 0);
	pump(&w);
	struct iw_wc wc = expect_wc(w.e[0].scq, 2, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert(memcmp(a->p, b->p, len) == 0);
	world_free(&w);
}
END_TEST

/* ================================================================ RTR */

/* RFC 6581: the initiator's first FPDU is the RTR; the responder sends
 * nothing before it arrives; a READ RTR is answered by a zero-length Read
 * Response before anything else. The RTR consumes no posted receive. */
START_TEST(test_rtr)
{
	static const uint8_t rtrs[] = {IW_RTR_WRITE, IW_RTR_READ, IW_RTR_SEND};
	struct cfg g = {.p2p = true, .rtr = rtrs[_i % 3], .crc = _i >= 3, .mk_ab = _i >= 3};
	struct world w;
	world_new(&w, &g);
	w.mp.mode = (enum mp_mode)(_i % MP_NUM_MODES);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *bsrc = buf_new(&w, w.pd, 100, ACC_RD);
	struct buf *bdst = buf_new(&w, w.pd, 100, ACC_RW);
	struct buf *adst = buf_new(&w, w.pd, 100, ACC_RW);
	struct buf *asrc = buf_new(&w, w.pd, 100, ACC_RW);
	fill(bsrc->p, 100, 1);
	fill(asrc->p, 100, 2);
	/* RESET refuses work; INIT takes receives before the connection. */
	ck_assert_int_eq(post_send_buf(B->qp, 1, 0, bsrc, 10), EINVAL);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_INIT};
	ck_assert_int_eq(iw_modify_qp(A->qp, &qa, IW_QP_STATE), 0);
	ck_assert_int_eq(iw_modify_qp(B->qp, &qa, IW_QP_STATE), 0);
	post_recv_buf(A->qp, 10, adst, 0, 50);
	post_recv_buf(B->qp, 20, bdst, 0, 100);
	world_start(&w);
	/* The responder posts at once: it must wait for the RTR. */
	ck_assert_int_eq(post_send_buf(B->qp, 1, 0, bsrc, 10), 0);
	struct iw_sge ws = sge_of(bsrc, 0, 40);
	ck_assert_int_eq(post_rdma(B->qp, 2, IW_WR_RDMA_WRITE, 0, &ws, 1, adst->p + 50,
				   adst->mr->rkey),
			 0);
	/* The initiator reads at once: its Read must not be mistaken for the
	 * RTR's answer. */
	struct iw_sge rs = sge_of(asrc, 60, 30);
	ck_assert_int_eq(post_rdma(A->qp, 3, IW_WR_RDMA_READ, 0, &rs, 1, bsrc->p + 5,
				   bsrc->mr->rkey),
			 0);

	ck_assert_uint_eq(pump_dir(&w, 1), 0); /* B: nothing before the RTR */
	ck_assert(!(B->events & IW_QPE_ESTABLISHED));
	ck_assert_uint_gt(pump_dir(&w, 0), 0);
	ck_assert(A->events & IW_QPE_ESTABLISHED);
	ck_assert(B->events & IW_QPE_ESTABLISHED);
	const struct tap_seg *r = &A->tap.log[0];
	ck_assert_uint_ge(A->tap.nseg, 1);
	ck_assert(r->last);
	ck_assert_uint_eq(r->plen, 0);
	if (g.rtr == IW_RTR_WRITE) {
		ck_assert(r->tagged);
		ck_assert_uint_eq(r->op, IW_OP_WRITE);
		ck_assert_uint_ne(r->stag, 0);
	} else if (g.rtr == IW_RTR_READ) {
		ck_assert_uint_eq(r->op, IW_OP_READ_REQ);
		ck_assert_uint_eq(r->msn, 1);
		ck_assert_uint_eq(r->rr.read_size, 0);
		ck_assert_uint_ne(r->rr.sink_stag, 0);
		ck_assert_uint_ne(r->rr.src_stag, 0);
	} else {
		ck_assert_uint_eq(r->op, IW_OP_SEND);
		ck_assert_uint_eq(r->msn, 1);
	}
	/* Now B answers: a READ RTR's zero-length Read Response comes first. */
	ck_assert_uint_gt(pump_dir(&w, 1), 0);
	const struct tap_seg *b0 = &B->tap.log[0];
	if (g.rtr == IW_RTR_READ) {
		ck_assert_uint_eq(b0->op, IW_OP_READ_RESP);
		ck_assert_uint_eq(b0->plen, 0);
		ck_assert(b0->last);
		ck_assert_uint_eq(b0->stag, r->rr.sink_stag);
	} else {
		/* A's Read may be answered first; then B's own work. */
		ck_assert(b0->op == IW_OP_READ_RESP || b0->op == IW_OP_SEND);
		ck_assert_uint_ne(b0->plen, 0);
	}
	pump(&w);
	tap_check(&w);
	/* The Read got its own data, not the RTR's empty answer. */
	expect_wc(A->scq, 3, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	ck_assert(memcmp(asrc->p + 60, bsrc->p + 5, 30) == 0);
	ck_assert(memcmp(adst->p + 50, bsrc->p, 40) == 0);
	ck_assert(memcmp(adst->p, bsrc->p, 10) == 0);
	expect_wc(B->scq, 1, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(B->scq, 2, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	struct iw_wc wc = expect_wc(A->rcq, 10, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 10);
	/* A's Send reaches B's first receive: the SEND RTR took none. */
	ck_assert_int_eq(post_send_buf(A->qp, 4, 0, asrc, 7), 0);
	pump(&w);
	expect_wc(A->scq, 4, IW_WC_SUCCESS, IW_WC_SEND);
	wc = expect_wc(B->rcq, 20, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 7);
	ck_assert(memcmp(bdst->p, asrc->p, 7) == 0);
	ck_assert_int_eq(qp_state(A->qp), IW_QPS_RTS);
	ck_assert_int_eq(qp_state(B->qp), IW_QPS_RTS);
	world_free(&w);
}
END_TEST

/* ================================================================ SQ rules */

/* More Reads than ORD: at most ORD on the wire, all complete in order. */
START_TEST(test_ord)
{
	struct cfg g = {.ord = (uint16_t)(1 + _i), .ird = (uint16_t)(1 + _i), .emss = 1460};
	struct world w;
	world_new(&w, &g);
	w.mp.mode = MP_RANDOM;
	w.mp.partial = _i & 1;
	world_start(&w);
	struct iw_qp_attr qa;
	ck_assert_int_eq(iw_query_qp(w.e[0].qp, &qa, IW_QP_MAX_QP_RD_ATOMIC, NULL), 0);
	ck_assert_uint_eq(qa.max_rd_atomic, g.ord);
	enum { N = 9, L = 5000 };
	struct buf *src = buf_new(&w, w.pd, N * L, ACC_RD);
	struct buf *sink = buf_new(&w, w.pd, N * L, ACC_RW);
	struct buf *m = buf_new(&w, w.pd, 16, 0);
	struct buf *r = buf_new(&w, w.pd, 16, IW_ACCESS_LOCAL_WRITE);
	fill(src->p, N * L, 5);
	post_recv_buf(w.e[1].qp, 99, r, 0, 16);
	for (int k = 0; k < N; k++) {
		struct iw_sge sg = sge_of(sink, (size_t)k * L, L);
		ck_assert_int_eq(post_rdma(w.e[0].qp, (uint64_t)k, IW_WR_RDMA_READ, 0, &sg, 1,
					   src->p + (size_t)k * L, src->mr->rkey),
				 0);
	}
	ck_assert_int_eq(post_send_buf(w.e[0].qp, N, 0, m, 16), 0);
	pump(&w);
	tap_check(&w);
	ck_assert_int_eq(w.e[0].reads_max, g.ord); /* throttled, and pipelined up to ORD */
	for (int k = 0; k <= N; k++)
		expect_wc(w.e[0].scq, (uint64_t)k, IW_WC_SUCCESS,
			  k < N ? IW_WC_RDMA_READ : IW_WC_SEND);
	expect_empty(w.e[0].scq);
	expect_wc(w.e[1].rcq, 99, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert(memcmp(src->p, sink->p, N * L) == 0);
	world_free(&w);
}
END_TEST

/* A Send after a Read: without FENCE it goes out at once but completes
 * after the Read; with FENCE it waits for the Read Response. */
START_TEST(test_fence_and_order)
{
	bool fence = _i;
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 20000, ACC_RD);
	struct buf *sink = buf_new(&w, w.pd, 20000, ACC_RW);
	struct buf *m = buf_new(&w, w.pd, 64, 0);
	struct buf *r = buf_new(&w, w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	fill(src->p, 20000, 9);
	fill(m->p, 64, 10);
	post_recv_buf(B->qp, 50, r, 0, 64);
	struct iw_sge sg = sge_of(sink, 0, 20000);
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, src->p, src->mr->rkey), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 2, fence ? IW_SEND_FENCE : 0, m, 64), 0);
	pump_dir(&w, 0);
	ck_assert_uint_eq(A->tap.nseg, fence ? 1u : 2u);
	ck_assert_uint_eq(A->tap.log[0].op, IW_OP_READ_REQ);
	if (!fence) {
		ck_assert_uint_eq(A->tap.log[1].op, IW_OP_SEND);
		/* Written, yet not complete: it waits behind the Read. */
		expect_empty(A->scq);
		expect_wc(B->rcq, 50, IW_WC_SUCCESS, IW_WC_RECV);
	} else {
		expect_empty(B->rcq);
	}
	pump_dir(&w, 1); /* the Read Response */
	pump(&w);
	if (fence) {
		ck_assert_uint_eq(A->tap.log[1].op, IW_OP_SEND);
		expect_wc(B->rcq, 50, IW_WC_SUCCESS, IW_WC_RECV);
	}
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_SEND);
	ck_assert(memcmp(src->p, sink->p, 20000) == 0);
	ck_assert(memcmp(r->p, m->p, 64) == 0);
	world_free(&w);
}
END_TEST

/* FENCE holds the whole send queue (iw_post_send(3)): a Send posted after
 * a fenced one waits with it, though it is not fenced itself. */
START_TEST(test_fence_head_of_line)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 4096, ACC_RD);
	struct buf *sink = buf_new(&w, w.pd, 4096, ACC_RW);
	struct buf *m = buf_new(&w, w.pd, 64, 0);
	struct buf *r = buf_new(&w, w.pd, 128, IW_ACCESS_LOCAL_WRITE);
	fill(src->p, 4096, 11);
	post_recv_buf(B->qp, 50, r, 0, 64);
	post_recv_buf(B->qp, 51, r, 64, 64);
	struct iw_sge sg = sge_of(sink, 0, 4096);
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, src->p, src->mr->rkey), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 2, IW_SEND_FENCE, m, 64), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 3, 0, m, 64), 0);
	pump_dir(&w, 0);
	ck_assert_uint_eq(A->tap.nseg, 1u); /* the Read Request, nothing behind it */
	expect_empty(B->rcq);
	pump_dir(&w, 1); /* the Read Response opens the fence */
	pump(&w);
	ck_assert_uint_eq(A->tap.nseg, 3u);
	ck_assert_uint_eq(A->tap.log[1].op, IW_OP_SEND);
	ck_assert_uint_eq(A->tap.log[2].op, IW_OP_SEND);
	expect_wc(B->rcq, 50, IW_WC_SUCCESS, IW_WC_RECV);
	expect_wc(B->rcq, 51, IW_WC_SUCCESS, IW_WC_RECV);
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(A->scq, 3, IW_WC_SUCCESS, IW_WC_SEND);
	ck_assert(memcmp(src->p, sink->p, 4096) == 0);
	world_free(&w);
}
END_TEST

/* Unsignaled WRs complete silently, and the ring wraps many times. */
START_TEST(test_unsignaled)
{
	struct cfg g = {.no_sig_all = true, .sq = 8, .rq = 8};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 256, ACC_RW);
	struct buf *r = buf_new(&w, w.pd, 4 * 256, ACC_RW);
	struct buf *t = buf_new(&w, w.pd, 256, ACC_RW | IW_ACCESS_REMOTE_READ);
	for (int round = 0; round < 30; round++) {
		fill(m->p, 256, (uint32_t)round);
		for (int k = 0; k < 3; k++)
			post_recv_buf(B->qp, (uint64_t)(round * 10 + k), r, (size_t)k * 256, 256);
		struct iw_sge sg = sge_of(m, 0, 100);
		ck_assert_int_eq(post_send_buf(A->qp, (uint64_t)round * 10, 0, m, 100), 0);
		ck_assert_int_eq(post_rdma(A->qp, (uint64_t)round * 10 + 1, IW_WR_RDMA_WRITE, 0, &sg,
					   1, t->p, t->mr->rkey),
				 0);
		struct iw_sge rs = sge_of(m, 128, 100);
		ck_assert_int_eq(post_rdma(A->qp, (uint64_t)round * 10 + 2, IW_WR_RDMA_READ, 0, &rs,
					   1, t->p, t->mr->rkey),
				 0);
		ck_assert_int_eq(post_send_buf(A->qp, (uint64_t)round * 10 + 3, 0, m, 10), 0);
		ck_assert_int_eq(post_send_buf(A->qp, (uint64_t)round * 10 + 4, IW_SEND_SIGNALED, m,
					       20),
				 0);
		pump(&w);
		expect_wc(A->scq, (uint64_t)round * 10 + 4, IW_WC_SUCCESS, IW_WC_SEND);
		expect_empty(A->scq);
		for (int k = 0; k < 3; k++)
			expect_wc(B->rcq, (uint64_t)(round * 10 + k), IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert(memcmp(m->p + 128, m->p, 100) == 0);
	}
	/* A full SQ refuses the next WR with ENOMEM and names it. */
	for (int k = 0; k < 8; k++)
		ck_assert_int_eq(post_send_buf(A->qp, 1000 + (uint64_t)k, 0, m, 1), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 2000, 0, m, 1), ENOMEM);
	for (int k = 0; k < 8; k++)
		post_recv_buf(B->qp, 3000 + (uint64_t)k, r, 0, 16);
	pump(&w);
	expect_empty(A->scq);
	for (int k = 0; k < 8; k++)
		expect_wc(B->rcq, 3000 + (uint64_t)k, IW_WC_SUCCESS, IW_WC_RECV);
	world_free(&w);
}
END_TEST

/* An allocator that refuses everything (and frees what libc gave). */
static void *refuse_malloc(void *u, size_t n)
{
	(void)u;
	(void)n;
	return NULL;
}
static void *refuse_calloc(void *u, size_t num, size_t n)
{
	(void)u;
	(void)num;
	(void)n;
	return NULL;
}
static void *refuse_realloc(void *u, void *p, size_t n)
{
	(void)u;
	(void)p;
	(void)n;
	return NULL;
}
static void libc_free(void *u, void *p)
{
	(void)u;
	free(p);
}

/* A small inline Send (an NVMe-oF response is 16 octets) is kept in its
 * WQE: posting it allocates nothing, so it goes out with every allocation
 * refused once the queues exist; the buffer is reused right after. */
START_TEST(test_inline_small)
{
	static const struct iw_alloc_ops refuse = {refuse_malloc, refuse_calloc, refuse_realloc,
						   libc_free, NULL};
	struct cfg g = {.crc = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *r = buf_new(&w, w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	uint8_t msg[IW_INLINE_SMALL], want[IW_INLINE_SMALL];
	fill(want, sizeof(want), 16);
	struct iw_sge sg = {.addr = (uintptr_t)msg, .length = sizeof(msg)};
	for (int i = 0; i < 2; i++) { /* the first warms the queues up */
		post_recv_buf(B->qp, (uint64_t)i, r, 0, 64);
		memcpy(msg, want, sizeof(msg));
		struct iw_send_wr wr = wr_of(10 + (uint64_t)i, IW_WR_SEND, IW_SEND_INLINE, &sg, 1);
		if (i)
			w.ctx->alloc = &refuse;
		ck_assert_int_eq(post_wr(A->qp, &wr), 0);
		memset(msg, 0xEE, sizeof(msg));
		pump(&w);
		w.ctx->alloc = NULL;
		expect_wc(A->scq, 10 + (uint64_t)i, IW_WC_SUCCESS, IW_WC_SEND);
		struct iw_wc wc = expect_wc(B->rcq, (uint64_t)i, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, sizeof(want));
		ck_assert(memcmp(r->p, want, sizeof(want)) == 0);
		memset(r->p, 0, 64);
	}
	world_free(&w);
}
END_TEST

/* Inline data: copied at post time, no lkey needed, 256 octets at least. */
START_TEST(test_inline)
{
	struct cfg g = {.mk_ab = _i, .crc = _i};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct iw_qp_attr qa;
	ck_assert_int_eq(iw_query_qp(A->qp, &qa, IW_QP_CAP, NULL), 0);
	ck_assert_uint_ge(qa.cap.max_inline_data, 256);
	uint8_t *stack = malloc(qa.cap.max_inline_data + 1);
	uint8_t want[256];
	fill(want, 256, 77);
	memcpy(stack, want, 256);
	struct buf *r = buf_new(&w, w.pd, 512, IW_ACCESS_LOCAL_WRITE);
	struct buf *t = buf_new(&w, w.pd, 512, ACC_RW);
	post_recv_buf(B->qp, 1, r, 0, 512);
	/* Three SGEs, no lkeys. */
	struct iw_sge sg[3] = {
		{.addr = (uintptr_t)stack, .length = 100},
		{.addr = (uintptr_t)(stack + 100), .length = 56},
		{.addr = (uintptr_t)(stack + 156), .length = 100},
	};
	struct iw_send_wr wr = wr_of(7, IW_WR_SEND, IW_SEND_INLINE, sg, 3);
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	memset(stack, 0xEE, 256); /* reused right after the post */
	memcpy(stack, want, 200);
	struct iw_sge one = {.addr = (uintptr_t)stack, .length = 200};
	ck_assert_int_eq(post_rdma(A->qp, 8, IW_WR_RDMA_WRITE, IW_SEND_INLINE, &one, 1, t->p + 3,
				   t->mr->rkey),
			 0);
	memset(stack, 0xDD, 256);
	pump(&w);
	expect_wc(A->scq, 7, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(A->scq, 8, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	struct iw_wc wc = expect_wc(B->rcq, 1, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 256);
	ck_assert(memcmp(r->p, want, 256) == 0);
	ck_assert(memcmp(t->p + 3, want, 200) == 0);
	/* Over the inline limit: EINVAL, nothing posted. */
	struct iw_sge big = {.addr = (uintptr_t)stack, .length = qa.cap.max_inline_data + 1};
	wr = wr_of(9, IW_WR_SEND, IW_SEND_INLINE, &big, 1);
	ck_assert_int_eq(post_wr(A->qp, &wr), EINVAL);
	pump(&w);
	expect_empty(A->scq);
	free(stack);
	world_free(&w);
}
END_TEST

/* Posting errors: each names the bad WR and posts nothing. */
START_TEST(test_post_errors)
{
	struct cfg g = {.create_flags = IW_QP_CREATE_RFC7306, .sq = 4, .rq = 2};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct iw_qp *qp = w.e[0].qp;
	struct buf *b = buf_new(&w, w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	struct buf *ro = buf_new(&w, w.pd, 64, 0);
	struct buf *other = buf_new(&w, w.pd2, 64, ACC_RW);
	/* The sink of an RDMA Read is written by a tagged Read Response: its MR
	 * needs REMOTE_WRITE. */
	struct iw_sge s = sge_of(b, 0, 64);
	ck_assert_int_eq(post_rdma(qp, 1, IW_WR_RDMA_READ, 0, &s, 1, b->p, 0x100), EACCES);
	struct iw_sge two[2] = {sge_of(b, 0, 8), sge_of(b, 8, 8)};
	ck_assert_int_eq(post_rdma(qp, 1, IW_WR_RDMA_READ, 0, two, 2, b->p, 0x100), EINVAL);
	struct iw_sge bad = sge_of(b, 0, 64);
	bad.lkey ^= 0x100;
	ck_assert_int_eq(post_rdma(qp, 1, IW_WR_RDMA_WRITE, 0, &bad, 1, b->p, 0x100), EINVAL);
	struct iw_sge oob = sge_of(b, 8, 64);
	ck_assert_int_eq(post_rdma(qp, 1, IW_WR_RDMA_WRITE, 0, &oob, 1, b->p, 0x100), EFAULT);
	struct iw_sge pd2 = sge_of(other, 0, 8);
	ck_assert_int_eq(post_rdma(qp, 1, IW_WR_RDMA_WRITE, 0, &pd2, 1, b->p, 0x100), EINVAL);
	struct iw_sge at = sge_of(b, 0, 8);
	struct iw_send_wr wr = wr_of(1, IW_WR_ATOMIC_FETCH_AND_ADD, 0, &at, 1);
	wr.wr.atomic.remote_addr = 0x1004; /* not 8-aligned */
	wr.wr.atomic.rkey = 0x100;
	ck_assert_int_eq(post_wr(qp, &wr), EINVAL);
	wr = wr_of(1, IW_WR_BIND_MW, 0, NULL, 0);
	ck_assert_int_eq(post_wr(qp, &wr), EINVAL);
	wr = wr_of(1, (enum iw_wr_opcode)0x55, 0, NULL, 0);
	ck_assert_int_eq(post_wr(qp, &wr), EINVAL);
	/* Receives: rights, SRQ-less ring full. */
	struct iw_sge rro = sge_of(ro, 0, 64);
	ck_assert_int_eq(post_recv_sg(qp, 1, &rro, 1), EACCES);
	post_recv_buf(qp, 2, b, 0, 8);
	post_recv_buf(qp, 3, b, 8, 8);
	struct iw_sge rs = sge_of(b, 16, 8);
	ck_assert_int_eq(post_recv_sg(qp, 4, &rs, 1), ENOMEM);
	/* A chain stops at the first bad WR; the ones before it are posted. */
	struct iw_sge ok = sge_of(ro, 0, 4);
	struct iw_send_wr c2 = wr_of(11, IW_WR_RDMA_READ, 0, &s, 1);
	struct iw_send_wr c1 = wr_of(10, IW_WR_RDMA_WRITE, 0, &ok, 1);
	c1.wr.rdma.remote_addr = (uintptr_t)b->p;
	c1.wr.rdma.rkey = 0x100;
	c1.next = &c2;
	struct iw_send_wr *badwr = NULL;
	ck_assert_int_eq(iw_post_send(qp, &c1, &badwr), EACCES);
	ck_assert_ptr_eq(badwr, &c2);
	/* MRs referenced by posted WRs cannot go. */
	ck_assert_int_eq(iw_dereg_mr(ro->mr), EBUSY);
	ck_assert_int_eq(iw_dereg_mr(b->mr), EBUSY); /* the two receives */
	iw_qp_conn_lost(qp, false);
	iw_qp_conn_lost(w.e[1].qp, false);
	expect_wc(w.e[0].scq, 10, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_WRITE);
	expect_empty(w.e[0].scq);
	expect_wc(w.e[0].rcq, 2, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_wc(w.e[0].rcq, 3, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(w.e[0].rcq);
	world_free(&w);
}
END_TEST

/* ================================================================ memory WRs */

static void reg_mr_wr(struct iw_qp *qp, uint64_t id, struct iw_mr *mr, uint32_t key, int access,
		      uint64_t iova, void *addr, uint64_t len)
{
	struct iw_send_wr wr = wr_of(id, IW_WR_REG_MR, IW_SEND_SIGNALED, NULL, 0);
	wr.reg.mr = mr;
	wr.reg.key = key;
	wr.reg.access = access;
	wr.reg.iova = iova;
	wr.reg.length = len;
	wr.reg.addr = addr;
	ck_assert_int_eq(post_wr(qp, &wr), 0);
}

static void local_inv_wr(struct iw_qp *qp, uint64_t id, uint32_t stag)
{
	struct iw_send_wr wr = wr_of(id, IW_WR_LOCAL_INV, IW_SEND_SIGNALED, NULL, 0);
	wr.invalidate_rkey = stag;
	ck_assert_int_eq(post_wr(qp, &wr), 0);
}

/* A peer's TERMINATE on one side, our TERMINATE on the other. */
static void expect_pair_terminate(struct world *w, int victim, uint16_t term,
				  enum iw_event_type ev)
{
	struct iw_async_event e[4];
	ck_assert_int_eq(async_count(w->ctx, e, 4), 2);
	ck_assert_int_eq(e[0].event_type, ev);
	ck_assert_ptr_eq(e[0].element.qp, w->e[victim].qp);
	ck_assert_uint_eq(e[0].term, term);
	ck_assert(!e[0].term_from_peer);
	ck_assert_msg(e[1].event_type == IW_EVENT_QP_TERMINATE, "peer event %s term %04x",
		      iw_event_type_str(e[1].event_type), e[1].term);
	ck_assert_ptr_eq(e[1].element.qp, w->e[victim ^ 1].qp);
	ck_assert_uint_eq(e[1].term, term);
	ck_assert(e[1].term_from_peer);
	ck_assert_uint_eq(w->e[victim].tap.nterm, 1);
	ck_assert_uint_eq(w->e[victim].tap.term.term, term);
	ck_assert_int_eq(qp_state(w->e[0].qp), IW_QPS_ERR);
	ck_assert_int_eq(qp_state(w->e[1].qp), IW_QPS_ERR);
	ck_assert(w->e[0].events & IW_QPE_ERROR);
	ck_assert(w->e[1].events & IW_QPE_ERROR);
}

/* REG_MR makes a fast-reg MR reachable at an IOVA of our choice, LOCAL_INV
 * revokes it; the peer's next access is refused with DDP invalid STag. */
START_TEST(test_reg_mr_local_inv)
{
	struct cfg g = {.crc = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct iw_mr *fr = iw_alloc_mr(w.pd, 1);
	ck_assert_ptr_nonnull(fr);
	struct buf *mem = buf_new(&w, NULL, 4096, 0);
	struct buf *src = buf_new(&w, w.pd, 4096, ACC_RW);
	fill(src->p, 4096, 3);
	uint32_t key = iw_inc_rkey(fr->rkey);
	const uint64_t iova = 0x7000000000ull;
	reg_mr_wr(B->qp, 1, fr, key, ACC_RW | IW_ACCESS_REMOTE_READ, iova, mem->p, 4096);
	pump(&w);
	expect_wc(B->scq, 1, IW_WC_SUCCESS, IW_WC_REG_MR);
	ck_assert_uint_eq(fr->rkey, key);
	ck_assert_uint_eq(fr->lkey, key);
	struct iw_sge sg = sge_of(src, 0, 1000);
	ck_assert_int_eq(post_rdma(A->qp, 2, IW_WR_RDMA_WRITE, 0, &sg, 1, (void *)(uintptr_t)(iova + 100),
				   key),
			 0);
	struct iw_sge rs = sge_of(src, 2000, 1000);
	ck_assert_int_eq(post_rdma(A->qp, 3, IW_WR_RDMA_READ, 0, &rs, 1, (void *)(uintptr_t)(iova + 100),
				   key),
			 0);
	pump(&w);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	expect_wc(A->scq, 3, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	ck_assert(memcmp(mem->p + 100, src->p, 1000) == 0);
	ck_assert(memcmp(src->p + 2000, src->p, 1000) == 0);
	/* Registering a valid MR again fails locally: LOC_QP_OP_ERR. */
	local_inv_wr(B->qp, 4, key);
	pump(&w);
	expect_wc(B->scq, 4, IW_WC_SUCCESS, IW_WC_LOCAL_INV);
	ck_assert_int_eq(post_rdma(A->qp, 5, IW_WR_RDMA_WRITE, 0, &sg, 1, (void *)(uintptr_t)(iova + 100),
				   key),
			 0);
	pump(&w);
	tap_check(&w);
	expect_pair_terminate(&w, 1, IW_TERM_DDP_T_INV_STAG, IW_EVENT_QP_ACCESS_ERR);
	/* The Write left A whole: it completed when written. */
	expect_wc(A->scq, 5, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	world_free(&w);
}
END_TEST

/* A WR that uses a fast-reg MR locally is checked when it is posted
 * (iw_alloc_mr(3)): behind its REG_MR in the same post it is refused, as
 * the MR is still invalid; after the REG_MR's completion it goes, with the
 * SGE in the registration's iova space (0 here, not the buffer's address). */
START_TEST(test_reg_mr_then_local_use)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0];
	struct iw_mr *fr = iw_alloc_mr(w.pd, 1);
	ck_assert_ptr_nonnull(fr);
	struct buf *mem = buf_new(&w, NULL, 4096, 0);
	struct buf *src = buf_new(&w, w.pd, 4096, ACC_RD);
	fill(src->p, 4096, 12);
	uint32_t key = iw_inc_rkey(fr->rkey);
	struct iw_send_wr reg = wr_of(1, IW_WR_REG_MR, IW_SEND_SIGNALED, NULL, 0);
	reg.reg.mr = fr;
	reg.reg.key = key;
	reg.reg.access = ACC_RW;
	reg.reg.iova = 0;
	reg.reg.length = 4096;
	reg.reg.addr = mem->p;
	struct iw_sge sg = {.addr = 0, .length = 4096, .lkey = key};
	struct iw_send_wr rd = wr_of(2, IW_WR_RDMA_READ, IW_SEND_SIGNALED, &sg, 1);
	rd.wr.rdma.remote_addr = (uintptr_t)src->p;
	rd.wr.rdma.rkey = src->mr->rkey;
	reg.next = &rd;
	struct iw_send_wr *bad = NULL;
	ck_assert_int_eq(iw_post_send(A->qp, &reg, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &rd);
	pump(&w);
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_REG_MR);
	ck_assert_uint_eq(fr->lkey, key);
	rd.next = NULL;
	ck_assert_int_eq(post_wr(A->qp, &rd), 0);
	pump(&w);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	expect_empty(A->scq);
	ck_assert(memcmp(mem->p, src->p, 4096) == 0);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	world_free(&w);
}
END_TEST

/* Send with Invalidate: the receive reports the STag, which is dead from
 * then on; with SE the completion is solicited too. */
/* B's fast-reg MR over 512 unregistered octets, the target of a Send with
 * Invalidate: the REG_MR is posted (WR 1), the new key returned. */
static uint32_t inv_target(struct world *w, struct iw_mr **fr, struct buf **mem)
{
	*fr = iw_alloc_mr(w->pd, 1);
	*mem = buf_new(w, NULL, 512, 0);
	uint32_t key = iw_inc_rkey((*fr)->rkey);
	reg_mr_wr(w->e[1].qp, 1, *fr, key, ACC_RW, (uintptr_t)(*mem)->p, (*mem)->p, 512);
	return key;
}

/* A's Write to the invalidated key: B refuses it and places nothing. */
static void inv_write_refused(struct world *w, struct iw_sge *sg, struct buf *mem, uint32_t key)
{
	ck_assert_int_eq(post_rdma(w->e[0].qp, 4, IW_WR_RDMA_WRITE, 0, sg, 1, mem->p, key), 0);
	pump(w);
	expect_pair_terminate(w, 1, IW_TERM_DDP_T_INV_STAG, IW_EVENT_QP_ACCESS_ERR);
	expect_wc(w->e[0].scq, 4, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	ck_assert(memcmp(mem->p, (uint8_t[512]){0}, 512) == 0);
}

START_TEST(test_send_with_inv)
{
	bool se = _i;
	struct cfg g = {.mk_ba = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct iw_mr *fr;
	struct buf *mem, *m = buf_new(&w, w.pd, 512, 0);
	struct buf *r = buf_new(&w, w.pd, 512, IW_ACCESS_LOCAL_WRITE);
	uint32_t key = inv_target(&w, &fr, &mem);
	post_recv_buf(B->qp, 2, r, 0, 512);
	pump(&w);
	expect_wc(B->scq, 1, IW_WC_SUCCESS, IW_WC_REG_MR);
	fill(m->p, 512, 8);
	struct iw_sge sg = sge_of(m, 0, 300);
	struct iw_send_wr wr = wr_of(3, IW_WR_SEND_WITH_INV, se ? IW_SEND_SOLICITED : 0, &sg, 1);
	wr.invalidate_rkey = key;
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	pump(&w);
	expect_wc(A->scq, 3, IW_WC_SUCCESS, IW_WC_SEND);
	struct iw_wc wc = expect_wc(B->rcq, 2, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 300);
	ck_assert_uint_eq(wc.wc_flags, IW_WC_WITH_INV | (se ? IW_WC_SOLICITED : 0));
	ck_assert_uint_eq(wc.invalidated_rkey, key);
	ck_assert(memcmp(r->p, m->p, 300) == 0);
	inv_write_refused(&w, &sg, mem, key);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	world_free(&w);
}
END_TEST

/* A REG_MR that fails (the MR is already valid) completes in error and
 * takes the QP to ERR: the WRs behind it flush, the peer is told. */
START_TEST(test_local_wr_error)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct iw_mr *fr = iw_alloc_mr(w.pd, 1);
	struct buf *mem = buf_new(&w, NULL, 64, 0);
	struct buf *m = buf_new(&w, w.pd, 64, 0);
	uint32_t key = iw_inc_rkey(fr->rkey);
	reg_mr_wr(A->qp, 1, fr, key, ACC_RW, (uintptr_t)mem->p, mem->p, 64);
	pump(&w);
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_REG_MR);
	ck_assert_int_eq(post_send_buf(A->qp, 2, 0, m, 8), 0);
	reg_mr_wr(A->qp, 3, fr, iw_inc_rkey(key), ACC_RW, (uintptr_t)mem->p, mem->p, 64);
	ck_assert_int_eq(post_send_buf(A->qp, 4, 0, m, 8), 0);
	struct buf *r = buf_new(&w, w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	post_recv_buf(B->qp, 10, r, 0, 64);
	post_recv_buf(B->qp, 11, r, 0, 64);
	pump(&w);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(B->rcq, 10, IW_WC_SUCCESS, IW_WC_RECV);
	expect_wc(B->rcq, 11, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	struct iw_wc wc = expect_wc(A->scq, 3, IW_WC_LOC_QP_OP_ERR, IW_WC_REG_MR);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_RDMAP_CATASTROPHIC);
	expect_wc(A->scq, 4, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	expect_empty(A->scq);
	ck_assert_uint_eq(fr->rkey, key); /* unchanged */
	expect_pair_terminate(&w, 0, IW_TERM_RDMAP_CATASTROPHIC, IW_EVENT_QP_FATAL);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	world_free(&w);
}
END_TEST

/* A REG_MR work request holds its MR until it completes: deregistering
 * the MR while the WR waits is refused, and the flush of a WR that never
 * ran lets go (the WR used to hold a bare pointer, so the MR could be
 * freed under it and registered afterwards: found by fuzz_qp_rx). */
START_TEST(test_reg_mr_holds_mr)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct iw_mr *fr = iw_alloc_mr(w.pd, 1);
	struct iw_mr *fr2 = iw_alloc_mr(w.pd, 1);
	ck_assert_ptr_nonnull(fr);
	ck_assert_ptr_nonnull(fr2);
	struct buf *mem = buf_new(&w, NULL, 64, 0);
	uint32_t key = iw_inc_rkey(fr->rkey);
	reg_mr_wr(A->qp, 1, fr, key, ACC_RW, (uintptr_t)mem->p, mem->p, 64);
	ck_assert_int_eq(iw_dereg_mr(fr), EBUSY); /* not executed yet */
	pump(&w);
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_REG_MR);
	ck_assert_uint_eq(fr->rkey, key);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	/* Flushed before it ran. */
	reg_mr_wr(B->qp, 2, fr2, iw_inc_rkey(fr2->rkey), ACC_RW, 0x1000, mem->p, 64);
	ck_assert_int_eq(iw_dereg_mr(fr2), EBUSY);
	iw_qp_conn_lost(B->qp, false);
	expect_wc(B->scq, 2, IW_WC_WR_FLUSH_ERR, IW_WC_REG_MR);
	ck_assert_int_eq(iw_dereg_mr(fr2), 0);
	iw_qp_conn_lost(A->qp, false);
	world_free(&w);
}
END_TEST

/* ================================================================ SRQ */

START_TEST(test_srq)
{
	struct cfg g = {.srq = true, .nqp = 4, .crc = true};
	struct world w;
	world_new(&w, &g);
	w.mp.mode = MP_RANDOM;
	world_start(&w);
	struct buf *r = buf_new(&w, w.pd, 16 * 128, IW_ACCESS_LOCAL_WRITE);
	struct buf *m = buf_new(&w, w.pd, 256, 0);
	fill(m->p, 256, 4);
	/* A QP on an SRQ has no receive queue of its own. */
	struct iw_sge s0 = sge_of(r, 0, 8);
	ck_assert_int_eq(post_recv_sg(w.e[1].qp, 1, &s0, 1), EINVAL);
	for (int k = 0; k < 8; k++) {
		struct iw_sge sg = sge_of(r, (size_t)k * 128, 128);
		struct iw_recv_wr rw = {.wr_id = 100 + (uint64_t)k, .sg_list = &sg, .num_sge = 1};
		ck_assert_int_eq(iw_post_srq_recv(w.srq, &rw, NULL), 0);
	}
	struct iw_srq_attr sa = {.srq_limit = 4};
	ck_assert_int_eq(iw_modify_srq(w.srq, &sa, IW_SRQ_LIMIT), 0);
	struct iw_async_event ev[4];
	/* Four messages, alternating between the two pairs: 4 left, no event. */
	for (int k = 0; k < 4; k++) {
		int a = (k & 1) * 2;
		ck_assert_int_eq(post_send_buf(w.e[a].qp, (uint64_t)k, 0, m, (size_t)(k + 1) * 10), 0);
		pump(&w);
		struct iw_wc wc = expect_wc(w.e[a + 1].rcq, 100 + (uint64_t)k, IW_WC_SUCCESS,
					    IW_WC_RECV);
		ck_assert_uint_eq(wc.qp_num, iw_qp_num(w.e[a + 1].qp));
		ck_assert_uint_eq(wc.byte_len, (size_t)(k + 1) * 10);
		ck_assert(memcmp(r->p + k * 128, m->p, (size_t)(k + 1) * 10) == 0);
	}
	ck_assert_int_eq(async_count(w.ctx, ev, 4), 0);
	/* The fifth leaves 3 < 4: one SRQ_LIMIT_REACHED, then disarmed. */
	ck_assert_int_eq(post_send_buf(w.e[2].qp, 4, 0, m, 1), 0);
	pump(&w);
	expect_wc(w.e[3].rcq, 104, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_int_eq(async_count(w.ctx, ev, 4), 1);
	ck_assert_int_eq(ev[0].event_type, IW_EVENT_SRQ_LIMIT_REACHED);
	ck_assert_ptr_eq(ev[0].element.srq, w.srq);
	ck_assert_int_eq(post_send_buf(w.e[0].qp, 5, 0, m, 1), 0);
	pump(&w);
	expect_wc(w.e[1].rcq, 105, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_int_eq(async_count(w.ctx, ev, 4), 0);
	for (int a = 0; a < 4; a += 2) {
		for (int k = 0; k < 6; k++)
			if ((k < 4 && (k & 1) * 2 == a) || (k == 4 && a == 2) || (k == 5 && a == 0))
				expect_wc(w.e[a].scq, (uint64_t)k, IW_WC_SUCCESS, IW_WC_SEND);
		expect_empty(w.e[a].scq);
	}
	/* Two WQEs remain: a QP that loses its connection leaves them for the
	 * others (the SRQ is not the QP's to flush). */
	iw_qp_conn_lost(w.e[1].qp, false);
	expect_empty(w.e[1].rcq);
	ck_assert_int_eq(post_send_buf(w.e[2].qp, 6, 0, m, 2), 0);
	pump(&w);
	expect_wc(w.e[3].rcq, 106, IW_WC_SUCCESS, IW_WC_RECV);
	world_free(&w);
}
END_TEST

/* What iw_create_srq(3) promises about SRQ WRs when a QP dies: the WR the
 * QP was filling completes on that QP's receive CQ, flushed, with its
 * qp_num; the WRs still on the SRQ stay for the other QPs, also across a
 * resize made while QPs use the SRQ. */
START_TEST(test_srq_flush_midmessage)
{
	struct cfg g = {.srq = true, .nqp = 4};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	pump(&w);
	struct buf *r = buf_new(&w, w.pd, 3 * 4096, IW_ACCESS_LOCAL_WRITE);
	struct buf *m = buf_new(&w, w.pd, 3000, 0);
	fill(m->p, 3000, 9);
	for (int k = 0; k < 3; k++) {
		struct iw_sge sg = sge_of(r, (size_t)k * 4096, 4096);
		struct iw_recv_wr rw = {.wr_id = 200 + (uint64_t)k, .sg_list = &sg, .num_sge = 1};
		ck_assert_int_eq(iw_post_srq_recv(w.srq, &rw, NULL), 0);
	}
	/* Half of a 3000-octet Send (its first FPDU and a bit) reaches e1. */
	ck_assert_int_eq(post_send_buf(w.e[0].qp, 1, 0, m, 3000), 0);
	size_t n = take_tx(&w, w.e[0].qp);
	ck_assert_uint_gt(n, 3000);
	feed(&w, w.e[1].qp, w.mp.stage, 1500);
	expect_empty(w.e[1].rcq);
	iw_qp_conn_lost(w.e[1].qp, false);
	struct iw_wc wc = expect_wc(w.e[1].rcq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	ck_assert_uint_eq(wc.qp_num, iw_qp_num(w.e[1].qp));
	expect_empty(w.e[1].rcq);
	/* 201 and 202 are still posted: grow the SRQ in use, then shrink it
	 * to exactly what is posted. */
	struct iw_srq_attr sa = {.max_wr = 128};
	ck_assert_int_eq(iw_modify_srq(w.srq, &sa, IW_SRQ_MAX_WR), 0);
	sa.max_wr = 1;
	ck_assert_int_eq(iw_modify_srq(w.srq, &sa, IW_SRQ_MAX_WR), EINVAL);
	sa.max_wr = 2;
	ck_assert_int_eq(iw_modify_srq(w.srq, &sa, IW_SRQ_MAX_WR), 0);
	for (uint64_t k = 0; k < 2; k++) {
		ck_assert_int_eq(post_send_buf(w.e[2].qp, 10 + k, 0, m, 3000), 0);
		pump(&w);
		wc = expect_wc(w.e[3].rcq, 201 + k, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert_uint_eq(wc.qp_num, iw_qp_num(w.e[3].qp));
		ck_assert_uint_eq(wc.byte_len, 3000);
		ck_assert(memcmp(r->p + (1 + k) * 4096, m->p, 3000) == 0);
	}
	expect_empty(w.e[3].rcq);
	world_free(&w);
}
END_TEST

/* ================================================================ RFC 7306 */

START_TEST(test_rfc7306_refused)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct buf *b = buf_new(&w, w.pd, 64, ACC_ALL);
	struct iw_sge sg = sge_of(b, 0, 8);
	static const enum iw_wr_opcode ops[] = {IW_WR_RDMA_WRITE_WITH_IMM, IW_WR_SEND_WITH_IMM,
						IW_WR_ATOMIC_CMP_AND_SWP,
						IW_WR_ATOMIC_FETCH_AND_ADD};
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		struct iw_send_wr wr = wr_of(k, ops[k], 0, &sg, 1);
		wr.wr.atomic.remote_addr = (uintptr_t)b->p;
		wr.wr.atomic.rkey = b->mr->rkey;
		ck_assert_int_eq(post_wr(w.e[0].qp, &wr), EINVAL);
	}
	ck_assert_uint_eq(pump_dir(&w, 0), 0);
	expect_empty(w.e[0].scq);
	world_free(&w);
}
END_TEST

START_TEST(test_rfc7306_ops)
{
	struct cfg g = {.create_flags = IW_QP_CREATE_RFC7306, .crc = _i, .mk_ab = _i};
	struct world w;
	world_new(&w, &g);
	w.mp.mode = (enum mp_mode)(_i ? MP_BYTES : MP_DIRECT);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *tgt = buf_new(&w, w.pd, 64, ACC_ALL);
	struct buf *res = buf_new(&w, w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	struct buf *src = buf_new(&w, w.pd, 300, 0);
	uint64_t v = 100;
	memcpy(tgt->p + 8, &v, 8);
	struct iw_sge sg = sge_of(res, 0, 8);
	struct iw_send_wr wr = wr_of(1, IW_WR_ATOMIC_FETCH_AND_ADD, 0, &sg, 1);
	wr.wr.atomic.remote_addr = (uintptr_t)(tgt->p + 8);
	wr.wr.atomic.rkey = tgt->mr->rkey;
	wr.wr.atomic.compare_add = 5;
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	struct iw_sge sg2 = sge_of(res, 8, 8);
	wr = wr_of(2, IW_WR_ATOMIC_CMP_AND_SWP, 0, &sg2, 1);
	wr.wr.atomic.remote_addr = (uintptr_t)(tgt->p + 8);
	wr.wr.atomic.rkey = tgt->mr->rkey;
	wr.wr.atomic.compare_add = 105;
	wr.wr.atomic.swap = 7;
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	/* A Read between the atomics: the ORQ holds both kinds, in order. */
	struct buf *rd = buf_new(&w, w.pd, 64, ACC_RW);
	struct iw_sge rsg = sge_of(rd, 0, 16);
	ck_assert_int_eq(post_rdma(A->qp, 20, IW_WR_RDMA_READ, 0, &rsg, 1, tgt->p, tgt->mr->rkey),
			 0);
	struct iw_sge sg3 = sge_of(res, 16, 8);
	wr = wr_of(3, IW_WR_ATOMIC_CMP_AND_SWP, 0, &sg3, 1);
	wr.wr.atomic.remote_addr = (uintptr_t)(tgt->p + 8);
	wr.wr.atomic.rkey = tgt->mr->rkey;
	wr.wr.atomic.compare_add = 999;
	wr.wr.atomic.swap = 1;
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	/* Write with immediate: the data lands, then a receive completes. */
	fill(src->p, 300, 11);
	struct buf *wt = buf_new(&w, w.pd, 300, ACC_RW);
	ck_assert_int_eq(post_recv_sg(B->qp, 9, NULL, 0), 0);
	struct iw_sge ws = sge_of(src, 0, 300);
	wr = wr_of(4, IW_WR_RDMA_WRITE_WITH_IMM, IW_SEND_SOLICITED, &ws, 1);
	wr.wr.rdma.remote_addr = (uintptr_t)wt->p;
	wr.wr.rdma.rkey = wt->mr->rkey;
	wr.imm_data = htonl(0x12345678);
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	pump(&w);
	tap_check(&w);
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_FETCH_ADD);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_COMP_SWAP);
	expect_wc(A->scq, 20, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	expect_wc(A->scq, 3, IW_WC_SUCCESS, IW_WC_COMP_SWAP);
	expect_wc(A->scq, 4, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
	uint64_t r[3];
	memcpy(r, res->p, sizeof(r));
	ck_assert_uint_eq(r[0], 100);
	ck_assert_uint_eq(r[1], 105);
	ck_assert_uint_eq(r[2], 7);
	memcpy(&v, tgt->p + 8, 8);
	ck_assert_uint_eq(v, 7);
	memcpy(&v, rd->p + 8, 8);
	ck_assert_uint_eq(v, 7); /* the Read saw the cmp-swap before it */
	struct iw_wc wc = expect_wc(B->rcq, 9, IW_WC_SUCCESS, IW_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, htonl(0x12345678));
	ck_assert_uint_eq(wc.wc_flags, IW_WC_WITH_IMM | IW_WC_SOLICITED);
	ck_assert(memcmp(wt->p, src->p, 300) == 0);
	/* An atomic on an MR without REMOTE_ATOMIC: RDMAP access error. */
	struct buf *na = buf_new(&w, w.pd, 16, ACC_RW);
	wr = wr_of(5, IW_WR_ATOMIC_FETCH_AND_ADD, 0, &sg, 1);
	wr.wr.atomic.remote_addr = (uintptr_t)na->p;
	wr.wr.atomic.rkey = na->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	pump(&w);
	expect_pair_terminate(&w, 1, IW_TERM_RDMAP_ACCESS, IW_EVENT_QP_ACCESS_ERR);
	/* The TERMINATE copies the request's header: the atomic is at fault. */
	struct iw_wc fw = expect_wc(A->scq, 5, IW_WC_REM_ACCESS_ERR, IW_WC_FETCH_ADD);
	ck_assert_uint_eq(fw.vendor_err, IW_TERM_RDMAP_ACCESS);
	ck_assert(memcmp(na->p, (uint8_t[16]){0}, 16) == 0);
	world_free(&w);
}
END_TEST

/* ================================================================ errors */

/* The connection drops with work everywhere: every WR completes exactly
 * once, in order, errors reported even for unsignaled WRs. */
START_TEST(test_conn_lost)
{
	struct cfg g = {.no_sig_all = true, .ord = 2};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 100000, ACC_RW | IW_ACCESS_REMOTE_READ);
	struct buf *r = buf_new(&w, w.pd, 100000, ACC_RW | IW_ACCESS_REMOTE_READ);
	for (int k = 0; k < 3; k++)
		post_recv_buf(B->qp, 100 + (uint64_t)k, r, 0, 100000);
	post_recv_buf(A->qp, 200, m, 0, 10);
	ck_assert_int_eq(post_send_buf(A->qp, 1, IW_SEND_SIGNALED, m, 100000), 0);
	struct iw_sge sg = sge_of(m, 0, 5000);
	ck_assert_int_eq(post_rdma(A->qp, 2, IW_WR_RDMA_WRITE, 0, &sg, 1, r->p, r->mr->rkey), 0);
	ck_assert_int_eq(post_rdma(A->qp, 3, IW_WR_RDMA_READ, IW_SEND_SIGNALED, &sg, 1, r->p,
				   r->mr->rkey),
			 0);
	ck_assert_int_eq(post_send_buf(A->qp, 4, 0, m, 10), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 5, IW_SEND_SIGNALED, m, 10), 0);
	if (_i == 1) {
		/* A prefix of the first batch is written: less than Send 1. */
		w.mp.partial = true;
		pump_dir(&w, 0);
	} else if (_i == 2) {
		/* All of A's octets arrive; B owes the Read Response. */
		while (pump_dir(&w, 0))
			;
	}
	iw_qp_conn_lost(A->qp, false);
	iw_qp_conn_lost(B->qp, _i == 2);
	ck_assert_int_eq(qp_state(A->qp), IW_QPS_ERR);
	ck_assert_int_eq(qp_state(B->qp), IW_QPS_ERR);
	ck_assert(!iw_qp_tx_pending(A->qp));
	ck_assert(!iw_qp_tx_pending(B->qp));
	struct iovec iov[4];
	ck_assert_int_eq(iw_qp_tx_iov(A->qp, iov, 4), 0);
	ck_assert_int_eq(iw_qp_tx_iov(B->qp, iov, 4), 0);
	if (_i == 2) {
		/* Written WRs succeeded (2 and 4 silently); the unanswered Read
		 * flushes; B took all three Sends. */
		expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_SEND);
		expect_wc(A->scq, 3, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
		expect_wc(A->scq, 5, IW_WC_SUCCESS, IW_WC_SEND);
		for (uint64_t k = 100; k < 103; k++)
			expect_wc(B->rcq, k, IW_WC_SUCCESS, IW_WC_RECV);
	} else {
		/* Nothing (or part of Send 1) went out: all flush, the
		 * unsignaled ones too; B's partly filled receive first. */
		for (uint64_t k = 1; k <= 5; k++)
			expect_wc(A->scq, k, IW_WC_WR_FLUSH_ERR,
				  k == 2 ? IW_WC_RDMA_WRITE : k == 3 ? IW_WC_RDMA_READ : IW_WC_SEND);
		for (uint64_t k = 100; k < 103; k++)
			expect_wc(B->rcq, k, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	}
	expect_empty(A->scq);
	expect_wc(A->rcq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(A->rcq);
	expect_empty(B->rcq);
	expect_empty(B->scq);
	/* After ERR new WRs complete with flush status at once. */
	ck_assert_int_eq(post_send_buf(A->qp, 6, 0, m, 10), 0);
	expect_wc(A->scq, 6, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	post_recv_buf(A->qp, 201, m, 0, 10);
	expect_wc(A->rcq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(w.ctx, ev, 2), 0);
	world_free(&w);
}
END_TEST

/* An idle QP holds no transmit queue (issue 13: ~37 KB each would be most
 * of an idle connection); the drained queue waits in the context's spare
 * slot, so every burst reuses the same one without a malloc (issue 12). */
START_TEST(test_txq_spare)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 4096, ACC_RW);
	struct buf *r = buf_new(&w, w.pd, 4096, ACC_RW);
	struct iw_txq *q = NULL;
	for (uint64_t k = 0; k < 3; k++) {
		post_recv_buf(B->qp, 100 + k, r, 0, 4096);
		ck_assert_int_eq(post_send_buf(A->qp, k, IW_SEND_SIGNALED, m, 4096), 0);
		pump(&w);
		expect_wc(A->scq, k, IW_WC_SUCCESS, IW_WC_SEND);
		expect_wc(B->rcq, 100 + k, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert(!iw_qp_tx_pending(A->qp));
		ck_assert_ptr_null(A->qp->txq);
		ck_assert_ptr_null(B->qp->txq);
		ck_assert_ptr_nonnull(w.ctx->txq_spare);
		if (k)
			ck_assert_ptr_eq(w.ctx->txq_spare, q); /* the same queue, every burst */
		q = w.ctx->txq_spare;
	}
	/* ERR and a lost connection leave no queue behind either. */
	struct iw_qp_attr qa = {.qp_state = IW_QPS_ERR};
	ck_assert_int_eq(iw_modify_qp(A->qp, &qa, IW_QP_STATE), 0);
	pump(&w);
	ck_assert_ptr_null(A->qp->txq);
	iw_qp_conn_lost(B->qp, true);
	ck_assert_ptr_null(B->qp->txq);
	world_free(&w);
}
END_TEST

/* Markers on: a QP streaming bulk data grows its stage from the smallest
 * to the largest size, one doubling per batch that filled it, so that it
 * hands the kernel writes as large as a big message (qp.h); one sending
 * 4 KiB messages keeps the smallest. Data intact across the swaps. */
static size_t stage_stream(struct world *w, size_t len, int msgs, size_t *max_batch)
{
	struct end *A = &w->e[0], *B = &w->e[1];
	struct buf *a = buf_new(w, w->pd, len, ACC_RW);
	struct buf *b = buf_new(w, w->pd, len, ACC_RW);
	for (int m = 0; m < msgs; m++) {
		fill(a->p, len, 70 + (uint32_t)m);
		struct iw_sge sg = sge_of(a, 0, len);
		ck_assert_int_eq(post_rdma(A->qp, (uint64_t)m, IW_WR_RDMA_WRITE, IW_SEND_SIGNALED,
					   &sg, 1, b->p, b->mr->rkey),
				 0);
		size_t n;
		while ((n = take_tx(w, A->qp)) > 0) {
			feed(w, B->qp, w->mp.stage, n);
			*max_batch = n > *max_batch ? n : *max_batch;
		}
		expect_wc(A->scq, (uint64_t)m, IW_WC_SUCCESS, IW_WC_RDMA_WRITE);
		ck_assert(memcmp(a->p, b->p, len) == 0);
	}
	ck_assert_ptr_null(A->qp->txq);
	ck_assert_ptr_nonnull(w->ctx->txq_spare);
	return w->ctx->txq_spare->stage_cap;
}

START_TEST(test_txq_stage_grows)
{
	struct cfg g = {.crc = true, .mk_ab = true, .mk_ba = true, .emss = 65483};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	size_t max_batch = 0;
	/* 128 KiB, then 256, 512 and 1024 KiB: four full batches. A full one
	 * lacks less than two FPDUs, each under 66 KiB with its markers. */
	ck_assert_uint_eq(stage_stream(&w, (size_t)4 << 20, 1, &max_batch), IW_TXQ_STAGE_MAX);
	ck_assert_uint_gt(max_batch, IW_TXQ_STAGE_MAX - 2 * 66 * 1024);
	ck_assert_uint_le(max_batch, IW_TXQ_STAGE_MAX);
	/* It stays that size: a second stream writes 1 MiB batches at once. */
	max_batch = 0;
	ck_assert_uint_eq(stage_stream(&w, (size_t)2 << 20, 2, &max_batch), IW_TXQ_STAGE_MAX);
	ck_assert_uint_gt(max_batch, IW_TXQ_STAGE_MAX - 2 * 66 * 1024);
	world_free(&w);
	world_new(&w, &g);
	world_start(&w);
	max_batch = 0;
	ck_assert_uint_eq(stage_stream(&w, 4096, 8, &max_batch), IW_TXQ_STAGE_MIN);
	ck_assert_uint_le(max_batch, 4096 + 256);
	world_free(&w);
}
END_TEST

/* A writer that built and wrote everything has answered the TX event the
 * post raised: the next locked step (a poller's receive batch) must not
 * send the glue to build again for nothing, a transmit attempt per message
 * received in a ping-pong. A new post raises the event again. */
START_TEST(test_tx_event_answered)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 64, ACC_RW);
	struct buf *r = buf_new(&w, w.pd, 128, ACC_RW);
	post_recv_buf(B->qp, 100, r, 0, 64);
	post_recv_buf(B->qp, 101, r, 64, 64);
	ck_assert_int_eq(post_send_buf(A->qp, 1, IW_SEND_SIGNALED, m, 64), 0);
	/* The posting thread writes, as iw_cm_conn_tx does. */
	struct iovec iov[8];
	int n = iw_qp_tx_iov(A->qp, iov, 8);
	ck_assert_int_gt(n, 0);
	uint8_t wire[512];
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		ck_assert_uint_le(len + iov[i].iov_len, sizeof(wire));
		memcpy(wire + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	ck_assert_int_eq(iw_qp_tx_sent_iov(A->qp, len, iov, 8), 0);
	ck_assert_uint_eq(iw_qp_take_events(A->qp) & IW_QPE_TX, 0);
	feed(&w, B->qp, wire, len);
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(B->rcq, 100, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_int_eq(post_send_buf(A->qp, 2, IW_SEND_SIGNALED, m, 64), 0);
	ck_assert_uint_ne(iw_qp_take_events(A->qp) & IW_QPE_TX, 0);
	pump(&w);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(B->rcq, 101, IW_WC_SUCCESS, IW_WC_RECV);
	world_free(&w);
}
END_TEST

/* One batch of octets from `from` to its peer, as a glue moves them. */
static void hop(struct world *w, int from)
{
	size_t n = take_tx(w, w->e[from].qp);
	ck_assert_uint_gt(n, 0);
	feed(w, w->e[from ^ 1].qp, w->mp.stage, n);
}

/* A Read Response that retires a Read with nothing queued behind it asks
 * the glue for no transmit attempt: raising the event per response sent a
 * poller to lock and build for nothing once per batch of responses. A
 * Read that waited for ORD is woken by the response that frees it. */
START_TEST(test_read_resp_tx_event)
{
	struct cfg g = {.ord = 1, .ird = 1};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0];
	struct buf *src = buf_new(&w, w.pd, 4096, ACC_RD);
	struct buf *sink = buf_new(&w, w.pd, 8192, ACC_RW);
	struct iw_sge s0 = sge_of(sink, 0, 4096), s1 = sge_of(sink, 4096, 4096);
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &s0, 1, src->p, src->mr->rkey),
			 0);
	ck_assert_int_eq(post_rdma(A->qp, 2, IW_WR_RDMA_READ, 0, &s1, 1, src->p, src->mr->rkey),
			 0);
	hop(&w, 0); /* the first Read Request; ORD 1 holds the second */
	hop(&w, 1); /* its response */
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	ck_assert_uint_ne(iw_qp_take_events(A->qp) & IW_QPE_TX, 0);
	hop(&w, 0); /* the second Request, nothing behind it */
	iw_qp_take_events(A->qp);
	hop(&w, 1);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	ck_assert_uint_eq(iw_qp_take_events(A->qp) & IW_QPE_TX, 0);
	buf_free(src);
	buf_free(sink);
	world_free(&w);
}
END_TEST

/* A pair with ORD/IRD 32 whose end A reads 64-octet slots of a source on
 * end B (the Read Request batching tests). */
struct rd {
	struct world w;
	struct iw_qp *qp;
	struct buf *src, *sink;
};

static void rd_new(struct rd *r, size_t nreads)
{
	struct cfg g = {.ord = 32, .ird = 32};
	world_new(&r->w, &g);
	world_start(&r->w);
	r->qp = r->w.e[0].qp;
	r->src = buf_new(&r->w, r->w.pd, 64, ACC_RD);
	r->sink = buf_new(&r->w, r->w.pd, 64 * nreads, ACC_RW);
}

/* Read slot id, as WR id. */
static void rd_post(struct rd *r, uint64_t id)
{
	struct iw_sge s = sge_of(r->sink, id * 64, 64);
	ck_assert_int_eq(
		post_rdma(r->qp, id, IW_WR_RDMA_READ, 0, &s, 1, r->src->p, r->src->mr->rkey), 0);
}

/* Everything delivered: reads 0 to nreads - 1 complete, in order. */
static void rd_end(struct rd *r, uint64_t nreads)
{
	pump(&r->w);
	for (uint64_t i = 0; i < nreads; i++)
		expect_wc(r->w.e[0].scq, i, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	buf_free(r->src);
	buf_free(r->sink);
	world_free(&r->w);
}

/* Reads posted one call at a time while eight or more responses are owed
 * leave together: the posts ask the glue for no transmit (each asked for
 * its own 44-octet write before), and the response that completes next
 * asks once, for one transmit carrying all three Read Requests. */
START_TEST(test_read_req_batch)
{
	struct rd r;
	rd_new(&r, 11);
	size_t req = 0;
	for (int i = 0; i < 11; i++) {
		rd_post(&r, (uint64_t)i);
		unsigned ev = iw_qp_take_events(r.qp);
		if (i >= 8) {
			ck_assert_uint_eq(ev & IW_QPE_TX, 0);
			continue;
		}
		/* Fewer owed: the glue writes each at once, as before. */
		ck_assert_uint_ne(ev & IW_QPE_TX, 0);
		size_t n = take_tx(&r.w, r.qp);
		req = req ? req : n;
		ck_assert_uint_eq(n, req);
		feed(&r.w, r.w.e[1].qp, r.w.mp.stage, n);
	}
	hop(&r.w, 1); /* the eight responses */
	ck_assert_uint_ne(iw_qp_take_events(r.qp) & IW_QPE_TX, 0);
	ck_assert_uint_eq(take_tx(&r.w, r.qp), 3 * req);
	feed(&r.w, r.w.e[1].qp, r.w.mp.stage, 3 * req);
	rd_end(&r, 11);
}
END_TEST

/* Posts ids from *id up to end; the one at ask_at (if any) is the only one
 * that asks for a transmit. */
static void rd_post_held(struct rd *r, uint64_t *id, uint64_t end, uint64_t ask_at)
{
	for (; *id < end; ++*id) {
		rd_post(r, *id);
		unsigned tx = iw_qp_take_events(r->qp) & IW_QPE_TX;
		ck_assert_uint_eq(tx != 0, *id == ask_at);
	}
}

/* Held Reads stay held while a response retires with eight or more still
 * owed, go when fewer are owed, and a sixteenth held Read asks at once. */
START_TEST(test_read_req_batch_bounds)
{
	struct rd r;
	rd_new(&r, 36);
	struct iw_qp *B = r.w.e[1].qp;
	uint64_t id = 0;
	for (; id < 10; id++) /* ten sent in one write, ten owed */
		rd_post(&r, id);
	size_t n = take_tx(&r.w, r.qp);
	size_t req = n / 10;
	feed(&r.w, B, r.w.mp.stage, n);
	iw_qp_take_events(r.qp);
	rd_post_held(&r, &id, 12, UINT64_MAX); /* two held */
	/* The ten responses, one at a time: nine and eight owed keep them. */
	n = take_tx(&r.w, B);
	size_t resp = n / 10;
	uint8_t stage[4096];
	ck_assert_uint_le(n, sizeof(stage));
	memcpy(stage, r.w.mp.stage, n);
	for (size_t k = 0; k < 3; k++) {
		feed(&r.w, r.qp, stage + k * resp, resp);
		ck_assert_uint_eq((iw_qp_take_events(r.qp) & IW_QPE_TX) != 0, k == 2);
	}
	ck_assert_uint_eq(take_tx(&r.w, r.qp), 2 * req);
	feed(&r.w, B, r.w.mp.stage, 2 * req);
	feed(&r.w, r.qp, stage + 3 * resp, n - 3 * resp);
	pump(&r.w);
	/* Eight owed again, then sixteen posted: the sixteenth asks. */
	for (; id < 20; id++)
		rd_post(&r, id);
	feed(&r.w, B, r.w.mp.stage, take_tx(&r.w, r.qp));
	iw_qp_take_events(r.qp);
	rd_post_held(&r, &id, 36, 35);
	ck_assert_uint_eq(take_tx(&r.w, r.qp), 16 * req);
	feed(&r.w, B, r.w.mp.stage, 16 * req);
	rd_end(&r, 36);
}
END_TEST

/* ---------------------------------------------------------------- wake-ups */

/* The eventfd writes behind completions and events happen after the QP's,
 * the CQ's, the channel's and the async queue's locks are released (issue
 * 12 part 5). The hook runs on the writing thread just before each write:
 * a lock this single-threaded test finds taken is one the writer holds. */
static struct world *sig_w;
static atomic_int sig_count, sig_locked;

static void lock_probe(pthread_mutex_t *m)
{
	if (pthread_mutex_trylock(m) == 0)
		pthread_mutex_unlock(m);
	else
		atomic_fetch_add(&sig_locked, 1);
}

static void sig_hook(int fd)
{
	(void)fd;
	atomic_fetch_add(&sig_count, 1);
	for (int i = 0; i < sig_w->nends; i++) {
		lock_probe(&sig_w->e[i].qp->lock);
		lock_probe(&sig_w->e[i].scq->lock);
		lock_probe(&sig_w->e[i].rcq->lock);
	}
	lock_probe(&((struct iw_comp_channel_int *)sig_w->ch)->q.lock);
	lock_probe(&sig_w->ctx->async.lock);
}

START_TEST(test_signal_outside_locks)
{
	struct cfg g = {.channel = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 4096, ACC_RW);
	sig_w = &w;
	atomic_store(&sig_count, 0);
	atomic_store(&sig_locked, 0);
	iw_evq_signal_hook = sig_hook;
	ck_assert_int_eq(iw_req_notify_cq(A->scq, 0), 0);
	ck_assert_int_eq(iw_req_notify_cq(B->rcq, 0), 0);
	post_recv_buf(B->qp, 7, m, 0, 4096);
	ck_assert_int_eq(post_send_buf(A->qp, 8, IW_SEND_SIGNALED, m, 100), 0);
	pump(&w);
	/* SQD with nothing outstanding raises SQ_DRAINED under qp->lock. */
	struct iw_qp_attr qa = {.qp_state = IW_QPS_SQD};
	ck_assert_int_eq(iw_modify_qp(A->qp, &qa, IW_QP_STATE), 0);
	/* ERR flushes a receive into an armed CQ under qp->lock. */
	post_recv_buf(A->qp, 9, m, 0, 4096);
	ck_assert_int_eq(iw_req_notify_cq(A->rcq, 0), 0);
	qa.qp_state = IW_QPS_ERR;
	ck_assert_int_eq(iw_modify_qp(A->qp, &qa, IW_QP_STATE), 0);
	iw_evq_signal_hook = NULL;
	ck_assert_int_eq(atomic_load(&sig_count), 4); /* 3 channel events, 1 async */
	int locked = atomic_load(&sig_locked);
	ck_assert_msg(locked == 0, "%d lock(s) held at an eventfd write", locked);
	expect_wc(A->scq, 8, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(B->rcq, 7, IW_WC_SUCCESS, IW_WC_RECV);
	expect_wc(A->rcq, 9, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	for (int k = 0; k < 3; k++) {
		struct iw_cq *cq;
		void *ctx;
		ck_assert_int_eq(iw_get_cq_event(w.ch, &cq, &ctx), 0);
		ck_assert(cq == A->scq || cq == B->rcq || cq == A->rcq);
		iw_ack_cq_events(cq, 1);
	}
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(w.ctx, ev, 2), 1);
	ck_assert_int_eq(ev[0].event_type, IW_EVENT_SQ_DRAINED);
	world_free(&w);
}
END_TEST

/* A thread that sleeps on the blocking channel fd, the verbs way (arm, poll
 * until empty, wait, ack), is woken for every Send the pump completes: a
 * wake-up lost between the completion and the deferred eventfd write would
 * leave it asleep and the test would time out. */
#define WAKE_ROUNDS 400

struct waiter {
	struct world *w;
	struct iw_cq *cq;
	sem_t got;   /* one post per completion taken */
	int taken;
};

static void *waiter_main(void *arg)
{
	struct waiter *wt = arg;
	while (wt->taken < WAKE_ROUNDS) {
		struct iw_wc wc;
		ck_assert_int_eq(iw_req_notify_cq(wt->cq, 0), 0);
		int n;
		while ((n = iw_poll_cq(wt->cq, 1, &wc)) == 1) {
			ck_assert_uint_eq(wc.wr_id, (uint64_t)wt->taken);
			ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
			wt->taken++;
			sem_post(&wt->got);
		}
		ck_assert_int_eq(n, 0);
		if (wt->taken == WAKE_ROUNDS)
			break;
		struct iw_cq *cq;
		void *ctx;
		ck_assert_int_eq(iw_get_cq_event(wt->w->ch, &cq, &ctx), 0);
		ck_assert_ptr_eq(cq, wt->cq);
		iw_ack_cq_events(cq, 1);
	}
	return NULL;
}

START_TEST(test_waiter_woken)
{
	struct cfg g = {.channel = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 64, ACC_RW);
	struct buf *r = buf_new(&w, w.pd, 64, ACC_RW);
	struct waiter wt = {.w = &w, .cq = B->rcq};
	ck_assert_int_eq(sem_init(&wt.got, 0, 0), 0);
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, waiter_main, &wt), 0);
	for (uint64_t k = 0; k < WAKE_ROUNDS; k++) {
		post_recv_buf(B->qp, k, r, 0, 64);
		ck_assert_int_eq(post_send_buf(A->qp, k, IW_SEND_SIGNALED, m, 64), 0);
		pump(&w);
		expect_wc(A->scq, k, IW_WC_SUCCESS, IW_WC_SEND);
		while (sem_wait(&wt.got) != 0)
			ck_assert_int_eq(errno, EINTR);
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(wt.taken, WAKE_ROUNDS);
	sem_destroy(&wt.got);
	world_free(&w);
}
END_TEST

/* The application moves a QP to ERR: flush, and the peer is not told. */
START_TEST(test_modify_err)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0];
	struct buf *m = buf_new(&w, w.pd, 64, ACC_RW);
	post_recv_buf(A->qp, 1, m, 0, 64);
	post_recv_buf(A->qp, 2, m, 0, 64);
	struct iw_sge sg = sge_of(m, 0, 8);
	ck_assert_int_eq(post_rdma(A->qp, 3, IW_WR_RDMA_READ, 0, &sg, 1, m->p, 0x5500), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 4, 0, m, 8), 0);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_ERR};
	ck_assert_int_eq(iw_modify_qp(A->qp, &qa, IW_QP_STATE), 0);
	ck_assert_int_eq(qp_state(A->qp), IW_QPS_ERR);
	expect_wc(A->scq, 3, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(A->scq, 4, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	expect_wc(A->rcq, 1, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_wc(A->rcq, 2, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	ck_assert(iw_qp_take_events(A->qp) & IW_QPE_ERROR);
	ck_assert_uint_eq(pump_dir(&w, 0), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 5, 0, m, 8), 0);
	expect_wc(A->scq, 5, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	expect_empty(A->scq);
	expect_empty(A->rcq);
	world_free(&w);
}
END_TEST

/* "No TERMINATE" is IW_TERM_NONE, never IW_TERM(0, 0, 0), which is RDMAP's
 * local catastrophic error (issue 16, bug 3): successes and flushes that no
 * TERMINATE caused say "none". */
START_TEST(test_term_none)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *m = buf_new(&w, w.pd, 64, ACC_RW);
	post_recv_buf(B->qp, 10, m, 0, 64);
	ck_assert_int_eq(post_send_buf(A->qp, 1, IW_SEND_SIGNALED, m, 8), 0);
	pump(&w);
	struct iw_wc wc = expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_SEND);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_NONE);
	wc = expect_wc(B->rcq, 10, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_NONE);
	post_recv_buf(A->qp, 11, m, 0, 64);
	ck_assert_int_eq(post_send_buf(A->qp, 2, 0, m, 8), 0);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_ERR};
	ck_assert_int_eq(iw_modify_qp(A->qp, &qa, IW_QP_STATE), 0);
	wc = expect_wc(A->scq, 2, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_NONE);
	ck_assert_str_eq(iw_term_str(wc.vendor_err), "none");
	wc = expect_wc(A->rcq, 11, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_NONE);
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(w.ctx, ev, 2), 0);
	world_free(&w);
}
END_TEST

/* ================================================================ hostile peer */

/* The QP under test is w.e[0] (responder, no P2P unless asked); the host
 * plays its peer with the public codecs. */
struct hseg {
	struct iw_ddp_hdr ddp;
	struct iw_rdmap_hdr rdmap;
	uint32_t plen;
};

struct host {
	struct world *w;
	struct iw_qp *qp;
	struct iw_fpdu_tx tx; /* host -> qp */
	struct iw_fpdu_rx rx; /* qp -> host */
	uint32_t msn[4];
	unsigned nseg;
	struct hseg seg[1024];
	unsigned nterm;
	struct iw_terminate term;
	int rx_err;
	uint8_t wire[2 * 65536 + 4096];
	size_t wire_len; /* the last FPDU built */
	/* the offending segment, for the TERMINATE's copies */
	uint8_t off_hdr[IW_FPDU_HDR_MAX];
	size_t off_hdr_len;
	uint16_t off_ulpdu;
};

struct hfix {
	struct world w;
	struct host h;
	struct iw_qp *qp;
	struct buf *rbuf, *sink, *msg, *mr_rw, *mr_rd, *mr_lw, *mr_pd2;
	int nrecv;      /* receives posted (ids 100..) */
	int nrecv_done; /* ... of which the test completed successfully */
	bool reads;     /* two Reads toward the host (200, 201) and a Send (202) */
	bool rtr_wait;  /* the QP is a P2P responder waiting for a WRITE RTR */
	/* The WR at fault (verbs.h, iw_poll_cq): the receive being filled
	 * (100 + nrecv_done) or Read 200 completes with this; 0: it flushes. */
	enum iw_wc_status recv_fault, read_fault;
};

static size_t hb_untagged(uint8_t *h, unsigned op, uint32_t qn, uint32_t msn, uint32_t mo,
			  bool last)
{
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, last), .rdmap_ctrl = iw_rdmap_ctrl(op)};
	d.qn = qn;
	d.msn = msn;
	d.mo = mo;
	int n = iw_ddp_hdr_build(h, IW_FPDU_HDR_MAX, &d);
	ck_assert_int_eq(n, IW_DDP_UNTAGGED_HDR_LEN);
	return (size_t)n;
}

static size_t hb_tagged(uint8_t *h, unsigned op, uint32_t stag, uint64_t to, bool last)
{
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(true, last), .rdmap_ctrl = iw_rdmap_ctrl(op)};
	d.stag = stag;
	d.to = to;
	int n = iw_ddp_hdr_build(h, IW_FPDU_HDR_MAX, &d);
	ck_assert_int_eq(n, IW_DDP_TAGGED_HDR_LEN);
	return (size_t)n;
}

/* Frame hdr + payload as the host's next FPDU into h->wire and remember it
 * as the offending segment. */
static size_t host_build(struct host *h, const uint8_t *hdr, size_t hl, const void *pay,
			 size_t plen)
{
	static struct iovec iov[IW_FPDU_IOV_NEED(1, IW_FPDU_MARKERS_MAX)];
	static struct iw_fpdu_out o;
	o.iov = iov;
	o.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
	struct iovec p = {.iov_base = (void *)(uintptr_t)pay, .iov_len = plen};
	ck_assert_int_eq(iw_fpdu_encode(&h->tx, &o, hdr, hl, &p, plen ? 1 : 0), 0);
	size_t n = 0;
	for (int i = 0; i < o.iovcnt; i++) {
		ck_assert_uint_le(n + iov[i].iov_len, sizeof(h->wire));
		memcpy(h->wire + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	ck_assert_uint_eq(n, o.wire_len);
	memcpy(h->off_hdr, hdr, hl);
	h->off_hdr_len = hl;
	h->off_ulpdu = (uint16_t)(hl + plen);
	h->wire_len = n;
	return n;
}

static void host_feed(struct host *h, const uint8_t *p, size_t n)
{
	feed(h->w, h->qp, p, n);
}

static void host_fpdu(struct host *h, const uint8_t *hdr, size_t hl, const void *pay, size_t plen)
{
	host_build(h, hdr, hl, pay, plen);
	host_feed(h, h->wire, h->wire_len);
}

/* A whole untagged message in one segment, with the next MSN of its queue. */
static void host_untagged(struct host *h, unsigned op, const void *pay, size_t plen)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	uint32_t qn = (uint32_t)iw_rdmap_opcode_qn(op);
	size_t hl = hb_untagged(hdr, op, qn, h->msn[qn]++, 0, true);
	host_fpdu(h, hdr, hl, pay, plen);
}

static void host_write(struct host *h, uint32_t stag, uint64_t to, const void *pay, size_t plen)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_tagged(hdr, IW_OP_WRITE, stag, to, true);
	host_fpdu(h, hdr, hl, pay, plen);
}

static void host_read_req_to(struct host *h, uint32_t sink_stag, uint32_t src_stag,
			     uint64_t src_to, uint32_t size)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_READ_REQ, IW_QN_READ_REQ, h->msn[IW_QN_READ_REQ]++, 0,
				true);
	struct iw_read_req r = {.sink_stag = sink_stag, .sink_to = 0x1000, .read_size = size,
				.src_stag = src_stag, .src_to = src_to};
	hl += (size_t)iw_rdmap_read_req_build(hdr + hl, sizeof(hdr) - hl, &r);
	host_fpdu(h, hdr, hl, NULL, 0);
}

static void host_read_req(struct host *h, uint32_t src_stag, uint64_t src_to, uint32_t size)
{
	host_read_req_to(h, 0x4242, src_stag, src_to, size);
}

/* Take everything the QP has to send and decode it. */
static void host_drain(struct host *h)
{
	for (;;) {
		size_t n = take_tx(h->w, h->qp);
		if (!n)
			break;
		const uint8_t *p = h->w->mp.stage;
		while (n && !h->rx_err) {
			struct iw_rx_event ev;
			size_t used = 0;
			int rc = iw_fpdu_rx_next(&h->rx, &ev, p, n, &used);
			p += used;
			n -= used;
			if (rc < 0)
				h->rx_err = rc;
			if (rc <= 0)
				break;
			if (ev.kind != IW_RX_SEG_HDR)
				continue;
			if (h->nseg >= sizeof(h->seg) / sizeof(h->seg[0]))
				ck_abort_msg("host segment log full");
			struct hseg *s = &h->seg[h->nseg++];
			s->ddp = ev.seg->ddp;
			s->rdmap = ev.seg->rdmap;
			s->plen = ev.seg->payload_len;
			if (iw_ddp_opcode(&ev.seg->ddp) == IW_OP_TERMINATE) {
				h->nterm++;
				h->term = ev.seg->rdmap.u.term;
			}
		}
	}
	ck_assert_int_eq(h->rx_err, 0);
}

enum hflags {
	HF_CRC = 1 << 0,
	HF_MK_IN = 1 << 1,  /* markers host -> QP */
	HF_MK_OUT = 1 << 2, /* markers QP -> host */
	HF_NO_READS = 1 << 3,
	HF_RTR = 1 << 4,    /* P2P responder expecting a WRITE RTR */
	HF_7306 = 1 << 5,
	HF_SIW = 1 << 6,    /* read the peer's TERMINATE in siw's layout */
	HF_SMALL_RQ = 1 << 7, /* an RQ of four WRs */
	HF_HOLD = 1 << 8,     /* IW_QP_CREATE_RECV_HOLD */
	HF_HOLD_SMALL = 1 << 9, /* ... holding two messages, 100 octets */
	HF_SINK_LOCAL = 1 << 10, /* the Reads' sink: LOCAL_WRITE | READ_SINK only */
};

static void hfix_init(struct hfix *f, unsigned flags, enum mp_mode mode)
{
	memset(f, 0, sizeof(*f));
	struct cfg g = {
		.nqp = 1,
		.crc = flags & HF_CRC,
		.mk_ab = (flags & HF_MK_IN) != 0,
		.mk_ba = (flags & HF_MK_OUT) != 0,
		.ird = 2,
		.ord = 4,
		.p2p = (flags & HF_RTR) != 0,
		.rtr = (flags & HF_RTR) ? IW_RTR_WRITE : 0,
		.create_flags = ((flags & HF_7306) ? IW_QP_CREATE_RFC7306 : 0) |
				((flags & HF_HOLD) ? IW_QP_CREATE_RECV_HOLD : 0),
		.no_sig_all = true,
		.rq = (flags & HF_SMALL_RQ) ? 4 : 0,
	};
	struct world *w = &f->w;
	world_new(w, &g);
	w->mp.mode = mode;
	w->tap = false;
	w->e[0].conn.peer_siw_term = flags & HF_SIW;
	if (flags & HF_HOLD_SMALL) {
		w->e[0].conn.hold_msgs = 2;
		w->e[0].conn.hold_bytes = 100;
	}
	f->qp = w->e[0].qp;
	world_start(w);
	struct host *h = &f->h;
	h->w = w;
	h->qp = f->qp;
	iw_fpdu_tx_init(&h->tx, g.crc, g.mk_ab, 0);
	iw_fpdu_rx_init(&h->rx, g.crc, g.mk_ba, 0, 0, 0);
	for (int i = 0; i < 4; i++)
		h->msn[i] = 1;
	f->rtr_wait = flags & HF_RTR;

	f->rbuf = buf_new(w, w->pd, 3 * 64, IW_ACCESS_LOCAL_WRITE);
	f->sink = buf_new(w, w->pd, 64,
			  (flags & HF_SINK_LOCAL) ? IW_ACCESS_LOCAL_WRITE | IW_ACCESS_READ_SINK : ACC_RW);
	f->msg = buf_new(w, w->pd, 64, 0);
	f->mr_rw = buf_new(w, w->pd, 64, ACC_RW | IW_ACCESS_REMOTE_READ | IW_ACCESS_REMOTE_ATOMIC);
	f->mr_rd = buf_new(w, w->pd, 64, ACC_RD);
	f->mr_lw = buf_new(w, w->pd, 64, IW_ACCESS_LOCAL_WRITE);
	f->mr_pd2 = buf_new(w, w->pd2, 64, ACC_RW | IW_ACCESS_REMOTE_READ);
	fill(f->mr_rd->p, 64, 1);
	fill(f->mr_rw->p, 64, 2);
	f->nrecv = 3;
	for (int i = 0; i < 3; i++)
		post_recv_buf(f->qp, 100 + (uint64_t)i, f->rbuf, (size_t)i * 64, 64);
	f->reads = !(flags & HF_NO_READS);
	if (f->reads) {
		for (int i = 0; i < 2; i++) {
			struct iw_sge sg = sge_of(f->sink, (size_t)i * 32, 32);
			ck_assert_int_eq(post_rdma(f->qp, 200 + (uint64_t)i, IW_WR_RDMA_READ,
						   IW_SEND_SIGNALED, &sg, 1, (void *)0x9000, 0x7700),
					 0);
		}
		ck_assert_int_eq(post_send_buf(f->qp, 202, IW_SEND_SIGNALED, f->msg, 16), 0);
	}
	host_drain(h);
	if (f->rtr_wait) {
		ck_assert_uint_eq(h->nseg, 0); /* nothing before the RTR */
	} else if (f->reads) {
		ck_assert_uint_eq(h->nseg, 3);
		ck_assert_uint_eq(iw_ddp_opcode(&h->seg[0].ddp), IW_OP_READ_REQ);
		ck_assert_uint_eq(iw_ddp_opcode(&h->seg[1].ddp), IW_OP_READ_REQ);
		ck_assert_uint_eq(iw_ddp_opcode(&h->seg[2].ddp), IW_OP_SEND);
	}
}

enum hcopy { COPY_NONE, COPY_DDP, COPY_DDP_RDMA };

/* The exact TERMINATE, ERR, one async event, exact flushes, and flush at
 * once for anything posted afterwards; the QP sends nothing more. */
static void hfix_expect_term(struct hfix *f, uint16_t term, enum iw_event_type evt,
			     enum hcopy copy)
{
	struct host *h = &f->h;
	struct end *e = &f->w.e[0];
	/* Receives flush at once, before the TERMINATE is even written. */
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_ERR);
	for (int i = f->nrecv_done; i < f->nrecv; i++) {
		bool fault = i == f->nrecv_done && f->recv_fault;
		struct iw_wc wc = expect_wc(e->rcq, 100 + (uint64_t)i,
					    fault ? f->recv_fault : IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
		ck_assert_uint_eq(wc.qp_num, iw_qp_num(f->qp));
		ck_assert_uint_eq(wc.vendor_err, term);
	}
	expect_empty(e->rcq);
	host_drain(h);
	ck_assert_msg(h->nterm == 1, "want TERMINATE %s, got %u TERMINATEs", iw_term_str(term),
		      h->nterm);
	ck_assert_msg(h->term.term == term, "TERMINATE %04x (%s), want %04x (%s)", h->term.term,
		      iw_term_str(h->term.term), term, iw_term_str(term));
	/* It is the last FPDU: queue 2, MSN 1, L set. */
	const struct hseg *t = &h->seg[h->nseg - 1];
	ck_assert_uint_eq(iw_ddp_opcode(&t->ddp), IW_OP_TERMINATE);
	ck_assert_uint_eq(t->ddp.qn, IW_QN_TERMINATE);
	ck_assert_uint_eq(t->ddp.msn, 1);
	ck_assert(iw_ddp_last(&t->ddp));
	if (copy == COPY_NONE) {
		ck_assert_uint_eq(h->term.hdrct, 0);
	} else {
		uint8_t want = IW_TERM_HDR_M | IW_TERM_HDR_D;
		if (copy == COPY_DDP_RDMA)
			want |= IW_TERM_HDR_R;
		ck_assert_uint_eq(h->term.hdrct, want);
		ck_assert_uint_eq(h->term.ddp_seg_len, h->off_ulpdu);
		size_t dl = (h->off_hdr[0] & IW_DDP_T) ? IW_DDP_TAGGED_HDR_LEN
						      : IW_DDP_UNTAGGED_HDR_LEN;
		ck_assert_uint_eq(h->term.ddp_hdr_len, dl);
		ck_assert(memcmp(h->term.ddp_hdr, h->off_hdr, dl) == 0);
		if (copy == COPY_DDP_RDMA)
			ck_assert(memcmp(h->term.rdma_hdr, h->off_hdr + dl,
					 IW_RDMAP_READ_REQ_LEN) == 0);
	}
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_ERR);
	ck_assert(iw_qp_take_events(f->qp) & IW_QPE_ERROR);
	struct iw_async_event ev[4];
	ck_assert_int_eq(async_count(f->w.ctx, ev, 4), 1);
	ck_assert_msg(ev[0].event_type == evt, "async %s, want %s",
		      iw_event_type_str(ev[0].event_type), iw_event_type_str(evt));
	ck_assert_ptr_eq(ev[0].element.qp, f->qp);
	ck_assert_uint_eq(ev[0].term, term);
	ck_assert(!ev[0].term_from_peer);
	/* Send flushes: each WR exactly once, in order. */
	if (f->reads) {
		struct iw_wc wc = expect_wc(e->scq, 200,
					    f->read_fault ? f->read_fault : IW_WC_WR_FLUSH_ERR,
					    IW_WC_RDMA_READ);
		ck_assert_uint_eq(wc.vendor_err, term);
		expect_wc(e->scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
		/* Written before the error, held behind the Reads; a P2P
		 * responder that never saw the RTR wrote nothing. */
		expect_wc(e->scq, 202, f->rtr_wait ? IW_WC_WR_FLUSH_ERR : IW_WC_SUCCESS,
			  IW_WC_SEND);
	}
	expect_empty(e->scq);
	/* Later WRs flush at once; later input is dropped; nothing goes out. */
	ck_assert_int_eq(post_send_buf(f->qp, 300, 0, f->msg, 8), 0);
	expect_wc(e->scq, 300, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	post_recv_buf(f->qp, 301, f->rbuf, 0, 8);
	expect_wc(e->rcq, 301, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	uint8_t junk[40];
	fill(junk, sizeof(junk), 5);
	host_feed(h, junk, sizeof(junk));
	unsigned n = h->nseg;
	host_drain(h);
	ck_assert_uint_eq(h->nseg, n);
	ck_assert(!iw_qp_tx_pending(f->qp));
	expect_empty(e->scq);
	expect_empty(e->rcq);
	ck_assert_int_eq(async_count(f->w.ctx, ev, 4), 0);
}

/* ---------------------------------------------------------------- cases */

struct hcase {
	const char *name;
	unsigned flags;      /* HF_* always set */
	void (*act)(struct hfix *f);
	uint16_t term;
	enum iw_event_type ev;
	enum hcopy copy;
	/* the WR at fault: our receive 100 or our Read 200 (0: none) */
	enum iw_wc_status recv_fault, read_fault;
};

static void a_write_inv_stag(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, 0x00ABCD00u, 0x1000, d, sizeof(d));
}

static void a_write_stale_key(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, f->mr_rw->mr->rkey ^ 1, (uintptr_t)f->mr_rw->p, d, sizeof(d));
}

static void a_write_bounds(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, f->mr_rw->mr->rkey, (uintptr_t)f->mr_rw->p + 60, d, sizeof(d));
}

static void a_write_below(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, f->mr_rw->mr->rkey, (uintptr_t)f->mr_rw->p - 1, d, sizeof(d));
}

static void a_write_access(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, f->mr_lw->mr->rkey, (uintptr_t)f->mr_lw->p, d, sizeof(d));
}

/* A sink with READ_SINK alone takes Read Responses, never a Write. */
static void a_write_read_sink(struct hfix *f)
{
	uint8_t d[16];
	fill(d, sizeof(d), 5);
	host_write(&f->h, f->sink->mr->rkey, (uintptr_t)f->sink->p, d, sizeof(d));
	ck_assert(memcmp(f->sink->p, (uint8_t[64]){0}, 64) == 0);
}

static void a_write_pd(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, f->mr_pd2->mr->rkey, (uintptr_t)f->mr_pd2->p, d, sizeof(d));
}

static void a_write_wrap(struct hfix *f)
{
	uint8_t d[16] = {0};
	host_write(&f->h, f->mr_rw->mr->rkey, UINT64_MAX - 4, d, sizeof(d));
}

/* A fast-reg MR registered and invalidated by our own WRs. */
static void a_write_invalidated(struct hfix *f)
{
	struct iw_mr *fr = iw_alloc_mr(f->w.pd, 1);
	struct buf *mem = buf_new(&f->w, NULL, 64, 0);
	uint32_t key = iw_inc_rkey(fr->rkey);
	/* The fixture's Reads are still in flight: REG_MR and LOCAL_INV run
	 * at once but complete behind them. */
	reg_mr_wr(f->qp, 210, fr, key, ACC_RW, (uintptr_t)mem->p, mem->p, 64);
	uint8_t d[16];
	fill(d, 16, 1);
	host_drain(&f->h);
	host_write(&f->h, key, (uintptr_t)mem->p, d, sizeof(d)); /* accepted */
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_RTS);
	ck_assert(memcmp(mem->p, d, 16) == 0);
	local_inv_wr(f->qp, 211, key);
	host_drain(&f->h);
	memset(d, 0, sizeof(d));
	host_write(&f->h, key, (uintptr_t)mem->p, d, sizeof(d));
	ck_assert(memcmp(mem->p, d, 16) != 0); /* not placed */
	host_drain(&f->h);
	expect_wc(f->w.e[0].scq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(f->w.e[0].scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(f->w.e[0].scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(f->w.e[0].scq, 210, IW_WC_SUCCESS, IW_WC_REG_MR);
	expect_wc(f->w.e[0].scq, 211, IW_WC_SUCCESS, IW_WC_LOCAL_INV);
	f->reads = false; /* checked here */
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
}

/* Invalidated by the host's Send with Invalidate, then written. */
static void a_write_remote_invalidated(struct hfix *f)
{
	struct iw_mr *fr = iw_alloc_mr(f->w.pd, 1);
	struct buf *mem = buf_new(&f->w, NULL, 64, 0);
	uint32_t key = iw_inc_rkey(fr->rkey);
	reg_mr_wr(f->qp, 210, fr, key, ACC_RW, (uintptr_t)mem->p, mem->p, 64);
	host_drain(&f->h);
	uint8_t hdr[IW_FPDU_HDR_MAX];
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true),
			       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND_INV)};
	d.qn = 0;
	d.msn = f->h.msn[0]++;
	d.inv_stag = key;
	size_t hl = (size_t)iw_ddp_hdr_build(hdr, sizeof(hdr), &d);
	host_fpdu(&f->h, hdr, hl, "hello", 5);
	struct iw_wc wc = expect_wc(f->w.e[0].rcq, 100, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.wc_flags, IW_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, key);
	ck_assert_uint_eq(wc.byte_len, 5);
	f->nrecv_done = 1;
	uint8_t z[16] = {0};
	host_write(&f->h, key, (uintptr_t)mem->p, z, sizeof(z));
	host_drain(&f->h);
	expect_wc(f->w.e[0].scq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(f->w.e[0].scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(f->w.e[0].scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(f->w.e[0].scq, 210, IW_WC_SUCCESS, IW_WC_REG_MR);
	f->reads = false;
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
}

static void a_send_inv_unknown(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true),
			       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND_SE_INV)};
	d.msn = f->h.msn[0]++;
	d.inv_stag = 0x00DEAD00u;
	size_t hl = (size_t)iw_ddp_hdr_build(hdr, sizeof(hdr), &d);
	host_fpdu(&f->h, hdr, hl, "x", 1);
}

static void a_send_inv_regmr(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true),
			       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND_INV)};
	d.msn = f->h.msn[0]++;
	d.inv_stag = f->mr_rw->mr->rkey; /* iw_reg_mr MRs cannot be revoked */
	size_t hl = (size_t)iw_ddp_hdr_build(hdr, sizeof(hdr), &d);
	host_fpdu(&f->h, hdr, hl, "x", 1);
}

static void a_read_inv_stag(struct hfix *f)
{
	host_read_req(&f->h, 0x00ABCD00u, 0, 8);
}

static void a_read_bounds(struct hfix *f)
{
	host_read_req(&f->h, f->mr_rd->mr->rkey, (uintptr_t)f->mr_rd->p + 1, 64);
}

static void a_read_access(struct hfix *f)
{
	host_read_req(&f->h, f->mr_lw->mr->rkey, (uintptr_t)f->mr_lw->p, 8);
}

static void a_read_pd(struct hfix *f)
{
	host_read_req(&f->h, f->mr_pd2->mr->rkey, (uintptr_t)f->mr_pd2->p, 8);
}

/* IRD 2: the third Read Request in flight is one too many. */
static void a_ird(struct hfix *f)
{
	host_read_req(&f->h, f->mr_rd->mr->rkey, (uintptr_t)f->mr_rd->p, 8);
	host_read_req(&f->h, f->mr_rd->mr->rkey, (uintptr_t)f->mr_rd->p + 8, 8);
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_RTS);
	host_read_req(&f->h, f->mr_rd->mr->rkey, (uintptr_t)f->mr_rd->p + 16, 8);
}

/* Three receives for four Sends. */
static void a_no_recv(struct hfix *f)
{
	for (int i = 0; i < 3; i++)
		host_untagged(&f->h, IW_OP_SEND, "abcdefgh", 8);
	for (int i = 0; i < 3; i++) {
		struct iw_wc wc = expect_wc(f->w.e[0].rcq, 100 + (uint64_t)i, IW_WC_SUCCESS,
					    IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, 8);
		ck_assert(memcmp(f->rbuf->p + i * 64, "abcdefgh", 8) == 0);
	}
	f->nrecv_done = 3;
	host_untagged(&f->h, IW_OP_SEND, "abcdefgh", 8);
}

static void a_msn_range(struct hfix *f)
{
	f->h.msn[0] = 2;
	host_untagged(&f->h, IW_OP_SEND, "abcdefgh", 8);
}

static void a_too_long(struct hfix *f)
{
	uint8_t d[65];
	fill(d, sizeof(d), 3);
	host_untagged(&f->h, IW_OP_SEND, d, sizeof(d));
}

/* A Send whose MO lies past the 64-octet receive: invalid MO, not too long. */
static void a_mo_beyond(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[4];
	fill(d, sizeof(d), 5);
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 100, true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
}

/* Two segments, the second runs past the 64-octet receive. */
static void a_too_long_seg(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[40];
	fill(d, sizeof(d), 4);
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 0, false);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
	hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 40, true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
	ck_assert(memcmp(f->rbuf->p, d, 40) == 0);
	ck_assert(memcmp(f->rbuf->p + 40, (uint8_t[24]){0}, 24) == 0);
}

/* A Send whose second segment says Send with SE: another message inside
 * the one being received, which is at fault. */
static void a_send_op_changes(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[20];
	fill(d, sizeof(d), 6);
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 0, false);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
	hl = hb_untagged(hdr, IW_OP_SEND_SE, 0, 1, 20, true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
}

static void a_ddp_version_tagged(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[8] = {0};
	size_t hl = hb_tagged(hdr, IW_OP_WRITE, f->mr_rw->mr->rkey, (uintptr_t)f->mr_rw->p, true);
	hdr[0] = (uint8_t)((hdr[0] & ~IW_DDP_DV) | 2);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
}

static void a_ddp_version_untagged(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 0, true);
	hdr[0] &= (uint8_t)~IW_DDP_DV;
	host_fpdu(&f->h, hdr, hl, "abc", 3);
}

static void a_rdmap_version(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 0, true);
	hdr[1] = (uint8_t)((2u << 6) | IW_OP_SEND);
	host_fpdu(&f->h, hdr, hl, "abc", 3);
}

static void a_opcode_unknown(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, 0xC, 0, 1, 0, true);
	host_fpdu(&f->h, hdr, hl, "abc", 3);
}

/* A tagged opcode in an untagged segment. */
static void a_opcode_mismatch(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_WRITE, 0, 1, 0, true);
	host_fpdu(&f->h, hdr, hl, "abc", 3);
}

static void a_opcode_7306(struct hfix *f)
{
	uint8_t imm[IW_RDMAP_IMM_LEN] = {1, 2, 3, 4};
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_IMM, 0, 1, 0, true);
	memcpy(hdr + hl, imm, sizeof(imm));
	host_fpdu(&f->h, hdr, hl + sizeof(imm), NULL, 0);
}

static void a_bad_qn(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 1, 1, 0, true);
	host_fpdu(&f->h, hdr, hl, "abc", 3);
}

static void a_unexpected_read_resp(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[8] = {0};
	size_t hl = hb_tagged(hdr, IW_OP_READ_RESP, f->sink->mr->rkey, (uintptr_t)f->sink->p, true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
}

/* A Read Response naming an STag other than the Read's sink. */
static void a_read_resp_stag(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[8] = {0};
	size_t hl = hb_tagged(hdr, IW_OP_READ_RESP, f->mr_rw->mr->rkey, (uintptr_t)f->mr_rw->p,
			      true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
}

/* A Read Response running past the Read's 32-octet sink (its MR is 64). */
static void a_read_resp_bounds(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[40] = {0};
	size_t hl = hb_tagged(hdr, IW_OP_READ_RESP, f->sink->mr->rkey, (uintptr_t)f->sink->p,
			      true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
	ck_assert(memcmp(f->sink->p, (uint8_t[64]){0}, 64) == 0);
}

static void a_crc(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, f->h.msn[0]++, 0, true);
	host_build(&f->h, hdr, hl, "payload!", 8);
	f->h.wire[f->h.wire_len - 1] ^= 0x01; /* last CRC octet */
	host_feed(&f->h, f->h.wire, f->h.wire_len);
}

static void a_crc_payload(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[300];
	fill(d, sizeof(d), 9);
	/* A Write whose payload is corrupted on the way: it is placed before
	 * the CRC is known (as siw does), inside the MR, then refused. */
	size_t hl = hb_tagged(hdr, IW_OP_WRITE, f->mr_rw->mr->rkey, (uintptr_t)f->mr_rw->p, true);
	host_build(&f->h, hdr, hl, d, 60);
	f->h.wire[30] ^= 0x80;
	host_feed(&f->h, f->h.wire, f->h.wire_len);
}

/* The Read Request's source is checked (and referenced) at its header;
 * the CRC then fails: the reference must not leak (the MR deregisters). */
static void a_crc_read_req(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_READ_REQ, IW_QN_READ_REQ, f->h.msn[1]++, 0, true);
	struct iw_read_req r = {.sink_stag = 0x4242, .read_size = 8,
				.src_stag = f->mr_rd->mr->rkey, .src_to = (uintptr_t)f->mr_rd->p};
	hl += (size_t)iw_rdmap_read_req_build(hdr + hl, sizeof(hdr) - hl, &r);
	host_build(&f->h, hdr, hl, NULL, 0);
	f->h.wire[f->h.wire_len - 2] ^= 0x10;
	host_feed(&f->h, f->h.wire, f->h.wire_len);
}

static void a_marker(struct hfix *f)
{
	struct buf *big = buf_new(&f->w, f->w.pd, 1024, ACC_RW);
	uint8_t hdr[IW_FPDU_HDR_MAX], d[600];
	fill(d, sizeof(d), 6);
	size_t hl = hb_tagged(hdr, IW_OP_WRITE, big->mr->rkey, (uintptr_t)big->p, true);
	host_fpdu(&f->h, hdr, hl, d, 8); /* a good FPDU first (marker at 0) */
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_RTS);
	/* The next marker, at stream offset 512, falls inside this one. */
	uint32_t start = f->h.tx.stream_off;
	ck_assert_uint_lt(start, 512);
	host_build(&f->h, hdr, hl, d, sizeof(d));
	size_t at = 512 - start;
	ck_assert_uint_lt(at + 3, f->h.wire_len);
	f->h.wire[at + 3] ^= 0x01; /* its FPDUPTR */
	host_feed(&f->h, f->h.wire, f->h.wire_len);
}

/* ULPDU_Length 10: shorter than any DDP header. */
static void a_too_short(struct hfix *f)
{
	/* With markers, the stream starts with one pointing at offset 0. */
	uint8_t raw[20] = {0};
	size_t at = f->h.tx.markers ? IW_MPA_MARKER_LEN : 0;
	fill(raw + at + 2, sizeof(raw) - at - 2, 1);
	raw[at + 1] = 10;
	host_feed(&f->h, raw, sizeof(raw));
}

static void a_read_req_not_last(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_READ_REQ, IW_QN_READ_REQ, f->h.msn[1]++, 0, false);
	struct iw_read_req r = {.sink_stag = 0x4242, .read_size = 8,
				.src_stag = f->mr_rd->mr->rkey, .src_to = (uintptr_t)f->mr_rd->p};
	hl += (size_t)iw_rdmap_read_req_build(hdr + hl, sizeof(hdr) - hl, &r);
	host_fpdu(&f->h, hdr, hl, NULL, 0);
}

/* The QP has a full transmit queue it has not written (a 1 MiB Send the
 * host does not read) when the violation comes: the TERMINATE still
 * fits behind it. */
static void a_term_behind_full_txq(struct hfix *f)
{
	struct buf *big = buf_new(&f->w, f->w.pd, 1 << 20, 0);
	ck_assert_int_eq(post_send_buf(f->qp, 203, IW_SEND_SIGNALED, big, 1 << 20), 0);
	struct iovec iov[8];
	ck_assert_int_gt(iw_qp_tx_iov(f->qp, iov, 8), 0);
	ck_assert_ptr_nonnull(f->qp->txq);
	/* As full as it gets: iovecs, or with markers the stage (one more
	 * 64 KiB FPDU would not fit). */
	const struct iw_txq *q = f->qp->txq;
	ck_assert(q->cnt > IW_TXQ_IOV - 64 || (q->stage && q->stage_used > q->stage_cap - 65536));
	uint8_t d[16] = {0};
	host_write(&f->h, 0x00ABCD00u, 0x1000, d, sizeof(d));
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_ERR);
	/* Drained in full: the batch, then the TERMINATE; the rest of the
	 * Send is never segmented. */
	host_drain(&f->h);
	struct end *e = &f->w.e[0];
	expect_wc(e->scq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(e->scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(e->scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(e->scq, 203, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	f->reads = false;
	ck_assert_uint_gt(f->h.nseg, 10);
	ck_assert_uint_eq(iw_ddp_opcode(&f->h.seg[f->h.nseg - 2].ddp), IW_OP_SEND);
	ck_assert(!iw_ddp_last(&f->h.seg[f->h.nseg - 2].ddp));
}

static void a_no_rtr(struct hfix *f)
{
	host_untagged(&f->h, IW_OP_SEND, "early", 5);
}

static void a_atomic_access(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_ATOMIC_REQ, IW_QN_READ_REQ, f->h.msn[1]++, 0, true);
	struct iw_atomic_req a = {.atomic_op = IW_ATOMIC_FETCH_ADD, .req_id = 1,
				  .stag = f->mr_rd->mr->rkey, .to = (uintptr_t)f->mr_rd->p,
				  .add_swap = 1};
	hl += (size_t)iw_rdmap_atomic_req_build(hdr + hl, sizeof(hdr) - hl, &a);
	host_fpdu(&f->h, hdr, hl, NULL, 0);
	uint8_t want[64];
	fill(want, 64, 1);
	ck_assert(memcmp(f->mr_rd->p, want, 64) == 0);
}

/* An aligned TO that a fast-reg MR maps to a misaligned host address: the
 * 64-bit atomic must be refused, not run unaligned. */
static void a_atomic_host_misaligned(struct hfix *f)
{
	struct iw_mr *fr = iw_alloc_mr(f->w.pd, 1);
	struct buf *mem = buf_new(&f->w, NULL, 64, 0);
	uint32_t key = iw_inc_rkey(fr->rkey);
	reg_mr_wr(f->qp, 210, fr, key, ACC_RW | IW_ACCESS_REMOTE_ATOMIC, 0x10000, mem->p + 1, 16);
	host_drain(&f->h);
	uint8_t before[64];
	memcpy(before, mem->p, sizeof(before));
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_ATOMIC_REQ, IW_QN_READ_REQ, f->h.msn[1]++, 0, true);
	struct iw_atomic_req a = {.atomic_op = IW_ATOMIC_FETCH_ADD, .req_id = 1, .stag = key,
				  .to = 0x10000, .add_swap = 1};
	hl += (size_t)iw_rdmap_atomic_req_build(hdr + hl, sizeof(hdr) - hl, &a);
	host_fpdu(&f->h, hdr, hl, NULL, 0);
	ck_assert(memcmp(mem->p, before, sizeof(before)) == 0);
	host_drain(&f->h);
	expect_wc(f->w.e[0].scq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(f->w.e[0].scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(f->w.e[0].scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(f->w.e[0].scq, 210, IW_WC_SUCCESS, IW_WC_REG_MR);
	f->reads = false; /* checked here */
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
}

/* Receive hold (HF_HOLD): the three posted receives taken by three Sends. */
static void hold_consume3(struct hfix *f)
{
	for (int i = 0; i < 3; i++)
		host_untagged(&f->h, IW_OP_SEND, "abcdefgh", 8);
	for (int i = 0; i < 3; i++)
		expect_wc(f->w.e[0].rcq, 100 + (uint64_t)i, IW_WC_SUCCESS, IW_WC_RECV);
	f->nrecv_done = 3;
}

/* HF_HOLD_SMALL holds two messages: the third is one too many. */
static void a_hold_num_limit(struct hfix *f)
{
	hold_consume3(f);
	host_untagged(&f->h, IW_OP_SEND, "held-1", 6);
	host_untagged(&f->h, IW_OP_SEND, "held-2", 6);
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_RTS);
	ck_assert_uint_eq(f->qp->hold.num, 2);
	host_untagged(&f->h, IW_OP_SEND, "held-3", 6);
}

/* HF_HOLD_SMALL holds 100 octets: 60 + 41 is too many. */
static void a_hold_byte_limit(struct hfix *f)
{
	uint8_t d[60];
	fill(d, sizeof(d), 9);
	hold_consume3(f);
	host_untagged(&f->h, IW_OP_SEND, d, 60);
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_RTS);
	host_untagged(&f->h, IW_OP_SEND, d, 41);
}

/* A held message longer than the receive posted for it: "message too
 * long", found at the post, and that receive is at fault. */
static void a_hold_too_long(struct hfix *f)
{
	uint8_t d[65];
	fill(d, sizeof(d), 3);
	hold_consume3(f);
	host_untagged(&f->h, IW_OP_SEND, d, sizeof(d));
	ck_assert_int_eq(qp_state(f->qp), IW_QPS_RTS);
	f->nrecv = 4;
	post_recv_buf(f->qp, 103, f->rbuf, 0, 64);
	ck_assert(memcmp(f->rbuf->p, "abcdefgh", 8) == 0); /* nothing placed */
}

/* A held message whose second segment says Send with SE. */
static void a_hold_op_changes(struct hfix *f)
{
	uint8_t hdr[IW_FPDU_HDR_MAX], d[20];
	fill(d, sizeof(d), 6);
	hold_consume3(f);
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 4, 0, false);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
	hl = hb_untagged(hdr, IW_OP_SEND_SE, 0, 4, 20, true);
	host_fpdu(&f->h, hdr, hl, d, sizeof(d));
}

/* The context's allocator fails its next (fail_left == 1) or second
 * allocation, then allocates again. */
static int fail_left;

static bool fail_now(void)
{
	return fail_left > 0 && --fail_left == 0;
}

static void *fail_malloc(void *u, size_t n)
{
	(void)u;
	return fail_now() ? NULL : malloc(n);
}

static void *fail_calloc(void *u, size_t k, size_t n)
{
	(void)u;
	return fail_now() ? NULL : calloc(k, n);
}

static void *fail_realloc(void *u, void *p, size_t n)
{
	(void)u;
	return fail_now() ? NULL : realloc(p, n);
}

static void fail_free(void *u, void *p)
{
	(void)u;
	free(p);
}

static const struct iw_alloc_ops fail_ops = {fail_malloc, fail_calloc, fail_realloc, fail_free,
					     NULL};

/* Without memory for the message (its record, then its payload): the "no
 * buffer" TERMINATE, as without hold. */
static void hold_no_memory(struct hfix *f, int nth)
{
	hold_consume3(f);
	const struct iw_alloc_ops *keep = f->w.ctx->alloc;
	f->w.ctx->alloc = &fail_ops;
	fail_left = nth;
	host_untagged(&f->h, IW_OP_SEND, "no-memory", 9);
	ck_assert_int_eq(fail_left, 0);
	f->w.ctx->alloc = keep;
}

static void a_hold_no_memory_rec(struct hfix *f)
{
	hold_no_memory(f, 1);
}

static void a_hold_no_memory_data(struct hfix *f)
{
	hold_no_memory(f, 2);
}

#define HF_ALL 0
static const struct hcase hcases[] = {
	{"write invalid STag", HF_ALL, a_write_inv_stag, IW_TERM_DDP_T_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"write stale key", HF_ALL, a_write_stale_key, IW_TERM_DDP_T_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"write bounds", HF_ALL, a_write_bounds, IW_TERM_DDP_T_BASE_BOUNDS, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP, 0, 0},
	{"write below base", HF_ALL, a_write_below, IW_TERM_DDP_T_BASE_BOUNDS,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"write TO wrap", HF_ALL, a_write_wrap, IW_TERM_DDP_T_TO_WRAP, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP, 0, 0},
	{"write access", HF_ALL, a_write_access, IW_TERM_DDP_T_INV_STAG, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP, 0, 0},
	{"write PD", HF_ALL, a_write_pd, IW_TERM_DDP_T_STAG_STREAM, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP, 0, 0},
	{"write invalidated", HF_ALL, a_write_invalidated, IW_TERM_DDP_T_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"write remotely invalidated", HF_ALL, a_write_remote_invalidated, IW_TERM_DDP_T_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"send-inv unknown STag", HF_ALL, a_send_inv_unknown, IW_TERM_RDMAP_OP_NOINV,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, IW_WC_REM_INV_REQ_ERR, 0},
	{"send-inv reg_mr STag", HF_ALL, a_send_inv_regmr, IW_TERM_RDMAP_PROT_NOINV,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, IW_WC_REM_INV_REQ_ERR, 0},
	{"read invalid STag", HF_ALL, a_read_inv_stag, IW_TERM_RDMAP_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP_RDMA, 0, 0},
	{"read bounds", HF_ALL, a_read_bounds, IW_TERM_RDMAP_BASE_BOUNDS, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP_RDMA, 0, 0},
	{"read access", HF_ALL, a_read_access, IW_TERM_RDMAP_ACCESS, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP_RDMA, 0, 0},
	{"read PD", HF_ALL, a_read_pd, IW_TERM_RDMAP_STAG_STREAM, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP_RDMA, 0, 0},
	{"IRD exceeded", HF_ALL, a_ird, IW_TERM_DDP_U_MSN_RANGE, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP_RDMA, 0, 0},
	{"no receive posted", HF_ALL, a_no_recv, IW_TERM_DDP_U_NO_BUF, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, 0, 0},
	{"hold: one message too many", HF_HOLD | HF_HOLD_SMALL, a_hold_num_limit,
	 IW_TERM_DDP_U_NO_BUF, IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"hold: octets beyond the limit", HF_HOLD | HF_HOLD_SMALL, a_hold_byte_limit,
	 IW_TERM_DDP_U_NO_BUF, IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"hold: longer than its receive", HF_HOLD, a_hold_too_long, IW_TERM_DDP_U_TOO_LONG,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, IW_WC_LOC_LEN_ERR, 0},
	{"hold: opcode changes mid-message", HF_HOLD, a_hold_op_changes, IW_TERM_RDMAP_OPCODE,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"hold: no memory for the record", HF_HOLD, a_hold_no_memory_rec, IW_TERM_DDP_U_NO_BUF,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"hold: no memory for the payload", HF_HOLD, a_hold_no_memory_data,
	 IW_TERM_DDP_U_NO_BUF, IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"MSN out of range", HF_ALL, a_msn_range, IW_TERM_DDP_U_MSN_RANGE, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, 0, 0},
	{"message too long", HF_ALL, a_too_long, IW_TERM_DDP_U_TOO_LONG, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, IW_WC_LOC_LEN_ERR, 0},
	{"MO past the receive", HF_ALL, a_mo_beyond, IW_TERM_DDP_U_INV_MO, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, IW_WC_LOC_LEN_ERR, 0},
	{"message too long, 2nd segment", HF_ALL, a_too_long_seg, IW_TERM_DDP_U_TOO_LONG,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, IW_WC_LOC_LEN_ERR, 0},
	{"Send opcode changes mid-message", HF_ALL, a_send_op_changes, IW_TERM_RDMAP_OPCODE,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, IW_WC_LOC_QP_OP_ERR, 0},
	{"DDP version tagged", HF_ALL, a_ddp_version_tagged, IW_TERM_DDP_T_VERSION,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"DDP version untagged", HF_ALL, a_ddp_version_untagged, IW_TERM_DDP_U_VERSION,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"RDMAP version", HF_ALL, a_rdmap_version, IW_TERM_RDMAP_VERSION, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, 0, 0},
	{"unknown opcode", HF_ALL, a_opcode_unknown, IW_TERM_RDMAP_OPCODE, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, 0, 0},
	{"tagged opcode untagged", HF_ALL, a_opcode_mismatch, IW_TERM_RDMAP_OPCODE,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"RFC 7306 opcode", HF_ALL, a_opcode_7306, IW_TERM_RDMAP_OPCODE, IW_EVENT_QP_REQ_ERR,
	 COPY_DDP, 0, 0},
	{"QN invalid", HF_ALL, a_bad_qn, IW_TERM_DDP_U_INV_QN, IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"unexpected Read Response", HF_NO_READS, a_unexpected_read_resp, IW_TERM_RDMAP_OPCODE,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"Read Response STag", HF_ALL, a_read_resp_stag, IW_TERM_DDP_T_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, IW_WC_LOC_ACCESS_ERR},
	{"Read Response bounds", HF_ALL, a_read_resp_bounds, IW_TERM_DDP_T_BASE_BOUNDS,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, IW_WC_LOC_ACCESS_ERR},
	{"Read Response bounds, READ_SINK sink", HF_SINK_LOCAL, a_read_resp_bounds,
	 IW_TERM_DDP_T_BASE_BOUNDS, IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, IW_WC_LOC_ACCESS_ERR},
	{"Write into a READ_SINK sink", HF_SINK_LOCAL, a_write_read_sink, IW_TERM_DDP_T_INV_STAG,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"CRC error", HF_CRC, a_crc, IW_TERM_LLP_CRC, IW_EVENT_QP_FATAL, COPY_NONE, 0, 0},
	{"CRC error in placed payload", HF_CRC, a_crc_payload, IW_TERM_LLP_CRC, IW_EVENT_QP_FATAL,
	 COPY_NONE, 0, 0},
	{"CRC error on a Read Request", HF_CRC, a_crc_read_req, IW_TERM_LLP_CRC, IW_EVENT_QP_FATAL,
	 COPY_NONE, 0, 0},
	{"bad marker", HF_MK_IN, a_marker, IW_TERM_LLP_MARKER, IW_EVENT_QP_FATAL, COPY_NONE, 0, 0},
	{"FPDU too short", HF_ALL, a_too_short, IW_TERM_DDP_CATASTROPHIC, IW_EVENT_QP_REQ_ERR,
	 COPY_NONE, 0, 0},
	/* refused at its DDP header, before the RDMAP header is gathered */
	{"Read Request without L", HF_ALL, a_read_req_not_last, IW_TERM_RDMAP_OPCODE,
	 IW_EVENT_QP_REQ_ERR, COPY_DDP, 0, 0},
	{"TERMINATE behind a full transmit queue", HF_ALL, a_term_behind_full_txq,
	 IW_TERM_DDP_T_INV_STAG, IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
	{"no RTR", HF_RTR, a_no_rtr, IW_TERM_LLP_NO_RTR, IW_EVENT_QP_FATAL, COPY_NONE, 0, 0},
	{"atomic access", HF_7306, a_atomic_access, IW_TERM_RDMAP_ACCESS, IW_EVENT_QP_ACCESS_ERR,
	 COPY_DDP, 0, 0},
	{"atomic host misaligned", HF_7306, a_atomic_host_misaligned, IW_TERM_RDMAP_BASE_BOUNDS,
	 IW_EVENT_QP_ACCESS_ERR, COPY_DDP, 0, 0},
};
#define NUM_HCASES ((int)(sizeof(hcases) / sizeof(hcases[0])))
#define HVARIANTS 4

/* Each case four times: CRC, markers both ways and the feeding vary. */
START_TEST(test_hostile)
{
	const struct hcase *c = &hcases[_i / HVARIANTS];
	int v = _i % HVARIANTS;
	unsigned flags = c->flags;
	if (v & 1)
		flags |= HF_CRC;
	if (v & 2)
		flags |= HF_MK_IN | HF_MK_OUT;
	static const enum mp_mode modes[HVARIANTS] = {MP_WHOLE, MP_BYTES, MP_RANDOM,
							MP_DIRECT};
	struct hfix f;
	hfix_init(&f, flags, modes[v]);
	c->act(&f);
	f.recv_fault = c->recv_fault;
	f.read_fault = c->read_fault;
	hfix_expect_term(&f, c->term, c->ev, c->copy);
	world_free(&f.w);
}
END_TEST

/* Invalidation is final (issue 15): a LOCAL_INV posted while a peer's RDMA
 * Write into its STag is half received does not complete, and lets
 * nothing behind it start, until the Write's last octet has landed; the
 * next Write to the STag is refused (DDP invalid STag) and places
 * nothing. Every feeding mode, CRC on. */
START_TEST(test_local_inv_waits_for_placement)
{
	static const enum mp_mode modes[] = {MP_WHOLE, MP_BYTES, MP_RANDOM, MP_DIRECT};
	struct hfix f;
	hfix_init(&f, HF_CRC | HF_NO_READS, modes[_i]);
	struct iw_mr *fr = iw_alloc_mr(f.w.pd, 1);
	struct buf *mem = buf_new(&f.w, NULL, 256, 0);
	uint32_t key = iw_inc_rkey(fr->rkey);
	struct end *e = &f.w.e[0];
	reg_mr_wr(f.qp, 210, fr, key, ACC_RW, 0x40000, mem->p, 256);
	host_drain(&f.h);
	expect_wc(e->scq, 210, IW_WC_SUCCESS, IW_WC_REG_MR);
	uint8_t d[200];
	fill(d, sizeof(d), 9);
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_tagged(hdr, IW_OP_WRITE, key, 0x40000, true);
	host_build(&f.h, hdr, hl, d, sizeof(d));
	size_t part = hl + 2 + 50; /* MPA length, DDP header, 50 octets */
	host_feed(&f.h, f.h.wire, part);
	local_inv_wr(f.qp, 211, key);
	ck_assert_int_eq(post_send_buf(f.qp, 212, IW_SEND_SIGNALED, f.msg, 8), 0);
	unsigned nseg = f.h.nseg;
	host_drain(&f.h);
	expect_empty(e->scq);              /* the LOCAL_INV waits ... */
	ck_assert_uint_eq(f.h.nseg, nseg); /* ... and the Send behind it too */
	host_feed(&f.h, f.h.wire + part, f.h.wire_len - part);
	ck_assert(memcmp(mem->p, d, sizeof(d)) == 0);
	host_drain(&f.h);
	expect_wc(e->scq, 211, IW_WC_SUCCESS, IW_WC_LOCAL_INV);
	expect_wc(e->scq, 212, IW_WC_SUCCESS, IW_WC_SEND);
	ck_assert_uint_eq(f.h.nseg, nseg + 1);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_RTS);
	uint8_t z[16] = {0};
	host_write(&f.h, key, 0x40000, z, sizeof(z));
	ck_assert(memcmp(mem->p, d, sizeof(d)) == 0); /* nothing after the completion */
	hfix_expect_term(&f, IW_TERM_DDP_T_INV_STAG, IW_EVENT_QP_ACCESS_ERR, COPY_DDP);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	world_free(&f.w);
}
END_TEST

static void bind_mw_wr(struct iw_qp *qp, uint64_t id, struct iw_mw *mw, uint32_t key,
		       struct iw_mr *mr, int access, void *addr, uint64_t len)
{
	struct iw_send_wr wr = wr_of(id, IW_WR_BIND_MW, IW_SEND_SIGNALED, NULL, 0);
	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.rkey = key;
	wr.wr.bind_mw.bind_info.mr = mr;
	wr.wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.wr.bind_mw.bind_info.length = len;
	wr.wr.bind_mw.bind_info.mw_access_flags = (unsigned)access;
	ck_assert_int_eq(post_wr(qp, &wr), 0);
}

/* A type 2 memory window bound through the send queue: the peer writes
 * through it; then _i 0: the peer's Send with Invalidate revokes it, 1:
 * LOCAL_INV does, and the next Write is TERMINATEd DDP invalid STag
 * (RFC 5041 section 7.2: the STag is no longer valid); 2: a Write past its
 * end is TERMINATEd DDP base or bounds violation. Nothing lands outside. */
START_TEST(test_mw_type2)
{
	struct hfix f;
	hfix_init(&f, HF_CRC | HF_NO_READS, MP_WHOLE);
	struct end *e = &f.w.e[0];
	struct buf *disk =
		buf_new(&f.w, f.w.pd, 256, ACC_RW | IW_ACCESS_REMOTE_READ | IW_ACCESS_MW_BIND);
	struct iw_mw *mw = iw_alloc_mw(f.w.pd, IW_MW_TYPE_2);
	ck_assert_ptr_nonnull(mw);
	uint32_t key = iw_inc_rkey(mw->rkey);
	bind_mw_wr(f.qp, 220, mw, key, disk->mr, IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ,
		   disk->p + 64, 64);
	host_drain(&f.h);
	expect_wc(e->scq, 220, IW_WC_SUCCESS, IW_WC_BIND_MW);
	ck_assert_uint_eq(mw->rkey, key);
	uint8_t d[64], want[256] = {0};
	fill(d, sizeof(d), 3);
	host_write(&f.h, key, (uintptr_t)disk->p + 64, d, sizeof(d));
	memcpy(want + 64, d, 64);
	ck_assert(memcmp(disk->p, want, 256) == 0);
	uint16_t term = IW_TERM_DDP_T_INV_STAG;
	if (_i == 0) {
		uint8_t hdr[IW_FPDU_HDR_MAX];
		struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(false, true),
				       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND_INV)};
		h.msn = f.h.msn[0]++;
		h.inv_stag = key;
		size_t hl = (size_t)iw_ddp_hdr_build(hdr, sizeof(hdr), &h);
		host_fpdu(&f.h, hdr, hl, "bye", 3);
		struct iw_wc wc = expect_wc(e->rcq, 100, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert_uint_eq(wc.wc_flags, IW_WC_WITH_INV);
		ck_assert_uint_eq(wc.invalidated_rkey, key);
		f.nrecv_done = 1;
	} else if (_i == 1) {
		local_inv_wr(f.qp, 221, key);
		host_drain(&f.h);
		expect_wc(e->scq, 221, IW_WC_SUCCESS, IW_WC_LOCAL_INV);
	} else {
		term = IW_TERM_DDP_T_BASE_BOUNDS;
	}
	uint8_t z[16] = {0};
	host_write(&f.h, key, (uintptr_t)disk->p + (_i == 2 ? 120 : 64), z, sizeof(z));
	ck_assert(memcmp(disk->p, want, 256) == 0);
	hfix_expect_term(&f, term, IW_EVENT_QP_ACCESS_ERR, COPY_DDP);
	ck_assert_int_eq(iw_dealloc_mw(mw), 0);
	world_free(&f.w);
}
END_TEST

/* A type 2 window as an RDMA Read's sink (how iwarp-nvmet places a host's
 * write data straight into its namespace): the region grants no remote
 * right, the window bound on the Read's own QP grants REMOTE_WRITE over
 * exactly the sink. Posting is refused while the window is unbound, bound
 * on another QP or invalidated, and for a sink outside it; the Read lands
 * in the window and nowhere else. */
START_TEST(test_mw_read_sink)
{
	struct cfg g = {.crc = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 256, ACC_RD);
	struct buf *disk = buf_new(&w, w.pd, 256, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_MW_BIND);
	struct iw_mw *mw = iw_alloc_mw(w.pd, IW_MW_TYPE_2);
	ck_assert_ptr_nonnull(mw);
	fill(src->p, 256, 11);
	memset(disk->p, 0, 256);
	struct iw_sge sg = {.addr = (uintptr_t)disk->p + 64, .length = 64, .lkey = disk->mr->lkey};
	const void *from = src->p;
	uint32_t rk = src->mr->rkey;
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), EACCES);
	sg.lkey = mw->rkey;
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), EINVAL);
	uint32_t key = iw_inc_rkey(mw->rkey);
	bind_mw_wr(B->qp, 2, mw, key, disk->mr, IW_ACCESS_REMOTE_WRITE, disk->p + 64, 64);
	pump(&w);
	expect_wc(B->scq, 2, IW_WC_SUCCESS, IW_WC_BIND_MW);
	sg.lkey = key; /* bound, but for B's stream */
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), EINVAL);
	local_inv_wr(B->qp, 3, key);
	pump(&w);
	expect_wc(B->scq, 3, IW_WC_SUCCESS, IW_WC_LOCAL_INV);
	key = iw_inc_rkey(key);
	bind_mw_wr(A->qp, 4, mw, key, disk->mr, IW_ACCESS_REMOTE_WRITE, disk->p + 64, 64);
	pump(&w);
	expect_wc(A->scq, 4, IW_WC_SUCCESS, IW_WC_BIND_MW);
	sg.lkey = key;
	sg.addr = (uintptr_t)disk->p + 32;
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), EFAULT);
	sg.addr = (uintptr_t)disk->p + 64;
	sg.length = 65;
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), EFAULT);
	sg.length = 64;
	ck_assert_int_eq(post_rdma(A->qp, 5, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), 0);
	ck_assert_int_eq(iw_dealloc_mw(mw), EBUSY); /* the Read holds it */
	pump(&w);
	expect_wc(A->scq, 5, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	uint8_t want[256] = {0};
	memcpy(want + 64, src->p, 64);
	ck_assert(memcmp(disk->p, want, 256) == 0);
	local_inv_wr(A->qp, 6, key);
	pump(&w);
	expect_wc(A->scq, 6, IW_WC_SUCCESS, IW_WC_LOCAL_INV);
	ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, from, rk), EINVAL);
	ck_assert_int_eq(iw_dealloc_mw(mw), 0);
	world_free(&w);
}
END_TEST

/* iw_bind_mw of a type 1 window: posts, signals IW_WC_BIND_MW with id,
 * and returns the rkey the library picked (written to mw->rkey). */
static uint32_t bind_mw1(struct iw_qp *qp, uint64_t id, struct iw_mw *mw, struct iw_mr *mr,
			 int access, void *addr, uint64_t len)
{
	struct iw_mw_bind b = {.wr_id = id, .send_flags = IW_SEND_SIGNALED};
	uint32_t old = mw->rkey;

	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = (unsigned)access;
	ck_assert_int_eq(iw_bind_mw(qp, mw, &b), 0);
	ck_assert_uint_ne(mw->rkey, old);                       /* a new key ... */
	ck_assert_uint_eq(mw->rkey >> 8, old >> 8);             /* ... same index */
	return mw->rkey;
}

static void send_inv(struct hfix *f, uint32_t stag)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(false, true),
			       .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND_INV)};
	h.msn = f->h.msn[0]++;
	h.inv_stag = stag;
	size_t hl = (size_t)iw_ddp_hdr_build(hdr, sizeof(hdr), &h);
	host_fpdu(&f->h, hdr, hl, "bye", 3);
}

/* A type 1 memory window bound with iw_bind_mw: the peer writes and reads
 * through it; then _i 0: rebinding gives a new rkey, the old one is
 * refused (TERMINATE DDP invalid STag); 1: unbinding (length 0, no MR)
 * makes it refused; 2: the peer's Send with Invalidate of it is refused
 * with RDMAP Remote Protection "STag cannot be invalidated" and it stays
 * bound; 3: LOCAL_INV of it completes in error (and it stays bound); 4: a
 * bind past the MR's end and 5: onto an MR without IW_ACCESS_MW_BIND
 * complete IW_WC_MW_BIND_ERR. Freeing it while bound releases the MR. */
START_TEST(test_mw_type1)
{
	struct hfix f;
	hfix_init(&f, HF_CRC | HF_NO_READS, MP_WHOLE);
	struct end *e = &f.w.e[0];
	const int rw = IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct buf *disk = buf_new(&f.w, f.w.pd, 256, ACC_RW | IW_ACCESS_REMOTE_READ |
							 IW_ACCESS_MW_BIND);
	struct iw_mw *mw = iw_alloc_mw(f.w.pd, IW_MW_TYPE_1);
	ck_assert_ptr_nonnull(mw);
	ck_assert_int_eq(mw->type, IW_MW_TYPE_1);
	/* Type 1 windows are bound by iw_bind_mw only, type 2 by a WR only. */
	struct iw_send_wr wr = wr_of(1, IW_WR_BIND_MW, IW_SEND_SIGNALED, NULL, 0);
	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.rkey = iw_inc_rkey(mw->rkey);
	wr.wr.bind_mw.bind_info.mr = disk->mr;
	wr.wr.bind_mw.bind_info.length = 8;
	wr.wr.bind_mw.bind_info.addr = (uintptr_t)disk->p;
	wr.wr.bind_mw.bind_info.mw_access_flags = IW_ACCESS_REMOTE_READ;
	ck_assert_int_eq(post_wr(f.qp, &wr), EINVAL);
	wr.send_flags |= 1u << 31;
	ck_assert_int_eq(post_wr(f.qp, &wr), EINVAL);
	struct iw_mw *mw2 = iw_alloc_mw(f.w.pd, IW_MW_TYPE_2);
	struct iw_mw_bind b = {.bind_info = {.mr = disk->mr, .addr = (uintptr_t)disk->p,
					     .length = 8, .mw_access_flags = IW_ACCESS_REMOTE_READ}};
	uint32_t k2 = mw2->rkey;
	ck_assert_int_eq(iw_bind_mw(f.qp, mw2, &b), EINVAL);
	ck_assert_uint_eq(mw2->rkey, k2);
	b.bind_info.mr = NULL;
	ck_assert_int_eq(iw_bind_mw(f.qp, mw, &b), EINVAL); /* a length needs an MR */
	ck_assert_int_eq(iw_dealloc_mw(mw2), 0);
	expect_empty(e->scq);

	if (_i >= 4) {
		struct buf *nobind = buf_new(&f.w, f.w.pd, 256, ACC_RW | IW_ACCESS_REMOTE_READ);
		struct iw_mr *target = _i == 4 ? disk->mr : nobind->mr;
		uint8_t *at = _i == 4 ? disk->p + 200 : nobind->p;
		bind_mw1(f.qp, 229, mw, target, rw, at, 64);
		host_drain(&f.h);
		expect_wc(e->scq, 229, IW_WC_MW_BIND_ERR, IW_WC_BIND_MW);
		hfix_expect_term(&f, IW_TERM_RDMAP_CATASTROPHIC, IW_EVENT_QP_FATAL, COPY_NONE);
		ck_assert_int_eq(iw_dealloc_mw(mw), 0);
		world_free(&f.w);
		return;
	}
	uint32_t key = bind_mw1(f.qp, 230, mw, disk->mr, rw, disk->p + 64, 64);
	host_drain(&f.h);
	struct iw_wc wc = expect_wc(e->scq, 230, IW_WC_SUCCESS, IW_WC_BIND_MW);
	ck_assert_uint_eq(wc.qp_num, iw_qp_num(f.qp));
	ck_assert_int_eq(iw_dereg_mr(disk->mr), EBUSY); /* bound to it */
	uint8_t d[64], want[256] = {0};
	fill(d, sizeof(d), 3);
	host_write(&f.h, key, (uintptr_t)disk->p + 64, d, sizeof(d));
	memcpy(want + 64, d, 64);
	ck_assert(memcmp(disk->p, want, 256) == 0);
	unsigned n0 = f.h.nseg;
	host_read_req(&f.h, key, (uintptr_t)disk->p + 80, 16);
	host_drain(&f.h);
	ck_assert_uint_eq(f.h.nseg, n0 + 1);
	ck_assert_uint_eq(iw_ddp_opcode(&f.h.seg[n0].ddp), IW_OP_READ_RESP);
	ck_assert_uint_eq(f.h.seg[n0].plen, 16);
	uint16_t term = IW_TERM_DDP_T_INV_STAG;
	enum iw_event_type evt = IW_EVENT_QP_ACCESS_ERR;
	uint32_t use = key;
	if (_i == 0) {
		uint32_t k1 = bind_mw1(f.qp, 231, mw, disk->mr, IW_ACCESS_REMOTE_WRITE, disk->p,
				       32);
		host_drain(&f.h);
		expect_wc(e->scq, 231, IW_WC_SUCCESS, IW_WC_BIND_MW);
		host_write(&f.h, k1, (uintptr_t)disk->p, d, 32);
		memcpy(want, d, 32);
		ck_assert(memcmp(disk->p, want, 256) == 0);
	} else if (_i == 1) {
		struct iw_mw_bind u = {.wr_id = 232, .send_flags = IW_SEND_SIGNALED};
		ck_assert_int_eq(iw_bind_mw(f.qp, mw, &u), 0);
		ck_assert_uint_ne(mw->rkey, key);
		host_drain(&f.h);
		expect_wc(e->scq, 232, IW_WC_SUCCESS, IW_WC_BIND_MW);
		ck_assert_uint_eq(iw_mem_refs(iw_mr_int(disk->mr)), 0); /* the MR is let go */
	} else if (_i == 2) {
		send_inv(&f, key);
		term = IW_TERM_RDMAP_PROT_NOINV;
		f.recv_fault = IW_WC_REM_INV_REQ_ERR;
	} else {
		local_inv_wr(f.qp, 233, key);
		host_drain(&f.h);
		wc = expect_wc(e->scq, 233, IW_WC_LOC_QP_OP_ERR, IW_WC_LOCAL_INV);
		term = IW_TERM_RDMAP_CATASTROPHIC;
		evt = IW_EVENT_QP_FATAL;
	}
	if (_i < 2) {
		uint8_t z[16] = {0};
		host_write(&f.h, use, (uintptr_t)disk->p + 64, z, sizeof(z));
		ck_assert(memcmp(disk->p, want, 256) == 0);
	}
	hfix_expect_term(&f, term, evt, _i == 3 ? COPY_NONE : COPY_DDP);
	/* Only the unbind unbound it: neither invalidation did. */
	ck_assert(iw_mem_is_valid(&((struct iw_mw_int *)mw)->win) == (_i != 1));
	ck_assert_int_eq(iw_dealloc_mw(mw), 0);
	ck_assert_uint_eq(iw_mem_refs(iw_mr_int(disk->mr)), 0);
	world_free(&f.w);
}
END_TEST

/* A peer's RDMA Write to an STag it guessed is counted on the QP and the
 * context, visible through the public getters (issue 16 bug 8); one to a
 * known STag out of bounds is not an STag guess. */
START_TEST(test_hostile_bad_stag_counted)
{
	struct iw_stag_stats q, c0, c1;
	struct hfix f;
	hfix_init(&f, HF_CRC, MP_WHOLE);
	ck_assert_int_eq(iw_query_stag_stats(f.w.ctx, &c0), 0);
	a_write_inv_stag(&f);
	hfix_expect_term(&f, IW_TERM_DDP_T_INV_STAG, IW_EVENT_QP_ACCESS_ERR, COPY_DDP);
	ck_assert_int_eq(iw_query_qp_stag_stats(f.qp, &q), 0);
	ck_assert_uint_eq(q.invalid_stag, 1);
	ck_assert_uint_eq(q.comp_mask, 0);
	ck_assert_int_eq(iw_query_stag_stats(f.w.ctx, &c1), 0);
	ck_assert_uint_eq(c1.invalid_stag, c0.invalid_stag + 1);
	ck_assert_int_eq(iw_query_qp_stag_stats(NULL, &q), EINVAL);
	ck_assert_int_eq(iw_query_stag_stats(f.w.ctx, NULL), EINVAL);
	world_free(&f.w);

	hfix_init(&f, HF_CRC, MP_WHOLE);
	a_write_bounds(&f);
	hfix_expect_term(&f, IW_TERM_DDP_T_BASE_BOUNDS, IW_EVENT_QP_ACCESS_ERR, COPY_DDP);
	ck_assert_int_eq(iw_query_qp_stag_stats(f.qp, &q), 0);
	ck_assert_uint_eq(q.invalid_stag, 0);
	world_free(&f.w);
}
END_TEST

/* Zero-length tagged segments are not validated (interop rule 4), and a
 * valid mix of everything leaves the QP in RTS. */
START_TEST(test_hostile_benign)
{
	struct hfix f;
	/* Odd runs: the Reads' sink has READ_SINK, no remote right. */
	hfix_init(&f, HF_CRC | (_i ? HF_MK_IN | HF_MK_OUT : 0) | ((_i & 1) ? HF_SINK_LOCAL : 0),
		  (enum mp_mode)(_i % MP_NUM_MODES));
	host_write(&f.h, 0, 0, NULL, 0);
	host_write(&f.h, 0x00ABCD00u, UINT64_MAX, NULL, 0);
	uint8_t d[40];
	fill(d, sizeof(d), 2);
	host_write(&f.h, f.mr_rw->mr->rkey, (uintptr_t)f.mr_rw->p + 24, d, sizeof(d));
	ck_assert(memcmp(f.mr_rw->p + 24, d, sizeof(d)) == 0);
	/* A Read from us: answered with the right sink STag and TO. */
	host_read_req(&f.h, f.mr_rd->mr->rkey, (uintptr_t)f.mr_rd->p + 4, 20);
	/* A zero-length Read whose sink STag is 0: never echoed as STag 0. */
	host_read_req_to(&f.h, 0, 0, 0, 0);
	unsigned n0 = f.h.nseg;
	host_drain(&f.h);
	ck_assert_uint_eq(f.h.nseg, n0 + 2);
	const struct hseg *r = &f.h.seg[n0];
	ck_assert_uint_eq(iw_ddp_opcode(&r->ddp), IW_OP_READ_RESP);
	ck_assert_uint_eq(r->ddp.stag, 0x4242);
	ck_assert_uint_eq(r->ddp.to, 0x1000);
	ck_assert_uint_eq(r->plen, 20);
	ck_assert(iw_ddp_last(&r->ddp));
	r++;
	ck_assert_uint_eq(iw_ddp_opcode(&r->ddp), IW_OP_READ_RESP);
	ck_assert_uint_eq(r->plen, 0);
	ck_assert_uint_ne(r->ddp.stag, 0);
	/* Answers to our two Reads, in two segments each. */
	for (int k = 0; k < 2; k++) {
		uint8_t hdr[IW_FPDU_HDR_MAX], p[32];
		fill(p, 32, (uint32_t)k + 20);
		size_t hl = hb_tagged(hdr, IW_OP_READ_RESP, f.sink->mr->rkey,
				      (uintptr_t)f.sink->p + (size_t)k * 32, false);
		host_fpdu(&f.h, hdr, hl, p, 10);
		hl = hb_tagged(hdr, IW_OP_READ_RESP, f.sink->mr->rkey,
			       (uintptr_t)f.sink->p + (size_t)k * 32 + 10, true);
		host_fpdu(&f.h, hdr, hl, p + 10, 22);
		ck_assert(memcmp(f.sink->p + k * 32, p, 32) == 0);
	}
	expect_wc(f.w.e[0].scq, 200, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	expect_wc(f.w.e[0].scq, 201, IW_WC_SUCCESS, IW_WC_RDMA_READ);
	expect_wc(f.w.e[0].scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	/* A Send in three segments with SE, MO out of order. */
	uint8_t hdr[IW_FPDU_HDR_MAX], m[50];
	fill(m, sizeof(m), 3);
	size_t hl = hb_untagged(hdr, IW_OP_SEND_SE, 0, 1, 20, false);
	host_fpdu(&f.h, hdr, hl, m + 20, 20);
	hl = hb_untagged(hdr, IW_OP_SEND_SE, 0, 1, 0, false);
	host_fpdu(&f.h, hdr, hl, m, 20);
	hl = hb_untagged(hdr, IW_OP_SEND_SE, 0, 1, 40, true);
	host_fpdu(&f.h, hdr, hl, m + 40, 10);
	struct iw_wc wc = expect_wc(f.w.e[0].rcq, 100, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 50);
	ck_assert_uint_eq(wc.wc_flags, IW_WC_SOLICITED);
	ck_assert(memcmp(f.rbuf->p, m, 50) == 0);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_RTS);
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(f.w.ctx, ev, 2), 0);
	host_drain(&f.h);
	ck_assert_uint_eq(f.h.nterm, 0);
	iw_qp_conn_lost(f.qp, true);
	expect_wc(f.w.e[0].rcq, 101, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_wc(f.w.e[0].rcq, 102, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	world_free(&f.w);
}
END_TEST

/* The peer's TERMINATE: ERR, QP_TERMINATE with its triple, flushes, and no
 * TERMINATE back. In siw's layout when the connection says so. */
START_TEST(test_peer_terminate)
{
	bool siw = _i & 1;
	struct hfix f;
	hfix_init(&f, (siw ? HF_SIW : 0) | ((_i & 2) ? HF_CRC : 0), (enum mp_mode)(_i % MP_NUM_MODES));
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_TERMINATE, IW_QN_TERMINATE, 1, 0, true);
	uint16_t term = IW_TERM_RDMAP_ACCESS;
	if (siw) {
		/* layer in the low nibble, etype in the high one; flags in the
		 * low bits of octet 2 (none here) */
		hdr[hl++] = (uint8_t)((IW_TERM_ETYPE(term) << 4) | IW_TERM_LAYER(term));
		hdr[hl++] = (uint8_t)IW_TERM_ECODE(term);
		hdr[hl++] = 0x01; /* siw's "M" */
		hdr[hl++] = 0;
		hdr[hl++] = 0;
		hdr[hl++] = 28;
	} else {
		struct iw_terminate t = {.term = term, .hdrct = IW_TERM_HDR_M, .ddp_seg_len = 28};
		hl += (size_t)iw_rdmap_term_build(hdr + hl, sizeof(hdr) - hl, &t);
	}
	host_fpdu(&f.h, hdr, hl, NULL, 0);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_ERR);
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(f.w.ctx, ev, 2), 1);
	ck_assert_int_eq(ev[0].event_type, IW_EVENT_QP_TERMINATE);
	ck_assert_uint_eq(ev[0].term, term);
	ck_assert(ev[0].term_from_peer);
	host_drain(&f.h);
	ck_assert_uint_eq(f.h.nterm, 0);
	ck_assert_uint_eq(f.h.nseg, 3);
	struct end *e = &f.w.e[0];
	/* An access error copying no header can only be a request's, and
	 * the oldest outstanding one is at fault (verbs.h). */
	expect_wc(e->scq, 200, IW_WC_REM_ACCESS_ERR, IW_WC_RDMA_READ);
	expect_wc(e->scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	expect_wc(e->scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	for (int i = 0; i < 3; i++)
		expect_wc(e->rcq, 100 + (uint64_t)i, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(e->scq);
	expect_empty(e->rcq);
	world_free(&f.w);
}
END_TEST

/* The peer's TERMINATE names the request at fault by the DDP header it
 * copies (queue and MSN), or, copying none, by an RDMAP protection error
 * that only a request can cause: that WR completes with the status of the
 * one table in qp_term.c (verbs.h, iw_poll_cq); the WRs after it flush in
 * order, once; a TERMINATE about a message that already completed (a
 * Send) or about the stream (LLP) blames no WR. */
struct pterm_case {
	uint16_t term;
	uint32_t qn, msn; /* the copied untagged header; msn 0: no copy */
	enum iw_wc_status st200, st201;
};

static const struct pterm_case pterm_cases[] = {
	{IW_TERM_RDMAP_INV_STAG, 0, 0, IW_WC_REM_ACCESS_ERR, IW_WC_WR_FLUSH_ERR},
	{IW_TERM_RDMAP_INV_STAG, IW_QN_READ_REQ, 2, IW_WC_WR_FLUSH_ERR, IW_WC_REM_ACCESS_ERR},
	{IW_TERM_RDMAP_BASE_BOUNDS, IW_QN_READ_REQ, 1, IW_WC_REM_ACCESS_ERR, IW_WC_WR_FLUSH_ERR},
	{IW_TERM_DDP_U_MSN_RANGE, IW_QN_READ_REQ, 2, IW_WC_WR_FLUSH_ERR, IW_WC_REM_INV_REQ_ERR},
	{IW_TERM_RDMAP_OPCODE, IW_QN_READ_REQ, 1, IW_WC_REM_INV_REQ_ERR, IW_WC_WR_FLUSH_ERR},
	{IW_TERM_RDMAP_CATA_GLOBAL, IW_QN_READ_REQ, 1, IW_WC_REM_OP_ERR, IW_WC_WR_FLUSH_ERR},
	{IW_TERM_DDP_CATASTROPHIC, IW_QN_READ_REQ, 2, IW_WC_WR_FLUSH_ERR, IW_WC_REM_OP_ERR},
	/* about our Send 202 (completed when written): no WR at fault */
	{IW_TERM_RDMAP_OP_NOINV, IW_QN_SEND, 1, IW_WC_WR_FLUSH_ERR, IW_WC_WR_FLUSH_ERR},
	/* no copy, not a request's error; a request we never sent */
	{IW_TERM_RDMAP_OPCODE, 0, 0, IW_WC_WR_FLUSH_ERR, IW_WC_WR_FLUSH_ERR},
	{IW_TERM_RDMAP_INV_STAG, IW_QN_READ_REQ, 7, IW_WC_WR_FLUSH_ERR, IW_WC_WR_FLUSH_ERR},
	{IW_TERM_LLP_CRC, 0, 0, IW_WC_WR_FLUSH_ERR, IW_WC_WR_FLUSH_ERR},
};
#define NUM_PTERM ((int)(sizeof(pterm_cases) / sizeof(pterm_cases[0])))

START_TEST(test_peer_term_status)
{
	const struct pterm_case *c = &pterm_cases[_i];
	struct hfix f;
	hfix_init(&f, HF_CRC, MP_WHOLE);
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_TERMINATE, IW_QN_TERMINATE, 1, 0, true);
	struct iw_terminate t = {.term = c->term, .hdrct = IW_TERM_HDR_M, .ddp_seg_len = 28};
	if (c->msn) {
		unsigned op = c->qn == IW_QN_SEND ? IW_OP_SEND_INV : IW_OP_READ_REQ;
		t.hdrct |= IW_TERM_HDR_D;
		t.ddp_hdr_len = (uint8_t)hb_untagged(t.ddp_hdr, op, c->qn, c->msn, 0, true);
	}
	hl += (size_t)iw_rdmap_term_build(hdr + hl, sizeof(hdr) - hl, &t);
	host_fpdu(&f.h, hdr, hl, NULL, 0);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_ERR);
	struct end *e = &f.w.e[0];
	struct iw_wc wc = expect_wc(e->scq, 200, c->st200, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.vendor_err, c->term);
	wc = expect_wc(e->scq, 201, c->st201, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.vendor_err, c->term);
	expect_wc(e->scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	expect_empty(e->scq);
	for (int i = 0; i < 3; i++)
		expect_wc(e->rcq, 100 + (uint64_t)i, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(e->rcq);
	world_free(&f.w);
}
END_TEST

/* A peer's TERMINATE with triple 0 (RDMAP local catastrophic) is named for
 * what it is, in the event and in every flushed WR, and is not "none". */
START_TEST(test_peer_term_zero)
{
	struct hfix f;
	hfix_init(&f, 0, MP_WHOLE);
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_untagged(hdr, IW_OP_TERMINATE, IW_QN_TERMINATE, 1, 0, true);
	struct iw_terminate t = {.term = IW_TERM_RDMAP_CATASTROPHIC};
	hl += (size_t)iw_rdmap_term_build(hdr + hl, sizeof(hdr) - hl, &t);
	host_fpdu(&f.h, hdr, hl, NULL, 0);
	struct iw_async_event ev[2];
	ck_assert_int_eq(async_count(f.w.ctx, ev, 2), 1);
	ck_assert_int_eq(ev[0].event_type, IW_EVENT_QP_TERMINATE);
	ck_assert_uint_eq(ev[0].term, IW_TERM_RDMAP_CATASTROPHIC);
	ck_assert_str_eq(iw_term_str(ev[0].term), "RDMAP local catastrophic error");
	host_drain(&f.h);
	struct end *e = &f.w.e[0];
	struct iw_wc wc = expect_wc(e->scq, 200, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_RDMAP_CATASTROPHIC);
	expect_wc(e->scq, 201, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	wc = expect_wc(e->scq, 202, IW_WC_SUCCESS, IW_WC_SEND);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_NONE); /* sent before, succeeded */
	for (int i = 0; i < 3; i++) {
		wc = expect_wc(e->rcq, 100 + (uint64_t)i, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
		ck_assert_uint_eq(wc.vendor_err, IW_TERM_RDMAP_CATASTROPHIC);
		ck_assert_str_eq(iw_term_str(wc.vendor_err), "RDMAP local catastrophic error");
	}
	world_free(&f.w);
}
END_TEST

/* ================================================================ fault injection */

/* iw_qp_inject_fault(IW_FAULT_TX_CRC) against an in-memory peer that
 * checks CRCs. A sends Send 1 (len1 octets, one or more FPDUs), Send 2,
 * Read 3, Read 4 (held back: ORD 1) and Send 5, with the nth FPDU's CRC
 * corrupted. B must find exactly that FPDU bad, TERMINATE with LLP/MPA/CRC
 * and deliver only the messages before it; A must see the TERMINATE as the
 * peer's and flush everything not done, in order, with the triple. */
struct crc_case {
	uint32_t nth;
	enum mp_mode mode;
	bool markers; /* on A -> B, where the corrupted CRC travels */
	size_t len1;
};

static const struct crc_case crc_cases[] = {
	{1, MP_WHOLE, false, 100},   /* Send 1 */
	{2, MP_BYTES, false, 100},   /* Send 2 */
	{3, MP_RANDOM, true, 100},   /* Read Request 3 */
	{2, MP_DIRECT, false, 4000}, /* the middle segment of Send 1 */
	{4, MP_DIRECT, true, 4000},  /* Send 2, behind a 3-segment Send 1 */
};
#define NUM_CRC_CASES (sizeof(crc_cases) / sizeof(crc_cases[0]))

/* The FPDUs a Send of len octets takes on A's connection. */
static uint32_t send_fpdus(const struct end *A, size_t len)
{
	uint32_t maxp = A->conn.mulpdu - IW_DDP_UNTAGGED_HDR_LEN;
	return len ? (uint32_t)((len + maxp - 1) / maxp) : 1;
}

static void crc_post(struct world *w, const struct crc_case *c, struct buf *src,
		     struct buf *rsrc, struct buf *sink)
{
	struct end *A = &w->e[0];
	struct iw_sge sg = sge_of(sink, 0, 64);
	ck_assert_int_eq(post_send_buf(A->qp, 1, 0, src, c->len1), 0);
	ck_assert_int_eq(post_send_buf(A->qp, 2, 0, src, 16), 0);
	ck_assert_int_eq(post_rdma(A->qp, 3, IW_WR_RDMA_READ, 0, &sg, 1, rsrc->p,
				   rsrc->mr->rkey),
			 0);
	ck_assert_int_eq(post_rdma(A->qp, 4, IW_WR_RDMA_READ, 0, &sg, 1, rsrc->p,
				   rsrc->mr->rkey),
			 0);
	ck_assert_int_eq(post_send_buf(A->qp, 5, 0, src, 16), 0);
}

START_TEST(test_inject_crc)
{
	const struct crc_case *c = &crc_cases[_i];
	struct cfg g = {.crc = true, .mk_ab = c->markers, .ord = 1};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	w.mp.mode = c->mode;
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, c->len1, 0);
	struct buf *rsrc = buf_new(&w, w.pd, 64, ACC_RD);
	struct buf *sink = buf_new(&w, w.pd, 64, ACC_RW);
	struct buf *r = buf_new(&w, w.pd, 3 * c->len1, IW_ACCESS_LOCAL_WRITE);
	fill(src->p, c->len1, 7);
	for (uint64_t k = 0; k < 3; k++) {
		post_recv_buf(B->qp, 100 + k, r, k * c->len1, c->len1);
		post_recv_buf(A->qp, 200 + k, sink, 0, 16);
	}
	uint32_t f1 = send_fpdus(A, c->len1);
	ck_assert_uint_le(c->nth, f1 + 2); /* a Send or Read 3 is hit */
	ck_assert_int_eq(iw_qp_inject_fault(A->qp, IW_FAULT_TX_CRC, c->nth), 0);
	crc_post(&w, c, src, rsrc, sink);
	pump(&w);

	/* The wire: A's first nth - 1 FPDUs check, the nth does not (its
	 * header is decoded before its CRC arrives); B's only FPDU is the
	 * TERMINATE, and A sent none. */
	ck_assert_int_eq(A->tap.err, -EBADMSG);
	ck_assert_uint_eq(A->tap.nseg, c->nth);
	ck_assert_uint_eq(A->tap.nterm, 0);
	ck_assert_int_eq(B->tap.err, 0);
	ck_assert_uint_eq(B->tap.nseg, 1);
	expect_pair_terminate(&w, 1, IW_TERM_LLP_CRC, IW_EVENT_QP_FATAL);
	ck_assert_uint_eq(B->tap.term.hdrct, 0); /* an LLP error copies no header */

	/* A: the Sends were written before the TERMINATE came back, so they
	 * completed; the rest flushes with the peer's triple, in order. */
	expect_wc(A->scq, 1, IW_WC_SUCCESS, IW_WC_SEND);
	expect_wc(A->scq, 2, IW_WC_SUCCESS, IW_WC_SEND);
	struct iw_wc wc = expect_wc(A->scq, 3, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_LLP_CRC);
	wc = expect_wc(A->scq, 4, IW_WC_WR_FLUSH_ERR, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_LLP_CRC);
	wc = expect_wc(A->scq, 5, IW_WC_WR_FLUSH_ERR, IW_WC_SEND);
	ck_assert_uint_eq(wc.vendor_err, IW_TERM_LLP_CRC);
	expect_empty(A->scq);
	for (uint64_t k = 0; k < 3; k++)
		expect_wc(A->rcq, 200 + k, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(A->rcq);

	/* B: the messages wholly before the bad FPDU arrived, nothing after. */
	bool got1 = c->nth > f1, got2 = c->nth > f1 + 1;
	wc = expect_wc(B->rcq, 100, got1 ? IW_WC_SUCCESS : IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	if (got1) {
		ck_assert_uint_eq(wc.byte_len, c->len1);
		ck_assert(memcmp(r->p, src->p, c->len1) == 0);
	}
	wc = expect_wc(B->rcq, 101, got2 ? IW_WC_SUCCESS : IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	if (got2) {
		ck_assert_uint_eq(wc.byte_len, 16);
		ck_assert(memcmp(r->p + c->len1, src->p, 16) == 0);
	}
	expect_wc(B->rcq, 102, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(B->rcq);
	expect_empty(B->scq);
	iw_qp_conn_lost(A->qp, false);
	iw_qp_conn_lost(B->qp, false);
	world_free(&w);
}
END_TEST

/* The call's rules: arguments, the states it refuses, CRC off, nth 0
 * disarming, a new call replacing the armed fault. */
START_TEST(test_inject_fault_api)
{
	ck_assert_str_eq(iw_fault_str(IW_FAULT_TX_CRC), "tx-crc");
	ck_assert_str_eq(iw_fault_str((enum iw_fault)0), "unknown");
	ck_assert_int_eq(iw_qp_inject_fault(NULL, IW_FAULT_TX_CRC, 1), EINVAL);
	for (int crc = 0; crc < 2; crc++) {
		struct cfg g = {.crc = crc};
		struct world w;
		world_new(&w, &g);
		struct iw_qp *qp = w.e[0].qp;
		ck_assert_int_eq(iw_qp_inject_fault(qp, (enum iw_fault)7, 1), EINVAL);
		ck_assert_int_eq(iw_qp_inject_fault(qp, IW_FAULT_TX_CRC, 1), ENOTCONN);
		ck_assert_int_eq(iw_qp_inject_fault(qp, IW_FAULT_TX_CRC, 0), 0);
		world_start(&w);
		ck_assert_int_eq(iw_qp_inject_fault(qp, IW_FAULT_TX_CRC, 1),
				 crc ? 0 : EOPNOTSUPP);
		/* Disarmed again, or replaced by a fault past this traffic:
		 * the Sends go through with good CRCs either way. */
		if (crc)
			ck_assert_int_eq(iw_qp_inject_fault(qp, IW_FAULT_TX_CRC, 0), 0);
		xfer_send(&w, 0, 5000, 1, false);
		if (crc)
			ck_assert_int_eq(iw_qp_inject_fault(qp, IW_FAULT_TX_CRC, 1000), 0);
		xfer_send(&w, 0, 5000, 2, false);
		tap_check(&w);
		ck_assert_int_eq(qp_state(w.e[1].qp), IW_QPS_RTS);
		struct iw_qp_attr qa = {.qp_state = IW_QPS_ERR};
		ck_assert_int_eq(iw_modify_qp(qp, &qa, IW_QP_STATE), 0);
		ck_assert_int_eq(iw_qp_inject_fault(qp, IW_FAULT_TX_CRC, 1), ENOTCONN);
		iw_qp_conn_lost(w.e[0].qp, false);
		iw_qp_conn_lost(w.e[1].qp, false);
		world_free(&w);
	}
}
END_TEST

/* A P2P responder that got its RTR then works normally; one that gets a
 * Send instead is covered by the "no RTR" case. */
START_TEST(test_hostile_rtr)
{
	struct hfix f;
	hfix_init(&f, HF_RTR, MP_BYTES);
	uint8_t hdr[IW_FPDU_HDR_MAX];
	size_t hl = hb_tagged(hdr, IW_OP_WRITE, 1, 0, true);
	host_fpdu(&f.h, hdr, hl, NULL, 0);
	ck_assert(iw_qp_take_events(f.qp) & IW_QPE_ESTABLISHED);
	host_drain(&f.h);
	ck_assert_uint_eq(f.h.nseg, 3); /* the Reads and the Send now go out */
	host_untagged(&f.h, IW_OP_SEND, "late", 4);
	expect_wc(f.w.e[0].rcq, 100, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_RTS);
	/* A second zero-length Write is just a zero-length Write. */
	host_fpdu(&f.h, hdr, hl, NULL, 0);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_RTS);
	iw_qp_conn_lost(f.qp, false);
	world_free(&f.w);
}
END_TEST

/* A receive WQE being filled leaves its ring slot free for the next post
 * at once (the RQ here holds four: the fixture's three and 103). */
START_TEST(test_rq_slot_reuse)
{
	struct hfix f;
	hfix_init(&f, HF_SMALL_RQ | HF_NO_READS, (enum mp_mode)(_i % MP_NUM_MODES));
	uint8_t hdr[IW_FPDU_HDR_MAX], m[60];
	fill(m, sizeof(m), 12);
	struct buf *extra = buf_new(&f.w, f.w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	post_recv_buf(f.qp, 103, extra, 0, 64);
	size_t hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 0, false);
	host_fpdu(&f.h, hdr, hl, m, 30);
	/* 100 is being filled: the ring has room for exactly one more. */
	struct buf *more = buf_new(&f.w, f.w.pd, 64, IW_ACCESS_LOCAL_WRITE);
	post_recv_buf(f.qp, 104, more, 0, 64);
	struct iw_sge sg = sge_of(extra, 0, 8);
	ck_assert_int_eq(post_recv_sg(f.qp, 105, &sg, 1), ENOMEM);
	hl = hb_untagged(hdr, IW_OP_SEND, 0, 1, 30, true);
	host_fpdu(&f.h, hdr, hl, m + 30, 30);
	struct iw_wc wc = expect_wc(f.w.e[0].rcq, 100, IW_WC_SUCCESS, IW_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 60);
	ck_assert(memcmp(f.rbuf->p, m, 60) == 0);
	f.h.msn[0] = 2;
	for (uint32_t k = 0; k < 3; k++)
		host_untagged(&f.h, IW_OP_SEND, m, 8 + k);
	for (uint64_t k = 101; k <= 103; k++) {
		wc = expect_wc(f.w.e[0].rcq, k, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, 8 + k - 101);
	}
	ck_assert(memcmp(extra->p, m, 10) == 0);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_RTS);
	iw_qp_conn_lost(f.qp, false);
	expect_wc(f.w.e[0].rcq, 104, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(f.w.e[0].rcq);
	world_free(&f.w);
}
END_TEST

/* Ring indexes run over 2^32 with rings of odd capacity. */
START_TEST(test_ring_wrap)
{
	struct cfg g = {.sq = 3, .rq = 5, .ord = 2};
	struct world w;
	world_new(&w, &g);
	for (int e = 0; e < 2; e++) {
		struct iw_qp *qp = w.e[e].qp;
		qp->sq_head = qp->sq_tail = qp->sq_next = UINT32_MAX - 7;
		qp->rq_head = qp->rq_tail = UINT32_MAX - 9;
	}
	world_start(&w);
	w.mp.mode = MP_RANDOM;
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 4096, ACC_RD);
	struct buf *dst = buf_new(&w, w.pd, 5 * 4096, ACC_RW);
	for (uint32_t round = 0; round < 8; round++) {
		fill(src->p, 4096, round);
		for (int k = 0; k < 5; k++)
			post_recv_buf(B->qp, round * 10 + (uint64_t)k, dst, (size_t)k * 4096, 4096);
		ck_assert_int_eq(post_send_buf(A->qp, round * 10, 0, src, 1000 + round), 0);
		struct iw_sge sg = sge_of(dst, 4096, 4096);
		ck_assert_int_eq(post_rdma(A->qp, round * 10 + 1, IW_WR_RDMA_READ, 0, &sg, 1, src->p,
					   src->mr->rkey),
				 0);
		ck_assert_int_eq(post_send_buf(A->qp, round * 10 + 2, 0, src, 7), 0);
		ck_assert_int_eq(post_send_buf(A->qp, round * 10 + 3, 0, src, 1), ENOMEM);
		pump(&w);
		expect_wc(A->scq, round * 10, IW_WC_SUCCESS, IW_WC_SEND);
		expect_wc(A->scq, round * 10 + 1, IW_WC_SUCCESS, IW_WC_RDMA_READ);
		expect_wc(A->scq, round * 10 + 2, IW_WC_SUCCESS, IW_WC_SEND);
		struct iw_wc wc = expect_wc(B->rcq, round * 10, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, 1000 + round);
		wc = expect_wc(B->rcq, round * 10 + 1, IW_WC_SUCCESS, IW_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, 7);
		ck_assert(memcmp(dst->p + 4096, src->p, 4096) == 0);
		/* the three receives left are flushed by conn_lost below */
		iw_qp_conn_lost(A->qp, true);
		iw_qp_conn_lost(B->qp, true);
		for (int k = 2; k < 5; k++)
			expect_wc(B->rcq, round * 10 + (uint64_t)k, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
		struct iw_qp_attr qa = {.qp_state = IW_QPS_RESET};
		for (int e = 0; e < 2; e++) {
			ck_assert_int_eq(iw_modify_qp(w.e[e].qp, &qa, IW_QP_STATE), 0);
			expect_empty(w.e[e].scq);
			expect_empty(w.e[e].rcq);
		}
		/* reconnect on the same QPs; indexes keep running */
		for (int e = 0; e < 2; e++) {
			w.e[e].qp->sq_head = w.e[e].qp->sq_tail = w.e[e].qp->sq_next =
				UINT32_MAX - 1 - round;
			w.e[e].qp->rq_head = w.e[e].qp->rq_tail = UINT32_MAX - 2 - round;
		}
		world_start(&w);
	}
	world_free(&w);
}
END_TEST

/* Destroying a QP or SRQ drops the events still queued that name it. */
START_TEST(test_destroy_forgets_events)
{
	struct hfix f;
	hfix_init(&f, HF_NO_READS, MP_WHOLE);
	host_write(&f.h, 0x00ABCD00u, 0, "x", 1);
	ck_assert_int_eq(qp_state(f.qp), IW_QPS_ERR);
	/* Destroy with the TERMINATE unsent and its event unread. */
	ck_assert(iw_qp_tx_pending(f.qp));
	ck_assert_int_eq(iw_destroy_qp(f.qp), 0);
	f.w.e[0].qp = NULL;
	struct iw_async_event ev;
	ck_assert_int_eq(iw_get_async_event(f.w.ctx, &ev), EAGAIN);
	struct iw_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1, .srq_limit = 2}};
	struct iw_srq *srq = iw_create_srq(f.w.pd, &sa);
	ck_assert_ptr_nonnull(srq);
	struct iw_recv_wr rw = {.wr_id = 1};
	ck_assert_int_eq(iw_post_srq_recv(srq, &rw, NULL), 0);
	struct iw_rwqe_buf out;
	ck_assert(iw_srq_take(srq, &out)); /* 0 left < 2: the limit event */
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	ck_assert_int_eq(iw_get_async_event(f.w.ctx, &ev), EAGAIN);
	world_free(&f.w);
}
END_TEST

/* A QP destroyed with a built but unwritten Read Response lets its MR go. */
START_TEST(test_destroy_with_txq)
{
	struct cfg g = {0};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct buf *src = buf_new(&w, w.pd, 100000, ACC_RD);
	struct buf *sink = buf_new(&w, w.pd, 100000, ACC_RW);
	struct iw_sge sg = sge_of(sink, 0, 100000);
	ck_assert_int_eq(post_rdma(w.e[0].qp, 1, IW_WR_RDMA_READ, 0, &sg, 1, src->p, src->mr->rkey),
			 0);
	while (pump_dir(&w, 0))
		;
	struct iovec iov[8];
	ck_assert_int_gt(iw_qp_tx_iov(w.e[1].qp, iov, 8), 0);
	ck_assert_int_eq(iw_dereg_mr(src->mr), EBUSY);
	ck_assert_int_eq(iw_destroy_qp(w.e[1].qp), 0);
	w.e[1].qp = NULL;
	ck_assert_int_eq(iw_dereg_mr(src->mr), 0);
	src->mr = NULL;
	world_free(&w);
}
END_TEST

/* Take what from sends and feed it to to octet by octet until the engine
 * offers a direct destination: returns it, with the octets fed (*pos) and
 * the offer's length (*d). */
static uint8_t *feed_to_direct(struct world *w, struct iw_qp *from, struct iw_qp *to,
			       size_t *pos, size_t *d)
{
	size_t n = take_tx(w, from), used = 0;
	uint8_t *p = NULL;
	ck_assert_uint_gt(n, 100);
	*pos = 0;
	while (*pos < n && (*d = iw_qp_rx_direct(to, &p)) == 0) {
		ck_assert_int_eq(iw_qp_rx(to, w->mp.stage + *pos, 1, &used), 0);
		(*pos)++;
	}
	ck_assert_uint_gt(*d, 0);
	return p;
}

/* The application moves a QP to ERR while the glue is receiving straight
 * into a destination: the receive (or the Write's MR) stays referenced
 * until the glue reports back, then flushes. */
START_TEST(test_direct_vs_modify_err)
{
	bool tagged = _i;
	struct cfg g = {.crc = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 8192, 0);
	struct buf *dst = buf_new(&w, w.pd, 8192, ACC_RW);
	fill(src->p, 8192, 31);
	struct iw_sge sg = sge_of(src, 0, 8192);
	if (tagged) {
		ck_assert_int_eq(post_rdma(A->qp, 1, IW_WR_RDMA_WRITE, 0, &sg, 1, dst->p,
					   dst->mr->rkey),
				 0);
	} else {
		post_recv_buf(B->qp, 7, dst, 0, 8192);
		post_recv_buf(B->qp, 8, dst, 0, 8192);
		struct iw_send_wr wr = wr_of(1, IW_WR_SEND, 0, &sg, 1);
		ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	}
	size_t pos, d;
	uint8_t *p = feed_to_direct(&w, A->qp, B->qp, &pos, &d);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_ERR};
	ck_assert_int_eq(iw_modify_qp(B->qp, &qa, IW_QP_STATE), 0);
	ck_assert_int_eq(qp_state(B->qp), IW_QPS_ERR);
	expect_empty(B->rcq); /* the glue may be writing into it */
	ck_assert_int_eq(iw_dereg_mr(dst->mr), EBUSY);
	memcpy(p, w.mp.stage + pos, d);
	ck_assert_int_eq(iw_qp_rx_direct_done(B->qp, d), 0);
	if (!tagged) {
		expect_wc(B->rcq, 7, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
		expect_wc(B->rcq, 8, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	}
	expect_empty(B->rcq);
	/* Nothing references dst any more (world_free deregisters it). */
	ck_assert(iw_qp_take_events(B->qp) & IW_QPE_ERROR);
	ck_assert_uint_eq(pump_dir(&w, 1), 0);
	iw_qp_conn_lost(A->qp, false);
	iw_qp_conn_lost(B->qp, false);
	world_free(&w);
}
END_TEST

/* IW_EVENT_QP_LAST_WQE_REACHED (issue 16 bug 6): raised once per entry into
 * ERR of a QP on an SRQ, and only after the SRQ WR the QP was filling has
 * completed (here the glue is still receiving into it when the QP goes to
 * ERR, so its flush waits); that WR carries the QP's number and is not
 * returned to the SRQ, the WRs still posted stay there. */
START_TEST(test_last_wqe_reached)
{
	struct cfg g = {.crc = true, .srq = true};
	struct world w;
	world_new(&w, &g);
	world_start(&w);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 8192, 0);
	struct buf *dst = buf_new(&w, w.pd, 2 * 8192, ACC_RW);
	fill(src->p, 8192, 32);
	for (int k = 0; k < 2; k++) {
		struct iw_sge sg = sge_of(dst, (size_t)k * 8192, 8192);
		struct iw_recv_wr rw = {.wr_id = 100 + (uint64_t)k, .sg_list = &sg, .num_sge = 1};
		ck_assert_int_eq(iw_post_srq_recv(w.srq, &rw, NULL), 0);
	}
	struct iw_sge sg = sge_of(src, 0, 8192);
	struct iw_send_wr wr = wr_of(1, IW_WR_SEND, 0, &sg, 1);
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	size_t pos, d;
	uint8_t *p = feed_to_direct(&w, A->qp, B->qp, &pos, &d);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_ERR};
	ck_assert_int_eq(iw_modify_qp(B->qp, &qa, IW_QP_STATE), 0);
	/* WR 100 is still being received into: neither its completion nor
	 * the event yet. */
	struct iw_async_event ev[4];
	expect_empty(B->rcq);
	ck_assert_int_eq(async_count(w.ctx, ev, 4), 0);
	memcpy(p, w.mp.stage + pos, d);
	ck_assert_int_eq(iw_qp_rx_direct_done(B->qp, d), 0);
	struct iw_wc wc = expect_wc(B->rcq, 100, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	ck_assert_uint_eq(wc.qp_num, iw_qp_num(B->qp));
	expect_empty(B->rcq); /* 101 stays on the SRQ */
	ck_assert_int_eq(async_count(w.ctx, ev, 4), 1);
	ck_assert_int_eq(ev[0].event_type, IW_EVENT_QP_LAST_WQE_REACHED);
	ck_assert_ptr_eq(ev[0].element.qp, B->qp);
	ck_assert_uint_eq(ev[0].term, IW_TERM_NONE);
	/* Once per entry into ERR: not again when the connection goes. */
	ck_assert_int_eq(iw_modify_qp(B->qp, &qa, IW_QP_STATE), 0);
	iw_qp_conn_lost(B->qp, false);
	ck_assert_int_eq(async_count(w.ctx, ev, 4), 0);
	iw_qp_conn_lost(A->qp, false);
	world_free(&w);
}
END_TEST

/* ================================================================ receive hold */

/* What B should find in the receive that takes each held message. */
struct hold_msg {
	uint64_t id;
	enum iw_wr_opcode op;
	unsigned flags;       /* IW_SEND_* */
	size_t len;           /* payload */
	uint32_t imm;
	enum iw_wc_opcode wc_op;
	unsigned wc_flags;
};

static const struct hold_msg hold_msgs[] = {
	{1, IW_WR_SEND, 0, 10, 0, IW_WC_RECV, 0},
	/* Several DDP segments (MULPDU under 1460), reassembled in the hold. */
	{2, IW_WR_SEND, IW_SEND_SOLICITED, 5000, 0, IW_WC_RECV, IW_WC_SOLICITED},
	{3, IW_WR_SEND_WITH_IMM, 0, 0, 0xA1B2C3D4u, IW_WC_RECV_RDMA_WITH_IMM, IW_WC_WITH_IMM},
	{4, IW_WR_RDMA_WRITE_WITH_IMM, IW_SEND_SOLICITED, 700, 0x01020304u,
	 IW_WC_RECV_RDMA_WITH_IMM, IW_WC_WITH_IMM | IW_WC_SOLICITED},
	{5, IW_WR_SEND, 0, 0, 0, IW_WC_RECV, 0},
	{6, IW_WR_SEND, 0, 3000, 0, IW_WC_RECV, 0},
};
#define NUM_HOLD_MSGS (sizeof(hold_msgs) / sizeof(hold_msgs[0]))

static void hold_post(struct world *w, const struct hold_msg *m, struct buf *src, struct buf *wt)
{
	fill(src->p, m->len, (uint32_t)m->id);
	struct iw_sge sg = sge_of(src, 0, m->len);
	struct iw_send_wr wr = wr_of(m->id, m->op, m->flags, &sg, m->len ? 1 : 0);
	wr.imm_data = m->imm;
	wr.wr.rdma.remote_addr = (uintptr_t)wt->p;
	wr.wr.rdma.rkey = wt->mr->rkey;
	ck_assert_int_eq(post_wr(w->e[0].qp, &wr), 0);
	pump(w);
	expect_wc(w->e[0].scq, m->id, IW_WC_SUCCESS, iw_wr_info(m->op)->wc);
}

/* A receive posted now takes the oldest held message: its completion is
 * there when iw_post_recv returns. */
static void hold_take(struct world *w, const struct hold_msg *m, struct buf *dst)
{
	memset(dst->p, 0, dst->len);
	post_recv_buf(w->e[1].qp, 100 + m->id, dst, 0, dst->len);
	struct iw_wc wc = expect_wc(w->e[1].rcq, 100 + m->id, IW_WC_SUCCESS, m->wc_op);
	ck_assert_uint_eq(wc.wc_flags, m->wc_flags);
	ck_assert_uint_eq(wc.imm_data, m->wc_flags & IW_WC_WITH_IMM ? m->imm : 0);
	bool recv = m->wc_op == IW_WC_RECV;
	ck_assert_uint_eq(wc.byte_len, recv ? m->len : 0);
	uint8_t *want = calloc(1, dst->len);
	if (recv)
		fill(want, m->len, (uint32_t)m->id);
	ck_assert_msg(memcmp(dst->p, want, dst->len) == 0, "message %llu: data differs",
		      (unsigned long long)m->id);
	free(want);
	expect_empty(w->e[1].rcq);
}

static void hold_world(struct world *w, int mode)
{
	struct cfg g = {.create_flags = IW_QP_CREATE_RECV_HOLD | IW_QP_CREATE_RFC7306,
			.crc = mode & 1, .mk_ab = mode & 1};
	world_new(w, &g);
	w->mp.mode = (enum mp_mode)(mode % MP_NUM_MODES);
	w->mp.partial = mode >= MP_NUM_MODES;
	world_start(w);
}

/* Sends, Sends with SE and immediate data, a Write with immediate and an
 * empty Send, all before B posts a receive: B holds them and each receive
 * posted later takes the next, with its bytes, length, immediate data and
 * flags. One that arrives while others are held waits behind them, and
 * once the hold is empty arrivals take posted receives again. */
START_TEST(test_hold_in_order)
{
	struct world w;
	hold_world(&w, _i);
	struct end *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 8192, 0);
	struct buf *wt = buf_new(&w, w.pd, 1024, ACC_RW);
	struct buf *dst = buf_new(&w, w.pd, 5000, IW_ACCESS_LOCAL_WRITE);
	for (size_t i = 0; i + 1 < NUM_HOLD_MSGS; i++)
		hold_post(&w, &hold_msgs[i], src, wt);
	expect_empty(B->rcq);
	ck_assert_int_eq(qp_state(B->qp), IW_QPS_RTS);
	ck_assert_uint_eq(B->qp->hold.num, NUM_HOLD_MSGS - 1);
	for (size_t i = 0; i < 2; i++)
		hold_take(&w, &hold_msgs[i], dst);
	hold_post(&w, &hold_msgs[NUM_HOLD_MSGS - 1], src, wt); /* behind the rest */
	for (size_t i = 2; i < NUM_HOLD_MSGS; i++)
		hold_take(&w, &hold_msgs[i], dst);
	uint8_t want[700];
	fill(want, sizeof(want), 4);
	ck_assert(memcmp(wt->p, want, sizeof(want)) == 0); /* the Write part */
	ck_assert_uint_eq(B->qp->hold.num, 0);
	ck_assert_uint_eq(B->qp->hold.bytes, 0);
	post_recv_buf(B->qp, 200, dst, 0, dst->len);
	hold_post(&w, &hold_msgs[0], src, wt);
	expect_wc(B->rcq, 200, IW_WC_SUCCESS, IW_WC_RECV);
	tap_check(&w);
	ck_assert_int_eq(qp_state(B->qp), IW_QPS_RTS);
	world_free(&w);
}
END_TEST

/* A Send with Invalidate held for its receive invalidates the STag when it
 * arrives, as it would with a receive posted. */
START_TEST(test_hold_send_inv)
{
	struct world w;
	hold_world(&w, 0);
	struct end *A = &w.e[0], *B = &w.e[1];
	struct iw_mr *fr;
	struct buf *mem, *m = buf_new(&w, w.pd, 512, 0);
	struct buf *r = buf_new(&w, w.pd, 512, IW_ACCESS_LOCAL_WRITE);
	uint32_t key = inv_target(&w, &fr, &mem);
	pump(&w);
	expect_wc(B->scq, 1, IW_WC_SUCCESS, IW_WC_REG_MR);
	fill(m->p, 512, 8);
	struct iw_sge sg = sge_of(m, 0, 300);
	struct iw_send_wr wr = wr_of(3, IW_WR_SEND_WITH_INV, IW_SEND_SOLICITED, &sg, 1);
	wr.invalidate_rkey = key;
	ck_assert_int_eq(post_wr(A->qp, &wr), 0);
	pump(&w);
	expect_wc(A->scq, 3, IW_WC_SUCCESS, IW_WC_SEND);
	expect_empty(B->rcq);
	/* Invalidated already: a Write to it fails though nothing completed. */
	inv_write_refused(&w, &sg, mem, key);
	/* The QP is in ERR: the held Send is dropped, never completed. */
	post_recv_buf(B->qp, 2, r, 0, 512);
	expect_wc(B->rcq, 2, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	expect_empty(B->rcq);
	ck_assert_uint_eq(B->qp->hold.num, 0);
	ck_assert_int_eq(iw_dereg_mr(fr), 0);
	world_free(&w);
}
END_TEST

/* The hold is for a QP's own receive queue: not with an SRQ, and no
 * other flag bit is taken. */
START_TEST(test_hold_create)
{
	struct cfg g = {.srq = true};
	struct world w;
	world_new(&w, &g);
	struct iw_qp_init_attr a = {.send_cq = w.e[0].scq, .recv_cq = w.e[0].rcq, .srq = w.srq,
				    .cap = {.max_send_wr = 4}, .qp_type = IW_QPT_RC,
				    .create_flags = IW_QP_CREATE_RECV_HOLD};
	errno = 0;
	ck_assert_ptr_null(iw_create_qp(w.pd, &a));
	ck_assert_int_eq(errno, EINVAL);
	a.srq = NULL;
	a.cap.max_recv_wr = 4;
	a.create_flags = IW_QP_CREATE_LOOP_RX << 1; /* the first bit not defined */
	ck_assert_ptr_null(iw_create_qp(w.pd, &a));
	a.create_flags = IW_QP_CREATE_RECV_HOLD;
	struct iw_qp *qp = iw_create_qp(w.pd, &a);
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_eq(qp->hold.max_num, 4); /* the receive queue's depth */
	ck_assert_uint_eq(qp->hold.max_bytes, IW_RECV_HOLD_BYTES_DEFAULT);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	world_free(&w);
}
END_TEST

/* When the QP ends without a TERMINATE (the peer's FIN, a reset), whole
 * held messages stay for the receives posted next, which take them in
 * order before the rest flush: fio's client disconnects as soon as its
 * last Send is written. Destroyed with messages held (_i 0), the QP frees
 * them without a completion; nothing leaks (valgrind and ASan check). */
START_TEST(test_hold_at_end)
{
	struct world w;
	hold_world(&w, 0);
	struct end *B = &w.e[1];
	struct buf *src = buf_new(&w, w.pd, 8192, 0);
	struct buf *wt = buf_new(&w, w.pd, 1024, ACC_RW);
	struct buf *dst = buf_new(&w, w.pd, 5000, IW_ACCESS_LOCAL_WRITE);
	for (size_t i = 0; i < 3; i++)
		hold_post(&w, &hold_msgs[i], src, wt);
	ck_assert_uint_eq(B->qp->hold.num, 3);
	if (_i) {
		iw_qp_conn_lost(B->qp, _i == 1);
		ck_assert_int_eq(qp_state(B->qp), IW_QPS_ERR);
		expect_empty(B->rcq);
		for (size_t i = 0; i < 3; i++)
			hold_take(&w, &hold_msgs[i], dst);
		post_recv_buf(B->qp, 99, dst, 0, dst->len);
		expect_wc(B->rcq, 99, IW_WC_WR_FLUSH_ERR, IW_WC_RECV);
	}
	expect_empty(B->rcq);
	world_free(&w); /* destroys B with whatever is still held */
}
END_TEST

/* ================================================================ suite */

Suite *suite_qp(void)
{
	Suite *s = suite_create("qp");
	TCase *tc = tcase_create("xfer");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_xfer_matrix, 0, 96);
	tcase_add_loop_test(tc, test_stream_mixed, 0, 4);
	suite_add_tcase(s, tc);

	tc = tcase_create("big");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_64mib);
	suite_add_tcase(s, tc);

	tc = tcase_create("semantics");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_rtr, 0, 6);
	tcase_add_loop_test(tc, test_ord, 0, 4);
	tcase_add_loop_test(tc, test_fence_and_order, 0, 2);
	tcase_add_test(tc, test_fence_head_of_line);
	tcase_add_test(tc, test_unsignaled);
	tcase_add_loop_test(tc, test_inline, 0, 2);
	tcase_add_test(tc, test_inline_small);
	tcase_add_test(tc, test_post_errors);
	tcase_add_test(tc, test_reg_mr_local_inv);
	tcase_add_test(tc, test_local_wr_error);
	tcase_add_test(tc, test_reg_mr_holds_mr);
	tcase_add_test(tc, test_reg_mr_then_local_use);
	tcase_add_loop_test(tc, test_send_with_inv, 0, 2);
	tcase_add_test(tc, test_srq);
	tcase_add_test(tc, test_srq_flush_midmessage);
	tcase_add_test(tc, test_rfc7306_refused);
	tcase_add_loop_test(tc, test_rfc7306_ops, 0, 2);
	tcase_add_loop_test(tc, test_conn_lost, 0, 3);
	tcase_add_test(tc, test_modify_err);
	tcase_add_test(tc, test_txq_spare);
	tcase_add_test(tc, test_txq_stage_grows);
	tcase_add_test(tc, test_tx_event_answered);
	tcase_add_test(tc, test_read_resp_tx_event);
	tcase_add_test(tc, test_read_req_batch);
	tcase_add_test(tc, test_read_req_batch_bounds);
	tcase_add_test(tc, test_signal_outside_locks);
	tcase_add_test(tc, test_waiter_woken);
	tcase_add_test(tc, test_term_none);
	tcase_add_test(tc, test_ring_wrap);
	tcase_add_test(tc, test_destroy_with_txq);
	tcase_add_loop_test(tc, test_direct_vs_modify_err, 0, 2);
	tcase_add_test(tc, test_last_wqe_reached);
	tcase_add_test(tc, test_inject_fault_api);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_hostile, 0, NUM_HCASES * HVARIANTS);
	tcase_add_loop_test(tc, test_hostile_benign, 0, 4);
	tcase_add_loop_test(tc, test_peer_terminate, 0, 4);
	tcase_add_test(tc, test_peer_term_zero);
	tcase_add_loop_test(tc, test_peer_term_status, 0, NUM_PTERM);
	tcase_add_loop_test(tc, test_inject_crc, 0, NUM_CRC_CASES);
	tcase_add_test(tc, test_hostile_rtr);
	tcase_add_test(tc, test_hostile_bad_stag_counted);
	tcase_add_loop_test(tc, test_mw_type2, 0, 3);
	tcase_add_loop_test(tc, test_mw_type1, 0, 6);
	tcase_add_test(tc, test_mw_read_sink);
	tcase_add_loop_test(tc, test_local_inv_waits_for_placement, 0, 4);
	tcase_add_loop_test(tc, test_rq_slot_reuse, 0, MP_NUM_MODES);
	tcase_add_test(tc, test_destroy_forgets_events);
	suite_add_tcase(s, tc);

	tc = tcase_create("hold");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_hold_in_order, 0, 2 * MP_NUM_MODES);
	tcase_add_test(tc, test_hold_send_inv);
	tcase_add_test(tc, test_hold_create);
	tcase_add_loop_test(tc, test_hold_at_end, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
