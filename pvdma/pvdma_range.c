// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar PVDMA: pin cache bookkeeping (interval lookup and LRU).
 *
 * Kernel-free: builds into stellar.ko and into tests/unit/.  Listed ranges
 * of every owner share one interval tree keyed by page numbers; a lookup
 * visits only the ranges that hold the request's first page.
 */
#include "pvdma/pvdma_range.h"

#include <linux/interval_tree_generic.h>

#define PVDMA_R_FIRST(r) ((r)->first)
#define PVDMA_R_LAST(r) ((r)->last)

INTERVAL_TREE_DEFINE(struct pvdma_range, rb, u64, subtree_last,
		     PVDMA_R_FIRST, PVDMA_R_LAST, static, pvdma_itree)

#define pvdma_entry(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static void pvdma_link_init(struct pvdma_link *l)
{
	l->prev = l;
	l->next = l;
}

static bool pvdma_link_empty(const struct pvdma_link *l)
{
	return l->next == l;
}

/* Insert @l before @at. */
static void pvdma_link_add_before(struct pvdma_link *l, struct pvdma_link *at)
{
	l->prev = at->prev;
	l->next = at;
	at->prev->next = l;
	at->prev = l;
}

static void pvdma_link_del(struct pvdma_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	pvdma_link_init(l);
}

/**
 * pvdma_range_set_init() - start an empty set
 * @set: the set
 * @max_idle_pages: how many pages idle ranges may keep pinned
 */
void pvdma_range_set_init(struct pvdma_range_set *set, u64 max_idle_pages)
{
	set->tree = RB_ROOT_CACHED;
	pvdma_link_init(&set->lru);
	set->nr = 0;
	set->idle_pages = 0;
	set->max_idle_pages = max_idle_pages;
}

/**
 * pvdma_range_find() - a listed range that covers a request
 * @set: the set
 * @owner: the requesting process memory
 * @first: first page of the request
 * @last: last page of the request (inclusive)
 * @writable: the request needs write access
 *
 * Return: a range of @owner holding every page [@first, @last], writable if
 * asked for, or NULL.  Its use count is not changed.
 */
struct pvdma_range *pvdma_range_find(struct pvdma_range_set *set,
				     const void *owner, u64 first, u64 last,
				     bool writable)
{
	struct pvdma_range *r;

	/* Every range holding @first, of any owner; check the rest. */
	for (r = pvdma_itree_iter_first(&set->tree, first, first); r;
	     r = pvdma_itree_iter_next(r, first, first)) {
		if (r->owner == owner && r->last >= last &&
		    (r->writable || !writable))
			return r;
	}
	return NULL;
}

/**
 * pvdma_range_insert() - make a new range findable
 * @set: the set
 * @r: the range, with owner, first, last, writable and refs set
 *
 * Return: false if the set is full; @r then stays unlisted and the caller
 * frees it when its last user is gone.
 */
bool pvdma_range_insert(struct pvdma_range_set *set, struct pvdma_range *r)
{
	RB_CLEAR_NODE(&r->rb);
	pvdma_link_init(&r->lru);
	r->listed = false;
	if (set->nr >= PVDMA_RANGE_MAX)
		return false;

	pvdma_itree_insert(r, &set->tree);
	r->listed = true;
	set->nr++;
	if (!r->refs) {
		pvdma_link_add_before(&r->lru, &set->lru);
		set->idle_pages += pvdma_range_pages(r);
	}
	return true;
}

/**
 * pvdma_range_get() - one more registration uses @r
 * @set: the set
 * @r: a listed range (from pvdma_range_find())
 */
void pvdma_range_get(struct pvdma_range_set *set, struct pvdma_range *r)
{
	if (!r->refs++ && r->listed) {
		pvdma_link_del(&r->lru);
		set->idle_pages -= pvdma_range_pages(r);
	}
}

/**
 * pvdma_range_put() - a registration stopped using @r
 * @set: the set
 * @r: the range
 *
 * An idle listed range becomes the most recently used one.
 * Return: true if @r is unused and unlisted: the caller must free it.
 */
bool pvdma_range_put(struct pvdma_range_set *set, struct pvdma_range *r)
{
	if (--r->refs)
		return false;
	if (!r->listed)
		return true;
	pvdma_link_add_before(&r->lru, &set->lru);
	set->idle_pages += pvdma_range_pages(r);
	return false;
}

/**
 * pvdma_range_unlist() - the owner's memory under @r changed: forget it
 * @set: the set
 * @r: the range
 *
 * Users keep their pages; nobody new finds them.
 * Return: true if @r is unused: the caller must free it.
 */
bool pvdma_range_unlist(struct pvdma_range_set *set, struct pvdma_range *r)
{
	if (r->listed) {
		pvdma_itree_remove(r, &set->tree);
		RB_CLEAR_NODE(&r->rb);
		if (!r->refs) {
			pvdma_link_del(&r->lru);
			set->idle_pages -= pvdma_range_pages(r);
		}
		r->listed = false;
		set->nr--;
	}
	return !r->refs;
}

/**
 * pvdma_range_evict() - take the least recently used idle range out
 * @set: the set
 * @force: evict even when the idle pages are within the bound (to make room
 *	under a quota)
 *
 * Return: the unlisted range for the caller to free, or NULL when there is
 * no idle range or (without @force) the idle pages are within the bound.
 */
struct pvdma_range *pvdma_range_evict(struct pvdma_range_set *set, bool force)
{
	struct pvdma_range *r;

	if (pvdma_link_empty(&set->lru))
		return NULL;
	if (!force && set->idle_pages <= set->max_idle_pages)
		return NULL;
	r = pvdma_entry(set->lru.next, struct pvdma_range, lru);
	pvdma_range_unlist(set, r);
	return r;
}
