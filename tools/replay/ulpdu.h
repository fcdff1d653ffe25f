/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Headers of one ULPDU (a DDP segment) decoded with the public codecs of
 * include/iwarp/wire.h, so that the tool reports exactly what the engine
 * would: the DDP header, the RDMAP header its opcode calls for, and the
 * first syntax error. Fields are kept even when a check fails, for the
 * report.
 */
#ifndef RP_ULPDU_H
#define RP_ULPDU_H

#include "rp.h"

/* siw: read a Terminate's control octets with siw's bit layout
 * (interop.md; iw_rdmap_term_siw_code). */
void rp_ulpdu_decode(struct rp_ulpdu *u, const uint8_t *p, size_t len, bool siw);

#endif
