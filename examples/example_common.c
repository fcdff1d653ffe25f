/* SPDX-License-Identifier: BSD-2-Clause */
#include "example_common.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

static int wait_fd(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, EX_TIMEOUT_MS);
	if (n <= 0) {
		fprintf(stderr, "timed out after %d ms\n", EX_TIMEOUT_MS);
		return -1;
	}
	return 0;
}

struct iw_cm_event *ex_wait_cm(struct iw_cm_channel *ch, enum iw_cm_event_type want)
{
	struct iw_cm_event *ev;
	if (wait_fd(ch->fd))
		return NULL;
	int rc = iw_cm_get_event(ch, &ev);
	if (rc) {
		fprintf(stderr, "iw_cm_get_event: %s\n", strerror(rc));
		return NULL;
	}
	if (ev->event != want) {
		fprintf(stderr, "expected %s, got %s (status %d: %s)\n", iw_cm_event_str(want),
			iw_cm_event_str(ev->event), ev->status, strerror(ev->status));
		iw_cm_ack_event(ev);
		return NULL;
	}
	return ev;
}

int ex_wait_wc(struct iw_comp_channel *ch, struct iw_cq *cq, enum iw_wc_opcode want,
	       struct iw_wc *out)
{
	for (;;) {
		int n = iw_poll_cq(cq, 1, out);
		if (n < 0)
			return -1;
		if (n == 1)
			break;
		/* Arm, then poll again: a completion that raced the arm is
		 * found by the second poll instead of being waited for. */
		if (iw_req_notify_cq(cq, 0))
			return -1;
		n = iw_poll_cq(cq, 1, out);
		if (n == 1)
			break;
		struct iw_cq *ecq;
		void *ectx;
		if (wait_fd(ch->fd) || iw_get_cq_event(ch, &ecq, &ectx))
			return -1;
		iw_ack_cq_events(ecq, 1);
	}
	if (out->status != IW_WC_SUCCESS || out->opcode != want) {
		fprintf(stderr, "completion %s status %s (TERMINATE: %s)\n",
			iw_wc_opcode_str(out->opcode), iw_wc_status_str(out->status),
			iw_term_str(out->vendor_err));
		return -1;
	}
	return 0;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

void ex_advert_pack(uint8_t out[16], const struct ex_advert *a)
{
	put_be(out, a->addr, 8);
	put_be(out + 8, a->rkey, 4);
	put_be(out + 12, a->len, 4);
}

void ex_advert_unpack(struct ex_advert *a, const uint8_t in[16])
{
	a->addr = get_be(in, 8);
	a->rkey = (uint32_t)get_be(in + 8, 4);
	a->len = (uint32_t)get_be(in + 12, 4);
}

int ex_post(struct iw_qp *qp, enum iw_wr_opcode op, struct iw_mr *mr, void *buf, uint32_t len,
	    uint64_t remote_addr, uint32_t rkey)
{
	struct iw_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
	struct iw_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = op,
				.send_flags = IW_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	struct iw_send_wr *bad;
	int rc = iw_post_send(qp, &wr, &bad);
	if (rc)
		fprintf(stderr, "iw_post_send: %s\n", strerror(rc));
	return rc ? -1 : 0;
}

int ex_post_recv(struct iw_qp *qp, struct iw_mr *mr, void *buf, uint32_t len)
{
	struct iw_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
	struct iw_recv_wr wr = {.sg_list = &sge, .num_sge = 1};
	struct iw_recv_wr *bad;
	int rc = iw_post_recv(qp, &wr, &bad);
	if (rc)
		fprintf(stderr, "iw_post_recv: %s\n", strerror(rc));
	return rc ? -1 : 0;
}
