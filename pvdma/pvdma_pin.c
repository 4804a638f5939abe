// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar PVDMA: pin the pages of a registration when it is made.
 *
 * Nothing is pinned when a device, context, PD or QP is created: only a
 * memory registration pins, and only the pages it covers.  Every pinned page
 * is charged to the process (mm->pinned_vm against RLIMIT_MEMLOCK, the same
 * rule ib_umem follows) and to the Stellar device that asked for it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/capability.h>

#include "pvdma/pvdma.h"

/* Pages pinned by the whole module now; must read 0 once all is released. */
static atomic64_t pvdma_pinned_total = ATOMIC64_INIT(0);

/* pin_user_pages_fast() is asked for at most this many pages at a time. */
#define PVDMA_PIN_BATCH 512

/**
 * pvdma_total_pinned() - pages pinned by every Stellar device together
 *
 * Return: the number of pages pinned now.
 */
u64 pvdma_total_pinned(void)
{
	return atomic64_read(&pvdma_pinned_total);
}

static int pvdma_charge_mm(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 now = atomic64_add_return(npages, &mm->pinned_vm);

	if (now > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static void pvdma_release_pages(struct pvdma_pin *pin, unsigned long npinned)
{
	unpin_user_pages_dirty_lock(pin->pages, npinned, pin->writable);
}

/**
 * pvdma_pin_user() - pin a range of the calling process's memory
 * @acct: the device to charge
 * @start: user virtual address of the first byte
 * @length: bytes in the range; not zero
 * @writable: the device may write into the range
 * @pinp: where to store the new pin
 *
 * Pins every page that [@start, @start + @length) touches, charges them to
 * current->mm and to @acct, and builds a scatter table over them.
 *
 * Context: process context of the process that owns the memory.
 * Return: 0, -EINVAL for an empty or wrapping range, -ENOMEM over
 * RLIMIT_MEMLOCK or out of memory, -EFAULT for unmapped memory.
 */
int pvdma_pin_user(struct pvdma_acct *acct, u64 start, u64 length,
		   bool writable, struct pvdma_pin **pinp)
{
	unsigned int gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	struct mm_struct *mm = current->mm;
	unsigned long first, npages, done = 0;
	struct pvdma_pin *pin;
	int ret;

	if (!length || start + length < start || !mm)
		return -EINVAL;
	first = start >> PAGE_SHIFT;
	npages = ((start + length - 1) >> PAGE_SHIFT) - first + 1;
	if (npages > INT_MAX)
		return -EINVAL;

	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	pin->pages = kvmalloc_array(npages, sizeof(*pin->pages), GFP_KERNEL);
	if (!pin->pages) {
		ret = -ENOMEM;
		goto err_free_pin;
	}
	pin->npages = npages;
	pin->offset = start & ~PAGE_MASK;
	pin->length = length;
	pin->writable = writable;
	pin->acct = acct;
	pin->mm = mm;
	mmgrab(mm);

	ret = pvdma_charge_mm(mm, npages);
	if (ret) {
		pr_info_ratelimited("pin of %lu pages refused: over RLIMIT_MEMLOCK\n",
				    npages);
		goto err_drop_mm;
	}

	while (done < npages) {
		int want = min_t(unsigned long, npages - done, PVDMA_PIN_BATCH);
		int got;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unpin;
		}
		got = pin_user_pages_fast((first + done) << PAGE_SHIFT, want,
					  gup, pin->pages + done);
		if (got <= 0) {
			ret = got ? got : -EFAULT;
			goto err_unpin;
		}
		done += got;
		cond_resched();
	}

	ret = sg_alloc_table_from_pages(&pin->sgt, pin->pages, npages,
					pin->offset, length, GFP_KERNEL);
	if (ret)
		goto err_unpin;

	atomic64_add(npages, &acct->pinned_pages);
	atomic64_add(npages, &pvdma_pinned_total);
	atomic64_inc(&acct->pin_calls);
	*pinp = pin;
	return 0;

err_unpin:
	pvdma_release_pages(pin, done);
	atomic64_sub(npages, &mm->pinned_vm);
err_drop_mm:
	mmdrop(mm);
	kvfree(pin->pages);
err_free_pin:
	kfree(pin);
	atomic64_inc(&acct->pin_failures);
	return ret == -EFAULT || ret == -ENOMEM || ret == -EINTR ? ret : -EFAULT;
}

/**
 * pvdma_unpin() - release a pin made by pvdma_pin_user()
 * @pin: the pin; freed on return
 *
 * Dirties the pages if they were pinned writable, returns the charge to the
 * process and to the device.  May run in any process context (for example
 * while the device is torn down on behalf of an exited process).
 */
void pvdma_unpin(struct pvdma_pin *pin)
{
	sg_free_table(&pin->sgt);
	pvdma_release_pages(pin, pin->npages);
	atomic64_sub(pin->npages, &pin->mm->pinned_vm);
	atomic64_sub(pin->npages, &pin->acct->pinned_pages);
	atomic64_sub(pin->npages, &pvdma_pinned_total);
	mmdrop(pin->mm);
	kvfree(pin->pages);
	kfree(pin);
}
