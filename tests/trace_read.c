/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A libiwarp pcap trace read back (trace_read.h). The framing is parsed and
 * the checksums recomputed here, on purpose without pcap_writer.c, so that
 * a writer bug cannot hide behind itself.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_read.h"

enum { F_FIN = 0x01, F_SYN = 0x02, F_RST = 0x04, F_ACK = 0x10 };

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be32(const uint8_t *p) { return (uint32_t)be16(p) << 16 | be16(p + 2); }

static void __attribute__((format(printf, 2, 3))) problem(struct rt_capture *cap,
							    const char *fmt, ...)
{
	va_list ap;
	if (cap->problems++ == 0) {
		int n = snprintf(cap->why, sizeof(cap->why), "record %u: ", cap->records);
		va_start(ap, fmt);
		vsnprintf(cap->why + n, sizeof(cap->why) - (size_t)n, fmt, ap);
		va_end(ap);
	}
}

/* RFC 1071 over pieces; each piece is even-length except the last. */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (; n > 1; p += 2, n -= 2)
		s += be16(p);
	if (n)
		s += (uint32_t)p[0] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)s;
}

/* ------------------------------------------------------------ streams */

static void append(struct rt_dir *d, const uint8_t *p, size_t n)
{
	if (d->len + n > d->cap) {
		size_t cap = d->cap ? d->cap : 65536;
		while (cap < d->len + n)
			cap *= 2;
		uint8_t *q = realloc(d->data, cap);
		if (!q)
			abort();
		d->data = q;
		d->cap = cap;
	}
	memcpy(d->data + d->len, p, n);
	d->len += n;
}

/* The connection of a segment and the side that sent it (-1: none). */
static int find_conn(struct rt_capture *cap, int fam, const uint8_t *src, const uint8_t *dst,
		     uint16_t sport, uint16_t dport, struct rt_conn **out)
{
	size_t al = fam == 4 ? 4 : 16;
	for (int i = cap->num_conns - 1; i >= 0; i--) {
		struct rt_conn *c = &cap->conn[i];
		for (int s = 0; s < 2; s++)
			if (c->family == fam && c->port[s] == sport && c->port[!s] == dport &&
			    !memcmp(c->addr[s], src, al) && !memcmp(c->addr[!s], dst, al)) {
				*out = c;
				return s;
			}
	}
	return -1;
}

static void new_conn(struct rt_capture *cap, int fam, const uint8_t *src, const uint8_t *dst,
		     uint16_t sport, uint16_t dport, uint32_t isn)
{
	if (cap->num_conns == RT_MAX_CONNS) {
		problem(cap, "more than %d connections", RT_MAX_CONNS);
		return;
	}
	struct rt_conn *c = &cap->conn[cap->num_conns++];
	size_t al = fam == 4 ? 4 : 16;
	memset(c, 0, sizeof(*c));
	c->family = fam;
	memcpy(c->addr[0], src, al);
	memcpy(c->addr[1], dst, al);
	c->port[0] = sport;
	c->port[1] = dport;
	c->dir[0].isn = isn;
	c->dir[0].nxt = isn + 1;
}

static void on_data(struct rt_dir *d, uint32_t seq, const uint8_t *p, size_t n)
{
	int32_t delta = (int32_t)(seq - d->nxt);
	if (delta < 0) {
		d->backs++;
		return;
	}
	if (delta > 0)
		d->gaps++;
	if (d->segs == d->seg_cap) {
		d->seg_cap = d->seg_cap ? 2 * d->seg_cap : 1024;
		d->seg = realloc(d->seg, d->seg_cap * sizeof(*d->seg));
		if (!d->seg)
			abort();
	}
	d->seg[d->segs++] = (struct rt_seg){d->len, (uint32_t)n};
	append(d, p, n);
	d->nxt = seq + (uint32_t)n;
}

static void on_tcp(struct rt_capture *cap, int fam, const uint8_t *src, const uint8_t *dst,
		   const uint8_t *tcp, size_t len)
{
	uint16_t sport = be16(tcp), dport = be16(tcp + 2);
	uint32_t seq = be32(tcp + 4), ack = be32(tcp + 8);
	size_t off = (size_t)(tcp[12] >> 4) * 4;
	uint8_t fl = tcp[13];
	if (off < 20 || off > len) {
		problem(cap, "TCP header length %zu of %zu", off, len);
		return;
	}
	struct rt_conn *c = NULL;
	int s = find_conn(cap, fam, src, dst, sport, dport, &c);
	if ((fl & (F_SYN | F_ACK)) == F_SYN) {
		if (s >= 0 && !c->rst && !(c->dir[0].fin && c->dir[1].fin))
			problem(cap, "SYN on a live connection");
		new_conn(cap, fam, src, dst, sport, dport, seq);
		return;
	}
	if (s < 0) {
		problem(cap, "segment of a connection without SYN (port %u)", sport);
		return;
	}
	struct rt_dir *d = &c->dir[s], *o = &c->dir[!s];
	if (fl & F_SYN) {
		if (s != 1 || c->synack || ack != c->dir[0].nxt)
			problem(cap, "unexpected SYN-ACK");
		c->synack = true;
		d->isn = seq;
		d->nxt = seq + 1;
		return;
	}
	if ((fl & F_ACK) && ack != o->nxt)
		c->bad_acks++;
	if (s == 0 && !c->ack && c->synack && len == off && !(fl & (F_FIN | F_RST)))
		c->ack = true;
	if (len > off)
		on_data(d, seq, tcp + off, len - off);
	if (fl & F_FIN) {
		uint32_t at = seq + (uint32_t)(len - off);
		if (d->fin || (int32_t)(at - d->nxt) < 0)
			problem(cap, "FIN at %u, stream at %u", at, d->nxt);
		if (at != d->nxt)
			d->gaps++; /* octets dropped just before the FIN */
		d->fin = true;
		d->nxt = at + 1;
	}
	if (fl & F_RST)
		c->rst = true;
}

/* The TCP checksum over the pseudo-header and the segment must verify. */
static bool tcp_csum_ok(int fam, const uint8_t *src, const uint8_t *dst, const uint8_t *tcp,
			size_t len)
{
	size_t al = fam == 4 ? 4 : 16;
	uint32_t s = sum16(0, src, al);
	s = sum16(s, dst, al);
	s += 6 + (uint32_t)(len & 0xFFFF) + (uint32_t)(len >> 16);
	s = sum16(s, tcp, len);
	return fold(s) == 0xFFFF;
}

static void on_udp(struct rt_capture *cap, const uint8_t *udp, size_t len)
{
	if (len < 8 || be16(udp + 2) != 514 || be16(udp + 4) != len) {
		problem(cap, "a UDP datagram that is not a note");
		return;
	}
	size_t n = len - 8 < sizeof(cap->note) - 1 ? len - 8 : sizeof(cap->note) - 1;
	memcpy(cap->note, udp + 8, n);
	cap->note[n] = 0;
	cap->notes++;
}

static void on_ipv4(struct rt_capture *cap, const uint8_t *ip, size_t len)
{
	if (len < 20 || ip[0] != 0x45 || be16(ip + 2) != len || fold(sum16(0, ip, 20)) != 0xFFFF) {
		problem(cap, "IPv4 header (length %zu, checksum)", len);
		return;
	}
	if (ip[9] == 17) {
		on_udp(cap, ip + 20, len - 20);
		return;
	}
	if (ip[9] != 6 || !tcp_csum_ok(4, ip + 12, ip + 16, ip + 20, len - 20)) {
		problem(cap, "IPv4: not TCP, or a bad TCP checksum");
		return;
	}
	on_tcp(cap, 4, ip + 12, ip + 16, ip + 20, len - 20);
}

static void on_ipv6(struct rt_capture *cap, const uint8_t *ip, size_t len)
{
	if (len < 40 || (ip[0] >> 4) != 6 || be16(ip + 4) != len - 40 || ip[6] != 6 ||
	    !tcp_csum_ok(6, ip + 8, ip + 24, ip + 40, len - 40)) {
		problem(cap, "IPv6 header, or a bad TCP checksum");
		return;
	}
	on_tcp(cap, 6, ip + 8, ip + 24, ip + 40, len - 40);
}

static void on_frame(struct rt_capture *cap, const struct pcap_pkthdr *h, const uint8_t *p)
{
	cap->records++;
	if (h->caplen != h->len || h->len < 14) {
		problem(cap, "caplen %u of %u", h->caplen, h->len);
		return;
	}
	uint16_t type = be16(p + 12);
	if (type == 0x0800)
		on_ipv4(cap, p + 14, h->len - 14);
	else if (type == 0x86DD)
		on_ipv6(cap, p + 14, h->len - 14);
	else
		problem(cap, "ethertype 0x%04x", type);
}

/* Every record of pc, then pc closed. */
static int read_all(struct rt_capture *cap, pcap_t *pc)
{
	if (pcap_datalink(pc) != DLT_EN10MB)
		problem(cap, "link type %d", pcap_datalink(pc));
	struct pcap_pkthdr *h;
	const u_char *p;
	int rc;
	while ((rc = pcap_next_ex(pc, &h, &p)) == 1)
		on_frame(cap, h, p);
	if (rc != PCAP_ERROR_BREAK) {
		snprintf(cap->why, sizeof(cap->why), "after %u records: %s", cap->records,
			 pcap_geterr(pc));
		pcap_close(pc);
		return -1;
	}
	pcap_close(pc);
	return 0;
}

int rt_read(struct rt_capture *cap, const char *path)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	memset(cap, 0, sizeof(*cap));
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	if (!pc) {
		snprintf(cap->why, sizeof(cap->why), "%s", err);
		return -1;
	}
	return read_all(cap, pc);
}

/* Everything but the connection table, whose entries new_conn clears as
 * it takes them: the whole table (1024 entries) is a quarter of a
 * megabyte, and clearing it twice per input was a sixth of
 * fuzz_pcap_roundtrip's time. */
static void clear_head(struct rt_capture *cap)
{
	cap->num_conns = 0;
	cap->records = cap->notes = cap->problems = 0;
	memset(cap->note, 0, sizeof(cap->note));
	memset(cap->why, 0, sizeof(cap->why));
}

int rt_read_fp(struct rt_capture *cap, FILE *fp)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	clear_head(cap);
	pcap_t *pc = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, err);
	if (!pc) {
		fclose(fp);
		snprintf(cap->why, sizeof(cap->why), "%s", err);
		return -1;
	}
	return read_all(cap, pc);
}

void rt_free(struct rt_capture *cap)
{
	for (int i = 0; i < cap->num_conns; i++)
		for (int d = 0; d < 2; d++) {
			free(cap->conn[i].dir[d].data);
			free(cap->conn[i].dir[d].seg);
		}
	memset(cap->conn, 0, (size_t)cap->num_conns * sizeof(cap->conn[0]));
	clear_head(cap);
}

/* ------------------------------------------------------------ iWARP */

static void decode_fpdus(struct rt_flow *f, const uint8_t *p, size_t len, bool crc, bool markers)
{
	struct iw_fpdu_rx rx;
	struct iw_rx_event ev;
	size_t off = 0, used;
	unsigned op = 0;
	int rc = 0;

	uint32_t st[RT_OPCODES];
	for (int i = 0; i < RT_OPCODES; i++)
		st[i] = IW_CRC32C_INIT;
	iw_fpdu_rx_init(&rx, crc, markers, 0, 0, 0);
	while (off < len) {
		rc = iw_fpdu_rx_next(&rx, &ev, p + off, len - off, &used);
		off += used;
		if (rc <= 0)
			break;
		if (ev.kind == IW_RX_SEG_HDR) {
			op = iw_ddp_opcode(&ev.seg->ddp) & (RT_OPCODES - 1);
			f->fpdus++;
			f->segs[op]++;
			f->payload[op] += ev.seg->payload_len;
			if (iw_ddp_last(&ev.seg->ddp))
				f->msgs[op]++;
			if (op == IW_OP_WRITE && ev.seg->payload_len == 0)
				f->zero_len_writes++;
		} else if (ev.kind == IW_RX_PAYLOAD) {
			st[op] = iw_crc32c_update(st[op], ev.data, ev.len);
		} else if (ev.kind == IW_RX_SEG_END) {
			f->crc_good++;
		}
	}
	for (int i = 0; i < RT_OPCODES; i++)
		f->payload_crc[i] = iw_crc32c_final(st[i]);
	f->used = off;
	if (rc < 0) {
		f->err = rc;
		f->why = rx.err;
		return;
	}
	f->truncated = iw_fpdu_rx_finish(&rx) != 0;
}

/* The segments that begin the PDUs of d: the MPA frame (frame_len
 * octets), then FPDUs, each found from its ULPDU length. */
static void check_starts(struct rt_flow *f, const struct rt_dir *d, size_t frame_len)
{
	unsigned j = 0;
	size_t at = 0, plen = frame_len;
	while (at < d->len) {
		while (j < d->segs && d->seg[j].off < at)
			j++;
		size_t want = plen < RT_PDU_START_MIN ? plen : RT_PDU_START_MIN;
		if (want > d->len - at)
			want = d->len - at;
		if (j == d->segs || d->seg[j].off != at)
			f->pdu_unaligned++;
		else if (d->seg[j].len < want)
			f->pdu_short_starts++;
		at += plen;
		if (at + 2 > d->len)
			break;
		uint16_t ulpdu = be16(d->data + at);
		plen = 2u + ulpdu + iw_mpa_pad(ulpdu) + IW_MPA_CRC_LEN;
	}
}

int rt_decode(const struct rt_conn *c, struct rt_iwarp *out)
{
	enum iw_wire_err why;
	size_t used[2] = {0, 0};

	memset(out, 0, sizeof(*out));
	out->req_ok = iw_mpa_frame_parse(&out->req, &used[0], &why, IW_MPA_REQUEST, c->dir[0].data,
					 c->dir[0].len, 0) == 0;
	out->rep_ok = iw_mpa_frame_parse(&out->rep, &used[1], &why, IW_MPA_REPLY, c->dir[1].data,
					 c->dir[1].len, 0) == 0;
	if (!out->req_ok || !out->rep_ok)
		return -1;
	out->crc = ((out->req.flags | out->rep.flags) & IW_MPA_FLAG_C) != 0;
	/* M in a frame asks for markers in the stream towards its sender. */
	bool markers[2] = {(out->rep.flags & IW_MPA_FLAG_M) != 0,
			   (out->req.flags & IW_MPA_FLAG_M) != 0};
	int rc = 0;
	for (int d = 0; d < 2; d++) {
		struct rt_flow *f = &out->dir[d];
		decode_fpdus(f, c->dir[d].data + used[d], c->dir[d].len - used[d], out->crc,
			     markers[d]);
		if (!markers[d] && !c->dir[d].gaps)
			check_starts(f, &c->dir[d], used[d]);
		if (f->err || f->truncated || f->crc_good != f->fpdus || c->dir[d].gaps ||
		    f->pdu_unaligned || f->pdu_short_starts)
			rc = -1;
	}
	return rc;
}
