/* SPDX-License-Identifier: BSD-2-Clause */
#include "rewrite.h"

#include <string.h>

#include "util.h"

/* Which ULPDUs have the field. */
enum where { W_ANY, W_TAGGED, W_UNTAGGED, W_READ_REQ, W_TERM, W_ATOMIC_REQ, W_ATOMIC_RESP };

struct field {
	const char *name;
	enum rp_field_kind kind;
	enum where where;
	uint8_t off;   /* octet offset in the ULPDU */
	uint8_t width; /* 1, 2, 4 or 8 octets */
	uint64_t mask; /* the bits within those octets, 0: all */
};

#define U IW_DDP_UNTAGGED_HDR_LEN /* RDMAP headers start after it */

static const struct field fields[] = {
	{"ulpdu_len", RP_FIELD_MPA_LEN, W_ANY, 0, 2, 0},
	{"crc", RP_FIELD_MPA_CRC, W_ANY, 0, 4, 0},
	{"ddp_ctrl", RP_FIELD_ULPDU, W_ANY, 0, 1, 0},
	{"t", RP_FIELD_ULPDU, W_ANY, 0, 1, IW_DDP_T},
	{"l", RP_FIELD_ULPDU, W_ANY, 0, 1, IW_DDP_L},
	{"ddp_rsvd", RP_FIELD_ULPDU, W_ANY, 0, 1, IW_DDP_RSVD},
	{"dv", RP_FIELD_ULPDU, W_ANY, 0, 1, IW_DDP_DV},
	{"rdmap_ctrl", RP_FIELD_ULPDU, W_ANY, 1, 1, 0},
	{"rv", RP_FIELD_ULPDU, W_ANY, 1, 1, IW_RDMAP_RV},
	{"rdmap_rsvd", RP_FIELD_ULPDU, W_ANY, 1, 1, IW_RDMAP_RSVD},
	{"opcode", RP_FIELD_ULPDU, W_ANY, 1, 1, IW_RDMAP_OPMASK},
	{"stag", RP_FIELD_ULPDU, W_TAGGED, 2, 4, 0},
	{"to", RP_FIELD_ULPDU, W_TAGGED, 6, 8, 0},
	{"inv_stag", RP_FIELD_ULPDU, W_UNTAGGED, 2, 4, 0},
	{"qn", RP_FIELD_ULPDU, W_UNTAGGED, 6, 4, 0},
	{"msn", RP_FIELD_ULPDU, W_UNTAGGED, 10, 4, 0},
	{"mo", RP_FIELD_ULPDU, W_UNTAGGED, 14, 4, 0},
	{"sink_stag", RP_FIELD_ULPDU, W_READ_REQ, U, 4, 0},
	{"sink_to", RP_FIELD_ULPDU, W_READ_REQ, U + 4, 8, 0},
	{"read_size", RP_FIELD_ULPDU, W_READ_REQ, U + 12, 4, 0},
	{"src_stag", RP_FIELD_ULPDU, W_READ_REQ, U + 16, 4, 0},
	{"src_to", RP_FIELD_ULPDU, W_READ_REQ, U + 20, 8, 0},
	{"term_layer", RP_FIELD_ULPDU, W_TERM, U, 1, 0xF0},
	{"term_etype", RP_FIELD_ULPDU, W_TERM, U, 1, 0x0F},
	{"term_ecode", RP_FIELD_ULPDU, W_TERM, U + 1, 1, 0},
	{"term_hdrct", RP_FIELD_ULPDU, W_TERM, U + 2, 1, 0},
	{"atomic_op", RP_FIELD_ULPDU, W_ATOMIC_REQ, U, 4, 0x0F},
	{"req_id", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 4, 4, 0},
	{"atomic_stag", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 8, 4, 0},
	{"atomic_to", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 12, 8, 0},
	{"add_swap", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 20, 8, 0},
	{"add_swap_mask", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 28, 8, 0},
	{"compare", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 36, 8, 0},
	{"compare_mask", RP_FIELD_ULPDU, W_ATOMIC_REQ, U + 44, 8, 0},
	{"orig_req_id", RP_FIELD_ULPDU, W_ATOMIC_RESP, U, 4, 0},
	{"orig_value", RP_FIELD_ULPDU, W_ATOMIC_RESP, U + 4, 8, 0},
};
#define NFIELDS ((int)(sizeof(fields) / sizeof(fields[0])))

int rp_field_lookup(const char *name)
{
	for (int i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].name, name))
			return i;
	return -1;
}

enum rp_field_kind rp_field_kind(int field)
{
	return fields[field].kind;
}

const char *rp_field_name(int field)
{
	return fields[field].name;
}

static unsigned shift_of(uint64_t mask)
{
	unsigned s = 0;

	while (mask && !(mask & 1)) {
		mask >>= 1;
		s++;
	}
	return s;
}

uint64_t rp_field_max(int field)
{
	const struct field *f = &fields[field];

	if (f->mask)
		return f->mask >> shift_of(f->mask);
	return f->width == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * f->width)) - 1;
}

void rp_field_list(FILE *fp)
{
	for (int i = 0; i < NFIELDS; i++)
		fprintf(fp, "%s%s", i ? " " : "", fields[i].name);
	fputc('\n', fp);
}

static bool where_ok(enum where w, const uint8_t *u, size_t len)
{
	unsigned op = len > 1 ? u[1] & IW_RDMAP_OPMASK : 0;
	bool tagged = len > 0 && (u[0] & IW_DDP_T);

	switch (w) {
	case W_ANY:
		return true;
	case W_TAGGED:
		return tagged;
	case W_UNTAGGED:
		return !tagged;
	case W_READ_REQ:
		return !tagged && op == IW_OP_READ_REQ;
	case W_TERM:
		return !tagged && op == IW_OP_TERMINATE;
	case W_ATOMIC_REQ:
		return !tagged && op == IW_OP_ATOMIC_REQ;
	case W_ATOMIC_RESP:
		return !tagged && op == IW_OP_ATOMIC_RESP;
	}
	return false;
}

const char *rp_field_check(int field, const uint8_t *ulpdu, size_t len)
{
	const struct field *f = &fields[field];

	if (f->kind != RP_FIELD_ULPDU)
		return NULL;
	if (!where_ok(f->where, ulpdu, len))
		return "that FPDU has no such field (wrong segment kind or opcode)";
	if ((size_t)f->off + f->width > len)
		return "that FPDU is too short for the field";
	return NULL;
}

void rp_field_set(int field, uint8_t *u, uint64_t value)
{
	const struct field *f = &fields[field];
	uint64_t v = value;

	if (f->mask) {
		uint64_t old = rp_get_be(u + f->off, f->width);

		v = (old & ~f->mask) | ((value << shift_of(f->mask)) & f->mask);
	}
	rp_put_be(u + f->off, f->width, v);
}

/* ------------------------------------------------------------ --map-stag, --to-offset */

static bool map_stag(const struct rp_opts *o, uint8_t *p)
{
	uint32_t v = (uint32_t)rp_get_be(p, 4);

	for (int i = 0; i < o->nmaps; i++) {
		if (o->maps[i].from == v) {
			rp_put_be(p, 4, o->maps[i].to);
			return true;
		}
	}
	return false;
}

static bool shift_to(const struct rp_opts *o, uint8_t *p)
{
	if (!o->to_off_set || o->to_off == 0)
		return false;
	rp_put_be(p, 8, rp_get_be(p, 8) + o->to_off);
	return true;
}

/* Every STag field is mapped; only TOs that address the peer's memory
 * (tagged segments, a Read Request's source, an atomic's target) move:
 * a Read Request's sink is the replaying side's own buffer. */
int rp_rewrite_apply(const struct rp_opts *o, uint8_t *u, size_t len)
{
	unsigned op;
	int n = 0;

	if (len < IW_DDP_TAGGED_HDR_LEN)
		return 0;
	op = u[1] & IW_RDMAP_OPMASK;
	/* A zero-length tagged segment (an RTR) addresses nothing: its STag
	 * and TO are not checked (RFC 5041), so they go out as recorded. */
	if ((u[0] & IW_DDP_T) && len == IW_DDP_TAGGED_HDR_LEN)
		return 0;
	if (u[0] & IW_DDP_T)
		return map_stag(o, u + 2) + shift_to(o, u + 6);
	if (len < U)
		return 0;
	if (op == IW_OP_SEND_INV || op == IW_OP_SEND_SE_INV)
		n += map_stag(o, u + 2);
	if (op == IW_OP_READ_REQ && len >= U + IW_RDMAP_READ_REQ_LEN) {
		n += map_stag(o, u + U);
		n += map_stag(o, u + U + 16);
		n += shift_to(o, u + U + 20);
	}
	if (op == IW_OP_ATOMIC_REQ && len >= U + IW_RDMAP_ATOMIC_REQ_LEN) {
		n += map_stag(o, u + U + 8);
		n += shift_to(o, u + U + 12);
	}
	return n;
}
