/* SPDX-License-Identifier: BSD-2-Clause */
/* The QP engine's side of the connection contract (qp_link.h). */
#include "engine/qp.h"

static void link_poll(struct iw_qp *qp, struct iw_qp_status *st)
{
	iw_qp_lock(qp);
	iw_qp_status_locked(qp, st);
	iw_qp_unlock(qp);
}

/* No lock: a hint to hand the connection to its owner, who looks again
 * under the lock (qp.h, iw_qp_set_state). */
static bool link_in_err(struct iw_qp *qp)
{
	return iw_qp_state_peek(qp) == IW_QPS_ERR;
}

static void link_set_err(struct iw_qp *qp)
{
	struct iw_qp_attr a = {.qp_state = IW_QPS_ERR};
	iw_modify_qp(qp, &a, IW_QP_STATE);
}

const struct iw_qp_link_ops iw_qp_link_ops = {
	.start = iw_qp_start,
	.rx_direct = iw_qp_rx_direct_hint,
	.rx_room = iw_qp_rx_room,
	.rx_batch = iw_qp_rx_batch,
	.poll = link_poll,
	.tx_iov = iw_qp_tx_iov,
	.tx_sent = iw_qp_tx_sent,
	.tx_sent_iov = iw_qp_tx_sent_iov,
	.tx_stage = iw_qp_tx_stage,
	.in_err = link_in_err,
	.set_mulpdu = iw_qp_set_mulpdu,
	.wake = iw_qp_wake,
	.set_err = link_set_err,
	.conn_lost = iw_qp_conn_lost,
};
