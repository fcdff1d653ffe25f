/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Port 0 in rdma_bind_addr. rdma-core gives the id its port at once, and
 * applications read it with rdma_get_src_port before rdma_listen to tell
 * the peer where to connect (qperf does). libiwarp binds its socket only
 * when it listens or connects, so the port is chosen here with a socket of
 * our own, kept bound (SO_REUSEADDR, never listening) so that nobody else
 * takes the port before libiwarp's listener does.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm.h"

static in_port_t *cm_port_of(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return &((struct sockaddr_in6 *)ss)->sin6_port;
	return &((struct sockaddr_in *)ss)->sin_port;
}

/* An address with port 0 gets a free port, held by id until
 * cm_port_release. Returns 0 or an errno. */
int cm_port_reserve(struct cm_id *id, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	int one = 1;

	if (*cm_port_of(ss))
		return 0;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)ss, ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
									: sizeof(struct sockaddr_in)) ||
	    getsockname(fd, (struct sockaddr *)ss, &len)) {
		int err = errno;
		close(fd);
		return err;
	}
	cm_port_release(id);
	id->resv_fd = fd;
	return 0;
}

void cm_port_release(struct cm_id *id)
{
	if (id->resv_fd >= 0)
		close(id->resv_fd);
	id->resv_fd = -1;
}
