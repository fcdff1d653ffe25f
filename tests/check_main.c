/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one Check runner. Fork mode stays on (a crashing test is reported, not
 * fatal to the run). CK_RUN_SUITE=name / CK_RUN_CASE=name select, as in Check.
 */
#include <stdlib.h>

#include "suites.h"

static Suite *(*const all_suites[])(void) = {
	suite_cursor, suite_crc32c, suite_wire_err, suite_mpa_frame, suite_mpa_tx,
	suite_mpa_rx, suite_ddp, suite_rdmap, suite_pcap_writer, suite_vectors,
	suite_evq,     suite_mem,    suite_cq,       suite_mpa_hs, suite_qp, suite_conn, suite_conn_spec,
	suite_loopback, suite_trace, suite_srq, suite_device, suite_poll_set, suite_alloc, suite_accept, suite_reasm,
	suite_chan_loop,
};

int main(void)
{
	SRunner *sr = srunner_create(NULL);

	for (size_t i = 0; i < sizeof(all_suites) / sizeof(all_suites[0]); i++)
		srunner_add_suite(sr, all_suites[i]());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	int run = srunner_ntests_run(sr);
	srunner_free(sr);
	/* A run that executed nothing is a failure, not a pass. */
	return failed == 0 && run > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
