/* SPDX-License-Identifier: BSD-2-Clause */
/* Whole DDP segments from an FPDU stream (fpdu_seg.h). */
#include <string.h>

#include "fpdu_seg.h"

int fpdu_seg_next(struct iw_fpdu_rx *rx, const uint8_t *in, size_t len, size_t *used,
		  const struct iw_ddp_seg **seg, uint8_t *pl, size_t cap, size_t *pl_len)
{
	size_t pos = 0;
	int rc = 0;
	*seg = NULL;
	while (pos < len) {
		struct iw_rx_event ev;
		size_t n = 0;
		rc = iw_fpdu_rx_next(rx, &ev, in + pos, len - pos, &n);
		pos += n;
		if (rc <= 0)
			break;
		if (ev.kind == IW_RX_SEG_HDR) {
			*pl_len = 0;
		} else if (ev.kind == IW_RX_PAYLOAD) {
			if (pl && ev.off + ev.len <= cap)
				memcpy(pl + ev.off, ev.data, ev.len);
			*pl_len = ev.off + ev.len;
		} else {
			*seg = ev.seg;
			rc = 2;
			break;
		}
	}
	*used = pos;
	return rc == 2 ? 1 : rc < 0 ? rc : 0;
}
