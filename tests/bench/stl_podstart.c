// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_podstart: the pod-start benchmark's two ends (tests/bench/pod-guest.sh).
 *
 *   stl_podstart serve -d DEV -n N [-g GID_INDEX] [-t TIMEOUT_S]
 *	A UD QP on DEV that waits for N first bytes.  Prints
 *	"qpn QPN gid GID" (GID as 32 hex digits) once it is ready, then
 *	"arrived ID T" for each message (T: CLOCK_REALTIME, seconds), and
 *	exits 0 when all N came, each once and intact; 1 otherwise.
 *
 *   stl_podstart client -q QPN -G GID -i ID -W REG_MIB [-d DEV] [-g GID_INDEX]
 *	A pod's first byte: opens DEV (default: the only device it sees),
 *	maps REG_MIB of memory and registers all of it, as a training job
 *	registers its buffers, then sends one message from that memory to
 *	the server.  Prints "client_ms MS reg_ms MS": from the start of the
 *	process to the send's completion, and what ibv_reg_mr() took.
 *
 * Both ends use CLOCK_REALTIME where a figure crosses processes: one VM,
 * one clock.
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

#define POD_QKEY	0x50d57a27
#define POD_MSG		32
#define POD_GRH		40
#define POD_MAX		1024

static int gid_index = 1;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "stl_podstart: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* @name, or the only device there is (a pod sees its own). */
static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	if (name) {
		ctx = tlib_open_device(name);
		if (!ctx)
			die(name);
		return ctx;
	}
	list = ibv_get_device_list(&n);
	if (!list || n != 1) {
		errno = list ? ENODEV : errno;
		fprintf(stderr, "stl_podstart: %d devices, want exactly one (or -d)\n",
			list ? n : -1);
		exit(1);
	}
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		die("open");
	return ctx;
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq, int recvs)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = recvs ? recvs : 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = POD_QKEY,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		die("create_qp");
	errno = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			      IBV_QP_PORT | IBV_QP_QKEY);
	if (errno)
		die("INIT");
	a.qp_state = IBV_QPS_RTR;
	errno = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (errno)
		die("RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	errno = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (errno)
		die("RTS");
	return qp;
}

static int serve(const char *dev, int n, int timeout_s)
{
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, n + 1, NULL, NULL, 0) : NULL;
	size_t slot = POD_GRH + POD_MSG;
	unsigned char seen[POD_MAX] = {};
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	union ibv_gid gid;
	double end;
	char *buf;
	int i, got = 0, bad = 0;

	if (!cq)
		die("pd/cq");
	qp = ud_qp(pd, cq, n);
	buf = calloc(n, slot);
	mr = buf ? ibv_reg_mr(pd, buf, n * slot, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		die("reg_mr");
	for (i = 0; i < n; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(buf + i * slot), .length = slot,
			.lkey = mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *badwr;

		errno = ibv_post_recv(qp, &wr, &badwr);
		if (errno)
			die("post_recv");
	}
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		die("query_gid");
	printf("qpn %u gid ", qp->qp_num);
	for (i = 0; i < 16; i++)
		printf("%02x", gid.raw[i]);
	printf("\n");
	fflush(stdout);

	end = now_s() + timeout_s;
	while (got + bad < n && now_s() < end) {
		struct ibv_wc wc;
		unsigned int id;
		const char *msg;
		int k = ibv_poll_cq(cq, 1, &wc);

		if (k < 0)
			die("poll_cq");
		if (!k) {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
			continue;
		}
		msg = buf + wc.wr_id * slot + POD_GRH;
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != slot ||
		    sscanf(msg, "stellar pod %u", &id) != 1 || id >= POD_MAX ||
		    seen[id]) {
			fprintf(stderr, "stl_podstart: bad arrival: status %s, %u bytes, '%.*s'\n",
				ibv_wc_status_str(wc.status), wc.byte_len,
				POD_MSG, msg);
			bad++;
			continue;
		}
		seen[id] = 1;
		got++;
		printf("arrived %u %.6f\n", id, now_s());
		fflush(stdout);
	}
	if (got != n)
		fprintf(stderr, "stl_podstart: %d of %d arrived (%d bad)\n",
			got, n, bad);
	return got == n ? 0 : 1;
}

static int client(const char *dev, uint32_t qpn, const char *gidhex,
		  unsigned int id, size_t reg)
{
	double t0 = now_s(), r0, r1;
	struct ibv_context *ctx;
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .sgid_index = gid_index, .hop_limit = 64 },
	};
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *badwr;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char *mem;
	int i, k;

	if (strlen(gidhex) != 32)
		return fprintf(stderr, "stl_podstart: -G wants 32 hex digits\n"), 2;
	for (i = 0; i < 16; i++)
		if (sscanf(gidhex + 2 * i, "%2hhx", &aa.grh.dgid.raw[i]) != 1)
			return fprintf(stderr, "stl_podstart: bad -G\n"), 2;
	/* The job's memory: mapped, not yet touched. */
	mem = mmap(NULL, reg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");
	ctx = open_dev(dev);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 2, NULL, NULL, 0) : NULL;
	if (!cq)
		die("pd/cq");
	r0 = now_s();
	mr = ibv_reg_mr(pd, mem, reg, IBV_ACCESS_LOCAL_WRITE);
	r1 = now_s();
	if (!mr)
		die("reg_mr");
	qp = ud_qp(pd, cq, 0);
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("create_ah");
	/* The message lies in the registered memory, past its start. */
	snprintf(mem + reg / 2, POD_MSG, "stellar pod %u", id);
	sge.addr = (uintptr_t)(mem + reg / 2);
	sge.length = POD_MSG;
	sge.lkey = mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = POD_QKEY;
	errno = ibv_post_send(qp, &wr, &badwr);
	if (errno)
		die("post_send");
	while (!(k = ibv_poll_cq(cq, 1, &wc)))
		;
	if (k < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "stl_podstart: send: %s\n",
			k < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
		return 1;
	}
	printf("client_ms %.1f reg_ms %.1f\n", (now_s() - t0) * 1e3,
	       (r1 - r0) * 1e3);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *dev = NULL, *gid = NULL;
	long qpn = -1, id = -1, n = 0, timeout_s = 600;
	size_t reg = 0;
	int c;

	optind = 2;
	while ((c = getopt(argc, argv, "d:n:g:t:q:G:i:W:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'n': n = strtol(optarg, NULL, 0); break;
		case 'g': gid_index = atoi(optarg); break;
		case 't': timeout_s = strtol(optarg, NULL, 0); break;
		case 'q': qpn = strtol(optarg, NULL, 0); break;
		case 'G': gid = optarg; break;
		case 'i': id = strtol(optarg, NULL, 0); break;
		case 'W': reg = strtoull(optarg, NULL, 0) << 20; break;
		default: return 2;
		}
	}
	if (!strcmp(mode, "serve") && n > 0 && n <= POD_MAX && timeout_s > 0)
		return serve(dev, n, timeout_s);
	if (!strcmp(mode, "client") && qpn > 0 && qpn < (1 << 24) && gid &&
	    id >= 0 && id < POD_MAX && reg)
		return client(dev, qpn, gid, id, reg);
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	return 2;
}
