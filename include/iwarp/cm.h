/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libiwarp connection manager, in the shapes of librdmacm: an event channel
 * with an fd, ids that listen or connect, CONNECT_REQUEST / ESTABLISHED /
 * DISCONNECTED events, accept and reject with private data. Underneath is
 * MPA (RFC 5044) with RFC 6581 enhanced connection setup over a nonblocking
 * TCP socket driven by the context's libevent loop. No rdma_ symbol is
 * defined: the real librdmacm can be linked beside us.
 *
 * Errors: as in verbs.h, pointer calls return NULL and set errno, int calls
 * return 0 or a positive errno. Every destroy accepts NULL. The outcome of
 * a connection attempt is an event, not a return value.
 *
 * Threads: every call may be made from any thread; events are delivered
 * through the channel's fd and never by callback, so no libiwarp lock is
 * ever held while application code runs. Every state change of an id
 * happens on the context's loop thread: a call made on that thread runs
 * inline, a call from another thread is queued to the loop and waited for.
 * So with an application event_base the loop must be running (dispatched
 * by another thread) whenever another thread makes a CM call, or that call
 * never returns. With an application base, until a libiwarp callback has
 * run, the loop thread is taken to be the thread that created the context.
 * In convenience mode the loop always runs on the context's own thread. (iw_cm_create_channel, iw_cm_destroy_channel,
 * iw_cm_set_mpa_opts, iw_cm_get_event and iw_cm_ack_event do not go
 * through the loop; iw_cm_create_id and iw_cm_create_qp take the loop's
 * lock on the calling thread instead of going to it.)
 *
 * Lifetime: a channel outlives its ids, and ids keep the context alive
 * (iw_context_free returns EBUSY while any exist). Each CONNECT_REQUEST
 * brings a new id that the application owns from then on: accept, reject
 * or destroy it, and destroy it in the end.
 */
#ifndef IWARP_CM_H
#define IWARP_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct iw_cm_id;

/* An event channel: its fd is readable while an event is queued. */
struct iw_cm_channel {
	struct iw_context *context;
	int fd;
};

/*
 * Create a CM event channel on ctx. Its fd (read-only field, owned by the
 * channel) is readable while an event is queued. The fd is blocking, so
 * iw_cm_get_event waits; set O_NONBLOCK on it to get EAGAIN instead.
 *
 * Returns: the channel, or NULL with errno set.
 * Errors:
 *   EINVAL  ctx is NULL or has no event loop.
 *   ENOMEM  Out of memory.
 *   EMFILE  No file descriptor for the channel (ENFILE: the system-wide
 *           limit).
 */
struct iw_cm_channel *iw_cm_create_channel(struct iw_context *ctx);
/*
 * Destroy a CM event channel: events still queued are freed and the fd is
 * closed. Nothing changes while ids use it, and an id exists for every
 * incoming TCP connection from the moment it is accepted (until its
 * CONNECT_REQUEST is raised, destroying the listener drops it too).
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   Ids still use the channel.
 */
int iw_cm_destroy_channel(struct iw_cm_channel *ch);

enum iw_cm_event_type {
	IW_CM_EVENT_CONNECT_REQUEST = 1, /* on a listening id: event->id is the new id */
	IW_CM_EVENT_CONNECT_RESPONSE,    /* reserved (rdma_cm shape; never raised) */
	IW_CM_EVENT_CONNECT_ERROR,       /* TCP or MPA failure, handshake timeout: status */
	IW_CM_EVENT_UNREACHABLE,         /* connect refused, no route, connect timeout */
	IW_CM_EVENT_REJECTED,            /* peer replied with R set: private data attached */
	IW_CM_EVENT_ESTABLISHED,
	IW_CM_EVENT_DISCONNECTED,        /* closed (status 0) or reset (ECONNRESET, ETIMEDOUT); QP in ERR */
	IW_CM_EVENT_TIMEWAIT_EXIT,       /* reserved (rdma_cm shape; never raised) */
};
/*
 * Name a CM event type, e.g. "ESTABLISHED". Thread safe.
 *
 * Returns: a static string ("unknown" for a value outside the enum).
 */
const char *iw_cm_event_str(enum iw_cm_event_type ev);

/* MPA negotiation knobs. Defaults (iw_mpa_opts_default) follow
 * ../reference/interop.md: rev 2, enhanced flag and peer-to-peer (A) set,
 * initiator offers WRITE|READ RTR, responder picks WRITE if offered then
 * READ, CRC requested, markers not requested, 512-octet private data cap,
 * 10 s handshake timeout. Every field may be changed per connection so that
 * a test can behave like siw, Chelsio or Intel. */
struct iw_mpa_opts {
	uint8_t rev;          /* 1 or 2 */
	bool enhanced;        /* rev 2: RFC 6581 IRD/ORD block (flag 0x10) */
	bool p2p;             /* rev 2 enhanced: flag A and an RTR */
	uint8_t rtr_offer;    /* initiator: IW_RTR_* bits offered */
	uint8_t rtr_accept;   /* responder: IW_RTR_* it may choose, best first WRITE, READ, SEND */
	bool rtr_force;       /* responder: answer rtr_accept's choice without checking the offer (Chelsio) */
	bool crc;             /* ask for CRC (C flag) */
	bool markers;         /* ask the peer for markers on what it sends us (M flag) */
	bool accept_markers;  /* honour a peer's request for markers (else reject it, like siw) */
	uint16_t pd_cap;      /* largest private data we send, RFC 6581 block included */
	uint32_t timeout_ms;  /* MPA exchange deadline after TCP connects */
	bool peer_siw_term;   /* decode the peer's TERMINATE with siw's bit layout */
	/* Initiator: while the peer has sent nothing since its Reply and we
	 * have sent FPDUs, send a zero-length RDMA Write (STag 1, like a WRITE
	 * RTR) after wake_ms, then 2x, 4x ... (iw_conn_opts.wake_count
	 * times at most, 6 by default). siw sends
	 * its Reply before it hooks up its receive path and leaves FPDUs that
	 * arrived in between unread until more data comes; the Write is that
	 * data. Peers must accept zero-length tagged frames without checking
	 * the STag (RFC 5040 RDMA Write, interop.md rule 4). 0 disables. */
	uint16_t wake_ms;
};
/*
 * Get the default MPA options: fill *opts (see struct iw_mpa_opts) with rev
 * 2, enhanced, peer-to-peer, offer WRITE|READ RTR, accept WRITE then READ,
 * CRC on, markers not requested but accepted, pd_cap 512, 10 s timeout,
 * wake_ms 200. A
 * NULL opts is ignored. Every new id starts with these options.
 */
void iw_mpa_opts_default(struct iw_mpa_opts *opts);

/* Connection parameters, as rdma_conn_param. */
struct iw_conn_param {
	uint32_t comp_mask;
	const void *private_data; /* ULP private data, copied by the call */
	uint16_t private_data_len; /* at most 508 with rev 2 enhanced, 512 otherwise */
	uint8_t responder_resources; /* IRD: Read Requests we serve at once */
	uint8_t initiator_depth;     /* ORD: Read Requests we keep outstanding */
	uint32_t connect_timeout_ms; /* TCP connect deadline (0: IW_CONNECT_TIMEOUT_MS_DEFAULT, 10 s) */
	const struct iw_mpa_opts *mpa; /* replaces the id's options (NULL: keep) */
};

/* What a CONNECT_REQUEST, ESTABLISHED or REJECTED event carries. The
 * private data points into the event and lives until it is acked. */
struct iw_cm_event {
	enum iw_cm_event_type event;
	struct iw_cm_id *id;
	struct iw_cm_id *listen_id; /* CONNECT_REQUEST: the listener (NULL once destroyed) */
	int status;                 /* 0, or a positive errno for errors */
	/* The peer's private data. IRD/ORD: CONNECT_REQUEST, the peer's
	 * offer; ESTABLISHED, ours as negotiated. */
	struct iw_conn_param param;
	/* The negotiated MPA parameters (ESTABLISHED); for CONNECT_REQUEST
	 * the Request's rev, C flag (crc) and M flag (markers_tx). */
	uint8_t mpa_rev;
	bool crc;
	bool markers_rx, markers_tx;
	uint8_t rtr; /* IW_RTR_* chosen, 0 without P2P */
	/* CONNECT_ERROR caused by the MPA exchange: why, as a wire error. */
	int wire_err;
	/* CONNECT_ERROR from MPA negotiation, on either side (a Reply we
	 * cannot accept: no RTR we offered, no A, ORD above our IRD, markers
	 * refused; or a Reject we had to send): the TERMINATE triple that
	 * describes it (iw_term_str; IW_TERM_NONE when there is none, on
	 * every other event too) and a sentence naming the problem (static
	 * storage; NULL when there is none). */
	uint32_t term;
	const char *reason;
};

/* The id. Fields are read-only to the application; user_context is set
 * with iw_cm_set_context. */
struct iw_cm_id {
	struct iw_context *context;
	struct iw_cm_channel *channel;
	void *user_context;
	struct iw_qp *qp;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage peer_addr;
};

/*
 * Create a CM id on a channel. The id is stored in *out_id, its events are
 * queued on ch, its user_context is stored in id->user_context, and its MPA
 * options start as iw_mpa_opts_default. The id belongs to the application
 * until iw_cm_destroy_id. Runs on the calling thread under the loop's
 * lock: no hop to the loop thread, so it works before the loop runs.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  ch or out_id is NULL.
 *   ENOMEM  Out of memory.
 */
int iw_cm_create_id(struct iw_cm_channel *ch, struct iw_cm_id **out_id, void *user_context);
/*
 * Set an id's context: store user_context in id->user_context, as a
 * librdmacm application writes rdma_cm_id->context. Meant for the ids of
 * incoming connections, which start with their listener's context: set
 * the connection's own object on CONNECT_REQUEST, and every later event of
 * that id (ESTABLISHED, DISCONNECTED, ...) carries it in
 * event->id->user_context. On a listener it is the context that
 * connections accepted from then on start with. Any thread, without
 * waiting for the loop; the store is atomic, so the loop thread never
 * sees half of it.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id is NULL.
 */
int iw_cm_set_context(struct iw_cm_id *id, void *user_context);
/*
 * Destroy a CM id: an open connection is reset (abortive close, no
 * DISCONNECTED event), a listening socket is closed, its QP (created with
 * iw_cm_create_qp) is destroyed, flushing outstanding WRs to their CQs, and
 * events for it that were not yet read are dropped. A listener also drops
 * the incoming connections whose CONNECT_REQUEST has not been raised; those
 * already raised are ids of their own (and their queued events' listen_id
 * becomes NULL). Nothing changes while one of the id's events taken with
 * iw_cm_get_event is not acked. Runs on the loop thread.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   An event of this id has not been acked (iw_cm_ack_event).
 */
int iw_cm_destroy_id(struct iw_cm_id *id);
/*
 * Set an id's MPA options: copied, and used from its next iw_cm_connect or,
 * on a listening id, for the connections TCP accepts from now on: an
 * incoming connection's id copies its listener's options when it is
 * accepted; setting them on that id before iw_cm_accept changes the
 * responder's choices in its Reply. Only rev and pd_cap are checked here;
 * the rest is checked when the Request or Reply is built. Runs on the loop
 * thread; it affects the id's next iw_cm_connect, iw_cm_listen or
 * iw_cm_accept.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or opts is NULL, rev is not 1 or 2, or pd_cap is above 512.
 */
int iw_cm_set_mpa_opts(struct iw_cm_id *id, const struct iw_mpa_opts *opts);

/* Defaults of the connection's tuning (struct iw_conn_opts) and deadlines. */
#define IW_MPA_TIMEOUT_MS_DEFAULT 10000     /* iw_mpa_opts.timeout_ms */
#define IW_CONNECT_TIMEOUT_MS_DEFAULT 10000 /* iw_conn_param.connect_timeout_ms 0 */
#define IW_LINGER_MS_DEFAULT 3000
#define IW_WAKE_COUNT_DEFAULT 6
#define IW_DIRECT_MIN_DEFAULT 2048
#define IW_MAX_PENDING_DEFAULT 1024
#define IW_REFUSED_REDIAL_MS 10 /* iw_conn_opts.refused_retry_ms: between dials */
#define IW_RELISTEN_MS_MAX 60000 /* iw_conn_opts.relisten_ms at most */
#define IW_RELISTEN_BACKLOG 16   /* connections a parked listening socket queues at most */
#define IW_TX_BATCH_MSGS_DEFAULT 16      /* iw_conn_opts.tx_batch_msgs */
#define IW_TX_BATCH_BYTES_DEFAULT 524288 /* iw_conn_opts.tx_batch_bytes */
#define IW_TX_BATCH_US_DEFAULT 100       /* iw_conn_opts.tx_batch_us */
#define IW_TX_BATCH_MSGS_MAX 4096
#define IW_TX_BATCH_BYTES_MAX (16u << 20)
#define IW_TX_BATCH_US_MAX 10000000

/* Which fields of struct iw_conn_opts a call sets. */
enum iw_conn_opts_mask {
	IW_CONN_OPTS_LINGER = 1 << 0,     /* linger_ms */
	IW_CONN_OPTS_WAKE_COUNT = 1 << 1, /* wake_count */
	IW_CONN_OPTS_DIRECT_MIN = 1 << 2, /* direct_min */
	IW_CONN_OPTS_MAX_PENDING = 1 << 3, /* max_pending */
	IW_CONN_OPTS_KEEPALIVE = 1 << 4,   /* keepalive and its three parameters */
	IW_CONN_OPTS_USER_TIMEOUT = 1 << 5, /* user_timeout_ms */
	IW_CONN_OPTS_SNDBUF = 1 << 6,      /* sndbuf */
	IW_CONN_OPTS_RCVBUF = 1 << 7,      /* rcvbuf */
	IW_CONN_OPTS_REFUSED_RETRY = 1 << 8, /* refused_retry_ms */
	IW_CONN_OPTS_RELISTEN = 1 << 9,      /* relisten_ms */
	IW_CONN_OPTS_RECV_HOLD = 1 << 10,    /* recv_hold_msgs and recv_hold_bytes */
	IW_CONN_OPTS_TX_BATCH = 1 << 11,     /* tx_batch_msgs, tx_batch_bytes and tx_batch_us */
};

/* A connection's tuning: what libiwarp otherwise fixes at the defaults
 * above. Fields whose bit is clear in comp_mask keep their value. */
struct iw_conn_opts {
	uint32_t comp_mask;  /* IW_CONN_OPTS_* */
	/* After our FIN (or a TERMINATE), how long to wait for the peer's
	 * FIN before resetting the connection. */
	uint32_t linger_ms;
	/* Initiator: the siw wake-up Writes (iw_mpa_opts.wake_ms) sent at
	 * most; 0 sends none. */
	uint32_t wake_count;
	/* Receive payloads at least this long straight into the registered
	 * buffer (one readv); shorter ones go through the context's bounce
	 * buffer and a copy, cheaper than a system call each. At least 1. */
	uint32_t direct_min;
	/* Listener: incoming connections still waiting for their MPA Request
	 * (each holds a socket until the MPA timeout) at most; when one more
	 * is accepted, the one that has waited longest (a silent or slow
	 * peer: a well-behaved one sends its Request at once) is reset to
	 * make room (iw_cm_listener_stats counts them). At least 1. */
	uint32_t max_pending;
	/* Liveness of a quiet peer. A host that vanishes without a word
	 * (power cut, pulled cable, a firewall dropping the flow) sends no FIN
	 * and no RST: without these the connection stays up until the
	 * kernel's retransmissions give up (net.ipv4.tcp_retries2, about 15
	 * minutes) or, with nothing to send, forever. When either ends the
	 * connection, the QP goes to ERR, every outstanding WR (sends, Reads,
	 * receives) completes once with IW_WC_WR_FLUSH_ERR, and DISCONNECTED
	 * carries status ETIMEDOUT. */
	/* TCP keepalive (SO_KEEPALIVE) for an idle connection: after
	 * keepalive_idle_s seconds without a segment from the peer, a probe
	 * every keepalive_intvl_s seconds; keepalive_cnt unanswered probes
	 * end the connection. A parameter of 0 keeps the system's
	 * (net.ipv4.tcp_keepalive_time 7200, _intvl 75, _probes 9); at most
	 * 32767 s, 32767 s and 127 probes. Off by default. */
	bool keepalive;
	uint32_t keepalive_idle_s;
	uint32_t keepalive_intvl_s;
	uint32_t keepalive_cnt;
	/* TCP_USER_TIMEOUT: the longest that data we sent may stay
	 * unacknowledged (with keepalive on: that probes may go unanswered)
	 * before the connection ends; detection follows within about the
	 * next retransmission. It bounds how long a posted WR can wait on a
	 * dead peer. 0 (default): the kernel's limit. At most INT_MAX. */
	uint32_t user_timeout_ms;
	/* Socket buffer sizes (SO_SNDBUF, SO_RCVBUF) in octets; the kernel
	 * doubles them and caps them at net.core.wmem_max / rmem_max.
	 * 0 (default): the kernel's autotuning, which a size turns off for
	 * that direction. At most INT_MAX / 2. On a listener they are set on
	 * the listening socket too, so that the window scale of accepted
	 * connections matches rcvbuf. */
	uint32_t sndbuf;
	uint32_t rcvbuf;
	/* Initiator: when the peer's TCP refuses the connection (nobody
	 * listens there yet), dial again every IW_REFUSED_REDIAL_MS until
	 * this long after iw_cm_connect (and within its connect timeout),
	 * then raise UNREACHABLE. For peers that announce a port and listen
	 * on it a moment later (rdma_cm applications written against a CM
	 * whose address resolution takes that moment). 0, the default:
	 * UNREACHABLE at the first refusal. */
	uint32_t refused_retry_ms;
	/* Listener: when it is destroyed, its listening socket stays open
	 * this long, parked: nothing accepts, and the kernel queues at most
	 * IW_RELISTEN_BACKLOG connections (at most the listener's backlog).
	 * The next iw_cm_listen in the context on the same address and port
	 * within that time takes the socket over, with the connections
	 * queued meanwhile; one on the same port and another address closes
	 * it first. Otherwise it is closed when the time is up, and the peers
	 * it queued are reset (those the kernel refused at once before). For
	 * servers that stop listening between two connections of one client
	 * that does not retry a refusal (perftest 4.5 -R against rdma-core
	 * clients). The port is busy for everyone else meanwhile (bind(2)
	 * says EADDRINUSE). 0, the default: closed at once. At most
	 * IW_RELISTEN_MS_MAX. */
	uint32_t relisten_ms;
	/* The QP's receive hold (IW_QP_CREATE_RECV_HOLD in <iwarp/verbs.h>;
	 * without that flag these do nothing): messages held at most
	 * (0, the default: the QP's max_recv_wr) and octets held at most
	 * (0, the default: 64 MiB). When the hold is full the connection
	 * stops reading until a receive is posted (TCP's window stops the
	 * peer), though it still looks at the socket every 200 ms: a reset
	 * (a peer whose FIN could not get in resets after its linger), or a
	 * keepalive or user timeout, ends it with DISCONNECTED as usual.
	 * Only a single message longer than the octet limit (or held alone
	 * and within 64 KiB of it) gets the "no buffer" TERMINATE. */
	uint32_t recv_hold_msgs;
	uint64_t recv_hold_bytes;
	/* Transmit coalescing: Sends, Writes and Reads posted close together
	 * go to TCP in one write instead of a write each. A post that comes
	 * within tx_batch_us of the connection's previous post, with nothing
	 * received in between, has its FPDUs queued but not written while
	 * fewer than tx_batch_msgs messages and tx_batch_bytes octets wait;
	 * they go out when the bound is reached, at the next iw_poll_cq,
	 * iw_req_notify_cq or iw_progress on any CQ of the context (so a
	 * thread that polls never waits for its own octets), when the
	 * connection closes, or else from the loop thread within about
	 * 2 x tx_batch_us (the loop's timers count whole milliseconds: 2 ms
	 * at most for any tx_batch_us up to 1000). A first post after a
	 * pause, or one answering
	 * octets that arrived (a ping-pong), is written at once. A WR's
	 * completion still follows the write of its last octet. Defaults 16
	 * messages, 512 KiB and 100 us; tx_batch_msgs 0 or 1 writes every
	 * post at once (as before). At most IW_TX_BATCH_MSGS_MAX,
	 * IW_TX_BATCH_BYTES_MAX and IW_TX_BATCH_US_MAX; tx_batch_us at least 1. */
	uint32_t tx_batch_msgs;
	uint32_t tx_batch_bytes;
	uint32_t tx_batch_us;
};

/*
 * Tune an id's connection: the fields of opts named in opts->comp_mask are
 * copied and used from the id's next iw_cm_connect, iw_cm_listen or
 * iw_cm_accept, as for iw_cm_set_mpa_opts; an incoming connection's id
 * copies its listener's (so keepalive, user timeout and buffer sizes set
 * on a listener apply to every connection it accepts from then on), and
 * may change them before iw_cm_accept. Every id starts with the context's
 * options (iw_context_attr.conn_opts), else the IW_*_DEFAULT values. The
 * socket options (keepalive, user_timeout_ms, sndbuf, rcvbuf) are set on
 * the socket before connect(2), on each accepted socket, and again by
 * iw_cm_accept; a connection already up keeps what it had. Nothing is
 * changed when a field is out of range. Runs on the loop thread.
 *
 * Relisten: a listener's relisten_ms is read when it is destroyed
 * (iw_cm_destroy_id): its listening socket then stays open, accepting
 * nothing, that long, and the context's next iw_cm_listen on the same
 * address and port takes it over with the connections the kernel queued
 * meanwhile (at most IW_RELISTEN_BACKLOG); unclaimed, it is closed and
 * they are reset. For servers that listen again on a port between two
 * connections of a client that does not retry a refusal.
 *
 * Liveness: a peer that goes silent (host gone, cable pulled, packets
 * dropped: no FIN, no RST) is found by keepalive (keepalive_idle_s, then
 * keepalive_cnt probes keepalive_intvl_s apart) on an idle connection, and
 * by user_timeout_ms once data we sent stays unacknowledged that long.
 * The connection then ends as if reset: the QP goes to ERR, every
 * outstanding WR (sends, RDMA Reads, receives) completes exactly once
 * with IW_WC_WR_FLUSH_ERR, and DISCONNECTED carries status ETIMEDOUT.
 * Without them the kernel gives up only after its retransmissions
 * (net.ipv4.tcp_retries2, some 15 minutes), or never on an idle
 * connection. E.g. keepalive 10 s + 3 x 5 s and user_timeout_ms 30000
 * bound the wait at about 30 s either way.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or opts is NULL, comp_mask has an unknown bit, direct_min
 *           or max_pending is 0, keepalive_idle_s or keepalive_intvl_s is
 *           above 32767 or keepalive_cnt above 127, user_timeout_ms is
 *           above INT_MAX, sndbuf or rcvbuf is above INT_MAX / 2, or
 *           relisten_ms is above IW_RELISTEN_MS_MAX, or a tx_batch_* field is
 *           above its IW_TX_BATCH_*_MAX or tx_batch_us is 0.
 */
int iw_cm_set_conn_opts(struct iw_cm_id *id, const struct iw_conn_opts *opts);
/*
 * Read an id's connection tuning: fill *opts with every field (comp_mask
 * names them all). Runs on the loop thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or opts is NULL.
 */
int iw_cm_get_conn_opts(struct iw_cm_id *id, struct iw_conn_opts *opts);

/* What a listener has seen since iw_cm_listen (iw_cm_listener_stats). */
struct iw_cm_listener_stats {
	uint32_t comp_mask;     /* none defined yet: 0 */
	uint64_t accepted;      /* TCP connections accepted */
	uint64_t requests;      /* CONNECT_REQUESTs raised */
	uint64_t rejected_full; /* reset to make room: max_pending handshakes were waiting
				 * and the one waiting longest went */
	uint64_t rejected_bad;  /* closed: not a valid MPA Request (garbage, bad key,
				 * octets after it), no Reply sent */
	uint64_t rejected_gone; /* the peer closed or reset before its Request was in */
	uint64_t timed_out;     /* no complete Request within the MPA timeout */
	uint64_t accept_errors; /* accept(2) failed for want of descriptors or memory
				 * (EMFILE, ENFILE, ENOBUFS, ENOMEM) ... */
	uint64_t accept_pauses; /* ... and the listener stopped accepting for a while
				 * (100 ms, doubling to 1.6 s) instead of spinning */
	int last_accept_error;  /* errno of the last such failure, 0 if none */
	uint32_t pending;       /* connections waiting for their Request now */
	/* Remote accesses refused for their STag (as iw_stag_stats counts
	 * them) on every connection this listener accepted, including those
	 * already closed or destroyed: a peer guessing STags gets one guess
	 * per connection, so brute force shows here as it grows. */
	uint64_t invalid_stag;
};

/*
 * Read a listener's counters: fill *out with what the listener has
 * accepted, raised, refused and why since iw_cm_listen, how many
 * incoming connections wait for their MPA Request now, and how many
 * remote accesses the peers of its connections made with an invalid
 * STag. A listener that runs out of file descriptors stops accepting for
 * a while and counts it here instead of spinning. Runs on the loop
 * thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or out is NULL, or id is not listening.
 */
int iw_cm_listener_stats(struct iw_cm_id *id, struct iw_cm_listener_stats *out);

/*
 * Bind an id to a local address: record it (AF_INET or AF_INET6, copied)
 * for the id's next iw_cm_listen or iw_cm_connect. The socket is bound by
 * that call, so address errors (EADDRINUSE, EADDRNOTAVAIL, EACCES) are
 * reported there; local_addr shows the kernel's port for port 0 once
 * iw_cm_listen succeeds or a connection is up. Runs on the loop thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or addr is NULL, the family is neither AF_INET nor AF_INET6,
 *           or the id is already bound or not idle.
 */
int iw_cm_bind_addr(struct iw_cm_id *id, const struct sockaddr *addr);
/*
 * Listen for connections: on the bound address, with SO_REUSEADDR (backlog
 * <= 0 means SOMAXCONN). Each TCP connection accepted gets a new id on the
 * same channel, with the listener's user_context and MPA options; when its
 * MPA Request arrives (within the options' timeout_ms, else it is dropped
 * silently, as is a malformed Request), CONNECT_REQUEST is raised with
 * event->id the new id. Then iw_cm_create_qp, post receives, and
 * iw_cm_accept or iw_cm_reject it. Runs on the loop thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id is NULL, not bound (iw_cm_bind_addr), or not idle.
 *   ENOMEM  Out of memory.
 *   Other   The errno of socket(2), bind(2) or listen(2): EADDRINUSE,
 *           EADDRNOTAVAIL, EACCES, EMFILE, ENFILE, ...
 */
int iw_cm_listen(struct iw_cm_id *id, int backlog);

/*
 * Create the QP of a CM id: an RC QP on pd with iw_create_qp's rules, moved
 * to INIT and attached (id->qp). From then on the connection manager moves
 * it to RTS when the MPA exchange completes and to ERR when the connection
 * ends. The QP belongs to the id: iw_cm_destroy_qp or iw_cm_destroy_id
 * destroy it (iw_destroy_qp returns EBUSY). Post receives before connecting
 * or accepting. Runs on the calling thread under the loop's lock: no hop
 * to the loop thread, so it works before the loop runs.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id, pd or attr is NULL, or iw_create_qp refuses attr.
 *   ENOMEM  Out of memory.
 *   EEXIST  The id already has a QP.
 */
int iw_cm_create_qp(struct iw_cm_id *id, struct iw_pd *pd, struct iw_qp_init_attr *attr);
/*
 * Destroy the QP of a CM id: the connection, if any, is reset (abortive
 * close, no event) and the id cannot connect again; outstanding WRs are
 * flushed to their CQs. Nothing happens for a NULL id or an id without a
 * QP. Runs on the loop thread.
 */
void iw_cm_destroy_qp(struct iw_cm_id *id);

/*
 * Start connecting to dst (nonblocking): TCP connect (from the bound
 * address, if any), then the MPA Request. The id needs a QP; post receives
 * first. dst and param, private data included, are copied. Without param:
 * IRD = ORD = 1, 10 s TCP deadline, the id's MPA options. With param: IRD =
 * responder_resources, ORD = initiator_depth, connect_timeout_ms (0: 10 s),
 * and mpa, if set, replaces the id's options.
 *
 * The outcome is one event: ESTABLISHED (the Reply's private data,
 * negotiated values); REJECTED (status ECONNREFUSED, the peer's private
 * data); UNREACHABLE (status: the connect(2) error, such as ECONNREFUSED or
 * ENETUNREACH, or ETIMEDOUT after the TCP deadline); CONNECT_ERROR (status
 * ETIMEDOUT after the MPA timeout, ECONNRESET when the peer closes, EPROTO
 * for a bad or incompatible Reply with wire_err set). The Request is built
 * by this call, so options out of range or private data above pd_cap are
 * reported here (EINVAL, EMSGSIZE), not as an event. An id connects
 * once: after a failure, destroy it and create another. Runs on the loop
 * thread.
 *
 * Returns: 0 (the attempt started), or a positive errno.
 * Errors:
 *   EINVAL  id or dst is NULL, dst is neither AF_INET nor AF_INET6, the id
 *           has no QP, private_data_len is above 512 or private_data is
 *           NULL with a length, param->mpa has a rev other than 1 or 2,
 *           or the options cannot make a Request (e.g. no RTR offered
 *           with p2p on).
 *   EMSGSIZE The private data and the RFC 6581 block exceed pd_cap.
 *   EISCONN The id is not idle: connecting, connected, closed, or
 *           listening.
 *   ENOMEM  Out of memory.
 *   Other   The errno of socket(2), or of bind(2) for a bound id
 *           (EADDRINUSE, EADDRNOTAVAIL, EACCES, EMFILE, ...).
 */
int iw_cm_connect(struct iw_cm_id *id, const struct sockaddr *dst,
		  const struct iw_conn_param *param);
/*
 * Accept a connection request: on the id of a CONNECT_REQUEST (event->id),
 * which needs a QP, send the MPA Reply with param's private data (copied)
 * and IRD/ORD (responder_resources, initiator_depth; 1 and 1 without
 * param). The negotiation follows the id's options (copied from its
 * listener, or set since with iw_cm_set_mpa_opts), replaced by param->mpa
 * when given; connect_timeout_ms is not used. ESTABLISHED
 * follows once the Reply is written, or with peer-to-peer mode once the
 * initiator's RTR has arrived. If the Request cannot be satisfied (no
 * common RTR, markers refused), a Reject goes out instead and CONNECT_ERROR
 * (status ECONNREFUSED) follows; the call still returns 0. Runs on the loop
 * thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id is NULL, has no QP, or is not waiting for an answer to its
 *           CONNECT_REQUEST; private_data_len is above 512 or private_data
 *           is NULL with a length; param->mpa has a rev other than 1 or 2.
 *   EMSGSIZE The private data does not fit pd_cap (with the 4-octet RFC
 *            6581 block when the Reply carries one); a smaller one may be
 *            tried.
 */
int iw_cm_accept(struct iw_cm_id *id, const struct iw_conn_param *param);
/*
 * Reject a connection request: on the id of a CONNECT_REQUEST, send an MPA
 * Reply with R set carrying private_data (copied), then close. The
 * initiator sees REJECTED; this side gets no event. Destroy the id
 * afterwards. Runs on the loop thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id is NULL, private_data_len is above 512 or private_data is
 *           NULL with a length, or the id is not waiting for an answer to
 *           its CONNECT_REQUEST.
 *   EMSGSIZE The private data does not fit pd_cap (RFC 6581 block
 *            included).
 */
int iw_cm_reject(struct iw_cm_id *id, const void *private_data, uint16_t private_data_len);
/*
 * Disconnect gracefully: the QP goes to ERR and every WR not completed is
 * flushed in order (IW_WC_WR_FLUSH_ERR); FPDUs already handed to the send
 * path are written, then FIN. DISCONNECTED follows when the peer closes
 * too, or after the linger time (iw_conn_opts, 3 s) with a reset
 * (status ETIMEDOUT). Calling it on an id that is already
 * closing or closed does nothing and returns 0. Runs on the loop thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id is NULL.
 *   ENOTCONN The id has no QP, or its connection has not finished the MPA
 *            exchange (idle, listening, connecting, awaiting accept).
 */
int iw_cm_disconnect(struct iw_cm_id *id);

/*
 * Get the next CM event: the oldest on the channel, in the order things
 * happened. Waits in read(2) while none is queued unless the fd is
 * nonblocking. The event belongs to the library: read it, then give it back
 * with iw_cm_ack_event; until then its id cannot be destroyed. Any thread.
 * Events: CONNECT_REQUEST (listener side, on a new id), ESTABLISHED,
 * REJECTED, UNREACHABLE, CONNECT_ERROR, DISCONNECTED (the QP is in ERR;
 * status 0 for a clean close with FIN both ways, ECONNRESET when the
 * connection was reset or broke, ETIMEDOUT when the peer neither read
 * nor closed within the linger time after our FIN, or went silent past
 * the keepalive or user timeout of iw_cm_set_conn_opts). CONNECT_RESPONSE and TIMEWAIT_EXIT are never raised.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  ch or out_event is NULL.
 *   EAGAIN  The fd is nonblocking and no event is queued.
 *   EINTR   A signal interrupted the wait (other read(2) errors of the fd
 *           are returned as they are).
 */
int iw_cm_get_event(struct iw_cm_channel *ch, struct iw_cm_event **out_event);
/*
 * Acknowledge a CM event: give back an event from iw_cm_get_event and free
 * it: its private data pointer is invalid from then on. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  event is NULL.
 */
int iw_cm_ack_event(struct iw_cm_event *event);


/*
 * Loop groups. A context runs one or more event loops (iw_context_attr's
 * IW_CONTEXT_ATTR_LOOPS; iw_context_num_loops), each with its own thread
 * or application event_base and its own lock. Every CM id belongs to one
 * loop: its events are produced there, and its calls run there. New ids
 * take the loops in turn; a listener hands each connection it accepts to
 * a loop by its policy (iw_cm_set_spread) once the MPA Request is in.
 */

/* How a listener spreads its connections over the loops (iw_cm_set_spread). */
enum iw_cm_spread_policy {
	IW_CM_SPREAD_ROUND_ROBIN = 0,  /* the loops in turn (the default) */
	IW_CM_SPREAD_LEAST_LOADED = 1, /* the loop with the fewest CM ids */
	IW_CM_SPREAD_CALLBACK = 2,     /* pick chooses */
	IW_CM_SPREAD_LISTENER = 3,     /* all stay on the listener's loop */
};

/* A listener's spreading policy (iw_cm_set_spread). pick (policy
 * IW_CM_SPREAD_CALLBACK) runs on the listener's loop thread when a
 * connection's MPA Request is in, before its CONNECT_REQUEST is raised;
 * request is that event (private data, IRD/ORD, request->id->peer_addr,
 * request->listen_id), valid only during the call. It returns the loop's
 * index (0 .. iw_context_num_loops - 1); any other value means round
 * robin. It must not block or call the CM. */
struct iw_cm_spread {
	uint32_t comp_mask; /* none defined yet: 0 */
	uint32_t policy;    /* enum iw_cm_spread_policy */
	int (*pick)(struct iw_cm_id *listener, const struct iw_cm_event *request, void *arg);
	void *pick_arg;
};

/*
 * Set how a listener spreads connections. Sets the policy by which the
 * connections id accepts from now on are handed to the loops of its
 * context (before or after iw_cm_listen). A connection is accepted and
 * its MPA Request read on the listener's loop; then it moves to the loop
 * the policy picks, whose thread raises its CONNECT_REQUEST and runs
 * everything else about it. Runs on the id's loop thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or spread is NULL, spread->comp_mask is not 0, the policy
 *           is unknown, or IW_CM_SPREAD_CALLBACK without pick.
 */
int iw_cm_set_spread(struct iw_cm_id *id, const struct iw_cm_spread *spread);
/*
 * Put an id on a loop. Moves an idle id (neither listening nor
 * connecting) to loop number loop of its context, so that its listener
 * or connection and all its events run there; e.g. the connection of an
 * I/O queue on the core that serves it. Call it before iw_cm_listen or
 * iw_cm_connect, from one thread at a time for the id.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id is NULL, loop is not below iw_context_num_loops, or the
 *           id is not idle.
 */
int iw_cm_set_loop(struct iw_cm_id *id, unsigned loop);
/*
 * Which loop an id is on. Stores the index of id's loop in *loop: for an
 * accepted connection, valid from its CONNECT_REQUEST on. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  id or loop is NULL.
 */
int iw_cm_get_loop(struct iw_cm_id *id, unsigned *loop);

#ifdef __cplusplus
}
#endif
#endif /* IWARP_CM_H */
