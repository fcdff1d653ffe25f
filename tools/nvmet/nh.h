/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small NVMe-oF host on libiwarp (RDMA transport binding), for
 * iwarp-nvmf-perf and the tests: queues connected through the CM with the
 * binding's private data, commands with keyed or in-capsule SGLs, and
 * completions matched by command ID. One thread drives everything by
 * polling: nh_progress runs the libevent loop once without blocking (that
 * is where libiwarp reads the sockets) and polls every queue's CQ.
 */
#ifndef NVMET_NH_H
#define NVMET_NH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/iwarp.h>

#include "nvmf.h"

struct nh;
struct nh_queue;

/* One command in flight; cid is its index in the queue. */
struct nh_req {
	struct nh_queue *q;
	uint16_t cid;
	bool busy;
	uint8_t *data;       /* registered, max_io octets */
	struct iw_mr *mr;    /* plain MR, or fast-registration MR with --invalidate */
	uint32_t key;        /* the key the command carried */
	uint64_t t0_ns;
	struct nvmf_cqe cqe;
	bool invalidated;    /* the response was a Send with Invalidate of key */
	bool need_inv;       /* fast-reg MR still valid: LOCAL_INV before reuse */
	bool asked_inv;      /* the command's keyed SGL asked for invalidation */
	void *user;
	uint64_t user_u64;
	/* The command's WRs live here until they are posted (corked). */
	struct iw_sge sge[2];
	struct iw_send_wr wr, reg[2];
};

typedef void (*nh_done_fn)(struct nh_req *r, void *arg);

struct nh_queue {
	struct nh *h;
	struct iw_cm_id *id;
	struct iw_cq *cq;
	uint16_t qid, size;
	uint8_t *cmds, *rsps;
	struct iw_mr *cmd_mr, *rsp_mr;
	struct nh_req *reqs;
	uint16_t inflight;
	bool dead;
	uint16_t rej_status;  /* the binding's reject code, when connect was rejected */
	/* While completions are handled, new commands wait here and go out
	 * together after them (one post, one write to the socket). */
	bool corking;
	struct iw_send_wr *cork_head, **cork_tail;
};

struct nh_opts {
	struct sockaddr_storage dst;
	uint32_t max_io;       /* per-command buffer (default 131072) */
	uint32_t icd_max;      /* in-capsule data used up to this (0: never) */
	bool invalidate;       /* keyed SGLs ask for Send with Invalidate (fast-reg MRs) */
	int timeout_ms;        /* connection and admin command deadline */
	const char *pcap;
};

struct nh {
	struct nh_opts o;
	struct event_base *base;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cm_channel *cm;
	struct event *cm_ev;    /* the CM channel readable: sets cm_ready */
	bool cm_ready, skip_loop; /* see nh_progress */
	nh_done_fn done;
	void *done_arg;
	uint16_t cntlid;
	char hostnqn[NVMF_NQN_SIZE], subnqn[NVMF_NQN_SIZE];
	uint8_t hostid[16];
};

uint64_t nh_now_ns(void);
int nh_open(struct nh *h, const struct nh_opts *o);
void nh_close(struct nh *h);
/* Connect the RDMA queue (CM private data: qid, hrqsize size,
 * hsqsize size - 1, or raw private data when pd is not NULL).
 * 0; -ECONNREFUSED with q->rej_status; or another -errno. */
int nh_queue_connect(struct nh *h, struct nh_queue *q, uint16_t qid, uint16_t size,
		     const void *pd, uint16_t pd_len);
void nh_queue_close(struct nh_queue *q);
/* A free request slot, or NULL. */
struct nh_req *nh_req_get(struct nh_queue *q);
/* Send c with data (len octets of r->data) in direction dir: in-capsule
 * when it is a write that fits icd_max (and incapsule is allowed), keyed
 * otherwise. The SGL of c is filled in. 0 or -errno. */
int nh_submit(struct nh_req *r, struct nvmf_cmd *c, uint32_t len, enum nvmf_dir dir,
	      bool incapsule);
/* Send len octets as they are (a hostile capsule); r is busy until a
 * response with its CID arrives. */
int nh_submit_raw(struct nh_req *r, const void *capsule, uint32_t len);
/* Run the loop once and poll every queue: completions go to h->done.
 * Returns how many completions were handled. */
int nh_progress(struct nh *h, struct nh_queue *qs, int nq);
/* Sleep in the loop until a socket has something (at most 100 ms): on a
 * busy machine, waiting in epoll answers sooner than spinning, which the
 * scheduler punishes by descheduling the spinner. */
void nh_wait(struct nh *h);
/* Submit and wait (timeout_ms): 0 with *out filled, or -errno
 * (-ETIMEDOUT, -ECONNRESET). */
int nh_sync(struct nh_queue *q, struct nvmf_cmd *c, const void *in, void *out, uint32_t len,
	    enum nvmf_dir dir, struct nvmf_cqe *cqe);
/* Fabrics Connect on queue q; 0, or the NVMe status, or -errno. */
int nh_fabrics_connect(struct nh_queue *q, uint16_t cntlid, uint32_t kato, struct nvmf_cqe *cqe);
/* Admin bring-up: Connect, enable (CC.EN, wait CSTS.RDY), Identify
 * controller; 0 or a message on stderr and -1. */
int nh_ctrl_start(struct nh *h, struct nh_queue *aq, uint32_t kato, uint8_t *id_ctrl);
/* Shutdown (CC.SHN normal, wait CSTS.SHST complete). */
int nh_ctrl_shutdown(struct nh_queue *aq);
int nh_prop_get(struct nh_queue *aq, uint32_t off, bool eight, uint64_t *val);
int nh_prop_set(struct nh_queue *aq, uint32_t off, uint32_t val);

#endif
