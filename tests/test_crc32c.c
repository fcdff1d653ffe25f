/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32c (lib/wire/crc32c.c, lib/wire/crc32c.h). The vectors are those of
 * /work/shared/reference/vectors/crc32c.iwv: RFC 3720 B.4 with the CRC
 * octets as the RFC prints them (least-significant octet first), the
 * catalogue check value, the empty input and "rdma_test".
 */
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/crc32c.h"
#include "suites.h"
#include "testutil.h"

struct crc_vec {
	const char *name;
	uint8_t data[48];
	size_t len;
	uint32_t crc;
	uint8_t wire[4]; /* as printed in the RFC / as on the wire */
};

#define X16(b) b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b

static const struct crc_vec vecs[] = {
	{"rfc3720_zeros", {X16(0), X16(0)}, 32, 0x8a9136aa, {0xaa, 0x36, 0x91, 0x8a}},
	{"rfc3720_ones", {X16(0xff), X16(0xff)}, 32, 0x62a8ab43, {0x43, 0xab, 0xa8, 0x62}},
	{"rfc3720_incrementing",
	 {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
	  0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
	  0x1e, 0x1f},
	 32, 0x46dd794e, {0x4e, 0x79, 0xdd, 0x46}},
	{"rfc3720_decrementing",
	 {0x1f, 0x1e, 0x1d, 0x1c, 0x1b, 0x1a, 0x19, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
	  0x10, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02,
	  0x01, 0x00},
	 32, 0x113fdb5c, {0x5c, 0xdb, 0x3f, 0x11}},
	{"rfc3720_iscsi_read10_pdu",
	 {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	  0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
	  0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
	  0x00, 0x00, 0x00},
	 48, 0xd9963a56, {0x56, 0x3a, 0x96, 0xd9}},
	{"check_123456789", "123456789", 9, 0xe3069283, {0x83, 0x92, 0x06, 0xe3}},
	{"ascii_rdma_test", "rdma_test", 9, 0x95f092b5, {0xb5, 0x92, 0xf0, 0x95}},
};
#define NUM_VECS ((int)(sizeof(vecs) / sizeof(vecs[0])))

START_TEST(vector_value)
{
	const struct crc_vec *v = &vecs[_i];

	ck_assert_msg(iw_crc32c(v->data, v->len) == v->crc, "%s", v->name);
	ck_assert_uint_eq(tu_ref_crc32c(v->data, v->len), v->crc);
}
END_TEST

START_TEST(vector_wire_order)
{
	const struct crc_vec *v = &vecs[_i];
	uint8_t w[4];

	iw_crc32c_put_wire(w, iw_crc32c(v->data, v->len));
	ck_assert_mem_eq(w, v->wire, 4);
	ck_assert_uint_eq(iw_crc32c_get_wire(v->wire), v->crc);
}
END_TEST

START_TEST(zeros_on_wire)
{
	static const uint8_t zeros[32];
	static const uint8_t want[4] = {0xaa, 0x36, 0x91, 0x8a};
	uint8_t w[4];

	iw_crc32c_put_wire(w, iw_crc32c(zeros, sizeof(zeros)));
	ck_assert_mem_eq(w, want, 4);
}
END_TEST

START_TEST(check_value)
{
	ck_assert_uint_eq(iw_crc32c("123456789", 9), 0xE3069283u);
}
END_TEST

START_TEST(empty_input)
{
	ck_assert_uint_eq(iw_crc32c("", 0), 0);
	ck_assert_uint_eq(iw_crc32c(NULL, 0), 0);
	ck_assert_uint_eq(iw_crc32c_update(IW_CRC32C_INIT, NULL, 0), IW_CRC32C_INIT);
	ck_assert_uint_eq(iw_crc32c_iov(0x12345678, NULL, 0), 0x12345678);
}
END_TEST

/* Splitting the input anywhere gives the one-shot CRC. */
START_TEST(incremental_every_split)
{
	const struct crc_vec *v = &vecs[_i];

	for (size_t a = 0; a <= v->len; a++) {
		for (size_t b = a; b <= v->len; b++) {
			uint32_t s = IW_CRC32C_INIT;

			s = iw_crc32c_update(s, v->data, a);
			s = iw_crc32c_update(s, v->data + a, b - a);
			s = iw_crc32c_update(s, v->data + b, v->len - b);
			ck_assert_uint_eq(iw_crc32c_final(s), v->crc);
		}
	}
}
END_TEST

START_TEST(iovec_form)
{
	const struct crc_vec *v = &vecs[4]; /* the 48-octet PDU */
	struct iovec iov[5] = {
		{(void *)v->data, 1},
		{(void *)(v->data + 1), 0},
		{(void *)(v->data + 1), 20},
		{(void *)(v->data + 21), 26},
		{(void *)(v->data + 47), 1},
	};

	ck_assert_uint_eq(iw_crc32c_final(iw_crc32c_iov(IW_CRC32C_INIT, iov, 5)), v->crc);
	/* iovecs continue an existing state too */
	uint32_t s = iw_crc32c_update(IW_CRC32C_INIT, v->data, 1);
	ck_assert_uint_eq(iw_crc32c_final(iw_crc32c_iov(s, iov + 1, 4)), v->crc);
}
END_TEST

/* CRC over data followed by its CRC stored LSB first is a constant. */
START_TEST(residue)
{
	const struct crc_vec *v = &vecs[_i];
	uint8_t buf[sizeof(v->data) + 4];

	memcpy(buf, v->data, v->len);
	iw_crc32c_put_wire(buf + v->len, iw_crc32c(v->data, v->len));
	ck_assert_uint_eq(iw_crc32c(buf, v->len + 4), 0x48674BC7u);
	/* a flipped bit anywhere breaks it */
	buf[_i % (v->len + 4)] ^= 0x10;
	ck_assert_uint_ne(iw_crc32c(buf, v->len + 4), 0x48674BC7u);
}
END_TEST

/* A long buffer with odd lengths and offsets exercises ISA-L's wide paths
 * and their tails against the bitwise reference. */
START_TEST(long_random_buffer)
{
	const size_t n = (1 << 18) + 7;
	uint8_t *buf = malloc(n);
	uint32_t seed = 0xC0FFEE;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		buf[i] = (uint8_t)(seed >> 24);
	}
	ck_assert_uint_eq(iw_crc32c(buf, n), tu_ref_crc32c(buf, n));
	for (size_t off = 0; off < 5; off++) {
		size_t len = n - 1000 - off * 131;

		ck_assert_uint_eq(iw_crc32c(buf + off, len), tu_ref_crc32c(buf + off, len));
	}
	uint32_t s = IW_CRC32C_INIT;
	for (size_t pos = 0, step = 1; pos < n; pos += step, step = step * 3 % 4099 + 1) {
		size_t take = step < n - pos ? step : n - pos;

		s = iw_crc32c_update(s, buf + pos, take);
	}
	ck_assert_uint_eq(iw_crc32c_final(s), tu_ref_crc32c(buf, n));
	free(buf);
}
END_TEST

Suite *suite_crc32c(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("crc32c");

	tcase_add_loop_test(tc, vector_value, 0, NUM_VECS);
	tcase_add_loop_test(tc, vector_wire_order, 0, NUM_VECS);
	tcase_add_test(tc, zeros_on_wire);
	tcase_add_test(tc, check_value);
	tcase_add_test(tc, empty_input);
	tcase_add_loop_test(tc, incremental_every_split, 0, NUM_VECS);
	tcase_add_test(tc, iovec_form);
	tcase_add_loop_test(tc, residue, 0, NUM_VECS);
	tcase_add_test(tc, long_random_buffer);
	suite_add_tcase(s, tc);
	return s;
}
