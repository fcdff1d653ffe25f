/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA connection setup state machine (lib/conn/mpa_hs.c). An initiator and a
 * responder run back to back in memory: what one hands out through
 * iw_mpa_hs_tx (written in whole, byte-sized or random partial writes) is
 * fed to the other's iw_mpa_hs_recv in the same kinds of pieces. Most
 * negotiation tests run once per segmentation (loop index: whole, one octet
 * at a time, five random splits). Frames are checked against hand-written
 * hex in the cases interop.md describes (siw, Chelsio, Intel), and peers'
 * frames are hand-written where our own side would never produce them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/cm.h"
#include "iwarp/wire.h"
#include "conn/mpa_hs.h"
#include "suites.h"
#include "testutil.h"

#define KEY_REQ "4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 "
#define KEY_REP "4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 "
#define WIRE_MAX (IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX + 64)

/* ------------------------------------------------------------- helpers */

enum { SEG_WHOLE, SEG_BYTE, SEG_RANDOM };
#define NSEG 7 /* whole, byte, 5 random seeds */

struct seg {
	int mode;
	uint32_t seed;
};

static struct seg seg_of(int i)
{
	struct seg s = {.mode = i < 2 ? i : SEG_RANDOM, .seed = 0x9e3779b9u * (uint32_t)(i + 1)};
	return s;
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t chunk(size_t avail, struct seg *sg)
{
	if (sg->mode == SEG_WHOLE)
		return avail;
	if (sg->mode == SEG_BYTE)
		return 1;
	return 1 + rnd(&sg->seed) % avail;
}

static size_t unhex(uint8_t *out, const char *hex)
{
	return tu_unhex(out, WIRE_MAX, hex);
}

/* Write everything hs has pending, in pieces (partial tx_done), to wire.
 * The state must not move before the last octet is written. */
static size_t drain(struct iw_mpa_hs *hs, uint8_t *wire, struct seg *sg)
{
	enum iw_mpa_hs_state before = hs->state;
	const uint8_t *p;
	size_t total = 0, len;

	while ((p = iw_mpa_hs_tx(hs, &len)) != NULL) {
		size_t n = chunk(len, sg);

		ck_assert_uint_gt(len, 0);
		ck_assert_uint_le(total + n, WIRE_MAX);
		memcpy(wire + total, p, n);
		total += n;
		iw_mpa_hs_tx_done(hs, n);
		if (iw_mpa_hs_tx(hs, &len))
			ck_assert_int_eq(hs->state, before);
	}
	ck_assert_uint_eq(len, 0);
	return total;
}

/* Feed wire[0..len) in pieces until a result other than IW_HS_EV_NONE.
 * Every piece is an exact-size heap copy (ASan sees over-reads), and a call
 * that returns EV_NONE must have consumed its whole piece. */
static int feed(struct iw_mpa_hs *hs, const uint8_t *wire, size_t len, struct seg *sg,
		size_t *used)
{
	size_t off = 0;

	*used = 0;
	while (off < len) {
		size_t n = chunk(len - off, sg), c = 12345;
		uint8_t *d = malloc(n);
		int rc;

		ck_assert_ptr_nonnull(d);
		memcpy(d, wire + off, n);
		rc = iw_mpa_hs_recv(hs, d, n, &c);
		free(d);
		ck_assert_uint_le(c, n);
		*used += c;
		if (rc != IW_HS_EV_NONE)
			return rc;
		ck_assert_uint_eq(c, n);
		off += n;
	}
	return IW_HS_EV_NONE;
}

static int feed_hex(struct iw_mpa_hs *hs, const char *hex, struct seg *sg, size_t *used)
{
	uint8_t b[WIRE_MAX];
	size_t n = unhex(b, hex);

	return feed(hs, b, n, sg, used);
}

/* One side's parameters. */
struct side {
	struct iw_mpa_opts o;
	uint16_t ird, ord;
	const uint8_t *pd;
	uint16_t pd_len;
};

static struct side side_default(void)
{
	struct side s = {.ird = 1, .ord = 1};

	iw_mpa_opts_default(&s.o);
	return s;
}

/* A whole exchange and what happened on the way. */
struct conn {
	struct iw_mpa_hs i, r;
	uint8_t req[WIRE_MAX], rep[WIRE_MAX];
	size_t req_len, rep_len;
	int accept_rc;
	int rep_ev;
};

static struct conn cn; /* large: static rather than on the stack */

static void pd_eq(const struct iw_mpa_frame *f, const uint8_t *pd, uint16_t pd_len)
{
	ck_assert_uint_eq(f->pd_len, pd_len);
	if (pd_len)
		ck_assert_mem_eq(f->pd, pd, pd_len);
	else
		ck_assert_ptr_null(f->pd);
}

/* Request over, accept with sr's parameters, Reply (or Reject) over. */
static struct conn *run(const struct side *si, const struct side *sr, int seg_i)
{
	struct seg sg = seg_of(seg_i);
	struct conn *c = &cn;
	size_t used;

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(iw_mpa_hs_init(&c->i, true, &si->o, si->ird, si->ord, si->pd, si->pd_len), 0);
	ck_assert_int_eq(iw_mpa_hs_init(&c->r, false, &sr->o, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(c->i.state, IW_HS_SEND_REQ);
	ck_assert_int_eq(c->r.state, IW_HS_WAIT_REQ);

	c->req_len = drain(&c->i, c->req, &sg);
	ck_assert_int_eq(c->i.state, IW_HS_WAIT_REP);
	ck_assert_int_eq(feed(&c->r, c->req, c->req_len, &sg, &used), IW_HS_EV_REQUEST);
	ck_assert_uint_eq(used, c->req_len);
	ck_assert_int_eq(c->r.state, IW_HS_HAVE_REQ);
	pd_eq(&c->r.peer, si->pd, si->pd_len);

	c->accept_rc = iw_mpa_hs_accept(&c->r, sr->ird, sr->ord, sr->pd, sr->pd_len);
	if (c->accept_rc != 0 && c->accept_rc != -EPROTO)
		return c;
	ck_assert_int_eq(c->r.state, IW_HS_SEND_REP);
	c->rep_len = drain(&c->r, c->rep, &sg);
	ck_assert_int_eq(c->r.state, c->accept_rc == 0 ? IW_HS_DONE : IW_HS_REJECTED);
	c->rep_ev = feed(&c->i, c->rep, c->rep_len, &sg, &used);
	if (c->rep_ev >= 0)
		ck_assert_uint_eq(used, c->rep_len);
	return c;
}

/* Both DONE and agreeing on everything that must match. */
static void agreed(const struct conn *c)
{
	const struct iw_mpa_result *a = &c->i.res, *b = &c->r.res;

	ck_assert_int_eq(c->accept_rc, 0);
	ck_assert_int_eq(c->rep_ev, IW_HS_EV_REPLY);
	ck_assert_int_eq(c->i.state, IW_HS_DONE);
	ck_assert_int_eq(c->r.state, IW_HS_DONE);
	ck_assert_uint_eq(a->rev, b->rev);
	ck_assert_int_eq(a->enhanced, b->enhanced);
	ck_assert_int_eq(a->p2p, b->p2p);
	ck_assert_uint_eq(a->rtr, b->rtr);
	ck_assert_int_eq(a->crc, b->crc);
	ck_assert_int_eq(a->markers_tx, b->markers_rx);
	ck_assert_int_eq(a->markers_rx, b->markers_tx);
	if (a->p2p) {
		ck_assert(a->rtr == IW_RTR_SEND || a->rtr == IW_RTR_WRITE || a->rtr == IW_RTR_READ);
		ck_assert(a->enhanced);
	} else {
		ck_assert_uint_eq(a->rtr, 0);
	}
	if (a->enhanced) {
		/* Nobody issues more Read Requests than the other serves. */
		ck_assert_uint_le(a->ord, b->ird);
		ck_assert_uint_le(b->ord, a->ird);
	}
	ck_assert(iw_mpa_hs_tx(&c->i, NULL) == NULL);
	ck_assert(iw_mpa_hs_tx(&c->r, NULL) == NULL);
}

/* Initiator with o/ird/ord gets the hand-written Reply. */
static int reply_to(struct iw_mpa_hs *i, const struct iw_mpa_opts *o, uint16_t ird, uint16_t ord,
		    const char *hex, int seg_i, size_t *used)
{
	struct seg sg = seg_of(seg_i);
	uint8_t wire[WIRE_MAX];

	ck_assert_int_eq(iw_mpa_hs_init(i, true, o, ird, ord, NULL, 0), 0);
	drain(i, wire, &sg);
	ck_assert_int_eq(i->state, IW_HS_WAIT_REP);
	return feed_hex(i, hex, &sg, used);
}

/* Responder with o gets the hand-written Request. */
static void request_to(struct iw_mpa_hs *r, const struct iw_mpa_opts *o, const char *hex,
		       int seg_i)
{
	struct seg sg = seg_of(seg_i);
	uint8_t b[WIRE_MAX];
	size_t n = unhex(b, hex), used;

	ck_assert_int_eq(iw_mpa_hs_init(r, false, o, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(feed(r, b, n, &sg, &used), IW_HS_EV_REQUEST);
	ck_assert_uint_eq(used, n);
}

/* The pending frame equals the hex. */
static void tx_is(const struct iw_mpa_hs *hs, const char *hex)
{
	uint8_t want[WIRE_MAX];
	size_t n = unhex(want, hex), len = 0;
	const uint8_t *p = iw_mpa_hs_tx(hs, &len);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(len, n);
	ck_assert_mem_eq(p, want, n);
}

static void wire_is(const uint8_t *wire, size_t len, const char *hex)
{
	uint8_t want[WIRE_MAX];
	size_t n = unhex(want, hex);

	ck_assert_uint_eq(len, n);
	ck_assert_mem_eq(wire, want, n);
}

static struct iw_mpa_hs hs1, hs2; /* for single-side tests */

/* ------------------------------------------------------------- defaults */

START_TEST(opts_default_values)
{
	struct iw_mpa_opts o;

	memset(&o, 0xA5, sizeof(o));
	iw_mpa_opts_default(&o);
	ck_assert_uint_eq(o.rev, 2);
	ck_assert(o.enhanced && o.p2p);
	ck_assert_uint_eq(o.rtr_offer, IW_RTR_WRITE | IW_RTR_READ);
	ck_assert_uint_eq(o.rtr_accept, IW_RTR_WRITE | IW_RTR_READ);
	ck_assert(!o.rtr_force);
	ck_assert(o.crc);
	ck_assert(!o.markers);
	ck_assert(o.accept_markers);
	ck_assert_uint_eq(o.pd_cap, 512);
	ck_assert_uint_eq(o.timeout_ms, 10000);
	ck_assert(!o.peer_siw_term);
	iw_mpa_opts_default(NULL); /* no crash */
}
END_TEST

START_TEST(state_names)
{
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_SEND_REQ), "SEND_REQ");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_WAIT_REP), "WAIT_REP");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_WAIT_REQ), "WAIT_REQ");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_HAVE_REQ), "HAVE_REQ");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_SEND_REP), "SEND_REP");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_DONE), "DONE");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_REJECTED), "REJECTED");
	ck_assert_str_eq(iw_mpa_hs_state_str(IW_HS_FAILED), "FAILED");
	ck_assert_str_eq(iw_mpa_hs_state_str((enum iw_mpa_hs_state)0), "unknown");
	ck_assert_str_eq(iw_mpa_hs_state_str((enum iw_mpa_hs_state)99), "unknown");
}
END_TEST

START_TEST(memory_budget)
{
	/* Embedded per connection (10,000 connections): two frame buffers
	 * and small change, no heap. */
	ck_assert_uint_le(sizeof(struct iw_mpa_hs), 2 * (IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX) + 256);
}
END_TEST

/* ---------------------------------------------------------- exact bytes */

START_TEST(bytes_default_request)
{
	/* C|ENHANCED, rev 2, PD_Length 4, A + IRD 1, WRITE|READ + ORD 1. */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 1, NULL, 0), 0);
	tx_is(&hs1, KEY_REQ "50 02 00 04 80 01 c0 01");
	ck_assert_uint_eq(hs1.local.rtr, IW_RTR_WRITE | IW_RTR_READ);
	ck_assert(hs1.local.p2p);
}
END_TEST

START_TEST(bytes_default_reply)
{
	/* What siw answers to a WRITE|READ offer, plus our C. */
	struct side s = side_default();
	struct conn *c = run(&s, &s, _i);

	wire_is(c->req, c->req_len, KEY_REQ "50 02 00 04 80 01 c0 01");
	wire_is(c->rep, c->rep_len, KEY_REP "50 02 00 04 80 01 80 01");
	agreed(c);
	ck_assert_uint_eq(c->i.res.rev, 2);
	ck_assert(c->i.res.enhanced && c->i.res.p2p && c->i.res.crc);
	ck_assert_uint_eq(c->i.res.rtr, IW_RTR_WRITE);
	ck_assert(!c->i.res.markers_rx && !c->i.res.markers_tx);
	ck_assert_uint_eq(c->i.res.ird, 1);
	ck_assert_uint_eq(c->i.res.ord, 1);
	ck_assert_uint_eq(c->r.res.ird, 1);
	ck_assert_uint_eq(c->r.res.ord, 1);
}
END_TEST

START_TEST(bytes_markers_read_only_request)
{
	/* M, no C; READ only (D), IRD 16, ORD 0x3FFF; ULP "hi". */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	o.markers = true;
	o.crc = false;
	o.rtr_offer = IW_RTR_READ;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 16, 0x3FFF, "hi", 2), 0);
	tx_is(&hs1, KEY_REQ "90 02 00 06 80 10 7f ff 68 69");
}
END_TEST

START_TEST(bytes_send_rtr_request)
{
	/* B sits in the IRD word. */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	o.rtr_offer = IW_RTR_SEND;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 0x3FFF, 0, NULL, 0), 0);
	tx_is(&hs1, KEY_REQ "50 02 00 04 ff ff 00 00");
}
END_TEST

START_TEST(bytes_rev1_request)
{
	struct iw_mpa_opts o;
	const uint8_t smbd[8] = {0, 0, 0, 16, 0, 0, 0, 8};

	iw_mpa_opts_default(&o);
	o.rev = 1;
	/* Rev 1: no block, no ENHANCED, IRD/ORD not sent; ULP data untouched. */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 5, 6, smbd, sizeof(smbd)), 0);
	tx_is(&hs1, KEY_REQ "40 01 00 08 00 00 00 10 00 00 00 08");
	ck_assert(!hs1.local.p2p);
}
END_TEST

START_TEST(bytes_siw_markers_reject)
{
	/* siw's answer to M, seen on the wire: flags 0x30, block 00 00 00 00. */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	o.accept_markers = false;
	request_to(&hs2, &o, KEY_REQ "90 02 00 04 00 01 00 01", _i);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EPROTO);
	ck_assert_ptr_nonnull(strstr(hs2.err_msg, "markers"));
	ck_assert_uint_eq(hs2.err_term, 0);
	ck_assert_int_eq(hs2.err, IW_WERR_NONE);
	ck_assert_int_eq(hs2.state, IW_HS_SEND_REP);
	tx_is(&hs2, KEY_REP "30 02 00 04 00 00 00 00");
	iw_mpa_hs_tx_done(&hs2, 24);
	ck_assert_int_eq(hs2.state, IW_HS_REJECTED);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(bytes_app_reject_enhanced)
{
	struct side s = side_default();
	struct seg sg = seg_of(_i);
	size_t used;

	ck_assert_int_eq(iw_mpa_hs_init(&cn.i, true, &s.o, 1, 1, NULL, 0), 0);
	ck_assert_int_eq(iw_mpa_hs_init(&cn.r, false, &s.o, 0, 0, NULL, 0), 0);
	cn.req_len = drain(&cn.i, cn.req, &sg);
	ck_assert_int_eq(feed(&cn.r, cn.req, cn.req_len, &sg, &used), IW_HS_EV_REQUEST);
	ck_assert_int_eq(iw_mpa_hs_reject(&cn.r, "no", 2), 0);
	ck_assert_int_eq(cn.r.state, IW_HS_SEND_REP);
	cn.rep_len = drain(&cn.r, cn.rep, &sg);
	ck_assert_int_eq(cn.r.state, IW_HS_REJECTED);
	wire_is(cn.rep, cn.rep_len, KEY_REP "30 02 00 06 00 00 00 00 6e 6f");
	ck_assert_int_eq(feed(&cn.i, cn.rep, cn.rep_len, &sg, &used), IW_HS_EV_REJECT);
	ck_assert_uint_eq(used, cn.rep_len);
	ck_assert_int_eq(cn.i.state, IW_HS_REJECTED);
	pd_eq(&cn.i.peer, (const uint8_t *)"no", 2);
	/* Nothing more is taken. */
	ck_assert_int_eq(iw_mpa_hs_recv(&cn.i, (const uint8_t *)"x", 1, &used), IW_HS_EV_NONE);
	ck_assert_uint_eq(used, 0);
}
END_TEST

START_TEST(bytes_app_reject_rev1)
{
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "40 01 00 00", _i);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, "no", 2), 0);
	tx_is(&hs2, KEY_REP "20 01 00 02 6e 6f");
}
END_TEST

START_TEST(bytes_reject_over_cap)
{
	struct iw_mpa_opts o;
	static uint8_t big[IW_MPA_PD_MAX];

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "50 02 00 04 80 01 c0 01", _i);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, big, 509), -EMSGSIZE);
	ck_assert_int_eq(hs2.state, IW_HS_HAVE_REQ);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, NULL, 3), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, big, 508), 0);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, big, 1), -EINVAL); /* already answered */
}
END_TEST

/* -------------------------------------------------------- siw / Chelsio */

START_TEST(siw_initiator_without_a)
{
	/* siw as initiator: rev 2 + 0x10, no A, no C, IRD/ORD 1/1. */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "10 02 00 04 00 01 00 01", _i);
	ck_assert(!hs2.peer.p2p);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), 0);
	/* No A, no RTR, our C. */
	tx_is(&hs2, KEY_REP "50 02 00 04 00 01 00 01");
	ck_assert(!hs2.res.p2p);
	ck_assert_uint_eq(hs2.res.rtr, 0);
	ck_assert(hs2.res.crc && hs2.res.enhanced);
	ck_assert_uint_eq(hs2.res.ird, 1);
	ck_assert_uint_eq(hs2.res.ord, 1);
}
END_TEST

START_TEST(perftest_initiator_zero_ird_ord)
{
	/* perftest's exchange connection: siw sends IRD/ORD 0/0. */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "10 02 00 04 00 00 00 00", _i);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 8, 8, NULL, 0), 0);
	tx_is(&hs2, KEY_REP "50 02 00 04 00 00 00 00");
	ck_assert_uint_eq(hs2.res.ird, 0);
	ck_assert_uint_eq(hs2.res.ord, 0);
}
END_TEST

START_TEST(siw_responder_write)
{
	/* siw echoes our flags (C|ENH) and answers A + WRITE + 1/1. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, KEY_REP "50 02 00 04 80 01 80 01", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(used, 24);
	ck_assert_int_eq(hs1.state, IW_HS_DONE);
	ck_assert(hs1.res.p2p && hs1.res.enhanced && hs1.res.crc);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_WRITE);
	ck_assert_uint_eq(hs1.res.ird, 1);
	ck_assert_uint_eq(hs1.res.ord, 1);
}
END_TEST

START_TEST(siw_responder_read_only_offer)
{
	/* Offered READ only, siw answers 80 01 40 01. */
	struct iw_mpa_opts o;
	size_t used;

	iw_mpa_opts_default(&o);
	o.rtr_offer = IW_RTR_READ;
	ck_assert_int_eq(reply_to(&hs1, &o, 1, 1, KEY_REP "50 02 00 04 80 01 40 01", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_READ);
	ck_assert_uint_eq(hs1.res.ord, 1);
}
END_TEST

START_TEST(siw_responder_no_crc_flag)
{
	/* A responder without C: CRC is still on because we asked. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, KEY_REP "10 02 00 04 80 01 80 01", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert(hs1.res.crc);
}
END_TEST

START_TEST(siw_caps_ird_ord_128)
{
	/* We sent 200/200; siw replied 128/128. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 200, 200, KEY_REP "50 02 00 04 80 80 80 80", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.ird, 128);
	ck_assert_uint_eq(hs1.res.ord, 128);
}
END_TEST

START_TEST(chelsio_reply_read_when_both_offered)
{
	/* iw_cxgb4 answers READ (its p2p_type), IRD/ORD 32: fine, READ was offered. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 64, 64, KEY_REP "50 02 00 04 80 20 40 20", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_READ);
	ck_assert_uint_eq(hs1.res.ird, 32);
	ck_assert_uint_eq(hs1.res.ord, 32);
}
END_TEST

START_TEST(chelsio_reply_read_when_write_offered)
{
	struct iw_mpa_opts o;
	size_t used;

	iw_mpa_opts_default(&o);
	o.rtr_offer = IW_RTR_WRITE;
	ck_assert_int_eq(reply_to(&hs1, &o, 64, 64, KEY_REP "50 02 00 04 80 20 40 20", _i, &used),
			 -EPROTO);
	ck_assert_int_eq(hs1.state, IW_HS_FAILED);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_NO_RTR);
	ck_assert_uint_eq(hs1.err_term, 0x2007);
	ck_assert_int_eq(hs1.err, IW_WERR_NONE);
	ck_assert_ptr_nonnull(strstr(hs1.err_msg, "RTR"));
}
END_TEST

START_TEST(chelsio_like_responder_forces_read)
{
	/* Our responder configured like iw_cxgb4: READ regardless of the offer. */
	struct side si = side_default(), sr = side_default();
	struct conn *c;

	sr.o.rtr_force = true;
	sr.o.rtr_accept = IW_RTR_READ;
	c = run(&si, &sr, _i);
	wire_is(c->rep, c->rep_len, KEY_REP "50 02 00 04 80 01 40 01");
	agreed(c);
	ck_assert_uint_eq(c->i.res.rtr, IW_RTR_READ);

	si.o.rtr_offer = IW_RTR_WRITE;
	c = run(&si, &sr, _i);
	ck_assert_int_eq(c->accept_rc, 0); /* it does not look */
	ck_assert_int_eq(c->r.res.rtr, IW_RTR_READ);
	ck_assert_int_eq(c->rep_ev, -EPROTO);
	ck_assert_uint_eq(c->i.err_term, IW_TERM_LLP_NO_RTR);
	ck_assert_int_eq(c->i.state, IW_HS_FAILED);
}
END_TEST

START_TEST(intel_no_negotiation_reply)
{
	/* irdma in "no IRD/ORD negotiation" mode echoes 0x3FFF in both words
	 * and picks READ when offered: A|0x3FFF, D|0x3FFF. Keep ours. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 4, 5, KEY_REP "50 02 00 04 bf ff 7f ff", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.peer.ird, 0x3FFF);
	ck_assert_uint_eq(hs1.peer.ord, 0x3FFF);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_READ);
	ck_assert_uint_eq(hs1.res.ird, 4);
	ck_assert_uint_eq(hs1.res.ord, 5);
}
END_TEST

/* -------------------------------------------------------- rev matrix */

START_TEST(rev_matrix)
{
	for (int ri = 1; ri <= 2; ri++) {
		for (int rr = 1; rr <= 2; rr++) {
			struct side si = side_default(), sr = side_default();
			struct conn *c;
			uint8_t want = (uint8_t)(ri < rr ? ri : rr);

			si.o.rev = (uint8_t)ri;
			sr.o.rev = (uint8_t)rr;
			si.ird = 3;
			si.ord = 5;
			sr.ird = 7;
			sr.ord = 9;
			c = run(&si, &sr, _i);
			agreed(c);
			ck_assert_uint_eq(c->i.res.rev, want);
			ck_assert_uint_eq(c->rep[17], want);
			ck_assert_int_eq(c->i.res.enhanced, want == 2);
			ck_assert_int_eq(c->i.res.p2p, want == 2);
			if (want == 1) {
				/* No block: no IRD/ORD negotiation, no ENHANCED. */
				ck_assert_uint_eq(c->rep[16] & IW_MPA_FLAG_ENHANCED, 0);
				ck_assert_uint_eq(c->i.res.ird, 3);
				ck_assert_uint_eq(c->i.res.ord, 5);
				ck_assert_uint_eq(c->r.res.ird, 7);
				ck_assert_uint_eq(c->r.res.ord, 9);
				ck_assert_uint_eq(c->rep_len, 20);
			} else {
				ck_assert_uint_eq(c->i.res.ord, 5);
				ck_assert_uint_eq(c->r.res.ird, 5);
				ck_assert_uint_eq(c->r.res.ord, 3);
				ck_assert_uint_eq(c->i.res.ird, 3);
			}
		}
	}
}
END_TEST

START_TEST(rev1_peer_request_smbd_blob)
{
	/* An RFC 5044 peer with the [MS-SMBD] 8-octet IRD/ORD blob: answered
	 * with rev 1, blob handed over untouched, no P2P. */
	struct iw_mpa_opts o;
	const uint8_t blob[8] = {0, 0, 0, 16, 0, 0, 0, 8};

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "40 01 00 08 00 00 00 10 00 00 00 08", _i);
	pd_eq(&hs2.peer, blob, 8);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 16, 8, blob, 8), 0);
	tx_is(&hs2, KEY_REP "40 01 00 08 00 00 00 10 00 00 00 08");
	ck_assert_uint_eq(hs2.res.rev, 1);
	ck_assert(!hs2.res.p2p && !hs2.res.enhanced);
	ck_assert_uint_eq(hs2.res.ird, 16);
	ck_assert_uint_eq(hs2.res.ord, 8);
}
END_TEST

START_TEST(rev1_reply_to_rev2_request)
{
	/* A rev-1-only responder: RFC 5044 semantics, no RTR. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 4, 6, KEY_REP "40 01 00 03 61 62 63", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(used, 23);
	ck_assert_uint_eq(hs1.res.rev, 1);
	ck_assert(!hs1.res.p2p && !hs1.res.enhanced);
	ck_assert_uint_eq(hs1.res.rtr, 0);
	ck_assert_uint_eq(hs1.res.ird, 4);
	ck_assert_uint_eq(hs1.res.ord, 6);
	pd_eq(&hs1.peer, (const uint8_t *)"abc", 3);
}
END_TEST

START_TEST(rev2_reply_to_rev1_request)
{
	struct iw_mpa_opts o;
	size_t used;

	iw_mpa_opts_default(&o);
	o.rev = 1;
	ck_assert_int_eq(reply_to(&hs1, &o, 1, 1, KEY_REP "50 02 00 04 80 01 80 01", _i, &used),
			 -EPROTO);
	ck_assert_int_eq(hs1.err, IW_WERR_MPA_REV);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_BAD_FRAME);
}
END_TEST

START_TEST(rev2_without_enhanced)
{
	/* Initiator rev 2 without the block: plain rev-2 frames both ways. */
	struct side si = side_default(), sr = side_default();
	struct conn *c;

	si.o.enhanced = false;
	c = run(&si, &sr, _i);
	wire_is(c->req, c->req_len, KEY_REQ "40 02 00 00");
	wire_is(c->rep, c->rep_len, KEY_REP "40 02 00 00");
	agreed(c);
	ck_assert(!c->i.res.enhanced && !c->i.res.p2p);
	ck_assert_uint_eq(c->i.res.rev, 2);

	/* Responder that does not do RFC 6581: no block in its Reply; our
	 * initiator takes it as RFC 5044 (no RTR). */
	si = side_default();
	sr.o.enhanced = false;
	c = run(&si, &sr, _i);
	wire_is(c->rep, c->rep_len, KEY_REP "40 02 00 00");
	agreed(c);
	ck_assert(!c->i.res.p2p && !c->i.res.enhanced);
}
END_TEST

/* ---------------------------------------------------------------- CRC */

START_TEST(crc_matrix)
{
	for (int ci = 0; ci < 2; ci++) {
		for (int cr = 0; cr < 2; cr++) {
			struct side si = side_default(), sr = side_default();
			struct conn *c;

			si.o.crc = ci;
			sr.o.crc = cr;
			c = run(&si, &sr, _i);
			agreed(c);
			ck_assert_int_eq(c->i.res.crc, ci || cr);
			ck_assert_int_eq((c->req[16] & IW_MPA_FLAG_C) != 0, ci);
			/* The responder echoes C (RFC 5044: either obliges both). */
			ck_assert_int_eq((c->rep[16] & IW_MPA_FLAG_C) != 0, ci || cr);
		}
	}
}
END_TEST

/* ------------------------------------------------------------ markers */

START_TEST(markers_matrix)
{
	for (int k = 0; k < 16; k++) {
		bool mi = k & 1, mr = k & 2, ai = k & 4, ar = k & 8;
		struct side si = side_default(), sr = side_default();
		struct conn *c;

		si.o.markers = mi;
		sr.o.markers = mr;
		si.o.accept_markers = ai;
		sr.o.accept_markers = ar;
		c = run(&si, &sr, _i);
		ck_assert_int_eq((c->req[16] & IW_MPA_FLAG_M) != 0, mi);
		if (mi && !ar) {
			/* Responder refuses (siw): Reject, initiator sees R. */
			ck_assert_int_eq(c->accept_rc, -EPROTO);
			ck_assert_uint_eq(c->r.err_term, 0);
			ck_assert_uint_eq(c->rep[16], IW_MPA_FLAG_R | IW_MPA_FLAG_ENHANCED);
			ck_assert_int_eq(c->rep_ev, IW_HS_EV_REJECT);
			ck_assert_int_eq(c->i.state, IW_HS_REJECTED);
			continue;
		}
		ck_assert_int_eq((c->rep[16] & IW_MPA_FLAG_M) != 0, mr);
		if (mr && !ai) {
			ck_assert_int_eq(c->rep_ev, -EPROTO);
			ck_assert_int_eq(c->i.state, IW_HS_FAILED);
			ck_assert_uint_eq(c->i.err_term, 0);
			ck_assert_ptr_nonnull(strstr(c->i.err_msg, "markers"));
			continue;
		}
		agreed(c);
		ck_assert_int_eq(c->i.res.markers_rx, mi);
		ck_assert_int_eq(c->i.res.markers_tx, mr);
		ck_assert_int_eq(c->r.res.markers_rx, mr);
		ck_assert_int_eq(c->r.res.markers_tx, mi);
	}
}
END_TEST

/* ----------------------------------------------------------------- RTR */

static uint8_t pref(unsigned set)
{
	return set & IW_RTR_WRITE ? IW_RTR_WRITE
	       : set & IW_RTR_READ ? IW_RTR_READ
	       : set & IW_RTR_SEND ? IW_RTR_SEND
				   : 0;
}

START_TEST(rtr_matrix)
{
	/* Every offer x every accept set x force: 7 x 8 x 2 handshakes. */
	for (unsigned offer = 1; offer < 8; offer++) {
		for (unsigned acc = 0; acc < 8; acc++) {
			for (int force = 0; force < 2; force++) {
				struct side si = side_default(), sr = side_default();
				struct conn *c;
				uint8_t pick = force ? pref(acc) : pref(offer & acc);

				si.o.rtr_offer = (uint8_t)offer;
				sr.o.rtr_accept = (uint8_t)acc;
				sr.o.rtr_force = force;
				c = run(&si, &sr, _i);
				/* The offer is on the wire as B/C/D. */
				ck_assert_uint_eq((c->req[20] & 0x40) != 0, (offer & IW_RTR_SEND) != 0);
				ck_assert_uint_eq((c->req[22] & 0x80) != 0, (offer & IW_RTR_WRITE) != 0);
				ck_assert_uint_eq((c->req[22] & 0x40) != 0, (offer & IW_RTR_READ) != 0);
				if (!pick) {
					ck_assert_int_eq(c->accept_rc, -EPROTO);
					ck_assert_uint_eq(c->r.err_term, IW_TERM_LLP_NO_RTR);
					ck_assert(c->rep[16] & IW_MPA_FLAG_R);
					ck_assert_int_eq(c->rep_ev, IW_HS_EV_REJECT);
					continue;
				}
				ck_assert_int_eq(c->accept_rc, 0);
				ck_assert_uint_eq(c->r.res.rtr, pick);
				/* Exactly one RTR bit and A in the Reply. */
				ck_assert_uint_eq(c->rep[20] & 0x80, 0x80);
				ck_assert_uint_eq((c->rep[20] & 0x40) ? IW_RTR_SEND
						  : (c->rep[22] & 0x80) ? IW_RTR_WRITE
						  : (c->rep[22] & 0x40) ? IW_RTR_READ : 0, pick);
				ck_assert_uint_eq(((c->rep[20] >> 6) & 1) + ((c->rep[22] >> 7) & 1) +
							  ((c->rep[22] >> 6) & 1), 1);
				if (!(pick & offer)) {
					ck_assert(force);
					ck_assert_int_eq(c->rep_ev, -EPROTO);
					ck_assert_uint_eq(c->i.err_term, IW_TERM_LLP_NO_RTR);
					continue;
				}
				agreed(c);
				ck_assert_uint_eq(c->i.res.rtr, pick);
			}
		}
	}
}
END_TEST

START_TEST(rtr_send_only_when_configured)
{
	/* Default accept set never answers SEND (siw never does). */
	struct side si = side_default(), sr = side_default();
	struct conn *c;

	si.o.rtr_offer = IW_RTR_SEND | IW_RTR_READ;
	c = run(&si, &sr, _i);
	agreed(c);
	ck_assert_uint_eq(c->i.res.rtr, IW_RTR_READ);

	si.o.rtr_offer = IW_RTR_SEND;
	c = run(&si, &sr, _i);
	ck_assert_int_eq(c->accept_rc, -EPROTO);
	ck_assert_ptr_nonnull(strstr(c->r.err_msg, "RTR"));
	/* The Reject: R|ENHANCED, block all zero, no ULP data. */
	wire_is(c->rep, c->rep_len, KEY_REP "30 02 00 04 00 00 00 00");
	ck_assert_int_eq(c->rep_ev, IW_HS_EV_REJECT);

	sr.o.rtr_accept = IW_RTR_SEND;
	c = run(&si, &sr, _i);
	agreed(c);
	ck_assert_uint_eq(c->i.res.rtr, IW_RTR_SEND);
	wire_is(c->rep, c->rep_len, KEY_REP "50 02 00 04 c0 01 00 01");
}
END_TEST

START_TEST(responder_without_p2p_rejects_a)
{
	/* RFC 6581 9.2: A in the Request MUST be echoed; a responder that
	 * cannot do an RTR rejects rather than answering without A. */
	struct side si = side_default(), sr = side_default();
	struct conn *c;

	sr.o.p2p = false;
	c = run(&si, &sr, _i);
	ck_assert_int_eq(c->accept_rc, -EPROTO);
	ck_assert_uint_eq(c->r.err_term, IW_TERM_LLP_NO_RTR);
	ck_assert_int_eq(c->rep_ev, IW_HS_EV_REJECT);

	/* Both without P2P: enhanced block, no A anywhere. */
	si.o.p2p = false;
	c = run(&si, &sr, _i);
	wire_is(c->req, c->req_len, KEY_REQ "50 02 00 04 00 01 00 01");
	wire_is(c->rep, c->rep_len, KEY_REP "50 02 00 04 00 01 00 01");
	agreed(c);
	ck_assert(c->i.res.enhanced && !c->i.res.p2p);
}
END_TEST

START_TEST(reply_lacks_a)
{
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, KEY_REP "50 02 00 04 00 01 80 01", _i, &used),
			 -EPROTO);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_NO_RTR);
	ck_assert_ptr_nonnull(strstr(hs1.err_msg, "flag A"));
	ck_assert_int_eq(hs1.state, IW_HS_FAILED);
}
END_TEST

START_TEST(reply_a_without_rtr)
{
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, KEY_REP "50 02 00 04 80 01 00 01", _i, &used),
			 -EPROTO);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_NO_RTR);
}
END_TEST

START_TEST(reply_unoffered_send)
{
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, KEY_REP "50 02 00 04 c0 01 00 01", _i, &used),
			 -EPROTO);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_NO_RTR);
}
END_TEST

START_TEST(reply_several_rtr_bits)
{
	/* Lenient: several bits, the best one we offered. */
	struct iw_mpa_opts o;
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, KEY_REP "50 02 00 04 c0 01 c0 01", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_WRITE);
	iw_mpa_opts_default(&o);
	o.rtr_offer = IW_RTR_READ;
	ck_assert_int_eq(reply_to(&hs1, &o, 1, 1, KEY_REP "50 02 00 04 80 01 c0 01", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_READ);
}
END_TEST

START_TEST(reply_a_to_request_without_a)
{
	struct iw_mpa_opts o;
	size_t used;

	iw_mpa_opts_default(&o);
	o.p2p = false;
	ck_assert_int_eq(reply_to(&hs1, &o, 1, 1, KEY_REP "50 02 00 04 80 01 80 01", _i, &used),
			 -EPROTO);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_NO_RTR);
}
END_TEST

/* ------------------------------------------------------------- IRD/ORD */

struct irdord_case {
	uint16_t i_ird, i_ord, r_ird, r_ord;
	uint8_t offer;
	uint16_t want_i_ird, want_i_ord, want_r_ird, want_r_ord;
};

static const struct irdord_case irdord_cases[] = {
	{1, 1, 1, 1, IW_RTR_WRITE | IW_RTR_READ, 1, 1, 1, 1},
	/* min both ways: responder ord = min(8, 16), ird = min(2, 4) */
	{16, 4, 2, 8, IW_RTR_WRITE | IW_RTR_READ, 8, 2, 2, 8},
	{200, 200, 128, 128, IW_RTR_WRITE, 128, 128, 128, 128},
	{0, 0, 0, 0, IW_RTR_WRITE, 0, 0, 0, 0},
	/* READ RTR: responder IRD and initiator ORD at least 1 */
	{0, 0, 0, 0, IW_RTR_READ, 0, 1, 1, 0},
	{5, 0, 0, 5, IW_RTR_READ, 5, 1, 1, 5},
	/* initiator 0x3FFF ("no negotiation"): the responder keeps its own */
	{0x3FFF, 0x3FFF, 4, 8, IW_RTR_WRITE, 8, 4, 4, 8},
	{0x3FFF, 2, 4, 8, IW_RTR_WRITE, 8, 2, 2, 8},
};

START_TEST(irdord_table)
{
	for (size_t k = 0; k < sizeof(irdord_cases) / sizeof(irdord_cases[0]); k++) {
		const struct irdord_case *t = &irdord_cases[k];
		struct side si = side_default(), sr = side_default();
		struct conn *c;

		si.ird = t->i_ird;
		si.ord = t->i_ord;
		sr.ird = t->r_ird;
		sr.ord = t->r_ord;
		si.o.rtr_offer = t->offer;
		c = run(&si, &sr, _i);
		agreed(c);
		ck_assert_msg(c->i.res.ird == t->want_i_ird && c->i.res.ord == t->want_i_ord &&
				      c->r.res.ird == t->want_r_ird && c->r.res.ord == t->want_r_ord,
			      "case %zu: i %u/%u r %u/%u", k, c->i.res.ird, c->i.res.ord,
			      c->r.res.ird, c->r.res.ord);
		/* The Reply carries the responder's negotiated values. */
		ck_assert_uint_eq(((c->rep[20] << 8) | c->rep[21]) & 0x3FFF, t->want_r_ird);
		ck_assert_uint_eq(((c->rep[22] << 8) | c->rep[23]) & 0x3FFF, t->want_r_ord);
	}
}
END_TEST

START_TEST(irdord_reply_3fff)
{
	/* irdma's echo of "no negotiation": keep ours. A, WRITE, 0x3FFF both. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 4, 5, KEY_REP "50 02 00 04 bf ff bf ff", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.rtr, IW_RTR_WRITE);
	ck_assert_uint_eq(hs1.res.ird, 4);
	ck_assert_uint_eq(hs1.res.ord, 5);
}
END_TEST

START_TEST(irdord_reply_ord_above_our_ird)
{
	/* A strict responder whose ORD 9 exceeds our IRD 4: LLP 0x06. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 4, 4, KEY_REP "50 02 00 04 80 04 80 09", _i, &used),
			 -EPROTO);
	ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_IRD);
	ck_assert_uint_eq(hs1.err_term, 0x2006);
	ck_assert_ptr_nonnull(strstr(hs1.err_msg, "IRD"));
	ck_assert_uint_eq(used, 24);
}
END_TEST

START_TEST(irdord_reply_lowers_ours)
{
	/* Reply IRD 2 / ORD 3 to our 10/10: ord min(10, 2), ird 3. */
	size_t used;

	ck_assert_int_eq(reply_to(&hs1, NULL, 10, 10, KEY_REP "50 02 00 04 80 02 80 03", _i, &used),
			 IW_HS_EV_REPLY);
	ck_assert_uint_eq(hs1.res.ird, 3);
	ck_assert_uint_eq(hs1.res.ord, 2);
}
END_TEST

START_TEST(irdord_request_3fff_one_side)
{
	/* Request IRD 0x3FFF, ORD 2: our ORD stays 6, our IRD min(6, 2). */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "50 02 00 04 bf ff 80 02", _i);
	ck_assert_uint_eq(hs2.peer.ird, 0x3FFF);
	ck_assert_uint_eq(hs2.peer.ord, 2);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 6, 6, NULL, 0), 0);
	ck_assert_uint_eq(hs2.res.ord, 6);
	ck_assert_uint_eq(hs2.res.ird, 2);
	tx_is(&hs2, KEY_REP "50 02 00 04 80 02 80 06");
}
END_TEST

START_TEST(irdord_out_of_range)
{
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "50 02 00 04 80 01 c0 01", _i);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 0x4000, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 0x4000, NULL, 0), -EINVAL);
	ck_assert_int_eq(hs2.state, IW_HS_HAVE_REQ);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 0x3FFF, 0x3FFF, NULL, 0), 0);
}
END_TEST

/* -------------------------------------------------------- private data */

static uint8_t pd_a[IW_MPA_PD_MAX + 1], pd_b[IW_MPA_PD_MAX + 1];

static void fill_pd(void)
{
	for (size_t k = 0; k < sizeof(pd_a); k++) {
		pd_a[k] = (uint8_t)(k * 7 + 3);
		pd_b[k] = (uint8_t)(k * 13 + 1);
	}
}

START_TEST(pd_sizes_enhanced)
{
	static const uint16_t sizes[] = {0, 1, 252, 256, 507, 508};

	fill_pd();
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct side si = side_default(), sr = side_default();
		struct conn *c;

		si.pd = pd_a;
		si.pd_len = sizes[k];
		sr.pd = pd_b;
		sr.pd_len = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1 - k];
		c = run(&si, &sr, _i);
		agreed(c);
		ck_assert_uint_eq(c->req_len, 24u + si.pd_len);
		ck_assert_uint_eq(c->rep_len, 24u + sr.pd_len);
		pd_eq(&c->i.peer, pd_b, sr.pd_len);
		pd_eq(&c->r.peer, pd_a, si.pd_len);
		/* PD_Length counts the block. */
		ck_assert_uint_eq((c->req[18] << 8) | c->req[19], 4u + si.pd_len);
	}
}
END_TEST

START_TEST(pd_over_cap)
{
	struct iw_mpa_opts o;
	struct side si = side_default(), sr = side_default();
	struct conn *c;

	fill_pd();
	iw_mpa_opts_default(&o);
	/* 508 + block = 512: the last that fits. */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 509), -EMSGSIZE);
	ck_assert_int_eq(hs1.state, IW_HS_FAILED);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 508), 0);
	/* Rev 1 has no block: 512 of ULP data. */
	o.rev = 1;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 512), 0);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 513), -EMSGSIZE);
	/* Chelsio's 255 (a u8) and siw's 256, block included. */
	iw_mpa_opts_default(&o);
	o.pd_cap = 255;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 251), 0);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 252), -EMSGSIZE);
	o.pd_cap = 256;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 252), 0);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 253), -EMSGSIZE);
	o.pd_cap = 0; /* means 512 */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, pd_a, 508), 0);

	/* Responder: over the cap, nothing changes; then a smaller one goes. */
	sr.pd = pd_b;
	sr.pd_len = 509;
	c = run(&si, &sr, _i);
	ck_assert_int_eq(c->accept_rc, -EMSGSIZE);
	ck_assert_int_eq(c->r.state, IW_HS_HAVE_REQ);
	ck_assert(iw_mpa_hs_tx(&c->r, NULL) == NULL);
	ck_assert_int_eq(iw_mpa_hs_accept(&c->r, 1, 1, pd_b, 508), 0);
	ck_assert_int_eq(c->r.state, IW_HS_SEND_REP);
}
END_TEST

/* ------------------------------------------------------- hostile frames */

static void bad_request(const char *hex, enum iw_wire_err want, int seg_i)
{
	struct seg sg = seg_of(seg_i);
	uint8_t b[WIRE_MAX];
	size_t n = unhex(b, hex), used;

	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, NULL, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(feed(&hs2, b, n, &sg, &used), -EPROTO);
	ck_assert_int_eq(hs2.state, IW_HS_FAILED);
	ck_assert_int_eq(hs2.err, want);
	ck_assert_uint_eq(hs2.err_term, IW_TERM_LLP_BAD_FRAME);
	ck_assert_ptr_nonnull(hs2.err_msg);
	ck_assert_uint_le(used, n);
	/* Sticky: nothing more is taken. */
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, b, n, &used), -EPROTO);
	ck_assert_uint_eq(used, 0);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, NULL, 0), -EINVAL);
	ck_assert(iw_mpa_hs_tx(&hs2, NULL) == NULL);
}

START_TEST(hostile_request_key)
{
	/* A Reply key where a Request belongs (both sides initiators). */
	bad_request(KEY_REP "50 02 00 04 80 01 c0 01", IW_WERR_MPA_KEY, _i);
	bad_request("47 45 54 20 2f 20 48 54 54 50 2f 31 2e 31 0d 0a 0d 0a 00 00", IW_WERR_MPA_KEY,
		    _i);
}
END_TEST

START_TEST(hostile_request_rev)
{
	bad_request(KEY_REQ "40 00 00 00", IW_WERR_MPA_REV, _i); /* pre-RFC MPA */
	bad_request(KEY_REQ "50 03 00 04 80 01 c0 01", IW_WERR_MPA_REV, _i);
	bad_request(KEY_REQ "50 ff 00 00", IW_WERR_MPA_REV, _i);
}
END_TEST

START_TEST(hostile_request_lengths)
{
	bad_request(KEY_REQ "40 01 02 01", IW_WERR_MPA_PD_LEN, _i); /* 513 */
	bad_request(KEY_REQ "40 01 ff ff", IW_WERR_MPA_PD_LEN, _i);
	bad_request(KEY_REQ "50 02 00 02 80 01", IW_WERR_MPA_ENH_SHORT, _i);
}
END_TEST

START_TEST(hostile_key_error_consumes_at_most_the_header)
{
	/* Byte by byte the key error shows at octet 16; never past the header. */
	struct seg sg = seg_of(_i);
	uint8_t b[WIRE_MAX];
	size_t n = unhex(b, KEY_REP "50 02 00 04 80 01 c0 01 de ad be ef"), used;

	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, NULL, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(feed(&hs2, b, n, &sg, &used), -EPROTO);
	ck_assert_uint_ge(used, 16);
	ck_assert_uint_le(used, 20);
	if (_i == SEG_BYTE)
		ck_assert_uint_eq(used, 16);
}
END_TEST

START_TEST(hostile_reply_frames)
{
	static const struct {
		const char *hex;
		enum iw_wire_err err;
	} bad[] = {
		{KEY_REQ "50 02 00 04 80 01 80 01", IW_WERR_MPA_KEY},
		{KEY_REP "50 00 00 00", IW_WERR_MPA_REV},
		{KEY_REP "50 03 00 04 80 01 80 01", IW_WERR_MPA_REV},
		{KEY_REP "50 02 02 01", IW_WERR_MPA_PD_LEN},
		{KEY_REP "50 02 00 03 80 01 80", IW_WERR_MPA_ENH_SHORT},
	};
	size_t used;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(reply_to(&hs1, NULL, 1, 1, bad[k].hex, _i, &used), -EPROTO);
		ck_assert_int_eq(hs1.state, IW_HS_FAILED);
		ck_assert_int_eq(hs1.err, bad[k].err);
		/* Rules say: TERMINATE LLP 0x04 (siw sends it for a bad key). */
		ck_assert_uint_eq(hs1.err_term, IW_TERM_LLP_BAD_FRAME);
		ck_assert_ptr_nonnull(strstr(hs1.err_msg, "Reply"));
		ck_assert_int_eq(iw_mpa_hs_recv(&hs1, (const uint8_t *)"x", 1, &used), -EPROTO);
		ck_assert_uint_eq(used, 0);
	}
}
END_TEST

START_TEST(truncated_frame_waits)
{
	/* A frame cut short is "need more": everything consumed, no event. */
	struct seg sg = seg_of(_i);
	uint8_t b[WIRE_MAX];
	size_t n = unhex(b, KEY_REQ "50 02 00 0a 80 01 c0 01 01 02 03 04 05 06"), used;

	for (size_t cut = 0; cut < n; cut++) {
		ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, NULL, 0, 0, NULL, 0), 0);
		ck_assert_int_eq(feed(&hs2, b, cut, &sg, &used), IW_HS_EV_NONE);
		ck_assert_uint_eq(used, cut);
		ck_assert_int_eq(hs2.state, IW_HS_WAIT_REQ);
		ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EINVAL);
		/* The rest completes it. */
		ck_assert_int_eq(feed(&hs2, b + cut, n - cut, &sg, &used), IW_HS_EV_REQUEST);
		ck_assert_uint_eq(used, n - cut);
		pd_eq(&hs2.peer, (const uint8_t *)"\x01\x02\x03\x04\x05\x06", 6);
	}
}
END_TEST

START_TEST(trailing_fpdu_after_reply)
{
	/* The Reply and the start of an FPDU in one read: only the Reply is
	 * consumed; the rest is for the FPDU decoder. */
	struct seg sg = seg_of(_i);
	uint8_t b[WIRE_MAX], w[WIRE_MAX];
	size_t n = unhex(b, KEY_REP "50 02 00 06 80 01 80 01 6f 6b 00 0e c1 00 00 00 00 01"), used;

	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 1, NULL, 0), 0);
	drain(&hs1, w, &sg);
	ck_assert_int_eq(feed(&hs1, b, n, &sg, &used), IW_HS_EV_REPLY);
	ck_assert_uint_eq(used, 26);
	pd_eq(&hs1.peer, (const uint8_t *)"ok", 2);
	ck_assert_int_eq(iw_mpa_hs_recv(&hs1, b + 26, n - 26, &used), IW_HS_EV_NONE);
	ck_assert_uint_eq(used, 0);
	ck_assert_int_eq(hs1.state, IW_HS_DONE);
}
END_TEST

START_TEST(trailing_bytes_after_request)
{
	/* Octets after the Request (an initiator that does not wait): the
	 * responder takes the Request only and leaves them. */
	struct seg sg = seg_of(_i);
	uint8_t b[WIRE_MAX];
	size_t n = unhex(b, KEY_REQ "50 02 00 04 80 01 c0 01 00 0e c1 00"), used;

	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, NULL, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(feed(&hs2, b, n, &sg, &used), IW_HS_EV_REQUEST);
	ck_assert_uint_eq(used, 24);
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, b + 24, n - 24, &used), IW_HS_EV_NONE);
	ck_assert_uint_eq(used, 0);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), 0);
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, b + 24, n - 24, &used), IW_HS_EV_NONE);
	ck_assert_uint_eq(used, 0);
	iw_mpa_hs_tx_done(&hs2, 1000);
	ck_assert_int_eq(hs2.state, IW_HS_DONE);
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, b + 24, n - 24, &used), IW_HS_EV_NONE);
	ck_assert_uint_eq(used, 0);
}
END_TEST

/* ---------------------------------------------------------- tx and state */

START_TEST(tx_partial_writes)
{
	const uint8_t *p0, *p;
	size_t len;

	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 1, "abcd", 4), 0);
	p0 = iw_mpa_hs_tx(&hs1, &len);
	ck_assert_uint_eq(len, 28);
	iw_mpa_hs_tx_done(&hs1, 0);
	ck_assert_int_eq(hs1.state, IW_HS_SEND_REQ);
	iw_mpa_hs_tx_done(&hs1, 10);
	p = iw_mpa_hs_tx(&hs1, &len);
	ck_assert_ptr_eq(p, p0 + 10);
	ck_assert_uint_eq(len, 18);
	ck_assert_int_eq(hs1.state, IW_HS_SEND_REQ);
	iw_mpa_hs_tx_done(&hs1, 17);
	ck_assert_int_eq(hs1.state, IW_HS_SEND_REQ);
	iw_mpa_hs_tx_done(&hs1, 5); /* more than pending: clamped */
	ck_assert_int_eq(hs1.state, IW_HS_WAIT_REP);
	ck_assert(iw_mpa_hs_tx(&hs1, &len) == NULL);
	ck_assert_uint_eq(len, 0);
	iw_mpa_hs_tx_done(&hs1, 1); /* nothing pending: no-op */
	ck_assert_int_eq(hs1.state, IW_HS_WAIT_REP);
	ck_assert(iw_mpa_hs_tx(NULL, &len) == NULL);
	iw_mpa_hs_tx_done(NULL, 1);
}
END_TEST

START_TEST(reply_before_request_written)
{
	/* The Reply may be taken while the Request is still being written;
	 * the rest of the Request stays pending and goes out first. */
	struct seg sg = seg_of(_i);
	size_t used, len;

	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 1, NULL, 0), 0);
	iw_mpa_hs_tx_done(&hs1, 3);
	ck_assert_int_eq(feed_hex(&hs1, KEY_REP "50 02 00 04 80 01 80 01", &sg, &used),
			 IW_HS_EV_REPLY);
	ck_assert_int_eq(hs1.state, IW_HS_DONE);
	ck_assert_ptr_nonnull(iw_mpa_hs_tx(&hs1, &len));
	ck_assert_uint_eq(len, 21);
	iw_mpa_hs_tx_done(&hs1, len);
	ck_assert_int_eq(hs1.state, IW_HS_DONE);
}
END_TEST

START_TEST(wrong_state_calls)
{
	size_t used = 99;
	struct seg sg = seg_of(_i);

	/* initiator cannot accept/reject */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 1, NULL, 0), 0);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs1, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs1, NULL, 0), -EINVAL);
	/* responder before the Request */
	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, NULL, 0, 0, NULL, 0), 0);
	ck_assert(iw_mpa_hs_tx(&hs2, NULL) == NULL);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, NULL, 0), -EINVAL);
	/* NULL arguments */
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, NULL, 1, &used), -EINVAL);
	ck_assert_uint_eq(used, 0);
	ck_assert_int_eq(iw_mpa_hs_recv(NULL, (const uint8_t *)"x", 1, &used), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, NULL, 0, &used), IW_HS_EV_NONE);
	ck_assert_int_eq(iw_mpa_hs_recv(&hs2, (const uint8_t *)"M", 1, NULL), IW_HS_EV_NONE);
	ck_assert_uint_eq(hs2.rx_got, 1);
	ck_assert_int_eq(iw_mpa_hs_accept(NULL, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(NULL, NULL, 0), -EINVAL);
	/* the Request in; then accept twice; reject after accept */
	/* ...and the rest of "MPA ID Req Frame" after that "M". */
	ck_assert_int_eq(feed_hex(&hs2, "50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 "
					"50 02 00 04 80 01 c0 01",
				  &sg, &used), IW_HS_EV_REQUEST);
	ck_assert_uint_eq(used, 23);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 5), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), 0);
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(init_errors)
{
	struct iw_mpa_opts o;

	ck_assert_int_eq(iw_mpa_hs_init(NULL, true, NULL, 1, 1, NULL, 0), -EINVAL);
	iw_mpa_opts_default(&o);
	o.rev = 0;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(hs1.state, IW_HS_FAILED);
	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, &o, 0, 0, NULL, 0), -EINVAL);
	o.rev = 3;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, NULL, 0), -EINVAL);
	iw_mpa_opts_default(&o);
	o.rtr_offer = 0x08;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, NULL, 0), -EINVAL);
	iw_mpa_opts_default(&o);
	o.rtr_accept = 0x10;
	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, &o, 0, 0, NULL, 0), -EINVAL);
	iw_mpa_opts_default(&o);
	o.pd_cap = 513;
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, NULL, 0), -EINVAL);
	iw_mpa_opts_default(&o);
	o.rtr_offer = 0; /* A with no RTR type */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, NULL, 0), -EINVAL);
	o.p2p = false; /* fine without A */
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, &o, 1, 1, NULL, 0), 0);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 0x4000, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 0x4000, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_init(&hs1, true, NULL, 1, 1, NULL, 1), -EINVAL);
	/* responder ignores IRD/ORD/pd at init */
	ck_assert_int_eq(iw_mpa_hs_init(&hs2, false, NULL, 0x4000, 0x4000, NULL, 9), 0);
	ck_assert_int_eq(hs2.state, IW_HS_WAIT_REQ);
}
END_TEST

START_TEST(opts_replaced_before_accept)
{
	/* iw_conn_param.mpa on accept: the glue swaps the responder's options. */
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	request_to(&hs2, &o, KEY_REQ "10 02 00 04 80 01 c0 01", _i);
	hs2.opts.rtr_accept = IW_RTR_READ;
	hs2.opts.crc = false;
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), 0);
	tx_is(&hs2, KEY_REP "10 02 00 04 80 01 40 01");
	ck_assert(!hs2.res.crc);
	ck_assert_uint_eq(hs2.res.rtr, IW_RTR_READ);

	request_to(&hs2, &o, KEY_REQ "50 02 00 04 80 01 c0 01", _i);
	hs2.opts.rev = 7;
	ck_assert_int_eq(iw_mpa_hs_accept(&hs2, 1, 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_mpa_hs_reject(&hs2, NULL, 0), -EINVAL);
	ck_assert_int_eq(hs2.state, IW_HS_HAVE_REQ);
}
END_TEST

/* ------------------------------------------------------------ properties */

/* Random octets (often behind a valid key) to a fresh side, whole and one
 * octet at a time: the same verdict, never more than the frame consumed. */
START_TEST(prop_hostile_bytes)
{
	uint32_t s = 0x1234567u + (uint32_t)_i;
	static uint8_t b[600];

	for (int iter = 0; iter < 400; iter++) {
		bool initiator = rnd(&s) & 1;
		size_t n = rnd(&s) % sizeof(b), used_w, used_b = 0;
		int rc_w, rc_b = IW_HS_EV_NONE;
		enum iw_wire_err err_w;

		for (size_t k = 0; k < n; k++)
			b[k] = (uint8_t)rnd(&s);
		if (n >= 16 && (rnd(&s) & 3))
			memcpy(b, initiator ? IW_MPA_KEY_REP : IW_MPA_KEY_REQ, 16);
		if (n >= 18 && (rnd(&s) & 1))
			b[17] = (uint8_t)(1 + (rnd(&s) & 1));
		if (n >= 20 && (rnd(&s) & 1)) {
			b[18] = (uint8_t)(rnd(&s) & 1);
			b[19] = (uint8_t)rnd(&s);
		}

		ck_assert_int_eq(iw_mpa_hs_init(&hs1, initiator, NULL, 8, 8, NULL, 0), 0);
		iw_mpa_hs_tx_done(&hs1, 1000);
		rc_w = iw_mpa_hs_recv(&hs1, b, n, &used_w);
		err_w = hs1.err;
		ck_assert_uint_le(used_w, n);
		if (rc_w > 0)
			ck_assert_uint_eq(used_w, 20u + ((b[18] << 8) | b[19]));
		else if (rc_w == IW_HS_EV_NONE)
			ck_assert_uint_eq(used_w, n);
		else
			ck_assert_int_eq(rc_w, -EPROTO);

		ck_assert_int_eq(iw_mpa_hs_init(&hs1, initiator, NULL, 8, 8, NULL, 0), 0);
		iw_mpa_hs_tx_done(&hs1, 1000);
		for (size_t k = 0; k < n; k++) {
			size_t c;

			rc_b = iw_mpa_hs_recv(&hs1, b + k, 1, &c);
			used_b += c;
			if (rc_b != IW_HS_EV_NONE)
				break;
		}
		ck_assert_int_eq(rc_b, rc_w);
		if (rc_w != -EPROTO)
			ck_assert_uint_eq(used_b, used_w);
		ck_assert_int_eq(hs1.err, err_w);
	}
}
END_TEST

/* Random options on both sides: whatever the outcome, the two sides end in
 * a consistent pair of states, and when both are DONE they agree. */
START_TEST(prop_random_options)
{
	uint32_t s = 0xC0FFEEu + (uint32_t)_i;

	fill_pd();
	for (int iter = 0; iter < 150; iter++) {
		struct side si = side_default(), sr = side_default();
		struct conn *c;

		si.o.rev = (uint8_t)(1 + (rnd(&s) & 1));
		sr.o.rev = (uint8_t)(1 + (rnd(&s) & 1));
		si.o.enhanced = rnd(&s) & 1;
		sr.o.enhanced = rnd(&s) & 3;
		si.o.p2p = rnd(&s) & 3;
		sr.o.p2p = rnd(&s) & 3;
		si.o.rtr_offer = (uint8_t)(1 + rnd(&s) % 7);
		sr.o.rtr_accept = (uint8_t)(rnd(&s) % 8);
		sr.o.rtr_force = (rnd(&s) & 7) == 0;
		si.o.crc = rnd(&s) & 1;
		sr.o.crc = rnd(&s) & 1;
		si.o.markers = (rnd(&s) & 3) == 0;
		sr.o.markers = (rnd(&s) & 3) == 0;
		si.o.accept_markers = rnd(&s) & 1;
		sr.o.accept_markers = rnd(&s) & 1;
		si.ird = (uint16_t)(rnd(&s) % 40);
		si.ord = (uint16_t)(rnd(&s) % 40);
		sr.ird = (uint16_t)(rnd(&s) % 40);
		sr.ord = (uint16_t)(rnd(&s) % 40);
		si.pd = pd_a;
		si.pd_len = (uint16_t)(rnd(&s) % 200);
		sr.pd = pd_b;
		sr.pd_len = (uint16_t)(rnd(&s) % 200);
		c = run(&si, &sr, (int)(rnd(&s) % NSEG));
		if (c->accept_rc == -EPROTO) {
			ck_assert_int_eq(c->rep_ev, IW_HS_EV_REJECT);
			ck_assert_int_eq(c->i.state, IW_HS_REJECTED);
		} else if (c->rep_ev == -EPROTO) {
			ck_assert_int_eq(c->i.state, IW_HS_FAILED);
			ck_assert_int_eq(c->r.state, IW_HS_DONE);
			ck_assert_ptr_nonnull(c->i.err_msg);
		} else {
			agreed(c);
			pd_eq(&c->i.peer, pd_b, sr.pd_len);
		}
	}
}
END_TEST

Suite *suite_mpa_hs(void)
{
	Suite *s = suite_create("mpa_hs");
	TCase *tc = tcase_create("basics");

	tcase_add_test(tc, opts_default_values);
	tcase_add_test(tc, state_names);
	tcase_add_test(tc, memory_budget);
	tcase_add_test(tc, init_errors);
	tcase_add_test(tc, tx_partial_writes);
	tcase_add_loop_test(tc, wrong_state_calls, 0, NSEG);
	tcase_add_loop_test(tc, opts_replaced_before_accept, 0, NSEG);
	tcase_add_loop_test(tc, reply_before_request_written, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("bytes");
	tcase_add_test(tc, bytes_default_request);
	tcase_add_loop_test(tc, bytes_default_reply, 0, NSEG);
	tcase_add_test(tc, bytes_markers_read_only_request);
	tcase_add_test(tc, bytes_send_rtr_request);
	tcase_add_test(tc, bytes_rev1_request);
	tcase_add_loop_test(tc, bytes_siw_markers_reject, 0, NSEG);
	tcase_add_loop_test(tc, bytes_app_reject_enhanced, 0, NSEG);
	tcase_add_loop_test(tc, bytes_app_reject_rev1, 0, NSEG);
	tcase_add_loop_test(tc, bytes_reject_over_cap, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("peers");
	tcase_add_loop_test(tc, siw_initiator_without_a, 0, NSEG);
	tcase_add_loop_test(tc, perftest_initiator_zero_ird_ord, 0, NSEG);
	tcase_add_loop_test(tc, siw_responder_write, 0, NSEG);
	tcase_add_loop_test(tc, siw_responder_read_only_offer, 0, NSEG);
	tcase_add_loop_test(tc, siw_responder_no_crc_flag, 0, NSEG);
	tcase_add_loop_test(tc, siw_caps_ird_ord_128, 0, NSEG);
	tcase_add_loop_test(tc, chelsio_reply_read_when_both_offered, 0, NSEG);
	tcase_add_loop_test(tc, chelsio_reply_read_when_write_offered, 0, NSEG);
	tcase_add_loop_test(tc, chelsio_like_responder_forces_read, 0, NSEG);
	tcase_add_loop_test(tc, intel_no_negotiation_reply, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("negotiation");
	tcase_add_loop_test(tc, rev_matrix, 0, NSEG);
	tcase_add_loop_test(tc, rev1_peer_request_smbd_blob, 0, NSEG);
	tcase_add_loop_test(tc, rev1_reply_to_rev2_request, 0, NSEG);
	tcase_add_loop_test(tc, rev2_reply_to_rev1_request, 0, NSEG);
	tcase_add_loop_test(tc, rev2_without_enhanced, 0, NSEG);
	tcase_add_loop_test(tc, crc_matrix, 0, NSEG);
	tcase_add_loop_test(tc, markers_matrix, 0, NSEG);
	tcase_add_loop_test(tc, rtr_matrix, 0, NSEG);
	tcase_add_loop_test(tc, rtr_send_only_when_configured, 0, NSEG);
	tcase_add_loop_test(tc, responder_without_p2p_rejects_a, 0, NSEG);
	tcase_add_loop_test(tc, reply_lacks_a, 0, NSEG);
	tcase_add_loop_test(tc, reply_a_without_rtr, 0, NSEG);
	tcase_add_loop_test(tc, reply_unoffered_send, 0, NSEG);
	tcase_add_loop_test(tc, reply_several_rtr_bits, 0, NSEG);
	tcase_add_loop_test(tc, reply_a_to_request_without_a, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("irdord");
	tcase_add_loop_test(tc, irdord_table, 0, NSEG);
	tcase_add_loop_test(tc, irdord_reply_3fff, 0, NSEG);
	tcase_add_loop_test(tc, irdord_reply_ord_above_our_ird, 0, NSEG);
	tcase_add_loop_test(tc, irdord_reply_lowers_ours, 0, NSEG);
	tcase_add_loop_test(tc, irdord_request_3fff_one_side, 0, NSEG);
	tcase_add_loop_test(tc, irdord_out_of_range, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("private_data");
	tcase_add_loop_test(tc, pd_sizes_enhanced, 0, NSEG);
	tcase_add_loop_test(tc, pd_over_cap, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_loop_test(tc, hostile_request_key, 0, NSEG);
	tcase_add_loop_test(tc, hostile_request_rev, 0, NSEG);
	tcase_add_loop_test(tc, hostile_request_lengths, 0, NSEG);
	tcase_add_loop_test(tc, hostile_key_error_consumes_at_most_the_header, 0, NSEG);
	tcase_add_loop_test(tc, hostile_reply_frames, 0, NSEG);
	tcase_add_loop_test(tc, truncated_frame_waits, 0, NSEG);
	tcase_add_loop_test(tc, trailing_fpdu_after_reply, 0, NSEG);
	tcase_add_loop_test(tc, trailing_bytes_after_request, 0, NSEG);
	suite_add_tcase(s, tc);

	tc = tcase_create("properties");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, prop_hostile_bytes, 0, 4);
	tcase_add_loop_test(tc, prop_random_options, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}
