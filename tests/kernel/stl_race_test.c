// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_race_test: a CQ keeps being polled while QPs that share it are
 * destroyed with completions in flight.
 *
 *   stl_race_test -a DEV -b PEER [-g GID_INDEX] [-s SECONDS]
 *
 * One thread polls the shared CQ of device A without pause; the main thread
 * creates an RC QP on that CQ, connects it to a QP on PEER, posts a burst of
 * signalled RDMA WRITEs and destroys the QP at once, over and over, the next
 * QP on the CQ created right after.  Every completion polled must carry a
 * wr_id this process posted and name in qp_num the very QP it was posted
 * on (the wr_id says which round, hence which QP).  Best run with slab poisoning (slub_debug=FZPU), which turns a
 * completion read through a freed QP into an oops.
 * Prints PASS/FAIL lines and "N passed, N failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"

#define BURST 16
#define MAX_QPS 65536
#define WR_MAGIC 0x5700000000ULL

static const char *dev_a = "stellar0", *dev_b = "stellar1";
static int gid_index = 1;
static double seconds = 20;

static struct ibv_cq *shared_cq;
static uint32_t created[MAX_QPS];
static volatile int n_created, stop;
static unsigned long polled, bogus;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* wr_id: WR_MAGIC | round << 8 | index in the burst */
static uint64_t wr_id_of(unsigned int round, int i)
{
	return WR_MAGIC | (uint64_t)round << 8 | (unsigned int)i;
}

/* Was @wr_id posted on the QP numbered @qpn? */
static int wr_of_qp(uint64_t wr_id, uint32_t qpn)
{
	int n = __atomic_load_n(&n_created, __ATOMIC_ACQUIRE);
	uint64_t round = (wr_id >> 8) & 0xffffff;

	if ((wr_id & ~0xffffffffULL) != WR_MAGIC || (wr_id & 0xff) >= BURST)
		return 0;
	return round < (uint64_t)n && created[round] == qpn;
}

static void *poller(void *arg)
{
	struct ibv_wc wc[8];
	int n, i;

	(void)arg;
	while (!stop) {
		n = ibv_poll_cq(shared_cq, 8, wc);
		for (i = 0; i < n; i++) {
			polled++;
			if (!wr_of_qp(wc[i].wr_id, wc[i].qp_num)) {
				if (bogus++ < 5)
					printf("# bogus completion: qp_num %u wr_id 0x%llx status %d\n",
					       wc[i].qp_num,
					       (unsigned long long)wc[i].wr_id,
					       wc[i].status);
			}
		}
	}
	return NULL;
}

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	struct ibv_mr *mr;
	char *buf;
};

static int end_open(struct end *e, const char *name)
{
	e->ctx = tlib_open_device(name);
	if (!e->ctx)
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 4096, NULL, NULL, 0);
	e->buf = calloc(1, 4096);
	if (!e->pd || !e->cq || !e->buf ||
	    ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		return -1;
	e->mr = ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	return e->mr ? 0 : -1;
}

static struct ibv_qp *rc_qp(struct end *e, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = BURST, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(e->pd, &ia);
}

static int connect_pair(struct ibv_qp *qa, struct end *a, struct ibv_qp *qb,
			struct end *b)
{
	struct tlib_rc_peer to_b = {
		.qpn = qb->qp_num, .gid = b->gid, .sgid_index = gid_index,
		.mtu = IBV_MTU_1024, .access = IBV_ACCESS_REMOTE_WRITE,
	};
	struct tlib_rc_peer to_a = to_b;
	const char *step;

	to_a.qpn = qa->qp_num;
	to_a.gid = a->gid;
	return tlib_rc_connect(qa, &to_b, &step) ||
	       tlib_rc_connect(qb, &to_a, &step);
}

/* Create, connect, post a burst, destroy: one round. */
static int round_once(struct end *a, struct end *b, unsigned int round)
{
	struct ibv_qp *qa, *qb;
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->buf, .length = 64, .lkey = a->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)b->buf,
			     .rkey = b->mr->rkey },
	}, *bad;
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	int i;

	qa = rc_qp(a, shared_cq);
	qb = rc_qp(b, b->cq);
	if (!qa || !qb)
		return -1;
	created[round] = qa->qp_num;
	__atomic_store_n(&n_created, round + 1, __ATOMIC_RELEASE);
	if (connect_pair(qa, a, qb, b))
		return -1;
	for (i = 0; i < BURST; i++) {
		wr.wr_id = wr_id_of(round, i);
		if (ibv_post_send(qa, &wr, &bad))
			break;
	}
	/* Half the time, destroy with everything still in flight. */
	if (round & 1)
		ibv_modify_qp(qa, &err, IBV_QP_STATE);
	if (ibv_destroy_qp(qa) || ibv_destroy_qp(qb))
		return -1;
	while (ibv_poll_cq(b->cq, 1, &wc) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	struct end a = {}, b = {};
	unsigned int round = 0;
	pthread_t thr;
	double end;
	int c, ok;

	while ((c = getopt(argc, argv, "a:b:g:s:")) != -1) {
		switch (c) {
		case 'a':
			dev_a = optarg;
			break;
		case 'b':
			dev_b = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		default:
			return 2;
		}
	}
	if (end_open(&a, dev_a) || end_open(&b, dev_b)) {
		printf("FAIL setup: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	shared_cq = a.cq;
	pthread_create(&thr, NULL, poller, NULL);
	end = now_s() + seconds;
	while (now_s() < end && n_created < MAX_QPS - 1)
		if (round_once(&a, &b, round++))
			break;
	stop = 1;
	pthread_join(thr, NULL);

	ok = round > 10 && !bogus && polled;
	printf("# %u rounds, %lu completions polled, %lu bogus\n", round,
	       polled, bogus);
	printf("%s cq_poll_survives_concurrent_qp_destroy%s\n",
	       ok ? "PASS" : "FAIL", ok ? "" : ": see the lines above");
	printf("%d passed, %d failed\n", ok, !ok);
	return ok ? 0 : 1;
}
