/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --fault specifications:
 *   crc:N                 flip one bit of FPDU N's CRC field
 *   field:N:name=value    set a named header field of FPDU N (rewrite.c)
 *   truncate:N[:LEN]      send only LEN octets of FPDU N (default half),
 *                         then go on with FPDU N+1: the peer loses framing
 *   delay:N:MS            wait MS milliseconds before FPDU N
 *   drop:N                do not send FPDU N
 * N counts the FPDUs of the replayed direction from 1, as the decoder
 * numbers them.
 */
#ifndef RP_FAULT_H
#define RP_FAULT_H

#include <stdbool.h>
#include <stddef.h>

#include "rp.h"

/* Parse spec into *f; NULL, or a message saying what is wrong. */
const char *rp_fault_parse(const char *spec, struct rp_fault *f);
/* The first fault of a kind for FPDU n, or NULL. */
const struct rp_fault *rp_fault_find(const struct rp_opts *o, enum rp_fault_kind kind, uint64_t n);

#endif
