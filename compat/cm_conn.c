/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Resolving, connecting, accepting, rejecting, disconnecting. Over TCP
 * there is nothing to resolve: the address and route events are raised at
 * once, the kernel's TCP finds the route when the connection is made.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cm.h"

static socklen_t cm_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* The local address the kernel would use towards dst (a UDP socket's
 * connect sends nothing), so that rdma_get_local_addr shows it as
 * rdma-core does after address resolution. */
static void cm_guess_src(struct rdma_cm_id *rid, const struct sockaddr *dst)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int s = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return;
	if (connect(s, dst, cm_sa_len(dst)) == 0 && getsockname(s, (struct sockaddr *)&ss, &len) == 0) {
		((struct sockaddr_in *)&ss)->sin_port = 0; /* same offset in sockaddr_in6 */
		memcpy(&rid->route.addr.src_storage, &ss, len);
	}
	close(s);
}

CV_EXPORT int rdma_resolve_addr(struct rdma_cm_id *rid, struct sockaddr *src, struct sockaddr *dst,
				int timeout_ms)
{
	(void)timeout_ms;
	if (!rid || !dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return cm_ret(EINVAL);
	if (src && rdma_bind_addr(rid, src))
		return -1;
	memcpy(&rid->route.addr.dst_storage, dst, cm_sa_len(dst));
	if (!src)
		cm_guess_src(rid, dst);
	return cm_ret(cm_post_local(cm_of(rid), RDMA_CM_EVENT_ADDR_RESOLVED, 0));
}

CV_EXPORT int rdma_resolve_route(struct rdma_cm_id *rid, int timeout_ms)
{
	(void)timeout_ms;
	if (!rid || !rid->route.addr.dst_addr.sa_family)
		return cm_ret(EINVAL);
	return cm_ret(cm_post_local(cm_of(rid), RDMA_CM_EVENT_ROUTE_RESOLVED, 0));
}

/* IRD and ORD: libiwarp takes at most 128 of each. */
static uint8_t cm_rd(uint8_t v)
{
	return v > 128 ? 128 : v;
}

static void cm_iw_param(struct iw_conn_param *d, const struct rdma_conn_param *s)
{
	memset(d, 0, sizeof(*d));
	d->responder_resources = 1;
	d->initiator_depth = 1;
	if (!s)
		return;
	d->private_data = s->private_data;
	d->private_data_len = s->private_data ? s->private_data_len : 0;
	d->responder_resources = cm_rd(s->responder_resources);
	d->initiator_depth = cm_rd(s->initiator_depth);
}

/* How long a refused connection is dialled again. rdma_cm applications
 * connect as soon as their peer has said it is about to listen (perftest
 * 4.5's -R makes its second connection so, qperf 0.4.11 sends its port
 * before rdma_listen), counting on address and route resolution to take
 * long enough; here both are immediate, and a loaded peer often had not
 * listened yet (UNREACHABLE, then perftest's broken retry crashed). */
#define CM_REFUSED_RETRY_MS 2000

CV_EXPORT int rdma_connect(struct rdma_cm_id *rid, struct rdma_conn_param *param)
{
	struct iw_conn_param p;
	struct iw_conn_opts o = {.comp_mask = IW_CONN_OPTS_REFUSED_RETRY,
				 .refused_retry_ms = CM_REFUSED_RETRY_MS};

	if (!rid)
		return cm_ret(EINVAL);
	if (!rid->qp)
		return cm_ret(EOPNOTSUPP); /* iWARP connects a QP: rdma_create_qp first */
	cm_iw_param(&p, param);
	cm_port_release(cm_of(rid)); /* libiwarp's socket binds it without SO_REUSEADDR */
	int err = iw_cm_set_conn_opts(cm_of(rid)->iw, &o);
	if (err)
		return cm_ret(err);
	return cm_ret(iw_cm_connect(cm_of(rid)->iw, &rid->route.addr.dst_addr, &p));
}

CV_EXPORT int rdma_accept(struct rdma_cm_id *rid, struct rdma_conn_param *param)
{
	struct iw_conn_param p;

	if (!rid)
		return cm_ret(EINVAL);
	if (!rid->qp)
		return cm_ret(EOPNOTSUPP);
	cm_iw_param(&p, param);
	return cm_ret(iw_cm_accept(cm_of(rid)->iw, &p));
}

CV_EXPORT int rdma_reject(struct rdma_cm_id *rid, const void *private_data, uint8_t len)
{
	if (!rid)
		return cm_ret(EINVAL);
	return cm_ret(iw_cm_reject(cm_of(rid)->iw, private_data, private_data ? len : 0));
}

CV_EXPORT int rdma_disconnect(struct rdma_cm_id *rid)
{
	if (!rid)
		return cm_ret(EINVAL);
	int err = iw_cm_disconnect(cm_of(rid)->iw);
	return cm_ret(err == ENOTCONN ? EINVAL : err); /* rdma-core's errno for it */
}

/* rdma_establish is for QPs the application connects itself (InfiniBand);
 * a CM QP here is established by the MPA exchange. */
CV_EXPORT int rdma_establish(struct rdma_cm_id *rid)
{
	return cm_ret(rid ? 0 : EINVAL);
}

CV_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *rid, struct ibv_qp_attr *attr, int *mask)
{
	if (!rid || !attr || !mask)
		return cm_ret(EINVAL);
	enum ibv_qp_state want = attr->qp_state;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ;
		*mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE;
		return 0;
	default:
		return cm_ret(EINVAL);
	}
}

CV_EXPORT int rdma_notify(struct rdma_cm_id *rid, enum ibv_event_type event)
{
	(void)event;
	return cm_ret(rid ? 0 : EINVAL); /* nothing waits for a first receive */
}
