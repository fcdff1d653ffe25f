/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The sink's wire: the MPA exchange as the Responder, Sends and credit
 * Writes out, Sends in, and the data streams (the first SINK_CHECKED
 * messages decoded, CRC included, with the library's codecs; the rest
 * counted with recv(MSG_TRUNC), which TCP serves without copying).
 *
 * MPA (RFC 5044 7.1, RFC 6581): the Reply takes the Request's revision
 * and CRC flag; IRD and ORD mirror the Request's ORD and IRD. In
 * peer-to-peer mode we pick WRITE as the RTR if offered, else SEND (the
 * library offers WRITE and READ by default); a READ-only offer would need
 * a Read Response and is refused. M (markers towards the client) is
 * refused with a Reject: the sink sends no markers.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fpdu_seg.h"
#include "perf_sink.h"

static int fail(struct sink_conn *k, const char *what)
{
	snprintf(k->err, sizeof(k->err), "%s", what);
	return -1;
}

int sink_fill(struct sink_conn *k, int ms)
{
	if (k->in_len == SINK_IN)
		return fail(k, "input buffer full (a message over 64 KiB?)");
	struct pollfd p = {.fd = k->fd, .events = POLLIN};
	int rc = poll(&p, 1, ms);
	if (rc == 0)
		return fail(k, "no message from the client in time");
	ssize_t n = rc < 0 ? -1 : recv(k->fd, k->in + k->in_len, SINK_IN - k->in_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return fail(k, n ? strerror(errno) : "the client closed the connection");
	k->in_len += (size_t)n;
	return 0;
}

/* All of iov out; the socket is nonblocking. MSG_NOSIGNAL: a client that
 * has gone is an error here, not a SIGPIPE. */
static int send_all(struct sink_conn *k, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
		ssize_t n = sendmsg(k->fd, &m, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd p = {.fd = k->fd, .events = POLLOUT};
			(void)poll(&p, 1, 1000);
			continue;
		}
		if (n < 0)
			return fail(k, strerror(errno));
		for (; cnt > 0 && (size_t)n >= iov->iov_len; iov++, cnt--)
			n -= (ssize_t)iov->iov_len;
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static int send_fpdu(struct sink_conn *k, const uint8_t *hdr, size_t hlen, const void *pl,
		     size_t n)
{
	struct iw_fpdu_out fo;
	struct iovec iov[IW_FPDU_IOV_NEED(1, 0)];
	struct iovec in = {(void *)pl, n};
	fo.iov = iov;
	fo.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
	if (iw_fpdu_encode(&k->tx, &fo, hdr, hlen, &in, n ? 1 : 0))
		return fail(k, "framing an FPDU");
	return send_all(k, iov, fo.iovcnt);
}

static int write_to(struct sink_conn *k, uint32_t stag, uint64_t to, const void *pl, size_t n)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(true, true), .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_WRITE),
			       .stag = stag, .to = to};
	int hl = iw_ddp_hdr_build(h, sizeof(h), &d);
	return hl < 0 ? fail(k, "Write header") : send_fpdu(k, h, (size_t)hl, pl, n);
}

int sink_credit(struct sink_conn *k, uint32_t credit)
{
	/* The client reads the word in its own byte order: this host's. */
	return write_to(k, k->rkey, k->vaddr, &credit, 4);
}

/* A libiwarp initiator that has sent data but received nothing for 200 ms
 * sends zero-length Writes (a wake for siw, lib/conn/conn.c wake_fire),
 * which would land in the counted stream: a zero-length Write of ours
 * (never validated: RFC 5041 says so of zero-length tagged segments) tells
 * it we are there, before its first message. */
int sink_hello(struct sink_conn *k)
{
	return write_to(k, SINK_STAG, 0, NULL, 0);
}

int perf_sink_send(struct perf_sess *s, const void *data, size_t len)
{
	struct sink_conn *k = &s->sink->comm;
	uint8_t h[IW_FPDU_HDR_MAX];
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true), .rdmap_ctrl = iw_rdmap_ctrl(IW_OP_SEND),
			       .qn = IW_QN_SEND, .msn = ++k->msn, .mo = 0};
	int hl = iw_ddp_hdr_build(h, sizeof(h), &d);
	if (hl < 0 || send_fpdu(k, h, (size_t)hl, data, len)) {
		perf_err(s, "comm send: %s", hl < 0 ? "header" : k->err);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ decoding */

/* Decode k->in up to the end of one segment: 1 with *seg (payload up to
 * 64 octets into k->msg), 0 when more input is needed, -1 (k->err). */
static int next_seg(struct sink_conn *k, const struct iw_ddp_seg **seg)
{
	size_t used = 0, pl_len = k->msg_len;
	int rc = fpdu_seg_next(&k->rx, k->in, k->in_len, &used, seg, k->msg, sizeof(k->msg), &pl_len);
	k->msg_len = (uint32_t)pl_len;
	k->seg_wire += used;
	memmove(k->in, k->in + used, k->in_len - used);
	k->in_len -= used;
	if (rc < 0) {
		snprintf(k->err, sizeof(k->err), "bad FPDU: %s", iw_wire_err_str(k->rx.err));
		return -1;
	}
	return rc;
}

static bool zero_len(const struct iw_ddp_seg *g, unsigned op)
{
	return iw_ddp_opcode(&g->ddp) == op && !g->payload_len && iw_ddp_last(&g->ddp);
}

int perf_sink_recv(struct perf_sess *s, void *data, size_t len)
{
	struct sink_conn *k = &s->sink->comm;
	for (;;) {
		const struct iw_ddp_seg *g;
		int rc = next_seg(k, &g);
		if (rc < 0 || (!rc && sink_fill(k, s->comm.wait_ms))) {
			perf_err(s, "comm: %s", k->err);
			return -1;
		}
		if (!rc)
			continue;
		k->seg_wire = 0;
		/* Every comm message is one Send of one segment, of the length
		 * the step expects (perf_xchg.c). */
		if (iw_ddp_opcode(&g->ddp) != IW_OP_SEND || !iw_ddp_last(&g->ddp) ||
		    g->payload_len != len || len > sizeof(k->msg)) {
			perf_err(s, "comm: a %s of %u octets where a Send of %zu was due",
				 iw_rdmap_opcode_str(iw_ddp_opcode(&g->ddp)), g->payload_len, len);
			return -1;
		}
		memcpy(data, k->msg, len);
		return 0;
	}
}

/* ------------------------------------------------------------ MPA */

static uint8_t pick_rtr(uint8_t offer)
{
	return (offer & IW_RTR_WRITE) ? IW_RTR_WRITE : (offer & IW_RTR_SEND) ? IW_RTR_SEND : 0;
}

static int reply(struct sink_conn *k, const struct iw_mpa_frame *q, bool reject)
{
	bool enh = iw_mpa_frame_enhanced(q);
	struct iw_mpa_frame r = {.kind = IW_MPA_REPLY, .rev = q->rev,
				 .flags = (uint8_t)((q->flags & IW_MPA_FLAG_C) |
						    (enh ? IW_MPA_FLAG_ENHANCED : 0) |
						    (reject ? IW_MPA_FLAG_R : 0)),
				 .p2p = q->p2p, .rtr = q->p2p ? pick_rtr(q->rtr) : 0,
				 .ird = q->ord, .ord = q->ird};
	uint8_t out[IW_MPA_FRAME_HDR_LEN + IW_MPA_6581_LEN];
	int n = iw_mpa_frame_build(out, sizeof(out), &r, 0);
	if (n < 0)
		return fail(k, "building the MPA Reply");
	struct iovec iov = {out, (size_t)n};
	return send_all(k, &iov, 1);
}

/* The Request, whole, from k->in. */
static int read_request(struct sink_conn *k, struct iw_mpa_frame *q, int ms)
{
	for (;;) {
		size_t used = 0;
		enum iw_wire_err why;
		int rc = iw_mpa_frame_parse(q, &used, &why, IW_MPA_REQUEST, k->in, k->in_len, 0);
		if (rc == 0) {
			/* Nothing follows a Request before our Reply. */
			k->in_len -= used;
			memmove(k->in, k->in + used, k->in_len);
			return 0;
		}
		if (rc != -EAGAIN) {
			snprintf(k->err, sizeof(k->err), "bad MPA Request: %s", iw_wire_err_str(why));
			return -1;
		}
		if (sink_fill(k, ms))
			return -1;
	}
}

/* In peer-to-peer mode the client's first FPDU is the RTR we chose. */
static int take_rtr(struct sink_conn *k, uint8_t rtr, int ms)
{
	for (;;) {
		const struct iw_ddp_seg *g;
		int rc = next_seg(k, &g);
		if (rc < 0 || (!rc && sink_fill(k, ms)))
			return -1;
		if (!rc)
			continue;
		k->seg_wire = 0;
		if (zero_len(g, rtr == IW_RTR_WRITE ? IW_OP_WRITE : IW_OP_SEND))
			return 0;
		return fail(k, "the first FPDU is not the RTR the Reply chose");
	}
}

int sink_mpa_accept(struct sink_conn *k, int ms)
{
	struct iw_mpa_frame q;
	if (!k->in && !(k->in = malloc(SINK_IN)))
		return fail(k, "out of memory");
	if (read_request(k, &q, ms))
		return -1;
	if (q.flags & IW_MPA_FLAG_M) {
		(void)reply(k, &q, true);
		return fail(k, "the client asks for markers: the sink has none (rejected)");
	}
	bool p2p = iw_mpa_frame_enhanced(&q) && q.p2p;
	if (p2p && !pick_rtr(q.rtr)) {
		(void)reply(k, &q, true);
		return fail(k, "the client offers no WRITE or SEND RTR (rejected)");
	}
	if (reply(k, &q, false))
		return -1;
	k->crc = q.flags & IW_MPA_FLAG_C;
	iw_fpdu_tx_init(&k->tx, k->crc, false, 0);
	iw_fpdu_rx_init(&k->rx, k->crc, false, 0, 0, 0);
	return p2p ? take_rtr(k, pick_rtr(q.rtr), ms) : 0;
}

/* ------------------------------------------------------------ data */

uint64_t sink_msgs(const struct sink_conn *k)
{
	return k->checked + (k->msg_wire ? k->raw / k->msg_wire : 0);
}

/* One checked segment of a data message: the test's opcode, in order. */
static int check_seg(struct perf_sink *sk, struct sink_conn *k, const struct iw_ddp_seg *g)
{
	const struct iw_ddp_hdr *d = &g->ddp;
	if (!k->cur_len && zero_len(g, IW_OP_WRITE)) {
		k->octets -= k->seg_wire; /* a wake that crossed our hello */
		k->seg_wire = 0;
		k->wakes++;
		return 0;
	}
	if (iw_ddp_opcode(d) != sk->op) {
		snprintf(k->err, sizeof(k->err), "message %u: a %s where a %s was due", k->checked + 1,
			 iw_rdmap_opcode_str(iw_ddp_opcode(d)), iw_rdmap_opcode_str(sk->op));
		return -1;
	}
	if (sk->op == IW_OP_SEND &&
	    (d->qn != IW_QN_SEND || d->msn != k->checked + 1 || d->mo != k->cur_len))
		return fail(k, "a Send out of order (QN, MSN or MO)");
	if (sk->op == IW_OP_WRITE && d->stag != k->stag)
		return fail(k, "an RDMA Write to an STag we did not advertise");
	k->cur_len += g->payload_len;
	k->cur_wire += k->seg_wire;
	k->seg_wire = 0;
	if (!iw_ddp_last(d))
		return 0;
	if (k->cur_len != sk->size)
		return fail(k, "a message of the wrong size");
	if (k->msg_wire && k->cur_wire != k->msg_wire)
		return fail(k, "messages of different lengths on the wire");
	k->msg_wire = k->cur_wire;
	k->cur_wire = k->cur_len = 0;
	k->checked++;
	return 0;
}

/* Counting from now on: wake for two credit steps at once, not for each
 * segment (fewer, larger reads: the sink's CPU per message fell from
 * 0.6-0.7 to 0.4-0.5 us at 4 KiB). Never more than a client stopped for
 * credit leaves unread: after a drain we owe it under one step, so it
 * stops with at least rx_depth - step - 1 whole messages unread. */
static void set_lowat(const struct perf_sink *sk, struct sink_conn *k)
{
	uint64_t n = 2 * (uint64_t)sk->credit_step, most = sk->rx_depth - sk->credit_step - 1;
	if (sk->op != IW_OP_SEND)
		most = n;
	n = n < most ? n : most;
	uint64_t octets = n * k->msg_wire;
	int lowat = octets > (256 << 10) ? 256 << 10 : (int)octets;
	if (n >= 2)
		(void)setsockopt(k->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
}

/* Decode what k->in holds while checking; once SINK_CHECKED messages
 * passed, what is left counts raw. */
static int check_in(struct perf_sink *sk, struct sink_conn *k)
{
	while (k->checked < SINK_CHECKED) {
		const struct iw_ddp_seg *g;
		int rc = next_seg(k, &g);
		if (rc <= 0)
			return rc;
		if (check_seg(sk, k, g))
			return -1;
	}
	k->raw += k->in_len;
	k->in_len = 0;
	set_lowat(sk, k);
	return 0;
}

/* One recv: 1 if it got octets, 0 if none waited, -1 (k->err). */
static int recv_once(struct perf_sink *sk, struct sink_conn *k)
{
	static uint8_t trash[1 << 18]; /* never written: MSG_TRUNC discards */
	bool check = k->checked < SINK_CHECKED;
	ssize_t n = check ? recv(k->fd, k->in + k->in_len, SINK_IN - k->in_len, MSG_DONTWAIT)
			  : recv(k->fd, trash, sizeof(trash), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0)
		return fail(k, strerror(errno));
	if (n == 0) {
		k->eof = true;
		return 0;
	}
	k->octets += (uint64_t)n;
	if (!check) {
		k->raw += (uint64_t)n;
		return 1;
	}
	k->in_len += (size_t)n;
	return check_in(sk, k) ? -1 : 1;
}

int sink_drain(struct perf_sink *sk, struct sink_conn *k)
{
	int rc;
	while ((rc = recv_once(sk, k)) > 0)
		;
	if (rc < 0)
		return -1;
	uint64_t m = sink_msgs(k);
	if (sk->op == IW_OP_SEND && !sk->done && m - k->credited >= sk->credit_step) {
		k->credited = m;
		return sink_credit(k, (uint32_t)m);
	}
	return 0;
}

void sink_conn_free(struct sink_conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	free(k->in);
	k->in = NULL;
}
