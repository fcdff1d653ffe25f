/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp-nvmet's RDMA transport on libiwarp's public API (tgt_rdma.c). */
#ifndef NVMET_TGT_RDMA_H
#define NVMET_TGT_RDMA_H

#include <stdbool.h>
#include <stdint.h>

#include "tgt.h"

#define TR_MAX_LOOPS 256

struct tr_opts {
	const char *addr;    /* listen address (NULL: 0.0.0.0) */
	uint16_t port;       /* 0: the kernel picks; printed */
	uint32_t slots;      /* per loop: SRQ entries = receive buffers; half is its queue budget */
	uint32_t loops;      /* event loops (threads), 1..TR_MAX_LOOPS */
	const char *pcap;    /* trace file, or NULL */
	bool copy_ram;       /* RAM namespaces through the slots' buffers, not in place */
	uint32_t spin_us;    /* a loop awaiting its own RDMA READ or Send polls up
			      * to this long before it sleeps; 0: always sleeps */
	int64_t write_stage; /* RAM namespace writes by RDMA READ go through the slots'
			      * buffers while a loop's data in flight is at most this;
			      * -1: twice the CPU's L2 cache; 0: never (stage_write) */
};

/* Serve until SIGINT or SIGTERM: 0, or 1 after a setup failure (said on
 * stderr). */
int tr_run(struct tgt *t, const struct tr_opts *o);

#endif
