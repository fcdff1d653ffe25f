/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iw_query_device: the limits the checks enforce, read from the same
 * constants the checks use (qp.h, cq.h, srq.h, mem.h), so the two cannot
 * drift apart.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/visibility.h"
#include "engine/cq.h"
#include "engine/mem.h"
#include "engine/qp.h"
#include "engine/srq.h"

/* iw_reg_mr's only bound on a length is that the range must not wrap the
 * address space (mem.c), and fast registration takes a 64-bit length. */
#define IW_MAX_MR_SIZE ((uint64_t)UINTPTR_MAX)

/* What this library implements, whatever the peer: REG_MR, LOCAL_INV and
 * Send with Invalidate; RFC 7306 on QPs that ask for it; both resizes;
 * memory windows of both types. */
#define IW_DEVICE_CAPS                                                                      \
	(IW_DEVICE_MEM_MGT_EXTENSIONS | IW_DEVICE_RFC7306 | IW_DEVICE_RESIZE_CQ |            \
	 IW_DEVICE_RESIZE_SRQ | IW_DEVICE_MEM_WINDOW | IW_DEVICE_MEM_WINDOW_TYPE_2)

/* Extension groups this library fills (none yet beyond the base fields). */
#define IW_DEVICE_ATTR_KNOWN 0u

IW_EXPORT int iw_query_device(struct iw_context *ctx, struct iw_device_attr *attr)
{
	uint32_t asked;

	if (!ctx || !attr)
		return EINVAL;
	asked = attr->comp_mask;
	memset(attr, 0, sizeof(*attr));
	attr->comp_mask = asked & IW_DEVICE_ATTR_KNOWN;
	attr->device_cap_flags = IW_DEVICE_CAPS;
	attr->max_mr_size = IW_MAX_MR_SIZE;
	attr->max_qp = IW_MAX_QP;
	attr->max_qp_wr = IW_MAX_QP_WR;
	attr->max_sge = IW_MAX_SGE;
	attr->max_inline_data = IW_MAX_INLINE;
	attr->max_cqe = IW_CQ_MAX_CQE;
	attr->max_mr = IW_STAG_MAX_INDEX;
	attr->max_qp_rd_atom = IW_MAX_ORD_IRD;
	attr->max_qp_init_rd_atom = IW_MAX_ORD_IRD;
	attr->max_srq_wr = IW_MAX_SRQ_WR;
	attr->max_srq_sge = IW_MAX_SGE;
	return 0;
}
