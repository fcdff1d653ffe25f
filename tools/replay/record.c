/* SPDX-License-Identifier: BSD-2-Clause */
#include "record.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static struct rp_record rec;

void rp_record_init(bool active, unsigned want)
{
	memset(&rec, 0, sizeof(rec));
	rec.active = active;
	rec.want = want;
}

struct rp_record *rp_record_get(void)
{
	return &rec;
}

void rp_record_conn(unsigned conn, const struct rp_ep ep_by_role[2])
{
	if (!rec.active || rec.conn || (rec.want && rec.want != conn))
		return;
	rec.conn = conn;
	rec.ep[0] = ep_by_role[0];
	rec.ep[1] = ep_by_role[1];
}

void rp_record_mpa(unsigned conn, enum rp_role sender, const uint8_t *raw, size_t len)
{
	if (!rec.active || conn != rec.conn || len > sizeof(rec.mpa[0]))
		return;
	rec.has_mpa[sender] = true;
	memcpy(rec.mpa[sender], raw, len);
	rec.mpa_len[sender] = len;
}

void rp_record_neg(unsigned conn, bool crc, const bool markers_by_role[2])
{
	if (!rec.active || conn != rec.conn)
		return;
	rec.negotiated = true;
	rec.crc = crc;
	rec.markers[0] = markers_by_role[0];
	rec.markers[1] = markers_by_role[1];
}

void rp_record_fpdu(unsigned conn, enum rp_role sender, const struct rp_fpdu *f, uint64_t frame,
		    uint64_t ts_ns, uint64_t peer_msgs)
{
	struct rp_rec_fpdu *r;
	size_t len = f->u.hdr_len + f->u.payload_len;

	if (!rec.active || conn != rec.conn)
		return;
	if (rec.n[sender] == rec.cap[sender]) {
		rec.cap[sender] = rec.cap[sender] ? 2 * rec.cap[sender] : 64;
		rec.f[sender] = rp_xrealloc(rec.f[sender], rec.cap[sender] * sizeof(*r));
	}
	r = &rec.f[sender][rec.n[sender]++];
	r->n = f->n;
	r->frame = frame;
	r->ts_ns = ts_ns;
	r->peer_msgs = peer_msgs;
	r->len = (uint16_t)len;
	r->hdr_len = f->u.hdr_len;
	r->ulpdu = rp_xmalloc(len);
	memcpy(r->ulpdu, f->ulpdu, len);
}

void rp_record_free(void)
{
	for (int d = 0; d < 2; d++) {
		for (size_t i = 0; i < rec.n[d]; i++)
			free(rec.f[d][i].ulpdu);
		free(rec.f[d]);
	}
	memset(&rec, 0, sizeof(rec));
}
