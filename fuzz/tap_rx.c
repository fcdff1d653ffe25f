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
#define RX_COPY(name) tap_fpdu_rx_##name
#include "rx_copy.h"
