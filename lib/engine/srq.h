/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues: one ring of receive WQEs that many QPs take from.
 * A QP copies the WQE it takes (so the ring slot is free at once) and holds
 * its MR references until the message completes. When the number of WQEs
 * left falls below an armed limit, IW_EVENT_SRQ_LIMIT_REACHED is raised
 * once and the limit disarms (verbs semantics).
 */
#ifndef IW_SRQ_H
#define IW_SRQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "engine/qp.h"

/* Largest max_wr an SRQ accepts (iw_create_srq, iw_modify_srq). */
#define IW_MAX_SRQ_WR 16384

struct iw_srq {
	struct iw_context *context;
	struct iw_pd *pd;
	void *srq_context;
	pthread_mutex_t lock;
	struct iw_rwqe *ring;
	struct iw_wqe_sges sges;
	uint32_t size, head, count;
	uint32_t max_sge;
	uint32_t limit;  /* 0: disarmed */
	bool newest_first; /* iw_set_srq_order */
	atomic_int use;  /* QPs attached */
};

/* Take the oldest WQE (the newest with IW_SRQ_NEWEST_FIRST) into *out.
 * false when the SRQ is empty. */
bool iw_srq_take(struct iw_srq *srq, struct iw_rwqe_buf *out);

#ifdef IW_FUZZING
/* Fuzzing builds only (-DIW_FUZZING, never the library): make an SRQ no
 * QP uses as iw_create_srq made it (oldest first) with attr (whose max_wr
 * and max_sge must be its own), in the same memory: the WRs still posted
 * go without a completion, as iw_destroy_srq lets them. fuzz/fuzz_qp_rx.c
 * keeps one SRQ across inputs. 0, EBUSY (a QP uses it) or EINVAL (other
 * sizes); nothing changed on error. */
int iw_fuzz_srq_renew(struct iw_srq *srq, const struct iw_srq_attr *attr);
#endif

#endif
