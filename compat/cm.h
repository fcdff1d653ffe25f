/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * librdmacm over libiwarp's CM. The process has one iw_cm_channel, read by
 * a dispatcher thread that sorts each event onto the rdma_event_channel of
 * the id it belongs to: an rdma channel is a queue with an eventfd
 * (semaphore mode) as its fd, so that events libiwarp raises and those
 * made here (ADDR_RESOLVED, ROUTE_RESOLVED: nothing to resolve over TCP)
 * arrive in one order, and an id can move to another channel
 * (rdma_migrate_id).
 */
#ifndef IWARP_COMPAT_CM_H
#define IWARP_COMPAT_CM_H

#include <stdbool.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>

#include "cv.h"

struct cm_event;

struct cm_chan {
	struct rdma_event_channel ch; /* fd: the eventfd */
	struct cm_event *head, **tail;
	int readers; /* threads inside rdma_get_cm_event (cm_g.lock) */
	bool dead;   /* destroyed while readers were inside: the last frees it */
	unsigned debt; /* eventfd counts of purged events a reader must skip */
};

struct cm_id {
	struct rdma_cm_id id;
	struct iw_cm_id *iw;
	struct cm_chan *chan;
	int held;            /* events the application took and has not acked */
	int resv_fd;         /* holds the port rdma_bind_addr chose (cm_port.c), or -1 */
	int owns_cqs;        /* rdma_create_qp made id->send_cq and recv_cq */
	struct cm_id *next;  /* the registry */
};

struct cm_event {
	struct rdma_cm_event ev;
	struct iw_cm_event *iw; /* NULL for the events made here */
	struct cm_id *owner;
	struct cm_event *next;
};

/* The process's state; lock guards the registry and every channel queue. */
struct cm_global {
	pthread_mutex_t lock;
	pthread_cond_t acked; /* an event was acked (rdma_destroy_id waits) */
	struct ibv_context *verbs;
	struct iw_cm_channel *ich;
	struct cm_id *ids;
};
extern struct cm_global cm_g;

int cm_global_init(void);
struct cm_id *cm_lookup(struct iw_cm_id *iw);
void cm_register(struct cm_id *id);
void cm_unregister(struct cm_id *id);
void cm_enqueue(struct cm_chan *ch, struct cm_event *e);
void cm_purge(struct cm_chan *ch, struct cm_id *id);
void cm_fix_tail(struct cm_chan *ch);
int cm_post_local(struct cm_id *id, enum rdma_cm_event_type type, int status);
void cm_sync_addrs(struct cm_id *id);
struct cm_id *cm_id_new(struct cm_chan *ch, struct iw_cm_id *iw, void *context,
			enum rdma_port_space ps);
void cm_free_cqs(struct rdma_cm_id *rid);
int cm_port_reserve(struct cm_id *id, struct sockaddr_storage *ss);
void cm_port_release(struct cm_id *id);

static inline struct cm_id *cm_of(struct rdma_cm_id *id)
{
	return cv_container_of(id, struct cm_id, id);
}

static inline struct cm_chan *cm_chan_of(struct rdma_event_channel *ch)
{
	return cv_container_of(ch, struct cm_chan, ch);
}

/* librdmacm's convention: 0, or -1 with errno. */
static inline int cm_ret(int err)
{
	if (!err)
		return 0;
	errno = err;
	return -1;
}

#endif
