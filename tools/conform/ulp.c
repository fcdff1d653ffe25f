/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Just enough of the rping protocol (tools/rping_proto.h) to learn the
 * peer's buffer: our advertisement by Send makes an rping server issue an
 * RDMA Read whose Read Request names its READ sink (STag, TO), registered
 * with REMOTE_WRITE but not REMOTE_READ.
 *
 * The same round settles a connection: an rping server issues its Read
 * only after its accept saw RDMA_CM_EVENT_ESTABLISHED, so the Read Request
 * proves the peer's CM is past the handshake. Closing earlier races siw's
 * ESTABLISHED processing, and iw_cm then BUG()s on a close event for a
 * connection it still holds in CONN_RECV (iwcm.c:969 in Linux 6.1).
 */
#include <string.h>

#include "../rping_proto.h"
#include "conform.h"

int cf_send_msg(struct cf_conn *k, unsigned op, const uint8_t *p, size_t n, size_t seg)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t hl = cf_hdr_untagged(h, op, IW_QN_SEND, ++k->msn[IW_QN_SEND], 0, true);

	return cf_fpdu_send(k, h, hl, p, n, seg, false);
}

/* Wait for a segment with this opcode (others are logged and skipped). */
int cf_await_op(struct cf_conn *k, struct cf_seg *g, unsigned op, unsigned ms)
{
	uint64_t deadline = cf_now_ns() + (uint64_t)ms * 1000000u;

	for (;;) {
		uint64_t now = cf_now_ns();
		int rc;

		if (now >= deadline)
			return CF_IO_TIMEOUT;
		rc = cf_seg_recv(k, g, (unsigned)((deadline - now) / 1000000u) + 1);
		if (rc)
			return rc;
		if (iw_ddp_opcode(&g->s.ddp) == op)
			return 0;
	}
}

#define NUDGE_MS 1000

/* One zero-length RDMA Write, as the WRITE RTR is: legal at any time, and
 * siw places nothing for it (siw_proc_write returns at once). */
static int nudge(struct cf_conn *k)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t hl = cf_hdr_tagged(h, IW_OP_WRITE, 1, 0, true);

	return cf_fpdu_send(k, h, hl, NULL, 0, 0, false);
}

unsigned cf_patience_ms(const struct cf_opts *o)
{
	return o->peer_timeout_ms + o->wait_ms;
}

int cf_await_first(struct cf_conn *k, struct cf_seg *g, unsigned op, unsigned ms)
{
	unsigned first = ms < NUDGE_MS ? ms : NUDGE_MS;
	int rc = cf_await_op(k, g, op, first);

	if (rc != CF_IO_TIMEOUT || first == ms)
		return rc;
	cf_log_add(&k->c->r->log, "nothing from the peer in %u ms: a zero-length RDMA Write "
				  "to wake its receive path", first);
	if (nudge(k))
		return CF_IO_ERR;
	return cf_await_op(k, g, op, ms - first);
}

int cf_learn_sink(struct cf_conn *k, struct iw_read_req *rr, uint32_t len)
{
	struct advert a = {.addr = 0x10000, .rkey = CF_OUR_STAG, .len = len};
	uint8_t adv[ADV_LEN];
	struct cf_seg g = {0};

	advert_pack(adv, &a);
	if (cf_send_msg(k, IW_OP_SEND, adv, sizeof(adv), 0))
		return -1;
	if (cf_await_first(k, &g, IW_OP_READ_REQ, cf_patience_ms(k->c->o))) {
		cf_log_add(&k->c->r->log, "no Read Request after our advertisement");
		return -1;
	}
	*rr = g.s.rdmap.u.read_req;
	cf_log_add(&k->c->r->log, "the peer's READ sink: STag 0x%08x TO 0x%llx, %u octets",
		   rr->sink_stag, (unsigned long long)rr->sink_to, rr->read_size);
	return 0;
}

#define SETTLE_LEN 64 /* octets advertised: any rping buffer holds them */

/* Answer the peer's Read with zeros: the rping server never checks them. */
static int answer_read(struct cf_conn *k, const struct iw_read_req *rr)
{
	static const uint8_t zero[SETTLE_LEN];
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t hl;

	if (rr->read_size > sizeof(zero)) {
		cf_log_add(&k->c->r->log, "settle: a Read of %u octets, more than we offered",
			   rr->read_size);
		return -1;
	}
	hl = cf_hdr_tagged(h, IW_OP_READ_RESP, rr->sink_stag, rr->sink_to, true);
	return cf_fpdu_send(k, h, hl, zero, rr->read_size, 0, false);
}

/* ORD 0: the rping server's Read cannot go out, and it closes when that
 * fails (it got our Send, so its accept saw ESTABLISHED): let the peer
 * close first. */
static int settle_unread(struct cf_conn *k)
{
	struct advert a = {.addr = 0x10000, .rkey = CF_OUR_STAG, .len = SETTLE_LEN};
	uint8_t adv[ADV_LEN];

	advert_pack(adv, &a);
	if (cf_send_msg(k, IW_OP_SEND, adv, sizeof(adv), 0))
		return -1;
	/* The peer may also wait for a Read that never comes: its timeout. */
	if (cf_wait_close(k, cf_patience_ms(k->c->o)) != CF_IO_CLOSED) {
		cf_log_add(&k->c->r->log, "settle: the peer's ORD is 0 and it did not close after our advertisement");
		return -1;
	}
	cf_log_add(&k->c->r->log, "settled: the peer's ORD is 0; it closed after our advertisement");
	return 0;
}

int cf_settle(struct cf_conn *k, bool round)
{
	struct cf_seg g = {0};
	int rc;

	if (!k->peer_reads)
		return settle_unread(k);
	if (cf_learn_sink(k, &k->sink, SETTLE_LEN))
		return -1;
	if (!round)
		return 0;
	if (answer_read(k, &k->sink))
		return -1;
	rc = cf_await_op(k, &g, IW_OP_SEND, cf_patience_ms(k->c->o));
	if (rc) {
		cf_log_add(&k->c->r->log, "settle: no go-ahead after the Read (%s)", cf_io_str(rc));
		return -1;
	}
	cf_log_add(&k->c->r->log, "settled: the peer's Read was answered and it sent its go-ahead");
	return 0;
}
