/* SPDX-License-Identifier: BSD-2-Clause */
/* Protection domains and memory regions. */
#include <errno.h>
#include <stdlib.h>

#include "cv.h"

CV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct cv_pd *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->iw = iw_alloc_pd(cv_ctx(ctx)->iw);
	if (!p->iw)
		return cv_fail_free(p);
	p->pd.context = ctx;
	return &p->pd;
}

CV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!pd)
		return 0;
	struct cv_pd *p = cv_container_of(pd, struct cv_pd, pd);
	int r = iw_dealloc_pd(p->iw);
	if (r == 0)
		free(p);
	return r;
}

/* The access bits libiwarp knows; the optional ones (relaxed ordering)
 * may be dropped, as rdma-core drops them on kernels without them; what
 * cannot be honoured over TCP (zero-based, on-demand paging, memory
 * windows) is refused. */
int cv_access_to_iw(unsigned int access, int *out)
{
	const unsigned int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				   IBV_ACCESS_MW_BIND;

	access &= ~(unsigned int)(IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB);
	if (access & ~known)
		return EOPNOTSUPP;
	*out = (int)access; /* IW_ACCESS_* has IBV_ACCESS_*'s bit values */
	return 0;
}

CV_SAME(IW_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
CV_SAME(IW_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
CV_SAME(IW_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
CV_SAME(IW_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);

static struct ibv_mr *cv_reg(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			     unsigned int access)
{
	int iwacc, err;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (iova != (uintptr_t)addr) {
		errno = EOPNOTSUPP; /* tagged offsets are virtual addresses */
		return NULL;
	}
	err = cv_access_to_iw(access, &iwacc);
	struct cv_mr *m = err ? NULL : calloc(1, sizeof(*m));
	if (!m) {
		errno = err ? err : ENOMEM;
		return NULL;
	}
	m->iw = iw_reg_mr(cv_container_of(pd, struct cv_pd, pd)->iw, addr, length, iwacc);
	if (!m->iw)
		return cv_fail_free(m);
	m->mr = (struct ibv_mr){.context = pd->context, .pd = pd, .addr = addr, .length = length,
				.handle = m->iw->handle, .lkey = m->iw->lkey, .rkey = m->iw->rkey};
	return &m->mr;
}

#undef ibv_reg_mr
CV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return cv_reg(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
CV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return cv_reg(pd, addr, length, iova, (unsigned int)access);
}

CV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	return cv_reg(pd, addr, length, iova, access);
}

CV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (!mr)
		return 0;
	struct cv_mr *m = cv_container_of(mr, struct cv_mr, mr);
	int r = iw_dereg_mr(m->iw);
	if (r == 0)
		free(m);
	return r;
}
