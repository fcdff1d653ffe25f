/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-conform: named conformance cases run against a live iWARP peer.
 * The runner is a raw-socket endpoint: it crafts every MPA frame and FPDU
 * itself with the wire codecs (include/iwarp/wire.h), so it can send what
 * no stack would, and it judges the peer's answers octet by octet.
 */
#ifndef CF_CONFORM_H
#define CF_CONFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <iwarp/wire.h>

enum cf_verdict { CF_PASS, CF_FAIL, CF_DEVIATES, CF_SKIP, CF__NVERDICT };

/* A growing text buffer: a case's evidence (what went out, what came back). */
struct cf_log {
	char *p;
	size_t len, cap;
};
void cf_log_add(struct cf_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cf_log_hex(struct cf_log *l, const char *dir, const uint8_t *p, size_t n);
void cf_log_free(struct cf_log *l);

struct cf_opts {
	const char *host, *port;
	unsigned peer_timeout_ms; /* how long the peer takes to drop a stalled handshake */
	unsigned wait_ms;         /* how long to wait for any answer */
	const char *quirks;       /* deviations file */
	const char *only;         /* case id prefix filter */
	const char *skip;         /* comma-separated case ids left out */
	const char *json, *md, *junit; /* output paths */
	const char *pcap_dir;     /* a capture per case there */
	uint32_t size;            /* the peer's rping buffer size (iwarp-ping -S) */
	const char *listen;       /* Group 2: [ADDR:]PORT the peer connects to */
	const char *client_cmd;   /* Group 2: shell command started per case */
	unsigned accept_ms;       /* Group 2: how long to wait for the peer to connect */
	const char *server_cmd;   /* restarts the peer's server when a connect is refused */
	bool server_each;         /* ... and before each case that connects to it */
	bool verbose;
};

/* One case's outcome. observed is a short stable signature of what the
 * peer did ("accepted", "closed", "term 1/2/0x05 MD"), matched against the
 * deviations file. */
struct cf_result {
	enum cf_verdict v;
	char detail[256];
	char observed[96];
	struct cf_log log;
	double secs;
};

struct cf_ctx {
	const char *id; /* the case's */
	const struct cf_opts *o;
	struct cf_result *r;
};

struct cf_case {
	const char *id;   /* "1.4" */
	const char *name; /* short title */
	const char *rfc;  /* "RFC 5044 7.1.5" */
	void (*run)(struct cf_ctx *c, const void *arg);
	const void *arg;
};

/* Verdict helpers: set v, detail (printf) and, for pass/fail, observed. */
void cf_pass(struct cf_ctx *c, const char *obs, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cf_fail(struct cf_ctx *c, const char *obs, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cf_skip(struct cf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ the socket */

enum cf_io { CF_IO_OK = 0, CF_IO_CLOSED = -1, CF_IO_TIMEOUT = -2, CF_IO_ERR = -3 };

struct cf_pcap;
struct cf_conn {
	struct cf_ctx *c;
	int fd;
	struct cf_pcap *pcap; /* --pcap-dir */
	uint8_t in[1 << 17];
	size_t in_len;
	bool eof, reset;
	/* after MPA */
	bool crc, markers_tx, markers_rx;
	struct iw_fpdu_tx tx;
	struct iw_fpdu_rx rx;
	uint32_t msn[4]; /* next MSN we send per untagged queue */
	uint16_t peer_ird; /* the Reply's IRD (0: not negotiated) */
	uint16_t term_seen; /* the last TERMINATE the peer sent (0: none) */
	bool peer_reads;    /* the Reply left the peer an ORD above 0 */
	struct iw_read_req sink; /* the peer's READ sink, learned by cf_settle */
};

int cf_connect(struct cf_conn *k, struct cf_ctx *c);
/* --server-cmd (server.c): run it for a refused connect; 0 if it exited 0.
 * cf_server_restarts counts the runs. */
int cf_server_restart(struct cf_ctx *c);
unsigned cf_server_restarts(void);
/* --server-each: run --server-cmd before a Group 1, 3 or 4 case. */
void cf_server_fresh(struct cf_ctx *c);
/* The peer's port: HOST PORT, or the last "port N" --server-cmd printed. */
const char *cf_server_port(const struct cf_opts *o);
/* Reset k for a new connection; after the socket exists: Nagle off, capture. */
void cf_conn_init(struct cf_conn *k, struct cf_ctx *c);
void cf_conn_opened(struct cf_conn *k);
/* Group 2 (listen.c): the next connection from the peer on --listen, after
 * starting --client-cmd if given; the peer's side ends with cf_peer_done. */
int cf_accept(struct cf_conn *k, struct cf_ctx *c);
void cf_peer_done(void);
void cf_listen_close(void);
void cf_close(struct cf_conn *k);
/* Send n octets, at most seg per send() (0: all at once), logged. */
int cf_send(struct cf_conn *k, const uint8_t *p, size_t n, size_t seg);
/* Read more input until the deadline (ms from now); CF_IO_*. */
int cf_fill(struct cf_conn *k, uint64_t deadline_ns);
/* Wait until the peer closes (FIN or RST); CF_IO_CLOSED or CF_IO_TIMEOUT. */
int cf_wait_close(struct cf_conn *k, unsigned ms);
uint64_t cf_now_ns(void);
const char *cf_io_str(int rc);

/* The case's capture (pcap.c): opened after connect, each send() and
 * received piece, FIN/RST, closed with the connection. */
void cf_pcap_open(struct cf_conn *k);
void cf_pcap_data(struct cf_conn *k, bool from_peer, const uint8_t *d, size_t n);
void cf_pcap_end(struct cf_conn *k, bool from_peer, bool reset);
void cf_pcap_close(struct cf_conn *k);

/* ------------------------------------------------------------ MPA */

/* Our Request as the cases change it. */
struct cf_req {
	uint8_t rev, flags; /* flags as on the wire */
	bool enhanced, p2p;
	uint8_t rtr;
	uint16_t ird, ord;
	uint16_t pd_len; /* total PD_Length, RFC 6581 block included */
	const char *key; /* NULL: the Request key */
	int trunc;       /* >= 0: send only this many octets */
	size_t seg;      /* octets per send() */
};
void cf_req_default(struct cf_req *q);
/* Build the frame into out; its length. Illegal contents are allowed. */
size_t cf_req_build(const struct cf_req *q, uint8_t *out, size_t cap);

enum cf_mpa_out { CF_MPA_ACCEPT, CF_MPA_REJECT, CF_MPA_CLOSED, CF_MPA_TIMEOUT, CF_MPA_BAD };
struct cf_reply {
	enum cf_mpa_out out;
	struct iw_mpa_frame f;
	enum iw_wire_err why;
	uint8_t raw[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	size_t raw_len;
};
/* Connect, send q, read the Reply (or the close) within ms. */
int cf_mpa_try(struct cf_conn *k, struct cf_ctx *c, const struct cf_req *q, struct cf_reply *rep,
	       unsigned ms);
const char *cf_mpa_out_str(enum cf_mpa_out o);
/* Read one MPA frame of that kind (or see the close) within ms; 0, or -1
 * on a socket error. The peer's Request is read this way in Group 2. */
int cf_mpa_read(struct cf_conn *k, struct cf_reply *rep, unsigned ms, enum iw_mpa_kind kind);
/* After an accepting Reply: set up the FPDU codecs and send the RTR the
 * Reply chose (none without P2P); a READ RTR's zero-length Read Response is
 * awaited. 0 or -1 (reported). */
int cf_mpa_finish(struct cf_conn *k, const struct cf_req *q, const struct cf_reply *rep);
/* Why the Reply's RTR choice breaks RFC 6581 7.1 for our Request, or NULL. */
const char *cf_mpa_rtr_problem(const struct cf_req *q, const struct cf_reply *rep);
/* After an accepting Reply judged illegal: send the RTR the Reply chose
 * anyway and settle, so that the peer is established before we close. */
int cf_mpa_complete_anyway(struct cf_conn *k, const struct cf_req *q, const struct cf_reply *rep);
/* A good connection: rev 2, enhanced, P2P, WRITE RTR, crc as given, M
 * (markers towards us) if markers. */
int cf_establish(struct cf_conn *k, struct cf_ctx *c, bool crc, bool markers);

/* ------------------------------------------------------------ FPDUs */

/* Frame hdr+payload as one FPDU and send it, seg octets per send().
 * corrupt_crc flips the CRC. */
int cf_fpdu_send(struct cf_conn *k, const uint8_t *hdr, size_t hlen, const uint8_t *pl, size_t n,
		 size_t seg, bool corrupt_crc);
/* Frame without sending: into out, returns the wire length. */
size_t cf_fpdu_frame(struct cf_conn *k, uint8_t *out, size_t cap, const uint8_t *hdr, size_t hlen,
		     const uint8_t *pl, size_t n, bool corrupt_crc);
/* Untagged / tagged headers for op. */
size_t cf_hdr_untagged(uint8_t *out, unsigned op, uint32_t qn, uint32_t msn, uint32_t mo, bool last);
size_t cf_hdr_tagged(uint8_t *out, unsigned op, uint32_t stag, uint64_t to, bool last);

/* One received segment, whole. */
struct cf_seg {
	struct iw_ddp_seg s;
	uint8_t *pl; /* payload (malloc'd by the caller, pl_cap) */
	size_t pl_cap, pl_len;
};
/* The next complete segment: CF_IO_OK, CF_IO_CLOSED, CF_IO_TIMEOUT, or
 * CF_IO_ERR (the peer's stream broke the rules; logged). */
int cf_seg_recv(struct cf_conn *k, struct cf_seg *g, unsigned ms);

/* ------------------------------------------------------------ catalogue */

extern const struct cf_case cf_group1[], cf_group2[], cf_group3[], cf_group4[];
extern const size_t cf_group1_n, cf_group2_n, cf_group3_n, cf_group4_n;
const char *cf_group_name(char g);

/* ------------------------------------------------------------ quirks, output */

struct cf_quirk {
	char id[16];
	char observed[96];
	char why[160];
};
int cf_quirks_load(const char *path, struct cf_quirk **out, size_t *n);
/* Apply the listed quirks to a finished case (FAIL matching -> DEVIATES,
 * listed but behaving otherwise -> FAIL saying so). */
void cf_quirks_apply(const struct cf_quirk *q, size_t n, const struct cf_case *cs,
		     struct cf_result *r);

struct cf_run {
	const struct cf_case *cs;
	struct cf_result r;
};
const char *cf_verdict_str(enum cf_verdict v);
void cf_out_text(const struct cf_run *runs, size_t n, bool verbose);
int cf_out_md(const char *path, const struct cf_run *runs, size_t n, const struct cf_opts *o);
int cf_out_json(const char *path, const struct cf_run *runs, size_t n, const struct cf_opts *o);
int cf_out_junit(const char *path, const struct cf_run *runs, size_t n, const struct cf_opts *o);



/* ------------------------------------------------------------ rping */

#define CF_OUR_STAG 0x00C0FF01u
/* Send (op) of n octets on QN 0 with the next MSN. */
int cf_send_msg(struct cf_conn *k, unsigned op, const uint8_t *p, size_t n, size_t seg);
/* The next segment with opcode op, others skipped. */
int cf_await_op(struct cf_conn *k, struct cf_seg *g, unsigned op, unsigned ms);
/* cf_await_op for the peer's first answer after the handshake. Linux 6.1's
 * siw (siw_accept) enters RDMA mode before it sends its Reply and reads
 * the RTR only from a data-ready upcall it installs after: an RTR landing
 * in between sits unread (siw_cm_llp_data_ready ignores data in RDMA
 * mode), siw never reports ESTABLISHED, and our close then BUG()s its
 * iw_cm. So after a second of silence one zero-length RDMA Write goes out
 * (logged) to make the peer read its socket again. */
int cf_await_first(struct cf_conn *k, struct cf_seg *g, unsigned op, unsigned ms);
/* How long to wait for a peer that may be about to accept: its own timeout
 * and our wait. Closing on a peer that then accepts is the close before
 * ESTABLISHED that crashes siw's iw_cm, and a loaded TCG guest took more
 * than 4 s to answer a legal Request. */
unsigned cf_patience_ms(const struct cf_opts *o);
/* Advertise len octets at CF_OUR_STAG and read the peer's Read Request. */
int cf_learn_sink(struct cf_conn *k, struct iw_read_req *rr, uint32_t len);
/* Wait until the peer's application is established before a case closes
 * or injects a fault: an rping server issues its Read only after its accept
 * saw ESTABLISHED, so we advertise and await the Read Request (k->sink);
 * with round, we also answer it and take the go-ahead, so that nothing is
 * pending. With ORD 0 (no Read can come) we wait for the peer to close
 * after our advertisement instead. 0, or -1 if the peer did not play
 * (logged). */
int cf_settle(struct cf_conn *k, bool round);
#endif
