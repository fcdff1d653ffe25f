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
 * return 0 or a positive errno. Every destroy accepts NULL.
 *
 * Threads: every call may be made from any thread; events are delivered
 * through the channel's fd and never by callback, so no libiwarp lock is
 * ever held while application code runs.
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

/* Create a channel on ctx. NULL with errno ENOMEM or EMFILE. */
struct iw_cm_channel *iw_cm_create_channel(struct iw_context *ctx);
/* EBUSY while ids still use it. */
int iw_cm_destroy_channel(struct iw_cm_channel *ch);

enum iw_cm_event_type {
	IW_CM_EVENT_CONNECT_REQUEST = 1, /* on a listening id: event->id is the new id */
	IW_CM_EVENT_CONNECT_RESPONSE,    /* reserved (rdma_cm shape; never raised) */
	IW_CM_EVENT_CONNECT_ERROR,       /* TCP or MPA failure, handshake timeout: status */
	IW_CM_EVENT_UNREACHABLE,         /* connect refused, no route, connect timeout */
	IW_CM_EVENT_REJECTED,            /* peer replied with R set: private data attached */
	IW_CM_EVENT_ESTABLISHED,
	IW_CM_EVENT_DISCONNECTED,        /* the connection is closed; the QP is in ERR */
	IW_CM_EVENT_TIMEWAIT_EXIT,       /* reserved (rdma_cm shape; never raised) */
};
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
};
void iw_mpa_opts_default(struct iw_mpa_opts *opts);

/* Connection parameters, as rdma_conn_param. */
struct iw_conn_param {
	uint32_t comp_mask;
	const void *private_data; /* ULP private data, copied by the call */
	uint16_t private_data_len; /* at most 508 with rev 2 enhanced, 512 otherwise */
	uint8_t responder_resources; /* IRD: Read Requests we serve at once */
	uint8_t initiator_depth;     /* ORD: Read Requests we keep outstanding */
	uint32_t connect_timeout_ms; /* TCP connect deadline (0: 10 s) */
	const struct iw_mpa_opts *mpa; /* NULL: the id's options */
};

/* What a CONNECT_REQUEST, ESTABLISHED or REJECTED event carries. The
 * private data points into the event and lives until it is acked. */
struct iw_cm_event {
	enum iw_cm_event_type event;
	struct iw_cm_id *id;
	struct iw_cm_id *listen_id; /* CONNECT_REQUEST: the listening id */
	int status;                 /* 0, or a positive errno for errors */
	struct iw_conn_param param; /* the peer's private data and IRD/ORD */
	/* The negotiated MPA parameters (ESTABLISHED and CONNECT_REQUEST). */
	uint8_t mpa_rev;
	bool crc;
	bool markers_rx, markers_tx;
	uint8_t rtr; /* IW_RTR_* chosen, 0 without P2P */
	/* CONNECT_ERROR caused by the MPA exchange: why, as a wire error. */
	int wire_err;
};

/* The id. Fields are read-only to the application. */
struct iw_cm_id {
	struct iw_context *context;
	struct iw_cm_channel *channel;
	void *user_context;
	struct iw_qp *qp;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage peer_addr;
};

/* Create an id on a channel. 0, or ENOMEM. */
int iw_cm_create_id(struct iw_cm_channel *ch, struct iw_cm_id **out_id, void *user_context);
/* Destroy an id: an open connection is reset (abortive close), its QP (if
 * created with iw_cm_create_qp) is destroyed, and events for it that were not
 * yet read are dropped. EBUSY while one of its events is not acked. */
int iw_cm_destroy_id(struct iw_cm_id *id);
/* Set the options used by this id's next connect/accept (copied). */
int iw_cm_set_mpa_opts(struct iw_cm_id *id, const struct iw_mpa_opts *opts);

/* Bind to a local address (port 0: the kernel picks; read local_addr).
 * EADDRINUSE, EADDRNOTAVAIL, EINVAL (already bound). */
int iw_cm_bind_addr(struct iw_cm_id *id, const struct sockaddr *addr);
/* Listen for connections; each arriving MPA Request raises CONNECT_REQUEST
 * with a new id. backlog <= 0 means SOMAXCONN. */
int iw_cm_listen(struct iw_cm_id *id, int backlog);

/* Create the id's QP (RC) on pd; it is moved through INIT/RTR/RTS by the
 * connection manager. EINVAL, ENOMEM, EEXIST (the id has one). */
int iw_cm_create_qp(struct iw_cm_id *id, struct iw_pd *pd, struct iw_qp_init_attr *attr);
void iw_cm_destroy_qp(struct iw_cm_id *id);

/* Start connecting to dst (nonblocking): TCP connect, then the MPA Request.
 * The outcome is ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_ERROR. The id
 * needs a QP. EINVAL (no QP, bad parameters), EISCONN. */
int iw_cm_connect(struct iw_cm_id *id, const struct sockaddr *dst,
		  const struct iw_conn_param *param);
/* Accept a CONNECT_REQUEST: send the MPA Reply; ESTABLISHED follows once
 * the RTR (if any) has arrived. The id needs a QP. */
int iw_cm_accept(struct iw_cm_id *id, const struct iw_conn_param *param);
/* Reject a CONNECT_REQUEST: an MPA Reply with R set carrying private_data,
 * then close. */
int iw_cm_reject(struct iw_cm_id *id, const void *private_data, uint16_t private_data_len);
/* Graceful close: FPDUs already handed to the send path are written, then
 * FIN; the QP goes to ERR and every WR not completed is flushed in order.
 * DISCONNECTED follows. ENOTCONN if not connected. */
int iw_cm_disconnect(struct iw_cm_id *id);

/* Take the next event (never blocks unless the fd is blocking and nothing
 * is queued: then it waits). EAGAIN when none is queued on a nonblocking
 * fd. Every event must be acked. */
int iw_cm_get_event(struct iw_cm_channel *ch, struct iw_cm_event **out_event);
int iw_cm_ack_event(struct iw_cm_event *event);

#ifdef __cplusplus
}
#endif
#endif /* IWARP_CM_H */
