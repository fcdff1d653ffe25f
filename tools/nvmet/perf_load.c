/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-nvmf-perf's load: bring a controller up (Connect, enable,
 * Identify, Set Features Number of Queues, I/O queue Connects), keep every
 * queue qd deep with reads and writes until the time or the I/O count is
 * reached, then shut the controller down.
 *
 * Verification without locks: the namespace is cut into one region per
 * (queue, slot), and a slot only ever touches its own region, so no two
 * commands in flight overlap. Each region remembers the version last
 * written to each of its blocks; a read checks the data against it.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nh.h"
#include "perf_load.h"

#define MAX_REPORTS 5

struct region {
	uint64_t base_lba;
	uint64_t next;        /* sequential cursor, in I/O units */
	uint32_t *ver;        /* version per unit; 0: unknown */
};

struct load {
	struct load_opts *o;  /* our copy: nq becomes what the target grants */
	struct nh h;
	struct nh_queue *qs;  /* [0] admin, [1..nq] I/O */
	uint32_t lbads;
	uint64_t nsze;
	uint32_t blocks_per_io;
	uint64_t units;       /* per region */
	struct region *regions;
	uint64_t rng;
	uint32_t next_version;
	bool stop;
	uint64_t issued, done, reads, writes, verified, errors, bad_data;
	struct hist lat;
	struct nh_req *ka;    /* keep alive in flight */
	uint64_t ka_next_ns;
};

static uint64_t rnd(struct load *l)
{
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return l->rng;
}

static int resolve(const struct load_opts *o, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	char port[8];
	snprintf(port, sizeof(port), "%u", o->port);
	int rc = getaddrinfo(o->addr, port, &hints, &res);
	if (rc) {
		fprintf(stderr, "iwarp-nvmf-perf: %s: %s\n", o->addr, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static void host_ids(struct nh *h, const struct load_opts *o, const char *subnqn)
{
	FILE *f = fopen("/dev/urandom", "r");
	if (!f || fread(h->hostid, 1, 16, f) != 16)
		memset(h->hostid, 0x5a, 16);
	if (f)
		fclose(f);
	if (o->hostnqn)
		snprintf(h->hostnqn, sizeof(h->hostnqn), "%s", o->hostnqn);
	else
		snprintf(h->hostnqn, sizeof(h->hostnqn),
			 "nqn.2014-08.org.nvmexpress:uuid:%02x%02x%02x%02x-0000-4000-8000-%02x%02x%02x%02x0000",
			 h->hostid[0], h->hostid[1], h->hostid[2], h->hostid[3], h->hostid[4],
			 h->hostid[5], h->hostid[6], h->hostid[7]);
	snprintf(h->subnqn, sizeof(h->subnqn), "%s", subnqn);
}

static int open_host(struct load *l, const char *subnqn)
{
	const struct load_opts *o = l->o;
	struct nh_opts ho = {.max_io = o->bs > 4096 ? o->bs : 4096, .timeout_ms = o->timeout_ms,
			     .invalidate = o->invalidate, .pcap = o->pcap};
	if (resolve(o, &ho.dst))
		return -1;
	if (nh_open(&l->h, &ho)) {
		fprintf(stderr, "iwarp-nvmf-perf: setting up libiwarp: %s\n", strerror(errno));
		return -1;
	}
	host_ids(&l->h, o, subnqn);
	return 0;
}

static int connect_queue(struct load *l, uint16_t qid, uint16_t size)
{
	int rc = nh_queue_connect(&l->h, &l->qs[qid], qid, size, NULL, 0);
	if (rc == -ECONNREFUSED)
		fprintf(stderr, "iwarp-nvmf-perf: queue %u rejected: %s\n", qid,
			nvmf_cm_status_str(l->qs[qid].rej_status));
	else if (rc)
		fprintf(stderr, "iwarp-nvmf-perf: queue %u: %s\n", qid, strerror(-rc));
	return rc;
}

/* ------------------------------------------------------------ bring-up */

static int identify_ns(struct load *l)
{
	struct nvmf_cmd c = {.opc = NVME_ADM_IDENTIFY, .nsid = l->o->nsid,
			     .cdw = {[10] = NVME_ID_CNS_NS}};
	struct nvmf_cqe e;
	uint8_t *id = malloc(NVMF_IDENTIFY_SIZE);
	int rc = id ? nh_sync(&l->qs[0], &c, NULL, id, NVMF_IDENTIFY_SIZE, NVMF_DIR_C2H, &e) : -ENOMEM;
	if (rc || e.status) {
		fprintf(stderr, "iwarp-nvmf-perf: Identify namespace %u: %s\n", l->o->nsid,
			rc ? strerror(-rc) : nvmf_status_str(e.status));
		free(id);
		return -1;
	}
	l->nsze = 0;
	for (int i = 7; i >= 0; i--)
		l->nsze = l->nsze << 8 | id[i];
	l->lbads = id[NVME_IDN_LBAF0 + 2 + 4 * (id[NVME_IDN_FLBAS] & 0xf)];
	free(id);
	return 0;
}

static int set_queues(struct load *l)
{
	uint32_t n = l->o->nq - 1;
	struct nvmf_cmd c = {.opc = NVME_ADM_SET_FEATURES,
			     .cdw = {[10] = NVME_FEAT_NUM_QUEUES, [11] = n | n << 16}};
	struct nvmf_cqe e;
	int rc = nh_sync(&l->qs[0], &c, NULL, NULL, 0, NVMF_DIR_NONE, &e);
	if (rc || e.status)
		return -1;
	/* Fewer than asked: use those, as Linux's nvme_set_queue_count does. */
	uint32_t nsqa = (e.result & 0xffff) + 1, ncqa = (e.result >> 16) + 1;
	uint32_t got = nsqa < ncqa ? nsqa : ncqa;
	if (got < l->o->nq) {
		fprintf(stderr, "iwarp-nvmf-perf: the target grants %u I/O queues of %u asked: using %u\n",
			got, l->o->nq, got);
		l->o->nq = got;
	}
	return 0;
}

static int bring_up(struct load *l, uint8_t *idc)
{
	const struct load_opts *o = l->o;
	if (connect_queue(l, 0, NVMF_AQ_DEPTH) || nh_ctrl_start(&l->h, &l->qs[0], o->kato, idc))
		return 3;
	uint32_t ioccsz = idc[NVME_IDC_IOCCSZ] | idc[NVME_IDC_IOCCSZ + 1] << 8;
	l->h.o.icd_max = o->no_inline || ioccsz <= 4 ? 0 : ioccsz * 16 - NVMF_CMD_SIZE;
	if (identify_ns(l) || set_queues(l))
		return 3;
	for (uint16_t q = 1; q <= o->nq; q++) {
		if (connect_queue(l, q, (uint16_t)(o->qd + 1)))
			return 3;
		struct nvmf_cqe e;
		int rc = nh_fabrics_connect(&l->qs[q], l->h.cntlid, 0, &e);
		if (rc) {
			fprintf(stderr, "iwarp-nvmf-perf: I/O queue %u Connect: %s\n", q,
				rc > 0 ? nvmf_status_str((uint16_t)rc) : strerror(-rc));
			return 3;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ the load */

static int plan(struct load *l)
{
	const struct load_opts *o = l->o;
	uint32_t bsz = 1u << l->lbads;
	if (o->bs % bsz) {
		fprintf(stderr, "iwarp-nvmf-perf: --bs %u is not a multiple of the %u-octet block\n",
			o->bs, bsz);
		return -1;
	}
	l->blocks_per_io = o->bs / bsz;
	uint64_t nreg = (uint64_t)o->nq * o->qd;
	l->units = l->nsze / nreg / l->blocks_per_io;
	if (l->units == 0) {
		fprintf(stderr, "iwarp-nvmf-perf: the namespace is too small for %llu regions of %u octets\n",
			(unsigned long long)nreg, o->bs);
		return -1;
	}
	l->regions = calloc(nreg, sizeof(*l->regions));
	if (!l->regions)
		return -1;
	for (uint64_t i = 0; i < nreg; i++) {
		l->regions[i].base_lba = i * l->units * l->blocks_per_io;
		l->regions[i].ver = calloc(l->units, sizeof(uint32_t));
		if (!l->regions[i].ver)
			return -1;
		for (uint64_t u = 0; o->gen && u < l->units; u++)
			l->regions[i].ver[u] = o->gen;
	}
	return 0;
}

static uint32_t version(struct load *l)
{
	if (l->o->gen)
		return l->o->gen;
	if (++l->next_version == 0)
		l->next_version = 1;
	return l->next_version;
}

static void issue(struct load *l, struct nh_req *r)
{
	const struct load_opts *o = l->o;
	struct region *g = &l->regions[(r->q->qid - 1) * o->qd + r->cid];
	if (o->fill && g->next >= l->units)
		return; /* this slot's region is written: it rests */
	uint64_t unit = o->random ? rnd(l) % l->units : g->next++ % l->units;
	bool read = rnd(l) % 100 < o->read_pct;
	uint64_t lba = g->base_lba + unit * l->blocks_per_io;
	struct nvmf_cmd c = {.opc = read ? NVME_IO_READ : NVME_IO_WRITE, .nsid = o->nsid};
	struct nvmf_rw rw = {.slba = lba, .nlb = l->blocks_per_io};
	nvmf_rw_set(&c, &rw);
	uint32_t v = read ? 0 : version(l);
	if (!read && (o->verify || o->gen))
		pattern_fill(r->data, lba << l->lbads, o->bs, v);
	r->user = g;
	r->user_u64 = unit | (uint64_t)v << 32 | (uint64_t)read << 63;
	if (nh_submit(r, &c, o->bs, read ? NVMF_DIR_C2H : NVMF_DIR_H2C, true) == 0)
		l->issued++;
	else
		l->stop = true;
}

static void report_error(struct load *l, const struct nh_req *r, const char *what)
{
	if (l->errors + l->bad_data <= MAX_REPORTS)
		fprintf(stderr, "iwarp-nvmf-perf: queue %u cid %u: %s\n", r->q->qid, r->cid, what);
}

static void check(struct load *l, struct nh_req *r, struct region *g, uint64_t unit)
{
	uint32_t want = g->ver[unit];
	if (!want)
		return;
	uint64_t off = (g->base_lba + unit * l->blocks_per_io) << l->lbads;
	int64_t at = pattern_check(r->data, off, l->o->bs, want);
	if (at < 0) {
		l->verified++;
		return;
	}
	l->bad_data++;
	char msg[128];
	snprintf(msg, sizeof(msg), "data differs at namespace octet %llu (version %u expected)",
		 (unsigned long long)(off + (uint64_t)at), want);
	report_error(l, r, msg);
}

static void on_done(struct nh_req *r, void *arg)
{
	struct load *l = arg;
	if (r->q->qid == 0) /* keep alive */
		return;
	struct region *g = r->user;
	uint64_t unit = r->user_u64 & 0xffffffffu;
	bool read = r->user_u64 >> 63;
	hist_add(&l->lat, nh_now_ns() - r->t0_ns);
	l->done++;
	if (r->cqe.status) {
		l->errors++;
		report_error(l, r, nvmf_status_str(r->cqe.status));
	} else if (read) {
		l->reads++;
		if (l->o->verify)
			check(l, r, g, unit);
	} else {
		l->writes++;
		g->ver[unit] = (uint32_t)(r->user_u64 >> 32 & 0x7fffffff);
	}
	if (l->o->invalidate && r->asked_inv && !r->invalidated) {
		l->errors++;
		report_error(l, r, "keyed SGL asked for invalidation, response did not invalidate");
	}
	if (!l->stop)
		issue(l, r);
}

static void keep_alive(struct load *l)
{
	uint64_t now = nh_now_ns();
	if (!l->o->kato || now < l->ka_next_ns || (l->ka && l->ka->busy))
		return;
	l->ka_next_ns = now + (uint64_t)l->o->kato * 500000; /* every KATO / 2 */
	l->ka = nh_req_get(&l->qs[0]);
	struct nvmf_cmd c = {.opc = NVME_ADM_KEEP_ALIVE};
	if (l->ka)
		nh_submit(l->ka, &c, 0, NVMF_DIR_NONE, false);
}

static bool any_dead(const struct load *l)
{
	for (uint32_t q = 0; q <= l->o->nq; q++)
		if (l->qs[q].dead)
			return true;
	return false;
}

static uint32_t inflight(const struct load *l)
{
	uint32_t n = 0;
	for (uint32_t q = 1; q <= l->o->nq; q++)
		n += l->qs[q].inflight;
	return n;
}

/* SIGINT ends a load early as its time would: no new I/O, what is in
 * flight completes, then the report and a clean shutdown (tests/nvmf.sh
 * ends a host that holds the target's capacity this way). */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double run(struct load *l)
{
	const struct load_opts *o = l->o;
	l->h.done = on_done;
	l->h.done_arg = l;
	l->ka_next_ns = nh_now_ns() + (uint64_t)o->kato * 500000;
	uint64_t t0 = nh_now_ns(), end = t0 + (uint64_t)(o->seconds * 1e9);
	for (uint32_t q = 1; q <= o->nq; q++)
		for (uint32_t s = 0; s < o->qd && !l->stop; s++)
			issue(l, &l->qs[q].reqs[s]);
	while (inflight(l) && !any_dead(l)) {
		if (nh_progress(&l->h, l->qs, (int)o->nq + 1) == 0 && !o->spin)
			nh_wait(&l->h);
		keep_alive(l);
		if ((o->ios && l->issued >= o->ios) || (!o->ios && nh_now_ns() >= end) ||
		    interrupted)
			l->stop = true;
	}
	return (double)(nh_now_ns() - t0) / 1e9;
}

static void report(const struct load *l, double secs)
{
	const struct load_opts *o = l->o;
	double iops = (double)l->done / secs, mbs = iops * o->bs / 1e6;
	printf("iwarp-nvmf-perf: %s bs=%u qd=%u queues=%u%s: %.0f IOPS, %.1f MB/s, latency us "
	       "p50 %.1f p99 %.1f p99.9 %.1f (%.2f s)\n",
	       o->mode, o->bs, o->qd, o->nq, o->verify ? " verify" : "", iops, mbs,
	       hist_pct(&l->lat, 0.5) / 1e3, hist_pct(&l->lat, 0.99) / 1e3,
	       hist_pct(&l->lat, 0.999) / 1e3, secs);
	printf("RESULT ios=%llu reads=%llu writes=%llu verified=%llu errors=%llu bad_data=%llu "
	       "iops=%.0f mbps=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f\n",
	       (unsigned long long)l->done, (unsigned long long)l->reads,
	       (unsigned long long)l->writes, (unsigned long long)l->verified,
	       (unsigned long long)l->errors, (unsigned long long)l->bad_data, iops, mbs,
	       hist_pct(&l->lat, 0.5) / 1e3, hist_pct(&l->lat, 0.99) / 1e3,
	       hist_pct(&l->lat, 0.999) / 1e3);
	fflush(stdout);
}

static void cleanup(struct load *l)
{
	for (uint32_t q = 0; l->qs && q <= l->o->nq; q++)
		nh_queue_close(&l->qs[q]);
	for (uint64_t i = 0; l->regions && i < (uint64_t)l->o->nq * l->o->qd; i++)
		free(l->regions[i].ver);
	free(l->regions);
	free(l->qs);
	nh_close(&l->h);
}

int load_run(const struct load_opts *o)
{
	static struct load l; /* the histogram is large */
	static struct load_opts oc;
	uint8_t idc[NVMF_IDENTIFY_SIZE];
	oc = *o;
	l.o = &oc;
	o = &oc;
	signal(SIGINT, on_sigint);
	l.rng = (uint64_t)nh_now_ns() | 1;
	l.next_version = (uint32_t)(l.rng >> 8) & 0x7fffffff;
	l.qs = calloc(o->nq + 1, sizeof(*l.qs));
	int rc = l.qs && open_host(&l, o->subnqn) == 0 ? bring_up(&l, idc) : 3;
	if (!rc && plan(&l))
		rc = 2;
	if (!rc) {
		double secs = run(&l);
		bool lost = any_dead(&l);
		report(&l, secs);
		if (lost)
			fprintf(stderr, "iwarp-nvmf-perf: connection lost\n");
		else if (nh_ctrl_shutdown(&l.qs[0]))
			fprintf(stderr, "iwarp-nvmf-perf: shutdown did not complete\n");
		rc = lost || l.errors || l.bad_data ? 1 : 0;
	}
	cleanup(&l);
	return rc;
}

/* ------------------------------------------------------------ discovery */

static int get_log(struct nh_queue *aq, void *buf, uint32_t len, uint64_t off)
{
	struct nvmf_cmd c = {0};
	struct nvmf_get_log g = {.lid = NVME_LOG_DISC, .numd = len / 4, .offset = off};
	struct nvmf_cqe e;
	nvmf_get_log_set(&c, &g);
	int rc = nh_sync(aq, &c, NULL, buf, len, NVMF_DIR_C2H, &e);
	return rc ? rc : e.status;
}

int load_discover(const struct load_opts *o)
{
	static struct load l;
	uint8_t idc[NVMF_IDENTIFY_SIZE];
	static uint8_t page[NVMF_DISC_HDR + 16 * NVMF_DISC_ENTRY];
	static struct load_opts oc;
	oc = *o;
	l.o = &oc;
	l.qs = calloc(1, sizeof(*l.qs));
	int rc = 3;
	if (l.qs && open_host(&l, NVMF_DISC_NQN) == 0 && connect_queue(&l, 0, NVMF_AQ_DEPTH) == 0 &&
	    nh_ctrl_start(&l.h, &l.qs[0], 0, idc) == 0) {
		rc = get_log(&l.qs[0], page, NVMF_DISC_HDR, 0) ? 1 : 0;
		uint64_t numrec = 0;
		for (int i = 15; i >= 8; i--)
			numrec = numrec << 8 | page[i];
		if (numrec > 16)
			numrec = 16;
		if (!rc && numrec)
			rc = get_log(&l.qs[0], page, (uint32_t)(NVMF_DISC_HDR + numrec * NVMF_DISC_ENTRY), 0) ? 1 : 0;
		printf("Discovery Log Number of Records %llu\n", (unsigned long long)numrec);
		for (uint64_t i = 0; !rc && i < numrec; i++) {
			struct nvmf_disc_entry e;
			if (nvmf_disc_entry_parse(&e, page + NVMF_DISC_HDR + i * NVMF_DISC_ENTRY, NVMF_DISC_ENTRY))
				return 1;
			printf("=====Discovery Log Entry %llu======\ntrtype:  %s\nadrfam:  %s\nsubtype: %s\n"
			       "portid:  %u\ntrsvcid: %s\nsubnqn:  %s\ntraddr:  %s\n",
			       (unsigned long long)i, e.trtype == NVMF_TRTYPE_RDMA ? "rdma" : "other",
			       e.adrfam == NVMF_ADRFAM_IPV4 ? "ipv4" : "ipv6",
			       e.subtype == NVMF_SUBTYPE_NVME ? "nvme subsystem" : "discovery",
			       e.portid, e.trsvcid, e.subnqn, e.traddr);
		}
		nh_ctrl_shutdown(&l.qs[0]);
	}
	nh_queue_close(&l.qs[0]);
	free(l.qs);
	nh_close(&l.h);
	return rc;
}
