/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32c over ISA-L's crc32_iscsi. ISA-L does no pre- or post-inversion (the
 * state it takes and returns is the raw register) and takes an int length, so
 * long inputs are fed in slices below INT_MAX.
 */
#include <isa-l/crc.h>
#include <limits.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "iwarp/wire.h"
#include "wire/crc32c.h"
#include "base/visibility.h"

#define SLICE ((size_t)1 << 30)

/*
 * ISA-L's AVX-512 CRC kernel returns with the upper vector state dirty (no
 * vzeroupper; intel/isa-l issue #24), and every legacy-SSE instruction after
 * it then pays a state-transition penalty: decode throughput at 4 KiB FPDUs
 * dropped from ~0.56x to ~0.2x of the raw CRC rate. Clean up after it, but
 * only where the CPU has AVX (vzeroupper faults otherwise).
 */
static void vector_state_clean(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int have_avx = -1;

	if (have_avx < 0)
		have_avx = __builtin_cpu_supports("avx") ? 1 : 0;
	if (have_avx)
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

IW_EXPORT uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	/* crc32_iscsi's prototype lacks const; it does not write the buffer. */
	unsigned char *p = (unsigned char *)(uintptr_t)buf;

	while (len) {
		size_t n = len < SLICE ? len : SLICE;
		state = crc32_iscsi(p, (int)n, state);
		p += n;
		len -= n;
	}
	vector_state_clean();
	return state;
}

IW_EXPORT uint32_t iw_crc32c_iov(uint32_t state, const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++)
		state = iw_crc32c_update(state, iov[i].iov_base, iov[i].iov_len);
	return state;
}

IW_EXPORT uint32_t iw_crc32c(const void *buf, size_t len)
{
	return iw_crc32c_final(iw_crc32c_update(IW_CRC32C_INIT, buf, len));
}

/* ---------------------------------------------------- copy and CRC */

#if defined(__x86_64__) && defined(__GNUC__)
#define FOLD_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

/*
 * Constants for folding a 128-bit block of the stream forward by D bits
 * onto the block D bits later: x^(D+31) mod P for its low quadword (the
 * earlier 64 bits of the stream) and x^(D-33) mod P for its high one, P
 * the Castagnoli polynomial, each bit-reflected as the CRC register is
 * (bit j holds the coefficient of x^(31-j)). The odd exponents come from
 * the carry-less product of reflected operands, whose value comes out
 * multiplied by x^33. Each is x^0 (0x80000000) multiplied by x n times,
 * a shift right with the polynomial XORed in when a 1 falls off (scripted,
 * not typed); tests/test_crc32c.c checks the copy's CRC against ISA-L's
 * at every length class, which a wrong constant fails.
 * Per 128-bit lane: {low quadword's, high quadword's}.
 */
static const long long fold_2048[2] = {0xdcb17aa4, 0xb9e02b86}; /* 256 octets */
static const long long fold_512[2] = {0x740eef02, 0x9e4addf8};	/* 64 */
static const long long fold_384[2] = {0x1c291d04, 0xddc0152b};	/* 48 */
static const long long fold_256[2] = {0x3da6d0cb, 0xba4fc28e};	/* 32 */
static const long long fold_128[2] = {0xf20c0dfe, 0x493c7d27};	/* 16 */

FOLD_TARGET static inline __m512i fold4(__m512i a, __m512i k, __m512i next)
{
	__m512i lo = _mm512_clmulepi64_epi128(a, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(a, k, 0x11);
	return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

FOLD_TARGET static inline __m128i fold1(__m128i a, const long long k[2], __m128i next)
{
	__m128i kk = _mm_loadu_si128((const __m128i *)(const void *)k);
	__m128i lo = _mm_clmulepi64_si128(a, kk, 0x00);
	__m128i hi = _mm_clmulepi64_si128(a, kk, 0x11);
	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

FOLD_TARGET static inline __m512i kbcast(const long long k[2])
{
	return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)k));
}

/* Copy 256 octets at off, returning them as four accumulators' worth. */
FOLD_TARGET static inline void copy256(uint8_t *dst, const uint8_t *src, size_t off, __m512i b[4])
{
	for (int i = 0; i < 4; i++) {
		b[i] = _mm512_loadu_si512(src + off + 64 * i);
		_mm512_storeu_si512(dst + off + 64 * i, b[i]);
	}
}

/* Sixteen 128-bit lanes (a[0] first in the stream) to one, then the CRC
 * instruction over its 16 octets reduces it to the register. */
FOLD_TARGET static uint32_t fold_down(__m512i a[4])
{
	__m512i k = kbcast(fold_512);
	for (int i = 1; i < 4; i++)
		a[i] = fold4(a[i - 1], k, a[i]);
	__m128i r = _mm512_extracti32x4_epi32(a[3], 3);
	r = fold1(_mm512_extracti32x4_epi32(a[3], 2), fold_128, r);
	r = fold1(_mm512_extracti32x4_epi32(a[3], 1), fold_256, r);
	r = fold1(_mm512_castsi512_si128(a[3]), fold_384, r);
	uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
	return (uint32_t)_mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
}

/* n: a multiple of 256, at least 256. The register goes into the first
 * four octets (a CRC from state s over M is one from 0 over M with s
 * XORed into its start); the 128-bit lanes fold 256 octets forward per
 * round while the octets are in registers for the copy anyway. */
FOLD_TARGET static uint32_t copy_fold(uint32_t state, uint8_t *dst, const uint8_t *src, size_t n)
{
	__m512i a[4], b[4];
	copy256(dst, src, 0, a);
	a[0] = _mm512_xor_si512(a[0], _mm512_castsi128_si512(_mm_cvtsi32_si128((int)state)));
	__m512i k = kbcast(fold_2048);
	for (size_t off = 256; off < n; off += 256) {
		copy256(dst, src, off, b);
		for (int i = 0; i < 4; i++)
			a[i] = fold4(a[i], k, b[i]);
	}
	return fold_down(a);
}

static bool fold_usable(void)
{
	static int have = -1;
	if (have < 0)
		have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
		       __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
	return have;
}
#endif

/*
 * A copy that leaves the CRC of what it copied: one pass over the octets
 * instead of a copy and then a CRC over the copy (the transmit path's flat
 * FPDUs). With AVX-512 and VPCLMULQDQ a 4 KiB copy and CRC cost about what
 * ISA-L's CRC alone does; elsewhere, and for the last len % 256 octets, the
 * copy and then iw_crc32c_update.
 */
uint32_t iw_crc32c_copy(uint32_t state, void *dst, const void *src, size_t len)
{
	size_t n = 0;
#if defined(__x86_64__) && defined(__GNUC__)
	if (len >= 256 && fold_usable()) {
		n = len & ~(size_t)255;
		state = copy_fold(state, dst, src, n);
	}
#endif
	if (len > n)
		memcpy((uint8_t *)dst + n, (const uint8_t *)src + n, len - n);
	return iw_crc32c_update(state, (uint8_t *)dst + n, len - n);
}
