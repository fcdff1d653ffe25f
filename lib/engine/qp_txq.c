/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The transmit queue of a QP (struct iw_txq in qp.h): FPDUs framed into
 * one batch of iovecs for writev, with the marks that complete WQEs and
 * drop MR references once their octets are written. Below qp.c, qp_term.c
 * and qp_tx.c, which all queue or drop FPDUs through it: it calls none of
 * them, so QP state changes, TERMINATE and segmentation do not call each
 * other in a circle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"
#include "engine/qp.h"
#include "base/alloc.h"
#include "engine/qp_txq.h"
#include "wire/mpa_tx.h"

/* Only the counters need to start at zero: the arrays are large and are
 * written before they are read. */
void iw_txq_reset(struct iw_txq *q)
{
	q->cnt = q->first = q->num_mark = q->first_mark = 0;
	q->hdr_used = q->stage_used = 0;
	q->queued = q->sent = 0;
}

static void txq_free(struct iw_context *ctx, struct iw_txq *q)
{
	if (q)
		iw_free(ctx->alloc, q->stage);
	iw_free(ctx->alloc, q);
}

/* Markers cut a payload every 508 octets: gathered, each cut costs two
 * iovecs (built, CRC'd one call each, walked by the kernel) and a batch
 * holds under two 64 KiB FPDUs. Framed whole into the stage, an FPDU costs
 * one copy and one CRC call, and consecutive ones share an iovec. Without
 * the stage (no memory) they are gathered as before. The stage is swapped
 * for one twice its size only here, with the queue empty: no iovec points
 * into it (IW_TXQ_STAGE_MIN in qp.h). On loopback, writes of 256 KiB where
 * raw TCP wrote 1 MiB put about four times as much of the kernel's TCP
 * work on the writer's CPU, and 1 MiB READs with markers ran at 0.7x raw
 * TCP against 1.0x with 1 MiB writes. */
static void txq_stage_get(struct iw_qp *qp, struct iw_txq *q)
{
	bool grow = q->stage_full && q->stage_cap < IW_TXQ_STAGE_MAX;
	q->stage_full = false;
	if (!qp->ftx.markers || (q->stage && !grow))
		return;
	size_t cap = q->stage ? 2 * q->stage_cap : IW_TXQ_STAGE_MIN;
	uint8_t *s = iw_malloc(qp->context->alloc, cap);
	/* Out of memory: keep the stage there is (or gather without one). */
	if (!s)
		return;
	iw_free(qp->context->alloc, q->stage);
	q->stage = s;
	q->stage_cap = cap;
}

/* The queue is allocated when the QP transmits and let go as soon as it
 * drains: ~37 KB held by every idle connection would be most of what it
 * costs (issue 13). The context keeps one drained queue aside for the next
 * QP that transmits, so a ping-pong does not malloc and free it per message
 * (which showed in profiles); the slot is one atomic pointer, so
 * connections on different loops share no lock through it. */
struct iw_txq *iw_txq_get(struct iw_qp *qp)
{
	if (!qp->txq) {
		qp->txq = atomic_exchange_explicit(&qp->context->txq_spare, NULL,
						   memory_order_acquire);
		if (!qp->txq) {
			qp->txq = iw_malloc(qp->context->alloc, sizeof(*qp->txq));
			if (qp->txq) {
				qp->txq->stage = NULL;
				qp->txq->stage_cap = 0;
				qp->txq->stage_full = false;
			}
		}
		if (qp->txq) {
			iw_txq_reset(qp->txq);
			txq_stage_get(qp, qp->txq);
		}
	}
	return qp->txq;
}

void iw_txq_put(struct iw_qp *qp)
{
	struct iw_txq *q = qp->txq, *none = NULL;
	qp->txq = NULL;
	if (q && !atomic_compare_exchange_strong_explicit(&qp->context->txq_spare, &none, q,
							  memory_order_release,
							  memory_order_relaxed))
		txq_free(qp->context, q);
}

void iw_txq_spare_free(struct iw_context *ctx)
{
	txq_free(ctx, atomic_exchange(&ctx->txq_spare, NULL));
}

bool iw_txq_empty(const struct iw_txq *q)
{
	return !q || q->first == q->cnt;
}

/* Octets an FPDU of ulpdu octets may take on the wire with markers: length,
 * pad, CRC and a marker per 508 octets and one more on either end. */
#define STAGE_NEED(ulpdu) \
	(2 + (ulpdu) + 3 + IW_MPA_CRC_LEN + IW_MPA_MARKER_LEN * (((ulpdu) + 9) / IW_MARKER_GAP + 2))
/* An empty stage must take any FPDU, or a batch could never start. */
_Static_assert(STAGE_NEED(IW_MPA_ULPDU_MAX) <= IW_TXQ_STAGE_MIN, "stage below one FPDU");

/* A larger FPDU of a QP with markers goes to the stage (txq_fpdu_staged). */
static bool staged(const struct iw_qp *qp, size_t ulpdu)
{
	return qp->ftx.markers && qp->txq->stage && ulpdu > IW_TXQ_COPY_MAX;
}

/* Worst case of one FPDU of ulpdu octets with n payload pieces (a small
 * one is copied whole, a staged one is one iovec: see iw_txq_fpdu). */
static void fpdu_need(const struct iw_qp *qp, size_t ulpdu, int n, int *iov, size_t *hdr)
{
	if (staged(qp, ulpdu)) {
		*iov = 1;
		*hdr = 0;
		return;
	}
	int markers = qp->ftx.markers ? (int)((ulpdu + 7) / IW_MARKER_GAP) + 2 : 0;
	*iov = n + 3 + 2 * markers;
	*hdr = 2 + IW_FPDU_HDR_MAX + 7 + (size_t)markers * IW_MPA_MARKER_LEN;
	if (ulpdu <= IW_TXQ_COPY_MAX)
		*hdr += ulpdu;
}

bool iw_txq_room(const struct iw_qp *qp, size_t ulpdu, int n, bool reserve)
{
	struct iw_txq *q = qp->txq;
	int need_iov;
	size_t need_hdr;
	fpdu_need(qp, ulpdu, n, &need_iov, &need_hdr);
	if (reserve) {
		need_iov += IW_TXQ_RESERVE_IOV;
		need_hdr += IW_TXQ_RESERVE_HDR;
	}
	if (staged(qp, ulpdu) && q->stage_used + STAGE_NEED(ulpdu) > q->stage_cap) {
		q->stage_full = true;
		return false;
	}
	return q->cnt + need_iov <= IW_TXQ_IOV && q->hdr_used + need_hdr <= IW_TXQ_HDR &&
	       q->num_mark < IW_TXQ_IOV;
}

/* n octets were just written at dst (in the header area or the stage):
 * queue them, merged with the previous piece when that one ends where
 * they start. */
static void txq_take(struct iw_txq *q, uint8_t *dst, size_t n)
{
	struct iovec *last = q->cnt > q->first ? &q->iov[q->cnt - 1] : NULL;
	if (last && (uint8_t *)last->iov_base + last->iov_len == dst) {
		last->iov_len += n;
		return;
	}
	q->iov[q->cnt].iov_base = dst;
	q->iov[q->cnt].iov_len = n;
	q->cnt++;
}

static void txq_take_hdr(struct iw_txq *q, size_t n)
{
	uint8_t *dst = q->hdr + q->hdr_used;
	q->hdr_used += n;
	txq_take(q, dst, n);
}

/* Append one iovec; octets inside the encoder's scratch (or all of them,
 * copy) are copied into the queue's header area and merged with the
 * previous copied piece. */
static void txq_append(struct iw_txq *q, const struct iovec *v, const void *scratch,
		       size_t scratch_len, bool copy)
{
	const uint8_t *b = v->iov_base;
	const uint8_t *s = scratch;
	if (v->iov_len == 0)
		return;
	if (copy || (b >= s && b < s + scratch_len)) {
		memcpy(q->hdr + q->hdr_used, b, v->iov_len);
		txq_take_hdr(q, v->iov_len);
		return;
	}
	q->iov[q->cnt].iov_base = v->iov_base;
	q->iov[q->cnt].iov_len = v->iov_len;
	q->cnt++;
}

/* IW_FAULT_TX_CRC: invert the CRC field, so that it cannot match what the
 * receiver computes over the same octets. The field is the 4 octets after
 * the pad in the encoder's tail; the iovecs point there (also when a
 * marker splits the field) and txq_append copies them from there next. */
static void corrupt_crc(struct iw_fpdu_out *out)
{
	unsigned pad = iw_mpa_pad((uint32_t)(out->head[0] << 8 | out->head[1]));
	for (unsigned i = 0; i < IW_MPA_CRC_LEN; i++)
		out->tail[pad + i] ^= 0xFF;
}

/* IW_FAULT_TX_CRC in an FPDU framed flat, of n octets ending at stream
 * offset end: the field is its last 4 octets that are no marker's. */
static void corrupt_flat_crc(const struct iw_qp *qp, uint8_t *fpdu, size_t n, uint32_t end)
{
	unsigned left = IW_MPA_CRC_LEN;
	for (size_t i = n; i-- > 0 && left;) {
		uint32_t off = end - (uint32_t)(n - i);
		if (qp->ftx.markers && (off & IW_MARKER_MASK) < IW_MPA_MARKER_LEN)
			continue;
		fpdu[i] ^= 0xFF;
		left--;
	}
}

/* Frame one FPDU whole at dst (cap octets of room): n octets, or 0 when
 * it does not fit there (iw_fpdu_encode_flat). */
static size_t txq_flat_at(struct iw_qp *qp, uint8_t *dst, size_t cap, const uint8_t *hdr,
			  size_t hdr_len, const struct iovec *pay, int pay_cnt)
{
	size_t n = iw_fpdu_encode_flat(&qp->ftx, dst, cap, hdr, hdr_len, pay, pay_cnt);
	if (n && qp->fault_crc_nth && --qp->fault_crc_nth == 0)
		corrupt_flat_crc(qp, dst, n, qp->ftx.stream_off);
	qp->txq->queued += n;
	return n;
}

/* The largest FPDU framed flat into the header area now. A lone one (the
 * queue holds nothing unsent: every message of a ping-pong) of up to
 * IW_TXQ_LONE_MAX octets too: its copy (about 60 ns for 4 KiB, and the CRC
 * then runs over octets in cache) buys a send(2) of one piece instead of a
 * sendmsg(2) of header, payload and trailer, about 0.1 us less per message
 * at 4 KiB on the machine of the README's tables. Only the first FPDU of a
 * batch can be lone, so a stream still gathers its payloads (copying every
 * 4 KiB FPDU filled the header area after three and cut 4 KiB bandwidth to
 * 0.4x). The TERMINATE's reserve stays free. Markers have their stage. */
static size_t flat_max(const struct iw_qp *qp)
{
	const struct iw_txq *q = qp->txq;
	size_t room = IW_TXQ_HDR - q->hdr_used;
	if (iw_txq_empty(q) && !qp->ftx.markers && room > IW_TXQ_RESERVE_HDR)
		room -= IW_TXQ_RESERVE_HDR;
	else if (room > IW_TXQ_COPY_MAX)
		return IW_TXQ_COPY_MAX;
	return room < IW_TXQ_LONE_MAX ? room : IW_TXQ_LONE_MAX;
}

/* Could the FPDU fit in max octets at all? Not if its header and first
 * payload piece do not. A larger one (a 64 KiB Write, one piece) went
 * through iw_fpdu_encode_flat's checks only to be declined, on every
 * FPDU. */
static bool flat_may_fit(size_t max, size_t hdr_len, const struct iovec *pay, int pay_cnt)
{
	return hdr_len + (pay_cnt > 0 ? pay[0].iov_len : 0) <= max;
}

/* A small FPDU is framed straight into the header area, where the copy in
 * iw_txq_fpdu would put it: no iovec layout, one CRC call. false: frame it
 * another way. */
static bool txq_fpdu_flat(struct iw_qp *qp, const uint8_t *hdr, size_t hdr_len,
			  const struct iovec *pay, int pay_cnt)
{
	size_t max = flat_max(qp);
	if (!flat_may_fit(max, hdr_len, pay, pay_cnt))
		return false;
	struct iw_txq *q = qp->txq;
	size_t n = txq_flat_at(qp, q->hdr + q->hdr_used, max, hdr, hdr_len, pay, pay_cnt);
	if (n)
		txq_take_hdr(q, n);
	return n > 0;
}

/* Markers on: a larger FPDU is framed whole into the stage (txq_stage_get). */
static bool txq_fpdu_staged(struct iw_qp *qp, const uint8_t *hdr, size_t hdr_len,
			    const struct iovec *pay, int pay_cnt)
{
	struct iw_txq *q = qp->txq;
	if (!q->stage || !qp->ftx.markers)
		return false;
	uint8_t *dst = q->stage + q->stage_used;
	size_t n = txq_flat_at(qp, dst, q->stage_cap - q->stage_used, hdr, hdr_len, pay, pay_cnt);
	q->stage_used += n;
	if (n)
		txq_take(q, dst, n);
	return n > 0;
}

/* Frame one FPDU into the transmit queue (room already checked). */
int iw_txq_fpdu(struct iw_qp *qp, const uint8_t *hdr, size_t hdr_len,
		    const struct iovec *pay, int pay_cnt)
{
	if (txq_fpdu_flat(qp, hdr, hdr_len, pay, pay_cnt) ||
	    txq_fpdu_staged(qp, hdr, hdr_len, pay, pay_cnt))
		return 0;
	struct iw_txq *q = qp->txq;
	struct iw_fpdu_out out;
	struct iovec iov[IW_FPDU_IOV_NEED(IW_MAX_SGE, IW_FPDU_MARKERS_MAX)];
	out.iov = iov;
	out.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
	int rc = iw_fpdu_encode(&qp->ftx, &out, hdr, hdr_len, pay, pay_cnt);
	if (rc)
		return rc;
	/* Unarmed, fault injection costs this one test per FPDU. */
	if (qp->fault_crc_nth && --qp->fault_crc_nth == 0)
		corrupt_crc(&out);
	/* A small FPDU goes out as one copied piece (merged with the small
	 * ones around it): fewer iovecs for the kernel to walk per message
	 * than header, payload and trailer apart. */
	bool copy = out.wire_len <= IW_TXQ_COPY_MAX;
	for (int i = 0; i < out.iovcnt; i++)
		txq_append(q, &iov[i], &out, sizeof(out), copy);
	q->queued += out.wire_len;
	return 0;
}

void iw_txq_mark(struct iw_qp *qp, uint32_t sq_idx, bool sq, struct iw_mr_int *put)
{
	struct iw_txq *q = qp->txq;
	struct iw_txmark *m = &q->mark[q->num_mark++];
	m->end = q->queued;
	m->sq_idx = sq_idx;
	m->sq = sq;
	m->put = put;
}

void iw_qp_txq_discard_locked(struct iw_qp *qp)
{
	struct iw_txq *q = qp->txq;
	if (!q)
		return;
	while (q->first_mark < q->num_mark)
		iw_mem_put(q->mark[q->first_mark++].put);
	iw_txq_put(qp);
	/* A message cut short is not resumed: its WQE flushes. */
	qp->tx_cur = IW_TX_NONE;
}


int iw_qp_tx_term_locked(struct iw_qp *qp, const uint8_t *h, size_t len)
{
	if (!iw_txq_get(qp))
		return -ENOMEM;
	if (!iw_txq_room(qp, len, 0, false))
		return -ENOSPC;
	return iw_txq_fpdu(qp, h, len, NULL, 0);
}
