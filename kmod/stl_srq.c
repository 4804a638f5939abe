// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: shared receive queues.
 *
 * A virtual SRQ is a parent kernel SRQ in the virtual PD's parent PD.  QPs
 * created on it get the parent SRQ.  The process fills a ring and Stellar
 * takes its entries (stl_ring.c; POST_SRQ_RECV with no request is the
 * doorbell, stl_post_srq_recv()).  Each entry is checked (lkeys of this
 * PD, bounds, access) before the parent sees it.  The parent's limit event is passed on.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "kmod/stl.h"

static void stl_srq_event(struct ib_event *ev, void *ctx)
{
	struct stl_srq *ssrq = ctx;
	struct ib_event out = *ev;

	if (!ssrq->ibsrq.event_handler)
		return;
	out.device = ssrq->ibsrq.device;
	out.element.srq = &ssrq->ibsrq;
	ssrq->ibsrq.event_handler(&out, ssrq->ibsrq.srq_context);
}

/**
 * stl_create_srq() - create a shared receive queue
 * @ibsrq: the core's object
 * @init: type and capacities; set to what was made
 * @udata: the command (no driver data) and, for a device with rings, the
 *	response naming the ring to map (struct rxe_create_srq_resp)
 *
 * Return: 0, -EOPNOTSUPP for an XRC or tag-matching SRQ, -EINVAL for
 * capacities above the device's, -ENOMEM over the device's limits or
 * quota, or what the parent returned.
 */
int stl_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibsrq->device);
	struct stl_pd *spd = to_stl_pd(ibsrq->pd);
	struct stl_srq *ssrq = to_stl_srq(ibsrq);
	const struct ib_device_attr *pa = &sdev->pdev->attrs;
	struct ib_srq_init_attr pinit = {};
	struct ib_srq *psrq;
	int ret;

	if (!stl_udata_empty(udata))
		return -EINVAL;
	if (init->srq_type != IB_SRQT_BASIC) {
		stl_dbg(sdev, "SRQ type %d not supported\n", init->srq_type);
		return -EOPNOTSUPP;
	}
	if (!init->attr.max_wr || init->attr.max_wr > pa->max_srq_wr ||
	    init->attr.max_sge > pa->max_srq_sge ||
	    init->attr.srq_limit > init->attr.max_wr) {
		stl_dbg(sdev, "SRQ caps above the device limits\n");
		return -EINVAL;
	}
	ret = stl_obj_charge(sdev, STL_OBJ_SRQ);
	if (ret)
		return ret;

	pinit.event_handler = stl_srq_event;
	pinit.srq_context = ssrq;
	pinit.srq_type = IB_SRQT_BASIC;
	pinit.attr = init->attr;
	/* A ring of 2^n entries holds 2^n - 1: the parent as many. */
	pinit.attr.max_wr =
		roundup_pow_of_two(init->attr.max_wr + 1) - 1;
	if (pinit.attr.max_wr > pa->max_srq_wr ||
	    pinit.attr.max_wr >= STL_RING_MAX_ENTRIES) {
		ret = -EINVAL;
		goto err_count;
	}
	ssrq->charged = pinit.attr.max_wr;
	ret = stl_quota_charge(sdev, false, ssrq->charged);
	if (ret)
		goto err_count;
	ssrq->kmem = sizeof(*ssrq);
	ssrq->kmem += stl_ring_srq_kmem(pinit.attr.max_wr,
					pinit.attr.max_sge);
	ret = stl_kmem_charge(sdev, ssrq->kmem);
	if (ret)
		goto err_charge;

	psrq = ib_create_srq(spd->ppd, &pinit);
	if (IS_ERR(psrq)) {
		ret = PTR_ERR(psrq);
		stl_dbg(sdev, "parent SRQ creation failed: %d\n", ret);
		goto err_kmem;
	}
	ssrq->psrq = psrq;
	/* The parent may round up: charge what it made. */
	stl_quota_uncharge(sdev, false, (s64)ssrq->charged - pinit.attr.max_wr);
	ssrq->charged = pinit.attr.max_wr;
	ssrq->max_sge = pinit.attr.max_sge;
	init->attr.max_wr = pinit.attr.max_wr;
	init->attr.max_sge = pinit.attr.max_sge;
	ret = stl_ring_srq_create(ssrq, init, udata);
	if (ret)
		goto err_destroy;
	return 0;

err_destroy:
	ib_destroy_srq_user(psrq, NULL);
err_kmem:
	stl_kmem_uncharge(sdev, ssrq->kmem);
err_charge:
	stl_quota_uncharge(sdev, false, ssrq->charged);
err_count:
	stl_obj_uncharge(sdev, STL_OBJ_SRQ);
	return ret;
}

/**
 * stl_modify_srq() - arm the limit event
 * @ibsrq: the SRQ
 * @attr: the new limit (IB_SRQ_LIMIT)
 * @mask: which of @attr
 * @udata: the command; its driver data is ignored
 *
 * The limit is the parent's: Stellar moves entries to the parent as they
 * are posted, so the parent holds what the SRQ holds.  Resizing
 * (IB_SRQ_MAX_WR) is -EOPNOTSUPP: the ring is mapped at a fixed size.
 *
 * Return: 0 or -errno.
 */
int stl_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibsrq->device);
	struct stl_srq *ssrq = to_stl_srq(ibsrq);
	struct ib_srq_attr pattr = *attr;
	int ret;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if ((mask & IB_SRQ_LIMIT) && attr->srq_limit > ssrq->charged)
		return -EINVAL;
	ret = ib_modify_srq(ssrq->psrq, &pattr, mask);
	if (ret)
		stl_dbg(sdev, "SRQ modify (mask 0x%x) failed: %d\n", mask, ret);
	return ret;
}

int stl_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct stl_srq *ssrq = to_stl_srq(ibsrq);
	int ret;

	ret = ib_query_srq(ssrq->psrq, attr);
	if (ret)
		return ret;
	if (ssrq->rq.ring.hdr)
		attr->max_wr = ssrq->rq.ring.mask;
	return 0;
}

int stl_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibsrq->device);
	struct stl_srq *ssrq = to_stl_srq(ibsrq);
	int ret;

	stl_ring_srq_destroy(ssrq);
	/* No QP uses it any more: the core counts them. */
	ret = ib_destroy_srq_user(ssrq->psrq, NULL);
	if (ret) {
		/* Kept, as is its ring: nothing takes entries to it now. */
		ibdev_err_ratelimited(&sdev->ibdev,
				      "parent SRQ destroy failed: %d\n", ret);
		return ret;
	}
	stl_ring_srq_free(ssrq);
	stl_quota_uncharge(sdev, false, ssrq->charged);
	stl_kmem_uncharge(sdev, ssrq->kmem);
	stl_obj_uncharge(sdev, STL_OBJ_SRQ);
	return 0;
}

/**
 * stl_post_srq_recv() - the SRQ ring's doorbell
 * @ibsrq: the SRQ
 * @wr: NULL (POST_SRQ_RECV with no request): take the ring now
 * @bad_wr: set to @wr if there is one
 *
 * An SRQ takes receives from its ring only.
 *
 * Return: 0, or -EINVAL for a request list.
 */
int stl_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	stl_ring_srq_doorbell(to_stl_srq(ibsrq));
	return 0;
}
