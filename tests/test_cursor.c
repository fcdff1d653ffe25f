/* SPDX-License-Identifier: BSD-2-Clause */
/* Bounded reader and writer (lib/wire/cursor.h). */
#include <string.h>

#include "wire/cursor.h"
#include "suites.h"

static const uint8_t seq[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
			      0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};

START_TEST(read_big_endian)
{
	struct iw_cur c = iw_cur_make(seq, sizeof(seq));
	uint8_t b;
	uint16_t h;
	uint32_t w;
	uint64_t q;

	ck_assert(iw_cur_u8(&c, &b));
	ck_assert_uint_eq(b, 0x01);
	ck_assert(iw_cur_u16(&c, &h));
	ck_assert_uint_eq(h, 0x0203);
	ck_assert(iw_cur_u32(&c, &w));
	ck_assert_uint_eq(w, 0x04050607);
	ck_assert(iw_cur_u64(&c, &q));
	ck_assert_uint_eq(q, 0x08090a0b0c0d0e0full);
	ck_assert_uint_eq(c.left, 0);
	ck_assert_ptr_eq(c.p, seq + sizeof(seq));
}
END_TEST

START_TEST(read_odd_widths)
{
	struct iw_cur c = iw_cur_make(seq, sizeof(seq));
	uint64_t v = 42;

	ck_assert(iw_cur_be(&c, 0, &v));
	ck_assert_uint_eq(v, 0);
	ck_assert(iw_cur_be(&c, 3, &v));
	ck_assert_uint_eq(v, 0x010203);
	ck_assert(iw_cur_be(&c, 5, &v));
	ck_assert_uint_eq(v, 0x0405060708ull);
	ck_assert_uint_eq(c.left, sizeof(seq) - 8);
}
END_TEST

START_TEST(high_bit_values)
{
	static const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
	struct iw_cur c = iw_cur_make(ff, sizeof(ff));
	uint64_t q;
	uint16_t h;

	/* no sign extension anywhere */
	ck_assert(iw_cur_u64(&c, &q));
	ck_assert_uint_eq(q, 0xfffffffffffffffeull);
	ck_assert_uint_eq(iw_get_be16(ff), 0xffff);
	c = iw_cur_make(ff, 2);
	ck_assert(iw_cur_u16(&c, &h));
	ck_assert_uint_eq(h, 0xffff);
	ck_assert_uint_eq(iw_get_le32(ff + 4), 0xfeffffffu);
}
END_TEST

/* A short read fails and leaves the cursor and the output untouched. */
START_TEST(short_read_leaves_cursor)
{
	for (size_t n = 0; n < 8; n++) {
		struct iw_cur c = iw_cur_make(seq, n);
		uint64_t q = 0x55;
		uint32_t w = 0x55;
		uint16_t h = 0x55;
		uint8_t b = 0x55, buf[9];

		memset(buf, 0x55, sizeof(buf));
		ck_assert(!iw_cur_u64(&c, &q));
		if (n < 4)
			ck_assert(!iw_cur_u32(&c, &w));
		if (n < 2)
			ck_assert(!iw_cur_u16(&c, &h));
		if (n < 1)
			ck_assert(!iw_cur_u8(&c, &b));
		ck_assert(!iw_cur_bytes(&c, buf, n + 1));
		ck_assert(!iw_cur_skip(&c, n + 1));
		ck_assert_uint_eq(q, 0x55);
		ck_assert_uint_eq(w, 0x55);
		ck_assert_uint_eq(h, 0x55);
		ck_assert_uint_eq(b, 0x55);
		ck_assert_uint_eq(buf[0], 0x55);
		ck_assert_ptr_eq(c.p, seq);
		ck_assert_uint_eq(c.left, n);
	}
}
END_TEST

START_TEST(skip_and_bytes)
{
	struct iw_cur c = iw_cur_make(seq, sizeof(seq));
	uint8_t buf[4];

	ck_assert(iw_cur_skip(&c, 0));
	ck_assert(iw_cur_skip(&c, 3));
	ck_assert(iw_cur_bytes(&c, buf, 4));
	ck_assert_mem_eq(buf, seq + 3, 4);
	ck_assert(iw_cur_bytes(&c, NULL, 0));
	ck_assert(iw_cur_skip(&c, sizeof(seq) - 7));
	ck_assert_uint_eq(c.left, 0);
	ck_assert(!iw_cur_skip(&c, 1));
	/* a huge skip does not wrap around */
	c = iw_cur_make(seq, sizeof(seq));
	ck_assert(!iw_cur_skip(&c, (size_t)-1));
	ck_assert_uint_eq(c.left, sizeof(seq));
}
END_TEST

START_TEST(empty_cursor)
{
	struct iw_cur c = iw_cur_make(NULL, 0);
	uint8_t b;

	ck_assert(!iw_cur_u8(&c, &b));
	ck_assert(iw_cur_skip(&c, 0));
	ck_assert(iw_cur_bytes(&c, &b, 0));
}
END_TEST

START_TEST(write_big_endian)
{
	uint8_t out[16];
	struct iw_wr w = iw_wr_make(out, sizeof(out));

	memset(out, 0xEE, sizeof(out));
	ck_assert(iw_wr_u8(&w, 0x01));
	ck_assert(iw_wr_u16(&w, 0x0203));
	ck_assert(iw_wr_u32(&w, 0x04050607));
	ck_assert(iw_wr_u64(&w, 0x08090a0b0c0d0e0full));
	ck_assert(!w.failed);
	ck_assert_uint_eq(w.len, 15);
	ck_assert_mem_eq(out, seq, 15);
	ck_assert_uint_eq(out[15], 0xEE);
	/* iw_wr_be truncates the value to n octets */
	w = iw_wr_make(out, sizeof(out));
	ck_assert(iw_wr_be(&w, 3, 0xAABBCCDDull));
	ck_assert_uint_eq(out[0], 0xBB);
	ck_assert_uint_eq(out[2], 0xDD);
}
END_TEST

/* Once failed, every later put fails (even ones that would fit), and
 * nothing is written past the capacity. */
START_TEST(write_failure_is_sticky)
{
	uint8_t out[8];
	struct iw_wr w = iw_wr_make(out, 5);

	memset(out, 0xEE, sizeof(out));
	ck_assert(iw_wr_u32(&w, 0x11223344));
	ck_assert(!iw_wr_u16(&w, 0x5566));
	ck_assert(w.failed);
	ck_assert(!iw_wr_u8(&w, 0x77));
	ck_assert(!iw_wr_bytes(&w, "x", 1));
	ck_assert_uint_eq(w.len, 4);
	ck_assert_uint_eq(out[4], 0xEE);
	ck_assert_uint_eq(out[5], 0xEE);
}
END_TEST

START_TEST(write_exact_fit_and_bytes)
{
	uint8_t out[6];
	struct iw_wr w = iw_wr_make(out, sizeof(out));

	ck_assert(iw_wr_bytes(&w, "abcd", 4));
	ck_assert(iw_wr_bytes(&w, NULL, 0));
	ck_assert(iw_wr_u16(&w, 0x6566));
	ck_assert(!w.failed);
	ck_assert_mem_eq(out, "abcdef", 6);
	ck_assert(!iw_wr_bytes(&w, "g", 1));

	w = iw_wr_make(NULL, 0);
	ck_assert(!iw_wr_u8(&w, 1));
	ck_assert(w.failed);
	/* A length near SIZE_MAX must not wrap the bounds check. Volatile
	 * keeps the compiler from flagging the (unreached) memcpy. */
	volatile size_t huge = (size_t)-1;
	w = iw_wr_make(out, sizeof(out));
	ck_assert(iw_wr_u8(&w, 0));
	ck_assert(!iw_wr_bytes(&w, out, huge));
}
END_TEST

START_TEST(fixed_helpers)
{
	uint8_t b[4];

	iw_put_be16(b, 0xA1B2);
	ck_assert_uint_eq(b[0], 0xA1);
	ck_assert_uint_eq(b[1], 0xB2);
	ck_assert_uint_eq(iw_get_be16(b), 0xA1B2);
	iw_put_le32(b, 0x8A9136AA);
	ck_assert_uint_eq(b[0], 0xAA);
	ck_assert_uint_eq(b[1], 0x36);
	ck_assert_uint_eq(b[2], 0x91);
	ck_assert_uint_eq(b[3], 0x8A);
	ck_assert_uint_eq(iw_get_le32(b), 0x8A9136AA);
}
END_TEST

Suite *suite_cursor(void)
{
	Suite *s = suite_create("cursor");
	TCase *tc = tcase_create("cursor");

	tcase_add_test(tc, read_big_endian);
	tcase_add_test(tc, read_odd_widths);
	tcase_add_test(tc, high_bit_values);
	tcase_add_test(tc, short_read_leaves_cursor);
	tcase_add_test(tc, skip_and_bytes);
	tcase_add_test(tc, empty_cursor);
	tcase_add_test(tc, write_big_endian);
	tcase_add_test(tc, write_failure_is_sticky);
	tcase_add_test(tc, write_exact_fit_and_bytes);
	tcase_add_test(tc, fixed_helpers);
	suite_add_tcase(s, tc);
	return s;
}
