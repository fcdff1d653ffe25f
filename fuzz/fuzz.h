/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the libFuzzer targets. */
#ifndef IW_FUZZ_H
#define IW_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* On the harness's own functions (the checks, shadows and digests around
 * the code under test): no coverage counters and no comparison tracing in
 * them. Their branches tell the fuzzer nothing the library's do not, and
 * in the per-octet loops the tracing cost more than the decoding. */
#ifndef FUZZ_HARNESS /* -DFUZZ_HARNESS= to compare */
#define FUZZ_HARNESS __attribute__((no_sanitize("coverage")))
#endif

/* An invariant the target asserts: abort() so libFuzzer saves the input. */
#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)
#endif
