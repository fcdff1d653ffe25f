/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive hold on every RC QP we make (IW_QP_CREATE_RECV_HOLD in
 * <iwarp/verbs.h>): verbs applications written for InfiniBand count on RNR
 * retry, and stream Sends (or Writes with immediate data) faster than
 * their peer reposts receives (qperf rc_bw, fio verb=send). Without it
 * such a Send ends the connection ("no buffer" TERMINATE).
 *
 * IWARP_RECV_HOLD in the environment: unset or empty, on with
 * CV_HOLD_MSGS_PER_WR times the QP's max_recv_wr messages and libiwarp's
 * 64 MiB; "0", off (RFC 5041's behaviour); "MSGS" or "MSGS:BYTES" (BYTES
 * with an optional K, M or G), on with those limits (0 keeps a default).
 * A value that does not parse leaves it on with the defaults.
 *
 * More messages than libiwarp's default (one receive queue's worth): a
 * Write with immediate data holds a record and no payload, so only the
 * count bounds those, and qperf's rc_rdma_write_bw (1024 receives) failed
 * with one queue's worth on a loaded machine. The octets stay bounded.
 */
#include <stdlib.h>
#include <string.h>

#include "cv.h"

#define CV_HOLD_MSGS_PER_WR 16

struct cv_hold {
	int on;
	uint32_t msgs;
	uint64_t bytes;
};

static uint64_t cv_suffix(const char *s, uint64_t v)
{
	switch (*s) {
	case 'K': case 'k':
		return v << 10;
	case 'M': case 'm':
		return v << 20;
	case 'G': case 'g':
		return v << 30;
	default:
		return v;
	}
}

static void cv_hold_parse(struct cv_hold *h, const char *e)
{
	char *end;
	unsigned long long m = strtoull(e, &end, 10);

	if (end == e || m > UINT32_MAX)
		return;
	if (*end == 0 && m == 0) {
		h->on = 0;
		return;
	}
	uint64_t b = 0;
	if (*end == ':') {
		const char *p = end + 1;
		b = strtoull(p, &end, 10);
		if (end == p)
			return;
		b = cv_suffix(end, b);
	}
	h->msgs = (uint32_t)m;
	h->bytes = b;
}

static const struct cv_hold *cv_hold(void)
{
	static struct cv_hold h;
	static int done;

	if (!done) {
		const char *e = getenv("IWARP_RECV_HOLD");
		h.on = 1;
		if (e && *e)
			cv_hold_parse(&h, e);
		done = 1;
	}
	return &h;
}

uint32_t cv_hold_flag(int srq)
{
	return cv_hold()->on && !srq ? IW_QP_CREATE_RECV_HOLD : 0;
}

int cv_hold_limits(struct iw_cm_id *id, uint32_t max_recv_wr)
{
	const struct cv_hold *h = cv_hold();
	uint64_t msgs = h->msgs ? h->msgs : (uint64_t)max_recv_wr * CV_HOLD_MSGS_PER_WR;
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_RECV_HOLD,
				 .recv_hold_msgs = msgs > UINT32_MAX ? UINT32_MAX : (uint32_t)msgs,
				 .recv_hold_bytes = h->bytes};

	return h->on ? iw_cm_set_conn_opts(id, &o) : 0;
}
