/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the pcap writer (lib/diag/pcap_writer.c) as a round
 * trip: one TCP connection written to memory with the writer's calls in
 * any order (data either way in any amounts, FIN, RST, notes, a byte cap),
 * then read back with libpcap and tests/trace_read.c, which checks the
 * Ethernet/IP/TCP framing and checksums independently of the writer.
 *
 * Input: a 13-octet header, then operations.
 *   0      bit 0 IPv6, 1 nanosecond timestamps, 2 a byte cap, 3 no
 *          handshake (the connection picked up mid-stream)
 *   1..2   MSS (big-endian; 0: the default)
 *   3..10  initial sequence numbers of side A and B
 *   11..12 the byte cap / 16 (when bit 2)
 *   then per operation: one octet (bits 0-1: 0 data, 1 FIN, 2 RST, 3 a
 *   note; bit 2: from side B) and for data and notes a length octet
 *   (data: times 37) and that many octets of the input, wrapping around;
 *   data operations once the file holds RECORDS_MAX records are skipped.
 *
 * Asserted, when the writer reported no error and the handshake was
 * written: the reader finds no framing or checksum problem, exactly the
 * records the writer counted, one connection with the handshake, each
 * side's stream exactly the octets given (in order, no gap, none twice),
 * a FIN where one was written, every ACK equal to what the other side
 * had sent, and the last note's text. With a cap, the file is never
 * longer than it and still reads back without a problem.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/pcap_writer.h"
#include "trace_read.h"
#include "fuzz.h"

#define HDR_LEN 13
#define STREAM_MAX (1u << 20)
/* The frames an input may write: a data operation is cut to the segments
 * left and skipped once none are. With a small MSS one operation wrote
 * thousands of frames (up to 16 k per input, 1 input in 20 over 1 k), and
 * those inputs took most of the target's time in checksums and in the
 * memory stream's growth. */
#define RECORDS_MAX 256

struct model {
	uint8_t *sent[2];
	size_t len[2];
	bool fin[2], rst, wrote_note;
	char note[4 + IW_PCAPW_NOTE_MAX + 1]; /* as the reader shows it */
};

FUZZ_HARNESS static uint32_t be(const uint8_t *p, int n)
{
	uint32_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

FUZZ_HARNESS static void endpoints(bool v6, struct sockaddr_storage *a, struct sockaddr_storage *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	if (v6) {
		struct sockaddr_in6 *x = (void *)a, *y = (void *)b;
		x->sin6_family = y->sin6_family = AF_INET6;
		x->sin6_addr = in6addr_loopback;
		y->sin6_addr = in6addr_loopback;
		x->sin6_port = htons(40000);
		y->sin6_port = htons(50000);
	} else {
		struct sockaddr_in *x = (void *)a, *y = (void *)b;
		x->sin_family = y->sin_family = AF_INET;
		x->sin_addr.s_addr = htonl(0x7F000001u);
		y->sin_addr.s_addr = htonl(0x7F000001u);
		x->sin_port = htons(40000);
		y->sin_port = htons(50000);
	}
}

/* n octets of the operations' input from *at on, wrapping around. */
FUZZ_HARNESS static void take(uint8_t *out, size_t n, const uint8_t *ops, size_t len, size_t *at)
{
	size_t from = len ? *at % len : 0;

	*at += n;
	if (!len) {
		memset(out, 0, n);
		return;
	}
	while (n) {
		size_t k = len - from < n ? len - from : n;

		memcpy(out, ops + from, k);
		out += k;
		n -= k;
		from = 0;
	}
}

/* n cut to the octets of the segments the frame budget has left. */
FUZZ_HARNESS static size_t frames_cut(const struct iw_pcapw_flow *f, size_t n)
{
	uint64_t left = (RECORDS_MAX - f->w->records) * f->mss;

	return n < left ? n : (size_t)left;
}

FUZZ_HARNESS static void data_op(struct iw_pcapw_flow *f, struct model *m, int s, size_t n, uint64_t ts,
		    const uint8_t *ops, size_t len, size_t *at)
{
	static uint8_t buf[255 * 37];
	take(buf, n, ops, len, at);
	if (f->w->records >= RECORDS_MAX)
		return; /* enough frames: the rest costs time and finds nothing */
	n = frames_cut(f, n);
	struct iovec v[2] = {{buf, n / 3}, {buf + n / 3, n - n / 3}};
	int rc = iw_pcapw_data(f, (enum iw_pcapw_dir)s, v, 2, ts);
	if (rc == 0 && m->len[s] + n <= STREAM_MAX) {
		memcpy(m->sent[s] + m->len[s], buf, n);
		m->len[s] += n;
	}
	CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG);
	CHECK((rc == -EINVAL) == f->ep[s].fin);
}

FUZZ_HARNESS static void note_op(struct iw_pcapw *w, struct model *m, size_t n, uint64_t ts,
		    const uint8_t *ops, size_t len, size_t *at)
{
	char text[256];
	take((uint8_t *)text, n, ops, len, at);
	for (size_t i = 0; i < n; i++)
		text[i] = (char)(' ' + (uint8_t)text[i] % 95); /* printable */
	text[n] = 0;
	if (iw_pcapw_note(w, text, ts) == 0) {
		m->wrote_note = true;
		/* Behind the syslog priority, cut at IW_PCAPW_NOTE_MAX. */
		snprintf(m->note, sizeof(m->note), "<12>%.*s", IW_PCAPW_NOTE_MAX, text);
	}
}

/* Run the operations, keeping in m what the file should show. */
FUZZ_HARNESS static void run(struct iw_pcapw *w, struct iw_pcapw_flow *f, struct model *m, const uint8_t *ops,
		size_t len)
{
	size_t at = 0;
	uint64_t ts = 1700000000000000000ull;

	while (at < len) {
		uint8_t op = ops[at++];
		int s = op & 4 ? 1 : 0;
		size_t n = 0;

		ts += 1000 + op;
		if ((op & 3) == 0 || (op & 3) == 3)
			n = at < len ? ops[at++] : 0;
		switch (op & 3) {
		case 0:
			data_op(f, m, s, n * 37, ts, ops, len, &at);
			break;
		case 1:
			if (iw_pcapw_fin(f, (enum iw_pcapw_dir)s, ts) == 0)
				m->fin[s] = true;
			break;
		case 2:
			if (iw_pcapw_rst(f, (enum iw_pcapw_dir)s, ts) == 0)
				m->rst = true;
			break;
		default:
			note_op(w, m, n, ts, ops, len, &at);
			break;
		}
	}
}

FUZZ_HARNESS static void check_back(const struct iw_pcapw *w, const struct model *m, char *buf, size_t blen,
		       bool handshake)
{
	static struct rt_capture cap;
	FILE *in = fmemopen(buf, blen, "rb");
	CHECK(in);
	int rc = rt_read_fp(&cap, in);
	CHECK(rc == 0);
	/* Mid-stream segments have no SYN: the reader counts that. */
	if (!handshake) {
		rt_free(&cap);
		return;
	}
	if (w->err) {
		/* Capped: whatever is in the file still reads cleanly. */
		CHECK(w->err == -EFBIG && w->written <= w->byte_cap);
		CHECK(cap.problems == 0);
		rt_free(&cap);
		return;
	}
	CHECK(cap.problems == 0);
	CHECK(cap.records == w->records);
	CHECK(cap.num_conns == 1);
	const struct rt_conn *c = &cap.conn[0];
	CHECK(c->synack && c->ack && c->bad_acks == 0);
	CHECK(c->rst == m->rst);
	for (int s = 0; s < 2; s++) {
		CHECK(c->dir[s].gaps == 0 && c->dir[s].backs == 0);
		CHECK(c->dir[s].len == m->len[s]);
		CHECK(!m->len[s] || !memcmp(c->dir[s].data, m->sent[s], m->len[s]));
		CHECK(c->dir[s].fin == m->fin[s]);
	}
	if (m->wrote_note)
		CHECK(!strcmp(cap.note, m->note));
	rt_free(&cap);
}

FUZZ_HARNESS int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	static uint8_t sent[2][STREAM_MAX];
	struct sockaddr_storage a, b;
	struct iw_pcapw w;
	struct iw_pcapw_flow f;
	char *buf = NULL;
	size_t blen = 0;

	if (size < HDR_LEN)
		return 0;
	memset(&m, 0, sizeof(m));
	m.sent[0] = sent[0];
	m.sent[1] = sent[1];
	bool v6 = data[0] & 1, handshake = !(data[0] & 8);
	uint64_t cap = data[0] & 4 ? 16 * (uint64_t)be(data + 11, 2) : 0;
	FILE *out = open_memstream(&buf, &blen);
	CHECK(out);
	memset(&w, 0, sizeof(w));
	w.fp = out;
	int rc = iw_pcapw_open(&w, out, data[0] & 2 ? IW_PCAPW_NSEC : 0, cap);
	endpoints(v6, &a, &b);
	uint32_t mss = be(data + 1, 2);
	bool flowed = false;
	if (rc == 0) {
		int frc = iw_pcapw_flow_init(&f, &w, (void *)&a, (void *)&b, be(data + 3, 4),
					     be(data + 7, 4), mss);
		CHECK(frc == (mss > IW_PCAPW_MAX_MSS ? -EINVAL : 0));
		flowed = frc == 0;
		if (flowed && (!handshake || iw_pcapw_handshake(&f, 1) == 0))
			run(&w, &f, &m, data + HDR_LEN, size - HDR_LEN);
	}
	int crc = iw_pcapw_close(&w);
	CHECK(fclose(out) == 0);
	CHECK(crc == w.err);
	if (w.written)
		CHECK(w.written == blen);
	if (flowed)
		check_back(&w, &m, buf, blen, handshake);
	free(buf);
	return 0;
}
