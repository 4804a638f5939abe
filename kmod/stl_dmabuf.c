// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: memory regions on dma-bufs (ibv_reg_dmabuf_mr).
 *
 * A dma-buf MR attaches to the buffer as a dynamic importer, maps it under
 * the buffer's reservation lock and builds a parent fast-register MR over
 * it from an eMTT extent table (emtt/), at the largest page size the
 * buffer's layout allows, like a registration of pinned pages.
 *
 * Which device the buffer is mapped for depends on the parent:
 *  - a parent with a DMA device (hardware) gets the exporter's DMA
 *    addresses for that device, peer-to-peer memory (a GPU's) included;
 *  - a parent without one (rxe, virtual DMA) reaches memory through the
 *    kernel's page mapping: the buffer is mapped for Stellar's own DMA
 *    device (a platform device with a 64-bit mask) only to obtain its pages,
 *    and the parent MR is built over a copy of the scatter list's pages,
 *    each page referenced for as long as the copy lives.  Memory without
 *    struct pages cannot be served this way (EOPNOTSUPP).
 *
 * When the exporter moves or revokes the buffer (move_notify, called with
 * the reservation lock held), the parent MR is invalidated with LOCAL_INV
 * on the PD's registration QP before the mapping is given back: the key is
 * dead when move_notify returns, and later accesses fail with a protection
 * error at the peer or an error completion locally.  The pages of the old
 * copy keep their references until an RCU grace period has passed, so a
 * parent still finishing a packet never writes into freed memory.  A worker
 * then maps the buffer again and validates the same key over the new pages;
 * if the exporter refuses (a revoked buffer) or the new layout needs more
 * entries than the parent MR has, the key stays dead until deregistration.
 *
 * Lock order: the reservation lock, then a PD's reg_lock (REG_MR and
 * LOCAL_INV); the device's mw_lock comes before the reservation lock
 * (stl_mr_restore_key()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/dma-mapping.h>
#include <linux/platform_device.h>
#include <linux/slab.h>

#include "kmod/stl.h"

MODULE_IMPORT_NS(DMA_BUF);

/**
 * struct stl_dmabuf - the dma-buf side of an MR
 * @smr: the MR
 * @sdev: its device
 * @fmr: its parent MR; @fmr->sgt is the copy the parent MR is built over
 * @attach: the attachment; @attach->dmabuf holds a reference of ours
 * @xsgt: the exporter's mapping, NULL while unmapped
 * @offset: where the MR starts in the buffer
 * @virt: the parent uses virtual DMA: the copy holds page references
 * @max_entries: entries the parent MR was allocated with
 * @old: a copy the parent no longer uses, released after a grace period
 * @dying: deregistration has begun: no remapping
 * @dead: the key stays invalid (the exporter refused, or the parent)
 * @moved_at: when the last move_notify began
 * @remap: maps the buffer again after a move
 *
 * All but @remap are under the buffer's reservation lock.
 */
struct stl_dmabuf {
	struct stl_mr *smr;
	struct stl_dev *sdev;
	struct stl_fmr *fmr;
	struct dma_buf_attachment *attach;
	struct sg_table *xsgt;
	u64 offset;
	bool virt;
	u32 max_entries;
	struct sg_table old;
	bool dying;
	bool dead;
	ktime_t moved_at;
	struct work_struct remap;
};

/* The DMA device buffers are mapped for when the parent has none. */
static struct platform_device *stl_dma_pdev;

/* Drop the page references of a copy made for a virtual-DMA parent. */
static void stl_dmabuf_put_pages(struct sg_table *sgt, unsigned int nents)
{
	struct scatterlist *sg;
	unsigned int i;
	u64 off;

	for_each_sg(sgt->sgl, sg, nents, i)
		for (off = sg->offset & PAGE_MASK; off < sg->offset + sg->length;
		     off += PAGE_SIZE)
			put_page(nth_page(sg_page(sg), off >> PAGE_SHIFT));
}

/* Free a copy (of either kind); its pages' references go with it. */
static void stl_dmabuf_free_copy(struct stl_dmabuf *db, struct sg_table *sgt)
{
	if (!sgt->sgl)
		return;
	if (db->virt) {
		ib_dma_unmap_sgtable_attrs(db->sdev->pdev, sgt,
					   DMA_BIDIRECTIONAL, 0);
		stl_dmabuf_put_pages(sgt, sgt->orig_nents);
	}
	sg_free_table(sgt);
	memset(sgt, 0, sizeof(*sgt));
}

/*
 * Walk the part of @db->xsgt the MR covers: @fn(db, dst index, sg, skip,
 * take) for each entry it touches.  Returns the entries, or -errno.
 */
static int stl_dmabuf_walk(struct stl_dmabuf *db, u64 length, bool dma,
			   int (*fn)(struct stl_dmabuf *db, unsigned int n,
				     struct scatterlist *sg, u64 skip,
				     u64 take, void *arg),
			   void *arg)
{
	u64 skip = db->offset, left = length, len, take;
	struct scatterlist *sg;
	unsigned int i, n = 0;
	int ret;

	for_each_sg(db->xsgt->sgl, sg,
		    dma ? db->xsgt->nents : db->xsgt->orig_nents, i) {
		len = dma ? sg_dma_len(sg) : sg->length;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		take = min(len - skip, left);
		if (fn) {
			ret = fn(db, n, sg, skip, take, arg);
			if (ret)
				return ret;
		}
		n++;
		left -= take;
		skip = 0;
		if (!left)
			return n;
	}
	return -EINVAL;
}

/* Where the next entry of a copy goes, and how many are done. */
struct stl_dmabuf_cursor {
	struct scatterlist *dst;
	unsigned int done;
};

/* One entry of a copy for a virtual-DMA parent: pages, referenced. */
static int stl_dmabuf_copy_page(struct stl_dmabuf *db, unsigned int n,
				struct scatterlist *sg, u64 skip, u64 take,
				void *arg)
{
	struct stl_dmabuf_cursor *cur = arg;
	struct page *page = sg_page(sg);
	u64 first = sg->offset + skip, off;

	if (!page)
		return -EOPNOTSUPP;
	page = nth_page(page, first >> PAGE_SHIFT);
	first &= ~PAGE_MASK;
	for (off = 0; off < first + take; off += PAGE_SIZE) {
		if (!try_get_page(nth_page(page, off >> PAGE_SHIFT))) {
			while (off) {
				off -= PAGE_SIZE;
				put_page(nth_page(page, off >> PAGE_SHIFT));
			}
			return -EOPNOTSUPP;
		}
	}
	sg_set_page(cur->dst, page, take, first);
	cur->dst = sg_next(cur->dst);
	cur->done++;
	return 0;
}

/* One entry of a copy for a parent with a DMA device: addresses only. */
static int stl_dmabuf_copy_dma(struct stl_dmabuf *db, unsigned int n,
			       struct scatterlist *sg, u64 skip, u64 take,
			       void *arg)
{
	struct stl_dmabuf_cursor *cur = arg;

	sg_dma_address(cur->dst) = sg_dma_address(sg) + skip;
	sg_dma_len(cur->dst) = take;
	cur->dst = sg_next(cur->dst);
	cur->done++;
	return 0;
}

/*
 * Map the buffer (reservation lock held) and build @db->fmr->sgt, the copy
 * of the MR's part of it the parent MR is built over.
 */
static int stl_dmabuf_map(struct stl_dmabuf *db)
{
	struct dma_buf *dmabuf = db->attach->dmabuf;
	struct sg_table *copy = &db->fmr->sgt;
	struct stl_dmabuf_cursor cur;
	struct sg_table *sgt;
	long wait;
	int n, ret;

	dma_resv_assert_held(dmabuf->resv);
	sgt = dma_buf_map_attachment(db->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt))
		return PTR_ERR(sgt);
	db->xsgt = sgt;
	/* The exporter may still be filling or moving the memory. */
	wait = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_KERNEL,
				     false, MAX_SCHEDULE_TIMEOUT);
	if (wait <= 0) {
		ret = wait ? wait : -ETIMEDOUT;
		goto err_unmap;
	}
	n = stl_dmabuf_walk(db, db->smr->length, !db->virt, NULL, NULL);
	if (n < 0) {
		ret = n;
		goto err_unmap;
	}
	ret = sg_alloc_table(copy, n, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto err_unmap;
	cur.dst = copy->sgl;
	cur.done = 0;
	if (db->virt) {
		ret = stl_dmabuf_walk(db, db->smr->length, false,
				      stl_dmabuf_copy_page, &cur);
		if (ret < 0) {
			stl_dmabuf_put_pages(copy, cur.done);
			goto err_free;
		}
		ret = ib_dma_map_sgtable_attrs(db->sdev->pdev, copy,
					       DMA_BIDIRECTIONAL, 0);
		if (ret) {
			stl_dmabuf_put_pages(copy, n);
			goto err_free;
		}
	} else {
		ret = stl_dmabuf_walk(db, db->smr->length, true,
				      stl_dmabuf_copy_dma, &cur);
		if (ret < 0)
			goto err_free;
		copy->nents = n;
	}
	return 0;

err_free:
	sg_free_table(copy);
	memset(copy, 0, sizeof(*copy));
err_unmap:
	dma_buf_unmap_attachment(db->attach, sgt, DMA_BIDIRECTIONAL);
	db->xsgt = NULL;
	return ret;
}

/* Give the mapping back; the copy is freed now or, with @defer, later. */
static void stl_dmabuf_unmap(struct stl_dmabuf *db, bool defer)
{
	if (!db->xsgt)
		return;
	if (defer && db->virt) {
		/* Two moves before the worker ran: the older copy goes now. */
		if (db->old.sgl) {
			synchronize_rcu();
			stl_dmabuf_free_copy(db, &db->old);
		}
		db->old = db->fmr->sgt;
		memset(&db->fmr->sgt, 0, sizeof(db->fmr->sgt));
	} else {
		stl_dmabuf_free_copy(db, &db->fmr->sgt);
	}
	dma_buf_unmap_attachment(db->attach, db->xsgt, DMA_BIDIRECTIONAL);
	db->xsgt = NULL;
}

/* The extent table of the copy, accounted in the device's gauges. */
static int stl_dmabuf_table(struct stl_dmabuf *db)
{
	struct stl_fmr *fmr = db->fmr;
	struct stl_dev *sdev = db->sdev;
	int ret;

	if (fmr->emtt.ext) {
		atomic64_sub(fmr->emtt.entries, &sdev->emtt_entries);
		atomic64_sub(fmr->emtt.n, &sdev->emtt_extents);
		kvfree(fmr->emtt.ext);
		fmr->emtt.ext = NULL;
	}
	/*
	 * A buffer that may move is sized for its chunks as given: after a
	 * move, chunks that were adjacent may not be.
	 */
	ret = stl_fmr_table(sdev, fmr, db->smr->iova,
			    !dma_buf_is_dynamic(db->attach->dmabuf));
	if (ret)
		return ret;
	fmr->emtt.kind = EMTT_KIND_DMABUF;
	atomic64_add(fmr->emtt.entries, &sdev->emtt_entries);
	atomic64_add(fmr->emtt.n, &sdev->emtt_extents);
	return 0;
}

/* Point the parent MR at the copy and validate it under its key. */
static int stl_dmabuf_register(struct stl_dmabuf *db)
{
	struct stl_fmr *fmr = db->fmr;
	struct stl_mr *smr = db->smr;
	int n;

	if (fmr->emtt.entries + STL_RXE_MR_SPARE > db->max_entries)
		return -ENOSPC;
	n = ib_map_mr_sg(fmr->pmr, fmr->sgt.sgl, fmr->sgt.nents, NULL,
			 1UL << fmr->emtt.page_shift);
	if (n != fmr->sgt.nents)
		return n < 0 ? n : -EINVAL;
	fmr->pmr->iova = smr->iova;
	fmr->pmr->length = smr->length;
	return stl_fmr_register(db->sdev, smr->pd, fmr, smr->access);
}

/* The parent must not reach the memory any more: LOCAL_INV, or free it. */
static void stl_dmabuf_kill_key(struct stl_dmabuf *db)
{
	struct stl_fmr *fmr = db->fmr;

	if (!fmr->pmr)
		return;
	if (!stl_reg_unusable(db->sdev) &&
	    !stl_fmr_invalidate(db->sdev, db->smr->pd, fmr))
		return;
	/* Freeing it invalidates it too (and waits for its users). */
	ib_dereg_mr(fmr->pmr);
	fmr->pmr = NULL;
	db->dead = true;
}

static void stl_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	struct stl_dmabuf *db = attach->importer_priv;
	struct stl_dev *sdev = db->sdev;
	ktime_t t0 = ktime_get();

	dma_resv_assert_held(attach->dmabuf->resv);
	if (!db->xsgt)
		return;
	stl_count(sdev, STL_CNT_DMABUF_MOVES, 1);
	stl_dmabuf_kill_key(db);
	stl_count(sdev, STL_CNT_DMABUF_INVALIDATE_NS,
		  ktime_to_ns(ktime_sub(ktime_get(), t0)));
	stl_dmabuf_unmap(db, true);
	db->moved_at = t0;
	if (!db->dying)
		queue_work(system_unbound_wq, &db->remap);
}

static void stl_dmabuf_remap_work(struct work_struct *work)
{
	struct stl_dmabuf *db = container_of(work, struct stl_dmabuf, remap);
	struct dma_resv *resv = db->attach->dmabuf->resv;
	struct stl_dev *sdev = db->sdev;
	int ret;

	/* A parent still finishing a packet on the old pages is done now. */
	synchronize_rcu();
	dma_resv_lock(resv, NULL);
	stl_dmabuf_free_copy(db, &db->old);
	if (db->dying || db->dead || db->xsgt)
		goto out;
	ret = stl_dmabuf_map(db);
	if (!ret) {
		ret = stl_dmabuf_table(db);
		if (!ret)
			ret = stl_dmabuf_register(db);
		if (ret)
			stl_dmabuf_unmap(db, false);
	}
	if (ret) {
		db->dead = true;
		stl_count(sdev, STL_CNT_DMABUF_REMAP_FAILURES, 1);
		ibdev_info_ratelimited(&sdev->ibdev,
				       "dma-buf MR 0x%x stays invalid: mapping it again failed: %d\n",
				       db->smr->ibmr.rkey, ret);
	} else {
		stl_count(sdev, STL_CNT_DMABUF_REMAPS, 1);
		stl_count(sdev, STL_CNT_DMABUF_REMAP_NS,
			  ktime_to_ns(ktime_sub(ktime_get(), db->moved_at)));
	}
out:
	dma_resv_unlock(resv);
}

static const struct dma_buf_attach_ops stl_dmabuf_attach_ops = {
	.move_notify = stl_dmabuf_move_notify,
};

/* A hardware parent may reach another device's memory directly. */
static const struct dma_buf_attach_ops stl_dmabuf_attach_ops_p2p = {
	.allow_peer2peer = true,
	.move_notify = stl_dmabuf_move_notify,
};

/**
 * stl_reg_user_mr_dmabuf() - register part of a dma-buf
 * @ibpd: the PD
 * @offset: where the MR starts in the buffer
 * @length: its bytes
 * @virt_addr: its iova; at the same offset within a page as @offset
 * @fd: the dma-buf
 * @access: access flags (no IB_ACCESS_MW_BIND: windows need pinned pages)
 * @arg: the driver data (must be empty)
 *
 * Return: the MR, or ERR_PTR: -EINVAL for a range outside the buffer, an
 * iova at another page offset or other bad arguments, -EBADF if @fd is no
 * dma-buf, -EOPNOTSUPP for unsupported access flags or memory a software
 * parent cannot reach, -ENOMEM or a quota's errno.
 */
struct ib_mr *stl_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				     u64 length, u64 virt_addr, int fd,
				     int access, struct stl_dmabuf_arg *arg)
{
	struct stl_dev *sdev = to_stl_dev(ibpd->device);
	struct stl_pd *spd = to_stl_pd(ibpd);
	struct dma_buf *dmabuf;
	struct stl_dmabuf *db;
	struct stl_fmr *fmr;
	struct stl_mr *smr;
	int ret;

	/* No windows: they need pinned pages (stl_mw.c). */
	ret = stl_mr_check_args(sdev, access, 0, stl_dmabuf_udata(arg),
				offset, length, virt_addr);
	if (ret)
		return ERR_PTR(ret);
	ret = stl_obj_charge(sdev, STL_OBJ_MR);
	if (ret) {
		stl_count(sdev, STL_CNT_MR_REG_FAIL, 1);
		return ERR_PTR(ret);
	}
	smr = kzalloc(sizeof(*smr), GFP_KERNEL_ACCOUNT);
	fmr = kzalloc(sizeof(*fmr), GFP_KERNEL_ACCOUNT);
	db = kzalloc(sizeof(*db), GFP_KERNEL_ACCOUNT);
	if (!smr || !fmr || !db) {
		ret = -ENOMEM;
		goto err_free;
	}
	smr->kmem = sizeof(*smr) + sizeof(*fmr) + sizeof(*db);
	ret = stl_kmem_charge(sdev, smr->kmem);
	if (ret)
		goto err_free;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_uncharge;
	}
	if (offset + length > dmabuf->size) {
		stl_info(sdev, "dma-buf MR %llu+%llu: the buffer has %zu bytes\n",
			 offset, length, dmabuf->size);
		ret = -EINVAL;
		goto err_put;
	}
	smr->fmr = fmr;
	smr->pd = spd;
	smr->iova = virt_addr;
	smr->length = length;
	smr->access = access;
	smr->dmabuf = db;
	fmr->sdev = sdev;
	fmr->pdev = sdev->pdev;
	db->smr = smr;
	db->sdev = sdev;
	db->fmr = fmr;
	db->offset = offset;
	db->virt = ib_uses_virt_dma(sdev->pdev);
	INIT_WORK(&db->remap, stl_dmabuf_remap_work);
	db->attach = dma_buf_dynamic_attach(dmabuf,
					    db->virt ? &stl_dma_pdev->dev :
						       sdev->pdev->dma_device,
					    db->virt ? &stl_dmabuf_attach_ops :
						       &stl_dmabuf_attach_ops_p2p,
					    db);
	if (IS_ERR(db->attach)) {
		ret = PTR_ERR(db->attach);
		goto err_put;
	}

	dma_resv_lock(dmabuf->resv, NULL);
	ret = stl_dmabuf_map(db);
	if (ret) {
		stl_info(sdev, "mapping dma-buf for MR failed: %d\n", ret);
		goto err_unlock;
	}
	ret = stl_dmabuf_table(db);
	if (ret)
		goto err_unmap;
	/* An entry to spare for rxe before 6.4 (stl_compat.h). */
	if (fmr->emtt.entries >= INT_MAX) {
		ret = -EINVAL;
		goto err_table;
	}
	db->max_entries = fmr->emtt.entries + STL_RXE_MR_SPARE;
	fmr->pmr = ib_alloc_mr(spd->ppd, IB_MR_TYPE_MEM_REG, db->max_entries);
	if (IS_ERR(fmr->pmr)) {
		ret = PTR_ERR(fmr->pmr);
		fmr->pmr = NULL;
		goto err_table;
	}
	ret = stl_dmabuf_register(db);
	if (ret)
		goto err_dereg;
	dma_resv_unlock(dmabuf->resv);

	ret = stl_kmem_charge(sdev, fmr->emtt.max * sizeof(*fmr->emtt.ext) +
			      fmr->sgt.orig_nents * sizeof(struct scatterlist));
	if (ret)
		goto err_destroy;
	smr->kmem += fmr->emtt.max * sizeof(*fmr->emtt.ext) +
		     fmr->sgt.orig_nents * sizeof(struct scatterlist);
	ret = stl_mr_publish(sdev, smr);
	if (ret)
		goto err_destroy;
	stl_count(sdev, STL_CNT_DMABUF_MRS, 1);
	return &smr->ibmr;

err_destroy:
	stl_dmabuf_mr_destroy(sdev, smr);
	stl_kmem_uncharge(sdev, smr->kmem);
	kfree(smr);
	stl_obj_uncharge(sdev, STL_OBJ_MR);
	stl_count(sdev, STL_CNT_MR_REG_FAIL, 1);
	return ERR_PTR(ret);

err_dereg:
	ib_dereg_mr(fmr->pmr);
err_table:
	atomic64_sub(fmr->emtt.entries, &sdev->emtt_entries);
	atomic64_sub(fmr->emtt.n, &sdev->emtt_extents);
	kvfree(fmr->emtt.ext);
err_unmap:
	stl_dmabuf_unmap(db, false);
err_unlock:
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, db->attach);
err_put:
	dma_buf_put(dmabuf);
err_uncharge:
	stl_kmem_uncharge(sdev, smr->kmem);
err_free:
	kfree(db);
	kfree(fmr);
	kfree(smr);
	stl_obj_uncharge(sdev, STL_OBJ_MR);
	stl_count(sdev, STL_CNT_MR_REG_FAIL, 1);
	return ERR_PTR(ret);
}

/**
 * stl_dmabuf_mr_destroy() - tear down a dma-buf MR's parent MR and mapping
 * @sdev: the device
 * @smr: the MR (not freed here; its charges neither)
 *
 * Context: process; sleeps.
 */
void stl_dmabuf_mr_destroy(struct stl_dev *sdev, struct stl_mr *smr)
{
	struct stl_dmabuf *db = smr->dmabuf;
	struct dma_buf *dmabuf = db->attach->dmabuf;
	struct stl_fmr *fmr = db->fmr;

	dma_resv_lock(dmabuf->resv, NULL);
	db->dying = true;
	dma_resv_unlock(dmabuf->resv);
	cancel_work_sync(&db->remap);

	dma_resv_lock(dmabuf->resv, NULL);
	/* Freeing the parent MR invalidates it and waits for its users. */
	if (fmr->pmr)
		ib_dereg_mr(fmr->pmr);
	fmr->pmr = NULL;
	stl_dmabuf_unmap(db, false);
	stl_dmabuf_free_copy(db, &db->old);
	atomic64_sub(fmr->emtt.entries, &sdev->emtt_entries);
	atomic64_sub(fmr->emtt.n, &sdev->emtt_extents);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, db->attach);
	dma_buf_put(dmabuf);
	kvfree(fmr->emtt.ext);
	kfree(fmr);
	kfree(db);
	smr->dmabuf = NULL;
	smr->fmr = NULL;
}

/**
 * stl_dmabuf_mr_restore() - validate a dma-buf MR a peer invalidated
 * @sdev: the device
 * @smr: the MR
 *
 * Only while the buffer is mapped: a moved buffer's key comes back through
 * its remap worker, a revoked one's never.  Context: process, mw_lock held.
 *
 * Return: 0, or -ENOENT if the MR has no valid mapping now, else -errno.
 */
int stl_dmabuf_mr_restore(struct stl_dev *sdev, struct stl_mr *smr)
{
	struct stl_dmabuf *db = smr->dmabuf;
	struct dma_resv *resv = db->attach->dmabuf->resv;
	int ret = -ENOENT;

	dma_resv_lock(resv, NULL);
	if (db->xsgt && db->fmr->pmr && !db->dead)
		ret = stl_fmr_register(sdev, smr->pd, db->fmr, smr->access);
	dma_resv_unlock(resv);
	return ret;
}

/**
 * stl_dmabuf_init() - create the DMA device for virtual-DMA parents
 *
 * Return: 0 or -errno.
 */
int stl_dmabuf_init(void)
{
	int ret;

	stl_dma_pdev = platform_device_register_simple("stellar-dma",
						       PLATFORM_DEVID_NONE,
						       NULL, 0);
	if (IS_ERR(stl_dma_pdev))
		return PTR_ERR(stl_dma_pdev);
	ret = dma_coerce_mask_and_coherent(&stl_dma_pdev->dev,
					   DMA_BIT_MASK(64));
	if (ret) {
		platform_device_unregister(stl_dma_pdev);
		return ret;
	}
	return 0;
}

/**
 * stl_dmabuf_exit() - remove it (every dma-buf MR is gone)
 */
void stl_dmabuf_exit(void)
{
	platform_device_unregister(stl_dma_pdev);
}
