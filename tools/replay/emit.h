/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The reporting hub: every decoded item goes through here once, to the
 * statistics and to the chosen printer (human lines, print.c, or JSON
 * lines, json.c). Decoding code never prints.
 */
#ifndef RP_EMIT_H
#define RP_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "rp.h"
#include "stats.h"

struct rp_conn_info {
	unsigned id;
	struct rp_ep ep[2];    /* by role */
	const char *roles_from; /* "SYN", "MPA Request", "first segment", "--responder-port" */
};

struct rp_neg_info {
	bool crc;
	bool markers[2];       /* by sender role */
	const char *source;    /* how it was learnt */
	bool rejected;
};

struct rp_out_ops {
	void (*conn)(const struct rp_conn_info *c);
	void (*neg)(unsigned conn, const struct rp_neg_info *n);
	void (*mpa)(const struct rp_origin *o, const struct rp_mpa *m);
	void (*fpdu)(const struct rp_origin *o, const struct rp_fpdu *f);
	void (*error)(const struct rp_origin *o, bool has_off, uint32_t off, const char *what);
	void (*gap)(const struct rp_origin *o, uint32_t seq_to, uint64_t bytes);
	void (*note)(const struct rp_origin *o, const char *msg);
	void (*summary)(const struct rp_stats *s, bool check, bool fail_on_term);
};
extern const struct rp_out_ops rp_print_ops, rp_json_ops;
/* json.c prints each FPDU's payload octets (--payload). */
extern bool rp_json_payload;
/* The human summary (summary.c). */
void rp_print_summary(const struct rp_stats *s, bool check, bool fail_on_term);

void rp_emit_init(const struct rp_opts *o);
/* A live session begins: fresh statistics, reports on. */
void rp_emit_live(void);
struct rp_stats *rp_emit_stats(void);

void rp_emit_conn(const struct rp_conn_info *c);
void rp_emit_neg(unsigned conn, const struct rp_neg_info *n);
void rp_emit_mpa(const struct rp_origin *o, const struct rp_mpa *m);
void rp_emit_fpdu(const struct rp_origin *o, const struct rp_fpdu *f);
/* A protocol error with no FPDU to show for it; err IW_WERR_NONE if it
 * has no wire error code. */
void rp_emit_error(const struct rp_origin *o, bool has_off, uint32_t off, enum iw_wire_err err,
		   const char *what);
void rp_emit_gap(const struct rp_origin *o, uint32_t seq_to, uint64_t bytes);
void rp_emit_note(const struct rp_origin *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rp_emit_summary(void);
/* The exit status the report calls for with --check. */
int rp_emit_check_status(void);

#endif
