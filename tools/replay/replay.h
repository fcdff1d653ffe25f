/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Replaying one side of a recorded connection against a live peer:
 *   net.c       addresses, connect, listen (every wait bounded)
 *   live_mpa.c  a fresh MPA exchange with the recorded parameters
 *   live_io.c   the socket: writes, reads, the peer's FPDUs decoded
 *   live_tx.c   each recorded FPDU re-framed, rewritten, faulted, sent
 *   replay.c    the order of things: pacing, waiting for the peer
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fpdu.h"
#include "record.h"
#include "rp.h"
#include "util.h"

struct rp_session {
	const struct rp_opts *o;
	const struct rp_record *rec;
	enum rp_role role, peer_role;
	int fd;
	uint64_t t0;            /* monotonic ns when the session began */
	/* MPA */
	struct rp_buf in;       /* peer octets before the FPDU decoder starts */
	uint8_t mine[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	size_t mine_len;
	bool crc, markers_tx, markers_rx;
	/* sending */
	struct iw_fpdu_tx tx;
	uint64_t sent;          /* FPDUs sent */
	/* the peer */
	bool dec_on;
	struct rp_fpdu_dec dec;
	uint64_t last_rx_ns;
	bool peer_eof, peer_reset, peer_term;
	bool wr_closed;
};

/* Play rec's connection; returns the exit status. */
int rp_replay_run(const struct rp_opts *o, const struct rp_record *rec);

/* ---- net.c */
/* Resolve "host:port", "[v6]:port" or (listen only) "port". */
int rp_net_addr(const char *spec, bool listen, struct sockaddr_storage *ss, socklen_t *len,
		char *err, size_t errcap);
/* A connected, nonblocking TCP socket with TCP_NODELAY, or -1 (err). */
int rp_net_connect(const struct sockaddr_storage *ss, socklen_t len, uint32_t timeout_ms,
		   char *err, size_t errcap);
/* Wait for one connection; its socket (nonblocking, TCP_NODELAY) or -1. */
int rp_net_accept(const struct sockaddr_storage *ss, socklen_t len, uint32_t timeout_ms,
		  char *err, size_t errcap);
uint64_t rp_now_ns(void);

/* ---- live_io.c */
/* The origin of a live item ("tx" or "rx", time since t0). */
void rp_live_origin(const struct rp_session *s, struct rp_origin *o, const char *dir);
/* Wait until done(s) or the deadline, reading and decoding meanwhile.
 * 1: done; 0: deadline; -1: the peer closed or reset first. */
int rp_live_wait(struct rp_session *s, bool (*done)(const struct rp_session *s, const void *arg),
		 const void *arg, uint64_t deadline_ns);
/* Write n octets (in --split pieces), reading meanwhile. 0, or -1 if the
 * peer went away or the timeout passed (reported). */
int rp_live_write(struct rp_session *s, const uint8_t *p, size_t n);
/* Start decoding the peer's FPDUs (after the MPA exchange). */
void rp_live_start_rx(struct rp_session *s);
void rp_live_end_rx(struct rp_session *s);

/* ---- live_mpa.c */
/* Exchange MPA frames; 0, or an exit status (reported). */
int rp_live_mpa(struct rp_session *s);

/* ---- live_tx.c */
/* Check the faults against the recorded FPDUs before anything is sent:
 * 0, or RP_EXIT_USAGE (reported). */
int rp_live_tx_check(const struct rp_session *s);
/* Frame and send recorded FPDU i of the replayed direction with its
 * rewrites and faults. 0, or -1 if the connection is gone. */
int rp_live_tx(struct rp_session *s, size_t i);

#endif
