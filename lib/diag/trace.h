/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pcap tracing of a context's connections (iw_context_attr.pcap_path, or
 * IWARP_PCAP in the environment): every octet each connection sends and
 * receives, MPA frames included, in one classic pcap file per context,
 * framed as TCP over IPv4/IPv6 with the connection's real addresses and
 * ports, a synthesised three-way handshake, consistent sequence and
 * acknowledgement numbers, and FIN (or RST) at the close, so that Wireshark
 * follows each stream and its iWARP dissectors decode every FPDU.
 *
 * The data path only copies: a hook appends the octets to an in-memory
 * queue of bounded size (IW_TRACE_QUEUE_BYTES) under the tracer's lock and
 * returns. A writer thread of the tracer drains the queue: it builds the
 * headers, computes the checksums, cuts the stream into segments of the
 * connection's MSS and writes the file (pcap_writer.c). Nothing on the
 * data path waits for the disk; when the queue is full the octets are
 * dropped and counted, and the stream shows a gap ("previous segment not
 * captured") where they were.
 *
 * The file is bounded (max_bytes, IWARP_PCAP_MAX): the record that would go
 * past the cap is not written and tracing stops there, for good. Stopping
 * was chosen over rotating: Wireshark recognises an MPA stream only from
 * its MPA Request, so the later files of a rotation could not be decoded.
 * A trace that is incomplete (octets dropped, cap reached, write error)
 * ends with a note record (a syslog message, pcap_writer.h) that says so,
 * and the same line goes to stderr when the tracer is freed.
 *
 * Threads: the hooks may be called from any thread; one connection's hooks
 * for one direction must come in stream order (the transmit path holds the
 * id's txlock, the receive path runs on the loop thread). The per-
 * connection state the hooks touch is under the tracer's lock; the TCP
 * framing state (sequence numbers) is the writer thread's alone.
 */
#ifndef IW_TRACE_H
#define IW_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/verbs.h"
#include <sys/socket.h>
#include <sys/uio.h>

struct iw_context_attr;
struct iw_trace;
struct iw_trace_conn;

#define IW_TRACE_DEFAULT_MAX (1ull << 30) /* 1 GiB */
#define IW_TRACE_MIN_MAX 1024u            /* smaller caps are refused (EINVAL) */
#define IW_TRACE_QUEUE_BYTES (32u << 20)

struct iw_trace_opts {
	/* The file. "%p" becomes the process ID. A path another tracer of
	 * this process already writes gets "-2", "-3"... before its
	 * extension (two contexts in one program, one IWARP_PCAP), unless it
	 * is a character device (/dev/null: tracing for its cost alone). */
	const char *path;
	uint64_t max_bytes; /* file size cap; 0: IW_TRACE_DEFAULT_MAX */
	size_t queue_bytes; /* 0: IW_TRACE_QUEUE_BYTES */
	bool paused;        /* tests: the writer waits until iw_trace_free */
	const struct iw_alloc_ops *alloc; /* the context's (NULL: libc's) */
};

/* The tracer options a context gets: pcap_path with IW_CONTEXT_ATTR_PCAP
 * in attr->comp_mask (else $IWARP_PCAP; o->path NULL: no tracing), and
 * pcap_max_bytes with IW_CONTEXT_ATTR_PCAP_MAX (else $IWARP_PCAP_MAX, a
 * number of octets with an optional K, M, G or T suffix, powers of 1024).
 * o->path points into attr or the environment. Returns 0, or EINVAL for a
 * malformed IWARP_PCAP_MAX. */
int iw_trace_opts_get(struct iw_trace_opts *o, const struct iw_context_attr *attr);

/* Open the file and start the writer thread. Returns 0 or a positive
 * errno: EINVAL (no path, cap below IW_TRACE_MIN_MAX), ENOMEM, EAGAIN
 * (no thread), or what fopen() said (EACCES, ENOENT...). */
int iw_trace_new(struct iw_trace **out, const struct iw_trace_opts *o);

/* What a tracer did. */
struct iw_trace_stats {
	uint64_t file_bytes;      /* octets in the file */
	uint64_t records;         /* pcap records in the file */
	uint64_t dropped_records; /* hook calls whose octets did not fit the queue */
	uint64_t dropped_bytes;
	bool capped;              /* the size cap stopped the trace */
	int err;                  /* first write error (positive errno), or 0 */
	char path[256];           /* the file actually written */
};

/* Drain the queue, finish the file (a note if it is incomplete), stop the
 * writer and free everything; connections not yet ended are dropped
 * without a FIN. out (may be NULL) receives the final figures. NULL-safe. */
void iw_trace_free(struct iw_trace *t, struct iw_trace_stats *out);

enum iw_trace_dir { IW_TRACE_TX = 0, IW_TRACE_RX = 1 };

/* A connection from local to peer (sockaddr_in or sockaddr_in6, from
 * getsockname and getpeername), opened by us (initiator) or accepted; mss
 * is the socket's TCP_MAXSEG (0: 1460). The handshake is stamped now.
 * Returns NULL when there is no memory, when tracing has stopped, or when
 * the tracer already follows the other end of this connection (both ends
 * in one context: one view of it is enough). */
struct iw_trace_conn *iw_trace_conn_new(struct iw_trace *t, const struct sockaddr *local,
					const struct sockaddr *peer, bool initiator, uint32_t mss);

/* The socket's MSS moved (any thread; NULL-safe): the octets the writer
 * frames from now on go in segments of at most mss. */
void iw_trace_conn_mss(struct iw_trace_conn *c, uint32_t mss);

/* len octets went out (TX) or came in (RX), taken from the front of iov.
 * Never blocks on I/O. For octets that went out from memory the
 * application owns, iw_trace_tx_begin/end instead. */
void iw_trace_data(struct iw_trace_conn *c, enum iw_trace_dir dir, const struct iovec *iov,
		   int iovcnt, size_t len);

/* A transmit traced around its sendmsg(): begin copies what the kernel
 * will probably take (twice what it took last time, at least 64 KiB) before
 * it is handed over; the caller offers only those tx->len octets when
 * tx->pos is set; end keeps what the kernel took. Copying first matters:
 * once the octets are out, the peer may answer, and what it makes our side
 * do (a Send landing in the buffer, an application reusing a Read source
 * it is told is done) must not change them before they are copied. With
 * tx->pos UINT64_MAX (queue full, trace stopped) offer everything: end
 * copies what went out afterwards, or counts it as dropped. */
struct iw_trace_tx {
	uint64_t pos; /* the reserved record, UINT64_MAX: none */
	size_t len;   /* octets copied into it */
};
void iw_trace_tx_begin(struct iw_trace_conn *c, struct iw_trace_tx *tx, const struct iovec *iov,
		       int iovcnt);
/* sent: what sendmsg returned (0 for an error or a full socket). */
void iw_trace_tx_end(struct iw_trace_conn *c, struct iw_trace_tx *tx, const struct iovec *iov,
		     int iovcnt, size_t sent);

/* We shut our side down (TX), or read the peer's end of stream (RX). */
void iw_trace_fin(struct iw_trace_conn *c, enum iw_trace_dir dir);

/* The socket is closed: abortive (RST) or not (our FIN if not yet
 * traced). c belongs to the tracer from here on. NULL-safe. */
void iw_trace_conn_end(struct iw_trace_conn *c, bool abortive);

#endif
