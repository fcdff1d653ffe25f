/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two iw_conn back to back in memory, each over a real QP, on a fake clock
 * (test_conn.c, test_conn_spec.c).
 *
 * The "TCP" between them is two byte queues written through the shared
 * pump (mempump.h): what a side's iw_conn_tx_iov hands out is appended to
 * its queue and logged; a queue is delivered to the peer (whole, octet by
 * octet, in random splits or through direct placement) unless the test
 * holds that peer (a peer that does not read). SHUTDOWN puts a FIN after
 * the queued octets, CLOSE a FIN or (abortive) a reset that discards them.
 * The log of each side is decoded afterwards: MPA frame, then FPDUs.
 * Failures are Check assertions.
 */
#ifndef IW_CONN_PAIR_H
#define IW_CONN_PAIR_H
#include <stdbool.h>
#include <stdint.h>

#include "conn/conn.h"
#include "engine/context.h"
#include "engine/cq.h"
#include "engine/qp.h"
#include "conn_read.h"
#include "mempump.h"

#define APP_EV                                                                           \
	(IW_CONN_EV_REQUEST | IW_CONN_EV_ESTABLISHED | IW_CONN_EV_REJECTED |             \
	 IW_CONN_EV_CONNECT_ERROR | IW_CONN_EV_UNREACHABLE | IW_CONN_EV_DISCONNECTED | \
	 IW_CONN_EV_DROPPED)
#define BUF 65536
/* Each side's registered memory: a 1 MiB source, a 1 MiB sink with room
 * around it. */
#define MEM (3u << 20)
/* The bounce buffer of a planned read (conn_read.c), as the loop's. */
#define BOUNCE IW_RX_BOUNCE_LEN_DEFAULT

struct bytes {
	uint8_t *p;
	size_t len, cap;
};

struct side {
	struct iw_conn c;
	struct iw_qp *qp;
	struct iw_cq *cq;
	struct iw_mr *mr;
	uint8_t *buf;
	unsigned pending; /* events not acted on yet */
	unsigned ev;      /* application events seen */
	struct bytes wire; /* written, not yet delivered */
	struct bytes log;  /* everything written */
	size_t fin_at;     /* log length when FIN went out, SIZE_MAX before */
	bool fin_done;     /* FIN (or reset) delivered to the peer */
	bool closed, abortive;
	bool hold;         /* does not read */
	uint8_t *bounce;   /* planned reads (MP_DIRECT) */
	struct conn_read_stats rs;
};

struct pair {
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct side s[2]; /* 0 initiator, 1 responder */
	struct mp mp;
	uint64_t now;
};

/* FPDUs in s's log after its MPA frame: count, zero-length Writes with
 * STag 1 (wake-ups), TERMINATEs, the longest ULPDU and the last opcode. */
struct decoded {
	int nseg, wakes, terms;
	unsigned max_ulpdu;
	uint16_t term;
	unsigned last_op;
};

/* b's memory around the sink: guard octets the peer may not touch. */
#define SINK_AREA (1u << 20)
#define SINK_OFF (SINK_AREA + 4096)
#define GUARD 0xA5
#define RECV_EXTRA 8192

void bytes_add(struct bytes *b, const uint8_t *p, size_t n);
void side_new(struct pair *p, struct side *s);
void pair_new(struct pair *p, enum mp_mode mode);
void side_free(struct side *s);
void pair_free(struct pair *p);
/* Write what s has (before acting on SHUTDOWN or CLOSE: the order the
 * glue follows). */
bool write_out(struct pair *p, struct side *s);
bool act(struct pair *p, struct side *s);
/* Deliver s's queue (then its FIN or reset) to its peer. */
bool deliver(struct pair *p, struct side *s, struct side *peer);
void settle(struct pair *p);
/* Move the clock to the next deadline of either side and fire it. */
uint64_t tick(struct pair *p);
uint64_t next_of(struct side *s, struct pair *p);
void start(struct pair *p);
void accept_b(struct pair *p);
void establish(struct pair *p);
void post_recv(struct side *s, uint64_t id, size_t off, uint32_t len);
void post(struct side *s, uint64_t id, enum iw_wr_opcode op, size_t off, uint32_t len,
		 uint64_t raddr, uint32_t rkey);
void expect_wc(struct side *s, uint64_t id, enum iw_wc_status st);
void fill(uint8_t *b, size_t n, unsigned seed);
struct decoded decode(const struct side *s, size_t from, bool crc);
void spec_pair(struct pair *p, bool crc, bool markers);
void expect_recv(struct side *s, uint64_t id, uint32_t len);
void guard_intact(const uint8_t *p, size_t n);
/* a's [0, size) to b's sink: by b's RDMA Read, or a's Send into a
 * receive RECV_EXTRA larger than it (octets past byte_len in the receive
 * are its to overwrite). Nothing outside the sink or the receive moves. */
void spec_move(struct pair *p, bool read, uint32_t size, unsigned seed);

#endif
