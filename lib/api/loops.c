/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loop group's calls on CM ids (cm.h): which loop an id is on,
 * putting an idle one on another, and a listener's spreading policy
 * (lib/io/cm_spread.c does the spreading).
 */
#include <errno.h>

#include "engine/context.h"
#include "io/cm_int.h"
#include "io/ev.h"
#include "io/loop_group.h"
#include "base/visibility.h"

IW_EXPORT int iw_cm_get_loop(struct iw_cm_id *id, unsigned *loop)
{
	if (!id || !loop)
		return EINVAL;
	*loop = iw_ev_index(iw_cm_id_int(id)->ev);
	return 0;
}

struct set_loop_args {
	struct iw_cm_id_int *id;
	struct iw_ev *to;
};

/* On the old loop: nothing of the id's is armed there while it is idle
 * (no socket, no libevent events), so only its work item and count move. */
static int do_set_loop(void *arg)
{
	struct set_loop_args *a = arg;
	if (a->id->conn.state != IW_CONN_IDLE || a->id->fd >= 0)
		return EINVAL;
	iw_cm_id_move(a->id, a->to);
	return 0;
}

IW_EXPORT int iw_cm_set_loop(struct iw_cm_id *id, unsigned loop)
{
	if (!id || loop >= id->context->num_loops)
		return EINVAL;
	struct set_loop_args a = {iw_cm_id_int(id), iw_ev_group_at(id->context, loop)};
	return iw_ev_call(a.id->ev, do_set_loop, &a);
}

struct spread_args {
	struct iw_cm_id_int *id;
	const struct iw_cm_spread *spread;
};

static int do_set_spread(void *arg)
{
	struct spread_args *a = arg;
	a->id->spread = *a->spread;
	return 0;
}

IW_EXPORT int iw_cm_set_spread(struct iw_cm_id *id, const struct iw_cm_spread *spread)
{
	if (!id || !spread || spread->comp_mask || spread->policy > IW_CM_SPREAD_LISTENER ||
	    (spread->policy == IW_CM_SPREAD_CALLBACK && !spread->pick))
		return EINVAL;
	struct spread_args a = {iw_cm_id_int(id), spread};
	return iw_ev_call(a.id->ev, do_set_spread, &a);
}
