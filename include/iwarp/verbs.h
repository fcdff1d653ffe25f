/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libiwarp verbs: protection domains, memory regions, completion queues,
 * queue pairs and shared receive queues, in the shapes of rdma-core's
 * libibverbs so that code written for it ports by renaming ibv_ to iw_.
 * No ibv_ symbol is defined: the real libibverbs can be linked beside us.
 *
 * Errors (one conversion point, as in libibverbs): calls that return a
 * pointer return NULL and set errno; calls that return int return 0 or a
 * positive errno value. The exception is iw_poll_cq, which returns a count
 * or a negative errno. Every free/destroy accepts NULL (and returns 0).
 *
 * Ownership: every object is created on a parent (context -> PD -> MR, QP,
 * SRQ; context -> completion channel -> CQ), and what an object uses (its
 * parent; a QP's CQs and SRQ) must outlive it: a PD, channel, CQ or SRQ
 * still in use refuses to be destroyed (EBUSY). iw_context_free only
 * checks for CM ids: free everything else first. Structures the application passes in (attributes, work requests, SGE
 * lists) are copied; memory that data moves through (registered regions)
 * is never copied and must stay valid while the library may use it.
 *
 * Event loop: a context runs on a libevent loop. iw_context_new takes the
 * application's event_base (attr->base); libiwarp adds its events to it and
 * the application dispatches it. With attr->base NULL (convenience mode)
 * the context creates its own base and runs it on a thread of its own,
 * joined by iw_context_free. Data only moves (receives, completions,
 * connection setup) while the loop runs. libiwarp touches libevent only on
 * the loop thread, so the base needs no libevent thread support.
 *
 * Threads: iw_post_send, iw_post_recv, iw_post_srq_recv, iw_poll_cq,
 * iw_req_notify_cq, iw_get_cq_event, iw_ack_cq_events, iw_get_async_event,
 * iw_reg_mr, iw_dereg_mr and iw_qp_inject_fault may be called from any
 * thread. Posting writes
 * to the socket from the calling thread when it can (never blocking) and
 * leaves the rest to the loop. No libiwarp lock is held while application
 * code runs: completions and events are delivered through queues with an
 * fd, never by callback. Creation and destruction of an object must not
 * race with use of the same object. The connection manager (cm.h) hands
 * its calls to the loop thread: see there.
 */
#ifndef IWARP_VERBS_H
#define IWARP_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The TERMINATE triples in vendor_err and the event fields (IW_TERM(),
 * IW_TERM_NONE, iw_term_str) are wire.h's. */
#include <iwarp/wire.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct iw_context;
struct iw_pd;
struct iw_cq;
struct iw_qp;
struct iw_srq;
struct iw_comp_channel;

/* ============================================================ context */

enum iw_context_attr_mask {
	IW_CONTEXT_ATTR_PCAP = 1 << 0,     /* pcap_path is valid */
	IW_CONTEXT_ATTR_PCAP_MAX = 1 << 1, /* pcap_max_bytes is valid */
	IW_CONTEXT_ATTR_RX_BOUNCE = 1 << 2, /* rx_bounce_len is valid */
	IW_CONTEXT_ATTR_LOOP_CPUSET = 1 << 3, /* loop_cpuset and loop_cpuset_size are valid */
	IW_CONTEXT_ATTR_LOOP_NAME = 1 << 4,   /* loop_name is valid */
	IW_CONTEXT_ATTR_CONN_OPTS = 1 << 5,   /* conn_opts is valid */
	IW_CONTEXT_ATTR_FLAGS = 1 << 6,       /* flags is valid */
	IW_CONTEXT_ATTR_ALLOC = 1 << 7,       /* alloc is valid */
	IW_CONTEXT_ATTR_LOOPS = 1 << 8,       /* num_loops, bases and loop_flags are valid */
};

/* iw_context_attr.loop_flags. */
enum iw_context_loop_flags {
	/* Convenience mode: loop i runs on one CPU only, the i-th (wrapping)
	 * of loop_cpuset, or of the CPUs the process may use. */
	IW_LOOP_PIN = 1 << 0,
};

/* iw_context_attr.flags. */
enum iw_context_flags {
	/* Run-to-completion polling mode: the threads that call iw_poll_cq
	 * and iw_progress receive for the connections they poll (see
	 * iw_progress). */
	IW_CONTEXT_POLL = 1 << 0,
};

struct iw_conn_opts; /* <iwarp/cm.h> */

/* The allocator of a context (iw_context_attr.alloc): malloc(3),
 * calloc(3), realloc(3) and free(3) with the application's pointer user.
 * Every allocation the library makes for the context goes through it: the
 * context itself, PDs, MRs and memory windows, CQs, QPs, SRQs, completion
 * and CM event channels, CM ids and their events, the queues of a QP,
 * posting (scatter/gather lists, inline data), receiving and transmitting
 * (the receive buffer, the transmit queue), asynchronous events and the
 * trace. Only libevent's own event structures use libevent's allocator
 * (event_set_mem_functions). The functions may be called from any thread,
 * the context's loop thread included, and must be thread-safe; a failure
 * (NULL) is reported as ENOMEM by the call that needed the memory, a
 * flushed or failed work completion, a CM event with a negative status, or
 * (for an asynchronous event that cannot be queued) a count in
 * the count of lost asynchronous events; it is never fatal. All four
 * must be set. */
struct iw_alloc_ops {
	void *(*malloc)(void *user, size_t size);
	void *(*calloc)(void *user, size_t num, size_t size);
	void *(*realloc)(void *user, void *ptr, size_t size);
	void (*free)(void *user, void *ptr);
	void *user;
};

/* Default of iw_context_attr.rx_bounce_len: room for the read-ahead of
 * six 32 KiB segments of one large message (lib/conn/rx_plan.c), which
 * needs as much bounce buffer as it reads ahead. */
#define IW_RX_BOUNCE_LEN_DEFAULT (256 * 1024)

struct iw_context_attr {
	uint32_t comp_mask;
	/* The application's loop. NULL: the context starts its own loop
	 * thread (convenience mode). */
	struct event_base *base;
	/* Trace every connection's octets, both ways, into this pcap file
	 * (IWARP_PCAP in the environment does the same for programs that do
	 * not set it). "%p" in the path becomes the process ID; a second
	 * context of the process on the same path writes "<name>-2<.ext>".
	 * Each connection appears as TCP with its real addresses and ports,
	 * a synthesised handshake, consistent sequence numbers and a FIN (RST
	 * for an abortive close) at the end, so that Wireshark decodes the MPA
	 * exchange and every FPDU. Octets are copied to a bounded queue that a
	 * thread of the trace writes out: the data path never waits for the
	 * disk, and what does not fit the queue is dropped (a gap in the
	 * stream). NULL: no trace. */
	const char *pcap_path;
	/* Size cap of the trace file in octets (IWARP_PCAP_MAX in the
	 * environment, with an optional K, M, G or T suffix, otherwise). 0:
	 * the default, 1 GiB; below 1024: EINVAL. The trace stops at the
	 * last record that fits, for good (no rotation: a file without the
	 * MPA exchange cannot be decoded). A trace that dropped octets or
	 * reached the cap ends with a syslog record that says so, and a line
	 * on stderr when the context is freed. */
	uint64_t pcap_max_bytes;
	/* Octets the loop reads from a socket at once into its receive
	 * buffer (payloads placed directly in registered memory aside; see
	 * iw_conn_opts.direct_min): 4096 to 16 MiB; 0 or no
	 * IW_CONTEXT_ATTR_RX_BOUNCE: IW_RX_BOUNCE_LEN_DEFAULT. With
	 * IW_CONTEXT_POLL, also the size of the (at most four) buffers that
	 * polling threads read large messages ahead into, allocated when
	 * first needed. */
	uint32_t rx_bounce_len;
	/* Convenience mode only (base NULL): the CPUs the loop threads may
	 * run on, a cpu_set_t of loop_cpuset_size octets as
	 * pthread_setaffinity_np(3) takes it (sizeof(cpu_set_t), or
	 * CPU_ALLOC_SIZE for a dynamic set). Set before the threads run;
	 * without it they inherit the affinity of the thread calling
	 * iw_context_new. */
	const void *loop_cpuset;
	size_t loop_cpuset_size;
	/* Convenience mode only: the loop thread's name (ps -L, top -H, gdb),
	 * at most 15 characters; with several loops, loop i's is the name cut
	 * to fit "<name>-<i>". Default: "iwarp-loop". */
	const char *loop_name;
	/* Every CM id of the context starts with these connection options
	 * (the fields named in conn_opts->comp_mask, copied; see
	 * iw_cm_set_conn_opts): e.g. keepalive and TCP_USER_TIMEOUT for all
	 * connections at once. Checked as iw_cm_set_conn_opts checks them. */
	const struct iw_conn_opts *conn_opts;
	/* enum iw_context_flags (IW_CONTEXT_ATTR_FLAGS). The mode is the
	 * context's rather than a CQ's: a QP may complete into two CQs, and
	 * one thread that polls either must be able to drive its socket. */
	uint32_t flags;
	/* IW_CONTEXT_ATTR_ALLOC: the allocator (copied; see struct
	 * iw_alloc_ops). Without it: malloc(3) and friends. */
	const struct iw_alloc_ops *alloc;
	/* IW_CONTEXT_ATTR_LOOPS (base must be NULL): the loop group. With
	 * bases NULL, num_loops threads of our own (0: one per CPU, as
	 * without IW_CONTEXT_ATTR_LOOPS),
	 * named and bound as the LOOP_* options say. With bases, num_loops
	 * application event_bases, one loop each, typically one per
	 * application thread: libiwarp only touches base i on the thread that
	 * dispatches it, which it learns when base i first runs (an event of
	 * ours is active from the start), so a CM call for an id on loop i
	 * from any other thread waits until base i is being dispatched.
	 * Without IW_CONTEXT_ATTR_LOOPS: attr->base as the one loop, or (base
	 * NULL) one loop thread per CPU the context may use (loop_cpuset's,
	 * else the calling thread's affinity: one under taskset -c N). */
	uint32_t num_loops;
	struct event_base *const *bases;
	uint32_t loop_flags; /* enum iw_context_loop_flags */
};

/*
 * Create a context: the STag table, the asynchronous event queue and the
 * event loops everything else runs on.
 *
 * attr may be NULL (own loop thread, no trace). attr is only read during
 * the call. With attr->base set, libiwarp adds an event to that base now:
 * call this on the thread that runs the loop, or before the loop runs. The
 * base is the application's: it must outlive the context and keep being
 * dispatched (CM calls from other threads wait for it). With attr->base
 * NULL the context starts its own loop threads, one per CPU it may use
 * (those of loop_cpuset, else the calling thread's affinity; num_loops
 * with IW_CONTEXT_ATTR_LOOPS), named loop_name
 * (IW_CONTEXT_ATTR_LOOP_NAME, else "iwarp-loop", "-<i>" added when there
 * are several) and bound to the CPUs of loop_cpuset
 * (IW_CONTEXT_ATTR_LOOP_CPUSET). With pcap_path (with
 * IW_CONTEXT_ATTR_PCAP in comp_mask, else $IWARP_PCAP) the trace file is
 * created now and written by a thread of the context until
 * iw_context_free; pcap_max_bytes (IW_CONTEXT_ATTR_PCAP_MAX, else
 * $IWARP_PCAP_MAX) bounds it. What the trace holds, and what happens
 * when it cannot keep up or is full, is told at struct iw_context_attr in
 * <iwarp/verbs.h>. With IW_CONTEXT_ATTR_LOOPS the context runs a group
 * of loops (num_loops threads, named "<loop_name>-<i>" when there are
 * several, or the num_loops bases of bases, each added to now: call this
 * before those bases run, then run them, as CM calls wait for them); CM
 * ids are spread over them (iw_cm_set_spread,
 * iw_cm_set_loop in <iwarp/cm.h>).
 *
 * Returns: the context, or NULL with errno set.
 * Errors:
 *   EINVAL  pcap_max_bytes (or IWARP_PCAP_MAX) below 1024, or
 *           IWARP_PCAP_MAX is not a number with an optional K/M/G/T;
 *           rx_bounce_len outside 4096..16 MiB; a LOOP_* option with
 *           attr->base set; loop_cpuset NULL or of size 0, or a set with
 *           no CPU this process may use; loop_name NULL, empty or longer
 *           than 15 characters; conn_opts NULL, or a field of it out
 *           of range (iw_cm_set_conn_opts); flags with a bit that is
 *           not an enum iw_context_flags; IW_CONTEXT_ATTR_ALLOC with
 *           alloc NULL or one of its four functions NULL;
 *           IW_CONTEXT_ATTR_LOOPS with base set, with bases and
 *           num_loops 0, with num_loops above 1024, with a bit of
 *           loop_flags that is not an enum iw_context_loop_flags, or with
 *           IW_LOOP_PIN and bases.
 *   ENOENT  The trace file could not be created; any errno of fopen(3)
 *           (EACCES, EROFS, ...) is passed on the same way.
 *   ENOMEM  Out of memory, or the event base could not be created.
 *   EMFILE  No file descriptor for the event queue or the loop's wake-up
 *           eventfd (ENFILE: the system-wide limit).
 *   EAGAIN  The loop thread or the trace writer thread could not be
 *           started (pthread_create).
 */
struct iw_context *iw_context_new(const struct iw_context_attr *attr);
/*
 * Free a context. A context with CM ids still alive is left untouched
 * (EBUSY); nothing else is checked: destroy every PD, MR, CQ, QP, SRQ and
 * channel first. MRs still registered are freed with the context (their
 * struct iw_mr becomes invalid) and queued asynchronous events are dropped.
 * In convenience mode the loop thread is stopped and joined. A trace
 * (pcap_path) is finished: what is still queued is written, the file is
 * closed and the writer thread joined. With an application base, the
 * context's event is removed from the base (call this on the loop thread
 * or while the loop is not running); the base itself is not freed.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   CM ids (iw_cm_create_id, or made for incoming connections)
 *           still exist on the context.
 */
int iw_context_free(struct iw_context *ctx);
/*
 * Drive every connection of a polling context from the calling thread.
 * In a context created with IW_CONTEXT_POLL (iw_context_attr.flags) the
 * threads that poll move the data: iw_poll_cq, when the CQ holds fewer
 * completions than asked for, reads the sockets of the running
 * connections whose QPs complete into that CQ (nonblocking), places what
 * arrived and completes work requests on the calling thread, and
 * iw_progress does the same for every connection of the context (for an
 * application that polls several CQs, or waits for an RDMA Write to land
 * in its memory); while some connection has delivered octets within
 * the last 4096 calls, one whose last octets came more than 256 calls
 * before those is read at one call in 64 until it delivers again (an idle
 * connection would cost every call a system call), unless it has output
 * queued. iw_post_send writes on the calling thread in either
 * mode while the socket takes the octets, and a polling thread writes
 * what a full socket left queued at each visit, while the loop waits for
 * room once (not once per poll). An iw_poll_cq that finds nothing also
 * reads, without keeping the loop off them, for the context's
 * connections that complete into other CQs and that no poller of their
 * own keeps: at every such poll while they deliver octets, at one in 128
 * while they are quiet. Connection
 * setup, timers and the end of a connection stay with the loop thread,
 * as do connections nobody polls: a thread that arms a CQ to sleep on its completion channel
 * (iw_req_notify_cq) hands the CQ's connections back
 * to the loop at once; one that stops polling without arming finds the
 * loop reading for it again within 1 to 16 ms (the loop looks less often
 * the longer pollers stay). Polling a CQ keeps the loop off only the
 * connections whose arriving octets can complete work into it (a receive
 * posted, or an SRQ, for a receive CQ; a Read or atomic response, or a
 * LOCAL_INV waiting for placements, for a send CQ): a thread that polls
 * only for its Writes' and Sends' completions, then watches its memory for
 * the peer's Write, leaves that Write to the loop, which places it at
 * once. Any number of threads may poll at once; a
 * connection another thread is reading is skipped, not waited for. In a
 * context without IW_CONTEXT_POLL this does nothing.
 *
 * Returns: the number of socket reads that moved octets (0: nothing
 * arrived), or -EINVAL.
 * Errors:
 *   EINVAL  ctx is NULL.
 */
int iw_progress(struct iw_context *ctx);

/*
 * Count a context's loops. Tells how many event loops the context runs
 * (iw_context_attr.num_loops, IW_CONTEXT_ATTR_LOOPS): the valid loop
 * numbers of iw_cm_set_loop and iw_cm_get_loop are 0 up to this minus 1.
 * Any thread.
 *
 * Returns: the number of loops, at least 1; 0 for ctx NULL.
 */
unsigned iw_context_num_loops(struct iw_context *ctx);

/* Capabilities in iw_device_attr.device_cap_flags. */
enum iw_device_cap_flags {
	/* Fast registration (IW_WR_REG_MR on an iw_alloc_mr MR, IW_WR_LOCAL_INV)
	 * and Send with Invalidate, both ways. */
	IW_DEVICE_MEM_MGT_EXTENSIONS = 1 << 0,
	/* RFC 7306 atomics and immediate data, on QPs created with
	 * IW_QP_CREATE_RFC7306 (the peer must implement RFC 7306 too). */
	IW_DEVICE_RFC7306 = 1 << 1,
	IW_DEVICE_RESIZE_CQ = 1 << 2,  /* iw_resize_cq */
	IW_DEVICE_RESIZE_SRQ = 1 << 3, /* iw_modify_srq with IW_SRQ_MAX_WR */
	/* Type 1 memory windows (iw_alloc_mw, iw_bind_mw). */
	IW_DEVICE_MEM_WINDOW = 1 << 4,
	/* Type 2 memory windows (iw_alloc_mw, IW_WR_BIND_MW), associated with
	 * a QP and a PD (InfiniBand's type 2B). */
	IW_DEVICE_MEM_WINDOW_TYPE_2 = 1 << 5,
};

/* The limits of a context, as libibverbs' struct ibv_device_attr names them.
 * Every field is a bound the corresponding call enforces. */
struct iw_device_attr {
	/* In: the extension groups the caller's struct has room for (0 for
	 * this version). Out: those that were filled. The fields below are
	 * always filled. */
	uint32_t comp_mask;
	uint64_t device_cap_flags;    /* enum iw_device_cap_flags */
	uint64_t max_mr_size;         /* octets one MR may cover */
	uint32_t max_qp;              /* QPs alive at once on the context */
	uint32_t max_qp_wr;           /* max_send_wr, max_recv_wr */
	uint32_t max_sge;             /* max_send_sge, max_recv_sge */
	uint32_t max_inline_data;
	uint32_t max_cqe;             /* cqe of iw_create_cq, iw_resize_cq */
	uint32_t max_mr;              /* MRs and memory windows (STags) alive at once */
	uint32_t max_qp_rd_atom;      /* IRD: inbound Reads and atomics per QP */
	uint32_t max_qp_init_rd_atom; /* ORD: outbound Reads and atomics per QP */
	uint32_t max_srq_wr;          /* max_wr of an SRQ */
	uint32_t max_srq_sge;
};
/*
 * Query a context's limits and capabilities: fill *attr with the largest
 * values iw_create_qp, iw_create_cq, iw_create_srq, iw_reg_mr and the ORD
 * and IRD of a connection accept, and the features in device_cap_flags.
 * They are the library's own limits: the same for every context and every
 * peer (a connection may negotiate a smaller IRD or ORD).
 *
 * Set attr->comp_mask to the extension groups your struct has room for
 * (0 for this version of the struct) before the call; it returns the
 * groups filled. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  ctx or attr is NULL.
 */
int iw_query_device(struct iw_context *ctx, struct iw_device_attr *attr);

/* Asynchronous events: QP fatal/terminate, CQ overflow, SRQ limit, last
 * WQE, SQ drained. The fd becomes readable when an event is queued;
 * iw_get_async_event never blocks (EAGAIN when none is queued). A QP moved
 * to ERR by the application, or whose connection closes, raises no error
 * event (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, QP_TERMINATE); a QP on an
 * SRQ raises QP_LAST_WQE_REACHED whenever it enters ERR, whatever the
 * cause (iw_get_async_event says when). */
enum iw_event_type {
	IW_EVENT_CQ_ERR = 1,         /* CQ overflow: completions were lost */
	IW_EVENT_QP_FATAL,           /* LLP error (CRC, markers, RTR) or a local WR failed: we sent TERMINATE */
	IW_EVENT_QP_REQ_ERR,         /* peer's request violated the protocol: we sent TERMINATE */
	IW_EVENT_QP_ACCESS_ERR,      /* remote access error: we sent TERMINATE */
	IW_EVENT_QP_TERMINATE,       /* peer sent TERMINATE: see term */
	IW_EVENT_QP_LAST_WQE_REACHED, /* a QP on an SRQ is in ERR and completed its SRQ WQE: it takes no more */
	IW_EVENT_SRQ_LIMIT_REACHED,
	IW_EVENT_SQ_DRAINED,         /* SQD reached: WQEs begun before it are complete */
};
/*
 * Name an asynchronous event type, e.g. "QP terminated by peer". Thread
 * safe.
 *
 * Returns: a static string ("unknown" for a value outside the enum).
 */
const char *iw_event_type_str(enum iw_event_type t);

struct iw_async_event {
	enum iw_event_type event_type;
	union {
		struct iw_cq *cq;
		struct iw_qp *qp;
		struct iw_srq *srq;
	} element;
	/* For the QP_* events: the TERMINATE triple sent or received
	 * (IW_TERM() packing, see wire.h) and whether it came from the peer;
	 * IW_TERM_NONE when there is none (always for CQ_ERR,
	 * SRQ_LIMIT_REACHED and SQ_DRAINED). */
	uint32_t term;
	bool term_from_peer;
};

/*
 * Get the asynchronous event fd: the file descriptor of the context's event
 * queue, readable while at least one event is queued (an eventfd in
 * semaphore mode). Wait on it with poll(2), epoll or libevent; do not read
 * or close it. It lives until iw_context_free. Its O_NONBLOCK flag does not
 * matter: iw_get_async_event never blocks.
 *
 * Returns: the fd, or -1 if ctx is NULL (errno is not set).
 */
int iw_context_async_fd(struct iw_context *ctx);
/*
 * Get the next asynchronous event: the oldest queued, copied into *event.
 * Never blocks. Raised: IW_EVENT_CQ_ERR (element.cq), IW_EVENT_QP_FATAL,
 * IW_EVENT_QP_REQ_ERR and IW_EVENT_QP_ACCESS_ERR (element.qp; term is the
 * TERMINATE we sent), IW_EVENT_QP_TERMINATE (element.qp; term is the
 * peer's, term_from_peer set), IW_EVENT_QP_LAST_WQE_REACHED (element.qp;
 * term is the TERMINATE that took the QP to ERR, or IW_TERM_NONE),
 * IW_EVENT_SRQ_LIMIT_REACHED (element.srq) and IW_EVENT_SQ_DRAINED
 * (element.qp: the SQD transition of iw_modify_qp is complete).
 *
 * IW_EVENT_QP_LAST_WQE_REACHED is queued once each time a QP that uses an
 * SRQ enters ERR (a TERMINATE, a lost or closed connection, iw_modify_qp),
 * right after the SRQ WR the QP was filling has completed (flushed, or
 * with its own status when its message caused the error: see
 * iw_poll_cq); from then on the QP takes no SRQ WR. When the connection
 * ends it is queued before the CM queues DISCONNECTED for the QP's id, so
 * the verbs pattern "wait for LAST_WQE_REACHED, then destroy" works: on
 * DISCONNECTED, read this fd until EAGAIN, then destroy the id. Destroying
 * the QP (iw_cm_destroy_id, iw_destroy_qp) drops the event if it is still
 * queued, like every event naming the QP.
 *
 * The copy owns nothing, and the object it names is not pinned: do not
 * destroy that object while still using the event. Events still queued
 * when their CQ, QP or SRQ is destroyed are dropped. An event that cannot
 * be allocated when it is raised is lost. Any thread may call this.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EAGAIN  No event is queued.
 *   EINVAL  ctx or event is NULL.
 */
int iw_get_async_event(struct iw_context *ctx, struct iw_async_event *event);
/*
 * Acknowledge an asynchronous event. A no-op kept so that libibverbs code
 * ports unchanged: iw_get_async_event already hands the event over as a
 * copy, and nothing waits for the acknowledgement.
 */
void iw_ack_async_event(struct iw_async_event *event);

/* ============================================================ memory */

/*
 * Allocate a protection domain on ctx. MRs, QPs and SRQs are created on a
 * PD; a peer's access through an STag succeeds only on a QP of the MR's PD.
 * The PD must outlive them, and be freed (iw_dealloc_pd) before ctx.
 *
 * Returns: the PD, or NULL with errno set.
 * Errors:
 *   EINVAL  ctx is NULL.
 *   ENOMEM  Out of memory.
 */
struct iw_pd *iw_alloc_pd(struct iw_context *ctx);
/*
 * Free a protection domain. Nothing changes while MRs (iw_reg_mr and
 * iw_alloc_mr), QPs or SRQs created on it still exist.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   MRs, QPs or SRQs still use the PD.
 */
int iw_dealloc_pd(struct iw_pd *pd);

enum iw_access_flags {
	IW_ACCESS_LOCAL_WRITE = 1 << 0,
	IW_ACCESS_REMOTE_WRITE = 1 << 1, /* requires LOCAL_WRITE */
	IW_ACCESS_REMOTE_READ = 1 << 2,
	IW_ACCESS_REMOTE_ATOMIC = 1 << 3, /* requires LOCAL_WRITE */
	IW_ACCESS_MW_BIND = 1 << 4,       /* memory windows may be bound to the MR */
	IW_ACCESS_READ_SINK = 1 << 5,     /* our RDMA Reads' sink, no remote right;
					   * requires LOCAL_WRITE (iw_reg_mr) */
};

/* A registered region. lkey == rkey == the STag: a 24-bit index and an
 * 8-bit key, both drawn at random (never the index's previous key), so
 * STags cannot be predicted from others. */
struct iw_mr {
	struct iw_context *context;
	struct iw_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

/*
 * Register a memory region: length octets at addr on pd, with the
 * IW_ACCESS_* rights in access. The memory is not copied: the library reads
 * and writes it in place (sends gather from it, receives, RDMA Writes and
 * Read Responses land in it), so it must stay valid until iw_dereg_mr
 * returns 0. Peers address it by rkey and the virtual address: the tagged
 * offset of addr[i] is (uintptr_t)addr + i. lkey == rkey == the STag.
 *
 * access 0 allows local reads only (a Send or Write source). Receives and
 * atomic results need IW_ACCESS_LOCAL_WRITE; the sink of an RDMA Read is
 * written by the peer's tagged Read Response and needs
 * IW_ACCESS_REMOTE_WRITE (an iWARP rule), or IW_ACCESS_READ_SINK: the
 * region may be the sink of this side's own Reads, and nothing else a peer
 * sends may touch it (a Read Response is placed only at the STag and range
 * of the outstanding Read it answers; RDMA Writes and remote invalidation
 * are refused). That lets a large region (a storage target's RAM, say)
 * take Reads in place without being exposed to every peer of the PD; it
 * is what Linux siw accepts (a sink with local write), but hardware iWARP
 * adapters want IW_ACCESS_REMOTE_WRITE, so portable code uses that or a
 * memory window. The returned struct belongs to the library: read its
 * fields, free it with iw_dereg_mr. Any thread.
 *
 * Returns: the MR, or NULL with errno set.
 * Errors:
 *   EINVAL  pd or addr is NULL, length is 0, the range wraps the address
 *           space, access has unknown bits, or IW_ACCESS_REMOTE_WRITE,
 *           IW_ACCESS_REMOTE_ATOMIC or IW_ACCESS_READ_SINK is set without
 *           IW_ACCESS_LOCAL_WRITE.
 *   ENOMEM  Out of memory, or all 2^24 - 1 STag indices are in use.
 */
struct iw_mr *iw_reg_mr(struct iw_pd *pd, void *addr, size_t length, int access);
/*
 * Deregister a memory region: free an MR made by iw_reg_mr or iw_alloc_mr.
 * The STag is invalid to the peer from the moment this returns 0; the
 * memory itself is left alone. Refused while a posted WR that has not
 * completed, or an inbound placement in progress, references the MR: retry
 * after the completions. A region the peer READs is referenced by the Read
 * Response until its last octet is handed to TCP, which can be a moment
 * after the peer's own READ completion: destroy or disconnect the QP first,
 * or retry on EBUSY. Any thread.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   A work request or an inbound placement still uses the MR, or
 *           a memory window is bound to it.
 *   EINVAL  mr is not a registration of its context's STag table.
 */
int iw_dereg_mr(struct iw_mr *mr);
/*
 * Allocate an MR for fast registration: it gets an STag (lkey == rkey) but
 * stays invalid, with no buffer and no rights, until an IW_WR_REG_MR work
 * request registers it (one contiguous buffer). IW_WR_LOCAL_INV, or a
 * peer's Send with Invalidate when the MR grants a remote right, makes it
 * invalid again; then it can be registered again, with the next key.
 * max_num_sg must be non-zero and is otherwise unused. Free it with
 * iw_dereg_mr.
 *
 * One registration, step by step (see EXAMPLE):
 *  - Post IW_WR_REG_MR with reg.mr the MR; reg.key the whole new STag,
 *    iw_inc_rkey(mr->rkey) (the 24-bit index must stay the MR's, the low
 *    8 bits are the new key); reg.addr the local buffer and reg.length its
 *    size; reg.access the IW_ACCESS_* rights; reg.iova the tagged offset
 *    of the buffer's first octet: the peer addresses reg.addr[i] as
 *    reg.iova + i (0 for zero-based offsets, (uintptr_t)reg.addr to do as
 *    iw_reg_mr does). Local SGEs naming the MR use the same iova-based
 *    addresses. The key is the application's choice: iw_inc_rkey's keys
 *    follow each other, so an MR whose STags go to different peers in
 *    turn should take a random key instead (any but the current one).
 *  - The REG_MR runs when it reaches the head of the send queue: after the
 *    WRs posted before it have started, before any WR behind it starts. So
 *    a Send that hands reg.key to the peer may follow it in the same post.
 *    mr->lkey and mr->rkey become reg.key when it runs, which may be before
 *    iw_post_send returns or later on the loop thread: read them after its
 *    completion, or use the value given as reg.key. A WR that uses the MR
 *    locally (an RDMA Read into it, a Send from it) is checked when it is
 *    posted, against the registration in effect then: post such a WR after
 *    the REG_MR's completion (signal the REG_MR).
 *  - The peer ends the grant with a Send with Invalidate of the STag: the
 *    receive completes with IW_WC_WITH_INV in wc_flags and the STag in
 *    invalidated_rkey, and the MR is invalid already. When the flag is
 *    missing or names another STag, post IW_WR_LOCAL_INV with
 *    invalidate_rkey the STag yourself and reuse the MR after its
 *    completion; invalidating an invalid MR succeeds. From the
 *    invalidation on, the peer's accesses with the STag fail (TERMINATE
 *    invalid STag); a segment whose placement had already started still
 *    lands, and a LOCAL_INV completes only after it has: once the
 *    LOCAL_INV's completion is polled, nothing more is written there.
 *
 * A REG_MR or LOCAL_INV that fails when it runs is fatal to the QP, as is
 * every WR that completes with an error: it completes with
 * IW_WC_LOC_QP_OP_ERR (IW_WC_LOC_PROT_ERR: an MR of another PD), the QP
 * goes to ERR, the peer gets a TERMINATE (RDMAP catastrophic),
 * IW_EVENT_QP_FATAL is raised and the WRs behind it flush. REG_MR fails on
 * an MR that is still valid (invalidate it first), a reg.key with another
 * index, bad reg.access, reg.length 0, reg.addr NULL or a range that
 * wraps; LOCAL_INV on an STag that is unknown, stale (an old key), of
 * another PD, or of an MR made by iw_reg_mr. Only iw_post_send's own
 * errors, returned when posting, leave the QP alone; for REG_MR it only
 * checks that reg.mr is set.
 *
 * Returns: the MR, or NULL with errno set.
 * Errors:
 *   EINVAL  pd is NULL or max_num_sg is 0.
 *   ENOMEM  Out of memory, or all 2^24 - 1 STag indices are in use.
 */
struct iw_mr *iw_alloc_mr(struct iw_pd *pd, uint32_t max_num_sg);
/*
 * Increment the key of an STag: the next key for a fast-registration MR's
 * STag, as ibv_inc_rkey. The low 8 bits (the key) are incremented modulo
 * 256, the 24-bit index is kept.
 *
 * Returns: the new STag.
 */
static inline uint32_t iw_inc_rkey(uint32_t rkey)
{
	return (rkey & 0xFFFFFF00u) | ((rkey + 1) & 0xFF);
}

/* A memory window: a remote-access grant (its own STag) onto part of an MR,
 * bound through a QP's send queue. Type 1 (iw_bind_mw): usable by the
 * peer of any QP of the window's PD; rebound or unbound (length 0) only
 * by iw_bind_mw, never invalidated. Type 2 (IW_WR_BIND_MW): usable only
 * by the peer of the QP that bound it; revoked by IW_WR_LOCAL_INV or that
 * peer's Send with Invalidate. */
enum iw_mw_type {
	IW_MW_TYPE_1 = 1,
	IW_MW_TYPE_2 = 2,
};

struct iw_mw {
	struct iw_context *context;
	struct iw_pd *pd;
	uint32_t rkey;   /* the STag; a bind gives it a new key */
	uint32_t handle;
	enum iw_mw_type type;
};

/*
 * Allocate a memory window on pd, as ibv_alloc_mw. It gets an STag (rkey)
 * that no access can use until it is bound to part of an MR registered
 * with IW_ACCESS_MW_BIND, on a QP of the same PD; from then on peers may
 * use it within the bound range and rights, and the MR cannot be
 * deregistered. A peer using it unbound, through a connection it may not
 * use, or out of its range is answered with a TERMINATE (lib/engine/mem.c
 * lists which).
 *
 * IW_MW_TYPE_2: bound by an IW_WR_BIND_MW work request with a new key
 * (iw_inc_rkey, or any other key but the current one); only the peer of
 * the QP that bound it may use it. IW_WR_LOCAL_INV of the rkey, or that
 * peer's Send with Invalidate, unbinds it; then bind it again.
 *
 * IW_MW_TYPE_1: bound by iw_bind_mw, which picks the new rkey; the peer of
 * any QP of the PD may use it. It is rebound or unbound only by
 * iw_bind_mw: a peer's Send with Invalidate naming it is refused with a
 * TERMINATE (RDMAP Remote Protection, STag cannot be invalidated) and an
 * IW_WR_LOCAL_INV of it fails. Any thread.
 *
 * Returns: the window, or NULL with errno set.
 * Errors:
 *   EINVAL  pd is NULL, or type is neither IW_MW_TYPE_1 nor IW_MW_TYPE_2.
 *   ENOMEM  Out of memory, or all 2^24 - 1 STag indices are in use.
 */
struct iw_mw *iw_alloc_mw(struct iw_pd *pd, enum iw_mw_type type);
/*
 * Free a memory window made by iw_alloc_mw, bound or not (a bound one
 * releases its MR). Refused while a work request or an inbound placement
 * uses it.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   A bind (IW_WR_BIND_MW or iw_bind_mw) not yet completed, or a
 *           placement, still uses the window.
 *   EINVAL  mw is not a window of its context.
 */
int iw_dealloc_mw(struct iw_mw *mw);

/* Counters of remote accesses refused because of the STag they named. */
struct iw_stag_stats {
	uint32_t comp_mask; /* none defined yet: set to 0 */
	/* Tagged accesses (RDMA Write, Read Response, Read Request source,
	 * atomic) and Send with Invalidate refused because their STag is
	 * unknown, stale, invalidated or of another PD: what a peer guessing
	 * STags produces. Each refusal also TERMINATEs its connection. */
	uint64_t invalid_stag;
};

/*
 * Read a context's STag counters: the sums over every QP the context ever
 * had. Per connection: iw_query_qp_stag_stats; per listener (the
 * connections it accepted): iw_cm_listener_stats. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  ctx or stats is NULL.
 */
int iw_query_stag_stats(struct iw_context *ctx, struct iw_stag_stats *stats);
/*
 * Read a QP's STag counters: the refusals of its own connection's peer
 * (see struct iw_stag_stats). Any thread, also after the QP entered ERR.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  qp or stats is NULL.
 */
int iw_query_qp_stag_stats(struct iw_qp *qp, struct iw_stag_stats *stats);

struct iw_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* ============================================================ CQ */

struct iw_comp_channel {
	struct iw_context *context;
	int fd; /* readable when a CQ armed on it has an event */
	int refcnt;
};

/*
 * Create a completion channel on ctx. Its fd is readable while an event of
 * an armed CQ created on it is queued. The fd is blocking, so that
 * iw_get_cq_event waits; set O_NONBLOCK on it to have iw_get_cq_event
 * return EAGAIN instead. The fd belongs to the channel (do not close it);
 * the struct's fields are read-only.
 *
 * Returns: the channel, or NULL with errno set.
 * Errors:
 *   EINVAL  ctx is NULL.
 *   ENOMEM  Out of memory.
 *   EMFILE  No file descriptor for the channel (ENFILE: the system-wide
 *           limit).
 */
struct iw_comp_channel *iw_create_comp_channel(struct iw_context *ctx);
/*
 * Destroy a completion channel and close its fd. Nothing changes while CQs
 * created on it still exist.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   CQs still use the channel.
 */
int iw_destroy_comp_channel(struct iw_comp_channel *channel);
/*
 * Deliver the channel's events on an event loop the application runs:
 * after this call, cb(channel, arg) runs on base's loop whenever events are
 * queued, and takes them with iw_get_cq_event. Call it on the thread that runs
 * base (or, before base first runs, on the thread that will run it); that
 * thread is recorded. An event raised on that thread (a completion placed
 * by the library's callback on base, or a post completing inline there)
 * costs no system call: it is counted in memory and an internal event is
 * made active on base, so cb runs in the same loop iteration, after the
 * running callback returns. An event raised on any other thread still
 * goes through the channel's fd, which an internal event on base watches;
 * cb runs for those too. libevent bases without evthread locking may only
 * be touched by their own thread, which is why the fd stays for them.
 *
 * cb may take one event or all of them: while events remain queued after
 * it returns it is called again (so it must take at least one each time,
 * as with any level-triggered fd). With a loop set, iw_get_cq_event never
 * blocks, whatever the fd's flags: it returns EAGAIN when nothing is
 * queued. Nobody may be waiting in iw_get_cq_event on the channel when the
 * loop is set. The fd is readable only for events raised off the loop's
 * thread: do not watch it yourself.
 *
 * base NULL goes back to the fd alone: events counted in memory are moved
 * to the fd, so a reader of the fd sees them; call it on base's thread
 * (cb may call it, and may destroy the channel). iw_destroy_comp_channel
 * frees the internal events: call it on base's thread or once base no
 * longer runs. Arming (iw_req_notify_cq) and acknowledging are unchanged.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  channel is NULL, or base is set and cb is NULL.
 *   EBUSY   A loop is already set on the channel (set NULL first).
 *   ENOMEM  Out of memory (libevent could not make the internal events).
 */
int iw_comp_channel_set_loop(struct iw_comp_channel *channel, struct event_base *base,
			     void (*cb)(struct iw_comp_channel *channel, void *arg), void *arg);

/*
 * Create a completion queue of exactly cqe entries on ctx. cq_context is
 * handed back by iw_get_cq_event. channel (may be NULL: poll only) must
 * belong to ctx and outlive the CQ. comp_vector is ignored: one loop
 * delivers every completion.
 *
 * Size the CQ for every completion that can be outstanding on it (flushes
 * included): a completion that finds the CQ full is lost, counted, and
 * IW_EVENT_CQ_ERR is raised once per overflow episode.
 *
 * Returns: the CQ, or NULL with errno set.
 * Errors:
 *   EINVAL  ctx is NULL, cqe is below 1 or above 4194304 (2^22), or channel
 *           belongs to another context.
 *   ENOMEM  Out of memory.
 */
struct iw_cq *iw_create_cq(struct iw_context *ctx, int cqe, void *cq_context,
			   struct iw_comp_channel *channel, int comp_vector);
/*
 * Resize a CQ to exactly cqe entries, larger or smaller, while QPs use it.
 * The completions it holds stay, in order, and are each polled once; the
 * arming, the channel and the overflow count are kept. The CQ may not
 * shrink below the number of completions it holds now: poll first. Any
 * thread, also while completions are being added and polled.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  cq is NULL, cqe is below 1 or above 4194304 (2^22), or cqe is
 *           below the number of completions in the CQ.
 *   ENOMEM  Out of memory (the CQ is unchanged).
 */
int iw_resize_cq(struct iw_cq *cq, int cqe);
/*
 * Destroy a CQ. Completions still in it are discarded, a channel event
 * still queued for it is dropped, and so are queued asynchronous events
 * naming it. Nothing changes while a QP uses it or while events obtained
 * from iw_get_cq_event are not yet acknowledged (iw_ack_cq_events).
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   QPs use the CQ, or channel events for it are not all acked.
 */
int iw_destroy_cq(struct iw_cq *cq);
/*
 * Request a completion notification: arm the CQ, once, for the next
 * completion (solicited_only 0), or for the next completion of a message
 * that carried SE or of any error (solicited_only non-zero). A completion
 * added while armed queues the CQ's event on its channel and disarms it.
 * Completions already in the CQ do not fire it: arm, poll until empty, then
 * wait. A pending arming for any completion is not narrowed by a later
 * solicited-only call. Any thread. In a polling context (IW_CONTEXT_POLL)
 * arming says that the thread is going to sleep: the loop thread reads
 * again at once for the connections whose QPs complete into the CQ, and
 * polling the armed CQ reads without keeping the loop away from them.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  cq is NULL.
 */
int iw_req_notify_cq(struct iw_cq *cq, int solicited_only);
/*
 * Get the next completion event from the channel: *cq is the CQ that fired
 * and *cq_context (if cq_context is not NULL) its cq_context. Waits in
 * read(2) while none is queued, unless the channel's fd is nonblocking or
 * a loop delivers its events (iw_comp_channel_set_loop).
 * Several firings of one CQ before its event is read make one event. Every
 * event taken must be acknowledged (iw_ack_cq_events) before the CQ can be
 * destroyed; re-arm (iw_req_notify_cq) to get the next one. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  channel or cq is NULL.
 *   EAGAIN  The fd is nonblocking, or a loop is set, and no event is
 *           queued.
 *   EINTR   A signal interrupted the wait (other read(2) errors of the fd
 *           are returned as they are).
 */
int iw_get_cq_event(struct iw_comp_channel *channel, struct iw_cq **cq, void **cq_context);
/*
 * Acknowledge CQ events: nevents events that iw_get_cq_event returned for
 * cq. Acknowledgements are counted, not matched: acknowledge exactly as
 * many as were taken (more keeps iw_destroy_cq failing with EBUSY). A NULL
 * cq, a CQ without a channel and nevents 0 are ignored. Any thread.
 */
void iw_ack_cq_events(struct iw_cq *cq, unsigned int nevents);

enum iw_wc_status {
	IW_WC_SUCCESS = 0,
	IW_WC_LOC_LEN_ERR,
	IW_WC_LOC_QP_OP_ERR,
	IW_WC_LOC_PROT_ERR,
	IW_WC_WR_FLUSH_ERR,
	IW_WC_MW_BIND_ERR,
	IW_WC_BAD_RESP_ERR,
	IW_WC_LOC_ACCESS_ERR,
	IW_WC_REM_INV_REQ_ERR,
	IW_WC_REM_ACCESS_ERR,
	IW_WC_REM_OP_ERR,
	IW_WC_RETRY_EXC_ERR,
	IW_WC_RNR_RETRY_EXC_ERR,
	IW_WC_LOC_RDD_VIOL_ERR,
	IW_WC_REM_INV_RD_REQ_ERR,
	IW_WC_REM_ABORT_ERR,
	IW_WC_INV_EECN_ERR,
	IW_WC_INV_EEC_STATE_ERR,
	IW_WC_FATAL_ERR,
	IW_WC_RESP_TIMEOUT_ERR,
	IW_WC_GENERAL_ERR,
};
/*
 * Name a work completion status, e.g. "work request flushed error". Thread
 * safe.
 *
 * Returns: a static string ("unknown" for a value outside the enum).
 */
const char *iw_wc_status_str(enum iw_wc_status status);

enum iw_wc_opcode {
	IW_WC_SEND,
	IW_WC_RDMA_WRITE,
	IW_WC_RDMA_READ,
	IW_WC_COMP_SWAP,
	IW_WC_FETCH_ADD,
	IW_WC_BIND_MW,
	IW_WC_LOCAL_INV,
	IW_WC_REG_MR,
	IW_WC_RECV = 1 << 7,
	IW_WC_RECV_RDMA_WITH_IMM,
};
/*
 * Name a work completion opcode, e.g. "RDMA read". Thread safe.
 *
 * Returns: a static string ("unknown" for a value outside the enum).
 */
const char *iw_wc_opcode_str(enum iw_wc_opcode op);

enum iw_wc_flags {
	IW_WC_WITH_IMM = 1 << 1,
	IW_WC_WITH_INV = 1 << 3,
	IW_WC_SOLICITED = 1 << 7, /* the message was a Send with SE */
};

struct iw_wc {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	/* The TERMINATE triple (IW_TERM() packing) sent or received behind an
	 * error; IW_TERM_NONE on success and when no TERMINATE was involved
	 * (iw_modify_qp to ERR, a lost or closed connection). */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;   /* network order, as libibverbs */
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	unsigned int wc_flags;
};

/*
 * Poll the CQ: move up to num_entries of its oldest completions into
 * wc[0..], oldest first. Each completion is handed out once. A send WR
 * completes in posting order, successes only when signaled, errors always;
 * vendor_err carries the TERMINATE triple behind an error, or IW_TERM_NONE.
 * Never blocks; any thread.
 *
 * When a TERMINATE takes the QP to ERR, the one WR at fault, if any,
 * completes with its own status, and every WR after it (and every other
 * outstanding WR) with IW_WC_WR_FLUSH_ERR, in order, each exactly once.
 * The WR at fault is: for a TERMINATE we send, the receive the peer's Send
 * was filling, or our RDMA Read whose Read Response was aimed outside its
 * sink; for the peer's, our RDMA Read or atomic it names (by the request
 * header it copies; without a copy, an RDMAP protection error 0/1/0x00-0x04
 * names the oldest outstanding request). Sends and Writes complete once
 * written, so a TERMINATE about one finds nothing left to fail. The status
 * by TERMINATE (layer/type/code, x: any), as "we send it / we receive it":
 *
 * - RDMAP 0/0/x, catastrophic: LOC_QP_OP_ERR (LOC_PROT_ERR when the MR's
 *   rights refuse a REG_MR or LOCAL_INV) / REM_OP_ERR.
 * - RDMAP 0/1/x, protection: REM_INV_REQ_ERR (a Send with Invalidate we
 *   cannot honour) / REM_ACCESS_ERR.
 * - RDMAP 0/2/05 version, 0/2/06 opcode: LOC_QP_OP_ERR (a Send changed
 *   opcode mid-message) / REM_INV_REQ_ERR.
 * - RDMAP 0/2/09, cannot invalidate: REM_INV_REQ_ERR / REM_OP_ERR.
 * - RDMAP 0/2/x other, DDP 1/0/x: LOC_QP_OP_ERR / REM_OP_ERR.
 * - DDP 1/1/x, tagged buffer: LOC_ACCESS_ERR (a Read Response outside our
 *   Read's sink) / REM_ACCESS_ERR.
 * - DDP 1/2/04 MO, 1/2/05 too long: LOC_LEN_ERR (a Send longer than the
 *   receive) / REM_INV_REQ_ERR.
 * - DDP 1/2/x other (QN, MSN or IRD exceeded, no buffer, version):
 *   LOC_QP_OP_ERR / REM_INV_REQ_ERR.
 * - LLP 2/x/x (CRC, marker, framing, RTR): no WR is at fault; all flush.
 *
 * A receive at fault on an SRQ carries the QP's number (qp_num), as all
 * receives do. A QP moved to ERR by iw_modify_qp or by a lost connection
 * has no WR at fault: everything flushes with vendor_err IW_TERM_NONE.
 *
 * Returns: the number of completions stored (0 when the CQ is empty), or a
 * negative errno (unlike the other int calls).
 * Errors:
 *   EINVAL  cq is NULL, num_entries is negative, or num_entries is positive
 *           and wc is NULL (returned as -EINVAL).
 */
int iw_poll_cq(struct iw_cq *cq, int num_entries, struct iw_wc *wc);

/* ============================================================ QP, SRQ */

enum iw_qp_type { IW_QPT_RC = 2 };

enum iw_qp_state {
	IW_QPS_RESET,
	IW_QPS_INIT,
	IW_QPS_RTR,
	IW_QPS_RTS,
	IW_QPS_SQD,
	IW_QPS_SQE,
	IW_QPS_ERR,
};
/*
 * Name a QP state: "RESET", "INIT", "RTR", "RTS", "SQD", "SQE" or "ERR".
 * Thread safe.
 *
 * Returns: a static string ("unknown" for a value outside the enum).
 */
const char *iw_qp_state_str(enum iw_qp_state s);

struct iw_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data; /* at least 256 */
};

enum iw_qp_create_flags {
	/* RFC 7306 atomics and immediate data on this QP: only peers that
	 * implement RFC 7306 understand them (siw and Chelsio do not). */
	IW_QP_CREATE_RFC7306 = 1 << 0,
	/* Hold a message that finds no posted receive instead of ending the
	 * connection: InfiniBand's RNR retry, emulated on the receiving side
	 * only (the peer sees an ordinary iWARP QP). Off, a Send, Send with
	 * Invalidate or Immediate Data message (a Write with immediate data)
	 * that finds the receive queue empty gets RFC 5041's "no buffer"
	 * TERMINATE (DDP 2/0x02), as on siw and Chelsio. On, its payload is
	 * copied aside; the next iw_post_recv completes it into the new
	 * receive at once (its completion, with the message's length,
	 * immediate data, solicited and invalidate flags, is queued by that
	 * call, waking a solicited-only notification as an arrival would).
	 * While anything is held, later messages are held behind it, so
	 * receives complete in the order the messages were sent. A held
	 * message longer than the receive that takes it ends the QP as an
	 * overlong Send does (DDP "message too long" TERMINATE, the receive
	 * completes with IW_WC_LOC_LEN_ERR; it is found when the receive is
	 * posted). A Send with Invalidate invalidates its STag on arrival.
	 * Bounded per QP by iw_conn_opts recv_hold_msgs (default: max_recv_wr
	 * messages) and recv_hold_bytes (default 64 MiB). When the hold is
	 * full the connection stops reading until a receive is posted: the
	 * peer's octets wait in TCP (whose window then stops the sender), as
	 * an InfiniBand sender waits out RNR NAKs. Nothing shows on the wire
	 * but a full window. Only a single message longer than
	 * recv_hold_bytes (or held alone and within 64 KiB of it, when the
	 * next message follows at once), or no memory, gets the "no buffer"
	 * TERMINATE. Memory: a message still arriving may have up to twice
	 * its octets allocated (its buffer grows by doubling).
	 * The peer's Send completed when it was written, not when it was
	 * received: so when the QP enters ERR without a TERMINATE (the
	 * connection closed or was reset, or iw_modify_qp), the messages
	 * held whole stay, and the receives posted next take them (then
	 * receives flush as usual); after a TERMINATE, at RESET and at
	 * iw_destroy_qp they are dropped without a completion. Not with an
	 * SRQ. */
	IW_QP_CREATE_RECV_HOLD = 1 << 1,
	/* In a polling context (IW_CONTEXT_POLL), leave this QP's receiving
	 * to the loop thread, as in a context without it: iw_poll_cq and
	 * iw_progress never read its socket (they still return its
	 * completions, and iw_post_send still writes on the calling thread).
	 * For a QP whose application waits for completions instead of
	 * spinning, beside busy-polled QPs of the same context: a thread that
	 * polls a CQ between sleeps would otherwise read a bulk stream in
	 * many small pieces as it arrives, each recv on the socket the
	 * sender's side is delivering into, where the loop reads it in large
	 * batches (1 MiB Sends with markers on loopback: 0.58-0.63x raw TCP
	 * read by such a poller, 0.84-1.10x read by the loop). Ignored in a
	 * context without IW_CONTEXT_POLL. */
	IW_QP_CREATE_LOOP_RX = 1 << 2,
};

struct iw_qp_init_attr {
	void *qp_context;
	struct iw_cq *send_cq;
	struct iw_cq *recv_cq;
	struct iw_srq *srq;
	struct iw_qp_cap cap;
	enum iw_qp_type qp_type;
	int sq_sig_all;
	uint32_t create_flags;
};

/*
 * Create a reliable-connected QP on pd, in state RESET. For a connection
 * made by the CM use iw_cm_create_qp, which also moves the QP through its
 * states. attr is copied (iw_query_qp returns the copy); attr->cap is not
 * updated: the QP raises max_send_sge and max_recv_sge 0 to 1 and
 * max_inline_data to at least 256, and iw_query_qp reports the result. The
 * PD, both CQs and the SRQ (if any) must outlive the QP.
 *
 * Limits: max_send_wr 1..16384; max_recv_wr 1..16384 (ignored with an SRQ);
 * max_send_sge and max_recv_sge at most 16; max_inline_data at most 1024.
 *
 * Returns: the QP, or NULL with errno set.
 * Errors:
 *   EINVAL  pd, attr, attr->send_cq or attr->recv_cq is NULL, qp_type is
 *           not IW_QPT_RC, create_flags has bits other than
 *           IW_QP_CREATE_RFC7306, IW_QP_CREATE_RECV_HOLD and
 *           IW_QP_CREATE_LOOP_RX,
 *           IW_QP_CREATE_RECV_HOLD with an SRQ, or a cap is out of
 *           range.
 *   ENOMEM  Out of memory.
 */
struct iw_qp *iw_create_qp(struct iw_pd *pd, struct iw_qp_init_attr *attr);
/*
 * Destroy a QP made by iw_create_qp. Unless the QP is in RESET, every WR
 * still outstanding first completes with IW_WC_WR_FLUSH_ERR on its CQ, in
 * order, and drops its MR references. Queued asynchronous events naming the
 * QP are dropped. A QP owned by a CM id is destroyed with
 * iw_cm_destroy_qp or iw_cm_destroy_id instead.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   The QP belongs to a CM id (iw_cm_create_qp).
 */
int iw_destroy_qp(struct iw_qp *qp);

enum iw_qp_attr_mask {
	IW_QP_STATE = 1 << 0,
	IW_QP_CUR_STATE = 1 << 1,
	IW_QP_ACCESS_FLAGS = 1 << 3,
	IW_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	IW_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	IW_QP_CAP = 1 << 19,
};

struct iw_qp_attr {
	enum iw_qp_state qp_state;
	enum iw_qp_state cur_qp_state;
	int qp_access_flags;
	struct iw_qp_cap cap;
	uint8_t max_rd_atomic;      /* ORD */
	uint8_t max_dest_rd_atomic; /* IRD */
};

/*
 * Modify a QP: the attributes selected by attr_mask, among IW_QP_STATE,
 * IW_QP_CUR_STATE (must equal the current state), IW_QP_ACCESS_FLAGS
 * (recorded and reported, not enforced), IW_QP_MAX_QP_RD_ATOMIC (ORD) and
 * IW_QP_MAX_DEST_RD_ATOMIC (IRD), at most 128 each. ORD and IRD are
 * reported by iw_query_qp while the QP is not connected; a connection uses
 * the values of its struct iw_conn_param as negotiated by MPA.
 *
 * Transitions: any state to ERR or RESET; RESET to INIT; INIT to INIT or
 * RTR; RTR to RTS; RTS to RTS or SQD; SQD to RTS or SQD; SQE to RTS. ERR
 * flushes every outstanding WR (IW_WC_WR_FLUSH_ERR, in order) and, on a
 * connected QP, lets the CM close the connection. RESET, allowed only
 * without a connection, flushes and empties the queues. A QP driven by the
 * CM needs no transitions; moving it to ERR is a way to fail it.
 *
 * The other attributes are applied before the state change is checked: a
 * call that fails on the transition may have changed them.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  qp or attr is NULL, attr_mask has another bit (IW_QP_CAP
 *           included), the current state differs from cur_qp_state, ORD or
 *           IRD is above 128, or the transition is not allowed.
 *   EBUSY   RESET was asked while the QP is connected.
 */
int iw_modify_qp(struct iw_qp *qp, struct iw_qp_attr *attr, int attr_mask);
/*
 * Query a QP: its attributes in *attr (attr_mask is ignored: everything is
 * filled) and, if init_attr is not NULL, the copy of its creation
 * attributes with the capabilities in effect. max_rd_atomic and
 * max_dest_rd_atomic are the negotiated ORD and IRD while connected.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  qp or attr is NULL.
 */
int iw_query_qp(struct iw_qp *qp, struct iw_qp_attr *attr, int attr_mask,
		struct iw_qp_init_attr *init_attr);
/*
 * Get a QP's number: unique within the context, from 1, as found in the
 * qp_num field of its completions.
 *
 * Returns: the number, or 0 if qp is NULL.
 */
uint32_t iw_qp_num(const struct iw_qp *qp);
/*
 * Get a QP's context: the qp_context of its struct iw_qp_init_attr
 * (iw_create_qp, iw_cm_create_qp), so that an asynchronous event's
 * element.qp or a CM id's qp leads to the application's own object without
 * a table. Any thread.
 *
 * Returns: the pointer given at creation, or NULL if qp is NULL.
 */
void *iw_qp_get_context(const struct iw_qp *qp);

enum iw_wr_opcode {
	IW_WR_RDMA_WRITE,
	IW_WR_RDMA_WRITE_WITH_IMM, /* RFC 7306 QPs only */
	IW_WR_SEND,
	IW_WR_SEND_WITH_IMM,       /* RFC 7306 QPs only; no payload (one Immediate Data message) */
	IW_WR_RDMA_READ,
	IW_WR_ATOMIC_CMP_AND_SWP,  /* RFC 7306 QPs only */
	IW_WR_ATOMIC_FETCH_AND_ADD, /* RFC 7306 QPs only */
	IW_WR_LOCAL_INV,
	IW_WR_BIND_MW,
	IW_WR_SEND_WITH_INV,
	IW_WR_REG_MR = 0x20,
};

enum iw_send_flags {
	IW_SEND_FENCE = 1 << 0,
	IW_SEND_SIGNALED = 1 << 1,
	IW_SEND_SOLICITED = 1 << 2, /* Send with SE */
	IW_SEND_INLINE = 1 << 3,
};

struct iw_send_wr {
	uint64_t wr_id;
	struct iw_send_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
	enum iw_wr_opcode opcode;
	unsigned int send_flags;
	union {
		uint32_t imm_data;       /* network order */
		uint32_t invalidate_rkey;
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct iw_mw *mw;
			uint32_t rkey; /* the window's new STag: iw_inc_rkey(mw->rkey) */
			struct iw_mw_bind_req {
				struct iw_mr *mr;
				uint64_t addr;   /* tagged offset inside the MR's range */
				uint64_t length;
				unsigned int mw_access_flags; /* IW_ACCESS_REMOTE_* */
			} bind_info;
		} bind_mw;
	} wr;
	struct {
		struct iw_mr *mr;
		uint32_t key;
		int access;
		uint64_t iova;
		uint64_t length;
		void *addr; /* the local buffer the MR describes from now on */
	} reg;
};

struct iw_recv_wr {
	uint64_t wr_id;
	struct iw_recv_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
};

/*
 * Post send work requests: the list wr (linked by next) to qp's send queue,
 * in order. Posting stops at the first WR that fails: it is stored in
 * *bad_wr (if bad_wr is not NULL); the WRs before it are posted. The WRs
 * and their SGE lists are copied: they may be reused when this returns. The
 * data is not copied, unless IW_SEND_INLINE: the buffers must stay valid
 * and unchanged until the WR completes, and their MRs cannot be
 * deregistered until then. IW_SEND_INLINE copies the data now, without
 * looking at the lkeys (at most the QP's max_inline_data octets).
 *
 * Order and IW_SEND_FENCE: the send queue starts WRs strictly in posting
 * order. A fenced WR waits until every RDMA Read and atomic posted before
 * it has completed, and so does every WR posted after it, whatever it is
 * for (head-of-line blocking: one fence stalls all the I/Os that share the
 * QP behind one Read's round trip). A Read posted while ORD Reads and
 * atomics are outstanding holds the queue the same way. To make one I/O's
 * Send wait for that I/O's Read, do not fence: signal the Read and post
 * the Send when the Read's completion is polled; other I/Os keep flowing.
 *
 * The QP must be in RTS, SQD or ERR (a CM QP reaches RTS when the MPA
 * exchange completes); in ERR the WRs complete with IW_WC_WR_FLUSH_ERR,
 * behind those already flushed. A WR completes on the send CQ when it is
 * done, in posting order: successes only with IW_SEND_SIGNALED or
 * sq_sig_all, errors always. Per opcode:
 *  - SEND, SEND_WITH_INV (invalidate_rkey), RDMA_WRITE (wr.rdma): at most
 *    max_send_sge SGEs, any valid MR of the PD.
 *  - RDMA_READ (wr.rdma): one SGE, in an MR with IW_ACCESS_REMOTE_WRITE
 *    or IW_ACCESS_READ_SINK, or inside a memory window bound now with IW_ACCESS_REMOTE_WRITE (a
 *    type 2 one to this QP; post the Read after the bind's completion):
 *    the sink STag is used only by the peer's Read Response, so a window
 *    over an MR without remote rights is the narrowest sink; not inline.
 *    At most ORD Reads and atomics are outstanding.
 *  - *_WITH_IMM and ATOMIC_* (wr.atomic): only on a QP created with
 *    IW_QP_CREATE_RFC7306. An atomic takes one 8-octet SGE in an MR with
 *    IW_ACCESS_LOCAL_WRITE and an 8-aligned remote_addr; not inline.
 *  - LOCAL_INV (invalidate_rkey) and REG_MR (reg) run when they reach the
 *    head of the queue. A LOCAL_INV makes the STag invalid to the peer at
 *    once, but while a peer's RDMA Write, Read Response or atomic into it
 *    is being received it does not complete, and no WR behind it starts:
 *    once it completes, nothing more is written there. (A placement
 *    through another QP of the PD is waited for too, but the LOCAL_INV is
 *    then only looked at again on this QP's next send or receive
 *    activity.) One that fails completes with IW_WC_LOC_QP_OP_ERR
 *    (IW_WC_LOC_PROT_ERR: an MR of another PD) and takes the QP to ERR:
 *    TERMINATE (RDMAP catastrophic) to the peer, IW_EVENT_QP_FATAL, and
 *    the WRs behind it flush.
 *  - BIND_MW (wr.bind_mw) runs at the head of the queue like LOCAL_INV:
 *    binds the type 2 window mw (unbound, of this QP's PD; type 1 windows
 *    are bound with iw_bind_mw) to
 *    [addr, addr + length) of mr (VALID, same PD, registered with
 *    IW_ACCESS_MW_BIND; the window's remote rights need not be the MR's,
 *    but REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE on the MR,
 *    as in IB verbs) under rkey, which must
 *    keep mw's index. mw->rkey is updated when it runs; the window and
 *    the MR must outlive the WR. One that fails completes with
 *    IW_WC_MW_BIND_ERR and takes the QP to ERR like a failed LOCAL_INV.
 * Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  qp is NULL; the QP is not in RTS, SQD or ERR; num_sge is
 *           negative, above 16 or above what the opcode allows, or sg_list
 *           is NULL with num_sge > 0; an lkey is unknown, invalid or of
 *           another PD; inline data exceeds max_inline_data; the opcode is
 *           unknown or needs IW_QP_CREATE_RFC7306; a Read without exactly
 *           one SGE, an atomic without one 8-octet SGE and an 8-aligned
 *           remote_addr, either inline; REG_MR without reg.mr; BIND_MW
 *           without bind_mw.mw or bind_info.mr, or of a type 1 window;
 *           send_flags with bit 31 set.
 *   EACCES  An SGE's MR lacks the right the opcode needs.
 *   EFAULT  An SGE is not inside its MR.
 *   ENOMEM  The send queue is full (max_send_wr WRs not yet completed), or
 *           no memory for inline data.
 */
int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr, struct iw_send_wr **bad_wr);

/* A type 1 window bind, as libibverbs' struct ibv_mw_bind. */
struct iw_mw_bind {
	uint64_t wr_id;
	unsigned int send_flags; /* IW_SEND_SIGNALED, IW_SEND_FENCE */
	struct iw_mw_bind_req bind_info; /* length 0: unbind (mr may be NULL) */
};
/*
 * Bind a type 1 memory window, as ibv_bind_mw: post on qp's send queue a
 * request to bind mw to [addr, addr + length) of bind_info.mr with the
 * rights mw_access_flags (IW_ACCESS_REMOTE_*, or 0), or with length 0 to
 * unbind it. The library picks the window's new STag (its index, a new
 * random key) and writes it to mw->rkey before returning: hand it to a
 * peer in a Send posted behind the bind, which runs after it. The bind
 * runs when it reaches the head of the queue, as an IW_WR_BIND_MW does;
 * from then on the previous STag fails (TERMINATE invalid STag) and the
 * new one grants the peers of every QP of the window's PD the rights
 * given. A window that is bound already is rebound (its old MR is
 * released). It completes on the send CQ with opcode IW_WC_BIND_MW (a
 * success only if signalled). A bind that fails when it runs (an MR that
 * is not VALID, of another PD or without IW_ACCESS_MW_BIND,
 * REMOTE_WRITE or REMOTE_ATOMIC on an MR without LOCAL_WRITE, a range outside the MR, a window of another PD) completes
 * with IW_WC_MW_BIND_ERR and takes the QP to ERR like a failed
 * IW_WR_BIND_MW; mw->rkey then names no binding. The window and the MR
 * must outlive the bind's completion. Any thread.
 *
 * Returns: 0, or a positive errno (mw->rkey unchanged).
 * Errors:
 *   EINVAL  qp, mw or mw_bind is NULL; mw is not a type 1 window;
 *           bind_info.mr is NULL with a length; the QP is not in RTS, SQD
 *           or ERR; send_flags has bit 31 set.
 *   ENOMEM  The send queue is full.
 */
int iw_bind_mw(struct iw_qp *qp, struct iw_mw *mw, struct iw_mw_bind *mw_bind);
/*
 * Post receive work requests: the list wr (linked by next) to qp's receive
 * queue. Posting stops at the first WR that fails: it is stored in *bad_wr
 * (if bad_wr is not NULL); the WRs before it are posted. The WRs and SGE
 * lists are copied; the buffers (in MRs with IW_ACCESS_LOCAL_WRITE) must
 * stay valid until the WR completes on the receive CQ. Allowed in every
 * state but RESET: post before connecting or accepting, since iWARP has no
 * receiver-not-ready retry (a Send that finds no receive posted is a
 * TERMINATE). In ERR the WRs complete with IW_WC_WR_FLUSH_ERR. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  qp is NULL; the QP uses an SRQ (*bad_wr = wr); the QP is in
 *           RESET; num_sge is negative or above max_recv_sge, or sg_list is
 *           NULL with num_sge > 0; an lkey is unknown, invalid or of
 *           another PD.
 *   EACCES  An SGE's MR lacks IW_ACCESS_LOCAL_WRITE.
 *   EFAULT  An SGE is not inside its MR.
 *   ENOMEM  The receive queue is full (max_recv_wr WRs posted).
 */
int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr);

struct iw_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit; /* SRQ_LIMIT_REACHED when fewer WRs remain */
};
struct iw_srq_init_attr {
	void *srq_context;
	struct iw_srq_attr attr;
};
enum iw_srq_attr_mask { IW_SRQ_MAX_WR = 1 << 0, IW_SRQ_LIMIT = 1 << 1 };

/*
 * Create a shared receive queue on pd: QPs created with attr.srq take their
 * receive WRs from it, oldest first (see iw_set_srq_order). attr is copied:
 * max_wr 1..16384, max_sge 1..16, srq_limit at most max_wr (0: no limit
 * event). iw_modify_srq resizes it and re-arms the limit. The PD must outlive the SRQ, the SRQ its
 * QPs.
 *
 * A QP takes a WR when the first segment of a Send arrives and owns it from
 * then on. If that QP goes to ERR before the message ends, the WR completes
 * on the QP's receive CQ with the QP's qp_num and IW_WC_WR_FLUSH_ERR (or,
 * when that very message caused the error, its own status: see
 * iw_poll_cq). It is not returned to the SRQ: the application must repost
 * it to the SRQ to use its buffer again. WRs still on the SRQ stay there
 * for the other QPs, without a completion; IW_EVENT_QP_LAST_WQE_REACHED,
 * queued after that completion, tells that the QP in ERR takes no more.
 *
 * Returns: the SRQ, or NULL with errno set.
 * Errors:
 *   EINVAL  pd or attr is NULL, or an attribute is out of range.
 *   ENOMEM  Out of memory.
 */
struct iw_srq *iw_create_srq(struct iw_pd *pd, struct iw_srq_init_attr *attr);
/*
 * Modify an SRQ: resize it and arm its limit, as ibv_modify_srq.
 * IW_SRQ_MAX_WR resizes it to exactly attr->max_wr WRs, larger or smaller,
 * while QPs use it: the WRs posted stay, in order, and each is taken once.
 * It may not shrink below the WRs posted now. max_sge is kept.
 * IW_SRQ_LIMIT arms the limit: when a QP takes a WR and fewer than
 * srq_limit remain posted, IW_EVENT_SRQ_LIMIT_REACHED is raised once and
 * the limit disarms (iw_query_srq then reports 0); 0 disarms it. With both
 * bits the limit is checked against the new size. Either everything asked
 * is applied or nothing is. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  srq or attr is NULL; attr_mask has a bit other than
 *           IW_SRQ_MAX_WR and IW_SRQ_LIMIT; max_wr is 0, above 16384, or
 *           below the number of WRs posted; the limit (new, or the one
 *           armed) would be above the size.
 *   ENOMEM  Out of memory (the SRQ is unchanged).
 */
int iw_modify_srq(struct iw_srq *srq, struct iw_srq_attr *attr, int attr_mask);
/*
 * Query an SRQ: its size (max_wr), max_sge and the limit armed now (0 when
 * none is armed, or after it fired) in *attr. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  srq or attr is NULL.
 */
int iw_query_srq(struct iw_srq *srq, struct iw_srq_attr *attr);
enum iw_srq_order { IW_SRQ_OLDEST_FIRST = 0, IW_SRQ_NEWEST_FIRST = 1 };
/*
 * Choose which posted WR an SRQ hands to the next Send that arrives: the
 * oldest (IW_SRQ_OLDEST_FIRST, the default, as verbs SRQs do) or the one
 * posted last (IW_SRQ_NEWEST_FIRST). Newest first keeps the buffers a
 * server reposts as it finishes with them in the CPU's caches: a server
 * must post a receive for every message its peers may have in flight
 * (iWARP has no RNR retry), and taken oldest first those receives are
 * all touched in turn however few messages are in flight, so their
 * buffers are cold when the data is copied in (iwarp-nvmet with 128 KiB
 * in-capsule writes: 114 receives posted, 8 in flight; the README has
 * the figures). Which WR a message takes is all that changes: each WR is
 * still taken once, completions and the limit event are unchanged, and
 * iw_modify_srq keeps the order. Any thread; it applies to WRs taken
 * after it returns.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  srq is NULL, or order is not one of the two.
 */
int iw_set_srq_order(struct iw_srq *srq, enum iw_srq_order order);
/*
 * Destroy an SRQ. WRs still posted on it are released without a completion
 * (their MRs may be deregistered afterwards; no wr_id of theirs is ever
 * reported).
 * Queued asynchronous events naming it are dropped. Nothing changes while
 * QPs use it.
 *
 * Returns: 0 (also for NULL), or a positive errno.
 * Errors:
 *   EBUSY   QPs still use the SRQ.
 */
int iw_destroy_srq(struct iw_srq *srq);
/*
 * Post receive work requests to an SRQ: the list wr (linked by next), with
 * the rules of iw_post_recv: stops at the first failing WR (*bad_wr),
 * copies the WRs, not the buffers. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  srq is NULL; num_sge is negative or above max_sge, or sg_list
 *           is NULL with num_sge > 0; an lkey is unknown, invalid or of
 *           another PD.
 *   EACCES  An SGE's MR lacks IW_ACCESS_LOCAL_WRITE.
 *   EFAULT  An SGE is not inside its MR.
 *   ENOMEM  The SRQ is full (max_wr WRs posted).
 */
int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr, struct iw_recv_wr **bad_wr);

/* ============================================================ fault injection */

/* Faults a QP can be told to commit on the wire (iw_qp_inject_fault): for
 * testing how peers handle them and for producing faulty streams to debug
 * decoders with. */
enum iw_fault {
	IW_FAULT_TX_CRC = 1, /* one FPDU goes out with a wrong MPA CRC */
};
/*
 * Name a fault, e.g. "tx-crc" for IW_FAULT_TX_CRC. Thread safe.
 *
 * Returns: a static string ("unknown" for a value outside the enum).
 */
const char *iw_fault_str(enum iw_fault fault);
/*
 * Inject a fault into a connected QP's transmit path. IW_FAULT_TX_CRC: the
 * nth FPDU the QP frames from now on (1: the next) goes out with its MPA
 * CRC field inverted, so that it cannot match; every other octet is what
 * the QP would have sent. A peer that checks CRCs then answers with
 * TERMINATE (layer LLP, error type MPA, code 0x02) and closes: the QP
 * raises IW_EVENT_QP_TERMINATE and flushes what is outstanding, as for
 * any peer's TERMINATE.
 *
 * Every FPDU counts, in the order the QP frames them: Send, RDMA Write and
 * Read Request segments, Read Responses, a TERMINATE. FPDUs already framed
 * before the call (queued for the socket) do not count; MPA Request and
 * Reply frames are not FPDUs. The fault fires once. A new call replaces
 * the fault armed before; nth 0 disarms it (this never fails on a valid
 * qp). The fault belongs to the current connection: it is cleared when the
 * QP starts another. Unarmed, it costs one test per FPDU. Any thread.
 *
 * Returns: 0, or a positive errno.
 * Errors:
 *   EINVAL  qp is NULL, or fault is not an enum iw_fault value.
 *   ENOTCONN The QP is not connected in RTS or SQD: the MPA exchange has
 *            not completed, or the QP is in ERR (a TERMINATE was sent or
 *            received, or the connection closed).
 *   EOPNOTSUPP The connection did not negotiate MPA CRC: the field is zero
 *            and unchecked, so there is nothing to corrupt.
 */
int iw_qp_inject_fault(struct iw_qp *qp, enum iw_fault fault, uint32_t nth);

#ifdef __cplusplus
}
#endif
#endif /* IWARP_VERBS_H */
