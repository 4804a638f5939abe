// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_gid_check - may a device send from GID index N?  Takes an RC QP to
 * RTR and creates a UD address handle, both with source GID index N and the
 * device's own GID at N (or at index 0 when N is empty) as destination, and
 * says what each returned:
 *
 *   stl_gid_check -d DEV -g N
 *   GID_CHECK dev=DEV sgid_index=N gid=GID|none rtr=ERR ah=ERR
 *
 * ERR is 0 on success, else the errno's name (ENODATA, EINVAL, ...).
 * Exit status 0 when both results were printed, 2 on a setup failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "stl_tlib.h"

static int setup_failed(const char *what)
{
	printf("GID_CHECK setup failed: %s: %s\n", what, strerror(errno));
	return 2;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { 4, 4, 1, 1, 0 } };
	struct ibv_qp_attr qa = { 0 };
	struct ibv_ah_attr aa = { 0 };
	const char *dev = NULL;
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	union ibv_gid gid, dgid;
	char gtxt[INET6_ADDRSTRLEN] = "none";
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	int idx = -1, opt, rtr_err, ah_err;
	int have_gid;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'g':
			idx = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: stl_gid_check -d DEV -g N\n");
			return 2;
		}
	}
	if (!dev || idx < 0) {
		fprintf(stderr, "usage: stl_gid_check -d DEV -g N\n");
		return 2;
	}
	ctx = tlib_open_device(dev);
	if (!ctx)
		return setup_failed("ibv_open_device");
	if (ibv_query_port(ctx, 1, &port))
		return setup_failed("ibv_query_port");
	have_gid = !ibv_query_gid(ctx, 1, idx, &gid) &&
		   memcmp(&gid, &(union ibv_gid){}, sizeof(gid));
	if (have_gid) {
		inet_ntop(AF_INET6, gid.raw, gtxt, sizeof(gtxt));
		dgid = gid;
	} else if (ibv_query_gid(ctx, 1, 0, &dgid)) {
		return setup_failed("ibv_query_gid 0");
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return setup_failed("ibv_alloc_pd");
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!cq)
		return setup_failed("ibv_create_cq");
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return setup_failed("ibv_create_qp");
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return setup_failed("ibv_modify_qp INIT");

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = qp->qp_num;
	qa.rq_psn = 1;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.grh.dgid = dgid;
	qa.ah_attr.grh.sgid_index = idx;
	qa.ah_attr.grh.hop_limit = 1;
	qa.ah_attr.port_num = 1;
	rtr_err = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
				IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER);

	aa.is_global = 1;
	aa.grh.dgid = dgid;
	aa.grh.sgid_index = idx;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	errno = 0;
	ah = ibv_create_ah(pd, &aa);
	ah_err = ah ? 0 : (errno ? errno : EIO);

	printf("GID_CHECK dev=%s sgid_index=%d gid=%s rtr=%s ah=%s\n", dev, idx,
	       gtxt, tlib_errno_name(rtr_err), tlib_errno_name(ah_err));
	if (ah)
		ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
