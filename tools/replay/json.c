/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * JSON Lines output (--json): one object per line, each with a "type"
 * (conn, negotiated, mpa, fpdu, error, gap, note, summary). 32-bit fields
 * are numbers; 64-bit ones (TOs, atomic operands) are "0x..." strings so
 * that no JSON reader rounds them. Field names follow the RFCs; the test
 * tests/replay_tshark.py maps them to Wireshark's.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "num.h"
#include "util.h"

bool rp_json_payload;

/* ------------------------------------------------------------ writer */

struct jw {
	bool first;
};

static void sep(struct jw *w)
{
	if (!w->first)
		putchar(',');
	w->first = false;
}

/* The octets a JSON string must escape: quote, backslash, controls. */
static const char json_special[] = "\"\\\001\002\003\004\005\006\007\010\011\012\013"
				   "\014\015\016\017\020\021\022\023\024\025\026\027"
				   "\030\031\032\033\034\035\036\037";

/* Runs of plain characters go out in one fwrite: a summary is mostly
 * names, and a putchar per character (with three comparisons) was a
 * tenth of the time of iwarp-replay's fuzz target. */
static void str_body(const char *s)
{
	putchar('"');
	for (;;) {
		size_t n = strcspn(s, json_special);
		unsigned char c;

		fwrite(s, 1, n, stdout);
		s += n;
		c = (unsigned char)*s++;
		if (!c)
			break;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else
			printf("\\u%04x", c);
	}
	putchar('"');
}

/* Keys are the writer's own names (field names, "type", the library's
 * opcode names): plain ASCII with nothing to escape, so they skip
 * str_body's scan. With more than 16 octets to look for, glibc's strcspn
 * builds a 256-entry table on every call: for keys that was a fifth of
 * iwarp-replay's fuzz target (callgrind). */
static void key(struct jw *w, const char *k)
{
	sep(w);
	putchar('"');
	fputs(k, stdout);
	fputs("\":", stdout);
}

static void jstr(struct jw *w, const char *k, const char *v)
{
	key(w, k);
	str_body(v);
}

static void jnum(struct jw *w, const char *k, uint64_t v)
{
	key(w, k);
	rp_put_u64(v);
}

static void jbool(struct jw *w, const char *k, bool v)
{
	key(w, k);
	fputs(v ? "true" : "false", stdout);
}

static void jhex64(struct jw *w, const char *k, uint64_t v)
{
	key(w, k);
	fputs("\"0x", stdout);
	rp_put_hex(v, 16);
	putchar('"');
}

static void jhex32(struct jw *w, const char *k, uint32_t v)
{
	key(w, k);
	fputs("\"0x", stdout);
	rp_put_hex(v, 8);
	putchar('"');
}

static void jbytes(struct jw *w, const char *k, const uint8_t *p, size_t n)
{
	key(w, k);
	putchar('"');
	for (size_t i = 0; i < n; i++)
		rp_put_hex(p[i], 2);
	putchar('"');
}

static void obj_begin(struct jw *w, const char *k)
{
	key(w, k);
	putchar('{');
	w->first = true;
}

static void obj_end(struct jw *w)
{
	putchar('}');
	w->first = false;
}

static struct jw line_begin(const char *type)
{
	struct jw w = {.first = true};

	putchar('{');
	jstr(&w, "type", type);
	return w;
}

static void line_end(void)
{
	fputs("}\n", stdout);
}

static void origin(struct jw *w, const struct rp_origin *o)
{
	if (!o)
		return;
	if (o->conn)
		jnum(w, "conn", o->conn);
	jstr(w, "dir", o->dir);
	if (o->frame) {
		jnum(w, "frame", o->frame);
		jnum(w, "first_frame", o->first_frame ? o->first_frame : o->frame);
	}
	key(w, "time");
	rp_put_u64(o->ts_ns / 1000000000u);
	putchar('.');
	rp_put_u64z(o->ts_ns % 1000000000u, 9);
	if (o->has_seq)
		jnum(w, "seq", o->seq);
}

/* ------------------------------------------------------------ items */

static void conn(const struct rp_conn_info *c)
{
	struct jw w = line_begin("conn");
	char a[64], b[64];

	rp_ep_str(&c->ep[RP_INITIATOR], a, sizeof(a));
	rp_ep_str(&c->ep[RP_RESPONDER], b, sizeof(b));
	jnum(&w, "conn", c->id);
	jstr(&w, "initiator", a);
	jstr(&w, "responder", b);
	jstr(&w, "roles_from", c->roles_from);
	line_end();
}

static void neg(unsigned id, const struct rp_neg_info *n)
{
	struct jw w = line_begin("negotiated");

	jnum(&w, "conn", id);
	jbool(&w, "crc", n->crc);
	jbool(&w, "markers_i2r", n->markers[RP_INITIATOR]);
	jbool(&w, "markers_r2i", n->markers[RP_RESPONDER]);
	jbool(&w, "rejected", n->rejected);
	jstr(&w, "source", n->source);
	line_end();
}

static void rtr_list(struct jw *w, uint8_t rtr)
{
	const char *sep2 = "";

	key(w, "rtr");
	putchar('[');
	if (rtr & IW_RTR_WRITE) {
		printf("\"write\"");
		sep2 = ",";
	}
	if (rtr & IW_RTR_READ) {
		printf("%s\"read\"", sep2);
		sep2 = ",";
	}
	if (rtr & IW_RTR_SEND)
		printf("%s\"send\"", sep2);
	putchar(']');
}

static void mpa(const struct rp_origin *o, const struct rp_mpa *m)
{
	struct jw w = line_begin("mpa");
	const struct iw_mpa_frame *f = &m->f;

	origin(&w, o);
	jstr(&w, "kind", m->kind == IW_MPA_REQUEST ? "request" : "reply");
	jbool(&w, "valid", m->rc == 0);
	if (m->rc) {
		jstr(&w, "error", iw_wire_err_name(m->err));
		jstr(&w, "error_str", iw_wire_err_str(m->err));
		line_end();
		return;
	}
	jnum(&w, "rev", f->rev);
	jbool(&w, "m", f->flags & IW_MPA_FLAG_M);
	jbool(&w, "c", f->flags & IW_MPA_FLAG_C);
	jbool(&w, "r", f->flags & IW_MPA_FLAG_R);
	jnum(&w, "res", f->flags & (IW_MPA_FLAG_RES | IW_MPA_FLAG_ENHANCED));
	jnum(&w, "pd_length", m->len - IW_MPA_FRAME_HDR_LEN);
	/* As on the wire, an RFC 6581 block included. */
	jbytes(&w, "private_data", m->raw + IW_MPA_FRAME_HDR_LEN, m->len - IW_MPA_FRAME_HDR_LEN);
	jbool(&w, "enhanced", iw_mpa_frame_enhanced(f));
	if (iw_mpa_frame_enhanced(f)) {
		jbool(&w, "p2p", f->p2p);
		rtr_list(&w, f->rtr);
		jnum(&w, "ird", f->ird);
		jnum(&w, "ord", f->ord);
		jbytes(&w, "ulp_private_data", f->pd, f->pd_len);
	}
	line_end();
}

static void ddp_obj(struct jw *w, const struct rp_ulpdu *u)
{
	const struct iw_ddp_hdr *h = &u->ddp;

	obj_begin(w, "ddp");
	jbool(w, "t", iw_ddp_tagged(h));
	jbool(w, "l", iw_ddp_last(h));
	jnum(w, "rsvd", (h->ctrl & IW_DDP_RSVD) >> 2);
	jnum(w, "dv", h->ctrl & IW_DDP_DV);
	if (u->ddp_in && iw_ddp_tagged(h)) {
		jnum(w, "stag", h->stag);
		jhex64(w, "to", h->to);
	} else if (u->ddp_in) {
		jnum(w, "qn", h->qn);
		jnum(w, "msn", h->msn);
		jnum(w, "mo", h->mo);
		if (u->opcode == IW_OP_SEND_INV || u->opcode == IW_OP_SEND_SE_INV)
			jnum(w, "inv_stag", h->inv_stag);
	}
	obj_end(w);
	obj_begin(w, "rdmap");
	jnum(w, "rv", h->rdmap_ctrl >> 6);
	jnum(w, "rsvd", (h->rdmap_ctrl & IW_RDMAP_RSVD) >> 4);
	jnum(w, "opcode", u->opcode);
	jstr(w, "name", iw_rdmap_opcode_str(u->opcode));
	obj_end(w);
}

static void term_obj(struct jw *w, const struct rp_ulpdu *u)
{
	const struct iw_terminate *t = &u->rdmap.u.term;

	obj_begin(w, "terminate");
	jnum(w, "layer", IW_TERM_LAYER(t->term));
	jnum(w, "etype", IW_TERM_ETYPE(t->term));
	jnum(w, "ecode", IW_TERM_ECODE(t->term));
	key(w, "code");
	fputs("\"0x", stdout);
	rp_put_hex(t->term, 4);
	putchar('"');
	jstr(w, "layer_str", iw_term_layer_str(IW_TERM_LAYER(t->term)));
	jstr(w, "str", iw_term_str(t->term));
	jbool(w, "m", t->hdrct & IW_TERM_HDR_M);
	jbool(w, "d", t->hdrct & IW_TERM_HDR_D);
	jbool(w, "r", t->hdrct & IW_TERM_HDR_R);
	if (t->hdrct & IW_TERM_HDR_M)
		jnum(w, "ddp_seg_len", t->ddp_seg_len);
	if (t->hdrct & IW_TERM_HDR_D)
		jbytes(w, "ddp_hdr", t->ddp_hdr, t->ddp_hdr_len);
	if (t->hdrct & IW_TERM_HDR_R)
		jbytes(w, "rdma_hdr", t->rdma_hdr, sizeof(t->rdma_hdr));
	jbytes(w, "raw", u->term_raw, sizeof(u->term_raw));
	jbool(w, "siw_layout", u->term_siw);
	obj_end(w);
}

static void atomic_obj(struct jw *w, const struct iw_atomic_req *a)
{
	obj_begin(w, "atomic_req");
	jnum(w, "op", a->atomic_op);
	jnum(w, "req_id", a->req_id);
	jnum(w, "stag", a->stag);
	jhex64(w, "to", a->to);
	jhex64(w, "add_swap", a->add_swap);
	jhex64(w, "add_swap_mask", a->add_swap_mask);
	jhex64(w, "compare", a->compare);
	jhex64(w, "compare_mask", a->compare_mask);
	obj_end(w);
}

static void rdmap_objs(struct jw *w, const struct rp_ulpdu *u)
{
	const struct iw_rdmap_hdr *r = &u->rdmap;

	if (!u->has_rdmap)
		return;
	switch (u->opcode) {
	case IW_OP_READ_REQ:
		obj_begin(w, "read_req");
		jnum(w, "sink_stag", r->u.read_req.sink_stag);
		jhex64(w, "sink_to", r->u.read_req.sink_to);
		jnum(w, "size", r->u.read_req.read_size);
		jnum(w, "src_stag", r->u.read_req.src_stag);
		jhex64(w, "src_to", r->u.read_req.src_to);
		obj_end(w);
		break;
	case IW_OP_TERMINATE:
		term_obj(w, u);
		break;
	case IW_OP_ATOMIC_REQ:
		atomic_obj(w, &r->u.atomic_req);
		break;
	case IW_OP_ATOMIC_RESP:
		obj_begin(w, "atomic_resp");
		jnum(w, "req_id", r->u.atomic_resp.req_id);
		jhex64(w, "orig_value", r->u.atomic_resp.orig_value);
		obj_end(w);
		break;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		jbytes(w, "imm", r->u.imm, IW_RDMAP_IMM_LEN);
		break;
	default:
		break;
	}
}

static void fpdu(const struct rp_origin *o, const struct rp_fpdu *f)
{
	struct jw w = line_begin("fpdu");
	char why[256];

	origin(&w, o);
	jnum(&w, "n", f->n);
	jnum(&w, "stream_off", f->stream_off);
	jnum(&w, "wire_len", f->wire_len);
	if (f->sent_len < f->wire_len)
		jnum(&w, "sent_len", f->sent_len);
	jnum(&w, "ulpdu_length", f->ulpdu_len);
	jnum(&w, "pad", f->pad);
	jbool(&w, "crc_enabled", f->crc_on);
	jhex32(&w, "crc", f->crc_wire);
	jhex32(&w, "crc_computed", f->crc_calc);
	jbool(&w, "crc_ok", f->crc_ok);
	key(&w, "markers");
	putchar('[');
	for (int i = 0; i < f->nmarkers; i++) {
		if (i)
			putchar(',');
		rp_put_u64(f->fpduptr[i]);
	}
	putchar(']');
	jbool(&w, "markers_ok", f->markers_ok);
	ddp_obj(&w, &f->u);
	rdmap_objs(&w, &f->u);
	jnum(&w, "payload_len", f->u.payload_len);
	if (rp_json_payload && f->ulpdu)
		jbytes(&w, "payload", f->ulpdu + f->u.hdr_len, f->u.payload_len);
	rp_fpdu_problems(f, why, sizeof(why));
	jbool(&w, "ok", !why[0]);
	if (why[0]) {
		enum iw_wire_err e = f->frame_err != IW_WERR_NONE ? f->frame_err : f->u.err;

		if (e == IW_WERR_NONE)
			e = f->crc_ok ? IW_WERR_FPDU_MARKER : IW_WERR_FPDU_CRC;
		jstr(&w, "error", iw_wire_err_name(e));
		jstr(&w, "error_str", why);
	}
	line_end();
}

static void error(const struct rp_origin *o, bool has_off, uint32_t off, const char *what)
{
	struct jw w = line_begin("error");

	origin(&w, o);
	if (has_off)
		jnum(&w, "stream_off", off);
	jstr(&w, "error_str", what);
	line_end();
}

static void gap(const struct rp_origin *o, uint32_t seq_to, uint64_t bytes)
{
	struct jw w = line_begin("gap");

	origin(&w, o);
	jnum(&w, "seq_end", seq_to);
	jnum(&w, "bytes", bytes);
	line_end();
}

static void note(const struct rp_origin *o, const char *msg)
{
	struct jw w = line_begin("note");

	origin(&w, o);
	jstr(&w, "msg", msg);
	line_end();
}

static void first_error(struct jw *w, const struct rp_first_err *e)
{
	key(w, "first_error");
	if (!e->set) {
		fputs("null", stdout);
		return;
	}
	putchar('{');
	w->first = true;
	if (e->conn) {
		jnum(w, "conn", e->conn);
		jnum(w, "frame", e->frame);
	}
	jstr(w, "dir", e->dir);
	if (e->has_off)
		jnum(w, "stream_off", e->stream_off);
	if (e->has_seq)
		jnum(w, "seq", e->seq);
	jstr(w, "what", e->what);
	obj_end(w);
}

static void opcodes(struct jw *w, const struct rp_stats *s)
{
	obj_begin(w, "opcodes");
	for (unsigned op = 0; op < RP_OPCODES; op++) {
		if (!s->segs[op])
			continue;
		obj_begin(w, iw_rdmap_opcode_str(op));
		jnum(w, "opcode", op);
		jnum(w, "messages", s->msgs[op]);
		jnum(w, "fpdus", s->segs[op]);
		jnum(w, "payload", s->payload[op]);
		obj_end(w);
	}
	obj_end(w);
}

static void summary(const struct rp_stats *s, bool check, bool fail_on_term)
{
	struct jw w = line_begin("summary");
	uint64_t errs = rp_stats_errors(s);

	(void)check;
	if (!s->live) {
		jnum(&w, "frames", s->cap.frames);
		jnum(&w, "tcp_segments", s->cap.tcp);
		jnum(&w, "skipped_not_ip", s->cap.not_ip);
		jnum(&w, "skipped_not_tcp", s->cap.not_tcp);
		jnum(&w, "skipped_fragments", s->cap.fragments);
		jnum(&w, "skipped_malformed", s->cap.malformed);
		jnum(&w, "connections", s->conns);
		jnum(&w, "iwarp_connections", s->iwarp_conns);
		jnum(&w, "retransmissions", s->retrans);
		jnum(&w, "out_of_order", s->ooo);
		jnum(&w, "overlaps", s->overlaps);
		jnum(&w, "overlap_conflicts", s->conflicts);
		jnum(&w, "gaps", s->gaps);
		jnum(&w, "gap_bytes", s->gap_bytes);
	} else {
		jnum(&w, "sent_fpdus", s->tx_fpdus);
		jnum(&w, "sent_bytes", s->tx_bytes);
	}
	jnum(&w, "mpa_frames", s->mpa_frames);
	jnum(&w, "fpdus", s->fpdus);
	jnum(&w, "wire_bytes", s->wire_bytes);
	opcodes(&w, s);
	jnum(&w, "terminates", s->terminates);
	jnum(&w, "crc_errors", s->crc_errors);
	jnum(&w, "marker_errors", s->marker_errors);
	jnum(&w, "protocol_errors", s->proto_errors);
	jnum(&w, "mpa_errors", s->mpa_errors);
	jnum(&w, "incomplete_fpdus", s->lost);
	jnum(&w, "errors", errs);
	first_error(&w, &s->first);
	jstr(&w, "result", errs || (fail_on_term && s->terminates) ? "errors" : "ok");
	line_end();
}

const struct rp_out_ops rp_json_ops = {
	.conn = conn, .neg = neg, .mpa = mpa, .fpdu = fpdu,
	.error = error, .gap = gap, .note = note, .summary = summary,
};
