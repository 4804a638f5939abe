// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: counters (rdma statistic) and sysfs attributes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/math64.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/sysfs.h>

#include "kmod/stl.h"

/* The device's own counters, then the pin cache's, then gauges. */
enum {
	STL_STAT_PIN_BASE = STL_NUM_COUNTERS,
	STL_STAT_PINNED_PAGES = STL_STAT_PIN_BASE + PVDMA_NUM_COUNTERS,
	STL_STAT_CACHED_PAGES,
	STL_STAT_CQES,
	STL_STAT_WQES,
	STL_STAT_EMTT_ENTRIES,
	STL_STAT_EMTT_EXTENTS,
	STL_NUM_STATS
};

static const struct rdma_stat_desc stl_stat_descs[STL_NUM_STATS] = {
	[STL_CNT_MR_REG].name = "mr_registrations",
	[STL_CNT_MR_REG_FAIL].name = "mr_registration_failures",
	[STL_CNT_MR_REUSE].name = "mr_reuses",
	[STL_CNT_SEND_WRS].name = "send_wrs",
	[STL_CNT_RECV_WRS].name = "recv_wrs",
	[STL_CNT_COMPLETIONS].name = "completions",
	[STL_CNT_BAD_WRS].name = "bad_wrs",
	[STL_CNT_CQE_QUOTA_REFUSALS].name = "cqe_quota_refusals",
	[STL_CNT_WQE_QUOTA_REFUSALS].name = "wqe_quota_refusals",
	[STL_CNT_REMOTE_INV_REFUSED].name = "remote_invalidations_refused",
	[STL_CNT_KEYS_RESTORED].name = "keys_restored",
	[STL_CNT_OBJ_QUOTA_REFUSALS].name = "object_quota_refusals",
	[STL_CNT_RATE_WAITS].name = "rate_limit_waits",
	[STL_CNT_KMEM_REFUSALS].name = "kmem_quota_refusals",
	[STL_CNT_PACED_BYTES].name = "paced_bytes",
	[STL_CNT_EMTT_LARGE_PAGE_MRS].name = "emtt_large_page_mrs",
	[STL_CNT_DMABUF_MRS].name = "dmabuf_mrs",
	[STL_CNT_DMABUF_MOVES].name = "dmabuf_moves",
	[STL_CNT_DMABUF_REMAPS].name = "dmabuf_remaps",
	[STL_CNT_DMABUF_REMAP_FAILURES].name = "dmabuf_remap_failures",
	[STL_CNT_DMABUF_INVALIDATE_NS].name = "dmabuf_invalidate_ns",
	[STL_CNT_DMABUF_REMAP_NS].name = "dmabuf_remap_ns",
	[STL_CNT_SPRAY_MSGS_SENT].name = "spray_msgs_sent",
	[STL_CNT_SPRAY_MSGS_RECEIVED].name = "spray_msgs_received",
	[STL_CNT_SPRAY_MSGS_DROPPED].name = "spray_msgs_dropped",
	[STL_CNT_SPRAY_SEND_FAILURES].name = "spray_send_failures",
	[STL_CNT_SPRAY_UP].name = "spray_qps_up",
	[STL_CNT_SPRAY_SINGLE].name = "spray_qps_single",
	[STL_CNT_SPRAY_TIMEOUTS].name = "spray_timeouts",
	[STL_CNT_SPRAY_PATH_FAILURES].name = "spray_path_failures",
	[STL_CNT_SPRAY_PROBES].name = "spray_path_checks",
	[STL_CNT_SPRAY_PROBE_FAILURES].name = "spray_path_check_failures",
	[STL_CNT_SPRAY_REPAIRS].name = "spray_path_repairs",
	[STL_CNT_SPRAY_RECOVERIES].name = "spray_path_recoveries",
	[STL_CNT_SPRAY_WRS].name = "spray_wrs",
	[STL_CNT_SPRAY_CHUNKS].name = "spray_chunks",
	[STL_CNT_SPRAY_CHUNK_BYTES].name = "spray_chunk_bytes",
	[STL_CNT_SPRAY_REPOSTS].name = "spray_chunk_reposts",
	[STL_CNT_SPRAY_WHOLE].name = "spray_wrs_whole",
	[STL_STAT_PIN_BASE + PVDMA_CNT_HITS].name = "pin_cache_hits",
	[STL_STAT_PIN_BASE + PVDMA_CNT_MISSES].name = "pin_cache_misses",
	[STL_STAT_PIN_BASE + PVDMA_CNT_EVICTIONS].name = "pin_cache_evictions",
	[STL_STAT_PIN_BASE + PVDMA_CNT_INVALIDATIONS].name =
		"pin_cache_invalidations",
	[STL_STAT_PIN_BASE + PVDMA_CNT_QUOTA_REFUSALS].name =
		"pin_quota_refusals",
	[STL_STAT_PIN_BASE + PVDMA_CNT_PARKED_REUSES].name =
		"pin_cache_mr_reuses",
	[STL_STAT_PINNED_PAGES].name = "pinned_pages",
	[STL_STAT_CACHED_PAGES].name = "pin_cache_idle_pages",
	[STL_STAT_CQES].name = "cqes_in_use",
	[STL_STAT_WQES].name = "wqes_in_use",
	[STL_STAT_EMTT_ENTRIES].name = "emtt_entries",
	[STL_STAT_EMTT_EXTENTS].name = "emtt_extents",
};

struct rdma_hw_stats *stl_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port)
{
	return rdma_alloc_hw_stats_struct(stl_stat_descs, STL_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int stl_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	int i;

	for (i = 0; i < STL_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&sdev->cnt[i]);
	for (i = 0; i < PVDMA_NUM_COUNTERS; i++)
		stats->value[STL_STAT_PIN_BASE + i] =
			atomic64_read(&sdev->pins.cnt[i]);
	stats->value[STL_STAT_PINNED_PAGES] =
		atomic64_read(&sdev->pins.pinned_pages);
	stats->value[STL_STAT_CACHED_PAGES] =
		pvdma_cache_idle_pages(&sdev->pins);
	stats->value[STL_STAT_CQES] = atomic64_read(&sdev->n_cqe);
	stats->value[STL_STAT_WQES] = atomic64_read(&sdev->n_wqe);
	stats->value[STL_STAT_EMTT_ENTRIES] = atomic64_read(&sdev->emtt_entries);
	stats->value[STL_STAT_EMTT_EXTENTS] = atomic64_read(&sdev->emtt_extents);
	return STL_NUM_STATS;
}

static struct stl_dev *stl_dev_of(struct device *dev)
{
	return rdma_device_to_drv_device(dev, struct stl_dev, ibdev);
}

static ssize_t stellar_abi_version_show(struct device *dev,
					struct device_attribute *attr,
					char *buf)
{
	return sysfs_emit(buf, "%d\n", STELLAR_UVERBS_ABI_VERSION);
}
static DEVICE_ATTR_RO(stellar_abi_version);

static ssize_t parent_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%s\n", dev_name(&stl_dev_of(dev)->pdev->dev));
}
static DEVICE_ATTR_RO(parent);

/* The netdev whose addresses the device uses (stl_add_gid()). */
static ssize_t address_netdev_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  netdev_name(stl_dev_of(dev)->addr_ndev));
}
static DEVICE_ATTR_RO(address_netdev);

/*
 * addresses: the device's address list, one per line (IPv4 ones as such),
 * empty when it may use every address of address_netdev.
 */
static ssize_t addresses_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	int i, len = 0;

	for (i = 0; i < sdev->n_addrs; i++) {
		const struct in6_addr *a = (const void *)sdev->addrs[i].raw;

		if (ipv6_addr_v4mapped(a))
			len += sysfs_emit_at(buf, len, "%pI4\n", &a->s6_addr32[3]);
		else
			len += sysfs_emit_at(buf, len, "%pI6c\n", a);
	}
	return len;
}
static DEVICE_ATTR_RO(addresses);

static ssize_t pinned_pages_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  (s64)atomic64_read(&stl_dev_of(dev)->pins.pinned_pages));
}
static DEVICE_ATTR_RO(pinned_pages);

/*
 * A sysfs write of a number up to @max to the device's setting @name: 0,
 * -EINVAL (no number), or -ERANGE above @max (logged).
 */
static int stl_store_u64(struct stl_dev *sdev, const char *name,
			 const char *buf, u64 max, u64 *val)
{
	int ret = kstrtou64(buf, 0, val);

	if (ret)
		return ret;
	if (*val <= max)
		return 0;
	stl_info(sdev, "%s %llu refused: at most %llu\n", name, *val, max);
	return -ERANGE;
}

/*
 * Pin limits, set by the operator: pin_quota_bytes (0: none) bounds what the
 * device may pin; pin_cache_bytes bounds what it keeps pinned for reuse.
 */
static ssize_t pin_limit_show(struct device *dev, char *buf, bool quota)
{
	u64 q, cache;

	pvdma_cache_get_limits(&stl_dev_of(dev)->pins, &q, &cache);
	return sysfs_emit(buf, "%llu\n", quota ? q : cache);
}

static ssize_t pin_limit_store(struct device *dev, const char *buf,
			       size_t count, bool quota)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u64 val;
	int ret;

	ret = stl_store_u64(sdev, quota ? "pin_quota_bytes" : "pin_cache_bytes",
			    buf, (STL_MAX_MR_PAGES << PAGE_SHIFT) * STL_MAX_MR,
			    &val);
	if (ret)
		return ret;
	pvdma_cache_set_limit(&sdev->pins, quota, val);
	ibdev_info(&sdev->ibdev, "%s set to %llu bytes\n",
		   quota ? "pin quota" : "pin cache bound", val);
	return count;
}

static ssize_t pin_quota_bytes_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	return pin_limit_show(dev, buf, true);
}

static ssize_t pin_quota_bytes_store(struct device *dev,
				     struct device_attribute *attr,
				     const char *buf, size_t count)
{
	return pin_limit_store(dev, buf, count, true);
}
static DEVICE_ATTR_RW(pin_quota_bytes);

static ssize_t pin_cache_bytes_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	return pin_limit_show(dev, buf, false);
}

static ssize_t pin_cache_bytes_store(struct device *dev,
				     struct device_attribute *attr,
				     const char *buf, size_t count)
{
	return pin_limit_store(dev, buf, count, false);
}
static DEVICE_ATTR_RW(pin_cache_bytes);

/**
 * stl_quota() - a device's queue entry quota in force
 * @sdev: the device
 * @cqes: true for the CQE quota, false for the WQE quota
 *
 * Return: the operator's value, or the default when it is 0.
 */
u32 stl_quota(struct stl_dev *sdev, bool cqes)
{
	u32 q = READ_ONCE(*(cqes ? &sdev->cqe_quota : &sdev->wqe_quota));

	return q ?: (cqes ? STL_DEF_CQE_QUOTA : STL_DEF_WQE_QUOTA);
}

/**
 * stl_quota_charge() - reserve queue entries against a device quota
 * @sdev: the device
 * @cqes: true for the CQE quota, false for the WQE quota
 * @n: entries a new CQ or QP asks for
 *
 * The quota bounds the kernel memory (parent queues, rings) that the
 * users of one device make the host allocate.  A parent may round a queue
 * up after the check; stl_quota_uncharge() with a negative count adds the
 * difference, so the total may pass the quota by that rounding.
 *
 * Return: 0, or -ENOMEM (logged, counted) if the quota has no room.
 */
int stl_quota_charge(struct stl_dev *sdev, bool cqes, u64 n)
{
	atomic64_t *used = cqes ? &sdev->n_cqe : &sdev->n_wqe;
	u32 quota = stl_quota(sdev, cqes);

	if (atomic64_add_return(n, used) <= quota)
		return 0;
	atomic64_sub(n, used);
	stl_count(sdev, cqes ? STL_CNT_CQE_QUOTA_REFUSALS :
		  STL_CNT_WQE_QUOTA_REFUSALS, 1);
	stl_info(sdev, "%s quota %u reached: %llu more refused\n",
		 cqes ? "CQE" : "WQE", quota, n);
	return -ENOMEM;
}

/**
 * stl_quota_uncharge() - give queue entries back to a device quota
 * @sdev: the device
 * @cqes: true for the CQE quota, false for the WQE quota
 * @n: entries to give back (negative: charge more, unchecked)
 */
void stl_quota_uncharge(struct stl_dev *sdev, bool cqes, s64 n)
{
	atomic64_sub(n, cqes ? &sdev->n_cqe : &sdev->n_wqe);
}

/*
 * The limits query_device reports follow the quotas (stl_query_device());
 * ib_core answers uverbs' QUERY_DEVICE from the copy it took at
 * registration, so that copy is brought up to date.
 */
static void stl_refresh_limits(struct stl_dev *sdev)
{
	struct ib_device_attr *a = &sdev->ibdev.attrs;
	struct ib_device_attr attr;

	if (stl_query_device(&sdev->ibdev, &attr, NULL))
		return;
	WRITE_ONCE(a->max_qp_wr, attr.max_qp_wr);
	WRITE_ONCE(a->max_srq_wr, attr.max_srq_wr);
	WRITE_ONCE(a->max_cqe, attr.max_cqe);
	WRITE_ONCE(a->max_qp, attr.max_qp);
	WRITE_ONCE(a->max_cq, attr.max_cq);
	WRITE_ONCE(a->max_mr, attr.max_mr);
	WRITE_ONCE(a->max_pd, attr.max_pd);
	WRITE_ONCE(a->max_ah, attr.max_ah);
	WRITE_ONCE(a->max_srq, attr.max_srq);
	WRITE_ONCE(a->max_mw, attr.max_mw);
}

static const struct {
	const char *name;
	u32 max;
} stl_objs[STL_NUM_OBJ] = {
	[STL_OBJ_PD] = { "pd", STL_MAX_PD },
	[STL_OBJ_CQ] = { "cq", STL_MAX_CQ },
	[STL_OBJ_QP] = { "qp", STL_MAX_QP },
	[STL_OBJ_SRQ] = { "srq", STL_MAX_SRQ },
	[STL_OBJ_MR] = { "mr", STL_MAX_MR },
	[STL_OBJ_MW] = { "mw", STL_MAX_MW },
	[STL_OBJ_AH] = { "ah", STL_MAX_AH },
};

/**
 * stl_obj_limit() - how many objects of a kind a device may have
 * @sdev: the device
 * @o: the kind
 *
 * Return: the operator's quota, or the module's maximum when none is set.
 */
u32 stl_obj_limit(struct stl_dev *sdev, enum stl_obj o)
{
	u32 q = READ_ONCE(sdev->obj_quota[o]);

	return q ? min(q, stl_objs[o].max) : stl_objs[o].max;
}

/**
 * stl_obj_charge() - count a new object against the device's quota
 * @sdev: the device
 * @o: the kind of the new object
 *
 * Undo with stl_obj_uncharge() when the object goes (or is not made).
 *
 * Return: 0, or -ENOMEM (what rxe answers at its own limits; logged,
 * counted in object_quota_refusals) when the quota is reached.
 */
int stl_obj_charge(struct stl_dev *sdev, enum stl_obj o)
{
	u32 limit = stl_obj_limit(sdev, o);

	if (atomic_inc_return(&sdev->n_obj[o]) <= limit)
		return 0;
	atomic_dec(&sdev->n_obj[o]);
	stl_count(sdev, STL_CNT_OBJ_QUOTA_REFUSALS, 1);
	stl_info(sdev, "%s quota %u reached: refused\n", stl_objs[o].name,
		 limit);
	return -ENOMEM;
}

/**
 * stl_kmem_charge() - count the module memory a new object needs
 * @sdev: the device
 * @bytes: what the object makes Stellar allocate: the object itself and,
 *	per queue entry, its shadow state and ring slot (the estimates of
 *	stl_ring_*_kmem() and the callers); the memory itself is charged to
 *	the caller's memory cgroup as it is allocated (GFP_KERNEL_ACCOUNT)
 *
 * The object keeps what was charged and gives it back with
 * stl_kmem_uncharge() when it goes (or is not made).
 *
 * Return: 0, or -ENOMEM (logged, counted in kmem_quota_refusals) when the
 * device would pass its kmem_quota.
 */
int stl_kmem_charge(struct stl_dev *sdev, u64 bytes)
{
	u64 quota = READ_ONCE(sdev->kmem_quota);
	s64 now = atomic64_add_return(bytes, &sdev->kmem);

	if (!quota || now <= quota)
		return 0;
	atomic64_sub(bytes, &sdev->kmem);
	stl_count(sdev, STL_CNT_KMEM_REFUSALS, 1);
	stl_info(sdev, "kernel memory quota %llu reached: %llu more bytes refused\n",
		 quota, bytes);
	return -ENOMEM;
}

/*
 * kmem_quota: most bytes of module memory the device's objects may hold
 * (what quota_usage's kmem line counts); 0 (the default) means no limit.
 * Lowering it below what is in use refuses new objects until enough are
 * destroyed.
 */
static ssize_t kmem_quota_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(stl_dev_of(dev)->kmem_quota));
}

static ssize_t kmem_quota_store(struct device *dev,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u64 val;
	int ret;

	ret = stl_store_u64(sdev, "kmem_quota", buf, U64_MAX, &val);
	if (ret)
		return ret;
	WRITE_ONCE(sdev->kmem_quota, val);
	ibdev_info(&sdev->ibdev, "kernel memory quota set to %llu bytes\n", val);
	return count;
}
static DEVICE_ATTR_RW(kmem_quota);

/*
 * Object quotas, set by the operator: pd_quota, cq_quota, ... bound how many
 * of each the device's users may hold.  Writing 0 restores the module's
 * maximum; a value above it is refused (EINVAL).  Lowering a quota below
 * what is in use refuses new objects until enough are destroyed.
 */
static ssize_t stl_obj_quota_show(struct device *dev, char *buf,
				  enum stl_obj o)
{
	return sysfs_emit(buf, "%u\n", stl_obj_limit(stl_dev_of(dev), o));
}

static ssize_t stl_obj_quota_store(struct device *dev, const char *buf,
				   size_t count, enum stl_obj o)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u32 val;
	int ret;

	ret = kstrtou32(buf, 0, &val);
	if (ret)
		return ret;
	if (val > stl_objs[o].max) {
		stl_info(sdev, "%s quota %u refused: at most %u\n",
			 stl_objs[o].name, val, stl_objs[o].max);
		return -EINVAL;
	}
	WRITE_ONCE(sdev->obj_quota[o], val);
	stl_refresh_limits(sdev);
	ibdev_info(&sdev->ibdev, "%s quota set to %u\n", stl_objs[o].name,
		   stl_obj_limit(sdev, o));
	return count;
}

#define STL_OBJ_QUOTA_ATTR(kind, obj)					\
static ssize_t kind##_quota_show(struct device *dev,			\
				 struct device_attribute *attr, char *buf) \
{									\
	return stl_obj_quota_show(dev, buf, obj);			\
}									\
static ssize_t kind##_quota_store(struct device *dev,			\
				  struct device_attribute *attr,	\
				  const char *buf, size_t count)	\
{									\
	return stl_obj_quota_store(dev, buf, count, obj);		\
}									\
static DEVICE_ATTR_RW(kind##_quota)

STL_OBJ_QUOTA_ATTR(pd, STL_OBJ_PD);
STL_OBJ_QUOTA_ATTR(cq, STL_OBJ_CQ);
STL_OBJ_QUOTA_ATTR(qp, STL_OBJ_QP);
STL_OBJ_QUOTA_ATTR(srq, STL_OBJ_SRQ);
STL_OBJ_QUOTA_ATTR(mr, STL_OBJ_MR);
STL_OBJ_QUOTA_ATTR(mw, STL_OBJ_MW);
STL_OBJ_QUOTA_ATTR(ah, STL_OBJ_AH);

/**
 * stl_share_init() - a parent's bandwidth share, empty and off
 * @sh: the share
 */
void stl_share_init(struct stl_share *sh)
{
	spin_lock_init(&sh->lock);
	INIT_LIST_HEAD(&sh->devs);
	sh->yield_pct = STL_SHARE_YIELD_DEFAULT;
}

/**
 * stl_share_join() - count a new device in its parent's share
 * @sdev: the device, not yet registered
 * @sh: its parent's share
 */
void stl_share_join(struct stl_dev *sdev, struct stl_share *sh)
{
	unsigned long flags;

	sdev->weight = STL_WEIGHT_DEFAULT;
	sdev->share = sh;
	spin_lock_irqsave(&sh->lock, flags);
	list_add_tail(&sdev->share_entry, &sh->devs);
	spin_unlock_irqrestore(&sh->lock, flags);
}

/**
 * stl_share_leave() - the device is gone from its parent's share
 * @sdev: the device, unregistered (no post can be running)
 */
void stl_share_leave(struct stl_dev *sdev)
{
	struct stl_share *sh = sdev->share;
	unsigned long flags;

	if (!sh)
		return;
	spin_lock_irqsave(&sh->lock, flags);
	list_del_init(&sdev->share_entry);
	/* Its weight leaves the sum at the next computation. */
	sh->calc_ns = 0;
	spin_unlock_irqrestore(&sh->lock, flags);
}

/* Sum the weights of the bulk devices active at @now.  sh->lock held. */
static void stl_share_sum(struct stl_share *sh, u64 now)
{
	struct stl_dev *d;
	u64 sum = 0;

	lockdep_assert_held(&sh->lock);
	list_for_each_entry(d, &sh->devs, share_entry)
		if (!READ_ONCE(d->latency) &&
		    (s64)(now - READ_ONCE(d->active_ns)) < STL_SHARE_ACTIVE_NS)
			sum += READ_ONCE(d->weight);
	WRITE_ONCE(sh->active_weight, sum);
	WRITE_ONCE(sh->calc_ns, now);
}

/**
 * stl_share_bps() - the device's part of its parent's bandwidth share
 * @sdev: the device
 * @now: ktime_get_ns()
 *
 * The parent's share_total_bytes divided among its bulk-class devices
 * that posted within the last STL_SHARE_ACTIVE_NS, by weight: a device
 * alone gets all of it, two of weights 300 and 100 get 3/4 and 1/4.
 * Latency-class devices are not paced by it (nor counted): the total is
 * what bulk traffic may use, the rest of the parent's line rate stays free
 * for them.  While one of them is active (it posted within the last
 * STL_SHARE_ACTIVE_NS) the bulk devices divide less: the total less the
 * share's yield_pct of it.  Their load on the parent (its queues, and with
 * a software parent its CPUs) then leaves room for the latency traffic,
 * which goes ahead of their work that waits here.
 *
 * Return: bytes per second, 0 if the device is not paced by a share.
 */
u64 stl_share_bps(struct stl_dev *sdev, u64 now)
{
	struct stl_share *sh = sdev->share;
	u64 total = READ_ONCE(sh->total_bps), w = READ_ONCE(sdev->weight);
	unsigned long flags;

	if (!total || READ_ONCE(sdev->latency))
		return 0;
	if ((s64)(now - READ_ONCE(sh->latency_ns)) < STL_SHARE_ACTIVE_NS)
		/* total <= STL_SHARE_MAX_BPS: no overflow */
		total -= div_u64(total * READ_ONCE(sh->yield_pct), 100);
	if ((s64)(now - READ_ONCE(sh->calc_ns)) > STL_SHARE_PERIOD_NS) {
		spin_lock_irqsave(&sh->lock, flags);
		if ((s64)(now - sh->calc_ns) > STL_SHARE_PERIOD_NS)
			stl_share_sum(sh, now);
		spin_unlock_irqrestore(&sh->lock, flags);
	}
	/* total <= STL_SHARE_MAX_BPS and w <= 1000: no overflow. */
	return max_t(u64, div64_u64(total * w,
				    max(READ_ONCE(sh->active_weight), w)), 1);
}

/*
 * Burst of a rate cap: 100 ms of it, at least 64 KiB.  Large enough that a
 * waiter woken late (a loaded host, a coarse timer) does not lose rate: what
 * it missed is still in the bucket, up to 100 ms of it.
 */
static s64 stl_rate_burst(u64 bps)
{
	return max_t(s64, div_u64(bps, 10), SZ_64K);
}

/**
 * stl_rate_take() - may @bytes go to the parent now, under the rate cap
 *	and the bandwidth share?
 * @sdev: the device
 * @bytes: what the request moves (RDMA READ: what it brings back)
 *
 * A token bucket refilled at the device's rate: its rate cap, or its part
 * of the parent's share (stl_share_bps()), whichever is lower; a burst of
 * 100 ms.  While any token is left one request goes, whatever its size (so
 * a message larger than the burst is not held forever); the bucket then
 * runs into debt and the next request waits until it is paid.  Requests
 * that wait are counted in rate_limit_waits, the bytes that go in
 * paced_bytes.
 *
 * Return: true if the request may go (its bytes are taken), false if the
 * caller must wait (stl_rate_wait_us()) and ask again.
 */
bool stl_rate_take(struct stl_dev *sdev, u64 bytes)
{
	u64 bps = READ_ONCE(sdev->rate_bps), now = ktime_get_ns(), share;
	unsigned long flags;
	bool ok;

	if (stl_shared(sdev)) {
		WRITE_ONCE(sdev->active_ns, now);
		share = stl_share_bps(sdev, now);
		if (share && (!bps || share < bps))
			bps = share;
	}
	if (!bps)
		return true;
	spin_lock_irqsave(&sdev->rate_lock, flags);
	if (now > sdev->rate_ns) {
		u64 add = mul_u64_u64_div_u64(now - sdev->rate_ns, bps,
					      NSEC_PER_SEC);

		sdev->rate_tokens = min_t(s64, sdev->rate_tokens +
					  min_t(u64, add, S64_MAX / 2),
					  stl_rate_burst(bps));
		sdev->rate_ns = now;
	}
	WRITE_ONCE(sdev->rate_eff, bps);
	ok = sdev->rate_tokens > 0;
	if (ok)
		sdev->rate_tokens -= min_t(u64, bytes, S64_MAX / 2);
	else if (stl_shared(sdev))
		/*
		 * A device waiting for its share still wants it: it stays
		 * active until the moment it may go again, however long
		 * that is (a small share and large messages), so that the
		 * others are not handed its part meanwhile.
		 */
		WRITE_ONCE(sdev->active_ns, now +
			   min_t(u64, mul_u64_u64_div_u64(1 - sdev->rate_tokens,
								NSEC_PER_SEC, bps),
				 NSEC_PER_SEC));
	spin_unlock_irqrestore(&sdev->rate_lock, flags);
	if (ok)
		stl_count(sdev, STL_CNT_PACED_BYTES, bytes);
	else
		stl_count(sdev, STL_CNT_RATE_WAITS, 1);
	return ok;
}

/**
 * stl_rate_debit() - charge a request that goes without waiting for tokens
 * @sdev: the device
 * @bytes: what the request moves
 *
 * For a caller that may not wait longer (stl_post_send() waits at most
 * STL_RATE_MAX_WAIT_US per call): the request goes, the bucket runs into
 * debt, and the requests after it wait for it.  So the cap and the share
 * hold over time, however the waits fall.
 */
static void stl_rate_debit(struct stl_dev *sdev, u64 bytes)
{
	unsigned long flags;

	spin_lock_irqsave(&sdev->rate_lock, flags);
	sdev->rate_tokens = max_t(s64, sdev->rate_tokens -
				  (s64)min_t(u64, bytes, S64_MAX / 4),
				  -S64_MAX / 2);
	spin_unlock_irqrestore(&sdev->rate_lock, flags);
	stl_count(sdev, STL_CNT_PACED_BYTES, bytes);
}

/**
 * stl_rate_wait_us() - how long until the rate cap lets a request go
 * @sdev: the device
 *
 * Return: microseconds, at least 1 and at most one second.
 */
static u64 stl_rate_wait_us(struct stl_dev *sdev)
{
	u64 bps = READ_ONCE(sdev->rate_eff);
	s64 debt = -READ_ONCE(sdev->rate_tokens) + 1;

	if (!bps || debt <= 0)
		return 1;
	return clamp_t(u64, mul_u64_u64_div_u64(debt, USEC_PER_SEC, bps), 1,
		       USEC_PER_SEC);
}

/**
 * stl_rate_wait_send() - wait until the rate cap lets @wr go to the parent
 * @sdev: the device
 * @wr: the request as it goes to the parent
 * @waited: microseconds this system call has waited so far (in and out)
 *
 * For stl_post_send(): the caller sleeps, in STL_RATE_WAIT_STEP_US steps,
 * at most STL_RATE_MAX_WAIT_US per call in all, so that a device removal
 * (which waits for calls in progress) is never held long.  Past that the
 * request goes in debt (stl_rate_debit()) and the calls after it wait it
 * off: the cap holds except for requests each larger than a second of it,
 * which go one a second per posting thread.
 *
 * Return: 0 when @wr may go (its bytes are charged), -EINTR on a fatal
 * signal (nothing charged).
 */
int stl_rate_wait_send(struct stl_dev *sdev, const struct ib_send_wr *wr,
		       u64 *waited)
{
	u64 us;

	while (!stl_rate_ok(sdev, wr)) {
		if (fatal_signal_pending(current))
			return -EINTR;
		if (*waited >= STL_RATE_MAX_WAIT_US) {
			stl_rate_debit(sdev, stl_wr_bytes(wr));
			return 0;
		}
		us = min3(stl_rate_wait_us(sdev), STL_RATE_MAX_WAIT_US - *waited,
			  STL_RATE_WAIT_STEP_US);
		fsleep(us);
		*waited += us;
	}
	return 0;
}

/*
 * weight: the device's weight in its parent's bandwidth share (1..1000,
 * default 100).  traffic_class: "bulk" (the default: paced by the share)
 * or "latency" (never paced by it, not counted in it).  share_total_bytes:
 * the parent's share, bytes per second its bulk devices divide by weight
 * (0: none, the default); writing it on any device sets it for all the
 * devices of that parent.  share_bytes (read-only): the device's part now
 * (0: not paced by a share).
 */
static ssize_t weight_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(stl_dev_of(dev)->weight));
}

static ssize_t weight_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u32 val;
	int ret;

	ret = kstrtou32(buf, 0, &val);
	if (ret)
		return ret;
	if (!val || val > STL_WEIGHT_MAX) {
		stl_info(sdev, "weight %u refused: 1 to %u\n", val,
			 STL_WEIGHT_MAX);
		return -EINVAL;
	}
	WRITE_ONCE(sdev->weight, val);
	WRITE_ONCE(sdev->share->calc_ns, 0);
	ibdev_info(&sdev->ibdev, "weight set to %u\n", val);
	return count;
}
static DEVICE_ATTR_RW(weight);

/*
 * spray_paths: network paths of each RC QP the device makes from now on,
 * 1 (no spraying) to SPRAY_MAX_PATHS; the module parameter spray_paths
 * is the default of new devices.  Ring devices have 1 and keep it.
 */
static ssize_t spray_paths_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(stl_dev_of(dev)->spray_paths));
}

static ssize_t spray_paths_store(struct device *dev,
				 struct device_attribute *attr,
				 const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u8 val;
	int ret;

	ret = kstrtou8(buf, 0, &val);
	if (ret)
		return ret;
	if (!val || val > STL_SPRAY_MAX_PATHS) {
		stl_info(sdev, "spray_paths %u refused: 1 to %u\n", val,
			 STL_SPRAY_MAX_PATHS);
		return -EINVAL;
	}
	WRITE_ONCE(sdev->spray_paths, val);
	ibdev_info(&sdev->ibdev, "spray_paths set to %u (new QPs)\n", val);
	return count;
}
static DEVICE_ATTR_RW(spray_paths);

static ssize_t traffic_class_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  READ_ONCE(stl_dev_of(dev)->latency) ? "latency" : "bulk");
}

static ssize_t traffic_class_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	bool latency;

	if (sysfs_streq(buf, "latency"))
		latency = true;
	else if (sysfs_streq(buf, "bulk"))
		latency = false;
	else
		return -EINVAL;
	WRITE_ONCE(sdev->latency, latency);
	WRITE_ONCE(sdev->share->calc_ns, 0);
	ibdev_info(&sdev->ibdev, "traffic class set to %s\n",
		   latency ? "latency" : "bulk");
	return count;
}
static DEVICE_ATTR_RW(traffic_class);

static ssize_t share_total_bytes_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(stl_dev_of(dev)->share->total_bps));
}

static ssize_t share_total_bytes_store(struct device *dev,
				       struct device_attribute *attr,
				       const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u64 val;
	int ret;

	ret = stl_store_u64(sdev, "share_total_bytes", buf,
			    STL_SHARE_MAX_BPS, &val);
	if (ret)
		return ret;
	WRITE_ONCE(sdev->share->total_bps, val);
	ibdev_info(&sdev->ibdev, "bandwidth share of parent %s set to %llu bytes/s\n",
		   dev_name(&sdev->pdev->dev), val);
	return count;
}
static DEVICE_ATTR_RW(share_total_bytes);

/*
 * share_yield_percent: the part of share_total_bytes (0 to
 * STL_SHARE_YIELD_MAX percent) the parent's bulk devices give up while one
 * of its latency-class devices is active; a setting of the parent, as the
 * total is.
 */
static ssize_t share_yield_percent_show(struct device *dev,
					struct device_attribute *attr,
					char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(stl_dev_of(dev)->share->yield_pct));
}

static ssize_t share_yield_percent_store(struct device *dev,
					 struct device_attribute *attr,
					 const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u64 val;
	int ret;

	ret = stl_store_u64(sdev, "share_yield_percent", buf,
			    STL_SHARE_YIELD_MAX, &val);
	if (ret)
		return ret;
	WRITE_ONCE(sdev->share->yield_pct, val);
	ibdev_info(&sdev->ibdev, "bandwidth share of parent %s yields %llu%% to latency traffic\n",
		   dev_name(&sdev->pdev->dev), val);
	return count;
}
static DEVICE_ATTR_RW(share_yield_percent);

static ssize_t share_bytes_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  stl_share_bps(stl_dev_of(dev), ktime_get_ns()));
}
static DEVICE_ATTR_RO(share_bytes);

/*
 * rate_limit_bytes: most bytes per second the device's users may post to
 * the parent (sends, RDMA writes, and what RDMA reads bring back); 0 is no
 * cap.  Work over the cap waits, in order; nothing is refused or dropped.
 */
static ssize_t rate_limit_bytes_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(stl_dev_of(dev)->rate_bps));
}

static ssize_t rate_limit_bytes_store(struct device *dev,
				      struct device_attribute *attr,
				      const char *buf, size_t count)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	unsigned long flags;
	u64 val;
	int ret;

	ret = stl_store_u64(sdev, "rate_limit_bytes", buf, (u64)S64_MAX / 2,
			    &val);
	if (ret)
		return ret;
	spin_lock_irqsave(&sdev->rate_lock, flags);
	WRITE_ONCE(sdev->rate_bps, val);
	sdev->rate_tokens = val ? stl_rate_burst(val) : 0;
	sdev->rate_ns = ktime_get_ns();
	spin_unlock_irqrestore(&sdev->rate_lock, flags);
	ibdev_info(&sdev->ibdev, "rate cap set to %llu bytes/s\n", val);
	return count;
}
static DEVICE_ATTR_RW(rate_limit_bytes);

/*
 * quota_usage: one line per quota, "NAME USED LIMIT": the objects, the queue
 * entries, the module memory (kmem, bytes) and the pinned bytes, for the
 * operator's tools.  A LIMIT of 0 on the kmem and pinned_bytes lines means
 * none.
 */
static ssize_t quota_usage_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u64 pin_quota, pin_cache;
	int o, len = 0;

	pvdma_cache_get_limits(&sdev->pins, &pin_quota, &pin_cache);
	for (o = 0; o < STL_NUM_OBJ; o++)
		len += sysfs_emit_at(buf, len, "%s %d %u\n", stl_objs[o].name,
				     atomic_read(&sdev->n_obj[o]),
				     stl_obj_limit(sdev, o));
	len += sysfs_emit_at(buf, len, "cqe %lld %u\n",
			     (s64)atomic64_read(&sdev->n_cqe),
			     stl_quota(sdev, true));
	len += sysfs_emit_at(buf, len, "wqe %lld %u\n",
			     (s64)atomic64_read(&sdev->n_wqe),
			     stl_quota(sdev, false));
	len += sysfs_emit_at(buf, len, "kmem %lld %llu\n",
			     (s64)atomic64_read(&sdev->kmem),
			     READ_ONCE(sdev->kmem_quota));
	len += sysfs_emit_at(buf, len, "pinned_bytes %llu %llu\n",
			     (u64)atomic64_read(&sdev->pins.pinned_pages) << PAGE_SHIFT,
			     pin_quota);
	return len;
}
static DEVICE_ATTR_RO(quota_usage);

/*
 * Queue entry quotas, set by the operator: cqe_quota bounds the CQ entries
 * of all CQs of the device, wqe_quota the send plus receive queue entries
 * of all its QPs.  Writing 0 restores the default.  Lowering a quota below
 * what is in use refuses new objects until enough are destroyed.
 */
static ssize_t stl_quota_show(struct device *dev, char *buf, bool cqes)
{
	return sysfs_emit(buf, "%u\n", stl_quota(stl_dev_of(dev), cqes));
}

static ssize_t stl_quota_store(struct device *dev, const char *buf,
			       size_t count, bool cqes)
{
	struct stl_dev *sdev = stl_dev_of(dev);
	u32 val;
	int ret;

	ret = kstrtou32(buf, 0, &val);
	if (ret)
		return ret;
	WRITE_ONCE(*(cqes ? &sdev->cqe_quota : &sdev->wqe_quota), val);
	stl_refresh_limits(sdev);
	ibdev_info(&sdev->ibdev, "%s quota set to %u entries\n",
		   cqes ? "CQE" : "WQE", stl_quota(sdev, cqes));
	return count;
}

static ssize_t cqe_quota_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return stl_quota_show(dev, buf, true);
}

static ssize_t cqe_quota_store(struct device *dev,
			       struct device_attribute *attr,
			       const char *buf, size_t count)
{
	return stl_quota_store(dev, buf, count, true);
}
static DEVICE_ATTR_RW(cqe_quota);

static ssize_t wqe_quota_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return stl_quota_show(dev, buf, false);
}

static ssize_t wqe_quota_store(struct device *dev,
			       struct device_attribute *attr,
			       const char *buf, size_t count)
{
	return stl_quota_store(dev, buf, count, false);
}
static DEVICE_ATTR_RW(wqe_quota);

static struct attribute *stl_attrs[] = {
	&dev_attr_stellar_abi_version.attr,
	&dev_attr_parent.attr,
	&dev_attr_address_netdev.attr,
	&dev_attr_addresses.attr,
	&dev_attr_pinned_pages.attr,
	&dev_attr_pin_quota_bytes.attr,
	&dev_attr_pin_cache_bytes.attr,
	&dev_attr_cqe_quota.attr,
	&dev_attr_wqe_quota.attr,
	&dev_attr_pd_quota.attr,
	&dev_attr_cq_quota.attr,
	&dev_attr_qp_quota.attr,
	&dev_attr_srq_quota.attr,
	&dev_attr_mr_quota.attr,
	&dev_attr_mw_quota.attr,
	&dev_attr_ah_quota.attr,
	&dev_attr_quota_usage.attr,
	&dev_attr_rate_limit_bytes.attr,
	&dev_attr_kmem_quota.attr,
	&dev_attr_weight.attr,
	&dev_attr_spray_paths.attr,
	&dev_attr_traffic_class.attr,
	&dev_attr_share_total_bytes.attr,
	&dev_attr_share_yield_percent.attr,
	&dev_attr_share_bytes.attr,
	NULL,
};

const struct attribute_group stl_attr_group = {
	.attrs = stl_attrs,
};
