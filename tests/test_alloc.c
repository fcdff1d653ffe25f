/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Failing allocations (issue 12): a context made with an allocator
 * (IW_CONTEXT_ATTR_ALLOC) that fails its N-th allocation, for N = 1, 2, ...
 * until the whole operation runs without meeting the failure. Each time
 * the call that needed the memory must fail cleanly (NULL or a positive
 * errno, ENOMEM; a work completion in error; a CM event with a status),
 * every WR posted must complete exactly once (done or flushed), nothing may
 * hang, and once everything is destroyed the allocator must hold nothing:
 * the allocator counts what is live, so a leak shows without valgrind.
 *
 * Covered: creating the context; creating PDs, MRs, windows, channels,
 * CQs, QPs, SRQs and CM ids; connection setup over 127.0.0.1 (listener,
 * connect, accept, both contexts on the failing allocator); posting and
 * receiving SENDs (inline and not), an RDMA WRITE and an RDMA READ, the
 * SENDs held by the server (IW_QP_CREATE_RECV_HOLD) until it posts its
 * receives. FA_DEBUG=1 in the
 * environment prints where each refused allocation was asked for.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iwarp/cm.h"
#include "iwarp/verbs.h"
#include "suites.h"

#define FA_MAX_N 600   /* more allocations than any operation here makes */
#define WAIT_MS 3000   /* a CM event or a completion that takes longer is lost */

/* ============================================================ allocator */

struct fa {
	atomic_long live;    /* allocations not freed */
	atomic_long count;   /* allocations asked for since the last arm */
	atomic_long fail_at; /* the one to refuse (1-based); 0: none */
	atomic_long failed;  /* refusals so far */
};

static bool fa_refuse(struct fa *f)
{
	long n = atomic_fetch_add(&f->count, 1) + 1;
	if (atomic_load(&f->fail_at) != n)
		return false;
	atomic_fetch_add(&f->failed, 1);
	if (getenv("FA_DEBUG")) {
		void *bt[12];
		fprintf(stderr, "-- refused allocation %ld:\n", n);
		backtrace_symbols_fd(bt, backtrace(bt, 12), 2);
	}
	return true;
}

static void *fa_malloc(void *user, size_t n)
{
	struct fa *f = user;
	void *p = fa_refuse(f) ? NULL : malloc(n);
	if (p)
		atomic_fetch_add(&f->live, 1);
	return p;
}

static void *fa_calloc(void *user, size_t num, size_t n)
{
	struct fa *f = user;
	void *p = fa_refuse(f) ? NULL : calloc(num, n);
	if (p)
		atomic_fetch_add(&f->live, 1);
	return p;
}

static void *fa_realloc(void *user, void *old, size_t n)
{
	struct fa *f = user;
	if (fa_refuse(f))
		return NULL; /* old stays valid, as with realloc(3) */
	void *p = realloc(old, n);
	if (p && !old)
		atomic_fetch_add(&f->live, 1);
	return p;
}

static void fa_free(void *user, void *p)
{
	struct fa *f = user;
	if (p)
		atomic_fetch_sub(&f->live, 1);
	free(p);
}

static const struct iw_alloc_ops fa_ops_proto = {
	.malloc = fa_malloc, .calloc = fa_calloc, .realloc = fa_realloc, .free = fa_free};

static void fa_arm(struct fa *f, long n)
{
	atomic_store(&f->count, 0);
	atomic_store(&f->failed, 0);
	atomic_store(&f->fail_at, n);
}

static struct iw_context *fa_context(struct fa *f, struct iw_alloc_ops *ops)
{
	*ops = fa_ops_proto;
	ops->user = f;
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_ALLOC, .alloc = ops};
	return iw_context_new(&a);
}

/* A call that returned NULL must say why: out of memory. */
#define CK_NOMEM(what, n)                                                                  \
	ck_assert_msg(errno == ENOMEM, "N=%ld: %s failed with %s, not ENOMEM", (long)(n), what, \
		      strerror(errno))

/* ============================================================ context */

START_TEST(alloc_context)
{
	struct fa f = {0};
	struct iw_alloc_ops ops;
	long n;
	for (n = 1; n < FA_MAX_N; n++) {
		fa_arm(&f, n);
		errno = 0;
		struct iw_context *ctx = fa_context(&f, &ops);
		if (!ctx) {
			CK_NOMEM("iw_context_new", n);
			ck_assert_msg(atomic_load(&f.live) == 0, "N=%ld: %ld allocations leaked", n,
				      atomic_load(&f.live));
			continue;
		}
		bool done = atomic_load(&f.failed) == 0;
		ck_assert_int_eq(iw_context_free(ctx), 0);
		ck_assert_msg(atomic_load(&f.live) == 0, "N=%ld: %ld allocations left after free",
			      n, atomic_load(&f.live));
		if (done)
			break;
	}
	ck_assert_msg(n > 2 && n < FA_MAX_N, "context: %ld allocations", n);
}
END_TEST

static void alloc_context_bad(void)
{
	struct iw_alloc_ops ops = fa_ops_proto;
	ops.realloc = NULL;
	struct iw_context_attr a = {.comp_mask = IW_CONTEXT_ATTR_ALLOC, .alloc = &ops};
	errno = 0;
	ck_assert_ptr_null(iw_context_new(&a));
	ck_assert_int_eq(errno, EINVAL);
	a.alloc = NULL;
	ck_assert_ptr_null(iw_context_new(&a));
	ck_assert_int_eq(errno, EINVAL);
}

START_TEST(alloc_context_invalid)
{
	alloc_context_bad();
}
END_TEST

/* ============================================================ objects */

struct objs {
	struct iw_pd *pd;
	struct iw_comp_channel *cc;
	struct iw_cq *cq;
	struct iw_srq *srq;
	struct iw_qp *qp;
	struct iw_mr *mr;
	struct iw_mw *mw;
	struct iw_cm_channel *cm;
	struct iw_cm_id *id;
	uint8_t buf[4096];
};

/* A creation refused: with ENOMEM (rc, or errno for rc -1). */
static bool refused(int rc, long n, const char *what)
{
	if (rc < 0)
		rc = errno;
	if (getenv("FA_DEBUG"))
		fprintf(stderr, "N=%ld refused in %s\n", n, what);
	ck_assert_msg(rc == ENOMEM, "N=%ld: %s failed with %s, not ENOMEM", n, what,
		      strerror(rc));
	return false;
}

/* Make them in order; false at the first refusal (errno checked). */
static bool objs_make(struct iw_context *ctx, struct objs *o, long n)
{
	if (!(o->pd = iw_alloc_pd(ctx)))
		return refused(-1, n, "iw_alloc_pd");
	if (!(o->cc = iw_create_comp_channel(ctx)))
		return refused(-1, n, "iw_create_comp_channel");
	if (!(o->cq = iw_create_cq(ctx, 64, NULL, o->cc, 0)))
		return refused(-1, n, "iw_create_cq");
	int rc = iw_resize_cq(o->cq, 128);
	if (rc)
		return refused(rc, n, "call");
	struct iw_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 2}};
	if (!(o->srq = iw_create_srq(o->pd, &sa)))
		return refused(-1, n, "iw_create_srq");
	struct iw_qp_init_attr qa = {.send_cq = o->cq, .recv_cq = o->cq, .qp_type = IW_QPT_RC,
				     .cap = {.max_send_wr = 16, .max_recv_wr = 16,
					     .max_send_sge = 2, .max_recv_sge = 2,
					     .max_inline_data = 64}};
	if (!(o->qp = iw_create_qp(o->pd, &qa)))
		return refused(-1, n, "iw_create_qp");
	if (!(o->mr = iw_reg_mr(o->pd, o->buf, sizeof(o->buf), IW_ACCESS_LOCAL_WRITE)))
		return refused(-1, n, "iw_reg_mr");
	if (!(o->mw = iw_alloc_mw(o->pd, IW_MW_TYPE_2)))
		return refused(-1, n, "iw_alloc_mw");
	if (!(o->cm = iw_cm_create_channel(ctx)))
		return refused(-1, n, "iw_cm_create_channel");
	rc = iw_cm_create_id(o->cm, &o->id, NULL);
	if (rc)
		return refused(rc, n, "call");
	return true;
}

static void objs_free(struct objs *o)
{
	ck_assert_int_eq(iw_cm_destroy_id(o->id), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(o->cm), 0);
	ck_assert_int_eq(iw_dealloc_mw(o->mw), 0);
	ck_assert_int_eq(iw_dereg_mr(o->mr), 0);
	ck_assert_int_eq(iw_destroy_qp(o->qp), 0);
	ck_assert_int_eq(iw_destroy_srq(o->srq), 0);
	ck_assert_int_eq(iw_destroy_cq(o->cq), 0);
	ck_assert_int_eq(iw_destroy_comp_channel(o->cc), 0);
	ck_assert_int_eq(iw_dealloc_pd(o->pd), 0);
}

START_TEST(alloc_objects)
{
	struct fa f = {0};
	struct iw_alloc_ops ops;
	struct iw_context *ctx = fa_context(&f, &ops);
	ck_assert_ptr_nonnull(ctx);
	/* A first round that fails nothing: the STag table grows to hold the
	 * MRs and keeps its size, which is not a leak. */
	static struct objs o0;
	ck_assert(objs_make(ctx, &o0, 0));
	objs_free(&o0);
	long base = atomic_load(&f.live), n;
	for (n = 1; n < FA_MAX_N; n++) {
		static struct objs o;
		memset(&o, 0, sizeof(o));
		fa_arm(&f, n);
		bool ok = objs_make(ctx, &o, n);
		ck_assert_msg(ok || atomic_load(&f.failed) == 1,
			      "N=%ld: a creation failed without a refused allocation", n);
		objs_free(&o);
		ck_assert_msg(atomic_load(&f.live) == base, "N=%ld: %ld allocations leaked", n,
			      atomic_load(&f.live) - base);
		if (ok && atomic_load(&f.failed) == 0)
			break;
	}
	ck_assert_msg(n > 10 && n < FA_MAX_N, "objects: %ld allocations", n);
	fa_arm(&f, 0);
	ck_assert_int_eq(iw_context_free(ctx), 0);
	ck_assert_int_eq(atomic_load(&f.live), 0);
}
END_TEST

/* ============================================================ connection */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next CM event of ch within WAIT_MS: its type, status and id; false
 * when none came. */
static bool cm_next(struct iw_cm_channel *ch, enum iw_cm_event_type *type, int *status,
		    struct iw_cm_id **id)
{
	int64_t dl = now_ms() + WAIT_MS;
	for (;;) {
		struct iw_cm_event *ev;
		int rc = iw_cm_get_event(ch, &ev);
		if (rc == 0) {
			*type = ev->event;
			*status = ev->status;
			*id = ev->id;
			ck_assert_int_eq(iw_cm_ack_event(ev), 0);
			return true;
		}
		ck_assert_int_eq(rc, EAGAIN);
		int left = (int)(dl - now_ms());
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		poll(&p, 1, left);
	}
}

#define NUM_SEND 4
#define NUM_RECV 2

/* One side of the pair. */
struct side {
	struct iw_context *ctx;
	struct iw_cm_channel *cm;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_id *id;
	struct iw_qp *qp;
	struct iw_mr *mr;
	uint8_t buf[256];
	int done[NUM_SEND + NUM_RECV]; /* completions seen per wr_id */
	bool posted[NUM_SEND + NUM_RECV];
};

static void side_set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* PD, CQ and channel on a context that does not fail (armed later). */
static void side_init(struct side *s, struct iw_context *ctx)
{
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->cm = iw_cm_create_channel(ctx);
	ck_assert_ptr_nonnull(s->cm);
	side_set_nonblock(s->cm->fd);
	s->pd = iw_alloc_pd(ctx);
	s->cq = iw_create_cq(ctx, 64, NULL, NULL, 0);
	s->mr = iw_reg_mr(s->pd, s->buf, sizeof(s->buf),
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(s->mr);
}

static int side_qp(struct side *s, struct iw_cm_id *id)
{
	struct iw_qp_init_attr qa = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IW_QPT_RC,
				     .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
					     .max_recv_sge = 1, .max_inline_data = 64},
				     .create_flags = IW_QP_CREATE_RECV_HOLD};
	s->id = id;
	int rc = iw_cm_create_qp(id, s->pd, &qa);
	if (rc == 0)
		s->qp = id->qp;
	return rc;
}

/* Take completions for up to WAIT_MS or until want have come. */
static void side_reap(struct side *s, int want, bool wait)
{
	int64_t dl = now_ms() + (wait ? WAIT_MS : 0);
	int got = 0;
	for (;;) {
		struct iw_wc wc[8];
		int k = iw_poll_cq(s->cq, 8, wc);
		ck_assert_int_ge(k, 0);
		for (int i = 0; i < k; i++) {
			ck_assert_uint_lt(wc[i].wr_id, NUM_SEND + NUM_RECV);
			s->done[wc[i].wr_id]++;
		}
		got += k;
		if (got >= want || now_ms() > dl)
			return;
		if (!k) {
			struct timespec t = {0, 200000};
			nanosleep(&t, NULL);
		}
	}
}

/* Every WR posted completed exactly once, every other never. */
static void side_check(const struct side *s, long n, const char *who)
{
	for (int i = 0; i < NUM_SEND + NUM_RECV; i++)
		ck_assert_msg(s->done[i] == (s->posted[i] ? 1 : 0),
			      "N=%ld: %s WR %d posted %d, completed %d times", n, who, i,
			      s->posted[i], s->done[i]);
}

static void post_recvs(struct side *s)
{
	for (int i = 0; i < NUM_RECV; i++) {
		struct iw_sge sg = {.addr = (uintptr_t)s->buf, .length = 64, .lkey = s->mr->lkey};
		struct iw_recv_wr wr = {.wr_id = NUM_SEND + i, .sg_list = &sg, .num_sge = 1}, *bad;
		int rc = iw_post_recv(s->qp, &wr, &bad);
		ck_assert_msg(rc == 0 || rc == ENOMEM, "iw_post_recv: %s", strerror(rc));
		s->posted[NUM_SEND + i] = rc == 0;
	}
}

static void post_sends(struct side *s, uint32_t rkey, uint64_t raddr)
{
	for (int i = 0; i < NUM_SEND; i++) {
		struct iw_sge sg = {.addr = (uintptr_t)s->buf + 128, .length = 64,
				    .lkey = s->mr->lkey};
		struct iw_send_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1,
					.opcode = IW_WR_SEND, .send_flags = IW_SEND_SIGNALED},
				  *bad;
		if (i == 1)
			wr.send_flags |= IW_SEND_INLINE;
		if (i >= 2) {
			wr.opcode = i == 2 ? IW_WR_RDMA_WRITE : IW_WR_RDMA_READ;
			wr.wr.rdma.rkey = rkey;
			wr.wr.rdma.remote_addr = raddr;
		}
		int rc = iw_post_send(s->qp, &wr, &bad);
		ck_assert_msg(rc == 0 || rc == ENOMEM, "iw_post_send: %s", strerror(rc));
		s->posted[i] = rc == 0;
	}
}

/* Wait for ESTABLISHED on ch (false: a refusal ended the connection with
 * an event that has a status, or it never started). */
static bool wait_established(struct iw_cm_channel *ch, long n, const char *who)
{
	enum iw_cm_event_type t;
	int st;
	struct iw_cm_id *id;
	ck_assert_msg(cm_next(ch, &t, &st, &id), "N=%ld: %s: no CM event within %d ms", n, who,
		      WAIT_MS);
	if (t == IW_CM_EVENT_ESTABLISHED)
		return true;
	ck_assert_msg(t == IW_CM_EVENT_CONNECT_ERROR || t == IW_CM_EVENT_REJECTED ||
			      t == IW_CM_EVENT_DISCONNECTED,
		      "N=%ld: %s: %s instead of ESTABLISHED", n, who, iw_cm_event_str(t));
	return false;
}

/* One attempt with the N-th allocation (of both contexts) refused. */
static void conn_round(struct fa *f, struct side *cli, struct side *srv, struct iw_cm_id *listen,
		       long n)
{
	struct sockaddr_in addr;
	memcpy(&addr, &listen->local_addr, sizeof(addr));
	fa_arm(f, n);
	struct iw_cm_id *cid = NULL;
	int rc = iw_cm_create_id(cli->cm, &cid, NULL);
	if (rc)
		goto out;
	if ((rc = side_qp(cli, cid)))
		goto out;
	post_recvs(cli);
	struct iw_conn_param cp = {.responder_resources = 4, .initiator_depth = 4};
	rc = iw_cm_connect(cid, (struct sockaddr *)&addr, &cp);
	if (rc)
		goto out;
	enum iw_cm_event_type t = IW_CM_EVENT_CONNECT_ERROR;
	int st = 0;
	struct iw_cm_id *sid = NULL;
	ck_assert_msg(cm_next(srv->cm, &t, &st, &sid) || atomic_load(&f->failed),
		      "N=%ld: no CONNECT_REQUEST", n);
	bool up = false;
	if (sid && t == IW_CM_EVENT_CONNECT_REQUEST) {
		if (side_qp(srv, sid) == 0) {
			struct iw_conn_param ap = {.responder_resources = 4, .initiator_depth = 4};
			rc = iw_cm_accept(sid, &ap);
			if (rc == 0)
				up = wait_established(srv->cm, n, "server");
		} else {
			/* No QP: the application turns the peer away. */
			srv->id = sid;
			rc = iw_cm_reject(sid, NULL, 0);
			ck_assert_msg(rc == 0 || rc == ENOMEM, "N=%ld: iw_cm_reject: %s", n,
				      strerror(rc));
		}
	}
	bool cli_up = wait_established(cli->cm, n, "client");
	if (up && cli_up) {
		post_sends(cli, srv->mr->rkey, (uintptr_t)srv->buf + 128);
		int sends = cli->posted[0] + cli->posted[1];
		int want = sends + cli->posted[2] + cli->posted[3];
		side_reap(cli, want, true);
		/* The Read's response followed the Sends: the server holds them
		 * (IW_QP_CREATE_RECV_HOLD) until these receives take them. */
		post_recvs(srv);
		int recvs = srv->posted[NUM_SEND] + srv->posted[NUM_SEND + 1];
		side_reap(srv, sends < recvs ? sends : recvs, true);
		/* On a live connection no WR may wait for ever: each completes,
		 * in error if a refusal broke something. */
		int got = 0;
		for (int i = 0; i < NUM_SEND; i++)
			got += cli->done[i];
		ck_assert_msg(got == want, "N=%ld: %d of %d send WRs completed within %d ms", n,
			      got, want, WAIT_MS);
	}
	rc = 0;
out:
	ck_assert_msg(rc == 0 || rc == ENOMEM, "N=%ld: %s", n, strerror(rc));
	/* Destroying the ids flushes what is left: every WR completes. */
	if (cli->id)
		ck_assert_int_eq(iw_cm_destroy_id(cli->id), 0);
	else if (cid)
		ck_assert_int_eq(iw_cm_destroy_id(cid), 0);
	if (srv->id)
		ck_assert_int_eq(iw_cm_destroy_id(srv->id), 0);
	side_reap(cli, 0, false);
	side_reap(srv, 0, false);
	side_check(cli, n, "client");
	side_check(srv, n, "server");
}

static void side_reset(struct side *s)
{
	s->id = NULL;
	s->qp = NULL;
	memset(s->done, 0, sizeof(s->done));
	memset(s->posted, 0, sizeof(s->posted));
	/* Events of ids destroyed in the round (a late DISCONNECTED). */
	struct iw_cm_event *ev;
	while (iw_cm_get_event(s->cm, &ev) == 0)
		iw_cm_ack_event(ev);
}

static void side_fini(struct side *s)
{
	ck_assert_int_eq(iw_dereg_mr(s->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(s->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(s->pd), 0);
	ck_assert_int_eq(iw_cm_destroy_channel(s->cm), 0);
}

START_TEST(alloc_connection)
{
	struct fa f = {0};
	struct iw_alloc_ops ops_c, ops_s;
	static struct side cli, srv;
	struct iw_context *cctx = fa_context(&f, &ops_c), *sctx = fa_context(&f, &ops_s);
	ck_assert_ptr_nonnull(cctx);
	ck_assert_ptr_nonnull(sctx);
	side_init(&cli, cctx);
	side_init(&srv, sctx);
	struct iw_cm_id *listen;
	ck_assert_int_eq(iw_cm_create_id(srv.cm, &listen, NULL), 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(iw_cm_bind_addr(listen, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(iw_cm_listen(listen, 0), 0);
	long n;
	for (n = 1; n < FA_MAX_N; n++) {
		side_reset(&cli);
		side_reset(&srv);
		conn_round(&f, &cli, &srv, listen, n);
		if (atomic_load(&f.failed) == 0)
			break;
	}
	fa_arm(&f, 0);
	ck_assert_msg(n > 10 && n < FA_MAX_N, "connection: %ld allocations", n);
	ck_assert_int_eq(iw_cm_destroy_id(listen), 0);
	side_reset(&cli);
	side_reset(&srv);
	side_fini(&cli);
	side_fini(&srv);
	ck_assert_int_eq(iw_context_free(cctx), 0);
	ck_assert_int_eq(iw_context_free(sctx), 0);
	ck_assert_msg(atomic_load(&f.live) == 0, "%ld allocations leaked", atomic_load(&f.live));
}
END_TEST

Suite *suite_alloc(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("fail_nth");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, alloc_context);
	tcase_add_test(tc, alloc_context_invalid);
	tcase_add_test(tc, alloc_objects);
	tcase_add_test(tc, alloc_connection);
	suite_add_tcase(s, tc);
	return s;
}
