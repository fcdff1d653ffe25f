/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Admin commands a Linux host (and nvme-cli) sends to an I/O or discovery
 * controller: Identify, Get Log Page, Set/Get Features, Asynchronous Event
 * Request (held: this target raises no events), Keep Alive, Abort.
 */
#include <stdio.h>
#include <string.h>

#include "tgt.h"

#define NVME_NSID_ALL 0xffffffffu
#define DNR(sc) ((uint16_t)((sc) | NVME_SC_DNR))

static uint16_t want_len(const struct tgt_req *req, uint64_t len)
{
	return req->xfer_len == len ? 0 : DNR(NVME_SC_SGL_INVALID_DATA);
}

uint16_t tgt_admin_prep(struct tgt_req *req)
{
	const struct nvmf_cmd *c = &req->cmd;
	struct tgt_ctrl *ctrl = req->q->ctrl;
	if (c->opc != NVME_ADM_KEEP_ALIVE && !(ctrl->csts & NVME_CSTS_RDY))
		return DNR(NVME_SC_CMD_SEQ_ERROR);
	switch (c->opc) {
	case NVME_ADM_IDENTIFY:
		return want_len(req, NVMF_IDENTIFY_SIZE);
	case NVME_ADM_GET_LOG_PAGE: {
		struct nvmf_get_log g;
		nvmf_get_log_get(&g, c);
		return want_len(req, g.numd * 4);
	}
	case NVME_ADM_SET_FEATURES:
	case NVME_ADM_GET_FEATURES:
	case NVME_ADM_ASYNC_EVENT:
	case NVME_ADM_KEEP_ALIVE:
	case NVME_ADM_ABORT:
		return want_len(req, 0);
	default:
		return DNR(NVME_SC_INVALID_OPCODE);
	}
}

/* ------------------------------------------------------------ Identify */

static void id_ctrl(struct tgt_req *req)
{
	struct tgt_ctrl *c = req->q->ctrl;
	const struct tgt_cfg *cfg = &c->tgt->cfg;
	uint32_t mdts = 0;
	while ((4096u << mdts) < cfg->max_io)
		mdts++;
	struct nvmf_id_ctrl id = {
		.cntlid = c->cntlid, .cntrltype = c->disc ? NVME_CTRL_DISC : NVME_CTRL_IO,
		.sn = "libiwarp0001", .mn = "libiwarp userspace NVMe-oF target", .fr = "1.0",
		.subnqn = c->disc ? NVMF_DISC_NQN : cfg->subnqn, .mdts = (uint8_t)mdts,
		.maxcmd = c->disc ? NVMF_AQ_DEPTH : cfg->mqes, .nn = c->disc ? 0 : cfg->nns,
		.kas = 10, .ioccsz = (NVMF_CMD_SIZE + (c->disc ? 0 : cfg->icd_max)) / 16,
		.vwc = !c->disc, .dsm = !c->disc, .write_zeroes = !c->disc,
		.aerl = TGT_MAX_AER - 1,
	};
	nvmf_id_ctrl_put(req->data, &id);
}

static uint16_t id_ns(struct tgt_req *req)
{
	struct tgt_ns *ns = tgt_ns_find(req->q->tgt, req->cmd.nsid);
	if (!ns)
		return DNR(NVME_SC_INVALID_NS);
	struct nvmf_id_ns id = {.nsze = ns->blocks, .lbads = ns->lbads,
				/* 001b: deallocated blocks read as zeroes; bit 3:
				 * Write Zeroes may deallocate. */
				.dlfeat = tgt_ns_dealloc_zeroes(ns) ? 0x09 : 0};
	memcpy(id.nguid, ns->nguid, 16);
	nvmf_id_ns_put(req->data, &id);
	return 0;
}

/* Active namespace IDs above the one given, ascending, up to 1024. */
static uint16_t id_ns_list(struct tgt_req *req)
{
	uint32_t from = req->cmd.nsid;
	if (from >= 0xfffffffeu)
		return DNR(NVME_SC_INVALID_NS);
	memset(req->data, 0, NVMF_IDENTIFY_SIZE);
	uint32_t n = 0;
	for (uint32_t id = from + 1; id <= req->q->tgt->cfg.nns && n < 1024; id++, n++)
		for (int b = 0; b < 4; b++)
			req->data[4 * n + b] = (uint8_t)(id >> (8 * b));
	return 0;
}

static uint16_t identify(struct tgt_req *req)
{
	uint8_t cns = (uint8_t)req->cmd.cdw[10];
	if (req->q->ctrl->disc && cns != NVME_ID_CNS_CTRL)
		return DNR(NVME_SC_INVALID_FIELD);
	switch (cns) {
	case NVME_ID_CNS_CTRL:
		id_ctrl(req);
		return 0;
	case NVME_ID_CNS_NS:
		return id_ns(req);
	case NVME_ID_CNS_NS_LIST:
		return id_ns_list(req);
	case NVME_ID_CNS_NS_DESC: {
		struct tgt_ns *ns = tgt_ns_find(req->q->tgt, req->cmd.nsid);
		if (!ns)
			return DNR(NVME_SC_INVALID_NS);
		nvmf_id_ns_desc_put(req->data, ns->nguid);
		return 0;
	}
	default:
		return DNR(NVME_SC_INVALID_FIELD);
	}
}

/* ------------------------------------------------------------ logs */

/* Copy [off, off + len) of a page of size octets, zeroes past its end. */
static uint16_t log_copy(struct tgt_req *req, const uint8_t *page, size_t size, uint64_t off)
{
	if (off > size || off % 4)
		return DNR(NVME_SC_INVALID_FIELD);
	size_t n = size - off < req->xfer_len ? size - off : req->xfer_len;
	memmove(req->data, page + off, n);
	memset(req->data + n, 0, req->xfer_len - n);
	return 0;
}

/* The discovery log: this subsystem on this port (no referrals). Built
 * in req->data, as it is at most two entries long. */
static uint16_t disc_log(struct tgt_req *req, uint64_t off)
{
	struct tgt *t = req->q->tgt;
	static uint8_t page[NVMF_DISC_HDR + NVMF_DISC_ENTRY]; /* under tgt.lock */
	/* The address this host reached, when we listen on a wildcard. */
	const char *traddr = req->q->traddr[0] ? req->q->traddr : t->cfg.traddr;
	struct nvmf_disc_entry e = {.trtype = NVMF_TRTYPE_RDMA,
				    .adrfam = strchr(traddr, ':') ? NVMF_ADRFAM_IPV6 : NVMF_ADRFAM_IPV4,
				    .subtype = NVMF_SUBTYPE_NVME, .portid = 1,
				    .cntlid = TGT_CNTLID_DYNAMIC, .asqsz = NVMF_AQ_DEPTH};
	memcpy(e.trsvcid, t->cfg.trsvcid, sizeof(e.trsvcid));
	memcpy(e.subnqn, t->cfg.subnqn, sizeof(e.subnqn));
	snprintf(e.traddr, sizeof(e.traddr), "%s", traddr);
	nvmf_disc_hdr_put(page, 1, 1);
	nvmf_disc_entry_put(page + NVMF_DISC_HDR, &e);
	return log_copy(req, page, sizeof(page), off);
}

static uint64_t get(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* The queues that left were added up as they went; the live ones count
 * on their own threads (read atomically). Under tgt.lock, so the queue
 * table holds still. */
static void smart_page(const struct tgt_ctrl *c, uint8_t *page)
{
	struct nvmf_smart s = c->smart;
	uint64_t rd = c->rd_bytes, wr = c->wr_bytes;
	for (uint32_t i = 0; i <= c->tgt->cfg.max_qid; i++) {
		const struct tgt_queue *q = c->queues[i];
		if (!q)
			continue;
		s.host_reads += get(&q->reads);
		s.host_writes += get(&q->writes);
		rd += get(&q->rd_bytes);
		wr += get(&q->wr_bytes);
	}
	s.power_on_hours = c->tgt->now_ms / 3600000;
	/* Thousands of 512-octet units, rounded up. */
	s.data_units_read = (rd + 511999) / 512000;
	s.data_units_written = (wr + 511999) / 512000;
	nvmf_smart_put(page, &s);
}

static uint16_t get_log(struct tgt_req *req)
{
	struct nvmf_get_log g;
	struct tgt_ctrl *c = req->q->ctrl;
	static uint8_t page[NVMF_IDENTIFY_SIZE];
	nvmf_get_log_get(&g, &req->cmd);
	if (c->disc)
		return g.lid == NVME_LOG_DISC ? disc_log(req, g.offset) : DNR(NVME_SC_INVALID_LOG_PAGE);
	switch (g.lid) {
	case NVME_LOG_ERROR: /* no errors recorded: one zeroed entry */
		memset(page, 0, NVMF_ERRLOG_ENTRY);
		return log_copy(req, page, NVMF_ERRLOG_ENTRY, g.offset);
	case NVME_LOG_SMART:
		smart_page(c, page);
		return log_copy(req, page, NVMF_SMART_SIZE, g.offset);
	case NVME_LOG_FW_SLOT:
		memset(page, 0, 512);
		page[0] = 1;
		memcpy(page + 8, "1.0     ", 8);
		return log_copy(req, page, 512, g.offset);
	case NVME_LOG_CHANGED_NS: /* namespaces never change: an empty list */
		memset(page, 0, NVMF_IDENTIFY_SIZE);
		return log_copy(req, page, NVMF_IDENTIFY_SIZE, g.offset);
	default:
		return DNR(NVME_SC_INVALID_LOG_PAGE);
	}
}

/* ------------------------------------------------------------ features */

/* The I/O queues a controller may have: those the transport can serve
 * at the largest size (a host creates the queues it is granted, Linux's
 * nvme_set_queue_count among them, so none of them is refused later). */
uint16_t tgt_queues_max(const struct tgt_cfg *cfg)
{
	return cfg->nq_fit && cfg->nq_fit < cfg->max_qid ? cfg->nq_fit : cfg->max_qid;
}

/* NSQA and NCQA, zero-based: what was allocated. */
static uint32_t queues_result(uint32_t n)
{
	return (n - 1) | (n - 1) << 16;
}

static uint16_t set_features(struct tgt_req *req)
{
	struct tgt_ctrl *c = req->q->ctrl;
	uint32_t cdw11 = req->cmd.cdw[11];
	if (req->cmd.cdw[10] >> 31)
		return DNR(NVME_SC_FEATURE_NOT_SAVEABLE);
	switch (req->cmd.cdw[10] & 0xff) {
	case NVME_FEAT_NUM_QUEUES: {
		uint32_t nsq = (cdw11 & 0xffff) + 1, ncq = (cdw11 >> 16) + 1;
		if ((cdw11 & 0xffff) == 0xffff || cdw11 >> 16 == 0xffff)
			return DNR(NVME_SC_INVALID_FIELD);
		uint32_t n = nsq < ncq ? nsq : ncq, max = tgt_queues_max(&c->tgt->cfg);
		c->nq_granted = (uint16_t)(n < max ? n : max);
		req->cqe.result = queues_result(c->nq_granted);
		return 0;
	}
	case NVME_FEAT_KATO:
		c->kato_ms = cdw11;
		c->ka_last_ms = c->tgt->now_ms;
		return 0;
	case NVME_FEAT_ASYNC_EVENT:
		c->aec = cdw11;
		return 0;
	case NVME_FEAT_VOLATILE_WC:
		c->vwc = cdw11 & 1;
		return 0;
	default:
		return DNR(NVME_SC_INVALID_FIELD);
	}
}

static uint16_t get_features(struct tgt_req *req)
{
	struct tgt_ctrl *c = req->q->ctrl;
	switch (req->cmd.cdw[10] & 0xff) {
	case NVME_FEAT_NUM_QUEUES:
		req->cqe.result = queues_result(c->nq_granted ? c->nq_granted : tgt_queues_max(&c->tgt->cfg));
		return 0;
	case NVME_FEAT_KATO:
		req->cqe.result = c->kato_ms;
		return 0;
	case NVME_FEAT_ASYNC_EVENT:
		req->cqe.result = c->aec;
		return 0;
	case NVME_FEAT_VOLATILE_WC:
		req->cqe.result = c->vwc;
		return 0;
	default:
		return DNR(NVME_SC_INVALID_FIELD);
	}
}

enum tgt_step tgt_admin_exec(struct tgt_req *req)
{
	struct tgt_ctrl *c = req->q->ctrl;
	uint16_t st = 0;
	switch (req->cmd.opc) {
	case NVME_ADM_IDENTIFY:
		st = identify(req);
		break;
	case NVME_ADM_GET_LOG_PAGE:
		st = get_log(req);
		break;
	case NVME_ADM_SET_FEATURES:
		st = set_features(req);
		break;
	case NVME_ADM_GET_FEATURES:
		st = get_features(req);
		break;
	case NVME_ADM_KEEP_ALIVE:
		c->ka_last_ms = c->tgt->now_ms;
		break;
	case NVME_ADM_ABORT:
		req->cqe.result = 1; /* not aborted: commands here run to completion */
		break;
	case NVME_ADM_ASYNC_EVENT:
		if (c->naer == TGT_MAX_AER) {
			st = DNR(NVME_SC_ASYNC_LIMIT);
			break;
		}
		c->aer[c->naer++] = req;
		return TGT_HOLD;
	}
	tgt_req_status(req, st);
	return TGT_RESPOND;
}
