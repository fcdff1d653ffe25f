/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP reassembly of one direction: segments in, the byte stream out in
 * order, each octet once. Out-of-order segments wait in a queue sorted by
 * position; retransmissions and overlaps are trimmed to what is new (the
 * octets that arrived first are kept); a hole that cannot be filled (the
 * capture dropped it, or the snapshot length cut it) is reported as a gap
 * with its sequence numbers, and the stream goes on after it.
 *
 * Positions are 64-bit offsets from the first octet after the SYN (or from
 * the first segment seen when the capture starts mid-connection), so the
 * 32-bit sequence space may wrap freely.
 */
#ifndef RP_REASM_H
#define RP_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

/* A contiguous piece of the stream being delivered. */
struct rp_chunk {
	uint64_t rel;        /* stream position of data[0] */
	const uint8_t *data;
	size_t len;
	uint64_t frame, ts_ns;
	bool seg_start;      /* data[0] is the first payload octet of its segment */
};

struct rp_reasm_ops {
	void (*deliver)(void *ctx, const struct rp_chunk *c);
	/* [from, to) will never be delivered; frame: the frame that made it
	 * certain (0 at the end of the capture). */
	void (*gap)(void *ctx, uint64_t from, uint64_t to, uint64_t frame);
};

struct rp_oseg;

struct rp_reasm {
	bool started;        /* base is known */
	bool syn;            /* ... from a SYN */
	uint32_t base;       /* sequence number of position 0 */
	uint64_t next;       /* position of the next octet to deliver */
	struct rp_oseg *q;   /* waiting segments and holes, by position */
	struct rp_oseg *q_last;
	uint64_t q_len_max;  /* no waiting segment (hole aside) is longer */
	size_t q_bytes;
	bool fin;
	uint64_t fin_rel;
	/* statistics */
	uint64_t segs, retrans, ooo, overlaps, conflicts, gaps, gap_bytes;
	uint64_t q_steps;    /* waiting items looked at to queue others (cost) */
	const struct rp_reasm_ops *ops;
	void *ctx;
};

void rp_reasm_init(struct rp_reasm *r, const struct rp_reasm_ops *ops, void *ctx);
/* A SYN with initial sequence number isn: the stream starts at isn + 1. */
void rp_reasm_syn(struct rp_reasm *r, uint32_t isn);
/* A segment's payload (and its octets lost to the snapshot length). */
void rp_reasm_segment(struct rp_reasm *r, const struct rp_pkt *p);
/* A FIN at sequence number seq (the number after the last data octet). */
void rp_reasm_fin(struct rp_reasm *r, uint32_t seq);
/* The other side acknowledged up to seq: if that is inside data still
 * waiting behind a hole, the receiver had the hole's octets and only the
 * capture missed them, so the gap is reported now rather than at the end
 * of the capture. */
void rp_reasm_ack(struct rp_reasm *r, uint32_t seq, uint64_t frame);
/* Capture over: whatever still waits is delivered behind gaps. */
void rp_reasm_finish(struct rp_reasm *r);
/* Sequence number of a position. */
static inline uint32_t rp_reasm_seq(const struct rp_reasm *r, uint64_t rel)
{
	return r->base + (uint32_t)rel;
}

#endif
