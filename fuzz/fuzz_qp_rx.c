/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the QP engine's receive side (lib/engine/qp*.c, wr.c,
 * srq.c, mem.c behind iw_qp_rx): the input is the peer's byte stream into
 * one started QP that has memory registered, receives posted and its own
 * Sends, Writes, Reads and atomics outstanding, so that what arrives meets
 * Read Responses owed and expected, receives being filled and completions.
 *
 * Input: an 8-octet settings block, then the stream (FPDUs from offset 0).
 *   0  bit 0 CRC, 1 markers peer -> QP, 2 markers QP -> peer, 3 enforce the
 *      CRC (default: IW_RX_SKIP_CRC through the IW_FUZZING hook in qp.c),
 *      4 P2P, 5 initiator, 6 RFC 7306 QP, 7 SRQ instead of an RQ
 *   1  bits 0-1 RTR (0 none, 1 SEND, 2 WRITE, 3 READ), 2-4 IRD, 5-7 ORD
 *   2  bits 0-1 segmentation (0 whole, 1 octet by octet for the first 64
 *      octets of each stream, then as 2, 2 chunks of 1..8, 3 chunks of
 *      1..512), 2 direct placement (iw_qp_rx_direct/_done),
 *      3 write tx out after every chunk that queued some (else only at
 *      the end), 4 TCP takes random prefixes, 5 only even WRs signaled,
 *      6 siw TERMINATE layout, 7 sometimes leave a direct destination
 *      unused
 *   3  seed of the chunking and partial-write generator; with the SRQ
 *      (0 bit 7), its bit 0 also has the SRQ hand out the receive posted
 *      last (iw_set_srq_order)
 *   4  EMSS = 32 + 8 * this (MULPDU for the QP's own segmentation: small
 *      ones fill the transmit queue with many FPDUs)
 *   5  which send WR groups to post (bit i: group i, see post_sends)
 *   6  where the mid-stream action happens (at len * this / 256)
 *   7  the action: bit 0 modify to ERR, 1 try to deregister every MR, 2
 *      post more WRs, 3 SQD and back to RTS, 4 connection lost, 5 modify
 *      to ERR while a direct destination is handed out, 6 reconnect (the
 *      rest of the input is the new connection's stream); bit 7: at the
 *      end destroy the QP without losing the connection first
 *
 * Memory lives in an arena mapped at a fixed address (ARENA_ADDR) so that
 * tagged offsets are the same in every run and can be put in seeds; STags
 * are deterministic too (IW_FUZZING makes the STag table allocate in order
 * instead of at random, and iw_fuzz_mem_restart makes the slots no kept MR
 * holds new again after each input): region i (1-based in
 * the table below) has STag i << 8, the fast-registered ones key 1. Every
 * region sits between poisoned canaries. fuzz/seed_qp.py mirrors this
 * layout: keep them in step.
 *
 * Asserted (abort): canaries intact; no octet outside what may legally be
 * written (remotely writable MRs of the QP's PD, posted receive SGEs,
 * atomic result SGEs) changes, checked against a shadow copy, and every
 * direct destination lies inside it; every WR posted completes exactly
 * once (signaled ones; unsignaled at most once; SRQ WRs at most once, the
 * rest still in the SRQ), each CQ in posting order, all of it by the time
 * the connection is lost; no MR reference is leaked (no STag slot holds a
 * reference after the input, the fast-registered MRs deregister, the SRQ
 * and QP are made anew, the kept PDs and CQs are back to the kept
 * objects' users); each input finds the kept objects as new ones (fuzz/run.sh
 * compares per-input digests across orders and FUZZ_QP_FRESH=1);
 * no block of the context's allocator left out but the kept objects' (the
 * allocator, fuzz/pool.c, reuses blocks across inputs; FUZZ_POOL=0 gives
 * libc's, for ASan's allocation stacks); the QP's own output decodes cleanly (the
 * CRC enforced unless partial writes open the race noted in setup()),
 * FPDUs within MULPDU, nothing after a TERMINATE, the RTR
 * first, nothing but a TERMINATE before a P2P responder got its RTR, and
 * one TERMINATE per locally detected error event; at most one QP error
 * event. ASan/LSan do the rest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sanitizer/asan_interface.h>

#include "engine/context.h"
#include "engine/cq.h"
#include "engine/mem.h"
#include "engine/qp.h"
#include "engine/qp_txq.h"
#include "engine/srq.h"
#include "digest.h"
#include "fuzz.h"
#include "pool.h"

#define SETTINGS_LEN 8
#define ARENA_ADDR 0x10000000ul
#define ARENA_SIZE 4096
#define CANARY 32
#define CANARY_BYTE 0xC3
#define MAX_IDS 64
#define CQE 256
#define REPOSTS 6

#define ACC_LW IW_ACCESS_LOCAL_WRITE
#define ACC_RW (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE)
#define ACC_RR IW_ACCESS_REMOTE_READ
#define ACC_ALL (ACC_RW | ACC_RR | IW_ACCESS_REMOTE_ATOMIC)

/* ------------------------------------------------------------ layout */

enum { R_RECV, R_RW, R_RD, R_SRC, R_PD2, R_SINK, R_ARES, R_F1, R_F2, R_NONE, NUM_REG };

static const struct region_def {
	uint32_t size;
	int pd;        /* 0: not registered */
	int access;
	bool fastreg;  /* iw_alloc_mr, then REG_MR (key 1) at iova */
	uint64_t iova;
} defs[NUM_REG] = {
	[R_RECV] = {256, 1, ACC_LW, false, 0},  /* receives */
	[R_RW] = {256, 1, ACC_ALL, false, 0},   /* the peer's Writes, Reads, atomics */
	[R_RD] = {128, 1, ACC_RR, false, 0},    /* readable only */
	[R_SRC] = {128, 1, 0, false, 0},        /* Send source, local only */
	[R_PD2] = {128, 2, ACC_ALL, false, 0},  /* everything, but another PD */
	[R_SINK] = {128, 1, ACC_RW, false, 0},  /* our Reads land here */
	[R_ARES] = {16, 1, ACC_LW, false, 0},   /* our atomics' results */
	[R_F1] = {128, 1, ACC_RW | ACC_RR, true, 0x100000},
	[R_F2] = {128, 1, ACC_ALL, true, UINT64_MAX - 127}, /* TO space's end */
	[R_NONE] = {64, 0, 0, false, 0},
};

/* Receive WQEs: up to three SGEs (region, offset, length) each. */
struct sge_def {
	int reg;
	uint16_t off, len;
};
#define NUM_RECV 5
static const struct sge_def recv_defs[NUM_RECV][3] = {
	{{R_RECV, 0, 16}, {R_RECV, 32, 16}, {R_RECV, 64, 8}},
	{{R_RECV, 80, 64}},
	{{0, 0, 0}}, /* no SGE at all */
	{{R_RECV, 160, 8}, {R_RW, 128, 8}},
	{{R_RECV, 176, 80}},
};
static const int recv_nsge[NUM_RECV] = {3, 1, 0, 2, 1};

/* The peer's side of our Reads, Writes and atomics (never checked here). */
#define PEER_STAG 0x7700
#define PEER_TO 0x9000

/* ------------------------------------------------------------ state */

struct settings {
	bool crc, mk_rx, mk_tx, enforce, p2p, initiator, rfc7306, srq;
	bool srq_newest; /* the SRQ hands out the receive posted last */
	uint8_t rtr;
	uint16_t ird, ord;
	int seg_mode;
	bool direct, tx_each, tx_partial, half_signaled, siw, direct_skip;
	uint32_t seed;
	uint32_t emss;
	uint8_t groups;
	uint8_t act_at, act;
};

enum wr_kind { WK_NONE, WK_SQ, WK_RQ, WK_SRQ };

struct tap {
	struct iw_fpdu_rx rx;
	unsigned nseg, nterm;
	uint16_t term;
	bool after_term;
};

struct fz {
	struct settings set;
	uint8_t *arena;
	uint8_t *host[NUM_REG];

	struct iw_srq *srq;
	struct iw_qp *qp;
	struct iw_qp_conn conn;

	uint64_t next_id;
	enum wr_kind kind[MAX_IDS];
	bool signaled[MAX_IDS];
	uint32_t rlen[MAX_IDS];    /* receive WQE length */
	int rdef[MAX_IDS];         /* receive: which recv_defs entry */
	unsigned ncomp[MAX_IDS];
	uint64_t last_sq, last_rq; /* wr_ids in completion order */
	bool rq_failed;            /* a receive completed in error */
	int reposts;

	uint32_t qp_num;
	uint32_t rng;
	struct tap tap;
	unsigned events;           /* IW_QPE_* taken */
	bool tx_want;              /* the QP asked to write (or a write was partial) */
	size_t pos, act_pos;       /* stream octets fed; where the action fires */
	size_t single_end;         /* mode 1: one octet per call up to here */
	unsigned qp_err_events, local_err_events, last_wqe_events;
	uint32_t local_term;
	bool conn_lost;            /* iw_qp_conn_lost was called */
	bool tap_complete;         /* everything queued was written out */
	/* From here on not cleared per input: arena_reset rewrites the
	 * shadow and the mask whole, drain_tx the stage before reading it. */
	uint8_t stage[65536];
	uint8_t shadow[ARENA_SIZE];
	uint8_t wmask[ARENA_SIZE]; /* octets that may change */
};

static struct fz F;

/* Made once and kept across inputs: a context, PDs, CQs, MRs, an SRQ and
 * a QP per input cost more than many inputs' streams, and their edges, run
 * by every input, swelled libFuzzer's per-input feature bookkeeping. Each
 * input still finds them as new (keep_next): QP number and STags from the
 * start, no completion, event or posted WR left over, no reference
 * leaked; the QP and SRQ made again in place (iw_fuzz_qp_renew,
 * iw_fuzz_srq_renew), the fast-registered MRs and whatever the input
 * destroyed or deregistered made anew. fuzz/run.sh proves the start the
 * same for every input: the corpus run in two orders, and with every
 * object made anew for each input (FUZZ_QP_FRESH=1), gives each input
 * the same digest of what it made happen (FUZZ_QP_DIGEST, fuzz/digest.c). */
static struct {
	struct iw_context *ctx;
	struct iw_pd *pd, *pd2;
	struct iw_cq *scq, *rcq;
	struct iw_mr *mr[NUM_REG];
	struct iw_srq *srq;
	struct iw_qp *qp;
	int pd_use, pd2_use; /* the PDs' users with the kept objects */
	int scq_use, rcq_use;
	bool pool;           /* the context allocates from fuzz/pool.c */
	size_t pool_live;    /* its blocks out but the caches' (pool_cached) */
	bool fresh;          /* FUZZ_QP_FRESH=1: every object anew per input */
	bool digest;         /* FUZZ_QP_DIGEST names a file */
} K;

FUZZ_HARNESS static uint32_t next_rand(void)
{
	uint32_t x = F.rng ? F.rng : 0x9E3779B9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	F.rng = x;
	return x;
}

/* ------------------------------------------------------------ arena */

FUZZ_HARNESS static void arena_map(void)
{
	if (F.arena)
		return;
	void *p = mmap((void *)ARENA_ADDR, ARENA_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)ARENA_ADDR) {
		fprintf(stderr, "fuzz_qp_rx: cannot map the arena at %#lx\n", ARENA_ADDR);
		abort();
	}
	F.arena = p;
}

FUZZ_HARNESS static size_t arena_off(const uint8_t *p)
{
	return (size_t)(p - F.arena);
}

FUZZ_HARNESS static bool in_arena(const uint8_t *p, size_t n)
{
	return p >= F.arena && n <= ARENA_SIZE && arena_off(p) <= ARENA_SIZE - n;
}

FUZZ_HARNESS static void may_write(const uint8_t *p, size_t n)
{
	CHECK(in_arena(p, n));
	memset(F.wmask + arena_off(p), 1, n);
}

FUZZ_HARNESS static bool writable(const uint8_t *p, size_t n)
{
	if (!in_arena(p, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!F.wmask[arena_off(p) + i])
			return false;
	return true;
}

/* Regions between canaries, each with its own pattern; canaries poisoned. */
FUZZ_HARNESS static void arena_reset(void)
{
	/* The patterns, laid out once and copied in for every input. */
	static uint8_t image[ARENA_SIZE];
	static bool made;
	size_t off = CANARY;

	ASAN_UNPOISON_MEMORY_REGION(F.arena, ARENA_SIZE);
	if (!made)
		memset(image, CANARY_BYTE, ARENA_SIZE);
	memset(F.wmask, 0, sizeof(F.wmask));
	for (int i = 0; i < NUM_REG; i++) {
		F.host[i] = F.arena + off;
		for (uint32_t k = 0; !made && k < defs[i].size; k++)
			image[off + k] = (uint8_t)(i * 37 + k * 11) ^ 0x5A;
		off += defs[i].size + CANARY;
	}
	CHECK(off <= ARENA_SIZE);
	made = true;
	memcpy(F.arena, image, ARENA_SIZE);
	memcpy(F.shadow, image, ARENA_SIZE);
	off = 0;
	for (int i = 0; i < NUM_REG; i++) {
		ASAN_POISON_MEMORY_REGION(F.arena + off, arena_off(F.host[i]) - off);
		off = arena_off(F.host[i]) + defs[i].size;
	}
	ASAN_POISON_MEMORY_REGION(F.arena + off, ARENA_SIZE - off);
}

FUZZ_HARNESS static void arena_check(void)
{
	ASAN_UNPOISON_MEMORY_REGION(F.arena, ARENA_SIZE);
	/* Octet by octet only where a 64-octet block changed. */
	for (size_t b = 0; b < ARENA_SIZE; b += 64) {
		if (memcmp(F.arena + b, F.shadow + b, 64) == 0)
			continue;
		for (size_t i = b; i < b + 64; i++)
			CHECK(F.wmask[i] || F.arena[i] == F.shadow[i]);
	}
}

/* An MR deregistered mid-stream: nothing may write its region any more. */
FUZZ_HARNESS static void freeze(int r)
{
	size_t o = arena_off(F.host[r]);

	memset(F.wmask + o, 0, defs[r].size);
	memcpy(F.shadow + o, F.host[r], defs[r].size);
}

/* ------------------------------------------------------------ tap */

/* The decoder again, without coverage (fuzz/tap_rx.c): the QP's output is
 * the library's, not the input's, and decoding it through the traced copy
 * made two thirds of the decoder's comparison tracing. */
void tap_fpdu_rx_init(struct iw_fpdu_rx *rx, bool crc, bool markers, uint32_t stream_off,
		      uint32_t max_ulpdu, unsigned flags);
int tap_fpdu_rx_next(struct iw_fpdu_rx *rx, struct iw_rx_event *ev, const uint8_t *in,
		     size_t in_len, size_t *consumed);

/* Our own output, decoded independently with the CRC enforced. */
FUZZ_HARNESS static void tap_seg(const struct iw_ddp_seg *s)
{
	struct tap *t = &F.tap;
	unsigned op = iw_ddp_opcode(&s->ddp);
	uint32_t max = F.conn.mulpdu > IW_FPDU_HDR_MAX ? F.conn.mulpdu : IW_FPDU_HDR_MAX;

	CHECK(!t->after_term);
	CHECK(s->ulpdu_len <= max);
	if (op == IW_OP_TERMINATE) {
		t->after_term = true;
		t->nterm++;
		t->term = s->rdmap.u.term.term;
	} else if (F.set.p2p && !F.set.initiator) {
		/* A responder sends nothing before the RTR arrived. */
		CHECK(F.events & IW_QPE_ESTABLISHED);
	} else if (F.set.p2p && t->nseg == 0) {
		/* The initiator's first FPDU is the RTR. */
		if (F.conn.rtr == IW_RTR_WRITE)
			CHECK(op == IW_OP_WRITE && s->payload_len == 0);
		else if (F.conn.rtr == IW_RTR_READ)
			CHECK(op == IW_OP_READ_REQ && s->rdmap.u.read_req.read_size == 0);
		else
			CHECK(op == IW_OP_SEND && s->payload_len == 0);
	}
	t->nseg++;
}

FUZZ_HARNESS static void tap_feed(const uint8_t *p, size_t n)
{
	while (n) {
		struct iw_rx_event ev;
		size_t used = 0;
		int rc = tap_fpdu_rx_next(&F.tap.rx, &ev, p, n, &used);

		CHECK(rc >= 0);
		CHECK(used <= n);
		p += used;
		n -= used;
		if (rc == 0)
			break;
		if (ev.kind == IW_RX_SEG_HDR)
			tap_seg(ev.seg);
	}
	CHECK(n == 0);
}

/* ------------------------------------------------------------ engine I/O */

/* The glue writes when the engine says there is something to write (TX,
 * or ERROR: a TERMINATE to flush) or its last write was partial. */
FUZZ_HARNESS static void take_events(void)
{
	unsigned e = iw_qp_take_events(F.qp);

	F.events |= e;
	if (e & (IW_QPE_TX | IW_QPE_ERROR))
		F.tx_want = true;
}

/* Write out what the QP has queued: all of it, or (partial) one random
 * prefix per call. Between chunks (!all) only when the QP asked, as the
 * glue does: an empty iw_qp_tx_iov after every octet fed was most of this
 * target's instructions (callgrind), and the unasked call still runs at
 * the end of every drain. settle() drains unasked. */
FUZZ_HARNESS static void drain_tx(bool all)
{
	static struct iovec iov[IW_TXQ_IOV];

	take_events();
	if (!all && !F.tx_want)
		return;
	F.tx_want = false;
	for (unsigned rounds = 0;; rounds++) {
		int cap = F.set.tx_partial ? 1 + (int)(next_rand() % 8) : IW_TXQ_IOV;
		int n = iw_qp_tx_iov(F.qp, iov, cap);
		size_t total = 0, off = 0;

		CHECK(n >= 0 && n <= cap);
		CHECK(rounds < 1000000);
		if (n == 0)
			break;
		for (int i = 0; i < n; i++)
			total += iov[i].iov_len;
		CHECK(total > 0);
		if (F.set.tx_partial && total > 1 && (next_rand() & 1))
			total = 1 + next_rand() % total;
		CHECK(total <= sizeof(F.stage));
		for (int i = 0; i < n && off < total; i++) {
			size_t k = iov[i].iov_len < total - off ? iov[i].iov_len : total - off;

			memcpy(F.stage + off, iov[i].iov_base, k);
			off += k;
		}
		iw_qp_tx_sent(F.qp, total);
		if (K.digest)
			fuzz_digest_mix(F.stage, total);
		tap_feed(F.stage, total);
		take_events();
		if (!all && F.set.tx_partial) {
			F.tx_want = true; /* maybe more left */
			break;
		}
	}
	if (all && !iw_qp_tx_pending(F.qp))
		F.tap_complete = true;
}

/* ------------------------------------------------------------ posting */

FUZZ_HARNESS static struct iw_sge sge_at(int r, uint32_t off, uint32_t len)
{
	struct iw_sge s = {
		.addr = (uintptr_t)(F.host[r] + off),
		.length = len,
		.lkey = K.mr[r] ? K.mr[r]->lkey : 0,
	};
	if (defs[r].fastreg)
		s.addr = defs[r].iova + off;
	return s;
}

FUZZ_HARNESS static uint64_t new_id(enum wr_kind k)
{
	uint64_t id = F.next_id++;

	CHECK(id < MAX_IDS);
	F.kind[id] = k;
	return id;
}

FUZZ_HARNESS static void post_recv_def(int d)
{
	struct iw_sge sg[3];
	struct iw_recv_wr wr = {.sg_list = sg, .num_sge = recv_nsge[d]};
	struct iw_recv_wr *bad = NULL;
	uint32_t len = 0;
	int rc;

	if (F.next_id >= MAX_IDS)
		return;
	for (int i = 0; i < recv_nsge[d]; i++) {
		const struct sge_def *s = &recv_defs[d][i];

		sg[i] = sge_at(s->reg, s->off, s->len);
		len += s->len;
	}
	wr.wr_id = F.next_id;
	if (F.srq)
		rc = iw_post_srq_recv(F.srq, &wr, &bad);
	else
		rc = iw_post_recv(F.qp, &wr, &bad);
	if (rc) {
		CHECK(bad == &wr);
		return;
	}
	uint64_t id = new_id(F.srq ? WK_SRQ : WK_RQ);
	F.rlen[id] = len;
	F.rdef[id] = d;
	for (int i = 0; i < recv_nsge[d]; i++)
		may_write((uint8_t *)(uintptr_t)sg[i].addr, sg[i].length);
}

FUZZ_HARNESS static bool post_send(struct iw_send_wr *wr)
{
	struct iw_send_wr *bad = NULL;
	int rc;

	if (F.next_id >= MAX_IDS)
		return false;
	wr->wr_id = F.next_id;
	wr->next = NULL;
	if (F.set.half_signaled && !(wr->wr_id & 1))
		wr->send_flags |= IW_SEND_SIGNALED;
	rc = iw_post_send(F.qp, wr, &bad);
	if (rc) {
		CHECK(bad == wr);
		return false;
	}
	uint64_t id = new_id(WK_SQ);
	F.signaled[id] = !F.set.half_signaled || (wr->send_flags & IW_SEND_SIGNALED);
	return true;
}

FUZZ_HARNESS static struct iw_send_wr wr_of(enum iw_wr_opcode op, unsigned flags, struct iw_sge *sg, int n)
{
	struct iw_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = sg;
	wr.num_sge = n;
	wr.wr.rdma.remote_addr = PEER_TO;
	wr.wr.rdma.rkey = PEER_STAG;
	return wr;
}

FUZZ_HARNESS static void post_reg(int r)
{
	struct iw_send_wr wr = wr_of(IW_WR_REG_MR, 0, NULL, 0);

	if (!K.mr[r])
		return; /* deregistered */

	wr.reg.mr = K.mr[r];
	wr.reg.key = iw_inc_rkey(K.mr[r]->rkey);
	wr.reg.access = defs[r].access;
	wr.reg.iova = defs[r].iova;
	wr.reg.length = defs[r].size;
	wr.reg.addr = F.host[r];
	if (post_send(&wr))
		may_write(F.host[r], defs[r].size);
}

FUZZ_HARNESS static void post_read(int r, uint32_t off, uint32_t len, unsigned flags)
{
	struct iw_sge sg = sge_at(r, off, len);
	struct iw_send_wr wr = wr_of(IW_WR_RDMA_READ, flags, &sg, 1);

	post_send(&wr);
}

FUZZ_HARNESS static void post_atomic(enum iw_wr_opcode op, uint32_t off)
{
	struct iw_sge sg = sge_at(R_ARES, off, 8);
	struct iw_send_wr wr = wr_of(op, 0, &sg, 1);

	wr.wr.atomic.remote_addr = PEER_TO + 0x100;
	wr.wr.atomic.rkey = PEER_STAG + 2;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.swap = 7;
	if (post_send(&wr))
		may_write(F.host[R_ARES] + off, 8);
}

FUZZ_HARNESS static void post_sends(uint8_t groups)
{
	static const uint8_t inl[16] = "inline payload!";
	struct iw_sge sg[3];
	struct iw_send_wr wr;

	if (groups & 1) { /* fast registrations */
		post_reg(R_F1);
		post_reg(R_F2);
	}
	if (groups & 2) { /* Sends: three SGEs; inline with SE */
		sg[0] = sge_at(R_SRC, 0, 10);
		sg[1] = sge_at(R_RW, 0, 20);
		sg[2] = sge_at(R_SRC, 64, 36);
		wr = wr_of(IW_WR_SEND, 0, sg, 3);
		post_send(&wr);
		sg[0] = (struct iw_sge){.addr = (uintptr_t)inl, .length = sizeof(inl)};
		wr = wr_of(IW_WR_SEND, IW_SEND_INLINE | IW_SEND_SOLICITED, sg, 1);
		post_send(&wr);
		sg[0] = sge_at(R_RW, 0, 256);
		sg[1] = sge_at(R_SRC, 0, 128);
		sg[2] = sge_at(R_RD, 0, 128);
		wr = wr_of(IW_WR_SEND, 0, sg, 3);
		post_send(&wr);
	}
	if (groups & 4) { /* two Reads, the second fenced */
		post_read(R_SINK, 0, 64, 0);
		post_read(R_SINK, 64, 40, IW_SEND_FENCE);
	}
	if (groups & 8) { /* a fenced Write; Send with Invalidate */
		sg[0] = sge_at(R_SRC, 0, 50);
		sg[1] = sge_at(R_RD, 0, 30);
		wr = wr_of(IW_WR_RDMA_WRITE, IW_SEND_FENCE, sg, 2);
		wr.wr.rdma.rkey = PEER_STAG + 1;
		post_send(&wr);
		sg[0] = sge_at(R_SRC, 0, 8);
		wr = wr_of(IW_WR_SEND_WITH_INV, 0, sg, 1);
		wr.invalidate_rkey = 0x1234;
		post_send(&wr);
	}
	if (groups & 16) { /* RFC 7306 (refused by other QPs) */
		post_atomic(IW_WR_ATOMIC_FETCH_AND_ADD, 0);
		post_atomic(IW_WR_ATOMIC_CMP_AND_SWP, 8);
		sg[0] = sge_at(R_SRC, 0, 4);
		wr = wr_of(IW_WR_RDMA_WRITE_WITH_IMM, 0, sg, 1);
		wr.imm_data = 0x01020304;
		post_send(&wr);
		wr = wr_of(IW_WR_SEND_WITH_IMM, IW_SEND_SOLICITED, NULL, 0);
		wr.imm_data = 0x05060708;
		post_send(&wr);
	}
	if (groups & 32) { /* zero-length Send, Write, Read */
		wr = wr_of(IW_WR_SEND, 0, NULL, 0);
		post_send(&wr);
		wr = wr_of(IW_WR_RDMA_WRITE, 0, NULL, 0);
		post_send(&wr);
		post_read(R_SINK, 0, 0, 0);
	}
	if ((groups & 64) && K.mr[R_F1]) {
		/* Invalidate F1: a local error unless it is registered. */
		wr = wr_of(IW_WR_LOCAL_INV, 0, NULL, 0);
		wr.invalidate_rkey = iw_inc_rkey(K.mr[R_F1]->rkey);
		post_send(&wr);
	}
	if (groups & 128) /* a Read answered in many segments */
		post_read(R_RW, 0, 256, 0);
}

/* ------------------------------------------------------------ completions */

FUZZ_HARNESS static void on_wc(const struct iw_wc *wc, bool recv)
{
	uint64_t id = wc->wr_id;

	CHECK(id < F.next_id);
	CHECK(wc->qp_num == F.qp_num);
	if (K.digest) {
		uint64_t d[7] = {id, wc->status, wc->opcode, wc->byte_len, wc->vendor_err,
				 wc->qp_num, recv};

		fuzz_digest_mix(d, sizeof(d));
	}
	CHECK(++F.ncomp[id] == 1);
	if (recv) {
		CHECK(F.kind[id] == WK_RQ || F.kind[id] == WK_SRQ);
		/* In posting order, but for an SRQ that hands out the newest. */
		CHECK(F.last_rq < id + 1 || F.set.srq_newest);
		F.last_rq = id + 1;
		if (wc->status == IW_WC_SUCCESS) {
			CHECK(wc->opcode == IW_WC_RECV || wc->opcode == IW_WC_RECV_RDMA_WITH_IMM);
			CHECK(wc->byte_len <= F.rlen[id]);
			/* Take the next message into the same buffers, as
			 * applications do. */
			if (F.reposts < REPOSTS && !F.conn_lost) {
				F.reposts++;
				post_recv_def(F.rdef[id]);
			}
		} else if (wc->status != IW_WC_WR_FLUSH_ERR) {
			/* The receive at fault (verbs.h): the first to fail,
			 * with the TERMINATE that failed it. */
			CHECK(wc->status == IW_WC_LOC_LEN_ERR || wc->status == IW_WC_LOC_QP_OP_ERR ||
			      wc->status == IW_WC_REM_INV_REQ_ERR);
			CHECK(IW_TERM_IS_TRIPLE(wc->vendor_err));
			CHECK(!F.rq_failed);
		}
		if (wc->status != IW_WC_SUCCESS)
			F.rq_failed = true;
	} else {
		CHECK(F.kind[id] == WK_SQ);
		CHECK(F.last_sq < id + 1);
		F.last_sq = id + 1;
		CHECK(!(wc->opcode & IW_WC_RECV));
	}
}

/* Polled when a completion is there (an empty poll still ends every
 * loop below): polling two empty CQs after every octet fed cost more than
 * the octet. */
FUZZ_HARNESS static void poll_cqs(void)
{
	struct iw_wc wc[8];
	int n;

	if (!K.scq->count && !K.rcq->count)
		return;
	while ((n = iw_poll_cq(K.scq, 8, wc)) > 0)
		for (int i = 0; i < n; i++)
			on_wc(&wc[i], false);
	CHECK(n == 0);
	while ((n = iw_poll_cq(K.rcq, 8, wc)) > 0)
		for (int i = 0; i < n; i++)
			on_wc(&wc[i], true);
	CHECK(n == 0);
}

FUZZ_HARNESS static void take_async(void)
{
	struct iw_async_event ev;

	while (iw_get_async_event(K.ctx, &ev) == 0) {
		if (K.digest) {
			uint32_t d[3] = {ev.event_type, ev.term, ev.term_from_peer};

			fuzz_digest_mix(d, sizeof(d));
		}
		switch (ev.event_type) {
		case IW_EVENT_QP_FATAL:
		case IW_EVENT_QP_REQ_ERR:
		case IW_EVENT_QP_ACCESS_ERR:
			F.local_err_events++;
			F.local_term = ev.term;
			CHECK(!ev.term_from_peer);
			/* fall through */
		case IW_EVENT_QP_TERMINATE:
			CHECK(ev.element.qp == F.qp);
			CHECK(++F.qp_err_events == 1);
			break;
		case IW_EVENT_SQ_DRAINED:
			CHECK(ev.element.qp == F.qp);
			break;
		case IW_EVENT_QP_LAST_WQE_REACHED:
			CHECK(F.srq && ev.element.qp == F.qp);
			CHECK(++F.last_wqe_events == 1);
			break;
		case IW_EVENT_SRQ_LIMIT_REACHED:
			CHECK(F.srq && ev.element.srq == F.srq);
			break;
		default:
			abort(); /* CQ overflow, or an event never raised */
		}
	}
}

/* ------------------------------------------------------------ actions */

FUZZ_HARNESS static void modify(enum iw_qp_state s)
{
	struct iw_qp_attr a = {.qp_state = s};

	iw_modify_qp(F.qp, &a, IW_QP_STATE);
}

FUZZ_HARNESS static void try_dereg_all(void)
{
	for (int r = 0; r < NUM_REG; r++) {
		if (!K.mr[r])
			continue;
		int rc = iw_dereg_mr(K.mr[r]);

		CHECK(rc == 0 || rc == EBUSY);
		if (rc == 0) {
			K.mr[r] = NULL;
			freeze(r);
		}
	}
}

static void reconnect(void);

FUZZ_HARNESS static void act(void)
{
	uint8_t a = F.set.act;

	if (a & 1)
		modify(IW_QPS_ERR);
	if (a & 2)
		try_dereg_all();
	if (a & 4) {
		struct iw_sge sg = sge_at(R_SRC, 0, 32);
		struct iw_send_wr wr = wr_of(IW_WR_SEND, 0, &sg, 1);

		post_send(&wr);
		post_read(R_SINK, 104, 16, 0);
		post_recv_def(1);
	}
	if (a & 8) {
		modify(IW_QPS_SQD);
		drain_tx(false);
		take_async();
		modify(IW_QPS_RTS);
	}
	if (a & 16) {
		iw_qp_conn_lost(F.qp, false);
		F.conn_lost = true;
	}
	if (a & 64)
		reconnect();
}

/* ------------------------------------------------------------ feeding */

/* Mode 1 feeds one octet per call only for the first SINGLE_SPAN octets of
 * each stream (from the start and from the mid-stream action), then chunks
 * of 1..8 as mode 2: an input's cost grew with its length at one engine
 * call per octet (95% of the calls, callgrind on the corpus), and the
 * octet-by-octet splits past the opening FPDUs reached no line the random
 * 1..8 chunks do not. */
#define SINGLE_SPAN 64

FUZZ_HARNESS static size_t chunk_len(size_t left)
{
	size_t n = left;

	switch (F.set.seg_mode) {
	case 1:
		if (F.pos < F.single_end)
			n = 1;
		else if (F.pos < F.act_pos)
			/* the action still fires exactly where it did */
			n = 1 + next_rand() % (F.act_pos - F.pos < 8 ? F.act_pos - F.pos : 8);
		else
			n = 1 + next_rand() % 8;
		break;
	case 2:
		n = 1 + next_rand() % 8;
		break;
	case 3:
		n = 1 + next_rand() % 512;
		break;
	default:
		break;
	}
	return n < left ? n : left;
}

/* The glue's recv() straight into the destination the engine offers;
 * returns the octets placed. */
FUZZ_HARNESS static size_t feed_direct(const uint8_t *p, size_t left, bool *err_act)
{
	uint8_t *dst = NULL;
	size_t d = iw_qp_rx_direct(F.qp, &dst);
	size_t k;

	if (d == 0)
		return 0;
	/* Everything the glue may receive into must be writable. */
	CHECK(dst && writable(dst, d));
	if (*err_act) {
		/* The application fails the QP while the glue receives. */
		*err_act = false;
		modify(IW_QPS_ERR);
	}
	if (F.set.direct_skip && (next_rand() & 3) == 0)
		return 0; /* recv() said EAGAIN */
	k = chunk_len(left < d ? left : d);
	memcpy(dst, p, k);
	CHECK(iw_qp_rx_direct_done(F.qp, k) == 0);
	return k;
}

FUZZ_HARNESS static void feed(const uint8_t *data, size_t len)
{
	bool acted = !F.set.act, err_act = F.set.act & 32;

	F.pos = 0;
	F.act_pos = acted ? 0 : len * F.set.act_at / 256;
	F.single_end = SINGLE_SPAN;
	while (F.pos < len) {
		size_t n = 0;

		if (!acted && F.pos >= F.act_pos) {
			acted = true;
			act();
			F.single_end = F.pos + SINGLE_SPAN;
		}
		if (F.set.direct)
			n = feed_direct(data + F.pos, len - F.pos, &err_act);
		if (n == 0) {
			size_t used = (size_t)-1;

			n = chunk_len(len - F.pos);
			CHECK(iw_qp_rx(F.qp, data + F.pos, n, &used) == 0);
			CHECK(used == n);
		}
		F.pos += n;
		if (F.set.tx_each) {
			drain_tx(false); /* takes the events first */
			poll_cqs();
		} else {
			take_events();
		}
	}
	if (!acted)
		act();
}

/* ------------------------------------------------------------ setup */

FUZZ_HARNESS static void read_settings(struct settings *s, const uint8_t *p)
{
	static const uint8_t rtrs[4] = {0, IW_RTR_SEND, IW_RTR_WRITE, IW_RTR_READ};

	memset(s, 0, sizeof(*s));
	s->crc = p[0] & 1;
	s->mk_rx = p[0] & 2;
	s->mk_tx = p[0] & 4;
	s->enforce = p[0] & 8;
	s->p2p = p[0] & 16;
	s->initiator = p[0] & 32;
	s->rfc7306 = p[0] & 64;
	s->srq = p[0] & 128;
	s->rtr = rtrs[p[1] & 3];
	s->ird = (p[1] >> 2) & 7;
	s->ord = (p[1] >> 5) & 7;
	s->seg_mode = p[2] & 3;
	s->direct = p[2] & 4;
	s->tx_each = p[2] & 8;
	s->tx_partial = p[2] & 16;
	s->half_signaled = p[2] & 32;
	s->siw = p[2] & 64;
	s->direct_skip = p[2] & 128;
	s->seed = p[3];
	s->srq_newest = s->srq && (p[3] & 1);
	s->emss = 32 + 8u * p[4];
	s->groups = p[5];
	s->act_at = p[6];
	s->act = p[7];
}

/* Start the connection: a new stream each way from offset 0. */
FUZZ_HARNESS static void start(void)
{
	const struct settings *s = &F.set;

	iw_fuzz_qp_rx_flags = s->enforce ? 0 : IW_RX_SKIP_CRC;
	iw_qp_start(F.qp, &F.conn);
	/* The CRC of an FPDU is computed when it is queued, its payload read
	 * when it is written: if the peer writes (or an atomic changes) a
	 * region that a queued Send or Read Response reads from, in between,
	 * the FPDU goes out with a stale CRC (a race the peer or the
	 * application made). Only partial writes leave FPDUs queued across
	 * iw_qp_rx calls, so the CRC is checked whenever they are off. */
	tap_fpdu_rx_init(&F.tap.rx, s->crc, s->mk_tx, 0, 0, s->tx_partial ? IW_RX_SKIP_CRC : 0);
}

/* Blocks the context keeps for later use once an input made it need them:
 * the spare transmit queue (qp_txq.c) and the STag table's chunks and
 * free list (mem.c), which grow to the most MRs an input registered. */
FUZZ_HARNESS static size_t pool_cached(void)
{
	struct iw_txq *spare = atomic_load(&K.ctx->txq_spare);
	const struct iw_mem_table *t = &K.ctx->mem;
	size_t n = spare ? 1u + (spare->stage != NULL) : 0u;

	for (unsigned c = 0; c < IW_STAG_CHUNKS; c++)
		n += atomic_load(&t->chunk[c]) != NULL;
	return n + (t->free_idx != NULL);
}


/* The attributes every kept QP is made with between inputs, and those of
 * an input that asks for an SRQ, unsignaled WRs or RFC 7306. */
FUZZ_HARNESS static struct iw_qp_init_attr qp_attr(const struct settings *s)
{
	return (struct iw_qp_init_attr){
		.send_cq = K.scq,
		.recv_cq = K.rcq,
		.srq = s && s->srq ? K.srq : NULL,
		.cap = {.max_send_wr = 32, .max_recv_wr = 8, .max_send_sge = 3, .max_recv_sge = 3},
		.qp_type = IW_QPT_RC,
		.sq_sig_all = !(s && s->half_signaled),
		.create_flags = s && s->rfc7306 ? IW_QP_CREATE_RFC7306 : 0,
	};
}

static const struct iw_srq_attr srq_attr = {.max_wr = 8, .max_sge = 3, .srq_limit = 2};

/* The kept QP made anew in place with attr (made at all if the last input
 * destroyed it), numbered 1 as a new context's first QP. */
FUZZ_HARNESS static void qp_make(const struct settings *s)
{
	struct iw_qp_init_attr qa = qp_attr(s);

	atomic_store(&K.ctx->next_qpn, 0);
	if (K.qp)
		CHECK(iw_fuzz_qp_renew(K.qp, &qa) == 0);
	else
		K.qp = iw_create_qp(K.pd, &qa);
	CHECK(K.qp && iw_qp_num(K.qp) == 1);
}

/* Whatever is missing made as a new context makes it: the MRs in table
 * order, after iw_fuzz_mem_restart, so that region i gets STag i << 8
 * (the lowest free index, key 0) whichever of them are made again. With
 * FUZZ_QP_FRESH=1 the QP is made by setup, with the input's attributes. */
FUZZ_HARNESS static void keep_restore(void)
{
	for (int r = 0; r < NUM_REG; r++) {
		struct iw_pd *pd = defs[r].pd == 2 ? K.pd2 : K.pd;

		if (!defs[r].pd || K.mr[r])
			continue;
		if (defs[r].fastreg)
			K.mr[r] = iw_alloc_mr(pd, 1);
		else
			K.mr[r] = iw_reg_mr(pd, F.host[r], defs[r].size, defs[r].access);
		CHECK(K.mr[r] && K.mr[r]->lkey == (uint32_t)(r + 1) << 8);
	}
	if (!K.srq)
		K.srq = iw_create_srq(K.pd, &(struct iw_srq_init_attr){.attr = srq_attr});
	CHECK(K.srq);
	if (!K.qp && !K.fresh)
		qp_make(NULL);
}

/* At exit the kept objects go as each input's did before they were kept:
 * their release paths stay exercised (ASan, LSan, the coverage report). */
FUZZ_HARNESS static void keep_free(void)
{
	CHECK(iw_destroy_qp(K.qp) == 0 && iw_destroy_srq(K.srq) == 0);
	for (int r = 0; r < NUM_REG; r++)
		CHECK(iw_dereg_mr(K.mr[r]) == 0);
	CHECK(iw_destroy_cq(K.scq) == 0 && iw_destroy_cq(K.rcq) == 0);
	CHECK(iw_dealloc_pd(K.pd) == 0 && iw_dealloc_pd(K.pd2) == 0);
	iw_context_core_free(K.ctx);
	CHECK(fuzz_pool_live() == 0);
}

FUZZ_HARNESS static void keep_init(void)
{
	const char *fresh = getenv("FUZZ_QP_FRESH");

	if (K.ctx)
		return;
	atexit(keep_free);
	K.fresh = fresh && strcmp(fresh, "1") == 0;
	K.pool = fuzz_pool_ops() != NULL;
	K.ctx = iw_context_core_new_alloc(fuzz_pool_ops());
	CHECK(K.ctx);
	K.pd = iw_alloc_pd(K.ctx);
	K.pd2 = iw_alloc_pd(K.ctx);
	K.scq = iw_create_cq(K.ctx, CQE, NULL, NULL, 0);
	K.rcq = iw_create_cq(K.ctx, CQE, NULL, NULL, 0);
	CHECK(K.pd && K.pd2 && K.scq && K.rcq);
	keep_restore();
	K.pd_use = atomic_load(&K.pd->use);
	K.pd2_use = atomic_load(&K.pd2->use);
	K.scq_use = atomic_load(&K.scq->use);
	K.rcq_use = atomic_load(&K.rcq->use);
	K.pool_live = fuzz_pool_live() - pool_cached();
}

/* The pool's blocks out after an input: the kept objects' and the
 * caches', nothing else. LSan would not see a leaked block that came from
 * the pool's free list. */
FUZZ_HARNESS static void pool_check(void)
{
	if (!K.pool)
		return;
	CHECK(fuzz_pool_live() == K.pool_live + pool_cached());
	fuzz_pool_next_input();
}

FUZZ_HARNESS static void setup(void)
{
	const struct settings *s = &F.set;

	keep_init();
	/* The QP's remotely writable memory (fast-registered regions once
	 * their REG_MR is posted). */
	for (int r = 0; r < NUM_REG; r++)
		if (!defs[r].fastreg && defs[r].pd == 1 &&
		    (defs[r].access & (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC)))
			may_write(F.host[r], defs[r].size);
	F.srq = s->srq ? K.srq : NULL;
	if (F.srq && s->srq_newest)
		CHECK(iw_set_srq_order(F.srq, IW_SRQ_NEWEST_FIRST) == 0);
	if (!K.qp || s->srq || s->half_signaled || s->rfc7306)
		qp_make(s);
	F.qp = K.qp;
	F.qp_num = iw_qp_num(F.qp);
	modify(IW_QPS_INIT);
	F.next_id = 1;
	for (int d = 0; d < NUM_RECV; d++)
		post_recv_def(d);

	F.conn = (struct iw_qp_conn){
		.initiator = s->initiator,
		.p2p = s->p2p,
		.rtr = s->rtr,
		.crc = s->crc,
		.markers_tx = s->mk_tx,
		.markers_rx = s->mk_rx,
		.ird = s->ird,
		.ord = s->ord,
		.mulpdu = iw_mpa_mulpdu(s->emss, s->mk_tx),
		.peer_siw_term = s->siw,
	};
	start();
	post_sends(s->groups);
	if (s->tx_each)
		drain_tx(false);
}

/* Every WR completed exactly once (SRQ WRs: or still in the SRQ). */
FUZZ_HARNESS static void check_all_done(void)
{
	uint32_t in_srq = 0;

	for (uint64_t id = 1; id < F.next_id; id++) {
		switch (F.kind[id]) {
		case WK_SQ:
			CHECK(F.ncomp[id] == (F.signaled[id] ? 1u : F.ncomp[id]));
			CHECK(F.ncomp[id] <= 1);
			break;
		case WK_RQ:
			CHECK(F.ncomp[id] == 1);
			break;
		case WK_SRQ:
			CHECK(F.ncomp[id] <= 1);
			in_srq += F.ncomp[id] == 0;
			break;
		default:
			abort();
		}
	}
	if (F.srq)
		CHECK(F.srq->count == in_srq);
}

/* Write out everything queued and check the connection's output whole:
 * each error we detected sent exactly its TERMINATE. */
FUZZ_HARNESS static void settle(void)
{
	drain_tx(true);
	poll_cqs();
	take_async();
	if (!F.conn_lost && F.tap_complete) {
		CHECK(F.tap.nterm == F.local_err_events);
		if (F.tap.nterm)
			CHECK(F.tap.term == F.local_term);
	}
	CHECK(F.tap.nterm <= 1);
}

/* The connection closes: nothing more goes out, and everything posted
 * has completed. */
FUZZ_HARNESS static void lose_connection(void)
{
	struct iovec iov[4];

	iw_qp_conn_lost(F.qp, true);
	F.conn_lost = true;
	CHECK(iw_qp_tx_iov(F.qp, iov, 4) == 0);
	poll_cqs();
	take_async();
	check_all_done();
}

/* The same QP on a new connection (RESET, INIT, new receives and sends):
 * the rest of the input is the new stream. */
FUZZ_HARNESS static void reconnect(void)
{
	struct iw_qp_attr a = {.qp_state = IW_QPS_RESET};

	settle();
	lose_connection();
	CHECK(iw_modify_qp(F.qp, &a, IW_QP_STATE) == 0);
	modify(IW_QPS_INIT);
	memset(&F.tap, 0, sizeof(F.tap));
	F.events = 0;
	F.qp_err_events = F.local_err_events = F.last_wqe_events = 0;
	F.conn_lost = F.tap_complete = false;
	/* A receive of the new connection may be the first to fail. */
	F.rq_failed = false;
	for (int d = 0; d < NUM_RECV; d++)
		post_recv_def(d);
	start();
	/* Not the registrations: those MRs are valid now. */
	post_sends(F.set.groups & ~1);
}
/* What the next input must not find: the fast-registered MRs (REG_MR and
 * invalidations change them) go each time; with FUZZ_QP_FRESH=1 every
 * kept object goes, so keep_restore makes them all as a new context
 * would. The QP, in RESET, and the SRQ are made anew in place. */
FUZZ_HARNESS static void keep_release(void)
{
	if (K.fresh) {
		CHECK(iw_destroy_qp(K.qp) == 0 && iw_destroy_srq(K.srq) == 0);
		K.qp = NULL;
		K.srq = NULL;
	} else if (K.qp) {
		qp_make(NULL); /* leaves the SRQ */
	}
	CHECK(!K.srq || iw_fuzz_srq_renew(K.srq, &srq_attr) == 0);
	for (int r = 0; r < NUM_REG; r++) {
		if (K.mr[r] && (K.fresh || defs[r].fastreg)) {
			CHECK(iw_dereg_mr(K.mr[r]) == 0);
			K.mr[r] = NULL;
		}
	}
}

/* The kept objects as the next input must find them, as a new context
 * would give them: nothing of this input holds them, nothing of it is
 * left in them, QP numbers and STags (the seeds name them) start again.
 * The context's spare transmit queue stays, as it does for a context's
 * next QP in a program: freed per input it cost a 37 KB malloc (and with
 * markers a 256 KB stage, an mmap under ASan) and fresh pages per input,
 * a tenth of the target's time in the kernel (perf; strace: 9,000 mmap,
 * 5,800 munmap and 6,000 madvise in 30,000 runs). */
FUZZ_HARNESS static void keep_next(void)
{
	struct iw_wc wc[8];
	struct iw_async_event ev;

	keep_release();
	CHECK(iw_poll_cq(K.scq, 8, wc) == 0 && iw_poll_cq(K.rcq, 8, wc) == 0);
	while (iw_get_async_event(K.ctx, &ev) == 0)
		;
	CHECK(!K.scq->lost && !K.rcq->lost);
	/* No reference of the input's left on any STag. */
	CHECK(iw_fuzz_mem_restart(&K.ctx->mem) == 0);
	keep_restore();
	CHECK(atomic_load(&K.scq->use) == K.scq_use && atomic_load(&K.rcq->use) == K.rcq_use);
	CHECK(atomic_load(&K.pd->use) == K.pd_use && atomic_load(&K.pd2->use) == K.pd2_use);
	pool_check();
}

FUZZ_HARNESS static void teardown(void)
{
	settle();
	if (F.set.act & 128) {
		/* Destroyed with whatever is queued: the flush completes
		 * everything. keep_restore makes another. */
		CHECK(iw_destroy_qp(F.qp) == 0);
		K.qp = NULL;
		poll_cqs();
		check_all_done();
	} else {
		struct iw_qp_attr a = {.qp_state = IW_QPS_RESET};

		lose_connection();
		CHECK(iw_modify_qp(F.qp, &a, IW_QP_STATE) == 0);
		/* Nothing completes twice: the connection loss flushed it
		 * all. */
		poll_cqs();
	}
	keep_next();
	arena_check();
	if (K.digest) {
		uint32_t d[4] = {F.events, F.tap.nseg, F.tap.nterm, F.tap.term};

		fuzz_digest_mix(d, sizeof(d));
		fuzz_digest_mix(F.arena, ARENA_SIZE);
		fuzz_digest_end();
	}
}

FUZZ_HARNESS int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *arena;

	if (size < SETTINGS_LEN)
		return 0;
	arena_map();
	arena = F.arena;
	memset(&F, 0, offsetof(struct fz, stage));
	F.arena = arena;
	read_settings(&F.set, data);
	F.rng = 0x9E3779B9u ^ F.set.seed;
	arena_reset();
	K.digest = fuzz_digest_on("FUZZ_QP_DIGEST");
	if (K.digest)
		fuzz_digest_begin(data, size);
	setup();
	feed(data + SETTINGS_LEN, size - SETTINGS_LEN);
	teardown();
	return 0;
}
