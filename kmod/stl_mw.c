// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: memory windows (devices with rings).
 *
 * The kernel has no memory window verbs for kernel consumers and a parent
 * cannot bind a window from a kernel QP, so a window is a parent
 * fast-registration MR: the window's rkey is that MR's (a bind changes only
 * its low 8 bits, as librxe expects), a bind registers it over the pages of
 * the bound range of the MR, an invalidation invalidates it.  Both run on
 * the PD's registration QP (stl_mr.c) and are waited for, in the order of
 * the send ring: the ring holds a window entry back until every entry before
 * it has completed (stl_ring.c), so its completion comes after theirs and
 * the entries after it see it done.
 *
 * A binding holds its own references on its pages: the MR it was made from
 * may be deregistered once the window has moved on, and the parent is done
 * with the pages only when it has invalidated the window.  A peer's SEND
 * with Invalidate invalidates the parent MR by itself; the receive
 * completion tells Stellar (stl_mw_remote_invalidated()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>

#include "kmod/stl.h"

/* Longest range one window binds, in pages. */
#define STL_MW_MAX_PAGES	1024

/* Drop the window's binding; the parent must no longer use its pages. */
static void stl_mw_release(struct stl_mw *smw)
{
	struct stl_dev *sdev = to_stl_dev(smw->ibmw.device);
	unsigned int i;

	lockdep_assert_held(&sdev->mw_lock);
	if (!smw->npages)
		return;
	/* The parent device: @pmr may be gone already (stl_dealloc_mw()). */
	ib_dma_unmap_sgtable_attrs(sdev->pdev, &smw->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&smw->sgt);
	for (i = 0; i < smw->npages; i++)
		put_page(smw->pages[i]);
	kfree(smw->pages);
	smw->pages = NULL;
	smw->npages = 0;
	if (smw->mr)
		smw->mr->num_mw--;
	smw->mr = NULL;
	WRITE_ONCE(smw->bound, false);
}

/* Invalidate the parent MR of @smw and release its binding. */
static int stl_mw_invalidate_parent(struct stl_dev *sdev, struct stl_mw *smw)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = smw->pmr->rkey,
	};
	int ret;

	ret = stl_pd_post_wait(sdev, to_stl_pd(smw->ibmw.pd), &wr);
	if (ret)
		return ret;
	stl_mw_release(smw);
	return 0;
}

/* Module memory of a window (kmem_quota): its page list at the largest. */
#define STL_MW_KMEM \
	(sizeof(struct stl_mw) + STL_MW_MAX_PAGES * sizeof(struct page *))

int stl_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibmw->device);
	struct stl_pd *spd = to_stl_pd(ibmw->pd);
	struct stl_mw *smw = to_stl_mw(ibmw);
	int ret;

	if (!stl_udata_empty(udata))
		return -EINVAL;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	ret = stl_obj_charge(sdev, STL_OBJ_MW);
	if (ret)
		return ret;
	ret = stl_kmem_charge(sdev, STL_MW_KMEM);
	if (ret)
		goto err_obj;
	/* One page entry to spare: see stl_fmr_build(). */
	smw->pmr = ib_alloc_mr(spd->ppd, IB_MR_TYPE_MEM_REG,
			       STL_MW_MAX_PAGES + 1);
	if (IS_ERR(smw->pmr)) {
		ret = PTR_ERR(smw->pmr);
		goto err_count;
	}
	ibmw->rkey = smw->pmr->rkey;
	ret = xa_insert(&sdev->mws, ibmw->rkey >> 8, smw, GFP_KERNEL);
	if (ret)
		goto err_dereg;
	return 0;

err_dereg:
	ib_dereg_mr(smw->pmr);
err_count:
	stl_kmem_uncharge(sdev, STL_MW_KMEM);
err_obj:
	stl_obj_uncharge(sdev, STL_OBJ_MW);
	return ret;
}

int stl_dealloc_mw(struct ib_mw *ibmw)
{
	struct stl_dev *sdev = to_stl_dev(ibmw->device);
	struct stl_mw *smw = to_stl_mw(ibmw);

	mutex_lock(&sdev->mw_lock);
	xa_erase(&sdev->mws, ibmw->rkey >> 8);
	/* stl_mw_remote_invalidated() looks it up under RCU. */
	synchronize_rcu();
	/* Freeing the parent MR invalidates it: then the pages can go. */
	ib_dereg_mr(smw->pmr);
	stl_mw_release(smw);
	mutex_unlock(&sdev->mw_lock);
	stl_kmem_uncharge(sdev, STL_MW_KMEM);
	stl_obj_uncharge(sdev, STL_OBJ_MW);
	return 0;
}

/* The window named by @rkey (any low 8 bits), or NULL.  mw_lock held. */
static struct stl_mw *stl_mw_lookup(struct stl_dev *sdev, u32 rkey)
{
	lockdep_assert_held(&sdev->mw_lock);
	return xa_load(&sdev->mws, rkey >> 8);
}

/*
 * Bind @smw to @len bytes at @addr of @smr with @access under key @key:
 * take references on the pages, map them for the parent, register.
 */
static int stl_mw_register(struct stl_dev *sdev, struct stl_mw *smw,
			   struct stl_mr *smr, u64 addr, u64 len, int access,
			   u32 key)
{
	struct pvdma_map *map = smr->map;
	u64 off = addr - smr->iova + map->offset;
	unsigned int first = off >> PAGE_SHIFT, i, n;
	struct ib_reg_wr reg = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = smw->pmr,
		.access = access,
	};
	int ret, got;

	n = ((off + len + PAGE_SIZE - 1) >> PAGE_SHIFT) - first;
	if (n > STL_MW_MAX_PAGES || first + n > map->npages)
		return -EINVAL;
	smw->pages = kcalloc(n, sizeof(*smw->pages), GFP_KERNEL);
	if (!smw->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		smw->pages[i] = map->pages[first + i];
		get_page(smw->pages[i]);
	}
	smw->npages = n;
	ret = sg_alloc_table_from_pages_segment(&smw->sgt, smw->pages, n,
						off & ~PAGE_MASK, len,
						ib_dma_max_seg_size(sdev->pdev),
						GFP_KERNEL);
	if (ret)
		goto err_pages;
	ret = ib_dma_map_sgtable_attrs(sdev->pdev, &smw->sgt,
				       DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_sgt;
	got = ib_map_mr_sg(smw->pmr, smw->sgt.sgl, smw->sgt.nents, NULL,
			   PAGE_SIZE);
	if (got != smw->sgt.nents) {
		ret = got < 0 ? got : -EINVAL;
		goto err_unmap;
	}
	smw->pmr->iova = addr;
	smw->pmr->length = len;
	ib_update_fast_reg_key(smw->pmr, key & 0xff);
	reg.key = smw->pmr->rkey;
	ret = stl_pd_post_wait(sdev, to_stl_pd(smw->ibmw.pd), &reg.wr);
	if (ret)
		goto err_unmap;
	smw->mr = smr;
	smr->num_mw++;
	smw->access = access;
	WRITE_ONCE(smw->bound, true);
	smw->ibmw.rkey = smw->pmr->rkey;
	return 0;

err_unmap:
	ib_dma_unmap_sgtable_attrs(sdev->pdev, &smw->sgt, DMA_BIDIRECTIONAL, 0);
err_sgt:
	sg_free_table(&smw->sgt);
err_pages:
	for (i = 0; i < n; i++)
		put_page(smw->pages[i]);
	kfree(smw->pages);
	smw->pages = NULL;
	smw->npages = 0;
	return ret;
}

/**
 * stl_mw_bind() - a BIND_MW entry of a send ring
 * @sqp: the QP it was posted to
 * @mw: the entry's window fields (a kernel copy)
 *
 * Checks as rxe does (IBA C10-72..75, o10-36.2.2, o10-37.2.30/40), then
 * binds synchronously.  Context: process, the QP's sq.mutex held, every
 * entry before this one completed.
 *
 * Return: IB_WC_SUCCESS, or the error status of the entry's completion.
 */
int stl_mw_bind(struct stl_qp *sqp, const struct stl_mw_wr *mw)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);
	int access = mw->access;
	struct stl_mr *smr = NULL;
	struct stl_mw *smw;
	int status = IB_WC_MW_BIND_ERR;

	if (sqp->ibqp.qp_type != IB_QPT_RC && sqp->ibqp.qp_type != IB_QPT_UC)
		return IB_WC_LOC_QP_OP_ERR;
	if (access & ~(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
		       IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_LOCAL_WRITE))
		return IB_WC_MW_BIND_ERR;
	access &= ~IB_ACCESS_LOCAL_WRITE;

	mutex_lock(&sdev->mw_lock);
	smw = stl_mw_lookup(sdev, mw->mw_rkey);
	if (!smw || smw->ibmw.rkey != mw->mw_rkey) {
		stl_dbg(sdev, "bind: no window 0x%x\n", mw->mw_rkey);
		goto out;
	}
	if (mw->length) {
		smr = xa_load(&sdev->mrs, mw->mr_lkey);
		if (!smr || smr->pd != to_stl_pd(sqp->ibqp.pd))
			goto out;
	}
	/* A peer invalidated it (the parent MR is free already). */
	if (READ_ONCE(smw->remote_inv)) {
		WRITE_ONCE(smw->remote_inv, false);
		stl_mw_release(smw);
	}
	if (smw->ibmw.type == IB_MW_TYPE_2) {
		/* The QP's PD; a free window; no unbinding by binding. */
		if (smw->ibmw.pd != sqp->ibqp.pd || smw->bound || !smr)
			goto out;
	}
	if (smr) {
		if (!(smr->access & IB_ACCESS_MW_BIND) ||
		    ((access & (IB_ACCESS_REMOTE_WRITE |
				IB_ACCESS_REMOTE_ATOMIC)) &&
		     !(smr->access & IB_ACCESS_LOCAL_WRITE)) ||
		    mw->addr < smr->iova || mw->addr + mw->length < mw->addr ||
		    mw->addr + mw->length > smr->iova + smr->length)
			goto out;
	}
	/* Type 1 (again): the old binding goes first. */
	if (smw->bound && stl_mw_invalidate_parent(sdev, smw))
		goto out;
	stl_mw_release(smw);
	if (!smr) {
		status = IB_WC_SUCCESS;		/* zero length: unbound */
		goto out;
	}
	if (!stl_mw_register(sdev, smw, smr, mw->addr, mw->length, access,
			     mw->rkey))
		status = IB_WC_SUCCESS;
out:
	mutex_unlock(&sdev->mw_lock);
	return status;
}

/**
 * stl_mw_local_invalidate() - a LOCAL_INV entry of a send ring
 * @sqp: the QP it was posted to
 * @rkey: the key to invalidate
 *
 * Only type 2 windows of the QP's PD can be invalidated so (an MR's keys
 * belong to its registration).  Context: as stl_mw_bind().
 *
 * Return: IB_WC_SUCCESS, or the error status of the entry's completion.
 */
int stl_mw_local_invalidate(struct stl_qp *sqp, u32 rkey)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);
	int status = IB_WC_LOC_QP_OP_ERR;
	struct stl_mw *smw;

	mutex_lock(&sdev->mw_lock);
	smw = stl_mw_lookup(sdev, rkey);
	if (smw && smw->ibmw.rkey == rkey &&
	    smw->ibmw.type == IB_MW_TYPE_2 && smw->ibmw.pd == sqp->ibqp.pd &&
	    (!smw->bound || !stl_mw_invalidate_parent(sdev, smw)))
		status = IB_WC_SUCCESS;
	mutex_unlock(&sdev->mw_lock);
	return status;
}

/**
 * stl_mw_remote_invalidated() - a peer's SEND with Invalidate arrived
 * @sdev: the device of the receiving QP
 * @pd: the receiving QP's PD
 * @rkey: the key it named
 *
 * The parent invalidated its MR already.  If @rkey is a bound type 2
 * window of @pd, it was the peer's to invalidate: the window is free for a
 * new bind (its pages go at that bind or at dealloc).  Context: any (RCU
 * lookup).
 *
 * Return: whether it was such a window.
 */
bool stl_mw_remote_invalidated(struct stl_dev *sdev, struct ib_pd *pd,
			       u32 rkey)
{
	struct stl_mw *smw;
	bool ok = false;

	rcu_read_lock();
	smw = xa_load(&sdev->mws, rkey >> 8);
	if (smw && smw->ibmw.rkey == rkey && smw->ibmw.type == IB_MW_TYPE_2 &&
	    smw->ibmw.pd == pd && READ_ONCE(smw->bound) &&
	    !READ_ONCE(smw->remote_inv)) {
		WRITE_ONCE(smw->remote_inv, true);
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}

/**
 * stl_mw_restore_key() - validate a window again that a peer invalidated
 * @sdev: the device
 * @rkey: its key
 *
 * The binding is registered at the parent once more, same pages, access and
 * key (see stl_inv.c).  Context: process.
 *
 * Return: 1 if restored, 0 if the window is no longer bound, -ENOENT if
 * @rkey is no window of @sdev, else -errno.
 */
int stl_mw_restore_key(struct stl_dev *sdev, u32 rkey)
{
	struct ib_reg_wr reg = { .wr.opcode = IB_WR_REG_MR };
	struct stl_mw *smw;
	int ret = 0;

	mutex_lock(&sdev->mw_lock);
	smw = stl_mw_lookup(sdev, rkey);
	if (!smw || smw->ibmw.rkey != rkey) {
		ret = -ENOENT;
	} else if (smw->bound && !READ_ONCE(smw->remote_inv)) {
		reg.mr = smw->pmr;
		reg.key = smw->pmr->rkey;
		reg.access = smw->access;
		ret = stl_pd_post_wait(sdev, to_stl_pd(smw->ibmw.pd), &reg.wr);
		if (!ret)
			ret = 1;
	}
	mutex_unlock(&sdev->mw_lock);
	return ret;
}

/**
 * stl_mw_mr_busy() - whether windows are bound to @smr (it cannot go)
 * @sdev: the device
 * @smr: the MR
 *
 * Return: true if a window is bound to it; else the MR is taken out of the
 * lookup for new binds before this returns.
 */
bool stl_mw_mr_busy(struct stl_dev *sdev, struct stl_mr *smr)
{
	bool busy;

	mutex_lock(&sdev->mw_lock);
	busy = smr->num_mw > 0;
	if (!busy)
		xa_erase(&sdev->mrs, smr->ibmr.lkey);
	mutex_unlock(&sdev->mw_lock);
	return busy;
}
