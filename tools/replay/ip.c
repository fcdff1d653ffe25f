/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IPv4 / IPv6 / TCP header walk for one captured frame. Lengths come from
 * the IP header, not the frame, so Ethernet padding is never taken for
 * payload; octets the snapshot length cut off are reported as missing so
 * that the reassembly can report them as a gap instead of inventing data.
 */
#include <sys/socket.h>
#include <string.h>

#include "capture.h"
#include "util.h"

#define IPV4_MIN 20
#define IPV6_HDR 40
#define TCP_MIN 20
enum { PROTO_TCP = 6, V6_HOP = 0, V6_ROUTING = 43, V6_FRAG = 44, V6_DSTOPT = 60, V6_NONE = 59 };

static int tcp(const uint8_t *t, size_t cap, size_t len, struct rp_pkt *p)
{
	size_t hl;

	if (cap < TCP_MIN || len < TCP_MIN)
		return -1;
	hl = (size_t)(t[12] >> 4) * 4;
	if (hl < TCP_MIN || hl > len || hl > cap)
		return -1;
	p->src.port = (uint16_t)rp_get_be(t, 2);
	p->dst.port = (uint16_t)rp_get_be(t + 2, 2);
	p->seq = (uint32_t)rp_get_be(t + 4, 4);
	p->ack = (uint32_t)rp_get_be(t + 8, 4);
	p->flags = t[13];
	p->payload = t + hl;
	p->len = (uint32_t)((cap < len ? cap : len) - hl);
	p->missing = (uint32_t)(len - hl - p->len);
	return 1;
}

static int ipv4(const uint8_t *ip, size_t cap, size_t wire, struct rp_pkt *p)
{
	size_t hl, total;
	unsigned frag;

	if (cap < IPV4_MIN)
		return -1;
	hl = (size_t)(ip[0] & 0x0F) * 4;
	total = (size_t)rp_get_be(ip + 2, 2);
	/* A TSO capture may show 0 in the total length: trust the frame. */
	if (total == 0)
		total = wire;
	if (hl < IPV4_MIN || total < hl || hl > cap)
		return -1;
	frag = (unsigned)rp_get_be(ip + 6, 2);
	if (frag & 0x3FFF) /* MF or a fragment offset */
		return -2;
	if (ip[9] != PROTO_TCP)
		return 0;
	p->src.family = p->dst.family = AF_INET;
	memcpy(p->src.addr, ip + 12, 4);
	memcpy(p->dst.addr, ip + 16, 4);
	return tcp(ip + hl, cap - hl, total - hl, p);
}

/* Walk the extension headers to TCP. */
static int ipv6_next(const uint8_t *ip, size_t cap, size_t *at, unsigned *nh)
{
	while (*nh == V6_HOP || *nh == V6_ROUTING || *nh == V6_DSTOPT || *nh == V6_FRAG) {
		if (*at + 8 > cap)
			return -1;
		if (*nh == V6_FRAG) {
			/* Only an atomic fragment (offset 0, no M) is whole. */
			if (rp_get_be(ip + *at + 2, 2) & 0xFFF9)
				return -2;
			*nh = ip[*at];
			*at += 8;
			continue;
		}
		unsigned next = ip[*at];
		*at += ((size_t)ip[*at + 1] + 1) * 8;
		*nh = next;
	}
	return 0;
}

static int ipv6(const uint8_t *ip, size_t cap, size_t wire, struct rp_pkt *p)
{
	size_t at = IPV6_HDR, total;
	unsigned nh;
	int rc;

	if (cap < IPV6_HDR)
		return -1;
	total = IPV6_HDR + (size_t)rp_get_be(ip + 4, 2);
	if (total == IPV6_HDR) /* jumbogram or TSO: trust the frame */
		total = wire;
	nh = ip[6];
	rc = ipv6_next(ip, cap, &at, &nh);
	if (rc)
		return rc;
	if (nh != PROTO_TCP)
		return 0;
	if (at > total || at > cap)
		return -1;
	p->src.family = p->dst.family = AF_INET6;
	memcpy(p->src.addr, ip + 8, 16);
	memcpy(p->dst.addr, ip + 24, 16);
	return tcp(ip + at, cap - at, total - at, p);
}

int rp_ip_tcp(const uint8_t *ip, size_t caplen, size_t wire, int ipver, struct rp_pkt *p)
{
	if (caplen < 1 || (ip[0] >> 4) != ipver)
		return -1;
	return ipver == 4 ? ipv4(ip, caplen, wire, p) : ipv6(ip, caplen, wire, p);
}
