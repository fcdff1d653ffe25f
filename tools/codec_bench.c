/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-codec-bench: throughput of the FPDU encoder and stream decoder
 * against ISA-L's raw CRC32c over the same octets, measured in the same run.
 *
 * The CRC is the one pass over the data that neither codec can avoid, so
 * raw crc32_iscsi is the ceiling; the ratios show what framing, marker
 * handling and header parsing cost on top of it. This is a program that
 * prints figures, not a test: it always exits 0 once it has measured.
 */
#include <errno.h>
#include <getopt.h>
#include <isa-l/crc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iwarp/wire.h"

#define MAX_SIZES 16
#define TRIALS 3
/* Payload bytes each cell cycles through: small enough to stay in L2, so
 * that the figures are about the codecs rather than memory bandwidth. */
#define WORKSET_BYTES (1u << 20)
#define IOV_CAP IW_FPDU_IOV_NEED(1, IW_FPDU_MARKERS_MAX)

struct opts {
	unsigned sizes[MAX_SIZES];
	int nsizes;
	double seconds;
	bool markers[2];
	int nmarkers;
	bool json;
};

/* One (ULPDU size, markers) cell: its data and its results. */
struct cell {
	unsigned ulpdu;
	bool markers;
	int nfpdu;
	size_t payload_len;   /* per FPDU */
	uint8_t *payload;     /* nfpdu * payload_len random octets */
	uint8_t *wire;        /* the same FPDUs encoded from stream offset 0 */
	size_t *wire_off;     /* FPDU i starts at wire + wire_off[i] */
	size_t wire_len;
	double enc_gbs, dec_gbs, raw_gbs;
};

enum pass_kind { PASS_ENCODE, PASS_DECODE, PASS_RAW };

/* Results are folded into this so the compiler cannot drop the work. */
static volatile uint64_t sink;

static uint8_t hdr[IW_DDP_TAGGED_HDR_LEN];

static void die(const char *what)
{
	fprintf(stderr, "iwarp-codec-bench: %s\n", what);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		p[i] = (uint8_t)(s >> 24);
	}
}

/* An RDMA Write header: the simplest header, so the payload dominates. */
static void build_hdr(void)
{
	struct iw_ddp_hdr h = {
		.ctrl = iw_ddp_ctrl(true, true),
		.rdmap_ctrl = iw_rdmap_ctrl(IW_OP_WRITE),
		.stag = 0x1234,
		.to = 0x100000,
	};

	if (iw_ddp_hdr_build(hdr, sizeof(hdr), &h) != IW_DDP_TAGGED_HDR_LEN)
		die("iw_ddp_hdr_build failed");
}

static int encode_one(struct iw_fpdu_tx *tx, struct iw_fpdu_out *out, struct iovec *iov,
		      const struct cell *c, int i)
{
	struct iovec pl = {
		.iov_base = c->payload + (size_t)i * c->payload_len,
		.iov_len = c->payload_len,
	};

	out->iov = iov;
	out->iov_cap = IOV_CAP;
	return iw_fpdu_encode(tx, out, hdr, sizeof(hdr), &pl, 1);
}

/* Encode every FPDU once from offset 0 and lay the wire octets out flat:
 * the decoder's input, built before any timing. */
static void flatten(struct cell *c)
{
	static struct iw_fpdu_out out;
	struct iovec iov[IOV_CAP];
	struct iw_fpdu_tx tx;
	size_t cap = 0, off = 0;

	for (int i = 0; i < c->nfpdu; i++)
		cap += iw_fpdu_wire_len((uint32_t)cap, c->ulpdu, c->markers);
	c->wire = xmalloc(cap);
	c->wire_off = xmalloc((size_t)(c->nfpdu + 1) * sizeof(size_t));
	iw_fpdu_tx_init(&tx, true, c->markers, 0);
	for (int i = 0; i < c->nfpdu; i++) {
		if (encode_one(&tx, &out, iov, c, i))
			die("iw_fpdu_encode failed");
		c->wire_off[i] = off;
		for (int k = 0; k < out.iovcnt; k++) {
			if (off + iov[k].iov_len > cap)
				die("encoder wrote more than iw_fpdu_wire_len");
			memcpy(c->wire + off, iov[k].iov_base, iov[k].iov_len);
			off += iov[k].iov_len;
		}
	}
	c->wire_off[c->nfpdu] = off;
	c->wire_len = off;
}

static void cell_init(struct cell *c, unsigned ulpdu, bool markers)
{
	memset(c, 0, sizeof(*c));
	c->ulpdu = ulpdu;
	c->markers = markers;
	c->payload_len = ulpdu - sizeof(hdr);
	c->nfpdu = (int)(WORKSET_BYTES / ulpdu);
	if (c->nfpdu < 8)
		c->nfpdu = 8;
	c->payload = xmalloc((size_t)c->nfpdu * c->payload_len);
	fill_random(c->payload, (size_t)c->nfpdu * c->payload_len, 0x9e3779b97f4a7c15ull ^ ulpdu);
	flatten(c);
}

static void cell_free(struct cell *c)
{
	free(c->payload);
	free(c->wire);
	free(c->wire_off);
}

static size_t pass_encode(const struct cell *c, uint64_t *acc)
{
	static struct iw_fpdu_out out;
	static struct iw_fpdu_tx tx;
	struct iovec iov[IOV_CAP];
	size_t bytes = 0;

	/* The stream offset runs on across passes, as on a connection, so
	 * markers land at changing FPDU offsets. */
	tx.crc = true;
	tx.markers = c->markers;
	for (int i = 0; i < c->nfpdu; i++) {
		if (encode_one(&tx, &out, iov, c, i))
			die("iw_fpdu_encode failed");
		*acc += out.crc;
		bytes += out.wire_len;
	}
	return bytes;
}

static size_t pass_decode(const struct cell *c, uint64_t *acc)
{
	static struct iw_fpdu_rx rx;
	const uint8_t *in = c->wire;
	size_t left = c->wire_len;
	int ends = 0;

	iw_fpdu_rx_init(&rx, true, c->markers, 0, 0, 0);
	while (left) {
		struct iw_rx_event ev;
		size_t used = 0;
		int rc = iw_fpdu_rx_next(&rx, &ev, in, left, &used);

		if (rc < 0)
			die(iw_wire_err_str(rx.err));
		in += used;
		left -= used;
		if (rc == 1 && ev.kind == IW_RX_PAYLOAD)
			*acc += ev.len + ev.data[0];
		else if (rc == 1 && ev.kind == IW_RX_SEG_END)
			*acc += ev.seg->crc, ends++;
	}
	if (ends != c->nfpdu)
		die("decoder did not return every FPDU");
	return c->wire_len;
}

static size_t pass_raw(const struct cell *c, uint64_t *acc)
{
	/* Same octets, same per-FPDU pieces as the decoder gets. */
	for (int i = 0; i < c->nfpdu; i++) {
		size_t off = c->wire_off[i];
		int n = (int)(c->wire_off[i + 1] - off);

		*acc += crc32_iscsi(c->wire + off, n, IW_CRC32C_INIT);
	}
	return c->wire_len;
}

static size_t run_pass(const struct cell *c, enum pass_kind k, uint64_t *acc)
{
	switch (k) {
	case PASS_ENCODE:
		return pass_encode(c, acc);
	case PASS_DECODE:
		return pass_decode(c, acc);
	default:
		return pass_raw(c, acc);
	}
}

/* GB/s of the best of TRIALS timed runs, each about `seconds` long, after
 * a warm-up pass that also sizes the runs. */
static double measure(const struct cell *c, enum pass_kind k, double seconds)
{
	uint64_t acc = 0;
	double t0 = now(), best = 0;
	size_t bytes = run_pass(c, k, &acc);
	double once = now() - t0;
	long reps = once > 0 ? (long)(seconds / once) + 1 : 1000;

	for (int t = 0; t < TRIALS; t++) {
		double start = now(), dt;

		for (long r = 0; r < reps; r++)
			run_pass(c, k, &acc);
		dt = now() - start;
		if (dt > 0 && (best == 0 || dt < best))
			best = dt;
	}
	sink += acc;
	return best > 0 ? (double)bytes * (double)reps / best / 1e9 : 0;
}

static bool target_met(const struct cell *cells, int n, bool *measured)
{
	bool met = true;

	*measured = false;
	for (int i = 0; i < n; i++) {
		if (cells[i].markers || cells[i].ulpdu < 4096)
			continue;
		*measured = true;
		if (cells[i].dec_gbs < 0.5 * cells[i].raw_gbs)
			met = false;
	}
	return met && *measured;
}

static void print_table(const struct cell *cells, int n, const struct opts *o)
{
	printf("iwarp-codec-bench: CRC on, RDMA Write FPDUs, ~%u KiB of payload per cell,\n"
	       "best of %d runs of ~%.2f s; GB/s = 1e9 wire octets per second\n\n",
	       WORKSET_BYTES >> 10, TRIALS, o->seconds);
	printf("%7s %7s %8s %9s %9s %9s %8s %8s\n", "ULPDU", "markers", "FPDUs", "encode",
	       "decode", "raw CRC", "enc/raw", "dec/raw");
	for (int i = 0; i < n; i++) {
		const struct cell *c = &cells[i];

		printf("%7u %7s %8d %9.2f %9.2f %9.2f %8.2f %8.2f\n", c->ulpdu,
		       c->markers ? "on" : "off", c->nfpdu, c->enc_gbs, c->dec_gbs, c->raw_gbs,
		       c->enc_gbs / c->raw_gbs, c->dec_gbs / c->raw_gbs);
	}
}

static void print_json(const struct cell *cells, int n, const struct opts *o, bool measured,
		       bool met)
{
	printf("{\"seconds\": %.3f, \"trials\": %d, \"crc\": true, \"results\": [", o->seconds,
	       TRIALS);
	for (int i = 0; i < n; i++) {
		const struct cell *c = &cells[i];

		printf("%s\n  {\"ulpdu\": %u, \"markers\": %s, \"fpdus\": %d, \"wire_bytes\": %zu, "
		       "\"encode_gbps\": %.3f, \"decode_gbps\": %.3f, \"raw_crc_gbps\": %.3f, "
		       "\"encode_vs_raw\": %.3f, \"decode_vs_raw\": %.3f}",
		       i ? "," : "", c->ulpdu, c->markers ? "true" : "false", c->nfpdu,
		       c->wire_len, c->enc_gbs, c->dec_gbs, c->raw_gbs, c->enc_gbs / c->raw_gbs,
		       c->dec_gbs / c->raw_gbs);
	}
	printf("\n ],\n \"target\": \"decode >= 0.5x raw CRC for >= 4 KiB FPDUs, markers off\",\n"
	       " \"target_met\": %s,\n \"checksum\": %llu}\n",
	       measured ? (met ? "true" : "false") : "null", (unsigned long long)sink);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: iwarp-codec-bench [--sizes N,N,...] [--seconds S] [--markers on|off|both]\n"
		"                         [--json] [--help]\n"
		"Measures FPDU encode (iw_fpdu_encode) and decode (iw_fpdu_rx_next) throughput\n"
		"with CRC on against raw ISA-L crc32_iscsi over the same octets.\n"
		"  --sizes    ULPDU lengths in octets, %d..%d (default 1024,4096,16384,65000)\n"
		"  --seconds  length of each timed run (default 0.2); best of %d is reported\n"
		"  --markers  MPA markers off, on or both (default both)\n"
		"  --json     print the results as JSON instead of a table\n",
		IW_DDP_TAGGED_HDR_LEN + 1, IW_MPA_ULPDU_MAX, TRIALS);
}

static void parse_sizes(struct opts *o, const char *arg)
{
	char *end;

	o->nsizes = 0;
	for (const char *p = arg; *p;) {
		unsigned long v = strtoul(p, &end, 0);

		if (end == p || v <= IW_DDP_TAGGED_HDR_LEN || v > IW_MPA_ULPDU_MAX ||
		    o->nsizes == MAX_SIZES)
			die("--sizes: bad size list (see --help)");
		o->sizes[o->nsizes++] = (unsigned)v;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			die("--sizes: bad size list (see --help)");
	}
	if (!o->nsizes)
		die("--sizes: empty list");
}

static void parse_markers(struct opts *o, const char *arg)
{
	o->nmarkers = 0;
	if (!strcmp(arg, "off") || !strcmp(arg, "both"))
		o->markers[o->nmarkers++] = false;
	if (!strcmp(arg, "on") || !strcmp(arg, "both"))
		o->markers[o->nmarkers++] = true;
	if (!o->nmarkers)
		die("--markers: expected on, off or both");
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "markers", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	parse_sizes(o, "1024,4096,16384,65000");
	parse_markers(o, "both");
	o->seconds = 0.2;
	o->json = false;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			parse_sizes(o, optarg);
			break;
		case 't':
			o->seconds = strtod(optarg, NULL);
			if (!(o->seconds > 0 && o->seconds <= 60))
				die("--seconds: expected a number in (0, 60]");
			break;
		case 'm':
			parse_markers(o, optarg);
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct cell cells[MAX_SIZES * 2];
	struct opts o;
	bool measured, met;
	int n = 0;

	parse_opts(&o, argc, argv);
	build_hdr();
	for (int s = 0; s < o.nsizes; s++) {
		for (int m = 0; m < o.nmarkers; m++) {
			struct cell *c = &cells[n++];

			cell_init(c, o.sizes[s], o.markers[m]);
			c->enc_gbs = measure(c, PASS_ENCODE, o.seconds);
			c->dec_gbs = measure(c, PASS_DECODE, o.seconds);
			c->raw_gbs = measure(c, PASS_RAW, o.seconds);
			cell_free(c);
		}
	}
	met = target_met(cells, n, &measured);
	if (o.json) {
		print_json(cells, n, &o, measured, met);
		return 0;
	}
	print_table(cells, n, &o);
	printf("\ntarget: decode >= 0.5x raw CRC for >= 4 KiB FPDUs, markers off: %s\n",
	       measured ? (met ? "met" : "NOT met") : "not measured (no such cell)");
	printf("checksum %llu\n", (unsigned long long)sink);
	return 0;
}
