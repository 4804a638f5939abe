// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_cq_memcg: CQs created on command, for the memory cgroup scenario.
 *
 *   stl_cq_memcg -d DEV -n NCQ -c CQES
 *
 * Opens DEV and prints "open".  Then, for each line read on stdin:
 * "create" creates NCQ CQs of CQES entries each and prints "created TOTAL"
 * (the entries the device gave); "destroy" destroys them and prints
 * "destroyed"; end of input exits.  The scenario moves the process into a
 * cgroup after "open" and reads memory.current between the steps: the
 * kernel memory behind the CQs must be charged to the cgroup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"

#define MAX_CQS 64

int main(int argc, char **argv)
{
	const char *dev = "stellar0";
	struct ibv_cq *cq[MAX_CQS];
	struct ibv_context *ctx;
	int ncq = 4, cqes = 32767, c, i;
	long total;
	char line[64];

	while ((c = getopt(argc, argv, "d:n:c:")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			ncq = atoi(optarg);
			break;
		case 'c':
			cqes = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (ncq < 1 || ncq > MAX_CQS)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = tlib_open_device(dev);
	if (!ctx) {
		printf("error open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	printf("open\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "create", 6)) {
			total = 0;
			for (i = 0; i < ncq; i++) {
				cq[i] = ibv_create_cq(ctx, cqes, NULL, NULL, 0);
				if (!cq[i]) {
					printf("error ibv_create_cq %d: %s\n", i,
					       strerror(errno));
					return 1;
				}
				total += cq[i]->cqe;
			}
			printf("created %ld\n", total);
		} else if (!strncmp(line, "destroy", 7)) {
			for (i = 0; i < ncq; i++)
				if (ibv_destroy_cq(cq[i])) {
					printf("error ibv_destroy_cq %d\n", i);
					return 1;
				}
			printf("destroyed\n");
		}
	}
	ibv_close_device(ctx);
	return 0;
}
