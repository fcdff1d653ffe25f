/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Work request intake shared by QPs and SRQs: validating a caller's WR
 * against the STag table and turning it into a WQE that holds references
 * on every MR it touches (so the MR cannot be deregistered under it).
 */
#ifndef IW_WR_H
#define IW_WR_H

#include "engine/qp.h"

/* Fill a receive WQE from wr (SGEs checked for LOCAL_WRITE under pd).
 * 0, EINVAL (too many SGEs, bad lkey/PD), EACCES, EFAULT. */
int iw_rwqe_fill(struct iw_rwqe *w, struct iw_context *ctx, struct iw_pd *pd,
		 const struct iw_recv_wr *wr, uint32_t max_sge);
void iw_rwqe_release(struct iw_rwqe *w);
/* Fill a send WQE from wr for qp. 0 or a positive errno. */
int iw_swqe_fill(struct iw_swqe *w, struct iw_qp *qp, const struct iw_send_wr *wr);
void iw_swqe_release(struct iw_swqe *w);
/* Copy (or scatter) n payload octets at message offset off of a receive
 * WQE: returns octets placed (less than n only past the WQE's end). */
uint64_t iw_rwqe_scatter(struct iw_rwqe *w, uint64_t off, const uint8_t *src, uint64_t n);
/* The contiguous destination at message offset off: pointer and octets. */
uint64_t iw_rwqe_span(struct iw_rwqe *w, uint64_t off, uint8_t **dst);
/* iovecs for n payload octets of a send WQE from offset off; returns count
 * (at most cap). */
int iw_swqe_gather(const struct iw_swqe *w, uint64_t off, uint64_t n, struct iovec *iov, int cap);

#endif
