/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMAP opcode facts and header codecs (lib/wire/rdmap.c). The RDMAP header
 * bytes are the ones after the DDP header in the reference vectors
 * (fpdu_misc.iwv under /work/shared/reference/vectors).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "engine/wr.h"
#include "wire/opcode.h"
#include "suites.h"

/* read_request, octets 20..47 of the FPDU */
static const uint8_t rreq_hdr[] = {
	0x00, 0xaa, 0xbb, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
	0x00, 0x09, 0x00, 0x1f, 0xf8, 0xb7, 0x00, 0x00, 0x00, 0x00, 0x02, 0x2b, 0xc8, 0x50,
};
/* terminate_llp_crc_error, octets 20..23 */
static const uint8_t term_crc[] = {0x20, 0x02, 0x00, 0x00};
/* terminate_ddp_no_buffer, octets 20..43 */
static const uint8_t term_nobuf[] = {
	0x12, 0x02, 0xc0, 0x00, 0x00, 0x1b, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
};
/* atomic_fetchadd_request, octets 20..71 */
static const uint8_t atomic_req[] = {
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x1f, 0xf8, 0xb7, 0x00,
	0x00, 0x00, 0x00, 0x02, 0x2b, 0xc8, 0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
/* atomic_response, octets 20..31 */
static const uint8_t atomic_resp[] = {
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
};

/* Heap copy of exactly len octets, so ASan sees any over-read. */
static uint8_t *dup_exact(const uint8_t *p, size_t len)
{
	uint8_t *c = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(c);
	if (len)
		memcpy(c, p, len);
	return c;
}

static int term_parse_exact(struct iw_terminate *t, enum iw_wire_err *why, const uint8_t *p,
			    size_t len)
{
	uint8_t *c = dup_exact(p, len);
	int ret = iw_rdmap_term_parse(t, why, c, len);

	free(c);
	return ret;
}

/* ------------------------------------------------------------ opcodes */

START_TEST(opcode_names)
{
	static const char *const want[] = {
		"RDMA Write", "RDMA Read Request", "RDMA Read Response", "Send",
		"Send with Invalidate", "Send with SE", "Send with SE and Invalidate",
		"Terminate", "Immediate Data", "Immediate Data with SE", "Atomic Request",
		"Atomic Response",
	};

	for (unsigned op = 0; op < 12; op++)
		ck_assert_str_eq(iw_rdmap_opcode_str(op), want[op]);
	for (unsigned op = 12; op < 256; op++)
		ck_assert_str_eq(iw_rdmap_opcode_str(op), "unknown");
	ck_assert_str_eq(iw_rdmap_opcode_str(0xFFFFFFFFu), "unknown");
}
END_TEST

START_TEST(opcode_valid_and_tagged)
{
	for (unsigned op = 0; op < 64; op++) {
		ck_assert(iw_rdmap_opcode_valid(op) == (op <= 0xB));
		ck_assert(iw_rdmap_opcode_tagged(op) == (op == 0x0 || op == 0x2));
	}
	ck_assert(!iw_rdmap_opcode_valid(0xFFFFFFFFu));
}
END_TEST

START_TEST(opcode_qn_and_hdr_len)
{
	static const int qn[16] = {-1, 1, -1, 0, 0, 0, 0, 2, 0, 0, 1, 3, -1, -1, -1, -1};
	static const size_t len[16] = {0, 28, 0, 0, 0, 0, 0, 0, 8, 8, 52, 12, 0, 0, 0, 0};

	for (unsigned op = 0; op < 16; op++) {
		ck_assert_int_eq(iw_rdmap_opcode_qn(op), qn[op]);
		ck_assert_uint_eq(iw_rdmap_hdr_len(op), len[op]);
	}
	ck_assert_int_eq(iw_rdmap_opcode_qn(1000), -1);
	ck_assert_uint_eq(iw_rdmap_hdr_len(1000), 0);
}
END_TEST

/* ------------------------------------------------------- Read Request */

START_TEST(read_req_vector)
{
	struct iw_read_req r;
	uint8_t out[IW_RDMAP_READ_REQ_LEN + 1];
	uint8_t *c = dup_exact(rreq_hdr, sizeof(rreq_hdr));

	ck_assert_int_eq(iw_rdmap_read_req_parse(&r, c, sizeof(rreq_hdr)), 0);
	free(c);
	ck_assert_uint_eq(r.sink_stag, 0x00aabb01);
	ck_assert_uint_eq(r.sink_to, 0x1000);
	ck_assert_uint_eq(r.read_size, 9);
	ck_assert_uint_eq(r.src_stag, 0x001ff8b7);
	ck_assert_uint_eq(r.src_to, 0x22bc850);

	out[IW_RDMAP_READ_REQ_LEN] = 0xEE;
	ck_assert_int_eq(iw_rdmap_read_req_build(out, sizeof(out), &r), 28);
	ck_assert_mem_eq(out, rreq_hdr, 28);
	ck_assert_uint_eq(out[28], 0xEE);
}
END_TEST

START_TEST(read_req_short)
{
	struct iw_read_req r = {1, 2, 3, 4, 5};
	uint8_t out[IW_RDMAP_READ_REQ_LEN];

	for (size_t len = 0; len < IW_RDMAP_READ_REQ_LEN; len++) {
		uint8_t *c = dup_exact(rreq_hdr, len);

		ck_assert_int_eq(iw_rdmap_read_req_parse(&r, c, len), -EAGAIN);
		free(c);
		ck_assert_int_eq(iw_rdmap_read_req_build(out, len, &r), -ENOSPC);
	}
}
END_TEST

START_TEST(read_req_extremes)
{
	struct iw_read_req in = {0xFFFFFFFF, 0xFFFFFFFFFFFFFFFFull, 0x80000001,
				 0x01020304, 0x0102030405060708ull};
	struct iw_read_req r;
	uint8_t out[IW_RDMAP_READ_REQ_LEN];

	ck_assert_int_eq(iw_rdmap_read_req_build(out, sizeof(out), &in), 28);
	ck_assert_uint_eq(out[16], 0x01);
	ck_assert_uint_eq(out[27], 0x08);
	ck_assert_int_eq(iw_rdmap_read_req_parse(&r, out, sizeof(out)), 0);
	ck_assert_uint_eq(r.sink_stag, in.sink_stag);
	ck_assert_uint_eq(r.sink_to, in.sink_to);
	ck_assert_uint_eq(r.read_size, in.read_size);
	ck_assert_uint_eq(r.src_stag, in.src_stag);
	ck_assert_uint_eq(r.src_to, in.src_to);
}
END_TEST

/* ---------------------------------------------------------- Terminate */

START_TEST(term_vector_llp_crc)
{
	struct iw_terminate t;
	enum iw_wire_err why = IW_WERR__COUNT;
	uint8_t out[64];

	ck_assert_int_eq(term_parse_exact(&t, &why, term_crc, sizeof(term_crc)), 0);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(t.term, IW_TERM_LLP_CRC);
	ck_assert_uint_eq(IW_TERM_LAYER(t.term), IW_LAYER_LLP);
	ck_assert_uint_eq(IW_TERM_ETYPE(t.term), 0);
	ck_assert_uint_eq(IW_TERM_ECODE(t.term), 0x02);
	ck_assert_uint_eq(t.hdrct, 0);
	ck_assert_uint_eq(t.ddp_seg_len, 0);
	ck_assert_uint_eq(t.ddp_hdr_len, 0);

	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &t), 4);
	ck_assert_mem_eq(out, term_crc, 4);
}
END_TEST

START_TEST(term_vector_ddp_no_buffer)
{
	struct iw_terminate t;
	enum iw_wire_err why = IW_WERR__COUNT;
	struct iw_ddp_hdr h;
	uint8_t out[64];

	ck_assert_int_eq(term_parse_exact(&t, &why, term_nobuf, sizeof(term_nobuf)), 0);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(t.term, IW_TERM_DDP_U_NO_BUF);
	ck_assert_uint_eq(t.hdrct, IW_TERM_HDR_M | IW_TERM_HDR_D);
	ck_assert_uint_eq(t.ddp_seg_len, 27);
	ck_assert_uint_eq(t.ddp_hdr_len, 18);
	ck_assert_mem_eq(t.ddp_hdr, term_nobuf + 6, 18);

	/* The copied header is the send_rdma_test segment's. */
	ck_assert_int_eq(iw_ddp_hdr_parse(&h, &why, t.ddp_hdr, t.ddp_hdr_len), 18);
	ck_assert_uint_eq(iw_ddp_opcode(&h), IW_OP_SEND);
	ck_assert_uint_eq(h.qn, 0);
	ck_assert_uint_eq(h.msn, 1);

	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &t), (int)sizeof(term_nobuf));
	ck_assert_mem_eq(out, term_nobuf, sizeof(term_nobuf));
}
END_TEST

/* A Terminate with the given M/D/R bits (hdrct = _i << 5) and a copied
 * tagged or untagged DDP header. */
static void make_term(struct iw_terminate *t, uint8_t hdrct, bool tagged)
{
	memset(t, 0, sizeof(*t));
	t->term = IW_TERM_RDMAP_ACCESS;
	t->hdrct = hdrct;
	if (hdrct & IW_TERM_HDR_M)
		t->ddp_seg_len = 0xABCD;
	if (hdrct & IW_TERM_HDR_D) {
		t->ddp_hdr_len = tagged ? 14 : 18;
		for (size_t i = 0; i < t->ddp_hdr_len; i++)
			t->ddp_hdr[i] = (uint8_t)(0x10 + i);
		t->ddp_hdr[0] = tagged ? 0xc1 : 0x41;
	}
	if (hdrct & IW_TERM_HDR_R)
		for (size_t i = 0; i < IW_RDMAP_READ_REQ_LEN; i++)
			t->rdma_hdr[i] = (uint8_t)(0xA0 + i);
}

static size_t term_len(uint8_t hdrct, bool tagged)
{
	return 4 + ((hdrct & IW_TERM_HDR_M) ? 2 : 0) +
	       ((hdrct & IW_TERM_HDR_D) ? (tagged ? 14 : 18) : 0) +
	       ((hdrct & IW_TERM_HDR_R) ? 28 : 0);
}

/* _i: bits 0..2 = R, D, M (as octet 2 >> 5), bit 3 = tagged copy */
START_TEST(term_every_combination)
{
	uint8_t hdrct = (uint8_t)((_i & 7) << 5);
	bool tagged = _i & 8;
	struct iw_terminate in, t;
	enum iw_wire_err why = IW_WERR__COUNT;
	uint8_t out[80];
	size_t want = term_len(hdrct, tagged);
	size_t off = 4;

	make_term(&in, hdrct, tagged);
	memset(out, 0xEE, sizeof(out));
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), (int)want);
	ck_assert_uint_eq(out[0], 0x01);
	ck_assert_uint_eq(out[1], 0x02);
	ck_assert_uint_eq(out[2], hdrct);
	ck_assert_uint_eq(out[3], 0);
	if (hdrct & IW_TERM_HDR_M) {
		ck_assert_uint_eq(out[off], 0xAB);
		ck_assert_uint_eq(out[off + 1], 0xCD);
		off += 2;
	}
	if (hdrct & IW_TERM_HDR_D) {
		ck_assert_mem_eq(out + off, in.ddp_hdr, in.ddp_hdr_len);
		off += in.ddp_hdr_len;
	}
	if (hdrct & IW_TERM_HDR_R) {
		ck_assert_mem_eq(out + off, in.rdma_hdr, 28);
		off += 28;
	}
	ck_assert_uint_eq(off, want);
	ck_assert_uint_eq(out[want], 0xEE);

	ck_assert_int_eq(term_parse_exact(&t, &why, out, want), 0);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(t.term, in.term);
	ck_assert_uint_eq(t.hdrct, in.hdrct);
	ck_assert_uint_eq(t.ddp_seg_len, in.ddp_seg_len);
	ck_assert_uint_eq(t.ddp_hdr_len, in.ddp_hdr_len);
	ck_assert_mem_eq(t.ddp_hdr, in.ddp_hdr, sizeof(t.ddp_hdr));
	ck_assert_mem_eq(t.rdma_hdr, in.rdma_hdr, sizeof(t.rdma_hdr));
}
END_TEST

START_TEST(term_truncated_and_overlong)
{
	uint8_t hdrct = (uint8_t)((_i & 7) << 5);
	bool tagged = _i & 8;
	struct iw_terminate in, t;
	enum iw_wire_err why;
	uint8_t out[80];
	size_t want = term_len(hdrct, tagged);

	make_term(&in, hdrct, tagged);
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), (int)want);
	for (size_t len = 0; len < want; len++) {
		why = IW_WERR_NONE;
		ck_assert_int_eq(term_parse_exact(&t, &why, out, len), -EPROTO);
		ck_assert_int_eq(why, IW_WERR_RDMAP_TERM);
	}
	for (size_t extra = 1; extra <= 3; extra++) {
		out[want + extra - 1] = 0;
		why = IW_WERR_NONE;
		ck_assert_int_eq(term_parse_exact(&t, &why, out, want + extra), -EPROTO);
		ck_assert_int_eq(why, IW_WERR_RDMAP_TERM);
	}
}
END_TEST

START_TEST(term_build_short_cap)
{
	struct iw_terminate in;
	uint8_t out[80];
	size_t want;

	make_term(&in, IW_TERM_HDR_M | IW_TERM_HDR_D | IW_TERM_HDR_R, false);
	want = term_len(in.hdrct, false);
	ck_assert_uint_eq(want, 52);
	for (size_t cap = 0; cap < want; cap++) {
		memset(out, 0xEE, sizeof(out));
		ck_assert_int_eq(iw_rdmap_term_build(out, cap, &in), -ENOSPC);
		for (size_t i = cap; i < sizeof(out); i++)
			ck_assert_uint_eq(out[i], 0xEE);
	}
}
END_TEST

START_TEST(term_build_invalid)
{
	struct iw_terminate in;
	uint8_t out[80];

	/* reserved bits of octet 2 */
	make_term(&in, 0, false);
	in.hdrct = 0x10;
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), -EINVAL);
	/* copied header length disagreeing with its T bit */
	make_term(&in, IW_TERM_HDR_D, false);
	in.ddp_hdr_len = 14;
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), -EINVAL);
	make_term(&in, IW_TERM_HDR_D, true);
	in.ddp_hdr_len = 18;
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), -EINVAL);
	make_term(&in, IW_TERM_HDR_D, true);
	in.ddp_hdr_len = 0;
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), -EINVAL);
	/* without D the length field is not looked at */
	make_term(&in, IW_TERM_HDR_M, true);
	in.ddp_hdr_len = 200;
	ck_assert_int_eq(iw_rdmap_term_build(out, sizeof(out), &in), 6);
}
END_TEST

/* The copied header's own T bit sizes it, whatever the Terminate says. */
START_TEST(term_copied_header_sized_by_t_bit)
{
	uint8_t p[4 + 18];
	struct iw_terminate t;
	enum iw_wire_err why;

	memset(p, 0, sizeof(p));
	p[0] = 0x11; /* DDP tagged buffer */
	p[2] = IW_TERM_HDR_D;
	p[4] = 0x81; /* tagged: 14 octets */
	ck_assert_int_eq(term_parse_exact(&t, &why, p, 4 + 14), 0);
	ck_assert_uint_eq(t.ddp_hdr_len, 14);
	ck_assert_int_eq(term_parse_exact(&t, &why, p, 4 + 18), -EPROTO);
	p[4] = 0x01; /* untagged: 18 octets */
	ck_assert_int_eq(term_parse_exact(&t, &why, p, 4 + 14), -EPROTO);
	ck_assert_int_eq(term_parse_exact(&t, &why, p, 4 + 18), 0);
	ck_assert_uint_eq(t.ddp_hdr_len, 18);
}
END_TEST

START_TEST(term_reserved_and_raw_codes)
{
	/* Chelsio's MPA-layer type 3 and reserved bits in octets 2-3: kept
	 * raw, not errors, and announcing nothing. */
	static const uint8_t chelsio[] = {0x23, 0x02, 0x1F, 0xFF};
	struct iw_terminate t;
	enum iw_wire_err why = IW_WERR__COUNT;

	ck_assert_int_eq(term_parse_exact(&t, &why, chelsio, sizeof(chelsio)), 0);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(t.term, 0x2302);
	ck_assert_uint_eq(t.hdrct, 0x1F);
	ck_assert_str_eq(iw_term_str(t.term), iw_term_str(IW_TERM_LLP_CRC));
}
END_TEST

/* After -EPROTO the control word is still there for a lenient caller. */
START_TEST(term_code_kept_on_error)
{
	/* siw's layout: 02 02 and M/D in the low bits, then 20 octets. */
	uint8_t p[4 + 2 + 18];
	struct iw_terminate t;
	enum iw_wire_err why;

	memset(p, 0, sizeof(p));
	p[0] = 0x21;
	p[1] = 0x02;
	p[2] = 0x03;
	ck_assert_int_eq(term_parse_exact(&t, &why, p, sizeof(p)), -EPROTO);
	ck_assert_int_eq(why, IW_WERR_RDMAP_TERM);
	ck_assert_uint_eq(t.term, 0x2102);
	ck_assert_uint_eq(t.hdrct, 0x03);
	ck_assert_uint_eq(iw_rdmap_term_siw_code(p), IW_TERM_DDP_U_NO_BUF);
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(t.hdrct), IW_TERM_HDR_M | IW_TERM_HDR_D);
}
END_TEST

START_TEST(siw_code_swap)
{
	static const uint8_t siw_crc[2] = {0x02, 0x02};
	static const uint8_t rfc_crc[2] = {0x20, 0x02};
	static const uint8_t siw_stream[2] = {0x20, 0x07};

	ck_assert_uint_eq(iw_rdmap_term_siw_code(siw_crc), IW_TERM_LLP_CRC);
	ck_assert_str_eq(iw_term_str(iw_rdmap_term_siw_code(siw_crc)), "MPA: CRC error");
	/* the RFC layout read siw's way is something else entirely */
	ck_assert_uint_eq(iw_rdmap_term_siw_code(rfc_crc), IW_TERM(0, 2, 0x02));
	ck_assert_uint_eq(iw_rdmap_term_siw_code(siw_stream), IW_TERM_RDMAP_CATA_STREAM);
	for (unsigned b = 0; b < 256; b++) {
		uint8_t raw[2] = {(uint8_t)b, 0x5A};
		uint16_t code = iw_rdmap_term_siw_code(raw);

		ck_assert_uint_eq(IW_TERM_LAYER(code), b & 0xF);
		ck_assert_uint_eq(IW_TERM_ETYPE(code), b >> 4);
		ck_assert_uint_eq(IW_TERM_ECODE(code), 0x5A);
	}
}
END_TEST

START_TEST(siw_hdrct_swap)
{
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0x00), 0);
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0x01), IW_TERM_HDR_M);
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0x02), IW_TERM_HDR_D);
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0x04), IW_TERM_HDR_R);
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0x07),
			  IW_TERM_HDR_M | IW_TERM_HDR_D | IW_TERM_HDR_R);
	/* siw's reserved bits, including where the RFC puts M/D/R */
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0xF8), 0);
	ck_assert_uint_eq(iw_rdmap_term_siw_hdrct(0xE0), 0);
}
END_TEST

/* ------------------------------------------------------------ atomics */

START_TEST(atomic_req_vector)
{
	struct iw_atomic_req a;
	enum iw_wire_err why = IW_WERR__COUNT;
	uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN];
	uint8_t *c = dup_exact(atomic_req, sizeof(atomic_req));

	ck_assert_int_eq(iw_rdmap_atomic_req_parse(&a, &why, c, sizeof(atomic_req)), 0);
	free(c);
	ck_assert_int_eq(why, IW_WERR_NONE);
	ck_assert_uint_eq(a.atomic_op, IW_ATOMIC_FETCH_ADD);
	ck_assert_uint_eq(a.req_id, 1);
	ck_assert_uint_eq(a.stag, 0x001ff8b7);
	ck_assert_uint_eq(a.to, 0x22bc850);
	ck_assert_uint_eq(a.add_swap, 1);
	ck_assert_uint_eq(a.add_swap_mask, 0);
	ck_assert_uint_eq(a.compare, 0);
	ck_assert_uint_eq(a.compare_mask, 0);
	ck_assert_int_eq(iw_rdmap_atomic_req_build(out, sizeof(out), &a), 52);
	ck_assert_mem_eq(out, atomic_req, 52);
}
END_TEST

START_TEST(atomic_cmp_swap_round_trip)
{
	struct iw_atomic_req in = {
		.atomic_op = IW_ATOMIC_CMP_SWAP,
		.req_id = 0x01020304,
		.stag = 0x05060708,
		.to = 0x1112131415161718ull,
		.add_swap = 0x2122232425262728ull,
		.add_swap_mask = 0x3132333435363738ull,
		.compare = 0x4142434445464748ull,
		.compare_mask = 0x5152535455565758ull,
	};
	struct iw_atomic_req a;
	enum iw_wire_err why;
	uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN];

	ck_assert_int_eq(iw_rdmap_atomic_req_build(out, sizeof(out), &in), 52);
	ck_assert_uint_eq(out[3], 0x02);
	ck_assert_uint_eq(out[4], 0x01);
	ck_assert_uint_eq(out[12], 0x11);
	ck_assert_uint_eq(out[44], 0x51);
	ck_assert_uint_eq(out[51], 0x58);
	ck_assert_int_eq(iw_rdmap_atomic_req_parse(&a, &why, out, sizeof(out)), 0);
	ck_assert_uint_eq(a.atomic_op, in.atomic_op);
	ck_assert_uint_eq(a.req_id, in.req_id);
	ck_assert_uint_eq(a.stag, in.stag);
	ck_assert_uint_eq(a.to, in.to);
	ck_assert_uint_eq(a.add_swap, in.add_swap);
	ck_assert_uint_eq(a.add_swap_mask, in.add_swap_mask);
	ck_assert_uint_eq(a.compare, in.compare);
	ck_assert_uint_eq(a.compare_mask, in.compare_mask);
}
END_TEST

START_TEST(atomic_bad_opcode)
{
	uint8_t p[IW_RDMAP_ATOMIC_REQ_LEN];
	struct iw_atomic_req a;
	enum iw_wire_err why;

	for (unsigned op = 0; op < 16; op++) {
		bool ok = op == IW_ATOMIC_FETCH_ADD || op == IW_ATOMIC_CMP_SWAP;

		memcpy(p, atomic_req, sizeof(p));
		p[3] = (uint8_t)op;
		why = IW_WERR__COUNT;
		ck_assert_int_eq(iw_rdmap_atomic_req_parse(&a, &why, p, sizeof(p)), ok ? 0 : -EPROTO);
		ck_assert_int_eq(why, ok ? IW_WERR_NONE : IW_WERR_RDMAP_ATOMIC_OP);
		ck_assert_uint_eq(a.atomic_op, op);
	}
	ck_assert_uint_eq(iw_wire_err_term(IW_WERR_RDMAP_ATOMIC_OP), IW_TERM_RDMAP_OPCODE);
	/* The 28 reserved bits are ignored on receive. */
	memcpy(p, atomic_req, sizeof(p));
	p[0] = 0xFF, p[1] = 0xFF, p[2] = 0xFF, p[3] = 0xF2;
	ck_assert_int_eq(iw_rdmap_atomic_req_parse(&a, &why, p, sizeof(p)), 0);
	ck_assert_uint_eq(a.atomic_op, IW_ATOMIC_CMP_SWAP);
}
END_TEST

START_TEST(atomic_req_short_and_invalid)
{
	struct iw_atomic_req a = {.atomic_op = 0};
	enum iw_wire_err why;
	uint8_t out[IW_RDMAP_ATOMIC_REQ_LEN];

	for (size_t len = 0; len < IW_RDMAP_ATOMIC_REQ_LEN; len++) {
		uint8_t *c = dup_exact(atomic_req, len);

		ck_assert_int_eq(iw_rdmap_atomic_req_parse(&a, &why, c, len), -EAGAIN);
		free(c);
		ck_assert_int_eq(iw_rdmap_atomic_req_build(out, len, &a), -ENOSPC);
	}
	a.atomic_op = 0x1; /* reserved, but encodable for negative tests */
	ck_assert_int_eq(iw_rdmap_atomic_req_build(out, sizeof(out), &a), 52);
	ck_assert_uint_eq(out[3], 0x01);
	a.atomic_op = 0x10;
	ck_assert_int_eq(iw_rdmap_atomic_req_build(out, sizeof(out), &a), -EINVAL);
}
END_TEST

START_TEST(atomic_resp_vector)
{
	struct iw_atomic_resp a;
	uint8_t out[IW_RDMAP_ATOMIC_RESP_LEN];
	uint8_t *c = dup_exact(atomic_resp, sizeof(atomic_resp));

	ck_assert_int_eq(iw_rdmap_atomic_resp_parse(&a, c, sizeof(atomic_resp)), 0);
	free(c);
	ck_assert_uint_eq(a.req_id, 1);
	ck_assert_uint_eq(a.orig_value, 5);
	ck_assert_int_eq(iw_rdmap_atomic_resp_build(out, sizeof(out), &a), 12);
	ck_assert_mem_eq(out, atomic_resp, 12);

	a.req_id = 0xFFFFFFFE;
	a.orig_value = 0x8000000000000001ull;
	ck_assert_int_eq(iw_rdmap_atomic_resp_build(out, sizeof(out), &a), 12);
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(iw_rdmap_atomic_resp_parse(&a, out, sizeof(out)), 0);
	ck_assert_uint_eq(a.req_id, 0xFFFFFFFE);
	ck_assert_uint_eq(a.orig_value, 0x8000000000000001ull);
}
END_TEST

START_TEST(atomic_resp_short)
{
	struct iw_atomic_resp a = {1, 5};
	uint8_t out[IW_RDMAP_ATOMIC_RESP_LEN];

	for (size_t len = 0; len < IW_RDMAP_ATOMIC_RESP_LEN; len++) {
		uint8_t *c = dup_exact(atomic_resp, len);

		ck_assert_int_eq(iw_rdmap_atomic_resp_parse(&a, c, len), -EAGAIN);
		free(c);
		ck_assert_int_eq(iw_rdmap_atomic_resp_build(out, len, &a), -ENOSPC);
	}
}
END_TEST

/* Random Terminate payloads: parse returns 0 only when the length is
 * exactly what octet 2 and the copied T bit announce. */
START_TEST(term_random_is_safe)
{
	uint8_t p[64];
	unsigned seed = 777;

	for (int iter = 0; iter < 20000; iter++) {
		struct iw_terminate t;
		enum iw_wire_err why = IW_WERR_NONE;
		size_t len, want;
		int ret;

		for (size_t i = 0; i < sizeof(p); i++) {
			seed = seed * 1103515245u + 12345u;
			p[i] = (uint8_t)(seed >> 16);
		}
		len = (size_t)(seed >> 8) % (sizeof(p) + 1);
		ret = term_parse_exact(&t, &why, p, len);
		want = len >= 4 ? 4 : 0;
		if (len >= 4) {
			size_t t_off = 4 + ((p[2] & IW_TERM_HDR_M) ? 2 : 0);
			bool tagged = len > t_off && (p[t_off] & IW_DDP_T);
			want = term_len(p[2], tagged);
		}
		if (len >= 4 && len == want) {
			ck_assert_int_eq(ret, 0);
		} else {
			ck_assert_int_eq(ret, -EPROTO);
			ck_assert_int_eq(why, IW_WERR_RDMAP_TERM);
		}
	}
}
END_TEST

/* The opcode tables (issue 12 part 4) are range-checked before they are
 * indexed and agree with the public opcode calls. */
START_TEST(opcode_tables)
{
	for (unsigned op = 0; op < 0x100; op++) {
		const struct iw_opcode_info *o = iw_opcode_info(op);
		ck_assert(!o == !iw_rdmap_opcode_valid(op));
		if (!o) {
			ck_assert(!iw_opcode_has(op, 0));
			continue;
		}
		ck_assert((o->qn < 0) == iw_opcode_has(op, IW_OPF_TAGGED));
		ck_assert_int_eq(o->qn, iw_rdmap_opcode_qn(op));
		ck_assert_uint_eq(o->hdr_len, iw_rdmap_hdr_len(op));
		ck_assert_str_eq(o->name, iw_rdmap_opcode_str(op));
		/* Sends fill a receive; requests and invalidations are untagged. */
		if (o->flags & IW_OPF_SEND)
			ck_assert(o->flags & IW_OPF_RECV);
		if (o->flags & (IW_OPF_REQUEST | IW_OPF_INV))
			ck_assert(!(o->flags & IW_OPF_TAGGED));
	}
	ck_assert_ptr_null(iw_opcode_info(~0u));
	ck_assert_ptr_null(iw_wr_info((enum iw_wr_opcode)0x1F));
	ck_assert_ptr_null(iw_wr_info((enum iw_wr_opcode)0x21));
	ck_assert_ptr_null(iw_wr_info((enum iw_wr_opcode)-1));
	ck_assert_int_eq(iw_wr_info(IW_WR_REG_MR)->wc, IW_WC_REG_MR);
	ck_assert(iw_wr_has(IW_WR_ATOMIC_FETCH_AND_ADD, IW_WRF_ORQ | IW_WRF_RFC7306));
	ck_assert_uint_eq(iw_wr_info(IW_WR_SEND_WITH_INV)->op_se, IW_OP_SEND_SE_INV);
}
END_TEST

Suite *suite_rdmap(void)
{
	Suite *s = suite_create("rdmap");
	TCase *tc = tcase_create("opcodes");

	tcase_add_test(tc, opcode_names);
	tcase_add_test(tc, opcode_valid_and_tagged);
	tcase_add_test(tc, opcode_qn_and_hdr_len);
	tcase_add_test(tc, opcode_tables);
	suite_add_tcase(s, tc);

	tc = tcase_create("read_req");
	tcase_add_test(tc, read_req_vector);
	tcase_add_test(tc, read_req_short);
	tcase_add_test(tc, read_req_extremes);
	suite_add_tcase(s, tc);

	tc = tcase_create("terminate");
	tcase_add_test(tc, term_vector_llp_crc);
	tcase_add_test(tc, term_vector_ddp_no_buffer);
	tcase_add_loop_test(tc, term_every_combination, 0, 16);
	tcase_add_loop_test(tc, term_truncated_and_overlong, 0, 16);
	tcase_add_test(tc, term_build_short_cap);
	tcase_add_test(tc, term_build_invalid);
	tcase_add_test(tc, term_copied_header_sized_by_t_bit);
	tcase_add_test(tc, term_reserved_and_raw_codes);
	tcase_add_test(tc, term_code_kept_on_error);
	tcase_add_test(tc, siw_code_swap);
	tcase_add_test(tc, siw_hdrct_swap);
	tcase_add_test(tc, term_random_is_safe);
	suite_add_tcase(s, tc);

	tc = tcase_create("atomics");
	tcase_add_test(tc, atomic_req_vector);
	tcase_add_test(tc, atomic_cmp_swap_round_trip);
	tcase_add_test(tc, atomic_bad_opcode);
	tcase_add_test(tc, atomic_req_short_and_invalid);
	tcase_add_test(tc, atomic_resp_vector);
	tcase_add_test(tc, atomic_resp_short);
	suite_add_tcase(s, tc);
	return s;
}
