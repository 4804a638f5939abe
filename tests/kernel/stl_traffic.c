// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_traffic - keep RC RDMA WRITE traffic going between two devices of
 * this host until a time limit or the first error, for lifecycle tests
 * (device deleted, parent removed, process killed while traffic runs).
 *
 *   stl_traffic -a DEV_A -b DEV_B [-g GID_INDEX] [-s SECONDS] [-m MIB] [-r FILE]
 *
 * -m MIB is registered on each side (pinned pages to watch); FILE is
 * created once the first write has completed.  Exit status: 0 when the
 * time limit passed without error, 3 on the first verbs error or device
 * event (the message says which), 2 on a setup failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)

struct dev {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
	struct ibv_port_attr port;
};

static int gid_index = 1;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die_setup(const char *what, const char *dev)
{
	printf("TRAFFIC setup failed: %s on %s: %s\n", what, dev, strerror(errno));
	return 2;
}

static int open_dev(struct dev *d, size_t len)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { 16, 16, 1, 1, 0 } };

	d->ctx = tlib_open_device(d->name);
	if (!d->ctx)
		return die_setup("ibv_open_device", d->name);
	if (ibv_query_port(d->ctx, 1, &d->port) ||
	    ibv_query_gid(d->ctx, 1, gid_index, &d->gid))
		return die_setup("query port/gid", d->name);
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		return die_setup("ibv_alloc_pd", d->name);
	d->cq = ibv_create_cq(d->ctx, 32, NULL, NULL, 0);
	if (!d->cq)
		return die_setup("ibv_create_cq", d->name);
	ia.send_cq = ia.recv_cq = d->cq;
	d->qp = ibv_create_qp(d->pd, &ia);
	if (!d->qp)
		return die_setup("ibv_create_qp", d->name);
	d->buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d->buf == MAP_FAILED)
		return die_setup("mmap", d->name);
	memset(d->buf, 0x11, len);
	d->mr = ibv_reg_mr(d->pd, d->buf, len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	if (!d->mr)
		return die_setup("ibv_reg_mr", d->name);
	return 0;
}

static int connect_qp(struct dev *d, struct dev *peer)
{
	struct tlib_rc_peer p = {
		.qpn = peer->qp->qp_num, .gid = peer->gid,
		.sgid_index = gid_index, .access = IBV_ACCESS_REMOTE_WRITE,
		.mtu = d->port.active_mtu < peer->port.active_mtu ?
		       d->port.active_mtu : peer->port.active_mtu,
	};
	const char *step;

	errno = tlib_rc_connect(d->qp, &p, &step);
	return errno ? die_setup(step, d->name) : 0;
}

/* A pending async event (device fatal, port error, ...) ends the run. */
static int async_event(struct dev *d)
{
	struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&pfd, 1, 0) != 1)
		return 0;
	if (ibv_get_async_event(d->ctx, &ev))
		return 0;
	printf("TRAFFIC error: async event on %s: %s\n", d->name,
	       ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	return ev.event_type == IBV_EVENT_DEVICE_FATAL ||
	       ev.event_type == IBV_EVENT_PORT_ERR ||
	       ev.event_type == IBV_EVENT_QP_FATAL;
}

int main(int argc, char **argv)
{
	struct dev a = { 0 }, b = { 0 };
	double secs = 10, end, last_report;
	size_t len = 4 << 20;
	const char *ready = NULL;
	unsigned long writes = 0;
	int opt;

	while ((opt = getopt(argc, argv, "a:b:g:s:m:r:")) != -1) {
		switch (opt) {
		case 'a':
			a.name = optarg;
			break;
		case 'b':
			b.name = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 's':
			secs = atof(optarg);
			break;
		case 'm':
			len = (size_t)atoi(optarg) << 20;
			break;
		case 'r':
			ready = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s -a DEV -b DEV [-g GIDX] [-s SECONDS] "
				"[-m MIB] [-r READY_FILE]\n", argv[0]);
			return 2;
		}
	}
	if (!a.name || !b.name || len < CHUNK)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (open_dev(&a, len) || open_dev(&b, len) || connect_qp(&a, &b) ||
	    connect_qp(&b, &a))
		return 2;

	end = now_s() + secs;
	last_report = now_s();
	while (now_s() < end) {
		size_t off = (writes * CHUNK) % len;
		struct ibv_sge sge = { (uintptr_t)(a.buf + off), CHUNK, a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = writes, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)(b.buf + off), b.mr->rkey },
		};
		struct ibv_send_wr *bad;
		struct ibv_wc wc;
		double deadline;
		int rc, got = 0;

		rc = ibv_post_send(a.qp, &wr, &bad);
		if (rc) {
			printf("TRAFFIC error: ibv_post_send: %s after %lu writes\n",
			       strerror(rc), writes);
			return 3;
		}
		deadline = now_s() + 5;
		while (!got) {
			got = ibv_poll_cq(a.cq, 1, &wc);
			if (got < 0) {
				printf("TRAFFIC error: ibv_poll_cq: %s after %lu writes\n",
				       strerror(errno), writes);
				return 3;
			}
			if (!got && (async_event(&a) || async_event(&b)))
				return 3;
			if (!got && now_s() > deadline) {
				printf("TRAFFIC error: no completion for 5 s after %lu writes\n",
				       writes);
				return 3;
			}
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("TRAFFIC error: completion status %s after %lu writes\n",
			       ibv_wc_status_str(wc.status), writes);
			return 3;
		}
		if (!writes && ready)
			close(open(ready, O_CREAT | O_WRONLY, 0644));
		writes++;
		if (now_s() - last_report > 2) {
			printf("TRAFFIC running: %lu writes\n", writes);
			last_report = now_s();
		}
	}
	printf("TRAFFIC done: %lu writes of %d bytes\n", writes, CHUNK);
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	ibv_dereg_mr(a.mr);
	ibv_dereg_mr(b.mr);
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);
	ibv_dealloc_pd(a.pd);
	ibv_dealloc_pd(b.pd);
	ibv_close_device(a.ctx);
	ibv_close_device(b.ctx);
	return 0;
}
