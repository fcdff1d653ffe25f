/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Work request intake shared by QPs and SRQs: validating a caller's WR
 * against the STag table and turning it into a WQE that holds references
 * on every MR it touches (so the MR cannot be deregistered under it).
 */
#ifndef IW_WR_H
#define IW_WR_H

#include "engine/qp.h"

/* What each send WR opcode is: one row per enum iw_wr_opcode value in
 * wr.c, so that intake, transmit and completion ask the table instead of
 * keeping switches. iw_wr_info range-checks: NULL for a value with no
 * row. */
enum iw_wrf {
	IW_WRF_RFC7306 = 1 << 0, /* only on IW_QP_CREATE_RFC7306 QPs */
	IW_WRF_ORQ = 1 << 1,     /* a request the peer answers: ORD-limited, done at its response */
	IW_WRF_LOCAL = 1 << 2,   /* runs here when it reaches the front: no FPDU */
	IW_WRF_TAGGED = 1 << 3,  /* its data goes as tagged RDMA Write segments */
	IW_WRF_IMM = 1 << 4,     /* ends with an RFC 7306 Immediate Data message */
};
struct iw_wr_info {
	bool valid;
	enum iw_wc_opcode wc; /* completion opcode */
	uint8_t op, op_se;    /* RDMAP opcode of its message; with IW_SEND_SOLICITED */
	uint8_t flags;        /* IW_WRF_* */
};
/* The table (wr.c), open to the inline lookup: transmit asks it several
 * times per FPDU, and a call each time showed in profiles. */
extern const struct iw_wr_info iw_wr_infos[];
extern const unsigned iw_wr_infos_len;
static inline const struct iw_wr_info *iw_wr_info(enum iw_wr_opcode op)
{
	if ((unsigned)op >= iw_wr_infos_len || !iw_wr_infos[op].valid)
		return NULL;
	return &iw_wr_infos[op];
}
static inline bool iw_wr_has(enum iw_wr_opcode op, unsigned f)
{
	const struct iw_wr_info *i = iw_wr_info(op);
	return i && (i->flags & f) == f;
}

/* Fill a receive WQE from wr (SGEs checked for LOCAL_WRITE under pd).
 * 0, EINVAL (too many SGEs, bad lkey/PD), EACCES, EFAULT. */
int iw_rwqe_fill(struct iw_rwqe *w, struct iw_context *ctx, struct iw_pd *pd,
		 const struct iw_recv_wr *wr, uint32_t max_sge);
void iw_rwqe_release(struct iw_rwqe *w);
/* A send flag only iw_bind_mw sets: the BIND_MW is a type 1 window's
 * (iw_post_send refuses it, and refuses type 1 windows without it). */
#define IW_SEND_VERB_BIND (1u << 31)

/* Fill a send WQE from wr for qp. 0 or a positive errno. */
int iw_swqe_fill(struct iw_swqe *w, struct iw_qp *qp, const struct iw_send_wr *wr);
void iw_swqe_release(struct iw_swqe *w, const struct iw_alloc_ops *a);
/* Copy (or scatter) n payload octets at message offset off of a receive
 * WQE: returns octets placed (less than n only past the WQE's end). */
uint64_t iw_rwqe_scatter(struct iw_rwqe *w, uint64_t off, const uint8_t *src, uint64_t n);
/* The contiguous destination at message offset off: pointer and octets. */
uint64_t iw_rwqe_span(struct iw_rwqe *w, uint64_t off, uint8_t **dst);
/* iovecs for n payload octets of a send WQE from offset off; returns count
 * (at most cap). */
int iw_swqe_gather(const struct iw_swqe *w, uint64_t off, uint64_t n, struct iovec *iov, int cap);

#endif
