/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The time origin of the human lines (reltime.c): below emit.c and the
 * printers it drives, so that a printer never calls back into emit.c.
 */
#ifndef RP_RELTIME_H
#define RP_RELTIME_H

#include <stdint.h>

/* The time of the capture's first frame: the human lines count from it. */
void rp_reltime_t0(uint64_t ts_ns);
/* A live session: its times are already counted from its start. */
void rp_reltime_live(void);
/* Seconds since the origin (or since the first item reported). */
double rp_reltime(uint64_t ts_ns);

#endif
