/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The vector runner: every record of rfc-vectors/<name>.iwv is one test.
 *  - frames and FPDU streams are fed whole, split in two at every offset and
 *    one octet at a time; all three feedings must decode identically;
 *  - every field/bits/marker/crc line is checked against what the decoder
 *    reported (the Python checker checks the same lines against raw octets,
 *    so the two together tie our decoder to independent bytes);
 *  - what was decoded is re-encoded and must give back the exact octets;
 *  - a malformed vector must fail with exactly the reason and TERMINATE
 *    triple its settings name, however it is fed;
 *  - a line or setting that no check read fails the record.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "iwv.h"
#include "suites.h"

#define MAX_SEGS 32

/* ------------------------------------------------------------ loading */

static struct iwv_rec *all_recs;
static int num_recs;
static char load_err[512];

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_file(const char *path)
{
	struct iwv_rec *recs;
	int n = iwv_load(path, &recs, load_err, sizeof(load_err));

	if (n < 0) {
		num_recs = -1;
		return;
	}
	struct iwv_rec *all = realloc(all_recs, sizeof(*all) * (size_t)(num_recs + n));
	if (!all) {
		free(recs);
		num_recs = -1;
		return;
	}
	all_recs = all;
	memcpy(all_recs + num_recs, recs, sizeof(*recs) * (size_t)n);
	num_recs += n;
	free(recs);
}

static void load_all(void)
{
	const char *dir = getenv("IW_VECTOR_DIR");
	char *names[256];
	int count = 0;
	DIR *d;

	if (!dir)
		dir = IW_DEFAULT_VECTOR_DIR;
	d = opendir(dir);
	if (!d) {
		snprintf(load_err, sizeof(load_err), "%s: %s", dir, strerror(errno));
		num_recs = -1;
		return;
	}
	for (struct dirent *e; (e = readdir(d)) && count < 256;) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".iwv") == 0)
			names[count++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)count, sizeof(names[0]), cmp_names);
	for (int i = 0; i < count; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (num_recs >= 0)
			add_file(path);
		free(names[i]);
	}
}

/* ------------------------------------------------------- value matching */

/* A decoded value: either an integer (rendered big-endian in the field's
 * width) or octets. */
struct val {
	bool is_bytes;
	uint64_t num;
	const uint8_t *bytes;
	size_t len;
};

static struct val vnum(uint64_t v)
{
	struct val x = {false, v, NULL, 0};
	return x;
}

static struct val vbytes(const uint8_t *p, size_t len)
{
	struct val x = {true, 0, p, len};
	return x;
}

/* Render v into exactly len octets; false if it does not fit that width. */
static bool render(const struct val *v, uint8_t *out, size_t len)
{
	if (v->is_bytes) {
		if (v->len != len)
			return false;
		memcpy(out, v->bytes, len);
		return true;
	}
	if (len > 8 || (len < 8 && (v->num >> (8 * len)) != 0))
		return false;
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)(v->num >> (8 * (len - 1 - i)));
	return true;
}

static uint64_t be_int(const uint8_t *p, size_t len)
{
	uint64_t v = 0;
	for (size_t i = 0; i < len && i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The same value grammar as verify_vectors.py: "ascii", bytes:HEX,
 * mask:0xM:INT, or an integer compared big-endian. */
static bool spec_matches(const char *spec, const uint8_t *chunk, size_t len)
{
	uint8_t buf[IWV_MAX_BLOB];
	size_t sl = strlen(spec);

	if (sl >= 2 && spec[0] == '"' && spec[sl - 1] == '"')
		return sl - 2 == len && memcmp(spec + 1, chunk, len) == 0;
	if (strncmp(spec, "bytes:", 6) == 0) {
		int n = iwv_hex(spec + 6, buf, sizeof(buf));
		return n >= 0 && (size_t)n == len && memcmp(buf, chunk, len) == 0;
	}
	if (strncmp(spec, "mask:", 5) == 0) {
		char *end;
		uint64_t mask = strtoull(spec + 5, &end, 16);
		if (*end != ':')
			return false;
		return (be_int(chunk, len) & mask) == strtoull(end + 1, NULL, 0);
	}
	return len <= 8 && be_int(chunk, len) == strtoull(spec, NULL, 0);
}

/* ------------------------------------------------------------ frames */

static bool frame_field(const char *name, const struct iw_mpa_frame *f, struct val *v)
{
	unsigned enh = iw_mpa_frame_enhanced(f) ? IW_MPA_6581_LEN : 0;
	uint16_t ird_word = (uint16_t)((f->p2p ? 0x8000 : 0) | (f->rtr & IW_RTR_SEND ? 0x4000 : 0) | f->ird);
	uint16_t ord_word = (uint16_t)((f->rtr & IW_RTR_WRITE ? 0x8000 : 0) |
				       (f->rtr & IW_RTR_READ ? 0x4000 : 0) | f->ord);
	const char *key = f->kind == IW_MPA_REQUEST ? IW_MPA_KEY_REQ : IW_MPA_KEY_REP;

	if (!strcmp(name, "mpa.key"))
		*v = vbytes((const uint8_t *)key, IW_MPA_KEY_LEN);
	else if (!strcmp(name, "mpa.flags"))
		*v = vnum(f->flags);
	else if (!strcmp(name, "mpa.rev"))
		*v = vnum(f->rev);
	else if (!strcmp(name, "mpa.pd_length"))
		*v = vnum(f->pd_len + enh);
	else if (!strcmp(name, "mpa.private_data"))
		*v = vbytes(f->pd, f->pd_len);
	else if (!strcmp(name, "mpa6581.ird_word"))
		*v = vnum(ird_word);
	else if (!strcmp(name, "mpa6581.ord_word"))
		*v = vnum(ord_word);
	else if (!strcmp(name, "mpa6581.ird"))
		*v = vnum(f->ird);
	else if (!strcmp(name, "mpa6581.ord"))
		*v = vnum(f->ord);
	else
		return false;
	return true;
}

static bool frame_bits(const char *name, const struct iw_mpa_frame *f, uint64_t *v)
{
	static const struct {
		const char *name;
		uint8_t mask;
	} flag_bits[] = {{"mpa.m", IW_MPA_FLAG_M}, {"mpa.c", IW_MPA_FLAG_C}, {"mpa.r", IW_MPA_FLAG_R},
			 {"mpa.enhanced", IW_MPA_FLAG_ENHANCED}};

	for (size_t i = 0; i < sizeof(flag_bits) / sizeof(flag_bits[0]); i++)
		if (!strcmp(name, flag_bits[i].name)) {
			*v = !!(f->flags & flag_bits[i].mask);
			return true;
		}
	if (!strcmp(name, "mpa.res"))
		*v = f->flags & IW_MPA_FLAG_RES;
	else if (!strcmp(name, "mpa6581.a_p2p"))
		*v = f->p2p;
	else if (!strcmp(name, "mpa6581.b_send_rtr"))
		*v = !!(f->rtr & IW_RTR_SEND);
	else if (!strcmp(name, "mpa6581.c_write_rtr"))
		*v = !!(f->rtr & IW_RTR_WRITE);
	else if (!strcmp(name, "mpa6581.d_read_rtr"))
		*v = !!(f->rtr & IW_RTR_READ);
	else
		return false;
	return true;
}

static enum iw_mpa_kind frame_kind(struct iwv_rec *r)
{
	const char *k = iwv_setting(r, "frame");

	if (k)
		return strcmp(k, "reply") == 0 ? IW_MPA_REPLY : IW_MPA_REQUEST;
	return r->blob_len >= 16 && memcmp(r->blob, IW_MPA_KEY_REP, 16) == 0 ? IW_MPA_REPLY
									     : IW_MPA_REQUEST;
}

static unsigned frame_parse_flags(struct iwv_rec *r)
{
	const char *p = iwv_setting(r, "parse");

	if (!p)
		return 0;
	if (!strcmp(p, "strict"))
		return IW_MPA_PARSE_STRICT;
	if (!strcmp(p, "complete"))
		return IW_MPA_PARSE_COMPLETE;
	ck_abort_msg("%s: unknown parse=%s", r->id, p);
	return 0;
}

static void check_frame_lines(struct iwv_rec *r, const struct iw_mpa_frame *f)
{
	for (int i = 0; i < r->num_lines; i++) {
		struct iwv_line *l = &r->lines[i];
		char name[64], spec[400];
		unsigned off, len;
		uint8_t buf[IWV_MAX_BLOB];
		struct val v;
		uint64_t bit, want;

		if (!strcmp(l->key, "field")) {
			ck_assert_msg(sscanf(l->rest, "%u %u %63s %399[^\n]", &off, &len, name, spec) == 4,
				      "%s line %d: bad field line", r->id, l->lineno);
			ck_assert_msg(frame_field(name, f, &v), "%s: unknown field %s", r->id, name);
			ck_assert_msg(len <= sizeof(buf) && render(&v, buf, len) && spec_matches(spec, buf, len),
				      "%s line %d: decoded %s does not match %s", r->id, l->lineno, name, spec);
			l->used = true;
		} else if (!strcmp(l->key, "bits")) {
			ck_assert_msg(sscanf(l->rest, "%u %*s %63s %399s", &off, name, spec) == 3,
				      "%s line %d: bad bits line", r->id, l->lineno);
			ck_assert_msg(frame_bits(name, f, &bit), "%s: unknown bits %s", r->id, name);
			want = strtoull(spec, NULL, 0);
			ck_assert_msg(bit == want, "%s line %d: decoded %s = %llu, vector says %llu", r->id,
				      l->lineno, name, (unsigned long long)bit, (unsigned long long)want);
			l->used = true;
		}
	}
}

/* Prefixes of a valid frame must ask for more, never succeed early. */
static void check_frame_prefixes(struct iwv_rec *r, enum iw_mpa_kind kind)
{
	for (size_t k = 0; k < r->blob_len; k++) {
		struct iw_mpa_frame f;
		size_t need = 0;
		enum iw_wire_err why = IW_WERR_NONE;
		int rc = iw_mpa_frame_parse(&f, &need, &why, kind, r->blob, k, 0);
		ck_assert_msg(rc == -EAGAIN, "%s: prefix %zu gave %d (%s)", r->id, k, rc,
			      iw_wire_err_name(why));
		ck_assert_msg(need > k && need <= r->blob_len, "%s: prefix %zu asks for %zu", r->id, k, need);
	}
}

static void run_frame(struct iwv_rec *r)
{
	enum iw_mpa_kind kind = frame_kind(r);
	unsigned flags = frame_parse_flags(r);
	struct iw_mpa_frame f;
	enum iw_wire_err why = IW_WERR_NONE;
	size_t used = 0;
	uint8_t out[IWV_MAX_BLOB];

	int rc = iw_mpa_frame_parse(&f, &used, &why, kind, r->blob, r->blob_len, flags);
	ck_assert_msg(rc == 0, "%s: parse failed: %d %s", r->id, rc, iw_wire_err_str(why));
	ck_assert_msg(used == r->blob_len, "%s: consumed %zu of %zu", r->id, used, r->blob_len);
	check_frame_lines(r, &f);
	check_frame_prefixes(r, kind);
	int n = iw_mpa_frame_build(out, sizeof(out), &f, 0);
	ck_assert_msg(n == (int)r->blob_len && memcmp(out, r->blob, r->blob_len) == 0,
		      "%s: re-encoded frame differs (len %d vs %zu)", r->id, n, r->blob_len);
}

static void expect_reason(struct iwv_rec *r, enum iw_wire_err got, int *want_out)
{
	const char *exp = iwv_setting(r, "expect");
	long term = iwv_setting_long(r, "term", -1);

	ck_assert_msg(exp, "%s: bad vector without expect=", r->id);
	int want = iw_wire_err_from_name(exp);
	ck_assert_msg(want > 0, "%s: unknown reason %s", r->id, exp);
	ck_assert_msg((int)got == want, "%s: failed with %s, vector expects %s", r->id,
		      iw_wire_err_name(got), exp);
	ck_assert_msg(term >= 0, "%s: bad vector without term=", r->id);
	ck_assert_msg(iw_wire_err_term(got) == term, "%s: TERMINATE 0x%04x, vector expects 0x%04lx", r->id,
		      iw_wire_err_term(got), term);
	*want_out = want;
}

static void run_frame_bad(struct iwv_rec *r)
{
	enum iw_mpa_kind kind = frame_kind(r);
	unsigned flags = frame_parse_flags(r);
	struct iw_mpa_frame f;
	enum iw_wire_err why = IW_WERR_NONE;
	size_t used = 0;
	int want;

	int rc = iw_mpa_frame_parse(&f, &used, &why, kind, r->blob, r->blob_len, flags);
	ck_assert_msg(rc == -EPROTO, "%s: parse gave %d, want -EPROTO", r->id, rc);
	expect_reason(r, why, &want);
	/* However the bytes arrive, the parser may wait for more but must never
	 * accept the frame or name a different problem. */
	for (size_t k = 0; k < r->blob_len; k++) {
		why = IW_WERR_NONE;
		rc = iw_mpa_frame_parse(&f, &used, &why, kind, r->blob, k, flags & ~IW_MPA_PARSE_COMPLETE);
		ck_assert_msg(rc == -EAGAIN || (rc == -EPROTO && (int)why == want),
			      "%s: prefix %zu gave %d (%s)", r->id, k, rc, iw_wire_err_name(why));
	}
}

/* ------------------------------------------------------------ FPDUs */

struct dseg {
	struct iw_ddp_seg seg;
	uint8_t payload[IWV_MAX_BLOB];
	uint32_t got;
	bool ended;
};

struct decoded {
	int rc;
	enum iw_wire_err err;
	int num_segs;
	int num_ends;
	struct dseg segs[MAX_SEGS];
};

struct rx_cfg {
	bool crc, markers;
	uint32_t stream_off;
	uint32_t max_ulpdu;
};

static void on_event(struct decoded *d, const struct iw_rx_event *ev)
{
	struct dseg *s = d->num_segs ? &d->segs[d->num_segs - 1] : NULL;

	switch (ev->kind) {
	case IW_RX_SEG_HDR:
		ck_assert_msg(d->num_segs < MAX_SEGS, "too many segments");
		s = &d->segs[d->num_segs++];
		s->seg = *ev->seg;
		s->got = 0;
		s->ended = false;
		break;
	case IW_RX_PAYLOAD:
		ck_assert_msg(s && !s->ended, "payload outside a segment");
		ck_assert_msg(ev->off == s->got, "payload offset %u, expected %u", ev->off, s->got);
		ck_assert_msg(s->got + ev->len <= sizeof(s->payload), "payload too large");
		memcpy(s->payload + s->got, ev->data, ev->len);
		s->got += (uint32_t)ev->len;
		break;
	case IW_RX_SEG_END:
		ck_assert_msg(s && !s->ended, "segment end without header");
		ck_assert_msg(s->got == ev->seg->payload_len, "segment ended with %u of %u payload octets",
			      s->got, ev->seg->payload_len);
		s->seg = *ev->seg;
		s->ended = true;
		d->num_ends++;
		break;
	default:
		ck_abort_msg("unknown event kind %d", ev->kind);
	}
}

/* Feed one piece; returns the decoder's error or 0. */
static int feed(struct iw_fpdu_rx *rx, struct decoded *d, const uint8_t *p, size_t len)
{
	for (int guard = 0; guard < 1000000; guard++) {
		struct iw_rx_event ev;
		size_t used = 0;
		int rc = iw_fpdu_rx_next(rx, &ev, p, len, &used);

		ck_assert_msg(used <= len, "consumed %zu of %zu", used, len);
		p += used;
		len -= used;
		if (rc < 0)
			return rc;
		if (rc == 0) {
			ck_assert_msg(len == 0, "decoder idle with %zu octets unread", len);
			return 0;
		}
		on_event(d, &ev);
	}
	ck_abort_msg("decoder does not make progress");
	return -1;
}

/* Decode blob cut at the given points (sorted offsets). */
static void decode(struct decoded *d, const struct rx_cfg *c, const uint8_t *blob, size_t len,
		   const size_t *cuts, int num_cuts)
{
	struct iw_fpdu_rx rx;
	size_t start = 0;

	memset(d, 0, sizeof(*d));
	iw_fpdu_rx_init(&rx, c->crc, c->markers, c->stream_off, c->max_ulpdu, 0);
	for (int i = 0; i <= num_cuts && d->rc == 0; i++) {
		size_t end = i < num_cuts ? cuts[i] : len;
		d->rc = feed(&rx, d, blob + start, end - start);
		start = end;
	}
	if (d->rc == 0)
		d->rc = iw_fpdu_rx_finish(&rx);
	d->err = rx.err;
}

static void same_decoding(const char *id, const char *how, const struct decoded *a,
			  const struct decoded *b)
{
	ck_assert_msg(a->rc == b->rc && a->err == b->err, "%s: %s: rc %d/%s vs %d/%s", id, how, a->rc,
		      iw_wire_err_name(a->err), b->rc, iw_wire_err_name(b->err));
	ck_assert_msg(a->num_segs == b->num_segs && a->num_ends == b->num_ends,
		      "%s: %s: %d segments vs %d", id, how, a->num_segs, b->num_segs);
	for (int i = 0; i < a->num_segs; i++) {
		const struct dseg *x = &a->segs[i], *y = &b->segs[i];
		ck_assert_msg(x->seg.raw_hdr_len == y->seg.raw_hdr_len &&
				      memcmp(x->seg.raw_hdr, y->seg.raw_hdr, x->seg.raw_hdr_len) == 0 &&
				      x->got == y->got && memcmp(x->payload, y->payload, x->got) == 0 &&
				      x->seg.fpdu_off == y->seg.fpdu_off && x->seg.crc == y->seg.crc,
			      "%s: %s: segment %d differs", id, how, i);
	}
}

/* Decode whole, in two pieces at every offset, and octet by octet. */
static void decode_three_ways(struct iwv_rec *r, const struct rx_cfg *c, struct decoded *whole)
{
	struct decoded *alt = malloc(sizeof(*alt));
	size_t *cuts = malloc(sizeof(size_t) * r->blob_len);

	ck_assert(alt && cuts);
	decode(whole, c, r->blob, r->blob_len, NULL, 0);
	for (size_t k = 1; k < r->blob_len; k++) {
		decode(alt, c, r->blob, r->blob_len, &k, 1);
		same_decoding(r->id, "split", whole, alt);
	}
	for (size_t k = 1; k < r->blob_len; k++)
		cuts[k - 1] = k;
	decode(alt, c, r->blob, r->blob_len, cuts, r->blob_len > 0 ? (int)r->blob_len - 1 : 0);
	same_decoding(r->id, "byte-by-byte", whole, alt);
	free(cuts);
	free(alt);
}

static struct rx_cfg rx_settings(struct iwv_rec *r)
{
	struct rx_cfg c;

	c.crc = iwv_setting_on(r, "crc", true);
	c.markers = iwv_setting_on(r, "markers", false);
	c.stream_off = (uint32_t)iwv_setting_long(r, "stream_offset", 0);
	c.max_ulpdu = (uint32_t)iwv_setting_long(r, "max_ulpdu", 0);
	iwv_setting_long(r, "marker_interval", IW_MPA_MARKER_INTERVAL);
	return c;
}

/* The segment whose FPDU holds blob offset off. */
static const struct dseg *seg_at(const struct decoded *d, const struct rx_cfg *c, size_t off,
				 size_t *seg_start)
{
	const struct dseg *found = NULL;

	for (int i = 0; i < d->num_segs; i++) {
		size_t start = (uint32_t)(d->segs[i].seg.fpdu_off - c->stream_off);
		if (start <= off) {
			found = &d->segs[i];
			*seg_start = start;
		}
	}
	return found;
}

static bool seg_field_rdmap(const char *name, const struct iw_ddp_seg *s, struct val *v)
{
	const struct iw_read_req *rr = &s->rdmap.u.read_req;
	const struct iw_atomic_req *aq = &s->rdmap.u.atomic_req;
	const struct iw_atomic_resp *ap = &s->rdmap.u.atomic_resp;
	const struct iw_terminate *t = &s->rdmap.u.term;
	const struct {
		const char *name;
		uint64_t v;
	} nums[] = {
		{"rdmap.rr.sink_stag", rr->sink_stag},
		{"rdmap.rr.sink_to", rr->sink_to},
		{"rdmap.rr.read_size", rr->read_size},
		{"rdmap.rr.source_stag", rr->src_stag},
		{"rdmap.rr.source_to", rr->src_to},
		{"rdmap.atomic.opcode_word", aq->atomic_op},
		{"rdmap.atomic.request_id", aq->req_id},
		{"rdmap.atomic.remote_stag", aq->stag},
		{"rdmap.atomic.remote_to", aq->to},
		{"rdmap.atomic.add_or_swap_data", aq->add_swap},
		{"rdmap.atomic.add_or_swap_mask", aq->add_swap_mask},
		{"rdmap.atomic.compare_data", aq->compare},
		{"rdmap.atomic.compare_mask", aq->compare_mask},
		{"rdmap.atomic.original_request_id", ap->req_id},
		{"rdmap.atomic.original_remote_value", ap->orig_value},
		{"term.ecode", IW_TERM_ECODE(t->term)},
		{"term.ddp_segment_length", t->ddp_seg_len},
	};

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(name, nums[i].name)) {
			*v = vnum(nums[i].v);
			return true;
		}
	if (!strcmp(name, "rdmap.immediate_data"))
		*v = vbytes(s->rdmap.u.imm, IW_RDMAP_IMM_LEN);
	else if (!strcmp(name, "term.ddp_header"))
		*v = vbytes(t->ddp_hdr, t->ddp_hdr_len);
	else if (!strcmp(name, "term.rdma_header"))
		*v = vbytes(t->rdma_hdr, IW_RDMAP_READ_REQ_LEN);
	else
		return false;
	return true;
}

static bool seg_field(const char *name, const struct dseg *ds, struct val *v)
{
	const struct iw_ddp_seg *s = &ds->seg;
	const struct {
		const char *name;
		uint64_t v;
	} nums[] = {
		{"mpa.ulpdu_length", s->ulpdu_len}, {"ddp.ctrl", s->ddp.ctrl},
		{"rdmap.ctrl", s->ddp.rdmap_ctrl},  {"ddp.stag", s->ddp.stag},
		{"ddp.to", s->ddp.to},              {"ddp.qn", s->ddp.qn},
		{"ddp.msn", s->ddp.msn},            {"ddp.mo", s->ddp.mo},
		{"rdmap.reserved", s->ddp.inv_stag}, {"rdmap.inv_stag", s->ddp.inv_stag},
	};

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (!strcmp(name, nums[i].name)) {
			*v = vnum(nums[i].v);
			return true;
		}
	if (!strcmp(name, "payload")) {
		*v = vbytes(ds->payload, ds->got);
		return true;
	}
	return seg_field_rdmap(name, s, v);
}

static bool seg_bits(const char *name, const struct iw_ddp_seg *s, uint64_t *v)
{
	const struct iw_terminate *t = &s->rdmap.u.term;
	const struct {
		const char *name;
		unsigned v;
	} bits[] = {
		{"ddp.t", !!(s->ddp.ctrl & IW_DDP_T)},
		{"ddp.l", !!(s->ddp.ctrl & IW_DDP_L)},
		{"ddp.rsvd", (s->ddp.ctrl & IW_DDP_RSVD) >> 2},
		{"ddp.dv", s->ddp.ctrl & IW_DDP_DV},
		{"rdmap.rv", s->ddp.rdmap_ctrl >> 6},
		{"rdmap.rsvd", (s->ddp.rdmap_ctrl & IW_RDMAP_RSVD) >> 4},
		{"rdmap.opcode", s->ddp.rdmap_ctrl & IW_RDMAP_OPMASK},
		{"term.layer", IW_TERM_LAYER(t->term)},
		{"term.etype", IW_TERM_ETYPE(t->term)},
		{"term.m", !!(t->hdrct & IW_TERM_HDR_M)},
		{"term.d", !!(t->hdrct & IW_TERM_HDR_D)},
		{"term.r", !!(t->hdrct & IW_TERM_HDR_R)},
	};

	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (!strcmp(name, bits[i].name)) {
			*v = bits[i].v;
			return true;
		}
	return false;
}

/* Fields that describe framing octets (pad, markers) rather than decoded
 * values: check them against what the decoder's segmentation implies. */
static bool framing_field(struct iwv_rec *r, const char *name, unsigned off, unsigned len,
			  const char *spec, const struct dseg *ds, size_t seg_start)
{
	uint8_t zeros[4] = {0};

	if (!strcmp(name, "mpa.pad")) {
		ck_assert_msg(len == iw_mpa_pad(ds->seg.ulpdu_len) && spec_matches(spec, zeros, len),
			      "%s: pad of %u octets does not fit ULPDU_Length %u", r->id, len,
			      ds->seg.ulpdu_len);
		return true;
	}
	if (!strcmp(name, "mpa.marker.reserved")) {
		ck_assert_msg(len == 2 && spec_matches(spec, zeros, 2), "%s: marker reserved", r->id);
		return true;
	}
	if (!strcmp(name, "mpa.marker.fpduptr")) {
		uint8_t ptr[2];
		size_t dist = off - 2 - seg_start;
		ptr[0] = (uint8_t)(dist >> 8);
		ptr[1] = (uint8_t)dist;
		ck_assert_msg(len == 2 && spec_matches(spec, ptr, 2),
			      "%s: FPDUPTR %s but the decoder's FPDU starts %zu octets before", r->id, spec,
			      dist);
		return true;
	}
	return false;
}

static void check_seg_line(struct iwv_rec *r, struct iwv_line *l, const struct decoded *d,
			   const struct rx_cfg *c)
{
	char name[64], spec[400];
	unsigned off, len;
	uint8_t buf[IWV_MAX_BLOB];
	size_t seg_start = 0;
	const struct dseg *ds;
	struct val v;
	uint64_t bit;

	if (!strcmp(l->key, "field")) {
		ck_assert_msg(sscanf(l->rest, "%u %u %63s %399[^\n]", &off, &len, name, spec) == 4,
			      "%s line %d: bad field line", r->id, l->lineno);
		ds = seg_at(d, c, off, &seg_start);
		ck_assert_msg(ds, "%s line %d: no segment at offset %u", r->id, l->lineno, off);
		if (!framing_field(r, name, off, len, spec, ds, seg_start)) {
			ck_assert_msg(seg_field(name, ds, &v), "%s: unknown field %s", r->id, name);
			ck_assert_msg(len <= sizeof(buf) && render(&v, buf, len) &&
					      spec_matches(spec, buf, len),
				      "%s line %d: decoded %s does not match %s", r->id, l->lineno, name, spec);
		}
	} else if (!strcmp(l->key, "bits")) {
		ck_assert_msg(sscanf(l->rest, "%u %*s %63s %399s", &off, name, spec) == 3,
			      "%s line %d: bad bits line", r->id, l->lineno);
		ds = seg_at(d, c, off, &seg_start);
		ck_assert_msg(ds && seg_bits(name, &ds->seg, &bit), "%s: unknown bits %s", r->id, name);
		ck_assert_msg(bit == strtoull(spec, NULL, 0), "%s line %d: decoded %s = %llu, vector says %s",
			      r->id, l->lineno, name, (unsigned long long)bit, spec);
	} else if (!strcmp(l->key, "marker")) {
		unsigned ptr;
		ck_assert_msg(sscanf(l->rest, "%u %u", &off, &ptr) == 2, "%s: bad marker line", r->id);
		ds = seg_at(d, c, off, &seg_start);
		ck_assert_msg(c->markers && ds && off - seg_start == ptr &&
				      (uint32_t)(c->stream_off + off) % IW_MPA_MARKER_INTERVAL == 0,
			      "%s line %d: marker at %u (FPDUPTR %u) disagrees with the decoder", r->id,
			      l->lineno, off, ptr);
	} else if (!strcmp(l->key, "crc32c") || !strcmp(l->key, "crc_wire") ||
		   !strcmp(l->key, "crc_published")) {
		return; /* checked by check_crc_lines */
	} else {
		return;
	}
	l->used = true;
}

/* crc32c/crc_wire lines: our CRC over the vector's octets, and the value
 * the decoder read from the CRC field, must both equal the vector's. */
static void check_crc_lines(struct iwv_rec *r, const struct decoded *d, const struct rx_cfg *c)
{
	uint32_t last = 0;

	for (int i = 0; i < r->num_lines; i++) {
		struct iwv_line *l = &r->lines[i];
		unsigned start, end, off;
		uint32_t val;
		uint8_t oct[8];

		if (!strcmp(l->key, "crc32c")) {
			ck_assert_msg(sscanf(l->rest, "%x %u %u", &val, &start, &end) == 3 && start <= end &&
					      end <= r->blob_len,
				      "%s: bad crc32c line", r->id);
			ck_assert_msg(iw_crc32c(r->blob + start, end - start) == val,
				      "%s: iw_crc32c over [%u,%u) is 0x%08x, vector says 0x%08x", r->id, start,
				      end, iw_crc32c(r->blob + start, end - start), val);
			last = val;
			l->used = true;
		} else if (!strcmp(l->key, "crc_wire")) {
			size_t seg_start;
			ck_assert_msg(sscanf(l->rest, "%u", &off) == 1, "%s: bad crc_wire", r->id);
			int n = iwv_hex(strchr(l->rest, ' ') + 1, oct, sizeof(oct));
			ck_assert_msg(n == 4 && oct[0] == (uint8_t)last && oct[3] == (uint8_t)(last >> 24),
				      "%s: crc_wire is not the CRC least-significant octet first", r->id);
			const struct dseg *ds = d ? seg_at(d, c, off - 1, &seg_start) : NULL;
			ck_assert_msg(!d || (ds && ds->seg.crc == last),
				      "%s: decoder read CRC 0x%08x, vector says 0x%08x", r->id,
				      ds ? ds->seg.crc : 0, last);
			l->used = true;
		} else if (!strcmp(l->key, "crc_published")) {
			int n = iwv_hex(l->rest, oct, sizeof(oct));
			ck_assert_msg(n == 4 && oct[0] == (uint8_t)last && oct[1] == (uint8_t)(last >> 8) &&
					      oct[2] == (uint8_t)(last >> 16) && oct[3] == (uint8_t)(last >> 24),
				      "%s: published CRC octets are not our value LSB first", r->id);
			l->used = true;
		}
	}
}

/* Build the headers of a decoded segment back from its fields. */
static size_t rebuild_hdr(const struct iw_ddp_seg *s, uint8_t *out, size_t cap)
{
	int n = iw_ddp_hdr_build(out, cap, &s->ddp);
	int m = 0;

	ck_assert_int_gt(n, 0);
	if (iw_ddp_tagged(&s->ddp))
		return (size_t)n;
	switch (iw_ddp_opcode(&s->ddp)) {
	case IW_OP_READ_REQ:
		m = iw_rdmap_read_req_build(out + n, cap - (size_t)n, &s->rdmap.u.read_req);
		break;
	case IW_OP_TERMINATE:
		m = iw_rdmap_term_build(out + n, cap - (size_t)n, &s->rdmap.u.term);
		break;
	case IW_OP_ATOMIC_REQ:
		m = iw_rdmap_atomic_req_build(out + n, cap - (size_t)n, &s->rdmap.u.atomic_req);
		break;
	case IW_OP_ATOMIC_RESP:
		m = iw_rdmap_atomic_resp_build(out + n, cap - (size_t)n, &s->rdmap.u.atomic_resp);
		break;
	case IW_OP_IMM:
	case IW_OP_IMM_SE:
		memcpy(out + n, s->rdmap.u.imm, IW_RDMAP_IMM_LEN);
		m = IW_RDMAP_IMM_LEN;
		break;
	default:
		break;
	}
	ck_assert_int_ge(m, 0);
	return (size_t)(n + m);
}

static void reencode(struct iwv_rec *r, const struct decoded *d, const struct rx_cfg *c)
{
	struct iw_fpdu_tx tx;
	uint8_t *out = malloc(IWV_MAX_BLOB * 2);
	size_t pos = 0;

	ck_assert(out);
	iw_fpdu_tx_init(&tx, c->crc, c->markers, c->stream_off);
	for (int i = 0; i < d->num_segs; i++) {
		const struct dseg *ds = &d->segs[i];
		uint8_t hdr[IW_FPDU_HDR_MAX];
		struct iovec iov[IW_FPDU_IOV_NEED(1, 20)];
		struct iw_fpdu_out fo;
		struct iovec pl = {(void *)ds->payload, ds->got};
		size_t hl = rebuild_hdr(&ds->seg, hdr, sizeof(hdr));

		ck_assert_msg(hl == ds->seg.raw_hdr_len && memcmp(hdr, ds->seg.raw_hdr, hl) == 0,
			      "%s: segment %d headers do not rebuild to the received octets", r->id, i);
		memset(&fo, 0, sizeof(fo));
		fo.iov = iov;
		fo.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
		int rc = iw_fpdu_encode(&tx, &fo, hdr, hl, &pl, 1);
		ck_assert_msg(rc == 0, "%s: encode failed %d", r->id, rc);
		for (int k = 0; k < fo.iovcnt; k++) {
			ck_assert(pos + fo.iov[k].iov_len <= IWV_MAX_BLOB * 2);
			memcpy(out + pos, fo.iov[k].iov_base, fo.iov[k].iov_len);
			pos += fo.iov[k].iov_len;
		}
	}
	ck_assert_msg(pos == r->blob_len && memcmp(out, r->blob, pos) == 0,
		      "%s: re-encoded stream differs (%zu vs %zu octets)", r->id, pos, r->blob_len);
	free(out);
}

static void run_fpdu(struct iwv_rec *r)
{
	struct rx_cfg c = rx_settings(r);
	struct decoded *d = malloc(sizeof(*d));
	long want_segs = iwv_setting_long(r, "segments", 1);

	ck_assert(d);
	decode_three_ways(r, &c, d);
	ck_assert_msg(d->rc == 0, "%s: decode failed: %s", r->id, iw_wire_err_str(d->err));
	ck_assert_msg(d->num_segs == want_segs && d->num_ends == want_segs,
		      "%s: %d segments decoded, vector has %ld", r->id, d->num_segs, want_segs);
	for (int i = 0; i < r->num_lines; i++)
		check_seg_line(r, &r->lines[i], d, &c);
	check_crc_lines(r, d, &c);
	reencode(r, d, &c);
	free(d);
}

static void run_fpdu_bad(struct iwv_rec *r)
{
	struct rx_cfg c = rx_settings(r);
	struct decoded *d = malloc(sizeof(*d));
	long good = iwv_setting_long(r, "good", 0);
	int want;

	ck_assert(d);
	decode_three_ways(r, &c, d);
	ck_assert_msg(d->rc == -EPROTO || d->rc == -EBADMSG, "%s: decode gave %d, want an error", r->id,
		      d->rc);
	expect_reason(r, d->err, &want);
	ck_assert_msg((d->rc == -EBADMSG) == (want == IW_WERR_FPDU_CRC), "%s: errno %d for %s", r->id,
		      d->rc, iw_wire_err_name(d->err));
	ck_assert_msg(d->num_ends == good, "%s: %d good FPDUs before the error, vector says %ld", r->id,
		      d->num_ends, good);
	for (int i = 0; i < r->num_lines; i++)
		check_seg_line(r, &r->lines[i], d, &c);
	check_crc_lines(r, NULL, &c);
	free(d);
}

static void run_crc(struct iwv_rec *r)
{
	/* Incremental CRC must equal one-shot at every split. */
	for (size_t k = 0; k <= r->blob_len; k++) {
		uint32_t s = iw_crc32c_update(IW_CRC32C_INIT, r->blob, k);
		s = iw_crc32c_update(s, r->blob + k, r->blob_len - k);
		ck_assert_uint_eq(iw_crc32c_final(s), iw_crc32c(r->blob, r->blob_len));
	}
	check_crc_lines(r, NULL, NULL);
}

/* ------------------------------------------------------------ driver */

static void check_all_read(struct iwv_rec *r)
{
	for (int i = 0; i < r->num_lines; i++)
		ck_assert_msg(r->lines[i].used, "%s line %d: '%s %s' was not checked by any test", r->id,
			      r->lines[i].lineno, r->lines[i].key, r->lines[i].rest);
	for (int i = 0; i < r->num_settings; i++)
		ck_assert_msg(r->settings[i].used, "%s: setting %s=%s was not read", r->id,
			      r->settings[i].key, r->settings[i].val);
}

START_TEST(test_vector)
{
	ck_assert_msg(num_recs > 0, "no vectors loaded: %s", num_recs < 0 ? load_err : "empty directory");
	struct iwv_rec *r = &all_recs[_i];

	if (!strcmp(r->kind, "crc32c"))
		run_crc(r);
	else if (!strcmp(r->kind, "mpa-frame"))
		run_frame(r);
	else if (!strcmp(r->kind, "mpa-frame-bad"))
		run_frame_bad(r);
	else if (!strcmp(r->kind, "mpa-fpdu") || !strcmp(r->kind, "mpa-stream"))
		run_fpdu(r);
	else if (!strcmp(r->kind, "mpa-fpdu-bad"))
		run_fpdu_bad(r);
	else
		ck_abort_msg("%s (%s): unknown kind '%s'", r->id, r->file, r->kind);
	check_all_read(r);
}
END_TEST

START_TEST(test_enough_vectors)
{
	ck_assert_msg(num_recs >= 60, "only %d vectors (%s)", num_recs, load_err);
}
END_TEST

Suite *suite_vectors(void)
{
	Suite *s = suite_create("vectors");
	TCase *tc = tcase_create("rfc-vectors");

	load_all();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_enough_vectors);
	tcase_add_loop_test(tc, test_vector, 0, num_recs > 0 ? num_recs : 1);
	suite_add_tcase(s, tc);
	return s;
}
