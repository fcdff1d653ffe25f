/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-replay's TCP reassembly (tools/replay/reasm.c): segments that wait
 * behind a hole, in and out of order, overlapping and retransmitted, and
 * what it costs to queue them.
 */
#include <stdlib.h>
#include <string.h>

#include "reasm.h"
#include "suites.h"

#define ISN 1000u
#define STREAM (1u << 19)

/* What came out: the stream as delivered, gaps as zero octets. */
struct out {
	uint8_t *buf;
	uint64_t next, gaps, gap_bytes;
};

static uint8_t sent[STREAM];

static void on_deliver(void *ctx, const struct rp_chunk *c)
{
	struct out *o = ctx;

	ck_assert_uint_eq(c->rel, o->next);
	ck_assert_uint_le(c->rel + c->len, STREAM);
	memcpy(o->buf + c->rel, c->data, c->len);
	o->next += c->len;
}

static void on_gap(void *ctx, uint64_t from, uint64_t to, uint64_t frame)
{
	struct out *o = ctx;

	(void)frame;
	ck_assert_uint_eq(from, o->next);
	o->gaps++;
	o->gap_bytes += to - from;
	o->next = to;
}

static const struct rp_reasm_ops ops = {on_deliver, on_gap};

static void start(struct rp_reasm *r, struct out *o)
{
	for (size_t i = 0; i < STREAM; i++)
		sent[i] = (uint8_t)(i * 7 + i / 251);
	memset(o, 0, sizeof(*o));
	o->buf = calloc(1, STREAM);
	ck_assert_ptr_nonnull(o->buf);
	rp_reasm_init(r, &ops, o);
	rp_reasm_syn(r, ISN);
}

/* Stream octets [rel, rel + n), from data (sent[] when NULL). */
static void seg(struct rp_reasm *r, uint64_t rel, uint32_t n, const uint8_t *data)
{
	struct rp_pkt p = {.frame = 1, .seq = ISN + 1 + (uint32_t)rel, .len = n};

	p.payload = data ? data : sent + rel;
	rp_reasm_segment(r, &p);
}

/* A capture that lost one segment: the 10,000 that follow wait behind the
 * hole, in order, until the end. Queuing each of them looks at a few
 * waiting ones, not at all of them (it did: 5 * 10^7 steps, quadratic in
 * the connection's length). */
START_TEST(in_order_behind_a_hole_is_linear)
{
	struct rp_reasm r;
	struct out o;
	const uint32_t mss = 40, n = 10000;

	start(&r, &o);
	for (uint32_t i = 1; i <= n; i++)
		seg(&r, (uint64_t)i * mss, mss, NULL);
	ck_assert_uint_eq(r.q_bytes, (uint64_t)n * mss);
	ck_assert_uint_le(r.q_steps, 2ull * n);
	rp_reasm_finish(&r);
	ck_assert_uint_eq(o.gaps, 1);
	ck_assert_uint_eq(o.gap_bytes, mss);
	ck_assert_uint_eq(o.next, (uint64_t)(n + 1) * mss);
	ck_assert_mem_eq(o.buf + mss, sent + mss, (size_t)n * mss);
	ck_assert_uint_eq(r.conflicts, 0);
	free(o.buf);
}
END_TEST

/* Not what was sent at [rel, rel + n). */
static const uint8_t *other(uint8_t *buf, uint64_t rel, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)~sent[rel + i];
	return buf;
}

/* Out of order, overlapping and repeated behind a hole: the queue keeps
 * them by position, counts each differing overlap and each copy of what
 * waits, and delivers each octet once, in order. */
START_TEST(out_of_order_overlaps)
{
	struct rp_reasm r;
	struct out o;
	uint8_t x[50], y[70];

	start(&r, &o);
	seg(&r, 300, 100, NULL);
	seg(&r, 100, 100, NULL);
	seg(&r, 200, 100, NULL);
	seg(&r, 200, 100, NULL);                    /* a copy of what waits */
	seg(&r, 220, 30, NULL);                     /* inside what waits */
	seg(&r, 250, 50, other(x, 250, 50));        /* inside, and differs */
	seg(&r, 350, 70, other(y, 350, 70));        /* differs from [300, 400) */
	seg(&r, 150, 100, NULL);                    /* overlaps two, agrees */
	ck_assert_uint_eq(r.retrans, 3);
	ck_assert_uint_eq(r.conflicts, 2);
	ck_assert_uint_eq(o.next, 0);
	seg(&r, 0, 100, NULL);
	ck_assert_uint_eq(o.next, 420);
	ck_assert_ptr_null(r.q);
	ck_assert_uint_eq(r.q_bytes, 0);
	ck_assert_mem_eq(o.buf, sent, 400);
	ck_assert_mem_eq(o.buf + 400, y + 50, 20);
	/* Waiting data the stream then passes is a retransmission. */
	seg(&r, 500, 10, NULL);
	seg(&r, 420, 100, NULL);
	ck_assert_uint_eq(o.next, 520);
	ck_assert_uint_eq(r.retrans, 4);
	ck_assert_mem_eq(o.buf + 420, sent + 420, 100);
	rp_reasm_finish(&r);
	ck_assert_uint_eq(o.gaps, 0);
	free(o.buf);
}
END_TEST

/* Descending order: each segment goes first in the queue. */
START_TEST(reverse_order)
{
	struct rp_reasm r;
	struct out o;

	start(&r, &o);
	for (uint64_t rel = 990; rel >= 10; rel -= 10)
		seg(&r, rel, 10, NULL);
	ck_assert_uint_eq(o.next, 0);
	seg(&r, 0, 10, NULL);
	ck_assert_uint_eq(o.next, 1000);
	ck_assert_mem_eq(o.buf, sent, 1000);
	ck_assert_ptr_null(r.q);
	free(o.buf);
}
END_TEST

Suite *suite_reasm(void)
{
	Suite *s = suite_create("reasm");
	TCase *tc = tcase_create("reasm");

	tcase_add_test(tc, in_order_behind_a_hole_is_linear);
	tcase_add_test(tc, out_of_order_overlaps);
	tcase_add_test(tc, reverse_order);
	suite_add_tcase(s, tc);
	return s;
}
