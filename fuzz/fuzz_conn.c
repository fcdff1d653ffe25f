/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the sans-I/O connection (lib/conn/conn.c) over a
 * real QP: the input is a script of what the peer sends (MPA frames and
 * FPDUs, any octets), timer ticks on the fake clock, and the application's
 * and TCP's moves, decoded one command at a time. Everything the
 * connection writes is taken through the shared pump (tests/mempump.h)
 * and dropped.
 *
 * Input: octet 0 settings (bit 0 initiator, bits 1-2 delivery mode of the
 * pump, bit 3 TCP takes random prefixes, bit 4 CRC off in our options,
 * bit 5 P2P off, bit 6 markers asked, bit 7 wake-ups every 1 ms), then
 * commands: c < 0xC0: the next c+1 octets come from the peer; 0xC0-0xDF:
 * the clock moves (c & 31) * 97 ms and due timers fire; 0xE0 accept, 0xE1
 * reject, 0xE2 disconnect, 0xE3 the peer's FIN, 0xE4 a reset, 0xE5 post a
 * Send and a Write, 0xE6 post a receive, 0xE7 TCP up again; others: drain
 * the output.
 *
 * Asserted (abort): every octet fed is consumed; once closed nothing more
 * is written and no event but the closing ones appears; ESTABLISHED at
 * most once and never after the end; no deadline in the past; a timer
 * that fires leaves no due deadline behind; at the end the QP destroys
 * and leaves no reference on the MR, CQ and PD (kept for the next input).
 * ASan/UBSan do the rest.
 *
 * The harness's own functions (the script decoder, the pump's ends, the
 * checks) carry no coverage counters or comparison tracing (FUZZ_HARNESS,
 * fuzz.h), as in the other targets: they were an eighth of this target's
 * traced comparisons (perf).
 */
#include <errno.h>
#include <string.h>

#include "conn/conn.h"
#include "engine/context.h"
#include "engine/cq.h"
#include "engine/mem.h"
#include "engine/qp.h"
#include "fuzz.h"
#include "conn_read.h"
#include "mempump.h"

#define BUF 8192
#define END_EV (IW_CONN_EV_CONNECT_ERROR | IW_CONN_EV_UNREACHABLE | \
		IW_CONN_EV_DISCONNECTED | IW_CONN_EV_DROPPED | IW_CONN_EV_REJECTED)

/* Made once and kept: a fresh context, PD, CQ and MR per input cost
 * more than the connection itself, and their edges, run by every input,
 * were most of libFuzzer's per-input feature bookkeeping. Each input gets
 * them as new (checked in teardown), and a QP and connection of its own. */
static struct {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_mr *mr;
	int pd_use;     /* the PD's users with no QP: the MR */
	uint8_t buf[BUF];
} K;

static struct {
	struct iw_qp *qp;
	struct iw_conn c;
	struct mp mp;
	uint64_t now;
	unsigned seen;  /* application events so far */
	bool closed;
} F;

FUZZ_HARNESS static int end_tx_iov(void *e, struct iovec *iov, int cap)
{
	return iw_conn_tx_iov(e, iov, cap);
}

static unsigned pending;

FUZZ_HARNESS static void end_tx_sent(void *e, size_t n)
{
	pending |= iw_conn_tx_sent(e, n);
}

FUZZ_HARNESS static int end_rx(void *e, const uint8_t *p, size_t n)
{
	size_t used = 0;
	pending |= iw_conn_recv(e, p, n, &used);
	return used == n || !iw_conn_wants_read(e) ? 0 : -1;
}

FUZZ_HARNESS static size_t end_rx_direct(void *e, uint8_t **dst)
{
	size_t cap = 65536;
	return iw_conn_rx_plan(e, dst, &cap);
}

FUZZ_HARNESS static int end_rx_placed(void *e, size_t n)
{
	size_t used = 0;
	pending |= iw_conn_recv_placed(e, n, NULL, 0, &used);
	return 0;
}

/* The glue's planned reads (read-ahead guesses included), as lib/io does. */
FUZZ_HARNESS static long end_rx_read(void *e, const uint8_t *p, size_t len)
{
	static uint8_t bounce[IW_RX_BOUNCE_LEN_DEFAULT];
	return conn_read(e, bounce, sizeof(bounce), p, len, &pending, NULL);
}

static const struct mp_ops conn_end = {end_tx_iov, end_tx_sent, end_rx, end_rx_direct,
				       end_rx_placed, end_rx_read};

/* Act on events as the glue does: write (when the connection says there
 * is output, IW_CONN_EV_SEND, as lib/io/cm_conn.c does; an empty
 * iw_conn_tx_iov after every command was a fifth of this target's
 * instructions), then close. */
FUZZ_HARNESS static void act(unsigned ev)
{
	for (int round = 0; round < 64; round++) {
		ev |= pending;
		pending = 0;
		if (F.seen & END_EV)
			CHECK(!(ev & IW_CONN_EV_ESTABLISHED));
		if (ev & IW_CONN_EV_ESTABLISHED)
			CHECK(!(F.seen & IW_CONN_EV_ESTABLISHED));
		F.seen |= ev & ~(IW_CONN_EV_SEND | IW_CONN_EV_SHUTDOWN | IW_CONN_EV_CLOSE);
		if (!F.closed) {
			long n = 0;
			if (ev & IW_CONN_EV_SEND)
				while ((n = mp_take(&F.mp, &conn_end, &F.c)) > 0)
					;
			CHECK(n == 0);
			pending |= iw_conn_step(&F.c, 0);
		}
		if (ev & IW_CONN_EV_CLOSE) {
			F.closed = true;
			iw_conn_closed(&F.c);
		}
		if (F.closed) {
			/* What it had to say (a TERMINATE) went out before the
			 * close: a closed connection is mute. */
			struct iovec iov[4];
			CHECK(iw_conn_tx_iov(&F.c, iov, 4) == 0);
		}
		if (!pending)
			return;
		ev = 0;
	}
}

FUZZ_HARNESS static void reg_mr(void)
{
	K.mr = iw_reg_mr(K.pd, K.buf, BUF,
			 IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	CHECK(K.mr);
}

FUZZ_HARNESS static void keep_init(void)
{
	if (K.ctx)
		return;
	K.ctx = iw_context_core_new();
	CHECK(K.ctx);
	K.pd = iw_alloc_pd(K.ctx);
	K.cq = iw_create_cq(K.ctx, 64, NULL, NULL, 0);
	CHECK(K.pd && K.cq);
	reg_mr();
	K.pd_use = atomic_load(&K.pd->use);
}

FUZZ_HARNESS static void setup(uint8_t set)
{
	memset(&F, 0, sizeof(F));
	keep_init();
	/* As in a new context: QP numbers from 1, the MR's octets zero. */
	atomic_store(&K.ctx->next_qpn, 0);
	memset(K.buf, 0, BUF);
	struct iw_qp_init_attr a = {.send_cq = K.cq, .recv_cq = K.cq, .qp_type = IW_QPT_RC};
	a.cap.max_send_wr = a.cap.max_recv_wr = 8;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	F.qp = iw_create_qp(K.pd, &a);
	CHECK(F.qp);
	struct iw_qp_attr qa = {.qp_state = IW_QPS_INIT};
	CHECK(iw_modify_qp(F.qp, &qa, IW_QP_STATE) == 0);
	iw_conn_init(&F.c, NULL);
	F.c.opts.crc = !(set & 16);
	F.c.opts.p2p = !(set & 32);
	F.c.opts.markers = set & 64;
	F.c.opts.wake_ms = (set & 128) ? 1 : 200;
	F.mp.mode = (enum mp_mode)((set >> 1) & 3);
	F.mp.partial = set & 8;
	F.mp.own_rng = set | 1u << 16;
	F.now = 1;
	pending = 0;
	if (set & 1) {
		CHECK(iw_conn_connect(&F.c, F.qp, 2, 2, "pd", 2, 0) == 0);
		act(iw_conn_tcp_up(&F.c, 1460));
	} else {
		act(iw_conn_tcp_up(&F.c, 1460));
	}
}

/* What the QP left in the kept objects goes; no reference is leaked. A CQ
 * that overflowed or an MR the peer invalidated is made anew, so the next
 * input finds them as a new context would. */
FUZZ_HARNESS static void keep_reset(void)
{
	struct iw_wc wc[16];
	struct iw_async_event ev;

	while (iw_poll_cq(K.cq, 16, wc) > 0)
		;
	while (iw_get_async_event(K.ctx, &ev) == 0)
		;
	CHECK(atomic_load(&K.cq->use) == 0);
	CHECK(atomic_load(&K.pd->use) == K.pd_use);
	CHECK(iw_mem_refs(iw_mr_int(K.mr)) == 0);
	if (K.cq->overflow || K.cq->lost) {
		CHECK(iw_destroy_cq(K.cq) == 0);
		K.cq = iw_create_cq(K.ctx, 64, NULL, NULL, 0);
		CHECK(K.cq);
	}
	if (!iw_mem_is_valid(iw_mr_int(K.mr))) {
		CHECK(iw_dereg_mr(K.mr) == 0);
		reg_mr();
	}
}

FUZZ_HARNESS static void teardown(void)
{
	if (!F.closed) {
		iw_conn_abort(&F.c);
		iw_conn_closed(&F.c);
	}
	CHECK(iw_destroy_qp(F.qp) == 0);
	keep_reset();
	mp_free(&F.mp);
}

FUZZ_HARNESS static void tick(unsigned steps)
{
	F.now += steps * 97u;
	uint64_t t = iw_conn_next_timeout(&F.c, F.now);
	CHECK(t == UINT64_MAX || t >= 1);
	if (t <= F.now) {
		act(iw_conn_on_timer(&F.c, F.now));
		CHECK(iw_conn_next_timeout(&F.c, F.now) > F.now);
	}
}

FUZZ_HARNESS static void post(bool recv)
{
	struct iw_sge sg = {(uintptr_t)K.buf, 64, K.mr->lkey};
	if (recv) {
		struct iw_recv_wr r = {.wr_id = 1, .sg_list = &sg, .num_sge = 1};
		iw_post_recv(F.qp, &r, NULL);
		return;
	}
	struct iw_send_wr w = {.wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = IW_WR_SEND};
	iw_post_send(F.qp, &w, NULL);
	w.opcode = IW_WR_RDMA_WRITE;
	w.wr.rdma.remote_addr = 0x1000;
	w.wr.rdma.rkey = 0x100;
	iw_post_send(F.qp, &w, NULL);
	act(0);
}

FUZZ_HARNESS static void app(uint8_t c)
{
	unsigned ev = 0;
	switch (c) {
	case 0xE0:
		if (iw_conn_accept(&F.c, F.qp, 2, 2, "ok", 2, &ev) == 0)
			act(ev);
		break;
	case 0xE1:
		if (iw_conn_reject(&F.c, "no", 2, &ev) == 0)
			act(ev);
		break;
	case 0xE2:
		if (iw_conn_disconnect(&F.c) == 0)
			act(IW_CONN_EV_SEND);
		break;
	case 0xE3:
		if (!F.closed)
			act(iw_conn_eof(&F.c));
		break;
	case 0xE4:
		if (!F.closed)
			act(iw_conn_io_error(&F.c, ECONNRESET));
		break;
	case 0xE5:
	case 0xE6:
		post(c == 0xE6);
		break;
	case 0xE7:
		act(iw_conn_tcp_up(&F.c, 1460));
		break;
	default:
		act(IW_CONN_EV_SEND);
		break;
	}
}

FUZZ_HARNESS int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	setup(data[0]);
	size_t pos = 1;
	while (pos < size) {
		uint8_t c = data[pos++];
		if (c < 0xC0) {
			size_t n = (size_t)c + 1 < size - pos ? (size_t)c + 1 : size - pos;
			if (!F.closed && iw_conn_wants_read(&F.c))
				CHECK(mp_feed(&F.mp, &conn_end, &F.c, data + pos, n) == 0);
			pos += n;
			act(0);
		} else if (c < 0xE0) {
			tick(c & 31);
		} else {
			app(c);
		}
	}
	/* Run the clock out: every timer ends. */
	for (int i = 0; i < 64 && iw_conn_next_timeout(&F.c, F.now) != UINT64_MAX; i++)
		tick(31 * 4);
	teardown();
	return 0;
}
