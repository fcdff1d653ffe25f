/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Marker arithmetic shared by the FPDU encoder (mpa_tx.c) and the stream
 * decoder (mpa_rx.c). Both must agree octet for octet on where a marker
 * falls, so the rule lives in one place.
 */
#ifndef IW_MPA_TX_H
#define IW_MPA_TX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "iwarp/wire.h"

/* A marker starts at every stream offset that is a multiple of 512. The
 * interval divides 2^32, so the phase survives stream_off wrapping. */
#define IW_MARKER_MASK (IW_MPA_MARKER_INTERVAL - 1)

/* Octets from stream offset off up to the start of the next marker (0 when
 * a marker starts exactly at off). */
static inline uint32_t iw_mpa_to_marker(uint32_t off)
{
	return (IW_MPA_MARKER_INTERVAL - (off & IW_MARKER_MASK)) & IW_MARKER_MASK;
}

/* Non-marker octets between two consecutive markers. */
#define IW_MARKER_GAP (IW_MPA_MARKER_INTERVAL - IW_MPA_MARKER_LEN)

/* FPDUPTR is 16 bits: a marker further than this from its FPDU's first
 * octet cannot point back at it. */
#define IW_FPDUPTR_MAX 0xFFFFu

/* iw_fpdu_encode with the whole FPDU written at dst (cap octets of room):
 * the length, hdr, the payload copied, markers where due, pad and CRC,
 * with the CRC computed in one call over those contiguous octets. The
 * octets are the ones iw_fpdu_encode gathers. Returns the wire length, and
 * advances tx->stream_off by it, or 0 with tx untouched when this path
 * does not apply (more than cap octets, an argument iw_fpdu_encode
 * refuses): the caller uses iw_fpdu_encode. */
size_t iw_fpdu_encode_flat(struct iw_fpdu_tx *tx, uint8_t *dst, size_t cap, const uint8_t *hdr,
			   size_t hdr_len, const struct iovec *payload, int payload_cnt);

#endif
