/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw TCP connection to the peer. Nagle is off so that each send() is
 * its own segment: the segmentation cases rely on it. Every wait has a
 * deadline; a peer that closes is recorded as FIN or RST.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

uint64_t cf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *cf_io_str(int rc)
{
	switch (rc) {
	case CF_IO_OK: return "ok";
	case CF_IO_CLOSED: return "closed";
	case CF_IO_TIMEOUT: return "timed out";
	default: return "error";
	}
}

void cf_conn_init(struct cf_conn *k, struct cf_ctx *c)
{
	memset(k, 0, offsetof(struct cf_conn, in));
	k->c = c;
	k->fd = -1;
	k->in_len = 0;
	memset(k->msn, 0, sizeof(k->msn));
	k->peer_ird = 0;
	k->term_seen = 0;
}

void cf_conn_opened(struct cf_conn *k)
{
	int one = 1;

	setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	cf_pcap_open(k);
}

/* connect(2) bounded by ms: a peer whose listener stopped accepting (a
 * full backlog drops the SYNs) would otherwise hold the run for minutes.
 * The socket is blocking again afterwards. */
static int connect_within(int fd, const struct addrinfo *ai, unsigned ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int fl = fcntl(fd, F_GETFL), err = 0, rc;
	socklen_t l = sizeof(err);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -1;
	rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
	if (rc && errno == EINPROGRESS) {
		do
			rc = poll(&p, 1, (int)ms);
		while (rc < 0 && errno == EINTR);
		if (rc == 0)
			errno = ETIMEDOUT;
		else if (rc > 0 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l))
			errno = err;
		rc = rc > 0 && !err ? 0 : -1;
	}
	if (fcntl(fd, F_SETFL, fl))
		return -1;
	return rc;
}

/* One connect to HOST and the peer's current port (--server-cmd may move
 * it); 0, or the errno (logged, the socket closed), or -1. */
static int connect_once(struct cf_conn *k, struct cf_ctx *c)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	const char *port = cf_server_port(c->o);
	int err = getaddrinfo(c->o->host, port, &hints, &ai);

	if (err) {
		cf_log_add(&c->r->log, "resolve %s: %s", c->o->host, gai_strerror(err));
		return -1;
	}
	k->fd = socket(ai->ai_family, SOCK_STREAM, 0);
	err = k->fd >= 0 && !connect_within(k->fd, ai, c->o->wait_ms) ? 0 : errno ? errno : EIO;
	freeaddrinfo(ai);
	if (!err)
		return 0;
	cf_log_add(&c->r->log, "connect %s:%s: %s", c->o->host, port, strerror(err));
	cf_close(k);
	return err;
}

int cf_connect(struct cf_conn *k, struct cf_ctx *c)
{
	int rc;

	cf_conn_init(k, c);
	if (!c->o->host) {
		cf_log_add(&c->r->log, "no HOST given: this case connects to the peer");
		return -1;
	}
	rc = connect_once(k, c);
	if (rc == ECONNREFUSED && !cf_server_restart(c))
		rc = connect_once(k, c);
	if (rc)
		return -1;
	cf_conn_opened(k);
	return 0;
}

void cf_close(struct cf_conn *k)
{
	cf_pcap_close(k);
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

int cf_send(struct cf_conn *k, const uint8_t *p, size_t n, size_t seg)
{
	size_t piece = seg ? seg : n;

	cf_log_hex(&k->c->r->log, "tx", p, n);
	if (seg && seg < n)
		cf_log_add(&k->c->r->log, "   (sent %zu octets per segment)", seg);
	while (n) {
		size_t want = n < piece ? n : piece;
		ssize_t w = send(k->fd, p, want, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			cf_log_add(&k->c->r->log, "send: %s", strerror(errno));
			return CF_IO_ERR;
		}
		cf_pcap_data(k, false, p, (size_t)w);
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int ms_left(uint64_t deadline)
{
	uint64_t now = cf_now_ns();

	return deadline <= now ? 0 : (int)((deadline - now + 999999) / 1000000);
}

int cf_fill(struct cf_conn *k, uint64_t deadline_ns)
{
	struct pollfd p = {.fd = k->fd, .events = POLLIN};
	ssize_t n;

	if (k->eof || k->reset)
		return CF_IO_CLOSED;
	if (k->in_len == sizeof(k->in))
		return CF_IO_ERR;
	for (;;) {
		int rc = poll(&p, 1, ms_left(deadline_ns));

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0)
			return CF_IO_TIMEOUT;
		break;
	}
	n = recv(k->fd, k->in + k->in_len, sizeof(k->in) - k->in_len, 0);
	if (n > 0) {
		cf_pcap_data(k, true, k->in + k->in_len, (size_t)n);
		k->in_len += (size_t)n;
		return CF_IO_OK;
	}
	cf_pcap_end(k, true, n < 0);
	if (n == 0) {
		k->eof = true;
		cf_log_add(&k->c->r->log, "rx FIN (the peer closed)");
	} else {
		k->reset = true;
		cf_log_add(&k->c->r->log, "rx reset: %s", strerror(errno));
	}
	return CF_IO_CLOSED;
}

int cf_wait_close(struct cf_conn *k, unsigned ms)
{
	uint64_t deadline = cf_now_ns() + (uint64_t)ms * 1000000u;

	for (;;) {
		int rc = cf_fill(k, deadline);

		if (rc == CF_IO_CLOSED || rc == CF_IO_TIMEOUT)
			return rc;
		if (rc == CF_IO_ERR)
			k->in_len = 0; /* drop what a closing peer still sends */
	}
}
