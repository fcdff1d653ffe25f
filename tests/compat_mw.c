/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows through rdma-core's API (compiled against its headers,
 * run under tools/iwarp-run by tests/compat_mw.sh): one process, a
 * connection to itself over 127.0.0.1 made with rdma_cm. The passive side
 * ("target") exposes a buffer through windows, the active side
 * ("initiator") uses them:
 *  - ibv_query_device reports both window types and max_mw;
 *  - type 1: ibv_alloc_mw, ibv_bind_mw (IBV_WC_BIND_MW, a new rkey on the
 *    same index), RDMA WRITE and READ through it, rebind (new rkey),
 *    unbind with length 0;
 *  - type 2: IBV_WR_BIND_MW with ibv_inc_rkey, WRITE through it, revoked by
 *    the initiator's Send with Invalidate (IBV_WC_WITH_INV on the target's
 *    receive), bound again and revoked by IBV_WR_LOCAL_INV;
 *  - last, a WRITE with the first, stale type 1 rkey is refused: nothing
 *    lands, the target's TERMINATE ends the connection (the READ behind
 *    it flushes; the WRITE itself completed when it was sent, as iWARP
 *    WRITEs do);
 *  - ibv_dealloc_mw of a bound window, then ibv_dereg_mr.
 * Exits 0 when every step behaves, 1 with the step's name otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat_self.h"

#define LEN 256
#define RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct side {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[LEN];
};

static struct side tgt, ini;
static struct ibv_pd *pd;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One completion from cq (busy polling, 10 s at most: a hang is a failure). */
static struct ibv_wc poll1(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	double end = now() + 10;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now() < end)
		;
	CHECK(n == 1, what);
	return wc;
}

static void expect(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status st, enum ibv_wc_opcode op,
		   const char *what)
{
	struct ibv_wc wc = poll1(cq, what);

	if (wc.wr_id != id || wc.status != st || (st == IBV_WC_SUCCESS && wc.opcode != op)) {
		fprintf(stderr, "FAIL: %s: wr_id %llu status %s opcode %d (vendor_err %#x), want %llu %s %d\n", what,
			(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode, wc.vendor_err,
			(unsigned long long)id, ibv_wc_status_str(st), op);
		exit(1);
	}
}

static void make_qp(struct side *s)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 16, .max_recv_wr = 16,
					     .max_send_sge = 1, .max_recv_sge = 1}};

	s->cq = ibv_create_cq(s->id->verbs, 32, NULL, NULL, 0);
	CHECK(s->cq, "ibv_create_cq");
	a.send_cq = a.recv_cq = s->cq;
	CHECK(rdma_create_qp(s->id, pd, &a) == 0, "rdma_create_qp");
	s->mr = ibv_reg_mr(pd, s->buf, LEN,
			   IBV_ACCESS_LOCAL_WRITE | RW | IBV_ACCESS_MW_BIND);
	CHECK(s->mr, "ibv_reg_mr with IBV_ACCESS_MW_BIND");
}

static void post_recv(struct side *s, uint64_t id)
{
	struct ibv_sge sg = {(uintptr_t)s->buf, 16, s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1}, *bad;

	CHECK(ibv_post_recv(s->id->qp, &wr, &bad) == 0, "ibv_post_recv");
}

/* The two ends of a connection to ourselves: the target's QP has a
 * receive posted before it accepts. */
static void make_qp_cb(struct rdma_cm_id *id, bool is_tgt)
{
	struct side *s = is_tgt ? &tgt : &ini;

	s->id = id;
	make_qp(s);
	if (is_tgt)
		post_recv(&tgt, 900);
}

static void connect_self(struct rdma_event_channel *ec)
{
	compat_connect_self(ec, 4, &pd, &ini.id, &tgt.id, make_qp_cb);
}

static void rdma_op(enum ibv_wr_opcode op, uint64_t id, uint32_t rkey, size_t off, size_t len,
		    enum ibv_wc_status want, const char *what)
{
	struct ibv_sge sg = {(uintptr_t)ini.buf + off, (uint32_t)len, ini.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)tgt.buf + off;
	wr.wr.rdma.rkey = rkey;
	CHECK(ibv_post_send(ini.id->qp, &wr, &bad) == 0, what);
	expect(ini.cq, id, want, op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ,
	       what);
}

/* A WRITE's completion says it left, not that it landed (iWARP): a READ
 * behind it completes only after the target placed it. */
static void settle_st(uint64_t id, enum ibv_wc_status want)
{
	struct ibv_sge sg = {(uintptr_t)ini.buf + LEN - 1, 1, ini.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)tgt.buf + LEN - 1;
	wr.wr.rdma.rkey = tgt.mr->rkey;
	CHECK(ibv_post_send(ini.id->qp, &wr, &bad) == 0, "settling READ");
	expect(ini.cq, id, want, IBV_WC_RDMA_READ, "settling READ");
}

static void settle(uint64_t id)
{
	settle_st(id, IBV_WC_SUCCESS);
}

static void post_tgt(struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(tgt.id->qp, wr, &bad) == 0, what);
}

static uint32_t bind1(struct ibv_mw *mw, uint64_t id, size_t off, size_t len, const char *what)
{
	struct ibv_mw_bind b = {.wr_id = id, .send_flags = IBV_SEND_SIGNALED};
	uint32_t old = mw->rkey;

	b.bind_info.mr = len ? tgt.mr : NULL;
	b.bind_info.addr = len ? (uintptr_t)tgt.buf + off : 0;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = len ? RW : 0;
	CHECK(ibv_bind_mw(tgt.id->qp, mw, &b) == 0, what);
	CHECK(mw->rkey != old && mw->rkey >> 8 == old >> 8, "a new key on the same index");
	expect(tgt.cq, id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, what);
	return mw->rkey;
}

static void type1(uint32_t *stale)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);

	CHECK(mw && mw->type == IBV_MW_TYPE_1, "ibv_alloc_mw type 1");
	*stale = bind1(mw, 1, 64, 64, "ibv_bind_mw");
	memset(ini.buf + 64, 0xA1, 64);
	rdma_op(IBV_WR_RDMA_WRITE, 2, *stale, 64, 64, IBV_WC_SUCCESS, "WRITE through type 1");
	settle(30);
	CHECK(tgt.buf[64] == 0xA1 && tgt.buf[127] == 0xA1 && tgt.buf[128] == 0, "write landed");
	memset(tgt.buf + 64, 0xB2, 16);
	rdma_op(IBV_WR_RDMA_READ, 3, *stale, 64, 16, IBV_WC_SUCCESS, "READ through type 1");
	CHECK(ini.buf[64] == 0xB2 && ini.buf[79] == 0xB2, "read landed");
	uint32_t k = bind1(mw, 4, 192, 32, "rebind type 1");
	CHECK(k != *stale, "rebind changes the rkey");
	rdma_op(IBV_WR_RDMA_WRITE, 5, k, 192, 32, IBV_WC_SUCCESS, "WRITE through the rebound");
	settle(32);
	bind1(mw, 6, 0, 0, "unbind type 1 (length 0)");
	struct ibv_mw_bind bad = {.bind_info = {.length = 8}};
	CHECK(ibv_bind_mw(tgt.id->qp, mw, &bad) == EINVAL, "a length without an MR");
	CHECK(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw type 1");
}

static void bind2_wr(struct ibv_mw *mw, uint64_t id, uint32_t rkey)
{
	struct ibv_send_wr wr = {.wr_id = id, .opcode = IBV_WR_BIND_MW};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){tgt.mr, (uintptr_t)tgt.buf + 128, 64,
							 IBV_ACCESS_REMOTE_WRITE};
	post_tgt(&wr, "IBV_WR_BIND_MW");
	expect(tgt.cq, id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, "type 2 bind");
}

static void type2(struct ibv_mw **keep)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind b = {0};

	CHECK(mw && mw->type == IBV_MW_TYPE_2, "ibv_alloc_mw type 2");
	CHECK(ibv_bind_mw(tgt.id->qp, mw, &b) == EINVAL, "ibv_bind_mw refuses type 2");
	uint32_t k = ibv_inc_rkey(mw->rkey);
	bind2_wr(mw, 10, k);
	memset(ini.buf + 128, 0xC3, 64);
	rdma_op(IBV_WR_RDMA_WRITE, 11, k, 128, 64, IBV_WC_SUCCESS, "WRITE through type 2");
	settle(31);
	CHECK(tgt.buf[128] == 0xC3 && tgt.buf[191] == 0xC3, "type 2 write landed");
	/* The initiator revokes it with a Send with Invalidate. */
	struct ibv_sge sg = {(uintptr_t)ini.buf, 4, ini.mr->lkey};
	struct ibv_send_wr s = {.wr_id = 12, .sg_list = &sg, .num_sge = 1,
				.opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	s.invalidate_rkey = k;
	CHECK(ibv_post_send(ini.id->qp, &s, &bad) == 0, "SEND_WITH_INV");
	expect(ini.cq, 12, IBV_WC_SUCCESS, IBV_WC_SEND, "SEND_WITH_INV");
	struct ibv_wc wc = poll1(tgt.cq, "receive of the Send with Invalidate");
	CHECK(wc.wr_id == 900 && wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
		      wc.invalidated_rkey == k,
	      "IBV_WC_WITH_INV with the window's rkey");
	/* Bound again, revoked by LOCAL_INV. */
	k = ibv_inc_rkey(k);
	bind2_wr(mw, 13, k);
	struct ibv_send_wr li = {.wr_id = 14, .opcode = IBV_WR_LOCAL_INV};
	li.invalidate_rkey = k;
	post_tgt(&li, "IBV_WR_LOCAL_INV");
	expect(tgt.cq, 14, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, "LOCAL_INV of a type 2 window");
	bind2_wr(mw, 15, ibv_inc_rkey(k)); /* freed bound, below */
	*keep = mw;
}

/* rdma_destroy_id waits until the id's events are acked, as rdma-core does
 * (an EBUSY let rping destroy its channel under its cm thread). */
static atomic_int destroy_rc = -100;

static void *destroy_fn(void *id)
{
	atomic_store(&destroy_rc, rdma_destroy_id(id));
	return NULL;
}

static void destroy_waits_for_ack(struct rdma_event_channel *ec)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9)};
	struct timespec t = {0, 100 * 1000 * 1000};
	struct rdma_cm_id *id;
	pthread_t th;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	CHECK(rdma_create_id(ec, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) == 0, "resolve_addr");
	struct rdma_cm_event *e = compat_event(ec, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(pthread_create(&th, NULL, destroy_fn, id) == 0, "pthread_create");
	nanosleep(&t, NULL);
	CHECK(atomic_load(&destroy_rc) == -100, "rdma_destroy_id returned before the ack");
	rdma_ack_cm_event(e);
	pthread_join(th, NULL);
	CHECK(atomic_load(&destroy_rc) == 0, "rdma_destroy_id after the ack");
}

int main(void)
{
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct ibv_device_attr da;
	struct ibv_mw *mw2;
	uint32_t stale;

	CHECK(ec, "rdma_create_event_channel");
	destroy_waits_for_ack(ec);
	connect_self(ec);
	CHECK(ibv_query_device(ini.id->verbs, &da) == 0, "ibv_query_device");
	CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		      (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da.max_mw > 0,
	      "memory window capabilities");
	type1(&stale);
	type2(&mw2);
	/* A stale type 1 rkey: refused, nothing lands, the connection ends. */
	memset(ini.buf + 64, 0xEE, 64);
	memset(tgt.buf, 0, LEN);
	rdma_op(IBV_WR_RDMA_WRITE, 20, stale, 64, 64, IBV_WC_SUCCESS, "WRITE with a stale rkey");
	settle_st(33, IBV_WC_WR_FLUSH_ERR); /* the target's TERMINATE ended the connection */
	CHECK(tgt.buf[64] == 0, "nothing landed through the stale rkey");
	CHECK(ibv_dealloc_mw(mw2) == 0, "ibv_dealloc_mw of a bound window");
	rdma_destroy_qp(tgt.id);
	rdma_destroy_qp(ini.id);
	CHECK(ibv_dereg_mr(tgt.mr) == 0 && ibv_dereg_mr(ini.mr) == 0, "ibv_dereg_mr");
	printf("ok: memory windows through libibverbs (types 1 and 2)\n");
	return 0;
}
