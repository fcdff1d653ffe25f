/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One iWARP connection as a sans-I/O state machine: TCP connect deadline,
 * the MPA exchange (mpa_hs.c), the hand-off to the QP engine, FPDUs both
 * ways, TERMINATE after a bad Reply, the siw wake-up Writes, close with FIN
 * and linger. It never touches a socket or a clock: the glue (lib/io/
 * cm_conn.c, a test pump, a fuzzer) feeds received octets, writes what
 * iw_conn_tx_iov hands out, reports what TCP took, passes the time in, and
 * acts on the events each call returns.
 *
 * Events (IW_CONN_EV_*, a bit mask) come back from the call that caused
 * them. The glue acts on them in this order: SEND (write what tx_iov has;
 * after an error too, as picotls flushes its send buffer: a TERMINATE may
 * be waiting), SHUTDOWN (send FIN), CLOSE (close the socket, abortive if
 * iw_conn_close_abortive, then iw_conn_closed), then the application's
 * events (REQUEST, ESTABLISHED, REJECTED, CONNECT_ERROR, UNREACHABLE,
 * DISCONNECTED with c->why), and DROPPED last (an incoming connection the
 * application never saw is over: free it).
 *
 * Time: milliseconds on any monotonic clock. After every call the glue asks
 * iw_conn_next_timeout(c, now) when to call iw_conn_on_timer(c, now).
 *
 * Threads: everything runs on one thread at a time (the loop thread, or a
 * thread that drives this connection's receive instead of it), except the
 * data phase's transmit: once iw_conn_tx_shared is true, iw_conn_tx_iov and
 * iw_conn_tx_sent may be called from any thread under the glue's transmit
 * lock, and iw_conn_wants_loop tells such a thread that the owner must look
 * (the QP went to ERR).
 */
#ifndef IW_CONN_H
#define IW_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "conn/mpa_hs.h"
#include "engine/qp_link.h"

enum iw_conn_state {
	IW_CONN_IDLE,
	IW_CONN_LISTEN,      /* a listener: no connection of its own */
	IW_CONN_CONNECTING,  /* initiator: TCP connect in progress */
	IW_CONN_MPA_REQ,     /* initiator: Request out, waiting for the Reply */
	IW_CONN_MPA_WAIT,    /* responder: waiting for the Request */
	IW_CONN_CONNREQ,     /* responder: CONNECT_REQUEST raised, application decides */
	IW_CONN_REPLYING,    /* responder: Reply being written */
	IW_CONN_REJECTING,   /* responder: Reject the application asked for being written */
	IW_CONN_REJECT_FAIL, /* responder: Reject forced by negotiation being written */
	IW_CONN_RTR_WAIT,    /* FPDUs flow; ESTABLISHED waits for the RTR rules */
	IW_CONN_RUNNING,     /* ESTABLISHED raised */
	IW_CONN_CLOSING,     /* QP in ERR: writing what is queued, then FIN */
	IW_CONN_FIN_SENT,    /* our FIN is out: waiting for the peer's, at most linger */
	IW_CONN_CLOSED,
};

enum {
	IW_CONN_EV_SEND = 1 << 0,          /* output waiting in iw_conn_tx_iov */
	IW_CONN_EV_SHUTDOWN = 1 << 1,      /* everything is written: send FIN */
	IW_CONN_EV_CLOSE = 1 << 2,         /* close the socket, then iw_conn_closed */
	IW_CONN_EV_REQUEST = 1 << 3,       /* responder: the Request is in (c->hs.peer) */
	IW_CONN_EV_ESTABLISHED = 1 << 4,   /* peer private data in c->peer_pd */
	IW_CONN_EV_REJECTED = 1 << 5,      /* initiator: the peer's Reject (c->hs.peer) */
	IW_CONN_EV_CONNECT_ERROR = 1 << 6, /* c->why */
	IW_CONN_EV_UNREACHABLE = 1 << 7,   /* c->why */
	IW_CONN_EV_DISCONNECTED = 1 << 8,  /* c->why */
	IW_CONN_EV_DROPPED = 1 << 9,       /* responder, never shown: free it (c->why: EPROTO
					    * bad Request, ECONNRESET peer gone, ETIMEDOUT) */
	IW_CONN_EV_LOOP = 1 << 10,         /* iw_conn_poll_recv: the owner must iw_conn_step */
};

/* Tuning (iw_conn_opts in cm.h), with the defaults of iw_conn_tune_default
 * (tune.c). The socket options are lib/io's to apply; 0 leaves the
 * kernel's default. */
struct iw_conn_tune {
	uint32_t linger_ms;     /* after our FIN (or a TERMINATE), wait this long for the peer */
	uint32_t wake_count;    /* siw wake-up Writes at most (iw_mpa_opts.wake_ms) */
	uint32_t direct_min;    /* receive payloads of at least this many octets in place */
	uint32_t max_pending;   /* listener: handshakes waiting for a Request at most */
	bool keepalive;         /* SO_KEEPALIVE, with the three below when not 0 */
	uint32_t keepalive_idle_s, keepalive_intvl_s, keepalive_cnt;
	uint32_t user_timeout_ms; /* TCP_USER_TIMEOUT */
	uint32_t sndbuf, rcvbuf;  /* SO_SNDBUF, SO_RCVBUF */
	uint32_t refused_retry_ms; /* initiator: dial again after a refusal this long */
	uint32_t relisten_ms;      /* listener: park its socket this long when destroyed */
	uint32_t recv_hold_msgs;   /* the QP's receive hold limits (0: its defaults) */
	uint64_t recv_hold_bytes;
	/* Transmit coalescing (lib/io/cm_batch.c): bound and window. */
	uint32_t tx_batch_msgs, tx_batch_bytes, tx_batch_us;
	/* Not an option: a polled connection's first read pause (lib/io), so
	 * that a test can take the pause timer out of the picture. */
	uint32_t poll_pause_ms;
};
void iw_conn_tune_default(struct iw_conn_tune *t);
/* Copy the fields of o named in o->comp_mask into t, after checking all of
 * them (nothing is copied when one is out of range). 0 or -EINVAL. */
int iw_conn_tune_set(struct iw_conn_tune *t, const struct iw_conn_opts *o);
/* Every field of t into o (comp_mask names them all). */
void iw_conn_tune_get(const struct iw_conn_tune *t, struct iw_conn_opts *o);

/* Why a connection ended or failed. */
struct iw_conn_why {
	int status;            /* positive errno, 0 for a clean end */
	enum iw_wire_err wire_err;
	uint16_t term;         /* TERMINATE triple from the MPA exchange, 0 if none */
	const char *reason;    /* static sentence, or NULL */
};

/* A deadline: armed relative to the next clock reading it sees. */
struct iw_conn_timer {
	uint64_t at;   /* absolute ms, 0: not resolved yet */
	uint32_t rel;
	bool armed;
};

enum iw_conn_qp_link { IW_CONN_QP_NONE, IW_CONN_QP_LIVE, IW_CONN_QP_LOST };

struct iw_conn {
	enum iw_conn_state state;
	bool initiator;
	const struct iw_qp_link_ops *ops;
	struct iw_qp *qp;
	enum iw_conn_qp_link link;
	atomic_bool tx_engine;      /* data phase: transmit comes from the QP */
	atomic_bool tx_stop;        /* closed: the QP's octets no longer go out */
	struct iw_mpa_opts opts;    /* the application's; copied into hs when it is built */
	struct iw_conn_tune tune;
	uint32_t mss;
	struct iw_mpa_hs hs;
	struct iw_mpa_result res;
	uint8_t peer_pd[IW_MPA_PD_MAX]; /* for ESTABLISHED */
	uint16_t peer_pd_len;
	/* A TERMINATE in FPDU form after a Reply we refuse. */
	uint8_t term[96];
	size_t term_len, term_off;
	struct iw_conn_timer t_state; /* connect, MPA or linger deadline */
	struct iw_conn_timer t_wake;
	uint32_t wake_ms;
	uint32_t wake_left;
	atomic_bool rx_any;         /* the peer sent something since the Reply */
	atomic_bool rx_starved;     /* the last read plan offered no room (rx_room) */
	/* Engine events a polling thread took and left to the owner (the
	 * next iw_conn_step acts on them). */
	atomic_uint deferred;
	atomic_bool tx_any;         /* we sent FPDUs */
	/* The receiving thread's plan for its next read, from the last
	 * receive batch (iw_qp_status.direct); before the first, ask. */
	struct {
		bool valid;
		size_t direct;
		uint8_t *dst;
		uint32_t seg_len;
		uint32_t tail; /* iw_qp_status.tail */
		/* The engine's read-ahead guesses after dst (rx_plan.c). */
		unsigned num_spec;
		struct iw_qp_rx_spec spec[IW_QP_RX_SPEC_MAX];
	} rx_next;
	/* Reads left, in small segments after one placed in place, that
	 * stop at the next header (RX_BIG_AFTER from each large segment;
	 * iw_conn_poll_plan). */
	uint8_t rx_big;
	/* The octets the last read plan offered (0: no plan), and whether
	 * the read after it took them all: the socket then most likely holds
	 * more, and small segments are read many per call (RX_BULK_SEG). */
	size_t rx_planned;
	bool rx_backlog;
	/* Read-ahead guesses found wrong (rx_plan.c): each one costs a copy
	 * of what was read after it. For tests and diagnostics. */
	uint64_t rx_spec_missed;
	bool close_abortive;
	struct iw_conn_why why;
};

/* IDLE, default options and tuning; ops NULL means iw_qp_link_ops. */
void iw_conn_init(struct iw_conn *c, const struct iw_qp_link_ops *ops);
void iw_conn_listen(struct iw_conn *c);
/* Initiator: build the Request (bad options or private data fail here:
 * -EINVAL, -EMSGSIZE) and wait for TCP (CONNECTING). */
int iw_conn_connect(struct iw_conn *c, struct iw_qp *qp, uint16_t ird, uint16_t ord,
		    const void *pd, uint16_t pd_len, uint32_t connect_timeout_ms);
/* TCP is up: mss is the live MSS (0: unknown). Initiator: the Request goes
 * out; responder: the wait for the Request starts. */
unsigned iw_conn_tcp_up(struct iw_conn *c, uint32_t mss);
/* Responder (after REQUEST): the Reply with the application's choices, or
 * a Reject when negotiation is impossible (CONNECT_ERROR once written).
 * 0 (*ev set) or -EINVAL (wrong state) / -EMSGSIZE (nothing changed). */
int iw_conn_accept(struct iw_conn *c, struct iw_qp *qp, uint16_t ird, uint16_t ord,
		   const void *pd, uint16_t pd_len, unsigned *ev);
int iw_conn_reject(struct iw_conn *c, const void *pd, uint16_t pd_len, unsigned *ev);
/* Graceful close: the QP goes to ERR; what is queued goes out, then FIN.
 * 0, or -ENOTCONN before the data phase. */
int iw_conn_disconnect(struct iw_conn *c);
/* Abortive close now, no application event (the id is being destroyed). */
unsigned iw_conn_abort(struct iw_conn *c);
/* The glue closed the socket (after CLOSE): the QP learns it. */
void iw_conn_closed(struct iw_conn *c);
static inline bool iw_conn_close_abortive(const struct iw_conn *c)
{
	return c->close_abortive;
}
/* A graceful disconnect has written everything and its FIN: every octet
 * of every completed WR is in the kernel's send queue. */
static inline bool iw_conn_fin_sent(const struct iw_conn *c)
{
	return c->state == IW_CONN_FIN_SENT;
}

/* Receive. Before reading, iw_conn_rx_plan says where: up to the returned
 * number of octets straight to *dst (0: none), and at most *cap octets
 * (in: the bounce buffer's size) into the bounce buffer after them. Then
 * iw_conn_recv_placed reports `placed` octets received at *dst followed by
 * len octets at in. iw_conn_recv is the same without direct placement. MPA
 * frames and FPDUs go through the same call: octets after the peer's Reply
 * are FPDUs, handed on in that call. *consumed is what was used: all of it,
 * except octets left unread in a state that takes none (CONNREQ). */
size_t iw_conn_rx_plan(struct iw_conn *c, uint8_t **dst, size_t *cap);
unsigned iw_conn_recv_placed(struct iw_conn *c, size_t placed, const uint8_t *in, size_t len,
			     size_t *consumed);
unsigned iw_conn_recv(struct iw_conn *c, const uint8_t *in, size_t len, size_t *consumed);
/* The peer's FIN, or a socket error (positive errno). */
unsigned iw_conn_eof(struct iw_conn *c);
unsigned iw_conn_io_error(struct iw_conn *c, int err);
/* False while the socket should not be read (CONNREQ, closed). */
bool iw_conn_wants_read(const struct iw_conn *c);
/* The receive hold is full: the connection reads nothing until a receive
 * is posted (the QP then wakes the glue, which must look again). */
static inline bool iw_conn_rx_starved(const struct iw_conn *c)
{
	return atomic_load_explicit(&c->rx_starved, memory_order_relaxed);
}

/* Run to completion: a thread other than the owner receives for a
 * connection the owner saw RUNNING (the glue makes sure only one thread
 * receives at a time, and that the owner has not closed it). These two
 * read and write no connection state: the engine's events that need the
 * state machine (ESTABLISHED, ERROR) are kept for the owner's next
 * iw_conn_step and reported as IW_CONN_EV_LOOP; IW_CONN_EV_SEND means the
 * QP has octets to write (any thread may, as for posted work). */
/* direct_min: place in place from this many octets (at least
 * tune.direct_min): a poller may rather copy more than take a second
 * system call per message. */
size_t iw_conn_poll_plan(struct iw_conn *c, uint8_t **dst, size_t *cap, uint32_t direct_min);
unsigned iw_conn_poll_recv(struct iw_conn *c, size_t placed, const uint8_t *in, size_t len);

/* Whether the next read may take further segments of a large message
 * ahead (the engine guessed where they go): a reader whose buffer is too
 * small for that (a poller's stack buffer) may take a larger one now. */
static inline bool iw_conn_rx_ahead(const struct iw_conn *c)
{
	return c->rx_next.valid && c->rx_next.direct && c->rx_next.num_spec;
}

/* Whether a poller's read goes further with a large buffer than with its
 * stack buffer: a large message read ahead, or markers, with which every
 * payload goes through the buffer (iw_conn_poll_plan). Reads of 16 KiB
 * while the peer sends 64 KiB segments cost the receiver four system
 * calls for one, and the sender a window update for each. */
static inline bool iw_conn_rx_bulk(const struct iw_conn *c)
{
	return iw_conn_rx_ahead(c) || c->res.markers_rx;
}

/* One read in iovecs (rx_plan.c), for the loop and for a poller alike:
 * iw_conn_rx_plan_iov fills it, the glue readv()s the iovecs (at most
 * IW_CONN_RX_IOV_MAX), and iw_conn_rx_feed takes the n octets read.
 * While a large segment is placed in place and the engine predicts the
 * segments after it (iw_qp_status.spec), one read takes several FPDUs:
 *   [payload -> dst][gap -> bounce][next payload -> its guessed place]...
 *   [trailer and next header -> bounce]
 * and the feed hands the engine one piece at a time, checking each guess
 * against where the engine then says the payload goes. From the first
 * wrong guess on, every octet read is copied to the front of the bounce
 * buffer and fed as stream octets, as if it had been read there. */
#define IW_CONN_RX_IOV_MAX (2 + 2 * IW_QP_RX_SPEC_MAX)
struct iw_conn_rxp {
	struct iovec iov[IW_CONN_RX_IOV_MAX];
	int iovcnt;       /* 0: read nothing now (starved) */
	size_t total;     /* octets the iovecs offer */
	/* For the feed. */
	size_t direct;    /* iov[0] is a direct offer of this many octets (0: none) */
	unsigned num_spec;
	uint8_t *gather;  /* where the octets after a wrong guess are copied */
	uint8_t hold;     /* iw_qp_rx_spec.hold of the guesses */
	bool poller;
};
/* bounce/cap: the reader's bounce buffer. poller: the iw_conn_poll_*
 * flavour (direct_min as for iw_conn_poll_plan); else iw_conn_rx_plan's. */
void iw_conn_rx_plan_iov(struct iw_conn *c, struct iw_conn_rxp *p, uint8_t *bounce, size_t cap,
			 bool poller, uint32_t direct_min);
/* n octets were read (n > 0, at most p->total). The events, as
 * iw_conn_recv_placed or iw_conn_poll_recv return them. */
unsigned iw_conn_rx_feed(struct iw_conn *c, const struct iw_conn_rxp *p, size_t n);
/* Internal to conn/: one receive batch, the events as the loop
 * (poller false) or a poller would see them; *st the engine's status. */
unsigned iw_conn_rx_step(struct iw_conn *c, bool poller, size_t placed, const uint8_t *in,
			 size_t len, struct iw_qp_status *st);
/* Internal to conn/: the trailer of one FPDU and the largest next header. */
#define IW_CONN_RX_LOOKAHEAD (7 + 2 + IW_FPDU_HDR_MAX)

/* Transmit: the MPA frame, the FPDUs, a TERMINATE. Fills iov (cap > 0),
 * returns the count (0: nothing) or a negative errno from the engine. */
int iw_conn_tx_iov(struct iw_conn *c, struct iovec *iov, int cap);
unsigned iw_conn_tx_sent(struct iw_conn *c, size_t n);
/* iw_conn_tx_sent (its events into *ev), then iw_conn_tx_iov: in the data
 * phase one locked step of the engine instead of two. */
int iw_conn_tx_sent_iov(struct iw_conn *c, size_t n, struct iovec *iov, int cap, unsigned *ev);
bool iw_conn_tx_shared(const struct iw_conn *c);
/* The socket's MSS as it is now (0: unknown), from whoever writes (the
 * transmit's writer, serialised): in the data phase a change resizes the
 * FPDUs framed from now on (RFC 5044: each fits the current EMSS). */
void iw_conn_mss(struct iw_conn *c, uint32_t mss);
/* Data phase, any thread: frame what the QP may send without writing it
 * (iw_qp_link_ops.tx_stage). 0 with the messages and octets waiting
 * unwritten; non-zero: write now instead (not in the data phase, closed,
 * no stage op, or not everything fitted). */
int iw_conn_tx_stage(struct iw_conn *c, uint32_t *msgs, size_t *bytes);
bool iw_conn_wants_loop(struct iw_conn *c);

/* After the glue wrote (tx_err: 0 or the positive errno of the failed
 * write): the engine's events, the close sequence. */
unsigned iw_conn_step(struct iw_conn *c, int tx_err);

/* The earliest deadline (ms on the caller's clock), UINT64_MAX if none. */
uint64_t iw_conn_next_timeout(struct iw_conn *c, uint64_t now);
unsigned iw_conn_on_timer(struct iw_conn *c, uint64_t now);

const char *iw_conn_state_str(enum iw_conn_state s);

#endif
