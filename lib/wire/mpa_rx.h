/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stream decoder's calls for a caller that feeds one buffer through
 * several iw_fpdu_rx_next calls (the QP's receive batch).
 */
#ifndef IW_MPA_RX_H
#define IW_MPA_RX_H

#include <stddef.h>
#include <stdint.h>

#include "iwarp/wire.h"

/* iw_fpdu_rx_next, except that CRC-covered octets of in may stay queued
 * when it returns (they are fed with the adjacent octets of the next call,
 * in one CRC call per contiguous run instead of one per marker interval).
 * The caller keeps in unchanged and valid until iw_fpdu_rx_crc_flush, which
 * it calls before it lets the buffer go or feeds another one. */
int iw_fpdu_rx_next_held(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
			 size_t in_len, size_t *consumed);
/* Feed the queued octets to the CRC now. */
void iw_fpdu_rx_crc_flush(struct iw_fpdu_rx *rx);

#endif
