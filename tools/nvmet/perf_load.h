/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp-nvmf-perf: options, the load and the discovery reader. */
#ifndef NVMET_PERF_LOAD_H
#define NVMET_PERF_LOAD_H

#include <stdbool.h>
#include <stdint.h>

struct load_opts {
	const char *addr;
	uint16_t port;
	const char *subnqn, *hostnqn;
	bool discover;
	uint32_t nsid, bs, read_pct, qd, nq, gen, kato;
	bool random, verify, no_inline, invalidate, fill, tcp, tcp_server, spin;
	const char *mode;
	double seconds;
	uint64_t ios;
	int timeout_ms;
	const char *pcap;
};

/* Exit status: 0 all I/O succeeded (and verified), 1 an I/O failed, a
 * verification failed or a connection was lost, 3 could not connect. */
int load_run(const struct load_opts *o);
int load_discover(const struct load_opts *o);
/* The raw-TCP baseline (perf_tcp.c): the client runs the load's shape
 * (bs, rw, qd, queues, time) against tcp_server, which never returns. */
int tcp_run(const struct load_opts *o);
int tcp_server(const char *addr, uint16_t port);

/* Latency histogram, log-linear (16 steps per power of two). */
#define HIST_BUCKETS 1024
struct hist {
	uint64_t n[HIST_BUCKETS];
	uint64_t count;
};
void hist_add(struct hist *h, uint64_t ns);
/* The value below which q (0..1) of the samples lie, in ns. */
uint64_t hist_pct(const struct hist *h, double q);

/* The verification pattern of a block range: words derived from the
 * absolute octet offset and a version. */
void pattern_fill(void *buf, uint64_t off, uint32_t len, uint32_t version);
/* Octet index of the first difference, or -1. */
int64_t pattern_check(const void *buf, uint64_t off, uint32_t len, uint32_t version);

#endif
