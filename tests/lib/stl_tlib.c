// SPDX-License-Identifier: GPL-2.0-only
/*
 * Small helpers shared by Stellar's C test and benchmark programs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/**
 * tlib_side_open() - open @name with a PD, a CQ and an RC QP
 * @s: filled in
 * @name: the device
 * @gid_index: the GID the pair uses
 * @why: the reason on failure
 * @why_len: its size
 *
 * Return: 0, or -1 with @why set.
 */
int tlib_side_open(struct tlib_side *s, const char *name, int gid_index,
		   char *why, size_t why_len)
{
	const struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16,
					.max_send_sge = 1, .max_recv_sge = 1 };

	return tlib_side_open_caps(s, name, gid_index, &cap, 1, 32, why,
				   why_len);
}

/**
 * tlib_side_open_caps() - tlib_side_open() with the QP's and CQ's sizes
 * @s: filled in
 * @name: the device
 * @gid_index: the GID the pair uses
 * @cap: the QP's capabilities
 * @sig_all: every send request completes
 * @cqe: entries of the CQ
 * @why: the reason on failure
 * @why_len: its size
 *
 * Return: 0, or -1 with @why set.
 */
int tlib_side_open_caps(struct tlib_side *s, const char *name, int gid_index,
			const struct ibv_qp_cap *cap, int sig_all, int cqe,
			char *why, size_t why_len)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = *cap,
		.sq_sig_all = sig_all,
	};

	s->ctx = tlib_open_device(name);
	if (!s->ctx) {
		snprintf(why, why_len, "cannot open %s", name);
		return -1;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, cqe, NULL, NULL, 0) : NULL;
	if (!s->cq) {
		snprintf(why, why_len, "PD/CQ on %s: %s", name, strerror(errno));
		return -1;
	}
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &init);
	if (!s->qp) {
		snprintf(why, why_len, "QP on %s: %s", name, strerror(errno));
		return -1;
	}
	if (ibv_query_gid(s->ctx, 1, gid_index, &s->gid)) {
		snprintf(why, why_len, "GID %d of %s", gid_index, name);
		return -1;
	}
	return 0;
}

/**
 * tlib_side_connect() - bring @s's QP to RTS towards @peer's
 * @s: this end
 * @peer: the other end
 * @gid_index: the GID @s sends from
 * @why: the reason on failure
 * @why_len: its size
 *
 * MTU 1024; the peer may read and write remotely.
 *
 * Return: 0, or -1 with @why set.
 */
int tlib_side_connect(struct tlib_side *s, const struct tlib_side *peer,
		      int gid_index, char *why, size_t why_len)
{
	struct tlib_rc_peer p = {
		.qpn = peer->qp->qp_num, .gid = peer->gid,
		.sgid_index = gid_index, .mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	const char *step;
	int ret = tlib_rc_connect(s->qp, &p, &step);

	if (ret)
		snprintf(why, why_len, "%s: %s", step, strerror(ret));
	return ret ? -1 : 0;
}

/**
 * tlib_sysfs_read() - a number from /sys/class/infiniband/@dev/@rel
 * @dev: the device
 * @rel: the file below it
 *
 * Return: the number, or -1 if the file cannot be read.
 */
long long tlib_sysfs_read(const char *dev, const char *rel)
{
	char path[256], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev, rel);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 0);
	fclose(f);
	return v;
}

/**
 * tlib_sysfs_write() - write @v to /sys/class/infiniband/@dev/@rel
 * @dev: the device
 * @rel: the file below it
 * @v: the number
 *
 * Return: 0, or -1 if the write was refused.
 */
int tlib_sysfs_write(const char *dev, const char *rel, long long v)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%lld\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/**
 * tlib_hw_counter() - port 1's hw counter @name of @dev
 * @dev: the device
 * @name: the counter
 *
 * The core caches hw counters for a few milliseconds: this waits that out
 * first.
 *
 * Return: the value, or -1.
 */
long long tlib_hw_counter(const char *dev, const char *name)
{
	char rel[128];

	usleep(25000);
	snprintf(rel, sizeof(rel), "ports/1/hw_counters/%s", name);
	return tlib_sysfs_read(dev, rel);
}
