// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the spray scheduling core (spray/spray_sched.c), built for
 * userspace under AddressSanitizer and UndefinedBehaviorSanitizer.  The
 * last tests drive it with a small deterministic discrete-event model of
 * parent QPs: each path serves its chunks in order at a fixed rate and
 * completes them a fixed latency later.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spray/spray_sched.h"

static int passed, failed;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			printf("FAIL %s: %s (line %d)\n", __func__, #cond,    \
			       __LINE__);                                    \
			failed++;                                            \
			return;                                              \
		}                                                            \
	} while (0)

#define PASS()                                                               \
	do {                                                                 \
		printf("PASS %s\n", __func__);                               \
		passed++;                                                    \
	} while (0)

#define K4 4096U
#define K64 65536U
#define M1 (1U << 20)

static struct spray_sched s;

static struct spray_params params(void)
{
	struct spray_params p = {
		.chunk_init = K64,
		.chunk_min = 16384,
		.chunk_max = M1,
		.credit_init = 256 * 1024,
		.credit_min = 128 * 1024,
		.credit_max = 4 * M1,
		.target_ns = 100000,
		.stall_ns = 200000,
		.tune_ns = 20000,
	};
	return p;
}

/* Post a chunk of @len on @path at @t through the low-level calls. */
static void post(struct spray_chunk *c, u32 len, u32 path, u64 t)
{
	c->len = len;
	if (spray_posted(&s, c, path, t))
		abort();
}

static void init_refuses_bad_params(void)
{
	struct spray_params p = params();

	CHECK(spray_sched_init(&s, 0, &p) == -EINVAL);
	CHECK(spray_sched_init(&s, 17, &p) == -EINVAL);
	CHECK(spray_sched_init(&s, 16, &p) == 0 && s.n_paths == 16);
	CHECK(spray_sched_init(&s, 1, &p) == 0);
	p.chunk_min = 2 * M1;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);	/* min > max */
	p = params();
	p.chunk_init = 3 * K4;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);	/* not a power */
	p = params();
	p.chunk_min = 0;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	p = params();
	p.chunk_min = 2048;
	p.chunk_init = 2048;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);	/* under 4 KiB */
	p = params();
	p.chunk_init = 2 * M1;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);	/* init > max */
	p = params();
	p.credit_min = 0;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	p = params();
	p.credit_min = 8 * M1;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	p = params();
	p.credit_max = SPRAY_CREDIT_CEIL + 1;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	p = params();
	p.target_ns = 0;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	p = params();
	p.stall_ns = 0;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	p = params();
	p.tune_ns = SPRAY_TIME_CEIL + 1;
	CHECK(spray_sched_init(&s, 4, &p) == -EINVAL);
	PASS();
}

static void pick_spreads_equal_paths(void)
{
	struct spray_params p = params();
	struct spray_chunk c[16];
	int i;

	CHECK(spray_sched_init(&s, 4, &p) == 0);
	/* Equal, unmeasured paths take turns. */
	for (i = 0; i < 8; i++) {
		CHECK(spray_pick(&s, K64) == i % 4);
		post(&c[i], K64, i % 4, 0);
	}
	/* Fills by outstanding bytes: a big chunk on 2 skips it. */
	post(&c[8], 2 * K64, 2, 0);
	CHECK(spray_pick(&s, K64) == 0);
	post(&c[9], K64, 0, 0);
	CHECK(spray_pick(&s, K64) == 1);
	post(&c[10], K64, 1, 0);
	CHECK(spray_pick(&s, K64) == 3);
	post(&c[11], K64, 3, 0);
	CHECK(spray_pick(&s, K64) == 0);
	CHECK(s.path[2].out_bytes == 4 * K64 && s.path[2].out_chunks == 3);
	/* A completion makes its path the emptiest. */
	CHECK(spray_completed(&s, &c[1], 1000, true) == 0);
	CHECK(spray_pick(&s, K64) == 1);
	PASS();
}

static void pick_prefers_the_faster_path(void)
{
	struct spray_params p = params();
	struct spray_chunk c[6];

	CHECK(spray_sched_init(&s, 3, &p) == 0);
	s.path[0].ns_per_mib = 4000000;	/* 1/4 the rate of path 1 */
	s.path[1].ns_per_mib = 1000000;
	/* Path 2 unmeasured: as fast as the fastest, loses ties to 1. */
	CHECK(spray_pick(&s, K64) == 1);
	post(&c[0], K64, 1, 0);
	CHECK(spray_pick(&s, K64) == 2);
	post(&c[1], K64, 2, 0);
	/* Path 1 holds 64 KiB: 2 * 1000000 still beats 0's 1 * 4000000. */
	CHECK(spray_pick(&s, K64) == 1);
	post(&c[2], K64, 1, 0);
	CHECK(spray_pick(&s, K64) == 2);
	post(&c[3], K64, 2, 0);
	CHECK(spray_pick(&s, K64) == 1);
	post(&c[4], K64, 1, 0);
	CHECK(spray_pick(&s, K64) == 2);
	post(&c[5], K64, 2, 0);
	/* Four chunks on 1 or 2 cost as much as one on 0: lowest index. */
	CHECK(spray_pick(&s, K64) == 0);
	PASS();
}

static void pick_credit_and_no_link(void)
{
	struct spray_params p = params();
	struct spray_chunk c[8];

	p.credit_min = 2 * K64;
	p.credit_init = 2 * K64;
	CHECK(spray_sched_init(&s, 2, &p) == 0);
	CHECK(spray_ordered_path(&s) == 0);
	post(&c[0], K64, 0, 0);
	post(&c[1], K64, 0, 0);
	post(&c[2], K64, 1, 0);
	post(&c[3], K64, 1, 0);
	CHECK(spray_pick(&s, 1) == -EAGAIN);
	CHECK(spray_completed(&s, &c[2], 10, true) == 0);
	CHECK(spray_pick(&s, K64) == 1);
	CHECK(spray_pick(&s, K64 + 1) == -EAGAIN);
	/* An idle path takes one chunk bigger than its credit. */
	CHECK(spray_completed(&s, &c[3], 20, true) == 0);
	CHECK(spray_pick(&s, 4 * K64) == 1);
	CHECK(spray_path_down(&s, 1) == 0);
	CHECK(spray_pick(&s, K4) == -EAGAIN);
	CHECK(spray_path_down(&s, 0) == 0);
	CHECK(spray_pick(&s, K4) == -ENOLINK);
	CHECK(spray_ordered_path(&s) == -ENOLINK);
	CHECK(spray_posted(&s, &c[4], 0, 30) == -ENOLINK);
	CHECK(spray_path_down(&s, 2) == -EINVAL);
	CHECK(spray_path_up(&s, 1) == 0);
	CHECK(spray_ordered_path(&s) == 1);
	CHECK(spray_pick(&s, K4) == 1);
	PASS();
}

static void chunk_len_leaves_no_tiny_tail(void)
{
	u64 len, rem;
	u32 n, l;

	CHECK(spray_chunk_len(K64, 0) == 0);
	CHECK(spray_chunk_len(K64, 100) == 100);
	CHECK(spray_chunk_len(K64, K64) == K64);
	CHECK(spray_chunk_len(K64, K64 + K64 / 4 - 1) == K64 + K64 / 4 - 1);
	CHECK(spray_chunk_len(K64, K64 + K64 / 4) == K64);
	CHECK(spray_chunk_len(K64, 10ULL << 30) == K64);
	CHECK(spray_chunk_len(1, 3 * K4) == K4);	/* clamped to 4 KiB */
	CHECK(spray_chunk_count(K64, 0) == 1);
	CHECK(spray_chunk_count(K64, 4 * K64) == 4);
	CHECK(spray_chunk_count(K64, 4 * K64 + 1) == 4);
	CHECK(spray_chunk_count(K64, 4 * K64 + K64 / 4) == 5);
	/* The count always matches the cut, and no chunk but one is small. */
	for (len = 1; len < 40 * K4; len += 97) {
		n = 0;
		for (rem = len; rem; rem -= l) {
			l = spray_chunk_len(4 * K4, rem);
			CHECK(l && l <= 5 * K4);
			CHECK(l >= K4 || l == len);
			n++;
		}
		CHECK(n == spray_chunk_count(4 * K4, len));
	}
	PASS();
}

static struct spray_wr ring[8];
static struct spray_order o;

static void order_pops_in_post_order(void)
{
	u32 seq[4];
	u64 id;
	int st;

	CHECK(spray_order_init(&o, ring, 8, 0) == 0);
	CHECK(spray_order_add(&o, 100, 3, false, &seq[0]) == 0);
	CHECK(spray_order_add(&o, 101, 1, false, &seq[1]) == 0);
	CHECK(spray_order_add(&o, 102, 2, false, &seq[2]) == 0);
	CHECK(spray_order_add(&o, 103, 1, false, &seq[3]) == 0);
	CHECK(seq[0] == 0 && seq[3] == 3 && spray_order_count(&o) == 4);
	/* Later work requests finish first: nothing pops. */
	CHECK(spray_order_chunk_done(&o, seq[3], 0) == 0);
	CHECK(spray_order_chunk_done(&o, seq[1], 0) == 0);
	CHECK(spray_order_chunk_done(&o, seq[2], -EIO) == 0);
	CHECK(spray_order_chunk_done(&o, seq[2], -EREMOTEIO) == 0);
	CHECK(spray_order_chunk_done(&o, seq[0], 0) == 0);
	CHECK(spray_order_chunk_done(&o, seq[0], 0) == 0);
	CHECK(spray_order_pop(&o, &id, &st) == 0);
	CHECK(spray_order_chunk_done(&o, seq[0], -ETIMEDOUT) == 0);
	/* Too many completions for a work request are refused. */
	CHECK(spray_order_chunk_done(&o, seq[0], 0) == -EINVAL);
	CHECK(spray_order_chunk_done(&o, 9, 0) == -EINVAL);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 100 &&
	      st == -ETIMEDOUT);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 101 && st == 0);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 102 && st == -EIO);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 103 && st == 0);
	CHECK(spray_order_pop(&o, &id, &st) == 0);
	CHECK(spray_order_chunk_done(&o, seq[3], 0) == -EINVAL);  /* popped */
	CHECK(spray_order_count(&o) == 0);
	PASS();
}

static void order_fence_for_ordered_wr(void)
{
	u32 a, b, send, c, send2;
	u64 id;
	int st;

	CHECK(spray_order_init(&o, ring, 8, 7) == 0);
	CHECK(spray_order_add(&o, 1, 2, false, &a) == 0);
	CHECK(spray_order_add(&o, 2, 1, false, &b) == 0);
	CHECK(spray_order_add(&o, 3, 1, true, &send) == 0);
	CHECK(spray_order_add(&o, 4, 1, false, &c) == 0);
	CHECK(spray_order_add(&o, 5, 1, true, &send2) == 0);
	CHECK(spray_order_may_post_ordered(&o, a));	/* nothing before */
	CHECK(!spray_order_may_post_ordered(&o, send));
	CHECK(spray_order_chunk_done(&o, b, 0) == 0);
	CHECK(!spray_order_may_post_ordered(&o, send));
	CHECK(spray_order_chunk_done(&o, a, 0) == 0);
	CHECK(!spray_order_may_post_ordered(&o, send));	/* a: one left */
	CHECK(spray_order_chunk_done(&o, a, 0) == 0);
	CHECK(spray_order_may_post_ordered(&o, send));
	/* The second SEND waits for the first and for c. */
	CHECK(spray_order_chunk_done(&o, c, 0) == 0);
	CHECK(!spray_order_may_post_ordered(&o, send2));
	CHECK(spray_order_chunk_done(&o, send, 0) == 0);
	CHECK(spray_order_may_post_ordered(&o, send2));
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 1);
	CHECK(spray_order_may_post_ordered(&o, send2));
	CHECK(!spray_order_may_post_ordered(&o, a));	/* gone */
	CHECK(!spray_order_may_post_ordered(&o, send2 + 1));
	PASS();
}

static void order_ring_full(void)
{
	struct spray_wr r3[3];
	u32 seq;
	u64 id;
	int st, i;

	CHECK(spray_order_init(&o, r3, 3, 0) == -EINVAL);
	CHECK(spray_order_init(&o, ring, 0, 0) == -EINVAL);
	CHECK(spray_order_init(&o, ring, 4, 0) == 0);
	CHECK(spray_order_add(&o, 1, 0, false, &seq) == -EINVAL);
	for (i = 0; i < 4; i++)
		CHECK(spray_order_add(&o, i, 1, false, &seq) == 0);
	CHECK(spray_order_add(&o, 9, 1, false, &seq) == -ENOSPC);
	/* Done but not popped still holds its slot. */
	CHECK(spray_order_chunk_done(&o, 0, 0) == 0);
	CHECK(spray_order_add(&o, 9, 1, false, &seq) == -ENOSPC);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 0);
	CHECK(spray_order_add(&o, 9, 1, false, &seq) == 0 && seq == 4);
	PASS();
}

/* 100000 work requests over the wrap of u32, completed shuffled. */
static void order_sequence_wraps(void)
{
	static u32 pend[8];
	u32 first = 0xffffff00U, seq, next_pop = 0, n_added = 0, j;
	u64 id, rnd = 88172645463325252ULL;
	int st, live = 0;

	CHECK(spray_order_init(&o, ring, 8, first) == 0);
	while (next_pop < 100000) {
		while (n_added < 100000 &&
		       spray_order_add(&o, n_added, 1 + n_added % 3,
				       !(n_added % 5), &seq) == 0) {
			CHECK(seq == first + n_added);
			pend[seq & 7] = 1 + n_added % 3;
			n_added++;
			live++;
		}
		/* Complete one chunk of a random live work request. */
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		for (j = 0; j < 8; j++) {
			seq = o.head + (u32)((rnd + j) % (o.tail - o.head));
			if (pend[seq & 7])
				break;
		}
		if (j < 8) {
			CHECK(spray_order_chunk_done(&o, seq,
						     seq % 7 ? 0 : 5) == 0);
			pend[seq & 7]--;
		}
		while (spray_order_pop(&o, &id, &st) == 1) {
			CHECK(id == next_pop);
			CHECK(st == ((first + next_pop) % 7 ? 0 : 5));
			next_pop++;
			live--;
		}
	}
	CHECK(o.head == first + 100000 && live == 0);
	PASS();
}

static struct spray_chunk slots[1024];
static struct spray_chunks t;

static void chunk_ids_and_failover(void)
{
	struct spray_params p = params();
	u64 id[6], old;
	u32 out[8], n;
	int i, idx;

	CHECK(spray_sched_init(&s, 3, &p) == 0);
	CHECK(spray_chunks_init(&t, slots, 0) == -EINVAL);
	CHECK(spray_chunks_init(&t, slots, 6) == 0);
	for (i = 0; i < 6; i++) {
		idx = spray_chunk_alloc(&t, 40 + i / 2, (i % 2) * K64, K64);
		CHECK(idx == i);
		CHECK(spray_chunk_post(&s, &t, idx, i % 3, 100, &id[i]) == 0);
		CHECK(!(id[i] >> 63) && (u32)id[i] == (u32)i);
	}
	CHECK(spray_chunk_alloc(&t, 0, 0, 1) == -ENOSPC);
	CHECK(spray_chunk_post(&s, &t, 0, 1, 100, &old) == -EINVAL);
	CHECK(s.path[1].out_bytes == 2 * K64 && s.path[1].out_chunks == 2);
	/* Path 1 fails: chunks 1 and 4 come back, its counters empty. */
	n = spray_fail_path(&s, &t, 1, out, 1);
	CHECK(n == 1 && out[0] == 1);
	n = spray_fail_path(&s, &t, 1, out, 8);
	CHECK(n == 1 && out[0] == 4);
	CHECK(spray_fail_path(&s, &t, 1, out, 8) == 0);
	CHECK(s.path[1].state == SPRAY_PATH_DOWN && s.path[1].reposts == 2);
	CHECK(s.path[1].out_bytes == 0 && s.path[1].out_chunks == 0);
	/* The flushed completions of the failed path are stale. */
	CHECK(spray_chunk_complete(&s, &t, id[1], 200, false) == -ESTALE);
	CHECK(spray_chunk_complete(&s, &t, id[4], 200, false) == -ESTALE);
	CHECK(s.path[1].errors == 0);
	/* Reposted elsewhere under a new id, same work request and offset. */
	old = id[1];
	CHECK(spray_pick(&s, K64) == 0);
	CHECK(spray_chunk_post(&s, &t, 1, 0, 210, &id[1]) == 0);
	CHECK(id[1] != old && t.c[1].posts == 2 && t.c[1].seq == 40 &&
	      t.c[1].offset == K64);
	CHECK(spray_chunk_complete(&s, &t, old, 220, true) == -ESTALE);
	CHECK(spray_chunk_complete(&s, &t, id[1], 230, true) == 1);
	CHECK(t.c[1].state == SPRAY_CHUNK_DONE);
	CHECK(spray_chunk_complete(&s, &t, id[1], 230, true) == -ESTALE);
	spray_chunk_free(&t, 1);
	CHECK(t.used == 5);
	CHECK(spray_chunk_alloc(&t, 50, 0, K4) == 1);
	CHECK(spray_chunk_complete(&s, &t, 99, 240, true) == -ESTALE);
	/* A failed completion on a live path counts an error. */
	CHECK(spray_chunk_complete(&s, &t, id[2], 250, false) == 2);
	CHECK(s.path[2].errors == 1 && s.path[2].out_chunks == 1);
	PASS();
}

static void path_up_takes_chunks_again(void)
{
	struct spray_params p = params();
	struct spray_chunk c[4];

	CHECK(spray_sched_init(&s, 2, &p) == 0);
	s.path[1].ns_per_mib = 5000;
	s.path[1].rate_busy = true;
	s.path[1].credit = 7;
	CHECK(spray_path_down(&s, 1) == 0);
	CHECK(spray_pick(&s, K64) == 0);
	post(&c[0], K64, 0, 0);
	CHECK(spray_pick(&s, K64) == 0);
	CHECK(spray_path_up(&s, 1) == 0);
	CHECK(s.path[1].ns_per_mib == 0 && !s.path[1].rate_busy &&
	      s.path[1].credit == p.credit_init);
	CHECK(spray_pick(&s, K64) == 1);
	PASS();
}

static void stall_detection(void)
{
	struct spray_params p = params();
	struct spray_chunk c[4];
	u32 mask = 0;

	p.stall_ns = 1000;
	CHECK(spray_sched_init(&s, 3, &p) == 0);
	CHECK(spray_stalled(&s, 1000000, &mask) == 0 && mask == 0);
	post(&c[0], K4, 0, 5000);	/* idle since 0: counts from 5000 */
	post(&c[1], K4, 1, 5000);
	post(&c[2], K4, 1, 5100);
	CHECK(spray_stalled(&s, 6000, &mask) == 0);
	CHECK(spray_completed(&s, &c[1], 5900, true) == 0);
	CHECK(spray_stalled(&s, 6001, &mask) == 1 && mask == 1);
	CHECK(spray_stalled(&s, 6500, &mask) == 1 && mask == 1);
	CHECK(s.path[0].stalls == 1);	/* one stall, counted once */
	CHECK(spray_stalled(&s, 6901, &mask) == 2 && mask == 3);
	CHECK(s.path[1].stalls == 1);
	/* A completion is progress; a path down is not watched. */
	CHECK(spray_completed(&s, &c[2], 7000, true) == 0);
	CHECK(spray_stalled(&s, 7000, &mask) == 1 && mask == 1);
	CHECK(spray_path_down(&s, 0) == 0);
	CHECK(spray_stalled(&s, 9000, NULL) == 0);
	PASS();
}

/*
 * One path at @rate bytes per microsecond and @lat ns of latency: @rounds
 * times, @k chunks of the current chunk size posted at once, completed in
 * order.  Returns the time of the last completion.
 */
static u64 feed(u32 path, u64 now, u32 k, u32 rounds, u64 rate, u64 lat)
{
	struct spray_chunk c[16];
	u32 r, i;
	u64 svc;

	for (r = 0; r < rounds; r++) {
		svc = (u64)s.chunk * 1000 / rate;
		for (i = 0; i < k; i++)
			post(&c[i], s.chunk, path, now);
		for (i = 0; i < k; i++)
			if (spray_completed(&s, &c[i],
					    now + lat + (i + 1) * svc, true))
				abort();
		now += lat + k * svc;
	}
	return now;
}

static void tune_grows_when_fixed_cost_dominates(void)
{
	struct spray_params p = params();
	enum spray_tune_result r;
	u64 now;
	int i;

	/* 1 B/ns behind 50 us of latency: a 4 KiB chunk is mostly wait. */
	p.chunk_min = K4;
	p.chunk_init = K4;
	p.chunk_max = K64;
	p.credit_min = K64;
	p.tune_ns = 0;
	CHECK(spray_sched_init(&s, 1, &p) == 0);
	now = feed(0, 0, 4, 1, 1000, 50000);
	CHECK(s.path[0].rate_busy && s.path[0].ns_per_mib == 1048576);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_KEPT);	/* too few */
	now = feed(0, now, 4, 2, 1000, 50000);
	CHECK(s.path[0].excess_floor_ns == 50000);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_GREW && s.chunk == 2 * K4);
	CHECK(s.path[0].tune_samples == 0);
	/* Grows while the 50 us exceed a chunk's bytes, never past max. */
	for (i = 0; i < 10; i++) {
		now = feed(0, now, 4, 3, 1000, 50000);
		r = spray_tune(&s, now);
		CHECK(s.chunk <= K64);
		if (s.chunk == K64)
			CHECK(r == SPRAY_TUNE_KEPT || i < 4);
	}
	CHECK(s.chunk == K64 && s.grows == 4);
	/* Credit: the 50 us round trip and 100 us of target at 1 B/ns. */
	CHECK(s.path[0].base_ns == 50000);
	CHECK(s.path[0].credit == 150000);
	PASS();
}

static void tune_keeps_size_without_overhead(void)
{
	struct spray_params p = params();
	u64 now;

	/* 64 KiB takes 65 us at 1 B/ns, 2 us latency: nothing to gain. */
	p.tune_ns = 0;
	CHECK(spray_sched_init(&s, 2, &p) == 0);
	now = feed(0, 0, 4, 4, 1000, 2000);
	now = feed(1, now, 4, 4, 1000, 2000);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_KEPT && s.chunk == K64);
	PASS();
}

static void tune_shrinks_under_rising_latency(void)
{
	struct spray_params p = params();
	enum spray_tune_result r;
	u64 now;
	int i;

	p.tune_ns = 0;
	p.chunk_min = 32768;
	CHECK(spray_sched_init(&s, 1, &p) == 0);
	now = feed(0, 0, 4, 4, 1000, 10000);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_KEPT);
	/* The same rate, but 300 us more delay than before: queueing. */
	now = feed(0, now, 4, 2, 1000, 310000);
	CHECK(s.path[0].excess_ns - s.path[0].excess_floor_ns > p.target_ns);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_SHRANK && s.chunk == 32768);
	CHECK(s.shrinks == 1);
	/* No growing back for SPRAY_TUNE_HOLD adjustments. */
	for (i = 0; i < SPRAY_TUNE_HOLD; i++) {
		now = feed(0, now, 4, 2, 1000, 310000);
		CHECK(spray_tune(&s, now) == SPRAY_TUNE_KEPT);
	}
	/* Rising again at the smallest size: stays at min. */
	now = feed(0, now, 4, 2, 1000, 10000);
	now = feed(0, now, 4, 3, 1000, 900000);
	r = spray_tune(&s, now);
	CHECK(r == SPRAY_TUNE_KEPT && s.chunk == 32768);
	PASS();
}

static void tune_clamps_credit_and_waits(void)
{
	struct spray_params p = params();
	u64 now;

	CHECK(spray_sched_init(&s, 3, &p) == 0);
	/* 100 B/us: 10 KB in 100 us, raised to credit_min. */
	now = feed(0, 0, 3, 1, 100, 1000);
	/* 100 GB/s: 10 MB in 100 us, cut to credit_max. */
	now = feed(1, now, 3, 1, 100000, 1000);
	/* 1 GB/s: 100 KB, under credit_min too; 2 GB/s: 200 KB, and 2 KB
	 * for the 1 us round trip. */
	now = feed(2, now, 3, 1, 2000, 1000);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_KEPT);
	CHECK(s.path[0].credit == p.credit_min);
	CHECK(s.path[1].credit == p.credit_max);
	CHECK(s.path[2].credit >= 201000 && s.path[2].credit <= 203000);
	/* Within tune_ns of the last adjustment nothing changes. */
	s.path[1].credit = 5;
	CHECK(spray_tune(&s, now + p.tune_ns - 1) == SPRAY_TUNE_KEPT);
	CHECK(s.path[1].credit == 5);
	CHECK(spray_tune(&s, now + p.tune_ns) == SPRAY_TUNE_KEPT);
	CHECK(s.path[1].credit == p.credit_max);
	PASS();
}

/*
 * A round trip longer than SPRAY_RTT_TARGETS target latencies is
 * queueing: 2 GB/s with 1 ms of excess would be 2.2 MB of credit; it gets
 * 2 GB/s times (4 + 1) * 100 us, 1 MB.
 */
static void tune_caps_round_trip(void)
{
	struct spray_params p = params();
	u64 now;

	CHECK(spray_sched_init(&s, 1, &p) == 0);
	now = feed(0, 0, 3, 1, 2000, 1000000);
	CHECK(s.path[0].base_ns > 900000);
	CHECK(spray_tune(&s, now) == SPRAY_TUNE_KEPT);
	CHECK(s.path[0].credit >= 990000 && s.path[0].credit <= 1010000);
	PASS();
}

/*
 * A parent that completes in bursts (four chunks within 3 us, every four
 * chunks' time): single gaps say 1 us or 4 chunks' time, a window of
 * them says the rate.  64 KiB at 1000 B/us is 65.5 us: 1 MiB in ~1.05 ms.
 */
static void rate_window_sums_bursts(void)
{
	struct spray_params p = params();
	struct spray_chunk c[8];
	u64 now = 0, svc = (u64)K64 * 1000 / 1000, want = 1048576ULL;
	u32 r, i;

	p.rate_window_ns = 1000000;
	CHECK(spray_sched_init(&s, 2, &p) == 0);
	/* Always a burst in flight behind the one completing. */
	for (i = 0; i < 4; i++)
		post(&c[i], K64, 0, now);
	for (r = 0; r < 200; r++) {
		for (i = 0; i < 4; i++)
			post(&c[((r + 1) & 1) * 4 + i], K64, 0, now);
		now += 4 * svc;
		for (i = 0; i < 4; i++)
			CHECK(spray_completed(&s, &c[(r & 1) * 4 + i],
					      now + i * 1000, true) == 0);
	}
	printf("  ns per MiB %llu, want %llu\n",
	       (unsigned long long)s.path[0].ns_per_mib,
	       (unsigned long long)want);
	CHECK(s.path[0].rate_busy);
	CHECK(s.path[0].ns_per_mib * 10 >= want * 9 &&
	      s.path[0].ns_per_mib * 10 <= want * 11);
	PASS();
}

/* Path 0's share: bounds, the time gate, and the tail it gives. */
static void share_tune_steps_and_bounds(void)
{
	struct spray_params p = params();
	u64 now = 1000;
	int i;

	CHECK(spray_sched_init(&s, 4, &p) == 0);
	CHECK(s.share == SPRAY_SHARE_ONE / 4);
	CHECK(s.share_min == SPRAY_SHARE_ONE / 16);
	CHECK(s.share_max == 3 * SPRAY_SHARE_ONE / 4);
	CHECK(spray_share_tune(&s, now, true, false) == 256 + SPRAY_SHARE_STEP);
	/* Within SPRAY_SHARE_TUNES tune periods: kept. */
	CHECK(spray_share_tune(&s, now + SPRAY_SHARE_TUNES * p.tune_ns - 1,
			       true, false) == 256 + SPRAY_SHARE_STEP);
	/* Path 0 waiting weighs more than the paths waiting. */
	CHECK(spray_share_tune(&s, now += SPRAY_SHARE_TUNES * p.tune_ns, true,
			       true) == 256);
	/* Neither waits (the application sets the pace): the share stays. */
	CHECK(spray_share_tune(&s, now += SPRAY_SHARE_TUNES * p.tune_ns, false,
			       false) == 256);
	for (i = 0; i < 1000; i++)
		spray_share_tune(&s, now += SPRAY_SHARE_TUNES * p.tune_ns, true,
				 false);
	CHECK(s.share == s.share_max);
	for (i = 0; i < 1000; i++)
		spray_share_tune(&s, now += SPRAY_SHARE_TUNES * p.tune_ns, false,
				 true);
	CHECK(s.share == s.share_min);
	/* 1 MiB at a sixteenth: 64 KiB; at three quarters: 768 KiB. */
	CHECK(spray_tail_len(&s, M1) == M1 / 16);
	s.share = s.share_max;
	CHECK(spray_tail_len(&s, M1) == 3 * M1 / 4);
	/* Never under 4 KiB; one chunk (64 KiB) left to the other paths. */
	s.share = 1;
	CHECK(spray_tail_len(&s, 2 * K64) == K4);
	s.share = SPRAY_SHARE_ONE;
	CHECK(spray_tail_len(&s, 2 * K64) == K64);
	CHECK(spray_tail_len(&s, 2 * K64 + 100) == K64);
	/* A request under a chunk (the size grew since it was posted). */
	CHECK(spray_tail_len(&s, K64) == K4);
	CHECK(spray_tail_len(&s, 1000) == 1000);
	/* One path: the even share is all of it. */
	CHECK(spray_sched_init(&s, 1, &p) == 0);
	CHECK(s.share == SPRAY_SHARE_ONE && s.share_max == SPRAY_SHARE_ONE);
	PASS();
}

/*
 * The share in a fluid model: path 0 serves its tails at r0, the other
 * paths their chunks at r; requests go at the rate the slower side
 * allows, and work waits on that side.  From the lowest share and from
 * the highest, it settles within two steps of r0 / (r0 + r).
 */
static void share_tune_settles_at_path0_rate(void)
{
	static const u64 cases[][2] = {
		{ 5000, 8750 },		/* 40 Mbit + 40/20/10 */
		{ 5000, 15000 },	/* 4 equal paths */
		{ 1250, 12500 },	/* path 0 on the slowest class */
		{ 5000, 3750 },		/* path 0 the fastest */
	};
	struct spray_params p = params();
	u64 r0, r, now = 0, want;
	unsigned int c, k;
	bool full;
	int i;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		r0 = cases[c][0];
		r = cases[c][1];
		want = SPRAY_SHARE_ONE * r0 / (r0 + r);
		for (k = 0; k < 2; k++) {
			CHECK(spray_sched_init(&s, 4, &p) == 0);
			s.share = k ? s.share_max : s.share_min;
			for (i = 0; i < 4000; i++) {
				/* Path 0 allows r0 / share, the paths
				 * r / (1 - share): the lower one waits. */
				full = r * s.share <
				       r0 * (SPRAY_SHARE_ONE - s.share);
				spray_share_tune(&s, now += p.tune_ns, full,
						 !full);
			}
			printf("  r0 %llu r %llu from %s: share %u, want %llu\n",
			       (unsigned long long)r0, (unsigned long long)r,
			       k ? "above" : "below", s.share,
			       (unsigned long long)want);
			CHECK(s.share + 2 * SPRAY_SHARE_STEP >= want &&
			      s.share <= want + 2 * SPRAY_SHARE_STEP);
		}
	}
	PASS();
}

/*
 * The same fluid model, but the signals tell what the share was a second
 * ago (100 tune periods: the requests in flight, 16 MiB at 16 MB/s, must
 * complete before a change shows): over the second half of a minute, the
 * requests go at 0.93 or more of r0 + r on average.  (With the share
 * moved every tune period, as before, it swung around and they went at
 * 0.70 to 0.85.)
 */
static void share_tune_with_delayed_signals(void)
{
	static const u64 cases[][2] = {
		{ 5000, 8750 }, { 5000, 15000 }, { 1250, 12500 }, { 5000, 3750 },
	};
	enum { DELAY = 100, STEPS = 6000 };
	struct spray_params p = params();
	static u32 past[DELAY];
	double eff, sum;
	u64 r0, r, now = 0;
	unsigned int c, n;
	u32 old;
	bool full;
	int i;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		r0 = cases[c][0];
		r = cases[c][1];
		CHECK(spray_sched_init(&s, 4, &p) == 0);
		for (i = 0; i < DELAY; i++)
			past[i] = s.share;
		sum = 0;
		n = 0;
		for (i = 0; i < STEPS; i++) {
			old = past[i % DELAY];
			full = r * old < r0 * (SPRAY_SHARE_ONE - old);
			spray_share_tune(&s, now += p.tune_ns, full, !full);
			past[i % DELAY] = s.share;
			if (i < STEPS / 2)
				continue;
			/* Requests go at what the slower side allows. */
			eff = (double)r0 * SPRAY_SHARE_ONE / s.share;
			if ((double)r * SPRAY_SHARE_ONE /
			    (SPRAY_SHARE_ONE - s.share) < eff)
				eff = (double)r * SPRAY_SHARE_ONE /
				      (SPRAY_SHARE_ONE - s.share);
			sum += eff / (r0 + r);
			n++;
		}
		printf("  r0 %llu r %llu, signals 1 s late: %.3f of r0 + r\n",
		       (unsigned long long)r0, (unsigned long long)r, sum / n);
		CHECK(sum / n >= 0.93);
	}
	PASS();
}

/* A request cut after it was added: its chunks replace its stand-in. */
static void order_set_chunks_after_add(void)
{
	struct spray_wr ring[8];
	struct spray_order o;
	u32 seq, seq2;
	u64 id;
	int st;

	CHECK(spray_order_init(&o, ring, 8, 5) == 0);
	CHECK(spray_order_add(&o, 10, 1, false, &seq) == 0);
	CHECK(spray_order_add(&o, 11, 1, false, &seq2) == 0);
	CHECK(spray_order_set_chunks(&o, seq, 0) == -EINVAL);
	CHECK(spray_order_set_chunks(&o, seq + 7, 3) == -EINVAL);
	CHECK(spray_order_set_chunks(&o, seq, 3) == 0);
	/* Only a stand-in of one is replaced. */
	CHECK(spray_order_set_chunks(&o, seq, 2) == -EINVAL);
	CHECK(spray_order_chunk_done(&o, seq2, 0) == 0);
	CHECK(spray_order_chunk_done(&o, seq, 0) == 0);
	CHECK(spray_order_chunk_done(&o, seq, 0) == 0);
	CHECK(!spray_order_pop(&o, &id, &st));
	CHECK(spray_order_chunk_done(&o, seq, 0) == 0);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 10 && !st);
	CHECK(spray_order_pop(&o, &id, &st) == 1 && id == 11 && !st);
	PASS();
}

/* ---- a small discrete-event model of the parent QPs ---- */

#define SIM_WRS 80
#define SIM_RING 16
#define SIM_WIRE 2048
#define SIM_NEVER (~0ULL)
#define SIM_TICK 10000

struct sim_path {
	u64 rate;		/* bytes per microsecond */
	u64 lat;		/* ns */
	u64 busy_until;
	int frozen;
};

struct sim_wire {
	u64 wr_id;
	u64 done_at;
	u32 path;
};

struct sim_wr {
	u64 len;
	u64 cut;
	u64 covered;
	u64 bits[4];		/* 4 KiB units of up to 1 MiB */
	u32 chunk;
	u32 seq;
	int ordered;
	int added;
};

static struct sim {
	struct spray_order o;
	struct spray_wr ring[SIM_RING];
	struct sim_path p[SPRAY_MAX_PATHS];
	struct sim_wire wire[SIM_WIRE];
	struct sim_wr wr[SIM_WRS];
	u32 ready[1024];
	u32 n_ready, n_wire, n_wr, cur, popped;
	u32 first_seq;
	u64 now, end, bytes;
	u64 fail_at, up_at;	/* path fail_path freezes, comes back */
	u32 fail_path;
	u64 up_chunks;		/* its completed chunks when it came back */
	u32 stale;
	int err;
} sim;

#define SIM_ASSERT(cond)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			if (!sim.err)                                        \
				sim.err = __LINE__;                          \
			return;                                              \
		}                                                            \
	} while (0)

static void sim_post(u32 idx, u32 path)
{
	struct spray_chunk *c = &t.c[idx];
	struct sim_path *sp = &sim.p[path];
	struct sim_wire *w;
	u64 start, wr_id;

	SIM_ASSERT(sim.n_wire < SIM_WIRE);
	SIM_ASSERT(spray_chunk_post(&s, &t, idx, path, sim.now, &wr_id) == 0);
	start = sp->busy_until > sim.now ? sp->busy_until : sim.now;
	sp->busy_until = start + (u64)c->len * 1000 / sp->rate;
	w = &sim.wire[sim.n_wire++];
	w->wr_id = wr_id;
	w->path = path;
	w->done_at = sp->frozen ? SIM_NEVER : sp->busy_until + sp->lat;
}

/* Post whatever the scheduler lets through now. */
static void sim_send(void)
{
	struct sim_wr *w;
	u32 len, i;
	int path, idx;

	while (!sim.err) {
		if (sim.n_ready) {
			idx = sim.ready[sim.n_ready - 1];
			path = spray_pick(&s, t.c[idx].len);
			if (path < 0)
				return;
			sim.n_ready--;
			sim_post(idx, path);
			continue;
		}
		if (sim.cur == sim.n_wr)
			return;
		w = &sim.wr[sim.cur];
		if (!w->added) {
			w->chunk = s.chunk;
			if (spray_order_add(&sim.o, 1000 + sim.cur,
					    w->ordered ? 1 :
					    spray_chunk_count(w->chunk, w->len),
					    w->ordered, &w->seq))
				return;
			SIM_ASSERT(w->seq == sim.first_seq + sim.cur);
			w->added = 1;
		}
		if (w->ordered) {
			if (!spray_order_may_post_ordered(&sim.o, w->seq))
				return;
			/* The fence held: every earlier byte is done. */
			for (i = 0; i < sim.cur; i++)
				SIM_ASSERT(sim.wr[i].covered == sim.wr[i].len);
			path = spray_ordered_path(&s);
			SIM_ASSERT(path >= 0);
			idx = spray_chunk_alloc(&t, w->seq, 0, w->len);
			if (idx < 0)
				return;
			sim_post(idx, path);
			w->cut = w->len;
			sim.cur++;
			continue;
		}
		len = spray_chunk_len(w->chunk, w->len - w->cut);
		path = spray_pick(&s, len);
		if (path < 0)
			return;
		idx = spray_chunk_alloc(&t, w->seq, w->cut, len);
		if (idx < 0)
			return;
		sim_post(idx, path);
		w->cut += len;
		if (w->cut == w->len)
			sim.cur++;
	}
}

static void sim_deliver(u32 k)
{
	struct spray_chunk *c;
	struct sim_wr *w;
	u64 wr_id, u;
	int idx, st;

	idx = spray_chunk_complete(&s, &t, sim.wire[k].wr_id, sim.now, true);
	sim.wire[k] = sim.wire[--sim.n_wire];
	SIM_ASSERT(idx >= 0);
	c = &t.c[idx];
	SIM_ASSERT(c->seq - sim.first_seq < sim.n_wr);
	w = &sim.wr[c->seq - sim.first_seq];
	/* Every 4 KiB of every work request completes exactly once. */
	for (u = c->offset / K4; u < (c->offset + c->len) / K4; u++) {
		SIM_ASSERT(!(w->bits[u / 64] & (1ULL << (u % 64))));
		w->bits[u / 64] |= 1ULL << (u % 64);
	}
	w->covered += c->len;
	SIM_ASSERT(w->covered <= w->len);
	SIM_ASSERT(spray_order_chunk_done(&sim.o, c->seq, 0) == 0);
	spray_chunk_free(&t, idx);
	while (spray_order_pop(&sim.o, &wr_id, &st) == 1) {
		SIM_ASSERT(wr_id == 1000 + sim.popped && st == 0);
		SIM_ASSERT(sim.wr[sim.popped].covered ==
			   sim.wr[sim.popped].len);
		sim.popped++;
		sim.end = sim.now;
	}
}

/* The scheduler gives up on a path: its chunks go back to be reposted. */
static void sim_fail(u32 path)
{
	u32 n, k;

	do {
		n = spray_fail_path(&s, &t, path, sim.ready + sim.n_ready, 8);
		sim.n_ready += n;
	} while (n == 8);
	SIM_ASSERT(s.path[path].out_chunks == 0);
	/* Its parent QP is reset: what it still held flushes, stale. */
	for (k = 0; k < sim.n_wire;) {
		if (sim.wire[k].path != path) {
			k++;
			continue;
		}
		SIM_ASSERT(spray_chunk_complete(&s, &t, sim.wire[k].wr_id,
						sim.now, false) == -ESTALE);
		sim.stale++;
		sim.wire[k] = sim.wire[--sim.n_wire];
	}
}

/*
 * Stream @n_wr work requests of 1 MiB (every 16th an ordered 4 KiB one
 * when @ordered) over paths of the given rates and latencies.
 */
static void sim_run(u32 n, const u64 *rate, const u64 *lat, u32 n_wr,
		    int ordered)
{
	struct spray_params p = params();
	u64 next_tick = 0, next, ev;
	u32 i, k, mask, steps = 0;

	memset(&sim.p, 0, sizeof(sim.p));
	sim.n_ready = sim.n_wire = sim.cur = sim.popped = sim.stale = 0;
	sim.err = 0;
	sim.now = sim.end = sim.bytes = 0;
	sim.first_seq = 0xffffffe0U;	/* the sequence wraps mid-stream */
	if (spray_sched_init(&s, n, &p) ||
	    spray_chunks_init(&t, slots, 1024) ||
	    spray_order_init(&sim.o, sim.ring, SIM_RING, sim.first_seq)) {
		sim.err = __LINE__;
		return;
	}
	for (i = 0; i < n; i++) {
		sim.p[i].rate = rate[i];
		sim.p[i].lat = lat[i];
	}
	sim.n_wr = n_wr;
	for (i = 0; i < n_wr; i++) {
		memset(&sim.wr[i], 0, sizeof(sim.wr[i]));
		sim.wr[i].ordered = ordered && i % 16 == 15;
		sim.wr[i].len = sim.wr[i].ordered ? K4 : M1;
		sim.bytes += sim.wr[i].len;
	}
	sim_send();
	while (!sim.err && sim.popped < n_wr) {
		SIM_ASSERT(++steps < 1000000);
		next = next_tick;
		for (k = 0; k < sim.n_wire; k++)
			if (sim.wire[k].done_at < next)
				next = sim.wire[k].done_at;
		if (sim.fail_at > sim.now && sim.fail_at < next)
			next = sim.fail_at;
		if (sim.up_at > sim.now && sim.up_at < next)
			next = sim.up_at;
		sim.now = next;
		if (sim.fail_at && sim.now == sim.fail_at) {
			sim.p[sim.fail_path].frozen = 1;
			for (k = 0; k < sim.n_wire; k++)
				if (sim.wire[k].path == sim.fail_path &&
				    sim.wire[k].done_at > sim.now)
					sim.wire[k].done_at = SIM_NEVER;
		}
		if (sim.up_at && sim.now == sim.up_at) {
			sim.p[sim.fail_path].frozen = 0;
			sim.p[sim.fail_path].busy_until = sim.now;
			SIM_ASSERT(spray_path_up(&s, sim.fail_path) == 0);
			sim.up_chunks = s.path[sim.fail_path].chunks;
		}
		/* Completions due now, oldest first (in order per path). */
		for (;;) {
			ev = SIM_NEVER;
			for (k = 0, i = SIM_WIRE; k < sim.n_wire; k++)
				if (sim.wire[k].done_at < ev) {
					ev = sim.wire[k].done_at;
					i = k;
				}
			if (ev > sim.now || sim.err)
				break;
			sim_deliver(i);
		}
		if (sim.now == next_tick) {
			next_tick += SIM_TICK;
			if (spray_stalled(&s, sim.now, &mask))
				for (i = 0; i < n; i++)
					if (mask & (1U << i))
						sim_fail(i);
			spray_tune(&s, sim.now);
		}
		sim_send();
	}
	SIM_ASSERT(t.used == 0 && sim.n_ready == 0);
	for (i = 0; i < n_wr; i++)
		SIM_ASSERT(sim.wr[i].covered == sim.wr[i].len);
}

static void sim_unequal_paths_share_by_rate(void)
{
	/* 40, 40, 20 and 10 Gb/s, in bytes per microsecond. */
	static const u64 rate[] = { 5000, 5000, 2500, 1250 };
	static const u64 lat[] = { 4000, 6000, 8000, 10000 };
	u64 sum = 13750, ideal, total = 0;
	u32 i;

	sim.fail_at = sim.up_at = 0;
	sim_run(4, rate, lat, 64, 0);
	CHECK(!sim.err || !printf("sim line %d\n", sim.err));
	ideal = sim.bytes * 1000 / sum;
	printf("  %llu us for %llu MiB, ideal %llu us; MiB per path:",
	       (unsigned long long)sim.end / 1000,
	       (unsigned long long)sim.bytes >> 20,
	       (unsigned long long)ideal / 1000);
	for (i = 0; i < 4; i++) {
		printf(" %.2f", s.path[i].bytes / 1048576.0);
		total += s.path[i].bytes;
	}
	printf("; chunk %u\n", s.chunk);
	CHECK(total == sim.bytes);
	CHECK(sim.end <= ideal + ideal / 10);
	for (i = 0; i < 4; i++) {
		/* Within 5% of the rate's share of the bytes. */
		u64 want = sim.bytes * rate[i] / sum;

		CHECK(s.path[i].bytes * 100 >= want * 95);
		CHECK(s.path[i].bytes * 100 <= want * 105);
	}
	/* The slow path got about a quarter of a fast one's chunks. */
	CHECK(s.path[3].chunks * 4 >= s.path[0].chunks * 9 / 10);
	CHECK(s.path[3].chunks * 4 <= s.path[0].chunks * 11 / 10);
	PASS();
}

static void sim_failover_keeps_every_byte(void)
{
	static const u64 rate[] = { 5000, 5000, 5000, 5000 };
	static const u64 lat[] = { 5000, 5000, 5000, 5000 };
	u64 ideal3;

	/* Path 1 goes silent a quarter in and never comes back. */
	sim.fail_path = 1;
	sim.fail_at = 800000;
	sim.up_at = 0;
	sim_run(4, rate, lat, 64, 1);
	CHECK(!sim.err || !printf("sim line %d\n", sim.err));
	ideal3 = sim.bytes * 1000 / 15000;
	printf("  %llu us, ideal on 3 paths %llu us; %u stale, %llu reposts\n",
	       (unsigned long long)sim.end / 1000,
	       (unsigned long long)ideal3 / 1000, sim.stale,
	       (unsigned long long)s.path[1].reposts);
	CHECK(s.path[1].state == SPRAY_PATH_DOWN && s.path[1].stalls == 1);
	CHECK(s.path[1].reposts > 0 && sim.stale == s.path[1].reposts);
	CHECK(s.path[0].out_bytes == 0 && s.path[1].out_bytes == 0);
	/* At least 0.7 of the surviving paths' throughput. */
	CHECK(sim.end * 7 <= ideal3 * 10);
	PASS();
}

static void sim_recovered_path_takes_chunks(void)
{
	static const u64 rate[] = { 5000, 5000, 5000 };
	static const u64 lat[] = { 5000, 5000, 5000 };

	sim.fail_path = 2;
	sim.fail_at = 500000;
	sim.up_at = 1500000;
	sim_run(3, rate, lat, 64, 1);
	CHECK(!sim.err || !printf("sim line %d\n", sim.err));
	printf("  %llu us; path 2: %llu chunks before, %llu after\n",
	       (unsigned long long)sim.end / 1000,
	       (unsigned long long)sim.up_chunks,
	       (unsigned long long)(s.path[2].chunks - sim.up_chunks));
	CHECK(s.path[2].state == SPRAY_PATH_UP && s.path[2].reposts > 0);
	CHECK(s.path[2].chunks - sim.up_chunks > 50);
	CHECK(sim.end < sim.bytes * 1000 / 10000);
	PASS();
}

int main(void)
{
	init_refuses_bad_params();
	pick_spreads_equal_paths();
	pick_prefers_the_faster_path();
	pick_credit_and_no_link();
	chunk_len_leaves_no_tiny_tail();
	order_pops_in_post_order();
	order_fence_for_ordered_wr();
	order_ring_full();
	order_sequence_wraps();
	chunk_ids_and_failover();
	path_up_takes_chunks_again();
	stall_detection();
	tune_grows_when_fixed_cost_dominates();
	tune_keeps_size_without_overhead();
	tune_shrinks_under_rising_latency();
	tune_clamps_credit_and_waits();
	tune_caps_round_trip();
	rate_window_sums_bursts();
	share_tune_steps_and_bounds();
	share_tune_settles_at_path0_rate();
	share_tune_with_delayed_signals();
	order_set_chunks_after_add();
	sim_unequal_paths_share_by_rate();
	sim_failover_keeps_every_byte();
	sim_recovered_path_takes_chunks();
	printf("spray: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
