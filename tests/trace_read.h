/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading a libiwarp pcap trace back, independently of the writer: libpcap
 * reads the file, the Ethernet/IP/TCP framing and its checksums are checked
 * here, each connection's two streams are reassembled by sequence number,
 * and then decoded with the public wire codecs (the MPA Request and Reply,
 * then every FPDU with its CRC). Shared by the trace Check suite and
 * tests/trace_decode (which tests/trace_tshark.sh compares with tshark).
 */
#ifndef IW_TEST_TRACE_READ_H
#define IW_TEST_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <iwarp/wire.h>

#define RT_MAX_CONNS 1024
#define RT_OPCODES 16

/* One direction of a connection. */
struct rt_dir {
	uint8_t *data; /* the stream's octets, gaps left out */
	size_t len, cap;
	uint32_t isn; /* from the SYN */
	uint32_t nxt; /* next sequence number expected */
	bool fin;
	unsigned segs;  /* segments with payload */
	unsigned gaps;  /* segments that started past nxt (octets not captured) */
	unsigned backs; /* segments that started before nxt (never expected) */
	/* Where each segment with payload starts in data, and its length:
	 * rt_decode checks the segments that begin a PDU. */
	struct rt_seg {
		size_t off;
		uint32_t len;
	} *seg;
	unsigned seg_cap;
};

/* Side 0 sent the SYN (the TCP and MPA initiator). */
struct rt_conn {
	int family; /* 4 or 6 */
	uint8_t addr[2][16];
	uint16_t port[2];
	bool synack, ack;   /* the handshake's second and third segment seen */
	bool rst;
	unsigned bad_acks;  /* an ACK not equal to the other side's nxt */
	struct rt_dir dir[2];
};

struct rt_capture {
	struct rt_conn conn[RT_MAX_CONNS];
	int num_conns;
	unsigned records;
	unsigned notes;     /* syslog notes (an incomplete trace) */
	char note[256];     /* the last one's text */
	unsigned problems;  /* frames the tracer would not write, bad checksums */
	char why[256];      /* the first problem */
};

/* Read path into cap (zeroed first). Returns 0, or -1 when libpcap cannot
 * open or read the file (cap->why says why). Framing problems are counted
 * in cap->problems, not fatal. */
int rt_read(struct rt_capture *cap, const char *path);
/* The same from an open stream, which is closed (fuzz/fuzz_pcap_roundtrip
 * reads memory through fmemopen). Only the table entries it uses are
 * cleared: cap must be new (static) or rt_free'd. */
int rt_read_fp(struct rt_capture *cap, FILE *fp);
void rt_free(struct rt_capture *cap);

/* One direction's FPDUs. */
struct rt_flow {
	unsigned fpdus;              /* FPDU headers decoded */
	unsigned crc_good;           /* FPDUs whose CRC matched (or CRC off) */
	unsigned segs[RT_OPCODES];   /* FPDUs by RDMAP opcode */
	unsigned msgs[RT_OPCODES];   /* of those, with the DDP Last flag */
	uint64_t payload[RT_OPCODES];
	uint32_t payload_crc[RT_OPCODES]; /* CRC32c of each opcode's payload, in order */
	unsigned zero_len_writes;    /* tagged Writes without payload (RTRs) */
	int err;                     /* decoder error, negative errno, or 0 */
	enum iw_wire_err why;
	size_t used;                 /* stream octets decoded */
	bool truncated;              /* the stream ends inside an FPDU */
	/* PDUs (the MPA frame included) that no segment begins at, and PDUs
	 * whose first segment holds fewer than RT_PDU_START_MIN octets of
	 * them: Wireshark's MPA heuristic does not take such a segment as
	 * the start of a PDU and loses the framing from there. Counted
	 * without markers only, and 0 after a gap. */
	unsigned pdu_unaligned, pdu_short_starts;
};

/* A PDU's first segment must hold min(RT_PDU_START_MIN, the PDU's length)
 * octets of it: Wireshark 4.0's iwarp_mpa heuristic wants 20 to see an MPA
 * frame and 8 (MPA_SMALLEST_FPDU_LEN) to see an FPDU. */
#define RT_PDU_START_MIN 20u

struct rt_iwarp {
	bool req_ok, rep_ok;
	struct iw_mpa_frame req, rep; /* pd points into the capture */
	bool crc;
	struct rt_flow dir[2]; /* 0: initiator to responder */
};

/* Decode c's streams. Returns 0 when both MPA frames parse and both
 * streams decode to their end with every CRC good, else -1. */
int rt_decode(const struct rt_conn *c, struct rt_iwarp *out);

#endif
