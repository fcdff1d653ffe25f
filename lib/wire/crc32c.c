/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32c over ISA-L's crc32_iscsi. ISA-L does no pre- or post-inversion (the
 * state it takes and returns is the raw register) and takes an int length, so
 * long inputs are fed in slices below INT_MAX.
 */
#include <isa-l/crc.h>
#include <limits.h>

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
