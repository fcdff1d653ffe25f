/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one device, iwarp0: an RNIC on the IWARP transport that serves every
 * local address, opened into contexts that share one iw_context.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cv.h"

static struct ibv_device cv_device = {
	.node_type = IBV_NODE_RNIC,
	.transport_type = IBV_TRANSPORT_IWARP,
	.name = "iwarp0",
	.dev_name = "uverbs-iwarp0",
	.dev_path = "",
	.ibdev_path = "",
};

/* The process's iw_context: made by the first open, freed by the last close
 * (kept when CM ids still hold it: librdmacm's context never closes). */
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_context *cv_iw;
static int cv_refs;

/* IWARP_LOOPS: a number of loop threads, 1 to 1024 (0: unset). */
static int cv_env_loops(uint32_t *n)
{
	const char *v = getenv("IWARP_LOOPS");
	*n = 0;
	if (!v || !*v)
		return 0;
	char *end;
	unsigned long l = strtoul(v, &end, 10);
	if (*end || l < 1 || l > 1024 || v[0] == '-') {
		fprintf(stderr, "libibverbs (libiwarp): IWARP_LOOPS=%s: not a number of loops (1 to 1024)\n", v);
		return EINVAL;
	}
	*n = (uint32_t)l;
	return 0;
}

/* Hardware completes work while the application busy-polls ibv_poll_cq,
 * and perftest, qperf or SPDK do poll without pause: in run-to-completion
 * mode (IW_CONTEXT_POLL) the polling thread receives for its CQs itself,
 * instead of waiting for the loop thread to be scheduled (on a machine
 * with few cores that thread competes with the poller). Applications that
 * sleep on completion channels are served by the loop as before: arming
 * a CQ hands its connections back at once. IWARP_POLL=0 leaves all
 * receiving to the loop threads. */
static struct iw_context *cv_iw_new(void)
{
	const char *poll = getenv("IWARP_POLL");
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_FLAGS};
	if (!poll || strcmp(poll, "0") != 0)
		a.flags = IW_CONTEXT_POLL;
	int err = cv_env_loops(&a.num_loops);
	if (err) {
		errno = err;
		return NULL;
	}
	if (a.num_loops)
		a.comp_mask |= IW_CONTEXT_ATTR_LOOPS;
	return iw_context_new(&a);
}

static struct iw_context *cv_iw_get(void)
{
	pthread_mutex_lock(&cv_lock);
	if (!cv_iw)
		cv_iw = cv_iw_new();
	if (cv_iw)
		cv_refs++;
	struct iw_context *iw = cv_iw;
	pthread_mutex_unlock(&cv_lock);
	return iw;
}

static void cv_iw_put(void)
{
	pthread_mutex_lock(&cv_lock);
	if (--cv_refs == 0 && iw_context_free(cv_iw) == 0)
		cv_iw = NULL;
	pthread_mutex_unlock(&cv_lock);
}

CV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &cv_device;
	if (num_devices)
		*num_devices = 1;
	return list;
}

CV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

CV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

/* A stable, locally administered EUI-64: the bytes of "iWARP0". */
#define CV_GUID 0x0269574152503000ull

CV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	(void)device;
	return htobe64(CV_GUID);
}

CV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device == &cv_device ? 0 : -1;
}

CV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (device != &cv_device) {
		errno = ENODEV;
		return NULL;
	}
	struct cv_context *c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->iw = cv_iw_get();
	if (!c->iw)
		return cv_fail_free(c);
	c->vctx = cv_ops_template;
	c->vctx.sz = sizeof(c->vctx);
	struct ibv_context *ctx = &c->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->async_fd = iw_context_async_fd(c->iw);
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	return ctx;
}

CV_EXPORT int ibv_close_device(struct ibv_context *ctx)
{
	if (!ctx)
		return 0;
	struct cv_context *c = cv_ctx(ctx);
	pthread_mutex_destroy(&ctx->mutex);
	free(c);
	cv_iw_put();
	return 0;
}

CV_EXPORT struct iw_context *cv_iw_context(struct ibv_context *ctx)
{
	return ctx ? cv_ctx(ctx)->iw : NULL;
}
