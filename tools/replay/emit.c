/* SPDX-License-Identifier: BSD-2-Clause */
#include "emit.h"
#include "reltime.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct rp_out_ops *out = &rp_print_ops;
static bool quiet, check, fail_on_term, summary;
static bool silent;      /* --replay: the capture is only recorded */
static unsigned only;    /* --conn */
static struct rp_stats stats;

void rp_emit_init(const struct rp_opts *o)
{
	out = o->json ? &rp_json_ops : &rp_print_ops;
	rp_json_payload = o->payload;
	quiet = o->quiet;
	check = o->check;
	fail_on_term = o->fail_on_term;
	summary = o->summary;
	silent = o->replay;
	only = o->replay ? 0 : o->conn;
}

void rp_emit_live(void)
{
	memset(&stats, 0, sizeof(stats));
	stats.live = true;
	silent = false;
	/* Live times are already counted from the session's start. */
	rp_reltime_live();
}

/* Not to be reported: another connection than --conn, or a silent decode.
 * The sender's own FPDUs in a replay are shown but not counted. */
static bool skip(const struct rp_origin *o)
{
	return silent || (o && only && o->conn && o->conn != only);
}

static bool is_tx(const struct rp_origin *o)
{
	return o && o->dir && !strcmp(o->dir, "tx");
}

struct rp_stats *rp_emit_stats(void)
{
	return &stats;
}

void rp_emit_conn(const struct rp_conn_info *c)
{
	if (silent || (only && c->id != only))
		return;
	stats.iwarp_conns++;
	out->conn(c);
}

void rp_emit_neg(unsigned conn, const struct rp_neg_info *n)
{
	if (silent || (only && conn != only))
		return;
	if (!quiet)
		out->neg(conn, n);
}

void rp_emit_mpa(const struct rp_origin *o, const struct rp_mpa *m)
{
	if (skip(o))
		return;
	if (!is_tx(o))
		rp_stats_mpa(&stats, o, m);
	if (!quiet || m->rc)
		out->mpa(o, m);
}

void rp_emit_fpdu(const struct rp_origin *o, const struct rp_fpdu *f)
{
	if (skip(o))
		return;
	if (is_tx(o)) {
		stats.tx_fpdus++;
		stats.tx_bytes += f->sent_len;
		if (!quiet)
			out->fpdu(o, f);
		return;
	}
	rp_stats_fpdu(&stats, o, f);
	/* --quiet still shows what is wrong, and what the peer complained of. */
	if (!quiet || rp_fpdu_bad(f) || (f->u.ddp_in && f->u.opcode == IW_OP_TERMINATE))
		out->fpdu(o, f);
}

void rp_emit_error(const struct rp_origin *o, bool has_off, uint32_t off, enum iw_wire_err err,
		   const char *what)
{
	if (skip(o))
		return;
	rp_stats_error(&stats, o, has_off, off, err, what);
	out->error(o, has_off, off, what);
}

void rp_emit_gap(const struct rp_origin *o, uint32_t seq_to, uint64_t bytes)
{
	if (skip(o))
		return;
	out->gap(o, seq_to, bytes);
}

void rp_emit_note(const struct rp_origin *o, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (skip(o))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	out->note(o, msg);
}

void rp_emit_summary(void)
{
	if (summary)
		out->summary(&stats, check, fail_on_term);
	fflush(stdout);
}

int rp_emit_check_status(void)
{
	if (rp_stats_errors(&stats) || (fail_on_term && stats.terminates))
		return RP_EXIT_PROTO;
	return RP_EXIT_OK;
}
