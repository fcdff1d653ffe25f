/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Link layers iwarp-replay understands: Ethernet (with 802.1Q/802.1ad
 * tags), Linux cooked v1 and v2, raw IP (DLT_RAW, DLT_IPV4, DLT_IPV6) and
 * BSD loopback (DLT_NULL, DLT_LOOP). Anything else is refused up front, so
 * a capture we cannot read is an error rather than "no iWARP found".
 */
#ifndef RP_LINK_H
#define RP_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool rp_link_known(int dlt);

/* Find the IP header in one frame: 0 with *off (its offset) and *ipver
 * (4 or 6), or -1 if the frame carries no IP (ARP, LLDP, ...). */
int rp_link_ip(int dlt, const uint8_t *p, size_t caplen, size_t *off, int *ipver);

#endif
