// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: queue pairs and the ibv_qp_ex work-request builder.
 *
 * A QP's send and receive queues are rings the module maps into the
 * process, in the rxe user ABI's layout (struct rxe_send_wqe and struct
 * rxe_recv_wqe entries).  A send is written into the ring and the doorbell
 * rung: a POST_SEND command with no work request, on which the module
 * copies each new entry into its own memory, checks it and posts it to the
 * parent.  A receive is written into the ring with no system call at all:
 * the module takes receive entries at every doorbell of the process, on
 * receive completions and from a backstop.  The ibv_wr_* calls of an
 * extended QP are collected here and written as one batch, all or nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stellar.h"

_Static_assert(sizeof(struct rxe_sge) == sizeof(struct ibv_sge),
	       "SGEs are copied as they are");

union stellar_create_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_create_qp_resp)];
		struct rxe_create_qp_resp drv;
	};
};

/* ------------------------------------------------------------------ */
/* Rings                                                               */
/* ------------------------------------------------------------------ */

/* The producer index of @r (this side's), or -1 if the ring is full. */
static int64_t stellar_ring_next(const struct stellar_ring *r)
{
	uint32_t prod = r->q->producer_index & r->mask;
	uint32_t cons = __atomic_load_n(&r->q->consumer_index,
					__ATOMIC_ACQUIRE) & r->mask;

	return ((prod + 1) & r->mask) == cons ? -1 : (int64_t)prod;
}

/* Free entries of @r. */
static uint32_t stellar_ring_room(const struct stellar_ring *r)
{
	uint32_t prod = r->q->producer_index & r->mask;
	uint32_t cons = __atomic_load_n(&r->q->consumer_index,
					__ATOMIC_ACQUIRE) & r->mask;

	return (cons - prod - 1) & r->mask;
}

/* The entry at @prod is written: show it (after its bytes). */
static void stellar_ring_publish(struct stellar_ring *r, uint32_t prod)
{
	__atomic_store_n(&r->q->producer_index, (prod + 1) & r->mask,
			 __ATOMIC_RELEASE);
}

/* Bytes of @n SGEs, or -1 above what one request may move (2^31). */
static int64_t stellar_sge_bytes(const struct ibv_sge *sg, int n)
{
	uint64_t len = 0;
	int i;

	for (i = 0; i < n; i++)
		len += sg[i].length;
	return len > 0x80000000ULL ? -1 : (int64_t)len;
}

/**
 * stellar_ring_post_recv() - write receive requests into a receive ring
 * @r: the QP's or SRQ's receive ring (its lock held)
 * @max_sge: SGEs one request may have
 * @wr: the list
 * @bad_wr: set to the first request not posted
 *
 * Return: 0, ENOMEM (the ring is full) or EINVAL (too many SGEs).
 */
int stellar_ring_post_recv(struct stellar_ring *r, uint32_t max_sge,
			   struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct rxe_recv_wqe *wqe;
	int64_t prod, len;
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
		    (len = stellar_sge_bytes(wr->sg_list, wr->num_sge)) < 0) {
			ret = EINVAL;
			break;
		}
		prod = stellar_ring_next(r);
		if (prod < 0) {
			ret = ENOMEM;
			break;
		}
		wqe = stellar_ring_slot(r, (uint32_t)prod);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = wr->wr_id;
		wqe->dma.length = (uint32_t)len;
		wqe->dma.resid = (uint32_t)len;
		wqe->dma.num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(wqe->dma.sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct rxe_sge));
		stellar_ring_publish(r, (uint32_t)prod);
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

/*
 * Whether @wr can go into @qp's send ring: SGE count, inline length, the
 * opcode for the QP type, the AH of a UD request.  Returns 0 or EINVAL,
 * with the bytes it moves in *@len.
 */
static int stellar_send_check(const struct stellar_qp *qp,
			      const struct ibv_send_wr *wr, uint32_t *len)
{
	enum ibv_qp_type type = qp->vqp.qp.qp_type;
	int64_t n;

	if (wr->num_sge < 0)
		return EINVAL;
	n = stellar_sge_bytes(wr->sg_list, wr->num_sge);
	if (n < 0)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		if ((uint64_t)n > qp->max_inline)
			return EINVAL;
	} else if ((uint32_t)wr->num_sge > qp->max_send_sge) {
		return EINVAL;
	}
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (type == IBV_QPT_UD)
			return EINVAL;
		break;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
		if (type != IBV_QPT_RC)
			return EINVAL;
		break;
	case IBV_WR_BIND_MW:
		if (type == IBV_QPT_UD || !wr->bind_mw.mw)
			return EINVAL;
		break;
	case IBV_WR_LOCAL_INV:
		if (type == IBV_QPT_UD)
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	*len = (uint32_t)n;
	return 0;
}

/* Write checked request @wr (@len bytes) into send ring slot @wqe. */
static void stellar_send_build(const struct stellar_qp *qp,
			       const struct ibv_send_wr *wr, uint32_t len,
			       struct rxe_send_wqe *wqe)
{
	uint8_t *p;
	int i;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr.wr_id = wr->wr_id;
	wqe->wr.opcode = wr->opcode;
	wqe->wr.send_flags = wr->send_flags;
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->wr.ex.imm_data = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		wqe->wr.ex.invalidate_rkey = wr->invalidate_rkey;
		break;
	default:
		break;
	}
	if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

		wqe->wr.wr.mw.addr = bi->addr;
		wqe->wr.wr.mw.length = bi->length;
		wqe->wr.wr.mw.mr_lkey = bi->mr ? bi->mr->lkey : 0;
		wqe->wr.wr.mw.mw_rkey = wr->bind_mw.mw->rkey;
		wqe->wr.wr.mw.rkey = wr->bind_mw.rkey;
		wqe->wr.wr.mw.access = bi->mw_access_flags;
		return;
	}
	if (wr->opcode == IBV_WR_LOCAL_INV)
		return;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		wqe->wr.wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->wr.wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		wqe->wr.wr.ud.ah_num = to_stl_ah(wr->wr.ud.ah)->ah_num;
	} else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wqe->wr.wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.wr.atomic.rkey = wr->wr.atomic.rkey;
	} else {
		wqe->wr.wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.wr.rdma.rkey = wr->wr.rdma.rkey;
	}
	wqe->dma.length = len;
	wqe->dma.resid = len;
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* The bytes now: the buffers may be reused on return. */
		p = wqe->dma.inline_data;
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		return;
	}
	wqe->dma.num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(wqe->dma.sge, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(struct rxe_sge));
}

/*
 * Write @wr's list into the send ring and ring the doorbell.  With @whole,
 * all of it or nothing (ibv_wr_complete()): every request is checked and
 * room made sure of first.  Otherwise the requests before a refused one
 * are posted (ibv_post_send()).  *@bad is the first one not posted.
 */
static int stellar_sq_post(struct stellar_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad, bool whole)
{
	struct ibv_send_wr *w;
	uint32_t len, n = 0, posted = 0;
	int64_t prod;
	int ret = 0, db;

	pthread_spin_lock(&qp->sq_lock);
	if (whole) {
		for (w = wr; w && !ret; w = w->next, n++)
			ret = stellar_send_check(qp, w, &len);
		if (!ret && n > stellar_ring_room(&qp->sq))
			ret = ENOMEM;
		if (ret) {
			*bad = wr;
			pthread_spin_unlock(&qp->sq_lock);
			return ret;
		}
	}
	for (w = wr; w; w = w->next) {
		ret = stellar_send_check(qp, w, &len);
		if (ret)
			break;
		prod = stellar_ring_next(&qp->sq);
		if (prod < 0) {
			ret = ENOMEM;
			break;
		}
		stellar_send_build(qp, w, len,
				   stellar_ring_slot(&qp->sq, (uint32_t)prod));
		stellar_ring_publish(&qp->sq, (uint32_t)prod);
		posted++;
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (ret)
		*bad = w;
	if (!posted)
		return ret;
	db = stellar_doorbell(qp->vqp.qp.context, IB_USER_VERBS_CMD_POST_SEND,
			      qp->vqp.qp.handle);
	return ret ? ret : db;
}

/* ibv_post_send */
int stellar_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	return stellar_sq_post(to_stl_qp(ibqp), wr, bad_wr, false);
}

/*
 * ibv_bind_mw: a type 1 window bound by a send ring entry under the next
 * key (its tag moved on); the window takes that key once it is posted.
 */
int stellar_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		    struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	}, *bad;
	uint32_t rkey = (mw->rkey & ~0xffu) | ((mw->rkey + 1) & 0xffu);
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = stellar_sq_post(to_stl_qp(ibqp), &wr, &bad, false);
	if (!ret)
		mw->rkey = rkey;
	return ret;
}

/* ibv_post_recv: into the receive ring, no system call. */
int stellar_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct stellar_qp *qp = to_stl_qp(ibqp);
	struct ibv_recv_wr *first = wr;
	int ret, db;

	/* On an SRQ: ibv_post_srq_recv.  Not in RESET (IBA C10-97.2.1). */
	if (!qp->rq.q || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&qp->rq_lock);
	ret = stellar_ring_post_recv(&qp->rq, qp->max_recv_sge, wr, bad_wr);
	pthread_spin_unlock(&qp->rq_lock);
	/*
	 * UD and UC drop a message that finds no receive at the parent: ring
	 * for them (an RC message is retried after an RNR NAK, and the module
	 * takes the ring at the next send doorbell, on receive completions
	 * and from its backstop).
	 */
	if ((ret && *bad_wr == first) || ibqp->qp_type == IBV_QPT_RC)
		return ret;
	db = stellar_doorbell(ibqp->context, IB_USER_VERBS_CMD_POST_RECV,
			      ibqp->handle);
	return ret ? ret : db;
}

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
	if (!ret) {
		ret = pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
		if (ret)
			pthread_spin_destroy(&qp->wr_lock);
	}
	if (!ret) {
		ret = pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
		if (ret) {
			pthread_spin_destroy(&qp->sq_lock);
			pthread_spin_destroy(&qp->wr_lock);
		}
	}
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	return qp;
}

static void stellar_free_qp(struct stellar_qp *qp)
{
	stellar_ring_unmap(&qp->sq);
	stellar_ring_unmap(&qp->rq);
	pthread_spin_destroy(&qp->rq_lock);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->wr_lock);
	free(qp->wr);
	free(qp->sge);
	free(qp->inl);
	free(qp);
}

/*
 * Once the module granted @cap: map the rings it described in @drv, and
 * for an extended QP allocate the builder's arrays for a full send queue.
 */
static int stellar_qp_setup(struct stellar_qp *qp,
			    const struct rxe_create_qp_resp *drv,
			    const struct ibv_qp_cap *cap, bool has_srq,
			    bool qp_ex)
{
	struct ibv_context *ibctx = qp->vqp.qp.context;
	uint32_t sq_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	int ret;

	ret = stellar_ring_map(&qp->sq, ibctx, &drv->sq_mi);
	if (!ret && !has_srq)
		ret = stellar_ring_map(&qp->rq, ibctx, &drv->rq_mi);
	if (ret)
		return ret;
	qp->max_send_sge = cap->max_send_sge;
	qp->max_recv_sge = cap->max_recv_sge;
	qp->max_inline = cap->max_inline_data;
	if (!qp_ex)
		return 0;

	qp->max_sge = sq_sge;
	qp->wr_cap = cap->max_send_wr;
	qp->sge_cap = (size_t)qp->wr_cap * sq_sge;
	qp->inl_cap = (size_t)qp->wr_cap * qp->max_inline;
	/* Touched only as far as batches go: malloc, not calloc. */
	qp->wr = malloc((qp->wr_cap ? qp->wr_cap : 1) * sizeof(*qp->wr));
	qp->sge = malloc((qp->sge_cap ? qp->sge_cap : 1) * sizeof(*qp->sge));
	qp->inl = malloc(qp->inl_cap ? qp->inl_cap : 1);
	if (!qp->wr || !qp->sge || !qp->inl)
		return ENOMEM;
	return 0;
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
	union stellar_create_qp_resp resp = {};
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
				&resp.ibv_resp, sizeof(resp));
	if (ret) {
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}
	ret = stellar_qp_setup(qp, &resp.drv, &attr->cap, attr->srq, false);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
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
/* struct ibv_send_wr in the QP; wr_complete writes it into the send   */
/* ring, all of it or nothing, and rings the doorbell once.  Inline    */
/* data is copied here and handed on as one IBV_SEND_INLINE SGE, whose */
/* bytes go into the ring entry.  A builder call that fails only       */
/* records its errno: wr_complete reports the first one and posts      */
/* nothing.                                                            */
/* ------------------------------------------------------------------ */

static void stellar_wr_fail(struct stellar_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* Start a WR: opcode, and the wr_id and wr_flags the caller has set now. */
static struct ibv_send_wr *stellar_wr_new(struct ibv_qp_ex *qpx,
					  enum ibv_wr_opcode opcode)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;

	if (qp->wr_err)
		return NULL;
	/* A batch is posted at once: it cannot be longer than the SQ. */
	if (qp->nwr >= qp->wr_cap) {
		stellar_wr_fail(qp, ENOMEM);
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

/* The whole batch, or nothing (man ibv_wr_post). */
static int stellar_wr_complete(struct ibv_qp_ex *qpx)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct ibv_send_wr *bad;
	size_t i;
	int ret = qp->wr_err;

	for (i = 0; !ret && i < qp->nwr; i++) {
		struct stellar_pending_wr *p = &qp->wr[i];
		struct ibv_send_wr *wr = &p->wr;

		wr->sg_list = wr->num_sge ? &qp->sge[p->sge_first] : NULL;
		if (p->is_inline && wr->num_sge)
			qp->sge[p->sge_first] = (struct ibv_sge){
				.addr = (uintptr_t)(qp->inl + p->inl_off),
				.length = p->inl_len,
			};
		wr->next = i + 1 < qp->nwr ? &qp->wr[i + 1].wr : NULL;
	}
	if (!ret && qp->nwr)
		ret = stellar_sq_post(qp, &qp->wr[0].wr, &bad, true);

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

/* The receiving side checks what it may invalidate. */
static void stellar_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
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

	p = stellar_wr_cur(qp);
	if (!p)
		return;
	/* More than the QP has: the module would refuse the WR anyway. */
	if (num_sge > qp->max_sge) {
		stellar_wr_fail(qp, EINVAL);
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
	/* Each WR has max_inline bytes and max_sge >= 1 SGEs reserved. */
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

/* A window bind (type 2, or type 1 through the builder) as a ring entry. */
static void stellar_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			       uint32_t rkey,
			       const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, IBV_WR_BIND_MW);

	if (!wr)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *bind_info;
}

static void stellar_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
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

/* ibv_wr_atomic_write() is there from rdma-core 44, ibv_wr_flush() from 45. */
#if STELLAR_RDMA_CORE_RELEASE >= 44
static void stellar_wr_refuse_atomic_write(struct ibv_qp_ex *qpx,
					   uint32_t rkey, uint64_t remote_addr,
					   const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	stellar_wr_refuse(qpx);
}
#endif

#if STELLAR_RDMA_CORE_RELEASE >= 45
static void stellar_wr_refuse_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, size_t len,
				    uint8_t type, uint8_t level)
{
	(void)rkey;
	(void)remote_addr;
	(void)len;
	(void)type;
	(void)level;
	stellar_wr_refuse(qpx);
}
#endif

/* The send_ops_flags each QP type can have: what the module posts. */
#define STELLAR_SEND_OPS_UD                                                    \
	((uint64_t)(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM))
#define STELLAR_SEND_OPS_UC                                                    \
	(STELLAR_SEND_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE |                     \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_BIND_MW |         \
	 IBV_QP_EX_WITH_LOCAL_INV)
#define STELLAR_SEND_OPS_ATOMIC                                                \
	((uint64_t)(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                        \
		    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
#define STELLAR_SEND_OPS_RC                                                    \
	(STELLAR_SEND_OPS_UC | IBV_QP_EX_WITH_RDMA_READ |                      \
	 IBV_QP_EX_WITH_SEND_WITH_INV | STELLAR_SEND_OPS_ATOMIC)

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

	qpx->wr_send_inv = ops & IBV_QP_EX_WITH_SEND_WITH_INV ?
			   stellar_wr_send_inv : stellar_wr_refuse_rkey;

	qpx->wr_bind_mw = ops & IBV_QP_EX_WITH_BIND_MW ?
			  stellar_wr_bind_mw : stellar_wr_refuse_bind_mw;
	qpx->wr_local_inv = ops & IBV_QP_EX_WITH_LOCAL_INV ?
			    stellar_wr_local_inv : stellar_wr_refuse_rkey;

	/* Never offered (refused at create time): fail the batch if called. */
	qpx->wr_send_tso = stellar_wr_refuse_tso;
	qpx->wr_set_xrc_srqn = stellar_wr_refuse_rkey;
#if STELLAR_RDMA_CORE_RELEASE >= 44
	qpx->wr_atomic_write = stellar_wr_refuse_atomic_write;
#endif
#if STELLAR_RDMA_CORE_RELEASE >= 45
	qpx->wr_flush = stellar_wr_refuse_flush;
#endif

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
	uint64_t sup;

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
	if ((ops & STELLAR_SEND_OPS_ATOMIC) &&
	    to_stl_ctx(ibctx)->atomic_cap == IBV_ATOMIC_NONE)
		return EOPNOTSUPP;
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
	union stellar_create_qp_resp resp = {};
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
				   &resp.ibv_resp, sizeof(resp));
	if (ret) {
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}
	attr->cap = kattr.cap;
	ret = stellar_qp_setup(qp, &resp.drv, &kattr.cap, kattr.srq, qp_ex);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}

	if (qp_ex) {
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
