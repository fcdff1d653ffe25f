/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FPDU stream decoder: the shared vectors fed whole, split in two at every
 * offset and byte by byte; encode -> decode round trips at every marker
 * phase; every error the framing can raise; direct placement.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/mpa_rx.h"
#include "suites.h"
#include "testutil.h"

/* ck_assert logs every passing check, which dominates loops that run
 * millions of them; this only reports failures. */
#define REQUIRE(c)                                                                          \
	do {                                                                               \
		if (!(c))                                                                  \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);                 \
	} while (0)

/* Vectors from /work/shared/reference/vectors (*.iwv). */
struct rxv {
	const char *name;
	const char *hex;
	size_t hdr_len;  /* DDP + RDMAP header octets (a Terminate: the ULPDU) */
	unsigned opcode;
};

static const struct rxv vecs[] = {
	{"send_rdma_test",
	 "00 1b 41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 72 64 6d 61 5f 74 65 73"
	 " 74 00 00 00 d9 fe 24 22", 18, IW_OP_SEND},
	{"write_rdma_test",
	 "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	 " 0b c6 a8 47", 14, IW_OP_WRITE},
	{"rtr_zero_length_write",
	 "00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00 eb d3 4c 5f", 14, IW_OP_WRITE},
	{"read_request",
	 "00 2e 41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00 00 aa bb 01 00 00 00 00"
	 " 00 00 10 00 00 00 00 09 00 1f f8 b7 00 00 00 00 02 2b c8 50 75 3a 83 ac", 46,
	 IW_OP_READ_REQ},
	{"read_response",
	 "00 17 c1 42 00 aa bb 01 00 00 00 00 00 00 10 00 72 64 6d 61 5f 74 65 73 74 00 00 00"
	 " b7 fa 64 a9", 14, IW_OP_READ_RESP},
	{"terminate_llp_crc_error",
	 "00 16 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 20 02 00 00 7f e4 25 85",
	 22, IW_OP_TERMINATE},
	{"terminate_ddp_no_buffer",
	 "00 2a 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 12 02 c0 00 00 1b 41 43"
	 " 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 e8 33 97 58", 42, IW_OP_TERMINATE},
	{"atomic_fetchadd_request",
	 "00 46 41 4a 00 00 00 00 00 00 00 01 00 00 00 02 00 00 00 00 00 00 00 00 00 00 00 01"
	 " 00 1f f8 b7 00 00 00 00 02 2b c8 50 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00"
	 " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 e7 93 31 92", 70, IW_OP_ATOMIC_REQ},
	{"atomic_response",
	 "00 1e 41 4b 00 00 00 00 00 00 00 03 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00 00"
	 " 00 00 00 05 e5 b2 0f b6", 30, IW_OP_ATOMIC_RESP},
	{"immediate_data",
	 "00 1a 41 48 00 00 00 00 00 00 00 00 00 00 00 02 00 00 00 00 01 23 45 67 89 ab cd ef"
	 " 08 9a a5 3d", 26, IW_OP_IMM},
};
#define NUM_VECS ((int)(sizeof(vecs) / sizeof(vecs[0])))

/* send_rdma_test with markers on at stream offset 508 (iwarp-wire.md 5.3). */
static const char *const send_marker_508 =
	"00 1b 41 43 00 00 00 04 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 72 64 6d 61"
	" 5f 74 65 73 74 00 00 00 e5 32 94 f9";

/* write_rdma_test with markers at awkward places (octets from a bitwise
 * reference encoder, see test_mpa_tx.c). */
static const struct {
	uint32_t off;
	const char *hex;
} places[] = {
	{484, "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	      " 00 00 00 1c 3e 0b 02 90"}, /* between pad and CRC */
	{482, "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	      " 0b c6 00 00 00 1e a8 47"}, /* inside the CRC field */
	{511, "00 00 00 00 01 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73"
	      " 74 00 00 00 fc bc e5 98"}, /* inside ULPDU_Length */
	{0, "00 00 00 00 00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73"
	    " 74 00 00 00 c8 37 f0 3a"}, /* leading marker */
	{508, "00 17 c1 40 00 00 00 04 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73"
	      " 74 00 00 00 2f 24 d0 f7"}, /* inside the header */
};
#define NUM_PLACES ((int)(sizeof(places) / sizeof(places[0])))

/* ------------------------------------------------------------ driver */

#define MAX_SEGS 64
#define MAX_PAYLOAD 200000

/* What a stream decoded to. Checks event order and offsets as it goes. */
struct rec {
	int nseg;
	struct iw_ddp_seg segs[MAX_SEGS];
	size_t pay_start[MAX_SEGS]; /* where each segment's payload starts in pay */
	uint8_t pay[MAX_PAYLOAD];
	size_t plen;
	bool in_seg;
	uint32_t seg_done;
	int rc;
};

static struct rec rec_a, rec_b;

/* Decode as the QP's receive batch does (iw_fpdu_rx_next_held: CRC held
 * across calls, payload across markers as runs) instead of through
 * iw_fpdu_rx_next. Off before every test (held_off). */
static bool held;
static int runs_seen;
static int wholes_seen;

static void held_off(void)
{
	held = false;
	runs_seen = 0;
	wholes_seen = 0;
}

static void rec_reset(struct rec *r)
{
	r->nseg = 0;
	r->plen = 0;
	r->in_seg = false;
	r->seg_done = 0;
	r->rc = 0;
}

static void record(struct rec *r, const struct iw_rx_event *ev, const uint8_t *in, size_t n);

/* A run's pieces are recorded as the payload events they stand for. */
static void record_run(struct rec *r, const struct iw_fpdu_rx *rx, const struct iw_rx_event *ev,
		       const uint8_t *in, size_t n)
{
	struct iw_rx_run run;
	struct iw_rx_event piece = {.kind = IW_RX_PAYLOAD, .seg = ev->seg};
	int pieces = 0;

	REQUIRE(held);
	REQUIRE(ev->data >= in && ev->data + ev->len <= in + n);
	iw_fpdu_rx_run_begin(&run, rx, ev);
	while (iw_fpdu_rx_run_piece(&run, &piece.data, &piece.len, &piece.off)) {
		record(r, &piece, in, n);
		pieces++;
	}
	REQUIRE(pieces >= 2); /* a run crosses at least one marker */
	runs_seen++;
}

static void record(struct rec *r, const struct iw_rx_event *ev, const uint8_t *in, size_t n)
{
	ck_assert_ptr_nonnull(ev->seg);
	switch ((unsigned)ev->kind) { /* IW_RX_SEG_WHOLE is no public kind */
	case IW_RX_SEG_HDR:
		REQUIRE(!r->in_seg);
		REQUIRE((ev->seg->payload_len) == ((uint32_t)ev->seg->ulpdu_len - ev->seg->raw_hdr_len));
		r->in_seg = true;
		r->seg_done = 0;
		REQUIRE((r->nseg) < (MAX_SEGS));
		r->pay_start[r->nseg] = r->plen;
		if (ev->len) {
			/* Only held decoding hands the payload that came with
			 * the header over with it. */
			struct iw_rx_event piece = *ev;

			REQUIRE(held);
			REQUIRE(ev->off == 0);
			piece.kind = IW_RX_PAYLOAD;
			record(r, &piece, in, n);
		}
		break;
	case IW_RX_PAYLOAD:
		REQUIRE(r->in_seg);
		REQUIRE((ev->len) > (0));
		REQUIRE((ev->off) == (r->seg_done));
		/* payload is borrowed from the input, never a copy */
		REQUIRE(ev->data >= in && ev->data + ev->len <= in + n);
		REQUIRE((r->plen + ev->len) <= (MAX_PAYLOAD));
		memcpy(r->pay + r->plen, ev->data, ev->len);
		r->plen += ev->len;
		r->seg_done += (uint32_t)ev->len;
		REQUIRE((r->seg_done) <= (ev->seg->payload_len));
		break;
	case IW_RX_SEG_END:
		REQUIRE(r->in_seg);
		REQUIRE((r->seg_done) == (ev->seg->payload_len));
		r->segs[r->nseg++] = *ev->seg;
		r->in_seg = false;
		break;
	case IW_RX_SEG_WHOLE: {
		/* The header (with all its payload) and the end in one. */
		struct iw_rx_event part = *ev;

		REQUIRE(held);
		wholes_seen++;
		part.kind = IW_RX_SEG_HDR;
		record(r, &part, in, n);
		part.kind = IW_RX_SEG_END;
		record(r, &part, in, n);
		break;
	}
	default:
		ck_abort_msg("unknown event kind %d", ev->kind);
	}
}

/* Feed one input piece completely (or up to an error). */
static int feed(struct iw_fpdu_rx *rx, struct rec *r, const uint8_t *p, size_t n)
{
	const uint8_t *in = p;
	size_t in_n = n;

	if (r->rc)
		return r->rc;
	for (;;) {
		struct iw_rx_event ev;
		size_t used = 12345;
		int rc = held ? iw_fpdu_rx_next_held(rx, &ev, p, n, &used)
			      : iw_fpdu_rx_next(rx, &ev, p, n, &used);

		REQUIRE((used) <= (n));
		if (rc < 0) {
			r->rc = rc;
			break;
		}
		if (rc == 0) {
			REQUIRE((used) == (n));
			break;
		}
		REQUIRE((rc) == (1));
		REQUIRE((used) > (0));
		if (ev.kind == IW_RX_PAYLOAD_RUN)
			record_run(r, rx, &ev, in, in_n);
		else
			record(r, &ev, in, in_n);
		p += used;
		n -= used;
		if (n == 0)
			break;
	}
	if (held)
		iw_fpdu_rx_crc_flush(rx); /* the input goes away */
	return r->rc;
}

static int feed_chunks(struct iw_fpdu_rx *rx, struct rec *r, const uint8_t *p, size_t n,
		       size_t chunk)
{
	for (size_t at = 0; at < n; at += chunk) {
		int rc = feed(rx, r, p + at, n - at < chunk ? n - at : chunk);

		if (rc)
			return rc;
	}
	return 0;
}

/* Whole, split in two at every offset, byte by byte: all must give what
 * the whole feed gave. */
static void decode_every_way(const uint8_t *p, size_t n, bool crc, bool markers, uint32_t off,
			     struct rec *whole)
{
	struct iw_fpdu_rx rx;

	rec_reset(whole);
	iw_fpdu_rx_init(&rx, crc, markers, off, 0, 0);
	REQUIRE((feed(&rx, whole, p, n)) == (0));
	REQUIRE((iw_fpdu_rx_finish(&rx)) == (0));
	REQUIRE((rx.stream_off) == ((uint32_t)(off + n)));
	for (size_t k = 0; k <= n + 1; k++) {
		size_t cut = k <= n ? k : 1;

		rec_reset(&rec_b);
		iw_fpdu_rx_init(&rx, crc, markers, off, 0, 0);
		if (k <= n) {
			REQUIRE((feed(&rx, &rec_b, p, cut)) == (0));
			REQUIRE((feed(&rx, &rec_b, p + cut, n - cut)) == (0));
		} else {
			REQUIRE((feed_chunks(&rx, &rec_b, p, n, 1)) == (0));
		}
		REQUIRE((iw_fpdu_rx_finish(&rx)) == (0));
		REQUIRE((rec_b.nseg) == (whole->nseg));
		REQUIRE((rec_b.plen) == (whole->plen));
		REQUIRE(memcmp(rec_b.pay, whole->pay, whole->plen) == 0);
		for (int i = 0; i < whole->nseg; i++) {
			const struct iw_ddp_seg *a = &whole->segs[i], *b = &rec_b.segs[i];

			REQUIRE((a->fpdu_off) == (b->fpdu_off));
			REQUIRE((a->crc) == (b->crc));
			REQUIRE((a->raw_hdr_len) == (b->raw_hdr_len));
			REQUIRE(memcmp(a->raw_hdr, b->raw_hdr, a->raw_hdr_len) == 0);
			REQUIRE(memcmp(&a->ddp, &b->ddp, sizeof(a->ddp)) == 0);
		}
	}
}

/* ------------------------------------------------------------ vectors */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

START_TEST(t_vectors)
{
	const struct rxv *v = &vecs[_i];
	uint8_t fp[128];
	size_t len = tu_unhex(fp, sizeof(fp), v->hex);
	size_t ulpdu = (size_t)(fp[0] << 8 | fp[1]);
	const struct iw_ddp_seg *s;

	decode_every_way(fp, len, true, false, 77, &rec_a);
	ck_assert_int_eq(rec_a.nseg, 1);
	s = &rec_a.segs[0];
	ck_assert_uint_eq(s->fpdu_off, 77);
	ck_assert_uint_eq(s->ulpdu_len, ulpdu);
	ck_assert_uint_eq(s->raw_hdr_len, v->hdr_len);
	ck_assert(memcmp(s->raw_hdr, fp + 2, v->hdr_len) == 0);
	ck_assert_uint_eq(iw_ddp_opcode(&s->ddp), v->opcode);
	ck_assert_uint_eq(s->payload_len, ulpdu - v->hdr_len);
	ck_assert_uint_eq(rec_a.plen, ulpdu - v->hdr_len);
	ck_assert(memcmp(rec_a.pay, fp + 2 + v->hdr_len, rec_a.plen) == 0);
	ck_assert_uint_eq(s->crc, le32(fp + len - 4));
}
END_TEST

/* The decoded header fields, beyond the framing. */
START_TEST(t_vector_fields)
{
	uint8_t fp[128];
	const struct iw_ddp_seg *s = &rec_a.segs[0];
	struct iw_fpdu_rx rx;

#define DECODE(i)                                                                          \
	do {                                                                               \
		size_t n_ = tu_unhex(fp, sizeof(fp), vecs[i].hex);                            \
		rec_reset(&rec_a);                                                         \
		iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);                                \
		ck_assert_int_eq(feed(&rx, &rec_a, fp, n_), 0);                            \
		ck_assert_int_eq(rec_a.nseg, 1);                                           \
	} while (0)

	DECODE(0); /* Send */
	ck_assert(!iw_ddp_tagged(&s->ddp) && iw_ddp_last(&s->ddp));
	ck_assert_uint_eq(s->ddp.qn, 0);
	ck_assert_uint_eq(s->ddp.msn, 1);
	ck_assert_uint_eq(s->ddp.mo, 0);
	ck_assert(memcmp(rec_a.pay, "rdma_test", 9) == 0);

	DECODE(1); /* Write */
	ck_assert(iw_ddp_tagged(&s->ddp));
	ck_assert_uint_eq(s->ddp.stag, 0x001ff8b7);
	ck_assert_uint_eq(s->ddp.to, 0x22bc850);

	DECODE(3); /* Read Request */
	ck_assert_uint_eq(s->ddp.qn, 1);
	ck_assert_uint_eq(s->rdmap.u.read_req.sink_stag, 0x00aabb01);
	ck_assert_uint_eq(s->rdmap.u.read_req.sink_to, 0x1000);
	ck_assert_uint_eq(s->rdmap.u.read_req.read_size, 9);
	ck_assert_uint_eq(s->rdmap.u.read_req.src_stag, 0x001ff8b7);
	ck_assert_uint_eq(s->rdmap.u.read_req.src_to, 0x22bc850);

	DECODE(5); /* Terminate, LLP CRC */
	ck_assert_uint_eq(s->rdmap.u.term.term, IW_TERM_LLP_CRC);
	ck_assert_uint_eq(s->rdmap.u.term.hdrct, 0);

	DECODE(6); /* Terminate, DDP no buffer, with copied header */
	ck_assert_uint_eq(s->rdmap.u.term.term, IW_TERM_DDP_U_NO_BUF);
	ck_assert_uint_eq(s->rdmap.u.term.hdrct, IW_TERM_HDR_M | IW_TERM_HDR_D);
	ck_assert_uint_eq(s->rdmap.u.term.ddp_seg_len, 27);
	ck_assert_uint_eq(s->rdmap.u.term.ddp_hdr_len, 18);
	ck_assert(memcmp(s->rdmap.u.term.ddp_hdr, fp + 26, 18) == 0);

	DECODE(7); /* Atomic FetchAdd */
	ck_assert_uint_eq(s->rdmap.u.atomic_req.atomic_op, IW_ATOMIC_FETCH_ADD);
	ck_assert_uint_eq(s->rdmap.u.atomic_req.req_id, 1);
	ck_assert_uint_eq(s->rdmap.u.atomic_req.stag, 0x001ff8b7);
	ck_assert_uint_eq(s->rdmap.u.atomic_req.to, 0x22bc850);
	ck_assert_uint_eq(s->rdmap.u.atomic_req.add_swap, 1);

	DECODE(8); /* Atomic Response */
	ck_assert_uint_eq(s->ddp.qn, 3);
	ck_assert_uint_eq(s->rdmap.u.atomic_resp.req_id, 1);
	ck_assert_uint_eq(s->rdmap.u.atomic_resp.orig_value, 5);

	DECODE(9); /* Immediate Data */
	ck_assert(memcmp(s->rdmap.u.imm, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8) == 0);
	ck_assert_uint_eq(s->payload_len, 0);
#undef DECODE
}
END_TEST

/* Several FPDUs back to back in one buffer. */
START_TEST(t_back_to_back)
{
	static uint8_t buf[1024];
	size_t n = 0, offs[NUM_VECS + 1];

	for (int i = 0; i < NUM_VECS; i++) {
		offs[i] = n;
		n += tu_unhex(buf + n, sizeof(buf) - n, vecs[i].hex);
	}
	decode_every_way(buf, n, true, false, 0, &rec_a);
	ck_assert_int_eq(rec_a.nseg, NUM_VECS);
	for (int i = 0; i < NUM_VECS; i++) {
		ck_assert_uint_eq(rec_a.segs[i].fpdu_off, offs[i]);
		ck_assert_uint_eq(iw_ddp_opcode(&rec_a.segs[i].ddp), vecs[i].opcode);
	}
}
END_TEST

START_TEST(t_marker_vector)
{
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), send_marker_508);

	decode_every_way(fp, len, true, true, 508, &rec_a);
	ck_assert_int_eq(rec_a.nseg, 1);
	ck_assert_uint_eq(rec_a.segs[0].fpdu_off, 508);
	ck_assert_uint_eq(rec_a.segs[0].crc, 0xF99432E5u);
	ck_assert_uint_eq(rec_a.segs[0].ddp.msn, 1);
	ck_assert_uint_eq(rec_a.plen, 9);
	ck_assert(memcmp(rec_a.pay, "rdma_test", 9) == 0);
}
END_TEST

START_TEST(t_marker_places)
{
	held = _i >= NUM_PLACES;
	int i = _i % NUM_PLACES;
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), places[i].hex);

	decode_every_way(fp, len, true, true, places[i].off, &rec_a);
	ck_assert_int_eq(rec_a.nseg, 1);
	ck_assert_uint_eq(rec_a.segs[0].fpdu_off, places[i].off);
	ck_assert_uint_eq(rec_a.segs[0].ddp.stag, 0x001ff8b7);
	ck_assert(memcmp(rec_a.pay, "rdma_test", 9) == 0);
}
END_TEST

/* ------------------------------------------------------------ round trips */

static struct iovec tx_iov[IW_FPDU_IOV_NEED(4, IW_FPDU_MARKERS_MAX)];
static struct iw_fpdu_out tx_out;

/* Encode one FPDU (header + payload in up to three pieces) onto buf. */
static size_t put_fpdu(struct iw_fpdu_tx *tx, uint8_t *buf, size_t cap, const uint8_t *hdr,
		       size_t hdr_len, const uint8_t *payload, size_t plen)
{
	struct iovec pay[3] = {
		{(void *)payload, plen / 4},
		{(void *)(payload + plen / 4), plen / 2 - plen / 4},
		{(void *)(payload + plen / 2), plen - plen / 2},
	};
	size_t n = 0;

	tx_out.iov = tx_iov;
	tx_out.iov_cap = (int)(sizeof(tx_iov) / sizeof(tx_iov[0]));
	REQUIRE((iw_fpdu_encode(tx, &tx_out, hdr, hdr_len, pay, 3)) == (0));
	for (int i = 0; i < tx_out.iovcnt; i++) {
		REQUIRE((n + tx_out.iov[i].iov_len) <= (cap));
		memcpy(buf + n, tx_out.iov[i].iov_base, tx_out.iov[i].iov_len);
		n += tx_out.iov[i].iov_len;
	}
	return n;
}

static const uint8_t write_hdr[14] = {0xc1, 0x40, 0x00, 0x00, 0x12, 0x34,
				      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00};
static const uint8_t send_hdr[18] = {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};

static uint8_t pattern[70000];

static void fill_pattern(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 131 + (i >> 8));
}

/* One FPDU at stream offset off, decoded whole and in 3 odd chunkings. */
static void roundtrip(uint32_t off, size_t plen, bool tagged, bool markers, bool bytewise)
{
	static uint8_t wire[70000];
	struct iw_fpdu_tx tx;
	struct iw_fpdu_rx rx;
	const uint8_t *hdr = tagged ? write_hdr : send_hdr;
	size_t hl = tagged ? 14 : 18, n;
	static const size_t chunks[] = {0, 7, 509, 1};

	iw_fpdu_tx_init(&tx, true, markers, off);
	n = put_fpdu(&tx, wire, sizeof(wire), hdr, hl, pattern, plen);
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		size_t chunk = chunks[c] ? chunks[c] : n;

		if (chunk == 1 && !bytewise)
			continue;
		rec_reset(&rec_a);
		iw_fpdu_rx_init(&rx, true, markers, off, 0, 0);
		REQUIRE((feed_chunks(&rx, &rec_a, wire, n, chunk)) == (0));
		REQUIRE((iw_fpdu_rx_finish(&rx)) == (0));
		REQUIRE((rec_a.nseg) == (1));
		REQUIRE((rec_a.segs[0].fpdu_off) == (off));
		REQUIRE((rec_a.segs[0].crc) == (tx_out.crc));
		REQUIRE((rec_a.segs[0].ulpdu_len) == (hl + plen));
		REQUIRE(memcmp(rec_a.segs[0].raw_hdr, hdr, hl) == 0);
		REQUIRE((rec_a.plen) == (plen));
		REQUIRE(memcmp(rec_a.pay, pattern, plen) == 0);
		REQUIRE((rx.stream_off) == ((uint32_t)(off + n)));
	}
}

/* Markers at every 4-aligned phase, FPDU sizes up to ~1100. */
START_TEST(t_roundtrip_markers_aligned)
{
	held = _i & 1;
	fill_pattern();
	for (uint32_t off = 0; off < 1024; off += 4)
		for (size_t plen = 0; plen <= 1100; plen += (plen < 24 ? 1 : 53))
			roundtrip(off, plen, (plen & 1) != 0, true, plen < 8);
}
END_TEST

/* Every offset, so markers fall inside the length and the CRC field. */
START_TEST(t_roundtrip_markers_unaligned)
{
	held = _i & 1;
	fill_pattern();
	for (uint32_t off = 0; off < 1024; off++) {
		if ((off & 511) >= 1 && (off & 511) <= 3)
			continue; /* inside a marker */
		for (size_t plen = 0; plen < 12; plen++)
			roundtrip(off, plen, plen & 1, true, true);
	}
}
END_TEST

START_TEST(t_roundtrip_large)
{
	held = _i & 1;
	fill_pattern();
	roundtrip(0, 65535 - 14, true, false, false);   /* ULPDU 65535 */
	roundtrip(4, 65535 - 18, false, false, false);
	roundtrip(508, 60000, true, true, false);        /* 118 markers */
	roundtrip(UINT32_MAX - 7, 3000, true, true, true); /* offset wraps */
	roundtrip(UINT32_MAX - 7, 3000, false, false, true);
}
END_TEST

/* A long stream of FPDUs with markers, cut at random places. */
START_TEST(t_stream_random_cuts)
{
	held = _i & 1;
	static uint8_t wire[200000];
	struct iw_fpdu_tx tx;
	struct iw_fpdu_rx rx;
	size_t n = 0, plen_total = 0;
	unsigned seed = 12345;
	int nfpdu = 0;

	fill_pattern();
	iw_fpdu_tx_init(&tx, true, true, 0);
	while (n < sizeof(wire) - 3000 && nfpdu < MAX_SEGS) {
		size_t plen = (size_t)(rand_r(&seed) % 1000);

		n += put_fpdu(&tx, wire + n, sizeof(wire) - n, write_hdr, 14,
			      pattern + plen_total, plen);
		plen_total += plen;
		nfpdu++;
	}
	for (int round = 0; round < 20; round++) {
		size_t at = 0;

		rec_reset(&rec_a);
		iw_fpdu_rx_init(&rx, true, true, 0, 0, 0);
		while (at < n) {
			size_t c = 1 + (size_t)(rand_r(&seed) % (round < 10 ? 700 : 9));

			if (c > n - at)
				c = n - at;
			ck_assert_int_eq(feed(&rx, &rec_a, wire + at, c), 0);
			at += c;
		}
		ck_assert_int_eq(iw_fpdu_rx_finish(&rx), 0);
		ck_assert_int_eq(rec_a.nseg, nfpdu);
		ck_assert_uint_eq(rec_a.plen, plen_total);
		ck_assert(memcmp(rec_a.pay, pattern, plen_total) == 0);
	}
}
END_TEST

/* Held decoding reports the payload of a large FPDU fed whole as one run
 * across its markers, not one event per 508 octets; cut into reads of
 * every length from 1 to 1100 octets (a marker straddling each cut at
 * every phase), the payload, CRC and offsets are the same. */
START_TEST(t_held_runs)
{
	static uint8_t wire[8000];
	struct iw_fpdu_tx tx;
	struct iw_fpdu_rx rx;
	const size_t plen = 5000;

	fill_pattern();
	held = true;
	iw_fpdu_tx_init(&tx, true, true, 300);
	size_t n = put_fpdu(&tx, wire, sizeof(wire), write_hdr, 14, pattern, plen);
	for (size_t chunk = 1; chunk <= 1100; chunk++) {
		rec_reset(&rec_a);
		runs_seen = 0;
		iw_fpdu_rx_init(&rx, true, true, 300, 0, 0);
		REQUIRE(feed_chunks(&rx, &rec_a, wire, n, chunk) == 0);
		REQUIRE(iw_fpdu_rx_finish(&rx) == 0);
		REQUIRE(rec_a.nseg == 1 && rec_a.plen == plen);
		REQUIRE(memcmp(rec_a.pay, pattern, plen) == 0);
		REQUIRE(rec_a.segs[0].crc == tx_out.crc);
		REQUIRE(rx.stream_off == (uint32_t)(300 + n));
		REQUIRE(chunk < 2 * IW_MPA_MARKER_INTERVAL || runs_seen > 0);
	}
	/* Whole: one run (the header's piece aside, all payload). */
	rec_reset(&rec_a);
	runs_seen = 0;
	iw_fpdu_rx_init(&rx, true, true, 300, 0, 0);
	REQUIRE(feed(&rx, &rec_a, wire, n) == 0);
	ck_assert_int_eq(runs_seen, 1);
}
END_TEST

/* Held decoding without markers: a segment whose trailer came in the same
 * input as its header is one IW_RX_SEG_WHOLE event (payload lengths with
 * every pad, none); cut into reads of every length, the segments, payload
 * and CRCs are the same. A bad CRC is no whole event: the header comes
 * first, then the error. With the CRC off, the segment is whole too. */
static size_t put_sends(uint8_t *wire, size_t cap, bool crc)
{
	struct iw_fpdu_tx tx;
	size_t n = 0;

	iw_fpdu_tx_init(&tx, crc, false, 0);
	for (size_t plen = 0; plen <= 5; plen++)
		n += put_fpdu(&tx, wire + n, cap - n, send_hdr, 18, pattern, plen);
	n += put_fpdu(&tx, wire + n, cap - n, write_hdr, 14, pattern, 4096);
	return n;
}

START_TEST(t_held_whole)
{
	static uint8_t wire[8000];
	struct iw_fpdu_rx rx;
	const size_t plen_total = 0 + 1 + 2 + 3 + 4 + 5 + 4096;

	fill_pattern();
	held = true;
	for (int crc = 0; crc < 2; crc++) {
		size_t n = put_sends(wire, sizeof(wire), crc);
		rec_reset(&rec_a);
		wholes_seen = 0;
		iw_fpdu_rx_init(&rx, crc, false, 0, 0, 0);
		REQUIRE(feed(&rx, &rec_a, wire, n) == 0);
		ck_assert_int_eq(wholes_seen, 7);
		ck_assert_int_eq(rec_a.nseg, 7);
		for (size_t chunk = 1; chunk <= 200; chunk++) {
			rec_reset(&rec_b);
			iw_fpdu_rx_init(&rx, crc, false, 0, 0, 0);
			REQUIRE(feed_chunks(&rx, &rec_b, wire, n, chunk) == 0);
			REQUIRE(iw_fpdu_rx_finish(&rx) == 0);
			REQUIRE(rec_b.nseg == 7 && rec_b.plen == plen_total);
			REQUIRE(memcmp(rec_b.pay, rec_a.pay, plen_total) == 0);
			for (int i = 0; i < 7; i++)
				REQUIRE(rec_b.segs[i].crc == rec_a.segs[i].crc);
		}
	}
	size_t n = put_sends(wire, sizeof(wire), true);
	size_t first = 2 + 18 + 4; /* the zero-length Send: no pad */
	wire[first - 1] ^= 0x01;
	rec_reset(&rec_a);
	wholes_seen = 0;
	iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);
	ck_assert_int_eq(feed(&rx, &rec_a, wire, n), -EBADMSG);
	ck_assert_int_eq(wholes_seen, 0);
	ck_assert(rec_a.in_seg);
	ck_assert_int_eq(rec_a.nseg, 0);
}
END_TEST

/* A bad marker inside what would be a run (each of its four octets, each
 * marker of the FPDU): the run stops short of it, the payload before it is
 * reported and nothing after, and the stream fails with a marker error
 * at that FPDU. A flipped payload octet inside a run fails the CRC. */
START_TEST(t_held_run_bad_marker)
{
	static uint8_t wire[4000];
	struct iw_fpdu_tx tx;
	struct iw_fpdu_rx rx;
	const size_t plen = 2000;

	fill_pattern();
	held = true;
	iw_fpdu_tx_init(&tx, true, true, 0);
	size_t n = put_fpdu(&tx, wire, sizeof(wire), send_hdr, 18, pattern, plen);
	for (size_t m = IW_MPA_MARKER_INTERVAL; m + 4 < n; m += IW_MPA_MARKER_INTERVAL) {
		for (size_t b = 0; b < IW_MPA_MARKER_LEN; b++) {
			wire[m + b] ^= 0x10;
			rec_reset(&rec_a);
			iw_fpdu_rx_init(&rx, true, true, 0, 0, 0);
			ck_assert_int_eq(feed(&rx, &rec_a, wire, n), -EPROTO);
			ck_assert_int_eq(rx.err, IW_WERR_FPDU_MARKER);
			ck_assert_uint_eq(rx.err_off, 0);
			/* The payload before the marker: all of it up to there,
			 * less the leading marker, length and header. */
			size_t before = m - (m / IW_MPA_MARKER_INTERVAL) * IW_MPA_MARKER_LEN - 2 - 18;
			ck_assert_uint_eq(rec_a.plen, before);
			ck_assert(memcmp(rec_a.pay, pattern, before) == 0);
			wire[m + b] ^= 0x10;
		}
	}
	wire[1500] ^= 0x01;
	rec_reset(&rec_a);
	iw_fpdu_rx_init(&rx, true, true, 0, 0, 0);
	ck_assert_int_eq(feed(&rx, &rec_a, wire, n), -EBADMSG);
	ck_assert_int_eq(rec_a.nseg, 0);
	ck_assert_int_gt(runs_seen, 0);
}
END_TEST

/* ------------------------------------------------------------ errors */

/* Decode buf whole; expect rc and reason. */
static void expect_err(const uint8_t *buf, size_t n, bool markers, uint32_t off, uint32_t max,
		       int want_rc, enum iw_wire_err why)
{
	struct iw_fpdu_rx rx;

	rec_reset(&rec_a);
	iw_fpdu_rx_init(&rx, true, markers, off, max, 0);
	ck_assert_int_eq(feed(&rx, &rec_a, buf, n), want_rc);
	ck_assert_msg(rx.err == why, "got %s want %s", iw_wire_err_name(rx.err),
		      iw_wire_err_name(why));
	ck_assert_uint_eq(rx.err_term, iw_wire_err_term(why));
	ck_assert_int_eq(rec_a.nseg, 0);
}

/* Build an FPDU with a valid CRC around arbitrary header octets. */
static size_t fpdu_from(uint8_t *buf, size_t cap, const uint8_t *hdr, size_t hl, size_t plen)
{
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, true, false, 0);
	return put_fpdu(&tx, buf, cap, hdr, hl, pattern, plen);
}

START_TEST(t_err_crc)
{
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[0].hex);

	for (size_t i = len - 4; i < len; i++) {
		fp[i] ^= 0x10;
		expect_err(fp, len, false, 0, 0, -EBADMSG, IW_WERR_FPDU_CRC);
		ck_assert_uint_eq(iw_wire_err_term(IW_WERR_FPDU_CRC), IW_TERM_LLP_CRC);
		fp[i] ^= 0x10;
	}
	/* a pad octet is covered too, though its value is otherwise ignored */
	fp[len - 5] = 1;
	expect_err(fp, len, false, 0, 0, -EBADMSG, IW_WERR_FPDU_CRC);
}
END_TEST

/* Flip each octet of valid FPDUs: never a clean segment, never a crash. */
START_TEST(t_err_flip_every_byte)
{
	held = _i & 1;
	uint8_t fp[64];
	size_t len;

	for (int v = 0; v < 2; v++) {
		len = tu_unhex(fp, sizeof(fp), v ? send_marker_508 : vecs[0].hex);
		for (size_t i = 0; i < len; i++) {
			for (int bit = 0; bit < 8; bit++) {
				struct iw_fpdu_rx rx;
				int rc;

				fp[i] ^= (uint8_t)(1u << bit);
				rec_reset(&rec_a);
				iw_fpdu_rx_init(&rx, true, v == 1, v ? 508 : 0, 0, 0);
				rc = feed(&rx, &rec_a, fp, len);
				if (rc == 0)
					rc = iw_fpdu_rx_finish(&rx);
				if (rc >= 0 || rec_a.nseg != 0 || rx.err == IW_WERR_NONE)
					ck_abort_msg("octet %zu bit %d accepted", i, bit);
				fp[i] ^= (uint8_t)(1u << bit);
			}
		}
	}
}
END_TEST

START_TEST(t_err_marker)
{
	held = _i & 1;
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), send_marker_508);
	struct iw_fpdu_rx rx;

	fp[7] = 8; /* FPDUPTR 8 instead of 4 */
	expect_err(fp, len, true, 508, 0, -EPROTO, IW_WERR_FPDU_MARKER);
	iw_fpdu_rx_init(&rx, true, true, 508, 0, 0);
	rec_reset(&rec_a);
	feed(&rx, &rec_a, fp, len);
	ck_assert_uint_eq(rx.err_off, 508);
	ck_assert_uint_eq(rx.err_term, IW_TERM_LLP_MARKER);
	fp[7] = 4;
	fp[4] = 0x80; /* reserved field not zero */
	expect_err(fp, len, true, 508, 0, -EPROTO, IW_WERR_FPDU_MARKER);
	fp[4] = 0;
	fp[5] = 0x01;
	expect_err(fp, len, true, 508, 0, -EPROTO, IW_WERR_FPDU_MARKER);

	/* a leading marker must point at itself */
	len = tu_unhex(fp, sizeof(fp), places[3].hex);
	fp[3] = 4;
	expect_err(fp, len, true, 0, 0, -EPROTO, IW_WERR_FPDU_MARKER);
	/* decoded at the wrong phase, a stream is marker garbage */
	len = tu_unhex(fp, sizeof(fp), send_marker_508);
	expect_err(fp, len, true, 504, 0, -EPROTO, IW_WERR_FPDU_MARKER);
}
END_TEST

START_TEST(t_err_lengths)
{
	static uint8_t buf[70000];
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[1].hex);
	uint8_t rr[64];

	fill_pattern();
	/* ULPDU_Length 0 and 1: shorter than any DDP header */
	fp[0] = 0;
	fp[1] = 0;
	expect_err(fp, len, false, 0, 0, -EPROTO, IW_WERR_FPDU_TOO_SHORT);
	fp[1] = 1;
	expect_err(fp, 2, false, 0, 0, -EPROTO, IW_WERR_FPDU_TOO_SHORT);
	fp[1] = 13;
	expect_err(fp, len, false, 0, 0, -EPROTO, IW_WERR_FPDU_TOO_SHORT);
	/* untagged needs 18 */
	len = tu_unhex(fp, sizeof(fp), vecs[0].hex);
	fp[1] = 17;
	expect_err(fp, len, false, 0, 0, -EPROTO, IW_WERR_FPDU_TOO_SHORT);
	/* a Read Request needs 18 + 28 */
	len = tu_unhex(rr, sizeof(rr), vecs[3].hex);
	len = fpdu_from(buf, sizeof(buf), rr + 2, 18, 27);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_FPDU_TOO_SHORT);

	/* the receive limit */
	len = fpdu_from(buf, sizeof(buf), write_hdr, 14, 1000 - 14);
	expect_err(buf, len, false, 0, 999, -EPROTO, IW_WERR_FPDU_TOO_LONG);
	ck_assert_uint_eq(rec_a.plen, 0);
	rec_reset(&rec_a);
	{
		struct iw_fpdu_rx rx;

		iw_fpdu_rx_init(&rx, true, false, 0, 1000, 0);
		ck_assert_int_eq(feed(&rx, &rec_a, buf, len), 0);
		ck_assert_int_eq(rec_a.nseg, 1);
		/* 0 and anything above 65535 mean 65535 */
		iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);
		ck_assert_uint_eq(rx.max_ulpdu, 65535);
		iw_fpdu_rx_init(&rx, true, false, 0, 100000, 0);
		ck_assert_uint_eq(rx.max_ulpdu, 65535);
	}
	ck_assert_uint_eq(iw_wire_err_term(IW_WERR_FPDU_TOO_LONG), IW_TERM_DDP_CATASTROPHIC);
}
END_TEST

/* Header syntax errors come from iw_ddp_hdr_parse and the RDMAP parsers. */
START_TEST(t_err_header_syntax)
{
	static uint8_t buf[512];
	uint8_t h[72];
	size_t len;

	fill_pattern();
	memcpy(h, write_hdr, 14);
	h[0] = 0xc2; /* tagged, DV 2 */
	len = fpdu_from(buf, sizeof(buf), h, 14, 5);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_DDP_T_VERSION);
	ck_assert_uint_eq(rec_a.plen, 0); /* nothing placed */

	memcpy(h, send_hdr, 18);
	h[0] = 0x40; /* untagged, DV 0 */
	len = fpdu_from(buf, sizeof(buf), h, 18, 5);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_DDP_U_VERSION);

	memcpy(h, send_hdr, 18);
	h[1] = 0x83; /* RV 2 */
	len = fpdu_from(buf, sizeof(buf), h, 18, 5);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_VERSION);

	h[1] = 0x4c; /* opcode 0xC */
	len = fpdu_from(buf, sizeof(buf), h, 18, 5);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_OPCODE);

	memcpy(h, write_hdr, 14);
	h[1] = 0x43; /* Send in a tagged segment */
	len = fpdu_from(buf, sizeof(buf), h, 14, 5);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_OPCODE);

	memcpy(h, send_hdr, 18);
	h[9] = 1; /* Send on QN 1 */
	len = fpdu_from(buf, sizeof(buf), h, 18, 5);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_DDP_QN);

	/* Read Request without L */
	len = tu_unhex(buf, sizeof(buf), vecs[3].hex);
	memcpy(h, buf + 2, 46);
	h[0] = 0x01;
	len = fpdu_from(buf, sizeof(buf), h, 46, 0);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_NOT_LAST);

	/* atomic opcode 1 is reserved */
	len = tu_unhex(buf, sizeof(buf), vecs[7].hex);
	memcpy(h, buf + 2, 70);
	h[21] = 1;
	len = fpdu_from(buf, sizeof(buf), h, 70, 0);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_ATOMIC_OP);

	/* Terminate announcing a copied DDP header it does not carry */
	len = tu_unhex(buf, sizeof(buf), vecs[5].hex);
	memcpy(h, buf + 2, 22);
	h[20] = 0x40;
	len = fpdu_from(buf, sizeof(buf), h, 22, 0);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_TERM);
	/* Terminate with no control word at all */
	len = fpdu_from(buf, sizeof(buf), h, 18, 0);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_TERM);
	/* Terminate longer than the largest legal one (18 + 52) */
	len = fpdu_from(buf, sizeof(buf), h, 18, 53);
	expect_err(buf, len, false, 0, 0, -EPROTO, IW_WERR_RDMAP_TERM);
}
END_TEST

START_TEST(t_err_sticky)
{
	uint8_t bad[64], good[64];
	size_t len = tu_unhex(bad, sizeof(bad), vecs[0].hex);
	struct iw_fpdu_rx rx;
	struct iw_rx_event ev;
	size_t used = 99;

	tu_unhex(good, sizeof(good), vecs[0].hex);
	bad[len - 1] ^= 1;
	rec_reset(&rec_a);
	iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);
	ck_assert_int_eq(feed(&rx, &rec_a, good, len), 0);
	ck_assert_int_eq(feed(&rx, &rec_a, bad, len), -EBADMSG);
	ck_assert_uint_eq(rx.err_off, len); /* the second FPDU */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, good, len, &used), -EBADMSG);
		ck_assert_uint_eq(used, 0);
	}
	ck_assert_int_eq(rx.err, IW_WERR_FPDU_CRC);
	ck_assert_uint_eq(iw_fpdu_rx_direct_len(&rx), 0);
	ck_assert_int_eq(iw_fpdu_rx_direct_done(&rx, good, 1), -EINVAL);
	ck_assert_int_eq(iw_fpdu_rx_finish(&rx), -EBADMSG);
	ck_assert_int_eq(rx.err, IW_WERR_FPDU_CRC);

	/* -EPROTO stays -EPROTO */
	good[2] = 0x42;
	iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, good, len, &used), -EPROTO);
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, good, len, &used), -EPROTO);
	ck_assert_int_eq(rx.err, IW_WERR_DDP_U_VERSION);
	ck_assert_int_eq(iw_fpdu_rx_finish(&rx), -EPROTO);
	ck_assert_int_eq(rx.err, IW_WERR_DDP_U_VERSION);
}
END_TEST

START_TEST(t_truncated)
{
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[0].hex);

	for (size_t cut = 0; cut <= len; cut++) {
		struct iw_fpdu_rx rx;
		int rc;

		rec_reset(&rec_a);
		iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);
		ck_assert_int_eq(feed(&rx, &rec_a, fp, cut), 0);
		rc = iw_fpdu_rx_finish(&rx);
		if (cut == 0 || cut == len) {
			ck_assert_int_eq(rc, 0);
		} else {
			ck_assert_int_eq(rc, -EPROTO);
			ck_assert_int_eq(rx.err, IW_WERR_FPDU_TRUNCATED);
			ck_assert_uint_eq(rx.err_term, IW_TERM_LLP_CLOSED);
			ck_assert_uint_eq(rx.err_off, 0);
		}
	}
}
END_TEST

START_TEST(t_crc_off_and_skip)
{
	uint8_t fp[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[0].hex);
	struct iw_fpdu_rx rx;

	fp[len - 4] = 0xde; /* garbage in the field */
	fp[len - 1] = 0xad;
	rec_reset(&rec_a);
	iw_fpdu_rx_init(&rx, false, false, 0, 0, 0);
	ck_assert_int_eq(feed(&rx, &rec_a, fp, len), 0);
	ck_assert_int_eq(rec_a.nseg, 1);
	ck_assert_uint_eq(rec_a.segs[0].crc, le32(fp + len - 4));

	/* CRC on, mismatch, but the fuzzing flag says do not enforce */
	rec_reset(&rec_a);
	iw_fpdu_rx_init(&rx, true, false, 0, 0, IW_RX_SKIP_CRC);
	ck_assert_int_eq(feed(&rx, &rec_a, fp, len), 0);
	ck_assert_int_eq(rec_a.nseg, 1);
	ck_assert_int_eq(rx.err, IW_WERR_NONE);

	/* without the flag it is an error */
	expect_err(fp, len, false, 0, 0, -EBADMSG, IW_WERR_FPDU_CRC);
}
END_TEST

/* Random bytes: the decoder must stop with an error or ask for more. */
START_TEST(t_garbage)
{
	static uint8_t buf[4096];
	unsigned seed = 99;

	for (int round = 0; round < 400; round++) {
		struct iw_fpdu_rx rx;
		size_t n = 1 + (size_t)(rand_r(&seed) % sizeof(buf));

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		if (round & 1) { /* plausible start so the header code runs */
			buf[0] = 0;
			buf[1] = (uint8_t)(14 + round % 60);
			buf[2] = (round & 2) ? 0xc1 : 0x41;
			buf[3] = (uint8_t)(0x40 | (round % 16));
		}
		rec_reset(&rec_a);
		iw_fpdu_rx_init(&rx, round % 3 != 0, round % 5 == 0, (uint32_t)(round * 4), 0,
				round % 7 == 0 ? IW_RX_SKIP_CRC : 0);
		feed_chunks(&rx, &rec_a, buf, n, 1 + (size_t)round % 13);
		iw_fpdu_rx_finish(&rx);
	}
}
END_TEST

/* ------------------------------------------------------------ direct placement */

/* Decode wire placing payload directly into dst; compare with feeding. */
static void direct_decode(const uint8_t *wire, size_t n, bool markers, uint32_t off,
			  uint8_t *dst, size_t *placed, struct iw_ddp_seg *seg_out)
{
	struct iw_fpdu_rx rx;
	size_t at = 0;
	int segs = 0;

	*placed = 0;
	iw_fpdu_rx_init(&rx, true, markers, off, 0, 0);
	/* Headers, markers and trailers go through next() one octet at a time
	 * so that next() never reaches payload: all of it must be placed. */
	while (at < n) {
		size_t d = iw_fpdu_rx_direct_len(&rx), used;
		struct iw_rx_event ev;
		int rc;

		if (d) {
			/* "recv" straight into place: at most what was allowed */
			if (d > n - at)
				d = n - at;
			if (d > 1000)
				d = 1000;
			ck_assert_int_eq(iw_fpdu_rx_direct_done(&rx, dst, d + 1 + n), -EINVAL);
			memcpy(dst + *placed, wire + at, d);
			ck_assert_int_eq(iw_fpdu_rx_direct_done(&rx, dst + *placed, d), 0);
			*placed += d;
			at += d;
			continue;
		}
		rc = iw_fpdu_rx_next(&rx, &ev, wire + at, 1, &used);
		ck_assert_int_ge(rc, 0);
		at += used;
		if (rc == 1 && ev.kind == IW_RX_PAYLOAD) {
			/* only a piece direct_len could not cover: none here,
			 * since markers are fed and the rest is placed */
			ck_abort_msg("payload went through next() despite direct_len");
		}
		if (rc == 1 && ev.kind == IW_RX_SEG_END) {
			*seg_out = *ev.seg;
			segs++;
		}
	}
	ck_assert_int_eq(segs, 1);
	ck_assert_int_eq(iw_fpdu_rx_finish(&rx), 0);
	ck_assert_uint_eq(rx.stream_off, (uint32_t)(off + n));
}

START_TEST(t_direct_placement)
{
	static uint8_t wire[20000], dst[20000];
	struct iw_fpdu_tx tx;
	struct iw_ddp_seg seg;
	size_t n, placed;
	uint32_t offs[] = {0, 508, 100, 4000};

	fill_pattern();
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		for (int markers = 0; markers < 2; markers++) {
			iw_fpdu_tx_init(&tx, true, markers, offs[k]);
			n = put_fpdu(&tx, wire, sizeof(wire), write_hdr, 14, pattern, 5003);
			memset(&seg, 0, sizeof(seg));
			direct_decode(wire, n, markers, offs[k], dst, &placed, &seg);
			ck_assert_uint_eq(placed, 5003);
			ck_assert(memcmp(dst, pattern, 5003) == 0);
			ck_assert_uint_eq(seg.crc, tx_out.crc);
			ck_assert_uint_eq(seg.payload_len, 5003);
		}
	}
}
END_TEST

/* A 4000-octet Write FPDU with CRC on, and a decoder ready for it. */
static size_t direct_setup(uint8_t *wire, size_t cap, struct iw_fpdu_rx *rx)
{
	struct iw_fpdu_tx tx;

	fill_pattern();
	iw_fpdu_tx_init(&tx, true, false, 0);
	iw_fpdu_rx_init(rx, true, false, 0, 0, 0);
	return put_fpdu(&tx, wire, cap, write_hdr, 14, pattern, 4000);
}

START_TEST(t_direct_bad_crc)
{
	static uint8_t wire[8000], dst[8000];
	struct iw_fpdu_rx rx;
	struct iw_rx_event ev;
	size_t n, used, d;

	n = direct_setup(wire, sizeof(wire), &rx);
	ck_assert_uint_eq(iw_fpdu_rx_direct_len(&rx), 0); /* not in a payload */
	ck_assert_int_eq(iw_fpdu_rx_direct_done(&rx, dst, 1), -EINVAL);
	/* Only the header is fed: the payload is then received directly. */
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire, 16, &used), 1);
	ck_assert_int_eq(ev.kind, IW_RX_SEG_HDR);
	ck_assert_uint_eq(used, 16);
	d = iw_fpdu_rx_direct_len(&rx);
	ck_assert_uint_eq(d, 4000);
	memcpy(dst, wire + 16, d);
	dst[100] ^= 1; /* the octets "received" differ from what was sent */
	ck_assert_int_eq(iw_fpdu_rx_direct_done(&rx, dst, d), 0);
	ck_assert_uint_eq(iw_fpdu_rx_direct_len(&rx), 0);
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire + 16 + d, n - 16 - d, &used), -EBADMSG);
	ck_assert_int_eq(rx.err, IW_WERR_FPDU_CRC);
}
END_TEST

/* The header call read the payload ahead into the CRC; placing those same
 * stream octets directly must not count them twice. */
START_TEST(t_direct_after_read_ahead)
{
	static uint8_t wire[8000], dst[8000];
	struct iw_fpdu_rx rx;
	struct iw_rx_event ev;
	size_t n, used, d;

	n = direct_setup(wire, sizeof(wire), &rx);
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire, n, &used), 1);
	ck_assert_int_eq(ev.kind, IW_RX_SEG_HDR);
	d = iw_fpdu_rx_direct_len(&rx);
	ck_assert_uint_eq(d, 4000);
	memcpy(dst, wire + 16, d);
	ck_assert_int_eq(iw_fpdu_rx_direct_done(&rx, dst, d), 0);
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire + 16 + d, n - 16 - d, &used), 1);
	ck_assert_int_eq(ev.kind, IW_RX_SEG_END);
	ck_assert_uint_eq(used, n - 16 - d);
	ck_assert_int_eq(iw_fpdu_rx_finish(&rx), 0);
}
END_TEST

/* With contiguous input the whole payload is one event (the fast path). */
START_TEST(t_one_payload_event)
{
	static uint8_t wire[70000];
	struct iw_fpdu_tx tx;
	struct iw_fpdu_rx rx;
	struct iw_rx_event ev;
	size_t n, used, at;

	fill_pattern();
	iw_fpdu_tx_init(&tx, true, false, 0);
	n = put_fpdu(&tx, wire, sizeof(wire), write_hdr, 14, pattern, 65521);
	n += put_fpdu(&tx, wire + n, sizeof(wire) - n, write_hdr, 14, pattern, 10);
	iw_fpdu_rx_init(&rx, true, false, 0, 0, 0);
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire, n, &used), 1);
	ck_assert_int_eq(ev.kind, IW_RX_SEG_HDR);
	at = used;
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire + at, n - at, &used), 1);
	ck_assert_int_eq(ev.kind, IW_RX_PAYLOAD);
	ck_assert_uint_eq(ev.len, 65521);
	ck_assert_ptr_eq(ev.data, wire + 16);
	at += used;
	ck_assert_int_eq(iw_fpdu_rx_next(&rx, &ev, wire + at, n - at, &used), 1);
	ck_assert_int_eq(ev.kind, IW_RX_SEG_END);
	ck_assert_uint_eq(ev.seg->crc, iw_crc32c(wire, 2 + 65535 + 3));
	at += used;
	ck_assert_uint_eq(at, 65544);
}
END_TEST

Suite *suite_mpa_rx(void)
{
	Suite *s = suite_create("mpa_rx");
	TCase *tc = tcase_create("decode");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, held_off, NULL);
	tcase_add_loop_test(tc, t_vectors, 0, NUM_VECS);
	tcase_add_test(tc, t_vector_fields);
	tcase_add_test(tc, t_back_to_back);
	tcase_add_test(tc, t_marker_vector);
	tcase_add_loop_test(tc, t_marker_places, 0, 2 * NUM_PLACES);
	tcase_add_loop_test(tc, t_roundtrip_markers_aligned, 0, 2);
	tcase_add_loop_test(tc, t_roundtrip_markers_unaligned, 0, 2);
	tcase_add_loop_test(tc, t_roundtrip_large, 0, 2);
	tcase_add_loop_test(tc, t_stream_random_cuts, 0, 2);
	tcase_add_test(tc, t_held_runs);
	tcase_add_test(tc, t_held_run_bad_marker);
	tcase_add_test(tc, t_held_whole);
	tcase_add_test(tc, t_err_crc);
	tcase_add_loop_test(tc, t_err_flip_every_byte, 0, 2);
	tcase_add_loop_test(tc, t_err_marker, 0, 2);
	tcase_add_test(tc, t_err_lengths);
	tcase_add_test(tc, t_err_header_syntax);
	tcase_add_test(tc, t_err_sticky);
	tcase_add_test(tc, t_truncated);
	tcase_add_test(tc, t_crc_off_and_skip);
	tcase_add_test(tc, t_garbage);
	tcase_add_test(tc, t_direct_placement);
	tcase_add_test(tc, t_direct_bad_crc);
	tcase_add_test(tc, t_direct_after_read_ahead);
	tcase_add_test(tc, t_one_payload_event);
	suite_add_tcase(s, tc);
	return s;
}
