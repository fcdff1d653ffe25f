/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace_decode FILE.pcap
 *
 * Reads a libiwarp trace (IWARP_PCAP) back with tests/trace_read.c and
 * prints, per connection, what our own decoder found, then the FPDUs per
 * RDMAP opcode ("fpdu_op 0x03 5") and one line
 *   total conns=C mpa_req=Q mpa_rep=R fpdus=F crc_good=G problems=P
 * that tests/trace_tshark.sh compares with tshark's view of the file.
 * Exit status: 0 when every connection decoded completely with good CRCs
 * and the framing had no problem, 1 otherwise, 2 when the file is unreadable.
 */
#include <stdio.h>

#include "trace_read.h"

static const char *const op_name[RT_OPCODES] = {
	"write", "read_req", "read_resp", "send", "send_inv", "send_se", "send_se_inv",
	"terminate", "op8", "op9", "atomic_req", "atomic_resp", "imm", "imm_se", "op14", "op15",
};

static void print_flow(int i, int d, const struct rt_flow *f)
{
	printf("conn %d dir %d: fpdus=%u crc_good=%u err=%d%s", i, d, f->fpdus, f->crc_good, f->err,
	       f->truncated ? " truncated" : "");
	if (f->pdu_unaligned || f->pdu_short_starts)
		printf(" pdus_not_starting_a_segment=%u short_first_segments=%u", f->pdu_unaligned,
		       f->pdu_short_starts);
	for (int op = 0; op < RT_OPCODES; op++)
		if (f->segs[op])
			printf(" %s=%u/%u", op_name[op], f->msgs[op], f->segs[op]);
	putchar('\n');
}

int main(int argc, char **argv)
{
	static struct rt_capture cap;
	unsigned req = 0, rep = 0, fpdus = 0, good = 0, bad_conns = 0, by_op[RT_OPCODES] = {0};

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE.pcap\n", argv[0]);
		return 2;
	}
	if (rt_read(&cap, argv[1])) {
		fprintf(stderr, "trace_decode: %s: %s\n", argv[1], cap.why);
		return 2;
	}
	for (int i = 0; i < cap.num_conns; i++) {
		const struct rt_conn *c = &cap.conn[i];
		struct rt_iwarp iw;
		int rc = rt_decode(c, &iw);
		printf("conn %d: port %u -> %u, %zu + %zu octets, gaps %u/%u, handshake %s, %s\n", i,
		       c->port[0], c->port[1], c->dir[0].len, c->dir[1].len, c->dir[0].gaps,
		       c->dir[1].gaps, c->synack && c->ack ? "yes" : "no",
		       c->rst ? "reset" : c->dir[0].fin && c->dir[1].fin ? "closed" : "open");
		req += iw.req_ok;
		rep += iw.rep_ok;
		for (int d = 0; d < 2; d++) {
			print_flow(i, d, &iw.dir[d]);
			fpdus += iw.dir[d].fpdus;
			good += iw.dir[d].crc_good;
			for (int op = 0; op < RT_OPCODES; op++)
				by_op[op] += iw.dir[d].segs[op];
		}
		bad_conns += rc != 0 || c->bad_acks != 0;
	}
	if (cap.problems)
		printf("problems: %u, first: %s\n", cap.problems, cap.why);
	if (cap.notes)
		printf("note: %s\n", cap.note);
	for (int op = 0; op < RT_OPCODES; op++)
		if (by_op[op])
			printf("fpdu_op 0x%02x %u\n", op, by_op[op]);
	printf("total conns=%d mpa_req=%u mpa_rep=%u fpdus=%u crc_good=%u problems=%u\n",
	       cap.num_conns, req, rep, fpdus, good, cap.problems);
	rt_free(&cap);
	return bad_conns || cap.problems ? 1 : 0;
}
