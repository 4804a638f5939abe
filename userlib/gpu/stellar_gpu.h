/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libstellar-gpu: register GPU memory on an RDMA device through dma-buf.
 *
 *   mr = stellar_reg_gpu_mr(pd, dptr, len, IBV_ACCESS_LOCAL_WRITE | ...);
 *
 * The CUDA driver (libcuda.so.1) is loaded with dlopen() on first use, so
 * nothing links CUDA and programs run unchanged on machines without it.
 * The allocation holding @ptr is exported as a dma-buf
 * (cuMemGetHandleForAddressRange) and registered with ibv_reg_dmabuf_mr()
 * at iova @ptr; the MR keeps the dma-buf, its fd is closed.
 */
#ifndef STELLAR_GPU_H
#define STELLAR_GPU_H

#include <stddef.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Returns the MR, or NULL with errno: ENOSYS (no CUDA driver), ENODEV (no
 * usable GPU), EOPNOTSUPP (the GPU or the RDMA device cannot share memory
 * as a dma-buf), EINVAL (@ptr..@ptr+@len is not one device allocation),
 * or ibv_reg_dmabuf_mr()'s errno.  stellar_gpu_error() says more.
 */
struct ibv_mr *stellar_reg_gpu_mr(struct ibv_pd *pd, void *ptr, size_t len,
				  int access);

/* The last failure of this thread, in words ("" if none). */
const char *stellar_gpu_error(void);

#ifdef __cplusplus
}
#endif

#endif /* STELLAR_GPU_H */
