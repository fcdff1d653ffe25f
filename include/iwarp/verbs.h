/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libiwarp verbs: protection domains, memory regions, completion queues,
 * queue pairs and shared receive queues, in the shapes of rdma-core's
 * libibverbs so that code written for it ports by renaming ibv_ to iw_.
 * No ibv_ symbol is defined: the real libibverbs can be linked beside us.
 *

 * Errors (one conversion point, as in libibverbs): calls that return a
 * pointer return NULL and set errno; calls that return int return 0 or a
 * positive errno value. Every free/destroy accepts NULL.
 *
 * Threads: iw_post_send, iw_post_recv, iw_post_srq_recv, iw_poll_cq and
 * iw_req_notify_cq may be called from any thread. Creation and destruction
 * of objects must not race with use of the same object.
 */
#ifndef IWARP_VERBS_H
#define IWARP_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct iw_context;
struct iw_pd;
struct iw_cq;
struct iw_qp;
struct iw_srq;
struct iw_comp_channel;

/* ============================================================ context */

enum iw_context_attr_mask {
	IW_CONTEXT_ATTR_PCAP = 1 << 0, /* pcap_path is valid */
};

struct iw_context_attr {
	uint32_t comp_mask;
	/* The application's loop. NULL: the context starts its own loop
	 * thread (convenience mode). */
	struct event_base *base;
	/* Trace every connection's bytes as pcap (IWARP_PCAP in the
	 * environment does the same for programs that do not set it). */
	const char *pcap_path;
};

struct iw_context *iw_context_new(const struct iw_context_attr *attr);
int iw_context_free(struct iw_context *ctx);

/* Asynchronous events: QP fatal/terminate, CQ overflow, SRQ limit. The fd
 * becomes readable when an event is queued; iw_get_async_event never
 * blocks (EAGAIN when none is queued). */
enum iw_event_type {
	IW_EVENT_CQ_ERR = 1,         /* CQ overflow: completions were lost */
	IW_EVENT_QP_FATAL,           /* QP went to ERR (local cause) */
	IW_EVENT_QP_REQ_ERR,         /* peer's request violated the protocol: we sent TERMINATE */
	IW_EVENT_QP_ACCESS_ERR,      /* remote access error: we sent TERMINATE */
	IW_EVENT_QP_TERMINATE,       /* peer sent TERMINATE: see term */
	IW_EVENT_QP_LAST_WQE_REACHED,
	IW_EVENT_SRQ_LIMIT_REACHED,
	IW_EVENT_SQ_DRAINED,
};
const char *iw_event_type_str(enum iw_event_type t);

struct iw_async_event {
	enum iw_event_type event_type;
	union {
		struct iw_cq *cq;
		struct iw_qp *qp;
		struct iw_srq *srq;
	} element;
	/* For the QP_* events: the TERMINATE triple sent or received
	 * (IW_TERM() packing, see wire.h) and whether it came from the peer. */
	uint16_t term;
	bool term_from_peer;
};

int iw_context_async_fd(struct iw_context *ctx);
int iw_get_async_event(struct iw_context *ctx, struct iw_async_event *event);
void iw_ack_async_event(struct iw_async_event *event);

/* ============================================================ memory */

struct iw_pd *iw_alloc_pd(struct iw_context *ctx);
int iw_dealloc_pd(struct iw_pd *pd); /* EBUSY while MRs, QPs or SRQs use it */

enum iw_access_flags {
	IW_ACCESS_LOCAL_WRITE = 1 << 0,
	IW_ACCESS_REMOTE_WRITE = 1 << 1, /* requires LOCAL_WRITE */
	IW_ACCESS_REMOTE_READ = 1 << 2,
	IW_ACCESS_REMOTE_ATOMIC = 1 << 3, /* requires LOCAL_WRITE */
};

/* A registered region. lkey == rkey == the STag: 24-bit index and an 8-bit
 * key that changes on every (re-)registration of that index. */
struct iw_mr {
	struct iw_context *context;
	struct iw_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct iw_mr *iw_reg_mr(struct iw_pd *pd, void *addr, size_t length, int access);
/* EBUSY while a posted WR or an in-flight inbound placement references it;
 * the STag is invalid to the peer from the moment this returns 0. */
int iw_dereg_mr(struct iw_mr *mr);
/* An MR for fast registration (IW_WR_REG_MR): invalid until registered. */
struct iw_mr *iw_alloc_mr(struct iw_pd *pd, uint32_t max_num_sg);
/* The next key for a fast-registration MR's STag, as ibv_inc_rkey. */
static inline uint32_t iw_inc_rkey(uint32_t rkey)
{
	return (rkey & 0xFFFFFF00u) | ((rkey + 1) & 0xFF);
}

struct iw_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* ============================================================ CQ */

struct iw_comp_channel {
	struct iw_context *context;
	int fd; /* readable when a CQ armed on it has an event */
	int refcnt;
};

struct iw_comp_channel *iw_create_comp_channel(struct iw_context *ctx);
int iw_destroy_comp_channel(struct iw_comp_channel *channel); /* EBUSY while CQs use it */

struct iw_cq *iw_create_cq(struct iw_context *ctx, int cqe, void *cq_context,
			   struct iw_comp_channel *channel, int comp_vector);
int iw_destroy_cq(struct iw_cq *cq); /* EBUSY while QPs use it */
/* Arm for the next completion (or the next solicited one). */
int iw_req_notify_cq(struct iw_cq *cq, int solicited_only);
/* Wait for an event on the channel (blocks unless its fd is nonblocking). */
int iw_get_cq_event(struct iw_comp_channel *channel, struct iw_cq **cq, void **cq_context);
void iw_ack_cq_events(struct iw_cq *cq, unsigned int nevents);

enum iw_wc_status {
	IW_WC_SUCCESS = 0,
	IW_WC_LOC_LEN_ERR,
	IW_WC_LOC_QP_OP_ERR,
	IW_WC_LOC_PROT_ERR,
	IW_WC_WR_FLUSH_ERR,
	IW_WC_MW_BIND_ERR,
	IW_WC_BAD_RESP_ERR,
	IW_WC_LOC_ACCESS_ERR,
	IW_WC_REM_INV_REQ_ERR,
	IW_WC_REM_ACCESS_ERR,
	IW_WC_REM_OP_ERR,
	IW_WC_RETRY_EXC_ERR,
	IW_WC_RNR_RETRY_EXC_ERR,
	IW_WC_LOC_RDD_VIOL_ERR,
	IW_WC_REM_INV_RD_REQ_ERR,
	IW_WC_REM_ABORT_ERR,
	IW_WC_INV_EECN_ERR,
	IW_WC_INV_EEC_STATE_ERR,
	IW_WC_FATAL_ERR,
	IW_WC_RESP_TIMEOUT_ERR,
	IW_WC_GENERAL_ERR,
};
const char *iw_wc_status_str(enum iw_wc_status status);

enum iw_wc_opcode {
	IW_WC_SEND,
	IW_WC_RDMA_WRITE,
	IW_WC_RDMA_READ,
	IW_WC_COMP_SWAP,
	IW_WC_FETCH_ADD,
	IW_WC_BIND_MW,
	IW_WC_LOCAL_INV,
	IW_WC_REG_MR,
	IW_WC_RECV = 1 << 7,
	IW_WC_RECV_RDMA_WITH_IMM,
};
const char *iw_wc_opcode_str(enum iw_wc_opcode op);

enum iw_wc_flags {
	IW_WC_WITH_IMM = 1 << 1,
	IW_WC_WITH_INV = 1 << 3,
	IW_WC_SOLICITED = 1 << 7, /* the message was a Send with SE */
};

struct iw_wc {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	uint32_t vendor_err; /* the TERMINATE triple behind an error, if any */
	uint32_t byte_len;
	uint32_t imm_data;   /* network order, as libibverbs */
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	unsigned int wc_flags;
};

/* Poll up to num completions; returns how many (>= 0) or -errno. */
int iw_poll_cq(struct iw_cq *cq, int num_entries, struct iw_wc *wc);

/* ============================================================ QP, SRQ */

enum iw_qp_type { IW_QPT_RC = 2 };

enum iw_qp_state {
	IW_QPS_RESET,
	IW_QPS_INIT,
	IW_QPS_RTR,
	IW_QPS_RTS,
	IW_QPS_SQD,
	IW_QPS_SQE,
	IW_QPS_ERR,
};
const char *iw_qp_state_str(enum iw_qp_state s);

struct iw_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data; /* at least 256 */
};

enum iw_qp_create_flags {
	/* RFC 7306 atomics and immediate data on this QP: only peers that
	 * implement RFC 7306 understand them (siw and Chelsio do not). */
	IW_QP_CREATE_RFC7306 = 1 << 0,
};

struct iw_qp_init_attr {
	void *qp_context;
	struct iw_cq *send_cq;
	struct iw_cq *recv_cq;
	struct iw_srq *srq;
	struct iw_qp_cap cap;
	enum iw_qp_type qp_type;
	int sq_sig_all;
	uint32_t create_flags;
};

struct iw_qp *iw_create_qp(struct iw_pd *pd, struct iw_qp_init_attr *attr);
int iw_destroy_qp(struct iw_qp *qp);

enum iw_qp_attr_mask {
	IW_QP_STATE = 1 << 0,
	IW_QP_CUR_STATE = 1 << 1,
	IW_QP_ACCESS_FLAGS = 1 << 3,
	IW_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	IW_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	IW_QP_CAP = 1 << 19,
};

struct iw_qp_attr {
	enum iw_qp_state qp_state;
	enum iw_qp_state cur_qp_state;
	int qp_access_flags;
	struct iw_qp_cap cap;
	uint8_t max_rd_atomic;      /* ORD */
	uint8_t max_dest_rd_atomic; /* IRD */
};

int iw_modify_qp(struct iw_qp *qp, struct iw_qp_attr *attr, int attr_mask);
int iw_query_qp(struct iw_qp *qp, struct iw_qp_attr *attr, int attr_mask,
		struct iw_qp_init_attr *init_attr);
uint32_t iw_qp_num(const struct iw_qp *qp);

enum iw_wr_opcode {
	IW_WR_RDMA_WRITE,
	IW_WR_RDMA_WRITE_WITH_IMM, /* RFC 7306 QPs only */
	IW_WR_SEND,
	IW_WR_SEND_WITH_IMM,       /* RFC 7306 QPs only */
	IW_WR_RDMA_READ,
	IW_WR_ATOMIC_CMP_AND_SWP,  /* RFC 7306 QPs only */
	IW_WR_ATOMIC_FETCH_AND_ADD, /* RFC 7306 QPs only */
	IW_WR_LOCAL_INV,
	IW_WR_BIND_MW,
	IW_WR_SEND_WITH_INV,
	IW_WR_REG_MR = 0x20,
};

enum iw_send_flags {
	IW_SEND_FENCE = 1 << 0,
	IW_SEND_SIGNALED = 1 << 1,
	IW_SEND_SOLICITED = 1 << 2, /* Send with SE */
	IW_SEND_INLINE = 1 << 3,
};

struct iw_send_wr {
	uint64_t wr_id;
	struct iw_send_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
	enum iw_wr_opcode opcode;
	unsigned int send_flags;
	union {
		uint32_t imm_data;       /* network order */
		uint32_t invalidate_rkey;
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
	} wr;
	struct {
		struct iw_mr *mr;
		uint32_t key;
		int access;
		uint64_t iova;
		uint64_t length;
		void *addr; /* the local buffer the MR describes from now on */
	} reg;
};

struct iw_recv_wr {
	uint64_t wr_id;
	struct iw_recv_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
};

int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr, struct iw_send_wr **bad_wr);
int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr);

struct iw_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit; /* SRQ_LIMIT_REACHED when fewer WRs remain */
};
struct iw_srq_init_attr {
	void *srq_context;
	struct iw_srq_attr attr;
};
enum iw_srq_attr_mask { IW_SRQ_MAX_WR = 1 << 0, IW_SRQ_LIMIT = 1 << 1 };

struct iw_srq *iw_create_srq(struct iw_pd *pd, struct iw_srq_init_attr *attr);
int iw_modify_srq(struct iw_srq *srq, struct iw_srq_attr *attr, int attr_mask);
int iw_destroy_srq(struct iw_srq *srq);
int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr);

#ifdef __cplusplus
}
#endif
#endif /* IWARP_VERBS_H */
