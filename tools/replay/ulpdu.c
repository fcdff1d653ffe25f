/* SPDX-License-Identifier: BSD-2-Clause */
#include "ulpdu.h"

#include <errno.h>
#include <string.h>

#include "util.h"

/* Largest Terminate: control word, segment length, an untagged DDP header
 * and a Read Request header (RFC 5040 4.8). */
#define TERM_MAX (IW_RDMAP_TERM_MIN_LEN + 2 + IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN)

static void first_err(struct rp_ulpdu *u, enum iw_wire_err e)
{
	if (u->err == IW_WERR_NONE)
		u->err = e;
}

/* siw's control word moved into RFC layout, then the ordinary parser. */
static int term_siw(struct rp_ulpdu *u, const uint8_t *p, size_t len, enum iw_wire_err *why)
{
	uint8_t tmp[TERM_MAX];
	uint16_t code;

	if (len < IW_RDMAP_TERM_MIN_LEN || len > sizeof(tmp)) {
		*why = IW_WERR_RDMAP_TERM;
		return -EPROTO;
	}
	memcpy(tmp, p, len);
	code = iw_rdmap_term_siw_code(p);
	rp_put_be(tmp, 2, code);
	tmp[2] = iw_rdmap_term_siw_hdrct(p[2]);
	u->term_siw = true;
	return iw_rdmap_term_parse(&u->rdmap.u.term, why, tmp, len);
}

static int terminate(struct rp_ulpdu *u, const uint8_t *p, size_t len, bool siw,
		     enum iw_wire_err *why)
{
	memcpy(u->term_raw, p, len < 4 ? len : 4);
	if (siw)
		return term_siw(u, p, len, why);
	return iw_rdmap_term_parse(&u->rdmap.u.term, why, p, len);
}

/* The RDMAP header after the DDP header; returns its length. */
static size_t rdmap(struct rp_ulpdu *u, const uint8_t *p, size_t len, bool siw)
{
	enum iw_wire_err why = IW_WERR_FPDU_TOO_SHORT;
	size_t need = iw_rdmap_hdr_len(u->opcode);
	int rc = 0;

	switch (u->opcode) {
	case IW_OP_READ_REQ:
		rc = iw_rdmap_read_req_parse(&u->rdmap.u.read_req, p, len);
		break;
	case IW_OP_TERMINATE:
		need = len; /* a Terminate's header is the whole rest */
		rc = terminate(u, p, len, siw, &why);
		break;
	case IW_OP_ATOMIC_REQ:
		rc = iw_rdmap_atomic_req_parse(&u->rdmap.u.atomic_req, &why, p, len);
		if (rc == -EAGAIN)
			why = IW_WERR_FPDU_TOO_SHORT;
		break;
	case IW_OP_ATOMIC_RESP:
		rc = iw_rdmap_atomic_resp_parse(&u->rdmap.u.atomic_resp, p, len);
		break;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		rc = len < IW_RDMAP_IMM_LEN ? -EAGAIN : 0;
		if (!rc)
			memcpy(u->rdmap.u.imm, p, IW_RDMAP_IMM_LEN);
		break;
	default:
		return 0;
	}
	/* An atomic request with an unknown op is still filled in. */
	u->has_rdmap = rc == 0 || (rc == -EPROTO && u->opcode != IW_OP_READ_REQ);
	if (rc)
		first_err(u, why);
	return need < len ? need : len;
}

void rp_ulpdu_decode(struct rp_ulpdu *u, const uint8_t *p, size_t len, bool siw)
{
	enum iw_wire_err why = IW_WERR_NONE;
	int rc;

	memset(u, 0, sizeof(*u));
	rc = iw_ddp_hdr_parse(&u->ddp, &why, p, len);
	if (rc == -EAGAIN) {
		/* Too short for its DDP header: keep what octets there are. */
		u->ddp.ctrl = len > 0 ? p[0] : 0;
		u->ddp.rdmap_ctrl = len > 1 ? p[1] : 0;
		u->opcode = iw_ddp_opcode(&u->ddp);
		u->hdr_len = len;
		first_err(u, IW_WERR_FPDU_TOO_SHORT);
		return;
	}
	u->ddp_in = true;
	if (rc < 0)
		first_err(u, why);
	u->opcode = iw_ddp_opcode(&u->ddp);
	u->hdr_len = iw_ddp_hdr_len(&u->ddp);
	/* The RDMAP header means something only if the version and the
	 * opcode's segment kind are right. */
	if (rc >= 0 || why == IW_WERR_DDP_QN || why == IW_WERR_RDMAP_NOT_LAST)
		u->hdr_len += rdmap(u, p + u->hdr_len, len - u->hdr_len, siw);
	u->payload_len = (uint32_t)(len - u->hdr_len);
}
