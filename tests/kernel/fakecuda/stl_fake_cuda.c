// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for libcuda.so.1 in the VM tests of libstellar-gpu: "device
 * memory" is a dma-buf of the test exporter (tests/kernel/dmabuf, 2 MiB
 * chunks) mapped into the process, so its bytes can be checked directly,
 * and cuMemGetHandleForAddressRange() hands out that dma-buf.  Only the
 * entry points libstellar-gpu and stellar-gpu-check resolve are here.
 * STL_FAKE_CUDA_NO_DEVICE=1 makes cuInit fail as on a machine without a
 * GPU; STL_FAKE_CUDA_NO_DMABUF=1 makes the GPU unable to export.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../dmabuf/stl_dmabuf_exp.h"

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NO_DEVICE		100
#define M2				(2UL << 20)

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define EXPORT __attribute__((visibility("default")))

static struct alloc {
	CUdeviceptr base;
	size_t size;
	int fd;
} allocs[16];

static struct alloc *find(CUdeviceptr p)
{
	int i;

	for (i = 0; i < 16; i++)
		if (allocs[i].size && p >= allocs[i].base &&
		    p < allocs[i].base + allocs[i].size)
			return &allocs[i];
	return NULL;
}

EXPORT CUresult cuInit(unsigned int flags)
{
	(void)flags;
	return getenv("STL_FAKE_CUDA_NO_DEVICE") ? CUDA_ERROR_NO_DEVICE :
						   CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
	*s = r == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device (fake)" :
	     "fake CUDA error";
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	*n = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(int *dev, int ordinal)
{
	*dev = ordinal;
	return ordinal ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	strncpy(name, "Stellar fake GPU", len - 1);
	name[len - 1] = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	(void)dev;
	*v = attr == 124 && !getenv("STL_FAKE_CUDA_NO_DMABUF");
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	(void)dev;
	*ctx = allocs;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
	(void)ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	struct stl_exp_create c = { .chunk = M2 };
	int dev, i;
	void *m;

	for (i = 0; i < 16 && allocs[i].size; i++)
		;
	if (i == 16 || !size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c.size = (size + M2 - 1) & ~(M2 - 1);
	dev = open(STL_EXP_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0 || ioctl(dev, STL_EXP_IOC_CREATE, &c)) {
		if (dev >= 0)
			close(dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	close(dev);
	/* At a 2 MiB boundary, as a GPU's virtual addresses are. */
	m = mmap(NULL, c.size + M2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m != MAP_FAILED) {
		munmap(m, c.size + M2);
		m = (void *)(((uintptr_t)m + M2 - 1) & ~(M2 - 1));
		m = mmap(m, c.size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, c.fd, 0);
	}
	if (m == MAP_FAILED) {
		close(c.fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	allocs[i].base = (uintptr_t)m;
	allocs[i].size = c.size;
	allocs[i].fd = c.fd;
	*p = allocs[i].base;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	struct alloc *a = find(p);

	if (!a || a->base != p)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)(uintptr_t)a->base, a->size);
	close(a->fd);
	memset(a, 0, sizeof(*a));
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n)
{
	struct alloc *a = find(p);

	if (!a || p + n > a->base + a->size)
		return CUDA_ERROR_INVALID_VALUE;
	memset((void *)(uintptr_t)p, v, n);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	if (attr != 9 || !find(p))
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)data = 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
					CUdeviceptr p)
{
	struct alloc *a = find(p);

	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	*base = a->base;
	*size = a->size;
	return CUDA_SUCCESS;
}

/* The whole allocation only: that is what libstellar-gpu asks for. */
EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p,
					      size_t size, int type,
					      unsigned long long flags)
{
	struct alloc *a = find(p);

	if (!a || a->base != p || a->size != size || type != 1 || flags ||
	    getenv("STL_FAKE_CUDA_NO_DMABUF"))
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)handle = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
	return *(int *)handle < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}
