/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows: ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw (static
 * inline calls through ibv_context->ops) over iw_alloc_mw, iw_dealloc_mw
 * and iw_bind_mw, and the IBV_WR_BIND_MW work request of a type 2 window
 * for ibv_post_send (ibv_data.c). Type 1: iw_bind_mw picks the new rkey,
 * written to ibv_mw.rkey as ibv_bind_mw returns. Type 2: the application
 * gives the rkey in the work request (ibv_inc_rkey), as with any provider.
 * libiwarp's type 2 windows are InfiniBand's type 2B (QP and PD).
 */
#include <errno.h>

#include "cv.h"

CV_SAME(IW_MW_TYPE_1, IBV_MW_TYPE_1);
CV_SAME(IW_MW_TYPE_2, IBV_MW_TYPE_2);
CV_SAME(IW_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND);

struct cv_mw {
	struct ibv_mw mw;
	struct iw_mw *iw;
};

static struct iw_mw *cv_mw_iw(struct ibv_mw *mw)
{
	return cv_container_of(mw, struct cv_mw, mw)->iw;
}

static struct iw_mr *cv_mr_iw(struct ibv_mr *mr)
{
	return mr ? cv_container_of(mr, struct cv_mr, mr)->iw : NULL;
}

struct ibv_mw *cv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct cv_mw *m = calloc(1, sizeof(*m));

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->iw = iw_alloc_mw(cv_container_of(pd, struct cv_pd, pd)->iw, (enum iw_mw_type)type);
	if (!m->iw)
		return cv_fail_free(m);
	m->mw = (struct ibv_mw){.context = pd->context, .pd = pd, .rkey = m->iw->rkey,
				.handle = m->iw->handle, .type = type};
	return &m->mw;
}

int cv_dealloc_mw(struct ibv_mw *mw)
{
	int err = iw_dealloc_mw(cv_mw_iw(mw));

	if (err == 0)
		free(cv_container_of(mw, struct cv_mw, mw));
	return err;
}

/* The bind of either type in libiwarp's terms; 0 or an errno. */
static int cv_bind_info(struct iw_mw_bind_req *d, const struct ibv_mw_bind_info *s)
{
	int access;
	int err = cv_access_to_iw(s->mw_access_flags, &access);

	if (err)
		return err; /* IBV_ACCESS_ZERO_BASED among others */
	d->mr = cv_mr_iw(s->mr);
	d->addr = s->addr;
	d->length = s->length;
	d->mw_access_flags = (unsigned int)access;
	return 0;
}

int cv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct iw_mw_bind b = {.wr_id = mw_bind->wr_id};
	struct iw_mw *iw = cv_mw_iw(mw);
	int err = cv_bind_info(&b.bind_info, &mw_bind->bind_info);

	if (err)
		return err;
	b.send_flags = mw_bind->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED);
	err = iw_bind_mw(cv_container_of(qp, struct cv_qp, qp)->iw, iw, &b);
	if (err == 0)
		mw->rkey = iw->rkey;
	return err;
}

int cv_bind_wr(struct iw_send_wr *d, const struct ibv_send_wr *s)
{
	if (!s->bind_mw.mw)
		return EINVAL;
	d->wr.bind_mw.mw = cv_mw_iw(s->bind_mw.mw);
	d->wr.bind_mw.rkey = s->bind_mw.rkey;
	return cv_bind_info(&d->wr.bind_mw.bind_info, &s->bind_mw.bind_info);
}
