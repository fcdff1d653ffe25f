/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit queue (qp_txq.c): the bottom of the QP's files. Every
 * function takes the QP locked.
 */
#ifndef IW_QP_TXQ_H
#define IW_QP_TXQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "engine/qp.h"

/* Counters to zero (the arrays are written before they are read). */
void iw_txq_reset(struct iw_txq *q);
/* The QP's queue while it transmits: the context's spare or a new one;
 * NULL when out of memory. */
struct iw_txq *iw_txq_get(struct iw_qp *qp);
/* Let the queue go (nothing in it may still be needed): to the context's
 * spare slot, or freed when the slot is taken. */
void iw_txq_put(struct iw_qp *qp);
/* iw_context_core_free: free the spare. */
void iw_txq_spare_free(struct iw_context *ctx);
/* q NULL or every iovec written. */
bool iw_txq_empty(const struct iw_txq *q);
/* Room for one FPDU of ulpdu octets with n payload pieces; reserve keeps
 * the room a TERMINATE needs free. */
bool iw_txq_room(const struct iw_qp *qp, size_t ulpdu, int n, bool reserve);
/* Frame one FPDU into the queue (room already checked): 0 or -errno. */
int iw_txq_fpdu(struct iw_qp *qp, const uint8_t *hdr, size_t hdr_len, const struct iovec *pay,
		int pay_cnt);
/* Once the octets queued so far are written: mark SQ WQE sq_idx
 * transmitted (sq) and drop put's reference (may be NULL). */
void iw_txq_mark(struct iw_qp *qp, uint32_t sq_idx, bool sq, struct iw_mr_int *put);

#endif
