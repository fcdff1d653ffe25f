/* SPDX-License-Identifier: BSD-2-Clause */
/* The STag refusal counters (iw_query_stag_stats, iw_query_qp_stag_stats). */
#include <errno.h>
#include <string.h>

#include "base/visibility.h"
#include "engine/context.h"
#include "engine/qp.h"

static void fill(struct iw_stag_stats *stats, const atomic_ulong *invalid)
{
	memset(stats, 0, sizeof(*stats));
	stats->invalid_stag = atomic_load_explicit(invalid, memory_order_relaxed);
}

IW_EXPORT int iw_query_stag_stats(struct iw_context *ctx, struct iw_stag_stats *stats)
{
	if (!ctx || !stats)
		return EINVAL;
	fill(stats, &ctx->mem.bad_stag);
	return 0;
}

IW_EXPORT int iw_query_qp_stag_stats(struct iw_qp *qp, struct iw_stag_stats *stats)
{
	if (!qp || !stats)
		return EINVAL;
	fill(stats, &qp->bad_stag);
	return 0;
}
