/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every part of a connection uses (conn.h): the options, the
 * connection line printed once, roles learnt from an MPA Request, where a
 * report comes from, and the octets a direction keeps while it waits. The
 * bottom of conn.c, stream.c and mpa.c (stream.c drives mpa.c, conn.c
 * drives both): it calls none of them.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "emit.h"
#include "record.h"

static const struct rp_opts *opts;

void rp_conns_init(const struct rp_opts *o)
{
	opts = o;
}

const struct rp_opts *rp_conns_opts(void)
{
	return opts;
}

void rp_conn_announce(struct rp_conn *c)
{
	struct rp_conn_info info;

	if (c->announced)
		return;
	c->announced = true;
	info.id = c->id;
	info.ep[RP_INITIATOR] = c->ep[c->init_ep];
	info.ep[RP_RESPONDER] = c->ep[!c->init_ep];
	info.roles_from = c->roles_from;
	rp_emit_conn(&info);
	rp_record_conn(c->id, &info.ep[0]);
}

void rp_conn_roles_from_mpa(struct rp_conn *c, int ep)
{
	if (c->roles_known)
		return;
	c->init_ep = ep;
	c->roles_known = true;
	c->roles_from = "the MPA Request";
}

static const char *dir_of(const struct rp_stream *s)
{
	return rp_conn_role(s->conn, s->ep) == RP_INITIATOR ? "i2r" : "r2i";
}

void rp_stream_origin(const struct rp_stream *s, struct rp_origin *o, uint64_t rel)
{
	memset(o, 0, sizeof(*o));
	o->conn = s->conn->id;
	o->dir = dir_of(s);
	o->frame = s->last_frame;
	o->ts_ns = s->last_ts;
	o->has_seq = s->ra.started;
	o->seq = rp_reasm_seq(&s->ra, rel);
}

void rp_stream_origin_off(const struct rp_stream *s, struct rp_origin *o, uint32_t off)
{
	rp_stream_origin(s, o, s->fpdu_rel + (uint32_t)(off - s->off0));
}

void rp_stream_consume(struct rp_stream *s, size_t n)
{
	size_t keep_from = 0;

	rp_buf_consume(&s->pend, n);
	s->pend_rel += n;
	/* The piece that held octet n goes on from there. */
	while (keep_from + 1 < s->nmarks && s->marks[keep_from + 1].off <= n)
		keep_from++;
	memmove(s->marks, s->marks + keep_from, (s->nmarks - keep_from) * sizeof(*s->marks));
	s->nmarks -= keep_from;
	for (size_t i = 0; i < s->nmarks; i++) {
		s->marks[i].seg_start = s->marks[i].seg_start && s->marks[i].off >= n;
		s->marks[i].off = s->marks[i].off > n ? s->marks[i].off - n : 0;
	}
	if (s->pend.len == 0)
		s->nmarks = 0;
}
