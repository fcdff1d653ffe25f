/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Identify data (controller, namespace, namespace ID descriptors) and log
 * pages (SMART / health, discovery log page 70h): what a host reads to
 * learn what it is talking to.
 */
#include "nvmf.h"
#include "nvmf_le.h"

void nvmf_id_ctrl_put(uint8_t out[NVMF_IDENTIFY_SIZE], const struct nvmf_id_ctrl *c)
{
	memset(out, 0, NVMF_IDENTIFY_SIZE);
	nvmf_put_str(out + 4, 20, c->sn, ' ');
	nvmf_put_str(out + 24, 40, c->mn, ' ');
	nvmf_put_str(out + 64, 8, c->fr, ' ');
	out[76] = 1 << 1;  /* CMIC: more than one controller may attach (one per host) */
	out[NVME_IDC_MDTS] = c->mdts;
	nvmf_le_put(out + NVME_IDC_CNTLID, 2, c->cntlid);
	nvmf_le_put(out + NVME_IDC_VER, 4, NVME_VS_1_3);
	out[NVME_IDC_CNTRLTYPE] = c->cntrltype;
	out[259] = c->aerl;
	out[261] = 1 << 2;  /* LPA: extended data (NUMDU, offsets) for Get Log Page */
	out[262] = 0;       /* ELPE: one error log entry (0's based) */
	nvmf_le_put(out + NVME_IDC_KAS, 2, c->kas);
	out[512] = 0x66;    /* SQES: 64-octet entries */
	out[513] = 0x44;    /* CQES: 16-octet entries */
	nvmf_le_put(out + NVME_IDC_MAXCMD, 2, c->maxcmd);
	nvmf_le_put(out + NVME_IDC_NN, 4, c->nn);
	nvmf_le_put(out + NVME_IDC_ONCS, 2, (c->dsm ? 1u << 2 : 0) | (c->write_zeroes ? 1u << 3 : 0));
	out[525] = c->vwc;  /* VWC: a volatile write cache that Flush empties */
	/* SGLS: SGLs supported, keyed data blocks, and the offset subtype
	 * (in-capsule data) when there is room for it. */
	uint32_t sgls = 1u | 1u << 2 | (c->ioccsz > NVMF_CMD_SIZE / 16 ? 1u << 20 : 0);
	nvmf_le_put(out + NVME_IDC_SGLS, 4, sgls);
	nvmf_put_str(out + NVME_IDC_SUBNQN, NVMF_NQN_SIZE, c->subnqn, 0);
	nvmf_le_put(out + NVME_IDC_IOCCSZ, 4, c->ioccsz);
	nvmf_le_put(out + NVME_IDC_IORCSZ, 4, NVMF_CQE_SIZE / 16);
	nvmf_le_put(out + 1800, 2, 0); /* ICDOFF: in-capsule data right after the command */
	out[1802] = 0;                 /* CTRATTR: static controller model not claimed */
	out[NVME_IDC_MSDBD] = 1;       /* one SGL data block descriptor per command */
}

void nvmf_id_ns_put(uint8_t out[NVMF_IDENTIFY_SIZE], const struct nvmf_id_ns *n)
{
	memset(out, 0, NVMF_IDENTIFY_SIZE);
	nvmf_le_put(out + NVME_IDN_NSZE, 8, n->nsze);
	nvmf_le_put(out + 8, 8, n->nsze);  /* NCAP */
	nvmf_le_put(out + 16, 8, n->nsze); /* NUSE */
	out[25] = 0;                        /* NLBAF: one format (0's based) */
	out[NVME_IDN_FLBAS] = 0;            /* format 0, no metadata */
	out[30] = 1;                        /* NMIC: may be attached to several controllers */
	out[33] = n->dlfeat;
	memcpy(out + 104, n->nguid, 16);
	out[NVME_IDN_LBAF0 + 2] = n->lbads; /* LBAF0: MS 0, LBADS, RP 0 */
}

/* Descriptor: NIDT, NIDL, two reserved octets, NID. */
static size_t desc_put(uint8_t *p, uint8_t type, const uint8_t *id, uint8_t len)
{
	p[0] = type;
	p[1] = len;
	memcpy(p + 4, id, len);
	return 4u + len;
}

void nvmf_id_ns_desc_put(uint8_t out[NVMF_IDENTIFY_SIZE], const uint8_t nguid[16])
{
	uint8_t uuid[16], csi = 0; /* CSI 0: NVM command set */
	size_t off = 0;
	memcpy(uuid, nguid, 16);
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 layout */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	memset(out, 0, NVMF_IDENTIFY_SIZE);
	off += desc_put(out + off, 2, nguid, 16);
	off += desc_put(out + off, 3, uuid, 16);
	desc_put(out + off, 4, &csi, 1);
}

/* ------------------------------------------------------------ log pages */

/* cdw10: LID, LSP, RAE, NUMDL; cdw11: NUMDU; cdw12/13: offset. */
void nvmf_get_log_get(struct nvmf_get_log *g, const struct nvmf_cmd *c)
{
	g->lid = (uint8_t)c->cdw[10];
	g->rae = (c->cdw[10] >> 15) & 1;
	g->numd = ((uint64_t)(c->cdw[10] >> 16) | (uint64_t)(c->cdw[11] & 0xffff) << 16) + 1;
	g->offset = c->cdw[12] | (uint64_t)c->cdw[13] << 32;
}

void nvmf_get_log_set(struct nvmf_cmd *c, const struct nvmf_get_log *g)
{
	uint32_t numd0 = (uint32_t)(g->numd - 1);
	c->opc = NVME_ADM_GET_LOG_PAGE;
	c->cdw[10] = g->lid | (uint32_t)g->rae << 15 | (numd0 & 0xffff) << 16;
	c->cdw[11] = numd0 >> 16;
	c->cdw[12] = (uint32_t)g->offset;
	c->cdw[13] = (uint32_t)(g->offset >> 32);
}

void nvmf_smart_put(uint8_t out[NVMF_SMART_SIZE], const struct nvmf_smart *s)
{
	memset(out, 0, NVMF_SMART_SIZE);
	nvmf_le_put(out + 1, 2, 273 + 35); /* composite temperature, kelvin: 35 C */
	out[3] = 100;                      /* available spare, percent */
	out[4] = 10;                       /* spare threshold */
	nvmf_le_put(out + 32, 8, s->data_units_read);
	nvmf_le_put(out + 48, 8, s->data_units_written);
	nvmf_le_put(out + 64, 8, s->host_reads);
	nvmf_le_put(out + 80, 8, s->host_writes);
	nvmf_le_put(out + 128, 8, s->power_on_hours);
}

void nvmf_disc_hdr_put(uint8_t out[NVMF_DISC_HDR], uint64_t genctr, uint64_t numrec)
{
	memset(out, 0, NVMF_DISC_HDR);
	nvmf_le_put(out, 8, genctr);
	nvmf_le_put(out + 8, 8, numrec);
	nvmf_le_put(out + 16, 2, 0); /* RECFMT */
}

/* Entry: TRTYPE, ADRFAM, SUBTYPE, TREQ, PORTID, CNTLID, ASQSZ, TRSVCID
 * (32), SUBNQN (256 at 256), TRADDR (256 at 512), TSAS (RDMA: QPTYPE,
 * PRTYPE, CMS at 768). */
void nvmf_disc_entry_put(uint8_t out[NVMF_DISC_ENTRY], const struct nvmf_disc_entry *e)
{
	memset(out, 0, NVMF_DISC_ENTRY);
	out[0] = e->trtype;
	out[1] = e->adrfam;
	out[2] = e->subtype;
	out[3] = 0; /* TREQ: no secure channel; SQ flow control stays on */
	nvmf_le_put(out + 4, 2, e->portid);
	nvmf_le_put(out + 6, 2, e->cntlid);
	nvmf_le_put(out + 8, 2, e->asqsz);
	nvmf_put_str(out + 32, 32, e->trsvcid, ' ');
	nvmf_put_str(out + 256, NVMF_NQN_SIZE, e->subnqn, 0);
	nvmf_put_str(out + 512, NVMF_NQN_SIZE, e->traddr, ' ');
	out[768] = NVMF_RDMA_QPTYPE_CONNECTED;
	out[769] = NVMF_RDMA_PRTYPE_IWARP;
	out[770] = NVMF_RDMA_CMS_RDMA_CM;
}

/* Space-padded fields end at their last non-space octet. */
static void rtrim(char *s)
{
	size_t n = strlen(s);
	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
}

int nvmf_disc_entry_parse(struct nvmf_disc_entry *e, const uint8_t *p, size_t len)
{
	struct nvmf_cur c = nvmf_cur_make(p, len);
	uint64_t v = 0;
	if (len < NVMF_DISC_ENTRY)
		return -1;
	e->trtype = p[0];
	e->adrfam = p[1];
	e->subtype = p[2];
	nvmf_cur_skip(&c, 4);
	nvmf_cur_le(&c, 2, &v);
	e->portid = (uint16_t)v;
	nvmf_cur_le(&c, 2, &v);
	e->cntlid = (uint16_t)v;
	nvmf_cur_le(&c, 2, &v);
	e->asqsz = (uint16_t)v;
	nvmf_cur_skip(&c, 32 - 10);
	nvmf_cur_str(&c, 32, e->trsvcid, true);
	nvmf_cur_skip(&c, 256 - 64);
	if (!nvmf_cur_str(&c, NVMF_NQN_SIZE, e->subnqn, false) ||
	    !nvmf_cur_str(&c, NVMF_NQN_SIZE, e->traddr, true))
		return -1;
	rtrim(e->trsvcid);
	rtrim(e->traddr);
	return 0;
}
