// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: completion queues.
 *
 * A virtual CQ is a parent CQ.  Completions are read from it on demand and
 * handed over with the virtual QP in wc->qp.  The parent's completion and
 * error events are raised on the virtual CQ, so completion channels work.
 *
 * A parent completion names its QP by pointer only.  Before a parent QP is
 * freed, the CQs it used are drained into a small ring (dropping the dying
 * QP's entries), so no completion ever names a freed QP.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "kmod/stl.h"

#define STL_POLL_BATCH 8

static void stl_cq_comp(struct ib_cq *pcq, void *ctx)
{
	struct stl_cq *scq = ctx;

	if (scq->ibcq.comp_handler)
		scq->ibcq.comp_handler(&scq->ibcq, scq->ibcq.cq_context);
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

int stl_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata)
{
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
	if (atomic_inc_return(&sdev->n_cq) > STL_MAX_CQ) {
		stl_info(sdev, "CQ limit %d reached\n", STL_MAX_CQ);
		ret = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&scq->lock);
	pattr.cqe = attr->cqe;
	pattr.comp_vector = attr->comp_vector %
			    max(sdev->pdev->num_comp_vectors, 1);
	pcq = ib_create_cq(sdev->pdev, stl_cq_comp, stl_cq_event, scq, &pattr);
	if (IS_ERR(pcq)) {
		ret = PTR_ERR(pcq);
		goto err_count;
	}
	scq->ring_size = pcq->cqe + 1;
	scq->ring = kvcalloc(scq->ring_size, sizeof(*scq->ring), GFP_KERNEL);
	if (!scq->ring) {
		ret = -ENOMEM;
		goto err_destroy_cq;
	}
	scq->pcq = pcq;
	ibcq->cqe = pcq->cqe;
	return 0;

err_destroy_cq:
	ib_destroy_cq(pcq);
err_count:
	atomic_dec(&sdev->n_cq);
	return ret;
}

int stl_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibcq->device);
	struct stl_cq *scq = to_stl_cq(ibcq);

	ib_destroy_cq(scq->pcq);
	kvfree(scq->ring);
	atomic_dec(&sdev->n_cq);
	return 0;
}

/* Parent completion -> virtual: the QP becomes ours. */
static void stl_wc_translate(struct ib_wc *wc)
{
	struct stl_qp *sqp = wc->qp->qp_context;

	wc->qp = &sqp->ibqp;
	wc->port_num = 1;
}

static void stl_ring_push(struct stl_cq *scq, const struct ib_wc *wc)
{
	u32 tail = (scq->ring_head + scq->ring_count) % scq->ring_size;

	lockdep_assert_held(&scq->lock);
	scq->ring[tail] = *wc;
	scq->ring_count++;
}

/**
 * stl_cq_drain_qp() - take a dying parent QP's completions out of a CQ
 * @scq: a CQ the QP used
 * @dead_pqp: the parent QP, already destroyed; compared, never dereferenced
 *
 * Moves every completion still in the parent CQ into the ring, translated,
 * except those of @dead_pqp, and drops the dying QP's entries already in the
 * ring.  The ring holds at most what the parent CQ could, so it cannot
 * overflow: the user could not have had more completions pending.
 *
 * Context: holds sdev->qp_lifecycle, so no parent QP of this device is
 * created (and cannot reuse @dead_pqp's address) while this runs.
 */
void stl_cq_drain_qp(struct stl_cq *scq, struct ib_qp *dead_pqp)
{
	struct ib_wc wc[STL_POLL_BATCH];
	u32 i, n, kept = 0;
	unsigned long flags;
	int got;

	spin_lock_irqsave(&scq->lock, flags);
	/* Filter the ring first: it holds translated entries. */
	n = scq->ring_count;
	for (i = 0; i < n; i++) {
		struct ib_wc *e = &scq->ring[(scq->ring_head + i) %
					     scq->ring_size];

		if (to_stl_qp(e->qp)->pqp == dead_pqp)
			continue;
		scq->ring[(scq->ring_head + kept) % scq->ring_size] = *e;
		kept++;
	}
	scq->ring_count = kept;

	do {
		got = ib_poll_cq(scq->pcq, STL_POLL_BATCH, wc);
		for (i = 0; got > 0 && i < got; i++) {
			if (wc[i].qp == dead_pqp)
				continue;
			stl_wc_translate(&wc[i]);
			if (scq->ring_count < scq->ring_size)
				stl_ring_push(scq, &wc[i]);
		}
	} while (got == STL_POLL_BATCH);
	spin_unlock_irqrestore(&scq->lock, flags);
}

int stl_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct stl_cq *scq = to_stl_cq(ibcq);
	struct stl_dev *sdev = to_stl_dev(ibcq->device);
	unsigned long flags;
	int done = 0, got, i;

	spin_lock_irqsave(&scq->lock, flags);
	while (scq->ring_count && done < num) {
		wc[done++] = scq->ring[scq->ring_head];
		scq->ring_head = (scq->ring_head + 1) % scq->ring_size;
		scq->ring_count--;
	}
	if (done < num) {
		got = ib_poll_cq(scq->pcq, num - done, wc + done);
		for (i = 0; i < got; i++)
			stl_wc_translate(&wc[done + i]);
		if (got > 0)
			done += got;
	}
	spin_unlock_irqrestore(&scq->lock, flags);

	if (done)
		stl_count(sdev, STL_CNT_COMPLETIONS, done);
	return done;
}

int stl_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct stl_cq *scq = to_stl_cq(ibcq);
	unsigned long irqflags;
	bool pending;
	int ret;

	ret = ib_req_notify_cq(scq->pcq, flags);
	if (ret < 0)
		return ret;

	spin_lock_irqsave(&scq->lock, irqflags);
	pending = scq->ring_count;
	spin_unlock_irqrestore(&scq->lock, irqflags);
	/*
	 * Completions already moved to the ring will not raise a parent event:
	 * report them as missed, and wake a waiting user (who cannot ask for
	 * missed events through the legacy command).
	 */
	if (pending) {
		if (flags & IB_CQ_REPORT_MISSED_EVENTS)
			return 1;
		stl_cq_comp(scq->pcq, scq);
	}
	return ret;
}
