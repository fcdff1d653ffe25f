/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains, memory regions and the STag table (RFC 5040 section
 * 7 access checks). An STag is (index << 8) | key: a 24-bit slot index and
 * an 8-bit key. Both are drawn from a per-context CSPRNG (base/csprng.h):
 * the slot at random among the free ones, the key at random but never the
 * one the slot's previous registration had, so neither a stale STag nor a
 * guess made from other STags of this or another process finds a region
 * (RFC 5042 section 5; ReDMArk, USENIX Security 2021). Index 0 is never
 * used, which keeps STag 0 and the values zero-length frames carry (1 for
 * our RTRs and wake-ups as for siw's, 2 for Chelsio's: interop.md rule 4)
 * out of the table.
 *
 * Lookups are lock-free (mem.c): each slot has one 64-bit word holding the
 * references, the key, the PRESENT and VALID bits and a generation, so a
 * check takes its reference with one compare-and-swap. Registration,
 * invalidation and deregistration serialise on the table's mutex.
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

#include "base/csprng.h"
#include "iwarp/verbs.h"

struct iw_pd {
	struct iw_context *context;
	uint32_t handle;
	atomic_int use; /* MRs, QPs and SRQs created on it */
};

/* The library's MR; the public struct iw_mr is its first member. The
 * registration fields are atomics because a lock-free check may read them
 * while a REG_MR rewrites them (it then sees the generation move and
 * retries); everywhere else plain reads of them are fine. */
struct iw_mr_int {
	struct iw_mr pub;
	_Atomic int access;        /* IW_ACCESS_* */
	_Atomic uint64_t iova;     /* tagged offset of the first octet (== addr for iw_reg_mr) */
	_Atomic uint64_t len;
	uint8_t *_Atomic host;     /* host address of the first octet */
	bool fastreg;              /* created by iw_alloc_mr */
	uint32_t max_num_sg;
	/* A memory window is an iw_mr_int too (struct iw_mw_int.win): the
	 * same slot, checks and references; only remote access, and for
	 * type 2 only from the QP it is bound to. */
	bool window;
	bool pd_wide;              /* type 1 window: any QP of the PD may use it */
	_Atomic uint32_t qp_num;   /* type 2 window: the bound QP */
};

/* The library's memory window; the public struct iw_mw is its first
 * member. */
struct iw_mw_int {
	struct iw_mw pub;
	struct iw_mr_int win;      /* what the STag table sees */
	struct iw_mr_int *mr;      /* bound to (a reference held), or NULL */
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

/* One STag slot (mem.c has the word's layout). */
struct iw_stag_slot {
	_Atomic uint64_t word;
	struct iw_mr_int *_Atomic mr;
	atomic_uint placing; /* inbound placements under way (see mem.c) */
};

/* Slots live in chunks that never move: chunk 0 holds indices 0..63,
 * chunk c >= 1 indices [32 << c, 64 << c), so 19 chunks cover 2^24. */
#define IW_STAG_CHUNKS 19

/* The per-context STag table. */
struct iw_mem_table {
	const struct iw_alloc_ops *alloc; /* the context's (set before init) */
	pthread_mutex_t lock;      /* writers: (de)registration, invalidation */
	struct iw_stag_slot *_Atomic chunk[IW_STAG_CHUNKS];
	uint32_t num_slots;        /* indices covered by the chunks (lock) */
	uint32_t *free_idx;        /* unused indices, in no order (lock) */
	uint32_t num_free;
	struct iw_csprng rng;      /* slots and keys (lock) */
	atomic_ulong bad_stag;     /* remote accesses refused for their STag */
};

/* Who makes a remote access: the QP's PD and number, the QP's own count
 * of accesses refused for their STag (NULL: none), and a second count the
 * QP adds to (its connection's listener; NULL: none). */
struct iw_mem_req {
	const struct iw_pd *pd;
	uint32_t qp_num;
	atomic_ulong *bad_stag;
	atomic_ulong *bad_stag_group;
};

/* 0, or -errno (the mutex, or no seed from the kernel). */
int iw_mem_table_init(struct iw_mem_table *t);
void iw_mem_table_cleanup(struct iw_mem_table *t);
#ifdef IW_FUZZING
/* Fuzzing builds only (-DIW_FUZZING, never the library, whose keys stay
 * random): make every slot no MR occupies as never used, so that the next
 * registrations get the indices and keys (0, 1, ...) a new context would
 * give next to the MRs still registered. fuzz/fuzz_qp_rx.c keeps its
 * context and MRs across inputs and its seeds name STags. 0, or -EBUSY
 * (nothing changed) if a slot holds a reference or a placement. */
int iw_fuzz_mem_restart(struct iw_mem_table *t);
#endif

/* What an access needs of the MR. */
enum iw_mem_op {
	IW_MEM_LOCAL_READ,    /* gather for Send/Write/Read Response: any valid MR */
	IW_MEM_LOCAL_WRITE,   /* scatter of a receive: LOCAL_WRITE */
	IW_MEM_READ_SINK,     /* RDMA Read sink, and its Read Response placed:
			       * REMOTE_WRITE (iWARP rule) or READ_SINK */
	IW_MEM_REMOTE_WRITE,  /* peer's Write or Read Response placed here */
	IW_MEM_REMOTE_READ,   /* peer's Read Request source */
	IW_MEM_REMOTE_ATOMIC, /* peer's atomic target */
};

/* Which layer reports a failed remote access: DDP for tagged placement
 * (Write, Read Response), RDMAP for a Read Request's source and atomics. */
enum iw_mem_layer { IW_MEM_BY_DDP, IW_MEM_BY_RDMAP };

/* Check a peer's tagged access of len octets at (stag, to) for op by req,
 * and on success take a reference on the MR and return its host
 * pointer. Returns 0, or the TERMINATE triple (IW_TERM packing) naming the
 * first check that failed in this order: STag known and valid, PD, access
 * rights, TO wrap, base and bounds. len 0 is valid anywhere inside or at the
 * end of the region. An access refused for its STag (unknown, stale,
 * invalid, another PD's) is counted in the table, in *req->bad_stag and
 * in *req->bad_stag_group.
 * Thread safe, lock-free. */
uint16_t iw_mem_check_remote(struct iw_mem_table *t, const struct iw_mem_req *req, uint32_t stag,
			     uint64_t to, uint64_t len, enum iw_mem_op op, enum iw_mem_layer layer,
			     struct iw_mr_int **out_mr, uint8_t **out_ptr);
/* iw_mem_check_remote, and on success *out_room (if not NULL) is the number
 * of octets of the region from *out_ptr to its end: all of them are the
 * peer's to write through stag while the reference is held (what a
 * receiver may read ahead into, qp_rx_spec.c). */
uint16_t iw_mem_check_remote_room(struct iw_mem_table *t, const struct iw_mem_req *req,
				  uint32_t stag, uint64_t to, uint64_t len, enum iw_mem_op op,
				  enum iw_mem_layer layer, struct iw_mr_int **out_mr,
				  uint8_t **out_ptr, uint64_t *out_room);

/* Check a local SGE (lkey, addr, length) for op under pd; on success take a
 * reference and return the host pointer. 0 or -EINVAL (unknown/invalid
 * lkey, other PD), -EACCES (rights), -EFAULT (outside the region). A
 * zero-length SGE is valid and takes no reference (*out_mr = NULL).
 * Lock-free. */
int iw_mem_check_local(struct iw_mem_table *t, const struct iw_pd *pd, const struct iw_sge *sge,
		       enum iw_mem_op op, struct iw_mr_int **out_mr, uint8_t **out_ptr);

/* Check the sink SGE of an RDMA Read posted on the QP req names, as
 * iw_mem_check_local for IW_MEM_READ_SINK, but the lkey may also name a
 * memory window with IW_ACCESS_REMOTE_WRITE that is bound now (type 2: to
 * that QP), since the sink STag is only ever used by the peer's Read
 * Response, a remote access. Same returns as iw_mem_check_local. */
int iw_mem_check_sink(struct iw_mem_table *t, const struct iw_mem_req *req,
		      const struct iw_sge *sge, struct iw_mr_int **out_mr, uint8_t **out_ptr);

/* Drop a reference taken by a check (NULL is ignored). */
void iw_mem_put(struct iw_mr_int *mr);

/* A remote check for IW_MEM_REMOTE_WRITE, IW_MEM_REMOTE_ATOMIC or
 * IW_MEM_READ_SINK also
 * starts a placement: the peer's octets are landing in the region until
 * iw_mem_placed (then iw_mem_put), and a LOCAL_INV of the STag does not
 * complete before (issue 15, "invalidation must be final"). */
void iw_mem_placed(struct iw_mr_int *mr);
/* iw_mem_placed, then iw_mem_put (NULL is ignored). */
void iw_mem_put_placed(struct iw_mr_int *mr);
/* Have the placements into stag's slot all ended? */
bool iw_mem_placements_done(struct iw_mem_table *t, uint32_t stag);

/* Take a reference on mr itself, as a REG_MR work request does for the MR
 * it will register: deregistration is refused until iw_mem_put. */
void iw_mem_hold(struct iw_mr_int *mr);

/* Invalidate stag under req->pd. remote: by a peer's Send with Invalidate (the
 * MR must allow remote access), else a LOCAL_INV WR. Only fast-reg MRs
 * (iw_alloc_mr) and windows can be invalidated (a type 2 window remotely
 * only by the peer of the QP it is bound to; it then lets go of its MR);
 * an already invalid one succeeds again.
 * Returns 0, or for the remote case a TERMINATE triple: RDMAP 0/2/0x09 for
 * an unknown or stale STag, 0/1/0x09 for another PD's MR or one that cannot
 * be invalidated (see mem.c); -EINVAL locally. A remote one refused for
 * its STag is counted as a refused access. A local one that finds
 * placements under way returns IW_MEM_INV_WAIT: the STag is invalid for
 * every new access already, and the LOCAL_INV completes once
 * iw_mem_placements_done says so. */
#define IW_MEM_INV_WAIT 1
int iw_mem_invalidate(struct iw_mem_table *t, const struct iw_mem_req *req, uint32_t stag,
		      bool remote);

/* A REG_MR work request: register mr (made by iw_alloc_mr, currently
 * invalid) with the STag key, access, iova, length and host address. key is
 * the WR's whole STag: its index must be mr's, its low 8 bits become the
 * new key (lkey == rkey updated). 0 or -EINVAL (MR valid, not fast-reg, bad
 * access, key of another index, length 0, NULL addr, range that wraps),
 * -EACCES (other PD). */
int iw_mem_fastreg(struct iw_mem_table *t, const struct iw_pd *pd, struct iw_mr_int *mr,
		   uint32_t key, int access, uint64_t iova, uint64_t length, void *addr);

/* A BIND_MW work request on the QP req names: bind window mw (of
 * req->pd) to [addr, addr + length) of mr (VALID, of the same PD, with
 * IW_ACCESS_MW_BIND) with remote rights access, under key (the whole
 * STag: mw's index, the new key). A type 2 window must be invalid and
 * gets at least one right; a type 1 window (iw_bind_mw) may be bound
 * already (it is rebound: the old STag stops working) and length 0
 * unbinds it (mr may then be NULL). The window holds a reference on mr
 * until unbound, invalidated or freed. 0, -EINVAL (window or arguments),
 * -EACCES (PD, MR lacks MW_BIND, or LOCAL_WRITE for a window that lets
 * the peer write), -EFAULT (outside the
 * MR). */
int iw_mem_bind_mw(struct iw_mem_table *t, const struct iw_mem_req *req, struct iw_mw_int *mw,
		   uint32_t key, struct iw_mr_int *mr, int access, uint64_t addr, uint64_t length);

/* The STag a type 1 window's next bind takes: its index, a random key
 * other than the current one (iw_bind_mw picks it as it posts). */
uint32_t iw_mem_mw_next_key(struct iw_mem_table *t, const struct iw_mw_int *mw);

/* Access flag rule shared by reg_mr and fastreg: REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE, or unknown bits, are invalid. */
bool iw_mem_access_valid(int access);

/* For tests and diagnostics: the references held on mr, and whether its
 * STag is VALID now. */
unsigned iw_mem_refs(const struct iw_mr_int *mr);
bool iw_mem_is_valid(const struct iw_mr_int *mr);

#endif
