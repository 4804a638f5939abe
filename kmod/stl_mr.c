// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: memory regions on user memory.
 *
 * A registration pins its pages (pvdma/), maps them for the parent and
 * builds a parent fast-register MR over them whose iova is the user's
 * address: the keys it returns work unchanged for local work requests and
 * for remote peers, Stellar or not.  The REG_MR work request goes through a
 * small parent RC QP connected to itself, one per virtual PD, created on the
 * PD's first registration (a parent accepts REG_MR only on a connected QP of
 * the MR's own PD).
 *
 * Deregistration invalidates the parent MR with LOCAL_INV (the keys stop
 * working before dereg returns) and parks it with the pins in the pin cache:
 * registering the same region again takes it back and re-validates it under
 * a new key with one REG_MR, instead of building a new MR over the pages.
 *
 * The registration QP must not be disturbed by other tenants, who share the
 * parent and its GIDs: it starts at a random PSN and its path names a
 * loopback address as the remote end, a source no tenant can send from and
 * that the IP stack drops when it arrives from the network, so a parent that
 * checks packet addresses (rxe) never hands it a packet.  Should it still end
 * up in error, it is rebuilt and the work request retried once.
 *
 * A parent that stops completing work requests (a REG_MR or LOCAL_INV timed
 * out), reported DEVICE_FATAL or is going away gets no more LOCAL_INV:
 * deregistration frees the parent MR at once (that invalidates its keys as
 * well), so tearing down thousands of MRs never waits for each in turn.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/restrack.h>
#include <rdma/rdma_netlink.h>

#include "kmod/stl.h"

/* stl_dev.reg_flags */
enum {
	STL_REG_STALLED,	/* a work request timed out, none completed since */
	STL_REG_LOST,		/* parent fatal or going away: post nothing more */
};

/* Least time between two rebuild-and-retry of one PD's registration QP. */
#define STL_REG_RETRY_INTERVAL	(HZ / 10)

/*
 * The registration QP's remote end: a loopback address of the source GID's
 * family, which no GID table of a RoCE port holds and which the IP stack
 * drops as a source on any other interface (so no peer can reach the QP).
 */
static void stl_reg_qp_dgid(const struct ib_gid_attr *sgid, union ib_gid *dgid)
{
	memset(dgid, 0, sizeof(*dgid));
	if (rdma_gid_attr_network_type(sgid) == RDMA_NETWORK_IPV4) {
		dgid->raw[10] = 0xff;
		dgid->raw[11] = 0xff;
		dgid->raw[12] = 127;
		dgid->raw[15] = 1;
	} else {
		dgid->raw[15] = 1;
	}
}

/*
 * Bring the registration QP from RESET to RTS, connected to itself at a
 * random PSN over a path no other QP can send on (see the top of the file).
 */
static int stl_reg_qp_connect(struct stl_dev *sdev, struct ib_qp *qp)
{
	const struct ib_gid_attr *sgid = NULL;
	struct net_device *ndev;
	struct ib_port_attr pattr;
	struct ib_qp_attr attr;
	union ib_gid dgid;
	u32 psn;
	int ret, i;

	ret = ib_query_port(sdev->pdev, sdev->pport, &pattr);
	if (ret)
		return ret;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		sgid = rdma_get_gid_attr(sdev->pdev, sdev->pport, i);
		if (!IS_ERR(sgid))
			break;
	}
	if (IS_ERR_OR_NULL(sgid))
		return -ENODEV;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_INIT;
	attr.port_num = sdev->pport;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		goto out;

	psn = get_random_u32() & 0xffffff;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.rq_psn = psn;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, sdev->pport);
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid);
	if (!IS_ERR(ndev))
		ether_addr_copy(attr.ah_attr.roce.dmac, ndev->dev_addr);
	rcu_read_unlock();
	stl_reg_qp_dgid(sgid, &dgid);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, sgid->index, 64, 0);
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		goto out;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = psn;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN |
			   IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			   IB_QP_MAX_QP_RD_ATOMIC);
out:
	rdma_put_gid_attr(sgid);
	return ret;
}

/**
 * stl_pd_reg_teardown() - free a PD's registration QP and CQ, if any
 * @spd: the PD
 */
void stl_pd_reg_teardown(struct stl_pd *spd)
{
	if (spd->reg_qp)
		ib_destroy_qp(spd->reg_qp);
	if (spd->reg_cq)
		ib_destroy_cq(spd->reg_cq);
	spd->reg_qp = NULL;
	spd->reg_cq = NULL;
}

static int stl_pd_reg_setup(struct stl_dev *sdev, struct stl_pd *spd)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 4 };
	struct ib_qp_init_attr init = {};
	int ret;

	lockdep_assert_held(&spd->reg_lock);
	if (spd->reg_qp)
		return 0;

	spd->reg_cq = ib_create_cq(sdev->pdev, NULL, NULL, NULL, &cq_attr);
	if (IS_ERR(spd->reg_cq)) {
		ret = PTR_ERR(spd->reg_cq);
		spd->reg_cq = NULL;
		return ret;
	}
	init.send_cq = spd->reg_cq;
	init.recv_cq = spd->reg_cq;
	init.cap.max_send_wr = 2;
	init.cap.max_recv_wr = 1;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.qp_type = IB_QPT_RC;
	spd->reg_qp = ib_create_qp(spd->ppd, &init);
	if (IS_ERR(spd->reg_qp)) {
		ret = PTR_ERR(spd->reg_qp);
		spd->reg_qp = NULL;
		goto err_teardown;
	}
	ret = stl_reg_qp_connect(sdev, spd->reg_qp);
	if (ret)
		goto err_teardown;
	return 0;

err_teardown:
	ibdev_warn(&sdev->ibdev, "registration QP setup failed: %d\n", ret);
	stl_pd_reg_teardown(spd);
	return ret;
}

/**
 * stl_mr_parent_lost() - the parent is fatal or going away
 * @sdev: the Stellar device
 *
 * From now on REG_MR fails at once and deregistration frees parent MRs
 * without a LOCAL_INV (freeing invalidates them as well).  For the parent's
 * DEVICE_FATAL event and for its removal, before the children go.
 */
void stl_mr_parent_lost(struct stl_dev *sdev)
{
	set_bit(STL_REG_LOST, &sdev->reg_flags);
}

/* Whether deregistration should skip LOCAL_INV and free the parent MR. */
bool stl_reg_unusable(struct stl_dev *sdev)
{
	return test_bit(STL_REG_LOST, &sdev->reg_flags) ||
	       test_bit(STL_REG_STALLED, &sdev->reg_flags);
}

static const char *stl_wr_name(const struct ib_send_wr *wr)
{
	return wr->opcode == IB_WR_REG_MR ? "REG_MR" : "LOCAL_INV";
}

/*
 * Post @wr on the PD's registration QP (built if needed) and wait for its
 * completion.  -ETIMEDOUT and -EIO leave the QP torn down.
 * Context: spd->reg_lock held.
 */
static int stl_pd_post_wait_once(struct stl_dev *sdev, struct stl_pd *spd,
				 struct ib_send_wr *wr)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(STL_REG_TIMEOUT_MS);
	const struct ib_send_wr *bad;
	struct ib_wc wc;
	int ret, got;

	lockdep_assert_held(&spd->reg_lock);
	ret = stl_pd_reg_setup(sdev, spd);
	if (ret)
		return ret;

	wr->send_flags = IB_SEND_SIGNALED;
	/* As in stl_post.c: let a software parent do it right here. */
	local_bh_disable();
	ret = ib_post_send(spd->reg_qp, wr, &bad);
	local_bh_enable();
	if (ret)
		goto out_reset;

	while (!(got = ib_poll_cq(spd->reg_cq, 1, &wc))) {
		if (time_after(jiffies, deadline)) {
			/* Until one completes, deregistration skips LOCAL_INV. */
			set_bit(STL_REG_STALLED, &sdev->reg_flags);
			ibdev_err_ratelimited(&sdev->ibdev,
					      "%s timed out: parent %s unresponsive\n",
					      stl_wr_name(wr),
					      dev_name(&sdev->pdev->dev));
			ret = -ETIMEDOUT;
			goto out_reset;
		}
		usleep_range(20, 100);
	}
	/* The parent answers (even an error): LOCAL_INV is worth waiting for. */
	if (got > 0 && test_bit(STL_REG_STALLED, &sdev->reg_flags))
		clear_bit(STL_REG_STALLED, &sdev->reg_flags);
	if (got < 0 || wc.status != IB_WC_SUCCESS) {
		ibdev_warn_ratelimited(&sdev->ibdev, "%s failed: %s\n",
				       stl_wr_name(wr),
				       got < 0 ? "poll error" :
				       ib_wc_status_msg(wc.status));
		ret = -EIO;
		goto out_reset;
	}
	return 0;

out_reset:
	/* The QP may be in error: build a fresh one on the next use. */
	stl_pd_reg_teardown(spd);
	return ret;
}

/**
 * stl_pd_post_wait() - run a work request on the PD's registration QP
 * @sdev: the device
 * @spd: the PD
 * @wr: REG_MR or LOCAL_INV of a parent MR of the PD
 *
 * Posts @wr and waits for its completion.  A failed work request (the QP
 * in error, whatever put it there) is retried once on a new QP, at most
 * every STL_REG_RETRY_INTERVAL per PD.  Context: process; takes
 * spd->reg_lock.
 *
 * Return: 0, or -errno (-EIO: the parent refused it).
 */
int stl_pd_post_wait(struct stl_dev *sdev, struct stl_pd *spd,
			    struct ib_send_wr *wr)
{
	int ret;

	if (test_bit(STL_REG_LOST, &sdev->reg_flags))
		return -EIO;
	mutex_lock(&spd->reg_lock);
	ret = stl_pd_post_wait_once(sdev, spd, wr);
	if (ret == -EIO &&
	    (!spd->reg_rebuilt ||
	     time_after(jiffies, spd->reg_rebuilt + STL_REG_RETRY_INTERVAL))) {
		spd->reg_rebuilt = jiffies;
		ibdev_info_ratelimited(&sdev->ibdev,
				       "%s retried on a new registration QP\n",
				       stl_wr_name(wr));
		ret = stl_pd_post_wait_once(sdev, spd, wr);
	}
	mutex_unlock(&spd->reg_lock);
	return ret;
}

/**
 * stl_fmr_register() - validate a parent MR under its current key
 * @sdev: the device
 * @spd: the PD whose registration QP posts the REG_MR
 * @fmr: the parent MR, mapped
 * @access: the MR's access flags
 *
 * Return: 0 or -errno.  Context: process; sleeps.
 */
int stl_fmr_register(struct stl_dev *sdev, struct stl_pd *spd,
			    struct stl_fmr *fmr, int access)
{
	struct ib_reg_wr reg = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = fmr->pmr,
		.key = fmr->pmr->rkey,
		.access = access & ~(IB_ACCESS_RELAXED_ORDERING |
				     IB_ACCESS_MW_BIND),
	};

	return stl_pd_post_wait(sdev, spd, &reg.wr);
}

/**
 * stl_fmr_invalidate() - LOCAL_INV a parent MR: its key stops working
 * @sdev: the device
 * @spd: the PD whose registration QP posts it
 * @fmr: the parent MR
 *
 * Return: 0 or -errno.  Context: process; sleeps.
 */
int stl_fmr_invalidate(struct stl_dev *sdev, struct stl_pd *spd,
		       struct stl_fmr *fmr)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = fmr->pmr->rkey,
	};

	return stl_pd_post_wait(sdev, spd, &wr);
}

/* Free a parent MR and its mapping; also the pin cache's release hook. */
static void stl_fmr_release(struct pvdma_parked *park)
{
	struct stl_fmr *fmr = container_of(park, struct stl_fmr, park);

	atomic64_sub(fmr->emtt.entries, &fmr->sdev->emtt_entries);
	atomic64_sub(fmr->emtt.n, &fmr->sdev->emtt_extents);
	ib_dereg_mr(fmr->pmr);
	ib_dma_unmap_sgtable_attrs(fmr->pdev, &fmr->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&fmr->sgt);
	kvfree(fmr->emtt.ext);
	kfree(fmr);
}

/**
 * stl_fmr_table() - the eMTT extent table of a mapped scatter list
 * @sdev: the device
 * @fmr: its @sgt mapped for the parent; @emtt is filled in
 * @virt_addr: the iova of the first byte
 * @merge: merge adjacent segments (not for memory that may move)
 *
 * The extents are @sgt's DMA segments, adjacent ones merged; the page size
 * is the largest that they, @virt_addr, the parent's page_size_cap and its
 * bound on 4 KiB pieces allow (emtt/emtt.c), so huge pages and contiguous
 * memory need one parent entry per huge page instead of one per 4 KiB.
 *
 * Return: 0 or -errno.
 */
int stl_fmr_table(struct stl_dev *sdev, struct stl_fmr *fmr, u64 virt_addr,
		  bool merge)
{
	struct emtt_extent *ext;
	struct scatterlist *sg;
	int i, ret;

	ext = kvmalloc_array(fmr->sgt.nents, sizeof(*ext), GFP_KERNEL_ACCOUNT);
	if (!ext)
		return -ENOMEM;
	emtt_init(&fmr->emtt, ext, fmr->sgt.nents, virt_addr, EMTT_KIND_HOST);
	fmr->emtt.merge = merge;
	for_each_sgtable_dma_sg(&fmr->sgt, sg, i) {
		ret = emtt_add(&fmr->emtt, sg_dma_address(sg), sg_dma_len(sg));
		if (ret)
			goto err;
	}
	ret = emtt_choose_within(&fmr->emtt, sdev->pdev->attrs.page_size_cap,
				 stl_parent_pieces_max(sdev) -
				 (stl_parent_pieces_max(sdev) ?
				  STL_RXE_MR_SPARE : 0));
	if (ret) {
		stl_info(sdev, "parent page sizes %#llx fit no MR page: %d\n",
			 sdev->pdev->attrs.page_size_cap, ret);
		ret = -EINVAL;
		goto err;
	}
	return 0;
err:
	kvfree(ext);
	fmr->emtt.ext = NULL;
	fmr->emtt.n = 0;
	fmr->emtt.entries = 0;
	return ret;
}

/* A new parent MR over @map's pages, iova @virt_addr, not yet valid. */
static struct stl_fmr *stl_fmr_build(struct stl_dev *sdev, struct stl_pd *spd,
				     struct pvdma_map *map, u64 start,
				     u64 virt_addr)
{
	struct stl_fmr *fmr;
	int ret, n;

	fmr = kzalloc(sizeof(*fmr), GFP_KERNEL_ACCOUNT);
	if (!fmr)
		return ERR_PTR(-ENOMEM);
	fmr->sdev = sdev;
	fmr->pdev = sdev->pdev;
	fmr->park.tag = spd;
	fmr->park.start = start;
	fmr->park.length = map->length;
	fmr->park.release = stl_fmr_release;

	/* Segments no longer than the parent's DMA device takes (as umem). */
	ret = sg_alloc_table_from_pages_segment(&fmr->sgt, map->pages,
						map->npages, map->offset,
						map->length,
						ib_dma_max_seg_size(sdev->pdev),
						GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = ib_dma_map_sgtable_attrs(sdev->pdev, &fmr->sgt,
				       DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto err_free_sgt;
	ret = stl_fmr_table(sdev, fmr, virt_addr, true);
	if (ret)
		goto err_unmap;
	/* An entry to spare for rxe before 6.4 (stl_compat.h). */
	if (fmr->emtt.entries >= INT_MAX) {
		ret = -EINVAL;
		goto err_table;
	}
	fmr->pmr = ib_alloc_mr(spd->ppd, IB_MR_TYPE_MEM_REG,
			       fmr->emtt.entries + STL_RXE_MR_SPARE);
	if (IS_ERR(fmr->pmr)) {
		ret = PTR_ERR(fmr->pmr);
		goto err_table;
	}
	n = ib_map_mr_sg(fmr->pmr, fmr->sgt.sgl, fmr->sgt.nents, NULL,
			 1UL << fmr->emtt.page_shift);
	if (n != fmr->sgt.nents) {
		ibdev_warn_ratelimited(&sdev->ibdev,
				       "parent took %d of %u segments at page size %lu\n",
				       n, fmr->sgt.nents,
				       1UL << fmr->emtt.page_shift);
		ret = n < 0 ? n : -EINVAL;
		goto err_dereg;
	}
	fmr->pmr->iova = virt_addr;
	fmr->pmr->length = map->length;
	atomic64_add(fmr->emtt.entries, &sdev->emtt_entries);
	atomic64_add(fmr->emtt.n, &sdev->emtt_extents);
	return fmr;

err_dereg:
	ib_dereg_mr(fmr->pmr);
err_table:
	kvfree(fmr->emtt.ext);
err_unmap:
	ib_dma_unmap_sgtable_attrs(sdev->pdev, &fmr->sgt, DMA_BIDIRECTIONAL, 0);
err_free_sgt:
	sg_free_table(&fmr->sgt);
err_free:
	kfree(fmr);
	return ERR_PTR(ret);
}

/*
 * A parked parent MR for the same region: valid again under a new key.
 * Returns false (having released it) if that fails; the caller builds anew.
 */
static bool stl_fmr_revive(struct stl_dev *sdev, struct stl_pd *spd,
			   struct stl_fmr *fmr, u64 virt_addr, int access)
{
	/*
	 * Each revival steps the 8-bit key: before it wraps to a key a peer
	 * may still hold from an earlier life, build a new MR instead.
	 */
	if (fmr->pmr->iova == virt_addr && ++fmr->revivals < 0xff) {
		ib_update_fast_reg_key(fmr->pmr, ib_inc_rkey(fmr->pmr->rkey));
		if (!stl_fmr_register(sdev, spd, fmr, access)) {
			stl_count(sdev, STL_CNT_MR_REUSE, 1);
			return true;
		}
	}
	stl_fmr_release(&fmr->park);
	return false;
}

/**
 * stl_mr_publish() - give @smr its keys and make it findable by them
 * @sdev: the device
 * @smr: the MR, its parent MR valid, its iova and length set
 *
 * Return: 0, or -EBUSY if the key is in use (logged).
 */
int stl_mr_publish(struct stl_dev *sdev, struct stl_mr *smr)
{
	struct stl_fmr *fmr = smr->fmr;
	int ret;

	smr->ibmr.lkey = fmr->pmr->lkey;
	smr->ibmr.rkey = fmr->pmr->rkey;
	smr->ibmr.iova = smr->iova;
	smr->ibmr.length = smr->length;
	ret = xa_insert(&sdev->mrs, smr->ibmr.lkey, smr, GFP_KERNEL);
	if (ret) {
		ibdev_err(&sdev->ibdev, "lkey 0x%x already in use\n",
			  smr->ibmr.lkey);
		return ret;
	}
	stl_count(sdev, STL_CNT_MR_REG, 1);
	if (fmr->emtt.page_shift > PAGE_SHIFT)
		stl_count(sdev, STL_CNT_EMTT_LARGE_PAGE_MRS, 1);
	return 0;
}

/**
 * stl_mr_check_args() - the checks every registration makes first
 * @sdev: the device
 * @access: the access flags asked for
 * @extra: flags allowed beyond STL_MR_ACCESS_SUPPORTED
 * @udata: the driver data (must be empty)
 * @start: the first byte's address in the memory (user address, or offset
 *	in a dma-buf)
 * @length: bytes
 * @virt_addr: the iova of the first byte
 *
 * Return: 0; -EOPNOTSUPP for access flags Stellar does not take; -EINVAL
 * for driver data, remote write or atomics without local write, and an
 * empty, wrapping or too long range or an iova at another page offset than
 * the memory (the same bound query_device reports as max_mr_size).
 */
int stl_mr_check_args(struct stl_dev *sdev, int access, int extra,
		      struct ib_udata *udata, u64 start, u64 length,
		      u64 virt_addr)
{
	if (access & ~(STL_MR_ACCESS_SUPPORTED | extra))
		return -EOPNOTSUPP;
	if (!stl_udata_empty(udata))
		return -EINVAL;
	/* Core checks this on today's paths; the parent must never see it. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE)) {
		stl_info(sdev, "MR access %#x: remote write without local write\n",
			 access);
		return -EINVAL;
	}
	if (!length || start + length < start ||
	    virt_addr + length < virt_addr ||
	    length > stl_max_mr_size(sdev) ||
	    (start & ~PAGE_MASK) != (virt_addr & ~PAGE_MASK)) {
		stl_dbg(sdev, "MR range 0x%llx+0x%llx at 0x%llx refused\n",
			start, length, virt_addr);
		return -EINVAL;
	}
	return 0;
}

struct ib_mr *stl_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 virt_addr, int access,
			      struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibpd->device);
	struct stl_pd *spd = to_stl_pd(ibpd);
	struct pvdma_parked *parked;
	struct stl_fmr *fmr = NULL;
	struct stl_mr *smr;
	bool writable;
	int ret;

	/* Windows exist on devices with rings (stl_mw.c). */
	ret = stl_mr_check_args(sdev, access,
				IB_ACCESS_MW_BIND, udata,
				start, length, virt_addr);
	if (ret)
		return ERR_PTR(ret);
	ret = stl_obj_charge(sdev, STL_OBJ_MR);
	if (ret) {
		stl_count(sdev, STL_CNT_MR_REG_FAIL, 1);
		return ERR_PTR(ret);
	}

	smr = kzalloc(sizeof(*smr), GFP_KERNEL_ACCOUNT);
	if (!smr) {
		ret = -ENOMEM;
		goto err_count;
	}
	/* The MR, its parent registration and a page pointer per page. */
	smr->kmem = sizeof(*smr) + sizeof(struct stl_fmr) +
		    (PAGE_ALIGN((start & ~PAGE_MASK) + length) >> PAGE_SHIFT) *
		    sizeof(struct page *);
	ret = stl_kmem_charge(sdev, smr->kmem);
	if (ret)
		goto err_free_only;

	writable = access & (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			     IB_ACCESS_REMOTE_ATOMIC);
	ret = pvdma_map_user(&sdev->pins, start, length, writable, spd,
			     &smr->map, &parked);
	if (ret) {
		stl_dbg(sdev, "pinning 0x%llx+0x%llx failed: %d\n", start,
			length, ret);
		goto err_free;
	}

	if (parked) {
		fmr = container_of(parked, struct stl_fmr, park);
		if (!stl_fmr_revive(sdev, spd, fmr, virt_addr, access))
			fmr = NULL;
	}
	if (!fmr) {
		fmr = stl_fmr_build(sdev, spd, smr->map, start, virt_addr);
		if (IS_ERR(fmr)) {
			ret = PTR_ERR(fmr);
			goto err_unmap;
		}
		ret = stl_fmr_register(sdev, spd, fmr, access);
		if (ret)
			goto err_release;
	}

	/* The extent table, now that its size is known. */
	ret = stl_kmem_charge(sdev, fmr->emtt.max * sizeof(*fmr->emtt.ext));
	if (ret)
		goto err_release;
	smr->kmem += fmr->emtt.max * sizeof(*fmr->emtt.ext);

	smr->fmr = fmr;
	smr->pd = spd;
	smr->start = start;
	smr->iova = virt_addr;
	smr->length = length;
	smr->access = access;
	ret = stl_mr_publish(sdev, smr);
	if (ret)
		goto err_release;
	return &smr->ibmr;

err_release:
	stl_fmr_release(&fmr->park);
err_unmap:
	pvdma_unmap_user(&sdev->pins, smr->map, NULL);
err_free:
	stl_kmem_uncharge(sdev, smr->kmem);
err_free_only:
	kfree(smr);
err_count:
	stl_obj_uncharge(sdev, STL_OBJ_MR);
	stl_count(sdev, STL_CNT_MR_REG_FAIL, 1);
	return ERR_PTR(ret);
}

/**
 * stl_rereg_user_mr() - ibv_rereg_mr: not offered
 * @ibmr: the MR
 * @flags: IB_MR_REREG_* (unused)
 * @start: unused
 * @length: unused
 * @virt_addr: unused
 * @access: unused
 * @pd: unused
 * @udata: unused
 *
 * Windows may be bound to an MR, and librxe, which drives these devices
 * as it drives rxe, has no rereg either: a new registration does it.
 *
 * Return: ERR_PTR(-EOPNOTSUPP).
 */
struct ib_mr *stl_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 virt_addr, int access,
				struct ib_pd *pd, struct ib_udata *udata)
{
	struct stl_mr *smr = to_stl_mr(ibmr);

	stl_dbg(to_stl_dev(ibmr->device), "rereg of MR 0x%x: not supported%s\n",
		ibmr->lkey, smr->dmabuf ? " (dma-buf)" : "");
	return ERR_PTR(-EOPNOTSUPP);
}

/**
 * stl_fill_res_mr_entry() - an MR's translation, for `rdma res show mr -dd`
 * @msg: the netlink message
 * @ibmr: the MR
 *
 * Return: 0, or -EMSGSIZE if @msg is full.
 */
int stl_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	const struct emtt_table *t = &to_stl_mr(ibmr)->fmr->emtt;
	struct nlattr *table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);

	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "emtt_kind",
				      emtt_kind_name(t->kind)) ||
	    rdma_nl_put_driver_u64(msg, "emtt_page_size",
				   1ULL << t->page_shift) ||
	    rdma_nl_put_driver_u64(msg, "emtt_entries", t->entries) ||
	    rdma_nl_put_driver_u32(msg, "emtt_extents", t->n)) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

/**
 * stl_mr_restore_key() - validate an MR again that a peer invalidated
 * @sdev: the device
 * @rkey: its key
 *
 * The parent MR is registered once more, same pages, access and key (see
 * stl_inv.c).  The device's mw_lock keeps deregistration (stl_mw_mr_busy())
 * away meanwhile.  Context: process.
 *
 * Return: 1 if restored, -ENOENT if @rkey is no MR of @sdev, else -errno.
 */
int stl_mr_restore_key(struct stl_dev *sdev, u32 rkey)
{
	struct stl_mr *smr;
	int ret = -ENOENT;

	mutex_lock(&sdev->mw_lock);
	smr = xa_load(&sdev->mrs, rkey);
	if (smr && smr->ibmr.rkey == rkey) {
		if (smr->dmabuf)
			ret = stl_dmabuf_mr_restore(sdev, smr);
		else
			ret = stl_fmr_register(sdev, smr->pd, smr->fmr,
					       smr->access);
		if (!ret)
			ret = 1;
	}
	mutex_unlock(&sdev->mw_lock);
	return ret;
}

int stl_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibmr->device);
	struct stl_mr *smr = to_stl_mr(ibmr);
	struct stl_fmr *fmr = smr->fmr;

	/* Windows bound to it: it stays (as on rxe). */
	if (stl_mw_mr_busy(sdev, smr))
		return -EINVAL;
	if (smr->dmabuf) {
		stl_dmabuf_mr_destroy(sdev, smr);
		goto out;
	}
	/* The key is now unusable for new work requests (and binds)... */
	/*
	 * ...then for the parent: invalidated, the parent MR may be parked
	 * for the next registration of the region; if that fails, or the
	 * parent no longer completes work requests, freeing it invalidates it
	 * as well.
	 */
	if (stl_reg_unusable(sdev) || stl_fmr_invalidate(sdev, smr->pd, fmr)) {
		stl_fmr_release(&fmr->park);
		pvdma_unmap_user(&sdev->pins, smr->map, NULL);
	} else {
		pvdma_unmap_user(&sdev->pins, smr->map, &fmr->park);
	}
out:
	stl_kmem_uncharge(sdev, smr->kmem);
	stl_obj_uncharge(sdev, STL_OBJ_MR);
	/* Lookups in stl_post.c may still read it: free after RCU. */
	kfree_rcu(smr, rcu);
	return 0;
}
