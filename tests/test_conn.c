/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection (lib/conn/conn.c) with no socket and no sleep: two
 * iw_conn back to back in memory (conn_pair.h), each over a real QP, on a
 * fake clock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "conn_pair.h"
#include "suites.h"
#include "testutil.h"

/* ================================================================ tests */

/* MPA both roles and data both ways, in every delivery mode (whole, octet
 * by octet, random splits, direct placement). */
START_TEST(test_exchange)
{
	struct pair p;
	pair_new(&p, (enum mp_mode)_i);
	struct side *a = &p.s[0], *b = &p.s[1];
	post_recv(b, 1, 0, 8192);
	establish(&p);
	ck_assert_int_eq(a->c.res.rtr, IW_RTR_WRITE);
	ck_assert_uint_eq(a->c.peer_pd_len, 2);
	ck_assert_mem_eq(a->c.peer_pd, "yo", 2);
	ck_assert_uint_eq(b->c.peer_pd_len, 2);
	ck_assert_mem_eq(b->c.hs.peer.pd, "hi", 2);
	/* A Send and a large RDMA Write (direct placement territory). */
	fill(a->buf, 6000, 1);
	fill(a->buf + 8192, 40000, 2);
	post(a, 10, IW_WR_SEND, 0, 6000, 0, 0);
	post(a, 11, IW_WR_RDMA_WRITE, 8192, 40000, (uintptr_t)(b->buf + 16384), b->mr->rkey);
	settle(&p);
	expect_wc(a, 10, IW_WC_SUCCESS);
	expect_wc(a, 11, IW_WC_SUCCESS);
	expect_wc(b, 1, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf, a->buf, 6000);
	ck_assert_mem_eq(b->buf + 16384, a->buf + 8192, 40000);
	if (_i == MP_DIRECT)
		ck_assert_uint_gt(b->rs.in_place, 0);
	/* Graceful close from A: both hear DISCONNECTED, both FINs go out
	 * after everything else, no timer is left. */
	ck_assert_int_eq(iw_conn_disconnect(&a->c), 0);
	settle(&p);
	for (int i = 0; i < 2; i++) {
		ck_assert(p.s[i].ev & IW_CONN_EV_DISCONNECTED);
		ck_assert(p.s[i].closed);
		ck_assert(!p.s[i].abortive);
		ck_assert_int_eq(p.s[i].c.why.status, 0); /* a clean end */
		ck_assert_uint_eq(p.s[i].fin_at, p.s[i].log.len);
		ck_assert_uint_eq(next_of(&p.s[i], &p), UINT64_MAX);
	}
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(a->cq, 1, &wc), 0);
	ck_assert_int_eq(iw_poll_cq(b->cq, 1, &wc), 0);
	pair_free(&p);
}
END_TEST

/* An RDMA Write of 60000 octets from a: the longest ULPDU a framed. */
static unsigned mss_write(struct pair *p, uint64_t id)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	size_t from = a->log.len;
	fill(a->buf, 60000, (unsigned)id);
	post(a, id, IW_WR_RDMA_WRITE, 0, 60000, (uintptr_t)(b->buf + SINK_OFF), b->mr->rkey);
	settle(p);
	expect_wc(a, id, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf + SINK_OFF, a->buf, 60000);
	return decode(a, from, true).max_ulpdu;
}

/* The MSS the glue sees moves (on loopback it doubles once the window
 * grew; a path MTU change lowers it): the FPDUs framed after
 * iw_conn_mss fit the new one, down or up; before the data phase, and for
 * an MSS of 0 (unknown), nothing changes. */
START_TEST(test_mss_live)
{
	struct pair p;
	pair_new(&p, MP_DIRECT);
	struct side *a = &p.s[0];
	iw_conn_mss(&a->c, 8000);
	establish(&p);
	ck_assert_uint_eq(mss_write(&p, 1), iw_mpa_mulpdu(16384, false));
	iw_conn_mss(&a->c, 8000);
	ck_assert_uint_eq(mss_write(&p, 2), iw_mpa_mulpdu(8000, false));
	iw_conn_mss(&a->c, 0);
	ck_assert_uint_eq(mss_write(&p, 3), iw_mpa_mulpdu(8000, false));
	iw_conn_mss(&a->c, 40002);
	ck_assert_uint_eq(mss_write(&p, 4), iw_mpa_mulpdu(40002, false));
	pair_free(&p);
}
END_TEST

/* The octets after the Reply in the same read are the first FPDUs, and
 * they reach the QP in that very call. */
/* The Send of test_plan_*, wr_id 10 into receive 1, was fed to B by
 * hand: both complete, the octets arrived, the pair goes. */
static void send_done(struct pair *p, size_t len)
{
	struct side *a = &p->s[0], *b = &p->s[1];
	a->wire.len = 0;
	settle(p);
	expect_wc(a, 10, IW_WC_SUCCESS);
	expect_wc(b, 1, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf, a->buf, len);
	pair_free(p);
}

/* A short read that stops a few octets before the end of a large Send
 * segment: the tail still goes in place, and the bounce buffer is offered
 * only the trailer and the next header (which lets the next payload go in
 * place too). The tail used to be read through the bounce buffer at most
 * 81 octets per read: two dozen system calls per FPDU. */
START_TEST(test_plan_short_tail)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	post_recv(b, 1, 0, 40000);
	establish(&p);
	fill(a->buf, 40000, 3);
	post(a, 10, IW_WR_SEND, 0, 40000, 0, 0);
	write_out(&p, a);
	const uint8_t *w = a->wire.p;
	size_t ulpdu = (size_t)w[0] << 8 | w[1], hdr = 2 + IW_DDP_UNTAGGED_HDR_LEN;
	size_t pay = ulpdu - IW_DDP_UNTAGGED_HDR_LEN, tail = 100;
	ck_assert_uint_gt(pay, 4096); /* a large segment */
	size_t used = 0;
	b->pending |= iw_conn_recv(&b->c, w, hdr + pay - tail, &used);
	ck_assert_uint_eq(used, hdr + pay - tail);
	uint8_t *dst = NULL;
	size_t cap = BUF;
	ck_assert_uint_eq(iw_conn_rx_plan(&b->c, &dst, &cap), tail);
	ck_assert_ptr_eq(dst, b->buf + pay - tail);
	ck_assert_uint_le(cap, 7 + 2 + IW_FPDU_HDR_MAX);
	/* As readv would: the tail in place, then the bounce buffer's part. */
	memcpy(dst, w + hdr + pay - tail, tail);
	size_t rest = a->wire.len - (hdr + pay);
	b->pending |= iw_conn_recv_placed(&b->c, tail, w + hdr + pay, rest, &used);
	send_done(&p, 40000);
}
END_TEST

/* Octets of the FPDU at w (its length field, pad and CRC field, which is
 * there, zero, without CRC too). */
static size_t fpdu_len(const uint8_t *w)
{
	uint32_t ulpdu = (uint32_t)w[0] << 8 | w[1];
	return 2 + ulpdu + iw_mpa_pad(ulpdu) + IW_MPA_CRC_LEN;
}

/* The first segment of the Send at w, received as the glue would: its
 * header, then its payload in place. Returns the octets placed. */
static size_t first_in_place(struct side *b, const uint8_t *w)
{
	size_t hdr = 2 + IW_DDP_UNTAGGED_HDR_LEN, used = 0;
	b->pending |= iw_conn_recv(&b->c, w, hdr, &used);
	uint8_t *dst = NULL;
	size_t cap = BUF;
	size_t d = iw_conn_rx_plan(&b->c, &dst, &cap);
	ck_assert_uint_gt(d, 4096);
	memcpy(dst, w + hdr, d);
	b->pending |= iw_conn_recv_placed(&b->c, d, NULL, 0, &used);
	return d;
}

/* Where the FPDUs of the len-octet Send at w end. */
static size_t send_end(const uint8_t *w, size_t len)
{
	size_t off = 0, got = 0;
	while (got < len) {
		got += (((size_t)w[off] << 8 | w[off + 1]) - IW_DDP_UNTAGGED_HDR_LEN);
		off += fpdu_len(w + off);
	}
	return off;
}

/* A small segment read shortly after a large one (the short last segment
 * of a message cut at MULPDU, or the next message's first): the bounce
 * buffer is offered only the rest of it and the next header, so that a
 * large payload behind it lands in place. It used to be offered whole:
 * a read there took up to a bounce buffer of the next payload, to be
 * copied out (half of each 128 KiB write in iwarp-nvmet: 66,875 octets
 * per I/O). */
START_TEST(test_plan_small_after_large)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	post_recv(b, 1, 0, 40000);
	post_recv(b, 2, 40000, 100);
	establish(&p);
	fill(a->buf, 40100, 5);
	post(a, 10, IW_WR_SEND, 0, 40000, 0, 0);
	post(a, 11, IW_WR_SEND, 40000, 100, 0, 0);
	write_out(&p, a);
	const uint8_t *w = a->wire.p;
	size_t hdr = 2 + IW_DDP_UNTAGGED_HDR_LEN, used = 0;
	size_t d = first_in_place(b, w);
	/* The rest of the first message and the second's header through
	 * the bounce buffer. */
	size_t off = send_end(w, 40000);
	b->pending |= iw_conn_recv(&b->c, w + hdr + d, off - d, &used);
	uint8_t *dst = NULL;
	size_t cap = BUF;
	ck_assert_uint_eq(iw_conn_rx_plan(&b->c, &dst, &cap), 0);
	ck_assert_uint_le(cap, 100 + 7 + 2 + IW_FPDU_HDR_MAX);
	b->pending |= iw_conn_recv(&b->c, w + off + hdr, a->wire.len - off - hdr, &used);
	a->wire.len = 0;
	settle(&p);
	expect_wc(a, 10, IW_WC_SUCCESS);
	expect_wc(a, 11, IW_WC_SUCCESS);
	expect_wc(b, 1, IW_WC_SUCCESS);
	expect_wc(b, 2, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf, a->buf, 40100);
	pair_free(&p);
}
END_TEST

/* Small messages after a large one (commands between large transfers):
 * the first read after it still stops at the next header, the later ones
 * take a run of small segments but no more than direct_min octets, so
 * that a large payload behind them is not read into the bounce buffer
 * whole. They used to take the whole buffer after four reads: whole FPDUs
 * of the next 128 KiB Read Response were copied (16-25 KiB per I/O in
 * iwarp-nvmet at QD 8). */
START_TEST(test_plan_small_run_after_large)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	enum { SMALL = 8, BIG = 40000 };
	post_recv(b, 1, 0, BIG);
	for (int i = 0; i < SMALL; i++)
		post_recv(b, 2 + (uint64_t)i, BIG + 100 * (size_t)i, 100);
	post_recv(b, 2 + SMALL, BIG + 100 * SMALL, BIG);
	establish(&p);
	fill(a->buf, 2 * BIG + 100 * SMALL, 9);
	post(a, 10, IW_WR_SEND, 0, BIG, 0, 0);
	for (int i = 0; i < SMALL; i++)
		post(a, 11 + (uint64_t)i, IW_WR_SEND, BIG + 100 * (size_t)i, 100, 0, 0);
	post(a, 11 + SMALL, IW_WR_SEND, BIG + 100 * SMALL, BIG, 0, 0);
	write_out(&p, a);
	const uint8_t *w = a->wire.p;
	size_t hdr = 2 + IW_DDP_UNTAGGED_HDR_LEN, used = 0;
	const size_t look = 7 + 2 + IW_FPDU_HDR_MAX;
	/* The large message: its first payload in place, the rest plain. */
	size_t d = first_in_place(b, w), off = send_end(w, BIG);
	b->pending |= iw_conn_recv(&b->c, w + hdr + d, off - d - hdr, &used);
	uint8_t *dst = NULL;
	size_t cap = BUF;
	/* The small messages, read as the glue reads: plan, then take at
	 * most what the plan offered. */
	size_t end = off, small = fpdu_len(w + off);
	for (int i = 0; i < SMALL; i++)
		end += fpdu_len(w + end);
	size_t caps[2 * SMALL];
	int reads = 0;
	while (off < end) {
		ck_assert_int_lt(reads, 2 * SMALL);
		cap = BUF;
		ck_assert_uint_eq(iw_conn_rx_plan(&b->c, &dst, &cap), 0);
		caps[reads++] = cap;
		size_t n = end - off < cap ? end - off : cap;
		b->pending |= iw_conn_recv(&b->c, w + off, n, &used);
		ck_assert_uint_eq(used, n);
		off += n;
	}
	/* To the next header first, then one for the rest of that segment,
	 * then a run of several. */
	ck_assert_uint_le(caps[0], look);
	ck_assert_int_eq(reads, 3);
	ck_assert_uint_gt(caps[reads - 1], 2 * small);
	for (int i = 0; i < reads; i++)
		ck_assert_uint_le(caps[i], IW_DIRECT_MIN_DEFAULT);
	/* The large message behind them: the read after the run stops at
	 * direct_min octets, so most of its payload still lands in place. */
	cap = BUF;
	ck_assert_uint_eq(iw_conn_rx_plan(&b->c, &dst, &cap), 0);
	ck_assert_uint_le(cap, IW_DIRECT_MIN_DEFAULT);
	b->pending |= iw_conn_recv(&b->c, w + off, a->wire.len - off, &used);
	a->wire.len = 0;
	settle(&p);
	for (int i = 0; i <= SMALL + 1; i++)
		expect_wc(a, 10 + (uint64_t)i, IW_WC_SUCCESS);
	for (int i = 0; i <= SMALL + 1; i++)
		expect_wc(b, 1 + (uint64_t)i, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf, a->buf, 2 * BIG + 100 * SMALL);
	pair_free(&p);
}
END_TEST

static const struct {
	bool read;
	uint32_t size;
} spec_cases[] = {
	{true, 65536}, {true, 131072}, {true, 1u << 20},
	{false, 65536}, {false, 131072}, {false, 1u << 20},
};

/* Read Responses and Sends of 64 KiB to 1 MiB (16 KiB segments), CRC on
 * and off, reads cut at random: what arrives is right, the guards hold,
 * and reads took several FPDUs each. */
START_TEST(test_spec_xfer)
{
	bool crc = _i & 1;
	bool read = spec_cases[_i / 2].read;
	uint32_t size = spec_cases[_i / 2].size;
	struct pair p;
	spec_pair(&p, crc, false);
	struct side *b = &p.s[1];
	for (unsigned round = 0; round < 3; round++) {
		b->rs = (struct conn_read_stats){0};
		spec_move(&p, read, size, round);
		ck_assert_uint_gt(b->rs.spec_reads, 0);
	}
	/* Whole reads: a 1 MiB message in at most a tenth of its FPDUs. */
	p.mp.read_lim = SIZE_MAX;
	b->rs = (struct conn_read_stats){0};
	spec_move(&p, read, size, 7);
	uint64_t fpdus = size / 16000 + 1;
	ck_assert_uint_le(b->rs.reads, fpdus / 4 + 3);
	pair_free(&p);
}
END_TEST

/* One connection, a 64 KiB Read each time, every read cut after the
 * same count of octets, that count swept in steps of 101 from 1 to past
 * the largest read-ahead plan (7 segments and their gaps): the cut lands
 * in every piece, in gaps and next to their ends. */
START_TEST(test_spec_cuts)
{
	struct pair p;
	spec_pair(&p, _i == 0, false);
	struct side *b = &p.s[1];
	uint64_t spec = 0;
	for (size_t lim = 1; lim < 7 * 16500; lim += 101) {
		p.mp.read_lim = lim;
		spec_move(&p, true, 65536, (unsigned)lim);
		spec += b->rs.spec_reads;
	}
	ck_assert_uint_gt(spec, 400);
	pair_free(&p);
}
END_TEST

/* A CRC error in an FPDU read ahead: the TERMINATE is LLP's CRC error,
 * as when that FPDU is read on its own, and the Read fails. */
START_TEST(test_spec_crc_error)
{
	struct pair p;
	spec_pair(&p, true, false);
	struct side *a = &p.s[0], *b = &p.s[1];
	size_t b_mpa = b->c.hs.tx_len;
	post(b, 20, IW_WR_RDMA_READ, SINK_OFF, 131072, (uintptr_t)a->buf, a->mr->rkey);
	/* The request to a, a's response kept back. */
	act(&p, b);
	deliver(&p, b, a);
	act(&p, a);
	ck_assert_uint_gt(a->wire.len, 131072);
	a->wire.p[a->wire.len - 40000] ^= 0x10; /* inside the 6th or 7th FPDU */
	settle(&p);
	struct decoded d = decode(b, b_mpa, true);
	ck_assert_int_eq(d.terms, 1);
	ck_assert_uint_eq(d.term, IW_TERM_LLP_CRC);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	struct iw_wc wc;
	ck_assert_int_eq(iw_poll_cq(b->cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 20);
	ck_assert_int_ne(wc.status, IW_WC_SUCCESS);
	pair_free(&p);
}
END_TEST

/* A hostile responder sends more than the Read's sink holds (the sink is
 * shrunk after the request went out): the guesses stop at the sink's end,
 * so nothing lands past it although the whole response is read ahead;
 * the segment that crosses it is refused (DDP base and bounds). */
START_TEST(test_spec_sink_bound)
{
	struct pair p;
	spec_pair(&p, true, false);
	struct side *a = &p.s[0], *b = &p.s[1];
	size_t b_mpa = b->c.hs.tx_len;
	uint32_t sink = 100000;
	memset(b->buf + SINK_AREA, GUARD, 4096 + 131072 + 4096);
	fill(a->buf, 131072, 9);
	post(b, 20, IW_WR_RDMA_READ, SINK_OFF, 131072, (uintptr_t)a->buf, a->mr->rkey);
	act(&p, b); /* the request is on the wire, asking for 128 KiB */
	ck_assert_uint_gt(b->wire.len, 0);
	iw_qp_lock(b->qp);
	b->qp->sq[iw_qp_slot(b->qp->sq_tail - 1, b->qp->sq_size)].sge[0].length = sink;
	iw_qp_unlock(b->qp);
	settle(&p);
	struct decoded d = decode(b, b_mpa, true);
	ck_assert_int_eq(d.terms, 1);
	ck_assert_uint_eq(d.term, IW_TERM_DDP_T_BASE_BOUNDS);
	ck_assert_uint_gt(b->rs.spec_reads, 0);
	ck_assert_ptr_eq(b->rs.guess_end, b->buf + SINK_OFF + sink); /* read ahead to the end */
	guard_intact(b->buf + SINK_AREA, 4096);
	guard_intact(b->buf + SINK_OFF + sink, 131072 - sink + 4096);
	pair_free(&p);
}
END_TEST

/* Markers cut payloads every 512 octets: no read-ahead, the data still
 * arrives. */
START_TEST(test_spec_markers)
{
	struct pair p;
	spec_pair(&p, true, true);
	struct side *b = &p.s[1];
	ck_assert(b->c.res.markers_rx);
	spec_move(&p, true, 131072, 3);
	spec_move(&p, false, 131072, 4);
	ck_assert_uint_eq(b->rs.spec_reads, 0);
	pair_free(&p);
}
END_TEST

/* With markers, a large payload is read into the bounce buffer in large
 * reads (the decoder copies the spans between markers out), not in place
 * a marker interval per read: 2,400 system calls per MiB before. */
START_TEST(test_plan_markers)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	for (int i = 0; i < 2; i++)
		p.s[i].c.opts.markers = p.s[i].c.opts.accept_markers = true;
	post_recv(b, 1, 0, 40000);
	establish(&p);
	ck_assert(b->c.res.markers_rx);
	fill(a->buf, 40000, 4);
	post(a, 10, IW_WR_SEND, 0, 40000, 0, 0);
	write_out(&p, a);
	size_t used = 0, first = 3000; /* well inside the first payload */
	b->pending |= iw_conn_recv(&b->c, a->wire.p, first, &used);
	ck_assert_uint_eq(used, first);
	uint8_t *dst = NULL;
	size_t cap = BUF;
	ck_assert_uint_eq(iw_conn_rx_plan(&b->c, &dst, &cap), 0);
	ck_assert_uint_eq(cap, BUF);
	b->pending |= iw_conn_recv(&b->c, a->wire.p + first, a->wire.len - first, &used);
	send_done(&p, 40000);
}
END_TEST

/* A write loop as the glue's (iw_conn_tx_sent_iov after each write),
 * with TCP taking odd prefixes: every octet goes out once and in order,
 * and the Sends complete when written. */
START_TEST(test_tx_sent_iov)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	for (int i = 0; i < 3; i++)
		post_recv(b, 1 + i, (size_t)i * 20000, 20000);
	establish(&p);
	fill(a->buf, 60000, 6);
	for (int i = 0; i < 3; i++)
		post(a, 10 + i, IW_WR_SEND, (size_t)i * 20000, 20000, 0, 0);
	struct iovec iov[64];
	unsigned ev = 0;
	int n = iw_conn_tx_iov(&a->c, iov, 64);
	for (size_t step = 1; n > 0; step = step * 3 % 7919 + 1) {
		size_t k = 0;
		for (int i = 0; i < n && k < step; i++) {
			size_t take = iov[i].iov_len < step - k ? iov[i].iov_len : step - k;
			bytes_add(&a->wire, iov[i].iov_base, take);
			bytes_add(&a->log, iov[i].iov_base, take);
			k += take;
		}
		n = iw_conn_tx_sent_iov(&a->c, k, iov, 64, &ev);
	}
	ck_assert_int_eq(n, 0);
	settle(&p);
	for (int i = 0; i < 3; i++)
		expect_wc(a, 10 + (uint64_t)i, IW_WC_SUCCESS);
	for (int i = 0; i < 3; i++)
		expect_wc(b, 1 + (uint64_t)i, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf, a->buf, 60000);
	pair_free(&p);
}
END_TEST

/* Small messages leave as one copied piece (three Sends of 64 octets:
 * one iovec for all), and so does a 4 KiB one that finds the queue empty
 * (a ping-pong's: one piece for send(2)); one queued behind another goes
 * by reference (header, payload, trailer), so that a stream does not copy
 * its payloads into the header area; all arrive intact. */
START_TEST(test_tx_small_copied)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	for (int i = 0; i < 6; i++)
		post_recv(b, 1 + i, (size_t)i * 8192, 8192);
	establish(&p);
	fill(a->buf, 6 * 8192, 7);
	for (int i = 0; i < 3; i++)
		post(a, 10 + i, IW_WR_SEND, (size_t)i * 8192, 64, 0, 0);
	struct iovec iov[16];
	ck_assert_int_eq(iw_conn_tx_iov(&a->c, iov, 16), 1);
	settle(&p);
	post(a, 13, IW_WR_SEND, 3 * 8192, 4096, 0, 0);
	ck_assert_int_eq(iw_conn_tx_iov(&a->c, iov, 16), 1);
	ck_assert(iov[0].iov_base < (void *)a->buf || iov[0].iov_base >= (void *)(a->buf + 6 * 8192));
	ck_assert_uint_ge(iov[0].iov_len, 4096);
	settle(&p);
	post(a, 14, IW_WR_SEND, 4 * 8192, 4096, 0, 0);
	post(a, 15, IW_WR_SEND, 5 * 8192, 4096, 0, 0);
	ck_assert_int_eq(iw_conn_tx_iov(&a->c, iov, 16), 3);
	ck_assert_ptr_eq(iov[1].iov_base, a->buf + 5 * 8192);
	settle(&p);
	for (int i = 0; i < 6; i++) {
		expect_wc(a, 10 + (uint64_t)i, IW_WC_SUCCESS);
		expect_wc(b, 1 + (uint64_t)i, IW_WC_SUCCESS);
		ck_assert_mem_eq(b->buf + i * 8192, a->buf + i * 8192, i < 3 ? 64 : 4096);
	}
	pair_free(&p);
}
END_TEST

static unsigned rx_direct_calls;

static size_t counting_rx_direct(struct iw_qp *qp, uint8_t **dst, uint32_t *seg_len)
{
	rx_direct_calls++;
	return iw_qp_link_ops.rx_direct(qp, dst, seg_len);
}

/* Once data flows, planning a read asks the engine nothing: the last
 * receive batch said where the next octets go (a busy poller plans every
 * read, most of them finding nothing). Placement in place still happens
 * and every octet lands. */
START_TEST(test_plan_from_batch)
{
	struct pair p;
	pair_new(&p, MP_DIRECT);
	struct side *a = &p.s[0], *b = &p.s[1];
	struct iw_qp_link_ops ops = iw_qp_link_ops;
	ops.rx_direct = counting_rx_direct;
	b->c.ops = &ops;
	post_recv(b, 1, 0, 40000);
	establish(&p);
	fill(a->buf, 60000, 8);
	post(a, 10, IW_WR_SEND, 0, 40000, 0, 0);
	post(a, 11, IW_WR_RDMA_WRITE, 40000, 20000, (uintptr_t)(b->buf + 40960), b->mr->rkey);
	rx_direct_calls = 0;
	settle(&p);
	ck_assert_uint_eq(rx_direct_calls, 0);
	ck_assert_uint_gt(b->rs.in_place, 0);
	expect_wc(a, 10, IW_WC_SUCCESS);
	expect_wc(a, 11, IW_WC_SUCCESS);
	expect_wc(b, 1, IW_WC_SUCCESS);
	ck_assert_mem_eq(b->buf, a->buf, 40000);
	ck_assert_mem_eq(b->buf + 40960, a->buf + 40000, 20000);
	pair_free(&p);
}
END_TEST

/* The receive hold's limits (IW_CONN_OPTS_RECV_HOLD) go to the QP when
 * the connection starts it; unset, the QP keeps its defaults. */
START_TEST(test_hold_limits_to_qp)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_RECV_HOLD, .recv_hold_msgs = 7,
				 .recv_hold_bytes = 4096};
	ck_assert_int_eq(iw_conn_tune_set(&b->c.tune, &o), 0);
	establish(&p);
	ck_assert_uint_eq(b->qp->hold.max_num, 7);
	ck_assert_uint_eq(b->qp->hold.max_bytes, 4096);
	ck_assert_uint_eq(a->qp->hold.max_bytes, IW_RECV_HOLD_BYTES_DEFAULT);
	pair_free(&p);
}
END_TEST

START_TEST(test_after_reply)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	/* No P2P: the responder may send as soon as its Reply is out. */
	a->c.opts.p2p = b->c.opts.p2p = false;
	post_recv(a, 5, 0, 100);
	start(&p);
	a->hold = true; /* the Reply and the Send wait in one TCP queue */
	fill(b->buf, 100, 9);
	accept_b(&p);
	post(b, 6, IW_WR_SEND, 0, 100, 0, 0);
	settle(&p);
	ck_assert_int_eq(a->c.state, IW_CONN_MPA_REQ);
	size_t reply = b->c.hs.tx_len;
	ck_assert_uint_gt(b->wire.len, reply);
	size_t used = 0;
	unsigned ev = iw_conn_recv(&a->c, b->wire.p, b->wire.len, &used);
	ck_assert_uint_eq(used, b->wire.len);
	ck_assert(ev & IW_CONN_EV_ESTABLISHED);
	/* The Send completed inside that call. */
	expect_wc(a, 5, IW_WC_SUCCESS);
	ck_assert_mem_eq(a->buf, b->buf, 100);
	b->wire.len = 0;
	a->hold = false;
	a->pending |= ev;
	settle(&p);
	expect_wc(b, 6, IW_WC_SUCCESS);
	pair_free(&p);
}
END_TEST

START_TEST(test_request_timeout)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *b = &p.s[1];
	b->pending |= iw_conn_tcp_up(&b->c, 1460);
	settle(&p);
	ck_assert_int_eq(b->c.state, IW_CONN_MPA_WAIT);
	ck_assert_uint_eq(next_of(b, &p), 1000 + 10000);
	/* Half a Request, then nothing. */
	size_t used;
	b->pending |= iw_conn_recv(&b->c, (const uint8_t *)"MPA ID Req", 10, &used);
	settle(&p);
	ck_assert_uint_eq(tick(&p), 11000);
	ck_assert(b->ev & IW_CONN_EV_DROPPED);
	ck_assert(b->closed && b->abortive);
	ck_assert_uint_eq(b->log.len, 0); /* no Reply, no TERMINATE */
	pair_free(&p);
}
END_TEST

START_TEST(test_reply_timeout)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	start(&p);
	ck_assert(b->ev & IW_CONN_EV_REQUEST);
	/* The responder never decides: it has no timer of its own. */
	ck_assert_uint_eq(next_of(b, &p), UINT64_MAX);
	ck_assert_uint_eq(next_of(a, &p), 1000 + 10000);
	ck_assert_uint_eq(tick(&p), 11000);
	ck_assert(a->ev & IW_CONN_EV_CONNECT_ERROR);
	ck_assert_int_eq(a->c.why.status, ETIMEDOUT);
	ck_assert(a->closed && a->abortive);
	/* B reads nothing while the application decides. */
	ck_assert_int_eq(b->c.state, IW_CONN_CONNREQ);
	pair_free(&p);
}
END_TEST

START_TEST(test_connect_timeout)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0];
	ck_assert_int_eq(iw_conn_connect(&a->c, a->qp, 1, 1, NULL, 0, 2500), 0);
	ck_assert_uint_eq(next_of(a, &p), 3500);
	ck_assert_uint_eq(tick(&p), 3500);
	ck_assert(a->ev & IW_CONN_EV_UNREACHABLE);
	ck_assert_int_eq(a->c.why.status, ETIMEDOUT);
	ck_assert_uint_eq(a->log.len, 0);
	pair_free(&p);
}
END_TEST

/* Our FIN is out and the peer neither reads nor closes: after linger the
 * connection is reset and DISCONNECTED raised. */
START_TEST(test_linger)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	a->c.tune.linger_ms = 1234;
	establish(&p);
	b->hold = true;
	uint64_t t0 = p.now;
	ck_assert_int_eq(iw_conn_disconnect(&a->c), 0);
	settle(&p);
	ck_assert_int_eq(a->c.state, IW_CONN_FIN_SENT);
	ck_assert_uint_eq(a->fin_at, a->log.len);
	ck_assert(!(a->ev & IW_CONN_EV_DISCONNECTED));
	ck_assert_uint_eq(next_of(a, &p), t0 + 1234);
	ck_assert_uint_eq(tick(&p), t0 + 1234);
	ck_assert(a->ev & IW_CONN_EV_DISCONNECTED);
	ck_assert(a->closed && a->abortive);
	ck_assert_int_eq(a->c.why.status, ETIMEDOUT); /* we gave up on the peer */
	b->hold = false;
	settle(&p);
	ck_assert(b->ev & IW_CONN_EV_DISCONNECTED);
	ck_assert_int_eq(b->c.why.status, ECONNRESET); /* issue 16 bug 5: abortive */
	pair_free(&p);
}
END_TEST

/* siw wake-ups: while the responder has sent nothing since its Reply and
 * we have sent FPDUs, zero-length Writes with STag 1 at wake_ms, then 2x,
 * 4x ... wake_count times; none once the peer has spoken. */
START_TEST(test_wakeups)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	a->c.opts.wake_ms = 100;
	a->c.tune.wake_count = _i ? 3 : 6;
	start(&p);
	a->hold = true; /* the Reply, then silence (siw before its rx hook) */
	accept_b(&p);
	size_t used;
	a->pending |= iw_conn_recv(&a->c, b->wire.p, b->wire.len, &used);
	b->wire.len = 0;
	a->hold = false;
	b->hold = true;
	settle(&p);
	uint64_t t0 = p.now, expect = t0;
	post(a, 1, IW_WR_RDMA_WRITE, 0, 64, (uintptr_t)b->buf, b->mr->rkey);
	settle(&p);
	unsigned n = a->c.tune.wake_count;
	for (unsigned k = 0; k < n; k++) {
		expect += 100u << k;
		ck_assert_uint_eq(tick(&p), expect);
	}
	ck_assert_uint_eq(next_of(a, &p), UINT64_MAX);
	struct decoded d = decode(a, a->c.hs.tx_len, a->c.res.crc);
	/* The WRITE RTR looks the same: one more. */
	ck_assert_int_eq(a->c.res.rtr, IW_RTR_WRITE);
	ck_assert_int_eq(d.wakes, (int)n + 1);
	pair_free(&p);
}
END_TEST

START_TEST(test_no_wakeup_after_peer_spoke)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	a->c.opts.wake_ms = 100;
	post_recv(a, 3, 0, 16);
	establish(&p); /* with the WRITE RTR, B has sent nothing since its Reply */
	post(b, 4, IW_WR_SEND, 0, 16, 0, 0);
	post(a, 1, IW_WR_RDMA_WRITE, 0, 64, (uintptr_t)b->buf, b->mr->rkey);
	settle(&p);
	while (tick(&p) != UINT64_MAX)
		;
	struct decoded d = decode(a, a->c.hs.tx_len, a->c.res.crc);
	ck_assert_int_eq(d.wakes, 1); /* the WRITE RTR only */
	pair_free(&p);
}
END_TEST

/* A protocol error: the TERMINATE goes out, then FIN, nothing after. */
START_TEST(test_terminate_then_fin)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	establish(&p);
	size_t b_mpa = b->c.hs.tx_len;
	post(a, 1, IW_WR_RDMA_WRITE, 0, 64, (uintptr_t)b->buf, b->mr->rkey ^ 0x55000000u);
	settle(&p);
	struct decoded d = decode(b, b_mpa, b->c.res.crc);
	ck_assert_int_eq(d.terms, 1);
	ck_assert_uint_ne(d.term, 0);
	ck_assert_uint_eq(d.last_op, IW_OP_TERMINATE);
	ck_assert_uint_eq(b->fin_at, b->log.len); /* FIN after the TERMINATE */
	ck_assert(!b->abortive);
	ck_assert(b->ev & IW_CONN_EV_DISCONNECTED);
	ck_assert(a->ev & IW_CONN_EV_DISCONNECTED);
	pair_free(&p);
}
END_TEST

/* A Reply the initiator refuses (an RTR it did not offer): a TERMINATE in
 * FPDU form (LLP 0x07) is flushed, then the connection is reset. */
START_TEST(test_bad_reply_terminate)
{
	struct pair p;
	pair_new(&p, (enum mp_mode)_i);
	struct side *a = &p.s[0], *b = &p.s[1];
	a->c.opts.rtr_offer = IW_RTR_WRITE;
	b->c.opts.rtr_accept = IW_RTR_READ;
	b->c.opts.rtr_force = true;
	start(&p);
	accept_b(&p);
	ck_assert(a->ev & IW_CONN_EV_CONNECT_ERROR);
	ck_assert_int_eq(a->c.why.status, EPROTO);
	ck_assert_uint_eq(a->c.why.term, IW_TERM_LLP_NO_RTR);
	ck_assert(a->abortive);
	struct decoded d = decode(a, a->c.hs.tx_len, true);
	ck_assert_int_eq(d.terms, 1);
	ck_assert_uint_eq(d.term, IW_TERM_LLP_NO_RTR);
	ck_assert_int_eq(d.nseg, 1);
	pair_free(&p);
}
END_TEST

/* The application's Reject: written, FIN, closed; the initiator hears
 * REJECTED with the private data. */
START_TEST(test_reject)
{
	struct pair p;
	pair_new(&p, MP_BYTES);
	struct side *a = &p.s[0], *b = &p.s[1];
	start(&p);
	unsigned ev = 0;
	ck_assert_int_eq(iw_conn_reject(&b->c, "no", 2, &ev), 0);
	b->pending |= ev;
	settle(&p);
	ck_assert(a->ev & IW_CONN_EV_REJECTED);
	ck_assert_int_eq(a->c.why.status, ECONNREFUSED);
	ck_assert_mem_eq(a->c.hs.peer.pd, "no", 2);
	ck_assert(b->closed && !b->abortive);
	ck_assert_uint_eq(b->fin_at, b->log.len);
	pair_free(&p);
}
END_TEST

/* Octets after a Request are a protocol violation: dropped, no Reply. */
START_TEST(test_request_trailing)
{
	struct pair p;
	pair_new(&p, MP_WHOLE);
	struct side *a = &p.s[0], *b = &p.s[1];
	ck_assert_int_eq(iw_conn_connect(&a->c, a->qp, 1, 1, NULL, 0, 0), 0);
	a->pending |= iw_conn_tcp_up(&a->c, 1460);
	b->pending |= iw_conn_tcp_up(&b->c, 1460);
	b->hold = true;
	settle(&p);
	bytes_add(&a->wire, (const uint8_t *)"\0\0\0\0", 4);
	size_t used;
	b->pending |= iw_conn_recv(&b->c, a->wire.p, a->wire.len, &used);
	a->wire.len = 0;
	b->hold = false;
	settle(&p);
	ck_assert(b->ev & IW_CONN_EV_DROPPED);
	ck_assert(!(b->ev & IW_CONN_EV_REQUEST));
	ck_assert(a->ev & IW_CONN_EV_CONNECT_ERROR);
	pair_free(&p);
}
END_TEST

/* The tuning is the application's (iw_cm_set_conn_opts), defaults named. */
START_TEST(test_conn_opts_api)
{
	struct iw_context_attr ca = {.comp_mask = IW_CONTEXT_ATTR_RX_BOUNCE, .rx_bounce_len = 100};
	ck_assert_ptr_null(iw_context_new(&ca));
	ck_assert_int_eq(errno, EINVAL);
	ca.rx_bounce_len = 1u << 20;
	struct iw_context *ctx = iw_context_new(&ca);
	ck_assert_ptr_nonnull(ctx);
	struct iw_cm_channel *ch = iw_cm_create_channel(ctx);
	ck_assert_ptr_nonnull(ch);
	struct iw_cm_id *id;
	ck_assert_int_eq(iw_cm_create_id(ch, &id, NULL), 0);
	struct iw_conn_opts o;
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &o), 0);
	ck_assert_uint_eq(o.linger_ms, IW_LINGER_MS_DEFAULT);
	ck_assert_uint_eq(o.wake_count, IW_WAKE_COUNT_DEFAULT);
	ck_assert_uint_eq(o.direct_min, IW_DIRECT_MIN_DEFAULT);
	ck_assert_uint_eq(o.recv_hold_msgs, 0); /* the QP's defaults */
	ck_assert_uint_eq(o.recv_hold_bytes, 0);
	struct iw_conn_opts hold = {.comp_mask = IW_CONN_OPTS_RECV_HOLD, .recv_hold_msgs = 3,
				    .recv_hold_bytes = 1u << 20};
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &hold), 0);
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &o), 0);
	ck_assert_uint_eq(o.recv_hold_msgs, 3);
	ck_assert_uint_eq(o.recv_hold_bytes, 1u << 20);
	struct iw_conn_opts set = {.comp_mask = IW_CONN_OPTS_LINGER, .linger_ms = 5, .wake_count = 99};
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &set), 0);
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &o), 0);
	ck_assert_uint_eq(o.linger_ms, 5);
	ck_assert_uint_eq(o.wake_count, IW_WAKE_COUNT_DEFAULT); /* bit clear: kept */
	set.comp_mask = IW_CONN_OPTS_DIRECT_MIN;
	set.direct_min = 0;
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &set), EINVAL);
	set.comp_mask = 1u << 30;
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &set), EINVAL);
	ck_assert_int_eq(iw_cm_set_conn_opts(NULL, &set), EINVAL);
	struct iw_mpa_opts mo;
	iw_mpa_opts_default(&mo);
	ck_assert_uint_eq(mo.timeout_ms, IW_MPA_TIMEOUT_MS_DEFAULT);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
	ck_assert_int_eq(iw_context_free(ctx), 0);
}
END_TEST

/* An out-of-range field refuses the whole call and changes nothing. */
static void sockopt_refused(struct iw_cm_id *id, struct iw_conn_opts bad)
{
	struct iw_conn_opts before, after;
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &before), 0);
	bad.comp_mask |= IW_CONN_OPTS_LINGER;
	bad.linger_ms = before.linger_ms + 1;
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &bad), EINVAL);
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &after), 0);
	/* Field by field: the struct has padding after keepalive. */
	ck_assert_uint_eq(after.linger_ms, before.linger_ms);
	ck_assert_int_eq(after.keepalive, before.keepalive);
	ck_assert_uint_eq(after.keepalive_idle_s, before.keepalive_idle_s);
	ck_assert_uint_eq(after.keepalive_intvl_s, before.keepalive_intvl_s);
	ck_assert_uint_eq(after.keepalive_cnt, before.keepalive_cnt);
	ck_assert_uint_eq(after.user_timeout_ms, before.user_timeout_ms);
	ck_assert_uint_eq(after.sndbuf, before.sndbuf);
	ck_assert_uint_eq(after.rcvbuf, before.rcvbuf);
}

/* Keepalive, TCP_USER_TIMEOUT and buffer sizes: off by default, checked,
 * read back; a context's conn_opts start every id (tests/liveness.sh
 * shows them acting on a silent peer). */
START_TEST(test_conn_sockopts_api)
{
	struct iw_conn_opts def = {.comp_mask = IW_CONN_OPTS_USER_TIMEOUT | IW_CONN_OPTS_RCVBUF,
				   .user_timeout_ms = 2500, .rcvbuf = 1u << 20};
	struct iw_context_attr ca = {.comp_mask = IW_CONTEXT_ATTR_CONN_OPTS};
	ck_assert_ptr_null(iw_context_new(&ca)); /* conn_opts NULL */
	ck_assert_int_eq(errno, EINVAL);
	struct iw_conn_opts bad = {.comp_mask = IW_CONN_OPTS_SNDBUF, .sndbuf = 0x40000000u};
	ca.conn_opts = &bad;
	ck_assert_ptr_null(iw_context_new(&ca));
	ck_assert_int_eq(errno, EINVAL);
	ca.conn_opts = &def;
	struct iw_context *ctx = iw_context_new(&ca);
	ck_assert_ptr_nonnull(ctx);
	def.user_timeout_ms = 1; /* copied: later changes are not seen */
	struct iw_cm_channel *ch = iw_cm_create_channel(ctx);
	ck_assert_ptr_nonnull(ch);
	struct iw_cm_id *id;
	ck_assert_int_eq(iw_cm_create_id(ch, &id, NULL), 0);
	struct iw_conn_opts o;
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &o), 0);
	ck_assert_uint_eq(o.user_timeout_ms, 2500);
	ck_assert_uint_eq(o.rcvbuf, 1u << 20);
	ck_assert(!o.keepalive);
	ck_assert_uint_eq(o.sndbuf, 0);
	ck_assert_uint_eq(o.linger_ms, IW_LINGER_MS_DEFAULT);
	ck_assert_uint_ne(o.comp_mask & IW_CONN_OPTS_KEEPALIVE, 0);
	struct iw_conn_opts ka = {.comp_mask = IW_CONN_OPTS_KEEPALIVE | IW_CONN_OPTS_SNDBUF,
				  .keepalive = true, .keepalive_idle_s = 32767,
				  .keepalive_intvl_s = 5, .keepalive_cnt = 127, .sndbuf = 65536};
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &ka), 0);
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &o), 0);
	ck_assert(o.keepalive);
	ck_assert_uint_eq(o.keepalive_idle_s, 32767);
	ck_assert_uint_eq(o.keepalive_intvl_s, 5);
	ck_assert_uint_eq(o.keepalive_cnt, 127);
	ck_assert_uint_eq(o.sndbuf, 65536);
	ck_assert_uint_eq(o.user_timeout_ms, 2500); /* bit clear: kept */
	sockopt_refused(id, (struct iw_conn_opts){.comp_mask = IW_CONN_OPTS_KEEPALIVE,
						  .keepalive = true, .keepalive_idle_s = 32768});
	sockopt_refused(id, (struct iw_conn_opts){.comp_mask = IW_CONN_OPTS_KEEPALIVE,
						  .keepalive = true, .keepalive_intvl_s = 40000});
	sockopt_refused(id, (struct iw_conn_opts){.comp_mask = IW_CONN_OPTS_KEEPALIVE,
						  .keepalive = true, .keepalive_cnt = 128});
	sockopt_refused(id, (struct iw_conn_opts){.comp_mask = IW_CONN_OPTS_USER_TIMEOUT,
						  .user_timeout_ms = 0x80000000u});
	sockopt_refused(id, (struct iw_conn_opts){.comp_mask = IW_CONN_OPTS_RCVBUF,
						  .rcvbuf = 0x40000000u});
	sockopt_refused(id, (struct iw_conn_opts){.comp_mask = IW_CONN_OPTS_RELISTEN,
						  .relisten_ms = IW_RELISTEN_MS_MAX + 1});
	struct iw_conn_opts rl = {.comp_mask = IW_CONN_OPTS_RELISTEN,
				  .relisten_ms = IW_RELISTEN_MS_MAX};
	ck_assert_int_eq(iw_cm_set_conn_opts(id, &rl), 0);
	ck_assert_int_eq(iw_cm_get_conn_opts(id, &o), 0);
	ck_assert_uint_eq(o.relisten_ms, IW_RELISTEN_MS_MAX);
	ck_assert_int_eq(iw_cm_destroy_id(id), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(ch), 0);
	ck_assert_int_eq(iw_context_free(ctx), 0);
}
END_TEST

/* ---------------------------------------------------------------- listener */

struct lsn {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_id *id;
	struct sockaddr_in addr;
};

static void lsn_new(struct lsn *l, uint32_t max_pending)
{
	l->ctx = iw_context_new(NULL);
	ck_assert_ptr_nonnull(l->ctx);
	l->ch = iw_cm_create_channel(l->ctx);
	ck_assert_ptr_nonnull(l->ch);
	ck_assert_int_eq(iw_cm_create_id(l->ch, &l->id, NULL), 0);
	if (max_pending) {
		struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_MAX_PENDING,
					 .max_pending = max_pending};
		ck_assert_int_eq(iw_cm_set_conn_opts(l->id, &o), 0);
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(iw_cm_bind_addr(l->id, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(iw_cm_listen(l->id, 64), 0);
	memcpy(&l->addr, &l->id->local_addr, sizeof(l->addr));
}

static void lsn_free(struct lsn *l)
{
	ck_assert_int_eq(iw_cm_destroy_id(l->id), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(l->ch), 0);
	ck_assert_int_eq(iw_context_free(l->ctx), 0);
}

static struct iw_cm_listener_stats lsn_stats(struct lsn *l)
{
	struct iw_cm_listener_stats st;
	ck_assert_int_eq(iw_cm_listener_stats(l->id, &st), 0);
	return st;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Wait (up to 5 s) until pred holds for the listener's counters. */
#define LSN_WAIT(l, st, cond)                                          \
	do {                                                           \
		for (int w_ = 0; w_ < 500; w_++) {                     \
			st = lsn_stats(l);                             \
			if (cond)                                      \
				break;                                 \
			nap_ms(10);                                    \
		}                                                      \
		ck_assert_msg(cond, "listener counters never reached " #cond); \
	} while (0)

static int tcp_to(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)a, sizeof(*a)), 0);
	return fd;
}

/* Issue 16 bug 2: a cap on handshakes waiting for their Request, and
 * counters that say what happened to each connection. */
START_TEST(test_listener_cap)
{
	struct lsn l;
	lsn_new(&l, 3);
	int fd[6];
	for (int i = 0; i < 6; i++)
		fd[i] = tcp_to(&l.addr);
	struct iw_cm_listener_stats st;
	LSN_WAIT(&l, st, st.accepted == 6);
	ck_assert_uint_eq(st.rejected_full, 3);
	ck_assert_uint_eq(st.pending, 3);
	/* Garbage instead of a Request, and one that goes away. */
	uint8_t junk[20] = "MPA ID Xyz Frame";
	int pend[3], n = 0;
	for (int i = 0; i < 6; i++) {
		/* The three kept are the ones the reset did not hit. */
		char c;
		if (recv(fd[i], &c, 1, MSG_DONTWAIT) == 0 || errno == ECONNRESET)
			continue;
		pend[n++] = fd[i];
	}
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(send(pend[0], junk, sizeof(junk), 0), (int)sizeof(junk));
	close(pend[1]);
	LSN_WAIT(&l, st, st.rejected_bad == 1 && st.rejected_gone == 1);
	ck_assert_uint_eq(st.pending, 1);
	ck_assert_uint_eq(st.requests, 0);
	ck_assert_uint_eq(st.accept_errors, 0);
	for (int i = 0; i < 6; i++)
		if (fd[i] != pend[1])
			close(fd[i]);
	lsn_free(&l);
}
END_TEST

static int open_fds(void)
{
	int n = tu_open_fds();
	ck_assert_int_ge(n, 0);
	return n;
}

/* Issue 16 bug 1: out of descriptors, the listener pauses instead of
 * spinning on accept(2), counts it, and takes the waiting connections
 * once descriptors are back. */
START_TEST(test_listener_emfile)
{
	struct lsn l;
	lsn_new(&l, 0);
	int go[2];
	ck_assert_int_eq(pipe(go), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;
		/* Dies with the test: a failed assertion never reaches the
		 * kill below, and a paused orphan was left behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		int fds[20];
		for (int i = 0; i < 20; i++)
			fds[i] = tcp_to(&l.addr);
		(void)fds;
		pause();
		_exit(0);
	}
	struct rlimit old, low;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)open_fds() + 2; /* room for a couple, then EMFILE */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	struct iw_cm_listener_stats st;
	LSN_WAIT(&l, st, st.accept_errors >= 1);
	ck_assert_int_eq(st.last_accept_error, EMFILE);
	nap_ms(500);
	st = lsn_stats(&l);
	/* A spinning listener fails accept(2) hundreds of thousands of times
	 * in half a second; pausing 100 ms, 200 ms ... a handful. */
	ck_assert_uint_le(st.accept_errors, 10);
	ck_assert_uint_eq(st.accept_pauses, st.accept_errors);
	ck_assert_uint_lt(st.accepted, 20);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	LSN_WAIT(&l, st, st.accepted == 20);
	ck_assert_uint_eq(st.pending, 20);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(go[0]);
	close(go[1]);
	lsn_free(&l);
}
END_TEST

Suite *suite_conn(void)
{
	Suite *s = suite_create("conn");
	TCase *tc = tcase_create("conn");
	tcase_add_loop_test(tc, test_exchange, 0, MP_NUM_MODES);
	tcase_add_test(tc, test_plan_short_tail);
	tcase_add_test(tc, test_plan_small_after_large);
	tcase_add_test(tc, test_plan_small_run_after_large);
	tcase_add_test(tc, test_plan_markers);
	tcase_add_loop_test(tc, test_spec_xfer, 0, 2 * (int)(sizeof(spec_cases) / sizeof(spec_cases[0])));
	tcase_add_test(tc, test_spec_crc_error);
	tcase_add_test(tc, test_spec_sink_bound);
	tcase_add_test(tc, test_spec_markers);
	tcase_add_test(tc, test_tx_sent_iov);
	tcase_add_test(tc, test_tx_small_copied);
	tcase_add_test(tc, test_plan_from_batch);
	tcase_add_test(tc, test_hold_limits_to_qp);
	tcase_add_test(tc, test_after_reply);
	tcase_add_test(tc, test_request_timeout);
	tcase_add_test(tc, test_reply_timeout);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_linger);
	tcase_add_loop_test(tc, test_wakeups, 0, 2);
	tcase_add_test(tc, test_no_wakeup_after_peer_spoke);
	tcase_add_test(tc, test_terminate_then_fin);
	tcase_add_loop_test(tc, test_bad_reply_terminate, 0, MP_NUM_MODES);
	tcase_add_test(tc, test_reject);
	tcase_add_test(tc, test_mss_live);
	tcase_add_test(tc, test_request_trailing);
	tcase_add_test(tc, test_conn_opts_api);
	tcase_add_test(tc, test_conn_sockopts_api);
	suite_add_tcase(s, tc);
	/* Real sockets and a loop thread (the listener's counters). */
	tc = tcase_create("spec_cuts");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_spec_cuts, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("listener");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_listener_cap);
	/* valgrind keeps descriptors of its own above the limit it shows the
	 * program and refuses to raise RLIMIT_NOFILE back, so this case's
	 * arithmetic does not hold there: it runs natively and under ASan
	 * (make check), not in CI's valgrind pass. */
	if (!tu_under_valgrind())
		tcase_add_test(tc, test_listener_emfile);
	suite_add_tcase(s, tc);
	return s;
}
