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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"

#define PAGE 4096UL

static const char *dev_a = "stellar0", *dev_b = "stellar1", *only;
static int gid_index = 1;
static int passed, failed;
static char why[256];

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

/* ---- sysfs of device A ---- */

static long long sysfs_read(const char *rel)
{
	char path[256], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev_a, rel);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 0);
	fclose(f);
	return v;
}

static int sysfs_write(const char *rel, unsigned long long v)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev_a, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%llu\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

static long long pinned(void)
{
	return sysfs_read("pinned_pages");
}

/* hw_counters are cached by the core for a few milliseconds: wait that out. */
static long long counter(const char *name)
{
	char rel[128];

	usleep(25000);
	snprintf(rel, sizeof(rel), "ports/1/hw_counters/%s", name);
	return sysfs_read(rel);
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

/* B writes @len bytes of @src into A's (addr, rkey) and waits for it. */
static int peer_write(void *src, size_t len, uint64_t addr, uint32_t rkey)
{
	struct ibv_mr *mr = ibv_reg_mr(B.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;
	int n, spins = 0, ret = 0;

	if (!mr)
		return fail("peer reg_mr: %s", strerror(errno));
	sge.lkey = mr->lkey;
	if (ibv_post_send(B.qp, &wr, &bad)) {
		ret = fail("peer post: %s", strerror(errno));
		goto out;
	}
	while (!(n = ibv_poll_cq(B.cq, 1, &wc)) && ++spins < 20000000)
		;
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		ret = fail("peer write: n=%d status=%s", n,
			   n == 1 ? ibv_wc_status_str(wc.status) : "-");
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

static int fork_drops_cached_pins_of_parent(void)
{
	size_t len = 8 * PAGE;
	char *buf = map_pages(len, NULL);
	long long inval, misses;
	struct ibv_mr *mr;
	pid_t pid;
	int st;

	ibv_dereg_mr(ibv_reg_mr(A.pd, buf, len, RW));
	inval = counter("pin_cache_invalidations");
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0);
	if (counter("pin_cache_invalidations") <= inval)
		return fail("fork did not invalidate the cached range");
	misses = counter("pin_cache_misses");
	mr = ibv_reg_mr(A.pd, buf, len, RW);
	if (!mr)
		return fail("reg after fork: %s", strerror(errno));
	ibv_dereg_mr(mr);
	if (counter("pin_cache_misses") != misses + 1)
		return fail("registration after fork did not re-pin");
	munmap(buf, len);
	return 0;
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
	T(fork_drops_cached_pins_of_parent),
	T(over_device_quota_is_enomem),
	T(over_memlock_limit_is_enomem),
	T(rkeys_do_not_repeat_over_600_reregistrations),
#undef T
};

int main(int argc, char **argv)
{
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "a:b:g:t:")) != -1) {
		switch (c) {
		case 'a': dev_a = optarg; break;
		case 'b': dev_b = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 't': only = optarg; break;
		default:
			fprintf(stderr, "usage: %s -a DEV -b PEER [-g GID] [-t TEST]\n",
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
