/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP connections of a capture and the iWARP stream of each direction.
 *
 * conn.c keeps the table (by address/port pair), sorts out who is the
 * initiator (the SYN's sender; else the sender of the MPA Request; else
 * --responder-port; else the first sender seen), and feeds each
 * direction's reassembly. stream.c takes the reassembled bytes: the MPA
 * frame first (mpa.c), then FPDUs (fpdu.c) once the connection's CRC and
 * marker settings are known.
 */
#ifndef RP_CONN_H
#define RP_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "fpdu.h"
#include "reasm.h"
#include "rp.h"
#include "util.h"

enum rp_st {
	RP_ST_MPA,  /* looking for the MPA frame at the start of the stream */
	RP_ST_NEG,  /* frame seen; octets wait until CRC/markers are known */
	RP_ST_FPDU, /* decoding FPDUs */
	RP_ST_OFF,  /* not iWARP, or given up */
};

struct rp_conn;

/* Where a kept piece came from, so that it is reported with its frame. */
struct rp_pend_mark {
	size_t off;
	uint64_t frame, ts_ns;
	bool seg_start;
};

struct rp_stream {
	struct rp_conn *conn;
	int ep;                  /* index of the sending endpoint */
	struct rp_reasm ra;
	enum rp_st state;
	bool decided;            /* MPA frame found, or known not to be there */
	struct rp_buf pend;      /* octets kept while in RP_ST_MPA / RP_ST_NEG */
	uint64_t pend_rel;       /* stream position of pend.p[0] */
	struct rp_pend_mark *marks; /* where each delivered piece of pend began */
	size_t nmarks, marks_cap;
	uint64_t fpdu_rel;       /* stream position of FPDU stream offset off0 */
	uint32_t off0;
	bool has_mpa;
	struct rp_mpa mpa;       /* raw points into mpa_raw */
	uint8_t mpa_raw[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	bool dec_on;
	struct rp_fpdu_dec dec;
	uint64_t other_msgs;     /* peer messages when the current FPDU began */
	uint64_t last_frame, last_ts;
};

struct rp_conn {
	unsigned id;
	struct rp_ep ep[2];
	struct rp_stream st[2];
	int init_ep;             /* endpoint index of the initiator */
	bool roles_known;
	const char *roles_from;
	bool announced;
	bool negotiated;
	bool crc;
	bool markers[2];         /* by sending endpoint */
	bool rejected;
	bool ended;              /* both FINs or a RST */
	struct rp_conn *hnext, *next;
};

/* ---- conn_base.c (called by the three files below) */
void rp_conns_init(const struct rp_opts *o);
const struct rp_opts *rp_conns_opts(void);
/* Print the connection line the first time something is reported. */
void rp_conn_announce(struct rp_conn *c);
/* Roles learnt from an MPA Request sent by endpoint ep. */
void rp_conn_roles_from_mpa(struct rp_conn *c, int ep);
void rp_stream_origin(const struct rp_stream *s, struct rp_origin *o, uint64_t rel);
/* An origin for an FPDU at stream offset off. */
void rp_stream_origin_off(const struct rp_stream *s, struct rp_origin *o, uint32_t off);
/* The first n kept octets are used up (an MPA frame). */
void rp_stream_consume(struct rp_stream *s, size_t n);

/* ---- mpa.c (called by stream.c) */
enum rp_mpa_scan {
	RP_MPA_WAIT,  /* not enough octets yet */
	RP_MPA_NONE,  /* the stream does not start with an MPA frame */
	RP_MPA_FOUND, /* frame kept and consumed: FPDUs follow */
	RP_MPA_BAD,   /* a broken frame, reported; the direction is off */
};
/* Look for the MPA frame in s->pend. */
enum rp_mpa_scan rp_mpa_scan(struct rp_stream *s);
/* Settle CRC and markers once both directions are decided (or force it
 * with what is known, at a gap or the end of the capture). True when this
 * call settled them. */
bool rp_mpa_negotiate(struct rp_conn *c, bool force);

/* ---- conn.c */
void rp_conns_packet(const struct rp_pkt *p);
/* End of capture: flush reassembly, finish every stream, fold the TCP
 * counters into the statistics. */
void rp_conns_finish(void);
void rp_conns_free(void);

static inline enum rp_role rp_conn_role(const struct rp_conn *c, int ep)
{
	return ep == c->init_ep ? RP_INITIATOR : RP_RESPONDER;
}

/* ---- stream.c (called by conn.c) */
void rp_stream_init(struct rp_stream *s, struct rp_conn *c, int ep);
/* Octets kept while waiting go to the FPDU decoder from position rel,
 * stream offset off. */
void rp_stream_start_fpdus(struct rp_stream *s, uint64_t rel, uint32_t off);
/* End of capture, before the final negotiation: decide a stream still
 * looking for its MPA frame. */
void rp_stream_settle(struct rp_stream *s);
/* End of capture: report an FPDU left incomplete. */
void rp_stream_finish(struct rp_stream *s);
/* The direction has no MPA frame; FPDUs (if options allow) from rel. */
void rp_stream_not_mpa(struct rp_stream *s, uint64_t rel);
void rp_stream_free(struct rp_stream *s);
/* rp_mpa_negotiate, then start the FPDUs of every direction waiting. */
void rp_stream_negotiate(struct rp_conn *c, bool force);
extern const struct rp_reasm_ops rp_stream_reasm_ops;

#endif
