/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Marker arithmetic shared by the FPDU encoder (mpa_tx.c) and the stream
 * decoder (mpa_rx.c). Both must agree octet for octet on where a marker
 * falls, so the rule lives in one place.
 */
#ifndef IW_MPA_TX_H
#define IW_MPA_TX_H

#include <stdint.h>

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

#endif
