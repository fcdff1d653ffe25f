/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-nvmet's controller, sans I/O: subsystems, controllers, queues and
 * the commands they execute, independent of how capsules and data move.
 * The transport (tgt_rdma.c) hands a received capsule to tgt_cmd_begin,
 * moves the data the answer asks for (RDMA READ of host data into
 * req->data, or RDMA WRITE of req->data after execution), calls
 * tgt_cmd_exec, and sends req->cqe. Nothing here blocks but the backing
 * store's pread/pwrite; the clock is passed in (tgt_tick, req->now_ms).
 *
 * Threads: each queue belongs to one thread (its loop), which alone calls
 * tgt_cmd_begin, tgt_cmd_exec and tgt_queue_gone for it; queues of one
 * controller may be on different threads. What they share (the controller
 * table, a controller's properties, features, keep alive, AERs and queue
 * table) is guarded by tgt.lock, which every command that is not an I/O
 * command of a connected I/O queue takes (Connect, Fabrics, admin), as do
 * tgt_tick and tgt_queue_gone. The I/O path takes no lock: it reads CSTS
 * and the controller's detached flag atomically, counts into its own
 * queue (read atomically for SMART), and a controller stays allocated
 * until its last queue is gone (refs).
 */
#ifndef NVMET_TGT_H
#define NVMET_TGT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "nvmf.h"

#define TGT_MAX_NS 16
#define TGT_MAX_HOSTS 16
#define TGT_MAX_CTRL 64
#define TGT_MAX_AER 4
#define TGT_CNTLID_DYNAMIC 0xffff

enum tgt_ns_kind { TGT_NS_RAM, TGT_NS_FILE, TGT_NS_BLOCK };
struct tgt_ns {
	enum tgt_ns_kind kind;
	const char *path;
	int fd;
	uint8_t *ram;       /* mapped, ram_len octets */
	uint64_t ram_len;
	uint64_t blocks;
	uint8_t lbads;      /* log2 block size */
	bool direct;        /* O_DIRECT: buffers and offsets block aligned */
	uint8_t nguid[16];
};
/* Open "ram:SIZE" (K/M/G suffix), a file path (created with --size if
 * missing) or a block device; 0 or -errno with a message on stderr. */
int tgt_ns_open(struct tgt_ns *ns, const char *spec, uint64_t size, uint32_t bs, bool direct);
void tgt_ns_close(struct tgt_ns *ns);
/* Block I/O: 0 or an NVMe status. */
uint16_t tgt_ns_read(struct tgt_ns *ns, void *buf, uint64_t slba, uint32_t nlb);
uint16_t tgt_ns_write(struct tgt_ns *ns, const void *buf, uint64_t slba, uint32_t nlb, bool fua);
uint16_t tgt_ns_flush(struct tgt_ns *ns);
uint16_t tgt_ns_zero(struct tgt_ns *ns, uint64_t slba, uint64_t nlb, bool dealloc);
/* Deallocated blocks read as zeroes (Identify Namespace DLFEAT). */
bool tgt_ns_dealloc_zeroes(const struct tgt_ns *ns);
/* The calling thread's bounce and zero buffers (each thread that ran
 * commands frees its own; tgt_fini the calling thread's). */
void tgt_ns_buffers_free(void);

struct tgt_cfg {
	char subnqn[NVMF_NQN_SIZE];
	const char *hosts[TGT_MAX_HOSTS]; /* allowed host NQNs; none: any */
	int nhosts;
	struct tgt_ns ns[TGT_MAX_NS];
	uint32_t nns;
	uint32_t icd_max;  /* in-capsule data octets accepted (IOCCSZ) */
	uint32_t max_io;   /* largest transfer, a power of two >= 4096 (MDTS) */
	uint16_t mqes;     /* largest I/O queue, entries */
	uint16_t max_qid;  /* I/O queues per controller */
	uint16_t nq_fit;   /* I/O queues of mqes entries the transport can serve
			    * for one controller (Number of Queues grants no
			    * more); 0: max_qid */
	char traddr[64];   /* for the discovery log */
	char trsvcid[33];
	bool verbose;
};

struct tgt;
struct tgt_queue;

struct tgt_ctrl {
	struct tgt *tgt;
	uint16_t cntlid;
	bool disc;                  /* the discovery controller */
	char hostnqn[NVMF_NQN_SIZE];
	uint8_t hostid[16];
	uint32_t cc, csts;
	uint32_t kato_ms;           /* 0: no keep alive */
	uint64_t ka_last_ms;
	uint16_t nq_granted;        /* Set Features Number of Queues; 0 = not set */
	uint32_t aec;               /* Async Event Configuration */
	bool vwc;
	struct tgt_queue **queues;  /* [0..max_qid] */
	struct tgt_req *aer[TGT_MAX_AER];
	int naer;
	struct nvmf_smart smart;     /* host_reads/writes: of the queues that left */
	uint64_t rd_bytes, wr_bytes; /* for SMART: of the queues that left */
	bool dead;                  /* reported through ctrl_dead, queues closing */
	bool dead_loud;             /* died of a timeout or an error, not a goodbye */
	bool detached;              /* the admin queue is gone (atomic): I/O is aborted */
	uint32_t refs;              /* queues still attached */
};

/* CSTS as the lock-free I/O path reads it, and as the locked paths write it. */
static inline uint32_t tgt_csts(const struct tgt_ctrl *c)
{
	return __atomic_load_n(&c->csts, __ATOMIC_RELAXED);
}
static inline void tgt_csts_set(struct tgt_ctrl *c, uint32_t v)
{
	__atomic_store_n(&c->csts, v, __ATOMIC_RELAXED);
}

/* One NVMe queue (an RDMA QP). qid and size come from the CM private data. */
struct tgt_queue {
	struct tgt *tgt;
	struct tgt_ctrl *ctrl;      /* NULL until Connect */
	uint16_t qid;
	uint16_t size;              /* entries (hsqsize + 1) */
	uint16_t sqhd;
	void *tp;                   /* the transport's connection */
	/* Written by the queue's thread only, read atomically for SMART. */
	uint64_t reads, writes, rd_bytes, wr_bytes;
	char traddr[64];            /* the address the host reached (discovery log); "" for cfg's */
};

enum tgt_step {
	TGT_RESPOND,  /* send req->cqe now (after req->c2h_len octets of data, if any) */
	TGT_FETCH,    /* read req->xfer_len octets of host data into req->data, then exec */
	TGT_EXEC,     /* ready: call tgt_cmd_exec */
	TGT_HOLD,     /* kept by the controller (AER): answered later, or dropped with the queue */
};

struct tgt_req {
	struct tgt_queue *q;
	struct nvmf_cmd cmd;
	struct nvmf_sgl sgl;
	uint8_t *data;        /* the transport's buffer (max_io octets) */
	struct tgt_ns *in_place; /* data is this RAM namespace's (tgt_io_in_place) */
	uint8_t *icd;         /* in-capsule data in the receive buffer */
	uint32_t icd_len;
	uint32_t xfer_len;    /* octets the command moves, as the SGL says */
	uint32_t c2h_len;     /* octets to write to the host before the response */
	uint64_t now_ms;      /* when the capsule arrived (kept by tgt_cmd_begin) */
	struct nvmf_cqe cqe;
};

struct tgt {
	struct tgt_cfg cfg;
	pthread_mutex_t lock;  /* the controllers' shared state (see the top) */
	struct tgt_ctrl *ctrls[TGT_MAX_CTRL];
	uint64_t now_ms;
	uint64_t genctr;
	/* The controller is gone (keep alive expired, fatal error): the
	 * transport disconnects every queue in ctrl->queues. Called with
	 * tgt.lock held, from any queue's thread: it must not wait for
	 * another thread. */
	void (*ctrl_dead)(struct tgt *t, struct tgt_ctrl *ctrl, const char *why);
	void *tp;
};

int tgt_init(struct tgt *t);
void tgt_fini(struct tgt *t);
void tgt_queue_init(struct tgt_queue *q, struct tgt *t, uint16_t qid, uint16_t size);
/* The queue's connection is gone: it leaves its controller; the admin
 * queue takes its controller down (held AERs are forgotten; the transport
 * owns their buffers). */
void tgt_queue_gone(struct tgt_queue *q);
/* Parse and check a capsule of len octets (the receive buffer): fills
 * req, and says what is needed next. A capsule shorter than 64 octets
 * cannot be answered (no command ID): -1, and the transport drops the
 * connection (a fatal transport error). */
int tgt_cmd_begin(struct tgt_queue *q, struct tgt_req *req, uint8_t *buf, uint32_t len);
enum tgt_step tgt_cmd_exec(struct tgt_req *req);
/* Advance the clock: controllers whose keep alive expired are reported
 * through ctrl_dead. Any thread. */
void tgt_tick(struct tgt *t, uint64_t now_ms);
/* The transport met a fatal error on the queue: CSTS.CFS. */
void tgt_queue_fatal(struct tgt_queue *q);
/* Complete a request with a status (sets cqe fields). */
void tgt_req_status(struct tgt_req *req, uint16_t status);

/* Command sets (tgt_admin.c, tgt_io.c). */
uint16_t tgt_admin_prep(struct tgt_req *req);
/* The I/O queues a controller may connect (Number of Queues grants no more). */
uint16_t tgt_queues_max(const struct tgt_cfg *cfg);
enum tgt_step tgt_admin_exec(struct tgt_req *req);
uint16_t tgt_io_prep(struct tgt_req *req);
void tgt_io_exec(struct tgt_req *req);
/* A Read or Write of a RAM namespace with a keyed SGL, past tgt_cmd_begin
 * without a status: point req->data at its blocks in the namespace, so the
 * transport moves the host's data straight in or out and nothing is
 * copied (req->in_place says so). Anything else is left as it is. */
void tgt_io_in_place(struct tgt_req *req);
uint16_t tgt_fabrics_prep(struct tgt_req *req);
void tgt_fabrics_exec(struct tgt_req *req);
struct tgt_ns *tgt_ns_find(struct tgt *t, uint32_t nsid);
void tgt_ctrl_free(struct tgt_ctrl *c);

#endif /* NVMET_TGT_H */
