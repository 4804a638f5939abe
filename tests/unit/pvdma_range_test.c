// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the pin cache bookkeeping (pvdma/pvdma_range.c), built for
 * userspace under AddressSanitizer and UndefinedBehaviorSanitizer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pvdma/pvdma_range.h"

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

static const char mm_a[1], mm_b[1];

static struct pvdma_range *mk(const void *owner, u64 first, u64 last,
			      bool writable, unsigned int refs)
{
	struct pvdma_range *r = calloc(1, sizeof(*r));

	r->owner = owner;
	r->first = first;
	r->last = last;
	r->writable = writable;
	r->refs = refs;
	return r;
}

static void find_returns_range_that_covers_request(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *r = mk(mm_a, 10, 19, true, 1);

	pvdma_range_set_init(&s, 100);
	CHECK(pvdma_range_insert(&s, r));
	CHECK(pvdma_range_find(&s, mm_a, 10, 19, true) == r);
	CHECK(pvdma_range_find(&s, mm_a, 12, 15, false) == r);
	CHECK(!pvdma_range_find(&s, mm_a, 9, 15, false));
	CHECK(!pvdma_range_find(&s, mm_a, 15, 20, false));
	CHECK(!pvdma_range_find(&s, mm_b, 12, 15, false));
	free(r);
	passed++;
	printf("PASS %s\n", __func__);
}

static void read_only_range_does_not_serve_write_request(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *ro = mk(mm_a, 0, 9, false, 1);

	pvdma_range_set_init(&s, 100);
	pvdma_range_insert(&s, ro);
	CHECK(pvdma_range_find(&s, mm_a, 0, 9, false) == ro);
	CHECK(!pvdma_range_find(&s, mm_a, 0, 9, true));
	free(ro);
	passed++;
	printf("PASS %s\n", __func__);
}

static void find_skips_earlier_ranges_that_end_too_soon(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *a = mk(mm_a, 0, 4, true, 1);
	struct pvdma_range *b = mk(mm_a, 2, 50, true, 1);
	struct pvdma_range *c = mk(mm_a, 60, 70, true, 1);

	pvdma_range_set_init(&s, 100);
	pvdma_range_insert(&s, c);
	pvdma_range_insert(&s, a);
	pvdma_range_insert(&s, b);
	CHECK(pvdma_range_find(&s, mm_a, 3, 40, true) == b);
	CHECK(pvdma_range_find(&s, mm_a, 1, 3, true) == a);
	CHECK(pvdma_range_find(&s, mm_a, 65, 70, true) == c);
	CHECK(!pvdma_range_find(&s, mm_a, 45, 65, true));
	free(a);
	free(b);
	free(c);
	passed++;
	printf("PASS %s\n", __func__);
}

static void idle_ranges_stay_cached_until_over_bound(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *a = mk(mm_a, 0, 9, true, 1);	/* 10 pages */
	struct pvdma_range *b = mk(mm_a, 100, 109, true, 1);

	pvdma_range_set_init(&s, 15);
	pvdma_range_insert(&s, a);
	pvdma_range_insert(&s, b);
	CHECK(!pvdma_range_put(&s, a));
	CHECK(s.idle_pages == 10);
	CHECK(!pvdma_range_evict(&s, false));
	CHECK(pvdma_range_find(&s, mm_a, 0, 9, true) == a);
	CHECK(!pvdma_range_put(&s, b));
	CHECK(s.idle_pages == 20);
	/* Over the bound: the least recently used (a) goes first. */
	CHECK(pvdma_range_evict(&s, false) == a);
	CHECK(!a->listed && s.idle_pages == 10 && s.nr == 1);
	CHECK(!pvdma_range_evict(&s, false));
	CHECK(!pvdma_range_find(&s, mm_a, 0, 9, true));
	free(a);
	free(b);
	passed++;
	printf("PASS %s\n", __func__);
}

static void reuse_makes_range_most_recently_used(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *a = mk(mm_a, 0, 0, true, 1);
	struct pvdma_range *b = mk(mm_a, 1, 1, true, 1);

	pvdma_range_set_init(&s, 0);
	pvdma_range_insert(&s, a);
	pvdma_range_insert(&s, b);
	pvdma_range_put(&s, a);
	pvdma_range_put(&s, b);
	pvdma_range_get(&s, a);		/* a in use again */
	CHECK(s.idle_pages == 1);
	pvdma_range_put(&s, a);		/* now a is newer than b */
	CHECK(pvdma_range_evict(&s, true) == b);
	CHECK(pvdma_range_evict(&s, true) == a);
	CHECK(!pvdma_range_evict(&s, true));
	CHECK(s.nr == 0 && s.idle_pages == 0);
	free(a);
	free(b);
	passed++;
	printf("PASS %s\n", __func__);
}

static void ranges_in_use_are_never_evicted(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *a = mk(mm_a, 0, 99, true, 2);

	pvdma_range_set_init(&s, 0);
	pvdma_range_insert(&s, a);
	CHECK(!pvdma_range_evict(&s, true));
	CHECK(!pvdma_range_put(&s, a));
	CHECK(!pvdma_range_evict(&s, true));	/* one user left */
	free(a);
	passed++;
	printf("PASS %s\n", __func__);
}

static void unlisted_range_in_use_is_freed_by_last_put(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *a = mk(mm_a, 0, 9, true, 2);

	pvdma_range_set_init(&s, 100);
	pvdma_range_insert(&s, a);
	CHECK(!pvdma_range_unlist(&s, a));	/* in use: caller keeps it */
	CHECK(!pvdma_range_find(&s, mm_a, 0, 9, true));
	CHECK(s.nr == 0);
	CHECK(!pvdma_range_put(&s, a));
	CHECK(pvdma_range_put(&s, a));		/* last user frees */
	CHECK(s.idle_pages == 0);
	free(a);
	passed++;
	printf("PASS %s\n", __func__);
}

static void unlisting_idle_range_frees_it_once(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *a = mk(mm_a, 0, 9, true, 1);

	pvdma_range_set_init(&s, 100);
	pvdma_range_insert(&s, a);
	pvdma_range_put(&s, a);
	CHECK(pvdma_range_unlist(&s, a));
	CHECK(s.idle_pages == 0 && s.nr == 0);
	/* A second invalidation of the same range changes nothing. */
	CHECK(pvdma_range_unlist(&s, a));
	CHECK(s.idle_pages == 0 && s.nr == 0);
	CHECK(!pvdma_range_evict(&s, true));
	free(a);
	passed++;
	printf("PASS %s\n", __func__);
}

static void full_set_refuses_insert(void)
{
	struct pvdma_range_set s;
	struct pvdma_range **all = calloc(PVDMA_RANGE_MAX + 1, sizeof(*all));
	struct pvdma_range *extra;
	int i;

	pvdma_range_set_init(&s, ~0ULL);
	for (i = 0; i < PVDMA_RANGE_MAX; i++) {
		all[i] = mk(mm_a, (u64)i * 2, (u64)i * 2, true, 1);
		if (!pvdma_range_insert(&s, all[i]))
			break;
	}
	extra = mk(mm_b, 0, 0, true, 1);
	CHECK(i == PVDMA_RANGE_MAX);
	CHECK(!pvdma_range_insert(&s, extra));
	CHECK(!extra->listed);
	CHECK(pvdma_range_put(&s, extra));	/* unlisted: freed at once */
	CHECK(pvdma_range_find(&s, mm_a, 2 * 4000, 2 * 4000, true) == all[4000]);
	for (i = 0; i < PVDMA_RANGE_MAX; i++)
		free(all[i]);
	free(all);
	free(extra);
	passed++;
	printf("PASS %s\n", __func__);
}

static void nested_and_overlapping_ranges_are_all_found(void)
{
	struct pvdma_range_set s;
	struct pvdma_range *outer = mk(mm_a, 100, 199, false, 1);
	struct pvdma_range *inner = mk(mm_a, 120, 129, true, 1);
	struct pvdma_range *left = mk(mm_a, 50, 110, true, 1);
	struct pvdma_range *right = mk(mm_a, 190, 300, true, 1);
	struct pvdma_range *other = mk(mm_b, 0, 1000, true, 1);

	pvdma_range_set_init(&s, 1000);
	pvdma_range_insert(&s, other);
	pvdma_range_insert(&s, outer);
	pvdma_range_insert(&s, inner);
	pvdma_range_insert(&s, left);
	pvdma_range_insert(&s, right);
	/* Writable inside inner: only inner (outer is read-only). */
	CHECK(pvdma_range_find(&s, mm_a, 121, 125, true) == inner);
	/* Read-only inside inner: inner or outer both hold it. */
	CHECK(pvdma_range_find(&s, mm_a, 121, 125, false) == inner ||
	      pvdma_range_find(&s, mm_a, 121, 125, false) == outer);
	/* Read-only across inner's end: only outer. */
	CHECK(pvdma_range_find(&s, mm_a, 125, 150, false) == outer);
	CHECK(!pvdma_range_find(&s, mm_a, 125, 150, true));
	/* Where left and outer overlap: each covers its own part only. */
	CHECK(pvdma_range_find(&s, mm_a, 100, 110, true) == left);
	CHECK(!pvdma_range_find(&s, mm_a, 105, 111, true));
	CHECK(pvdma_range_find(&s, mm_a, 105, 111, false) == outer);
	CHECK(pvdma_range_find(&s, mm_a, 195, 300, true) == right);
	CHECK(!pvdma_range_find(&s, mm_a, 99, 300, false));
	/* mm_b's huge range never serves mm_a, and vice versa. */
	CHECK(!pvdma_range_find(&s, mm_a, 0, 10, false));
	CHECK(pvdma_range_find(&s, mm_b, 120, 125, true) == other);
	/* Unlisting inner leaves outer for reads and nothing for writes. */
	pvdma_range_unlist(&s, inner);
	CHECK(pvdma_range_find(&s, mm_a, 121, 125, false) == outer);
	CHECK(!pvdma_range_find(&s, mm_a, 121, 125, true));
	pvdma_range_unlist(&s, outer);
	CHECK(!pvdma_range_find(&s, mm_a, 121, 125, false));
	CHECK(pvdma_range_find(&s, mm_a, 60, 110, false) == left);
	CHECK(s.nr == 3);
	free(outer);
	free(inner);
	free(left);
	free(right);
	free(other);
	passed++;
	printf("PASS %s\n", __func__);
}

/* Reference answer: does any listed range of the array cover the request? */
static bool brute_covered(struct pvdma_range **all, int n, const void *owner,
			  u64 first, u64 last, bool writable)
{
	int i;

	for (i = 0; i < n; i++)
		if (all[i]->listed && all[i]->owner == owner &&
		    all[i]->first <= first && all[i]->last >= last &&
		    (all[i]->writable || !writable))
			return true;
	return false;
}

/*
 * Thousands of random ranges of two owners at the same addresses, inserted
 * and unlisted at random: every lookup agrees with a brute-force scan, and
 * what it returns really covers the request.
 */
static void many_random_ranges_agree_with_brute_force(void)
{
	enum { N = 6000, OPS = 40000 };
	struct pvdma_range_set s;
	struct pvdma_range **all = calloc(N, sizeof(*all));
	unsigned int seed = 12345;
	int i, op, listed = 0;

	pvdma_range_set_init(&s, ~0ULL);
	for (i = 0; i < N; i++) {
		u64 first = (u64)(rand_r(&seed) % 20000);
		u64 len = (u64)(rand_r(&seed) % 64);

		all[i] = mk(i & 1 ? mm_b : mm_a, first, first + len,
			    rand_r(&seed) & 1, 1);
	}
	for (op = 0; op < OPS; op++) {
		struct pvdma_range *r = all[rand_r(&seed) % N], *got;
		const void *owner = rand_r(&seed) & 1 ? mm_b : mm_a;
		u64 first = (u64)(rand_r(&seed) % 20100);
		u64 last = first + (u64)(rand_r(&seed) % 40);
		bool w = rand_r(&seed) & 1;

		switch (rand_r(&seed) % 3) {
		case 0:
			if (!r->listed) {
				CHECK(pvdma_range_insert(&s, r));
				listed++;
			}
			break;
		case 1:
			if (r->listed) {
				pvdma_range_unlist(&s, r);
				listed--;
			}
			break;
		default:
			got = pvdma_range_find(&s, owner, first, last, w);
			CHECK(!!got == brute_covered(all, N, owner, first,
						     last, w));
			CHECK(!got || (got->listed && got->owner == owner &&
				       got->first <= first &&
				       got->last >= last &&
				       (got->writable || !w)));
		}
		CHECK(s.nr == (unsigned int)listed);
	}
	for (i = 0; i < N; i++)
		free(all[i]);
	free(all);
	passed++;
	printf("PASS %s\n", __func__);
}

int main(void)
{
	find_returns_range_that_covers_request();
	read_only_range_does_not_serve_write_request();
	find_skips_earlier_ranges_that_end_too_soon();
	idle_ranges_stay_cached_until_over_bound();
	reuse_makes_range_most_recently_used();
	ranges_in_use_are_never_evicted();
	unlisted_range_in_use_is_freed_by_last_put();
	unlisting_idle_range_frees_it_once();
	full_set_refuses_insert();
	nested_and_overlapping_ranges_are_all_found();
	many_random_ranges_agree_with_brute_force();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
