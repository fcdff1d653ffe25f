/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory of iwarp-nvmet's RAM namespaces and of iwarp-nvmf-perf's raw
 * TCP baseline store, made alike so the two are compared fairly.
 *
 * Huge pages: a 128 KiB I/O into memory spread over 4 KiB pages costs a
 * TLB miss per page, and on the machine where make nvmf-bench was tuned
 * that doubled the target's CPU time per 128 KiB write into a 256 MiB
 * namespace (92-118 us against 46-51 us with MADV_HUGEPAGE). The THP
 * setting there was "madvise", as on Debian, so the region must ask.
 *
 * Faulted in now, as a RAM disk's memory should be: not a zero-filled page
 * fault in the I/O path on the first write of each page. Touching each
 * 4 KiB after the madvise lets the kernel fault in a whole huge page at a
 * time (MAP_POPULATE would fault before the advice is given).
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "ram_map.h"

void *ram_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE); /* advice: without THP, 4 KiB pages */
	for (size_t off = 0; off < len; off += 4096)
		((volatile uint8_t *)p)[off] = 0;
	return p;
}

/*
 * A write into a RAM namespace lands in memory no cache holds (a disk's
 * worth of it, written once and read back much later), from a receive
 * buffer a cache does hold (the SRQ hands out the buffer freed last).
 * memcpy stores through the cache: each line is first read from memory,
 * then written back. Streaming stores skip that read. On the machine of
 * the README's figures, 128 KiB from a warm buffer into a 64 MiB region:
 * 8.5 us with memcpy, 5.3 us with streaming stores (a microbenchmark,
 * 4000 copies, median of three). Below RAM_STREAM_MIN the lines may well
 * be read again soon (metadata, small random writes) and memcpy stays.
 */
#define RAM_STREAM_MIN (32u << 10)

#if defined(__x86_64__)
static void stream_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
	for (; len >= 64; len -= 64, dst += 64, src += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
	_mm_sfence(); /* the stores are seen before the completion is sent */
	memcpy(dst, src, len);
}
#endif

void ram_store(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	if (len >= RAM_STREAM_MIN && ((uintptr_t)dst & 15) == 0) {
		stream_copy(dst, src, len);
		return;
	}
#endif
	memcpy(dst, src, len);
}
