/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Output: perftest-style tables on stdout (a row per size as it is done, or
 * all at the end when the TCP baseline adds its columns), one JSON document
 * with --json, and a progress line on stderr every 3 s of a long run.
 * MB/sec is 2^20 octets per second, as perftest's; Gb/sec 10^9 bits.
 */
#include <inttypes.h>
#include <stdio.h>

#include "perf.h"

#define LINE "---------------------------------------------------------------------------" \
	     "---------------------------------------------"

static const char *const titles[] = {"RDMA WRITE bandwidth", "RDMA READ bandwidth",
				     "SEND bandwidth",       "RDMA WRITE latency",
				     "SEND latency",         "RDMA READ latency"};

static bool tables(const struct perf_sess *s)
{
	return s->out && !s->o.json;
}

static const char *role_of(const struct perf_sess *s)
{
	if (s->o.role == ROLE_LOOPBACK)
		return "loopback, both ends in this process";
	return s->server ? "server" : "client";
}

void perf_out_header(struct perf_sess *s)
{
	if (!tables(s))
		return;
	const struct perf_opts *o = &s->o;
	FILE *f = s->out;
	fprintf(f, "%s\n iwarp-perf: %s%s (%s; peer %s %.15s)\n", LINE, titles[o->test],
		o->bidir ? ", bidirectional" : "", role_of(s),
		s->peer_iwpf ? "iwarp-perf" : "perftest", s->rem_version[0] ? s->rem_version : "?");
	fprintf(f, " QPs: %u   TX depth: %u   CRC: %s   markers: %s   %s   ", o->qps, o->tx_depth,
		o->crc ? "on" : "off", o->markers ? "on" : "off",
		perf_polling(o) ? "busy-poll" : "blocking");
	if (iw_context_num_loops(s->ctx) > 1)
		fprintf(f, "loops: %u   ", iw_context_num_loops(s->ctx));
	if (o->duration > 0)
		fprintf(f, "duration: %.2f s\n", o->duration);
	else
		fprintf(f, "iterations: %" PRIu64 "\n", o->iters);
	fprintf(f, "%s\n", LINE);
	if (perf_is_lat(o->test))
		fprintf(f, " #bytes     #iterations  t_min[usec]  t_typical[usec]  t_avg[usec]  "
			   "t_max[usec]  99%%[usec]  99.9%%[usec]%s\n",
			o->tcp && !s->server ? "  TCP t_typical[usec]  iWARP/TCP" : "");
	else
		fprintf(f, " #bytes     #iterations  BW peak[Gb/sec]  BW average[Gb/sec]  "
			   "BW peak[MB/sec]  BW average[MB/sec]  MsgRate[Mpps]%s\n",
			o->tcp && !s->server ? "  TCP average[MB/sec]  iWARP/TCP" : "");
	fflush(f);
}

void perf_out_row(struct perf_sess *s, const struct perf_result *r)
{
	if (!tables(s))
		return;
	FILE *f = s->out;
	if (r->lat && !r->iters)
		return; /* a read_lat server: the client has the figures */
	if (r->lat) {
		fprintf(f, " %-10" PRIu64 " %-12" PRIu64 " %-12.2f %-16.2f %-12.2f %-12.2f %-10.2f "
			   "%-12.2f",
			r->bytes, r->iters, r->t_min, r->t_typ, r->t_avg, r->t_max, r->t_p99,
			r->t_p999);
		if (r->tcp)
			fprintf(f, " %-20.2f %.3f", r->tcp_typ,
				r->tcp_typ > 0 ? r->t_typ / r->tcp_typ : 0);
	} else {
		fprintf(f, " %-10" PRIu64 " %-12" PRIu64 " %-16.2f %-19.2f %-16.2f %-19.2f %-13.6f",
			r->bytes, r->iters, r->bw_peak * 8 / 1e9, r->bw_avg * 8 / 1e9,
			r->bw_peak / 1048576, r->bw_avg / 1048576, r->msg_rate / 1e6);
		if (r->tcp)
			fprintf(f, "  %-20.2f %.3f", r->tcp_bw / 1048576,
				r->tcp_bw > 0 ? r->bw_avg / r->tcp_bw : 0);
	}
	fputc('\n', f);
	fflush(f);
}

void perf_out_footer(struct perf_sess *s)
{
	if (!tables(s))
		return;
	fprintf(s->out, "%s\n", LINE);
	if (s->o.test == PT_READ_LAT)
		fprintf(s->out, " Latencies are whole round trips (a Read is one).%s\n",
			s->o.tcp && !s->server ? " TCP: a 16-octet request, a reply of #bytes; "
						 "iWARP/TCP compares t_typical." : "");
	else if (perf_is_lat(s->o.test))
		fprintf(s->out, " Latencies are half round trips.%s\n",
			s->o.tcp && !s->server ? " iWARP/TCP compares t_typical: below 1 is faster." : "");
	fflush(s->out);
}

/* "cpu": this process's CPU seconds over the run, per thread. */
static void json_cpu(FILE *f, const struct perf_cpu *c)
{
	fprintf(f, ",\"cpu\":{\"process_s\":%.3f,\"threads\":[", c->total);
	for (int i = 0; i < c->n; i++)
		fprintf(f, "%s{\"tid\":%d,\"name\":\"%s\",\"cpu_s\":%.3f}", i ? "," : "",
			c->t[i].tid, c->t[i].name, c->t[i].secs);
	fputs("]}", f);
}

static void json_row(FILE *f, const struct perf_result *r)
{
	fprintf(f, "{\"bytes\":%" PRIu64 ",\"iterations\":%" PRIu64 ",\"messages\":%" PRIu64,
		r->bytes, r->iters, r->msgs);
	if (r->lat) {
		fprintf(f, ",\"t_min_us\":%.3f,\"t_typical_us\":%.3f,\"t_avg_us\":%.3f,"
			   "\"t_max_us\":%.3f,\"t_p99_us\":%.3f,\"t_p999_us\":%.3f",
			r->t_min, r->t_typ, r->t_avg, r->t_max, r->t_p99, r->t_p999);
		if (r->tcp)
			fprintf(f, ",\"tcp_t_typical_us\":%.3f,\"ratio\":%.4f", r->tcp_typ,
				r->tcp_typ > 0 ? r->t_typ / r->tcp_typ : 0);
	} else {
		fprintf(f, ",\"seconds\":%.6f,\"bw_peak_gbps\":%.4f,\"bw_avg_gbps\":%.4f,"
			   "\"bw_peak_MiBps\":%.2f,\"bw_avg_MiBps\":%.2f,\"msg_rate_mpps\":%.6f",
			r->seconds, r->bw_peak * 8 / 1e9, r->bw_avg * 8 / 1e9, r->bw_peak / 1048576,
			r->bw_avg / 1048576, r->msg_rate / 1e6);
		if (r->tcp)
			fprintf(f, ",\"tcp_bw_avg_MiBps\":%.2f,\"ratio\":%.4f", r->tcp_bw / 1048576,
				r->tcp_bw > 0 ? r->bw_avg / r->tcp_bw : 0);
	}
	if (r->has_cpu)
		json_cpu(f, &r->cpu);
	fputc('}', f);
}

void perf_out_json(struct perf_sess *s, const struct perf_result *rows, int nrows)
{
	if (!s->out || !s->o.json)
		return;
	const struct perf_opts *o = &s->o;
	FILE *f = s->out;
	fprintf(f, "{\"tool\":\"iwarp-perf\",\"test\":\"%s\",\"role\":\"%s\",", perf_test_name(o->test),
		o->role == ROLE_LOOPBACK ? "loopback" : s->server ? "server" : "client");
	fprintf(f, "\"peer\":\"%s\",\"peer_version\":\"%.15s\",", s->peer_iwpf ? "iwarp-perf" : "perftest",
		s->rem_version);
	fprintf(f, "\"qps\":%u,\"tx_depth\":%u,\"bidirectional\":%s,\"crc\":%s,\"markers\":%s,",
		o->qps, o->tx_depth, o->bidir ? "true" : "false", o->crc ? "true" : "false",
		o->markers ? "true" : "false");
	fprintf(f, "\"poll\":%s,\"loops\":%u,\"threads\":%s,", perf_polling(o) ? "true" : "false",
		iw_context_num_loops(s->ctx), o->threads ? "true" : "false");
	if (o->duration > 0)
		fprintf(f, "\"duration_s\":%.3f,", o->duration);
	else
		fprintf(f, "\"iterations\":%" PRIu64 ",", o->iters);
	fprintf(f, "\"tcp\":%s,\"units\":{\"MiBps\":\"2^20 octets/s\",\"gbps\":\"10^9 bit/s\","
		   "\"latency\":\"%s round trip, microseconds\"},\"results\":[",
		o->tcp ? "true" : "false", o->test == PT_READ_LAT ? "whole" : "half");
	for (int i = 0; i < nrows; i++) {
		if (i)
			fputc(',', f);
		json_row(f, &rows[i]);
	}
	fputs("]}\n", f);
	fflush(f);
}

void perf_progress_start(struct perf_progress *p, const struct perf_sess *s, uint64_t size)
{
	double now = perf_now();
	*p = (struct perf_progress){.start = now, .last = now, .what = perf_test_name(s->o.test),
				    .size = size, .on = tables(s)};
}

void perf_progress_tick(struct perf_progress *p, uint64_t msgs)
{
	if (!p->on)
		return;
	double now = perf_now();
	if (now - p->last < 3)
		return;
	p->last = now;
	double t = now - p->start;
	fprintf(stderr, "iwarp-perf: %s %" PRIu64 " B: %.0f s, %" PRIu64 " messages, %.1f MB/sec\n",
		p->what, p->size, t, msgs, (double)msgs * (double)p->size / t / 1048576);
}
