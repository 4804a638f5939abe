// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_emtt_test: the eMTT translation of Stellar MRs over huge pages.
 *
 *   stl_emtt_test -a stellar0 -b stellar1 [-g GID_INDEX] [-t NAME]
 *   stl_emtt_test -a stellar0 -b stellar1 -B MIB    (benchmark, no checks)
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
 * -B registers MIB MiB of small pages, of THP and of hugetlbfs pages and
 * prints the entries and the first registration's time for each.
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"

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

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

static struct side A, B;

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
	char path[256], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev, rel);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 0);
	fclose(f);
	return v;
}

static int sysfs_write(const char *rel, long long v)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev_a, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%lld\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/* hw_counters are cached by the core for a few milliseconds. */
static long long counter(const char *name)
{
	char rel[128];

	usleep(25000);
	snprintf(rel, sizeof(rel), "ports/1/hw_counters/%s", name);
	return sysfs_read(dev_a, rel);
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

static int side_open(struct side *s, const char *name)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};

	s->ctx = tlib_open_device(name);
	if (!s->ctx)
		return fail("cannot open %s", name);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 32, NULL, NULL, 0) : NULL;
	if (!s->cq)
		return fail("PD/CQ on %s: %s", name, strerror(errno));
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &init);
	if (!s->qp)
		return fail("QP on %s: %s", name, strerror(errno));
	if (ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
		return fail("GID %d of %s", gid_index, name);
	return 0;
}

static int qp_connect(struct side *s, const struct side *peer)
{
	struct tlib_rc_peer p = {
		.qpn = peer->qp->qp_num, .gid = peer->gid,
		.sgid_index = gid_index, .mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	const char *step;
	int ret = tlib_rc_connect(s->qp, &p, &step);

	return ret ? fail("%s: %s", step, strerror(ret)) : 0;
}

/* B writes (or reads) @len bytes of @buf to (from) A's (addr, rkey). */
static int peer_rdma(enum ibv_wr_opcode op, void *buf, size_t len,
		     uint64_t addr, uint32_t rkey)
{
	static uint64_t next_id = 1000;
	struct ibv_mr *mr = ibv_reg_mr(B.pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len };
	struct ibv_send_wr wr = {
		.wr_id = ++next_id, .sg_list = &sge, .num_sge = 1,
		.opcode = op,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	}, *bad;
	struct timespec t0, t;
	struct ibv_wc wc;
	int n, ret = 0;

	if (!mr)
		return fail("peer reg_mr: %s", strerror(errno));
	sge.lkey = mr->lkey;
	if (ibv_post_send(B.qp, &wr, &bad)) {
		ret = fail("peer post: %s", strerror(errno));
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(B.cq, 1, &wc);
		if (n == 1 && wc.wr_id != wr.wr_id)
			continue;
		if (n)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > PEER_SECONDS)
			break;
	}
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		ret = fail("peer %s at +%#llx: n=%d status=%s",
			   op == IBV_WR_RDMA_WRITE ? "write" : "read",
			   (unsigned long long)addr, n,
			   n == 1 ? ibv_wc_status_str(wc.status) : "- (timed out)");
out:
	ibv_dereg_mr(mr);
	return ret;
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
	char *p = map_anon(len, 1), cmd[256], line[1024];
	struct ibv_mr *mr;
	int found = 0;
	FILE *f;

	if (!p)
		return fail("mmap: %s", strerror(errno));
	mr = ibv_reg_mr(A.pd, p, len, RW);
	if (!mr) {
		munmap(p, len);
		return fail("reg_mr: %s", strerror(errno));
	}
	snprintf(cmd, sizeof(cmd),
		 "rdma -dd resource show mr dev %s lkey %u 2>&1", dev_a,
		 mr->lkey);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		printf("  %s", line);
		if (strstr(line, "emtt_kind host") &&
		    strstr(line, "emtt_page_size 2097152") &&
		    strstr(line, "emtt_entries 4 "))
			found = 1;
	}
	if (f)
		pclose(f);
	ibv_dereg_mr(mr);
	munmap(p, len);
	return found ? 0 :
		fail("no line with emtt_kind host, emtt_page_size 2097152, emtt_entries 4");
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

static void bench(size_t mib)
{
	size_t len = mib << 20;

	bench_one("small", map_anon(len, 0), len);
	bench_one("thp", map_anon(len, 1), len);
	bench_one("hugetlb", map_hugetlb(len), len);
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
	int c;

	while ((c = getopt(argc, argv, "a:b:g:t:B:")) != -1) {
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
		default:
			fprintf(stderr, "usage: %s -a DEV -b PEER [-g GID] [-t TEST] [-B MIB]\n",
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
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (only && strcmp(only, tests[i].name))
			continue;
		why[0] = 0;
		if (tests[i].fn()) {
			printf("FAIL %s: %s\n", tests[i].name, why);
			failed++;
		} else {
			printf("PASS %s\n", tests[i].name);
			passed++;
		}
		fflush(stdout);
	}
	sysfs_write("pin_cache_bytes", cache_bytes);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
