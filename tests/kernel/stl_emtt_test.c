// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_emtt_test: the eMTT translation of Stellar MRs over huge pages.
 *
 *   stl_emtt_test -a stellar0 -b stellar1 [-g GID_INDEX] [-t NAME]
 *   stl_emtt_test -a stellar0 -b stellar1 -B MIB    (benchmark)
 *
 * Device A registers memory: transparent huge pages, hugetlbfs pages, small
 * pages, and mixes and unaligned ranges of them.  The entries its parent MR
 * needs are predicted here from the physical pages (/proc/self/pagemap,
 * root) and the parent's page_size_cap, independently of the module; the
 * module's gauges (ports/1/hw_counters/emtt_entries, emtt_extents) must
 * move by exactly that, and device B, connected over RC, writes into the
 * region and reads it back across huge-page boundaries, bytes compared.
 * hugetlbfs subtests need free 2 MiB pages (vm.nr_hugepages).  Each
 * subtest prints PASS/FAIL NAME; the last line is "N passed, N failed".
 *
 *   stl_emtt_test -a stellar0 -b PEER -e KINDS      (dma-buf subtests)
 *
 * -e runs ibv_reg_dmabuf_mr subtests per exporter in the comma list KINDS:
 * exp4k, exp64k, exp2m (the test exporter tests/kernel/dmabuf, loaded),
 * udmabuf, udmabuf-huge, heap; any exp* adds the exporter's move,
 * revocation, bad-input and owner-exit subtests; "gpu" runs libstellar-gpu
 * over the fake CUDA driver named by STELLAR_LIBCUDA.
 *
 * -B registers MIB MiB of small pages, of THP and of hugetlbfs pages and
 * of a 2 MiB-chunk dma-buf and prints the entries and the first
 * registration's time for each, then the write bandwidth into the dma-buf
 * MR against host memory and the revocation times.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"
#include "dmabuf/stl_dmabuf_exp.h"
#include "stellar_cuda.h"
#include "stellar_gpu.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21U << 26)
#endif
#define K4 4096UL
#define M2 (2UL << 20)
#define PEER_SECONDS 60
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	    IBV_ACCESS_REMOTE_READ)

static const char *dev_a = "stellar0", *dev_b = "stellar1", *only;
static int gid_index = 1;
static int passed, failed;
static char why[256];
static uint64_t cap;

static struct tlib_side A, B;

static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

static long long sysfs_read(const char *dev, const char *rel)
{
	return tlib_sysfs_read(dev, rel);
}

static int sysfs_write(const char *rel, long long v)
{
	return tlib_sysfs_write(dev_a, rel, v);
}

static long long counter(const char *name)
{
	return tlib_hw_counter(dev_a, name);
}

/* ---- the prediction, from the physical pages ---- */

struct layout {
	int n;			/* extents */
	int shift;		/* page size the parent MR should get */
	uint64_t entries;
	int huge;		/* pages that were 2 MiB aligned runs */
};

/* Physical address of each 4 KiB page of [p, p + len), from pagemap. */
static int phys_pages(void *p, size_t len, uint64_t *pa, size_t npages)
{
	uintptr_t first = (uintptr_t)p / K4;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t i;

	if (fd < 0)
		return fail("pagemap: %s", strerror(errno));
	if (pread(fd, pa, npages * 8, first * 8) != (ssize_t)(npages * 8)) {
		close(fd);
		return fail("pagemap read: %s", strerror(errno));
	}
	close(fd);
	for (i = 0; i < npages; i++) {
		if (!(pa[i] >> 63) || !(pa[i] & ((1ULL << 55) - 1)))
			return fail("page %zu not present or no PFN (root?)", i);
		pa[i] = (pa[i] & ((1ULL << 55) - 1)) * K4;
	}
	(void)len;
	return 0;
}

/*
 * The page size and entries a parent MR over [p, p + len) at @iova should
 * have: the largest size in @cap, no larger than the span, such that the
 * iova and the memory agree within a page and every break between
 * physically contiguous runs falls on a page boundary.
 */
static int predict(void *p, size_t len, uint64_t iova, struct layout *l)
{
	size_t off = (uintptr_t)p % K4;
	size_t npages = (off + len + K4 - 1) / K4, i;
	uint64_t *pa = calloc(npages, 8), first, span;
	int s, ok;

	if (!pa)
		return fail("no memory");
	if (phys_pages((char *)p - off, len, pa, npages)) {
		free(pa);
		return -1;
	}
	first = pa[0] + off;
	span = (off + len + K4 - 1) & ~(K4 - 1);
	l->n = 1;
	for (i = 1; i < npages; i++)
		if (pa[i] != pa[i - 1] + K4)
			l->n++;
	l->shift = 0;
	for (s = 31; s >= 12 && !l->shift; s--) {
		uint64_t m = (1ULL << s) - 1;

		if (!(cap & (1ULL << s)) || (1ULL << s) > span ||
		    ((iova ^ first) & m))
			continue;
		ok = 1;
		for (i = 1; i < npages && ok; i++)
			if (pa[i] != pa[i - 1] + K4)
				ok = !(pa[i] & m) && !((pa[i - 1] + K4) & m);
		if (ok)
			l->shift = s;
	}
	l->huge = 0;
	for (i = 0; i + 512 <= npages; i++)
		if (!(pa[i] & (M2 - 1)) && pa[i + 511] == pa[i] + M2 - K4)
			l->huge++;
	free(pa);
	if (!l->shift)
		return fail("no page size fits (cap %#llx)",
			    (unsigned long long)cap);
	l->entries = ((first & ((1ULL << l->shift) - 1)) + len +
		      (1ULL << l->shift) - 1) >> l->shift;
	return 0;
}

/* ---- RC between A and B ---- */

static int side_open(struct tlib_side *s, const char *name)
{
	return tlib_side_open(s, name, gid_index, why, sizeof(why));
}

static int qp_connect(struct tlib_side *s, const struct tlib_side *peer)
{
	return tlib_side_connect(s, peer, gid_index, why, sizeof(why));
}

/*
 * @s posts one RDMA @op of @len bytes between its (laddr, lkey) and the
 * peer's (raddr, rkey) and waits for that very completion.  Returns its
 * status, or -1 (why set) if none came or the post failed.
 */
static int rdma_op(struct tlib_side *s, enum ibv_wr_opcode op, uint64_t laddr,
		   uint32_t lkey, size_t len, uint64_t raddr, uint32_t rkey)
{
	static uint64_t next_id = 1000;
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = ++next_id, .sg_list = &sge, .num_sge = 1,
		.opcode = op,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	if (ibv_post_send(s->qp, &wr, &bad))
		return fail("post: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(s->cq, 1, &wc);
		if (n == 1 && wc.wr_id != wr.wr_id)
			continue;
		if (n)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > PEER_SECONDS)
			break;
	}
	if (n != 1)
		return fail("%s at %#llx: no completion",
			    op == IBV_WR_RDMA_WRITE ? "write" : "read",
			    (unsigned long long)raddr);
	return wc.status;
}

/* B writes (or reads) @len bytes of @buf to (from) A's (addr, rkey). */
static int peer_rdma(enum ibv_wr_opcode op, void *buf, size_t len,
		     uint64_t addr, uint32_t rkey)
{
	struct ibv_mr *mr = ibv_reg_mr(B.pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	int st;

	if (!mr)
		return fail("peer reg_mr: %s", strerror(errno));
	st = rdma_op(&B, op, (uintptr_t)buf, mr->lkey, len, addr, rkey);
	ibv_dereg_mr(mr);
	if (st > 0)
		return fail("peer %s at %#llx: status %s",
			    op == IBV_WR_RDMA_WRITE ? "write" : "read",
			    (unsigned long long)addr,
			    ibv_wc_status_str(st));
	return st;
}

/*
 * Write a pattern into [off, off + len) of A's MR from B, compare it in A's
 * memory, then read it back into B and compare again.
 */
static int rdma_check(struct ibv_mr *mr, char *base, uint64_t iova,
		      size_t off, size_t len, unsigned int seed)
{
	char *src = malloc(len), *back = malloc(len);
	size_t i;
	int ret = -1;

	if (!src || !back) {
		fail("no memory");
		goto out;
	}
	for (i = 0; i < len; i++)
		src[i] = (char)(seed * 131 + i * 7 + (i >> 12));
	memset(back, 0, len);
	if (peer_rdma(IBV_WR_RDMA_WRITE, src, len, iova + off, mr->rkey))
		goto out;
	for (i = 0; i < len; i++)
		if (base[off + i] != src[i]) {
			fail("write: byte %zu of %zu at MR offset %#zx differs",
			     i, len, off);
			goto out;
		}
	if (peer_rdma(IBV_WR_RDMA_READ, back, len, iova + off, mr->rkey))
		goto out;
	if (memcmp(back, src, len)) {
		fail("read back at MR offset %#zx differs", off);
		goto out;
	}
	ret = 0;
out:
	free(src);
	free(back);
	return ret;
}

/* Offsets that cross 2 MiB boundaries, and the first and last bytes. */
static int rdma_checks(struct ibv_mr *mr, char *base, uint64_t iova,
		       size_t len)
{
	size_t chunk = 48 * 1024, off;
	unsigned int seed = 1;

	if (rdma_check(mr, base, iova, 0, len < chunk ? len : chunk, seed++))
		return -1;
	for (off = M2; off < len; off += M2) {
		size_t at = off - chunk / 2;

		if (at + chunk > len)
			break;
		if (rdma_check(mr, base, iova, at, chunk, seed++))
			return -1;
	}
	if (len > chunk &&
	    rdma_check(mr, base, iova, len - chunk, chunk, seed++))
		return -1;
	return 0;
}

/*
 * Register [p, p + len) at @iova on A; the gauges must move by the
 * prediction; B's writes and reads across the region must land; after
 * deregistration (the pin cache keeps nothing: pin_cache_bytes 0) the
 * gauges are back.  @want_huge: the memory must hold 2 MiB pages and the MR
 * a page size of 2 MiB or more.
 */
static int reg_and_check(void *p, size_t len, uint64_t iova, int want_huge,
			 int want_small)
{
	long long e0, x0, l0, e1, x1, l1;
	struct layout l = { 0 };
	struct ibv_mr *mr;
	int ret;

	if (predict(p, len, iova, &l))
		return -1;
	printf("  %zu KiB: %d extents, %d huge pages, predicted page %lu KiB, %llu entries\n",
	       len >> 10, l.n, l.huge, (1UL << l.shift) >> 10,
	       (unsigned long long)l.entries);
	if (want_huge && (!l.huge || l.shift < 21))
		return fail("the kernel gave no 2 MiB pages here (%d huge, page %lu KiB)",
			    l.huge, (1UL << l.shift) >> 10);
	if (want_small && l.shift != 12)
		return fail("the layout allows %lu KiB pages; 4 KiB expected",
			    (1UL << l.shift) >> 10);
	e0 = counter("emtt_entries");
	x0 = counter("emtt_extents");
	l0 = counter("emtt_large_page_mrs");
	if (iova == (uintptr_t)p)
		mr = ibv_reg_mr(A.pd, p, len, RW);
	else
		mr = ibv_reg_mr_iova(A.pd, p, len, iova, RW);
	if (!mr)
		return fail("reg_mr %zu bytes: %s", len, strerror(errno));
	e1 = counter("emtt_entries");
	x1 = counter("emtt_extents");
	l1 = counter("emtt_large_page_mrs");
	printf("  emtt_entries %lld -> %lld, emtt_extents %lld -> %lld, emtt_large_page_mrs %lld -> %lld\n",
	       e0, e1, x0, x1, l0, l1);
	ret = -1;
	if (e1 - e0 != (long long)l.entries)
		fail("emtt_entries moved by %lld, predicted %llu", e1 - e0,
		     (unsigned long long)l.entries);
	else if (x1 - x0 != l.n)
		fail("emtt_extents moved by %lld, predicted %d", x1 - x0, l.n);
	else if (l1 - l0 != (l.shift > 12))
		fail("emtt_large_page_mrs moved by %lld, page shift %d",
		     l1 - l0, l.shift);
	else
		ret = rdma_checks(mr, p, iova, len);
	if (ibv_dereg_mr(mr) && !ret)
		ret = fail("dereg_mr: %s", strerror(errno));
	if (!ret && counter("emtt_entries") != e0)
		ret = fail("emtt_entries %lld after deregistration, was %lld",
			   counter("emtt_entries"), e0);
	return ret;
}

/* An anonymous region of @len at a 2 MiB boundary, THP on or off. */
static void *map_anon(size_t len, int thp)
{
	size_t span = len + M2;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + M2 - 1) & ~(M2 - 1));
	if (a > p)
		munmap(p, a - p);
	if (a + len < p + span)
		munmap(a + len, p + span - (a + len));
	madvise(a, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(a, 0x5a, len);
	return a;
}

static void *map_hugetlb(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
		       (21 << MAP_HUGE_SHIFT), -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, len);
	return p;
}

/* ---- subtests ---- */

static int thp_region_maps_with_2m_pages(void)
{
	size_t len = 16 * M2;
	void *p = map_anon(len, 1);
	int ret;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	ret = reg_and_check(p, len, (uintptr_t)p, 1, 0);
	munmap(p, len);
	return ret;
}

static int hugetlbfs_region_maps_with_2m_pages(void)
{
	size_t len = 8 * M2;
	void *p = map_hugetlb(len);
	int ret;

	if (!p)
		return fail("MAP_HUGETLB %zu MiB: %s (vm.nr_hugepages?)",
			    len >> 20, strerror(errno));
	ret = reg_and_check(p, len, (uintptr_t)p, 1, 0);
	munmap(p, len);
	return ret;
}

/* From 4 KiB into a huge page to 4 KiB past one: unaligned both ends. */
static int unaligned_range_of_huge_pages(void)
{
	size_t len = 8 * M2;
	char *p = map_anon(len, 1);
	int ret;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	ret = reg_and_check(p + M2 + K4, 4 * M2 + 2 * K4,
			    (uintptr_t)(p + M2 + K4), 1, 0);
	/* And from an odd byte, within one page. */
	if (!ret)
		ret = reg_and_check(p + 3 * M2 + 100, 1000,
				    (uintptr_t)(p + 3 * M2 + 100), 0, 0);
	munmap(p, len);
	return ret;
}

/* Huge pages then small pages in one MR: the small pages set the size. */
static int mixed_huge_and_small_pages_fall_back(void)
{
	size_t len = 4 * M2;
	char *p = map_anon(len, 1), *q;
	int ret;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	/* The second half becomes small pages, scattered. */
	q = p + 2 * M2;
	munmap(q, 2 * M2);
	if (mmap(q, 2 * M2, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		munmap(p, 2 * M2);
		return fail("mmap: %s", strerror(errno));
	}
	madvise(q, 2 * M2, MADV_NOHUGEPAGE);
	for (ret = 2 * M2 / K4 - 1; ret >= 0; ret -= 2)
		q[ret * K4] = 1;
	for (ret = 2 * M2 / K4 - 2; ret >= 0; ret -= 2)
		q[ret * K4] = 1;
	ret = reg_and_check(p, len, (uintptr_t)p, 0, 1);
	munmap(p, len);
	return ret;
}

/* An iova at another offset within 2 MiB than the memory: 4 KiB pages. */
static int iova_off_huge_alignment_falls_back(void)
{
	size_t len = 4 * M2;
	char *p = map_anon(len, 1);
	int ret;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	ret = reg_and_check(p, len, 0x10000000000ULL + K4, 0, 1);
	munmap(p, len);
	return ret;
}

static int small_pages_map_page_by_page(void)
{
	size_t len = 256 * K4;
	char *p = map_anon(len, 0);
	int ret;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	ret = reg_and_check(p, len, (uintptr_t)p, 0, 0);
	munmap(p, len);
	return ret;
}

/* The MR's translation, as `rdma res show mr -dd` shows it. */
static int rdma_res_shows_the_translation(void)
{
	size_t len = 4 * M2;
	char *p = map_anon(len, 1), cmd[256], line[1024], want[128];
	struct layout l = { 0 };
	struct ibv_mr *mr;
	int found = 0;
	FILE *f;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	if (predict(p, len, (uintptr_t)p, &l)) {
		munmap(p, len);
		return -1;
	}
	mr = ibv_reg_mr(A.pd, p, len, RW);
	if (!mr) {
		munmap(p, len);
		return fail("reg_mr: %s", strerror(errno));
	}
	/* The page size and entries the pages themselves call for. */
	snprintf(want, sizeof(want), "emtt_page_size %lu drv_emtt_entries %llu ",
		 1UL << l.shift, (unsigned long long)l.entries);
	snprintf(cmd, sizeof(cmd),
		 "rdma -dd resource show mr dev %s lkey %u 2>&1", dev_a,
		 mr->lkey);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		printf("  %s", line);
		if (strstr(line, "emtt_kind host") && strstr(line, want))
			found = 1;
	}
	if (f)
		pclose(f);
	ibv_dereg_mr(mr);
	munmap(p, len);
	return found ? 0 : fail("no line with emtt_kind host and %s", want);
}

/*
 * max_mr_size is what the parent can take: one byte more is EINVAL; where
 * it is at most 1 GiB (rxe from 6.4 keeps 4 KiB pieces of an MR in one
 * array), exactly max_mr_size of huge pages from 4 KiB into a huge page
 * registers and carries RDMA at its far end.
 */
static int max_mr_size_fits_the_parent(void)
{
	struct ibv_device_attr attr;
	struct ibv_mr *mr;
	size_t max, len;
	char *p;
	int ret;

	if (ibv_query_device(A.ctx, &attr))
		return fail("query_device: %s", strerror(errno));
	max = attr.max_mr_size;
	printf("  max_mr_size %zu\n", max);
	p = mmap(NULL, 2 * K4, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	errno = 0;
	mr = ibv_reg_mr(A.pd, p, max + 1, RW);
	munmap(p, 2 * K4);
	if (mr || errno != EINVAL) {
		if (mr)
			ibv_dereg_mr(mr);
		return fail("max_mr_size + 1: %s, want EINVAL",
			    mr ? "registered" : strerror(errno));
	}
	if (max > (1UL << 30))
		return 0;
	len = max + M2;
	p = map_anon(len, 1);
	if (!p)
		return fail("mmap %zu: %s", len, strerror(errno));
	mr = ibv_reg_mr(A.pd, p + K4, max, RW);
	if (!mr) {
		munmap(p, len);
		return fail("max_mr_size bytes: %s", strerror(errno));
	}
	ret = rdma_check(mr, p + K4, (uintptr_t)(p + K4), max - 65536, 65536, 5);
	if (ibv_dereg_mr(mr) && !ret)
		ret = fail("dereg_mr: %s", strerror(errno));
	munmap(p, len);
	return ret;
}

/* ---- dma-buf memory (ibv_reg_dmabuf_mr) ---- */

/* A dma-buf, mapped into this process. */
struct xbuf {
	int fd;
	char *map;
	size_t len;
	size_t chunk;	/* the exporter's physically contiguous unit */
};

static int exp_fd = -1;

static int exp_open(void)
{
	if (exp_fd < 0)
		exp_fd = open(STL_EXP_DEV, O_RDWR | O_CLOEXEC);
	return exp_fd < 0 ? fail("%s: %s (module loaded?)", STL_EXP_DEV,
				 strerror(errno)) : 0;
}

static int exp_info(int fd, struct stl_exp_info *info)
{
	memset(info, 0, sizeof(*info));
	info->fd = fd;
	return ioctl(exp_fd, STL_EXP_IOC_INFO, info) ?
		fail("STL_EXP_IOC_INFO: %s", strerror(errno)) : 0;
}

/*
 * A dma-buf of @len bytes from exporter @kind: exp4k, exp64k, exp2m (the
 * test exporter's chunk sizes), udmabuf (memfd pages), udmabuf-huge (memfd
 * of 2 MiB hugetlbfs pages) or heap (the system dma-heap).
 */
static int xbuf_make(const char *kind, size_t len, struct xbuf *b)
{
	int dev, mfd = -1;

	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->len = len;
	if (!strncmp(kind, "exp", 3)) {
		struct stl_exp_create c = { .size = len };

		c.chunk = !strcmp(kind, "exp4k") ? 4096 :
			  !strcmp(kind, "exp64k") ? 65536 : M2;
		if (exp_open())
			return -1;
		if (ioctl(exp_fd, STL_EXP_IOC_CREATE, &c))
			return fail("STL_EXP_IOC_CREATE: %s", strerror(errno));
		b->fd = c.fd;
		b->chunk = c.chunk;
	} else if (!strncmp(kind, "udmabuf", 7)) {
		int huge = !strcmp(kind, "udmabuf-huge");
		struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
					    .size = len };

		mfd = memfd_create("stl-emtt", MFD_ALLOW_SEALING |
				   (huge ? MFD_HUGETLB | MFD_HUGE_2MB : 0));
		if (mfd < 0 || ftruncate(mfd, len) ||
		    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
			if (mfd >= 0)
				close(mfd);
			return fail("memfd for udmabuf: %s", strerror(errno));
		}
		dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
		c.memfd = mfd;
		b->fd = dev < 0 ? -1 : ioctl(dev, UDMABUF_CREATE, &c);
		if (dev >= 0)
			close(dev);
		close(mfd);
		if (b->fd < 0)
			return fail("udmabuf: %s", strerror(errno));
		b->chunk = huge ? M2 : K4;
	} else if (!strcmp(kind, "heap")) {
		struct dma_heap_allocation_data d = {
			.len = len, .fd_flags = O_RDWR | O_CLOEXEC,
		};

		dev = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
		if (dev < 0 || ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &d)) {
			if (dev >= 0)
				close(dev);
			return fail("system dma-heap: %s", strerror(errno));
		}
		close(dev);
		b->fd = d.fd;
		b->chunk = K4;
	} else {
		return fail("unknown exporter %s", kind);
	}
	b->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		close(b->fd);
		return fail("mmap of the %s dma-buf: %s", kind, strerror(errno));
	}
	return 0;
}

static void xbuf_free(struct xbuf *b)
{
	if (b->map)
		munmap(b->map, b->len);
	if (b->fd >= 0)
		close(b->fd);
	b->map = NULL;
	b->fd = -1;
}

/* New QPs for A and B: after an error completion the old ones are dead. */
static int pair_reset(void)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	struct tlib_side *s[2] = { &A, &B };
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++) {
		ibv_destroy_qp(s[i]->qp);
		while (ibv_poll_cq(s[i]->cq, 1, &wc) > 0)
			;
		init.send_cq = s[i]->cq;
		init.recv_cq = s[i]->cq;
		s[i]->qp = ibv_create_qp(s[i]->pd, &init);
		if (!s[i]->qp)
			return fail("new QP: %s", strerror(errno));
	}
	return qp_connect(&A, &B) || qp_connect(&B, &A) ? -1 : 0;
}

/* A writes [off, off + len) of its MR into B's memory: B sees the bytes. */
static int local_write_check(struct ibv_mr *mr, const char *base,
			     uint64_t iova, size_t off, size_t len)
{
	char *dst = calloc(1, len);
	struct ibv_mr *bmr = dst ? ibv_reg_mr(B.pd, dst, len, RW) : NULL;
	int st, ret = -1;

	if (!bmr) {
		fail("peer buffer: %s", strerror(errno));
		goto out;
	}
	st = rdma_op(&A, IBV_WR_RDMA_WRITE, iova + off, mr->lkey, len,
		     (uintptr_t)dst, bmr->rkey);
	if (st > 0)
		fail("A's write from the dma-buf MR: %s", ibv_wc_status_str(st));
	else if (!st && memcmp(dst, base + off, len))
		fail("A's write from the dma-buf MR at %#zx: bytes differ", off);
	else if (!st)
		ret = 0;
	ibv_dereg_mr(bmr);
out:
	free(dst);
	return ret;
}

#define DMABUF_IOVA 0x200000000ULL

/*
 * Register an 8 MiB dma-buf of @kind on A: the parent MR's entries are at
 * most one per exporter chunk; B writes and reads across chunk boundaries
 * and A writes out of it, bytes compared through the buffer's mapping;
 * the MR outlives the process's dma-buf fd.
 */
static int dmabuf_rdma_byte_exact(const char *kind)
{
	size_t len = 8 << 20;
	long long e0, e1, m0, m1;
	struct xbuf b;
	struct ibv_mr *mr;
	int ret = -1;

	if (xbuf_make(kind, len, &b))
		return -1;
	memset(b.map, 0x3c, len);
	e0 = counter("emtt_entries");
	m0 = counter("dmabuf_mrs");
	mr = ibv_reg_dmabuf_mr(A.pd, 0, len, DMABUF_IOVA, b.fd, RW);
	if (!mr) {
		fail("ibv_reg_dmabuf_mr: %s", strerror(errno));
		goto out;
	}
	e1 = counter("emtt_entries");
	m1 = counter("dmabuf_mrs");
	printf("  %s: %zu MiB, chunk %zu KiB: %lld parent entries (at most %zu)\n",
	       kind, len >> 20, b.chunk >> 10, e1 - e0, len / b.chunk);
	if (m1 - m0 != 1)
		fail("dmabuf_mrs moved by %lld", m1 - m0);
	else if (e1 - e0 < 1 || e1 - e0 > (long long)(len / b.chunk))
		fail("%lld parent entries for %zu chunks", e1 - e0,
		     len / b.chunk);
	else if (!rdma_checks(mr, b.map, DMABUF_IOVA, len) &&
		 !local_write_check(mr, b.map, DMABUF_IOVA, len - M2 - 4096,
				    M2 + 8192 > len ? len : 65536)) {
		/* The registration holds the buffer: the fd may go. */
		close(b.fd);
		b.fd = -1;
		ret = rdma_check(mr, b.map, DMABUF_IOVA, M2 - 100, 4096, 9);
	}
	if (ibv_dereg_mr(mr) && !ret)
		ret = fail("dereg_mr: %s", strerror(errno));
	if (!ret && counter("emtt_entries") != e0)
		ret = fail("emtt_entries %lld after deregistration, was %lld",
			   counter("emtt_entries"), e0);
out:
	xbuf_free(&b);
	return ret;
}

/* Wait up to 10 s for hw counter @name to pass @from. */
static long long counter_wait(const char *name, long long from)
{
	long long v = counter(name);
	int i;

	for (i = 0; i < 400 && v <= from; i++)
		v = counter(name);
	return v;
}

/*
 * The exporter moves the buffer: the key dies at once, comes back over the
 * new chunks (same key), and B's writes land in the new memory, which the
 * buffer's mapping now shows.
 */
static int dmabuf_move_revalidates_key(void)
{
	size_t len = 8 << 20;
	struct stl_exp_move mv = { .mode = STL_EXP_MOVE };
	struct stl_exp_info i0, i1;
	long long mo0, re0, ns0, rns0;
	struct ibv_mr *mr;
	struct xbuf b;
	int ret = -1, m;

	if (xbuf_make("exp2m", len, &b))
		return -1;
	memset(b.map, 0x44, len);
	mr = ibv_reg_dmabuf_mr(A.pd, 0, len, DMABUF_IOVA, b.fd, RW);
	if (!mr) {
		fail("ibv_reg_dmabuf_mr: %s", strerror(errno));
		goto out;
	}
	if (rdma_check(mr, b.map, DMABUF_IOVA, 0, 65536, 3))
		goto dereg;
	memset(b.map, 0x44, len);
	/* Three moves: each lands the buffer in another layout. */
	for (m = 0; m < 3; m++) {
		if (exp_info(b.fd, &i0))
			goto dereg;
		mo0 = counter("dmabuf_moves");
		re0 = counter("dmabuf_remaps");
		ns0 = counter("dmabuf_invalidate_ns");
		rns0 = counter("dmabuf_remap_ns");
		mv.fd = b.fd;
		if (ioctl(exp_fd, STL_EXP_IOC_MOVE, &mv)) {
			fail("STL_EXP_IOC_MOVE: %s", strerror(errno));
			goto dereg;
		}
		if (counter("dmabuf_moves") != mo0 + 1) {
			fail("move %d: dmabuf_moves did not move", m);
			goto dereg;
		}
		if (counter_wait("dmabuf_remaps", re0) != re0 + 1) {
			fail("move %d: the key was not revalidated within 10 s (dmabuf_remap_failures %lld)",
			     m, counter("dmabuf_remap_failures"));
			goto dereg;
		}
		if (exp_info(b.fd, &i1))
			goto dereg;
		printf("  move %d: first pfn %#llx -> %#llx; invalidated in %lld us, valid again %lld us after move_notify\n",
		       m, (unsigned long long)i0.first_pfn,
		       (unsigned long long)i1.first_pfn,
		       (counter("dmabuf_invalidate_ns") - ns0) / 1000,
		       (counter("dmabuf_remap_ns") - rns0) / 1000);
		if (i1.first_pfn == i0.first_pfn) {
			fail("the exporter did not move the buffer");
			goto dereg;
		}
		if ((unsigned char)b.map[65536] != 0x44 ||
		    (unsigned char)b.map[len - 1] != 0x44) {
			fail("the moved buffer lost its contents");
			goto dereg;
		}
		if (rdma_checks(mr, b.map, DMABUF_IOVA, len))
			goto dereg;
		memset(b.map, 0x44, len);
	}
	ret = 0;
dereg:
	if (ibv_dereg_mr(mr) && !ret)
		ret = fail("dereg_mr: %s", strerror(errno));
out:
	xbuf_free(&b);
	return ret;
}

/*
 * The exporter revokes the buffer: the key stays dead (a peer's write
 * fails with a remote access error, nothing lands), deregistration and
 * the fd's close still work, and the attachment is gone after them.
 */
static int dmabuf_revoke_kills_key(void)
{
	size_t len = 4 << 20;
	struct stl_exp_move mv = { .mode = STL_EXP_REVOKE };
	char src[4096];
	long long f0;
	struct stl_exp_info info;
	struct ibv_mr *mr;
	struct xbuf b;
	int st, ret = -1;

	if (xbuf_make("exp2m", len, &b))
		return -1;
	memset(b.map, 0x55, len);
	mr = ibv_reg_dmabuf_mr(A.pd, 0, len, DMABUF_IOVA, b.fd, RW);
	if (!mr) {
		fail("ibv_reg_dmabuf_mr: %s", strerror(errno));
		goto out;
	}
	if (rdma_check(mr, b.map, DMABUF_IOVA, 4096, 4096, 4))
		goto dereg;
	memset(b.map, 0x55, len);
	f0 = counter("dmabuf_remap_failures");
	mv.fd = b.fd;
	if (ioctl(exp_fd, STL_EXP_IOC_MOVE, &mv)) {
		fail("STL_EXP_IOC_MOVE (revoke): %s", strerror(errno));
		goto dereg;
	}
	if (counter_wait("dmabuf_remap_failures", f0) != f0 + 1) {
		fail("dmabuf_remap_failures did not move within 10 s");
		goto dereg;
	}
	memset(src, 0x77, sizeof(src));
	st = peer_rdma(IBV_WR_RDMA_WRITE, src, sizeof(src), DMABUF_IOVA,
		       mr->rkey);
	if (st != -1 || !strstr(why, "remote access error")) {
		fail("a write to the revoked key: %s (want a remote access error)",
		     st ? why : "succeeded");
		goto dereg;
	}
	printf("  write to the revoked key: %s\n", why);
	why[0] = 0;
	if (b.map[0] != 0x55 || b.map[4095] != 0x55) {
		fail("the write to the revoked key reached the memory");
		goto dereg;
	}
	ret = pair_reset();
dereg:
	if (ibv_dereg_mr(mr) && !ret)
		ret = fail("dereg_mr: %s", strerror(errno));
	if (!ret && (exp_info(b.fd, &info) || info.attachments))
		ret = fail("%llu attachments left after deregistration",
			   (unsigned long long)info.attachments);
out:
	xbuf_free(&b);
	if (ret)
		pair_reset();
	return ret;
}

/* Bad arguments get the errno rdma-core's callers expect. */
static int dmabuf_bad_input_refused(void)
{
	size_t len = 4 << 20;
	struct {
		const char *what;
		uint64_t off, len, iova;
		int fd, access, want;
	} c[] = {
		{ "past the end", M2, 4 << 20, DMABUF_IOVA, 0, RW, EINVAL },
		{ "empty", 0, 0, DMABUF_IOVA, 0, RW, EINVAL },
		{ "iova at another page offset", 0, 4096, DMABUF_IOVA + 8,
		  0, RW, EINVAL },
		/* ib_uverbs takes no MW_BIND for dma-buf MRs. */
		{ "window binding", 0, 4096, DMABUF_IOVA, 0,
		  RW | IBV_ACCESS_MW_BIND, EINVAL },
		{ "remote write without local write", 0, 4096, DMABUF_IOVA,
		  0, IBV_ACCESS_REMOTE_WRITE, EINVAL },
		{ "a memfd, not a dma-buf", 0, 4096, DMABUF_IOVA, 1, RW,
		  EINVAL },
		{ "a closed fd", 0, 4096, DMABUF_IOVA, 2, RW, EBADF },
	};
	struct ibv_mr *mr;
	struct xbuf b;
	size_t i;
	int fd, mfd = memfd_create("stl-emtt", 0);

	if (mfd < 0 || ftruncate(mfd, 4096))
		return fail("memfd: %s", strerror(errno));
	if (xbuf_make("exp2m", len, &b)) {
		close(mfd);
		return -1;
	}
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		fd = c[i].fd == 0 ? b.fd : c[i].fd == 1 ? mfd : 1000;
		errno = 0;
		mr = ibv_reg_dmabuf_mr(A.pd, c[i].off, c[i].len, c[i].iova, fd,
				       c[i].access);
		printf("  %s: %s\n", c[i].what, mr ? "registered" : strerror(errno));
		if (mr) {
			ibv_dereg_mr(mr);
			fail("%s: registered", c[i].what);
			break;
		}
		if (errno != c[i].want) {
			fail("%s: %s, want %s", c[i].what, strerror(errno),
			     strerror(c[i].want));
			break;
		}
	}
	close(mfd);
	xbuf_free(&b);
	return why[0] ? -1 : 0;
}

/* A process that exits with a dma-buf MR registered leaves no attachment. */
static int dmabuf_owner_exit_releases_attachment(void)
{
	struct stl_exp_info info;
	struct xbuf b;
	pid_t pid;
	int st, i;

	if (xbuf_make("exp2m", 4 << 20, &b))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct ibv_context *ctx = tlib_open_device(dev_a);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_mr *mr = pd ? ibv_reg_dmabuf_mr(pd, 0, 4 << 20,
							   DMABUF_IOVA, b.fd,
							   RW) : NULL;

		_exit(mr ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		xbuf_free(&b);
		return fail("fork: %s", strerror(errno));
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		xbuf_free(&b);
		return fail("the child could not register");
	}
	for (i = 0; i < 100; i++) {
		if (exp_info(b.fd, &info))
			break;
		if (!info.attachments)
			break;
		usleep(100000);
	}
	xbuf_free(&b);
	if (why[0])
		return -1;
	return info.attachments ?
		fail("%llu attachments 10 s after the owner exited",
		     (unsigned long long)info.attachments) : 0;
}

/* ---- libstellar-gpu over the fake CUDA driver (tests/kernel/fakecuda) ---- */

static struct stl_cuda cu;

/* The fake driver named by STELLAR_LIBCUDA: its device memory is mapped. */
static int cuda_up(void)
{
	char w[200];

	if (!cu.lib && stl_cuda_load(&cu, w, sizeof(w)))
		return fail("%s (STELLAR_LIBCUDA=%s)", w,
			    getenv("STELLAR_LIBCUDA") ?: "unset");
	return cu.cuInit(0) ? fail("fake cuInit failed") : 0;
}

/*
 * In a child: with @env set to @val, stellar_reg_gpu_mr() on @what; the
 * child exits with the errno and prints the helper's message.
 */
static int gpu_error_child(const char *env, const char *val, int what)
{
	CUdeviceptr p = 0;
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct ibv_context *ctx = tlib_open_device(dev_a);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		char host[8192];
		void *ptr = host;
		size_t len = 4096;
		struct ibv_mr *mr;

		if (!pd || cu.cuMemAlloc(&p, M2))
			_exit(255);
		if (what == 1)
			ptr = (void *)(uintptr_t)p;
		if (what == 2) {
			ptr = (void *)(uintptr_t)(p + 4096);
			len = M2;
		}
		if (env)
			setenv(env, val, 1);
		errno = 0;
		mr = stellar_reg_gpu_mr(pd, ptr, len, RW);
		printf("  %s=%s, %s: errno %d, \"%s\"\n", env ? env : "-",
		       env ? val : "-",
		       what == 0 ? "host memory" : what == 1 ? "device memory" :
		       "past the allocation", mr ? 0 : errno,
		       stellar_gpu_error());
		fflush(stdout);
		_exit(mr ? 0 : errno);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Without a driver, a GPU or dma-buf export, and on bad pointers: errno. */
static int gpu_helper_errors_are_clear(void)
{
	static const struct {
		const char *env, *val;
		int what, want;
	} c[] = {
		{ "STELLAR_LIBCUDA", "/nonexistent/libcuda.so.1", 1, ENOSYS },
		{ "STL_FAKE_CUDA_NO_DEVICE", "1", 1, ENODEV },
		{ "STL_FAKE_CUDA_NO_DMABUF", "1", 1, EOPNOTSUPP },
		{ NULL, NULL, 0, EINVAL },
		{ NULL, NULL, 2, EINVAL },
		{ NULL, NULL, 1, 0 },
	};
	size_t i;
	int got;

	if (cuda_up())
		return -1;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		got = gpu_error_child(c[i].env, c[i].val, c[i].what);
		if (got != c[i].want)
			return fail("case %zu: exit %d, want errno %d (%s)", i,
				    got, c[i].want, strerror(c[i].want));
	}
	return 0;
}

/*
 * stellar_reg_gpu_mr() on 8 MiB of "device memory" from 4 KiB into the
 * allocation: B writes and reads across chunks, A writes out of it.
 */
static int gpu_helper_registers_device_memory(void)
{
	size_t len = 8 << 20;
	long long m0;
	CUdeviceptr p;
	struct ibv_mr *mr;
	char *base;
	int ret = -1;

	if (cuda_up())
		return -1;
	if (cu.cuMemAlloc(&p, len + M2))
		return fail("fake cuMemAlloc failed");
	cu.cuMemsetD8(p, 0x21, len + M2);
	base = (char *)(uintptr_t)p + 4096;
	m0 = counter("dmabuf_mrs");
	mr = stellar_reg_gpu_mr(A.pd, base, len, RW);
	if (!mr) {
		fail("stellar_reg_gpu_mr: %s", stellar_gpu_error());
		goto out;
	}
	if (counter("dmabuf_mrs") != m0 + 1)
		fail("dmabuf_mrs did not move");
	else if (!rdma_checks(mr, base, (uintptr_t)base, len))
		ret = local_write_check(mr, base, (uintptr_t)base, M2 - 512,
					8192);
	if (ibv_dereg_mr(mr) && !ret)
		ret = fail("dereg_mr: %s", strerror(errno));
out:
	cu.cuMemFree(p);
	return ret;
}

/* stellar-gpu-check over the fake driver finds the GPU and registers. */
static int gpu_check_tool_reports(void)
{
	char cmd[256], line[512];
	int seen = 0, rc;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "build/stellar-gpu-check -s 8 -d %s 2>&1",
		 dev_a);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		printf("  %s", line);
		seen |= strstr(line, "dma-buf export: supported") ? 1 : 0;
		seen |= strstr(line, "registration:   ") &&
			strstr(line, "lkey") ? 2 : 0;
		seen |= strstr(line, "drv_emtt_kind dmabuf") ? 4 : 0;
	}
	rc = f ? pclose(f) : -1;
	if (rc)
		return fail("stellar-gpu-check exited %d", rc);
	return seen == 7 ? 0 :
		fail("missing: %s%s%s", seen & 1 ? "" : "export line ",
		     seen & 2 ? "" : "registration line ",
		     seen & 4 ? "" : "dma-buf translation");
}

/* ---- benchmark ---- */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void bench_one(const char *what, void *p, size_t len)
{
	long long e0 = counter("emtt_entries"), e1;
	struct ibv_mr *mr;
	double t0, t;

	if (!p) {
		printf("emtt-bench %s: mmap failed: %s\n", what, strerror(errno));
		failed++;
		return;
	}
	t0 = now_s();
	mr = ibv_reg_mr(A.pd, p, len, RW);
	t = now_s() - t0;
	if (!mr) {
		printf("emtt-bench %s: reg_mr: %s\n", what, strerror(errno));
		failed++;
		munmap(p, len);
		return;
	}
	e1 = counter("emtt_entries");
	printf("emtt-bench %-8s %5zu MiB: entries %lld, first registration %.3f ms\n",
	       what, len >> 20, e1 - e0, t * 1e3);
	if (rdma_check(mr, p, (uintptr_t)p, len - 65536, 65536, 7)) {
		printf("emtt-bench %s: %s\n", what, why);
		failed++;
	}
	ibv_dereg_mr(mr);
	munmap(p, len);
}

/*
 * B's RDMA WRITE bandwidth into A's MR (@iova, @rkey, @len bytes), 64 KiB
 * messages, 16 in flight, for @secs seconds: MiB/s, or a negative value.
 */
static double write_bw(uint64_t iova, uint32_t rkey, size_t len, double secs)
{
	size_t msg = 65536, slots = len / msg;
	char *src = malloc(msg);
	struct ibv_mr *mr = src ? ibv_reg_mr(B.pd, src, msg, RW) : NULL;
	struct ibv_sge sge = { .length = msg };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE }, *bad;
	unsigned long posted = 0, done = 0;
	struct ibv_wc wc[16];
	double t0 = now_s(), t = t0;
	int n, i;

	if (!mr) {
		free(src);
		return -1;
	}
	memset(src, 0x61, msg);
	sge.addr = (uintptr_t)src;
	sge.lkey = mr->lkey;
	wr.wr.rdma.rkey = rkey;
	while (t - t0 < secs || done < posted) {
		while (posted - done < 16 && t - t0 < secs) {
			wr.wr_id = posted;
			wr.wr.rdma.remote_addr = iova + (posted % slots) * msg;
			if (ibv_post_send(B.qp, &wr, &bad))
				goto err;
			posted++;
		}
		n = ibv_poll_cq(B.cq, 16, wc);
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				goto err;
		done += n > 0 ? n : 0;
		t = now_s();
	}
	ibv_dereg_mr(mr);
	free(src);
	return done * (double)msg / (t - t0) / (1 << 20);
err:
	ibv_dereg_mr(mr);
	free(src);
	return -1;
}

/*
 * A 2 MiB-chunk dma-buf of the test exporter: entries and first
 * registration; B's write bandwidth into it against into host memory of
 * the same size; and move_notify to a dead and to a valid key, mean of 5.
 */
static void bench_dmabuf(size_t mib)
{
	size_t len = mib << 20;
	struct stl_exp_move mv = { .mode = STL_EXP_MOVE };
	long long e0, e1, mo0, re0, ns0, rns0;
	struct ibv_mr *mr, *hmr;
	double t0, t, bw_d, bw_h;
	struct xbuf b;
	char *h;
	int i;

	if (xbuf_make("exp2m", len, &b)) {
		printf("emtt-bench dmabuf: %s\n", why);
		failed++;
		return;
	}
	e0 = counter("emtt_entries");
	t0 = now_s();
	mr = ibv_reg_dmabuf_mr(A.pd, 0, len, DMABUF_IOVA, b.fd, RW);
	t = now_s() - t0;
	if (!mr) {
		printf("emtt-bench dmabuf: reg: %s\n", strerror(errno));
		failed++;
		xbuf_free(&b);
		return;
	}
	e1 = counter("emtt_entries");
	printf("emtt-bench %-8s %5zu MiB: entries %lld, first registration %.3f ms\n",
	       "dmabuf", mib, e1 - e0, t * 1e3);
	h = map_anon(len, 0);
	hmr = h ? ibv_reg_mr(A.pd, h, len, RW) : NULL;
	if (!hmr) {
		printf("emtt-bench dmabuf: host MR failed\n");
		failed++;
		goto out;
	}
	write_bw(DMABUF_IOVA, mr->rkey, len, 1);
	bw_d = write_bw(DMABUF_IOVA, mr->rkey, len, 4);
	bw_h = write_bw((uintptr_t)h, hmr->rkey, len, 4);
	printf("emtt-bench write-bw 64KiB: dmabuf %.1f MiB/s host %.1f MiB/s ratio %.3f\n",
	       bw_d, bw_h, bw_h > 0 ? bw_d / bw_h : 0);
	if (bw_d <= 0 || bw_h <= 0)
		failed++;
	mo0 = counter("dmabuf_moves");
	re0 = counter("dmabuf_remaps");
	ns0 = counter("dmabuf_invalidate_ns");
	rns0 = counter("dmabuf_remap_ns");
	mv.fd = b.fd;
	for (i = 0; i < 5; i++) {
		if (ioctl(exp_fd, STL_EXP_IOC_MOVE, &mv) ||
		    counter_wait("dmabuf_remaps", re0 + i) != re0 + i + 1) {
			printf("emtt-bench dmabuf: move %d failed\n", i);
			failed++;
			goto out;
		}
	}
	printf("emtt-bench revocation: moves %lld, dead key after %.1f us, valid key again after %.1f us (mean)\n",
	       counter("dmabuf_moves") - mo0,
	       (counter("dmabuf_invalidate_ns") - ns0) / 5e3,
	       (counter("dmabuf_remap_ns") - rns0) / 5e3);
out:
	if (hmr)
		ibv_dereg_mr(hmr);
	if (h)
		munmap(h, len);
	ibv_dereg_mr(mr);
	xbuf_free(&b);
}

static void bench(size_t mib)
{
	size_t len = mib << 20;

	bench_one("small", map_anon(len, 0), len);
	bench_one("thp", map_anon(len, 1), len);
	bench_one("hugetlb", map_hugetlb(len), len);
	bench_dmabuf(mib);
}

static const struct {
	const char *name;
	int (*fn)(void);
} dmabuf_tests[] = {
#define T(f) { #f, f }
	T(dmabuf_move_revalidates_key),
	T(dmabuf_revoke_kills_key),
	T(dmabuf_bad_input_refused),
	T(dmabuf_owner_exit_releases_attachment),
#undef T
};

static void run_one(const char *name, int (*fn)(void), const char *kind)
{
	int ret;

	if (only && strcmp(only, name))
		return;
	why[0] = 0;
	ret = kind ? dmabuf_rdma_byte_exact(kind) : fn();
	if (ret) {
		printf("FAIL %s: %s\n", name, why);
		failed++;
	} else {
		printf("PASS %s\n", name);
		passed++;
	}
	fflush(stdout);
}

/*
 * -e KINDS: the dma-buf subtests, per exporter, then the test exporter's;
 * the kind "gpu" runs libstellar-gpu's over the fake CUDA driver.
 */
static void run_dmabuf(char *kinds)
{
	char name[128], *k, *save = NULL;
	int exp = 0;
	size_t i;

	for (k = strtok_r(kinds, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		if (!strcmp(k, "gpu")) {
			run_one("gpu_helper_errors_are_clear",
				gpu_helper_errors_are_clear, NULL);
			run_one("gpu_helper_registers_device_memory",
				gpu_helper_registers_device_memory, NULL);
			run_one("gpu_check_tool_reports",
				gpu_check_tool_reports, NULL);
			continue;
		}
		snprintf(name, sizeof(name), "dmabuf_%s_rdma_byte_exact", k);
		run_one(name, NULL, k);
		exp |= !strncmp(k, "exp", 3);
	}
	for (i = 0; exp && i < sizeof(dmabuf_tests) / sizeof(dmabuf_tests[0]); i++)
		run_one(dmabuf_tests[i].name, dmabuf_tests[i].fn, NULL);
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
#define T(f) { #f, f }
	T(thp_region_maps_with_2m_pages),
	T(hugetlbfs_region_maps_with_2m_pages),
	T(unaligned_range_of_huge_pages),
	T(mixed_huge_and_small_pages_fall_back),
	T(iova_off_huge_alignment_falls_back),
	T(small_pages_map_page_by_page),
	T(rdma_res_shows_the_translation),
	T(max_mr_size_fits_the_parent),
#undef T
};

static int parent_cap(void)
{
	char path[256], parent[64] = "";
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent", dev_a);
	f = fopen(path, "r");
	if (!f || !fgets(parent, sizeof(parent), f)) {
		if (f)
			fclose(f);
		return fail("no %s", path);
	}
	fclose(f);
	parent[strcspn(parent, "\n")] = 0;
	ctx = tlib_open_device(parent);
	if (!ctx || ibv_query_device(ctx, &attr))
		return fail("query parent %s", parent);
	cap = attr.page_size_cap;
	ibv_close_device(ctx);
	printf("  parent %s page_size_cap %#llx\n", parent,
	       (unsigned long long)cap);
	return 0;
}

int main(int argc, char **argv)
{
	long long cache_bytes;
	size_t i, bench_mib = 0;
	char *kinds = NULL;
	int c;

	while ((c = getopt(argc, argv, "a:b:g:t:B:e:")) != -1) {
		switch (c) {
		case 'a':
			dev_a = optarg;
			break;
		case 'b':
			dev_b = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 't':
			only = optarg;
			break;
		case 'B':
			bench_mib = strtoul(optarg, NULL, 0);
			break;
		case 'e':
			kinds = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s -a DEV -b PEER [-g GID] [-t TEST] [-B MIB] [-e EXPORTERS]\n",
				argv[0]);
			return 2;
		}
	}
	if (parent_cap() || side_open(&A, dev_a) || side_open(&B, dev_b) ||
	    qp_connect(&A, &B) || qp_connect(&B, &A)) {
		printf("FAIL setup: %s\n0 passed, 1 failed\n", why);
		return 1;
	}
	/* Deregistration releases the parent MR at once (no parking). */
	cache_bytes = sysfs_read(dev_a, "pin_cache_bytes");
	if (cache_bytes < 0 || sysfs_write("pin_cache_bytes", 0)) {
		printf("FAIL setup: pin_cache_bytes of %s\n0 passed, 1 failed\n",
		       dev_a);
		return 1;
	}
	if (bench_mib) {
		bench(bench_mib);
		sysfs_write("pin_cache_bytes", cache_bytes);
		return failed ? 1 : 0;
	}
	if (kinds)
		run_dmabuf(kinds);
	else
		for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			run_one(tests[i].name, tests[i].fn, NULL);
	sysfs_write("pin_cache_bytes", cache_bytes);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
