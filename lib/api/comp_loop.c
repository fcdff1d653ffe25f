/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iw_comp_channel_set_loop (verbs.h): the checks; lib/io/chan_loop.c does
 * the delivery.
 */
#include <errno.h>

#include "engine/cq.h"
#include "io/chan_loop.h"
#include "base/visibility.h"

IW_EXPORT int iw_comp_channel_set_loop(struct iw_comp_channel *channel, struct event_base *base,
				       void (*cb)(struct iw_comp_channel *, void *), void *arg)
{
	if (!channel || (base && !cb))
		return EINVAL;
	/* pub is the first member of the channel's private struct. */
	return iw_chan_loop_set((struct iw_comp_channel_int *)channel, base, cb, arg);
}
