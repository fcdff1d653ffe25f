/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * LD_PRELOADed into a perftest -R client under iwarp-run by
 * tests/compat_perftest.sh: every iw_cm_set_conn_opts that the drop-in
 * librdmacm makes (rdma_connect asks for refused_retry_ms) gets
 * refused_retry_ms 0, so a refused connection fails at once, as an
 * rdma-core client's on the kernel's siw does. Against a server whose
 * second rdma_listen is late (tests/slow_listen.c), only the server's
 * parked listening socket (libiwarp's relisten_ms, set by rdma_listen)
 * keeps that client's second connection from being refused.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <iwarp/iwarp.h>

int iw_cm_set_conn_opts(struct iw_cm_id *id, const struct iw_conn_opts *opts)
{
	int (*next)(struct iw_cm_id *, const struct iw_conn_opts *);
	struct iw_conn_opts o = *opts;

	*(void **)&next = dlsym(RTLD_NEXT, "iw_cm_set_conn_opts");
	if (o.comp_mask & IW_CONN_OPTS_REFUSED_RETRY)
		o.refused_retry_ms = 0;
	return next(id, &o);
}
