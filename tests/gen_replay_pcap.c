/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gen_replay_pcap SCENARIO OUT.pcap
 *
 * Test captures for iwarp-replay (tests/replay.sh), built with the public
 * wire.h codecs and written by the internal pcap writer (Ethernet, one
 * connection). tests/replay_pcapmod.py then derives the transport-level
 * variants (reordering, loss, other link types, pcapng) from these.
 *
 *   client     what tests/replay_peer's server expects from an initiator:
 *              RTR, Send "hello replay", a 3000-octet Write to STag 0x1000
 *              TO 0x10000, a Read Request of 100 octets of it (answered),
 *              Send "done". Replayed with --map-stag/--to-offset.
 *   server     a responder answering Send "hi" with Send "welcome" (for
 *              --replay responder against replay_peer's client)
 *   markers    markers both ways (M in both frames), CRC on, FPDUs of many
 *              sizes so that markers fall in every field, leading ones too
 *   markers-ws the same, except that no FPDU ends where a marker is due:
 *              Wireshark 4.0 counts such a marker into the FPDU before it
 *              (RFC 5044 and our codecs: it leads the next one) and stops
 *              dissecting the stream, so this is the one compared with tshark
 *   smallmss   MSS 200 and FPDUs written three at a time: FPDUs span
 *              segments and segments hold several FPDUs
 *   midstream  no SYN, no MPA frames; the initiator's stream starts at
 *              stream offset 1000 with markers (decode needs --crc on
 *              --markers initiator --stream-offset initiator:1000)
 *   errors     a bad DDP version, an unknown opcode, a wrong marker
 *              FPDUPTR, a bad CRC, and a FIN inside an FPDU
 *   crcoff     C in neither frame: CRC fields are zero
 *   siwterm    TERMINATEs in siw's bit layout (for --peer-siw)
 *   reject     an MPA Reply with R set, then both FINs
 *
 * Exit status 0, or 2 on a usage or write error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"
#include "diag/pcap_writer.h"

#define TS_START 1700000000000000000ull
#define TS_STEP 10000
#define SEG_MAX 1400 /* payload octets per DDP segment */
#define IOV_CAP IW_FPDU_IOV_NEED(1, IW_FPDU_MARKERS_MAX)

enum { A = IW_PCAPW_A2B, B = IW_PCAPW_B2A };

struct gen {
	struct iw_pcapw w;
	struct iw_pcapw_flow f;
	struct iw_fpdu_tx tx[2];
	uint32_t msn[2][4];
	uint64_t ts;
	/* FPDUs are collected here and written together by flush(). */
	uint8_t batch[1 << 16];
	size_t batch_len;
	int batch_dir;
	int batch_max; /* FPDUs per write; 1: one FPDU per write */
	int batch_n;
	/* Never end an FPDU right before a marker: Wireshark 4.0 takes such a
	 * marker into the FPDU before it and loses the stream (README of the
	 * test: markers-ws is the capture compared with tshark). */
	bool avoid_end_marker;
};

static uint8_t pattern[8192];

static void __attribute__((noreturn)) die(const char *what, int err)
{
	fprintf(stderr, "gen_replay_pcap: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(2);
}

static void flush(struct gen *g)
{
	struct iovec v = {g->batch, g->batch_len};
	int rc;

	if (!g->batch_len)
		return;
	rc = iw_pcapw_data(&g->f, (enum iw_pcapw_dir)g->batch_dir, &v, 1, g->ts);
	if (rc)
		die("pcap data", rc);
	g->ts += TS_STEP;
	g->batch_len = 0;
	g->batch_n = 0;
}

static void wire(struct gen *g, int dir, const uint8_t *p, size_t n)
{
	if (g->batch_len && (g->batch_dir != dir || g->batch_len + n > sizeof(g->batch)))
		flush(g);
	g->batch_dir = dir;
	memcpy(g->batch + g->batch_len, p, n);
	g->batch_len += n;
	if (++g->batch_n >= g->batch_max)
		flush(g);
}

/* ------------------------------------------------------------ connection */

static void begin(struct gen *g, const char *path, uint32_t mss, bool handshake)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(40001)};
	struct sockaddr_in b = {.sin_family = AF_INET, .sin_port = htons(41001)};
	FILE *fp = fopen(path, "wb");
	int rc;

	memset(g, 0, sizeof(*g));
	g->ts = TS_START;
	g->batch_max = 1;
	if (!fp)
		die(path, errno);
	inet_pton(AF_INET, "198.51.100.1", &a.sin_addr);
	inet_pton(AF_INET, "198.51.100.2", &b.sin_addr);
	rc = iw_pcapw_open(&g->w, fp, IW_PCAPW_NSEC, 0);
	if (!rc)
		rc = iw_pcapw_flow_init(&g->f, &g->w, (struct sockaddr *)&a, (struct sockaddr *)&b,
					0x11110000u, 0x22220000u, mss);
	if (!rc && handshake)
		rc = iw_pcapw_handshake(&g->f, g->ts);
	if (rc)
		die("pcap open", rc);
	g->ts += TS_STEP;
	for (int d = 0; d < 2; d++)
		for (int q = 0; q < 4; q++)
			g->msn[d][q] = 1;
}

static void end(struct gen *g, bool fin)
{
	int rc = 0;

	flush(g);
	if (fin) {
		rc = iw_pcapw_fin(&g->f, IW_PCAPW_A2B, g->ts);
		if (!rc)
			rc = iw_pcapw_fin(&g->f, IW_PCAPW_B2A, g->ts + TS_STEP);
	}
	if (rc || (rc = iw_pcapw_close(&g->w)) || fclose(g->w.fp))
		die("closing", rc ? rc : EIO);
}

static void mpa(struct gen *g, int dir, const struct iw_mpa_frame *m)
{
	uint8_t buf[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	int n = iw_mpa_frame_build(buf, sizeof(buf), m, 0);

	if (n < 0)
		die("iw_mpa_frame_build", n);
	flush(g);
	wire(g, dir, buf, (size_t)n);
	flush(g);
}

/* Request and Reply; crc and markers as asked; rev 2 offers and picks the
 * WRITE RTR. */
static void handshake(struct gen *g, uint8_t rev, bool crc, bool m_req, bool m_rep, bool reject)
{
	static const uint8_t pd[] = "replay";
	struct iw_mpa_frame req = {.kind = IW_MPA_REQUEST, .rev = rev, .pd = pd, .pd_len = 6};
	struct iw_mpa_frame rep = {.kind = IW_MPA_REPLY, .rev = rev};

	req.flags = (uint8_t)((crc ? IW_MPA_FLAG_C : 0) | (m_req ? IW_MPA_FLAG_M : 0));
	rep.flags = (uint8_t)((crc ? IW_MPA_FLAG_C : 0) | (m_rep ? IW_MPA_FLAG_M : 0) |
			      (reject ? IW_MPA_FLAG_R : 0));
	if (rev == 2) {
		req.flags |= IW_MPA_FLAG_ENHANCED;
		rep.flags |= IW_MPA_FLAG_ENHANCED;
		req.p2p = rep.p2p = true;
		req.rtr = IW_RTR_WRITE | IW_RTR_READ;
		rep.rtr = IW_RTR_WRITE;
		req.ird = req.ord = rep.ird = rep.ord = 4;
	}
	mpa(g, A, &req);
	mpa(g, B, &rep);
	iw_fpdu_tx_init(&g->tx[A], crc, m_rep, 0);
	iw_fpdu_tx_init(&g->tx[B], crc, m_req, 0);
}

/* ------------------------------------------------------------ FPDUs */

/* Encode one FPDU into out; its length. */
static size_t encode(struct gen *g, int dir, const uint8_t *hdr, size_t hdr_len,
		     const uint8_t *pl, size_t len, uint8_t *out)
{
	struct iovec iov[IOV_CAP], v = {(void *)pl, len};
	struct iw_fpdu_out o = {.iov = iov, .iov_cap = IOV_CAP};
	size_t n = 0;
	int rc = iw_fpdu_encode(&g->tx[dir], &o, hdr, hdr_len, &v, 1);

	if (rc)
		die("iw_fpdu_encode", rc);
	for (int i = 0; i < o.iovcnt; i++) {
		memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	return n;
}

static void fpdu(struct gen *g, int dir, const uint8_t *hdr, size_t hdr_len, const uint8_t *pl,
		 size_t len)
{
	static uint8_t buf[70000];

	wire(g, dir, buf, encode(g, dir, hdr, hdr_len, pl, len, buf));
}

static size_t untagged_hdr(struct gen *g, int dir, unsigned op, bool last, uint32_t mo,
			   const uint8_t *rdmap, size_t rdmap_len, uint8_t *h)
{
	unsigned qn = (unsigned)iw_rdmap_opcode_qn(op);
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, last), .rdmap_ctrl = iw_rdmap_ctrl(op),
			       .qn = qn, .msn = g->msn[dir][qn], .mo = mo};
	int n = iw_ddp_hdr_build(h, IW_FPDU_HDR_MAX, &d);

	if (n < 0)
		die("iw_ddp_hdr_build", n);
	if (rdmap_len)
		memcpy(h + n, rdmap, rdmap_len);
	return (size_t)n + rdmap_len;
}

/* Shorten a segment of n payload octets after hl header octets so that its
 * FPDU does not end exactly where a marker is due. */
static size_t fit(struct gen *g, int dir, size_t hl, size_t n)
{
	const struct iw_fpdu_tx *tx = &g->tx[dir];

	while (g->avoid_end_marker && tx->markers && n >= 4 &&
	       (tx->stream_off + iw_fpdu_wire_len(tx->stream_off, (uint32_t)(hl + n), true)) %
			       IW_MPA_MARKER_INTERVAL == 0)
		n -= 4;
	return n;
}

static void send_msg(struct gen *g, int dir, unsigned op, const uint8_t *pl, size_t len)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t done = 0;

	do {
		size_t n = fit(g, dir, IW_DDP_UNTAGGED_HDR_LEN, len - done < SEG_MAX ? len - done : SEG_MAX);
		size_t hl = untagged_hdr(g, dir, op, done + n == len, (uint32_t)done, NULL, 0, h);

		fpdu(g, dir, h, hl, pl + done, n);
		done += n;
	} while (done < len);
	g->msn[dir][iw_rdmap_opcode_qn(op)]++;
}

static void tagged_msg(struct gen *g, int dir, unsigned op, uint32_t stag, uint64_t to,
		       const uint8_t *pl, size_t len)
{
	uint8_t h[IW_DDP_TAGGED_HDR_LEN];
	size_t done = 0;

	do {
		size_t n = fit(g, dir, IW_DDP_TAGGED_HDR_LEN, len - done < SEG_MAX ? len - done : SEG_MAX);
		struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(true, done + n == len),
				       .rdmap_ctrl = iw_rdmap_ctrl(op), .stag = stag, .to = to + done};

		iw_ddp_hdr_build(h, sizeof(h), &d);
		fpdu(g, dir, h, sizeof(h), pl + done, n);
		done += n;
	} while (done < len);
}

static void read_req(struct gen *g, int dir, const struct iw_read_req *q)
{
	uint8_t r[IW_RDMAP_READ_REQ_LEN], h[IW_FPDU_HDR_MAX];
	size_t hl;

	iw_rdmap_read_req_build(r, sizeof(r), q);
	hl = untagged_hdr(g, dir, IW_OP_READ_REQ, true, 0, r, sizeof(r), h);
	fpdu(g, dir, h, hl, NULL, 0);
	g->msn[dir][IW_QN_READ_REQ]++;
}

static void send_str(struct gen *g, int dir, const char *s)
{
	send_msg(g, dir, IW_OP_SEND, (const uint8_t *)s, strlen(s));
}

/* ------------------------------------------------------------ scenarios */

static void client(struct gen *g)
{
	struct iw_read_req q = {.sink_stag = 0x2000, .sink_to = 0, .read_size = 100,
				.src_stag = 0x1000, .src_to = 0x10000};

	handshake(g, 2, true, false, false, false);
	tagged_msg(g, A, IW_OP_WRITE, 1, 0, NULL, 0); /* the WRITE RTR */
	send_str(g, A, "hello replay");
	tagged_msg(g, A, IW_OP_WRITE, 0x1000, 0x10000, pattern, 3000);
	read_req(g, A, &q);
	tagged_msg(g, B, IW_OP_READ_RESP, 0x2000, 0, pattern, 100);
	send_str(g, A, "done");
}

static void server(struct gen *g)
{
	handshake(g, 2, true, false, false, false);
	tagged_msg(g, A, IW_OP_WRITE, 1, 0, NULL, 0);
	send_str(g, A, "hi");
	send_str(g, B, "welcome");
	send_str(g, A, "bye");
}

/* Many sizes, both directions, so that markers land everywhere. */
static void traffic(struct gen *g)
{
	struct iw_read_req q = {.sink_stag = 0x77, .sink_to = 0x100, .read_size = 3000,
				.src_stag = 0x88, .src_to = 0x2000};

	for (unsigned k = 0; k < 40; k++) {
		size_t len = (k * 137u) % 1300u;

		if (k % 3 == 2)
			tagged_msg(g, A, IW_OP_WRITE, 0x100 + k, 0x4000 + 8 * k, pattern + k, len);
		else
			send_msg(g, k % 5 ? A : B, IW_OP_SEND, pattern + k, len);
	}
	read_req(g, A, &q);
	tagged_msg(g, B, IW_OP_READ_RESP, 0x77, 0x100, pattern, 3000);
	send_msg(g, A, IW_OP_SEND_SE, pattern, 3500);
}

static void markers(struct gen *g)
{
	handshake(g, 1, true, true, true, false);
	traffic(g);
}

static void markers_ws(struct gen *g)
{
	g->avoid_end_marker = true;
	markers(g);
}

static void smallmss(struct gen *g)
{
	handshake(g, 1, true, false, false, false);
	g->batch_max = 3;
	traffic(g);
}

static void midstream(struct gen *g)
{
	iw_fpdu_tx_init(&g->tx[A], true, true, 1000);
	iw_fpdu_tx_init(&g->tx[B], true, false, 5000);
	for (int d = 0; d < 2; d++)
		g->msn[d][0] = 100;
	traffic(g);
}

/* One FPDU whose header is patched after building. */
static void patched(struct gen *g, int dir, unsigned op, unsigned at, uint8_t val)
{
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t hl = untagged_hdr(g, dir, op, true, 0, NULL, 0, h);

	h[at] = val;
	fpdu(g, dir, h, hl, (const uint8_t *)"bad", 3);
	g->msn[dir][0]++;
}

/* An FPDU with its CRC (bit 0) or a marker's FPDUPTR spoilt. */
static void spoilt(struct gen *g, int dir, size_t len, bool crc)
{
	static uint8_t buf[70000];
	uint8_t h[IW_FPDU_HDR_MAX];
	uint32_t off = g->tx[dir].stream_off;
	size_t hl = untagged_hdr(g, dir, IW_OP_SEND, true, 0, NULL, 0, h);
	size_t n = encode(g, dir, h, hl, pattern, len, buf);

	if (crc) {
		buf[n - 4] ^= 1;
	} else {
		/* The first marker inside: 512 - off % 512 octets in. */
		size_t at = (IW_MPA_MARKER_INTERVAL - off % IW_MPA_MARKER_INTERVAL) %
			    IW_MPA_MARKER_INTERVAL;
		buf[at + 3] ^= 0x10;
	}
	wire(g, dir, buf, n);
	g->msn[dir][0]++;
}

static void errors(struct gen *g)
{
	static uint8_t cut[32];
	uint8_t h[IW_FPDU_HDR_MAX];
	size_t hl;

	handshake(g, 1, true, true, false, false); /* markers towards the initiator */
	send_str(g, A, "one");
	patched(g, A, IW_OP_SEND, 0, iw_ddp_ctrl(false, true) + 1); /* DV 2 */
	send_str(g, A, "three");
	patched(g, A, IW_OP_SEND, 1, iw_rdmap_ctrl(0xC));           /* opcode 0xC */
	send_str(g, A, "five");
	send_msg(g, B, IW_OP_SEND, pattern, 200);
	spoilt(g, B, 900, false);                                   /* bad FPDUPTR */
	send_msg(g, B, IW_OP_SEND, pattern, 100);                   /* found again */
	spoilt(g, B, 50, true);                                     /* bad CRC */
	send_msg(g, B, IW_OP_SEND, pattern, 10);
	/* ULPDU_Length 1000, but the sender closes after 32 octets. */
	hl = untagged_hdr(g, A, IW_OP_SEND, true, 0, NULL, 0, h);
	cut[0] = 0x03;
	cut[1] = 0xE8;
	memcpy(cut + 2, h, hl);
	wire(g, A, cut, sizeof(cut));
}

static void crcoff(struct gen *g)
{
	handshake(g, 1, false, false, false, false);
	send_str(g, A, "no crc");
	tagged_msg(g, B, IW_OP_WRITE, 5, 0x50, pattern, 40);
	send_str(g, A, "still none");
}

/* siw's Terminate control word: layer in the low nibble of octet 0, M/D/R
 * in bits 0..2 of octet 2 (interop.md). */
static void siw_term(struct gen *g, int dir, const uint8_t ctl[4], const uint8_t *copy,
		     size_t copy_len)
{
	uint8_t t[4 + 2 + IW_DDP_UNTAGGED_HDR_LEN], h[IW_FPDU_HDR_MAX];
	size_t hl;

	memcpy(t, ctl, 4);
	if (copy_len)
		memcpy(t + 4, copy, copy_len);
	hl = untagged_hdr(g, dir, IW_OP_TERMINATE, true, 0, t, 4 + copy_len, h);
	fpdu(g, dir, h, hl, NULL, 0);
}

static void siwterm(struct gen *g)
{
	static const uint8_t crc_err[4] = {0x02, 0x02, 0x00, 0x00};
	static const uint8_t no_buf[4] = {0x21, 0x02, 0x03, 0x00};
	uint8_t copy[2 + IW_DDP_UNTAGGED_HDR_LEN];
	struct iw_ddp_hdr d = {.ctrl = iw_ddp_ctrl(false, true), .rdmap_ctrl = iw_rdmap_ctrl(3),
			       .msn = 9};

	handshake(g, 2, true, false, false, false);
	tagged_msg(g, A, IW_OP_WRITE, 1, 0, NULL, 0);
	send_str(g, A, "x");
	copy[0] = 0;
	copy[1] = 40;
	iw_ddp_hdr_build(copy + 2, IW_DDP_UNTAGGED_HDR_LEN, &d);
	siw_term(g, B, no_buf, copy, sizeof(copy));
	siw_term(g, A, crc_err, NULL, 0);
}

static void reject(struct gen *g)
{
	handshake(g, 1, true, false, false, true);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(struct gen *);
		uint32_t mss;
		bool handshake, fin;
	} sc[] = {
		{"client", client, 1460, true, true},     {"server", server, 1460, true, true},
		{"markers", markers, 1460, true, true},   {"markers-ws", markers_ws, 1460, true, true},
		{"smallmss", smallmss, 200, true, true},
		{"midstream", midstream, 1460, false, false},
		{"errors", errors, 1460, true, true},     {"crcoff", crcoff, 1460, true, true},
		{"siwterm", siwterm, 1460, true, true},   {"reject", reject, 1460, true, true},
	};
	static struct gen g;

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; argc == 3 && i < sizeof(sc) / sizeof(sc[0]); i++) {
		if (strcmp(argv[1], sc[i].name))
			continue;
		begin(&g, argv[2], sc[i].mss, sc[i].handshake);
		sc[i].fn(&g);
		end(&g, sc[i].fin);
		return 0;
	}
	fprintf(stderr, "usage: %s client|server|markers|markers-ws|smallmss|midstream|errors|crcoff|"
		"siwterm|reject OUT.pcap\n", argv[0]);
	return 2;
}
