/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --test connect --tcp: the same setup loop with plain TCP sockets beside
 * libiwarp's (perf_connrate.c). A setup is a nonblocking connect until the
 * socket is writable (its time is the one reported), then the server
 * accepts and closes, the client reads that end and closes: both sides
 * took part and released the connection, as in the iWARP loop.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"

#define TCP_SLOTS_MAX 1024

struct tcp_slot {
	int fd;
	bool up;
	double t0;
};

struct tcp_run {
	const struct perf_opts *o;
	struct sockaddr_storage dst;
	struct tcp_slot *slots;
	struct pollfd *pfd;
	double end;
	uint64_t started, done;
	struct perf_samples lat;
};

static bool tcp_more(const struct tcp_run *r)
{
	return r->o->duration > 0 ? perf_now() < r->end : r->started < r->o->iters;
}

static int tcp_start(struct tcp_run *r, struct tcp_slot *sl)
{
	const struct sockaddr *d = (const struct sockaddr *)&r->dst;
	sl->fd = socket(d->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	sl->up = false;
	sl->t0 = perf_now();
	socklen_t l = d->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					       : sizeof(struct sockaddr_in);
	if (sl->fd < 0 || (connect(sl->fd, d, l) && errno != EINPROGRESS))
		return -1;
	r->started++;
	return 0;
}

/* One socket's event: connected (time it), or the server's end (next). */
static int tcp_step(struct tcp_run *r, struct tcp_slot *sl)
{
	if (!sl->up) {
		int err = 0;
		socklen_t l = sizeof(err);
		if (getsockopt(sl->fd, SOL_SOCKET, SO_ERROR, &err, &l) || err)
			return -1;
		sl->up = true;
		return perf_samples_add(&r->lat, (perf_now() - sl->t0) * 1e6);
	}
	char c;
	ssize_t n = recv(sl->fd, &c, 1, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	close(sl->fd);
	sl->fd = -1;
	r->done++;
	return tcp_more(r) ? tcp_start(r, sl) : 0;
}

static int tcp_poll_once(struct tcp_run *r, int *live)
{
	uint32_t q = r->o->qps;
	*live = 0;
	for (uint32_t i = 0; i < q; i++) {
		r->pfd[i] = (struct pollfd){.fd = r->slots[i].fd,
					    .events = r->slots[i].up ? POLLIN : POLLOUT};
		*live += r->slots[i].fd >= 0;
	}
	if (!*live)
		return 0;
	if (poll(r->pfd, q, (int)(r->o->timeout * 1000)) <= 0)
		return -1;
	for (uint32_t i = 0; i < q; i++)
		if (r->pfd[i].revents && r->slots[i].fd >= 0 && tcp_step(r, &r->slots[i]))
			return -1;
	return 0;
}

int perf_connrate_tcp(struct perf_sess *s, const struct sockaddr *peer, struct perf_result *out)
{
	struct tcp_run r = {.o = &s->o};
	memcpy(&r.dst, peer, peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							  : sizeof(struct sockaddr_in));
	((struct sockaddr_in *)&r.dst)->sin_port = htons(s->peer_tcp_port);
	r.slots = calloc(s->o.qps, sizeof(*r.slots));
	r.pfd = calloc(s->o.qps, sizeof(*r.pfd));
	int rc = r.slots && r.pfd ? 0 : -1;
	double t0 = perf_now();
	r.end = t0 + s->o.duration;
	for (uint32_t i = 0; r.slots && i < s->o.qps; i++)
		r.slots[i].fd = -1;
	for (uint32_t i = 0; !rc && i < s->o.qps && tcp_more(&r); i++)
		rc = tcp_start(&r, &r.slots[i]);
	int live = 1;
	while (!rc && live)
		rc = tcp_poll_once(&r, &live);
	if (rc)
		perf_err(s, "TCP setups: %s", strerror(errno));
	*out = (struct perf_result){.iters = r.done, .seconds = perf_now() - t0};
	perf_lat_summary(&r.lat, out);
	for (uint32_t i = 0; r.slots && i < s->o.qps; i++)
		if (r.slots[i].fd >= 0)
			close(r.slots[i].fd);
	perf_samples_free(&r.lat);
	free(r.slots);
	free(r.pfd);
	return rc;
}

/* ------------------------------------------------------------ server */

struct tcp_acceptor {
	int fd;
	atomic_bool stop;
	pthread_t th;
};

static void *acceptor_main(void *arg)
{
	struct tcp_acceptor *a = arg;
	struct pollfd p = {.fd = a->fd, .events = POLLIN};
	while (!atomic_load(&a->stop)) {
		if (poll(&p, 1, 20) != 1)
			continue;
		int c;
		while ((c = accept4(a->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
			close(c);
	}
	return NULL;
}

/* The server's half: accept and close on the baseline port in a thread
 * while the iWARP loop runs on this one. NULL: no baseline. */
struct tcp_acceptor *perf_connrate_tcp_serve(struct perf_sess *s)
{
	struct tcp_acceptor *a = calloc(1, sizeof(*a));
	if (!a || s->tcp_listen_fd < 0)
		goto fail;
	a->fd = s->tcp_listen_fd;
	/* The baseline's listener was made for one connection. */
	if (listen(a->fd, TCP_SLOTS_MAX) ||
	    fcntl(a->fd, F_SETFL, fcntl(a->fd, F_GETFL) | O_NONBLOCK) ||
	    pthread_create(&a->th, NULL, acceptor_main, a))
		goto fail;
	return a;
fail:
	perf_err(s, "TCP baseline acceptor: %s", strerror(errno));
	free(a);
	return NULL;
}

void perf_connrate_tcp_stop(struct tcp_acceptor *a)
{
	if (!a)
		return;
	atomic_store(&a->stop, true);
	pthread_join(a->th, NULL);
	free(a);
}
