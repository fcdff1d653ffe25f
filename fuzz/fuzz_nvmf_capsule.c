/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NVMe-oF wire parsers (tools/nvmet/nvmf_*.c) and iwarp-nvmet's controller
 * (tools/nvmet/tgt_*.c, sans I/O) on hostile octets: the capsule, its SGL
 * descriptor and command fields, the Connect data, the CM private data, a
 * discovery log entry and a completion; then the input as a capsule (with
 * its in-capsule data) on an unconnected queue, the admin queue or an I/O
 * queue of a live controller with a RAM namespace. Whatever the input,
 * nothing reads or writes outside its buffers (ASan), the completion
 * answers the command's ID, and no transfer exceeds what the SGL allows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "nvmet/nvmf.h"
#include "nvmet/tgt.h"

static void capsule(const uint8_t *data, size_t size)
{
	struct nvmf_cmd c;
	if (nvmf_cmd_parse(&c, data, size) != 0) {
		CHECK(size < NVMF_CMD_SIZE);
		return;
	}
	struct nvmf_sgl s;
	uint16_t st = nvmf_sgl_parse(&s, c.sgl_raw);
	if (st == 0 && s.kind == NVMF_SGL_KIND_KEYED)
		CHECK(s.length <= NVMF_MAX_KEYED_LEN);
	CHECK(nvmf_cmd_dir(&c) <= NVMF_DIR_BIDI);
	struct nvmf_rw rw;
	nvmf_rw_get(&rw, &c);
	CHECK(rw.nlb >= 1 && rw.nlb <= 65536);
	struct nvmf_get_log g;
	nvmf_get_log_get(&g, &c);
	CHECK(g.numd >= 1);
	/* What is parsed is built back to the same octets (the reserved
	 * words the parse does not keep are the only difference). */
	uint8_t out[NVMF_CMD_SIZE], in[NVMF_CMD_SIZE];
	nvmf_cmd_put(out, &c);
	memcpy(in, data, NVMF_CMD_SIZE);
	memset(in + 8, 0, 16);
	if (c.opc != NVME_FABRICS)
		CHECK(memcmp(out, in, NVMF_CMD_SIZE) == 0);
}

static void connect_data(const uint8_t *data, size_t size)
{
	struct nvmf_connect_data d;
	uint32_t ipo;
	if (nvmf_connect_data_parse(&d, data, size, &ipo) == 0) {
		CHECK(strlen(d.subnqn) < NVMF_NQN_SIZE);
		CHECK(strlen(d.hostnqn) < NVMF_NQN_SIZE);
	}
}

static struct tgt T;
static uint8_t *dbuf;

static void setup_once(void)
{
	if (dbuf)
		return;
	snprintf(T.cfg.subnqn, sizeof(T.cfg.subnqn), "nqn.2026-11.org.libiwarp:fuzz");
	T.cfg.icd_max = 8192;
	T.cfg.max_io = 131072;
	T.cfg.max_qid = 4;
	T.cfg.mqes = 64;
	tgt_init(&T);
	CHECK(tgt_ns_open(&T.cfg.ns[0], "ram:1M", 0, 512, false) == 0);
	T.cfg.nns = 1;
	dbuf = aligned_alloc(4096, T.cfg.max_io);
}

/* One capsule through the controller, data fetched as the fuzzer's. */
static enum tgt_step run(struct tgt_queue *q, uint8_t *cap, uint32_t len)
{
	struct tgt_req req = {.data = dbuf};
	int step = tgt_cmd_begin(q, &req, cap, len);
	if (step < 0) {
		CHECK(len < NVMF_CMD_SIZE);
		return TGT_RESPOND;
	}
	CHECK(req.cqe.cid == req.cmd.cid);
	if (step == TGT_FETCH) {
		CHECK(req.xfer_len <= T.cfg.max_io && req.data == dbuf);
		memset(dbuf, 0x5a, req.xfer_len);
	}
	if (step == TGT_FETCH || step == TGT_EXEC)
		step = tgt_cmd_exec(&req);
	CHECK(req.cqe.cid == req.cmd.cid);
	CHECK(req.c2h_len <= req.xfer_len && req.c2h_len <= T.cfg.max_io);
	CHECK(!req.cqe.status || req.c2h_len == 0);
	return (enum tgt_step)step;
}

/* A well-formed Connect (in-capsule data) and enable, for a live queue. */
static void connect(struct tgt_queue *q, uint16_t cntlid)
{
	static uint8_t cap[NVMF_CMD_SIZE + NVMF_CONNECT_DATA_SIZE];
	struct nvmf_cmd c = {.flags = NVME_CMD_PSDT_SGL_MPTR};
	struct nvmf_connect k = {.qid = q->qid, .sqsize = (uint16_t)(q->size - 1)};
	struct nvmf_connect_data d = {.cntlid = cntlid};
	struct nvmf_sgl s = {.kind = NVMF_SGL_KIND_INCAPSULE, .length = NVMF_CONNECT_DATA_SIZE};
	nvmf_connect_set(&c, &k);
	nvmf_sgl_put(c.sgl_raw, &s);
	snprintf(d.subnqn, sizeof(d.subnqn), "%s", T.cfg.subnqn);
	snprintf(d.hostnqn, sizeof(d.hostnqn), "nqn.2014-08.org.example:fuzz");
	nvmf_cmd_put(cap, &c);
	nvmf_connect_data_put(cap + NVMF_CMD_SIZE, &d);
	run(q, cap, sizeof(cap));
	if (q->qid == 0 && q->ctrl) {
		struct nvmf_cmd p = {.flags = NVME_CMD_PSDT_SGL_MPTR, .fctype = NVMF_FCTYPE_PROP_SET};
		struct nvmf_prop pr = {.offset = NVME_REG_CC, .value = 1 | 6u << 16 | 4u << 20};
		nvmf_prop_set(&p, &pr);
		p.sgl_raw[15] = NVMF_SGL_KEYED << 4;
		nvmf_cmd_put(cap, &p);
		run(q, cap, NVMF_CMD_SIZE);
	}
}

static void controller(const uint8_t *data, size_t size)
{
	static uint8_t cap[NVMF_CMD_SIZE + 8192];
	struct tgt_queue aq, ioq, raw;
	if (size < 1 || size - 1 > sizeof(cap))
		return;
	setup_once();
	tgt_queue_init(&aq, &T, 0, NVMF_AQ_DEPTH);
	tgt_queue_init(&ioq, &T, 1, 16);
	tgt_queue_init(&raw, &T, (uint16_t)(data[0] >> 6), 8);
	connect(&aq, 0xffff);
	CHECK(aq.ctrl != NULL);
	connect(&ioq, aq.ctrl->cntlid);
	CHECK(ioq.ctrl != NULL);
	struct tgt_queue *q = (data[0] & 3) == 0 ? &aq : (data[0] & 3) == 1 ? &ioq : &raw;
	memcpy(cap, data + 1, size - 1);
	run(q, cap, (uint32_t)(size - 1));
	tgt_queue_gone(&raw);
	tgt_queue_gone(&ioq);
	tgt_queue_gone(&aq);
	for (int i = 0; i < TGT_MAX_CTRL; i++)
		CHECK(T.ctrls[i] == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	controller(data, size);
	capsule(data, size);
	connect_data(data, size);
	struct nvmf_cm_req r;
	if (nvmf_cm_req_parse(&r, data, size) == 0)
		CHECK(size >= NVMF_CM_PD_SIZE && r.recfmt == 0);
	(void)nvmf_cm_rej_parse(data, size);
	struct nvmf_disc_entry e;
	if (nvmf_disc_entry_parse(&e, data, size) == 0)
		CHECK(strlen(e.traddr) <= NVMF_NQN_SIZE && strlen(e.trsvcid) <= 32);
	struct nvmf_cqe q;
	if (nvmf_cqe_parse(&q, data, size) == 0)
		CHECK(q.status <= 0x7fff);
	return 0;
}
