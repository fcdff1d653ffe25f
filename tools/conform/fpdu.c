/* SPDX-License-Identifier: BSD-2-Clause */
/* FPDUs out (framed by the library's encoder) and whole segments in. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "../fpdu_seg.h"

size_t cf_hdr_untagged(uint8_t *out, unsigned op, uint32_t qn, uint32_t msn, uint32_t mo, bool last)
{
	struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(false, last), .rdmap_ctrl = iw_rdmap_ctrl(op),
			       .qn = qn, .msn = msn, .mo = mo};

	return (size_t)iw_ddp_hdr_build(out, IW_FPDU_HDR_MAX, &h);
}

size_t cf_hdr_tagged(uint8_t *out, unsigned op, uint32_t stag, uint64_t to, bool last)
{
	struct iw_ddp_hdr h = {.ctrl = iw_ddp_ctrl(true, last), .rdmap_ctrl = iw_rdmap_ctrl(op),
			       .stag = stag, .to = to};

	return (size_t)iw_ddp_hdr_build(out, IW_FPDU_HDR_MAX, &h);
}

size_t cf_fpdu_frame(struct cf_conn *k, uint8_t *out, size_t cap, const uint8_t *hdr, size_t hlen,
		     const uint8_t *pl, size_t n, bool corrupt_crc)
{
	static struct iw_fpdu_out fo;
	struct iovec iov[IW_FPDU_IOV_NEED(1, IW_FPDU_MARKERS_MAX)];
	struct iovec in = {(void *)pl, n};
	size_t off = 0;

	fo.iov = iov;
	fo.iov_cap = (int)(sizeof(iov) / sizeof(iov[0]));
	if (iw_fpdu_encode(&k->tx, &fo, hdr, hlen, &in, n ? 1 : 0) || fo.wire_len > cap)
		return 0;
	for (int i = 0; i < fo.iovcnt; i++) {
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	if (corrupt_crc)
		out[off - 1] ^= 0x5A;
	return off;
}

int cf_fpdu_send(struct cf_conn *k, const uint8_t *hdr, size_t hlen, const uint8_t *pl, size_t n,
		 size_t seg, bool corrupt_crc)
{
	size_t cap = n + 4096, len;
	uint8_t *buf = malloc(cap);
	int rc = -1;

	if (!buf)
		return -1;
	len = cf_fpdu_frame(k, buf, cap, hdr, hlen, pl, n, corrupt_crc);
	if (len)
		rc = cf_send(k, buf, len, seg);
	free(buf);
	return rc;
}

/* Feed k->in to the decoder until a segment ends; 1 when it did. */
static int decode(struct cf_conn *k, struct cf_seg *g)
{
	const struct iw_ddp_seg *seg;
	size_t used = 0;
	int rc = fpdu_seg_next(&k->rx, k->in, k->in_len, &used, &seg, g->pl, g->pl ? g->pl_cap : 0,
			       &g->pl_len);

	if (seg)
		g->s = *seg;
	memmove(k->in, k->in + used, k->in_len - used);
	k->in_len -= used;
	return rc;
}

static void log_seg(struct cf_conn *k, const struct cf_seg *g)
{
	cf_log_add(&k->c->r->log, "rx FPDU %s, ULPDU %u octets, payload %zu%s",
		   iw_rdmap_opcode_str(iw_ddp_opcode(&g->s.ddp)), g->s.ulpdu_len, g->pl_len,
		   iw_ddp_last(&g->s.ddp) ? ", last" : "");
	cf_log_hex(&k->c->r->log, "   header", g->s.raw_hdr, g->s.raw_hdr_len);
}

int cf_seg_recv(struct cf_conn *k, struct cf_seg *g, unsigned ms)
{
	uint64_t deadline = cf_now_ns() + (uint64_t)ms * 1000000u;

	for (;;) {
		int rc = decode(k, g);

		if (rc == 1) {
			log_seg(k, g);
			if (iw_ddp_opcode(&g->s.ddp) == IW_OP_TERMINATE)
				k->term_seen = g->s.rdmap.u.term.term;
			return CF_IO_OK;
		}
		if (rc < 0) {
			cf_log_add(&k->c->r->log, "rx stream error: %s",
				   iw_wire_err_str(k->rx.err));
			return CF_IO_ERR;
		}
		rc = cf_fill(k, deadline);
		if (rc)
			return rc;
	}
}
