/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names for TERMINATE triples and for the decoder's failure reasons. One
 * table per concept, so a reason's TERMINATE code and message live in one row.
 */
#include <stddef.h>
#include <string.h>

#include "iwarp/wire.h"
#include "base/visibility.h"

struct term_name {
	uint16_t term; /* LLP rows are matched with the error type masked off */
	const char *name;
};

static const struct term_name term_names[] = {
	{IW_TERM_RDMAP_CATASTROPHIC, "RDMAP local catastrophic error"},
	{IW_TERM_RDMAP_INV_STAG, "RDMAP remote protection: invalid STag"},
	{IW_TERM_RDMAP_BASE_BOUNDS, "RDMAP remote protection: base or bounds violation"},
	{IW_TERM_RDMAP_ACCESS, "RDMAP remote protection: access rights violation"},
	{IW_TERM_RDMAP_STAG_STREAM, "RDMAP remote protection: STag not associated with RDMAP stream"},
	{IW_TERM_RDMAP_TO_WRAP, "RDMAP remote protection: TO wrap"},
	{IW_TERM_RDMAP_PROT_NOINV, "RDMAP remote protection: STag cannot be invalidated"},
	{IW_TERM_RDMAP_PROT_UNSPEC, "RDMAP remote protection: unspecified error"},
	{IW_TERM_RDMAP_VERSION, "RDMAP remote operation: invalid RDMAP version"},
	{IW_TERM_RDMAP_OPCODE, "RDMAP remote operation: unexpected opcode"},
	{IW_TERM_RDMAP_CATA_STREAM, "RDMAP remote operation: catastrophic error, localized to RDMAP stream"},
	{IW_TERM_RDMAP_CATA_GLOBAL, "RDMAP remote operation: catastrophic error, global"},
	{IW_TERM_RDMAP_OP_NOINV, "RDMAP remote operation: STag cannot be invalidated"},
	{IW_TERM_RDMAP_OP_UNSPEC, "RDMAP remote operation: unspecified error"},
	{IW_TERM_DDP_CATASTROPHIC, "DDP local catastrophic error"},
	{IW_TERM_DDP_T_INV_STAG, "DDP tagged buffer: invalid STag"},
	{IW_TERM_DDP_T_BASE_BOUNDS, "DDP tagged buffer: base or bounds violation"},
	{IW_TERM_DDP_T_STAG_STREAM, "DDP tagged buffer: STag not associated with DDP stream"},
	{IW_TERM_DDP_T_TO_WRAP, "DDP tagged buffer: TO wrap"},
	{IW_TERM_DDP_T_VERSION, "DDP tagged buffer: invalid DDP version"},
	{IW_TERM_DDP_U_INV_QN, "DDP untagged buffer: invalid QN"},
	{IW_TERM_DDP_U_NO_BUF, "DDP untagged buffer: invalid MSN, no buffer available"},
	{IW_TERM_DDP_U_MSN_RANGE, "DDP untagged buffer: invalid MSN, MSN range is not valid"},
	{IW_TERM_DDP_U_INV_MO, "DDP untagged buffer: invalid MO"},
	{IW_TERM_DDP_U_TOO_LONG, "DDP untagged buffer: DDP message too long for available buffer"},
	{IW_TERM_DDP_U_VERSION, "DDP untagged buffer: invalid DDP version"},
	{IW_TERM_LLP_CLOSED, "MPA: TCP connection closed, terminated or lost"},
	{IW_TERM_LLP_CRC, "MPA: CRC error"},
	{IW_TERM_LLP_MARKER, "MPA: marker and ULPDU_Length field mismatch"},
	{IW_TERM_LLP_BAD_FRAME, "MPA: invalid MPA Request or Reply frame"},
	{IW_TERM_LLP_CATASTROPHIC, "MPA: local catastrophic error"},
	{IW_TERM_LLP_IRD, "MPA: insufficient IRD resources"},
	{IW_TERM_LLP_NO_RTR, "MPA: no matching RTR option"},
};

IW_EXPORT const char *iw_term_layer_str(unsigned layer)
{
	static const char *const names[] = {"RDMAP", "DDP", "LLP"};
	return layer < 3 ? names[layer] : "reserved";
}

IW_EXPORT const char *iw_term_str(uint32_t term)
{
	if (term == IW_TERM_NONE)
		return "none";
	if (!IW_TERM_IS_TRIPLE(term))
		return "not a TERMINATE triple";
	/* Chelsio sends MPA errors with error type 3; name them by layer+code. */
	if (IW_TERM_LAYER(term) == IW_LAYER_LLP)
		term = IW_TERM(IW_LAYER_LLP, 0, IW_TERM_ECODE(term));
	for (size_t i = 0; i < sizeof(term_names) / sizeof(term_names[0]); i++)
		if (term_names[i].term == term)
			return term_names[i].name;
	/* The catastrophic types carry no meaningful code. */
	if (IW_TERM_ETYPE(term) == 0 && IW_TERM_LAYER(term) == IW_LAYER_RDMAP)
		return "RDMAP local catastrophic error";
	if (IW_TERM_ETYPE(term) == 0 && IW_TERM_LAYER(term) == IW_LAYER_DDP)
		return "DDP local catastrophic error";
	switch (IW_TERM_LAYER(term)) {
	case IW_LAYER_RDMAP:
		return "unknown RDMAP error";
	case IW_LAYER_DDP:
		return "unknown DDP error";
	case IW_LAYER_LLP:
		return "unknown MPA error";
	default:
		return "unknown error layer";
	}
}

struct err_row {
	const char *name;
	uint16_t term;
	const char *msg;
};

static const struct err_row err_rows[IW_WERR__COUNT] = {
	[IW_WERR_NONE] = {"none", 0, "no error"},
	[IW_WERR_MPA_KEY] = {"mpa_key", IW_TERM_LLP_BAD_FRAME, "MPA frame key is not \"MPA ID Req Frame\"/\"MPA ID Rep Frame\" as expected"},
	[IW_WERR_MPA_REV] = {"mpa_rev", IW_TERM_LLP_BAD_FRAME, "MPA revision not supported (only 1 and 2)"},
	[IW_WERR_MPA_RESERVED] = {"mpa_reserved", IW_TERM_LLP_BAD_FRAME, "MPA frame has reserved flag bits set"},
	[IW_WERR_MPA_PD_LEN] = {"mpa_pd_len", IW_TERM_LLP_BAD_FRAME, "MPA PD_Length above 512"},
	[IW_WERR_MPA_TRUNCATED] = {"mpa_truncated", IW_TERM_LLP_BAD_FRAME, "MPA frame truncated"},
	[IW_WERR_MPA_ENH_SHORT] = {"mpa_enh_short", IW_TERM_LLP_BAD_FRAME, "MPA enhanced (RFC 6581) frame has fewer than 4 octets of private data"},
	[IW_WERR_MPA_REJECT_REQ] = {"mpa_reject_req", IW_TERM_LLP_BAD_FRAME, "MPA Request has the R (reject) flag set"},
	[IW_WERR_FPDU_CRC] = {"fpdu_crc", IW_TERM_LLP_CRC, "FPDU CRC32c mismatch"},
	[IW_WERR_FPDU_MARKER] = {"fpdu_marker", IW_TERM_LLP_MARKER, "MPA marker does not point at the FPDU start (bad FPDUPTR or reserved field)"},
	[IW_WERR_FPDU_TOO_LONG] = {"fpdu_too_long", IW_TERM_DDP_CATASTROPHIC, "ULPDU_Length above the receive limit"},
	[IW_WERR_FPDU_TOO_SHORT] = {"fpdu_too_short", IW_TERM_DDP_CATASTROPHIC, "ULPDU_Length shorter than the DDP/RDMAP headers it carries"},
	[IW_WERR_FPDU_TRUNCATED] = {"fpdu_truncated", IW_TERM_LLP_CLOSED, "stream ended inside an FPDU"},
	[IW_WERR_DDP_T_VERSION] = {"ddp_t_version", IW_TERM_DDP_T_VERSION, "tagged DDP segment with DDP version other than 1"},
	[IW_WERR_DDP_U_VERSION] = {"ddp_u_version", IW_TERM_DDP_U_VERSION, "untagged DDP segment with DDP version other than 1"},
	[IW_WERR_DDP_QN] = {"ddp_qn", IW_TERM_DDP_U_INV_QN, "untagged DDP segment's QN does not match its RDMAP opcode"},
	[IW_WERR_DDP_MSN_ZERO] = {"ddp_msn_zero", IW_TERM_DDP_U_MSN_RANGE, "DDP MSN out of range"},
	[IW_WERR_RDMAP_VERSION] = {"rdmap_version", IW_TERM_RDMAP_VERSION, "RDMAP version other than 1"},
	[IW_WERR_RDMAP_OPCODE] = {"rdmap_opcode", IW_TERM_RDMAP_OPCODE, "RDMAP opcode unknown or not valid for a tagged/untagged segment"},
	[IW_WERR_RDMAP_NOT_LAST] = {"rdmap_not_last", IW_TERM_RDMAP_OPCODE, "single-segment RDMAP message without the DDP L flag"},
	[IW_WERR_RDMAP_TERM] = {"rdmap_term", IW_TERM_RDMAP_OP_UNSPEC, "malformed Terminate message"},
	[IW_WERR_RDMAP_ATOMIC_OP] = {"rdmap_atomic_op", IW_TERM_RDMAP_OPCODE, "RFC 7306 atomic request with an unknown atomic opcode"},
};

static const struct err_row *err_row(enum iw_wire_err e)
{
	if ((unsigned)e >= IW_WERR__COUNT || !err_rows[e].name)
		return NULL;
	return &err_rows[e];
}

IW_EXPORT const char *iw_wire_err_str(enum iw_wire_err e)
{
	const struct err_row *r = err_row(e);
	return r ? r->msg : "unknown wire error";
}

IW_EXPORT const char *iw_wire_err_name(enum iw_wire_err e)
{
	const struct err_row *r = err_row(e);
	return r ? r->name : "unknown";
}

IW_EXPORT int iw_wire_err_from_name(const char *name)
{
	if (!name)
		return -1;
	for (int e = 0; e < IW_WERR__COUNT; e++)
		if (err_rows[e].name && strcmp(err_rows[e].name, name) == 0)
			return e;
	return -1;
}

IW_EXPORT uint16_t iw_wire_err_term(enum iw_wire_err e)
{
	const struct err_row *r = err_row(e);
	return r ? r->term : IW_TERM_RDMAP_CATASTROPHIC;
}
