/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A read as iovecs, and feeding what it took to the engine (conn.h,
 * iw_conn_rx_plan_iov). Without the engine's read-ahead guesses this is
 * the plan of iw_conn_rx_plan / iw_conn_poll_plan: [direct][bounce], fed
 * in one batch. With them, several FPDUs of one large message land in
 * place with one readv instead of one readv each:
 *
 *   iov[0]       the current payload's rest -> its destination
 *   iov[2j+1]    trailer + next header (gap j) -> scratch slot j
 *   iov[2j+2]    guessed payload j -> its guessed destination
 *   iov[2k+1]    trailer + next header -> the last scratch slot
 *
 * The bounce buffer is cut in two: the scratch slots at its end, and at
 * its front the gather area, which takes every octet after iov[0] if a
 * guess turns out wrong. The guesses only name memory the peer may write
 * anyway while the current segment holds it (qp_rx_spec.c), and the room
 * the receive hold leaves bounds all of it as it bounds a bounce read.
 */
#include <string.h>

#include "conn/conn.h"

#define LOOK IW_CONN_RX_LOOKAHEAD

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* How many guesses fit: the gather area must hold every octet after the
 * direct part (the scratch slots, one more than the guesses, sit behind
 * it), and the receive hold's room must too. *sum: their octets. */
static unsigned spec_fit(const struct iw_conn *c, size_t cap, size_t room, size_t *sum)
{
	unsigned k = 0;
	*sum = 0;
	for (; k < c->rx_next.num_spec; k++) {
		const struct iw_qp_rx_spec *s = &c->rx_next.spec[k];
		size_t after = *sum + s->gap + s->len + LOOK;
		if (s->gap > LOOK || after > room || after + (k + 2) * LOOK > cap)
			break;
		*sum += s->gap + s->len;
	}
	return k;
}

/* Turn a plain [direct][lookahead] plan into one with k guesses. */
static void plan_spec(struct iw_conn *c, struct iw_conn_rxp *p, uint8_t *bounce, size_t cap)
{
	if (!p->direct || !c->rx_next.valid || !c->rx_next.num_spec || c->rx_next.dst !=
	    p->iov[0].iov_base)
		return;
	size_t room = c->ops->rx_room ? c->ops->rx_room(c->qp) : SIZE_MAX;
	size_t sum;
	unsigned k = spec_fit(c, cap, room, &sum);
	if (!k)
		return;
	uint8_t *slot = bounce + cap - (k + 1) * LOOK;
	for (unsigned j = 0; j < k; j++) {
		const struct iw_qp_rx_spec *s = &c->rx_next.spec[j];
		p->iov[2 * j + 1] = (struct iovec){slot + j * LOOK, s->gap};
		p->iov[2 * j + 2] = (struct iovec){s->dst, s->len};
	}
	p->iov[2 * k + 1] = (struct iovec){slot + k * LOOK, LOOK};
	p->iovcnt = (int)(2 * k + 2);
	p->num_spec = k;
	p->hold = c->rx_next.spec[0].hold;
	p->gather = bounce;
	p->total = p->direct + sum + LOOK;
	c->rx_planned = p->total;
}

void iw_conn_rx_plan_iov(struct iw_conn *c, struct iw_conn_rxp *p, uint8_t *bounce, size_t cap,
			 bool poller, uint32_t direct_min)
{
	uint8_t *dst = NULL;
	size_t bcap = cap;
	size_t d = poller ? iw_conn_poll_plan(c, &dst, &bcap, direct_min)
			  : iw_conn_rx_plan(c, &dst, &bcap);
	p->poller = poller;
	p->direct = d;
	p->num_spec = 0;
	p->hold = 0;
	p->gather = NULL;
	p->total = d + bcap;
	p->iovcnt = 0;
	if (d)
		p->iov[p->iovcnt++] = (struct iovec){dst, d};
	if (bcap)
		p->iov[p->iovcnt++] = (struct iovec){bounce, bcap};
	if (d && bcap)
		plan_spec(c, p, bounce, cap);
}

/* The plain read: the direct part, then the bounce part, in one batch. */
static unsigned feed_plain(struct iw_conn *c, const struct iw_conn_rxp *p, size_t n)
{
	size_t take = min_sz(n, p->direct);
	const uint8_t *in = p->iovcnt > (p->direct ? 1 : 0) ? p->iov[p->direct ? 1 : 0].iov_base
							     : NULL;
	if (p->poller)
		return iw_conn_poll_recv(c, take, in, n - take);
	size_t used;
	return iw_conn_recv_placed(c, take, in, n - take, &used);
}

/* Everything read from octet skip of iov[i] on (left octets from iov[i]
 * on) into the gather area, all of it before the engine sees any (placing
 * them may overwrite the guessed destinations), and in as stream octets
 * after placed octets received in place. */
static unsigned gather_from(struct iw_conn *c, const struct iw_conn_rxp *p, int i, size_t skip,
			    size_t left, size_t placed)
{
	size_t len = 0;
	for (; i < p->iovcnt && left; i++) {
		size_t k = min_sz(left, p->iov[i].iov_len);
		memcpy(p->gather + len, (const uint8_t *)p->iov[i].iov_base + skip, k - skip);
		len += k - skip;
		left -= k;
		skip = 0;
	}
	struct iw_qp_status st;
	c->rx_spec_missed++;
	return iw_conn_rx_step(c, p->poller, placed, p->gather, len, &st);
}

/* A wrong guess at iov[i]: its first ok octets were right. */
static unsigned gather_feed(struct iw_conn *c, const struct iw_conn_rxp *p, int i, size_t ok,
			    size_t left)
{
	return gather_from(c, p, i, ok, left, ok);
}

/* Gap i (g octets of it read, left from it on): the trailer and the next
 * header. Its last p->hold octets go in only while that header is still
 * incomplete: a shorter one (a tagged segment where the continuation
 * was guessed) has its first payload octets there, which the engine would
 * place at once, maybe over later guesses not yet gathered (a peer
 * writing into the very receive its Send fills). *wrong: they went the
 * gather way with everything after them. */
static unsigned feed_gap(struct iw_conn *c, const struct iw_conn_rxp *p, int i, size_t g,
			 size_t left, size_t placed, struct iw_qp_status *st, bool *wrong)
{
	const uint8_t *in = p->iov[i].iov_base;
	size_t hold = g == p->iov[i].iov_len ? p->hold : 0;
	*wrong = false;
	if (!hold)
		return iw_conn_rx_step(c, p->poller, placed, in, g, st);
	unsigned ev = iw_conn_rx_step(c, p->poller, placed, in, g - hold, st);
	if (!st->in_payload || st->err)
		return ev | iw_conn_rx_step(c, p->poller, 0, in + g - hold, hold, st);
	*wrong = true;
	return ev | gather_from(c, p, i, g - hold, left, 0);
}

/* How many octets read into guess g the engine takes as its payload:
 * it must want them at exactly that place (then they are the stream's
 * next octets wherever the segment came from). */
static size_t guess_ok(const struct iw_qp_status *st, const struct iovec *g, size_t got)
{
	if (st->err || st->direct_dst != g->iov_base)
		return 0;
	return min_sz(st->direct, got);
}

/* Does guess g's segment end with it? If the peer cut it longer than the
 * guess, the octets read after g are its payload, not the trailer and
 * next header: fed as stream octets, the engine would copy them to where
 * the next guesses were read before those are checked (and gathered),
 * garbling them. They go the gather way instead. */
static bool seg_ends(const struct iw_qp_status *st, const struct iovec *g)
{
	return st->direct <= g->iov_len;
}

static unsigned feed_spec(struct iw_conn *c, const struct iw_conn_rxp *p, size_t n)
{
	/* Whether the read took all it was offered is known now, not at the
	 * first piece (conn.c, rx_batch). */
	c->rx_backlog = n >= p->total;
	c->rx_planned = SIZE_MAX;
	struct iw_qp_status st;
	size_t placed = min_sz(n, p->direct);
	size_t left = n - placed;
	unsigned ev = 0;
	for (int i = 1;; i += 2) {
		size_t g = min_sz(left, p->iov[i].iov_len);
		bool wrong;
		ev |= feed_gap(c, p, i, g, left, placed, &st, &wrong);
		if (wrong)
			return ev;
		left -= g;
		c->rx_planned = SIZE_MAX;
		if (!left || i + 1 >= p->iovcnt)
			break;
		/* The QP failed (a header refused, a CRC error) and drops the
		 * rest of the stream: nothing more is copied out of the guessed
		 * places. The failure completed the Read or receive they belong
		 * to, so another thread may be freeing that memory by now. */
		if (st.err)
			break;
		const struct iovec *guess = &p->iov[i + 1];
		size_t got = min_sz(left, guess->iov_len);
		placed = guess_ok(&st, guess, got);
		if (placed < got || (left > got && !seg_ends(&st, guess)))
			return ev | gather_feed(c, p, i + 1, placed, left);
		left -= got;
		if (!left)
			return ev | iw_conn_rx_step(c, p->poller, placed, NULL, 0, &st);
	}
	c->rx_planned = 0;
	return ev;
}

unsigned iw_conn_rx_feed(struct iw_conn *c, const struct iw_conn_rxp *p, size_t n)
{
	return p->num_spec ? feed_spec(c, p, n) : feed_plain(c, p, n);
}
