/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operations a context carries: rdma-core's static inline calls
 * (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq, ibv_query_port,
 * ibv_query_device_ex, ibv_create_qp_ex ...) call through these. An
 * extended operation left NULL makes its inline call fail with EOPNOTSUPP.
 */
#include "cv.h"

const struct verbs_context cv_ops_template = {
	.query_port = cv_query_port,
	.query_device_ex = cv_query_device_ex,
	.create_qp_ex = cv_create_qp_ex,
	.context = {
		.ops = {
			.poll_cq = cv_poll_cq,
			.req_notify_cq = cv_req_notify_cq,
			.post_send = cv_post_send,
			.post_recv = cv_post_recv,
			.post_srq_recv = cv_post_srq_recv,
			.alloc_mw = cv_alloc_mw,
			.dealloc_mw = cv_dealloc_mw,
			.bind_mw = cv_bind_mw,
		},
	},
};
