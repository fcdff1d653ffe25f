/* SPDX-License-Identifier: BSD-2-Clause */
#include "link.h"

#include <pcap/pcap.h>

#include "util.h"

#define ETH_HDR 14
#define VLAN_TAG 4
#define SLL_HDR 16
#define SLL2_HDR 20
#define NULL_HDR 4
/* LINKTYPE_RAW as stored in files; libpcap normally maps it to DLT_RAW. */
#define LINKTYPE_RAW 101

enum { ET_IPV4 = 0x0800, ET_IPV6 = 0x86DD, ET_VLAN = 0x8100, ET_QINQ = 0x88A8, ET_QINQ_OLD = 0x9100 };

bool rp_link_known(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_RAW:
	case LINKTYPE_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
	case DLT_NULL:
	case DLT_LOOP:
		return true;
	default:
		return false;
	}
}

static int by_ethertype(unsigned et, size_t off, size_t *out, int *ipver)
{
	if (et != ET_IPV4 && et != ET_IPV6)
		return -1;
	*out = off;
	*ipver = et == ET_IPV4 ? 4 : 6;
	return 0;
}

static int ethernet(const uint8_t *p, size_t caplen, size_t *off, int *ipver)
{
	size_t at = ETH_HDR - 2;
	unsigned et;

	if (caplen < ETH_HDR)
		return -1;
	et = (unsigned)rp_get_be(p + at, 2);
	/* Stacked VLAN tags: each pushes the real type 4 octets on. */
	while ((et == ET_VLAN || et == ET_QINQ || et == ET_QINQ_OLD) && at + VLAN_TAG + 2 <= caplen) {
		at += VLAN_TAG;
		et = (unsigned)rp_get_be(p + at, 2);
	}
	return by_ethertype(et, at + 2, off, ipver);
}

/* Raw IP and loopback: the version nibble says which IP it is. The
 * loopback header's address family is in the capturing host's byte order
 * and its IPv6 value differs between BSDs, so it is not trusted. */
static int by_version(const uint8_t *p, size_t caplen, size_t at, size_t *off, int *ipver)
{
	unsigned v;

	if (caplen <= at)
		return -1;
	v = p[at] >> 4;
	if (v != 4 && v != 6)
		return -1;
	*off = at;
	*ipver = (int)v;
	return 0;
}

int rp_link_ip(int dlt, const uint8_t *p, size_t caplen, size_t *off, int *ipver)
{
	switch (dlt) {
	case DLT_EN10MB:
		return ethernet(p, caplen, off, ipver);
	case DLT_LINUX_SLL:
		if (caplen < SLL_HDR)
			return -1;
		return by_ethertype((unsigned)rp_get_be(p + 14, 2), SLL_HDR, off, ipver);
	case DLT_LINUX_SLL2:
		if (caplen < SLL2_HDR)
			return -1;
		return by_ethertype((unsigned)rp_get_be(p, 2), SLL2_HDR, off, ipver);
	case DLT_NULL:
	case DLT_LOOP:
		return by_version(p, caplen, NULL_HDR, off, ipver);
	default: /* raw IP of every flavour */
		return by_version(p, caplen, 0, off, ipver);
	}
}
