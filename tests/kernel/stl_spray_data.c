// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_spray_data - RDMA WRITEs and READs of one RC QP between two Stellar
 * devices of this host, checked byte for byte, for the spray data path:
 * large requests are cut into chunks over the QP's paths.
 *
 *   stl_spray_data -a DEV_A -b DEV_B [-g GID_INDEX] [-s SECONDS] [-r FILE]
 *                  [-H HOLD_FILE] [-u | -e]
 *
 * It waits until both devices count the QP pair's paths up
 * (spray_qps_up), then runs rounds until SECONDS have passed (one round
 * at least).  Each round, with a new pattern:
 *  - WRITE: requests of several sizes (one with two SGEs, some below a
 *    chunk), a few unsignaled, then an RDMA WRITE with immediate data;
 *    when B's receive completes, every byte written before it must be
 *    there (an immediate follows all bytes posted before it);
 *  - completions: each signaled request completes once, in post order,
 *    with its own wr_id, opcode and byte count;
 *  - READ: A reads B's buffer back in large READs and compares; each
 *    completes in post order with its byte count, also in the odd rounds,
 *    where the four READs (an uncut one among them) share one wr_id and
 *    are polled only once all of them had time to complete.
 * With -u instead, completions left unpolled (QPs of 16 send WRs, CQs of
 * 1024): 600 signaled 4 KiB WRITEs are posted, none polled.  A completion
 * leaves the kernel for the CQ's ring as it happens (with the byte count
 * QP 0 kept for it) and frees its send queue slot, as on rxe: every
 * ENOMEM (a full send ring) must clear by waiting.  Then four cut 1 MiB
 * WRITEs; every completion in post order with its byte count, the bytes
 * at B, and posting again once all are polled.
 * With -e instead, the QP moved to the error state while QP 0 is full
 * (QPs of 16 send WRs): a SEND that B has no receive for (RNR, retried
 * for ever) holds QP 0, 4 KiB WRITEs fill it until ENOMEM, and four cut
 * 1 MiB WRITEs (posted first, after the SEND: the send ring holds no
 * more than QP 0) wait for it; then A's QP goes to ERROR.  Every request posted must complete once, flushed, in post
 * order (none lost with the paths), and no completion more; then the QP
 * goes to RESET.
 * FILE is created once the first round passed.  The rounds end early once
 * HOLD_FILE exists (-H, after two rounds at least); the QPs are kept until
 * it does.  Every failure prints
 * "SPRAYDATA FAIL <what>"; exit 0 when all rounds passed, 3 on a failure,
 * 2 on a setup failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stl_tlib.h"

#define BUF_LEN		(16u << 20)
#define MAX_WRS		64

struct dev {
	struct tlib_side s;
	const char *name;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A PD, a CQ, an RC QP and BUF_LEN registered for remote access. */
static int unpolled, errstate;

static int open_dev(struct dev *d, int gid_index)
{
	const struct ibv_qp_cap cap = { .max_send_wr = unpolled || errstate ?
						       16 : MAX_WRS,
					.max_recv_wr = 8, .max_send_sge = 2,
					.max_recv_sge = 1 };
	char why[160];

	if (tlib_side_open_caps(&d->s, d->name, gid_index, &cap, 0,
				unpolled || errstate ? 1024 : 2 * MAX_WRS, why,
				sizeof(why))) {
		printf("SPRAYDATA setup failed: %s\n", why);
		return 2;
	}
	d->buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d->buf == MAP_FAILED) {
		printf("SPRAYDATA setup failed: mmap: %s\n", strerror(errno));
		return 2;
	}
	d->mr = ibv_reg_mr(d->s.pd, d->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!d->mr) {
		printf("SPRAYDATA setup failed: ibv_reg_mr on %s: %s\n",
		       d->name, strerror(errno));
		return 2;
	}
	return 0;
}

static int connect_qp(struct dev *d, struct dev *peer, int gid_index)
{
	char why[160];

	if (!tlib_side_connect(&d->s, &peer->s, gid_index, why, sizeof(why)))
		return 0;
	printf("SPRAYDATA setup failed: %s on %s\n", why, d->name);
	return 2;
}

/* One completion of @d's CQ within 10 s; -1 on none or a poll error. */
static int poll_one(struct dev *d, struct ibv_wc *wc)
{
	double deadline = now_s() + 10;
	int n;

	while (!(n = ibv_poll_cq(d->s.cq, 1, wc)) && now_s() < deadline)
		;
	if (n == 1)
		return 0;
	printf("SPRAYDATA FAIL %s: %s\n", d->name,
	       n ? "ibv_poll_cq failed" : "no completion within 10 s");
	return -1;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = seed >> 16;
	}
}

struct req {
	size_t off;	/* in both buffers */
	size_t len;
	int sges;
	int signaled;
};

/* Sizes chosen around the chunk sizes (16 KiB to 1 MiB). */
static const struct req reqs[] = {
	{ 0, 1 << 20, 1, 1 },
	{ 1 << 20, 4096, 1, 0 },
	{ (1 << 20) + 4096, (3 << 20) + 4096 + 123, 2, 1 },
	{ 5 << 20, 128 << 10, 1, 0 },
	{ (5 << 20) + (128 << 10), 64, 1, 1 },
	{ 6 << 20, 2 << 20, 2, 0 },
	{ 8 << 20, (512 << 10) + 7, 1, 1 },
	{ 9 << 20, 6 << 20, 1, 1 },
};
#define NREQ (sizeof(reqs) / sizeof(reqs[0]))

static int post_rdma(struct dev *a, struct dev *b, const struct req *r,
		     enum ibv_wr_opcode op, uint64_t wr_id, int signaled)
{
	size_t half = r->sges > 1 ? r->len / 3 : r->len;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)(a->buf + r->off), half, a->mr->lkey },
		{ (uintptr_t)(a->buf + r->off + half), r->len - half,
		  a->mr->lkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = r->sges > 1 ? 2 : 1,
		.opcode = op, .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { (uintptr_t)(b->buf + r->off), b->mr->rkey },
	};
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(a->s.qp, &wr, &bad);

	if (rc)
		printf("SPRAYDATA FAIL ibv_post_send %s wr %llu: %s\n",
		       op == IBV_WR_RDMA_READ ? "READ" : "WRITE",
		       (unsigned long long)wr_id, strerror(rc));
	return rc ? -1 : 0;
}

/*
 * A's signaled completions, in post order: wr_ids @ids[0..n), each with
 * its request's byte count @lens[i] (as rxe reports it: the request's
 * length, for WRITEs too).
 */
static int expect_order(struct dev *a, const uint64_t *ids,
			const uint32_t *lens, int n, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < n; i++) {
		if (poll_one(a, &wc))
			return -1;
		if (wc.status != IBV_WC_SUCCESS) {
			printf("SPRAYDATA FAIL wr %llu: status %s\n",
			       (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
			return -1;
		}
		if (wc.wr_id != ids[i] || wc.opcode != op) {
			printf("SPRAYDATA FAIL completion %d: wr_id %llu opcode %d, want wr_id %llu opcode %d (post order)\n",
			       i, (unsigned long long)wc.wr_id, wc.opcode,
			       (unsigned long long)ids[i], op);
			return -1;
		}
		if (wc.byte_len != lens[i]) {
			printf("SPRAYDATA FAIL wr %llu: byte_len %u, want %u\n",
			       (unsigned long long)wc.wr_id, wc.byte_len,
			       lens[i]);
			return -1;
		}
	}
	return 0;
}

static int compare(const char *what, const uint8_t *got, const uint8_t *want,
		   size_t len, unsigned int round)
{
	size_t i;

	if (!memcmp(got, want, len))
		return 0;
	for (i = 0; i < len && got[i] == want[i]; i++)
		;
	printf("SPRAYDATA FAIL round %u %s: byte %zu of %zu differs (0x%02x, want 0x%02x)\n",
	       round, what, i, len, got[i], want[i]);
	return -1;
}

static int round_write(struct dev *a, struct dev *b, unsigned int round)
{
	uint64_t ids[NREQ + 1];
	uint32_t lens[NREQ + 1];
	struct ibv_sge rsge = { (uintptr_t)b->buf, 0, b->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 0xbeef, .sg_list = &rsge,
				   .num_sge = 1 };
	struct ibv_sge fsge = { (uintptr_t)(a->buf + BUF_LEN - 8), 8,
				a->mr->lkey };
	struct ibv_send_wr imm = {
		.wr_id = 1000 + round, .sg_list = &fsge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(round),
		.wr.rdma = { (uintptr_t)(b->buf + BUF_LEN - 8), b->mr->rkey },
	};
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	unsigned int i;
	int n = 0;

	fill(a->buf, BUF_LEN, round * 7919 + 1);
	memset(b->buf, 0, BUF_LEN);
	if (ibv_post_recv(b->s.qp, &rwr, &rbad)) {
		printf("SPRAYDATA FAIL ibv_post_recv\n");
		return -1;
	}
	for (i = 0; i < NREQ; i++) {
		if (post_rdma(a, b, &reqs[i], IBV_WR_RDMA_WRITE, round * 100 + i,
			      reqs[i].signaled))
			return -1;
		if (reqs[i].signaled) {
			lens[n] = reqs[i].len;
			ids[n++] = round * 100 + i;
		}
	}
	if (ibv_post_send(a->s.qp, &imm, &bad)) {
		printf("SPRAYDATA FAIL ibv_post_send WRITE_WITH_IMM\n");
		return -1;
	}
	/* B: the immediate, and by then every byte before it. */
	if (poll_one(b, &wc))
		return -1;
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 0xbeef ||
	    wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    be32toh(wc.imm_data) != round) {
		printf("SPRAYDATA FAIL round %u: B's receive: status %s wr_id 0x%llx opcode %d imm %u\n",
		       round, ibv_wc_status_str(wc.status),
		       (unsigned long long)wc.wr_id, wc.opcode,
		       be32toh(wc.imm_data));
		return -1;
	}
	for (i = 0; i < NREQ; i++)
		if (compare("WRITE before the immediate",
			    b->buf + reqs[i].off, a->buf + reqs[i].off,
			    reqs[i].len, round))
			return -1;
	if (expect_order(a, ids, lens, n, IBV_WC_RDMA_WRITE))
		return -1;
	ids[0] = 1000 + round;
	lens[0] = 8;
	return expect_order(a, ids, lens, 1, IBV_WC_RDMA_WRITE);
}

static int round_read(struct dev *a, struct dev *b, unsigned int round)
{
	static const struct req rd[] = {
		{ 0, 4 << 20, 1, 1 },
		{ 4 << 20, (2 << 20) + 333, 2, 1 },
		{ 7 << 20, 8192, 1, 1 },
		{ 8 << 20, 8 << 20, 1, 1 },
	};
	uint64_t ids[4];
	uint32_t lens[4];
	unsigned int i;

	fill(b->buf, BUF_LEN, round * 104729 + 3);
	memset(a->buf, 0, BUF_LEN);
	for (i = 0; i < 4; i++) {
		/*
		 * Odd rounds give the four one wr_id (as perftest does): the
		 * uncut 8 KiB READ between cut ones keeps its own byte count.
		 */
		ids[i] = round & 1 ? 77 : 5000 + round * 10 + i;
		lens[i] = rd[i].len;
		if (post_rdma(a, b, &rd[i], IBV_WR_RDMA_READ, ids[i], 1))
			return -1;
	}
	/* Polled late: the last READ's tail is posted before any is polled. */
	if (round & 1)
		usleep(1500000);
	if (expect_order(a, ids, lens, 4, IBV_WC_RDMA_READ))
		return -1;
	for (i = 0; i < 4; i++)
		if (compare("READ", a->buf + rd[i].off, b->buf + rd[i].off,
			    rd[i].len, round))
			return -1;
	return 0;
}

#define UNPOLLED_MAX	600

/* Post a signaled WRITE of @len at @off (A to B); 0 or the errno. */
static int post_write(struct dev *a, struct dev *b, size_t off, size_t len,
		      uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)(a->buf + off), len, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)(b->buf + off), b->mr->rkey },
	};
	struct ibv_send_wr *bad;

	return ibv_post_send(a->s.qp, &wr, &bad);
}

/*
 * Post signaled 4 KiB WRITE number @n (wr_id @n).  Return: 0, ENOMEM, or
 * -1 on another error (printed).
 */
static int post_small(struct dev *a, struct dev *b, int n)
{
	int rc = post_write(a, b, (n % 256) * 4096, 4096, n);

	if (rc && rc != ENOMEM) {
		printf("SPRAYDATA FAIL post %d: %s, want success or ENOMEM\n",
		       n, strerror(rc));
		return -1;
	}
	return rc;
}

/* See -u at the top. */
static int unpolled_test(struct dev *a, struct dev *b)
{
	static uint64_t ids[UNPOLLED_MAX + 16];
	static uint32_t lens[UNPOLLED_MAX + 16];
	int n = 0, i, k, rc;
	double t0;

	fill(a->buf, BUF_LEN, 4242);
	memset(b->buf, 0, BUF_LEN);
	for (;;) {
		if (n == UNPOLLED_MAX)
			break;
		rc = post_small(a, b, n);
		/* A full send queue clears as its requests complete. */
		for (i = 0; rc == ENOMEM && i < 20; i++) {
			usleep(100000);
			rc = post_small(a, b, n);
		}
		if (rc == ENOMEM) {
			printf("SPRAYDATA FAIL post %d: ENOMEM for 2 s with none polled (completions go to the CQ's ring)\n",
			       n);
			return -1;
		}
		if (rc)
			return -1;
		ids[n] = n;
		lens[n++] = 4096;
		if (!(n % 8))
			usleep(20000);
	}
	printf("SPRAYDATA %d signaled requests taken with none polled\n", n);
	for (i = 0; i < 4; i++) {
		rc = post_write(a, b, (4 + i) << 20, 1 << 20, 9000 + i);
		/* A ring's slots free as QP 0 completes (see -u above). */
		for (k = 0; rc == ENOMEM && k < 20; k++) {
			usleep(100000);
			rc = post_write(a, b, (4 + i) << 20, 1 << 20, 9000 + i);
		}
		if (rc) {
			printf("SPRAYDATA FAIL cut WRITE %d: %s\n", i,
			       strerror(rc));
			return -1;
		}
		ids[n] = 9000 + i;
		lens[n++] = 1 << 20;
	}
	usleep(500000);
	t0 = now_s();
	if (expect_order(a, ids, lens, n, IBV_WC_RDMA_WRITE))
		return -1;
	printf("SPRAYDATA all %d completions polled in %.2f s\n", n,
	       now_s() - t0);
	for (i = 0; i < 4; i++)
		if (compare("cut WRITE", b->buf + ((4 + i) << 20),
			    a->buf + ((4 + i) << 20), 1 << 20, 0))
			return -1;
	rc = post_write(a, b, 0, 4096, 7);
	if (rc) {
		printf("SPRAYDATA FAIL post after all were polled: %s\n",
		       strerror(rc));
		return -1;
	}
	ids[0] = 7;
	lens[0] = 4096;
	return expect_order(a, ids, lens, 1, IBV_WC_RDMA_WRITE);
}

/* See -e at the top. */
static int error_test(struct dev *a, struct dev *b)
{
	static uint64_t ids[UNPOLLED_MAX + 16];
	struct ibv_sge sge = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 5000, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int n = 0, full, i, rc;

	fill(a->buf, BUF_LEN, 777);
	/* B has no receive posted: the SEND waits (RNR) and holds QP 0. */
	rc = ibv_post_send(a->s.qp, &wr, &bad);
	if (rc) {
		printf("SPRAYDATA FAIL SEND: %s\n", strerror(rc));
		return -1;
	}
	ids[n++] = 5000;
	usleep(100000);
	/* The ring holds what QP 0 holds: the cut WRITEs first (see -e). */
	for (i = 0; i < 4; i++) {
		rc = post_write(a, b, (4 + i) << 20, 1 << 20, 9000 + i);
		if (rc) {
			printf("SPRAYDATA FAIL cut WRITE %d behind a SEND that waits: %s\n",
			       i, strerror(rc));
			return -1;
		}
		ids[n++] = 9000 + i;
	}
	while (n < UNPOLLED_MAX) {
		rc = post_small(a, b, n);
		if (rc == ENOMEM)
			break;
		if (rc)
			return -1;
		ids[n] = n;
		n++;
	}
	full = n;
	if (n == UNPOLLED_MAX || n < 16) {
		printf("SPRAYDATA FAIL %d requests taken behind a SEND that waits, want ENOMEM after 16 or more\n",
		       n);
		return -1;
	}
	printf("SPRAYDATA QP 0 full after %d requests (a SEND that waits first), 4 cut WRITEs queued\n",
	       full);
	/* Their chunks go on the paths; their tails wait for QP 0. */
	usleep(500000);
	if (ibv_poll_cq(a->s.cq, 1, &wc)) {
		printf("SPRAYDATA FAIL a completion (wr_id %llu, %s) before the error state, with QP 0 held by a SEND\n",
		       (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
		return -1;
	}
	rc = ibv_modify_qp(a->s.qp, &attr, IBV_QP_STATE);
	if (rc) {
		printf("SPRAYDATA FAIL modify QP to ERROR: %s\n", strerror(rc));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (poll_one(a, &wc)) {
			printf("SPRAYDATA FAIL %d of %d requests completed after the error state\n",
			       i, n);
			return -1;
		}
		if (wc.wr_id != ids[i] || wc.status != IBV_WC_WR_FLUSH_ERR) {
			printf("SPRAYDATA FAIL completion %d after the error state: wr_id %llu status %s, want wr_id %llu %s (post order)\n",
			       i, (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status),
			       (unsigned long long)ids[i],
			       ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
			return -1;
		}
	}
	usleep(300000);
	if (ibv_poll_cq(a->s.cq, 1, &wc)) {
		printf("SPRAYDATA FAIL completion %d (wr_id %llu) after all %d were flushed\n",
		       n, (unsigned long long)wc.wr_id, n);
		return -1;
	}
	printf("SPRAYDATA all %d requests flushed once, in post order\n", n);
	attr.qp_state = IBV_QPS_RESET;
	rc = ibv_modify_qp(a->s.qp, &attr, IBV_QP_STATE);
	if (rc) {
		printf("SPRAYDATA FAIL modify QP to RESET: %s\n", strerror(rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dev a = { 0 }, b = { 0 };
	long long up_a, up_b;
	const char *ready = NULL, *hold = NULL;
	double secs = 0, end, deadline;
	unsigned int round = 0;
	int opt, gid_index = 1;

	while ((opt = getopt(argc, argv, "a:b:g:s:r:H:ue")) != -1) {
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
		case 'r':
			ready = optarg;
			break;
		case 'H':
			hold = optarg;
			break;
		case 'u':
			unpolled = 1;
			break;
		case 'e':
			errstate = 1;
			break;
		default:
			fprintf(stderr, "usage: %s -a DEV -b DEV [-g GIDX] [-s SECONDS] [-r READY_FILE] [-H HOLD_FILE] [-u | -e]\n",
				argv[0]);
			return 2;
		}
	}
	if (!a.name || !b.name)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	up_a = tlib_hw_counter(a.name, "spray_qps_up");
	up_b = tlib_hw_counter(b.name, "spray_qps_up");
	if (open_dev(&a, gid_index) || open_dev(&b, gid_index) ||
	    connect_qp(&a, &b, gid_index) || connect_qp(&b, &a, gid_index))
		return 2;
	/* The path exchange runs once both QPs are at RTR. */
	deadline = now_s() + 20;
	while (tlib_hw_counter(a.name, "spray_qps_up") <= up_a ||
	       tlib_hw_counter(b.name, "spray_qps_up") <= up_b) {
		if (now_s() > deadline) {
			printf("SPRAYDATA FAIL the QPs' paths did not come up within 20 s\n");
			return 3;
		}
	}
	printf("SPRAYDATA paths up: QP %u (%s) <-> QP %u (%s)\n",
	       a.s.qp->qp_num, a.name, b.s.qp->qp_num, b.name);
	/* -u and -e: one test each, then done. */
	if (unpolled || errstate) {
		if (unpolled ? unpolled_test(&a, &b) : error_test(&a, &b)) {
			printf("SPRAYDATA FAIL %s\n", unpolled ?
			       "with completions unpolled" :
			       "with QP 0 full at the error state");
			return 3;
		}
		printf("SPRAYDATA ok: %s\n", unpolled ?
		       "completions left unpolled, byte counts and order kept" :
		       "error state with QP 0 full, every request flushed once in order");
		return 0;
	}
	end = now_s() + secs;
	do {
		if (round_write(&a, &b, round) || round_read(&a, &b, round)) {
			printf("SPRAYDATA FAIL in round %u\n", round);
			return 3;
		}
		if (!round && ready)
			close(open(ready, O_CREAT | O_WRONLY, 0644));
		round++;
		/* the caller has seen what it waited for: two rounds at least
		 * (an even and an odd one), then done
		 */
	} while (now_s() < end && !(round >= 2 && hold && !access(hold, F_OK)));
	/*
	 * Keep the QPs (and their counters) until the caller has read what it
	 * wants, however slow that is: it creates HOLD_FILE then.
	 */
	deadline = now_s() + 120;
	while (hold && access(hold, F_OK) && now_s() < deadline)
		usleep(50000);
	printf("SPRAYDATA ok: %u rounds of WRITEs (%zu requests + immediate) and READs, bytes and completion order checked\n",
	       round, NREQ);
	return 0;
}
