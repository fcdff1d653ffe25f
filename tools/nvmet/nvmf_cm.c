/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMA CM private data of the NVMe RDMA transport binding: the host's
 * request (record format, queue ID, queue sizes), the controller's accept
 * (its receive queue size) and reject (a status code). 32, 32 and 4
 * octets, little-endian.
 */
#include "nvmf.h"
#include "nvmf_le.h"

void nvmf_cm_req_put(uint8_t out[NVMF_CM_PD_SIZE], const struct nvmf_cm_req *r)
{
	memset(out, 0, NVMF_CM_PD_SIZE);
	nvmf_le_put(out, 2, r->recfmt);
	nvmf_le_put(out + 2, 2, r->qid);
	nvmf_le_put(out + 4, 2, r->hrqsize);
	nvmf_le_put(out + 6, 2, r->hsqsize);
}

/* Short private data cannot be a request of format 1.0; the reserved
 * octets after the fields are not checked (a later format may use them,
 * and the record format says which). */
int nvmf_cm_req_parse(struct nvmf_cm_req *r, const void *pd, size_t len)
{
	struct nvmf_cur c = nvmf_cur_make(pd, len);
	uint64_t v[4] = {0};
	if (len < NVMF_CM_PD_SIZE)
		return NVMF_CM_INVALID_LEN;
	for (int i = 0; i < 4; i++)
		nvmf_cur_le(&c, 2, &v[i]);
	if (v[0] != 0)
		return NVMF_CM_INVALID_RECFMT;
	r->recfmt = (uint16_t)v[0];
	r->qid = (uint16_t)v[1];
	r->hrqsize = (uint16_t)v[2];
	r->hsqsize = (uint16_t)v[3];
	return 0;
}

void nvmf_cm_rep_put(uint8_t out[NVMF_CM_PD_SIZE], const struct nvmf_cm_rep *r)
{
	memset(out, 0, NVMF_CM_PD_SIZE);
	nvmf_le_put(out, 2, r->recfmt);
	nvmf_le_put(out + 2, 2, r->crqsize);
}

int nvmf_cm_rep_parse(struct nvmf_cm_rep *r, const void *pd, size_t len)
{
	struct nvmf_cur c = nvmf_cur_make(pd, len);
	uint64_t fmt = 0, crq = 0;
	if (len < NVMF_CM_PD_SIZE || !nvmf_cur_le(&c, 2, &fmt) || !nvmf_cur_le(&c, 2, &crq))
		return NVMF_CM_INVALID_LEN;
	if (fmt != 0)
		return NVMF_CM_INVALID_RECFMT;
	r->recfmt = 0;
	r->crqsize = (uint16_t)crq;
	return 0;
}

void nvmf_cm_rej_put(uint8_t out[NVMF_CM_REJ_SIZE], uint16_t status)
{
	nvmf_le_put(out, 2, 0);
	nvmf_le_put(out + 2, 2, status);
}

uint16_t nvmf_cm_rej_parse(const void *pd, size_t len)
{
	struct nvmf_cur c = nvmf_cur_make(pd, len);
	uint64_t fmt = 0, sts = 0;
	if (!nvmf_cur_le(&c, 2, &fmt) || !nvmf_cur_le(&c, 2, &sts) || fmt != 0)
		return 0;
	return (uint16_t)sts;
}

const char *nvmf_cm_status_str(int status)
{
	static const char *const names[] = {
		[NVMF_CM_INVALID_LEN] = "invalid private data length",
		[NVMF_CM_INVALID_RECFMT] = "invalid record format",
		[NVMF_CM_INVALID_QID] = "invalid queue ID",
		[NVMF_CM_INVALID_HSQSIZE] = "invalid host SQ size",
		[NVMF_CM_INVALID_HRQSIZE] = "invalid host RQ size",
		[NVMF_CM_NO_RSC] = "no resources",
		[NVMF_CM_INVALID_IRD] = "invalid IRD",
		[NVMF_CM_INVALID_ORD] = "invalid ORD",
	};
	if (status <= 0 || status >= (int)(sizeof(names) / sizeof(names[0])))
		return "unknown";
	return names[status];
}
