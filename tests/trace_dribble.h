/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A trace whose octets reach the tracer in the worst pieces a loaded
 * machine produces: one connection written through lib/diag/trace.c, both
 * streams (the MPA Request or Reply, then FPDUs with CRC: Writes, Read
 * Requests, Read Responses and Sends of 0 to 3000 payload octets) handed
 * over in records that end 1 to 19 octets into a PDU, the initiator's
 * through iw_trace_tx_begin/end (partial writes), the responder's through
 * iw_trace_data (short reads), its MPA Reply one octet at a time, the MSS
 * 536. Used by the trace Check suite and by tests/gen_trace_dribble (which
 * tests/trace_tshark.sh hands to tshark).
 */
#ifndef IW_TEST_TRACE_DRIBBLE_H
#define IW_TEST_TRACE_DRIBBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TD_FPDUS 24 /* per direction */
#define TD_STREAM_MAX (64 * 1024)

struct td_trace {
	/* What each side sent, in order: [0] the initiator's. */
	uint8_t stream[2][TD_STREAM_MAX];
	size_t len[2];
	unsigned fpdus[2];
	unsigned by_op[2][4]; /* FPDUs per RDMAP opcode 0..3 */
};

/* Write the trace to path. tail: the initiator then sends the first 3
 * octets of one more FPDU and closes (its FIN right after them); they are
 * counted in len[0]. Returns 0, or the positive errno of iw_trace_new. */
int td_write(struct td_trace *out, const char *path, bool tail);

#endif
