/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Example block initiator (see blk_proto.h), the other half of
 * blk_target.c: one connection, up to BLK_QD commands in flight, each with
 * its own fast registration of its block buffer. It writes blocks
 * first..first+count-1 with blk_pattern, reads them back into buffers it
 * filled with 0xEE, and compares. Every response must have invalidated
 * the I/O's STag (IW_WC_WITH_INV); when one does not, the grant is revoked
 * with a LOCAL_INV before the buffer is reused.
 *
 *   blk_initiator [-a addr] -p port [-o first] [-c count]
 *
 * The context runs its own loop thread (convenience mode); this thread
 * waits on the completion channel.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk_proto.h"
#include "example_common.h"

#define RECV_BIT (1ull << 63) /* wr_id of a receive: RECV_BIT | slot */
#define INV_BIT (1ull << 62)  /* wr_id of a LOCAL_INV: INV_BIT | slot */

struct slot {
	uint8_t *buf;
	struct iw_mr *mr; /* fast-registration MR for buf */
	uint32_t stag;    /* what the last REG_MR set */
	uint32_t lba;
	bool busy;
};

struct initiator {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_cm_id *id;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *cq;
	struct slot slot[BLK_QD];
	struct blk_resp resp[BLK_QD];
	struct iw_mr *resp_mr;
	uint8_t *bufs;
	unsigned inflight;
	unsigned long ios, invalidated, local_inv, mismatches;
};

static int post_resp_recv(struct initiator *in, unsigned i)
{
	struct iw_sge sge = {.addr = (uintptr_t)&in->resp[i], .length = sizeof(in->resp[i]),
			     .lkey = in->resp_mr->lkey};
	struct iw_recv_wr wr = {.wr_id = RECV_BIT | i, .sg_list = &sge, .num_sge = 1};
	struct iw_recv_wr *bad;
	return iw_post_recv(in->id->qp, &wr, &bad) ? -1 : 0;
}

/* Register the slot's buffer for this one I/O and send the command, in one
 * post: the Send starts only after the REG_MR has run. Both unsignaled:
 * the response tells us they worked, and a failure completes anyway. */
static int issue(struct initiator *in, unsigned i, enum blk_op op, uint32_t lba)
{
	struct slot *s = &in->slot[i];
	s->stag = iw_inc_rkey(s->stag);
	s->lba = lba;
	for (uint32_t k = 0; k < BLK_SIZE; k++)
		s->buf[k] = op == BLK_WRITE ? blk_pattern(lba, k) : 0xEE;
	struct blk_cmd c = {.op = htonl(op), .tag = htonl(i), .lba = htonl(lba),
			    .stag = htonl(s->stag), .to = htobe64(0)};
	struct iw_sge cs = {.addr = (uintptr_t)&c, .length = sizeof(c)};
	struct iw_send_wr send = {.sg_list = &cs, .num_sge = 1, .opcode = IW_WR_SEND,
				  .send_flags = IW_SEND_INLINE};
	struct iw_send_wr reg = {.opcode = IW_WR_REG_MR, .next = &send};
	reg.reg.mr = s->mr;
	reg.reg.key = s->stag;
	/* The target READs a block we write, WRITEs a block we read. */
	reg.reg.access = op == BLK_WRITE ? IW_ACCESS_REMOTE_READ
					 : IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE;
	reg.reg.iova = 0; /* zero-based: the target addresses buf[k] as k */
	reg.reg.length = BLK_SIZE;
	reg.reg.addr = s->buf;
	struct iw_send_wr *bad;
	int rc = iw_post_send(in->id->qp, &reg, &bad);
	if (rc) {
		fprintf(stderr, "initiator: iw_post_send: %s\n", strerror(rc));
		return -1;
	}
	s->busy = true;
	in->inflight++;
	return 0;
}

/* Wait for one completion, whatever its status. */
static int next_wc(struct initiator *in, struct iw_wc *wc)
{
	for (;;) {
		int n = iw_poll_cq(in->cq, 1, wc);
		if (n != 0)
			return n == 1 ? 0 : -1;
		if (iw_req_notify_cq(in->cq, 0))
			return -1;
		if ((n = iw_poll_cq(in->cq, 1, wc)) != 0)
			return n == 1 ? 0 : -1;
		struct pollfd p = {.fd = in->cc->fd, .events = POLLIN};
		struct iw_cq *cq;
		void *ctx;
		if (poll(&p, 1, EX_TIMEOUT_MS) != 1 || iw_get_cq_event(in->cc, &cq, &ctx)) {
			fprintf(stderr, "initiator: no completion within %d ms\n", EX_TIMEOUT_MS);
			return -1;
		}
		iw_ack_cq_events(cq, 1);
	}
}

static void end_io(struct initiator *in, struct slot *s)
{
	s->busy = false;
	in->inflight--;
	in->ios++;
}

/* A response: was our grant revoked by it? If not, revoke it ourselves
 * before the buffer is used again. */
static int on_resp(struct initiator *in, const struct iw_wc *wc, enum blk_op op)
{
	unsigned r = (unsigned)(wc->wr_id & ~RECV_BIT);
	uint32_t tag = ntohl(in->resp[r].tag), status = ntohl(in->resp[r].status);
	if (post_resp_recv(in, r) || tag >= BLK_QD || !in->slot[tag].busy || status) {
		fprintf(stderr, "initiator: bad response (tag %u status %u)\n", tag, status);
		return -1;
	}
	struct slot *s = &in->slot[tag];
	if (op == BLK_READ)
		for (uint32_t k = 0; k < BLK_SIZE; k++)
			if (s->buf[k] != blk_pattern(s->lba, k)) {
				fprintf(stderr, "initiator: block %u octet %u differs\n", s->lba, k);
				in->mismatches++;
				break;
			}
	if ((wc->wc_flags & IW_WC_WITH_INV) && wc->invalidated_rkey == s->stag) {
		in->invalidated++;
		end_io(in, s);
		return 0;
	}
	struct iw_send_wr inv = {.wr_id = INV_BIT | tag, .opcode = IW_WR_LOCAL_INV,
				 .send_flags = IW_SEND_SIGNALED};
	inv.invalidate_rkey = s->stag;
	struct iw_send_wr *bad;
	in->local_inv++;
	return iw_post_send(in->id->qp, &inv, &bad) ? -1 : 0;
}

static int on_wc(struct initiator *in, const struct iw_wc *wc, enum blk_op op)
{
	if (wc->status != IW_WC_SUCCESS) {
		fprintf(stderr, "initiator: %s: %s (TERMINATE: %s)\n",
			iw_wc_opcode_str(wc->opcode), iw_wc_status_str(wc->status),
			iw_term_str(wc->vendor_err));
		return -1;
	}
	if (wc->wr_id & RECV_BIT)
		return on_resp(in, wc, op);
	if (wc->wr_id & INV_BIT)
		end_io(in, &in->slot[wc->wr_id & ~INV_BIT]);
	return 0;
}

/* Run count I/Os of one kind, BLK_QD at a time. */
static int phase(struct initiator *in, enum blk_op op, uint32_t first, uint32_t count)
{
	uint32_t next = 0;
	while (next < count || in->inflight) {
		for (unsigned i = 0; i < BLK_QD && next < count; i++)
			if (!in->slot[i].busy && issue(in, i, op, first + next++))
				return -1;
		struct iw_wc wc;
		if (next_wc(in, &wc) || on_wc(in, &wc, op))
			return -1;
	}
	return in->mismatches ? -1 : 0;
}

static int setup(struct initiator *in)
{
	in->pd = iw_alloc_pd(in->ctx);
	in->cc = iw_create_comp_channel(in->ctx);
	/* Receives, plus per slot a LOCAL_INV and, when flushed, two more. */
	in->cq = in->cc ? iw_create_cq(in->ctx, 4 * BLK_QD + 8, NULL, in->cc, 0) : NULL;
	in->bufs = aligned_alloc(4096, BLK_QD * BLK_SIZE);
	if (!in->cq || !in->bufs)
		return -1;
	in->resp_mr = iw_reg_mr(in->pd, in->resp, sizeof(in->resp), IW_ACCESS_LOCAL_WRITE);
	if (!in->resp_mr)
		return -1;
	for (unsigned i = 0; i < BLK_QD; i++) {
		in->slot[i].buf = in->bufs + (size_t)i * BLK_SIZE;
		in->slot[i].mr = iw_alloc_mr(in->pd, 1);
		if (!in->slot[i].mr)
			return -1;
		in->slot[i].stag = in->slot[i].mr->rkey;
	}
	struct iw_qp_init_attr qa = {
		.send_cq = in->cq, .recv_cq = in->cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 3 * BLK_QD, .max_recv_wr = BLK_QD, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	if (iw_cm_create_qp(in->id, in->pd, &qa))
		return -1;
	for (unsigned i = 0; i < BLK_QD; i++)
		if (post_resp_recv(in, i))
			return -1;
	return 0;
}

static int run(struct initiator *in, const char *addr, uint16_t port, uint32_t first,
	       uint32_t count)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 || iw_cm_create_id(in->cm, &in->id, NULL) ||
	    setup(in))
		return -1;
	/* IRD: the target's READs we serve at once. */
	struct iw_conn_param p = {.responder_resources = BLK_QD, .initiator_depth = 1};
	if (iw_cm_connect(in->id, (struct sockaddr *)&a, &p))
		return -1;
	struct iw_cm_event *ev = ex_wait_cm(in->cm, IW_CM_EVENT_ESTABLISHED);
	if (!ev)
		return -1;
	iw_cm_ack_event(ev);
	int rc = phase(in, BLK_WRITE, first, count) || phase(in, BLK_READ, first, count) ? -1 : 0;
	if (iw_cm_disconnect(in->id) == 0 && (ev = ex_wait_cm(in->cm, IW_CM_EVENT_DISCONNECTED)))
		iw_cm_ack_event(ev);
	if (rc == 0)
		printf("initiator: blocks %u..%u written and read back, all match; %lu of %lu "
		       "responses invalidated our STag, %lu LOCAL_INV\n",
		       first, first + count - 1, in->invalidated, in->ios, in->local_inv);
	return rc;
}

int main(int argc, char **argv)
{
	struct initiator in = {0};
	const char *addr = "127.0.0.1";
	uint16_t port = 0;
	uint32_t first = 0, count = 64;
	int opt;
	while ((opt = getopt(argc, argv, "a:p:o:c:")) != -1) {
		if (opt == 'a')
			addr = optarg;
		else if (opt == 'p')
			port = (uint16_t)atoi(optarg);
		else if (opt == 'o')
			first = (uint32_t)strtoul(optarg, NULL, 0);
		else if (opt == 'c')
			count = (uint32_t)strtoul(optarg, NULL, 0);
		else
			port = 0, count = 0;
	}
	if (port == 0 || count == 0) {
		fprintf(stderr, "usage: %s [-a addr] -p port [-o first] [-c count]\n", argv[0]);
		return 2;
	}
	in.ctx = iw_context_new(NULL);
	in.cm = in.ctx ? iw_cm_create_channel(in.ctx) : NULL;
	int rc = in.cm ? run(&in, addr, port, first, count) : -1;
	iw_cm_destroy_id(in.id);
	for (unsigned i = 0; i < BLK_QD; i++)
		iw_dereg_mr(in.slot[i].mr);
	iw_dereg_mr(in.resp_mr);
	iw_destroy_cq(in.cq);
	iw_destroy_comp_channel(in.cc);
	iw_dealloc_pd(in.pd);
	iw_cm_destroy_channel(in.cm);
	iw_context_free(in.ctx);
	free(in.bufs);
	printf("initiator: %s\n", rc ? "FAILED" : "done");
	return rc ? 1 : 0;
}
