/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The socket pump of a connection: listen/accept, nonblocking connect,
 * readv/recv and sendmsg, closing, and one libevent timer armed at the
 * connection's next deadline. Every protocol decision (the MPA exchange,
 * the hand-off to FPDUs, TERMINATE after a bad Reply, FIN and linger, the
 * siw wake-ups, every timeout) is lib/conn/conn.c's: this file moves
 * octets and acts on the events each iw_conn call returns (conn.h).
 *
 * Receive: when the connection offers a destination (a tagged segment's
 * MR, or a posted receive, at least the direct-placement threshold long),
 * readv() lands the payload straight in the application's buffer and only
 * the octets after it go through the context's bounce buffer.
 * Transmit: everything queued goes out in one sendmsg() (send() when it
 * is one piece), from the thread that posted or polls (txlock) or from
 * the loop; when the socket is full the loop waits for room once
 * (tx_wait), and pollers keep writing at each visit meanwhile. A post
 * that arrives together with the previous one may leave its FPDUs queued
 * for the next write instead (cm_batch.c: the bound, the next poll or
 * arm, the close, a backstop): every write here takes whatever is
 * queued, so nothing is reordered.
 * Run to completion (a context with IW_CONTEXT_POLL): application threads
 * that poll (iw_poll_cq, iw_progress) read the socket of a RUNNING
 * connection themselves (iw_cm_conn_poll). Receive ownership is the
 * connection's rxlock, only ever tried on the data path: the thread that
 * holds it reads, another skips, and since the octets stay in the socket
 * and the read event is level-triggered nothing is lost. While pollers
 * keep visiting, or keep polling a CQ that the connection's octets would
 * complete into (iw_qp_feed_polled), the loop leaves the read event off
 * (rd_paused) so that it does not wake for every message, and looks
 * again after a pause that
 * doubles while they stay (1 ms up to IW_POLL_PAUSE_MAX_MS). A poller that
 * arms a CQ (iw_req_notify_cq) is about to sleep: the connections feeding
 * that CQ go back to the loop at once (iw_cm_conn_handback), and its polls
 * through the armed CQ do not keep the loop off. What a poller cannot finish (the end of the stream, a
 * socket error, an engine event that moves the state machine) it leaves
 * to the loop (rx_kick with sock_err, iw_conn deferred events, loop work).
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
#include <time.h>
#include <unistd.h>

#include "io/cm_int.h"
#include "engine/context.h"
#include "io/ev.h"
#include "io/poll_buf.h"
#include "diag/trace.h"

#define IW_TX_IOV 512
#define IW_RX_BUDGET 64
/* A poller reads at most this often per visit, into a stack buffer this
 * large (payloads of direct_min and more land in place anyway), or into
 * one of the context's larger buffers to read a large message ahead. */
#define IW_POLL_BUDGET 4
#define IW_POLL_BOUNCE (16 * 1024)
/* A poller copies payloads below this from its buffer: one read and a
 * copy of a few KiB cost less than a second read per message, which a
 * ping-pong waits for (the loop keeps iw_conn_opts.direct_min). */
#define IW_POLL_DIRECT_MIN (IW_POLL_BOUNCE / 2)
_Static_assert(IW_CONN_RX_IOV_MAX <= 1024, "a read plan fits IOV_MAX");
#define IW_POLL_PAUSE_MAX_MS 16

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_timeout(evutil_socket_t fd, short what, void *arg);
static void on_pause(evutil_socket_t fd, short what, void *arg);
static void on_stall(evutil_socket_t fd, short what, void *arg);
static void act(struct iw_cm_id_int *id, unsigned ev);
static void handback(struct iw_cm_id_int *id);
static void loop_rx(struct iw_cm_id_int *id, bool wait);
static void dial_failed(struct iw_cm_id_int *id, int err);

/* ------------------------------------------------------------ plumbing */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct event_base *base_of(struct iw_cm_id_int *id)
{
	return iw_ev_base(id->ev);
}

/* One integer option, skipped when v is 0 (the kernel's default). */
static int set_int(int fd, int level, int name, uint32_t v)
{
	int i = (int)v; /* ranges checked by iw_conn_tune_set */
	return v ? setsockopt(fd, level, name, &i, sizeof(i)) : 0;
}

/* The application's buffer sizes (iw_conn_opts): before connect(2) or
 * listen(2), so that the window scale offered in the SYN fits rcvbuf. */
static int sock_bufs(int fd, const struct iw_conn_tune *t)
{
	if (set_int(fd, SOL_SOCKET, SO_SNDBUF, t->sndbuf) ||
	    set_int(fd, SOL_SOCKET, SO_RCVBUF, t->rcvbuf))
		return -1;
	return 0;
}

/* Liveness (iw_conn_opts): keepalive probes and TCP_USER_TIMEOUT make the
 * kernel end a connection to a silent peer with ETIMEDOUT, which the
 * receive or transmit path then hands to the connection (iw_conn_io_error:
 * QP to ERR, WRs flushed, DISCONNECTED status ETIMEDOUT). */
static int sock_liveness(int fd, const struct iw_conn_tune *t)
{
	if (t->keepalive && (set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1) ||
			     set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, t->keepalive_idle_s) ||
			     set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, t->keepalive_intvl_s) ||
			     set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, t->keepalive_cnt)))
		return -1;
	return set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, t->user_timeout_ms);
}

static int sock_setup(int fd, const struct iw_conn_tune *t)
{
	/* Small FPDUs (RTRs, Read Requests, TERMINATEs) must not wait for
	 * Nagle: every message is a complete unit for the peer. */
	if (set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1))
		return -1;
	return sock_bufs(fd, t) || sock_liveness(fd, t) ? -1 : 0;
}

/* The first error a write or read met. The kernel reports a socket's
 * error (ETIMEDOUT from keepalive or TCP_USER_TIMEOUT, ECONNRESET) to one
 * call only; the calls after it see EPIPE or end of stream. When that one
 * call was an application thread's sendmsg (iw_cm_conn_tx), the loop must
 * still learn the real reason, not a clean end. */
static int sock_err(struct iw_cm_id_int *id, int err)
{
	int none = 0;
	if (err)
		atomic_compare_exchange_strong(&id->sock_err, &none, err);
	return atomic_load(&id->sock_err);
}

static uint32_t live_mss(int fd)
{
	int mss = 0;
	socklen_t l = sizeof(mss);
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) || mss < 0)
		mss = 0;
	return (uint32_t)mss;
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
	if (!id->pause)
		id->pause = evtimer_new(b, on_pause, id);
	if (!id->stall)
		id->stall = evtimer_new(b, on_stall, id);
	return id->rd && id->wr && id->tmo && id->pause && id->stall ? 0 : ENOMEM;
}

/* Pollers may read a running connection's socket from now on (or no
 * longer may): not at all for a QP left to the loop. */
static void sync_poll_ok(struct iw_cm_id_int *id)
{
	bool ok = id->conn.state == IW_CONN_RUNNING && id->conn.qp && iw_qp_polled(id->conn.qp);
	atomic_store_explicit(&id->poll_ok, ok, memory_order_release);
}

/* A connection whose receive hold is full reads nothing (neither the
 * loop nor pollers), and recv is where a socket's end surfaces: a reset,
 * or the kernel's keepalive or user timeout. Its peer, unable to deliver
 * its FIN through a full window, ends with a reset after its linger, and
 * the application, waiting for DISCONNECTED without posting receives
 * (qperf does between tests), would wait forever. So while the hold is
 * full the loop looks at the socket's error every STALL_CHECK_MS: a
 * getsockopt, no read, so the octets waiting stay for the receives to
 * come. The timer is not stopped when the hold empties: it lapses at its
 * next expiry (a connection starved now and then, as a slow receiver's
 * is, does not pay an event_add and event_del each time). */
#define STALL_CHECK_MS 200

static void stall_arm(struct iw_cm_id_int *id)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = STALL_CHECK_MS * 1000};
	if (id->stall && !evtimer_pending(id->stall, NULL))
		evtimer_add(id->stall, &tv);
}

static void on_stall(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_ev *ev = id->ev;
	(void)fd;
	(void)what;
	iw_ev_enter(ev);
	if (id->fd >= 0 && iw_conn_rx_starved(&id->conn)) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
			act(id, iw_conn_io_error(&id->conn, sock_err(id, err)));
		else
			stall_arm(id);
	}
	iw_ev_leave(ev);
}

/* Arm the timer at the connection's next deadline, and read only while
 * the connection wants octets. */
static void sync_events(struct iw_cm_id_int *id)
{
	if (id->fd < 0 || !id->tmo)
		return;
	uint64_t now = now_ms();
	uint64_t at = iw_conn_next_timeout(&id->conn, now);
	if (at != id->tmo_at) {
		id->tmo_at = at;
		if (at == UINT64_MAX) {
			evtimer_del(id->tmo);
		} else {
			uint64_t ms = at > now ? at - now : 0;
			struct timeval tv = {.tv_sec = (time_t)(ms / 1000),
					     .tv_usec = (suseconds_t)(ms % 1000) * 1000};
			evtimer_add(id->tmo, &tv);
		}
	}
	sync_poll_ok(id);
	bool want = iw_conn_wants_read(&id->conn) && !id->rd_paused;
	if (want != id->rd_on && id->rd) {
		id->rd_on = want;
		if (want)
			event_add(id->rd, NULL);
		else
			event_del(id->rd);
	}
	if (iw_conn_rx_starved(&id->conn))
		stall_arm(id);
}

static void free_event(struct event **ev)
{
	if (*ev) {
		event_free(*ev);
		*ev = NULL;
	}
}

/* Read and drop what the peer sent that nobody will read now: closing a
 * socket with unread octets makes the kernel reset the connection, which
 * discards our own octets still queued for the peer. Bounded: a peer that
 * keeps sending gets the reset. */
static void drain_rx(int fd)
{
	char buf[4096];
	for (int i = 0; i < 256 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		;
}

static void close_fd(struct iw_cm_id_int *id, bool abortive)
{
	iw_cm_conn_unhook(id);
	free_event(&id->redial);
	atomic_store(&id->poll_ok, false);
	if (id->fd >= 0) {
		/* A poller may be reading (rxlock held): it finishes first. */
		pthread_mutex_lock(&id->rxlock);
		/* An application thread may be in write_loop (iw_cm_conn_tx,
		 * txlock held, iovecs pointing into the transmit queue): let it
		 * finish, and let the next one see no socket, before the fd is
		 * closed (and its number reused) and the caller discards the
		 * transmit queue (iw_conn_closed). */
		pthread_mutex_lock(&id->txlock);
		int fd = id->fd;
		id->fd = -1;
		struct iw_trace_conn *tc = id->trace;
		id->trace = NULL;
		pthread_mutex_unlock(&id->txlock);
		pthread_mutex_unlock(&id->rxlock);
		/* After the fd: a post that lists the id from now on finds it
		 * closed, and a poller writing it (held list) is done. */
		iw_cm_batch_forget(id);
		if (abortive) {
			/* RST instead of FIN: the peer learns at once. */
			struct linger l = {.l_onoff = 1, .l_linger = 0};
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		} else {
			drain_rx(fd);
		}
		close(fd);
		iw_trace_conn_end(tc, abortive);
	}
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
static void trace_start(struct iw_cm_id_int *id, uint32_t mss)
{
	struct iw_trace *t = id->pub.context->trace;
	if (!t)
		return;
	struct iw_trace_conn *tc =
		iw_trace_conn_new(t, (const struct sockaddr *)&id->pub.local_addr,
				  (const struct sockaddr *)&id->pub.peer_addr, id->conn.initiator,
				  mss);
	pthread_mutex_lock(&id->txlock);
	id->trace = tc;
	pthread_mutex_unlock(&id->txlock);
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

/* One write of the queue's iovecs. A single piece (a small message
 * framed whole in the header area, as every FPDU of a ping-pong is) goes
 * out with send(2): sendmsg's copies of the msghdr and the iovec cost
 * about 0.15 us a call more on the machine of the README's tables, 3 %
 * of a 64-octet ping-pong's half round trip. */
static ssize_t sock_write(struct iw_cm_id_int *id, struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
	if (id->trace)
		return sendmsg_traced(id, &m);
	if (n == 1)
		return send(id->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
	return sendmsg(id->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* After write number w (txlock held): the MSS may have moved. TCP caps
 * it at half the largest window the peer offered, so on loopback it is
 * 32741 at first and 65483 once the window grew (twice the FPDUs, twice
 * the reads at the receiver, if it stayed); a path MTU change lowers it.
 * Looked at often in the first writes, then every 1024th (a system call). */
static void mss_look(struct iw_cm_id_int *id, unsigned w)
{
	if ((w & (w - 1)) && w % 1024)
		return;
	uint32_t mss = live_mss(id->fd);
	iw_conn_mss(&id->conn, mss);
	if (id->trace && mss)
		iw_trace_conn_mss(id->trace, mss);
}

/* 0: all written; 1: the socket is full; -errno: the connection failed.
 * Events from what was written (a Reply out) are added to *ev. */
static int write_loop(struct iw_cm_id_int *id, unsigned *ev)
{
	struct iovec iov[IW_TX_IOV];
	/* Before the queue is taken: what a post held until now goes out
	 * with this write (cm_batch.c). */
	if (atomic_load_explicit(&id->held, memory_order_relaxed))
		atomic_store(&id->held, false);
	int n = iw_conn_tx_iov(&id->conn, iov, IW_TX_IOV);
	while (n > 0) {
		ssize_t w = sock_write(id, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -sock_err(id, errno);
		}
		/* txlock serialises the writers: no locked add needed. */
		unsigned nw = atomic_load_explicit(&id->tx_writes, memory_order_relaxed) + 1;
		atomic_store_explicit(&id->tx_writes, nw, memory_order_relaxed);
		mss_look(id, nw);
		n = iw_conn_tx_sent_iov(&id->conn, (size_t)w, iov, IW_TX_IOV, ev);
	}
	return n;
}

/* Write from whichever thread gets the lock; a thread that finds it taken
 * leaves tx_req set, and the holder loops until no request is left, so no
 * posted work is stranded. 0: nothing left (or the holder will see it);
 * 1: the socket is full; -errno: the connection failed. */
static int tx_drive(struct iw_cm_id_int *id, unsigned *ev)
{
	atomic_store(&id->tx_req, 1);
	while (atomic_load(&id->tx_req)) {
		if (pthread_mutex_trylock(&id->txlock))
			return 0;
		atomic_store(&id->tx_req, 0);
		int rc = id->fd >= 0 ? write_loop(id, ev) : 0;
		atomic_store_explicit(&id->tx_full, rc == 1, memory_order_relaxed);
		pthread_mutex_unlock(&id->txlock);
		if (rc)
			return rc;
	}
	return 0;
}

/* The socket is full and something is still queued: the loop must wait
 * for room (its write event), unless it already waits or was asked to.
 * A busy poller, which writes again at each visit anyway, then costs
 * the loop one wake-up per full socket instead of one per poll: on two
 * cores those wake-ups took the CPU the peer's receiver needed. */
static void tx_full_kick(struct iw_cm_id_int *id)
{
	if (atomic_exchange(&id->tx_wait, true))
		return;
	atomic_fetch_add_explicit(&id->dbg_tx_kicks, 1, memory_order_relaxed);
	iw_cm_want_work(id);
}

/* An application thread posted work (the QP's wake hook). Only the data
 * phase's octets may be written from here: the MPA frames are the loop's. */
void iw_cm_conn_tx(struct iw_cm_id_int *id)
{
	unsigned ev = 0;
	if (!iw_conn_tx_shared(&id->conn)) {
		iw_cm_want_work(id);
		return;
	}
	/* An error or a QP in ERR (close), or a receive posted for a
	 * starved connection: the loop thread acts on it (and reads again). */
	int rc = tx_drive(id, &ev);
	if ((rc && rc != 1) || ev || iw_conn_wants_loop(&id->conn) ||
	    iw_conn_rx_starved(&id->conn))
		iw_cm_want_work(id);
	else if (rc == 1)
		tx_full_kick(id);
}

/* Write what is queued, then let the connection look at the engine
 * (sending the RTR raises ESTABLISHED). Loop thread. */
static unsigned flush(struct iw_cm_id_int *id)
{
	unsigned ev = 0;
	/* Cleared before writing: a thread that meets a full socket after
	 * this (while this flush found the lock taken, say) wakes the loop
	 * again, so the wait is never left to nobody. */
	atomic_store(&id->tx_wait, false);
	int rc = id->fd >= 0 ? tx_drive(id, &ev) : 0;
	if (rc == 1 && id->wr) {
		atomic_store(&id->tx_wait, true);
		event_add(id->wr, NULL);
	}
	if (rc < 0 && !iw_conn_tx_shared(&id->conn))
		return ev | iw_conn_io_error(&id->conn, -rc);
	return ev | iw_conn_step(&id->conn, rc < 0 ? -rc : 0);
}

/* ------------------------------------------------------------ events */

/* The CONNECT_REQUEST of an accepted connection (NULL: out of memory). */
static struct iw_cm_event *request_event(struct iw_cm_id_int *id)
{
	const struct iw_mpa_hs *hs = &id->conn.hs;
	struct iw_cm_event *ev = iw_cm_event_new(id, IW_CM_EVENT_CONNECT_REQUEST, 0);
	if (!ev)
		return NULL;
	ev->param.responder_resources = (uint8_t)(hs->peer.ird > 255 ? 255 : hs->peer.ird);
	ev->param.initiator_depth = (uint8_t)(hs->peer.ord > 255 ? 255 : hs->peer.ord);
	ev->mpa_rev = hs->peer.rev;
	ev->crc = (hs->peer.flags & IW_MPA_FLAG_C) != 0;
	ev->markers_tx = (hs->peer.flags & IW_MPA_FLAG_M) != 0;
	iw_cm_event_set_pd(ev, hs->peer.pd, hs->peer.pd_len);
	return ev;
}

/* False when the event could not be made: the id is dropped instead.
 * True also when the id went to another loop (cm_spread.c), which raises
 * the event there. */
static bool raise_request(struct iw_cm_id_int *id, bool *moved)
{
	struct iw_cm_event *ev = request_event(id);
	if (!ev)
		return false;
	*moved = iw_cm_spread_handoff(id, ev);
	if (*moved)
		return true;
	/* The application sees the id from here on: it no longer belongs to
	 * the listener. */
	ev->listen_id = id->listener ? &id->listener->pub : NULL;
	if (id->listener)
		id->listener->lstats.requests++;
	iw_cm_child_unlink(id);
	iw_cm_event_queue(id, ev);
	return true;
}

static void raise_why(struct iw_cm_id_int *id, enum iw_cm_event_type type)
{
	const struct iw_conn_why *w = &id->conn.why;
	struct iw_cm_event *ev = iw_cm_event_new(id, type, w->status);
	if (!ev)
		return;
	ev->wire_err = w->wire_err;
	/* The handshake's 0 means none: MPA failures are never RDMAP's. */
	ev->term = w->term ? w->term : IW_TERM_NONE;
	ev->reason = w->reason;
	iw_cm_event_queue(id, ev);
}

static void raise_pd(struct iw_cm_id_int *id, enum iw_cm_event_type type, int status,
		     const uint8_t *pd, uint16_t len)
{
	struct iw_cm_event *ev = iw_cm_event_new(id, type, status);
	if (!ev)
		return;
	iw_cm_event_set_pd(ev, pd, len);
	iw_cm_event_queue(id, ev);
}

/* The application's events, in the order they happened. */
static void raise_events(struct iw_cm_id_int *id, unsigned ev)
{
	struct iw_conn *c = &id->conn;
	if (ev & IW_CONN_EV_ESTABLISHED)
		raise_pd(id, IW_CM_EVENT_ESTABLISHED, 0, c->peer_pd, c->peer_pd_len);
	if (ev & IW_CONN_EV_REJECTED)
		raise_pd(id, IW_CM_EVENT_REJECTED, c->why.status, c->hs.peer.pd,
			 c->hs.peer.pd_len);
	if (ev & IW_CONN_EV_CONNECT_ERROR)
		raise_why(id, IW_CM_EVENT_CONNECT_ERROR);
	if (ev & IW_CONN_EV_UNREACHABLE)
		raise_why(id, IW_CM_EVENT_UNREACHABLE);
	if (ev & IW_CONN_EV_DISCONNECTED)
		iw_cm_raise(id, IW_CM_EVENT_DISCONNECTED, c->why.status);
}

/* An incoming connection the application never saw is gone: its
 * listener counts why (iw_cm_listener_stats). */
static void count_drop(struct iw_cm_id_int *id)
{
	struct iw_cm_listener_stats *st = id->listener ? &id->listener->lstats : NULL;
	if (!st)
		return;
	switch (id->conn.why.status) {
	case ETIMEDOUT:
		st->timed_out++;
		break;
	case ECONNRESET:
		st->rejected_gone++;
		break;
	case EPROTO:
	case EINVAL:
		st->rejected_bad++;
		break;
	default:
		break; /* dropped by us (listener destroyed, out of memory) */
	}
}

#define OUTPUT (IW_CONN_EV_SEND | IW_CONN_EV_SHUTDOWN)

/* Act on what a connection call returned, in conn.h's order. The id is
 * gone afterwards when it was dropped. */
static void act(struct iw_cm_id_int *id, unsigned ev)
{
	unsigned todo = ev & OUTPUT;
	ev &= ~OUTPUT;
	/* Writing may cause more (a Reply out starts the QP, which has its
	 * RTR to send); a few rounds settle it. */
	for (int round = 0; todo && round < 8; round++) {
		unsigned more = 0;
		if ((todo & IW_CONN_EV_SEND) && id->fd >= 0)
			more = flush(id);
		if ((todo & IW_CONN_EV_SHUTDOWN) && id->fd >= 0) {
			shutdown(id->fd, SHUT_WR);
			if (id->trace)
				iw_trace_fin(id->trace, IW_TRACE_TX);
		}
		todo = more & OUTPUT;
		ev |= more & ~OUTPUT;
	}
	if (ev & IW_CONN_EV_CLOSE) {
		close_fd(id, iw_conn_close_abortive(&id->conn));
		iw_conn_closed(&id->conn);
	}
	bool moved = false;
	if ((ev & IW_CONN_EV_REQUEST) && !raise_request(id, &moved)) {
		act(id, iw_conn_abort(&id->conn) | IW_CONN_EV_DROPPED);
		return;
	}
	if (moved)
		return; /* nothing else comes with a Request */
	/* Before ESTABLISHED is raised: a thread that polls as soon as it
	 * sees the event must find the connection open to it. */
	sync_poll_ok(id);
	raise_events(id, ev);
	if (ev & IW_CONN_EV_DROPPED) {
		count_drop(id);
		iw_cm_id_release(id);
		return;
	}
	sync_events(id);
}

void iw_cm_conn_unhook(struct iw_cm_id_int *id)
{
	free_event(&id->rd);
	free_event(&id->wr);
	free_event(&id->tmo);
	free_event(&id->pause);
	free_event(&id->stall);
	iw_cm_batch_unhook(id);
	id->rd_on = false;
	id->rd_paused = false;
	id->rd_pause_ms = 0;
	id->tmo_at = UINT64_MAX;
	atomic_store(&id->tx_wait, false);
}

/* A connection handed to this loop: its events here, then its
 * CONNECT_REQUEST. */
static void adopt(struct iw_cm_id_int *id)
{
	struct iw_cm_event *req = id->handoff;
	id->handoff = NULL;
	if (ensure_events(id)) {
		iw_cm_event_discard(req);
		act(id, iw_conn_abort(&id->conn) | IW_CONN_EV_DROPPED);
		return;
	}
	iw_cm_spread_deliver(id, req);
	sync_events(id);
}

void iw_cm_conn_work(struct iw_cm_id_int *id)
{
	if (id->handoff) {
		adopt(id);
		return;
	}
	handback(id);
	/* A poller met the end of the stream or an error: read it here. */
	if (atomic_exchange(&id->rx_kick, false) && id->fd >= 0) {
		id->rd_paused = false;
		loop_rx(id, true);
		return;
	}
	act(id, IW_CONN_EV_SEND);
}

/* ------------------------------------------------------------ receive */

/* Where a read lands: the loop's bounce buffer, or a poller's. A poller
 * uses the iw_conn_poll_* calls and leaves the end of the stream and
 * errors to the loop. */
struct rx_buf {
	uint8_t *p;
	size_t cap;
	bool poller;
	/* Out: the last read took less than it offered room for, so the
	 * socket is (most likely) empty: another read would cost a system
	 * call to learn EAGAIN, on the latency path of a ping-pong. The
	 * level-triggered event (or the next poll) finds what comes later. */
	bool drained;
};

/* The end of the stream or a socket error (err 0: EOF). A poller only
 * records the error and has the loop read the end itself (rx_kick). */
static unsigned rx_end(struct iw_cm_id_int *id, const struct rx_buf *b, int err)
{
	if (b->poller) {
		sock_err(id, err);
		atomic_store(&id->rx_kick, true);
		return IW_CONN_EV_LOOP;
	}
	if (err)
		return iw_conn_io_error(&id->conn, sock_err(id, err));
	if (id->trace)
		iw_trace_fin(id->trace, IW_TRACE_RX);
	/* A write (or a poller's read) already met the error that ended the
	 * stream. */
	int e = sock_err(id, 0);
	return e ? iw_conn_io_error(&id->conn, e) : iw_conn_eof(&id->conn);
}

/* A counter only its reader (rxlock held) writes: no locked add. */
static void bump(atomic_uint *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* For tests: a poller's reads, and those that took octets of a guessed
 * segment (past the current payload, its trailer and the next header). */
static void poll_count(struct iw_cm_id_int *id, const struct iw_conn_rxp *p, size_t n)
{
	bump(&id->dbg_poll_reads);
	if (p->num_spec && n > p->direct + p->iov[1].iov_len)
		bump(&id->dbg_poll_ahead);
}

/* One read (rxlock held); returns the connection's events, *n octets
 * read, 0 at EOF, -1 EAGAIN, -2 error. */
static unsigned rx_once(struct iw_cm_id_int *id, struct rx_buf *b, ssize_t *out_n)
{
	struct iw_conn_rxp p;
	iw_conn_rx_plan_iov(&id->conn, &p, b->p, b->cap, b->poller, IW_POLL_DIRECT_MIN);
	ssize_t n;
	if (!p.iovcnt) {
		/* The receive hold is full: the octets wait in the socket
		 * (and TCP's window fills) until a receive is posted. */
		*out_n = -1;
		return 0;
	}
	if (p.iovcnt > 1 || p.direct)
		n = readv(id->fd, p.iov, p.iovcnt);
	else
		n = recv(id->fd, p.iov[0].iov_base, p.iov[0].iov_len, MSG_DONTWAIT);
	*out_n = n;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
			*out_n = -1;
			return 0;
		}
		*out_n = -2;
		return rx_end(id, b, errno);
	}
	if (n == 0)
		return rx_end(id, b, 0);
	/* rxlock serialises the readers. A post after this answers it. */
	bump(&id->rx_seq);
	b->drained = (size_t)n < p.total;
	/* In stream order, as read. Taken before the engine sees them (a
	 * completed receive's buffer is the application's again). */
	if (id->trace)
		iw_trace_data(id->trace, IW_TRACE_RX, p.iov, p.iovcnt, (size_t)n);
	if (b->poller)
		poll_count(id, &p, (size_t)n);
	return iw_conn_rx_feed(&id->conn, &p, (size_t)n);
}

uint32_t iw_cm_pause_next(uint32_t ms)
{
	return ms >= IW_POLL_PAUSE_MAX_MS / 2 ? IW_POLL_PAUSE_MAX_MS : ms ? 2 * ms : 1;
}

/* Pollers drive this connection: stop waking for its octets, look again
 * in ms (on_pause). */
static void rd_pause(struct iw_cm_id_int *id, uint32_t ms)
{
	struct timeval tv = {.tv_sec = (time_t)(ms / 1000),
			     .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	id->rd_pause_ms = ms;
	id->rd_paused = true;
	evtimer_add(id->pause, &tv);
	sync_events(id);
}

/* The loop reads again (octets that arrived meanwhile raise the
 * level-triggered event at once). */
static void rd_resume(struct iw_cm_id_int *id)
{
	id->rd_paused = false;
	id->rd_pause_ms = 0;
	if (id->pause)
		evtimer_del(id->pause);
	sync_events(id);
}

/* The loop's reads (CM lock held). wait: take receive ownership even if a
 * poller holds it now (it never waits for the loop, so this ends). */
static void loop_rx(struct iw_cm_id_int *id, bool wait)
{
	if (wait)
		pthread_mutex_lock(&id->rxlock);
	else if (pthread_mutex_trylock(&id->rxlock)) {
		rd_pause(id, id->conn.tune.poll_pause_ms); /* a poller is reading */
		return;
	}
	size_t cap;
	uint8_t *p = iw_ev_bounce(id->ev, &cap);
	struct rx_buf b = {.p = p, .cap = cap, .poller = false};
	unsigned ev = 0;
	for (int i = 0; i < IW_RX_BUDGET && id->fd >= 0 && iw_conn_wants_read(&id->conn); i++) {
		ssize_t n;
		ev |= rx_once(id, &b, &n);
		if (n <= 0 || b.drained || (ev & (IW_CONN_EV_CLOSE | IW_CONN_EV_REQUEST)))
			break;
	}
	pthread_mutex_unlock(&id->rxlock); /* act may close the socket */
	act(id, ev | IW_CONN_EV_SEND);
}

/* Loop thread. A poller visited (claimed) since the last look, or, with
 * cq, polled a CQ this connection completes into: a poller whose polls
 * all find completions visits nothing, yet it is there. Without that
 * second test a loop that once won the race (woken on another core, or
 * preempting the sender on its own) read every later message too: it
 * completed each receive before the poller looked, so the poller never
 * visited and never claimed, and the loop woke once per message. */
static bool pollers_active(struct iw_cm_id_int *id, bool cq)
{
	if (!atomic_load(&id->poll_ok))
		return false;
	bool claimed = atomic_exchange(&id->polled, false);
	struct iw_qp *qp = id->conn.qp;
	bool fed = qp && iw_qp_feed_polled(qp, id->cq_seen);
	return claimed || (cq && fed);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_ev *ev = id->ev;
	(void)fd;
	(void)what;
	iw_ev_enter(ev);
	if (pollers_active(id, true))
		rd_pause(id, id->conn.tune.poll_pause_ms);
	else
		loop_rx(id, false);
	iw_ev_leave(ev);
}

/* Still polled: stay paused, for longer (a connection polled for long
 * costs the loop a few wake-ups a second, not one a millisecond);
 * otherwise the loop reads again. */
static void on_pause(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_ev *ev = id->ev;
	(void)fd;
	(void)what;
	iw_ev_enter(ev);
	atomic_fetch_add_explicit(&id->dbg_pause_wakes, 1, memory_order_relaxed);
	if (pollers_active(id, true))
		rd_pause(id, iw_cm_pause_next(id->rd_pause_ms));
	else
		rd_resume(id);
	iw_ev_leave(ev);
}

/* The loop's side of iw_cm_conn_handback. A poller that kept polling
 * since (through a CQ nobody armed) keeps the connection; the polls
 * counted before the arming do not (the thread that armed will sleep). */
static void handback(struct iw_cm_id_int *id)
{
	if (!atomic_exchange(&id->handback, false))
		return;
	if (id->rd_paused && !pollers_active(id, false)) {
		atomic_fetch_add_explicit(&id->dbg_handbacks, 1, memory_order_relaxed);
		rd_resume(id);
	}
}

/* ------------------------------------------------------------ polling */

/* A large message is being placed and the engine guessed where its next
 * segments go: read them ahead through one of the context's buffers (the
 * stack buffer is too small for the gather area). With markers, every
 * read goes through a buffer: the large one, as the loop's. Small
 * messages without markers never get here: a ping-pong keeps one recv
 * per message into the stack. */
static struct iw_poll_buf *poll_big(struct iw_cm_id_int *id, struct rx_buf *b)
{
	if (!iw_conn_rx_bulk(&id->conn))
		return NULL;
	struct iw_poll_buf *big = iw_poll_buf_take(id->pub.context->poll_bufs);
	if (big) {
		b->p = big->p;
		b->cap = big->len;
	}
	return big;
}

/* A poller's reads (rxlock held): how many moved octets. */
static unsigned poll_rx(struct iw_cm_id_int *id, unsigned *ev)
{
	uint8_t bounce[IW_POLL_BOUNCE];
	struct rx_buf b = {.p = bounce, .cap = sizeof(bounce), .poller = true};
	struct iw_poll_buf *big = NULL;
	unsigned got = 0;
	for (int i = 0; i < IW_POLL_BUDGET; i++) {
		if (!big)
			big = poll_big(id, &b);
		ssize_t n;
		*ev |= rx_once(id, &b, &n);
		if (n <= 0)
			break;
		got++;
		if (b.drained || (*ev & IW_CONN_EV_LOOP))
			break;
	}
	if (big) /* without markers, no call on a ping-pong's path */
		iw_poll_buf_give(big);
	return got;
}

/* A poller's visit (claim: keep the loop off the socket while it polls).
 * Skips a connection another thread is reading. */
static unsigned poll_conn(struct iw_qp *qp, bool claim)
{
	struct iw_cm_id_int *id = iw_qp_glue(qp);
	if (!id || !atomic_load_explicit(&id->poll_ok, memory_order_acquire))
		return 0;
	if (claim)
		atomic_store_explicit(&id->polled, true, memory_order_relaxed);
	if (pthread_mutex_trylock(&id->rxlock))
		return 0;
	unsigned ev = 0, got = 0;
	if (id->fd >= 0 && atomic_load(&id->poll_ok))
		got = poll_rx(id, &ev);
	pthread_mutex_unlock(&id->rxlock);
	/* A poller also writes what a full socket left queued: its thread
	 * need not wait for the loop's write event. */
	if ((ev & IW_CONN_EV_SEND) || atomic_load_explicit(&id->tx_full, memory_order_relaxed))
		iw_cm_conn_tx(id);
	if (ev & IW_CONN_EV_LOOP)
		iw_cm_want_work(id);
	return got;
}

/* Called by the engine's poll-set walk, whose barrier keeps the id alive
 * (iw_qp_set_glue). */
unsigned iw_cm_conn_poll(struct iw_qp *qp)
{
	return poll_conn(qp, true);
}

unsigned iw_cm_conn_poll_armed(struct iw_qp *qp)
{
	return poll_conn(qp, false);
}

unsigned iw_cm_conn_poll_other(struct iw_qp *qp)
{
	struct iw_cm_id_int *id = iw_qp_glue(qp);
	if (!id || atomic_load_explicit(&id->polled, memory_order_relaxed))
		return 0;
	return poll_conn(qp, false);
}

/* The thread will sleep until the armed CQ fires, and only a read can
 * fire it: waiting for the loop's pause to end cost 1-2 ms per sleep. */
unsigned iw_cm_conn_handback(struct iw_qp *qp)
{
	struct iw_cm_id_int *id = iw_qp_glue(qp);
	if (!id || !atomic_load_explicit(&id->poll_ok, memory_order_acquire))
		return 0;
	atomic_store(&id->polled, false);
	if (atomic_load(&id->rd_paused) && !atomic_exchange(&id->handback, true))
		iw_cm_want_work(id);
	return 0;
}

/* ------------------------------------------------------------ write, timer */

static void connected(struct iw_cm_id_int *id)
{
	int err = 0;
	socklen_t l = sizeof(err);
	getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err) {
		dial_failed(id, err);
		return;
	}
	uint32_t mss = live_mss(id->fd);
	fill_addrs(id);
	trace_start(id, mss);
	act(id, iw_conn_tcp_up(&id->conn, mss));
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_ev *ev = id->ev;
	(void)fd;
	(void)what;
	iw_ev_enter(ev);
	if (id->conn.state == IW_CONN_CONNECTING)
		connected(id);
	else
		act(id, IW_CONN_EV_SEND);
	iw_ev_leave(ev);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	struct iw_ev *ev = id->ev;
	(void)fd;
	(void)what;
	iw_ev_enter(ev);
	id->tmo_at = UINT64_MAX; /* fired: not armed any more */
	act(id, iw_conn_on_timer(&id->conn, now_ms()));
	iw_ev_leave(ev);
}

/* ------------------------------------------------------------ listen */

/* max_pending handshakes wait: reset the one that has waited longest, not
 * the newcomer. A well-behaved peer sends its Request within a round trip
 * of connecting, so the oldest is the silent or slow one; refusing the
 * newcomer instead let a few slow peers, reconnecting as they are timed
 * out, keep every other peer out (issue 13). */
static void make_room(struct iw_cm_id_int *l)
{
	struct iw_cm_id_int *old = l->child_oldest;
	l->lstats.rejected_full++;
	act(old, iw_conn_abort(&old->conn) | IW_CONN_EV_DROPPED);
}

static void accept_one(struct iw_cm_id_int *l, int fd)
{
	l->lstats.accepted++;
	if (l->num_children >= l->conn.tune.max_pending && l->child_oldest)
		make_room(l);
	void *user = __atomic_load_n(&l->pub.user_context, __ATOMIC_ACQUIRE); /* iw_cm_set_context */
	struct iw_cm_id_int *id = iw_cm_id_alloc(l->ch, l->ev, user);
	if (!id) {
		close(fd);
		return;
	}
	id->fd = fd;
	id->conn.opts = l->conn.opts;
	id->conn.tune = l->conn.tune;
	id->lcount = iw_cm_lcount_get(l->lcount);
	iw_cm_child_link(l, id);
	if (sock_setup(fd, &id->conn.tune) || ensure_events(id)) {
		act(id, iw_conn_abort(&id->conn) | IW_CONN_EV_DROPPED);
		return;
	}
	uint32_t mss = live_mss(fd);
	fill_addrs(id);
	trace_start(id, mss);
	act(id, iw_conn_tcp_up(&id->conn, mss));
}

/* Out of descriptors (or memory): the pending connection stays in the
 * kernel's queue and the level-triggered event would fire again at once.
 * Stop accepting for a while, longer while it lasts (issue 16 bug 1). */
static void accept_pause(struct iw_cm_id_int *l, int err)
{
	l->lstats.accept_errors++;
	l->lstats.last_accept_error = err;
	l->lstats.accept_pauses++;
	l->pause_ms = l->pause_ms ? (l->pause_ms < 1600 ? l->pause_ms * 2 : 1600) : 100;
	event_del(l->rd);
	struct timeval tv = {.tv_sec = l->pause_ms / 1000, .tv_usec = (l->pause_ms % 1000) * 1000};
	evtimer_add(l->tmo, &tv);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *l = arg;
	(void)fd;
	(void)what;
	iw_ev_enter(l->ev);
	if (l->rd)
		event_add(l->rd, NULL);
	iw_ev_leave(l->ev);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct iw_cm_id_int *l = arg;
	struct iw_ev *ev = l->ev;
	(void)what;
	iw_ev_enter(ev);
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				accept_pause(l, errno);
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		l->pause_ms = 0;
		accept_one(l, fd);
	}
	iw_ev_leave(ev);
}

/* A socket listening on id's address: one parked there (cm_park.c), with
 * the connections it queued, or a new one. 0 or an errno. */
static int listen_sock(struct iw_cm_id_int *id, int *out)
{
	const struct sockaddr *a = (const struct sockaddr *)&id->pub.local_addr;
	socklen_t al = a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						 : sizeof(struct sockaddr_in);
	int fd = iw_cm_unpark(id);
	bool parked = fd >= 0; /* bound and listening already */
	if (!parked)
		fd = socket(a->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sock_bufs(fd, &id->conn.tune) || (!parked && bind(fd, a, al)) ||
	    listen(fd, id->backlog > 0 ? id->backlog : SOMAXCONN)) {
		int e = errno;
		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

int iw_cm_conn_listen(struct iw_cm_id_int *id)
{
	if (!id->lcount && !(id->lcount = iw_cm_lcount_new(id->pub.context->alloc)))
		return ENOMEM;
	id->lcount->listener = id; /* nobody else holds it yet */
	int fd = -1, rc = listen_sock(id, &fd);
	if (rc)
		return rc;
	id->fd = fd;
	socklen_t l = sizeof(id->pub.local_addr);
	getsockname(fd, (struct sockaddr *)&id->pub.local_addr, &l);
	id->rd = event_new(base_of(id), fd, EV_READ | EV_PERSIST, on_accept, id);
	id->tmo = evtimer_new(base_of(id), on_accept_resume, id);
	if (!id->rd || !id->tmo || event_add(id->rd, NULL)) {
		close_fd(id, false);
		return ENOMEM;
	}
	iw_conn_listen(&id->conn);
	return 0;
}

/* ------------------------------------------------------------ connect */

static int sock_bind(int fd, const struct sockaddr *la)
{
	return bind(fd, la, la->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						       : sizeof(struct sockaddr_in));
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* A socket connecting to id->pub.peer_addr. 0 (a connect that fails at
 * once is reported like a later failure), or an errno with no socket. */
static int dial(struct iw_cm_id_int *id)
{
	const struct sockaddr *dst = (const struct sockaddr *)&id->pub.peer_addr;
	int fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	id->fd = fd;
	iw_cm_batch_reopen(id);
	int rc = sock_setup(fd, &id->conn.tune) ? errno : ensure_events(id);
	if (!rc && id->bound && sock_bind(fd, (const struct sockaddr *)&id->pub.local_addr))
		rc = errno;
	if (rc) {
		close_fd(id, false);
		return rc;
	}
	if (connect(fd, dst, sa_len(dst)) && errno != EINPROGRESS) {
		dial_failed(id, errno);
		return 0;
	}
	event_add(id->wr, NULL);
	sync_events(id);
	return 0;
}

static void on_redial(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id_int *id = arg;
	(void)fd;
	(void)what;
	iw_ev_enter(id->ev);
	free_event(&id->redial);
	int rc = id->conn.state == IW_CONN_CONNECTING ? dial(id) : 0;
	if (rc)
		act(id, iw_conn_io_error(&id->conn, rc));
	iw_ev_leave(id->ev);
}

/* The dial failed. A refusal within refused_retry_ms of iw_cm_connect
 * closes the socket and dials again IW_REFUSED_REDIAL_MS later (the
 * connect deadline still runs: the next dial re-arms its timer); anything
 * else, or the window spent, fails the connection. */
static void dial_failed(struct iw_cm_id_int *id, int err)
{
	uint64_t now = now_ms();
	if (err == ECONNREFUSED &&
	    now + IW_REFUSED_REDIAL_MS < id->dial_at + id->conn.tune.refused_retry_ms) {
		close_fd(id, false);
		struct timeval tv = {.tv_sec = 0, .tv_usec = IW_REFUSED_REDIAL_MS * 1000};
		id->redial = evtimer_new(base_of(id), on_redial, id);
		if (id->redial && evtimer_add(id->redial, &tv) == 0)
			return;
		free_event(&id->redial);
	}
	act(id, iw_conn_io_error(&id->conn, err));
}

int iw_cm_conn_connect(struct iw_cm_id_int *id, const struct sockaddr *dst)
{
	/* Build the Request now so that bad options or private data fail
	 * this call rather than a CONNECT_ERROR later. */
	int rc = iw_conn_connect(&id->conn, id->qp, id->ird, id->ord, id->pd, id->pd_len,
				 id->connect_timeout_ms);
	if (rc)
		return -rc;
	memcpy(&id->pub.peer_addr, dst, sa_len(dst));
	id->dial_at = now_ms();
	rc = dial(id);
	if (rc)
		iw_conn_abort(&id->conn);
	return rc;
}

/* ------------------------------------------------------------ accept */

int iw_cm_conn_accept(struct iw_cm_id_int *id)
{
	unsigned ev = 0;
	/* The application may have changed the options it copied from the
	 * listener since the socket was accepted. */
	if (id->fd >= 0 && sock_setup(id->fd, &id->conn.tune))
		return errno;
	int rc = iw_conn_accept(&id->conn, id->qp, id->ird, id->ord, id->pd, id->pd_len, &ev);
	if (rc)
		return -rc;
	act(id, ev);
	return 0;
}

int iw_cm_conn_reject(struct iw_cm_id_int *id, const void *pd, uint16_t len)
{
	unsigned ev = 0;
	int rc = iw_conn_reject(&id->conn, pd, len, &ev);
	if (rc)
		return -rc;
	act(id, ev);
	return 0;
}

/* ------------------------------------------------------------ close */

int iw_cm_conn_disconnect(struct iw_cm_id_int *id)
{
	int rc = iw_conn_disconnect(&id->conn);
	if (rc)
		return -rc;
	act(id, IW_CONN_EV_SEND);
	return 0;
}

/* The id or its QP is destroyed. After a graceful disconnect whose FIN is
 * out, the socket is closed plainly: TCP still delivers the octets of the
 * WRs that completed (as the kernel's iw_cm lets a closing connection
 * finish when its id is destroyed), where a reset would drop those the
 * peer had not yet taken in (fio's client disconnects and destroys right
 * after its last completion). Any other connection is reset. */
void iw_cm_conn_abort(struct iw_cm_id_int *id)
{
	/* A listener takes the connections nobody has seen yet with it. */
	while (id->children) {
		struct iw_cm_id_int *ch = id->children;
		act(ch, iw_conn_abort(&ch->conn) | IW_CONN_EV_DROPPED);
	}
	/* A listener with relisten_ms leaves its socket parked for the next
	 * listener on its address (cm_park.c). */
	iw_cm_park(id);
	bool fin_out = iw_conn_fin_sent(&id->conn);
	iw_conn_abort(&id->conn);
	close_fd(id, !fin_out);
	iw_conn_closed(&id->conn);
}
