/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The human summary at the end of a run: what was read, what was decoded
 * per RDMAP opcode, what was wrong, and the first error with its stream
 * offset so that it can be found again (tshark: tcp.seq).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"

static void capture_line(const struct rp_stats *s)
{
	const struct rp_capture_stats *c = &s->cap;

	printf("  read: %" PRIu64 " frames, %" PRIu64 " TCP segments", c->frames, c->tcp);
	if (c->not_ip || c->not_tcp || c->fragments || c->malformed)
		printf(" (skipped: %" PRIu64 " not IP, %" PRIu64 " not TCP, %" PRIu64
		       " IP fragments, %" PRIu64 " malformed)",
		       c->not_ip, c->not_tcp, c->fragments, c->malformed);
	printf("; %" PRIu64 " TCP connections, %" PRIu64 " with iWARP\n", s->conns, s->iwarp_conns);
	printf("  TCP: %" PRIu64 " retransmissions, %" PRIu64 " out of order, %" PRIu64
	       " overlaps (%" PRIu64 " with different data), %" PRIu64 " gaps (%" PRIu64
	       " octets)%s\n",
	       s->retrans, s->ooo, s->overlaps, s->conflicts, s->gaps, s->gap_bytes,
	       c->snapped ? ", some segments cut by the snapshot length" : "");
}

static void opcode_lines(const struct rp_stats *s)
{
	for (unsigned op = 0; op < RP_OPCODES; op++) {
		if (!s->segs[op])
			continue;
		printf("    %-32s %8" PRIu64 " messages %8" PRIu64 " FPDUs %12" PRIu64
		       " payload octets\n",
		       iw_rdmap_opcode_str(op), s->msgs[op], s->segs[op], s->payload[op]);
	}
}

static void first_error(const struct rp_first_err *e)
{
	if (!e->set) {
		printf("  first error: none\n");
		return;
	}
	printf("  first error:");
	if (e->conn)
		printf(" connection %u %s frame %" PRIu64, e->conn,
		       strcmp(e->dir, "i2r") ? "R>I" : "I>R", e->frame);
	else
		printf(" %s", e->dir);
	if (e->has_off)
		printf(" stream offset %" PRIu32, e->stream_off);
	if (e->has_seq)
		printf(" (seq %" PRIu32 ")", e->seq);
	printf(": %s\n", e->what);
}

void rp_print_summary(const struct rp_stats *s, bool check, bool fail_on_term)
{
	uint64_t errs = rp_stats_errors(s);

	printf("summary:\n");
	if (!s->live)
		capture_line(s);
	else
		printf("  sent %" PRIu64 " FPDUs (%" PRIu64 " octets); from the peer:\n", s->tx_fpdus,
		       s->tx_bytes);
	printf("  MPA frames %" PRIu64 ", FPDUs %" PRIu64 " (%" PRIu64 " octets on the wire)\n",
	       s->mpa_frames, s->fpdus, s->wire_bytes);
	opcode_lines(s);
	printf("  TERMINATE messages %" PRIu64 "\n", s->terminates);
	printf("  CRC errors %" PRIu64 ", marker errors %" PRIu64 ", other protocol errors %" PRIu64
	       ", invalid MPA frames %" PRIu64 ", incomplete FPDUs %" PRIu64 "\n",
	       s->crc_errors, s->marker_errors, s->proto_errors, s->mpa_errors, s->lost);
	first_error(&s->first);
	if (errs || (fail_on_term && s->terminates))
		printf("  result: %" PRIu64 " protocol errors%s\n", errs,
		       check ? " (--check: exit 1)" : "");
	else
		printf("  result: no protocol errors\n");
}
