/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The order in which an SRQ gives out its receives under iwarp-run (run
 * by tests/compat_srq.sh, compiled against rdma-core's headers): one
 * process, a connection to itself over 127.0.0.1 made with rdma_cm, the
 * target's QP on an SRQ with receives 1 to NRECV posted in that order,
 * and two Sends from the initiator.
 *   compat_srq oldest   (IWARP_SRQ_ORDER unset or "oldest"): the Sends
 *       land in receives 1 and 2, as verbs SRQs hand them out;
 *   compat_srq newest   (IWARP_SRQ_ORDER=newest): in NRECV and NRECV - 1;
 *   compat_srq bad      (any other value): ibv_create_srq fails, EINVAL.
 * Each receive's buffer is checked to hold its Send. Exits 0 when all
 * holds, 1 otherwise.
 */
#include <string.h>
#include <time.h>

#include "compat_self.h"

#define NRECV 4
#define LEN 64

static struct ibv_pd *pd;
static struct ibv_srq *srq;
static struct ibv_cq *tcq, *icq;
static struct ibv_mr *mr;
static char bufs[NRECV + 1][LEN]; /* receive i in bufs[i]; bufs[0] sends */

static void make_qp(struct rdma_cm_id *id, bool is_tgt)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					     .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_cq **cq = is_tgt ? &tcq : &icq;

	*cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	CHECK(*cq, "ibv_create_cq");
	a.send_cq = a.recv_cq = *cq;
	a.srq = is_tgt ? srq : NULL;
	CHECK(rdma_create_qp(id, pd, &a) == 0, "rdma_create_qp");
}

/* Before the target's QP exists: the SRQ, its memory and receives. */
static void make_qp_cb(struct rdma_cm_id *id, bool is_tgt)
{
	if (is_tgt) {
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = NRECV, .max_sge = 1}};
		srq = ibv_create_srq(pd, &sa);
		CHECK(srq, "ibv_create_srq");
		for (uint64_t i = 1; i <= NRECV; i++) {
			struct ibv_sge sg = {(uintptr_t)bufs[i], LEN, mr->lkey};
			struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sg, .num_sge = 1}, *bad;
			CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "ibv_post_srq_recv");
		}
	} else {
		mr = ibv_reg_mr(pd, bufs, sizeof(bufs), IBV_ACCESS_LOCAL_WRITE);
		CHECK(mr, "ibv_reg_mr");
	}
	make_qp(id, is_tgt);
}

static struct ibv_wc poll1(struct ibv_cq *cq, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 10;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && time(NULL) < end)
		;
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == op, what);
	return wc;
}

/* Send k (its octets all k) and the receive it lands in: want. */
static void send_expect(struct rdma_cm_id *ini, int k, uint64_t want)
{
	struct ibv_sge sg = {(uintptr_t)bufs[0], LEN, mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	char expect[LEN];

	memset(bufs[0], k, LEN);
	memset(expect, k, LEN);
	CHECK(ibv_post_send(ini->qp, &wr, &bad) == 0, "ibv_post_send");
	poll1(icq, IBV_WC_SEND, "the Send's completion");
	struct ibv_wc wc = poll1(tcq, IBV_WC_RECV, "the Send's receive");
	if (wc.wr_id != want) {
		fprintf(stderr, "FAIL: Send %d took receive %llu, want %llu\n", k,
			(unsigned long long)wc.wr_id, (unsigned long long)want);
		exit(1);
	}
	CHECK(wc.byte_len == LEN && memcmp(bufs[want], expect, LEN) == 0,
	      "the Send's octets in its receive's buffer");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "oldest";
	struct rdma_cm_id *ini, *tgt;

	if (strcmp(mode, "bad") == 0) {
		struct ibv_device **l = ibv_get_device_list(NULL);
		CHECK(l && l[0], "ibv_get_device_list");
		struct ibv_context *ctx = ibv_open_device(l[0]);
		ibv_free_device_list(l);
		CHECK(ctx, "ibv_open_device");
		pd = ibv_alloc_pd(ctx);
		CHECK(pd, "ibv_alloc_pd");
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = NRECV, .max_sge = 1}};
		errno = 0;
		CHECK(!ibv_create_srq(pd, &sa) && errno == EINVAL,
		      "ibv_create_srq with a bad IWARP_SRQ_ORDER fails with EINVAL");
		printf("ok: a bad IWARP_SRQ_ORDER is refused\n");
		return 0;
	}
	bool newest = strcmp(mode, "newest") == 0;
	struct rdma_event_channel *ec = rdma_create_event_channel();
	CHECK(ec, "rdma_create_event_channel");
	compat_connect_self(ec, 1, &pd, &ini, &tgt, make_qp_cb);
	send_expect(ini, 1, newest ? NRECV : 1);
	send_expect(ini, 2, newest ? NRECV - 1 : 2);
	rdma_disconnect(ini);
	printf("ok: %s\n", mode);
	return 0;
}
