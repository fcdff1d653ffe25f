/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classic pcap writer with synthesised Ethernet/IP/TCP framing (see
 * pcap_writer.h). Headers are built octet by octet into a small array; the
 * payload is checksummed and written straight from the caller's iovecs.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "diag/pcap_writer.h"
#include "wire/cursor.h"

#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define PCAP_MAGIC_NSEC 0xa1b23c4du
#define PCAP_FILE_HDR_LEN 24
#define PCAP_REC_HDR_LEN 16

#define ETH_HDR_LEN 14
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define IPV4_HDR_LEN 20
#define IPV6_HDR_LEN 40
#define TCP_HDR_LEN 20
#define TCP_OPT_MSS_LEN 4
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define UDP_HDR_LEN 8
#define SYSLOG_PORT 514
#define SYNTH_TTL 64
#define TCP_WINDOW 0xFFFF
/* Largest header we build: Ethernet + IPv6 + TCP with the MSS option. */
#define FRAME_HDR_MAX (ETH_HDR_LEN + IPV6_HDR_LEN + TCP_HDR_LEN + TCP_OPT_MSS_LEN)

enum { TCP_FIN = 0x01, TCP_SYN = 0x02, TCP_RST = 0x04, TCP_PSH = 0x08, TCP_ACK = 0x10 };

/* ------------------------------------------------------- file records */

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	iw_put_be16(p, (uint16_t)(v >> 16));
	iw_put_be16(p + 2, (uint16_t)v);
}

/* Write n octets unless the cap forbids it; errors are sticky. */
static int out(struct iw_pcapw *w, const void *p, size_t n)
{
	if (w->err)
		return w->err;
	if (n && fwrite(p, 1, n, w->fp) != n)
		w->err = -EIO;
	else
		w->written += n;
	return w->err;
}

/* Reserve room for a whole record (or the file header) under the cap, so
 * that a file is never cut inside a record. */
static int reserve(struct iw_pcapw *w, uint64_t n)
{
	if (w->err)
		return w->err;
	if (w->byte_cap && w->written + n > w->byte_cap) {
		w->capped = true;
		w->err = -EFBIG;
	}
	return w->err;
}

int iw_pcapw_open(struct iw_pcapw *w, FILE *fp, unsigned flags, uint64_t byte_cap)
{
	uint8_t h[PCAP_FILE_HDR_LEN] = {0};

	if (!w || !fp || (flags & ~(unsigned)IW_PCAPW_NSEC))
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->fp = fp;
	w->flags = flags;
	w->byte_cap = byte_cap;
	iw_put_le32(h, (flags & IW_PCAPW_NSEC) ? PCAP_MAGIC_NSEC : PCAP_MAGIC_USEC);
	put_le16(h + 4, 2); /* version 2.4 */
	put_le16(h + 6, 4);
	/* thiszone and sigfigs stay 0: timestamps are UTC, as libpcap writes */
	iw_put_le32(h + 16, IW_PCAPW_SNAPLEN);
	iw_put_le32(h + 20, IW_PCAPW_LINKTYPE_ETHERNET);
	if (reserve(w, sizeof(h)))
		return w->err;
	return out(w, h, sizeof(h));
}

int iw_pcapw_close(struct iw_pcapw *w)
{
	if (!w || !w->fp)
		return -EINVAL;
	if (fflush(w->fp) != 0 && !w->err)
		w->err = -EIO;
	return w->err;
}

/* ------------------------------------------------------- checksums */

/* One's complement sum over pieces of any length: a piece may end on an odd
 * octet, and the next piece then continues the 16-bit word. */
struct csum {
	uint64_t sum;
	bool odd;
};

/* The sum of the even-aligned 16-bit big-endian words of p[0..n), n a
 * multiple of 8, taken 8 octets at a time: one's complement addition is
 * byte-order independent (RFC 1071 2(B)), so native words are summed, in
 * 32-bit halves so that no carry is lost, and the folded result is put
 * back in network order. The tracer checksums every octet it writes. */
static uint32_t csum_bulk(const uint8_t *p, size_t n)
{
	uint64_t acc = 0;
	for (; n; p += 8, n -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		acc += (v & 0xFFFFFFFFu) + (v >> 32);
	}
	while (acc >> 16)
		acc = (acc & 0xFFFF) + (acc >> 16);
	uint16_t s = (uint16_t)acc;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	s = (uint16_t)(s << 8 | s >> 8);
#endif
	return s;
}

static void csum_add(struct csum *c, const uint8_t *p, size_t n)
{
	if (n && c->odd) {
		c->sum += *p++;
		n--;
		c->odd = false;
	}
	/* acc in csum_bulk would overflow only past 2^34 octets. */
	size_t bulk = n & ~(size_t)7;
	c->sum += csum_bulk(p, bulk);
	p += bulk;
	n -= bulk;
	for (; n >= 2; p += 2, n -= 2)
		c->sum += (uint32_t)((p[0] << 8) | p[1]);
	if (n) {
		c->sum += (uint32_t)p[0] << 8;
		c->odd = true;
	}
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t iw_pcapw_inet_csum(const void *buf, size_t len)
{
	struct csum c = {0, false};

	csum_add(&c, buf, len);
	return csum_fold(c.sum);
}

/* ------------------------------------------------------- iovec ranges */

/* A read position in the caller's iovecs. */
struct iov_pos {
	const struct iovec *iov;
	int cnt;
	int idx;
	size_t off;
};

/* Next contiguous piece of at most max octets; advances the position. */
static size_t iov_take(struct iov_pos *pos, size_t max, const uint8_t **p)
{
	while (pos->idx < pos->cnt && pos->off == pos->iov[pos->idx].iov_len) {
		pos->idx++;
		pos->off = 0;
	}
	if (pos->idx >= pos->cnt || max == 0)
		return 0;
	size_t n = pos->iov[pos->idx].iov_len - pos->off;
	if (n > max)
		n = max;
	*p = (const uint8_t *)pos->iov[pos->idx].iov_base + pos->off;
	pos->off += n;
	return n;
}

static void csum_iov(struct csum *c, struct iov_pos pos, size_t len)
{
	const uint8_t *p;
	size_t n;

	while (len && (n = iov_take(&pos, len, &p)) > 0) {
		csum_add(c, p, n);
		len -= n;
	}
}

static int out_iov(struct iw_pcapw *w, struct iov_pos *pos, size_t len)
{
	const uint8_t *p;
	size_t n;

	while (len && (n = iov_take(pos, len, &p)) > 0) {
		if (out(w, p, n))
			return w->err;
		len -= n;
	}
	return w->err;
}

/* ------------------------------------------------------- frame headers */

static bool is_v6(const struct iw_pcapw_flow *f) { return f->ep[0].family == AF_INET6; }

static size_t addr_len(const struct iw_pcapw_flow *f) { return is_v6(f) ? 16 : 4; }

static size_t put_eth(uint8_t *h, const struct iw_pcapw_flow *f, int dir)
{
	memcpy(h, f->ep[!dir].mac, 6);
	memcpy(h + 6, f->ep[dir].mac, 6);
	iw_put_be16(h + 12, is_v6(f) ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);
	return ETH_HDR_LEN;
}

static size_t put_ipv4(uint8_t *h, struct iw_pcapw_flow *f, int dir, size_t tcp_len)
{
	memset(h, 0, IPV4_HDR_LEN);
	h[0] = 0x45; /* version 4, 5 words */
	iw_put_be16(h + 2, (uint16_t)(IPV4_HDR_LEN + tcp_len));
	iw_put_be16(h + 4, f->ep[dir].ip_id++);
	iw_put_be16(h + 6, 0x4000); /* DF: TCP does its own segmentation */
	h[8] = SYNTH_TTL;
	h[9] = IP_PROTO_TCP;
	memcpy(h + 12, f->ep[dir].addr, 4);
	memcpy(h + 16, f->ep[!dir].addr, 4);
	iw_put_be16(h + 10, iw_pcapw_inet_csum(h, IPV4_HDR_LEN));
	return IPV4_HDR_LEN;
}

static size_t put_ipv6(uint8_t *h, const struct iw_pcapw_flow *f, int dir, size_t tcp_len)
{
	memset(h, 0, IPV6_HDR_LEN);
	h[0] = 0x60; /* version 6, no traffic class or flow label */
	iw_put_be16(h + 4, (uint16_t)tcp_len);
	h[6] = IP_PROTO_TCP;
	h[7] = SYNTH_TTL;
	memcpy(h + 8, f->ep[dir].addr, 16);
	memcpy(h + 24, f->ep[!dir].addr, 16);
	return IPV6_HDR_LEN;
}

/* The TCP checksum covers a pseudo-header of the IP addresses, protocol and
 * TCP length (RFC 793; RFC 8200 8.1 for IPv6), the header and the payload. */
static uint16_t tcp_csum(const struct iw_pcapw_flow *f, int dir, const uint8_t *tcp,
			 size_t tcp_hdr_len, struct iov_pos pos, size_t len)
{
	struct csum c = {0, false};
	uint8_t tail[8] = {0};
	size_t alen = addr_len(f);
	uint32_t tcp_len = (uint32_t)(tcp_hdr_len + len);

	csum_add(&c, f->ep[dir].addr, alen);
	csum_add(&c, f->ep[!dir].addr, alen);
	if (is_v6(f)) {
		put_be32(tail, tcp_len);
		tail[7] = IP_PROTO_TCP;
		csum_add(&c, tail, 8);
	} else {
		tail[1] = IP_PROTO_TCP;
		iw_put_be16(tail + 2, (uint16_t)tcp_len);
		csum_add(&c, tail, 4);
	}
	csum_add(&c, tcp, tcp_hdr_len);
	csum_iov(&c, pos, len);
	return csum_fold(c.sum);
}

struct seg {
	uint8_t flags;  /* TCP_* */
	uint32_t seq;
	struct iov_pos pos;
	size_t len;     /* payload octets */
};

static size_t put_tcp(uint8_t *h, const struct iw_pcapw_flow *f, int dir, const struct seg *s)
{
	size_t len = TCP_HDR_LEN + ((s->flags & TCP_SYN) ? TCP_OPT_MSS_LEN : 0);

	memset(h, 0, len);
	iw_put_be16(h, f->ep[dir].port);
	iw_put_be16(h + 2, f->ep[!dir].port);
	put_be32(h + 4, s->seq);
	put_be32(h + 8, (s->flags & TCP_ACK) ? f->ep[!dir].nxt : 0);
	h[12] = (uint8_t)((len / 4) << 4);
	h[13] = s->flags;
	iw_put_be16(h + 14, TCP_WINDOW);
	if (s->flags & TCP_SYN) {
		h[20] = 2; /* MSS option: kind 2, length 4 */
		h[21] = 4;
		iw_put_be16(h + 22, (uint16_t)f->mss);
	}
	iw_put_be16(h + 16, tcp_csum(f, dir, h, len, s->pos, s->len));
	return len;
}

/* The 16-octet record header: timestamp, captured and original length. */
static void put_rec_hdr(uint8_t *rec, const struct iw_pcapw *w, size_t frame_len, uint64_t ts_ns)
{
	uint64_t sec = ts_ns / 1000000000u, frac = ts_ns % 1000000000u;

	if (!(w->flags & IW_PCAPW_NSEC))
		frac /= 1000;
	iw_put_le32(rec, (uint32_t)sec);
	iw_put_le32(rec + 4, (uint32_t)frac);
	iw_put_le32(rec + 8, (uint32_t)frame_len);
	iw_put_le32(rec + 12, (uint32_t)frame_len);
}

/* Build and write one frame. Sequence state is the caller's. */
static int emit(struct iw_pcapw_flow *f, int dir, struct seg *s, uint64_t ts_ns)
{
	struct iw_pcapw *w = f->w;
	uint8_t rec[PCAP_REC_HDR_LEN];
	uint8_t h[FRAME_HDR_MAX];
	uint8_t tcp[TCP_HDR_LEN + TCP_OPT_MSS_LEN];
	size_t tcp_len = put_tcp(tcp, f, dir, s);
	size_t ip_hlen = is_v6(f) ? IPV6_HDR_LEN : IPV4_HDR_LEN;
	size_t frame_len = ETH_HDR_LEN + ip_hlen + tcp_len + s->len;

	if (reserve(w, PCAP_REC_HDR_LEN + frame_len))
		return w->err;
	size_t n = put_eth(h, f, dir);
	if (is_v6(f))
		n += put_ipv6(h + n, f, dir, tcp_len + s->len);
	else
		n += put_ipv4(h + n, f, dir, tcp_len + s->len);
	memcpy(h + n, tcp, tcp_len);
	n += tcp_len;
	put_rec_hdr(rec, w, frame_len, ts_ns);
	if (out(w, rec, sizeof(rec)) || out(w, h, n) || out_iov(w, &s->pos, s->len))
		return w->err;
	w->records++;
	return 0;
}

/* A segment with no payload. */
static int emit_ctl(struct iw_pcapw_flow *f, int dir, uint8_t flags, uint32_t seq,
		    uint64_t ts_ns)
{
	struct seg s = {.flags = flags, .seq = seq};

	return emit(f, dir, &s, ts_ns);
}

/* ------------------------------------------------------- flows */

static int ep_init(struct iw_pcapw_ep *ep, const struct sockaddr *sa, uint32_t isn, int idx)
{
	memset(ep, 0, sizeof(*ep));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		memcpy(ep->addr, &in->sin_addr, 4);
		ep->port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memcpy(ep->addr, &in6->sin6_addr, 16);
		ep->port = ntohs(in6->sin6_port);
	} else {
		return -EINVAL;
	}
	ep->family = sa->sa_family;
	/* Locally administered unicast MACs, one per side. */
	ep->mac[0] = 0x02;
	ep->mac[5] = (uint8_t)(idx + 1);
	ep->isn = isn;
	/* As if the SYN had been sent: data starts at isn + 1 whether or not
	 * the handshake is written (a trace may start mid-connection). */
	ep->nxt = isn + 1;
	ep->ip_id = (uint16_t)(idx + 1) << 12;
	return 0;
}

int iw_pcapw_flow_init(struct iw_pcapw_flow *f, struct iw_pcapw *w, const struct sockaddr *a,
		       const struct sockaddr *b, uint32_t isn_a, uint32_t isn_b, uint32_t mss)
{
	if (!f || !w || !a || !b || a->sa_family != b->sa_family || mss > IW_PCAPW_MAX_MSS)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	if (ep_init(&f->ep[0], a, isn_a, 0) || ep_init(&f->ep[1], b, isn_b, 1))
		return -EINVAL;
	f->w = w;
	f->mss = mss ? mss : IW_PCAPW_DEFAULT_MSS;
	return 0;
}

int iw_pcapw_handshake(struct iw_pcapw_flow *f, uint64_t ts_ns)
{
	if (!f)
		return -EINVAL;
	if (emit_ctl(f, IW_PCAPW_A2B, TCP_SYN, f->ep[0].isn, ts_ns) ||
	    emit_ctl(f, IW_PCAPW_B2A, TCP_SYN | TCP_ACK, f->ep[1].isn, ts_ns) ||
	    emit_ctl(f, IW_PCAPW_A2B, TCP_ACK, f->ep[0].nxt, ts_ns))
		return f->w->err;
	return 0;
}

static bool dir_ok(const struct iw_pcapw_flow *f, enum iw_pcapw_dir dir)
{
	return f && (dir == IW_PCAPW_A2B || dir == IW_PCAPW_B2A) && !f->ep[dir].fin;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	return total;
}

int iw_pcapw_data(struct iw_pcapw_flow *f, enum iw_pcapw_dir dir, const struct iovec *iov,
		  int iovcnt, uint64_t ts_ns)
{
	if (!dir_ok(f, dir) || iovcnt < 0 || (iovcnt && !iov))
		return -EINVAL;
	struct iw_pcapw_ep *ep = &f->ep[dir];
	struct iov_pos pos = {iov, iovcnt, 0, 0};
	size_t left = iov_total(iov, iovcnt);

	while (left) {
		struct seg s = {.flags = TCP_ACK, .seq = ep->nxt, .pos = pos};
		s.len = left < f->mss ? left : f->mss;
		if (s.len == left)
			s.flags |= TCP_PSH;
		if (emit(f, dir, &s, ts_ns))
			return f->w->err;
		pos = s.pos; /* emit advanced it past this segment */
		ep->nxt += (uint32_t)s.len;
		left -= s.len;
	}
	return 0;
}

int iw_pcapw_fin(struct iw_pcapw_flow *f, enum iw_pcapw_dir dir, uint64_t ts_ns)
{
	if (!dir_ok(f, dir))
		return -EINVAL;
	struct iw_pcapw_ep *ep = &f->ep[dir], *peer = &f->ep[!dir];

	if (emit_ctl(f, dir, TCP_FIN | TCP_ACK, ep->nxt, ts_ns))
		return f->w->err;
	ep->nxt++; /* a FIN takes one sequence number */
	ep->fin = true;
	if (peer->fin && !f->both_fin) {
		if (emit_ctl(f, !dir, TCP_ACK, peer->nxt, ts_ns))
			return f->w->err;
		f->both_fin = true;
	}
	return 0;
}

int iw_pcapw_rst(struct iw_pcapw_flow *f, enum iw_pcapw_dir dir, uint64_t ts_ns)
{
	if (!f || (dir != IW_PCAPW_A2B && dir != IW_PCAPW_B2A))
		return -EINVAL;
	if (emit_ctl(f, dir, TCP_RST | TCP_ACK, f->ep[dir].nxt, ts_ns))
		return f->w->err;
	f->ep[0].fin = f->ep[1].fin = true;
	f->both_fin = true;
	return 0;
}

/* ------------------------------------------------------- notes */

int iw_pcapw_note(struct iw_pcapw *w, const char *text, uint64_t ts_ns)
{
	static const uint8_t lo[4] = {127, 0, 0, 1};
	static const char pri[] = "<12>"; /* facility user, severity warning */
	uint8_t rec[PCAP_REC_HDR_LEN], h[ETH_HDR_LEN + IPV4_HDR_LEN + UDP_HDR_LEN];
	uint8_t *ip = h + ETH_HDR_LEN, *udp = ip + IPV4_HDR_LEN;
	uint8_t pseudo[12] = {0};
	size_t len = text ? strnlen(text, IW_PCAPW_NOTE_MAX) : 0;
	size_t udp_len = UDP_HDR_LEN + sizeof(pri) - 1 + len;
	struct csum c = {0, false};

	if (!w || !w->fp || !text)
		return -EINVAL;
	if (reserve(w, PCAP_REC_HDR_LEN + sizeof(h) + udp_len - UDP_HDR_LEN))
		return w->err;
	memset(h, 0, sizeof(h));
	h[0] = h[6] = 0x02; /* locally administered MACs, as for flows */
	iw_put_be16(h + 12, ETHERTYPE_IPV4);
	ip[0] = 0x45;
	iw_put_be16(ip + 2, (uint16_t)(IPV4_HDR_LEN + udp_len));
	ip[8] = SYNTH_TTL;
	ip[9] = IP_PROTO_UDP;
	memcpy(ip + 12, lo, 4);
	memcpy(ip + 16, lo, 4);
	iw_put_be16(ip + 10, iw_pcapw_inet_csum(ip, IPV4_HDR_LEN));
	iw_put_be16(udp, SYSLOG_PORT);
	iw_put_be16(udp + 2, SYSLOG_PORT);
	iw_put_be16(udp + 4, (uint16_t)udp_len);
	/* UDP checksum: pseudo-header (addresses, protocol, length), header, data. */
	memcpy(pseudo, lo, 4);
	memcpy(pseudo + 4, lo, 4);
	pseudo[9] = IP_PROTO_UDP;
	iw_put_be16(pseudo + 10, (uint16_t)udp_len);
	csum_add(&c, pseudo, sizeof(pseudo));
	csum_add(&c, udp, UDP_HDR_LEN);
	csum_add(&c, (const uint8_t *)pri, sizeof(pri) - 1);
	csum_add(&c, (const uint8_t *)text, len);
	uint16_t sum = csum_fold(c.sum);
	iw_put_be16(udp + 6, sum ? sum : 0xFFFF); /* 0 would mean "no checksum" */
	put_rec_hdr(rec, w, sizeof(h) + udp_len - UDP_HDR_LEN, ts_ns);
	if (out(w, rec, sizeof(rec)) || out(w, h, sizeof(h)) || out(w, pri, sizeof(pri) - 1) ||
	    out(w, text, len))
		return w->err;
	w->records++;
	return 0;
}
