// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_fuzz - a seeded, bounded fuzzer that drives RDMA devices from
 * userspace the way a hostile tenant would.
 *
 *   stl_fuzz -d stellar0 [-d stellar1] [-s SEED] [-n OPS] [-T SECONDS]
 *            [-t THREADS] [-r ROUND_S] [-l LOGDIR] [-g GID_INDEX] [-q]
 *
 * The run is a sequence of rounds.  A round opens every device named with
 * -d, lets THREADS threads issue random operations on objects they share
 * (PDs, MRs, CQs, QPs, AHs, completion channels) for ROUND_S seconds, then
 * destroys what is left in a random order and closes the devices.  A device
 * that disappears (rdma link delete, parent removed) makes the round end
 * early; the next round waits for the device to come back.
 *
 * Operations: the libibverbs API with random arguments (WR chains with bad
 * lkeys, lengths, opcodes, flags, AHs, SGE counts; QP state transitions with
 * random attributes and masks; objects destroyed in any order), raw uverbs
 * commands on the device's command fd (legacy write() commands and
 * RDMA_VERBS_IOCTL methods, from valid templates with mutated handles,
 * sizes, driver data and fields), fork() with objects alive (the child
 * issues commands and exits), and munmap/mremap of memory that other
 * threads register.
 *
 * Safety for the host running it: every address handed to the kernel for
 * reading or writing lies in memory the fuzzer owns for that purpose (an
 * arena, per-thread scratch buffers, a window whose pages come and go) or
 * is invalid (guard pages, kernel addresses); every destination GID is a
 * GID of the device itself, so no packet leaves the machine.
 *
 * Determinism: each thread draws its choices from its own generator, seeded
 * from SEED, the round and the thread; a run with the same seed issues the
 * same choices per thread (the interleaving of threads differs).
 *
 * Output: a table of operations by kind and results by errno, and the last
 * line "fuzz: N ops, seed S, ok" (exit 0).  Each thread appends every
 * operation to LOGDIR/fuzz-tN.log before issuing it (one write(2) per op,
 * fsync every 256 ops), so a kernel report can be related to what was
 * issued.  A thread that makes no progress for 60 s is reported (with its
 * last operations) and the program exits 3.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#define MAXDEV 4
#define MAXTHR 16
#define MAXOBJ 12
#define ARENA_SZ (8UL << 20)
#define WIN_SZ (4UL << 20)
#define SCRATCH_SZ (4UL << 20)
#define PAGE 4096UL
#define KADDR 0xffff888000100000ULL

/* ---------- operation kinds and result table ---------- */

enum op {
	OP_alloc_pd,
	OP_dealloc_pd,
	OP_reg_mr,
	OP_dereg_mr,
	OP_create_cq,
	OP_destroy_cq,
	OP_resize_cq,
	OP_create_qp,
	OP_destroy_qp,
	OP_modify_qp_rand,
	OP_modify_qp_conn,
	OP_query_qp,
	OP_create_ah,
	OP_destroy_ah,
	OP_post_send,
	OP_post_recv,
	OP_post_send_wf,
	OP_post_recv_wf,
	OP_poll_cq,
	OP_req_notify,
	OP_cq_event,
	OP_async_event,
	OP_create_chan,
	OP_destroy_chan,
	OP_query,
	OP_raw_write,
	OP_raw_write_ex,
	OP_raw_ioctl,
	OP_raw_fd,
	OP_fork,
	OP_vm_remap,
	OP_open_round,
	OP_fixture,
	NOPS
};

static const char *const op_names[] = {
	[OP_alloc_pd] = "alloc_pd",
	[OP_dealloc_pd] = "dealloc_pd",
	[OP_reg_mr] = "reg_mr",
	[OP_dereg_mr] = "dereg_mr",
	[OP_create_cq] = "create_cq",
	[OP_destroy_cq] = "destroy_cq",
	[OP_resize_cq] = "resize_cq",
	[OP_create_qp] = "create_qp",
	[OP_destroy_qp] = "destroy_qp",
	[OP_modify_qp_rand] = "modify_qp_rand",
	[OP_modify_qp_conn] = "modify_qp_conn",
	[OP_query_qp] = "query_qp",
	[OP_create_ah] = "create_ah",
	[OP_destroy_ah] = "destroy_ah",
	[OP_post_send] = "post_send",
	[OP_post_recv] = "post_recv",
	[OP_post_send_wf] = "post_send_wf",
	[OP_post_recv_wf] = "post_recv_wf",
	[OP_poll_cq] = "poll_cq",
	[OP_req_notify] = "req_notify",
	[OP_cq_event] = "cq_event",
	[OP_async_event] = "async_event",
	[OP_create_chan] = "create_chan",
	[OP_destroy_chan] = "destroy_chan",
	[OP_query] = "query",
	[OP_raw_write] = "raw_write",
	[OP_raw_write_ex] = "raw_write_ex",
	[OP_raw_ioctl] = "raw_ioctl",
	[OP_raw_fd] = "raw_fd",
	[OP_fork] = "fork",
	[OP_vm_remap] = "vm_remap",
	[OP_open_round] = "open_round",
	[OP_fixture] = "fixture",
};

#define NERR 140		/* errno values counted one by one; above: "other" */
static uint64_t stats[NOPS][NERR + 1];

static void count(enum op op, int err)
{
	if (err < 0)
		err = -err;
	if (err > NERR)
		err = NERR;
	__atomic_fetch_add(&stats[op][err], 1, __ATOMIC_RELAXED);
}

/* ---------- options ---------- */

static const char *devnames[MAXDEV];
static int ndev;
static uint64_t seed;
static uint64_t max_ops = UINT64_MAX;
static double max_secs = 60;
static int nthreads = 4;
static double round_secs = 10;
static const char *logdir;
static int gid_index = 1;
static bool quiet;

static uint64_t ops_total;	/* atomic */
static int stop_all;		/* set once, read by every thread */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------- random numbers ---------- */

struct rng {
	uint64_t s;
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(struct rng *r)
{
	return splitmix(&r->s);
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnd(r) % n) : 0;
}

static bool chance(struct rng *r, int pct)
{
	return below(r, 100) < (uint32_t)pct;
}

/* A value fuzzers like: small, boundary or random. */
static uint64_t interesting(struct rng *r)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256,
		1023, 1024, 4095, 4096, 4097, 65535, 65536, 0x7fffffff,
		0x80000000, 0xfffffffe, 0xffffffff, 0x100000000ULL,
		0x7fffffffffffffffULL, 0xffffffffffffffffULL,
	};

	if (chance(r, 70))
		return v[below(r, sizeof(v) / sizeof(v[0]))];
	return rnd(r) >> below(r, 64);
}

/* ---------- memory the kernel may read or write ---------- */

static uint8_t *arena;		/* MRs and WR data */
static uint8_t *win;		/* pages come and go (vm_remap) */
static uint8_t *guard;		/* PROT_NONE */
static uint8_t *hole;		/* unmapped once */

static void *map_guarded(size_t sz)
{
	uint8_t *p = mmap(NULL, sz + PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	mprotect(p + sz, PAGE, PROT_NONE);
	return p;
}

static void mem_init(void)
{
	arena = map_guarded(ARENA_SZ);
	memset(arena, 0x5a, ARENA_SZ);
	win = mmap(NULL, WIN_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	guard = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (win == MAP_FAILED || guard == MAP_FAILED || hole == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	munmap(hole, PAGE);
}

/* An address (and length) for memory the kernel reads or pins. */
static uint64_t pick_addr(struct rng *r, uint64_t *len)
{
	uint64_t off;

	switch (below(r, 12)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)guard + below(r, PAGE);
	case 2:
		return (uintptr_t)hole;
	case 3:
		return KADDR + below(r, 1 << 20);
	case 4:			/* runs off the end of the arena */
		off = ARENA_SZ - below(r, 2 * PAGE);
		return (uintptr_t)arena + off;
	case 5:
	case 6:
		off = below(r, WIN_SZ);
		if (*len > WIN_SZ - off)
			*len = chance(r, 50) ? WIN_SZ - off : *len;
		return (uintptr_t)win + off;
	default:
		if (*len > ARENA_SZ)
			return (uintptr_t)arena + below(r, PAGE);
		off = below(r, ARENA_SZ - *len + 1);
		if (chance(r, 50))
			off &= ~(PAGE - 1);
		return (uintptr_t)arena + off;
	}
}

static uint64_t pick_len(struct rng *r)
{
	switch (below(r, 10)) {
	case 0:
		return interesting(r);
	case 1:
		return 0;
	case 2:
		return below(r, ARENA_SZ) + 1;
	default:
		return below(r, 64 * 1024) + 1;
	}
}

/* ---------- objects shared by the threads of a round ---------- */

enum kind { K_PD, K_MR, K_CQ, K_QP, K_AH, K_CH, NKIND };

struct slot {
	void *obj;
	int users;		/* threads using obj now (under dev lock) */
};

struct dev {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	union ibv_gid gid;	/* every destination GID is this one */
	int raw_fd;		/* a second open of the uverbs char device */
	int dead;		/* the device went away */
	pthread_mutex_t lock;	/* guards s[][] and raw_fd */
	struct slot s[NKIND][MAXOBJ];
};

static struct dev devs[MAXDEV];
static int round_no;
static bool in_child;		/* a fork()ed child: take no lock */

/*
 * CQs and QPs created by raw commands report events with the user handle
 * the command gave; libibverbs takes that handle for a pointer.  Raw
 * commands always name these stand-ins, so a raw object's event is read and
 * acknowledged like any other.
 */
static struct ibv_cq dummy_cq[MAXDEV];
static struct ibv_qp dummy_qp[MAXDEV];

static void dummies_init(int i, struct ibv_context *ctx)
{
	memset(&dummy_cq[i], 0, sizeof(dummy_cq[i]));
	memset(&dummy_qp[i], 0, sizeof(dummy_qp[i]));
	dummy_cq[i].context = ctx;
	dummy_qp[i].context = ctx;
	pthread_mutex_init(&dummy_cq[i].mutex, NULL);
	pthread_cond_init(&dummy_cq[i].cond, NULL);
	pthread_mutex_init(&dummy_qp[i].mutex, NULL);
	pthread_cond_init(&dummy_qp[i].cond, NULL);
}

/* Take a shared reference on a random object of kind k, or NULL. */
static void *get(struct dev *d, struct rng *r, enum kind k, int *idx)
{
	int start = below(r, MAXOBJ), i, j;
	void *o = NULL;

	if (in_child)
		return NULL;
	pthread_mutex_lock(&d->lock);
	for (j = 0; j < MAXOBJ; j++) {
		i = (start + j) % MAXOBJ;
		if (d->s[k][i].obj) {
			d->s[k][i].users++;
			o = d->s[k][i].obj;
			*idx = i;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return o;
}

static void put(struct dev *d, enum kind k, int idx)
{
	pthread_mutex_lock(&d->lock);
	d->s[k][idx].users--;
	pthread_mutex_unlock(&d->lock);
}

/* Remove a random unused object of kind k from the table, or NULL. */
static void *take(struct dev *d, struct rng *r, enum kind k)
{
	int start = below(r, MAXOBJ), i, j;
	void *o = NULL;

	pthread_mutex_lock(&d->lock);
	for (j = 0; j < MAXOBJ; j++) {
		i = (start + j) % MAXOBJ;
		if (d->s[k][i].obj && !d->s[k][i].users) {
			o = d->s[k][i].obj;
			d->s[k][i].obj = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return o;
}

/* Add an object; false when the table is full. */
static bool add(struct dev *d, enum kind k, void *o)
{
	int i;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < MAXOBJ; i++) {
		if (!d->s[k][i].obj) {
			d->s[k][i].obj = o;
			d->s[k][i].users = 0;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return i < MAXOBJ;
}

static bool full(struct dev *d, enum kind k)
{
	int i, n = 0;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < MAXOBJ; i++)
		n += !!d->s[k][i].obj;
	pthread_mutex_unlock(&d->lock);
	return n == MAXOBJ;
}

/* A kernel handle of kind k: a live one, a stale or foreign one, or junk. */
static uint32_t pick_handle(struct dev *d, struct rng *r, enum kind k)
{
	uint32_t h = 0;
	int idx;
	void *o;

	if (chance(r, 15))
		return chance(r, 50) ? below(r, 64) : (uint32_t)interesting(r);
	if (chance(r, 10))
		k = below(r, K_CH);	/* wrong object type */
	o = get(d, r, k, &idx);
	if (!o)
		return below(r, 32);
	switch (k) {
	case K_PD:
		h = ((struct ibv_pd *)o)->handle;
		break;
	case K_MR:
		h = ((struct ibv_mr *)o)->handle;
		break;
	case K_CQ:
		h = ((struct ibv_cq *)o)->handle;
		break;
	case K_QP:
		h = ((struct ibv_qp *)o)->handle;
		break;
	case K_AH:
		h = ((struct ibv_ah *)o)->handle;
		break;
	default:
		h = below(r, 32);
	}
	put(d, k, idx);
	return h;
}

/* ---------- per-thread state and the operation log ---------- */

#define RING 32
struct thr {
	int id;
	pthread_t tid;
	struct rng r;
	int logfd;
	uint64_t nops;
	uint64_t progress;	/* atomic: ops started */
	double round_end;
	uint8_t *scratch;	/* SCRATCH_SZ bytes + a guard page */
	char ring[RING][200];
	unsigned int ring_pos;
};

static struct thr thrs[MAXTHR + 1];	/* [MAXTHR]: the main thread */
static __thread struct thr *self;	/* this thread's */

static void oplog(struct thr *t, const char *fmt, ...)
{
	char *line = t->ring[t->ring_pos++ % RING];
	va_list ap;
	int n;

	n = snprintf(line, 200, "r%d t%d #%" PRIu64 " ", round_no, t->id,
		     t->nops);
	va_start(ap, fmt);
	vsnprintf(line + n, 200 - n, fmt, ap);
	va_end(ap);
	if (t->logfd >= 0) {
		char buf[208];
		int len = snprintf(buf, sizeof(buf), "%s\n", line);
		ssize_t w = write(t->logfd, buf, len);

		(void)w;
		if (t->nops % 256 == 0)
			fsync(t->logfd);
	}
}

static void log_open(struct thr *t)
{
	char path[512];

	t->logfd = -1;
	if (!logdir)
		return;
	snprintf(path, sizeof(path), "%s/fuzz-t%d.log", logdir, t->id);
	t->logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* Where the kernel may write a response: mostly the scratch buffer. */
static uint64_t pick_resp(struct thr *t)
{
	switch (below(&t->r, 20)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)guard;
	case 2:
		return KADDR;
	case 3:
		return (uintptr_t)t->scratch + SCRATCH_SZ - below(&t->r, 64);
	default:
		return (uintptr_t)t->scratch + 8 * below(&t->r, 16);
	}
}

/* ---------- helpers of the verbs operations ---------- */

static int err_of(int ret)
{
	return ret ? (errno ? errno : EIO) : 0;
}

static void mark_dead(struct dev *d, int err)
{
	if (err == EIO || err == ENODEV)
		__atomic_store_n(&d->dead, 1, __ATOMIC_RELAXED);
}

static void fill_ah_attr(struct thr *t, struct dev *d, struct ibv_ah_attr *a)
{
	struct rng *r = &t->r;

	memset(a, 0, sizeof(*a));
	a->is_global = chance(r, 90);
	a->grh.dgid = d->gid;	/* never anything else: no packet leaves */
	a->grh.sgid_index = chance(r, 85) ? (uint32_t)gid_index : below(r, 260);
	a->grh.hop_limit = below(r, 256);
	a->grh.traffic_class = below(r, 256);
	a->grh.flow_label = (uint32_t)rnd(r);
	a->dlid = (uint16_t)rnd(r);
	a->sl = below(r, 20);
	a->static_rate = below(r, 20);
	a->port_num = chance(r, 85) ? 1 : below(r, 256);
	a->src_path_bits = below(r, 256);
}

static const int qp_types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
				IBV_QPT_RC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
				IBV_QPT_XRC_SEND, 0, 77 };

static int op_create_qp(struct thr *t, struct dev *d)
{
	struct rng *r = &t->r;
	struct ibv_qp_init_attr ia;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct dev *d2 = d;
	int ipd, is, ir, err;
	struct ibv_qp *qp;

	if (full(d, K_QP))
		return -1;
	pd = get(d, r, K_PD, &ipd);
	if (!pd)
		return -1;
	if (ndev > 1 && chance(r, 3))
		d2 = &devs[below(r, ndev)];	/* CQ of another device */
	scq = get(d2, r, K_CQ, &is);
	if (!scq) {
		put(d, K_PD, ipd);
		return -1;
	}
	rcq = get(d2, r, K_CQ, &ir);
	if (!rcq) {
		put(d2, K_CQ, is);
		put(d, K_PD, ipd);
		return -1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.qp_type = qp_types[below(r, sizeof(qp_types) / sizeof(qp_types[0]))];
	ia.cap.max_send_wr = chance(r, 85) ? below(r, 64) + 1 : (uint32_t)interesting(r);
	ia.cap.max_recv_wr = chance(r, 85) ? below(r, 64) + 1 : (uint32_t)interesting(r);
	ia.cap.max_send_sge = chance(r, 85) ? below(r, 8) + 1 : (uint32_t)interesting(r);
	ia.cap.max_recv_sge = chance(r, 85) ? below(r, 8) + 1 : (uint32_t)interesting(r);
	ia.cap.max_inline_data = chance(r, 70) ? below(r, 300) : (uint32_t)interesting(r);
	ia.sq_sig_all = below(r, 2);
	oplog(t, "create_qp %s pd=%u scq=%u rcq=%u type=%d cap=%u/%u/%u/%u/%u",
	      d->name, pd->handle, scq->handle, rcq->handle, ia.qp_type,
	      ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge,
	      ia.cap.max_recv_sge, ia.cap.max_inline_data);
	errno = 0;
	qp = ibv_create_qp(pd, &ia);
	err = qp ? 0 : (errno ? errno : EINVAL);
	count(OP_create_qp, err);
	mark_dead(d, err);
	put(d2, K_CQ, ir);
	put(d2, K_CQ, is);
	put(d, K_PD, ipd);
	if (qp && !add(d, K_QP, qp))
		ibv_destroy_qp(qp);
	return 0;
}

static int op_modify_qp(struct thr *t, struct dev *d, bool conn)
{
	struct rng *r = &t->r;
	struct ibv_qp_attr a;
	struct ibv_qp *qp, *peer;
	int idx, pidx, mask = 0, ret;
	static const int states[] = { IBV_QPS_RESET, IBV_QPS_INIT,
				      IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
				      IBV_QPS_SQE, IBV_QPS_ERR, 9 };

	qp = get(d, r, K_QP, &idx);
	if (!qp)
		return -1;
	memset(&a, 0, sizeof(a));
	fill_ah_attr(t, d, &a.ah_attr);
	fill_ah_attr(t, d, &a.alt_ah_attr);
	if (conn) {
		/* the usual path: INIT, RTR to a QP of this device, RTS */
		a.qp_state = IBV_QPS_INIT + below(r, 3);
		if (chance(r, 80) && qp->state < IBV_QPS_RTS)
			a.qp_state = qp->state + 1;	/* the next step */
		a.port_num = 1;
		a.qkey = 0x11111111;
		a.qp_access_flags = below(r, 16);
		a.path_mtu = IBV_MTU_1024;
		a.rq_psn = below(r, 1 << 24);
		a.sq_psn = below(r, 1 << 24);
		a.max_dest_rd_atomic = below(r, 4);
		a.max_rd_atomic = below(r, 4);
		a.min_rnr_timer = 12;
		a.timeout = 10 + below(r, 4);
		a.retry_cnt = below(r, 8);
		a.rnr_retry = below(r, 8);
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 64;
		peer = get(d, r, K_QP, &pidx);
		a.dest_qp_num = peer ? peer->qp_num : below(r, 1 << 24);
		if (peer)
			put(d, K_QP, pidx);
		if (a.qp_state == IBV_QPS_INIT)
			mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       (qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY :
							    IBV_QP_ACCESS_FLAGS);
		else if (a.qp_state == IBV_QPS_RTR)
			mask = IBV_QP_STATE | (qp->qp_type == IBV_QPT_UD ? 0 :
			       IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | (qp->qp_type == IBV_QPT_RC ?
			       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
		else
			mask = IBV_QP_STATE | IBV_QP_SQ_PSN | (qp->qp_type == IBV_QPT_RC ?
			       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_MAX_QP_RD_ATOMIC : 0);
		if (chance(r, 10))
			mask ^= 1 << below(r, 21);
	} else {
		a.qp_state = states[below(r, 8)];
		a.cur_qp_state = states[below(r, 8)];
		a.path_mtu = below(r, 8);
		a.qkey = (uint32_t)rnd(r);
		a.rq_psn = (uint32_t)rnd(r);
		a.sq_psn = (uint32_t)rnd(r);
		a.dest_qp_num = chance(r, 50) ? (uint32_t)rnd(r) : below(r, 64);
		a.qp_access_flags = (int)rnd(r);
		a.pkey_index = below(r, 4) ? 0 : (uint16_t)rnd(r);
		a.alt_pkey_index = (uint16_t)rnd(r);
		a.en_sqd_async_notify = below(r, 2);
		a.max_rd_atomic = (uint8_t)rnd(r);
		a.max_dest_rd_atomic = (uint8_t)rnd(r);
		a.min_rnr_timer = (uint8_t)rnd(r);
		a.port_num = below(r, 4) ? 1 : (uint8_t)rnd(r);
		a.timeout = (uint8_t)rnd(r);
		a.retry_cnt = (uint8_t)rnd(r);
		a.rnr_retry = (uint8_t)rnd(r);
		a.alt_port_num = (uint8_t)rnd(r);
		a.alt_timeout = (uint8_t)rnd(r);
		a.cap.max_send_wr = (uint32_t)interesting(r);
		a.cap.max_recv_wr = (uint32_t)interesting(r);
		a.rate_limit = (uint32_t)interesting(r);
		mask = chance(r, 50) ? (int)(rnd(r) & 0x3fffff) :
				       (int)(rnd(r) & 0x1fffff);
		if (chance(r, 30))
			mask |= IBV_QP_STATE;
	}
	oplog(t, "modify_qp %s qp=%u state=%d mask=%#x dqpn=%u", d->name,
	      qp->handle, a.qp_state, mask, a.dest_qp_num);
	ret = ibv_modify_qp(qp, &a, mask);
	count(conn ? OP_modify_qp_conn : OP_modify_qp_rand, ret);
	mark_dead(d, ret);
	put(d, K_QP, idx);
	return 0;
}

static uint32_t pick_lkey(struct thr *t, struct dev *d, uint64_t *addr,
			  uint32_t *len)
{
	struct rng *r = &t->r;
	struct ibv_mr *mr;
	uint64_t l;
	uint32_t key;
	int idx;

	mr = get(d, r, K_MR, &idx);
	if (!mr || chance(r, 10)) {
		if (mr)
			put(d, K_MR, idx);
		l = pick_len(r) & 0xffff;
		*addr = pick_addr(r, &l);
		*len = (uint32_t)l;
		return chance(r, 50) ? (uint32_t)rnd(r) : below(r, 1024);
	}
	key = chance(r, 85) ? mr->lkey : mr->rkey;
	if (chance(r, 80) && mr->length) {
		uint64_t off = below(r, (uint32_t)mr->length);

		*addr = (uintptr_t)mr->addr + off;
		*len = below(r, (uint32_t)(mr->length - off) + 1);
		if (*len > 65536)
			*len = 65536;
	} else {
		*addr = (uintptr_t)mr->addr + (int)below(r, 8192) - 4096;
		*len = chance(r, 50) ? (uint32_t)interesting(r) : below(r, 8192);
	}
	put(d, K_MR, idx);
	return key;
}

/* An object of kind k (MR or AH) in PD pd, referenced, or NULL. */
static void *get_in_pd(struct dev *d, struct rng *r, enum kind k,
		       struct ibv_pd *pd, int *idx)
{
	int start = below(r, MAXOBJ), i, j;
	void *o = NULL, *p;

	pthread_mutex_lock(&d->lock);
	for (j = 0; j < MAXOBJ && !in_child; j++) {
		i = (start + j) % MAXOBJ;
		p = d->s[k][i].obj;
		if (p && (k == K_MR ? ((struct ibv_mr *)p)->pd :
				      ((struct ibv_ah *)p)->pd) == pd) {
			d->s[k][i].users++;
			o = p;
			*idx = i;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return o;
}

/* A local or remote key with a range inside an MR of the QP's PD. */
static uint32_t pick_key_pd(struct thr *t, struct dev *d, struct ibv_pd *pd,
			    bool remote, uint64_t *addr, uint32_t *len)
{
	struct ibv_mr *mr;
	uint64_t off;
	uint32_t key;
	int idx;

	mr = get_in_pd(d, &t->r, K_MR, pd, &idx);
	if (!mr)
		return pick_lkey(t, d, addr, len);
	off = mr->length ? below(&t->r, (uint32_t)mr->length) : 0;
	*addr = (uintptr_t)mr->addr + off;
	*len = below(&t->r, (uint32_t)(mr->length - off) + 1);
	if (*len > 4096)
		*len = below(&t->r, 4096);
	key = remote ? mr->rkey : mr->lkey;
	put(d, K_MR, idx);
	return key;
}

/* What malformed inline sends copy from (op_post()). */
static uint8_t inline_scratch[8192];

static int op_post(struct thr *t, struct dev *d, bool send)
{
	struct rng *r = &t->r;
	struct ibv_send_wr swr[8], *sbad = NULL;
	struct ibv_recv_wr rwr[8], *rbad = NULL;
	struct ibv_sge sge[8][16];
	struct ibv_ah *ah = NULL, fake_ah;
	struct ibv_qp *qp = NULL;
	int idx, aidx = -1, n, i, j, ret;
	uint32_t rkey = 0;
	uint64_t raddr = 0;
	uint32_t rlen;
	bool wf = chance(r, 50);

	/* well-formed chains go to a QP that can take them, if there is one */
	for (i = 0; wf && i < 4; i++) {
		qp = get(d, r, K_QP, &idx);
		if (!qp || qp->state >= (send ? IBV_QPS_RTS : IBV_QPS_INIT))
			break;
		put(d, K_QP, idx);
		qp = NULL;
	}
	if (!qp)
		qp = get(d, r, K_QP, &idx);
	if (!qp)
		return -1;
	/* libibverbs reads wr.ud.ah->handle of every WR on a UD QP */
	memset(&fake_ah, 0, sizeof(fake_ah));
	fake_ah.context = d->ctx;
	fake_ah.handle = pick_handle(d, r, K_AH);
	if (send && chance(r, 80))
		ah = chance(r, 70) ? get_in_pd(d, r, K_AH, qp->pd, &aidx) :
				     get(d, r, K_AH, &aidx);
	if (!ah)
		ah = &fake_ah;
	n = chance(r, 80) ? 1 + below(r, 3) : 1 + below(r, 8);
	/* a well-formed chain, so that work reaches the data path */
	if (wf) {
		/* RC also SEND_WITH_INV naming any MR: the receiver must refuse */
		static const int ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
					   IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
					   IBV_WR_RDMA_READ, IBV_WR_SEND_WITH_INV };

		for (i = 0; i < n; i++) {
			sge[i][0].lkey = pick_key_pd(t, d, qp->pd, false,
						     &sge[i][0].addr, &sge[i][0].length);
			if (send) {
				memset(&swr[i], 0, sizeof(swr[i]));
				swr[i].wr_id = rnd(r);
				swr[i].next = i + 1 < n ? &swr[i + 1] : NULL;
				swr[i].sg_list = sge[i];
				swr[i].num_sge = 1;
				swr[i].opcode = qp->qp_type == IBV_QPT_UD ? IBV_WR_SEND :
						ops[below(r, qp->qp_type == IBV_QPT_UC ? 4 : 6)];
				swr[i].send_flags = IBV_SEND_SIGNALED * below(r, 2) |
						    IBV_SEND_SOLICITED * chance(r, 20);
				if (sge[i][0].length <= 128 && chance(r, 30) &&
				    swr[i].opcode != IBV_WR_RDMA_READ) {
					/* from its own memory (see below) */
					swr[i].send_flags |= IBV_SEND_INLINE;
					sge[i][0].addr = (uintptr_t)inline_scratch;
				}
				if (qp->qp_type == IBV_QPT_UD) {
					swr[i].wr.ud.ah = ah;
					swr[i].wr.ud.remote_qpn = chance(r, 70) ? qp->qp_num :
								  below(r, 64);
					swr[i].wr.ud.remote_qkey = 0x11111111;
				} else if (swr[i].opcode == IBV_WR_SEND_WITH_INV) {
					swr[i].invalidate_rkey = pick_lkey(t, d, &raddr, &rlen);
				} else {
					swr[i].wr.rdma.rkey = pick_key_pd(t, d, qp->pd, true,
									  &raddr, &rlen);
					swr[i].wr.rdma.remote_addr = raddr;
				}
			} else {
				memset(&rwr[i], 0, sizeof(rwr[i]));
				rwr[i].wr_id = rnd(r);
				rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
				rwr[i].sg_list = sge[i];
				rwr[i].num_sge = 1;
			}
		}
		goto issue;
	}
	for (i = 0; i < n; i++) {
		int ns = chance(r, 80) ? below(r, 4) : below(r, 17);

		for (j = 0; j < ns; j++)
			sge[i][j].lkey = pick_lkey(t, d, &sge[i][j].addr,
						   &sge[i][j].length);
		if (send) {
			memset(&swr[i], 0, sizeof(swr[i]));
			swr[i].wr_id = rnd(r);
			swr[i].next = i + 1 < n ? &swr[i + 1] : NULL;
			swr[i].sg_list = sge[i];
			swr[i].num_sge = ns;
			swr[i].opcode = chance(r, 90) ? below(r, 9) : (uint32_t)interesting(r);
			swr[i].send_flags = chance(r, 80) ? (int)below(r, 16) : (int)rnd(r);
			/*
			 * Inline bytes are copied from the SGEs' addresses by
			 * the provider, in this process (as librxe does): a
			 * wild pointer would only crash the fuzzer.  They point
			 * into its own memory; their lkeys stay as drawn.
			 */
			if (swr[i].send_flags & IBV_SEND_INLINE)
				for (j = 0; j < ns; j++) {
					sge[i][j].length %= 512;
					sge[i][j].addr = (uintptr_t)inline_scratch +
						below(r, sizeof(inline_scratch) -
							 sge[i][j].length);
				}
			swr[i].imm_data = (uint32_t)rnd(r);
			if (chance(r, 70))
				rkey = pick_lkey(t, d, &raddr, &rlen);
			else
				raddr = rnd(r), rkey = (uint32_t)rnd(r);
			if (below(r, 2)) {
				swr[i].wr.rdma.remote_addr = raddr;
				swr[i].wr.rdma.rkey = rkey;
			} else {
				swr[i].wr.atomic.remote_addr = raddr & ~7ULL;
				swr[i].wr.atomic.rkey = rkey;
				swr[i].wr.atomic.compare_add = rnd(r);
				swr[i].wr.atomic.swap = rnd(r);
			}
			if (qp->qp_type == IBV_QPT_UD || chance(r, 30)) {
				swr[i].wr.ud.ah = ah;
				swr[i].wr.ud.remote_qpn = chance(r, 50) ? qp->qp_num :
							  below(r, 64);
				swr[i].wr.ud.remote_qkey = chance(r, 70) ? 0x11111111 :
							   (uint32_t)rnd(r);
			}
		} else {
			memset(&rwr[i], 0, sizeof(rwr[i]));
			rwr[i].wr_id = rnd(r);
			rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
			rwr[i].sg_list = sge[i];
			rwr[i].num_sge = ns;
		}
	}
issue:
	if (send) {
		oplog(t, "post_send%s %s qp=%u n=%d op0=%d flags0=%#x nsge0=%d lkey0=%#x len0=%u",
		      wf ? "_wf" : "", d->name, qp->handle, n, swr[0].opcode, swr[0].send_flags,
		      swr[0].num_sge, swr[0].num_sge ? sge[0][0].lkey : 0,
		      swr[0].num_sge ? sge[0][0].length : 0);
		ret = ibv_post_send(qp, swr, &sbad);
		count(wf ? OP_post_send_wf : OP_post_send, ret);
	} else {
		oplog(t, "post_recv%s %s qp=%u n=%d nsge0=%d", wf ? "_wf" : "", d->name,
		      qp->handle, n, rwr[0].num_sge);
		ret = ibv_post_recv(qp, rwr, &rbad);
		count(wf ? OP_post_recv_wf : OP_post_recv, ret);
	}
	mark_dead(d, ret);
	if (aidx >= 0)
		put(d, K_AH, aidx);
	put(d, K_QP, idx);
	return 0;
}

static void drain_events(struct thr *t, struct dev *d)
{
	struct ibv_async_event ev;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	void *cctx;
	int idx, n;

	for (n = 0; n < 8; n++) {
		if (ibv_get_async_event(d->ctx, &ev)) {
			count(OP_async_event, errno);
			break;
		}
		oplog(t, "async_event %s type=%d", d->name, ev.event_type);
		count(OP_async_event, 0);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			d->dead = 1;
		ibv_ack_async_event(&ev);
	}
	ch = get(d, &t->r, K_CH, &idx);
	if (!ch)
		return;
	for (n = 0; n < 8; n++) {
		if (ibv_get_cq_event(ch, &cq, &cctx)) {
			count(OP_cq_event, errno);
			break;
		}
		count(OP_cq_event, 0);
		ibv_ack_cq_events(cq, 1);
	}
	put(d, K_CH, idx);
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---------- raw uverbs commands ---------- */

/* Overwrite a GID in a raw command with the device's own. */
static void own_gid(struct dev *d, uint8_t *dgid)
{
	memcpy(dgid, d->gid.raw, 16);
}

static void mutate(struct rng *r, uint8_t *p, size_t len, int nflips)
{
	int i;

	for (i = 0; i < nflips && len; i++) {
		size_t off = below(r, len);

		switch (below(r, 4)) {
		case 0:
			p[off] ^= 1 << below(r, 8);
			break;
		case 1:
			p[off] = (uint8_t)rnd(r);
			break;
		default:
			off &= ~3UL;
			if (off + 4 <= len) {
				uint32_t v = (uint32_t)interesting(r);

				memcpy(p + off, &v, 4);
			}
		}
	}
}

/*
 * SHARED FD.  Raw commands go to the command fd libibverbs uses (shared) or
 * to a second open of the device (its own context).  On the shared fd they
 * never destroy a CQ or QP: libibverbs' ibv_destroy_cq/qp wait until the
 * events they acknowledged equal the count the kernel returns, and a raw
 * destroy followed by the reuse of the handle would make them wait forever.
 */
/* Legacy commands whose first field is the response address. */
#define B(x) (1ULL << IB_USER_VERBS_CMD_##x)
#define RESP_CMDS (B(GET_CONTEXT) | B(QUERY_DEVICE) | B(QUERY_PORT) | \
		   B(ALLOC_PD) | B(CREATE_AH) | B(QUERY_AH) | B(REG_MR) | \
		   B(REG_SMR) | B(REREG_MR) | B(QUERY_MR) | B(ALLOC_MW) | \
		   B(BIND_MW) | B(CREATE_COMP_CHANNEL) | B(CREATE_CQ) | \
		   B(RESIZE_CQ) | B(DESTROY_CQ) | B(POLL_CQ) | B(PEEK_CQ) | \
		   B(CREATE_QP) | B(QUERY_QP) | B(DESTROY_QP) | B(POST_SEND) | \
		   B(POST_RECV) | B(CREATE_SRQ) | B(QUERY_SRQ) | \
		   B(DESTROY_SRQ) | B(POST_SRQ_RECV) | B(OPEN_XRCD) | \
		   B(CREATE_XSRQ) | B(OPEN_QP))

struct wcmd {
	struct ib_uverbs_cmd_hdr hdr;
	uint8_t body[1024];
};

/*
 * One legacy write() command from a template, mutated.  The first u64 of
 * every command with a response is the response address.
 */
static int op_raw_write(struct thr *t, struct dev *d, int fd, bool shared)
{
	struct rng *r = &t->r;
	struct wcmd c;
	uint8_t *b = c.body;
	size_t len = 0, outlen = 0, total;
	uint32_t cmd;
	bool has_resp = true;
	int i, ret, flips;

	memset(&c, 0, sizeof(c));
	cmd = below(r, 40);
	switch (cmd) {
	case IB_USER_VERBS_CMD_GET_CONTEXT:
		len = sizeof(struct ib_uverbs_get_context);
		outlen = sizeof(struct ib_uverbs_get_context_resp) + 16;
		break;
	case IB_USER_VERBS_CMD_QUERY_DEVICE:
		len = sizeof(struct ib_uverbs_query_device);
		outlen = sizeof(struct ib_uverbs_query_device_resp);
		break;
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port *q = (void *)b;

		q->port_num = below(r, 3);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_query_port_resp);
		break;
	}
	case IB_USER_VERBS_CMD_ALLOC_PD:
		len = sizeof(struct ib_uverbs_alloc_pd);
		outlen = sizeof(struct ib_uverbs_alloc_pd_resp);
		break;
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		((struct ib_uverbs_dealloc_pd *)b)->pd_handle = pick_handle(d, r, K_PD);
		len = sizeof(struct ib_uverbs_dealloc_pd);
		has_resp = false;
		break;
	case IB_USER_VERBS_CMD_CREATE_AH:
	case IB_USER_VERBS_CMD_MODIFY_AH:
	case IB_USER_VERBS_CMD_QUERY_AH: {
		struct ib_uverbs_create_ah *a = (void *)b;

		cmd = IB_USER_VERBS_CMD_CREATE_AH;
		a->user_handle = rnd(r);
		a->pd_handle = pick_handle(d, r, K_PD);
		a->attr.is_global = 1;
		a->attr.port_num = 1;
		a->attr.grh.sgid_index = gid_index;
		a->attr.grh.hop_limit = 64;
		len = sizeof(*a);
		outlen = sizeof(struct ib_uverbs_create_ah_resp);
		break;
	}
	case IB_USER_VERBS_CMD_DESTROY_AH:
		((struct ib_uverbs_destroy_ah *)b)->ah_handle = pick_handle(d, r, K_AH);
		len = sizeof(struct ib_uverbs_destroy_ah);
		has_resp = false;
		break;
	case IB_USER_VERBS_CMD_REG_MR:
	case IB_USER_VERBS_CMD_REG_SMR: {
		struct ib_uverbs_reg_mr *m = (void *)b;
		uint64_t l = pick_len(r);

		cmd = IB_USER_VERBS_CMD_REG_MR;
		m->start = pick_addr(r, &l);
		m->length = l;
		m->hca_va = chance(r, 70) ? m->start : rnd(r);
		m->pd_handle = pick_handle(d, r, K_PD);
		m->access_flags = chance(r, 70) ? below(r, 16) : (uint32_t)rnd(r);
		len = sizeof(*m);
		outlen = sizeof(struct ib_uverbs_reg_mr_resp);
		break;
	}
	case IB_USER_VERBS_CMD_REREG_MR: {
		struct ib_uverbs_rereg_mr *m = (void *)b;
		uint64_t l = pick_len(r);

		m->mr_handle = pick_handle(d, r, K_MR);
		m->flags = below(r, 8);
		m->start = pick_addr(r, &l);
		m->length = l;
		m->hca_va = m->start;
		m->pd_handle = pick_handle(d, r, K_PD);
		m->access_flags = below(r, 16);
		len = sizeof(*m);
		outlen = sizeof(struct ib_uverbs_rereg_mr_resp);
		break;
	}
	case IB_USER_VERBS_CMD_DEREG_MR:
		((struct ib_uverbs_dereg_mr *)b)->mr_handle = pick_handle(d, r, K_MR);
		len = sizeof(struct ib_uverbs_dereg_mr);
		has_resp = false;
		break;
	case IB_USER_VERBS_CMD_ALLOC_MW:
	case IB_USER_VERBS_CMD_BIND_MW:
	case IB_USER_VERBS_CMD_DEALLOC_MW: {
		struct ib_uverbs_alloc_mw *m = (void *)b;

		cmd = IB_USER_VERBS_CMD_ALLOC_MW;
		m->pd_handle = pick_handle(d, r, K_PD);
		m->mw_type = below(r, 3);
		len = sizeof(*m);
		outlen = sizeof(struct ib_uverbs_alloc_mw_resp);
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		len = sizeof(struct ib_uverbs_create_comp_channel);
		outlen = sizeof(struct ib_uverbs_create_comp_channel_resp);
		break;
	case IB_USER_VERBS_CMD_CREATE_CQ: {
		struct ib_uverbs_create_cq *q = (void *)b;

		q->cqe = chance(r, 80) ? below(r, 256) + 1 : (uint32_t)interesting(r);
		q->comp_vector = below(r, 4) ? 0 : (uint32_t)rnd(r);
		q->comp_channel = -1;
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_create_cq_resp);
		break;
	}
	case IB_USER_VERBS_CMD_RESIZE_CQ: {
		struct ib_uverbs_resize_cq *q = (void *)b;

		q->cq_handle = pick_handle(d, r, K_CQ);
		q->cqe = (uint32_t)interesting(r);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_resize_cq_resp);
		break;
	}
	case IB_USER_VERBS_CMD_DESTROY_CQ: {
		struct ib_uverbs_destroy_cq *q = (void *)b;

		q->cq_handle = pick_handle(d, r, K_CQ);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_destroy_cq_resp);
		break;
	}
	case IB_USER_VERBS_CMD_POLL_CQ:
	case IB_USER_VERBS_CMD_PEEK_CQ: {
		struct ib_uverbs_poll_cq *q = (void *)b;

		cmd = IB_USER_VERBS_CMD_POLL_CQ;
		q->cq_handle = pick_handle(d, r, K_CQ);
		q->ne = chance(r, 80) ? below(r, 64) : (uint32_t)interesting(r);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_poll_cq_resp) +
			 below(r, 64) * sizeof(struct ib_uverbs_wc);
		break;
	}
	case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: {
		struct ib_uverbs_req_notify_cq *q = (void *)b;

		q->cq_handle = pick_handle(d, r, K_CQ);
		q->solicited_only = below(r, 3);
		len = sizeof(*q);
		has_resp = false;
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_QP:
	case IB_USER_VERBS_CMD_OPEN_QP:
	case IB_USER_VERBS_CMD_CREATE_SRQ:
	case IB_USER_VERBS_CMD_CREATE_XSRQ: {
		struct ib_uverbs_create_qp *q = (void *)b;

		if (cmd == IB_USER_VERBS_CMD_CREATE_SRQ || cmd == IB_USER_VERBS_CMD_CREATE_XSRQ)
			cmd = chance(r, 50) ? IB_USER_VERBS_CMD_CREATE_SRQ :
					      IB_USER_VERBS_CMD_CREATE_QP;
		else
			cmd = IB_USER_VERBS_CMD_CREATE_QP;
		q->pd_handle = pick_handle(d, r, K_PD);
		q->send_cq_handle = pick_handle(d, r, K_CQ);
		q->recv_cq_handle = chance(r, 70) ? q->send_cq_handle :
						    pick_handle(d, r, K_CQ);
		q->srq_handle = below(r, 4);
		q->max_send_wr = chance(r, 80) ? below(r, 64) + 1 : (uint32_t)interesting(r);
		q->max_recv_wr = chance(r, 80) ? below(r, 64) + 1 : (uint32_t)interesting(r);
		q->max_send_sge = below(r, 8);
		q->max_recv_sge = below(r, 8);
		q->max_inline_data = below(r, 512);
		q->sq_sig_all = below(r, 2);
		q->qp_type = qp_types[below(r, sizeof(qp_types) / sizeof(qp_types[0]))];
		q->is_srq = chance(r, 10);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_create_qp_resp);
		break;
	}
	case IB_USER_VERBS_CMD_QUERY_QP:
	case IB_USER_VERBS_CMD_QUERY_SRQ: {
		struct ib_uverbs_query_qp *q = (void *)b;

		cmd = IB_USER_VERBS_CMD_QUERY_QP;
		q->qp_handle = pick_handle(d, r, K_QP);
		q->attr_mask = (uint32_t)rnd(r);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_query_qp_resp);
		break;
	}
	case IB_USER_VERBS_CMD_MODIFY_QP:
	case IB_USER_VERBS_CMD_MODIFY_SRQ: {
		struct ib_uverbs_modify_qp *q = (void *)b;

		cmd = IB_USER_VERBS_CMD_MODIFY_QP;
		q->qp_handle = pick_handle(d, r, K_QP);
		q->attr_mask = (uint32_t)rnd(r) & 0x1fffff;
		q->qp_state = below(r, 8);
		q->cur_qp_state = below(r, 8);
		q->path_mtu = below(r, 7);
		q->dest_qp_num = below(r, 64);
		q->port_num = 1;
		q->dest.sgid_index = gid_index;
		q->dest.is_global = 1;
		q->dest.port_num = 1;
		len = sizeof(*q);
		has_resp = false;
		break;
	}
	case IB_USER_VERBS_CMD_DESTROY_QP:
	case IB_USER_VERBS_CMD_DESTROY_SRQ: {
		struct ib_uverbs_destroy_qp *q = (void *)b;

		cmd = IB_USER_VERBS_CMD_DESTROY_QP;
		q->qp_handle = pick_handle(d, r, K_QP);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_destroy_qp_resp);
		break;
	}
	case IB_USER_VERBS_CMD_POST_SEND:
	case IB_USER_VERBS_CMD_POST_RECV:
	case IB_USER_VERBS_CMD_POST_SRQ_RECV: {
		struct ib_uverbs_post_send *p = (void *)b;
		struct ib_uverbs_send_wr *w;
		struct ib_uverbs_sge *s;
		uint32_t nwr = 1 + below(r, 4), nsge = below(r, 6);
		uint32_t wsz = cmd == IB_USER_VERBS_CMD_POST_SEND ?
			       sizeof(struct ib_uverbs_send_wr) :
			       sizeof(struct ib_uverbs_recv_wr);
		uint8_t *q;

		p->qp_handle = pick_handle(d, r, K_QP);
		p->wr_count = nwr;
		p->sge_count = nsge;
		p->wqe_size = chance(r, 85) ? wsz : below(r, 128);
		q = b + sizeof(*p);
		for (i = 0; i < (int)nwr; i++, q += wsz) {
			w = (void *)q;
			w->wr_id = rnd(r);
			w->num_sge = chance(r, 85) ? nsge / nwr : below(r, 8);
			if (cmd == IB_USER_VERBS_CMD_POST_SEND) {
				w->opcode = chance(r, 90) ? below(r, 16) :
							    (uint32_t)interesting(r);
				w->send_flags = below(r, 64);
				w->wr.ud.ah = pick_handle(d, r, K_AH);
				w->wr.ud.remote_qpn = below(r, 64);
				if (chance(r, 50)) {
					w->wr.rdma.remote_addr = rnd(r);
					w->wr.rdma.rkey = (uint32_t)rnd(r);
				}
			}
		}
		for (i = 0; i < (int)nsge; i++, q += sizeof(*s)) {
			uint64_t l = pick_len(r);

			uint64_t sa;

			s = (void *)q;
			s->lkey = pick_lkey(t, d, &sa, &s->length);
			s->addr = sa;
			if (chance(r, 20)) {
				s->addr = pick_addr(r, &l);
				s->length = (uint32_t)l;
			}
		}
		len = q - b;
		outlen = sizeof(struct ib_uverbs_post_send_resp);
		break;
	}
	default:		/* unknown or unsupported numbers, random body */
		len = below(r, 256);
		for (i = 0; i < (int)len; i++)
			b[i] = (uint8_t)rnd(r);
		outlen = below(r, 256);
		break;
	}
	/* driver data (udata) after the core command */
	if (chance(r, 20)) {
		size_t ul = below(r, 64);

		for (i = 0; i < (int)ul && len < sizeof(c.body) - 8; i++)
			b[len++] = chance(r, 50) ? 0 : (uint8_t)rnd(r);
		outlen += below(r, 64);
	}
	len = (len + 3) & ~3UL;
	if (has_resp && len < 8)
		len = 8;
	flips = chance(r, 50) ? 0 : 1 + below(r, 4);
	mutate(r, b + (has_resp ? 8 : 0), len - (has_resp ? 8 : 0), flips);
	/* re-impose what keeps the fuzzer and the host safe */
	switch (cmd) {
	case IB_USER_VERBS_CMD_CREATE_AH:
		own_gid(d, ((struct ib_uverbs_create_ah *)b)->attr.grh.dgid);
		break;
	case IB_USER_VERBS_CMD_MODIFY_QP:
		own_gid(d, ((struct ib_uverbs_modify_qp *)b)->dest.dgid);
		own_gid(d, ((struct ib_uverbs_modify_qp *)b)->alt_dest.dgid);
		break;
	case IB_USER_VERBS_CMD_CREATE_CQ:
		((struct ib_uverbs_create_cq *)b)->user_handle =
			(uintptr_t)&dummy_cq[d - devs];
		((struct ib_uverbs_create_cq *)b)->comp_channel = -1;
		break;
	case IB_USER_VERBS_CMD_CREATE_QP:
	case IB_USER_VERBS_CMD_CREATE_SRQ:
		((struct ib_uverbs_create_qp *)b)->user_handle =
			(uintptr_t)&dummy_qp[d - devs];
		break;
	case IB_USER_VERBS_CMD_REG_MR: {
		struct ib_uverbs_reg_mr *m = (void *)b;
		uint64_t l = m->length;

		/* writable memory must be memory of ours */
		if (m->start != 0 && (m->start < (uintptr_t)arena ||
				      m->start >= (uintptr_t)arena + ARENA_SZ) &&
		    (m->start < (uintptr_t)win || m->start >= (uintptr_t)win + WIN_SZ))
			m->start = pick_addr(r, &l);
		break;
	}
	case IB_USER_VERBS_CMD_REREG_MR: {
		struct ib_uverbs_rereg_mr *m = (void *)b;
		uint64_t l = m->length;

		if ((m->start < (uintptr_t)arena || m->start >= (uintptr_t)arena + ARENA_SZ))
			m->start = pick_addr(r, &l);
		break;
	}
	}
	if (outlen > 4 * 0xffff)
		outlen = 4 * 0xffff;
	c.hdr.command = chance(r, 97) ? cmd : chance(r, 50) ? below(r, 48) :
			(uint32_t)rnd(r) & ~IB_USER_VERBS_CMD_FLAG_EXTENDED;
	/* whatever the command became, its response goes where we say */
	if (c.hdr.command < 64 && (RESP_CMDS >> c.hdr.command & 1)) {
		if (len < 8)
			len = 8;
		memcpy(b, &(uint64_t){ pick_resp(t) }, 8);
	}
	c.hdr.in_words = (sizeof(c.hdr) + len) / 4;
	c.hdr.out_words = (outlen + 3) / 4;
	total = sizeof(c.hdr) + len;
	if (chance(r, 8))
		c.hdr.in_words = (uint16_t)interesting(r);
	if (chance(r, 8))
		c.hdr.out_words = (uint16_t)interesting(r);
	if (chance(r, 5))
		total = below(r, total + 16);
	if (shared && !(c.hdr.command & ~0xffU) &&
	    (c.hdr.command == IB_USER_VERBS_CMD_DESTROY_QP ||
	     c.hdr.command == IB_USER_VERBS_CMD_DESTROY_CQ))
		c.hdr.command = IB_USER_VERBS_CMD_QUERY_DEVICE;	/* see SHARED FD */
	oplog(t, "raw_write %s fd=%d cmd=%u in=%u out=%u len=%zu flips=%d w0=%#x",
	      d->name, fd, c.hdr.command, c.hdr.in_words, c.hdr.out_words,
	      total, flips, *(uint32_t *)(b + 8));
	ret = write(fd, &c, total);
	count(OP_raw_write, ret < 0 ? errno : 0);
	if (ret < 0)
		mark_dead(d, errno);
	return 0;
}

/* Extended write() commands: QUERY_DEVICE, CREATE_CQ, CREATE_QP, MODIFY_QP. */
static int op_raw_write_ex(struct thr *t, struct dev *d, int fd, bool shared)
{
	struct rng *r = &t->r;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_ex_cmd_hdr ex;
		uint8_t body[512];
	} c;
	uint8_t *b = c.body;
	size_t len = 0, outlen = 64, plen = 0, total;
	uint32_t cmd;
	int ret, flips;

	(void)shared;	/* no extended command destroys a CQ or QP */
	memset(&c, 0, sizeof(c));
	switch (below(r, 5)) {
	case 0:
		cmd = IB_USER_VERBS_EX_CMD_QUERY_DEVICE;
		len = sizeof(struct ib_uverbs_ex_query_device);
		outlen = sizeof(struct ib_uverbs_ex_query_device_resp);
		break;
	case 1: {
		struct ib_uverbs_ex_create_cq *q = (void *)b;

		cmd = IB_USER_VERBS_EX_CMD_CREATE_CQ;
		q->cqe = below(r, 512);
		q->comp_channel = -1;
		q->flags = below(r, 4);
		q->comp_mask = below(r, 2);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_ex_create_cq_resp);
		break;
	}
	case 2: {
		struct ib_uverbs_ex_create_qp *q = (void *)b;

		cmd = IB_USER_VERBS_EX_CMD_CREATE_QP;
		q->pd_handle = pick_handle(d, r, K_PD);
		q->send_cq_handle = pick_handle(d, r, K_CQ);
		q->recv_cq_handle = pick_handle(d, r, K_CQ);
		q->max_send_wr = below(r, 64);
		q->max_recv_wr = below(r, 64);
		q->max_send_sge = below(r, 8);
		q->max_recv_sge = below(r, 8);
		q->max_inline_data = below(r, 512);
		q->qp_type = qp_types[below(r, sizeof(qp_types) / sizeof(qp_types[0]))];
		q->comp_mask = below(r, 8);
		q->create_flags = chance(r, 70) ? 0 : (uint32_t)rnd(r);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_ex_create_qp_resp);
		break;
	}
	case 3: {
		struct ib_uverbs_ex_modify_qp *q = (void *)b;

		cmd = IB_USER_VERBS_EX_CMD_MODIFY_QP;
		q->base.qp_handle = pick_handle(d, r, K_QP);
		q->base.attr_mask = (uint32_t)rnd(r) & 0x3fffff;
		q->base.qp_state = below(r, 8);
		q->base.port_num = 1;
		q->base.dest.is_global = 1;
		q->base.dest.sgid_index = gid_index;
		q->rate_limit = (uint32_t)interesting(r);
		len = sizeof(*q);
		outlen = sizeof(struct ib_uverbs_ex_modify_qp_resp);
		break;
	}
	default:
		cmd = IB_USER_VERBS_CMD_THRESHOLD + below(r, 12);
		len = 8 * below(r, 8);
		mutate(r, b, len, 8);
		break;
	}
	if (chance(r, 20))
		plen = 8 * below(r, 4);
	flips = chance(r, 50) ? 0 : 1 + below(r, 4);
	mutate(r, b, len + plen, flips);
	if (cmd == IB_USER_VERBS_EX_CMD_MODIFY_QP) {
		own_gid(d, ((struct ib_uverbs_ex_modify_qp *)b)->base.dest.dgid);
		own_gid(d, ((struct ib_uverbs_ex_modify_qp *)b)->base.alt_dest.dgid);
	} else if (cmd == IB_USER_VERBS_EX_CMD_CREATE_CQ) {
		((struct ib_uverbs_ex_create_cq *)b)->user_handle = (uintptr_t)&dummy_cq[d - devs];
		((struct ib_uverbs_ex_create_cq *)b)->comp_channel = -1;
	} else if (cmd == IB_USER_VERBS_EX_CMD_CREATE_QP) {
		((struct ib_uverbs_ex_create_qp *)b)->user_handle = (uintptr_t)&dummy_qp[d - devs];
	}
	len = (len + 7) & ~7UL;
	c.hdr.command = cmd | IB_USER_VERBS_CMD_FLAG_EXTENDED;
	c.hdr.in_words = len / 8;
	c.hdr.out_words = (outlen + 7) / 8;
	c.ex.response = pick_resp(t);
	c.ex.provider_in_words = plen / 8;
	c.ex.provider_out_words = below(r, 4);
	if (chance(r, 5))
		c.ex.cmd_hdr_reserved = (uint32_t)rnd(r);
	if (chance(r, 8))
		c.hdr.in_words = (uint16_t)interesting(r);
	if (chance(r, 8))
		c.hdr.out_words = (uint16_t)interesting(r);
	total = sizeof(c.hdr) + sizeof(c.ex) + len + plen;
	if (chance(r, 5))
		total = below(r, total + 16);
	oplog(t, "raw_write_ex %s cmd=%u in=%u out=%u pin=%u len=%zu flips=%d",
	      d->name, cmd, c.hdr.in_words, c.hdr.out_words,
	      c.ex.provider_in_words, total, flips);
	ret = write(fd, &c, total);
	count(OP_raw_write_ex, ret < 0 ? errno : 0);
	if (ret < 0)
		mark_dead(d, errno);
	return 0;
}

struct icmd {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[16];
};

static void attr_set(struct ib_uverbs_attr *a, uint16_t id, uint16_t len,
		     uint64_t data, uint16_t flags)
{
	memset(a, 0, sizeof(*a));
	a->attr_id = id;
	a->len = len;
	a->data = data;
	a->flags = flags;
}

/*
 * The kernel writes through a PTR_OUT attribute's data whatever its length:
 * a random value must not be an address of this process.
 */
static uint64_t safe_data(uint64_t v)
{
	return v >= (1ULL << 32) && v < (1ULL << 47) ? (uint32_t)v : v;
}

/* RDMA_VERBS_IOCTL: method templates, then mutated; or random ids. */
static int op_raw_ioctl(struct thr *t, struct dev *d, int fd, bool shared)
{
	struct rng *r = &t->r;
	struct icmd c;
	struct ib_uverbs_attr *a = c.attrs;
	uint8_t *sc = t->scratch + 65536;	/* pointed-to inputs and outputs */
	int n = 0, i, ret, flips = 0;
	const uint16_t M = UVERBS_ATTR_F_MANDATORY;

	memset(&c, 0, sizeof(c));
	switch (below(r, 10)) {
	case 0:
		c.hdr.object_id = UVERBS_OBJECT_DEVICE;
		c.hdr.method_id = UVERBS_METHOD_INFO_HANDLES;
		attr_set(&a[n++], UVERBS_ATTR_INFO_OBJECT_ID, 2, below(r, 18), M);
		attr_set(&a[n++], UVERBS_ATTR_INFO_TOTAL_HANDLES, 4, (uintptr_t)sc, 0);
		attr_set(&a[n++], UVERBS_ATTR_INFO_HANDLES_LIST, 4 * below(r, 64),
			 (uintptr_t)sc + 64, 0);
		break;
	case 1:
		c.hdr.object_id = UVERBS_OBJECT_DEVICE;
		c.hdr.method_id = UVERBS_METHOD_QUERY_PORT;
		attr_set(&a[n++], UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1, below(r, 3), M);
		attr_set(&a[n++], UVERBS_ATTR_QUERY_PORT_RESP,
			 sizeof(struct ib_uverbs_query_port_resp_ex), (uintptr_t)sc, M);
		break;
	case 2:
		c.hdr.object_id = UVERBS_OBJECT_DEVICE;
		c.hdr.method_id = below(r, 2) ? UVERBS_METHOD_QUERY_GID_TABLE :
						UVERBS_METHOD_QUERY_GID_ENTRY;
		attr_set(&a[n++], 0, 8, below(r, 2) ? 0 : (uintptr_t)sc, M);
		attr_set(&a[n++], 1, 8, below(r, 8), M);
		attr_set(&a[n++], 2, 4, below(r, 4), M);
		attr_set(&a[n++], 3, 8, (uintptr_t)sc + 256, 0);
		break;
	case 3:
		c.hdr.object_id = UVERBS_OBJECT_CQ;
		c.hdr.method_id = UVERBS_METHOD_CQ_CREATE;
		attr_set(&a[n++], UVERBS_ATTR_CREATE_CQ_HANDLE, 4, 0, M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_CQ_CQE, 4, below(r, 300), M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 8, 0, M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 4, below(r, 3), M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_CQ_RESP_CQE, 4, (uintptr_t)sc, M);
		if (chance(r, 30))
			attr_set(&a[n++], UVERBS_ATTR_CREATE_CQ_FLAGS, 4, below(r, 4), 0);
		break;
	case 4:
		c.hdr.object_id = UVERBS_OBJECT_QP;
		c.hdr.method_id = UVERBS_METHOD_QP_CREATE;
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_HANDLE, 4, 0, M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_PD_HANDLE, 4, pick_handle(d, r, K_PD), M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, 4, pick_handle(d, r, K_CQ), 0);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, 4, pick_handle(d, r, K_CQ), 0);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_USER_HANDLE, 8, 0, M);
		{
			struct ib_uverbs_qp_cap *cap = (void *)(sc + 512);

			cap->max_send_wr = below(r, 64);
			cap->max_recv_wr = below(r, 64);
			cap->max_send_sge = below(r, 8);
			cap->max_recv_sge = below(r, 8);
			cap->max_inline_data = below(r, 300);
			attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_CAP, sizeof(*cap),
				 (uintptr_t)cap, M);
		}
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_TYPE, 4,
			 qp_types[below(r, sizeof(qp_types) / sizeof(qp_types[0]))], M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_RESP_CAP,
			 sizeof(struct ib_uverbs_qp_cap), (uintptr_t)sc + 1024, M);
		attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, 4,
			 (uintptr_t)sc + 1100, M);
		if (chance(r, 20))
			attr_set(&a[n++], UVERBS_ATTR_CREATE_QP_FLAGS, 4, (uint32_t)rnd(r), 0);
		break;
	case 5: {
		static const uint16_t objs[] = { UVERBS_OBJECT_PD, UVERBS_OBJECT_CQ,
						 UVERBS_OBJECT_QP, UVERBS_OBJECT_MR,
						 UVERBS_OBJECT_AH };
		static const enum kind kinds[] = { K_PD, K_CQ, K_QP, K_MR, K_AH };
		int k = below(r, 5);

		c.hdr.object_id = objs[k];
		c.hdr.method_id = objs[k] == UVERBS_OBJECT_CQ ? UVERBS_METHOD_CQ_DESTROY :
				  objs[k] == UVERBS_OBJECT_QP ? UVERBS_METHOD_QP_DESTROY :
				  objs[k] == UVERBS_OBJECT_MR ? UVERBS_METHOD_MR_DESTROY : 0;
		attr_set(&a[n++], 0, 4, pick_handle(d, r, kinds[k]), M);
		attr_set(&a[n++], 1, 8 * below(r, 3), (uintptr_t)sc, 0);
		break;
	}
	case 6:
		c.hdr.object_id = UVERBS_OBJECT_MR;
		c.hdr.method_id = UVERBS_METHOD_QUERY_MR;
		attr_set(&a[n++], UVERBS_ATTR_QUERY_MR_HANDLE, 4, pick_handle(d, r, K_MR), M);
		for (i = 1; i <= 4; i++)
			attr_set(&a[n++], i, i == 3 ? 8 : 4, (uintptr_t)sc + 16 * i, 0);
		break;
	case 7:
		c.hdr.object_id = UVERBS_OBJECT_DEVICE;
		c.hdr.method_id = UVERBS_METHOD_QUERY_CONTEXT;
		attr_set(&a[n++], 0, 4, (uintptr_t)sc, 0);
		attr_set(&a[n++], 1, 8, (uintptr_t)sc + 8, 0);
		break;
	default:		/* random object, method and attributes */
		c.hdr.object_id = chance(r, 90) ? below(r, 18) :
			(uint16_t)(below(r, 2) << UVERBS_ID_NS_SHIFT | below(r, 20));
		c.hdr.method_id = below(r, 8);
		if (c.hdr.object_id == UVERBS_OBJECT_DEVICE &&
		    c.hdr.method_id == UVERBS_METHOD_INVOKE_WRITE)
			c.hdr.method_id = UVERBS_METHOD_INFO_HANDLES;
		n = below(r, 8);
		for (i = 0; i < n; i++) {
			uint16_t len = chance(r, 50) ? 1U << below(r, 4) : below(r, 4096);
			uint64_t data;

			switch (below(r, 4)) {
			case 0:
				data = (uintptr_t)sc + 8 * below(r, 512);
				break;
			case 1:
				data = pick_handle(d, r, below(r, NKIND));
				break;
			case 2:
				data = pick_resp(t);
				break;
			default:
				data = safe_data(interesting(r));
				if (len > 8)	/* a pointer: must be ours */
					data = (uintptr_t)sc;
			}
			attr_set(&a[i], chance(r, 80) ? below(r, 16) :
				 (uint16_t)(UVERBS_ATTR_UHW_IN + below(r, 2)),
				 len, data, below(r, 4));
		}
		break;
	}
	if (chance(r, 15))	/* driver data */
		attr_set(&a[n++], UVERBS_ATTR_UHW_IN + below(r, 2), below(r, 64),
			 (uintptr_t)sc + 2048, 0);
	c.hdr.num_attrs = n;
	c.hdr.length = sizeof(c.hdr) + n * sizeof(c.attrs[0]);
	c.hdr.driver_id = chance(r, 95) ? RDMA_DRIVER_UNKNOWN : below(r, 32);
	if (chance(r, 40)) {
		/* mutate ids, lengths and flags; pointers stay ours */
		flips = 1 + below(r, 3);
		for (i = 0; i < flips && n; i++) {
			struct ib_uverbs_attr *x = &a[below(r, n)];

			switch (below(r, 5)) {
			case 0:
				x->attr_id = below(r, 16);
				break;
			case 1:
				x->len = chance(r, 50) ? 0 : (uint16_t)interesting(r);
				if (x->len > 8 && x->data < 1024)
					x->len = 4;
				break;
			case 2:
				x->flags = (uint16_t)rnd(r);
				break;
			case 3:
				x->attr_data.reserved = (uint16_t)rnd(r);
				break;
			default:
				if (x->len <= 8)
					x->data = safe_data(interesting(r));
			}
		}
		if (chance(r, 10))
			c.hdr.length = (uint16_t)interesting(r);
		if (chance(r, 10))
			c.hdr.num_attrs = below(r, 20);
		if (chance(r, 5))
			c.hdr.reserved1 = rnd(r);
	}
	/* raw objects report events as the stand-ins */
	for (i = 0; i < n; i++) {
		if (c.hdr.object_id == UVERBS_OBJECT_CQ &&
		    a[i].attr_id == UVERBS_ATTR_CREATE_CQ_USER_HANDLE)
			a[i].data = (uintptr_t)&dummy_cq[d - devs];
		if (c.hdr.object_id == UVERBS_OBJECT_QP &&
		    a[i].attr_id == UVERBS_ATTR_CREATE_QP_USER_HANDLE)
			a[i].data = (uintptr_t)&dummy_qp[d - devs];
		if (c.hdr.object_id == UVERBS_OBJECT_CQ &&
		    (a[i].attr_id == UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL ||
		     a[i].attr_id == UVERBS_ATTR_CREATE_CQ_EVENT_FD))
			a[i].data = (uint64_t)-1;
	}
	if (shared && (c.hdr.object_id == UVERBS_OBJECT_CQ ||
		       c.hdr.object_id == UVERBS_OBJECT_QP) && c.hdr.method_id == 1)
		c.hdr.method_id = 0;	/* see SHARED FD */
	oplog(t, "raw_ioctl %s obj=%u meth=%u nattr=%u len=%u flips=%d",
	      d->name, c.hdr.object_id, c.hdr.method_id, c.hdr.num_attrs,
	      c.hdr.length, flips);
	ret = ioctl(fd, RDMA_VERBS_IOCTL, &c);
	count(OP_raw_ioctl, ret < 0 ? errno : 0);
	if (ret < 0)
		mark_dead(d, errno);
	return 0;
}

/* ---------- fork with objects alive ---------- */

static int cmd_fd(struct dev *d)
{
	return d->ctx->cmd_fd;
}

static int op_fork(struct thr *t, struct dev *d)
{
	struct rng *r = &t->r;
	struct rng cr = { rnd(r) };
	double end;
	pid_t pid;
	int st = 0, fd = cmd_fd(d);

	oplog(t, "fork %s", d->name);
	pid = fork();
	if (pid < 0) {
		count(OP_fork, errno);
		return 0;
	}
	if (pid == 0) {
		/* Only the calling thread lives on: no table locks, no
		 * event channel reads (a read event must be acknowledged).
		 */
		int i;

		alarm(5);
		in_child = true;
		t->r = cr;
		t->logfd = -1;
		memset(arena + below(&cr, ARENA_SZ - PAGE), 0xc7, PAGE);
		for (i = 0; i < 20; i++) {
			switch (below(&cr, 3)) {
			case 0:
				op_raw_write(t, d, fd, true);
				break;
			case 1:
				op_raw_write_ex(t, d, fd, true);
				break;
			default:
				op_raw_ioctl(t, d, fd, true);
			}
		}
		_exit(0);
	}
	end = now() + 10;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(2000);
	}
	count(OP_fork, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

/* ---------- pages that come and go under registered memory ---------- */

static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;

static int op_vm_remap(struct thr *t)
{
	struct rng *r = &t->r;
	size_t npg = WIN_SZ / PAGE, pg = below(r, npg), cnt = 1 + below(r, 64);
	uint8_t *p, *q;
	void *ret;
	int how = below(r, 4);

	if (pg + cnt > npg)
		cnt = npg - pg;
	p = win + pg * PAGE;
	oplog(t, "vm_remap how=%d pg=%zu cnt=%zu", how, pg, cnt);
	pthread_mutex_lock(&win_lock);
	switch (how) {
	case 0:		/* map fresh pages */
		ret = mmap(p, cnt * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0);
		count(OP_vm_remap, ret == MAP_FAILED ? errno : 0);
		break;
	case 1:		/* unmap (keep the address range reserved) */
		ret = mmap(p, cnt * PAGE, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		count(OP_vm_remap, ret == MAP_FAILED ? errno : 0);
		break;
	case 2:		/* pages moved in from elsewhere */
		/*
		 * From a mapping of their own, outside the window: mremap
		 * unmaps its target before it checks the source, so a move
		 * between parts of the window that fails leaves a hole there,
		 * where another thread's mmap (a ring of the provider) may
		 * land and the next remap clobber it.
		 */
		q = mmap(NULL, cnt * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (q == MAP_FAILED) {
			count(OP_vm_remap, errno);
			break;
		}
		memset(q, 0xa5, cnt * PAGE);
		ret = mremap(q, cnt * PAGE, cnt * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, p);
		count(OP_vm_remap, ret == MAP_FAILED ? errno : 0);
		if (ret == MAP_FAILED) {
			munmap(q, cnt * PAGE);
			mmap(p, cnt * PAGE, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		}
		break;
	default:
		ret = (void *)(intptr_t)madvise(p, cnt * PAGE, MADV_DONTNEED);
		count(OP_vm_remap, ret ? errno : 0);
	}
	pthread_mutex_unlock(&win_lock);
	return 0;
}

/* ---------- one random operation ---------- */

static const struct {
	enum op op;
	int weight;
} weights[] = {
	{ OP_alloc_pd, 4 }, { OP_dealloc_pd, 2 }, { OP_reg_mr, 8 },
	{ OP_dereg_mr, 5 }, { OP_create_cq, 5 }, { OP_destroy_cq, 3 },
	{ OP_resize_cq, 1 }, { OP_create_qp, 8 }, { OP_destroy_qp, 4 },
	{ OP_modify_qp_rand, 6 }, { OP_modify_qp_conn, 8 }, { OP_query_qp, 2 },
	{ OP_create_ah, 3 }, { OP_destroy_ah, 2 }, { OP_post_send, 16 },
	{ OP_post_recv, 8 }, { OP_poll_cq, 10 }, { OP_req_notify, 3 },
	{ OP_cq_event, 2 }, { OP_create_chan, 1 }, { OP_destroy_chan, 1 },
	{ OP_query, 2 }, { OP_raw_write, 14 }, { OP_raw_write_ex, 4 },
	{ OP_raw_ioctl, 10 }, { OP_raw_fd, 3 }, { OP_fork, 1 },
	{ OP_vm_remap, 4 },
};

static enum op pick_op(struct rng *r)
{
	static int total;
	unsigned int i;
	int x;

	if (!total)
		for (i = 0; i < sizeof(weights) / sizeof(weights[0]); i++)
			total += weights[i].weight;
	x = below(r, total);
	for (i = 0; i < sizeof(weights) / sizeof(weights[0]); i++) {
		x -= weights[i].weight;
		if (x < 0)
			return weights[i].op;
	}
	return OP_query;
}

static void do_op(struct thr *t, struct dev *d)
{
	struct rng *r = &t->r;
	enum op op = pick_op(r);
	int idx, ret, err;
	void *o;

	errno = 0;
	switch (op) {
	case OP_alloc_pd: {
		struct ibv_pd *pd;

		if (full(d, K_PD))
			break;
		oplog(t, "alloc_pd %s", d->name);
		pd = ibv_alloc_pd(d->ctx);
		err = pd ? 0 : err_of(1);
		count(op, err);
		mark_dead(d, err);
		if (pd && !add(d, K_PD, pd))
			ibv_dealloc_pd(pd);
		break;
	}
	case OP_dealloc_pd:
		o = take(d, r, K_PD);
		if (!o)
			break;
		oplog(t, "dealloc_pd %s pd=%u", d->name, ((struct ibv_pd *)o)->handle);
		ret = ibv_dealloc_pd(o);
		count(op, ret);
		if (ret && !add(d, K_PD, o))
			oplog(t, "leak pd");
		break;
	case OP_reg_mr: {
		struct ibv_pd *pd;
		struct ibv_mr *mr;
		uint64_t len = pick_len(r), addr;
		int acc;

		if (full(d, K_MR))
			break;
		pd = get(d, r, K_PD, &idx);
		if (!pd)
			break;
		if (chance(r, 70) && len > (256 << 10))
			len = below(r, 256 << 10) + 1;
		addr = pick_addr(r, &len);
		acc = chance(r, 80) ? (int)below(r, 16) : (int)rnd(r);
		oplog(t, "reg_mr %s pd=%u addr=%#" PRIx64 " len=%#" PRIx64 " acc=%#x",
		      d->name, pd->handle, addr, len, acc);
		errno = 0;
		mr = ibv_reg_mr(pd, (void *)(uintptr_t)addr, len, acc);
		err = mr ? 0 : err_of(1);
		count(op, err);
		mark_dead(d, err);
		put(d, K_PD, idx);
		if (mr && !add(d, K_MR, mr))
			ibv_dereg_mr(mr);
		break;
	}
	case OP_dereg_mr:
		o = take(d, r, K_MR);
		if (!o)
			break;
		oplog(t, "dereg_mr %s mr=%u", d->name, ((struct ibv_mr *)o)->handle);
		ret = ibv_dereg_mr(o);
		count(op, ret);
		if (ret && !add(d, K_MR, o))
			oplog(t, "leak mr");
		break;
	case OP_create_cq: {
		struct ibv_comp_channel *ch = NULL;
		struct ibv_cq *cq;
		int cqe, cidx = -1;

		if (full(d, K_CQ))
			break;
		if (chance(r, 40))
			ch = get(d, r, K_CH, &cidx);
		cqe = chance(r, 85) ? (int)below(r, 256) + 1 : (int)interesting(r);
		oplog(t, "create_cq %s cqe=%d ch=%d", d->name, cqe, ch ? ch->fd : -1);
		errno = 0;
		cq = ibv_create_cq(d->ctx, cqe, NULL, ch, chance(r, 90) ? 0 : below(r, 4));
		err = cq ? 0 : err_of(1);
		count(op, err);
		mark_dead(d, err);
		if (cidx >= 0)
			put(d, K_CH, cidx);
		if (cq && !add(d, K_CQ, cq))
			ibv_destroy_cq(cq);
		break;
	}
	case OP_destroy_cq:
		o = take(d, r, K_CQ);
		if (!o)
			break;
		oplog(t, "destroy_cq %s cq=%u", d->name, ((struct ibv_cq *)o)->handle);
		ret = ibv_destroy_cq(o);
		count(op, ret);
		if (ret && !add(d, K_CQ, o))
			oplog(t, "leak cq");
		break;
	case OP_resize_cq: {
		struct ibv_cq *cq = get(d, r, K_CQ, &idx);
		int cqe = chance(r, 70) ? (int)below(r, 512) : (int)interesting(r);

		if (!cq)
			break;
		oplog(t, "resize_cq %s cq=%u cqe=%d", d->name, cq->handle, cqe);
		ret = ibv_resize_cq(cq, cqe);
		count(op, ret);
		put(d, K_CQ, idx);
		break;
	}
	case OP_create_qp:
		op_create_qp(t, d);
		break;
	case OP_destroy_qp:
		o = take(d, r, K_QP);
		if (!o)
			break;
		oplog(t, "destroy_qp %s qp=%u", d->name, ((struct ibv_qp *)o)->handle);
		ret = ibv_destroy_qp(o);
		count(op, ret);
		if (ret && !add(d, K_QP, o))
			oplog(t, "leak qp");
		break;
	case OP_modify_qp_rand:
	case OP_modify_qp_conn:
		op_modify_qp(t, d, op == OP_modify_qp_conn);
		break;
	case OP_query_qp: {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		struct ibv_qp *qp = get(d, r, K_QP, &idx);
		int mask = (int)(rnd(r) & 0x3fffff);

		if (!qp)
			break;
		oplog(t, "query_qp %s qp=%u mask=%#x", d->name, qp->handle, mask);
		ret = ibv_query_qp(qp, &a, mask, &ia);
		count(op, ret);
		mark_dead(d, ret);
		put(d, K_QP, idx);
		break;
	}
	case OP_create_ah: {
		struct ibv_ah_attr aa;
		struct ibv_pd *pd;
		struct ibv_ah *ah;

		if (full(d, K_AH))
			break;
		pd = get(d, r, K_PD, &idx);
		if (!pd)
			break;
		fill_ah_attr(t, d, &aa);
		oplog(t, "create_ah %s pd=%u sgid=%u port=%u global=%u", d->name,
		      pd->handle, aa.grh.sgid_index, aa.port_num, aa.is_global);
		errno = 0;
		ah = ibv_create_ah(pd, &aa);
		err = ah ? 0 : err_of(1);
		count(op, err);
		mark_dead(d, err);
		put(d, K_PD, idx);
		if (ah && !add(d, K_AH, ah))
			ibv_destroy_ah(ah);
		break;
	}
	case OP_destroy_ah:
		o = take(d, r, K_AH);
		if (!o)
			break;
		oplog(t, "destroy_ah %s ah=%u", d->name, ((struct ibv_ah *)o)->handle);
		ret = ibv_destroy_ah(o);
		count(op, ret);
		if (ret && !add(d, K_AH, o))
			oplog(t, "leak ah");
		break;
	case OP_post_send:
	case OP_post_recv:
		op_post(t, d, op == OP_post_send);
		break;
	case OP_poll_cq: {
		struct ibv_wc wc[64];
		struct ibv_cq *cq = get(d, r, K_CQ, &idx);
		int ne = chance(r, 90) ? (int)below(r, 64) + 1 : 0;

		if (!cq)
			break;
		oplog(t, "poll_cq %s cq=%u ne=%d", d->name, cq->handle, ne);
		errno = 0;
		ret = ibv_poll_cq(cq, ne, wc);
		count(op, ret < 0 ? err_of(1) : 0);
		put(d, K_CQ, idx);
		break;
	}
	case OP_req_notify: {
		struct ibv_cq *cq = get(d, r, K_CQ, &idx);
		int sol = below(r, 2);

		if (!cq)
			break;
		oplog(t, "req_notify %s cq=%u sol=%d", d->name, cq->handle, sol);
		ret = ibv_req_notify_cq(cq, sol);
		count(op, ret);
		put(d, K_CQ, idx);
		break;
	}
	case OP_cq_event:
	case OP_async_event:
		drain_events(t, d);
		break;
	case OP_create_chan: {
		struct ibv_comp_channel *ch;

		if (full(d, K_CH))
			break;
		oplog(t, "create_chan %s", d->name);
		errno = 0;
		ch = ibv_create_comp_channel(d->ctx);
		count(op, ch ? 0 : err_of(1));
		if (!ch)
			break;
		set_nonblock(ch->fd);
		if (!add(d, K_CH, ch))
			ibv_destroy_comp_channel(ch);
		break;
	}
	case OP_destroy_chan:
		o = take(d, r, K_CH);
		if (!o)
			break;
		oplog(t, "destroy_chan %s", d->name);
		ret = ibv_destroy_comp_channel(o);
		count(op, ret ? errno : 0);
		if (ret && !add(d, K_CH, o))
			oplog(t, "leak channel");
		break;
	case OP_query: {
		struct ibv_device_attr da;
		struct ibv_port_attr pa;
		union ibv_gid g;

		oplog(t, "query %s", d->name);
		switch (below(r, 3)) {
		case 0:
			ret = ibv_query_device(d->ctx, &da);
			break;
		case 1:
			ret = ibv_query_port(d->ctx, below(r, 3), &pa);
			break;
		default:
			ret = ibv_query_gid(d->ctx, 1, below(r, 300), &g) ? errno : 0;
		}
		count(op, ret);
		mark_dead(d, ret);
		break;
	}
	case OP_raw_write:
	case OP_raw_write_ex:
	case OP_raw_ioctl: {
		int fd;
		bool shared = true;

		/* sometimes the second open of the device (its own context) */
		pthread_mutex_lock(&d->lock);
		if (chance(r, 30) && d->raw_fd >= 0) {
			fd = dup(d->raw_fd);
			shared = false;
		} else {
			fd = dup(cmd_fd(d));
		}
		pthread_mutex_unlock(&d->lock);
		if (fd < 0)
			break;
		if (op == OP_raw_write)
			op_raw_write(t, d, fd, shared);
		else if (op == OP_raw_write_ex)
			op_raw_write_ex(t, d, fd, shared);
		else
			op_raw_ioctl(t, d, fd, shared);
		close(fd);
		break;
	}
	case OP_raw_fd: {
		char path[128];
		int fd, old;

		snprintf(path, sizeof(path), "/dev/infiniband/%s",
			 d->ctx->device->dev_name);
		oplog(t, "raw_fd %s reopen %s", d->name, path);
		fd = open(path, O_RDWR | O_CLOEXEC);
		count(op, fd < 0 ? errno : 0);
		if (fd >= 0 && chance(r, 80)) {
			/* give it a context (or not): a valid GET_CONTEXT */
			struct {
				struct ib_uverbs_cmd_hdr hdr;
				struct ib_uverbs_get_context cmd;
				uint64_t udata[2];
			} g;

			memset(&g, 0, sizeof(g));
			g.hdr.command = IB_USER_VERBS_CMD_GET_CONTEXT;
			g.hdr.in_words = (sizeof(g) - (chance(r, 70) ? 16 : 0)) / 4;
			g.hdr.out_words = (sizeof(struct ib_uverbs_get_context_resp) +
					   16 * below(r, 2)) / 4;
			g.cmd.response = (uintptr_t)t->scratch;
			if (chance(r, 20))
				g.udata[0] = rnd(r);
			oplog(t, "raw_fd %s get_context in=%u out=%u", d->name,
			      g.hdr.in_words, g.hdr.out_words);
			count(op, write(fd, &g, g.hdr.in_words * 4) < 0 ? errno : 0);
		}
		pthread_mutex_lock(&d->lock);
		old = d->raw_fd;
		d->raw_fd = fd;
		pthread_mutex_unlock(&d->lock);
		if (old >= 0)
			close(old);
		break;
	}
	case OP_fork:
		op_fork(t, d);
		break;
	case OP_vm_remap:
		op_vm_remap(t);
		break;
	default:
		break;
	}
}

/* ---------- rounds ---------- */

static void dump_ring(struct thr *t);

static void *worker(void *arg)
{
	struct thr *t = arg;

	self = t;
	while (!__atomic_load_n(&stop_all, __ATOMIC_RELAXED) && now() < t->round_end) {
		struct dev *d = &devs[below(&t->r, ndev)];
		uint64_t n = __atomic_add_fetch(&ops_total, 1, __ATOMIC_RELAXED);

		if (n > max_ops) {
			__atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);
			break;
		}
		if (__atomic_load_n(&d->dead, __ATOMIC_RELAXED)) {
			bool all = true;
			int i;

			for (i = 0; i < ndev; i++)
				all &= !!devs[i].dead;
			if (all)
				break;	/* every device is gone: end the round */
		}
		t->nops++;
		__atomic_add_fetch(&t->progress, 1, __ATOMIC_RELAXED);
		do_op(t, d);
	}
	return NULL;
}

static uint64_t thread_seed(int round, int id)
{
	uint64_t x = seed ^ ((uint64_t)round << 32) ^ ((uint64_t)id << 8);

	return splitmix(&x);
}

/*
 * Raw commands create completion channels and event files the program does
 * not track; close every such file descriptor at the end of a round.
 */
static void close_event_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	char path[64], link[256];
	ssize_t n;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		int fd = atoi(e->d_name);

		if (fd <= 2 || fd == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strstr(link, "infiniband"))
			close(fd);
	}
	closedir(dir);
}

static const enum kind destroy_order[] = { K_QP, K_AH, K_MR, K_CQ, K_PD, K_CH };

/* Destroy what the round left, in a random order, then close. */
static void teardown(struct thr *m)
{
	int i, k, j, pass, ret;

	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < ndev; i++) {
			struct dev *d = &devs[i];

			if (!d->ctx)
				continue;
			for (j = 0; j < NKIND * MAXOBJ; j++) {
				void *o;

				/* first passes: any order; last: children first */
				k = pass < 2 ? (enum kind)below(&m->r, NKIND) :
					       destroy_order[j / MAXOBJ];
				o = take(d, &m->r, k);
				if (!o)
					continue;
				oplog(m, "teardown %s kind=%d", d->name, k);
				switch (k) {
				case K_PD:
					ret = ibv_dealloc_pd(o);
					break;
				case K_MR:
					ret = ibv_dereg_mr(o);
					break;
				case K_CQ:
					ret = ibv_destroy_cq(o);
					break;
				case K_QP:
					ret = ibv_destroy_qp(o);
					break;
				case K_AH:
					ret = ibv_destroy_ah(o);
					break;
				default:
					ret = ibv_destroy_comp_channel(o);
				}
				if (ret && pass < 2)
					add(d, k, o);	/* children first, later */
			}
		}
	}
	for (i = 0; i < ndev; i++) {
		struct dev *d = &devs[i];

		if (d->raw_fd >= 0)
			close(d->raw_fd);
		d->raw_fd = -1;
		if (d->ctx) {
			oplog(m, "close_device %s", d->name);
			ibv_close_device(d->ctx);
		}
		d->ctx = NULL;
		memset(d->s, 0, sizeof(d->s));
	}
	close_event_fds();
}

/* Bring QP qp to RTS, connected to QP number dqpn of this device. */
static int to_rts(struct dev *d, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	bool ud = qp->qp_type == IBV_QPT_UD;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11111111;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = d->gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE : IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 12;
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE | IBV_QP_SQ_PSN :
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * What a well-behaved tenant sets up, so that work reaches the data path:
 * a PD, an MR over the arena, a CQ, two RC QPs connected to each other and a
 * UD QP with an AH, all in RTS.  They join the shared table: the fuzzing
 * threads use and destroy them like any other object.
 */
static void fixture(struct thr *m, struct dev *d)
{
	struct ibv_qp_init_attr ia;
	struct ibv_ah_attr aa;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp[3];
	struct ibv_ah *ah;
	int i, err = 0;

	oplog(m, "fixture %s", d->name);
	pd = ibv_alloc_pd(d->ctx);
	if (!pd)
		return;
	add(d, K_PD, pd);
	mr = ibv_reg_mr(pd, arena, 1 << 20, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	if (mr)
		add(d, K_MR, mr);
	cq = ibv_create_cq(d->ctx, 256, NULL, NULL, 0);
	if (!cq)
		return;
	add(d, K_CQ, cq);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 64;
	for (i = 0; i < 3; i++) {
		ia.qp_type = i < 2 ? IBV_QPT_RC : IBV_QPT_UD;
		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			return;
		add(d, K_QP, qp[i]);
	}
	err |= to_rts(d, qp[0], qp[1]->qp_num);
	err |= to_rts(d, qp[1], qp[0]->qp_num);
	err |= to_rts(d, qp[2], qp[2]->qp_num);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = d->gid;
	aa.grh.sgid_index = gid_index;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	ah = ibv_create_ah(pd, &aa);
	if (ah)
		add(d, K_AH, ah);
	count(OP_fixture, err ? EINVAL : (!mr || !ah) ? ENOMEM : 0);
}

/* Open every device; false when one is missing (after a short wait). */
static bool open_round(struct thr *m)
{
	struct ibv_device **list;
	int i, j, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return false;
	for (i = 0; i < ndev; i++) {
		struct dev *d = &devs[i];

		d->name = devnames[i];
		d->ctx = NULL;
		d->dead = 0;
		d->raw_fd = -1;
		for (j = 0; j < n; j++)
			if (!strcmp(ibv_get_device_name(list[j]), d->name))
				d->ctx = ibv_open_device(list[j]);
		if (!d->ctx || ibv_query_device(d->ctx, &d->attr) ||
		    ibv_query_gid(d->ctx, 1, gid_index, &d->gid)) {
			count(OP_open_round, d->ctx ? EIO : ENODEV);
			oplog(m, "open_round %s failed", d->name);
			break;
		}
		set_nonblock(d->ctx->async_fd);
		dummies_init(i, d->ctx);
	}
	ibv_free_device_list(list);
	if (i < ndev) {
		teardown(m);
		return false;
	}
	for (i = 0; i < ndev; i++)
		fixture(m, &devs[i]);
	count(OP_open_round, 0);
	return true;
}

static void dump_ring(struct thr *t)
{
	unsigned int i;

	fprintf(stderr, "--- last operations of thread %d:\n", t->id);
	for (i = 0; i < RING; i++) {
		const char *l = t->ring[(t->ring_pos + i) % RING];

		if (*l)
			fprintf(stderr, "  %s\n", l);
	}
}

static const char *errname(int e)
{
	static char buf[NERR + 1][16];
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{ EPERM, "EPERM" },
		{ ENOENT, "ENOENT" },
		{ EINTR, "EINTR" },
		{ EIO, "EIO" },
		{ ENXIO, "ENXIO" },
		{ E2BIG, "E2BIG" },
		{ EBADF, "EBADF" },
		{ EAGAIN, "EAGAIN" },
		{ ENOMEM, "ENOMEM" },
		{ EACCES, "EACCES" },
		{ EFAULT, "EFAULT" },
		{ EBUSY, "EBUSY" },
		{ EEXIST, "EEXIST" },
		{ ENODEV, "ENODEV" },
		{ EINVAL, "EINVAL" },
		{ ENOSPC, "ENOSPC" },
		{ ERANGE, "ERANGE" },
		{ ENOSYS, "ENOSYS" },
		{ EOPNOTSUPP, "EOPNOTSUPP" },
		{ EPROTONOSUPPORT, "EPROTONOSUPPORT" },
		{ EMSGSIZE, "EMSGSIZE" },
		{ ENOTTY, "ENOTTY" },
		{ ENFILE, "ENFILE" },
		{ EMFILE, "EMFILE" },
		{ EOVERFLOW, "EOVERFLOW" },
		{ ENOTCONN, "ENOTCONN" },
		{ ENETUNREACH, "ENETUNREACH" },
		{ ETIMEDOUT, "ETIMEDOUT" },
		{ ENOBUFS, "ENOBUFS" },
		{ ENODATA, "ENODATA" },
		{ ESRCH, "ESRCH" },
		{ EPROTO, "EPROTO" },
		{ ECONNRESET, "ECONNRESET" },
		{ EADDRNOTAVAIL, "EADDRNOTAVAIL" },
		{ EHOSTUNREACH, "EHOSTUNREACH" },
		{ ECANCELED, "ECANCELED" },
	};
	unsigned int i;

	if (e == 0)
		return "ok";
	if (e == NERR)
		return "other";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	snprintf(buf[e], sizeof(buf[e]), "%d", e);
	return buf[e];
}

/* Print the table; returns the number of operations issued. */
static uint64_t print_table(void)
{
	int op, e;
	uint64_t issued, all = 0;

	printf("%-16s %10s  %s\n", "op", "issued", "results (errno:count)");
	for (op = 0; op < NOPS; op++) {
		issued = 0;
		for (e = 0; e <= NERR; e++)
			issued += stats[op][e];
		all += issued;
		if (!issued)
			continue;
		printf("%-16s %10" PRIu64 " ", op_names[op], issued);
		for (e = 0; e <= NERR; e++)
			if (stats[op][e])
				printf(" %s:%" PRIu64, errname(e), stats[op][e]);
		printf("\n");
	}
	printf("%-16s %10" PRIu64 "\n", "total", all);
	return all;
}

/* The process's mappings, for a crash at an address (read(2) only). */
static void dump_maps(void)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY);

	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(2, buf, n) != n)
			break;
	close(fd);
}

/* A crash of the fuzzer itself: where, and what this thread issued last. */
static void on_crash(int sig, siginfo_t *si, void *uc)
{
	void *bt[32];
	int n = backtrace(bt, 32);

	(void)uc;
	fprintf(stderr, "fuzz: signal %d at address %p, seed %" PRIu64 "\n", sig,
		si->si_addr, seed);
	backtrace_symbols_fd(bt, n, 2);
	dump_maps();
	if (self)
		dump_ring(self);
	_exit(4);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: stl_fuzz -d DEV [-d DEV...] [-s SEED] [-n OPS] [-T SECONDS]\n"
		"                [-t THREADS] [-r ROUND_S] [-l LOGDIR] [-g GID_INDEX] [-q]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct thr *m = &thrs[MAXTHR];
	double t0, deadline, last_report;
	uint64_t last_prog[MAXTHR] = { 0 };
	double last_move[MAXTHR];
	int c, i, rounds = 0;
	bool seeded = false;

	while ((c = getopt(argc, argv, "d:s:n:T:t:r:l:g:q")) != -1) {
		switch (c) {
		case 'd':
			if (ndev < MAXDEV)
				devnames[ndev++] = optarg;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'n':
			max_ops = strtoull(optarg, NULL, 0);
			break;
		case 'T':
			max_secs = atof(optarg);
			break;
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'r':
			round_secs = atof(optarg);
			break;
		case 'l':
			logdir = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		default:
			usage();
		}
	}
	if (!ndev || nthreads < 1 || nthreads > MAXTHR || max_secs <= 0 ||
	    round_secs <= 0)
		usage();
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000003) ^ ts.tv_nsec ^ getpid();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_crash;
		sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		sigaction(SIGABRT, &sa, NULL);
	}
	self = m;
	printf("fuzz: seed %" PRIu64 " (replay: -s %" PRIu64 "), %d threads, "
	       "%.0f s, round %.0f s, ops limit %" PRIu64 " (0: none), devices",
	       seed, seed, nthreads, max_secs, round_secs,
	       max_ops == UINT64_MAX ? 0 : max_ops);
	for (i = 0; i < ndev; i++)
		printf(" %s", devnames[i]);
	printf("\n");
	mem_init();
	for (i = 0; i <= MAXTHR; i++) {
		thrs[i].id = i;
		thrs[i].scratch = map_guarded(SCRATCH_SZ);
		if (i < nthreads || i == MAXTHR)
			log_open(&thrs[i]);
	}
	for (i = 0; i < ndev; i++)
		pthread_mutex_init(&devs[i].lock, NULL);
	m->r.s = thread_seed(0, 999);

	t0 = now();
	deadline = t0 + max_secs;
	last_report = t0;
	while (!__atomic_load_n(&stop_all, __ATOMIC_RELAXED) && now() < deadline) {
		double end;
		bool hung = false;

		round_no = ++rounds;
		if (!open_round(m)) {
			usleep(200000);
			continue;
		}
		end = now() + round_secs;
		if (end > deadline)
			end = deadline;
		for (i = 0; i < nthreads; i++) {
			thrs[i].r.s = thread_seed(rounds, i);
			thrs[i].round_end = end;
			last_prog[i] = __atomic_load_n(&thrs[i].progress, __ATOMIC_RELAXED);
			last_move[i] = now();
			pthread_create(&thrs[i].tid, NULL, worker, &thrs[i]);
		}
		/* watchdog: every thread must keep moving */
		for (;;) {
			bool alive = false;

			usleep(100000);
			for (i = 0; i < nthreads; i++) {
				uint64_t p = __atomic_load_n(&thrs[i].progress, __ATOMIC_RELAXED);

				if (thrs[i].tid && pthread_tryjoin_np(thrs[i].tid, NULL) == 0) {
					thrs[i].tid = 0;
					continue;
				}
				if (thrs[i].tid)
					alive = true;
				if (p != last_prog[i]) {
					last_prog[i] = p;
					last_move[i] = now();
				} else if (thrs[i].tid && now() - last_move[i] > 60) {
					fprintf(stderr, "fuzz: thread %d made no progress for 60 s\n", i);
					dump_ring(&thrs[i]);
					hung = true;
				}
			}
			if (hung) {
				print_table();
				printf("fuzz: HANG, seed %" PRIu64 "\n", seed);
				fflush(stdout);
				_exit(3);
			}
			if (!alive)
				break;
		}
		teardown(m);
		if (!quiet && now() - last_report > 30) {
			last_report = now();
			printf("fuzz: %.0f s, %" PRIu64 " ops, round %d\n",
			       now() - t0, ops_total, rounds);
		}
	}
	{
		double el = now() - t0;
		uint64_t n = print_table();

		printf("fuzz: %d rounds, %.1f s, %.0f ops/s\n", rounds, el, n / el);
		if (!stats[OP_open_round][0]) {
			printf("fuzz: no round could open its devices, seed %" PRIu64 "\n", seed);
			return 1;
		}
		printf("fuzz: %" PRIu64 " ops, seed %" PRIu64 ", ok\n", n, seed);
	}
	return 0;
}
