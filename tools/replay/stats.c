/* SPDX-License-Identifier: BSD-2-Clause */
#include "stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool rp_fpdu_bad(const struct rp_fpdu *f)
{
	return !f->crc_ok || !f->markers_ok || f->frame_err != IW_WERR_NONE ||
	       f->u.err != IW_WERR_NONE;
}

static void add(char *buf, size_t cap, const char *what)
{
	size_t n = strlen(buf);

	snprintf(buf + n, cap - n, "%s%s", n ? "; " : "", what);
}

void rp_fpdu_problems(const struct rp_fpdu *f, char *buf, size_t cap)
{
	char tmp[96];

	buf[0] = '\0';
	if (!f->crc_ok) {
		snprintf(tmp, sizeof(tmp), "CRC error: field 0x%08" PRIx32 ", computed 0x%08" PRIx32,
			 f->crc_wire, f->crc_calc);
		add(buf, cap, tmp);
	}
	if (!f->markers_ok)
		add(buf, cap, iw_wire_err_str(IW_WERR_FPDU_MARKER));
	if (f->frame_err != IW_WERR_NONE)
		add(buf, cap, iw_wire_err_str(f->frame_err));
	else if (f->u.err != IW_WERR_NONE)
		add(buf, cap, iw_wire_err_str(f->u.err));
}

static void first(struct rp_stats *s, const struct rp_origin *o, bool has_off, uint32_t off,
		  const char *what)
{
	struct rp_first_err *e = &s->first;

	if (e->set)
		return;
	e->set = true;
	e->conn = o->conn;
	snprintf(e->dir, sizeof(e->dir), "%s", o->dir);
	e->frame = o->frame;
	e->has_off = has_off;
	e->stream_off = off;
	e->has_seq = o->has_seq;
	e->seq = o->seq;
	snprintf(e->what, sizeof(e->what), "%s", what);
}

void rp_stats_fpdu(struct rp_stats *s, const struct rp_origin *o, const struct rp_fpdu *f)
{
	unsigned op = f->u.opcode & (RP_OPCODES - 1);

	s->fpdus++;
	s->wire_bytes += f->wire_len;
	if (f->u.ddp_in) {
		s->segs[op]++;
		s->payload[op] += f->u.payload_len;
		if (iw_ddp_last(&f->u.ddp))
			s->msgs[op]++;
		if (op == IW_OP_TERMINATE)
			s->terminates++;
	}
	if (!rp_fpdu_bad(f))
		return;
	if (!f->crc_ok)
		s->crc_errors++;
	if (!f->markers_ok)
		s->marker_errors++;
	if (f->frame_err != IW_WERR_NONE || f->u.err != IW_WERR_NONE)
		s->proto_errors++;
	char what[200];
	rp_fpdu_problems(f, what, sizeof(what));
	first(s, o, true, f->stream_off, what);
}

void rp_stats_mpa(struct rp_stats *s, const struct rp_origin *o, const struct rp_mpa *m)
{
	s->mpa_frames++;
	if (m->rc == 0)
		return;
	s->mpa_errors++;
	first(s, o, false, 0, iw_wire_err_str(m->err));
}

void rp_stats_error(struct rp_stats *s, const struct rp_origin *o, bool has_off, uint32_t off,
		    enum iw_wire_err err, const char *what)
{
	if (err == IW_WERR_FPDU_MARKER)
		s->marker_errors++;
	else
		s->proto_errors++;
	first(s, o, has_off, off, what);
}

uint64_t rp_stats_errors(const struct rp_stats *s)
{
	return s->crc_errors + s->marker_errors + s->proto_errors + s->mpa_errors;
}
