/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The in-memory pump shared by test_qp, test_conn and the fuzzers: it takes
 * what one end has to send (its tx_iov; all of it, or as a busy TCP would,
 * a random prefix of a few iovecs), reports it written (tx_sent), and feeds
 * the octets to the other end whole, one octet at a time, in random splits,
 * or through the end's direct-placement pair. An end is any object behind
 * a table of functions: a QP (iw_qp_*), a connection (iw_conn_*).
 * No Check dependency: failures come back as -1 so that a fuzzer can abort
 * and a Check suite can fail with a message.
 */
#ifndef IW_MEMPUMP_H
#define IW_MEMPUMP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

enum mp_mode { MP_WHOLE, MP_BYTES, MP_RANDOM, MP_DIRECT, MP_NUM_MODES };

struct mp_ops {
	int (*tx_iov)(void *end, struct iovec *iov, int cap);
	void (*tx_sent)(void *end, size_t n);
	/* Take n octets: 0 when all were used, -1 otherwise. */
	int (*rx)(void *end, const uint8_t *p, size_t n);
	/* Direct placement (may be NULL): where up to the returned number of
	 * octets may go, then how many went there (0 or -1). */
	size_t (*rx_direct)(void *end, uint8_t **dst);
	int (*rx_placed)(void *end, size_t n);
	/* A whole planned read, as the glue's readv (may be NULL; MP_DIRECT
	 * then uses it instead of the pair above): the end plans its iovecs,
	 * fills them in order from p with at most len octets, and takes what
	 * it read. Returns the octets read (0: the plan offered nothing) or
	 * -1. */
	long (*rx_read)(void *end, const uint8_t *p, size_t len);
};

struct mp {
	enum mp_mode mode;
	bool partial;     /* TCP takes a random prefix of each batch */
	uint32_t *rng;    /* xorshift state (NULL: the pump's own) */
	uint32_t own_rng;
	uint64_t direct;  /* octets placed directly */
	size_t read_lim;  /* rx_read: octets per read at most (0: random cuts) */
	uint8_t *stage;   /* the octets of the last mp_take */
	size_t stage_cap;
};

uint32_t mp_rand(struct mp *m);
/* Take a batch from end into m->stage and report it written. Returns the
 * octets taken (0: nothing to send) or -1 (tx_iov failed). */
long mp_take(struct mp *m, const struct mp_ops *o, void *end);
/* Feed len octets to end in m->mode's segmentation: 0, or -1. */
int mp_feed(struct mp *m, const struct mp_ops *o, void *end, const uint8_t *p, size_t len);
void mp_free(struct mp *m);

#endif
