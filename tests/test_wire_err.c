/* SPDX-License-Identifier: BSD-2-Clause */
/* Failure reasons and TERMINATE names (lib/wire/wire_err.c). */
#include <string.h>

#include "iwarp/wire.h"
#include "suites.h"

/* Every RFC 5040/5041/5044/6581 triple the header defines. */
static const uint16_t rfc_codes[] = {
	IW_TERM_RDMAP_CATASTROPHIC, IW_TERM_RDMAP_INV_STAG, IW_TERM_RDMAP_BASE_BOUNDS,
	IW_TERM_RDMAP_ACCESS, IW_TERM_RDMAP_STAG_STREAM, IW_TERM_RDMAP_TO_WRAP,
	IW_TERM_RDMAP_PROT_NOINV, IW_TERM_RDMAP_PROT_UNSPEC, IW_TERM_RDMAP_VERSION,
	IW_TERM_RDMAP_OPCODE, IW_TERM_RDMAP_CATA_STREAM, IW_TERM_RDMAP_CATA_GLOBAL,
	IW_TERM_RDMAP_OP_NOINV, IW_TERM_RDMAP_OP_UNSPEC, IW_TERM_DDP_CATASTROPHIC,
	IW_TERM_DDP_T_INV_STAG, IW_TERM_DDP_T_BASE_BOUNDS, IW_TERM_DDP_T_STAG_STREAM,
	IW_TERM_DDP_T_TO_WRAP, IW_TERM_DDP_T_VERSION, IW_TERM_DDP_U_INV_QN,
	IW_TERM_DDP_U_NO_BUF, IW_TERM_DDP_U_MSN_RANGE, IW_TERM_DDP_U_INV_MO,
	IW_TERM_DDP_U_TOO_LONG, IW_TERM_DDP_U_VERSION, IW_TERM_LLP_CLOSED, IW_TERM_LLP_CRC,
	IW_TERM_LLP_MARKER, IW_TERM_LLP_BAD_FRAME, IW_TERM_LLP_CATASTROPHIC, IW_TERM_LLP_IRD,
	IW_TERM_LLP_NO_RTR,
};
#define NUM_RFC ((int)(sizeof(rfc_codes) / sizeof(rfc_codes[0])))

START_TEST(err_names_distinct)
{
	for (int a = 0; a < IW_WERR__COUNT; a++) {
		const char *na = iw_wire_err_name(a);

		ck_assert_ptr_nonnull(na);
		ck_assert_uint_gt(strlen(na), 0);
		ck_assert_str_ne(na, "unknown");
		for (int b = a + 1; b < IW_WERR__COUNT; b++)
			ck_assert_str_ne(na, iw_wire_err_name(b));
	}
}
END_TEST

START_TEST(err_name_round_trip)
{
	for (int e = 0; e < IW_WERR__COUNT; e++)
		ck_assert_int_eq(iw_wire_err_from_name(iw_wire_err_name(e)), e);
	ck_assert_int_eq(iw_wire_err_from_name("mpa_key"), IW_WERR_MPA_KEY);
	ck_assert_int_eq(iw_wire_err_from_name("fpdu_crc"), IW_WERR_FPDU_CRC);
	ck_assert_int_eq(iw_wire_err_from_name("ddp_t_version"), IW_WERR_DDP_T_VERSION);
	ck_assert_int_eq(iw_wire_err_from_name("rdmap_atomic_op"), IW_WERR_RDMAP_ATOMIC_OP);
	ck_assert_int_eq(iw_wire_err_from_name("none"), IW_WERR_NONE);
	ck_assert_int_eq(iw_wire_err_from_name("no_such_reason"), -1);
	ck_assert_int_eq(iw_wire_err_from_name(""), -1);
	ck_assert_int_eq(iw_wire_err_from_name("MPA_KEY"), -1);
	ck_assert_int_eq(iw_wire_err_from_name("unknown"), -1);
}
END_TEST

START_TEST(err_messages)
{
	for (int e = 0; e < IW_WERR__COUNT; e++) {
		const char *m = iw_wire_err_str(e);

		ck_assert_ptr_nonnull(m);
		ck_assert_uint_gt(strlen(m), 0);
		ck_assert_str_ne(m, "unknown wire error");
	}
	ck_assert_str_eq(iw_wire_err_str(IW_WERR__COUNT), "unknown wire error");
	ck_assert_str_eq(iw_wire_err_str((enum iw_wire_err)-1), "unknown wire error");
	ck_assert_str_eq(iw_wire_err_name(IW_WERR__COUNT), "unknown");
}
END_TEST

START_TEST(err_terminate_triples)
{
	static const struct {
		enum iw_wire_err e;
		uint16_t term;
	} want[] = {
		{IW_WERR_MPA_KEY, IW_TERM_LLP_BAD_FRAME},
		{IW_WERR_MPA_PD_LEN, IW_TERM_LLP_BAD_FRAME},
		{IW_WERR_FPDU_CRC, IW_TERM_LLP_CRC},
		{IW_WERR_FPDU_MARKER, IW_TERM_LLP_MARKER},
		{IW_WERR_DDP_T_VERSION, IW_TERM_DDP_T_VERSION},
		{IW_WERR_DDP_U_VERSION, IW_TERM_DDP_U_VERSION},
		{IW_WERR_DDP_QN, IW_TERM_DDP_U_INV_QN},
		{IW_WERR_RDMAP_VERSION, IW_TERM_RDMAP_VERSION},
		{IW_WERR_RDMAP_OPCODE, IW_TERM_RDMAP_OPCODE},
		{IW_WERR_RDMAP_NOT_LAST, IW_TERM_RDMAP_OPCODE},
		{IW_WERR_RDMAP_ATOMIC_OP, IW_TERM_RDMAP_OPCODE},
		{IW_WERR_RDMAP_TERM, IW_TERM_RDMAP_OP_UNSPEC},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(iw_wire_err_term(want[i].e) == want[i].term, "%s -> %#x",
			      iw_wire_err_name(want[i].e), iw_wire_err_term(want[i].e));
	ck_assert_uint_eq(IW_TERM_DDP_T_VERSION, 0x1104);
	ck_assert_uint_eq(IW_TERM_LLP_CRC, 0x2002);
}
END_TEST

/* Every reason maps to a triple that has a name. */
START_TEST(err_terms_are_named)
{
	for (int e = 1; e < IW_WERR__COUNT; e++) {
		const char *n = iw_term_str(iw_wire_err_term(e));

		ck_assert_msg(strncmp(n, "unknown", 7) != 0, "%s", iw_wire_err_name(e));
	}
}
END_TEST

START_TEST(term_names_rfc)
{
	for (int a = 0; a < NUM_RFC; a++) {
		const char *na = iw_term_str(rfc_codes[a]);

		ck_assert_ptr_nonnull(na);
		ck_assert_msg(strncmp(na, "unknown", 7) != 0, "%#x", rfc_codes[a]);
		for (int b = a + 1; b < NUM_RFC; b++)
			ck_assert_str_ne(na, iw_term_str(rfc_codes[b]));
	}
	ck_assert_str_eq(iw_term_str(IW_TERM_LLP_CRC), "MPA: CRC error");
	ck_assert_str_eq(iw_term_str(IW_TERM_DDP_U_NO_BUF),
			 "DDP untagged buffer: invalid MSN, no buffer available");
	ck_assert_str_eq(iw_term_str(IW_TERM_RDMAP_OPCODE),
			 "RDMAP remote operation: unexpected opcode");
}
END_TEST

/* Chelsio sends MPA errors with error type 3: same names as type 0. */
START_TEST(term_names_llp_any_etype)
{
	ck_assert_str_eq(iw_term_str(0x2302), iw_term_str(IW_TERM_LLP_CRC));
	ck_assert_str_eq(iw_term_str(0x2302), "MPA: CRC error");
	for (unsigned ecode = 1; ecode <= 7; ecode++)
		for (unsigned etype = 1; etype < 16; etype++)
			ck_assert_str_eq(iw_term_str(IW_TERM(2, etype, ecode)),
					 iw_term_str(IW_TERM(2, 0, ecode)));
}
END_TEST

START_TEST(term_names_unknown)
{
	ck_assert_str_eq(iw_term_str(IW_TERM(0, 1, 0x05)), "unknown RDMAP error");
	ck_assert_str_eq(iw_term_str(IW_TERM(0, 3, 0x00)), "unknown RDMAP error");
	ck_assert_str_eq(iw_term_str(IW_TERM(1, 2, 0x07)), "unknown DDP error");
	ck_assert_str_eq(iw_term_str(IW_TERM(1, 1, 0xFF)), "unknown DDP error");
	ck_assert_str_eq(iw_term_str(IW_TERM(2, 0, 0x00)), "unknown MPA error");
	ck_assert_str_eq(iw_term_str(IW_TERM(2, 3, 0x08)), "unknown MPA error");
	ck_assert_str_eq(iw_term_str(IW_TERM(3, 0, 0x01)), "unknown error layer");
	ck_assert_str_eq(iw_term_str(0xFFFF), "unknown error layer");
	/* catastrophic types carry no meaningful code */
	ck_assert_str_eq(iw_term_str(IW_TERM(0, 0, 0x42)), iw_term_str(IW_TERM_RDMAP_CATASTROPHIC));
	ck_assert_str_eq(iw_term_str(IW_TERM(1, 0, 0x42)), iw_term_str(IW_TERM_DDP_CATASTROPHIC));
	/* "No TERMINATE" sits outside the 16-bit triple space and has its
	 * own name; triple 0 is RDMAP's local catastrophic error. */
	ck_assert(!IW_TERM_IS_TRIPLE(IW_TERM_NONE));
	ck_assert(IW_TERM_IS_TRIPLE(IW_TERM_RDMAP_CATASTROPHIC));
	ck_assert_str_eq(iw_term_str(IW_TERM_NONE), "none");
	ck_assert_str_eq(iw_term_str(0), "RDMAP local catastrophic error");
	ck_assert_str_eq(iw_term_str(0x10000), "not a TERMINATE triple");
}
END_TEST

START_TEST(term_layer_names)
{
	ck_assert_str_eq(iw_term_layer_str(IW_LAYER_RDMAP), "RDMAP");
	ck_assert_str_eq(iw_term_layer_str(IW_LAYER_DDP), "DDP");
	ck_assert_str_eq(iw_term_layer_str(IW_LAYER_LLP), "LLP");
	ck_assert_str_eq(iw_term_layer_str(3), "reserved");
	ck_assert_str_eq(iw_term_layer_str(0xFFFFFFFFu), "reserved");
}
END_TEST

Suite *suite_wire_err(void)
{
	Suite *s = suite_create("wire_err");
	TCase *tc = tcase_create("wire_err");

	tcase_add_test(tc, err_names_distinct);
	tcase_add_test(tc, err_name_round_trip);
	tcase_add_test(tc, err_messages);
	tcase_add_test(tc, err_terminate_triples);
	tcase_add_test(tc, err_terms_are_named);
	tcase_add_test(tc, term_names_rfc);
	tcase_add_test(tc, term_names_llp_any_etype);
	tcase_add_test(tc, term_names_unknown);
	tcase_add_test(tc, term_layer_names);
	suite_add_tcase(s, tc);
	return s;
}
