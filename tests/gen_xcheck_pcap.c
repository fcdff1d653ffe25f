/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gen_xcheck_pcap OUT.pcap EXPECT.tsv [BAD.pcap BAD.tsv]
 *
 * Builds iWARP traffic with the public wire.h codecs only (MPA frames, DDP
 * and RDMAP headers, iw_fpdu_encode), one FPDU per TCP segment, and writes
 * it as a pcap through the internal pcap writer. EXPECT.tsv holds, per
 * frame, the values the codecs were given, formatted the way tshark 4.0
 * prints the iwarp_mpa / iwarp_ddp_rdmap fields with -T fields; its first
 * line names those fields, so tests/tshark_xcheck.sh can ask tshark for
 * exactly them and compare row by row. Every FPDU is also fed back through
 * our own decoder (iw_fpdu_rx_next), which must report the same values.
 *
 * Two connections: MPA rev 1 over IPv4, and rev 2 (RFC 6581 enhanced,
 * with a zero-length RDMA Write as the RTR) over IPv6. CRC is on.
 * BAD.pcap repeats a short exchange whose last FPDU has a corrupted CRC,
 * so that the cross-check is seen to fail when it should.
 *
 * Exit status: 0 when our decoder agreed on every frame, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "diag/pcap_writer.h"

#define MSS 1460
#define SEG_MAX 1400 /* payload per segment: header + payload + trailer < MSS */
#define TS_START 1700000000000000000ull
#define TS_STEP 10000 /* 10 us between frames */

/* ------------------------------------------------------- expectation table */

/* The tshark fields we compare, in column order. How tshark prints each one
 * is the format: DEC, HEX2/HEX8/HEX16 (0x + zero-padded), BOOL (1/0), BYTES
 * (plain hex). Values are set per row; an unset cell is empty, as tshark
 * leaves a field the frame does not have. */
enum col {
	C_FRAME,
	C_MPA_REV, C_MPA_CRC_FLAG, C_MPA_MARKER_FLAG, C_MPA_REJ_FLAG, C_MPA_PDLEN, C_MPA_PD,
	C_ULPDU_LEN, C_CRC_CHECK,
	C_DDP_T, C_DDP_L, C_DDP_DV, C_RDMA_RV, C_RDMA_OPCODE,
	C_DDP_STAG, C_DDP_TO, C_DDP_QN, C_DDP_MSN, C_DDP_MO, C_INV_STAG,
	C_RR_SINK_STAG, C_RR_SINK_TO, C_RR_SIZE, C_RR_SRC_STAG, C_RR_SRC_TO,
	C_T_LAYER, C_T_ETYPE_RDMA, C_T_ETYPE_DDP, C_T_ETYPE_LLP,
	C_T_ECODE_RDMA, C_T_ECODE_DDP_T, C_T_ECODE_DDP_U, C_T_ECODE_LLP,
	C_T_M, C_T_D, C_T_R, C_T_SEGLEN, C_T_DDP_H, C_T_RDMA_H,
	C_A_OPCODE, C_A_REQ_ID, C_A_STAG, C_A_TO, C_A_ADD, C_A_ADD_MASK, C_A_SWAP,
	C_A_SWAP_MASK, C_A_CMP, C_A_CMP_MASK, C_A_ORIG_ID, C_A_ORIG_VAL,
	C__COUNT
};

static const char *const col_field[C__COUNT] = {
	[C_FRAME] = "frame.number",
	[C_MPA_REV] = "iwarp_mpa.rev",
	[C_MPA_CRC_FLAG] = "iwarp_mpa.crc_flag",
	[C_MPA_MARKER_FLAG] = "iwarp_mpa.marker_flag",
	[C_MPA_REJ_FLAG] = "iwarp_mpa.rej_flag",
	[C_MPA_PDLEN] = "iwarp_mpa.pdlength",
	[C_MPA_PD] = "iwarp_mpa.privatedata",
	[C_ULPDU_LEN] = "iwarp_mpa.ulpdulength",
	[C_CRC_CHECK] = "iwarp_mpa.crc_check",
	[C_DDP_T] = "iwarp_ddp.tagged_flag",
	[C_DDP_L] = "iwarp_ddp.last_flag",
	[C_DDP_DV] = "iwarp_ddp.dv",
	[C_RDMA_RV] = "iwarp_rdma.version",
	[C_RDMA_OPCODE] = "iwarp_rdma.opcode",
	[C_DDP_STAG] = "iwarp_ddp.stag",
	[C_DDP_TO] = "iwarp_ddp.tagged_offset",
	[C_DDP_QN] = "iwarp_ddp.qn",
	[C_DDP_MSN] = "iwarp_ddp.msn",
	[C_DDP_MO] = "iwarp_ddp.mo",
	[C_INV_STAG] = "iwarp_rdma.inval_stag",
	[C_RR_SINK_STAG] = "iwarp_rdma.sinkstag",
	[C_RR_SINK_TO] = "iwarp_rdma.sinkto",
	[C_RR_SIZE] = "iwarp_rdma.rdmardsz",
	[C_RR_SRC_STAG] = "iwarp_rdma.srcstag",
	[C_RR_SRC_TO] = "iwarp_rdma.srcto",
	[C_T_LAYER] = "iwarp_rdma.term_layer",
	[C_T_ETYPE_RDMA] = "iwarp_rdma.term_etype_rdma",
	[C_T_ETYPE_DDP] = "iwarp_rdma.term_etype_ddp",
	[C_T_ETYPE_LLP] = "iwarp_rdma.term_etype_llp",
	[C_T_ECODE_RDMA] = "iwarp_rdma.term_errcode_rdma",
	[C_T_ECODE_DDP_T] = "iwarp_rdma.term_errcode_ddp_tagged",
	[C_T_ECODE_DDP_U] = "iwarp_rdma.term_errcode_ddp_untagged",
	[C_T_ECODE_LLP] = "iwarp_rdma.term_errcode_llp",
	[C_T_M] = "iwarp_rdma.term_hdrct_m",
	[C_T_D] = "iwarp_rdma.hdrct_d",
	[C_T_R] = "iwarp_rdma.hdrct_r",
	[C_T_SEGLEN] = "iwarp_rdma.term_ddp_seg_len",
	[C_T_DDP_H] = "iwarp_rdma.term_ddp_h",
	[C_T_RDMA_H] = "iwarp_rdma.term_rdma_h",
	[C_A_OPCODE] = "iwarp_rdma.atomic.opcode",
	[C_A_REQ_ID] = "iwarp_rdma.atomic.request_identifier",
	[C_A_STAG] = "iwarp_rdma.atomic.remote_stag",
	[C_A_TO] = "iwarp_rdma.atomic.remote_tagged_offset",
	[C_A_ADD] = "iwarp_rdma.atomic.add_data",
	[C_A_ADD_MASK] = "iwarp_rdma.atomic.add_mask",
	[C_A_SWAP] = "iwarp_rdma.atomic.swap_data",
	[C_A_SWAP_MASK] = "iwarp_rdma.atomic.swap_mask",
	[C_A_CMP] = "iwarp_rdma.atomic.compare_data",
	[C_A_CMP_MASK] = "iwarp_rdma.atomic.compare_mask",
	[C_A_ORIG_ID] = "iwarp_rdma.atomic.original_request_identifier",
	[C_A_ORIG_VAL] = "iwarp_rdma.atomic.original_remote_data_value",
};

#define CELL_MAX 160 /* a 70-octet header in hex plus slack */

struct row {
	char cell[C__COUNT][CELL_MAX];
};

static void __attribute__((format(printf, 3, 4)))
cell(struct row *r, enum col c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->cell[c], CELL_MAX, fmt, ap);
	va_end(ap);
}

static void cell_dec(struct row *r, enum col c, uint64_t v) { cell(r, c, "%" PRIu64, v); }
static void cell_bool(struct row *r, enum col c, bool v) { cell(r, c, "%d", v ? 1 : 0); }

static void cell_bytes(struct row *r, enum col c, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n && 2 * i + 2 < CELL_MAX; i++)
		snprintf(r->cell[c] + 2 * i, 3, "%02x", p[i]);
}

/* ------------------------------------------------------- generator state */

struct gen {
	struct iw_pcapw w;
	struct iw_pcapw_flow f;
	struct iw_fpdu_tx tx[2];
	struct iw_fpdu_rx rx[2];
	uint32_t msn[2][4]; /* next MSN per direction and QN */
	uint64_t ts;
	FILE *tsv;
	unsigned fpdus;
	unsigned failures;
	uint32_t last_crc; /* CRC of the last FPDU as computed, before any corruption */
	bool crc;
};

static void __attribute__((format(printf, 2, 3))) fail(struct gen *g, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gen_xcheck_pcap: frame %" PRIu64 ": ", g->w.records);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	g->failures++;
}

static void __attribute__((noreturn)) die(const char *what, int err)
{
	fprintf(stderr, "gen_xcheck_pcap: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(2);
}

static void put_row(struct gen *g, const struct row *r)
{
	for (int c = 0; c < C__COUNT; c++)
		fprintf(g->tsv, "%s%s", c ? "\t" : "", r->cell[c]);
	fputc('\n', g->tsv);
}

static void put_header(FILE *tsv)
{
	for (int c = 0; c < C__COUNT; c++)
		fprintf(tsv, "%s%s", c ? "\t" : "#", col_field[c]);
	fputc('\n', tsv);
}

static void wire(struct gen *g, enum iw_pcapw_dir dir, const uint8_t *p, size_t n)
{
	struct iovec v = {(void *)p, n};
	int rc = iw_pcapw_data(&g->f, dir, &v, 1, g->ts);

	if (rc)
		die("pcap write", rc);
	g->ts += TS_STEP;
}

/* ------------------------------------------------------- MPA exchange */

static void mpa_row(struct gen *g, const struct iw_mpa_frame *m, const uint8_t *frame)
{
	struct row r = {0};
	size_t pd_len = (size_t)frame[18] << 8 | frame[19];

	cell_dec(&r, C_FRAME, g->w.records);
	cell_dec(&r, C_MPA_REV, m->rev);
	cell_bool(&r, C_MPA_CRC_FLAG, m->flags & IW_MPA_FLAG_C);
	cell_bool(&r, C_MPA_MARKER_FLAG, m->flags & IW_MPA_FLAG_M);
	cell_bool(&r, C_MPA_REJ_FLAG, m->flags & IW_MPA_FLAG_R);
	cell_dec(&r, C_MPA_PDLEN, pd_len);
	/* tshark 4.0 knows no RFC 6581 block: it shows it as private data */
	cell_bytes(&r, C_MPA_PD, frame + IW_MPA_FRAME_HDR_LEN, pd_len);
	put_row(g, &r);
}

/* Build, write and parse back one MPA frame. */
static void mpa_frame(struct gen *g, enum iw_pcapw_dir dir, const struct iw_mpa_frame *m)
{
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	struct iw_mpa_frame back;
	enum iw_wire_err why = IW_WERR_NONE;
	size_t used = 0;
	int n = iw_mpa_frame_build(buf, sizeof(buf), m, 0);

	if (n < 0)
		die("iw_mpa_frame_build", n);
	wire(g, dir, buf, (size_t)n);
	mpa_row(g, m, buf);
	int rc = iw_mpa_frame_parse(&back, &used, &why, m->kind, buf, (size_t)n,
				    IW_MPA_PARSE_STRICT | IW_MPA_PARSE_COMPLETE);
	if (rc || used != (size_t)n || back.rev != m->rev || back.flags != m->flags ||
	    back.p2p != m->p2p || back.rtr != m->rtr || back.ird != m->ird ||
	    back.ord != m->ord || back.pd_len != m->pd_len ||
	    (m->pd_len && memcmp(back.pd, m->pd, m->pd_len)))
		fail(g, "MPA frame does not parse back (rc %d, %s)", rc, iw_wire_err_name(why));
}

static void mpa_exchange(struct gen *g, uint8_t rev)
{
	static const uint8_t pd_req[] = "libiwarp xcheck";
	static const uint8_t pd_rep[] = "ok";
	struct iw_mpa_frame req = {
		.kind = IW_MPA_REQUEST, .rev = rev, .flags = IW_MPA_FLAG_C,
		.pd = pd_req, .pd_len = sizeof(pd_req) - 1,
	};
	struct iw_mpa_frame rep = {
		.kind = IW_MPA_REPLY, .rev = rev, .flags = IW_MPA_FLAG_C,
		.pd = pd_rep, .pd_len = sizeof(pd_rep) - 1,
	};

	if (rev == 2) {
		/* RFC 6581: offer both RTRs, the responder picks the Write */
		req.flags |= IW_MPA_FLAG_ENHANCED;
		req.p2p = true;
		req.rtr = IW_RTR_WRITE | IW_RTR_READ;
		req.ird = req.ord = 16;
		rep.flags |= IW_MPA_FLAG_ENHANCED;
		rep.p2p = true;
		rep.rtr = IW_RTR_WRITE;
		rep.ird = rep.ord = 8;
	}
	mpa_frame(g, IW_PCAPW_A2B, &req);
	mpa_frame(g, IW_PCAPW_B2A, &rep);
}

/* ------------------------------------------------------- FPDU rows */

static void ddp_cells(struct row *r, const struct iw_ddp_hdr *h)
{
	unsigned op = iw_ddp_opcode(h);

	cell_bool(r, C_DDP_T, iw_ddp_tagged(h));
	cell_bool(r, C_DDP_L, iw_ddp_last(h));
	cell_dec(r, C_DDP_DV, h->ctrl & IW_DDP_DV);
	cell_dec(r, C_RDMA_RV, (h->rdmap_ctrl & IW_RDMAP_RV) >> 6);
	cell(r, C_RDMA_OPCODE, "0x%02x", op);
	if (iw_ddp_tagged(h)) {
		cell(r, C_DDP_STAG, "0x%08" PRIx32, h->stag);
		cell(r, C_DDP_TO, "0x%016" PRIx64, h->to);
		return;
	}
	cell_dec(r, C_DDP_QN, h->qn);
	cell_dec(r, C_DDP_MSN, h->msn);
	cell_dec(r, C_DDP_MO, h->mo);
	if (op == IW_OP_SEND_INV || op == IW_OP_SEND_SE_INV)
		cell_dec(r, C_INV_STAG, h->inv_stag);
}

static void read_req_cells(struct row *r, const struct iw_read_req *q)
{
	cell_dec(r, C_RR_SINK_STAG, q->sink_stag);
	cell_dec(r, C_RR_SINK_TO, q->sink_to);
	cell_dec(r, C_RR_SIZE, q->read_size);
	cell_dec(r, C_RR_SRC_STAG, q->src_stag);
	cell(r, C_RR_SRC_TO, "0x%016" PRIx64, q->src_to); /* FT_BYTES in 4.0 */
}

static void term_cells(struct row *r, const struct iw_terminate *t)
{
	unsigned layer = IW_TERM_LAYER(t->term), et = IW_TERM_ETYPE(t->term);
	unsigned ec = IW_TERM_ECODE(t->term);

	cell(r, C_T_LAYER, "0x%02x", layer);
	if (layer == IW_LAYER_RDMAP) {
		cell(r, C_T_ETYPE_RDMA, "0x%02x", et);
		cell(r, C_T_ECODE_RDMA, "0x%02x", ec);
	} else if (layer == IW_LAYER_DDP) {
		cell(r, C_T_ETYPE_DDP, "0x%02x", et);
		cell(r, et == 1 ? C_T_ECODE_DDP_T : C_T_ECODE_DDP_U, "0x%02x", ec);
	} else {
		cell(r, C_T_ETYPE_LLP, "0x%02x", et);
		cell(r, C_T_ECODE_LLP, "0x%02x", ec);
	}
	cell(r, C_T_M, "0x%02x", t->hdrct & IW_TERM_HDR_M ? 1 : 0);
	cell(r, C_T_D, "0x%02x", t->hdrct & IW_TERM_HDR_D ? 1 : 0);
	cell(r, C_T_R, "0x%02x", t->hdrct & IW_TERM_HDR_R ? 1 : 0);
	if (t->hdrct & IW_TERM_HDR_M)
		cell(r, C_T_SEGLEN, "%04x", t->ddp_seg_len);
	if (t->hdrct & IW_TERM_HDR_D)
		cell_bytes(r, C_T_DDP_H, t->ddp_hdr, t->ddp_hdr_len);
	if (t->hdrct & IW_TERM_HDR_R)
		cell_bytes(r, C_T_RDMA_H, t->rdma_hdr, IW_RDMAP_READ_REQ_LEN);
}

static void atomic_req_cells(struct row *r, const struct iw_atomic_req *a)
{
	cell_dec(r, C_A_OPCODE, a->atomic_op);
	cell_dec(r, C_A_REQ_ID, a->req_id);
	cell_dec(r, C_A_STAG, a->stag);
	cell_dec(r, C_A_TO, a->to);
	/* tshark names the first pair by the atomic opcode and always shows
	 * the compare pair; the masks other than Add Mask print in hex. */
	if (a->atomic_op == IW_ATOMIC_FETCH_ADD) {
		cell_dec(r, C_A_ADD, a->add_swap);
		cell_dec(r, C_A_ADD_MASK, a->add_swap_mask);
	} else {
		cell_dec(r, C_A_SWAP, a->add_swap);
		cell(r, C_A_SWAP_MASK, "0x%016" PRIx64, a->add_swap_mask);
	}
	cell_dec(r, C_A_CMP, a->compare);
	cell(r, C_A_CMP_MASK, "0x%016" PRIx64, a->compare_mask);
}

static void rdmap_cells(struct row *r, unsigned op, const struct iw_rdmap_hdr *rh)
{
	switch (op) {
	case IW_OP_READ_REQ:
		read_req_cells(r, &rh->u.read_req);
		break;
	case IW_OP_TERMINATE:
		term_cells(r, &rh->u.term);
		break;
	case IW_OP_ATOMIC_REQ:
		atomic_req_cells(r, &rh->u.atomic_req);
		break;
	case IW_OP_ATOMIC_RESP:
		cell_dec(r, C_A_ORIG_ID, rh->u.atomic_resp.req_id);
		cell_dec(r, C_A_ORIG_VAL, rh->u.atomic_resp.orig_value);
		break;
	default:
		break;
	}
}

static uint32_t bswap32(uint32_t v)
{
	return v >> 24 | (v >> 8 & 0xFF00) | (v << 8 & 0xFF0000) | v << 24;
}

static void fpdu_row(struct gen *g, const struct iw_ddp_hdr *h, const struct iw_rdmap_hdr *rh,
		     size_t ulpdu_len, uint32_t wire_crc)
{
	struct row r = {0};

	cell_dec(&r, C_FRAME, g->w.records);
	cell_dec(&r, C_ULPDU_LEN, ulpdu_len);
	/* tshark 4.0 reads the CRC field as a big-endian integer; the CRC32c
	 * value goes on the wire least-significant octet first. */
	if (g->crc)
		cell(&r, C_CRC_CHECK, "0x%08" PRIx32, bswap32(wire_crc));
	ddp_cells(&r, h);
	rdmap_cells(&r, iw_ddp_opcode(h), rh);
	put_row(g, &r);
}

/* ------------------------------------------------------- decode back */

static bool ddp_equal(const struct iw_ddp_hdr *a, const struct iw_ddp_hdr *b)
{
	if (a->ctrl != b->ctrl || a->rdmap_ctrl != b->rdmap_ctrl)
		return false;
	if (iw_ddp_tagged(a))
		return a->stag == b->stag && a->to == b->to;
	return a->inv_stag == b->inv_stag && a->qn == b->qn && a->msn == b->msn && a->mo == b->mo;
}

static bool term_equal(const struct iw_terminate *a, const struct iw_terminate *b)
{
	if (a->term != b->term || a->hdrct != b->hdrct)
		return false;
	if ((a->hdrct & IW_TERM_HDR_M) && a->ddp_seg_len != b->ddp_seg_len)
		return false;
	if ((a->hdrct & IW_TERM_HDR_D) &&
	    (a->ddp_hdr_len != b->ddp_hdr_len || memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len)))
		return false;
	return !(a->hdrct & IW_TERM_HDR_R) ||
	       !memcmp(a->rdma_hdr, b->rdma_hdr, IW_RDMAP_READ_REQ_LEN);
}

static bool rdmap_equal(unsigned op, const struct iw_rdmap_hdr *a, const struct iw_rdmap_hdr *b)
{
	const struct iw_read_req *q = &a->u.read_req, *p = &b->u.read_req;
	const struct iw_atomic_req *x = &a->u.atomic_req, *y = &b->u.atomic_req;

	switch (op) {
	case IW_OP_READ_REQ:
		return q->sink_stag == p->sink_stag && q->sink_to == p->sink_to &&
		       q->read_size == p->read_size && q->src_stag == p->src_stag &&
		       q->src_to == p->src_to;
	case IW_OP_TERMINATE:
		return term_equal(&a->u.term, &b->u.term);
	case IW_OP_ATOMIC_REQ:
		return x->atomic_op == y->atomic_op && x->req_id == y->req_id &&
		       x->stag == y->stag && x->to == y->to && x->add_swap == y->add_swap &&
		       x->add_swap_mask == y->add_swap_mask && x->compare == y->compare &&
		       x->compare_mask == y->compare_mask;
	case IW_OP_ATOMIC_RESP:
		return a->u.atomic_resp.req_id == b->u.atomic_resp.req_id &&
		       a->u.atomic_resp.orig_value == b->u.atomic_resp.orig_value;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		return !memcmp(a->u.imm, b->u.imm, IW_RDMAP_IMM_LEN);
	default:
		return true;
	}
}

/* What one FPDU should decode to. */
struct want {
	const struct iw_ddp_hdr *h;
	const struct iw_rdmap_hdr *rh;
	const uint8_t *hdr;
	size_t hdr_len;
	const uint8_t *pl;
	size_t pl_len;
	uint32_t crc;
};

static void check_seg(struct gen *g, const struct iw_ddp_seg *s, const struct want *w)
{
	unsigned op = iw_ddp_opcode(w->h);

	if (s->ulpdu_len != w->hdr_len + w->pl_len)
		fail(g, "decoder: ULPDU_Length %u, sent %zu", s->ulpdu_len, w->hdr_len + w->pl_len);
	if (!ddp_equal(&s->ddp, w->h))
		fail(g, "decoder: DDP header differs");
	if (s->raw_hdr_len != w->hdr_len || memcmp(s->raw_hdr, w->hdr, w->hdr_len))
		fail(g, "decoder: raw header differs (%u octets, sent %zu)", s->raw_hdr_len,
		     w->hdr_len);
	if (s->payload_len != w->pl_len)
		fail(g, "decoder: payload %" PRIu32 ", sent %zu", s->payload_len, w->pl_len);
	if (!rdmap_equal(op, &s->rdmap, w->rh))
		fail(g, "decoder: RDMAP header of %s differs", iw_rdmap_opcode_str(op));
}

/* Feed one FPDU to the receiver of its direction. A corrupted one must be
 * refused with -EBADMSG; a good one must come back field for field. */
static void decode_back(struct gen *g, enum iw_pcapw_dir dir, const uint8_t *buf, size_t len,
			const struct want *w, bool corrupt)
{
	struct iw_fpdu_rx *rx = &g->rx[dir];
	struct iw_rx_event ev;
	size_t off = 0, got_pl = 0, used;
	bool hdr = false, end = false;
	int rc = 0;

	while (off < len && !end) {
		rc = iw_fpdu_rx_next(rx, &ev, buf + off, len - off, &used);
		off += used;
		if (rc <= 0)
			break;
		if (ev.kind == IW_RX_SEG_HDR) {
			hdr = true;
			check_seg(g, ev.seg, w);
		} else if (ev.kind == IW_RX_PAYLOAD) {
			if (ev.off != got_pl || ev.off + ev.len > w->pl_len ||
			    memcmp(ev.data, w->pl + ev.off, ev.len))
				fail(g, "decoder: payload piece at %" PRIu32 " differs", ev.off);
			got_pl += ev.len;
		} else if (ev.kind == IW_RX_SEG_END) {
			end = true;
			if (ev.seg->crc != w->crc)
				fail(g, "decoder: CRC %08" PRIx32 ", sent %08" PRIx32, ev.seg->crc,
				     w->crc);
		}
	}
	if (corrupt) {
		if (rc != -EBADMSG || rx->err != IW_WERR_FPDU_CRC)
			fail(g, "decoder accepted a corrupted CRC (rc %d)", rc);
		return;
	}
	if (rc < 0 || !hdr || !end || off != len || got_pl != w->pl_len)
		fail(g, "decoder: rc %d, header %d, end %d, %zu/%zu octets, payload %zu/%zu", rc,
		     hdr, end, off, len, got_pl, w->pl_len);
}

/* ------------------------------------------------------- FPDU builder */

static int rdmap_build(uint8_t *out, size_t cap, unsigned op, const struct iw_rdmap_hdr *rh)
{
	switch (op) {
	case IW_OP_READ_REQ:
		return iw_rdmap_read_req_build(out, cap, &rh->u.read_req);
	case IW_OP_TERMINATE:
		return iw_rdmap_term_build(out, cap, &rh->u.term);
	case IW_OP_ATOMIC_REQ:
		return iw_rdmap_atomic_req_build(out, cap, &rh->u.atomic_req);
	case IW_OP_ATOMIC_RESP:
		return iw_rdmap_atomic_resp_build(out, cap, &rh->u.atomic_resp);
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		if (cap < IW_RDMAP_IMM_LEN)
			return -ENOSPC;
		memcpy(out, rh->u.imm, IW_RDMAP_IMM_LEN);
		return IW_RDMAP_IMM_LEN;
	default:
		return 0;
	}
}

/* Gather an encoded FPDU into one buffer (one TCP segment). */
static size_t flatten(uint8_t *buf, size_t cap, const struct iw_fpdu_out *o)
{
	size_t n = 0;

	for (int i = 0; i < o->iovcnt; i++) {
		if (o->iov[i].iov_len > cap - n)
			die("FPDU larger than a segment", EMSGSIZE);
		memcpy(buf + n, o->iov[i].iov_base, o->iov[i].iov_len);
		n += o->iov[i].iov_len;
	}
	return n;
}

static void emit_fpdu(struct gen *g, enum iw_pcapw_dir dir, const struct iw_ddp_hdr *h,
		      const struct iw_rdmap_hdr *rh, const uint8_t *pl, size_t pl_len,
		      bool corrupt)
{
	static const struct iw_rdmap_hdr none;
	uint8_t hdr[IW_FPDU_HDR_MAX], buf[MSS];
	struct iovec iov[IW_FPDU_IOV_NEED(1, 0)], piece = {(void *)pl, pl_len};
	struct iw_fpdu_out o = {.iov = iov, .iov_cap = IW_FPDU_IOV_NEED(1, 0)};
	int n = iw_ddp_hdr_build(hdr, sizeof(hdr), h);

	if (n < 0)
		die("iw_ddp_hdr_build", n);
	rh = rh ? rh : &none;
	int m = rdmap_build(hdr + n, sizeof(hdr) - (size_t)n, iw_ddp_opcode(h), rh);
	if (m < 0)
		die("RDMAP header build", m);
	int rc = iw_fpdu_encode(&g->tx[dir], &o, hdr, (size_t)(n + m), &piece, pl_len ? 1 : 0);
	if (rc)
		die("iw_fpdu_encode", rc);
	size_t len = flatten(buf, sizeof(buf), &o);
	if (len != o.wire_len)
		fail(g, "iw_fpdu_encode: iovecs hold %zu octets, wire_len %zu", len, o.wire_len);
	uint32_t sent_crc = o.crc;
	g->last_crc = o.crc;
	if (corrupt) {
		buf[len - 1] ^= 0x80; /* the CRC's last octet */
		sent_crc ^= 0x80000000u;
	}
	wire(g, dir, buf, len);
	g->fpdus++;
	fpdu_row(g, h, rh, (size_t)(n + m) + pl_len, sent_crc);

	struct want w = {h, rh, hdr, (size_t)(n + m), pl, pl_len, o.crc};
	decode_back(g, dir, buf, len, &w, corrupt);
}

/* ------------------------------------------------------- messages */

static struct iw_ddp_hdr untagged(unsigned op, bool last, uint32_t qn, uint32_t msn, uint32_t mo)
{
	struct iw_ddp_hdr h = {
		.ctrl = iw_ddp_ctrl(false, last), .rdmap_ctrl = iw_rdmap_ctrl(op),
		.qn = qn, .msn = msn, .mo = mo,
	};
	return h;
}

/* An untagged message on the opcode's queue with the next MSN, cut into
 * segments of at most SEG_MAX payload octets. */
static void untagged_msg(struct gen *g, enum iw_pcapw_dir dir, unsigned op, uint32_t inv_stag,
			 const struct iw_rdmap_hdr *rh, const uint8_t *pl, size_t len)
{
	uint32_t qn = (uint32_t)iw_rdmap_opcode_qn(op);
	uint32_t msn = g->msn[dir][qn]++;
	size_t mo = 0;

	do {
		size_t n = len - mo < SEG_MAX ? len - mo : SEG_MAX;
		struct iw_ddp_hdr h = untagged(op, mo + n == len, qn, msn, (uint32_t)mo);
		h.inv_stag = inv_stag;
		emit_fpdu(g, dir, &h, rh, pl + mo, n, false);
		mo += n;
	} while (mo < len);
}

static void tagged_msg(struct gen *g, enum iw_pcapw_dir dir, unsigned op, uint32_t stag,
		       uint64_t to, const uint8_t *pl, size_t len)
{
	size_t done = 0;

	do {
		size_t n = len - done < SEG_MAX ? len - done : SEG_MAX;
		struct iw_ddp_hdr h = {
			.ctrl = iw_ddp_ctrl(true, done + n == len), .rdmap_ctrl = iw_rdmap_ctrl(op),
			.stag = stag, .to = to + done,
		};
		emit_fpdu(g, dir, &h, NULL, pl + done, n, false);
		done += n;
	} while (done < len);
}

static uint8_t pattern[4000];

static void sends(struct gen *g)
{
	const uint8_t *p = pattern;

	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND, 0, NULL, (const uint8_t *)"hello", 5);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND_SE, 0, NULL, p, 7);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND_INV, 0x1234, NULL, p + 7, 11);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND_SE_INV, 0xABCD0102u, NULL, p + 18, 3);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND, 0, NULL, p, 0);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND, 0, NULL, p, 3000); /* 3 segments */
	untagged_msg(g, IW_PCAPW_B2A, IW_OP_SEND, 0, NULL, (const uint8_t *)"pong", 4);
}

static void writes_and_reads(struct gen *g)
{
	struct iw_rdmap_hdr rr = {.u.read_req = {
		.sink_stag = 0x300, .sink_to = 0x2000, .read_size = 2000,
		.src_stag = 0x400, .src_to = 0x123456789ABCull,
	}};
	struct iw_rdmap_hdr rr0 = {.u.read_req = {.sink_stag = 1, .src_stag = 1}};

	tagged_msg(g, IW_PCAPW_A2B, IW_OP_WRITE, 0x100, 0x1000, pattern, 64);
	tagged_msg(g, IW_PCAPW_A2B, IW_OP_WRITE, 0x200, 0xFFFFFFFF00000000ull, pattern, 3000);
	tagged_msg(g, IW_PCAPW_A2B, IW_OP_WRITE, 2, 0, pattern, 0);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_READ_REQ, 0, &rr, NULL, 0);
	tagged_msg(g, IW_PCAPW_B2A, IW_OP_READ_RESP, 0x300, 0x2000, pattern + 5, 2000);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_READ_REQ, 0, &rr0, NULL, 0);
	tagged_msg(g, IW_PCAPW_B2A, IW_OP_READ_RESP, 1, 0, pattern, 0);
}

static void atomics_and_imm(struct gen *g)
{
	struct iw_rdmap_hdr fadd = {.u.atomic_req = {
		.atomic_op = IW_ATOMIC_FETCH_ADD, .req_id = 1, .stag = 0x500, .to = 0x6000,
		.add_swap = 5,
	}};
	struct iw_rdmap_hdr cswap = {.u.atomic_req = {
		.atomic_op = IW_ATOMIC_CMP_SWAP, .req_id = 2, .stag = 0x500, .to = 0x6008,
		.add_swap = 0x1111111111111111ull, .add_swap_mask = ~0ull,
		.compare = 0x2222222222222222ull, .compare_mask = ~0ull,
	}};
	struct iw_rdmap_hdr r1 = {.u.atomic_resp = {.req_id = 1, .orig_value = 41}};
	struct iw_rdmap_hdr r2 = {.u.atomic_resp = {.req_id = 2, .orig_value = 0x2222222222222222ull}};
	struct iw_rdmap_hdr imm = {.u.imm = {1, 2, 3, 4, 5, 6, 7, 8}};

	untagged_msg(g, IW_PCAPW_A2B, IW_OP_ATOMIC_REQ, 0, &fadd, NULL, 0);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_ATOMIC_REQ, 0, &cswap, NULL, 0);
	untagged_msg(g, IW_PCAPW_B2A, IW_OP_ATOMIC_RESP, 0, &r1, NULL, 0);
	untagged_msg(g, IW_PCAPW_B2A, IW_OP_ATOMIC_RESP, 0, &r2, NULL, 0);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_IMM, 0, &imm, NULL, 0);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_IMM_SE, 0, &imm, NULL, 0);
}

/* Copy a header as a Terminate carries it (RFC 5040 4.8). */
static void term_copy(struct iw_terminate *t, const struct iw_ddp_hdr *h, uint16_t seg_len)
{
	int n = iw_ddp_hdr_build(t->ddp_hdr, sizeof(t->ddp_hdr), h);

	if (n < 0)
		die("iw_ddp_hdr_build", n);
	t->ddp_hdr_len = (uint8_t)n;
	t->ddp_seg_len = seg_len;
}

/* LLP: control word only. DDP: the offending Send's header (untagged, no
 * buffer). RDMAP: a Read Request over the IRD (what siw sends: RDMAP 2/0x07),
 * DDP header and Read Request header copied.
 * Not used: an RDMAP error of type 1 (remote protection) with a copied
 * header. tshark 4.0 sizes the copied DDP header by "error type == 1"
 * whatever the layer (meaning DDP tagged), so it would show 14 of the 18
 * octets and misplace the Read Request header; our codec sizes it by the
 * copied T bit, as RFC 5040 4.8 does. */
static void terminates(struct gen *g, bool rdmap_kind)
{
	struct iw_rdmap_hdr llp = {.u.term = {.term = IW_TERM_LLP_CRC}};
	struct iw_rdmap_hdr t = {0};
	struct iw_ddp_hdr bad = untagged(IW_OP_SEND, true, IW_QN_SEND, 7, 0);
	struct iw_read_req q = {.sink_stag = 0x300, .sink_to = 0x2000, .read_size = 64,
				.src_stag = 0xDEAD, .src_to = 0x40};

	if (rdmap_kind) {
		int n;
		bad = untagged(IW_OP_READ_REQ, true, IW_QN_READ_REQ, 3, 0);
		t.u.term.term = IW_TERM_RDMAP_CATA_STREAM;
		t.u.term.hdrct = IW_TERM_HDR_M | IW_TERM_HDR_D | IW_TERM_HDR_R;
		term_copy(&t.u.term, &bad, IW_DDP_UNTAGGED_HDR_LEN + IW_RDMAP_READ_REQ_LEN);
		n = iw_rdmap_read_req_build(t.u.term.rdma_hdr, sizeof(t.u.term.rdma_hdr), &q);
		if (n != IW_RDMAP_READ_REQ_LEN)
			die("iw_rdmap_read_req_build", n < 0 ? n : EINVAL);
	} else {
		t.u.term.term = IW_TERM_DDP_U_NO_BUF;
		t.u.term.hdrct = IW_TERM_HDR_M | IW_TERM_HDR_D;
		term_copy(&t.u.term, &bad, IW_DDP_UNTAGGED_HDR_LEN + 100);
	}
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_TERMINATE, 0, &llp, NULL, 0);
	untagged_msg(g, IW_PCAPW_B2A, IW_OP_TERMINATE, 0, &t, NULL, 0);
}

/* ------------------------------------------------------- connections */

static void conn_begin(struct gen *g, int family, uint16_t port, uint8_t rev)
{
	struct sockaddr_storage a = {0}, b = {0};

	if (family == AF_INET) {
		struct sockaddr_in *x = (struct sockaddr_in *)&a, *y = (struct sockaddr_in *)&b;
		x->sin_family = y->sin_family = AF_INET;
		inet_pton(AF_INET, "192.0.2.1", &x->sin_addr);
		inet_pton(AF_INET, "192.0.2.2", &y->sin_addr);
		x->sin_port = htons(port);
		y->sin_port = htons((uint16_t)(port + 1000));
	} else {
		struct sockaddr_in6 *x = (struct sockaddr_in6 *)&a, *y = (struct sockaddr_in6 *)&b;
		x->sin6_family = y->sin6_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::1", &x->sin6_addr);
		inet_pton(AF_INET6, "2001:db8::2", &y->sin6_addr);
		x->sin6_port = htons(port);
		y->sin6_port = htons((uint16_t)(port + 1000));
	}
	int rc = iw_pcapw_flow_init(&g->f, &g->w, (struct sockaddr *)&a, (struct sockaddr *)&b,
				    0x10000000u * port, 0x20000000u + port, MSS);
	if (rc || (rc = iw_pcapw_handshake(&g->f, g->ts)))
		die("pcap flow", rc);
	g->ts += TS_STEP;
	mpa_exchange(g, rev);
	g->crc = true; /* C was set in the Request (and Reply) */
	for (int d = 0; d < 2; d++) {
		iw_fpdu_tx_init(&g->tx[d], g->crc, false, 0);
		iw_fpdu_rx_init(&g->rx[d], g->crc, false, 0, 0, 0);
		for (int q = 0; q < 4; q++)
			g->msn[d][q] = 1;
	}
}

static void conn_end(struct gen *g)
{
	int rc = iw_pcapw_fin(&g->f, IW_PCAPW_A2B, g->ts);

	if (rc || (rc = iw_pcapw_fin(&g->f, IW_PCAPW_B2A, g->ts)))
		die("pcap fin", rc);
	g->ts += TS_STEP;
	for (int d = 0; d < 2; d++)
		if (iw_fpdu_rx_finish(&g->rx[d]) != 0)
			fail(g, "decoder: stream %d ends inside an FPDU", d);
}

static void gen_open(struct gen *g, const char *pcap, const char *tsv)
{
	FILE *fp = fopen(pcap, "wb");

	memset(g, 0, sizeof(*g));
	g->ts = TS_START;
	g->tsv = fopen(tsv, "w");
	if (!fp || !g->tsv)
		die(fp ? tsv : pcap, errno);
	int rc = iw_pcapw_open(&g->w, fp, IW_PCAPW_NSEC, 0);
	if (rc)
		die("pcap open", rc);
	put_header(g->tsv);
}

static unsigned gen_close(struct gen *g)
{
	int rc = iw_pcapw_close(&g->w);

	if (rc || fclose(g->w.fp) || fclose(g->tsv))
		die("closing output", rc ? rc : EIO);
	return g->failures;
}

/* The full exchange on one connection. */
static void scenario(struct gen *g, int family, uint16_t port, uint8_t rev)
{
	conn_begin(g, family, port, rev);
	if (rev == 2) {
		/* RTR: the zero-length Write the responder chose; STag not 0 */
		tagged_msg(g, IW_PCAPW_A2B, IW_OP_WRITE, 1, 0, pattern, 0);
	}
	sends(g);
	writes_and_reads(g);
	atomics_and_imm(g);
	terminates(g, rev == 2);
	conn_end(g);
}

/* A good Send, then one whose CRC is off by one bit. */
static void bad_scenario(struct gen *g)
{
	struct iw_ddp_hdr h;

	conn_begin(g, AF_INET, 41000, 1);
	untagged_msg(g, IW_PCAPW_A2B, IW_OP_SEND, 0, NULL, (const uint8_t *)"good", 4);
	h = untagged(IW_OP_SEND, true, IW_QN_SEND, g->msn[IW_PCAPW_A2B][IW_QN_SEND]++, 0);
	emit_fpdu(g, IW_PCAPW_A2B, &h, NULL, (const uint8_t *)"bad!", 4, true);
	fprintf(g->tsv, "# bad_frame=%" PRIu64 " good_crc=0x%08" PRIx32 "\n", g->w.records,
		bswap32(g->last_crc));
	/* no FIN: the decoder stopped at the bad FPDU, as a receiver would */
}

int main(int argc, char **argv)
{
	struct gen g;
	unsigned failures, fpdus;

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: %s OUT.pcap EXPECT.tsv [BAD.pcap BAD.tsv]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 31 + 7);

	gen_open(&g, argv[1], argv[2]);
	scenario(&g, AF_INET, 40001, 1);
	scenario(&g, AF_INET6, 40002, 2);
	fpdus = g.fpdus;
	failures = gen_close(&g);
	if (argc == 5) {
		gen_open(&g, argv[3], argv[4]);
		bad_scenario(&g);
		failures += gen_close(&g);
	}
	printf("gen_xcheck_pcap: %u FPDUs written, decoder %s\n", fpdus,
	       failures ? "DISAGREES" : "agrees");
	return failures ? 1 : 0;
}
