/* SPDX-License-Identifier: BSD-2-Clause */
/* Two connections back to back in memory (conn_pair.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_pair.h"
#include "suites.h"

void bytes_add(struct bytes *b, const uint8_t *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 1024;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static struct side *side_of(void *end)
{
	return end;
}

/* ---------------------------------------------------------------- pump ends */

static int end_tx_iov(void *e, struct iovec *iov, int cap)
{
	return iw_conn_tx_iov(&side_of(e)->c, iov, cap);
}

static void end_tx_sent(void *e, size_t n)
{
	side_of(e)->pending |= iw_conn_tx_sent(&side_of(e)->c, n);
}

static int end_rx(void *e, const uint8_t *p, size_t n)
{
	size_t used = 0;
	side_of(e)->pending |= iw_conn_recv(&side_of(e)->c, p, n, &used);
	return used == n ? 0 : -1;
}

static size_t end_rx_direct(void *e, uint8_t **dst)
{
	size_t cap = BUF;
	return iw_conn_rx_plan(&side_of(e)->c, dst, &cap);
}

static int end_rx_placed(void *e, size_t n)
{
	size_t used = 0;
	side_of(e)->pending |= iw_conn_recv_placed(&side_of(e)->c, n, NULL, 0, &used);
	return 0;
}

static long end_rx_read(void *e, const uint8_t *p, size_t len)
{
	struct side *s = side_of(e);
	return conn_read(&s->c, s->bounce, BOUNCE, p, len, &s->pending, &s->rs);
}

static const struct mp_ops conn_end = {end_tx_iov, end_tx_sent, end_rx, end_rx_direct,
				       end_rx_placed, end_rx_read};

/* ---------------------------------------------------------------- world */

void side_new(struct pair *p, struct side *s)
{
	s->cq = iw_create_cq(p->ctx, 256, NULL, NULL, 0);
	ck_assert_ptr_nonnull(s->cq);
	struct iw_qp_init_attr a = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IW_QPT_RC};
	a.cap.max_send_wr = a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = a.cap.max_recv_sge = 2;
	a.sq_sig_all = 1;
	s->qp = iw_create_qp(p->pd, &a);
	ck_assert_ptr_nonnull(s->qp);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_INIT};
	ck_assert_int_eq(iw_modify_qp(s->qp, &qa, IW_QP_STATE), 0);
	s->buf = calloc(1, MEM);
	s->bounce = malloc(BOUNCE);
	ck_assert_ptr_nonnull(s->bounce);
	s->mr = iw_reg_mr(p->pd, s->buf, MEM,
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(s->mr);
	iw_conn_init(&s->c, NULL);
	s->fin_at = SIZE_MAX;
}

void pair_new(struct pair *p, enum mp_mode mode)
{
	memset(p, 0, sizeof(*p));
	p->ctx = iw_context_core_new();
	ck_assert_ptr_nonnull(p->ctx);
	p->pd = iw_alloc_pd(p->ctx);
	ck_assert_ptr_nonnull(p->pd);
	p->mp.mode = mode;
	p->mp.own_rng = 777;
	p->now = 1000;
	side_new(p, &p->s[0]);
	side_new(p, &p->s[1]);
}

void side_free(struct side *s)
{
	if (s->c.link == IW_CONN_QP_LIVE) {
		iw_conn_abort(&s->c);
		iw_conn_closed(&s->c);
	}
	ck_assert_int_eq(iw_destroy_qp(s->qp), 0);
	ck_assert_int_eq(iw_dereg_mr(s->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(s->cq), 0);
	free(s->buf);
	free(s->bounce);
	free(s->wire.p);
	free(s->log.p);
}

void pair_free(struct pair *p)
{
	side_free(&p->s[0]);
	side_free(&p->s[1]);
	ck_assert_int_eq(iw_dealloc_pd(p->pd), 0);
	iw_context_core_free(p->ctx);
	mp_free(&p->mp);
}

/* ---------------------------------------------------------------- TCP */

/* Write what s has (before acting on SHUTDOWN or CLOSE: the order the
 * glue follows). */
bool write_out(struct pair *p, struct side *s)
{
	bool moved = false;
	for (;;) {
		s->pending |= iw_conn_step(&s->c, 0);
		long n = mp_take(&p->mp, &conn_end, s);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			return moved;
		ck_assert_msg(s->fin_at == SIZE_MAX, "octets written after FIN");
		bytes_add(&s->wire, p->mp.stage, (size_t)n);
		bytes_add(&s->log, p->mp.stage, (size_t)n);
		moved = true;
	}
}

bool act(struct pair *p, struct side *s)
{
	unsigned ev = s->pending;
	s->pending = 0;
	s->ev |= ev & APP_EV;
	bool moved = ev != 0;
	if (!s->closed)
		moved |= write_out(p, s);
	moved |= s->pending != 0;
	if ((ev & IW_CONN_EV_SHUTDOWN) && s->fin_at == SIZE_MAX)
		s->fin_at = s->log.len;
	if (ev & IW_CONN_EV_CLOSE) {
		s->closed = true;
		s->abortive = iw_conn_close_abortive(&s->c);
		if (s->fin_at == SIZE_MAX)
			s->fin_at = s->log.len;
		if (s->abortive)
			s->wire.len = 0; /* a reset discards what TCP still holds */
		iw_conn_closed(&s->c);
	}
	return moved;
}

/* Deliver s's queue (then its FIN or reset) to its peer. */
bool deliver(struct pair *p, struct side *s, struct side *peer)
{
	/* A socket nobody reads keeps its octets, FIN and reset. */
	if (peer->hold || peer->closed || !iw_conn_wants_read(&peer->c))
		return false;
	bool moved = false;
	if (s->wire.len) {
		struct bytes w = s->wire;
		s->wire = (struct bytes){0};
		ck_assert_int_eq(mp_feed(&p->mp, &conn_end, peer, w.p, w.len), 0);
		free(w.p);
		moved = true;
	}
	if (!s->fin_done && s->fin_at != SIZE_MAX && !s->wire.len) {
		s->fin_done = true;
		peer->pending |= s->closed && s->abortive ? iw_conn_io_error(&peer->c, ECONNRESET)
							  : iw_conn_eof(&peer->c);
		moved = true;
	}
	return moved;
}

void settle(struct pair *p)
{
	for (int round = 0; round < 100000; round++) {
		bool moved = false;
		for (int i = 0; i < 2; i++)
			moved |= act(p, &p->s[i]);
		for (int i = 0; i < 2; i++)
			moved |= deliver(p, &p->s[i], &p->s[i ^ 1]);
		if (!moved)
			return;
	}
	ck_abort_msg("the pair never settles");
}

/* Move the clock to the next deadline of either side and fire it. */
uint64_t tick(struct pair *p)
{
	uint64_t t = UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		uint64_t d = iw_conn_next_timeout(&p->s[i].c, p->now);
		t = d < t ? d : t;
	}
	if (t == UINT64_MAX)
		return t;
	ck_assert_uint_ge(t, p->now);
	p->now = t;
	for (int i = 0; i < 2; i++)
		if (iw_conn_next_timeout(&p->s[i].c, p->now) <= p->now)
			p->s[i].pending |= iw_conn_on_timer(&p->s[i].c, p->now);
	settle(p);
	return t;
}

uint64_t next_of(struct side *s, struct pair *p)
{
	return iw_conn_next_timeout(&s->c, p->now);
}

/* ---------------------------------------------------------------- steps */

void start(struct pair *p)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	ck_assert_int_eq(iw_conn_connect(&a->c, a->qp, 4, 4, "hi", 2, 0), 0);
	ck_assert_int_eq(a->c.state, IW_CONN_CONNECTING);
	/* The TCP handshake: both ends up. */
	b->pending |= iw_conn_tcp_up(&b->c, 16384);
	a->pending |= iw_conn_tcp_up(&a->c, 16384);
	settle(p);
}

void accept_b(struct pair *p)
{
	struct side *b = &p->s[1];
	ck_assert(b->ev & IW_CONN_EV_REQUEST);
	ck_assert_int_eq(b->c.state, IW_CONN_CONNREQ);
	unsigned ev = 0;
	ck_assert_int_eq(iw_conn_accept(&b->c, b->qp, 4, 4, "yo", 2, &ev), 0);
	b->pending |= ev;
	settle(p);
}

void establish(struct pair *p)
{
	start(p);
	accept_b(p);
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(p->s[i].ev & IW_CONN_EV_ESTABLISHED, "side %d not established", i);
		ck_assert_int_eq(p->s[i].c.state, IW_CONN_RUNNING);
	}
}

void post_recv(struct side *s, uint64_t id, size_t off, uint32_t len)
{
	struct iw_sge sg = {(uintptr_t)(s->buf + off), len, s->mr->lkey};
	struct iw_recv_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1};
	ck_assert_int_eq(iw_post_recv(s->qp, &wr, NULL), 0);
}

void post(struct side *s, uint64_t id, enum iw_wr_opcode op, size_t off, uint32_t len,
		 uint64_t raddr, uint32_t rkey)
{
	struct iw_sge sg = {(uintptr_t)(s->buf + off), len, s->mr->lkey};
	struct iw_send_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = op};
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ck_assert_int_eq(iw_post_send(s->qp, &wr, NULL), 0);
}

void expect_wc(struct side *s, uint64_t id, enum iw_wc_status st)
{
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(s->cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, id);
	ck_assert_int_eq(wc.status, st);
}

void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed);
}

struct decoded decode(const struct side *s, size_t from, bool crc)
{
	struct decoded d = {0};
	struct iw_fpdu_rx rx;
	iw_fpdu_rx_init(&rx, crc, false, 0, 0, 0);
	size_t pos = from;
	while (pos < s->log.len) {
		struct iw_rx_event ev;
		size_t used = 0;
		int rc = iw_fpdu_rx_next(&rx, &ev, s->log.p + pos, s->log.len - pos, &used);
		pos += used;
		ck_assert_int_ge(rc, 0);
		if (rc == 0)
			break;
		if (ev.kind != IW_RX_SEG_HDR)
			continue;
		d.nseg++;
		const struct iw_ddp_seg *g = ev.seg;
		if (g->ulpdu_len > d.max_ulpdu)
			d.max_ulpdu = g->ulpdu_len;
		unsigned op = iw_ddp_opcode(&g->ddp);
		d.last_op = op;
		if (op == IW_OP_WRITE && iw_ddp_tagged(&g->ddp) && g->payload_len == 0 &&
		    g->ddp.stag == 1)
			d.wakes++;
		if (op == IW_OP_TERMINATE) {
			d.terms++;
			d.term = g->rdmap.u.term.term;
		}
	}
	ck_assert_uint_eq(pos, s->log.len);
	return d;
}

void spec_pair(struct pair *p, bool crc, bool markers)
{
	pair_new(p, MP_DIRECT);
	for (int i = 0; i < 2; i++) {
		p->s[i].c.opts.crc = crc;
		p->s[i].c.opts.markers = p->s[i].c.opts.accept_markers = markers;
	}
	establish(p);
	ck_assert(p->s[1].c.res.crc == crc);
}

void expect_recv(struct side *s, uint64_t id, uint32_t len)
{
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(s->cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, id);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, len);
}

void guard_intact(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && p[i] == GUARD)
		i++;
	ck_assert_msg(i == n, "guard octet %zu overwritten", i);
}

/* a's [0, size) to b's sink: by b's RDMA Read, or a's Send into a
 * receive RECV_EXTRA larger than it (octets past byte_len in the receive
 * are its to overwrite). Nothing outside the sink or the receive moves. */
void spec_move(struct pair *p, bool read, uint32_t size, unsigned seed)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	uint32_t span = size + (read ? 0 : RECV_EXTRA);
	memset(b->buf + SINK_AREA, GUARD, 4096 + size + RECV_EXTRA + 4096);
	fill(a->buf, size, seed);
	if (read) {
		post(b, 20, IW_WR_RDMA_READ, SINK_OFF, size, (uintptr_t)a->buf, a->mr->rkey);
	} else {
		post_recv(b, 21, SINK_OFF, span);
		post(a, 22, IW_WR_SEND, 0, size, 0, 0);
	}
	settle(p);
	if (read) {
		expect_wc(b, 20, IW_WC_SUCCESS);
	} else {
		expect_wc(a, 22, IW_WC_SUCCESS);
		expect_recv(b, 21, size);
	}
	ck_assert_mem_eq(b->buf + SINK_OFF, a->buf, size);
	guard_intact(b->buf + SINK_AREA, 4096);
	guard_intact(b->buf + SINK_OFF + span, 4096 + RECV_EXTRA - (span - size));
}
