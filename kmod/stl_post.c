// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: posting work requests.
 *
 * Work requests arrive from ib_uverbs with user addresses and the lkeys that
 * Stellar handed out (the parent MRs' keys).  Nothing reaches the parent
 * before every local SGE was found in this device's MR table, in the QP's
 * PD, inside the MR and with the access the operation needs: the parent PD
 * also holds kernel-owned keys that a user must never name.  Inline data is
 * copied in from user memory, because a parent kernel QP reads inline SGEs
 * as kernel pointers.
 *
 * A list of work requests is checked whole before any of it is posted: one
 * that fails the checks is refused with -EINVAL and *bad_wr pointing at it,
 * and nothing of the list reaches the parent.  A UD work request naming a
 * controlled Q_Key (MSB set) from an unprivileged user is sent with the
 * QP's own Q_Key instead (IBTA 10.2.5, as mlx5 hardware does).  If the
 * parent refuses a request (its queue is full: -ENOMEM), the ones before it
 * stay posted and *bad_wr points at it, as with any verbs device.
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

/* Copy the user's inline SGEs into @buf; returns the length or -errno. */
static int stl_copy_inline(struct stl_qp *sqp, const struct ib_send_wr *wr,
			   u8 *buf)
{
	u32 len = 0;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > sqp->max_send_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > sqp->max_inline - len)
			return -EINVAL;
		if (copy_from_user(buf + len, u64_to_user_ptr(sge->addr),
				   sge->length))
			return -EFAULT;
		len += sge->length;
	}
	return len;
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
 * @kinline: inline data already in kernel memory (a send ring entry), or
 *	NULL to copy it from the user addresses of @wr's SGEs
 * @kinline_len: bytes at @kinline
 *
 * Return: 0, or -errno: the request is refused.
 */
int stl_prep_send(struct stl_dev *sdev, struct stl_qp *sqp,
		  const struct ib_send_wr *wr, struct stl_send_buf *b,
		  const u8 *kinline, u32 kinline_len)
{
	struct stl_pd *spd = to_stl_pd(sqp->ibqp.pd);
	int need = 0, ret;

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
		if (kinline) {
			if (kinline_len > sqp->max_inline)
				return -EINVAL;
			memcpy(b->inline_data, kinline, kinline_len);
			ret = kinline_len;
		} else {
			ret = stl_copy_inline(sqp, wr, b->inline_data);
		}
		if (ret < 0)
			return ret;
		b->inline_sge.addr = (uintptr_t)b->inline_data;
		b->inline_sge.length = ret;
		b->inline_sge.lkey = 0;
		b->wr.send.sg_list = &b->inline_sge;
		b->wr.send.num_sge = ret ? 1 : 0;
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

static void stl_refused(struct stl_dev *sdev, struct stl_qp *sqp, int n,
			int ret, const char *what)
{
	stl_count(sdev, STL_CNT_BAD_WRS, 1);
	stl_dbg(sdev, "QP %u: %s WR %d of the list refused (%d), none posted\n",
		sqp->ibqp.qp_num, what, n, ret);
}

int stl_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	struct stl_dev *sdev = to_stl_dev(ibqp->device);
	struct stl_qp *sqp = to_stl_qp(ibqp);
	const struct ib_send_wr *w, *bad;
	struct stl_send_buf buf, *b = &buf;
	u64 waited = 0;
	int ret = 0, n;

	/* A QP with rings: the doorbell, a POST_SEND with no request. */
	if (sdev->rings) {
		if (!wr)
			return stl_ring_doorbell(sqp);
		*bad_wr = wr;
		return -EINVAL;
	}
	/* The whole list first: a refused request means none is posted. */
	for (w = wr, n = 0; w; w = w->next, n++) {
		ret = stl_prep_send(sdev, sqp, w, b, NULL, 0);
		if (ret) {
			*bad_wr = w;
			stl_refused(sdev, sqp, n, ret, "send");
			return ret;
		}
	}
	/*
	 * Checked again as posted (the user may deregister an MR or unmap
	 * inline data meanwhile; that is the user's own race).
	 */
	for (w = wr, n = 0; w; w = w->next, n++) {
		ret = stl_prep_send(sdev, sqp, w, b, NULL, 0);
		if (ret) {
			stl_count(sdev, STL_CNT_BAD_WRS, 1);
			break;
		}
		/* Over the device's rate cap, the caller waits. */
		ret = stl_rate_wait_send(sdev, &b->wr.send, &waited);
		if (ret)
			break;
		/* A QP with paths: through its queue (spray/). */
		ret = sqp->spray ? spray_post_send(sqp, b) : 1;
		if (ret == 1)
			ret = stl_parent_post_send(sqp->pqp, &b->wr.send, &bad);
		if (ret) {
			/* The parent's queue is full: not a refused request. */
			stl_dbg(sdev, "QP %u: parent post_send: %d\n",
				ibqp->qp_num, ret);
			break;
		}
	}
	if (ret)
		*bad_wr = w;
	stl_count(sdev, STL_CNT_SEND_WRS, n);
	return ret;
}

/*
 * Receive @wr as it goes to the parent, in @pwr.  Hardware checks a
 * receive's keys when a message arrives for it, so a receive naming an MR
 * of another PD is taken and the message fails (the sender gets a remote
 * operation error).  Stellar posts such a receive over the PD's trap key,
 * which grants no access to anything: the parent fails the message as
 * hardware would, and no key of the user's reaches the parent unchecked.
 * Any other refused SGE refuses the request.  Returns 0 or -EINVAL.
 */
static int stl_recv_wr(struct stl_dev *sdev, struct stl_pd *spd, u32 max_sge,
		       const struct ib_recv_wr *wr, struct ib_recv_wr *pwr,
		       struct ib_sge *trap_sge)
{
	u32 len = 0;
	int ret, i;

	*pwr = *wr;
	pwr->next = NULL;
	ret = stl_check_sges(sdev, spd, wr->sg_list, wr->num_sge, max_sge,
			     IB_ACCESS_LOCAL_WRITE);
	/* Refused for its PD alone: fine when any PD of the device will do. */
	if (!ret || !spd->trap ||
	    stl_check_sges(sdev, NULL, wr->sg_list, wr->num_sge, max_sge,
			   IB_ACCESS_LOCAL_WRITE))
		return ret;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;	/* <= STL_MAX_MSG_SIZE: checked */
	*trap_sge = (struct ib_sge){ .length = len, .lkey = spd->trap->lkey };
	pwr->sg_list = trap_sge;
	pwr->num_sge = 1;
	return 0;
}

/**
 * stl_post_recv_list() - check a list of receives whole, then post it
 * @sdev: the device
 * @spd: the PD of the QP or SRQ
 * @max_sge: its max_sge
 * @pqp: the parent QP to post to, or NULL for @psrq
 * @psrq: the parent SRQ to post to (with @pqp NULL)
 * @wr: the list
 * @bad_wr: set to the request that was refused or not posted
 *
 * Every request is checked (lkeys of @spd, bounds, local write, SGE count)
 * before any is posted: one that fails refuses the list, nothing posted.
 * One that fails only for naming MRs of another PD is taken, and fails
 * when a message arrives for it (stl_recv_wr()).
 * Each is checked again as it is posted (an MR may have gone since).
 *
 * Return: 0, -EINVAL for a refused list, or the parent's error (its queue
 * is full: the requests before @bad_wr stay posted).
 */
int stl_post_recv_list(struct stl_dev *sdev, struct stl_pd *spd, u32 max_sge,
		       struct ib_qp *pqp, struct ib_srq *psrq,
		       const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	const struct ib_recv_wr *w, *bad;
	struct ib_recv_wr pwr;
	struct ib_sge trap_sge;
	int ret = 0, n;

	for (w = wr, n = 0; w; w = w->next, n++) {
		ret = stl_recv_wr(sdev, spd, max_sge, w, &pwr, &trap_sge);
		if (ret) {
			*bad_wr = w;
			stl_count(sdev, STL_CNT_BAD_WRS, 1);
			stl_dbg(sdev, "parent %s %u: receive WR %d of the list refused (%d), none posted\n",
				pqp ? "QP" : "SRQ", pqp ? pqp->qp_num : psrq->res.id,
				n, ret);
			return ret;
		}
	}
	for (w = wr, n = 0; w; w = w->next, n++) {
		ret = stl_recv_wr(sdev, spd, max_sge, w, &pwr, &trap_sge);
		if (ret) {
			stl_count(sdev, STL_CNT_BAD_WRS, 1);
			break;
		}
		if (pwr.sg_list == &trap_sge)
			stl_dbg(sdev, "receive WR %d names an MR of another PD: posted over the trap key\n",
				n);
		ret = pqp ? stl_parent_post_recv(pqp, &pwr, &bad) :
			    stl_parent_post_srq_recv(psrq, &pwr, &bad);
		if (ret) {
			/* The parent's queue is full: not a refused request. */
			stl_dbg(sdev, "parent post_recv: %d\n", ret);
			break;
		}
	}
	if (ret)
		*bad_wr = w;
	stl_count(sdev, STL_CNT_RECV_WRS, n);
	return ret;
}

int stl_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct stl_dev *sdev = to_stl_dev(ibqp->device);
	struct stl_qp *sqp = to_stl_qp(ibqp);

	/*
	 * A QP with rings takes receives from its ring only: a POST_RECV with
	 * no request asks for the ring to be taken now.  One on an SRQ has no
	 * receive queue.
	 */
	if (sdev->rings && !wr && !ibqp->srq) {
		stl_ring_rq_doorbell(sqp);
		return 0;
	}
	if (sdev->rings || ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	return stl_post_recv_list(sdev, to_stl_pd(ibqp->pd), sqp->max_recv_sge,
				  sqp->pqp, NULL, wr, bad_wr);
}
