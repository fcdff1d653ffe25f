/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Who receives under iwarp-run (run by tests/compat_poll.sh, compiled
 * against rdma-core's headers): one process, a connection to itself over
 * 127.0.0.1 made with rdma_cm, and PINGS Sends back and forth, each
 * awaited by busy-polling ibv_poll_cq as perftest does.
 *   compat_poll poll [LOOPS]   (default, or IWARP_POLL=1): the polling
 *       thread receives, so the loop threads sleep through the run: they
 *       are woken fewer than PINGS / 2 times (each ping-pong is two
 *       messages that a receiving loop would each be woken for);
 *   compat_poll loop [LOOPS]   (IWARP_POLL=0): the loop threads receive,
 *       woken at least PINGS / 2 times;
 *   LOOPS: the process has that many loop threads (IWARP_LOOPS);
 *   compat_poll badloops       (IWARP_LOOPS not a count): ibv_open_device
 *       fails with EINVAL.
 * Wake-ups are the loop threads' voluntary context switches
 * (/proc/self/task/TID/status). Exits 0 when all holds, 1 otherwise.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat_self.h"

#define PINGS 2000
#define LEN 64

struct side {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[LEN];
};

static struct side tgt, ini;
static struct ibv_pd *pd;

/* The loop threads ("iwarp-loop", "iwarp-loop-<i>"): how many, and the
 * sum of their voluntary context switches. */
static unsigned long loop_wakes(unsigned *threads)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *t;
	unsigned long sum = 0;
	char path[300], line[128];

	CHECK(d, "opendir /proc/self/task");
	*threads = 0;
	while ((t = readdir(d)) != NULL) {
		if (t->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", t->d_name);
		FILE *f = fopen(path, "r");
		int loop = 0;
		while (f && fgets(line, sizeof(line), f)) {
			if (strncmp(line, "Name:\tiwarp-loop", 16) == 0)
				loop = 1;
			else if (loop && strncmp(line, "voluntary_ctxt_switches:", 24) == 0)
				sum += strtoul(line + 24, NULL, 10);
		}
		*threads += (unsigned)loop;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wake-ups a polled loop may take that depend on time, not on messages:
 * while pollers visit a connection its loop looks again after a pause of
 * at least 1 ms (lib/io/cm_conn.c on_pause), and one read event may come
 * between two looks, so at most two wakes per connection (two here) per
 * millisecond. A busy machine that keeps this thread from polling makes
 * the run longer and the loop look more often: without this allowance the
 * check failed under a load average of 20. */
static unsigned long paced_wakes(double secs)
{
	return 2 * 2 * (unsigned long)(secs * 1000.0 + 1.0) + 10;
}

/* One completion of opcode op from cq (busy polling, 10 s at most). */
static void poll1(struct ibv_cq *cq, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc;
	double end = now() + 10;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now() < end)
		;
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == op, what);
}

static void post_recv(struct side *s)
{
	struct ibv_sge sg = {(uintptr_t)s->buf, LEN, s->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sg, .num_sge = 1}, *bad;

	CHECK(ibv_post_recv(s->id->qp, &wr, &bad) == 0, "ibv_post_recv");
}

static void make_qp(struct side *s)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					     .max_send_sge = 1, .max_recv_sge = 1}};

	s->cq = ibv_create_cq(s->id->verbs, 16, NULL, NULL, 0);
	CHECK(s->cq, "ibv_create_cq");
	a.send_cq = a.recv_cq = s->cq;
	CHECK(rdma_create_qp(s->id, pd, &a) == 0, "rdma_create_qp");
	s->mr = ibv_reg_mr(pd, s->buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(s->mr, "ibv_reg_mr");
	post_recv(s);
}

static void make_qp_cb(struct rdma_cm_id *id, bool is_tgt)
{
	struct side *s = is_tgt ? &tgt : &ini;

	s->id = id;
	make_qp(s);
}

/* from sends to to; to's receive completes and is posted again. */
static void ping(struct side *from, struct side *to)
{
	struct ibv_sge sg = {(uintptr_t)from->buf, LEN, from->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	CHECK(ibv_post_send(from->id->qp, &wr, &bad) == 0, "ibv_post_send");
	poll1(to->cq, IBV_WC_RECV, "the Send's receive");
	post_recv(to);
	poll1(from->cq, IBV_WC_SEND, "the Send's completion");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "poll";
	unsigned want_loops = argc > 2 ? (unsigned)atoi(argv[2]) : 0, loops;

	if (strcmp(mode, "badloops") == 0) {
		struct ibv_device **l = ibv_get_device_list(NULL);
		CHECK(l && l[0], "ibv_get_device_list");
		errno = 0;
		CHECK(!ibv_open_device(l[0]) && errno == EINVAL,
		      "ibv_open_device with a bad IWARP_LOOPS fails with EINVAL");
		ibv_free_device_list(l);
		printf("ok: a bad IWARP_LOOPS is refused\n");
		return 0;
	}
	struct rdma_event_channel *ec = rdma_create_event_channel();
	CHECK(ec, "rdma_create_event_channel");
	compat_connect_self(ec, 1, &pd, &ini.id, &tgt.id, make_qp_cb);
	for (int i = 0; i < 10; i++) {
		ping(&ini, &tgt);
		ping(&tgt, &ini);
	}
	unsigned long before = loop_wakes(&loops);
	double t0 = now();
	for (int i = 0; i < PINGS / 2; i++) {
		ping(&ini, &tgt);
		ping(&tgt, &ini);
	}
	unsigned long wakes = loop_wakes(&loops) - before;
	unsigned long paced = paced_wakes(now() - t0);
	printf("%s: %u loop threads, woken %lu times for %d Sends (at most %lu paced by time)\n",
	       mode, loops, wakes, PINGS, paced);
	CHECK(!want_loops || loops == want_loops, "the number of loop threads (IWARP_LOOPS)");
	/* A loop thread that finds the next Send already waiting when it is
	 * done with one does not sleep in between, so the voluntary switches
	 * count fewer wakes than Sends on a loaded machine: 799 for 2,000 in
	 * CI's ASan tree while make -j2 check and a fuzz campaign ran (2,000
	 * alone, ASan or not). A quarter of the Sends still tells the loops'
	 * receiving (about one wake per Send) from the pollers' (tens). */
	if (strcmp(mode, "loop") == 0)
		CHECK(wakes >= PINGS / 4, "the loop threads received (IWARP_POLL=0)");
	else
		CHECK(wakes < PINGS / 2 + paced, "ibv_poll_cq received, not the loop threads");
	rdma_disconnect(ini.id);
	printf("ok: %s\n", mode);
	return 0;
}
