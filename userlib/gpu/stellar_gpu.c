// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar-gpu: GPU memory to an RDMA MR through dma-buf, with the CUDA
 * driver API loaded at run time (see stellar_gpu.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stellar_gpu.h"
#include "stellar_cuda.h"

#define GPU_EXPORT __attribute__((visibility("default")))

static __thread char gpu_err[256];

static int gpu_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gpu_err, sizeof(gpu_err), fmt, ap);
	va_end(ap);
	errno = err;
	return -1;
}

GPU_EXPORT const char *stellar_gpu_error(void)
{
	return gpu_err;
}

static struct stl_cuda cuda;
static int cuda_state;	/* 0 not tried, 1 loaded, -errno failed */
static char cuda_why[200];
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

static void cuda_load_once(void)
{
	cuda_state = stl_cuda_load(&cuda, cuda_why, sizeof(cuda_why));
}

/* Why CUDA call @what failed, with the driver's own words. */
static int cuda_fail(int err, const char *what, CUresult r)
{
	const char *s = NULL;

	if (cuda.cuGetErrorString)
		cuda.cuGetErrorString(r, &s);
	return gpu_fail(err, "%s: CUDA error %d (%s)", what, r, s ? s : "?");
}

GPU_EXPORT struct ibv_mr *stellar_reg_gpu_mr(struct ibv_pd *pd, void *ptr,
					     size_t len, int access)
{
	CUdeviceptr p = (uintptr_t)ptr, base;
	size_t size, page = sysconf(_SC_PAGESIZE);
	int ordinal, supported = 0, fd;
	struct ibv_mr *mr;
	CUdevice dev;
	CUresult r;

	gpu_err[0] = 0;
	if (!pd || !len) {
		gpu_fail(EINVAL, "no PD or an empty range");
		return NULL;
	}
	pthread_once(&cuda_once, cuda_load_once);
	if (cuda_state < 0) {
		gpu_fail(-cuda_state, "%s", cuda_why);
		return NULL;
	}
	r = cuda.cuInit(0);
	if (r) {
		cuda_fail(ENODEV, "cuInit (no usable GPU)", r);
		return NULL;
	}
	r = cuda.cuPointerGetAttribute(&ordinal,
				       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
	if (r) {
		cuda_fail(EINVAL, "cuPointerGetAttribute (not device memory?)",
			  r);
		return NULL;
	}
	r = cuda.cuDeviceGet(&dev, ordinal);
	if (!r)
		r = cuda.cuDeviceGetAttribute(&supported,
					      CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
					      dev);
	if (r) {
		cuda_fail(ENODEV, "cuDeviceGetAttribute", r);
		return NULL;
	}
	if (!supported) {
		gpu_fail(EOPNOTSUPP,
			 "GPU %d cannot export dma-bufs (driver or kernel too old, or not the open kernel modules)",
			 ordinal);
		return NULL;
	}
	r = cuda.cuMemGetAddressRange(&base, &size, p);
	if (r) {
		cuda_fail(EINVAL, "cuMemGetAddressRange", r);
		return NULL;
	}
	if (p + len < p || p + len > base + size) {
		gpu_fail(EINVAL, "%zu bytes at %p run past the allocation (%zu bytes at %#llx)",
			 len, ptr, size, (unsigned long long)base);
		return NULL;
	}
	/* The export wants page-aligned bounds; allocations are. */
	size = (size + page - 1) & ~(page - 1);
	r = cuda.cuMemGetHandleForAddressRange(&fd, base, size,
					       CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					       0);
	if (r) {
		cuda_fail(EOPNOTSUPP, "cuMemGetHandleForAddressRange", r);
		return NULL;
	}
	mr = ibv_reg_dmabuf_mr(pd, p - base, len, p, fd, access);
	if (!mr) {
		int err = errno;

		gpu_fail(err, "ibv_reg_dmabuf_mr on %s: %s",
			 ibv_get_device_name(pd->context->device),
			 strerror(err));
	}
	close(fd);
	return mr;
}
