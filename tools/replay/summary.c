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
#include "num.h"

/* Text, then a number: most of the summary. */
static void num(const char *text, uint64_t v)
{
	fputs(text, stdout);
	rp_put_u64(v);
}

static void capture_line(const struct rp_stats *s)
{
	const struct rp_capture_stats *c = &s->cap;

	num("  read: ", c->frames);
	num(" frames, ", c->tcp);
	fputs(" TCP segments", stdout);
	if (c->not_ip || c->not_tcp || c->fragments || c->malformed) {
		num(" (skipped: ", c->not_ip);
		num(" not IP, ", c->not_tcp);
		num(" not TCP, ", c->fragments);
		num(" IP fragments, ", c->malformed);
		fputs(" malformed)", stdout);
	}
	num("; ", s->conns);
	num(" TCP connections, ", s->iwarp_conns);
	fputs(" with iWARP\n", stdout);
	num("  TCP: ", s->retrans);
	num(" retransmissions, ", s->ooo);
	num(" out of order, ", s->overlaps);
	num(" overlaps (", s->conflicts);
	num(" with different data), ", s->gaps);
	num(" gaps (", s->gap_bytes);
	fputs(" octets)", stdout);
	if (c->snapped)
		fputs(", some segments cut by the snapshot length", stdout);
	putchar('\n');
}

static void opcode_lines(const struct rp_stats *s)
{
	for (unsigned op = 0; op < RP_OPCODES; op++) {
		if (!s->segs[op])
			continue;
		printf("    %-32s ", iw_rdmap_opcode_str(op));
		rp_put_u64w(s->msgs[op], 8);
		fputs(" messages ", stdout);
		rp_put_u64w(s->segs[op], 8);
		fputs(" FPDUs ", stdout);
		rp_put_u64w(s->payload[op], 12);
		fputs(" payload octets\n", stdout);
	}
}

static void first_error(const struct rp_first_err *e)
{
	if (!e->set) {
		fputs("  first error: none\n", stdout);
		return;
	}
	fputs("  first error:", stdout);
	if (e->conn) {
		num(" connection ", e->conn);
		printf(" %s frame ", strcmp(e->dir, "i2r") ? "R>I" : "I>R");
		rp_put_u64(e->frame);
	} else {
		printf(" %s", e->dir);
	}
	if (e->has_off)
		num(" stream offset ", e->stream_off);
	if (e->has_seq) {
		num(" (seq ", e->seq);
		putchar(')');
	}
	printf(": %s\n", e->what);
}

void rp_print_summary(const struct rp_stats *s, bool check, bool fail_on_term)
{
	uint64_t errs = rp_stats_errors(s);

	fputs("summary:\n", stdout);
	if (!s->live)
		capture_line(s);
	else
		printf("  sent %" PRIu64 " FPDUs (%" PRIu64 " octets); from the peer:\n", s->tx_fpdus,
		       s->tx_bytes);
	num("  MPA frames ", s->mpa_frames);
	num(", FPDUs ", s->fpdus);
	num(" (", s->wire_bytes);
	fputs(" octets on the wire)\n", stdout);
	opcode_lines(s);
	num("  TERMINATE messages ", s->terminates);
	num("\n  CRC errors ", s->crc_errors);
	num(", marker errors ", s->marker_errors);
	num(", other protocol errors ", s->proto_errors);
	num(", invalid MPA frames ", s->mpa_errors);
	num(", incomplete FPDUs ", s->lost);
	putchar('\n');
	first_error(&s->first);
	if (errs || (fail_on_term && s->terminates))
		printf("  result: %" PRIu64 " protocol errors%s\n", errs,
		       check ? " (--check: exit 1)" : "");
	else
		fputs("  result: no protocol errors\n", stdout);
}
