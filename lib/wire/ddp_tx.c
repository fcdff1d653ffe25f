/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP segment header writer (RFC 5041); the parser and its checks are
 * ddp.c. Apart from it because it handles only headers we build: the fuzz
 * targets compile it without comparison tracing (Makefile.am FUZZ_NOCMP),
 * which cost fuzz_qp_rx 2.6 % of its instructions here (callgrind).
 */
#include <errno.h>

#include "iwarp/wire.h"
#include "wire/cursor.h"
#include "base/visibility.h"

IW_EXPORT int iw_ddp_hdr_build(uint8_t *out, size_t cap, const struct iw_ddp_hdr *h)
{
	struct iw_wr w = iw_wr_make(out, cap);

	if (!h)
		return -EINVAL;
	iw_wr_u8(&w, h->ctrl);
	iw_wr_u8(&w, h->rdmap_ctrl);
	if (h->ctrl & IW_DDP_T) {
		iw_wr_u32(&w, h->stag);
		iw_wr_u64(&w, h->to);
	} else {
		iw_wr_u32(&w, h->inv_stag);
		iw_wr_u32(&w, h->qn);
		iw_wr_u32(&w, h->msn);
		iw_wr_u32(&w, h->mo);
	}
	return w.failed ? -ENOSPC : (int)w.len;
}
