/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * replay_peer server | client PORT
 *
 * The live libiwarp peer tests/replay.sh replays captures against.
 *
 * server: listens on 127.0.0.1, port chosen by the kernel, and prints
 *   "replay_peer: listening port=P rkey=0x... addr=0x..." for the buffer
 *   (4096 octets, remote write and read) the initiator writes to. It
 *   accepts one connection with two receives posted and expects what
 *   tests/gen_replay_pcap's "client" capture does: Send "hello replay", a
 *   Write of 3000 octets of the pattern (i * 7 + 3), a Read of 100 of them
 *   (answered by the engine), Send "done". Then "replay_peer: ok", a
 *   graceful disconnect and exit 0.
 * client: connects to 127.0.0.1:PORT, sends "hi", expects "welcome",
 *   sends "bye" and waits for the peer to close ("replay_peer: ok").
 *
 * Whatever the engine reports on the way is printed: an asynchronous
 * event ("replay_peer: async <event> term 0x<triple> <name>" - for a
 * TERMINATE we sent, or one we got), a failed completion, a CM event that
 * was not expected. Any of them means exit 1. Every wait is bounded (10 s,
 * then exit 2), so a test never hangs on it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define TIMEOUT_MS 10000
#define BUF_LEN 4096
#define MSG_LEN 64

struct peer {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_cm_id *listen_id, *id;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *cq;
	struct iw_mr *buf_mr, *msg_mr;
	uint8_t buf[BUF_LEN];
	uint8_t msg[2][MSG_LEN];
	uint8_t out[MSG_LEN];
	bool failed, disconnected;
	int recvs;            /* receive completions so far */
	char got[2][MSG_LEN + 1];
};

static int setup(struct peer *p)
{
	p->ctx = iw_context_new(NULL);
	p->cm = p->ctx ? iw_cm_create_channel(p->ctx) : NULL;
	p->pd = p->ctx ? iw_alloc_pd(p->ctx) : NULL;
	p->cc = p->ctx ? iw_create_comp_channel(p->ctx) : NULL;
	p->cq = p->cc ? iw_create_cq(p->ctx, 32, NULL, p->cc, 0) : NULL;
	if (!p->cm || !p->pd || !p->cq)
		return -1;
	p->buf_mr = iw_reg_mr(p->pd, p->buf, sizeof(p->buf),
			      IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	p->msg_mr = iw_reg_mr(p->pd, p->msg, sizeof(p->msg) + sizeof(p->out), IW_ACCESS_LOCAL_WRITE);
	return p->buf_mr && p->msg_mr && !iw_req_notify_cq(p->cq, 0) ? 0 : -1;
}

static int make_qp(struct peer *p, struct iw_cm_id *id, int recvs)
{
	struct iw_qp_init_attr qa = {
		.send_cq = p->cq, .recv_cq = p->cq, .qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	};
	if (iw_cm_create_qp(id, p->pd, &qa))
		return -1;
	/* No more receives than Sends expected: a spare one would be flushed
	 * at the disconnect and look like a failure. */
	for (int i = 0; i < recvs; i++) {
		struct iw_sge sge = {(uintptr_t)p->msg[i], MSG_LEN, p->msg_mr->lkey};
		struct iw_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		if (iw_post_recv(id->qp, &wr, &bad))
			return -1;
	}
	return 0;
}

static int send_msg(struct peer *p, const char *s)
{
	struct iw_sge sge = {(uintptr_t)p->out, (uint32_t)strlen(s), p->msg_mr->lkey};
	struct iw_send_wr wr = {.wr_id = 100, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND,
				.send_flags = IW_SEND_SIGNALED};
	struct iw_send_wr *bad;

	memcpy(p->out, s, strlen(s));
	return iw_post_send(p->id->qp, &wr, &bad) ? -1 : 0;
}

/* ------------------------------------------------------------ events */

static void async_events(struct peer *p)
{
	struct iw_async_event ev;

	while (iw_get_async_event(p->ctx, &ev) == 0) {
		printf("replay_peer: async %s term 0x%04x %s%s\n", iw_event_type_str(ev.event_type),
		       ev.term, iw_term_str(ev.term), ev.term_from_peer ? " (from the peer)" : "");
		p->failed = true;
	}
}

static void completions(struct peer *p)
{
	struct iw_wc wc;

	while (iw_poll_cq(p->cq, 1, &wc) == 1) {
		if (wc.status != IW_WC_SUCCESS) {
			printf("replay_peer: completion %s: %s\n", iw_wc_opcode_str(wc.opcode),
			       iw_wc_status_str(wc.status));
			p->failed = true;
			continue;
		}
		if (wc.opcode == IW_WC_RECV && p->recvs < 2) {
			memcpy(p->got[p->recvs], p->msg[wc.wr_id & 1], wc.byte_len);
			p->got[p->recvs][wc.byte_len] = '\0';
			printf("replay_peer: received \"%s\"\n", p->got[p->recvs]);
			p->recvs++;
		}
	}
}

static void cq_event(struct peer *p)
{
	struct iw_cq *cq;
	void *ctx;

	if (iw_get_cq_event(p->cc, &cq, &ctx) == 0) {
		iw_ack_cq_events(cq, 1);
		iw_req_notify_cq(cq, 0);
	}
	completions(p);
}

/* The next CM event; NULL after printing why. */
static struct iw_cm_event *cm_event(struct peer *p)
{
	struct iw_cm_event *ev;

	if (iw_cm_get_event(p->cm, &ev))
		return NULL;
	if (ev->event == IW_CM_EVENT_DISCONNECTED)
		p->disconnected = true;
	else if (ev->event != IW_CM_EVENT_ESTABLISHED && ev->event != IW_CM_EVENT_CONNECT_REQUEST)
		p->failed = true;
	printf("replay_peer: CM %s (status %d)\n", iw_cm_event_str(ev->event), ev->status);
	return ev;
}

/* Wait until want(p) or the deadline; dispatches every event meanwhile.
 * 0 when want(p) holds, -1 on timeout. */
static int wait_for(struct peer *p, bool (*want)(const struct peer *), struct iw_cm_event **cm_out)
{
	for (;;) {
		struct pollfd f[3] = {{.fd = p->cm->fd, .events = POLLIN},
				      {.fd = p->cc->fd, .events = POLLIN},
				      {.fd = iw_context_async_fd(p->ctx), .events = POLLIN}};

		completions(p);
		async_events(p);
		if (want(p))
			return 0;
		if (poll(f, 3, TIMEOUT_MS) <= 0) {
			printf("replay_peer: timed out after %d ms\n", TIMEOUT_MS);
			return -1;
		}
		if (f[1].revents)
			cq_event(p);
		if (f[0].revents) {
			struct iw_cm_event *ev = cm_event(p);

			if (ev && cm_out && !*cm_out) {
				*cm_out = ev;
				return 0;
			}
			if (ev)
				iw_cm_ack_event(ev);
		}
	}
}

static bool never(const struct peer *p)
{
	(void)p;
	return false;
}

static bool two_recvs(const struct peer *p)
{
	return p->recvs >= 2 || p->failed || p->disconnected;
}

static bool one_recv(const struct peer *p)
{
	return p->recvs >= 1 || p->failed || p->disconnected;
}

static bool gone(const struct peer *p)
{
	return p->disconnected;
}

static int expect_cm(struct peer *p, enum iw_cm_event_type type, struct iw_cm_event **out)
{
	struct iw_cm_event *ev = NULL;

	if (wait_for(p, never, &ev) || !ev)
		return -1;
	if (ev->event != type) {
		iw_cm_ack_event(ev);
		return -1;
	}
	if (out)
		*out = ev;
	else
		iw_cm_ack_event(ev);
	return 0;
}

/* ------------------------------------------------------------ roles */

static bool pattern_ok(const struct peer *p)
{
	for (unsigned i = 0; i < 3000; i++)
		if (p->buf[i] != (uint8_t)(i * 7 + 3))
			return false;
	return true;
}

static int server(struct peer *p)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct iw_conn_param cp = {.responder_resources = 4, .initiator_depth = 4};
	struct iw_cm_event *ev;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_cm_create_id(p->cm, &p->listen_id, NULL) ||
	    iw_cm_bind_addr(p->listen_id, (struct sockaddr *)&a) || iw_cm_listen(p->listen_id, 4))
		return -1;
	printf("replay_peer: listening port=%u rkey=0x%08" PRIx32 " addr=0x%" PRIxPTR "\n",
	       ntohs(((struct sockaddr_in *)&p->listen_id->local_addr)->sin_port), p->buf_mr->rkey,
	       (uintptr_t)p->buf);
	fflush(stdout);
	if (expect_cm(p, IW_CM_EVENT_CONNECT_REQUEST, &ev))
		return -1;
	p->id = ev->id;
	iw_cm_ack_event(ev);
	if (make_qp(p, p->id, 2) || iw_cm_accept(p->id, &cp) ||
	    expect_cm(p, IW_CM_EVENT_ESTABLISHED, NULL) || wait_for(p, two_recvs, NULL))
		return -1;
	if (p->failed || p->recvs < 2 || strcmp(p->got[0], "hello replay") ||
	    strcmp(p->got[1], "done") || !pattern_ok(p))
		return -1;
	printf("replay_peer: ok (2 Sends and the 3000-octet Write as recorded)\n");
	iw_cm_disconnect(p->id);
	return wait_for(p, gone, NULL);
}

static int client(struct peer *p, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct iw_conn_param cp = {.responder_resources = 4, .initiator_depth = 4};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_cm_create_id(p->cm, &p->id, NULL) || make_qp(p, p->id, 1) ||
	    iw_cm_connect(p->id, (struct sockaddr *)&a, &cp) ||
	    expect_cm(p, IW_CM_EVENT_ESTABLISHED, NULL) || send_msg(p, "hi") ||
	    wait_for(p, one_recv, NULL))
		return -1;
	if (p->failed || strcmp(p->got[0], "welcome") || send_msg(p, "bye"))
		return -1;
	if (wait_for(p, gone, NULL) || p->failed)
		return -1;
	printf("replay_peer: ok (\"welcome\" received, \"bye\" sent)\n");
	return 0;
}

/* After a failure, keep dispatching until the connection is gone: the
 * flushed completion that made us stop can come before the async event
 * naming the TERMINATE, which the test reads from our output (leaving at
 * the first error lost that line now and then). */
static void settle(struct peer *p)
{
	wait_for(p, gone, NULL);
	async_events(p);
}

static void cleanup(struct peer *p)
{
	iw_cm_destroy_id(p->id);
	iw_cm_destroy_id(p->listen_id);
	iw_dereg_mr(p->buf_mr);
	iw_dereg_mr(p->msg_mr);
	iw_destroy_cq(p->cq);
	iw_destroy_comp_channel(p->cc);
	iw_dealloc_pd(p->pd);
	iw_cm_destroy_channel(p->cm);
	iw_context_free(p->ctx);
}

int main(int argc, char **argv)
{
	static struct peer p;
	int rc;

	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc != 3)) {
		fprintf(stderr, "usage: %s server | client PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = setup(&p);
	if (!rc)
		rc = !strcmp(argv[1], "server") ? server(&p) : client(&p, (uint16_t)atoi(argv[2]));
	if ((rc || p.failed) && p.id && !p.disconnected)
		settle(&p);
	printf("replay_peer: %s\n", rc || p.failed ? "FAILED" : "done");
	cleanup(&p);
	return rc || p.failed ? 1 : 0;
}
