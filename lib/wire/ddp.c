/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP segment header parser (RFC 5041; the writer is ddp_tx.c), with the
 * syntax checks that need only the header itself: versions, opcode against
 * T, QN against opcode, and L on the messages RDMAP defines as
 * single-segment. Anything that needs state (MSN windows, STag lookups)
 * belongs to the layers above.
 */
#include <errno.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/cursor.h"
#include "wire/opcode.h"
#include "base/visibility.h"

/*
 * The order of the checks matters because only the first failure is
 * reported, and it picks the TERMINATE the peer gets:
 *  1. DDP version: with a wrong DV nothing else in the header has a known
 *     meaning, not even where the RDMAP octet is. Its T bit picks the tagged
 *     or untagged code, as RFC 5041 has one of each.
 *  2. RDMAP version: likewise, the opcode means nothing under another RV.
 *  3. Opcode known and travelling in the right kind of segment.
 *  4. Untagged QN matching the opcode (a DDP error, but only decidable once
 *     the opcode is known to be valid).
 *  5. L on single-segment messages.
 */
static enum iw_wire_err ddp_hdr_check(const struct iw_ddp_hdr *h)
{
	unsigned opcode = iw_ddp_opcode(h);
	bool tagged = iw_ddp_tagged(h);

	if ((h->ctrl & IW_DDP_DV) != IW_DDP_VERSION)
		return tagged ? IW_WERR_DDP_T_VERSION : IW_WERR_DDP_U_VERSION;
	if ((h->rdmap_ctrl & IW_RDMAP_RV) >> 6 != IW_RDMAP_VERSION)
		return IW_WERR_RDMAP_VERSION;
	/* One look at the opcode's row for all three facts: this runs for
	 * every segment received. */
	const struct iw_opcode_info *o = iw_opcode_info(opcode);
	if (!o || !(o->flags & IW_OPF_TAGGED) != !tagged)
		return IW_WERR_RDMAP_OPCODE;
	if (!tagged && h->qn != (uint32_t)o->qn)
		return IW_WERR_DDP_QN;
	if ((o->flags & IW_OPF_SINGLE) && !iw_ddp_last(h))
		return IW_WERR_RDMAP_NOT_LAST;
	return IW_WERR_NONE;
}

IW_EXPORT int iw_ddp_hdr_parse(struct iw_ddp_hdr *h, enum iw_wire_err *why, const uint8_t *p,
			       size_t len)
{
	struct iw_cur c = iw_cur_make(p, len);
	enum iw_wire_err err;
	size_t need;

	if (why)
		*why = IW_WERR_NONE;
	/* The T bit of the first octet says how long the header is. */
	if (len < 1)
		return -EAGAIN;
	need = (p[0] & IW_DDP_T) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
	if (len < need)
		return -EAGAIN;

	memset(h, 0, sizeof(*h));
	/* Length was checked above, so these reads cannot fail. */
	iw_cur_u8(&c, &h->ctrl);
	iw_cur_u8(&c, &h->rdmap_ctrl);
	if (iw_ddp_tagged(h)) {
		iw_cur_u32(&c, &h->stag);
		iw_cur_u64(&c, &h->to);
	} else {
		uint32_t rsvd_ulp;

		iw_cur_u32(&c, &rsvd_ulp);
		iw_cur_u32(&c, &h->qn);
		iw_cur_u32(&c, &h->msn);
		iw_cur_u32(&c, &h->mo);
		/* RsvdULP[8:39] is reserved (ignored) except for the two
		 * invalidating Sends. */
		if (iw_opcode_has(iw_ddp_opcode(h), IW_OPF_INV))
			h->inv_stag = rsvd_ulp;
	}

	err = ddp_hdr_check(h);
	if (err != IW_WERR_NONE) {
		if (why)
			*why = err;
		return -EPROTO;
	}
	return (int)need;
}
