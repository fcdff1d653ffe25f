/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading a capture (pcap or pcapng, through libpcap) as a sequence of TCP
 * segments. Frames that are not TCP over IPv4/IPv6 are counted and
 * skipped; IP fragments are not reassembled (iWARP senders set DF and fit
 * each FPDU in one segment) and are counted too.
 */
#ifndef RP_CAPTURE_H
#define RP_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rp.h"

enum rp_tcp_flags { RP_FIN = 0x01, RP_SYN = 0x02, RP_RST = 0x04, RP_PSH = 0x08, RP_ACK = 0x10 };

/* One TCP segment. payload borrows libpcap's buffer until the next call. */
struct rp_pkt {
	uint64_t frame;       /* 1-based, as Wireshark numbers frames */
	uint64_t ts_ns;
	struct rp_ep src, dst;
	uint32_t seq, ack;
	uint8_t flags;
	const uint8_t *payload;
	uint32_t len;         /* captured payload octets */
	uint32_t missing;     /* payload octets cut off by the snapshot length */
};

struct rp_capture_stats {
	uint64_t frames, tcp, not_ip, not_tcp, fragments, malformed, snapped;
};

struct rp_capture;

/* NULL with a message in err on failure (unreadable, unknown link type). */
struct rp_capture *rp_capture_open(const char *path, char *err, size_t errcap);
/* The same from an open stream (fuzz/fuzz_replay_capture reads memory
 * through fmemopen); fp is closed by rp_capture_close, or here on failure.
 * name is for the messages. */
struct rp_capture *rp_capture_fopen(FILE *fp, const char *name, char *err, size_t errcap);
/* 1: *p is the next TCP segment; 0: end of capture; -1: read error
 * (rp_capture_error: a truncated file, say). */
int rp_capture_next(struct rp_capture *c, struct rp_pkt *p);
const char *rp_capture_error(const struct rp_capture *c);
const struct rp_capture_stats *rp_capture_stats(const struct rp_capture *c);
void rp_capture_close(struct rp_capture *c);

/* IP and TCP headers of one frame from the IP header on (ip.c):
 * 1 TCP (p filled but frame/ts), 0 another protocol, -1 malformed,
 * -2 an IP fragment. wire is the IP datagram's length on the wire as far
 * as the frame says (caplen or more). */
int rp_ip_tcp(const uint8_t *ip, size_t caplen, size_t wire, int ipver, struct rp_pkt *p);

#endif
