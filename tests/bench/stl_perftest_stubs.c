// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stand-ins for the vendor libraries Debian's perftest is linked with
 * (libmlx5.so.1, libefa.so.1), for `make bench` only.
 *
 * Those libraries come from the system's rdma-core and need its private
 * libibverbs ABI, so perftest cannot start with another release's
 * libibverbs on LD_LIBRARY_PATH.  scripts/bench.sh builds this file twice
 * (-DSTL_STUB_MLX5 with stl_perftest_mlx5.map, -DSTL_STUB_EFA with
 * stl_perftest_efa.map) so that perftest runs over an upstream release's
 * libibverbs and stock librxe.  perftest calls these only for mlx5 and
 * EFA devices; each fails with EOPNOTSUPP.
 */
#include <errno.h>
#include <stddef.h>

#define STL_STUB_PTR(name)					\
	void *name(void);					\
	void *name(void) { errno = EOPNOTSUPP; return NULL; }
#define STL_STUB_INT(name)					\
	int name(void);						\
	int name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }

#ifdef STL_STUB_MLX5
STL_STUB_PTR(mlx5dv_create_qp)
STL_STUB_PTR(mlx5dv_open_device)
STL_STUB_INT(mlx5dv_devx_general_cmd)
STL_STUB_PTR(mlx5dv_create_mkey)
STL_STUB_INT(mlx5dv_destroy_mkey)
STL_STUB_PTR(mlx5dv_qp_ex_from_ibv_qp_ex)
STL_STUB_INT(mlx5dv_crypto_login)
STL_STUB_PTR(mlx5dv_dek_create)
STL_STUB_INT(mlx5dv_dek_destroy)
#endif

#ifdef STL_STUB_EFA
STL_STUB_PTR(efadv_create_qp_ex)
STL_STUB_INT(efadv_query_device)
#endif
