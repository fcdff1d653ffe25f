/* SPDX-License-Identifier: BSD-2-Clause */
/* A trace fed in the worst pieces (trace_dribble.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "diag/trace.h"
#include "trace_dribble.h"

#define MSS 536
#define MAX_PIECES (2 * TD_FPDUS + 64)

static const uint32_t payload_len[] = {0, 1, 2, 3, 5, 7, 100, 1000, 3000};

static void put(struct td_trace *o, int d, const void *p, size_t n)
{
	if (o->len[d] + n > TD_STREAM_MAX)
		abort();
	memcpy(o->stream[d] + o->len[d], p, n);
	o->len[d] += n;
}

static void mpa_frame(struct td_trace *o, int d)
{
	struct iw_mpa_frame f = {.kind = d ? IW_MPA_REPLY : IW_MPA_REQUEST, .rev = 1,
				 .flags = IW_MPA_FLAG_C, .pd = (const uint8_t *)"dribble",
				 .pd_len = 7};
	uint8_t b[IW_MPA_FRAME_HDR_LEN + 16];
	int n = iw_mpa_frame_build(b, sizeof(b), &f, 0);
	if (n < 0)
		abort();
	put(o, d, b, (size_t)n);
}

/* The DDP (and RDMAP) header of FPDU i: opcodes 0..3 in turn. */
static int fpdu_hdr(uint8_t *b, size_t cap, unsigned op, uint32_t i)
{
	struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(op == IW_OP_WRITE || op == IW_OP_READ_RESP, true),
			       .rdmap_ctrl = iw_rdmap_ctrl(op)};
	h.stag = 0x100 + i;
	h.qn = op == IW_OP_READ_REQ ? IW_QN_READ_REQ : IW_QN_SEND;
	h.msn = i + 1;
	int n = iw_ddp_hdr_build(b, cap, &h);
	if (n > 0 && op == IW_OP_READ_REQ) {
		struct iw_read_req r = {.sink_stag = 1, .read_size = 64, .src_stag = 2};
		int k = iw_rdmap_read_req_build(b + n, cap - (size_t)n, &r);
		n = k < 0 ? k : n + k;
	}
	return n;
}

/* FPDU i of direction d, appended to its stream; returns where it starts. */
static size_t fpdu(struct td_trace *o, int d, struct iw_fpdu_tx *tx, uint32_t i)
{
	static uint8_t data[3000];
	unsigned op = i % 4;
	uint8_t hdr[IW_FPDU_HDR_MAX];
	int hl = fpdu_hdr(hdr, sizeof(hdr), op, i);
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(k * 7 + i + d);
	struct iovec pv = {data, op == IW_OP_READ_REQ ? 0 : payload_len[(i + d) % 9]};
	struct iovec iov[IW_FPDU_IOV_NEED(1, 0)];
	struct iw_fpdu_out out = {.iov = iov, .iov_cap = (int)(sizeof(iov) / sizeof(iov[0]))};
	if (hl < 0 || iw_fpdu_encode(tx, &out, hdr, (size_t)hl, &pv, 1))
		abort();
	size_t at = o->len[d];
	for (int k = 0; k < out.iovcnt; k++)
		put(o, d, iov[k].iov_base, iov[k].iov_len);
	o->fpdus[d]++;
	o->by_op[d][op]++;
	return at;
}

/* Build direction d's stream and where its records end: 1 to 19 octets
 * into each PDU, and at the end of the MPA frame (the responder's goes one
 * octet at a time). Returns the number of records. */
static int build(struct td_trace *o, int d, size_t *ends, size_t *frame_len)
{
	int n = 0;
	mpa_frame(o, d);
	*frame_len = o->len[d];
	if (d == 1)
		for (size_t k = 1; k < o->len[d]; k++)
			ends[n++] = k;
	else
		ends[n++] = 5;
	ends[n++] = o->len[d];
	struct iw_fpdu_tx tx;
	iw_fpdu_tx_init(&tx, true, false, 0);
	for (uint32_t i = 0; i < TD_FPDUS; i++) {
		size_t at = fpdu(o, d, &tx, i);
		ends[n++] = at + 1 + (i * 7 + (unsigned)d * 3) % 19;
	}
	ends[n++] = o->len[d];
	return n;
}

static void sin4(struct sockaddr_in *s, uint8_t host, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	s->sin_addr.s_addr = htonl(0xC0000200u | host); /* 192.0.2.0/24 */
}

/* One record of direction d: the initiator's as a partial write (the kernel
 * took to - from octets of the rest), the responder's as a short read. */
static void feed(struct iw_trace_conn *c, struct td_trace *o, int d, size_t from, size_t to)
{
	struct iovec v = {o->stream[d] + from, o->len[d] - from};
	if (d == 1) {
		iw_trace_data(c, IW_TRACE_RX, &v, 1, to - from);
		return;
	}
	struct iw_trace_tx tx;
	iw_trace_tx_begin(c, &tx, &v, 1);
	iw_trace_tx_end(c, &tx, &v, 1, to - from);
}

int td_write(struct td_trace *o, const char *path, bool tail)
{
	static size_t ends[2][MAX_PIECES];
	memset(o, 0, sizeof(*o));
	size_t frame_len[2];
	int n[2] = {build(o, 0, ends[0], &frame_len[0]), build(o, 1, ends[1], &frame_len[1])};
	struct iw_trace_opts opts = {.path = path, .queue_bytes = 1u << 20};
	struct iw_trace *t;
	int rc = iw_trace_new(&t, &opts);
	if (rc)
		return rc;
	struct sockaddr_in me, peer;
	sin4(&me, 1, 40000);
	sin4(&peer, 2, 50000);
	struct iw_trace_conn *c = iw_trace_conn_new(t, (void *)&me, (void *)&peer, true, MSS);
	/* The Request, the Reply, then both directions' FPDUs interleaved,
	 * one record each in turn (an initiator sends no FPDU before the
	 * Reply, and Wireshark finds none before it). */
	int k[2] = {0, 0};
	size_t pos[2] = {0, 0};
	for (int d = 0; d < 2; d++)
		for (; ends[d][k[d]] <= frame_len[d]; k[d]++) {
			feed(c, o, d, pos[d], ends[d][k[d]]);
			pos[d] = ends[d][k[d]];
		}
	for (; k[0] < n[0] || k[1] < n[1]; k[0]++, k[1]++)
		for (int d = 0; d < 2; d++)
			if (k[d] < n[d]) {
				feed(c, o, d, pos[d], ends[d][k[d]]);
				pos[d] = ends[d][k[d]];
			}
	if (tail) {
		uint8_t next[IW_FPDU_HDR_MAX];
		size_t at = o->len[0];
		struct iw_fpdu_tx tx;
		iw_fpdu_tx_init(&tx, true, false, 0);
		fpdu(o, 0, &tx, TD_FPDUS);
		memcpy(next, o->stream[0] + at, 3);
		o->len[0] = at + 3;
		o->fpdus[0]--;
		o->by_op[0][TD_FPDUS % 4]--;
		struct iovec v = {next, 3};
		iw_trace_data(c, IW_TRACE_TX, &v, 1, 3);
	}
	iw_trace_fin(c, IW_TRACE_TX);
	iw_trace_fin(c, IW_TRACE_RX);
	iw_trace_conn_end(c, false);
	iw_trace_free(t, NULL);
	return 0;
}
