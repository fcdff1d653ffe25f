/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Human output: one line per MPA frame, FPDU, gap, error or note, then a
 * summary. Each line starts with where the item is: frame number, seconds
 * since the first frame, connection and direction (I>R initiator to
 * responder, R>I back; tx/rx in a live session).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "reltime.h"
#include "util.h"

struct line {
	char b[2048];
	size_t n;
};

static void __attribute__((format(printf, 2, 3))) put(struct line *l, const char *fmt, ...)
{
	va_list ap;

	if (l->n >= sizeof(l->b))
		return;
	va_start(ap, fmt);
	int k = vsnprintf(l->b + l->n, sizeof(l->b) - l->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->n += (size_t)k;
	if (l->n >= sizeof(l->b))
		l->n = sizeof(l->b) - 1;
}

static const char *dir_label(const char *dir)
{
	if (!strcmp(dir, "i2r"))
		return "I>R";
	if (!strcmp(dir, "r2i"))
		return "R>I";
	return dir;
}

static void origin(struct line *l, const struct rp_origin *o)
{
	if (o->conn)
		put(l, "%6" PRIu64 " %11.6f c%u %s  ", o->frame, rp_reltime(o->ts_ns), o->conn,
		    dir_label(o->dir));
	else
		put(l, "%11.6f %s  ", rp_reltime(o->ts_ns), dir_label(o->dir));
}

static void emit(const struct line *l)
{
	printf("%s\n", l->b);
}

static void hex(struct line *l, const uint8_t *p, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++)
		put(l, "%02x", p[i]);
	if (n > max)
		put(l, "...");
}

/* ------------------------------------------------------------ MPA */

static void rtr_names(struct line *l, uint8_t rtr)
{
	const char *sep = "";

	if (!rtr)
		put(l, "none");
	if (rtr & IW_RTR_WRITE) {
		put(l, "%swrite", sep);
		sep = ",";
	}
	if (rtr & IW_RTR_READ) {
		put(l, "%sread", sep);
		sep = ",";
	}
	if (rtr & IW_RTR_SEND)
		put(l, "%ssend", sep);
}

static void private_data(struct line *l, const uint8_t *pd, size_t n)
{
	bool text = n > 0;

	for (size_t i = 0; i < n; i++)
		if (!isprint(pd[i]) || pd[i] == '"')
			text = false;
	if (text)
		put(l, " PD \"%.*s\"", (int)n, (const char *)pd);
	else if (n) {
		put(l, " PD ");
		hex(l, pd, n, 64);
	}
}

static void mpa(const struct rp_origin *o, const struct rp_mpa *m)
{
	struct line l = {.n = 0};
	const struct iw_mpa_frame *f = &m->f;

	origin(&l, o);
	put(&l, "MPA %s", m->kind == IW_MPA_REQUEST ? "Request" : "Reply");
	if (m->rc) {
		put(&l, "  ERROR: %s", iw_wire_err_str(m->err));
		emit(&l);
		return;
	}
	put(&l, " rev %u  M %d C %d R %d", f->rev, !!(f->flags & IW_MPA_FLAG_M),
	    !!(f->flags & IW_MPA_FLAG_C), !!(f->flags & IW_MPA_FLAG_R));
	if (f->flags & IW_MPA_FLAG_RES)
		put(&l, " res 0x%x", f->flags & IW_MPA_FLAG_RES);
	put(&l, "  PD_Length %u", (unsigned)(m->len - IW_MPA_FRAME_HDR_LEN));
	if (iw_mpa_frame_enhanced(f)) {
		put(&l, "  enhanced: %s RTR ", f->p2p ? "P2P" : "no P2P");
		rtr_names(&l, f->rtr);
		put(&l, " IRD %u ORD %u", f->ird, f->ord);
	}
	private_data(&l, f->pd, f->pd_len);
	if ((f->flags & IW_MPA_FLAG_R) && m->kind == IW_MPA_REPLY)
		put(&l, "  (REJECT)");
	emit(&l);
}

/* ------------------------------------------------------------ FPDU */

static void ddp_fields(struct line *l, const struct rp_ulpdu *u)
{
	const struct iw_ddp_hdr *h = &u->ddp;

	put(l, "%s (0x%x) %s%s", iw_rdmap_opcode_str(u->opcode), u->opcode,
	    iw_ddp_tagged(h) ? "tagged" : "untagged", iw_ddp_last(h) ? " L" : "");
	if (!u->ddp_in)
		return;
	if ((h->ctrl & IW_DDP_DV) != IW_DDP_VERSION || (h->rdmap_ctrl >> 6) != IW_RDMAP_VERSION)
		put(l, " DV %u RV %u", h->ctrl & IW_DDP_DV, h->rdmap_ctrl >> 6);
	if (iw_ddp_tagged(h)) {
		put(l, "  STag 0x%08" PRIx32 " TO 0x%016" PRIx64, h->stag, h->to);
		return;
	}
	put(l, "  QN %" PRIu32 " MSN %" PRIu32 " MO %" PRIu32, h->qn, h->msn, h->mo);
	if (u->opcode == IW_OP_SEND_INV || u->opcode == IW_OP_SEND_SE_INV)
		put(l, " invalidate STag 0x%08" PRIx32, h->inv_stag);
}

/* The header a Terminate copied, named by its opcode and numbers. */
static void term_copy(struct line *l, const struct iw_terminate *t)
{
	struct iw_ddp_hdr h;
	enum iw_wire_err why;

	if (t->hdrct & IW_TERM_HDR_M)
		put(l, " segment length %u", t->ddp_seg_len);
	if (!(t->hdrct & IW_TERM_HDR_D) || t->ddp_hdr_len == 0)
		return;
	if (iw_ddp_hdr_parse(&h, &why, t->ddp_hdr, t->ddp_hdr_len) == -EAGAIN) {
		put(l, " DDP header ");
		hex(l, t->ddp_hdr, t->ddp_hdr_len, 18);
		return;
	}
	put(l, " about %s", iw_rdmap_opcode_str(iw_ddp_opcode(&h)));
	if (iw_ddp_tagged(&h))
		put(l, " STag 0x%08" PRIx32 " TO 0x%" PRIx64, h.stag, h.to);
	else
		put(l, " QN %" PRIu32 " MSN %" PRIu32 " MO %" PRIu32, h.qn, h.msn, h.mo);
	if (t->hdrct & IW_TERM_HDR_R) {
		struct iw_read_req q;

		iw_rdmap_read_req_parse(&q, t->rdma_hdr, sizeof(t->rdma_hdr));
		put(l, " (Read Request size %" PRIu32 " src STag 0x%08" PRIx32 ")", q.read_size,
		    q.src_stag);
	}
}

static void terminate(struct line *l, const struct rp_ulpdu *u)
{
	const struct iw_terminate *t = &u->rdmap.u.term;

	put(l, "  \"%s\" [%s layer %u, type %u, code 0x%02x]", iw_term_str(t->term),
	    iw_term_layer_str(IW_TERM_LAYER(t->term)), IW_TERM_LAYER(t->term), IW_TERM_ETYPE(t->term),
	    IW_TERM_ECODE(t->term));
	put(l, " hdrct %s%s%s", t->hdrct & IW_TERM_HDR_M ? "M" : "-",
	    t->hdrct & IW_TERM_HDR_D ? "D" : "-", t->hdrct & IW_TERM_HDR_R ? "R" : "-");
	term_copy(l, t);
	put(l, "  (octets %02x %02x %02x %02x%s)", u->term_raw[0], u->term_raw[1], u->term_raw[2],
	    u->term_raw[3], u->term_siw ? ", siw layout" : "");
}

static void atomic_req(struct line *l, const struct iw_atomic_req *a)
{
	const char *op = a->atomic_op == IW_ATOMIC_FETCH_ADD   ? "FetchAdd"
			 : a->atomic_op == IW_ATOMIC_CMP_SWAP ? "CmpSwap"
							      : "unknown op";

	put(l, "  %s (%u) id %" PRIu32 " STag 0x%08" PRIx32 " TO 0x%016" PRIx64, op, a->atomic_op,
	    a->req_id, a->stag, a->to);
	put(l, " %s 0x%" PRIx64 " mask 0x%" PRIx64 " compare 0x%" PRIx64 " mask 0x%" PRIx64,
	    a->atomic_op == IW_ATOMIC_FETCH_ADD ? "add" : "swap", a->add_swap, a->add_swap_mask,
	    a->compare, a->compare_mask);
}

static void rdmap_fields(struct line *l, const struct rp_ulpdu *u)
{
	const struct iw_rdmap_hdr *r = &u->rdmap;

	if (!u->has_rdmap)
		return;
	switch (u->opcode) {
	case IW_OP_READ_REQ:
		put(l, "  sink STag 0x%08" PRIx32 " TO 0x%016" PRIx64 " size %" PRIu32
		       " src STag 0x%08" PRIx32 " TO 0x%016" PRIx64,
		    r->u.read_req.sink_stag, r->u.read_req.sink_to, r->u.read_req.read_size,
		    r->u.read_req.src_stag, r->u.read_req.src_to);
		break;
	case IW_OP_TERMINATE:
		terminate(l, u);
		break;
	case IW_OP_ATOMIC_REQ:
		atomic_req(l, &r->u.atomic_req);
		break;
	case IW_OP_ATOMIC_RESP:
		put(l, "  id %" PRIu32 " original value 0x%016" PRIx64, r->u.atomic_resp.req_id,
		    r->u.atomic_resp.orig_value);
		break;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		put(l, "  data ");
		hex(l, r->u.imm, IW_RDMAP_IMM_LEN, IW_RDMAP_IMM_LEN);
		break;
	default:
		break;
	}
}

static void fpdu(const struct rp_origin *o, const struct rp_fpdu *f)
{
	struct line l = {.n = 0};
	char why[256];

	origin(&l, o);
	put(&l, "FPDU %" PRIu64 " @%" PRIu32 " len %u ", f->n, f->stream_off, f->ulpdu_len);
	if (!f->crc_on)
		put(&l, "CRC off");
	else if (f->crc_ok)
		put(&l, "CRC ok 0x%08" PRIx32, f->crc_wire);
	else
		put(&l, "CRC BAD 0x%08" PRIx32 " (computed 0x%08" PRIx32 ")", f->crc_wire, f->crc_calc);
	if (f->nmarkers) {
		put(&l, " markers");
		for (int i = 0; i < f->nmarkers; i++)
			put(&l, "%s%u", i ? "," : " ", f->fpduptr[i]);
	}
	put(&l, ": ");
	ddp_fields(&l, &f->u);
	rdmap_fields(&l, &f->u);
	if (f->u.payload_len)
		put(&l, "  payload %" PRIu32, f->u.payload_len);
	if (f->sent_len < f->wire_len)
		put(&l, "  TRUNCATED to %zu of %zu octets", f->sent_len, f->wire_len);
	rp_fpdu_problems(f, why, sizeof(why));
	if (why[0])
		put(&l, "  ERROR: %s", why);
	emit(&l);
}

/* ------------------------------------------------------------ others */

static void conn(const struct rp_conn_info *c)
{
	char a[64], b[64];

	rp_ep_str(&c->ep[RP_INITIATOR], a, sizeof(a));
	rp_ep_str(&c->ep[RP_RESPONDER], b, sizeof(b));
	printf("connection %u: initiator %s, responder %s (roles from %s)\n", c->id, a, b,
	       c->roles_from);
}

static void neg(unsigned id, const struct rp_neg_info *n)
{
	printf("connection %u: CRC %s, markers I>R %s, R>I %s%s (%s)\n", id, n->crc ? "on" : "off",
	       n->markers[RP_INITIATOR] ? "on" : "off", n->markers[RP_RESPONDER] ? "on" : "off",
	       n->rejected ? ", REJECTED" : "", n->source);
}

static void error(const struct rp_origin *o, bool has_off, uint32_t off, const char *what)
{
	struct line l = {.n = 0};

	origin(&l, o);
	put(&l, "ERROR");
	if (has_off)
		put(&l, " at stream offset %" PRIu32, off);
	if (o->has_seq)
		put(&l, " (seq %" PRIu32 ")", o->seq);
	put(&l, ": %s", what);
	emit(&l);
}

static void gap(const struct rp_origin *o, uint32_t seq_to, uint64_t bytes)
{
	struct line l = {.n = 0};

	origin(&l, o);
	put(&l, "GAP: %" PRIu64 " octets missing, seq %" PRIu32 " to %" PRIu32, bytes, o->seq, seq_to);
	emit(&l);
}

static void note(const struct rp_origin *o, const char *msg)
{
	struct line l = {.n = 0};

	if (o)
		origin(&l, o);
	put(&l, "note: %s", msg);
	emit(&l);
}

const struct rp_out_ops rp_print_ops = {
	.conn = conn, .neg = neg, .mpa = mpa, .fpdu = fpdu,
	.error = error, .gap = gap, .note = note, .summary = rp_print_summary,
};
