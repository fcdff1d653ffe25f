/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Read-ahead receive (lib/engine/qp_rx_spec.c, lib/conn/rx_plan.c) against
 * peers that do not cut messages the way the guesses assume: segments of
 * irregular lengths, other messages between the segments of a large one,
 * the sink invalidated while its response is read ahead, and a sink larger
 * than its region. The peer's FPDUs are built here with the library's own
 * encoders (iw_ddp_hdr_build, iw_fpdu_encode) and put on the pair's wire
 * (conn_pair.h); b reads them through planned reads (conn_read.h), as the
 * loop does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_pair.h"
#include "suites.h"

/* b's second region, for the interleaved RDMA Writes: guards around
 * [W_OFF, W_OFF + W_LEN). */
#define W_MEM 65536
#define W_OFF 4096
#define W_LEN 32768
/* A second Read's sink in b->buf, away from SINK_AREA's. */
#define SINK2_OFF (2621440u)
#define SEG 16000
/* Reads cut at random (0), or every one after 60,000 octets: a plan of
 * several guesses, without the first read taking the whole message
 * through the bounce buffer. */
#define READ_LIM(i) ((i) & 4 ? 60000 : 0)

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* ---------------------------------------------------------------- the peer */

/* One FPDU from a to b as a's engine would frame it (CRC as negotiated,
 * no markers), appended to a's wire. */
static void put_fpdu(struct side *a, const struct iw_ddp_hdr *h, const uint8_t *pay,
		     uint32_t len)
{
	uint8_t hdr[IW_FPDU_HDR_MAX];
	int n = iw_ddp_hdr_build(hdr, sizeof(hdr), h);
	ck_assert_int_gt(n, 0);
	struct iw_fpdu_tx tx;
	iw_fpdu_tx_init(&tx, a->c.res.crc, false, 0);
	struct iovec iov[8];
	struct iw_fpdu_out o = {.iov = iov, .iov_cap = 8};
	struct iovec v = {(void *)pay, len};
	ck_assert_int_eq(iw_fpdu_encode(&tx, &o, hdr, (size_t)n, &v, len ? 1 : 0), 0);
	for (int i = 0; i < o.iovcnt; i++)
		bytes_add(&a->wire, iov[i].iov_base, iov[i].iov_len);
}

/* A segment of a Send: message offset mo of the Send with MSN msn. */
static void put_send(struct side *a, uint32_t msn, uint32_t mo, const uint8_t *pay,
		     uint32_t len, bool last)
{
	struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(false, last), .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND),
			       .qn = IW_QN_SEND, .msn = msn, .mo = mo};
	put_fpdu(a, &h, pay, len);
}

/* A tagged segment (RDMA Write or Read Response) at stag, to. */
static void put_tagged(struct side *a, unsigned op, uint32_t stag, uint64_t to,
		       const uint8_t *pay, uint32_t len, bool last)
{
	struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(true, last), .rdmap_ctrl = iw_rdmap_ctrl(op),
			       .stag = stag, .to = to};
	put_fpdu(a, &h, pay, len);
}

/* b asks for a Read of len octets into its buffer at off; the request
 * never reaches a: the test answers it by hand. */
static void read_asked(struct pair *p, uint64_t id, size_t off, uint32_t len)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	post(b, id, IW_WR_RDMA_READ, off, len, (uintptr_t)a->buf, a->mr->rkey);
	act(p, b);
	ck_assert_uint_gt(b->wire.len, 0);
	b->wire.len = 0;
}

/* The large message under test: a Read Response into b's sink at
 * SINK_OFF, or a Send into a receive there RECV_EXTRA larger than it. */
struct big {
	bool read;
	uint32_t size, span, msn;
	uint64_t to;
};

/* Guards around the sink, the source filled, the receive posted or the
 * Read asked. */
static struct big big_begin(struct pair *p, bool read, uint32_t size, unsigned seed)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	struct big m = {.read = read, .size = size, .span = size + (read ? 0 : RECV_EXTRA),
			.msn = b->qp->rx_msn[IW_QN_SEND], .to = (uintptr_t)(b->buf + SINK_OFF)};
	memset(b->buf + SINK_AREA, GUARD, 4096 + size + RECV_EXTRA + 4096);
	fill(a->buf, size, seed);
	if (read)
		read_asked(p, 30, SINK_OFF, size);
	else
		post_recv(b, 31, SINK_OFF, m.span);
	return m;
}

/* Its segment of len octets at offset off. */
static void big_put(struct pair *p, const struct big *m, uint32_t off, uint32_t len)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	bool last = off + len == m->size;
	if (m->read)
		put_tagged(a, IW_OP_READ_RESP, b->mr->lkey, m->to + off, a->buf + off, len, last);
	else
		put_send(a, m->msn, off, a->buf + off, len, last);
}

/* It completed with its length, its octets arrived, and nothing outside
 * the sink or the receive moved (octets past byte_len inside the receive
 * are the receive's to overwrite). */
static void big_check(struct pair *p, const struct big *m)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	if (m->read)
		expect_wc(b, 30, IW_WC_SUCCESS);
	else
		expect_recv(b, 31, m->size);
	ck_assert_mem_eq(b->buf + SINK_OFF, a->buf, m->size);
	guard_intact(b->buf + SINK_AREA, 4096);
	guard_intact(b->buf + SINK_OFF + m->span, 4096 + RECV_EXTRA - (m->span - m->size));
}

/* Irregular segment lengths: the first one large (read-ahead starts
 * there), then 1 octet, shorter ones, longer ones, in a random order. */
static uint32_t seg_len(uint32_t *rng, unsigned k)
{
	if (k == 0)
		return SEG;
	switch (rnd(rng) % 5) {
	case 0:
		return 1;
	case 1:
		return 1 + rnd(rng) % (SEG - 1); /* shorter than the first */
	case 2:
		return SEG;
	default:
		return 1 + rnd(rng) % 24000; /* longer ones too */
	}
}

/* The pair of the hostile tests: loop index i picks CRC (bit 1) and how
 * b's reads are cut (bit 2, READ_LIM). */
static void hostile_pair(struct pair *p, int i)
{
	spec_pair(p, i & 2, false);
	p->mp.read_lim = READ_LIM(i);
}

/* Guesses went wrong (the peer saw to that), yet b sent no TERMINATE. */
static void hostile_end(struct pair *p, uint64_t missed_before)
{
	struct side *b = &p->s[1];
	ck_assert_uint_gt(b->c.rx_spec_missed, missed_before);
	ck_assert_int_eq(decode(b, b->c.hs.tx_len, b->c.res.crc).terms, 0);
	pair_free(p);
}

/* A peer cuts a large Read Response or Send into segments of irregular
 * lengths: the guesses (as long as the segment before) are mostly wrong,
 * and the data, the completion and every guard octet still come out
 * right, with no TERMINATE. */
START_TEST(test_spec_irregular)
{
	bool read = _i & 1;
	struct pair p;
	hostile_pair(&p, _i);
	struct side *b = &p.s[1];
	uint64_t missed = b->c.rx_spec_missed;
	for (unsigned round = 0; round < 4; round++) {
		struct big m = big_begin(&p, read, 300000, round + 11 * (unsigned)_i);
		uint32_t rng = (0x9E3779B9u * (round + 1) + (uint32_t)_i * 7919u) | 1;
		for (uint32_t off = 0, k = 0; off < m.size; k++) {
			uint32_t n = seg_len(&rng, k);
			n = n < m.size - off ? n : m.size - off;
			big_put(&p, &m, off, n);
			off += n;
		}
		b->rs = (struct conn_read_stats){0};
		settle(&p);
		big_check(&p, &m);
		ck_assert_uint_gt(b->rs.spec_reads, 0);
	}
	hostile_end(&p, missed);
}
END_TEST

/* Seventeen 16000-octet segments (read through the bounce buffer and in
 * place), then one of 22000, longer than the guess made for it, then
 * 16000 again; whole reads. The octets read after that guess are payload,
 * not the trailer and next header: fed as stream octets they used to be
 * copied over the next guesses before those were gathered (a CRC error
 * TERMINATE on a valid stream, found by test_spec_irregular). */
START_TEST(test_spec_longer_seg)
{
	bool read = _i & 1, crc = _i & 2;
	struct pair p;
	spec_pair(&p, crc, false);
	struct side *b = &p.s[1];
	size_t b_mpa = b->c.hs.tx_len;
	p.mp.read_lim = SIZE_MAX;
	struct big m = big_begin(&p, read, 400000, 5);
	for (uint32_t off = 0, k = 0; off < m.size; k++) {
		uint32_t n = k == 17 ? 22000 : SEG;
		n = n < m.size - off ? n : m.size - off;
		big_put(&p, &m, off, n);
		off += n;
	}
	settle(&p);
	ck_assert_int_eq(decode(b, b_mpa, crc).terms, 0);
	big_check(&p, &m);
	pair_free(&p);
}
END_TEST

/* Regular cuts, whole reads, CRC on and off: every guess is taken. The
 * CRC field is on the wire without CRC too; the guesses used to leave it
 * out, so without CRC every one was wrong (and everything read ahead was
 * copied). */
START_TEST(test_spec_all_hit)
{
	bool crc = _i & 1;
	struct pair p;
	spec_pair(&p, crc, false);
	struct side *b = &p.s[1];
	p.mp.read_lim = SIZE_MAX;
	b->rs = (struct conn_read_stats){0};
	spec_move(&p, true, 1u << 20, 3);
	ck_assert_uint_gt(b->rs.spec_reads, 4);
	ck_assert_uint_eq(b->c.rx_spec_missed, 0);
	pair_free(&p);
}
END_TEST

/* ------------------------------------------------ other messages between */

#define R2_LEN 20000

/* b's second region and a's sources for what is interleaved. */
struct other {
	uint8_t *w;
	struct iw_mr *mr;
	const uint8_t *wsrc, *rsrc;
};

static void other_new(struct pair *p, struct other *o)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	o->w = malloc(W_MEM);
	ck_assert_ptr_nonnull(o->w);
	memset(o->w, GUARD, W_MEM);
	o->mr = iw_reg_mr(p->pd, o->w, W_MEM, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(o->mr);
	o->wsrc = a->buf + (1u << 20);
	o->rsrc = a->buf + (2u << 20);
	fill(a->buf + (1u << 20), W_LEN, 77);
	fill(a->buf + (2u << 20), R2_LEN, 78);
	memset(b->buf + SINK2_OFF - 4096, GUARD, R2_LEN + 8192);
}

/* A segment of the RDMA Write of W_LEN octets into b's second region. */
static void other_write(struct pair *p, const struct other *o, uint32_t off, uint32_t len)
{
	put_tagged(&p->s[0], IW_OP_WRITE, o->mr->rkey, (uintptr_t)(o->w + W_OFF) + off,
		   o->wsrc + off, len, off + len == W_LEN);
}

/* A segment of the response to b's second Read (R2_LEN at SINK2_OFF). */
static void other_resp(struct pair *p, const struct other *o, uint32_t off, uint32_t len)
{
	struct side *b = &p->s[1];
	put_tagged(&p->s[0], IW_OP_READ_RESP, b->mr->lkey, (uintptr_t)(b->buf + SINK2_OFF) + off,
		   o->rsrc + off, len, off + len == R2_LEN);
}

/* The Write landed exactly in its range of the second region. */
static void other_check(struct pair *p, struct other *o)
{
	ck_assert_mem_eq(o->w + W_OFF, o->wsrc, W_LEN);
	guard_intact(o->w, W_OFF);
	guard_intact(o->w + W_OFF + W_LEN, W_MEM - W_OFF - W_LEN);
	ck_assert_int_eq(iw_dereg_mr(o->mr), 0);
	free(o->w);
	(void)p;
}

/* Between the segments of a large Send or Read Response (16000 octets
 * each, so that the next one is guessed there), the peer puts the
 * segments of an RDMA Write into b's other region and, into a Send, the
 * response to another Read of b's. Where the big message's continuation
 * was guessed comes another message: each lands at its own STag and
 * offset, the Write's octets nowhere else (past byte_len inside the
 * receive at most, which the guards do not cover), no TERMINATE. */
START_TEST(test_spec_interleave)
{
	bool read = _i & 1;
	struct pair p;
	hostile_pair(&p, _i);
	struct side *b = &p.s[1];
	struct other o;
	other_new(&p, &o);
	uint64_t missed = b->c.rx_spec_missed;
	struct big m = big_begin(&p, read, 6 * SEG + 500, 3);
	if (!read)
		read_asked(&p, 40, SINK2_OFF, R2_LEN);
	for (uint32_t k = 0; k < 7; k++) {
		big_put(&p, &m, k * SEG, k < 6 ? SEG : 500);
		if (k == 1)
			other_write(&p, &o, 0, SEG);
		if (k == 3)
			other_write(&p, &o, SEG, W_LEN - SEG);
		if (!read && k == 0)
			other_resp(&p, &o, 0, 12000);
		if (!read && k == 4)
			other_resp(&p, &o, 12000, R2_LEN - 12000);
	}
	b->rs = (struct conn_read_stats){0};
	settle(&p);
	if (!read) {
		expect_wc(b, 40, IW_WC_SUCCESS);
		ck_assert_mem_eq(b->buf + SINK2_OFF, o.rsrc, R2_LEN);
		guard_intact(b->buf + SINK2_OFF - 4096, 4096);
		guard_intact(b->buf + SINK2_OFF + R2_LEN, 4096);
	}
	big_check(&p, &m);
	other_check(&p, &o);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	hostile_end(&p, missed);
}
END_TEST

/* A peer writes, mid-Send, into the very receive its Send is filling, at
 * a place read ahead for a later segment: an RDMA Write (14-octet header)
 * where the Send's continuation (18) was guessed, so the Write's first 4
 * octets sit in the gap read for that header. They must not be placed
 * before the later guesses are gathered, or they overwrite stream octets
 * read there (a CRC TERMINATE on a valid stream, misparsed without CRC).
 * The Send's own later segment then lands over the Write, so the receive
 * ends up holding the Send's data. */
START_TEST(test_spec_write_into_recv)
{
	bool crc = _i & 1;
	uint32_t at = 14 + (uint32_t)_i / 2; /* the Write follows segment `at` */
	struct pair p;
	spec_pair(&p, crc, false);
	struct side *a = &p.s[0], *b = &p.s[1];
	size_t b_mpa = b->c.hs.tx_len;
	p.mp.read_lim = SIZE_MAX;
	struct big m = big_begin(&p, false, 25 * SEG, 21);
	uint8_t w[64];
	fill(w, sizeof(w), 99);
	for (uint32_t k = 0; k < 25; k++) {
		big_put(&p, &m, k * SEG, SEG);
		if (k == at) /* into what a guess two segments on reads */
			put_tagged(a, IW_OP_WRITE, b->mr->rkey, m.to + (at + 2) * SEG + 100, w,
				   sizeof(w), true);
	}
	b->rs = (struct conn_read_stats){0};
	settle(&p);
	ck_assert_int_eq(decode(b, b_mpa, crc).terms, 0);
	big_check(&p, &m);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	pair_free(&p);
}
END_TEST

/* ------------------------------------------------ the sink goes away */

#define INV_SIZE 131072
#define INV_READS 5 /* reads of INV_LIM octets the response takes, at least */
#define INV_LIM 30000

/* Register fast-reg MR mr over len octets at addr with key, on b. */
static void reg_fast(struct pair *p, struct iw_mr *mr, uint32_t key, uint8_t *addr, uint64_t len,
		     uint64_t id)
{
	struct iw_send_wr wr = {.wr_id = id, .opcode = IW_WR_REG_MR};
	wr.reg.mr = mr;
	wr.reg.key = key;
	wr.reg.access = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE;
	wr.reg.iova = (uintptr_t)addr;
	wr.reg.length = len;
	wr.reg.addr = addr;
	ck_assert_int_eq(iw_post_send(p->s[1].qp, &wr, NULL), 0);
}

static void local_inv(struct side *b, uint32_t key, uint64_t id)
{
	struct iw_send_wr wr = {.wr_id = id, .opcode = IW_WR_LOCAL_INV, .invalidate_rkey = key};
	ck_assert_int_eq(iw_post_send(b->qp, &wr, NULL), 0);
}

/* b's Read of INV_SIZE into a fast-reg MR at SINK_OFF (key *key), posted
 * (guards around the sink). */
static struct iw_mr *fast_read(struct pair *p, uint32_t *key)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	struct iw_mr *mr = iw_alloc_mr(p->pd, 1);
	ck_assert_ptr_nonnull(mr);
	*key = iw_inc_rkey(mr->rkey);
	reg_fast(p, mr, *key, b->buf + SINK_OFF, INV_SIZE, 49);
	settle(p);
	expect_wc(b, 49, IW_WC_SUCCESS);
	memset(b->buf + SINK_AREA, GUARD, 4096 + INV_SIZE + 4096);
	fill(a->buf, INV_SIZE, 21);
	struct iw_sge sg = {(uintptr_t)(b->buf + SINK_OFF), INV_SIZE, *key};
	struct iw_send_wr wr = {.wr_id = 20, .sg_list = &sg, .num_sge = 1,
				.opcode = IW_WR_RDMA_READ};
	wr.wr.rdma.remote_addr = (uintptr_t)a->buf;
	wr.wr.rdma.rkey = a->mr->rkey;
	ck_assert_int_eq(iw_post_send(b->qp, &wr, NULL), 0);
	return mr;
}

/* fast_read, and a's response on a's wire, not delivered yet. */
static struct iw_mr *inv_read(struct pair *p, uint32_t *key)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	struct iw_mr *mr = fast_read(p, key);
	act(p, b);
	deliver(p, b, a);
	act(p, a);
	ck_assert_uint_gt(a->wire.len, INV_SIZE);
	return mr;
}

/* The LOCAL_INV of the sink, posted at b's read number `at`: between two
 * reads, or (mid) while one is under way, its guesses in the sink. */
struct inv {
	struct side *b;
	uint32_t key;
	int at, reads;
	uint32_t idx;
	bool posted;
};

static void inv_post(struct inv *v)
{
	local_inv(v->b, v->key, 50);
	v->idx = v->b->qp->sq_tail - 1;
	v->posted = true;
}

static void inv_mid(void *arg)
{
	struct inv *v = arg;
	if (v->reads++ == v->at)
		inv_post(v);
}

/* Has the LOCAL_INV completed (done, or retired from the ring)? */
static bool inv_over(const struct inv *v)
{
	struct iw_qp *qp = v->b->qp;
	iw_qp_lock(qp);
	bool over = (int32_t)(v->idx - qp->sq_head) < 0 ||
		    qp->sq[iw_qp_slot(v->idx, qp->sq_size)].done;
	iw_qp_unlock(qp);
	return v->posted && over;
}

/* The Read's completion, then the LOCAL_INV's: the Read succeeded only
 * with all its octets in the sink. */
static void inv_completions(struct side *a, struct side *b)
{
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(b->cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 20);
	if (wc.status == IW_WC_SUCCESS)
		ck_assert_mem_eq(b->buf + SINK_OFF, a->buf, INV_SIZE);
	ck_assert_int_eq(iw_poll_cq(b->cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 50);
	ck_assert(wc.status == IW_WC_SUCCESS || wc.status == IW_WC_WR_FLUSH_ERR);
}

/* The sink's MR is invalidated (LOCAL_INV) while its Read Response is
 * read ahead, at each of the response's reads, between two reads or
 * while one is under way: once the LOCAL_INV has completed, not one octet
 * of the sink or around it changes; the Read fails or succeeds, the QP
 * never crashes (make check under ASan: no invalid access). */
START_TEST(test_spec_invalidate)
{
	bool mid = _i >= INV_READS;
	struct pair p;
	spec_pair(&p, true, false);
	struct side *a = &p.s[0], *b = &p.s[1];
	uint32_t key;
	struct iw_mr *mr = inv_read(&p, &key);
	struct inv v = {.b = b, .key = key, .at = _i % INV_READS};
	if (mid) {
		b->rs.mid_read = inv_mid;
		b->rs.mid_arg = &v;
	}
	size_t area = 4096 + INV_SIZE + 4096, off = 0;
	uint8_t *snap = NULL, *sink_area = b->buf + SINK_AREA;
	struct bytes w = a->wire;
	a->wire = (struct bytes){0};
	for (int reads = 0; off < w.len; reads++) {
		size_t len = w.len - off < INV_LIM ? w.len - off : INV_LIM;
		long n = conn_read(&b->c, b->bounce, BOUNCE, w.p + off, len, &b->pending, &b->rs);
		ck_assert_int_ge(n, 0);
		if (!n)
			break;
		off += (size_t)n;
		if (!mid && reads == v.at)
			inv_post(&v);
		act(&p, b);
		if (!snap && inv_over(&v)) {
			snap = malloc(area);
			memcpy(snap, sink_area, area);
		}
	}
	free(w.p);
	ck_assert(v.posted); /* while the response was being read */
	settle(&p);
	ck_assert_msg(snap, "the LOCAL_INV never completed");
	ck_assert_mem_eq(sink_area, snap, area);
	guard_intact(sink_area, 4096);
	guard_intact(sink_area + 4096 + INV_SIZE, 4096);
	inv_completions(a, b);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	/* a cuts evenly: no guess was wrong, and once the QP failed nothing
	 * was copied out of the guessed places (they are the application's
	 * again when the Read has completed). */
	ck_assert_uint_eq(b->c.rx_spec_missed, 0);
	free(snap);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	pair_free(&p);
}
END_TEST

static void dereg_busy(void *arg)
{
	struct side *b = arg;
	ck_assert_int_eq(iw_dereg_mr(b->mr), EBUSY);
}

/* Deregistering the MR of a receive being filled, or of a Read's sink,
 * while the message is read ahead (during each read): refused, EBUSY,
 * and the message arrives whole. */
START_TEST(test_spec_dereg_busy)
{
	struct pair p;
	spec_pair(&p, true, false);
	struct side *b = &p.s[1];
	b->rs.mid_read = dereg_busy;
	b->rs.mid_arg = b;
	spec_move(&p, _i, INV_SIZE, 4);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	b->rs.mid_read = NULL;
	pair_free(&p);
}
END_TEST

/* The application shrinks the sink's registration under an outstanding
 * Read (LOCAL_INV, then REG_MR again with the same key, 100,000 of the
 * 131,072 octets): the guesses end at the region's end although the sink
 * goes on, nothing lands past it, and the segment crossing it is refused
 * (DDP base and bounds). */
START_TEST(test_spec_mr_bound)
{
	struct pair p;
	spec_pair(&p, true, false);
	struct side *b = &p.s[1];
	size_t b_mpa = b->c.hs.tx_len;
	uint32_t key, small = 100000;
	struct iw_mr *mr = fast_read(&p, &key);
	act(&p, b);
	local_inv(b, key, 51);
	reg_fast(&p, mr, key, b->buf + SINK_OFF, small, 52);
	settle(&p);
	struct decoded d = decode(b, b_mpa, true);
	ck_assert_int_eq(d.terms, 1);
	ck_assert_uint_eq(d.term, IW_TERM_DDP_T_BASE_BOUNDS);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	ck_assert_ptr_eq(b->rs.guess_end, b->buf + SINK_OFF + small);
	guard_intact(b->buf + SINK_AREA, 4096);
	guard_intact(b->buf + SINK_OFF + small, INV_SIZE - small + 4096);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	pair_free(&p);
}
END_TEST

/* An RDMA Write's segments at offset off.. of b's region at stag. */
static void write_segs(struct pair *p, uint32_t stag, uint64_t to, const uint8_t *src,
		       uint32_t len, uint32_t total)
{
	for (uint32_t off = 0; off < len; off += SEG) {
		uint32_t n = len - off < SEG ? len - off : SEG;
		put_tagged(&p->s[0], IW_OP_WRITE, stag, to + off, src + off, n, off + n == total);
	}
}

/* A type 1 window over [W_OFF, W_OFF + W_LEN) of a region that goes on
 * after it: a large RDMA Write into the window is never read ahead (a
 * Write's end is unknown), lands whole; a hostile one running 100 octets
 * past the window's end is refused (DDP base and bounds) and nothing
 * lands after the window, although the MR would allow it. */
START_TEST(test_spec_window)
{
	struct pair p;
	spec_pair(&p, true, false);
	struct side *a = &p.s[0], *b = &p.s[1];
	size_t b_mpa = b->c.hs.tx_len;
	uint8_t *w = malloc(W_MEM);
	ck_assert_ptr_nonnull(w);
	memset(w, GUARD, W_MEM);
	struct iw_mr *mr = iw_reg_mr(p.pd, w, W_MEM, IW_ACCESS_LOCAL_WRITE |
				     IW_ACCESS_REMOTE_WRITE | IW_ACCESS_MW_BIND);
	struct iw_mw *mw = iw_alloc_mw(p.pd, IW_MW_TYPE_1);
	ck_assert_ptr_nonnull(mr);
	ck_assert_ptr_nonnull(mw);
	struct iw_mw_bind bind = {.wr_id = 60, .send_flags = IW_SEND_SIGNALED,
				  .bind_info = {mr, (uintptr_t)(w + W_OFF), W_LEN,
						IW_ACCESS_REMOTE_WRITE}};
	ck_assert_int_eq(iw_bind_mw(b->qp, mw, &bind), 0);
	settle(&p);
	expect_wc(b, 60, IW_WC_SUCCESS);
	fill(a->buf, W_LEN + 100, 31);
	b->rs = (struct conn_read_stats){0};
	write_segs(&p, mw->rkey, (uintptr_t)(w + W_OFF), a->buf, W_LEN, W_LEN);
	settle(&p);
	ck_assert_mem_eq(w + W_OFF, a->buf, W_LEN);
	ck_assert_uint_eq(b->rs.spec_reads, 0);
	write_segs(&p, mw->rkey, (uintptr_t)(w + W_OFF), a->buf, W_LEN + 100, W_LEN + 100);
	settle(&p);
	struct decoded d = decode(b, b_mpa, true);
	ck_assert_int_eq(d.terms, 1);
	ck_assert_uint_eq(d.term, IW_TERM_DDP_T_BASE_BOUNDS);
	guard_intact(w, W_OFF);
	guard_intact(w + W_OFF + W_LEN, W_MEM - W_OFF - W_LEN);
	ck_assert_int_eq(iw_dealloc_mw(mw), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	free(w);
	pair_free(&p);
}
END_TEST

/* ----------------------------------------- a Write's or a Send's short tail */

#define TW_SEG 40000 /* longer than the bounce buffer's reads */
#define TW_LEN (3 * TW_SEG + 300) /* ends in a 300-octet segment */
#define TW_STRIDE 131072
#define TW_EQ 5 /* equal messages after the first */
/* A Send's receive: longer than any of them, so that read-ahead guesses
 * a whole segment where the tail comes (octets past byte_len inside it
 * are the receive's to overwrite). */
#define TW_RECV (TW_LEN + 4096)

/* The messages are Sends (the next one's MSN) or Writes. */
static struct {
	bool send;
	uint32_t msn;
} tw;

/* A message of len octets from a's buffer at src_off, cut every TW_SEG
 * octets, into b's sink area at slot k (a Send: into a receive posted
 * there). */
static void tail_write(struct pair *p, unsigned k, size_t src_off, uint32_t len)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	uint64_t to = (uintptr_t)(b->buf + SINK_OFF + (size_t)k * TW_STRIDE);
	if (tw.send)
		post_recv(b, 100 + k, SINK_OFF + (size_t)k * TW_STRIDE, TW_RECV);
	for (uint32_t off = 0; off < len; off += TW_SEG) {
		uint32_t n = len - off < TW_SEG ? len - off : TW_SEG;
		const uint8_t *src = a->buf + src_off + off;
		if (tw.send)
			put_send(a, tw.msn, off, src, n, off + n == len);
		else
			put_tagged(a, IW_OP_WRITE, b->mr->rkey, to + off, src, n, off + n == len);
	}
	tw.msn++;
}

static void tail_check(struct pair *p, unsigned k, size_t src_off, uint32_t len)
{
	const uint8_t *at = p->s[1].buf + SINK_OFF + (size_t)k * TW_STRIDE;
	size_t own = tw.send ? TW_RECV : len;
	if (tw.send)
		expect_recv(&p->s[1], 100 + k, len);
	ck_assert_mem_eq(at, p->s[0].buf + src_off, len);
	guard_intact(at + own, TW_STRIDE - own);
}

/* Equal Writes, or Sends, whose last segment is short (a peer cutting at
 * its MULPDU): once one message has shown the length, the read that takes
 * a message's next-to-last payload takes the tail, its trailer and the
 * next header too: one read per segment but the tail, where each tail
 * cost a read of its own. Then messages that break the pattern (a longer
 * tail, a shorter one, no tail at all; after the Writes a Send), CRC on
 * and off: the guessed read only goes to the bounce buffer, so every
 * octet still lands where its own header says, and nothing else moves. */
START_TEST(test_spec_msg_tail)
{
	bool crc = _i & 1;
	struct pair p;
	spec_pair(&p, crc, false);
	struct side *a = &p.s[0], *b = &p.s[1];
	tw.send = _i & 2;
	tw.msn = b->qp->rx_msn[IW_QN_SEND];
	size_t b_mpa = b->c.hs.tx_len;
	/* Reads no longer than a segment and its neighbours' headers: a
	 * read between messages takes no whole Write into the bounce. */
	p.mp.read_lim = TW_SEG + 1000;
	memset(b->buf + SINK_OFF, GUARD, (TW_EQ + 8) * TW_STRIDE);
	fill(a->buf, 4 * TW_LEN, 41 + (unsigned)_i);
	tail_write(&p, 0, 0, TW_LEN);
	settle(&p);
	b->rs = (struct conn_read_stats){0};
	for (unsigned k = 1; k <= TW_EQ; k++)
		tail_write(&p, k, (size_t)k * 100, TW_LEN);
	settle(&p);
	/* 3 reads a Write (the first read before a header); 4 when each
	 * tail took a read of its own. */
	ck_assert_uint_le(b->rs.reads, TW_EQ * 3 + 1);
	for (unsigned k = 0; k <= TW_EQ; k++)
		tail_check(&p, k, (size_t)k * 100, TW_LEN);
	/* The pattern broken (and once resumed), then a Send. */
	static const uint32_t odd[] = {TW_LEN + 500, 3 * TW_SEG + 20, 3 * TW_SEG, 2 * TW_SEG + 7,
				       TW_LEN, 3 * TW_SEG + 1500};
	unsigned n = sizeof(odd) / sizeof(odd[0]);
	for (unsigned k = 0; k < n; k++)
		tail_write(&p, TW_EQ + 1 + k, 1000 + k, odd[k]);
	if (!tw.send) {
		/* a's engine sends its first Send (MSN 1): not after Sends
		 * built here. */
		post_recv(b, 30, SINK_OFF + (TW_EQ + 7) * TW_STRIDE, TW_STRIDE);
		post(a, 31, IW_WR_SEND, 3000, 2000, 0, 0);
	}
	settle(&p);
	for (unsigned k = 0; k < n; k++)
		tail_check(&p, TW_EQ + 1 + k, 1000 + k, odd[k]);
	if (!tw.send) {
		expect_wc(a, 31, IW_WC_SUCCESS);
		expect_recv(b, 30, 2000);
		ck_assert_mem_eq(b->buf + SINK_OFF + (TW_EQ + 7) * TW_STRIDE, a->buf + 3000, 2000);
	}
	ck_assert_int_eq(decode(b, b_mpa, crc).terms, 0);
	pair_free(&p);
}
END_TEST

Suite *suite_conn_spec(void)
{
	Suite *s = suite_create("conn_spec");
	TCase *tc = tcase_create("conn_spec");
	tcase_add_loop_test(tc, test_spec_irregular, 0, 8);
	tcase_add_loop_test(tc, test_spec_longer_seg, 0, 4);
	tcase_add_loop_test(tc, test_spec_all_hit, 0, 2);
	tcase_add_loop_test(tc, test_spec_interleave, 0, 8);
	tcase_add_loop_test(tc, test_spec_write_into_recv, 0, 16);
	tcase_add_loop_test(tc, test_spec_invalidate, 0, 2 * INV_READS);
	tcase_add_loop_test(tc, test_spec_dereg_busy, 0, 2);
	tcase_add_test(tc, test_spec_mr_bound);
	tcase_add_test(tc, test_spec_window);
	tcase_add_loop_test(tc, test_spec_msg_tail, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}
