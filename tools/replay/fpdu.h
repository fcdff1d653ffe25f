/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FPDU decoding of one direction's byte stream, for a capture or a live
 * peer. The library's stream decoder (iw_fpdu_rx_next) does the framing,
 * the marker checks and the header syntax; this layer keeps each FPDU's
 * wire octets so that it can
 *  - check the CRC itself (the decoder runs with IW_RX_SKIP_CRC), and so
 *    report a bad CRC and carry on, as a capture reader must;
 *  - step over an FPDU whose header is wrong by its ULPDU_Length (the
 *    framing is still sound) and go on decoding the next one;
 *  - after a gap or a marker mismatch, where the framing is lost, restart
 *    at the next TCP segment that begins with a good FPDU (senders align
 *    FPDUs with segments, RFC 5044 section 8).
 */
#ifndef RP_FPDU_H
#define RP_FPDU_H

#include <stdbool.h>
#include <stdint.h>

#include "rp.h"
#include "util.h"

/* An FPDU's largest extent on the wire, markers included. */
#define RP_FPDU_WIRE_MAX \
	(2 + IW_MPA_ULPDU_MAX + 3 + IW_MPA_CRC_LEN + IW_MPA_MARKER_LEN * IW_FPDU_MARKERS_MAX)

/* Where the octets being fed come from. */
struct rp_feed_meta {
	uint64_t frame, ts_ns;
	bool seg_start; /* the first octet fed begins a TCP segment */
};

struct rp_fpdu_dec_ops {
	/* The first octet of an FPDU arrived. */
	void (*start)(void *ctx);
	/* A complete FPDU: f is valid during the call only. */
	void (*fpdu)(void *ctx, const struct rp_fpdu *f, uint64_t first_frame,
		     const struct rp_feed_meta *m);
	/* Framing lost at the FPDU that starts at stream_off. */
	void (*error)(void *ctx, uint32_t stream_off, enum iw_wire_err err,
		      const struct rp_feed_meta *m);
	/* have octets of an FPDU at stream_off will never be complete
	 * (end: the stream ended, else a gap). */
	void (*lost)(void *ctx, uint32_t stream_off, size_t have, bool end);
};

struct rp_fpdu_dec {
	struct iw_fpdu_rx rx;
	bool crc, markers, siw;
	int state;
	uint32_t pos;              /* stream offset of the next input octet */
	uint32_t skip_end;         /* stepping over a bad FPDU up to here */
	enum iw_wire_err skip_err;
	bool resync;               /* not yet known to be on an FPDU boundary */
	/* The current FPDU's wire octets, and the same with the markers
	 * taken out. Both grow to the largest FPDU the stream carried, not
	 * to RP_FPDU_WIRE_MAX up front: a capture of many connections with
	 * small FPDUs would otherwise hold 4 x 66 KiB per connection. */
	struct rp_buf raw;
	uint32_t raw_off;
	uint8_t *plain;
	size_t plain_cap;
	uint64_t first_frame;
	uint64_t n;                /* FPDUs reported */
	uint64_t msgs;             /* of which with the DDP L bit */
	const struct rp_fpdu_dec_ops *ops;
	void *ctx;
};

void rp_fpdu_dec_init(struct rp_fpdu_dec *d, bool crc, bool markers, bool siw, uint32_t stream_off,
		      const struct rp_fpdu_dec_ops *ops, void *ctx);
void rp_fpdu_dec_feed(struct rp_fpdu_dec *d, const uint8_t *p, size_t n,
		      const struct rp_feed_meta *m);
/* Octets are missing; the stream goes on at stream offset next. */
void rp_fpdu_dec_gap(struct rp_fpdu_dec *d, uint32_t next);
/* The stream ended: an incomplete FPDU is reported lost. Returns its
 * octets (0 if the stream ended on an FPDU boundary). */
size_t rp_fpdu_dec_finish(struct rp_fpdu_dec *d);
void rp_fpdu_dec_free(struct rp_fpdu_dec *d);

/* Describe one complete FPDU from its len wire octets starting at stream
 * offset stream_off: markers, CRC, ULPDU headers. plain (RP_FPDU_WIRE_MAX
 * octets) receives the octets without markers; f->ulpdu points into it. */
void rp_fpdu_describe(struct rp_fpdu *f, const uint8_t *raw, size_t len, uint32_t stream_off,
		      bool crc, bool markers, bool siw, uint8_t *plain);

#endif
