// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the eMTT extent table and page size choice (emtt/emtt.c),
 * built for userspace under AddressSanitizer and UndefinedBehaviorSanitizer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emtt/emtt.h"

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

#define K4 0x1000ULL
#define M2 0x200000ULL
#define G1 0x40000000ULL
/* rxe's page_size_cap: every size from 4 KiB up. */
#define CAP_RXE 0xfffff000ULL

static struct emtt_extent ext[4096];
static struct emtt_table t;

static void add_merges_contiguous_runs(void)
{
	emtt_init(&t, ext, 4, 0x10000, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000, K4) == 0);
	CHECK(emtt_add(&t, 0x101000, K4) == 0);
	CHECK(emtt_add(&t, 0x102000, 2 * K4) == 0);
	CHECK(t.n == 1 && t.ext[0].addr == 0x100000 && t.ext[0].len == 4 * K4);
	CHECK(emtt_add(&t, 0x200000, K4) == 0);
	CHECK(t.n == 2 && t.length == 5 * K4);
	printf("PASS %s\n", __func__);
	passed++;
}

static void add_refuses_empty_wrapping_and_overflow(void)
{
	emtt_init(&t, ext, 2, 0, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x1000, 0) == -EINVAL);
	CHECK(emtt_add(&t, ~0ULL - K4 + 2, K4) == -EINVAL);
	CHECK(emtt_add(&t, 0x1000, 1ULL << 63) == 0);
	CHECK(emtt_add(&t, 0x9000000000000000ULL, 1) == -EINVAL);
	CHECK(t.n == 1 && t.length == 1ULL << 63);
	printf("PASS %s\n", __func__);
	passed++;
}

static void add_past_room_is_enospc(void)
{
	emtt_init(&t, ext, 2, 0, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x1000, K4) == 0);
	CHECK(emtt_add(&t, 0x3000, K4) == 0);
	CHECK(emtt_add(&t, 0x4000, K4) == 0);	/* merges: no room needed */
	CHECK(emtt_add(&t, 0x9000, K4) == -ENOSPC);
	CHECK(t.n == 2 && t.length == 3 * K4);
	printf("PASS %s\n", __func__);
	passed++;
}

static void empty_table_has_no_page_size(void)
{
	emtt_init(&t, ext, 2, 0, EMTT_KIND_HOST);
	CHECK(emtt_best_shift(&t, CAP_RXE) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == -EINVAL);
	CHECK(emtt_entries(&t, 12) == 0);
	printf("PASS %s\n", __func__);
	passed++;
}

/* 4 KiB pages scattered in memory: one entry per page. */
static void scattered_small_pages_map_page_by_page(void)
{
	u64 iova = 0x7f0000000000ULL;
	int i;

	emtt_init(&t, ext, 64, iova, EMTT_KIND_HOST);
	for (i = 0; i < 64; i++)
		CHECK(emtt_add(&t, 0x100000000ULL + (u64)(63 - i) * 3 * K4,
			       K4) == 0);
	CHECK(t.n == 64);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 12 && t.entries == 64);
	printf("PASS %s\n", __func__);
	passed++;
}

/* 1 GiB of 2 MiB huge pages, none adjacent: 512 entries, not 262144. */
static void gib_of_huge_pages_is_512_entries(void)
{
	u64 iova = 0x7f0000000000ULL;
	int i;

	emtt_init(&t, ext, 512, iova, EMTT_KIND_HOST);
	for (i = 0; i < 512; i++)
		CHECK(emtt_add(&t, 0x100000000ULL + (u64)(511 - i) * 2 * M2,
			       M2) == 0);
	CHECK(t.n == 512 && t.length == G1);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 21 && t.entries == 512);
	CHECK(emtt_entries(&t, 12) == 262144);
	printf("PASS %s\n", __func__);
	passed++;
}

/* Pages that are physically contiguous merge into one extent and page. */
static void contiguous_huge_pages_merge(void)
{
	emtt_init(&t, ext, 8, 0x7f0040000000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x140000000ULL, M2) == 0);
	CHECK(emtt_add(&t, 0x140000000ULL + M2, M2) == 0);
	CHECK(t.n == 1);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 22 && t.entries == 1);
	/* A 1 GiB gigantic page. */
	emtt_init(&t, ext, 8, 0x7f0040000000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x140000000ULL, G1) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 30 && t.entries == 1);
	printf("PASS %s\n", __func__);
	passed++;
}

/* An iova at another offset within 2 MiB than the memory: 4 KiB pages. */
static void iova_offset_mismatch_falls_back(void)
{
	emtt_init(&t, ext, 8, 0x7f0000001000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL, M2) == 0);
	CHECK(emtt_add(&t, 0x100800000ULL, M2) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 12 && t.entries == 1024);
	/* 64 KiB apart: 64 KiB pages. */
	emtt_init(&t, ext, 8, 0x7f0000010000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL, M2) == 0);
	CHECK(emtt_add(&t, 0x100800000ULL, M2) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 16);
	printf("PASS %s\n", __func__);
	passed++;
}

/* Part huge pages, part small pages: the small pages set the size. */
static void mixed_huge_and_small_pages_fall_back(void)
{
	int i;

	emtt_init(&t, ext, 600, 0x7f0000000000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL, M2) == 0);
	for (i = 0; i < 512; i++)
		CHECK(emtt_add(&t, 0x200000000ULL + (u64)i * 2 * K4, K4) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 12 && t.entries == 1024);
	printf("PASS %s\n", __func__);
	passed++;
}

/* 4 MiB from 4 KiB into a huge page: three 2 MiB entries. */
static void unaligned_range_of_huge_pages(void)
{
	u64 iova = 0x7f0000200000ULL + K4;

	emtt_init(&t, ext, 8, iova, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL + K4, M2 - K4) == 0);
	CHECK(emtt_add(&t, 0x100600000ULL, M2) == 0);
	CHECK(emtt_add(&t, 0x100a00000ULL, K4) == 0);
	CHECK(t.length == 4 * 0x100000ULL);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 21 && t.entries == 3);
	printf("PASS %s\n", __func__);
	passed++;
}

/* A small MR inside a huge page gets no page larger than its span. */
static void small_mr_gets_no_oversized_page(void)
{
	emtt_init(&t, ext, 8, 0x7f0000000000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL, 3 * K4) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 13 && t.entries == 2);
	emtt_init(&t, ext, 8, 0x7f0000000000ULL + 100, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL + 100, 8) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 12 && t.entries == 1);
	printf("PASS %s\n", __func__);
	passed++;
}

/* Only the sizes the parent lists are used. */
static void parent_page_size_cap_is_honoured(void)
{
	int i;

	emtt_init(&t, ext, 8, 0x7f0000000000ULL, EMTT_KIND_HOST);
	for (i = 0; i < 4; i++)
		CHECK(emtt_add(&t, 0x100000000ULL + (u64)i * 2 * M2, M2) == 0);
	CHECK(emtt_best_shift(&t, K4) == 12);
	CHECK(emtt_best_shift(&t, K4 | 0x10000) == 16);
	CHECK(emtt_best_shift(&t, K4 | 0x10000 | M2 | G1) == 21);
	/* Sizes below 4 KiB are never used. */
	CHECK(emtt_best_shift(&t, 0x800) == 0);
	/* Nothing the alignment allows: no size at all. */
	CHECK(emtt_choose(&t, G1) == -EINVAL);
	CHECK(t.page_shift == 0 && t.entries == 0);
	printf("PASS %s\n", __func__);
	passed++;
}

/* Adding after a choice clears it. */
static void add_after_choose_clears_choice(void)
{
	emtt_init(&t, ext, 8, 0x7f0000000000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100000000ULL, M2) == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0 && t.page_shift == 21);
	CHECK(emtt_add(&t, 0x300000000ULL, K4) == 0);
	CHECK(t.page_shift == 0 && t.entries == 0);
	CHECK(emtt_choose(&t, CAP_RXE) == 0 && t.page_shift == 21);
	CHECK(t.entries == 2);
	printf("PASS %s\n", __func__);
	passed++;
}

/*
 * Random layouts against a brute force: the pages the parent's mapping
 * visits (as ib_sg_to_pages() walks a scatter list) are the entries, every
 * inner boundary is page aligned at the chosen size, iova and address agree
 * within a page, and the next larger size the parent has would break one
 * of those.
 */
static void random_layouts_match_brute_force(void)
{
	unsigned int seed = 12345;
	int round;

	for (round = 0; round < 20000; round++) {
		u64 iova, addr, mask, pages, prev_end = 0, p;
		u32 shift, i, n = 1 + rand_r(&seed) % 16;
		u64 cap = CAP_RXE;
		int bad;

		if (rand_r(&seed) % 3 == 0)
			cap = K4 | 0x10000 | M2 | G1;
		emtt_init(&t, ext, 16, 0, EMTT_KIND_HOST);
		addr = 0x100000000ULL;
		for (i = 0; i < n; i++) {
			u64 unit = rand_r(&seed) % 2 ? M2 : K4;
			u64 len = unit * (1 + rand_r(&seed) % 4);
			u64 gap = unit * (rand_r(&seed) % 3);

			if (i == 0 && rand_r(&seed) % 2)
				addr += K4 * (rand_r(&seed) % 512);
			addr += gap;
			CHECK(emtt_add(&t, addr, len) == 0);
			addr += len;
		}
		/* The first extent's offset decides the iova's, mostly. */
		iova = 0x7f0000000000ULL + (t.ext[0].addr & (G1 - 1));
		if (rand_r(&seed) % 4 == 0)
			iova += K4 * (rand_r(&seed) % 4);
		t.iova = iova;
		CHECK(emtt_choose(&t, cap) == 0);
		shift = t.page_shift;
		mask = (1ULL << shift) - 1;
		CHECK(cap & (1ULL << shift));
		CHECK(((iova ^ t.ext[0].addr) & mask) == 0);
		pages = 0;
		for (i = 0; i < t.n; i++) {
			if (i)
				CHECK((t.ext[i].addr & mask) == 0);
			if (i + 1 < t.n)
				CHECK(((t.ext[i].addr + t.ext[i].len) & mask) == 0);
			for (p = t.ext[i].addr & ~mask;
			     p < t.ext[i].addr + t.ext[i].len; p += mask + 1)
				if (p != prev_end || !i)
					pages++;
			prev_end = t.ext[i].addr + t.ext[i].len;
		}
		CHECK(pages == t.entries);
		/* The next size up that the parent has is not allowed. */
		for (p = shift + 1; p <= EMTT_MAX_SHIFT; p++) {
			u64 m = (1ULL << p) - 1;

			if (!(cap & (1ULL << p)))
				continue;
			bad = ((iova ^ t.ext[0].addr) & m) != 0 ||
			      (1ULL << p) > ((t.length + (t.ext[0].addr & (K4 - 1)) +
					      K4 - 1) & ~(K4 - 1));
			for (i = 0; i < t.n && !bad; i++)
				bad = (i && (t.ext[i].addr & m)) ||
				      (i + 1 < t.n &&
				       ((t.ext[i].addr + t.ext[i].len) & m));
			CHECK(bad);
			break;
		}
	}
	printf("PASS %s\n", __func__);
	passed++;
}

/* Unmerged, adjacent runs keep their own boundaries: the worst case. */
static void unmerged_runs_bound_the_entries(void)
{
	int i;

	emtt_init(&t, ext, 8, 0x7f0000000000ULL, EMTT_KIND_DMABUF);
	t.merge = false;
	for (i = 0; i < 4; i++)
		CHECK(emtt_add(&t, 0x100000000ULL + (u64)i * M2, M2) == 0);
	CHECK(t.n == 4);
	CHECK(emtt_choose(&t, CAP_RXE) == 0);
	CHECK(t.page_shift == 21 && t.entries == 4);
	emtt_init(&t, ext, 8, 0x7f0000000000ULL, EMTT_KIND_DMABUF);
	for (i = 0; i < 4; i++)
		CHECK(emtt_add(&t, 0x100000000ULL + (u64)i * M2, M2) == 0);
	CHECK(t.n == 1 && emtt_choose(&t, CAP_RXE) == 0 && t.entries == 1);
	printf("PASS %s\n", __func__);
	passed++;
}

/* A budget of 4 KiB pieces: large pages only while they fit. */
static void page_budget_shrinks_the_page_size(void)
{
	int i;

	/* 1 GiB of 2 MiB pages from 4 KiB in: 513 entries of 512 pieces. */
	emtt_init(&t, ext, 600, 0x7f0000001000ULL, EMTT_KIND_HOST);
	CHECK(emtt_add(&t, 0x100001000ULL, M2 - K4) == 0);
	for (i = 1; i < 512; i++)
		CHECK(emtt_add(&t, 0x100000000ULL + (u64)i * 2 * M2, M2) == 0);
	CHECK(emtt_add(&t, 0x100000000ULL + 512ULL * 2 * M2, K4) == 0);
	CHECK(emtt_choose_within(&t, CAP_RXE, 0) == 0);
	CHECK(t.page_shift == 21 && t.entries == 513);
	CHECK(emtt_choose_within(&t, CAP_RXE, 262656) == 0);
	CHECK(t.page_shift == 21 && t.entries == 513);
	/* One piece short: down to 1 MiB pages (1025 entries of 256). */
	CHECK(emtt_choose_within(&t, CAP_RXE, 262655) == 0);
	CHECK(t.page_shift == 20 && t.entries == 1025);
	/* A parent with 4 KiB and 2 MiB only goes straight to 4 KiB. */
	CHECK(emtt_choose_within(&t, K4 | M2, 262655) == 0);
	CHECK(t.page_shift == 12 && t.entries == 262144);
	CHECK(emtt_choose_within(&t, K4 | M2, 262144) == 0);
	CHECK(emtt_choose_within(&t, K4 | M2, 262143) == -E2BIG);
	printf("PASS %s\n", __func__);
	passed++;
}

static void kind_names(void)
{
	CHECK(!strcmp(emtt_kind_name(EMTT_KIND_HOST), "host"));
	CHECK(!strcmp(emtt_kind_name(EMTT_KIND_DMABUF), "dmabuf"));
	CHECK(!strcmp(emtt_kind_name(EMTT_NUM_KINDS), "unknown"));
	printf("PASS %s\n", __func__);
	passed++;
}

int main(void)
{
	add_merges_contiguous_runs();
	add_refuses_empty_wrapping_and_overflow();
	add_past_room_is_enospc();
	empty_table_has_no_page_size();
	scattered_small_pages_map_page_by_page();
	gib_of_huge_pages_is_512_entries();
	contiguous_huge_pages_merge();
	iova_offset_mismatch_falls_back();
	mixed_huge_and_small_pages_fall_back();
	unaligned_range_of_huge_pages();
	small_mr_gets_no_oversized_page();
	parent_page_size_cap_is_honoured();
	add_after_choose_clears_choice();
	random_layouts_match_brute_force();
	unmerged_runs_bound_the_entries();
	page_budget_shrinks_the_page_size();
	kind_names();
	printf("emtt: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
