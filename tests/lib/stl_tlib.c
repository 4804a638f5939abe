// SPDX-License-Identifier: GPL-2.0-only
/*
 * Small helpers shared by Stellar's C test and benchmark programs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "stl_tlib.h"

/**
 * tlib_open_device() - open the RDMA device called @name
 * @name: device name (stellar0, rxe0, ...)
 *
 * Return: the context, or NULL with errno set (ENODEV if there is none).
 */
struct ibv_context *tlib_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i, found = 0;

	for (i = 0; list && list[i]; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			found = 1;
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	if (list)
		ibv_free_device_list(list);
	if (!found)
		errno = ENODEV;
	return ctx;
}

/**
 * tlib_rc_connect() - bring an RC QP from RESET to RTS towards @peer
 * @qp: the QP, in RESET
 * @peer: the other end
 * @step: set to the name of the transition that failed
 *
 * Return: 0, or the errno of the failed ibv_modify_qp().
 */
int tlib_rc_connect(struct ibv_qp *qp, const struct tlib_rc_peer *peer,
		    const char **step)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = peer->access,
	};
	int ret;

	*step = "RESET->INIT";
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = peer->mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = peer->sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	*step = "INIT->RTR";
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	*step = "RTR->RTS";
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/**
 * tlib_errno_name() - "0" for 0, else the errno's name ("ENOMEM", ...)
 * @err: an errno value
 */
const char *tlib_errno_name(int err)
{
	const char *n;

	if (!err)
		return "0";
	n = strerrorname_np(err);
	return n ? n : "unknown";
}
