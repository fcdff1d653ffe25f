/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-nvmet: a userspace NVMe over Fabrics target, RDMA transport over
 * libiwarp (iWARP on TCP). Options are in usage() and iwarp-nvmet(1).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tgt_rdma.h"

#define DEFAULT_NQN "nqn.2026-11.org.libiwarp:nvmet"

static void usage(FILE *f)
{
	fputs("usage: iwarp-nvmet [options]\n"
	      "  -a, --addr ADDR        listen address (default 0.0.0.0)\n"
	      "  -p, --port PORT        listen port (default 4420; 0: any, printed)\n"
	      "  -n, --nqn NQN          subsystem NQN (default " DEFAULT_NQN ")\n"
	      "  -N, --ns SPEC          a namespace: ram:SIZE, a file or a block device;\n"
	      "                         repeat for more (default: one ram:64M)\n"
	      "  -s, --size SIZE        size of a file namespace created or extended (default 64M)\n"
	      "  -b, --block-size N     512 or 4096 (default 512)\n"
	      "  -D, --direct           open files and devices with O_DIRECT\n"
	      "  -H, --host NQN         allow this host NQN (repeat; default: any host)\n"
	      "  -I, --inline N         in-capsule data octets per command (default 16384)\n"
	      "  -m, --max-io N         largest transfer, power of two (default 131072)\n"
	      "  -q, --queues N         I/O queues per controller at most (default 8; fewer\n"
	      "                         granted when the loops' slots hold fewer)\n"
	      "  -Q, --queue-size N     I/O queue entries (default 128)\n"
	      "  -S, --slots N          receive buffers in each loop's SRQ (default 1024)\n"
	      "  -L, --loops N          event loops, one thread each (default: one per usable CPU)\n"
	      "  -w, --pcap FILE        trace every connection into a pcap file\n"
	      "      --copy-ram         move RAM namespace data through the slots' buffers\n"
	      "                         (default: RDMA READ and WRITE in the namespace itself)\n"
	      "      --write-stage N    RAM namespace writes by RDMA READ go through the slots'\n"
	      "                         buffers while a loop has at most N octets of data in\n"
	      "                         flight (default: twice the CPU's L2 cache; 0: never)\n"
	      "      --spin-us N        a loop with an RDMA READ or Send of its own out polls\n"
	      "                         up to N us for the answer before it sleeps (default 0)\n"
	      "  -v, --verbose          say what happens to connections and failed commands\n"
	      "  -h, --help\n",
	      f);
}

static int num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);
	uint64_t mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1 << 10, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1 << 20, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1 << 30, end++;
	if (end == s || *end || v * mul < lo || v * mul > hi) {
		fprintf(stderr, "iwarp-nvmet: %s: not a number in %lu..%lu\n", s, lo, hi);
		return -1;
	}
	*out = (unsigned long)(v * mul);
	return 0;
}

struct opts {
	struct tr_opts tr;
	const char *ns[TGT_MAX_NS];
	int nns;
	unsigned long size, bs;
	bool direct;
};

static int parse(int argc, char **argv, struct tgt_cfg *cfg, struct opts *o)
{
	static const struct option lo[] = {
		{"addr", 1, 0, 'a'}, {"port", 1, 0, 'p'}, {"nqn", 1, 0, 'n'}, {"ns", 1, 0, 'N'},
		{"size", 1, 0, 's'}, {"block-size", 1, 0, 'b'}, {"direct", 0, 0, 'D'},
		{"host", 1, 0, 'H'}, {"inline", 1, 0, 'I'}, {"max-io", 1, 0, 'm'},
		{"queues", 1, 0, 'q'}, {"queue-size", 1, 0, 'Q'}, {"slots", 1, 0, 'S'},
		{"loops", 1, 0, 'L'}, {"pcap", 1, 0, 'w'}, {"copy-ram", 0, 0, 'C'},
		{"spin-us", 1, 0, 'U'}, {"write-stage", 1, 0, 'W'}, {"verbose", 0, 0, 'v'},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	unsigned long v;
	int ch;
	while ((ch = getopt_long(argc, argv, "a:p:n:N:s:b:DH:I:m:q:Q:S:L:w:vh", lo, NULL)) != -1) {
		int bad = 0;
		switch (ch) {
		case 'a': o->tr.addr = optarg; break;
		case 'p': bad = num(optarg, 0, 65535, &v); o->tr.port = (uint16_t)v; break;
		case 'n':
			if (strlen(optarg) > NVMF_NQN_MAX || !*optarg) {
				fprintf(stderr, "iwarp-nvmet: an NQN has 1 to 223 octets\n");
				return 2;
			}
			snprintf(cfg->subnqn, sizeof(cfg->subnqn), "%s", optarg);
			break;
		case 'N':
			if (o->nns == TGT_MAX_NS) {
				fprintf(stderr, "iwarp-nvmet: at most %d namespaces\n", TGT_MAX_NS);
				return 2;
			}
			o->ns[o->nns++] = optarg;
			break;
		case 's': bad = num(optarg, 4096, ~0ul, &o->size); break;
		case 'b': bad = num(optarg, 512, 4096, &o->bs) || (o->bs != 512 && o->bs != 4096); break;
		case 'D': o->direct = true; break;
		case 'H':
			if (cfg->nhosts == TGT_MAX_HOSTS)
				return 2;
			cfg->hosts[cfg->nhosts++] = optarg;
			break;
		case 'I': bad = num(optarg, 0, 1 << 20, &v); cfg->icd_max = (uint32_t)(v & ~15ul); break;
		case 'm': bad = num(optarg, 4096, 1 << 24, &v) || (v & (v - 1)); cfg->max_io = (uint32_t)v; break;
		case 'q': bad = num(optarg, 1, 1023, &v); cfg->max_qid = (uint16_t)v; break;
		case 'Q': bad = num(optarg, 2, 1024, &v); cfg->mqes = (uint16_t)v; break;
		case 'S': bad = num(optarg, 64, 65536, &v); o->tr.slots = (uint32_t)v; break;
		case 'L': bad = num(optarg, 1, TR_MAX_LOOPS, &v); o->tr.loops = (uint32_t)v; break;
		case 'w': o->tr.pcap = optarg; break;
		case 'C': o->tr.copy_ram = true; break;
		case 'U': bad = num(optarg, 0, 1000000, &v); o->tr.spin_us = (uint32_t)v; break;
		case 'W': bad = num(optarg, 0, 1ul << 40, &v); o->tr.write_stage = (int64_t)v; break;
		case 'v': cfg->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "iwarp-nvmet: bad value for -%c: %s\n", ch, optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "iwarp-nvmet: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	return 0;
}

/* One loop per CPU this process may run on (taskset), at most TR_MAX_LOOPS. */
static uint32_t usable_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	int n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > TR_MAX_LOOPS ? TR_MAX_LOOPS : (uint32_t)n;
}

int main(int argc, char **argv)
{
	static struct tgt t;
	struct tgt_cfg *cfg = &t.cfg;
	struct opts o = {.tr = {.port = 4420, .slots = 1024, .write_stage = -1},
			 .size = 64 << 20, .bs = 512};
	snprintf(cfg->subnqn, sizeof(cfg->subnqn), "%s", DEFAULT_NQN);
	cfg->icd_max = 16384;
	cfg->max_io = 131072;
	cfg->max_qid = 8;
	cfg->mqes = 128;
	int rc = parse(argc, argv, cfg, &o);
	if (rc)
		return rc;
	if (o.nns == 0)
		o.ns[o.nns++] = "ram:64M";
	if (o.tr.loops == 0)
		o.tr.loops = usable_cpus();
	if (tgt_init(&t)) {
		fprintf(stderr, "iwarp-nvmet: pthread_mutex_init failed\n");
		return 1;
	}
	for (int i = 0; i < o.nns; i++) {
		if (tgt_ns_open(&cfg->ns[i], o.ns[i], o.size, (uint32_t)o.bs, o.direct)) {
			tgt_fini(&t);
			return 1;
		}
		cfg->nns++;
	}
	rc = tr_run(&t, &o.tr);
	tgt_fini(&t);
	return rc;
}
