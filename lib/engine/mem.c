/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains, memory regions and the STag table.
 *
 * Slots live in chunks that are allocated as the table doubles and never
 * move or shrink until the context goes, so a reader can index them
 * without a lock. Each slot has one 64-bit word:
 *
 *   bits  0..31  references (checks, posted WRs, REG_MR WRs in flight)
 *   bits 32..39  key of the slot's current (or last) registration
 *   bit  40      PRESENT: an MR occupies the slot
 *   bit  41      VALID: its STag may be used
 *   bit  42      USED: the slot had a registration before (the key counts)
 *   bits 43..63  generation, moved on by every change but references
 *
 * A check loads the word, and if it names the STag (PRESENT, VALID, same
 * key) adds a reference with one compare-and-swap: no mutex on the data
 * path (issue 12). Holding a reference pins the MR (deregistration needs
 * the count at 0 and changes the word by compare-and-swap too), so the MR
 * can then be read; its fields are re-read if the generation moved while
 * reading them (a REG_MR rewrote them), seqlock style. Writers (register,
 * REG_MR, invalidate, deregister) hold the table's mutex among themselves.
 *
 * Invalidation is final (issue 15): a remote check for a write (RDMA
 * Write, Read Response, atomic) is a placement, counted in the slot's
 * placing counter from before its reference is taken until the segment's
 * octets have landed (iw_mem_placed). Invalidation clears VALID first and
 * then reads placing: a placement either announced itself before the
 * clear (and is seen) or its compare-and-swap meets the cleared word and
 * fails (seq_cst on both sides). A LOCAL_INV that sees placements stays
 * uncompleted at the head of its send queue until they end. A placer that
 * failed may be seen for a moment: the LOCAL_INV then waits one more turn.
 *
 * Slot and key choice (RFC 5042 section 5): a registration takes a free
 * slot at random (the table grows once fewer than a quarter of its slots
 * are free, so there is always a choice) and a random key, never the key
 * the slot's previous registration had, so a peer holding a stale STag
 * misses at least until the slot is reused twice, and a guessed STag is
 * right with probability live / (slots * 256). A REG_MR takes the key its
 * WR supplies (verbs: iw_inc_rkey).
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
 * Memory windows (type 2, RFC 5040 section 2.2 "Memory Window" and
 * section 7): a window's STag is an STag like any other, so its failures
 * take the codes above. Unbound, or unbound again by LOCAL_INV or the
 * peer's Send with Invalidate: invalid STag (DDP 1/1/0x00, RDMAP
 * 0/1/0x00): the STag no longer names anything, as for an invalidated
 * fast-reg MR. Used through a stream other than the QP it is bound to:
 * STag not associated with the RDMAP stream (1/1/0x02, 0/1/0x03), the
 * code RFC 5041 gives exactly that case (as another PD's MR). Outside
 * the window: base and bounds (1/1/0x01, 0/1/0x01). A right the window
 * lacks: access rights (RDMAP 0/1/0x02; DDP 1/1/0x00 as for MRs). A Send
 * with Invalidate for a window bound to another stream: 0/1/0x09.
 *
 * Type 1 windows (IB spec "Type 1 Memory Windows"; ibv_bind_mw(3)) are
 * associated with the PD alone: any stream of the PD may use them, so
 * only the PD check applies. They are bound, rebound and unbound (length
 * 0) by the owner's iw_bind_mw and cannot be invalidated: a Send with
 * Invalidate naming one is answered 0/1/0x09 (Remote Protection, STag
 * cannot be invalidated), as for an iw_reg_mr MR, and a LOCAL_INV of it
 * fails. Their keys come from the table's CSPRNG as registrations' do.
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "iwarp/wire.h"
#include "engine/mem.h"
#include "base/alloc.h"
#include "base/visibility.h"

#define ACCESS_ALL \
	(IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | \
	 IW_ACCESS_REMOTE_ATOMIC | IW_ACCESS_MW_BIND | IW_ACCESS_READ_SINK)
#define ACCESS_REMOTE (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | IW_ACCESS_REMOTE_ATOMIC)

/* A Read's sink needs either right, not both (op_rights, has_rights). */
#define SINK_RIGHTS (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_READ_SINK)

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
	if ((access & (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC | IW_ACCESS_READ_SINK)) &&
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
		return SINK_RIGHTS;
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

/* ------------------------------------------------------------ slot words */

#define W_REFS 0xFFFFFFFFull
#define W_KEY_SHIFT 32
#define W_PRESENT (1ull << 40)
#define W_VALID (1ull << 41)
#define W_USED (1ull << 42)
#define W_GEN (1ull << 43)

static uint8_t w_key(uint64_t w)
{
	return (uint8_t)(w >> W_KEY_SHIFT);
}

/* The word with a new generation and the given flags and key; the
 * references are kept. */
static uint64_t w_next(uint64_t w, uint64_t flags, uint8_t key)
{
	uint64_t gen = (w & ~(W_GEN - 1)) + W_GEN;

	return gen | W_USED | flags | (uint64_t)key << W_KEY_SHIFT | (w & W_REFS);
}

/* Does w stand for stag, usable now? */
static bool w_names(uint64_t w, uint32_t stag)
{
	return (w & (W_PRESENT | W_VALID)) == (W_PRESENT | W_VALID) &&
	       w_key(w) == iw_stag_key(stag) && (w & W_REFS) != W_REFS;
}

static unsigned chunk_of(uint32_t i)
{
	return i < TABLE_MIN_SLOTS ? 0 : (unsigned)(26 - __builtin_clz(i));
}

static uint32_t chunk_base(unsigned c)
{
	return c ? 32u << c : 0;
}

static uint32_t chunk_len(unsigned c)
{
	return c ? 32u << c : TABLE_MIN_SLOTS;
}

/* The slot of index i, or NULL beyond the table. Any thread. */
static struct iw_stag_slot *slot_at(struct iw_mem_table *t, uint32_t i)
{
	unsigned c = chunk_of(i);
	struct iw_stag_slot *ch;

	if (c >= IW_STAG_CHUNKS)
		return NULL;
	ch = atomic_load_explicit(&t->chunk[c], memory_order_acquire);
	return ch ? &ch[i - chunk_base(c)] : NULL;
}

static void slot_put(struct iw_stag_slot *s)
{
	atomic_fetch_sub_explicit(&s->word, 1, memory_order_release);
}

/* Replace the word's flags and key, keeping whatever references checks
 * add meanwhile. Writers only (locked). */
static void slot_set(struct iw_stag_slot *s, uint64_t flags, uint8_t key)
{
	uint64_t w = atomic_load(&s->word);

	while (!atomic_compare_exchange_weak(&s->word, &w, w_next(w, flags, key)))
		;
}

/* ------------------------------------------------------------------ table */

int iw_mem_table_init(struct iw_mem_table *t)
{
	int err;

	memset(t, 0, sizeof(*t));
	atomic_init(&t->bad_stag, 0);
	err = iw_csprng_init(&t->rng);
	if (err < 0)
		return err;
	err = pthread_mutex_init(&t->lock, NULL);
	return -err;
}

/* MRs still registered when the context goes are freed with it: the
 * application leaked them, and nothing can reach them any more. */
void iw_mem_table_cleanup(struct iw_mem_table *t)
{
	for (unsigned c = 0; c < IW_STAG_CHUNKS; c++) {
		struct iw_stag_slot *ch = atomic_load(&t->chunk[c]);

		for (uint32_t i = 0; ch && i < chunk_len(c); i++)
			iw_free(t->alloc, atomic_load(&ch[i].mr));
		iw_free(t->alloc, ch);
		atomic_store(&t->chunk[c], NULL);
	}
	iw_free(t->alloc, t->free_idx);
	t->free_idx = NULL;
	t->num_slots = t->num_free = 0;
	memset(&t->rng, 0, sizeof(t->rng));
	pthread_mutex_destroy(&t->lock);
}

/* Add the next chunk (doubling the table) and put its indices on the free
 * list; index 0 is never handed out. Locked. */
static int grow(struct iw_mem_table *t)
{
	unsigned c = t->num_slots ? chunk_of(t->num_slots) : 0;
	uint32_t n = chunk_len(c), base = chunk_base(c);
	struct iw_stag_slot *ch;
	uint32_t *fr;

	if (c >= IW_STAG_CHUNKS)
		return -ENOMEM; /* all 2^24 - 1 STag indices exist */
	fr = iw_realloc(t->alloc, t->free_idx, (t->num_slots + n) * sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	t->free_idx = fr;
	ch = iw_calloc(t->alloc, n, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	for (uint32_t i = base ? base : 1; i < base + n; i++)
		t->free_idx[t->num_free++] = i;
	atomic_store_explicit(&t->chunk[c], ch, memory_order_release);
	t->num_slots = base + n;
	return 0;
}

#ifdef IW_FUZZING
/* Fuzzing builds: the lowest free index and keys 0, 1, 2... so that seeds
 * can name STags (fuzz/fuzz_qp_rx.c). The scans below are the targets'
 * scaffolding, not code under test: no coverage counters or comparison
 * tracing in them (they cost fuzz_qp_rx a tenth of its time). Not inlined:
 * inlined into an instrumented caller (pick into slot_insert) they were
 * traced after all. */
#define FUZZ_SCAFFOLD __attribute__((no_sanitize("coverage"), noinline))

FUZZ_SCAFFOLD static uint32_t pick(struct iw_mem_table *t)
{
	uint32_t pos = 0;

	for (uint32_t i = 1; i < t->num_free; i++)
		if (t->free_idx[i] < t->free_idx[pos])
			pos = i;
	return pos;
}

static uint8_t new_key(struct iw_mem_table *t, uint64_t w)
{
	(void)t;
	return (w & W_USED) ? (uint8_t)(w_key(w) + 1) : 0;
}

/* Pass 0: -EBUSY if a slot of chunk c is referenced or being placed
 * into; pass 1: its free slots as never used (an MR's slot keeps its
 * word: its STag stays). Chunk by chunk, not through slot_at (which is
 * code under test, traced at every call). Index 0 is never handed out. */
FUZZ_SCAFFOLD static int restart_chunk(struct iw_mem_table *t, unsigned c, int pass)
{
	struct iw_stag_slot *ch = atomic_load(&t->chunk[c]);
	uint32_t base = chunk_base(c), n = chunk_len(c);

	for (uint32_t i = base ? 0 : 1; ch && i < n && base + i < t->num_slots; i++) {
		if (pass == 0 && ((atomic_load(&ch[i].word) & W_REFS) || atomic_load(&ch[i].placing)))
			return -EBUSY;
		if (pass == 1 && !atomic_load(&ch[i].mr))
			atomic_store(&ch[i].word, 0);
	}
	return 0;
}

/* Every free slot as never used, if no slot is referenced (mem.h). */
FUZZ_SCAFFOLD int iw_fuzz_mem_restart(struct iw_mem_table *t)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (int pass = 0; pass < 2 && !ret; pass++)
		for (unsigned c = 0; c < IW_STAG_CHUNKS && !ret; c++)
			ret = restart_chunk(t, c, pass);
	pthread_mutex_unlock(&t->lock);
	return ret;
}
#else
static uint32_t pick(struct iw_mem_table *t)
{
	return iw_csprng_below(&t->rng, t->num_free);
}

/* A random key, never the slot's previous one. Locked. */
static uint8_t new_key(struct iw_mem_table *t, uint64_t w)
{
	uint8_t k;

	do
		iw_csprng_bytes(&t->rng, &k, 1);
	while ((w & W_USED) && k == w_key(w));
	return k;
}
#endif

/* A free index at random. Keeping a quarter of the table free keeps the
 * choice wide; a table that cannot grow uses what is left. Locked. */
static int take_index(struct iw_mem_table *t, uint32_t *out)
{
	uint32_t pos;

	if (t->num_free * 4 < t->num_slots || !t->num_free) {
		if (grow(t) < 0 && !t->num_free)
			return -ENOMEM;
	}
	pos = pick(t);
	*out = t->free_idx[pos];
	t->free_idx[pos] = t->free_idx[--t->num_free];
	return 0;
}

/* Put mr, fully set up, in a free slot with a fresh key: from the word's
 * store on, checks find it. Locked. */
static int slot_insert(struct iw_mem_table *t, struct iw_mr_int *mr, bool valid)
{
	struct iw_stag_slot *s;
	uint32_t i;
	uint8_t k;

	if (take_index(t, &i) < 0)
		return -ENOMEM;
	s = slot_at(t, i);
	k = new_key(t, atomic_load(&s->word));
	mr->pub.handle = i;
	mr->pub.lkey = mr->pub.rkey = make_stag(i, k);
	atomic_store_explicit(&s->mr, mr, memory_order_release);
	slot_set(s, W_PRESENT | (valid ? W_VALID : 0), k);
	return 0;
}

/* The slot of mr if mr occupies it. Locked. */
static struct iw_stag_slot *slot_of(struct iw_mem_table *t, const struct iw_mr_int *mr)
{
	uint32_t i = mr->pub.handle;
	struct iw_stag_slot *s = i ? slot_at(t, i) : NULL;

	return s && atomic_load(&s->mr) == mr ? s : NULL;
}

/* The MR whose current STag is stag, valid or not; NULL if none. Locked. */
static struct iw_mr_int *lookup_locked(struct iw_mem_table *t, uint32_t stag)
{
	uint32_t i = iw_stag_index(stag);
	struct iw_stag_slot *s = i ? slot_at(t, i) : NULL;
	uint64_t w;

	if (!s)
		return NULL;
	w = atomic_load(&s->word);
	if (!(w & W_PRESENT) || w_key(w) != iw_stag_key(stag))
		return NULL;
	return atomic_load(&s->mr);
}

/* ------------------------------------------------------------------ checks */

/* What a check reads of the MR, read once and consistently. */
struct snap {
	const struct iw_pd *pd;
	int access;
	uint64_t iova, len;
	uint8_t *host;
	bool window, pd_wide;
	uint32_t qp_num;
};

static void snap_read(const struct iw_mr_int *mr, struct snap *sn)
{
	sn->pd = mr->pub.pd;
	sn->window = mr->window;
	sn->pd_wide = mr->pd_wide;
	sn->qp_num = atomic_load_explicit(&mr->qp_num, memory_order_relaxed);
	sn->access = atomic_load_explicit(&mr->access, memory_order_relaxed);
	sn->iova = atomic_load_explicit(&mr->iova, memory_order_relaxed);
	sn->len = atomic_load_explicit(&mr->len, memory_order_relaxed);
	sn->host = atomic_load_explicit(&mr->host, memory_order_relaxed);
}

/* Take a reference on the VALID registration stag names and snapshot it.
 * Lock-free: see the top of the file. A placement announces itself first
 * (see "Invalidation is final" above). */
static bool acquire(struct iw_mem_table *t, uint32_t stag, bool place, struct iw_mr_int **out,
		    struct snap *sn)
{
	uint32_t i = iw_stag_index(stag);
	struct iw_stag_slot *s = i ? slot_at(t, i) : NULL;

	if (!s)
		return false;
	if (place)
		atomic_fetch_add(&s->placing, 1);
	for (;;) {
		uint64_t w = atomic_load(&s->word);
		uint64_t w2;

		do {
			if (!w_names(w, stag)) {
				if (place)
					atomic_fetch_sub(&s->placing, 1);
				return false;
			}
		} while (!atomic_compare_exchange_weak(&s->word, &w, w + 1));
		*out = atomic_load_explicit(&s->mr, memory_order_acquire);
		snap_read(*out, sn);
		atomic_thread_fence(memory_order_acquire);
		w2 = atomic_load_explicit(&s->word, memory_order_relaxed);
		if (((w ^ w2) & ~W_REFS) == 0)
			return true;
		slot_put(s); /* re-registered meanwhile: look again */
	}
}

/* Is [to, to + len) inside the MR? Wrap is judged on the last octet, so a
 * range ending exactly at 2^64 is not a wrap. */
static enum fail check_range(const struct snap *sn, uint64_t to, uint64_t len)
{
	uint64_t off;

	if (len && to > UINT64_MAX - (len - 1))
		return F_WRAP;
	if (to < sn->iova)
		return F_BOUNDS;
	off = to - sn->iova;
	if (off > sn->len || len > sn->len - off)
		return F_BOUNDS;
	return OK;
}

static bool has_rights(int access, int rights)
{
	if (rights == SINK_RIGHTS)
		return (access & SINK_RIGHTS) != 0;
	return (access & rights) == rights;
}

/* The checks shared by local and remote accesses, in the order of mem.h.
 * On success *out holds a reference and *ptr is the host address of to. */
static enum fail check(struct iw_mem_table *t, const struct iw_mem_req *req, bool remote,
		       uint32_t stag, uint64_t to, uint64_t len, int rights, bool place,
		       struct iw_mr_int **out, uint8_t **ptr, uint64_t *room)
{
	struct iw_mr_int *mr;
	struct snap sn;
	enum fail f;

	if (!acquire(t, stag, place, &mr, &sn))
		return F_STAG;
	if (sn.window && !remote)
		f = F_STAG; /* a window is no lkey (verbs) */
	else if (sn.pd != req->pd || (sn.window && !sn.pd_wide && sn.qp_num != req->qp_num))
		f = F_PD;   /* a type 2 window belongs to one stream */
	else if (!has_rights(sn.access, rights))
		f = F_ACCESS;
	else
		f = check_range(&sn, to, len);
	if (f != OK) {
		if (place)
			iw_mem_placed(mr);
		iw_mem_put(mr);
		return f;
	}
	*out = mr;
	if (ptr)
		*ptr = sn.host + (to - sn.iova);
	if (room)
		*room = sn.len - (to - sn.iova);
	return OK;
}

/* A refusal that says the requester named an STag it may not use. */
static void count_bad_stag(struct iw_mem_table *t, const struct iw_mem_req *req)
{
	atomic_fetch_add_explicit(&t->bad_stag, 1, memory_order_relaxed);
	if (req->bad_stag)
		atomic_fetch_add_explicit(req->bad_stag, 1, memory_order_relaxed);
	if (req->bad_stag_group)
		atomic_fetch_add_explicit(req->bad_stag_group, 1, memory_order_relaxed);
}

uint16_t iw_mem_check_remote(struct iw_mem_table *t, const struct iw_mem_req *req, uint32_t stag,
			     uint64_t to, uint64_t len, enum iw_mem_op op, enum iw_mem_layer layer,
			     struct iw_mr_int **out_mr, uint8_t **out_ptr)
{
	return iw_mem_check_remote_room(t, req, stag, to, len, op, layer, out_mr, out_ptr, NULL);
}

uint16_t iw_mem_check_remote_room(struct iw_mem_table *t, const struct iw_mem_req *req,
				  uint32_t stag, uint64_t to, uint64_t len, enum iw_mem_op op,
				  enum iw_mem_layer layer, struct iw_mr_int **out_mr,
				  uint8_t **out_ptr, uint64_t *out_room)
{
	enum fail f;

	*out_mr = NULL;
	bool place = op == IW_MEM_REMOTE_WRITE || op == IW_MEM_REMOTE_ATOMIC ||
		     op == IW_MEM_READ_SINK;

	f = check(t, req, true, stag, to, len, op_rights(op), place, out_mr, out_ptr, out_room);
	if (f == OK)
		return 0;
	if (f == F_STAG || f == F_PD)
		count_bad_stag(t, req);
	return layer == IW_MEM_BY_DDP ? term_ddp[f] : term_rdmap[f];
}

int iw_mem_check_local(struct iw_mem_table *t, const struct iw_pd *pd, const struct iw_sge *sge,
		       enum iw_mem_op op, struct iw_mr_int **out_mr, uint8_t **out_ptr)
{
	enum fail f;

	*out_mr = NULL;
	/* Nothing is read or written through an empty SGE, so its lkey is
	 * not looked at (as the kernel providers do). */
	if (sge->length == 0) {
		if (out_ptr)
			*out_ptr = NULL;
		return 0;
	}
	struct iw_mem_req req = {.pd = pd};

	f = check(t, &req, false, sge->lkey, sge->addr, sge->length, op_rights(op), false, out_mr,
		  out_ptr, NULL);
	return f == OK ? 0 : local_errno[f];
}

int iw_mem_check_sink(struct iw_mem_table *t, const struct iw_mem_req *req,
		      const struct iw_sge *sge, struct iw_mr_int **out_mr, uint8_t **out_ptr)
{
	enum fail f;

	*out_mr = NULL;
	if (sge->length == 0) {
		if (out_ptr)
			*out_ptr = NULL;
		return 0;
	}
	/* Checked as the Read Response's placement will be: a window is
	 * accepted, and a type 2 one only on the QP it is bound to. */
	f = check(t, req, true, sge->lkey, sge->addr, sge->length,
		  op_rights(IW_MEM_READ_SINK), false, out_mr, out_ptr, NULL);
	return f == OK ? 0 : local_errno[f];
}

void iw_mem_put(struct iw_mr_int *mr)
{
	if (mr)
		slot_put(slot_at(&mr->pub.context->mem, mr->pub.handle));
}

void iw_mem_placed(struct iw_mr_int *mr)
{
	atomic_fetch_sub(&slot_at(&mr->pub.context->mem, mr->pub.handle)->placing, 1);
}

void iw_mem_put_placed(struct iw_mr_int *mr)
{
	if (mr) {
		iw_mem_placed(mr);
		iw_mem_put(mr);
	}
}

bool iw_mem_placements_done(struct iw_mem_table *t, uint32_t stag)
{
	struct iw_stag_slot *s = iw_stag_index(stag) ? slot_at(t, iw_stag_index(stag)) : NULL;

	return !s || atomic_load(&s->placing) == 0;
}

/* The MR is the caller's and registered: its slot cannot go meanwhile (a
 * deregistration racing with this is the application's bug). */
void iw_mem_hold(struct iw_mr_int *mr)
{
	struct iw_stag_slot *s = slot_at(&mr->pub.context->mem, mr->pub.handle);

	atomic_fetch_add_explicit(&s->word, 1, memory_order_acquire);
}

unsigned iw_mem_refs(const struct iw_mr_int *mr)
{
	struct iw_stag_slot *s = slot_at(&mr->pub.context->mem, mr->pub.handle);

	return (unsigned)(atomic_load(&s->word) & W_REFS);
}

bool iw_mem_is_valid(const struct iw_mr_int *mr)
{
	struct iw_stag_slot *s = slot_at(&mr->pub.context->mem, mr->pub.handle);

	return atomic_load(&s->word) & W_VALID;
}

/* ------------------------------------------------------- invalidate, REG_MR */

static struct iw_mw_int *mw_of(struct iw_mr_int *win)
{
	return (struct iw_mw_int *)((char *)win - offsetof(struct iw_mw_int, win));
}

/* A window lets go of its MR (invalidated or freed). Locked. */
static void unbind(struct iw_mr_int *win)
{
	struct iw_mw_int *mw = mw_of(win);

	iw_mem_put(mw->mr);
	mw->mr = NULL;
}

/* Why an invalidation is refused, or 0. Locked. */
static int invalidate_locked(struct iw_mem_table *t, const struct iw_mem_req *req, uint32_t stag,
			     bool remote)
{
	struct iw_mr_int *mr = lookup_locked(t, stag);
	struct iw_stag_slot *s;

	if (!mr) {
		if (remote)
			count_bad_stag(t, req);
		return remote ? IW_TERM_RDMAP_OP_NOINV : -EINVAL;
	}
	/* Type 1 windows, like iw_reg_mr MRs, live until their owner says
	 * (iw_bind_mw with length 0, iw_dealloc_mw): never invalidated. */
	if (mr->pub.pd != req->pd || !(mr->fastreg || mr->window) || mr->pd_wide) {
		if (remote && mr->pub.pd != req->pd)
			count_bad_stag(t, req);
		return remote ? IW_TERM_RDMAP_PROT_NOINV : -EINVAL;
	}
	/* A peer may only revoke what it was given access to, and a type 2
	 * window only through the stream it is bound to. */
	if (remote && (!(mr->access & ACCESS_REMOTE) ||
		       (mr->window && atomic_load(&mr->qp_num) != req->qp_num)))
		return IW_TERM_RDMAP_PROT_NOINV;
	if (mr->window)
		unbind(mr);
	/* From here no check passes. Placements already under way keep
	 * their host pointer; a LOCAL_INV waits for them, a peer's
	 * invalidation arrives behind its own connection's placements. */
	s = slot_of(t, mr);
	slot_set(s, W_PRESENT, iw_stag_key(stag));
	return !remote && atomic_load(&s->placing) ? IW_MEM_INV_WAIT : 0;
}

int iw_mem_invalidate(struct iw_mem_table *t, const struct iw_mem_req *req, uint32_t stag,
		      bool remote)
{
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = invalidate_locked(t, req, stag, remote);
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
	struct iw_stag_slot *s = slot_of(t, mr);

	if (!mr->fastreg || !s)
		return -EINVAL;
	if (mr->pub.pd != pd)
		return -EACCES;
	/* Must be invalidated first (verbs). Placements still holding a
	 * reference from before the invalidation keep their host pointer
	 * into the old buffer; re-registering does not wait for them. */
	if (atomic_load(&s->word) & W_VALID)
		return -EINVAL;
	if (iw_stag_index(key) != mr->pub.handle)
		return -EINVAL; /* the WR names another MR's STag */
	return 0;
}

/* Rewrite the registration: the generation moves first (a check reading
 * the fields now retries), then the fields, then the VALID word. */
static void fastreg_write(struct iw_mr_int *mr, uint32_t key, int access, uint64_t iova,
			  uint64_t length, void *addr)
{
	struct iw_stag_slot *s = slot_of(&mr->pub.context->mem, mr);
	uint8_t k = iw_stag_key(key);

	slot_set(s, W_PRESENT, w_key(atomic_load(&s->word)));
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&mr->access, access, memory_order_relaxed);
	atomic_store_explicit(&mr->iova, iova, memory_order_relaxed);
	atomic_store_explicit(&mr->len, length, memory_order_relaxed);
	atomic_store_explicit(&mr->host, (uint8_t *)addr, memory_order_relaxed);
	mr->pub.addr = addr;
	mr->pub.length = (size_t)length;
	mr->pub.lkey = mr->pub.rkey = make_stag(mr->pub.handle, k);
	slot_set(s, W_PRESENT | W_VALID, k);
}

int iw_mem_fastreg(struct iw_mem_table *t, const struct iw_pd *pd, struct iw_mr_int *mr,
		   uint32_t key, int access, uint64_t iova, uint64_t length, void *addr)
{
	int ret = fastreg_args_valid(access, iova, length, addr);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&t->lock);
	ret = fastreg_locked(t, pd, mr, key);
	if (ret == 0)
		fastreg_write(mr, key, access, iova, length, addr);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* ------------------------------------------------------------ windows */

/* A zeroed object of size n if the arguments were ok, else NULL with
 * errno EINVAL (or ENOMEM). */
static void *obj_new(const struct iw_context *ctx, bool args_ok, size_t n)
{
	void *p = args_ok ? iw_calloc(ctx->alloc, 1, n) : NULL;

	if (!p)
		errno = args_ok ? ENOMEM : EINVAL;
	return p;
}

static int unpublish(struct iw_mr_int *m);

/* Can mr back a window with these rights over [addr, addr + length)?
 * Locked, so mr's registration is stable. */
static int bind_target_ok(struct iw_mem_table *t, const struct iw_pd *pd, struct iw_mr_int *mr,
			  int access, uint64_t addr, uint64_t length)
{
	struct iw_stag_slot *s = slot_of(t, mr);
	struct snap sn;

	if (!s || mr->window || !(atomic_load(&s->word) & W_VALID))
		return -EINVAL;
	snap_read(mr, &sn);
	if (sn.pd != pd)
		return -EACCES;
	/* The window grants the remote rights, the MR need not have them
	 * (the point of windows: the region is never remotely accessible
	 * but through one); a window that lets the peer write needs an MR
	 * its owner may write (IB C10-74, as rxe checks a bind). */
	if (!(sn.access & IW_ACCESS_MW_BIND))
		return -EACCES;
	if ((access & (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC)) &&
	    !(sn.access & IW_ACCESS_LOCAL_WRITE))
		return -EACCES;
	return check_range(&sn, addr, length) == OK ? 0 : -EFAULT;
}

static int bind_args_ok(const struct iw_mem_req *req, struct iw_mw_int *mw, uint32_t key,
			int access, uint64_t length)
{
	bool type1 = mw->pub.type == IW_MW_TYPE_1;

	/* Remote rights only (the MR supplies LOCAL_WRITE); a type 2 bind
	 * grants at least one, a type 1 bind of length 0 unbinds. */
	if ((access & ~ACCESS_REMOTE) || (!type1 && (!access || length == 0)))
		return -EINVAL;
	if (iw_stag_index(key) != mw->win.pub.handle)
		return -EINVAL;
	return mw->pub.pd == req->pd ? 0 : -EACCES;
}

/* Is the window's slot ready for this bind? A type 2 window must be
 * unbound (invalidate first); a type 1 window is rebound. Locked. */
static int bind_slot_ok(struct iw_mem_table *t, struct iw_mw_int *mw)
{
	struct iw_stag_slot *s = slot_of(t, &mw->win);

	if (!s)
		return -EINVAL;
	return mw->win.pd_wide || !(atomic_load(&s->word) & W_VALID) ? 0 : -EINVAL;
}

/* Bind (length > 0) or, for type 1, unbind. Locked, arguments checked. */
static void bind_locked(const struct iw_mem_req *req, struct iw_mw_int *mw, uint32_t key,
			struct iw_mr_int *mr, int access, uint64_t addr, uint64_t length)
{
	struct iw_stag_slot *s = slot_of(&mw->win.pub.context->mem, &mw->win);

	if (mw->mr)
		unbind(&mw->win); /* a type 1 rebind drops the old binding */
	if (length == 0) {
		slot_set(s, W_PRESENT, iw_stag_key(key));
		mw->win.pub.lkey = mw->win.pub.rkey = key;
		return;
	}
	atomic_store(&mw->win.qp_num, req->qp_num);
	iw_mem_hold(mr);
	mw->mr = mr;
	fastreg_write(&mw->win, key, access, addr, length,
		      atomic_load(&mr->host) + (addr - atomic_load(&mr->iova)));
	/* A type 1 window's rkey was set by iw_bind_mw when it posted. */
	if (!mw->win.pd_wide)
		mw->pub.rkey = key;
}

int iw_mem_bind_mw(struct iw_mem_table *t, const struct iw_mem_req *req, struct iw_mw_int *mw,
		   uint32_t key, struct iw_mr_int *mr, int access, uint64_t addr, uint64_t length)
{
	int ret = bind_args_ok(req, mw, key, access, length);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&t->lock);
	ret = bind_slot_ok(t, mw);
	if (ret == 0 && length)
		ret = mr ? bind_target_ok(t, req->pd, mr, access, addr, length) : -EINVAL;
	if (ret == 0)
		bind_locked(req, mw, key, mr, access, addr, length);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

uint32_t iw_mem_mw_next_key(struct iw_mem_table *t, const struct iw_mw_int *mw)
{
	uint32_t cur = mw->pub.rkey;
	uint8_t k;

	pthread_mutex_lock(&t->lock);
	k = new_key(t, W_USED | ((uint64_t)iw_stag_key(cur) << W_KEY_SHIFT));
	pthread_mutex_unlock(&t->lock);
	return make_stag(iw_stag_index(cur), k);
}

IW_EXPORT struct iw_mw *iw_alloc_mw(struct iw_pd *pd, enum iw_mw_type type)
{
	struct iw_mw_int *mw;
	struct iw_mem_table *t;
	int ret;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	mw = obj_new(pd->context, type == IW_MW_TYPE_1 || type == IW_MW_TYPE_2, sizeof(*mw));
	if (!mw)
		return NULL;
	mw->win.pub.context = mw->pub.context = pd->context;
	mw->win.pub.pd = mw->pub.pd = pd;
	mw->win.window = true;
	mw->win.pd_wide = type == IW_MW_TYPE_1;
	mw->pub.type = type;
	t = &pd->context->mem;
	pthread_mutex_lock(&t->lock);
	ret = slot_insert(t, &mw->win, false);
	pthread_mutex_unlock(&t->lock);
	if (ret < 0) {
		iw_free(t->alloc, mw);
		errno = -ret;
		return NULL;
	}
	mw->pub.rkey = mw->win.pub.rkey;
	mw->pub.handle = mw->win.pub.handle;
	atomic_fetch_add(&pd->use, 1);
	return &mw->pub;
}

IW_EXPORT int iw_dealloc_mw(struct iw_mw *pub)
{
	struct iw_mw_int *mw = (struct iw_mw_int *)pub;
	int ret;

	if (!pub)
		return 0;
	ret = unpublish(&mw->win);
	if (ret)
		return ret;
	atomic_fetch_sub(&pub->pd->use, 1);
	iw_free(pub->context->alloc, mw);
	return 0;
}

/* ------------------------------------------------------------ public verbs */

IW_EXPORT struct iw_pd *iw_alloc_pd(struct iw_context *ctx)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct iw_pd *pd = obj_new(ctx, true, sizeof(*pd));

	if (!pd)
		return NULL;
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
	iw_free(pd->context->alloc, pd);
	return 0;
}

static struct iw_mr_int *mr_alloc(struct iw_pd *pd)
{
	struct iw_mr_int *mr = iw_calloc(pd->context->alloc, 1, sizeof(*mr));

	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	return mr;
}

/* Give a fully set up MR its STag: from here on checks can find it. On
 * failure mr is freed and NULL returned with errno set. */
static struct iw_mr *mr_publish(struct iw_pd *pd, struct iw_mr_int *mr, bool valid)
{
	struct iw_mem_table *t = &pd->context->mem;
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = slot_insert(t, mr, valid);
	pthread_mutex_unlock(&t->lock);
	if (ret < 0) {
		iw_free(t->alloc, mr);
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
	return mr_publish(pd, mr, true);
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
	mr->fastreg = true;
	mr->max_num_sg = max_num_sg;
	return mr_publish(pd, mr, false);
}

/* Take mr's slot back: only with no reference, and by compare-and-swap,
 * so that no check can add one meanwhile. Locked. */
static int slot_remove(struct iw_mem_table *t, struct iw_mr_int *mr)
{
	struct iw_stag_slot *s = slot_of(t, mr);
	uint64_t w;

	if (!s)
		return EINVAL;
	w = atomic_load(&s->word);
	do {
		if (w & W_REFS)
			return EBUSY;
	} while (!atomic_compare_exchange_weak(&s->word, &w, w_next(w, 0, w_key(w))));
	atomic_store(&s->mr, NULL);
	t->free_idx[t->num_free++] = mr->pub.handle;
	return 0;
}

/* Take an MR or a window out of the table (a bound window lets go of its
 * MR); 0 or a positive errno. */
static int unpublish(struct iw_mr_int *m)
{
	struct iw_mem_table *t = &m->pub.context->mem;
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = slot_remove(t, m);
	if (ret == 0 && m->window)
		unbind(m);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

IW_EXPORT int iw_dereg_mr(struct iw_mr *pub)
{
	int ret;

	if (!pub)
		return 0;
	ret = unpublish(iw_mr_int(pub));
	if (ret)
		return ret;
	atomic_fetch_sub(&pub->pd->use, 1);
	iw_free(pub->context->alloc, pub);
	return 0;
}
