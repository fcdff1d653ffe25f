/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What libibverbs exports but iWARP over TCP cannot honour: address
 * handles and multicast (UD), device memory and dma-buf, importing objects
 * from another process's kernel context, ECE, re-registration. Each fails
 * cleanly with EOPNOTSUPP (errno set for the calls that return a pointer
 * or -1), so that an application that probes for it carries on without.
 * And the kernel-era helpers, which have no kernel to talk to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "cv.h"

#define CV_REFUSE_PTR(proto) CV_EXPORT proto { errno = EOPNOTSUPP; return NULL; }
#define CV_REFUSE_INT(proto) CV_EXPORT proto { errno = EOPNOTSUPP; return EOPNOTSUPP; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
CV_REFUSE_PTR(struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr))
CV_REFUSE_PTR(struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						   struct ibv_grh *grh, uint8_t port_num))
CV_REFUSE_INT(int ibv_destroy_ah(struct ibv_ah *ah))
CV_REFUSE_INT(int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				      struct ibv_wc *wc, struct ibv_grh *grh,
				      struct ibv_ah_attr *ah_attr))
CV_REFUSE_INT(int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))
CV_REFUSE_INT(int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))
CV_REFUSE_INT(int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					      uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid))
CV_REFUSE_PTR(struct ibv_context *ibv_import_device(int cmd_fd))
CV_REFUSE_PTR(struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle))
CV_REFUSE_PTR(struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle))
CV_REFUSE_PTR(struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle))
CV_REFUSE_PTR(struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					       uint64_t iova, int fd, int access))
CV_REFUSE_INT(int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece))
CV_REFUSE_INT(int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece))

CV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd) {}
CV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr) {}
CV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm) {}

CV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

/* Memory is never pinned for a device: fork needs no preparation. */
CV_EXPORT int ibv_fork_init(void) { return 0; }
CV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
CV_EXPORT int ibv_dontfork_range(void *base, size_t size) { return 0; }
CV_EXPORT int ibv_dofork_range(void *base, size_t size) { return 0; }

/* Kernel ABI copies (infiniband/marshall.h): there is no kernel structure
 * to copy from or to; the destination is left as it is. */
void ibv_copy_qp_attr_from_kern(void *dst, const void *src);
void ibv_copy_ah_attr_from_kern(void *dst, const void *src);
void ibv_copy_path_rec_from_kern(void *dst, const void *src);
void ibv_copy_path_rec_to_kern(void *dst, const void *src);
CV_EXPORT void ibv_copy_qp_attr_from_kern(void *dst, const void *src) {}
CV_EXPORT void ibv_copy_ah_attr_from_kern(void *dst, const void *src) {}
CV_EXPORT void ibv_copy_path_rec_from_kern(void *dst, const void *src) {}
CV_EXPORT void ibv_copy_path_rec_to_kern(void *dst, const void *src) {}
#pragma GCC diagnostic pop

/* sysfs: iwarp0 has no class device; the helpers still read real files. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
CV_EXPORT const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

CV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || size == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return (int)n;
}

/*
 * IBVERBS_1.0 compatibility versions (libibverbs before 1.1, 2006): they
 * took structures of another layout, which nothing built since passes.
 * Kept so that the version nodes match rdma-core's symbol by symbol; each
 * fails with ENOSYS (NULL for the calls that return a pointer).
 */
#define CV_V10(name, type, fail)                                          \
	type cv_v10_##name(void);                                         \
	CV_EXPORT type cv_v10_##name(void)                                \
	{                                                                 \
		errno = ENOSYS;                                           \
		return fail;                                              \
	}                                                                 \
	__asm__(".symver cv_v10_" #name ", " #name "@IBVERBS_1.0");
#define CV_V10_NULL(name) CV_V10(name, void *, NULL)
#define CV_V10_FAIL(name) CV_V10(name, long, -1)
CV_V10_NULL(ibv_alloc_pd) CV_V10_NULL(ibv_create_ah) CV_V10_NULL(ibv_create_cq)
CV_V10_NULL(ibv_create_qp) CV_V10_NULL(ibv_create_srq) CV_V10_NULL(ibv_get_device_list)
CV_V10_NULL(ibv_get_device_name) CV_V10_NULL(ibv_open_device) CV_V10_NULL(ibv_reg_mr)
CV_V10_NULL(ibv_ack_async_event) CV_V10_NULL(ibv_ack_cq_events) CV_V10_NULL(ibv_free_device_list)
CV_V10_NULL(ibv_get_device_guid)
CV_V10_FAIL(ibv_attach_mcast) CV_V10_FAIL(ibv_close_device) CV_V10_FAIL(ibv_dealloc_pd)
CV_V10_FAIL(ibv_dereg_mr) CV_V10_FAIL(ibv_destroy_ah) CV_V10_FAIL(ibv_destroy_cq)
CV_V10_FAIL(ibv_destroy_qp) CV_V10_FAIL(ibv_destroy_srq) CV_V10_FAIL(ibv_detach_mcast)
CV_V10_FAIL(ibv_get_async_event) CV_V10_FAIL(ibv_get_cq_event) CV_V10_FAIL(ibv_modify_qp)
CV_V10_FAIL(ibv_modify_srq) CV_V10_FAIL(ibv_query_device) CV_V10_FAIL(ibv_query_gid)
CV_V10_FAIL(ibv_query_pkey) CV_V10_FAIL(ibv_query_port) CV_V10_FAIL(ibv_query_qp)
CV_V10_FAIL(ibv_query_srq) CV_V10_FAIL(ibv_resize_cq)

/* IBVERBS_1.1's hidden ibv_register_driver: the pre-rdma-core provider
 * hook. No provider registers here. */
void cv_register_driver(const char *name, void *init);
CV_EXPORT void cv_register_driver(const char *name, void *init)
{
	(void)name;
	(void)init;
}
__asm__(".symver cv_register_driver, ibv_register_driver@IBVERBS_1.1");
