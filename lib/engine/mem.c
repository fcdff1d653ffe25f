/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains, memory regions and the STag table.
 *
 * The table is a growable array of slots indexed by the STag's upper 24
 * bits; unused slots are threaded on a LIFO free list. One mutex guards the
 * slots, the keys, the free list and every MR's registration state (access,
 * iova, length, host, state, STag), so a check sees either the old or the new
 * registration, never a mix. Only the reference count (busy) is touched
 * outside the lock: a check raises it under the lock, and deregistration
 * looks at it under the lock, so once iw_dereg_mr has taken an MR out of the
 * table no check can find it again.
 *
 * Keys: table->key[i] is the key the next registration of slot i gets. A
 * new registration (iw_reg_mr, iw_alloc_mr) takes it and advances it; a fast
 * registration uses the key its WR supplies and sets the next one past it.
 * So a peer holding the STag of a registration that is gone misses, at
 * least until the same slot has been registered 256 more times (the 8-bit
 * key is stale-STag protection, not a secret).
 *
 * ---------------------------------------------------------------------------
 * Which TERMINATE a failed remote access yields
 *
 * RFC 5040 section 4.8 and RFC 5041 section 7 define the codes (IANA
 * "RDDP" registry, RFC 6580). A tagged placement (RDMA Write, Read Response)
 * is validated by DDP (RFC 5041 section 7: STag, base/bounds, stream, TO
 * wrap), a Read Request's data source by RDMAP (RFC 5040 section 7, Remote
 * Protection Error), so the same failure has a code in each layer:
 *
 *   check (in this order)     DDP tagged (1/1/x)        RDMAP (0/1/x)
 *   STag unknown, stale key,  0x00 invalid STag         0x00 invalid STag
 *     or MR not VALID
 *   MR of another PD          0x02 STag not assoc.      0x03 STag not assoc.
 *   access rights             0x00 invalid STag (*)     0x02 access rights
 *   TO wrap                   0x03 TO wrap              0x04 TO wrap
 *   base or bounds            0x01 base/bounds          0x01 base/bounds
 *
 * (*) DDP has no access-rights code. siw (siw_qp.c siw_tagged_error, used
 * by siw_proc_write and siw_proc_rresp in siw_qp_rx.c) reports
 * E_ACCESS_PERM as DDP "invalid STag" with the comment that it is the
 * closest match; we do the same, so a peer sees what siw would send. For a
 * Read Request's source, siw_qp_tx.c (siw_qp_sq_proc_tx) uses
 * siw_rdmap_error under RDMAP_ETYPE_REMOTE_PROTECTION, which is the RDMAP
 * column above. (siw checks that source with no required rights at all; we
 * follow RFC 5040 and require REMOTE_READ.)
 *
 * siw's siw_check_mem checks state, PD, rights, then bounds; it has no TO
 * wrap check (its bounds test can overflow). We check wrap before bounds, on
 * the octet range [to, to + len - 1]: a range that ends on the last octet
 * of the 64-bit TO space does not wrap. Zero-length accesses never wrap and
 * are in bounds anywhere in [iova, iova + length].
 *
 * Send with Invalidate (RFC 5040 section 7; IANA lists "STag cannot be
 * invalidated", 0x09, under both error types 1 and 2). siw_rdmap_complete
 * (siw_qp_rx.c) sends error type 1 (Remote Protection) when
 * siw_invalidate_stag fails with -EACCES (PD mismatch) and type 2 (Remote
 * Operation) when it fails with -EINVAL (STag unknown). We follow that:
 *
 *   STag unknown or stale key                0/2/0x09
 *   MR of another PD                         0/1/0x09
 *   MR not invalidatable (iw_reg_mr MR, or   0/1/0x09
 *     no remote access right)
 *
 * siw lets any MR of the PD be invalidated, including plain registrations;
 * rxe (rxe_invalidate_mr) refuses MRs that are not fast-reg MRs, as the IB
 * spec does. We refuse them: an application that registers with
 * iw_reg_mr expects the STag to live until iw_dereg_mr, and a peer must
 * not be able to revoke it. Invalidating an STag that is already invalid
 * succeeds (siw_invalidate_stag: "an STag may already be in invalid state").
 * ---------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdlib.h>

#include "engine/context.h"
#include "iwarp/wire.h"
#include "engine/mem.h"
#include "base/visibility.h"

#define ACCESS_ALL \
	(IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | \
	 IW_ACCESS_REMOTE_ATOMIC)
#define ACCESS_REMOTE (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | IW_ACCESS_REMOTE_ATOMIC)

#define TABLE_MIN_SLOTS 64u

/* Why a check failed, before it is turned into a TERMINATE or an errno. */
enum fail { OK = 0, F_STAG, F_PD, F_ACCESS, F_WRAP, F_BOUNDS, NUM_FAIL };

static const uint16_t term_ddp[NUM_FAIL] = {
	[F_STAG] = IW_TERM_DDP_T_INV_STAG,
	[F_PD] = IW_TERM_DDP_T_STAG_STREAM,
	[F_ACCESS] = IW_TERM_DDP_T_INV_STAG, /* no DDP code: as siw_tagged_error */
	[F_WRAP] = IW_TERM_DDP_T_TO_WRAP,
	[F_BOUNDS] = IW_TERM_DDP_T_BASE_BOUNDS,
};

static const uint16_t term_rdmap[NUM_FAIL] = {
	[F_STAG] = IW_TERM_RDMAP_INV_STAG,
	[F_PD] = IW_TERM_RDMAP_STAG_STREAM,
	[F_ACCESS] = IW_TERM_RDMAP_ACCESS,
	[F_WRAP] = IW_TERM_RDMAP_TO_WRAP,
	[F_BOUNDS] = IW_TERM_RDMAP_BASE_BOUNDS,
};

static const int local_errno[NUM_FAIL] = {
	[F_STAG] = -EINVAL,
	[F_PD] = -EINVAL,
	[F_ACCESS] = -EACCES,
	[F_WRAP] = -EFAULT,
	[F_BOUNDS] = -EFAULT,
};

bool iw_mem_access_valid(int access)
{
	if (access & ~ACCESS_ALL)
		return false;
	/* A peer's write or atomic changes local memory: verbs require that
	 * the owner may write it too (ibv_reg_mr's EINVAL rule). */
	if ((access & (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IW_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

/* The rights an operation needs of the MR. */
static int op_rights(enum iw_mem_op op)
{
	switch (op) {
	case IW_MEM_LOCAL_READ:
		return 0;
	case IW_MEM_LOCAL_WRITE:
		return IW_ACCESS_LOCAL_WRITE;
	case IW_MEM_READ_SINK: /* filled by a tagged Read Response */
	case IW_MEM_REMOTE_WRITE:
		return IW_ACCESS_REMOTE_WRITE;
	case IW_MEM_REMOTE_READ:
		return IW_ACCESS_REMOTE_READ;
	case IW_MEM_REMOTE_ATOMIC:
		return IW_ACCESS_REMOTE_ATOMIC;
	}
	return ACCESS_ALL + 1; /* unknown op: no MR grants it */
}

static uint32_t make_stag(uint32_t index, uint8_t key)
{
	return (index << 8) | key;
}

/* ------------------------------------------------------------------ table */

int iw_mem_table_init(struct iw_mem_table *t)
{
	int err = pthread_mutex_init(&t->lock, NULL);

	t->slot = NULL;
	t->key = NULL;
	t->free_next = NULL;
	t->num_slots = 0;
	t->free_head = 0;
	return -err;
}

/* MRs still registered when the context goes are freed with it: the
 * application leaked them, and nothing can reach them any more. */
void iw_mem_table_cleanup(struct iw_mem_table *t)
{
	for (uint32_t i = 1; i < t->num_slots; i++)
		free(t->slot[i]);
	free(t->slot);
	free(t->key);
	free(t->free_next);
	t->slot = NULL;
	t->key = NULL;
	t->free_next = NULL;
	t->num_slots = 0;
	t->free_head = 0;
	pthread_mutex_destroy(&t->lock);
}

/* Grow each array to n entries. The arrays are resized one at a time; if a
 * later one fails the earlier ones are merely larger than needed, and
 * num_slots (which the rest of the file trusts) is unchanged. */
static int grow_arrays(struct iw_mem_table *t, uint32_t n)
{
	struct iw_mr_int **slot;
	uint8_t *key;
	uint32_t *next;

	slot = realloc(t->slot, n * sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	t->slot = slot;
	key = realloc(t->key, n * sizeof(*key));
	if (!key)
		return -ENOMEM;
	t->key = key;
	next = realloc(t->free_next, n * sizeof(*next));
	if (!next)
		return -ENOMEM;
	t->free_next = next;
	return 0;
}

/* Double the table (index 0 exists but is never handed out) and put the
 * new slots on the free list, lowest index first. Called locked. */
static int grow(struct iw_mem_table *t)
{
	uint32_t old = t->num_slots;
	uint32_t n = old ? old * 2 : TABLE_MIN_SLOTS;

	if (n > IW_STAG_MAX_INDEX + 1)
		n = IW_STAG_MAX_INDEX + 1;
	if (n <= old)
		return -ENOMEM; /* all 2^24 - 1 STag indices are in use */
	if (grow_arrays(t, n) < 0)
		return -ENOMEM;
	for (uint32_t i = n; i-- > (old ? old : 1);) {
		t->slot[i] = NULL;
		t->key[i] = 0;
		t->free_next[i] = t->free_head;
		t->free_head = i;
	}
	if (!old) {
		t->slot[0] = NULL;
		t->key[0] = 0;
		t->free_next[0] = 0;
	}
	t->num_slots = n;
	return 0;
}

/* Put mr in a free slot with that slot's next key. Called locked. */
static int slot_insert(struct iw_mem_table *t, struct iw_mr_int *mr)
{
	uint32_t i;

	if (!t->free_head && grow(t) < 0)
		return -ENOMEM;
	i = t->free_head;
	t->free_head = t->free_next[i];
	t->slot[i] = mr;
	mr->pub.handle = i;
	mr->pub.lkey = mr->pub.rkey = make_stag(i, t->key[i]++);
	return 0;
}

static void slot_remove(struct iw_mem_table *t, uint32_t i)
{
	t->slot[i] = NULL;
	t->free_next[i] = t->free_head;
	t->free_head = i;
}

/* The MR whose current STag is stag, valid or not; NULL if none. */
static struct iw_mr_int *lookup(const struct iw_mem_table *t, uint32_t stag)
{
	uint32_t i = iw_stag_index(stag);
	struct iw_mr_int *mr;

	if (i == 0 || i >= t->num_slots)
		return NULL;
	mr = t->slot[i];
	if (!mr || mr->pub.rkey != stag)
		return NULL;
	return mr;
}

/* ------------------------------------------------------------------ checks */

/* Is [to, to + len) inside the MR? Wrap is judged on the last octet, so a
 * range ending exactly at 2^64 is not a wrap. */
static enum fail check_range(const struct iw_mr_int *mr, uint64_t to, uint64_t len)
{
	uint64_t off;

	if (len && to > UINT64_MAX - (len - 1))
		return F_WRAP;
	if (to < mr->iova)
		return F_BOUNDS;
	off = to - mr->iova;
	if (off > mr->len || len > mr->len - off)
		return F_BOUNDS;
	return OK;
}

/* The checks shared by local and remote accesses, in the order of mem.h.
 * Called locked; on success *out is the MR. */
static enum fail check(const struct iw_mem_table *t, const struct iw_pd *pd, uint32_t stag,
		       uint64_t to, uint64_t len, int rights, struct iw_mr_int **out)
{
	struct iw_mr_int *mr = lookup(t, stag);

	if (!mr || mr->state != IW_MR_VALID)
		return F_STAG;
	if (mr->pub.pd != pd)
		return F_PD;
	if ((mr->access & rights) != rights)
		return F_ACCESS;
	*out = mr;
	return check_range(mr, to, len);
}

/* Take a reference and compute the host address of to. Called locked. */
static void grab(struct iw_mr_int *mr, uint64_t to, struct iw_mr_int **out_mr, uint8_t **out_ptr)
{
	atomic_fetch_add(&mr->busy, 1);
	*out_mr = mr;
	if (out_ptr)
		*out_ptr = mr->host + (to - mr->iova);
}

uint16_t iw_mem_check_remote(struct iw_mem_table *t, const struct iw_pd *pd, uint32_t stag,
			     uint64_t to, uint64_t len, enum iw_mem_op op, enum iw_mem_layer layer,
			     struct iw_mr_int **out_mr, uint8_t **out_ptr)
{
	struct iw_mr_int *mr = NULL;
	enum fail f;

	*out_mr = NULL;
	pthread_mutex_lock(&t->lock);
	f = check(t, pd, stag, to, len, op_rights(op), &mr);
	if (f == OK)
		grab(mr, to, out_mr, out_ptr);
	pthread_mutex_unlock(&t->lock);
	if (f == OK)
		return 0;
	return layer == IW_MEM_BY_DDP ? term_ddp[f] : term_rdmap[f];
}

int iw_mem_check_local(struct iw_mem_table *t, const struct iw_pd *pd, const struct iw_sge *sge,
		       enum iw_mem_op op, struct iw_mr_int **out_mr, uint8_t **out_ptr)
{
	struct iw_mr_int *mr = NULL;
	enum fail f;

	*out_mr = NULL;
	/* Nothing is read or written through an empty SGE, so its lkey is
	 * not looked at (as the kernel providers do). */
	if (sge->length == 0) {
		if (out_ptr)
			*out_ptr = NULL;
		return 0;
	}
	pthread_mutex_lock(&t->lock);
	f = check(t, pd, sge->lkey, sge->addr, sge->length, op_rights(op), &mr);
	if (f == OK)
		grab(mr, sge->addr, out_mr, out_ptr);
	pthread_mutex_unlock(&t->lock);
	return f == OK ? 0 : local_errno[f];
}

void iw_mem_put(struct iw_mr_int *mr)
{
	if (mr)
		atomic_fetch_sub(&mr->busy, 1);
}

void iw_mem_hold(struct iw_mr_int *mr)
{
	struct iw_mem_table *t = &mr->pub.context->mem;

	/* Under the lock like a check's reference: iw_dereg_mr reads busy
	 * under it. */
	pthread_mutex_lock(&t->lock);
	atomic_fetch_add(&mr->busy, 1);
	pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------- invalidate, REG_MR */

/* Why an invalidation is refused, or 0. Called locked. */
static int invalidate_locked(struct iw_mem_table *t, const struct iw_pd *pd, uint32_t stag,
			     bool remote)
{
	struct iw_mr_int *mr = lookup(t, stag);

	if (!mr)
		return remote ? IW_TERM_RDMAP_OP_NOINV : -EINVAL;
	if (mr->pub.pd != pd || !mr->fastreg)
		return remote ? IW_TERM_RDMAP_PROT_NOINV : -EINVAL;
	/* A peer may only revoke what it was given access to. */
	if (remote && !(mr->access & ACCESS_REMOTE))
		return IW_TERM_RDMAP_PROT_NOINV;
	/* References held by placements in flight stay good: they already
	 * passed their checks and hold the host pointer; only new accesses
	 * see the STag as invalid. */
	mr->state = IW_MR_INVALID;
	return 0;
}

int iw_mem_invalidate(struct iw_mem_table *t, const struct iw_pd *pd, uint32_t stag, bool remote)
{
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = invalidate_locked(t, pd, stag, remote);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* The registration a REG_MR WR asks for, checked before anything changes. */
static int fastreg_args_valid(int access, uint64_t iova, uint64_t length, const void *addr)
{
	if (!iw_mem_access_valid(access) || length == 0 || !addr)
		return -EINVAL;
	if (iova > UINT64_MAX - (length - 1))
		return -EINVAL; /* the TO range itself would wrap */
	if (length - 1 > UINTPTR_MAX - (uintptr_t)addr)
		return -EINVAL; /* the host range would wrap */
	return 0;
}

static int fastreg_locked(struct iw_mem_table *t, const struct iw_pd *pd, struct iw_mr_int *mr,
			  uint32_t key)
{
	uint32_t i = mr->pub.handle;

	if (!mr->fastreg || i == 0 || i >= t->num_slots || t->slot[i] != mr)
		return -EINVAL;
	if (mr->pub.pd != pd)
		return -EACCES;
	/* Must be invalidated first (verbs). Placements still holding a
	 * reference from before the invalidation keep their host pointer
	 * into the old buffer; re-registering does not wait for them. */
	if (mr->state == IW_MR_VALID)
		return -EINVAL;
	if (iw_stag_index(key) != i)
		return -EINVAL; /* the WR names another MR's STag */
	return 0;
}

int iw_mem_fastreg(struct iw_mem_table *t, const struct iw_pd *pd, struct iw_mr_int *mr,
		   uint32_t key, int access, uint64_t iova, uint64_t length, void *addr)
{
	int ret = fastreg_args_valid(access, iova, length, addr);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&t->lock);
	ret = fastreg_locked(t, pd, mr, key);
	if (ret == 0) {
		uint8_t k = iw_stag_key(key);

		mr->access = access;
		mr->iova = iova;
		mr->len = length;
		mr->host = addr;
		mr->pub.addr = addr;
		mr->pub.length = (size_t)length;
		mr->pub.lkey = mr->pub.rkey = make_stag(mr->pub.handle, k);
		t->key[mr->pub.handle] = (uint8_t)(k + 1);
		mr->state = IW_MR_VALID;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* ------------------------------------------------------------ public verbs */

IW_EXPORT struct iw_pd *iw_alloc_pd(struct iw_context *ctx)
{
	struct iw_pd *pd;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = ctx;
	pd->handle = atomic_fetch_add(&ctx->next_pd, 1) + 1; /* 0 is never a PD */
	atomic_init(&pd->use, 0);
	atomic_fetch_add(&pd->context->num_objs, 1);
	return pd;
}

IW_EXPORT int iw_dealloc_pd(struct iw_pd *pd)
{
	if (!pd)
		return 0;
	if (atomic_load(&pd->use) > 0)
		return EBUSY;
	atomic_fetch_sub(&pd->context->num_objs, 1);
	free(pd);
	return 0;
}

static struct iw_mr_int *mr_alloc(struct iw_pd *pd)
{
	struct iw_mr_int *mr = calloc(1, sizeof(*mr));

	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	atomic_init(&mr->busy, 0);
	return mr;
}

/* Give a fully set up MR its STag: from here on checks can find it. On
 * failure mr is freed and NULL returned with errno set. */
static struct iw_mr *mr_publish(struct iw_pd *pd, struct iw_mr_int *mr)
{
	struct iw_mem_table *t = &pd->context->mem;
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = slot_insert(t, mr);
	pthread_mutex_unlock(&t->lock);
	if (ret < 0) {
		free(mr);
		errno = -ret;
		return NULL;
	}
	atomic_fetch_add(&pd->use, 1);
	return &mr->pub;
}

/*
 * Zero-length registrations are refused (EINVAL), as siw_umem_get refuses
 * them: such an MR could only be the target of zero-length operations,
 * whose STag is never checked anyway. A NULL addr is refused for the same
 * reason, and so is a range that wraps the address space.
 */
IW_EXPORT struct iw_mr *iw_reg_mr(struct iw_pd *pd, void *addr, size_t length, int access)
{
	struct iw_mr_int *mr;

	if (!pd || !iw_mem_access_valid(access) || length == 0 || !addr ||
	    length - 1 > UINTPTR_MAX - (uintptr_t)addr) {
		errno = EINVAL;
		return NULL;
	}
	mr = mr_alloc(pd);
	if (!mr)
		return NULL;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->access = access;
	mr->iova = (uintptr_t)addr;
	mr->len = length;
	mr->host = addr;
	mr->state = IW_MR_VALID;
	return mr_publish(pd, mr);
}

/* A fast-reg MR starts INVALID with no access and no buffer; its first
 * STag (index and key) is assigned here, its key then comes from each
 * REG_MR WR (iw_mem_fastreg). */
IW_EXPORT struct iw_mr *iw_alloc_mr(struct iw_pd *pd, uint32_t max_num_sg)
{
	struct iw_mr_int *mr;

	if (!pd || max_num_sg == 0) {
		errno = EINVAL;
		return NULL;
	}
	mr = mr_alloc(pd);
	if (!mr)
		return NULL;
	mr->state = IW_MR_INVALID;
	mr->fastreg = true;
	mr->max_num_sg = max_num_sg;
	return mr_publish(pd, mr);
}

IW_EXPORT int iw_dereg_mr(struct iw_mr *pub)
{
	struct iw_mr_int *mr = iw_mr_int(pub);
	struct iw_mem_table *t;
	uint32_t i;

	if (!pub)
		return 0;
	t = &pub->context->mem;
	i = pub->handle;
	pthread_mutex_lock(&t->lock);
	if (i == 0 || i >= t->num_slots || t->slot[i] != mr) {
		pthread_mutex_unlock(&t->lock);
		return EINVAL;
	}
	if (atomic_load(&mr->busy) > 0) {
		pthread_mutex_unlock(&t->lock);
		return EBUSY;
	}
	slot_remove(t, i);
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_sub(&pub->pd->use, 1);
	free(mr);
	return 0;
}
