/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libiwarp wire codecs: MPA (RFC 5044 + RFC 6581), DDP (RFC 5041) and
 * RDMAP (RFC 5040 + RFC 7306) headers, the FPDU encoder and the FPDU stream
 * decoder. Public so that tools (replay, pcap decoders, fuzzers) can drive the
 * same code as the protocol engine.
 *
 * Conventions
 *  - Functions return 0 (or a length) on success and a negative errno on
 *    failure. -EAGAIN only ever means "need more input bytes".
 *  - A peer's protocol violation is -EPROTO (-EBADMSG for an MPA CRC error).
 *    The reason is reported as an enum iw_wire_err; iw_wire_err_term() maps it
 *    to the TERMINATE triple RFC 5040/5041/5044 prescribe, and
 *    iw_wire_err_str() names it for humans.
 *  - No function here allocates. Decoded pointers borrow the caller's input.
 *  - All multi-octet fields are host-order integers in the structs; the
 *    codecs convert. The MPA CRC is the standard CRC32c value and is put on
 *    the wire least-significant octet first (32 zero octets -> aa 36 91 8a).
 */
#ifndef IWARP_WIRE_H
#define IWARP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ CRC32c */

/* Standard CRC32c (Castagnoli, reflected, init and final XOR 0xFFFFFFFF)
 * of buf[0..len). iw_crc32c("123456789", 9) == 0xE3069283. */
uint32_t iw_crc32c(const void *buf, size_t len);

/* Incremental form: start with IW_CRC32C_INIT, feed any number of pieces
 * with iw_crc32c_update() (a buffer) or iw_crc32c_iov() (iovcnt iovecs),
 * each returning the new state, finish with iw_crc32c_final(), which
 * returns the CRC32c value. */
#define IW_CRC32C_INIT 0xFFFFFFFFu
uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len);
uint32_t iw_crc32c_iov(uint32_t state, const struct iovec *iov, int iovcnt);
static inline uint32_t iw_crc32c_final(uint32_t state) { return ~state; }

/* ====================================================== TERMINATE triple */

/* A TERMINATE triple packed as the first two octets of a Terminate message:
 * bits 15..12 layer, 11..8 error type, 7..0 error code (RFC 5040 6.2). */
#define IW_TERM(layer, etype, ecode) \
	((uint16_t)((((layer) & 0xF) << 12) | (((etype) & 0xF) << 8) | ((ecode) & 0xFF)))
#define IW_TERM_LAYER(t) (((t) >> 12) & 0xF)
#define IW_TERM_ETYPE(t) (((t) >> 8) & 0xF)
#define IW_TERM_ECODE(t) ((t) & 0xFF)
/* "No TERMINATE": a value outside the 16-bit triple space, so that it can
 * never be mistaken for IW_TERM(0, 0, 0) (RDMAP local catastrophic error).
 * The 32-bit fields that carry a triple (iw_wc.vendor_err,
 * iw_async_event.term, iw_cm_event.term) hold it when no TERMINATE was sent
 * or received; iw_term_str names it "none". Test with == IW_TERM_NONE, or
 * IW_TERM_IS_TRIPLE() before taking a value apart with the macros above. */
#define IW_TERM_NONE 0xFFFFFFFFu
#define IW_TERM_IS_TRIPLE(t) ((uint32_t)(t) <= 0xFFFFu)

enum iw_term_layer { IW_LAYER_RDMAP = 0, IW_LAYER_DDP = 1, IW_LAYER_LLP = 2 };

enum iw_term_code {
	/* RDMAP (layer 0) */
	IW_TERM_RDMAP_CATASTROPHIC    = IW_TERM(0, 0, 0x00),
	IW_TERM_RDMAP_INV_STAG        = IW_TERM(0, 1, 0x00),
	IW_TERM_RDMAP_BASE_BOUNDS     = IW_TERM(0, 1, 0x01),
	IW_TERM_RDMAP_ACCESS          = IW_TERM(0, 1, 0x02),
	IW_TERM_RDMAP_STAG_STREAM     = IW_TERM(0, 1, 0x03),
	IW_TERM_RDMAP_TO_WRAP         = IW_TERM(0, 1, 0x04),
	IW_TERM_RDMAP_PROT_NOINV      = IW_TERM(0, 1, 0x09),
	IW_TERM_RDMAP_PROT_UNSPEC     = IW_TERM(0, 1, 0xFF),
	IW_TERM_RDMAP_VERSION         = IW_TERM(0, 2, 0x05),
	IW_TERM_RDMAP_OPCODE          = IW_TERM(0, 2, 0x06),
	IW_TERM_RDMAP_CATA_STREAM     = IW_TERM(0, 2, 0x07),
	IW_TERM_RDMAP_CATA_GLOBAL     = IW_TERM(0, 2, 0x08),
	IW_TERM_RDMAP_OP_NOINV        = IW_TERM(0, 2, 0x09),
	IW_TERM_RDMAP_OP_UNSPEC       = IW_TERM(0, 2, 0xFF),
	/* DDP (layer 1) */
	IW_TERM_DDP_CATASTROPHIC      = IW_TERM(1, 0, 0x00),
	IW_TERM_DDP_T_INV_STAG        = IW_TERM(1, 1, 0x00),
	IW_TERM_DDP_T_BASE_BOUNDS     = IW_TERM(1, 1, 0x01),
	IW_TERM_DDP_T_STAG_STREAM     = IW_TERM(1, 1, 0x02),
	IW_TERM_DDP_T_TO_WRAP         = IW_TERM(1, 1, 0x03),
	IW_TERM_DDP_T_VERSION         = IW_TERM(1, 1, 0x04),
	IW_TERM_DDP_U_INV_QN          = IW_TERM(1, 2, 0x01),
	IW_TERM_DDP_U_NO_BUF          = IW_TERM(1, 2, 0x02),
	IW_TERM_DDP_U_MSN_RANGE       = IW_TERM(1, 2, 0x03),
	IW_TERM_DDP_U_INV_MO          = IW_TERM(1, 2, 0x04),
	IW_TERM_DDP_U_TOO_LONG        = IW_TERM(1, 2, 0x05),
	IW_TERM_DDP_U_VERSION         = IW_TERM(1, 2, 0x06),
	/* LLP / MPA (layer 2, error type 0) */
	IW_TERM_LLP_CLOSED            = IW_TERM(2, 0, 0x01),
	IW_TERM_LLP_CRC               = IW_TERM(2, 0, 0x02),
	IW_TERM_LLP_MARKER            = IW_TERM(2, 0, 0x03),
	IW_TERM_LLP_BAD_FRAME         = IW_TERM(2, 0, 0x04),
	IW_TERM_LLP_CATASTROPHIC      = IW_TERM(2, 0, 0x05),
	IW_TERM_LLP_IRD               = IW_TERM(2, 0, 0x06),
	IW_TERM_LLP_NO_RTR            = IW_TERM(2, 0, 0x07),
};

/* A readable name for a triple, e.g. "DDP untagged buffer: invalid MSN, no
 * buffer available"; "RDMAP local catastrophic error" for IW_TERM(0, 0, 0),
 * "none" for IW_TERM_NONE and "not a TERMINATE triple" for any other value
 * above 0xFFFF. Unknown triples give "unknown <layer> error". The LLP error
 * type is ignored when naming (Chelsio sends type 3 for MPA). */
const char *iw_term_str(uint32_t term);
/* "RDMAP", "DDP", "LLP" or "reserved". */
const char *iw_term_layer_str(unsigned layer);

/* ============================================== decode/encode failures */

/* Why a parse failed. Each maps to one TERMINATE triple (iw_wire_err_term)
 * and one message (iw_wire_err_str). Names are stable: the vector files use
 * them (iw_wire_err_name / iw_wire_err_from_name). */
enum iw_wire_err {
	IW_WERR_NONE = 0,
	/* MPA connection frames: TERMINATE LLP 0x04 */
	IW_WERR_MPA_KEY,          /* key is neither the Request nor the Reply key */
	IW_WERR_MPA_REV,          /* revision not 1 or 2 */
	IW_WERR_MPA_RESERVED,     /* reserved flag bits set (strict parsing only) */
	IW_WERR_MPA_PD_LEN,       /* PD_Length > 512 */
	IW_WERR_MPA_TRUNCATED,    /* the frame ended early (complete-input parsing) */
	IW_WERR_MPA_ENH_SHORT,    /* enhanced frame with PD_Length < 4 */
	IW_WERR_MPA_REJECT_REQ,   /* R set in a Request (strict parsing only) */
	/* FPDU framing */
	IW_WERR_FPDU_CRC,         /* CRC mismatch: LLP 0x02, -EBADMSG */
	IW_WERR_FPDU_MARKER,      /* FPDUPTR or marker reserved field wrong: LLP 0x03 */
	IW_WERR_FPDU_TOO_LONG,    /* ULPDU_Length above the receive limit: DDP 0/0 */
	IW_WERR_FPDU_TOO_SHORT,   /* ULPDU_Length below the headers it announces: DDP 0/0 */
	IW_WERR_FPDU_TRUNCATED,   /* stream ended inside an FPDU (complete input) */
	/* DDP header */
	IW_WERR_DDP_T_VERSION,    /* tagged, DV != 1: DDP 1/0x04 */
	IW_WERR_DDP_U_VERSION,    /* untagged, DV != 1: DDP 2/0x06 */
	IW_WERR_DDP_QN,           /* QN does not fit the opcode: DDP 2/0x01 */
	IW_WERR_DDP_MSN_ZERO,     /* reserved for the check layer; not raised by parse */
	/* RDMAP header */
	IW_WERR_RDMAP_VERSION,    /* RV != 1: RDMAP 2/0x05 */
	IW_WERR_RDMAP_OPCODE,     /* unknown opcode, or tagged/untagged mismatch: RDMAP 2/0x06 */
	IW_WERR_RDMAP_NOT_LAST,   /* single-segment message without L: RDMAP 2/0x06 */
	IW_WERR_RDMAP_TERM,       /* malformed Terminate payload: RDMAP 2/0xFF */
	IW_WERR_RDMAP_ATOMIC_OP,  /* atomic opcode not FetchAdd/CmpSwap: RDMAP 2/0x06 */
	IW_WERR__COUNT
};
/* A sentence naming the failure, e.g. "MPA PD_Length above 512"; "no
 * error" for IW_WERR_NONE, "unknown wire error" outside the enum. */
const char *iw_wire_err_str(enum iw_wire_err e);
/* The stable name of a failure, e.g. "mpa_key" for IW_WERR_MPA_KEY ("none"
 * for IW_WERR_NONE, "unknown" outside the enum). */
const char *iw_wire_err_name(enum iw_wire_err e); /* e.g. "mpa_key" */
/* The enum iw_wire_err value whose iw_wire_err_name is name (not NULL), or
 * -1 if none is. */
int iw_wire_err_from_name(const char *name);      /* -1 if unknown */
/* The TERMINATE triple (IW_TERM packing) RFC 5040/5041/5044 prescribe for
 * the failure; 0 for IW_WERR_NONE, IW_TERM_RDMAP_CATASTROPHIC outside the
 * enum. */
uint16_t iw_wire_err_term(enum iw_wire_err e);

/* ====================================================== MPA connection */

#define IW_MPA_KEY_LEN 16
#define IW_MPA_FRAME_HDR_LEN 20
#define IW_MPA_PD_MAX 512
#define IW_MPA_6581_LEN 4
#define IW_MPA_IRD_ORD_MAX 0x3FFF /* also "no negotiation" for Intel */
#define IW_MPA_KEY_REQ "MPA ID Req Frame"
#define IW_MPA_KEY_REP "MPA ID Rep Frame"

enum iw_mpa_flag {
	IW_MPA_FLAG_M = 0x80,        /* markers wanted on the traffic towards me */
	IW_MPA_FLAG_C = 0x40,        /* CRC */
	IW_MPA_FLAG_R = 0x20,        /* reject (Reply only) */
	IW_MPA_FLAG_ENHANCED = 0x10, /* RFC 6581 (Rev 2) */
	IW_MPA_FLAG_RES = 0x0F,
};

enum iw_mpa_kind { IW_MPA_REQUEST = 1, IW_MPA_REPLY = 2 };

/* RTR types of RFC 6581 control flags B, C, D, as a bit set. */
enum iw_rtr {
	IW_RTR_SEND = 1 << 0,  /* B: zero-length Send */
	IW_RTR_WRITE = 1 << 1, /* C: zero-length RDMA Write */
	IW_RTR_READ = 1 << 2,  /* D: zero-length RDMA Read */
};

/* One MPA Request or Reply (a Reply with R set is a Reject). */
struct iw_mpa_frame {
	enum iw_mpa_kind kind;
	uint8_t rev;   /* 1 or 2 */
	uint8_t flags; /* octet 16 as on the wire: IW_MPA_FLAG_* */
	/* RFC 6581 block, present iff rev == 2 and flags has ENHANCED. */
	bool p2p;      /* control flag A */
	uint8_t rtr;   /* enum iw_rtr bits from B, C, D */
	uint16_t ird;  /* 14 bits */
	uint16_t ord;  /* 14 bits */
	/* ULP private data (after the RFC 6581 block when present). Borrowed:
	 * points into the parsed buffer, or is read by the builder. */
	const uint8_t *pd;
	uint16_t pd_len;
};

/* True if f carries the RFC 6581 block: rev 2 with IW_MPA_FLAG_ENHANCED. */
static inline bool iw_mpa_frame_enhanced(const struct iw_mpa_frame *f)
{
	return f->rev == 2 && (f->flags & IW_MPA_FLAG_ENHANCED);
}

/* Parse flags. */
enum {
	IW_MPA_PARSE_STRICT = 1 << 0,   /* reserved flag bits / R in a Request are errors */
	IW_MPA_PARSE_COMPLETE = 1 << 1, /* input is all there is: short is an error */
};

/* Parse the frame of the given kind at the start of buf.
 *  0        frame valid; *out_len = its length (20 + PD_Length). Bytes after
 *           it are not looked at: they belong to the FPDU stream.
 *  -EAGAIN  incomplete; *out_len = total bytes needed so far (20 until the
 *           header is in, then 20 + PD_Length). With IW_MPA_PARSE_COMPLETE
 *           this is -EPROTO with IW_WERR_MPA_TRUNCATED instead.
 *  -EPROTO  invalid; *why says why (TERMINATE LLP 0x04).
 * Lenient by default: non-zero reserved flag bits are kept in f->flags and
 * ignored, as siw and Chelsio's experiments use them. */
int iw_mpa_frame_parse(struct iw_mpa_frame *f, size_t *out_len, enum iw_wire_err *why,
		       enum iw_mpa_kind kind, const uint8_t *buf, size_t len, unsigned flags);

/* Encode f into out[0..cap). pd_cap limits the total private data octets
 * (RFC 6581 block included) for peers with small limits (Chelsio: 255); 0
 * means IW_MPA_PD_MAX. Returns the frame length, or -EINVAL (rev not 1/2,
 * IRD/ORD above 0x3FFF, pd_len but no pd), -EMSGSIZE (private data over the
 * cap) or -ENOSPC (cap too small). The ENHANCED flag in f->flags decides
 * whether the RFC 6581 block is written (rev 2 only). */
int iw_mpa_frame_build(uint8_t *out, size_t cap, const struct iw_mpa_frame *f, size_t pd_cap);

/* The FPDU framing a connection's two MPA frames agree on. */
struct iw_mpa_framing {
	bool crc;            /* CRC on, both ways */
	bool markers_to_req; /* markers in FPDUs sent to the Request's sender */
	bool markers_to_rep; /* markers in FPDUs sent to the Reply's sender */
};

/* The framing from the Request's and the Reply's flags (RFC 5044 section
 * 7.1.2): CRC both ways when either frame has C; markers towards a side
 * that set M in its own frame. A frame not seen counts as flags 0. The one
 * rule the library's handshake and iwarp-replay both use. */
void iw_mpa_framing(struct iw_mpa_framing *out, uint8_t req_flags, uint8_t rep_flags);

/* ====================================================== FPDU framing */

#define IW_MPA_MARKER_INTERVAL 512
#define IW_MPA_MARKER_LEN 4
#define IW_MPA_CRC_LEN 4
#define IW_MPA_ULPDU_MAX 65535

/* MULPDU for an effective MSS (RFC 5044 section 8.1.2):
 * markers off: EMSS - (6 + EMSS % 4); on: EMSS - (6 + 4*ceil(EMSS/512) + EMSS % 4).
 * Clamped to IW_MPA_ULPDU_MAX; 0 if EMSS is too small to carry an FPDU. */
uint32_t iw_mpa_mulpdu(uint32_t emss, bool markers);

/* Pad octets after a ULPDU of this length: (4 - (2 + len) % 4) % 4. */
static inline unsigned iw_mpa_pad(uint32_t ulpdu_len) { return (4 - ((2 + ulpdu_len) & 3)) & 3; }

/* Octets an FPDU with this ULPDU occupies on the wire when it starts at
 * stream offset stream_off (markers counted when on). */
size_t iw_fpdu_wire_len(uint32_t stream_off, uint32_t ulpdu_len, bool markers);

/* Sender state of one direction. stream_off counts octets since SeqStart
 * (the first octet after this side's MPA frame), modulo 2^32, and fixes the
 * marker phase. */
struct iw_fpdu_tx {
	bool crc;
	bool markers;
	uint32_t stream_off;
};
/* Start a sender: crc and markers as negotiated, stream_off the offset of
 * the next octet it frames (0 right after this side's MPA frame). */
void iw_fpdu_tx_init(struct iw_fpdu_tx *tx, bool crc, bool markers, uint32_t stream_off);

/* Largest header the encoder gathers: untagged DDP (18) + atomic request (52)
 * rounded up. Terminate and Read Request fit under it too. */
#define IW_FPDU_HDR_MAX 72
/* Markers that one FPDU of the largest size can contain. */
#define IW_FPDU_MARKERS_MAX 130
/* iovecs iw_fpdu_encode may need for a payload of payload_cnt pieces:
 * head, each piece, pad+CRC, and per marker a marker slot plus one split. */
#define IW_FPDU_IOV_NEED(payload_cnt, num_markers) ((payload_cnt) + 3 + 2 * (num_markers))

/* One encoded FPDU. The iovecs point into this struct (length, headers,
 * markers, pad and CRC) and into the caller's payload: the payload is never
 * copied. Keep the struct and the payload alive until the bytes are sent. */
struct iw_fpdu_out {
	struct iovec *iov; /* caller's array ... */
	int iov_cap;       /* ... of this many entries */
	int iovcnt;        /* out: entries used */
	size_t wire_len;   /* out: octets on the wire, markers included */
	uint32_t crc;      /* out: the CRC32c value (0 when CRC is off) */
	uint8_t head[2 + IW_FPDU_HDR_MAX];
	uint8_t tail[3 + IW_MPA_CRC_LEN];
	uint8_t markers[IW_FPDU_MARKERS_MAX][IW_MPA_MARKER_LEN];
};

/* Frame hdr (the DDP header plus any RDMAP header, 14..IW_FPDU_HDR_MAX
 * octets) and payload as one FPDU starting at tx->stream_off, and advance
 * tx->stream_off by wire_len. The CRC (if on) is computed over the gathered
 * octets as they are laid out, markers included: one pass over the payload.
 * Returns 0, -EMSGSIZE (ULPDU above 65535), -EINVAL (hdr_len out of range)
 * or -ENOSPC (out->iov_cap too small; tx unchanged). */
int iw_fpdu_encode(struct iw_fpdu_tx *tx, struct iw_fpdu_out *out, const uint8_t *hdr,
		   size_t hdr_len, const struct iovec *payload, int payload_cnt);

/* ====================================================== DDP / RDMAP headers */

#define IW_DDP_TAGGED_HDR_LEN 14
#define IW_DDP_UNTAGGED_HDR_LEN 18
#define IW_RDMAP_READ_REQ_LEN 28
#define IW_RDMAP_ATOMIC_REQ_LEN 52
#define IW_RDMAP_ATOMIC_RESP_LEN 12
#define IW_RDMAP_IMM_LEN 8
#define IW_RDMAP_TERM_MIN_LEN 4

enum iw_ddp_ctrl_bits { IW_DDP_T = 0x80, IW_DDP_L = 0x40, IW_DDP_RSVD = 0x3C, IW_DDP_DV = 0x03 };
enum iw_rdmap_ctrl_bits { IW_RDMAP_RV = 0xC0, IW_RDMAP_RSVD = 0x30, IW_RDMAP_OPMASK = 0x0F };
#define IW_DDP_VERSION 1
#define IW_RDMAP_VERSION 1

enum iw_qn { IW_QN_SEND = 0, IW_QN_READ_REQ = 1, IW_QN_TERMINATE = 2, IW_QN_ATOMIC_RESP = 3 };

enum iw_rdmap_opcode {
	IW_OP_WRITE = 0x0,
	IW_OP_READ_REQ = 0x1,
	IW_OP_READ_RESP = 0x2,
	IW_OP_SEND = 0x3,
	IW_OP_SEND_INV = 0x4,
	IW_OP_SEND_SE = 0x5,
	IW_OP_SEND_SE_INV = 0x6,
	IW_OP_TERMINATE = 0x7,
	IW_OP_IMM = 0x8,          /* RFC 7306 Immediate Data */
	IW_OP_IMM_SE = 0x9,       /* RFC 7306 Immediate Data with SE */
	IW_OP_ATOMIC_REQ = 0xA,   /* RFC 7306 */
	IW_OP_ATOMIC_RESP = 0xB,  /* RFC 7306 */
};
const char *iw_rdmap_opcode_str(unsigned opcode); /* "Send with SE", "unknown" */
/* True for opcodes RFC 5040/7306 define (0x0..0xB). */
bool iw_rdmap_opcode_valid(unsigned opcode);
/* True if the opcode travels in tagged DDP segments (Write, Read Response). */
bool iw_rdmap_opcode_tagged(unsigned opcode);
/* The untagged QN an opcode must use, or -1 for tagged/unknown opcodes. */
int iw_rdmap_opcode_qn(unsigned opcode);
/* Octets of RDMAP header after the DDP header for an opcode: 28 for Read
 * Request, 52 atomic request, 12 atomic response, 8 immediate data, 0 for
 * the rest (a Terminate's header is variable: see iw_rdmap_term_parse). */
size_t iw_rdmap_hdr_len(unsigned opcode);

/* A DDP segment header; the RDMAP control octet rides in RsvdULP[0:7]. */
struct iw_ddp_hdr {
	uint8_t ctrl;       /* DDP control octet as on the wire */
	uint8_t rdmap_ctrl; /* RDMAP control octet as on the wire */
	/* tagged (ctrl & IW_DDP_T) */
	uint32_t stag;
	uint64_t to;
	/* untagged */
	uint32_t inv_stag; /* RsvdULP[8:39]: Invalidate STag for 0x4/0x6, else 0 */
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
};

/* Accessors of a decoded header: the T (tagged) bit, the L (last) bit, the
 * RDMAP opcode from the RDMAP control octet, and the header length by the T
 * bit (14 tagged, 18 untagged). */
static inline bool iw_ddp_tagged(const struct iw_ddp_hdr *h) { return h->ctrl & IW_DDP_T; }
static inline bool iw_ddp_last(const struct iw_ddp_hdr *h) { return h->ctrl & IW_DDP_L; }
static inline unsigned iw_ddp_opcode(const struct iw_ddp_hdr *h)
{
	return h->rdmap_ctrl & IW_RDMAP_OPMASK;
}
static inline size_t iw_ddp_hdr_len(const struct iw_ddp_hdr *h)
{
	return iw_ddp_tagged(h) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
}
/* Control octets for version 1 with the given T/L bits and opcode. */
static inline uint8_t iw_ddp_ctrl(bool tagged, bool last)
{
	return (uint8_t)((tagged ? IW_DDP_T : 0) | (last ? IW_DDP_L : 0) | IW_DDP_VERSION);
}
static inline uint8_t iw_rdmap_ctrl(unsigned opcode)
{
	return (uint8_t)((IW_RDMAP_VERSION << 6) | (opcode & IW_RDMAP_OPMASK));
}

/* Write the 14- or 18-octet header (by the T bit) to out; returns its length
 * or -ENOSPC. Fields are written as given: no validation (a test can build
 * bad headers on purpose). */
int iw_ddp_hdr_build(uint8_t *out, size_t cap, const struct iw_ddp_hdr *h);

/* Parse a DDP header and check its syntax: DDP version (tagged/untagged
 * codes), RDMAP version, opcode known and matching T, untagged QN matching
 * the opcode, L set on single-segment messages (Read Request, Terminate,
 * atomics, immediate data). Reserved bits are ignored (RFC: ignore on
 * receive). Returns the header length, -EAGAIN if len is too short for the
 * header the T bit announces, or -EPROTO with *why set. */
int iw_ddp_hdr_parse(struct iw_ddp_hdr *h, enum iw_wire_err *why, const uint8_t *p, size_t len);

/* RDMA Read Request header (28 octets after the untagged DDP header). */
struct iw_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t read_size;
	uint32_t src_stag;
	uint64_t src_to;
};
/* Encode r into out[0..cap). Returns 28 (IW_RDMAP_READ_REQ_LEN), -EINVAL
 * (r is NULL) or -ENOSPC (cap too small). */
int iw_rdmap_read_req_build(uint8_t *out, size_t cap, const struct iw_read_req *r);
/* Decode the 28-octet Read Request header at p into r (no field is
 * checked; octets after the 28 are not looked at). Returns 0, or -EAGAIN
 * (len below 28). */
int iw_rdmap_read_req_parse(struct iw_read_req *r, const uint8_t *p, size_t len);

/* Terminate message payload (RFC 5040 4.8). */
enum iw_term_hdrct { IW_TERM_HDR_M = 0x80, IW_TERM_HDR_D = 0x40, IW_TERM_HDR_R = 0x20 };
struct iw_terminate {
	uint16_t term;         /* layer/etype/ecode as IW_TERM() */
	uint8_t hdrct;         /* IW_TERM_HDR_* as on the wire (octet 2) */
	uint16_t ddp_seg_len;  /* valid with M */
	uint8_t ddp_hdr[IW_DDP_UNTAGGED_HDR_LEN]; /* with D: copied header ... */
	uint8_t ddp_hdr_len;   /* ... 14 or 18 by its T bit */
	uint8_t rdma_hdr[IW_RDMAP_READ_REQ_LEN]; /* with R: copied Read Request header */
};
/* Build a Terminate payload from t. Returns its length or -ENOSPC/-EINVAL. */
int iw_rdmap_term_build(uint8_t *out, size_t cap, const struct iw_terminate *t);
/* Parse a Terminate payload (all of it). Returns 0 or -EPROTO
 * (IW_WERR_RDMAP_TERM: too short for what hdrct announces, or trailing
 * octets). The layer/etype/ecode are kept raw: an MPA-layer type 3 from
 * Chelsio is not an error. */
int iw_rdmap_term_parse(struct iw_terminate *t, enum iw_wire_err *why, const uint8_t *p,
			size_t len);
/* siw (x86) writes the Terminate control word as little-endian bitfields:
 * layer in the low nibble of octet 0, etype in the high one, and M/D/R in
 * the low bits of octet 2. These give the reading of raw octets as siw means
 * them, for a peer known to be siw. */
uint16_t iw_rdmap_term_siw_code(const uint8_t raw[2]);
uint8_t iw_rdmap_term_siw_hdrct(uint8_t raw_octet2);

/* RFC 7306 atomics and immediate data. */
enum iw_atomic_op { IW_ATOMIC_FETCH_ADD = 0x0, IW_ATOMIC_CMP_SWAP = 0x2 };
struct iw_atomic_req {
	uint8_t atomic_op; /* enum iw_atomic_op (low 4 bits of the first word) */
	uint32_t req_id;
	uint32_t stag;
	uint64_t to;
	uint64_t add_swap;
	uint64_t add_swap_mask;
	uint64_t compare;
	uint64_t compare_mask;
};
struct iw_atomic_resp {
	uint32_t req_id;
	uint64_t orig_value;
};
/* Encode a into out[0..cap). Any 4-bit atomic_op is encodable, so that a
 * test can send unknown ones. Returns 52 (IW_RDMAP_ATOMIC_REQ_LEN), -EINVAL
 * (a is NULL or atomic_op above 15) or -ENOSPC (cap too small). */
int iw_rdmap_atomic_req_build(uint8_t *out, size_t cap, const struct iw_atomic_req *a);
/* Decode the 52-octet Atomic Request header at p into a (reserved bits of
 * the first word ignored). Returns 0, -EAGAIN (len below 52) or -EPROTO
 * with IW_WERR_RDMAP_ATOMIC_OP in *why (why may be NULL) for opcodes other
 * than 0x0/0x2; a is filled in either case. */
int iw_rdmap_atomic_req_parse(struct iw_atomic_req *a, enum iw_wire_err *why, const uint8_t *p,
			      size_t len);
/* Encode a into out[0..cap). Returns 12 (IW_RDMAP_ATOMIC_RESP_LEN), -EINVAL
 * (a is NULL) or -ENOSPC (cap too small). */
int iw_rdmap_atomic_resp_build(uint8_t *out, size_t cap, const struct iw_atomic_resp *a);
/* Decode the 12-octet Atomic Response header at p into a. Returns 0, or
 * -EAGAIN (len below 12). */
int iw_rdmap_atomic_resp_parse(struct iw_atomic_resp *a, const uint8_t *p, size_t len);

/* The RDMAP header that follows a DDP header, by opcode. */
struct iw_rdmap_hdr {
	union {
		struct iw_read_req read_req;     /* IW_OP_READ_REQ */
		struct iw_terminate term;        /* IW_OP_TERMINATE */
		struct iw_atomic_req atomic_req; /* IW_OP_ATOMIC_REQ */
		struct iw_atomic_resp atomic_resp; /* IW_OP_ATOMIC_RESP */
		uint8_t imm[IW_RDMAP_IMM_LEN];   /* IW_OP_IMM, IW_OP_IMM_SE */
	} u;
};

/* ====================================================== FPDU stream decoder */

/* Decoder flags. */
enum {
	IW_RX_SKIP_CRC = 1 << 0, /* fuzzing: compute but do not enforce the CRC */
	IW_RX_COMPLETE = 1 << 1, /* iw_fpdu_rx_finish: input ended */
};

/* One DDP segment as the decoder reports it. */
struct iw_ddp_seg {
	uint32_t fpdu_off;    /* stream offset of the FPDU's first octet (a leading marker included) */
	uint16_t ulpdu_len;   /* ULPDU_Length */
	struct iw_ddp_hdr ddp;
	struct iw_rdmap_hdr rdmap; /* by opcode; a Terminate is decoded here */
	uint8_t raw_hdr[IW_FPDU_HDR_MAX]; /* DDP + RDMAP header octets as received */
	uint8_t raw_hdr_len;
	uint32_t payload_len; /* ulpdu_len - raw_hdr_len */
	uint32_t crc;         /* received CRC value (host order) */
};

enum iw_rx_kind {
	IW_RX_SEG_HDR = 1, /* seg headers decoded and syntax-checked; payload follows */
	IW_RX_PAYLOAD,     /* data/len: a contiguous piece of payload at seg offset off */
	IW_RX_SEG_END,     /* the FPDU's pad and CRC are in and the CRC is good */
};

struct iw_rx_event {
	enum iw_rx_kind kind;
	const struct iw_ddp_seg *seg; /* valid for every kind until the next FPDU */
	const uint8_t *data;          /* IW_RX_PAYLOAD: borrowed from the input */
	size_t len;
	uint32_t off;                 /* payload offset within the segment */
};

/* Receiver state of one direction. Public so it can be embedded; the fields
 * below "private" are the decoder's own. */
struct iw_fpdu_rx {
	bool crc;
	bool markers;
	unsigned flags;
	uint32_t max_ulpdu;   /* receive limit on ULPDU_Length */
	uint32_t stream_off;  /* stream offset of the next input octet */
	enum iw_wire_err err; /* why the decoder stopped (sticky) */
	uint16_t err_term;    /* iw_wire_err_term(err) */
	uint32_t err_off;     /* stream offset of the FPDU in error */
	/* private */
	int state;
	uint32_t crc_state;
	uint32_t fpdu_start;
	uint32_t need;        /* octets left in the current state */
	uint32_t got;         /* octets gathered in the current state */
	uint32_t payload_done;
	uint8_t marker[IW_MPA_MARKER_LEN];
	uint8_t marker_got;
	uint8_t lenbuf[2];
	uint8_t trailer[3 + IW_MPA_CRC_LEN];
	bool pad_crc_done;       /* pad already run through the CRC (read ahead) */
	bool payload_crc_done;   /* payload and pad run through the CRC with the header */
	const uint8_t *crc_pend; /* CRC-covered input octets not yet fed to the */
	size_t crc_pend_len;     /* CRC: adjacent pieces are fed in one call */
	struct iw_ddp_seg seg;
};

/* crc/markers as negotiated; stream_off is the receive stream offset of the
 * first octet that will be fed (0 right after the peer's MPA frame);
 * max_ulpdu 0 means IW_MPA_ULPDU_MAX. */
void iw_fpdu_rx_init(struct iw_fpdu_rx *rx, bool crc, bool markers, uint32_t stream_off,
		     uint32_t max_ulpdu, unsigned flags);

/* Consume input and report the next event. Any segmentation of the stream
 * works, one octet at a time included.
 *  1        *ev holds an event; *consumed octets of in were used
 *  0        all of in was consumed, no event pending (feed more)
 *  -EPROTO  protocol error: rx->err / rx->err_term say which; sticky
 *  -EBADMSG CRC mismatch (IW_WERR_FPDU_CRC); sticky
 * Payload is reported as it arrives, before the CRC is known, so that it can
 * be placed directly; a bad CRC then tears the stream down (as siw does).
 * Markers are stripped and each FPDUPTR checked. */
int iw_fpdu_rx_next(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
		    size_t in_len, size_t *consumed);

/* Direct placement. While the decoder is inside a segment's payload this
 * returns how many payload octets may be received straight into their
 * destination (up to the next marker or the end of the payload), else 0.
 * After receiving n <= that many octets to dst, call iw_fpdu_rx_direct_done
 * (which runs them through the CRC) instead of feeding them. Returns 0, or
 * -EINVAL if n is more than allowed. */
size_t iw_fpdu_rx_direct_len(const struct iw_fpdu_rx *rx);
int iw_fpdu_rx_direct_done(struct iw_fpdu_rx *rx, const uint8_t *dst, size_t n);

/* Input ended (capture over, connection closed): -EPROTO with
 * IW_WERR_FPDU_TRUNCATED if an FPDU was only partly received, else 0. */
int iw_fpdu_rx_finish(struct iw_fpdu_rx *rx);

#ifdef __cplusplus
}
#endif
#endif /* IWARP_WIRE_H */
