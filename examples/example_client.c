/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Example client: the classic flow. It advertises its buffer to the server
 * with a Send, receives the server's advertisement, RDMA WRITEs its source
 * buffer into the server's, RDMA READs it back into a destination buffer,
 * compares the two, and tells the server it is done.
 *
 *   example_client [-a addr] [-p port] [-S size]
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "example_common.h"

struct client {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_cm_id *id;
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *scq, *rcq; /* separate: their completions may interleave */
	struct iw_mr *msg_mr, *src_mr, *dst_mr;
	uint8_t msg[16];
	uint8_t *src, *dst;
	uint32_t size;
};

static int setup(struct client *c)
{
	c->pd = iw_alloc_pd(c->ctx);
	c->cc = iw_create_comp_channel(c->ctx);
	c->scq = c->cc ? iw_create_cq(c->ctx, 16, NULL, c->cc, 0) : NULL;
	c->rcq = c->cc ? iw_create_cq(c->ctx, 16, NULL, c->cc, 0) : NULL;
	c->src = malloc(c->size);
	c->dst = calloc(1, c->size);
	if (!c->pd || !c->scq || !c->rcq || !c->src || !c->dst)
		return -1;
	for (uint32_t i = 0; i < c->size; i++)
		c->src[i] = (uint8_t)(i * 7 + 3);
	c->msg_mr = iw_reg_mr(c->pd, c->msg, sizeof(c->msg), IW_ACCESS_LOCAL_WRITE);
	c->src_mr = iw_reg_mr(c->pd, c->src, c->size, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_READ);
	/* An RDMA READ sink is written by the peer's Read Response: on iWARP
	 * it needs REMOTE_WRITE. */
	c->dst_mr = iw_reg_mr(c->pd, c->dst, c->size,
			      IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	if (!c->msg_mr || !c->src_mr || !c->dst_mr)
		return -1;
	struct iw_qp_init_attr qa = {
		.send_cq = c->scq,
		.recv_cq = c->rcq,
		.qp_type = IW_QPT_RC,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	};
	return iw_cm_create_qp(c->id, c->pd, &qa) ? -1 : 0;
}

static int transfer(struct client *c)
{
	struct iw_wc wc;
	struct ex_advert mine = {(uintptr_t)c->src, c->src_mr->rkey, c->size}, theirs;

	ex_advert_pack(c->msg, &mine);
	if (ex_post(c->id->qp, IW_WR_SEND, c->msg_mr, c->msg, sizeof(c->msg), 0, 0) ||
	    ex_wait_wc(c->cc, c->scq, IW_WC_SEND, &wc) ||
	    ex_wait_wc(c->cc, c->rcq, IW_WC_RECV, &wc))
		return -1;
	ex_advert_unpack(&theirs, c->msg);
	if (theirs.len < c->size) {
		fprintf(stderr, "client: server buffer %u < %u\n", theirs.len, c->size);
		return -1;
	}
	if (ex_post(c->id->qp, IW_WR_RDMA_WRITE, c->src_mr, c->src, c->size, theirs.addr,
		    theirs.rkey) ||
	    ex_wait_wc(c->cc, c->scq, IW_WC_RDMA_WRITE, &wc))
		return -1;
	if (ex_post(c->id->qp, IW_WR_RDMA_READ, c->dst_mr, c->dst, c->size, theirs.addr,
		    theirs.rkey) ||
	    ex_wait_wc(c->cc, c->scq, IW_WC_RDMA_READ, &wc))
		return -1;
	if (memcmp(c->src, c->dst, c->size)) {
		fprintf(stderr, "client: source and destination buffers differ\n");
		return -1;
	}
	printf("client: source and destination buffers match (%u bytes)\n", c->size);
	/* Tell the server we are done. */
	memset(c->msg, 0, sizeof(c->msg));
	return ex_post(c->id->qp, IW_WR_SEND, c->msg_mr, c->msg, sizeof(c->msg), 0, 0) ||
			       ex_wait_wc(c->cc, c->scq, IW_WC_SEND, &wc)
		       ? -1
		       : 0;
}

static int run(struct client *c, const char *addr, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		fprintf(stderr, "client: bad address %s\n", addr);
		return -1;
	}
	if (iw_cm_create_id(c->cm, &c->id, NULL) || setup(c) ||
	    ex_post_recv(c->id->qp, c->msg_mr, c->msg, sizeof(c->msg)))
		return -1;
	struct iw_conn_param p = {.responder_resources = 4, .initiator_depth = 4};
	if (iw_cm_connect(c->id, (struct sockaddr *)&a, &p))
		return -1;
	struct iw_cm_event *ev = ex_wait_cm(c->cm, IW_CM_EVENT_ESTABLISHED);
	if (!ev)
		return -1;
	printf("client: connected (MPA rev %u, CRC %s, markers %s)\n", ev->mpa_rev,
	       ev->crc ? "on" : "off", ev->markers_rx || ev->markers_tx ? "on" : "off");
	iw_cm_ack_event(ev);
	int rc = transfer(c);
	if ((ev = ex_wait_cm(c->cm, IW_CM_EVENT_DISCONNECTED)) != NULL)
		iw_cm_ack_event(ev);
	return rc;
}

int main(int argc, char **argv)
{
	struct client c = {.size = 65536};
	const char *addr = "127.0.0.1";
	uint16_t port = 7174;
	int opt;
	while ((opt = getopt(argc, argv, "a:p:S:")) != -1) {
		if (opt == 'a')
			addr = optarg;
		else if (opt == 'p')
			port = (uint16_t)atoi(optarg);
		else if (opt == 'S')
			c.size = (uint32_t)strtoul(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: %s [-a addr] [-p port] [-S size]\n", argv[0]);
			return 2;
		}
	}
	if (c.size == 0) {
		fprintf(stderr, "size must be at least 1\n");
		return 2;
	}
	c.ctx = iw_context_new(NULL);
	c.cm = c.ctx ? iw_cm_create_channel(c.ctx) : NULL;
	int rc = c.cm ? run(&c, addr, port) : -1;
	iw_cm_destroy_id(c.id);
	iw_dereg_mr(c.msg_mr);
	iw_dereg_mr(c.src_mr);
	iw_dereg_mr(c.dst_mr);
	iw_destroy_cq(c.scq);
	iw_destroy_cq(c.rcq);
	iw_destroy_comp_channel(c.cc);
	iw_dealloc_pd(c.pd);
	iw_cm_destroy_channel(c.cm);
	iw_context_free(c.ctx);
	free(c.src);
	free(c.dst);
	printf("client: %s\n", rc ? "FAILED" : "done");
	return rc ? 1 : 0;
}
