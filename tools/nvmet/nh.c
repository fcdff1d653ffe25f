/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NVMe-oF host (nh.h): queues, commands and completions over libiwarp.
 * Each queue has its own CQ (sends and receives), size receive buffers of
 * 16 octets for responses posted before connecting (iWARP has no
 * receiver-not-ready retry), and size command slots, each with a
 * registered data buffer the target reads from and writes into.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nh.h"

/* Responses taken per poll, and so commands per sendmsg: a fraction of
 * the queue depth, as the target's CQ_BATCH (tgt_rdma.c), so that the two
 * sides work at once instead of taking turns over whole queues. */
#define POLL_BATCH 8
#define WR_SEND 1ull
#define WR_REG 2ull

/* At queue depth, responses with small data arrive back to back: one
 * read into the bounce buffer for a run of them, and a copy of each, cost
 * less than a readv per message into its buffer (libiwarp's default from
 * 2 KiB). Larger payloads still land in place. */
static const struct iw_conn_opts nh_conn_opts = {.comp_mask = IW_CONN_OPTS_DIRECT_MIN,
					  .direct_min = 16384};

uint64_t nh_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_cm_readable(evutil_socket_t fd, short what, void *arg)
{
	struct nh *h = arg;
	(void)fd;
	(void)what;
	h->cm_ready = true;
}

int nh_open(struct nh *h, const struct nh_opts *o)
{
	h->o = *o;
	if (!h->o.max_io)
		h->o.max_io = 131072;
	if (!h->o.timeout_ms)
		h->o.timeout_ms = 5000;
	h->base = event_base_new();
	struct iw_context_attr ca = {.base = h->base};
	if (o->pcap) {
		ca.comp_mask = IW_CONTEXT_ATTR_PCAP;
		ca.pcap_path = o->pcap;
	}
	h->ctx = h->base ? iw_context_new(&ca) : NULL;
	h->pd = h->ctx ? iw_alloc_pd(h->ctx) : NULL;
	h->cm = h->ctx ? iw_cm_create_channel(h->ctx) : NULL;
	if (!h->cm || !h->pd)
		return -1;
	fcntl(h->cm->fd, F_SETFL, fcntl(h->cm->fd, F_GETFL) | O_NONBLOCK);
	/* Edge-triggered: the channel stays readable until nh_progress reads
	 * it, and libevent's EVLOOP_NONBLOCK loops for as long as a callback
	 * is active, so a level-triggered event spun cm_wait for good. */
	h->cm_ev = event_new(h->base, h->cm->fd, EV_READ | EV_PERSIST | EV_ET, on_cm_readable, h);
	return h->cm_ev && !event_add(h->cm_ev, NULL) ? 0 : -1;
}

void nh_close(struct nh *h)
{
	if (h->cm_ev)
		event_free(h->cm_ev);
	h->cm_ev = NULL;
	iw_dealloc_pd(h->pd);
	iw_cm_destroy_channel(h->cm);
	iw_context_free(h->ctx);
	if (h->base)
		event_base_free(h->base);
	h->ctx = NULL;
	h->base = NULL;
}

/* ------------------------------------------------------------ queues */

static void *page_alloc(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int post_rsp(struct nh_queue *q, uint32_t i)
{
	struct iw_sge sge = {.addr = (uintptr_t)q->rsps + 16 * i, .length = NVMF_CQE_SIZE,
			     .lkey = q->rsp_mr->lkey};
	struct iw_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
	return iw_post_recv(q->id->qp, &wr, &bad);
}

static int alloc_reqs(struct nh *h, struct nh_queue *q)
{
	int acc = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	q->reqs = calloc(q->size, sizeof(*q->reqs));
	if (!q->reqs)
		return -ENOMEM;
	for (uint16_t i = 0; i < q->size; i++) {
		struct nh_req *r = &q->reqs[i];
		r->q = q;
		r->cid = i;
		r->data = page_alloc(h->o.max_io);
		if (!r->data)
			return -ENOMEM;
		r->mr = h->o.invalidate ? iw_alloc_mr(h->pd, 1) : iw_reg_mr(h->pd, r->data, h->o.max_io, acc);
		if (!r->mr)
			return -errno;
	}
	return 0;
}

static int alloc_queue(struct nh *h, struct nh_queue *q)
{
	size_t csz = NVMF_CMD_SIZE;
	q->cmds = page_alloc(csz * q->size);
	q->rsps = page_alloc(NVMF_CQE_SIZE * (size_t)q->size);
	q->cq = iw_create_cq(h->ctx, 4 * q->size + 16, NULL, NULL, 0);
	if (!q->cmds || !q->rsps || !q->cq)
		return -ENOMEM;
	q->cmd_mr = iw_reg_mr(h->pd, q->cmds, csz * q->size, 0);
	q->rsp_mr = iw_reg_mr(h->pd, q->rsps, NVMF_CQE_SIZE * (size_t)q->size, IW_ACCESS_LOCAL_WRITE);
	if (!q->cmd_mr || !q->rsp_mr)
		return -ENOMEM;
	return alloc_reqs(h, q);
}

/* The next CM event of q's id within the deadline, other ids' events
 * noted on their queues by the caller's later polls. */
static struct iw_cm_event *cm_wait(struct nh *h, struct iw_cm_id *id, int ms)
{
	uint64_t end = nh_now_ns() + (uint64_t)ms * 1000000;
	while (nh_now_ns() < end) {
		event_base_loop(h->base, EVLOOP_NONBLOCK);
		struct iw_cm_event *ev;
		if (iw_cm_get_event(h->cm, &ev) == 0) {
			if (ev->id == id)
				return ev;
			iw_cm_ack_event(ev);
		}
	}
	return NULL;
}

int nh_queue_connect(struct nh *h, struct nh_queue *q, uint16_t qid, uint16_t size,
		     const void *pd, uint16_t pd_len)
{
	memset(q, 0, sizeof(*q));
	q->h = h;
	q->qid = qid;
	q->size = size;
	int rc = iw_cm_create_id(h->cm, &q->id, q);
	if (!rc)
		rc = iw_cm_set_conn_opts(q->id, &nh_conn_opts);
	if (rc)
		return -rc;
	if ((rc = alloc_queue(h, q)))
		return rc;
	struct iw_qp_init_attr qa = {.send_cq = q->cq, .recv_cq = q->cq, .qp_type = IW_QPT_RC,
				     .cap = {.max_send_wr = 2u * size + 4, .max_recv_wr = size,
					     .max_send_sge = 2, .max_recv_sge = 1}};
	if ((rc = iw_cm_create_qp(q->id, h->pd, &qa)))
		return -rc;
	for (uint32_t i = 0; i < size; i++)
		if ((rc = post_rsp(q, i)))
			return -rc;
	uint8_t priv[NVMF_CM_PD_SIZE];
	struct nvmf_cm_req req = {.qid = qid, .hrqsize = size, .hsqsize = (uint16_t)(size - 1)};
	nvmf_cm_req_put(priv, &req);
	struct iw_conn_param p = {.private_data = pd ? pd : priv,
				  .private_data_len = pd ? pd_len : sizeof(priv),
				  .responder_resources = 16, .initiator_depth = 0,
				  .connect_timeout_ms = (uint32_t)h->o.timeout_ms};
	if ((rc = iw_cm_connect(q->id, (struct sockaddr *)&h->o.dst, &p)))
		return -rc;
	struct iw_cm_event *ev = cm_wait(h, q->id, h->o.timeout_ms);
	if (!ev)
		return -ETIMEDOUT;
	enum iw_cm_event_type t = ev->event;
	if (t == IW_CM_EVENT_REJECTED)
		q->rej_status = nvmf_cm_rej_parse(ev->param.private_data, ev->param.private_data_len);
	int st = ev->status;
	iw_cm_ack_event(ev);
	if (t == IW_CM_EVENT_ESTABLISHED)
		return 0;
	q->dead = true;
	return t == IW_CM_EVENT_REJECTED ? -ECONNREFUSED : -(st ? st : EPROTO);
}

void nh_queue_close(struct nh_queue *q)
{
	if (!q->h)
		return;
	iw_cm_destroy_id(q->id);
	for (uint16_t i = 0; q->reqs && i < q->size; i++) {
		iw_dereg_mr(q->reqs[i].mr);
		free(q->reqs[i].data);
	}
	iw_dereg_mr(q->cmd_mr);
	iw_dereg_mr(q->rsp_mr);
	iw_destroy_cq(q->cq);
	free(q->reqs);
	free(q->cmds);
	free(q->rsps);
	memset(q, 0, sizeof(*q));
}

/* ------------------------------------------------------------ commands */

struct nh_req *nh_req_get(struct nh_queue *q)
{
	if (q->dead)
		return NULL;
	for (uint16_t i = 0; i < q->size; i++)
		if (!q->reqs[i].busy)
			return &q->reqs[i];
	return NULL;
}

/* Fast registration of the request's buffer under a new key, posted
 * ahead of the command that names it. */
static struct iw_send_wr *reg_wr(struct nh_req *r, struct iw_send_wr wr[2], uint32_t len)
{
	struct iw_send_wr *first = wr;
	memset(wr, 0, 2 * sizeof(*wr));
	if (r->need_inv) {
		/* The target did not invalidate it (a plain Send): we do. */
		wr->wr_id = WR_REG << 32 | r->cid;
		wr->opcode = IW_WR_LOCAL_INV;
		wr->invalidate_rkey = r->key;
		wr->next = wr + 1;
		wr++;
	}
	r->key = iw_inc_rkey(r->key ? r->key : r->mr->rkey);
	wr->wr_id = WR_REG << 32 | r->cid;
	wr->opcode = IW_WR_REG_MR;
	wr->reg.mr = r->mr;
	wr->reg.key = r->key;
	wr->reg.access = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	wr->reg.iova = (uintptr_t)r->data;
	wr->reg.length = len ? len : 1;
	wr->reg.addr = r->data;
	return first;
}

/* A post refused from bad on: those commands will not be answered. */
static int post_failed(struct nh_queue *q, struct iw_send_wr *bad, int rc)
{
	for (struct iw_send_wr *w = bad; w; w = w->next)
		if (w->wr_id >> 32 == WR_SEND) {
			q->reqs[(uint16_t)w->wr_id].busy = false;
			q->inflight--;
		}
	return -rc;
}

static int post_chain(struct nh_queue *q, struct iw_send_wr *first)
{
	struct iw_send_wr *bad = NULL;
	int rc = iw_post_send(q->id->qp, first, &bad);
	return rc ? post_failed(q, bad, rc) : 0;
}

static int cork_flush(struct nh_queue *q)
{
	struct iw_send_wr *first = q->cork_head;
	q->corking = false;
	q->cork_head = NULL;
	int rc = first ? post_chain(q, first) : 0;
	if (rc && !q->dead) {
		fprintf(stderr, "nvmf host: queue %u: posting commands: %s\n", q->qid, strerror(-rc));
		q->dead = true;
	}
	return rc;
}

static void cork_add(struct nh_queue *q, struct iw_send_wr *first, struct iw_send_wr *last)
{
	if (!q->cork_head)
		q->cork_tail = &q->cork_head;
	*q->cork_tail = first;
	q->cork_tail = &last->next;
}

/* Send the command; pre: WRs to chain ahead of it (their last one's next
 * is set here). */
static int post_cmd(struct nh_req *r, uint32_t cmd_len, uint32_t icd_len, struct iw_send_wr *pre)
{
	struct nh_queue *q = r->q;
	r->sge[0] = (struct iw_sge){.addr = (uintptr_t)q->cmds + NVMF_CMD_SIZE * r->cid,
				    .length = cmd_len, .lkey = q->cmd_mr->lkey};
	r->sge[1] = (struct iw_sge){.addr = (uintptr_t)r->data, .length = icd_len,
				    .lkey = r->mr->lkey};
	r->wr = (struct iw_send_wr){.wr_id = WR_SEND << 32 | r->cid, .sg_list = r->sge,
				    .num_sge = icd_len ? 2 : 1, .opcode = IW_WR_SEND,
				    .send_flags = IW_SEND_SIGNALED};
	for (struct iw_send_wr *p = pre; p; p = p->next)
		if (!p->next) {
			p->next = &r->wr;
			break;
		}
	r->busy = true;
	r->invalidated = false;
	r->t0_ns = nh_now_ns();
	q->inflight++;
	if (q->corking) {
		cork_add(q, pre ? pre : &r->wr, &r->wr);
		return 0;
	}
	return post_chain(q, pre ? pre : &r->wr);
}

int nh_submit(struct nh_req *r, struct nvmf_cmd *c, uint32_t len, enum nvmf_dir dir,
	      bool incapsule)
{
	struct nh_queue *q = r->q;
	struct nvmf_sgl s = {.kind = NVMF_SGL_KIND_KEYED};
	struct iw_send_wr *pre = NULL;
	/* With fast registration every transfer is keyed: the buffer is only
	 * valid while registered for a command. */
	bool icd = incapsule && !q->h->o.invalidate && dir == NVMF_DIR_H2C && len &&
		   len <= q->h->o.icd_max;
	c->cid = r->cid;
	c->flags = NVME_CMD_PSDT_SGL_MPTR;
	r->asked_inv = false;
	if (icd) {
		s.kind = NVMF_SGL_KIND_INCAPSULE;
		s.length = len;
	} else if (len) {
		if (q->h->o.invalidate) {
			pre = reg_wr(r, r->reg, len);
			s.invalidate = r->asked_inv = true;
		} else {
			r->key = r->mr->rkey;
		}
		s.addr = (uintptr_t)r->data;
		s.length = len;
		s.key = r->key;
	}
	nvmf_sgl_put(c->sgl_raw, &s);
	nvmf_cmd_put(q->cmds + NVMF_CMD_SIZE * r->cid, c);
	return post_cmd(r, NVMF_CMD_SIZE, icd ? len : 0, pre);
}

int nh_submit_raw(struct nh_req *r, const void *capsule, uint32_t len)
{
	if (len > NVMF_CMD_SIZE)
		len = NVMF_CMD_SIZE;
	memcpy(r->q->cmds + NVMF_CMD_SIZE * r->cid, capsule, len);
	return post_cmd(r, len, 0, NULL);
}

static void on_rsp(struct nh_queue *q, const struct iw_wc *wc)
{
	struct nvmf_cqe e;
	uint32_t i = (uint32_t)wc->wr_id;
	int rc = nvmf_cqe_parse(&e, q->rsps + 16 * i, wc->byte_len);
	post_rsp(q, i);
	if (rc || e.cid >= q->size || !q->reqs[e.cid].busy) {
		fprintf(stderr, "nvmf host: queue %u: response for no command (cid %u)\n", q->qid,
			rc ? 0xffff : e.cid);
		return;
	}
	struct nh_req *r = &q->reqs[e.cid];
	r->cqe = e;
	if (wc->wc_flags & IW_WC_WITH_INV)
		r->invalidated = wc->invalidated_rkey == r->key;
	if (r->asked_inv)
		r->need_inv = !r->invalidated;
	r->busy = false;
	q->inflight--;
	if (q->h->done)
		q->h->done(r, q->h->done_arg);
}

static int poll_queue(struct nh_queue *q)
{
	struct iw_wc wc[POLL_BATCH];
	int n, got = 0;
	while (q->cq && (n = iw_poll_cq(q->cq, POLL_BATCH, wc)) > 0) {
		q->corking = true;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IW_WC_SUCCESS) {
				if (!q->dead)
					fprintf(stderr, "nvmf host: queue %u: %s (%s)\n", q->qid,
						iw_wc_status_str(wc[i].status),
						iw_wc_opcode_str(wc[i].opcode));
				q->dead = true;
			} else if (wc[i].opcode == IW_WC_RECV) {
				on_rsp(q, &wc[i]);
				got++;
			}
		}
		cork_flush(q);
	}
	return got;
}

void nh_wait(struct nh *h)
{
	struct timeval tv = {0, 100000};
	event_base_loopexit(h->base, &tv);
	event_base_loop(h->base, EVLOOP_ONCE);
	h->skip_loop = true;
}

int nh_progress(struct nh *h, struct nh_queue *qs, int nq)
{
	int got = 0;
	struct iw_cm_event *ev;
	/* Each of these was a system call a QD 1 load paid per I/O for
	 * nothing. The loop is not run when it has just run (nh_wait), nor
	 * right after the CQs were polled empty of responses: only the loop
	 * fills them again, and a caller that finds nothing now waits in it
	 * (its epoll_wait returns at once if something is ready). The CM
	 * channel is read only once the loop has seen it readable. */
	if (!h->skip_loop)
		event_base_loop(h->base, EVLOOP_NONBLOCK);
	while (h->cm_ready && iw_cm_get_event(h->cm, &ev) == 0) {
		for (int i = 0; i < nq; i++)
			if (qs[i].id == ev->id && (ev->event == IW_CM_EVENT_DISCONNECTED ||
						   ev->event == IW_CM_EVENT_CONNECT_ERROR))
				qs[i].dead = true;
		iw_cm_ack_event(ev);
	}
	h->cm_ready = false;
	for (int i = 0; i < nq; i++)
		got += poll_queue(&qs[i]);
	h->skip_loop = got > 0;
	return got;
}

int nh_sync(struct nh_queue *q, struct nvmf_cmd *c, const void *in, void *out, uint32_t len,
	    enum nvmf_dir dir, struct nvmf_cqe *cqe)
{
	struct nh_req *r = nh_req_get(q);
	if (!r)
		return q->dead ? -ECONNRESET : -EBUSY;
	if (in)
		memcpy(r->data, in, len);
	nh_done_fn saved = q->h->done;
	q->h->done = NULL;
	int rc = nh_submit(r, c, len, dir, true);
	uint64_t end = nh_now_ns() + (uint64_t)q->h->o.timeout_ms * 1000000;
	while (!rc && r->busy && !q->dead && nh_now_ns() < end)
		nh_progress(q->h, q, 1);
	q->h->done = saved;
	if (rc)
		return rc;
	if (r->busy)
		return q->dead ? -ECONNRESET : -ETIMEDOUT;
	if (out && !r->cqe.status)
		memcpy(out, r->data, len);
	*cqe = r->cqe;
	return 0;
}

/* ------------------------------------------------------------ admin */

int nh_fabrics_connect(struct nh_queue *q, uint16_t cntlid, uint32_t kato, struct nvmf_cqe *cqe)
{
	struct nh *h = q->h;
	struct nvmf_cmd c = {0};
	struct nvmf_connect k = {.qid = q->qid, .sqsize = (uint16_t)(q->size - 1), .kato = kato};
	struct nvmf_connect_data d = {.cntlid = cntlid};
	uint8_t buf[NVMF_CONNECT_DATA_SIZE];
	nvmf_connect_set(&c, &k);
	memcpy(d.hostid, h->hostid, 16);
	memcpy(d.subnqn, h->subnqn, sizeof(d.subnqn));
	memcpy(d.hostnqn, h->hostnqn, sizeof(d.hostnqn));
	nvmf_connect_data_put(buf, &d);
	int rc = nh_sync(q, &c, buf, NULL, sizeof(buf), NVMF_DIR_H2C, cqe);
	return rc ? rc : cqe->status;
}

int nh_prop_get(struct nh_queue *aq, uint32_t off, bool eight, uint64_t *val)
{
	struct nvmf_cmd c = {.fctype = NVMF_FCTYPE_PROP_GET};
	struct nvmf_prop p = {.size8 = eight, .offset = off};
	struct nvmf_cqe e;
	nvmf_prop_set(&c, &p);
	int rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	*val = e.result;
	return rc ? rc : e.status;
}

int nh_prop_set(struct nh_queue *aq, uint32_t off, uint32_t val)
{
	struct nvmf_cmd c = {.fctype = NVMF_FCTYPE_PROP_SET};
	struct nvmf_prop p = {.offset = off, .value = val};
	struct nvmf_cqe e;
	nvmf_prop_set(&c, &p);
	int rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	return rc ? rc : e.status;
}

static int wait_csts(struct nh_queue *aq, uint32_t mask, uint32_t want)
{
	uint64_t v = 0, end = nh_now_ns() + (uint64_t)aq->h->o.timeout_ms * 1000000;
	do {
		int rc = nh_prop_get(aq, NVME_REG_CSTS, false, &v);
		if (rc)
			return rc;
		if (v & NVME_CSTS_CFS)
			return -EIO;
		if ((v & mask) == want)
			return 0;
	} while (nh_now_ns() < end);
	return -ETIMEDOUT;
}

int nh_ctrl_start(struct nh *h, struct nh_queue *aq, uint32_t kato, uint8_t *id_ctrl)
{
	struct nvmf_cqe e;
	int rc = nh_fabrics_connect(aq, 0xffff, kato, &e);
	if (rc) {
		fprintf(stderr, "nvmf host: Connect: %s (0x%x)\n",
			rc > 0 ? nvmf_status_str((uint16_t)rc) : strerror(-rc), rc);
		return -1;
	}
	h->cntlid = (uint16_t)e.result;
	/* CC: EN, IOSQES 6, IOCQES 4, 4 KiB pages, NVM command set. */
	rc = nh_prop_set(aq, NVME_REG_CC, NVME_CC_EN | 6u << 16 | 4u << 20);
	if (!rc)
		rc = wait_csts(aq, NVME_CSTS_RDY, NVME_CSTS_RDY);
	if (rc) {
		fprintf(stderr, "nvmf host: enabling the controller failed (%d)\n", rc);
		return -1;
	}
	struct nvmf_cmd c = {.opc = NVME_ADM_IDENTIFY, .cdw = {[10] = NVME_ID_CNS_CTRL}};
	rc = nh_sync(aq, &c, NULL, id_ctrl, NVMF_IDENTIFY_SIZE, NVMF_DIR_C2H, &e);
	if (rc || e.status) {
		fprintf(stderr, "nvmf host: Identify controller failed\n");
		return -1;
	}
	return 0;
}

int nh_ctrl_shutdown(struct nh_queue *aq)
{
	int rc = nh_prop_set(aq, NVME_REG_CC, NVME_CC_EN | 6u << 16 | 4u << 20 | 1u << NVME_CC_SHN_SHIFT);
	return rc ? rc : wait_csts(aq, NVME_CSTS_SHST_MASK, NVME_SHST_CMPLT << NVME_CSTS_SHST_SHIFT);
}
