/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The course of a live replay: connect (or accept), the MPA exchange, then
 * each recorded FPDU of our side in order. Before each one we wait (at
 * most --timeout) until the peer has sent as many messages as the recorded
 * peer had by then, so that a request is never sent before the answer it
 * depended on; with --pace recorded the recorded gaps are kept as well.
 * After the last one we listen --linger ms for more answers, close our
 * side and wait for the peer to close. Everything the peer sends is
 * decoded and reported as it arrives.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emit.h"
#include "fault.h"
#include "replay.h"

#define MS 1000000u

static bool peer_msgs(const struct rp_session *s, const void *arg)
{
	return s->dec_on && s->dec.msgs >= *(const uint64_t *)arg;
}

static bool peer_gone(const struct rp_session *s, const void *arg)
{
	(void)arg;
	return s->peer_eof || s->peer_reset;
}

static int open_socket(struct rp_session *s)
{
	const struct rp_opts *o = s->o;
	struct sockaddr_storage ss;
	socklen_t len;
	char err[300];
	bool listen = s->role == RP_RESPONDER;
	const char *spec = listen ? o->listen : o->peer;

	if (rp_net_addr(spec, listen, &ss, &len, err, sizeof(err))) {
		fprintf(stderr, "iwarp-replay: %s %s\n", listen ? "--listen" : "--peer", err);
		return RP_EXIT_NET;
	}
	s->fd = listen ? rp_net_accept(&ss, len, o->timeout_ms, err, sizeof(err))
		       : rp_net_connect(&ss, len, o->timeout_ms, err, sizeof(err));
	if (s->fd < 0) {
		fprintf(stderr, "iwarp-replay: %s: %s\n", spec, err);
		return RP_EXIT_NET;
	}
	return 0;
}

/* Wait for what the peer had sent by then in the recording. */
static int wait_for_peer(struct rp_session *s, const struct rp_rec_fpdu *r)
{
	uint64_t deadline = rp_now_ns() + (uint64_t)s->o->timeout_ms * MS;
	int rc;

	if (s->o->no_wait || peer_msgs(s, &r->peer_msgs))
		return 0;
	rc = rp_live_wait(s, peer_msgs, &r->peer_msgs, deadline);
	if (rc == 0)
		rp_emit_note(NULL, "before FPDU %" PRIu64 " the recorded peer had sent %" PRIu64
			     " messages, the live one %" PRIu64 " after %u ms: going on",
			     r->n, r->peer_msgs, s->dec_on ? s->dec.msgs : 0, s->o->timeout_ms);
	return rc < 0 ? -1 : 0;
}

/* --pace recorded and --fault delay:N:MS. */
static int pace(struct rp_session *s, size_t i, uint64_t last_send)
{
	const struct rp_rec_fpdu *r = &s->rec->f[s->role][i];
	uint64_t until = rp_now_ns();

	if (!s->o->pace_fast && i > 0 && r->ts_ns > r[-1].ts_ns &&
	    last_send + (r->ts_ns - r[-1].ts_ns) > until)
		until = last_send + (r->ts_ns - r[-1].ts_ns);
	for (int k = 0; k < s->o->nfaults; k++) {
		const struct rp_fault *f = &s->o->faults[k];

		if (f->kind == RP_FAULT_DELAY && f->n == r->n)
			until += (uint64_t)f->arg * MS;
	}
	if (until <= rp_now_ns())
		return 0;
	return rp_live_wait(s, NULL, NULL, until) < 0 ? -1 : 0;
}

static bool stop(struct rp_session *s, size_t i)
{
	const char *why = s->peer_term   ? "the peer sent TERMINATE"
			  : s->peer_reset ? "the connection failed"
			  : s->peer_eof   ? "the peer closed the connection"
					  : NULL;

	if (!why)
		return false;
	rp_emit_note(NULL, "%s: %zu recorded FPDUs not sent", why, s->rec->n[s->role] - i);
	return true;
}

static uint64_t send_all(struct rp_session *s)
{
	uint64_t last = rp_now_ns();
	size_t i;

	for (i = 0; i < s->rec->n[s->role]; i++) {
		if (stop(s, i) || wait_for_peer(s, &s->rec->f[s->role][i]) || stop(s, i) ||
		    pace(s, i, last) || stop(s, i))
			break;
		if (rp_live_tx(s, i))
			break;
		last = rp_now_ns();
	}
	return last;
}

/* Listen for answers until the peer is quiet for --linger ms, then close
 * our side and give the peer --timeout ms to close its own. */
static void finish(struct rp_session *s, uint64_t last_send)
{
	for (;;) {
		uint64_t base = s->last_rx_ns > last_send ? s->last_rx_ns : last_send;

		if (rp_live_wait(s, NULL, NULL, base + (uint64_t)s->o->linger_ms * MS) < 0 ||
		    s->last_rx_ns <= base)
			break;
	}
	if (!s->peer_reset)
		shutdown(s->fd, SHUT_WR);
	if (!peer_gone(s, NULL) &&
	    rp_live_wait(s, peer_gone, NULL, rp_now_ns() + (uint64_t)s->o->timeout_ms * MS) == 0)
		rp_emit_note(NULL, "the peer did not close within %u ms", s->o->timeout_ms);
}

static int status(const struct rp_session *s)
{
	struct rp_stats *st = rp_emit_stats();

	rp_emit_summary();
	if (s->o->check && (rp_stats_errors(st) || st->terminates))
		return RP_EXIT_PROTO;
	return RP_EXIT_OK;
}

int rp_replay_run(const struct rp_opts *o, const struct rp_record *rec)
{
	struct rp_session s = {.o = o, .rec = rec, .role = o->role, .fd = -1};
	int rc;

	rp_emit_live();
	if (!rec->conn) {
		fprintf(stderr, "iwarp-replay: %s: %s\n", o->path,
			o->conn ? "--conn names no iWARP connection" : "no iWARP connection to replay");
		return RP_EXIT_INPUT;
	}
	s.peer_role = o->role == RP_INITIATOR ? RP_RESPONDER : RP_INITIATOR;
	rp_emit_note(NULL, "replaying connection %u as the %s: %zu FPDUs to send, %zu recorded "
		     "from the peer", rec->conn, o->role == RP_INITIATOR ? "initiator" : "responder",
		     rec->n[o->role], rec->n[s.peer_role]);
	rc = rp_live_tx_check(&s);
	if (!rc)
		rc = open_socket(&s);
	s.t0 = rp_now_ns();
	if (!rc)
		rc = rp_live_mpa(&s);
	if (!rc) {
		rp_live_start_rx(&s);
		iw_fpdu_tx_init(&s.tx, s.crc, s.markers_tx, 0);
		finish(&s, send_all(&s));
		rp_live_end_rx(&s);
		rc = status(&s);
	}
	if (s.fd >= 0)
		close(s.fd);
	rp_buf_free(&s.in);
	return rc;
}
