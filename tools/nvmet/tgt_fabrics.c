/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabrics commands: Connect (admin queue: a new controller, dynamic
 * controller model; I/O queue: joins the controller named by CNTLID for
 * the same host) and Property Get/Set (CAP, VS, CC, CSTS; CC.EN and
 * CC.SHN drive CSTS.RDY and CSTS.SHST).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgt.h"

uint16_t tgt_fabrics_prep(struct tgt_req *req)
{
	switch (req->cmd.fctype) {
	case NVMF_FCTYPE_CONNECT:
		return req->xfer_len == NVMF_CONNECT_DATA_SIZE ? 0
							       : NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	case NVMF_FCTYPE_PROP_GET:
	case NVMF_FCTYPE_PROP_SET:
		return req->xfer_len == 0 ? 0 : NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	default:
		return NVME_SC_INVALID_OPCODE | NVME_SC_DNR;
	}
}

/* ------------------------------------------------------------ Connect */

static uint16_t bad_param(struct tgt_req *req, bool in_data, uint16_t off)
{
	req->cqe.result = nvmf_connect_ipo(in_data, off);
	return NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR;
}

static bool host_allowed(const struct tgt_cfg *cfg, const char *hostnqn)
{
	if (cfg->nhosts == 0)
		return true;
	for (int i = 0; i < cfg->nhosts; i++)
		if (strcmp(cfg->hosts[i], hostnqn) == 0)
			return true;
	return false;
}

static struct tgt_ctrl *ctrl_new(struct tgt *t, const struct nvmf_connect_data *d, bool disc)
{
	int slot = -1;
	for (int i = 0; i < TGT_MAX_CTRL && slot < 0; i++)
		if (!t->ctrls[i])
			slot = i;
	if (slot < 0)
		return NULL;
	struct tgt_ctrl *c = calloc(1, sizeof(*c));
	if (!c || !(c->queues = calloc((size_t)t->cfg.max_qid + 1, sizeof(*c->queues)))) {
		free(c);
		return NULL;
	}
	c->tgt = t;
	/* Controller IDs from 1, unique among live controllers: the slot,
	 * plus a generation so that a reconnecting host gets a fresh ID. */
	c->cntlid = (uint16_t)(1 + slot + TGT_MAX_CTRL * (t->genctr++ % 100));
	c->disc = disc;
	memcpy(c->hostid, d->hostid, 16);
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", d->hostnqn);
	c->ka_last_ms = t->now_ms;
	t->ctrls[slot] = c;
	return c;
}

static struct tgt_ctrl *ctrl_find(struct tgt *t, uint16_t cntlid)
{
	for (int i = 0; i < TGT_MAX_CTRL; i++)
		if (t->ctrls[i] && t->ctrls[i]->cntlid == cntlid)
			return t->ctrls[i];
	return NULL;
}

static uint16_t connect_admin(struct tgt_req *req, const struct nvmf_connect *k,
			      const struct nvmf_connect_data *d, bool disc)
{
	struct tgt *t = req->q->tgt;
	if (d->cntlid != TGT_CNTLID_DYNAMIC)
		return bad_param(req, true, NVMF_CD_OFF_CNTLID);
	struct tgt_ctrl *c = ctrl_new(t, d, disc);
	if (!c)
		return NVME_SC_CONNECT_CTRL_BUSY;
	c->kato_ms = k->kato;
	c->refs = 1;
	c->queues[0] = req->q;
	req->q->ctrl = c;
	req->cqe.result = c->cntlid;
	return 0;
}

static uint16_t connect_io(struct tgt_req *req, const struct nvmf_connect *k,
			   const struct nvmf_connect_data *d)
{
	struct tgt_ctrl *c = ctrl_find(req->q->tgt, d->cntlid);
	if (!c || c->dead || c->disc || strcmp(c->hostnqn, d->hostnqn) != 0 ||
	    memcmp(c->hostid, d->hostid, 16) != 0)
		return bad_param(req, true, NVMF_CD_OFF_CNTLID);
	/* A host that never asked Number of Queues may still have only
	 * what the loops serve (more would overfill a loop). */
	uint16_t limit = c->nq_granted ? c->nq_granted : tgt_queues_max(&req->q->tgt->cfg);
	if (k->qid > limit)
		return bad_param(req, false, NVMF_CONNECT_OFF_QID);
	if (!(c->csts & NVME_CSTS_RDY))
		return NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR;
	if (c->queues[k->qid])
		return NVME_SC_CONNECT_CTRL_BUSY | NVME_SC_DNR;
	c->queues[k->qid] = req->q;
	c->refs++;
	req->q->ctrl = c;
	req->cqe.result = c->cntlid;
	return 0;
}

static uint16_t connect(struct tgt_req *req)
{
	struct tgt *t = req->q->tgt;
	struct nvmf_connect k;
	struct nvmf_connect_data d;
	uint32_t ipo;
	nvmf_connect_get(&k, &req->cmd);
	if (k.recfmt != 0)
		return NVME_SC_CONNECT_FORMAT | NVME_SC_DNR;
	/* The queue is the one the CM private data named, with room for
	 * the entries asked (SQSIZE is 0's based and at least 1). */
	if (k.qid != req->q->qid)
		return bad_param(req, false, NVMF_CONNECT_OFF_QID);
	if (k.sqsize == 0 || k.sqsize >= req->q->size ||
	    (k.qid && k.sqsize > t->cfg.mqes - 1))
		return bad_param(req, false, NVMF_CONNECT_OFF_SQSIZE);
	uint16_t st = nvmf_connect_data_parse(&d, req->data, req->xfer_len, &ipo);
	if (st) {
		req->cqe.result = ipo;
		return st;
	}
	bool disc = strcmp(d.subnqn, NVMF_DISC_NQN) == 0;
	if (!disc && strcmp(d.subnqn, t->cfg.subnqn) != 0)
		return bad_param(req, true, NVMF_CD_OFF_SUBNQN);
	if (!host_allowed(&t->cfg, d.hostnqn)) {
		req->cqe.result = nvmf_connect_ipo(true, NVMF_CD_OFF_HOSTNQN);
		return NVME_SC_CONNECT_INVALID_HOST | NVME_SC_DNR;
	}
	if (k.qid == 0)
		return connect_admin(req, &k, &d, disc);
	if (disc)
		return bad_param(req, false, NVMF_CONNECT_OFF_QID);
	return connect_io(req, &k, &d);
}

/* ------------------------------------------------------------ properties */

static uint64_t cap(const struct tgt_ctrl *c)
{
	uint16_t mqes = c->disc ? NVMF_AQ_DEPTH : c->tgt->cfg.mqes;
	return nvme_cap_make((uint16_t)(mqes - 1), 15); /* ready within 7.5 s */
}

static uint16_t prop_get(struct tgt_req *req)
{
	struct tgt_ctrl *c = req->q->ctrl;
	struct nvmf_prop p;
	nvmf_prop_get(&p, &req->cmd);
	bool eight = p.size8 == 1;
	if (p.size8 > 1)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	switch (p.offset) {
	case NVME_REG_CAP:
		req->cqe.result = eight ? cap(c) : (uint32_t)cap(c);
		return 0;
	case NVME_REG_VS:
		req->cqe.result = NVME_VS_1_3;
		return eight ? NVME_SC_INVALID_FIELD | NVME_SC_DNR : 0;
	case NVME_REG_CC:
		req->cqe.result = c->cc;
		return eight ? NVME_SC_INVALID_FIELD | NVME_SC_DNR : 0;
	case NVME_REG_CSTS:
		req->cqe.result = c->csts;
		return eight ? NVME_SC_INVALID_FIELD | NVME_SC_DNR : 0;
	default:
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	}
}

/* A controller is enabled only with the queue entry sizes it has (64 and
 * 16 octets), 4 KiB pages, the NVM command set and round robin; anything
 * else is a controller fatal status, as the specification asks. */
static bool cc_valid(uint32_t cc)
{
	return nvme_cc_iosqes(cc) == 6 && nvme_cc_iocqes(cc) == 4 && nvme_cc_mps(cc) == 0 &&
	       nvme_cc_css(cc) == 0 && nvme_cc_ams(cc) == 0;
}

static void cc_write(struct tgt_ctrl *c, uint32_t cc)
{
	uint32_t old = c->cc, csts = c->csts;
	c->cc = cc;
	if ((cc & NVME_CC_EN) && !(old & NVME_CC_EN)) {
		csts = cc_valid(cc) ? NVME_CSTS_RDY : NVME_CSTS_CFS;
	} else if (!(cc & NVME_CC_EN) && (old & NVME_CC_EN)) {
		csts &= ~(NVME_CSTS_RDY | NVME_CSTS_SHST_MASK);
	}
	if ((cc & NVME_CC_SHN_MASK) && !(old & NVME_CC_SHN_MASK)) {
		/* Normal or abrupt shutdown: everything written is on the
		 * backing store before SHST says complete. */
		for (uint32_t i = 0; i < c->tgt->cfg.nns; i++)
			tgt_ns_flush(&c->tgt->cfg.ns[i]);
		csts &= ~NVME_CSTS_RDY;
		csts = (csts & ~NVME_CSTS_SHST_MASK) | NVME_SHST_CMPLT << NVME_CSTS_SHST_SHIFT;
	} else if (!(cc & NVME_CC_SHN_MASK)) {
		csts &= ~NVME_CSTS_SHST_MASK;
	}
	tgt_csts_set(c, csts); /* once: the I/O path reads it without the lock */
}

static uint16_t prop_set(struct tgt_req *req)
{
	struct nvmf_prop p;
	nvmf_prop_get(&p, &req->cmd);
	if (p.offset != NVME_REG_CC || p.size8 != 0)
		return NVME_SC_INVALID_FIELD | NVME_SC_DNR;
	cc_write(req->q->ctrl, (uint32_t)p.value);
	return 0;
}

void tgt_fabrics_exec(struct tgt_req *req)
{
	uint16_t st;
	switch (req->cmd.fctype) {
	case NVMF_FCTYPE_CONNECT:
		st = connect(req);
		break;
	case NVMF_FCTYPE_PROP_GET:
		st = prop_get(req);
		break;
	default:
		st = prop_set(req);
		break;
	}
	tgt_req_status(req, st);
}
