/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for iwarp-replay's TCP reassembly (tools/replay/reasm.c)
 * on its own: one direction's SYN, segments (in any order, overlapping,
 * retransmitted, with octets cut off by the snapshot length), ACKs of the
 * other side and a FIN, as a capture may hold them.
 *
 * Input: 8-octet operations.
 *   0     bits 0-1: 0 segment, 1 SYN, 2 ACK, 3 FIN;
 *         bit 2: the sequence number is absolute (octets 1-4), else an
 *         offset (octets 1-2, signed) from the end of the previous segment;
 *         bit 3: this segment's octets differ from what the stream holds
 *         there (a conflicting retransmission)
 *   1..4  sequence number or offset (big-endian)
 *   5..6  captured payload octets (big-endian, at most 4095)
 *   7     octets lost to the snapshot length (cut off after the payload)
 *
 * Every octet's value is a function of its sequence number, so that where
 * no segment conflicts, what is delivered can be checked.
 *
 * Asserted: deliveries and gaps tile the stream from position 0 without
 * overlap or hole, each reported once, in order; the statistics add up
 * (gap octets); at the end nothing waits and the stream reaches the FIN;
 * without conflicting segments every delivered octet is the one sent at
 * its sequence number.
 */
#include <string.h>

#include "reasm.h"
#include "fuzz.h"

#define OP_LEN 8
#define PAYLOAD_MAX 4095

struct check {
	struct rp_reasm *r;
	uint64_t next;      /* where the next delivery or gap must start */
	uint64_t gap_bytes;
	bool conflicts;     /* some segment carried other octets */
};

static uint8_t octet_at(uint32_t seq)
{
	return (uint8_t)(seq * 131u + (seq >> 8) * 7u + (seq >> 16));
}

static void on_deliver(void *ctx, const struct rp_chunk *c)
{
	struct check *k = ctx;

	CHECK(c->len > 0);
	CHECK(c->rel == k->next);
	if (!k->conflicts)
		for (size_t i = 0; i < c->len; i++)
			CHECK(c->data[i] == octet_at(rp_reasm_seq(k->r, c->rel + i)));
	k->next += c->len;
}

static void on_gap(void *ctx, uint64_t from, uint64_t to, uint64_t frame)
{
	struct check *k = ctx;

	(void)frame;
	CHECK(from == k->next && to > from);
	k->gap_bytes += to - from;
	k->next = to;
}

static const struct rp_reasm_ops ops = {on_deliver, on_gap};

static uint32_t be(const uint8_t *p, int n)
{
	uint32_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void segment(struct rp_reasm *r, struct check *k, uint32_t seq, const uint8_t *op,
		    uint64_t frame)
{
	static uint8_t buf[PAYLOAD_MAX];
	uint32_t len = be(op + 5, 2) & PAYLOAD_MAX;
	bool conflict = op[0] & 8;
	struct rp_pkt p = {.frame = frame, .seq = seq, .payload = buf, .len = len,
			   .missing = op[7]};

	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(octet_at(seq + i) ^ (conflict ? 0x5A : 0));
	if (conflict && len)
		k->conflicts = true;
	rp_reasm_segment(r, &p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rp_reasm r;
	struct check k = {.r = &r};
	uint32_t cursor = 0x12345678u;

	rp_reasm_init(&r, &ops, &k);
	for (size_t at = 0; at + OP_LEN <= size; at += OP_LEN) {
		const uint8_t *op = data + at;
		uint32_t seq = op[0] & 4 ? be(op + 1, 4) : cursor + (uint32_t)(int16_t)be(op + 1, 2);
		uint64_t frame = at / OP_LEN + 1;

		switch (op[0] & 3) {
		case 0:
			segment(&r, &k, seq, op, frame);
			cursor = seq + (be(op + 5, 2) & PAYLOAD_MAX) + op[7];
			break;
		case 1:
			rp_reasm_syn(&r, seq);
			cursor = seq + 1;
			break;
		case 2:
			rp_reasm_ack(&r, seq, frame);
			break;
		default:
			rp_reasm_fin(&r, seq);
			break;
		}
		CHECK(r.next == k.next);
	}
	rp_reasm_finish(&r);
	CHECK(r.q == NULL && r.q_bytes == 0);
	CHECK(r.next == k.next);
	CHECK(r.gap_bytes == k.gap_bytes);
	if (r.fin)
		CHECK(r.next >= r.fin_rel);
	return 0;
}
