/* SPDX-License-Identifier: BSD-2-Clause */
#include <dirent.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "iwv.h"
#include "testutil.h"

uint32_t tu_ref_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
	}
	return ~c;
}

size_t tu_unhex(uint8_t *out, size_t cap, const char *s)
{
	int n = iwv_hex(s, out, cap);

	ck_assert_msg(n >= 0, "malformed hex or buffer too small: %s", s);
	return (size_t)n;
}

bool tu_under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");

	return pre && strstr(pre, "vgpreload");
}

int tu_open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

void tu_cq_ctx_init(struct iw_context *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ck_assert_int_eq(iw_evq_init(&ctx->async), 0);
	ck_assert_int_eq(pthread_mutex_init(&ctx->lock, NULL), 0);
}

void tu_cq_ctx_fini(struct iw_context *ctx)
{
	iw_async_cleanup(ctx);
	pthread_mutex_destroy(&ctx->lock);
}
