/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP header codec (lib/wire/ddp.c). Frames are copied from the reference
 * vectors (/work/shared/reference/vectors, the .iwv files); each starts with the
 * 2-octet ULPDU_Length, which the header parser never sees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "suites.h"

struct ddp_vec {
	const char *name;
	const uint8_t *fpdu;
	size_t fpdu_len;
	struct iw_ddp_hdr want;
	size_t hdr_len;
};

/* fpdu_send_rdma_test.iwv: send_rdma_test */
static const uint8_t v_send[] = {
	0x00, 0x1b, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x72, 0x64, 0x6d, 0x61, 0x5f, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x00,
	0xd9, 0xfe, 0x24, 0x22,
};
/* fpdu_write_rdma_test.iwv: write_rdma_test */
static const uint8_t v_write[] = {
	0x00, 0x17, 0xc1, 0x40, 0x00, 0x1f, 0xf8, 0xb7, 0x00, 0x00, 0x00, 0x00, 0x02, 0x2b, 0xc8, 0x50,
	0x72, 0x64, 0x6d, 0x61, 0x5f, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x00, 0x0b, 0xc6, 0xa8, 0x47,
};
/* fpdu_misc.iwv: rtr_zero_length_write */
static const uint8_t v_rtr[] = {
	0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xeb, 0xd3, 0x4c, 0x5f,
};
/* fpdu_misc.iwv: read_request */
static const uint8_t v_rreq[] = {
	0x00, 0x2e, 0x41, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0xaa, 0xbb, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
	0x00, 0x00, 0x00, 0x09, 0x00, 0x1f, 0xf8, 0xb7, 0x00, 0x00, 0x00, 0x00, 0x02, 0x2b, 0xc8, 0x50,
	0x75, 0x3a, 0x83, 0xac,
};
/* fpdu_misc.iwv: read_response */
static const uint8_t v_rresp[] = {
	0x00, 0x17, 0xc1, 0x42, 0x00, 0xaa, 0xbb, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
	0x72, 0x64, 0x6d, 0x61, 0x5f, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x00, 0xb7, 0xfa, 0x64, 0xa9,
};
/* fpdu_misc.iwv: terminate_llp_crc_error */
static const uint8_t v_term_crc[] = {
	0x00, 0x16, 0x41, 0x47, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x20, 0x02, 0x00, 0x00, 0x7f, 0xe4, 0x25, 0x85,
};
/* fpdu_misc.iwv: terminate_ddp_no_buffer */
static const uint8_t v_term_nobuf[] = {
	0x00, 0x2a, 0x41, 0x47, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x12, 0x02, 0xc0, 0x00, 0x00, 0x1b, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0xe8, 0x33, 0x97, 0x58,
};
/* fpdu_misc.iwv: atomic_fetchadd_request */
static const uint8_t v_atomic_req[] = {
	0x00, 0x46, 0x41, 0x4a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x1f, 0xf8, 0xb7,
	0x00, 0x00, 0x00, 0x00, 0x02, 0x2b, 0xc8, 0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe7, 0x93, 0x31, 0x92,
};
/* fpdu_misc.iwv: atomic_response */
static const uint8_t v_atomic_resp[] = {
	0x00, 0x1e, 0x41, 0x4b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
	0xe5, 0xb2, 0x0f, 0xb6,
};
/* fpdu_misc.iwv: immediate_data */
static const uint8_t v_imm[] = {
	0x00, 0x1a, 0x41, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x08, 0x9a, 0xa5, 0x3d,
};

#define VEC(n, v, ...) {n, v, sizeof(v), __VA_ARGS__}
#define UNTAGGED(ctl, rctl, q, m) {.ctrl = ctl, .rdmap_ctrl = rctl, .qn = q, .msn = m}, 18
#define TAGGED(ctl, rctl, s, t) {.ctrl = ctl, .rdmap_ctrl = rctl, .stag = s, .to = t}, 14

static const struct ddp_vec vecs[] = {
	VEC("send_rdma_test", v_send, UNTAGGED(0x41, 0x43, 0, 1)),
	VEC("write_rdma_test", v_write, TAGGED(0xc1, 0x40, 0x001ff8b7, 0x22bc850)),
	VEC("rtr_zero_length_write", v_rtr, TAGGED(0xc1, 0x40, 1, 0)),
	VEC("read_request", v_rreq, UNTAGGED(0x41, 0x41, 1, 1)),
	VEC("read_response", v_rresp, TAGGED(0xc1, 0x42, 0x00aabb01, 0x1000)),
	VEC("terminate_llp_crc_error", v_term_crc, UNTAGGED(0x41, 0x47, 2, 1)),
	VEC("terminate_ddp_no_buffer", v_term_nobuf, UNTAGGED(0x41, 0x47, 2, 1)),
	VEC("atomic_fetchadd_request", v_atomic_req, UNTAGGED(0x41, 0x4a, 1, 2)),
	VEC("atomic_response", v_atomic_resp, UNTAGGED(0x41, 0x4b, 3, 1)),
	VEC("immediate_data", v_imm, UNTAGGED(0x41, 0x48, 0, 2)),
};
#define NUM_VECS ((int)(sizeof(vecs) / sizeof(vecs[0])))

static void assert_hdr_eq(const struct iw_ddp_hdr *got, const struct iw_ddp_hdr *want)
{
	ck_assert_uint_eq(got->ctrl, want->ctrl);
	ck_assert_uint_eq(got->rdmap_ctrl, want->rdmap_ctrl);
	ck_assert_uint_eq(got->stag, want->stag);
	ck_assert_uint_eq(got->to, want->to);
	ck_assert_uint_eq(got->inv_stag, want->inv_stag);
	ck_assert_uint_eq(got->qn, want->qn);
	ck_assert_uint_eq(got->msn, want->msn);
	ck_assert_uint_eq(got->mo, want->mo);
}

/* Parse a header; p is copied to a heap block of exactly len octets so
 * that ASan catches any read past the end. */
static int parse_exact(struct iw_ddp_hdr *h, enum iw_wire_err *why, const uint8_t *p, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	ck_assert_ptr_nonnull(copy);
	if (len)
		memcpy(copy, p, len);
	ret = iw_ddp_hdr_parse(h, why, copy, len);
	free(copy);
	return ret;
}

/* An 18-octet untagged header (or 14 tagged) for the opcode, valid by
 * default; tests then break one thing. */
static size_t make_hdr(uint8_t *out, bool tagged, bool last, unsigned opcode, uint32_t qn)
{
	struct iw_ddp_hdr h = {
		.ctrl = iw_ddp_ctrl(tagged, last),
		.rdmap_ctrl = iw_rdmap_ctrl(opcode),
		.stag = 0x11223344,
		.to = 0x5566778899aabbccull,
		.qn = qn,
		.msn = 1,
	};
	int n = iw_ddp_hdr_build(out, IW_DDP_UNTAGGED_HDR_LEN, &h);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

static int expect_err(const uint8_t *p, size_t len, enum iw_wire_err want)
{
	struct iw_ddp_hdr h;
	enum iw_wire_err why = IW_WERR_NONE;
	int ret = parse_exact(&h, &why, p, len);

	if (want == IW_WERR_NONE) {
		ck_assert_int_eq(ret, (int)len);
		ck_assert_int_eq(why, IW_WERR_NONE);
	} else {
		ck_assert_int_eq(ret, -EPROTO);
		ck_assert_msg(why == want, "want %s, got %s", iw_wire_err_name(want),
			      iw_wire_err_name(why));
	}
	return ret;
}

START_TEST(vector_parse_fields)
{
	const struct ddp_vec *v = &vecs[_i];
	struct iw_ddp_hdr h;
	enum iw_wire_err why = IW_WERR__COUNT;
	/* The DDP segment is the ULPDU: skip ULPDU_Length, stop before PAD. */
	size_t ulpdu = (size_t)(v->fpdu[0] << 8 | v->fpdu[1]);
	int ret = iw_ddp_hdr_parse(&h, &why, v->fpdu + 2, ulpdu);

	ck_assert_msg(ret == (int)v->hdr_len, "%s: ret %d", v->name, ret);
	ck_assert_int_eq(why, IW_WERR_NONE);
	assert_hdr_eq(&h, &v->want);
	ck_assert_uint_eq(iw_ddp_hdr_len(&h), v->hdr_len);
	ck_assert(iw_ddp_last(&h));
}
END_TEST

START_TEST(vector_rebuild_exact)
{
	const struct ddp_vec *v = &vecs[_i];
	uint8_t out[IW_DDP_UNTAGGED_HDR_LEN + 4];

	memset(out, 0xEE, sizeof(out));
	ck_assert_int_eq(iw_ddp_hdr_build(out, sizeof(out), &v->want), (int)v->hdr_len);
	ck_assert_mem_eq(out, v->fpdu + 2, v->hdr_len);
	/* Nothing written past the header. */
	for (size_t i = v->hdr_len; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xEE);
}
END_TEST

START_TEST(build_enospc_every_cap)
{
	const struct ddp_vec *v = &vecs[_i];
	uint8_t out[IW_DDP_UNTAGGED_HDR_LEN];

	for (size_t cap = 0; cap < v->hdr_len; cap++) {
		memset(out, 0xEE, sizeof(out));
		ck_assert_int_eq(iw_ddp_hdr_build(out, cap, &v->want), -ENOSPC);
		for (size_t i = cap; i < sizeof(out); i++)
			ck_assert_uint_eq(out[i], 0xEE);
	}
}
END_TEST

START_TEST(truncation_every_length)
{
	const struct ddp_vec *v = &vecs[_i];
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	for (size_t len = 0; len < v->hdr_len; len++)
		ck_assert_int_eq(parse_exact(&h, &why, v->fpdu + 2, len), -EAGAIN);
	ck_assert_int_eq(parse_exact(&h, &why, v->fpdu + 2, v->hdr_len), (int)v->hdr_len);
}
END_TEST

/* A truncated header is "need more", even when what is there is already
 * wrong: the caller cannot act on a half header. */
START_TEST(truncation_beats_errors)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	memset(p, 0xFF, sizeof(p)); /* tagged, bad DV, bad RV, opcode 15 */
	ck_assert_int_eq(parse_exact(&h, &why, p, 13), -EAGAIN);
	p[0] = 0x00; /* untagged: the 14 octets of a tagged header are not enough */
	ck_assert_int_eq(parse_exact(&h, &why, p, 14), -EAGAIN);
	ck_assert_int_eq(parse_exact(&h, &why, p, 17), -EAGAIN);
	ck_assert_int_eq(parse_exact(&h, &why, p, 18), -EPROTO);
	ck_assert_int_eq(why, IW_WERR_DDP_U_VERSION);
}
END_TEST

START_TEST(trailing_payload_ignored)
{
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	/* The whole FPDU after ULPDU_Length, pad and CRC included. */
	ck_assert_int_eq(iw_ddp_hdr_parse(&h, &why, v_send + 2, sizeof(v_send) - 2), 18);
	ck_assert_uint_eq(h.msn, 1);
	ck_assert_int_eq(iw_ddp_hdr_parse(&h, &why, v_write + 2, sizeof(v_write) - 2), 14);
	ck_assert_uint_eq(h.stag, 0x001ff8b7);
}
END_TEST

START_TEST(ddp_version_tagged)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];

	for (unsigned dv = 0; dv < 4; dv++) {
		size_t n = make_hdr(p, true, true, IW_OP_WRITE, 0);
		p[0] = (uint8_t)((p[0] & ~IW_DDP_DV) | dv);
		expect_err(p, n, dv == 1 ? IW_WERR_NONE : IW_WERR_DDP_T_VERSION);
	}
}
END_TEST

START_TEST(ddp_version_untagged)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];

	for (unsigned dv = 0; dv < 4; dv++) {
		size_t n = make_hdr(p, false, true, IW_OP_SEND, IW_QN_SEND);
		p[0] = (uint8_t)((p[0] & ~IW_DDP_DV) | dv);
		expect_err(p, n, dv == 1 ? IW_WERR_NONE : IW_WERR_DDP_U_VERSION);
	}
}
END_TEST

START_TEST(rdmap_version)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];

	for (unsigned rv = 0; rv < 4; rv++) {
		size_t n = make_hdr(p, _i, true, _i ? IW_OP_WRITE : IW_OP_SEND, 0);
		p[1] = (uint8_t)((p[1] & ~IW_RDMAP_RV) | rv << 6);
		expect_err(p, n, rv == 1 ? IW_WERR_NONE : IW_WERR_RDMAP_VERSION);
	}
}
END_TEST

/* DDP version first: with it wrong, nothing else in the header counts. */
START_TEST(check_order)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	size_t n;

	/* bad DV + bad RV + bad opcode -> DDP version */
	n = make_hdr(p, false, false, 0xF, 9);
	p[0] &= (uint8_t)~IW_DDP_DV;
	p[1] = 0xFF;
	expect_err(p, n, IW_WERR_DDP_U_VERSION);
	/* bad RV + bad opcode -> RDMAP version */
	n = make_hdr(p, false, false, 0xF, 9);
	p[1] = 0x0F;
	expect_err(p, n, IW_WERR_RDMAP_VERSION);
	/* bad opcode for T + bad QN -> opcode */
	n = make_hdr(p, false, false, IW_OP_WRITE, 9);
	expect_err(p, n, IW_WERR_RDMAP_OPCODE);
	/* bad QN + missing L -> QN */
	n = make_hdr(p, false, false, IW_OP_READ_REQ, 0);
	expect_err(p, n, IW_WERR_DDP_QN);
	/* only missing L */
	n = make_hdr(p, false, false, IW_OP_READ_REQ, 1);
	expect_err(p, n, IW_WERR_RDMAP_NOT_LAST);
}
END_TEST

START_TEST(opcode_tagged_each)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	unsigned op = (unsigned)_i;
	size_t n = make_hdr(p, true, true, op, 0);
	bool ok = op == IW_OP_WRITE || op == IW_OP_READ_RESP;

	expect_err(p, n, ok ? IW_WERR_NONE : IW_WERR_RDMAP_OPCODE);
}
END_TEST

START_TEST(opcode_untagged_each)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	unsigned op = (unsigned)_i;
	/* The right QN when the opcode has one, so only the opcode is wrong. */
	static const uint32_t qn_of[16] = {0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 1, 3};
	size_t n = make_hdr(p, false, true, op, qn_of[op]);
	bool ok = op <= IW_OP_ATOMIC_RESP && op != IW_OP_WRITE && op != IW_OP_READ_RESP;
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	expect_err(p, n, ok ? IW_WERR_NONE : IW_WERR_RDMAP_OPCODE);
	/* Parsed fields are filled in even when the header is refused. */
	parse_exact(&h, &why, p, n);
	ck_assert_uint_eq(iw_ddp_opcode(&h), op);
	ck_assert_uint_eq(h.qn, qn_of[op]);
}
END_TEST

START_TEST(qn_mismatch)
{
	static const uint32_t qns[] = {0, 1, 2, 3, 4, 0x7FFFFFFF, 0xFFFFFFFF};
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];

	for (unsigned op = 0; op < 16; op++) {
		int want_qn = iw_rdmap_opcode_qn(op);

		if (want_qn < 0)
			continue;
		for (size_t i = 0; i < sizeof(qns) / sizeof(qns[0]); i++) {
			size_t n = make_hdr(p, false, true, op, qns[i]);
			expect_err(p, n, qns[i] == (uint32_t)want_qn ? IW_WERR_NONE : IW_WERR_DDP_QN);
		}
	}
}
END_TEST

START_TEST(single_segment_needs_last)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];

	for (unsigned op = 0; op <= IW_OP_ATOMIC_RESP; op++) {
		bool tagged = iw_rdmap_opcode_tagged(op);
		int qn = iw_rdmap_opcode_qn(op);
		bool single = op == IW_OP_READ_REQ || op == IW_OP_TERMINATE || op == IW_OP_IMM ||
			      op == IW_OP_IMM_SE || op == IW_OP_ATOMIC_REQ ||
			      op == IW_OP_ATOMIC_RESP;
		size_t n = make_hdr(p, tagged, false, op, qn < 0 ? 0 : (uint32_t)qn);

		expect_err(p, n, single ? IW_WERR_RDMAP_NOT_LAST : IW_WERR_NONE);
		n = make_hdr(p, tagged, true, op, qn < 0 ? 0 : (uint32_t)qn);
		expect_err(p, n, IW_WERR_NONE);
	}
}
END_TEST

START_TEST(reserved_bits_ignored)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	make_hdr(p, false, true, IW_OP_SEND, 0);
	p[0] |= IW_DDP_RSVD;
	p[1] |= IW_RDMAP_RSVD;
	p[2] = 0xde; /* RsvdULP[8:39] of a plain Send is reserved */
	ck_assert_int_eq(parse_exact(&h, &why, p, 18), 18);
	/* The control octets stay as received ... */
	ck_assert_uint_eq(h.ctrl, 0x41 | IW_DDP_RSVD);
	ck_assert_uint_eq(h.rdmap_ctrl, 0x43 | IW_RDMAP_RSVD);
	/* ... but the reserved word carries no Invalidate STag. */
	ck_assert_uint_eq(h.inv_stag, 0);
	ck_assert_uint_eq(iw_ddp_opcode(&h), IW_OP_SEND);

	make_hdr(p, true, true, IW_OP_READ_RESP, 0);
	p[0] |= IW_DDP_RSVD;
	p[1] |= IW_RDMAP_RSVD;
	ck_assert_int_eq(parse_exact(&h, &why, p, 14), 14);
	ck_assert(iw_ddp_tagged(&h));
}
END_TEST

START_TEST(inv_stag_round_trip)
{
	unsigned op = _i ? IW_OP_SEND_SE_INV : IW_OP_SEND_INV;
	struct iw_ddp_hdr in = {
		.ctrl = iw_ddp_ctrl(false, false),
		.rdmap_ctrl = iw_rdmap_ctrl(op),
		.inv_stag = 0xcafe0102,
		.qn = 0,
		.msn = 0xFFFFFFFF,
		.mo = 0x80000000,
	};
	static const uint8_t wire_send_inv[] = {
		0x01, 0x44, 0xca, 0xfe, 0x01, 0x02, 0, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0,
	};
	uint8_t out[IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	ck_assert_int_eq(iw_ddp_hdr_build(out, sizeof(out), &in), 18);
	if (op == IW_OP_SEND_INV)
		ck_assert_mem_eq(out, wire_send_inv, sizeof(out));
	ck_assert_int_eq(parse_exact(&h, &why, out, sizeof(out)), 18);
	assert_hdr_eq(&h, &in);
	ck_assert(!iw_ddp_last(&h));
}
END_TEST

START_TEST(tagged_extremes_round_trip)
{
	struct iw_ddp_hdr in = {
		.ctrl = iw_ddp_ctrl(true, false),
		.rdmap_ctrl = iw_rdmap_ctrl(IW_OP_WRITE),
		.stag = 0xFFFFFFFF,
		.to = 0xFFFFFFFFFFFFFFFFull,
	};
	static const uint8_t wire[] = {
		0x81, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	uint8_t out[IW_DDP_TAGGED_HDR_LEN];
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	ck_assert_int_eq(iw_ddp_hdr_build(out, sizeof(out), &in), 14);
	ck_assert_mem_eq(out, wire, sizeof(wire));
	ck_assert_int_eq(parse_exact(&h, &why, out, sizeof(out)), 14);
	assert_hdr_eq(&h, &in);
	/* Untagged-only fields stay zero for a tagged header. */
	ck_assert_uint_eq(h.qn | h.msn | h.mo | h.inv_stag, 0);
}
END_TEST

START_TEST(error_maps_to_terminate)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	make_hdr(p, true, true, IW_OP_WRITE, 0);
	p[0] &= (uint8_t)~IW_DDP_DV;
	ck_assert_int_eq(parse_exact(&h, &why, p, 14), -EPROTO);
	ck_assert_uint_eq(iw_wire_err_term(why), IW_TERM_DDP_T_VERSION);

	make_hdr(p, false, true, IW_OP_TERMINATE, 0);
	ck_assert_int_eq(parse_exact(&h, &why, p, 18), -EPROTO);
	ck_assert_uint_eq(iw_wire_err_term(why), IW_TERM_DDP_U_INV_QN);
}
END_TEST

START_TEST(null_why_tolerated)
{
	uint8_t p[IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr h;

	make_hdr(p, false, true, IW_OP_SEND, 3);
	ck_assert_int_eq(iw_ddp_hdr_parse(&h, NULL, p, 18), -EPROTO);
	make_hdr(p, false, true, IW_OP_SEND, 0);
	ck_assert_int_eq(iw_ddp_hdr_parse(&h, NULL, p, 18), 18);
}
END_TEST

/* Random input of random length: parse must only ever return a header
 * length, -EAGAIN or -EPROTO with a DDP/RDMAP reason, and never read past
 * the input (parse_exact's heap copy lets ASan check that). */
START_TEST(random_input_is_safe)
{
	uint8_t p[32];
	unsigned seed = 12345;

	for (int iter = 0; iter < 20000; iter++) {
		struct iw_ddp_hdr h;
		enum iw_wire_err why = IW_WERR_NONE;
		size_t len;
		int ret;

		for (size_t i = 0; i < sizeof(p); i++) {
			seed = seed * 1103515245u + 12345u;
			p[i] = (uint8_t)(seed >> 16);
		}
		/* Bias towards plausible headers so every check is reached. */
		if (iter & 1)
			p[0] = (uint8_t)((p[0] & ~IW_DDP_DV) | 1);
		if (iter & 2)
			p[1] = (uint8_t)((p[1] & ~IW_RDMAP_RV) | 0x40);
		len = (size_t)(seed >> 8) % (sizeof(p) + 1);
		ret = parse_exact(&h, &why, p, len);
		if (ret == -EPROTO)
			ck_assert(why >= IW_WERR_DDP_T_VERSION && why <= IW_WERR_RDMAP_NOT_LAST);
		else if (ret != -EAGAIN)
			ck_assert_int_eq(ret, (int)iw_ddp_hdr_len(&h));
	}
}
END_TEST

Suite *suite_ddp(void)
{
	Suite *s = suite_create("ddp");
	TCase *tc = tcase_create("ddp");

	tcase_add_loop_test(tc, vector_parse_fields, 0, NUM_VECS);
	tcase_add_loop_test(tc, vector_rebuild_exact, 0, NUM_VECS);
	tcase_add_loop_test(tc, build_enospc_every_cap, 0, NUM_VECS);
	tcase_add_loop_test(tc, truncation_every_length, 0, NUM_VECS);
	tcase_add_test(tc, truncation_beats_errors);
	tcase_add_test(tc, trailing_payload_ignored);
	tcase_add_test(tc, ddp_version_tagged);
	tcase_add_test(tc, ddp_version_untagged);
	tcase_add_loop_test(tc, rdmap_version, 0, 2);
	tcase_add_test(tc, check_order);
	tcase_add_loop_test(tc, opcode_tagged_each, 0, 16);
	tcase_add_loop_test(tc, opcode_untagged_each, 0, 16);
	tcase_add_test(tc, qn_mismatch);
	tcase_add_test(tc, single_segment_needs_last);
	tcase_add_test(tc, reserved_bits_ignored);
	tcase_add_loop_test(tc, inv_stag_round_trip, 0, 2);
	tcase_add_test(tc, tagged_extremes_round_trip);
	tcase_add_test(tc, error_maps_to_terminate);
	tcase_add_test(tc, null_why_tolerated);
	tcase_add_test(tc, random_input_is_safe);
	suite_add_tcase(s, tc);
	return s;
}
