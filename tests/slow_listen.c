/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * LD_PRELOADed into a perftest -R server by tests/compat_perftest.sh: each
 * rdma_listen after the process's first waits 300 ms. perftest's client
 * makes its second connection as soon as the handshake over the first is
 * done, while its server only then starts listening again; this makes that
 * server always late, as a loaded machine sometimes does. Before libiwarp
 * dialled refused connections again, the client got UNREACHABLE and
 * perftest 4.5's retry used its freed ids (SIGBUS).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

struct rdma_cm_id;
int rdma_listen(struct rdma_cm_id *id, int backlog);

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, int);
	struct timespec late = {0, 300 * 1000 * 1000};

	*(void **)&next = dlsym(RTLD_NEXT, "rdma_listen");
	if (__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED) > 0)
		nanosleep(&late, NULL);
	return next(id, backlog);
}
