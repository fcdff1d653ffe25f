/* SPDX-License-Identifier: BSD-2-Clause */
/* CM ids: create, destroy, bind, listen, move, options, addresses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm.h"

struct cm_id *cm_id_new(struct cm_chan *ch, struct iw_cm_id *iw, void *context,
			enum rdma_port_space ps)
{
	struct cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->iw = iw;
	id->chan = ch;
	id->resv_fd = -1;
	id->id = (struct rdma_cm_id){.verbs = cm_g.verbs, .channel = &ch->ch, .context = context,
				     .ps = ps, .port_num = 1, .qp_type = IBV_QPT_RC};
	return id;
}

CV_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out,
			     void *context, enum rdma_port_space ps)
{
	if (!out)
		return cm_ret(EINVAL);
	if (!channel)
		return cm_ret(EOPNOTSUPP); /* synchronous ids (rdma_create_ep) are not offered */
	if (ps != RDMA_PS_TCP)
		return cm_ret(EPROTONOSUPPORT); /* UDP and IPoIB port spaces: no UD over iWARP */
	int err = cm_global_init();
	struct cm_id *id = err ? NULL : cm_id_new(cm_chan_of(channel), NULL, context, ps);
	if (!id)
		return cm_ret(err ? err : ENOMEM);
	err = iw_cm_create_id(cm_g.ich, &id->iw, id);
	if (err) {
		free(id);
		return cm_ret(err);
	}
	pthread_mutex_lock(&cm_g.lock);
	cm_register(id);
	pthread_mutex_unlock(&cm_g.lock);
	*out = &id->id;
	return 0;
}

/* libiwarp refuses to destroy an id while an event of it is not acked: the
 * dispatcher may hold one for a moment (it acks events of ids that are
 * gone); events the application holds are its to ack first. */
static int cm_iw_destroy(struct cm_id *id)
{
	struct timespec ms = {0, 1000000};

	for (int i = 0; i < 2000; i++) {
		int r = iw_cm_destroy_id(id->iw);
		if (r != EBUSY)
			return r;
		nanosleep(&ms, NULL);
	}
	return EBUSY;
}

CV_EXPORT int rdma_destroy_id(struct rdma_cm_id *rid)
{
	if (!rid)
		return cm_ret(EINVAL);
	struct cm_id *id = cm_of(rid);
	/* As rdma-core: wait until the application has acked every event of
	 * the id it took. Returning EBUSY instead let rping's main thread go on
	 * to destroy the event channel while its cm thread still handled
	 * DISCONNECTED, whose next rdma_get_cm_event then read a closed fd
	 * ("Bad file descriptor", tests/compat_rping.sh now and then). */
	pthread_mutex_lock(&cm_g.lock);
	while (id->held)
		pthread_cond_wait(&cm_g.acked, &cm_g.lock);
	cm_unregister(id);
	cm_purge(id->chan, id);
	pthread_mutex_unlock(&cm_g.lock);
	cm_port_release(id);
	cv_orphan_qp(rid->qp); /* libiwarp's QP goes with the id */
	int err = cm_iw_destroy(id);
	if (err)
		return cm_ret(err);
	cm_free_cqs(rid);
	free(id);
	return 0;
}

CV_EXPORT int rdma_bind_addr(struct rdma_cm_id *rid, struct sockaddr *addr)
{
	if (!rid || !addr)
		return cm_ret(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return cm_ret(EAFNOSUPPORT);
	struct cm_id *id = cm_of(rid);
	struct sockaddr_storage ss = {0};
	memcpy(&ss, addr,
	       addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	int err = cm_port_reserve(id, &ss);
	if (!err)
		err = iw_cm_bind_addr(id->iw, (struct sockaddr *)&ss);
	if (err) {
		cm_port_release(id);
		return cm_ret(err);
	}
	memcpy(&rid->route.addr.src_storage, &ss, sizeof(ss));
	return 0;
}

/* How long the socket of a destroyed listener waits for the next
 * rdma_listen on its address and port (libiwarp's relisten_ms). perftest
 * 4.5 -R destroys its first listener once the control connection is up,
 * sleeps a second, exchanges versions over that connection and only then
 * listens again on the same port, while its client connects as soon as
 * the last handshake is in and does not dial again when refused (siw's
 * rdma-core client crashed so when this end was late). Five seconds
 * cover that second and a loaded machine; a port stays busy no longer
 * once a process stops listening on it (until it exits, at most). */
#define CM_RELISTEN_MS 5000

CV_EXPORT int rdma_listen(struct rdma_cm_id *rid, int backlog)
{
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_RELISTEN, .relisten_ms = CM_RELISTEN_MS};

	if (!rid)
		return cm_ret(EINVAL);
	struct cm_id *id = cm_of(rid);
	int err = iw_cm_set_conn_opts(id->iw, &o);
	if (!err)
		err = iw_cm_listen(id->iw, backlog);
	cm_port_release(id); /* the listener holds the port now (or failed) */
	if (!err)
		cm_sync_addrs(id);
	return cm_ret(err);
}

CV_EXPORT int rdma_migrate_id(struct rdma_cm_id *rid, struct rdma_event_channel *channel)
{
	if (!rid)
		return cm_ret(EINVAL);
	if (!channel)
		return cm_ret(EOPNOTSUPP); /* synchronous ids are not offered */
	struct cm_id *id = cm_of(rid);
	struct cm_chan *to = cm_chan_of(channel);
	pthread_mutex_lock(&cm_g.lock);
	int held = id->held;
	if (!held && to != id->chan) {
		/* Queued events move with the id, in their order. */
		struct cm_chan *from = id->chan;
		for (struct cm_event **p = &from->head; *p;) {
			struct cm_event *e = *p;
			if (e->owner != id) {
				p = &e->next;
				continue;
			}
			*p = e->next;
			cm_enqueue(to, e);
		}
		cm_fix_tail(from);
		id->chan = to;
		rid->channel = channel;
	}
	pthread_mutex_unlock(&cm_g.lock);
	return cm_ret(held ? EBUSY : 0);
}

CV_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	if (!id || !optval || !optlen)
		return cm_ret(EINVAL);
	if (level != RDMA_OPTION_ID)
		return cm_ret(ENOSYS); /* InfiniBand path records */
	switch (optname) {
	case RDMA_OPTION_ID_TOS:          /* the kernel's TCP picks it */
	case RDMA_OPTION_ID_REUSEADDR:    /* listeners always reuse */
	case RDMA_OPTION_ID_AFONLY:
	case RDMA_OPTION_ID_ACK_TIMEOUT:  /* TCP retransmits */
		return 0;
	default:
		return cm_ret(ENOSYS);
	}
}

static __be16 cm_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_port;
	if (ss->ss_family == AF_INET6)
		return ((const struct sockaddr_in6 *)ss)->sin6_port;
	return 0;
}

CV_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? cm_port(&cm_of(id)->iw->local_addr) : 0;
}

CV_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? cm_port(&cm_of(id)->iw->peer_addr) : 0;
}

CV_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	int err = cm_global_init();
	struct ibv_context **list = err ? NULL : calloc(2, sizeof(*list));

	if (!list) {
		errno = err ? err : ENOMEM;
		return NULL;
	}
	list[0] = cm_g.verbs;
	if (num_devices)
		*num_devices = 1;
	return list;
}

CV_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
