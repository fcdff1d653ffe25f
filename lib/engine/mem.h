/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains, memory regions and the STag table (RFC 5040 section
 * 7 access checks). An STag is (index << 8) | key: a 24-bit slot index and
 * an 8-bit key that changes every time the slot is (re-)registered, so a
 * stale STag held by a peer never matches a new registration. STag 0 is
 * never valid (index 0 is not used).
 *
 * Deregistration while in use is refused (EBUSY): posted WRs and inbound
 * placements hold a reference on the MR from check to release, so a
 * direct recv() into a region can never race with its deregistration.
 */
#ifndef IW_MEM_H
#define IW_MEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "iwarp/verbs.h"

struct iw_pd {
	struct iw_context *context;
	uint32_t handle;
	atomic_int use; /* MRs, QPs and SRQs created on it */
};

enum iw_mr_state {
	IW_MR_INVALID = 0, /* fast-reg MR not registered, or invalidated */
	IW_MR_VALID,
};

/* The library's MR; the public struct iw_mr is its first member. */
struct iw_mr_int {
	struct iw_mr pub;
	int access;           /* IW_ACCESS_* */
	uint64_t iova;        /* tagged offset of the first octet (== addr for iw_reg_mr) */
	uint64_t len;
	uint8_t *host;        /* host address of the first octet */
	enum iw_mr_state state;
	bool fastreg;         /* created by iw_alloc_mr */
	uint32_t max_num_sg;
	atomic_int busy;      /* references from WRs and placements in flight */
};

static inline struct iw_mr_int *iw_mr_int(struct iw_mr *mr)
{
	return (struct iw_mr_int *)mr;
}

/* STag layout: index (24 bits, 1..IW_STAG_MAX_INDEX) and key (8 bits). */
#define IW_STAG_MAX_INDEX 0x00FFFFFFu

static inline uint32_t iw_stag_index(uint32_t stag)
{
	return stag >> 8;
}

static inline uint8_t iw_stag_key(uint32_t stag)
{
	return (uint8_t)(stag & 0xFF);
}

/* The per-context STag table. */
struct iw_mem_table {
	pthread_mutex_t lock;
	struct iw_mr_int **slot; /* slot[index], index >= 1 */
	uint8_t *key;            /* next key per slot */
	uint32_t num_slots;
	uint32_t free_head;      /* free list threaded through unused slots, 0 = none */
	uint32_t *free_next;
};

int iw_mem_table_init(struct iw_mem_table *t);
void iw_mem_table_cleanup(struct iw_mem_table *t);

/* What an access needs of the MR. */
enum iw_mem_op {
	IW_MEM_LOCAL_READ,    /* gather for Send/Write/Read Response: any valid MR */
	IW_MEM_LOCAL_WRITE,   /* scatter of a receive: LOCAL_WRITE */
	IW_MEM_READ_SINK,     /* RDMA Read sink: REMOTE_WRITE (iWARP rule) */
	IW_MEM_REMOTE_WRITE,  /* peer's Write or Read Response placed here */
	IW_MEM_REMOTE_READ,   /* peer's Read Request source */
	IW_MEM_REMOTE_ATOMIC, /* peer's atomic target */
};

/* Which layer reports a failed remote access: DDP for tagged placement
 * (Write, Read Response), RDMAP for a Read Request's source and atomics. */
enum iw_mem_layer { IW_MEM_BY_DDP, IW_MEM_BY_RDMAP };

/* Check a peer's tagged access of len octets at (stag, to) for op under
 * pd, and on success take a reference on the MR and return its host
 * pointer. Returns 0, or the TERMINATE triple (IW_TERM packing) naming the
 * first check that failed in this order: STag known and valid, PD, access
 * rights, TO wrap, base and bounds. len 0 is valid anywhere inside or at the
 * end of the region. Thread safe. */
uint16_t iw_mem_check_remote(struct iw_mem_table *t, const struct iw_pd *pd, uint32_t stag,
			     uint64_t to, uint64_t len, enum iw_mem_op op, enum iw_mem_layer layer,
			     struct iw_mr_int **out_mr, uint8_t **out_ptr);

/* Check a local SGE (lkey, addr, length) for op under pd; on success take a
 * reference and return the host pointer. 0 or -EINVAL (unknown/invalid
 * lkey, other PD), -EACCES (rights), -EFAULT (outside the region). A
 * zero-length SGE is valid and takes no reference (*out_mr = NULL). */
int iw_mem_check_local(struct iw_mem_table *t, const struct iw_pd *pd, const struct iw_sge *sge,
		       enum iw_mem_op op, struct iw_mr_int **out_mr, uint8_t **out_ptr);

/* Drop a reference taken by a check (NULL is ignored). */
void iw_mem_put(struct iw_mr_int *mr);

/* Take a reference on mr itself, as a REG_MR work request does for the MR
 * it will register: deregistration is refused until iw_mem_put. */
void iw_mem_hold(struct iw_mr_int *mr);

/* Invalidate stag under pd. remote: by a peer's Send with Invalidate (the
 * MR must allow remote access), else a LOCAL_INV WR. Only fast-reg MRs
 * (iw_alloc_mr) can be invalidated; an already invalid one succeeds again.
 * Returns 0, or for the remote case a TERMINATE triple: RDMAP 0/2/0x09 for
 * an unknown or stale STag, 0/1/0x09 for another PD's MR or one that cannot
 * be invalidated (see mem.c); -EINVAL locally. */
int iw_mem_invalidate(struct iw_mem_table *t, const struct iw_pd *pd, uint32_t stag, bool remote);

/* A REG_MR work request: register mr (made by iw_alloc_mr, currently
 * invalid) with the STag key, access, iova, length and host address. key is
 * the WR's whole STag: its index must be mr's, its low 8 bits become the
 * new key (lkey == rkey updated). 0 or -EINVAL (MR valid, not fast-reg, bad
 * access, key of another index, length 0, NULL addr, range that wraps),
 * -EACCES (other PD). */
int iw_mem_fastreg(struct iw_mem_table *t, const struct iw_pd *pd, struct iw_mr_int *mr,
		   uint32_t key, int access, uint64_t iova, uint64_t length, void *addr);

/* Access flag rule shared by reg_mr and fastreg: REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE, or unknown bits, are invalid. */
bool iw_mem_access_valid(int access);

#endif
