/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For the tests that run under iwarp-run with rdma-core's API
 * (tests/compat_mw.c, tests/compat_poll.c, tests/compat_srq.c): a failed
 * check, CM events, and a connection of the process to itself over
 * 127.0.0.1.
 */
#ifndef IWARP_TESTS_COMPAT_SELF_H
#define IWARP_TESTS_COMPAT_SELF_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define CHECK(cond, what)                                                                      \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "FAIL: %s (%s:%d, errno %d)\n", what, __FILE__, __LINE__, \
				errno);                                                        \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

/* The next CM event, which must be of type t. */
static inline struct rdma_cm_event *compat_event(struct rdma_event_channel *ec,
						 enum rdma_cm_event_type t)
{
	struct rdma_cm_event *e;

	CHECK(rdma_get_cm_event(ec, &e) == 0, "rdma_get_cm_event");
	if (e->event != t) {
		fprintf(stderr, "FAIL: event %s, want %s\n", rdma_event_str(e->event),
			rdma_event_str(t));
		exit(1);
	}
	return e;
}

/* Connect an active id (*ini) to a passive one (*tgt) of this process:
 * *pd is allocated on the active id's context, and make_qp(id, is_tgt)
 * gives each id its QP (the passive one's before rdma_accept). */
static inline void compat_connect_self(struct rdma_event_channel *ec, uint8_t rd_atomic,
				       struct ibv_pd **pd, struct rdma_cm_id **ini,
				       struct rdma_cm_id **tgt,
				       void (*make_qp)(struct rdma_cm_id *id, bool is_tgt))
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_conn_param p = {.responder_resources = rd_atomic, .initiator_depth = rd_atomic};
	struct rdma_cm_id *lid;
	struct rdma_cm_event *e;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	CHECK(rdma_create_id(ec, &lid, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_bind_addr(lid, (struct sockaddr *)&sin) == 0, "rdma_bind_addr");
	CHECK(rdma_listen(lid, 1) == 0, "rdma_listen");
	sin.sin_port = rdma_get_src_port(lid);
	CHECK(rdma_create_id(ec, ini, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_resolve_addr(*ini, NULL, (struct sockaddr *)&sin, 2000) == 0, "resolve_addr");
	rdma_ack_cm_event(compat_event(ec, RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(rdma_resolve_route(*ini, 2000) == 0, "resolve_route");
	rdma_ack_cm_event(compat_event(ec, RDMA_CM_EVENT_ROUTE_RESOLVED));
	*pd = ibv_alloc_pd((*ini)->verbs);
	CHECK(*pd, "ibv_alloc_pd");
	make_qp(*ini, false);
	CHECK(rdma_connect(*ini, &p) == 0, "rdma_connect");
	e = compat_event(ec, RDMA_CM_EVENT_CONNECT_REQUEST);
	*tgt = e->id;
	rdma_ack_cm_event(e);
	make_qp(*tgt, true);
	CHECK(rdma_accept(*tgt, &p) == 0, "rdma_accept");
	for (int n = 0; n < 2; n++)
		rdma_ack_cm_event(compat_event(ec, RDMA_CM_EVENT_ESTABLISHED));
}

#endif
