/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Just enough of the rping protocol (tools/rping_proto.h) to learn the
 * peer's buffer: our advertisement by Send makes an rping server issue an
 * RDMA Read whose Read Request names its READ sink (STag, TO), registered
 * with REMOTE_WRITE but not REMOTE_READ.
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

int cf_learn_sink(struct cf_conn *k, struct iw_read_req *rr, uint32_t len)
{
	struct advert a = {.addr = 0x10000, .rkey = CF_OUR_STAG, .len = len};
	uint8_t adv[ADV_LEN];
	struct cf_seg g = {0};

	advert_pack(adv, &a);
	if (cf_send_msg(k, IW_OP_SEND, adv, sizeof(adv), 0))
		return -1;
	if (cf_await_op(k, &g, IW_OP_READ_REQ, k->c->o->wait_ms)) {
		cf_log_add(&k->c->r->log, "no Read Request after our advertisement");
		return -1;
	}
	*rr = g.s.rdmap.u.read_req;
	cf_log_add(&k->c->r->log, "the peer's READ sink: STag 0x%08x TO 0x%llx, %u octets",
		   rr->sink_stag, (unsigned long long)rr->sink_to, rr->read_size);
	return 0;
}
