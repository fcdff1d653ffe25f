/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Group 3: data transfer against an rping server (rping -s, iwarp-ping -s),
 * one ping per case, as rping's client does it: we advertise our source
 * buffer by Send, answer the server's RDMA READ with Read Responses, take
 * its go-ahead Send, advertise our sink, take its RDMA WRITE and its
 * go-ahead, and compare the octets. Our FPDUs go out whole, several per
 * TCP segment, split at every header boundary or one octet per segment.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../rping_proto.h"
#include "conform.h"

enum segm { SG_WHOLE, SG_BATCH, SG_HDRSPLIT, SG_OCTET };

struct g3 {
	uint32_t pre;  /* octets of an RDMA WRITE into the peer's READ sink first (0, 1) */
	bool pre_on;
	int size;      /* octets; <0: relative to our MULPDU payload (-1: -1, -2: =, -3: +1) */
	bool crc;
	enum segm sg;
	uint32_t chunk; /* Read Response payload per FPDU (0: as much as MULPDU allows) */
	bool markers;   /* ask for markers towards us (M in our Request) */
	bool both;      /* and need the peer to ask for them too (M in its Reply) */
	bool se;        /* our advertisements as Send with Solicited Event */
	bool over;      /* Read Responses of MULPDU + OVER octets each */
};

#define SRC_ADDR 0x100000u
#define OVER 1024u
#define SINK_ADDR 0x900000u
#define SINK_STAG 0x00C0FF02u

struct ping {
	struct cf_conn *k;
	const struct g3 *a;
	uint32_t n, per_fpdu;
	uint8_t *src, *sink;
};

/* Payload octets a tagged FPDU can carry at our MSS (RFC 5044 8.1.2). */
static uint32_t tagged_room(struct cf_conn *k)
{
	int mss = 0;
	socklen_t l = sizeof(mss);

	if (getsockopt(k->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) || mss <= 0)
		mss = 1460;
	return iw_mpa_mulpdu((uint32_t)mss, k->markers_tx) - IW_DDP_TAGGED_HDR_LEN;
}

/* Send one framed FPDU the way the case wants. */
static int put(struct ping *p, const uint8_t *f, size_t len, size_t hl, size_t pl)
{
	struct cf_conn *k = p->k;

	switch (p->a->sg) {
	case SG_OCTET: return cf_send(k, f, len, 1);
	case SG_HDRSPLIT:
		if (k->markers_tx)
			return cf_send(k, f, len, 0);
		if (cf_send(k, f, 2, 0) || cf_send(k, f + 2, hl, 0))
			return -1;
		if (pl && cf_send(k, f + 2 + hl, pl, 0))
			return -1;
		return cf_send(k, f + 2 + hl + pl, len - 2 - hl - pl, 0);
	default: return cf_send(k, f, len, 0);
	}
}

static int send_advert(struct ping *p, uint64_t addr, uint32_t stag)
{
	struct advert a = {.addr = addr, .rkey = stag, .len = p->n};
	uint8_t adv[ADV_LEN], h[IW_FPDU_HDR_MAX], f[128];
	size_t hl, len;

	advert_pack(adv, &a);
	hl = cf_hdr_untagged(h, p->a->se ? IW_OP_SEND_SE : IW_OP_SEND, IW_QN_SEND,
			     ++p->k->msn[IW_QN_SEND], 0, true);
	len = cf_fpdu_frame(p->k, f, sizeof(f), h, hl, adv, sizeof(adv), false);
	return len ? put(p, f, len, hl, sizeof(adv)) : -1;
}

/* The Read Responses for rr, framed back to back; SG_BATCH sends them in
 * one write. */
static int answer_read(struct ping *p, const struct iw_read_req *rr)
{
	size_t cap = p->n + (p->n / p->per_fpdu + 2) * 64 + 1024, used = 0;
	uint8_t *buf = malloc(cap), h[IW_FPDU_HDR_MAX];
	uint32_t off = 0;
	int rc = 0;

	if (!buf)
		return -1;
	do {
		uint32_t m = p->n - off < p->per_fpdu ? p->n - off : p->per_fpdu;
		size_t hl = cf_hdr_tagged(h, IW_OP_READ_RESP, rr->sink_stag, rr->sink_to + off,
					  off + m == p->n);
		size_t len = cf_fpdu_frame(p->k, buf + used, cap - used, h, hl, p->src + off, m, false);

		if (!len || (p->a->sg != SG_BATCH && put(p, buf + used, len, hl, m))) {
			rc = -1;
			break;
		}
		if (p->a->sg == SG_BATCH)
			used += len;
		off += m;
	} while (off < p->n);
	if (!rc && used)
		rc = cf_send(p->k, buf, used, 0);
	free(buf);
	return rc;
}

/* A small RDMA WRITE into the peer's READ sink (REMOTE_WRITE): legal and
 * silent; the Read Responses then overwrite it. */
static int pre_write(struct ping *p, const struct iw_read_req *rr)
{
	uint8_t h[IW_FPDU_HDR_MAX], f[64];
	size_t hl = cf_hdr_tagged(h, IW_OP_WRITE, rr->sink_stag, rr->sink_to, true);
	size_t len = cf_fpdu_frame(p->k, f, sizeof(f), h, hl, (const uint8_t *)"w", p->a->pre, false);

	return len ? put(p, f, len, hl, p->a->pre) : -1;
}

static const char *check_read_req(const struct ping *p, const struct iw_read_req *rr)
{
	if (rr->src_stag != CF_OUR_STAG || rr->src_to != SRC_ADDR)
		return "the Read Request does not name our advertised source";
	if (rr->read_size != p->n)
		return "the Read Request's size is not the advertised one";
	return NULL;
}

/* Take the peer's RDMA WRITE into our sink until its go-ahead Send. */
static const char *take_write(struct ping *p)
{
	struct cf_seg g = {0};
	uint32_t got = 0;

	g.pl = malloc(65536);
	g.pl_cap = 65536;
	for (;;) {
		int rc = g.pl ? cf_seg_recv(p->k, &g, p->k->c->o->wait_ms) : CF_IO_ERR;
		unsigned op = iw_ddp_opcode(&g.s.ddp);

		if (rc) {
			free(g.pl);
			return "no RDMA WRITE and go-ahead from the peer";
		}
		if (op == IW_OP_SEND || op == IW_OP_SEND_SE)
			break;
		if (op != IW_OP_WRITE || g.s.ddp.stag != SINK_STAG || g.s.ddp.to < SINK_ADDR ||
		    g.s.ddp.to - SINK_ADDR + g.pl_len > p->n) {
			free(g.pl);
			return "the peer sent something other than a WRITE into our sink";
		}
		memcpy(p->sink + (g.s.ddp.to - SINK_ADDR), g.pl, g.pl_len);
		got += (uint32_t)g.pl_len;
	}
	free(g.pl);
	return got == p->n ? NULL : "the WRITE did not cover the advertised sink";
}

static const char *ping_once(struct ping *p)
{
	struct cf_seg g = {0};
	const char *bad;

	if (send_advert(p, SRC_ADDR, CF_OUR_STAG))
		return "could not send the source advertisement";
	if (cf_await_first(p->k, &g, IW_OP_READ_REQ, p->k->c->o->wait_ms))
		return "no RDMA READ from the peer";
	if ((bad = check_read_req(p, &g.s.rdmap.u.read_req)))
		return bad;
	if (p->a->pre_on && pre_write(p, &g.s.rdmap.u.read_req))
		return "could not send the RDMA WRITE";
	if (answer_read(p, &g.s.rdmap.u.read_req))
		return "could not send the Read Responses";
	if (cf_await_op(p->k, &g, IW_OP_SEND, p->k->c->o->wait_ms))
		return "no go-ahead after the READ";
	if (send_advert(p, SINK_ADDR, SINK_STAG))
		return "could not send the sink advertisement";
	if ((bad = take_write(p)))
		return bad;
	return memcmp(p->src, p->sink, p->n) ? "the octets written back differ from ours" : NULL;
}

/* A ping that failed on the peer's TERMINATE is told apart by it, so that
 * a deviations entry can name that TERMINATE. */
static void ping_failed(struct cf_ctx *c, const struct cf_conn *k, const char *bad)
{
	char obs[32];

	if (!k->term_seen)
		return cf_fail(c, "ping failed", "%s", bad);
	snprintf(obs, sizeof(obs), "term %02x %02x", k->term_seen >> 8, k->term_seen & 0xFF);
	cf_fail(c, obs, "%s (the peer sent TERMINATE %s)", bad, iw_term_str(k->term_seen));
}

static uint32_t size_of(const struct g3 *a, uint32_t room)
{
	if (a->size >= 0)
		return (uint32_t)a->size;
	return room - 2 + (uint32_t)(-a->size); /* -1 -> room-1, -2 -> room, -3 -> room+1 */
}

static void run(struct cf_ctx *c, const void *arg)
{
	const struct g3 *a = arg;
	struct cf_conn *k = calloc(1, sizeof(*k));
	struct ping p = {.k = k, .a = a};
	const char *bad;
	bool settle = false;

	if (!k)
		return cf_fail(c, "", "out of memory");
	if (cf_establish(k, c, a->crc, a->markers)) {
		cf_fail(c, "no connection", "the handshake failed");
		goto out;
	}
	/* A case skipped from here on still settles before it closes. */
	settle = true;
	if (a->both && !k->markers_tx) {
		cf_skip(c, "the peer does not ask for markers (no M in its Reply): run this case "
			   "against a peer that does (iwarp-ping -s --markers)");
		goto out;
	}
	if (!a->crc && k->crc) {
		cf_skip(c, "the peer asks for CRC: run this case against a peer that does not");
		goto out;
	}
	p.per_fpdu = a->chunk ? a->chunk : tagged_room(k) + (a->over ? OVER : 0);
	p.n = size_of(a, tagged_room(k));
	if (p.n < PING_MIN_SIZE || p.n > c->o->size) {
		cf_skip(c, "%u octets: the rping protocol carries %u..%u (--size)", p.n,
			PING_MIN_SIZE, c->o->size);
		goto out;
	}
	p.src = malloc(p.n);
	p.sink = calloc(1, p.n);
	settle = !p.src || !p.sink;
	if (p.src && p.sink) {
		fill_ping((char *)p.src, p.n, 1);
		bad = ping_once(&p);
		if (bad && a->over && k->term_seen)
			/* MULPDU binds the sender (RFC 5041 5.2); a receiver may refuse. */
			cf_pass(c, "refused", "the peer refused FPDUs above MULPDU with TERMINATE %s",
				iw_term_str(k->term_seen));
		else if (bad)
			ping_failed(c, k, bad);
		else
			cf_pass(c, "ok",
				"%u octets READ and WRITTEN back intact (CRC %s, markers to us %s, "
				"to the peer %s, %u per FPDU)",
				p.n, k->crc ? "on" : "off", k->markers_rx ? "on" : "off",
				k->markers_tx ? "on" : "off", p.per_fpdu);
	}
	free(p.src);
	free(p.sink);
out:
	if (settle)
		cf_settle(k, true);
	cf_close(k);
	free(k);
}

/* pre, pre_on, size, crc, segmentation, chunk, then named extras. */
#define G(pre_, on_, size_, crc_, sg_, chunk_, ...)                                              \
	{.pre = pre_, .pre_on = on_, .size = size_, .crc = crc_, .sg = sg_, .chunk = chunk_,      \
	 __VA_ARGS__}
static const struct g3 a[] = {
	G(0, true, 64, true, SG_WHOLE, 0), G(1, true, 64, true, SG_WHOLE, 0),
	G(0, false, 64, true, SG_WHOLE, 0),       G(0, false, -1, true, SG_WHOLE, 0),
	G(0, false, -2, true, SG_WHOLE, 0),       G(0, false, -3, true, SG_WHOLE, 0),
	G(0, false, 65536, true, SG_WHOLE, 0),    G(0, false, 64, false, SG_WHOLE, 0),
	G(0, false, -2, false, SG_WHOLE, 0),      G(0, false, -3, false, SG_WHOLE, 0),
	G(0, false, 65536, false, SG_WHOLE, 0),   G(0, false, 4096, true, SG_BATCH, 512),
	G(0, false, 4096, true, SG_HDRSPLIT, 1024), G(0, false, 64, true, SG_OCTET, 0),
	G(0, false, 4096, false, SG_HDRSPLIT, 1000),
	G(0, false, 4096, true, SG_WHOLE, 0, .markers = true),
	G(0, false, 65536, true, SG_WHOLE, 0, .markers = true, .both = true),
	G(0, false, 1 << 20, true, SG_WHOLE, 0),
	G(0, false, 1 << 20, false, SG_WHOLE, 0),
	G(0, false, 4096, true, SG_WHOLE, 0, .se = true),
	G(0, false, 65536, true, SG_WHOLE, 0, .over = true),
};

const struct cf_case cf_group3[] = {
	{"3.1", "zero-length RDMA WRITE, then a ping", "RFC 5041 5.2", run, &a[0]},
	{"3.2", "1-octet RDMA WRITE, then a ping", "RFC 5040 5.1", run, &a[1]},
	{"3.3", "ping of 64 octets, CRC", "RFC 5040 5.1", run, &a[2]},
	{"3.4", "ping of MULPDU-1 (one FPDU less an octet)", "RFC 5044 8.1.2", run, &a[3]},
	{"3.5", "ping of MULPDU (one full FPDU)", "RFC 5044 8.1.2", run, &a[4]},
	{"3.6", "ping of MULPDU+1 (two FPDUs)", "RFC 5044 8.1.2", run, &a[5]},
	{"3.7", "ping of 64 KiB, CRC", "RFC 5041 5.2", run, &a[6]},
	{"3.8", "ping of 64 octets, no CRC", "RFC 5044 7.1.2", run, &a[7]},
	{"3.9", "ping of MULPDU, no CRC", "RFC 5044 8.1.2", run, &a[8]},
	{"3.10", "ping of MULPDU+1, no CRC", "RFC 5044 8.1.2", run, &a[9]},
	{"3.11", "ping of 64 KiB, no CRC", "RFC 5041 5.2", run, &a[10]},
	{"3.12", "several FPDUs per TCP segment", "RFC 5044 5", run, &a[11]},
	{"3.13", "FPDUs split at every header boundary", "RFC 5044 5", run, &a[12]},
	{"3.14", "one octet per TCP segment", "RFC 5044 5", run, &a[13]},
	{"3.15", "split at header boundaries, no CRC, odd pad", "RFC 5044 5", run, &a[14]},
	{"3.16", "ping of 4096, markers requested (the peer's FPDUs carry them)", "RFC 5044 5.1",
	 run, &a[15]},
	{"3.17", "ping of 64 KiB, markers both ways", "RFC 5044 5.1", run, &a[16]},
	{"3.18", "ping of 1 MiB, CRC", "RFC 5041 5.2", run, &a[17]},
	{"3.19", "ping of 1 MiB, no CRC", "RFC 5041 5.2", run, &a[18]},
	{"3.20", "advertisements as Send with Solicited Event", "RFC 5040 5.3", run, &a[19]},
	{"3.21", "Read Responses with ULPDUs over our MULPDU: taken or refused", "RFC 5041 5.2",
	 run, &a[20]},
};
const size_t cf_group3_n = sizeof(cf_group3) / sizeof(cf_group3[0]);
