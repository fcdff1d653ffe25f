/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libefa.so.1 stub: perftest links Amazon's EFA direct-verbs library and
 * calls it only for EFA devices. There is none here (ENODEV).
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/efadv.h>

#define STUB_EXPORT __attribute__((visibility("default")))

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
STUB_EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
					      struct ibv_qp_init_attr_ex *attr_ex,
					      struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	errno = ENODEV;
	return NULL;
}

STUB_EXPORT int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
				   uint32_t inlen)
{
	errno = ENODEV;
	return ENODEV;
}
#pragma GCC diagnostic pop
