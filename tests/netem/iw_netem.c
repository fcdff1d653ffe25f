/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iw_netem: a userspace stand-in for tc netem, for tests/impair.sh.
 *
 * The kernels CI runs on have no sch_netem, so the impairments are made
 * here: one TUN device in each of two network namespaces (created by the
 * caller with `ip netns add`), given point-to-point addresses, and this
 * process forwarding IP packets between the two fds. On the way, per
 * direction: loss, reordering (a packet is held and sent after the next
 * one), duplication, delay with jitter, a rate limit; both devices get
 * the MTU asked for.
 *
 * Deterministic: every decision comes from a PRNG seeded with --seed, one
 * stream per direction, so the same packet sequence meets the same fate
 * again (the sequence itself depends on the TCP stacks' timing). Bounded:
 * it exits after --duration seconds, or at SIGTERM/SIGINT, and prints its
 * counters then. "ready" on stdout says the link is up.
 *
 * Not installed: it needs root and makes devices; where sch_netem exists
 * tc does the same job. A test tool only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PKT 65536
#define MAX_QUEUED 8192 /* packets in flight inside us; more are dropped */
#define DEV_NAME "iwn0"

/* What one direction does to the packets that cross it. */
struct impair {
	double loss, reorder, dup;  /* percentages */
	double delay_ms, jitter_ms; /* jitter: uniform in [-j, +j] */
	double rate_bps;            /* 0: unlimited */
	double hold_ms;             /* a held packet goes anyway after this */
};

struct counters {
	uint64_t received, forwarded, dropped, duplicated, reordered, overflow, write_err;
};

struct pkt {
	uint64_t due_ns, seq;
	int dir;
	uint16_t len;
	uint8_t data[];
};

struct dir {
	struct impair im;
	struct counters c;
	uint64_t rng;
	uint64_t link_free_ns; /* the rate limit's next free instant */
	struct pkt *held;      /* a packet kept back for reordering */
	uint64_t held_until_ns;
	int in_fd, out_fd;
	const char *name;
};

struct heap {
	struct pkt *v[MAX_QUEUED];
	size_t n;
	uint64_t seq;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: small, fast, and the same on every machine. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, 1). */
static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / (double)(1ULL << 53);
}

static bool chance(uint64_t *s, double percent)
{
	return percent > 0 && rng_unit(s) * 100.0 < percent;
}

/* ------------------------------------------------------------ the queue */

static bool pkt_before(const struct pkt *a, const struct pkt *b)
{
	return a->due_ns != b->due_ns ? a->due_ns < b->due_ns : a->seq < b->seq;
}

static void heap_swap(struct heap *h, size_t i, size_t j)
{
	struct pkt *t = h->v[i];
	h->v[i] = h->v[j];
	h->v[j] = t;
}

static bool heap_push(struct heap *h, struct pkt *p)
{
	if (h->n == MAX_QUEUED)
		return false;
	p->seq = h->seq++;
	size_t i = h->n++;
	h->v[i] = p;
	while (i && pkt_before(h->v[i], h->v[(i - 1) / 2])) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	return true;
}

static struct pkt *heap_pop(struct heap *h)
{
	struct pkt *top = h->v[0];
	h->v[0] = h->v[--h->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && pkt_before(h->v[l], h->v[m]))
			m = l;
		if (r < h->n && pkt_before(h->v[r], h->v[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
	return top;
}

/* ----------------------------------------------------------- the policy */

/* When a packet that arrives now leaves: delay, jitter, then the rate
 * limit's serialisation behind the packets before it. */
static uint64_t departure(struct dir *d, uint64_t now, uint16_t len)
{
	double ms = d->im.delay_ms;
	if (d->im.jitter_ms > 0)
		ms += (rng_unit(&d->rng) * 2 - 1) * d->im.jitter_ms;
	uint64_t due = now + (uint64_t)(ms > 0 ? ms * 1e6 : 0);
	if (d->im.rate_bps > 0) {
		if (due < d->link_free_ns)
			due = d->link_free_ns;
		due += (uint64_t)(len * 8.0 / d->im.rate_bps * 1e9);
		d->link_free_ns = due;
	}
	return due;
}

static void enqueue(struct heap *h, struct dir *d, struct pkt *p)
{
	if (!heap_push(h, p)) {
		d->c.overflow++;
		free(p);
	}
}

static struct pkt *pkt_copy(const struct pkt *p)
{
	struct pkt *q = malloc(sizeof(*q) + p->len);
	if (q)
		memcpy(q, p, sizeof(*q) + p->len);
	return q;
}

/* A held packet goes right behind the one that overtook it. */
static void release_held(struct heap *h, struct dir *d, uint64_t due)
{
	struct pkt *p = d->held;
	d->held = NULL;
	p->due_ns = due > p->due_ns ? due : p->due_ns;
	enqueue(h, d, p);
}

/* One packet read from d's input: its fate. */
static void admit(struct heap *h, struct dir *d, struct pkt *p, uint64_t now)
{
	d->c.received++;
	if (chance(&d->rng, d->im.loss)) {
		d->c.dropped++;
		free(p);
		return;
	}
	p->due_ns = departure(d, now, p->len);
	if (chance(&d->rng, d->im.dup)) {
		struct pkt *q = pkt_copy(p);
		if (q) {
			d->c.duplicated++;
			enqueue(h, d, q);
		}
	}
	if (!d->held && chance(&d->rng, d->im.reorder)) {
		d->c.reordered++;
		d->held = p;
		d->held_until_ns = now + (uint64_t)(d->im.hold_ms * 1e6);
		return;
	}
	uint64_t due = p->due_ns;
	enqueue(h, d, p);
	if (d->held)
		release_held(h, d, due);
}

/* ---------------------------------------------------------------- the I/O */

/* Read what d's input has (a bounded batch, so the other side gets its turn). */
static void drain_input(struct heap *h, struct dir *dirs, int i_dir)
{
	struct dir *d = &dirs[i_dir];
	for (int i = 0; i < 64; i++) {
		struct pkt *p = malloc(sizeof(*p) + MAX_PKT);
		if (!p)
			return;
		ssize_t n = read(d->in_fd, p->data, MAX_PKT);
		if (n <= 0) {
			free(p);
			return;
		}
		p->len = (uint16_t)n;
		p->dir = i_dir;
		admit(h, d, p, now_ns());
	}
}

static void send_due(struct heap *h, struct dir *dirs, uint64_t now)
{
	while (h->n && h->v[0]->due_ns <= now) {
		struct pkt *p = heap_pop(h);
		struct dir *d = &dirs[p->dir];
		if (write(d->out_fd, p->data, p->len) == (ssize_t)p->len)
			d->c.forwarded++;
		else
			d->c.write_err++;
		free(p);
	}
	for (int i = 0; i < 2; i++)
		if (dirs[i].held && dirs[i].held_until_ns <= now)
			release_held(h, &dirs[i], now);
}

/* Milliseconds poll() may sleep: until the next due packet, held packet
 * or the end, rounded up. */
static int wait_ms(const struct heap *h, const struct dir *dirs, uint64_t now, uint64_t end)
{
	uint64_t next = end;
	if (h->n && h->v[0]->due_ns < next)
		next = h->v[0]->due_ns;
	for (int i = 0; i < 2; i++)
		if (dirs[i].held && dirs[i].held_until_ns < next)
			next = dirs[i].held_until_ns;
	if (next <= now)
		return 0;
	return (int)((next - now + 999999) / 1000000);
}

static void run(struct dir *dirs, double duration_s)
{
	static struct heap h;
	uint64_t end = now_ns() + (uint64_t)(duration_s * 1e9);
	struct pollfd pfd[2] = {{.fd = dirs[0].in_fd, .events = POLLIN},
				{.fd = dirs[1].in_fd, .events = POLLIN}};
	while (!stop) {
		uint64_t now = now_ns();
		if (now >= end)
			break;
		send_due(&h, dirs, now);
		if (poll(pfd, 2, wait_ms(&h, dirs, now, end)) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++)
			if (pfd[i].revents & POLLIN)
				drain_input(&h, dirs, i);
	}
	while (h.n)
		free(heap_pop(&h));
}

/* ------------------------------------------------------------ the setup */

static int fail(const char *what, const char *arg)
{
	fprintf(stderr, "iw_netem: %s %s: %s\n", what, arg, strerror(errno));
	return -1;
}

static int if_ioctl(int s, unsigned long req, struct ifreq *ifr, const char *what)
{
	if (ioctl(s, req, ifr) < 0)
		return fail(what, ifr->ifr_name);
	return 0;
}

static void set_in(struct sockaddr *sa, const char *ip)
{
	struct sockaddr_in *in = (struct sockaddr_in *)sa;
	memset(in, 0, sizeof(*in));
	in->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &in->sin_addr);
}

/* Address, peer, /32 mask, MTU, up: a point-to-point link. */
static int configure(const char *local, const char *peer, int mtu)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return fail("socket", "");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", DEV_NAME);
	int rc = 0;
	set_in(&ifr.ifr_addr, local);
	rc |= if_ioctl(s, SIOCSIFADDR, &ifr, "address of");
	set_in(&ifr.ifr_dstaddr, peer);
	rc |= if_ioctl(s, SIOCSIFDSTADDR, &ifr, "peer address of");
	set_in(&ifr.ifr_netmask, "255.255.255.255");
	rc |= if_ioctl(s, SIOCSIFNETMASK, &ifr, "netmask of");
	ifr.ifr_mtu = mtu;
	rc |= if_ioctl(s, SIOCSIFMTU, &ifr, "MTU of");
	rc |= if_ioctl(s, SIOCGIFFLAGS, &ifr, "flags of");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	rc |= if_ioctl(s, SIOCSIFFLAGS, &ifr, "bringing up");
	close(s);
	return rc ? -1 : 0;
}

static int open_tun(void)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fail("open", "/dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", DEV_NAME);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fail("TUNSETIFF", DEV_NAME);
		close(fd);
		return -1;
	}
	return fd;
}

/* A TUN device is born in the namespace of the thread that makes it: enter
 * ns, make and configure it there, come back. */
static int tun_in_ns(const char *ns, const char *local, const char *peer, int mtu)
{
	char path[256];
	snprintf(path, sizeof(path), strchr(ns, '/') ? "%s" : "/run/netns/%s", ns);
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int there = open(path, O_RDONLY | O_CLOEXEC);
	int fd = -1;
	if (home < 0 || there < 0)
		fail("open", home < 0 ? "/proc/self/ns/net" : path);
	else if (setns(there, CLONE_NEWNET) < 0)
		fail("setns", path);
	else {
		fd = open_tun();
		if (fd >= 0 && configure(local, peer, mtu) < 0) {
			close(fd);
			fd = -1;
		}
		if (setns(home, CLONE_NEWNET) < 0 && fd >= 0) {
			fail("setns back from", path);
			close(fd);
			fd = -1;
		}
	}
	if (home >= 0)
		close(home);
	if (there >= 0)
		close(there);
	return fd;
}

/* ----------------------------------------------------------- the options */

struct opts {
	const char *ns[2], *addr[2];
	int mtu;
	uint64_t seed;
	double duration;
};

static const char usage_text[] =
	"usage: iw_netem --ns-a NS --ns-b NS [--addr-a IP] [--addr-b IP] [--mtu N]\n"
	"                [--seed N] [--duration S] [--dir ab|ba|both]\n"
	"                [--loss P] [--reorder P] [--dup P] [--delay MS] [--jitter MS]\n"
	"                [--rate MBIT] [--hold MS]\n"
	"Makes a TUN device " DEV_NAME " in each namespace (addresses default to\n"
	"10.213.90.1 in A and 10.213.90.2 in B) and forwards between them. The\n"
	"impairment options apply to the direction(s) chosen by the --dir before\n"
	"them (default both). P is a percentage. Prints \"ready\" when the link\n"
	"is up and counters when it exits (after --duration, default 60 s, or at\n"
	"SIGTERM/SIGINT).\n";

enum { O_NSA = 256, O_NSB, O_ADA, O_ADB, O_MTU, O_SEED, O_DUR, O_DIR, O_LOSS, O_REORD,
       O_DUP, O_DELAY, O_JIT, O_RATE, O_HOLD };

static int num_arg(const char *arg, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || v < lo || v > hi) {
		fprintf(stderr, "iw_netem: '%s': a number from %g to %g\n", arg, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* Set one impairment field (by offset) on the chosen directions. */
static int set_field(struct dir *dirs, int which, size_t off, const char *arg, double hi)
{
	double v;
	if (num_arg(arg, 0, hi, &v))
		return -1;
	for (int i = 0; i < 2; i++)
		if (which & (1 << i))
			*(double *)((char *)&dirs[i].im + off) = v;
	return 0;
}

static int dir_arg(const char *arg, int *which)
{
	*which = !strcmp(arg, "ab") ? 1 : !strcmp(arg, "ba") ? 2 : !strcmp(arg, "both") ? 3 : 0;
	if (!*which)
		fprintf(stderr, "iw_netem: --dir %s: ab, ba or both\n", arg);
	return *which ? 0 : -1;
}

static int impair_opt(int c, const char *arg, struct dir *dirs, int which)
{
	switch (c) {
	case O_LOSS: return set_field(dirs, which, offsetof(struct impair, loss), arg, 100);
	case O_REORD: return set_field(dirs, which, offsetof(struct impair, reorder), arg, 100);
	case O_DUP: return set_field(dirs, which, offsetof(struct impair, dup), arg, 100);
	case O_DELAY: return set_field(dirs, which, offsetof(struct impair, delay_ms), arg, 10000);
	case O_JIT: return set_field(dirs, which, offsetof(struct impair, jitter_ms), arg, 10000);
	case O_HOLD: return set_field(dirs, which, offsetof(struct impair, hold_ms), arg, 10000);
	case O_RATE:
		if (set_field(dirs, which, offsetof(struct impair, rate_bps), arg, 1e5))
			return -1;
		for (int i = 0; i < 2; i++)
			if (which & (1 << i))
				dirs[i].im.rate_bps *= 1e6;
		return 0;
	default: fputs(usage_text, stderr); return -1;
	}
}

static int one_opt(int c, const char *arg, struct opts *o, struct dir *dirs, int *which)
{
	double v;
	switch (c) {
	case O_NSA: o->ns[0] = arg; return 0;
	case O_NSB: o->ns[1] = arg; return 0;
	case O_ADA: o->addr[0] = arg; return 0;
	case O_ADB: o->addr[1] = arg; return 0;
	case O_MTU: if (num_arg(arg, 68, 65535, &v)) return -1; o->mtu = (int)v; return 0;
	case O_SEED: if (num_arg(arg, 0, 1e18, &v)) return -1; o->seed = (uint64_t)v; return 0;
	case O_DUR: return num_arg(arg, 0.1, 86400, &o->duration);
	case O_DIR: return dir_arg(arg, which);
	case 'h': fputs(usage_text, stdout); exit(0);
	default: return impair_opt(c, arg, dirs, *which);
	}
}

static int parse(int argc, char **argv, struct opts *o, struct dir *dirs)
{
	static const struct option lo[] = {
		{"ns-a", required_argument, NULL, O_NSA}, {"ns-b", required_argument, NULL, O_NSB},
		{"addr-a", required_argument, NULL, O_ADA}, {"addr-b", required_argument, NULL, O_ADB},
		{"mtu", required_argument, NULL, O_MTU}, {"seed", required_argument, NULL, O_SEED},
		{"duration", required_argument, NULL, O_DUR}, {"dir", required_argument, NULL, O_DIR},
		{"loss", required_argument, NULL, O_LOSS}, {"reorder", required_argument, NULL, O_REORD},
		{"dup", required_argument, NULL, O_DUP}, {"delay", required_argument, NULL, O_DELAY},
		{"jitter", required_argument, NULL, O_JIT}, {"rate", required_argument, NULL, O_RATE},
		{"hold", required_argument, NULL, O_HOLD}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c, which = 3;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1)
		if (one_opt(c, optarg, o, dirs, &which))
			return -1;
	if (optind != argc || !o->ns[0] || !o->ns[1]) {
		fputs(usage_text, stderr);
		return -1;
	}
	return 0;
}

static void report(const struct dir *d)
{
	const struct counters *c = &d->c;
	printf("iw_netem: %s: received %llu forwarded %llu dropped %llu duplicated %llu "
	       "reordered %llu overflow %llu write_errors %llu\n",
	       d->name, (unsigned long long)c->received, (unsigned long long)c->forwarded,
	       (unsigned long long)c->dropped, (unsigned long long)c->duplicated,
	       (unsigned long long)c->reordered, (unsigned long long)c->overflow,
	       (unsigned long long)c->write_err);
}

int main(int argc, char **argv)
{
	struct opts o = {.addr = {"10.213.90.1", "10.213.90.2"}, .mtu = 1500, .seed = 1,
			 .duration = 60};
	struct dir dirs[2] = {{.name = "a->b", .im.hold_ms = 5}, {.name = "b->a", .im.hold_ms = 5}};
	if (parse(argc, argv, &o, dirs))
		return 2;
	int fd[2];
	for (int i = 0; i < 2; i++)
		if ((fd[i] = tun_in_ns(o.ns[i], o.addr[i], o.addr[!i], o.mtu)) < 0)
			return 1;
	for (int i = 0; i < 2; i++) {
		dirs[i].in_fd = fd[i];
		dirs[i].out_fd = fd[!i];
		/* Never 0 (xorshift's fixed point); distinct per direction. */
		dirs[i].rng = (o.seed * 2 + (uint64_t)i + 1) * 0x9E3779B97F4A7C15ULL | 1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready seed %llu mtu %d\n", (unsigned long long)o.seed, o.mtu);
	fflush(stdout);
	run(dirs, o.duration);
	for (int i = 0; i < 2; i++) {
		free(dirs[i].held);
		report(&dirs[i]);
	}
	return 0;
}
