/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection manager's private state: cm_id.c (ids, events, loop
 * work) and cm_conn.c (the socket pump) in this layer, and lib/api/cm.c
 * (the exported calls) above it, which calls down into both, and
 * cm_spread.c (which loop an accepted connection goes to). Everything
 * about an id runs on its loop's thread under that loop's lock (ev.h),
 * except the transmit path, which application threads enter through
 * iw_cm_conn_tx when they post work.
 */
#ifndef IW_CM_INT_H
#define IW_CM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/evq.h"
#include "iwarp/cm.h"
#include "conn/conn.h"
#include "io/ev.h"

struct event;
struct iw_trace_conn;

struct iw_cm_channel_int {
	struct iw_cm_channel pub;
	struct iw_evq q;
	atomic_int num_ids; /* its ids may live on different loops */
};

/* A listener's count of accesses refused for their STag, shared with the
 * ids it accepted, whose QPs add to it (iw_mem_req.bad_stag_group): kept
 * until the last of them is gone, so a connection may outlive its
 * listener. Taken and dropped on any loop (ids handed to other loops keep
 * theirs). It also names the listener while it lives (under lock), for
 * the CONNECT_REQUEST of a connection another loop raises (cm_spread.c). */
struct iw_cm_lcount {
	const struct iw_alloc_ops *alloc;
	atomic_ulong bad_stag;
	atomic_int refs;
	pthread_mutex_t lock;
	struct iw_cm_id_int *listener; /* NULL once it is destroyed */
};

struct iw_cm_id_int {
	struct iw_cm_id pub;
	struct iw_cm_channel_int *ch;
	/* The loop the id belongs to: every callback and iw_ev_call of the
	 * id runs there. Changed only before the application sees the id
	 * (a hand-off, cm_spread.c) or by iw_cm_set_loop on an idle id. */
	struct iw_ev *ev;
	/* A CONNECT_REQUEST handed to ev with the id, raised by its loop. */
	struct iw_cm_event *handoff;
	/* The connection (sans-I/O): its state is the id's state. */
	struct iw_conn conn;
	bool bound;
	/* The pump's part: the socket, its libevent events (rd, wr, and tmo
	 * armed at tmo_at, the connection's next deadline). */
	int fd;
	struct event *rd, *wr, *tmo;
	uint64_t tmo_at;
	/* Initiator: when iw_cm_connect dialled, and the timer of the next
	 * dial after a refusal (iw_conn_opts.refused_retry_ms). */
	uint64_t dial_at;
	struct event *redial;
	bool rd_on;
	struct iw_qp *qp;
	bool own_qp;                /* created by iw_cm_create_qp */
	uint8_t ird, ord;           /* what the application asked for */
	uint32_t connect_timeout_ms;
	uint8_t pd[IW_MPA_PD_MAX];  /* connect's or accept's private data */
	uint16_t pd_len;
	atomic_int unacked;         /* events handed out and not acked */
	/* One event's memory held back for when allocating an event fails
	 * (the loop cannot wait for memory, and an event lost is a connection
	 * the application never hears of again): taken by iw_cm_event_new,
	 * refilled by the next event the application acks. */
	void *_Atomic spare;
	struct iw_ev_work work;      /* loop work this id asked for */
	pthread_mutex_t txlock;
	atomic_int tx_req;
	atomic_int sock_err;        /* the first error a read or write met (cm_conn.c) */
	/* Run to completion (cm_conn.c, "receive ownership"): whoever holds
	 * rxlock reads the socket; the loop and pollers only try it. */
	pthread_mutex_t rxlock;
	atomic_bool poll_ok;  /* RUNNING in a polling context, socket open */
	atomic_bool polled;   /* a poller visited since the loop last looked */
	unsigned cq_seen[2];  /* loop: its last look at the CQs' poll counts */
	atomic_bool rx_kick;  /* a poller met the end of the stream: loop, read */
	atomic_bool tx_full;  /* the socket took less than was queued */
	/* The loop has been asked to wait for room in a full socket, or
	 * waits for it (its write event added); cleared by the loop's next
	 * flush. While set, a thread that finds the socket full leaves it to
	 * that wait (and to its own next poll) instead of waking the loop. */
	atomic_bool tx_wait;
	atomic_bool rd_paused; /* loop: reads left to pollers for a while */
	atomic_bool handback;  /* a poller armed a CQ: the loop, read again */
	uint32_t rd_pause_ms;  /* loop: the pause now running (doubles) */
	struct event *pause;   /* loop: when to look whether they still poll */
	/* loop: while the receive hold is full, when to look at the socket's
	 * error next (cm_conn.c, on_stall). */
	struct event *stall;
	/* Counters for tests: the pause timer's wake-ups, the times an
	 * armed CQ gave the connection back to the loop, and the times a
	 * full socket made an application thread wake the loop. */
	atomic_uint dbg_pause_wakes, dbg_handbacks, dbg_tx_kicks;
	/* ... and a poller's reads, and those of them that took octets of a
	 * further segment read ahead (lib/io/poll_buf.h). */
	atomic_uint dbg_poll_reads, dbg_poll_ahead;
	/* Transmit coalescing (cm_batch.c). The writes (sendmsg calls that
	 * moved octets, counted under txlock: tests read them too), and the
	 * reads that moved octets (under rxlock): a post after one is an
	 * answer, written at once. */
	atomic_uint tx_writes, rx_seq;
	/* The last post: when (ns) and rx_seq then. */
	_Atomic uint64_t batch_at;
	atomic_uint batch_rx;
	/* A post left FPDUs unwritten; cleared by the next write, which
	 * writes them. */
	atomic_bool held;
	/* On the context's held list (next: held_next); closed: never again
	 * (both under the context's held_lock). */
	atomic_bool held_listed;
	bool batch_closed;
	struct iw_cm_id_int *held_next;
	/* The backstop: on (asked for or ticking), a post held since its
	 * last tick (fresh), its timer and tx_writes at that tick (loop),
	 * the work that starts it, and the ticks that wrote (tests). */
	atomic_bool batch_on, batch_fresh;
	struct event *batch_ev;
	unsigned tick_writes;
	struct iw_ev_work batch_work;
	atomic_uint dbg_batch_ticks;
	/* pcap trace of this connection (trace.h), NULL when off; set and
	 * cleared under txlock, as the transmit path reads it there. */
	struct iw_trace_conn *trace;
	int backlog;
	/* Responder ids not yet shown to the application (MPA state) stay
	 * linked to their listener, which names itself in the CONNECT_REQUEST
	 * and drops them if it is destroyed first. */
	struct iw_cm_id_int *listener;
	struct iw_cm_id_int *children, *child_prev, *child_next;
	struct iw_cm_id_int *child_oldest; /* listener: its longest-waiting child */
	/* Listener: its counters, unseen children, and the pause after
	 * accept(2) ran out of descriptors (ms, 0: not paused). */
	struct iw_cm_listener_stats lstats;
	uint32_t num_children;
	uint32_t pause_ms;
	/* Listener: how it spreads what it accepts, and its round robin. */
	struct iw_cm_spread spread;
	unsigned spread_next;
	/* The listener's STag count: its own, or the one of the listener
	 * that accepted this id (NULL: neither). */
	struct iw_cm_lcount *lcount;
};

static inline struct iw_cm_id_int *iw_cm_id_int(struct iw_cm_id *id)
{
	return (struct iw_cm_id_int *)id;
}

/* cm_id.c */
struct iw_cm_id_int *iw_cm_id_alloc(struct iw_cm_channel_int *ch, struct iw_ev *ev,
				    void *user_context);
/* Move an id no callback can be running for to loop to (its old loop's
 * thread, or its new one's for a hand-off). */
void iw_cm_id_move(struct iw_cm_id_int *id, struct iw_ev *to);
void iw_cm_id_release(struct iw_cm_id_int *id);
/* Link a new responder id to its listener (newest first; the oldest is
 * l->child_oldest) / unlink it (NULL-safe). */
void iw_cm_child_link(struct iw_cm_id_int *l, struct iw_cm_id_int *id);
void iw_cm_child_unlink(struct iw_cm_id_int *id);
/* A listener's STag count: a new one (NULL: out of memory), one more
 * reference, one fewer (NULL-safe; freed with the last). */
struct iw_cm_lcount *iw_cm_lcount_new(const struct iw_alloc_ops *a);
struct iw_cm_lcount *iw_cm_lcount_get(struct iw_cm_lcount *lc);
void iw_cm_lcount_put(struct iw_cm_lcount *lc);
/* Queue an event on id's channel; the helper fills the fields it knows. */
struct iw_cm_event *iw_cm_event_new(struct iw_cm_id_int *id, enum iw_cm_event_type type,
				    int status);
void iw_cm_event_queue(struct iw_cm_id_int *id, struct iw_cm_event *ev);
/* Free an event that was never queued. */
void iw_cm_event_discard(struct iw_cm_event *ev);
/* Copy private data into an event (it lives until the ack). */
void iw_cm_event_set_pd(struct iw_cm_event *ev, const uint8_t *pd, uint16_t len);
void iw_cm_raise(struct iw_cm_id_int *id, enum iw_cm_event_type type, int status);
/* Ask the loop to look at id soon (from any thread). */
void iw_cm_want_work(struct iw_cm_id_int *id);
/* iw_cm_get_event/ack_event/destroy_channel's work: 0 or -errno. */
int iw_cm_event_take(struct iw_cm_channel_int *c, struct iw_cm_event **out);
void iw_cm_event_done(struct iw_cm_event *event);
void iw_cm_channel_drain(struct iw_cm_channel_int *c);

/* cm_conn.c (loop thread, CM lock held unless noted) */
int iw_cm_conn_listen(struct iw_cm_id_int *id);
int iw_cm_conn_connect(struct iw_cm_id_int *id, const struct sockaddr *dst);
int iw_cm_conn_accept(struct iw_cm_id_int *id);
int iw_cm_conn_reject(struct iw_cm_id_int *id, const void *pd, uint16_t len);
int iw_cm_conn_disconnect(struct iw_cm_id_int *id);
/* Abortive close and release of every socket resource. */
void iw_cm_conn_abort(struct iw_cm_id_int *id);
/* Loop work for id: arm writes, act on engine events. */
void iw_cm_conn_work(struct iw_cm_id_int *id);
/* Free the id's libevent events (a hand-off to another loop, whose
 * adoption makes new ones there: iw_cm_conn_work). */
void iw_cm_conn_unhook(struct iw_cm_id_int *id);
/* Write what the QP has queued (any thread; never blocks). */
void iw_cm_conn_tx(struct iw_cm_id_int *id);
/* A polling thread's turn at qp's connection (context.h progress hook):
 * the number of reads that moved octets. */
unsigned iw_cm_conn_poll(struct iw_qp *qp);
/* The same through a CQ the application armed: it reads, but does not
 * keep the loop off the socket, since the thread is about to sleep. */
unsigned iw_cm_conn_poll_armed(struct iw_qp *qp);
/* The same for a connection of another CQ (iw_poll_cq's visits): only
 * one that no poller of its own CQs keeps (nobody claimed it since the
 * loop last looked), so that connections with pollers of their own cost
 * a visitor no system call. */
unsigned iw_cm_conn_poll_other(struct iw_qp *qp);
/* The application armed a CQ qp completes into (iw_req_notify_cq): the
 * loop reads for the connection again at once. Returns 0. */
unsigned iw_cm_conn_handback(struct iw_qp *qp);
/* The loop's next pause after one of ms while pollers stay. */
uint32_t iw_cm_pause_next(uint32_t ms);

/* cm_batch.c: transmit coalescing (iw_conn_opts.tx_batch_*). */
/* iw_post_send posted on id's QP (any thread): hold its FPDUs for the
 * next write, or write now. */
void iw_cm_conn_post(struct iw_cm_id_int *id);
/* Write every connection of ctx that holds output (context.h flush_held;
 * any thread). */
void iw_cm_batch_flush(struct iw_context *ctx);
/* The socket is closed (fd -1 already) or the id is going: off the held
 * list, and never listed again until iw_cm_batch_reopen. */
void iw_cm_batch_forget(struct iw_cm_id_int *id);
void iw_cm_batch_reopen(struct iw_cm_id_int *id);
/* The id's events are freed (iw_cm_conn_unhook): the backstop stops. */
void iw_cm_batch_unhook(struct iw_cm_id_int *id);
/* Set up the id's batch work (iw_cm_id_alloc). */
void iw_cm_batch_init(struct iw_cm_id_int *id);

/* cm_spread.c (the listener's loop). Hand an accepted connection whose
 * MPA Request came in, and its CONNECT_REQUEST req, to the loop its
 * listener's policy picks. False: it stays here (req untouched). */
bool iw_cm_spread_handoff(struct iw_cm_id_int *id, struct iw_cm_event *req);
/* On the new loop: queue the CONNECT_REQUEST of a handed-off id. */
void iw_cm_spread_deliver(struct iw_cm_id_int *id, struct iw_cm_event *req);
/* The listener is going: connections still being handed off no longer
 * name it. */
void iw_cm_spread_forget(struct iw_cm_id_int *l);

/* cm_park.c: listening sockets of destroyed listeners kept for
 * iw_conn_opts.relisten_ms. Park l's socket (loop thread, l's events are
 * freed and l->fd taken); false when l has no relisten_ms, is not
 * listening, or memory ran out: then the caller closes it. */
bool iw_cm_park(struct iw_cm_id_int *l);
/* The socket parked on l's bound address and port (-1: none), now l's to
 * listen on; sockets parked on that port with another address are closed
 * (loop thread). */
int iw_cm_unpark(struct iw_cm_id_int *l);
/* iw_context_free, once no id is left: close every parked socket. */
void iw_cm_park_cleanup(struct iw_context *ctx);

#endif
