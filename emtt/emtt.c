// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar eMTT: extent tables and the choice of a parent MR's page size.
 *
 * Kernel-free: builds into stellar.ko and into tests/unit/.
 */
#include "emtt/emtt.h"

#ifdef __KERNEL__
#include <linux/errno.h>
#else
#include <errno.h>
#endif

/**
 * emtt_init() - start an empty table
 * @t: the table
 * @ext: room for @max extents, owned by the caller
 * @max: how many
 * @iova: the address of the first byte as work requests name it
 * @kind: where the memory comes from
 */
void emtt_init(struct emtt_table *t, struct emtt_extent *ext, u32 max,
	       u64 iova, enum emtt_kind kind)
{
	t->iova = iova;
	t->length = 0;
	t->kind = kind;
	t->n = 0;
	t->max = max;
	t->page_shift = 0;
	t->entries = 0;
	t->merge = true;
	t->ext = ext;
}

/**
 * emtt_add() - append the next run of device addresses
 * @t: the table
 * @addr: its first device address
 * @len: its bytes
 *
 * A run that starts where the last one ends extends it (unless @t->merge
 * is cleared).
 *
 * Return: 0; -EINVAL for an empty run, one that wraps the address space or
 * one that takes the table past 2^63 bytes; -ENOSPC if the table is full.
 */
int emtt_add(struct emtt_table *t, u64 addr, u64 len)
{
	struct emtt_extent *last = t->n ? &t->ext[t->n - 1] : NULL;

	if (!len || addr + len < addr || t->length + len < t->length ||
	    t->length + len > (1ULL << 63))
		return -EINVAL;
	if (last && t->merge && last->addr + last->len == addr) {
		last->len += len;
	} else {
		if (t->n == t->max)
			return -ENOSPC;
		t->ext[t->n].addr = addr;
		t->ext[t->n].len = len;
		t->n++;
	}
	t->length += len;
	t->page_shift = 0;
	t->entries = 0;
	return 0;
}

/* Index of the lowest set bit of a non-zero @v. */
static u32 emtt_lowest_bit(u64 v)
{
	u32 b = 0;

	while (!(v & 1)) {
		v >>= 1;
		b++;
	}
	return b;
}

/* Index of the highest set bit of a non-zero @v. */
static u32 emtt_highest_bit(u64 v)
{
	u32 b = 0;

	while (v >>= 1)
		b++;
	return b;
}

/**
 * emtt_best_shift() - the largest page size the table can be mapped with
 * @t: a non-empty table
 * @page_size_cap: page sizes the parent supports, one bit each
 *
 * A page size qualifies when the parent supports it, every boundary between
 * two extents is a multiple of it, the iova and the first device address
 * have the same offset within it, and it is no larger than the table's
 * span from that offset (a larger page would only cover memory the MR does
 * not own).  Sizes from 4 KiB to 2 GiB are considered.
 *
 * Return: the page size's log2, or 0 if none qualifies (an empty table, or
 * a parent without any size the table's alignment allows).
 */
u32 emtt_best_shift(const struct emtt_table *t, u64 page_size_cap)
{
	u64 align, cand, span;
	u32 i, limit;

	if (!t->n)
		return 0;
	/* Every bit set in @align is an address bit a page must not span. */
	align = t->iova ^ t->ext[0].addr;
	for (i = 0; i < t->n; i++) {
		if (i)
			align |= t->ext[i].addr;
		if (i + 1 < t->n)
			align |= t->ext[i].addr + t->ext[i].len;
	}
	limit = EMTT_MAX_SHIFT;
	if (align && emtt_lowest_bit(align) < limit)
		limit = emtt_lowest_bit(align);
	/* The 4 KiB pages the table touches (at least one). */
	span = (t->length + (t->ext[0].addr & ((1ULL << EMTT_MIN_SHIFT) - 1)) +
		(1ULL << EMTT_MIN_SHIFT) - 1) & ~((1ULL << EMTT_MIN_SHIFT) - 1);
	if (emtt_highest_bit(span) < limit)
		limit = emtt_highest_bit(span);
	if (limit < EMTT_MIN_SHIFT)
		return 0;
	/* Sizes from 4 KiB up to 2^limit that the parent supports. */
	cand = page_size_cap & ~((1ULL << EMTT_MIN_SHIFT) - 1) &
	       ((1ULL << (limit + 1)) - 1);
	return cand ? emtt_highest_bit(cand) : 0;
}

/**
 * emtt_entries() - parent MR entries the table needs at a page size
 * @t: the table
 * @shift: the page size's log2, one emtt_best_shift() allows or smaller
 *
 * With every inner boundary page aligned, the entries are the pages from
 * the first extent's page start to the last byte.
 *
 * Return: the number of entries (0 for an empty table).
 */
u64 emtt_entries(const struct emtt_table *t, u32 shift)
{
	u64 mask = (1ULL << shift) - 1;
	u64 head;

	if (!t->n)
		return 0;
	head = t->ext[0].addr & mask;
	return (head + t->length + mask) >> shift;
}

/**
 * emtt_choose() - pick the page size and count the entries
 * @t: the table, complete
 * @page_size_cap: page sizes the parent supports
 *
 * Return: 0 with @t->page_shift and @t->entries set, or -EINVAL if the
 * table is empty or no page size fits.
 */
int emtt_choose(struct emtt_table *t, u64 page_size_cap)
{
	u32 shift = emtt_best_shift(t, page_size_cap);

	if (!shift)
		return -EINVAL;
	t->page_shift = shift;
	t->entries = emtt_entries(t, shift);
	return 0;
}

/**
 * emtt_choose_within() - emtt_choose() for a parent with a page budget
 * @t: the table, complete
 * @page_size_cap: page sizes the parent supports
 * @max_small: most 4 KiB pages the parent may hold for the MR: entries
 *	times (page size / 4 KiB), 0 for no bound
 *
 * Some parents expand every large page into 4 KiB pieces in one array
 * (rxe since 6.4): then a large page is worth it only while the pieces of
 * all entries fit.  Takes the largest page size within @max_small, smaller
 * sizes down to 4 KiB as needed.
 *
 * Return: 0 with @t->page_shift and @t->entries set; -EINVAL if no page
 * size fits the table; -E2BIG if even 4 KiB pages exceed @max_small.
 */
int emtt_choose_within(struct emtt_table *t, u64 page_size_cap,
		       u64 max_small)
{
	u32 shift = emtt_best_shift(t, page_size_cap);
	u64 entries;

	if (!shift)
		return -EINVAL;
	for (;;) {
		entries = emtt_entries(t, shift);
		if (!max_small ||
		    entries <= (max_small >> (shift - EMTT_MIN_SHIFT)))
			break;
		/* The next smaller size the parent has; 4 KiB at worst. */
		do {
			shift--;
		} while (shift > EMTT_MIN_SHIFT &&
			 !(page_size_cap & (1ULL << shift)));
		if (shift < EMTT_MIN_SHIFT ||
		    !(page_size_cap & (1ULL << shift)))
			return -E2BIG;
	}
	t->page_shift = shift;
	t->entries = entries;
	return 0;
}

/**
 * emtt_kind_name() - a memory kind as the operator sees it
 * @kind: the kind
 *
 * Return: "host", "dmabuf", or "unknown".
 */
const char *emtt_kind_name(enum emtt_kind kind)
{
	switch (kind) {
	case EMTT_KIND_HOST:
		return "host";
	case EMTT_KIND_DMABUF:
		return "dmabuf";
	default:
		return "unknown";
	}
}
