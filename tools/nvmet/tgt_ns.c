/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Namespace backing stores: RAM, a regular file, or a block device, with
 * pread/pwrite (O_DIRECT on request: a buffer that is not block aligned,
 * such as in-capsule data behind its command, goes through an aligned
 * bounce buffer). Deallocation punches holes in files and zeroes RAM, so
 * deallocated blocks read as zeroes there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ram_map.h"
#include "tgt.h"

#define DNR(sc) ((uint16_t)((sc) | NVME_SC_DNR))
#define BOUNCE_MAX (1u << 20)

/* Per thread: each loop runs one command at a time, and loops run
 * commands at once. Made when first needed; each thread frees its own
 * (tgt_ns_buffers_free). */
static __thread uint8_t *bounce;
static __thread uint8_t *zeroes;  /* a source of zeroes where holes cannot be punched */

static uint8_t *bounce_get(void)
{
	if (!bounce && posix_memalign((void **)&bounce, 4096, BOUNCE_MAX))
		bounce = NULL;
	return bounce;
}

void tgt_ns_buffers_free(void)
{
	free(bounce);
	free(zeroes);
	bounce = zeroes = NULL;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A stable NGUID from the path, so a host sees the same namespace after a
 * restart (FNV-1a, twice with different seeds). */
static void make_nguid(uint8_t out[16], const char *spec)
{
	for (int half = 0; half < 2; half++) {
		uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)half;
		for (const char *p = spec; *p; p++)
			h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
		for (int i = 0; i < 8; i++)
			out[half * 8 + i] = (uint8_t)(h >> (8 * i));
	}
}

static int open_ram(struct tgt_ns *ns, const char *spec, uint64_t *size)
{
	if (parse_size(spec + 4, size) || *size == 0) {
		fprintf(stderr, "iwarp-nvmet: %s: bad size (ram:SIZE with K, M or G)\n", spec);
		return -EINVAL;
	}
	ns->kind = TGT_NS_RAM;
	/* Faulted in now (0.22 zero-fill faults per 4 KiB random write into a
	 * fresh ram:256M cost the loop about 0.3 us of system time per
	 * write), on huge pages (ram_map.c). */
	void *p = *size <= SIZE_MAX ? ram_map((size_t)*size) : NULL;
	if (!p)
		return -ENOMEM;
	ns->ram = p;
	ns->ram_len = *size;
	return 0;
}

static int open_path(struct tgt_ns *ns, const char *spec, uint64_t *size, bool direct)
{
	struct stat st;
	int fd = open(spec, O_RDWR | O_CREAT | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		fprintf(stderr, "iwarp-nvmet: %s: %s\n", spec, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	ns->fd = fd;
	if (S_ISBLK(st.st_mode)) {
		ns->kind = TGT_NS_BLOCK;
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	}
	ns->kind = TGT_NS_FILE;
	if ((uint64_t)st.st_size < *size && ftruncate(fd, (off_t)*size) < 0)
		return -errno;
	if ((uint64_t)st.st_size > *size)
		*size = (uint64_t)st.st_size;
	return 0;
}

int tgt_ns_open(struct tgt_ns *ns, const char *spec, uint64_t size, uint32_t bs, bool direct)
{
	memset(ns, 0, sizeof(*ns));
	ns->fd = -1;
	ns->path = spec;
	ns->direct = direct;
	for (ns->lbads = 9; (1u << ns->lbads) < bs; ns->lbads++)
		;
	int rc = strncmp(spec, "ram:", 4) == 0 ? open_ram(ns, spec, &size)
					       : open_path(ns, spec, &size, direct);
	if (rc) {
		tgt_ns_close(ns);
		return rc;
	}
	ns->blocks = size >> ns->lbads;
	if (ns->blocks == 0) {
		fprintf(stderr, "iwarp-nvmet: %s: smaller than one block\n", spec);
		tgt_ns_close(ns);
		return -EINVAL;
	}
	make_nguid(ns->nguid, spec);
	return 0;
}

void tgt_ns_close(struct tgt_ns *ns)
{
	if (ns->fd >= 0)
		close(ns->fd);
	if (ns->ram)
		munmap(ns->ram, ns->ram_len);
	ns->fd = -1;
	ns->ram = NULL;
}

bool tgt_ns_dealloc_zeroes(const struct tgt_ns *ns)
{
	return ns->kind != TGT_NS_BLOCK;
}

static bool aligned(const struct tgt_ns *ns, const void *buf)
{
	return !ns->direct || ((uintptr_t)buf & 4095) == 0;
}

/* Full transfers only: a short read or write is retried until done or an
 * error says the media failed. */
static int xfer(int fd, void *buf, size_t len, off_t off, bool write)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf = (uint8_t *)buf + n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

uint16_t tgt_ns_read(struct tgt_ns *ns, void *buf, uint64_t slba, uint32_t nlb)
{
	size_t len = (size_t)nlb << ns->lbads;
	off_t off = (off_t)(slba << ns->lbads);
	if (ns->ram) {
		memcpy(buf, ns->ram + off, len);
		return 0;
	}
	bool bounced = !aligned(ns, buf);
	if (bounced && !bounce_get())
		return NVME_SC_INTERNAL;
	if (xfer(ns->fd, bounced ? bounce : buf, len, off, false))
		return NVME_SC_READ_ERROR;
	if (bounced)
		memcpy(buf, bounce, len);
	return 0;
}

uint16_t tgt_ns_write(struct tgt_ns *ns, const void *buf, uint64_t slba, uint32_t nlb, bool fua)
{
	size_t len = (size_t)nlb << ns->lbads;
	off_t off = (off_t)(slba << ns->lbads);
	if (ns->ram) {
		ram_store(ns->ram + off, buf, len);
		return 0;
	}
	const void *src = buf;
	if (!aligned(ns, buf)) {
		if (!bounce_get())
			return NVME_SC_INTERNAL;
		memcpy(bounce, buf, len);
		src = bounce;
	}
	if (xfer(ns->fd, (void *)src, len, off, true))
		return NVME_SC_WRITE_FAULT;
	if (fua && fdatasync(ns->fd))
		return NVME_SC_WRITE_FAULT;
	return 0;
}

uint16_t tgt_ns_flush(struct tgt_ns *ns)
{
	if (ns->ram || fdatasync(ns->fd) == 0)
		return 0;
	return NVME_SC_WRITE_FAULT;
}

/* Zero (or deallocate) a range: RAM is cleared; files get a hole punched
 * (deallocate) or zeroed range, and fall back to writing zeroes. */
uint16_t tgt_ns_zero(struct tgt_ns *ns, uint64_t slba, uint64_t nlb, bool dealloc)
{
	uint64_t off = slba << ns->lbads, len = nlb << ns->lbads;
	if (ns->ram) {
		memset(ns->ram + off, 0, len);
		return 0;
	}
	int mode = dealloc ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE : FALLOC_FL_ZERO_RANGE;
	if (ns->kind == TGT_NS_FILE && fallocate(ns->fd, mode, (off_t)off, (off_t)len) == 0)
		return 0;
	if (ns->kind == TGT_NS_BLOCK && dealloc) {
		uint64_t r[2] = {off, len};
		if (ioctl(ns->fd, BLKDISCARD, r) == 0)
			return 0;
	}
	if (!zeroes && posix_memalign((void **)&zeroes, 4096, BOUNCE_MAX) == 0)
		memset(zeroes, 0, BOUNCE_MAX);
	if (!zeroes)
		return NVME_SC_INTERNAL;
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < BOUNCE_MAX ? (size_t)(len - done) : BOUNCE_MAX;
		if (xfer(ns->fd, zeroes, n, (off_t)(off + done), true))
			return NVME_SC_WRITE_FAULT;
		done += n;
	}
	return 0;
}
