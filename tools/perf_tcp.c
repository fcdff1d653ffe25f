/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw TCP baseline (--tcp): the same sizes, count or duration and depth
 * over plain TCP between the same two hosts, right after the iWARP run.
 *
 *  - Bandwidth: a connection per size and direction (write and send: client
 *    to server; read: server to client; -b: both at once). The sender
 *    writes messages of the size back to back but keeps at most depth of
 *    them unacknowledged: the receiver returns its count of messages (u64,
 *    big-endian) every depth/4 of them and at the end. The sender's clock
 *    runs from its first write to the last acknowledgement, so depth means
 *    what it means for RDMA (1 is stop-and-wait). With -l N the sender
 *    writes up to N messages (as the depth allows) in one writev, as the
 *    iWARP run posts N WRs in one call and the library writes them in one
 *    sendmsg: without it -l batched only the iWARP side. End: the sender
 *    shuts down its side.
 *  - Latency: the client writes size octets, the server echoes them; half
 *    the time between the client's writes is a sample, as for RDMA. When
 *    the iWARP run busy-polls (--poll) both ends read with MSG_DONTWAIT in
 *    a loop instead of sleeping in poll(2), so the ratio compares the same
 *    way of waiting. read_lat: the client writes a request of REQ_LEN
 *    octets (an RDMA Read Request's headers are 28), the server answers
 *    with size octets, and a sample is the whole round trip, as for the
 *    Read.
 * TCP_NODELAY on every socket: libiwarp hands each FPDU to TCP at once too.
 * Both ends need this code, so a perftest peer gets no baseline.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "perf.h"

#define STALL_MS 30000
#define REQ_LEN 16

int perf_tcp_listen(struct perf_sess *s)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(s->o.role == ROLE_LOOPBACK ? INADDR_LOOPBACK : INADDR_ANY);
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, al) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		perf_err(s, "TCP baseline listener: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	s->tcp_listen_fd = fd;
	s->tcp_port = ntohs(a.sin_port);
	return 0;
}

static int wait_io(int fd, short ev)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int n;
	do
		n = poll(&p, 1, STALL_MS);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

/* n messages of len octets, all from buf, in as few writes as the socket
 * takes: one writev when it takes them all. */
static int write_msgs(int fd, const uint8_t *buf, size_t len, uint32_t n)
{
	struct iovec iov[PERF_MAX_POST_LIST];
	for (uint32_t i = 0; i < n; i++)
		iov[i] = (struct iovec){.iov_base = (void *)buf, .iov_len = len};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = n};
	while (m.msg_iovlen) {
		/* One message: send(2), the plain socket writer's call (the
		 * baseline of -l 1 and of latency stays what it was). */
		ssize_t w = m.msg_iovlen == 1
				    ? send(fd, m.msg_iov->iov_base, m.msg_iov->iov_len, MSG_NOSIGNAL)
				    : sendmsg(fd, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN && !wait_io(fd, POLLOUT))
			continue;
		if (w <= 0)
			return -1;
		for (size_t k = (size_t)w; k;) { /* drop what went */
			size_t d = k < m.msg_iov->iov_len ? k : m.msg_iov->iov_len;
			m.msg_iov->iov_base = (uint8_t *)m.msg_iov->iov_base + d;
			m.msg_iov->iov_len -= d;
			k -= d;
			if (!m.msg_iov->iov_len) {
				m.msg_iov++;
				m.msg_iovlen--;
			}
		}
	}
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	return write_msgs(fd, p, len, 1);
}

/* Nothing to read yet (busy): spin, up to the stall limit. */
static bool spin_on(ssize_t r, double *since)
{
	if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		return false;
	double now = perf_now();
	if (*since == 0)
		*since = now;
	return now - *since < STALL_MS / 1000.0;
}

/* Exactly len octets; 1 at a clean end of stream before the first. busy:
 * spin on MSG_DONTWAIT instead of sleeping in poll(2). */
static int read_all(int fd, uint8_t *p, size_t len, bool busy)
{
	size_t got = 0;
	double since = 0;
	while (got < len) {
		if (!busy && wait_io(fd, POLLIN))
			return -1;
		ssize_t r = recv(fd, p + got, len - got, busy ? MSG_DONTWAIT : 0);
		if ((r < 0 && errno == EINTR) || (busy && spin_on(r, &since)))
			continue;
		if (r == 0 && got == 0)
			return 1;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int tcp_open(struct perf_sess *s, const struct sockaddr *peer)
{
	int fd;
	if (s->server) {
		if (wait_io(s->tcp_listen_fd, POLLIN))
			return -1;
		fd = accept(s->tcp_listen_fd, NULL, NULL);
	} else {
		struct sockaddr_storage a;
		memcpy(&a, peer, sizeof(a));
		((struct sockaddr_in *)&a)->sin_port = htons(s->peer_tcp_port);
		fd = socket(peer->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		socklen_t al = peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							   : sizeof(struct sockaddr_in);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, al)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		perf_err(s, "TCP baseline connection: %s", strerror(errno));
	else
		nodelay(fd);
	return fd;
}

struct stream {
	struct perf_sess *s;
	int fd;
	uint64_t size;
	double bw;      /* result */
	int rc;
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The acknowledgements coming back: 8-octet counts, maybe split. */
struct acks {
	uint8_t b[8];
	int n;
	uint64_t acked;
};

/* Take what has come (wait for some when block): 0, 1 at the end of the
 * stream, -1 on error. */
static int take_acks(int fd, struct acks *a, bool block)
{
	uint8_t tmp[64];
	for (;;) {
		if (block && wait_io(fd, POLLIN))
			return -1;
		ssize_t r = recv(fd, tmp, sizeof(tmp), block ? 0 : MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r == 0 ? 1 : -1;
		for (ssize_t i = 0; i < r; i++) {
			a->b[a->n++] = tmp[i];
			if (a->n == 8) {
				a->acked = get64(a->b);
				a->n = 0;
			}
		}
		return 0;
	}
}

/* How many messages the next write carries: up to -l, within the depth
 * and (counted) the messages left. */
static uint32_t burst(const struct perf_opts *o, uint64_t sent, uint64_t acked)
{
	uint64_t n = o->post_list ? o->post_list : 1, room = o->tx_depth - (sent - acked);
	if (n > room)
		n = room;
	if (o->duration <= 0 && n > o->iters - sent)
		n = o->iters - sent;
	return (uint32_t)n;
}

static void *tcp_send(void *arg)
{
	struct stream *st = arg;
	const struct perf_opts *o = &st->s->o;
	uint8_t *buf = calloc(1, st->size);
	struct acks a = {0};
	uint64_t sent = 0;
	st->rc = -1;
	if (!buf)
		return NULL;
	double t0 = perf_now(), end = t0 + o->duration;
	while (o->duration > 0 ? perf_now() < end : sent < o->iters) {
		while (sent - a.acked >= o->tx_depth)
			if (take_acks(st->fd, &a, true))
				goto out;
		uint32_t n = burst(o, sent, a.acked);
		if (write_msgs(st->fd, buf, st->size, n) || take_acks(st->fd, &a, false) < 0)
			goto out;
		sent += n;
	}
	shutdown(st->fd, SHUT_WR);
	while (a.acked < sent)
		if (take_acks(st->fd, &a, true))
			goto out;
	double t = perf_now() - t0;
	st->bw = t > 0 ? (double)sent * (double)st->size / t : 0;
	st->rc = 0;
out:
	free(buf);
	return NULL;
}

static void *tcp_recv(void *arg)
{
	struct stream *st = arg;
	uint32_t every = st->s->o.tx_depth / 4 ? st->s->o.tx_depth / 4 : 1;
	size_t cap = st->size < 65536 ? 65536 : st->size;
	uint8_t *buf = malloc(cap), a[8];
	uint64_t bytes = 0, told = 0;
	double t0 = 0, t1 = 0;
	st->rc = -1;
	if (!buf)
		return NULL;
	for (;;) {
		if (wait_io(st->fd, POLLIN))
			goto out;
		ssize_t r = recv(st->fd, buf, cap, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out;
		double now = perf_now();
		if (r == 0)
			break;
		if (!bytes)
			t0 = now;
		t1 = now;
		bytes += (uint64_t)r;
		uint64_t msgs = bytes / st->size;
		if (msgs - told >= every) {
			told = msgs;
			put64(a, msgs);
			if (write_all(st->fd, a, 8))
				goto out;
		}
	}
	put64(a, bytes / st->size);
	if (write_all(st->fd, a, 8))
		goto out;
	st->bw = t1 > t0 ? (double)bytes / (t1 - t0) : 0;
	st->rc = 0;
out:
	free(buf);
	return NULL;
}

/* One size: the directions of the test, both with -b. Returns the
 * client's view: what it sends plus what it receives. */
static int tcp_bw(struct perf_sess *s, const struct sockaddr *peer, uint64_t size, double *bw)
{
	bool c2s = s->o.test != PT_READ || s->o.bidir, s2c = s->o.test == PT_READ || s->o.bidir;
	struct stream st[2] = {{.s = s, .fd = -1, .size = size}, {.s = s, .fd = -1, .size = size}};
	pthread_t th[2];
	bool started[2] = {false, false};
	int rc = 0;
	/* Connection 0 carries client to server, 1 the reverse: opened in that
	 * order on both sides. */
	for (int i = 0; i < 2 && !rc; i++) {
		if (!(i == 0 ? c2s : s2c))
			continue;
		st[i].fd = tcp_open(s, peer);
		if (st[i].fd < 0)
			rc = -1;
	}
	for (int i = 0; i < 2 && !rc; i++) {
		if (st[i].fd < 0)
			continue;
		bool sending = (i == 0) != s->server;
		started[i] = !pthread_create(&th[i], NULL, sending ? tcp_send : tcp_recv, &st[i]);
		rc = started[i] ? 0 : -1;
	}
	*bw = 0;
	for (int i = 0; i < 2; i++) {
		if (started[i]) {
			pthread_join(th[i], NULL);
			rc |= st[i].rc;
			*bw += st[i].bw;
		}
		if (st[i].fd >= 0)
			close(st[i].fd);
	}
	if (rc)
		perf_err(s, "TCP baseline at %llu octets failed", (unsigned long long)size);
	return rc;
}

/* The server's side of a latency baseline: answer every message of in
 * octets with out octets, until the client's end of stream. */
static int lat_serve(int fd, uint8_t *buf, size_t in, size_t out, bool busy)
{
	int r;
	while (!(r = read_all(fd, buf, in, busy)))
		if (write_all(fd, buf, out))
			return -1;
	return r == 1 ? 0 : -1;
}

/* The client's: samples of one exchange each (a round trip over div). */
static int lat_ask(struct perf_sess *s, int fd, uint8_t *buf, size_t in, size_t out, double div,
		   double *typ)
{
	struct perf_samples posts = {0}, d = {0};
	const struct perf_opts *o = &s->o;
	double end = perf_now() + o->duration;
	bool busy = perf_polling(o);
	int rc = 0;
	for (uint64_t i = 0; !rc && (o->duration > 0 ? perf_now() < end : i < o->iters); i++)
		rc = perf_samples_add(&posts, perf_now()) || write_all(fd, buf, out) ||
		     read_all(fd, buf, in, busy);
	perf_samples_add(&posts, perf_now());
	shutdown(fd, SHUT_WR);
	for (size_t i = 1; !rc && i < posts.n; i++)
		rc = perf_samples_add(&d, (posts.v[i] - posts.v[i - 1]) * 1e6 / div);
	struct perf_result r = {0};
	perf_lat_summary(&d, &r);
	*typ = r.t_typ;
	perf_samples_free(&posts);
	perf_samples_free(&d);
	return rc;
}

static int tcp_lat(struct perf_sess *s, const struct sockaddr *peer, uint64_t size, double *typ)
{
	int fd = tcp_open(s, peer);
	uint8_t *buf = calloc(1, size > REQ_LEN ? size : REQ_LEN);
	int rc = fd < 0 || !buf ? -1 : 0;
	/* What the client writes, what comes back. */
	bool read = s->o.test == PT_READ_LAT;
	size_t ask = read ? REQ_LEN : size;
	if (!rc && s->server)
		rc = lat_serve(fd, buf, ask, size, perf_polling(&s->o));
	else if (!rc)
		rc = lat_ask(s, fd, buf, size, ask, read ? 1 : 2, typ);
	if (rc)
		perf_err(s, "TCP latency baseline at %llu octets failed", (unsigned long long)size);
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

int perf_tcp_run(struct perf_sess *s, const struct sockaddr *peer, struct perf_result *rows,
		 int nrows)
{
	for (int i = 0; i < nrows; i++) {
		struct perf_result *r = &rows[i];
		int rc = perf_is_lat(s->o.test) ? tcp_lat(s, peer, r->bytes, &r->tcp_typ)
						 : tcp_bw(s, peer, r->bytes, &r->tcp_bw);
		if (rc)
			return -1;
		r->tcp = !s->server;
	}
	return 0;
}
