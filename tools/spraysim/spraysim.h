/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * spraysim - flow-level leaf-spine simulator: ECMP vs multipath spraying.
 * Interface shared by spraysim.c and its test program.
 */
#ifndef SPRAYSIM_H
#define SPRAYSIM_H

#include <stdint.h>
#include <stdio.h>

#define SPRAY_MAX_FAIL_LINKS	64
#define SPRAY_MAX_PATHS		16

enum spray_mode {
	SPRAY_MODE_ECMP,
	SPRAY_MODE_SPRAY,
	SPRAY_MODE_FAILOVER,
	SPRAY_NMODES,
};

enum spray_traffic {
	SPRAY_TRAFFIC_RING,
	SPRAY_TRAFFIC_ALLTOALL,
};

struct spray_cfg {
	int leaves;
	int spines;
	int hosts;			/* hosts per leaf */
	double host_gbps;
	double uplink_gbps;
	uint64_t bytes;
	int paths;
	uint64_t seed;
	int traffic;
	int nfail;			/* random cables to fail */
	int nfail_link;
	int fail_link[SPRAY_MAX_FAIL_LINKS][2];
	double fail_at_ms;
	double detect_ms;
	double path_overhead;
	int nmodes;
	int modes[SPRAY_NMODES];
	int aggregate;
	int buckets;
	const char *csv;
	const char *timeline;
	const char *gnuplot;
	const char *calib;
};

struct spray_seg {
	double t_end;			/* seconds */
	double gbps;			/* aggregate goodput until t_end */
};

struct spray_result {
	int mode;
	double jct_s;			/* INFINITY if connections stranded */
	double util;			/* mean leaf<->spine utilisation, 0..1 */
	double max_uplink;		/* busiest leaf<->spine direction, 0..1 */
	uint64_t conns;			/* connections simulated (original) */
	uint64_t sim_conns;		/* after aggregation */
	uint64_t events;
	uint64_t stranded;
	int aggregated;
	double runtime_s;
	size_t nseg;
	struct spray_seg *seg;
};

void spray_cfg_default(struct spray_cfg *c);
/* Returns 0, or 2 after printing a message to @err. */
int spray_parse_args(struct spray_cfg *c, int argc, char **argv, FILE *err);
int spray_load_calib(struct spray_cfg *c, const char *path, FILE *err);
/* Returns 0, 1 on allocation failure, 2 if the instance is too large. */
int spray_run(const struct spray_cfg *c, int mode, struct spray_result *r);
void spray_result_free(struct spray_result *r);
const char *spray_mode_name(int mode);
/* The spine that a flow src->dst (global host ids) hashes to. */
int spray_flow_hash(const struct spray_cfg *c, int src, int dst);

/*
 * Weighted max-min fairness by progressive filling.
 * Flow f has weight w[f] and crosses links lk[off[f] .. off[f+1]-1];
 * link l has capacity cap[l].  Rates are written to rate[].
 * Returns 0 or -1 on allocation failure.
 */
int spray_maxmin(int nlinks, const double *cap, int nflows,
		 const double *w, const int *off, const int *lk, double *rate);

#endif
