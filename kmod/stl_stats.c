// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: counters (rdma statistic) and sysfs attributes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sysfs.h>

#include "kmod/stl.h"

/* The device's own counters, then the pin cache's, then gauges. */
enum {
	STL_STAT_PIN_BASE = STL_NUM_COUNTERS,
	STL_STAT_PINNED_PAGES = STL_STAT_PIN_BASE + PVDMA_NUM_COUNTERS,
	STL_STAT_CACHED_PAGES,
	STL_STAT_CQES,
	STL_STAT_WQES,
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

static ssize_t pinned_pages_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  (s64)atomic64_read(&stl_dev_of(dev)->pins.pinned_pages));
}
static DEVICE_ATTR_RO(pinned_pages);

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

	ret = kstrtou64(buf, 0, &val);
	if (ret)
		return ret;
	if (val > (STL_MAX_MR_PAGES << PAGE_SHIFT) * STL_MAX_MR)
		return -ERANGE;
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
 * The quota bounds the kernel memory (parent queues, drain rings) that the
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
	struct ib_device_attr attr;
	u32 val;
	int ret;

	ret = kstrtou32(buf, 0, &val);
	if (ret)
		return ret;
	WRITE_ONCE(*(cqes ? &sdev->cqe_quota : &sdev->wqe_quota), val);
	/*
	 * The queue limits follow the quota (stl_query_device()); ib_core
	 * answers uverbs' QUERY_DEVICE from the copy it took at registration.
	 */
	if (!stl_query_device(&sdev->ibdev, &attr, NULL)) {
		WRITE_ONCE(sdev->ibdev.attrs.max_qp_wr, attr.max_qp_wr);
		WRITE_ONCE(sdev->ibdev.attrs.max_srq_wr, attr.max_srq_wr);
		WRITE_ONCE(sdev->ibdev.attrs.max_cqe, attr.max_cqe);
	}
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
	&dev_attr_pinned_pages.attr,
	&dev_attr_pin_quota_bytes.attr,
	&dev_attr_pin_cache_bytes.attr,
	&dev_attr_cqe_quota.attr,
	&dev_attr_wqe_quota.attr,
	NULL,
};

const struct attribute_group stl_attr_group = {
	.attrs = stl_attrs,
};
