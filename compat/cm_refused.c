/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What librdmacm exports but this one does not offer: multicast (UD),
 * ECE, SRQs made through the CM, synchronous endpoints (rdma_create_ep,
 * rdma_get_request), and rsockets. Each fails cleanly with errno set.
 * rpoll and rselect serve ordinary fds (no fd is ever an rsocket here), so
 * a program that polls its channel fds through them still works.
 */
#include <errno.h>
#include <poll.h>
#include <sys/select.h>

#include "cm.h"
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#define CM_REFUSE(proto, err) CV_EXPORT proto { errno = err; return -1; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
CM_REFUSE(int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context),
	  EOPNOTSUPP)
CM_REFUSE(int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr,
				     void *context), EOPNOTSUPP)
CM_REFUSE(int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr), EOPNOTSUPP)
CM_REFUSE(int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece), EOPNOTSUPP)
CM_REFUSE(int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece), EOPNOTSUPP)
CM_REFUSE(int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr), EOPNOTSUPP)
CM_REFUSE(int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr),
	  EOPNOTSUPP)
CM_REFUSE(int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr), EOPNOTSUPP)
CM_REFUSE(int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id), EOPNOTSUPP)

CV_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id) {}

CV_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	rdma_destroy_id(id);
}

/* ECE is InfiniBand's: a reject carries no ECE over iWARP. */
CV_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t len)
{
	return rdma_reject(id, private_data, len);
}

/* rsockets: socket(2) over RDMA, not offered. */
CM_REFUSE(int rsocket(int domain, int type, int protocol), EAFNOSUPPORT)
CM_REFUSE(int rbind(int s, const struct sockaddr *addr, socklen_t addrlen), EBADF)
CM_REFUSE(int rlisten(int s, int backlog), EBADF)
CM_REFUSE(int raccept(int s, struct sockaddr *addr, socklen_t *addrlen), EBADF)
CM_REFUSE(int rconnect(int s, const struct sockaddr *addr, socklen_t addrlen), EBADF)
CM_REFUSE(int rshutdown(int s, int how), EBADF)
CM_REFUSE(int rclose(int s), EBADF)
CM_REFUSE(ssize_t rrecv(int s, void *buf, size_t len, int flags), EBADF)
CM_REFUSE(ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *src,
			    socklen_t *addrlen), EBADF)
CM_REFUSE(ssize_t rrecvmsg(int s, struct msghdr *msg, int flags), EBADF)
CM_REFUSE(ssize_t rsend(int s, const void *buf, size_t len, int flags), EBADF)
CM_REFUSE(ssize_t rsendto(int s, const void *buf, size_t len, int flags,
			  const struct sockaddr *dst, socklen_t addrlen), EBADF)
CM_REFUSE(ssize_t rsendmsg(int s, const struct msghdr *msg, int flags), EBADF)
CM_REFUSE(ssize_t rread(int s, void *buf, size_t count), EBADF)
CM_REFUSE(ssize_t rreadv(int s, const struct iovec *iov, int iovcnt), EBADF)
CM_REFUSE(ssize_t rwrite(int s, const void *buf, size_t count), EBADF)
CM_REFUSE(ssize_t rwritev(int s, const struct iovec *iov, int iovcnt), EBADF)
CM_REFUSE(int rgetpeername(int s, struct sockaddr *addr, socklen_t *addrlen), EBADF)
CM_REFUSE(int rgetsockname(int s, struct sockaddr *addr, socklen_t *addrlen), EBADF)
CM_REFUSE(int rsetsockopt(int s, int level, int optname, const void *optval, socklen_t optlen),
	  EBADF)
CM_REFUSE(int rgetsockopt(int s, int level, int optname, void *optval, socklen_t *optlen), EBADF)
CM_REFUSE(int rfcntl(int s, int cmd, ...), EBADF)
CM_REFUSE(off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset), EBADF)
CM_REFUSE(int riounmap(int s, void *buf, size_t len), EBADF)
CV_EXPORT size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	errno = EBADF;
	return 0;
}
#pragma GCC diagnostic pop

CV_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

CV_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		      struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}
