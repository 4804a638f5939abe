// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs_smoke DEVICE [GID_INDEX]: every verb libstellar implements, once,
 * against a real device (run in the test VM), plus the errno conventions of
 * what it leaves out.  The data path is checked by content: an RC QP
 * connected to itself RDMA-WRITEs one buffer into another and SENDs to its
 * own receive queue.  The same is done again through the extended API
 * (ibv_create_cq_ex + ibv_start_poll, ibv_create_qp_ex + ibv_wr_*), with
 * RDMA READ, immediate data, inline data, atomics and a UD send as well.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
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
	struct ibv_wc wc;

	errno = 0;
	EXPECT(ibv_create_qp(s->pd, &ia) == NULL && errno == EOPNOTSUPP);
	EXPECT(ibv_poll_cq(s->cq, -1, &wc) < 0);
}

/* Windows of both types come and go; a CQ grows to what is asked. */
static void windows_and_cq_resize(struct smoke *s)
{
	struct ibv_cq *cq = ibv_create_cq(s->ctx, 8, NULL, NULL, 0);
	struct ibv_mw *mw1, *mw2;

	mw1 = ibv_alloc_mw(s->pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	EXPECT(mw1 && mw1->type == IBV_MW_TYPE_1);
	EXPECT(mw2 && mw2->type == IBV_MW_TYPE_2);
	if (mw1)
		EXPECT(ibv_dealloc_mw(mw1) == 0);
	if (mw2)
		EXPECT(ibv_dealloc_mw(mw2) == 0);
	EXPECT(cq);
	if (!cq)
		return;
	EXPECT(ibv_resize_cq(cq, 300) == 0 && cq->cqe >= 300);
	EXPECT(ibv_destroy_cq(cq) == 0);
}

/* A basic SRQ: made at least as large as asked, queried, armed, destroyed. */
static void srq_create_query_modify_destroy(struct smoke *s)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq_attr qa = {}, ma = { .srq_limit = 1 };
	struct ibv_srq *srq;

	srq = ibv_create_srq(s->pd, &sa);
	EXPECT(srq);
	if (!srq)
		return;
	EXPECT(sa.attr.max_wr >= 4 && sa.attr.max_sge >= 1);
	EXPECT(ibv_query_srq(srq, &qa) == 0 && qa.max_wr >= 4 && qa.srq_limit == 0);
	EXPECT(ibv_modify_srq(srq, &ma, IBV_SRQ_LIMIT) == 0);
	EXPECT(ibv_query_srq(srq, &qa) == 0 && qa.srq_limit == 1);
	EXPECT(ibv_destroy_srq(srq) == 0);
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

/* ------------------------------------------------------------------ */
/* Extended API: ibv_cq_ex polling, ibv_qp_ex work-request builder      */
/* ------------------------------------------------------------------ */

/* One completion as the ibv_cq_ex readers report it. */
struct ex_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm;		/* host order */
	uint32_t qp_num;
	unsigned int wc_flags;
};

static void ex_read(struct ibv_cq_ex *cq, struct ex_wc *wc)
{
	wc->wr_id = cq->wr_id;
	wc->status = cq->status;
	wc->opcode = ibv_wc_read_opcode(cq);
	wc->byte_len = ibv_wc_read_byte_len(cq);
	wc->wc_flags = ibv_wc_read_wc_flags(cq);
	wc->imm = wc->wc_flags & IBV_WC_WITH_IMM ?
		  be32toh(ibv_wc_read_imm_data(cq)) : 0;
	wc->qp_num = ibv_wc_read_qp_num(cq);
	(void)ibv_wc_read_vendor_err(cq);
	(void)ibv_wc_read_src_qp(cq);
	(void)ibv_wc_read_slid(cq);
	(void)ibv_wc_read_sl(cq);
	(void)ibv_wc_read_dlid_path_bits(cq);
}

/*
 * Collect @n completions through start_poll/next_poll/end_poll, waiting at
 * most 10 s.  Returns how many were read; a start_poll or next_poll error
 * other than ENOENT stops it.
 */
static int ex_poll(struct ibv_cq_ex *cq, struct ex_wc *wc, int n)
{
	struct ibv_poll_cq_attr attr = {};
	struct timespec start, now;
	int got = 0, ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (got < n) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == 0) {
			ex_read(cq, &wc[got++]);
			while (got < n) {
				ret = ibv_next_poll(cq);
				if (ret)
					break;
				ex_read(cq, &wc[got++]);
			}
			ibv_end_poll(cq);
		}
		if (ret && ret != ENOENT) {
			errno = ret;
			return got;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (got < n && now.tv_sec - start.tv_sec > 10)
			break;
	}
	return got;
}

/* Nothing more must complete: start_poll says ENOENT. */
static int ex_cq_empty(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr attr = {};
	int ret = ibv_start_poll(cq, &attr);

	if (ret == 0)
		ibv_end_poll(cq);
	return ret == ENOENT;
}

static void cq_ex_refuses_what_it_cannot_report(struct smoke *s)
{
	static const uint64_t refused[] = {
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG,
		IBV_WC_EX_WITH_TM_INFO,
	};
	struct ibv_cq_init_attr_ex ca = { .cqe = 8 };
	struct ibv_poll_cq_attr pa = { .comp_mask = 1 };
	struct ibv_cq_ex *cq;
	unsigned int i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ca.wc_flags = IBV_WC_STANDARD_FLAGS | refused[i];
		errno = 0;
		EXPECT(ibv_create_cq_ex(s->ctx, &ca) == NULL &&
		       errno == EOPNOTSUPP);
	}

	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	EXPECT(ibv_create_cq_ex(s->ctx, &ca) == NULL && errno == EOPNOTSUPP);
	ca.comp_mask = 1u << 20;
	errno = 0;
	EXPECT(ibv_create_cq_ex(s->ctx, &ca) == NULL && errno == EINVAL);

	/* Single-threaded is a hint: accepted; an empty CQ says ENOENT. */
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	cq = ibv_create_cq_ex(s->ctx, &ca);
	EXPECT(cq != NULL);
	if (!cq)
		return;
	EXPECT(ibv_cq_ex_to_cq(cq)->cqe >= 8);
	EXPECT(ex_cq_empty(cq));
	EXPECT(ibv_start_poll(cq, &pa) == EINVAL);
	EXPECT(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
}

static void qp_ex_refuses_unsupported_send_ops(struct smoke *s)
{
	static const struct {
		enum ibv_qp_type type;
		uint64_t ops;
	} refused[] = {
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE },
	};
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = s->cq, .recv_cq = s->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.pd = s->pd,
	};
	struct ibv_qp *qp;
	unsigned int i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ia.qp_type = refused[i].type;
		ia.comp_mask = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = refused[i].ops;
		errno = 0;
		qp = ibv_create_qp_ex(s->ctx, &ia);
		EXPECT(qp == NULL && errno == EOPNOTSUPP);
		if (qp)
			ibv_destroy_qp(qp);
	}

	/* Without SEND_OPS_FLAGS an extended create gives a plain QP. */
	ia.qp_type = IBV_QPT_RC;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.create_flags = 0;
	qp = ibv_create_qp_ex(s->ctx, &ia);
	EXPECT(qp != NULL);
	if (qp) {
		EXPECT(ibv_qp_to_qp_ex(qp) == NULL);
		EXPECT(ibv_destroy_qp(qp) == 0);
	}
	ia.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	EXPECT(ibv_create_qp_ex(s->ctx, &ia) == NULL && errno == EOPNOTSUPP);
	ia.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;	/* no PD */
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND;
	errno = 0;
	EXPECT(ibv_create_qp_ex(s->ctx, &ia) == NULL && errno == EINVAL);
}

#define QPX_OPS                                                                \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |      \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |             \
	 IBV_QP_EX_WITH_SEND_WITH_INV)
#define QPX_ATOMIC_OPS                                                         \
	(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |                                 \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)

static void post_one_recv(struct smoke *s, struct ibv_qp *qp, uint64_t wr_id,
			  char *addr, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	EXPECT(ibv_post_recv(qp, &wr, &bad) == 0);
}

/* Find the completion with @wr_id among @n. */
static const struct ex_wc *ex_find(const struct ex_wc *wc, int n,
				   uint64_t wr_id)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].wr_id == wr_id)
			return &wc[i];
	return NULL;
}

static void rc_qp_ex_write_send_imm_read(struct smoke *s)
{
	char *src = s->buf, *dst = s->buf + BUF_SIZE;
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 32, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = s->pd,
		.send_ops_flags = QPX_OPS,
	};
	struct tlib_rc_peer self = {
		.gid = s->gid, .sgid_index = s->gid_index, .mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_device_attr dattr;
	const struct ex_wc *w;
	struct ibv_sge sgl[2];
	struct ibv_data_buf inl[2] = {
		{ .addr = "stellar-", .length = 8 },
		{ .addr = "inline", .length = 6 },
	};
	struct ex_wc wc[4];
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;
	uint64_t *atom = NULL;
	struct ibv_mr *amr = NULL;
	const char *step;
	bool atomics;
	int i, n;

	EXPECT(ibv_query_device(s->ctx, &dattr) == 0);
	atomics = dattr.atomic_cap != IBV_ATOMIC_NONE;
	if (atomics)
		ia.send_ops_flags |= QPX_ATOMIC_OPS;

	cq = ibv_create_cq_ex(s->ctx, &ca);
	EXPECT(cq != NULL);
	if (!cq)
		return;
	ia.send_cq = ibv_cq_ex_to_cq(cq);
	ia.recv_cq = ibv_cq_ex_to_cq(cq);
	qp = ibv_create_qp_ex(s->ctx, &ia);
	EXPECT(qp != NULL);
	if (!qp)
		goto out_cq;
	EXPECT(ia.cap.max_inline_data >= 14);
	qpx = ibv_qp_to_qp_ex(qp);
	EXPECT(qpx != NULL);
	if (!qpx)
		goto out_qp;
	self.qpn = qp->qp_num;
	EXPECT(tlib_rc_connect(qp, &self, &step) == 0);

	for (i = 0; i < BUF_SIZE; i++)
		src[i] = (char)(i * 13 + 5);
	memset(dst, 0, BUF_SIZE);

	/* RDMA WRITE: bytes land at the offset, nothing around them. */
	ibv_wr_start(qpx);
	qpx->wr_id = 101;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, s->mr->rkey, (uintptr_t)dst + 3);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src, 1500);
	EXPECT(ibv_wr_complete(qpx) == 0);
	n = ex_poll(cq, wc, 1);
	EXPECT(n == 1);
	if (n == 1) {
		EXPECT(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 101);
		EXPECT(wc[0].opcode == IBV_WC_RDMA_WRITE);
		EXPECT(wc[0].qp_num == qp->qp_num);
	}
	EXPECT(memcmp(dst + 3, src, 1500) == 0);
	EXPECT(dst[2] == 0 && dst[1503] == 0);

	/* SEND with immediate, from a two-entry SGE list. */
	memset(dst, 0, BUF_SIZE);
	post_one_recv(s, qp, 200, dst + 2048, 1024);
	sgl[0] = (struct ibv_sge){ .addr = (uintptr_t)src, .length = 100,
				   .lkey = s->mr->lkey };
	sgl[1] = (struct ibv_sge){ .addr = (uintptr_t)src + 500, .length = 77,
				   .lkey = s->mr->lkey };
	ibv_wr_start(qpx);
	qpx->wr_id = 102;
	qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send_imm(qpx, htobe32(0x5eed1234));
	ibv_wr_set_sge_list(qpx, 2, sgl);
	EXPECT(ibv_wr_complete(qpx) == 0);
	n = ex_poll(cq, wc, 2);
	EXPECT(n == 2);
	w = ex_find(wc, n, 200);
	EXPECT(w != NULL);
	if (w) {
		EXPECT(w->status == IBV_WC_SUCCESS);
		EXPECT(w->opcode == IBV_WC_RECV);
		EXPECT(w->byte_len == 177);
		EXPECT(w->wc_flags & IBV_WC_WITH_IMM);
		EXPECT(w->imm == 0x5eed1234);
		EXPECT(w->qp_num == qp->qp_num);
	}
	w = ex_find(wc, n, 102);
	EXPECT(w != NULL);
	if (w)
		EXPECT(w->status == IBV_WC_SUCCESS && w->opcode == IBV_WC_SEND);
	EXPECT(memcmp(dst + 2048, src, 100) == 0);
	EXPECT(memcmp(dst + 2148, src + 500, 77) == 0);

	/* RDMA READ of the source into the sink. */
	memset(dst, 0, BUF_SIZE);
	ibv_wr_start(qpx);
	qpx->wr_id = 103;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qpx, s->mr->rkey, (uintptr_t)src + 1000);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)dst + 10, 2000);
	EXPECT(ibv_wr_complete(qpx) == 0);
	n = ex_poll(cq, wc, 1);
	EXPECT(n == 1);
	if (n == 1) {
		EXPECT(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 103);
		EXPECT(wc[0].opcode == IBV_WC_RDMA_READ);
		EXPECT(wc[0].byte_len == 2000);
	}
	EXPECT(memcmp(dst + 10, src + 1000, 2000) == 0);
	EXPECT(dst[9] == 0 && dst[2010] == 0);

	/*
	 * One batch of three: an unsignaled inline WRITE (two buffers), a
	 * WRITE whose SGE is set twice (the second counts), and a signaled
	 * WRITE with immediate consuming a receive.  wr_id and wr_flags are
	 * taken at each op call.
	 */
	memset(dst, 0, BUF_SIZE);
	post_one_recv(s, qp, 201, dst + 3000, 16);
	ibv_wr_start(qpx);
	qpx->wr_id = 104;
	qpx->wr_flags = 0;
	ibv_wr_rdma_write(qpx, s->mr->rkey, (uintptr_t)dst);
	ibv_wr_set_inline_data_list(qpx, 2, inl);
	qpx->wr_id = 105;
	ibv_wr_rdma_write(qpx, s->mr->rkey, (uintptr_t)dst + 100);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src + 7, 5);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src, 50);
	qpx->wr_id = 106;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(qpx, s->mr->rkey, (uintptr_t)dst + 200,
			      htobe32(77));
	ibv_wr_set_inline_data(qpx, src + 64, 32);
	EXPECT(ibv_wr_complete(qpx) == 0);
	n = ex_poll(cq, wc, 2);
	EXPECT(n == 2);
	w = ex_find(wc, n, 106);
	EXPECT(w && w->status == IBV_WC_SUCCESS &&
	       w->opcode == IBV_WC_RDMA_WRITE);
	w = ex_find(wc, n, 201);
	EXPECT(w && w->status == IBV_WC_SUCCESS &&
	       w->opcode == IBV_WC_RECV_RDMA_WITH_IMM && w->imm == 77 &&
	       (w->wc_flags & IBV_WC_WITH_IMM));
	EXPECT(ex_find(wc, n, 104) == NULL && ex_find(wc, n, 105) == NULL);
	EXPECT(memcmp(dst, "stellar-inline", 14) == 0 && dst[14] == 0);
	EXPECT(memcmp(dst + 100, src, 50) == 0 && dst[150] == 0);
	EXPECT(memcmp(dst + 200, src + 64, 32) == 0 && dst[232] == 0);
	EXPECT(ex_cq_empty(cq));

	/* A refused op fails the whole batch at wr_complete: nothing posted. */
	memset(dst, 0, BUF_SIZE);
	ibv_wr_start(qpx);
	qpx->wr_id = 107;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, s->mr->rkey, (uintptr_t)dst);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src, 64);
	ibv_wr_send(qpx);		/* not in send_ops_flags */
	EXPECT(ibv_wr_complete(qpx) == EOPNOTSUPP);
	ibv_wr_start(qpx);
	ibv_wr_local_inv(qpx, s->mr->rkey);	/* never offered */
	EXPECT(ibv_wr_complete(qpx) == EOPNOTSUPP);
	ibv_wr_start(qpx);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src, 64); /* no WR */
	EXPECT(ibv_wr_complete(qpx) == EINVAL);
	/* Inline above what the QP was granted. */
	ibv_wr_start(qpx);
	ibv_wr_rdma_write(qpx, s->mr->rkey, (uintptr_t)dst);
	ibv_wr_set_inline_data(qpx, src, ia.cap.max_inline_data + 1);
	EXPECT(ibv_wr_complete(qpx) == EINVAL);
	/* wr_abort drops what was built. */
	ibv_wr_start(qpx);
	qpx->wr_id = 108;
	ibv_wr_rdma_write(qpx, s->mr->rkey, (uintptr_t)dst);
	ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src, 64);
	ibv_wr_abort(qpx);
	/* An empty batch posts nothing and succeeds. */
	ibv_wr_start(qpx);
	EXPECT(ibv_wr_complete(qpx) == 0);
	EXPECT(ex_cq_empty(cq));
	for (i = 0; i < 64; i++)
		if (dst[i])
			break;
	EXPECT(i == 64);

	/* Atomics, where the device has them. */
	if (atomics) {
		atom = aligned_alloc(64, 64);
		amr = atom ? ibv_reg_mr(s->pd, atom, 64,
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_ATOMIC) : NULL;
		EXPECT(amr != NULL);
	}
	if (amr) {
		atom[0] = 40;
		atom[1] = 0;
		ibv_wr_start(qpx);
		qpx->wr_id = 109;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_fetch_add(qpx, amr->rkey, (uintptr_t)&atom[0], 2);
		ibv_wr_set_sge(qpx, amr->lkey, (uintptr_t)&atom[1], 8);
		EXPECT(ibv_wr_complete(qpx) == 0);
		n = ex_poll(cq, wc, 1);
		EXPECT(n == 1 && wc[0].wr_id == 109 &&
		       wc[0].status == IBV_WC_SUCCESS &&
		       wc[0].opcode == IBV_WC_FETCH_ADD);
		EXPECT(atom[0] == 42 && atom[1] == 40);

		ibv_wr_start(qpx);
		qpx->wr_id = 110;
		ibv_wr_atomic_cmp_swp(qpx, amr->rkey, (uintptr_t)&atom[0], 42,
				      7);
		ibv_wr_set_sge(qpx, amr->lkey, (uintptr_t)&atom[2], 8);
		EXPECT(ibv_wr_complete(qpx) == 0);
		n = ex_poll(cq, wc, 1);
		EXPECT(n == 1 && wc[0].wr_id == 110 &&
		       wc[0].status == IBV_WC_SUCCESS &&
		       wc[0].opcode == IBV_WC_COMP_SWAP);
		EXPECT(atom[0] == 7 && atom[2] == 42);
		EXPECT(ibv_dereg_mr(amr) == 0);
	} else if (!atomics) {
		struct ibv_qp *aqp;

		ia.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		errno = 0;
		aqp = ibv_create_qp_ex(s->ctx, &ia);
		EXPECT(aqp == NULL && errno == EOPNOTSUPP);
		if (aqp)
			ibv_destroy_qp(aqp);
	}
	free(atom);

	/* The plain verbs still work on an extended QP and CQ. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)src, .length = 20,
				       .lkey = s->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 111, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)dst + 500,
				     .rkey = s->mr->rkey },
		}, *bad;
		struct ibv_wc pwc;

		EXPECT(ibv_post_send(qp, &wr, &bad) == 0);
		EXPECT(wait_one(ibv_cq_ex_to_cq(cq), &pwc) == IBV_WC_SUCCESS);
		EXPECT(pwc.wr_id == 111);
		EXPECT(memcmp(dst + 500, src, 20) == 0);
	}

	/*
	 * SEND with Invalidate naming an MR (to this QP itself): posted and
	 * completed, but the receive fails with REM_INV_REQ_ERR (a peer may
	 * invalidate type 2 windows only).  Last: the MR's key is restored
	 * in the background, so it is an MR of its own.
	 */
	{
		struct ibv_mr *vmr = ibv_reg_mr(s->pd, dst + 3584, 512,
						IBV_ACCESS_LOCAL_WRITE |
						IBV_ACCESS_REMOTE_WRITE);

		EXPECT(vmr != NULL);
		if (vmr) {
			post_one_recv(s, qp, 202, dst + 3072, 64);
			ibv_wr_start(qpx);
			qpx->wr_id = 112;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send_inv(qpx, vmr->rkey);
			ibv_wr_set_sge(qpx, s->mr->lkey, (uintptr_t)src, 16);
			EXPECT(ibv_wr_complete(qpx) == 0);
			n = ex_poll(cq, wc, 2);
			EXPECT(n == 2);
			/*
			 * The refused invalidation fails the receiving QP,
			 * which is this one: the SEND's own completion may
			 * come before that (done) or after (flushed).
			 */
			w = ex_find(wc, n, 112);
			EXPECT(w && ((w->status == IBV_WC_SUCCESS &&
				      w->opcode == IBV_WC_SEND) ||
				     w->status == IBV_WC_WR_FLUSH_ERR));
			w = ex_find(wc, n, 202);
			EXPECT(w && w->status == IBV_WC_REM_INV_REQ_ERR);
			EXPECT(ibv_dereg_mr(vmr) == 0);
		}
	}

out_qp:
	EXPECT(ibv_destroy_qp(qp) == 0);
out_cq:
	EXPECT(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
}

static int ud_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* UD through ibv_wr_*: wr_set_ud_addr, inline data, and no-AH refusal. */
static void ud_qp_ex_send_to_self(struct smoke *s)
{
	char *dst = s->buf + BUF_SIZE;
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
				       IBV_WC_EX_WITH_SRC_QP,
	};
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = s->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_IMM,
	};
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = s->gid, .sgid_index = s->gid_index,
			 .hop_limit = 1 },
	};
	struct ex_wc wc[2];
	const struct ex_wc *w;
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	int n;

	cq = ibv_create_cq_ex(s->ctx, &ca);
	EXPECT(cq != NULL);
	if (!cq)
		return;
	ia.send_cq = ibv_cq_ex_to_cq(cq);
	ia.recv_cq = ibv_cq_ex_to_cq(cq);
	qp = ibv_create_qp_ex(s->ctx, &ia);
	EXPECT(qp != NULL);
	ah = ibv_create_ah(s->pd, &aa);
	EXPECT(ah != NULL);
	qpx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	EXPECT(qpx != NULL);
	if (!qpx || !ah)
		goto out;
	EXPECT(ud_to_rts(qp) == 0);

	memset(dst, 0, BUF_SIZE);
	post_one_recv(s, qp, 300, dst, 40 + 256);

	/* No address: refused before anything reaches the module. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, "x", 1);
	EXPECT(ibv_wr_complete(qpx) == EINVAL);

	ibv_wr_start(qpx);
	qpx->wr_id = 301;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qpx, htobe32(9));
	ibv_wr_set_ud_addr(qpx, ah, qp->qp_num, 0x11111111);
	ibv_wr_set_inline_data(qpx, "datagram", 8);
	EXPECT(ibv_wr_complete(qpx) == 0);
	n = ex_poll(cq, wc, 2);
	EXPECT(n == 2);
	w = ex_find(wc, n, 300);
	EXPECT(w && w->status == IBV_WC_SUCCESS && w->opcode == IBV_WC_RECV &&
	       w->byte_len == 40 + 8 && w->imm == 9);
	w = ex_find(wc, n, 301);
	EXPECT(w && w->status == IBV_WC_SUCCESS && w->opcode == IBV_WC_SEND);
	EXPECT(memcmp(dst + 40, "datagram", 8) == 0);
out:
	if (ah)
		EXPECT(ibv_destroy_ah(ah) == 0);
	if (qp)
		EXPECT(ibv_destroy_qp(qp) == 0);
	EXPECT(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
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
	windows_and_cq_resize(&s);
	srq_create_query_modify_destroy(&s);
	rc_self_write_and_send_deliver_bytes(&s);
	create_ah_for_own_gid(&s);
	cq_ex_refuses_what_it_cannot_report(&s);
	qp_ex_refuses_unsupported_send_ops(&s);
	rc_qp_ex_write_send_imm_read(&s);
	ud_qp_ex_send_to_self(&s);

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
