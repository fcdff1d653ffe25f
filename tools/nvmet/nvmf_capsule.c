/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Command and response capsules: the 64-octet submission queue entry with
 * its SGL descriptor, the 16-octet completion, and the command-specific
 * fields (Connect, Property Get/Set, Read/Write, Dataset Management).
 */
#include <errno.h>

#include "nvmf.h"
#include "nvmf_le.h"

int nvmf_cmd_parse(struct nvmf_cmd *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (!buf || len < NVMF_CMD_SIZE)
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	c->opc = p[0];
	c->flags = p[1];
	c->cid = (uint16_t)nvmf_le_get(p + 2, 2);
	c->nsid = (uint32_t)nvmf_le_get(p + 4, 4);
	c->fctype = p[4];
	memcpy(c->sgl_raw, p + 24, 16);
	for (int i = 10; i < 16; i++)
		c->cdw[i] = (uint32_t)nvmf_le_get(p + 4 * i, 4);
	return 0;
}

void nvmf_cmd_put(uint8_t out[NVMF_CMD_SIZE], const struct nvmf_cmd *c)
{
	memset(out, 0, NVMF_CMD_SIZE);
	out[0] = c->opc;
	out[1] = c->flags;
	nvmf_le_put(out + 2, 2, c->cid);
	nvmf_le_put(out + 4, 4, c->nsid);
	if (c->opc == NVME_FABRICS)
		out[4] = c->fctype;
	memcpy(out + 24, c->sgl_raw, 16);
	for (int i = 10; i < 16; i++)
		nvmf_le_put(out + 4 * i, 4, c->cdw[i]);
}

/* Fabrics commands carry their direction in the command type. */
enum nvmf_dir nvmf_cmd_dir(const struct nvmf_cmd *c)
{
	uint8_t code = c->opc == NVME_FABRICS ? c->fctype : c->opc;
	return (enum nvmf_dir)(code & 3);
}

/* ------------------------------------------------------------ SGL */

/* A keyed data block (type 4: address, 24-bit length, 32-bit key) or a
 * data block whose address is an offset into the capsule (type 0, subtype
 * 1). Anything else is refused: segments (no SGL lists are advertised,
 * MSDBD 1), bit buckets, and unknown subtypes. */
uint16_t nvmf_sgl_parse(struct nvmf_sgl *s, const uint8_t d[16])
{
	uint8_t type = d[15] >> 4, sub = d[15] & 0xf;
	memset(s, 0, sizeof(*s));
	s->addr = nvmf_le_get(d, 8);
	if (type == NVMF_SGL_KEYED) {
		if (sub != NVMF_SGL_SUB_ADDRESS && sub != NVMF_SGL_SUB_INVALIDATE)
			return NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR;
		s->kind = NVMF_SGL_KIND_KEYED;
		s->length = (uint32_t)nvmf_le_get(d + 8, 3);
		s->key = (uint32_t)nvmf_le_get(d + 11, 4);
		s->invalidate = sub == NVMF_SGL_SUB_INVALIDATE;
		return 0;
	}
	if (type == NVMF_SGL_DATA && sub == NVMF_SGL_SUB_OFFSET) {
		s->kind = NVMF_SGL_KIND_INCAPSULE;
		s->length = (uint32_t)nvmf_le_get(d + 8, 4);
		return 0;
	}
	return NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR;
}

void nvmf_sgl_put(uint8_t d[16], const struct nvmf_sgl *s)
{
	memset(d, 0, 16);
	nvmf_le_put(d, 8, s->addr);
	if (s->kind == NVMF_SGL_KIND_KEYED) {
		nvmf_le_put(d + 8, 3, s->length);
		nvmf_le_put(d + 11, 4, s->key);
		d[15] = (uint8_t)(NVMF_SGL_KEYED << 4 |
				  (s->invalidate ? NVMF_SGL_SUB_INVALIDATE : NVMF_SGL_SUB_ADDRESS));
	} else {
		nvmf_le_put(d + 8, 4, s->length);
		d[15] = NVMF_SGL_DATA << 4 | NVMF_SGL_SUB_OFFSET;
	}
}

/* ------------------------------------------------------------ fabrics */

void nvmf_connect_get(struct nvmf_connect *k, const struct nvmf_cmd *c)
{
	k->recfmt = (uint16_t)c->cdw[10];
	k->qid = (uint16_t)(c->cdw[10] >> 16);
	k->sqsize = (uint16_t)c->cdw[11];
	k->cattr = (uint8_t)(c->cdw[11] >> 16);
	k->kato = c->cdw[12];
}

void nvmf_connect_set(struct nvmf_cmd *c, const struct nvmf_connect *k)
{
	c->opc = NVME_FABRICS;
	c->fctype = NVMF_FCTYPE_CONNECT;
	c->cdw[10] = k->recfmt | (uint32_t)k->qid << 16;
	c->cdw[11] = k->sqsize | (uint32_t)k->cattr << 16;
	c->cdw[12] = k->kato;
}

uint16_t nvmf_connect_data_parse(struct nvmf_connect_data *d, const void *buf, size_t len,
				 uint32_t *ipo_out)
{
	struct nvmf_cur c = nvmf_cur_make(buf, len);
	uint64_t cntlid = 0;
	*ipo_out = 0;
	if (len < NVMF_CONNECT_DATA_SIZE)
		return NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR;
	memcpy(d->hostid, c.p, 16);
	nvmf_cur_skip(&c, 16);
	nvmf_cur_le(&c, 2, &cntlid);
	d->cntlid = (uint16_t)cntlid;
	nvmf_cur_skip(&c, NVMF_CD_OFF_SUBNQN - 18);
	if (!nvmf_cur_str(&c, NVMF_NQN_SIZE, d->subnqn, false)) {
		*ipo_out = nvmf_connect_ipo(true, NVMF_CD_OFF_SUBNQN);
		return NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR;
	}
	if (!nvmf_cur_str(&c, NVMF_NQN_SIZE, d->hostnqn, false)) {
		*ipo_out = nvmf_connect_ipo(true, NVMF_CD_OFF_HOSTNQN);
		return NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR;
	}
	return 0;
}

void nvmf_connect_data_put(uint8_t out[NVMF_CONNECT_DATA_SIZE], const struct nvmf_connect_data *d)
{
	memset(out, 0, NVMF_CONNECT_DATA_SIZE);
	memcpy(out, d->hostid, 16);
	nvmf_le_put(out + NVMF_CD_OFF_CNTLID, 2, d->cntlid);
	nvmf_put_str(out + NVMF_CD_OFF_SUBNQN, NVMF_NQN_SIZE, d->subnqn, 0);
	nvmf_put_str(out + NVMF_CD_OFF_HOSTNQN, NVMF_NQN_SIZE, d->hostnqn, 0);
}

/* Property Get/Set: attrib in octet 40 (cdw10), offset in cdw11, value in
 * cdw12..13. */
void nvmf_prop_get(struct nvmf_prop *p, const struct nvmf_cmd *c)
{
	p->size8 = c->cdw[10] & 7;
	p->offset = c->cdw[11];
	p->value = c->cdw[12] | (uint64_t)c->cdw[13] << 32;
}

void nvmf_prop_set(struct nvmf_cmd *c, const struct nvmf_prop *p)
{
	c->opc = NVME_FABRICS;
	c->cdw[10] = p->size8;
	c->cdw[11] = p->offset;
	c->cdw[12] = (uint32_t)p->value;
	c->cdw[13] = (uint32_t)(p->value >> 32);
}

/* NVM command set, CQR (queues must be contiguous: there are none to
 * create on fabrics), timeout, MQES. */
uint64_t nvme_cap_make(uint16_t mqes0, uint8_t to_500ms)
{
	return mqes0 | 1ull << 16 | (uint64_t)to_500ms << 24 | 1ull << 37;
}

/* ------------------------------------------------------------ completion */

void nvmf_cqe_put(uint8_t out[NVMF_CQE_SIZE], const struct nvmf_cqe *e)
{
	nvmf_le_put(out, 8, e->result);
	nvmf_le_put(out + 8, 2, e->sq_head);
	nvmf_le_put(out + 10, 2, e->sq_id);
	nvmf_le_put(out + 12, 2, e->cid);
	nvmf_le_put(out + 14, 2, (uint16_t)(e->status << 1));
}

int nvmf_cqe_parse(struct nvmf_cqe *e, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (!buf || len < NVMF_CQE_SIZE)
		return -EBADMSG;
	e->result = nvmf_le_get(p, 8);
	e->sq_head = (uint16_t)nvmf_le_get(p + 8, 2);
	e->sq_id = (uint16_t)nvmf_le_get(p + 10, 2);
	e->cid = (uint16_t)nvmf_le_get(p + 12, 2);
	e->status = (uint16_t)(nvmf_le_get(p + 14, 2) >> 1);
	return 0;
}

/* ------------------------------------------------------------ I/O */

void nvmf_rw_get(struct nvmf_rw *rw, const struct nvmf_cmd *c)
{
	rw->slba = c->cdw[10] | (uint64_t)c->cdw[11] << 32;
	rw->nlb = (c->cdw[12] & 0xffff) + 1;
	rw->fua = (c->cdw[12] >> 30) & 1;
	rw->deac = (c->cdw[12] >> 25) & 1;
}

void nvmf_rw_set(struct nvmf_cmd *c, const struct nvmf_rw *rw)
{
	c->cdw[10] = (uint32_t)rw->slba;
	c->cdw[11] = (uint32_t)(rw->slba >> 32);
	c->cdw[12] = ((rw->nlb - 1) & 0xffff) | (uint32_t)rw->fua << 30 | (uint32_t)rw->deac << 25;
}

void nvmf_dsm_range_get(struct nvmf_dsm_range *r, const uint8_t *p)
{
	r->cattr = (uint32_t)nvmf_le_get(p, 4);
	r->nlb = (uint32_t)nvmf_le_get(p + 4, 4);
	r->slba = nvmf_le_get(p + 8, 8);
}

void nvmf_dsm_range_put(uint8_t *p, const struct nvmf_dsm_range *r)
{
	nvmf_le_put(p, 4, r->cattr);
	nvmf_le_put(p + 4, 4, r->nlb);
	nvmf_le_put(p + 8, 8, r->slba);
}

/* ------------------------------------------------------------ names */

const char *nvmf_status_str(uint16_t status)
{
	switch (status & NVME_SC_MASK) {
	case NVME_SC_SUCCESS: return "success";
	case NVME_SC_INVALID_OPCODE: return "invalid command opcode";
	case NVME_SC_INVALID_FIELD: return "invalid field in command";
	case NVME_SC_CMDID_CONFLICT: return "command ID conflict";
	case NVME_SC_DATA_XFER_ERROR: return "data transfer error";
	case NVME_SC_INTERNAL: return "internal error";
	case NVME_SC_ABORT_REQ: return "command abort requested";
	case NVME_SC_ABORT_QUEUE: return "command aborted due to SQ deletion";
	case NVME_SC_INVALID_NS: return "invalid namespace or format";
	case NVME_SC_CMD_SEQ_ERROR: return "command sequence error";
	case NVME_SC_SGL_INVALID_LAST: return "invalid SGL last segment descriptor";
	case NVME_SC_SGL_INVALID_COUNT: return "invalid number of SGL descriptors";
	case NVME_SC_SGL_INVALID_DATA: return "data SGL length invalid";
	case NVME_SC_SGL_INVALID_METADATA: return "metadata SGL length invalid";
	case NVME_SC_SGL_INVALID_TYPE: return "SGL descriptor type invalid";
	case NVME_SC_SGL_INVALID_OFFSET: return "SGL offset invalid";
	case NVME_SC_KA_TIMEOUT_INVALID: return "keep alive timeout invalid";
	case NVME_SC_LBA_RANGE: return "LBA out of range";
	case NVME_SC_CAP_EXCEEDED: return "capacity exceeded";
	case NVME_SC_NS_NOT_READY: return "namespace not ready";
	case NVME_SC_QID_INVALID: return "invalid queue identifier";
	case NVME_SC_ASYNC_LIMIT: return "asynchronous event request limit exceeded";
	case NVME_SC_INVALID_LOG_PAGE: return "invalid log page";
	case NVME_SC_FEATURE_NOT_SAVEABLE: return "feature identifier not saveable";
	case NVME_SC_CONNECT_FORMAT: return "incompatible format";
	case NVME_SC_CONNECT_CTRL_BUSY: return "controller busy";
	case NVME_SC_CONNECT_INVALID_PARAM: return "connect invalid parameters";
	case NVME_SC_CONNECT_RESTART_DISC: return "connect restart discovery";
	case NVME_SC_CONNECT_INVALID_HOST: return "connect invalid host";
	case NVME_SC_WRITE_FAULT: return "write fault";
	case NVME_SC_READ_ERROR: return "unrecovered read error";
	default: return "unknown status";
	}
}
