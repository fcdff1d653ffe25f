/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for iwarp-replay's decoder as `iwarp-replay FILE` runs
 * it: libpcap reads a pcap or pcapng file (captures come from anywhere),
 * then the link layers, IP and TCP headers (link.c, ip.c), each
 * direction's reassembly (reasm.c), the connection table and roles
 * (conn.c), the MPA frames and the FPDU and ULPDU decoders (stream.c,
 * mpa.c, fpdu.c, ulpdu.c), and the reports (emit.c, stats.c, print.c or
 * json.c, summary.c). The reports go to /dev/null.
 *
 * Input: one options octet, then the capture file.
 *   bit 0 --json, 1 --check, 2 --quiet, 3 no summary, 4-5 --crc (0 as
 *   found, 1 on, 2 off), 6 siw TERMINATE layout both ways, 7 --conn 1
 *
 * Asserted: every frame is counted once (TCP segment, not IP, not TCP,
 * fragment or malformed); the decode ends (libFuzzer's -timeout catches a
 * hang); ASan/LSan/UBSan do the rest.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>

#include "capture.h"
#include "conn.h"
#include "emit.h"
#include "record.h"
#include "reltime.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Where the reports go: formatted as always, then dropped. */
static ssize_t discard(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	(void)buf;
	return (ssize_t)n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const cookie_io_functions_t io = {.write = discard};

	(void)argc;
	(void)argv;
	/* libFuzzer reports on stderr; the decoder's reports are not needed.
	 * Not /dev/null: the summary's fflush made a write() per input. */
	stdout = fopencookie(NULL, "w", io);
	if (!stdout)
		abort();
	/* No stream lock (one thread here; taking it for every putchar of
	 * the reports was 5% of the target's time) and large blocks. */
	__fsetlocking(stdout, FSETLOCKING_BYCALLER);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	return 0;
}

static void options(struct rp_opts *o, uint8_t b)
{
	static const int crc[4] = {RP_UNSET, RP_ON, RP_OFF, RP_UNSET};

	memset(o, 0, sizeof(*o));
	o->path = "fuzz";
	o->json = b & 1;
	o->check = b & 2;
	o->quiet = b & 4;
	o->summary = !(b & 8);
	o->crc = crc[(b >> 4) & 3];
	o->markers[0] = o->markers[1] = RP_UNSET;
	o->siw[0] = o->siw[1] = b & 64;
	o->conn = b & 128 ? 1 : 0;
	o->responder_port = -1;
	o->ird = o->ord = o->rtr = -1;
	o->pd_len = -1;
}

static void decode(struct rp_capture *cap)
{
	struct rp_pkt p;

	while (rp_capture_next(cap, &p) == 1) {
		rp_reltime_t0(p.ts_ns);
		rp_conns_packet(&p);
	}
	rp_conns_finish();
	const struct rp_capture_stats *s = rp_capture_stats(cap);
	CHECK(s->frames == s->tcp + s->not_ip + s->not_tcp + s->fragments + s->malformed);
	rp_emit_stats()->cap = *s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rp_opts o;
	char err[512];

	if (size < 1)
		return 0;
	options(&o, data[0]);
	/* The stream's buffer, else malloc'd at its first read and freed at
	 * pcap_close per input (ASan: 3% of the target's time, perf). */
	static char inbuf[BUFSIZ];
	FILE *fp = fmemopen((void *)(data + 1), size - 1, "rb");
	if (!fp)
		return 0; /* an empty file: fmemopen refuses size 0 */
	setvbuf(fp, inbuf, _IOFBF, sizeof(inbuf));
	rp_emit_init(&o);
	rp_conns_init(&o);
	rp_record_init(false, 0);
	struct rp_capture *cap = rp_capture_fopen(fp, "fuzz", err, sizeof(err));
	if (cap) {
		decode(cap);
		rp_emit_summary();
		if (o.check)
			rp_emit_check_status();
		rp_capture_close(cap);
	}
	rp_conns_free();
	rp_record_free();
	return 0;
}
