/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parked listening sockets (iw_conn_opts.relisten_ms). Some servers stop
 * listening between two connections of one client and listen again on
 * the same port a moment later: perftest 4.5 with -R destroys its first
 * listener once the control connection is up, and creates the second only
 * after a handshake over it that lets the client connect at once. With
 * the kernel's rdma_cm (siw, Chelsio) a SYN in that gap is refused as
 * well; both ends just usually win the race. A client that does not dial
 * again (rdma-core's) then fails when this end is a little late.
 *
 * A destroyed listener with relisten_ms keeps its socket listening but
 * not accepting: the kernel completes the handshakes of up to
 * IW_RELISTEN_BACKLOG peers and holds them (their MPA Requests wait in
 * their sockets). The next listener of the context on that address and
 * port takes the socket over and accepts them as if they had come just
 * then; when relisten_ms ends first, the socket is closed and the kernel
 * resets them. Each parked socket has a timer on the loop of the listener
 * it came from; the context's list is under ctx->lock, as a listener
 * taking a socket over may run on another loop.
 */
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/cm_int.h"
#include "engine/context.h"
#include "base/alloc.h"
#include "io/ev.h"

struct iw_cm_parked {
	struct iw_cm_parked *next;
	struct iw_context *ctx;
	struct iw_ev *ev;      /* the loop its timer is on */
	struct event *expire;
	int fd;                /* -1 once taken over or closed */
	struct sockaddr_storage addr;
};

static in_port_t port_of(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return ((const struct sockaddr_in6 *)a)->sin6_port;
	return ((const struct sockaddr_in *)a)->sin_port;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family || port_of(a) != port_of(b))
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) &&
	       x->sin6_scope_id == y->sin6_scope_id;
}

/* Unlink p (ctx->lock held). */
static void unlink_locked(struct iw_cm_parked *p)
{
	for (struct iw_cm_parked **pp = &p->ctx->parked; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

/* Free an unlinked entry on its loop: its timer, and its socket if still
 * there (closing a listening socket resets the connections it queued). */
static void drop(struct iw_cm_parked *p)
{
	event_free(p->expire);
	if (p->fd >= 0)
		close(p->fd);
	iw_free(p->ctx->alloc, p);
}

static void on_expire(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_parked *p = arg;
	struct iw_ev *ev = p->ev;
	(void)fd;
	(void)what;
	iw_ev_enter(ev);
	pthread_mutex_lock(&p->ctx->lock);
	unlink_locked(p);
	pthread_mutex_unlock(&p->ctx->lock);
	drop(p);
	iw_ev_leave(ev);
}

bool iw_cm_park(struct iw_cm_id_int *l)
{
	uint32_t ms = l->conn.tune.relisten_ms;
	struct iw_context *ctx = l->pub.context;
	if (!ms || l->fd < 0 || l->conn.state != IW_CONN_LISTEN)
		return false;
	struct iw_cm_parked *p = iw_calloc(ctx->alloc, 1, sizeof(*p));
	if (!p)
		return false;
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	p->expire = evtimer_new(iw_ev_base(l->ev), on_expire, p);
	if (!p->expire || evtimer_add(p->expire, &tv)) {
		if (p->expire)
			event_free(p->expire);
		iw_free(ctx->alloc, p);
		return false;
	}
	iw_cm_conn_unhook(l); /* nothing accepts from now on */
	int backlog = l->backlog > 0 && l->backlog < IW_RELISTEN_BACKLOG ? l->backlog
									  : IW_RELISTEN_BACKLOG;
	listen(l->fd, backlog); /* a listening socket only takes the new bound */
	p->fd = l->fd;
	l->fd = -1;
	p->ctx = ctx;
	p->ev = l->ev;
	memcpy(&p->addr, &l->pub.local_addr, sizeof(p->addr));
	pthread_mutex_lock(&ctx->lock);
	p->next = ctx->parked;
	ctx->parked = p;
	pthread_mutex_unlock(&ctx->lock);
	return true;
}

/* Take the socket parked on l's address and port, and close those on its
 * port with another address, which would make bind(2) fail (ctx->lock
 * held). An entry left without a socket waits for its timer, unless it
 * is on l's own loop. */
static int take_locked(struct iw_cm_id_int *l, struct iw_cm_parked **done)
{
	const struct sockaddr_storage *want = &l->pub.local_addr;
	int fd = -1;
	for (struct iw_cm_parked **pp = &l->pub.context->parked; *pp;) {
		struct iw_cm_parked *p = *pp;
		if (p->fd < 0 || port_of(&p->addr) != port_of(want)) {
			pp = &p->next;
			continue;
		}
		if (fd < 0 && same_addr(&p->addr, want))
			fd = p->fd;
		else
			close(p->fd);
		p->fd = -1;
		if (p->ev != l->ev) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = *done;
		*done = p;
	}
	return fd;
}

int iw_cm_unpark(struct iw_cm_id_int *l)
{
	struct iw_context *ctx = l->pub.context;
	struct iw_cm_parked *done = NULL;
	if (!port_of(&l->pub.local_addr))
		return -1; /* a new ephemeral port: nothing parked there */
	pthread_mutex_lock(&ctx->lock);
	int fd = ctx->parked ? take_locked(l, &done) : -1;
	pthread_mutex_unlock(&ctx->lock);
	while (done) {
		struct iw_cm_parked *p = done;
		done = p->next;
		drop(p);
	}
	return fd;
}

struct sweep {
	struct iw_context *ctx;
	struct iw_ev *ev;
};

/* On ev's thread: every entry whose timer is there goes now. */
static int sweep_loop(void *arg)
{
	struct sweep *s = arg;
	struct iw_cm_parked *mine = NULL;
	pthread_mutex_lock(&s->ctx->lock);
	for (struct iw_cm_parked **pp = &s->ctx->parked; *pp;) {
		struct iw_cm_parked *p = *pp;
		if (p->ev != s->ev) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = mine;
		mine = p;
	}
	pthread_mutex_unlock(&s->ctx->lock);
	while (mine) {
		struct iw_cm_parked *p = mine;
		mine = p->next;
		drop(p);
	}
	return 0;
}

static bool parked_on(struct iw_context *ctx, struct iw_ev *ev)
{
	bool any = false;
	pthread_mutex_lock(&ctx->lock);
	for (struct iw_cm_parked *p = ctx->parked; p && !any; p = p->next)
		any = p->ev == ev;
	pthread_mutex_unlock(&ctx->lock);
	return any;
}

void iw_cm_park_cleanup(struct iw_context *ctx)
{
	for (unsigned i = 0; i < ctx->num_loops; i++) {
		struct sweep s = {ctx, ctx->loops[i]};
		if (parked_on(ctx, s.ev))
			iw_ev_call_final(s.ev, sweep_loop, &s);
	}
}
