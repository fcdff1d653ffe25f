/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-replay: shared types. The program reads a capture, rebuilds each
 * TCP direction (reasm.c), finds the MPA frames (mpa.c), decodes every FPDU
 * with the library's own stream decoder (fpdu.c, ulpdu.c) and reports
 * through one hub (emit.c) that keeps the statistics (stats.c), feeds the
 * recorder (record.c) and prints (print.c or json.c). With --replay the
 * recorded FPDUs of one side are sent to a live peer (replay.c).
 */
#ifndef RP_H
#define RP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/wire.h"

/* Exit status, as documented in --help and iwarp-replay(1). */
enum rp_exit {
	RP_EXIT_OK = 0,
	RP_EXIT_PROTO = 1, /* protocol errors found (--check) */
	RP_EXIT_USAGE = 2,
	RP_EXIT_INPUT = 3, /* capture unreadable, truncated, no TCP, unknown link type */
	RP_EXIT_NET = 4,   /* live peer unreachable, handshake failed */
};

/* A direction is named by the role of its sender. */
enum rp_role { RP_INITIATOR = 0, RP_RESPONDER = 1 };

enum rp_tri { RP_UNSET = -1, RP_OFF = 0, RP_ON = 1 };

#define RP_MAX_MAPS 64
#define RP_MAX_FAULTS 64
#define RP_MAX_TRUNCATE 0x20000

enum rp_fault_kind { RP_FAULT_CRC, RP_FAULT_FIELD, RP_FAULT_TRUNCATE, RP_FAULT_DELAY, RP_FAULT_DROP };

struct rp_fault {
	enum rp_fault_kind kind;
	uint64_t n;      /* FPDU number in the replayed direction (1-based) */
	int field;       /* RP_FAULT_FIELD: index into the field table (rewrite.c) */
	uint64_t value;  /* RP_FAULT_FIELD: new value */
	uint32_t arg;    /* RP_FAULT_TRUNCATE: octets kept; RP_FAULT_DELAY: ms */
	bool has_arg;
};

struct rp_stag_map {
	uint32_t from, to;
};

struct rp_opts {
	const char *path;
	bool json, check, quiet, summary, fail_on_term;
	bool payload;           /* --json: each FPDU's payload octets too */
	unsigned conn;          /* 0: every connection (decode) / the first iWARP one (replay) */
	int crc;                /* enum rp_tri: CRC forced on or off */
	int markers[2];         /* enum rp_tri, by sender role */
	bool stream_off_set[2]; /* by sender role */
	uint32_t stream_off[2];
	int responder_port;     /* -1: not given */
	bool siw[2];            /* read TERMINATEs of this sender with siw's layout */
	/* replay */
	bool replay;
	enum rp_role role;
	const char *peer;       /* initiator: addr:port */
	const char *listen;     /* responder: [addr:]port */
	struct rp_stag_map maps[RP_MAX_MAPS];
	int nmaps;
	bool to_off_set;
	uint64_t to_off;
	bool pace_fast;
	struct rp_fault faults[RP_MAX_FAULTS];
	int nfaults;
	uint32_t split;         /* 0: one write per FPDU */
	uint32_t timeout_ms;    /* every network wait */
	uint32_t linger_ms;     /* quiet time after the last FPDU before closing */
	bool no_wait;           /* do not wait for the peer's recorded answers */
	int mpa_rev;            /* 0: as recorded */
	int ird, ord;           /* -1: as recorded */
	int rtr;                /* -1: as recorded, else IW_RTR_* bits (0: no P2P) */
	uint8_t *pd;            /* private data override (pd_len >= 0) */
	int pd_len;
};

/* Where a reported item comes from. */
struct rp_origin {
	unsigned conn;       /* 0 for a live session */
	const char *dir;     /* "i2r", "r2i" (capture), "tx", "rx" (live) */
	uint64_t frame;      /* capture frame holding the last octet (0: live) */
	uint64_t first_frame;
	uint64_t ts_ns;      /* capture time, or ns since a live session began */
	bool has_seq;
	uint32_t seq;        /* TCP sequence number of the item's first octet */
};

/* DDP and RDMAP headers of one ULPDU, decoded with the public codecs. */
struct rp_ulpdu {
	struct iw_ddp_hdr ddp;
	bool ddp_in;            /* the DDP header was complete */
	enum iw_wire_err err;   /* first syntax error, IW_WERR_NONE if none */
	unsigned opcode;
	size_t hdr_len;         /* DDP + RDMAP header octets present */
	uint32_t payload_len;
	bool has_rdmap;         /* rdmap holds the opcode's RDMAP header */
	struct iw_rdmap_hdr rdmap;
	bool term_siw;          /* the Terminate was read with siw's bit layout */
	uint8_t term_raw[4];    /* its control octets as received */
};

/* One FPDU as it is on the wire. */
struct rp_fpdu {
	uint64_t n;             /* number within its direction, from 1 */
	uint32_t stream_off;    /* its first octet (a leading marker included) */
	size_t wire_len;
	uint16_t ulpdu_len;
	uint8_t pad;
	bool crc_on;
	uint32_t crc_wire;      /* the CRC field (CRC32c value, host order) */
	uint32_t crc_calc;      /* CRC32c of the octets before it */
	bool crc_ok;            /* crc_on and equal, or CRC off */
	int nmarkers;
	uint16_t fpduptr[IW_FPDU_MARKERS_MAX];
	bool markers_ok;
	const uint8_t *ulpdu;   /* markers stripped */
	enum iw_wire_err frame_err; /* what the stream decoder said of it */
	struct rp_ulpdu u;
	size_t sent_len;        /* replay: octets actually sent (truncation) */
};

/* One MPA Request or Reply as seen. */
struct rp_mpa {
	enum iw_mpa_kind kind;
	int rc;                 /* 0 valid, else -EPROTO with err */
	enum iw_wire_err err;
	struct iw_mpa_frame f;
	const uint8_t *raw;
	size_t len;
};

/* Connection endpoints for the reports. */
struct rp_ep {
	int family;             /* AF_INET, AF_INET6 */
	uint8_t addr[16];
	uint16_t port;
};

#endif /* RP_H */
