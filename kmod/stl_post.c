// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: posting work requests.
 *
 * A process writes its work requests into the rings it maps (stl_ring.c);
 * POST_SEND, POST_RECV and POST_SRQ_RECV with no request are its
 * doorbells.  Each request is copied out of the ring into the module's
 * memory and checked here before the parent sees it: every local SGE must
 * be found in this device's MR table, in the QP's PD, inside the MR and
 * with the access the operation needs (the parent PD also holds
 * kernel-owned keys that a user must never name).  Inline data is handed
 * to the parent from the module's copy, because a parent kernel QP reads
 * inline SGEs as kernel pointers.  A UD work request naming a controlled
 * Q_Key (MSB set) from an unprivileged user is sent with the QP's own
 * Q_Key instead (IBTA 10.2.5, as mlx5 hardware does).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/uaccess.h>

#include "kmod/stl.h"

/**
 * stl_check_sge() - validate one local SGE of a user work request
 * @sdev: the device
 * @spd: the PD of the QP the request is posted to; NULL: any PD
 * @sge: the SGE (user address, Stellar lkey)
 * @need: IB_ACCESS_* flags the operation needs on the MR
 *
 * Context: rcu_read_lock() held; the MR is not referenced past it.
 * Return: true if the SGE may be handed to the parent as it is.
 */
static bool stl_check_sge(struct stl_dev *sdev, struct stl_pd *spd,
			  const struct ib_sge *sge, int need)
{
	struct stl_mr *smr = xa_load(&sdev->mrs, sge->lkey);

	if (!smr || (spd && smr->pd != spd))
		return false;
	if ((smr->access & need) != need)
		return false;
	if (sge->addr < smr->iova ||
	    sge->length > smr->length ||
	    sge->addr - smr->iova > smr->length - sge->length)
		return false;
	return true;
}

/*
 * stl_check_sge() for each of @num SGEs (at most @max, @spd NULL: MRs of
 * any PD of the device), and their total within STL_MAX_MSG_SIZE.
 * Returns 0 or -EINVAL.
 */
int stl_check_sges(struct stl_dev *sdev, struct stl_pd *spd,
		   const struct ib_sge *sg, int num, u32 max, int need)
{
	u64 total = 0;
	int i, ret = 0;

	if (num < 0 || num > max)
		return -EINVAL;
	rcu_read_lock();
	for (i = 0; i < num; i++) {
		total += sg[i].length;
		if (!stl_check_sge(sdev, spd, &sg[i], need)) {
			stl_dbg(sdev, "SGE %d (lkey 0x%x addr 0x%llx len %u) refused\n",
				i, sg[i].lkey, sg[i].addr, sg[i].length);
			ret = -EINVAL;
			break;
		}
	}
	rcu_read_unlock();
	if (!ret && total > STL_MAX_MSG_SIZE)
		ret = -EINVAL;
	return ret;
}

/*
 * A software parent (rxe) defers a kernel QP's send processing to a tasklet;
 * raised from process context, that would wake ksoftirqd, which then
 * competes with the very process that is polling for the completion.  With
 * bottom halves off, the tasklet runs here, at local_bh_enable(), in the
 * poster's context, as it does for the parent's own user QPs.
 */
int stl_parent_post_send(struct ib_qp *pqp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad)
{
	int ret;

	local_bh_disable();
	ret = ib_post_send(pqp, wr, bad);
	local_bh_enable();
	return ret;
}

/* The same for receive work requests. */
int stl_parent_post_recv(struct ib_qp *pqp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad)
{
	int ret;

	local_bh_disable();
	ret = ib_post_recv(pqp, wr, bad);
	local_bh_enable();
	return ret;
}

/* The same for a parent SRQ. */
int stl_parent_post_srq_recv(struct ib_srq *psrq, const struct ib_recv_wr *wr,
			     const struct ib_recv_wr **bad)
{
	int ret;

	local_bh_disable();
	ret = ib_post_srq_recv(psrq, wr, bad);
	local_bh_enable();
	return ret;
}

/**
 * stl_prep_send() - check one user send work request, build the parent's
 * @sdev: the device
 * @sqp: the QP it is posted to
 * @wr: the request (SGEs with user addresses)
 * @b: where the parent's request is built
 * @kinline: the inline data, in kernel memory (copied out of the send ring)
 * @kinline_len: bytes at @kinline
 *
 * Return: 0, or -errno: the request is refused.
 */
int stl_prep_send(struct stl_dev *sdev, struct stl_qp *sqp,
		  const struct ib_send_wr *wr, struct stl_send_buf *b,
		  const u8 *kinline, u32 kinline_len)
{
	struct stl_pd *spd = to_stl_pd(sqp->ibqp.pd);
	int need = 0;

	/* Nothing but the public flags may reach the parent's kernel QP. */
	if (wr->send_flags & ~(IB_SEND_FENCE | IB_SEND_SIGNALED |
			       IB_SEND_SOLICITED | IB_SEND_INLINE))
		return -EINVAL;

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		if (sqp->ibqp.qp_type == IB_QPT_UD) {
			if (!ud_wr(wr)->ah || ud_wr(wr)->ah->pd != sqp->ibqp.pd)
				return -EINVAL;
			b->wr.ud = *ud_wr(wr);
			b->wr.ud.ah = to_stl_ah(ud_wr(wr)->ah)->pah;
			/* Controlled Q_Keys: the QP's own for the unprivileged. */
			if ((b->wr.ud.remote_qkey & 0x80000000) &&
			    !rdma_nl_get_privileged_qkey())
				b->wr.ud.remote_qkey = READ_ONCE(sqp->qkey);
		} else {
			b->wr.send = *wr;
		}
		break;
	case IB_WR_SEND_WITH_INV:
		/* RC only (IBA 9.4.1.1); the receiver checks the key. */
		if (sqp->ibqp.qp_type != IB_QPT_RC)
			return -EINVAL;
		b->wr.send = *wr;
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		if (sqp->ibqp.qp_type == IB_QPT_UD)
			return -EINVAL;
		b->wr.rdma = *rdma_wr(wr);
		break;
	case IB_WR_RDMA_READ:
		if (sqp->ibqp.qp_type != IB_QPT_RC)
			return -EINVAL;
		b->wr.rdma = *rdma_wr(wr);
		need = IB_ACCESS_LOCAL_WRITE;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		if (sqp->ibqp.qp_type != IB_QPT_RC ||
		    sdev->pdev->attrs.atomic_cap == IB_ATOMIC_NONE)
			return -EINVAL;
		if (wr->num_sge != 1 || wr->sg_list[0].length != sizeof(u64))
			return -EINVAL;
		b->wr.atomic = *atomic_wr(wr);
		need = IB_ACCESS_LOCAL_WRITE;
		break;
	default:
		return -EINVAL;
	}
	b->wr.send.next = NULL;

	if (wr->send_flags & IB_SEND_INLINE) {
		if (need)
			return -EINVAL;
		if (kinline_len > sqp->max_inline)
			return -EINVAL;
		memcpy(b->inline_data, kinline, kinline_len);
		b->inline_sge.addr = (uintptr_t)b->inline_data;
		b->inline_sge.length = kinline_len;
		b->inline_sge.lkey = 0;
		b->wr.send.sg_list = &b->inline_sge;
		b->wr.send.num_sge = kinline_len ? 1 : 0;
		return 0;
	}
	return stl_check_sges(sdev, spd, wr->sg_list, wr->num_sge,
			      sqp->max_send_sge, need);
}

/**
 * stl_wr_bytes() - the bytes a prepared send request moves (rate cap)
 * @wr: a request as it goes to the parent (inline data as one SGE)
 *
 * Return: the sum of its SGE lengths.
 */
u64 stl_wr_bytes(const struct ib_send_wr *wr)
{
	u64 n = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		n += wr->sg_list[i].length;
	return n;
}

/* The send ring's doorbell: a POST_SEND with no request. */
int stl_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	return stl_ring_doorbell(to_stl_qp(ibqp));
}

/*
 * The receive ring's doorbell: a POST_RECV with no request asks for the
 * ring to be taken now.  A QP on an SRQ has no receive queue.
 */
int stl_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	if (wr || ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	stl_ring_rq_doorbell(to_stl_qp(ibqp));
	return 0;
}
