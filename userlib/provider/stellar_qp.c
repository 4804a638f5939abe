// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: queue pairs and the ibv_qp_ex work-request builder.
 *
 * Every QP is one ib_uverbs QP; the ibv_wr_* calls of an extended QP are
 * collected here and posted with the same POST_SEND command as
 * ibv_post_send.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stellar.h"

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */
/* ------------------------------------------------------------------ */

static struct stellar_qp *stellar_alloc_qp(void)
{
	struct stellar_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = pthread_spin_init(&qp->wr_lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	return qp;
}

static void stellar_free_qp(struct stellar_qp *qp)
{
	pthread_spin_destroy(&qp->wr_lock);
	free(qp->wr);
	free(qp->sge);
	free(qp->inl);
	free(qp);
}

static bool stellar_qp_type_ok(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		return true;
	default:
		return false;
	}
}

struct ibv_qp *stellar_create_qp(struct ibv_pd *pd,
				 struct ibv_qp_init_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd = {};
	struct stellar_qp *qp;
	int ret;

	if (!stellar_qp_type_ok(attr->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	qp = stellar_alloc_qp();
	if (!qp)
		return NULL;

	/* On success attr->cap holds the capacities the module granted. */
	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp, sizeof(resp));
	if (ret) {
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

/* ------------------------------------------------------------------ */
/* The ibv_qp_ex work-request builder                                  */
/*                                                                     */
/* Between wr_start and wr_complete the ibv_wr_* calls build a list of */
/* struct ibv_send_wr in the QP; wr_complete posts it with POST_SEND,  */
/* the same command as ibv_post_send.  Inline data is copied here and  */
/* handed to the module as one IBV_SEND_INLINE SGE, which the module   */
/* copies in turn before POST_SEND returns.  A builder call that fails */
/* only records its errno: wr_complete reports the first one and posts */
/* nothing.                                                            */
/* ------------------------------------------------------------------ */

/* WRs per POST_SEND at most: libibverbs builds that command on the stack. */
#define STELLAR_WR_CHUNK 256

static void stellar_wr_fail(struct stellar_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* Room for @need more @size-byte elements in *@arr, which holds *@cap. */
static int stellar_grow(void **arr, size_t *cap, size_t used, size_t need,
			size_t size)
{
	size_t ncap;
	void *p;

	if (need <= *cap - used)
		return 0;
	if (need > SIZE_MAX / size - used)
		return ENOMEM;
	ncap = *cap ? *cap : 16;
	while (ncap - used < need) {
		if (ncap > SIZE_MAX / 2 / size)
			return ENOMEM;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * size);
	if (!p)
		return ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Start a WR: opcode, and the wr_id and wr_flags the caller has set now. */
static struct ibv_send_wr *stellar_wr_new(struct ibv_qp_ex *qpx,
					  enum ibv_wr_opcode opcode)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;
	int ret;

	if (qp->wr_err)
		return NULL;
	ret = stellar_grow((void **)&qp->wr, &qp->wr_cap, qp->nwr, 1,
			   sizeof(*qp->wr));
	if (ret) {
		stellar_wr_fail(qp, ret);
		return NULL;
	}

	p = &qp->wr[qp->nwr++];
	*p = (struct stellar_pending_wr){
		.wr = {
			.wr_id = qpx->wr_id,
			.opcode = opcode,
			/* Inline comes from wr_set_inline_data*, not wr_flags. */
			.send_flags = qpx->wr_flags &
				      ~(unsigned int)IBV_SEND_INLINE,
		},
		.sge_first = qp->nsge,
		.inl_off = qp->inl_len,
	};
	return &p->wr;
}

/*
 * The WR the data setters apply to: the last one started.  Its SGEs and
 * inline bytes are the last in their arrays, so setting them again just
 * drops the previous ones.
 */
static struct stellar_pending_wr *stellar_wr_cur(struct stellar_qp *qp)
{
	struct stellar_pending_wr *p;

	if (qp->wr_err)
		return NULL;
	if (!qp->nwr) {
		stellar_wr_fail(qp, EINVAL);
		return NULL;
	}
	p = &qp->wr[qp->nwr - 1];
	qp->nsge = p->sge_first;
	qp->inl_len = p->inl_off;
	p->is_inline = false;
	p->inl_len = 0;
	p->wr.num_sge = 0;
	p->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
	return p;
}

static void stellar_wr_start(struct ibv_qp_ex *qpx)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);

	pthread_spin_lock(&qp->wr_lock);
	qp->wr_err = 0;
	qp->nwr = 0;
	qp->nsge = 0;
	qp->inl_len = 0;
}

static void stellar_wr_reset_unlock(struct stellar_qp *qp)
{
	qp->wr_err = 0;
	qp->nwr = 0;
	qp->nsge = 0;
	qp->inl_len = 0;
	pthread_spin_unlock(&qp->wr_lock);
}

static void stellar_wr_abort(struct ibv_qp_ex *qpx)
{
	stellar_wr_reset_unlock(to_stl_qp_ex(qpx));
}

static int stellar_wr_complete(struct ibv_qp_ex *qpx)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct ibv_send_wr *bad;
	size_t i, first;
	int ret = qp->wr_err;

	for (i = 0; !ret && i < qp->nwr; i++) {
		struct stellar_pending_wr *p = &qp->wr[i];
		struct ibv_send_wr *wr = &p->wr;

		/* POST_SEND on a UD QP reads every WR's AH handle. */
		if (qpx->qp_base.qp_type == IBV_QPT_UD && !wr->wr.ud.ah) {
			ret = EINVAL;
			break;
		}
		wr->sg_list = wr->num_sge ? &qp->sge[p->sge_first] : NULL;
		if (p->is_inline && wr->num_sge)
			qp->sge[p->sge_first] = (struct ibv_sge){
				.addr = (uintptr_t)(qp->inl + p->inl_off),
				.length = p->inl_len,
			};
		wr->next = (i + 1) % STELLAR_WR_CHUNK && i + 1 < qp->nwr ?
			   &qp->wr[i + 1].wr : NULL;
	}

	/* In order; the module stops at the first WR it refuses, as we do. */
	for (first = 0; !ret && first < qp->nwr; first += STELLAR_WR_CHUNK)
		ret = ibv_cmd_post_send(&qpx->qp_base, &qp->wr[first].wr, &bad);

	stellar_wr_reset_unlock(qp);
	return ret;
}

static void stellar_wr_send(struct ibv_qp_ex *qpx)
{
	stellar_wr_new(qpx, IBV_WR_SEND);
}

static void stellar_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void stellar_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			    uint32_t rkey, uint64_t remote_addr,
			    __be32 imm_data)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->wr.rdma.rkey = rkey;
	wr->imm_data = imm_data;
}

static void stellar_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr)
{
	stellar_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void stellar_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, __be32 imm_data)
{
	stellar_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
			imm_data);
}

static void stellar_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr)
{
	stellar_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void stellar_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			      uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
	wr->wr.atomic.rkey = rkey;
}

static void stellar_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare,
				      uint64_t swap)
{
	stellar_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			  compare, swap);
}

static void stellar_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	stellar_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			  add, 0);
}

/* UD only: on RC/UC the address union holds the RDMA/atomic target. */
static void stellar_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct ibv_send_wr *wr;

	if (qp->wr_err)
		return;
	if (!qp->nwr) {
		stellar_wr_fail(qp, EINVAL);
		return;
	}
	if (qpx->qp_base.qp_type != IBV_QPT_UD)
		return;
	if (!ah) {
		stellar_wr_fail(qp, EINVAL);
		return;
	}
	wr = &qp->wr[qp->nwr - 1].wr;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

static void stellar_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				    const struct ibv_sge *sg_list)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;
	int ret;

	p = stellar_wr_cur(qp);
	if (!p)
		return;
	if (num_sge > INT32_MAX) {
		stellar_wr_fail(qp, EINVAL);
		return;
	}
	ret = stellar_grow((void **)&qp->sge, &qp->sge_cap, qp->nsge, num_sge,
			   sizeof(*qp->sge));
	if (ret) {
		stellar_wr_fail(qp, ret);
		return;
	}
	if (num_sge)
		memcpy(&qp->sge[qp->nsge], sg_list, num_sge * sizeof(*sg_list));
	qp->nsge += num_sge;
	p->wr.num_sge = (int)num_sge;
}

static void stellar_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			       uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = { .addr = addr, .length = length,
				     .lkey = lkey };

	stellar_wr_set_sge_list(qpx, 1, &sge);
}

static void stellar_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					    size_t num_buf,
					    const struct ibv_data_buf *buf_list)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;
	size_t i, total = 0;
	int ret;

	p = stellar_wr_cur(qp);
	if (!p)
		return;
	/* The module's limit, checked here so that the batch fails early. */
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - total) {
			stellar_wr_fail(qp, EINVAL);
			return;
		}
		total += buf_list[i].length;
	}
	ret = stellar_grow((void **)&qp->inl, &qp->inl_cap, qp->inl_len, total,
			   1);
	if (!ret)
		ret = stellar_grow((void **)&qp->sge, &qp->sge_cap, qp->nsge, 1,
				   sizeof(*qp->sge));
	if (ret) {
		stellar_wr_fail(qp, ret);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (!buf_list[i].length)
			continue;
		memcpy(qp->inl + qp->inl_len, buf_list[i].addr,
		       buf_list[i].length);
		qp->inl_len += buf_list[i].length;
	}
	p->is_inline = true;
	p->inl_len = (uint32_t)total;
	p->wr.send_flags |= IBV_SEND_INLINE;
	/* One SGE over the copy, filled in by wr_complete; none if empty. */
	if (total) {
		qp->nsge++;
		p->wr.num_sge = 1;
	}
}

static void stellar_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				       size_t length)
{
	const struct ibv_data_buf buf = { .addr = addr, .length = length };

	stellar_wr_set_inline_data_list(qpx, 1, &buf);
}

/*
 * What the device cannot do, or the QP was not created for: the call
 * still fails the batch rather than crash on a NULL pointer.
 */
static void stellar_wr_refuse(struct ibv_qp_ex *qpx)
{
	stellar_wr_fail(to_stl_qp_ex(qpx), EOPNOTSUPP);
}

static void stellar_wr_refuse_rkey(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_rdma(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr)
{
	(void)rkey;
	(void)remote_addr;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_rdma_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				       uint64_t remote_addr, __be32 imm_data)
{
	(void)rkey;
	(void)remote_addr;
	(void)imm_data;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	(void)imm_data;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare,
				      uint64_t swap)
{
	(void)rkey;
	(void)remote_addr;
	(void)compare;
	(void)swap;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	(void)rkey;
	(void)remote_addr;
	(void)add;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
				      uint32_t rkey,
				      const struct ibv_mw_bind_info *bind_info)
{
	(void)mw;
	(void)rkey;
	(void)bind_info;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_tso(struct ibv_qp_ex *qpx, void *hdr,
				  uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_atomic_write(struct ibv_qp_ex *qpx,
					   uint32_t rkey, uint64_t remote_addr,
					   const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	stellar_wr_refuse(qpx);
}

/* The send_ops_flags each QP type can have: what the module posts. */
#define STELLAR_SEND_OPS_UD                                                    \
	((uint64_t)(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM))
#define STELLAR_SEND_OPS_UC                                                    \
	(STELLAR_SEND_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE |                     \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define STELLAR_SEND_OPS_ATOMIC                                                \
	((uint64_t)(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                        \
		    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
#define STELLAR_SEND_OPS_RC                                                    \
	(STELLAR_SEND_OPS_UC | IBV_QP_EX_WITH_RDMA_READ |                      \
	 STELLAR_SEND_OPS_ATOMIC)

static void stellar_set_send_ops(struct stellar_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qpx->wr_start = stellar_wr_start;
	qpx->wr_complete = stellar_wr_complete;
	qpx->wr_abort = stellar_wr_abort;

	qpx->wr_send = ops & IBV_QP_EX_WITH_SEND ?
		       stellar_wr_send : stellar_wr_refuse;
	qpx->wr_send_imm = ops & IBV_QP_EX_WITH_SEND_WITH_IMM ?
			   stellar_wr_send_imm : stellar_wr_refuse_imm;
	qpx->wr_rdma_write = ops & IBV_QP_EX_WITH_RDMA_WRITE ?
			     stellar_wr_rdma_write : stellar_wr_refuse_rdma;
	qpx->wr_rdma_write_imm = ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM ?
				 stellar_wr_rdma_write_imm :
				 stellar_wr_refuse_rdma_imm;
	qpx->wr_rdma_read = ops & IBV_QP_EX_WITH_RDMA_READ ?
			    stellar_wr_rdma_read : stellar_wr_refuse_rdma;
	qpx->wr_atomic_cmp_swp = ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP ?
				 stellar_wr_atomic_cmp_swp :
				 stellar_wr_refuse_cmp_swp;
	qpx->wr_atomic_fetch_add = ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD ?
				   stellar_wr_atomic_fetch_add :
				   stellar_wr_refuse_fetch_add;

	/* Never offered (refused at create time): fail the batch if called. */
	qpx->wr_bind_mw = stellar_wr_refuse_bind_mw;
	qpx->wr_local_inv = stellar_wr_refuse_rkey;
	qpx->wr_send_inv = stellar_wr_refuse_rkey;
	qpx->wr_send_tso = stellar_wr_refuse_tso;
	qpx->wr_set_xrc_srqn = stellar_wr_refuse_rkey;
	qpx->wr_atomic_write = stellar_wr_refuse_atomic_write;

	qpx->wr_set_ud_addr = stellar_wr_set_ud_addr;
	qpx->wr_set_sge = stellar_wr_set_sge;
	qpx->wr_set_sge_list = stellar_wr_set_sge_list;
	qpx->wr_set_inline_data = stellar_wr_set_inline_data;
	qpx->wr_set_inline_data_list = stellar_wr_set_inline_data_list;
}

/* 0, or the errno with which send_ops_flags @ops are refused on @attr's QP. */
static int stellar_check_send_ops(struct ibv_context *ibctx,
				  const struct ibv_qp_init_attr_ex *attr,
				  uint64_t ops)
{
	struct ibv_device_attr dattr;
	uint64_t sup;
	int ret;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
		sup = STELLAR_SEND_OPS_RC;
		break;
	case IBV_QPT_UC:
		sup = STELLAR_SEND_OPS_UC;
		break;
	default:
		sup = STELLAR_SEND_OPS_UD;
		break;
	}
	if (ops & ~sup)
		return EOPNOTSUPP;

	/* The module posts atomics only if the device underneath has them. */
	if (ops & STELLAR_SEND_OPS_ATOMIC) {
		ret = ibv_query_device(ibctx, &dattr);
		if (ret)
			return ret;
		if (dattr.atomic_cap == IBV_ATOMIC_NONE)
			return EOPNOTSUPP;
	}
	return 0;
}

#define STELLAR_QP_COMP_MASK_KNOWN                                             \
	((uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |              \
		    IBV_QP_INIT_ATTR_CREATE_FLAGS |                            \
		    IBV_QP_INIT_ATTR_MAX_TSO_HEADER |                          \
		    IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |    \
		    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))

struct ibv_qp *stellar_create_qp_ex(struct ibv_context *ibctx,
				    struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd = {};
	struct ibv_qp_init_attr_ex kattr;
	struct stellar_qp *qp;
	bool qp_ex;
	int ret;

	if (attr->comp_mask & ~STELLAR_QP_COMP_MASK_KNOWN) {
		errno = EINVAL;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	/* XRC, TSO and RSS have no Stellar counterpart, nor create flags. */
	if ((attr->comp_mask & (IBV_QP_INIT_ATTR_XRCD |
				IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				IBV_QP_INIT_ATTR_IND_TABLE |
				IBV_QP_INIT_ATTR_RX_HASH)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    !stellar_qp_type_ok(attr->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp_ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (qp_ex) {
		ret = stellar_check_send_ops(ibctx, attr, attr->send_ops_flags);
		if (ret) {
			errno = ret;
			return NULL;
		}
	}

	qp = stellar_alloc_qp();
	if (!qp)
		return NULL;

	/* The kernel sees a plain QP; send_ops_flags stay in userspace. */
	kattr = *attr;
	kattr.comp_mask = IBV_QP_INIT_ATTR_PD;
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd, sizeof(cmd),
				   &resp, sizeof(resp));
	if (ret) {
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}
	attr->cap = kattr.cap;

	if (qp_ex) {
		qp->max_inline = kattr.cap.max_inline_data;
		stellar_set_send_ops(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;
}

int stellar_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int stellar_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

int stellar_destroy_qp(struct ibv_qp *ibqp)
{
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	stellar_free_qp(to_stl_qp(ibqp));
	return 0;
}
