/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-nvmf-perf: an NVMe-oF host on libiwarp that connects to a target
 * (RDMA transport), identifies it, and runs a fio-like load with optional
 * data verification, reporting IOPS, MB/s and latency percentiles; or
 * reads a discovery controller's log (--discover). Options: usage().
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_load.h"

static void usage(FILE *f)
{
	fputs("usage: iwarp-nvmf-perf -a ADDR [options]\n"
	      "  -a, --addr ADDR      target address          -p, --port PORT  (default 4420)\n"
	      "  -n, --nqn NQN        subsystem NQN (default nqn.2026-11.org.libiwarp:nvmet)\n"
	      "      --hostnqn NQN    our host NQN (default nqn.2014-08.org.nvmexpress:uuid:<random>)\n"
	      "      --discover       print the discovery log page and exit\n"
	      "  -N, --nsid N         namespace (default 1)\n"
	      "  -b, --bs N           block size of each I/O, octets (default 4096)\n"
	      "  -r, --rw MODE        read, write, randread, randwrite, rw, randrw (default randrw)\n"
	      "  -M, --mix PCT        reads in percent for rw/randrw (default 50)\n"
	      "  -d, --qd N           queue depth per queue (default 8)\n"
	      "  -q, --queues N       I/O queues (default 1)\n"
	      "  -t, --time SECONDS   duration (default 5)\n"
	      "  -c, --ios N          stop after N I/Os instead\n"
	      "  -V, --verify         check what is read against what was written\n"
	      "  -g, --gen G          data generation: writes carry G and reads expect G\n"
	      "                       everywhere (verify data written by an earlier run)\n"
	      "      --fill           write every block once, sequentially (with --gen), then stop\n"
	      "      --no-inline      never send write data in the capsule\n"
	      "      --invalidate     fast-registered buffers, keyed SGLs ask for Send with Invalidate\n"
	      "      --kato MS        keep alive timeout (default 10000; 0: none)\n"
	      "      --timeout MS     connect and admin deadline (default 5000)\n"
	      "      --pcap FILE      trace the connections\n"
	      "      --spin           poll without ever sleeping (default: sleep when idle)\n"
	      "      --tcp            the same load over raw TCP (data inline, NVMe/TCP-shaped)\n"
	      "                       against a --tcp-server, for a baseline measured alike\n"
	      "      --tcp-server     serve that baseline on --addr/--port (RAM, 64 MiB)\n"
	      "  -h, --help\n",
	      f);
}

static int num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "iwarp-nvmf-perf: %s: not a number in %llu..%llu\n", s,
			(unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int set_rw(struct load_opts *o, const char *m)
{
	static const struct { const char *name; int mix; bool rnd; } modes[] = {
		{"read", 100, false}, {"write", 0, false}, {"randread", 100, true},
		{"randwrite", 0, true}, {"rw", -1, false}, {"randrw", -1, true}};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(m, modes[i].name) == 0) {
			o->random = modes[i].rnd;
			if (modes[i].mix >= 0)
				o->read_pct = (uint32_t)modes[i].mix;
			o->mode = modes[i].name;
			return 0;
		}
	fprintf(stderr, "iwarp-nvmf-perf: unknown --rw %s\n", m);
	return -1;
}

enum { O_HOSTNQN = 256, O_SPIN, O_DISCOVER, O_TCP, O_TCP_SERVER, O_FILL, O_NOINLINE, O_INVALIDATE, O_KATO, O_TIMEOUT, O_PCAP };

static int parse(int argc, char **argv, struct load_opts *o)
{
	static const struct option lo[] = {
		{"addr", 1, 0, 'a'}, {"port", 1, 0, 'p'}, {"nqn", 1, 0, 'n'},
		{"hostnqn", 1, 0, O_HOSTNQN}, {"discover", 0, 0, O_DISCOVER}, {"nsid", 1, 0, 'N'},
		{"bs", 1, 0, 'b'}, {"rw", 1, 0, 'r'}, {"mix", 1, 0, 'M'}, {"qd", 1, 0, 'd'},
		{"queues", 1, 0, 'q'}, {"time", 1, 0, 't'}, {"ios", 1, 0, 'c'},
		{"verify", 0, 0, 'V'}, {"gen", 1, 0, 'g'}, {"fill", 0, 0, O_FILL},
		{"no-inline", 0, 0, O_NOINLINE},
		{"invalidate", 0, 0, O_INVALIDATE}, {"kato", 1, 0, O_KATO},
		{"timeout", 1, 0, O_TIMEOUT}, {"pcap", 1, 0, O_PCAP}, {"help", 0, 0, 'h'},
		{"spin", 0, 0, O_SPIN}, {"tcp", 0, 0, O_TCP}, {"tcp-server", 0, 0, O_TCP_SERVER},
		{0, 0, 0, 0}};
	uint64_t v;
	int ch, bad;
	while ((ch = getopt_long(argc, argv, "a:p:n:N:b:r:M:d:q:t:c:Vg:h", lo, NULL)) != -1) {
		bad = 0;
		switch (ch) {
		case 'a': o->addr = optarg; break;
		case 'p': bad = num(optarg, 0, 65535, &v); o->port = (uint16_t)v; break;
		case 'n': o->subnqn = optarg; break;
		case O_HOSTNQN: o->hostnqn = optarg; break;
		case O_DISCOVER: o->discover = true; break;
		case 'N': bad = num(optarg, 1, 0xfffffffe, &v); o->nsid = (uint32_t)v; break;
		case 'b': bad = num(optarg, 512, 1 << 24, &v); o->bs = (uint32_t)v; break;
		case 'r': bad = set_rw(o, optarg); break;
		case 'M': bad = num(optarg, 0, 100, &v); o->read_pct = (uint32_t)v; break;
		case 'd': bad = num(optarg, 1, 1024, &v); o->qd = (uint32_t)v; break;
		case 'q': bad = num(optarg, 1, 64, &v); o->nq = (uint32_t)v; break;
		case 't': o->seconds = strtod(optarg, NULL); bad = o->seconds <= 0; break;
		case 'c': bad = num(optarg, 1, ~0ull, &o->ios); break;
		case 'V': o->verify = true; break;
		case 'g': bad = num(optarg, 1, 0xffffffff, &v); o->gen = (uint32_t)v; break;
		case O_FILL: o->fill = true; break;
		case O_SPIN: o->spin = true; break;
		case O_TCP: o->tcp = true; break;
		case O_TCP_SERVER: o->tcp_server = true; break;
		case O_NOINLINE: o->no_inline = true; break;
		case O_INVALIDATE: o->invalidate = true; break;
		case O_KATO: bad = num(optarg, 0, 3600000, &v); o->kato = (uint32_t)v; break;
		case O_TIMEOUT: bad = num(optarg, 100, 600000, &v); o->timeout_ms = (int)v; break;
		case O_PCAP: o->pcap = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return 2;
		}
		if (bad)
			return 2;
	}
	if (o->fill) {
		o->read_pct = 0;
		o->random = false;
		o->mode = "fill";
		o->ios = 0;
		o->seconds = 1e9; /* until every region is written */
	}
	if ((!o->addr && !o->tcp_server) || optind < argc || (o->fill && !o->gen)) {
		usage(stderr);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct load_opts o = {.port = 4420, .subnqn = "nqn.2026-11.org.libiwarp:nvmet", .nsid = 1,
			      .bs = 4096, .read_pct = 50, .random = true, .mode = "randrw",
			      .qd = 8, .nq = 1, .seconds = 5, .kato = 10000, .timeout_ms = 5000};
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	if (o.tcp_server)
		return tcp_server(o.addr, o.port);
	if (o.tcp)
		return tcp_run(&o);
	return o.discover ? load_discover(&o) : load_run(&o);
}
