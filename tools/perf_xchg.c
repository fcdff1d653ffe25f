/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * perftest's messages on the comm connection, as perftest 4.5-0.17
 * (VERSION "6.06") sends them with -R (src/perftest_communication.c):
 *
 *  - Transport (rdma_write_data/rdma_read_data, rdma_write_keys/
 *    rdma_read_keys): every message is one RDMA SEND of exactly its size
 *    from buf[0], signaled and polled to completion; a message is read by
 *    polling the receive CQ (wr_id SYNC_SPEC_ID = 5) and reposting the one
 *    receive of 56 octets. There is no framing: both sides know what comes
 *    next from the program's order. ctx_xchg_data and ctx_hand_shake make a
 *    round: the client (it has a servername) writes then reads, the server
 *    reads then writes, so a side always has its receive reposted before the
 *    peer's next message can leave.
 *  - struct pingpong_dest, 56 octets (rdma_write_keys with HAVE_ENDIAN):
 *    lid, out_reads, qpn, psn, rkey as big-endian u32 at 0, 4, 8, 12, 16;
 *    4 octets of padding; vaddr big-endian u64 at 24; gid[16] at 32; srqn
 *    and gid_index big-endian u32 at 48 and 52 (the reader ignores these two
 *    and the padding).
 *  - exchange_versions: the 16-octet version field (MAX_VERSION), "6.06"
 *    NUL-padded. check_version_compatibility: the peer must be >= 5.70.
 *  - check_sys_data (when the peer is >= 5.32): cycle_buffer, then
 *    cache_line_size, each a big-endian int; both sides take the larger.
 *  - check_mtu (peer >= 5.1): the active MTU enum as decimal text, 2 octets
 *    when the peer is >= 5.31 (4 before); the smaller valid one wins.
 *    --dont_xchg_versions skips these three.
 *  - xchg_bw_reports: five rounds: size (u64), iters (u64 when the peer is
 *    >= 5.33, else u32), bw_peak, bw_avg, msgRate_avg (doubles), all
 *    big-endian (hton_long, hton_double = byte swap on little-endian);
 *    bandwidth in the sender's report unit, MB/sec (2^20 octets) unless it
 *    ran with --report_gbits.
 *  - ctx_close_connection: one more ctx_hand_shake.
 *
 * Between two iwarp-perf the version field says so after its NUL ("6.06"
 * then "iwarp-perf"; perftest reads it with atof) and one more round, the
 * extension, follows check_mtu: the client's test parameters, which the
 * server takes, and the server's TCP port for --tcp. Newer perftest adds
 * its own negotiation only when the peer announces 6.28 or later
 * (perftest_negotiation.c), so announcing 6.06 keeps it out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define COMM_MSG 64
#define PERFTEST_VERSION "6.06"
#define IWPF_MARK "iwarp-perf"
#define EXT_MAGIC 0x49575046u /* "IWPF" */
#define EXT_VERSION 1

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
	p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void putd(uint8_t *p, double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	put64(p, u);
}

static double getd(const uint8_t *p)
{
	uint64_t u = get64(p);
	double d;
	memcpy(&d, &u, 8);
	return d;
}

/* ------------------------------------------------------------ transport */

static int post_recv(struct perf_sess *s, int idx)
{
	struct iw_sge sge = {.addr = (uintptr_t)s->comm.buf + COMM_MSG * (1 + idx),
			     .length = COMM_MSG, .lkey = s->comm.mr->lkey};
	struct iw_recv_wr wr = {.wr_id = (uint64_t)idx + 1, .sg_list = &sge, .num_sge = 1};
	struct iw_recv_wr *bad;
	return iw_post_recv(s->comm.id->qp, &wr, &bad);
}

/* Note comm completions: sends done, messages ready, a failure. */
static void comm_take(struct perf_sess *s, const struct iw_wc *wc, int n)
{
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IW_WC_SUCCESS)
			s->comm.broken = true;
		else if (wc[i].opcode == IW_WC_SEND)
			s->comm.sends_done++;
		else if (s->comm.nready < 4) {
			s->comm.ready[s->comm.nready] = (int)wc[i].wr_id - 1;
			s->comm.ready_len[s->comm.nready++] = wc[i].byte_len;
		}
	}
}

/* Collect comm completions for up to ms (-1: until one comes). A failed
 * completion (the peer closed: the other receive is flushed) marks the
 * connection broken but what came before it is still delivered. */
static int comm_poll(struct perf_sess *s, int ms)
{
	struct iw_wc wc[4];
	double end = perf_now() + ms / 1000.0;
	for (;;) {
		int left = ms < 0 ? 1000 : (int)((end - perf_now()) * 1000);
		if (left < 0)
			left = 0;
		int n = perf_wait_cq(s, s->comm.cc, s->comm.cq, wc, 4, left > 1000 ? 1000 : left);
		comm_take(s, wc, n);
		if (n > 0)
			return 0;
		if (n < 0 || s->dead || s->comm.broken) {
			perf_err(s, "the peer closed the connection");
			return -1;
		}
		if (ms >= 0 && perf_now() >= end) {
			perf_err(s, "no reply from the peer within %.1f s", ms / 1000.0);
			return -1;
		}
	}
}

/* Completions already there, without waiting or touching CM events (a
 * server in the setup-rate loop takes those itself). */
bool perf_comm_ready(struct perf_sess *s)
{
	struct iw_wc wc[4];
	comm_take(s, wc, iw_poll_cq(s->comm.cq, 4, wc));
	return s->comm.nready > 0 || s->comm.broken;
}

static int comm_send(struct perf_sess *s, const void *data, size_t len)
{
	if (s->sink)
		return perf_sink_send(s, data, len);
	memcpy(s->comm.buf, data, len);
	struct iw_sge sge = {.addr = (uintptr_t)s->comm.buf, .length = (uint32_t)len,
			     .lkey = s->comm.mr->lkey};
	struct iw_send_wr wr = {.wr_id = 0, .sg_list = &sge, .num_sge = 1, .opcode = IW_WR_SEND,
				.send_flags = IW_SEND_SIGNALED};
	struct iw_send_wr *bad;
	int rc = iw_post_send(s->comm.id->qp, &wr, &bad);
	if (rc) {
		perf_err(s, "comm send: %s", strerror(rc));
		return -1;
	}
	while (!s->comm.sends_done) {
		if (s->comm.broken) {
			perf_err(s, "the peer closed the connection");
			return -1;
		}
		if (comm_poll(s, (int)(s->o.timeout * 1000)))
			return -1;
	}
	s->comm.sends_done--;
	return 0;
}

/* Read the next message, which must be len octets (a different length means
 * the two programs are not at the same step: different tests or options). */
static int comm_recv(struct perf_sess *s, void *data, size_t len)
{
	if (s->sink)
		return perf_sink_recv(s, data, len);
	while (!s->comm.nready) {
		if (s->comm.broken) {
			perf_err(s, "the peer closed the connection");
			return -1;
		}
		if (comm_poll(s, s->comm.wait_ms))
			return -1;
	}
	int idx = s->comm.ready[0];
	uint32_t got = s->comm.ready_len[0];
	memmove(s->comm.ready, s->comm.ready + 1, sizeof(int) * 3);
	memmove(s->comm.ready_len, s->comm.ready_len + 1, sizeof(uint32_t) * 3);
	s->comm.nready--;
	memcpy(data, s->comm.buf + COMM_MSG * (1 + idx), len < got ? len : got);
	/* Repost before anything else is sent: the peer's next message may
	 * follow our reply at once, and iWARP has no receiver-not-ready. */
	int rc = s->comm.broken ? 0 : post_recv(s, idx);
	if (rc) {
		perf_err(s, "comm receive: %s", strerror(rc));
		return -1;
	}
	if (got != len) {
		perf_err(s, "the peer sent %u octets where %zu were due: is it running the "
			 "same test with the same options (-a, -b, -q, -D)?", got, len);
		return -1;
	}
	return 0;
}

int perf_xchg(struct perf_sess *s, const void *mine, void *theirs, size_t len)
{
	if (s->server)
		return comm_recv(s, theirs, len) || comm_send(s, mine, len) ? -1 : 0;
	return comm_send(s, mine, len) || comm_recv(s, theirs, len) ? -1 : 0;
}

/* ------------------------------------------------------------ pingpong_dest */

static void dest_pack(uint8_t out[56], const struct perf_dest *d)
{
	memset(out, 0, 56);
	put32(out, d->lid);
	put32(out + 4, d->out_reads);
	put32(out + 8, d->qpn);
	put32(out + 12, d->psn);
	put32(out + 16, d->rkey);
	put64(out + 24, d->vaddr);
	memcpy(out + 32, d->gid, 16);
	put32(out + 48, d->srqn);
	put32(out + 52, d->gid_index);
}

static void dest_unpack(struct perf_dest *d, const uint8_t in[56])
{
	d->lid = get32(in);
	d->out_reads = get32(in + 4);
	d->qpn = get32(in + 8);
	d->psn = get32(in + 12);
	d->rkey = get32(in + 16);
	d->vaddr = get64(in + 24);
	memcpy(d->gid, in + 32, 16);
}

/* ctx_hand_shake on my_dest[qp] and rem_dest[qp]. */
int perf_hand_shake(struct perf_sess *s, uint32_t qp)
{
	uint8_t mine[56], theirs[56];
	struct perf_dest zero = {0};
	dest_pack(mine, s->my ? &s->my[qp] : &zero);
	if (perf_xchg(s, mine, theirs, sizeof(mine)))
		return -1;
	if (s->rem)
		dest_unpack(&s->rem[qp], theirs);
	return 0;
}

/* set_up_connection: what the peer needs to reach each of our QPs. For send
 * bandwidth over iWARP, perftest's ib_send_bw puts its credit word there
 * instead (ctx_alloc_credit): the receiver RDMA-writes its count of
 * receives to it. */
void perf_fill_dests(struct perf_sess *s)
{
	for (uint32_t i = 0; i < s->nqp; i++) {
		struct perf_dest *d = &s->my[i];
		*d = (struct perf_dest){.out_reads = s->o.out_reads,
					.qpn = iw_qp_num(s->ids[i]->qp),
					.psn = (uint32_t)lrand48() & 0xffffff};
		if (s->o.test == PT_SEND) {
			d->rkey = s->ctrl_mr->rkey;
			d->vaddr = (uintptr_t)&s->ctrl[s->nqp + i];
		} else {
			d->rkey = s->mr->rkey;
			d->vaddr = (uintptr_t)perf_region_remote(s, i);
		}
	}
}

/* ------------------------------------------------------------ preamble */

static int xchg_versions(struct perf_sess *s, double *rem)
{
	char mine[16] = PERFTEST_VERSION;
	if (!s->o.as_perftest)
		memcpy(mine + strlen(PERFTEST_VERSION) + 1, IWPF_MARK, sizeof(IWPF_MARK) - 1);
	if (perf_xchg(s, mine, s->rem_version, 16))
		return -1;
	s->rem_version[15] = 0;
	size_t vl = strnlen(s->rem_version, 16);
	s->peer_iwpf = vl < 15 && !memcmp(s->rem_version + vl + 1, IWPF_MARK,
					  sizeof(IWPF_MARK) - 1 < 15 - vl ? sizeof(IWPF_MARK) - 1
									   : 15 - vl);
	*rem = atof(s->rem_version);
	if (*rem < 5.70) {
		perf_err(s, "the peer is perftest version '%.15s': 5.70 or later is needed",
			 s->rem_version);
		return -1;
	}
	return 0;
}

static int xchg_sys(struct perf_sess *s)
{
	uint8_t mine[4], theirs[4];
	put32(mine, s->cycle_buffer);
	if (perf_xchg(s, mine, theirs, 4))
		return -1;
	uint32_t cyc = get32(theirs);
	put32(mine, s->cache_line);
	if (perf_xchg(s, mine, theirs, 4))
		return -1;
	uint32_t cl = get32(theirs);
	/* The larger of the two, as perftest; a silly value is refused. */
	if (cyc > s->cycle_buffer && cyc <= (1u << 24))
		s->cycle_buffer = cyc;
	if (cl > s->cache_line && cl <= 4096)
		s->cache_line = cl;
	return 0;
}

/* Our "MTU": IBV_MTU_4096 (5), what siw reports on a jumbo netdev; perftest
 * uses it only for UD and raw Ethernet. */
static int xchg_mtu(struct perf_sess *s, double rem)
{
	char mine[4] = "5", theirs[4];
	return perf_xchg(s, mine, theirs, rem >= 5.31 ? 2 : 4);
}

int perf_preamble(struct perf_sess *s)
{
	long page = sysconf(_SC_PAGESIZE);
	s->cycle_buffer = page > 0 ? (uint32_t)page : 4096;
	s->cache_line = 64;
	if (s->o.dont_xchg)
		return 0;
	double rem;
	if (xchg_versions(s, &rem))
		return -1;
	if (rem >= 5.32 && xchg_sys(s))
		return -1;
	if (rem >= 5.1 && xchg_mtu(s, rem))
		return -1;
	return 0;
}

/* ------------------------------------------------------------ reports */

/* xchg_bw_reports; our figures go out in MB/sec (2^20), perftest's default. */
int perf_xchg_report(struct perf_sess *s, const struct perf_result *mine,
		     struct perf_result *theirs)
{
	uint8_t m[5][8], t[5][8];
	put64(m[0], mine->bytes);
	put64(m[1], mine->iters);
	putd(m[2], mine->bw_peak / 1048576.0);
	putd(m[3], mine->bw_avg / 1048576.0);
	putd(m[4], mine->msg_rate / 1e6);
	for (int i = 0; i < 5; i++)
		if (perf_xchg(s, m[i], t[i], 8))
			return -1;
	*theirs = (struct perf_result){.bytes = get64(t[0]), .iters = get64(t[1])};
	theirs->bw_peak = getd(t[2]) * 1048576.0;
	theirs->bw_avg = getd(t[3]) * 1048576.0;
	theirs->msg_rate = getd(t[4]) * 1e6;
	if (!isfinite(theirs->bw_avg) || !isfinite(theirs->bw_peak) || !isfinite(theirs->msg_rate))
		theirs->bw_avg = theirs->bw_peak = theirs->msg_rate = 0;
	return 0;
}

/* ------------------------------------------------------------ extension */

enum { EF_BIDIR = 1, EF_TCP = 2, EF_CRC = 4, EF_MARKERS = 8, EF_SWEEP = 16, EF_POLL = 32,
       EF_THREADS = 64 };

static void ext_pack(uint8_t out[48], const struct perf_opts *o)
{
	memset(out, 0, 48);
	put32(out, EXT_MAGIC);
	out[4] = EXT_VERSION;
	out[5] = (uint8_t)o->test;
	out[6] = (uint8_t)((o->bidir ? EF_BIDIR : 0) | (o->tcp ? EF_TCP : 0) |
			   (o->crc ? EF_CRC : 0) | (o->markers ? EF_MARKERS : 0) |
			   (o->sweep ? EF_SWEEP : 0) | (perf_polling(o) ? EF_POLL : 0) |
			   (o->threads ? EF_THREADS : 0));
	put64(out + 8, o->size);
	put64(out + 16, o->iters);
	put32(out + 24, (uint32_t)lround(o->duration * 1000));
	put32(out + 28, o->tx_depth);
	put32(out + 32, o->rx_depth);
	put32(out + 36, o->qps);
	put32(out + 40, (uint32_t)o->max_size);
	put32(out + 44, o->out_reads);
}

/* The client's parameters, checked as the command line would be. */
static int ext_unpack(struct perf_opts *o, const uint8_t in[48])
{
	if (get32(in) != EXT_MAGIC || in[4] != EXT_VERSION || in[5] > PT_CONNECT)
		return -1;
	o->test = (enum perf_test)in[5];
	o->bidir = in[6] & EF_BIDIR;
	o->tcp = in[6] & EF_TCP;
	o->crc = in[6] & EF_CRC;
	o->markers = in[6] & EF_MARKERS;
	o->sweep = in[6] & EF_SWEEP;
	o->poll = (in[6] & EF_POLL) != 0;
	o->threads = o->threads || (in[6] & EF_THREADS); /* either side may ask */
	o->size = get64(in + 8);
	o->iters = get64(in + 16);
	o->duration = get32(in + 24) / 1000.0;
	o->tx_depth = get32(in + 28);
	o->rx_depth = get32(in + 32);
	o->qps = get32(in + 36);
	o->max_size = get32(in + 40);
	o->out_reads = get32(in + 44);
	if (o->size < 1 || o->size > PERF_MAX_SIZE || o->max_size > PERF_MAX_SIZE ||
	    (!o->iters && o->duration <= 0) || o->tx_depth < 1 || o->tx_depth > PERF_MAX_DEPTH ||
	    o->rx_depth < 1 || o->rx_depth > 16384 || o->qps < 1 ||
	    o->qps > (o->test == PT_CONNECT ? PERF_MAX_INFLIGHT : PERF_MAX_QPS) ||
	    o->out_reads < 1 || o->out_reads > 128)
		return -1;
	return 0;
}

/* The server's answer: magic, version, EF_TCP when it listens for the
 * baseline, and that TCP port at octet 8. */
static void ext_reply(uint8_t out[48], bool tcp, uint16_t port)
{
	memset(out, 0, 48);
	put32(out, EXT_MAGIC);
	out[4] = EXT_VERSION;
	out[6] = tcp ? EF_TCP : 0;
	put32(out + 8, tcp ? port : 0);
}

static int ext_server(struct perf_sess *s)
{
	uint8_t mine[48], theirs[48];
	if (comm_recv(s, theirs, 48))
		return -1;
	struct perf_opts o = s->o;
	if (ext_unpack(&o, theirs)) {
		perf_err(s, "the client's parameters make no sense");
		return -1;
	}
	s->o = o;
	if (s->sink)
		s->o.tcp = false; /* no baseline beside a discard peer */
	if (s->o.tcp && perf_tcp_listen(s))
		s->o.tcp = false;
	ext_reply(mine, s->o.tcp, s->tcp_port);
	return comm_send(s, mine, 48);
}

int perf_ext_exchange(struct perf_sess *s)
{
	uint8_t mine[48], theirs[48];
	if (!s->peer_iwpf)
		return 0;
	if (s->server)
		return ext_server(s);
	ext_pack(mine, &s->o);
	if (comm_send(s, mine, 48) || comm_recv(s, theirs, 48))
		return -1;
	if (get32(theirs) != EXT_MAGIC) {
		perf_err(s, "the server's extension reply is garbled");
		return -1;
	}
	s->peer_tcp_port = (uint16_t)get32(theirs + 8);
	if (s->o.tcp && !(theirs[6] & EF_TCP)) {
		perf_err(s, "the server could not open a TCP port: no --tcp baseline");
		s->o.tcp = false;
	}
	return 0;
}
