/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the MPA Request/Reply parser.
 *
 * Input: one settings octet, then the frame bytes.
 *   bit 0  kind: 0 Request, 1 Reply
 *   bit 1  IW_MPA_PARSE_STRICT
 *   bit 2  IW_MPA_PARSE_COMPLETE
 *
 * Besides "does not crash", every frame the parser accepts must come back
 * byte for byte from iw_mpa_frame_build: the struct is meant to hold all of
 * a frame (reserved flags included), so a lossy field is a bug. The other
 * checks tie the parse modes together, so that strict and complete-input
 * parsing cannot drift away from the default mode.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "fuzz.h"

#define FRAME_MAX (IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX)


struct parse_result {
	int rc;
	size_t len;
	enum iw_wire_err why;
	struct iw_mpa_frame f;
};

static void parse(struct parse_result *r, enum iw_mpa_kind kind, const uint8_t *buf, size_t len,
		  unsigned flags)
{
	memset(r, 0, sizeof(*r));
	r->why = IW_WERR_NONE;
	r->rc = iw_mpa_frame_parse(&r->f, &r->len, &r->why, kind, buf, len, flags);
}

static bool same_frame(const struct iw_mpa_frame *a, const struct iw_mpa_frame *b)
{
	return a->kind == b->kind && a->rev == b->rev && a->flags == b->flags &&
	       a->p2p == b->p2p && a->rtr == b->rtr && a->ird == b->ird && a->ord == b->ord &&
	       a->pd == b->pd && a->pd_len == b->pd_len;
}

/* An accepted frame: lengths add up, the private data lies inside it, and
 * building it again gives the same octets. */
static void check_accepted(const struct parse_result *r, const uint8_t *buf, size_t len)
{
	const struct iw_mpa_frame *f = &r->f;
	size_t ext = iw_mpa_frame_enhanced(f) ? IW_MPA_6581_LEN : 0;
	uint8_t out[FRAME_MAX + 8];
	int n;

	CHECK(r->why == IW_WERR_NONE);
	CHECK(r->len <= len && r->len >= IW_MPA_FRAME_HDR_LEN && r->len <= FRAME_MAX);
	CHECK(f->rev == 1 || f->rev == 2);
	CHECK(f->kind == IW_MPA_REQUEST || f->kind == IW_MPA_REPLY);
	CHECK(r->len == IW_MPA_FRAME_HDR_LEN + ext + f->pd_len);
	CHECK(f->ird <= IW_MPA_IRD_ORD_MAX && f->ord <= IW_MPA_IRD_ORD_MAX);
	if (f->pd_len)
		CHECK(f->pd == buf + IW_MPA_FRAME_HDR_LEN + ext);

	n = iw_mpa_frame_build(out, sizeof(out), f, 0);
	CHECK(n >= 0 && (size_t)n == r->len);
	CHECK(memcmp(out, buf, r->len) == 0);

	/* An exact-size buffer is enough, one octet less is not. */
	n = iw_mpa_frame_build(out, r->len, f, 0);
	CHECK(n >= 0 && (size_t)n == r->len);
	n = iw_mpa_frame_build(out, r->len - 1, f, 0);
	CHECK(n == -ENOSPC);
}

static void check_rejected(const struct parse_result *r, size_t len, unsigned flags)
{
	if (r->rc == -EAGAIN) {
		/* "Need more" is never said with complete input, and asks for
		 * more than there is but never for more than a frame. */
		CHECK(!(flags & IW_MPA_PARSE_COMPLETE));
		CHECK(r->len > len && r->len <= FRAME_MAX);
		CHECK(r->len == IW_MPA_FRAME_HDR_LEN || len >= IW_MPA_FRAME_HDR_LEN);
		return;
	}
	CHECK(r->rc == -EPROTO);
	CHECK(r->why > IW_WERR_NONE && r->why < IW_WERR__COUNT);
	CHECK(IW_TERM_LAYER(iw_wire_err_term(r->why)) == IW_LAYER_LLP);
	CHECK(iw_wire_err_str(r->why) != NULL);
	if (r->why == IW_WERR_MPA_TRUNCATED)
		CHECK(flags & IW_MPA_PARSE_COMPLETE);
	if (r->why == IW_WERR_MPA_RESERVED || r->why == IW_WERR_MPA_REJECT_REQ)
		CHECK(flags & IW_MPA_PARSE_STRICT);
}

/* The same input with and without IW_MPA_PARSE_COMPLETE: a frame that is
 * all there is parses the same either way, and "incomplete" turns into
 * IW_WERR_MPA_TRUNCATED and nothing else. */
static void check_complete_mode(const struct parse_result *inc, const struct parse_result *cpl)
{
	if (inc->rc == 0) {
		CHECK(cpl->rc == 0 && cpl->len == inc->len && same_frame(&cpl->f, &inc->f));
	} else if (inc->rc == -EAGAIN) {
		CHECK(cpl->rc == -EPROTO && cpl->why == IW_WERR_MPA_TRUNCATED);
	}
	if (cpl->rc == -EPROTO && cpl->why == IW_WERR_MPA_TRUNCATED)
		CHECK(inc->rc == -EAGAIN);
}

/* Strict parsing accepts a subset of what lenient parsing accepts. */
static void check_strict_mode(const struct parse_result *strict, const struct parse_result *len)
{
	if (strict->rc == 0)
		CHECK(len->rc == 0 && len->len == strict->len && same_frame(&len->f, &strict->f));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct parse_result r, other;
	enum iw_mpa_kind kind;
	unsigned flags;

	if (size < 1)
		return 0;
	kind = (data[0] & 1) ? IW_MPA_REPLY : IW_MPA_REQUEST;
	flags = 0;
	if (data[0] & 2)
		flags |= IW_MPA_PARSE_STRICT;
	if (data[0] & 4)
		flags |= IW_MPA_PARSE_COMPLETE;
	data++;
	size--;

	parse(&r, kind, data, size, flags);
	if (r.rc == 0)
		check_accepted(&r, data, size);
	else
		check_rejected(&r, size, flags);

	parse(&other, kind, data, size, flags ^ IW_MPA_PARSE_COMPLETE);
	if (flags & IW_MPA_PARSE_COMPLETE)
		check_complete_mode(&other, &r);
	else
		check_complete_mode(&r, &other);

	parse(&other, kind, data, size, flags ^ IW_MPA_PARSE_STRICT);
	if (flags & IW_MPA_PARSE_STRICT)
		check_strict_mode(&r, &other);
	else
		check_strict_mode(&other, &r);
	return 0;
}
