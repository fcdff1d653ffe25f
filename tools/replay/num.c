/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Decimal and hexadecimal numbers for the reports, written with one fwrite
 * each (see num.h for why not printf).
 */
#include <stdio.h>

#include "num.h"

/* 2^64 - 1 has 20 decimal digits. */
#define DEC_MAX 20

/* The digits of v, written backwards from end; returns the first. */
static char *dec(uint64_t v, char *end)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

void rp_put_u64(uint64_t v)
{
	char b[DEC_MAX];
	char *p = dec(v, b + sizeof(b));

	fwrite(p, 1, (size_t)(b + sizeof(b) - p), stdout);
}

/* v right-aligned in width columns, filled with fill on the left. */
static void padded(uint64_t v, int width, char fill)
{
	char b[DEC_MAX];
	char *p = dec(v, b + sizeof(b));

	/* Like printf, a wider number is not cut. */
	for (int n = (int)(b + sizeof(b) - p); n < width; n++)
		putchar(fill);
	fwrite(p, 1, (size_t)(b + sizeof(b) - p), stdout);
}

void rp_put_u64w(uint64_t v, int width)
{
	padded(v, width, ' ');
}

void rp_put_u64z(uint64_t v, int width)
{
	padded(v, width, '0');
}

void rp_put_hex(uint64_t v, int digits)
{
	static const char xd[] = "0123456789abcdef";
	char b[16];
	int n = 0;

	/* Digits beyond 16 would be zeros of a 64-bit value: never asked. */
	if (digits > 16)
		digits = 16;
	do {
		b[sizeof(b) - 1 - n++] = xd[v & 15];
		v >>= 4;
	} while (v && n < 16);
	while (n < digits)
		b[sizeof(b) - 1 - n++] = '0';
	fwrite(b + sizeof(b) - n, 1, (size_t)n, stdout);
}
