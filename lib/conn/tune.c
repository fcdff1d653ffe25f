/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A connection's tuning (struct iw_conn_tune, iw_conn_opts in cm.h): the
 * defaults, and the checked copy from and to the public struct. The
 * socket options are only data here; lib/io sets them on the socket.
 */
#include <errno.h>
#include <limits.h>

#include "conn/conn.h"

/* Linux's bounds: TCP_KEEPIDLE and TCP_KEEPINTVL (MAX_TCP_KEEPIDLE,
 * MAX_TCP_KEEPINTVL), TCP_KEEPCNT (MAX_TCP_KEEPCNT); SO_SNDBUF and
 * SO_RCVBUF take an int that the kernel doubles. */
#define KEEP_S_MAX 32767u
#define KEEP_CNT_MAX 127u
#define BUF_MAX ((uint32_t)INT_MAX / 2)

#define ALL_OPTS                                                                        \
	(IW_CONN_OPTS_LINGER | IW_CONN_OPTS_WAKE_COUNT | IW_CONN_OPTS_DIRECT_MIN |       \
	 IW_CONN_OPTS_MAX_PENDING | IW_CONN_OPTS_KEEPALIVE | IW_CONN_OPTS_USER_TIMEOUT | \
	 IW_CONN_OPTS_SNDBUF | IW_CONN_OPTS_RCVBUF | IW_CONN_OPTS_REFUSED_RETRY |      \
	 IW_CONN_OPTS_RELISTEN | IW_CONN_OPTS_RECV_HOLD | IW_CONN_OPTS_TX_BATCH)

void iw_conn_tune_default(struct iw_conn_tune *t)
{
	*t = (struct iw_conn_tune){
		.linger_ms = IW_LINGER_MS_DEFAULT,
		.wake_count = IW_WAKE_COUNT_DEFAULT,
		.direct_min = IW_DIRECT_MIN_DEFAULT,
		.max_pending = IW_MAX_PENDING_DEFAULT,
		.poll_pause_ms = 1,
		.tx_batch_msgs = IW_TX_BATCH_MSGS_DEFAULT,
		.tx_batch_bytes = IW_TX_BATCH_BYTES_DEFAULT,
		.tx_batch_us = IW_TX_BATCH_US_DEFAULT,
	};
}

static bool keepalive_ok(const struct iw_conn_opts *o)
{
	return o->keepalive_idle_s <= KEEP_S_MAX && o->keepalive_intvl_s <= KEEP_S_MAX &&
	       o->keepalive_cnt <= KEEP_CNT_MAX;
}

static bool batch_ok(const struct iw_conn_opts *o)
{
	return o->tx_batch_msgs <= IW_TX_BATCH_MSGS_MAX && o->tx_batch_bytes <= IW_TX_BATCH_BYTES_MAX &&
	       o->tx_batch_us >= 1 && o->tx_batch_us <= IW_TX_BATCH_US_MAX;
}

/* Every field named is in range (iw_cm_set_conn_opts(3) lists them). */
static bool opts_ok(const struct iw_conn_opts *o)
{
	uint32_t m = o->comp_mask;
	if (m & ~(uint32_t)ALL_OPTS)
		return false;
	if (((m & IW_CONN_OPTS_DIRECT_MIN) && !o->direct_min) ||
	    ((m & IW_CONN_OPTS_MAX_PENDING) && !o->max_pending))
		return false;
	if ((m & IW_CONN_OPTS_KEEPALIVE) && !keepalive_ok(o))
		return false;
	if ((m & IW_CONN_OPTS_USER_TIMEOUT) && o->user_timeout_ms > (uint32_t)INT_MAX)
		return false;
	if ((m & IW_CONN_OPTS_RELISTEN) && o->relisten_ms > IW_RELISTEN_MS_MAX)
		return false;
	if ((m & IW_CONN_OPTS_TX_BATCH) && !batch_ok(o))
		return false;
	return !((m & IW_CONN_OPTS_SNDBUF) && o->sndbuf > BUF_MAX) &&
	       !((m & IW_CONN_OPTS_RCVBUF) && o->rcvbuf > BUF_MAX);
}

int iw_conn_tune_set(struct iw_conn_tune *t, const struct iw_conn_opts *o)
{
	if (!opts_ok(o))
		return -EINVAL;
	uint32_t m = o->comp_mask;
	if (m & IW_CONN_OPTS_LINGER)
		t->linger_ms = o->linger_ms;
	if (m & IW_CONN_OPTS_WAKE_COUNT)
		t->wake_count = o->wake_count;
	if (m & IW_CONN_OPTS_DIRECT_MIN)
		t->direct_min = o->direct_min;
	if (m & IW_CONN_OPTS_MAX_PENDING)
		t->max_pending = o->max_pending;
	if (m & IW_CONN_OPTS_KEEPALIVE) {
		t->keepalive = o->keepalive;
		t->keepalive_idle_s = o->keepalive_idle_s;
		t->keepalive_intvl_s = o->keepalive_intvl_s;
		t->keepalive_cnt = o->keepalive_cnt;
	}
	if (m & IW_CONN_OPTS_USER_TIMEOUT)
		t->user_timeout_ms = o->user_timeout_ms;
	if (m & IW_CONN_OPTS_SNDBUF)
		t->sndbuf = o->sndbuf;
	if (m & IW_CONN_OPTS_RCVBUF)
		t->rcvbuf = o->rcvbuf;
	if (m & IW_CONN_OPTS_REFUSED_RETRY)
		t->refused_retry_ms = o->refused_retry_ms;
	if (m & IW_CONN_OPTS_RELISTEN)
		t->relisten_ms = o->relisten_ms;
	if (m & IW_CONN_OPTS_RECV_HOLD) {
		t->recv_hold_msgs = o->recv_hold_msgs;
		t->recv_hold_bytes = o->recv_hold_bytes;
	}
	if (m & IW_CONN_OPTS_TX_BATCH) {
		t->tx_batch_msgs = o->tx_batch_msgs;
		t->tx_batch_bytes = o->tx_batch_bytes;
		t->tx_batch_us = o->tx_batch_us;
	}
	return 0;
}

void iw_conn_tune_get(const struct iw_conn_tune *t, struct iw_conn_opts *o)
{
	*o = (struct iw_conn_opts){
		.comp_mask = ALL_OPTS,
		.linger_ms = t->linger_ms,
		.wake_count = t->wake_count,
		.direct_min = t->direct_min,
		.max_pending = t->max_pending,
		.keepalive = t->keepalive,
		.keepalive_idle_s = t->keepalive_idle_s,
		.keepalive_intvl_s = t->keepalive_intvl_s,
		.keepalive_cnt = t->keepalive_cnt,
		.user_timeout_ms = t->user_timeout_ms,
		.sndbuf = t->sndbuf,
		.rcvbuf = t->rcvbuf,
		.refused_retry_ms = t->refused_retry_ms,
		.relisten_ms = t->relisten_ms,
		.recv_hold_msgs = t->recv_hold_msgs,
		.recv_hold_bytes = t->recv_hold_bytes,
		.tx_batch_msgs = t->tx_batch_msgs,
		.tx_batch_bytes = t->tx_batch_bytes,
		.tx_batch_us = t->tx_batch_us,
	};
}
