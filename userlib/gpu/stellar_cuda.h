/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The few CUDA driver API entry points libstellar-gpu and its check tool
 * use, resolved from libcuda.so.1 at run time.  Types and constants are the
 * driver API's (cuda.h), declared here so that no CUDA header is needed.
 */
#ifndef STELLAR_CUDA_H
#define STELLAR_CUDA_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;

#define CUDA_ERROR_NO_DEVICE			100
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL	9
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED	124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1

struct stl_cuda {
	void *lib;
	CUresult (*cuInit)(unsigned int flags);
	CUresult (*cuGetErrorString)(CUresult r, const char **s);
	CUresult (*cuDeviceGetCount)(int *n);
	CUresult (*cuDeviceGet)(int *dev, int ordinal);	/* CUdevice */
	CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
	CUresult (*cuDeviceGetAttribute)(int *v, int attr, CUdevice dev);
	CUresult (*cuDevicePrimaryCtxRetain)(void **ctx, CUdevice dev);
	CUresult (*cuCtxSetCurrent)(CUcontext ctx);
	CUresult (*cuMemAlloc)(unsigned long long *p, size_t size);
	CUresult (*cuMemFree)(CUdeviceptr p);
	CUresult (*cuMemsetD8)(CUdeviceptr p, unsigned char v, size_t n);
	CUresult (*cuPointerGetAttribute)(void *data, int attr, CUdeviceptr p);
	CUresult (*cuMemGetAddressRange)(unsigned long long *base,
					 size_t *size, CUdeviceptr p);
	CUresult (*cuMemGetHandleForAddressRange)(void *handle, CUdeviceptr p,
						  size_t size, int type,
						  unsigned long long flags);
};

/*
 * Load libcuda.so.1 (STELLAR_LIBCUDA overrides the name) and resolve every
 * entry point.  Returns 0, or -ENOSYS with the reason in @why.
 */
static inline int stl_cuda_load(struct stl_cuda *c, char *why, size_t n)
{
	const char *name = getenv("STELLAR_LIBCUDA");
	static const struct {
		const char *sym;
		size_t off;
	} syms[] = {
#define S(f, s) { s, offsetof(struct stl_cuda, f) }
		S(cuInit, "cuInit"),
		S(cuGetErrorString, "cuGetErrorString"),
		S(cuDeviceGetCount, "cuDeviceGetCount"),
		S(cuDeviceGet, "cuDeviceGet"),
		S(cuDeviceGetName, "cuDeviceGetName"),
		S(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
		S(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		S(cuCtxSetCurrent, "cuCtxSetCurrent"),
		S(cuMemAlloc, "cuMemAlloc_v2"),
		S(cuMemFree, "cuMemFree_v2"),
		S(cuMemsetD8, "cuMemsetD8_v2"),
		S(cuPointerGetAttribute, "cuPointerGetAttribute"),
		S(cuMemGetAddressRange, "cuMemGetAddressRange_v2"),
		S(cuMemGetHandleForAddressRange,
		  "cuMemGetHandleForAddressRange"),
#undef S
	};
	size_t i;

	c->lib = dlopen(name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		snprintf(why, n, "no CUDA driver: %s", dlerror());
		return -ENOSYS;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(c->lib, syms[i].sym);

		if (!f) {
			snprintf(why, n, "the CUDA driver has no %s (too old for dma-buf export: 11.7 or later needed)",
				 syms[i].sym);
			dlclose(c->lib);
			c->lib = NULL;
			return -ENOSYS;
		}
		*(void **)((char *)c + syms[i].off) = f;
	}
	return 0;
}

#endif /* STELLAR_CUDA_H */
