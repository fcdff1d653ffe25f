/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The command path shared by every queue: parse the capsule, check the
 * flags and the SGL against the command's direction, let the command set
 * check its fields (prep) before any data moves, then execute. Every
 * refusal is an NVMe status in the completion; only a capsule too short to
 * hold a command ID ends the connection.
 */
#include <stdlib.h>
#include <string.h>

#include "tgt.h"

int tgt_init(struct tgt *t)
{
	memset(t->ctrls, 0, sizeof(t->ctrls));
	t->genctr = 1;
	return pthread_mutex_init(&t->lock, NULL);
}

void tgt_fini(struct tgt *t)
{
	for (int i = 0; i < TGT_MAX_CTRL; i++)
		tgt_ctrl_free(t->ctrls[i]);
	for (uint32_t i = 0; i < t->cfg.nns; i++)
		tgt_ns_close(&t->cfg.ns[i]);
	tgt_ns_buffers_free();
	pthread_mutex_destroy(&t->lock);
}

void tgt_queue_init(struct tgt_queue *q, struct tgt *t, uint16_t qid, uint16_t size)
{
	memset(q, 0, sizeof(*q));
	q->tgt = t;
	q->qid = qid;
	q->size = size ? size : 1;
}

void tgt_req_status(struct tgt_req *req, uint16_t status)
{
	req->cqe.status = status;
	if (status)
		req->c2h_len = 0;
}

/* Fabrics commands use SGLs only, without fused operations. */
static uint16_t check_flags(const struct nvmf_cmd *c)
{
	if (c->flags & NVME_CMD_FUSE_MASK)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	if ((c->flags & NVME_CMD_PSDT_MASK) != NVME_CMD_PSDT_SGL_MPTR)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	return 0;
}

/* In-capsule data only carries host-to-controller data, and must lie in
 * what the capsule brought (within the advertised IOCCSZ). */
static uint16_t check_incapsule(struct tgt_req *req)
{
	const struct nvmf_sgl *s = &req->sgl;
	if (nvmf_cmd_dir(&req->cmd) != NVMF_DIR_H2C)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	if (s->addr > req->q->tgt->cfg.icd_max ||
	    s->length > req->q->tgt->cfg.icd_max - s->addr)
		return NVME_SC_SGL_INVALID_OFFSET | NVME_SC_DNR;
	if (s->addr + s->length > req->icd_len)
		return NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	req->data = req->icd + s->addr;
	return 0;
}

static uint16_t check_sgl(struct tgt_req *req)
{
	uint16_t st = nvmf_sgl_parse(&req->sgl, req->cmd.sgl_raw);
	if (st)
		return st;
	req->xfer_len = req->sgl.length;
	if (req->sgl.kind == NVMF_SGL_KIND_INCAPSULE)
		return check_incapsule(req);
	if (req->xfer_len > req->q->tgt->cfg.max_io)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR; /* beyond MDTS */
	if (nvmf_cmd_dir(&req->cmd) == NVMF_DIR_BIDI)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	return 0;
}

/* Before Connect a queue knows no controller: Connect is all it takes. */
static uint16_t prep(struct tgt_req *req)
{
	const struct nvmf_cmd *c = &req->cmd;
	bool is_connect = c->opc == NVME_FABRICS && c->fctype == NVMF_FCTYPE_CONNECT;
	if (!req->q->ctrl)
		return is_connect ? tgt_fabrics_prep(req) : NVME_SC_INVALID_OPCODE | NVME_SC_DNR;
	if (is_connect)
		return NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR;
	if (c->opc == NVME_FABRICS)
		return req->q->qid ? NVME_SC_INVALID_OPCODE | NVME_SC_DNR : tgt_fabrics_prep(req);
	return req->q->qid ? tgt_io_prep(req) : tgt_admin_prep(req);
}

/* Commands that reach shared controller state run under tgt.lock: all but
 * the I/O commands of a connected I/O queue (q->ctrl is only ever written
 * by the queue's own thread). */
static bool locked_path(const struct tgt_queue *q, const struct nvmf_cmd *c)
{
	return !q->ctrl || q->qid == 0 || c->opc == NVME_FABRICS;
}

static void lock(struct tgt *t, uint64_t now_ms)
{
	pthread_mutex_lock(&t->lock);
	if (now_ms > t->now_ms)
		t->now_ms = now_ms;
}

static uint16_t check(struct tgt_req *req)
{
	/* An unknown opcode is named as such even when its SGL is bad too:
	 * the command's fields are checked (prep) whatever the SGL says. */
	uint16_t st = check_flags(&req->cmd);
	if (!st) {
		uint16_t sgl_st = check_sgl(req);
		st = prep(req);
		if (sgl_st && (st & NVME_SC_MASK) != NVME_SC_INVALID_OPCODE)
			st = sgl_st;
	}
	return st;
}

int tgt_cmd_begin(struct tgt_queue *q, struct tgt_req *req, uint8_t *buf, uint32_t len)
{
	uint8_t *data = req->data;
	uint64_t now = req->now_ms;
	memset(req, 0, sizeof(*req));
	req->q = q;
	req->data = data;
	req->now_ms = now;
	if (nvmf_cmd_parse(&req->cmd, buf, len))
		return -1;
	q->sqhd = (uint16_t)((q->sqhd + 1) % q->size);
	req->cqe.cid = req->cmd.cid;
	req->cqe.sq_id = q->qid;
	req->cqe.sq_head = q->sqhd;
	req->icd = buf + NVMF_CMD_SIZE;
	req->icd_len = len - NVMF_CMD_SIZE;
	uint16_t st;
	if (locked_path(q, &req->cmd)) {
		lock(q->tgt, req->now_ms);
		st = check(req);
		pthread_mutex_unlock(&q->tgt->lock);
	} else {
		st = check(req);
	}
	if (st) {
		tgt_req_status(req, st);
		return TGT_RESPOND;
	}
	if (req->sgl.kind == NVMF_SGL_KIND_KEYED && nvmf_cmd_dir(&req->cmd) == NVMF_DIR_H2C &&
	    req->xfer_len)
		return TGT_FETCH;
	return TGT_EXEC;
}

static bool detached(const struct tgt_ctrl *c)
{
	return !c || __atomic_load_n(&c->detached, __ATOMIC_RELAXED);
}

static enum tgt_step exec(struct tgt_req *req)
{
	const struct nvmf_cmd *c = &req->cmd;
	enum tgt_step step = TGT_RESPOND;
	bool is_connect = c->opc == NVME_FABRICS && c->fctype == NVMF_FCTYPE_CONNECT;
	if (detached(req->q->ctrl) && !is_connect) {
		/* The controller went away while the data was on its way. */
		tgt_req_status(req, NVME_SC_ABORT_QUEUE);
		return TGT_RESPOND;
	}
	if (nvmf_cmd_dir(c) == NVMF_DIR_C2H)
		req->c2h_len = req->xfer_len;
	if (c->opc == NVME_FABRICS)
		tgt_fabrics_exec(req);
	else if (req->q->qid == 0)
		step = tgt_admin_exec(req);
	else
		tgt_io_exec(req);
	if (req->cqe.status)
		req->c2h_len = 0;
	return step;
}

enum tgt_step tgt_cmd_exec(struct tgt_req *req)
{
	struct tgt_queue *q = req->q;
	if (!locked_path(q, &req->cmd))
		return exec(req);
	lock(q->tgt, req->now_ms);
	enum tgt_step step = exec(req);
	pthread_mutex_unlock(&q->tgt->lock);
	return step;
}

void tgt_tick(struct tgt *t, uint64_t now_ms)
{
	lock(t, now_ms);
	for (int i = 0; i < TGT_MAX_CTRL; i++) {
		struct tgt_ctrl *c = t->ctrls[i];
		if (c && !c->dead && c->kato_ms && t->now_ms > c->ka_last_ms + c->kato_ms) {
			c->dead = c->dead_loud = true;
			if (t->ctrl_dead)
				t->ctrl_dead(t, c, "keep alive timeout expired");
		}
	}
	pthread_mutex_unlock(&t->lock);
}

void tgt_queue_fatal(struct tgt_queue *q)
{
	if (!q->ctrl)
		return;
	pthread_mutex_lock(&q->tgt->lock);
	tgt_csts_set(q->ctrl, tgt_csts(q->ctrl) | NVME_CSTS_CFS);
	pthread_mutex_unlock(&q->tgt->lock);
}

/* The admin queue ends the association: the controller leaves the table,
 * its I/O queues abort what comes next, and the transport closes them. */
static void ctrl_detach(struct tgt_ctrl *c)
{
	struct tgt *t = c->tgt;
	__atomic_store_n(&c->detached, true, __ATOMIC_RELAXED);
	c->naer = 0; /* the transport owns the held AERs' buffers */
	for (int i = 0; i < TGT_MAX_CTRL; i++)
		if (t->ctrls[i] == c)
			t->ctrls[i] = NULL;
	if (!c->dead && t->ctrl_dead) {
		c->dead = true;
		t->ctrl_dead(t, c, "admin queue disconnected");
	}
}

void tgt_queue_gone(struct tgt_queue *q)
{
	struct tgt_ctrl *c = q->ctrl;
	if (!c)
		return;
	pthread_mutex_lock(&q->tgt->lock);
	q->ctrl = NULL;
	c->queues[q->qid] = NULL;
	c->smart.host_reads += q->reads;
	c->smart.host_writes += q->writes;
	c->rd_bytes += q->rd_bytes;
	c->wr_bytes += q->wr_bytes;
	if (q->qid == 0)
		ctrl_detach(c);
	if (--c->refs == 0)
		tgt_ctrl_free(c);
	pthread_mutex_unlock(&q->tgt->lock);
}

void tgt_ctrl_free(struct tgt_ctrl *c)
{
	if (!c)
		return;
	struct tgt *t = c->tgt;
	for (int i = 0; i < TGT_MAX_CTRL; i++)
		if (t->ctrls[i] == c)
			t->ctrls[i] = NULL;
	free(c->queues);
	free(c);
}

struct tgt_ns *tgt_ns_find(struct tgt *t, uint32_t nsid)
{
	if (nsid == 0 || nsid > t->cfg.nns)
		return NULL;
	return &t->cfg.ns[nsid - 1];
}
