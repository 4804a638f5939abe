// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tests for spraysim: expectations are computed by hand in the comments.
 * usage: test_spraysim PATH_TO_SPRAYSIM_BINARY
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "spraysim.h"

static int fails;

static void check(int ok, const char *name, const char *fmt, double a,
		  double b)
{
	printf("%s: %s", ok ? "PASS" : "FAIL", name);
	if (fmt)
		printf(fmt, a, b);
	printf("\n");
	fails += !ok;
}

static int rel_eq(double a, double b, double tol)
{
	return fabs(a - b) <= tol * fabs(b);
}

static double jct(const struct spray_cfg *c, int mode)
{
	struct spray_result r;
	double j;

	if (spray_run(c, mode, &r))
		return -1;
	j = r.jct_s;
	spray_result_free(&r);
	return j;
}

/* 2 leaves x 4 spines, 4 hosts each: ring = 4 conns each way. */
static void fabric2(struct spray_cfg *c)
{
	spray_cfg_default(c);
	c->leaves = 2;
	c->spines = 4;
	c->hosts = 4;
	c->host_gbps = 400;
	c->uplink_gbps = 100;
	c->bytes = 1000000000;	/* 1e9 B at 100 Gbit/s = 80 ms */
}

int main(int argc, char **argv)
{
	struct spray_cfg c;
	double j, ideal = 0.08;
	char cmd[512];
	int seed, i;

	/* 1: one flow, no contention (L=2, H=1: ring of 2) */
	spray_cfg_default(&c);
	c.leaves = 2;
	c.hosts = 1;
	c.spines = 1;
	c.host_gbps = 25;
	c.uplink_gbps = 100;
	c.bytes = 123456789;
	j = jct(&c, SPRAY_MODE_ECMP);
	check(rel_eq(j, 123456789.0 * 8 / 25e9, 1e-9),
	      "single flow JCT = bytes*8/rate", " (%.12g vs %.12g)", j,
	      123456789.0 * 8 / 25e9);

	/* 2: links A (cap 10), B (cap 4); f0 on A+B, f1 on A, f2 on B:
	 * B gives f0 = f2 = 2, then A leaves f1 = 8.
	 */
	{
		double cap[2] = { 10, 4 }, w[3] = { 1, 1, 1 }, r[3];
		int off[4] = { 0, 2, 3, 4 }, lk[4] = { 0, 1, 0, 1 };

		spray_maxmin(2, cap, 3, w, off, lk, r);
		check(r[0] == 2 && r[1] == 8 && r[2] == 2,
		      "max-min textbook 3 flows/2 links", " (f1 %g, f0 %g)",
		      r[1], r[0]);
		/* weighted: f1 weight 3 on A with f0 (weight 1), B big */
		cap[1] = 100;
		w[1] = 3;
		spray_maxmin(2, cap, 3, w, off, lk, r);
		check(r[0] == 2.5 && r[1] == 7.5 && r[2] == 97.5,
		      "weighted max-min", " (f0 %g, f1 %g)", r[0], r[1]);
	}

	/* 3: polarization: find a seed whose ECMP max spine load is 2 */
	fabric2(&c);
	for (seed = 1; seed < 1000; seed++) {
		int n[2][4] = { { 0 } }, mx = 0, s;

		c.seed = seed;
		for (i = 0; i < 8; i++) {
			s = spray_flow_hash(&c, i, (i + 1) % 8);
			if (++n[i % 2][s] > mx)
				mx = n[i % 2][s];
		}
		if (mx == 2)
			break;
	}
	printf("info: polarization seed %d\n", seed);
	j = jct(&c, SPRAY_MODE_ECMP);
	check(rel_eq(j, 2 * ideal, 1e-9), "ecmp polarized JCT = 2x ideal",
	      " (%g vs %g)", j, 2 * ideal);
	j = jct(&c, SPRAY_MODE_SPRAY);
	check(rel_eq(j, ideal, 1e-9), "spray 4 paths JCT = ideal",
	      " (%g vs %g)", j, ideal);

	/* 4: failover */
	fabric2(&c);
	c.nfail_link = 1;
	c.fail_link[0][0] = 0;
	c.fail_link[0][1] = 0;
	c.detect_ms = 0;
	j = jct(&c, SPRAY_MODE_FAILOVER);
	check(rel_eq(j, ideal * 4 / 3, 1e-9),
	      "failed uplink from start: JCT = 4/3 ideal", " (%g vs %g)", j,
	      ideal * 4 / 3);
	j = jct(&c, SPRAY_MODE_SPRAY);
	check(rel_eq(j, ideal, 1e-9), "spray mode ignores failures",
	      " (%g vs %g)", j, ideal);
	/* fail at 20 ms: 0.75e9 B left, 1/4 stuck on the dead path.
	 * d = 1 ms: JCT = 20 + (4/3) * 60 = 100 ms (d hidden).
	 * d = 70 ms: live 3/4 done at 80 ms, stuck 0.1875e9 B resent at
	 * 75 Gbit/s from 90 ms: 20 ms more, JCT = 110 ms.
	 */
	c.fail_at_ms = 20;
	c.detect_ms = 1;
	j = jct(&c, SPRAY_MODE_FAILOVER);
	check(rel_eq(j, 0.100, 1e-9), "mid-transfer failure, d=1ms",
	      " (%g vs %g)", j, 0.1);
	c.detect_ms = 70;
	j = jct(&c, SPRAY_MODE_FAILOVER);
	check(rel_eq(j, 0.110, 1e-9), "mid-transfer failure, d=70ms",
	      " (%g vs %g)", j, 0.11);
	/* ECMP, 1 conn per spine each way (find seed): conn on spine 0
	 * stalls 20..90 ms holding 0.75e9 B, rehashed at 90 ms to a spine
	 * it shares with one other conn (done at 80 ms): alone, 60 ms
	 * more -> 150 ms.
	 */
	for (seed = 1; seed < 5000; seed++) {
		int n[2][4] = { { 0 } }, mx = 0, s;

		c.seed = seed;
		for (i = 0; i < 8; i++) {
			s = spray_flow_hash(&c, i, (i + 1) % 8);
			if (++n[i % 2][s] > mx)
				mx = n[i % 2][s];
		}
		if (mx == 1)
			break;
	}
	j = jct(&c, SPRAY_MODE_ECMP);
	check(rel_eq(j, 0.150, 1e-9), "ecmp stall + rehash, d=70ms",
	      " (%g vs %g)", j, 0.15);

	/* 5: aggregation exact (spray with P = S merges all flows) */
	{
		static const double hg[] = { 100, 25 };
		int k, m;

		for (k = 0; k < 2; k++) {
			for (m = SPRAY_MODE_SPRAY; m <= SPRAY_MODE_FAILOVER;
			     m++) {
				struct spray_result a, b;

				spray_cfg_default(&c);
				c.leaves = 4;
				c.spines = 4;
				c.hosts = 3;
				c.paths = 4;
				c.host_gbps = hg[k];
				c.traffic = SPRAY_TRAFFIC_ALLTOALL;
				c.bytes = 1000000;
				c.nfail_link = 1;
				c.fail_link[0][0] = 1;
				c.fail_link[0][1] = 2;
				c.fail_at_ms = 0.05;
				c.detect_ms = 0.1;
				spray_run(&c, m, &a);
				c.aggregate = 0;
				spray_run(&c, m, &b);
				snprintf(cmd, sizeof(cmd),
					 "aggregate == no-aggregate (%s, host %g, %d vs %d conns)",
					 spray_mode_name(m), hg[k],
					 (int)a.sim_conns, (int)b.sim_conns);
				check(a.aggregated && !b.aggregated &&
				      rel_eq(a.jct_s, b.jct_s, 1e-9) &&
				      rel_eq(a.util, b.util, 1e-9), cmd,
				      " (%.12g vs %.12g)", a.jct_s, b.jct_s);
				spray_result_free(&a);
				spray_result_free(&b);
			}
		}
	}

	/* 6: scale */
	{
		struct spray_result r;
		int rc;

		spray_cfg_default(&c);
		c.leaves = 512;
		c.hosts = 32;
		c.spines = 32;
		rc = spray_run(&c, SPRAY_MODE_SPRAY, &r);
		printf("info: ring 16384 hosts spray: %.3f s, %d events\n",
		       r.runtime_s, (int)r.events);
		check(!rc && r.runtime_s < 30 && isfinite(r.jct_s),
		      "ring 16384 hosts < 30 s", " (%g s, limit %g)",
		      r.runtime_s, 30);
		spray_result_free(&r);
		rc = spray_run(&c, SPRAY_MODE_ECMP, &r);
		printf("info: ring 16384 hosts ecmp: %.3f s\n", r.runtime_s);
		check(!rc && r.runtime_s < 30, "ring 16384 hosts ecmp < 30 s",
		      " (%g s, limit %g)", r.runtime_s, 30);
		spray_result_free(&r);
	}

	/* 7: bad input exits 2 with a message */
	if (argc > 1) {
		static const char *const badargs[] = {
			"--spines 0", "--paths 5 --spines 4", "--bytes 0",
			"--bytes 99999999999999999999999", "--leaves x",
			"--host-gbps -1", "--mode bogus", "--fail-link 9:0",
			"--traffic alltoall --leaves 4096 --hosts-per-leaf 2",
			"--fail 100", "--detect-ms nan", "--frob",
			"--calib /nonexistent/calib", "--leaves 1 --hosts-per-leaf 1",
		};

		for (i = 0; i < (int)(sizeof(badargs) / sizeof(*badargs));
		     i++) {
			int st;

			snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1",
				 argv[1], badargs[i]);
			st = system(cmd);
			snprintf(cmd, sizeof(cmd), "bad input exits 2: %s",
				 badargs[i]);
			check(WIFEXITED(st) && WEXITSTATUS(st) == 2, cmd,
			      NULL, 0, 0);
		}
	}
	printf("%s: %d failure(s)\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
