/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-perf options. The short options are perftest's where perftest has
 * one (-s -a -n -D -t -r -q -o -b -p; -R, -F and -d accepted and ignored)
 * so that a perftest command line carries over; the defaults are perftest's
 * too (they must match on both sides when the peer is perftest, which does
 * not tell).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char usage_text[] =
	"usage: iwarp-perf [--test T] [-s size] [-a [--max-size N]] [-n iters | -D seconds]\n"
	"                  [-t tx_depth] [-r rx_depth] [-q qps] [-o reads] [-b] [-l list]\n"
	"                  [--crc on|off] [--markers] [--tcp] [--poll | --no-poll]\n"
	"                  [--json] [--timeout s] [--loops N [--threads]]\n"
	"                  [--pin] [-p port] [--server [--sink] | --loopback | server_address]\n"
	"       iwarp-perf --idle N [-t depth] [--json]\n"
	"       iwarp-perf --churn N [--json]\n"
	"\n"
	"Roles: --server listens on -p (default 18515) for one client, like a perftest\n"
	"server; an address makes a client; with neither (or --loopback) both ends run\n"
	"in this process over 127.0.0.1. Client and server speak perftest's -R (rdma_cm)\n"
	"protocol: either side may be ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat\n"
	"or ib_send_lat -R given the same options. Between two iwarp-perf the server\n"
	"takes the client's test options.\n"
	"\n"
	"  --test T       write, read, send (bandwidth; default write), write_lat, send_lat,\n"
	"                 read_lat (RDMA READ round trips, as ib_read_lat; iwarp-perf peers),\n"
	"                 connect (setups per second: TCP connect, MPA exchange, ESTABLISHED\n"
	"                 on both sides, disconnect; -q in flight, up to 1024; default -D 2;\n"
	"                 --tcp adds plain TCP connect/accept/close)\n"
	"  -s size        message size, 1 to 8M (k and m suffixes: KiB, MiB); default\n"
	"                 65536, latency tests 2\n"
	"  -a             sweep sizes 2, 4, ... 8M (perftest's -a); --max-size ends it earlier\n"
	"  -n iters       messages per QP (default 5000, latency tests 1000)\n"
	"  -D seconds     run for a duration instead of a count\n"
	"  -t depth       send queue depth (default 128, latency tests 1)\n"
	"  -r depth       receives posted for SEND tests (default 512, at most -n)\n"
	"  -q qps         connections (queue pairs) in parallel (bandwidth tests)\n"
	"  -o reads       outstanding RDMA READs (IRD/ORD asked for; default 128)\n"
	"  -b             bidirectional (bandwidth tests)\n"
	"  -l list        (bandwidth tests) post up to this many WRs chained in one call,\n"
	"                 1 to 64 (perftest's --post_list; default 1): fewer, larger\n"
	"                 writes to the socket; --tcp then writes as many messages per\n"
	"                 writev (not passed to the server)\n"
	"  -p port        the server's port (default 18515)\n"
	"  --crc on|off   ask for the MPA CRC on the data connections (default on)\n"
	"  --markers      ask for MPA markers on the data connections\n"
	"  --tcp          also time raw TCP with the same sizes and depth (iwarp-perf\n"
	"                 peers and --loopback) and print iWARP/TCP\n"
	"  --poll         busy-poll: the waiting thread drives the connection (libiwarp's\n"
	"                 run-to-completion mode, iw_progress) and never sleeps; the TCP\n"
	"                 baseline busy-polls too. Default for the latency tests; the\n"
	"                 server takes it from an iwarp-perf client\n"
	"  --no-poll      wait as blocking applications do (the loop thread receives)\n"
	"  --json         one JSON document on stdout instead of tables; no progress\n"
	"  --timeout s    limit for connecting and for each reply of the peer (default 10)\n"
	"  --loops N      run this process's contexts with N event loops (a loop group,\n"
	"                 1 to 64; default one per CPU it may use): the -q data\n"
	"                 connections are spread over them, round robin, on both\n"
	"                 sides. With --no-poll the loop threads move the data, so\n"
	"                 compare e.g. --loops 1 -q 2 with --loops 2 -q 4 for the\n"
	"                 scaling over cores\n"
	"  --threads      (bandwidth tests) one application thread per loop posts, polls\n"
	"                 and reposts for that loop's QPs only, with their own CQs, on\n"
	"                 both sides (the server takes it from an iwarp-perf client),\n"
	"                 instead of one thread for all of them; --json adds each\n"
	"                 thread's CPU time over the run\n"
	"  --pin          put loop i and the application thread of loop i (--threads) on\n"
	"                 the i-th CPU this process may use, so N loops use N cores\n"
	"  --sink         (with --server) a discard peer, not an iWARP stack: it answers\n"
	"                 the MPA exchange over raw sockets (RFC 5044/6581, CRC as the\n"
	"                 client asks; no markers), plays the server's part of the\n"
	"                 exchange for send and write bandwidth (-q any, one size, one\n"
	"                 direction; credits for send as each message arrives), parses\n"
	"                 and CRC-checks the first 64 messages of each data connection\n"
	"                 and then only counts octets (recv MSG_TRUNC, one thread,\n"
	"                 epoll), so that the client's sending is what is measured.\n"
	"                 Prints the messages and octets received (--json: a \"sink\"\n"
	"                 object) and exits 1 if a checked FPDU is bad or a stream\n"
	"                 ends inside a message\n"
	"  --dont_xchg_versions  as perftest's: skip the version, page and MTU exchange\n"
	"  --as-perftest  announce plain perftest 6.06, so an iwarp-perf peer acts as\n"
	"                 with perftest (each side then needs the same options)\n"
	"  -R             accepted for perftest's command lines (always rdma_cm here)\n"
	"  -F, -d dev     accepted and ignored, as perftest's (no CPU clock to check,\n"
	"                 no RDMA device: libiwarp runs over the TCP stack)\n"
	"  --churn N      N connect / one SEND each way / disconnect cycles in this process:\n"
	"                 descriptors, heap and RSS over the first and the last 10,000\n"
	"  --idle N       heap and RSS per idle connection, over N connection pairs (the\n"
	"                 descriptor limit is raised to the hard limit; N must fit under it)\n"
	"\n"
	"MB/sec is 2^20 bytes per second and Gb/sec 10^9 bits per second, as perftest.\n"
	"Latencies are half round trips in microseconds, as perftest; read_lat's are\n"
	"whole round trips (a Read is one), as ib_read_lat's.\n"
	"Exit status: 0 success, 1 failure after connecting, 2 usage error,\n"
	"3 could not listen or connect.\n";

const char *perf_test_name(enum perf_test t)
{
	static const char *const names[] = {"write",     "read",     "send",
					    "write_lat", "send_lat", "read_lat", "connect"};
	return names[t];
}

bool perf_is_lat(enum perf_test t)
{
	return t == PT_WRITE_LAT || t == PT_SEND_LAT || t == PT_READ_LAT;
}

/* Latency tests busy-poll unless told otherwise, as perftest's do. */
bool perf_polling(const struct perf_opts *o)
{
	return o->poll < 0 ? perf_is_lat(o->test) : o->poll > 0;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("iwarp-perf: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(" (iwarp-perf --help lists the options)\n", stderr);
	va_end(ap);
	return PX_USAGE;
}

/* A number with an optional k/m suffix (binary multiples). */
static int num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -1;
	if (*end == 'k' || *end == 'K')
		v *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1024 * 1024, end++;
	if (*end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int whole(const char *s, double lo, double hi, uint64_t *out)
{
	double v;
	if (num(s, lo, hi, &v) || v != floor(v))
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int test_of(const char *s, enum perf_test *t)
{
	char buf[16];
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *c = buf; *c; c++)
		if (*c == '-')
			*c = '_';
	for (int i = 0; i <= PT_CONNECT; i++)
		if (!strcmp(buf, perf_test_name((enum perf_test)i))) {
			*t = (enum perf_test)i;
			return 0;
		}
	return -1;
}

struct given {
	bool size, iters, dur, depth, rx, test, max, server, loopback;
};

enum { O_TEST = 256, O_CRC, O_MARKERS, O_TCP, O_IDLE, O_CHURN, O_JSON, O_LOOP, O_SERVER,
       O_MAX, O_TIMEOUT, O_NOXCHG, O_ASPT, O_POLL, O_NOPOLL, O_LOOPS, O_THREADS,
       O_PIN, O_SINK };

static int one_opt(int c, const char *arg, struct perf_opts *o, struct given *g)
{
	uint64_t u;
	double d;
	switch (c) {
	case O_TEST: g->test = true; return test_of(arg, &o->test) ? bad("unknown test '%s'", arg) : 0;
	case 's': g->size = true; return whole(arg, 1, PERF_MAX_SIZE, &o->size) ?
		bad("-s %s: a size from 1 to 8M", arg) : 0;
	case O_MAX: g->max = true; return whole(arg, 2, PERF_MAX_SIZE, &o->max_size) ?
		bad("--max-size %s: from 2 to 8M", arg) : 0;
	case 'a': o->sweep = true; return 0;
	case 'n': g->iters = true; return whole(arg, 5, 1e8, &o->iters) ?
		bad("-n %s: from 5 to 100000000 (perftest's limits)", arg) : 0;
	case 'D': g->dur = true; return num(arg, 0.01, 86400, &o->duration) ?
		bad("-D %s: seconds, more than 0", arg) : 0;
	case 't': g->depth = true;
		if (whole(arg, 1, PERF_MAX_DEPTH, &u))
			return bad("-t %s: from 1 to 8192", arg);
		o->tx_depth = (uint32_t)u;
		return 0;
	case 'r': g->rx = true;
		if (whole(arg, 1, 16384, &u))
			return bad("-r %s: from 1 to 16384", arg);
		o->rx_depth = (uint32_t)u;
		return 0;
	case 'q':
		if (whole(arg, 1, PERF_MAX_INFLIGHT, &u)) /* 64 but for connect: check() */
			return bad("-q %s: from 1 to 64 (1024 for --test connect)", arg);
		o->qps = (uint32_t)u;
		return 0;
	case 'o':
		if (whole(arg, 1, 128, &u))
			return bad("-o %s: from 1 to 128", arg);
		o->out_reads = (uint32_t)u;
		return 0;
	case 'p':
		if (whole(arg, 0, 65535, &u))
			return bad("-p %s: a port number", arg);
		o->port = (uint16_t)u;
		return 0;
	case 'b': o->bidir = true; return 0;
	case 'l':
		if (whole(arg, 1, PERF_MAX_POST_LIST, &u))
			return bad("-l %s: from 1 to 64", arg);
		o->post_list = (uint32_t)u;
		return 0;
	case 'R': return 0; /* perftest's rdma_cm switch: always on here */
	/* perftest's -F (do not fail on CPU frequency warnings) and -d (the
	 * RDMA device): nothing to do here, taken so that the same command
	 * line serves both ends. */
	case 'F': return 0;
	case 'd': return 0;
	case O_CRC:
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return bad("--crc %s: on or off", arg);
		o->crc = !strcmp(arg, "on");
		return 0;
	case O_MARKERS: o->markers = true; return 0;
	case O_TCP: o->tcp = true; return 0;
	case O_JSON: o->json = true; return 0;
	case O_NOXCHG: o->dont_xchg = true; return 0;
	case O_ASPT: o->as_perftest = true; return 0;
	case O_POLL: o->poll = 1; return 0;
	case O_NOPOLL: o->poll = 0; return 0;
	case O_IDLE:
		if (whole(arg, 1, 100000, &u))
			return bad("--idle %s: from 1 to 100000 connections", arg);
		o->idle = (int)u;
		return 0;
	case O_CHURN:
		if (whole(arg, 10, 1e8, &u))
			return bad("--churn %s: from 10 to 100000000 cycles", arg);
		o->churn = u;
		return 0;
	case O_LOOPS:
		if (whole(arg, 1, 64, &u))
			return bad("--loops %s: from 1 to 64", arg);
		o->loops = (uint32_t)u;
		return 0;
	case O_THREADS: o->threads = true; return 0;
	case O_PIN: o->pin = true; return 0;
	case O_SINK: o->sink = true; return 0;
	case O_TIMEOUT:
		if (num(arg, 0.1, 3600, &d))
			return bad("--timeout %s: seconds, 0.1 to 3600", arg);
		o->timeout = d;
		return 0;
	case O_LOOP: g->loopback = true; return 0;
	case O_SERVER: g->server = true; return 0;
	default: return bad("%s", "unknown option");
	}
}

/* perftest's defaults per test kind, for what was not given. */
static void defaults(struct perf_opts *o, const struct given *g)
{
	bool lat = perf_is_lat(o->test);
	if (!g->size)
		o->size = lat ? 2 : 65536;
	if (!g->iters && !g->dur && o->test == PT_CONNECT)
		o->duration = 2;
	else if (!g->iters && !g->dur)
		o->iters = lat ? 1000 : 5000;
	if (g->dur || o->duration > 0)
		o->iters = 0;
	if (!g->depth) /* --idle keeps the first cut's 32 */
		o->tx_depth = o->idle ? 32 : lat ? 1 : 128;
	if (!g->rx)
		o->rx_depth = 512;
	if (!g->max)
		o->max_size = PERF_MAX_SIZE;
	/* perftest's force_dependecies: no deeper than the count. */
	if (o->iters && o->tx_depth > o->iters)
		o->tx_depth = (uint32_t)o->iters;
}

static int check(const struct perf_opts *o, const struct given *g)
{
	if (g->iters && g->dur)
		return bad("%s", "-n and -D exclude each other");
	if (g->server + g->loopback + (o->server != NULL) > 1)
		return bad("%s", "--server, --loopback and an address exclude each other");
	if ((o->idle || o->churn) && (o->server || g->server))
		return bad("%s", "--idle and --churn run in this process only");
	if (o->idle && o->churn)
		return bad("%s", "--idle and --churn exclude each other");
	if (o->test != PT_CONNECT && o->qps > PERF_MAX_QPS)
		return bad("-q %u: from 1 to 64 (1024 for --test connect)", o->qps);
	if (o->test == PT_CONNECT && (o->bidir || o->sweep || g->size))
		return bad("%s", "--test connect takes no -b, -a or -s");
	if (perf_is_lat(o->test) && (o->qps > 1 || o->bidir))
		return bad("%s", "latency tests use one QP, one direction (no -q, -b)");
	if (o->sweep && g->dur)
		return bad("%s", "-a and -D exclude each other (as each size needs a count)");
	if (g->max && !o->sweep)
		return bad("%s", "--max-size goes with -a");
	if (o->threads && (perf_is_lat(o->test) || o->test == PT_CONNECT))
		return bad("%s", "--threads goes with the bandwidth tests");
	if (o->sink && !g->server)
		return bad("%s", "--sink goes with --server");
	if (o->test == PT_SEND && perf_rx_depth(o) < 3)
		return bad("%s", "send bandwidth needs -r of at least 3 (credits every r/3)");
	return 0;
}

int perf_parse(int argc, char **argv, struct perf_opts *o)
{
	static const struct option lo[] = {
		{"test", required_argument, NULL, O_TEST},
		{"crc", required_argument, NULL, O_CRC},
		{"markers", no_argument, NULL, O_MARKERS},
		{"tcp", no_argument, NULL, O_TCP},
		{"idle", required_argument, NULL, O_IDLE},
		{"churn", required_argument, NULL, O_CHURN},
		{"json", no_argument, NULL, O_JSON},
		{"loopback", no_argument, NULL, O_LOOP},
		{"server", no_argument, NULL, O_SERVER},
		{"max-size", required_argument, NULL, O_MAX},
		{"timeout", required_argument, NULL, O_TIMEOUT},
		{"dont_xchg_versions", no_argument, NULL, O_NOXCHG},
		{"dont-xchg-versions", no_argument, NULL, O_NOXCHG},
		{"as-perftest", no_argument, NULL, O_ASPT},
		{"poll", no_argument, NULL, O_POLL},
		{"no-poll", no_argument, NULL, O_NOPOLL},
		{"loops", required_argument, NULL, O_LOOPS},
		{"threads", no_argument, NULL, O_THREADS},
		{"pin", no_argument, NULL, O_PIN},
		{"sink", no_argument, NULL, O_SINK},
		{"post_list", required_argument, NULL, 'l'},
		{"post-list", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*o = (struct perf_opts){.test = PT_WRITE, .port = PERF_DEF_PORT, .qps = 1,
				.out_reads = 128, .crc = true, .timeout = 10, .poll = -1};
	struct given g = {0};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:an:D:t:r:q:o:bl:p:RFd:h", lo, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return -1;
		}
		if (c == '?' || c == ':') {
			const char *what = optopt ? (char[]){'-', (char)optopt, 0} : argv[optind - 1];
			return bad("option %s is unknown or lacks its value", what);
		}
		int rc = one_opt(c, optarg, o, &g);
		if (rc)
			return rc;
	}
	if (optind < argc - 1)
		return bad("unexpected argument '%s'", argv[optind + 1]);
	if (optind == argc - 1)
		o->server = argv[optind];
	int rc = check(o, &g);
	if (rc)
		return rc;
	o->role = o->churn ? ROLE_CHURN : o->idle ? ROLE_IDLE : o->server ? ROLE_CLIENT : g.server ? ROLE_SERVER
									: ROLE_LOOPBACK;
	defaults(o, &g);
	return 0;
}

/* perftest: rx_depth is 512 by default and never more than the count. */
uint32_t perf_rx_depth(const struct perf_opts *o)
{
	uint32_t r = o->rx_depth ? o->rx_depth : 512;
	if (o->iters && r > o->iters)
		r = (uint32_t)o->iters;
	return r;
}

int perf_sizes(const struct perf_opts *o, uint64_t *sizes, int max)
{
	if (!o->sweep) {
		sizes[0] = o->size;
		return 1;
	}
	int n = 0;
	for (int i = 1; i < 24 && n < max && (1ull << i) <= o->max_size; i++)
		sizes[n++] = 1ull << i;
	return n;
}
