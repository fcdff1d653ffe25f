/* SPDX-License-Identifier: BSD-2-Clause */
/* rdma_getaddrinfo: getaddrinfo(3) for TCP, in rdma_addrinfo's shape. */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

CV_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

static struct sockaddr *cm_sa_dup(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *d = malloc(len);

	if (d)
		memcpy(d, sa, len);
	return d;
}

/* One entry for one address: the source when passive, else the
 * destination (with the hints' source, if any). */
static struct rdma_addrinfo *cm_rai(const struct addrinfo *ai, const struct rdma_addrinfo *hints)
{
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));
	int passive = hints && (hints->ai_flags & RAI_PASSIVE);

	if (!r)
		return NULL;
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	if (passive) {
		r->ai_src_len = ai->ai_addrlen;
		r->ai_src_addr = cm_sa_dup(ai->ai_addr, ai->ai_addrlen);
	} else {
		r->ai_dst_len = ai->ai_addrlen;
		r->ai_dst_addr = cm_sa_dup(ai->ai_addr, ai->ai_addrlen);
		if (hints && hints->ai_src_addr) {
			r->ai_src_len = hints->ai_src_len;
			r->ai_src_addr = cm_sa_dup(hints->ai_src_addr, hints->ai_src_len);
		}
	}
	if ((passive && !r->ai_src_addr) || (!passive && !r->ai_dst_addr) ||
	    (!passive && hints && hints->ai_src_addr && !r->ai_src_addr)) {
		rdma_freeaddrinfo(r);
		return NULL;
	}
	return r;
}

static int cm_gai_errno(int e)
{
	switch (e) {
	case EAI_MEMORY: return ENOMEM;
	case EAI_SYSTEM: return errno;
	case EAI_FAMILY: return EAFNOSUPPORT;
	default: return ENODEV; /* rdma-core: no device for that address */
	}
}

CV_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo h = {.ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP}, *ai;

	if (!res || (!node && !service))
		return cm_ret(EINVAL);
	if (hints && ((hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP) ||
		      (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)))
		return cm_ret(EOPNOTSUPP);
	if (hints) {
		h.ai_family = hints->ai_family;
		h.ai_flags = ((hints->ai_flags & RAI_PASSIVE) ? AI_PASSIVE : 0) |
			     ((hints->ai_flags & RAI_NUMERICHOST) ? AI_NUMERICHOST : 0);
	}
	int g = getaddrinfo(node, service, &h, &ai);
	if (g)
		return cm_ret(cm_gai_errno(g));
	struct rdma_addrinfo *head = NULL, **tail = &head;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		*tail = cm_rai(a, hints);
		if (!*tail) {
			freeaddrinfo(ai);
			rdma_freeaddrinfo(head);
			return cm_ret(ENOMEM);
		}
		tail = &(*tail)->ai_next;
	}
	freeaddrinfo(ai);
	*res = head;
	return 0;
}
