// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_mr_hold - register many MRs on one device and hold them.
 *
 *   stl_mr_hold -d DEV -n COUNT -r READY_FILE [-t SECONDS]
 *
 * Registers COUNT MRs, each over its own page of one buffer, writes COUNT
 * to READY_FILE and then waits, holding them, until the device reports a
 * fatal event (it was removed: exit 3) or SECONDS pass (default 300: exit
 * 0).  For scenarios that tear a device down under a process's MRs.
 * Exit 1 when the registrations fail, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stl_tlib.h"

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s -d DEV -n COUNT -r READY_FILE [-t SECONDS]\n",
		prog);
	return 2;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *ready = NULL;
	long count = 0, seconds = 300;
	struct ibv_async_event ev;
	struct ibv_context *ctx;
	struct ibv_mr **mrs;
	struct ibv_pd *pd;
	struct timespec t0, t1;
	struct pollfd pfd;
	uint8_t *buf;
	FILE *f;
	int opt;

	while ((opt = getopt(argc, argv, "d:n:r:t:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			count = atol(optarg);
			break;
		case 'r':
			ready = optarg;
			break;
		case 't':
			seconds = atol(optarg);
			break;
		default:
			return usage(argv[0]);
		}
	}
	if (!dev || !ready || count <= 0)
		return usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);

	ctx = tlib_open_device(dev);
	if (!ctx) {
		fprintf(stderr, "cannot open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	mrs = calloc(count, sizeof(*mrs));
	buf = mmap(NULL, count * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!pd || !mrs || buf == MAP_FAILED) {
		fprintf(stderr, "%s: PD, array or buffer allocation failed\n", dev);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < count; i++) {
		mrs[i] = ibv_reg_mr(pd, buf + i * 4096, 4096,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mrs[i]) {
			fprintf(stderr, "%s: ibv_reg_mr #%ld failed: %s\n", dev, i,
				strerror(errno));
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: %ld MRs registered in %ld ms\n", dev, count,
	       (long)((t1.tv_sec - t0.tv_sec) * 1000 +
		      (t1.tv_nsec - t0.tv_nsec) / 1000000));
	f = fopen(ready, "w");
	if (!f || fprintf(f, "%ld\n", count) < 0 || fclose(f)) {
		fprintf(stderr, "cannot write %s\n", ready);
		return 1;
	}

	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, (int)seconds * 1000) > 0) {
		if (ibv_get_async_event(ctx, &ev))
			break;
		printf("%s: async event %s\n", dev, ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			return 3;
	}
	/* still there: release everything the normal way */
	for (long i = 0; i < count; i++)
		ibv_dereg_mr(mrs[i]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
