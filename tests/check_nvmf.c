/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NVMe over Fabrics wire formats (tools/nvmet/nvmf_*.c) and the RAM disk's
 * copy (ram_map.c): each wire structure
 * built from the field values and compared with octets written out by hand
 * from the specifications (and what Linux's nvme-rdma sends), then parsed
 * back; every malformed input a parser can meet gives the status that
 * names it. Its own Check runner: the tools' code is not part of the
 * library the unit suites of tests/check_iwarp link.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvmet/nvmf.h"
#include "nvmet/ram_map.h"

/* ------------------------------------------------------------ CM */

START_TEST(cm_req_linux_admin)
{
	/* Linux nvme-rdma, admin queue: recfmt 0, qid 0, hrqsize 32, hsqsize 31. */
	static const uint8_t want[8] = {0, 0, 0, 0, 32, 0, 31, 0};
	struct nvmf_cm_req r = {.qid = 0, .hrqsize = 32, .hsqsize = 31}, back;
	uint8_t pd[NVMF_CM_PD_SIZE];
	nvmf_cm_req_put(pd, &r);
	ck_assert_mem_eq(pd, want, 8);
	for (int i = 8; i < NVMF_CM_PD_SIZE; i++)
		ck_assert_uint_eq(pd[i], 0);
	ck_assert_int_eq(nvmf_cm_req_parse(&back, pd, sizeof(pd)), 0);
	ck_assert_uint_eq(back.hrqsize, 32);
	ck_assert_uint_eq(back.hsqsize, 31);
	pd[2] = 3; /* qid 0x0003, little-endian */
	pd[3] = 1; /* 0x0103 */
	ck_assert_int_eq(nvmf_cm_req_parse(&back, pd, sizeof(pd)), 0);
	ck_assert_uint_eq(back.qid, 0x103);
}
END_TEST

START_TEST(cm_req_bad)
{
	uint8_t pd[NVMF_CM_PD_SIZE] = {0};
	struct nvmf_cm_req r;
	ck_assert_int_eq(nvmf_cm_req_parse(&r, pd, 31), NVMF_CM_INVALID_LEN);
	ck_assert_int_eq(nvmf_cm_req_parse(&r, NULL, 0), NVMF_CM_INVALID_LEN);
	pd[1] = 1; /* recfmt 0x0100 */
	ck_assert_int_eq(nvmf_cm_req_parse(&r, pd, sizeof(pd)), NVMF_CM_INVALID_RECFMT);
	ck_assert_str_eq(nvmf_cm_status_str(NVMF_CM_INVALID_RECFMT), "invalid record format");
	ck_assert_str_eq(nvmf_cm_status_str(99), "unknown");
}
END_TEST

START_TEST(cm_rep_rej)
{
	uint8_t pd[NVMF_CM_PD_SIZE], rej[NVMF_CM_REJ_SIZE];
	struct nvmf_cm_rep r = {.crqsize = 128}, back;
	nvmf_cm_rep_put(pd, &r);
	ck_assert_uint_eq(pd[2], 128);
	ck_assert_uint_eq(pd[3], 0);
	ck_assert_int_eq(nvmf_cm_rep_parse(&back, pd, sizeof(pd)), 0);
	ck_assert_uint_eq(back.crqsize, 128);
	ck_assert_int_eq(nvmf_cm_rep_parse(&back, pd, 4), NVMF_CM_INVALID_LEN);
	nvmf_cm_rej_put(rej, NVMF_CM_NO_RSC);
	static const uint8_t want[4] = {0, 0, 6, 0};
	ck_assert_mem_eq(rej, want, 4);
	ck_assert_uint_eq(nvmf_cm_rej_parse(rej, 4), NVMF_CM_NO_RSC);
	ck_assert_uint_eq(nvmf_cm_rej_parse(rej, 3), 0);
}
END_TEST

/* ------------------------------------------------------------ capsules */

START_TEST(cmd_read_keyed_invalidate)
{
	/* Read, SGL flag, CID 0x1234, NSID 1; keyed SGL with invalidate:
	 * address 0x1122334455667788, length 0x010000, key 0xaabbccdd;
	 * SLBA 0x100000002, NLB 7 (8 blocks). */
	uint8_t b[64] = {0};
	b[0] = 0x02;
	b[1] = 0x40;
	b[2] = 0x34, b[3] = 0x12;
	b[4] = 1;
	static const uint8_t sgl[16] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
					0x00, 0x00, 0x01, 0xdd, 0xcc, 0xbb, 0xaa, 0x4f};
	memcpy(b + 24, sgl, 16);
	b[40] = 2, b[44] = 1;
	b[48] = 7;
	struct nvmf_cmd c;
	ck_assert_int_eq(nvmf_cmd_parse(&c, b, 63), -EBADMSG);
	ck_assert_int_eq(nvmf_cmd_parse(&c, b, 64), 0);
	ck_assert_uint_eq(c.opc, NVME_IO_READ);
	ck_assert_uint_eq(c.cid, 0x1234);
	ck_assert_uint_eq(c.nsid, 1);
	ck_assert_int_eq(nvmf_cmd_dir(&c), NVMF_DIR_C2H);
	struct nvmf_rw rw;
	nvmf_rw_get(&rw, &c);
	ck_assert_uint_eq(rw.slba, 0x100000002ull);
	ck_assert_uint_eq(rw.nlb, 8);
	struct nvmf_sgl s;
	ck_assert_uint_eq(nvmf_sgl_parse(&s, c.sgl_raw), 0);
	ck_assert_int_eq(s.kind, NVMF_SGL_KIND_KEYED);
	ck_assert_uint_eq(s.addr, 0x1122334455667788ull);
	ck_assert_uint_eq(s.length, 0x10000);
	ck_assert_uint_eq(s.key, 0xaabbccdd);
	ck_assert(s.invalidate);
	/* Built back, octet for octet. */
	uint8_t out[64];
	nvmf_cmd_put(out, &c);
	ck_assert_mem_eq(out, b, 64);
	uint8_t d[16];
	nvmf_sgl_put(d, &s);
	ck_assert_mem_eq(d, sgl, 16);
}
END_TEST

START_TEST(sgl_kinds)
{
	uint8_t d[16] = {0};
	struct nvmf_sgl s;
	d[8] = 0x00, d[9] = 0x10; /* 4096 */
	d[15] = 0x01;             /* data block, offset: in-capsule */
	ck_assert_uint_eq(nvmf_sgl_parse(&s, d), 0);
	ck_assert_int_eq(s.kind, NVMF_SGL_KIND_INCAPSULE);
	ck_assert_uint_eq(s.length, 4096);
	d[15] = 0x40; /* keyed, address: no invalidate */
	ck_assert_uint_eq(nvmf_sgl_parse(&s, d), 0);
	ck_assert(!s.invalidate);
	static const uint8_t bad[] = {0x00, 0x02, 0x03, 0x41, 0x4a, 0x10, 0x50, 0xf0};
	for (size_t i = 0; i < sizeof(bad); i++) {
		d[15] = bad[i];
		ck_assert_uint_eq(nvmf_sgl_parse(&s, d), NVME_SC_SGL_INVALID_TYPE | NVME_SC_DNR);
	}
}
END_TEST

START_TEST(cqe_status_on_wire)
{
	/* Connect Invalid Parameter with DNR: SCT 1, SC 0x82, DNR, phase 0:
	 * status field 0x8304; result: IATTR 1, IPO 256 (the subsystem NQN). */
	struct nvmf_cqe e = {.result = nvmf_connect_ipo(true, NVMF_CD_OFF_SUBNQN), .sq_head = 5,
			     .sq_id = 2, .cid = 0xbeef,
			     .status = NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR}, back;
	static const uint8_t want[16] = {0x00, 0x01, 0x01, 0, 0, 0, 0, 0,
					 5, 0, 2, 0, 0xef, 0xbe, 0x04, 0x83};
	uint8_t b[16];
	nvmf_cqe_put(b, &e);
	ck_assert_mem_eq(b, want, 16);
	ck_assert_int_eq(nvmf_cqe_parse(&back, b, 15), -EBADMSG);
	ck_assert_int_eq(nvmf_cqe_parse(&back, b, 16), 0);
	ck_assert_uint_eq(back.status, NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR);
	ck_assert_uint_eq(back.cid, 0xbeef);
	ck_assert_str_eq(nvmf_status_str(back.status), "connect invalid parameters");
}
END_TEST

START_TEST(connect_cmd_and_data)
{
	struct nvmf_connect k = {.qid = 3, .sqsize = 127, .kato = 15000}, kb;
	struct nvmf_cmd c = {0};
	uint8_t b[64];
	nvmf_connect_set(&c, &k);
	nvmf_cmd_put(b, &c);
	ck_assert_uint_eq(b[0], 0x7f);
	ck_assert_uint_eq(b[4], NVMF_FCTYPE_CONNECT);
	ck_assert_uint_eq(b[NVMF_CONNECT_OFF_QID], 3);
	ck_assert_uint_eq(b[NVMF_CONNECT_OFF_SQSIZE], 127);
	ck_assert_uint_eq(b[NVMF_CONNECT_OFF_KATO], 15000 & 0xff);
	ck_assert_uint_eq(b[NVMF_CONNECT_OFF_KATO + 1], 15000 >> 8);
	struct nvmf_cmd c2;
	nvmf_cmd_parse(&c2, b, 64);
	ck_assert_int_eq(nvmf_cmd_dir(&c2), NVMF_DIR_H2C);
	nvmf_connect_get(&kb, &c2);
	ck_assert_uint_eq(kb.qid, 3);
	ck_assert_uint_eq(kb.sqsize, 127);
	ck_assert_uint_eq(kb.kato, 15000);

	struct nvmf_connect_data d = {.cntlid = 0xffff}, db;
	strcpy(d.subnqn, "nqn.2026-11.org.libiwarp:sub");
	strcpy(d.hostnqn, "nqn.2014-08.org.nvmexpress:uuid:1");
	d.hostid[0] = 0xab;
	uint8_t cd[NVMF_CONNECT_DATA_SIZE];
	nvmf_connect_data_put(cd, &d);
	ck_assert_uint_eq(cd[16], 0xff);
	ck_assert_mem_eq(cd + 256, "nqn.2026-11.org.libiwarp:sub", 29);
	ck_assert_mem_eq(cd + 512, "nqn.2014-08", 11);
	uint32_t ipo;
	ck_assert_uint_eq(nvmf_connect_data_parse(&db, cd, sizeof(cd), &ipo), 0);
	ck_assert_str_eq(db.subnqn, d.subnqn);
	ck_assert_str_eq(db.hostnqn, d.hostnqn);
	ck_assert_uint_eq(db.cntlid, 0xffff);
	ck_assert_uint_eq(db.hostid[0], 0xab);
	/* Short data, then NQNs that never end. */
	ck_assert_uint_eq(nvmf_connect_data_parse(&db, cd, 1023, &ipo),
			  NVME_SC_SGL_INVALID_DATA | NVME_SC_DNR);
	memset(cd + 512, 'x', 256);
	ck_assert_uint_eq(nvmf_connect_data_parse(&db, cd, sizeof(cd), &ipo),
			  NVME_SC_CONNECT_INVALID_PARAM | NVME_SC_DNR);
	ck_assert_uint_eq(ipo, 0x10000 | 512);
	memset(cd + 256, 'x', 256);
	nvmf_connect_data_parse(&db, cd, sizeof(cd), &ipo);
	ck_assert_uint_eq(ipo, 0x10000 | 256);
}
END_TEST

START_TEST(property_cmds)
{
	struct nvmf_prop p = {.size8 = 0, .offset = NVME_REG_CC, .value = 0x460001}, pb;
	struct nvmf_cmd c = {.fctype = NVMF_FCTYPE_PROP_SET}, c2;
	uint8_t b[64];
	nvmf_prop_set(&c, &p);
	nvmf_cmd_put(b, &c);
	ck_assert_uint_eq(b[40], 0);
	ck_assert_uint_eq(b[44], 0x14);
	ck_assert_uint_eq(b[48], 0x01);
	ck_assert_uint_eq(b[50], 0x46);
	nvmf_cmd_parse(&c2, b, 64);
	nvmf_prop_get(&pb, &c2);
	ck_assert_uint_eq(pb.offset, NVME_REG_CC);
	ck_assert_uint_eq(pb.value, 0x460001);
	ck_assert_uint_eq(nvme_cc_iosqes(0x460001), 6);
	ck_assert_uint_eq(nvme_cc_iocqes(0x460001), 4);
	uint64_t cap = nvme_cap_make(127, 15);
	ck_assert_uint_eq(cap & 0xffff, 127);
	ck_assert_uint_eq((cap >> 24) & 0xff, 15);
	ck_assert_uint_eq((cap >> 37) & 1, 1);
}
END_TEST

START_TEST(dsm_range)
{
	struct nvmf_dsm_range r = {.cattr = 0, .nlb = 0x80, .slba = 0x1000}, rb;
	uint8_t b[16];
	static const uint8_t want[16] = {0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0};
	nvmf_dsm_range_put(b, &r);
	ck_assert_mem_eq(b, want, 16);
	nvmf_dsm_range_get(&rb, b);
	ck_assert_uint_eq(rb.nlb, 0x80);
	ck_assert_uint_eq(rb.slba, 0x1000);
}
END_TEST

/* ------------------------------------------------------------ identify, logs */

START_TEST(id_ctrl_fields)
{
	uint8_t b[NVMF_IDENTIFY_SIZE];
	struct nvmf_id_ctrl c = {.cntlid = 7, .cntrltype = NVME_CTRL_IO, .sn = "SN1", .mn = "m",
				 .fr = "1.0", .subnqn = "nqn.x", .mdts = 5, .maxcmd = 128,
				 .nn = 2, .kas = 10, .ioccsz = (64 + 8192) / 16, .vwc = true,
				 .dsm = true, .write_zeroes = true, .aerl = 3};
	nvmf_id_ctrl_put(b, &c);
	ck_assert_mem_eq(b + 4, "SN1                 ", 20);
	ck_assert_uint_eq(b[78], 7);
	ck_assert_uint_eq(b[77], 5);
	ck_assert_uint_eq(b[80 + 1], 3); /* VS 1.3: 00 03 01 00 */
	ck_assert_uint_eq(b[80 + 2], 1);
	ck_assert_uint_eq(b[111], 1);
	ck_assert_uint_eq(b[320], 10);
	ck_assert_uint_eq(b[512], 0x66);
	ck_assert_uint_eq(b[516], 2);
	ck_assert_uint_eq(b[520], 0x0c);
	ck_assert_uint_eq(b[536], 0x05);
	ck_assert_uint_eq(b[538], 0x10); /* SGLS bit 20: offsets (in-capsule data) */
	ck_assert_str_eq((const char *)b + 768, "nqn.x");
	ck_assert_uint_eq(b[1792] | b[1793] << 8, 516);
	ck_assert_uint_eq(b[1796], 1);
	ck_assert_uint_eq(b[1803], 1);
	c.ioccsz = 4; /* no in-capsule data: no offset SGLs */
	nvmf_id_ctrl_put(b, &c);
	ck_assert_uint_eq(b[538], 0);
}
END_TEST

START_TEST(id_ns_and_desc)
{
	uint8_t b[NVMF_IDENTIFY_SIZE], g[16];
	for (int i = 0; i < 16; i++)
		g[i] = (uint8_t)(0x10 + i);
	struct nvmf_id_ns n = {.nsze = 0x200000, .lbads = 12, .dlfeat = 9};
	memcpy(n.nguid, g, 16);
	nvmf_id_ns_put(b, &n);
	ck_assert_uint_eq(b[2], 0x20);
	ck_assert_uint_eq(b[10], 0x20);
	ck_assert_uint_eq(b[130], 12);
	ck_assert_uint_eq(b[33], 9);
	ck_assert_mem_eq(b + 104, g, 16);
	nvmf_id_ns_desc_put(b, g);
	ck_assert_uint_eq(b[0], 2);
	ck_assert_uint_eq(b[1], 16);
	ck_assert_mem_eq(b + 4, g, 16);
	ck_assert_uint_eq(b[20], 3);
	ck_assert_uint_eq(b[24 + 6] >> 4, 4);
	ck_assert_uint_eq(b[40], 4);
	ck_assert_uint_eq(b[41], 1);
	ck_assert_uint_eq(b[44], 0);
	ck_assert_uint_eq(b[45], 0); /* end of list */
}
END_TEST

START_TEST(get_log_fields)
{
	struct nvmf_get_log g = {.lid = NVME_LOG_DISC, .numd = 0x12345, .offset = 1024}, gb;
	struct nvmf_cmd c = {0};
	nvmf_get_log_set(&c, &g);
	ck_assert_uint_eq(c.cdw[10], 0x23440070u);
	ck_assert_uint_eq(c.cdw[11], 1);
	nvmf_get_log_get(&gb, &c);
	ck_assert_uint_eq(gb.lid, 0x70);
	ck_assert_uint_eq(gb.numd, 0x12345);
	ck_assert_uint_eq(gb.offset, 1024);
	c.cdw[10] = 0xffff0002; /* the largest NUMD: 2^32 dwords, no wrap to 0 */
	c.cdw[11] = 0xffff;
	nvmf_get_log_get(&gb, &c);
	ck_assert_uint_eq(gb.numd, 1ull << 32);
	uint8_t s[NVMF_SMART_SIZE];
	struct nvmf_smart sm = {.host_reads = 300, .data_units_written = 2};
	nvmf_smart_put(s, &sm);
	ck_assert_uint_eq(s[64] | s[65] << 8, 300);
	ck_assert_uint_eq(s[48], 2);
	ck_assert_uint_eq(s[3], 100);
}
END_TEST

START_TEST(disc_entry)
{
	struct nvmf_disc_entry e = {.trtype = NVMF_TRTYPE_RDMA, .adrfam = NVMF_ADRFAM_IPV4,
				    .subtype = NVMF_SUBTYPE_NVME, .portid = 1, .cntlid = 0xffff,
				    .asqsz = 32}, eb;
	strcpy(e.trsvcid, "4420");
	strcpy(e.subnqn, "nqn.2026-11.org.libiwarp:disk");
	strcpy(e.traddr, "127.0.0.1");
	uint8_t b[NVMF_DISC_ENTRY], h[NVMF_DISC_HDR];
	nvmf_disc_entry_put(b, &e);
	ck_assert_mem_eq(b + 32, "4420 ", 5);
	ck_assert_mem_eq(b + 512, "127.0.0.1 ", 10);
	ck_assert_uint_eq(b[769], 5);
	ck_assert_int_eq(nvmf_disc_entry_parse(&eb, b, sizeof(b)), 0);
	ck_assert_str_eq(eb.trsvcid, "4420");
	ck_assert_str_eq(eb.traddr, "127.0.0.1");
	ck_assert_str_eq(eb.subnqn, e.subnqn);
	ck_assert_uint_eq(eb.cntlid, 0xffff);
	ck_assert_int_eq(nvmf_disc_entry_parse(&eb, b, 1023), -1);
	memset(b + 256, 'n', 256);
	ck_assert_int_eq(nvmf_disc_entry_parse(&eb, b, sizeof(b)), -1);
	nvmf_disc_hdr_put(h, 9, 2);
	ck_assert_uint_eq(h[0], 9);
	ck_assert_uint_eq(h[8], 2);
}
END_TEST

/* ------------------------------------------------------------ RAM disk */

/* Every length around the streaming threshold and the 64-octet step, to
 * aligned and unaligned destinations: the copy is exact, the octets
 * either side untouched. */
START_TEST(ram_store_exact)
{
	static const size_t lens[] = {0, 1, 63, 64, 65, 4096, 32767, 32768, 32769, 32831, 131077};
	static const size_t offs[] = {0, 16, 8, 1};
	size_t cap = 131077 + 64;
	/* aligned_alloc wants a multiple of the alignment (C11; ASan checks). */
	uint8_t *src = malloc(cap), *dst = aligned_alloc(64, (cap + 127) & ~(size_t)63);
	uint8_t *fill = malloc(cap + 64);
	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);
	ck_assert_ptr_nonnull(fill);
	memset(fill, 0xa5, cap + 64);
	for (size_t i = 0; i < cap; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 8));
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
			size_t end = offs[o] + lens[l];
			memcpy(dst, fill, cap + 64);
			ram_store(dst + offs[o], src + 3, lens[l]);
			ck_assert(memcmp(dst + offs[o], src + 3, lens[l]) == 0);
			ck_assert(memcmp(dst, fill, offs[o]) == 0);
			ck_assert(memcmp(dst + end, fill, cap + 64 - end) == 0);
		}
	free(fill);
	free(src);
	free(dst);
}
END_TEST

Suite *suite_nvmf_wire(void);
Suite *suite_nvmf_wire(void)
{
	Suite *s = suite_create("nvmf_wire");
	TCase *tc = tcase_create("wire");
	tcase_add_test(tc, cm_req_linux_admin);
	tcase_add_test(tc, cm_req_bad);
	tcase_add_test(tc, cm_rep_rej);
	tcase_add_test(tc, cmd_read_keyed_invalidate);
	tcase_add_test(tc, sgl_kinds);
	tcase_add_test(tc, cqe_status_on_wire);
	tcase_add_test(tc, connect_cmd_and_data);
	tcase_add_test(tc, property_cmds);
	tcase_add_test(tc, dsm_range);
	tcase_add_test(tc, id_ctrl_fields);
	tcase_add_test(tc, id_ns_and_desc);
	tcase_add_test(tc, get_log_fields);
	tcase_add_test(tc, disc_entry);
	tcase_add_test(tc, ram_store_exact);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite_nvmf_wire());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	int run = srunner_ntests_run(sr);
	srunner_free(sr);
	return failed == 0 && run > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
