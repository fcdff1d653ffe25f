/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PDs, MRs and the STag table (lib/engine/mem.c): the access flag rule, STag
 * layout and key rotation, every TERMINATE a remote check can yield, the
 * local SGE checks, references against deregistration, fast registration
 * and invalidation, table growth and concurrent use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "iwarp/wire.h"
#include "engine/mem.h"
#include "suites.h"

/* A requester on pd (QP number 0, uncounted). */
#define REQ(p) (&(struct iw_mem_req){.pd = (p)})

#define ALL_RIGHTS \
	(IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ | \
	 IW_ACCESS_REMOTE_ATOMIC)

static void ctx_init(struct iw_context *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ck_assert_int_eq(pthread_mutex_init(&ctx->lock, NULL), 0);
	ck_assert_int_eq(iw_mem_table_init(&ctx->mem), 0);
}

static void ctx_cleanup(struct iw_context *ctx)
{
	iw_mem_table_cleanup(&ctx->mem);
	pthread_mutex_destroy(&ctx->lock);
}

static struct iw_pd *pd_new(struct iw_context *ctx)
{
	struct iw_pd *pd = iw_alloc_pd(ctx);

	ck_assert_ptr_nonnull(pd);
	return pd;
}

static struct iw_mr *reg(struct iw_pd *pd, void *addr, size_t len, int access)
{
	struct iw_mr *mr = iw_reg_mr(pd, addr, len, access);

	ck_assert_ptr_nonnull(mr);
	return mr;
}

static int busy(struct iw_mr *mr)
{
	return (int)iw_mem_refs(iw_mr_int(mr));
}

/* Check a remote access; on success check the pointer and drop the ref. */
static uint16_t remote(struct iw_context *ctx, const struct iw_pd *pd, uint32_t stag, uint64_t to,
		       uint64_t len, enum iw_mem_op op, enum iw_mem_layer layer)
{
	struct iw_mr_int *mr = (struct iw_mr_int *)&mr; /* poison: must be reset */
	uint8_t *ptr = NULL;
	uint16_t term;
	int held;

	term = iw_mem_check_remote(&ctx->mem, REQ(pd), stag, to, len, op, layer, &mr, &ptr);
	if (term) {
		ck_assert_ptr_null(mr);
		return term;
	}
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_eq(mr->pub.rkey, stag);
	ck_assert_ptr_eq(ptr, mr->host + (to - mr->iova));
	held = (int)iw_mem_refs(mr);
	ck_assert_int_ge(held, 1);
	if (op == IW_MEM_REMOTE_WRITE || op == IW_MEM_REMOTE_ATOMIC)
		iw_mem_placed(mr); /* a placement: ended here */
	iw_mem_put(mr);
	ck_assert_int_eq((int)iw_mem_refs(mr), held - 1);
	return 0;
}

static int local(struct iw_context *ctx, const struct iw_pd *pd, uint32_t lkey, uint64_t addr,
		 uint32_t len, enum iw_mem_op op)
{
	struct iw_sge sge = {.addr = addr, .length = len, .lkey = lkey};
	struct iw_mr_int *mr = (struct iw_mr_int *)&mr;
	uint8_t *ptr = NULL;
	int ret, held;

	ret = iw_mem_check_local(&ctx->mem, pd, &sge, op, &mr, &ptr);
	if (ret || len == 0) {
		ck_assert_ptr_null(mr);
		return ret;
	}
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_eq(mr->pub.lkey, lkey);
	ck_assert_ptr_eq(ptr, mr->host + (addr - mr->iova));
	held = (int)iw_mem_refs(mr);
	ck_assert_int_ge(held, 1);
	iw_mem_put(mr);
	ck_assert_int_eq((int)iw_mem_refs(mr), held - 1);
	return 0;
}

/* ------------------------------------------------------- access flag rule */

START_TEST(access_flag_rule)
{
	static char buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	for (int a = 0; a <= ALL_RIGHTS; a++) {
		bool remote_mod = a & (IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_ATOMIC);
		bool want = !remote_mod || (a & IW_ACCESS_LOCAL_WRITE);
		struct iw_mr *mr;

		ck_assert_int_eq(iw_mem_access_valid(a), want);
		errno = 0;
		mr = iw_reg_mr(pd, buf, sizeof(buf), a);
		if (!want) {
			ck_assert_ptr_null(mr);
			ck_assert_int_eq(errno, EINVAL);
			continue;
		}
		ck_assert_ptr_nonnull(mr);
		ck_assert_int_eq(iw_mr_int(mr)->access, a);
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
	}
	/* MW_BIND needs nothing else; unknown bits, alone or with valid
	 * ones, are refused. */
	ck_assert(iw_mem_access_valid(IW_ACCESS_MW_BIND));
	/* READ_SINK lets the peer's Read Responses write: LOCAL_WRITE too. */
	ck_assert(!iw_mem_access_valid(IW_ACCESS_READ_SINK));
	ck_assert(iw_mem_access_valid(IW_ACCESS_READ_SINK | IW_ACCESS_LOCAL_WRITE));
	for (int bit = 6; bit < 31; bit++) {
		ck_assert(!iw_mem_access_valid(1 << bit));
		ck_assert(!iw_mem_access_valid((1 << bit) | IW_ACCESS_LOCAL_WRITE));
	}
	ck_assert(!iw_mem_access_valid(-1));
	errno = 0;
	ck_assert_ptr_null(iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE | 0x100));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(atomic_load(&pd->use), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

START_TEST(reg_mr_bad_arguments)
{
	static char buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	errno = 0;
	ck_assert_ptr_null(iw_reg_mr(NULL, buf, sizeof(buf), 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_reg_mr(pd, NULL, 16, IW_ACCESS_LOCAL_WRITE));
	ck_assert_int_eq(errno, EINVAL);
	/* Zero length is refused, with or without an address. */
	errno = 0;
	ck_assert_ptr_null(iw_reg_mr(pd, buf, 0, IW_ACCESS_LOCAL_WRITE));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_reg_mr(pd, NULL, 0, 0));
	ck_assert_int_eq(errno, EINVAL);
	/* A range that wraps the address space (never dereferenced). */
	errno = 0;
	ck_assert_ptr_null(iw_reg_mr(pd, (void *)(UINTPTR_MAX - 7), 16, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_alloc_mr(NULL, 4));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_alloc_mr(pd, 0));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(iw_alloc_pd(NULL));
	ck_assert_int_eq(errno, EINVAL);
	/* Nothing was left behind in the table. */
	ck_assert_int_eq(atomic_load(&pd->use), 0);
	ck_assert_uint_eq(ctx.mem.num_free ? ctx.mem.num_free + 1 : 0, ctx.mem.num_slots);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ----------------------------------------------------- STag layout, keys */

START_TEST(stag_layout_and_fields)
{
	static char buf[100];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *a, *b;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	a = reg(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_READ);
	b = reg(pd, buf + 10, 20, 0);
	ck_assert_ptr_eq(a->context, &ctx);
	ck_assert_ptr_eq(a->pd, pd);
	ck_assert_ptr_eq(a->addr, buf);
	ck_assert_uint_eq(a->length, sizeof(buf));
	ck_assert_uint_eq(a->lkey, a->rkey);
	ck_assert_uint_ne(a->rkey, 0);
	ck_assert_uint_ge(iw_stag_index(a->rkey), 1);
	ck_assert_uint_le(iw_stag_index(a->rkey), IW_STAG_MAX_INDEX);
	ck_assert_uint_eq(a->rkey, (iw_stag_index(a->rkey) << 8) | iw_stag_key(a->rkey));
	ck_assert_uint_eq(a->handle, iw_stag_index(a->rkey));
	ck_assert_uint_ne(iw_stag_index(a->rkey), iw_stag_index(b->rkey));
	ck_assert_uint_eq(iw_mr_int(a)->iova, (uintptr_t)buf);
	ck_assert_uint_eq(iw_mr_int(a)->len, sizeof(buf));
	ck_assert_ptr_eq(iw_mr_int(a)->host, (uint8_t *)buf);
	ck_assert_int_eq(iw_mem_is_valid(iw_mr_int(a)), true);
	ck_assert(!iw_mr_int(a)->fastreg);
	ck_assert_int_eq(busy(a), 0);
	ck_assert_int_eq(atomic_load(&pd->use), 2);
	ck_assert_int_eq(iw_dereg_mr(a), 0);
	ck_assert_int_eq(atomic_load(&pd->use), 1);
	ck_assert_int_eq(iw_dereg_mr(b), 0);
	ck_assert_int_eq(atomic_load(&pd->use), 0);
	ck_assert_int_eq(iw_dereg_mr(NULL), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

START_TEST(key_changes_on_reregistration)
{
	static char buf[64];
	int rights = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	uint32_t first, old;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = reg(pd, buf, sizeof(buf), rights);
	first = old = mr->rkey;
	/* 300 rounds: whichever slot the next registration takes, the
	 * retired STag stays dead, and a slot taken again never gets the key
	 * it had just before. */
	for (int round = 0; round < 300; round++) {
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
		ck_assert_uint_eq(remote(&ctx, pd, old, (uintptr_t)buf, 8, IW_MEM_REMOTE_WRITE,
					 IW_MEM_BY_DDP),
				  IW_TERM_DDP_T_INV_STAG);
		ck_assert_uint_eq(remote(&ctx, pd, old, (uintptr_t)buf, 8, IW_MEM_REMOTE_READ,
					 IW_MEM_BY_RDMAP),
				  IW_TERM_RDMAP_INV_STAG);
		ck_assert_int_eq(local(&ctx, pd, old, (uintptr_t)buf, 8, IW_MEM_LOCAL_READ),
				 -EINVAL);
		mr = reg(pd, buf, sizeof(buf), rights);
		ck_assert_uint_ne(mr->rkey, old);
		ck_assert_uint_eq(remote(&ctx, pd, mr->rkey, (uintptr_t)buf, 8,
					 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
				  0);
		ck_assert_uint_eq(remote(&ctx, pd, old, (uintptr_t)buf, 8, IW_MEM_REMOTE_WRITE,
					 IW_MEM_BY_DDP),
				  IW_TERM_DDP_T_INV_STAG);
		old = mr->rkey;
	}
	(void)first;
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

START_TEST(stag_zero_and_unknown_invalid)
{
	static char buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	uint32_t beyond;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	/* Empty table first: nothing is valid, not even STag 0. */
	ck_assert_uint_eq(remote(&ctx, pd, 0, 0, 0, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(remote(&ctx, pd, 0x100, 0, 1, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_INV_STAG);
	mr = reg(pd, buf, sizeof(buf), ALL_RIGHTS);
	for (uint32_t k = 0; k < 256; k++) /* index 0 with any key */
		ck_assert_uint_eq(remote(&ctx, pd, k, (uintptr_t)buf, 1, IW_MEM_REMOTE_WRITE,
					 IW_MEM_BY_DDP),
				  IW_TERM_DDP_T_INV_STAG);
	ck_assert_int_eq(local(&ctx, pd, 0, (uintptr_t)buf, 1, IW_MEM_LOCAL_READ), -EINVAL);
	beyond = (ctx.mem.num_slots + 5) << 8;
	ck_assert_uint_eq(remote(&ctx, pd, beyond, (uintptr_t)buf, 1, IW_MEM_REMOTE_WRITE,
				 IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(remote(&ctx, pd, 0xFFFFFFFFu, (uintptr_t)buf, 1, IW_MEM_REMOTE_WRITE,
				 IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_int_eq(local(&ctx, pd, beyond, (uintptr_t)buf, 1, IW_MEM_LOCAL_READ), -EINVAL);
	/* An unused slot inside the table. */
	ck_assert_uint_eq(remote(&ctx, pd, mr->rkey + 0x100, (uintptr_t)buf, 1,
				 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_int_eq(busy(mr), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ------------------------------------------------------ remote TERMINATEs */

/* The MRs every row runs against: region R of 256 octets in PD 1. */
enum which_mr { MR_ALL, MR_LOCAL, MR_RREAD, MR_RWRITE, MR_RATOMIC, MR_OTHER_PD };

struct remote_case {
	const char *name;
	enum which_mr mr;
	int64_t stag_delta; /* added to the STag: key or index changes */
	int64_t to_off;     /* TO = iova + to_off (wraps modulo 2^64) */
	uint64_t len;
	enum iw_mem_op op;
	uint16_t ddp, rdmap; /* expected per layer, 0 = success */
};

#define R_LEN 256
#define OK2 0, 0
#define BOTH(d, r) IW_TERM_DDP_T_##d, IW_TERM_RDMAP_##r
#define BB BOTH(BASE_BOUNDS, BASE_BOUNDS)

static const struct remote_case remote_cases[] = {
	{"write whole", MR_ALL, 0, 0, R_LEN, IW_MEM_REMOTE_WRITE, OK2},
	{"read middle", MR_ALL, 0, 17, 100, IW_MEM_REMOTE_READ, OK2},
	{"atomic 8 at end", MR_ALL, 0, R_LEN - 8, 8, IW_MEM_REMOTE_ATOMIC, OK2},
	{"zero length at start", MR_ALL, 0, 0, 0, IW_MEM_REMOTE_WRITE, OK2},
	{"zero length inside", MR_ALL, 0, 99, 0, IW_MEM_REMOTE_READ, OK2},
	{"zero length at end", MR_ALL, 0, R_LEN, 0, IW_MEM_REMOTE_WRITE, OK2},
	{"last octet", MR_ALL, 0, R_LEN - 1, 1, IW_MEM_REMOTE_WRITE, OK2},
	{"wrong key", MR_ALL, 1, 0, 8, IW_MEM_REMOTE_WRITE, BOTH(INV_STAG, INV_STAG)},
	{"wrong key -1", MR_ALL, -1, 0, 8, IW_MEM_REMOTE_READ, BOTH(INV_STAG, INV_STAG)},
	{"unused index", MR_ALL, 0x1000, 0, 8, IW_MEM_REMOTE_WRITE, BOTH(INV_STAG, INV_STAG)},
	{"other PD", MR_OTHER_PD, 0, 0, 8, IW_MEM_REMOTE_WRITE, BOTH(STAG_STREAM, STAG_STREAM)},
	{"other PD read", MR_OTHER_PD, 0, 0, 8, IW_MEM_REMOTE_READ, BOTH(STAG_STREAM, STAG_STREAM)},
	{"write, local only", MR_LOCAL, 0, 0, 8, IW_MEM_REMOTE_WRITE, BOTH(INV_STAG, ACCESS)},
	{"read, local only", MR_LOCAL, 0, 0, 8, IW_MEM_REMOTE_READ, BOTH(INV_STAG, ACCESS)},
	{"atomic, local only", MR_LOCAL, 0, 0, 8, IW_MEM_REMOTE_ATOMIC, BOTH(INV_STAG, ACCESS)},
	{"write, read only", MR_RREAD, 0, 0, 8, IW_MEM_REMOTE_WRITE, BOTH(INV_STAG, ACCESS)},
	{"atomic, read only", MR_RREAD, 0, 0, 8, IW_MEM_REMOTE_ATOMIC, BOTH(INV_STAG, ACCESS)},
	{"read, read only", MR_RREAD, 0, 0, 8, IW_MEM_REMOTE_READ, OK2},
	{"read, write only", MR_RWRITE, 0, 0, 8, IW_MEM_REMOTE_READ, BOTH(INV_STAG, ACCESS)},
	{"atomic, write only", MR_RWRITE, 0, 0, 8, IW_MEM_REMOTE_ATOMIC, BOTH(INV_STAG, ACCESS)},
	{"write, write only", MR_RWRITE, 0, 0, 8, IW_MEM_REMOTE_WRITE, OK2},
	{"write, atomic only", MR_RATOMIC, 0, 0, 8, IW_MEM_REMOTE_WRITE, BOTH(INV_STAG, ACCESS)},
	{"read, atomic only", MR_RATOMIC, 0, 0, 8, IW_MEM_REMOTE_READ, BOTH(INV_STAG, ACCESS)},
	{"atomic, atomic only", MR_RATOMIC, 0, 0, 8, IW_MEM_REMOTE_ATOMIC, OK2},
	{"zero length, no rights", MR_LOCAL, 0, 0, 0, IW_MEM_REMOTE_WRITE, BOTH(INV_STAG, ACCESS)},
	{"below base", MR_ALL, 0, -1, 8, IW_MEM_REMOTE_WRITE, BB},
	{"far below base", MR_ALL, 0, -4096, 1, IW_MEM_REMOTE_READ, BB},
	{"straddles base", MR_ALL, 0, -4, 8, IW_MEM_REMOTE_WRITE, BB},
	{"above end", MR_ALL, 0, R_LEN, 1, IW_MEM_REMOTE_WRITE, BB},
	{"far above", MR_ALL, 0, R_LEN + 4096, 8, IW_MEM_REMOTE_READ, BB},
	{"straddles end", MR_ALL, 0, R_LEN - 4, 8, IW_MEM_REMOTE_WRITE, BB},
	{"one too long", MR_ALL, 0, 0, R_LEN + 1, IW_MEM_REMOTE_WRITE, BB},
	{"huge length", MR_ALL, 0, 0, UINT64_MAX / 2, IW_MEM_REMOTE_READ, BB},
	{"zero length past end", MR_ALL, 0, R_LEN + 1, 0, IW_MEM_REMOTE_WRITE, BB},
	{"zero length below", MR_ALL, 0, -1, 0, IW_MEM_REMOTE_WRITE, BB},
	{"TO wrap", MR_ALL, 0, 0, UINT64_MAX, IW_MEM_REMOTE_WRITE, BOTH(TO_WRAP, TO_WRAP)},
	{"TO wrap read", MR_ALL, 0, 8, UINT64_MAX - 2, IW_MEM_REMOTE_READ, BOTH(TO_WRAP, TO_WRAP)},
};
#define NUM_REMOTE_CASES ((int)(sizeof(remote_cases) / sizeof(remote_cases[0])))

struct remote_fixture {
	struct iw_context ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *mr[MR_OTHER_PD + 1];
};

static uint8_t region[R_LEN];

static void remote_fixture_init(struct remote_fixture *f)
{
	static const int rights[] = {
		[MR_ALL] = ALL_RIGHTS,
		[MR_LOCAL] = IW_ACCESS_LOCAL_WRITE,
		[MR_RREAD] = IW_ACCESS_REMOTE_READ,
		[MR_RWRITE] = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE,
		[MR_RATOMIC] = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_ATOMIC,
		[MR_OTHER_PD] = ALL_RIGHTS,
	};

	ctx_init(&f->ctx);
	f->pd = pd_new(&f->ctx);
	f->pd2 = pd_new(&f->ctx);
	for (int i = 0; i <= MR_OTHER_PD; i++)
		f->mr[i] = reg(i == MR_OTHER_PD ? f->pd2 : f->pd, region, sizeof(region), rights[i]);
}

static void remote_fixture_cleanup(struct remote_fixture *f)
{
	for (int i = 0; i <= MR_OTHER_PD; i++) {
		ck_assert_int_eq(busy(f->mr[i]), 0);
		ck_assert_int_eq(iw_dereg_mr(f->mr[i]), 0);
	}
	ck_assert_int_eq(iw_dealloc_pd(f->pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(f->pd2), 0);
	ctx_cleanup(&f->ctx);
}

/* The STag a case aims at. Keys and slots are random, so plain arithmetic
 * could carry into the next slot or land on another registration: a small
 * delta changes the key octet alone (same slot, so surely a wrong key), a
 * larger one moves the index on until no registered MR uses that slot. */
static uint32_t case_stag(const struct remote_fixture *f, const struct iw_mr *mr, int64_t delta)
{
	uint32_t stag = mr->rkey;

	if (delta > -256 && delta < 256)
		return (stag & ~0xffu) | ((uint32_t)(stag + (uint32_t)delta) & 0xffu);
	for (bool used = true; used;) {
		stag += (uint32_t)delta;
		used = false;
		for (int i = 0; i <= MR_OTHER_PD; i++)
			used |= (f->mr[i]->rkey >> 8) == (stag >> 8);
	}
	return stag;
}

START_TEST(remote_check_terminate_codes)
{
	const struct remote_case *c = &remote_cases[_i];
	struct remote_fixture f;
	struct iw_mr *mr;
	uint32_t stag;
	uint64_t to;

	remote_fixture_init(&f);
	mr = f.mr[c->mr];
	stag = case_stag(&f, mr, c->stag_delta);
	to = (uint64_t)(uintptr_t)region + (uint64_t)c->to_off;
	ck_assert_msg(remote(&f.ctx, f.pd, stag, to, c->len, c->op, IW_MEM_BY_DDP) == c->ddp,
		      "%s: DDP", c->name);
	ck_assert_msg(remote(&f.ctx, f.pd, stag, to, c->len, c->op, IW_MEM_BY_RDMAP) == c->rdmap,
		      "%s: RDMAP", c->name);
	/* A failed check leaves no reference behind; remote() already put the
	 * successful ones. */
	for (int i = 0; i <= MR_OTHER_PD; i++)
		ck_assert_int_eq(busy(f.mr[i]), 0);
	remote_fixture_cleanup(&f);
}
END_TEST

/* The first failing check in mem.h's order wins. */
START_TEST(remote_check_order)
{
	struct remote_fixture f;
	uint64_t below = (uintptr_t)region - 1;

	remote_fixture_init(&f);
	/* PD beats rights and bounds: pd2's MR via pd with an impossible range. */
	ck_assert_uint_eq(remote(&f.ctx, f.pd2, f.mr[MR_LOCAL]->rkey, below, UINT64_MAX,
				 IW_MEM_REMOTE_WRITE, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_STAG_STREAM);
	/* Rights beat wrap and bounds. */
	ck_assert_uint_eq(remote(&f.ctx, f.pd, f.mr[MR_LOCAL]->rkey, below, UINT64_MAX,
				 IW_MEM_REMOTE_WRITE, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_ACCESS);
	/* Wrap beats bounds (the range is also below the base). */
	ck_assert_uint_eq(remote(&f.ctx, f.pd, f.mr[MR_ALL]->rkey, below, UINT64_MAX,
				 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_TO_WRAP);
	/* A stale key beats everything, even from another PD. */
	ck_assert_uint_eq(remote(&f.ctx, f.pd2, f.mr[MR_LOCAL]->rkey ^ 0x80, below, UINT64_MAX,
				 IW_MEM_REMOTE_WRITE, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_INV_STAG);
	remote_fixture_cleanup(&f);
}
END_TEST

/* Wrap is judged on the last octet: a range ending at 2^64 does not wrap
 * (and is then a bounds question); one more octet does. Needs an MR whose
 * iova sits at the top of the TO space: a fast-reg MR. */
START_TEST(remote_wrap_edge)
{
	static uint8_t buf[16];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	uint64_t iova = UINT64_MAX - 15;
	uint32_t stag;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = iw_alloc_mr(pd, 1);
	ck_assert_ptr_nonnull(mr);
	stag = iw_inc_rkey(mr->rkey);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, iw_mr_int(mr), stag, ALL_RIGHTS, iova,
					sizeof(buf), buf),
			 0);
	ck_assert_uint_eq(remote(&ctx, pd, stag, iova, 16, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP), 0);
	ck_assert_uint_eq(remote(&ctx, pd, stag, UINT64_MAX, 1, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  0);
	ck_assert_uint_eq(remote(&ctx, pd, stag, UINT64_MAX, 0, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  0);
	ck_assert_uint_eq(remote(&ctx, pd, stag, UINT64_MAX, 2, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_TO_WRAP);
	ck_assert_uint_eq(remote(&ctx, pd, stag, iova, 17, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_TO_WRAP);
	ck_assert_uint_eq(remote(&ctx, pd, stag, iova - 1, 17, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_BASE_BOUNDS);
	ck_assert_int_eq(local(&ctx, pd, stag, UINT64_MAX, 2, IW_MEM_LOCAL_READ), -EFAULT);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ---------------------------------------------------------- local checks */

START_TEST(local_checks)
{
	struct remote_fixture f;
	uint64_t base = (uintptr_t)region;
	struct iw_mr **m;

	remote_fixture_init(&f);
	m = f.mr;
	/* LOCAL_READ: any valid MR in the PD, even with no rights at all. */
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_RREAD]->lkey, base, R_LEN, IW_MEM_LOCAL_READ), 0);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_LOCAL]->lkey, base + 5, 7, IW_MEM_LOCAL_READ), 0);
	/* LOCAL_WRITE needs LOCAL_WRITE. */
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_LOCAL]->lkey, base, 8, IW_MEM_LOCAL_WRITE), 0);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_RREAD]->lkey, base, 8, IW_MEM_LOCAL_WRITE),
			 -EACCES);
	/* READ_SINK needs REMOTE_WRITE: LOCAL_WRITE alone is not enough. */
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_LOCAL]->lkey, base, 8, IW_MEM_READ_SINK), -EACCES);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_RREAD]->lkey, base, 8, IW_MEM_READ_SINK), -EACCES);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_RWRITE]->lkey, base, 8, IW_MEM_READ_SINK), 0);
	/* Unknown, stale and foreign lkeys. */
	ck_assert_int_eq(local(&f.ctx, f.pd, case_stag(&f, m[MR_ALL], 1), base, 8, IW_MEM_LOCAL_READ),
			 -EINVAL);
	ck_assert_int_eq(local(&f.ctx, f.pd, 0, base, 8, IW_MEM_LOCAL_READ), -EINVAL);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_OTHER_PD]->lkey, base, 8, IW_MEM_LOCAL_READ),
			 -EINVAL);
	ck_assert_int_eq(local(&f.ctx, f.pd2, m[MR_OTHER_PD]->lkey, base, 8, IW_MEM_LOCAL_WRITE), 0);
	/* Bounds. */
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_ALL]->lkey, base - 1, 8, IW_MEM_LOCAL_READ),
			 -EFAULT);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_ALL]->lkey, base + R_LEN - 7, 8,
			       IW_MEM_LOCAL_WRITE),
			 -EFAULT);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_ALL]->lkey, base + R_LEN, 1, IW_MEM_LOCAL_READ),
			 -EFAULT);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_ALL]->lkey, base, R_LEN + 1, IW_MEM_LOCAL_READ),
			 -EFAULT);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_ALL]->lkey, UINT64_MAX - 3, 8, IW_MEM_LOCAL_READ),
			 -EFAULT);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_ALL]->lkey, base + R_LEN - 8, 8,
			       IW_MEM_LOCAL_WRITE),
			 0);
	/* Rights are checked before bounds, the key before the PD. */
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_RREAD]->lkey, base - 1, 8, IW_MEM_LOCAL_WRITE),
			 -EACCES);
	ck_assert_int_eq(local(&f.ctx, f.pd2, m[MR_ALL]->lkey, base - 1, 8, IW_MEM_LOCAL_WRITE),
			 -EINVAL);
	/* A zero-length SGE is valid whatever its lkey, and takes no ref. */
	ck_assert_int_eq(local(&f.ctx, f.pd, 0, 0, 0, IW_MEM_LOCAL_WRITE), 0);
	ck_assert_int_eq(local(&f.ctx, f.pd, 0xDEADBEEF, 12345, 0, IW_MEM_READ_SINK), 0);
	ck_assert_int_eq(local(&f.ctx, f.pd, m[MR_RREAD]->lkey, base, 0, IW_MEM_LOCAL_WRITE), 0);
	remote_fixture_cleanup(&f);
}
END_TEST

/* ------------------------------------------------- references, lifetime */

START_TEST(dereg_busy_until_put)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	struct iw_mr_int *r1, *r2;
	struct iw_sge sge;
	uint8_t *p;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = reg(pd, buf, sizeof(buf), ALL_RIGHTS);
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), mr->rkey, (uintptr_t)buf + 4, 8,
					      IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &r1, &p),
			  0);
	ck_assert_ptr_eq(r1, iw_mr_int(mr));
	ck_assert_ptr_eq(p, buf + 4);
	sge = (struct iw_sge){.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	ck_assert_int_eq(iw_mem_check_local(&ctx.mem, pd, &sge, IW_MEM_LOCAL_READ, &r2, NULL), 0);
	ck_assert_ptr_eq(r2, iw_mr_int(mr));
	ck_assert_int_eq(busy(mr), 2);
	ck_assert_int_eq(iw_dereg_mr(mr), EBUSY);
	/* Refused deregistration changes nothing: still valid and counted. */
	ck_assert_uint_eq(remote(&ctx, pd, mr->rkey, (uintptr_t)buf, 64, IW_MEM_REMOTE_READ,
				 IW_MEM_BY_RDMAP),
			  0);
	ck_assert_int_eq(atomic_load(&pd->use), 1);
	iw_mem_put_placed(r1);
	ck_assert_int_eq(iw_dereg_mr(mr), EBUSY);
	iw_mem_put(r2);
	iw_mem_put(NULL);
	ck_assert_int_eq(busy(mr), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(atomic_load(&pd->use), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

START_TEST(dealloc_pd_busy_while_mrs)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *a, *f;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	pd2 = pd_new(&ctx);
	ck_assert_ptr_eq(pd->context, &ctx);
	ck_assert_uint_ne(pd->handle, 0);
	ck_assert_uint_ne(pd->handle, pd2->handle);
	a = reg(pd, buf, sizeof(buf), 0);
	f = iw_alloc_mr(pd, 8);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(atomic_load(&pd->use), 2);
	ck_assert_int_eq(iw_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(iw_dereg_mr(a), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(iw_dereg_mr(f), 0);
	ck_assert_int_eq(atomic_load(&pd->use), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ck_assert_int_eq(iw_dealloc_pd(NULL), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ------------------------------------------------ fast registration, inv */

START_TEST(fastreg_lifecycle)
{
	static uint8_t buf[4096];
	static uint8_t buf2[128];
	int rights = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_context ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *mr, *plain;
	struct iw_mr_int *mi;
	uint32_t s0, s1, s2;
	uint64_t iova = 0x100000;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	pd2 = pd_new(&ctx);
	plain = reg(pd, buf2, sizeof(buf2), rights);
	mr = iw_alloc_mr(pd, 16);
	ck_assert_ptr_nonnull(mr);
	mi = iw_mr_int(mr);
	s0 = mr->rkey;
	ck_assert_uint_eq(mr->lkey, s0);
	ck_assert_uint_ge(iw_stag_index(s0), 1);
	ck_assert_uint_ne(iw_stag_index(s0), iw_stag_index(plain->rkey));
	ck_assert_uint_eq(mr->handle, iw_stag_index(s0));
	ck_assert_int_eq(iw_mem_is_valid(mi), false);
	ck_assert(mi->fastreg);
	ck_assert_uint_eq(mi->max_num_sg, 16);
	ck_assert_int_eq(atomic_load(&pd->use), 2);

	/* Invalid until registered. */
	ck_assert_uint_eq(remote(&ctx, pd, s0, 0, 0, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_int_eq(local(&ctx, pd, s0, 0, 1, IW_MEM_LOCAL_READ), -EINVAL);

	/* Refused REG_MRs change nothing. */
	s1 = iw_inc_rkey(s0);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd2, mi, s1, rights, iova, sizeof(buf), buf),
			 -EACCES);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1 + 0x100, rights, iova, sizeof(buf),
					buf),
			 -EINVAL);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1, IW_ACCESS_REMOTE_WRITE, iova,
					sizeof(buf), buf),
			 -EINVAL);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1, 1 << 9, iova, sizeof(buf), buf),
			 -EINVAL);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1, rights, iova, 0, buf), -EINVAL);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1, rights, iova, sizeof(buf), NULL),
			 -EINVAL);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1, rights, UINT64_MAX - 10, sizeof(buf),
					buf),
			 -EINVAL);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, iw_mr_int(plain), plain->rkey + 1, rights,
					iova, 8, buf),
			 -EINVAL);
	ck_assert_uint_eq(mr->rkey, s0);
	ck_assert_int_eq(iw_mem_is_valid(mi), false);

	/* Register with the WR's key: the STag takes it. */
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s1, rights, iova, sizeof(buf), buf), 0);
	ck_assert_uint_eq(mr->rkey, s1);
	ck_assert_uint_eq(mr->lkey, s1);
	ck_assert_uint_eq(iw_stag_index(s1), iw_stag_index(s0));
	ck_assert_uint_ne(iw_stag_key(s1), iw_stag_key(s0));
	ck_assert_ptr_eq(mr->addr, buf);
	ck_assert_uint_eq(mr->length, sizeof(buf));
	ck_assert_int_eq(iw_mem_is_valid(mi), true);
	ck_assert_uint_eq(remote(&ctx, pd, s0, iova, 8, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(remote(&ctx, pd, s1, iova + 100, 8, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  0);
	ck_assert_uint_eq(remote(&ctx, pd, s1, iova, sizeof(buf), IW_MEM_REMOTE_READ,
				 IW_MEM_BY_RDMAP),
			  0);
	ck_assert_uint_eq(remote(&ctx, pd, s1, iova - 1, 8, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_BASE_BOUNDS);
	ck_assert_uint_eq(remote(&ctx, pd, s1, iova, 8, IW_MEM_REMOTE_ATOMIC, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_ACCESS);
	ck_assert_int_eq(local(&ctx, pd, s1, iova + 4000, 96, IW_MEM_LOCAL_WRITE), 0);
	ck_assert_int_eq(local(&ctx, pd, s1, (uintptr_t)buf, 8, IW_MEM_LOCAL_READ), -EFAULT);
	/* No REG_MR over a valid registration. */
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, iw_inc_rkey(s1), rights, iova,
					sizeof(buf), buf),
			 -EINVAL);

	/* Remote invalidation: refused for a stale key, another PD. */
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s0, true), IW_TERM_RDMAP_OP_NOINV);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd2), s1, true), IW_TERM_RDMAP_PROT_NOINV);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), 0, true), IW_TERM_RDMAP_OP_NOINV);
	ck_assert_int_eq(iw_mem_is_valid(mi), true);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s1, true), 0);
	ck_assert_int_eq(iw_mem_is_valid(mi), false);
	ck_assert_uint_eq(mr->rkey, s1); /* the STag stays, invalid */
	ck_assert_uint_eq(remote(&ctx, pd, s1, iova, 8, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(remote(&ctx, pd, s1, iova, 8, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_INV_STAG);
	ck_assert_int_eq(local(&ctx, pd, s1, iova, 8, IW_MEM_LOCAL_READ), -EINVAL);

	/* Local invalidation: errors, then an already-invalid STag is fine. */
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s0, false), -EINVAL);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd2), s1, false), -EINVAL);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), 0, false), -EINVAL);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s1, false), 0);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s1, true), 0);

	/* Re-register with the next key, smaller and elsewhere; invalidate
	 * locally. */
	s2 = iw_inc_rkey(s1);
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, mi, s2, IW_ACCESS_LOCAL_WRITE, 0, 64, buf2),
			 0);
	ck_assert_uint_eq(mr->rkey, s2);
	ck_assert_int_eq(local(&ctx, pd, s2, 0, 64, IW_MEM_LOCAL_WRITE), 0);
	ck_assert_int_eq(local(&ctx, pd, s1, 0, 64, IW_MEM_LOCAL_WRITE), -EINVAL);
	ck_assert_uint_eq(remote(&ctx, pd, s2, 0, 8, IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP),
			  IW_TERM_RDMAP_ACCESS);
	/* No remote right: a peer cannot invalidate it, the owner can. */
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s2, true), IW_TERM_RDMAP_PROT_NOINV);
	ck_assert_int_eq(iw_mem_is_valid(mi), true);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s2, false), 0);
	ck_assert_int_eq(local(&ctx, pd, s2, 0, 64, IW_MEM_LOCAL_WRITE), -EINVAL);

	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	/* After deregistration the STag is unknown. */
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s2, true), IW_TERM_RDMAP_OP_NOINV);
	ck_assert_int_eq(iw_dereg_mr(plain), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* A slot reused after a fast-reg MR must not hand out the key the last
 * REG_MR used. Slots are picked at random among 63: 10,000 tries miss
 * that slot with probability (62/63)^10000 < 1e-69. */
START_TEST(fastreg_key_carries_to_reuse)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	uint32_t s;
	int tries = 0;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = iw_alloc_mr(pd, 1);
	ck_assert_ptr_nonnull(mr);
	s = (mr->rkey & ~0xFFu) | 0x77;
	ck_assert_int_eq(iw_mem_fastreg(&ctx.mem, pd, iw_mr_int(mr), s, 0, 0, 64, buf), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	do {
		if (tries++)
			ck_assert_int_eq(iw_dereg_mr(mr), 0);
		mr = reg(pd, buf, sizeof(buf), IW_ACCESS_REMOTE_READ);
	} while (iw_stag_index(mr->rkey) != iw_stag_index(s) && tries < 10000);
	ck_assert_uint_eq(iw_stag_index(mr->rkey), iw_stag_index(s));
	ck_assert_uint_ne(iw_stag_key(mr->rkey), 0x77);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* iw_reg_mr registrations live until iw_dereg_mr: no invalidation. */
START_TEST(invalidate_plain_mr_refused)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = reg(pd, buf, sizeof(buf), ALL_RIGHTS);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), mr->rkey, true), IW_TERM_RDMAP_PROT_NOINV);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), mr->rkey, false), -EINVAL);
	ck_assert_int_eq(iw_mem_is_valid(iw_mr_int(mr)), true);
	ck_assert_uint_eq(remote(&ctx, pd, mr->rkey, (uintptr_t)buf, 64, IW_MEM_REMOTE_WRITE,
				 IW_MEM_BY_DDP),
			  0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* A fast-reg MR registered with every right over len octets of buf at
 * iova; its STag in *stag. */
static struct iw_mr *fastreg_new(struct iw_context *ctx, struct iw_pd *pd, uint64_t iova,
				 uint8_t *buf, uint64_t len, uint32_t *stag)
{
	struct iw_mr *mr = iw_alloc_mr(pd, 1);

	ck_assert_ptr_nonnull(mr);
	*stag = iw_inc_rkey(mr->rkey);
	ck_assert_int_eq(iw_mem_fastreg(&ctx->mem, pd, iw_mr_int(mr), *stag, ALL_RIGHTS, iova,
					len, buf),
			 0);
	return mr;
}

/* Invalidation while a placement holds a reference: new accesses fail at
 * once, the holder keeps its pointer, deregistration waits for the put. */
START_TEST(invalidate_while_busy)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	struct iw_mr_int *held;
	uint8_t *p;
	uint32_t s;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = fastreg_new(&ctx, pd, 0x5000, buf, sizeof(buf), &s);
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), s, 0x5010, 16, IW_MEM_REMOTE_WRITE,
					      IW_MEM_BY_DDP, &held, &p),
			  0);
	ck_assert_ptr_eq(p, buf + 0x10);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s, true), 0);
	ck_assert_uint_eq(remote(&ctx, pd, s, 0x5010, 16, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	memset(p, 0xAB, 16); /* the in-flight placement finishes */
	ck_assert_uint_eq(buf[0x10], 0xAB);
	ck_assert_int_eq(iw_dereg_mr(mr), EBUSY);
	iw_mem_put_placed(held);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* --------------------------------------------------------- table growth */

#define MANY 5000

START_TEST(many_registrations)
{
	static uint8_t buf[MANY];
	static struct iw_mr *mr[MANY];
	static uint32_t stag[MANY];
	struct iw_context ctx;
	struct iw_pd *pd;
	uint32_t slots;
	uint8_t *seen;
	int *oldkey;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	for (int i = 0; i < MANY; i++) {
		mr[i] = reg(pd, buf + i, 1, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
		stag[i] = mr[i]->rkey;
	}
	ck_assert_int_eq(atomic_load(&pd->use), MANY);
	slots = ctx.mem.num_slots;
	ck_assert_uint_gt(slots, MANY);
	/* Distinct indices, each finding its own octet. */
	seen = calloc(slots, 1);
	ck_assert_ptr_nonnull(seen);
	for (int i = 0; i < MANY; i++) {
		uint32_t idx = iw_stag_index(stag[i]);

		ck_assert_uint_lt(idx, slots);
		ck_assert_int_eq(seen[idx], 0);
		seen[idx] = 1;
	}
	free(seen);
	for (int i = 0; i < MANY; i++) {
		struct iw_mr_int *m;
		uint8_t *p;

		ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), stag[i], (uintptr_t)(buf + i), 1,
						      IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &p),
				  0);
		ck_assert_ptr_eq(p, buf + i);
		iw_mem_put_placed(m);
		ck_assert_uint_eq(remote(&ctx, pd, stag[i], (uintptr_t)(buf + i) + 1, 1,
					 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
				  IW_TERM_DDP_T_BASE_BOUNDS);
	}
	/* Free every other one, then all; re-register: no growth, new STags. */
	for (int i = 0; i < MANY; i += 2)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);
	for (int i = 1; i < MANY; i += 2)
		ck_assert_uint_eq(remote(&ctx, pd, stag[i], (uintptr_t)(buf + i), 1,
					 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
				  0);
	for (int i = 1; i < MANY; i += 2)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);
	ck_assert_int_eq(atomic_load(&pd->use), 0);
	for (int i = 0; i < MANY; i++)
		mr[i] = reg(pd, buf + i, 1, IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	ck_assert_uint_eq(ctx.mem.num_slots, slots);
	/* Every index that was taken before got a key other than its old
	 * one, so every old STag is dead. */
	oldkey = calloc(slots, sizeof(*oldkey));
	ck_assert_ptr_nonnull(oldkey);
	for (int i = 0; i < MANY; i++)
		oldkey[iw_stag_index(stag[i])] = 0x100 | iw_stag_key(stag[i]);
	for (int i = 0; i < MANY; i++) {
		int k = oldkey[iw_stag_index(mr[i]->rkey)];

		if (k)
			ck_assert_uint_ne(iw_stag_key(mr[i]->rkey), (uint8_t)k);
	}
	free(oldkey);
	for (int i = 0; i < MANY; i++)
		ck_assert_uint_eq(remote(&ctx, pd, stag[i], (uintptr_t)(buf + i), 1,
					 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
				  IW_TERM_DDP_T_INV_STAG);
	for (int i = 0; i < MANY; i++)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* MRs left registered when the context goes are freed with the table
 * (ASan and valgrind runs check that nothing leaks). */
START_TEST(cleanup_frees_leftovers)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	for (int i = 0; i < 100; i++)
		reg(pd, buf, sizeof(buf), 0);
	ck_assert_ptr_nonnull(iw_alloc_mr(pd, 2));
	ck_assert_int_eq(atomic_load(&pd->use), 101);
	ctx_cleanup(&ctx);
	ck_assert_uint_eq(ctx.mem.num_slots, 0);
	ck_assert_ptr_null(atomic_load(&ctx.mem.chunk[0]));
	free(pd); /* its MRs went with the table */
}
END_TEST

/* ---------------------------------------------------------------- threads */

#define CHURN_THREADS 2
#define CHURN_ROUNDS 3000

struct thread_env {
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *stable;
	uint8_t stable_buf[64];
	uint8_t churn_buf[CHURN_THREADS][32];
	_Atomic uint32_t live[CHURN_THREADS]; /* STag a churner has now, or 0 */
	atomic_bool stop;
	atomic_long hits, busy_retries;
};

struct churn_arg {
	struct thread_env *env;
	int id;
};

static void *churn(void *p)
{
	struct churn_arg *a = p;
	struct thread_env *env = a->env;
	uint8_t *buf = env->churn_buf[a->id];

	for (int r = 0; r < CHURN_ROUNDS; r++) {
		struct iw_mr *mr = iw_reg_mr(env->pd, buf, 32,
					     IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
		struct iw_mr_int *held;
		uint8_t *ptr;
		int ret;

		if (!mr)
			return "reg failed";
		atomic_store(&env->live[a->id], mr->rkey);
		/* Our own MR is ours alone: its check must pass. */
		if (iw_mem_check_remote(&env->ctx.mem, REQ(env->pd), mr->rkey, (uintptr_t)buf, 32,
					IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &held, &ptr) ||
		    held != iw_mr_int(mr) || ptr != buf)
			return "own check failed";
		iw_mem_put_placed(held);
		atomic_store(&env->live[a->id], 0);
		/* The checker may hold a reference for a moment. */
		while ((ret = iw_dereg_mr(mr)) == EBUSY)
			atomic_fetch_add(&env->busy_retries, 1);
		if (ret)
			return "dereg failed";
	}
	return NULL;
}

static void *checker(void *p)
{
	struct thread_env *env = p;
	unsigned n = 0;

	while (!atomic_load(&env->stop)) {
		struct iw_mr_int *m;
		uint8_t *ptr;
		unsigned id = n++ % CHURN_THREADS;
		uint32_t s = atomic_load(&env->live[id]);
		uint8_t *cbuf = env->churn_buf[id];
		uint16_t term;

		if (iw_mem_check_remote(&env->ctx.mem, REQ(env->pd), env->stable->rkey,
					(uintptr_t)env->stable_buf, 64, IW_MEM_REMOTE_READ,
					IW_MEM_BY_RDMAP, &m, &ptr) ||
		    ptr != env->stable_buf)
			return "stable check failed";
		iw_mem_put(m);
		if (!s)
			continue;
		/* A churner's STag is valid or already gone; if valid, the MR
		 * found is exactly that registration. */
		term = iw_mem_check_remote(&env->ctx.mem, REQ(env->pd), s, (uintptr_t)cbuf, 32,
					   IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &ptr);
		if (term == 0) {
			bool same = m->pub.rkey == s && m->len == 32 && ptr == cbuf;

			iw_mem_put_placed(m);
			if (!same)
				return "wrong MR";
			atomic_fetch_add(&env->hits, 1);
		} else if (term != IW_TERM_DDP_T_INV_STAG) {
			return "unexpected TERMINATE";
		}
	}
	return NULL;
}

START_TEST(threads_register_and_check)
{
	struct thread_env *env = calloc(1, sizeof(*env));
	struct churn_arg args[CHURN_THREADS];
	pthread_t ct[CHURN_THREADS], chk;
	void *res;

	ck_assert_ptr_nonnull(env);
	ctx_init(&env->ctx);
	env->pd = pd_new(&env->ctx);
	env->stable = reg(env->pd, env->stable_buf, sizeof(env->stable_buf), IW_ACCESS_REMOTE_READ);
	ck_assert_int_eq(pthread_create(&chk, NULL, checker, env), 0);
	for (int i = 0; i < CHURN_THREADS; i++) {
		args[i] = (struct churn_arg){env, i};
		ck_assert_int_eq(pthread_create(&ct[i], NULL, churn, &args[i]), 0);
	}
	for (int i = 0; i < CHURN_THREADS; i++) {
		ck_assert_int_eq(pthread_join(ct[i], &res), 0);
		ck_assert_msg(res == NULL, "churn %d: %s", i, (const char *)res);
	}
	atomic_store(&env->stop, true);
	ck_assert_int_eq(pthread_join(chk, &res), 0);
	ck_assert_msg(res == NULL, "checker: %s", (const char *)res);
	/* Consistent afterwards: only the stable MR is left, unreferenced. */
	ck_assert_int_eq(atomic_load(&env->pd->use), 1);
	ck_assert_int_eq(busy(env->stable), 0);
	ck_assert_uint_eq(env->ctx.mem.num_free + 2, env->ctx.mem.num_slots);
	ck_assert_int_eq(iw_dereg_mr(env->stable), 0);
	ck_assert_int_eq(iw_dealloc_pd(env->pd), 0);
	ctx_cleanup(&env->ctx);
	free(env);
}
END_TEST

/* A remote write check starts a placement: a local invalidation made
 * meanwhile makes the STag invalid at once but reports IW_MEM_INV_WAIT
 * until the placement ends; deregistration is refused until the put; a
 * read source is no placement. */
START_TEST(invalidate_waits_for_placement)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	struct iw_mr_int *held, *rd;
	uint8_t *p;
	uint32_t s;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = fastreg_new(&ctx, pd, 0, buf, sizeof(buf), &s);
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), s, 0, 8, IW_MEM_REMOTE_READ,
					      IW_MEM_BY_RDMAP, &rd, &p),
			  0);
	ck_assert(iw_mem_placements_done(&ctx.mem, s));
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), s, 0, 8, IW_MEM_REMOTE_WRITE,
					      IW_MEM_BY_DDP, &held, &p),
			  0);
	ck_assert(!iw_mem_placements_done(&ctx.mem, s));
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s, false), IW_MEM_INV_WAIT);
	ck_assert_uint_eq(remote(&ctx, pd, s, 0, 8, IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert(!iw_mem_placements_done(&ctx.mem, s));
	ck_assert_int_eq(iw_dereg_mr(mr), EBUSY);
	iw_mem_placed(held);
	ck_assert(iw_mem_placements_done(&ctx.mem, s));
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, REQ(pd), s, false), 0);
	iw_mem_put(held);
	iw_mem_put(rd);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ------------------------------------------------------ memory windows */

static int bind(struct iw_context *ctx, uint32_t qpn, struct iw_pd *pd, struct iw_mw *mw,
		uint32_t key, struct iw_mr *mr, int access, uint8_t *addr, uint64_t len)
{
	struct iw_mem_req req = {.pd = pd, .qp_num = qpn};

	return iw_mem_bind_mw(&ctx->mem, &req, (struct iw_mw_int *)mw, key, iw_mr_int(mr), access,
			      (uintptr_t)addr, len);
}

static uint16_t win_access(struct iw_context *ctx, uint32_t qpn, struct iw_pd *pd, uint32_t stag,
			   uint8_t *to, uint64_t len, enum iw_mem_op op, uint8_t *want)
{
	struct iw_mem_req req = {.pd = pd, .qp_num = qpn};
	struct iw_mr_int *m;
	uint8_t *p;
	enum iw_mem_layer layer = op == IW_MEM_REMOTE_READ ? IW_MEM_BY_RDMAP : IW_MEM_BY_DDP;
	uint16_t t = iw_mem_check_remote(&ctx->mem, &req, stag, (uintptr_t)to, len, op, layer, &m,
					 &p);

	if (t == 0) {
		ck_assert_ptr_eq(p, want);
		if (op != IW_MEM_REMOTE_READ)
			iw_mem_placed(m);
		iw_mem_put(m);
	}
	return t;
}

/* A type 2 window: bound to part of an MR for one QP, usable only there,
 * within its range and rights, as a remote STag only; unbound by the
 * bound QP's peer (Send with Invalidate) or LOCAL_INV, then refused; the
 * MR stays registered while a window is bound to it. */
START_TEST(mw_bind_use_invalidate)
{
	static uint8_t buf[256];
	const int rw = IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_context ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *mr, *plain;
	struct iw_mw *mw;
	uint32_t k;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	pd2 = pd_new(&ctx);
	mr = reg(pd, buf, sizeof(buf), ALL_RIGHTS | IW_ACCESS_MW_BIND);
	plain = reg(pd, buf, sizeof(buf), ALL_RIGHTS);
	errno = 0;
	ck_assert_ptr_null(iw_alloc_mw(pd, (enum iw_mw_type)3));
	ck_assert_int_eq(errno, EINVAL);
	mw = iw_alloc_mw(pd, IW_MW_TYPE_2);
	ck_assert_ptr_nonnull(mw);
	ck_assert_uint_ge(mw->rkey, 0x100);
	/* Unbound: no access. */
	ck_assert_uint_eq(win_access(&ctx, 5, pd, mw->rkey, buf, 1, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_INV_STAG);
	/* Bind refusals. */
	k = iw_inc_rkey(mw->rkey);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, plain, rw, buf + 64, 64), -EACCES);
	ck_assert_int_eq(bind(&ctx, 5, pd2, mw, k, mr, rw, buf + 64, 64), -EACCES);
	{
		/* The window's remote rights need not be the MR's, but one the
		 * peer may write through needs an MR its owner may write. */
		struct iw_mr *ro = reg(pd, buf, sizeof(buf), IW_ACCESS_MW_BIND);
		ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, ro, IW_ACCESS_REMOTE_WRITE, buf, 8),
				 -EACCES);
		ck_assert_int_eq(iw_dereg_mr(ro), 0);
	}
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, rw, buf + 200, 64), -EFAULT);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, rw, buf, 0), -EINVAL);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, IW_ACCESS_LOCAL_WRITE, buf, 8), -EINVAL);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k + 0x100, mr, rw, buf, 8), -EINVAL);
	/* Bound to [64, 128) for QP 5. */
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, rw, buf + 64, 64), 0);
	ck_assert_uint_eq(mw->rkey, k);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, iw_inc_rkey(k), mr, rw, buf + 64, 8), -EINVAL);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 64, 64, IW_MEM_REMOTE_WRITE, buf + 64),
			  0);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 100, 8, IW_MEM_REMOTE_READ, buf + 100),
			  0);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 60, 8, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_BASE_BOUNDS);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 124, 8, IW_MEM_REMOTE_READ, NULL),
			  IW_TERM_RDMAP_BASE_BOUNDS);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 64, 8, IW_MEM_REMOTE_ATOMIC, NULL),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(win_access(&ctx, 6, pd, k, buf + 64, 8, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_STAG_STREAM);
	ck_assert_int_eq(local(&ctx, pd, k, (uintptr_t)buf + 64, 8, IW_MEM_LOCAL_READ), -EINVAL);
	ck_assert_int_eq(iw_dereg_mr(mr), EBUSY);
	/* Remote invalidation: only the bound stream's peer. */
	struct iw_mem_req q5 = {.pd = pd, .qp_num = 5}, q6 = {.pd = pd, .qp_num = 6};
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, &q6, k, true), IW_TERM_RDMAP_PROT_NOINV);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, &q5, k, true), 0);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 64, 8, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_INV_STAG);
	/* Bound again (a new key), then LOCAL_INV. */
	k = iw_inc_rkey(k);
	ck_assert_int_eq(bind(&ctx, 7, pd, mw, k, mr, IW_ACCESS_REMOTE_READ, buf, 16), 0);
	ck_assert_uint_eq(win_access(&ctx, 7, pd, k, buf, 16, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_INV_STAG); /* read-only window */
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, &(struct iw_mem_req){.pd = pd, .qp_num = 7},
					   k, false),
			 0);
	ck_assert_uint_eq(win_access(&ctx, 7, pd, k, buf, 16, IW_MEM_REMOTE_READ, NULL),
			  IW_TERM_RDMAP_INV_STAG);
	/* Bound when freed: the MR is released. */
	k = iw_inc_rkey(k);
	ck_assert_int_eq(bind(&ctx, 7, pd, mw, k, mr, rw, buf, 16), 0);
	ck_assert_int_eq(iw_dealloc_mw(mw), 0);
	ck_assert_int_eq(iw_dealloc_mw(NULL), 0);
	ck_assert_uint_eq(iw_mem_refs(iw_mr_int(mr)), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dereg_mr(plain), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* A type 1 window: usable through every stream of its PD (not another
 * PD's), rebound and unbound by its owner only, never invalidated; its
 * next key is random, never the current one, on the same index. */
START_TEST(mw_type1_pd_wide)
{
	static uint8_t buf[256];
	const int rw = IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_context ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *mr;
	struct iw_mw *mw;
	uint32_t k, k2;
	unsigned seen[256] = {0}, distinct = 0;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	pd2 = pd_new(&ctx);
	mr = reg(pd, buf, sizeof(buf), ALL_RIGHTS | IW_ACCESS_MW_BIND);
	mw = iw_alloc_mw(pd, IW_MW_TYPE_1);
	ck_assert_ptr_nonnull(mw);
	for (int i = 0; i < 200; i++) {
		k = iw_mem_mw_next_key(&ctx.mem, (struct iw_mw_int *)mw);
		ck_assert_uint_eq(iw_stag_index(k), iw_stag_index(mw->rkey));
		ck_assert_uint_ne(k, mw->rkey);
		distinct += !seen[iw_stag_key(k)]++;
	}
	ck_assert_uint_gt(distinct, 64); /* not a counter: 200 draws over 255 keys */
	k = iw_mem_mw_next_key(&ctx.mem, (struct iw_mw_int *)mw);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, rw, buf + 64, 64), 0);
	ck_assert_uint_ne(mw->rkey, k); /* iw_bind_mw writes it, not the bind */
	for (uint32_t qpn = 5; qpn <= 7; qpn++)
		ck_assert_uint_eq(win_access(&ctx, qpn, pd, k, buf + 64, 8, IW_MEM_REMOTE_WRITE,
					     buf + 64),
				  0);
	ck_assert_uint_eq(win_access(&ctx, 5, pd2, k, buf + 64, 8, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_STAG_STREAM);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 128, 1, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_BASE_BOUNDS);
	/* Never invalidated, remotely or locally. */
	struct iw_mem_req q6 = {.pd = pd, .qp_num = 6};
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, &q6, k, true), IW_TERM_RDMAP_PROT_NOINV);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, &q6, k, false), -EINVAL);
	ck_assert(iw_mem_is_valid(&((struct iw_mw_int *)mw)->win));
	/* Rebound while bound: the old STag goes. */
	mw->rkey = k;
	k2 = iw_mem_mw_next_key(&ctx.mem, (struct iw_mw_int *)mw);
	ck_assert_int_eq(bind(&ctx, 9, pd, mw, k2, mr, IW_ACCESS_REMOTE_READ, buf, 16), 0);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf + 64, 8, IW_MEM_REMOTE_WRITE, NULL),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k2, buf, 16, IW_MEM_REMOTE_READ, buf), 0);
	ck_assert_uint_eq(iw_mem_refs(iw_mr_int(mr)), 1); /* one binding, one reference */
	/* Unbound (length 0, no MR). */
	mw->rkey = k2;
	k = iw_mem_mw_next_key(&ctx.mem, (struct iw_mw_int *)mw);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, NULL, 0, NULL, 0), 0);
	ck_assert_uint_eq(iw_mem_refs(iw_mr_int(mr)), 0);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k2, buf, 16, IW_MEM_REMOTE_READ, NULL),
			  IW_TERM_RDMAP_INV_STAG);
	ck_assert_uint_eq(win_access(&ctx, 5, pd, k, buf, 16, IW_MEM_REMOTE_READ, NULL),
			  IW_TERM_RDMAP_INV_STAG);
	/* Refusals: no MR for a length, local rights, MW_BIND missing. */
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, NULL, rw, buf, 16), -EINVAL);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, IW_ACCESS_LOCAL_WRITE, buf, 16), -EINVAL);
	struct iw_mr *plain = reg(pd, buf, sizeof(buf), ALL_RIGHTS);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, plain, rw, buf, 16), -EACCES);
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, rw, buf + 250, 16), -EFAULT);
	/* Freed while bound: the MR is released. */
	ck_assert_int_eq(bind(&ctx, 5, pd, mw, k, mr, rw, buf, 16), 0);
	ck_assert_int_eq(iw_dealloc_mw(mw), 0);
	ck_assert_uint_eq(iw_mem_refs(iw_mr_int(mr)), 0);
	ck_assert_int_eq(iw_dereg_mr(plain), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ------------------------------------------------ unpredictable STags */

/*
 * Pearson's chi-square of counts against a uniform spread over n bins.
 * The thresholds below are far in the tail: for a uniform source they are
 * exceeded with probability 4.4e-18 (255 degrees of freedom, 500),
 * 5.4e-12 (62, 170) and 3.1e-18 (254, 500) (regularised upper incomplete
 * gamma Q(df/2, x/2)), so these tests do not flake; the old sequential
 * allocator (slot from the LIFO free list, key 0 then +1) scores in the
 * millions.
 */
static double chi_square(const unsigned *count, unsigned n, unsigned total)
{
	double expect = (double)total / n, x = 0;

	for (unsigned i = 0; i < n; i++)
		x += (count[i] - expect) * (count[i] - expect) / expect;
	return x;
}

#define UNI_N 10000

/* The keys of 10,000 registrations are uniform over the 256 values, and
 * no STag falls in index 0 (STag 0 and the reserved 1 and 2 of zero-length
 * frames). */
START_TEST(stag_keys_uniform)
{
	static uint8_t buf[64];
	static struct iw_mr *mr[UNI_N];
	unsigned count[256] = {0};
	struct iw_context ctx;
	struct iw_pd *pd;
	double x;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	for (int i = 0; i < UNI_N; i++) {
		mr[i] = reg(pd, buf, sizeof(buf), IW_ACCESS_REMOTE_READ);
		ck_assert_uint_ge(mr[i]->rkey, 0x100);
		count[iw_stag_key(mr[i]->rkey)]++;
	}
	x = chi_square(count, 256, UNI_N);
	ck_assert_msg(x < 500, "key chi-square %.1f over 255 degrees of freedom", x);
	for (int i = 0; i < UNI_N; i++)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* Registering and deregistering one MR 10,000 times in a 64-slot table:
 * the slot is uniform over the 63 usable indices, and when a slot comes
 * back its new key is uniform over the 255 values other than its last one
 * (the difference new - old is uniform over 1..255). */
START_TEST(stag_slots_and_rekeys_uniform)
{
	static uint8_t buf[64];
	unsigned slots[64] = {0}, delta[255] = {0};
	int last[64];
	unsigned ndelta = 0;
	struct iw_context ctx;
	struct iw_pd *pd;
	double x;

	for (int i = 0; i < 64; i++)
		last[i] = -1;
	ctx_init(&ctx);
	pd = pd_new(&ctx);
	for (int r = 0; r < UNI_N; r++) {
		struct iw_mr *mr = reg(pd, buf, sizeof(buf), 0);
		uint32_t i = iw_stag_index(mr->rkey);
		uint8_t k = iw_stag_key(mr->rkey);

		ck_assert_uint_ge(i, 1);
		ck_assert_uint_lt(i, 64);
		slots[i]++;
		if (last[i] >= 0) {
			ck_assert_int_ne(k, last[i]);
			delta[(uint8_t)(k - last[i]) - 1]++;
			ndelta++;
		}
		last[i] = k;
		ck_assert_int_eq(iw_dereg_mr(mr), 0);
	}
	ck_assert_uint_eq(ctx.mem.num_slots, 64);
	ck_assert_uint_eq(slots[0], 0);
	x = chi_square(slots + 1, 63, UNI_N);
	ck_assert_msg(x < 170, "slot chi-square %.1f over 62 degrees of freedom", x);
	x = chi_square(delta, 255, ndelta);
	ck_assert_msg(x < 500, "re-key chi-square %.1f over 254 degrees of freedom", x);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* Two contexts (as two processes would) hand out unrelated STags: of 64
 * registrations each, the same position carries the same STag with
 * probability about 1 / (63 * 256); 8 or more matches happen with
 * probability below 1e-24. */
START_TEST(stag_differ_between_contexts)
{
	static uint8_t buf[64];
	struct iw_context a, b;
	struct iw_pd *pa, *pb;
	int same = 0;

	ctx_init(&a);
	ctx_init(&b);
	pa = pd_new(&a);
	pb = pd_new(&b);
	for (int i = 0; i < 64; i++) {
		struct iw_mr *ma = reg(pa, buf, sizeof(buf), 0);
		struct iw_mr *mb = reg(pb, buf, sizeof(buf), 0);

		same += ma->rkey == mb->rkey;
	}
	ck_assert_int_lt(same, 8);
	ctx_cleanup(&a);
	ctx_cleanup(&b);
	free(pa);
	free(pb);
}
END_TEST

/* Accesses refused for their STag are counted, per requester and per
 * table; refusals for rights or bounds are not. */
START_TEST(bad_stag_counted)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd, *pd2;
	struct iw_mr *mr;
	atomic_ulong mine;
	struct iw_mem_req req;

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	pd2 = pd_new(&ctx);
	atomic_init(&mine, 0);
	req = (struct iw_mem_req){.pd = pd, .qp_num = 7, .bad_stag = &mine};
	mr = reg(pd2, buf, sizeof(buf), ALL_RIGHTS);
	struct iw_mr_int *m;
	uint8_t *p;
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, &req, mr->rkey ^ 0x80, (uintptr_t)buf, 1,
					      IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &p),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, &req, mr->rkey, (uintptr_t)buf, 1,
					      IW_MEM_REMOTE_READ, IW_MEM_BY_RDMAP, &m, &p),
			  IW_TERM_RDMAP_STAG_STREAM);
	ck_assert_int_eq(iw_mem_invalidate(&ctx.mem, &req, 0x12345600u, true),
			 IW_TERM_RDMAP_OP_NOINV);
	ck_assert_uint_eq(atomic_load(&mine), 3);
	ck_assert_uint_eq(atomic_load(&ctx.mem.bad_stag), 3);
	/* Rights and bounds of the requester's own MR: not an STag guess. */
	req.pd = pd2;
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, &req, mr->rkey, (uintptr_t)buf + 64, 1,
					      IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &p),
			  IW_TERM_DDP_T_BASE_BOUNDS);
	ck_assert_uint_eq(atomic_load(&mine), 3);
	ck_assert_uint_eq(atomic_load(&ctx.mem.bad_stag), 3);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* ------------------------------------------------- lock-free lookups */

/* Checks and puts never take the table's mutex (issue 12 part 5): with it
 * held by a writer, a check still completes. (Before, this deadlocked.) */
START_TEST(lookup_without_table_lock)
{
	static uint8_t buf[64];
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *mr;
	struct iw_mr_int *m;
	uint8_t *p;
	struct iw_sge sge = {.addr = (uintptr_t)buf, .length = 8};

	ctx_init(&ctx);
	pd = pd_new(&ctx);
	mr = reg(pd, buf, sizeof(buf), ALL_RIGHTS);
	sge.lkey = mr->lkey;
	ck_assert_int_eq(pthread_mutex_lock(&ctx.mem.lock), 0);
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), mr->rkey, (uintptr_t)buf, 8,
					      IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &p),
			  0);
	iw_mem_put_placed(m);
	ck_assert_int_eq(iw_mem_check_local(&ctx.mem, pd, &sge, IW_MEM_LOCAL_WRITE, &m, &p), 0);
	iw_mem_put(m);
	ck_assert_uint_eq(iw_mem_check_remote(&ctx.mem, REQ(pd), mr->rkey ^ 1, (uintptr_t)buf, 8,
					      IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &p),
			  IW_TERM_DDP_T_INV_STAG);
	ck_assert_int_eq(pthread_mutex_unlock(&ctx.mem.lock), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ctx_cleanup(&ctx);
}
END_TEST

/* A REG_MR rewriting a fast-reg MR between two registrations while
 * checks run: every check that passes sees one registration whole (its
 * host address, never another's bounds with it). Run under ASan for
 * use-after-free with the churn test above. */
#define FR_ROUNDS 20000

struct fr_env {
	struct iw_context ctx;
	struct iw_pd *pd;
	struct iw_mr *fr;
	uint8_t a[64], b[32];
	_Atomic uint32_t stag;
	atomic_bool stop;
	atomic_long hits;
};

static void *fr_writer(void *p)
{
	struct fr_env *e = p;
	struct iw_mr_int *mi = iw_mr_int(e->fr);
	uint32_t s = e->fr->rkey;

	for (int r = 0; r < FR_ROUNDS; r++) {
		bool odd = r & 1;

		s = iw_inc_rkey(s);
		if (iw_mem_fastreg(&e->ctx.mem, e->pd, mi, s, ALL_RIGHTS, odd ? 0x9000 : 0x1000,
				   odd ? 32 : 64, odd ? e->b : e->a))
			return "fastreg failed";
		atomic_store(&e->stag, s);
		/* A reader's placement may be under way: wait for it, as a
		 * LOCAL_INV does. */
		int rc = iw_mem_invalidate(&e->ctx.mem, REQ(e->pd), s, false);
		if (rc != 0 && rc != IW_MEM_INV_WAIT)
			return "invalidate failed";
		while (!iw_mem_placements_done(&e->ctx.mem, s))
			;
	}
	return NULL;
}

static void *fr_reader(void *p)
{
	struct fr_env *e = p;

	while (!atomic_load(&e->stop)) {
		uint32_t s = atomic_load(&e->stag);
		bool odd = atomic_load(&e->hits) & 1;
		uint64_t to = odd ? 0x9000 : 0x1000, len = odd ? 32 : 64;
		struct iw_mr_int *m;
		uint8_t *ptr;
		uint16_t t = iw_mem_check_remote(&e->ctx.mem, REQ(e->pd), s, to, len,
						 IW_MEM_REMOTE_WRITE, IW_MEM_BY_DDP, &m, &ptr);

		if (t == 0) {
			bool whole = ptr == (odd ? e->b : e->a);

			iw_mem_put_placed(m);
			if (!whole)
				return "torn registration";
			atomic_fetch_add(&e->hits, 1);
		} else if (t != IW_TERM_DDP_T_INV_STAG && t != IW_TERM_DDP_T_BASE_BOUNDS) {
			return "unexpected TERMINATE";
		}
	}
	return NULL;
}

START_TEST(threads_fastreg_and_check)
{
	struct fr_env *e = calloc(1, sizeof(*e));
	pthread_t w, r;
	void *res;

	ck_assert_ptr_nonnull(e);
	ctx_init(&e->ctx);
	e->pd = pd_new(&e->ctx);
	e->fr = iw_alloc_mr(e->pd, 1);
	ck_assert_ptr_nonnull(e->fr);
	ck_assert_int_eq(pthread_create(&r, NULL, fr_reader, e), 0);
	ck_assert_int_eq(pthread_create(&w, NULL, fr_writer, e), 0);
	ck_assert_int_eq(pthread_join(w, &res), 0);
	ck_assert_msg(res == NULL, "writer: %s", (const char *)res);
	atomic_store(&e->stop, true);
	ck_assert_int_eq(pthread_join(r, &res), 0);
	ck_assert_msg(res == NULL, "reader: %s", (const char *)res);
	ck_assert_uint_eq(iw_mem_refs(iw_mr_int(e->fr)), 0);
	ck_assert_int_eq(iw_dereg_mr(e->fr), 0);
	ck_assert_int_eq(iw_dealloc_pd(e->pd), 0);
	ctx_cleanup(&e->ctx);
	free(e);
}
END_TEST

Suite *suite_mem(void)
{
	Suite *s = suite_create("mem");
	TCase *tc = tcase_create("mem");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, access_flag_rule);
	tcase_add_test(tc, reg_mr_bad_arguments);
	tcase_add_test(tc, stag_layout_and_fields);
	tcase_add_test(tc, key_changes_on_reregistration);
	tcase_add_test(tc, stag_zero_and_unknown_invalid);
	tcase_add_loop_test(tc, remote_check_terminate_codes, 0, NUM_REMOTE_CASES);
	tcase_add_test(tc, remote_check_order);
	tcase_add_test(tc, remote_wrap_edge);
	tcase_add_test(tc, local_checks);
	tcase_add_test(tc, dereg_busy_until_put);
	tcase_add_test(tc, dealloc_pd_busy_while_mrs);
	tcase_add_test(tc, fastreg_lifecycle);
	tcase_add_test(tc, fastreg_key_carries_to_reuse);
	tcase_add_test(tc, invalidate_plain_mr_refused);
	tcase_add_test(tc, invalidate_while_busy);
	tcase_add_test(tc, many_registrations);
	tcase_add_test(tc, cleanup_frees_leftovers);
	tcase_add_test(tc, threads_register_and_check);
	tcase_add_test(tc, invalidate_waits_for_placement);
	tcase_add_test(tc, mw_bind_use_invalidate);
	tcase_add_test(tc, mw_type1_pd_wide);
	tcase_add_test(tc, stag_keys_uniform);
	tcase_add_test(tc, stag_slots_and_rekeys_uniform);
	tcase_add_test(tc, stag_differ_between_contexts);
	tcase_add_test(tc, bad_stag_counted);
	tcase_add_test(tc, lookup_without_table_lock);
	tcase_add_test(tc, threads_fastreg_and_check);
	suite_add_tcase(s, tc);
	return s;
}
