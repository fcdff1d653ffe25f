/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The block protocol of examples/blk_target.c and examples/blk_initiator.c,
 * a miniature NVMe-oF over RDMA. Per I/O the initiator registers the block
 * buffer of that one I/O (fast registration) and sends a command naming its
 * STag; the target moves the data with an RDMA READ (a write command: the
 * block goes to the target) or an RDMA WRITE (a read command), then answers
 * with a Send with Invalidate of that STag, so that the grant ends with the
 * I/O. Fields go on the wire in network order.
 */
#ifndef BLK_PROTO_H
#define BLK_PROTO_H

#include <stdint.h>

#define BLK_SIZE 4096u
#define BLK_QD 8u /* commands one connection may have outstanding */

enum blk_op { BLK_WRITE = 1, BLK_READ = 2 };

/* Initiator to target: one Send. */
struct blk_cmd {
	uint32_t op;   /* enum blk_op */
	uint32_t tag;  /* the initiator's I/O slot, echoed in the response */
	uint32_t lba;  /* block number on the target */
	uint32_t stag; /* the initiator's STag for this I/O's block buffer */
	uint64_t to;   /* tagged offset of that buffer's first octet */
};

/* Target to initiator: one Send with Invalidate of the command's stag. */
struct blk_resp {
	uint32_t tag;
	uint32_t status; /* 0, or an errno */
};

/* The content both ends expect in block lba: every block differs, and no
 * block is all zeroes (the target's disk starts zeroed). */
static inline uint8_t blk_pattern(uint32_t lba, uint32_t i)
{
	return (uint8_t)((lba * 2654435761u >> 7) + i * 7u + 1u);
}

#endif
