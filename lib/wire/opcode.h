/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What each RDMAP opcode is (RFC 5040 section 4, RFC 7306): one row per
 * opcode in rdmap.c, in the spirit of siw's iwarp_pktinfo[], so that the
 * codecs and the engine ask the table instead of each keeping a switch.
 * iw_opcode_info range-checks before it indexes: an opcode off the table
 * (0xC..0xF, or anything wider) has no row, and every flag test is false.
 */
#ifndef IW_WIRE_OPCODE_H
#define IW_WIRE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

enum iw_opf {
	IW_OPF_TAGGED = 1 << 0,   /* tagged segments (STag, TO); else untagged on qn */
	IW_OPF_SINGLE = 1 << 1,   /* exactly one DDP segment: L must be set */
	IW_OPF_INV = 1 << 2,      /* carries an Invalidate STag (RsvdULP) */
	IW_OPF_SE = 1 << 3,       /* Solicited Event */
	IW_OPF_RFC7306 = 1 << 4,  /* RFC 7306: only on QPs that negotiated it */
	IW_OPF_SEND = 1 << 5,     /* a Send: its payload fills a posted receive */
	IW_OPF_RECV = 1 << 6,     /* consumes a posted receive at the sink */
	IW_OPF_REQUEST = 1 << 7,  /* the peer owes a response (its IRQ, our ORQ) */
	IW_OPF_RESPONSE = 1 << 8, /* answers the oldest outstanding request */
};

struct iw_opcode_info {
	const char *name;
	int8_t qn;        /* untagged queue, or -1 for tagged opcodes */
	uint8_t hdr_len;  /* fixed RDMAP header after the DDP header */
	uint16_t flags;   /* IW_OPF_* */
};

/* Opcodes 0x0..0xB have rows (rdmap.c). */
#define IW_OPCODE_ROWS 12
extern const struct iw_opcode_info iw_opcode_rows[IW_OPCODE_ROWS];

/* The row of opcode, or NULL when it has none. Inline: the receive path
 * asks it several times per segment. */
static inline const struct iw_opcode_info *iw_opcode_info(unsigned opcode)
{
	return opcode < IW_OPCODE_ROWS ? &iw_opcode_rows[opcode] : NULL;
}

/* Whether opcode has every flag of f (false for an opcode with no row). */
static inline bool iw_opcode_has(unsigned opcode, unsigned f)
{
	const struct iw_opcode_info *o = iw_opcode_info(opcode);
	return o && (o->flags & f) == f;
}

#endif
