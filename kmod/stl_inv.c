// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: SEND with Invalidate from peers.
 *
 * A parent (rxe 6.1: rxe_invalidate_mr()) invalidates whatever
 * fast-registration MR of the device a SEND with Invalidate names, of any
 * PD, and every Stellar MR and window is one: a peer that knows or guesses
 * a key could take another tenant's memory away.  A parent tells only
 * afterwards, in the receive completion.  So the receiving side checks it:
 * a peer may invalidate only a bound type 2 window of the receiving QP's PD
 * (IBA 10.6.7.2.3; rxe checks no PD).  Anything else the receive reports as
 * IB_WC_REM_INV_REQ_ERR and the QP goes to the error state, as rxe does
 * with a key it refuses itself (responder class J), and the key is made
 * valid again in the background: the same pages, access and key registered
 * once more on its own PD's registration QP (stl_mr.c), so its owner and
 * the owner's peers keep working.  Until then, for a registration's time,
 * accesses through that key fail; a peer pays for each try with the QP it
 * sent on, and a wrong guess of the key's 8 random low bits does not
 * invalidate anything (the parent refuses it and the QP fails there).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/workqueue.h>

#include "kmod/stl.h"

/* Keys waiting to be restored, at most; more are logged and left. */
#define STL_INV_MAX_PENDING	1024

/* A key a peer invalidated at a parent (compared, never dereferenced). */
struct stl_inv_key {
	struct list_head entry;
	struct ib_device *pdev;
	u32 rkey;
};

static LIST_HEAD(stl_inv_keys);
static DEFINE_SPINLOCK(stl_inv_lock);
static unsigned int stl_inv_pending;

static void stl_inv_restore(struct stl_inv_key *k)
{
	struct stl_dev *owner;
	int ret;

	owner = stl_key_owner_get(k->pdev, k->rkey);
	if (!owner) {
		/* Not Stellar's (the host's own), or gone meanwhile. */
		pr_warn_ratelimited("key 0x%x invalidated by a peer is no Stellar device's: not restored\n",
				    k->rkey);
		return;
	}
	ret = stl_mr_restore_key(owner, k->rkey);
	if (ret == -ENOENT)
		ret = stl_mw_restore_key(owner, k->rkey);
	if (ret > 0)
		stl_count(owner, STL_CNT_KEYS_RESTORED, 1);
	else if (ret < 0 && ret != -ENOENT)
		ibdev_err_ratelimited(&owner->ibdev,
				      "key 0x%x invalidated by a peer could not be restored: %d\n",
				      k->rkey, ret);
	ib_device_put(&owner->ibdev);
}

static void stl_inv_work_fn(struct work_struct *work)
{
	struct stl_inv_key *k;

	for (;;) {
		spin_lock_irq(&stl_inv_lock);
		k = list_first_entry_or_null(&stl_inv_keys,
					     struct stl_inv_key, entry);
		if (k) {
			list_del(&k->entry);
			stl_inv_pending--;
		}
		spin_unlock_irq(&stl_inv_lock);
		if (!k)
			return;
		stl_inv_restore(k);
		kfree(k);
		cond_resched();
	}
}

static DECLARE_WORK(stl_inv_work, stl_inv_work_fn);

/* Whether @k's key waits already.  stl_inv_lock held. */
static bool stl_inv_queued(const struct stl_inv_key *k)
{
	struct stl_inv_key *q;

	lockdep_assert_held(&stl_inv_lock);
	list_for_each_entry(q, &stl_inv_keys, entry)
		if (q->pdev == k->pdev && q->rkey == k->rkey)
			return true;
	return false;
}

/**
 * stl_remote_inv() - a peer's SEND with Invalidate reached @sqp
 * @sqp: the receiving QP
 * @rkey: the key it named, which the parent has invalidated
 *
 * Context: any (the completion path; takes no mutex, allocates atomically).
 *
 * Return: true if the peer was allowed to (a bound type 2 window of the
 * QP's PD); false if not, the key then being restored in the background:
 * the caller completes the receive with IB_WC_REM_INV_REQ_ERR.
 */
static bool stl_remote_inv(struct stl_qp *sqp, u32 rkey)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);
	struct stl_inv_key *k;
	unsigned long flags;

	if (stl_mw_remote_invalidated(sdev, sqp->ibqp.pd, rkey))
		return true;
	stl_count(sdev, STL_CNT_REMOTE_INV_REFUSED, 1);
	ibdev_warn_ratelimited(&sdev->ibdev,
			       "QP %u: a peer's SEND with Invalidate named key 0x%x, not a window of the QP's PD: refused, key restored\n",
			       sqp->ibqp.qp_num, rkey);
	k = kmalloc(sizeof(*k), GFP_ATOMIC);
	if (k) {
		k->pdev = sdev->pdev;
		k->rkey = rkey;
		spin_lock_irqsave(&stl_inv_lock, flags);
		if (stl_inv_queued(k)) {
			/* Once is enough: a second REG_MR would fail. */
			spin_unlock_irqrestore(&stl_inv_lock, flags);
			kfree(k);
			return false;
		}
		if (stl_inv_pending < STL_INV_MAX_PENDING) {
			list_add_tail(&k->entry, &stl_inv_keys);
			stl_inv_pending++;
			k = NULL;
		}
		spin_unlock_irqrestore(&stl_inv_lock, flags);
		if (!k) {
			queue_work(system_wq, &stl_inv_work);
			return false;
		}
		kfree(k);
	}
	ibdev_err_ratelimited(&sdev->ibdev,
			      "key 0x%x invalidated by a peer cannot be queued for restoring: it stays invalid\n",
			      rkey);
	return false;
}

/**
 * stl_wc_remote_inv() - check a parent receive completion of @sqp
 * @sqp: the QP it belongs to
 * @wc: the parent's completion, rewritten in place
 *
 * A successful receive of a SEND with Invalidate that the peer was not
 * allowed to send (stl_remote_inv()) becomes IB_WC_REM_INV_REQ_ERR.
 * Context: any (both completion paths).
 */
void stl_wc_remote_inv(struct stl_qp *sqp, struct ib_wc *wc)
{
	if (wc->status == IB_WC_SUCCESS &&
	    (wc->wc_flags & IB_WC_WITH_INVALIDATE) &&
	    !stl_remote_inv(sqp, wc->ex.invalidate_rkey)) {
		wc->status = IB_WC_REM_INV_REQ_ERR;
		wc->wc_flags &= ~IB_WC_WITH_INVALIDATE;
		wc->byte_len = 0;
	}
}

/**
 * stl_inv_exit() - module exit: no device is left, drop what waits
 */
void stl_inv_exit(void)
{
	struct stl_inv_key *k, *tmp;

	cancel_work_sync(&stl_inv_work);
	list_for_each_entry_safe(k, tmp, &stl_inv_keys, entry) {
		list_del(&k->entry);
		kfree(k);
	}
	stl_inv_pending = 0;
}
