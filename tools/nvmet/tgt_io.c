/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * I/O commands: Read, Write, Flush, Write Zeroes, Dataset Management
 * (deallocate). Fields are checked before any data moves (prep): the
 * namespace, the LBA range, the transfer size against MDTS and against the
 * SGL's length.
 */
#include "tgt.h"

#define NVME_NSID_ALL 0xffffffffu
#define DNR(sc) ((uint16_t)((sc) | NVME_SC_DNR))

static uint16_t check_range(const struct tgt_ns *ns, uint64_t slba, uint64_t nlb)
{
	if (slba >= ns->blocks || nlb > ns->blocks - slba)
		return DNR(NVME_SC_LBA_RANGE);
	return 0;
}

static uint16_t prep_rw(struct tgt_req *req, struct tgt_ns *ns)
{
	struct nvmf_rw rw;
	nvmf_rw_get(&rw, &req->cmd);
	uint16_t st = check_range(ns, rw.slba, rw.nlb);
	if (st)
		return st;
	uint64_t len = (uint64_t)rw.nlb << ns->lbads;
	if (len > req->q->tgt->cfg.max_io)
		return DNR(NVME_SC_INVALID_FIELD);
	return req->xfer_len == len ? 0 : DNR(NVME_SC_SGL_INVALID_DATA);
}

uint16_t tgt_io_prep(struct tgt_req *req)
{
	const struct nvmf_cmd *c = &req->cmd;
	if (!(tgt_csts(req->q->ctrl) & NVME_CSTS_RDY))
		return DNR(NVME_SC_CMD_SEQ_ERROR);
	if (c->opc == NVME_IO_FLUSH && c->nsid == NVME_NSID_ALL)
		return req->xfer_len ? DNR(NVME_SC_SGL_INVALID_DATA) : 0;
	struct tgt_ns *ns = tgt_ns_find(req->q->tgt, c->nsid);
	if (!ns)
		return DNR(NVME_SC_INVALID_NS);
	switch (c->opc) {
	case NVME_IO_READ:
	case NVME_IO_WRITE:
		return prep_rw(req, ns);
	case NVME_IO_WRITE_ZEROES: {
		struct nvmf_rw rw;
		nvmf_rw_get(&rw, c);
		uint16_t st = check_range(ns, rw.slba, rw.nlb);
		return st ? st : req->xfer_len ? DNR(NVME_SC_SGL_INVALID_DATA) : 0;
	}
	case NVME_IO_FLUSH:
		return req->xfer_len ? DNR(NVME_SC_SGL_INVALID_DATA) : 0;
	case NVME_IO_DSM:
		return req->xfer_len == ((c->cdw[10] & 0xff) + 1) * NVMF_DSM_RANGE_SIZE
			       ? 0 : DNR(NVME_SC_SGL_INVALID_DATA);
	default:
		return DNR(NVME_SC_INVALID_OPCODE);
	}
}

/* Every range is checked before any is deallocated: the command does all
 * or nothing. */
static uint16_t dsm(struct tgt_req *req, struct tgt_ns *ns)
{
	uint32_t nr = (req->cmd.cdw[10] & 0xff) + 1;
	struct nvmf_dsm_range r;
	if (!(req->cmd.cdw[11] & NVME_DSM_AD))
		return 0; /* attributes only: hints we may ignore */
	for (uint32_t i = 0; i < nr; i++) {
		nvmf_dsm_range_get(&r, req->data + i * NVMF_DSM_RANGE_SIZE);
		uint16_t st = check_range(ns, r.slba, r.nlb);
		if (st && r.nlb)
			return st;
	}
	for (uint32_t i = 0; i < nr; i++) {
		nvmf_dsm_range_get(&r, req->data + i * NVMF_DSM_RANGE_SIZE);
		uint16_t st = r.nlb ? tgt_ns_zero(ns, r.slba, r.nlb, true) : 0;
		if (st)
			return st;
	}
	return 0;
}

static uint16_t flush_all(struct tgt *t)
{
	uint16_t st = 0;
	for (uint32_t i = 0; i < t->cfg.nns; i++)
		if (!st)
			st = tgt_ns_flush(&t->cfg.ns[i]);
	return st;
}

/* The queue's own counters: only its thread writes them; the admin
 * queue's thread sums them for SMART (atomic, without a lock). */
static void add(uint64_t *v, uint64_t n)
{
	__atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static void count(struct tgt_queue *q, bool write, uint32_t len)
{
	add(write ? &q->writes : &q->reads, 1);
	add(write ? &q->wr_bytes : &q->rd_bytes, len);
}

void tgt_io_in_place(struct tgt_req *req)
{
	const struct nvmf_cmd *c = &req->cmd;
	if (!req->q->qid || req->cqe.status || req->sgl.kind != NVMF_SGL_KIND_KEYED ||
	    (c->opc != NVME_IO_READ && c->opc != NVME_IO_WRITE))
		return;
	struct tgt_ns *ns = tgt_ns_find(req->q->tgt, c->nsid);
	if (!ns || !ns->ram)
		return;
	struct nvmf_rw rw;
	nvmf_rw_get(&rw, c);
	req->data = ns->ram + (rw.slba << ns->lbads); /* in range: tgt_io_prep */
	req->in_place = ns;
}

void tgt_io_exec(struct tgt_req *req)
{
	const struct nvmf_cmd *c = &req->cmd;
	struct tgt_ns *ns = tgt_ns_find(req->q->tgt, c->nsid);
	struct nvmf_rw rw;
	uint16_t st;
	nvmf_rw_get(&rw, c);
	switch (c->opc) {
	case NVME_IO_READ:
		st = req->in_place ? 0 : tgt_ns_read(ns, req->data, rw.slba, rw.nlb);
		count(req->q, false, req->xfer_len);
		break;
	case NVME_IO_WRITE:
		st = req->in_place ? 0 : tgt_ns_write(ns, req->data, rw.slba, rw.nlb, rw.fua);
		count(req->q, true, req->xfer_len);
		break;
	case NVME_IO_FLUSH:
		st = ns ? tgt_ns_flush(ns) : flush_all(req->q->tgt);
		break;
	case NVME_IO_WRITE_ZEROES:
		st = tgt_ns_zero(ns, rw.slba, rw.nlb, rw.deac);
		break;
	default:
		st = dsm(req, ns);
		break;
	}
	tgt_req_status(req, st);
}
