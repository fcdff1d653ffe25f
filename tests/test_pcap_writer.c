/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pcap writer: file header, record framing, IPv4/IPv6 and TCP checksums
 * (recomputed here independently of the writer), sequence and ack numbers
 * across both directions, MSS splitting, FIN, RST, notes (UDP syslog), the
 * byte cap, and a read-back through libpcap itself.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "diag/pcap_writer.h"

/* libpcap is the independent reader. It is loaded at run time so that the
 * check binary needs no -lpcap of its own (configure already requires
 * libpcap, so a missing library here is a real failure). */
struct pcap_api {
	pcap_t *(*fopen_offline)(FILE *, char *);
	int (*next_ex)(pcap_t *, struct pcap_pkthdr **, const u_char **);
	int (*datalink)(pcap_t *);
	void (*close)(pcap_t *);
};

static bool pcap_api_load(struct pcap_api *api)
{
	static const char *const names[] = {"libpcap.so.1", "libpcap.so.0.8", "libpcap.so"};
	void *h = NULL;

	for (size_t i = 0; !h && i < sizeof(names) / sizeof(names[0]); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
	api->fopen_offline = (pcap_t * (*)(FILE *, char *)) dlsym(h, "pcap_fopen_offline");
	api->next_ex = (int (*)(pcap_t *, struct pcap_pkthdr **, const u_char **))dlsym(
		h, "pcap_next_ex");
	api->datalink = (int (*)(pcap_t *))dlsym(h, "pcap_datalink");
	api->close = (void (*)(pcap_t *))dlsym(h, "pcap_close");
	return api->fopen_offline && api->next_ex && api->datalink && api->close;
}

enum { F_FIN = 0x01, F_SYN = 0x02, F_PSH = 0x08, F_ACK = 0x10 };

/* ------------------------------------------------------------ fixtures */

struct cap {
	char *buf;
	size_t len;
	FILE *fp;
	struct iw_pcapw w;
	struct iw_pcapw_flow f;
};

static void sin4(struct sockaddr_in *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	ck_assert_int_eq(inet_pton(AF_INET, ip, &s->sin_addr), 1);
}

static void sin6(struct sockaddr_in6 *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	s->sin6_port = htons(port);
	ck_assert_int_eq(inet_pton(AF_INET6, ip, &s->sin6_addr), 1);
}

static void cap_open(struct cap *c, unsigned flags, uint64_t byte_cap)
{
	memset(c, 0, sizeof(*c));
	c->fp = open_memstream(&c->buf, &c->len);
	ck_assert_ptr_nonnull(c->fp);
	ck_assert_int_eq(iw_pcapw_open(&c->w, c->fp, flags, byte_cap), 0);
}

static void cap_flow4(struct cap *c, uint32_t mss)
{
	struct sockaddr_in a, b;

	sin4(&a, "192.0.2.1", 40000);
	sin4(&b, "192.0.2.2", 4791);
	ck_assert_int_eq(iw_pcapw_flow_init(&c->f, &c->w, (struct sockaddr *)&a,
					    (struct sockaddr *)&b, 1000, 0xFFFFFF00u, mss),
			 0);
}

static void cap_flush(struct cap *c)
{
	iw_pcapw_close(&c->w);
	fflush(c->fp);
}

static void cap_free(struct cap *c)
{
	fclose(c->fp);
	free(c->buf);
}

/* ------------------------------------------------------------ parsing */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

struct rec {
	uint32_t sec, frac;
	const uint8_t *frame;
	uint32_t len;
	/* decoded */
	bool v6;
	const uint8_t *ip, *tcp, *payload;
	uint32_t payload_len;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
};

/* Plain RFC 1071 sum, written separately from the writer's. */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
	return s;
}

static bool csum_ok(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return s == 0xFFFF;
}

static void check_tcp_csum(const struct rec *r, uint32_t tcp_len)
{
	uint8_t ph[12] = {0};
	uint32_t s;

	if (r->v6) {
		s = sum16(0, r->ip + 8, 32);
		ph[0] = (uint8_t)(tcp_len >> 24);
		ph[1] = (uint8_t)(tcp_len >> 16);
		ph[2] = (uint8_t)(tcp_len >> 8);
		ph[3] = (uint8_t)tcp_len;
		ph[7] = 6;
		s = sum16(s, ph, 8);
	} else {
		s = sum16(0, r->ip + 12, 8);
		ph[1] = 6;
		ph[2] = (uint8_t)(tcp_len >> 8);
		ph[3] = (uint8_t)tcp_len;
		s = sum16(s, ph, 4);
	}
	ck_assert_msg(csum_ok(sum16(s, r->tcp, tcp_len)), "bad TCP checksum");
}

/* Decode Ethernet/IP/TCP and check every length and checksum on the way. */
static void decode(struct rec *r)
{
	uint32_t ip_hlen, tcp_len;
	uint16_t et = be16(r->frame + 12);

	ck_assert_uint_ge(r->len, 54);
	r->ip = r->frame + 14;
	r->v6 = et == 0x86DD;
	if (r->v6) {
		ck_assert_uint_eq(r->ip[0] >> 4, 6);
		ck_assert_uint_eq(r->ip[6], 6);
		ip_hlen = 40;
		tcp_len = be16(r->ip + 4);
	} else {
		ck_assert_uint_eq(et, 0x0800);
		ck_assert_uint_eq(r->ip[0], 0x45);
		ck_assert_uint_eq(r->ip[9], 6);
		ip_hlen = 20;
		ck_assert_msg(csum_ok(sum16(0, r->ip, 20)), "bad IPv4 header checksum");
		tcp_len = be16(r->ip + 2) - ip_hlen;
	}
	ck_assert_uint_eq(14 + ip_hlen + tcp_len, r->len);
	r->tcp = r->ip + ip_hlen;
	uint32_t doff = (r->tcp[12] >> 4) * 4u;
	ck_assert_uint_ge(doff, 20);
	r->payload = r->tcp + doff;
	r->payload_len = tcp_len - doff;
	r->sport = be16(r->tcp);
	r->dport = be16(r->tcp + 2);
	r->seq = be32(r->tcp + 4);
	r->ack = be32(r->tcp + 8);
	r->flags = r->tcp[13];
	check_tcp_csum(r, tcp_len);
}

/* Split the file into records, checking the file header. */
static size_t parse(const struct cap *c, uint32_t magic, struct rec *recs, size_t max)
{
	const uint8_t *p = (const uint8_t *)c->buf;
	size_t off = 24, n = 0;

	ck_assert_uint_ge(c->len, 24);
	ck_assert_uint_eq(le32(p), magic);
	ck_assert_uint_eq(p[4] | p[5] << 8, 2);
	ck_assert_uint_eq(p[6] | p[7] << 8, 4);
	ck_assert_uint_eq(le32(p + 8), 0);
	ck_assert_uint_eq(le32(p + 12), 0);
	ck_assert_uint_eq(le32(p + 16), IW_PCAPW_SNAPLEN);
	ck_assert_uint_eq(le32(p + 20), 1); /* LINKTYPE_ETHERNET */
	while (off < c->len) {
		ck_assert_uint_lt(n, max);
		ck_assert_uint_ge(c->len - off, 16);
		struct rec *r = &recs[n++];
		r->sec = le32(p + off);
		r->frac = le32(p + off + 4);
		r->len = le32(p + off + 8);
		ck_assert_uint_eq(le32(p + off + 12), r->len);
		ck_assert_uint_ge(c->len - off - 16, r->len);
		r->frame = p + off + 16;
		off += 16 + r->len;
		decode(r);
	}
	ck_assert_uint_eq(off, c->len);
	return n;
}

/* ------------------------------------------------------------ tests */

START_TEST(file_header_usec_nsec)
{
	struct cap c;
	struct rec r[4];

	cap_open(&c, 0, 0);
	cap_flush(&c);
	ck_assert_uint_eq(c.len, 24);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 4), 0);
	cap_free(&c);

	cap_open(&c, IW_PCAPW_NSEC, 0);
	cap_flush(&c);
	ck_assert_uint_eq(parse(&c, 0xa1b23c4du, r, 4), 0);
	ck_assert_uint_eq(c.w.written, 24);
	cap_free(&c);
}
END_TEST

START_TEST(bad_args)
{
	struct cap c;
	struct sockaddr_in a;
	struct sockaddr_in6 b;

	cap_open(&c, 0, 0);
	ck_assert_int_eq(iw_pcapw_open(&c.w, NULL, 0, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_open(&c.w, c.fp, 0x80, 0), -EINVAL);
	cap_free(&c);
	cap_open(&c, 0, 0);
	sin4(&a, "192.0.2.1", 1);
	sin6(&b, "2001:db8::1", 2);
	/* mixed families, oversized MSS */
	ck_assert_int_eq(iw_pcapw_flow_init(&c.f, &c.w, (struct sockaddr *)&a,
					    (struct sockaddr *)&b, 0, 0, 0),
			 -EINVAL);
	ck_assert_int_eq(iw_pcapw_flow_init(&c.f, &c.w, (struct sockaddr *)&a,
					    (struct sockaddr *)&a, 0, 0, IW_PCAPW_MAX_MSS + 1),
			 -EINVAL);
	cap_flow4(&c, 0);
	ck_assert_uint_eq(c.f.mss, IW_PCAPW_DEFAULT_MSS);
	ck_assert_int_eq(iw_pcapw_data(&c.f, 2, NULL, 0, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, NULL, 1, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, NULL, 0, 0), 0);
	cap_flush(&c);
	ck_assert_uint_eq(c.len, 24); /* zero octets write nothing */
	cap_free(&c);
}
END_TEST

START_TEST(handshake_ipv4)
{
	struct cap c;
	struct rec r[4];

	cap_open(&c, 0, 0);
	cap_flow4(&c, 1460);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 1700000000123456789ull), 0);
	cap_flush(&c);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 4), 3);
	/* SYN and SYN-ACK carry the 4-octet MSS option */
	ck_assert_uint_eq(r[0].len, 14 + 20 + 24);
	ck_assert_uint_eq(r[1].len, 14 + 20 + 24);
	ck_assert_uint_eq(r[2].len, 14 + 20 + 20);
	ck_assert_uint_eq(r[0].flags, F_SYN);
	ck_assert_uint_eq(r[0].seq, 1000);
	ck_assert_uint_eq(r[0].ack, 0);
	ck_assert_uint_eq(be16(r[0].tcp + 22), 1460);
	ck_assert_uint_eq(r[1].flags, F_SYN | F_ACK);
	ck_assert_uint_eq(r[1].seq, 0xFFFFFF00u);
	ck_assert_uint_eq(r[1].ack, 1001);
	ck_assert_uint_eq(r[2].flags, F_ACK);
	ck_assert_uint_eq(r[2].seq, 1001);
	ck_assert_uint_eq(r[2].ack, 0xFFFFFF01u);
	ck_assert_uint_eq(r[0].sport, 40000);
	ck_assert_uint_eq(r[0].dport, 4791);
	ck_assert_uint_eq(r[1].sport, 4791);
	/* addresses and MACs swap with the direction */
	ck_assert_mem_eq(r[0].ip + 12, r[1].ip + 16, 4);
	ck_assert_mem_eq(r[0].frame, r[1].frame + 6, 6);
	/* microsecond timestamps */
	ck_assert_uint_eq(r[0].sec, 1700000000u);
	ck_assert_uint_eq(r[0].frac, 123456u);
	ck_assert_uint_eq(c.w.records, 3);
	ck_assert_uint_eq(c.w.written, c.len);
	cap_free(&c);
}
END_TEST

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* Odd-sized iovec pieces that straddle segment boundaries, so checksums
 * continue across pieces at odd offsets. */
START_TEST(mss_split_and_acks)
{
	static uint8_t big[2501], small[3];
	struct iovec iov[3] = {{big, 1}, {big + 1, 1999}, {big + 2000, 501}};
	struct iovec back = {small, 3};
	struct cap c;
	struct rec r[16];

	fill(big, sizeof(big), 1);
	fill(small, sizeof(small), 9);
	cap_open(&c, IW_PCAPW_NSEC, 0);
	cap_flow4(&c, 1000);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 5), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, iov, 3, 1000000007ull), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_B2A, &back, 1, 1000000008ull), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &back, 1, 1000000009ull), 0);
	cap_flush(&c);
	size_t n = parse(&c, 0xa1b23c4du, r, 16);
	ck_assert_uint_eq(n, 3 + 3 + 1 + 1);
	/* 2501 octets: 1000 + 1000 + 501, PSH only on the last */
	uint32_t want_len[3] = {1000, 1000, 501};
	for (int i = 0; i < 3; i++) {
		const struct rec *s = &r[3 + i];
		ck_assert_uint_eq(s->payload_len, want_len[i]);
		ck_assert_uint_eq(s->seq, 1001 + 1000u * i);
		ck_assert_uint_eq(s->ack, 0xFFFFFF01u);
		ck_assert_uint_eq(s->flags, F_ACK | (i == 2 ? F_PSH : 0));
		ck_assert_mem_eq(s->payload, big + 1000 * i, want_len[i]);
		ck_assert_uint_eq(s->frac, 7);
		ck_assert_uint_eq(s->sec, 1);
	}
	/* the reply acknowledges all 2501 octets; its own seq wraps 2^32 later */
	ck_assert_uint_eq(r[6].seq, 0xFFFFFF01u);
	ck_assert_uint_eq(r[6].ack, 1001 + 2501);
	ck_assert_uint_eq(r[6].payload_len, 3);
	ck_assert_uint_eq(r[7].seq, 1001 + 2501);
	ck_assert_uint_eq(r[7].ack, 0xFFFFFF04u);
	/* IPv4 identification counts per direction */
	ck_assert_uint_eq(be16(r[4].ip + 4), be16(r[3].ip + 4) + 1);
	cap_free(&c);
}
END_TEST

START_TEST(seq_wraps)
{
	static uint8_t d[300];
	struct iovec v = {d, sizeof(d)};
	struct cap c;
	struct rec r[8];

	cap_open(&c, 0, 0);
	cap_flow4(&c, 200);
	/* side B starts at 0xFFFFFF01: 300 octets cross 2^32 */
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_B2A, &v, 1, 0), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), 0);
	cap_flush(&c);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 8), 4);
	ck_assert_uint_eq(r[0].seq, 0xFFFFFF01u);
	ck_assert_uint_eq(r[1].seq, 0xFFFFFF01u + 200);
	ck_assert_uint_eq(r[2].ack, 0x2D); /* 0xFFFFFF01 + 300, mod 2^32 */
	cap_free(&c);
}
END_TEST

START_TEST(fin_close)
{
	static uint8_t d[10];
	struct iovec v = {d, sizeof(d)};
	struct cap c;
	struct rec r[8];

	cap_open(&c, 0, 0);
	cap_flow4(&c, 0);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 0), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), 0);
	ck_assert_int_eq(iw_pcapw_fin(&c.f, IW_PCAPW_A2B, 0), 0);
	ck_assert_int_eq(iw_pcapw_fin(&c.f, IW_PCAPW_A2B, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_fin(&c.f, IW_PCAPW_B2A, 0), 0);
	cap_flush(&c);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 8), 7);
	ck_assert_uint_eq(r[4].flags, F_FIN | F_ACK);
	ck_assert_uint_eq(r[4].seq, 1011);
	ck_assert_uint_eq(r[5].flags, F_FIN | F_ACK);
	ck_assert_uint_eq(r[5].ack, 1012); /* the FIN took one number */
	ck_assert_uint_eq(r[6].flags, F_ACK);
	ck_assert_uint_eq(r[6].seq, 1012);
	ck_assert_uint_eq(r[6].ack, 0xFFFFFF02u);
	cap_free(&c);
}
END_TEST

START_TEST(rst_ends_flow)
{
	static uint8_t d[10];
	struct iovec v = {d, sizeof(d)};
	struct cap c;
	struct rec r[8];

	cap_open(&c, 0, 0);
	cap_flow4(&c, 0);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 0), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), 0);
	ck_assert_int_eq(iw_pcapw_rst(&c.f, IW_PCAPW_B2A, 0), 0);
	/* A reset flow takes nothing more, from either side. */
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_fin(&c.f, IW_PCAPW_A2B, 0), -EINVAL);
	ck_assert_int_eq(iw_pcapw_rst(&c.f, 2, 0), -EINVAL);
	cap_flush(&c);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 8), 5);
	ck_assert_uint_eq(r[4].flags, 0x04 | F_ACK);
	ck_assert_uint_eq(r[4].seq, 0xFFFFFF01u);
	ck_assert_uint_eq(r[4].ack, 1011);
	cap_free(&c);
}
END_TEST

/* A note: one Ethernet/IPv4/UDP record to port 514 whose payload is the
 * syslog text, with good IPv4 and UDP checksums; cut at the maximum. */
START_TEST(note_record)
{
	static char longtext[IW_PCAPW_NOTE_MAX + 50];
	struct cap c;

	cap_open(&c, IW_PCAPW_NSEC, 0);
	ck_assert_int_eq(iw_pcapw_note(&c.w, "trace incomplete", 1500000000123456789ull), 0);
	memset(longtext, 'x', sizeof(longtext) - 1);
	ck_assert_int_eq(iw_pcapw_note(&c.w, longtext, 0), 0);
	ck_assert_int_eq(iw_pcapw_note(&c.w, NULL, 0), -EINVAL);
	ck_assert_uint_eq(c.w.records, 2);
	cap_flush(&c);
	const uint8_t *p = (const uint8_t *)c.buf + 24;
	ck_assert_uint_eq(le32(p), 1500000000u);
	ck_assert_uint_eq(le32(p + 4), 123456789u);
	uint32_t len = le32(p + 8);
	const uint8_t *f = p + 16, *ip = f + 14, *udp = ip + 20;
	ck_assert_uint_eq(len, 14 + 20 + 8 + 4 + 16);
	ck_assert_uint_eq(be16(f + 12), 0x0800);
	ck_assert_uint_eq(ip[9], 17);
	ck_assert(csum_ok(sum16(0, ip, 20)));
	ck_assert_uint_eq(be16(udp + 2), 514);
	ck_assert_uint_eq(be16(udp + 4), 8 + 4 + 16);
	uint8_t ph[4] = {0, 17, 0, 8 + 4 + 16};
	ck_assert(csum_ok(sum16(sum16(sum16(0, ip + 12, 8), ph, 4), udp, 8 + 4 + 16)));
	ck_assert(!memcmp(udp + 8, "<12>trace incomplete", 20));
	const uint8_t *q = f + len;
	ck_assert_uint_eq(le32(q + 8), 14 + 20 + 8 + 4 + IW_PCAPW_NOTE_MAX);
	ck_assert_uint_eq((size_t)(q + 16 + le32(q + 8) - (const uint8_t *)c.buf), c.len);
	ck_assert_uint_le(16 + le32(q + 8), IW_PCAPW_NOTE_RECORD_MAX);
	cap_free(&c);
}
END_TEST

START_TEST(ipv6_flow)
{
	static uint8_t d[1500];
	struct iovec v = {d, sizeof(d)};
	struct sockaddr_in6 a, b;
	struct cap c;
	struct rec r[8];

	fill(d, sizeof(d), 3);
	cap_open(&c, 0, 0);
	sin6(&a, "2001:db8::1", 1234);
	sin6(&b, "2001:db8::ff:2", 4321);
	ck_assert_int_eq(iw_pcapw_flow_init(&c.f, &c.w, (struct sockaddr *)&a,
					    (struct sockaddr *)&b, 7, 9, 1440),
			 0);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 0), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), 0);
	cap_flush(&c);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 8), 5);
	ck_assert(r[0].v6);
	ck_assert_uint_eq(r[0].len, 14 + 40 + 24);
	ck_assert_uint_eq(r[3].payload_len, 1440);
	ck_assert_uint_eq(r[4].payload_len, 60);
	ck_assert_mem_eq(r[3].ip + 8, &a.sin6_addr, 16);
	ck_assert_mem_eq(r[3].ip + 24, &b.sin6_addr, 16);
	cap_free(&c);
}
END_TEST

START_TEST(byte_cap)
{
	static uint8_t d[100];
	struct iovec v = {d, sizeof(d)};
	struct cap c;
	struct rec r[8];

	/* header 24 + SYN 16+58 + SYN-ACK 16+58 = 172: the ACK does not fit */
	cap_open(&c, 0, 200);
	cap_flow4(&c, 0);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 0), -EFBIG);
	ck_assert(c.w.capped);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 0), -EFBIG);
	ck_assert_int_eq(iw_pcapw_close(&c.w), -EFBIG);
	fflush(c.fp);
	ck_assert_uint_eq(c.len, 172);
	ck_assert_uint_eq(parse(&c, 0xa1b2c3d4u, r, 8), 2);
	cap_free(&c);

	/* a cap below the file header refuses the file */
	cap_open(&c, 0, 0);
	fclose(c.fp);
	free(c.buf);
	c.fp = open_memstream(&c.buf, &c.len);
	ck_assert_int_eq(iw_pcapw_open(&c.w, c.fp, 0, 10), -EFBIG);
	fflush(c.fp);
	ck_assert_uint_eq(c.len, 0);
	cap_free(&c);
}
END_TEST

START_TEST(inet_csum_known)
{
	/* RFC 1071 section 3 example words: sum ddf2, checksum 220d */
	static const uint8_t w[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};

	ck_assert_uint_eq(iw_pcapw_inet_csum(w, sizeof(w)), 0x220d);
	ck_assert_uint_eq(iw_pcapw_inet_csum(w, 0), 0xFFFF);
}
END_TEST

START_TEST(libpcap_reads_back)
{
	static uint8_t d[3000];
	struct iovec v = {d, sizeof(d)};
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_api api;
	struct cap c;

	ck_assert_msg(pcap_api_load(&api), "cannot load libpcap: %s", dlerror());
	fill(d, sizeof(d), 5);
	cap_open(&c, IW_PCAPW_NSEC, 0);
	cap_flow4(&c, 1460);
	ck_assert_int_eq(iw_pcapw_handshake(&c.f, 1000), 0);
	ck_assert_int_eq(iw_pcapw_data(&c.f, IW_PCAPW_A2B, &v, 1, 2000), 0);
	ck_assert_int_eq(iw_pcapw_fin(&c.f, IW_PCAPW_A2B, 3000), 0);
	ck_assert_int_eq(iw_pcapw_fin(&c.f, IW_PCAPW_B2A, 4000), 0);
	cap_flush(&c);

	FILE *in = fmemopen(c.buf, c.len, "rb");
	ck_assert_ptr_nonnull(in);
	pcap_t *p = api.fopen_offline(in, err); /* takes the FILE */
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_int_eq(api.datalink(p), DLT_EN10MB);
	struct pcap_pkthdr *h;
	const u_char *pkt;
	uint32_t sizes[9], n = 0;
	int rc;
	while ((rc = api.next_ex(p, &h, &pkt)) == 1) {
		ck_assert_uint_lt(n, 9);
		ck_assert_uint_eq(h->caplen, h->len);
		sizes[n++] = h->len;
	}
	ck_assert_int_eq(rc, PCAP_ERROR_BREAK); /* clean end of file */
	api.close(p);
	ck_assert_uint_eq(n, 9);
	ck_assert_uint_eq(sizes[3], 54 + 1460);
	ck_assert_uint_eq(sizes[5], 54 + 80);
	cap_free(&c);
}
END_TEST

Suite *suite_pcap_writer(void)
{
	Suite *s = suite_create("pcap_writer");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, file_header_usec_nsec);
	tcase_add_test(tc, bad_args);
	tcase_add_test(tc, handshake_ipv4);
	tcase_add_test(tc, mss_split_and_acks);
	tcase_add_test(tc, seq_wraps);
	tcase_add_test(tc, fin_close);
	tcase_add_test(tc, rst_ends_flow);
	tcase_add_test(tc, note_record);
	tcase_add_test(tc, ipv6_flow);
	tcase_add_test(tc, byte_cap);
	tcase_add_test(tc, inet_csum_known);
	tcase_add_test(tc, libpcap_reads_back);
	suite_add_tcase(s, tc);
	return s;
}
