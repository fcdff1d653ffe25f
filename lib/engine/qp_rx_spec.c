/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Read-ahead prediction (qp_link.h, iw_qp_status.spec): while a segment's
 * payload goes straight to its destination and more segments of the same
 * message follow (L clear), a conformant peer's next segment continues
 * that message where this one ends, most likely as long as this one (peers
 * cut at their MULPDU). The connection may then read the trailer, the next
 * header and the predicted payload with the same readv, and the engine
 * checks every header as always: a wrong guess only costs a copy.
 *
 * What bounds a guess (a wrong one has the kernel write stream octets
 * there): only memory the peer may write anyway, and only while the
 * current segment holds it, so that no byte lands after an invalidation
 * completed or a receive was given back:
 *  - Read Response: the outstanding Read's sink and its region
 *    (in.dst_room), while the segment's placement reference is held. The
 *    message ends exactly at the sink's end, so even its last, shorter
 *    segment is predicted right.
 *  - Send: the receive being filled, inside one SGE span at a time (it
 *    stays the QP's while rx_direct_busy). A wrong guess can overwrite
 *    octets past the message's end in that buffer (which byte_len leaves
 *    undefined), never another buffer.
 *  - RDMA Write: never. Its message length is unknown, so the last
 *    segment's guess would run past the Write's end into the rest of the
 *    region: memory the peer may write, but which a conformant peer did
 *    not, and which the application may be using (one MR over many I/O
 *    buffers: a completed neighbour would be clobbered).
 * Markers cut payloads into short spans: no prediction with them.
 */
#include "engine/qp.h"
#include "engine/wr.h"
#include "wire/opcode.h"

/* MPA's ULPDU_Length field before each header. */
#define MPA_LEN_FIELD 2

/* Octets between the end of a payload of ulpdu_len's FPDU and the first
 * payload octet of the next segment with the same header length. The CRC
 * field is on the wire whether or not CRC was negotiated (RFC 5044: zero
 * then, as mpa_tx.c sends it); counting it only with CRC on made every
 * guess 4 octets short without CRC, so none was ever taken. */
static uint32_t gap_after(const struct iw_qp *qp, uint32_t ulpdu_len)
{
	return iw_mpa_pad(ulpdu_len) + IW_MPA_CRC_LEN + MPA_LEN_FIELD + qp->frx.seg.raw_hdr_len;
}

/* May the segment being received be followed by predicted ones? Its
 * payload must be offered whole (the read then reaches its trailer). */
static bool predictable(const struct iw_qp *qp, size_t direct)
{
	const struct iw_fpdu_rx *rx = &qp->frx;
	if (!direct || rx->markers || qp->in.last || qp->in.skip || qp->in.held)
		return false;
	return direct == (size_t)(rx->seg.payload_len - rx->payload_done);
}

/* Read Response: contiguous pieces in the sink after this segment. */
static unsigned spec_read_resp(struct iw_qp *qp, struct iw_qp_rx_spec *sp, unsigned max)
{
	const struct iw_ddp_seg *s = &qp->frx.seg;
	uint32_t seg = s->payload_len;
	if (qp->in.dst_room <= seg)
		return 0;
	uint64_t left = qp->in.dst_room - seg;
	uint8_t *dst = qp->in.dst + seg;
	uint32_t ulpdu = s->ulpdu_len;
	unsigned k = 0;
	while (k < max && left) {
		uint32_t len = left < seg ? (uint32_t)left : seg;
		sp[k] = (struct iw_qp_rx_spec){.gap = gap_after(qp, ulpdu), .len = len, .dst = dst};
		ulpdu = s->raw_hdr_len + len;
		dst += len;
		left -= len;
		k++;
	}
	return k;
}

/* Send: pieces at the following message offsets, each inside one SGE of
 * the receive; a piece the SGE would cut ends the prediction, and so does
 * one below the end of the octets read before it (SGEs may overlap: the
 * kernel writing a later piece over an earlier one before the engine has
 * checked that one would garble it). */
static unsigned spec_send(struct iw_qp *qp, const uint8_t *end, struct iw_qp_rx_spec *sp,
			  unsigned max)
{
	const struct iw_ddp_seg *s = &qp->frx.seg;
	uint32_t seg = s->payload_len;
	uint64_t off = (uint64_t)qp->in.mo + seg;
	uint32_t ulpdu = s->ulpdu_len;
	unsigned k = 0;
	while (k < max) {
		uint8_t *dst = NULL;
		uint64_t span = iw_rwqe_span(qp->in.rwqe, off, &dst);
		if (span < seg || dst < end)
			break;
		sp[k++] = (struct iw_qp_rx_spec){.gap = gap_after(qp, ulpdu), .len = seg, .dst = dst,
						 .hold = (uint8_t)(s->raw_hdr_len - IW_DDP_TAGGED_HDR_LEN)};
		off += seg;
		end = dst + seg;
	}
	return k;
}

unsigned iw_qp_rx_spec_locked(struct iw_qp *qp, size_t direct, const uint8_t *dst,
			      struct iw_qp_rx_spec *sp)
{
	if (!predictable(qp, direct))
		return 0;
	if (qp->in.op == IW_OP_READ_RESP && qp->in.dst && qp->in.mr)
		return spec_read_resp(qp, sp, IW_QP_RX_SPEC_MAX);
	if (!qp->in.dst && qp->in.have_rwqe && iw_opcode_has(qp->in.op, IW_OPF_SEND))
		return spec_send(qp, dst + direct, sp, IW_QP_RX_SPEC_MAX);
	return 0;
}
