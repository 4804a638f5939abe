// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs_smoke DEVICE [GID_INDEX]: every verb libstellar implements, once,
 * against a real device (run in the test VM), plus the errno conventions of
 * what it leaves out.  The data path is checked by content: an RC QP
 * connected to itself RDMA-WRITEs one buffer into another and SENDs to its
 * own receive queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "stl_tlib.h"

static int failures;

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s (errno %d: %s)\n",     \
				__func__, __LINE__, #cond, errno,              \
				strerror(errno));                              \
			failures++;                                            \
		}                                                              \
	} while (0)

#define BUF_SIZE 4096

struct smoke {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;		/* [0, BUF_SIZE): source, [BUF_SIZE, 2*BUF_SIZE): sink */
	union ibv_gid gid;
	int gid_index;
};

/* Wait (bounded) for one completion; returns its status or -1. */
static int wait_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec start, now;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return -1;
		if (n == 1)
			return wc->status;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 10)
			return -1;
	}
}

static void query_device_reports_fw_and_limits(struct smoke *s)
{
	struct ibv_device_attr attr;

	EXPECT(ibv_query_device(s->ctx, &attr) == 0);
	EXPECT(attr.fw_ver[0] != '\0');
	EXPECT(attr.max_qp > 0 && attr.max_cqe > 0 && attr.max_mr > 0);
	EXPECT(attr.phys_port_cnt == 1);
}

static void query_port_reports_active_roce(struct smoke *s)
{
	struct ibv_port_attr pattr;

	EXPECT(ibv_query_port(s->ctx, 1, &pattr) == 0);
	EXPECT(pattr.state == IBV_PORT_ACTIVE);
	EXPECT(pattr.link_layer == IBV_LINK_LAYER_ETHERNET);
	EXPECT(ibv_query_gid(s->ctx, 1, s->gid_index, &s->gid) == 0);
}

static void create_cq_honours_size_and_channel(struct smoke *s)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;

	ch = ibv_create_comp_channel(s->ctx);
	EXPECT(ch != NULL);
	cq = ibv_create_cq(s->ctx, 16, NULL, ch, 0);
	EXPECT(cq != NULL);
	if (cq) {
		EXPECT(cq->cqe >= 16);
		EXPECT(cq->channel == ch);
		EXPECT(ibv_req_notify_cq(cq, 0) == 0);
		EXPECT(ibv_destroy_cq(cq) == 0);
	}
	if (ch)
		EXPECT(ibv_destroy_comp_channel(ch) == 0);
}

static void create_qp_returns_granted_caps(struct smoke *s)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC,
						  IBV_QPT_UD };
	unsigned int i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = s->cq, .recv_cq = s->cq,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = types[i],
		};
		struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

		EXPECT(qp != NULL);
		if (!qp)
			continue;
		EXPECT(qp->qp_type == types[i]);
		EXPECT(ia.cap.max_send_wr >= 8 && ia.cap.max_recv_wr >= 8);
		EXPECT(ia.cap.max_send_sge >= 1 && ia.cap.max_recv_sge >= 1);
		EXPECT(ibv_destroy_qp(qp) == 0);
	}
}

static void unsupported_verbs_fail_with_eopnotsupp(struct smoke *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_wc wc;

	errno = 0;
	EXPECT(ibv_create_qp(s->pd, &ia) == NULL && errno == EOPNOTSUPP);
	errno = 0;
	EXPECT(ibv_create_srq(s->pd, &sa) == NULL && errno == EOPNOTSUPP);
	errno = 0;
	EXPECT(ibv_alloc_mw(s->pd, IBV_MW_TYPE_1) == NULL && errno == EOPNOTSUPP);
	EXPECT(ibv_resize_cq(s->cq, 64) == EOPNOTSUPP);
	EXPECT(ibv_poll_cq(s->cq, -1, &wc) < 0);
}

static int connect_to_self(struct smoke *s)
{
	struct tlib_rc_peer self = {
		.qpn = s->qp->qp_num, .gid = s->gid,
		.sgid_index = s->gid_index, .mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	const char *step;

	return tlib_rc_connect(s->qp, &self, &step);
}

static void rc_self_write_and_send_deliver_bytes(struct smoke *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf, .length = 1000, .lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)s->buf + BUF_SIZE + 7,
			     .rkey = s->mr->rkey },
	}, *bad;
	struct ibv_sge rsge = {
		.addr = (uintptr_t)s->buf + BUF_SIZE + 2048, .length = 1024,
		.lkey = s->mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rsge, .num_sge = 1 },
			   *rbad;
	struct ibv_wc wc;
	int i;

	s->qp = ibv_create_qp(s->pd, &ia);
	EXPECT(s->qp != NULL);
	if (!s->qp)
		return;
	EXPECT(connect_to_self(s) == 0);
	EXPECT(ibv_query_qp(s->qp, &qa, IBV_QP_STATE, &qia) == 0);
	EXPECT(qa.qp_state == IBV_QPS_RTS);

	for (i = 0; i < BUF_SIZE; i++)
		s->buf[i] = (char)(i * 7 + 3);
	memset(s->buf + BUF_SIZE, 0, BUF_SIZE);

	EXPECT(ibv_post_send(s->qp, &wr, &bad) == 0);
	EXPECT(wait_one(s->cq, &wc) == IBV_WC_SUCCESS);
	EXPECT(wc.wr_id == 1 && wc.opcode == IBV_WC_RDMA_WRITE);
	EXPECT(memcmp(s->buf + BUF_SIZE + 7, s->buf, 1000) == 0);
	EXPECT(s->buf[BUF_SIZE + 6] == 0 && s->buf[BUF_SIZE + 1007] == 0);

	EXPECT(ibv_post_recv(s->qp, &rwr, &rbad) == 0);
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND;
	sge.length = 333;
	EXPECT(ibv_post_send(s->qp, &wr, &bad) == 0);
	for (i = 0; i < 2; i++) {
		EXPECT(wait_one(s->cq, &wc) == IBV_WC_SUCCESS);
		if (wc.wr_id == 2) {
			EXPECT(wc.opcode == IBV_WC_RECV);
			EXPECT(wc.byte_len == 333);
			EXPECT(wc.qp_num == s->qp->qp_num);
		} else {
			EXPECT(wc.wr_id == 3 && wc.opcode == IBV_WC_SEND);
		}
	}
	EXPECT(memcmp(s->buf + BUF_SIZE + 2048, s->buf, 333) == 0);
}

static void create_ah_for_own_gid(struct smoke *s)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = s->gid, .sgid_index = s->gid_index,
			 .hop_limit = 1 },
	};
	struct ibv_ah *ah = ibv_create_ah(s->pd, &aa);

	EXPECT(ah != NULL);
	if (ah)
		EXPECT(ibv_destroy_ah(ah) == 0);
}

int main(int argc, char **argv)
{
	struct ibv_device **list, *dev = NULL;
	struct smoke s = { .gid_index = argc > 2 ? atoi(argv[2]) : 1 };
	int i, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [GID_INDEX]\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "verbs_smoke: no device %s\n", argv[1]);
		return 1;
	}

	s.ctx = ibv_open_device(dev);
	EXPECT(s.ctx != NULL);
	if (!s.ctx)
		return 1;
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 64, NULL, NULL, 0);
	s.buf = aligned_alloc(4096, 2 * BUF_SIZE);
	s.mr = s.pd && s.buf ?
		ibv_reg_mr(s.pd, s.buf, 2 * BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ) : NULL;
	EXPECT(s.pd && s.cq && s.mr);
	if (!s.pd || !s.cq || !s.mr)
		return 1;

	query_device_reports_fw_and_limits(&s);
	query_port_reports_active_roce(&s);
	create_cq_honours_size_and_channel(&s);
	create_qp_returns_granted_caps(&s);
	unsupported_verbs_fail_with_eopnotsupp(&s);
	rc_self_write_and_send_deliver_bytes(&s);
	create_ah_for_own_gid(&s);

	if (s.qp)
		EXPECT(ibv_destroy_qp(s.qp) == 0);
	EXPECT(ibv_dereg_mr(s.mr) == 0);
	EXPECT(ibv_destroy_cq(s.cq) == 0);
	EXPECT(ibv_dealloc_pd(s.pd) == 0);
	EXPECT(ibv_close_device(s.ctx) == 0);
	ibv_free_device_list(list);
	free(s.buf);

	printf("verbs_smoke %s: %s\n", argv[1], failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
