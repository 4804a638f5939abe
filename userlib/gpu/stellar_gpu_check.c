// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stellar-gpu-check: can this machine's GPU memory reach an RDMA device?
 *
 *   stellar-gpu-check [-g GPU] [-s MIB] [-d RDMA_DEVICE]
 *
 * Allocates MIB MiB (default 64) on GPU GPU (default 0), exports it as a
 * dma-buf and reports the GPU, whether it can export dma-bufs, the
 * allocation's address alignment, the dma-buf's size and exporter; then,
 * when an RDMA device is there (RDMA_DEVICE, else the first Stellar
 * device), registers it with stellar_reg_gpu_mr() and reports the MR's
 * translation as Stellar built it (page size, entries: the granularity of
 * the GPU's memory as the importer sees it).
 * Exit status: 0 done, 1 a step failed, 2 no CUDA driver or no GPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "stellar_cuda.h"
#include "stellar_gpu.h"

static struct stl_cuda cu;

static const char *cu_str(CUresult r)
{
	const char *s = NULL;

	cu.cuGetErrorString(r, &s);
	return s ? s : "?";
}

/* The exporter named in /proc/self/fdinfo/FD, or "?". */
static void fd_exporter(int fd, char *out, size_t n)
{
	char path[64], line[256];
	FILE *f;

	snprintf(out, n, "?");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "exp_name:", 9)) {
			snprintf(out, n, "%s", line + 9 + strspn(line + 9, " \t"));
			out[strcspn(out, "\n")] = 0;
		}
	if (f)
		fclose(f);
}

static struct ibv_context *open_rdma(const char *want)
{
	struct ibv_device **l = ibv_get_device_list(NULL), *d = NULL;
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; l && l[i] && !d; i++) {
		const char *name = ibv_get_device_name(l[i]);

		if (want ? !strcmp(name, want) : !strncmp(name, "stellar", 7))
			d = l[i];
	}
	if (d)
		ctx = ibv_open_device(d);
	if (l)
		ibv_free_device_list(l);
	return ctx;
}

static void show_translation(const char *dev, uint32_t lkey)
{
	char cmd[160], line[512];
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "rdma -dd resource show mr dev %s lkey %u 2>/dev/null", dev, lkey);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "drv_emtt");

		printf("translation:    %s", p ? p : line);
	}
	if (f)
		pclose(f);
}

int main(int argc, char **argv)
{
	int c, gpu = 0, n = 0, dmabuf_ok = 0, fd, ret = 0;
	const char *rdma_dev = NULL;
	size_t mib = 64, size;
	struct ibv_context *ctx;
	CUdeviceptr p = 0;
	char name[128], why[200], exp[64];
	CUcontext cctx;
	CUdevice dev;
	CUresult r;

	while ((c = getopt(argc, argv, "g:s:d:")) != -1) {
		switch (c) {
		case 'g':
			gpu = atoi(optarg);
			break;
		case 's':
			mib = strtoul(optarg, NULL, 0);
			break;
		case 'd':
			rdma_dev = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-g GPU] [-s MIB] [-d RDMA_DEVICE]\n",
				argv[0]);
			return 1;
		}
	}
	size = mib << 20;
	if (stl_cuda_load(&cu, why, sizeof(why))) {
		printf("stellar-gpu-check: %s\n", why);
		return 2;
	}
	r = cu.cuInit(0);
	if (!r)
		r = cu.cuDeviceGetCount(&n);
	if (r || gpu >= n) {
		printf("stellar-gpu-check: no GPU %d (cuInit/cuDeviceGetCount: %s, %d GPUs)\n",
		       gpu, r ? cu_str(r) : "ok", n);
		return 2;
	}
	cu.cuDeviceGet(&dev, gpu);
	cu.cuDeviceGetName(name, sizeof(name), dev);
	cu.cuDeviceGetAttribute(&dmabuf_ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				dev);
	printf("gpu:            %d of %d, %s\n", gpu, n, name);
	printf("dma-buf export: %s\n", dmabuf_ok ? "supported" : "NOT supported");
	r = cu.cuDevicePrimaryCtxRetain(&cctx, dev);
	if (!r)
		r = cu.cuCtxSetCurrent(cctx);
	if (!r)
		r = cu.cuMemAlloc(&p, size);
	if (r) {
		printf("stellar-gpu-check: allocating %zu MiB: %s\n", mib, cu_str(r));
		return 1;
	}
	cu.cuMemsetD8(p, 0x5a, size);
	printf("allocation:     %zu MiB at %#llx, aligned to %llu KiB\n", mib,
	       (unsigned long long)p, (unsigned long long)((p & -p) >> 10));
	r = cu.cuMemGetHandleForAddressRange(&fd, p, size,
					     CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					     0);
	if (r) {
		printf("dma-buf:        export failed: %s\n", cu_str(r));
		ret = 1;
	} else {
		fd_exporter(fd, exp, sizeof(exp));
		printf("dma-buf:        fd %d, %lld bytes, exporter %s\n", fd,
		       (long long)lseek(fd, 0, SEEK_END), exp);
		close(fd);
	}
	ctx = open_rdma(rdma_dev);
	if (!ctx) {
		printf("rdma device:    %s not found: registration not tried\n",
		       rdma_dev ? rdma_dev : "no Stellar device");
	} else {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_mr *mr = pd ? stellar_reg_gpu_mr(pd, (void *)(uintptr_t)p,
							    size,
							    IBV_ACCESS_LOCAL_WRITE |
							    IBV_ACCESS_REMOTE_WRITE |
							    IBV_ACCESS_REMOTE_READ) : NULL;

		if (mr) {
			printf("registration:   %s lkey %#x rkey %#x\n",
			       ibv_get_device_name(ctx->device), mr->lkey, mr->rkey);
			show_translation(ibv_get_device_name(ctx->device), mr->lkey);
			ibv_dereg_mr(mr);
		} else {
			printf("registration:   failed: %s\n", stellar_gpu_error());
			ret = 1;
		}
		if (pd)
			ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
	}
	cu.cuMemFree(p);
	return ret;
}
