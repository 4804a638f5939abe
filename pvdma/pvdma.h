/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar PVDMA: pin user memory when it is registered, never ahead of use;
 * share and cache pins; account every pinned page to the process and to the
 * Stellar device.
 */
#ifndef PVDMA_H
#define PVDMA_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/scatterlist.h>

#include "pvdma/pvdma_range.h"

/* Idle pinned memory a device keeps cached unless told otherwise. */
#define PVDMA_DEFAULT_CACHE_BYTES (256ULL << 20)

enum pvdma_counter {
	PVDMA_CNT_HITS,
	PVDMA_CNT_MISSES,
	PVDMA_CNT_EVICTIONS,
	PVDMA_CNT_INVALIDATIONS,
	PVDMA_CNT_QUOTA_REFUSALS,
	PVDMA_CNT_PARKED_REUSES,
	PVDMA_NUM_COUNTERS
};

/**
 * struct pvdma_cache - the pins of one Stellar device
 * @lock: guards @set, @quota_pages and every entry's range and state flags;
 *	never held while pages are pinned or a notifier is removed
 * @set: cached and in-use ranges
 * @quota_pages: most pages the device may pin (0: no quota)
 * @pinned_pages: pages pinned now by the device (in use and cached), plus
 *	pages reserved under the quota for pins in progress; raised only under
 *	@lock, after the quota check, so it never exceeds a quota it was
 *	raised under
 * @live: entries not yet freed
 * @entries: every entry not yet freed, listed or not
 * @releasing: parked objects being released outside the lock
 * @cnt: counters, by enum pvdma_counter
 * @name: the device's name, for log lines
 */
struct pvdma_cache {
	struct mutex lock;
	struct pvdma_range_set set;
	u64 quota_pages;
	atomic64_t pinned_pages;
	atomic_t live;
	struct list_head entries;
	atomic_t releasing;
	atomic64_t cnt[PVDMA_NUM_COUNTERS];
	const char *name;
};

struct pvdma_entry;

/**
 * struct pvdma_map - the pinned pages behind one registration
 * @entry: the cache entry holding the pins
 * @pages: first page of the registration
 * @npages: pages the registration touches
 * @offset: offset of its first byte in @pages[0]
 * @length: bytes registered
 */
struct pvdma_map {
	struct pvdma_entry *entry;
	struct page **pages;
	unsigned long npages;
	unsigned int offset;
	u64 length;
};

/**
 * struct pvdma_parked - a caller's object kept with idle pins for reuse
 * @tag: who may take it back (for Stellar, the PD)
 * @start: user address of the registration it was built for
 * @length: its length
 * @release: frees it; called without locks, in process or worker context,
 *	before the pins it relies on are released
 * @next: link in a list of objects being dropped
 *
 * Stellar parks the parent MR of a deregistered region here (invalidated,
 * with its page list intact), so registering the same region again needs one
 * work request instead of building a new MR.
 */
struct pvdma_parked {
	const void *tag;
	u64 start;
	u64 length;
	void (*release)(struct pvdma_parked *p);
	struct pvdma_parked *next;
};

int pvdma_init(void);
void pvdma_exit(void);
u64 pvdma_total_pinned(void);

void pvdma_cache_init(struct pvdma_cache *c, const char *name);
void pvdma_cache_destroy(struct pvdma_cache *c);
void pvdma_cache_set_limit(struct pvdma_cache *c, bool quota, u64 bytes);
void pvdma_cache_get_limits(struct pvdma_cache *c, u64 *quota_bytes,
			    u64 *cache_bytes);
u64 pvdma_cache_idle_pages(struct pvdma_cache *c);

int pvdma_map_user(struct pvdma_cache *c, u64 start, u64 length,
		   bool writable, const void *tag, struct pvdma_map **mapp,
		   struct pvdma_parked **parkedp);
void pvdma_unmap_user(struct pvdma_cache *c, struct pvdma_map *map,
		      struct pvdma_parked *park);
void pvdma_drop_parked(struct pvdma_cache *c, const void *tag);

#endif /* PVDMA_H */
