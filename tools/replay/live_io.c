/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live socket. Reading never stops while the replay waits or writes,
 * so a peer that answers while we send (a Read Response, a TERMINATE) is
 * never blocked by us, and every answer is decoded and reported as it
 * comes. The peer's FPDUs go through the same decoder as a capture's.
 */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "emit.h"
#include "replay.h"

#define RX_CHUNK 65536

void rp_live_origin(const struct rp_session *s, struct rp_origin *o, const char *dir)
{
	memset(o, 0, sizeof(*o));
	o->dir = dir;
	o->ts_ns = rp_now_ns() - s->t0;
}

/* ------------------------------------------------------------ the peer's FPDUs */

static void on_fpdu(void *ctx, const struct rp_fpdu *f, uint64_t first_frame,
		    const struct rp_feed_meta *m)
{
	struct rp_session *s = ctx;
	struct rp_origin o;

	(void)first_frame;
	(void)m;
	rp_live_origin(s, &o, "rx");
	rp_emit_fpdu(&o, f);
	if (f->u.ddp_in && f->u.opcode == IW_OP_TERMINATE)
		s->peer_term = true;
}

static void on_error(void *ctx, uint32_t off, enum iw_wire_err err, const struct rp_feed_meta *m)
{
	struct rp_session *s = ctx;
	struct rp_origin o;

	(void)m;
	rp_live_origin(s, &o, "rx");
	rp_emit_error(&o, true, off, err, iw_wire_err_str(err));
}

static void on_lost(void *ctx, uint32_t off, size_t have, bool end)
{
	struct rp_session *s = ctx;
	struct rp_origin o;

	rp_live_origin(s, &o, "rx");
	rp_emit_note(&o, "the peer's stream %s %zu octets into the FPDU at stream offset %u",
		     end ? "ended" : "broke off", have, off);
}

static const struct rp_fpdu_dec_ops dec_ops = {
	.fpdu = on_fpdu, .error = on_error, .lost = on_lost,
};

void rp_live_start_rx(struct rp_session *s)
{
	struct rp_feed_meta m = {0, 0, false};

	rp_fpdu_dec_init(&s->dec, s->crc, s->markers_rx, s->o->siw[s->peer_role], 0, &dec_ops, s);
	s->dec_on = true;
	/* What came with (after) the peer's MPA frame is its first FPDUs. */
	if (s->in.len)
		rp_fpdu_dec_feed(&s->dec, s->in.p, s->in.len, &m);
	s->in.len = 0;
}

void rp_live_end_rx(struct rp_session *s)
{
	if (!s->dec_on)
		return;
	rp_fpdu_dec_finish(&s->dec);
	rp_fpdu_dec_free(&s->dec);
	s->dec_on = false;
}

/* ------------------------------------------------------------ reading */

static void closed(struct rp_session *s, int err)
{
	struct rp_origin o;

	if (s->peer_eof || s->peer_reset)
		return;
	rp_live_origin(s, &o, "rx");
	if (err) {
		s->peer_reset = true;
		rp_emit_note(&o, "the connection failed: %s", strerror(err));
	} else {
		s->peer_eof = true;
		rp_emit_note(&o, "the peer closed the connection (FIN)");
	}
}

/* Read what is there; false once the peer is gone. */
static bool read_some(struct rp_session *s)
{
	uint8_t buf[RX_CHUNK];

	for (;;) {
		ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
		struct rp_feed_meta m = {0, 0, false};

		if (n > 0) {
			s->last_rx_ns = rp_now_ns();
			m.ts_ns = s->last_rx_ns - s->t0;
			if (s->dec_on)
				rp_fpdu_dec_feed(&s->dec, buf, (size_t)n, &m);
			else
				rp_buf_append(&s->in, buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n < 0 && errno == EINTR)
			continue;
		closed(s, n < 0 ? errno : 0);
		return false;
	}
}

static int ms_until(uint64_t deadline)
{
	uint64_t now = rp_now_ns();

	if (deadline <= now)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

/* poll() to the nanosecond: --pace recorded keeps gaps of microseconds. */
static int poll_until(struct pollfd *p, uint64_t deadline)
{
	uint64_t now = rp_now_ns(), left = deadline > now ? deadline - now : 0;
	struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};

	return ppoll(p, 1, &ts, NULL);
}

int rp_live_wait(struct rp_session *s, bool (*done)(const struct rp_session *s, const void *arg),
		 const void *arg, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = {.fd = s->fd, .events = POLLIN};
		int n;

		if (done && done(s, arg))
			return 1;
		if (s->peer_eof || s->peer_reset)
			return -1;
		n = poll_until(&p, deadline_ns);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0 && !read_some(s))
			return done && done(s, arg) ? 1 : -1;
		if (n == 0 && rp_now_ns() >= deadline_ns)
			return done && done(s, arg) ? 1 : 0;
	}
}

/* ------------------------------------------------------------ writing */

static int write_piece(struct rp_session *s, const uint8_t *p, size_t n)
{
	uint64_t deadline = rp_now_ns() + (uint64_t)s->o->timeout_ms * 1000000u;
	struct rp_origin o;

	while (n) {
		/* After the peer's FIN only writing is left to watch. */
		struct pollfd pf = {.fd = s->fd, .events = POLLOUT | (s->peer_eof ? 0 : POLLIN)};
		ssize_t k;

		if (poll(&pf, 1, ms_until(deadline)) == 0) {
			rp_live_origin(s, &o, "tx");
			rp_emit_note(&o, "the peer accepted no data for %u ms", s->o->timeout_ms);
			return -1;
		}
		if ((pf.revents & POLLIN) && !read_some(s) && s->peer_reset)
			return -1;
		if (!(pf.revents & (POLLOUT | POLLERR | POLLHUP)))
			continue;
		k = send(s->fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k < 0) {
			closed(s, errno);
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int rp_live_write(struct rp_session *s, const uint8_t *p, size_t n)
{
	size_t piece = s->o->split ? s->o->split : n;

	while (n) {
		size_t k = n < piece ? n : piece;

		if (write_piece(s, p, k))
			return -1;
		p += k;
		n -= k;
	}
	return 0;
}
