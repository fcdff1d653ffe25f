/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pcap tracing (trace.h): a byte queue filled by the data path and drained
 * by a writer thread that frames the octets as TCP through pcap_writer.c.
 *
 * The queue is a ring of queue_bytes octets holding variable-length
 * records (a struct rec_hdr, then the payload), either of which may wrap.
 * Positions count octets since the start, so head - tail is the fill.
 * Producers append under the lock. A transmit's record is reserved and
 * filled before its sendmsg and marked pending until the producer trims it
 * to what the kernel took (iw_trace_tx_end, which rewrites only the
 * header, under the lock). The writer reads headers under the lock, skips
 * nothing (a pending record at the tail makes it wait), reads the payload
 * without the lock (no producer touches a record's payload again), and
 * takes the lock once more to release the space.
 *
 * A connection's struct lives until the writer is past its last record:
 * iw_trace_conn_end notes the head position and queues the struct on the
 * ended list; the writer finishes it (FIN or RST) and frees it once the
 * tail reaches that position. Control events therefore never need queue
 * space: a FIN record that does not fit is written at the end instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/verbs.h"
#include "iwarp/wire.h"
#include "diag/pcap_writer.h"
#include "diag/trace.h"
#include "base/alloc.h"

#define REC_ALIGN 8u
/* Per segment in the file: record header, Ethernet, IPv6, TCP + MSS option. */
#define SEG_OVERHEAD_MAX (16u + 14u + 40u + 24u)
#define FILE_BUF_BYTES (1u << 20)
#define IDLE_FLUSH_MS 50
#define PATH_MAX_LEN 255
#define SAME_PATH_MAX 99 /* "-2" ... "-99" */
#define TX_GUESS_MIN (64u * 1024)

enum rec_kind { REC_OPEN, REC_DATA, REC_FIN };

/* What precedes each record's payload in the ring (our own memory, copied
 * in and out with memcpy). */
struct rec_hdr {
	struct iw_trace_conn *conn;
	uint64_t ts_ns;
	uint64_t skip;  /* octets of this direction dropped just before these */
	uint32_t space; /* payload octets reserved after the header */
	uint32_t len;   /* of which the record holds (len <= space) */
	uint32_t mss;   /* the socket's MSS when they were queued */
	uint8_t kind;   /* enum rec_kind */
	uint8_t dir;    /* enum iw_trace_dir */
	bool pending;   /* reserved by iw_trace_tx_begin, not yet ended */
};

/* Where the next MPA frame or FPDU starts in one direction, so that TCP
 * segments can be cut there: Wireshark's iwarp_mpa dissector only finds
 * FPDUs that start a segment, and only when that segment holds at least 8
 * octets of it (20 for an MPA frame): a shorter one is taken for something
 * else and the next segment's first octets for an FPDU header, which loses
 * the framing for the rest of the stream. Records end wherever a read or a
 * partial write ended, often a few octets into a PDU on a loaded machine,
 * so the first PDU_START_MIN octets of a PDU (or all of a shorter one) are
 * held back until they can go out together. Markers or dropped octets end
 * the tracking (the cuts then fall at record and MSS boundaries only). */
#define PDU_START_MIN IW_MPA_FRAME_HDR_LEN
struct pdu_cut {
	bool off;
	bool saw_m;       /* this direction's MPA frame asked for markers */
	bool fpdus;       /* past the MPA frame */
	bool started;     /* the current PDU's first segment is written */
	uint64_t left;    /* octets to the next boundary (0: reading a header) */
	uint8_t hdr[20];  /* header octets gathered so far */
	uint8_t got;
	uint8_t nheld;    /* the current PDU's first octets, not yet written */
	uint8_t held[PDU_START_MIN];
};

struct iw_trace_conn {
	struct iw_trace *t;
	/* Fixed at creation. */
	struct sockaddr_storage local, peer;
	bool initiator;
	uint32_t mss; /* the handshake's */
	uint32_t isn_local, isn_peer;
	uint64_t open_ns;
	/* Producers' part, under t->lock. */
	struct iw_trace_conn *prev, *next; /* t->live */
	struct iw_trace_conn *ended_next;  /* t->ended, in end order */
	uint64_t skip[2];                  /* dropped octets not yet in a record */
	size_t tx_hint;                    /* octets the last traced sendmsg took */
	bool fin_seen[2];                  /* by enum iw_trace_dir */
	bool abortive;
	uint64_t end_pos, end_ns;
	uint32_t mss_now;                  /* the socket's, as last told */
	/* The writer thread's alone. */
	struct iw_pcapw_flow flow;
	bool opened, broken;
	struct pdu_cut cut[2];             /* by enum iw_pcapw_dir */
};

struct iw_trace {
	const struct iw_alloc_ops *alloc; /* the context's */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	pid_t pid;     /* the process whose thread writes (not a forked child) */
	bool finished; /* the writer is joined (under reg_lock) */
	/* Under lock. */
	uint8_t *ring;
	size_t cap;
	uint64_t head, tail;
	bool waiting, stopping, paused;
	struct iw_trace_conn *live;
	struct iw_trace_conn *ended, **ended_last;
	uint64_t dropped_records, dropped_bytes;
	uint32_t isn_next;
	/* Set by the writer (under lock); producers may read it without. */
	atomic_bool stopped;
	/* The process is exiting: producers add nothing, the writer drains. */
	atomic_bool exiting;
	/* The writer thread's (and iw_trace_free's after the join). */
	FILE *fp;
	char *fbuf;
	struct iw_pcapw w;
	uint64_t max_bytes;
	bool capped, dirty;
	char path[PATH_MAX_LEN + 1];
	struct iw_trace *reg_next; /* the process's tracers, under reg_lock */
};

/* Producers add nothing once the trace stopped or the process exits. */
static bool refusing(const struct iw_trace *t)
{
	return atomic_load_explicit(&t->stopped, memory_order_relaxed) ||
	       atomic_load_explicit(&t->exiting, memory_order_relaxed);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ============================================================ options */

/* "64M", "1G", "4096": powers of 1024. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int iw_trace_opts_get(struct iw_trace_opts *o, const struct iw_context_attr *attr)
{
	memset(o, 0, sizeof(*o));
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_PCAP))
		o->path = attr->pcap_path;
	if (!o->path)
		o->path = getenv("IWARP_PCAP");
	if (o->path && !*o->path)
		o->path = NULL;
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_PCAP_MAX)) {
		o->max_bytes = attr->pcap_max_bytes;
		return 0;
	}
	const char *m = getenv("IWARP_PCAP_MAX");
	return m && *m ? parse_size(m, &o->max_bytes) : 0;
}

/* ============================================================ file names */

/* Tracers alive in this process, so that two contexts given one path do not
 * write one file. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_trace *reg_head;

static void finish(struct iw_trace *t);

/* A process that exits with tracers alive (no iw_context_free, common for
 * programs traced through IWARP_PCAP): drain them first. Without this the
 * file would end short, and glibc's exit-time flush, which takes no stream
 * lock, could tear a record the writer thread is writing. */
static void finish_all_at_exit(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct iw_trace *t = reg_head; t; t = t->reg_next)
		if (t->pid == getpid()) {
			atomic_store(&t->exiting, true);
			finish(t);
		}
	pthread_mutex_unlock(&reg_lock);
}

static bool path_in_use(const char *p)
{
	for (struct iw_trace *t = reg_head; t; t = t->reg_next)
		if (strcmp(t->path, p) == 0)
			return true;
	return false;
}

/* tmpl with "%p" expanded into out; EINVAL if it does not fit. */
static int expand(char *out, size_t cap, const char *tmpl)
{
	size_t n = 0;
	for (const char *s = tmpl; *s; s++) {
		int k;
		if (s[0] == '%' && s[1] == 'p') {
			k = snprintf(out + n, cap - n, "%ld", (long)getpid());
			s++;
		} else {
			k = snprintf(out + n, cap - n, "%c", *s);
		}
		if (k < 0 || (size_t)k >= cap - n)
			return EINVAL;
		n += (size_t)k;
	}
	return n ? 0 : EINVAL;
}

/* base with "-i" before the extension of its last component. */
static int variant(char *out, size_t cap, const char *base, int i)
{
	const char *slash = strrchr(base, '/');
	const char *dot = strrchr(slash ? slash + 1 : base, '.');
	size_t stem = dot && dot != (slash ? slash + 1 : base) ? (size_t)(dot - base) : strlen(base);
	int k = snprintf(out, cap, "%.*s-%d%s", (int)stem, base, i, base + stem);
	return k < 0 || (size_t)k >= cap ? EINVAL : 0;
}

/* Pick t->path and register t (under reg_lock, so two contexts created at
 * once cannot pick the same name). */
static int claim_path(struct iw_trace *t, const char *tmpl)
{
	char base[PATH_MAX_LEN + 1];
	int rc = expand(base, sizeof(base), tmpl);
	if (rc)
		return rc;
	/* A device (/dev/null) may be shared; "/dev/null-2" would be a file. */
	struct stat st;
	bool shared = stat(base, &st) == 0 && S_ISCHR(st.st_mode);
	pthread_mutex_lock(&reg_lock);
	snprintf(t->path, sizeof(t->path), "%s", base);
	for (int i = 2; !shared && path_in_use(t->path) && !rc; i++)
		rc = i > SAME_PATH_MAX ? EEXIST : variant(t->path, sizeof(t->path), base, i);
	static bool at_exit_set;
	if (!rc && !at_exit_set)
		at_exit_set = atexit(finish_all_at_exit) == 0;
	if (!rc) {
		t->reg_next = reg_head;
		reg_head = t;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

static void release_path(struct iw_trace *t)
{
	pthread_mutex_lock(&reg_lock);
	for (struct iw_trace **p = &reg_head; *p; p = &(*p)->reg_next)
		if (*p == t) {
			*p = t->reg_next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

/* ============================================================ the ring */

/* Octets of the first len in iov (fewer if iov holds fewer). */
static size_t iov_len(const struct iovec *iov, int iovcnt, size_t len)
{
	size_t have = 0;
	for (int i = 0; i < iovcnt && have < len; i++)
		have += iov[i].iov_len;
	return have < len ? have : len;
}

static size_t rec_size(size_t len)
{
	return (sizeof(struct rec_hdr) + len + REC_ALIGN - 1) & ~(size_t)(REC_ALIGN - 1);
}

static void ring_put(struct iw_trace *t, uint64_t pos, const void *src, size_t n)
{
	if (n == 0)
		return; /* an empty iovec may have a NULL base */
	size_t off = (size_t)(pos % t->cap), first = t->cap - off;
	if (first > n)
		first = n;
	memcpy(t->ring + off, src, first);
	if (n > first)
		memcpy(t->ring, (const uint8_t *)src + first, n - first);
}

static void ring_get(const struct iw_trace *t, uint64_t pos, void *dst, size_t n)
{
	size_t off = (size_t)(pos % t->cap), first = t->cap - off;
	if (first > n)
		first = n;
	memcpy(dst, t->ring + off, first);
	if (n > first)
		memcpy((uint8_t *)dst + first, t->ring, n - first);
}

/* The payload of the record at pos as at most two pieces of the ring. */
static int ring_iov(const struct iw_trace *t, uint64_t pos, size_t len, struct iovec *iov)
{
	size_t off = (size_t)(pos % t->cap), first = t->cap - off;
	if (first >= len) {
		iov[0] = (struct iovec){t->ring + off, len};
		return 1;
	}
	iov[0] = (struct iovec){t->ring + off, first};
	iov[1] = (struct iovec){t->ring, len - first};
	return 2;
}

static void count_drop(struct iw_trace *t, struct iw_trace_conn *c, enum iw_trace_dir dir,
		       size_t len)
{
	c->skip[dir] += len;
	t->dropped_records++;
	t->dropped_bytes += len;
}

/* An iovec stream: the octets from offset off of iov[0..cnt). */
struct src {
	const struct iovec *iov;
	int cnt;
	size_t off;
};

/* Copy len octets of the stream into the ring at pos. */
static void ring_put_src(struct iw_trace *t, uint64_t pos, struct src s, size_t len)
{
	for (int i = 0; i < s.cnt && len; i++) {
		if (s.off >= s.iov[i].iov_len) {
			s.off -= s.iov[i].iov_len;
			continue;
		}
		size_t n = s.iov[i].iov_len - s.off;
		if (n > len)
			n = len;
		ring_put(t, pos, (const uint8_t *)s.iov[i].iov_base + s.off, n);
		s.off = 0;
		pos += n;
		len -= n;
	}
}

static void wake_writer(struct iw_trace *t)
{
	if (t->waiting)
		pthread_cond_signal(&t->cond);
}

/* Append a record of len payload octets from iov (lock held); pending
 * keeps the writer off it until iw_trace_tx_end. Returns its position,
 * or UINT64_MAX when it does not fit (the payload counts as dropped). */
static uint64_t enqueue(struct iw_trace *t, struct iw_trace_conn *c, enum rec_kind kind,
			enum iw_trace_dir dir, struct src from, size_t len, bool pending)
{
	size_t need = rec_size(len);
	if (len > UINT32_MAX || need > t->cap - (size_t)(t->head - t->tail)) {
		if (len && !pending)
			count_drop(t, c, dir, len);
		return UINT64_MAX;
	}
	struct rec_hdr h = {.conn = c, .ts_ns = now_ns(), .skip = c->skip[dir],
			    .space = (uint32_t)len, .len = (uint32_t)len, .mss = c->mss_now,
			    .kind = (uint8_t)kind, .dir = (uint8_t)dir, .pending = pending};
	uint64_t pos = t->head;
	c->skip[dir] = 0;
	ring_put(t, pos, &h, sizeof(h));
	ring_put_src(t, pos + sizeof(h), from, len);
	t->head += need;
	if (!pending)
		wake_writer(t);
	return pos;
}

/* ============================================================ producers */

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
}

/* The other end of this connection is already traced here (lock held). */
static bool other_end_traced(const struct iw_trace *t, const struct iw_trace_conn *c)
{
	for (const struct iw_trace_conn *o = t->live; o; o = o->next)
		if (same_addr(&o->local, &c->peer) && same_addr(&o->peer, &c->local))
			return true;
	return false;
}

static bool copy_addr(struct sockaddr_storage *dst, const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		memcpy(dst, sa, sizeof(struct sockaddr_in));
	else if (sa->sa_family == AF_INET6)
		memcpy(dst, sa, sizeof(struct sockaddr_in6));
	else
		return false;
	return true;
}

/* A different-looking initial sequence number per connection and side. */
static uint32_t make_isn(struct iw_trace *t)
{
	uint64_t x = now_ns() ^ ((uint64_t)++t->isn_next << 32);
	x ^= x >> 33;
	x *= 0xFF51AFD7ED558CCDull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static uint32_t clamp_mss(uint32_t mss)
{
	return mss == 0 ? IW_PCAPW_DEFAULT_MSS : mss > IW_PCAPW_MAX_MSS ? IW_PCAPW_MAX_MSS : mss;
}

void iw_trace_conn_mss(struct iw_trace_conn *c, uint32_t mss)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->t->lock);
	c->mss_now = clamp_mss(mss);
	pthread_mutex_unlock(&c->t->lock);
}

struct iw_trace_conn *iw_trace_conn_new(struct iw_trace *t, const struct sockaddr *local,
					const struct sockaddr *peer, bool initiator, uint32_t mss)
{
	if (!t || !local || !peer || local->sa_family != peer->sa_family || refusing(t))
		return NULL;
	struct iw_trace_conn *c = iw_calloc(t->alloc, 1, sizeof(*c));
	if (!c)
		return NULL;
	if (!copy_addr(&c->local, local) || !copy_addr(&c->peer, peer)) {
		iw_free(t->alloc, c);
		return NULL;
	}
	c->t = t;
	c->initiator = initiator;
	c->mss = c->mss_now = clamp_mss(mss);
	pthread_mutex_lock(&t->lock);
	if (other_end_traced(t, c)) {
		pthread_mutex_unlock(&t->lock);
		iw_free(t->alloc, c);
		return NULL;
	}
	c->isn_local = make_isn(t);
	c->isn_peer = make_isn(t);
	c->open_ns = now_ns();
	c->next = t->live;
	if (t->live)
		t->live->prev = c;
	t->live = c;
	/* Optional: a dropped OPEN is written before the first record. */
	enqueue(t, c, REC_OPEN, IW_TRACE_TX, (struct src){0}, 0, false);
	pthread_mutex_unlock(&t->lock);
	return c;
}

void iw_trace_data(struct iw_trace_conn *c, enum iw_trace_dir dir, const struct iovec *iov,
		   int iovcnt, size_t len)
{
	struct iw_trace *t = c->t;
	if (!len || refusing(t))
		return;
	size_t have = iov_len(iov, iovcnt, len);
	pthread_mutex_lock(&t->lock);
	enqueue(t, c, REC_DATA, dir, (struct src){iov, iovcnt, 0}, have, false);
	pthread_mutex_unlock(&t->lock);
}

/* Before sendmsg: copy what the kernel will probably take (twice what it
 * took last time, within bounds), so that a large queue offered to a full
 * socket is not copied again and again. */
void iw_trace_tx_begin(struct iw_trace_conn *c, struct iw_trace_tx *tx, const struct iovec *iov,
		       int iovcnt)
{
	struct iw_trace *t = c->t;
	tx->pos = UINT64_MAX;
	tx->len = 0;
	if (refusing(t))
		return;
	pthread_mutex_lock(&t->lock);
	size_t want = c->tx_hint ? 2 * c->tx_hint : TX_GUESS_MIN;
	if (want < TX_GUESS_MIN)
		want = TX_GUESS_MIN;
	if (want > t->cap / 4)
		want = t->cap / 4;
	tx->len = iov_len(iov, iovcnt, want);
	if (tx->len)
		tx->pos = enqueue(t, c, REC_DATA, IW_TRACE_TX, (struct src){iov, iovcnt, 0}, tx->len,
				  true);
	pthread_mutex_unlock(&t->lock);
}

/* After sendmsg took sent octets: the record keeps that many of its copy;
 * octets beyond the copy are taken from iov now. */
void iw_trace_tx_end(struct iw_trace_conn *c, struct iw_trace_tx *tx, const struct iovec *iov,
		     int iovcnt, size_t sent)
{
	struct iw_trace *t = c->t;
	pthread_mutex_lock(&t->lock);
	if (sent)
		c->tx_hint = sent;
	size_t kept = 0;
	if (tx->pos != UINT64_MAX) {
		struct rec_hdr h;
		ring_get(t, tx->pos, &h, sizeof(h));
		kept = sent < tx->len ? sent : tx->len;
		h.len = (uint32_t)kept;
		h.pending = false;
		ring_put(t, tx->pos, &h, sizeof(h));
		wake_writer(t);
	}
	/* The kernel took more than was copied: the rest from the iovecs now. */
	if (sent > kept && !refusing(t))
		enqueue(t, c, REC_DATA, IW_TRACE_TX, (struct src){iov, iovcnt, kept}, sent - kept,
			false);
	pthread_mutex_unlock(&t->lock);
}

void iw_trace_fin(struct iw_trace_conn *c, enum iw_trace_dir dir)
{
	struct iw_trace *t = c->t;
	pthread_mutex_lock(&t->lock);
	if (!c->fin_seen[dir]) {
		c->fin_seen[dir] = true;
		enqueue(t, c, REC_FIN, dir, (struct src){0}, 0, false);
	}
	pthread_mutex_unlock(&t->lock);
}

void iw_trace_conn_end(struct iw_trace_conn *c, bool abortive)
{
	if (!c)
		return;
	struct iw_trace *t = c->t;
	pthread_mutex_lock(&t->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->live = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->abortive = abortive;
	c->end_pos = t->head;
	c->end_ns = now_ns();
	c->ended_next = NULL;
	*t->ended_last = c;
	t->ended_last = &c->ended_next;
	wake_writer(t);
	pthread_mutex_unlock(&t->lock);
}

/* ============================================================ the writer */

/* Producers stop from now on; the file keeps what it has. */
static void stop(struct iw_trace *t)
{
	pthread_mutex_lock(&t->lock);
	atomic_store(&t->stopped, true);
	pthread_mutex_unlock(&t->lock);
}

/* Room under the cap for need more octets, the note kept in reserve. */
static bool room(struct iw_trace *t, uint64_t need)
{
	if (atomic_load_explicit(&t->stopped, memory_order_relaxed))
		return false;
	if (t->w.written + need + IW_PCAPW_NOTE_RECORD_MAX <= t->max_bytes)
		return true;
	t->capped = true;
	stop(t);
	return false;
}

/* A pcap_writer result: any error ends the trace. */
static bool wrote(struct iw_trace *t, int rc)
{
	t->dirty = true;
	if (rc == 0)
		return true;
	stop(t);
	return false;
}

/* pcap side of a direction: side 0 is the initiator. */
static enum iw_pcapw_dir side_of(const struct iw_trace_conn *c, enum iw_trace_dir dir)
{
	bool local_is_a = c->initiator;
	return (dir == IW_TRACE_TX) == local_is_a ? IW_PCAPW_A2B : IW_PCAPW_B2A;
}

/* Set up the flow and write the handshake, once. */
static bool conn_open(struct iw_trace *t, struct iw_trace_conn *c)
{
	if (c->opened)
		return !c->broken;
	c->opened = true;
	const struct sockaddr *l = (const void *)&c->local, *p = (const void *)&c->peer;
	int rc = c->initiator ? iw_pcapw_flow_init(&c->flow, &t->w, l, p, c->isn_local,
						   c->isn_peer, c->mss)
			      : iw_pcapw_flow_init(&c->flow, &t->w, p, l, c->isn_peer,
						   c->isn_local, c->mss);
	if (rc || !room(t, 3 * SEG_OVERHEAD_MAX) || !wrote(t, iw_pcapw_handshake(&c->flow, c->open_ns)))
		c->broken = true;
	return !c->broken;
}

/* How many of len octets fit under the cap, in segments of mss. */
static size_t fitting(const struct iw_trace *t, size_t len, uint32_t mss)
{
	uint64_t used = t->w.written + IW_PCAPW_NOTE_RECORD_MAX;
	uint64_t avail = t->max_bytes > used ? t->max_bytes - used : 0;
	uint64_t full = avail / (SEG_OVERHEAD_MAX + mss);
	uint64_t rest = avail % (SEG_OVERHEAD_MAX + mss);
	uint64_t fit = full * mss + (rest > SEG_OVERHEAD_MAX ? rest - SEG_OVERHEAD_MAX : 0);
	return fit < len ? (size_t)fit : len;
}

/* Octets of a PDU whose first `got` octets are hdr, or 0 if more header
 * octets are needed. Markers requested (M) switch the tracking off. */
static uint64_t pdu_len(struct pdu_cut *k)
{
	if (!k->fpdus) {
		if (k->got < IW_MPA_FRAME_HDR_LEN)
			return 0;
		if (k->hdr[16] & IW_MPA_FLAG_M)
			k->saw_m = true;
		k->fpdus = true;
		return IW_MPA_FRAME_HDR_LEN + ((uint64_t)k->hdr[18] << 8 | k->hdr[19]);
	}
	if (k->got < 2)
		return 0;
	uint32_t ulpdu = (uint32_t)k->hdr[0] << 8 | k->hdr[1];
	return 2 + ulpdu + iw_mpa_pad(ulpdu) + IW_MPA_CRC_LEN;
}

/* How many of the n octets at p belong to the current PDU (stopping at its
 * end), advancing the tracker. */
static size_t pdu_take(struct pdu_cut *k, const uint8_t *p, size_t n)
{
	size_t used = 0;
	while (used < n) {
		if (k->left == 0) {
			size_t want = k->fpdus ? 2 : IW_MPA_FRAME_HDR_LEN;
			size_t g = want - k->got < n - used ? want - k->got : n - used;
			memcpy(k->hdr + k->got, p + used, g);
			k->got = (uint8_t)(k->got + g);
			used += g;
			uint64_t total = pdu_len(k);
			if (total == 0)
				continue;
			k->left = total - k->got;
			k->got = 0;
			if (k->left == 0)
				return used;
			continue;
		}
		size_t g = k->left < n - used ? (size_t)k->left : n - used;
		k->left -= g;
		used += g;
		if (k->left == 0)
			return used;
	}
	return used;
}

/* The held octets, then g octets at p (either may be empty). */
static bool write_piece(struct iw_trace *t, struct iw_trace_conn *c, enum iw_pcapw_dir s,
			const uint8_t *p, size_t g, uint64_t ts)
{
	struct pdu_cut *k = &c->cut[s];
	struct iovec two[2] = {{k->held, k->nheld}, {(void *)p, g}};
	int first = k->nheld ? 0 : 1;
	k->nheld = 0;
	if (first == 1 && !g)
		return true;
	return wrote(t, iw_pcapw_data(&c->flow, s, two + first, 2 - first, ts));
}

/* Octets held back must go out before a FIN, a gap or the end. */
static bool flush_held(struct iw_trace *t, struct iw_trace_conn *c, enum iw_pcapw_dir s,
		       uint64_t ts)
{
	return write_piece(t, c, s, NULL, 0, ts);
}

/* g octets at p that end a record inside the current PDU's first
 * PDU_START_MIN octets: kept for the record that brings the rest. */
static bool hold(struct pdu_cut *k, const uint8_t *p, size_t g)
{
	bool ended = k->left == 0 && k->got == 0;
	if (k->off || k->started || ended || k->nheld + g >= PDU_START_MIN)
		return false;
	memcpy(k->held + k->nheld, p, g);
	k->nheld = (uint8_t)(k->nheld + g);
	return true;
}

/* Hand the octets to the pcap writer, cut at every PDU boundary, a PDU's
 * first segment never shorter than PDU_START_MIN (or the whole PDU). */
static void write_cut(struct iw_trace *t, struct iw_trace_conn *c, enum iw_pcapw_dir s,
		      struct iovec *iov, int n, uint64_t ts)
{
	struct pdu_cut *k = &c->cut[s];
	for (int i = 0; i < n; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;
		while (len) {
			size_t g = k->off ? len : pdu_take(k, p, len);
			/* M in a frame means markers in the other direction. */
			if (k->saw_m)
				c->cut[1 - s].off = true;
			if (!hold(k, p, g)) {
				if (!write_piece(t, c, s, p, g, ts))
					return;
				/* Past a boundary the next PDU starts afresh. */
				k->started = !(k->left == 0 && k->got == 0);
			}
			p += g;
			len -= g;
		}
	}
}

static void write_data(struct iw_trace *t, struct iw_trace_conn *c, const struct rec_hdr *h,
		       struct iovec *iov, int n)
{
	enum iw_pcapw_dir s = side_of(c, h->dir);
	if (c->flow.ep[s].fin)
		return; /* after a FIN or RST: nothing more is shown */
	/* Dropped octets leave a hole of their size in the sequence space. */
	if (h->skip) {
		if (!flush_held(t, c, s, h->ts_ns))
			return;
		c->cut[s].off = true;
	}
	c->flow.ep[s].nxt += (uint32_t)h->skip;
	/* The FPDUs follow the live MSS (lib/io/cm_conn.c, mss_look): so do
	 * the segments, each FPDU in one, as on the wire. The handshake's
	 * MSS option keeps the first value. */
	c->flow.mss = h->mss;
	size_t fit = fitting(t, h->len, h->mss);
	if (fit < h->len) {
		/* The cap is reached: keep what fits, then stop for good. */
		t->capped = true;
		stop(t);
		if (n == 2 && fit <= iov[0].iov_len)
			n = 1;
		if (n == 1)
			iov[0].iov_len = fit;
		else
			iov[1].iov_len = fit - iov[0].iov_len;
	}
	if (fit)
		write_cut(t, c, s, iov, n, h->ts_ns);
}

static void write_fin(struct iw_trace *t, struct iw_trace_conn *c, enum iw_pcapw_dir s,
		      uint64_t ts)
{
	if (!c->flow.ep[s].fin && flush_held(t, c, s, ts) && room(t, 2 * SEG_OVERHEAD_MAX))
		wrote(t, iw_pcapw_fin(&c->flow, s, ts));
}

static void do_record(struct iw_trace *t, const struct rec_hdr *h, struct iovec *iov, int n)
{
	struct iw_trace_conn *c = h->conn;
	if (atomic_load_explicit(&t->stopped, memory_order_relaxed) || !conn_open(t, c))
		return;
	if (h->kind == REC_DATA)
		write_data(t, c, h, iov, n);
	else if (h->kind == REC_FIN)
		write_fin(t, c, side_of(c, h->dir), h->ts_ns);
}

/* The socket is closed: what the records did not show yet. */
static void conn_finish(struct iw_trace *t, struct iw_trace_conn *c)
{
	if (!atomic_load_explicit(&t->stopped, memory_order_relaxed) && conn_open(t, c)) {
		for (int d = IW_TRACE_TX; d <= IW_TRACE_RX; d++) {
			enum iw_pcapw_dir s = side_of(c, (enum iw_trace_dir)d);
			if (!c->flow.ep[s].fin && flush_held(t, c, s, c->end_ns))
				c->flow.ep[s].nxt += (uint32_t)c->skip[d];
		}
		enum iw_pcapw_dir me = side_of(c, IW_TRACE_TX);
		if (c->abortive) {
			if (!c->flow.both_fin && room(t, SEG_OVERHEAD_MAX))
				wrote(t, iw_pcapw_rst(&c->flow, me, c->end_ns));
		} else {
			/* close() sends our FIN; the peer's only if we read it */
			if (c->fin_seen[IW_TRACE_RX])
				write_fin(t, c, side_of(c, IW_TRACE_RX), c->end_ns);
			write_fin(t, c, me, c->end_ns);
		}
	}
	iw_free(t->alloc, c);
}

/* The oldest ended connection whose records are all written (lock held). */
static struct iw_trace_conn *pop_finished(struct iw_trace *t)
{
	struct iw_trace_conn *c = t->ended;
	if (!c || c->end_pos > t->tail)
		return NULL;
	t->ended = c->ended_next;
	if (!t->ended)
		t->ended_last = &t->ended;
	return c;
}

/* Write the record at the tail, then free its space (lock held, dropped
 * while writing). */
static void drain_one(struct iw_trace *t)
{
	struct rec_hdr h;
	struct iovec iov[2];
	ring_get(t, t->tail, &h, sizeof(h));
	uint64_t pos = t->tail + sizeof(h);
	pthread_mutex_unlock(&t->lock);
	int n = h.len ? ring_iov(t, pos, h.len, iov) : 0;
	do_record(t, &h, iov, n);
	pthread_mutex_lock(&t->lock);
	t->tail += rec_size(h.space);
}

/* A record at the tail that the writer may take (lock held). */
static bool record_ready(const struct iw_trace *t)
{
	if (t->paused || t->head == t->tail)
		return false;
	struct rec_hdr h;
	ring_get(t, t->tail, &h, sizeof(h));
	return !h.pending;
}

static void wait_idle(struct iw_trace *t)
{
	t->waiting = true;
	if (t->dirty) {
		/* Flush when traffic pauses, so the file is current without a
		 * write per record. */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += IDLE_FLUSH_MS * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&t->cond, &t->lock, &dl) == ETIMEDOUT) {
			t->dirty = false;
			pthread_mutex_unlock(&t->lock);
			fflush(t->fp);
			pthread_mutex_lock(&t->lock);
		}
	} else {
		pthread_cond_wait(&t->cond, &t->lock);
	}
	t->waiting = false;
}

static void *writer_main(void *arg)
{
	struct iw_trace *t = arg;
	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct iw_trace_conn *c = t->paused ? NULL : pop_finished(t);
		if (c) {
			pthread_mutex_unlock(&t->lock);
			conn_finish(t, c);
			pthread_mutex_lock(&t->lock);
		} else if (record_ready(t)) {
			drain_one(t);
		} else if (t->stopping && !t->paused && t->head == t->tail) {
			break;
		} else {
			wait_idle(t);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ============================================================ lifetime */

static void free_mem(struct iw_trace *t)
{
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	iw_free(t->alloc, t->ring);
	iw_free(t->alloc, t->fbuf);
	iw_free(t->alloc, t);
}

static int open_file(struct iw_trace *t)
{
	t->fp = fopen(t->path, "wbe");
	if (!t->fp)
		return errno;
	/* Records go out in large writes; small ones wait for the idle flush. */
	t->fbuf = iw_malloc(t->alloc, FILE_BUF_BYTES);
	if (t->fbuf)
		setvbuf(t->fp, t->fbuf, _IOFBF, FILE_BUF_BYTES);
	int rc = iw_pcapw_open(&t->w, t->fp, IW_PCAPW_NSEC, t->max_bytes);
	if (rc == 0 && fflush(t->fp))
		rc = -EIO;
	if (rc) {
		fclose(t->fp);
		t->fp = NULL;
		remove(t->path);
		return -rc;
	}
	return 0;
}

int iw_trace_new(struct iw_trace **out, const struct iw_trace_opts *o)
{
	*out = NULL;
	uint64_t max = o->max_bytes ? o->max_bytes : IW_TRACE_DEFAULT_MAX;
	if (!o->path || max < IW_TRACE_MIN_MAX)
		return EINVAL;
	struct iw_trace *t = iw_calloc(o->alloc, 1, sizeof(*t));
	if (!t)
		return ENOMEM;
	t->alloc = o->alloc;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->max_bytes = max;
	t->paused = o->paused;
	t->cap = o->queue_bytes ? (o->queue_bytes + REC_ALIGN - 1) & ~(size_t)(REC_ALIGN - 1)
				: IW_TRACE_QUEUE_BYTES;
	t->ended_last = &t->ended;
	t->ring = iw_malloc(t->alloc, t->cap);
	if (!t->ring) {
		free_mem(t);
		return ENOMEM;
	}
	int rc = claim_path(t, o->path);
	if (rc) {
		free_mem(t);
		return rc;
	}
	rc = open_file(t);
	t->pid = getpid();
	if (!rc && pthread_create(&t->thread, NULL, writer_main, t))
		rc = EAGAIN;
	if (rc) {
		if (t->fp) {
			fclose(t->fp);
			remove(t->path);
		}
		release_path(t);
		free_mem(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* Append to msg (never past its end: a long text is cut). */
static void __attribute__((format(printf, 3, 4))) add(char *msg, size_t cap, const char *fmt, ...)
{
	size_t n = strlen(msg);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, cap - n, fmt, ap);
	va_end(ap);
}

/* The note and the stderr line of an incomplete trace. */
static void report(struct iw_trace *t)
{
	char msg[IW_PCAPW_NOTE_MAX + 1] = "libiwarp trace incomplete:";
	if (t->w.err == -EFBIG)
		t->capped = true; /* the writer's own cap (our estimate was short) */
	if (t->dropped_records)
		add(msg, sizeof(msg), " %" PRIu64 " octets in %" PRIu64 " pieces dropped (queue full);",
		    t->dropped_bytes, t->dropped_records);
	if (t->capped)
		add(msg, sizeof(msg), " stopped at the size cap of %" PRIu64 " octets;", t->max_bytes);
	else if (t->w.err)
		add(msg, sizeof(msg), " write error (%s);", strerror(-t->w.err));
	if (!t->w.err)
		iw_pcapw_note(&t->w, msg, now_ns());
	fprintf(stderr, "libiwarp: pcap trace %s: %s\n", t->path, msg);
}

/* Connections still open keep no octets back: they end the file as they
 * are. The writer is joined, its state is ours; the lock keeps t->live
 * still (at exit other threads may be ending connections), so nothing
 * here may take it again (room(), wrote()). */
static void flush_live(struct iw_trace *t)
{
	uint64_t ts = now_ns();
	pthread_mutex_lock(&t->lock);
	bool ok = !atomic_load(&t->stopped);
	for (struct iw_trace_conn *c = t->live; c && ok; c = c->next)
		for (int s = IW_PCAPW_A2B; s <= IW_PCAPW_B2A && ok; s++) {
			struct pdu_cut *k = &c->cut[s];
			if (!k->nheld)
				continue;
			if (t->w.written + SEG_OVERHEAD_MAX + PDU_START_MIN +
				    IW_PCAPW_NOTE_RECORD_MAX > t->max_bytes) {
				t->capped = true;
				ok = false;
				break;
			}
			struct iovec v = {k->held, k->nheld};
			k->nheld = 0;
			ok = iw_pcapw_data(&c->flow, (enum iw_pcapw_dir)s, &v, 1, ts) == 0;
		}
	pthread_mutex_unlock(&t->lock);
}

/* Let the writer drain the queue and end, then complete the file (the
 * note of an incomplete trace) and flush it; it stays open. Once only
 * (reg_lock held): by iw_trace_free, or at exit. */
static void finish(struct iw_trace *t)
{
	if (t->finished)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	t->paused = false;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	t->finished = true;
	flush_live(t);
	if (t->dropped_records || t->capped || t->w.err)
		report(t);
	fflush(t->fp);
}

void iw_trace_free(struct iw_trace *t, struct iw_trace_stats *out)
{
	if (!t)
		return;
	pthread_mutex_lock(&reg_lock);
	finish(t);
	pthread_mutex_unlock(&reg_lock);
	/* Connections the owner never ended: no FIN, just the memory. */
	for (struct iw_trace_conn *c = t->live, *n; c; c = n) {
		n = c->next;
		iw_free(t->alloc, c);
	}
	int rc = iw_pcapw_close(&t->w);
	if (fclose(t->fp) && !rc)
		rc = -EIO;
	if (out) {
		memset(out, 0, sizeof(*out));
		out->file_bytes = t->w.written;
		out->records = t->w.records;
		out->dropped_records = t->dropped_records;
		out->dropped_bytes = t->dropped_bytes;
		out->capped = t->capped;
		out->err = rc == -EFBIG ? 0 : -rc;
		snprintf(out->path, sizeof(out->path), "%s", t->path);
	}
	release_path(t);
	free_mem(t);
}
