/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar PVDMA: the pin cache's bookkeeping, free of kernel dependencies.
 *
 * A range set holds pinned ranges of process memory, keyed by (owner, first
 * page, last page, writable).  Ranges in use by registrations are counted;
 * idle ranges stay pinned, in least-recently-used order, until the set is
 * over its idle bound or its owner's memory changes.  The same file builds
 * into stellar.ko and into userspace unit tests.
 *
 * The set does no locking and no memory management: the caller serialises
 * every call and owns the nodes.  Listed ranges sit in an interval tree
 * (the kernel's generic augmented rbtree), so a lookup costs O(log n + k)
 * for k listed ranges that hold the request's first page.
 */
#ifndef PVDMA_RANGE_H
#define PVDMA_RANGE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/rbtree.h>
#else
/* Userspace: tools/include of the kernel source (see tests/unit/Makefile). */
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <linux/rbtree.h>
#endif

/* Most ranges one set may hold (a bound on the nodes callers keep). */
#define PVDMA_RANGE_MAX 8192

struct pvdma_link {
	struct pvdma_link *prev, *next;
};

/**
 * struct pvdma_range - one pinned range of one process's memory
 * @owner: the process memory it belongs to (an opaque key)
 * @first: first page number
 * @last: last page number (inclusive)
 * @writable: pinned for write; serves read-only requests too
 * @refs: registrations using it
 * @listed: findable by pvdma_range_find() (not invalidated)
 * @rb: node in the set's interval tree of listed ranges, keyed by
 *	[@first, @last]
 * @subtree_last: largest @last in @rb's subtree (interval tree augment)
 * @lru: entry in the set's idle list while @refs is zero and @listed
 */
struct pvdma_range {
	const void *owner;
	u64 first;
	u64 last;
	bool writable;
	unsigned int refs;
	bool listed;
	struct rb_node rb;
	u64 subtree_last;
	struct pvdma_link lru;
};

/**
 * struct pvdma_range_set - the ranges of one device
 * @tree: listed ranges of every owner, as an interval tree of pages
 * @lru: idle listed ranges, least recently used first
 * @nr: listed ranges
 * @idle_pages: pages of idle listed ranges
 * @max_idle_pages: bound on @idle_pages; beyond it the oldest are evicted
 */
struct pvdma_range_set {
	struct rb_root_cached tree;
	struct pvdma_link lru;
	unsigned int nr;
	u64 idle_pages;
	u64 max_idle_pages;
};

static inline u64 pvdma_range_pages(const struct pvdma_range *r)
{
	return r->last - r->first + 1;
}

void pvdma_range_set_init(struct pvdma_range_set *set, u64 max_idle_pages);
struct pvdma_range *pvdma_range_find(struct pvdma_range_set *set,
				     const void *owner, u64 first, u64 last,
				     bool writable);
bool pvdma_range_insert(struct pvdma_range_set *set, struct pvdma_range *r);
void pvdma_range_get(struct pvdma_range_set *set, struct pvdma_range *r);
bool pvdma_range_put(struct pvdma_range_set *set, struct pvdma_range *r);
bool pvdma_range_unlist(struct pvdma_range_set *set, struct pvdma_range *r);
struct pvdma_range *pvdma_range_evict(struct pvdma_range_set *set,
				      bool force);

#endif /* PVDMA_RANGE_H */
