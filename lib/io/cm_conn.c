/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The socket side of the connection manager: listen/accept, nonblocking
 * connect with a deadline, the MPA exchange (mpa_hs.c), the data path
 * between TCP and the QP engine, and closing.
 *
 * Receive: when the engine is inside a payload that may be placed directly
 * (a tagged segment's MR, or a posted receive), readv() lands it straight in
 * the application's buffer and only the octets after it go through the
 * 64 KiB bounce buffer; below IW_DIRECT_MIN octets one read into the bounce
 * buffer and a copy cost less than a system call per FPDU.
 * Transmit: everything the engine has queued goes out in one sendmsg().
 * Tracing (trace.h): with a trace on the context, every successful send
 * and receive hands the octets it moved to the tracer, and shutdown, end
 * of stream and close tell it about FINs; with tracing off each hook is
 * one branch on id->trace.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/cm_int.h"
#include "engine/context.h"
#include "io/ev.h"
#include "diag/trace.h"

#define IW_DIRECT_MIN 2048
#define IW_TX_IOV 512
#define IW_CLOSE_LINGER_MS 3000
#define IW_RX_BUDGET 64
/* Trailer of one FPDU plus the largest header of the next. */
#define IW_RX_LOOKAHEAD (7 + 2 + IW_FPDU_HDR_MAX)

/* A Reply we cannot live with (no RTR we offered, insufficient IRD):
 * RFC 6581 has the initiator say why with a TERMINATE in FPDU form before
 * closing (interop.md rule 2). Best effort: one nonblocking send. */
static void send_mpa_terminate(struct iw_cm_id_int *id)
{
	const struct iw_mpa_hs *hs = id->hs;
	if (!hs->err_term || hs->state != IW_HS_FAILED || hs->peer.kind != IW_MPA_REPLY)
		return;
	uint8_t h[IW_FPDU_HDR_MAX];
	int n = iw_term_hdr_build(h, sizeof(h), hs->err_term, 1, NULL);
	if (n < 0)
		return;
	bool crc = (hs->peer.flags & IW_MPA_FLAG_C) || id->opts.crc;
	bool markers = (hs->peer.flags & IW_MPA_FLAG_M) != 0;
	struct iw_fpdu_tx tx;
	struct iw_fpdu_out out;
	struct iovec iov[IW_FPDU_IOV_NEED(0, 2)];
	iw_fpdu_tx_init(&tx, crc, markers, 0);
	out.iov = iov;
	out.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
	if (iw_fpdu_encode(&tx, &out, h, (size_t)n, NULL, 0) == 0) {
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)out.iovcnt};
		ssize_t w = sendmsg(id->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0)
			return; /* the close that follows tells the peer anyway */
		if (id->trace)
			iw_trace_data(id->trace, IW_TRACE_TX, iov, out.iovcnt, (size_t)w);
	}
}

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_timeout(evutil_socket_t fd, short what, void *arg);
static void on_wake(evutil_socket_t fd, short what, void *arg);
static void after_engine(struct iw_cm_id_int *id);

/* ------------------------------------------------------------ plumbing */

static struct event_base *base_of(struct iw_cm_id_int *id)
{
	return iw_ev_base(id->pub.context);
}

static int sock_setup(int fd)
{
	int one = 1;
	/* Small FPDUs (RTRs, Read Requests, TERMINATEs) must not wait for
	 * Nagle: every message is a complete unit for the peer. */
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int ensure_events(struct iw_cm_id_int *id)
{
	struct event_base *b = base_of(id);
	if (!id->rd)
		id->rd = event_new(b, id->fd, EV_READ | EV_PERSIST, on_read, id);
	if (!id->wr)
		id->wr = event_new(b, id->fd, EV_WRITE, on_write, id);
	if (!id->tmo)
		id->tmo = evtimer_new(b, on_timeout, id);
	return id->rd && id->wr && id->tmo ? 0 : ENOMEM;
}

static void timer_arm(struct iw_cm_id_int *id, uint32_t ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	if (id->tmo)
		evtimer_add(id->tmo, &tv);
}

static void free_event(struct event **ev)
{
	if (*ev) {
		event_free(*ev);
		*ev = NULL;
	}
}

static void close_fd(struct iw_cm_id_int *id, bool abortive)
{
	free_event(&id->rd);
	free_event(&id->wr);
	free_event(&id->tmo);
	free_event(&id->wake);
	if (id->fd >= 0) {
		/* An application thread may be in write_loop (iw_cm_conn_tx,
		 * txlock held, iovecs pointing into the transmit queue): let it
		 * finish, and let the next one see no socket, before the fd is
		 * closed (and its number reused) and the caller discards the
		 * transmit queue (iw_qp_conn_lost). */
		pthread_mutex_lock(&id->txlock);
		int fd = id->fd;
		id->fd = -1;
		struct iw_trace_conn *tc = id->trace;
		id->trace = NULL;
		pthread_mutex_unlock(&id->txlock);
		if (abortive) {
			/* RST instead of FIN: the peer learns at once. */
			struct linger l = {.l_onoff = 1, .l_linger = 0};
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(fd);
		iw_trace_conn_end(tc, abortive);
	}
	free(id->hs);
	id->hs = NULL;
}

static void fill_addrs(struct iw_cm_id_int *id)
{
	socklen_t l = sizeof(id->pub.local_addr);
	getsockname(id->fd, (struct sockaddr *)&id->pub.local_addr, &l);
	l = sizeof(id->pub.peer_addr);
	getpeername(id->fd, (struct sockaddr *)&id->pub.peer_addr, &l);
}

/* The TCP connection is up (addresses filled): with a trace on the
 * context, start this connection's part of it, before any octet moves. */
static void trace_start(struct iw_cm_id_int *id)
{
	struct iw_trace *t = id->pub.context->trace;
	if (!t)
		return;
	int mss = 0;
	socklen_t l = sizeof(mss);
	if (getsockopt(id->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) || mss < 0)
		mss = 0;
	struct iw_trace_conn *tc =
		iw_trace_conn_new(t, (const struct sockaddr *)&id->pub.local_addr,
				  (const struct sockaddr *)&id->pub.peer_addr, id->initiator,
				  (uint32_t)mss);
	pthread_mutex_lock(&id->txlock);
	id->trace = tc;
	pthread_mutex_unlock(&id->txlock);
}

/* A connection attempt failed: tell the application, close, and leave the
 * QP as it was (it never started). */
static void fail(struct iw_cm_id_int *id, enum iw_cm_event_type type, int status)
{
	struct iw_cm_event *ev = iw_cm_event_new(id, type, status);
	if (ev && id->hs) {
		ev->wire_err = id->hs->err;
		ev->term = id->hs->err_term;
		ev->reason = id->hs->err_msg;
	}
	close_fd(id, true);
	id->state = IW_CS_CLOSED;
	if (ev)
		iw_cm_event_queue(id, ev);
}

/* A responder-side connection the application never saw: just drop it. */
static void drop_unseen(struct iw_cm_id_int *id)
{
	close_fd(id, true);
	iw_cm_id_release(id);
}

/* ------------------------------------------------------------ closing */

static void closed(struct iw_cm_id_int *id, bool abortive)
{
	close_fd(id, abortive);
	id->state = IW_CS_CLOSED;
	if (id->qp)
		iw_qp_conn_lost(id->qp, !abortive);
	iw_cm_raise(id, IW_CM_EVENT_DISCONNECTED, 0);
}

/* The QP is in ERR: write what is queued (a TERMINATE, the FPDUs of a
 * graceful disconnect), then FIN, then wait a while for the peer's FIN. */
static void begin_close(struct iw_cm_id_int *id)
{
	if (id->state != IW_CS_RUNNING)
		return;
	id->state = IW_CS_CLOSING;
	timer_arm(id, IW_CLOSE_LINGER_MS);
}

static void maybe_fin(struct iw_cm_id_int *id)
{
	if (id->state != IW_CS_CLOSING || id->fin_sent || iw_qp_tx_pending(id->qp))
		return;
	shutdown(id->fd, SHUT_WR);
	id->fin_sent = true;
	if (id->trace)
		iw_trace_fin(id->trace, IW_TRACE_TX);
}

/* ------------------------------------------------------------ transmit */

/* sendmsg with the trace on: the octets are copied before they go out, and
 * only what was copied is offered (a partial write, as the kernel may make
 * anyway), so that nothing sent escapes the copy. */
static ssize_t sendmsg_traced(struct iw_cm_id_int *id, struct msghdr *m)
{
	struct iw_trace_tx tx;
	iw_trace_tx_begin(id->trace, &tx, m->msg_iov, (int)m->msg_iovlen);
	size_t k = 0, left = tx.len, cut = 0, iovlen = m->msg_iovlen;
	if (tx.pos != UINT64_MAX) {
		while (k < iovlen && left > m->msg_iov[k].iov_len)
			left -= m->msg_iov[k++].iov_len;
		if (k < iovlen) {
			cut = m->msg_iov[k].iov_len;
			m->msg_iov[k].iov_len = left;
			m->msg_iovlen = k + 1;
		}
	}
	ssize_t w = sendmsg(id->fd, m, MSG_NOSIGNAL | MSG_DONTWAIT);
	int e = errno;
	if (k < iovlen && tx.pos != UINT64_MAX) {
		m->msg_iov[k].iov_len = cut;
		m->msg_iovlen = iovlen;
	}
	iw_trace_tx_end(id->trace, &tx, m->msg_iov, (int)m->msg_iovlen, w > 0 ? (size_t)w : 0);
	errno = e;
	return w;
}

/* 0: all written; 1: the socket is full; -errno: the connection failed. */
static int write_loop(struct iw_cm_id_int *id)
{
	struct iovec iov[IW_TX_IOV];
	for (;;) {
		int n = iw_qp_tx_iov(id->qp, iov, IW_TX_IOV);
		if (n <= 0)
			return n;
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = id->trace ? sendmsg_traced(id, &m)
				      : sendmsg(id->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -errno;
		}
		iw_qp_tx_sent(id->qp, (size_t)w);
		id->tx_any = true;
	}
}

/* Write from whichever thread gets the lock; a thread that finds it taken
 * leaves tx_req set, and the holder loops until no request is left, so no
 * posted work is stranded. 0: nothing left (or the holder will see it);
 * 1: the socket is full; -errno: the connection failed. */
static int tx_drive(struct iw_cm_id_int *id)
{
	atomic_store(&id->tx_req, 1);
	while (atomic_load(&id->tx_req)) {
		if (pthread_mutex_trylock(&id->txlock))
			return 0;
		atomic_store(&id->tx_req, 0);
		int rc = id->fd >= 0 ? write_loop(id) : 0;
		pthread_mutex_unlock(&id->txlock);
		if (rc)
			return rc;
	}
	return 0;
}

/* The QP's state, read under its lock from an application thread. */
static bool qp_in_err(struct iw_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	bool err = qp->state == IW_QPS_ERR;
	pthread_mutex_unlock(&qp->lock);
	return err;
}

void iw_cm_conn_tx(struct iw_cm_id_int *id)
{
	/* A full socket (arm EV_WRITE), an error, or a QP in ERR (close):
	 * the loop thread acts on it. */
	if (tx_drive(id) || (id->qp && qp_in_err(id->qp)))
		iw_cm_want_work(id);
}

/* ------------------------------------------------------------ engine */

/* ------------------------------------------------------------ wake-ups */

#define IW_WAKE_TIMES 6

static void wake_arm(struct iw_cm_id_int *id)
{
	struct timeval tv = {.tv_sec = id->wake_ms / 1000, .tv_usec = (id->wake_ms % 1000) * 1000};
	evtimer_add(id->wake, &tv);
}

/* Only the initiator: a responder that missed our first FPDUs (siw) has
 * nothing to say until it reads them, so the silence is ours to break. */
static void wake_start(struct iw_cm_id_int *id)
{
	id->rx_any = false;
	if (!id->initiator || !id->opts.wake_ms)
		return;
	if (!id->wake)
		id->wake = evtimer_new(base_of(id), on_wake, id);
	if (!id->wake)
		return; /* only a workaround: the connection works without it */
	id->wake_ms = id->opts.wake_ms;
	id->wake_left = IW_WAKE_TIMES;
	wake_arm(id);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_context *ctx = id->pub.context;
	(void)fd;
	(void)what;
	iw_ev_enter(ctx);
	if (id->state == IW_CS_RUNNING && !id->rx_any && id->qp) {
		pthread_mutex_lock(&id->txlock);
		bool sent = id->tx_any;
		pthread_mutex_unlock(&id->txlock);
		if (sent) {
			iw_qp_wake(id->qp);
			after_engine(id);
		}
		if (--id->wake_left > 0 && id->wake) {
			id->wake_ms *= 2;
			wake_arm(id);
		}
	}
	iw_ev_leave(ctx);
}

static void start_qp(struct iw_cm_id_int *id)
{
	int mss = 0;
	socklen_t l = sizeof(mss);
	if (getsockopt(id->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) || mss <= 0)
		mss = 1460;
	struct iw_qp_conn c = {
		.initiator = id->initiator,
		.p2p = id->res.p2p,
		.rtr = id->res.rtr,
		.crc = id->res.crc,
		.markers_tx = id->res.markers_tx,
		.markers_rx = id->res.markers_rx,
		.ird = id->res.ird,
		.ord = id->res.ord,
		.mulpdu = iw_mpa_mulpdu((uint32_t)mss, id->res.markers_tx),
		.peer_siw_term = id->opts.peer_siw_term,
	};
	/* Keep the peer's private data for the ESTABLISHED event. */
	id->pd_len = id->hs->peer.pd_len;
	if (id->pd_len)
		memcpy(id->pd, id->hs->peer.pd, id->pd_len);
	free(id->hs);
	id->hs = NULL;
	evtimer_del(id->tmo);
	iw_qp_start(id->qp, &c);
	id->state = IW_CS_RUNNING;
	event_add(id->rd, NULL);
	wake_start(id);
}

static void after_engine(struct iw_cm_id_int *id)
{
	if (!id->qp || id->fd < 0)
		return;
	int rc = tx_drive(id);
	/* Events are taken after writing: sending the RTR raises ESTABLISHED. */
	unsigned e = iw_qp_take_events(id->qp);
	if (rc == 1)
		event_add(id->wr, NULL);
	if ((e & IW_QPE_ESTABLISHED) && !id->established && id->state == IW_CS_RUNNING) {
		id->established = true;
		struct iw_cm_event *ev = iw_cm_event_new(id, IW_CM_EVENT_ESTABLISHED, 0);
		if (ev) {
			iw_cm_event_set_pd(ev, id->pd, id->pd_len);
			iw_cm_event_queue(id, ev);
		}
	}
	if (rc < 0) {
		closed(id, true);
		return;
	}
	if ((e & IW_QPE_ERROR) || id->qp->state == IW_QPS_ERR)
		begin_close(id);
	maybe_fin(id);
}

void iw_cm_conn_work(struct iw_cm_id_int *id)
{
	if (id->state == IW_CS_RUNNING || id->state == IW_CS_CLOSING)
		after_engine(id);
}

/* ------------------------------------------------------------ receive */

static void rx_feed(struct iw_cm_id_int *id, const uint8_t *p, size_t n)
{
	size_t used = 0;
	if (n)
		iw_qp_rx(id->qp, p, n, &used);
}

/* One read; returns octets read, 0 at EOF, -1 EAGAIN, -2 error. */
static ssize_t rx_once(struct iw_cm_id_int *id)
{
	size_t cap;
	uint8_t *bounce = iw_ev_bounce(id->pub.context, &cap);
	uint8_t *dst = NULL;
	size_t d = iw_qp_rx_direct(id->qp, &dst);
	ssize_t n;
	if (d >= IW_DIRECT_MIN) {
		struct iovec iov[2] = {{dst, d}, {bounce, IW_RX_LOOKAHEAD}};
		n = readv(id->fd, iov, 2);
	} else {
		/* After a large segment the next one is likely large too: read
		 * just past its header so its payload can go direct. */
		if (id->qp->frx.seg.payload_len >= IW_DIRECT_MIN)
			cap = IW_RX_LOOKAHEAD;
		d = 0;
		n = recv(id->fd, bounce, cap, MSG_DONTWAIT);
	}
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
	if (n == 0) {
		if (id->trace)
			iw_trace_fin(id->trace, IW_TRACE_RX);
		return 0;
	}
	size_t take = (size_t)n < d ? (size_t)n : d;
	id->rx_any = true;
	if (id->trace) {
		/* In stream order: the directly placed part, then the rest.
		 * Taken before the engine sees them (a completed receive's
		 * buffer is the application's again). */
		struct iovec got[2] = {{dst, take}, {bounce, (size_t)n - take}};
		iw_trace_data(id->trace, IW_TRACE_RX, got, 2, (size_t)n);
	}
	if (take)
		iw_qp_rx_direct_done(id->qp, take);
	rx_feed(id, bounce, (size_t)n - take);
	return n;
}

static void read_data(struct iw_cm_id_int *id)
{
	for (int i = 0; i < IW_RX_BUDGET; i++) {
		ssize_t n = rx_once(id);
		if (n == -1)
			break;
		if (n <= 0) {
			/* FIN or error: the connection is over. */
			closed(id, n < 0);
			return;
		}
		if (id->state != IW_CS_RUNNING && id->state != IW_CS_CLOSING)
			break;
	}
	after_engine(id);
}

static void raise_request(struct iw_cm_id_int *id)
{
	struct iw_mpa_hs *hs = id->hs;
	struct iw_cm_event *ev = iw_cm_event_new(id, IW_CM_EVENT_CONNECT_REQUEST, 0);
	if (!ev) {
		drop_unseen(id);
		return;
	}
	/* The application sees the id from here on: it no longer belongs to
	 * the listener. */
	ev->listen_id = id->listener ? &id->listener->pub : NULL;
	iw_cm_child_unlink(id);
	ev->param.responder_resources = (uint8_t)(hs->peer.ird > 255 ? 255 : hs->peer.ird);
	ev->param.initiator_depth = (uint8_t)(hs->peer.ord > 255 ? 255 : hs->peer.ord);
	ev->mpa_rev = hs->peer.rev;
	ev->crc = (hs->peer.flags & IW_MPA_FLAG_C) != 0;
	ev->markers_tx = (hs->peer.flags & IW_MPA_FLAG_M) != 0;
	iw_cm_event_set_pd(ev, hs->peer.pd, hs->peer.pd_len);
	id->state = IW_CS_CONNREQ;
	event_del(id->rd);
	evtimer_del(id->tmo);
	iw_cm_event_queue(id, ev);
}

static void read_mpa(struct iw_cm_id_int *id)
{
	size_t cap;
	uint8_t *bounce = iw_ev_bounce(id->pub.context, &cap);
	/* The responder reads no further than the Request: an initiator may
	 * send nothing before our Reply. */
	if (!id->initiator)
		cap = sizeof(id->hs->rx);
	ssize_t n = recv(id->fd, bounce, cap, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (id->trace && n >= 0) {
		struct iovec got = {bounce, (size_t)n};
		if (n > 0)
			iw_trace_data(id->trace, IW_TRACE_RX, &got, 1, (size_t)n);
		else
			iw_trace_fin(id->trace, IW_TRACE_RX);
	}
	if (n <= 0) {
		if (id->initiator)
			fail(id, IW_CM_EVENT_CONNECT_ERROR, n == 0 ? ECONNRESET : errno);
		else
			drop_unseen(id);
		return;
	}
	size_t used = 0;
	int rc = iw_mpa_hs_recv(id->hs, bounce, (size_t)n, &used);
	if (!id->initiator) {
		if (rc == IW_HS_EV_REQUEST && used == (size_t)n)
			raise_request(id);
		else if (rc != IW_HS_EV_NONE || used != (size_t)n)
			drop_unseen(id);
		return;
	}
	if (rc < 0) {
		send_mpa_terminate(id);
		fail(id, IW_CM_EVENT_CONNECT_ERROR, EPROTO);
	} else if (rc == IW_HS_EV_REJECT) {
		struct iw_cm_event *ev = iw_cm_event_new(id, IW_CM_EVENT_REJECTED, ECONNREFUSED);
		if (ev)
			iw_cm_event_set_pd(ev, id->hs->peer.pd, id->hs->peer.pd_len);
		close_fd(id, false);
		id->state = IW_CS_CLOSED;
		if (ev)
			iw_cm_event_queue(id, ev);
	} else if (rc == IW_HS_EV_REPLY) {
		id->res = id->hs->res;
		start_qp(id);
		/* Octets after the Reply are the first FPDUs. */
		if ((size_t)n > used)
			id->rx_any = true;
		rx_feed(id, bounce + used, (size_t)n - used);
		after_engine(id);
	}
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_context *ctx = id->pub.context;
	(void)fd;
	(void)what;
	iw_ev_enter(ctx);
	if (id->state == IW_CS_MPA)
		read_mpa(id);
	else if (id->state == IW_CS_RUNNING || id->state == IW_CS_CLOSING)
		read_data(id);
	iw_ev_leave(ctx);
}

/* ------------------------------------------------------------ MPA frames */

/* Write our MPA frame: 1 all of it is out, 0 the socket is full (EV_WRITE
 * armed), -errno the connection failed. */
static int write_hs(struct iw_cm_id_int *id)
{
	size_t len;
	const uint8_t *p;
	while ((p = iw_mpa_hs_tx(id->hs, &len)) != NULL) {
		ssize_t w = send(id->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			event_add(id->wr, NULL);
			return 0;
		}
		if (id->trace) {
			struct iovec sent = {(void *)p, (size_t)w};
			iw_trace_data(id->trace, IW_TRACE_TX, &sent, 1, (size_t)w);
		}
		iw_mpa_hs_tx_done(id->hs, (size_t)w);
	}
	return 1;
}

static void reply_written(struct iw_cm_id_int *id)
{
	if (id->hs->state == IW_HS_DONE) {
		id->res = id->hs->res;
		start_qp(id);
		after_engine(id);
		return;
	}
	/* A Reject: ours (the application asked) or forced by negotiation. */
	if (id->reject_fail) {
		fail(id, IW_CM_EVENT_CONNECT_ERROR, ECONNREFUSED);
		return;
	}
	shutdown(id->fd, SHUT_WR);
	if (id->trace)
		iw_trace_fin(id->trace, IW_TRACE_TX);
	close_fd(id, false);
	id->state = IW_CS_CLOSED;
}

/* The responder's Reply (or Reject): written, pending, or failed. A failed
 * Reply (or a Reject forced by negotiation) is a CONNECT_ERROR for the
 * application that accepted; a Reject it asked for just ends here. */
static void drive_reply(struct iw_cm_id_int *id)
{
	int rc = write_hs(id);
	if (rc > 0) {
		reply_written(id);
	} else if (rc < 0 && id->hs->tx_reject && !id->reject_fail) {
		close_fd(id, true);
		id->state = IW_CS_CLOSED;
	} else if (rc < 0) {
		fail(id, IW_CM_EVENT_CONNECT_ERROR, -rc);
	}
}

static int start_initiator(struct iw_cm_id_int *id)
{
	id->state = IW_CS_MPA;
	fill_addrs(id);
	trace_start(id);
	timer_arm(id, id->opts.timeout_ms);
	event_add(id->rd, NULL);
	int rc = write_hs(id);
	return rc < 0 ? -rc : 0;
}

static void connected(struct iw_cm_id_int *id)
{
	int err = 0;
	socklen_t l = sizeof(err);
	getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err) {
		fail(id, IW_CM_EVENT_UNREACHABLE, err);
		return;
	}
	int rc = start_initiator(id);
	if (rc)
		fail(id, IW_CM_EVENT_CONNECT_ERROR, rc);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_context *ctx = id->pub.context;
	(void)fd;
	(void)what;
	iw_ev_enter(ctx);
	switch (id->state) {
	case IW_CS_CONNECTING:
		connected(id);
		break;
	case IW_CS_MPA: {
		int rc = write_hs(id);
		if (rc < 0)
			fail(id, IW_CM_EVENT_CONNECT_ERROR, -rc);
		break;
	}
	case IW_CS_REPLYING:
		drive_reply(id);
		break;
	case IW_CS_RUNNING:
	case IW_CS_CLOSING:
		after_engine(id);
		break;
	default:
		break;
	}
	iw_ev_leave(ctx);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_context *ctx = id->pub.context;
	(void)fd;
	(void)what;
	iw_ev_enter(ctx);
	switch (id->state) {
	case IW_CS_CONNECTING:
		fail(id, IW_CM_EVENT_UNREACHABLE, ETIMEDOUT);
		break;
	case IW_CS_MPA:
		if (id->initiator)
			fail(id, IW_CM_EVENT_CONNECT_ERROR, ETIMEDOUT);
		else
			drop_unseen(id);
		break;
	case IW_CS_CLOSING:
	case IW_CS_RUNNING:
		/* The peer neither read our last octets nor closed. */
		closed(id, true);
		break;
	default:
		break;
	}
	iw_ev_leave(ctx);
}

/* ------------------------------------------------------------ listen */

static void accept_one(struct iw_cm_id_int *l, int fd)
{
	struct iw_cm_id_int *id = iw_cm_id_alloc(l->ch, l->pub.user_context);
	if (!id) {
		close(fd);
		return;
	}
	id->fd = fd;
	id->opts = l->opts;
	iw_cm_child_link(l, id);
	id->hs = calloc(1, sizeof(*id->hs));
	if (sock_setup(fd) || ensure_events(id) || !id->hs ||
	    iw_mpa_hs_init(id->hs, false, &id->opts, 0, 0, NULL, 0)) {
		drop_unseen(id);
		return;
	}
	fill_addrs(id);
	trace_start(id);
	id->state = IW_CS_MPA;
	event_add(id->rd, NULL);
	/* A Request that never completes is dropped, as siw does after 5 s. */
	timer_arm(id, id->opts.timeout_ms);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct iw_cm_id_int *l = arg;
	struct iw_context *ctx = l->pub.context;
	(void)what;
	iw_ev_enter(ctx);
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		accept_one(l, fd);
	}
	iw_ev_leave(ctx);
}

int iw_cm_conn_listen(struct iw_cm_id_int *id)
{
	const struct sockaddr *a = (const struct sockaddr *)&id->pub.local_addr;
	socklen_t al = a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						 : sizeof(struct sockaddr_in);
	int fd = socket(a->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, a, al) || listen(fd, id->backlog > 0 ? id->backlog : SOMAXCONN)) {
		int e = errno;
		close(fd);
		return e;
	}
	id->fd = fd;
	socklen_t l = sizeof(id->pub.local_addr);
	getsockname(fd, (struct sockaddr *)&id->pub.local_addr, &l);
	id->rd = event_new(base_of(id), fd, EV_READ | EV_PERSIST, on_accept, id);
	if (!id->rd || event_add(id->rd, NULL)) {
		close_fd(id, false);
		return ENOMEM;
	}
	id->state = IW_CS_LISTEN;
	return 0;
}

/* ------------------------------------------------------------ connect */

int iw_cm_conn_connect(struct iw_cm_id_int *id, const struct sockaddr *dst)
{
	socklen_t dl = dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						   : sizeof(struct sockaddr_in);
	/* Build the Request now so that bad options or private data fail
	 * this call rather than a CONNECT_ERROR later. */
	id->hs = calloc(1, sizeof(*id->hs));
	if (!id->hs)
		return ENOMEM;
	int rc = iw_mpa_hs_init(id->hs, true, &id->opts, id->ird, id->ord, id->pd, id->pd_len);
	if (rc) {
		free(id->hs);
		id->hs = NULL;
		return -rc;
	}
	int fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	id->fd = fd;
	id->initiator = true;
	if (sock_setup(fd) || ensure_events(id)) {
		close_fd(id, false);
		return ENOMEM;
	}
	if (id->bound) {
		const struct sockaddr *la = (const struct sockaddr *)&id->pub.local_addr;
		if (bind(fd, la, la->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							    : sizeof(struct sockaddr_in))) {
			int e = errno;
			close_fd(id, false);
			return e;
		}
	}
	memcpy(&id->pub.peer_addr, dst, dl);
	id->state = IW_CS_CONNECTING;
	if (connect(fd, dst, dl) && errno != EINPROGRESS) {
		/* Reported as an event, like every other connect outcome. */
		fail(id, IW_CM_EVENT_UNREACHABLE, errno);
		return 0;
	}
	timer_arm(id, id->connect_timeout_ms);
	event_add(id->wr, NULL);
	return 0;
}

/* ------------------------------------------------------------ accept */

int iw_cm_conn_accept(struct iw_cm_id_int *id)
{
	int rc = iw_mpa_hs_accept(id->hs, id->ird, id->ord, id->pd, id->pd_len);
	if (rc == -EMSGSIZE || rc == -EINVAL)
		return -rc;
	/* -EPROTO: negotiation impossible; a Reject was built and goes out,
	 * and the application hears CONNECT_ERROR once it is written. */
	id->reject_fail = rc == -EPROTO;
	id->state = IW_CS_REPLYING;
	drive_reply(id);
	return 0;
}

int iw_cm_conn_reject(struct iw_cm_id_int *id, const void *pd, uint16_t len)
{
	int rc = iw_mpa_hs_reject(id->hs, pd, len);
	if (rc)
		return -rc;
	id->state = IW_CS_REPLYING;
	drive_reply(id);
	return 0;
}

/* ------------------------------------------------------------ close */

int iw_cm_conn_disconnect(struct iw_cm_id_int *id)
{
	if (id->state == IW_CS_CLOSING || id->state == IW_CS_CLOSED)
		return 0;
	if (id->state != IW_CS_RUNNING || !id->qp)
		return ENOTCONN;
	struct iw_qp_attr a = {.qp_state = IW_QPS_ERR};
	iw_modify_qp(id->qp, &a, IW_QP_STATE);
	after_engine(id);
	return 0;
}

void iw_cm_conn_abort(struct iw_cm_id_int *id)
{
	/* A listener takes the connections nobody has seen yet with it. */
	while (id->children)
		drop_unseen(id->children);
	bool live = id->fd >= 0;
	close_fd(id, true);
	if (live && id->qp && id->qp->connected)
		iw_qp_conn_lost(id->qp, false);
	id->state = IW_CS_CLOSED;
}
