/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_qp_rx's tap: the FPDU decoder of lib/wire/mpa_rx.c built a second
 * time, under tap_ names and without coverage instrumentation
 * (fuzz/harness.ignore), to decode and check the QP's own output. The
 * QP's receive side runs the instrumented one on the input; the tap ran it
 * too, on octets the library built, and made two thirds of the decoder's
 * traced comparisons in fuzz_qp_rx (perf), for edges the input's own
 * FPDUs reach. Same source, same behaviour: only the names differ.
 */
#define iw_fpdu_rx_init tap_fpdu_rx_init
#define iw_fpdu_rx_next tap_fpdu_rx_next
#define iw_fpdu_rx_next_held tap_fpdu_rx_next_held
#define iw_fpdu_rx_run_begin tap_fpdu_rx_run_begin
#define iw_fpdu_rx_crc_flush tap_fpdu_rx_crc_flush
#define iw_fpdu_rx_direct_len tap_fpdu_rx_direct_len
#define iw_fpdu_rx_direct_done tap_fpdu_rx_direct_done
#define iw_fpdu_rx_finish tap_fpdu_rx_finish
#include "wire/mpa_rx.c"
