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
 * Every octet's value is a function of its sequence number (a pseudo-random
 * pattern of period 2^20, so that runs of it are copied and compared whole,
 * not octet by octet), so that where no segment conflicts, what is delivered
 * can be checked.
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

/* The octet at sequence number s is pattern[s % PERIOD]; the table runs on
 * past PERIOD by one segment so that any segment is one copy. PERIOD divides
 * 2^32: the pattern stays continuous where sequence numbers wrap. */
#define PERIOD (1u << 20)
static uint8_t pattern[PERIOD + PAYLOAD_MAX];
/* The same with every octet flipped: a conflicting segment is one copy too
 * (flipping it octet by octet, ASan-checked, was a sixth of the time). */
static uint8_t flipped[PERIOD + PAYLOAD_MAX];

FUZZ_HARNESS static void pattern_init(void)
{
	static bool done;
	uint32_t x = 0x12345678u;

	if (done)
		return;
	done = true;
	for (uint32_t i = 0; i < PERIOD; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		pattern[i] = (uint8_t)x;
	}
	memcpy(pattern + PERIOD, pattern, PAYLOAD_MAX);
	for (size_t i = 0; i < sizeof(pattern); i++)
		flipped[i] = pattern[i] ^ 0x5A;
}

FUZZ_HARNESS static const uint8_t *pattern_at(uint32_t seq)
{
	return pattern + (seq & (PERIOD - 1));
}

FUZZ_HARNESS static void on_deliver(void *ctx, const struct rp_chunk *c)
{
	struct check *k = ctx;

	CHECK(c->len > 0);
	CHECK(c->rel == k->next);
	for (size_t i = 0; !k->conflicts && i < c->len; i += PAYLOAD_MAX) {
		size_t n = c->len - i < PAYLOAD_MAX ? c->len - i : PAYLOAD_MAX;

		CHECK(!memcmp(c->data + i, pattern_at(rp_reasm_seq(k->r, c->rel + i)), n));
	}
	k->next += c->len;
}

FUZZ_HARNESS static void on_gap(void *ctx, uint64_t from, uint64_t to, uint64_t frame)
{
	struct check *k = ctx;

	(void)frame;
	CHECK(from == k->next && to > from);
	k->gap_bytes += to - from;
	k->next = to;
}

static const struct rp_reasm_ops ops = {on_deliver, on_gap};

FUZZ_HARNESS static uint32_t be(const uint8_t *p, int n)
{
	uint32_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

FUZZ_HARNESS static void segment(struct rp_reasm *r, struct check *k, uint32_t seq, const uint8_t *op,
		    uint64_t frame)
{
	static uint8_t buf[PAYLOAD_MAX];
	uint32_t len = be(op + 5, 2) & PAYLOAD_MAX;
	bool conflict = op[0] & 8;
	struct rp_pkt p = {.frame = frame, .seq = seq, .payload = buf, .len = len,
			   .missing = op[7]};

	memcpy(buf, (conflict ? flipped : pattern) + (seq & (PERIOD - 1)), len);
	if (conflict && len)
		k->conflicts = true;
	rp_reasm_segment(r, &p);
}

FUZZ_HARNESS int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rp_reasm r;
	struct check k = {.r = &r};
	uint32_t cursor = 0x12345678u;

	pattern_init();
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
