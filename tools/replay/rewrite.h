/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Editing a recorded ULPDU before it is re-framed for the live stream:
 * STag mapping and TO shifting (--map-stag, --to-offset), and the named
 * header fields --fault field:N:name=value corrupts. Fields are patched in
 * place at their RFC offsets, so every other octet goes out exactly as
 * recorded (reserved bits included).
 */
#ifndef RP_REWRITE_H
#define RP_REWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rp.h"

/* Fields that live in the MPA framing rather than in the ULPDU: they are
 * patched after encoding (see live_tx.c). */
enum rp_field_kind { RP_FIELD_ULPDU, RP_FIELD_MPA_LEN, RP_FIELD_MPA_CRC };

/* Index of a field name, or -1. */
int rp_field_lookup(const char *name);
enum rp_field_kind rp_field_kind(int field);
const char *rp_field_name(int field);
/* Largest value the field holds. */
uint64_t rp_field_max(int field);
/* Print the table of field names (for --help / errors). */
void rp_field_list(FILE *fp);
/* NULL if the field exists in this ULPDU, else why not. */
const char *rp_field_check(int field, const uint8_t *ulpdu, size_t len);
/* Set a ULPDU field (rp_field_check passed). */
void rp_field_set(int field, uint8_t *ulpdu, uint64_t value);

/* Apply the STag map and TO offset of o to a ULPDU (zero-length tagged
 * segments, the RTRs, excepted); returns the number of fields changed. */
int rp_rewrite_apply(const struct rp_opts *o, uint8_t *ulpdu, size_t len);

#endif
