/* SPDX-License-Identifier: BSD-2-Clause */
/* The time origin of the human lines (reltime.h). */
#include "reltime.h"

#include <stdbool.h>

static bool have_t0;
static uint64_t t0;

void rp_reltime_t0(uint64_t ts_ns)
{
	if (!have_t0) {
		have_t0 = true;
		t0 = ts_ns;
	}
}

void rp_reltime_live(void)
{
	have_t0 = true;
	t0 = 0;
}

double rp_reltime(uint64_t ts_ns)
{
	rp_reltime_t0(ts_ns);
	return ts_ns >= t0 ? (double)(ts_ns - t0) / 1e9 : -(double)(t0 - ts_ns) / 1e9;
}
