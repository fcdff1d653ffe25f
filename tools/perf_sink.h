/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-perf --server --sink: a discard peer over raw sockets. It speaks
 * just enough iWARP for an iwarp-perf client (the MPA exchange as the
 * Responder, the comm messages as Sends, send-bandwidth credits as RDMA
 * Writes) and receives the data connections as cheaply as the kernel
 * allows, so that a benchmark measures the client's sending alone.
 * perf_sink_wire.c: MPA and FPDUs on one socket; perf_sink.c: the role.
 */
#ifndef IWARP_PERF_SINK_H
#define IWARP_PERF_SINK_H

#include <iwarp/wire.h>

#include "perf.h"

#define SINK_IN 65536      /* parsing buffer per connection */
#define SINK_CHECKED 64    /* messages parsed and checked per data connection */
#define SINK_STAG 0x51000u /* the STag we advertise for QP i: SINK_STAG + i */

/* One connection: comm or data. */
struct sink_conn {
	int fd;
	bool crc;
	struct iw_fpdu_rx rx;
	struct iw_fpdu_tx tx;
	uint32_t msn;              /* our last Send's MSN */
	uint8_t *in;               /* read, not yet decoded */
	size_t in_len;
	size_t seg_wire;           /* octets of the segment being decoded */
	/* received message: payload collected by sink_seg (comm) */
	uint8_t msg[64];
	uint32_t msg_len;
	/* data connections */
	uint32_t qp;
	uint32_t stag;             /* ours (write) */
	uint32_t rkey;             /* the client's credit word (send) */
	uint64_t vaddr;
	uint64_t octets;           /* the data messages' octets on the wire */
	uint32_t wakes;            /* zero-length Writes (not counted in octets) */
	uint64_t raw;              /* of them counted, not parsed */
	uint32_t checked;          /* messages parsed and checked */
	uint64_t msg_wire;         /* octets per message (the first one's) */
	uint64_t cur_wire;         /* octets of the message being parsed */
	uint32_t cur_len;          /* its payload so far */
	uint64_t credited;         /* the last credit written */
	bool eof;
	char err[160];             /* why the stream is bad ("" if it is not) */
};

struct perf_sink {
	struct sink_conn comm;
	struct sink_conn *data;
	uint32_t ndata;
	unsigned op;               /* IW_OP_SEND or IW_OP_WRITE */
	uint64_t size;
	uint32_t credit_step;      /* write a credit after this many messages */
	uint32_t rx_depth;         /* the client's credit window (send) */
	bool done;                 /* the client's test is over: no more credits */
};

/* Read the client's MPA Request on k->fd, answer it and take the RTR
 * within ms: 0, or -1 with k->err set. Markers are refused (a Reply with
 * R set), as is a Request that offers no RTR we take (WRITE or SEND). */
int sink_mpa_accept(struct sink_conn *k, int ms);
/* Read more input within ms (-1: no limit): 0, or -1 (k->err says why). */
int sink_fill(struct sink_conn *k, int ms);
/* A zero-length RDMA Write: something from us before the data. */
int sink_hello(struct sink_conn *k);
/* An RDMA Write of the credit word (send bandwidth). */
int sink_credit(struct sink_conn *k, uint32_t credit);
/* Take what arrived on a data connection without waiting; messages
 * counted into k. 0, or -1 (k->err). */
int sink_drain(struct perf_sink *sk, struct sink_conn *k);
/* Messages of a data connection complete so far. */
uint64_t sink_msgs(const struct sink_conn *k);
void sink_conn_free(struct sink_conn *k);

#endif /* IWARP_PERF_SINK_H */
