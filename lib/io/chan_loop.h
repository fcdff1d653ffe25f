/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A completion channel whose events are delivered on an application's
 * event loop (iw_comp_channel_set_loop): an event raised on the loop's own
 * thread costs no system call (a count in memory and event_active), one
 * raised elsewhere still goes through the channel's eventfd, which the
 * loop watches. Both end in the application's callback.
 */
#ifndef IW_CHAN_LOOP_H
#define IW_CHAN_LOOP_H

#include "engine/cq.h"

struct event_base;

typedef void iw_chan_loop_cb(struct iw_comp_channel *ch, void *arg);

/* Deliver ch's events on base (the calling thread runs it) through cb, or
 * with base NULL go back to the fd alone. 0 or a positive errno: EBUSY
 * (another loop is set), ENOMEM. */
int iw_chan_loop_set(struct iw_comp_channel_int *ch, struct event_base *base,
		     iw_chan_loop_cb *cb, void *arg);

#endif
