// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: completion queues.
 *
 * A virtual CQ is a parent CQ and a ring in the rxe user ABI, mapped into
 * the process: the parent's completion handler has the ring filled with
 * the completions, translated (stl_ring.c), and the process polls the ring
 * with no system call.  The parent's completion and error events are
 * raised on the virtual CQ, so completion channels work.
 *
 * A parent completion names its QP by pointer only.  While a parent QP is
 * destroyed, its CQs drop its completions without reading the parent QP,
 * so no completion is ever read through a freed parent QP.  Completions
 * name their QP through a per-CQ stub (struct stl_cq_qref) that outlives
 * the QP.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "kmod/stl.h"

/*
 * Stubs freed by destroyed QPs wait until this many are free before one is
 * given to a new QP: ib_uverbs reads a polled completion's stub.qp_num
 * after stl_poll_cq() returned, so a stub handed on at once could make that
 * completion report the new QP's number.  Reusing the longest-free stub
 * only, after this many later destroys, leaves that window to a poller
 * stalled between two instructions for as many QP destroy/create cycles.
 */
#define STL_QREF_QUARANTINE 16

/* How long a resize waits for the parent to complete posted sends. */
#define STL_RESIZE_SETTLE_MS 20

/*
 * rxe before Linux 6.4 raises a CQ's completion event from a tasklet that
 * its destroy_cq does not kill: a parent CQ freed while that tasklet is
 * still queued (a completion on an armed CQ just before the QPs and the CQ
 * go, as when a process is killed) has the softirq run a freed tasklet.
 * Such parent CQs are destroyed this long after the virtual CQ, with
 * handlers that do nothing: the tasklet runs long before.
 */
#define STL_CQ_GRACE	(HZ / 4)

/**
 * struct stl_cq_grave - a parent CQ waiting out its grace period
 * @entry: in stl_dev.cq_graves, oldest first
 * @pcq: the parent CQ, no longer used by anyone
 * @due: jiffies from which it may be destroyed
 */
struct stl_cq_grave {
	struct list_head entry;
	struct ib_cq *pcq;
	unsigned long due;
};

static void stl_cq_nop_comp(struct ib_cq *pcq, void *ctx)
{
}

static void stl_cq_nop_event(struct ib_event *ev, void *ctx)
{
}

static bool stl_cq_needs_grace(struct stl_dev *sdev)
{
	return STL_RXE_CQ_TASKLET &&
	       sdev->pdev->ops.driver_id == RDMA_DRIVER_RXE;
}

static void stl_cq_bury(struct stl_dev *sdev, struct ib_cq *pcq)
{
	int ret = ib_destroy_cq_user(pcq, NULL);

	if (ret)
		ibdev_err_ratelimited(&sdev->ibdev,
				      "parent CQ destroy failed (%d) after its grace period: leaked\n",
				      ret);
}

/**
 * stl_cq_graves_reap() - destroy parent CQs whose grace period is over
 * @sdev: the device
 * @all: every one, waiting out what is left of their grace periods (at
 *	removal, once no CQ can be destroyed any more)
 */
static void stl_cq_graves_reap(struct stl_dev *sdev, bool all)
{
	struct stl_cq_grave *g, *tmp;
	LIST_HEAD(due);
	bool more;

	spin_lock_bh(&sdev->grave_lock);
	list_for_each_entry_safe(g, tmp, &sdev->cq_graves, entry) {
		if (!all && time_before(jiffies, g->due))
			break;
		list_move_tail(&g->entry, &due);
	}
	more = !list_empty(&sdev->cq_graves);
	spin_unlock_bh(&sdev->grave_lock);

	list_for_each_entry_safe(g, tmp, &due, entry) {
		if (time_before(jiffies, g->due))
			schedule_timeout_uninterruptible(g->due - jiffies);
		stl_cq_bury(sdev, g->pcq);
		kfree(g);
	}
	if (more && !all)
		queue_delayed_work(system_wq, &sdev->grave_work, STL_CQ_GRACE);
}

static void stl_cq_graves_work(struct work_struct *work)
{
	struct stl_dev *sdev = container_of(to_delayed_work(work),
					    struct stl_dev, grave_work);

	stl_cq_graves_reap(sdev, false);
}

/**
 * stl_cq_graves_init() - set up a device's list of parent CQs to destroy
 * @sdev: the device
 */
void stl_cq_graves_init(struct stl_dev *sdev)
{
	INIT_LIST_HEAD(&sdev->cq_graves);
	spin_lock_init(&sdev->grave_lock);
	INIT_DELAYED_WORK(&sdev->grave_work, stl_cq_graves_work);
}

/**
 * stl_cq_graves_fini() - destroy every parent CQ left in its grace period
 * @sdev: the device, with no CQ left
 */
void stl_cq_graves_fini(struct stl_dev *sdev)
{
	cancel_delayed_work_sync(&sdev->grave_work);
	stl_cq_graves_reap(sdev, true);
}

/**
 * stl_cq_release_parent() - destroy a parent CQ that nothing uses any more
 * @sdev: the device whose grave list keeps it through its grace period
 * @pcq: the parent CQ (its handlers become no-ops when it must wait)
 *
 * Destroyed now, or after its grace period on parents that may still run
 * a queued completion event of it (STL_RXE_CQ_TASKLET).
 *
 * Return: 0, or the parent's error (the CQ is then kept).
 */
int stl_cq_release_parent(struct stl_dev *sdev, struct ib_cq *pcq)
{
	struct stl_cq_grave *g;
	bool first;

	if (!stl_cq_needs_grace(sdev))
		return ib_destroy_cq_user(pcq, NULL);
	/* What ib_destroy_cq_user() refuses, refused now. */
	if (atomic_read(&pcq->usecnt))
		return -EBUSY;
	g = kmalloc(sizeof(*g), GFP_KERNEL);
	if (!g) {
		/* Wait it out here, while the virtual CQ still lives. */
		schedule_timeout_uninterruptible(STL_CQ_GRACE);
		return ib_destroy_cq_user(pcq, NULL);
	}
	/* A queued tasklet calls these: the virtual CQ is gone by then. */
	WRITE_ONCE(pcq->comp_handler, stl_cq_nop_comp);
	WRITE_ONCE(pcq->event_handler, stl_cq_nop_event);
	g->pcq = pcq;
	g->due = jiffies + STL_CQ_GRACE;
	spin_lock_bh(&sdev->grave_lock);
	first = list_empty(&sdev->cq_graves);
	list_add_tail(&g->entry, &sdev->cq_graves);
	spin_unlock_bh(&sdev->grave_lock);
	if (first)
		queue_delayed_work(system_wq, &sdev->grave_work, STL_CQ_GRACE);
	return 0;
}

static void stl_cq_comp(struct ib_cq *pcq, void *ctx)
{
	struct stl_cq *scq = ctx;

	/* Not before the ring is made: no QP can use the CQ until then. */
	if (scq->uring.hdr)
		stl_ring_cq_comp(scq);
}

static void stl_cq_event(struct ib_event *ev, void *ctx)
{
	struct stl_cq *scq = ctx;
	struct ib_event out = *ev;

	if (!scq->ibcq.event_handler)
		return;
	out.device = scq->ibcq.device;
	out.element.cq = &scq->ibcq;
	scq->ibcq.event_handler(&out, scq->ibcq.cq_context);
}

/* Module memory of a CQ of @cqe entries (kmem_quota). */
static u64 stl_cq_kmem(struct stl_dev *sdev, u32 cqe)
{
	return sizeof(struct stl_cq) + stl_ring_cq_kmem(cqe);
}

int stl_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct stl_create_cq_arg *arg)
{
	struct ib_udata *udata = stl_create_cq_udata(arg);
	struct stl_dev *sdev = to_stl_dev(ibcq->device);
	struct stl_cq *scq = to_stl_cq(ibcq);
	struct ib_cq_init_attr pattr = {};
	struct ib_cq *pcq;
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (!stl_udata_empty(udata))
		return -EINVAL;
	if (!attr->cqe || attr->cqe > sdev->pdev->attrs.max_cqe)
		return -EINVAL;
	ret = stl_obj_charge(sdev, STL_OBJ_CQ);
	if (ret)
		return ret;
	ret = stl_quota_charge(sdev, true, attr->cqe);
	if (ret)
		goto err_count;
	scq->charged = attr->cqe;
	scq->kmem = stl_cq_kmem(sdev, attr->cqe);
	ret = stl_kmem_charge(sdev, scq->kmem);
	if (ret)
		goto err_charge;

	spin_lock_init(&scq->lock);
	mutex_init(&scq->resize_lock);
	INIT_LIST_HEAD(&scq->qrefs);
	pattr.cqe = attr->cqe;
	pattr.comp_vector = attr->comp_vector %
			    max(sdev->pdev->num_comp_vectors, 1);
	pcq = ib_create_cq(sdev->pdev, stl_cq_comp, stl_cq_event, scq, &pattr);
	if (IS_ERR(pcq)) {
		ret = PTR_ERR(pcq);
		goto err_kmem;
	}
	/* The parent may round up: charge what it made. */
	stl_quota_uncharge(sdev, true, (s64)scq->charged - pcq->cqe);
	scq->charged = pcq->cqe;
	scq->pcq = pcq;
	ibcq->cqe = pcq->cqe;
	ret = stl_ring_cq_create(scq, udata);
	if (ret)
		goto err_destroy_cq;
	return 0;

err_destroy_cq:
	ib_destroy_cq(pcq);
err_kmem:
	stl_kmem_uncharge(sdev, scq->kmem);
err_charge:
	stl_quota_uncharge(sdev, true, scq->charged);
err_count:
	stl_obj_uncharge(sdev, STL_OBJ_CQ);
	return ret;
}

int stl_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibcq->device);
	struct stl_cq *scq = to_stl_cq(ibcq);
	struct stl_cq_qref *ref, *tmp;
	int ret;

	/* The ring's filler stops touching the parent CQ before it goes. */
	stl_ring_cq_quiesce(scq, true);
	ret = stl_cq_release_parent(sdev, scq->pcq);
	if (ret) {
		stl_ring_cq_quiesce(scq, false);
		/*
		 * The parent CQ lives on and may still call stl_cq_comp() on
		 * @scq: keep all of it (core keeps the CQ too) and let a later
		 * destroy retry.
		 */
		ibdev_err_ratelimited(ibcq->device,
				      "parent CQ destroy failed (%d): CQ kept\n",
				      ret);
		return ret;
	}
	stl_ring_cq_destroy(scq);
	/* No poll can be running: ib_uverbs holds the CQ while it polls. */
	list_for_each_entry_safe(ref, tmp, &scq->qrefs, entry)
		kfree(ref);
	stl_quota_uncharge(sdev, true, scq->charged);
	stl_kmem_uncharge(sdev, scq->kmem);
	stl_obj_uncharge(sdev, STL_OBJ_CQ);
	return 0;
}

/**
 * stl_resize_cq() - change the number of entries of a CQ
 * @ibcq: the CQ
 * @cqe: entries wanted; at least those the CQ holds now
 * @udata: struct rxe_resize_cq_resp (where the new ring is mapped)
 *
 * The parent CQ is resized first, then the ring; completions waiting in
 * the ring move to the new one in order.
 *
 * Return: 0; -EINVAL for a size out of range or below what the CQ holds,
 * -ENOMEM over the CQE or kmem quota, -EOPNOTSUPP without a ring, or the
 * parent's error.
 */
int stl_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibcq->device);
	struct stl_cq *scq = to_stl_cq(ibcq);
	u32 extra = 0, old;
	u64 kmem;
	int ret, i;

	if (!scq->uring.hdr)
		return -EOPNOTSUPP;
	if (cqe <= 0 || cqe > sdev->pdev->attrs.max_cqe ||
	    cqe >= STL_RING_MAX_ENTRIES)
		return -EINVAL;
	mutex_lock(&scq->resize_lock);
	/*
	 * What is counted are the completions of the work posted so far (rxe
	 * runs a process's sends before its doorbell returns; the parent may
	 * run Stellar's later, from its own workers): a moment for those.
	 */
	for (i = 0; i < STL_RESIZE_SETTLE_MS && atomic_read(&scq->inflight) > 0;
	     i++)
		usleep_range(1000, 1500);
	stl_ring_cq_fill(scq);
	/* Checked again when the ring is swapped; the parent is left alone. */
	if (cqe < stl_ring_cq_count(scq)) {
		ret = -EINVAL;
		goto out;
	}
	old = scq->pcq->cqe;
	kmem = stl_cq_kmem(sdev, cqe);
	if (kmem > scq->kmem) {
		ret = stl_kmem_charge(sdev, kmem - scq->kmem);
		if (ret)
			goto out;
	}
	if (cqe > scq->charged) {
		extra = cqe - scq->charged;
		ret = stl_quota_charge(sdev, true, extra);
		if (ret)
			goto out_kmem;
	}
	ret = ib_resize_cq(scq->pcq, cqe);
	if (ret) {
		stl_dbg(sdev, "parent CQ resize to %d: %d\n", cqe, ret);
		stl_quota_uncharge(sdev, true, extra);
		goto out_kmem;
	}
	/* Charge what the parent made of it. */
	stl_quota_uncharge(sdev, true,
			   (s64)scq->charged + extra - scq->pcq->cqe);
	scq->charged = scq->pcq->cqe;
	ret = stl_ring_cq_resize(scq, max_t(u32, cqe, scq->pcq->cqe), udata);
	if (ret && scq->pcq->cqe < old && !ib_resize_cq(scq->pcq, old)) {
		/* The ring stayed: so does the parent's room behind it. */
		stl_quota_uncharge(sdev, true,
				   (s64)scq->charged - scq->pcq->cqe);
		scq->charged = scq->pcq->cqe;
	}
	if (ret)
		goto out_kmem;
	/* The ring changed: it holds what the new size charges. */
	if (kmem < scq->kmem)
		stl_kmem_uncharge(sdev, scq->kmem - kmem);
	scq->kmem = kmem;
	goto out;
out_kmem:
	if (kmem > scq->kmem)
		stl_kmem_uncharge(sdev, kmem - scq->kmem);
out:
	mutex_unlock(&scq->resize_lock);
	return ret;
}

/**
 * stl_cq_qref_get() - a stub for a new QP's completions on @scq
 * @scq: the CQ
 *
 * A freed stub is reused only once STL_QREF_QUARANTINE more are free, so
 * a CQ holds at most that many stubs beyond its live QPs.
 *
 * Return: a stub (qp_num and qp_type to be set by the caller), or NULL
 * without memory.
 */
struct stl_cq_qref *stl_cq_qref_get(struct stl_cq *scq)
{
	struct stl_cq_qref *ref, *oldest = NULL, *fresh;
	unsigned long flags;
	unsigned int nfree = 0;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	spin_lock_irqsave(&scq->lock, flags);
	list_for_each_entry(ref, &scq->qrefs, entry) {
		if (ref->busy)
			continue;
		if (!oldest)
			oldest = ref;
		nfree++;
	}
	if (oldest && (nfree > STL_QREF_QUARANTINE || !fresh)) {
		oldest->busy = true;
		list_move_tail(&oldest->entry, &scq->qrefs);
		spin_unlock_irqrestore(&scq->lock, flags);
		kfree(fresh);
		return oldest;
	}
	if (fresh) {
		fresh->busy = true;
		list_add_tail(&fresh->entry, &scq->qrefs);
	}
	spin_unlock_irqrestore(&scq->lock, flags);
	return fresh;
}

/**
 * stl_cq_qref_put() - a QP no longer uses its stub on @scq
 * @scq: the CQ
 * @ref: the stub; kept for a later QP, freed with the CQ
 */
void stl_cq_qref_put(struct stl_cq *scq, struct stl_cq_qref *ref)
{
	unsigned long flags;

	spin_lock_irqsave(&scq->lock, flags);
	ref->busy = false;
	/* Free stubs are kept in the order they were freed. */
	list_move_tail(&ref->entry, &scq->qrefs);
	spin_unlock_irqrestore(&scq->lock, flags);
}

/**
 * stl_cq_mark_dying() - stop reading a parent QP's completions
 * @scq: a CQ the QP uses
 * @pqp: the parent QP about to be destroyed
 *
 * Context: holds sdev->qp_lifecycle; stl_cq_drain_qp() ends the mark.
 */
void stl_cq_mark_dying(struct stl_cq *scq, struct ib_qp *pqp)
{
	unsigned long flags;

	spin_lock_irqsave(&scq->lock, flags);
	scq->dying = pqp;
	spin_unlock_irqrestore(&scq->lock, flags);
}

/**
 * stl_cq_drain_qp() - end a parent QP's destroy on a CQ
 * @scq: a CQ the QP used, marked by stl_cq_mark_dying()
 * @destroyed: the parent destroyed the QP; false if it refused to, and the
 *	QP lives on with its completions
 *
 * Fills the ring with the completions still in the parent CQ: those of a
 * destroyed dying QP are dropped (stl_ring_cq_fill()); the mark ends first
 * for a QP the parent kept, so its completions stay.
 *
 * Context: holds sdev->qp_lifecycle, so no parent QP of this device is
 * created (and cannot reuse the dying QP's address) while this runs.
 */
void stl_cq_drain_qp(struct stl_cq *scq, bool destroyed)
{
	unsigned long flags;

	if (destroyed)
		stl_ring_cq_fill(scq);
	spin_lock_irqsave(&scq->lock, flags);
	scq->dying = NULL;
	spin_unlock_irqrestore(&scq->lock, flags);
	if (!destroyed)
		stl_ring_cq_fill(scq);
}

/* A CQ's completions are in its ring, polled in the process's memory. */
int stl_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	return -EINVAL;
}

int stl_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	return stl_ring_cq_notify(to_stl_cq(ibcq), flags);
}
