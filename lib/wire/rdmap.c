/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMAP (RFC 5040, RFC 7306) opcode facts and the fixed RDMAP headers that
 * follow a DDP header: Read Request, Terminate, atomic request and response.
 * Parsers borrow nothing: every field is copied out, so the input can go.
 */
#include <errno.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/cursor.h"
#include "wire/opcode.h"
#include "base/visibility.h"

/* ------------------------------------------------------------ opcodes */

#define SEND_F (IW_OPF_SEND | IW_OPF_RECV)
#define IMM_F (IW_OPF_SINGLE | IW_OPF_RECV | IW_OPF_RFC7306)

/* The opcode facts (wire/opcode.h); nothing else keeps a list of opcodes. */
const struct iw_opcode_info iw_opcode_rows[IW_OPCODE_ROWS] = {
	[IW_OP_WRITE] = {"RDMA Write", -1, 0, IW_OPF_TAGGED},
	[IW_OP_READ_REQ] = {"RDMA Read Request", IW_QN_READ_REQ, IW_RDMAP_READ_REQ_LEN,
			    IW_OPF_SINGLE | IW_OPF_REQUEST},
	[IW_OP_READ_RESP] = {"RDMA Read Response", -1, 0, IW_OPF_TAGGED | IW_OPF_RESPONSE},
	[IW_OP_SEND] = {"Send", IW_QN_SEND, 0, SEND_F},
	[IW_OP_SEND_INV] = {"Send with Invalidate", IW_QN_SEND, 0, SEND_F | IW_OPF_INV},
	[IW_OP_SEND_SE] = {"Send with SE", IW_QN_SEND, 0, SEND_F | IW_OPF_SE},
	[IW_OP_SEND_SE_INV] = {"Send with SE and Invalidate", IW_QN_SEND, 0,
			       SEND_F | IW_OPF_SE | IW_OPF_INV},
	[IW_OP_TERMINATE] = {"Terminate", IW_QN_TERMINATE, 0, IW_OPF_SINGLE},
	[IW_OP_IMM] = {"Immediate Data", IW_QN_SEND, IW_RDMAP_IMM_LEN, IMM_F},
	[IW_OP_IMM_SE] = {"Immediate Data with SE", IW_QN_SEND, IW_RDMAP_IMM_LEN,
			  IMM_F | IW_OPF_SE},
	/* RFC 7306: atomic requests share the Read Request queue. */
	[IW_OP_ATOMIC_REQ] = {"Atomic Request", IW_QN_READ_REQ, IW_RDMAP_ATOMIC_REQ_LEN,
			      IW_OPF_SINGLE | IW_OPF_REQUEST | IW_OPF_RFC7306},
	[IW_OP_ATOMIC_RESP] = {"Atomic Response", IW_QN_ATOMIC_RESP, IW_RDMAP_ATOMIC_RESP_LEN,
			       IW_OPF_SINGLE | IW_OPF_RESPONSE | IW_OPF_RFC7306},
};

/* Every row up to the last opcode is filled (opcode.h's lookup trusts it). */
_Static_assert(IW_OP_ATOMIC_RESP + 1 == IW_OPCODE_ROWS, "one row per opcode");

IW_EXPORT bool iw_rdmap_opcode_valid(unsigned opcode)
{
	return iw_opcode_info(opcode) != NULL;
}

IW_EXPORT const char *iw_rdmap_opcode_str(unsigned opcode)
{
	const struct iw_opcode_info *o = iw_opcode_info(opcode);
	return o ? o->name : "unknown";
}

IW_EXPORT bool iw_rdmap_opcode_tagged(unsigned opcode)
{
	return iw_opcode_has(opcode, IW_OPF_TAGGED);
}

IW_EXPORT int iw_rdmap_opcode_qn(unsigned opcode)
{
	const struct iw_opcode_info *o = iw_opcode_info(opcode);
	return o ? o->qn : -1;
}

IW_EXPORT size_t iw_rdmap_hdr_len(unsigned opcode)
{
	const struct iw_opcode_info *o = iw_opcode_info(opcode);
	return o ? o->hdr_len : 0;
}

static int fail(enum iw_wire_err *why, enum iw_wire_err e)
{
	if (why)
		*why = e;
	return -EPROTO;
}

static void ok(enum iw_wire_err *why)
{
	if (why)
		*why = IW_WERR_NONE;
}

/* ------------------------------------------------------- Read Request */

IW_EXPORT int iw_rdmap_read_req_build(uint8_t *out, size_t cap, const struct iw_read_req *r)
{
	struct iw_wr w = iw_wr_make(out, cap);

	if (!r)
		return -EINVAL;
	iw_wr_u32(&w, r->sink_stag);
	iw_wr_u64(&w, r->sink_to);
	iw_wr_u32(&w, r->read_size);
	iw_wr_u32(&w, r->src_stag);
	iw_wr_u64(&w, r->src_to);
	return w.failed ? -ENOSPC : (int)w.len;
}

IW_EXPORT int iw_rdmap_read_req_parse(struct iw_read_req *r, const uint8_t *p, size_t len)
{
	struct iw_cur c = iw_cur_make(p, len);

	if (len < IW_RDMAP_READ_REQ_LEN)
		return -EAGAIN;
	iw_cur_u32(&c, &r->sink_stag);
	iw_cur_u64(&c, &r->sink_to);
	iw_cur_u32(&c, &r->read_size);
	iw_cur_u32(&c, &r->src_stag);
	iw_cur_u64(&c, &r->src_to);
	return 0;
}

/* ---------------------------------------------------------- Terminate */

#define TERM_HDR_FLAGS (IW_TERM_HDR_M | IW_TERM_HDR_D | IW_TERM_HDR_R)

/* A copied DDP header's length comes from its own T bit. */
static uint8_t copied_ddp_len(uint8_t ctrl)
{
	return (ctrl & IW_DDP_T) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
}

IW_EXPORT int iw_rdmap_term_build(uint8_t *out, size_t cap, const struct iw_terminate *t)
{
	struct iw_wr w = iw_wr_make(out, cap);

	if (!t)
		return -EINVAL;
	/* We send reserved bits as zero; a set one is a caller bug. */
	if (t->hdrct & ~TERM_HDR_FLAGS)
		return -EINVAL;
	/* The receiver sizes the copied header by its T bit, so a length
	 * that disagrees would desynchronise the rest of the payload. */
	if ((t->hdrct & IW_TERM_HDR_D) && t->ddp_hdr_len != copied_ddp_len(t->ddp_hdr[0]))
		return -EINVAL;

	iw_wr_u16(&w, t->term);
	iw_wr_u8(&w, t->hdrct);
	iw_wr_u8(&w, 0);
	if (t->hdrct & IW_TERM_HDR_M)
		iw_wr_u16(&w, t->ddp_seg_len);
	if (t->hdrct & IW_TERM_HDR_D)
		iw_wr_bytes(&w, t->ddp_hdr, t->ddp_hdr_len);
	if (t->hdrct & IW_TERM_HDR_R)
		iw_wr_bytes(&w, t->rdma_hdr, IW_RDMAP_READ_REQ_LEN);
	return w.failed ? -ENOSPC : (int)w.len;
}

/* The optional parts in wire order; each one is all there or an error. */
static bool term_parse_optional(struct iw_terminate *t, struct iw_cur *c)
{
	if ((t->hdrct & IW_TERM_HDR_M) && !iw_cur_u16(c, &t->ddp_seg_len))
		return false;
	if (t->hdrct & IW_TERM_HDR_D) {
		if (c->left < 1)
			return false;
		t->ddp_hdr_len = copied_ddp_len(c->p[0]);
		if (!iw_cur_bytes(c, t->ddp_hdr, t->ddp_hdr_len)) {
			t->ddp_hdr_len = 0;
			return false;
		}
	}
	if ((t->hdrct & IW_TERM_HDR_R) && !iw_cur_bytes(c, t->rdma_hdr, IW_RDMAP_READ_REQ_LEN))
		return false;
	return true;
}

/*
 * The control word is decoded before anything can fail, so that a caller
 * that must stay lenient (a siw peer puts its flags elsewhere, see below)
 * still has the peer's error code after -EPROTO. Reserved bits in octet 2
 * stay in hdrct as received but announce nothing.
 */
IW_EXPORT int iw_rdmap_term_parse(struct iw_terminate *t, enum iw_wire_err *why,
				  const uint8_t *p, size_t len)
{
	struct iw_cur c = iw_cur_make(p, len);

	memset(t, 0, sizeof(*t));
	if (!iw_cur_u16(&c, &t->term) || !iw_cur_u8(&c, &t->hdrct) || !iw_cur_skip(&c, 1))
		return fail(why, IW_WERR_RDMAP_TERM);
	if (!term_parse_optional(t, &c) || c.left != 0)
		return fail(why, IW_WERR_RDMAP_TERM);
	ok(why);
	return 0;
}

/*
 * siw declares the Terminate control word as a __be32 split into C
 * bitfields. In the __LITTLE_ENDIAN_BITFIELD branch of struct
 * iwarp_terminate (Linux drivers/infiniband/sw/siw/iwarp.h) the order is
 * layer:4, etype:4, ecode:8, flag_m:1, flag_d:1, flag_r:1, reserved:13.
 * Little-endian bitfields fill each octet from its least significant bit,
 * so on x86 the layer lands in the low nibble of octet 0, the etype in its
 * high nibble, ecode in octet 1, and M, D, R in bits 0, 1, 2 of octet 2.
 */
#define SIW_TERM_M 0x01
#define SIW_TERM_D 0x02
#define SIW_TERM_R 0x04

IW_EXPORT uint16_t iw_rdmap_term_siw_code(const uint8_t raw[2])
{
	return IW_TERM(raw[0] & 0x0F, raw[0] >> 4, raw[1]);
}

IW_EXPORT uint8_t iw_rdmap_term_siw_hdrct(uint8_t raw_octet2)
{
	uint8_t h = 0;

	if (raw_octet2 & SIW_TERM_M)
		h |= IW_TERM_HDR_M;
	if (raw_octet2 & SIW_TERM_D)
		h |= IW_TERM_HDR_D;
	if (raw_octet2 & SIW_TERM_R)
		h |= IW_TERM_HDR_R;
	return h;
}

/* ------------------------------------------------------------ atomics */

/* The first word of an atomic request: 28 reserved bits, then the op. */
#define ATOMIC_OP_MASK 0x0Fu

static bool atomic_op_valid(unsigned op)
{
	return op == IW_ATOMIC_FETCH_ADD || op == IW_ATOMIC_CMP_SWAP;
}

IW_EXPORT int iw_rdmap_atomic_req_build(uint8_t *out, size_t cap, const struct iw_atomic_req *a)
{
	struct iw_wr w = iw_wr_make(out, cap);

	/* Any 4-bit op is encodable so tests can send unknown ones. */
	if (!a || a->atomic_op > ATOMIC_OP_MASK)
		return -EINVAL;
	iw_wr_u32(&w, a->atomic_op);
	iw_wr_u32(&w, a->req_id);
	iw_wr_u32(&w, a->stag);
	iw_wr_u64(&w, a->to);
	iw_wr_u64(&w, a->add_swap);
	iw_wr_u64(&w, a->add_swap_mask);
	iw_wr_u64(&w, a->compare);
	iw_wr_u64(&w, a->compare_mask);
	return w.failed ? -ENOSPC : (int)w.len;
}

IW_EXPORT int iw_rdmap_atomic_req_parse(struct iw_atomic_req *a, enum iw_wire_err *why,
					const uint8_t *p, size_t len)
{
	struct iw_cur c = iw_cur_make(p, len);
	uint32_t word;

	ok(why);
	if (len < IW_RDMAP_ATOMIC_REQ_LEN)
		return -EAGAIN;
	iw_cur_u32(&c, &word);
	a->atomic_op = (uint8_t)(word & ATOMIC_OP_MASK); /* reserved bits ignored */
	iw_cur_u32(&c, &a->req_id);
	iw_cur_u32(&c, &a->stag);
	iw_cur_u64(&c, &a->to);
	iw_cur_u64(&c, &a->add_swap);
	iw_cur_u64(&c, &a->add_swap_mask);
	iw_cur_u64(&c, &a->compare);
	iw_cur_u64(&c, &a->compare_mask);
	if (!atomic_op_valid(a->atomic_op))
		return fail(why, IW_WERR_RDMAP_ATOMIC_OP);
	return 0;
}

IW_EXPORT int iw_rdmap_atomic_resp_build(uint8_t *out, size_t cap, const struct iw_atomic_resp *a)
{
	struct iw_wr w = iw_wr_make(out, cap);

	if (!a)
		return -EINVAL;
	iw_wr_u32(&w, a->req_id);
	iw_wr_u64(&w, a->orig_value);
	return w.failed ? -ENOSPC : (int)w.len;
}

IW_EXPORT int iw_rdmap_atomic_resp_parse(struct iw_atomic_resp *a, const uint8_t *p, size_t len)
{
	struct iw_cur c = iw_cur_make(p, len);

	if (len < IW_RDMAP_ATOMIC_RESP_LEN)
		return -EAGAIN;
	iw_cur_u32(&c, &a->req_id);
	iw_cur_u64(&c, &a->orig_value);
	return 0;
}
