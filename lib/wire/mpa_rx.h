/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stream decoder's calls for a caller that feeds one buffer through
 * several iw_fpdu_rx_next calls (the QP's receive batch).
 */
#ifndef IW_MPA_RX_H
#define IW_MPA_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/wire.h"

/* Held decoding only (markers on): payload that continues past one or more
 * markers, reported in one event instead of one per marker interval. data
 * and len span the wire octets from the first payload octet to the last,
 * the markers between them included (already checked and CRC'd); off is
 * the payload offset of the first. iw_fpdu_rx_run_* walk its pieces. */
#define IW_RX_PAYLOAD_RUN ((enum iw_rx_kind)0x40)

/* Held decoding only (markers off): a whole segment in one event, when its
 * trailer came in the same input as its header and its CRC is good: an
 * IW_RX_SEG_HDR event (with the payload that came with it: all of it)
 * and its IW_RX_SEG_END in one, so that a small message costs one decoder
 * call and one dispatch instead of two. */
#define IW_RX_SEG_WHOLE ((enum iw_rx_kind)0x41)

/* iw_fpdu_rx_next, except that CRC-covered octets of in may stay queued
 * when it returns (they are fed with the adjacent octets of the next call,
 * in one CRC call per contiguous run instead of one per marker interval),
 * and that payload across markers comes as IW_RX_PAYLOAD_RUN events. The
 * caller keeps in unchanged and valid until iw_fpdu_rx_crc_flush, which it
 * calls before it lets the buffer go or feeds another one. And an
 * IW_RX_SEG_HDR event carries the payload octets that follow the header in
 * in up to the next marker (data, len, off 0, as an IW_RX_PAYLOAD event
 * would; len 0 when none do): one call less per FPDU whose payload arrived
 * with its header, and an IW_RX_SEG_WHOLE event instead of both when its
 * trailer did too. */
int iw_fpdu_rx_next_held(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
			 size_t in_len, size_t *consumed);
/* Feed the queued octets to the CRC now. */
void iw_fpdu_rx_crc_flush(struct iw_fpdu_rx *rx);

/* The payload pieces of an IW_RX_PAYLOAD_RUN event, in order. */
struct iw_rx_run {
	const uint8_t *p;
	size_t left; /* wire octets of the run from p */
	uint32_t off;
	size_t k;    /* payload octets before the next marker */
};
/* Right after rx reported ev (the walk reads where rx stands). */
void iw_fpdu_rx_run_begin(struct iw_rx_run *r, const struct iw_fpdu_rx *rx,
			  const struct iw_rx_event *ev);
/* The next piece: true with data, len and its payload offset off. Inline:
 * it runs once per 508 octets. */
static inline bool iw_fpdu_rx_run_piece(struct iw_rx_run *r, const uint8_t **data, size_t *len,
					uint32_t *off)
{
	if (!r->left)
		return false;
	size_t k = r->k < r->left ? r->k : r->left;
	*data = r->p;
	*len = k;
	*off = r->off;
	r->off += (uint32_t)k;
	r->left -= k;
	r->p += k;
	if (r->left) {
		/* A run never ends inside a marker: one follows whole. */
		r->p += IW_MPA_MARKER_LEN;
		r->left -= IW_MPA_MARKER_LEN;
	}
	r->k = IW_MPA_MARKER_INTERVAL - IW_MPA_MARKER_LEN;
	return true;
}

#endif
