/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NVMe-oF wire parsers (tools/nvmet/nvmf_*.c) on hostile octets: the
 * capsule, its SGL descriptor and command fields, the Connect data, the
 * CM private data, a discovery log entry and a completion. Whatever the
 * input, each parse stays inside the buffer (ASan), and what it accepts
 * satisfies the invariants the target relies on.
 */
#include <string.h>

#include "fuzz.h"
#include "nvmet/nvmf.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
