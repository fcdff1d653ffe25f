/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The FPDU decoder of lib/wire/mpa_rx.c built once more in a fuzz target,
 * under other names: the includer defines RX_COPY(name) to the name
 * iw_fpdu_rx_<name> takes in its copy (fuzz/tap_rx.c, fuzz/chunk_rx.c).
 * Same source, same behaviour: only the names and the instrumentation
 * the Makefile gives the copy differ.
 */
#define iw_fpdu_rx_init RX_COPY(init)
#define iw_fpdu_rx_next RX_COPY(next)
#define iw_fpdu_rx_next_held RX_COPY(next_held)
#define iw_fpdu_rx_run_begin RX_COPY(run_begin)
#define iw_fpdu_rx_crc_flush RX_COPY(crc_flush)
#define iw_fpdu_rx_direct_len RX_COPY(direct_len)
#define iw_fpdu_rx_direct_done RX_COPY(direct_done)
#define iw_fpdu_rx_finish RX_COPY(finish)
#include "wire/mpa_rx.c"
