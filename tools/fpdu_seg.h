/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One DDP segment at a time out of an FPDU stream: the decoder's events
 * (include/iwarp/wire.h, iw_fpdu_rx_next) gathered up to a segment's end.
 * Shared by iwarp-conform (tools/conform/fpdu.c) and iwarp-perf's discard
 * peer (tools/perf_sink_wire.c), which read raw sockets.
 */
#ifndef IWARP_TOOLS_FPDU_SEG_H
#define IWARP_TOOLS_FPDU_SEG_H

#include <stddef.h>
#include <stdint.h>

#include <iwarp/wire.h>

/* Feed in[0..len) to rx until a segment ends. Returns 1 when one did
 * (*seg, valid until rx decodes the next FPDU; the payload octets that fit
 * in pl[0..cap) copied there), 0 when all of in was used without an end
 * (feed more), or the decoder's negative error (rx->err says which).
 * *used: octets of in consumed; *pl_len: the payload's length so far. */
int fpdu_seg_next(struct iw_fpdu_rx *rx, const uint8_t *in, size_t len, size_t *used,
		  const struct iw_ddp_seg **seg, uint8_t *pl, size_t cap, size_t *pl_len);

#endif /* IWARP_TOOLS_FPDU_SEG_H */
