/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmlx5.so.1 stub: perftest links Mellanox's direct-verbs library and
 * calls it only for mlx5 devices. There is none here: every call says so
 * (ENODEV), so the program loads and goes on with plain verbs.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/mlx5dv.h>

#define STUB_EXPORT __attribute__((visibility("default")))
#define STUB_PTR(proto) STUB_EXPORT proto { errno = ENODEV; return NULL; }
#define STUB_INT(proto) STUB_EXPORT proto { errno = ENODEV; return ENODEV; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
STUB_PTR(struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context,
					 struct ibv_qp_init_attr_ex *qp_attr,
					 struct mlx5dv_qp_init_attr *mlx5_qp_attr))
STUB_PTR(struct ibv_context *mlx5dv_open_device(struct ibv_device *device,
						struct mlx5dv_context_attr *attr))
STUB_INT(int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen,
				     void *out, size_t outlen))
STUB_PTR(struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr))
STUB_INT(int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey))
STUB_PTR(struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp))
STUB_INT(int mlx5dv_crypto_login(struct ibv_context *context,
				 struct mlx5dv_crypto_login_attr *login_attr))
STUB_PTR(struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context,
					      struct mlx5dv_dek_init_attr *init_attr))
STUB_INT(int mlx5dv_dek_destroy(struct mlx5dv_dek *dek))
#pragma GCC diagnostic pop
