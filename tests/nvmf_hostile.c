/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A hostile NVMe-oF host against iwarp-nvmet (tests/nvmf.sh): every bad
 * thing a host can send, each answered with the right status (or, for the
 * binding's private data, the right reject code; for a capsule too short
 * to answer, a disconnect of that queue alone).
 *
 * usage: nvmf_hostile PORT SUBNQN ALLOWED_HOSTNQN [--ungranted N]
 * The target listens on 127.0.0.1:PORT with a 4 MiB RAM namespace of
 * 512-octet blocks, in-capsule data 16384 (the default), max I/O 131072, 8 queues, and
 * ALLOWED_HOSTNQN in its allow-list. Prints one line per check; exits 1
 * if any failed. With --ungranted N (a target whose loops serve N I/O
 * queues, fewer than its --queues), only this: a host that never sends
 * Set Features Number of Queues connects I/O queue N (served) and N + 1
 * (refused, Connect Invalid Parameters naming the queue ID).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmet/nh.h"

static int failures;

static void result(bool ok, const char *what, const char *detail)
{
	printf("%s: %s%s%s\n", ok ? "ok" : "FAIL", what, detail ? ": " : "", detail ? detail : "");
	if (!ok)
		failures++;
}

static void expect_status(const char *what, int rc, const struct nvmf_cqe *e, uint16_t want,
			  int64_t want_result)
{
	char d[160];
	if (rc < 0) {
		snprintf(d, sizeof(d), "no answer (%s)", strerror(-rc));
		result(false, what, d);
		return;
	}
	bool ok = e->status == want && (want_result < 0 || e->result == (uint64_t)want_result);
	snprintf(d, sizeof(d), "status 0x%x (%s), result 0x%llx; wanted 0x%x", e->status,
		 nvmf_status_str(e->status), (unsigned long long)e->result, want);
	result(ok, what, ok ? NULL : d);
}

/* Submit a command whose SGL the caller wrote (raw), and wait. */
static int raw_sync(struct nh_queue *q, struct nvmf_cmd *c, uint32_t len, struct nvmf_cqe *e)
{
	struct nh_req *r = nh_req_get(q);
	uint8_t b[NVMF_CMD_SIZE];
	if (!r)
		return -EBUSY;
	c->cid = r->cid;
	if (!c->flags)
		c->flags = NVME_CMD_PSDT_SGL_MPTR;
	nvmf_cmd_put(b, c);
	int rc = nh_submit_raw(r, b, len);
	uint64_t end = nh_now_ns() + 3000000000ull;
	while (!rc && r->busy && !q->dead && nh_now_ns() < end)
		nh_progress(q->h, q, 1);
	if (rc)
		return rc;
	if (r->busy)
		return q->dead ? -ECONNRESET : -ETIMEDOUT;
	*e = r->cqe;
	return 0;
}

static void keyed(struct nvmf_cmd *c, struct nh_req *r, uint32_t len, uint8_t type)
{
	struct nvmf_sgl s = {.kind = NVMF_SGL_KIND_KEYED, .addr = (uintptr_t)r->data,
			     .length = len, .key = r->mr->rkey};
	nvmf_sgl_put(c->sgl_raw, &s);
	if (type)
		c->sgl_raw[15] = type;
}

static struct nh h;

/* ------------------------------------------------------------ CM */

static void cm_rejects(void)
{
	static const struct { const char *what; uint8_t pd[32]; uint16_t len; uint16_t want; } cases[] = {
		{"CM: record format 1 rejected", {1, 0, 0, 0, 32, 0, 31, 0}, 32, NVMF_CM_INVALID_RECFMT},
		{"CM: 8 octets of private data rejected", {0, 0, 0, 0, 32, 0, 31, 0}, 8, NVMF_CM_INVALID_LEN},
		{"CM: queue 200 rejected", {0, 0, 200, 0, 32, 0, 31, 0}, 32, NVMF_CM_INVALID_QID},
		{"CM: admin queue of 64 entries rejected", {0, 0, 0, 0, 64, 0, 63, 0}, 32,
		 NVMF_CM_INVALID_HSQSIZE},
		{"CM: host receive queue of 0 rejected", {0, 0, 0, 0, 0, 0, 31, 0}, 32,
		 NVMF_CM_INVALID_HRQSIZE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nh_queue q;
		int rc = nh_queue_connect(&h, &q, 0, 32, cases[i].pd, cases[i].len);
		char d[96];
		snprintf(d, sizeof(d), "rc %d, reject status %u (%s)", rc, q.rej_status,
			 nvmf_cm_status_str(q.rej_status));
		bool ok = rc == -ECONNREFUSED && q.rej_status == cases[i].want;
		result(ok, cases[i].what, ok ? NULL : d);
		nh_queue_close(&q);
	}
}

/* ------------------------------------------------------------ Connect */

/* An admin queue whose Connect (as subnqn/hostnqn, naming cntlid) is
 * refused with want and the IPO want_result. */
static void connect_case(const char *what, const char *subnqn, const char *hostnqn,
			 uint16_t cntlid, uint16_t want, int64_t want_result)
{
	struct nh_queue q;
	struct nvmf_cqe e;
	snprintf(h.subnqn, sizeof(h.subnqn), "%s", subnqn);
	snprintf(h.hostnqn, sizeof(h.hostnqn), "%s", hostnqn);
	int rc = nh_queue_connect(&h, &q, 0, 32, NULL, 0);
	if (rc == 0)
		rc = nh_fabrics_connect(&q, cntlid, 0, &e);
	expect_status(what, rc < 0 ? rc : 0, &e, want, want_result);
	nh_queue_close(&q);
}

static void connect_checks(const char *subnqn, const char *allowed)
{
	connect_case("Connect to an unknown subsystem NQN", "nqn.2026-11.org.libiwarp:nobody",
		     allowed, 0xffff, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR, 0x10000 | 256);
	connect_case("Connect from a host NQN not allowed", subnqn,
		     "nqn.2014-08.org.example:stranger", 0xffff,
		     NVME_SC_CONNECT_INVALID_HOST | NVME_SC_DNR, 0x10000 | 512);
	connect_case("admin Connect naming a controller ID", subnqn, allowed, 7,
		     NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR, 0x10000 | 16);
	snprintf(h.subnqn, sizeof(h.subnqn), "%s", subnqn);
}

/* ------------------------------------------------------------ admin */

static void admin_checks(struct nh_queue *aq)
{
	struct nvmf_cqe e;
	struct nvmf_cmd c = {.opc = NVME_ADM_IDENTIFY, .cdw = {[10] = 0x55}};
	uint8_t buf[NVMF_IDENTIFY_SIZE];
	int rc = nh_sync(aq, &c, NULL, buf, sizeof(buf), NVMF_DIR_C2H, &e);
	expect_status("Identify CNS 0x55", rc, &e, NVME_SC_INVALID_FIELD | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_ADM_IDENTIFY, .nsid = 9, .cdw = {[10] = NVME_ID_CNS_NS}};
	rc = nh_sync(aq, &c, NULL, buf, sizeof(buf), NVMF_DIR_C2H, &e);
	expect_status("Identify namespace 9 (of 1)", rc, &e, NVME_SC_INVALID_NS | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_ADM_IDENTIFY, .cdw = {[10] = NVME_ID_CNS_CTRL}};
	rc = nh_sync(aq, &c, NULL, buf, 512, NVMF_DIR_C2H, &e);
	expect_status("Identify into 512 octets (SGL shorter than the data)", rc, &e,
		      NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR, -1);
	struct nvmf_get_log g = {.lid = 0xc0, .numd = 128};
	c = (struct nvmf_cmd){0};
	nvmf_get_log_set(&c, &g);
	rc = nh_sync(aq, &c, NULL, buf, 512, NVMF_DIR_C2H, &e);
	expect_status("Get Log Page C0h", rc, &e, NVME_SC_INVALID_LOG_PAGE | NVME_SC_DNR, -1);
	uint64_t v;
	rc = nh_prop_get(aq, 0x50, false, &v);
	result(rc == (NVME_SC_INVALID_FIELD | NVME_SC_DNR), "Property Get at 50h refused", NULL);
	rc = nh_prop_set(aq, NVME_REG_CSTS, 0);
	result(rc == (NVME_SC_INVALID_FIELD | NVME_SC_DNR), "Property Set of CSTS refused", NULL);
	rc = nh_fabrics_connect(aq, 0xffff, 0, &e);
	expect_status("second Connect on the admin queue", rc < 0 ? rc : 0, &e,
		      NVME_SC_CMD_SEQ_ERROR | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = 0x7e};
	rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("admin opcode 7Eh", rc, &e, NVME_SC_INVALID_OPCODE | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_ADM_SET_FEATURES, .cdw = {[10] = 0x80, [11] = 0}};
	rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("Set Features 80h", rc, &e, NVME_SC_INVALID_FIELD | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_ADM_SET_FEATURES, .cdw = {[10] = NVME_FEAT_NUM_QUEUES, [11] = 0x10001}};
	rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("Set Features Number of Queues (2): 2 allocated", rc, &e, 0, 1 | 1 << 16);
	c = (struct nvmf_cmd){.opc = NVME_ADM_GET_FEATURES, .cdw = {[10] = NVME_FEAT_NUM_QUEUES}};
	rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("Get Features Number of Queues: the 2 allocated", rc, &e, 0, 1 | 1 << 16);
	c = (struct nvmf_cmd){.opc = NVME_ADM_KEEP_ALIVE};
	rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("Keep Alive", rc, &e, 0, -1);
}

/* Four AERs are held without an answer; the fifth is over the limit. */
static void aer_checks(struct nh_queue *aq)
{
	struct nvmf_cmd c = {.opc = NVME_ADM_ASYNC_EVENT};
	for (int i = 0; i < 4; i++) {
		struct nh_req *r = nh_req_get(aq);
		struct nvmf_cmd cc = c;
		if (!r || nh_submit(r, &cc, 0, NVMF_DIR_NONE, false))
			result(false, "AER submitted", NULL);
	}
	struct nvmf_cqe e;
	int rc = nh_sync(aq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("fifth AER", rc, &e, NVME_SC_ASYNC_LIMIT | NVME_SC_DNR, -1);
	result(aq->inflight == 4, "four AERs held", NULL);
}

/* ------------------------------------------------------------ I/O */

static void rw_checks(struct nh_queue *q, uint64_t nsze)
{
	struct nvmf_cqe e;
	struct nh_req *r = nh_req_get(q);
	struct nvmf_cmd c = {.opc = NVME_IO_READ, .nsid = 1};
	struct nvmf_rw rw = {.slba = nsze - 1, .nlb = 2};
	nvmf_rw_set(&c, &rw);
	keyed(&c, r, 1024, 0);
	expect_status("Read past the last LBA", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_LBA_RANGE | NVME_SC_DNR, -1);
	rw = (struct nvmf_rw){.slba = 0, .nlb = 8};
	nvmf_rw_set(&c, &rw);
	keyed(&c, r, 1024, 0);
	expect_status("Read of 4096 octets into a 1024-octet SGL", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR, -1);
	keyed(&c, r, 4096, 0x20);
	expect_status("SGL segment descriptor", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR, -1);
	keyed(&c, r, 4096, 0x41);
	expect_status("keyed SGL with subtype 1", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR, -1);
	struct nvmf_sgl s = {.kind = NVMF_SGL_KIND_INCAPSULE, .length = 4096};
	nvmf_sgl_put(c.sgl_raw, &s);
	expect_status("Read with an in-capsule SGL", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_INVALID_FIELD | NVME_SC_DNR, -1);
	c.opc = NVME_IO_WRITE;
	s.addr = 17000;
	nvmf_sgl_put(c.sgl_raw, &s);
	expect_status("in-capsule offset beyond IOCCSZ", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_SGL_INVALID_OFFSET | NVME_SC_DNR, -1);
	s.addr = 0;
	nvmf_sgl_put(c.sgl_raw, &s);
	expect_status("in-capsule data longer than the capsule", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR, -1);
	rw = (struct nvmf_rw){.slba = 0, .nlb = 512};
	nvmf_rw_set(&c, &rw);
	keyed(&c, r, 262144, 0);
	expect_status("Write of 256 KiB (beyond MDTS)", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_INVALID_FIELD | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_IO_READ, .nsid = 5};
	keyed(&c, r, 512, 0);
	expect_status("Read of namespace 5", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_INVALID_NS | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_IO_READ, .nsid = 1, .flags = 0x41};
	keyed(&c, r, 512, 0);
	expect_status("fused Read", raw_sync(q, &c, 64, &e), &e, NVME_SC_INVALID_FIELD | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_IO_READ, .nsid = 1, .flags = 0x80};
	keyed(&c, r, 512, 0);
	expect_status("Read with PRPs (PSDT 10b)", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_INVALID_FIELD | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = 0x7e, .nsid = 1};
	expect_status("I/O opcode 7Eh", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_INVALID_OPCODE | NVME_SC_DNR, -1);
	c = (struct nvmf_cmd){.opc = NVME_FABRICS, .fctype = NVMF_FCTYPE_PROP_GET};
	expect_status("Property Get on an I/O queue", raw_sync(q, &c, 64, &e), &e,
		      NVME_SC_INVALID_OPCODE | NVME_SC_DNR, -1);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Write a pattern, then Write Zeroes / DSM deallocate: the range reads
 * back as zeroes, its neighbours keep the pattern. */
static void zero_checks(struct nh_queue *q)
{
	struct nvmf_cqe e;
	static uint8_t pat[16 * 512], back[16 * 512];
	memset(pat, 0xa5, sizeof(pat));
	struct nvmf_cmd c = {.opc = NVME_IO_WRITE, .nsid = 1};
	struct nvmf_rw rw = {.slba = 64, .nlb = 16};
	nvmf_rw_set(&c, &rw);
	int rc = nh_sync(q, &c, pat, NULL, sizeof(pat), NVMF_DIR_H2C, &e);
	expect_status("Write of 16 blocks", rc, &e, 0, -1);
	c = (struct nvmf_cmd){.opc = NVME_IO_WRITE_ZEROES, .nsid = 1};
	rw = (struct nvmf_rw){.slba = 66, .nlb = 2};
	nvmf_rw_set(&c, &rw);
	rc = nh_sync(q, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("Write Zeroes of blocks 66-67", rc, &e, 0, -1);
	uint8_t ranges[2 * NVMF_DSM_RANGE_SIZE];
	struct nvmf_dsm_range d0 = {.slba = 70, .nlb = 3}, d1 = {.slba = 4000000, .nlb = 1};
	nvmf_dsm_range_put(ranges, &d0);
	nvmf_dsm_range_put(ranges + 16, &d1);
	c = (struct nvmf_cmd){.opc = NVME_IO_DSM, .nsid = 1, .cdw = {[10] = 1, [11] = NVME_DSM_AD}};
	rc = nh_sync(q, &c, ranges, NULL, sizeof(ranges), NVMF_DIR_H2C, &e);
	expect_status("DSM deallocate with a range past the end (nothing done)", rc, &e,
		      NVME_SC_LBA_RANGE | NVME_SC_DNR, -1);
	c.cdw[10] = 0;
	rc = nh_sync(q, &c, ranges, NULL, NVMF_DSM_RANGE_SIZE, NVMF_DIR_H2C, &e);
	expect_status("DSM deallocate of blocks 70-72", rc, &e, 0, -1);
	c = (struct nvmf_cmd){.opc = NVME_IO_FLUSH, .nsid = 1};
	rc = nh_sync(q, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("Flush", rc, &e, 0, -1);
	c = (struct nvmf_cmd){.opc = NVME_IO_READ, .nsid = 1};
	rw = (struct nvmf_rw){.slba = 64, .nlb = 16};
	nvmf_rw_set(&c, &rw);
	rc = nh_sync(q, &c, NULL, back, sizeof(back), NVMF_DIR_C2H, &e);
	bool ok = rc == 0 && e.status == 0 && all_zero(back + 2 * 512, 1024) &&
		  all_zero(back + 6 * 512, 1536) && memcmp(back, pat, 1024) == 0 &&
		  memcmp(back + 4 * 512, pat, 1024) == 0 && memcmp(back + 9 * 512, pat, 7 * 512) == 0;
	result(ok, "zeroed and deallocated blocks read as zeroes, the others as written", NULL);
}

/* ------------------------------------------------------------ queues */

static void io_queue_checks(uint16_t cntlid)
{
	struct nh_queue q;
	struct nvmf_cqe e;
	if (nh_queue_connect(&h, &q, 3, 8, NULL, 0) == 0) {
		int rc = nh_fabrics_connect(&q, cntlid, 0, &e);
		expect_status("Connect of I/O queue 3 when 2 were granted", rc < 0 ? rc : 0, &e,
			      NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR, NVMF_CONNECT_OFF_QID);
	} else {
		result(false, "CM connect of queue 3", NULL);
	}
	nh_queue_close(&q);
	if (nh_queue_connect(&h, &q, 2, 8, NULL, 0) == 0) {
		int rc = nh_fabrics_connect(&q, (uint16_t)(cntlid + 1), 0, &e);
		expect_status("Connect of an I/O queue to a controller that does not exist",
			      rc < 0 ? rc : 0, &e, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
			      0x10000 | 16);
	}
	nh_queue_close(&q);
	if (nh_queue_connect(&h, &q, 2, 8, NULL, 0) == 0) {
		struct nvmf_cmd c = {.opc = NVME_IO_READ, .nsid = 1};
		int rc = nh_sync(&q, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
		expect_status("Read before Connect", rc, &e, NVME_SC_INVALID_OPCODE | NVME_SC_DNR, -1);
	}
	nh_queue_close(&q);
}

/* A capsule of 20 octets has no command to answer: that queue is
 * disconnected, the others live on. */
static void short_capsule(struct nh_queue *victim, struct nh_queue *admin)
{
	struct nh_req *r = nh_req_get(victim);
	uint8_t junk[20] = {0x02};
	nh_submit_raw(r, junk, sizeof(junk));
	uint64_t end = nh_now_ns() + 5000000000ull;
	while (!victim->dead && nh_now_ns() < end)
		nh_progress(&h, victim, 1);
	result(victim->dead, "a 20-octet capsule disconnects its queue", NULL);
	struct nvmf_cqe e;
	struct nvmf_cmd c = {.opc = NVME_ADM_KEEP_ALIVE};
	int rc = nh_sync(admin, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("the admin queue still answers", rc, &e, 0, -1);
}

static uint64_t nsze_of(struct nh_queue *aq)
{
	uint8_t id[NVMF_IDENTIFY_SIZE];
	struct nvmf_cqe e;
	struct nvmf_cmd c = {.opc = NVME_ADM_IDENTIFY, .nsid = 1, .cdw = {[10] = NVME_ID_CNS_NS}};
	if (nh_sync(aq, &c, NULL, id, sizeof(id), NVMF_DIR_C2H, &e) || e.status)
		return 0;
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | id[i];
	return n;
}

/* A controller whose host stops sending Keep Alive is torn down. */
static void kato_check(void)
{
	struct nh_queue q;
	struct nvmf_cqe e;
	uint8_t idc[NVMF_IDENTIFY_SIZE];
	int rc = nh_queue_connect(&h, &q, 0, 32, NULL, 0);
	if (rc || nh_ctrl_start(&h, &q, 300, idc)) {
		result(false, "controller with KATO 300 ms", rc ? strerror(-rc) : "Connect failed");
		nh_queue_close(&q);
		return;
	}
	(void)e;
	uint64_t t0 = nh_now_ns(), end = t0 + 6000000000ull;
	while (!q.dead && nh_now_ns() < end)
		nh_progress(&h, &q, 1);
	char d[64];
	snprintf(d, sizeof(d), "after %.2f s", (double)(nh_now_ns() - t0) / 1e9);
	result(q.dead && nh_now_ns() - t0 >= 250000000ull, "silent host's controller torn down (KATO 300 ms)", d);
	nh_queue_close(&q);
}

/* No Set Features Number of Queues: the queues the loops serve are the
 * limit still, not --queues. */
static void ungranted_checks(uint16_t fit)
{
	struct nh_queue aq, q;
	struct nvmf_cqe e;
	uint8_t idc[NVMF_IDENTIFY_SIZE];
	if (nh_queue_connect(&h, &aq, 0, 32, NULL, 0) || nh_ctrl_start(&h, &aq, 0, idc)) {
		result(false, "admin queue up", NULL);
		nh_queue_close(&aq);
		return;
	}
	int rc = nh_queue_connect(&h, &q, fit, 8, NULL, 0);
	if (!rc)
		rc = nh_fabrics_connect(&q, h.cntlid, 0, &e);
	expect_status("without Number of Queues: Connect of the last I/O queue the loops serve",
		      rc < 0 ? rc : 0, &e, 0, -1);
	struct nh_queue over;
	rc = nh_queue_connect(&h, &over, (uint16_t)(fit + 1), 8, NULL, 0);
	if (!rc)
		rc = nh_fabrics_connect(&over, h.cntlid, 0, &e);
	expect_status("without Number of Queues: Connect of one I/O queue more than the loops serve",
		      rc < 0 ? rc : 0, &e, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR,
		      NVMF_CONNECT_OFF_QID);
	nh_queue_close(&over);
	nh_queue_close(&q);
	nh_queue_close(&aq);
}

int main(int argc, char **argv)
{
	bool ungranted = argc == 6 && strcmp(argv[4], "--ungranted") == 0;
	if (argc != 4 && !ungranted) {
		fprintf(stderr, "usage: nvmf_hostile PORT SUBNQN ALLOWED_HOSTNQN [--ungranted N]\n");
		return 2;
	}
	struct nh_opts o = {.icd_max = 16384, .timeout_ms = 3000};
	struct sockaddr_in *sin = (struct sockaddr_in *)&o.dst;
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &sin->sin_addr);
	if (nh_open(&h, &o))
		return 2;
	memset(h.hostid, 0x11, 16);
	snprintf(h.subnqn, sizeof(h.subnqn), "%s", argv[2]);
	snprintf(h.hostnqn, sizeof(h.hostnqn), "%s", argv[3]);
	if (ungranted) {
		ungranted_checks((uint16_t)atoi(argv[5]));
		nh_close(&h);
		printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
		return failures ? 1 : 0;
	}
	cm_rejects();
	connect_checks(argv[2], argv[3]);
	struct nh_queue aq, ioq, ioq2;
	uint8_t idc[NVMF_IDENTIFY_SIZE];
	if (nh_queue_connect(&h, &aq, 0, 32, NULL, 0) || nh_ctrl_start(&h, &aq, 0, idc)) {
		result(false, "admin queue up", NULL);
		return 1;
	}
	admin_checks(&aq);
	uint64_t nsze = nsze_of(&aq);
	result(nsze == 8192, "namespace of 8192 blocks", NULL);
	struct nvmf_cqe e;
	if (nh_queue_connect(&h, &ioq, 1, 8, NULL, 0) || nh_fabrics_connect(&ioq, h.cntlid, 0, &e)) {
		result(false, "I/O queue 1 up", NULL);
		return 1;
	}
	rw_checks(&ioq, nsze);
	zero_checks(&ioq);
	io_queue_checks(h.cntlid);
	aer_checks(&aq);
	if (nh_queue_connect(&h, &ioq2, 2, 8, NULL, 0) || nh_fabrics_connect(&ioq2, h.cntlid, 0, &e))
		result(false, "I/O queue 2 up", NULL);
	short_capsule(&ioq2, &aq);
	struct nvmf_cmd c = {.opc = NVME_IO_FLUSH, .nsid = 1};
	int rc = nh_sync(&ioq, &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	expect_status("I/O queue 1 still answers", rc, &e, 0, -1);
	nh_queue_close(&ioq2);
	nh_queue_close(&ioq);
	nh_queue_close(&aq);
	kato_check();
	nh_close(&h);
	printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}
