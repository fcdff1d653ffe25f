/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-replay: iWARP wire decoder and replayer. See iwarp-replay(1).
 *
 * The capture is always decoded first. Without --replay that is the whole
 * job: a report, a summary, and with --check an exit status for CI. With
 * --replay the decode is silent and only records one connection, which
 * replay.c then plays against a live peer.
 */
#include <stdio.h>

#include "capture.h"
#include "conn.h"
#include "emit.h"
#include "reltime.h"
#include "opts.h"
#include "record.h"
#include "replay.h"

/* Read every frame; 0, or the exit status of an input error (reported). */
static int decode(const struct rp_opts *o, bool *opened)
{
	char err[512];
	struct rp_capture *cap = rp_capture_open(o->path, err, sizeof(err));
	struct rp_pkt p;
	int rc;

	if (!cap) {
		fprintf(stderr, "iwarp-replay: %s\n", err);
		*opened = false;
		return RP_EXIT_INPUT;
	}
	*opened = true;
	while ((rc = rp_capture_next(cap, &p)) == 1) {
		rp_reltime_t0(p.ts_ns);
		rp_conns_packet(&p);
	}
	/* Whatever was read is still reported, up to a truncation. */
	rp_conns_finish();
	rp_emit_stats()->cap = *rp_capture_stats(cap);
	if (rc < 0)
		fprintf(stderr, "iwarp-replay: %s: %s\n", o->path, rp_capture_error(cap));
	else if (rp_capture_stats(cap)->tcp == 0)
		fprintf(stderr, "iwarp-replay: %s: no TCP segments in %llu frames\n", o->path,
			(unsigned long long)rp_capture_stats(cap)->frames);
	rc = rc < 0 || rp_capture_stats(cap)->tcp == 0 ? RP_EXIT_INPUT : RP_EXIT_OK;
	if (rc == RP_EXIT_OK && o->conn > rp_emit_stats()->conns) {
		fprintf(stderr, "iwarp-replay: %s: --conn %u: the capture has %llu TCP connections\n",
			o->path, o->conn, (unsigned long long)rp_emit_stats()->conns);
		rc = RP_EXIT_INPUT;
	}
	rp_capture_close(cap);
	return rc;
}

int main(int argc, char **argv)
{
	struct rp_opts o;
	bool done, opened;
	int rc = rp_opts_parse(&o, argc, argv, &done);

	if (rc || done) {
		rp_opts_free(&o);
		return rc;
	}
	rp_emit_init(&o);
	rp_conns_init(&o);
	rp_record_init(o.replay, o.conn);
	rc = decode(&o, &opened);
	if (o.replay) {
		if (rc == RP_EXIT_OK)
			rc = rp_replay_run(&o, rp_record_get());
	} else if (opened) {
		rp_emit_summary();
		if (rc == RP_EXIT_OK && o.check)
			rc = rp_emit_check_status();
	}
	rp_conns_free();
	rp_record_free();
	rp_opts_free(&o);
	return rc;
}
