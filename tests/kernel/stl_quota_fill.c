// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_quota_fill - create objects of one kind on a device until N exist or
 * a creation fails, then say how many were made and why it stopped:
 *
 *   stl_quota_fill -d DEV -k pd|cq|qp|srq|mr|mw|ah -n N [-g GID_INDEX]
 *   QUOTA_FILL dev=DEV kind=K made=M err=ERR
 *
 * ERR is 0 when all N were made, else the errno's name of the failed call.
 * Every object is destroyed before exit.  Exit status 0, 2 on a setup
 * failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stl_tlib.h"

static char page[4096];

int main(int argc, char **argv)
{
	const char *dev = NULL, *kind = NULL;
	int n = 0, gidx = 1, opt, made, err = 0;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	void **objs;

	while ((opt = getopt(argc, argv, "d:k:n:g:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'k':
			kind = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (!dev || !kind || n <= 0)
		goto usage;
	objs = calloc(n, sizeof(*objs));
	ctx = tlib_open_device(dev);
	if (!objs || !ctx) {
		printf("QUOTA_FILL setup failed: open %s: %s\n", dev, strerror(errno));
		return 2;
	}
	/* The PD and CQ the other kinds need count as one of theirs. */
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!pd || !cq || ibv_query_gid(ctx, 1, gidx, &gid)) {
		printf("QUOTA_FILL setup failed: PD, CQ or GID: %s\n", strerror(errno));
		return 2;
	}
	for (made = 0; made < n; made++) {
		void *o = NULL;

		errno = 0;
		if (!strcmp(kind, "pd")) {
			o = ibv_alloc_pd(ctx);
		} else if (!strcmp(kind, "cq")) {
			o = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		} else if (!strcmp(kind, "qp")) {
			struct ibv_qp_init_attr ia = {
				.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				.cap = { 1, 1, 1, 1, 0 },
			};

			o = ibv_create_qp(pd, &ia);
		} else if (!strcmp(kind, "srq")) {
			struct ibv_srq_init_attr sa = { .attr = { 4, 1, 0 } };

			o = ibv_create_srq(pd, &sa);
		} else if (!strcmp(kind, "mr")) {
			o = ibv_reg_mr(pd, page, sizeof(page), IBV_ACCESS_LOCAL_WRITE);
		} else if (!strcmp(kind, "mw")) {
			o = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
		} else if (!strcmp(kind, "ah")) {
			struct ibv_ah_attr aa = {
				.is_global = 1, .port_num = 1,
				.grh = { .dgid = gid, .sgid_index = gidx, .hop_limit = 1 },
			};

			o = ibv_create_ah(pd, &aa);
		} else {
			goto usage;
		}
		if (!o) {
			err = errno ? errno : EIO;
			break;
		}
		objs[made] = o;
	}
	printf("QUOTA_FILL dev=%s kind=%s made=%d err=%s\n", dev, kind, made,
	       tlib_errno_name(err));
	fflush(stdout);
	while (made--) {
		if (!strcmp(kind, "pd"))
			ibv_dealloc_pd(objs[made]);
		else if (!strcmp(kind, "cq"))
			ibv_destroy_cq(objs[made]);
		else if (!strcmp(kind, "qp"))
			ibv_destroy_qp(objs[made]);
		else if (!strcmp(kind, "srq"))
			ibv_destroy_srq(objs[made]);
		else if (!strcmp(kind, "mr"))
			ibv_dereg_mr(objs[made]);
		else if (!strcmp(kind, "mw"))
			ibv_dealloc_mw(objs[made]);
		else
			ibv_destroy_ah(objs[made]);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(objs);
	return 0;
usage:
	fprintf(stderr, "usage: stl_quota_fill -d DEV -k pd|cq|qp|srq|mr|mw|ah -n N [-g GID_INDEX]\n");
	return 2;
}
