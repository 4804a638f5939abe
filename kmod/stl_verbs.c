// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar: device and port attributes, user contexts, PDs and AHs.
 *
 * Attributes come from the parent, clamped to what Stellar implements, so
 * that nothing is promised that the virtual device cannot keep.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <rdma/ib_mad.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "kmod/stl.h"

/**
 * stl_udata_empty() - check that userspace sent no driver data we ignore
 * @udata: the command's driver data, may be NULL
 *
 * Return: true if there is none or it is all zero.
 */
bool stl_udata_empty(struct ib_udata *udata)
{
	return !udata || !udata->inlen ||
	       ib_is_udata_cleared(udata, 0, udata->inlen);
}

/**
 * stl_max_mr_size() - the longest memory region a registration may cover
 * @sdev: the Stellar device
 *
 * Reported as max_mr_size and enforced by stl_reg_user_mr(): the parent's
 * limit, and no more than fits in STL_MAX_MR_PAGES pages at any offset.
 *
 * Return: the limit in bytes.
 */
u64 stl_max_mr_size(struct stl_dev *sdev)
{
	u64 max = min_t(u64, sdev->pdev->attrs.max_mr_size, STL_MAX_MR_SIZE);
	u64 pieces = stl_parent_pieces_max(sdev);

	/* Any start offset: one 4 KiB piece more than the length needs. */
	if (pieces)
		max = min_t(u64, max, (pieces - 1) << PAGE_SHIFT);
	return max;
}

/**
 * stl_parent_pieces_max() - most 4 KiB pieces the parent holds for an MR
 * @sdev: the device
 *
 * rxe's bound (STL_RXE_MR_PIECES, stl_compat.h); other parents have none.
 *
 * Return: the bound, or 0 for none.
 */
u64 stl_parent_pieces_max(struct stl_dev *sdev)
{
	return sdev->pdev->ops.driver_id == RDMA_DRIVER_RXE ?
	       STL_RXE_MR_PIECES : 0;
}

int stl_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	const struct ib_device_attr *pa = &sdev->pdev->attrs;

	if (udata && udata->inlen && !stl_udata_empty(udata))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = pa->fw_ver;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = stl_max_mr_size(sdev);
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = pa->vendor_id;
	attr->vendor_part_id = pa->vendor_part_id;
	attr->hw_ver = pa->hw_ver;
	attr->max_qp = min_t(int, pa->max_qp, stl_obj_limit(sdev, STL_OBJ_QP));
	attr->max_qp_wr = pa->max_qp_wr;
	attr->device_cap_flags = pa->device_cap_flags &
				 (IB_DEVICE_RC_RNR_NAK_GEN |
				  IB_DEVICE_PORT_ACTIVE_EVENT |
				  IB_DEVICE_SYS_IMAGE_GUID);
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_send_sge = pa->max_send_sge;
	attr->max_recv_sge = pa->max_recv_sge;
	attr->max_sge_rd = pa->max_sge_rd;
	attr->max_cq = min_t(int, pa->max_cq, stl_obj_limit(sdev, STL_OBJ_CQ));
	attr->max_cqe = pa->max_cqe;
	attr->max_mr = min_t(int, pa->max_mr, stl_obj_limit(sdev, STL_OBJ_MR));
	attr->max_pd = min_t(int, pa->max_pd, stl_obj_limit(sdev, STL_OBJ_PD));
	attr->max_qp_rd_atom = pa->max_qp_rd_atom;
	attr->max_qp_init_rd_atom = pa->max_qp_init_rd_atom;
	attr->max_res_rd_atom = pa->max_res_rd_atom;
	attr->atomic_cap = pa->atomic_cap;
	attr->max_ah = min_t(int, pa->max_ah, stl_obj_limit(sdev, STL_OBJ_AH));
	attr->max_srq = min_t(int, pa->max_srq, stl_obj_limit(sdev, STL_OBJ_SRQ));
	attr->max_srq_wr = pa->max_srq_wr;
	attr->max_srq_sge = pa->max_srq_sge;
	/* Rings of 2^n entries hold 2^n - 1 (stl_ring.c). */
	attr->max_qp_wr = min_t(u32, rounddown_pow_of_two(pa->max_qp_wr + 1) - 1,
				STL_RING_MAX_ENTRIES - 1);
	attr->max_cqe = min_t(u32, pa->max_cqe,
			      STL_RING_MAX_ENTRIES - 1);
	attr->max_srq_wr = min_t(u32, rounddown_pow_of_two(pa->max_srq_wr + 1) - 1,
				 STL_RING_MAX_ENTRIES - 1);
	/* Windows of both types (stl_mw.c). */
	attr->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
				  IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->max_mw = stl_obj_limit(sdev, STL_OBJ_MW);
	/*
	 * Every queue the limits allow must fit the device's quotas: a QP is
	 * charged its send plus its receive entries (stl_quota_charge()).
	 */
	attr->max_qp_wr = min_t(u32, attr->max_qp_wr, stl_quota(sdev, false) / 2);
	attr->max_srq_wr = min_t(u32, attr->max_srq_wr, stl_quota(sdev, false));
	/* A ring of n entries is charged 2^k - 1 >= n (stl_ring.c). */
	attr->max_qp_wr = rounddown_pow_of_two(attr->max_qp_wr + 1) - 1;
	attr->max_srq_wr = rounddown_pow_of_two(attr->max_srq_wr + 1) - 1;
	attr->max_cqe = min_t(u32, attr->max_cqe, stl_quota(sdev, true));
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = pa->local_ca_ack_delay;
	return 0;
}

int stl_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	int ret;

	ret = ib_query_port(sdev->pdev, sdev->pport, attr);
	if (ret)
		return ret;
	attr->pkey_tbl_len = 1;
	attr->gid_tbl_len = min_t(int, attr->gid_tbl_len, STL_GID_TBL_LEN);
	/*
	 * No GSI QP and no MAD agent on this device, so no CM (rdma_cm and
	 * ib_cm skip it) and no device management: promise neither.
	 */
	attr->port_cap_flags &= IB_UVERBS_PCF_IP_BASED_GIDS;
	return 0;
}

int stl_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *imm)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);
	struct ib_port_attr attr;
	int ret;

	ret = ib_query_port(sdev->pdev, sdev->pport, &attr);
	if (ret)
		return ret;
	imm->pkey_tbl_len = 1;
	imm->gid_tbl_len = min_t(int, attr.gid_tbl_len, STL_GID_TBL_LEN);
	imm->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	imm->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

enum rdma_link_layer stl_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

int stl_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

void stl_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	struct stl_dev *sdev = to_stl_dev(ibdev);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "stellar-%d/%s",
		 STELLAR_UVERBS_ABI_VERSION, dev_name(&sdev->pdev->dev));
}

int stl_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct stellar_alloc_ucontext_resp resp = {
		.abi_version = STELLAR_UVERBS_ABI_VERSION,
		.max_inline_data = STELLAR_MAX_INLINE_DATA,
	};

	if (!stl_udata_empty(udata))
		return -EINVAL;
	if (udata && udata->outlen)
		return ib_copy_to_udata(udata, &resp,
					min(udata->outlen, sizeof(resp)));
	return 0;
}

void stl_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * Nothing of a context is mapped into the process, so there is nothing to
 * zap: having this op lets the device be deleted (and moved between network
 * namespaces) while processes still hold it open.
 */
void stl_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

int stl_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibpd->device);
	struct stl_pd *spd = to_stl_pd(ibpd);
	struct ib_pd *ppd;
	int ret;

	if (!stl_udata_empty(udata))
		return -EINVAL;
	ret = stl_obj_charge(sdev, STL_OBJ_PD);
	if (ret)
		return ret;
	ret = stl_kmem_charge(sdev, sizeof(*spd));
	if (ret) {
		stl_obj_uncharge(sdev, STL_OBJ_PD);
		return ret;
	}
	ppd = ib_alloc_pd(sdev->pdev, 0);
	if (IS_ERR(ppd)) {
		stl_kmem_uncharge(sdev, sizeof(*spd));
		stl_obj_uncharge(sdev, STL_OBJ_PD);
		return PTR_ERR(ppd);
	}
	spd->ppd = ppd;
	mutex_init(&spd->reg_lock);
	return 0;
}

int stl_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibpd->device);
	struct stl_pd *spd = to_stl_pd(ibpd);

	/* Parent MRs parked with cached pins belong to the parent PD. */
	pvdma_drop_parked(&sdev->pins, spd);
	stl_pd_reg_teardown(spd);
	ib_dealloc_pd(spd->ppd);
	mutex_destroy(&spd->reg_lock);
	stl_kmem_uncharge(sdev, sizeof(*spd));
	stl_obj_uncharge(sdev, STL_OBJ_PD);
	return 0;
}

/**
 * stl_add_gid() - may the device use this address?
 * @attr: the GID ib_core is about to put in the device's table
 * @context: unused
 *
 * ib_core's RoCE address management offers a device every address of its
 * port's netdev and of the devices above it (VLANs, macvlans, ipvlans), in
 * every network namespace.  A Stellar device takes only the addresses of the
 * netdev it was created on (@addr_ndev), so a tenant cannot send from a
 * neighbour's address or VLAN; ib_core leaves the others out of the table.
 * A device created with an address list (link_add addr=) takes only those
 * of them.
 *
 * Return: 0, or -EPERM for an address of another netdev or not listed.
 */
int stl_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct stl_dev *sdev = to_stl_dev(attr->device);
	int i;

	if (rcu_access_pointer(attr->ndev) != sdev->addr_ndev) {
		stl_dbg(sdev, "GID %pI6 (index %u) is not an address of %s: left out\n",
			attr->gid.raw, attr->index,
			netdev_name(sdev->addr_ndev));
		return -EPERM;
	}
	if (!sdev->n_addrs)
		return 0;
	for (i = 0; i < sdev->n_addrs; i++)
		if (!memcmp(&attr->gid, &sdev->addrs[i], sizeof(attr->gid)))
			return 0;
	stl_dbg(sdev, "GID %pI6 (index %u) is not in the device's address list: left out\n",
		attr->gid.raw, attr->index);
	return -EPERM;
}

int stl_del_gid(const struct ib_gid_attr *attr, void **context)
{
	return 0;
}

/**
 * stl_ah_to_parent() - translate an address vector to the parent device
 * @sdev: the Stellar device
 * @in: attributes resolved against the Stellar device (sgid_attr set)
 * @out: attributes for the parent: its port, its GID index for the same
 *	source GID; the caller must rdma_destroy_ah_attr() it
 *
 * Return: 0 or -EINVAL when the source GID is not on the parent.
 */
int stl_ah_to_parent(struct stl_dev *sdev, const struct rdma_ah_attr *in,
		     struct rdma_ah_attr *out)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *pgid;
	struct net_device *ndev;

	if (in->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(in) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(in);
	if (!grh->sgid_attr)
		return -EINVAL;

	/* The netdev is only compared; RCU keeps it from being reused. */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(grh->sgid_attr);
	if (IS_ERR(ndev) || ndev != sdev->addr_ndev) {
		/* stl_add_gid() keeps such entries out of the table. */
		rcu_read_unlock();
		ibdev_warn_ratelimited(&sdev->ibdev,
				       "source GID index %u is not an address of %s\n",
				       grh->sgid_index, netdev_name(sdev->addr_ndev));
		return -EINVAL;
	}
	pgid = rdma_find_gid_by_port(sdev->pdev, &grh->sgid_attr->gid,
				     grh->sgid_attr->gid_type, sdev->pport,
				     ndev);
	rcu_read_unlock();
	if (IS_ERR(pgid)) {
		stl_dbg(sdev, "source GID index %u not on the parent\n",
			grh->sgid_index);
		return -EINVAL;
	}

	memset(out, 0, sizeof(*out));
	out->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(out, sdev->pport);
	rdma_ah_set_sl(out, rdma_ah_get_sl(in));
	rdma_ah_set_static_rate(out, rdma_ah_get_static_rate(in));
	memcpy(out->roce.dmac, in->roce.dmac, ETH_ALEN);
	/* Takes over the reference on pgid. */
	rdma_move_grh_sgid_attr(out, (union ib_gid *)&grh->dgid, grh->flow_label,
				grh->hop_limit, grh->traffic_class, pgid);
	return 0;
}

/**
 * stl_ah_from_parent() - express a parent's address vector in our GID table
 * @sdev: the Stellar device
 * @attr: attributes read from the parent; sgid_index is rewritten
 */
void stl_ah_from_parent(struct stl_dev *sdev, struct rdma_ah_attr *attr)
{
	const struct ib_gid_attr *pgid, *gid;
	struct ib_global_route *grh;
	struct net_device *ndev;

	rdma_ah_set_port_num(attr, 1);
	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return;
	grh = rdma_ah_retrieve_grh(attr);
	pgid = rdma_get_gid_attr(sdev->pdev, sdev->pport, grh->sgid_index);
	if (IS_ERR(pgid))
		return;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(pgid);
	gid = rdma_find_gid_by_port(&sdev->ibdev, &pgid->gid, pgid->gid_type,
				    1, IS_ERR(ndev) ? NULL : ndev);
	rcu_read_unlock();
	if (!IS_ERR(gid)) {
		grh->sgid_index = gid->index;
		rdma_put_gid_attr(gid);
	}
	rdma_put_gid_attr(pgid);
}

int stl_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata)
{
	struct stl_dev *sdev = to_stl_dev(ibah->device);
	struct stl_pd *spd = to_stl_pd(ibah->pd);
	struct stl_ah *sah = to_stl_ah(ibah);
	struct rdma_ah_attr pattr;
	struct ib_ah *pah;
	int ret;

	if (!stl_udata_empty(udata))
		return -EINVAL;
	ret = stl_obj_charge(sdev, STL_OBJ_AH);
	if (ret)
		return ret;
	ret = stl_kmem_charge(sdev, sizeof(*sah));
	if (ret)
		goto err_obj;
	ret = stl_ah_to_parent(sdev, init->ah_attr, &pattr);
	if (ret)
		goto err_count;
	pah = rdma_create_ah(spd->ppd, &pattr,
			     init->flags & RDMA_CREATE_AH_SLEEPABLE);
	rdma_destroy_ah_attr(&pattr);
	if (IS_ERR(pah)) {
		ret = PTR_ERR(pah);
		goto err_count;
	}
	sah->pah = pah;
	ret = stl_ring_ah_created(sah, udata);
	if (ret) {
		rdma_destroy_ah(pah, init->flags &
				RDMA_CREATE_AH_SLEEPABLE);
		goto err_count;
	}
	return 0;

err_count:
	stl_kmem_uncharge(sdev, sizeof(*sah));
err_obj:
	stl_obj_uncharge(sdev, STL_OBJ_AH);
	return ret;
}

int stl_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	struct stl_dev *sdev = to_stl_dev(ibah->device);
	int ret;

	ret = rdma_query_ah(to_stl_ah(ibah)->pah, attr);
	if (ret)
		return ret;
	stl_ah_from_parent(sdev, attr);
	return 0;
}

int stl_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct stl_dev *sdev = to_stl_dev(ibah->device);

	stl_ring_ah_destroy(to_stl_ah(ibah));
	rdma_destroy_ah(to_stl_ah(ibah)->pah, flags);
	stl_kmem_uncharge(sdev, sizeof(struct stl_ah));
	stl_obj_uncharge(sdev, STL_OBJ_AH);
	return 0;
}
