/* SPDX-License-Identifier: BSD-2-Clause */
/* One connection, sans-I/O (conn.h). */
#include <errno.h>
#include <string.h>

#include "conn/conn.h"
#include "engine/qp.h"

/* Trailer of one FPDU plus the largest header of the next: after a large
 * segment, read just past the next header so its payload can go direct. */
#define RX_LOOKAHEAD IW_CONN_RX_LOOKAHEAD
/* Reads in small segments after a large one before reads between
 * segments take the whole bounce buffer again. The first stops at the next
 * header; the others take up to direct_min octets (small_cap). */
#define RX_BIG_AFTER 16
/* Segments up to this long that find the socket backed up are read many
 * per call into the bounce buffer and copied, rather than one system call
 * each in place: a copy of a few KiB costs less than a readv, and a
 * receiver that falls behind takes the whole backlog in a few reads
 * (as a plain TCP reader with a buffer of the same size does). With
 * nothing queued behind them they still land in place. */
#define RX_BULK_SEG 8192u

const char *iw_conn_state_str(enum iw_conn_state s)
{
	static const char *const names[] = {
		"IDLE", "LISTEN", "CONNECTING", "MPA_REQ", "MPA_WAIT", "CONNREQ", "REPLYING",
		"REJECTING", "REJECT_FAIL", "RTR_WAIT", "RUNNING", "CLOSING", "FIN_SENT", "CLOSED",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

void iw_conn_init(struct iw_conn *c, const struct iw_qp_link_ops *ops)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops ? ops : &iw_qp_link_ops;
	iw_mpa_opts_default(&c->opts);
	iw_conn_tune_default(&c->tune);
	atomic_init(&c->tx_engine, false);
	atomic_init(&c->tx_any, false);
	atomic_init(&c->tx_stop, false);
	atomic_init(&c->rx_any, false);
	atomic_init(&c->rx_starved, false);
	atomic_init(&c->deferred, 0);
}

void iw_conn_listen(struct iw_conn *c)
{
	c->state = IW_CONN_LISTEN;
}

/* ------------------------------------------------------------ timers */

static void timer_set(struct iw_conn_timer *t, uint32_t ms)
{
	t->at = 0;
	t->rel = ms;
	t->armed = true;
}

static void timer_stop(struct iw_conn_timer *t)
{
	t->armed = false;
}

static uint64_t timer_resolve(struct iw_conn_timer *t, uint64_t now)
{
	if (!t->armed)
		return UINT64_MAX;
	if (!t->at)
		t->at = now + t->rel ? now + t->rel : 1;
	return t->at;
}

static bool timer_due(struct iw_conn_timer *t, uint64_t now)
{
	if (timer_resolve(t, now) > now)
		return false;
	t->armed = false;
	return true;
}

uint64_t iw_conn_next_timeout(struct iw_conn *c, uint64_t now)
{
	uint64_t a = timer_resolve(&c->t_state, now), b = timer_resolve(&c->t_wake, now);
	return a < b ? a : b;
}

/* ------------------------------------------------------------ endings */

static void set_why(struct iw_conn *c, int status)
{
	c->why.status = status;
	c->why.wire_err = c->hs.err;
	c->why.term = c->hs.err_term;
	c->why.reason = c->hs.err_msg;
}

static unsigned close_now(struct iw_conn *c, bool abortive)
{
	/* Nothing more from the QP: what it still has queued is discarded
	 * when the socket is closed (iw_conn_closed). */
	atomic_store(&c->tx_stop, true);
	c->state = IW_CONN_CLOSED;
	c->close_abortive = abortive;
	timer_stop(&c->t_state);
	timer_stop(&c->t_wake);
	return IW_CONN_EV_CLOSE;
}

/* A connection attempt failed: the application hears ev, the QP stays as
 * it was (it never started). */
static unsigned fail(struct iw_conn *c, unsigned ev, int status)
{
	set_why(c, status);
	return close_now(c, true) | ev;
}

/* A responder-side connection the application never saw. */
static unsigned drop(struct iw_conn *c, int status)
{
	set_why(c, status);
	return close_now(c, true) | IW_CONN_EV_DROPPED;
}

/* status: 0 for a clean end (FIN both ways); otherwise why it was
 * abortive: ECONNRESET (the peer reset it, or the socket broke),
 * ETIMEDOUT (the peer neither read nor closed within linger). */
static unsigned disconnected(struct iw_conn *c, bool abortive, int status)
{
	if (status == EPIPE)
		status = ECONNRESET; /* a write into a reset connection */
	c->why = (struct iw_conn_why){.status = status, .term = 0};
	return close_now(c, abortive) | IW_CONN_EV_DISCONNECTED;
}

void iw_conn_closed(struct iw_conn *c)
{
	if (c->link != IW_CONN_QP_LIVE)
		return;
	c->link = IW_CONN_QP_LOST;
	c->ops->conn_lost(c->qp, !c->close_abortive);
}

int iw_conn_disconnect(struct iw_conn *c)
{
	if (c->state == IW_CONN_CLOSING || c->state == IW_CONN_FIN_SENT ||
	    c->state == IW_CONN_CLOSED)
		return 0;
	if ((c->state != IW_CONN_RTR_WAIT && c->state != IW_CONN_RUNNING) || !c->qp)
		return -ENOTCONN;
	c->ops->set_err(c->qp);
	return 0;
}

unsigned iw_conn_abort(struct iw_conn *c)
{
	return close_now(c, true);
}

static bool data_phase(const struct iw_conn *c)
{
	return c->state >= IW_CONN_RTR_WAIT && c->state <= IW_CONN_FIN_SENT;
}

/* ------------------------------------------------------------ start */

/* Only the initiator: a responder that missed our first FPDUs (siw) has
 * them read again by a zero-length Write, while it has sent nothing. */
static void wake_start(struct iw_conn *c)
{
	atomic_store_explicit(&c->rx_any, false, memory_order_relaxed);
	if (!c->initiator || !c->opts.wake_ms || !c->tune.wake_count)
		return;
	c->wake_ms = c->opts.wake_ms;
	c->wake_left = c->tune.wake_count;
	timer_set(&c->t_wake, c->wake_ms);
}

static void start_qp(struct iw_conn *c)
{
	c->res = c->hs.res;
	struct iw_qp_conn qc = {
		.initiator = c->initiator,
		.p2p = c->res.p2p,
		.rtr = c->res.rtr,
		.crc = c->res.crc,
		.markers_tx = c->res.markers_tx,
		.markers_rx = c->res.markers_rx,
		.ird = c->res.ird,
		.ord = c->res.ord,
		.mulpdu = iw_mpa_mulpdu(c->mss ? c->mss : 1460, c->res.markers_tx),
		.peer_siw_term = c->opts.peer_siw_term,
		.hold_msgs = c->tune.recv_hold_msgs,
		.hold_bytes = c->tune.recv_hold_bytes,
	};
	/* Keep the peer's private data for the ESTABLISHED event. */
	c->peer_pd_len = c->hs.peer.pd_len;
	if (c->peer_pd_len)
		memcpy(c->peer_pd, c->hs.peer.pd, c->peer_pd_len);
	timer_stop(&c->t_state);
	c->ops->start(c->qp, &qc);
	c->link = IW_CONN_QP_LIVE;
	atomic_store(&c->tx_engine, true);
	c->state = IW_CONN_RTR_WAIT;
	wake_start(c);
}

int iw_conn_connect(struct iw_conn *c, struct iw_qp *qp, uint16_t ird, uint16_t ord,
		    const void *pd, uint16_t pd_len, uint32_t connect_timeout_ms)
{
	if (c->state != IW_CONN_IDLE)
		return -EISCONN;
	int rc = iw_mpa_hs_init(&c->hs, true, &c->opts, ird, ord, pd, pd_len);
	if (rc)
		return rc;
	c->qp = qp;
	c->initiator = true;
	c->state = IW_CONN_CONNECTING;
	timer_set(&c->t_state, connect_timeout_ms ? connect_timeout_ms
						  : IW_CONNECT_TIMEOUT_MS_DEFAULT);
	return 0;
}

unsigned iw_conn_tcp_up(struct iw_conn *c, uint32_t mss)
{
	c->mss = mss;
	if (c->initiator) {
		if (c->state != IW_CONN_CONNECTING)
			return 0;
		c->state = IW_CONN_MPA_REQ;
		timer_set(&c->t_state, c->opts.timeout_ms);
		return IW_CONN_EV_SEND;
	}
	if (iw_mpa_hs_init(&c->hs, false, &c->opts, 0, 0, NULL, 0))
		return drop(c, EINVAL);
	c->state = IW_CONN_MPA_WAIT;
	/* A Request that never completes is dropped, as siw does after 5 s. */
	timer_set(&c->t_state, c->opts.timeout_ms);
	return 0;
}

/* ------------------------------------------------------------ responder */

int iw_conn_accept(struct iw_conn *c, struct iw_qp *qp, uint16_t ird, uint16_t ord,
		   const void *pd, uint16_t pd_len, unsigned *ev)
{
	if (c->state != IW_CONN_CONNREQ)
		return -EINVAL;
	/* The application may have changed the options since the Request. */
	c->hs.opts = c->opts;
	int rc = iw_mpa_hs_accept(&c->hs, ird, ord, pd, pd_len);
	if (rc == -EMSGSIZE || rc == -EINVAL)
		return rc;
	/* -EPROTO: negotiation impossible; a Reject was built and goes out,
	 * and the application hears CONNECT_ERROR once it is written. */
	c->qp = qp;
	c->state = rc == -EPROTO ? IW_CONN_REJECT_FAIL : IW_CONN_REPLYING;
	*ev = IW_CONN_EV_SEND;
	return 0;
}

int iw_conn_reject(struct iw_conn *c, const void *pd, uint16_t pd_len, unsigned *ev)
{
	if (c->state != IW_CONN_CONNREQ)
		return -EINVAL;
	int rc = iw_mpa_hs_reject(&c->hs, pd, pd_len);
	if (rc)
		return rc;
	c->state = IW_CONN_REJECTING;
	*ev = IW_CONN_EV_SEND;
	return 0;
}

/* Our Reply or Reject is all out. */
static unsigned reply_written(struct iw_conn *c)
{
	switch (c->state) {
	case IW_CONN_REPLYING:
		start_qp(c);
		return IW_CONN_EV_SEND;
	case IW_CONN_REJECT_FAIL:
		return fail(c, IW_CONN_EV_CONNECT_ERROR, ECONNREFUSED);
	case IW_CONN_REJECTING:
		return close_now(c, false) | IW_CONN_EV_SHUTDOWN;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------ receive */

/* The engine's word after a locked step: ESTABLISHED, ERR, FIN. */
static unsigned after_status(struct iw_conn *c, const struct iw_qp_status *st, int tx_err)
{
	unsigned ev = 0;
	if ((st->events & IW_QPE_ESTABLISHED) && c->state == IW_CONN_RTR_WAIT) {
		c->state = IW_CONN_RUNNING;
		ev |= IW_CONN_EV_ESTABLISHED;
	}
	if (tx_err)
		return ev | disconnected(c, true, tx_err);
	if (((st->events & IW_QPE_ERROR) || st->err) &&
	    (c->state == IW_CONN_RTR_WAIT || c->state == IW_CONN_RUNNING)) {
		/* Write what is queued (a TERMINATE, the FPDUs of a graceful
		 * disconnect), then FIN, then wait a while for the peer's. */
		c->state = IW_CONN_CLOSING;
		timer_set(&c->t_state, c->tune.linger_ms);
		timer_stop(&c->t_wake); /* a closing connection needs no wake-up */
	}
	if (c->state == IW_CONN_CLOSING && !st->tx_pending) {
		c->state = IW_CONN_FIN_SENT;
		ev |= IW_CONN_EV_SHUTDOWN;
	}
	if (st->events & IW_QPE_TX)
		ev |= IW_CONN_EV_SEND;
	return ev;
}

unsigned iw_conn_step(struct iw_conn *c, int tx_err)
{
	if (!data_phase(c))
		return 0;
	struct iw_qp_status st;
	c->ops->poll(c->qp, &st);
	st.events |= atomic_exchange(&c->deferred, 0);
	return after_status(c, &st, tx_err);
}

size_t iw_conn_rx_plan(struct iw_conn *c, uint8_t **dst, size_t *cap)
{
	*dst = NULL;
	if (c->state == IW_CONN_MPA_WAIT) {
		/* The responder reads no further than the Request: an
		 * initiator may send nothing before our Reply. */
		if (*cap > sizeof(c->hs.rx))
			*cap = sizeof(c->hs.rx);
		return 0;
	}
	return data_phase(c) ? iw_conn_poll_plan(c, dst, cap, c->tune.direct_min) : 0;
}

/* What the hold leaves room for (the engine's rx_room) bounds the part
 * read into the bounce buffer; with no direct part either, the
 * connection is starved and reads nothing. */
static size_t room_clamp(struct iw_conn *c, size_t d, size_t *cap)
{
	size_t room = c->ops->rx_room ? c->ops->rx_room(c->qp) : SIZE_MAX;
	if (*cap > room)
		*cap = room;
	bool st = !d && !*cap;
	if (st != atomic_load_explicit(&c->rx_starved, memory_order_relaxed))
		atomic_store_explicit(&c->rx_starved, st, memory_order_relaxed);
	c->rx_planned = d + *cap;
	return d;
}

static size_t poll_plan(struct iw_conn *c, uint8_t **dst, size_t *cap, uint32_t direct_min);

size_t iw_conn_poll_plan(struct iw_conn *c, uint8_t **dst, size_t *cap, uint32_t direct_min)
{
	return room_clamp(c, poll_plan(c, dst, cap, direct_min), cap);
}

/* How far a read in small segments shortly after a large one goes. The
 * first read after it stops at the next header: a message cut at MULPDU
 * ends in a short segment, and the next message is most likely large too.
 * Once small ones follow (commands between large transfers), reading one
 * per system call cost more than it saved: those after take a run of
 * small segments, up to direct_min octets, which is also all of a large
 * payload behind them that lands in the bounce buffer to be copied. With
 * no limit, such reads took whole FPDUs of the next large message there
 * (iwarp-nvmet, 128 KiB writes by RDMA READ at QD 8: 16-25 KiB per I/O). */
static size_t small_cap(const struct iw_conn *c, uint32_t seg_len, uint32_t direct_min)
{
	size_t exact = (size_t)seg_len + RX_LOOKAHEAD;
	if (c->rx_big == RX_BIG_AFTER || exact >= direct_min)
		return exact;
	return direct_min;
}

static size_t poll_plan(struct iw_conn *c, uint8_t **dst, size_t *cap, uint32_t direct_min)
{
	*dst = NULL;
	/* Markers every 512 octets cut a payload into spans too short to
	 * read in place one system call each: one large read into the bounce
	 * buffer instead, from which the decoder copies the spans. */
	if (c->res.markers_rx)
		return 0;
	uint32_t seg_len = 0;
	uint32_t tail = 0;
	size_t d;
	if (c->rx_next.valid) {
		/* A busy poller plans every read: a lock round trip saved. */
		d = c->rx_next.direct;
		*dst = c->rx_next.dst;
		seg_len = c->rx_next.seg_len;
		tail = c->rx_next.tail;
	} else {
		d = c->ops->rx_direct(c->qp, dst, &seg_len);
	}
	if (direct_min < c->tune.direct_min)
		direct_min = c->tune.direct_min;
	if (c->rx_backlog && seg_len <= RX_BULK_SEG && seg_len >= direct_min) {
		*dst = NULL;
		return 0;
	}
	if (seg_len < direct_min) {
		/* A small segment: one read into the bounce buffer and a copy
		 * cost less than a system call per FPDU. But shortly after a
		 * large one (a message cut at MULPDU ends in a short segment,
		 * and the next message is most likely large too), read no
		 * further than the next header: else up to a bounce buffer of
		 * the next payload would be read there and copied rather than
		 * landing in place. */
		*dst = NULL;
		size_t lim = c->rx_big ? small_cap(c, seg_len, direct_min) : SIZE_MAX;
		if (*cap > lim)
			*cap = lim;
		if (seg_len && c->rx_big)
			c->rx_big--;
		return 0;
	}
	c->rx_big = RX_BIG_AFTER;
	/* A large segment: all of what is left of its payload goes in place,
	 * however little (a short read can leave any tail; read through the
	 * bounce buffer it took a system call per RX_LOOKAHEAD octets), and
	 * the bounce buffer takes only the trailer and the next header, so
	 * that the next payload lands in place too instead of being copied. */
	size_t ahead = RX_LOOKAHEAD;
	if (tail && tail < direct_min && d)
		/* The message most likely ends in a short segment next (a
		 * Write of 65536 octets cut at MULPDU ends in 76): it comes
		 * with this read, its trailer and the next header too,
		 * instead of costing a read of its own. A wrong guess costs
		 * at most a copy of that much of a longer segment. */
		ahead += tail + RX_LOOKAHEAD;
	if (*cap > ahead)
		*cap = ahead;
	if (!d)
		*dst = NULL;
	return d;
}

/* The batch itself; the read it belongs to was planned before (rx_planned
 * tells whether it took all the plan offered: rx_plan.c settles that for
 * a read fed in pieces). */
static void rx_batch(struct iw_conn *c, size_t placed, const uint8_t *in, size_t len,
		     struct iw_qp_status *st)
{
	atomic_store_explicit(&c->rx_any, true, memory_order_relaxed);
	if (c->rx_planned != SIZE_MAX)
		c->rx_backlog = c->rx_planned && placed + len >= c->rx_planned;
	c->rx_planned = 0;
	struct iw_qp_rx_batch b = {.placed = placed, .in = in, .len = len};
	c->ops->rx_batch(c->qp, &b, st);
	c->rx_next.valid = true;
	c->rx_next.direct = st->direct;
	c->rx_next.dst = st->direct_dst;
	c->rx_next.seg_len = st->seg_len;
	c->rx_next.tail = st->tail;
	c->rx_next.num_spec = st->num_spec;
	memcpy(c->rx_next.spec, st->spec, st->num_spec * sizeof(st->spec[0]));
}

static unsigned rx_data(struct iw_conn *c, size_t placed, const uint8_t *in, size_t len)
{
	if (!placed && !len)
		return 0;
	struct iw_qp_status st;
	rx_batch(c, placed, in, len, &st);
	return after_status(c, &st, 0);
}

static unsigned poll_events(struct iw_conn *c, const struct iw_qp_status *st);

unsigned iw_conn_rx_step(struct iw_conn *c, bool poller, size_t placed, const uint8_t *in,
			 size_t len, struct iw_qp_status *st)
{
	st->num_spec = 0;
	st->direct = 0;
	st->direct_dst = NULL;
	if (!placed && !len)
		return 0;
	rx_batch(c, placed, in, len, st);
	return poller ? poll_events(c, st) : after_status(c, st, 0);
}

unsigned iw_conn_poll_recv(struct iw_conn *c, size_t placed, const uint8_t *in, size_t len)
{
	if (!placed && !len)
		return 0;
	struct iw_qp_status st;
	rx_batch(c, placed, in, len, &st);
	return poll_events(c, &st);
}

/* A poller's events: the owner's are kept for its next iw_conn_step. */
static unsigned poll_events(struct iw_conn *c, const struct iw_qp_status *st)
{
	unsigned ev = st->events & IW_QPE_TX ? IW_CONN_EV_SEND : 0;
	unsigned owner = st->events & ~(unsigned)IW_QPE_TX;
	if (owner)
		atomic_fetch_or(&c->deferred, owner);
	/* An ERR the QP was already in was reported when it happened; the
	 * owner looks again anyway, as the loop would after any read. */
	return ev | (owner || st->err ? IW_CONN_EV_LOOP : 0);
}

/* A Reply we cannot live with (no RTR we offered, insufficient IRD): RFC
 * 6581 has the initiator say why with a TERMINATE in FPDU form before
 * closing (interop.md rule 2). */
static void queue_mpa_terminate(struct iw_conn *c)
{
	const struct iw_mpa_hs *hs = &c->hs;
	if (!hs->err_term || hs->state != IW_HS_FAILED || hs->peer.kind != IW_MPA_REPLY)
		return;
	uint8_t h[IW_FPDU_HDR_MAX];
	int n = iw_term_hdr_build(h, sizeof(h), hs->err_term, 1, NULL);
	if (n < 0)
		return;
	struct iw_mpa_framing fr;
	iw_mpa_framing(&fr, hs->local.flags, hs->peer.flags);
	struct iw_fpdu_tx tx;
	struct iw_fpdu_out out;
	struct iovec iov[IW_FPDU_IOV_NEED(0, 2)];
	iw_fpdu_tx_init(&tx, fr.crc, fr.markers_to_rep, 0);
	out.iov = iov;
	out.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
	if (iw_fpdu_encode(&tx, &out, h, (size_t)n, NULL, 0))
		return;
	size_t len = 0;
	for (int i = 0; i < out.iovcnt; i++) {
		if (len + iov[i].iov_len > sizeof(c->term))
			return;
		memcpy(c->term + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	c->term_len = len;
	c->term_off = 0;
}

static unsigned rx_reply(struct iw_conn *c, const uint8_t *in, size_t len, size_t *consumed)
{
	size_t used = 0;
	int rc = iw_mpa_hs_recv(&c->hs, in, len, &used);
	*consumed = len;
	if (rc < 0) {
		queue_mpa_terminate(c);
		/* Flush the TERMINATE, then close. */
		return fail(c, IW_CONN_EV_CONNECT_ERROR, EPROTO) | IW_CONN_EV_SEND;
	}
	if (rc == IW_HS_EV_REJECT) {
		set_why(c, ECONNREFUSED);
		return close_now(c, false) | IW_CONN_EV_REJECTED;
	}
	if (rc != IW_HS_EV_REPLY)
		return 0;
	start_qp(c);
	/* Octets after the Reply are the first FPDUs: exactly those. */
	return IW_CONN_EV_SEND | rx_data(c, 0, in + used, len - used);
}

static unsigned rx_request(struct iw_conn *c, const uint8_t *in, size_t len, size_t *consumed)
{
	size_t used = 0;
	int rc = iw_mpa_hs_recv(&c->hs, in, len, &used);
	*consumed = len;
	if (rc == IW_HS_EV_REQUEST && used == len) {
		c->state = IW_CONN_CONNREQ;
		timer_stop(&c->t_state);
		return IW_CONN_EV_REQUEST;
	}
	/* A bad Request, or octets after it (the initiator must wait for
	 * our Reply): close without a Reply, as siw does. */
	if (rc != IW_HS_EV_NONE || used != len)
		return drop(c, EPROTO);
	return 0;
}

unsigned iw_conn_recv_placed(struct iw_conn *c, size_t placed, const uint8_t *in, size_t len,
			     size_t *consumed)
{
	*consumed = 0;
	switch (c->state) {
	case IW_CONN_MPA_REQ:
		return rx_reply(c, in, len, consumed);
	case IW_CONN_MPA_WAIT:
		return rx_request(c, in, len, consumed);
	default:
		break;
	}
	if (!data_phase(c))
		return 0;
	*consumed = len;
	return rx_data(c, placed, in, len);
}

unsigned iw_conn_recv(struct iw_conn *c, const uint8_t *in, size_t len, size_t *consumed)
{
	return iw_conn_recv_placed(c, 0, in, len, consumed);
}

unsigned iw_conn_eof(struct iw_conn *c)
{
	switch (c->state) {
	case IW_CONN_MPA_REQ:
		return fail(c, IW_CONN_EV_CONNECT_ERROR, ECONNRESET);
	case IW_CONN_MPA_WAIT:
		return drop(c, ECONNRESET);
	default:
		return data_phase(c) ? disconnected(c, false, 0) : 0;
	}
}

unsigned iw_conn_io_error(struct iw_conn *c, int err)
{
	switch (c->state) {
	case IW_CONN_CONNECTING:
		return fail(c, IW_CONN_EV_UNREACHABLE, err);
	case IW_CONN_MPA_REQ:
	case IW_CONN_REPLYING:
	case IW_CONN_REJECT_FAIL:
		return fail(c, IW_CONN_EV_CONNECT_ERROR, err);
	case IW_CONN_MPA_WAIT:
		return drop(c, ECONNRESET);
	case IW_CONN_REJECTING:
		return close_now(c, true);
	default:
		return data_phase(c) ? disconnected(c, true, err) : 0;
	}
}

/* A starved connection wants octets again once the hold has room. */
static bool starved(const struct iw_conn *c)
{
	if (!atomic_load_explicit(&c->rx_starved, memory_order_relaxed))
		return false;
	struct iw_conn *w = (struct iw_conn *)c;
	if (c->ops->rx_room && c->ops->rx_room(c->qp) == 0)
		return true;
	atomic_store_explicit(&w->rx_starved, false, memory_order_relaxed);
	return false;
}

bool iw_conn_wants_read(const struct iw_conn *c)
{
	return c->state == IW_CONN_MPA_REQ || c->state == IW_CONN_MPA_WAIT ||
	       (data_phase(c) && !starved(c));
}

/* ------------------------------------------------------------ transmit */

int iw_conn_tx_iov(struct iw_conn *c, struct iovec *iov, int cap)
{
	if (cap <= 0)
		return 0;
	if (atomic_load_explicit(&c->tx_engine, memory_order_acquire)) {
		if (atomic_load(&c->tx_stop))
			return 0;
		return c->ops->tx_iov(c->qp, iov, cap);
	}
	size_t len = 0;
	const uint8_t *p = NULL;
	if (c->state >= IW_CONN_MPA_REQ && c->state <= IW_CONN_REJECT_FAIL)
		p = iw_mpa_hs_tx(&c->hs, &len);
	if (!p && c->term_off < c->term_len) {
		p = c->term + c->term_off;
		len = c->term_len - c->term_off;
	}
	if (!p)
		return 0;
	iov[0].iov_base = (void *)p;
	iov[0].iov_len = len;
	return 1;
}

unsigned iw_conn_tx_sent(struct iw_conn *c, size_t n)
{
	if (atomic_load_explicit(&c->tx_engine, memory_order_acquire)) {
		c->ops->tx_sent(c->qp, n);
		if (n)
			atomic_store_explicit(&c->tx_any, true, memory_order_relaxed);
		return 0;
	}
	size_t len = 0;
	if (c->state >= IW_CONN_MPA_REQ && c->state <= IW_CONN_REJECT_FAIL &&
	    iw_mpa_hs_tx(&c->hs, &len)) {
		iw_mpa_hs_tx_done(&c->hs, n);
		if (c->state != IW_CONN_MPA_REQ && !iw_mpa_hs_tx(&c->hs, &len))
			return reply_written(c);
		return 0;
	}
	c->term_off += n < c->term_len - c->term_off ? n : c->term_len - c->term_off;
	return 0;
}

int iw_conn_tx_sent_iov(struct iw_conn *c, size_t n, struct iovec *iov, int cap, unsigned *ev)
{
	if (cap <= 0 || !atomic_load_explicit(&c->tx_engine, memory_order_acquire) ||
	    atomic_load(&c->tx_stop)) {
		*ev |= iw_conn_tx_sent(c, n);
		return iw_conn_tx_iov(c, iov, cap);
	}
	if (n)
		atomic_store_explicit(&c->tx_any, true, memory_order_relaxed);
	return c->ops->tx_sent_iov(c->qp, n, iov, cap);
}

bool iw_conn_tx_shared(const struct iw_conn *c)
{
	return atomic_load_explicit(&c->tx_engine, memory_order_acquire);
}

void iw_conn_mss(struct iw_conn *c, uint32_t mss)
{
	/* Before the data phase start_qp takes c->mss as it is then. */
	if (!mss || mss == c->mss || !iw_conn_tx_shared(c))
		return;
	c->mss = mss;
	if (c->ops->set_mulpdu)
		c->ops->set_mulpdu(c->qp, iw_mpa_mulpdu(mss, c->res.markers_tx));
}

int iw_conn_tx_stage(struct iw_conn *c, uint32_t *msgs, size_t *bytes)
{
	if (!iw_conn_tx_shared(c) || atomic_load(&c->tx_stop) || !c->ops->tx_stage)
		return 1;
	return c->ops->tx_stage(c->qp, msgs, bytes);
}

bool iw_conn_wants_loop(struct iw_conn *c)
{
	return iw_conn_tx_shared(c) && c->ops->in_err(c->qp);
}

/* ------------------------------------------------------------ timers */

static unsigned wake_fire(struct iw_conn *c, uint64_t now)
{
	(void)now;
	unsigned ev = 0;
	if ((c->state != IW_CONN_RTR_WAIT && c->state != IW_CONN_RUNNING) ||
	    atomic_load_explicit(&c->rx_any, memory_order_relaxed))
		return 0;
	if (atomic_load_explicit(&c->tx_any, memory_order_relaxed)) {
		c->ops->wake(c->qp);
		ev = IW_CONN_EV_SEND;
	}
	if (--c->wake_left > 0) {
		c->wake_ms *= 2;
		timer_set(&c->t_wake, c->wake_ms);
	}
	return ev;
}

static unsigned state_timeout(struct iw_conn *c)
{
	switch (c->state) {
	case IW_CONN_CONNECTING:
		return fail(c, IW_CONN_EV_UNREACHABLE, ETIMEDOUT);
	case IW_CONN_MPA_REQ:
		return fail(c, IW_CONN_EV_CONNECT_ERROR, ETIMEDOUT);
	case IW_CONN_MPA_WAIT:
		return drop(c, ETIMEDOUT);
	default:
		/* The peer neither read our last octets nor closed. */
		return data_phase(c) ? disconnected(c, true, ETIMEDOUT) : 0;
	}
}

unsigned iw_conn_on_timer(struct iw_conn *c, uint64_t now)
{
	unsigned ev = 0;
	if (timer_due(&c->t_state, now))
		ev |= state_timeout(c);
	if (timer_due(&c->t_wake, now))
		ev |= wake_fire(c, now);
	return ev;
}
