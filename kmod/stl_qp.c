// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: queue pairs.
 *
 * A virtual QP is a parent kernel QP in the virtual PD's parent PD; it takes
 * the parent QP's number, so peers (Stellar or not) address it unchanged.
 * The parent enforces the state machine; Stellar translates what names its
 * own objects (CQs, port, source GID) and refuses what it does not carry.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "kmod/stl.h"

#define STL_QP_ATTR_SUPPORTED                                                  \
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_EN_SQD_ASYNC_NOTIFY |           \
	 IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY |      \
	 IB_QP_AV | IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |          \
	 IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |              \
	 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |        \
	 IB_QP_DEST_QPN)

static void stl_qp_event(struct ib_event *ev, void *ctx)
{
	struct stl_qp *sqp = ctx;
	struct ib_event out = *ev;

	if (!sqp->ibqp.event_handler)
		return;
	out.device = sqp->ibqp.device;
	out.element.qp = &sqp->ibqp;
	sqp->ibqp.event_handler(&out, sqp->ibqp.qp_context);
}

/*
 * How long a parent QP moved to ERR is left before it is destroyed, where
 * the parent has STL_RXE_TASK_RACE: a packet that passed rxe's state check
 * just before the move runs the QP's task from the sender's context within
 * microseconds; this covers a virtual CPU the host stalls meanwhile.
 */
#define STL_QP_QUIESCE_MS	10

/**
 * stl_parent_qp_destroy() - destroy a parent QP that Stellar posts to no more
 * @sdev: the device whose parent holds the QP
 * @pqp: the parent QP
 *
 * On rxe parents before Linux 6.4 (STL_RXE_TASK_RACE) a QP that takes
 * packets (RTR and later, ERR included) is first moved to ERR, so that
 * rxe drops what arrives for it without running its tasks, and destroyed
 * STL_QP_QUIESCE_MS later, once what was already on its way has run: a
 * task of it still running as rxe's destroy_qp returns wrote into the freed
 * QP (a 6.1 guest with slab poisoning caught it, the peer sending as the
 * QP went).  The flush completions of the move are its own: callers mark
 * it dying on its CQs first (stl_cq_mark_dying()).
 *
 * Context: process; may sleep.
 * Return: ib_destroy_qp()'s result.
 */
int stl_parent_qp_destroy(struct stl_dev *sdev, struct ib_qp *pqp)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr = {};

	if (!STL_RXE_TASK_RACE ||
	    sdev->pdev->ops.driver_id != RDMA_DRIVER_RXE)
		return ib_destroy_qp(pqp);
	if (ib_query_qp(pqp, &attr, IB_QP_STATE, &init) ||
	    attr.qp_state == IB_QPS_RESET || attr.qp_state == IB_QPS_INIT)
		return ib_destroy_qp(pqp);
	if (attr.qp_state != IB_QPS_ERR) {
		attr.qp_state = IB_QPS_ERR;
		if (ib_modify_qp(pqp, &attr, IB_QP_STATE))
			ibdev_warn_ratelimited(&sdev->ibdev,
					       "parent QP %u: move to ERR before destroy failed\n",
					       pqp->qp_num);
	}
	msleep(STL_QP_QUIESCE_MS);
	return ib_destroy_qp(pqp);
}

static int stl_check_qp_init(struct stl_dev *sdev,
			     const struct ib_qp_init_attr *init)
{
	const struct ib_device_attr *pa = &sdev->pdev->attrs;
	const struct ib_qp_cap *cap = &init->cap;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	default:
		stl_dbg(sdev, "QP type %d not supported\n", init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->rwq_ind_tbl || init->xrcd)
		return -EOPNOTSUPP;
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (cap->max_send_wr > pa->max_qp_wr ||
	    cap->max_recv_wr > pa->max_qp_wr ||
	    cap->max_send_sge > pa->max_send_sge ||
	    cap->max_recv_sge > pa->max_recv_sge ||
	    cap->max_inline_data > STELLAR_MAX_INLINE_DATA) {
		stl_dbg(sdev, "QP caps above the device limits\n");
		return -EINVAL;
	}
	return 0;
}

/* Module memory of a QP made for @init (kmem_quota). */
static u64 stl_qp_kmem(struct stl_dev *sdev, const struct ib_qp_init_attr *init)
{
	return sizeof(struct stl_qp) + 2 * sizeof(struct stl_cq_qref) +
	       (init->qp_type == IB_QPT_RC &&
		READ_ONCE(sdev->spray_paths) > 1 ? spray_qp_kmem() : 0) +
	       stl_ring_qp_kmem(init, min_t(u32, init->cap.max_inline_data,
					    STELLAR_MAX_INLINE_DATA));
}

int stl_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibqp->device);
	struct stl_pd *spd = to_stl_pd(ibqp->pd);
	struct stl_qp *sqp = to_stl_qp(ibqp);
	struct ib_qp_init_attr pinit = {};
	struct stl_cq *scq, *rcq;
	struct ib_qp *pqp;
	u32 made;
	int ret;

	if (!stl_udata_empty(udata))
		return -EINVAL;
	/* A QP on an SRQ has no receive queue of its own. */
	if (init->srq) {
		init->cap.max_recv_wr = 0;
		init->cap.max_recv_sge = 0;
	}
	ret = stl_check_qp_init(sdev, init);
	if (ret)
		return ret;
	mutex_init(&sqp->modify_lock);
	ret = stl_obj_charge(sdev, STL_OBJ_QP);
	if (ret)
		return ret;
	/* Both bounded by max_qp_wr above: no overflow. */
	sqp->charged = init->cap.max_send_wr + init->cap.max_recv_wr;
	ret = stl_quota_charge(sdev, false, sqp->charged);
	if (ret)
		goto err_count;
	sqp->kmem = stl_qp_kmem(sdev, init);
	ret = stl_kmem_charge(sdev, sqp->kmem);
	if (ret) {
		stl_quota_uncharge(sdev, false, sqp->charged);
		goto err_count;
	}

	scq = to_stl_cq(init->send_cq);
	rcq = to_stl_cq(init->recv_cq);
	sqp->sref = stl_cq_qref_get(scq);
	sqp->rref = rcq == scq ? sqp->sref : stl_cq_qref_get(rcq);
	if (!sqp->sref || !sqp->rref) {
		ret = -ENOMEM;
		goto err_refs;
	}

	pinit.event_handler = stl_qp_event;
	pinit.qp_context = sqp;
	pinit.send_cq = scq->pcq;
	pinit.recv_cq = rcq->pcq;
	pinit.cap = init->cap;
	if (init->srq)
		pinit.srq = to_stl_srq(init->srq)->psrq;
	/* Rings of 2^n entries hold 2^n - 1: the parent as many. */
	pinit.cap.max_send_wr =
		roundup_pow_of_two(init->cap.max_send_wr + 1) - 1;
	if (!init->srq)
		pinit.cap.max_recv_wr =
			roundup_pow_of_two(init->cap.max_recv_wr + 1) - 1;
	if (pinit.cap.max_send_wr > sdev->pdev->attrs.max_qp_wr ||
	    pinit.cap.max_recv_wr > sdev->pdev->attrs.max_qp_wr) {
		ret = -EINVAL;
		goto err_refs;
	}
	pinit.sq_sig_type = init->sq_sig_type;
	pinit.qp_type = init->qp_type;
	pinit.port_num = sdev->pport;

	mutex_lock(&sdev->qp_lifecycle);
	pqp = ib_create_qp(spd->ppd, &pinit);
	mutex_unlock(&sdev->qp_lifecycle);
	if (IS_ERR(pqp)) {
		ret = PTR_ERR(pqp);
		stl_dbg(sdev, "parent QP creation failed: %d\n", ret);
		goto err_refs;
	}
	sqp->sref->stub.qp_num = pqp->qp_num;
	sqp->rref->stub.qp_num = pqp->qp_num;
	sqp->sref->stub.qp_type = init->qp_type;
	sqp->rref->stub.qp_type = init->qp_type;
	/* The parent may round its queues up: charge what it made. */
	made = pinit.cap.max_send_wr + pinit.cap.max_recv_wr;
	stl_quota_uncharge(sdev, false, (s64)sqp->charged - made);
	sqp->charged = made;

	sqp->pqp = pqp;
	sqp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	sqp->max_send_sge = pinit.cap.max_send_sge;
	sqp->max_recv_sge = pinit.cap.max_recv_sge;
	sqp->max_inline = min_t(u32, pinit.cap.max_inline_data,
				STELLAR_MAX_INLINE_DATA);
	init->cap = pinit.cap;
	init->cap.max_inline_data = sqp->max_inline;
	ibqp->qp_num = pqp->qp_num;
	ret = spray_qp_create(sqp, sdev, init->cap.max_send_wr);
	if (ret)
		goto err_destroy;
	ret = stl_ring_qp_create(sqp, init, udata);
	if (ret) {
		spray_qp_destroy(sqp);
		goto err_destroy;
	}
	return 0;

err_destroy:
	/* No completion can name it yet: nothing was posted. */
	mutex_lock(&sdev->qp_lifecycle);
	stl_cq_mark_dying(scq, pqp);
	if (rcq != scq)
		stl_cq_mark_dying(rcq, pqp);
	stl_parent_qp_destroy(sdev, pqp);
	stl_cq_drain_qp(scq, true);
	if (rcq != scq)
		stl_cq_drain_qp(rcq, true);
	mutex_unlock(&sdev->qp_lifecycle);

err_refs:
	if (sqp->sref)
		stl_cq_qref_put(scq, sqp->sref);
	if (sqp->rref && rcq != scq)
		stl_cq_qref_put(rcq, sqp->rref);
	stl_quota_uncharge(sdev, false, sqp->charged);
	stl_kmem_uncharge(sdev, sqp->kmem);
err_count:
	stl_obj_uncharge(sdev, STL_OBJ_QP);
	return ret;
}

int stl_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibqp->device);
	struct stl_qp *sqp = to_stl_qp(ibqp);
	struct ib_qp_attr pattr;
	int ret;

	if (!stl_udata_empty(udata))
		return -EINVAL;
	if (mask & ~STL_QP_ATTR_SUPPORTED)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	/*
	 * Controlled Q_Keys belong to privileged users (IBTA 10.2.5), by the
	 * rule ib_core applies to its own devices: CAP_NET_RAW, or anyone
	 * after `rdma system set privileged-qkey on`.
	 */
	if ((mask & IB_QP_QKEY) && (attr->qkey & 0x80000000) &&
	    !rdma_nl_get_privileged_qkey()) {
		stl_dbg(sdev, "QP %u: controlled Q_Key 0x%x refused\n",
			ibqp->qp_num, attr->qkey);
		return -EPERM;
	}

	pattr = *attr;
	if (mask & IB_QP_PORT)
		pattr.port_num = sdev->pport;
	if (mask & IB_QP_AV) {
		ret = stl_ah_to_parent(sdev, &attr->ah_attr, &pattr.ah_attr);
		if (ret)
			return ret;
	}
	/*
	 * uverbs lets threads modify one QP at once; the parent's state and
	 * its GID reference change as one step here (see @modify_lock).
	 */
	mutex_lock(&sqp->modify_lock);
	ret = ib_modify_qp(sqp->pqp, &pattr, mask);
	if (!ret && (mask & IB_QP_QKEY))
		WRITE_ONCE(sqp->qkey, attr->qkey);
	if (!ret)
		stl_ring_qp_modified(sqp, attr, mask);
	if (!ret)
		spray_qp_modified(sqp, attr, &pattr, mask);
	mutex_unlock(&sqp->modify_lock);
	if (mask & IB_QP_AV)
		rdma_destroy_ah_attr(&pattr.ah_attr);
	if (ret)
		stl_dbg(sdev, "QP %u modify (mask 0x%x) failed: %d\n",
			ibqp->qp_num, mask, ret);
	return ret;
}

int stl_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init)
{
	struct stl_dev *sdev = to_stl_dev(ibqp->device);
	struct stl_qp *sqp = to_stl_qp(ibqp);
	int ret;

	ret = ib_query_qp(sqp->pqp, attr, mask, init);
	if (ret)
		return ret;
	stl_ah_from_parent(sdev, &attr->ah_attr);
	attr->port_num = 1;
	init->cap.max_inline_data = sqp->max_inline;
	attr->cap.max_inline_data = sqp->max_inline;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->qp_context = ibqp->qp_context;
	init->event_handler = ibqp->event_handler;
	init->port_num = 1;
	return 0;
}

int stl_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibqp->device);
	struct stl_cq *scq = to_stl_cq(ibqp->send_cq);
	struct stl_cq *rcq = to_stl_cq(ibqp->recv_cq);
	struct stl_qp *sqp = to_stl_qp(ibqp);
	int ret;

	/*
	 * Its paths first: their exchange names QP 0.  The send ring's pull
	 * posts through them: not while they go (sq.mutex).
	 */
	stl_ring_qp_unlist(sqp);
	mutex_lock(&sqp->sq.mutex);
	spray_qp_destroy(sqp);
	mutex_unlock(&sqp->sq.mutex);
	mutex_lock(&sdev->qp_lifecycle);
	/* From here on, pollers name its completions without reading it. */
	stl_cq_mark_dying(scq, sqp->pqp);
	if (rcq != scq)
		stl_cq_mark_dying(rcq, sqp->pqp);
	/* Its work reads the parent QP: not any more (no completion queues it). */
	cancel_work_sync(&sqp->work);
	ret = stl_parent_qp_destroy(sdev, sqp->pqp);
	if (ret)
		ibdev_err_ratelimited(&sdev->ibdev,
				      "parent QP %u destroy failed (%d): QP and its completions kept\n",
				      ibqp->qp_num, ret);
	/* The mark ends; the QP's entries go only if it is gone. */
	stl_cq_drain_qp(scq, !ret);
	if (rcq != scq)
		stl_cq_drain_qp(rcq, !ret);
	mutex_unlock(&sdev->qp_lifecycle);
	if (ret)
		return ret;
	stl_ring_qp_destroy(sqp);
	stl_cq_qref_put(scq, sqp->sref);
	if (rcq != scq)
		stl_cq_qref_put(rcq, sqp->rref);
	stl_quota_uncharge(sdev, false, sqp->charged);
	stl_kmem_uncharge(sdev, sqp->kmem);
	stl_obj_uncharge(sdev, STL_OBJ_QP);
	return 0;
}
