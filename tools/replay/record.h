/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What --replay needs from the capture: the MPA frames and the FPDUs (as
 * ULPDUs, markers and framing removed) of one connection, both directions,
 * each FPDU with its capture time and the number of messages the other side
 * had completed when it began (so the replay can wait for the live peer's
 * answers where the recording did).
 */
#ifndef RP_RECORD_H
#define RP_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp.h"

struct rp_rec_fpdu {
	uint64_t n, frame, ts_ns;
	uint64_t peer_msgs;  /* messages of the other direction before it */
	uint8_t *ulpdu;
	uint16_t len;
	size_t hdr_len;      /* DDP + RDMAP header octets (0: header unusable) */
};

struct rp_record {
	bool active;
	unsigned want;       /* --conn, 0: the first iWARP connection */
	unsigned conn;       /* the connection recorded, 0: none yet */
	struct rp_ep ep[2];  /* by role */
	bool has_mpa[2];
	uint8_t mpa[2][IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	size_t mpa_len[2];
	bool negotiated, crc, markers[2];
	struct rp_rec_fpdu *f[2];
	size_t n[2], cap[2];
};

void rp_record_init(bool active, unsigned want);
struct rp_record *rp_record_get(void);
/* A connection is being reported: record it if it is the one wanted. */
void rp_record_conn(unsigned conn, const struct rp_ep ep_by_role[2]);
void rp_record_mpa(unsigned conn, enum rp_role sender, const uint8_t *raw, size_t len);
void rp_record_neg(unsigned conn, bool crc, const bool markers_by_role[2]);
void rp_record_fpdu(unsigned conn, enum rp_role sender, const struct rp_fpdu *f, uint64_t frame,
		    uint64_t ts_ns, uint64_t peer_msgs);
void rp_record_free(void);

#endif
