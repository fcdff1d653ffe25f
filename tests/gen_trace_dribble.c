/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gen_trace_dribble OUT.pcap
 *
 * Writes the trace of tests/trace_dribble.c (both streams handed to the
 * tracer in records that end a few octets into each PDU) for
 * tests/trace_tshark.sh, which checks that tshark follows every FPDU of it.
 * Exit status: 0, or 1 when the tracer could not be started.
 */
#include <stdio.h>
#include <string.h>

#include "trace_dribble.h"

int main(int argc, char **argv)
{
	static struct td_trace td;
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 1;
	}
	int rc = td_write(&td, argv[1], false);
	if (rc) {
		fprintf(stderr, "gen_trace_dribble: %s: %s\n", argv[1], strerror(rc));
		return 1;
	}
	return 0;
}
