/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw-TCP baseline of iwarp-nvmf-perf: the same load through plain
 * TCP sockets, shaped like NVMe/TCP with the data inline (a 64-octet
 * command, write data right behind it; a 16-octet response, read data
 * right before it), against a RAM store served by --tcp-server (a thread
 * per connection, blocking I/O, as a kernel target's per-queue worker).
 * No protocol beyond that: it measures what TCP alone costs, so
 * iwarp-nvmf-perf's figures can be put beside it from the same machine.
 * Like the host, the client is one thread that polls every socket.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nvmf.h"
#include "nvmf_le.h"
#include "perf_load.h"
#include "ram_map.h"

#define TCP_STORE (64u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int full(int fd, void *buf, size_t len, bool wr)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------ server */

static uint8_t *store;

/* Command: opcode, cid, offset (octets), length; write data follows. */
static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t cmd[NVMF_CMD_SIZE], rsp[NVMF_CQE_SIZE] = {0};
	while (full(fd, cmd, sizeof(cmd), false) == 0) {
		uint64_t off = nvmf_le_get(cmd + 8, 8) % TCP_STORE;
		uint32_t len = (uint32_t)nvmf_le_get(cmd + 16, 4);
		if (len > TCP_STORE - off)
			break;
		memcpy(rsp + 12, cmd + 2, 2); /* the command ID */
		if (cmd[0] == NVME_IO_WRITE && full(fd, store + off, len, false))
			break;
		if (cmd[0] == NVME_IO_READ && full(fd, store + off, len, true))
			break;
		if (full(fd, rsp, sizeof(rsp), true))
			break;
	}
	close(fd);
	return NULL;
}

int tcp_server(const char *addr, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);
	store = ram_map(TCP_STORE); /* as iwarp-nvmet's RAM namespaces */
	if (lfd < 0 || !store || inet_pton(AF_INET, addr ? addr : "0.0.0.0", &sin.sin_addr) != 1)
		return 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	socklen_t sl = sizeof(sin);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl)) {
		perror("iwarp-nvmf-perf: tcp server");
		return 1;
	}
	printf("iwarp-nvmf-perf: tcp baseline server listening on %s:%u\n", addr ? addr : "0.0.0.0",
	       ntohs(sin.sin_port));
	fflush(stdout);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pthread_t t;
		if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
}

/* ------------------------------------------------------------ client */

struct slot {
	uint64_t t0;
	bool read;
};

struct tconn {
	int fd;
	uint8_t *tx;           /* commands (and write data) not yet sent */
	size_t tx_len, tx_off, tx_cap;
	uint8_t *rx;
	size_t rx_len;
	struct slot *slots;    /* by command ID, in order: responses come in order */
	uint32_t head, tail, inflight;
	uint64_t next_unit;
};

struct tload {
	const struct load_opts *o;
	struct tconn *c;
	uint8_t *data;
	uint64_t rng, units, issued, done;
	bool stop;
	struct hist lat;
};

static uint64_t rnd(struct tload *l)
{
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return l->rng;
}

static void issue(struct tload *l, struct tconn *c)
{
	const struct load_opts *o = l->o;
	if (c->tx_off) { /* keep the unsent octets at the front: at most qd commands */
		memmove(c->tx, c->tx + c->tx_off, c->tx_len - c->tx_off);
		c->tx_len -= c->tx_off;
		c->tx_off = 0;
	}
	uint64_t unit = o->random ? rnd(l) % l->units : c->next_unit++ % l->units;
	bool read = rnd(l) % 100 < o->read_pct;
	uint8_t *cmd = c->tx + c->tx_len;
	memset(cmd, 0, NVMF_CMD_SIZE);
	cmd[0] = read ? NVME_IO_READ : NVME_IO_WRITE;
	nvmf_le_put(cmd + 2, 2, c->tail);
	nvmf_le_put(cmd + 8, 8, unit * o->bs);
	nvmf_le_put(cmd + 16, 4, o->bs);
	c->tx_len += NVMF_CMD_SIZE;
	if (!read) {
		memcpy(c->tx + c->tx_len, l->data, o->bs);
		c->tx_len += o->bs;
	}
	c->slots[c->tail % o->qd] = (struct slot){.t0 = now_ns(), .read = read};
	c->tail++;
	c->inflight++;
	l->issued++;
}

/* Responses: [read data] then 16 octets, in order of the commands. */
static int consume(struct tload *l, struct tconn *c)
{
	const struct load_opts *o = l->o;
	size_t used = 0;
	while (c->inflight) {
		struct slot *s = &c->slots[c->head % o->qd];
		size_t need = NVMF_CQE_SIZE + (s->read ? o->bs : 0);
		if (c->rx_len - used < need)
			break;
		if (s->read)
			memcpy(l->data, c->rx + used, o->bs);
		used += need;
		hist_add(&l->lat, now_ns() - s->t0);
		c->head++;
		c->inflight--;
		l->done++;
		if (!l->stop)
			issue(l, c);
	}
	memmove(c->rx, c->rx + used, c->rx_len - used);
	c->rx_len -= used;
	return 0;
}

static int pump(struct tload *l, struct tconn *c)
{
	if (c->tx_off < c->tx_len) {
		ssize_t n = send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN)
			return -1;
		if (n > 0)
			c->tx_off += (size_t)n;
		if (c->tx_off == c->tx_len)
			c->tx_off = c->tx_len = 0;
	}
	size_t room = l->o->qd * (NVMF_CQE_SIZE + (size_t)l->o->bs) - c->rx_len;
	ssize_t n = recv(c->fd, c->rx + c->rx_len, room, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN))
		return -1;
	if (n > 0) {
		c->rx_len += (size_t)n;
		consume(l, c);
	}
	return 0;
}

/* As the iWARP host: sleep in poll(2) when nothing moved (100 ms at most). */
static void wait_socks(struct tload *l)
{
	struct pollfd p[64];
	uint32_t n = l->o->nq < 64 ? l->o->nq : 64;
	for (uint32_t i = 0; i < n; i++)
		p[i] = (struct pollfd){.fd = l->c[i].fd,
				       .events = (short)(POLLIN | (l->c[i].tx_len ? POLLOUT : 0))};
	poll(p, n, 100);
}

static int tcp_connect(const struct load_opts *o, struct tconn *c)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
	char port[8];
	int one = 1;
	snprintf(port, sizeof(port), "%u", o->port);
	if (getaddrinfo(o->addr, port, &hints, &res))
		return -1;
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	int rc = c->fd < 0 ? -1 : connect(c->fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (rc)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->tx_cap = (size_t)o->qd * (NVMF_CMD_SIZE + o->bs) * 2;
	c->tx = malloc(c->tx_cap);
	c->rx = malloc((size_t)o->qd * (NVMF_CQE_SIZE + o->bs));
	c->slots = calloc(o->qd, sizeof(*c->slots));
	return c->tx && c->rx && c->slots ? 0 : -1;
}

int tcp_run(const struct load_opts *o)
{
	static struct tload l;
	l.o = o;
	l.rng = now_ns() | 1;
	l.units = TCP_STORE / o->bs;
	l.data = calloc(1, o->bs);
	l.c = calloc(o->nq, sizeof(*l.c));
	for (uint32_t i = 0; i < o->nq; i++)
		if (!l.data || !l.c || tcp_connect(o, &l.c[i])) {
			fprintf(stderr, "iwarp-nvmf-perf: tcp baseline: cannot connect to %s:%u\n",
				o->addr, o->port);
			return 3;
		}
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(o->seconds * 1e9);
	for (uint32_t i = 0; i < o->nq; i++)
		for (uint32_t s = 0; s < o->qd; s++)
			issue(&l, &l.c[i]);
	uint32_t live = 1;
	while (live) {
		live = 0;
		uint64_t before = l.done;
		for (uint32_t i = 0; i < o->nq; i++) {
			if (pump(&l, &l.c[i]))
				return 1;
			live += l.c[i].inflight;
		}
		if (l.done == before && !o->spin)
			wait_socks(&l);
		if ((o->ios && l.issued >= o->ios) || (!o->ios && now_ns() >= end))
			l.stop = true;
	}
	double secs = (double)(now_ns() - t0) / 1e9, iops = (double)l.done / secs;
	printf("iwarp-nvmf-perf: tcp baseline %s bs=%u qd=%u queues=%u: %.0f IOPS, %.1f MB/s, "
	       "latency us p50 %.1f p99 %.1f p99.9 %.1f (%.2f s)\n",
	       o->mode, o->bs, o->qd, o->nq, iops, iops * o->bs / 1e6, hist_pct(&l.lat, 0.5) / 1e3,
	       hist_pct(&l.lat, 0.99) / 1e3, hist_pct(&l.lat, 0.999) / 1e3, secs);
	printf("RESULT ios=%llu iops=%.0f mbps=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f\n",
	       (unsigned long long)l.done, iops, iops * o->bs / 1e6, hist_pct(&l.lat, 0.5) / 1e3,
	       hist_pct(&l.lat, 0.99) / 1e3, hist_pct(&l.lat, 0.999) / 1e3);
	for (uint32_t i = 0; i < o->nq; i++) {
		close(l.c[i].fd);
		free(l.c[i].tx);
		free(l.c[i].rx);
		free(l.c[i].slots);
	}
	free(l.c);
	free(l.data);
	return 0;
}
