/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One recorded FPDU onto the live stream: its ULPDU (as recorded, with the
 * STag/TO rewrites and any header field faults) is framed anew by
 * iw_fpdu_encode for the live connection's stream offset, CRC and marker
 * settings; then the framing faults (CRC flip, ULPDU_Length, truncation)
 * are applied to the wire octets, and what goes out is decoded and shown.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "fault.h"
#include "replay.h"
#include "rewrite.h"

#define IOV_CAP IW_FPDU_IOV_NEED(1, IW_FPDU_MARKERS_MAX)

static const struct rp_rec_fpdu *recorded(const struct rp_session *s, size_t i)
{
	return &s->rec->f[s->role][i];
}

static size_t count(const struct rp_session *s)
{
	return s->rec->n[s->role];
}

/* The recorded FPDU numbered n, or NULL. */
static const struct rp_rec_fpdu *by_number(const struct rp_session *s, uint64_t n)
{
	for (size_t i = 0; i < count(s); i++)
		if (recorded(s, i)->n == n)
			return recorded(s, i);
	return NULL;
}

static int check_one(const struct rp_session *s, const struct rp_fault *f)
{
	const struct rp_rec_fpdu *r = by_number(s, f->n);
	const char *why;

	if (!r) {
		fprintf(stderr, "iwarp-replay: --fault: there is no FPDU %" PRIu64 " to send (the %s "
			"sent %zu)\n", f->n, s->role == RP_INITIATOR ? "initiator" : "responder",
			count(s));
		return RP_EXIT_USAGE;
	}
	if (f->kind != RP_FAULT_FIELD)
		return 0;
	why = rp_field_check(f->field, r->ulpdu, r->len);
	if (why) {
		fprintf(stderr, "iwarp-replay: --fault field:%" PRIu64 ":%s: %s\n", f->n,
			rp_field_name(f->field), why);
		return RP_EXIT_USAGE;
	}
	return 0;
}

int rp_live_tx_check(const struct rp_session *s)
{
	for (int i = 0; i < s->o->nfaults; i++) {
		int rc = check_one(s, &s->o->faults[i]);

		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------ one FPDU */

static bool has_fault(const struct rp_session *s, enum rp_fault_kind k, uint64_t n)
{
	return rp_fault_find(s->o, k, n) != NULL;
}

static void ulpdu_faults(const struct rp_session *s, uint64_t n, uint8_t *u)
{
	for (int i = 0; i < s->o->nfaults; i++) {
		const struct rp_fault *f = &s->o->faults[i];

		if (f->n == n && f->kind == RP_FAULT_FIELD && rp_field_kind(f->field) == RP_FIELD_ULPDU)
			rp_field_set(f->field, u, f->value);
	}
}

static void put_crc(uint8_t *wire, size_t len, uint32_t crc)
{
	for (int i = 0; i < 4; i++)
		wire[len - 4 + i] = (uint8_t)(crc >> (8 * i));
}

/* Faults on the framing, after encoding. */
static void frame_faults(const struct rp_session *s, uint64_t n, uint8_t *wire, size_t len,
			 uint32_t off)
{
	size_t at = (s->markers_tx && (off & (IW_MPA_MARKER_INTERVAL - 1)) == 0) ? IW_MPA_MARKER_LEN
										 : 0;

	for (int i = 0; i < s->o->nfaults; i++) {
		const struct rp_fault *f = &s->o->faults[i];

		if (f->n != n || f->kind != RP_FAULT_FIELD)
			continue;
		if (rp_field_kind(f->field) == RP_FIELD_MPA_LEN) {
			rp_put_be(wire + at, 2, f->value);
			/* A consistent CRC: the peer is to trip over the length. */
			if (s->crc)
				put_crc(wire, len, iw_crc32c(wire, len - IW_MPA_CRC_LEN));
		}
	}
	for (int i = 0; i < s->o->nfaults; i++) {
		const struct rp_fault *f = &s->o->faults[i];

		if (f->n == n && f->kind == RP_FAULT_FIELD && rp_field_kind(f->field) == RP_FIELD_MPA_CRC)
			put_crc(wire, len, (uint32_t)f->value);
	}
	if (has_fault(s, RP_FAULT_CRC, n))
		wire[len - IW_MPA_CRC_LEN] ^= 0x01; /* bit 0 of the CRC value */
}

static size_t flatten(const struct iw_fpdu_out *out, uint8_t *wire)
{
	size_t n = 0;

	for (int i = 0; i < out->iovcnt; i++) {
		memcpy(wire + n, out->iov[i].iov_base, out->iov[i].iov_len);
		n += out->iov[i].iov_len;
	}
	return n;
}

static size_t sent_len(const struct rp_session *s, uint64_t n, size_t len)
{
	const struct rp_fault *f = rp_fault_find(s->o, RP_FAULT_TRUNCATE, n);

	if (!f)
		return len;
	if (!f->has_arg)
		return len / 2;
	return f->arg < len ? f->arg : len;
}

static void show(struct rp_session *s, const uint8_t *wire, size_t len, uint32_t off, uint64_t n,
		 size_t sent)
{
	static uint8_t plain[RP_FPDU_WIRE_MAX];
	struct rp_origin o;
	struct rp_fpdu f;

	rp_fpdu_describe(&f, wire, len, off, s->crc, s->markers_tx, false, plain);
	f.n = n;
	f.sent_len = sent;
	rp_live_origin(s, &o, "tx");
	rp_emit_fpdu(&o, &f);
}

/* Encode into wire; its length, or 0 if it cannot be sent (reported). */
static size_t encode(struct rp_session *s, const struct rp_rec_fpdu *r, uint8_t *u, uint8_t *wire)
{
	struct iovec iov[IOV_CAP];
	struct iw_fpdu_out out = {.iov = iov, .iov_cap = IOV_CAP};
	size_t hdr = r->hdr_len;
	struct iovec pl;
	struct rp_origin o;
	int rc;

	/* The encoder wants 14..72 header octets; it does not parse them. */
	if (hdr < IW_DDP_TAGGED_HDR_LEN)
		hdr = IW_DDP_TAGGED_HDR_LEN;
	if (hdr > IW_FPDU_HDR_MAX)
		hdr = IW_FPDU_HDR_MAX;
	rc = r->len < IW_DDP_TAGGED_HDR_LEN ? -EINVAL : 0;
	if (hdr > r->len)
		hdr = r->len;
	pl.iov_base = u + hdr;
	pl.iov_len = r->len - hdr;
	if (!rc)
		rc = iw_fpdu_encode(&s->tx, &out, u, hdr, &pl, 1);
	if (rc) {
		rp_live_origin(s, &o, "tx");
		rp_emit_note(&o, "FPDU %" PRIu64 " (ULPDU of %u octets) cannot be framed: %s; skipped",
			     r->n, r->len, strerror(-rc));
		return 0;
	}
	return flatten(&out, wire);
}

int rp_live_tx(struct rp_session *s, size_t i)
{
	static uint8_t u[IW_MPA_ULPDU_MAX + 1], wire[RP_FPDU_WIRE_MAX];
	const struct rp_rec_fpdu *r = recorded(s, i);
	uint32_t off = s->tx.stream_off;
	struct rp_origin o;
	size_t len, sent;

	if (has_fault(s, RP_FAULT_DROP, r->n)) {
		rp_live_origin(s, &o, "tx");
		rp_emit_note(&o, "FPDU %" PRIu64 " not sent (--fault drop)", r->n);
		return 0;
	}
	memcpy(u, r->ulpdu, r->len);
	rp_rewrite_apply(s->o, u, r->len);
	ulpdu_faults(s, r->n, u);
	len = encode(s, r, u, wire);
	if (!len)
		return 0;
	frame_faults(s, r->n, wire, len, off);
	sent = sent_len(s, r->n, len);
	show(s, wire, len, off, r->n, sent);
	if (rp_live_write(s, wire, sent))
		return -1;
	s->sent++;
	return 0;
}
