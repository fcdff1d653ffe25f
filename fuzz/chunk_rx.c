/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_fpdu_rx's second decoding run (the input in small chunks): the FPDU
 * decoder of lib/wire/mpa_rx.c built a second time, under chunk_ names,
 * with coverage counters but without comparison tracing (Makefile.am's
 * FUZZ_NOCMP). The first run, the input in one piece, decodes with the
 * traced decoder and traces every comparison the input's values decide;
 * the chunked run makes the same comparisons again, one to eight octets
 * per call, and its tracing was most of the target's instructions
 * (callgrind: trace-cmp 54 %, most of it in rx_next). The edges only
 * chunking reaches (headers and CRCs assembled across calls, markers
 * split) still count for the fuzzer.
 */
#define RX_COPY(name) chunk_fpdu_rx_##name
#include "rx_copy.h"
