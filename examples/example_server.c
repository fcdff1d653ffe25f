/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Example server: accepts one connection, receives the client's buffer
 * advertisement (Send), answers with its own, and lets the client RDMA
 * WRITE into and READ from its buffer. It finishes when the client sends
 * its final message, and checks that the buffer holds what the client wrote.
 *
 *   example_server [-p port] [-S size]
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "example_common.h"

struct server {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_cm_id *listen_id, *id;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *scq, *rcq; /* separate: their completions may interleave */
	struct iw_mr *msg_mr, *buf_mr;
	uint8_t msg[16];
	uint8_t *buf;
	uint32_t size;
};

static int setup_resources(struct server *s)
{
	s->pd = iw_alloc_pd(s->ctx);
	s->cc = iw_create_comp_channel(s->ctx);
	s->scq = s->cc ? iw_create_cq(s->ctx, 16, NULL, s->cc, 0) : NULL;
	s->rcq = s->cc ? iw_create_cq(s->ctx, 16, NULL, s->cc, 0) : NULL;
	s->buf = calloc(1, s->size);
	if (!s->pd || !s->scq || !s->rcq || !s->buf)
		return -1;
	s->msg_mr = iw_reg_mr(s->pd, s->msg, sizeof(s->msg), IW_ACCESS_LOCAL_WRITE);
	/* The client writes and reads this buffer remotely. */
	s->buf_mr = iw_reg_mr(s->pd, s->buf, s->size,
			      IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	if (!s->msg_mr || !s->buf_mr)
		return -1;
	struct iw_qp_init_attr qa = {
		.send_cq = s->scq,
		.recv_cq = s->rcq,
		.qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	};
	return iw_cm_create_qp(s->id, s->pd, &qa) ? -1 : 0;
}

static int serve(struct server *s)
{
	struct iw_wc wc;
	struct ex_advert mine = {(uintptr_t)s->buf, s->buf_mr->rkey, s->size}, theirs;

	if (ex_wait_wc(s->cc, s->rcq, IW_WC_RECV, &wc))
		return -1;
	ex_advert_unpack(&theirs, s->msg);
	printf("server: client buffer addr 0x%llx rkey 0x%08x len %u\n",
	       (unsigned long long)theirs.addr, theirs.rkey, theirs.len);
	/* Post the receive for the final message before answering, so the
	 * client's last Send always finds a buffer (iWARP has no RNR retry). */
	if (ex_post_recv(s->id->qp, s->msg_mr, s->msg, sizeof(s->msg)))
		return -1;
	uint8_t out[16];
	ex_advert_pack(out, &mine);
	memcpy(s->msg, out, sizeof(out));
	if (ex_post(s->id->qp, IW_WR_SEND, s->msg_mr, s->msg, sizeof(s->msg), 0, 0) ||
	    ex_wait_wc(s->cc, s->scq, IW_WC_SEND, &wc))
		return -1;
	if (ex_wait_wc(s->cc, s->rcq, IW_WC_RECV, &wc))
		return -1;
	for (uint32_t i = 0; i < s->size; i++) {
		if (s->buf[i] != (uint8_t)(i * 7 + 3)) {
			fprintf(stderr, "server: byte %u is 0x%02x, the client wrote 0x%02x\n", i,
				s->buf[i], (uint8_t)(i * 7 + 3));
			return -1;
		}
	}
	printf("server: %u bytes written by the client verified\n", s->size);
	return 0;
}

static int run(struct server *s, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_cm_create_id(s->cm, &s->listen_id, NULL) ||
	    iw_cm_bind_addr(s->listen_id, (struct sockaddr *)&a) || iw_cm_listen(s->listen_id, 8))
		return -1;
	printf("server: listening on 127.0.0.1:%u\n", port);
	fflush(stdout);
	struct iw_cm_event *ev = ex_wait_cm(s->cm, IW_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return -1;
	s->id = ev->id;
	iw_cm_ack_event(ev);
	if (setup_resources(s) || ex_post_recv(s->id->qp, s->msg_mr, s->msg, sizeof(s->msg)))
		return -1;
	struct iw_conn_param p = {.responder_resources = 4, .initiator_depth = 4};
	if (iw_cm_accept(s->id, &p) || !(ev = ex_wait_cm(s->cm, IW_CM_EVENT_ESTABLISHED)))
		return -1;
	iw_cm_ack_event(ev);
	int rc = serve(s);
	iw_cm_disconnect(s->id);
	if ((ev = ex_wait_cm(s->cm, IW_CM_EVENT_DISCONNECTED)) != NULL)
		iw_cm_ack_event(ev);
	return rc;
}

static void cleanup(struct server *s)
{
	/* Flushed completions after the disconnect are simply dropped. */
	iw_cm_destroy_id(s->id);
	iw_cm_destroy_id(s->listen_id);
	iw_dereg_mr(s->msg_mr);
	iw_dereg_mr(s->buf_mr);
	iw_destroy_cq(s->scq);
	iw_destroy_cq(s->rcq);
	iw_destroy_comp_channel(s->cc);
	iw_dealloc_pd(s->pd);
	iw_cm_destroy_channel(s->cm);
	iw_context_free(s->ctx);
	free(s->buf);
}

int main(int argc, char **argv)
{
	struct server s = {.size = 65536};
	uint16_t port = 7174;
	int opt;
	while ((opt = getopt(argc, argv, "p:S:")) != -1) {
		if (opt == 'p')
			port = (uint16_t)atoi(optarg);
		else if (opt == 'S')
			s.size = (uint32_t)strtoul(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: %s [-p port] [-S size]\n", argv[0]);
			return 2;
		}
	}
	if (s.size == 0) {
		fprintf(stderr, "size must be at least 1\n");
		return 2;
	}
	s.ctx = iw_context_new(NULL);
	s.cm = s.ctx ? iw_cm_create_channel(s.ctx) : NULL;
	int rc = s.cm ? run(&s, port) : -1;
	cleanup(&s);
	printf("server: %s\n", rc ? "FAILED" : "done");
	return rc ? 1 : 0;
}
