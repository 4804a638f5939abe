/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar PVDMA: pin user memory when it is registered, never ahead of use,
 * and account every pinned page to the process and to the Stellar device.
 */
#ifndef PVDMA_H
#define PVDMA_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/scatterlist.h>

struct page;
struct mm_struct;

/**
 * struct pvdma_acct - pinned-page accounting of one Stellar device
 * @pinned_pages: pages pinned now on behalf of the device
 * @pin_calls: registrations that pinned memory
 * @pin_failures: registrations refused (fault, limit)
 */
struct pvdma_acct {
	atomic64_t pinned_pages;
	atomic64_t pin_calls;
	atomic64_t pin_failures;
};

/**
 * struct pvdma_pin - one pinned range of a process's memory
 * @pages: the pinned pages, in address order
 * @npages: number of entries in @pages
 * @offset: offset of the range's first byte in @pages[0]
 * @length: length of the range in bytes
 * @mm: the process memory the pages belong to (mmgrab'ed)
 * @acct: the device the pages are charged to
 * @writable: pinned for write: pages are dirtied when unpinned
 * @sgt: scatter table over @pages, for the parent's DMA mapping
 */
struct pvdma_pin {
	struct page **pages;
	unsigned long npages;
	unsigned int offset;
	u64 length;
	struct mm_struct *mm;
	struct pvdma_acct *acct;
	bool writable;
	struct sg_table sgt;
};

int pvdma_pin_user(struct pvdma_acct *acct, u64 start, u64 length,
		   bool writable, struct pvdma_pin **pinp);
void pvdma_unpin(struct pvdma_pin *pin);
u64 pvdma_total_pinned(void);

#endif /* PVDMA_H */
