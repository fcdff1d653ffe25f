/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-perf: bandwidth and latency of RDMA WRITE, READ and SEND over
 * libiwarp, standing in for perftest (ib_write_bw, ib_read_bw, ib_send_bw,
 * ib_write_lat, ib_send_lat) and talking to it: as a client or a server it
 * runs the same rdma_cm connection setup and the same exchange of buffer and
 * queue information as perftest run with -R (perf_xchg.c, perf_flow.c).
 *
 * Files: perf_cli.c options, perf_main.c roles, perf_conn.c connections and
 * waiting, perf_xchg.c perftest's messages, perf_flow.c perftest's order of
 * them per test, perf_bw.c and perf_lat.c the measured loops, perf_stats.c
 * time and statistics, perf_tcp.c the raw TCP baseline, perf_out.c tables,
 * JSON and progress, perf_idle.c the idle-connection memory figure,
 * perf_cpu.c CPU time per thread.
 */
#ifndef IWARP_PERF_H
#define IWARP_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <iwarp/iwarp.h>

/* Exit status (documented in --help and iwarp-perf(1)). */
enum perf_exit {
	PX_OK = 0,      /* the test ran */
	PX_FAIL = 1,    /* failure after connecting: completion error, peer went away, protocol */
	PX_USAGE = 2,   /* bad option */
	PX_CONNECT = 3, /* could not listen, connect or set up the connections */
};

enum perf_test { PT_WRITE, PT_READ, PT_SEND, PT_WRITE_LAT, PT_SEND_LAT, PT_READ_LAT,
		 PT_CONNECT };
enum perf_role { ROLE_LOOPBACK, ROLE_SERVER, ROLE_CLIENT, ROLE_IDLE, ROLE_CHURN };

#define PERF_MAX_SIZE (8u << 20)   /* perftest's MAX_SIZE: -a goes up to 2^23 */
#define PERF_DEF_PORT 18515        /* perftest's DEF_PORT */
#define PERF_MAX_QPS 64
#define PERF_MAX_INFLIGHT 1024 /* --test connect -q */
#define PERF_MAX_DEPTH 8192
#define PERF_MAX_POST_LIST 64

struct perf_opts {
	enum perf_test test;
	enum perf_role role;
	const char *server;     /* client: the server's name or address */
	uint16_t port;
	uint64_t size;          /* message size (not used with sweep) */
	bool sweep;             /* -a: 2, 4, ... max_size */
	uint64_t max_size;      /* sweep end */
	uint64_t iters;         /* per QP; 0 with a duration */
	double duration;        /* seconds; 0: iterations */
	uint32_t tx_depth, rx_depth, qps, out_reads;
	bool bidir, crc, markers, tcp, json, dont_xchg;
	/* Busy-poll (a run-to-completion context, iw_progress and iw_poll_cq
	 * without sleeping; the TCP baseline with MSG_DONTWAIT): 1 --poll,
	 * 0 --no-poll, -1 the test's default (latency tests poll). */
	int poll;
	bool as_perftest;       /* announce plain "6.06": no iwarp-perf extension */
	int idle;               /* --idle N connections */
	uint64_t churn;         /* --churn N cycles */
	uint32_t loops;         /* --loops N: event loops per context (0: libiwarp's default) */
	bool threads;           /* --threads: one application thread per loop drives its QPs */
	bool pin;               /* --pin: loop i and its application thread on the i-th CPU */
	bool sink;              /* --server --sink: the discard peer (perf_sink.c) */
	uint32_t post_list;     /* -l: data WRs chained per iw_post_send (0: 1) */
	double timeout;         /* seconds for connection setup and replies */
};

/* Options: fill *o from argv; returns PX_OK, PX_USAGE, or -1 after --help. */
int perf_parse(int argc, char **argv, struct perf_opts *o);
const char *perf_test_name(enum perf_test t);
bool perf_is_lat(enum perf_test t);
bool perf_polling(const struct perf_opts *o);
/* The sizes a run covers: one, or the sweep; returns the count. */
int perf_sizes(const struct perf_opts *o, uint64_t *sizes, int max);

/* ------------------------------------------------------------ stats */

double perf_now(void);
struct perf_samples {
	double *v;
	size_t n, cap;
};
int perf_samples_add(struct perf_samples *s, double v);
void perf_samples_free(struct perf_samples *s);

/* CPU time per thread of this process over a run (perf_cpu.c). */
#define PERF_CPU_THREADS 32
struct perf_cpu_thread {
	int tid;
	char name[16];
	double secs;            /* user + system */
};
struct perf_cpu {
	int n;
	double total;           /* of the threads listed (after perf_cpu_delta) */
	struct perf_cpu_thread t[PERF_CPU_THREADS];
};
void perf_cpu_sample(struct perf_cpu *c);
void perf_cpu_delta(const struct perf_cpu *before, const struct perf_cpu *after,
		    struct perf_cpu *out);
void perf_cpu_self(struct perf_cpu_thread *t);
void perf_cpu_put(struct perf_cpu *c, const struct perf_cpu_thread *t);

/* One row of results. Bandwidth figures in bytes per second. */
struct perf_result {
	uint64_t bytes, iters, msgs;
	double seconds;
	double bw_avg, bw_peak, msg_rate;
	/* latency, microseconds (half round trips, as perftest; read_lat:
	 * whole round trips, as ib_read_lat; a read_lat server: none) */
	bool lat;
	double t_min, t_typ, t_avg, t_max, t_p99, t_p999;
	/* the raw TCP baseline, when measured */
	bool tcp;
	double tcp_bw, tcp_typ;
	/* this process's CPU over the run (bandwidth tests), when taken */
	bool has_cpu;
	struct perf_cpu cpu;
};
void perf_lat_summary(struct perf_samples *s, struct perf_result *r);
/* Progress of the busiest window: a (time, messages) trace kept by a loop. */
struct perf_trace {
	double *t;
	uint64_t *m;
	size_t n, cap;
};
void perf_trace_add(struct perf_trace *tr, double t, uint64_t msgs);
double perf_trace_peak(const struct perf_trace *tr, uint64_t bytes_per_msg);
void perf_trace_free(struct perf_trace *tr);

/* ------------------------------------------------------------ session */

/* A peer's struct pingpong_dest (perftest_resources.h), host order. */
struct perf_dest {
	uint32_t lid, out_reads, qpn, psn, rkey;
	uint64_t vaddr;
	uint8_t gid[16];
	uint32_t srqn, gid_index;
};

/* The parameter-exchange connection: one QP with a few receives. */
struct perf_comm {
	struct iw_cm_id *id;
	struct iw_comp_channel *cc;
	struct iw_cq *cq;
	struct iw_mr *mr;
	uint8_t *buf;
	bool up;
	int sends_done;              /* send completions not yet waited for */
	int ready[4];                /* receive buffers holding a message, oldest first */
	uint32_t ready_len[4];
	int nready;
	int wait_ms;                 /* limit for the next reply; -1: none (peer is testing) */
	bool broken;                 /* a completion failed: nothing more will come */
};

struct perf_sess {
	struct perf_opts o;          /* in effect (a server may take the client's) */
	bool server;
	FILE *out;                   /* results; NULL: silent (loopback server) */
	const char *who;             /* prefix of messages */
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_pd *pd;
	struct iw_cm_id *listener;
	uint16_t bound_port;         /* the listener's port (loopback uses 0) */
	struct perf_comm comm;
	/* the peer, from the exchange */
	char rem_version[16];
	bool peer_iwpf;              /* the peer is iwarp-perf: extensions allowed */
	uint32_t cycle_buffer, cache_line;
	uint16_t peer_tcp_port;      /* client: the server's baseline port */
	uint16_t tcp_port;           /* server: ours */
	int tcp_listen_fd;
	/* the data connections */
	uint32_t nqp;
	struct iw_cm_id **ids;
	bool *disconnected;
	/* Completion queues per group: one group, or with --threads one per
	 * loop so that each application thread polls only its own loop's
	 * QPs. scq, rcq and dcc are group 0's. */
	uint32_t ngrp;
	struct perf_cqs {
		struct iw_comp_channel *cc;
		struct iw_cq *scq, *rcq;
	} *grp;
	uint32_t *qp_grp;            /* the group of each data QP */
	struct iw_comp_channel *dcc;
	struct iw_cq *scq, *rcq;
	uint8_t *buf;
	size_t region;               /* per QP and direction: max(size, cycle_buffer) */
	struct iw_mr *mr;
	uint32_t *ctrl;              /* send BW credits: [0,n) what we tell, [n,2n) what we are told */
	struct iw_mr *ctrl_mr;
	struct perf_dest *my, *rem;
	int dead;                    /* the comm connection is gone */
	int data_dead;               /* a data connection is gone */
	bool test_done;              /* the test and its exchanges completed */
	struct perf_sink *sink;      /* the discard peer: comm messages over its raw socket */
};

int perf_sess_open(struct perf_sess *s);
void perf_sess_close(struct perf_sess *s);
int perf_listen(struct perf_sess *s, const char *addr, uint16_t port);
int perf_accept_comm(struct perf_sess *s, int ms);
int perf_connect_comm(struct perf_sess *s, const struct sockaddr *dst);
int perf_resolve(const char *name, uint16_t port, struct sockaddr_storage *ss);
int perf_data_alloc(struct perf_sess *s);
int perf_data_connect(struct perf_sess *s, const struct sockaddr *dst);
int perf_data_accept(struct perf_sess *s);
void perf_data_close(struct perf_sess *s);
bool perf_alive(struct perf_sess *s);
/* Wait for completions on cq (armed on cc): polls, yields, then sleeps on the
 * channel up to max_ms. Returns the number stored in wc or -1. */
int perf_wait_cq(struct perf_sess *s, struct iw_comp_channel *cc, struct iw_cq *cq,
		 struct iw_wc *wc, int n, int max_ms);
void perf_err(const struct perf_sess *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint8_t *perf_region_local(const struct perf_sess *s, uint32_t qp);
uint8_t *perf_region_remote(const struct perf_sess *s, uint32_t qp);
int perf_post_recvs(struct perf_sess *s, uint32_t qp, uint32_t count, uint64_t size);

/* ------------------------------------------------------------ exchange */

int perf_xchg(struct perf_sess *s, const void *mine, void *theirs, size_t len);
int perf_hand_shake(struct perf_sess *s, uint32_t qp);
int perf_preamble(struct perf_sess *s);
int perf_ext_exchange(struct perf_sess *s);
int perf_xchg_report(struct perf_sess *s, const struct perf_result *mine,
		     struct perf_result *theirs);
void perf_fill_dests(struct perf_sess *s);

/* ------------------------------------------------------------ the tests */

int perf_flow(struct perf_sess *s, struct perf_result *rows, int *nrows);
/* One hs per data QP; one hs that waits as long as the peer's test. */
int perf_hs_all(struct perf_sess *s);
int perf_hs_patient(struct perf_sess *s);

int perf_bw_duplex(struct perf_sess *s, uint64_t size, struct perf_result *r);
int perf_lat_write(struct perf_sess *s, uint64_t size, struct perf_result *r);
int perf_lat_send(struct perf_sess *s, uint64_t size, struct perf_result *r);
/* read_lat: the client Reads and times each round trip; the server only
 * answers (driving its connection when polling) until the client's
 * end mark for size number idx of the run lands. */
int perf_lat_read(struct perf_sess *s, uint64_t size, uint32_t idx, struct perf_result *r);
int perf_lat_read_serve(struct perf_sess *s, uint64_t size, uint32_t idx);
uint32_t perf_rx_depth(const struct perf_opts *o);

/* ------------------------------------------------------------ TCP baseline */

int perf_tcp_listen(struct perf_sess *s);
int perf_tcp_run(struct perf_sess *s, const struct sockaddr *peer, struct perf_result *rows,
		 int nrows);

/* ------------------------------------------------------------ output */

void perf_out_header(struct perf_sess *s);
void perf_out_row(struct perf_sess *s, const struct perf_result *r);
void perf_out_footer(struct perf_sess *s);
void perf_out_json(struct perf_sess *s, const struct perf_result *rows, int nrows);
struct perf_progress {
	double start, last;
	const char *what;
	uint64_t size;
	bool on;
};
void perf_progress_start(struct perf_progress *p, const struct perf_sess *s, uint64_t size);
void perf_progress_tick(struct perf_progress *p, uint64_t msgs);

/* ------------------------------------------------------------ setup rate */

/* --test connect (perf_connrate.c, perf_connrate_tcp.c). */
int perf_connrate_client(struct perf_sess *s, const struct sockaddr *dst);
int perf_connrate_server(struct perf_sess *s);
int perf_connrate_tcp(struct perf_sess *s, const struct sockaddr *peer, struct perf_result *out);
struct tcp_acceptor;
struct tcp_acceptor *perf_connrate_tcp_serve(struct perf_sess *s);
void perf_connrate_tcp_stop(struct tcp_acceptor *a);
/* A message from the peer waits on the comm connection (never blocks). */
bool perf_comm_ready(struct perf_sess *s);

/* ------------------------------------------------------------ idle */

int perf_idle_run(const struct perf_opts *o);

/* The two in-process ends --idle and --churn connect (perf_idle.c). */
struct perf_end {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_pd *pd;
	struct iw_cq *cq;
};
int perf_end_open(struct perf_end *e, int depth);
void perf_end_close(struct perf_end *e);
/* The next event of ch within 10 s, which must be want (NULL otherwise). */
struct iw_cm_event *perf_wait_ev(struct iw_cm_channel *ch, enum iw_cm_event_type want);
/* Connect one pair (client c to listener address a of s); the ids out. */
struct sockaddr_in;
int perf_pair(struct perf_end *s, struct perf_end *c, const struct sockaddr_in *a, int depth,
	      struct iw_cm_id **cid, struct iw_cm_id **sid);
size_t perf_heap_used(void); /* malloc's in-use octets (mallinfo2) */
size_t perf_rss_bytes(void); /* resident set, 0 if unknown */

/* --churn N (perf_churn.c): N connect/transfer/disconnect cycles. */
int perf_churn_run(const struct perf_opts *o);

/* ------------------------------------------------------------ sink */

/* --server --sink (perf_sink.c): one client, then exit (enum perf_exit). */
int perf_sink_run(const struct perf_opts *o);
/* The comm messages of a sink session (perf_sink_wire.c): SENDs over its
 * raw socket instead of a libiwarp QP. 0 or -1 (said). */
int perf_sink_send(struct perf_sess *s, const void *data, size_t len);
int perf_sink_recv(struct perf_sess *s, void *data, size_t len);

#endif /* IWARP_PERF_H */
