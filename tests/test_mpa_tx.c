/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FPDU encoder: exact bytes against the shared vectors, MULPDU arithmetic,
 * and markers at every phase checked by an independent bytewise reference.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/mpa_tx.h"
#include "suites.h"
#include "testutil.h"

/* ck_assert logs every passing check, which dominates loops that run
 * millions of them; this only reports failures. */
#define REQUIRE(c)                                                                          \
	do {                                                                               \
		if (!(c))                                                                  \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);                 \
	} while (0)

/* Vectors from /work/shared/reference/vectors (*.iwv): wire octets and the
 * length of the header part of the ULPDU (DDP + RDMAP header, or the whole
 * ULPDU for a Terminate). */
struct txv {
	const char *name;
	const char *hex;
	size_t hdr_len;
};

static const struct txv vecs[] = {
	{"send_rdma_test",
	 "00 1b 41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 72 64 6d 61 5f 74 65 73"
	 " 74 00 00 00 d9 fe 24 22", 18},
	{"write_rdma_test",
	 "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	 " 0b c6 a8 47", 14},
	{"rtr_zero_length_write",
	 "00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00 eb d3 4c 5f", 14},
	{"read_request",
	 "00 2e 41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00 00 aa bb 01 00 00 00 00"
	 " 00 00 10 00 00 00 00 09 00 1f f8 b7 00 00 00 00 02 2b c8 50 75 3a 83 ac", 46},
	{"read_response",
	 "00 17 c1 42 00 aa bb 01 00 00 00 00 00 00 10 00 72 64 6d 61 5f 74 65 73 74 00 00 00"
	 " b7 fa 64 a9", 14},
	{"terminate_llp_crc_error",
	 "00 16 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 20 02 00 00 7f e4 25 85",
	 22},
	{"terminate_ddp_no_buffer",
	 "00 2a 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 12 02 c0 00 00 1b 41 43"
	 " 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 e8 33 97 58", 42},
	{"atomic_fetchadd_request",
	 "00 46 41 4a 00 00 00 00 00 00 00 01 00 00 00 02 00 00 00 00 00 00 00 00 00 00 00 01"
	 " 00 1f f8 b7 00 00 00 00 02 2b c8 50 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00"
	 " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 e7 93 31 92", 70},
	{"atomic_response",
	 "00 1e 41 4b 00 00 00 00 00 00 00 03 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00 00"
	 " 00 00 00 05 e5 b2 0f b6", 30},
	{"immediate_data",
	 "00 1a 41 48 00 00 00 00 00 00 00 00 00 00 00 02 00 00 00 00 01 23 45 67 89 ab cd ef"
	 " 08 9a a5 3d", 26},
};
#define NUM_VECS ((int)(sizeof(vecs) / sizeof(vecs[0])))

/* send_rdma_test with markers on, FPDU at stream offset 508 (section 5.3). */
static const char *const send_marker_508 =
	"00 1b 41 43 00 00 00 04 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 72 64 6d 61"
	" 5f 74 65 73 74 00 00 00 e5 32 94 f9";

static size_t flatten(const struct iw_fpdu_out *o, uint8_t *buf, size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < o->iovcnt; i++) {
		REQUIRE((n + o->iov[i].iov_len) <= (cap));
		memcpy(buf + n, o->iov[i].iov_base, o->iov[i].iov_len);
		n += o->iov[i].iov_len;
	}
	return n;
}

static struct iovec iovs[IW_FPDU_IOV_NEED(16, IW_FPDU_MARKERS_MAX)];
static struct iw_fpdu_out out;

static void out_reset(int cap)
{
	memset(&out, 0xA5, sizeof(out)); /* stale framing must be overwritten */
	out.iov = iovs;
	out.iov_cap = cap;
}

/* Encode vector i's header and payload (payload cut into pieces at cuts[]). */
static int encode_vec(struct iw_fpdu_tx *tx, const uint8_t *fp, size_t hdr_len, size_t ulpdu,
		      const size_t *cuts, int ncuts)
{
	struct iovec pay[8];
	size_t at = 2 + hdr_len, end = 2 + ulpdu;
	int n = 0;

	for (int i = 0; i < ncuts; i++) {
		size_t c = 2 + hdr_len + cuts[i];

		if (c > end)
			c = end;
		pay[n].iov_base = (void *)(fp + at);
		pay[n++].iov_len = c - at;
		at = c;
	}
	pay[n].iov_base = (void *)(fp + at);
	pay[n++].iov_len = end - at;
	return iw_fpdu_encode(tx, &out, fp + 2, hdr_len, pay, n);
}

START_TEST(t_vectors_exact)
{
	const struct txv *v = &vecs[_i];
	uint8_t fp[128], wire[256];
	size_t len = tu_unhex(fp, sizeof(fp), v->hex);
	size_t ulpdu = (size_t)(fp[0] << 8 | fp[1]);
	static const size_t cuts[] = {0, 1, 4};
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, true, false, 1000);
	out_reset(IW_FPDU_IOV_NEED(4, 0));
	ck_assert_int_eq(encode_vec(&tx, fp, v->hdr_len, ulpdu, cuts, 3), 0);
	ck_assert_uint_eq(out.wire_len, len);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), len);
	ck_assert_msg(memcmp(wire, fp, len) == 0, "%s: bytes differ", v->name);
	ck_assert_uint_eq(out.crc, (uint32_t)fp[len - 4] | (uint32_t)fp[len - 3] << 8 |
					   (uint32_t)fp[len - 2] << 16 | (uint32_t)fp[len - 1] << 24);
	ck_assert_uint_eq(out.crc, tu_ref_crc32c(fp, len - 4));
	ck_assert_uint_eq(tx.stream_off, 1000 + len);
}
END_TEST

START_TEST(t_marker_at_508)
{
	uint8_t fp[64], want[64], wire[64];
	struct iw_fpdu_tx tx;
	struct iovec pay = {0};
	size_t wl;

	tu_unhex(fp, sizeof(fp), vecs[0].hex);
	wl = tu_unhex(want, sizeof(want), send_marker_508);
	iw_fpdu_tx_init(&tx, true, true, 508);
	out_reset(IW_FPDU_IOV_NEED(1, 1));
	pay.iov_base = fp + 20;
	pay.iov_len = 9;
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, fp + 2, 18, &pay, 1), 0);
	ck_assert_uint_eq(out.wire_len, 40);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), wl);
	ck_assert(memcmp(wire, want, wl) == 0);
	ck_assert_uint_eq(out.crc, 0xF99432E5u);
	ck_assert_uint_eq(tx.stream_off, 548);
	ck_assert_uint_eq(iw_fpdu_wire_len(508, 27, true), 40);
}
END_TEST

/* Special marker placements, expected octets from a bitwise reference. */
struct place {
	uint32_t off;
	const char *hex;
	uint32_t crc;
};

static const struct place places[] = {
	/* between pad and CRC: covered by the CRC */
	{484, "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	      " 00 00 00 1c 3e 0b 02 90", 0x90020b3e},
	/* inside the CRC field: not covered, so the plain CRC */
	{482, "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	      " 0b c6 00 00 00 1e a8 47", 0x47a8c60b},
	/* inside ULPDU_Length */
	{511, "00 00 00 00 01 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73"
	      " 74 00 00 00 fc bc e5 98", 0x98e5bcfc},
	/* leading marker: FPDUPTR 0, covered */
	{0, "00 00 00 00 00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73"
	    " 74 00 00 00 c8 37 f0 3a", 0x3af037c8},
	{1024, "00 00 00 00 00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65"
	       " 73 74 00 00 00 c8 37 f0 3a", 0x3af037c8},
	/* inside the tagged header */
	{508, "00 17 c1 40 00 00 00 04 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73"
	      " 74 00 00 00 2f 24 d0 f7", 0xf7d0242f},
	/* right after the CRC: belongs to the next FPDU, none here */
	{480, "00 17 c1 40 00 1f f8 b7 00 00 00 00 02 2b c8 50 72 64 6d 61 5f 74 65 73 74 00 00 00"
	      " 0b c6 a8 47", 0x47a8c60b},
};

START_TEST(t_marker_places)
{
	const struct place *p = &places[_i];
	uint8_t fp[64], want[64], wire[64];
	struct iw_fpdu_tx tx;
	size_t wl;
	static const size_t cuts[] = {3, 5};

	tu_unhex(fp, sizeof(fp), vecs[1].hex);
	wl = tu_unhex(want, sizeof(want), p->hex);
	iw_fpdu_tx_init(&tx, true, true, p->off);
	out_reset(IW_FPDU_IOV_NEED(3, 1));
	ck_assert_int_eq(encode_vec(&tx, fp, 14, 23, cuts, 2), 0);
	ck_assert_uint_eq(out.wire_len, wl);
	ck_assert_uint_eq(iw_fpdu_wire_len(p->off, 23, true), wl);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), wl);
	ck_assert_msg(memcmp(wire, want, wl) == 0, "offset %u", p->off);
	ck_assert_uint_eq(out.crc, p->crc);
	ck_assert_uint_eq(tx.stream_off, p->off + wl);
}
END_TEST

START_TEST(t_mulpdu)
{
	ck_assert_uint_eq(iw_mpa_mulpdu(1460, false), 1454);
	ck_assert_uint_eq(iw_mpa_mulpdu(1460, true), 1442);
	ck_assert_uint_eq(iw_mpa_mulpdu(8960, false), 8954);
	ck_assert_uint_eq(iw_mpa_mulpdu(8960, true), 8882);
	ck_assert_uint_eq(iw_mpa_mulpdu(1448, false), 1442);
	ck_assert_uint_eq(iw_mpa_mulpdu(1461, false), 1454);   /* 1461 % 4 = 1 */
	ck_assert_uint_eq(iw_mpa_mulpdu(1463, false), 1454);
	ck_assert_uint_eq(iw_mpa_mulpdu(512, true), 502);      /* one marker */
	ck_assert_uint_eq(iw_mpa_mulpdu(513, true), 498);      /* two */
	ck_assert_uint_eq(iw_mpa_mulpdu(65544, false), 65535); /* clamped */
	ck_assert_uint_eq(iw_mpa_mulpdu(65541, false), 65534); /* 65541 % 4 = 1 */
	ck_assert_uint_eq(iw_mpa_mulpdu(65545, false), 65535);
	ck_assert_uint_eq(iw_mpa_mulpdu(65540, false), 65534);
	ck_assert_uint_eq(iw_mpa_mulpdu(UINT32_MAX, false), 65535);
	ck_assert_uint_eq(iw_mpa_mulpdu(UINT32_MAX, true), 65535);
	/* the smallest FPDU carries a 14-octet tagged header */
	ck_assert_uint_eq(iw_mpa_mulpdu(20, false), 14);
	ck_assert_uint_eq(iw_mpa_mulpdu(19, false), 0);
	ck_assert_uint_eq(iw_mpa_mulpdu(24, true), 14);
	ck_assert_uint_eq(iw_mpa_mulpdu(23, true), 0);
	ck_assert_uint_eq(iw_mpa_mulpdu(0, false), 0);
	ck_assert_uint_eq(iw_mpa_mulpdu(0, true), 0);
	/* an FPDU of MULPDU always fits the EMSS, marker worst case included */
	for (uint32_t emss = 20; emss < 9000; emss++) {
		uint32_t m = iw_mpa_mulpdu(emss, true);

		if (!m)
			continue;
		for (uint32_t off = 0; off < 512; off += 4)
			ck_assert_uint_le(iw_fpdu_wire_len(off, m, true), emss);
		ck_assert_uint_le(iw_fpdu_wire_len(0, iw_mpa_mulpdu(emss, false), false), emss);
		ck_assert_uint_eq(iw_fpdu_wire_len(0, iw_mpa_mulpdu(emss, false), false) % 4, 0);
	}
}
END_TEST

START_TEST(t_pad_and_wire_len)
{
	ck_assert_uint_eq(iw_mpa_pad(0), 2);
	ck_assert_uint_eq(iw_mpa_pad(14), 0);
	ck_assert_uint_eq(iw_mpa_pad(23), 3);
	ck_assert_uint_eq(iw_mpa_pad(27), 3);
	ck_assert_uint_eq(iw_mpa_pad(65535), 3);
	ck_assert_uint_eq(iw_fpdu_wire_len(0, 27, false), 36);
	ck_assert_uint_eq(iw_fpdu_wire_len(0, 65535, false), 65544);
	ck_assert_uint_eq(iw_fpdu_wire_len(0, 27, true), 40);   /* leading marker */
	ck_assert_uint_eq(iw_fpdu_wire_len(4, 27, true), 36);
	ck_assert_uint_eq(iw_fpdu_wire_len(476, 27, true), 36); /* marker just after */
	ck_assert_uint_eq(iw_fpdu_wire_len(480, 27, true), 40); /* marker before CRC */
	/* 65544 plain octets from offset 0: markers at wire 0, 512, ... */
	ck_assert_uint_eq(iw_fpdu_wire_len(0, 65535, true), 65544 + 4 * 130);
	/* wraps with the 32-bit stream offset */
	ck_assert_uint_eq(iw_fpdu_wire_len(UINT32_MAX - 3, 27, true), 40);
}
END_TEST

START_TEST(t_crc_off)
{
	uint8_t fp[64], wire[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[0].hex);
	static const size_t cuts[] = {2};
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, false, false, 0);
	out_reset(8);
	ck_assert_int_eq(encode_vec(&tx, fp, 18, 27, cuts, 1), 0);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), len);
	ck_assert(memcmp(wire, fp, len - 4) == 0);
	ck_assert_uint_eq(out.crc, 0);
	ck_assert(wire[len - 4] == 0 && wire[len - 3] == 0 && wire[len - 2] == 0 &&
		  wire[len - 1] == 0);
}
END_TEST

/* The payload is referenced, not copied: its iovec points into our buffer. */
START_TEST(t_payload_by_reference)
{
	static uint8_t payload[3000];
	uint8_t hdr[14] = {0xc1, 0x40, 0, 0, 0, 1};
	struct iovec pay = {payload, sizeof(payload)};
	struct iw_fpdu_tx tx;
	bool seen = false;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	iw_fpdu_tx_init(&tx, true, false, 0);
	out_reset(IW_FPDU_IOV_NEED(1, 0));
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, sizeof(hdr), &pay, 1), 0);
	ck_assert_int_eq(out.iovcnt, 3);
	for (int i = 0; i < out.iovcnt; i++)
		if (out.iov[i].iov_base == payload && out.iov[i].iov_len == sizeof(payload))
			seen = true;
	ck_assert(seen);
	ck_assert_uint_eq(out.wire_len, 2 + 14 + 3000 + 0 + 4);
}
END_TEST

START_TEST(t_empty_pieces_and_zero_payload)
{
	uint8_t fp[64], wire[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[1].hex);
	struct iovec pay[5] = {
		{fp + 16, 0}, {fp + 16, 4}, {NULL, 0}, {fp + 20, 5}, {fp + 25, 0},
	};
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, true, false, 0);
	out_reset(IW_FPDU_IOV_NEED(5, 0));
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, fp + 2, 14, pay, 5), 0);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), len);
	ck_assert(memcmp(wire, fp, len) == 0);
	/* head, one payload run (the two pieces are adjacent), tail */
	ck_assert_int_le(out.iovcnt, 4);
	for (int i = 0; i < out.iovcnt; i++)
		ck_assert_uint_gt(out.iov[i].iov_len, 0);

	/* zero-length payload, as the RTR: NULL payload list allowed */
	len = tu_unhex(fp, sizeof(fp), vecs[2].hex);
	out_reset(IW_FPDU_IOV_NEED(0, 0));
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, fp + 2, 14, NULL, 0), 0);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), len);
	ck_assert(memcmp(wire, fp, len) == 0);
}
END_TEST

START_TEST(t_header_in_place)
{
	uint8_t fp[64], wire[64];
	size_t len = tu_unhex(fp, sizeof(fp), vecs[4].hex);
	struct iovec pay = {fp + 16, 9};
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, true, false, 0);
	out_reset(4);
	memcpy(out.head + 2, fp + 2, 14); /* built where the encoder wants it */
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, out.head + 2, 14, &pay, 1), 0);
	ck_assert_uint_eq(flatten(&out, wire, sizeof(wire)), len);
	ck_assert(memcmp(wire, fp, len) == 0);
}
END_TEST

START_TEST(t_errors)
{
	static uint8_t big[65536];
	uint8_t hdr[IW_FPDU_HDR_MAX + 1] = {0xc1, 0x40};
	struct iovec pay = {big, 65535 - 14};
	struct iovec two[2] = {{big, 30000}, {big, 40000}};
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, true, false, 100);
	out_reset(IW_FPDU_IOV_NEED(2, 0));
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 13, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, IW_FPDU_HDR_MAX + 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, NULL, 14, NULL, 0), -EINVAL);
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, NULL, 1), -EINVAL);
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, &pay, -1), -EINVAL);
	ck_assert_uint_eq(tx.stream_off, 100);

	/* ULPDU 65535 is the largest */
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, &pay, 1), 0);
	ck_assert_uint_eq(out.wire_len, 65544);
	ck_assert_uint_eq(out.head[0], 0xff);
	ck_assert_uint_eq(out.head[1], 0xff);
	ck_assert_uint_eq(tx.stream_off, 100 + 65544);
	pay.iov_len++;
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, &pay, 1), -EMSGSIZE);
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, two, 2), -EMSGSIZE);
	ck_assert_uint_eq(tx.stream_off, 100 + 65544);

	/* markers on: a marker more than 65535 octets into the FPDU cannot
	 * point back at its start */
	iw_fpdu_tx_init(&tx, true, true, 0);
	pay.iov_len = 65535 - 14;
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, &pay, 1), -EMSGSIZE);
	/* a stream offset inside a marker is not a place an FPDU can start */
	iw_fpdu_tx_init(&tx, true, true, 514);
	pay.iov_len = 10;
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, &pay, 1), -EINVAL);
	ck_assert_uint_eq(tx.stream_off, 514);
}
END_TEST

START_TEST(t_enospc_leaves_tx)
{
	static uint8_t payload[2000];
	uint8_t hdr[18] = {0x41, 0x43};
	struct iovec pay[3] = {{payload, 700}, {payload + 700, 700}, {payload + 1400, 600}};
	struct iw_fpdu_tx tx;
	int need;

	/* offset 508: markers at 4, 516, 1028, 1540 -> 4 markers, 3 splits */
	iw_fpdu_tx_init(&tx, true, true, 508);
	for (need = 0; need < 64; need++) {
		out_reset(need);
		if (iw_fpdu_encode(&tx, &out, hdr, sizeof(hdr), pay, 3) == 0)
			break;
		ck_assert_uint_eq(tx.stream_off, 508);
	}
	ck_assert_int_le(need, IW_FPDU_IOV_NEED(3, 4));
	ck_assert_int_eq(out.iovcnt, need);
	ck_assert_uint_eq(tx.stream_off, 508 + out.wire_len);
	ck_assert_uint_eq(out.wire_len, iw_fpdu_wire_len(508, 2018, true));
	ck_assert_uint_eq(out.wire_len, 2 + 2018 + 0 + 4 + 16);
	out_reset(need - 1);
	tx.stream_off = 508;
	ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, sizeof(hdr), pay, 3), -ENOSPC);
	ck_assert_uint_eq(tx.stream_off, 508);
}
END_TEST

/* Reference check of an encoded FPDU: markers exactly where the stream
 * offset says, each pointing at the FPDU start; stripped, the octets are
 * length + header + payload + zero pad; the CRC covers every octet before
 * the CRC field (computed bitwise here). */
static void ref_check(const uint8_t *wire, size_t wl, uint32_t off, const uint8_t *plain,
		      size_t plain_len, bool crc)
{
	static uint8_t stripped[70000];
	size_t n = 0, crc_at = 0;
	uint32_t want;

	for (size_t i = 0; i < wl;) {
		if (((off + i) & 511) == 0) {
			REQUIRE((i + 4) <= (wl));
			REQUIRE((wire[i]) == (0));
			REQUIRE((wire[i + 1]) == (0));
			REQUIRE(((size_t)(wire[i + 2] << 8 | wire[i + 3])) == (i));
			i += 4;
			continue;
		}
		if (n == plain_len - 4)
			crc_at = i;
		stripped[n++] = wire[i++];
	}
	REQUIRE((n) == (plain_len));
	REQUIRE(memcmp(stripped, plain, plain_len - 4) == 0);
	want = crc ? tu_ref_crc32c(wire, crc_at) : 0;
	REQUIRE((stripped[n - 4] | stripped[n - 3] << 8 | stripped[n - 2] << 16 |
				  (uint32_t)stripped[n - 1] << 24) == (want));
}

static void sweep_one(uint32_t off, size_t payload_len, bool crc)
{
	static uint8_t payload[1200], plain[1300], wire[1400];
	uint8_t hdr[18] = {0x01, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0};
	struct iovec pay[4];
	size_t a = payload_len / 3, b = payload_len / 2, ulpdu = 18 + payload_len, wl;
	unsigned pad = iw_mpa_pad((uint32_t)ulpdu);
	struct iw_fpdu_tx tx;

	for (size_t i = 0; i < payload_len; i++)
		payload[i] = (uint8_t)(i * 7 + off);
	pay[0] = (struct iovec){payload, a};
	pay[1] = (struct iovec){payload + a, 0};
	pay[2] = (struct iovec){payload + a, b - a};
	pay[3] = (struct iovec){payload + b, payload_len - b};
	plain[0] = (uint8_t)(ulpdu >> 8);
	plain[1] = (uint8_t)ulpdu;
	memcpy(plain + 2, hdr, 18);
	memcpy(plain + 20, payload, payload_len);
	memset(plain + 20 + payload_len, 0, pad + 4);

	iw_fpdu_tx_init(&tx, crc, true, off);
	out_reset(IW_FPDU_IOV_NEED(4, 4));
	REQUIRE((iw_fpdu_encode(&tx, &out, hdr, 18, pay, 4)) == (0));
	wl = flatten(&out, wire, sizeof(wire));
	REQUIRE((wl) == (out.wire_len));
	REQUIRE((wl) == (iw_fpdu_wire_len(off, (uint32_t)ulpdu, true)));
	REQUIRE((tx.stream_off) == (off + wl));
	ref_check(wire, wl, off, plain, 2 + ulpdu + pad + 4, crc);
}

/* Every 4-aligned stream offset 0..1023 and a spread of FPDU sizes. */
START_TEST(t_marker_sweep_aligned)
{
	for (uint32_t off = 0; off < 1024; off += 4)
		for (size_t len = 0; len <= 1100; len += (len < 40 ? 1 : 37))
			sweep_one(off, len, true);
}
END_TEST

/* Unaligned offsets put markers inside the length and the CRC field. */
START_TEST(t_marker_sweep_unaligned)
{
	for (uint32_t off = 0; off < 1024; off++) {
		if ((off & 511) >= 1 && (off & 511) <= 3)
			continue; /* inside a marker: no FPDU starts there */
		for (size_t len = 0; len < 24; len++)
			sweep_one(off, len, (off & 1) != 0);
		sweep_one(off, 1000, true);
	}
}
END_TEST

/* Back-to-back FPDUs keep the marker phase across FPDU boundaries. */
START_TEST(t_stream_of_fpdus)
{
	static uint8_t payload[600], wire[8192];
	uint8_t hdr[14] = {0xc1, 0x40, 0, 0, 0, 9};
	struct iw_fpdu_tx tx;
	size_t total = 0;

	iw_fpdu_tx_init(&tx, true, true, 0);
	for (int k = 0; k < 12; k++) {
		struct iovec pay = {payload, (size_t)(k * 47)};

		out_reset(IW_FPDU_IOV_NEED(1, 3));
		ck_assert_int_eq(iw_fpdu_encode(&tx, &out, hdr, 14, &pay, 1), 0);
		total += flatten(&out, wire + total, sizeof(wire) - total);
	}
	ck_assert_uint_eq(tx.stream_off, total);
	/* every 512th octet starts a marker with a pointer no larger than its
	 * offset, and a pointer of 0 marks an FPDU start */
	for (size_t i = 0; i < total; i += 512) {
		size_t ptr = (size_t)(wire[i + 2] << 8 | wire[i + 3]);

		ck_assert_uint_eq(wire[i], 0);
		ck_assert_uint_eq(wire[i + 1], 0);
		ck_assert_uint_le(ptr, i);
	}
}
END_TEST

/* iw_fpdu_encode_flat writes the octets iw_fpdu_encode gathers: the
 * vectors, cut into pieces, come out exact. */
START_TEST(t_flat_vectors)
{
	const struct txv *v = &vecs[_i];
	uint8_t fp[128], wire[256];
	size_t len = tu_unhex(fp, sizeof(fp), v->hex);
	size_t hl = v->hdr_len, ulpdu = (size_t)(fp[0] << 8 | fp[1]);
	struct iovec pay[2] = {{fp + 2 + hl, (ulpdu - hl) / 2},
			       {fp + 2 + hl + (ulpdu - hl) / 2, ulpdu - hl - (ulpdu - hl) / 2}};
	struct iw_fpdu_tx tx;

	iw_fpdu_tx_init(&tx, true, false, 1000);
	memset(wire, 0xA5, sizeof(wire));
	ck_assert_uint_eq(iw_fpdu_encode_flat(&tx, wire, sizeof(wire), fp + 2, hl, pay, 2), len);
	ck_assert_msg(memcmp(wire, fp, len) == 0, "%s: bytes differ", v->name);
	ck_assert_uint_eq(tx.stream_off, 1000 + len);
}
END_TEST

/* Every header length, payloads of 0..77 octets in up to three pieces, CRC
 * on and off: the same octets and stream offset as iw_fpdu_encode; one
 * octet less room than the FPDU, or markers on, and it declines with the
 * sender untouched. */
START_TEST(t_flat_matches_encode)
{
	static uint8_t payload[80], hdr[IW_FPDU_HDR_MAX], flat[256], gathered[256];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < sizeof(hdr); i++)
		hdr[i] = (uint8_t)(0x41 + i);
	for (size_t hl = IW_DDP_TAGGED_HDR_LEN; hl <= IW_FPDU_HDR_MAX; hl++) {
		for (size_t pl = 0; pl < 78; pl += 1 + pl / 8) {
			struct iovec pay[3] = {{payload, pl / 3}, {payload + pl / 3, 0},
					       {payload + pl / 3, pl - pl / 3}};
			struct iw_fpdu_tx a, b;
			iw_fpdu_tx_init(&a, pl & 1, false, (uint32_t)(hl * 13 + pl));
			b = a;
			out_reset(IW_FPDU_IOV_NEED(3, 0));
			REQUIRE(iw_fpdu_encode(&a, &out, hdr, hl, pay, 3) == 0);
			size_t n = flatten(&out, gathered, sizeof(gathered));
			struct iw_fpdu_tx c = b;
			REQUIRE(iw_fpdu_encode_flat(&c, flat, n - 1, hdr, hl, pay, 3) == 0);
			REQUIRE(c.stream_off == b.stream_off);
			REQUIRE(iw_fpdu_encode_flat(&b, flat, n, hdr, hl, pay, 3) == n);
			REQUIRE(memcmp(flat, gathered, n) == 0);
			REQUIRE(a.stream_off == b.stream_off);
		}
	}
	struct iw_fpdu_tx m;
	struct iovec one = {payload, 10};
	iw_fpdu_tx_init(&m, true, false, 0);
	ck_assert_uint_eq(iw_fpdu_encode_flat(&m, flat, sizeof(flat), hdr, 13, &one, 1), 0);
	ck_assert_uint_eq(m.stream_off, 0);
}
END_TEST

/* One FPDU framed flat and gathered from the same sender state: the same
 * octets and the same stream offset after it; with one octet less room
 * the flat path declines and leaves the sender as it was. */
static void flat_vs_gathered(uint32_t off, bool crc, const uint8_t *hdr, size_t hl,
			     const struct iovec *pay, int cnt)
{
	static uint8_t flat[3000], gathered[3000];
	struct iw_fpdu_tx a, b, c;
	iw_fpdu_tx_init(&a, crc, true, off);
	b = c = a;
	out_reset(IW_FPDU_IOV_NEED(3, IW_FPDU_MARKERS_MAX));
	REQUIRE(iw_fpdu_encode(&a, &out, hdr, hl, pay, cnt) == 0);
	size_t n = flatten(&out, gathered, sizeof(gathered));
	REQUIRE(iw_fpdu_encode_flat(&c, flat, n - 1, hdr, hl, pay, cnt) == 0);
	REQUIRE(c.stream_off == off);
	memset(flat, 0xA5, sizeof(flat));
	REQUIRE(iw_fpdu_encode_flat(&b, flat, sizeof(flat), hdr, hl, pay, cnt) == n);
	REQUIRE(memcmp(flat, gathered, n) == 0);
	REQUIRE(b.stream_off == a.stream_off);
}

/* Markers on (the stage of a QP with markers frames FPDUs this way): at
 * every stream phase an FPDU may start at, with payloads that put a marker
 * on every octet of the length, header, payload, pad and CRC field (one
 * and more markers per FPDU, payload in three pieces), CRC on and off:
 * the octets iw_fpdu_encode gathers. */
START_TEST(t_flat_markers_every_phase)
{
	static uint8_t payload[2100], hdr[IW_FPDU_HDR_MAX];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 1);
	for (size_t i = 0; i < sizeof(hdr); i++)
		hdr[i] = (uint8_t)(0x61 + i);
	const size_t lens[] = {0, 1, 2, 3, 5, 60, 489, 490, 491, 492, 493, 494, 495, 496, 497,
			       498, 499, 500, 507, 508, 509, 1000, 1016, 2083};
	for (uint32_t phase = 0; phase < IW_MPA_MARKER_INTERVAL; phase++) {
		/* Octets 1..3 of a marker: no FPDU starts there. */
		if (phase >= 1 && phase < IW_MPA_MARKER_LEN)
			continue;
		for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
			size_t pl = lens[li], hl = li & 1 ? IW_DDP_TAGGED_HDR_LEN : 18;
			struct iovec pay[3] = {{payload, pl / 2}, {payload + pl / 2, 0},
					       {payload + pl / 2, pl - pl / 2}};
			flat_vs_gathered(0x7FFFFE00u + phase, (phase + li) & 1, hdr, hl, pay, 3);
		}
	}
}
END_TEST

/* The refusals of iw_fpdu_encode hold for the flat path too: inside a
 * marker, an FPDUPTR past 16 bits; the sender stays untouched. */
START_TEST(t_flat_markers_refusals)
{
	static uint8_t payload[65536], hdr[IW_FPDU_HDR_MAX], flat[70000];
	struct iw_fpdu_tx m;
	struct iovec one = {payload, 10};
	iw_fpdu_tx_init(&m, true, true, 2);
	ck_assert_uint_eq(iw_fpdu_encode_flat(&m, flat, sizeof(flat), hdr, 18, &one, 1), 0);
	ck_assert_uint_eq(m.stream_off, 2);
	/* Largest ULPDU from just after a marker: the last marker lies more
	 * than 65535 octets past the FPDU's start. */
	struct iovec big = {payload, IW_MPA_ULPDU_MAX - 18};
	iw_fpdu_tx_init(&m, true, true, 4);
	ck_assert_uint_eq(iw_fpdu_encode_flat(&m, flat, sizeof(flat), hdr, 18, &big, 1), 0);
	ck_assert_uint_eq(m.stream_off, 4);
	struct iw_fpdu_tx g = m;
	out_reset(IW_FPDU_IOV_NEED(1, IW_FPDU_MARKERS_MAX));
	ck_assert_int_eq(iw_fpdu_encode(&g, &out, hdr, 18, &big, 1), -EMSGSIZE);
}
END_TEST

Suite *suite_mpa_tx(void)
{
	Suite *s = suite_create("mpa_tx");
	TCase *tc = tcase_create("encode");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, t_vectors_exact, 0, NUM_VECS);
	tcase_add_test(tc, t_marker_at_508);
	tcase_add_loop_test(tc, t_marker_places, 0, (int)(sizeof(places) / sizeof(places[0])));
	tcase_add_test(tc, t_mulpdu);
	tcase_add_test(tc, t_pad_and_wire_len);
	tcase_add_test(tc, t_crc_off);
	tcase_add_test(tc, t_payload_by_reference);
	tcase_add_test(tc, t_empty_pieces_and_zero_payload);
	tcase_add_test(tc, t_header_in_place);
	tcase_add_test(tc, t_errors);
	tcase_add_test(tc, t_enospc_leaves_tx);
	tcase_add_test(tc, t_marker_sweep_aligned);
	tcase_add_test(tc, t_marker_sweep_unaligned);
	tcase_add_test(tc, t_stream_of_fpdus);
	tcase_add_loop_test(tc, t_flat_vectors, 0, NUM_VECS);
	tcase_add_test(tc, t_flat_matches_encode);
	tcase_add_test(tc, t_flat_markers_every_phase);
	tcase_add_test(tc, t_flat_markers_refusals);
	suite_add_tcase(s, tc);
	return s;
}
