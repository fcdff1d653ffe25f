/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The order of perftest's exchanges, per test and side, so that either end
 * may be perftest 4.5-0.17 run with -R. Read from its main()s (src/
 * write_bw.c, read_bw.c, send_bw.c, write_lat.c, send_lat.c of that
 * release; checked against the Debian bookworm binaries); n is -q, hs one
 * ctx_hand_shake (perf_xchg.c), C the client, S the server:
 *
 * all:        comm connection; versions, page and cache line sizes, MTU;
 *             create_rdma_cm_connection: hs, the n data connections, hs.
 * write, read (bandwidth):
 *             n hs (my_dest), n hs (again, printed), hs.
 *             S, one direction: hs (returns when C is done: "server just
 *             waits for client to exit"), xchg_bw_reports (prints C's), hs.
 *             C: per size [warm-up writes or reads; -b: hs], run, [-b: hs
 *             when sweeping], print, [-b: xchg_bw_reports, print the sum];
 *             one direction: hs, xchg_bw_reports; then hs
 *             (ctx_close_connection). S with -b does what C does.
 * send (bandwidth):
 *             n hs; hs; n hs. Per size: C posts nothing, S posts rx_depth
 *             receives per QP (both with -b), hs, [sweeping: credit words
 *             back to 0], C sends (run_iter_bw), S receives
 *             (run_iter_bw_server), -b both (run_iter_bi); print; [-b and
 *             not -D: xchg_bw_reports]; [sweeping: hs]. Then hs. No report
 *             goes to the server: each side prints its own figure.
 * write_lat:  hs; n hs; n hs; hs; per size run_iter_lat_write, print. No
 *             closing hs: the data connections are torn down next.
 * send_lat:   n hs; hs; n hs; per size: post rx_depth receives, hs,
 *             run_iter_lat_send, print. Then hs.
 * read_lat:   iwarp-perf peers only (not checked against ib_read_lat): as
 *             write_lat up to the sizes; per size C Reads, then writes an
 *             end mark the server waits for (perf_lat.c); then hs.
 *
 * Teardown (destroy_ctx): S disconnects every data connection, both wait
 * for the DISCONNECTED events; then the comm connection goes.
 */
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* Where the next hs may wait as long as the peer's test takes. */
int perf_hs_patient(struct perf_sess *s)
{
	int saved = s->comm.wait_ms;
	s->comm.wait_ms = -1;
	int rc = perf_hand_shake(s, 0);
	s->comm.wait_ms = saved;
	return rc;
}

int perf_hs_all(struct perf_sess *s)
{
	for (uint32_t i = 0; i < s->nqp; i++)
		if (perf_hand_shake(s, i))
			return -1;
	return 0;
}

static void sum(struct perf_result *r, const struct perf_result *other)
{
	r->bw_avg += other->bw_avg;
	r->bw_peak += other->bw_peak;
	r->msg_rate += other->msg_rate;
}

static void emit(struct perf_sess *s, struct perf_result *rows, int *nrows,
		 const struct perf_result *r)
{
	rows[(*nrows)++] = *r;
	if (!s->o.tcp)
		perf_out_row(s, r);
}

/* write_bw.c / read_bw.c after the connections are up. */
static int flow_rdma_bw(struct perf_sess *s, struct perf_result *rows, int *nrows)
{
	uint64_t sizes[24];
	int ns = perf_sizes(&s->o, sizes, 24);
	bool bi = s->o.bidir;
	if (perf_hs_all(s) || perf_hs_all(s) || perf_hand_shake(s, 0))
		return -1;
	if (s->server && !bi) {
		/* The client's test runs while we wait: our CPU meanwhile is
		 * what receiving its writes cost. */
		struct perf_result theirs, none = {0};
		struct perf_cpu before, after, cpu;
		perf_cpu_sample(&before);
		if (perf_hs_patient(s))
			return -1;
		perf_cpu_sample(&after);
		if (perf_xchg_report(s, &none, &theirs))
			return -1;
		perf_cpu_delta(&before, &after, &cpu);
		theirs.cpu = cpu;
		theirs.has_cpu = true;
		emit(s, rows, nrows, &theirs);
		return perf_hand_shake(s, 0);
	}
	struct perf_result r = {0}, theirs;
	for (int i = 0; i < ns; i++) {
		if (bi && perf_hs_patient(s))
			return -1;
		if (perf_bw_duplex(s, sizes[i], &r))
			return -1;
		if (bi && s->o.sweep && perf_hs_patient(s))
			return -1;
		if (bi) {
			if (perf_xchg_report(s, &r, &theirs))
				return -1;
			sum(&r, &theirs);
		}
		emit(s, rows, nrows, &r);
	}
	if (!bi && (perf_hs_patient(s) || perf_xchg_report(s, &r, &theirs)))
		return -1;
	return perf_hs_patient(s);
}

/* send_bw.c after the connections are up. */
static int flow_send_bw(struct perf_sess *s, struct perf_result *rows, int *nrows)
{
	uint64_t sizes[24];
	int ns = perf_sizes(&s->o, sizes, 24);
	bool bi = s->o.bidir, recv = s->server || bi;
	if (perf_hs_all(s) || perf_hand_shake(s, 0) || perf_hs_all(s))
		return -1;
	for (int i = 0; i < ns; i++) {
		for (uint32_t q = 0; recv && q < s->nqp; q++)
			if (perf_post_recvs(s, q, perf_rx_depth(&s->o), sizes[i]))
				return -1;
		if (perf_hs_patient(s))
			return -1;
		memset(s->ctrl + s->nqp, 0, s->nqp * sizeof(uint32_t));
		struct perf_result r = {0}, theirs;
		if (perf_bw_duplex(s, sizes[i], &r))
			return -1;
		if (bi && s->o.duration <= 0) {
			if (perf_xchg_report(s, &r, &theirs))
				return -1;
			sum(&r, &theirs);
		}
		emit(s, rows, nrows, &r);
		if (s->o.sweep && perf_hs_patient(s))
			return -1;
	}
	return perf_hs_patient(s);
}

static int flow_write_lat(struct perf_sess *s, struct perf_result *rows, int *nrows)
{
	uint64_t sizes[24];
	int ns = perf_sizes(&s->o, sizes, 24);
	if (perf_hand_shake(s, 0) || perf_hs_all(s) || perf_hs_all(s) || perf_hand_shake(s, 0))
		return -1;
	for (int i = 0; i < ns; i++) {
		struct perf_result r = {0};
		if (perf_lat_write(s, sizes[i], &r))
			return -1;
		emit(s, rows, nrows, &r);
	}
	/* The server's teardown is the only end mark of write_lat, and it
	 * follows the client's last write at once. siw fails that write's WQE
	 * (IBV_WC_LOC_QP_OP_ERR) if our FIN lands before its send routine has
	 * returned, which a descheduled guest vCPU makes likely. perftest's
	 * server computes its report (a clock calibration of about 0.2 s)
	 * before it disconnects: give the client as long. */
	if (s->server)
		usleep(200000);
	return 0;
}

static int flow_send_lat(struct perf_sess *s, struct perf_result *rows, int *nrows)
{
	uint64_t sizes[24];
	int ns = perf_sizes(&s->o, sizes, 24);
	if (perf_hs_all(s) || perf_hand_shake(s, 0) || perf_hs_all(s))
		return -1;
	for (int i = 0; i < ns; i++) {
		if (perf_post_recvs(s, 0, perf_rx_depth(&s->o), sizes[i]) || perf_hs_patient(s))
			return -1;
		struct perf_result r = {0};
		if (perf_lat_send(s, sizes[i], &r))
			return -1;
		emit(s, rows, nrows, &r);
	}
	return perf_hs_patient(s);
}

/* The server's rows carry only the sizes: its TCP baseline needs them. */
static int flow_read_lat(struct perf_sess *s, struct perf_result *rows, int *nrows)
{
	uint64_t sizes[24];
	int ns = perf_sizes(&s->o, sizes, 24);
	if (perf_hand_shake(s, 0) || perf_hs_all(s) || perf_hs_all(s) || perf_hand_shake(s, 0))
		return -1;
	for (int i = 0; i < ns; i++) {
		struct perf_result r = {.bytes = sizes[i], .lat = true};
		int rc = s->server ? perf_lat_read_serve(s, sizes[i], (uint32_t)i)
				   : perf_lat_read(s, sizes[i], (uint32_t)i, &r);
		if (rc)
			return -1;
		emit(s, rows, nrows, &r);
	}
	return perf_hs_patient(s);
}

/* From the end of the preamble to the last exchange of the test. */
int perf_flow(struct perf_sess *s, struct perf_result *rows, int *nrows)
{
	*nrows = 0;
	switch (s->o.test) {
	case PT_WRITE:
	case PT_READ:
		return flow_rdma_bw(s, rows, nrows);
	case PT_SEND:
		return flow_send_bw(s, rows, nrows);
	case PT_WRITE_LAT:
		return flow_write_lat(s, rows, nrows);
	case PT_SEND_LAT:
		return flow_send_lat(s, rows, nrows);
	case PT_READ_LAT:
		return flow_read_lat(s, rows, nrows);
	case PT_CONNECT:
		break; /* perf_connrate.c: no data connections, no perftest flow */
	}
	return -1;
}
