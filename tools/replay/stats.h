/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The summary: counts per RDMAP opcode, octets, CRC and other protocol
 * errors, TCP anomalies, and the first error with where it was. Updated by
 * emit.c for every reported item.
 */
#ifndef RP_STATS_H
#define RP_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "rp.h"

#define RP_OPCODES 16

struct rp_first_err {
	bool set;
	unsigned conn;
	char dir[4];
	uint64_t frame;
	bool has_off;
	uint32_t stream_off;
	bool has_seq;
	uint32_t seq;
	char what[200];
};

struct rp_stats {
	bool live;                  /* a replay session, not a capture */
	struct rp_capture_stats cap;
	uint64_t conns, iwarp_conns, mpa_frames, mpa_errors;
	uint64_t fpdus, wire_bytes;
	uint64_t crc_errors, marker_errors, proto_errors, lost;
	uint64_t terminates;
	uint64_t msgs[RP_OPCODES], segs[RP_OPCODES], payload[RP_OPCODES];
	uint64_t gaps, gap_bytes, retrans, ooo, overlaps, conflicts;
	struct rp_first_err first;
	uint64_t tx_fpdus, tx_bytes; /* a replay's own FPDUs */
};

void rp_stats_fpdu(struct rp_stats *s, const struct rp_origin *o, const struct rp_fpdu *f);
void rp_stats_mpa(struct rp_stats *s, const struct rp_origin *o, const struct rp_mpa *m);
/* A protocol error not tied to one decoded FPDU. */
void rp_stats_error(struct rp_stats *s, const struct rp_origin *o, bool has_off, uint32_t off,
		    enum iw_wire_err err, const char *what);
/* Protocol errors in total: what --check fails on. */
uint64_t rp_stats_errors(const struct rp_stats *s);
/* The FPDU's errors in words ("" if none), for reports and the summary. */
void rp_fpdu_problems(const struct rp_fpdu *f, char *buf, size_t cap);
/* True if the FPDU counts as a protocol error. */
bool rp_fpdu_bad(const struct rp_fpdu *f);

#endif
