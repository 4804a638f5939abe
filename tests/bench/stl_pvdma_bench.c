// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_pvdma_bench: the two PVDMA benchmarks, one measurement per run.
 *
 *   stl_pvdma_bench start -d DEV -p PEER -M MEM_MIB -W REG_MIB [-g GID]
 *	A "container" with MEM_MIB of touched memory opens DEV, connects an RC
 *	QP to PEER, registers REG_MIB of its memory and completes its first
 *	RDMA WRITE.  Prints "start_ms <ms>", the time from opening the device
 *	to that completion.  Baseline (VF passthrough proxy): DEV rxe0 with
 *	REG_MIB = MEM_MIB; Stellar: DEV stellar0 with the working set only.
 *
 *   stl_pvdma_bench churn -d DEV -s BYTES -n ITERS
 *	Registers and deregisters the same buffer ITERS times; prints
 *	"churn_us <microseconds per register+deregister>".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"

static int gid_index = 1;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "stl_pvdma_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_context *ctx = tlib_open_device(name);

	if (!ctx)
		die(name);
	return ctx;
}

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

static void end_open(struct end *e, const char *dev)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	e->ctx = open_dev(dev);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, 8, NULL, NULL, 0) : NULL;
	if (!e->cq)
		die("pd/cq");
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &init);
	if (!e->qp || ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		die("qp/gid");
}

static void end_connect(struct end *e, const struct end *peer)
{
	struct tlib_rc_peer p = {
		.qpn = peer->qp->qp_num, .gid = peer->gid,
		.sgid_index = gid_index, .mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE,
	};
	const char *step;

	errno = tlib_rc_connect(e->qp, &p, &step);
	if (errno)
		die(step);
}

static int bench_start(const char *dev, const char *peer_dev, size_t mem,
		       size_t reg)
{
	struct end c = {}, p = {};
	struct ibv_mr *cmr, *pmr;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	char *memory, *target;
	double t0, t1;
	int n;

	if (reg > mem)
		reg = mem;
	/* The container's memory, touched before its RDMA life starts. */
	memory = mmap(NULL, mem, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED)
		die("mmap");
	memset(memory, 0x5a, mem);

	/* The peer is ready and waiting, outside the measurement. */
	end_open(&p, peer_dev);
	target = aligned_alloc(4096, 4096);
	pmr = ibv_reg_mr(p.pd, target, 4096,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!pmr)
		die("peer reg_mr");

	t0 = now_ms();
	end_open(&c, dev);
	end_connect(&c, &p);
	end_connect(&p, &c);
	cmr = ibv_reg_mr(c.pd, memory, reg, IBV_ACCESS_LOCAL_WRITE);
	if (!cmr)
		die("reg_mr");
	sge.addr = (uintptr_t)memory;
	sge.length = 4096;
	sge.lkey = cmr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)target;
	wr.wr.rdma.rkey = pmr->rkey;
	if (ibv_post_send(c.qp, &wr, &bad))
		die("post");
	while (!(n = ibv_poll_cq(c.cq, 1, &wc)))
		;
	t1 = now_ms();
	if (n != 1 || wc.status != IBV_WC_SUCCESS || target[100] != 0x5a) {
		fprintf(stderr, "first RDMA failed\n");
		return 1;
	}
	printf("start_ms %.1f\n", t1 - t0);
	return 0;
}

static int bench_churn(const char *dev, size_t size, int iters)
{
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;
	double t0, t1;
	char *buf;
	int i;

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pd || buf == MAP_FAILED)
		die("setup");
	memset(buf, 1, size);
	/* One warm-up pair: the first registration pins on any device. */
	mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("reg_mr");
	ibv_dereg_mr(mr);
	t0 = now_ms();
	for (i = 0; i < iters; i++) {
		mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			die("reg_mr");
		if (ibv_dereg_mr(mr))
			die("dereg_mr");
	}
	t1 = now_ms();
	printf("churn_us %.1f\n", (t1 - t0) * 1e3 / iters);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *dev = NULL, *peer = NULL;
	size_t mem = 0, reg = 0, size = 4096;
	int c, iters = 100;

	optind = 2;
	while ((c = getopt(argc, argv, "d:p:M:W:s:n:g:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'p': peer = optarg; break;
		case 'M': mem = strtoull(optarg, NULL, 0) << 20; break;
		case 'W': reg = strtoull(optarg, NULL, 0) << 20; break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'n': iters = atoi(optarg); break;
		case 'g': gid_index = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!strcmp(mode, "start") && dev && peer && mem && reg)
		return bench_start(dev, peer, mem, reg);
	if (!strcmp(mode, "churn") && dev && size && iters > 0)
		return bench_churn(dev, size, iters);
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	return 2;
}
