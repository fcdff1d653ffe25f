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
#include <sys/mman.h>

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
