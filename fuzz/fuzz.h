/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the libFuzzer targets. */
#ifndef IW_FUZZ_H
#define IW_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant the target asserts: abort() so libFuzzer saves the input. */
#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)
#endif
