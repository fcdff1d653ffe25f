/* SPDX-License-Identifier: BSD-2-Clause */
#include "conn.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "emit.h"
#include "record.h"

#define NBUCKETS 4096

static struct rp_conn *table[NBUCKETS];
static struct rp_conn *first, *last; /* every connection, in order of creation */
static unsigned next_id = 1;

static size_t addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

static bool ep_eq(const struct rp_ep *a, const struct rp_ep *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, addr_len(a->family));
}

static uint32_t ep_hash(const struct rp_ep *e)
{
	uint32_t h = 2166136261u ^ e->port;

	for (size_t i = 0; i < addr_len(e->family); i++)
		h = (h ^ e->addr[i]) * 16777619u;
	return h;
}

/* The same bucket for both directions. */
static unsigned bucket(const struct rp_ep *a, const struct rp_ep *b)
{
	return (ep_hash(a) ^ ep_hash(b)) % NBUCKETS;
}

static struct rp_conn *lookup(const struct rp_pkt *p, int *ep)
{
	for (struct rp_conn *c = table[bucket(&p->src, &p->dst)]; c; c = c->hnext) {
		if (ep_eq(&c->ep[0], &p->src) && ep_eq(&c->ep[1], &p->dst)) {
			*ep = 0;
			return c;
		}
		if (ep_eq(&c->ep[1], &p->src) && ep_eq(&c->ep[0], &p->dst)) {
			*ep = 1;
			return c;
		}
	}
	return NULL;
}

static void unhash(struct rp_conn *c)
{
	struct rp_conn **pp = &table[bucket(&c->ep[0], &c->ep[1])];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	c->hnext = NULL;
}

/* Who is the initiator, from the first segment of a connection. */
static void initial_roles(struct rp_conn *c, const struct rp_pkt *p)
{
	c->init_ep = 0;
	c->roles_from = "the first segment seen";
	if (p->flags & RP_SYN) {
		c->init_ep = (p->flags & RP_ACK) ? 1 : 0;
		c->roles_known = true;
		c->roles_from = "SYN";
	} else if (rp_conns_opts()->responder_port >= 0 &&
		   (p->dst.port == rp_conns_opts()->responder_port || p->src.port == rp_conns_opts()->responder_port)) {
		c->init_ep = p->dst.port == rp_conns_opts()->responder_port ? 0 : 1;
		c->roles_known = true;
		c->roles_from = "--responder-port";
	}
}

static struct rp_conn *create(const struct rp_pkt *p)
{
	struct rp_conn *c = rp_xmalloc(sizeof(*c));
	unsigned b = bucket(&p->src, &p->dst);

	memset(c, 0, sizeof(*c));
	c->id = next_id++;
	c->ep[0] = p->src;
	c->ep[1] = p->dst;
	initial_roles(c, p);
	for (int i = 0; i < 2; i++)
		rp_stream_init(&c->st[i], c, i);
	c->hnext = table[b];
	table[b] = c;
	if (last)
		last->next = c;
	else
		first = c;
	last = c;
	rp_emit_stats()->conns++;
	return c;
}

/* Capture over for this connection (or its 4-tuple is reused). */
static void conn_finish(struct rp_conn *c)
{
	struct rp_stats *s = rp_emit_stats();

	if (c->ended)
		return;
	c->ended = true;
	for (int i = 0; i < 2; i++)
		rp_reasm_finish(&c->st[i].ra);
	for (int i = 0; i < 2; i++)
		rp_stream_settle(&c->st[i]);
	rp_stream_negotiate(c, true);
	for (int i = 0; i < 2; i++) {
		const struct rp_reasm *r = &c->st[i].ra;

		rp_stream_finish(&c->st[i]);
		s->retrans += r->retrans;
		s->ooo += r->ooo;
		s->overlaps += r->overlaps;
		s->conflicts += r->conflicts;
		s->gaps += r->gaps;
		s->gap_bytes += r->gap_bytes;
	}
}

/* A SYN with a new ISN on a known 4-tuple starts a new connection. */
static bool reused(const struct rp_conn *c, int ep, const struct rp_pkt *p)
{
	const struct rp_reasm *r = &c->st[ep].ra;

	return (p->flags & RP_SYN) && !(p->flags & RP_ACK) && r->started && r->base != p->seq + 1;
}

void rp_conns_packet(const struct rp_pkt *p)
{
	int ep = 0;
	struct rp_conn *c = lookup(p, &ep);
	struct rp_stream *s;

	if (c && reused(c, ep, p)) {
		conn_finish(c);
		unhash(c);
		c = NULL;
	}
	if (!c) {
		c = create(p);
		ep = 0;
	}
	s = &c->st[ep];
	if (p->flags & RP_SYN) {
		rp_reasm_syn(&s->ra, p->seq);
		if (!c->roles_known && !(p->flags & RP_ACK)) {
			c->init_ep = ep;
			c->roles_known = true;
			c->roles_from = "SYN";
		}
	}
	/* Data on a SYN (TCP Fast Open) starts after the SYN's own number. */
	struct rp_pkt q = *p;
	if (q.flags & RP_SYN)
		q.seq++;
	rp_reasm_segment(&s->ra, &q);
	if (p->flags & RP_ACK)
		rp_reasm_ack(&c->st[!ep].ra, p->ack, p->frame);
	if (p->flags & RP_FIN)
		rp_reasm_fin(&s->ra, p->seq + ((p->flags & RP_SYN) ? 1 : 0) + p->len + p->missing);
}

void rp_conns_finish(void)
{
	for (struct rp_conn *c = first; c; c = c->next)
		conn_finish(c);
}

void rp_conns_free(void)
{
	struct rp_conn *c = first;

	while (c) {
		struct rp_conn *n = c->next;

		for (int i = 0; i < 2; i++)
			rp_stream_free(&c->st[i]);
		/* Every hashed connection is on this list: emptying its
		 * bucket empties the table without writing all 32 KiB of it
		 * (the fuzz target frees the table after every input). */
		table[bucket(&c->ep[0], &c->ep[1])] = NULL;
		free(c);
		c = n;
	}
	first = last = NULL;
}
