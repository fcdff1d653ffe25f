/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA Request/Reply/Reject codec. The four frames of
 * shared/reference/vectors/mpa_frames.iwv are copied here byte for byte.
 * Inputs are copied into exactly-sized heap buffers (dup) so that a read past
 * the end shows up under AddressSanitizer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "suites.h"

/* ------------------------------------------------------------- vectors */

static const uint8_t vec_req_rev1_crc[] = {
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
	0x40, 0x01, 0x00, 0x00,
};
static const uint8_t vec_req_rev2_p2p[] = {
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
	0x50, 0x02, 0x00, 0x04, 0x80, 0x10, 0xc0, 0x10,
};
static const uint8_t vec_rep_rev2_write_rtr[] = {
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
	0x50, 0x02, 0x00, 0x04, 0x80, 0x10, 0x80, 0x10,
};
static const uint8_t vec_rep_rev1_reject[] = {
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
	0x60, 0x01, 0x00, 0x06, 0x72, 0x65, 0x6a, 0x65, 0x63, 0x74,
};

struct vec {
	const uint8_t *b;
	size_t len;
	enum iw_mpa_kind kind;
};
#define VEC(a, k) {a, sizeof(a), k}
static const struct vec vecs[] = {
	VEC(vec_req_rev1_crc, IW_MPA_REQUEST),
	VEC(vec_req_rev2_p2p, IW_MPA_REQUEST),
	VEC(vec_rep_rev2_write_rtr, IW_MPA_REPLY),
	VEC(vec_rep_rev1_reject, IW_MPA_REPLY),
};
#define NVECS (sizeof(vecs) / sizeof(vecs[0]))

/* ------------------------------------------------------------- helpers */

static uint8_t *dupbuf(const void *p, size_t len)
{
	uint8_t *d = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(d);
	if (len)
		memcpy(d, p, len);
	return d;
}

/* A raw frame header; private data (if any) follows at b + 20. */
static size_t raw(uint8_t *b, const char *key, uint8_t flags, uint8_t rev, uint16_t pd_length)
{
	memcpy(b, key, IW_MPA_KEY_LEN);
	b[16] = flags;
	b[17] = rev;
	b[18] = (uint8_t)(pd_length >> 8);
	b[19] = (uint8_t)pd_length;
	return IW_MPA_FRAME_HDR_LEN;
}

/* Parse an exact-size copy of b[0..len). */
static int parse(struct iw_mpa_frame *f, size_t *out_len, enum iw_wire_err *why,
		 enum iw_mpa_kind kind, const uint8_t *b, size_t len, unsigned flags)
{
	uint8_t *d = dupbuf(b, len);
	int rc = iw_mpa_frame_parse(f, out_len, why, kind, d, len, flags);

	/* pd borrows the buffer: point it back into the caller's copy. */
	if (rc == 0 && f->pd)
		f->pd = b + (f->pd - d);
	free(d);
	return rc;
}

static void expect_err(const uint8_t *b, size_t len, enum iw_mpa_kind kind, unsigned flags,
		       enum iw_wire_err want)
{
	struct iw_mpa_frame f;
	enum iw_wire_err why = IW_WERR_NONE;
	size_t out_len = 99;

	ck_assert_int_eq(parse(&f, &out_len, &why, kind, b, len, flags), -EPROTO);
	ck_assert_int_eq(why, want);
	ck_assert_uint_eq(iw_wire_err_term(why), IW_TERM_LLP_BAD_FRAME);
	ck_assert_ptr_null(f.pd);
	ck_assert_uint_eq(f.pd_len, 0);
}

static void frame_eq(const struct iw_mpa_frame *a, const struct iw_mpa_frame *b)
{
	ck_assert_int_eq(a->kind, b->kind);
	ck_assert_uint_eq(a->rev, b->rev);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_int_eq(a->p2p, b->p2p);
	ck_assert_uint_eq(a->rtr, b->rtr);
	ck_assert_uint_eq(a->ird, b->ird);
	ck_assert_uint_eq(a->ord, b->ord);
	ck_assert_uint_eq(a->pd_len, b->pd_len);
	if (a->pd_len)
		ck_assert_mem_eq(a->pd, b->pd, a->pd_len);
	else
		ck_assert(a->pd == NULL && b->pd == NULL);
}

/* build(f) must succeed, then parse back to f, then build to the same bytes. */
static size_t round_trip(const struct iw_mpa_frame *f, uint8_t *out, size_t cap, size_t pd_cap)
{
	struct iw_mpa_frame g;
	size_t out_len = 0;
	enum iw_wire_err why = IW_WERR_MPA_KEY;
	uint8_t again[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	int n = iw_mpa_frame_build(out, cap, f, pd_cap);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(parse(&g, &out_len, &why, f->kind, out, (size_t)n, IW_MPA_PARSE_COMPLETE), 0);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(out_len, (size_t)n);
	frame_eq(f, &g);
	ck_assert_int_eq(iw_mpa_frame_build(again, sizeof(again), &g, pd_cap), n);
	ck_assert_mem_eq(again, out, (size_t)n);
	return (size_t)n;
}

/* Tiny deterministic PRNG (xorshift32) for the randomized round trips. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint8_t pdbuf[IW_MPA_PD_MAX + 16];

static void fill_pd(void)
{
	for (size_t i = 0; i < sizeof(pdbuf); i++)
		pdbuf[i] = (uint8_t)(i * 7 + 3);
}

/* ------------------------------------------------------------- vectors */

START_TEST(vec_request_rev1_crc)
{
	struct iw_mpa_frame f;
	size_t out_len = 0;
	enum iw_wire_err why = IW_WERR_MPA_KEY;
	uint8_t out[64];

	ck_assert_int_eq(parse(&f, &out_len, &why, IW_MPA_REQUEST, vec_req_rev1_crc,
			       sizeof(vec_req_rev1_crc), IW_MPA_PARSE_STRICT), 0);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(out_len, 20);
	ck_assert_int_eq(f.kind, IW_MPA_REQUEST);
	ck_assert_uint_eq(f.rev, 1);
	ck_assert_uint_eq(f.flags, IW_MPA_FLAG_C);
	ck_assert(!iw_mpa_frame_enhanced(&f));
	ck_assert(!f.p2p && f.rtr == 0 && f.ird == 0 && f.ord == 0);
	ck_assert_ptr_null(f.pd);
	ck_assert_uint_eq(f.pd_len, 0);

	struct iw_mpa_frame b = {.kind = IW_MPA_REQUEST, .rev = 1, .flags = IW_MPA_FLAG_C};
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &b, 0), 20);
	ck_assert_mem_eq(out, vec_req_rev1_crc, 20);
}
END_TEST

START_TEST(vec_request_rev2_p2p)
{
	struct iw_mpa_frame f;
	size_t out_len = 0;
	enum iw_wire_err why = IW_WERR_MPA_KEY;
	uint8_t out[64];

	ck_assert_int_eq(parse(&f, &out_len, &why, IW_MPA_REQUEST, vec_req_rev2_p2p,
			       sizeof(vec_req_rev2_p2p), IW_MPA_PARSE_STRICT), 0);
	ck_assert_uint_eq(out_len, 24);
	ck_assert_uint_eq(f.rev, 2);
	ck_assert_uint_eq(f.flags, IW_MPA_FLAG_C | IW_MPA_FLAG_ENHANCED);
	ck_assert(iw_mpa_frame_enhanced(&f));
	ck_assert(f.p2p);
	ck_assert_uint_eq(f.rtr, IW_RTR_WRITE | IW_RTR_READ);
	ck_assert_uint_eq(f.ird, 16);
	ck_assert_uint_eq(f.ord, 16);
	ck_assert_ptr_null(f.pd);
	ck_assert_uint_eq(f.pd_len, 0);

	struct iw_mpa_frame b = {.kind = IW_MPA_REQUEST, .rev = 2,
				 .flags = IW_MPA_FLAG_C | IW_MPA_FLAG_ENHANCED, .p2p = true,
				 .rtr = IW_RTR_WRITE | IW_RTR_READ, .ird = 16, .ord = 16};
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &b, 0), 24);
	ck_assert_mem_eq(out, vec_req_rev2_p2p, 24);
}
END_TEST

START_TEST(vec_reply_rev2_write_rtr)
{
	struct iw_mpa_frame f;
	size_t out_len = 0;
	uint8_t out[64];

	ck_assert_int_eq(parse(&f, &out_len, NULL, IW_MPA_REPLY, vec_rep_rev2_write_rtr,
			       sizeof(vec_rep_rev2_write_rtr), IW_MPA_PARSE_STRICT), 0);
	ck_assert_uint_eq(out_len, 24);
	ck_assert_int_eq(f.kind, IW_MPA_REPLY);
	ck_assert(f.p2p);
	ck_assert_uint_eq(f.rtr, IW_RTR_WRITE);
	ck_assert_uint_eq(f.ird, 16);
	ck_assert_uint_eq(f.ord, 16);
	ck_assert_uint_eq(f.pd_len, 0);
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), 24);
	ck_assert_mem_eq(out, vec_rep_rev2_write_rtr, 24);
}
END_TEST

START_TEST(vec_reply_rev1_reject)
{
	struct iw_mpa_frame f;
	size_t out_len = 0;
	uint8_t out[64];

	ck_assert_int_eq(parse(&f, &out_len, NULL, IW_MPA_REPLY, vec_rep_rev1_reject,
			       sizeof(vec_rep_rev1_reject), IW_MPA_PARSE_STRICT), 0);
	ck_assert_uint_eq(out_len, 26);
	ck_assert_uint_eq(f.rev, 1);
	ck_assert_uint_eq(f.flags, IW_MPA_FLAG_C | IW_MPA_FLAG_R);
	ck_assert_uint_eq(f.pd_len, 6);
	ck_assert_mem_eq(f.pd, "reject", 6);
	ck_assert_ptr_eq(f.pd, vec_rep_rev1_reject + 20);

	struct iw_mpa_frame b = {.kind = IW_MPA_REPLY, .rev = 1,
				 .flags = IW_MPA_FLAG_C | IW_MPA_FLAG_R,
				 .pd = (const uint8_t *)"reject", .pd_len = 6};
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &b, 0), 26);
	ck_assert_mem_eq(out, vec_rep_rev1_reject, 26);
}
END_TEST

/* A vector is of one kind: parsed as the other kind its key is wrong. */
START_TEST(vec_wrong_kind)
{
	for (size_t i = 0; i < NVECS; i++) {
		enum iw_mpa_kind other =
			vecs[i].kind == IW_MPA_REQUEST ? IW_MPA_REPLY : IW_MPA_REQUEST;
		expect_err(vecs[i].b, vecs[i].len, other, 0, IW_WERR_MPA_KEY);
	}
}
END_TEST

/* ---------------------------------------------------- flags and blocks */

START_TEST(flags_all_combinations)
{
	static const uint8_t bits[] = {IW_MPA_FLAG_M, IW_MPA_FLAG_C, IW_MPA_FLAG_R,
				       IW_MPA_FLAG_ENHANCED};
	uint8_t out[64];

	for (int rev = 1; rev <= 2; rev++)
	for (int kind = IW_MPA_REQUEST; kind <= IW_MPA_REPLY; kind++)
	for (unsigned m = 0; m < 16; m++) {
		struct iw_mpa_frame f = {.kind = kind, .rev = (uint8_t)rev};
		for (int i = 0; i < 4; i++)
			if (m & (1u << i))
				f.flags |= bits[i];
		bool enh = rev == 2 && (f.flags & IW_MPA_FLAG_ENHANCED);
		if (enh) {
			f.ird = 3;
			f.ord = 5;
		}
		size_t n = round_trip(&f, out, sizeof(out), 0);
		ck_assert_uint_eq(n, enh ? 24u : 20u);
		ck_assert_uint_eq(out[16], f.flags);
		ck_assert_uint_eq(out[17], rev);
		ck_assert_uint_eq(out[19], enh ? 4 : 0);
		ck_assert_mem_eq(out, kind == IW_MPA_REQUEST ? IW_MPA_KEY_REQ : IW_MPA_KEY_REP, 16);

		/* Strict: ENHANCED is reserved in Rev 1; R is refused in a Request. */
		struct iw_mpa_frame g;
		enum iw_wire_err why = IW_WERR_NONE;
		int rc = parse(&g, NULL, &why, kind, out, n, IW_MPA_PARSE_STRICT);
		if (rev == 1 && (f.flags & IW_MPA_FLAG_ENHANCED)) {
			ck_assert_int_eq(rc, -EPROTO);
			ck_assert_int_eq(why, IW_WERR_MPA_RESERVED);
		} else if (kind == IW_MPA_REQUEST && (f.flags & IW_MPA_FLAG_R)) {
			ck_assert_int_eq(rc, -EPROTO);
			ck_assert_int_eq(why, IW_WERR_MPA_REJECT_REQ);
		} else {
			ck_assert_int_eq(rc, 0);
			ck_assert_uint_eq(g.flags, f.flags);
		}
	}
}
END_TEST

START_TEST(block_all_control_flags)
{
	static const uint16_t vals[] = {0, 1, 16, 0x2AAA, 0x1555, 0x3FFE, IW_MPA_IRD_ORD_MAX};
	uint8_t out[64];

	for (unsigned m = 0; m < 16; m++)
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
	for (size_t j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
		struct iw_mpa_frame f = {.kind = (m & 1) ? IW_MPA_REPLY : IW_MPA_REQUEST,
					 .rev = 2, .flags = IW_MPA_FLAG_ENHANCED | IW_MPA_FLAG_C,
					 .ird = vals[i], .ord = vals[j]};
		f.p2p = (m & 1) != 0;
		f.rtr = (uint8_t)(((m & 2) ? IW_RTR_SEND : 0) | ((m & 4) ? IW_RTR_WRITE : 0) |
				  ((m & 8) ? IW_RTR_READ : 0));
		ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 0), 24);
		uint16_t ird_w = (uint16_t)(out[20] << 8 | out[21]);
		uint16_t ord_w = (uint16_t)(out[22] << 8 | out[23]);
		ck_assert_uint_eq(ird_w, vals[i] | ((m & 1) ? 0x8000 : 0) | ((m & 2) ? 0x4000 : 0));
		ck_assert_uint_eq(ord_w, vals[j] | ((m & 4) ? 0x8000 : 0) | ((m & 8) ? 0x4000 : 0));
	}
}
END_TEST

START_TEST(block_max_values_all_ones)
{
	uint8_t b[24];
	struct iw_mpa_frame f;

	raw(b, IW_MPA_KEY_REP, IW_MPA_FLAG_ENHANCED, 2, 4);
	memset(b + 20, 0xff, 4);
	ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REPLY, b, sizeof(b), IW_MPA_PARSE_STRICT), 0);
	ck_assert(f.p2p);
	ck_assert_uint_eq(f.rtr, IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ);
	ck_assert_uint_eq(f.ird, 0x3FFF);
	ck_assert_uint_eq(f.ord, 0x3FFF);

	memset(b + 20, 0x3f, 4); /* flags clear, IRD/ORD 0x3F3F */
	ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REPLY, b, sizeof(b), 0), 0);
	ck_assert(!f.p2p);
	ck_assert_uint_eq(f.rtr, 0);
	ck_assert_uint_eq(f.ird, 0x3F3F);
	ck_assert_uint_eq(f.ord, 0x3F3F);
}
END_TEST

/* Rev 2 without ENHANCED carries no block: all private data is the ULP's. */
START_TEST(rev2_not_enhanced_has_no_block)
{
	uint8_t b[28];
	struct iw_mpa_frame f;

	raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_C, 2, 8);
	memcpy(b + 20, "\x80\x10\xc0\x10\x01\x02\x03\x04", 8);
	ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REQUEST, b, sizeof(b), IW_MPA_PARSE_STRICT), 0);
	ck_assert(!f.p2p && f.rtr == 0 && f.ird == 0 && f.ord == 0);
	ck_assert_uint_eq(f.pd_len, 8);
	ck_assert_ptr_eq(f.pd, b + 20);
}
END_TEST

/* Rev 1 with 0x10: just a reserved bit. Lenient keeps it and reads no block. */
START_TEST(rev1_enhanced_bit_is_reserved)
{
	uint8_t b[24];
	struct iw_mpa_frame f;
	enum iw_wire_err why;

	raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_C | IW_MPA_FLAG_ENHANCED, 1, 4);
	memcpy(b + 20, "\x80\x10\xc0\x10", 4);
	ck_assert_int_eq(parse(&f, NULL, &why, IW_MPA_REQUEST, b, sizeof(b), 0), 0);
	ck_assert_uint_eq(f.flags, IW_MPA_FLAG_C | IW_MPA_FLAG_ENHANCED);
	ck_assert(!iw_mpa_frame_enhanced(&f));
	ck_assert(!f.p2p && f.rtr == 0 && f.ird == 0 && f.ord == 0);
	ck_assert_uint_eq(f.pd_len, 4);
	ck_assert_ptr_eq(f.pd, b + 20);
	/* Nor is a short PD an enhanced-short error in Rev 1. */
	raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_ENHANCED, 1, 0);
	ck_assert_int_eq(parse(&f, NULL, &why, IW_MPA_REQUEST, b, 20, 0), 0);
	expect_err(b, 20, IW_MPA_REQUEST, IW_MPA_PARSE_STRICT, IW_WERR_MPA_RESERVED);
}
END_TEST

START_TEST(reserved_bits_strict_vs_lenient)
{
	uint8_t b[24];
	struct iw_mpa_frame f;

	for (int rev = 1; rev <= 2; rev++)
	for (unsigned bit = 1; bit <= 8; bit <<= 1) {
		uint8_t flags = (uint8_t)(IW_MPA_FLAG_M | bit);
		raw(b, IW_MPA_KEY_REP, flags, (uint8_t)rev, 0);
		ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REPLY, b, 20, 0), 0);
		ck_assert_uint_eq(f.flags, flags);
		expect_err(b, 20, IW_MPA_REPLY, IW_MPA_PARSE_STRICT, IW_WERR_MPA_RESERVED);
	}
	/* Reserved bits in an enhanced Rev 2 frame: the block is still read. */
	raw(b, IW_MPA_KEY_REP, IW_MPA_FLAG_ENHANCED | 0x0F, 2, 4);
	memcpy(b + 20, "\x00\x07\x80\x09", 4);
	ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REPLY, b, 24, 0), 0);
	ck_assert_uint_eq(f.flags, 0x1F);
	ck_assert_uint_eq(f.ird, 7);
	ck_assert_uint_eq(f.ord, 9);
	ck_assert_uint_eq(f.rtr, IW_RTR_WRITE);
	expect_err(b, 24, IW_MPA_REPLY, IW_MPA_PARSE_STRICT, IW_WERR_MPA_RESERVED);
}
END_TEST

START_TEST(reject_flag_in_request)
{
	uint8_t b[20];
	struct iw_mpa_frame f;

	raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_R | IW_MPA_FLAG_C, 1, 0);
	ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REQUEST, b, 20, 0), 0);
	ck_assert_uint_eq(f.flags, IW_MPA_FLAG_R | IW_MPA_FLAG_C);
	expect_err(b, 20, IW_MPA_REQUEST, IW_MPA_PARSE_STRICT, IW_WERR_MPA_REJECT_REQ);
	/* In a Reply R is the Reject, valid under strict parsing. */
	raw(b, IW_MPA_KEY_REP, IW_MPA_FLAG_R | IW_MPA_FLAG_C, 1, 0);
	ck_assert_int_eq(parse(&f, NULL, NULL, IW_MPA_REPLY, b, 20, IW_MPA_PARSE_STRICT), 0);
	ck_assert_uint_eq(f.flags & IW_MPA_FLAG_R, IW_MPA_FLAG_R);
}
END_TEST

/* A Reject may be enhanced too: the block comes before the ULP's reason. */
START_TEST(enhanced_reject_with_pd)
{
	uint8_t out[64];
	struct iw_mpa_frame f = {.kind = IW_MPA_REPLY, .rev = 2,
				 .flags = IW_MPA_FLAG_R | IW_MPA_FLAG_ENHANCED | IW_MPA_FLAG_C,
				 .p2p = true, .ird = 1, .ord = 2,
				 .pd = (const uint8_t *)"no", .pd_len = 2};

	ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 0), 26);
	ck_assert_uint_eq(out[19], 6);
	ck_assert_mem_eq(out + 20, "\x80\x01\x00\x02no", 6);
}
END_TEST

/* ------------------------------------------------------- private data */

START_TEST(pd_sizes)
{
	static const uint16_t sizes[] = {0, 1, 2, 3, 4, 5, 252, 256, 508};
	uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];

	fill_pd();
	for (int enh = 0; enh <= 1; enh++)
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct iw_mpa_frame f = {.kind = IW_MPA_REQUEST, .rev = enh ? 2 : 1,
					 .flags = enh ? IW_MPA_FLAG_ENHANCED : 0,
					 .ird = 1, .ord = 1,
					 .pd = pdbuf, .pd_len = sizes[i]};
		if (!enh)
			f.ird = f.ord = 0;
		if (!sizes[i])
			f.pd = NULL;
		size_t total = sizes[i] + (enh ? 4u : 0u);
		ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 0), 20 + total);
		ck_assert_uint_eq((size_t)(out[18] << 8 | out[19]), total);
		ck_assert_mem_eq(out + 20 + (enh ? 4 : 0), pdbuf, sizes[i]);
	}
}
END_TEST

START_TEST(pd_limit_512)
{
	uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX + 8];
	struct iw_mpa_frame f = {.kind = IW_MPA_REPLY, .rev = 2, .flags = IW_MPA_FLAG_ENHANCED,
				 .pd = pdbuf, .pd_len = 508};

	fill_pd();
	/* 508 + the 4-octet block is exactly 512. */
	ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 0), 532);
	ck_assert_uint_eq(out[18], 0x02);
	ck_assert_uint_eq(out[19], 0x00);
	f.pd_len = 509;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EMSGSIZE);
	/* Rev 1 has no block: 512 fits, 513 does not. */
	f.rev = 1;
	f.flags = 0;
	f.pd_len = 512;
	ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 0), 532);
	f.pd_len = 513;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EMSGSIZE);
	/* A cap above 512 does not lift the wire's limit. */
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 4096), -EMSGSIZE);
}
END_TEST

START_TEST(pd_chelsio_cap_255)
{
	uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	struct iw_mpa_frame f = {.kind = IW_MPA_REQUEST, .rev = 2,
				 .flags = IW_MPA_FLAG_ENHANCED | IW_MPA_FLAG_C,
				 .pd = pdbuf, .pd_len = 251};

	fill_pd();
	ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 255), 275);
	ck_assert_uint_eq(out[19], 255);
	f.pd_len = 252; /* 252 + 4 = 256 > 255 */
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 255), -EMSGSIZE);
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), 276);
	f.rev = 1;
	f.flags = IW_MPA_FLAG_C;
	f.pd_len = 255;
	ck_assert_uint_eq(round_trip(&f, out, sizeof(out), 255), 275);
	f.pd_len = 256;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 255), -EMSGSIZE);
}
END_TEST

START_TEST(parse_pd_length_too_big)
{
	static const uint16_t bad[] = {513, 514, 0x0FFF, 0x8000, 0xFFFF};
	uint8_t b[20];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		raw(b, IW_MPA_KEY_REQ, 0, 1, bad[i]);
		/* Decided from the header alone, before any private data. */
		expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_PD_LEN);
		raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_ENHANCED, 2, bad[i]);
		expect_err(b, 20, IW_MPA_REQUEST, IW_MPA_PARSE_STRICT, IW_WERR_MPA_PD_LEN);
	}
}
END_TEST

START_TEST(parse_pd_length_512_accepted)
{
	uint8_t b[20 + 512];
	struct iw_mpa_frame f;
	size_t out_len;

	fill_pd();
	raw(b, IW_MPA_KEY_REQ, 0, 1, 512);
	memcpy(b + 20, pdbuf, 512);
	ck_assert_int_eq(parse(&f, &out_len, NULL, IW_MPA_REQUEST, b, sizeof(b), 0), 0);
	ck_assert_uint_eq(out_len, 532);
	ck_assert_uint_eq(f.pd_len, 512);
	ck_assert_mem_eq(f.pd, pdbuf, 512);
}
END_TEST

/* ------------------------------------------------------------- errors */

START_TEST(err_key)
{
	uint8_t b[20];

	raw(b, "MPA ID Rep Framf", 0, 1, 0);
	expect_err(b, 20, IW_MPA_REPLY, 0, IW_WERR_MPA_KEY);
	raw(b, "mpa id req frame", 0, 1, 0); /* the key is case-sensitive */
	expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_KEY);
	memset(b, 0, sizeof(b));
	expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_KEY);
	/* 16 octets are enough to tell; 15 are not. */
	raw(b, IW_MPA_KEY_REP, 0, 1, 0);
	expect_err(b, 16, IW_MPA_REQUEST, 0, IW_WERR_MPA_KEY);
	struct iw_mpa_frame f;
	size_t need = 0;
	ck_assert_int_eq(parse(&f, &need, NULL, IW_MPA_REQUEST, b, 15, 0), -EAGAIN);
	ck_assert_uint_eq(need, 20);
}
END_TEST

START_TEST(err_rev)
{
	static const uint8_t bad[] = {0, 3, 4, 0x7F, 0x80, 0xFF};
	uint8_t b[24] = {0};

	for (size_t i = 0; i < sizeof(bad); i++) {
		raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_C, bad[i], 0);
		expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_REV);
		/* Known at octet 18, before PD_Length is in. */
		expect_err(b, 18, IW_MPA_REQUEST, 0, IW_WERR_MPA_REV);
		raw(b, IW_MPA_KEY_REP, IW_MPA_FLAG_ENHANCED, bad[i], 4);
		expect_err(b, 24, IW_MPA_REPLY, IW_MPA_PARSE_STRICT, IW_WERR_MPA_REV);
	}
}
END_TEST

START_TEST(err_enhanced_short)
{
	uint8_t b[24] = {0};

	for (uint16_t n = 0; n < 4; n++) {
		raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_ENHANCED, 2, n);
		expect_err(b, 20 + n, IW_MPA_REQUEST, 0, IW_WERR_MPA_ENH_SHORT);
		/* Decided from the header: no need to wait for the PD octets. */
		expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_ENH_SHORT);
	}
}
END_TEST

/* Checks run in the documented order when a frame has several faults. */
START_TEST(err_order)
{
	uint8_t b[20];

	raw(b, IW_MPA_KEY_REP, 0x2F, 0, 600);
	expect_err(b, 20, IW_MPA_REQUEST, IW_MPA_PARSE_STRICT, IW_WERR_MPA_KEY);
	expect_err(b, 20, IW_MPA_REPLY, IW_MPA_PARSE_STRICT, IW_WERR_MPA_REV);
	raw(b, IW_MPA_KEY_REQ, 0x2F, 2, 600);
	expect_err(b, 20, IW_MPA_REQUEST, IW_MPA_PARSE_STRICT, IW_WERR_MPA_RESERVED);
	expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_PD_LEN);
	raw(b, IW_MPA_KEY_REQ, 0x20, 2, 600);
	expect_err(b, 20, IW_MPA_REQUEST, IW_MPA_PARSE_STRICT, IW_WERR_MPA_REJECT_REQ);
	raw(b, IW_MPA_KEY_REQ, IW_MPA_FLAG_ENHANCED, 2, 600);
	expect_err(b, 20, IW_MPA_REQUEST, 0, IW_WERR_MPA_PD_LEN);
}
END_TEST

/* Every prefix of a bad frame gives -EAGAIN or the full frame's error. */
START_TEST(err_prefix_consistent)
{
	uint8_t b[3][24] = {{0}};
	const enum iw_wire_err want[3] = {IW_WERR_MPA_KEY, IW_WERR_MPA_REV, IW_WERR_MPA_ENH_SHORT};
	const size_t decided[3] = {16, 18, 20};

	raw(b[0], IW_MPA_KEY_REP, 0, 1, 0);
	raw(b[1], IW_MPA_KEY_REQ, 0, 9, 0);
	raw(b[2], IW_MPA_KEY_REQ, IW_MPA_FLAG_ENHANCED, 2, 2);
	for (int k = 0; k < 3; k++)
	for (size_t len = 0; len <= 22; len++) {
		struct iw_mpa_frame f;
		enum iw_wire_err why = IW_WERR_NONE;
		size_t need = 0;
		int rc = parse(&f, &need, &why, IW_MPA_REQUEST, b[k], len, 0);
		if (len < decided[k]) {
			ck_assert_int_eq(rc, -EAGAIN);
			ck_assert_int_eq(why, IW_WERR_NONE);
			ck_assert_uint_eq(need, 20);
		} else {
			ck_assert_int_eq(rc, -EPROTO);
			ck_assert_int_eq(why, want[k]);
		}
	}
}
END_TEST

START_TEST(err_truncated_complete)
{
	for (size_t i = 0; i < NVECS; i++)
	for (size_t len = 0; len < vecs[i].len; len++) {
		struct iw_mpa_frame f;
		enum iw_wire_err why = IW_WERR_NONE;
		size_t need = 0;
		ck_assert_int_eq(parse(&f, &need, &why, vecs[i].kind, vecs[i].b, len,
				       IW_MPA_PARSE_COMPLETE), -EPROTO);
		ck_assert_int_eq(why, IW_WERR_MPA_TRUNCATED);
		ck_assert_uint_eq(iw_wire_err_term(why), IW_TERM_LLP_BAD_FRAME);
		ck_assert_uint_eq(need, len < 20 ? 20 : vecs[i].len);
		ck_assert_ptr_null(f.pd);
	}
}
END_TEST

START_TEST(err_every_reason_is_bad_frame)
{
	static const enum iw_wire_err all[] = {
		IW_WERR_MPA_KEY, IW_WERR_MPA_REV, IW_WERR_MPA_RESERVED, IW_WERR_MPA_PD_LEN,
		IW_WERR_MPA_TRUNCATED, IW_WERR_MPA_ENH_SHORT, IW_WERR_MPA_REJECT_REQ,
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		ck_assert_uint_eq(iw_wire_err_term(all[i]), IW_TERM_LLP_BAD_FRAME);
}
END_TEST

START_TEST(parse_bad_args)
{
	struct iw_mpa_frame f;

	ck_assert_int_eq(iw_mpa_frame_parse(&f, NULL, NULL, 0, vec_req_rev1_crc, 20, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_frame_parse(&f, NULL, NULL, 3, vec_req_rev1_crc, 20, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_frame_parse(NULL, NULL, NULL, IW_MPA_REQUEST, vec_req_rev1_crc,
					    20, 0), -EINVAL);
	/* An empty input is just "need 20". */
	size_t need = 0;
	ck_assert_int_eq(iw_mpa_frame_parse(&f, &need, NULL, IW_MPA_REQUEST, NULL, 0, 0), -EAGAIN);
	ck_assert_uint_eq(need, 20);
}
END_TEST

/* ---------------------------------------------------------- truncation */

START_TEST(truncation_every_prefix)
{
	uint8_t b[20 + 300];
	struct iw_mpa_frame f;
	size_t n;

	fill_pd();
	n = raw(b, IW_MPA_KEY_REP, IW_MPA_FLAG_ENHANCED | IW_MPA_FLAG_M, 2, 300);
	memcpy(b + n, pdbuf, 300);
	for (size_t len = 0; len < sizeof(b); len++) {
		size_t need = 0;
		enum iw_wire_err why = IW_WERR_MPA_KEY;
		ck_assert_int_eq(parse(&f, &need, &why, IW_MPA_REPLY, b, len, 0), -EAGAIN);
		ck_assert_int_eq(why, IW_WERR_NONE);
		ck_assert_uint_eq(need, len < 20 ? 20 : sizeof(b));
		ck_assert_ptr_null(f.pd);
	}
	for (size_t i = 0; i < NVECS; i++)
	for (size_t len = 0; len < vecs[i].len; len++) {
		size_t need = 0;
		ck_assert_int_eq(parse(&f, &need, NULL, vecs[i].kind, vecs[i].b, len,
				       IW_MPA_PARSE_STRICT), -EAGAIN);
		ck_assert_uint_eq(need, len < 20 ? 20 : vecs[i].len);
	}
}
END_TEST

/* Feeding a growing buffer, as a connection manager does, ends in exactly
 * one success at exactly the frame length. */
START_TEST(truncation_incremental_feed)
{
	for (size_t i = 0; i < NVECS; i++) {
		size_t have = 0, need = 1, done = 0;
		struct iw_mpa_frame f;

		while (have <= vecs[i].len) {
			int rc = parse(&f, &need, NULL, vecs[i].kind, vecs[i].b, have, 0);
			if (rc == 0) {
				done = have;
				break;
			}
			ck_assert_int_eq(rc, -EAGAIN);
			ck_assert_uint_gt(need, have);
			have = need;
		}
		ck_assert_uint_eq(done, vecs[i].len);
		ck_assert_uint_eq(need, vecs[i].len);
	}
}
END_TEST

START_TEST(trailing_fpdu_not_consumed)
{
	/* The Reject vector, then the first octets of an FPDU. */
	uint8_t b[sizeof(vec_rep_rev1_reject) + 8];
	static const uint8_t fpdu[8] = {0x00, 0x0e, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00};
	struct iw_mpa_frame f;
	size_t out_len = 0;

	memcpy(b, vec_rep_rev1_reject, sizeof(vec_rep_rev1_reject));
	memcpy(b + sizeof(vec_rep_rev1_reject), fpdu, sizeof(fpdu));
	for (size_t extra = 0; extra <= sizeof(fpdu); extra++) {
		ck_assert_int_eq(parse(&f, &out_len, NULL, IW_MPA_REPLY, b,
				       sizeof(vec_rep_rev1_reject) + extra, IW_MPA_PARSE_COMPLETE), 0);
		ck_assert_uint_eq(out_len, sizeof(vec_rep_rev1_reject));
		ck_assert_uint_eq(f.pd_len, 6);
		ck_assert_ptr_eq(f.pd, b + 20);
	}
	/* Same for an enhanced frame with no ULP private data. */
	uint8_t e[sizeof(vec_req_rev2_p2p) + 8];
	memcpy(e, vec_req_rev2_p2p, sizeof(vec_req_rev2_p2p));
	memcpy(e + sizeof(vec_req_rev2_p2p), fpdu, sizeof(fpdu));
	ck_assert_int_eq(parse(&f, &out_len, NULL, IW_MPA_REQUEST, e, sizeof(e), 0), 0);
	ck_assert_uint_eq(out_len, 24);
	ck_assert_uint_eq(f.pd_len, 0);
	ck_assert_ptr_null(f.pd);
}
END_TEST

/* -------------------------------------------------------------- build */

START_TEST(build_errors)
{
	uint8_t out[64];
	struct iw_mpa_frame ok = {.kind = IW_MPA_REQUEST, .rev = 2, .flags = IW_MPA_FLAG_ENHANCED};
	struct iw_mpa_frame f;

	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &ok, 0), 24);
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), NULL, 0), -EINVAL);
	static const uint8_t badrev[] = {0, 3, 255};
	for (size_t i = 0; i < sizeof(badrev); i++) {
		f = ok;
		f.rev = badrev[i];
		ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	}
	f = ok;
	f.ird = 0x4000;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	f = ok;
	f.ord = 0xFFFF;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	f = ok;
	f.pd_len = 1;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	f = ok;
	f.kind = 0;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	f.kind = 3;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	f = ok;
	f.rtr = 0x08;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), -EINVAL);
	/* Invalid arguments are reported before size problems. */
	f = ok;
	f.rev = 0;
	ck_assert_int_eq(iw_mpa_frame_build(NULL, 0, &f, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_frame_build(NULL, 0, &ok, 0), -ENOSPC);
	/* Over the cap is -EMSGSIZE even when the buffer is also too small. */
	f = ok;
	f.pd = pdbuf;
	f.pd_len = 100;
	ck_assert_int_eq(iw_mpa_frame_build(out, 10, &f, 50), -EMSGSIZE);
	ck_assert_int_eq(iw_mpa_frame_build(out, 10, &f, 0), -ENOSPC);
}
END_TEST

START_TEST(build_cap_exact)
{
	uint8_t out[40];
	struct iw_mpa_frame f = {.kind = IW_MPA_REPLY, .rev = 2, .flags = IW_MPA_FLAG_ENHANCED,
				 .ird = 2, .ord = 3, .pd = (const uint8_t *)"hello", .pd_len = 5};

	for (size_t cap = 0; cap < 29; cap++) {
		memset(out, 0xA5, sizeof(out));
		ck_assert_int_eq(iw_mpa_frame_build(out, cap, &f, 0), -ENOSPC);
		/* Nothing written when it does not fit. */
		for (size_t i = 0; i < sizeof(out); i++)
			ck_assert_uint_eq(out[i], 0xA5);
	}
	memset(out, 0xA5, sizeof(out));
	ck_assert_int_eq(iw_mpa_frame_build(out, 29, &f, 0), 29);
	for (size_t i = 29; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xA5);
	ck_assert_mem_eq(out, IW_MPA_KEY_REP "\x10\x02\x00\x09\x00\x02\x00\x03hello", 29);
}
END_TEST

/* Block fields are not written unless the frame is Rev 2 and enhanced. */
START_TEST(build_block_only_when_enhanced)
{
	uint8_t out[64];
	struct iw_mpa_frame f = {.kind = IW_MPA_REQUEST, .rev = 2, .flags = IW_MPA_FLAG_C,
				 .p2p = true, .rtr = IW_RTR_READ, .ird = 9, .ord = 9,
				 .pd = (const uint8_t *)"ab", .pd_len = 2};

	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), 22);
	ck_assert_mem_eq(out + 16, "\x40\x02\x00\x02" "ab", 6);
	f.rev = 1;
	f.flags = IW_MPA_FLAG_C | IW_MPA_FLAG_ENHANCED;
	ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), 22);
	ck_assert_mem_eq(out + 16, "\x50\x01\x00\x02" "ab", 6);
}
END_TEST

/* ---------------------------------------------------------- properties */

START_TEST(prop_random_frames_round_trip)
{
	uint32_t s = 0x1234567u;
	uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];

	fill_pd();
	for (int it = 0; it < 3000; it++) {
		struct iw_mpa_frame f = {0};
		uint32_t r = rnd(&s);
		f.kind = (r & 1) ? IW_MPA_REQUEST : IW_MPA_REPLY;
		f.rev = (r & 2) ? 2 : 1;
		f.flags = (uint8_t)(r >> 8);
		if (iw_mpa_frame_enhanced(&f)) {
			f.p2p = (r >> 16) & 1;
			f.rtr = (uint8_t)((r >> 17) & 7);
			f.ird = (uint16_t)(rnd(&s) & 0x3FFF);
			f.ord = (uint16_t)(rnd(&s) & 0x3FFF);
		}
		f.pd_len = (uint16_t)(rnd(&s) % (iw_mpa_frame_enhanced(&f) ? 509 : 513));
		f.pd = f.pd_len ? pdbuf + (rnd(&s) % 8) : NULL;
		round_trip(&f, out, sizeof(out), 0);
	}
}
END_TEST

/* build(parse(bytes)) == bytes for any valid frame, strict or not. */
START_TEST(prop_random_bytes_round_trip)
{
	uint32_t s = 0xC0FFEEu;
	uint8_t b[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX], out[sizeof(b)];

	for (int it = 0; it < 3000; it++) {
		uint32_t r = rnd(&s);
		enum iw_mpa_kind kind = (r & 1) ? IW_MPA_REQUEST : IW_MPA_REPLY;
		uint8_t flags = (uint8_t)(r >> 8);
		uint8_t rev = (r & 2) ? 2 : 1;
		bool enh = rev == 2 && (flags & IW_MPA_FLAG_ENHANCED);
		uint16_t pdl = (uint16_t)((enh ? 4 : 0) + rnd(&s) % (enh ? 509 : 513));
		raw(b, kind == IW_MPA_REQUEST ? IW_MPA_KEY_REQ : IW_MPA_KEY_REP, flags, rev, pdl);
		for (size_t i = 0; i < pdl; i++)
			b[20 + i] = (uint8_t)rnd(&s);

		struct iw_mpa_frame f;
		size_t n = 0;
		ck_assert_int_eq(parse(&f, &n, NULL, kind, b, 20u + pdl, 0), 0);
		ck_assert_uint_eq(n, 20u + pdl);
		ck_assert_int_eq(iw_mpa_frame_build(out, sizeof(out), &f, 0), (int)n);
		ck_assert_mem_eq(out, b, n);
	}
}
END_TEST

/* Hostile input: random headers (valid key so the parser gets further)
 * with random lengths never succeed beyond the input or crash. */
START_TEST(prop_hostile_input)
{
	uint32_t s = 0xBADF00Du;
	uint8_t b[64];

	for (int it = 0; it < 20000; it++) {
		uint32_t r = rnd(&s);
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)rnd(&s);
		if (r & 1)
			memcpy(b, IW_MPA_KEY_REQ, 16);
		if (r & 2)
			b[18] = 0; /* small PD_Length, so some succeed */
		size_t len = (r >> 8) % (sizeof(b) + 1);
		struct iw_mpa_frame f;
		size_t out_len = 0;
		enum iw_wire_err why = IW_WERR_NONE;
		int rc = parse(&f, &out_len, &why, IW_MPA_REQUEST, b, len,
			       (r & 4) ? IW_MPA_PARSE_STRICT : 0);
		if (rc == 0) {
			ck_assert_uint_le(out_len, len);
			ck_assert_uint_eq(out_len, 20u + (b[18] << 8 | b[19]));
			ck_assert_int_eq(why, IW_WERR_NONE);
		} else if (rc == -EAGAIN) {
			ck_assert_uint_gt(out_len, len);
		} else {
			ck_assert_int_eq(rc, -EPROTO);
			ck_assert_int_ne(why, IW_WERR_NONE);
			ck_assert_uint_eq(iw_wire_err_term(why), IW_TERM_LLP_BAD_FRAME);
		}
	}
}
END_TEST

/* The one framing rule: CRC if either frame has C, markers towards a
 * side that set M in its own frame; other flags do not matter. */
START_TEST(test_framing_rule)
{
	for (unsigned req = 0; req < 256; req++) {
		for (unsigned rep = 0; rep < 256; rep += 5) {
			struct iw_mpa_framing f;
			iw_mpa_framing(&f, (uint8_t)req, (uint8_t)rep);
			ck_assert_int_eq(f.crc, ((req | rep) & IW_MPA_FLAG_C) != 0);
			ck_assert_int_eq(f.markers_to_req, (req & IW_MPA_FLAG_M) != 0);
			ck_assert_int_eq(f.markers_to_rep, (rep & IW_MPA_FLAG_M) != 0);
		}
	}
}
END_TEST

Suite *suite_mpa_frame(void)
{
	Suite *s = suite_create("mpa_frame");
	TCase *tc = tcase_create("vectors");

	tcase_add_test(tc, vec_request_rev1_crc);
	tcase_add_test(tc, test_framing_rule);
	tcase_add_test(tc, vec_request_rev2_p2p);
	tcase_add_test(tc, vec_reply_rev2_write_rtr);
	tcase_add_test(tc, vec_reply_rev1_reject);
	tcase_add_test(tc, vec_wrong_kind);
	suite_add_tcase(s, tc);

	tc = tcase_create("flags");
	tcase_add_test(tc, flags_all_combinations);
	tcase_add_test(tc, block_all_control_flags);
	tcase_add_test(tc, block_max_values_all_ones);
	tcase_add_test(tc, rev2_not_enhanced_has_no_block);
	tcase_add_test(tc, rev1_enhanced_bit_is_reserved);
	tcase_add_test(tc, reserved_bits_strict_vs_lenient);
	tcase_add_test(tc, reject_flag_in_request);
	tcase_add_test(tc, enhanced_reject_with_pd);
	suite_add_tcase(s, tc);

	tc = tcase_create("private_data");
	tcase_add_test(tc, pd_sizes);
	tcase_add_test(tc, pd_limit_512);
	tcase_add_test(tc, pd_chelsio_cap_255);
	tcase_add_test(tc, parse_pd_length_too_big);
	tcase_add_test(tc, parse_pd_length_512_accepted);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, err_key);
	tcase_add_test(tc, err_rev);
	tcase_add_test(tc, err_enhanced_short);
	tcase_add_test(tc, err_order);
	tcase_add_test(tc, err_prefix_consistent);
	tcase_add_test(tc, err_truncated_complete);
	tcase_add_test(tc, err_every_reason_is_bad_frame);
	tcase_add_test(tc, parse_bad_args);
	suite_add_tcase(s, tc);

	tc = tcase_create("truncation");
	tcase_add_test(tc, truncation_every_prefix);
	tcase_add_test(tc, truncation_incremental_feed);
	tcase_add_test(tc, trailing_fpdu_not_consumed);
	suite_add_tcase(s, tc);

	tc = tcase_create("build");
	tcase_add_test(tc, build_errors);
	tcase_add_test(tc, build_cap_exact);
	tcase_add_test(tc, build_block_only_when_enhanced);
	suite_add_tcase(s, tc);

	tc = tcase_create("properties");
	tcase_add_test(tc, prop_random_frames_round_trip);
	tcase_add_test(tc, prop_random_bytes_round_trip);
	tcase_add_test(tc, prop_hostile_input);
	suite_add_tcase(s, tc);
	return s;
}
