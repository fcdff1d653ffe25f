/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs and the RDMAP/DDP engine behind them (sans-I/O).
 *
 * A QP owns its send queue (SQ), receive queue (RQ, or a shared SRQ), the
 * outstanding-read queue (ORQ, depth ORD) and the inbound read queue (IRQ,
 * depth IRD), and both FPDU directions of its connection. The engine never
 * touches a socket: the glue (ev.c, or a test pump) feeds received octets
 * with iw_qp_rx / the direct-placement pair, takes outbound iovecs with
 * iw_qp_tx_iov and reports how many octets TCP accepted with iw_qp_tx_sent.
 *
 * Locking: qp->lock protects everything below it. Application threads
 * (post_send/post_recv) and the loop thread (rx/tx) both take it; it is
 * never held while application code runs. Lock order: qp->lock, then a
 * CQ's or SRQ's lock, then the STag table's, then an evq's.
 */
#ifndef IW_QP_H
#define IW_QP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/evq.h"
#include "iwarp/verbs.h"
#include "iwarp/wire.h"
#include "engine/mem.h"
#include "engine/qp_link.h"

/* Limits. */
#define IW_MAX_SGE 16
#define IW_MAX_INLINE 1024
/* Inline data kept in the WQE itself (struct iw_swqe): up to 64 octets,
 * an NVMe-oF command capsule's size and a ping-pong's, so that those cost
 * no malloc and free per post. */
#define IW_INLINE_SMALL 64
#define IW_MAX_QP_WR 16384
#define IW_MAX_ORD_IRD 128
/* QPs alive at once per context (each connected one also holds a socket). */
#define IW_MAX_QP (1u << 20)

/* A send WQE. */
struct iw_swqe {
	uint64_t wr_id;
	enum iw_wr_opcode opcode;
	unsigned flags;      /* IW_SEND_* */
	bool signaled;
	uint32_t num_sge;
	/* Out of line, max_send_sge entries each (iw_wqe_sges): an idle QP
	 * pays for the SGEs it asked for, not for IW_MAX_SGE. */
	struct iw_sge *sge;
	uint8_t **sge_ptr;           /* host pointers from the lkey checks */
	struct iw_mr_int **sge_mr;   /* references held until completion */
	uint8_t *inline_buf; /* IW_SEND_INLINE: a private copy */
	uint64_t len;        /* total payload length */
	uint32_t imm_or_inv; /* imm_data (network order) or invalidate_rkey */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	struct iw_mr_int *reg_mr; /* REG_MR; BIND_MW: the MR bound to */
	struct iw_mw_int *bind_mw; /* BIND_MW (reg_* carry the rest) */
	union {
		struct {
			uint32_t reg_key;
			int reg_access;
			uint64_t reg_iova, reg_len;
			void *reg_addr;
		};
		/* Inline data this short is kept here rather than in a
		 * malloc'd copy (a malloc and a free per small Send showed in
		 * profiles); Sends and Writes never use reg_*. */
		uint8_t inline_small[IW_INLINE_SMALL];
	};
	/* progress */
	uint64_t sent;       /* payload octets segmented so far */
	bool tx_done;        /* all FPDUs handed to the tx queue */
	bool data_done;      /* *_WITH_IMM: the Send/Write part is segmented */
	bool done;           /* may complete (in order) */
	uint32_t req_msn;    /* Read/atomic: the MSN its request went out with */
	enum iw_wc_status status;
	uint32_t vendor_err;
};

/* A receive WQE (RQ or SRQ); SGE arrays out of line as for send WQEs. */
struct iw_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct iw_sge *sge;
	uint8_t **sge_ptr;
	struct iw_mr_int **sge_mr;
	uint64_t len;
};

/* A receive WQE with room for any number of SGEs: the one a QP is filling,
 * moved out of its ring (or SRQ) so the slot can be reused at once. */
struct iw_rwqe_buf {
	struct iw_rwqe w;
	struct iw_sge sge[IW_MAX_SGE];
	uint8_t *ptr[IW_MAX_SGE];
	struct iw_mr_int *mr[IW_MAX_SGE];
};

/* The SGE storage behind a ring of n WQEs of max_sge SGEs each. */
struct iw_wqe_sges {
	const struct iw_alloc_ops *alloc; /* the context's, from alloc */
	struct iw_sge *sge;
	uint8_t **ptr;
	struct iw_mr_int **mr;
};
int iw_wqe_sges_alloc(struct iw_wqe_sges *st, const struct iw_alloc_ops *a, uint32_t n,
		      uint32_t max_sge);
void iw_wqe_sges_free(struct iw_wqe_sges *st);
/* The slice of st that WQE i of a ring owns (send and receive WQEs alike). */
void iw_wqe_sges_slice(const struct iw_wqe_sges *st, uint32_t i, uint32_t max_sge,
		       struct iw_sge **sge, uint8_t ***ptr, struct iw_mr_int ***mr);
/* Move src into dst (dst owns the MR references afterwards; src is left
 * empty). */
void iw_rwqe_move(struct iw_rwqe_buf *dst, struct iw_rwqe *src);

/* An RDMA Read Response we owe the peer (IRQ entry). */
struct iw_irqe {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint8_t *src;         /* host pointer of the source region */
	struct iw_mr_int *mr; /* reference held while the response is sent */
	uint32_t sent;
	bool atomic;          /* RFC 7306 Atomic Response instead */
	uint32_t req_id;
	uint64_t orig;
};

/* Octets a transmit batch may gather before it is written. */
#define IW_TXQ_IOV 512
#define IW_TXQ_HDR (16 * 1024)
/* Kept free for a TERMINATE, which must always fit. */
#define IW_TXQ_RESERVE_IOV 8
#define IW_TXQ_RESERVE_HDR 256
/* An FPDU this small is copied whole into hdr (qp_txq.c). */
#define IW_TXQ_COPY_MAX 256
/* So is one up to this size that finds the queue empty (qp_txq.c). */
#define IW_TXQ_LONE_MAX 8192
/* With markers on, larger FPDUs are framed whole into a staging area
 * (qp_txq.c), one iovec for many of them. It starts at the first size (two
 * of the largest FPDUs) and doubles up to the second each time a batch
 * filled it: a QP streaming bulk data then hands the kernel writes of a
 * large message's size, as raw TCP and the unmarked path do, while one
 * sending small messages keeps a small stage. */
#define IW_TXQ_STAGE_MIN (128 * 1024)
#define IW_TXQ_STAGE_MAX (1024 * 1024)

/* Outbound FPDUs gathered for writev. Held only while the QP has octets
 * to write (qp_txq.c: drained queues go to the context's spare slot).
 * Headers, markers and trailers are copied into hdr; payload iovecs point at
 * registered memory (kept alive by the WQE's MR references), except in
 * FPDUs of at most IW_TXQ_COPY_MAX octets, copied whole. */
struct iw_txq {
	struct iovec iov[IW_TXQ_IOV];
	int cnt, first;          /* iov[first..cnt) unsent */
	uint8_t hdr[IW_TXQ_HDR];
	size_t hdr_used;
	/* completion marks: when total sent passes end, the WQE at sq index
	 * is transmitted */
	struct iw_txmark {
		uint64_t end;         /* when this many octets are written ... */
		struct iw_mr_int *put; /* ... drop this reference (Read Response) */
		uint32_t sq_idx;      /* ... and mark this WQE transmitted */
		bool sq;
	} mark[IW_TXQ_IOV];
	int num_mark, first_mark;
	uint64_t queued, sent;   /* octets */
	/* Markers on: FPDUs framed in place (NULL until a QP with markers
	 * transmits, or when out of memory: then they are gathered). */
	uint8_t *stage;
	size_t stage_used, stage_cap;
	bool stage_full;         /* a batch ended for want of stage room */
};

struct iw_srq;

/* A message held for a receive not posted yet (qp_recv.c): the RNR
 * emulation of IW_QP_CREATE_RECV_HOLD. */
struct iw_held {
	struct iw_held *next;
	uint8_t *data;           /* the payload, from the context's allocator */
	uint64_t len, cap;       /* octets of the message; allocated at data */
	uint64_t resv;           /* octets counted against hold.max_bytes: the
				  * furthest end a segment header announced */
	unsigned op;             /* RDMAP opcode (a Send type or Immediate Data) */
	enum iw_wc_opcode wc_op; /* what its receive completes as */
	unsigned wc_flags;
	uint32_t imm, inv;
	bool done;               /* its last segment arrived */
	/* The segment that reached furthest: its headers go into the "too
	 * long" TERMINATE when the receive that takes the message is short. */
	struct iw_ddp_seg seg;
};

/* Default of the held octets a QP may keep (iw_conn_opts.recv_hold_bytes). */
#define IW_RECV_HOLD_BYTES_DEFAULT (64u << 20)

struct iw_qp {
	struct iw_context *context;
	struct iw_pd *pd;
	struct iw_cq *send_cq, *recv_cq;
	struct iw_srq *srq;
	void *qp_context;
	uint32_t qp_num;
	uint32_t create_flags;
	bool sq_sig_all;
	struct iw_qp_cap cap;
	struct iw_qp_init_attr init_attr;
	struct iw_mem_req mreq; /* this QP as the requester of remote accesses */
	atomic_ulong bad_stag;  /* remote accesses refused for their STag */

	pthread_mutex_t lock;
	enum iw_qp_state state;
	int access_flags;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	unsigned events;      /* IW_QPE_* not yet taken by the glue */
	void *glue;           /* the glue's connection object */
	unsigned progress_got; /* iw_progress's walk that last moved its octets (loose) */
	/* glue: tx work appeared (may be NULL); posted: by iw_post_send,
	 * which the glue may leave queued for a while (lib/io/cm_batch.c) */
	void (*wake)(struct iw_qp *qp, bool posted);

	/* send queue ring: [sq_head, sq_tail) posted, [sq_head, sq_next) started */
	struct iw_swqe *sq;
	struct iw_wqe_sges sq_sges, rq_sges;
	uint32_t sq_size, sq_head, sq_tail, sq_next;
	/* receive queue ring */
	struct iw_rwqe *rq;
	uint32_t rq_size, rq_head, rq_tail;

	/* ORQ: indexes of our Read WQEs awaiting their Read Response, in order */
	uint32_t *orq;
	uint32_t orq_size, orq_head, orq_cnt;
	/* IRQ: Read Responses (and atomic responses) owed */
	struct iw_irqe *irq;
	uint32_t irq_size, irq_head, irq_cnt;

	/* connection */
	bool connected;
	struct iw_qp_conn conn;
	bool rtr_wait;        /* responder: nothing goes out before the RTR */
	bool rtr_pending;     /* initiator: the RTR is the next FPDU */
	bool rtr_read_resp;   /* owe the zero-length Read Response to a READ RTR */
	bool wake_pending;    /* a zero-length RDMA Write is to go out (iw_qp_wake) */
	bool terminated;      /* TERMINATE queued or received: no more FPDUs */
	struct iw_fpdu_tx ftx;
	struct iw_fpdu_rx frx;
	struct iw_txq *txq;
	uint32_t tx_msn[4];   /* next MSN we send per untagged queue */
	uint32_t rx_msn[4];   /* next MSN we expect per untagged queue */
	uint32_t next_req_id; /* RFC 7306 atomic request ids */
	uint32_t rtr_sink_stag; /* responder: STag of the READ RTR to answer */
	bool rtr_read_sent;   /* initiator: a zero-length Read Response is due */
	enum { IW_TX_NONE, IW_TX_SQ, IW_TX_IRQ } tx_cur; /* message mid-segmentation */
	/* iw_qp_rx_direct handed out a destination the glue may be receiving
	 * into right now: the receive side's flush (which completes that WQE
	 * and drops the MR reference) waits for the glue's next engine call. */
	bool rx_direct_busy;
	bool flush_pending;   /* ERR reached with octets still queued */
	bool sqd_pending;     /* SQD entered, SQ_DRAINED not raised yet */
	/* A LOCAL_INV (sq index inv_wait_idx) waits for placements into its
	 * STag to end; nothing behind it starts meanwhile. */
	bool inv_wait;
	uint32_t inv_wait_idx;
	bool last_wqe_raised; /* LAST_WQE_REACHED raised for this ERR */
	/* iw_qp_inject_fault(IW_FAULT_TX_CRC): FPDUs to frame until the one
	 * whose CRC is corrupted (0: none armed). */
	uint32_t fault_crc_nth;

	/* inbound message in progress */
	struct {
		uint8_t *dst;         /* where the current segment's payload goes */
		/* Read Response: octets from dst to the end of both the sink
		 * and the region (0 otherwise): the bound of a read ahead
		 * into the segments that follow (qp_rx_spec.c). */
		uint64_t dst_room;
		struct iw_mr_int *mr; /* reference for a tagged placement */
		struct iw_rwqe *rwqe; /* untagged Send being received (&wqe) */
		/* The receive WQE being filled, moved out of the RQ or SRQ ring
		 * so that its slot can take a new post at once. */
		struct iw_rwqe_buf wqe;
		bool have_rwqe;
		/* The status the receive being filled completes with when the
		 * QP dies because of it (iw_term_wc_status); 0: it flushes. */
		enum iw_wc_status rwqe_fault;
		uint64_t msg_len;     /* untagged: octets placed by the message so far */
		bool skip;            /* zero-length / ignored payload */
		unsigned op;          /* RDMAP opcode of the segment */
		unsigned send_op;     /* opcode of the untagged Send in progress */
		uint32_t mo;          /* untagged: MO of the segment */
		bool last;
		bool held;            /* the segment goes to hold.tail (in.dst) */
		struct iw_irqe irqe;  /* Read Request / atomic validated, queued at its end */
	} in;
	/* For the read plan only (iw_qp_status.tail): inbound RDMA Writes'
	 * tagged offset where the one in progress began, and the length of
	 * the last one that ended (0: none yet); the last Send's length. */
	struct {
		bool in_msg;
		uint64_t start;
		uint64_t last_len;
	} rx_wr;
	uint64_t rx_send_last;

	/* Messages held for receives not posted yet, oldest first (qp_recv.c);
	 * bounded by max_num messages and max_bytes allocated octets. */
	struct {
		struct iw_held *head, *tail;
		uint32_t num, max_num;
		/* bytes: the held messages' resv, at most max_bytes (memory:
		 * a message still arriving may have up to twice its resv
		 * allocated, as its buffer grows by doubling). */
		uint64_t bytes, max_bytes;
		bool assembling;       /* tail is a message still arriving */
		/* The receiving thread found no room and stopped reading
		 * (iw_qp_rx_room): the next receive posted wakes the glue. */
		atomic_bool starved;
	} hold;

	/* error */
	uint32_t term;        /* TERMINATE sent or received, or IW_TERM_NONE */
	bool term_from_peer;
	struct iw_terminate peer_term;
	const char *err_msg;
};

/* Take and release qp->lock. Completions and events raised under it are
 * queued at once, but their eventfd writes wait until the lock is released
 * (iw_evq_defer_begin): a woken application thread then finds the lock free
 * and the loop thread does not make a system call while holding it. */
/* The slot of a free-running SQ or RQ index: their sizes are powers of two
 * (qp.c ring_size), so a mask instead of %, whose division was on every
 * WQE posted, sent, received and completed. */
static inline uint32_t iw_qp_slot(uint32_t i, uint32_t size)
{
	return i & (size - 1);
}

static inline void iw_qp_lock(struct iw_qp *qp)
{
	iw_evq_defer_begin();
	pthread_mutex_lock(&qp->lock);
}

static inline void iw_qp_unlock(struct iw_qp *qp)
{
	pthread_mutex_unlock(&qp->lock);
	iw_evq_defer_end();
}

/* qp->state is written under qp->lock, always through this store, so
 * that a thread without the lock may read it with iw_qp_state_peek: the
 * transmit path asks after every write whether the QP went to ERR, which
 * cost a lock round trip per message. */
static inline void iw_qp_set_state(struct iw_qp *qp, enum iw_qp_state s)
{
	__atomic_store_n(&qp->state, s, __ATOMIC_RELEASE);
}

static inline enum iw_qp_state iw_qp_state_peek(const struct iw_qp *qp)
{
	return __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
}

/* Engine entry points (lib/engine/qp_*.c). All take qp->lock themselves unless
 * named _locked. */
void iw_qp_start(struct iw_qp *qp, const struct iw_qp_conn *c);
#ifdef IW_FUZZING
/* Fuzzing builds only: the iw_fpdu_rx_init flags iw_qp_start gives a QP's
 * receive decoder (IW_RX_SKIP_CRC unless the target clears it), so that
 * mutated inputs get past the CRC. fuzz/fuzz_qp_rx.c sets it per input. */
extern unsigned iw_fuzz_qp_rx_flags;
/* Fuzzing builds only: make a QP in RESET (no connection, no glue, no
 * poll set) as iw_create_qp makes one with attr on its PD, in the same
 * memory and context slot: what it allocated since is freed, its number
 * taken anew. fuzz/fuzz_qp_rx.c keeps one QP across inputs. 0, EBUSY
 * (not in RESET, connected or polled; nothing changed) or EINVAL (attr
 * that iw_create_qp refuses; nothing changed). */
int iw_fuzz_qp_renew(struct iw_qp *qp, struct iw_qp_init_attr *attr);
#endif
int iw_qp_rx(struct iw_qp *qp, const uint8_t *in, size_t len, size_t *consumed);
/* Direct placement: up to the returned number of payload octets may be
 * received straight to *dst, then reported with iw_qp_rx_direct_done. The
 * destination stays valid (even if another thread moves the QP to ERR)
 * until the glue's next call into the engine for this QP. */
size_t iw_qp_rx_direct(struct iw_qp *qp, uint8_t **dst);
int iw_qp_rx_direct_done(struct iw_qp *qp, size_t n);
/* Outbound octets ready: fills iov (up to cap), returns count (0: nothing). */
int iw_qp_tx_iov(struct iw_qp *qp, struct iovec *iov, int cap);
void iw_qp_tx_sent(struct iw_qp *qp, size_t n);
/* iw_qp_tx_sent then iw_qp_tx_iov, under one lock. */
int iw_qp_tx_sent_iov(struct iw_qp *qp, size_t n, struct iovec *iov, int cap);
bool iw_qp_tx_pending(struct iw_qp *qp);
/* Frame what may go out into the transmit queue without writing it: 0,
 * with the messages and octets queued unwritten; 1 when not everything
 * that may go fitted in the queue (write now); or a negative errno. */
int iw_qp_tx_stage(struct iw_qp *qp, uint32_t *out_msgs, size_t *out_bytes);
/* Queue a zero-length RDMA Write (STag 1) at the next message boundary: it
 * makes a peer that left earlier FPDUs unread look at its socket again
 * (iw_mpa_opts.wake_ms). Ignored unless the QP is connected and in RTS. */
void iw_qp_wake(struct iw_qp *qp);
/* Segments framed from now on carry at most mulpdu octets of ULPDU. */
void iw_qp_set_mulpdu(struct iw_qp *qp, uint32_t mulpdu);
unsigned iw_qp_take_events(struct iw_qp *qp);
/* The link's locked steps (qp_link.h): one receive batch, and the
 * QP's events and state taken under one lock. */
int iw_qp_rx_batch(struct iw_qp *qp, const struct iw_qp_rx_batch *b, struct iw_qp_status *st);
size_t iw_qp_rx_direct_hint(struct iw_qp *qp, uint8_t **dst, uint32_t *seg_len);
void iw_qp_status_locked(struct iw_qp *qp, struct iw_qp_status *st);
bool iw_qp_tx_pending_locked(const struct iw_qp *qp);
/* The connection closed (FIN or error from TCP): ERR and flush. */
void iw_qp_conn_lost(struct iw_qp *qp, bool graceful);
/* Move to ERR locally: flush everything, no TERMINATE. */
void iw_qp_set_error_locked(struct iw_qp *qp);
/* Protocol violation detected: queue TERMINATE term (copying the offending
 * header when seg is given), raise the async event, go to ERR. */
void iw_qp_terminate_locked(struct iw_qp *qp, uint16_t term, const struct iw_ddp_seg *seg,
			    const char *why);

/* Internal helpers shared by the engine files. */
void iw_qp_sq_progress_locked(struct iw_qp *qp);
void iw_qp_complete_sq_locked(struct iw_qp *qp);
void iw_qp_check_drained_locked(struct iw_qp *qp);
void iw_qp_flush_locked(struct iw_qp *qp);
/* Every WQE not yet sent is an RDMA Read, fewer than a batch of them,
 * while enough responses are owed that the peer has work meanwhile:
 * neither a post nor a completing response asks the glue to write them
 * (qp.c, IW_READ_HOLD_*). */
bool iw_qp_reads_held_locked(const struct iw_qp *qp);
/* The receive side only (deferred while rx_direct_busy). */
void iw_qp_flush_rq_locked(struct iw_qp *qp);
/* The glue is back in the engine: a direct destination is no longer in
 * use, and a receive flush that waited for it runs. */
void iw_qp_rx_direct_settle_locked(struct iw_qp *qp);
/* The read-ahead pieces after a direct offer of `direct` octets at dst
 * (qp_rx_spec.c): fills up to IW_QP_RX_SPEC_MAX of sp, returns how many. */
unsigned iw_qp_rx_spec_locked(struct iw_qp *qp, size_t direct, const uint8_t *dst,
			      struct iw_qp_rx_spec *sp);
int iw_qp_tx_build_locked(struct iw_qp *qp);
/* Queue a TERMINATE FPDU with header h (qp_tx.c; room is reserved). */
int iw_qp_tx_term_locked(struct iw_qp *qp, const uint8_t *h, size_t len);
/* The DDP and RDMAP headers of a TERMINATE (the whole ULPDU) into h: the
 * triple, and for DDP/RDMAP errors the offending segment's headers copied
 * from seg (may be NULL). Returns the length or a negative errno. */
int iw_term_hdr_build(uint8_t *h, size_t cap, uint16_t term, uint32_t msn,
		      const struct iw_ddp_seg *seg);
/* The completion status of the WR at fault for TERMINATE term: one we
 * sent (from_peer false: our receive or our Read/atomic the peer's
 * message broke) or the peer's (our request it names). IW_WC_WR_FLUSH_ERR
 * when no WR can be at fault (LLP errors). The table is in qp_term.c and
 * is documented in verbs.h (iw_poll_cq). */
enum iw_wc_status iw_term_wc_status(uint32_t term, bool from_peer);
/* w caused the QP's error: it completes, in its turn, with the status the
 * table gives for term instead of flushing. */
void iw_qp_fault_swqe_locked(struct iw_swqe *w, uint32_t term, bool from_peer);
/* RNR emulation (qp_recv.c; the memory in qp.c). Whether new untagged messages must be held:
 * something is held already (they are delivered in MSN order). */
static inline bool iw_qp_holding(const struct iw_qp *qp)
{
	return qp->hold.head != NULL;
}
/* Whether the QP may hold a message that finds no receive. */
bool iw_qp_hold_on(const struct iw_qp *qp);
/* How many octets the receiving thread may read now without what they
 * bring overrunning the hold's limits (SIZE_MAX without a hold): reading
 * stops instead, and TCP's window pushes back on the sender as an RNR NAK
 * would (qp_recv.c). No lock: only the receiving thread adds to the hold. */
size_t iw_qp_rx_room(struct iw_qp *qp);
/* The header of a segment of a held message (a new one, or the one being
 * held): room for its payload, in.dst and in.held set. 0 or the TERMINATE
 * (no buffer beyond the limits or without memory). */
uint16_t iw_qp_hold_seg_locked(struct iw_qp *qp, const struct iw_ddp_seg *s, unsigned op);
/* The segment ended: at the message's last, its MSN, invalidation and
 * completion fields, then delivery if a receive waits. 0 or a TERMINATE. */
uint16_t iw_qp_hold_end_locked(struct iw_qp *qp, const struct iw_ddp_seg *s);
/* Complete held messages into posted receives, oldest first. */
void iw_qp_hold_deliver_locked(struct iw_qp *qp);
/* Drop every held message (TERMINATE, RESET, destroy): they never
 * completed. */
void iw_qp_hold_free_locked(struct iw_qp *qp);
/* Drop one held message, unlinked by the caller. */
void iw_qp_held_free_locked(struct iw_qp *qp, struct iw_held *h);
/* The RQ's ring, allocated at the first post. 0 or ENOMEM. */
int iw_qp_rq_alloc_locked(struct iw_qp *qp);

/* Drop the transmit queue unsent, with the references its marks hold. */
void iw_qp_txq_discard_locked(struct iw_qp *qp);

#endif
