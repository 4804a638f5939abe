// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: module, parents and device life cycle.
 *
 * Stellar is an ib_client of every RDMA device: each one is a potential
 * parent.  `rdma link add NAME type stellar netdev X` creates a device over
 * the parent port bound to X, or to the device below X when X is a VLAN,
 * macvlan or ipvlan; the device uses only X's addresses (stl_add_gid()).
 * Writing "NAME PARENT [PORT]" to
 * /sys/kernel/stellar/link_add names the parent device directly.  When a
 * parent goes away, the client's remove callback unregisters its children
 * and waits for them, so no Stellar device outlives its parent.
 *
 * Life cycle of a child.  stl_newlink() reserves the child on its parent
 * (sets sdev->parent, counts it in nr_children) under stl_devs_lock, drops
 * the lock and registers it: ib_core takes devices_rwsem while it registers
 * and calls stl_client_add() under devices_rwsem, so stl_devs_lock is never
 * held across a call that takes ib_core's device locks.  Afterwards the
 * child is put on the parent's list, unless the parent (or its netdev) died
 * meanwhile; then newlink unregisters it again.  The count drops only in
 * stl_reap(), after the thread that ran dealloc_driver has left
 * __ib_unregister_device(), i.e. has left this module's code; module exit
 * waits for the counts and then for the reap work itself.
 *
 * Lock order: RTNL -> stl_devs_lock (netdev notifier); devices_rwsem and a
 * device's unregistration_lock -> stl_devs_lock (client add, dealloc).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/kobject.h>
#include <linux/capability.h>
#include <linux/inet.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_verbs.h>

#include "kmod/stl.h"

/**
 * struct stl_parent - a device Stellar may build on
 * @ibdev: the parent (alive while this entry is: its removal frees it)
 * @entry: entry in stl_parents
 * @children: registered Stellar devices on this parent
 * @dead: the parent is going away; no child may be added
 * @nr_children: children reserved and not yet reaped (also those off
 *	@children already); the parent's removal waits for 0
 * @share: the bandwidth share of its children
 */
struct stl_parent {
	struct ib_device *ibdev;
	struct list_head entry;
	struct list_head children;
	bool dead;
	atomic_t nr_children;
	struct stl_share share;
};

/*
 * Guards stl_parents, every parent's children list and dead flag, and
 * every child's gone flag.
 */
static DEFINE_MUTEX(stl_devs_lock);
static LIST_HEAD(stl_parents);
/* Woken whenever a child is reaped (stl_parent.nr_children dropped). */
static DECLARE_WAIT_QUEUE_HEAD(stl_child_wq);
/* Runs stl_reap(); destroyed at module exit after every count is 0. */
static struct workqueue_struct *stl_wq;
static struct dentry *stl_debugfs;
static struct kobject *stl_kobj;

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

/* Whether @rkey names an MR or a window of @sdev.  Context: any. */
static bool stl_key_owned(struct stl_dev *sdev, u32 rkey)
{
	struct stl_mr *smr;
	struct stl_mw *smw;
	bool owned;

	rcu_read_lock();
	smr = xa_load(&sdev->mrs, rkey);
	owned = smr && smr->ibmr.rkey == rkey;
	if (!owned) {
		smw = xa_load(&sdev->mws, rkey >> 8);
		owned = smw && smw->ibmw.rkey == rkey;
	}
	rcu_read_unlock();
	return owned;
}

/**
 * stl_key_owner_get() - the child of a parent that holds a key
 * @pdev: the parent (compared, never dereferenced: it may be gone)
 * @rkey: a key of a parent MR
 *
 * Context: process; takes stl_devs_lock.
 *
 * Return: the registered Stellar device on @pdev whose MR or window @rkey
 * is, with a reference (ib_device_put()), or NULL.
 */
struct stl_dev *stl_key_owner_get(struct ib_device *pdev, u32 rkey)
{
	struct stl_dev *sdev, *found = NULL;
	struct stl_parent *p;

	mutex_lock(&stl_devs_lock);
	p = stl_parent_find(pdev);
	if (p) {
		list_for_each_entry(sdev, &p->children, parent_entry) {
			if (!sdev->gone && stl_key_owned(sdev, rkey) &&
			    ib_device_try_get(&sdev->ibdev)) {
				found = sdev;
				break;
			}
		}
	}
	mutex_unlock(&stl_devs_lock);
	return found;
}

/*
 * Forward a parent port event.  ib_dispatch_event() queues work that holds
 * the raw child pointer; a registered child (reference held here) flushes
 * that work before it is freed, an unregistering one gets nothing.
 */
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
		stl_mr_parent_lost(sdev);
		break;
	default:
		return;
	}
	if (!ib_device_try_get(&sdev->ibdev))
		return;
	out.device = &sdev->ibdev;
	ib_dispatch_event(&out);
	ib_device_put(&sdev->ibdev);
}

/*
 * Queue the unregistration of a registered child (no-op for one that is
 * already going).  Never unregisters synchronously: callers hold a parent's
 * unregistration_lock or RTNL, and unregistering nests the first and may
 * need the second.
 */
static void stl_queue_unregister(struct stl_dev *sdev, const char *why)
{
	lockdep_assert_held(&stl_devs_lock);
	if (sdev->gone || !ib_device_try_get(&sdev->ibdev))
		return;
	ibdev_info(&sdev->ibdev, "unregistering: %s\n", why);
	ib_unregister_device_queued(&sdev->ibdev);
	ib_device_put(&sdev->ibdev);
}

/*
 * Reap a child after dealloc_driver: runs on stl_wq with the reference
 * stl_newlink() took for it.
 */
static void stl_reap(struct work_struct *work)
{
	struct stl_dev *sdev = container_of(work, struct stl_dev, reap_work);
	struct stl_parent *p = sdev->parent;

	/*
	 * The thread that called stl_dealloc_driver() may still be in this
	 * module's code.  It does so under the device's unregistration_lock
	 * (or from stl_newlink(), which module exit fences on its own);
	 * ib_unregister_device() takes that lock, so it returns only once
	 * that thread is back in ib_core.  The device is unregistered
	 * already, so it does nothing else.
	 */
	ib_unregister_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);
	/* p may be freed as soon as the count drops: touch it last. */
	atomic_dec(&p->nr_children);
	wake_up(&stl_child_wq);
}

/*
 * Last step of unregistration, or of a failed stl_newlink(): unhook from
 * the parent.  ib_core frees the device after stl_reap() has run.
 */
static void stl_dealloc_driver(struct ib_device *ibdev)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	struct stl_parent *p = sdev->parent;

	WARN_ON(!xa_empty(&sdev->mrs));
	xa_destroy(&sdev->mrs);
	xa_destroy(&sdev->mws);
	stl_ring_dev_fini(sdev);
	stl_cq_graves_fini(sdev);
	pvdma_cache_destroy(&sdev->pins);
	if (sdev->ev_registered)
		ib_unregister_event_handler(&sdev->event_handler);
	if (sdev->ndev)
		dev_put(sdev->ndev);
	if (sdev->addr_ndev)
		dev_put(sdev->addr_ndev);
	/* Never reserved on a parent: nothing else to undo. */
	if (!p)
		return;
	stl_share_leave(sdev);

	mutex_lock(&stl_devs_lock);
	sdev->gone = true;
	list_del_init(&sdev->parent_entry);
	mutex_unlock(&stl_devs_lock);

	if (atomic64_read(&sdev->pins.pinned_pages))
		ibdev_err(ibdev, "%lld pages still pinned at removal\n",
			  (s64)atomic64_read(&sdev->pins.pinned_pages));
	if (dev_name(&ibdev->dev))	/* NULL if it never got a name */
		ibdev_info(ibdev, "removed from %s\n",
			   dev_name(&sdev->pdev->dev));
	queue_work(stl_wq, &sdev->reap_work);
}

/* Node GUID: the parent's, with the local bit and the child index mixed in. */
static __be64 stl_make_guid(struct ib_device *pdev, u32 index)
{
	u64 guid = be64_to_cpu(pdev->node_guid);

	guid ^= (u64)(0x02 | ((index & 0x3f) << 2)) << 56;
	guid ^= (u64)(index >> 6) << 40;
	return cpu_to_be64(guid);
}

static const struct ib_device_ops stl_ring_dev_ops;

static int stl_dev_init(struct stl_dev *sdev)
{
	struct ib_device *ibdev = &sdev->ibdev;
	static atomic_t stl_instances = ATOMIC_INIT(0);

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->node_guid = stl_make_guid(sdev->pdev,
					 atomic_inc_return(&stl_instances));
	strscpy(ibdev->node_desc, "Stellar virtual RDMA device",
		sizeof(ibdev->node_desc));
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	ib_set_device_ops(ibdev, &stl_dev_ops);
	/*
	 * The rxe user ABI, and rxe's driver id: librxe tags every ioctl
	 * with it and ib_uverbs refuses any other.  No ib_device_set_netdev():
	 * rdma_rxe finds its own devices by (netdev, RDMA_DRIVER_RXE) and
	 * takes them for struct rxe_dev; the netdev is reported by
	 * ops.get_netdev instead.
	 */
	ib_set_device_ops(ibdev, &stl_ring_dev_ops);

	/* Events before registration are dropped by stl_port_event(). */
	INIT_IB_EVENT_HANDLER(&sdev->event_handler, sdev->pdev, stl_port_event);
	ib_register_event_handler(&sdev->event_handler);
	sdev->ev_registered = true;
	return 0;
}

/*
 * The netdev of a parent port, with a reference, or NULL: what ib_core's
 * ib_device_get_netdev() does (not exported in 6.1).  Drivers either
 * implement ops.get_netdev (mlx4, mlx5) or call ib_device_set_netdev().
 */
static struct net_device *stl_port_netdev(struct ib_device *pdev, u32 port)
{
	struct ib_port_data *pdata;
	struct net_device *nd;

	if (!rdma_is_port_valid(pdev, port))
		return NULL;
	if (pdev->ops.get_netdev)
		return pdev->ops.get_netdev(pdev, port);
	pdata = &pdev->port_data[port];
	spin_lock(&pdata->netdev_lock);
	nd = rcu_dereference_protected(pdata->netdev,
				       lockdep_is_held(&pdata->netdev_lock));
	dev_hold(nd);
	spin_unlock(&pdata->netdev_lock);
	return nd;
}

/**
 * struct stl_want - what a new device is to be built on
 * @ndev: the netdev (netlink), or NULL
 * @pdev: the parent device (sysfs link_add), or NULL
 * @port: the parent port (with @pdev; 0 = its first port)
 * @n_addrs: entries of @addrs (sysfs link_add addr=); 0: no list
 * @addrs: the only addresses the device may use, as GIDs
 */
struct stl_want {
	struct net_device *ndev;
	struct ib_device *pdev;
	u32 port;
	u8 n_addrs;
	union ib_gid addrs[STL_MAX_ADDRS];
};

/* Most devices below a named netdev looked at for a parent. */
#define STL_MAX_LOWER 8

struct stl_lowers {
	struct net_device *dev[STL_MAX_LOWER];
	int n;
};

static int stl_lower_one(struct net_device *lower,
			 struct netdev_nested_priv *priv)
{
	struct stl_lowers *l = priv->data;

	if (l->n == STL_MAX_LOWER)
		return 1;
	dev_hold(lower);
	l->dev[l->n++] = lower;
	return 0;
}

/*
 * The parent port whose netdev is @want; returns it with that netdev held in
 * *@ndev (which must be NULL on entry).
 */
static struct stl_parent *stl_parent_by_netdev(struct net_device *want,
					      u32 *port,
					      struct net_device **ndev)
{
	struct stl_parent *p, *found = NULL;
	struct net_device *nd;
	u32 i;

	/* Several devices may use one netdev (rxe and siw): prefer RoCE. */
	list_for_each_entry(p, &stl_parents, entry) {
		rdma_for_each_port(p->ibdev, i) {
			nd = stl_port_netdev(p->ibdev, i);
			if (nd != want || (found && !rdma_protocol_roce(p->ibdev, i))) {
				dev_put(nd);
				continue;
			}
			dev_put(*ndev);
			*port = i;
			*ndev = nd;
			found = p;
			if (rdma_protocol_roce(p->ibdev, i))
				return p;
		}
	}
	return found;
}

/*
 * Find the parent and port of @want; returns it with the port's netdev held
 * in *@ndev (which must be NULL on entry).  A named netdev that is no
 * parent's port is looked for below: a VLAN's real device, a macvlan's or
 * ipvlan's lower device (nearest first).
 */
static struct stl_parent *stl_parent_lookup(const struct stl_want *want,
					   u32 *port, struct net_device **ndev)
{
	struct netdev_nested_priv priv;
	struct stl_lowers lowers;
	struct stl_parent *p;
	int i;

	lockdep_assert_held(&stl_devs_lock);
	if (want->pdev) {
		p = stl_parent_find(want->pdev);
		if (!p)
			return NULL;
		*port = want->port ?: rdma_start_port(p->ibdev);
		*ndev = stl_port_netdev(p->ibdev, *port);
		return p;
	}
	p = stl_parent_by_netdev(want->ndev, port, ndev);
	if (p)
		return p;
	lowers.n = 0;
	priv.data = &lowers;
	rcu_read_lock();
	netdev_walk_all_lower_dev_rcu(want->ndev, stl_lower_one, &priv);
	rcu_read_unlock();
	for (i = 0; i < lowers.n; i++) {
		if (!p)
			p = stl_parent_by_netdev(lowers.dev[i], port, ndev);
		dev_put(lowers.dev[i]);
	}
	return p;
}

/*
 * Under stl_devs_lock: pick the parent, check it can carry Stellar and count
 * the new device on it.  On success the device holds the netdev and a
 * reference on itself that stl_reap() drops.
 */
static int stl_reserve(struct stl_dev *sdev, const char *name,
		       const struct stl_want *want)
{
	const char *what = want->pdev ? dev_name(&want->pdev->dev) :
					netdev_name(want->ndev);
	struct net_device *nd = NULL;
	struct stl_parent *p;
	struct ib_device *pdev;
	u32 port = 0;
	int ret;

	mutex_lock(&stl_devs_lock);
	p = stl_parent_lookup(want, &port, &nd);
	if (!p || p->dead) {
		if (want->pdev)
			pr_err_ratelimited("%s: %s is not a device Stellar can build on\n",
					   name, what);
		else
			pr_err_ratelimited("%s: netdev %s has no RDMA device to build on\n",
					   name, what);
		ret = -ENODEV;
		goto err_put_ndev;
	}
	pdev = p->ibdev;
	if (!rdma_is_port_valid(pdev, port)) {
		pr_err_ratelimited("%s: parent %s has no port %u\n", name,
				   dev_name(&pdev->dev), port);
		ret = -EINVAL;
		goto err_put_ndev;
	}
	if (!rdma_protocol_roce(pdev, port)) {
		pr_err_ratelimited("%s: parent %s port %u is %s, not RoCE\n", name,
				   dev_name(&pdev->dev), port,
				   rdma_protocol_iwarp(pdev, port) ? "iWARP" :
				   "not Ethernet");
		ret = -EOPNOTSUPP;
		goto err_put_ndev;
	}
	if (!(pdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)) {
		pr_err_ratelimited("%s: parent %s lacks memory management extensions (fast registration)\n",
				   name, dev_name(&pdev->dev));
		ret = -EOPNOTSUPP;
		goto err_put_ndev;
	}
	if (!nd) {
		pr_err_ratelimited("%s: parent %s port %u has no netdev\n", name,
				   dev_name(&pdev->dev), port);
		ret = -ENODEV;
		goto err_put_ndev;
	}
	sdev->parent = p;
	sdev->pdev = pdev;
	sdev->pport = port;
	stl_share_join(sdev, &p->share);
	/*
	 * ib_core's address management offers a device the addresses of its
	 * netdev and of the devices above it, so a macvlan's or ipvlan's
	 * device is told the macvlan: its table then holds only its own
	 * addresses.  It looks at a VLAN's real device only, so a VLAN's
	 * device is told that one and takes only the VLAN's addresses from
	 * it (stl_add_gid()).
	 */
	sdev->addr_ndev = want->pdev ? nd : want->ndev;
	dev_hold(sdev->addr_ndev);
	sdev->ndev = rdma_vlan_dev_real_dev(sdev->addr_ndev) ?: sdev->addr_ndev;
	dev_hold(sdev->ndev);
	dev_put(nd);
	atomic_inc(&p->nr_children);
	get_device(&sdev->ibdev.dev);
	mutex_unlock(&stl_devs_lock);
	return 0;

err_put_ndev:
	dev_put(nd);
	mutex_unlock(&stl_devs_lock);
	return ret;
}

static int stl_create(const char *name, const struct stl_want *want)
{
	struct stl_dev *sdev;
	bool unwanted = false;
	int ret;

	/* ib_core would say ENFILE for a taken name: say what it is. */
	if (!strchr(name, '%')) {
		struct ib_device *other = ib_device_get_by_name(name,
							       RDMA_DRIVER_UNKNOWN);

		if (other) {
			ib_device_put(other);
			pr_err_ratelimited("%s: an RDMA device of that name exists\n",
					   name);
			return -EEXIST;
		}
	}

	sdev = ib_alloc_device(stl_dev, ibdev);
	if (!sdev)
		return -ENOMEM;
	/* Ours: keeps sdev readable until we return, whoever deletes it. */
	get_device(&sdev->ibdev.dev);
	/* What stl_dealloc_driver() releases on every path. */
	xa_init(&sdev->mrs);
	xa_init(&sdev->mws);
	mutex_init(&sdev->mw_lock);
	spin_lock_init(&sdev->rate_lock);
	stl_ring_dev_init(sdev);
	stl_cq_graves_init(sdev);
	mutex_init(&sdev->qp_lifecycle);
	/*
	 * A ring device's QPs start with one path: the stock provider's
	 * users ask for more (spray_paths), as their peers may be plain rxe.
	 */
	sdev->spray_paths = !strncmp(name, STL_RING_NAME_PREFIX,
				     strlen(STL_RING_NAME_PREFIX)) ?
			    1 : READ_ONCE(spray_default_paths);
	pvdma_cache_init(&sdev->pins, sdev->ibdev.name);
	INIT_LIST_HEAD(&sdev->parent_entry);
	INIT_WORK(&sdev->reap_work, stl_reap);

	/* Before registration: ib_core fills the GID table there. */
	sdev->n_addrs = want->n_addrs;
	memcpy(sdev->addrs, want->addrs, sizeof(sdev->addrs));
	ret = stl_reserve(sdev, name, want);
	if (ret)
		goto err_dealloc;
	ret = stl_dev_init(sdev);
	if (ret)
		goto err_dealloc;

	/* Not under stl_devs_lock: it takes devices_rwsem (see the top). */
	ret = ib_register_device(&sdev->ibdev, name, NULL);
	if (ret) {
		pr_err_ratelimited("%s: registration failed: %d\n", name, ret);
		goto err_dealloc;
	}

	mutex_lock(&stl_devs_lock);
	/* A concurrent `rdma link delete` may have removed it already. */
	if (!sdev->gone) {
		if (sdev->parent->dead ||
		    READ_ONCE(sdev->ndev->reg_state) != NETREG_REGISTERED ||
		    READ_ONCE(sdev->addr_ndev->reg_state) != NETREG_REGISTERED)
			unwanted = true;
		else
			list_add_tail(&sdev->parent_entry,
				      &sdev->parent->children);
	}
	mutex_unlock(&stl_devs_lock);

	if (unwanted) {
		pr_err_ratelimited("%s: parent or netdev went away during creation\n",
				   name);
		if (ib_device_try_get(&sdev->ibdev))
			ib_unregister_device_and_put(&sdev->ibdev);
		ret = -ENODEV;
	} else {
		ibdev_info(&sdev->ibdev, "created over %s port %u (netdev %s, addresses of %s)\n",
			   dev_name(&sdev->pdev->dev), sdev->pport,
			   netdev_name(sdev->ndev), netdev_name(sdev->addr_ndev));
	}
	put_device(&sdev->ibdev.dev);
	return ret;

err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);
	return ret;
}

/*
 * rdma link add NAME type stellar netdev NDEV.  The parent is the RDMA
 * device with a port bound to NDEV, or to a device below NDEV (NDEV a VLAN,
 * macvlan or ipvlan); Stellar devices themselves are never parents.  The
 * device's addresses are NDEV's.
 */
static int stl_newlink(const char *name, struct net_device *ndev)
{
	struct stl_want want = { .ndev = ndev };

	return stl_create(name, &want);
}

static struct rdma_link_ops stl_link_ops = {
	.type = STELLAR_DRIVER_NAME,
	.newlink = stl_newlink,
};

static char *stl_next_word(char **s)
{
	char *w;

	do {
		w = strsep(s, " \t\n");
	} while (w && !*w);
	return w;
}

/* "addr=IP" (IPv4 or IPv6) into the next slot of @want; -EINVAL if not. */
static int stl_want_addr(struct stl_want *want, const char *ip)
{
	union ib_gid *g;
	__be32 v4;

	if (want->n_addrs >= STL_MAX_ADDRS)
		return -EINVAL;
	g = &want->addrs[want->n_addrs];
	if (in4_pton(ip, -1, (u8 *)&v4, -1, NULL))
		ipv6_addr_set_v4mapped(v4, (struct in6_addr *)g->raw);
	else if (!in6_pton(ip, -1, g->raw, -1, NULL))
		return -EINVAL;
	want->n_addrs++;
	return 0;
}

/*
 * /sys/kernel/stellar/link_add: "NAME PARENT [PORT] [addr=IP]..." creates
 * NAME over port PORT (default: the first) of the RDMA device PARENT, for
 * parents whose netdev does not identify them (several devices or ports on
 * one netdev); "NAME netdev=NETDEV [addr=IP]..." over the RDMA device below
 * NETDEV, as `rdma link add NAME type stellar netdev NETDEV` does.  Each
 * addr= (at most STL_MAX_ADDRS) restricts the device to those addresses of
 * its netdev (an IPv4 address stands for its v4-mapped GID): its GID table
 * holds no other.
 */
static ssize_t link_add_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	struct stl_want want = {};
	char *s, *args, *w, *name, *parent = NULL, *port = NULL, *nd = NULL;
	int ret = -EINVAL;

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	s = kstrndup(buf, count, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	args = s;
	name = stl_next_word(&args);
	while ((w = stl_next_word(&args))) {
		if (!strncmp(w, "addr=", 5)) {
			if (stl_want_addr(&want, w + 5)) {
				pr_err_ratelimited("link_add: bad or too many addresses (at most %d): \"%.*s\"\n",
						   STL_MAX_ADDRS, 64, w);
				goto out_free;
			}
		} else if (!strncmp(w, "netdev=", 7) && !nd && !parent) {
			nd = w + 7;
		} else if (!parent && !nd && !strchr(w, '=')) {
			parent = w;
		} else if (parent && !port && !strchr(w, '=')) {
			port = w;
		} else {
			parent = NULL;
			nd = NULL;
			break;
		}
	}
	if (!name || (!parent && !nd) ||
	    (port && (kstrtou32(port, 10, &want.port) || !want.port))) {
		pr_err_ratelimited("link_add: want \"NAME PARENT [PORT] [addr=IP]...\" or \"NAME netdev=NETDEV [addr=IP]...\"\n");
		goto out_free;
	}
	if (strlen(name) >= IB_DEVICE_NAME_MAX || strpbrk(name, "%/:")) {
		pr_err_ratelimited("link_add: bad device name \"%.*s\"\n",
				   IB_DEVICE_NAME_MAX, name);
		goto out_free;
	}
	if (nd)
		want.ndev = dev_get_by_name(current->nsproxy->net_ns, nd);
	else
		want.pdev = ib_device_get_by_name(parent, RDMA_DRIVER_UNKNOWN);
	if (!want.ndev && !want.pdev) {
		pr_err_ratelimited("link_add: %s: no %s %.*s\n", name,
				   nd ? "netdev" : "RDMA device",
				   IB_DEVICE_NAME_MAX, nd ?: parent);
		ret = -ENODEV;
		goto out_free;
	}
	ret = stl_create(name, &want);
	if (want.ndev)
		dev_put(want.ndev);
	else
		ib_device_put(want.pdev);
out_free:
	kfree(s);
	return ret ?: count;
}
static struct kobj_attribute stl_link_add_attr = __ATTR_WO(link_add);

/* Unregister the children whose netdev goes away (waits for them). */
static int stl_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct stl_parent *p;
	struct stl_dev *sdev;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&stl_devs_lock);
	list_for_each_entry(p, &stl_parents, entry)
		list_for_each_entry(sdev, &p->children, parent_entry)
			if (sdev->ndev == ndev || sdev->addr_ndev == ndev)
				stl_queue_unregister(sdev, "its netdev goes away");
	mutex_unlock(&stl_devs_lock);
	return NOTIFY_DONE;
}

static struct notifier_block stl_netdev_nb = {
	.notifier_call = stl_netdev_event,
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
	stl_share_init(&p->share);
	spray_parent_add(ibdev);
	mutex_lock(&stl_devs_lock);
	list_add_tail(&p->entry, &stl_parents);
	mutex_unlock(&stl_devs_lock);
	return 0;
}

/*
 * The parent is going away (or the module is unloading): have every child
 * unregistered and wait until each is reaped.  This runs under the parent's
 * unregistration_lock, so the children are unregistered from ib_core's
 * work queue, not nested here.
 */
static void stl_client_remove(struct ib_device *ibdev, void *client_data)
{
	struct stl_parent *p;
	struct stl_dev *sdev;
	char why[IB_DEVICE_NAME_MAX + 32];

	snprintf(why, sizeof(why), "parent %s is going away",
		 dev_name(&ibdev->dev));
	mutex_lock(&stl_devs_lock);
	p = stl_parent_find(ibdev);
	if (!p) {
		mutex_unlock(&stl_devs_lock);
		return;
	}
	p->dead = true;
	list_for_each_entry(sdev, &p->children, parent_entry) {
		/* Its MRs go without LOCAL_INV: freeing invalidates them. */
		stl_mr_parent_lost(sdev);
		stl_queue_unregister(sdev, why);
	}
	list_del(&p->entry);
	mutex_unlock(&stl_devs_lock);

	/* Children being created or unregistered by others count too. */
	wait_event(stl_child_wq, !atomic_read(&p->nr_children));
	/* No child, so no QP, is left to use the path exchange. */
	spray_parent_remove(ibdev);
	kfree(p);
}

static struct ib_client stl_client = {
	.name = "stellar",
	.add = stl_client_add,
	.remove = stl_client_remove,
};

/* The port's netdev, held, for a device with rings (no set_netdev). */
static struct net_device *stl_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);

	if (port != 1 || !sdev->ndev)
		return NULL;
	dev_hold(sdev->ndev);
	return sdev->ndev;
}

/* Applied after stl_dev_ops to a device with rings. */
static const struct ib_device_ops stl_ring_dev_ops = {
	.driver_id = RDMA_DRIVER_RXE,
	.uverbs_abi_ver = 2,	/* what librxe asks for (RXE_UVERBS_ABI_VERSION) */
	.get_netdev = stl_get_netdev,
	.mmap = stl_mmap,
	.mmap_free = stl_mmap_free,
	.resize_cq = stl_resize_cq,
	.alloc_mw = stl_alloc_mw,
	.dealloc_mw = stl_dealloc_mw,

	INIT_RDMA_OBJ_SIZE(ib_mw, stl_mw, ibmw),
};

const struct ib_device_ops stl_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = STELLAR_UVERBS_DRIVER_ABI,

	.alloc_hw_port_stats = stl_alloc_hw_port_stats,
	.alloc_pd = stl_alloc_pd,
	.alloc_ucontext = stl_alloc_ucontext,
	.create_ah = stl_create_ah,
	.create_cq = stl_create_cq,
	.create_qp = stl_create_qp,
	.create_srq = stl_create_srq,
	.create_user_ah = stl_create_ah,
	.add_gid = stl_add_gid,
	.del_gid = stl_del_gid,
	.dealloc_driver = stl_dealloc_driver,
	.dealloc_pd = stl_dealloc_pd,
	.dealloc_ucontext = stl_dealloc_ucontext,
	.dereg_mr = stl_dereg_mr,
	.fill_res_mr_entry = stl_fill_res_mr_entry,
	.fill_res_qp_entry = spray_fill_res_qp_entry,
	.destroy_ah = stl_destroy_ah,
	.destroy_cq = stl_destroy_cq,
	.destroy_qp = stl_destroy_qp,
	.destroy_srq = stl_destroy_srq,
	.device_group = &stl_attr_group,
	.disassociate_ucontext = stl_disassociate_ucontext,
	.get_dev_fw_str = stl_get_dev_fw_str,
	.get_hw_stats = stl_get_hw_stats,
	.get_link_layer = stl_get_link_layer,
	.get_port_immutable = stl_get_port_immutable,
	.modify_qp = stl_modify_qp,
	.modify_srq = stl_modify_srq,
	.poll_cq = stl_poll_cq,
	.post_recv = stl_post_recv,
	.post_send = stl_post_send,
	.post_srq_recv = stl_post_srq_recv,
	.query_ah = stl_query_ah,
	.query_device = stl_query_device,
	.query_pkey = stl_query_pkey,
	.query_port = stl_query_port,
	.query_qp = stl_query_qp,
	.query_srq = stl_query_srq,
	.reg_user_mr = stl_reg_user_mr,
	.rereg_user_mr = stl_rereg_user_mr,
	.reg_user_mr_dmabuf = stl_reg_user_mr_dmabuf,
	.req_notify_cq = stl_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, stl_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, stl_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, stl_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, stl_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, stl_srq, ibsrq),
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
	stl_ring_init();
	ret = stl_dmabuf_init();
	if (ret)
		goto err_pvdma;
	stl_wq = alloc_workqueue("stellar", 0, 0);
	if (!stl_wq) {
		ret = -ENOMEM;
		goto err_dmabuf;
	}
	ret = ib_register_client(&stl_client);
	if (ret) {
		pr_err("cannot register ib client: %d\n", ret);
		goto err_wq;
	}
	ret = register_netdevice_notifier(&stl_netdev_nb);
	if (ret) {
		pr_err("cannot register netdev notifier: %d\n", ret);
		goto err_client;
	}
	rdma_link_register(&stl_link_ops);
	stl_kobj = kobject_create_and_add(KBUILD_MODNAME, kernel_kobj);
	if (!stl_kobj || sysfs_create_file(stl_kobj, &stl_link_add_attr.attr))
		pr_warn("no /sys/kernel/%s/link_add\n", KBUILD_MODNAME);
	stl_debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file_unsafe("pinned_pages", 0444, stl_debugfs, NULL,
				   &stl_debugfs_pinned_fops);
	spray_debugfs_init(stl_debugfs);
	pr_info("loaded, ABI %d\n", STELLAR_UVERBS_ABI_VERSION);
	return 0;

err_client:
	ib_unregister_client(&stl_client);
err_wq:
	destroy_workqueue(stl_wq);
err_dmabuf:
	stl_dmabuf_exit();
err_pvdma:
	pvdma_exit();
	return ret;
}

static void __exit stl_exit(void)
{
	/* No new device: waits for writers of link_add and for newlink. */
	kobject_put(stl_kobj);
	rdma_link_unregister(&stl_link_ops);
	unregister_netdevice_notifier(&stl_netdev_nb);
	/* Calls stl_client_remove() for every parent: children go first. */
	ib_unregister_client(&stl_client);
	/* No device is left: keys to restore are nobody's. */
	stl_inv_exit();
	/* Every count is 0; wait for the stl_reap() calls to return. */
	destroy_workqueue(stl_wq);
	debugfs_remove_recursive(stl_debugfs);
	stl_dmabuf_exit();
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
