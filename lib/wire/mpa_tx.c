/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FPDU encoder (RFC 5044 section 4 and 5): ULPDU_Length, the DDP/RDMAP
 * header, the caller's payload by reference, pad, CRC32c, and markers every
 * 512 stream octets. The output is a list of iovecs so the payload goes from
 * registered memory to the socket without a copy; only the few octets of
 * framing live in struct iw_fpdu_out.
 */
#include <errno.h>
#include <string.h>

#include "iwarp/wire.h"
#include "wire/crc32c.h"
#include "wire/cursor.h"
#include "wire/mpa_tx.h"
#include "base/visibility.h"

/* Framing octets that are not ULPDU: the 2-octet length and the CRC. */
#define FRAME_OVERHEAD (2 + IW_MPA_CRC_LEN)

IW_EXPORT uint32_t iw_mpa_mulpdu(uint32_t emss, bool markers)
{
	/* 64-bit so that emss near 2^32 cannot wrap the overhead sum. */
	uint64_t over = FRAME_OVERHEAD + (emss & 3);

	if (markers)
		over += IW_MPA_MARKER_LEN *
			(((uint64_t)emss + IW_MPA_MARKER_INTERVAL - 1) / IW_MPA_MARKER_INTERVAL);
	/* Every DDP segment has at least a tagged header; less is no FPDU. */
	if ((uint64_t)emss < over + IW_DDP_TAGGED_HDR_LEN)
		return 0;
	if (emss - over > IW_MPA_ULPDU_MAX)
		return IW_MPA_ULPDU_MAX;
	return (uint32_t)(emss - over);
}

/* Markers inside an FPDU of plain_len non-marker octets that starts at
 * stream offset off. A marker that would fall exactly after the last octet
 * belongs to the next FPDU (it is that FPDU's leading marker). */
static uint32_t count_markers(uint32_t off, uint64_t plain_len)
{
	uint32_t first = iw_mpa_to_marker(off);

	if (first >= plain_len)
		return 0;
	return (uint32_t)(1 + (plain_len - 1 - first) / IW_MARKER_GAP);
}

static uint64_t plain_len(uint32_t ulpdu_len)
{
	return (uint64_t)FRAME_OVERHEAD + ulpdu_len + iw_mpa_pad(ulpdu_len);
}

IW_EXPORT size_t iw_fpdu_wire_len(uint32_t stream_off, uint32_t ulpdu_len, bool markers)
{
	uint64_t len = plain_len(ulpdu_len);

	if (markers)
		len += (uint64_t)IW_MPA_MARKER_LEN * count_markers(stream_off, len);
	return (size_t)len;
}

IW_EXPORT void iw_fpdu_tx_init(struct iw_fpdu_tx *tx, bool crc, bool markers, uint32_t stream_off)
{
	tx->crc = crc;
	tx->markers = markers;
	tx->stream_off = stream_off;
}

/* The layout walk: appends wire-ordered pieces to out->iov, splitting them
 * where a marker is due. */
struct layout {
	struct iw_fpdu_out *out;
	bool markers;
	uint32_t to_marker; /* octets until the next marker (markers on) */
	size_t pos;         /* wire octets laid out so far (FPDU offset) */
	int num_markers;
};

static int add_iov(struct layout *l, const void *base, size_t len)
{
	struct iw_fpdu_out *o = l->out;

	/* Pieces adjacent in memory (pad and CRC, say) share one entry. */
	if (o->iovcnt > 0) {
		struct iovec *prev = &o->iov[o->iovcnt - 1];

		if ((const uint8_t *)prev->iov_base + prev->iov_len == (const uint8_t *)base) {
			prev->iov_len += len;
			return 0;
		}
	}
	if (o->iovcnt >= o->iov_cap)
		return -ENOSPC;
	o->iov[o->iovcnt].iov_base = (void *)(uintptr_t)base;
	o->iov[o->iovcnt].iov_len = len;
	o->iovcnt++;
	return 0;
}

/* Marker at the current position: reserved 0, FPDUPTR = its FPDU offset.
 * The caller has checked that every FPDUPTR fits 16 bits. */
static int put_marker(struct layout *l)
{
	uint8_t *m = l->out->markers[l->num_markers++];

	m[0] = 0;
	m[1] = 0;
	iw_put_be16(m + 2, (uint16_t)l->pos);
	l->pos += IW_MPA_MARKER_LEN;
	l->to_marker = IW_MARKER_GAP;
	return add_iov(l, m, IW_MPA_MARKER_LEN);
}

static bool marker_due(const struct layout *l)
{
	return l->markers && l->to_marker == 0;
}

/* Lay out len octets at p, inserting a marker before any octet that falls
 * on a marker position. A marker due after the last octet is left to
 * whatever comes next. */
static int lay(struct layout *l, const uint8_t *p, size_t len)
{
	while (len) {
		size_t n = len;
		int rc;

		if (marker_due(l)) {
			rc = put_marker(l);
			if (rc)
				return rc;
		}
		if (l->markers && n > l->to_marker)
			n = l->to_marker;
		rc = add_iov(l, p, n);
		if (rc)
			return rc;
		p += n;
		len -= n;
		l->pos += n;
		if (l->markers)
			l->to_marker -= (uint32_t)n;
	}
	return 0;
}

/* CRC over the first upto wire octets of the laid-out iovecs. */
static uint32_t crc_prefix(const struct iovec *iov, int iovcnt, size_t upto)
{
	uint32_t st = IW_CRC32C_INIT;

	for (int i = 0; i < iovcnt && upto; i++) {
		size_t n = iov[i].iov_len < upto ? iov[i].iov_len : upto;

		st = iw_crc32c_update(st, iov[i].iov_base, n);
		upto -= n;
	}
	return iw_crc32c_final(st);
}

/* Sum of the payload pieces, or -EMSGSIZE once the ULPDU cannot fit. */
static int payload_total(const struct iovec *payload, int payload_cnt, size_t hdr_len,
			 uint32_t *ulpdu_len)
{
	size_t total = hdr_len;

	for (int i = 0; i < payload_cnt; i++) {
		if (payload[i].iov_len > IW_MPA_ULPDU_MAX)
			return -EMSGSIZE;
		total += payload[i].iov_len;
		if (total > IW_MPA_ULPDU_MAX)
			return -EMSGSIZE;
	}
	*ulpdu_len = (uint32_t)total;
	return 0;
}

/* The last marker in the FPDU must still be able to point back at its
 * start with a 16-bit FPDUPTR. */
static bool markers_fit(uint32_t off, uint32_t ulpdu_len)
{
	uint32_t n = count_markers(off, plain_len(ulpdu_len));
	uint64_t last;

	if (n == 0)
		return true;
	last = iw_mpa_to_marker(off) + (uint64_t)(n - 1) * IW_MPA_MARKER_INTERVAL;
	return n <= IW_FPDU_MARKERS_MAX && last <= IW_FPDUPTR_MAX;
}

static int check_args(const struct iw_fpdu_tx *tx, const struct iw_fpdu_out *out,
		      const uint8_t *hdr, size_t hdr_len, const struct iovec *payload,
		      int payload_cnt)
{
	if (!tx || !out || !hdr || payload_cnt < 0 || (payload_cnt > 0 && !payload))
		return -EINVAL;
	if (hdr_len < IW_DDP_TAGGED_HDR_LEN || hdr_len > IW_FPDU_HDR_MAX)
		return -EINVAL;
	if (out->iov_cap < 0 || (out->iov_cap > 0 && !out->iov))
		return -EINVAL;
	/* Octets 1..3 of a marker: no FPDU can start inside one. */
	if (tx->markers && (tx->stream_off & IW_MARKER_MASK) != 0 &&
	    (tx->stream_off & IW_MARKER_MASK) < IW_MPA_MARKER_LEN)
		return -EINVAL;
	return 0;
}

static int lay_payload(struct layout *l, const struct iovec *payload, int payload_cnt)
{
	for (int i = 0; i < payload_cnt; i++) {
		int rc = lay(l, payload[i].iov_base, payload[i].iov_len);

		if (rc)
			return rc;
	}
	return 0;
}

/* Pad, then the CRC field. A marker due between them precedes the field and
 * is covered by the CRC; one inside the field is not. *crc_at gets the wire
 * offset of the CRC field. */
static int lay_tail(struct layout *l, unsigned pad, size_t *crc_at)
{
	uint8_t *tail = l->out->tail;
	int rc = lay(l, tail, pad);

	if (rc)
		return rc;
	if (marker_due(l)) {
		rc = put_marker(l);
		if (rc)
			return rc;
	}
	*crc_at = l->pos;
	return lay(l, tail + pad, IW_MPA_CRC_LEN);
}

IW_EXPORT int iw_fpdu_encode(struct iw_fpdu_tx *tx, struct iw_fpdu_out *out, const uint8_t *hdr,
			     size_t hdr_len, const struct iovec *payload, int payload_cnt)
{
	struct layout l;
	uint32_t ulpdu_len;
	unsigned pad;
	size_t crc_at = 0;
	int rc = check_args(tx, out, hdr, hdr_len, payload, payload_cnt);

	if (rc)
		return rc;
	rc = payload_total(payload, payload_cnt, hdr_len, &ulpdu_len);
	if (rc)
		return rc;
	if (tx->markers && !markers_fit(tx->stream_off, ulpdu_len))
		return -EMSGSIZE;

	pad = iw_mpa_pad(ulpdu_len);
	iw_put_be16(out->head, (uint16_t)ulpdu_len);
	/* memmove: a caller may have built the header in place at head + 2. */
	memmove(out->head + 2, hdr, hdr_len);
	memset(out->tail, 0, sizeof(out->tail));

	out->iovcnt = 0;
	l.out = out;
	l.markers = tx->markers;
	l.to_marker = iw_mpa_to_marker(tx->stream_off);
	l.pos = 0;
	l.num_markers = 0;
	rc = lay(&l, out->head, 2 + hdr_len);
	if (!rc)
		rc = lay_payload(&l, payload, payload_cnt);
	if (!rc)
		rc = lay_tail(&l, pad, &crc_at);
	if (rc)
		return rc; /* -ENOSPC; tx untouched */

	/* With CRC off the field stays zero (RFC 5044: send 0, ignore). */
	out->crc = tx->crc ? crc_prefix(out->iov, out->iovcnt, crc_at) : 0;
	iw_crc32c_put_wire(out->tail + pad, out->crc);
	out->wire_len = l.pos;
	tx->stream_off += (uint32_t)l.pos;
	return 0;
}

/* The flat writer: octets appended at dst, a marker written in place
 * wherever one is due (the layout walk's rule, with copies instead of
 * iovecs: O(1) per marker instead of two iovecs). */
struct flat {
	uint8_t *dst;
	size_t pos;         /* wire octets written (FPDU offset) */
	bool markers;
	uint32_t to_marker; /* octets until the next marker (markers on) */
};

static void flat_marker(struct flat *f)
{
	uint8_t *m = f->dst + f->pos;

	m[0] = 0;
	m[1] = 0;
	iw_put_be16(m + 2, (uint16_t)f->pos);
	f->pos += IW_MPA_MARKER_LEN;
	f->to_marker = IW_MARKER_GAP;
}

static void flat_put(struct flat *f, const uint8_t *p, size_t len)
{
	while (len) {
		size_t n = len;

		if (f->markers) {
			if (f->to_marker == 0)
				flat_marker(f);
			if (n > f->to_marker)
				n = f->to_marker;
			f->to_marker -= (uint32_t)n;
		}
		memcpy(f->dst + f->pos, p, n);
		f->pos += n;
		p += n;
		len -= n;
	}
}

static size_t flat_wire_len(const struct iw_fpdu_tx *tx, uint32_t ulpdu_len)
{
	if (tx->markers && !markers_fit(tx->stream_off, ulpdu_len))
		return 0;
	return iw_fpdu_wire_len(tx->stream_off, ulpdu_len, tx->markers);
}

/* Without markers an FPDU is its parts end to end: one copy each, where
 * flat_put, which watches for markers, cost five calls and their loops
 * per FPDU of a ping-pong. */
static void flat_plain(const struct iw_fpdu_tx *tx, uint8_t *dst, const uint8_t *hdr,
			 size_t hdr_len, const struct iovec *payload, int payload_cnt,
			 uint32_t ulpdu_len)
{
	size_t pos = 2 + hdr_len, pad = iw_mpa_pad(ulpdu_len);
	iw_put_be16(dst, (uint16_t)ulpdu_len);
	memcpy(dst + 2, hdr, hdr_len);
	for (int i = 0; i < payload_cnt; i++) {
		if (payload[i].iov_len) /* a NULL base may come with length 0 */
			memcpy(dst + pos, payload[i].iov_base, payload[i].iov_len);
		pos += payload[i].iov_len;
	}
	memset(dst + pos, 0, pad);
	pos += pad;
	uint32_t crc = tx->crc ? iw_crc32c_final(iw_crc32c_update(IW_CRC32C_INIT, dst, pos)) : 0;
	iw_crc32c_put_wire(dst + pos, crc);
}

/* The contiguous fast path (mpa_tx.h): the same octets as iw_fpdu_encode
 * gathers, written in place, with one CRC call over them (markers before
 * the CRC field included, as the RFC has them covered). */
size_t iw_fpdu_encode_flat(struct iw_fpdu_tx *tx, uint8_t *dst, size_t cap, const uint8_t *hdr,
			   size_t hdr_len, const struct iovec *payload, int payload_cnt)
{
	static const uint8_t zero[4];
	uint32_t ulpdu_len;
	/* Static: on the stack the zeroed struct (head, tail and marker
	 * arrays) cost more instructions than the rest of the call's checks. */
	static const struct iw_fpdu_out none = {.iov_cap = 0};
	if (!dst || check_args(tx, &none, hdr, hdr_len, payload, payload_cnt) ||
	    payload_total(payload, payload_cnt, hdr_len, &ulpdu_len))
		return 0;
	size_t wire = flat_wire_len(tx, ulpdu_len);
	if (!wire || wire > cap)
		return 0;
	if (!tx->markers) {
		flat_plain(tx, dst, hdr, hdr_len, payload, payload_cnt, ulpdu_len);
		tx->stream_off += (uint32_t)wire;
		return wire;
	}
	uint8_t len[2];
	iw_put_be16(len, (uint16_t)ulpdu_len);
	struct flat f = {.dst = dst, .markers = tx->markers,
			 .to_marker = iw_mpa_to_marker(tx->stream_off)};
	flat_put(&f, len, 2);
	flat_put(&f, hdr, hdr_len);
	for (int i = 0; i < payload_cnt; i++)
		flat_put(&f, payload[i].iov_base, payload[i].iov_len);
	flat_put(&f, zero, iw_mpa_pad(ulpdu_len));
	/* A marker due right after the pad precedes the CRC field and is
	 * covered by it. */
	if (f.markers && f.to_marker == 0)
		flat_marker(&f);
	uint32_t crc = 0;
	if (tx->crc)
		crc = iw_crc32c_final(iw_crc32c_update(IW_CRC32C_INIT, dst, f.pos));
	uint8_t field[IW_MPA_CRC_LEN];
	iw_crc32c_put_wire(field, crc);
	flat_put(&f, field, sizeof(field));
	tx->stream_off += (uint32_t)wire;
	return wire;
}
