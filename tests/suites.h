/* SPDX-License-Identifier: BSD-2-Clause */
/* One Check suite per lib file, all registered from check_main.c. */
#ifndef IW_TEST_SUITES_H
#define IW_TEST_SUITES_H
#include <check.h>

Suite *suite_cursor(void);
Suite *suite_crc32c(void);
Suite *suite_wire_err(void);
Suite *suite_mpa_frame(void);
Suite *suite_mpa_tx(void);
Suite *suite_mpa_rx(void);
Suite *suite_ddp(void);
Suite *suite_rdmap(void);
Suite *suite_pcap_writer(void);
Suite *suite_vectors(void);
Suite *suite_evq(void);
Suite *suite_mem(void);
Suite *suite_cq(void);
Suite *suite_mpa_hs(void);
Suite *suite_loopback(void);
Suite *suite_qp(void);
Suite *suite_conn(void);
Suite *suite_conn_spec(void);
Suite *suite_trace(void);
Suite *suite_srq(void);
Suite *suite_device(void);
Suite *suite_poll_set(void);
Suite *suite_alloc(void);
Suite *suite_accept(void);
Suite *suite_reasm(void);
Suite *suite_chan_loop(void);

#endif
