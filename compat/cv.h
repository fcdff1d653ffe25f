/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * compat/: libibverbs.so.1 and librdmacm.so.1 over libiwarp's public API.
 *
 * The objects an application sees (struct ibv_context, ibv_pd, ibv_cq ...)
 * are rdma-core's own structs, each the first member of a wrapper that
 * holds the libiwarp object behind it. Every ibv_context of the process
 * shares one iw_context (polling mode unless IWARP_POLL=0, IWARP_LOOPS loop
 * threads; compat/ibv_device.c): a PD allocated on the context
 * ibv_open_device returned can then carry a QP that librdmacm makes on a
 * CM id, as applications expect when they mix the two.
 *
 * librdmacm reaches libibverbs' wrappers through the few cv_* calls of the
 * private version node IWARP_COMPAT_PRIVATE (compat/libibverbs.map).
 */
#ifndef IWARP_COMPAT_CV_H
#define IWARP_COMPAT_CV_H

#include <errno.h>
#include <stdlib.h>

#include <infiniband/verbs.h>
#include <iwarp/cm.h>
#include <iwarp/verbs.h>

#define CV_EXPORT __attribute__((visibility("default")))
#define cv_container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

struct cv_context {
	struct verbs_context vctx; /* ends with the struct ibv_context */
	struct iw_context *iw;
};

struct cv_pd {
	struct ibv_pd pd;
	struct iw_pd *iw;
};

struct cv_mr {
	struct ibv_mr mr;
	struct iw_mr *iw;
};

struct cv_channel {
	struct ibv_comp_channel ch;
	struct iw_comp_channel *iw;
};

struct cv_cq {
	struct ibv_cq cq;
	struct iw_cq *iw;
	struct cv_cq *next; /* the context's CQs, for asynchronous events */
};

struct cv_srq {
	struct ibv_srq srq;
	struct iw_srq *iw;
};

struct cv_qp {
	struct ibv_qp qp;
	struct iw_qp *iw;
	struct iw_cm_id *cm; /* the CM id that owns the QP, or NULL */
	struct ibv_qp **slot; /* where the CM id points at us (rdma_cm_id.qp) */
	int sq_sig_all;
};

/* Free a wrapper whose libiwarp object could not be made, keeping the
 * errno that libiwarp set. Returns NULL, for the caller to return. */
static inline void *cv_fail_free(void *wrapper)
{
	int err = errno;
	free(wrapper);
	errno = err;
	return NULL;
}

static inline struct cv_context *cv_ctx(struct ibv_context *c)
{
	return cv_container_of(c, struct cv_context, vctx.context);
}

/* Private calls for librdmacm (IWARP_COMPAT_PRIVATE). */
struct iw_context *cv_iw_context(struct ibv_context *ctx);
struct ibv_qp *cv_create_cm_qp(struct iw_cm_id *id, struct ibv_qp **slot, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
void cv_orphan_qp(struct ibv_qp *qp);

/* Inside libibverbs. */
extern const struct verbs_context cv_ops_template;
int cv_errno_ptr(int err);
void cv_qp_fill_cap(struct cv_qp *q, struct ibv_qp_cap *cap);
int cv_rfc7306(void);
/* IWARP_RECV_HOLD (ibv_hold.c): the create flag for a QP (none on an SRQ),
 * and the limits for the QP of id, which has max_recv_wr receives (0 or a
 * positive errno). */
uint32_t cv_hold_flag(int srq);
int cv_hold_limits(struct iw_cm_id *id, uint32_t max_recv_wr);
void cv_cq_register(struct cv_context *c, struct cv_cq *cq, int add);
struct ibv_cq *cv_cq_lookup(struct cv_context *c, struct iw_cq *iw);
int cv_access_to_iw(unsigned int access, int *out);
int cv_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
int cv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int cv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int cv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int cv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int cv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len);
int cv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_qp *cv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
struct ibv_mw *cv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int cv_dealloc_mw(struct ibv_mw *mw);
int cv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* An IBV_WR_BIND_MW (type 2 window) into d's wr.bind_mw; 0 or an errno. */
int cv_bind_wr(struct iw_send_wr *d, const struct ibv_send_wr *s);

/* Equal values of libiwarp's and rdma-core's enums, checked at build time. */
#define CV_SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " == " #b)

#endif
