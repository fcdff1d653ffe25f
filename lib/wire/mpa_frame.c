/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA connection frames: Request, Reply and Reject (a Reply with R set), RFC
 * 5044 section 7.1, with the RFC 6581 IRD/ORD block of Rev 2 "enhanced"
 * frames. These are the only non-FPDU octets on an iWARP stream, and they
 * arrive from a peer we know nothing about yet, so every octet is hostile.
 *
 *   0..15  key            "MPA ID Req Frame" / "MPA ID Rep Frame"
 *   16     flags          M C R ENHANCED Res(4)
 *   17     Rev            1 or 2
 *   18..19 PD_Length      <= 512, counts the RFC 6581 block when present
 *   20..   private data   [IRD word | ORD word] ULP private data
 *
 *   IRD word: |A|B| IRD (14) |   ORD word: |C|D| ORD (14) |
 */
#include <errno.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/cursor.h"
#include "base/visibility.h"

/* RFC 6581 control flags, in the 16-bit IRD and ORD words. */
#define ENH_A 0x8000u /* IRD word: peer-to-peer, i.e. an RTR will follow */
#define ENH_B 0x4000u /* IRD word: zero-length Send RTR */
#define ENH_C 0x8000u /* ORD word: zero-length RDMA Write RTR */
#define ENH_D 0x4000u /* ORD word: zero-length RDMA Read RTR */

/* Reserved flag bits per revision: RFC 5044 reserves 0x1F, RFC 6581 takes
 * 0x10 for itself, and only in Rev 2. */
#define RES_REV1 (IW_MPA_FLAG_RES | IW_MPA_FLAG_ENHANCED)
#define RES_REV2 IW_MPA_FLAG_RES

#define RTR_ALL (IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ)

static const char *kind_key(enum iw_mpa_kind kind)
{
	return kind == IW_MPA_REQUEST ? IW_MPA_KEY_REQ : IW_MPA_KEY_REP;
}

static bool kind_valid(enum iw_mpa_kind kind)
{
	return kind == IW_MPA_REQUEST || kind == IW_MPA_REPLY;
}

/* ------------------------------------------------------------------ parse */

/*
 * Each check below runs as soon as the octets it looks at are in, and the
 * checks run in the order of the last octet they need. So any prefix of a
 * frame yields either -EAGAIN or the very error the whole frame yields: a
 * peer that trickles its frame one octet at a time gets the same answer as
 * one that sends it in one segment. The order is:
 *
 *   octets  check                                   error
 *   16      key matches the expected kind           IW_WERR_MPA_KEY
 *   18      Rev is 1 or 2 (0 is pre-RFC MPA)        IW_WERR_MPA_REV
 *   18      STRICT: no reserved flag for this Rev   IW_WERR_MPA_RESERVED
 *   18      STRICT: no R in a Request               IW_WERR_MPA_REJECT_REQ
 *   20      PD_Length <= 512                        IW_WERR_MPA_PD_LEN
 *   20      enhanced: PD_Length >= 4                IW_WERR_MPA_ENH_SHORT
 *   20+PD   all private data present                (-EAGAIN / TRUNCATED)
 *
 * The reserved check waits for Rev because 0x10 is reserved in Rev 1 only.
 */

static int check_key(struct iw_cur *c, enum iw_mpa_kind kind, enum iw_wire_err *why)
{
	uint8_t key[IW_MPA_KEY_LEN];

	if (!iw_cur_bytes(c, key, sizeof(key)))
		return -EAGAIN;
	if (memcmp(key, kind_key(kind), IW_MPA_KEY_LEN) != 0) {
		*why = IW_WERR_MPA_KEY;
		return -EPROTO;
	}
	return 0;
}

static int check_rev_flags(const struct iw_mpa_frame *f, unsigned pflags, enum iw_wire_err *why)
{
	if (f->rev != 1 && f->rev != 2) {
		*why = IW_WERR_MPA_REV;
		return -EPROTO;
	}
	/* Lenient by default: siw and Chelsio experiment in the reserved bits,
	 * and R in a Request is "not checked" in RFC 5044. */
	if (!(pflags & IW_MPA_PARSE_STRICT))
		return 0;
	if (f->flags & (f->rev == 1 ? RES_REV1 : RES_REV2)) {
		*why = IW_WERR_MPA_RESERVED;
		return -EPROTO;
	}
	if (f->kind == IW_MPA_REQUEST && (f->flags & IW_MPA_FLAG_R)) {
		*why = IW_WERR_MPA_REJECT_REQ;
		return -EPROTO;
	}
	return 0;
}

static int check_pd_length(const struct iw_mpa_frame *f, uint16_t pd_length,
			   enum iw_wire_err *why)
{
	if (pd_length > IW_MPA_PD_MAX) {
		*why = IW_WERR_MPA_PD_LEN;
		return -EPROTO;
	}
	if (iw_mpa_frame_enhanced(f) && pd_length < IW_MPA_6581_LEN) {
		*why = IW_WERR_MPA_ENH_SHORT;
		return -EPROTO;
	}
	return 0;
}

/* Split the RFC 6581 block into f. The caller has checked that the octets
 * are there; the cursor still guards against a slip. */
static bool parse_block(struct iw_mpa_frame *f, struct iw_cur *c)
{
	uint16_t ird_w, ord_w;

	if (!iw_cur_u16(c, &ird_w) || !iw_cur_u16(c, &ord_w))
		return false;
	f->p2p = (ird_w & ENH_A) != 0;
	f->rtr = (uint8_t)(((ird_w & ENH_B) ? IW_RTR_SEND : 0) |
			   ((ord_w & ENH_C) ? IW_RTR_WRITE : 0) |
			   ((ord_w & ENH_D) ? IW_RTR_READ : 0));
	f->ird = ird_w & IW_MPA_IRD_ORD_MAX;
	f->ord = ord_w & IW_MPA_IRD_ORD_MAX;
	return true;
}

/* The private data: the block (if any) then the ULP's part. */
static int parse_pd(struct iw_mpa_frame *f, struct iw_cur *c, uint16_t pd_length)
{
	if (c->left < pd_length)
		return -EAGAIN;
	if (iw_mpa_frame_enhanced(f)) {
		if (!parse_block(f, c))
			return -EAGAIN;
		pd_length -= IW_MPA_6581_LEN;
	}
	/* NULL for none, so that parse(build(f)) compares equal to f. */
	f->pd = pd_length ? c->p : NULL;
	f->pd_len = pd_length;
	return 0;
}

/* *need is raised to the total frame length once PD_Length is known. */
static int parse_frame(struct iw_mpa_frame *f, size_t *need, enum iw_wire_err *why,
		       struct iw_cur *c, unsigned pflags)
{
	uint16_t pd_length;
	int rc;

	rc = check_key(c, f->kind, why);
	if (rc)
		return rc;
	if (!iw_cur_u8(c, &f->flags) || !iw_cur_u8(c, &f->rev))
		return -EAGAIN;
	rc = check_rev_flags(f, pflags, why);
	if (rc)
		return rc;
	if (!iw_cur_u16(c, &pd_length))
		return -EAGAIN;
	rc = check_pd_length(f, pd_length, why);
	if (rc)
		return rc;
	*need = IW_MPA_FRAME_HDR_LEN + (size_t)pd_length;
	return parse_pd(f, c, pd_length);
}

IW_EXPORT int iw_mpa_frame_parse(struct iw_mpa_frame *f, size_t *out_len, enum iw_wire_err *why,
				 enum iw_mpa_kind kind, const uint8_t *buf, size_t len,
				 unsigned flags)
{
	struct iw_cur c = iw_cur_make(buf, buf ? len : 0);
	enum iw_wire_err err = IW_WERR_NONE;
	size_t need = IW_MPA_FRAME_HDR_LEN;
	int rc;

	if (!f || !kind_valid(kind))
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	rc = parse_frame(f, &need, &err, &c, flags);
	if (rc == -EAGAIN && (flags & IW_MPA_PARSE_COMPLETE)) {
		rc = -EPROTO;
		err = IW_WERR_MPA_TRUNCATED;
	}
	if (rc) {
		/* No half-decoded frame (or a stale pd pointer) leaks out. */
		memset(f, 0, sizeof(*f));
		f->kind = kind;
	}
	if (out_len)
		*out_len = rc == 0 || rc == -EAGAIN || err == IW_WERR_MPA_TRUNCATED ? need : 0;
	if (why)
		*why = err;
	return rc;
}

/* ------------------------------------------------------------------ build */

/* What the encoder refuses outright: values the wire cannot carry. Unknown
 * RTR bits are refused too rather than dropped, so no request is silently
 * narrowed. */
static int check_build(const struct iw_mpa_frame *f)
{
	if (!f || !kind_valid(f->kind))
		return -EINVAL;
	if (f->rev != 1 && f->rev != 2)
		return -EINVAL;
	if (f->ird > IW_MPA_IRD_ORD_MAX || f->ord > IW_MPA_IRD_ORD_MAX)
		return -EINVAL;
	if (f->rtr & ~RTR_ALL)
		return -EINVAL;
	if (f->pd_len && !f->pd)
		return -EINVAL;
	return 0;
}

static void put_block(struct iw_wr *w, const struct iw_mpa_frame *f)
{
	uint16_t ird_w = f->ird, ord_w = f->ord;

	if (f->p2p)
		ird_w |= ENH_A;
	if (f->rtr & IW_RTR_SEND)
		ird_w |= ENH_B;
	if (f->rtr & IW_RTR_WRITE)
		ord_w |= ENH_C;
	if (f->rtr & IW_RTR_READ)
		ord_w |= ENH_D;
	iw_wr_u16(w, ird_w);
	iw_wr_u16(w, ord_w);
}

IW_EXPORT int iw_mpa_frame_build(uint8_t *out, size_t cap, const struct iw_mpa_frame *f,
				 size_t pd_cap)
{
	size_t total;
	bool enh;
	struct iw_wr w;
	int rc;

	rc = check_build(f);
	if (rc)
		return rc;
	enh = iw_mpa_frame_enhanced(f);
	total = (size_t)f->pd_len + (enh ? IW_MPA_6581_LEN : 0);
	/* A cap above what the wire allows cannot raise the wire's limit. */
	if (pd_cap == 0 || pd_cap > IW_MPA_PD_MAX)
		pd_cap = IW_MPA_PD_MAX;
	if (total > pd_cap)
		return -EMSGSIZE;
	if (!out || cap < IW_MPA_FRAME_HDR_LEN + total)
		return -ENOSPC;

	w = iw_wr_make(out, cap);
	iw_wr_bytes(&w, kind_key(f->kind), IW_MPA_KEY_LEN);
	iw_wr_u8(&w, f->flags); /* as given: tests and probes emit odd bits */
	iw_wr_u8(&w, f->rev);
	iw_wr_u16(&w, (uint16_t)total);
	if (enh)
		put_block(&w, f);
	iw_wr_bytes(&w, f->pd, f->pd_len);
	if (w.failed)
		return -ENOSPC;
	return (int)w.len;
}

IW_EXPORT void iw_mpa_framing(struct iw_mpa_framing *out, uint8_t req_flags, uint8_t rep_flags)
{
	out->crc = ((req_flags | rep_flags) & IW_MPA_FLAG_C) != 0;
	out->markers_to_req = (req_flags & IW_MPA_FLAG_M) != 0;
	out->markers_to_rep = (rep_flags & IW_MPA_FLAG_M) != 0;
}
