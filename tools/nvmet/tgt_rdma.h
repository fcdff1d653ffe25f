/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp-nvmet's RDMA transport on libiwarp's public API (tgt_rdma.c). */
#ifndef NVMET_TGT_RDMA_H
#define NVMET_TGT_RDMA_H

#include <stdint.h>

#include "tgt.h"

struct tr_opts {
	const char *addr;    /* listen address (NULL: 0.0.0.0) */
	uint16_t port;       /* 0: the kernel picks; printed */
	uint32_t slots;      /* SRQ entries = receive buffers; half of them is the queue budget */
	const char *pcap;    /* trace file, or NULL */
};

/* Serve until SIGINT or SIGTERM: 0, or 1 after a setup failure (said on
 * stderr). */
int tr_run(struct tgt *t, const struct tr_opts *o);

#endif
