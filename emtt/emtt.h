/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar eMTT: the translation table a parent MR is built from.
 *
 * An MR's memory, as the parent's DMA device sees it, is a list of
 * extents: runs of contiguous device addresses, in iova order.  Adjacent
 * runs are merged as they are added.  The parent MR then takes the largest
 * page size that (a) the parent supports (its page_size_cap), (b) every
 * boundary between two extents is aligned to, and (c) keeps the iova and
 * the device address at the same offset within a page, which hardware and
 * rxe both rely on to find a byte.  One entry per page of that size: 1 GiB
 * of 2 MiB pages is 512 entries, not 262144.
 *
 * Kernel-free: builds into stellar.ko and into tests/unit/.  No locking and
 * no allocation: the caller owns the extent array.
 */
#ifndef EMTT_H
#define EMTT_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#endif

/* Page sizes a parent MR may use: 4 KiB (the smallest) up to 2 GiB. */
#define EMTT_MIN_SHIFT	12
#define EMTT_MAX_SHIFT	31

/**
 * enum emtt_kind - where an MR's memory comes from
 * @EMTT_KIND_HOST: process memory pinned by PVDMA (small or huge pages)
 * @EMTT_KIND_DMABUF: a dma-buf's scatter list (device or host memory)
 * @EMTT_NUM_KINDS: number of kinds
 */
enum emtt_kind {
	EMTT_KIND_HOST,
	EMTT_KIND_DMABUF,
	EMTT_NUM_KINDS
};

/**
 * struct emtt_extent - one run of contiguous device addresses
 * @addr: first device (DMA) address
 * @len: bytes
 */
struct emtt_extent {
	u64 addr;
	u64 len;
};

/**
 * struct emtt_table - an MR's extents and the page size chosen for them
 * @iova: the address work requests use for the first byte
 * @length: bytes in all extents
 * @kind: where the memory comes from
 * @n: extents in use
 * @max: extents @ext has room for
 * @page_shift: chosen page size (log2), 0 until emtt_choose()
 * @entries: parent MR entries at @page_shift, 0 until emtt_choose()
 * @merge: adjacent runs become one extent (emtt_init() sets it; clear it to
 *	size for the runs as given, e.g. a dma-buf that may move to memory
 *	where they are no longer adjacent)
 * @ext: the extents, in iova order (the caller's array)
 */
struct emtt_table {
	u64 iova;
	u64 length;
	enum emtt_kind kind;
	u32 n;
	u32 max;
	u32 page_shift;
	u64 entries;
	bool merge;
	struct emtt_extent *ext;
};

void emtt_init(struct emtt_table *t, struct emtt_extent *ext, u32 max,
	       u64 iova, enum emtt_kind kind);
int emtt_add(struct emtt_table *t, u64 addr, u64 len);
u32 emtt_best_shift(const struct emtt_table *t, u64 page_size_cap);
u64 emtt_entries(const struct emtt_table *t, u32 shift);
int emtt_choose(struct emtt_table *t, u64 page_size_cap);
int emtt_choose_within(struct emtt_table *t, u64 page_size_cap,
		       u64 max_small);
const char *emtt_kind_name(enum emtt_kind kind);

#endif /* EMTT_H */
