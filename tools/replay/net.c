/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sockets for a live replay: address parsing, a connect and an accept that
 * never wait longer than the timeout, TCP_NODELAY so that each write the
 * replay makes leaves as its own segment (--split 1 is meant literally).
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "replay.h"

uint64_t rp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Split "host:port", "[v6]:port" or "port" into its parts. */
static int split_spec(const char *spec, bool listen, char *host, size_t hcap, const char **port)
{
	const char *colon;

	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= hcap)
			return -1;
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = '\0';
		*port = close + 2;
		return 0;
	}
	colon = strrchr(spec, ':');
	if (!colon) {
		if (!listen)
			return -1;
		snprintf(host, hcap, "0.0.0.0");
		*port = spec;
		return 0;
	}
	if ((size_t)(colon - spec) >= hcap)
		return -1;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	*port = colon + 1;
	return 0;
}

int rp_net_addr(const char *spec, bool listen, struct sockaddr_storage *ss, socklen_t *len,
		char *err, size_t errcap)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char host[256];
	const char *port;
	uint64_t p;
	int rc;

	if (split_spec(spec, listen, host, sizeof(host), &port) || !rp_parse_u64(port, 65535, &p)) {
		snprintf(err, errcap, "'%s': want %s", spec,
			 listen ? "[ADDR:]PORT" : "ADDR:PORT (or [IPv6]:PORT)");
		return -1;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc || !res) {
		snprintf(err, errcap, "'%s': %s", host, rc ? gai_strerror(rc) : "no address");
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int prepare(int fd)
{
	int one = 1;

	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		return -1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int wait_fd(int fd, short events, uint32_t timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;

	do
		n = poll(&p, 1, (int)timeout_ms);
	while (n < 0 && errno == EINTR);
	return n;
}

int rp_net_connect(const struct sockaddr_storage *ss, socklen_t len, uint32_t timeout_ms,
		   char *err, size_t errcap)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (fd < 0 || prepare(fd)) {
		snprintf(err, errcap, "socket: %s", strerror(errno));
		goto fail;
	}
	if (connect(fd, (const struct sockaddr *)ss, len) && errno != EINPROGRESS) {
		snprintf(err, errcap, "connect: %s", strerror(errno));
		goto fail;
	}
	if (wait_fd(fd, POLLOUT, timeout_ms) <= 0) {
		snprintf(err, errcap, "connect: no answer within %u ms", timeout_ms);
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		snprintf(err, errcap, "connect: %s", strerror(soerr ? soerr : errno));
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* On stderr, as stdout may be JSON Lines. Scripts wait for this line and
 * read the port from it (port 0 lets the kernel choose one). */
static void report_listening(int lfd, uint32_t timeout_ms)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct rp_ep ep = {0};

	if (getsockname(lfd, (struct sockaddr *)&ss, &len) == 0) {
		ep.family = ss.ss_family;
		if (ss.ss_family == AF_INET6) {
			memcpy(ep.addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
			ep.port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		} else {
			memcpy(ep.addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
			ep.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		}
	}
	char where[80];
	rp_ep_str(&ep, where, sizeof(where));
	fprintf(stderr, "iwarp-replay: listening on %s, waiting at most %u ms for the initiator\n",
		where, timeout_ms);
}

int rp_net_accept(const struct sockaddr_storage *ss, socklen_t len, uint32_t timeout_ms,
		  char *err, size_t errcap)
{
	int one = 1, fd, lfd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (const struct sockaddr *)ss, len) || listen(lfd, 1)) {
		snprintf(err, errcap, "listen: %s", strerror(errno));
		goto fail;
	}
	report_listening(lfd, timeout_ms);
	if (wait_fd(lfd, POLLIN, timeout_ms) <= 0) {
		snprintf(err, errcap, "no connection within %u ms", timeout_ms);
		goto fail;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0 || prepare(fd)) {
		snprintf(err, errcap, "accept: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	close(lfd);
	return fd;
fail:
	if (lfd >= 0)
		close(lfd);
	return -1;
}
