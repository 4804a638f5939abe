// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: module, parents and device life cycle.
 *
 * Stellar is an ib_client of every RDMA device: each one is a potential
 * parent.  `rdma link add NAME type stellar netdev X` creates a device over
 * the parent bound to X.  When a parent goes away, the client's remove
 * callback unregisters its children before the parent is freed, so no
 * Stellar device ever holds a reference that blocks the parent.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_verbs.h>

#include "kmod/stl.h"

/**
 * struct stl_parent - a device Stellar may build on
 * @ibdev: the parent
 * @entry: entry in stl_parents
 * @children: Stellar devices on this parent
 * @dead: the parent is going away; no child may be added
 * @nr_children: children not yet freed (also those off @children already)
 */
struct stl_parent {
	struct ib_device *ibdev;
	struct list_head entry;
	struct list_head children;
	bool dead;
	atomic_t nr_children;
};

/* Guards stl_parents, every parent's children list and dead flag. */
static DEFINE_MUTEX(stl_devs_lock);
static LIST_HEAD(stl_parents);
/* Woken whenever a child is freed (stl_parent.nr_children dropped). */
static DECLARE_WAIT_QUEUE_HEAD(stl_child_wq);
static struct dentry *stl_debugfs;

static bool stl_is_ours(struct ib_device *ibdev)
{
	return ibdev->ops.get_port_immutable == stl_get_port_immutable;
}

static struct stl_parent *stl_parent_find(struct ib_device *ibdev)
{
	struct stl_parent *p;

	lockdep_assert_held(&stl_devs_lock);
	list_for_each_entry(p, &stl_parents, entry)
		if (p->ibdev == ibdev)
			return p;
	return NULL;
}

static void stl_port_event(struct ib_event_handler *h, struct ib_event *ev)
{
	struct stl_dev *sdev = container_of(h, struct stl_dev, event_handler);
	struct ib_event out = *ev;

	switch (ev->event) {
	case IB_EVENT_PORT_ACTIVE:
	case IB_EVENT_PORT_ERR:
	case IB_EVENT_LID_CHANGE:
	case IB_EVENT_GID_CHANGE:
	case IB_EVENT_PKEY_CHANGE:
		if (ev->element.port_num != sdev->pport)
			return;
		out.element.port_num = 1;
		break;
	case IB_EVENT_DEVICE_FATAL:
		break;
	default:
		return;
	}
	out.device = &sdev->ibdev;
	ib_dispatch_event(&out);
}

/*
 * Last step of unregistration (ib_core frees the ib_device after it):
 * unhook from the parent and let its removal go on.
 */
static void stl_dealloc_driver(struct ib_device *ibdev)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	struct stl_parent *p = sdev->parent;

	WARN_ON(!xa_empty(&sdev->mrs));
	xa_destroy(&sdev->mrs);
	pvdma_cache_destroy(&sdev->pins);
	/* Not registered: stl_newlink() unwinds the rest itself. */
	if (!p)
		return;
	ib_unregister_event_handler(&sdev->event_handler);
	dev_put(sdev->ndev);

	mutex_lock(&stl_devs_lock);
	list_del_init(&sdev->parent_entry);
	mutex_unlock(&stl_devs_lock);

	if (atomic64_read(&sdev->pins.pinned_pages))
		ibdev_err(ibdev, "%lld pages still pinned at removal\n",
			  (s64)atomic64_read(&sdev->pins.pinned_pages));
	ibdev_info(ibdev, "removed from %s\n", dev_name(&sdev->pdev->dev));
	/* p may be freed as soon as the count drops: touch it last. */
	atomic_dec(&p->nr_children);
	wake_up(&stl_child_wq);
}

/* Node GUID: the parent's, with the local bit and the child index mixed in. */
static __be64 stl_make_guid(struct ib_device *pdev, u32 index)
{
	u64 guid = be64_to_cpu(pdev->node_guid);

	guid ^= (u64)(0x02 | ((index & 0x3f) << 2)) << 56;
	guid ^= (u64)(index >> 6) << 40;
	return cpu_to_be64(guid);
}

static int stl_dev_init(struct stl_dev *sdev, struct stl_parent *p,
			struct net_device *ndev)
{
	struct ib_device *ibdev = &sdev->ibdev;
	static atomic_t stl_instances = ATOMIC_INIT(0);
	int ret;

	sdev->pdev = p->ibdev;
	sdev->pport = 1;
	sdev->ndev = ndev;
	INIT_LIST_HEAD(&sdev->parent_entry);

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->node_guid = stl_make_guid(p->ibdev,
					 atomic_inc_return(&stl_instances));
	strscpy(ibdev->node_desc, "Stellar virtual RDMA device",
		sizeof(ibdev->node_desc));
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	ib_set_device_ops(ibdev, &stl_dev_ops);

	ret = ib_device_set_netdev(ibdev, ndev, 1);
	if (ret)
		return ret;

	INIT_IB_EVENT_HANDLER(&sdev->event_handler, p->ibdev, stl_port_event);
	return 0;
}

/*
 * rdma link add NAME type stellar netdev NDEV.  The parent is the RDMA device
 * of any in-tree driver bound to NDEV; Stellar devices themselves (driver id
 * UNKNOWN) are never parents.
 */
static struct ib_device *stl_parent_get_by_netdev(struct net_device *ndev)
{
	struct ib_device *pdev;
	int id;

	for (id = RDMA_DRIVER_UNKNOWN + 1; id <= RDMA_DRIVER_ERDMA; id++) {
		pdev = ib_device_get_by_netdev(ndev, id);
		if (pdev && !stl_is_ours(pdev))
			return pdev;
		if (pdev)
			ib_device_put(pdev);
	}
	return NULL;
}

static int stl_newlink(const char *name, struct net_device *ndev)
{
	struct stl_parent *p;
	struct ib_device *pdev;
	struct stl_dev *sdev;
	int ret;

	/* ib_core would say ENFILE for a taken name: say what it is. */
	if (!strchr(name, '%')) {
		struct ib_device *other = ib_device_get_by_name(name,
							       RDMA_DRIVER_UNKNOWN);

		if (other) {
			ib_device_put(other);
			pr_err("%s: an RDMA device of that name exists\n", name);
			return -EEXIST;
		}
	}

	pdev = stl_parent_get_by_netdev(ndev);
	if (!pdev) {
		pr_err("%s: netdev %s has no RDMA device to build on\n",
		       name, netdev_name(ndev));
		return -ENODEV;
	}
	if (rdma_port_get_link_layer(pdev, 1) != IB_LINK_LAYER_ETHERNET) {
		pr_err("%s: parent %s is not RoCE\n", name,
		       dev_name(&pdev->dev));
		ret = -EOPNOTSUPP;
		goto err_put_parent;
	}

	sdev = ib_alloc_device(stl_dev, ibdev);
	if (!sdev) {
		ret = -ENOMEM;
		goto err_put_parent;
	}
	/* What stl_dealloc_driver() releases on every path. */
	xa_init(&sdev->mrs);
	mutex_init(&sdev->qp_lifecycle);
	pvdma_cache_init(&sdev->pins, sdev->ibdev.name);

	mutex_lock(&stl_devs_lock);
	p = stl_parent_find(pdev);
	if (!p || p->dead) {
		ret = -ENODEV;
		goto err_unlock;
	}
	dev_hold(ndev);
	ret = stl_dev_init(sdev, p, ndev);
	if (ret)
		goto err_put_ndev;

	/*
	 * Our ib_client's add() runs inside registration and returns at once
	 * for Stellar devices, so registering under stl_devs_lock is safe; it
	 * keeps the parent's removal from missing this child.
	 */
	ret = ib_register_device(&sdev->ibdev, name, NULL);
	if (ret) {
		pr_err("%s: registration failed: %d\n", name, ret);
		goto err_put_ndev;
	}
	sdev->parent = p;
	list_add_tail(&sdev->parent_entry, &p->children);
	atomic_inc(&p->nr_children);
	ib_register_event_handler(&sdev->event_handler);
	mutex_unlock(&stl_devs_lock);

	ibdev_info(&sdev->ibdev, "created over %s (netdev %s)\n",
		   dev_name(&pdev->dev), netdev_name(ndev));
	ib_device_put(pdev);
	return 0;

err_put_ndev:
	dev_put(ndev);
err_unlock:
	mutex_unlock(&stl_devs_lock);
	ib_dealloc_device(&sdev->ibdev);
err_put_parent:
	ib_device_put(pdev);
	return ret;
}

static struct rdma_link_ops stl_link_ops = {
	.type = STELLAR_DRIVER_NAME,
	.newlink = stl_newlink,
};

static int stl_client_add(struct ib_device *ibdev)
{
	struct stl_parent *p;

	if (stl_is_ours(ibdev))
		return -EOPNOTSUPP;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->ibdev = ibdev;
	INIT_LIST_HEAD(&p->children);
	mutex_lock(&stl_devs_lock);
	list_add_tail(&p->entry, &stl_parents);
	mutex_unlock(&stl_devs_lock);
	return 0;
}

/*
 * The parent is going away (or the module is unloading): unregister every
 * child and wait until each has released its parent objects.
 */
static void stl_client_remove(struct ib_device *ibdev, void *client_data)
{
	struct stl_parent *p;
	struct stl_dev *sdev;

	mutex_lock(&stl_devs_lock);
	p = stl_parent_find(ibdev);
	if (!p) {
		mutex_unlock(&stl_devs_lock);
		return;
	}
	p->dead = true;
	while ((sdev = list_first_entry_or_null(&p->children, struct stl_dev,
						parent_entry))) {
		bool got = ib_device_try_get(&sdev->ibdev);

		list_del_init(&sdev->parent_entry);
		mutex_unlock(&stl_devs_lock);
		if (got) {
			ibdev_info(&sdev->ibdev, "parent %s going away\n",
				   dev_name(&ibdev->dev));
			ib_unregister_device_and_put(&sdev->ibdev);
		}
		mutex_lock(&stl_devs_lock);
	}
	list_del(&p->entry);
	mutex_unlock(&stl_devs_lock);

	/* Children unregistered by someone else must finish too. */
	wait_event(stl_child_wq, !atomic_read(&p->nr_children));
	kfree(p);
}

static struct ib_client stl_client = {
	.name = "stellar",
	.add = stl_client_add,
	.remove = stl_client_remove,
};

const struct ib_device_ops stl_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

	.alloc_hw_port_stats = stl_alloc_hw_port_stats,
	.alloc_pd = stl_alloc_pd,
	.alloc_ucontext = stl_alloc_ucontext,
	.create_ah = stl_create_ah,
	.create_cq = stl_create_cq,
	.create_qp = stl_create_qp,
	.create_user_ah = stl_create_ah,
	.dealloc_driver = stl_dealloc_driver,
	.dealloc_pd = stl_dealloc_pd,
	.dealloc_ucontext = stl_dealloc_ucontext,
	.dereg_mr = stl_dereg_mr,
	.destroy_ah = stl_destroy_ah,
	.destroy_cq = stl_destroy_cq,
	.destroy_qp = stl_destroy_qp,
	.device_group = &stl_attr_group,
	.disassociate_ucontext = stl_disassociate_ucontext,
	.get_dev_fw_str = stl_get_dev_fw_str,
	.get_hw_stats = stl_get_hw_stats,
	.get_link_layer = stl_get_link_layer,
	.get_port_immutable = stl_get_port_immutable,
	.modify_qp = stl_modify_qp,
	.poll_cq = stl_poll_cq,
	.post_recv = stl_post_recv,
	.post_send = stl_post_send,
	.query_ah = stl_query_ah,
	.query_device = stl_query_device,
	.query_pkey = stl_query_pkey,
	.query_port = stl_query_port,
	.query_qp = stl_query_qp,
	.reg_user_mr = stl_reg_user_mr,
	.req_notify_cq = stl_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, stl_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, stl_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, stl_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, stl_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, stl_ucontext, ibuc),
};

static int stl_debugfs_pinned_get(void *data, u64 *val)
{
	*val = pvdma_total_pinned();
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(stl_debugfs_pinned_fops, stl_debugfs_pinned_get,
			 NULL, "%llu\n");

static int __init stl_init(void)
{
	int ret;

	ret = pvdma_init();
	if (ret)
		return ret;
	ret = ib_register_client(&stl_client);
	if (ret) {
		pr_err("cannot register ib client: %d\n", ret);
		pvdma_exit();
		return ret;
	}
	rdma_link_register(&stl_link_ops);
	stl_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file_unsafe("pinned_pages", 0444, stl_debugfs, NULL,
				   &stl_debugfs_pinned_fops);
	pr_info("loaded, ABI %d\n", STELLAR_UVERBS_ABI_VERSION);
	return 0;
}

static void __exit stl_exit(void)
{
	rdma_link_unregister(&stl_link_ops);
	/* Calls stl_client_remove() for every parent: children go first. */
	ib_unregister_client(&stl_client);
	debugfs_remove_recursive(stl_debugfs);
	pvdma_exit();
	if (pvdma_total_pinned())
		pr_err("%llu pages still pinned at unload\n",
		       pvdma_total_pinned());
	pr_info("unloaded\n");
}

module_init(stl_init);
module_exit(stl_exit);

MODULE_AUTHOR("Stellar authors");
MODULE_DESCRIPTION("Stellar para-virtual RDMA devices over a parent RDMA device");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK(STELLAR_DRIVER_NAME);
