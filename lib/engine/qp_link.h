/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The contract between the QP engine and the connection that drives it
 * (lib/conn/conn.c): everything a connection may ask of a QP, as one const
 * table of functions (iw_qp_link_ops). A connection holds a struct iw_qp
 * pointer it never dereferences; every field it needs (the QP's state,
 * events, the segment being received, whether octets wait to go out) comes
 * back from a call that took the QP's lock once. Tests can plug in a table
 * of their own.
 *
 * Receive costs two lock round trips per batch of octets, however many
 * FPDUs it holds: rx_direct (where the next payload may land) and rx_batch
 * (the octets placed there, the octets read after them, the events the
 * batch caused and what the connection must do next).
 */
#ifndef IW_QP_LINK_H
#define IW_QP_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct iw_qp;

/* Engine events (iw_qp_take_events, iw_qp_link_ops.poll). */
enum {
	IW_QPE_ESTABLISHED = 1 << 0, /* responder: the RTR arrived; initiator: RTR sent */
	IW_QPE_ERROR = 1 << 1,       /* QP entered ERR: flush tx (TERMINATE) then close */
	IW_QPE_TX = 1 << 2,          /* tx work appeared (posted from any thread) */
};

/* Connection parameters the connection hands the engine. */
struct iw_qp_conn {
	bool initiator;
	bool p2p;
	uint8_t rtr;        /* IW_RTR_* */
	bool crc;
	bool markers_tx, markers_rx;
	uint16_t ird, ord;
	uint32_t mulpdu;    /* from the live MSS */
	bool peer_siw_term; /* read the peer's TERMINATE with siw's layout */
	/* IW_QP_CREATE_RECV_HOLD limits (iw_conn_opts); 0: the QP's defaults */
	uint32_t hold_msgs;
	uint64_t hold_bytes;
};

/* Payload the connection may read ahead (qp_rx_spec.c): gap octets of
 * trailer and next header, then len octets of the next segment's
 * predicted payload straight to dst. The pieces follow one another in the
 * stream; each is a guess the engine checks when its header comes. */
#define IW_QP_RX_SPEC_MAX 6
struct iw_qp_rx_spec {
	uint32_t gap;
	uint32_t len;
	uint8_t *dst;
	/* The last hold octets of the gap are payload if the next header
	 * comes shorter than guessed (a tagged one, 14 octets, where an
	 * untagged continuation, 18, was guessed): the connection feeds
	 * them only once the engine is still inside that header. */
	uint8_t hold;
};

/* What the engine says after a locked step (rx_batch, poll). */
struct iw_qp_status {
	unsigned events;  /* IW_QPE_* taken by this step */
	bool err;         /* the QP is in ERR */
	bool tx_pending;  /* octets are queued to go out */
	/* rx_batch only: what rx_direct would answer right after it, taken
	 * in the same locked step, so that planning the next read needs no
	 * call of its own (it stays true until the next batch: only the
	 * thread receiving feeds the decoder). */
	size_t direct;
	uint8_t *direct_dst;
	uint32_t seg_len;
	bool in_payload; /* rx_batch only: the decoder is inside a payload */
	/* rx_batch only: a payload with L clear whose message will end in one
	 * more segment of this many octets if it is as long as the last Write
	 * or Send, or as the Read's sink (0: no such guess). A hint, never
	 * trusted. */
	uint32_t tail;
	/* rx_batch only: the predicted pieces after the direct offer, which
	 * then ends its segment (0: none). */
	unsigned num_spec;
	struct iw_qp_rx_spec spec[IW_QP_RX_SPEC_MAX];
};

/* One receive batch: `placed` octets were received at the destination the
 * last rx_direct offered (0: none), then `len` octets at `in` follow them
 * in the stream. */
struct iw_qp_rx_batch {
	size_t placed;
	const uint8_t *in;
	size_t len;
};

struct iw_qp_link_ops {
	void (*start)(struct iw_qp *qp, const struct iw_qp_conn *c);
	/* Where up to the returned number of payload octets may be received
	 * directly (0: none); *seg_len is the payload length of the segment
	 * being received (a hint that the next one may be as large). */
	size_t (*rx_direct)(struct iw_qp *qp, uint8_t **dst, uint32_t *seg_len);
	/* Octets beyond the direct offer the connection may read now (no
	 * lock; SIZE_MAX: any). 0 stops reading until the QP wakes the glue
	 * (a receive posted): the receive hold is full. NULL: any. */
	size_t (*rx_room)(struct iw_qp *qp);
	/* 0, or a negative errno when `placed` does not fit the offer. */
	int (*rx_batch)(struct iw_qp *qp, const struct iw_qp_rx_batch *b, struct iw_qp_status *st);
	void (*poll)(struct iw_qp *qp, struct iw_qp_status *st);
	int (*tx_iov)(struct iw_qp *qp, struct iovec *iov, int cap);
	void (*tx_sent)(struct iw_qp *qp, size_t n);
	/* tx_sent, then tx_iov for the next write, in one locked step. */
	int (*tx_sent_iov)(struct iw_qp *qp, size_t n, struct iovec *iov, int cap);
	/* Frame what may go out without writing it (iw_qp_tx_stage); NULL:
	 * posts are written at once. */
	int (*tx_stage)(struct iw_qp *qp, uint32_t *msgs, size_t *bytes);
	/* Takes no lock (any thread, after a write): the QP is in ERR. */
	bool (*in_err)(struct iw_qp *qp);
	/* The live MSS changed: the largest ULPDU to frame from now on.
	 * NULL: kept as start gave it. */
	void (*set_mulpdu)(struct iw_qp *qp, uint32_t mulpdu);
	/* A zero-length RDMA Write at the next message boundary (siw wake-up). */
	void (*wake)(struct iw_qp *qp);
	/* Local disconnect: move to ERR (the queued octets still go out). */
	void (*set_err)(struct iw_qp *qp);
	/* The socket is closed: discard the transmit queue, ERR, flush. */
	void (*conn_lost)(struct iw_qp *qp, bool graceful);
};

/* The QP engine's table (qp_link.c). */
extern const struct iw_qp_link_ops iw_qp_link_ops;

#endif
