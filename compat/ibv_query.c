/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device, port, GID and P_Key queries: the limits libiwarp really has
 * (include/iwarp/verbs.h: iw_create_qp, iw_create_cq, iw_create_srq,
 * iw_modify_qp), one port, up, Ethernet link layer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cv.h"

#define CV_MAX_WR 16384     /* iw_create_qp / iw_create_srq */
#define CV_MAX_SGE 16
#define CV_MAX_CQE 4194304  /* iw_create_cq: 2^22 */
#define CV_MAX_RD 128       /* iw_modify_qp: ORD, IRD */
#define CV_MAX_STAGS 16777215 /* 2^24 - 1 STag indices */
#define CV_MANY 65536       /* no fixed limit: memory is the limit */

/* RFC 7306 (immediate data, atomics) on every QP when IWARP_RFC7306=1:
 * only a peer that implements it too understands those messages (libiwarp
 * does; siw and Chelsio do not), so it is off unless asked for. Off, such
 * a work request fails to post with EINVAL. */
int cv_rfc7306(void)
{
	static int v = -1;

	if (v < 0) {
		const char *e = getenv("IWARP_RFC7306");
		v = e && strcmp(e, "1") == 0;
	}
	return v;
}

static void cv_fill_device_attr(struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "libiwarp");
	a->node_guid = ibv_get_device_guid(NULL);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 4096;
	a->vendor_id = 0;
	a->hw_ver = 0;
	a->max_qp = CV_MANY;
	a->max_qp_wr = CV_MAX_WR;
	a->device_cap_flags = IBV_DEVICE_CURR_QP_STATE_MOD | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B; /* ibv_mw.c */
	a->max_sge = CV_MAX_SGE;
	a->max_sge_rd = 1; /* an RDMA Read takes one SGE */
	a->max_cq = CV_MANY;
	a->max_cqe = CV_MAX_CQE;
	a->max_mr = CV_MAX_STAGS;
	a->max_mw = CV_MAX_STAGS; /* windows take STags from the same table */
	a->max_pd = CV_MANY;
	a->max_qp_rd_atom = CV_MAX_RD;
	a->max_qp_init_rd_atom = CV_MAX_RD;
	a->max_res_rd_atom = CV_MAX_RD * CV_MANY;
	a->atomic_cap = cv_rfc7306() ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
	a->max_srq = CV_MANY;
	a->max_srq_wr = CV_MAX_WR;
	a->max_srq_sge = CV_MAX_SGE;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
}

CV_EXPORT int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	if (!ctx || !attr)
		return EINVAL;
	cv_fill_device_attr(attr);
	return 0;
}

int cv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
int cv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	(void)input;
	if (!ctx || !attr || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(attr, 0, attr_size < sizeof(*attr) ? attr_size : sizeof(*attr));
	cv_fill_device_attr(&attr->orig_attr);
	return 0;
}

static void cv_fill_port_attr(struct ibv_port_attr *p)
{
	memset(p, 0, sizeof(*p));
	p->state = IBV_PORT_ACTIVE;
	p->max_mtu = IBV_MTU_4096;
	p->active_mtu = IBV_MTU_4096;
	p->gid_tbl_len = 1;
	p->max_msg_sz = 0x80000000u;
	p->pkey_tbl_len = 1;
	p->active_width = 2;  /* 4X */
	p->active_speed = 32; /* EDR: a number to print, TCP sets the pace */
	p->phys_state = 5;    /* LinkUp */
	p->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int cv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len);
int cv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr full;

	if (!ctx || !attr || port != 1)
		return EINVAL;
	cv_fill_port_attr(&full);
	memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

/* The exported call behind the inline one, for applications built before
 * the extended context: its structure ended before port_cap_flags2. */
#undef ibv_query_port
CV_EXPORT int ibv_query_port(struct ibv_context *ctx, uint8_t port,
			     struct _compat_ibv_port_attr *attr)
{
	return cv_query_port(ctx, port, (struct ibv_port_attr *)attr,
			     offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* The GID: the device GUID as interface identifier under fe80::/64. */
static void cv_gid(union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
	gid->global.interface_id = ibv_get_device_guid(NULL);
}

CV_EXPORT int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (!ctx || !gid || port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	cv_gid(gid);
	return 0;
}

CV_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
				struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	if (!ctx || !entry || port != 1 || index != 0 || flags ||
	    entry_size < sizeof(*entry))
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	cv_gid(&entry->gid);
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_IB;
	return 0;
}

CV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (max_entries < 1)
		return -EINVAL;
	int r = _ibv_query_gid_ex(ctx, 1, 0, entries, flags, entry_size);
	return r ? -r : 1;
}

CV_EXPORT int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	if (!ctx || !pkey || port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

CV_EXPORT int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	if (!ctx || port != 1 || pkey != htobe16(0xffff)) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}
