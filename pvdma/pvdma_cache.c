// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar PVDMA: pinning on demand, with a pin cache.
 *
 * Nothing is pinned when a device, context, PD or QP is created: only a
 * memory registration pins, and only the pages it covers.  Pins live in
 * cache entries keyed by (process memory, page range, writable): a
 * registration that falls inside an entry shares its pins; an entry whose
 * last registration is gone stays pinned (idle) until the device's idle
 * bound or pin quota needs the room, least recently used first.
 *
 * An entry is never stale: each watches its range with an mmu interval
 * notifier, and any change of the mapping (munmap, mremap, COW, migration,
 * mprotect, process exit) takes it out of the cache.  Registrations that use
 * it keep their pages, as with any pinned registration; nobody new gets
 * them.  The pin follows the notifier's sequence protocol
 * (mmu_interval_read_begin() before pinning, mmu_interval_read_retry()
 * under the lock before listing), so an invalidation already under way when
 * the notifier was inserted is not missed either.  Events that provably
 * leave the pinned pages mapped where they were (see pvdma_event_keeps_pages())
 * do not drop an entry.
 *
 * The device's pin quota is reserved under the lock before pinning, so
 * concurrent registrations cannot pin more than the quota between them.
 *
 * Every pinned page is charged to the process (mm->pinned_vm against
 * RLIMIT_MEMLOCK, the rule ib_umem follows), to the device and to the module.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/capability.h>
#include <linux/workqueue.h>

#include "pvdma/pvdma.h"

/* pin_user_pages_fast() is asked for at most this many pages at a time. */
#define PVDMA_PIN_BATCH 512
/*
 * Pin attempts of one entry when the range changes while it is pinned (a
 * COW break by the pin itself is the common case); the last attempt's pages
 * serve the registration but are not cached if that changed too.
 */
#define PVDMA_PIN_TRIES 2

/**
 * struct pvdma_entry - pinned pages of one range of one process
 * @r: bookkeeping in the device's range set (pvdma_range.c)
 * @cache: the device
 * @pages: the pinned pages, @r.first first
 * @mm: the process memory (mmgrab'ed)
 * @notifier: watches [@r.first, @r.last] of @mm
 * @invalidated: the mapping changed; never to be listed again (guarded
 *	by the cache's lock)
 * @dying: being freed; the notifier must not free it again
 * @doom: entry in a caller's list of entries to free outside the lock
 * @all: entry in the cache's list of every entry
 * @parked: an object the last user left for the next one, or NULL
 * @free_work: frees an idle entry invalidated from the notifier
 */
struct pvdma_entry {
	struct pvdma_range r;
	struct pvdma_cache *cache;
	struct page **pages;
	struct mm_struct *mm;
	struct mmu_interval_notifier notifier;
	bool invalidated;
	bool dying;
	struct list_head doom;
	struct list_head all;
	struct pvdma_parked *parked;
	struct work_struct free_work;
};

/* Pages pinned by the whole module now; must read 0 once all is released. */
static atomic64_t pvdma_pinned_total = ATOMIC64_INIT(0);
static struct workqueue_struct *pvdma_wq;
/*
 * Woken when a cache's live or releasing count drops.  Module-wide, not per
 * cache: a waiter may free the cache as soon as it sees the count at zero,
 * before the waker has returned from wake_up().
 */
static DECLARE_WAIT_QUEUE_HEAD(pvdma_waitq);

/**
 * pvdma_total_pinned() - pages pinned by every Stellar device together
 *
 * Return: the number of pages pinned now.
 */
u64 pvdma_total_pinned(void)
{
	return atomic64_read(&pvdma_pinned_total);
}

static void pvdma_release_parked(struct pvdma_cache *c,
				 struct pvdma_parked *p)
{
	while (p) {
		struct pvdma_parked *next = p->next;

		p->release(p);
		p = next;
	}
	if (atomic_dec_and_test(&c->releasing))
		wake_up(&pvdma_waitq);
}

static void pvdma_entry_free(struct pvdma_entry *e)
{
	struct pvdma_cache *c = e->cache;
	u64 n = pvdma_range_pages(&e->r);
	struct pvdma_parked *p;

	mutex_lock(&c->lock);
	list_del(&e->all);
	p = e->parked;
	e->parked = NULL;
	if (p) {
		p->next = NULL;
		atomic_inc(&c->releasing);
	}
	mutex_unlock(&c->lock);
	/* What relies on the pins goes before them. */
	if (p)
		pvdma_release_parked(c, p);

	mmu_interval_notifier_remove(&e->notifier);
	unpin_user_pages_dirty_lock(e->pages, n, e->r.writable);
	/* The quota's room comes back only once the pages are unpinned. */
	atomic64_sub(n, &e->mm->pinned_vm);
	atomic64_sub(n, &c->pinned_pages);
	atomic64_sub(n, &pvdma_pinned_total);
	mmdrop(e->mm);
	kvfree(e->pages);
	kfree(e);
	if (atomic_dec_and_test(&c->live))
		wake_up(&pvdma_waitq);
}

static void pvdma_entry_free_work(struct work_struct *work)
{
	pvdma_entry_free(container_of(work, struct pvdma_entry, free_work));
}

/* Free, outside the lock, entries the caller took out of the set. */
static void pvdma_free_list(struct list_head *doomed)
{
	struct pvdma_entry *e, *tmp;

	list_for_each_entry_safe(e, tmp, doomed, doom) {
		list_del(&e->doom);
		pvdma_entry_free(e);
	}
}

static void pvdma_doom(struct pvdma_entry *e, struct list_head *doomed)
{
	e->dying = true;
	list_add_tail(&e->doom, doomed);
}

/*
 * Trim idle entries: over the idle bound, or (@need pages) to make room
 * under the quota.  Context: c->lock held.
 */
static void pvdma_trim(struct pvdma_cache *c, u64 need,
		       struct list_head *doomed)
{
	struct pvdma_range *r;
	u64 freed = 0;

	lockdep_assert_held(&c->lock);
	while ((r = pvdma_range_evict(&c->set, freed < need))) {
		freed += pvdma_range_pages(r);
		atomic64_inc(&c->cnt[PVDMA_CNT_EVICTIONS]);
		pvdma_doom(container_of(r, struct pvdma_entry, r), doomed);
	}
}

/**
 * pvdma_event_keeps_pages() - does an mm change leave pinned pages in place?
 * @event: the mmu notifier event
 *
 * Every page of an entry is pinned with FOLL_LONGTERM (FOLL_PIN): an
 * anonymous page is exclusive to the process once pinned, read-only pins
 * included (GUP unshares it first), and can be neither migrated nor merged.
 *
 * - MMU_NOTIFY_PROTECTION_PAGE comes from fork (copy_page_range() of COW
 *   mappings) and from page_mkclean() (writeback).  fork copies a pinned
 *   exclusive page for the child and leaves the parent's PTE alone; mkclean
 *   write-protects a file page that stays in the page cache and mapped.  A
 *   later write that does replace a page (a COW break) is MMU_NOTIFY_CLEAR.
 * - MMU_NOTIFY_SOFT_DIRTY (clear_refs) skips pinned PTEs and write-protects
 *   the others in place.
 *
 * Not these: UNMAP, CLEAR (zap, COW, KSM, migration), MIGRATE, EXCLUSIVE and
 * RELEASE replace or remove pages, and PROTECTION_VMA (mprotect, but also
 * NUMA hinting and userfaultfd write-protect) may take away the access the
 * entry was pinned for, so a registration must fault again.
 *
 * Return: true if the entry's pages are still the ones the range maps, with
 * the same VMA permissions.
 */
static bool pvdma_event_keeps_pages(enum mmu_notifier_event event)
{
	return event == MMU_NOTIFY_PROTECTION_PAGE ||
	       event == MMU_NOTIFY_SOFT_DIRTY;
}

static bool pvdma_invalidate(struct mmu_interval_notifier *mni,
			     const struct mmu_notifier_range *range,
			     unsigned long cur_seq)
{
	struct pvdma_entry *e = container_of(mni, struct pvdma_entry, notifier);
	struct pvdma_cache *c = e->cache;

	if (!mmu_notifier_range_blockable(range))
		return false;

	mutex_lock(&c->lock);
	/*
	 * Bump the sequence even for a harmless event: a pin in progress then
	 * pins again rather than reason about pages half-way through a change.
	 */
	mmu_interval_set_seq(mni, cur_seq);
	if (!e->invalidated && !e->dying &&
	    !(e->r.listed && pvdma_event_keeps_pages(range->event))) {
		e->invalidated = true;
		atomic64_inc(&c->cnt[PVDMA_CNT_INVALIDATIONS]);
		/* An idle entry goes now; one in use when its last user does. */
		if (e->r.listed && pvdma_range_unlist(&c->set, &e->r)) {
			e->dying = true;
			/* The notifier cannot be removed from its own callback. */
			INIT_WORK(&e->free_work, pvdma_entry_free_work);
			queue_work(pvdma_wq, &e->free_work);
		}
	}
	mutex_unlock(&c->lock);
	return true;
}

static const struct mmu_interval_notifier_ops pvdma_notifier_ops = {
	.invalidate = pvdma_invalidate,
};

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

/**
 * pvdma_quota_reserve() - reserve room for @npages under the device quota
 * @c: the cache
 * @npages: pages about to be pinned
 *
 * The check and the reservation happen under c->lock; every increase of
 * c->pinned_pages does, so concurrent registrations cannot both take the
 * last room.  Idle entries are evicted to make room, and the quota is
 * checked again once their pages are unpinned.  The caller gives the
 * reservation back with pvdma_quota_unreserve() if the pin fails; on
 * success it stays as the entry's charge until pvdma_entry_free().
 *
 * Return: 0, or -ENOMEM when the quota has no room even without idle pins.
 */
static int pvdma_quota_reserve(struct pvdma_cache *c, u64 npages)
{
	LIST_HEAD(doomed);
	u64 used, quota;

	for (;;) {
		mutex_lock(&c->lock);
		quota = c->quota_pages;
		used = atomic64_read(&c->pinned_pages);
		if (!quota || (npages <= quota && used <= quota - npages)) {
			atomic64_add(npages, &c->pinned_pages);
			mutex_unlock(&c->lock);
			return 0;
		}
		if (npages <= quota)
			pvdma_trim(c, used + npages - quota, &doomed);
		mutex_unlock(&c->lock);
		/* Nothing idle left to give back: no room. */
		if (list_empty(&doomed))
			return -ENOMEM;
		pvdma_free_list(&doomed);
	}
}

static void pvdma_quota_unreserve(struct pvdma_cache *c, u64 npages)
{
	atomic64_sub(npages, &c->pinned_pages);
}

/*
 * Pin [first, last] of the current process into a new, unlisted entry.  The
 * caller has reserved the pages under the device quota.
 */
static struct pvdma_entry *pvdma_entry_new(struct pvdma_cache *c, u64 first,
					   u64 last, bool writable)
{
	unsigned int gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	unsigned long npages = last - first + 1, done = 0, seq;
	struct mm_struct *mm = current->mm;
	struct pvdma_entry *e;
	unsigned int tries;
	bool stale;
	int ret;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->pages = kvmalloc_array(npages, sizeof(*e->pages), GFP_KERNEL);
	if (!e->pages) {
		ret = -ENOMEM;
		goto err_free;
	}
	e->cache = c;
	e->r.owner = mm;
	e->r.first = first;
	e->r.last = last;
	e->r.writable = writable;
	e->r.refs = 1;
	e->mm = mm;
	mmgrab(mm);

	ret = pvdma_charge_mm(mm, npages);
	if (ret) {
		pr_info_ratelimited("%s: pin of %lu pages refused: over RLIMIT_MEMLOCK\n",
				    c->name, npages);
		goto err_drop_mm;
	}

	/* Watch first, then pin: a change during pinning is not missed. */
	ret = mmu_interval_notifier_insert(&e->notifier, mm, first << PAGE_SHIFT,
					   npages << PAGE_SHIFT,
					   &pvdma_notifier_ops);
	if (ret)
		goto err_uncharge;

	for (tries = 1; ; tries++) {
		/*
		 * Waits out an invalidation of the range that is already under
		 * way (one the new notifier gets no callback for); any later
		 * one moves the sequence.
		 */
		seq = mmu_interval_read_begin(&e->notifier);
		while (done < npages) {
			int want = min_t(unsigned long, npages - done,
					 PVDMA_PIN_BATCH);
			int got;

			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				goto err_unpin;
			}
			got = pin_user_pages_fast((first + done) << PAGE_SHIFT,
						  want, gup, e->pages + done);
			if (got <= 0) {
				ret = got ? got : -EFAULT;
				goto err_unpin;
			}
			done += got;
			cond_resched();
		}
		/*
		 * The callback moves the sequence under c->lock, so from here
		 * until pvdma_entry_get() lists the entry, under the same lock,
		 * any change sets e->invalidated.
		 */
		mutex_lock(&c->lock);
		stale = mmu_interval_read_retry(&e->notifier, seq);
		if (!stale || tries == PVDMA_PIN_TRIES) {
			/* Changed while pinned: usable now, never cached. */
			e->invalidated = stale;
			mutex_unlock(&c->lock);
			break;
		}
		e->invalidated = false;
		mutex_unlock(&c->lock);
		unpin_user_pages(e->pages, done);
		done = 0;
	}

	atomic64_add(npages, &pvdma_pinned_total);
	atomic_inc(&c->live);
	return e;

err_unpin:
	unpin_user_pages(e->pages, done);
	mmu_interval_notifier_remove(&e->notifier);
err_uncharge:
	atomic64_sub(npages, &mm->pinned_vm);
err_drop_mm:
	mmdrop(mm);
	kvfree(e->pages);
err_free:
	kfree(e);
	return ERR_PTR(ret == -ENOMEM || ret == -EINTR ? ret : -EFAULT);
}

/*
 * Get an entry with every page of [first, last] pinned, from the cache or
 * newly pinned, with one more user.
 */
static struct pvdma_entry *pvdma_entry_get(struct pvdma_cache *c, u64 first,
					   u64 last, bool writable)
{
	u64 npages = last - first + 1;
	struct pvdma_range *r;
	struct pvdma_entry *e;
	LIST_HEAD(doomed);
	bool retried = false;

	mutex_lock(&c->lock);
	r = pvdma_range_find(&c->set, current->mm, first, last, writable);
	if (r) {
		pvdma_range_get(&c->set, r);
		mutex_unlock(&c->lock);
		atomic64_inc(&c->cnt[PVDMA_CNT_HITS]);
		return container_of(r, struct pvdma_entry, r);
	}
	mutex_unlock(&c->lock);
	atomic64_inc(&c->cnt[PVDMA_CNT_MISSES]);

	if (pvdma_quota_reserve(c, npages)) {
		atomic64_inc(&c->cnt[PVDMA_CNT_QUOTA_REFUSALS]);
		pr_info_ratelimited("%s: pin of %llu pages refused: over the device's pin quota of %llu pages\n",
				    c->name, npages, READ_ONCE(c->quota_pages));
		return ERR_PTR(-ENOMEM);
	}

again:
	e = pvdma_entry_new(c, first, last, writable);
	if (IS_ERR(e) && PTR_ERR(e) == -ENOMEM && !retried) {
		/* Idle pins of this device may be what fills RLIMIT_MEMLOCK. */
		mutex_lock(&c->lock);
		pvdma_trim(c, U64_MAX, &doomed);
		mutex_unlock(&c->lock);
		pvdma_free_list(&doomed);
		retried = true;
		goto again;
	}
	if (IS_ERR(e)) {
		pvdma_quota_unreserve(c, npages);
		return e;
	}

	mutex_lock(&c->lock);
	list_add_tail(&e->all, &c->entries);
	/* Changed since its pages were pinned: usable now, never cached. */
	if (!e->invalidated)
		pvdma_range_insert(&c->set, &e->r);
	pvdma_trim(c, 0, &doomed);
	mutex_unlock(&c->lock);
	pvdma_free_list(&doomed);
	return e;
}

/**
 * pvdma_map_user() - pinned pages for a registration of user memory
 * @c: the device's cache
 * @start: user virtual address of the first byte
 * @length: bytes in the range; not zero
 * @writable: the device may write into the range
 * @tag: the caller's tag for parked objects (see struct pvdma_parked)
 * @mapp: where to store the map
 * @parkedp: set to an object parked by pvdma_unmap_user() with the same
 *	@tag, @start and @length, now the caller's, or to NULL
 *
 * Context: process context of the process that owns the memory.
 * Return: 0, -EINVAL for an empty or wrapping range, -ENOMEM over the
 * process's RLIMIT_MEMLOCK, over the device quota or out of memory, -EFAULT
 * for memory that is not mapped (or not writable when @writable), -EINTR
 * when the process is being killed.
 */
int pvdma_map_user(struct pvdma_cache *c, u64 start, u64 length,
		   bool writable, const void *tag, struct pvdma_map **mapp,
		   struct pvdma_parked **parkedp)
{
	struct pvdma_entry *e;
	struct pvdma_map *map;
	u64 first, last;
	int ret;

	if (!length || start + length < start || !current->mm)
		return -EINVAL;
	first = start >> PAGE_SHIFT;
	last = (start + length - 1) >> PAGE_SHIFT;
	if (last - first >= INT_MAX)
		return -EINVAL;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	e = pvdma_entry_get(c, first, last, writable);
	if (IS_ERR(e)) {
		ret = PTR_ERR(e);
		goto err_free;
	}
	map->entry = e;
	map->pages = e->pages + (first - e->r.first);
	map->npages = last - first + 1;
	map->offset = start & ~PAGE_MASK;
	map->length = length;

	*parkedp = NULL;
	mutex_lock(&c->lock);
	if (e->parked && e->parked->tag == tag && e->parked->start == start &&
	    e->parked->length == length) {
		*parkedp = e->parked;
		e->parked = NULL;
		atomic64_inc(&c->cnt[PVDMA_CNT_PARKED_REUSES]);
	}
	mutex_unlock(&c->lock);
	*mapp = map;
	return 0;

err_free:
	kfree(map);
	return ret;
}

/**
 * pvdma_unmap_user() - a registration made by pvdma_map_user() is gone
 * @c: the device's cache
 * @map: the map; freed on return
 * @park: an object to keep with the pins for the next registration of the
 *	same range, or NULL
 *
 * The pages stay pinned while the cache keeps them.  May run in any process
 * context (for example while a device is torn down for an exited process).
 *
 * @park is consumed either way: kept (and released when the pins go), or,
 * when the range is no longer cached or caching is off, released at once,
 * before any pin it relies on.
 */
void pvdma_unmap_user(struct pvdma_cache *c, struct pvdma_map *map,
		      struct pvdma_parked *park)
{
	struct pvdma_entry *e = map->entry;
	struct pvdma_parked *old = NULL;
	LIST_HEAD(doomed);
	bool kept = false;

	kfree(map);
	mutex_lock(&c->lock);
	if (park && e->r.listed && c->set.max_idle_pages) {
		old = e->parked;
		e->parked = park;
		kept = true;
	}
	if (old) {
		old->next = NULL;
		atomic_inc(&c->releasing);
	}
	if (pvdma_range_put(&c->set, &e->r))
		pvdma_doom(e, &doomed);
	pvdma_trim(c, 0, &doomed);
	if (park && !kept) {
		old = park;
		old->next = NULL;
		atomic_inc(&c->releasing);
	}
	mutex_unlock(&c->lock);
	if (old)
		pvdma_release_parked(c, old);
	pvdma_free_list(&doomed);
}

/**
 * pvdma_drop_parked() - release every object parked with a tag
 * @c: the cache
 * @tag: the tag (for Stellar: a PD being destroyed)
 *
 * Returns once every such object is released, also those an entry being
 * freed elsewhere is releasing right now.
 */
void pvdma_drop_parked(struct pvdma_cache *c, const void *tag)
{
	struct pvdma_parked *list = NULL;
	struct pvdma_entry *e;

	mutex_lock(&c->lock);
	list_for_each_entry(e, &c->entries, all) {
		if (e->parked && e->parked->tag == tag) {
			e->parked->next = list;
			list = e->parked;
			e->parked = NULL;
		}
	}
	if (list)
		atomic_inc(&c->releasing);
	mutex_unlock(&c->lock);
	if (list)
		pvdma_release_parked(c, list);
	wait_event(pvdma_waitq, !atomic_read(&c->releasing));
}

/**
 * pvdma_cache_init() - an empty cache for a new device
 * @c: the cache
 * @name: the device's name for log lines (must outlive the cache)
 */
void pvdma_cache_init(struct pvdma_cache *c, const char *name)
{
	int i;

	mutex_init(&c->lock);
	pvdma_range_set_init(&c->set, PVDMA_DEFAULT_CACHE_BYTES >> PAGE_SHIFT);
	c->quota_pages = 0;
	atomic64_set(&c->pinned_pages, 0);
	atomic_set(&c->live, 0);
	INIT_LIST_HEAD(&c->entries);
	atomic_set(&c->releasing, 0);
	for (i = 0; i < PVDMA_NUM_COUNTERS; i++)
		atomic64_set(&c->cnt[i], 0);
	c->name = name;
}

/**
 * pvdma_cache_destroy() - release every cached pin of a device
 * @c: the cache; no registration may use it any more
 *
 * Waits until entries freed from notifier context are gone too.
 */
void pvdma_cache_destroy(struct pvdma_cache *c)
{
	LIST_HEAD(doomed);

	mutex_lock(&c->lock);
	pvdma_trim(c, U64_MAX, &doomed);
	mutex_unlock(&c->lock);
	pvdma_free_list(&doomed);
	wait_event(pvdma_waitq, !atomic_read(&c->live));
	mutex_destroy(&c->lock);
}

/**
 * pvdma_cache_set_limit() - set a device's pin quota or idle bound
 * @c: the cache
 * @quota: true: @bytes is the most the device may pin (0: no quota);
 *	false: @bytes is the most it keeps pinned idle after deregistration
 * @bytes: the new limit
 *
 * Lowering the idle bound releases idle pins at once; lowering the quota
 * below what is pinned refuses new pins until enough is released.
 */
void pvdma_cache_set_limit(struct pvdma_cache *c, bool quota, u64 bytes)
{
	LIST_HEAD(doomed);

	mutex_lock(&c->lock);
	if (quota)
		c->quota_pages = DIV_ROUND_UP(bytes, PAGE_SIZE);
	else
		c->set.max_idle_pages = bytes >> PAGE_SHIFT;
	pvdma_trim(c, 0, &doomed);
	mutex_unlock(&c->lock);
	pvdma_free_list(&doomed);
}

/**
 * pvdma_cache_get_limits() - read a device's pin quota and idle bound
 * @c: the cache
 * @quota_bytes: set to the quota in bytes (0: none)
 * @cache_bytes: set to the idle bound in bytes
 */
void pvdma_cache_get_limits(struct pvdma_cache *c, u64 *quota_bytes,
			    u64 *cache_bytes)
{
	mutex_lock(&c->lock);
	*quota_bytes = c->quota_pages << PAGE_SHIFT;
	*cache_bytes = c->set.max_idle_pages << PAGE_SHIFT;
	mutex_unlock(&c->lock);
}

/**
 * pvdma_cache_idle_pages() - pages a device keeps pinned for reuse only
 * @c: the cache
 *
 * Return: pages of idle cached entries.
 */
u64 pvdma_cache_idle_pages(struct pvdma_cache *c)
{
	u64 n;

	mutex_lock(&c->lock);
	n = c->set.idle_pages;
	mutex_unlock(&c->lock);
	return n;
}

/**
 * pvdma_init() - module-wide setup
 *
 * Return: 0 or -ENOMEM.
 */
int pvdma_init(void)
{
	pvdma_wq = alloc_workqueue("stellar_pvdma", WQ_UNBOUND, 0);
	return pvdma_wq ? 0 : -ENOMEM;
}

/**
 * pvdma_exit() - module-wide teardown, after every device is gone
 */
void pvdma_exit(void)
{
	destroy_workqueue(pvdma_wq);
}
