// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_pvdma_test: on-demand pinning and the pin cache of a Stellar device.
 *
 *   stl_pvdma_test -a stellar0 -b stellar1 [-g GID_INDEX] [-t NAME]
 *
 * Device A registers memory; device B is the peer that writes into it over
 * an RC connection (both in this process, over the parent's loopback).
 * Evidence comes from A's sysfs counters: pinned_pages, pin_quota_bytes,
 * pin_cache_bytes and ports/1/hw_counters/pin_cache_*.  Each subtest prints
 * PASS/FAIL/SKIP NAME; the last line is "N passed, N failed".
 * Run as root (it sets the device's pin limits).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"

#define PAGE 4096UL
/* Longest wait for the peer's RDMA WRITE to complete (TCG is slow). */
#define PEER_WRITE_SECONDS 60

static const char *dev_a = "stellar0", *dev_b = "stellar1", *only;
static int gid_index = 1;
static int passed, failed;
static char why[256];

static struct tlib_side A, B;

static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- sysfs of device A ---- */

static long long sysfs_read(const char *rel)
{
	return tlib_sysfs_read(dev_a, rel);
}

static int sysfs_write(const char *rel, unsigned long long v)
{
	return tlib_sysfs_write(dev_a, rel, (long long)v);
}

static long long pinned(void)
{
	return sysfs_read("pinned_pages");
}

static long long counter(const char *name)
{
	return tlib_hw_counter(dev_a, name);
}

/* Pages this process has pinned, as the kernel charges them (VmPin). */
static long long vm_pin_pages(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %lld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb / 4;
}

/* ---- connection A <-> B ---- */

static int side_open(struct tlib_side *s, const char *name)
{
	return tlib_side_open(s, name, gid_index, why, sizeof(why));
}

static int qp_connect(struct tlib_side *s, const struct tlib_side *peer)
{
	return tlib_side_connect(s, peer, gid_index, why, sizeof(why));
}

/*
 * B writes @len bytes of @src into A's (addr, rkey) and waits for that very
 * write's completion (by wr_id, within a wall-clock bound): a completion of
 * an earlier write that timed out must not pass for this one, or the bytes
 * would be checked before they land.
 */
static int peer_write(void *src, size_t len, uint64_t addr, uint32_t rkey)
{
	static uint64_t next_id = 1000;
	struct ibv_mr *mr = ibv_reg_mr(B.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len };
	struct ibv_send_wr wr = {
		.wr_id = ++next_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
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
		if (n == 1 && wc.wr_id != wr.wr_id) {
			printf("  peer: dropped the completion of an earlier write (wr_id %llu)\n",
			       (unsigned long long)wc.wr_id);
			continue;
		}
		if (n)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > PEER_WRITE_SECONDS)
			break;
	}
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		ret = fail("peer write: n=%d status=%s", n,
			   n == 1 ? ibv_wc_status_str(wc.status) : "- (timed out)");
out:
	ibv_dereg_mr(mr);
	return ret;
}

static void *map_pages(size_t len, void *at)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
		       (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x11, len);
	return p;
}

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

/* ---- subtests ---- */

static int creating_objects_pins_nothing(void)
{
	/* setup opened A with a PD, CQ and QP already */
	if (pinned() != 0)
		return fail("pinned_pages %lld with no MR", pinned());
	return 0;
}

static int registration_pins_exactly_its_pages(void)
{
	size_t len = 16 * PAGE;
	char *buf = map_pages(len + PAGE, NULL);
	long long before = pinned(), vmpin = vm_pin_pages();
	struct ibv_mr *mr;
	int ret = 0;

	/* 16 pages starting mid-page touch 17 pages */
	mr = ibv_reg_mr(A.pd, buf + 100, len, RW);
	if (!mr)
		return fail("reg_mr: %s", strerror(errno));
	if (pinned() - before != 17)
		ret = fail("pinned grew by %lld, want 17", pinned() - before);
	else if (vm_pin_pages() - vmpin != 17)
		ret = fail("process VmPin grew by %lld pages, want 17",
			   vm_pin_pages() - vmpin);
	ibv_dereg_mr(mr);
	munmap(buf, len + PAGE);
	return ret;
}

static int repeated_registration_hits_cache(void)
{
	size_t len = 64 * PAGE;
	char *buf = map_pages(len, NULL);
	long long hits = counter("pin_cache_hits");
	long long misses = counter("pin_cache_misses");
	long long base = pinned();
	struct ibv_mr *mr;
	int i;

	for (i = 0; i < 10; i++) {
		mr = ibv_reg_mr(A.pd, buf, len, RW);
		if (!mr)
			return fail("reg_mr %d: %s", i, strerror(errno));
		ibv_dereg_mr(mr);
	}
	if (counter("pin_cache_misses") - misses != 1 ||
	    counter("pin_cache_hits") - hits != 9)
		return fail("misses +%lld hits +%lld, want +1 +9",
			    counter("pin_cache_misses") - misses,
			    counter("pin_cache_hits") - hits);
	/* Idle but cached: still pinned after the last deregistration. */
	if (pinned() - base != 64)
		return fail("pinned +%lld after dereg, want 64 cached",
			    pinned() - base);
	munmap(buf, len);
	/* Invalidated idle pins are released by a worker: allow it 1 s. */
	for (i = 0; i < 100 && pinned() != base; i++)
		usleep(10000);
	if (pinned() != base)
		return fail("munmap left %lld pages pinned", pinned() - base);
	return 0;
}

static int registration_inside_a_registration_shares_its_pins(void)
{
	size_t len = 256 * PAGE;
	char *buf = map_pages(len, NULL);
	long long hits = counter("pin_cache_hits");
	struct ibv_mr *big, *small;
	long long p1;
	int ret = 0;

	big = ibv_reg_mr(A.pd, buf, len, RW);
	if (!big)
		return fail("reg big: %s", strerror(errno));
	p1 = pinned();
	small = ibv_reg_mr(A.pd, buf + 10 * PAGE + 8, 3 * PAGE, RW);
	if (!small)
		ret = fail("reg small: %s", strerror(errno));
	else if (pinned() != p1 || counter("pin_cache_hits") != hits + 1)
		ret = fail("sub-range pinned %lld more, hits +%lld",
			   pinned() - p1, counter("pin_cache_hits") - hits);
	if (small)
		ibv_dereg_mr(small);
	ibv_dereg_mr(big);
	munmap(buf, len);
	return ret;
}

static int idle_bound_zero_releases_pins_at_deregistration(void)
{
	long long saved = sysfs_read("pin_cache_bytes");
	long long ev = counter("pin_cache_evictions");
	size_t len = 32 * PAGE;
	char *buf = map_pages(len, NULL);
	long long base = pinned();
	struct ibv_mr *mr;
	int ret = 0;

	if (sysfs_write("pin_cache_bytes", 0))
		return fail("cannot set pin_cache_bytes");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr) {
		ret = fail("reg: %s", strerror(errno));
	} else {
		ibv_dereg_mr(mr);
		if (pinned() != base)
			ret = fail("%lld pages kept with bound 0",
				   pinned() - base);
		else if (counter("pin_cache_evictions") != ev + 1)
			ret = fail("evictions +%lld, want +1",
				   counter("pin_cache_evictions") - ev);
	}
	sysfs_write("pin_cache_bytes", saved);
	munmap(buf, len);
	return ret;
}

static int lru_evicts_oldest_idle_first(void)
{
	long long saved = sysfs_read("pin_cache_bytes");
	size_t len = 8 * PAGE;
	char *b1 = map_pages(len, NULL), *b2 = map_pages(len, NULL);
	char *b3 = map_pages(len, NULL);
	long long hits, misses;
	struct ibv_mr *mr;
	int ret = 0;

	/* room for two idle ranges of 8 pages */
	sysfs_write("pin_cache_bytes", 0);
	sysfs_write("pin_cache_bytes", 16 * PAGE);
	ibv_dereg_mr(ibv_reg_mr(A.pd, b1, len, RW));
	ibv_dereg_mr(ibv_reg_mr(A.pd, b2, len, RW));
	ibv_dereg_mr(ibv_reg_mr(A.pd, b3, len, RW));	/* evicts b1 */
	hits = counter("pin_cache_hits");
	misses = counter("pin_cache_misses");
	mr = ibv_reg_mr(A.pd, b3, len, RW);
	ibv_dereg_mr(mr);
	mr = ibv_reg_mr(A.pd, b1, len, RW);
	ibv_dereg_mr(mr);
	if (counter("pin_cache_hits") - hits != 1 ||
	    counter("pin_cache_misses") - misses != 1)
		ret = fail("b3 should hit and b1 miss: hits +%lld misses +%lld",
			   counter("pin_cache_hits") - hits,
			   counter("pin_cache_misses") - misses);
	sysfs_write("pin_cache_bytes", saved);
	munmap(b1, len);
	munmap(b2, len);
	munmap(b3, len);
	return ret;
}

/*
 * The classic registration-cache bug: register, deregister, munmap, map new
 * memory at the same address, register again, let the peer write: the bytes
 * must land in the new memory.
 */
static int remapped_address_gets_new_pages_not_stale_cache(void)
{
	size_t len = 16 * PAGE;
	long long inval = counter("pin_cache_invalidations");
	char *buf = map_pages(len, NULL), *again, *src;
	struct ibv_mr *mr;
	size_t i;
	int ret = 0;

	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("first reg: %s", strerror(errno));
	ibv_dereg_mr(mr);		/* pins stay cached */
	munmap(buf, len);
	if (counter("pin_cache_invalidations") != inval + 1)
		return fail("munmap: invalidations +%lld, want +1",
			    counter("pin_cache_invalidations") - inval);
	again = map_pages(len, buf);
	if (again != buf)
		return fail("could not map again at %p", (void *)buf);
	memset(again, 0x22, len);
	mr = ibv_reg_mr(A.pd, again, len, RW);
	if (!mr)
		return fail("second reg: %s", strerror(errno));
	src = malloc(len);
	for (i = 0; i < len; i++)
		src[i] = (char)(i * 7 + 3);
	if (peer_write(src, len, (uintptr_t)again, mr->rkey))
		ret = -1;
	else if (memcmp(again, src, len))
		ret = fail("peer's bytes did not land in the new memory");
	ibv_dereg_mr(mr);
	free(src);
	munmap(again, len);
	return ret;
}

/*
 * Memory only read so far maps the shared zero page: the writable pin
 * breaks COW itself, which invalidates the range while it is being pinned.
 * The pin is retried once, so the entry is still cached: the next
 * registration is a hit, and the peer's bytes land in the process's memory.
 */
static int registration_that_breaks_cow_is_still_cached(void)
{
	size_t len = 8 * PAGE, i;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *src = malloc(len);
	volatile char sink = 0;
	long long hits, misses;
	struct ibv_mr *mr;
	int ret = 0;

	if (buf == MAP_FAILED || !src)
		return fail("setup");
	for (i = 0; i < len; i += PAGE)
		sink += buf[i];			/* maps the zero page */
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("first reg: %s", strerror(errno));
	ibv_dereg_mr(mr);
	hits = counter("pin_cache_hits");
	misses = counter("pin_cache_misses");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("second reg: %s", strerror(errno));
	if (counter("pin_cache_hits") != hits + 1 ||
	    counter("pin_cache_misses") != misses) {
		ret = fail("second reg: hits +%lld misses +%lld, want +1 +0",
			   counter("pin_cache_hits") - hits,
			   counter("pin_cache_misses") - misses);
		goto out;
	}
	for (i = 0; i < len; i++)
		src[i] = (char)(i * 3 + 1);
	if (peer_write(src, len, (uintptr_t)buf, mr->rkey))
		ret = -1;
	else if (memcmp(buf, src, len))
		ret = fail("peer's bytes did not land in the process's memory");
out:
	ibv_dereg_mr(mr);
	free(src);
	munmap(buf, len);
	return ret;
}

/*
 * fork write-protects the parent's COW mappings (MMU_NOTIFY_PROTECTION_PAGE)
 * but copies pinned pages for the child: the parent keeps mapping exactly
 * the pages the cache holds, so its cached pins stay valid.  Re-registering
 * is a hit, and the peer's bytes land in the parent's memory, not the
 * child's.
 */
static int fork_keeps_parent_pins_cached_and_writes_land_in_parent(void)
{
	size_t len = 8 * PAGE;
	char *buf = map_pages(len, NULL), *src = malloc(len);
	long long hits, misses;
	struct ibv_mr *mr;
	int go[2], st, ret = 0;
	size_t i;
	pid_t pid;

	if (!buf || !src || pipe(go))
		return fail("setup");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("first reg: %s", strerror(errno));
	ibv_dereg_mr(mr);			/* cached, idle */
	pid = fork();
	if (pid == 0) {
		char c;

		/*
		 * The child writes its copy, then checks it after the peer's
		 * write to the parent.
		 */
		memset(buf, 0x33, len);
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		for (i = 0; i < len; i++)
			if (buf[i] != 0x33)
				_exit(1);
		_exit(0);
	}
	close(go[0]);
	hits = counter("pin_cache_hits");
	misses = counter("pin_cache_misses");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr) {
		ret = fail("reg after fork: %s", strerror(errno));
		goto out_child;
	}
	if (counter("pin_cache_hits") != hits + 1 ||
	    counter("pin_cache_misses") != misses) {
		ret = fail("after fork: hits +%lld misses +%lld, want +1 +0",
			   counter("pin_cache_hits") - hits,
			   counter("pin_cache_misses") - misses);
		goto out_mr;
	}
	for (i = 0; i < len; i++)
		src[i] = (char)(i * 13 + 5);
	if (peer_write(src, len, (uintptr_t)buf, mr->rkey))
		ret = -1;
	else if (memcmp(buf, src, len))
		ret = fail("peer's bytes did not land in the parent's memory");
out_mr:
	ibv_dereg_mr(mr);
out_child:
	if (write(go[1], "g", 1) != 1)
		ret = ret ? ret : fail("pipe");
	close(go[1]);
	waitpid(pid, &st, 0);
	if (!ret && (!WIFEXITED(st) || WEXITSTATUS(st)))
		ret = fail("child's copy changed or child failed (status %d)",
			   WEXITSTATUS(st));
	free(src);
	munmap(buf, len);
	return ret;
}

/* Clearing soft-dirty bits leaves pinned pages mapped: pins stay cached. */
static int clear_soft_dirty_keeps_pins_cached(void)
{
	size_t len = 8 * PAGE;
	char *buf = map_pages(len, NULL);
	long long hits, misses;
	struct ibv_mr *mr;
	FILE *f;

	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("first reg: %s", strerror(errno));
	ibv_dereg_mr(mr);
	f = fopen("/proc/self/clear_refs", "w");
	if (!f || fputs("4\n", f) < 0 || fclose(f))
		return fail("cannot write /proc/self/clear_refs");
	hits = counter("pin_cache_hits");
	misses = counter("pin_cache_misses");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("reg after clear_refs: %s", strerror(errno));
	ibv_dereg_mr(mr);
	munmap(buf, len);
	if (counter("pin_cache_hits") != hits + 1 ||
	    counter("pin_cache_misses") != misses)
		return fail("after clear_refs: hits +%lld misses +%lld, want +1 +0",
			    counter("pin_cache_hits") - hits,
			    counter("pin_cache_misses") - misses);
	return 0;
}

/*
 * mprotect (and NUMA hinting, the same event) still drops cached pins: a
 * writable registration of memory made read-only must fault and fail, not
 * be served writable pins from the cache.
 */
static int mprotect_read_only_refuses_cached_writable_pins(void)
{
	size_t len = 8 * PAGE;
	char *buf = map_pages(len, NULL);
	struct ibv_mr *mr;
	int ret = 0;

	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("first reg: %s", strerror(errno));
	ibv_dereg_mr(mr);
	if (mprotect(buf, len, PROT_READ))
		return fail("mprotect: %s", strerror(errno));
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (mr || errno != EFAULT)
		ret = fail("writable reg of read-only memory: %s, want EFAULT",
			   mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(buf, len);
	return ret;
}

static int over_device_quota_is_enomem(void)
{
	long long saved = sysfs_read("pin_quota_bytes");
	long long refusals = counter("pin_quota_refusals");
	size_t len = 64 * PAGE;
	char *buf = map_pages(len, NULL);
	struct ibv_mr *mr, *ok;
	int ret = 0;

	if (sysfs_write("pin_quota_bytes", pinned() * PAGE + 32 * PAGE))
		return fail("cannot set pin_quota_bytes");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (mr || errno != ENOMEM)
		ret = fail("64 pages over a 32-page quota: %s, want ENOMEM",
			   mr ? "registered" : strerror(errno));
	else if (counter("pin_quota_refusals") != refusals + 1)
		ret = fail("pin_quota_refusals did not move");
	if (mr)
		ibv_dereg_mr(mr);
	ok = ibv_reg_mr(A.pd, buf, 16 * PAGE, RW);
	if (!ok && !ret)
		ret = fail("16 pages under the quota: %s", strerror(errno));
	if (ok)
		ibv_dereg_mr(ok);
	sysfs_write("pin_quota_bytes", saved);
	munmap(buf, len);
	return ret;
}

/* Without CAP_IPC_LOCK, pins count against RLIMIT_MEMLOCK. */
static int over_memlock_limit_is_enomem(void)
{
	size_t len = 64 * PAGE;
	char *buf = map_pages(len, NULL);
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		struct __user_cap_header_struct h = {
			.version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct d[2];
		struct rlimit rl = { 32 * PAGE, 32 * PAGE };
		struct ibv_mr *mr;

		syscall(SYS_capget, &h, d);
		d[0].effective &= ~(1U << CAP_IPC_LOCK);
		if (syscall(SYS_capset, &h, d) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(3);
		mr = ibv_reg_mr(A.pd, buf, len, RW);
		if (mr || errno != ENOMEM)
			_exit(1);
		mr = ibv_reg_mr(A.pd, buf, 8 * PAGE, RW);
		_exit(mr ? 0 : 2);
	}
	waitpid(pid, &st, 0);
	munmap(buf, len);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return fail("child status %d (1: not ENOMEM over the limit, 2: "
			    "refused under it, 3: setup)", WEXITSTATUS(st));
	return 0;
}

/*
 * Re-registering a region revives its parked parent MR under the next key;
 * the 8-bit key must never come round to one a peer may still hold.
 */
static int rkeys_do_not_repeat_over_600_reregistrations(void)
{
	enum { N = 600 };
	size_t len = 4 * PAGE;
	char *buf = map_pages(len, NULL);
	static uint32_t keys[N];
	struct ibv_mr *mr;
	int i, j;

	for (i = 0; i < N; i++) {
		mr = ibv_reg_mr(A.pd, buf, len, RW);
		if (!mr)
			return fail("reg %d: %s", i, strerror(errno));
		keys[i] = mr->rkey;
		ibv_dereg_mr(mr);
	}
	munmap(buf, len);
	for (i = 0; i < N; i++)
		for (j = i + 1; j < N; j++)
			if (keys[i] == keys[j])
				return fail("rkey 0x%x of registration %d came back at %d",
					    keys[i], i, j);
	return 0;
}

/* ---- concurrent registrations under a quota ---- */

enum { QUOTA_THREADS = 32 };
#define QUOTA_BYTES (16UL << 20)
#define QUOTA_REGION (10UL << 20)	/* more than half the quota */

static pthread_barrier_t quota_bar;
static int quota_running;
static long long quota_max_pinned;

struct quota_arg {
	char *buf;
	struct ibv_mr *mr;
	int err;
};

static void *quota_reg(void *p)
{
	struct quota_arg *a = p;

	pthread_barrier_wait(&quota_bar);
	a->mr = ibv_reg_mr(A.pd, a->buf, QUOTA_REGION, RW);
	a->err = a->mr ? 0 : errno;
	return NULL;
}

static void *quota_sample(void *p)
{
	(void)p;
	pthread_barrier_wait(&quota_bar);
	while (__atomic_load_n(&quota_running, __ATOMIC_ACQUIRE)) {
		long long n = pinned();

		if (n > quota_max_pinned)
			quota_max_pinned = n;
	}
	return NULL;
}

/*
 * 32 threads register distinct regions of 10 MiB at once under a 16 MiB
 * quota: at most one may succeed, the others get ENOMEM and count as quota
 * refusals, and pinned_pages never goes over the quota, not even for a
 * moment.
 */
static int concurrent_registrations_stay_within_quota(void)
{
	long long saved_quota = sysfs_read("pin_quota_bytes");
	long long saved_cache = sysfs_read("pin_cache_bytes");
	long long refusals, quota_pages = QUOTA_BYTES / PAGE;
	static struct quota_arg args[QUOTA_THREADS];
	pthread_t th[QUOTA_THREADS], sampler;
	int i, ok = 0, enomem = 0, other = 0, ret = 0;

	/*
	 * Start from nothing pinned: drop idle pins of earlier subtests (an
	 * unpin queued by an earlier subtest may still be on its way: wait
	 * up to 2 s for it).
	 */
	sysfs_write("pin_cache_bytes", 0);
	sysfs_write("pin_cache_bytes", saved_cache);
	for (i = 0; i < 200 && pinned() != 0; i++)
		usleep(10000);
	refusals = pinned();
	if (refusals != 0)
		return fail("%lld pages pinned before the test", refusals);
	for (i = 0; i < QUOTA_THREADS; i++) {
		args[i].buf = mmap(NULL, QUOTA_REGION, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				   -1, 0);
		if (args[i].buf == MAP_FAILED)
			return fail("mmap %d: %s", i, strerror(errno));
		args[i].mr = NULL;
	}
	if (sysfs_write("pin_quota_bytes", QUOTA_BYTES))
		return fail("cannot set pin_quota_bytes");
	refusals = counter("pin_quota_refusals");
	quota_max_pinned = 0;
	__atomic_store_n(&quota_running, 1, __ATOMIC_RELEASE);
	pthread_barrier_init(&quota_bar, NULL, QUOTA_THREADS + 1);
	pthread_create(&sampler, NULL, quota_sample, NULL);
	for (i = 0; i < QUOTA_THREADS; i++)
		pthread_create(&th[i], NULL, quota_reg, &args[i]);
	for (i = 0; i < QUOTA_THREADS; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&quota_running, 0, __ATOMIC_RELEASE);
	pthread_join(sampler, NULL);
	pthread_barrier_destroy(&quota_bar);
	if (pinned() > quota_max_pinned)
		quota_max_pinned = pinned();

	for (i = 0; i < QUOTA_THREADS; i++) {
		if (args[i].mr)
			ok++;
		else if (args[i].err == ENOMEM)
			enomem++;
		else
			other++;
	}
	printf("  quota: %d registered, %d ENOMEM, %d other; pinned_pages max %lld of quota %lld\n",
	       ok, enomem, other, quota_max_pinned, quota_pages);
	if (ok > (int)(QUOTA_BYTES / QUOTA_REGION))
		ret = fail("%d of %d registrations of %lu MiB under a %lu MiB quota succeeded",
			   ok, QUOTA_THREADS, QUOTA_REGION >> 20,
			   QUOTA_BYTES >> 20);
	else if (quota_max_pinned > quota_pages)
		ret = fail("pinned_pages reached %lld, quota %lld",
			   quota_max_pinned, quota_pages);
	else if (other || ok + enomem != QUOTA_THREADS)
		ret = fail("%d refusals were not ENOMEM", other);
	else if (counter("pin_quota_refusals") - refusals != enomem)
		ret = fail("pin_quota_refusals +%lld, want +%d",
			   counter("pin_quota_refusals") - refusals, enomem);
	else if (ok != 1)
		ret = fail("no registration succeeded under the quota");

	for (i = 0; i < QUOTA_THREADS; i++) {
		if (args[i].mr)
			ibv_dereg_mr(args[i].mr);
		munmap(args[i].buf, QUOTA_REGION);
	}
	sysfs_write("pin_quota_bytes", saved_quota);
	/* Invalidated idle pins are released by a worker: allow it 2 s. */
	for (i = 0; i < 200 && pinned() != 0; i++)
		usleep(10000);
	if (!ret && pinned() != 0)
		ret = fail("%lld pages still pinned after dereg and munmap",
			   pinned());
	return ret;
}

/* ---- munmap racing a registration of the same address ---- */

/*
 * The mapping is large and only its last pages are registered: munmap
 * starts its invalidation for the whole range, then zaps page by page, so a
 * registration of the tail finds its PTEs still present for a while.
 */
#define RACE_LEN (32UL << 20)
#define RACE_REG (64UL << 10)
enum { RACE_ITERS = 400 };
static int race_seconds = 60;	/* -r */

static pthread_barrier_t race_bar;
static char *race_addr;
static int race_stop;
static int race_regs_ok;

static int race_stopped(void)
{
	return __atomic_load_n(&race_stop, __ATOMIC_ACQUIRE);
}

/*
 * Map anonymous memory into the hole at race_addr.  It must be a hole: a
 * mapping replaced with MAP_FIXED would be an unmap the notifier sees,
 * which hides the bug.  0, or -1 if something else took the address.
 */
static int race_map(void)
{
	void *m = mmap(race_addr, RACE_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	static int said;

	if (m == race_addr)
		return 0;
	if (!said++)
		printf("  race: cannot map at %p: %s\n", (void *)race_addr,
		       m == MAP_FAILED ? strerror(errno) : "placed elsewhere");
	if (m != MAP_FAILED)
		munmap(m, RACE_LEN);
	return -1;
}

static void *race_unmapper(void *p)
{
	int mapped;

	(void)p;
	pthread_barrier_wait(&race_bar);		/* ready */
	pthread_barrier_wait(&race_bar);		/* address chosen */
	while (!race_stopped()) {
		mapped = !race_map();
		if (mapped)
			memset(race_addr, 0x44, RACE_LEN);
		pthread_barrier_wait(&race_bar);	/* go */
		if (mapped)
			munmap(race_addr, RACE_LEN);
		pthread_barrier_wait(&race_bar);	/* done */
		pthread_barrier_wait(&race_bar);	/* checked */
	}
	return NULL;
}

static void *race_registrar(void *p)
{
	static char warm[PAGE] __attribute__((aligned(4096)));
	unsigned int round = 0;

	(void)p;
	/* Warm up: this thread's allocations are made before race_addr. */
	ibv_dereg_mr(ibv_reg_mr(A.pd, warm, PAGE, RW));
	pthread_barrier_wait(&race_bar);		/* ready */
	pthread_barrier_wait(&race_bar);		/* address chosen */
	while (!race_stopped()) {
		struct ibv_mr *mr;
		volatile unsigned int spin;

		pthread_barrier_wait(&race_bar);
		/* Vary where in the munmap the registration lands. */
		for (spin = 0; spin < (round++ % 16) * 2000; spin++)
			;
		mr = ibv_reg_mr(A.pd, race_addr + RACE_LEN - RACE_REG,
				RACE_REG, RW);
		if (mr) {
			race_regs_ok++;
			ibv_dereg_mr(mr);	/* the pins stay cached */
		}
		pthread_barrier_wait(&race_bar);
		pthread_barrier_wait(&race_bar);
	}
	return NULL;
}

static double now_s(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/*
 * One thread maps, touches and unmaps a fixed address while another
 * registers it (the pins it got stay cached after dereg).  After each
 * round, memory mapped anew at that address is registered and written by
 * the peer: the bytes must land in the current mapping, whatever the race
 * left in the cache.  A stale entry from a notifier inserted during the
 * munmap's invalidation would serve the old, unmapped pages.
 */
static int racing_munmap_never_leaves_stale_pages_cached(void)
{
	char *src = malloc(RACE_REG), *tail, *guard;
	double end = now_s() + race_seconds;
	int it, ret = 0, checked = 0;
	long long hits;
	pthread_t t1, t2;
	struct ibv_mr *mr;
	size_t i;

	if (!src)
		return fail("setup");
	memset(src, 0x55, RACE_REG);
	__atomic_store_n(&race_stop, 0, __ATOMIC_RELEASE);
	race_regs_ok = 0;
	pthread_barrier_init(&race_bar, NULL, 3);
	pthread_create(&t1, NULL, race_unmapper, NULL);
	pthread_create(&t2, NULL, race_registrar, NULL);
	/*
	 * A hole for the race, chosen once the threads have their memory,
	 * between two reserved guards so no bigger allocation can use it.
	 */
	pthread_barrier_wait(&race_bar);		/* ready */
	guard = mmap(NULL, 3 * RACE_LEN, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		guard = NULL;
	race_addr = guard ? guard + RACE_LEN : NULL;
	if (guard)
		munmap(race_addr, RACE_LEN);
	tail = race_addr + RACE_LEN - RACE_REG;
	pthread_barrier_wait(&race_bar);		/* address chosen */
	for (it = 0; ; it++) {
		pthread_barrier_wait(&race_bar);	/* go */
		pthread_barrier_wait(&race_bar);	/* done */
		if (!race_map()) {
			memset(tail, 0xAA, RACE_REG);
			hits = counter("pin_cache_hits");
			mr = ibv_reg_mr(A.pd, tail, RACE_REG, RW);
			hits = counter("pin_cache_hits") - hits;
			if (!mr) {
				ret = fail("round %d: reg: %s", it,
					   strerror(errno));
			} else {
				if (peer_write(src, RACE_REG, (uintptr_t)tail,
					       mr->rkey))
					ret = -1;
				for (i = 0; !ret && i < RACE_REG; i += PAGE)
					if (tail[i] != 0x55)
						ret = fail("round %d: page %zu kept 0x%02x: the peer wrote into stale pinned pages (registration was a cache %s)",
							   it, i / PAGE,
							   tail[i] & 0xff,
							   hits ? "hit" : "miss");
				ibv_dereg_mr(mr);
				checked++;
			}
			munmap(race_addr, RACE_LEN);
		}
		if (ret || it + 1 >= RACE_ITERS || now_s() > end)
			__atomic_store_n(&race_stop, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&race_bar);	/* checked */
		if (race_stopped())
			break;
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	pthread_barrier_destroy(&race_bar);
	if (guard) {
		munmap(guard, RACE_LEN);
		munmap(guard + 2 * RACE_LEN, RACE_LEN);
	}
	free(src);
	printf("  race: %d rounds, %d checked, %d registrations succeeded\n",
	       it + 1, checked, race_regs_ok);
	if (!ret && !checked)
		ret = fail("no round could map the address again");
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
#define T(f) { #f, f }
	T(creating_objects_pins_nothing),
	T(registration_pins_exactly_its_pages),
	T(repeated_registration_hits_cache),
	T(registration_inside_a_registration_shares_its_pins),
	T(idle_bound_zero_releases_pins_at_deregistration),
	T(lru_evicts_oldest_idle_first),
	T(remapped_address_gets_new_pages_not_stale_cache),
	T(registration_that_breaks_cow_is_still_cached),
	T(fork_keeps_parent_pins_cached_and_writes_land_in_parent),
	T(clear_soft_dirty_keeps_pins_cached),
	T(mprotect_read_only_refuses_cached_writable_pins),
	T(concurrent_registrations_stay_within_quota),
	T(racing_munmap_never_leaves_stale_pages_cached),
	T(over_device_quota_is_enomem),
	T(over_memlock_limit_is_enomem),
	T(rkeys_do_not_repeat_over_600_reregistrations),
#undef T
};

int main(int argc, char **argv)
{
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "a:b:g:r:t:")) != -1) {
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
		case 'r':
			race_seconds = atoi(optarg);
			if (race_seconds < 1) {
				fprintf(stderr, "-r: want seconds >= 1\n");
				return 2;
			}
			break;
		case 't':
			only = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s -a DEV -b PEER [-g GID] [-r RACE_SECONDS] [-t TEST]\n",
				argv[0]);
			return 2;
		}
	}
	if (side_open(&A, dev_a) || side_open(&B, dev_b) ||
	    qp_connect(&A, &B) || qp_connect(&B, &A)) {
		printf("FAIL setup: %s\n0 passed, 1 failed\n", why);
		return 1;
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
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
