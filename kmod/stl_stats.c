// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: counters (rdma statistic) and sysfs attributes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sysfs.h>

#include "kmod/stl.h"

static const struct rdma_stat_desc stl_counter_descs[STL_NUM_COUNTERS] = {
	[STL_CNT_PINNED_PAGES].name = "pinned_pages",
	[STL_CNT_MR_REG].name = "mr_registrations",
	[STL_CNT_MR_REG_FAIL].name = "mr_registration_failures",
	[STL_CNT_SEND_WRS].name = "send_wrs",
	[STL_CNT_RECV_WRS].name = "recv_wrs",
	[STL_CNT_COMPLETIONS].name = "completions",
	[STL_CNT_BAD_WRS].name = "bad_wrs",
};

struct rdma_hw_stats *stl_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port)
{
	return rdma_alloc_hw_stats_struct(stl_counter_descs, STL_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int stl_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	int i;

	for (i = 0; i < STL_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&sdev->cnt[i]);
	stats->value[STL_CNT_PINNED_PAGES] =
		atomic64_read(&sdev->acct.pinned_pages);
	return STL_NUM_COUNTERS;
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
			  (s64)atomic64_read(&stl_dev_of(dev)->acct.pinned_pages));
}
static DEVICE_ATTR_RO(pinned_pages);

static struct attribute *stl_attrs[] = {
	&dev_attr_stellar_abi_version.attr,
	&dev_attr_parent.attr,
	&dev_attr_pinned_pages.attr,
	NULL,
};

const struct attribute_group stl_attr_group = {
	.attrs = stl_attrs,
};
