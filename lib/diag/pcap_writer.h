/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal writer of classic pcap files (LINKTYPE_ETHERNET) that synthesises
 * the Ethernet, IPv4/IPv6 and TCP headers of one TCP connection, so that a
 * byte stream the core produced (MPA frames, FPDUs) can be opened in
 * Wireshark as if it had been captured. Used by the tests, the tshark
 * cross-check and the library's pcap tracing (IWARP_PCAP=path).
 *
 * Sans-I/O in spirit: no clock is read here; every record carries the
 * timestamp the caller passes (nanoseconds since the epoch). The only I/O is
 * fwrite() to the caller's FILE *, which the caller opens and closes.
 *
 * The output is deterministic (all fields little-endian in the file, no host
 * state), so the same calls give the same file on every machine.
 */
#ifndef IW_PCAP_WRITER_H
#define IW_PCAP_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define IW_PCAPW_DEFAULT_MSS 1460
/* Largest MSS whose segment still fits the 16-bit IPv4 total length. */
#define IW_PCAPW_MAX_MSS 65495
#define IW_PCAPW_SNAPLEN 262144
#define IW_PCAPW_LINKTYPE_ETHERNET 1

enum iw_pcapw_flags {
	IW_PCAPW_NSEC = 1 << 0, /* nanosecond timestamps (magic 0xa1b23c4d) */
};

/* One pcap file. All fields are the writer's; read them, do not set them. */
struct iw_pcapw {
	FILE *fp;
	unsigned flags;
	uint64_t byte_cap; /* 0: unlimited */
	uint64_t written;  /* octets written, file header included */
	uint64_t records;  /* records written */
	bool capped;       /* a record was refused by the byte cap */
	int err;           /* sticky: first write error (negative errno) */
};

/* One side of the connection. */
struct iw_pcapw_ep {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* 4 (IPv4) or 16 (IPv6) octets, network order */
	uint16_t port;    /* host order */
	uint8_t mac[6];   /* synthesised: 02:00:00:00:00:01 / :02 */
	uint32_t isn;     /* initial sequence number */
	uint32_t nxt;     /* next sequence number this side sends */
	uint16_t ip_id;   /* next IPv4 identification */
	bool fin;         /* this side has sent its FIN (or the flow was reset) */
};

/* Direction of a segment: side 0 (the first endpoint given, usually the
 * TCP/MPA initiator) to side 1, or back. */
enum iw_pcapw_dir { IW_PCAPW_A2B = 0, IW_PCAPW_B2A = 1 };

/* One TCP connection in a file. */
struct iw_pcapw_flow {
	struct iw_pcapw *w;
	struct iw_pcapw_ep ep[2];
	uint32_t mss;    /* payload octets per segment */
	bool both_fin;   /* the closing ACK has been written */
};

/* Start a file on fp (opened for writing by the caller) and write the
 * 24-octet file header. byte_cap (0 = none) bounds the file: a record that
 * would go past it is not written, w->capped is set, and that call and every
 * later one return -EFBIG. Returns 0, -EINVAL, -EFBIG (cap below the file
 * header) or -EIO. */
int iw_pcapw_open(struct iw_pcapw *w, FILE *fp, unsigned flags, uint64_t byte_cap);

/* Flush. The FILE * stays the caller's to fclose(). Returns the sticky
 * error: 0, -EIO, or -EFBIG if the cap cut the capture short. */
int iw_pcapw_close(struct iw_pcapw *w);

/* Describe a connection between a (side 0) and b (side 1): sockaddr_in or
 * sockaddr_in6, both of one family. isn_a/isn_b are the initial sequence
 * numbers; mss 0 means IW_PCAPW_DEFAULT_MSS. Nothing is written: call
 * iw_pcapw_handshake() for the SYNs, or go straight to data when the
 * connection was picked up mid-stream. Returns 0 or -EINVAL. */
int iw_pcapw_flow_init(struct iw_pcapw_flow *f, struct iw_pcapw *w, const struct sockaddr *a,
		       const struct sockaddr *b, uint32_t isn_a, uint32_t isn_b, uint32_t mss);

/* SYN (a to b), SYN-ACK, ACK, all stamped ts_ns. The SYNs carry the MSS
 * option. Returns 0 or the writer's error. */
int iw_pcapw_handshake(struct iw_pcapw_flow *f, uint64_t ts_ns);

/* Stream octets from one side: split into segments of at most f->mss
 * octets (PSH on the last), each acknowledging everything the other side
 * sent. Zero octets write nothing. Returns 0, -EINVAL (bad dir, or that
 * side already sent FIN) or the writer's error. */
int iw_pcapw_data(struct iw_pcapw_flow *f, enum iw_pcapw_dir dir, const struct iovec *iov,
		  int iovcnt, uint64_t ts_ns);

/* FIN+ACK from one side. When both sides have sent theirs, the closing ACK
 * follows. Returns 0, -EINVAL (FIN already sent) or the writer's error. */
int iw_pcapw_fin(struct iw_pcapw_flow *f, enum iw_pcapw_dir dir, uint64_t ts_ns);

/* RST+ACK from one side: an abortive close. The flow takes nothing more
 * (both sides count as finished). Returns 0, -EINVAL or the writer's
 * error. */
int iw_pcapw_rst(struct iw_pcapw_flow *f, enum iw_pcapw_dir dir, uint64_t ts_ns);

/* Longest note text; longer text is cut. */
#define IW_PCAPW_NOTE_MAX 200
/* Octets a note record takes in the file at most. */
#define IW_PCAPW_NOTE_RECORD_MAX (16 + 14 + 20 + 8 + 4 + IW_PCAPW_NOTE_MAX)

/* A note in the capture itself: a syslog message (UDP, 127.0.0.1 port 514
 * to itself, severity warning), which Wireshark shows as text. Classic pcap
 * has no comments; the tracer says this way that a trace is incomplete.
 * Returns 0 or the writer's error (the byte cap applies). */
int iw_pcapw_note(struct iw_pcapw *w, const char *text, uint64_t ts_ns);

/* The Internet checksum (RFC 1071) of buf, folded and complemented: what
 * goes into an IPv4 header checksum field. Exposed for the tests. */
uint16_t iw_pcapw_inet_csum(const void *buf, size_t len);

#endif /* IW_PCAP_WRITER_H */
