// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: queues mapped into the process, in the rxe user ABI.
 *
 * Every Stellar device is driven through rings: by the rxe provider every
 * rdma-core ships (librxe) when its name starts with "rxe" (see
 * stl_main.c), by libstellar otherwise.  Its CQs, send queues and receive
 * queues are rings of the layout librxe maps
 * (<rdma/rdma_user_rxe.h> entries behind a header of two indices), in
 * vmalloc memory the process maps through the uverbs file:
 *
 * - CQ: Stellar is the producer.  The parent CQ stays armed; its completion
 *   handler schedules a tasklet or work item (stl_ring_cq_fill()) that polls it,
 *   translates each completion and writes it into the ring.  The process
 *   polls with no system call.
 * - Send queue: the process is the producer and rings a doorbell, a
 *   POST_SEND with no work request (stl_ring_doorbell()).  Each entry is
 *   copied out of the ring into kernel memory before it is looked at,
 *   checked exactly as a posted work request is (stl_prep_send()), and
 *   posted to the parent with its ring index as wr_id.  The consumer index
 *   moves when the parent completes the entry, so the ring never holds
 *   more than the parent queue does.  A refused entry moves the QP to the
 *   error state and completes with an error.
 * - Receive queue: librxe posts receives with no system call at all.
 *   Entries are taken at modify_qp, at every doorbell, after receive
 *   completions and by a backstop worker (every jiffy while the device has
 *   rings), so a pure receiver never stalls.
 * - In the error state, the entries the parent does not hold complete with
 *   IB_WC_WR_FLUSH_ERR once the parent has flushed its own, in order.
 *
 * The parent's own queues are never mapped: a parent kernel QP trusts its
 * work requests, so nothing the process writes reaches it unchecked.
 * Indices read from the mapped header are masked before use; the mapped
 * copies of Stellar's own indices are written, never read back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/rdma_user_rxe.h>

#include "kmod/stl.h"

/* Layout of a mapped queue (librxe's struct rxe_queue_buf). */
struct stl_ring_hdr {
	u32 log2_elem_size;
	u32 index_mask;
	u32 pad_1[30];
	u32 producer_index;
	u32 pad_2[31];
	u32 consumer_index;
	u32 pad_3[31];
	u8 data[];
};

static_assert(offsetof(struct stl_ring_hdr, producer_index) == 128);
static_assert(offsetof(struct stl_ring_hdr, consumer_index) == 256);
static_assert(offsetof(struct stl_ring_hdr, data) == 384);

/**
 * struct stl_mmap - one mappable queue buffer
 * @rdma: the core's entry: its offset is what userspace passes to mmap()
 * @buf: @pages mapped for the kernel
 * @pages: zeroed pages, charged to the memory cgroup of the process that
 *	made the queue; freed when the entry is (stl_mmap_free()), pages
 *	still mapped by a process live on until it unmaps them
 * @npages: entries of @pages
 */
struct stl_mmap {
	struct rdma_user_mmap_entry rdma;
	void *buf;
	struct page **pages;
	unsigned long npages;
};

#define STL_CQE_SIZE		64	/* >= struct ib_uverbs_wc, power of 2 */
#define STL_RQ_POLL_BUDGET	64	/* receive entries taken per pass */
#define STL_RQ_LOW_WATER	16	/* fewer held: take new receives at once */
#define STL_WR_RECV		(1ULL << 32)	/* parent wr_id: receive queue */
#define STL_WR_MARK		(1ULL << 33)	/* parent wr_id: marker */
#define STL_WR_FENCE		(1ULL << 34)	/* marker: before a refusal */

/* stl_qp.fence: a refused send entry waits for the entries before it. */
enum { STL_FENCE_NONE, STL_FENCE_WANTED, STL_FENCE_POSTED };

static_assert(sizeof(struct ib_uverbs_wc) <= STL_CQE_SIZE);

int stl_mmap(struct ib_ucontext *uc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *e;
	struct stl_mmap *mm;
	int ret;

	e = rdma_user_mmap_entry_get(uc, vma);
	if (!e)
		return -EINVAL;
	mm = container_of(e, struct stl_mmap, rdma);
	/* The whole buffer (the core checked the length), not at vm_pgoff. */
	stl_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	ret = vm_map_pages_zero(vma, mm->pages, mm->npages);
	rdma_user_mmap_entry_put(e);
	return ret;
}

static void stl_mmap_release(struct stl_mmap *mm)
{
	unsigned long i;

	if (mm->buf)
		vunmap(mm->buf);
	for (i = 0; i < mm->npages; i++)
		put_page(mm->pages[i]);
	kvfree(mm->pages);
	kfree(mm);
}

void stl_mmap_free(struct rdma_user_mmap_entry *entry)
{
	stl_mmap_release(container_of(entry, struct stl_mmap, rdma));
}

/*
 * A zeroed buffer of @size bytes (page aligned) that the kernel and a
 * process can map, its pages charged to the current memory cgroup.
 */
static struct stl_mmap *stl_mmap_alloc(size_t size)
{
	unsigned long i, n = size >> PAGE_SHIFT;
	struct stl_mmap *mm;

	mm = kzalloc(sizeof(*mm), GFP_KERNEL_ACCOUNT);
	if (!mm)
		return NULL;
	mm->pages = kvcalloc(n, sizeof(*mm->pages), GFP_KERNEL_ACCOUNT);
	if (!mm->pages)
		goto err;
	for (i = 0; i < n; i++) {
		mm->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!mm->pages[i])
			goto err;
		mm->npages++;
	}
	mm->buf = vmap(mm->pages, n, VM_MAP, PAGE_KERNEL);
	if (!mm->buf)
		goto err;
	return mm;
err:
	stl_mmap_release(mm);
	return NULL;
}

/* Module memory of a ring of at least @num entries of @elem bytes. */
static u64 stl_ring_bytes(u64 num, u64 elem)
{
	u64 size = PAGE_ALIGN(sizeof(struct stl_ring_hdr) +
			      roundup_pow_of_two(num + 1) * elem);

	return sizeof(struct stl_mmap) + size +
	       (size >> PAGE_SHIFT) * sizeof(struct page *);
}

/**
 * stl_ring_cq_kmem() - module memory the ring of a CQ of @cqe entries takes
 * @cqe: entries asked for
 *
 * Return: bytes, for stl_kmem_charge().
 */
u64 stl_ring_cq_kmem(u32 cqe)
{
	return stl_ring_bytes(cqe, STL_CQE_SIZE);
}

/**
 * stl_ring_qp_kmem() - module memory the rings of a QP take
 * @init: the QP's capacities (checked against the device limits)
 * @max_inline: the inline data its send entries hold
 *
 * Return: bytes, for stl_kmem_charge(): both rings, the state Stellar keeps
 * per entry and the staging buffers.
 */
u64 stl_ring_qp_kmem(const struct ib_qp_init_attr *init, u32 max_inline)
{
	u64 sq_elem, rq_elem, nsq, nrq, b;

	sq_elem = roundup_pow_of_two(sizeof(struct rxe_send_wqe) +
				     max_t(u64, (u64)init->cap.max_send_sge *
					   sizeof(struct rxe_sge), max_inline));
	rq_elem = roundup_pow_of_two(sizeof(struct rxe_recv_wqe) +
				     (u64)init->cap.max_recv_sge *
				     sizeof(struct rxe_sge));
	nsq = init->cap.max_send_wr;
	nrq = init->cap.max_recv_wr;
	b = stl_ring_bytes(nsq, sq_elem) + (nsq + 1) * sizeof(struct stl_uwr) +
	    sq_elem + sizeof(struct stl_send_buf);
	if (!init->srq)
		b += stl_ring_bytes(nrq, rq_elem) +
		     (nrq + 1) * sizeof(struct stl_uwr) + rq_elem;
	return b;
}

/**
 * stl_ring_srq_kmem() - module memory the ring of an SRQ takes
 * @max_wr: entries asked for
 * @max_sge: scatter entries per receive
 *
 * Return: bytes, for stl_kmem_charge().
 */
u64 stl_ring_srq_kmem(u32 max_wr, u32 max_sge)
{
	u64 elem = roundup_pow_of_two(sizeof(struct rxe_recv_wqe) +
				      (u64)max_sge * sizeof(struct rxe_sge));

	return stl_ring_bytes(max_wr, elem) + elem +
	       ((u64)max_wr + 1) * (sizeof(struct stl_uwr) + sizeof(u32));
}

/*
 * Allocate a ring of at least @num entries of @elem bytes (a power of two)
 * and make it mappable in @uc; *@num becomes its capacity and @mi what
 * userspace needs to map it.
 */
static int stl_ring_alloc(struct stl_ring *r, struct ib_ucontext *uc,
			  u32 *num, u32 elem, struct mminfo *mi)
{
	struct stl_mmap *mm;
	u32 slots;
	size_t size;
	int ret;

	if (*num >= STL_RING_MAX_ENTRIES || !is_power_of_2(elem))
		return -EINVAL;
	slots = roundup_pow_of_two(*num + 1);
	size = PAGE_ALIGN(sizeof(struct stl_ring_hdr) + (size_t)slots * elem);
	mm = stl_mmap_alloc(size);
	if (!mm)
		return -ENOMEM;
	r->hdr = mm->buf;
	r->mask = slots - 1;
	r->log2 = ilog2(elem);
	r->hdr->log2_elem_size = r->log2;
	r->hdr->index_mask = r->mask;
	ret = rdma_user_mmap_entry_insert(uc, &mm->rdma, size);
	if (ret) {
		stl_mmap_release(mm);
		r->hdr = NULL;
		return ret;
	}
	r->mm = mm;
	mi->offset = rdma_user_mmap_get_offset(&mm->rdma);
	mi->size = size;
	mi->pad = 0;
	*num = slots - 1;
	return 0;
}

/* The ring is no longer used; mapped pages stay with the process. */
static void stl_ring_free(struct stl_ring *r)
{
	if (r->mm)
		rdma_user_mmap_entry_remove(&r->mm->rdma);
	r->mm = NULL;
	r->hdr = NULL;
}

static inline void *stl_ring_slot(struct stl_ring *r, u32 idx)
{
	return r->hdr->data + ((size_t)(idx & r->mask) << r->log2);
}

/* The process's producer index, masked: it may have written anything. */
static inline u32 stl_ring_uprod(struct stl_ring *r)
{
	/* Pairs with the process's release of the index: entries first. */
	return smp_load_acquire(&r->hdr->producer_index) & r->mask;
}

static inline u32 stl_ring_ucons(struct stl_ring *r)
{
	/* Pairs with the process's release: it is done with the entries. */
	return smp_load_acquire(&r->hdr->consumer_index) & r->mask;
}

/*
 * Receive queues by the address space of their process.  librxe posts
 * receives with no system call; a message sent right after (a UD or UC
 * request, whose message is dropped if no receive waits) must still find
 * its receive at the parent.  So a doorbell first takes the new entries of
 * every receive ring and SRQ ring of its process, whatever their device.
 */
#define STL_MM_BITS	6
static struct stl_mm_bucket {
	struct mutex lock;
	struct hlist_head head;
} stl_mm_tab[1 << STL_MM_BITS];

static struct stl_mm_bucket *stl_mm_bucket(const struct mm_struct *mm)
{
	return &stl_mm_tab[hash_ptr(mm, STL_MM_BITS)];
}

static void stl_mm_add(struct stl_uq *uq)
{
	struct stl_mm_bucket *b;

	uq->mm = current->mm;
	b = stl_mm_bucket(uq->mm);
	mutex_lock(&b->lock);
	hlist_add_head(&uq->mm_node, &b->head);
	mutex_unlock(&b->lock);
}

static void stl_mm_del(struct stl_uq *uq)
{
	struct stl_mm_bucket *b = stl_mm_bucket(uq->mm);

	if (hlist_unhashed(&uq->mm_node))
		return;
	mutex_lock(&b->lock);
	hlist_del_init(&uq->mm_node);
	mutex_unlock(&b->lock);
}

static void stl_rq_pull(struct stl_qp *sqp);
static void stl_srq_pull(struct stl_srq *ssrq);

/* Receive entries the parent holds of a receive or SRQ ring (a moment's view). */
static u32 stl_uq_held(struct stl_uq *uq)
{
	struct stl_srq *ssrq;

	if (!uq->srq)
		return (READ_ONCE(uq->next) - READ_ONCE(uq->done)) &
		       uq->ring.mask;
	ssrq = container_of(uq, struct stl_srq, rq);
	return READ_ONCE(ssrq->nslots) - READ_ONCE(ssrq->nfree);
}

/*
 * Take the new receive entries of the rings of the calling process: with
 * @urgent, only of those whose parent queue holds fewer than
 * STL_RQ_LOW_WATER entries.  A send doorbell takes those before the send
 * (its answer may need the receive posted before it) and the others after
 * it: an answer finds one of the entries held, and the pull costs the
 * round trip nothing (perftest's send_lat holds 511).
 * Returns true if it left a ring's entries for later.
 */
static bool stl_mm_pull(bool urgent)
{
	struct stl_mm_bucket *b;
	struct stl_uq *uq;
	bool left = false;

	if (!current->mm)
		return false;
	b = stl_mm_bucket(current->mm);
	mutex_lock(&b->lock);
	hlist_for_each_entry(uq, &b->head, mm_node) {
		if (uq->mm != current->mm ||
		    stl_ring_uprod(&uq->ring) == READ_ONCE(uq->next))
			continue;
		if (urgent && stl_uq_held(uq) >= STL_RQ_LOW_WATER) {
			left = true;
			continue;
		}
		/* Busy: whoever holds it is taking the entries. */
		if (!mutex_trylock(&uq->mutex))
			continue;
		if (uq->srq)
			stl_srq_pull(container_of(uq, struct stl_srq, rq));
		else
			stl_rq_pull(container_of(uq, struct stl_qp, rq));
		mutex_unlock(&uq->mutex);
	}
	mutex_unlock(&b->lock);
	return left;
}

/*
 * Into the table by process (@rq, if the QP has a receive ring) and onto
 * the device's backstop list @list; the backstop runs from now on.
 */
static void stl_ring_list(struct stl_dev *sdev, struct stl_uq *rq,
			  struct list_head *entry, struct list_head *list)
{
	if (rq->ring.hdr)
		stl_mm_add(rq);
	mutex_lock(&sdev->ring_lock);
	list_add_tail(entry, list);
	queue_delayed_work(system_wq, &sdev->ring_work, 1);
	mutex_unlock(&sdev->ring_lock);
}

/* Out of the table by process and the device's backstop list. */
static void stl_ring_unlist(struct stl_dev *sdev, struct stl_uq *rq,
			    struct list_head *entry)
{
	stl_mm_del(rq);
	mutex_lock(&sdev->ring_lock);
	list_del_init(entry);
	mutex_unlock(&sdev->ring_lock);
}

/**
 * stl_ring_init() - set up the module-wide table of receive rings
 */
void stl_ring_init(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(stl_mm_tab); i++) {
		mutex_init(&stl_mm_tab[i].lock);
		INIT_HLIST_HEAD(&stl_mm_tab[i].head);
	}
}

/* ---- completion queues ---- */

static void stl_ring_cq_fill_tasklet(struct tasklet_struct *t)
{
	stl_ring_cq_fill(container_of(t, struct stl_cq, fill));
}

static void stl_ring_cq_fill_irq(struct irq_work *w)
{
	tasklet_schedule(&container_of(w, struct stl_cq, fill_irq)->fill);
}

static void stl_ring_cq_fill_work(struct work_struct *work)
{
	stl_ring_cq_fill(container_of(work, struct stl_cq, fill_work));
}

/**
 * stl_ring_cq_comp() - the parent's completion handler, for a CQ with a ring
 * @scq: the CQ
 *
 * Polls the parent CQ here only from rxe's CQ tasklet before 6.5, which
 * holds no lock of it.  Otherwise a parent may call its handler with its
 * own CQ lock held (rxe since 6.5) or from a hard interrupt (mlx5), and
 * polling takes that lock: the ring is filled from a tasklet when the
 * handler runs in interrupt context (it runs as soon as that context ends,
 * on this CPU, ahead of any process; a work item waited for the polling
 * process's time slice there: milliseconds), else from a work item.
 */
void stl_ring_cq_comp(struct stl_cq *scq)
{
	/*
	 * rxe's CQ tasklet (before 6.5) holds no lock of the CQ: the ring is
	 * filled right here, a tasklet's run sooner (it would queue behind
	 * the parent's own tasklets and packets).
	 */
	if (STL_RXE_COMP_UNLOCKED_TASKLET && in_serving_softirq() &&
	    !in_hardirq() &&
	    scq->pcq->device->ops.driver_id == RDMA_DRIVER_RXE) {
		stl_ring_cq_fill(scq);
		return;
	}
	if (in_interrupt()) {
		tasklet_schedule(&scq->fill);
		return;
	}
	/*
	 * From process context (rxe since 6.5: its tasks, or a post, call
	 * the handler with the CQ lock taken with interrupts off), a tasklet
	 * would wait for ksoftirqd and a worker costs two context switches
	 * per completion: a self-interrupt comes as soon as rxe drops the
	 * lock and schedules the tasklet, which runs when it returns.  For
	 * another parent (its locking unknown) the worker.
	 */
	if (scq->pcq->device->ops.driver_id == RDMA_DRIVER_RXE && irqs_disabled())
		irq_work_queue(&scq->fill_irq);
	else
		queue_work(system_highpri_wq, &scq->fill_work);
}

int stl_ring_cq_create(struct stl_cq *scq, struct ib_udata *udata)
{
	struct rxe_create_cq_resp resp = {};
	struct stl_ucontext *suc;
	u32 num = scq->pcq->cqe;
	int ret;

	if (!udata || udata->outlen < sizeof(resp))
		return -EINVAL;
	suc = rdma_udata_to_drv_context(udata, struct stl_ucontext, ibuc);
	if (!suc)
		return -EINVAL;
	tasklet_setup(&scq->fill, stl_ring_cq_fill_tasklet);
	init_irq_work(&scq->fill_irq, stl_ring_cq_fill_irq);
	INIT_WORK(&scq->fill_work, stl_ring_cq_fill_work);
	ret = stl_ring_alloc(&scq->uring, &suc->ibuc, &num, STL_CQE_SIZE,
			     &resp.mi);
	if (ret)
		return ret;
	scq->ibcq.cqe = num;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret) {
		stl_ring_free(&scq->uring);
		return ret;
	}
	/* From now on the parent calls stl_ring_cq_fill() for completions. */
	ib_req_notify_cq(scq->pcq, IB_CQ_NEXT_COMP);
	return 0;
}

/**
 * stl_ring_cq_count() - completions in a CQ's ring the process has not polled
 * @scq: a CQ with a ring
 *
 * Return: their number (a moment's view: the parent adds more).
 */
u32 stl_ring_cq_count(struct stl_cq *scq)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&scq->lock, flags);
	n = (scq->uprod - stl_ring_ucons(&scq->uring)) & scq->uring.mask;
	spin_unlock_irqrestore(&scq->lock, flags);
	return n;
}

/**
 * stl_ring_cq_resize() - give a CQ a new ring of at least @num entries
 * @scq: the CQ, its parent already resized
 * @num: entries the new ring must hold
 * @udata: the command's response: struct rxe_resize_cq_resp
 *
 * librxe holds its CQ lock across the command (no poll moves the consumer
 * index), then unmaps the old ring and maps the new one.  The completions
 * not yet polled move to the start of the new ring.
 *
 * Return: 0; -EINVAL if the CQ holds more than @num completions, -ENOMEM,
 * or -EFAULT if the response could not be written (the old ring stays).
 */
int stl_ring_cq_resize(struct stl_cq *scq, u32 num, struct ib_udata *udata)
{
	struct rxe_resize_cq_resp resp = {};
	struct stl_ring nr = {}, old;
	struct stl_ucontext *suc;
	unsigned long flags;
	u32 cons, n, i;
	int ret;

	if (!udata || udata->outlen < sizeof(resp))
		return -EINVAL;
	suc = rdma_udata_to_drv_context(udata, struct stl_ucontext, ibuc);
	if (!suc)
		return -EINVAL;
	ret = stl_ring_alloc(&nr, &suc->ibuc, &num, STL_CQE_SIZE, &resp.mi);
	if (ret)
		return ret;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret)
		goto err;

	spin_lock_irqsave(&scq->lock, flags);
	cons = stl_ring_ucons(&scq->uring);
	n = (scq->uprod - cons) & scq->uring.mask;
	if (n > num) {
		spin_unlock_irqrestore(&scq->lock, flags);
		ret = -EINVAL;
		goto err;
	}
	for (i = 0; i < n; i++)
		memcpy(stl_ring_slot(&nr, i),
		       stl_ring_slot(&scq->uring, cons + i), STL_CQE_SIZE);
	nr.hdr->consumer_index = 0;
	/* The entries before the index that shows them (librxe acquires). */
	smp_store_release(&nr.hdr->producer_index, n);
	old = scq->uring;
	scq->uring = nr;
	scq->uprod = n;
	scq->ibcq.cqe = num;
	spin_unlock_irqrestore(&scq->lock, flags);
	/* Pages the process still maps stay until it unmaps them. */
	stl_ring_free(&old);
	return 0;

err:
	stl_ring_free(&nr);
	return ret;
}

/**
 * stl_ring_cq_quiesce() - stop or restart filling a CQ's ring
 * @scq: the CQ
 * @dead: true before its parent CQ is destroyed: when this returns, no
 *	fill runs or will touch the parent CQ; false if the destroy failed
 */
void stl_ring_cq_quiesce(struct stl_cq *scq, bool dead)
{
	unsigned long flags;

	if (!scq->uring.hdr)
		return;
	spin_lock_irqsave(&scq->lock, flags);
	scq->dead = dead;
	spin_unlock_irqrestore(&scq->lock, flags);
	if (dead) {
		/* Each waits for a running fill (the interrupt, then its tasklet). */
		irq_work_sync(&scq->fill_irq);
		tasklet_kill(&scq->fill);
		cancel_work_sync(&scq->fill_work);
	} else {
		queue_work(system_highpri_wq, &scq->fill_work);
	}
}

/* After the parent CQ is destroyed: nothing schedules the fill any more. */
void stl_ring_cq_destroy(struct stl_cq *scq)
{
	if (!scq->uring.hdr)
		return;
	/* One the parent scheduled after stl_ring_cq_quiesce() did nothing. */
	irq_work_sync(&scq->fill_irq);
	tasklet_kill(&scq->fill);
	cancel_work_sync(&scq->fill_work);
	stl_ring_free(&scq->uring);
}

/* Write one completion into the ring.  Context: scq->lock held. */
static void stl_ucq_push(struct stl_cq *scq, const struct ib_uverbs_wc *uwc)
{
	struct stl_ring *r = &scq->uring;
	u32 next = (scq->uprod + 1) & r->mask;

	lockdep_assert_held(&scq->lock);
	if (next == stl_ring_ucons(r)) {
		if (!scq->overrun) {
			struct ib_event ev = {
				.device = scq->ibcq.device,
				.element.cq = &scq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			scq->overrun = true;
			ibdev_warn_ratelimited(scq->ibcq.device,
					       "CQ overrun: completions lost\n");
			if (scq->ibcq.event_handler)
				scq->ibcq.event_handler(&ev,
							scq->ibcq.cq_context);
		}
		return;
	}
	memcpy(stl_ring_slot(r, scq->uprod), uwc, sizeof(*uwc));
	scq->uprod = next;
	/* The entry before the index that shows it (librxe acquires). */
	smp_store_release(&r->hdr->producer_index, next);
}

/* The userspace numbering of wc_flags (see stl_cq.c). */
static u32 stl_uwc_flags(enum ib_qp_type type, int flags)
{
	u32 out = 0;

	if ((flags & IB_WC_GRH) && type == IB_QPT_UD)
		out |= 1U << 0;
	if (flags & IB_WC_WITH_IMM)
		out |= 1U << 1;
	if (flags & IB_WC_WITH_INVALIDATE)
		out |= 1U << 3;
	return out;
}

/* Advance a queue's consumer index past @idx.  Context: CQ lock held. */
static void stl_uq_complete(struct stl_uq *uq, u32 idx)
{
	uq->done = (idx + 1) & uq->ring.mask;
	/* The slot is free for the process once it sees the index. */
	smp_store_release(&uq->ring.hdr->consumer_index, uq->done);
}

/*
 * Whether the receive entries the process posted since the last pass
 * should go to the parent now, from a worker: while the parent holds fewer
 * than STL_RQ_LOW_WATER of them (every time for a small queue, such as a
 * latency test's one entry) or no more than wait in the ring.  A receiver
 * with a deep queue that reposts as it polls so wakes a worker once per
 * half of its entries, not per message (each took the CPU from the sender
 * whose pass ran the completion: perftest's 4 KiB send_bw ran at 0.78 of
 * rxe's).  None waiting: nothing to wake a worker for; the next doorbell
 * or the backstop takes later ones.
 */
static bool stl_rq_low(struct stl_uq *uq)
{
	u32 waiting = (stl_ring_uprod(&uq->ring) - READ_ONCE(uq->next)) &
		      uq->ring.mask;
	u32 held = stl_uq_held(uq);

	return waiting && (held < STL_RQ_LOW_WATER || held <= waiting);
}

/*
 * One parent completion of a QP with rings into the user's CQ ring.
 * Returns true if the QP's process-context work should run (a receive
 * slot freed, or a flush can go on).  Context: scq->lock held.
 */
static noinline_for_stack bool stl_ucq_one(struct stl_cq *scq,
					     struct ib_wc *wc)
{
	struct stl_qp *sqp = wc->qp->qp_context;
	bool recv = wc->wr_id & STL_WR_RECV;
	struct stl_srq *ssrq = NULL;
	struct stl_uq *uq = recv ? &sqp->rq : &sqp->sq;
	u32 idx = (u32)wc->wr_id & uq->ring.mask;
	struct ib_uverbs_wc uwc = {};
	struct stl_uwr *w, srqw;
	bool srq_low = false;

	/* A tail's byte count, and the fix ring kept in step (spray/). */
	if (!recv && READ_ONCE(sqp->spray))
		spray_wc_fixup(sqp, wc);
	if (wc->wr_id & STL_WR_MARK) {
		/* Every entry before the marker's index is done. */
		atomic_dec(&scq->inflight);
		stl_uq_complete(uq, idx - 1);
		if (wc->wr_id & STL_WR_FENCE)
			WRITE_ONCE(sqp->fence, STL_FENCE_NONE);
		return true;
	}
	/*
	 * A peer's SEND with Invalidate: the parent invalidated the key
	 * already; anything but a window of the QP's PD is refused (and
	 * restored), as rxe refuses a key: the QP fails (stl_inv.c).
	 */
	if (recv)
		stl_wc_remote_inv(sqp, wc);
	if (recv && sqp->ibqp.srq) {
		ssrq = to_stl_srq(sqp->ibqp.srq);
		idx = (u32)wc->wr_id;
		if (WARN_ON_ONCE(idx >= ssrq->nslots))
			return false;
		spin_lock(&ssrq->slot_lock);
		srqw = ssrq->slots[idx];
		ssrq->free[ssrq->nfree++] = idx;
		/* As stl_rq_low(): few held, or half the slots free. */
		srq_low = ssrq->nslots - ssrq->nfree < STL_RQ_LOW_WATER ||
			  ssrq->nfree >= ssrq->nslots - ssrq->nslots / 2;
		spin_unlock(&ssrq->slot_lock);
		w = &srqw;
	} else {
		w = &uq->wr[idx];
		if (!recv && w->psig) {
			w->psig = 0;
			atomic_dec(&scq->inflight);
		}
	}
	uwc.wr_id = w->wr_id;
	uwc.status = wc->status;
	/* A refused SRQ entry was posted with no SGE: it errs when used. */
	if (w->bad && (ssrq || wc->status == IB_WC_WR_FLUSH_ERR))
		uwc.status = w->status;
	uwc.opcode = wc->opcode;
	uwc.vendor_err = wc->vendor_err;
	uwc.byte_len = wc->byte_len;
	uwc.ex.imm_data = wc->ex.imm_data;
	uwc.qp_num = sqp->ibqp.qp_num;
	uwc.src_qp = wc->src_qp;
	uwc.wc_flags = stl_uwc_flags(sqp->ibqp.qp_type, wc->wc_flags);
	uwc.pkey_index = wc->pkey_index;
	uwc.slid = wc->slid;
	uwc.sl = wc->sl;
	uwc.dlid_path_bits = wc->dlid_path_bits;
	uwc.port_num = 1;
	/*
	 * The slot is free before the completion shows, as on rxe: a process
	 * that polled it may post again at once and must not find the queue
	 * full (perftest's latency tests run with one entry).
	 */
	if (!ssrq)
		stl_uq_complete(uq, idx);
	if (recv || w->signaled || uwc.status != IB_WC_SUCCESS)
		stl_ucq_push(scq, &uwc);
	if (uwc.status != IB_WC_SUCCESS)
		WRITE_ONCE(sqp->err, true);
	if (ssrq) {
		/* Slots are free: entries may wait (see stl_rq_low()). */
		if (srq_low &&
		    stl_ring_uprod(&ssrq->rq.ring) != READ_ONCE(ssrq->rq.next))
			queue_work(system_wq, &ssrq->work);
		return READ_ONCE(sqp->err);
	}
	return (recv && stl_rq_low(uq)) || READ_ONCE(sqp->err);
}

/**
 * stl_ring_cq_fill() - move the parent CQ's completions into the CQ ring
 * @scq: a CQ of a device with rings
 *
 * Context: softirq (stl_ring_cq_comp()'s tasklet) or process (its work
 * item, the notify path), never under a parent lock.  Leaves the parent CQ armed; wakes
 * the process if it armed the CQ and a completion was written.
 */
void stl_ring_cq_fill(struct stl_cq *scq)
{
	struct ib_wc wc[8];
	unsigned long flags;
	int got, i, rounds = 0;
	bool wake, more;
	u32 before;

	spin_lock_irqsave(&scq->lock, flags);
	if (scq->dead) {
		spin_unlock_irqrestore(&scq->lock, flags);
		return;
	}
	before = scq->uprod;
	do {
		while ((got = ib_poll_cq(scq->pcq, ARRAY_SIZE(wc), wc)) > 0) {
			for (i = 0; i < got; i++) {
				struct stl_qp *sqp;

				/* A QP being destroyed: dropped, never read. */
				if (wc[i].qp == scq->dying)
					continue;
				sqp = wc[i].qp->qp_context;
				if (stl_ucq_one(scq, &wc[i]))
					queue_work(system_wq, &sqp->work);
			}
		}
	} while ((more = ib_req_notify_cq(scq->pcq, IB_CQ_NEXT_COMP |
					  IB_CQ_REPORT_MISSED_EVENTS) > 0) &&
		 ++rounds < 16);
	if (scq->uprod != before)
		stl_count(to_stl_dev(scq->ibcq.device), STL_CNT_COMPLETIONS,
			  (scq->uprod - before) & scq->uring.mask);
	wake = scq->uprod != before && scq->notify;
	if (wake)
		scq->notify = 0;
	/*
	 * Both under the lock: a fill called straight from the parent's
	 * tasklet is not waited for by stl_ring_cq_quiesce() as a fill
	 * tasklet or work item is; once it holds the lock, this touches
	 * the CQ no more.  (uverbs' handler only queues an event.)
	 */
	if (wake && scq->ibcq.comp_handler)
		scq->ibcq.comp_handler(&scq->ibcq, scq->ibcq.cq_context);
	/* Completions may wait that no event will announce: later. */
	if (more)
		queue_work(system_highpri_wq, &scq->fill_work);
	spin_unlock_irqrestore(&scq->lock, flags);
}

/**
 * stl_ring_cq_notify() - arm a CQ with a ring for the next completion
 * @scq: the CQ
 * @flags: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP (solicited completions are
 *	not told apart: any completion raises the event)
 *
 * Return: 0.
 */
int stl_ring_cq_notify(struct stl_cq *scq, enum ib_cq_notify_flags flags)
{
	unsigned long irqflags;

	spin_lock_irqsave(&scq->lock, irqflags);
	scq->notify = flags & IB_CQ_SOLICITED_MASK;
	spin_unlock_irqrestore(&scq->lock, irqflags);
	stl_ring_cq_fill(scq);
	return 0;
}

/* ---- queue pairs ---- */

static int stl_uq_init(struct stl_uq *uq, struct ib_ucontext *uc, u32 *num,
		       u32 elem, struct mminfo *mi)
{
	int ret;

	mutex_init(&uq->mutex);
	INIT_HLIST_NODE(&uq->mm_node);
	ret = stl_ring_alloc(&uq->ring, uc, num, roundup_pow_of_two(elem), mi);
	if (ret)
		return ret;
	uq->wr = kvcalloc(uq->ring.mask + 1, sizeof(*uq->wr),
			  GFP_KERNEL_ACCOUNT);
	uq->wqe = kmalloc(1U << uq->ring.log2, GFP_KERNEL_ACCOUNT);
	if (!uq->wr || !uq->wqe) {
		kvfree(uq->wr);
		kfree(uq->wqe);
		uq->wr = NULL;
		uq->wqe = NULL;
		stl_ring_free(&uq->ring);
		return -ENOMEM;
	}
	return 0;
}

static void stl_uq_fini(struct stl_uq *uq)
{
	stl_ring_free(&uq->ring);
	kvfree(uq->wr);
	kfree(uq->wqe);
	kfree(uq->sbuf);
	uq->wr = NULL;
	uq->wqe = NULL;
	uq->sbuf = NULL;
}

static void stl_ring_qp_work(struct work_struct *work);

/**
 * stl_ring_qp_create() - give a new QP of a device with rings its rings
 * @sqp: the QP, its parent QP created with the capacities in @init
 * @init: the capacities asked for; set to what the rings hold
 * @udata: the command's response: struct rxe_create_qp_resp
 *
 * Return: 0 or -errno.
 */
int stl_ring_qp_create(struct stl_qp *sqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);
	struct rxe_create_qp_resp resp = {};
	struct stl_ucontext *suc;
	struct ib_ucontext *uc;
	u32 sq_elem, rq_elem, nsq, nrq;
	int ret;

	if (!udata || udata->outlen < sizeof(resp))
		return -EINVAL;
	suc = rdma_udata_to_drv_context(udata, struct stl_ucontext, ibuc);
	if (!suc)
		return -EINVAL;
	uc = &suc->ibuc;

	/* The rings hold no more than the parent queues (init->cap). */
	nsq = rounddown_pow_of_two(init->cap.max_send_wr + 1) - 1;
	nrq = rounddown_pow_of_two(init->cap.max_recv_wr + 1) - 1;
	sq_elem = sizeof(struct rxe_send_wqe) +
		  max_t(u32, sqp->max_send_sge * sizeof(struct rxe_sge),
			sqp->max_inline);
	rq_elem = sizeof(struct rxe_recv_wqe) +
		  sqp->max_recv_sge * sizeof(struct rxe_sge);
	ret = stl_uq_init(&sqp->sq, uc, &nsq, sq_elem, &resp.sq_mi);
	if (ret)
		return ret;
	sqp->sq.sbuf = kmalloc(sizeof(*sqp->sq.sbuf), GFP_KERNEL_ACCOUNT);
	if (!sqp->sq.sbuf) {
		ret = -ENOMEM;
		goto err_sq;
	}
	/* A QP on an SRQ has no receive ring (librxe maps none): its lock
	 * is still taken by the state changes and the backstop.
	 */
	mutex_init(&sqp->rq.mutex);
	INIT_HLIST_NODE(&sqp->rq.mm_node);
	if (!init->srq) {
		ret = stl_uq_init(&sqp->rq, uc, &nrq, rq_elem, &resp.rq_mi);
		if (ret)
			goto err_sq;
	}
	sqp->sq.max_sge = sqp->max_send_sge;
	sqp->sq.max_inline = sqp->max_inline;
	sqp->rq.max_sge = sqp->max_recv_sge;
	sqp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	INIT_WORK(&sqp->work, stl_ring_qp_work);
	INIT_LIST_HEAD(&sqp->ring_entry);

	init->cap.max_send_wr = nsq;
	if (!init->srq)
		init->cap.max_recv_wr = nrq;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret)
		goto err_rq;

	stl_ring_list(sdev, &sqp->rq, &sqp->ring_entry, &sdev->ring_qps);
	return 0;

err_rq:
	stl_uq_fini(&sqp->rq);
err_sq:
	stl_uq_fini(&sqp->sq);
	return ret;
}

/**
 * stl_ring_qp_unlist() - the backstop no longer looks at a QP
 * @sqp: a QP about to be destroyed
 */
void stl_ring_qp_unlist(struct stl_qp *sqp)
{
	stl_ring_unlist(to_stl_dev(sqp->ibqp.device), &sqp->rq,
			&sqp->ring_entry);
}

/**
 * stl_ring_qp_destroy() - free a QP's rings
 * @sqp: the QP; unlisted, its work cancelled, its parent QP destroyed and
 *	its CQs drained
 */
void stl_ring_qp_destroy(struct stl_qp *sqp)
{
	stl_uq_fini(&sqp->sq);
	stl_uq_fini(&sqp->rq);
}

/*
 * Complete with IB_WC_WR_FLUSH_ERR (a refused entry: its own status) the
 * entries of @uq the parent does not hold, once the parent has completed
 * those it does.  Context: uq->mutex held, QP in the error state.
 */
static void stl_uq_flush(struct stl_qp *sqp, struct stl_uq *uq,
			 struct stl_cq *scq, bool recv)
{
	struct ib_uverbs_wc uwc = {};
	unsigned long flags;
	u32 prod, n = 0, pushed = 0;

	if (!uq->ring.hdr)
		return;		/* an SRQ's entries stay in the SRQ */
	spin_lock_irqsave(&scq->lock, flags);
	if (uq->done != uq->next)
		goto out;	/* the parent still holds some: it flushes them */
	prod = stl_ring_uprod(&uq->ring);
	while (uq->next != prod && n++ <= uq->ring.mask) {
		struct stl_uwr *w = &uq->wr[uq->next];

		if (w->bad) {
			uwc.wr_id = w->wr_id;
			uwc.status = w->status;
			w->bad = 0;
		} else if (recv) {
			uwc.wr_id = ((struct rxe_recv_wqe *)
				     stl_ring_slot(&uq->ring, uq->next))->wr_id;
			uwc.status = IB_WC_WR_FLUSH_ERR;
		} else {
			uwc.wr_id = ((struct rxe_send_wqe *)
				     stl_ring_slot(&uq->ring, uq->next))->wr.wr_id;
			uwc.status = IB_WC_WR_FLUSH_ERR;
		}
		uwc.opcode = recv ? IB_WC_RECV : IB_WC_SEND;
		uwc.qp_num = sqp->ibqp.qp_num;
		uwc.port_num = 1;
		uq->next = (uq->next + 1) & uq->ring.mask;
		stl_uq_complete(uq, uq->done);
		stl_ucq_push(scq, &uwc);
		pushed++;
	}
	if (pushed)
		stl_count(to_stl_dev(sqp->ibqp.device), STL_CNT_COMPLETIONS,
			  pushed);
out:
	spin_unlock_irqrestore(&scq->lock, flags);
}

/* A refused entry: the QP goes to the error state, the entry errs. */
static void stl_uq_refuse(struct stl_qp *sqp, struct stl_uq *uq, u32 idx,
			  u64 wr_id, int status)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);

	stl_count(sdev, STL_CNT_BAD_WRS, 1);
	stl_dbg(sdev, "QP %u: ring entry %u refused\n", sqp->ibqp.qp_num,
		idx);
	uq->wr[idx].wr_id = wr_id;
	uq->wr[idx].psig = 0;
	uq->wr[idx].bad = 1;
	uq->wr[idx].status = status;
	/* UD: no marker without an address; the parent stops at once. */
	if (uq == &sqp->sq && sqp->ibqp.qp_type != IB_QPT_UD)
		WRITE_ONCE(sqp->fence, STL_FENCE_WANTED);
	WRITE_ONCE(sqp->err, true);
	queue_work(system_wq, &sqp->work);
}

/*
 * Take the receive ring's new entries to the parent.  Context: process,
 * rq.mutex held.
 */
static void stl_rq_pull(struct stl_qp *sqp)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);
	struct stl_pd *spd = to_stl_pd(sqp->ibqp.pd);
	struct stl_uq *uq = &sqp->rq;
	struct rxe_recv_wqe *wqe = uq->wqe;
	const struct ib_recv_wr *bad;
	struct ib_recv_wr wr = {};
	u32 prod, n = 0;
	int ret;

	lockdep_assert_held(&uq->mutex);
	if (!uq->ring.hdr)
		return;		/* on an SRQ */
	prod = stl_ring_uprod(&uq->ring);
	while (uq->next != prod && !READ_ONCE(sqp->err) &&
	       n++ < STL_RQ_POLL_BUDGET) {
		u32 idx = uq->next, nsge;

		/* One copy; only the copy is looked at. */
		memcpy(wqe, stl_ring_slot(&uq->ring, idx), 1U << uq->ring.log2);
		nsge = READ_ONCE(wqe->dma.num_sge);
		if (nsge > uq->max_sge ||
		    stl_check_sges(sdev, spd, (struct ib_sge *)wqe->dma.sge,
				   nsge, uq->max_sge, IB_ACCESS_LOCAL_WRITE)) {
			stl_uq_refuse(sqp, uq, idx, wqe->wr_id,
				      IB_WC_LOC_PROT_ERR);
			break;
		}
		uq->wr[idx].wr_id = wqe->wr_id;
		uq->wr[idx].bad = 0;
		wr.wr_id = STL_WR_RECV | idx;
		wr.sg_list = (struct ib_sge *)wqe->dma.sge;
		wr.num_sge = nsge;
		ret = stl_parent_post_recv(sqp->pqp, &wr, &bad);
		if (ret) {
			stl_dbg(sdev, "QP %u: parent post_recv: %d\n",
				sqp->ibqp.qp_num, ret);
			break;
		}
		stl_count(sdev, STL_CNT_RECV_WRS, 1);
		uq->next = (idx + 1) & uq->ring.mask;
	}
	if (uq->next != prod && !READ_ONCE(sqp->err) && n > STL_RQ_POLL_BUDGET)
		queue_work(system_wq, &sqp->work);
}

static_assert(sizeof(struct rxe_sge) == sizeof(struct ib_sge));
static_assert(offsetof(struct rxe_sge, addr) == offsetof(struct ib_sge, addr));
static_assert(offsetof(struct rxe_sge, length) ==
	      offsetof(struct ib_sge, length));
static_assert(offsetof(struct rxe_sge, lkey) == offsetof(struct ib_sge, lkey));

/*
 * Build the work request of send ring entry @wqe (a kernel copy) in @u.
 * Returns the inline data (in @wqe) and its length, or -errno.
 */
static int stl_sq_translate(struct stl_dev *sdev, struct stl_qp *sqp,
			    struct rxe_send_wqe *wqe, union stl_send_wr *u,
			    const u8 **inl, u32 *inl_len)
{
	struct rxe_send_wr *w = &wqe->wr;
	u32 nsge = READ_ONCE(wqe->dma.num_sge);
	u32 len = READ_ONCE(wqe->dma.length);
	struct ib_send_wr *s = &u->send;

	memset(u, 0, sizeof(*u));
	s->opcode = w->opcode;
	s->send_flags = w->send_flags;
	s->ex.imm_data = (__force __be32)w->ex.imm_data;
	*inl = NULL;
	*inl_len = 0;

	switch (s->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		u->rdma.remote_addr = w->wr.rdma.remote_addr;
		u->rdma.rkey = w->wr.rdma.rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		u->atomic.remote_addr = w->wr.atomic.remote_addr;
		u->atomic.compare_add = w->wr.atomic.compare_add;
		u->atomic.swap = w->wr.atomic.swap;
		u->atomic.rkey = w->wr.atomic.rkey;
		break;
	case IB_WR_SEND_WITH_INV:
		/* What the peer may invalidate, it checks (stl_inv.c). */
		s->ex.invalidate_rkey = w->ex.invalidate_rkey;
		break;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		if (sqp->ibqp.qp_type == IB_QPT_UD) {
			struct stl_ah *sah = xa_load(&sdev->ahs,
						     w->wr.ud.ah_num);

			if (!sah)
				return -EINVAL;
			u->ud.ah = &sah->ibah;
			u->ud.remote_qpn = w->wr.ud.remote_qpn;
			u->ud.remote_qkey = w->wr.ud.remote_qkey;
		}
		break;
	default:
		return -EINVAL;
	}

	/*
	 * Inline data: flagged (legacy post_send), or no SGE and a length
	 * (ibv_wr_set_inline_data(), which sets no flag).
	 */
	if ((s->send_flags & IB_SEND_INLINE) || (!nsge && len)) {
		if (len > sqp->sq.max_inline)
			return -EINVAL;
		s->send_flags |= IB_SEND_INLINE;
		*inl = wqe->dma.inline_data;
		*inl_len = len;
		return 0;
	}
	if (nsge > sqp->sq.max_sge)
		return -EINVAL;
	s->sg_list = (struct ib_sge *)wqe->dma.sge;
	s->num_sge = nsge;
	return 0;
}

/*
 * Take the send ring's new entries to the parent.  Context: process,
 * sq.mutex held.
 */
/*
 * Does the parent complete send entry @idx even though the process did not
 * ask?  The parent completes a QP's sends in order, so a completion frees
 * every slot up to it: one in each quarter of the ring keeps the process
 * posting.  UD sends are always completed (no flush marker, see
 * stl_sq_mark(), can be posted without an address).
 */
static bool stl_sq_signal(struct stl_qp *sqp, u32 idx)
{
	u32 quarter = max_t(u32, (sqp->sq.ring.mask + 1) / 4, 1);

	return sqp->ibqp.qp_type == IB_QPT_UD || !((idx + 1) & (quarter - 1));
}

/*
 * Post one request of the send ring: through the QP's paths when it has
 * them (spray/: a large WRITE or READ is cut over them, and whatever waits
 * there keeps its place before @b), else to the parent QP.  Returns 0 or
 * -errno (-ENOMEM: full; the entry is taken again later).
 * Context: sq.mutex held, in an RCU read-side section (spray_qp_destroy()).
 */
static int stl_sq_post(struct stl_qp *sqp, struct stl_send_buf *b)
{
	const struct ib_send_wr *bad;
	int ret = 1;

	lockdep_assert_held(&sqp->sq.mutex);
	if (sqp->spray)
		ret = spray_post_send(sqp, b);
	if (ret == 1)
		ret = stl_parent_post_send(sqp->pqp, &b->wr.send, &bad);
	return ret;
}

/*
 * A signalled zero-length RDMA WRITE carrying @wr_id (IBA C9-88: no address
 * or key of a zero-length operation is looked at): the parent completes it
 * after everything it holds for the QP, and after every request of the
 * QP's paths' queue.  Context: sq.mutex held.
 */
static int stl_sq_post_mark(struct stl_qp *sqp, u64 wr_id)
{
	/* Free here: stl_sq_pull() fills it again for each entry. */
	struct stl_send_buf *mark = sqp->sq.sbuf;
	int ret;

	lockdep_assert_held(&sqp->sq.mutex);
	memset(&mark->wr, 0, sizeof(mark->wr));
	mark->wr.send.wr_id = wr_id;
	mark->wr.send.opcode = IB_WR_RDMA_WRITE;
	mark->wr.send.send_flags = IB_SEND_SIGNALED;
	rcu_read_lock();
	ret = stl_sq_post(sqp, mark);
	rcu_read_unlock();
	if (!ret)
		atomic_inc(&to_stl_cq(sqp->ibqp.send_cq)->inflight);
	else
		stl_dbg(to_stl_dev(sqp->ibqp.device),
			"QP %u: marker not posted: %d\n", sqp->ibqp.qp_num, ret);
	/* The paths' queue was full: the backstop tries again. */
	if (ret == -ENOMEM && sqp->spray)
		WRITE_ONCE(sqp->rate_wait, true);
	return ret;
}

/*
 * The QP is in the error state: entries the parent completed unasked leave
 * no completion behind, so a marker (flushed at once, after all it holds)
 * tells when the parent is done with the ring's entries.  If it cannot be
 * posted, the parent still holds the last entry and flushes it.
 * Context: sq.mutex held, parent QP in the error state.
 */
static void stl_sq_mark(struct stl_qp *sqp)
{
	lockdep_assert_held(&sqp->sq.mutex);
	if (sqp->ibqp.qp_type == IB_QPT_UD || !sqp->sq.ring.hdr ||
	    sqp->marked || READ_ONCE(sqp->sq.done) == sqp->sq.next)
		return;
	/* One per stay in the error state: nothing is posted after it. */
	sqp->marked = true;
	stl_sq_post_mark(sqp, STL_WR_MARK | sqp->sq.next);
}

/*
 * A window entry (BIND_MW, LOCAL_INV) at @idx: run by Stellar itself
 * (stl_mw.c) once every entry before it has completed, then completed here.
 * Returns -EAGAIN while entries before it are in the parent: a marker
 * follows them, and its completion runs the pull again (stl_ring_qp_work()).
 * Context: sq.mutex held.
 */
static int stl_sq_local_op(struct stl_qp *sqp, u32 idx,
			   const struct rxe_send_wqe *wqe)
{
	struct stl_cq *scq = to_stl_cq(sqp->ibqp.send_cq);
	struct stl_uq *uq = &sqp->sq;
	struct ib_uverbs_wc uwc = {};
	struct stl_mw_wr mw;
	unsigned long flags;
	bool wake;

	lockdep_assert_held(&uq->mutex);
	if (READ_ONCE(uq->done) != idx) {
		if (!sqp->local_wait &&
		    !stl_sq_post_mark(sqp, STL_WR_MARK | idx))
			sqp->local_wait = true;
		return -EAGAIN;
	}
	sqp->local_wait = false;
	uwc.wr_id = wqe->wr.wr_id;
	uwc.qp_num = sqp->ibqp.qp_num;
	uwc.port_num = 1;
	if (wqe->wr.opcode == IB_WR_BIND_MW) {
		mw.addr = wqe->wr.wr.mw.addr;
		mw.length = wqe->wr.wr.mw.length;
		mw.mr_lkey = wqe->wr.wr.mw.mr_lkey;
		mw.mw_rkey = wqe->wr.wr.mw.mw_rkey;
		mw.rkey = wqe->wr.wr.mw.rkey;
		mw.access = wqe->wr.wr.mw.access;
		uwc.opcode = IB_UVERBS_WC_BIND_MW;
		uwc.status = stl_mw_bind(sqp, &mw);
	} else {
		uwc.opcode = IB_UVERBS_WC_LOCAL_INV;
		uwc.status = stl_mw_local_invalidate(sqp,
						     wqe->wr.ex.invalidate_rkey);
	}
	uq->wr[idx].wr_id = uwc.wr_id;
	uq->wr[idx].psig = 0;
	uq->wr[idx].bad = 0;
	spin_lock_irqsave(&scq->lock, flags);
	stl_uq_complete(uq, idx);
	if (uwc.status != IB_WC_SUCCESS || sqp->sig_all ||
	    (wqe->wr.send_flags & IB_SEND_SIGNALED)) {
		stl_ucq_push(scq, &uwc);
		stl_count(to_stl_dev(sqp->ibqp.device), STL_CNT_COMPLETIONS, 1);
	}
	wake = scq->notify;
	if (wake)
		scq->notify = 0;
	spin_unlock_irqrestore(&scq->lock, flags);
	if (wake && scq->ibcq.comp_handler)
		scq->ibcq.comp_handler(&scq->ibcq, scq->ibcq.cq_context);
	uq->next = (idx + 1) & uq->ring.mask;
	if (uwc.status != IB_WC_SUCCESS) {
		/* As on rxe: the QP goes to the error state. */
		stl_count(to_stl_dev(sqp->ibqp.device), STL_CNT_BAD_WRS, 1);
		WRITE_ONCE(sqp->err, true);
		queue_work(system_wq, &sqp->work);
	}
	return 0;
}

static int stl_sq_pull(struct stl_qp *sqp)
{
	struct stl_dev *sdev = to_stl_dev(sqp->ibqp.device);
	struct stl_uq *uq = &sqp->sq;
	struct rxe_send_wqe *wqe = uq->wqe;
	struct stl_send_buf *b;
	union stl_send_wr u;
	const u8 *inl;
	u32 prod, inl_len;
	int ret = 0;

	lockdep_assert_held(&uq->mutex);
	WRITE_ONCE(sqp->rate_wait, false);
	b = uq->sbuf;
	prod = stl_ring_uprod(&uq->ring);
	while (uq->next != prod && !READ_ONCE(sqp->err)) {
		u32 idx = uq->next;
		u64 wr_id;

		memcpy(wqe, stl_ring_slot(&uq->ring, idx), 1U << uq->ring.log2);
		wr_id = wqe->wr.wr_id;
		if (wqe->wr.opcode == IB_WR_BIND_MW ||
		    wqe->wr.opcode == IB_WR_LOCAL_INV) {
			if (stl_sq_local_op(sqp, idx, wqe))
				break;
			continue;
		}
		rcu_read_lock();	/* the AH: stl_ring_ah_destroy() */
		ret = stl_sq_translate(sdev, sqp, wqe, &u, &inl, &inl_len);
		if (!ret)
			ret = stl_prep_send(sdev, sqp, &u.send, b, inl, inl_len);
		if (ret) {
			rcu_read_unlock();
			stl_uq_refuse(sqp, uq, idx, wr_id,
				      IB_WC_LOC_PROT_ERR);
			ret = 0;
			break;
		}
		/* Over the rate cap: the entry waits in the ring, in order. */
		if (!stl_rate_ok(sdev, &b->wr.send)) {
			rcu_read_unlock();
			WRITE_ONCE(sqp->rate_wait, true);
			break;
		}
		uq->wr[idx].wr_id = wr_id;
		uq->wr[idx].signaled = sqp->sig_all ||
				       (wqe->wr.send_flags & IB_SEND_SIGNALED);
		uq->wr[idx].bad = 0;
		b->wr.send.wr_id = idx;
		uq->wr[idx].psig = uq->wr[idx].signaled ||
				   stl_sq_signal(sqp, idx);
		if (uq->wr[idx].psig)
			b->wr.send.send_flags |= IB_SEND_SIGNALED;
		else
			b->wr.send.send_flags &= ~IB_SEND_SIGNALED;
		b->wr.send.next = NULL;
		ret = stl_sq_post(sqp, b);
		rcu_read_unlock();
		if (!ret && uq->wr[idx].psig)
			atomic_inc(&to_stl_cq(sqp->ibqp.send_cq)->inflight);
		if (ret) {
			/*
			 * Not ready (below RTS) or full: taken again later.
			 * The paths' queue frees with no completion of the
			 * QP's own to run this again: the backstop does.
			 */
			if (ret == -ENOMEM && sqp->spray)
				WRITE_ONCE(sqp->rate_wait, true);
			stl_dbg(sdev, "QP %u: parent post_send: %d\n",
				sqp->ibqp.qp_num, ret);
			break;
		}
		stl_count(sdev, STL_CNT_SEND_WRS, 1);
		uq->next = (idx + 1) & uq->ring.mask;
	}
	return ret;
}

/* Receive ring, then the flushes of a QP in the error state. */
static void stl_ring_qp_run(struct stl_qp *sqp)
{
	mutex_lock(&sqp->rq.mutex);
	stl_rq_pull(sqp);
	if (READ_ONCE(sqp->err))
		stl_uq_flush(sqp, &sqp->rq, to_stl_cq(sqp->ibqp.recv_cq), true);
	mutex_unlock(&sqp->rq.mutex);
	if (READ_ONCE(sqp->err)) {
		mutex_lock(&sqp->sq.mutex);
		stl_uq_flush(sqp, &sqp->sq, to_stl_cq(sqp->ibqp.send_cq),
			     false);
		mutex_unlock(&sqp->sq.mutex);
	}
}

static void stl_ring_qp_work(struct work_struct *work)
{
	struct stl_qp *sqp = container_of(work, struct stl_qp, work);
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	bool fenced, moved = false;

	/* A window entry waited for the entries before it, or the rate cap. */
	if (READ_ONCE(sqp->local_wait) || READ_ONCE(sqp->rate_wait)) {
		mutex_lock(&sqp->sq.mutex);
		stl_sq_pull(sqp);
		mutex_unlock(&sqp->sq.mutex);
	}
	if (!READ_ONCE(sqp->err))
		goto run;
	/*
	 * A refused send entry: the entries before it run first, as they
	 * would on rxe; a fence completes after them (stl_ucq_one() ends the
	 * wait and runs this again).
	 */
	mutex_lock(&sqp->sq.mutex);
	if (READ_ONCE(sqp->fence) == STL_FENCE_WANTED)
		WRITE_ONCE(sqp->fence,
			   stl_sq_post_mark(sqp, STL_WR_MARK | STL_WR_FENCE |
					    sqp->sq.next) ?
			   STL_FENCE_NONE : STL_FENCE_POSTED);
	fenced = READ_ONCE(sqp->fence) == STL_FENCE_POSTED;
	mutex_unlock(&sqp->sq.mutex);
	/*
	 * A refused entry or a parent error: the parent flushes too; unless
	 * the process moved the QP on meanwhile (a reset clears @err), which
	 * modify_lock orders with this.
	 */
	if (!fenced) {
		mutex_lock(&sqp->modify_lock);
		moved = READ_ONCE(sqp->err) &&
			!ib_modify_qp(sqp->pqp, &attr, IB_QP_STATE);
		mutex_unlock(&sqp->modify_lock);
	}
	if (moved) {
		mutex_lock(&sqp->sq.mutex);
		stl_sq_mark(sqp);
		mutex_unlock(&sqp->sq.mutex);
	}
run:
	stl_ring_qp_run(sqp);
}

/**
 * stl_ring_doorbell() - the process rang the send queue's doorbell
 * @sqp: a QP with rings
 *
 * Return: 0, or -errno if the entries could not be looked at; they stay
 * in the ring either way.
 */
int stl_ring_doorbell(struct stl_qp *sqp)
{
	bool left;
	int ret;

	/*
	 * Receives posted before this send are at the parent before it, or
	 * the parent holds enough others for what answers it.
	 */
	left = stl_mm_pull(true);
	mutex_lock(&sqp->sq.mutex);
	ret = stl_sq_pull(sqp);
	mutex_unlock(&sqp->sq.mutex);
	if (left)
		stl_mm_pull(false);
	/*
	 * A full parent queue, or the paths' queue: the entries wait in the
	 * ring and are taken later; they were posted (librxe returns the
	 * doorbell's answer to ibv_post_send).
	 */
	if (ret == -ENOMEM)
		ret = 0;
	/* Flushes; or another process rang (its receive ring was not seen). */
	if (READ_ONCE(sqp->err) ||
	    (sqp->rq.ring.hdr && sqp->rq.mm != current->mm))
		stl_ring_qp_run(sqp);
	return ret;
}

/**
 * stl_ring_rq_doorbell() - the process asks for its receive ring to be taken
 * @sqp: a QP with a receive ring
 *
 * libstellar rings it (a POST_RECV with no request) after posting to a UD
 * or UC QP, where a message that finds no receive at the parent is lost;
 * librxe never does, and its receives are taken at the process's next
 * send doorbell, on receive completions or by the backstop.
 */
void stl_ring_rq_doorbell(struct stl_qp *sqp)
{
	mutex_lock(&sqp->rq.mutex);
	stl_rq_pull(sqp);
	mutex_unlock(&sqp->rq.mutex);
}

/**
 * stl_ring_srq_doorbell() - the process asks for its SRQ ring to be taken
 * @ssrq: an SRQ with a ring
 */
void stl_ring_srq_doorbell(struct stl_srq *ssrq)
{
	mutex_lock(&ssrq->rq.mutex);
	stl_srq_pull(ssrq);
	mutex_unlock(&ssrq->rq.mutex);
}

/**
 * stl_ring_qp_modified() - a QP with rings changed state
 * @sqp: the QP
 * @attr: what was applied
 * @mask: which of @attr
 */
void stl_ring_qp_modified(struct stl_qp *sqp, const struct ib_qp_attr *attr,
			  int mask)
{
	if (!(mask & IB_QP_STATE))
		return;
	switch (attr->qp_state) {
	case IB_QPS_RESET:
		/* The parent dropped what it held; so do the rings. */
		mutex_lock(&sqp->rq.mutex);
		/* One class for both queues' mutexes: always rq, then sq. */
		mutex_lock_nested(&sqp->sq.mutex, SINGLE_DEPTH_NESTING);
		WRITE_ONCE(sqp->err, false);
		WRITE_ONCE(sqp->fence, STL_FENCE_NONE);
		sqp->marked = false;
		sqp->sq.next = 0;
		sqp->rq.next = 0;
		sqp->sq.done = 0;
		sqp->rq.done = 0;
		WRITE_ONCE(sqp->sq.ring.hdr->consumer_index, 0);
		WRITE_ONCE(sqp->sq.ring.hdr->producer_index, 0);
		if (sqp->rq.ring.hdr) {
			WRITE_ONCE(sqp->rq.ring.hdr->consumer_index, 0);
			WRITE_ONCE(sqp->rq.ring.hdr->producer_index, 0);
		}
		mutex_unlock(&sqp->sq.mutex);
		mutex_unlock(&sqp->rq.mutex);
		return;
	case IB_QPS_ERR:
		WRITE_ONCE(sqp->err, true);
		mutex_lock(&sqp->sq.mutex);
		stl_sq_mark(sqp);
		mutex_unlock(&sqp->sq.mutex);
		stl_ring_qp_run(sqp);
		return;
	case IB_QPS_RTS:
		stl_ring_doorbell(sqp);
		return;
	default:
		stl_ring_qp_run(sqp);
		return;
	}
}

/* The backstop: receive rings nobody rang for, flushes nobody finished. */
static void stl_ring_dev_work(struct work_struct *work)
{
	struct stl_dev *sdev = container_of(to_delayed_work(work),
					    struct stl_dev, ring_work);
	struct stl_srq *ssrq;
	struct stl_qp *sqp;

	mutex_lock(&sdev->ring_lock);
	list_for_each_entry(sqp, &sdev->ring_qps, ring_entry) {
		if (READ_ONCE(sqp->err) || READ_ONCE(sqp->rate_wait) ||
		    (sqp->rq.ring.hdr &&
		     stl_ring_uprod(&sqp->rq.ring) != READ_ONCE(sqp->rq.next)))
			queue_work(system_wq, &sqp->work);
	}
	list_for_each_entry(ssrq, &sdev->ring_srqs, ring_entry) {
		if (stl_ring_uprod(&ssrq->rq.ring) != READ_ONCE(ssrq->rq.next))
			queue_work(system_wq, &ssrq->work);
	}
	if (!list_empty(&sdev->ring_qps) || !list_empty(&sdev->ring_srqs))
		queue_delayed_work(system_wq, &sdev->ring_work, 1);
	mutex_unlock(&sdev->ring_lock);
}

/* ---- shared receive queues ---- */

/*
 * Take the SRQ ring's new entries to the parent SRQ.  Each goes to a free
 * parent slot and leaves the ring at once (completions of an SRQ come in
 * any order).  A refused entry is posted with no SGE and completes with
 * IB_WC_LOC_PROT_ERR on the QP that takes it, as a bad lkey does on
 * hardware.  Context: process, rq.mutex held.
 */
static void stl_srq_pull(struct stl_srq *ssrq)
{
	struct stl_dev *sdev = to_stl_dev(ssrq->ibsrq.device);
	struct stl_pd *spd = to_stl_pd(ssrq->ibsrq.pd);
	struct stl_uq *uq = &ssrq->rq;
	struct rxe_recv_wqe *wqe = uq->wqe;
	const struct ib_recv_wr *badwr;
	struct ib_recv_wr wr = {};
	unsigned long flags;
	u32 prod, n = 0;
	int ret;

	lockdep_assert_held(&uq->mutex);
	prod = stl_ring_uprod(&uq->ring);
	while (uq->next != prod && n++ < STL_RQ_POLL_BUDGET) {
		u32 idx = uq->next, nsge, slot;
		bool bad;

		spin_lock_irqsave(&ssrq->slot_lock, flags);
		if (!ssrq->nfree) {
			spin_unlock_irqrestore(&ssrq->slot_lock, flags);
			return;		/* the parent is full */
		}
		slot = ssrq->free[--ssrq->nfree];
		spin_unlock_irqrestore(&ssrq->slot_lock, flags);

		memcpy(wqe, stl_ring_slot(&uq->ring, idx), 1U << uq->ring.log2);
		nsge = READ_ONCE(wqe->dma.num_sge);
		bad = nsge > uq->max_sge ||
		      stl_check_sges(sdev, spd, (struct ib_sge *)wqe->dma.sge,
				     nsge, uq->max_sge, IB_ACCESS_LOCAL_WRITE);
		if (bad) {
			stl_count(sdev, STL_CNT_BAD_WRS, 1);
			stl_dbg(sdev, "SRQ ring entry %u refused\n", idx);
		}
		ssrq->slots[slot].wr_id = wqe->wr_id;
		ssrq->slots[slot].bad = bad;
		ssrq->slots[slot].status = IB_WC_LOC_PROT_ERR;
		wr.wr_id = STL_WR_RECV | slot;
		wr.sg_list = bad ? NULL : (struct ib_sge *)wqe->dma.sge;
		wr.num_sge = bad ? 0 : nsge;
		ret = stl_parent_post_srq_recv(ssrq->psrq, &wr, &badwr);
		if (ret) {
			stl_dbg(sdev, "parent post_srq_recv: %d\n", ret);
			spin_lock_irqsave(&ssrq->slot_lock, flags);
			ssrq->free[ssrq->nfree++] = slot;
			spin_unlock_irqrestore(&ssrq->slot_lock, flags);
			return;
		}
		stl_count(sdev, STL_CNT_RECV_WRS, 1);
		uq->next = (idx + 1) & uq->ring.mask;
		/* The entry is the parent's: its ring slot is free. */
		smp_store_release(&uq->ring.hdr->consumer_index, uq->next);
	}
	if (uq->next != prod && n > STL_RQ_POLL_BUDGET)
		queue_work(system_wq, &ssrq->work);
}

static void stl_srq_work(struct work_struct *work)
{
	struct stl_srq *ssrq = container_of(work, struct stl_srq, work);

	mutex_lock(&ssrq->rq.mutex);
	stl_srq_pull(ssrq);
	mutex_unlock(&ssrq->rq.mutex);
}

/**
 * stl_ring_srq_create() - give a new SRQ of a device with rings its ring
 * @ssrq: the SRQ, its parent SRQ made with init->attr.max_wr entries
 * @init: the capacities; max_wr set to what the ring holds
 * @udata: the command's response: struct rxe_create_srq_resp
 *
 * Return: 0 or -errno.
 */
int stl_ring_srq_create(struct stl_srq *ssrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ssrq->ibsrq.device);
	struct rxe_create_srq_resp resp = {};
	struct stl_ucontext *suc;
	u32 num = init->attr.max_wr, i;
	int ret;

	if (!udata || udata->outlen < sizeof(resp.mi))
		return -EINVAL;
	suc = rdma_udata_to_drv_context(udata, struct stl_ucontext, ibuc);
	if (!suc)
		return -EINVAL;
	spin_lock_init(&ssrq->slot_lock);
	INIT_WORK(&ssrq->work, stl_srq_work);
	INIT_LIST_HEAD(&ssrq->ring_entry);
	ssrq->nslots = ssrq->charged + 1;
	ssrq->slots = kvcalloc(ssrq->nslots, sizeof(*ssrq->slots),
			       GFP_KERNEL_ACCOUNT);
	ssrq->free = kvcalloc(ssrq->nslots, sizeof(*ssrq->free),
			      GFP_KERNEL_ACCOUNT);
	if (!ssrq->slots || !ssrq->free) {
		ret = -ENOMEM;
		goto err_free;
	}
	for (i = 0; i < ssrq->nslots; i++)
		ssrq->free[i] = ssrq->nslots - 1 - i;
	ssrq->nfree = ssrq->nslots;
	ret = stl_uq_init(&ssrq->rq, &suc->ibuc, &num,
			  sizeof(struct rxe_recv_wqe) +
			  ssrq->max_sge * sizeof(struct rxe_sge), &resp.mi);
	if (ret)
		goto err_free;
	ssrq->rq.max_sge = ssrq->max_sge;
	ssrq->rq.srq = true;
	init->attr.max_wr = num;
	ret = ib_copy_to_udata(udata, &resp,
			       min_t(size_t, udata->outlen, sizeof(resp)));
	if (ret)
		goto err_uq;
	stl_ring_list(sdev, &ssrq->rq, &ssrq->ring_entry, &sdev->ring_srqs);
	return 0;

err_uq:
	stl_uq_fini(&ssrq->rq);
err_free:
	kvfree(ssrq->slots);
	kvfree(ssrq->free);
	ssrq->slots = NULL;
	ssrq->free = NULL;
	return ret;
}

/**
 * stl_ring_srq_destroy() - nothing takes an SRQ's entries any more
 * @ssrq: an SRQ no QP uses, about to be destroyed
 */
void stl_ring_srq_destroy(struct stl_srq *ssrq)
{
	struct stl_dev *sdev = to_stl_dev(ssrq->ibsrq.device);

	if (!ssrq->rq.ring.hdr)
		return;
	stl_ring_unlist(sdev, &ssrq->rq, &ssrq->ring_entry);
	cancel_work_sync(&ssrq->work);
}

/**
 * stl_ring_srq_free() - free an SRQ's ring, after its parent SRQ is gone
 * @ssrq: the SRQ
 */
void stl_ring_srq_free(struct stl_srq *ssrq)
{
	stl_uq_fini(&ssrq->rq);
	kvfree(ssrq->slots);
	kvfree(ssrq->free);
	ssrq->slots = NULL;
	ssrq->free = NULL;
}

/* ---- address handles ---- */

/**
 * stl_ring_ah_created() - number a new AH for UD send ring entries
 * @sah: the AH
 * @udata: the command's response (struct rxe_create_ah_resp), may be NULL
 *
 * Return: 0 or -errno.
 */
int stl_ring_ah_created(struct stl_ah *sah, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(sah->ibah.device);
	struct rxe_create_ah_resp resp = {};
	int ret;

	ret = xa_alloc(&sdev->ahs, &sah->num, sah, xa_limit_31b, GFP_KERNEL);
	if (ret)
		return ret;
	if (udata && udata->outlen >= sizeof(resp)) {
		resp.ah_num = sah->num;
		ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (ret) {
			xa_erase(&sdev->ahs, sah->num);
			return ret;
		}
	}
	return 0;
}

/**
 * stl_ring_ah_destroy() - unnumber an AH before its parent AH goes
 * @sah: the AH
 *
 * A doorbell looks AHs up under RCU and posts before it unlocks: after the
 * grace period no post can name the parent AH any more.
 */
void stl_ring_ah_destroy(struct stl_ah *sah)
{
	struct stl_dev *sdev = to_stl_dev(sah->ibah.device);

	if (!sah->num)
		return;
	xa_erase(&sdev->ahs, sah->num);
	synchronize_rcu();
}

void stl_ring_dev_init(struct stl_dev *sdev)
{
	xa_init_flags(&sdev->ahs, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&sdev->ring_qps);
	INIT_LIST_HEAD(&sdev->ring_srqs);
	mutex_init(&sdev->ring_lock);
	INIT_DELAYED_WORK(&sdev->ring_work, stl_ring_dev_work);
}

void stl_ring_dev_fini(struct stl_dev *sdev)
{
	cancel_delayed_work_sync(&sdev->ring_work);
	xa_destroy(&sdev->ahs);
}
