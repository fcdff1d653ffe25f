/* SPDX-License-Identifier: BSD-2-Clause */
#include "reasm.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Waiting data beyond this is taken as lost: the capture missed the hole
 * and holding the rest back would only grow memory. */
#define QUEUE_MAX ((size_t)64 << 20)

struct rp_oseg {
	struct rp_oseg *next, *prev;
	uint64_t rel, end;
	bool hole;           /* octets known to be missing from the capture */
	bool seg_start;
	uint64_t frame, ts_ns;
	uint8_t data[];
};

void rp_reasm_init(struct rp_reasm *r, const struct rp_reasm_ops *ops, void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->ops = ops;
	r->ctx = ctx;
}

void rp_reasm_syn(struct rp_reasm *r, uint32_t isn)
{
	/* A SYN seen after data (reordered capture start) cannot move the
	 * base any more: positions were handed out already. */
	if (r->started)
		return;
	r->started = r->syn = true;
	r->base = isn + 1;
}

/* Position of sequence number seq, taken as the nearest to r->next. */
static int64_t pos_of(const struct rp_reasm *r, uint32_t seq)
{
	int32_t d = (int32_t)(seq - rp_reasm_seq(r, r->next));

	return (int64_t)r->next + d;
}

static void deliver(struct rp_reasm *r, uint64_t rel, const uint8_t *p, size_t n, uint64_t frame,
		    uint64_t ts, bool seg_start)
{
	struct rp_chunk c = {rel, p, n, frame, ts, seg_start};

	r->next = rel + n;
	if (n)
		r->ops->deliver(r->ctx, &c);
}

static void gap(struct rp_reasm *r, uint64_t to, uint64_t frame)
{
	if (to <= r->next)
		return;
	r->gaps++;
	r->gap_bytes += to - r->next;
	r->ops->gap(r->ctx, r->next, to, frame);
	r->next = to;
}

/* Octets of a that b holds too differ: the same stream position was sent
 * with different content. */
static bool conflict(const struct rp_oseg *a, const struct rp_oseg *b)
{
	uint64_t lo = a->rel > b->rel ? a->rel : b->rel;
	uint64_t hi = a->end < b->end ? a->end : b->end;

	if (a->hole || b->hole || lo >= hi)
		return false;
	return memcmp(a->data + (lo - a->rel), b->data + (lo - b->rel), hi - lo) != 0;
}

/* q waits behind s (s goes before it). */
static bool behind(const struct rp_oseg *q, const struct rp_oseg *s)
{
	return q->rel > s->rel || (q->rel == s->rel && q->end < s->end);
}

/* Neither q nor anything before it can overlap s. */
static bool clear_of(const struct rp_reasm *r, const struct rp_oseg *q, const struct rp_oseg *s)
{
	return q->rel + r->q_len_max <= s->rel;
}

static void link_after(struct rp_reasm *r, struct rp_oseg *at, struct rp_oseg *s)
{
	s->prev = at;
	s->next = at ? at->next : r->q;
	if (s->next)
		s->next->prev = s;
	else
		r->q_last = s;
	if (at)
		at->next = s;
	else
		r->q = s;
	if (!s->hole && s->end - s->rel > r->q_len_max)
		r->q_len_max = s->end - s->rel;
	r->q_bytes += s->end - s->rel;
}

/* The queue is walked from its end, and only as far as something may
 * overlap s: a capture that missed one segment queues all that follows,
 * mostly in order, and walking the whole queue for each made the rest of
 * the connection quadratic. */
static void enqueue(struct rp_reasm *r, struct rp_oseg *s)
{
	struct rp_oseg *at = r->q_last;
	bool copy = false;

	for (struct rp_oseg *q = r->q_last; q && (at == q || !clear_of(r, q, s)); q = q->prev) {
		r->q_steps++;
		if (conflict(q, s))
			r->conflicts++;
		if (at == q && behind(q, s))
			at = q->prev;
		else if (q->rel <= s->rel && q->end >= s->end && !q->hole)
			copy = true;
	}
	if (copy) {
		r->retrans++; /* a copy of what already waits */
		free(s);
		return;
	}
	link_after(r, at, s);
}

static struct rp_oseg *oseg_new(uint64_t rel, const uint8_t *p, size_t n, bool hole,
				const struct rp_pkt *pk, bool seg_start)
{
	struct rp_oseg *s = rp_xmalloc(sizeof(*s) + (hole ? 0 : n));

	s->next = s->prev = NULL;
	s->rel = rel;
	s->end = rel + n;
	s->hole = hole;
	s->seg_start = seg_start;
	s->frame = pk->frame;
	s->ts_ns = pk->ts_ns;
	if (!hole && n)
		memcpy(s->data, p, n);
	return s;
}

/* Hand over every waiting segment the stream has reached. */
static void drain(struct rp_reasm *r)
{
	while (r->q && r->q->rel <= r->next) {
		struct rp_oseg *s = r->q;

		r->q = s->next;
		r->q_bytes -= s->end - s->rel;
		if (r->q) {
			r->q->prev = NULL;
		} else {
			r->q_last = NULL;
			r->q_len_max = 0;
		}
		if (s->hole) {
			gap(r, s->end, s->frame);
		} else if (s->end > r->next) {
			size_t skip = (size_t)(r->next - s->rel);

			if (skip)
				r->overlaps++;
			deliver(r, r->next, s->data + skip, (size_t)(s->end - s->rel) - skip, s->frame,
				s->ts_ns, s->seg_start && !skip);
		} else {
			r->retrans++;
		}
		free(s);
	}
}

/* The first waiting item is behind a hole nothing filled: skip the hole. */
static void force_gap(struct rp_reasm *r, uint64_t frame)
{
	if (r->q)
		gap(r, r->q->rel, frame);
	drain(r);
}

static void take(struct rp_reasm *r, uint64_t rel, const uint8_t *p, size_t n,
		 const struct rp_pkt *pk)
{
	bool seg_start = true;

	if (rel < r->next) {
		size_t skip = (size_t)(r->next - rel);

		r->overlaps++;
		p += skip;
		n -= skip;
		rel = r->next;
		seg_start = false;
	}
	if (rel == r->next) {
		deliver(r, rel, p, n, pk->frame, pk->ts_ns, seg_start);
		drain(r);
		return;
	}
	r->ooo++;
	enqueue(r, oseg_new(rel, p, n, false, pk, seg_start));
}

void rp_reasm_segment(struct rp_reasm *r, const struct rp_pkt *p)
{
	uint64_t total = (uint64_t)p->len + p->missing;
	const uint8_t *data = p->payload;
	size_t n = p->len, missing = p->missing;
	int64_t rel;

	if (total == 0)
		return;
	if (!r->started) {
		r->started = true;
		r->base = p->seq;
	}
	r->segs++;
	rel = pos_of(r, p->seq);
	if (rel < 0) { /* starts before the stream did: keep what is after */
		uint64_t cut = (uint64_t)-rel;

		if (cut >= total)
			return;
		size_t dcut = cut < n ? (size_t)cut : n;
		data += dcut;
		n -= dcut;
		missing -= (size_t)(cut - dcut);
		rel = 0;
	}
	if ((uint64_t)rel + total <= r->next) {
		r->retrans++;
		return;
	}
	if (n && (uint64_t)rel + n > r->next)
		take(r, (uint64_t)rel, data, n, p);
	if (missing)
		enqueue(r, oseg_new((uint64_t)rel + n, NULL, missing, true, p, false));
	drain(r);
	while (r->q_bytes > QUEUE_MAX)
		force_gap(r, p->frame);
}

void rp_reasm_fin(struct rp_reasm *r, uint32_t seq)
{
	int64_t rel;

	if (r->fin)
		return;
	if (!r->started) {
		r->started = true;
		r->base = seq;
	}
	rel = pos_of(r, seq);
	r->fin = true;
	r->fin_rel = rel < 0 ? 0 : (uint64_t)rel;
}

void rp_reasm_ack(struct rp_reasm *r, uint32_t seq, uint64_t frame)
{
	int64_t rel;

	if (!r->started || !r->q || r->q->hole)
		return;
	rel = pos_of(r, seq);
	/* Strictly inside: an ACK of exactly the waiting segment's start is
	 * what a receiver sends before that segment, hole or no hole. */
	if (rel > (int64_t)r->q->rel)
		force_gap(r, frame);
}

void rp_reasm_finish(struct rp_reasm *r)
{
	while (r->q)
		force_gap(r, 0);
	/* Data the FIN says was sent but the capture never showed. */
	if (r->fin && r->fin_rel > r->next)
		gap(r, r->fin_rel, 0);
}
