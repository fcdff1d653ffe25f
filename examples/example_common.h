/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared pieces of the example pair (example_server.c, example_client.c):
 * waiting for CM events and completions with a deadline, and the 16-octet
 * buffer advertisement (address, rkey, length; big-endian, as rping does).
 */
#ifndef EXAMPLE_COMMON_H
#define EXAMPLE_COMMON_H

#include <iwarp/iwarp.h>
#include <stdint.h>

#define EX_TIMEOUT_MS 10000

struct ex_advert {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* Wait for the next CM event; it must be `want`. Returns it (to ack) or
 * NULL after printing why. */
struct iw_cm_event *ex_wait_cm(struct iw_cm_channel *ch, enum iw_cm_event_type want);
/* Wait for one completion on cq (armed through ch); it must succeed and
 * have opcode `want`. 0 or -1 after printing why. */
int ex_wait_wc(struct iw_comp_channel *ch, struct iw_cq *cq, enum iw_wc_opcode want,
	       struct iw_wc *out);
void ex_advert_pack(uint8_t out[16], const struct ex_advert *a);
void ex_advert_unpack(struct ex_advert *a, const uint8_t in[16]);
/* Post one signaled WR of one SGE. */
int ex_post(struct iw_qp *qp, enum iw_wr_opcode op, struct iw_mr *mr, void *buf, uint32_t len,
	    uint64_t remote_addr, uint32_t rkey);
int ex_post_recv(struct iw_qp *qp, struct iw_mr *mr, void *buf, uint32_t len);

#endif
