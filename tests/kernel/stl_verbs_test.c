// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_verbs_test - verbs behaviour between two RDMA devices in one process.
 *
 *   stl_verbs_test -a stellar0 -b stellar1 [-g GID_INDEX] [-p PORT] [-t GLOB]... [-l]
 *
 * Device A is always the requester, device B the responder; B may be a
 * plain rxe device (stellar <-> rxe interoperation).  Every subtest opens
 * its own queue pairs, so one failure cannot poison the next.  Each subtest
 * prints "PASS name", "FAIL name: reason" or "SKIP name: reason"; the last
 * line is exactly "N passed, N failed" and the exit status is 1 if any
 * subtest failed.  A skip is never counted as a pass.
 *
 * Negative subtests assert the error semantics Stellar promises (see
 * tests/kernel/README.md); on a plain rxe requester some of them are
 * expected to fail.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CQ_TIMEOUT_MS 15000	/* TCG + soft-RoCE is slow; never hang forever */
#define QUIET_MS 400		/* how long "nothing happened" is watched */
#define PAT_GUARD 0xEE		/* untouched destination bytes */
#define UD_QKEY 0x11111111u
#define GRH_LEN 40

/* ---------------------------------------------------------------- devices */

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int stellar;		/* has the stellar_abi_version sysfs attribute */
};

static struct side side_a, side_b;
static int gid_index = 1;
static uint8_t ib_port = 1;

/* ------------------------------------------------------- results, cleanup */

enum { T_PASS, T_FAIL, T_SKIP };

static char why[1024];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return T_FAIL;
}

static int skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return T_SKIP;
}

#define CHECK(cond, ...)					\
	do {							\
		if (!(cond))					\
			return fail(__VA_ARGS__);		\
	} while (0)

/* Propagate a non-pass result of a helper. */
#define TRY(expr)						\
	do {							\
		int try_r_ = (expr);				\
		if (try_r_ != T_PASS)				\
			return try_r_;				\
	} while (0)

enum res_kind { R_MAP, R_MR, R_QP, R_CQ, R_PD, R_AH, R_CHAN, R_MW, R_SRQ };

struct res {
	enum res_kind kind;
	void *p;
	size_t len;
};

/* Everything a subtest creates, released in reverse order after it. */
static struct res res_stack[512];
static int res_n;

static void *track(enum res_kind kind, void *p, size_t len)
{
	if (p && res_n < (int)(sizeof(res_stack) / sizeof(res_stack[0])))
		res_stack[res_n++] = (struct res){ kind, p, len };
	return p;
}

static void untrack(void *p)
{
	for (int i = res_n - 1; i >= 0; i--) {
		if (res_stack[i].p == p) {
			memmove(&res_stack[i], &res_stack[i + 1],
				(res_n - i - 1) * sizeof(res_stack[0]));
			res_n--;
			return;
		}
	}
}

/* Releases @r; returns the verbs call's result and names the call in @what. */
static int res_release(const struct res *r, const char **what)
{
	*what = NULL;
	switch (r->kind) {
	case R_MAP:
		munmap(r->p, r->len);
		return 0;
	case R_MR:
		*what = "ibv_dereg_mr";
		return ibv_dereg_mr(r->p);
	case R_QP:
		*what = "ibv_destroy_qp";
		return ibv_destroy_qp(r->p);
	case R_CQ:
		*what = "ibv_destroy_cq";
		return ibv_destroy_cq(r->p);
	case R_PD:
		*what = "ibv_dealloc_pd";
		return ibv_dealloc_pd(r->p);
	case R_AH:
		*what = "ibv_destroy_ah";
		return ibv_destroy_ah(r->p);
	case R_CHAN:
		*what = "ibv_destroy_comp_channel";
		return ibv_destroy_comp_channel(r->p);
	case R_MW:
		*what = "ibv_dealloc_mw";
		return ibv_dealloc_mw(r->p);
	case R_SRQ:
		*what = "ibv_destroy_srq";
		return ibv_destroy_srq(r->p);
	}
	return 0;
}

/* Returns 0, or the first error (and describes it in @msg). */
static int release_all(char *msg, size_t msglen)
{
	int first = 0;

	while (res_n > 0) {
		struct res *r = &res_stack[--res_n];
		const char *what;
		int rc = res_release(r, &what);

		if (rc && !first) {
			first = rc;
			snprintf(msg, msglen, "cleanup: %s returned %d (%s)",
				 what, rc, strerror(rc > 0 ? rc : errno));
		}
	}
	return first;
}

/* ------------------------------------------------------------- utilities */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *buf_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, len);
	return track(R_MAP, p, len);
}

static void fill_pattern(void *dst, size_t len, uint32_t seed)
{
	uint8_t *p = dst;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static uint64_t fnv1a(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* First offset where @len bytes at @p are not all @v, or -1. */
static long first_not(const void *p, size_t len, uint8_t v)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			return (long)i;
	return -1;
}

/*
 * First offset where @len bytes at @got and @want differ, or @len.  A plain
 * byte loop through volatile reads, not memcmp(): it is polled on memory the
 * parent is writing into, and under TCG the vector memcmp of glibc has been
 * seen to report a difference that a byte-by-byte scan of the same, settled
 * bytes does not find.
 */
static size_t first_diff(const volatile uint8_t *got, const uint8_t *want,
			 size_t len)
{
	size_t i = 0;

	while (i < len && got[i] == want[i])
		i++;
	return i;
}

/*
 * @got must equal @want over @len bytes (checked by checksum and byte by
 * byte), and @guard bytes on each side of @got must still be PAT_GUARD.
 */
static int check_bytes(const char *what, const uint8_t *got,
		       const uint8_t *want, size_t len, size_t guard)
{
	size_t i = first_diff(got, want, len);

	if (i < len) {
		return fail("%s: %zu bytes differ from the source (checksum %016" PRIx64
			    " want %016" PRIx64 "), first at offset %zu: 0x%02x want 0x%02x",
			    what, len, fnv1a(got, len), fnv1a(want, len), i,
			    got[i], want[i]);
	}
	if (guard) {
		long o = first_not(got - guard, guard, PAT_GUARD);

		CHECK(o < 0, "%s: byte %ld before the target range was overwritten",
		      what, (long)guard - o);
		o = first_not(got + len, guard, PAT_GUARD);
		CHECK(o < 0, "%s: byte %ld after the target range was overwritten",
		      what, o);
	}
	return T_PASS;
}

static const char *wc_status(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

static const char *errname(int e)
{
	switch (e) {
	case 0: return "0";
	case EINVAL: return "EINVAL";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case ENOMEM: return "ENOMEM";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EIO: return "EIO";
	case ENOENT: return "ENOENT";
	case EAGAIN: return "EAGAIN";
	default: {
		static char b[32];

		snprintf(b, sizeof(b), "%d", e);
		return b;
	}
	}
}

/* ----------------------------------------------------------- completions */

/* Poll until @n completions or the timeout; returns how many arrived. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;
	int got = 0, idle = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return -1;
		if (r > 0) {
			got += r;
			idle = 0;
			continue;
		}
		if (now_ms() > end)
			break;
		if (++idle > 200)
			usleep(100);
	}
	return got;
}

/* One completion that must arrive; filled into @wc. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	int r = poll_n(cq, wc, 1, CQ_TIMEOUT_MS);

	CHECK(r >= 0, "%s: ibv_poll_cq failed (%s)", what, strerror(errno));
	CHECK(r == 1, "%s: no completion within %d ms", what, CQ_TIMEOUT_MS);
	return T_PASS;
}

/* No completion may show up on @cq for QUIET_MS. */
static int expect_quiet(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int r = poll_n(cq, &wc, 1, QUIET_MS);

	CHECK(r == 0, "%s: unexpected completion wr_id=%#" PRIx64 " status=%s opcode=%d",
	      what, wc.wr_id, wc_status(wc.status), wc.opcode);
	return T_PASS;
}

static int expect_wc(const struct ibv_wc *wc, const char *what,
		     enum ibv_wc_status status, enum ibv_wc_opcode opcode,
		     uint64_t wr_id)
{
	CHECK(wc->status == status, "%s: wc.status %s (vendor_err %#x), want %s",
	      what, wc_status(wc->status), wc->vendor_err, wc_status(status));
	CHECK(wc->wr_id == wr_id, "%s: wc.wr_id %#" PRIx64 ", want %#" PRIx64,
	      what, wc->wr_id, wr_id);
	if (status == IBV_WC_SUCCESS)
		CHECK(wc->opcode == opcode, "%s: wc.opcode %d, want %d",
		      what, wc->opcode, opcode);
	return T_PASS;
}

/* -------------------------------------------------------------- QP pairs */

struct end {
	struct side *s;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_cap cap;	/* as returned by ibv_create_qp */
};

struct pair {
	enum ibv_qp_type type;
	struct end a, b;
	struct ibv_ah *ah;	/* UD: A -> B */
};

struct pair_opts {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline;
	int cqe;
	struct ibv_comp_channel *chan_b;
	void *cq_ctx_b;
	int reverse;	/* end a on device B, end b on device A */
	struct ibv_srq *srq_b;	/* end b receives from it */
};

static uint8_t rd_atom(void)
{
	int v = side_a.attr.max_qp_rd_atom;

	if (side_b.attr.max_qp_rd_atom < v)
		v = side_b.attr.max_qp_rd_atom;
	if (v > 16)
		v = 16;
	return v < 1 ? 1 : v;
}

static enum ibv_mtu path_mtu(void)
{
	return side_a.port.active_mtu < side_b.port.active_mtu ?
	       side_a.port.active_mtu : side_b.port.active_mtu;
}

static int path_mtu_bytes(void)
{
	return 128 << path_mtu();
}

static void fill_ah_attr(struct ibv_ah_attr *ah, const union ibv_gid *dgid)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = *dgid;
	ah->grh.sgid_index = gid_index;
	ah->grh.hop_limit = 64;
	ah->port_num = ib_port;
}

static int create_end(struct end *e, struct side *s, enum ibv_qp_type type,
		      const struct pair_opts *o, struct ibv_comp_channel *chan,
		      void *cq_ctx, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;
	int cqe = o->cqe ? o->cqe : 512;

	e->s = s;
	e->pd = s->pd;
	e->cq = track(R_CQ, ibv_create_cq(s->ctx, cqe, cq_ctx, chan, 0), 0);
	CHECK(e->cq, "%s: ibv_create_cq(%d) failed: %s", s->name, cqe,
	      strerror(errno));

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.qp_type = type;
	ia.cap.max_send_wr = o->max_send_wr ? o->max_send_wr : 64;
	ia.cap.max_recv_wr = o->max_recv_wr ? o->max_recv_wr : 64;
	ia.cap.max_send_sge = o->max_send_sge ? o->max_send_sge : 4;
	ia.cap.max_recv_sge = o->max_recv_sge ? o->max_recv_sge : 4;
	ia.cap.max_inline_data = o->max_inline;
	ia.srq = srq;
	e->qp = track(R_QP, ibv_create_qp(e->pd, &ia), 0);
	if (!e->qp && errno == EOPNOTSUPP)
		return skip("%s: ibv_create_qp(type %d) is not supported", s->name, type);
	CHECK(e->qp, "%s: ibv_create_qp(type %d) failed: %s", s->name, type,
	      strerror(errno));
	e->cap = ia.cap;
	return T_PASS;
}

static int to_init(struct end *e, enum ibv_qp_type type)
{
	struct ibv_qp_attr at = { 0 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	int rc;

	at.qp_state = IBV_QPS_INIT;
	at.port_num = ib_port;
	if (type == IBV_QPT_UD) {
		at.qkey = UD_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (type == IBV_QPT_RC)
			at.qp_access_flags |= IBV_ACCESS_REMOTE_READ |
					      IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	rc = ibv_modify_qp(e->qp, &at, mask);
	CHECK(!rc, "%s: modify_qp RESET->INIT failed: %s", e->s->name, errname(rc));
	return T_PASS;
}

static int to_rtr_rts(struct end *e, enum ibv_qp_type type, struct end *peer)
{
	struct ibv_qp_attr at = { 0 };
	int mask = IBV_QP_STATE;
	int rc;

	at.qp_state = IBV_QPS_RTR;
	if (type != IBV_QPT_UD) {
		at.path_mtu = path_mtu();
		at.dest_qp_num = peer->qp->qp_num;
		at.rq_psn = 0x1234;
		fill_ah_attr(&at.ah_attr, &peer->s->gid);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			at.max_dest_rd_atomic = rd_atom();
			at.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	rc = ibv_modify_qp(e->qp, &at, mask);
	CHECK(!rc, "%s: modify_qp INIT->RTR failed: %s", e->s->name, errname(rc));

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0x1234;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC) {
		at.timeout = 14;
		at.retry_cnt = 7;
		at.rnr_retry = 7;
		at.max_rd_atomic = rd_atom();
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	rc = ibv_modify_qp(e->qp, &at, mask);
	CHECK(!rc, "%s: modify_qp RTR->RTS failed: %s", e->s->name, errname(rc));
	return T_PASS;
}

/* A connected (RC/UC) or ready (UD) queue pair A -> B. */
static int pair_open(struct pair *p, enum ibv_qp_type type,
		     const struct pair_opts *opts)
{
	static const struct pair_opts none;
	const struct pair_opts *o = opts ? opts : &none;

	struct side *sa = o->reverse ? &side_b : &side_a;
	struct side *sb = o->reverse ? &side_a : &side_b;

	memset(p, 0, sizeof(*p));
	p->type = type;
	TRY(create_end(&p->a, sa, type, o, NULL, NULL, NULL));
	TRY(create_end(&p->b, sb, type, o, o->chan_b, o->cq_ctx_b, o->srq_b));
	TRY(to_init(&p->a, type));
	TRY(to_init(&p->b, type));
	TRY(to_rtr_rts(&p->a, type, &p->b));
	TRY(to_rtr_rts(&p->b, type, &p->a));
	if (type == IBV_QPT_UD) {
		struct ibv_ah_attr ah;

		fill_ah_attr(&ah, &sb->gid);
		p->ah = track(R_AH, ibv_create_ah(p->a.pd, &ah), 0);
		CHECK(p->ah, "%s: ibv_create_ah failed: %s", sa->name,
		      strerror(errno));
	}
	return T_PASS;
}

static struct ibv_mr *mr_reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return track(R_MR, ibv_reg_mr(pd, addr, len, access), 0);
}

#define MR_LOCAL  IBV_ACCESS_LOCAL_WRITE
#define MR_REMOTE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* @len bytes of fresh memory in @buf, registered in @pd with @access as @mr. */
static int buf_reg(struct ibv_pd *pd, size_t len, int access, uint8_t **buf,
		   struct ibv_mr **mr)
{
	*buf = buf_alloc(len);
	CHECK(*buf, "buffer allocation failed");
	*mr = mr_reg(pd, *buf, len, access);
	CHECK(*mr, "ibv_reg_mr failed: %s", strerror(errno));
	return T_PASS;
}

/*
 * Fixture for transfers: a queue pair and one buffer of the same length on
 * each end, @a registered in A's PD as @ma and @b in B's PD as @mb.
 */
struct xfer {
	struct pair p;
	uint8_t *a, *b;
	struct ibv_mr *ma, *mb;
};

static int xfer_open(struct xfer *x, enum ibv_qp_type type,
		     const struct pair_opts *o, size_t len, int a_access,
		     int b_access)
{
	TRY(pair_open(&x->p, type, o));
	x->a = buf_alloc(len);
	x->b = buf_alloc(len);
	CHECK(x->a && x->b, "buffer allocation failed");
	x->ma = mr_reg(x->p.a.pd, x->a, len, a_access);
	x->mb = mr_reg(x->p.b.pd, x->b, len, b_access);
	CHECK(x->ma && x->mb, "ibv_reg_mr failed: %s", strerror(errno));
	return T_PASS;
}

static int post_send1(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	return ibv_post_send(qp, wr, &bad);
}

static int post_recv1(struct ibv_qp *qp, uint64_t wr_id, void *addr,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Post one signalled WR on A and wait for its successful completion. */
static int run_send(struct pair *p, struct ibv_send_wr *wr, const char *what,
		    enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc;
	int rc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	rc = post_send1(p->a.qp, wr);
	CHECK(!rc, "%s: ibv_post_send returned %s", what, errname(rc));
	TRY(wait_wc(p->a.cq, &wc, what));
	TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, opcode, wr->wr_id));
	CHECK(wc.qp_num == p->a.qp->qp_num, "%s: requester wc.qp_num %#x, want %#x",
	      what, wc.qp_num, p->a.qp->qp_num);
	return T_PASS;
}

static int rdma_write(struct pair *p, uint64_t wr_id, void *laddr, uint32_t len,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	return run_send(p, &wr, "RDMA_WRITE", IBV_WC_RDMA_WRITE);
}

/* ======================================================= positive tests */

static const size_t xfer_sizes[] = {
	1, 7, 64, 1000, 4095, 4096, 4097, 65537, 262147, 1 << 20,
};

#define XFER_BUF ((1 << 20) + 16384)

static int t_rc_write_lands_byte_exact(void)
{
	struct xfer x;	/* source on A, target on B */

	TRY(xfer_open(&x, IBV_QPT_RC, NULL, XFER_BUF, MR_LOCAL, MR_REMOTE));

	for (size_t i = 0; i < sizeof(xfer_sizes) / sizeof(xfer_sizes[0]); i++) {
		size_t len = xfer_sizes[i];
		size_t so = 1 + (i * 3) % 61, doff = 64 + (i * 7) % 53;
		char what[64];

		snprintf(what, sizeof(what), "write %zu B (src+%zu -> dst+%zu)",
			 len, so, doff);
		fill_pattern(x.a + so, len, (uint32_t)i + 1);
		memset(x.b, PAT_GUARD, len + doff + 64);
		TRY(rdma_write(&x.p, i, x.a + so, len, x.ma->lkey,
			       (uintptr_t)(x.b + doff), x.mb->rkey));
		TRY(check_bytes(what, x.b + doff, x.a + so, len, 64));
	}
	return T_PASS;
}

static int t_rc_write_gathers_multi_sge_in_order(void)
{
	struct pair p;
	uint8_t *src, *src2, *dst, *want;
	struct ibv_mr *ms, *ms2, *md;
	/* pieces from two MRs, deliberately out of address order */
	static const struct { int mr; size_t off, len; } piece[] = {
		{ 1, 4093, 5000 }, { 0, 3, 1 }, { 0, 70000, 4096 }, { 1, 11, 777 },
	};
	struct ibv_sge sge[4];
	size_t total = 0;
	struct ibv_send_wr wr = { .wr_id = 42, .sg_list = sge, .num_sge = 4,
				  .opcode = IBV_WR_RDMA_WRITE };
	struct pair_opts o = { .max_send_sge = 4 };

	TRY(pair_open(&p, IBV_QPT_RC, &o));
	src = buf_alloc(1 << 17);
	src2 = buf_alloc(1 << 16);
	dst = buf_alloc(1 << 16);
	want = buf_alloc(1 << 16);
	CHECK(src && src2 && dst && want, "buffer allocation failed");
	fill_pattern(src, 1 << 17, 11);
	fill_pattern(src2, 1 << 16, 12);
	ms = mr_reg(p.a.pd, src, 1 << 17, MR_LOCAL);
	ms2 = mr_reg(p.a.pd, src2, 1 << 16, MR_LOCAL);
	md = mr_reg(p.b.pd, dst, 1 << 16, MR_REMOTE);
	CHECK(ms && ms2 && md, "ibv_reg_mr failed: %s", strerror(errno));
	for (int i = 0; i < 4; i++) {
		uint8_t *base = piece[i].mr ? src2 : src;

		sge[i] = (struct ibv_sge){ (uintptr_t)(base + piece[i].off),
					   piece[i].len,
					   piece[i].mr ? ms2->lkey : ms->lkey };
		memcpy(want + total, base + piece[i].off, piece[i].len);
		total += piece[i].len;
	}
	memset(dst, PAT_GUARD, 1 << 16);
	wr.wr.rdma.remote_addr = (uintptr_t)(dst + 129);
	wr.wr.rdma.rkey = md->rkey;
	TRY(run_send(&p, &wr, "4-SGE RDMA_WRITE", IBV_WC_RDMA_WRITE));
	return check_bytes("4-SGE write", dst + 129, want, total, 64);
}

static int t_rc_read_returns_remote_bytes(void)
{
	struct xfer x;	/* local destination on A, remote source on B */

	TRY(xfer_open(&x, IBV_QPT_RC, NULL, XFER_BUF, MR_LOCAL,
		      IBV_ACCESS_REMOTE_READ));

	for (size_t i = 0; i < sizeof(xfer_sizes) / sizeof(xfer_sizes[0]); i++) {
		size_t len = xfer_sizes[i];
		size_t so = 5 + (i * 5) % 59, doff = 64 + (i * 11) % 47;
		struct ibv_sge sge = { (uintptr_t)(x.a + doff), len, x.ma->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.wr.rdma = { (uintptr_t)(x.b + so), x.mb->rkey },
		};
		char what[64];

		snprintf(what, sizeof(what), "read %zu B (remote+%zu -> local+%zu)",
			 len, so, doff);
		fill_pattern(x.b + so, len, (uint32_t)i + 77);
		memset(x.a, PAT_GUARD, len + doff + 64);
		TRY(run_send(&x.p, &wr, what, IBV_WC_RDMA_READ));
		TRY(check_bytes(what, x.a + doff, x.b + so, len, 64));
	}
	return T_PASS;
}

static int t_rc_read_scatters_multi_sge(void)
{
	struct xfer x;	/* local destination on A, remote source on B */
	struct ibv_sge sge[3];
	static const size_t off[3] = { 9000, 64, 40000 }, len[3] = { 3, 8191, 1500 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = sge, .num_sge = 3,
				  .opcode = IBV_WR_RDMA_READ };
	size_t pos = 0;
	struct pair_opts o = { .max_send_sge = 3 };

	TRY(xfer_open(&x, IBV_QPT_RC, &o, 1 << 16, MR_LOCAL,
		      IBV_ACCESS_REMOTE_READ));
	fill_pattern(x.b, 1 << 16, 5);
	memset(x.a, PAT_GUARD, 1 << 16);
	for (int i = 0; i < 3; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)(x.a + off[i]), len[i],
					   x.ma->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)(x.b + 333);
	wr.wr.rdma.rkey = x.mb->rkey;
	TRY(run_send(&x.p, &wr, "3-SGE RDMA_READ", IBV_WC_RDMA_READ));
	for (int i = 0; i < 3; i++) {
		char what[48];

		snprintf(what, sizeof(what), "read piece %d", i);
		TRY(check_bytes(what, x.a + off[i], x.b + 333 + pos, len[i], 32));
		pos += len[i];
	}
	return T_PASS;
}

/*
 * SEND of @len bytes from offset @soff of A's buffer lands in B's receive
 * buffer; all wc fields.
 */
static int send_recv_check(struct xfer *x, size_t soff, size_t len,
			   uint64_t id, int with_imm)
{
	struct pair *p = &x->p;
	uint8_t *sbuf = x->a + soff, *rbuf = x->b;
	struct ibv_sge sge = { (uintptr_t)sbuf, len, x->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND };
	uint32_t imm = htonl(0xA5000000u | (uint32_t)id);
	struct ibv_wc wc;
	char what[64];
	int rc;

	snprintf(what, sizeof(what), "%s %zu B", with_imm ? "send_imm" : "send", len);
	wr.imm_data = imm;
	memset(rbuf, PAT_GUARD, len + 128);
	rc = post_recv1(p->b.qp, id + 1000, rbuf + 64, len + 64, x->mb->lkey);
	CHECK(!rc, "%s: ibv_post_recv returned %s", what, errname(rc));
	TRY(run_send(p, &wr, what, IBV_WC_SEND));
	TRY(wait_wc(p->b.cq, &wc, what));
	TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, IBV_WC_RECV, id + 1000));
	CHECK(wc.byte_len == len, "%s: recv wc.byte_len %u, want %zu", what,
	      wc.byte_len, len);
	CHECK(wc.qp_num == p->b.qp->qp_num, "%s: recv wc.qp_num %#x, want %#x",
	      what, wc.qp_num, p->b.qp->qp_num);
	if (with_imm) {
		CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "%s: IBV_WC_WITH_IMM not set", what);
		CHECK(wc.imm_data == imm, "%s: imm_data %#x, want %#x", what,
		      ntohl(wc.imm_data), ntohl(imm));
	} else {
		CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM),
		      "%s: IBV_WC_WITH_IMM set on a plain SEND", what);
	}
	return check_bytes(what, rbuf + 64, sbuf, len, 64);
}

/*
 * A fresh @type pair with 64 KiB of pattern @seed on A carries two SENDs:
 * @len1 bytes from offset 0 (wr_id 1), then @len2 bytes from offset 1
 * (wr_id 2); @imm1 and @imm2 choose SEND_WITH_IMM.
 */
static int send_recv_twice(enum ibv_qp_type type, uint32_t seed, size_t len1,
			   int imm1, size_t len2, int imm2)
{
	struct xfer x;

	TRY(xfer_open(&x, type, NULL, 1 << 16, MR_LOCAL, MR_LOCAL));
	fill_pattern(x.a, 1 << 16, seed);
	TRY(send_recv_check(&x, 0, len1, 1, imm1));
	return send_recv_check(&x, 1, len2, 2, imm2);
}

static int t_rc_send_recv_delivers_bytes_and_wc_fields(void)
{
	static const size_t sz[] = { 1, 100, 1024, 4097, 65537, 1 << 20 };
	struct xfer x;

	TRY(xfer_open(&x, IBV_QPT_RC, NULL, XFER_BUF, MR_LOCAL, MR_LOCAL));
	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		fill_pattern(x.a + 3, sz[i], (uint32_t)i + 300);
		TRY(send_recv_check(&x, 3, sz[i], i, 0));
	}
	return T_PASS;
}

static int t_rc_send_scatters_into_multi_sge_recv(void)
{
	struct xfer x;
	uint8_t *s, *r;
	static const size_t roff[3] = { 20000, 100, 9000 }, rlen[3] = { 10, 4000, 3000 };
	struct ibv_sge rs[3], ss[2];
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = rs, .num_sge = 3 };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr wr = { .wr_id = 6, .sg_list = ss, .num_sge = 2,
				  .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	size_t total = 6000, pos = 0;
	struct pair_opts o = { .max_send_sge = 3, .max_recv_sge = 3 };
	int rc;

	TRY(xfer_open(&x, IBV_QPT_RC, &o, 1 << 15, MR_LOCAL, MR_LOCAL));
	s = x.a;
	r = x.b;
	fill_pattern(s, 1 << 15, 9);
	memset(r, PAT_GUARD, 1 << 15);
	/* source: 2500 bytes at s+10000, then 3500 at s+1 */
	ss[0] = (struct ibv_sge){ (uintptr_t)(s + 10000), 2500, x.ma->lkey };
	ss[1] = (struct ibv_sge){ (uintptr_t)(s + 1), 3500, x.ma->lkey };
	for (int i = 0; i < 3; i++)
		rs[i] = (struct ibv_sge){ (uintptr_t)(r + roff[i]), rlen[i],
					  x.mb->lkey };
	rc = ibv_post_recv(x.p.b.qp, &rwr, &rbad);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	TRY(run_send(&x.p, &wr, "2-SGE SEND", IBV_WC_SEND));
	TRY(wait_wc(x.p.b.cq, &wc, "3-SGE RECV"));
	TRY(expect_wc(&wc, "3-SGE RECV", IBV_WC_SUCCESS, IBV_WC_RECV, 5));
	CHECK(wc.byte_len == total, "recv wc.byte_len %u, want %zu", wc.byte_len, total);
	{
		uint8_t want[6000];

		memcpy(want, s + 10000, 2500);
		memcpy(want + 2500, s + 1, 3500);
		for (int i = 0; i < 3; i++) {
			size_t n = rlen[i] < total - pos ? rlen[i] : total - pos;
			char what[32];

			snprintf(what, sizeof(what), "recv piece %d", i);
			TRY(check_bytes(what, r + roff[i], want + pos, n, 0));
			pos += n;
		}
		/* the tail of the last piece was not written */
		CHECK(first_not(r + roff[2] + (total - 10 - 4000),
				rlen[2] - (total - 10 - 4000), PAT_GUARD) < 0,
		      "bytes past the message end were written in the last SGE");
	}
	return T_PASS;
}

static int t_rc_send_with_imm_delivers_imm_data(void)
{
	return send_recv_twice(IBV_QPT_RC, 17, 33, 1, 5000, 1);
}

static int t_rc_send_with_imm_zero_length_delivers_imm(void)
{
	struct pair p;
	uint8_t *r;
	struct ibv_mr *mr;
	struct ibv_send_wr wr = { .wr_id = 9, .num_sge = 0,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .imm_data = htonl(0xdeadbeef) };
	struct ibv_wc wc;
	int rc;

	TRY(pair_open(&p, IBV_QPT_RC, NULL));
	TRY(buf_reg(p.b.pd, 4096, MR_LOCAL, &r, &mr));
	rc = post_recv1(p.b.qp, 90, r, 4096, mr->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	TRY(run_send(&p, &wr, "0-byte SEND_WITH_IMM", IBV_WC_SEND));
	TRY(wait_wc(p.b.cq, &wc, "recv of 0-byte SEND_WITH_IMM"));
	TRY(expect_wc(&wc, "recv", IBV_WC_SUCCESS, IBV_WC_RECV, 90));
	CHECK(wc.byte_len == 0, "wc.byte_len %u, want 0", wc.byte_len);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "IBV_WC_WITH_IMM not set");
	CHECK(wc.imm_data == htonl(0xdeadbeef), "imm_data %#x, want 0xdeadbeef",
	      ntohl(wc.imm_data));
	return T_PASS;
}

static int t_rc_write_with_imm_lands_and_reports_imm(void)
{
	struct xfer x;	/* source on A, target on B */
	uint8_t *rb;
	struct ibv_mr *mrb;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .imm_data = htonl(0x12345678) };
	struct ibv_wc wc;
	int rc;

	TRY(xfer_open(&x, IBV_QPT_RC, NULL, 1 << 17, MR_LOCAL, MR_REMOTE));
	TRY(buf_reg(x.p.b.pd, 4096, MR_LOCAL, &rb, &mrb));
	fill_pattern(x.a, 1 << 17, 23);
	memset(x.b, PAT_GUARD, 1 << 17);
	memset(rb, PAT_GUARD, 4096);
	rc = post_recv1(x.p.b.qp, 77, rb, 4096, mrb->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	sge = (struct ibv_sge){ (uintptr_t)(x.a + 7), 70001, x.ma->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)(x.b + 99);
	wr.wr.rdma.rkey = x.mb->rkey;
	TRY(run_send(&x.p, &wr, "RDMA_WRITE_WITH_IMM", IBV_WC_RDMA_WRITE));
	TRY(wait_wc(x.p.b.cq, &wc, "responder completion of WRITE_WITH_IMM"));
	TRY(expect_wc(&wc, "WRITE_WITH_IMM recv", IBV_WC_SUCCESS,
		      IBV_WC_RECV_RDMA_WITH_IMM, 77));
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "IBV_WC_WITH_IMM not set");
	CHECK(wc.imm_data == htonl(0x12345678), "imm_data %#x, want 0x12345678",
	      ntohl(wc.imm_data));
	CHECK(wc.byte_len == 70001, "wc.byte_len %u, want 70001", wc.byte_len);
	CHECK(wc.qp_num == x.p.b.qp->qp_num, "wc.qp_num %#x, want %#x", wc.qp_num,
	      x.p.b.qp->qp_num);
	CHECK(first_not(rb, 4096, PAT_GUARD) < 0,
	      "WRITE_WITH_IMM wrote into the receive buffer");
	return check_bytes("write_with_imm payload", x.b + 99, x.a + 7, 70001, 64);
}

/*
 * 192 WRs (WRITE, SEND, READ in turn), all signalled, posted in lists of
 * varying length: the requester sees them complete in post order, the
 * responder receives the SENDs in order.
 */
static int t_rc_completions_arrive_in_post_order(void)
{
	enum { N = 192, MSG = 64 };
	struct xfer x;
	struct pair_opts o = { .max_send_wr = N, .max_recv_wr = N, .cqe = 2 * N };
	uint8_t *s, *d, *rb;
	struct ibv_mr *mrb;
	static struct ibv_send_wr wr[N];
	static struct ibv_sge sge[N];
	static struct ibv_wc wc[N];
	int nsend = 0, posted = 0, chunk = 1, got, rc;

	TRY(xfer_open(&x, IBV_QPT_RC, &o, N * MSG, MR_LOCAL, MR_REMOTE));
	TRY(buf_reg(x.p.b.pd, N * MSG, MR_LOCAL, &rb, &mrb));
	s = x.a;
	d = x.b;
	fill_pattern(d, N * MSG, 31);

	for (int i = 0; i < N; i++) {
		uint8_t *buf = s + i * MSG;

		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		sge[i] = (struct ibv_sge){ (uintptr_t)buf, MSG, x.ma->lkey };
		switch (i % 3) {
		case 0:
			memset(buf, (uint8_t)i, MSG);
			wr[i].opcode = IBV_WR_RDMA_WRITE;
			wr[i].wr.rdma.remote_addr = (uintptr_t)(d + i * MSG);
			wr[i].wr.rdma.rkey = x.mb->rkey;
			break;
		case 1:
			memset(buf, 0, MSG);
			memcpy(buf, &nsend, sizeof(nsend));	/* sequence number */
			nsend++;
			wr[i].opcode = IBV_WR_SEND;
			break;
		case 2:
			wr[i].opcode = IBV_WR_RDMA_READ;
			wr[i].wr.rdma.remote_addr = (uintptr_t)(d + i * MSG);
			wr[i].wr.rdma.rkey = x.mb->rkey;
			break;
		}
	}
	for (int k = 0; k < nsend; k++) {
		rc = post_recv1(x.p.b.qp, 5000 + k, rb + k * MSG, MSG, mrb->lkey);
		CHECK(!rc, "ibv_post_recv %d returned %s", k, errname(rc));
	}
	while (posted < N) {
		int n = chunk < N - posted ? chunk : N - posted;
		struct ibv_send_wr *bad = NULL;

		for (int i = 0; i < n; i++)
			wr[posted + i].next = i + 1 < n ? &wr[posted + i + 1] : NULL;
		rc = ibv_post_send(x.p.a.qp, &wr[posted], &bad);
		CHECK(!rc, "ibv_post_send of WRs %d..%d returned %s", posted,
		      posted + n - 1, errname(rc));
		posted += n;
		chunk = chunk % 7 + 1;
	}
	got = poll_n(x.p.a.cq, wc, N, CQ_TIMEOUT_MS);
	CHECK(got == N, "requester: %d of %d completions arrived", got, N);
	for (int i = 0; i < N; i++) {
		static const enum ibv_wc_opcode op[3] = {
			IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_READ };

		CHECK(wc[i].status == IBV_WC_SUCCESS, "completion %d: status %s", i,
		      wc_status(wc[i].status));
		CHECK(wc[i].wr_id == (uint64_t)i,
		      "completion %d carries wr_id %" PRIu64 ": out of post order",
		      i, wc[i].wr_id);
		CHECK(wc[i].opcode == op[i % 3], "completion %d: opcode %d, want %d",
		      i, wc[i].opcode, op[i % 3]);
	}
	got = poll_n(x.p.b.cq, wc, nsend, CQ_TIMEOUT_MS);
	CHECK(got == nsend, "responder: %d of %d receives completed", got, nsend);
	for (int k = 0; k < nsend; k++) {
		int seq;

		CHECK(wc[k].status == IBV_WC_SUCCESS && wc[k].wr_id == (uint64_t)(5000 + k),
		      "receive %d: status %s wr_id %" PRIu64, k,
		      wc_status(wc[k].status), wc[k].wr_id);
		memcpy(&seq, rb + k * MSG, sizeof(seq));
		CHECK(seq == k, "receive %d holds message %d: SENDs reordered", k, seq);
	}
	/* the WRITE before each READ had landed when the READ executed */
	for (int i = 2; i < N; i += 3) {
		char what[48];

		snprintf(what, sizeof(what), "READ %d of remote bytes", i);
		TRY(check_bytes(what, s + i * MSG, d + i * MSG, MSG, 0));
	}
	for (int i = 0; i < N; i += 3)
		CHECK(first_not(d + i * MSG, MSG, (uint8_t)i) < 0,
		      "WRITE %d did not land", i);
	return T_PASS;
}

/*
 * An RC pair and a list of four RDMA WRITEs of MSG bytes, wr_id 0..3, only
 * WR 2 signalled; the remote buffer zeroed.
 */
#define ERRLIST_MSG 64
static int errlist_open(struct xfer *x, struct ibv_send_wr *wr,
			struct ibv_sge *sge)
{
	TRY(xfer_open(x, IBV_QPT_RC, NULL, 4 * ERRLIST_MSG, MR_LOCAL, MR_REMOTE));
	memset(x->b, 0, 4 * ERRLIST_MSG);
	for (int i = 0; i < 4; i++) {
		memset(x->a + i * ERRLIST_MSG, 0x30 + i, ERRLIST_MSG);
		sge[i] = (struct ibv_sge){ (uintptr_t)(x->a + i * ERRLIST_MSG),
					   ERRLIST_MSG, x->ma->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.next = i < 3 ? &wr[i + 1] : NULL,
			.wr.rdma = {
				.remote_addr = (uintptr_t)(x->b + i * ERRLIST_MSG),
				.rkey = x->mb->rkey },
		};
	}
	wr[2].send_flags = IBV_SEND_SIGNALED;
	return T_PASS;
}

/*
 * WRs 0..3 posted as one list, WR 1 broken, only WR 2 signalled: WR 0
 * lands and completes unreported; WR 1 completes with @status although
 * unsignalled; WRs 2 and 3 are flushed (an error completes every WR,
 * signalled or not); nothing else shows up.
 */
static int errlist_expect(struct xfer *x, enum ibv_wc_status status)
{
	struct ibv_wc wc[3];
	int got = poll_n(x->p.a.cq, wc, 3, CQ_TIMEOUT_MS);

	CHECK(got == 3, "%d of 3 completions (WR 1 in error, 2 and 3 flushed)",
	      got);
	/* Seen on plain rxe (6.12, bad lkey): WR 0 flushed, not run. */
	if (!side_a.stellar && wc[0].wr_id == 0 &&
	    wc[0].status == IBV_WC_WR_FLUSH_ERR)
		return skip("%s flushes WR 0, posted before the broken WR 1, instead of running it",
			    side_a.name);
	CHECK(wc[0].wr_id == 1 && wc[1].wr_id == 2 && wc[2].wr_id == 3,
	      "completions carry wr_ids %" PRIu64 " (%s), %" PRIu64 " (%s), %" PRIu64
	      " (%s); want 1, 2, 3 (WR 0 ran, unreported)",
	      wc[0].wr_id, wc_status(wc[0].status), wc[1].wr_id,
	      wc_status(wc[1].status), wc[2].wr_id, wc_status(wc[2].status));
	/*
	 * rxe reports a bad lkey as a local QP operation error (6.1) or
	 * flushes the WR that failed as well (6.12).
	 */
	if (status == IBV_WC_LOC_PROT_ERR &&
	    (wc[0].status == IBV_WC_LOC_QP_OP_ERR ||
	     wc[0].status == IBV_WC_WR_FLUSH_ERR))
		status = wc[0].status;
	TRY(expect_wc(&wc[0], "unsignalled WR 1 in error", status, 0, 1));
	TRY(expect_wc(&wc[1], "signalled WR 2 after the error",
		      IBV_WC_WR_FLUSH_ERR, 0, 2));
	TRY(expect_wc(&wc[2], "unsignalled WR 3 after the error",
		      IBV_WC_WR_FLUSH_ERR, 0, 3));
	TRY(expect_quiet(x->p.a.cq, "after the flushed WRs"));
	CHECK(first_not(x->b, ERRLIST_MSG, 0x30) < 0,
	      "WR 0, posted before the broken one, did not land");
	CHECK(first_not(x->b + 2 * ERRLIST_MSG, 2 * ERRLIST_MSG, 0) < 0,
	      "a WR after the broken one wrote remote memory");
	return T_PASS;
}

/*
 * A bad lkey found when the WR runs (rxe, ring devices): LOC_PROT_ERR (rxe:
 * LOC_QP_OP_ERR), after the WRs before it ran.
 */
static int t_rc_unsignalled_bad_lkey_completes_and_flushes_the_rest(void)
{
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sge[4];
	struct xfer x;
	int rc;

	TRY(errlist_open(&x, wr, sge));
	sge[1].lkey ^= 0x5a5a00;
	rc = ibv_post_send(x.p.a.qp, wr, &bad);
	if (rc) {
		CHECK(bad == &wr[1], "ibv_post_send returned %s at WR %td, want WR 1",
		      errname(rc), bad ? bad - wr : -1);
		return skip("%s checks lkeys when posting (%s)", side_a.name,
			    errname(rc));
	}
	return errlist_expect(&x, IBV_WC_LOC_PROT_ERR);
}

/* A bad rkey found by the responder: REM_ACCESS_ERR, even unsignalled. */
static int t_rc_unsignalled_bad_rkey_completes_and_flushes_the_rest(void)
{
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sge[4];
	struct xfer x;
	int rc;

	TRY(errlist_open(&x, wr, sge));
	wr[1].wr.rdma.rkey ^= 0x5a;
	rc = ibv_post_send(x.p.a.qp, wr, &bad);
	CHECK(!rc, "ibv_post_send returned %s", errname(rc));
	return errlist_expect(&x, IBV_WC_REM_ACCESS_ERR);
}

static int t_rc_inline_send_copies_at_post_time(void)
{
	struct pair p;
	struct pair_opts o = { .max_inline = 256 };
	uint8_t *r;
	struct ibv_mr *mr;
	size_t sizes[3] = { 1, 64, 0 };

	TRY(pair_open(&p, IBV_QPT_RC, &o));
	CHECK(p.a.cap.max_inline_data >= 1, "QP reports max_inline_data 0");
	sizes[2] = p.a.cap.max_inline_data < 256 ? p.a.cap.max_inline_data : 256;
	TRY(buf_reg(p.b.pd, 4096, MR_LOCAL, &r, &mr));
	for (int i = 0; i < 3; i++) {
		uint8_t data[256], want[256];
		struct ibv_sge sge = { (uintptr_t)data, sizes[i], 0 /* no MR */ };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
		struct ibv_wc wc;
		char what[48];
		int rc;

		snprintf(what, sizeof(what), "inline send %zu B", sizes[i]);
		fill_pattern(data, sizeof(data), 40 + i);
		memcpy(want, data, sizeof(want));
		memset(r, PAT_GUARD, 4096);
		rc = post_recv1(p.b.qp, 600 + i, r + 64, 1024, mr->lkey);
		CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
		rc = post_send1(p.a.qp, &wr);
		CHECK(!rc, "%s: ibv_post_send returned %s", what, errname(rc));
		memset(data, 0, sizeof(data));	/* inline: already copied */
		TRY(wait_wc(p.a.cq, &wc, what));
		TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, IBV_WC_SEND, i));
		TRY(wait_wc(p.b.cq, &wc, what));
		TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, IBV_WC_RECV, 600 + i));
		CHECK(wc.byte_len == sizes[i], "%s: byte_len %u", what, wc.byte_len);
		TRY(check_bytes(what, r + 64, want, sizes[i], 64));
	}
	return T_PASS;
}

static int t_rc_inline_write_lands(void)
{
	struct pair p;
	struct pair_opts o = { .max_inline = 256 };
	uint8_t *d, data[200], want[200];
	struct ibv_mr *md;
	struct ibv_sge sge = { (uintptr_t)data, sizeof(data), 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	int rc;

	TRY(pair_open(&p, IBV_QPT_RC, &o));
	CHECK(p.a.cap.max_inline_data >= sizeof(data),
	      "QP reports max_inline_data %u < %zu", p.a.cap.max_inline_data,
	      sizeof(data));
	TRY(buf_reg(p.b.pd, 4096, MR_REMOTE, &d, &md));
	memset(d, PAT_GUARD, 4096);
	fill_pattern(data, sizeof(data), 71);
	memcpy(want, data, sizeof(want));
	wr.wr.rdma.remote_addr = (uintptr_t)(d + 501);
	wr.wr.rdma.rkey = md->rkey;
	rc = post_send1(p.a.qp, &wr);
	CHECK(!rc, "ibv_post_send returned %s", errname(rc));
	memset(data, 0, sizeof(data));
	TRY(wait_wc(p.a.cq, &wc, "inline write"));
	TRY(expect_wc(&wc, "inline write", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1));
	return check_bytes("inline write", d + 501, want, sizeof(want), 64);
}

static int atomics_supported(void)
{
	return side_a.attr.atomic_cap != IBV_ATOMIC_NONE &&
	       side_b.attr.atomic_cap != IBV_ATOMIC_NONE;
}

/*
 * An RC pair with a 4 KiB result buffer on A (@res) and a 4 KiB atomic
 * target on B (@tgt); skips when either device has no atomics.
 */
static int atomic_open(struct xfer *x, uint64_t **res, uint64_t **tgt)
{
	if (!atomics_supported())
		return skip("atomic_cap is IBV_ATOMIC_NONE (A %d, B %d)",
			    side_a.attr.atomic_cap, side_b.attr.atomic_cap);
	TRY(xfer_open(x, IBV_QPT_RC, NULL, 4096, MR_LOCAL, MR_REMOTE));
	*res = (uint64_t *)x->a;
	*tgt = (uint64_t *)x->b;
	return T_PASS;
}

/* Atomic @op on @target (in x->b) fetching into @res (in x->a). */
static int atomic_op(struct xfer *x, enum ibv_wr_opcode op, uint64_t *res,
		     uint64_t *target, uint64_t cmp_add, uint64_t swap,
		     uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)res, 8, x->ma->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.atomic = { (uintptr_t)target, cmp_add, swap, x->mb->rkey },
	};

	return run_send(&x->p, &wr, op == IBV_WR_ATOMIC_FETCH_AND_ADD ?
			"FETCH_AND_ADD" : "CMP_AND_SWP",
			op == IBV_WR_ATOMIC_FETCH_AND_ADD ?
			IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP);
}

static int t_rc_atomic_fetch_add_returns_old_and_adds(void)
{
	struct xfer x;
	uint64_t *res, *tgt;

	TRY(atomic_open(&x, &res, &tgt));
	tgt[3] = 0x1122334455667788ull;
	tgt[2] = tgt[4] = 0x0101010101010101ull;
	res[1] = 0xffffffffffffffffull;
	TRY(atomic_op(&x, IBV_WR_ATOMIC_FETCH_AND_ADD, &res[1], &tgt[3],
		      0x1000000001ull, 0, 1));
	CHECK(res[1] == 0x1122334455667788ull, "fetched %#" PRIx64
	      ", want the old value 0x1122334455667788", res[1]);
	CHECK(tgt[3] == 0x1122335455667789ull, "remote now %#" PRIx64
	      ", want 0x1122335455667789", tgt[3]);
	TRY(atomic_op(&x, IBV_WR_ATOMIC_FETCH_AND_ADD, &res[1], &tgt[3],
		      0 - 0x1122335455667789ull, 0, 2));
	CHECK(res[1] == 0x1122335455667789ull, "second fetch %#" PRIx64, res[1]);
	CHECK(tgt[3] == 0, "remote after wrap-around add %#" PRIx64 ", want 0", tgt[3]);
	CHECK(tgt[2] == 0x0101010101010101ull && tgt[4] == 0x0101010101010101ull,
	      "neighbouring words changed");
	return T_PASS;
}

static int t_rc_atomic_cmp_swap_swaps_only_on_match(void)
{
	struct xfer x;
	uint64_t *res, *tgt;

	TRY(atomic_open(&x, &res, &tgt));
	tgt[8] = 0xaaaa5555aaaa5555ull;
	/* compare mismatches: remote unchanged, old value returned */
	TRY(atomic_op(&x, IBV_WR_ATOMIC_CMP_AND_SWP, &res[0], &tgt[8],
		      0x1ull, 0x2ull, 1));
	CHECK(res[0] == 0xaaaa5555aaaa5555ull, "mismatch: fetched %#" PRIx64, res[0]);
	CHECK(tgt[8] == 0xaaaa5555aaaa5555ull,
	      "mismatch: remote changed to %#" PRIx64, tgt[8]);
	/* compare matches: swapped, old value returned */
	TRY(atomic_op(&x, IBV_WR_ATOMIC_CMP_AND_SWP, &res[1], &tgt[8],
		      0xaaaa5555aaaa5555ull, 0x0123456789abcdefull, 2));
	CHECK(res[1] == 0xaaaa5555aaaa5555ull, "match: fetched %#" PRIx64, res[1]);
	CHECK(tgt[8] == 0x0123456789abcdefull, "match: remote is %#" PRIx64
	      ", want 0x0123456789abcdef", tgt[8]);
	return T_PASS;
}

static int is_v4_mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

static int t_ud_send_recv_reports_grh_and_src_qp(void)
{
	struct xfer x;
	uint8_t *s, *r;
	size_t sizes[2] = { 1, 0 };

	TRY(xfer_open(&x, IBV_QPT_UD, NULL, 8192, MR_LOCAL, MR_LOCAL));
	sizes[1] = path_mtu_bytes();
	s = x.a;
	r = x.b;
	for (int i = 0; i < 2; i++) {
		size_t len = sizes[i];
		struct ibv_sge sge = { (uintptr_t)(s + 5), len, x.ma->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 20 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.wr.ud = { x.p.ah, x.p.b.qp->qp_num, UD_QKEY },
		};
		struct ibv_wc wc;
		char what[48];
		int rc;

		snprintf(what, sizeof(what), "UD send %zu B", len);
		fill_pattern(s + 5, len, 60 + i);
		memset(r, PAT_GUARD, 8192);
		rc = post_recv1(x.p.b.qp, 30 + i, r + 64, GRH_LEN + len, x.mb->lkey);
		CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
		TRY(run_send(&x.p, &wr, what, IBV_WC_SEND));
		TRY(wait_wc(x.p.b.cq, &wc, what));
		TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, IBV_WC_RECV, 30 + i));
		CHECK(wc.byte_len == GRH_LEN + len, "%s: byte_len %u, want %zu (40 + payload)",
		      what, wc.byte_len, GRH_LEN + len);
		CHECK(wc.src_qp == x.p.a.qp->qp_num, "%s: wc.src_qp %#x, want %#x",
		      what, wc.src_qp, x.p.a.qp->qp_num);
		CHECK(wc.qp_num == x.p.b.qp->qp_num, "%s: wc.qp_num %#x, want %#x",
		      what, wc.qp_num, x.p.b.qp->qp_num);
		CHECK(wc.wc_flags & IBV_WC_GRH, "%s: IBV_WC_GRH not set", what);
		if (is_v4_mapped(&side_a.gid)) {
			/* RoCEv2 over IPv4: the IPv4 header fills the last 20 bytes */
			uint8_t *ip = r + 64 + 20;

			CHECK(ip[0] == 0x45, "%s: GRH bytes 20.. are not an IPv4 header "
			      "(first byte %#x)", what, ip[0]);
			CHECK(!memcmp(ip + 12, &side_a.gid.raw[12], 4),
			      "%s: IPv4 source in the GRH is %u.%u.%u.%u, want the sender's",
			      what, ip[12], ip[13], ip[14], ip[15]);
		} else {
			CHECK(!memcmp(r + 64 + 8, side_a.gid.raw, 16),
			      "%s: GRH sgid is not the sender's GID", what);
		}
		TRY(check_bytes(what, r + 64 + GRH_LEN, s + 5, len, 0));
		CHECK(first_not(r, 64, PAT_GUARD) < 0 &&
		      first_not(r + 64 + GRH_LEN + len, 64, PAT_GUARD) < 0,
		      "%s: bytes outside GRH + payload were written", what);
	}
	return T_PASS;
}

static int t_ud_send_with_imm_delivers_imm_data(void)
{
	struct xfer x;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .imm_data = htonl(0xfeed0001) };
	struct ibv_wc wc;
	int rc;

	TRY(xfer_open(&x, IBV_QPT_UD, NULL, 4096, MR_LOCAL, MR_LOCAL));
	fill_pattern(x.a, 100, 3);
	sge = (struct ibv_sge){ (uintptr_t)x.a, 100, x.ma->lkey };
	wr.wr.ud.ah = x.p.ah;
	wr.wr.ud.remote_qpn = x.p.b.qp->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	rc = post_recv1(x.p.b.qp, 2, x.b, 4096, x.mb->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	TRY(run_send(&x.p, &wr, "UD SEND_WITH_IMM", IBV_WC_SEND));
	TRY(wait_wc(x.p.b.cq, &wc, "UD recv"));
	TRY(expect_wc(&wc, "UD recv", IBV_WC_SUCCESS, IBV_WC_RECV, 2));
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "IBV_WC_WITH_IMM not set");
	CHECK(wc.imm_data == htonl(0xfeed0001), "imm_data %#x", ntohl(wc.imm_data));
	CHECK(wc.byte_len == GRH_LEN + 100, "byte_len %u, want 140", wc.byte_len);
	return check_bytes("UD imm payload", x.b + GRH_LEN, x.a, 100, 0);
}

static int t_cq_event_fires_once_per_arm(void)
{
	struct xfer x;
	struct pair *p = &x.p;
	struct ibv_comp_channel *ch;
	int cookie = 0;
	struct pair_opts o = { 0 };
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct pollfd pfd;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;
	int rc;

	/* the evented CQ is on device A: the receiving end is reversed onto it */
	ch = track(R_CHAN, ibv_create_comp_channel(side_a.ctx), 0);
	CHECK(ch, "ibv_create_comp_channel failed: %s", strerror(errno));
	o.reverse = 1;
	o.chan_b = ch;
	o.cq_ctx_b = &cookie;
	TRY(xfer_open(&x, IBV_QPT_RC, &o, 4096, MR_LOCAL, MR_LOCAL));
	sge = (struct ibv_sge){ (uintptr_t)x.a, 32, x.ma->lkey };
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };

	rc = ibv_req_notify_cq(p->b.cq, 0);
	CHECK(!rc, "ibv_req_notify_cq returned %s", errname(rc));
	CHECK(poll(&pfd, 1, 0) == 0, "channel readable before any completion");
	for (int k = 0; k < 2; k++) {
		rc = post_recv1(p->b.qp, 50 + k, x.b + 64 * k, 64, x.mb->lkey);
		CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	}
	wr.wr_id = 1;
	TRY(run_send(p, &wr, "first SEND", IBV_WC_SEND));
	rc = poll(&pfd, 1, CQ_TIMEOUT_MS);
	CHECK(rc == 1, "no event on the completion channel within %d ms", CQ_TIMEOUT_MS);
	rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(!rc, "ibv_get_cq_event failed: %s", strerror(errno));
	CHECK(ev_cq == p->b.cq, "event names CQ %p, want %p", (void *)ev_cq,
	      (void *)p->b.cq);
	CHECK(ev_ctx == &cookie, "event carries cq_context %p, want %p", ev_ctx,
	      (void *)&cookie);
	ibv_ack_cq_events(ev_cq, 1);
	TRY(wait_wc(p->b.cq, &wc, "completion after the event"));
	TRY(expect_wc(&wc, "evented recv", IBV_WC_SUCCESS, IBV_WC_RECV, 50));

	/* not re-armed: the next completion raises no event */
	wr.wr_id = 2;
	TRY(run_send(p, &wr, "second SEND", IBV_WC_SEND));
	TRY(wait_wc(p->b.cq, &wc, "second recv"));
	TRY(expect_wc(&wc, "second recv", IBV_WC_SUCCESS, IBV_WC_RECV, 51));
	CHECK(poll(&pfd, 1, QUIET_MS) == 0, "event raised although the CQ was not re-armed");
	return T_PASS;
}

/* Post RDMA WRITEs wr_id0.. of MSG bytes each, every one its own pattern. */
static int resize_post_writes(struct xfer *x, uint64_t wr_id0, int n, int msg)
{
	for (int i = 0; i < n; i++) {
		uint64_t id = wr_id0 + i;
		uint8_t *buf = x->a + id * msg;
		struct ibv_sge sge = { (uintptr_t)buf, msg, x->ma->lkey };
		struct ibv_send_wr wr = {
			.wr_id = id, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)(x->b + id * msg),
				     .rkey = x->mb->rkey },
		};
		int rc;

		memset(buf, (uint8_t)(id + 1), msg);
		rc = post_send1(x->p.a.qp, &wr);
		CHECK(!rc, "ibv_post_send of WRITE %" PRIu64 " returned %s", id,
		      errname(rc));
	}
	return T_PASS;
}

/* Wait for the WRITEs wr_id0.. in post order; their bytes landed. */
static int resize_reap_writes(struct xfer *x, uint64_t wr_id0, int n, int msg)
{
	static struct ibv_wc wc[64];
	int got = poll_n(x->p.a.cq, wc, n, CQ_TIMEOUT_MS);

	CHECK(got == n, "%d of %d completions from WRITE %" PRIu64 " on", got,
	      n, wr_id0);
	for (int i = 0; i < n; i++) {
		uint64_t id = wr_id0 + i;
		char what[48];

		snprintf(what, sizeof(what), "WRITE %" PRIu64, id);
		TRY(expect_wc(&wc[i], what, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, id));
		CHECK(first_not(x->b + id * msg, msg, (uint8_t)(id + 1)) < 0,
		      "WRITE %" PRIu64 " did not land", id);
	}
	return T_PASS;
}

/*
 * ibv_resize_cq keeps what the CQ holds: completions not yet polled when
 * it grows come out after it, in order; shrinking below them is EINVAL;
 * a shrunk and a grown CQ both carry traffic.
 */
static int t_cq_resize_keeps_unpolled_completions(void)
{
	enum { N = 6, MSG = 32, BIG = 40, TOTAL = 48 };
	struct pair_opts o = { .max_send_wr = BIG, .max_recv_wr = 4, .cqe = 8 };
	struct ibv_cq *cq;
	struct xfer x;
	int rc;

	TRY(xfer_open(&x, IBV_QPT_RC, &o, TOTAL * MSG, MR_LOCAL, MR_REMOTE));
	cq = x.p.a.cq;
	memset(x.b, 0, TOTAL * MSG);
	TRY(resize_post_writes(&x, 0, N, MSG));
	/* Let all N reach the CQ, unpolled (rxe loopback: milliseconds). */
	usleep(1500 * 1000);
	rc = ibv_resize_cq(cq, 2);
	if (rc == EOPNOTSUPP)
		return skip("ibv_resize_cq: EOPNOTSUPP on %s", side_a.name);
	CHECK(rc == EINVAL, "resize to 2 with %d completions unpolled returned %s, want EINVAL",
	      N, errname(rc));
	rc = ibv_resize_cq(cq, 32);
	CHECK(!rc, "resize to 32 with %d completions unpolled returned %s", N,
	      errname(rc));
	CHECK(cq->cqe >= 32, "cq->cqe %d after resize to 32", cq->cqe);
	TRY(resize_reap_writes(&x, 0, N, MSG));
	TRY(expect_quiet(cq, "after the completions moved by resize"));

	rc = ibv_resize_cq(cq, 1);
	CHECK(!rc, "resize of an empty CQ to 1 returned %s", errname(rc));
	CHECK(cq->cqe >= 1, "cq->cqe %d after resize to 1", cq->cqe);
	TRY(resize_post_writes(&x, N, 1, MSG));
	TRY(resize_reap_writes(&x, N, 1, MSG));

	rc = ibv_resize_cq(cq, BIG);
	CHECK(!rc, "resize to %d returned %s", BIG, errname(rc));
	CHECK(cq->cqe >= BIG, "cq->cqe %d after resize to %d", cq->cqe, BIG);
	TRY(resize_post_writes(&x, N + 1, BIG, MSG));
	TRY(resize_reap_writes(&x, N + 1, BIG, MSG));
	return T_PASS;
}

static int t_uc_write_lands_byte_exact(void)
{
	static const size_t sz[] = { 1, 4097, 65536 };
	struct xfer x;
	uint8_t *s, *d;

	TRY(xfer_open(&x, IBV_QPT_UC, NULL, 1 << 17, MR_LOCAL,
		      MR_LOCAL | IBV_ACCESS_REMOTE_WRITE));
	s = x.a;
	d = x.b;
	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		uint64_t end;
		char what[48];

		snprintf(what, sizeof(what), "UC write %zu B", sz[i]);
		fill_pattern(s + 1, sz[i], 90 + i);
		memset(d, PAT_GUARD, 1 << 17);
		TRY(rdma_write(&x.p, i, s + 1, sz[i], x.ma->lkey, (uintptr_t)(d + 64),
			       x.mb->rkey));
		/*
		 * UC has no ACK: the sender's completion says the packets
		 * left, so wait for the bytes themselves (byte by byte: see
		 * first_diff()).
		 */
		end = now_ms() + CQ_TIMEOUT_MS;
		while (first_diff(d + 64, s + 1, sz[i]) < sz[i] && now_ms() < end)
			usleep(1000);
		TRY(check_bytes(what, d + 64, s + 1, sz[i], 64));
	}
	return T_PASS;
}

static int t_uc_send_recv_delivers_bytes(void)
{
	return send_recv_twice(IBV_QPT_UC, 8, 3000, 0, 17, 1);
}

/*
 * The error state flushes every receive, in post order, as rxe does (its
 * completions are in the CQ's ring, whatever the QP does next); RESET
 * leaves nothing more, and the QP, connected again, takes a SEND.
 */
static int t_qp_reset_after_flushes_reconnects_and_carries_a_send(void)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	struct xfer x;
	int rc;

	if (!side_b.stellar)
		return skip("%s is not a Stellar device", side_b.name);
	TRY(xfer_open(&x, IBV_QPT_RC, NULL, 1 << 16, MR_LOCAL, MR_LOCAL));
	for (int i = 0; i < 3; i++) {
		rc = post_recv1(x.p.b.qp, 500 + i, x.b + 1024 * i, 1024, x.mb->lkey);
		CHECK(!rc, "ibv_post_recv: %s", errname(rc));
	}
	rc = ibv_modify_qp(x.p.b.qp, &at, IBV_QP_STATE);
	CHECK(!rc, "modify_qp to ERR: %s", errname(rc));
	for (int i = 0; i < 3; i++) {
		TRY(wait_wc(x.p.b.cq, &wc, "a flush"));
		TRY(expect_wc(&wc, "the flushes, in post order", IBV_WC_WR_FLUSH_ERR,
			      IBV_WC_RECV, 500 + i));
	}
	at.qp_state = IBV_QPS_RESET;
	rc = ibv_modify_qp(x.p.b.qp, &at, IBV_QP_STATE);
	CHECK(!rc, "modify_qp to RESET: %s", errname(rc));
	TRY(expect_quiet(x.p.b.cq, "the CQ after RESET"));
	TRY(to_init(&x.p.b, IBV_QPT_RC));
	TRY(to_rtr_rts(&x.p.b, IBV_QPT_RC, &x.p.a));
	fill_pattern(x.a, 4096, 77);
	return send_recv_check(&x, 0, 3000, 7, 0);
}

static int t_qp_query_reports_rts_and_caps(void)
{
	struct pair p;
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;
	int rc;

	TRY(pair_open(&p, IBV_QPT_RC, NULL));
	rc = ibv_query_qp(p.a.qp, &at, IBV_QP_STATE | IBV_QP_CAP | IBV_QP_DEST_QPN, &ia);
	CHECK(!rc, "ibv_query_qp returned %s", errname(rc));
	CHECK(at.qp_state == IBV_QPS_RTS, "qp_state %d, want RTS (%d)", at.qp_state,
	      IBV_QPS_RTS);
	CHECK(at.dest_qp_num == p.b.qp->qp_num, "dest_qp_num %#x, want %#x",
	      at.dest_qp_num, p.b.qp->qp_num);
	CHECK(at.cap.max_send_wr >= 64 && at.cap.max_send_sge >= 4,
	      "queried caps smaller than requested (wr %u sge %u)",
	      at.cap.max_send_wr, at.cap.max_send_sge);
	return T_PASS;
}

static int t_mr_registered_after_qp_use_works(void)
{
	struct xfer x;	/* the first MRs: source on A, target on B */
	struct pair *p = &x.p;
	uint8_t *s1, *d1, *s2, *d2;
	struct ibv_mr *ms2, *md2;

	TRY(xfer_open(&x, IBV_QPT_RC, NULL, 8192, MR_LOCAL, MR_REMOTE));
	s1 = x.a;
	d1 = x.b;
	fill_pattern(s1, 8192, 1);
	TRY(rdma_write(p, 1, s1, 8192, x.ma->lkey, (uintptr_t)d1, x.mb->rkey));
	TRY(check_bytes("first write", d1, s1, 8192, 0));

	/* new memory, registered on both sides after the QP carried traffic */
	s2 = buf_alloc(3 << 16);
	d2 = buf_alloc(3 << 16);
	CHECK(s2 && d2, "buffer allocation failed");
	ms2 = mr_reg(p->a.pd, s2 + 4096, 2 << 16, MR_LOCAL);
	md2 = mr_reg(p->b.pd, d2 + 100, 2 << 16, MR_REMOTE);
	CHECK(ms2 && md2, "late ibv_reg_mr failed: %s", strerror(errno));
	fill_pattern(s2 + 4096, 2 << 16, 2);
	memset(d2, PAT_GUARD, 3 << 16);
	TRY(rdma_write(p, 2, s2 + 4096, 2 << 16, ms2->lkey, (uintptr_t)(d2 + 100),
		       md2->rkey));
	TRY(check_bytes("write with late MRs", d2 + 100, s2 + 4096, 2 << 16, 100));
	/* and the old MRs still work */
	fill_pattern(s1, 8192, 3);
	TRY(rdma_write(p, 3, s1, 8192, x.ma->lkey, (uintptr_t)d1, x.mb->rkey));
	return check_bytes("write with the first MRs again", d1, s1, 8192, 0);
}

static int t_mr_pages_touched_after_registration_are_seen(void)
{
	/* register untouched (never-faulted) anonymous memory, then write it */
	struct pair p;
	size_t len = 1 << 18;
	uint8_t *s, *d;
	struct ibv_mr *ms, *md;

	TRY(pair_open(&p, IBV_QPT_RC, NULL));
	s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(s != MAP_FAILED && d != MAP_FAILED, "mmap failed");
	track(R_MAP, s, len);
	track(R_MAP, d, len);
	ms = mr_reg(p.a.pd, s, len, MR_LOCAL);
	md = mr_reg(p.b.pd, d, len, MR_REMOTE);
	CHECK(ms && md, "ibv_reg_mr failed: %s", strerror(errno));
	fill_pattern(s, len, 4);	/* first touch after registration */
	TRY(rdma_write(&p, 1, s, len, ms->lkey, (uintptr_t)d, md->rkey));
	return check_bytes("write of memory first touched after reg_mr", d, s, len, 0);
}

/* ================================================== registration QPs */

/*
 * A Stellar PD registers memory through a parent RC QP connected to itself
 * (a kernel QP of the parent, comm "[stellar]", lqpn == rqpn).  Tenants
 * share the parent and its GIDs: none of them may be able to disturb it.
 */
struct reg_qp {
	uint32_t qpn;
	uint32_t rq_psn;
	char state[16];
};

/* Value of "KEY VALUE" in a line of `rdma resource show qp`, or NULL. */
static const char *res_field(char *const *tok, int n, const char *key)
{
	for (int i = 0; i + 1 < n; i++)
		if (!strcmp(tok[i], key))
			return tok[i + 1];
	return NULL;
}

/* The registration QPs on B's parent, from `rdma resource show qp`. */
static int reg_qps_of_parent(const char *parent, struct reg_qp *q, int max,
			     int *n)
{
	char cmd[128], line[1024];
	FILE *f;

	*n = 0;
	snprintf(cmd, sizeof(cmd), "rdma resource show qp link %s/1 2>&1", parent);
	f = popen(cmd, "r");
	CHECK(f, "popen(%s) failed", cmd);
	while (fgets(line, sizeof(line), f)) {
		char *tok[64], *save = NULL, *t;
		const char *lq, *rq, *type, *st, *psn, *comm;
		int nt = 0;

		for (t = strtok_r(line, " \t\n", &save); t && nt < 64;
		     t = strtok_r(NULL, " \t\n", &save))
			tok[nt++] = t;
		lq = res_field(tok, nt, "lqpn");
		rq = res_field(tok, nt, "rqpn");
		type = res_field(tok, nt, "type");
		st = res_field(tok, nt, "state");
		psn = res_field(tok, nt, "rq-psn");
		comm = res_field(tok, nt, "comm");
		if (!lq || !rq || !type || !st || !psn || !comm ||
		    strcmp(type, "RC") || strcmp(lq, rq) || !strstr(comm, "stellar"))
			continue;
		if (*n < max) {
			q[*n].qpn = strtoul(lq, NULL, 0);
			q[*n].rq_psn = strtoul(psn, NULL, 0);
			snprintf(q[*n].state, sizeof(q[*n].state), "%s", st);
			printf("# registration QP %u state %s rq-psn %#x\n",
			       q[*n].qpn, q[*n].state, q[*n].rq_psn);
			(*n)++;
		}
	}
	pclose(f);
	return T_PASS;
}

/*
 * An RC QP on A aimed at QP @qpn from and to A's GID index 0 (the GID the
 * registration QPs use), starting at PSN @psn: one RDMA WRITE of 1 byte
 * into a QP that grants no remote access.  Returns the completion status
 * (or -1 if none came) in @status.
 */
static int spray_one(uint32_t qpn, uint32_t psn, const union ibv_gid *gid0,
		     void *src, uint32_t lkey, int *status)
{
	static const struct pair_opts o = { .cqe = 8 };
	struct ibv_qp_attr at = { 0 };
	struct ibv_wc wc;
	struct end e;
	int rc;

	TRY(create_end(&e, &side_a, IBV_QPT_RC, &o, NULL, NULL, NULL));
	TRY(to_init(&e, IBV_QPT_RC));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = path_mtu();
	at.dest_qp_num = qpn;
	at.rq_psn = 0;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;
	at.ah_attr.is_global = 1;
	at.ah_attr.grh.dgid = *gid0;
	at.ah_attr.grh.sgid_index = 0;
	at.ah_attr.grh.hop_limit = 64;
	at.ah_attr.port_num = ib_port;
	rc = ibv_modify_qp(e.qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	CHECK(!rc, "attacker modify_qp RTR (dest %u) failed: %s", qpn, errname(rc));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = psn;
	at.timeout = 10;
	at.retry_cnt = 1;
	at.rnr_retry = 0;
	at.max_rd_atomic = 1;
	rc = ibv_modify_qp(e.qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!rc, "attacker modify_qp RTS failed: %s", errname(rc));

	struct ibv_sge sge = { (uintptr_t)src, 1, lkey };
	struct ibv_send_wr wr = {
		.wr_id = psn, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 },
	};
	rc = post_send1(e.qp, &wr);
	CHECK(!rc, "attacker ibv_post_send failed: %s", errname(rc));
	*status = poll_n(e.cq, &wc, 1, 5000) == 1 ? (int)wc.status : -1;
	ibv_destroy_qp(e.qp);
	untrack(e.qp);
	ibv_destroy_cq(e.cq);
	untrack(e.cq);
	return T_PASS;
}

static int t_mr_reg_works_after_packets_sprayed_at_reg_qps(void)
{
	struct reg_qp q[32], q2[32];
	char path[256], parent[64] = "";
	union ibv_gid gid0;
	struct ibv_pd *pd2;
	struct ibv_mr *m, *src_mr;
	uint8_t *src, *b;
	struct xfer x;
	int n, n2, distinct = 0;
	FILE *f;

	if (!side_b.stellar)
		return skip("%s is not a Stellar device", side_b.name);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent", side_b.name);
	f = fopen(path, "r");
	CHECK(f && fscanf(f, "%63s", parent) == 1, "cannot read %s", path);
	fclose(f);
	CHECK(!ibv_query_gid(side_a.ctx, ib_port, 0, &gid0), "ibv_query_gid(0) failed");

	/* two victim PDs on B, each with its registration QP */
	TRY(buf_reg(side_b.pd, 4096, MR_REMOTE, &b, &m));
	pd2 = track(R_PD, ibv_alloc_pd(side_b.ctx), 0);
	CHECK(pd2, "ibv_alloc_pd failed: %s", strerror(errno));
	CHECK(mr_reg(pd2, b, 4096, MR_LOCAL), "ibv_reg_mr in a second PD failed: %s",
	      strerror(errno));
	TRY(buf_reg(side_a.pd, 4096, MR_LOCAL, &src, &src_mr));

	TRY(reg_qps_of_parent(parent, q, 32, &n));
	CHECK(n >= 2, "%d registration QPs on %s, want >= 2 (rdma resource show qp)",
	      n, parent);
	for (int i = 0; i < n; i++)
		CHECK(!strcmp(q[i].state, "RTS"), "registration QP %u is %s before the spray",
		      q[i].qpn, q[i].state);

	/* a tenant that knows each QPN and even its PSN */
	for (int i = 0; i < n; i++) {
		const uint32_t psns[] = { 0x5a5a, q[i].rq_psn, 0, q[i].rq_psn + 1 };

		for (size_t k = 0; k < sizeof(psns) / sizeof(psns[0]); k++) {
			int st = -1;

			TRY(spray_one(q[i].qpn, psns[k] & 0xffffff, &gid0, src,
				      src_mr->lkey, &st));
			printf("# write to QP %u at PSN %#x: attacker completion %s\n",
			       q[i].qpn, psns[k] & 0xffffff,
			       st < 0 ? "none" : wc_status(st));
		}
	}

	TRY(reg_qps_of_parent(parent, q2, 32, &n2));
	for (int i = 0; i < n; i++) {
		int found = 0;

		for (int k = 0; k < n2; k++) {
			if (q2[k].qpn != q[i].qpn)
				continue;
			found = 1;
			CHECK(!strcmp(q2[k].state, "RTS"),
			      "registration QP %u is %s after packets from a tenant",
			      q[i].qpn, q2[k].state);
		}
		CHECK(found, "registration QP %u is gone after packets from a tenant",
		      q[i].qpn);
	}

	/* the victim's next registration works and carries data */
	TRY(xfer_open(&x, IBV_QPT_RC, NULL, 65536, MR_LOCAL, MR_REMOTE));
	fill_pattern(x.a, 65536, 11);
	memset(x.b, PAT_GUARD, 65536);
	TRY(rdma_write(&x.p, 1, x.a, 65536, x.ma->lkey, (uintptr_t)x.b, x.mb->rkey));
	TRY(check_bytes("write into an MR registered after the spray", x.b, x.a,
			65536, 0));

	/* no PSN to guess from one QP to the next */
	for (int i = 0; i < n; i++) {
		CHECK(q[i].rq_psn != 0x5a5a, "registration QP %u starts at the fixed PSN 0x5a5a",
		      q[i].qpn);
		distinct += q[i].rq_psn != q[0].rq_psn;
	}
	CHECK(distinct, "all %d registration QPs start at the same PSN %#x", n, q[0].rq_psn);
	return T_PASS;
}

/* ======================================================= negative tests */

/*
 * Fixture for rejected work requests: a connected RC pair, A's source MR
 * (local write), A's read-only MR (no access flags), B's target MR (all
 * remote access, filled with PAT_GUARD) and one receive (wr_id 0xB0)
 * posted on B.
 */
struct neg {
	struct pair p;
	uint8_t *src, *ro, *dst, *rbuf;
	struct ibv_mr *msrc, *mro, *mdst, *mrbuf;
};

#define NEG_LEN 65536

static int neg_open(struct neg *n, const struct pair_opts *o)
{
	int rc;

	TRY(pair_open(&n->p, IBV_QPT_RC, o));
	n->src = buf_alloc(NEG_LEN);
	n->ro = buf_alloc(NEG_LEN);
	n->dst = buf_alloc(NEG_LEN);
	n->rbuf = buf_alloc(NEG_LEN);
	CHECK(n->src && n->ro && n->dst && n->rbuf, "buffer allocation failed");
	fill_pattern(n->src, NEG_LEN, 1234);
	memset(n->ro, 0x5A, NEG_LEN);
	memset(n->dst, PAT_GUARD, NEG_LEN);
	memset(n->rbuf, PAT_GUARD, NEG_LEN);
	n->msrc = mr_reg(n->p.a.pd, n->src, NEG_LEN, MR_LOCAL);
	n->mro = mr_reg(n->p.a.pd, n->ro, NEG_LEN, 0);
	n->mdst = mr_reg(n->p.b.pd, n->dst, NEG_LEN, MR_REMOTE);
	n->mrbuf = mr_reg(n->p.b.pd, n->rbuf, NEG_LEN, MR_LOCAL);
	CHECK(n->msrc && n->mro && n->mdst && n->mrbuf, "ibv_reg_mr failed: %s",
	      strerror(errno));
	rc = post_recv1(n->p.b.qp, 0xB0, n->rbuf, 4096, n->mrbuf->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	return T_PASS;
}

/* After a rejection: the QP still carries a SEND, into recv @want_wr_id. */
static int neg_qp_still_works(struct neg *n, uint64_t want_wr_id)
{
	struct ibv_sge sge = { (uintptr_t)n->src, 48, n->msrc->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x600D, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_wc wc;

	TRY(run_send(&n->p, &wr, "good SEND after the rejected WR", IBV_WC_SEND));
	TRY(wait_wc(n->p.b.cq, &wc, "recv of the good SEND"));
	TRY(expect_wc(&wc, "recv of the good SEND", IBV_WC_SUCCESS, IBV_WC_RECV,
		      want_wr_id));
	CHECK(wc.byte_len == 48, "recv byte_len %u, want 48 (the good SEND)",
	      wc.byte_len);
	return T_PASS;
}

/* The refused WR moved no byte: B's memory, A's read-only buffer. */
static int neg_nothing_moved(struct neg *n)
{
	CHECK(first_not(n->dst, NEG_LEN, PAT_GUARD) < 0,
	      "responder memory changed at offset %ld: the refused WR was executed",
	      first_not(n->dst, NEG_LEN, PAT_GUARD));
	CHECK(first_not(n->ro, NEG_LEN, 0x5A) < 0,
	      "requester read-only buffer changed at offset %ld",
	      first_not(n->ro, NEG_LEN, 0x5A));
	return T_PASS;
}

/*
 * @wr (one WR) must be refused by ibv_post_send with EINVAL and *bad_wr ==
 * @wr, as the provider checks its shape (SGE count, inline length against
 * the QP's caps) before it reaches the queue; nothing may be sent (no
 * completion on either side, B's memory and A's read-only buffer
 * untouched), and the QP must still work afterwards.
 */
static int neg_expect_send_rejected(struct neg *n, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	wr->next = NULL;
	rc = ibv_post_send(n->p.a.qp, wr, &bad);
	CHECK(rc == EINVAL, "ibv_post_send returned %s, want EINVAL", errname(rc));
	CHECK(bad == wr, "*bad_wr is %p, want the rejected WR %p", (void *)bad,
	      (void *)wr);
	TRY(expect_quiet(n->p.a.cq, "requester CQ after the rejected WR"));
	TRY(expect_quiet(n->p.b.cq, "responder CQ after the rejected WR"));
	TRY(neg_nothing_moved(n));
	return neg_qp_still_works(n, 0xB0);
}

/*
 * @wr (one WR) names memory it may not use: the device checks it when it
 * takes the WR, as rxe does, so ibv_post_send succeeds and the WR
 * completes with IBV_WC_LOC_PROT_ERR (signalled or not) having moved no
 * byte; the QP is in the error state, so a SEND posted after is flushed.
 */
static int neg_expect_send_fails(struct neg *n, struct ibv_send_wr *wr)
{
	struct ibv_sge sge = { (uintptr_t)n->src, 48, n->msrc->lkey };
	struct ibv_send_wr after = { .wr_id = 0xAF7, .sg_list = &sge,
				     .num_sge = 1, .opcode = IBV_WR_SEND,
				     .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	int rc;

	wr->send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
	wr->next = NULL;
	rc = post_send1(n->p.a.qp, wr);
	CHECK(!rc, "ibv_post_send returned %s, want 0 (checked when taken)",
	      errname(rc));
	TRY(wait_wc(n->p.a.cq, &wc, "the refused WR"));
	TRY(expect_wc(&wc, "the refused WR (unsignalled)", IBV_WC_LOC_PROT_ERR,
		      0, 0xBAD));
	TRY(expect_quiet(n->p.b.cq, "responder CQ after the refused WR"));
	TRY(neg_nothing_moved(n));
	rc = post_send1(n->p.a.qp, &after);
	CHECK(!rc, "ibv_post_send after the refused WR returned %s", errname(rc));
	TRY(wait_wc(n->p.a.cq, &wc, "the SEND after the refused WR"));
	TRY(expect_wc(&wc, "the SEND after the refused WR", IBV_WC_WR_FLUSH_ERR,
		      0, 0xAF7));
	return expect_quiet(n->p.b.cq, "responder CQ after the flushed SEND");
}

static int neg_write_wr(struct neg *n, struct ibv_send_wr *wr, struct ibv_sge *sge,
			uint64_t laddr, uint32_t len, uint32_t lkey)
{
	*sge = (struct ibv_sge){ laddr, len, lkey };
	*wr = (struct ibv_send_wr){ .wr_id = 0xBAD, .sg_list = sge, .num_sge = 1,
				    .opcode = IBV_WR_RDMA_WRITE };
	wr->wr.rdma.remote_addr = (uintptr_t)n->dst;
	wr->wr.rdma.rkey = n->mdst->rkey;
	return T_PASS;
}

/* A one-SGE RDMA WRITE of @len bytes at @laddr (@lkey) must fail. */
static int neg_expect_write_fails(struct neg *n, uint64_t laddr, uint32_t len,
				  uint32_t lkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	neg_write_wr(n, &wr, &sge, laddr, len, lkey);
	return neg_expect_send_fails(n, &wr);
}

static int t_send_with_lkey_of_other_pd_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_pd *pd2;
	struct ibv_mr *m2;

	TRY(neg_open(&n, NULL));
	pd2 = track(R_PD, ibv_alloc_pd(side_a.ctx), 0);
	CHECK(pd2, "ibv_alloc_pd failed: %s", strerror(errno));
	m2 = mr_reg(pd2, n.src, NEG_LEN, MR_LOCAL);
	CHECK(m2, "ibv_reg_mr in the second PD failed: %s", strerror(errno));
	return neg_expect_write_fails(&n, (uintptr_t)n.src, 64, m2->lkey);
}

static int t_send_with_unknown_lkey_fails_loc_prot_err(void)
{
	struct neg n;

	TRY(neg_open(&n, NULL));
	return neg_expect_write_fails(&n, (uintptr_t)n.src, 64,
					 n.msrc->lkey ^ 0x5a5a00);
}

static int t_send_with_non_public_flags_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	TRY(neg_open(&n, NULL));
	neg_write_wr(&n, &wr, &sge, (uintptr_t)n.src, 64, n.msrc->lkey);
	wr.send_flags |= IBV_SEND_IP_CSUM;	/* raw-packet only */
	return neg_expect_send_fails(&n, &wr);
}

static int t_send_with_sge_past_mr_end_fails_loc_prot_err(void)
{
	struct neg n;

	TRY(neg_open(&n, NULL));
	return neg_expect_write_fails(&n, (uintptr_t)(n.src + NEG_LEN - 63), 64,
					 n.msrc->lkey);
}

static int t_send_with_sge_before_mr_start_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_mr *inner;

	TRY(neg_open(&n, NULL));
	/* an MR that starts in the middle of mapped memory */
	inner = mr_reg(n.p.a.pd, n.src + 8192, 8192, MR_LOCAL);
	CHECK(inner, "ibv_reg_mr failed: %s", strerror(errno));
	return neg_expect_write_fails(&n, (uintptr_t)(n.src + 8192 - 1), 16,
					 inner->lkey);
}

static int t_send_op_with_sge_past_mr_end_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_sge sge = { 0 };
	struct ibv_send_wr wr = { .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };

	TRY(neg_open(&n, NULL));
	sge = (struct ibv_sge){ (uintptr_t)(n.src + NEG_LEN - 10), 11, n.msrc->lkey };
	return neg_expect_send_fails(&n, &wr);
}

static int t_rdma_read_into_mr_without_local_write_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	TRY(neg_open(&n, NULL));
	sge = (struct ibv_sge){ (uintptr_t)n.ro, 128, n.mro->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ };
	wr.wr.rdma.remote_addr = (uintptr_t)n.dst;
	wr.wr.rdma.rkey = n.mdst->rkey;
	return neg_expect_send_fails(&n, &wr);
}

static int t_atomic_into_mr_without_local_write_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	if (!atomics_supported())
		return skip("atomic_cap is IBV_ATOMIC_NONE");
	TRY(neg_open(&n, NULL));
	sge = (struct ibv_sge){ (uintptr_t)n.ro, 8, n.mro->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	wr.wr.atomic.remote_addr = (uintptr_t)(n.dst + 256);
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.rkey = n.mdst->rkey;
	return neg_expect_send_fails(&n, &wr);
}

/* @ns SGEs of @len bytes each, back to back from @base, in fresh memory. */
static struct ibv_sge *sge_list(uint32_t ns, uint8_t *base, uint32_t len,
				uint32_t lkey)
{
	struct ibv_sge *sge = (struct ibv_sge *)buf_alloc(ns * sizeof(*sge) + 4096);

	for (uint32_t i = 0; sge && i < ns; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)(base + len * i), len, lkey };
	return sge;
}

static int t_post_send_rejects_num_sge_above_cap(void)
{
	struct neg n;
	struct pair_opts o = { .max_send_sge = 2 };
	struct ibv_sge *sge;
	struct ibv_send_wr wr;
	uint32_t ns;

	TRY(neg_open(&n, &o));
	ns = n.p.a.cap.max_send_sge + 1;
	sge = sge_list(ns, n.src, 16, n.msrc->lkey);
	CHECK(sge, "buffer allocation failed");
	wr = (struct ibv_send_wr){ .wr_id = 0xBAD, .sg_list = sge, .num_sge = ns,
				   .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = (uintptr_t)n.dst;
	wr.wr.rdma.rkey = n.mdst->rkey;
	return neg_expect_send_rejected(&n, &wr);
}

static int t_post_send_rejects_inline_above_max(void)
{
	struct neg n;
	struct pair_opts o = { .max_inline = 256 };
	uint8_t data[2048];
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE };
	uint32_t max;

	TRY(neg_open(&n, &o));
	max = n.p.a.cap.max_inline_data;
	CHECK(max + 1 <= sizeof(data), "QP max_inline_data %u too large for the test", max);
	memset(data, 0x33, sizeof(data));
	sge = (struct ibv_sge){ (uintptr_t)data, max + 1, 0 };
	return neg_expect_send_rejected(&n, &wr);
}

static int t_send_with_lkey_of_deregistered_mr_fails_loc_prot_err(void)
{
	struct neg n;
	uint8_t *b;
	struct ibv_mr *m;
	uint32_t lkey;
	int rc;

	TRY(neg_open(&n, NULL));
	b = buf_alloc(8192);
	CHECK(b, "buffer allocation failed");
	m = ibv_reg_mr(n.p.a.pd, b, 8192, MR_LOCAL);
	CHECK(m, "ibv_reg_mr failed: %s", strerror(errno));
	lkey = m->lkey;
	/* the MR works before it is deregistered */
	fill_pattern(b, 64, 5);
	rc = rdma_write(&n.p, 1, b, 64, lkey, (uintptr_t)n.dst, n.mdst->rkey);
	if (rc != T_PASS) {
		ibv_dereg_mr(m);
		return rc;
	}
	CHECK(!memcmp(n.dst, b, 64), "write through the live lkey did not land");
	memset(n.dst, PAT_GUARD, 64);
	rc = ibv_dereg_mr(m);
	CHECK(!rc, "ibv_dereg_mr returned %s", errname(rc));
	return neg_expect_write_fails(&n, (uintptr_t)b, 64, lkey);
}

/*
 * A list [good, bad, good], all signalled: ibv_post_send takes it (the
 * keys are checked as the WRs are taken, as on rxe); the first runs (its
 * bytes land), the bad one completes IBV_WC_LOC_PROT_ERR, the third is
 * flushed and writes nothing.
 */
static int t_send_list_with_bad_wr_runs_the_ones_before_it(void)
{
	static const enum ibv_wc_status want[3] = {
		IBV_WC_SUCCESS, IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR,
	};
	struct neg n;
	struct ibv_sge sge[3];
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_wc wc;
	int rc;

	TRY(neg_open(&n, NULL));
	memset(n.src, 0x11, 16);
	memset(n.src + 64, 0x22, 16);
	memset(n.src + 128, 0x33, 16);
	for (int i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)(n.src + 64 * i), 16,
					   n.msrc->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .next = i < 2 ? &wr[i + 1] : NULL,
			.sg_list = &sge[i], .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		};
		wr[i].wr.rdma.remote_addr = (uintptr_t)(n.dst + 64 * i);
		wr[i].wr.rdma.rkey = n.mdst->rkey;
	}
	sge[1].lkey = n.msrc->lkey ^ 0x5a5a00;	/* the bad one */
	rc = ibv_post_send(n.p.a.qp, &wr[0], &bad);
	CHECK(!rc, "ibv_post_send returned %s (bad_wr WR %ld), want 0", errname(rc),
	      bad ? (long)(bad - wr) : -1L);
	for (int i = 0; i < 3; i++) {
		TRY(wait_wc(n.p.a.cq, &wc, "a WR of the list"));
		TRY(expect_wc(&wc, "the list's WRs, in order", want[i],
			      IBV_WC_RDMA_WRITE, (uint64_t)i));
	}
	TRY(expect_quiet(n.p.a.cq, "requester CQ after the list"));
	CHECK(first_not(n.dst, 16, 0x11) < 0, "WR 0 (before the bad one) did not land");
	CHECK(first_not(n.dst + 16, NEG_LEN - 16, PAT_GUARD) < 0,
	      "responder memory changed at offset %ld: a WR from the bad one on ran",
	      16 + first_not(n.dst + 16, NEG_LEN - 16, PAT_GUARD));
	return T_PASS;
}

/* Device @s's counter @name (ports/1/hw_counters), or -1. */
static long long side_counter(const struct side *s, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	/* rdma_hw_stats are refreshed at most every 10 ms */
	usleep(30000);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
		 s->name, ib_port, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Device A's counter @name, or -1. */
static long long hw_counter(const char *name)
{
	return side_counter(&side_a, name);
}

/*
 * A key a peer invalidated is restored in the background: @s's keys_restored
 * must grow from @before by one within 3 s (30 ms a read).
 */
static int key_restored(const struct side *s, long long before)
{
	long long v = before;

	for (int i = 0; i < 100 && v == before; i++)
		v = side_counter(s, "keys_restored");
	CHECK(v == before + 1, "%s: keys_restored grew by %lld in 3 s, want 1",
	      s->name, v - before);
	return T_PASS;
}

/*
 * A list longer than the send queue, to a peer with no receive posted (RNR,
 * retried forever): the parent takes what fits and refuses the rest with
 * ENOMEM.  That is a full queue, not a refused request: bad_wrs must not
 * move, send_wrs counts exactly what was posted.
 */
static int t_post_send_full_queue_is_enomem_not_bad_wr(void)
{
	struct pair p;
	struct pair_opts o = { .max_send_wr = 4 };
	struct ibv_send_wr *wr, *bad = NULL;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	long long bad0, sent0, bad1, sent1;
	long idx;
	int n, rc;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	TRY(pair_open(&p, IBV_QPT_RC, &o));
	TRY(buf_reg(p.a.pd, 4096, MR_LOCAL, &buf, &mr));
	n = p.a.cap.max_send_wr + 4;
	wr = calloc(n, sizeof(*wr));
	CHECK(wr, "allocation failed");
	sge = (struct ibv_sge){ (uintptr_t)buf, 8, mr->lkey };
	for (int i = 0; i < n; i++)
		wr[i] = (struct ibv_send_wr){ .wr_id = i, .next = i + 1 < n ? &wr[i + 1] : NULL,
					      .sg_list = &sge, .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED };
	bad0 = hw_counter("bad_wrs");
	sent0 = hw_counter("send_wrs");
	rc = ibv_post_send(p.a.qp, wr, &bad);
	bad1 = hw_counter("bad_wrs");
	sent1 = hw_counter("send_wrs");
	idx = bad ? (long)(bad - wr) : -1L;
	free(wr);
	CHECK(bad0 >= 0 && sent0 >= 0, "no bad_wrs/send_wrs counter in hw_counters");
	CHECK(rc == ENOMEM, "posting %d WRs on a %u-WR send queue returned %s, want ENOMEM",
	      n, p.a.cap.max_send_wr, errname(rc));
	CHECK(idx >= 1 && idx < n, "*bad_wr is WR %ld, want one past the queue", idx);
	CHECK(bad1 == bad0, "bad_wrs grew by %lld for a full queue, want 0", bad1 - bad0);
	CHECK(sent1 - sent0 == idx, "send_wrs grew by %lld, want %ld (the WRs posted)",
	      sent1 - sent0, idx);
	return T_PASS;
}

/* B's post_recv @rwr (one WR) must fail EINVAL; it may not consume a message. */
static int neg_expect_recv_rejected(struct neg *n, struct ibv_recv_wr *rwr)
{
	struct ibv_recv_wr *bad = NULL;
	int rc;

	rwr->next = NULL;
	rc = ibv_post_recv(n->p.b.qp, rwr, &bad);
	CHECK(rc == EINVAL, "ibv_post_recv returned %s, want EINVAL", errname(rc));
	CHECK(bad == rwr, "*bad_wr is %p, want the rejected WR %p", (void *)bad,
	      (void *)rwr);
	rc = post_recv1(n->p.b.qp, 0xB1, n->rbuf + 4096, 4096, n->mrbuf->lkey);
	CHECK(!rc, "good ibv_post_recv after the rejected one returned %s", errname(rc));
	/* two SENDs land in 0xB0 then 0xB1: the rejected receive was never queued */
	TRY(neg_qp_still_works(n, 0xB0));
	TRY(neg_qp_still_works(n, 0xB1));
	CHECK(first_not(n->ro, NEG_LEN, 0x5A) < 0,
	      "the rejected receive buffer was written");
	return T_PASS;
}

/*
 * @n's receiving end expects the completions @ids with @st, in this order,
 * and no other.
 */
static int neg_expect_recv_wcs(struct neg *n, const uint64_t *ids,
			       const enum ibv_wc_status *st, int cnt)
{
	struct ibv_wc wc;

	for (int i = 0; i < cnt; i++) {
		TRY(wait_wc(n->p.b.cq, &wc, "a receive after the refused one"));
		TRY(expect_wc(&wc, "the receives, in post order", st[i],
			      IBV_WC_RECV, ids[i]));
	}
	TRY(expect_quiet(n->p.b.cq, "receiving CQ after the flushes"));
	CHECK(first_not(n->ro, NEG_LEN, 0x5A) < 0,
	      "the refused receive buffer was written");
	return T_PASS;
}

/*
 * B's receive @rwr (one WR) names memory it may not use: the device checks
 * it when it takes the receive from the ring, so ibv_post_recv succeeds,
 * the receive completes IBV_WC_LOC_PROT_ERR and the QP is in the error
 * state: the fixture's receive 0xB0, at the parent before it, is flushed
 * first.
 */
static int neg_expect_recv_fails(struct neg *n, struct ibv_recv_wr *rwr)
{
	static const enum ibv_wc_status st[2] = {
		IBV_WC_WR_FLUSH_ERR, IBV_WC_LOC_PROT_ERR,
	};
	struct ibv_recv_wr *bad = NULL;
	uint64_t ids[2] = { 0xB0, rwr->wr_id };
	int rc;

	rwr->next = NULL;
	rc = ibv_post_recv(n->p.b.qp, rwr, &bad);
	CHECK(!rc, "ibv_post_recv returned %s, want 0 (checked when taken)",
	      errname(rc));
	return neg_expect_recv_wcs(n, ids, st, 2);
}

/* Receive-side fixture: the receiving end (n->p.b) lives on device A. */
static const struct pair_opts neg_recv_opts = { .reverse = 1 };

static int t_recv_into_mr_without_local_write_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_mr *ro_b;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1 };

	TRY(neg_open(&n, &neg_recv_opts));
	ro_b = mr_reg(n.p.b.pd, n.ro, NEG_LEN, 0);
	CHECK(ro_b, "ibv_reg_mr(access 0) failed: %s", strerror(errno));
	sge = (struct ibv_sge){ (uintptr_t)n.ro, 4096, ro_b->lkey };
	return neg_expect_recv_fails(&n, &rwr);
}

static int t_recv_with_sge_past_mr_end_fails_loc_prot_err(void)
{
	struct neg n;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1 };

	TRY(neg_open(&n, &neg_recv_opts));
	sge = (struct ibv_sge){ (uintptr_t)(n.rbuf + NEG_LEN - 100), 101,
				n.mrbuf->lkey };
	return neg_expect_recv_fails(&n, &rwr);
}

static int t_post_recv_rejects_num_sge_above_cap(void)
{
	struct neg n;
	struct pair_opts o = { .max_recv_sge = 2, .reverse = 1 };
	struct ibv_sge *sge;
	struct ibv_recv_wr rwr = { .wr_id = 0xBAD };
	uint32_t ns;

	TRY(neg_open(&n, &o));
	ns = n.p.b.cap.max_recv_sge + 1;
	sge = sge_list(ns, n.rbuf + 8192, 64, n.mrbuf->lkey);
	CHECK(sge, "buffer allocation failed");
	rwr.sg_list = sge;
	rwr.num_sge = ns;
	return neg_expect_recv_rejected(&n, &rwr);
}

/*
 * A receive list [good, bad, good]: ibv_post_recv takes it; the bad one
 * completes IBV_WC_LOC_PROT_ERR when taken, the QP goes to the error
 * state, and every other receive is flushed, all in post order.
 */
static int t_recv_list_with_bad_wr_fails_it_and_flushes_the_rest(void)
{
	static const enum ibv_wc_status st[4] = {
		IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_LOC_PROT_ERR,
		IBV_WC_WR_FLUSH_ERR,
	};
	static const uint64_t ids[4] = { 0xB0, 0xC0, 0xC1, 0xC2 };
	struct neg n;
	struct ibv_sge sge[3];
	struct ibv_recv_wr rwr[3], *bad = NULL;
	int rc;

	TRY(neg_open(&n, &neg_recv_opts));
	for (int i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)(n.rbuf + 8192 * (i + 1)), 4096,
					   n.mrbuf->lkey };
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 0xC0 + i,
					       .next = i < 2 ? &rwr[i + 1] : NULL,
					       .sg_list = &sge[i], .num_sge = 1 };
	}
	sge[1].lkey ^= 0x5a5a00;
	rc = ibv_post_recv(n.p.b.qp, &rwr[0], &bad);
	CHECK(!rc, "ibv_post_recv returned %s (bad_wr WR %ld), want 0", errname(rc),
	      bad ? (long)(bad - rwr) : -1L);
	TRY(neg_expect_recv_wcs(&n, ids, st, 4));
	CHECK(first_not(n.rbuf, NEG_LEN, PAT_GUARD) < 0,
	      "a receive buffer was written at offset %ld",
	      first_not(n.rbuf, NEG_LEN, PAT_GUARD));
	return T_PASS;
}

/*
 * A 64-byte RDMA @op between A's source and @raddr/@rkey, a bad remote key
 * or range, completes with REM_ACCESS_ERR.
 */
static int expect_rem_access_err(struct neg *n, enum ibv_wr_opcode op,
				 uint8_t *raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)n->src, 64, n->msrc->lkey };
	struct ibv_send_wr wr = { .wr_id = 0xBAD, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	int rc;

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	rc = post_send1(n->p.a.qp, &wr);
	CHECK(!rc, "ibv_post_send returned %s (the remote key is checked remotely)",
	      errname(rc));
	TRY(wait_wc(n->p.a.cq, &wc, "completion of the bad-rkey WR"));
	CHECK(wc.wr_id == wr.wr_id, "wc.wr_id %#" PRIx64 ", want %#" PRIx64,
	      wc.wr_id, wr.wr_id);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR, "wc.status %s, want %s",
	      wc_status(wc.status), wc_status(IBV_WC_REM_ACCESS_ERR));
	CHECK(first_not(n->dst, NEG_LEN, PAT_GUARD) < 0,
	      "responder memory changed at offset %ld",
	      first_not(n->dst, NEG_LEN, PAT_GUARD));
	return T_PASS;
}

/* ---------------------------------------------------------------- rereg */

/*
 * The fixture of the negative tests turned round: A on device B, so that
 * the MRs under test (mdst, mrbuf) are on device A, the Stellar one.
 */
static int rereg_open(struct neg *n)
{
	struct pair_opts o = { .reverse = 1 };

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	return neg_open(n, &o);
}

/* ibv_rereg_mr, skipped where the device has none. */
static int rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t len, int access, const char *what)
{
	int rc;

	errno = 0;
	rc = ibv_rereg_mr(mr, flags, pd, addr, len, access);
	if (rc && errno == EOPNOTSUPP)
		return skip("%s: ibv_rereg_mr: EOPNOTSUPP", side_a.name);
	CHECK(!rc, "%s: ibv_rereg_mr returned %d (errno %s)", what, rc,
	      errname(errno));
	return T_PASS;
}

/*
 * New memory: writes with the MR's (new) rkey land in it, the old memory
 * stays as it was, and a write to the old addresses is refused.
 */
static int t_rereg_mr_translation_moves_the_mr_to_new_memory(void)
{
	uint8_t *nb;
	struct neg n;

	TRY(rereg_open(&n));
	nb = buf_alloc(NEG_LEN);
	CHECK(nb, "buffer allocation failed");
	memset(nb, PAT_GUARD, NEG_LEN);
	TRY(rereg(n.mdst, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nb, NEG_LEN / 2,
		  0, "new memory"));
	CHECK(n.mdst->addr == nb && n.mdst->length == NEG_LEN / 2,
	      "the MR reads addr %p length %zu, want %p %d", n.mdst->addr,
	      n.mdst->length, (void *)nb, NEG_LEN / 2);
	TRY(rdma_write(&n.p, 1, n.src, 4096, n.msrc->lkey, (uintptr_t)nb + 300,
		       n.mdst->rkey));
	TRY(check_bytes("write into the new memory", nb + 300, n.src, 4096, 64));
	CHECK(first_not(n.dst, NEG_LEN, PAT_GUARD) < 0,
	      "the old memory changed at offset %ld", first_not(n.dst, NEG_LEN, PAT_GUARD));
	/* past the new length, then the old addresses */
	return expect_rem_access_err(&n, IBV_WR_RDMA_WRITE, n.dst, n.mdst->rkey);
}

/*
 * Access: changed in place, the keys stay; with remote read only, a READ
 * works and a WRITE is refused.
 */
static int t_rereg_mr_access_without_remote_write_refuses_writes(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ };
	uint32_t lkey, rkey;
	struct neg n;

	TRY(rereg_open(&n));
	lkey = n.mdst->lkey;
	rkey = n.mdst->rkey;
	TRY(rereg(n.mdst, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, "remote read only"));
	CHECK(n.mdst->lkey == lkey && n.mdst->rkey == rkey,
	      "keys %#x/%#x after an access rereg, were %#x/%#x", n.mdst->lkey,
	      n.mdst->rkey, lkey, rkey);
	sge = (struct ibv_sge){ (uintptr_t)n.src + 8192, 256, n.msrc->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)n.dst + 100;
	wr.wr.rdma.rkey = n.mdst->rkey;
	TRY(run_send(&n.p, &wr, "RDMA_READ", IBV_WC_RDMA_READ));
	CHECK(first_not(n.src + 8192, 256, PAT_GUARD) < 0,
	      "the READ did not return the MR's bytes");
	return expect_rem_access_err(&n, IBV_WR_RDMA_WRITE, n.dst, n.mdst->rkey);
}

/* Both QPs of @p through RESET back to RTS, connected to each other. */
static int pair_restart(struct pair *p)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RESET };

	CHECK(!ibv_modify_qp(p->a.qp, &at, IBV_QP_STATE), "modify_qp A to RESET");
	CHECK(!ibv_modify_qp(p->b.qp, &at, IBV_QP_STATE), "modify_qp B to RESET");
	TRY(to_init(&p->a, IBV_QPT_RC));
	TRY(to_init(&p->b, IBV_QPT_RC));
	TRY(to_rtr_rts(&p->a, IBV_QPT_RC, &p->b));
	return to_rtr_rts(&p->b, IBV_QPT_RC, &p->a);
}

/*
 * PD: moved to another PD, the MR's lkey in a receive on a QP of the first
 * PD is taken, as hardware takes it, and the SEND that arrives for it fails:
 * the sender gets IBV_WC_REM_OP_ERR, the receive an error, and no byte
 * lands (rdma-core's test_mr_rereg_pd).  Moved back, after the QPs were
 * restarted, a receive with it takes a SEND's bytes.
 */
static int t_rereg_mr_pd_change_follows_the_pd(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	uint8_t guard[4096];
	struct ibv_pd *pd2;
	struct ibv_mr *m;
	struct ibv_wc wc;
	uint8_t *buf;
	struct neg n;
	int rc;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	pd2 = track(R_PD, ibv_alloc_pd(side_a.ctx), 0);
	CHECK(pd2, "ibv_alloc_pd: %s", strerror(errno));
	TRY(rereg_open(&n));
	TRY(buf_reg(n.p.b.pd, 8192, MR_LOCAL, &buf, &m));
	memset(buf, PAT_GUARD, 8192);
	memset(guard, PAT_GUARD, sizeof(guard));
	TRY(rereg(m, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0, "to a second PD"));
	CHECK(m->pd == pd2, "the MR's pd is not the second PD");
	rc = post_recv1(n.p.b.qp, 0xB1, buf, 4096, m->lkey);
	CHECK(!rc, "post_recv with an lkey of another PD: %s, want 0 (it fails when used)",
	      errname(rc));
	/* the receive neg_open posted first takes the first SEND */
	TRY(neg_qp_still_works(&n, 0xB0));
	sge = (struct ibv_sge){ (uintptr_t)n.src + 5, 3000, n.msrc->lkey };
	wr.send_flags = IBV_SEND_SIGNALED;
	rc = post_send1(n.p.a.qp, &wr);
	CHECK(!rc, "SEND into the other PD's MR: ibv_post_send %s", errname(rc));
	TRY(wait_wc(n.p.a.cq, &wc, "SEND into the other PD's MR"));
	TRY(expect_wc(&wc, "SEND into the other PD's MR", IBV_WC_REM_OP_ERR,
		      wc.opcode, 3));
	TRY(wait_wc(n.p.b.cq, &wc, "recv naming the other PD's MR"));
	CHECK(wc.wr_id == 0xB1 && wc.status != IBV_WC_SUCCESS &&
	      wc.status != IBV_WC_WR_FLUSH_ERR,
	      "recv naming the other PD's MR: wr_id %#" PRIx64 " %s, want 0xb1 and an error of its own",
	      wc.wr_id, wc_status(wc.status));
	printf("# receive naming the other PD's MR: %s\n", wc_status(wc.status));
	TRY(check_bytes("the other PD's MR after the failed SEND", buf, guard,
			sizeof(guard), 0));

	TRY(pair_restart(&n.p));
	TRY(rereg(m, IBV_REREG_MR_CHANGE_PD, n.p.b.pd, NULL, 0, 0, "back"));
	rc = post_recv1(n.p.b.qp, 0xB2, buf, 4096, m->lkey);
	CHECK(!rc, "post_recv after the MR came back: %s", errname(rc));
	wr.send_flags = 0;
	TRY(run_send(&n.p, &wr, "SEND into the MR", IBV_WC_SEND));
	TRY(wait_wc(n.p.b.cq, &wc, "recv into the MR"));
	TRY(expect_wc(&wc, "recv into the MR", IBV_WC_SUCCESS, IBV_WC_RECV, 0xB2));
	return check_bytes("SEND into the MR", buf, n.src + 5, 3000, 0);
}

/*
 * A rereg that fails (new memory not mapped: EFAULT) leaves the MR as it
 * was: keys, address, and writes through it.
 */
static int t_rereg_mr_that_fails_leaves_the_mr_as_it_was(void)
{
	uint32_t lkey, rkey;
	struct neg n;
	void *p;
	int rc;

	TRY(rereg_open(&n));
	lkey = n.mdst->lkey;
	rkey = n.mdst->rkey;
	p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap failed");
	munmap(p, 4 * 4096);
	errno = 0;
	rc = ibv_rereg_mr(n.mdst, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, p, 4 * 4096, 0);
	if (rc && errno == EOPNOTSUPP)
		return skip("%s: ibv_rereg_mr: EOPNOTSUPP", side_a.name);
	CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "rereg onto unmapped memory: %d (errno %s), want IBV_REREG_MR_ERR_CMD, EFAULT",
	      rc, errname(errno));
	CHECK(n.mdst->lkey == lkey && n.mdst->rkey == rkey && n.mdst->addr == n.dst,
	      "the MR changed: keys %#x/%#x (were %#x/%#x), addr %p (was %p)",
	      n.mdst->lkey, n.mdst->rkey, lkey, rkey, n.mdst->addr, (void *)n.dst);
	TRY(rdma_write(&n.p, 4, n.src, 4096, n.msrc->lkey, (uintptr_t)n.dst + 64, rkey));
	return check_bytes("write after the failed rereg", n.dst + 64, n.src, 4096, 64);
}

static int t_rdma_write_with_bad_rkey_completes_rem_access_err(void)
{
	struct neg n;

	TRY(neg_open(&n, NULL));
	return expect_rem_access_err(&n, IBV_WR_RDMA_WRITE, n.dst,
				     n.mdst->rkey ^ 0x5a);
}

static int t_rdma_write_past_remote_mr_end_completes_rem_access_err(void)
{
	struct neg n;

	TRY(neg_open(&n, NULL));
	return expect_rem_access_err(&n, IBV_WR_RDMA_WRITE, n.dst + NEG_LEN - 32,
				     n.mdst->rkey);
}

static int t_rdma_read_with_bad_rkey_completes_rem_access_err(void)
{
	struct neg n;

	TRY(neg_open(&n, NULL));
	return expect_rem_access_err(&n, IBV_WR_RDMA_READ, n.dst,
				     n.mdst->rkey ^ 0x5a);
}

static int t_rdma_write_to_deregistered_rkey_completes_rem_access_err(void)
{
	struct neg n;
	uint8_t *d;
	struct ibv_mr *md;
	uint32_t rkey;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	int rc;

	TRY(neg_open(&n, NULL));
	d = buf_alloc(8192);
	CHECK(d, "buffer allocation failed");
	md = ibv_reg_mr(n.p.b.pd, d, 8192, MR_REMOTE);
	CHECK(md, "ibv_reg_mr failed: %s", strerror(errno));
	rkey = md->rkey;
	rc = rdma_write(&n.p, 1, n.src, 64, n.msrc->lkey, (uintptr_t)d, rkey);
	if (rc != T_PASS) {
		ibv_dereg_mr(md);
		return rc;
	}
	CHECK(!memcmp(d, n.src, 64), "write through the live rkey did not land");
	rc = ibv_dereg_mr(md);
	CHECK(!rc, "ibv_dereg_mr returned %s", errname(rc));
	memset(d, PAT_GUARD, 8192);
	neg_write_wr(&n, &wr, &sge, (uintptr_t)n.src, 64, n.msrc->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)d;
	wr.wr.rdma.rkey = rkey;
	wr.send_flags = IBV_SEND_SIGNALED;
	rc = post_send1(n.p.a.qp, &wr);
	CHECK(!rc, "ibv_post_send returned %s", errname(rc));
	TRY(wait_wc(n.p.a.cq, &wc, "completion of the write to the old rkey"));
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR, "wc.status %s, want %s",
	      wc_status(wc.status), wc_status(IBV_WC_REM_ACCESS_ERR));
	CHECK(first_not(d, 8192, PAT_GUARD) < 0,
	      "memory behind the deregistered MR was written at offset %ld",
	      first_not(d, 8192, PAT_GUARD));
	return T_PASS;
}

/* ibv_reg_mr(@addr, @len, @access) in A's PD must fail with errno @want. */
static int expect_reg_mr_fails(void *addr, size_t len, int access, int want,
			       const char *what)
{
	struct ibv_mr *m;

	errno = 0;
	m = mr_reg(side_a.pd, addr, len, access);
	CHECK(!m, "ibv_reg_mr %s succeeded (lkey %#x)", what, m->lkey);
	CHECK(errno == want, "errno %s, want %s", errname(errno), errname(want));
	return T_PASS;
}

static int t_reg_mr_on_unmapped_memory_fails_efault(void)
{
	void *p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED, "mmap failed");
	munmap(p, 4 * 4096);
	return expect_reg_mr_fails(p, 4 * 4096, MR_LOCAL, EFAULT,
				   "on unmapped memory");
}

static int t_reg_mr_zero_length_fails_einval(void)
{
	uint8_t *b = buf_alloc(4096);

	CHECK(b, "buffer allocation failed");
	return expect_reg_mr_fails(b, 0, MR_LOCAL, EINVAL, "with length 0");
}

static int t_reg_mr_remote_write_without_local_write_fails_einval(void)
{
	uint8_t *b = buf_alloc(4096);

	CHECK(b, "buffer allocation failed");
	return expect_reg_mr_fails(b, 4096, IBV_ACCESS_REMOTE_WRITE, EINVAL,
				   "(REMOTE_WRITE only)");
}

static int t_reg_mr_remote_atomic_without_local_write_fails_einval(void)
{
	uint8_t *b = buf_alloc(4096);

	CHECK(b, "buffer allocation failed");
	return expect_reg_mr_fails(b, 4096, IBV_ACCESS_REMOTE_ATOMIC |
				   IBV_ACCESS_REMOTE_READ, EINVAL,
				   "(REMOTE_ATOMIC without LOCAL_WRITE)");
}

/*
 * A fresh RC QP on A, left in RESET or moved to INIT (@from), must refuse a
 * move straight to RTS with EINVAL and stay in @from.
 */
static int qp_refuses_skip_to_rts(enum ibv_qp_state from)
{
	const char *name = from == IBV_QPS_INIT ? "INIT" : "RESET";
	struct end e;
	struct pair_opts o = { 0 };
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTS, .sq_psn = 1, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	struct ibv_qp_init_attr ia;
	int rc;

	TRY(create_end(&e, &side_a, IBV_QPT_RC, &o, NULL, NULL, NULL));
	if (from == IBV_QPS_INIT)
		TRY(to_init(&e, IBV_QPT_RC));
	rc = ibv_modify_qp(e.qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(rc == EINVAL, "modify_qp %s->RTS returned %s, want EINVAL", name,
	      errname(rc));
	rc = ibv_query_qp(e.qp, &at, IBV_QP_STATE, &ia);
	CHECK(!rc, "ibv_query_qp returned %s", errname(rc));
	CHECK(at.qp_state == from, "QP state %d after the refused move, want %s",
	      at.qp_state, name);
	return T_PASS;
}

static int t_qp_modify_reset_to_rts_fails_einval(void)
{
	return qp_refuses_skip_to_rts(IBV_QPS_RESET);
}

static int t_qp_modify_init_to_rts_fails_einval(void)
{
	return qp_refuses_skip_to_rts(IBV_QPS_INIT);
}

/*
 * Releasing @parent fails EBUSY while @child (an @child_name using it)
 * lives, and succeeds once @child is gone.  Both are tracked on entry.
 */
static int expect_busy_until_child_gone(enum res_kind parent_kind, void *parent,
					enum res_kind child_kind, void *child,
					const char *child_name)
{
	struct res pr = { parent_kind, parent, 0 }, cr = { child_kind, child, 0 };
	const char *pwhat, *cwhat;
	int rc;

	rc = res_release(&pr, &pwhat);
	CHECK(rc == EBUSY, "%s with a live %s returned %s, want EBUSY", pwhat,
	      child_name, errname(rc));
	untrack(child);
	rc = res_release(&cr, &cwhat);
	CHECK(!rc, "%s returned %s", cwhat, errname(rc));
	untrack(parent);
	rc = res_release(&pr, &pwhat);
	CHECK(!rc, "%s after the %s went returned %s, want 0", pwhat, child_name,
	      errname(rc));
	return T_PASS;
}

static int t_dealloc_pd_with_live_mr_fails_ebusy(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(side_a.ctx);
	uint8_t *b = buf_alloc(4096);
	struct ibv_mr *m;

	CHECK(pd, "ibv_alloc_pd failed: %s", strerror(errno));
	track(R_PD, pd, 0);
	m = mr_reg(pd, b, 4096, MR_LOCAL);
	CHECK(m, "ibv_reg_mr failed: %s", strerror(errno));
	return expect_busy_until_child_gone(R_PD, pd, R_MR, m, "MR");
}

static int t_dealloc_pd_with_live_qp_fails_ebusy(void)
{
	struct ibv_pd *pd = track(R_PD, ibv_alloc_pd(side_a.ctx), 0);
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { 4, 4, 1, 1, 0 } };

	CHECK(pd, "ibv_alloc_pd failed: %s", strerror(errno));
	cq = track(R_CQ, ibv_create_cq(side_a.ctx, 16, NULL, NULL, 0), 0);
	CHECK(cq, "ibv_create_cq failed: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp, "ibv_create_qp failed: %s", strerror(errno));
	track(R_QP, qp, 0);
	return expect_busy_until_child_gone(R_PD, pd, R_QP, qp, "QP");
}

static int t_destroy_cq_in_use_by_qp_fails_ebusy(void)
{
	struct ibv_cq *cq = ibv_create_cq(side_a.ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { 4, 4, 1, 1, 0 } };

	CHECK(cq, "ibv_create_cq failed: %s", strerror(errno));
	track(R_CQ, cq, 0);
	ia.send_cq = ia.recv_cq = cq;
	qp = track(R_QP, ibv_create_qp(side_a.pd, &ia), 0);
	CHECK(qp, "ibv_create_qp failed: %s", strerror(errno));
	return expect_busy_until_child_gone(R_CQ, cq, R_QP, qp, "QP");
}

/* The optional object that @call tried to create was refused. */
static int expect_unsupported(int created, const char *call)
{
	CHECK(!created, "%s succeeded", call);
	CHECK(errno == EOPNOTSUPP || errno == ENOSYS,
	      "errno %s, want EOPNOTSUPP or ENOSYS", errname(errno));
	return T_PASS;
}

/* ------------------------------------------------------------------ SRQ */

/* An SRQ of @max_wr entries of up to 2 SGEs in B's PD. */
static int srq_open(struct ibv_srq **srq, uint32_t max_wr)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = max_wr, .max_sge = 2 } };

	if (!side_b.attr.max_srq)
		return skip("%s: max_srq is 0", side_b.name);
	errno = 0;
	*srq = track(R_SRQ, ibv_create_srq(side_b.pd, &sa), 0);
	CHECK(*srq, "%s: ibv_create_srq(max_wr %u) failed: %s", side_b.name,
	      max_wr, strerror(errno));
	CHECK(sa.attr.max_wr >= max_wr && sa.attr.max_sge >= 2,
	      "%s: ibv_create_srq made max_wr %u max_sge %u, want at least %u, 2",
	      side_b.name, sa.attr.max_wr, sa.attr.max_sge, max_wr);
	return T_PASS;
}

static int post_srq1(struct ibv_srq *srq, uint64_t wr_id, void *addr,
		     uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/*
 * An RC pair whose B end receives from a new SRQ of @max_wr entries, with
 * 64 KiB buffers: x->b is registered in B's PD for the receives.
 */
static int srq_xfer_open(struct xfer *x, struct ibv_srq **srq, uint32_t max_wr)
{
	struct pair_opts o = { 0 };

	TRY(srq_open(srq, max_wr));
	o.srq_b = *srq;
	return xfer_open(x, IBV_QPT_RC, &o, 1 << 16, MR_LOCAL, MR_LOCAL);
}

/* A sends @len bytes from offset @soff; B's completion is @wr_id's. */
static int srq_send_lands(struct xfer *x, size_t soff, size_t len,
			  uint64_t wr_id, const uint8_t *rbuf)
{
	struct ibv_sge sge = { (uintptr_t)(x->a + soff), len, x->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	char what[64];

	snprintf(what, sizeof(what), "send %zu B to the SRQ", len);
	TRY(run_send(&x->p, &wr, what, IBV_WC_SEND));
	TRY(wait_wc(x->p.b.cq, &wc, what));
	TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, IBV_WC_RECV, wr_id));
	CHECK(wc.byte_len == len, "%s: wc.byte_len %u", what, wc.byte_len);
	CHECK(wc.qp_num == x->p.b.qp->qp_num, "%s: wc.qp_num %#x, want %#x",
	      what, wc.qp_num, x->p.b.qp->qp_num);
	return check_bytes(what, rbuf, x->a + soff, len, 0);
}

/*
 * Receives posted to an SRQ serve its QP in post order, each landing
 * where its own SGEs say (the last scattered over two), with the QP's
 * number in the completion; query reports the SRQ's size.
 */
static int t_srq_receives_land_in_post_order(void)
{
	struct ibv_sge sg[2];
	struct ibv_recv_wr rwr = { .wr_id = 103, .sg_list = sg, .num_sge = 2 };
	struct ibv_recv_wr *bad = NULL;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_srq_attr qa;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct xfer x;
	int rc;

	TRY(srq_xfer_open(&x, &srq, 16));
	fill_pattern(x.a, 1 << 16, 91);
	memset(x.b, PAT_GUARD, 1 << 16);
	rc = ibv_query_srq(srq, &qa);
	CHECK(!rc, "ibv_query_srq: %s", errname(rc));
	CHECK(qa.max_wr >= 16 && qa.srq_limit == 0,
	      "ibv_query_srq: max_wr %u srq_limit %u, want >= 16 and 0",
	      qa.max_wr, qa.srq_limit);
	for (int i = 0; i < 3; i++) {
		rc = post_srq1(srq, 100 + i, x.b + 4096 * i, 4096, x.mb->lkey);
		CHECK(!rc, "ibv_post_srq_recv %d: %s", i, errname(rc));
	}
	/* two SGEs: 1000 bytes at 20000, the rest at 30000 */
	sg[0] = (struct ibv_sge){ (uintptr_t)(x.b + 20000), 1000, x.mb->lkey };
	sg[1] = (struct ibv_sge){ (uintptr_t)(x.b + 30000), 3000, x.mb->lkey };
	rc = ibv_post_srq_recv(srq, &rwr, &bad);
	CHECK(!rc, "ibv_post_srq_recv of 2 SGEs: %s", errname(rc));

	TRY(srq_send_lands(&x, 0, 4096, 100, x.b));
	TRY(srq_send_lands(&x, 5, 1, 101, x.b + 4096));
	TRY(srq_send_lands(&x, 77, 4000, 102, x.b + 8192));
	sge = (struct ibv_sge){ (uintptr_t)(x.a + 999), 3500, x.ma->lkey };
	TRY(run_send(&x.p, &wr, "scattered send", IBV_WC_SEND));
	TRY(wait_wc(x.p.b.cq, &wc, "scattered send"));
	TRY(expect_wc(&wc, "scattered send", IBV_WC_SUCCESS, IBV_WC_RECV, 103));
	CHECK(wc.byte_len == 3500, "scattered send: byte_len %u", wc.byte_len);
	TRY(check_bytes("scattered piece 1", x.b + 20000, x.a + 999, 1000, 32));
	return check_bytes("scattered piece 2", x.b + 30000, x.a + 1999, 2500, 32);
}

/* Wait up to 5 s for async event @type on @ctx (others are skipped). */
static int wait_async(struct ibv_context *ctx, enum ibv_event_type type,
		      struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int fl = fcntl(ctx->async_fd, F_GETFL);

	CHECK(fl >= 0 && !fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK),
	      "async fd: %s", strerror(errno));
	for (int i = 0; i < 50; i++) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (ibv_get_async_event(ctx, ev))
			continue;
		ibv_ack_async_event(ev);
		if (ev->event_type == type)
			return T_PASS;
	}
	return fail("no async event %s in 5 s", ibv_event_type_str(type));
}

/*
 * The limit event: armed at 2 with 4 receives posted, it fires once 3
 * SENDs leave 1, naming the SRQ; query then reports the limit disarmed,
 * and the fourth receive still takes a SEND.
 */
static int t_srq_limit_event_fires_below_the_limit(void)
{
	struct ibv_srq_attr ma = { .srq_limit = 2 }, qa;
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct xfer x;
	int rc;

	TRY(srq_xfer_open(&x, &srq, 8));
	fill_pattern(x.a, 1 << 16, 92);
	for (int i = 0; i < 4; i++) {
		rc = post_srq1(srq, 200 + i, x.b + 4096 * i, 4096, x.mb->lkey);
		CHECK(!rc, "ibv_post_srq_recv %d: %s", i, errname(rc));
	}
	rc = ibv_modify_srq(srq, &ma, IBV_SRQ_LIMIT);
	CHECK(!rc, "ibv_modify_srq(IBV_SRQ_LIMIT 2): %s", errname(rc));
	for (int i = 0; i < 3; i++)
		TRY(srq_send_lands(&x, 64 * i, 2048, 200 + i, x.b + 4096 * i));
	TRY(wait_async(side_b.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &ev));
	CHECK(ev.element.srq == srq, "the limit event names SRQ %p, want %p",
	      (void *)ev.element.srq, (void *)srq);
	rc = ibv_query_srq(srq, &qa);
	CHECK(!rc, "ibv_query_srq: %s", errname(rc));
	CHECK(qa.srq_limit == 0, "srq_limit %u after the event, want 0 (disarmed)",
	      qa.srq_limit);
	return srq_send_lands(&x, 3, 100, 203, x.b + 4096 * 3);
}

/*
 * A list with a refused receive (lkey of no MR) is taken (keys are checked
 * as the device takes the ring's entries): bad_wrs up by one, recv_wrs by
 * three, the refused one going to the parent SRQ with no SGE.  SENDs take
 * them in post order: the first lands, the second's receive completes
 * IBV_WC_LOC_PROT_ERR on the QP that took it, with no byte written.  One
 * SGE more than the SRQ's max_sge: EINVAL from ibv_post_srq_recv.
 */
static int t_srq_recv_list_with_bad_wr_fails_it_on_the_qp_taking_it(void)
{
	struct ibv_sge sg[3], s16[16];
	struct ibv_recv_wr wr[3], w3, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_send_wr swr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND };
	struct ibv_srq_attr qa;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct xfer x;
	long long bw0, rw0, bw1, rw1;
	int rc;

	if (!side_b.stellar)
		return skip("%s is not a Stellar device", side_b.name);
	TRY(srq_xfer_open(&x, &srq, 16));
	fill_pattern(x.a, 1 << 16, 93);
	memset(x.b, PAT_GUARD, 1 << 16);
	for (int i = 0; i < 3; i++) {
		sg[i] = (struct ibv_sge){ (uintptr_t)(x.b + 4096 * i), 4096, x.mb->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = 300 + i, .sg_list = &sg[i],
					      .num_sge = 1, .next = i < 2 ? &wr[i + 1] : NULL };
	}
	sg[1].lkey ^= 0x5a5a00;
	bw0 = side_counter(&side_b, "bad_wrs");
	rw0 = side_counter(&side_b, "recv_wrs");
	rc = ibv_post_srq_recv(srq, wr, &bad);
	CHECK(!rc, "post_srq_recv with a bad lkey: %s, want 0", errname(rc));
	bw1 = side_counter(&side_b, "bad_wrs");
	rw1 = side_counter(&side_b, "recv_wrs");
	CHECK(bw1 == bw0 + 1 && rw1 == rw0 + 3,
	      "bad_wrs %lld -> %lld (want +1), recv_wrs %lld -> %lld (want +3)",
	      bw0, bw1, rw0, rw1);
	/* one SGE more than the SRQ's max_sge */
	rc = ibv_query_srq(srq, &qa);
	CHECK(!rc, "ibv_query_srq: %s", errname(rc));
	CHECK(qa.max_sge < 16, "max_sge %u", qa.max_sge);
	for (uint32_t i = 0; i <= qa.max_sge; i++)
		s16[i] = (struct ibv_sge){ (uintptr_t)(x.b + 64 * i), 64, x.mb->lkey };
	w3 = (struct ibv_recv_wr){ .wr_id = 310, .sg_list = s16,
				   .num_sge = (int)qa.max_sge + 1 };
	rc = ibv_post_srq_recv(srq, &w3, &bad);
	CHECK(rc == EINVAL && bad == &w3, "post_srq_recv of %u SGEs (max_sge %u): %s, want EINVAL",
	      qa.max_sge + 1, qa.max_sge, errname(rc));
	TRY(srq_send_lands(&x, 1, 3000, 300, x.b));
	sge = (struct ibv_sge){ (uintptr_t)(x.a + 5000), 100, x.ma->lkey };
	rc = post_send1(x.p.a.qp, &swr);
	CHECK(!rc, "ibv_post_send: %s", errname(rc));
	TRY(wait_wc(x.p.b.cq, &wc, "the refused SRQ receive"));
	TRY(expect_wc(&wc, "the refused SRQ receive", IBV_WC_LOC_PROT_ERR,
		      IBV_WC_RECV, 301));
	CHECK(wc.qp_num == x.p.b.qp->qp_num, "wc.qp_num %#x, want %#x",
	      wc.qp_num, x.p.b.qp->qp_num);
	CHECK(first_not(x.b + 4096, 4096, PAT_GUARD) < 0,
	      "the refused receive's buffer was written");
	return T_PASS;
}

static int t_open_xrcd_is_unsupported(void)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
					 IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = O_CREAT };
	struct ibv_xrcd *x;

	errno = 0;
	x = ibv_open_xrcd(side_a.ctx, &xa);
	if (x)
		ibv_close_xrcd(x);
	return expect_unsupported(x != NULL, "ibv_open_xrcd");
}

/* ================================================ memory windows */

/*
 * A window of 4 KiB at offset 4 KiB of B's 64 KiB buffer, whose MR grants
 * no remote access itself: bound on B's QP (type 2) or with ibv_bind_mw
 * (type 1); A writes 64 bytes into it (they land), then once at @off from
 * the window's start, which must fail with REM_ACCESS_ERR and change no
 * byte outside what the first write wrote.
 */
#define MW_OFF 4096
#define MW_LEN 4096

/* T_PASS if device B is a Stellar device with memory windows, else a skip. */
static int b_has_stellar_windows(void)
{
	if (!side_b.stellar)
		return skip("%s is not a Stellar device", side_b.name);
	if (!(side_b.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) ||
	    side_b.attr.max_mw == 0)
		return skip("%s has no memory windows (max_mw %d)", side_b.name,
			    side_b.attr.max_mw);
	return T_PASS;
}

static int mw_access(enum ibv_mw_type type, long off)
{
	struct neg n;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_mw_bind_info bi;
	struct ibv_wc wc;
	uint32_t rkey;
	int rc;

	/* rxe 6.1 checks an access through a window against its whole MR */
	TRY(b_has_stellar_windows());
	TRY(neg_open(&n, NULL));
	mr = mr_reg(n.p.b.pd, n.dst, NEG_LEN,
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(mr, "ibv_reg_mr with MW_BIND failed: %s", strerror(errno));
	mw = track(R_MW, ibv_alloc_mw(n.p.b.pd, type), 0);
	CHECK(mw, "ibv_alloc_mw(type %d) failed: %s", type, strerror(errno));
	bi = (struct ibv_mw_bind_info){
		.mr = mr, .addr = (uintptr_t)n.dst + MW_OFF, .length = MW_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	if (type == IBV_MW_TYPE_2) {
		struct ibv_send_wr wr = { .wr_id = 0xB1D, .opcode = IBV_WR_BIND_MW,
					  .send_flags = IBV_SEND_SIGNALED };

		rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info = bi;
		rc = post_send1(n.p.b.qp, &wr);
		CHECK(!rc, "BIND_MW post returned %s", errname(rc));
	} else {
		struct ibv_mw_bind mb = { .wr_id = 0xB1D,
					  .send_flags = IBV_SEND_SIGNALED,
					  .bind_info = bi };

		rc = ibv_bind_mw(n.p.b.qp, mw, &mb);
		CHECK(!rc, "ibv_bind_mw returned %s", errname(rc));
		rkey = mw->rkey;
	}
	TRY(wait_wc(n.p.b.cq, &wc, "completion of the bind"));
	TRY(expect_wc(&wc, "bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0xB1D));

	{
		struct ibv_sge sge = { (uintptr_t)n.src, 64, n.msrc->lkey };
		struct ibv_send_wr wr = { .wr_id = 0x600D, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE };

		wr.wr.rdma.remote_addr = (uintptr_t)n.dst + MW_OFF + 128;
		wr.wr.rdma.rkey = rkey;
		TRY(run_send(&n.p, &wr, "RDMA WRITE inside the window",
			     IBV_WC_RDMA_WRITE));
		CHECK(!memcmp(n.dst + MW_OFF + 128, n.src, 64),
		      "the write through the window did not land");
		memset(n.dst + MW_OFF + 128, PAT_GUARD, 64);
	}
	TRY(expect_rem_access_err(&n, IBV_WR_RDMA_WRITE,
				  n.dst + MW_OFF + off, rkey));
	return T_PASS;
}

static int t_mw_type2_write_past_window_end_completes_rem_access_err(void)
{
	return mw_access(IBV_MW_TYPE_2, MW_LEN - 32);
}

static int t_mw_type2_write_before_window_start_completes_rem_access_err(void)
{
	return mw_access(IBV_MW_TYPE_2, -32);
}

static int t_mw_type2_write_into_rest_of_mr_completes_rem_access_err(void)
{
	return mw_access(IBV_MW_TYPE_2, MW_LEN + 4096);
}

static int t_mw_type1_write_past_window_end_completes_rem_access_err(void)
{
	return mw_access(IBV_MW_TYPE_1, MW_LEN - 32);
}

/*
 * A type 2 window of device B (Stellar), bound in B's PD.  A sends
 * SEND_WITH_INV naming it to a QP of B in another PD: refused, the receive
 * completes with IBV_WC_REM_INV_REQ_ERR, and the window is made valid again
 * (keys_restored): a WRITE through it lands afterwards.  Then to a QP of
 * the window's PD: allowed, the receive reports IBV_WC_WITH_INV and the
 * key, and a WRITE through the window fails with REM_ACCESS_ERR.
 */
static int t_mw_type2_send_inv_only_from_the_windows_pd(void)
{
	struct xfer w, z;
	struct ibv_pd *pd0 = side_b.pd, *other;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	uint8_t *buf;
	struct ibv_send_wr bind = { .wr_id = 0xB1D, .opcode = IBV_WR_BIND_MW,
				    .send_flags = IBV_SEND_SIGNALED };
	struct ibv_sge sge;
	struct ibv_send_wr inv = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_INV,
				   .send_flags = IBV_SEND_SIGNALED };
	long long restored0;
	struct ibv_wc wc;
	uint32_t rkey;
	int rc;

	TRY(b_has_stellar_windows());
	TRY(xfer_open(&w, IBV_QPT_RC, NULL, 4096, MR_LOCAL, MR_LOCAL));
	other = track(R_PD, ibv_alloc_pd(side_b.ctx), 0);
	CHECK(other, "ibv_alloc_pd on %s failed: %s", side_b.name, strerror(errno));
	side_b.pd = other;
	rc = xfer_open(&z, IBV_QPT_RC, NULL, 4096, MR_LOCAL, MR_LOCAL);
	side_b.pd = pd0;
	TRY(rc);
	TRY(buf_reg(w.p.b.pd, NEG_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
		    &buf, &mr));
	memset(buf, PAT_GUARD, NEG_LEN);
	mw = track(R_MW, ibv_alloc_mw(w.p.b.pd, IBV_MW_TYPE_2), 0);
	CHECK(mw, "ibv_alloc_mw(type 2) failed: %s", strerror(errno));
	rkey = ibv_inc_rkey(mw->rkey);
	bind.bind_mw.mw = mw;
	bind.bind_mw.rkey = rkey;
	bind.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = (uintptr_t)buf + MW_OFF, .length = MW_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	rc = post_send1(w.p.b.qp, &bind);
	CHECK(!rc, "BIND_MW post returned %s", errname(rc));
	TRY(wait_wc(w.p.b.cq, &wc, "completion of the bind"));
	TRY(expect_wc(&wc, "bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0xB1D));
	fill_pattern(w.a, 64, 11);
	TRY(rdma_write(&w.p, 0x11, w.a, 64, w.ma->lkey, (uintptr_t)buf + MW_OFF,
		       rkey));
	CHECK(!memcmp(buf + MW_OFF, w.a, 64), "the WRITE through the window did not land");

	/* from another PD's QP: refused, the window restored */
	restored0 = side_counter(&side_b, "keys_restored");
	CHECK(restored0 >= 0, "%s has no keys_restored counter", side_b.name);
	sge = (struct ibv_sge){ (uintptr_t)z.a, 32, z.ma->lkey };
	inv.invalidate_rkey = rkey;
	rc = post_recv1(z.p.b.qp, 8, z.b, 4096, z.mb->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	rc = post_send1(z.p.a.qp, &inv);
	CHECK(!rc, "SEND_WITH_INV: ibv_post_send returned %s", errname(rc));
	TRY(wait_wc(z.p.b.cq, &wc, "receive of SEND_WITH_INV in another PD"));
	TRY(expect_wc(&wc, "receive of SEND_WITH_INV naming another PD's window",
		      IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 8));
	TRY(key_restored(&side_b, restored0));
	fill_pattern(w.a, 64, 12);
	TRY(rdma_write(&w.p, 0x12, w.a, 64, w.ma->lkey,
		       (uintptr_t)buf + MW_OFF + 256, rkey));
	CHECK(!memcmp(buf + MW_OFF + 256, w.a, 64),
	      "the WRITE through the window did not land after the refused invalidation");

	/* from the window's PD: allowed */
	sge = (struct ibv_sge){ (uintptr_t)w.a, 32, w.ma->lkey };
	rc = post_recv1(w.p.b.qp, 10, w.b, 4096, w.mb->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	inv.wr_id = 10;
	TRY(run_send(&w.p, &inv, "SEND_WITH_INV", IBV_WC_SEND));
	TRY(wait_wc(w.p.b.cq, &wc, "receive of SEND_WITH_INV in the window's PD"));
	TRY(expect_wc(&wc, "receive of SEND_WITH_INV in the window's PD",
		      IBV_WC_SUCCESS, IBV_WC_RECV, 10));
	CHECK(wc.wc_flags == IBV_WC_WITH_INV,
	      "receive wc_flags %#x, want IBV_WC_WITH_INV (%#x)", wc.wc_flags,
	      IBV_WC_WITH_INV);
	CHECK(wc.invalidated_rkey == rkey, "invalidated_rkey %#x, want %#x",
	      wc.invalidated_rkey, rkey);
	{
		struct ibv_sge s2 = { (uintptr_t)w.a, 64, w.ma->lkey };
		struct ibv_send_wr wr = { .wr_id = 0xBAD, .sg_list = &s2,
					  .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED };

		wr.wr.rdma.remote_addr = (uintptr_t)buf + MW_OFF + 512;
		wr.wr.rdma.rkey = rkey;
		rc = post_send1(w.p.a.qp, &wr);
		CHECK(!rc, "ibv_post_send returned %s", errname(rc));
		TRY(wait_wc(w.p.a.cq, &wc, "WRITE through the invalidated window"));
		CHECK(wc.wr_id == 0xBAD && wc.status == IBV_WC_REM_ACCESS_ERR,
		      "WRITE through the invalidated window: wr_id %#" PRIx64 " status %s, want REM_ACCESS_ERR",
		      wc.wr_id, wc_status(wc.status));
		CHECK(first_not(buf + MW_OFF + 512, 64, PAT_GUARD) < 0,
		      "the WRITE through the invalidated window changed memory");
	}
	return T_PASS;
}

/* ================================================================ driver */

/* ================================================ device limits */

/* A read-only mapping of @len bytes that costs no memory (zero page). */
static uint8_t *zero_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : track(R_MAP, p, len);
}

static int max_mr_size_testable(void)
{
	uint64_t max = side_a.attr.max_mr_size;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	CHECK(max >= 4096, "max_mr_size %" PRIu64 " is below one page", max);
	CHECK(max <= (1ULL << 36), "max_mr_size %#" PRIx64 " is above 64 GiB", max);
	return T_PASS;
}

static long long dev_attr_get(const char *name);
static int dev_attr_set(const char *name, long long v);

/*
 * A registration of exactly max_mr_size bytes passes the size check.  It is
 * not pinned for real: a 4 GiB pin does not fit the test VM (kernels from
 * 6.8 on unshare the zero page for a long-term pin), so the device's pin
 * quota is set to 1 MiB first and the registration must then fail with the
 * quota's ENOMEM, not with EINVAL for its length.
 */
static int t_reg_mr_of_max_mr_size_passes_the_size_check(void)
{
	uint64_t max = side_a.attr.max_mr_size;
	long long old = dev_attr_get("pin_quota_bytes");
	int r = T_PASS;
	struct ibv_mr *m;
	uint8_t *p;

	TRY(max_mr_size_testable());
	CHECK(old >= 0, "no /sys/class/infiniband/%s/pin_quota_bytes", side_a.name);
	p = zero_map(max + 2 * 4096);
	CHECK(p, "mmap of %" PRIu64 " bytes failed", max + 2 * 4096);
	CHECK(!dev_attr_set("pin_quota_bytes", 1 << 20), "cannot set pin_quota_bytes");
	/* page aligned, then starting one byte into a page (one page more) */
	for (int off = 0; off <= 1 && r == T_PASS; off++) {
		errno = 0;
		m = ibv_reg_mr(side_a.pd, p + off, max, 0);
		if (m) {
			ibv_dereg_mr(m);
			r = fail("ibv_reg_mr of %#" PRIx64 " bytes succeeded past a 1 MiB pin quota",
				 max);
		} else if (errno != ENOMEM) {
			r = fail("ibv_reg_mr of max_mr_size %#" PRIx64 " bytes at page offset %d: %s, want ENOMEM (pin quota), not a size error",
				 max, off, errname(errno));
		}
	}
	CHECK(!dev_attr_set("pin_quota_bytes", old), "cannot restore pin_quota_bytes");
	return r;
}

static int t_reg_mr_above_max_mr_size_fails_einval(void)
{
	uint64_t max = side_a.attr.max_mr_size;
	uint8_t *p;

	TRY(max_mr_size_testable());
	p = zero_map(max + 2 * 4096);
	CHECK(p, "mmap of %" PRIu64 " bytes failed", max + 2 * 4096);
	return expect_reg_mr_fails(p, max + 1, 0, EINVAL, "of max_mr_size + 1 bytes");
}

static int t_port_does_not_advertise_cm_or_device_mgmt(void)
{
	struct ibv_port_attr pa;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	CHECK(!ibv_query_port(side_a.ctx, ib_port, &pa), "ibv_query_port failed");
	CHECK(!(pa.port_cap_flags & IBV_PORT_CM_SUP),
	      "port_cap_flags %#x has CM_SUP, but there is no GSI QP or CM",
	      pa.port_cap_flags);
	CHECK(!(pa.port_cap_flags & IBV_PORT_DEVICE_MGMT_SUP),
	      "port_cap_flags %#x has DEVICE_MGMT_SUP, but there is no MAD agent",
	      pa.port_cap_flags);
	return T_PASS;
}


/* ================================================= wc_flags, Q_Keys, quotas */

/*
 * One SEND (@imm: with immediate) from the pair's A end to its B end; the
 * receive completion's wc_flags must be exactly @want.
 */
static int recv_flags_are(struct xfer *x, int imm, unsigned int want,
			  const char *what)
{
	struct ibv_sge sge = { (uintptr_t)x->a, 32, x->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				  .imm_data = htonl(0x1234) };
	struct ibv_wc wc;
	int rc;

	if (x->p.type == IBV_QPT_UD) {
		wr.wr.ud.ah = x->p.ah;
		wr.wr.ud.remote_qpn = x->p.b.qp->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
	}
	rc = post_recv1(x->p.b.qp, 8, x->b, 4096, x->mb->lkey);
	CHECK(!rc, "%s: ibv_post_recv returned %s", what, errname(rc));
	TRY(run_send(&x->p, &wr, what, IBV_WC_SEND));
	TRY(wait_wc(x->p.b.cq, &wc, what));
	TRY(expect_wc(&wc, what, IBV_WC_SUCCESS, IBV_WC_RECV, 8));
	CHECK(wc.wc_flags == want, "%s: receive wc_flags %#x, want %#x", what,
	      wc.wc_flags, want);
	return T_PASS;
}

/*
 * Device A receives from device B (Stellar or a plain rxe peer): its
 * receive completions carry libibverbs' wc_flags and nothing else (no
 * kernel-only bits, GRH only for UD).
 */
static int t_recv_wc_flags_are_uverbs_bits(void)
{
	static const struct pair_opts rev = { .reverse = 1 };
	struct xfer rc, ud;

	TRY(xfer_open(&rc, IBV_QPT_RC, &rev, 4096, MR_LOCAL, MR_LOCAL));
	TRY(recv_flags_are(&rc, 0, 0, "RC SEND"));
	TRY(recv_flags_are(&rc, 1, IBV_WC_WITH_IMM, "RC SEND_WITH_IMM"));
	TRY(xfer_open(&ud, IBV_QPT_UD, &rev, 4096, MR_LOCAL, MR_LOCAL));
	TRY(recv_flags_are(&ud, 0, IBV_WC_GRH, "UD SEND"));
	return recv_flags_are(&ud, 1, IBV_WC_GRH | IBV_WC_WITH_IMM,
			      "UD SEND_WITH_IMM");
}

/*
 * Device B (Stellar or a plain rxe peer) sends SEND_WITH_INV naming an MR
 * of device A.  A peer may invalidate a type 2 window only, never an MR:
 * A's receive completes with IBV_WC_REM_INV_REQ_ERR, as on plain rxe.  A
 * Stellar A counts it (remote_invalidations_refused) and makes the key
 * valid again (its parent had invalidated it already: keys_restored), so
 * the MR keeps working: a WRITE through the key lands afterwards.
 */
static int t_send_inv_of_an_mr_fails_rem_inv_req_err_and_key_is_restored(void)
{
	static const struct pair_opts rev = { .reverse = 1 };
	struct xfer x, y;
	struct ibv_mr *victim;
	uint8_t *vbuf;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED };
	long long refused0 = 0, restored0 = 0, v = 0;
	struct ibv_wc wc;
	int rc;

	TRY(xfer_open(&x, IBV_QPT_RC, &rev, 4096, MR_LOCAL, MR_LOCAL));
	TRY(xfer_open(&y, IBV_QPT_RC, &rev, 4096, MR_LOCAL, MR_LOCAL));
	/* the victim: an MR of A with remote access, in A's QPs' PD */
	TRY(buf_reg(x.p.b.pd, 4096, MR_REMOTE, &vbuf, &victim));
	memset(vbuf, PAT_GUARD, 4096);
	if (side_a.stellar) {
		refused0 = side_counter(&side_a, "remote_invalidations_refused");
		restored0 = side_counter(&side_a, "keys_restored");
		CHECK(refused0 >= 0 && restored0 >= 0,
		      "%s has no remote_invalidations_refused/keys_restored counter",
		      side_a.name);
	}
	sge = (struct ibv_sge){ (uintptr_t)x.a, 32, x.ma->lkey };
	wr.invalidate_rkey = victim->rkey;
	rc = post_recv1(x.p.b.qp, 8, x.b, 4096, x.mb->lkey);
	CHECK(!rc, "ibv_post_recv returned %s", errname(rc));
	rc = post_send1(x.p.a.qp, &wr);
	CHECK(!rc, "SEND_WITH_INV: ibv_post_send on %s returned %s", side_b.name,
	      errname(rc));
	TRY(wait_wc(x.p.b.cq, &wc, "receive of SEND_WITH_INV"));
	TRY(expect_wc(&wc, "receive of SEND_WITH_INV naming an MR",
		      IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 8));
	if (side_a.stellar) {
		v = side_counter(&side_a, "remote_invalidations_refused");
		CHECK(v == refused0 + 1,
		      "remote_invalidations_refused grew by %lld, want 1", v - refused0);
		TRY(key_restored(&side_a, restored0));
	}
	/* the key works: B writes through it on another QP */
	fill_pattern(y.a, 64, 4242);
	TRY(rdma_write(&y.p, 0x11, y.a, 64, y.ma->lkey, (uintptr_t)vbuf + 128,
		       victim->rkey));
	CHECK(!memcmp(vbuf + 128, y.a, 64),
	      "the WRITE through the MR's key did not land after the refused invalidation");
	return T_PASS;
}

#define CONTROLLED_QKEY 0x80010000u

/* Raise or drop CAP_NET_RAW in the effective set (kept permitted). */
static int set_net_raw(int on)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	if (on)
		d[0].effective |= 1u << CAP_NET_RAW;
	else
		d[0].effective &= ~(1u << CAP_NET_RAW);
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

/* `rdma system set privileged-qkey on` makes every user privileged. */
static int privileged_qkey_mode(void)
{
	char line[256];
	int on = 0;
	FILE *f = popen("rdma system show 2>/dev/null", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "privileged-qkey on"))
			on = 1;
	pclose(f);
	return on;
}

/* A UD send from A with @qkey to @qp (on B): where it arrives. */
static int ud_send_qkey(struct pair *p, struct ibv_mr *ma, uint8_t *a,
			struct ibv_qp *qp, uint32_t qkey, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)a, 64, ma->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };

	wr.wr.ud.ah = p->ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	return run_send(p, &wr, "UD SEND", IBV_WC_SEND);
}

/*
 * IBTA 10.2.5: an unprivileged user's UD WR naming a controlled Q_Key
 * (MSB set) is sent with the QP's own Q_Key.  Seen at the receivers on B:
 * a QP whose Q_Key is the controlled one does not get it, a QP whose Q_Key
 * is the sender QP's does.  With CAP_NET_RAW it goes out as named.  And
 * modify_qp refuses a controlled Q_Key to the unprivileged (EPERM).
 */
static int t_qkey_controlled_in_ud_wr_is_replaced_when_unprivileged(void)
{
	struct xfer x;
	struct end r1;
	struct ibv_qp *q;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qkey = CONTROLLED_QKEY };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
				       .cap = { 4, 4, 1, 1, 0 } };
	struct ibv_wc wc;
	int rc, r;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	if (privileged_qkey_mode())
		return skip("rdma system privileged-qkey is on: every user is privileged");
	TRY(xfer_open(&x, IBV_QPT_UD, NULL, 4096, MR_LOCAL, MR_LOCAL));
	/* r1 on B: Q_Key 0x80010000 (set while privileged) */
	TRY(create_end(&r1, &side_b, IBV_QPT_UD, &(struct pair_opts){ 0 }, NULL, NULL, NULL));
	rc = ibv_modify_qp(r1.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			   IBV_QP_PORT | IBV_QP_QKEY);
	CHECK(!rc, "%s: modify_qp with Q_Key %#x (privileged) failed: %s",
	      side_b.name, CONTROLLED_QKEY, errname(rc));
	TRY(to_rtr_rts(&r1, IBV_QPT_UD, NULL));
	rc = post_recv1(r1.qp, 0xE1, x.b, 2048, x.mb->lkey);
	CHECK(!rc, "ibv_post_recv on the controlled-Q_Key QP: %s", errname(rc));
	rc = post_recv1(x.p.b.qp, 0xE2, x.b + 2048, 2048, x.mb->lkey);
	CHECK(!rc, "ibv_post_recv: %s", errname(rc));

	CHECK(!set_net_raw(0), "cannot drop CAP_NET_RAW: %s", strerror(errno));
	r = ud_send_qkey(&x.p, x.ma, x.a, r1.qp, CONTROLLED_QKEY, 1);
	if (r == T_PASS)
		r = ud_send_qkey(&x.p, x.ma, x.a, x.p.b.qp, CONTROLLED_QKEY, 2);
	/* modify_qp applies the same rule */
	q = track(R_QP, ibv_create_qp(x.p.a.pd, &(struct ibv_qp_init_attr){
		.send_cq = x.p.a.cq, .recv_cq = x.p.a.cq, .qp_type = IBV_QPT_UD,
		.cap = ia.cap }), 0);
	rc = q ? ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			       IBV_QP_PORT | IBV_QP_QKEY) : -1;
	CHECK(!set_net_raw(1), "cannot raise CAP_NET_RAW again: %s", strerror(errno));
	TRY(r);
	CHECK(q, "ibv_create_qp failed: %s", strerror(errno));
	CHECK(rc == EPERM, "unprivileged modify_qp with Q_Key %#x returned %s, want EPERM",
	      CONTROLLED_QKEY, errname(rc));
	TRY(expect_quiet(r1.cq, "QP with Q_Key 0x80010000 (unprivileged sender)"));
	TRY(wait_wc(x.p.b.cq, &wc, "QP with the sender's Q_Key"));
	TRY(expect_wc(&wc, "receive with the sender's own Q_Key", IBV_WC_SUCCESS,
		      IBV_WC_RECV, 0xE2));

	/* privileged: the controlled Q_Key goes out as named */
	TRY(ud_send_qkey(&x.p, x.ma, x.a, r1.qp, CONTROLLED_QKEY, 3));
	TRY(wait_wc(r1.cq, &wc, "QP with Q_Key 0x80010000 (privileged sender)"));
	return expect_wc(&wc, "privileged controlled Q_Key", IBV_WC_SUCCESS,
			 IBV_WC_RECV, 0xE1);
}

/* Read or write device A's sysfs attribute @name. */
static long long dev_attr_get(const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", side_a.name, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int dev_attr_set(const char *name, long long v)
{
	char path[256];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", side_a.name, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	rc = fprintf(f, "%lld\n", v) < 0;
	return fclose(f) || rc ? -1 : 0;
}

/*
 * The cqe_quota of device A: a CQ that would pass it fails with ENOMEM,
 * cqe_quota_refusals moves, cqes_in_use counts exactly the entries of the
 * live CQs, and destroying a CQ gives its entries back.
 */
static int quota_cqe(void)
{
	long long used0, ref0, v;
	struct ibv_cq *c1, *c2;

	used0 = hw_counter("cqes_in_use");
	ref0 = hw_counter("cqe_quota_refusals");
	CHECK(used0 >= 0 && ref0 >= 0, "no cqes_in_use/cqe_quota_refusals counter");
	CHECK(!dev_attr_set("cqe_quota", used0 + 1500), "cannot write cqe_quota: %s",
	      strerror(errno));
	c1 = track(R_CQ, ibv_create_cq(side_a.ctx, 600, NULL, NULL, 0), 0);
	CHECK(c1, "a 600-entry CQ under a quota of %lld free: %s", 1500LL,
	      strerror(errno));
	v = hw_counter("cqes_in_use");
	CHECK(v == used0 + c1->cqe, "cqes_in_use %lld, want %lld + %d", v, used0, c1->cqe);
	c2 = ibv_create_cq(side_a.ctx, 1000, NULL, NULL, 0);
	if (c2) {
		ibv_destroy_cq(c2);
		return fail("a 1000-entry CQ passed the quota (%lld + %d in use of %lld)",
			    used0, c1->cqe, used0 + 1500);
	}
	CHECK(errno == ENOMEM, "CQ over the quota failed with %s, want ENOMEM",
	      strerror(errno));
	v = hw_counter("cqe_quota_refusals");
	CHECK(v == ref0 + 1, "cqe_quota_refusals grew by %lld, want 1", v - ref0);
	CHECK(!ibv_destroy_cq(c1), "ibv_destroy_cq failed");
	untrack(c1);
	v = hw_counter("cqes_in_use");
	CHECK(v == used0, "cqes_in_use %lld after the destroy, want %lld", v, used0);
	c2 = track(R_CQ, ibv_create_cq(side_a.ctx, 1000, NULL, NULL, 0), 0);
	CHECK(c2, "the 1000-entry CQ still fails after the destroy: %s", strerror(errno));
	return T_PASS;
}

static int t_quota_cqe_refuses_enomem_and_frees_on_destroy(void)
{
	long long old;
	int r;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	old = dev_attr_get("cqe_quota");
	CHECK(old > 0, "no /sys/class/infiniband/%s/cqe_quota", side_a.name);
	r = quota_cqe();
	CHECK(!dev_attr_set("cqe_quota", old), "cannot restore cqe_quota");
	return r;
}

/* The same for wqe_quota and the send + receive queues of QPs. */
static int quota_wqe(void)
{
	struct ibv_cq *cq = track(R_CQ, ibv_create_cq(side_a.ctx, 16, NULL, NULL, 0), 0);
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { 100, 100, 1, 1, 0 } };
	long long used0, ref0, v;
	struct ibv_qp *q1, *q2;

	CHECK(cq, "ibv_create_cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = cq;
	used0 = hw_counter("wqes_in_use");
	ref0 = hw_counter("wqe_quota_refusals");
	CHECK(used0 >= 0 && ref0 >= 0, "no wqes_in_use/wqe_quota_refusals counter");
	CHECK(!dev_attr_set("wqe_quota", used0 + 300), "cannot write wqe_quota: %s",
	      strerror(errno));
	q1 = track(R_QP, ibv_create_qp(side_a.pd, &ia), 0);
	CHECK(q1, "a 200-WQE QP under a quota of 300 free: %s", strerror(errno));
	v = hw_counter("wqes_in_use");
	CHECK(v == used0 + ia.cap.max_send_wr + ia.cap.max_recv_wr,
	      "wqes_in_use %lld, want %lld + %u + %u", v, used0, ia.cap.max_send_wr,
	      ia.cap.max_recv_wr);
	ia.cap = (struct ibv_qp_cap){ 100, 100, 1, 1, 0 };
	q2 = ibv_create_qp(side_a.pd, &ia);
	if (q2) {
		ibv_destroy_qp(q2);
		return fail("a second 200-WQE QP passed the quota of %lld", used0 + 300);
	}
	CHECK(errno == ENOMEM, "QP over the quota failed with %s, want ENOMEM",
	      strerror(errno));
	v = hw_counter("wqe_quota_refusals");
	CHECK(v == ref0 + 1, "wqe_quota_refusals grew by %lld, want 1", v - ref0);
	CHECK(!ibv_destroy_qp(q1), "ibv_destroy_qp failed");
	untrack(q1);
	v = hw_counter("wqes_in_use");
	CHECK(v == used0, "wqes_in_use %lld after the destroy, want %lld", v, used0);
	q2 = track(R_QP, ibv_create_qp(side_a.pd, &ia), 0);
	CHECK(q2, "the QP still fails after the destroy: %s", strerror(errno));
	return T_PASS;
}

static int t_quota_wqe_refuses_enomem_and_frees_on_destroy(void)
{
	long long old;
	int r;

	if (!side_a.stellar)
		return skip("%s is not a Stellar device", side_a.name);
	old = dev_attr_get("wqe_quota");
	CHECK(old > 0, "no /sys/class/infiniband/%s/wqe_quota", side_a.name);
	r = quota_wqe();
	CHECK(!dev_attr_set("wqe_quota", old), "cannot restore wqe_quota");
	return r;
}

struct test {
	const char *name;
	int (*fn)(void);
};

#define T(n) { #n, t_##n }
static const struct test tests[] = {
	T(rc_write_lands_byte_exact),
	T(rc_write_gathers_multi_sge_in_order),
	T(rc_read_returns_remote_bytes),
	T(rc_read_scatters_multi_sge),
	T(rc_send_recv_delivers_bytes_and_wc_fields),
	T(rc_send_scatters_into_multi_sge_recv),
	T(rc_send_with_imm_delivers_imm_data),
	T(rc_send_with_imm_zero_length_delivers_imm),
	T(rc_write_with_imm_lands_and_reports_imm),
	T(rc_completions_arrive_in_post_order),
	T(rc_unsignalled_bad_lkey_completes_and_flushes_the_rest),
	T(rc_unsignalled_bad_rkey_completes_and_flushes_the_rest),
	T(rc_inline_send_copies_at_post_time),
	T(rc_inline_write_lands),
	T(rc_atomic_fetch_add_returns_old_and_adds),
	T(rc_atomic_cmp_swap_swaps_only_on_match),
	T(ud_send_recv_reports_grh_and_src_qp),
	T(ud_send_with_imm_delivers_imm_data),
	T(cq_event_fires_once_per_arm),
	T(cq_resize_keeps_unpolled_completions),
	T(uc_write_lands_byte_exact),
	T(uc_send_recv_delivers_bytes),
	T(srq_receives_land_in_post_order),
	T(srq_limit_event_fires_below_the_limit),
	T(qp_query_reports_rts_and_caps),
	T(qp_reset_after_flushes_reconnects_and_carries_a_send),
	T(mr_registered_after_qp_use_works),
	T(mr_pages_touched_after_registration_are_seen),
	T(mr_reg_works_after_packets_sprayed_at_reg_qps),
	/* negative: Stellar's promised error semantics */
	T(send_with_lkey_of_other_pd_fails_loc_prot_err),
	T(send_with_unknown_lkey_fails_loc_prot_err),
	T(send_with_non_public_flags_fails_loc_prot_err),
	T(send_with_sge_past_mr_end_fails_loc_prot_err),
	T(send_with_sge_before_mr_start_fails_loc_prot_err),
	T(send_op_with_sge_past_mr_end_fails_loc_prot_err),
	T(rdma_read_into_mr_without_local_write_fails_loc_prot_err),
	T(atomic_into_mr_without_local_write_fails_loc_prot_err),
	T(post_send_rejects_num_sge_above_cap),
	T(post_send_rejects_inline_above_max),
	T(send_with_lkey_of_deregistered_mr_fails_loc_prot_err),
	T(send_list_with_bad_wr_runs_the_ones_before_it),
	T(post_send_full_queue_is_enomem_not_bad_wr),
	T(recv_into_mr_without_local_write_fails_loc_prot_err),
	T(recv_with_sge_past_mr_end_fails_loc_prot_err),
	T(post_recv_rejects_num_sge_above_cap),
	T(recv_list_with_bad_wr_fails_it_and_flushes_the_rest),
	T(srq_recv_list_with_bad_wr_fails_it_on_the_qp_taking_it),
	T(rereg_mr_translation_moves_the_mr_to_new_memory),
	T(rereg_mr_access_without_remote_write_refuses_writes),
	T(rereg_mr_pd_change_follows_the_pd),
	T(rereg_mr_that_fails_leaves_the_mr_as_it_was),
	T(rdma_write_with_bad_rkey_completes_rem_access_err),
	T(rdma_write_past_remote_mr_end_completes_rem_access_err),
	T(rdma_read_with_bad_rkey_completes_rem_access_err),
	T(rdma_write_to_deregistered_rkey_completes_rem_access_err),
	T(reg_mr_on_unmapped_memory_fails_efault),
	T(reg_mr_zero_length_fails_einval),
	T(reg_mr_remote_write_without_local_write_fails_einval),
	T(reg_mr_remote_atomic_without_local_write_fails_einval),
	T(reg_mr_of_max_mr_size_passes_the_size_check),
	T(reg_mr_above_max_mr_size_fails_einval),
	T(port_does_not_advertise_cm_or_device_mgmt),
	T(qp_modify_reset_to_rts_fails_einval),
	T(qp_modify_init_to_rts_fails_einval),
	T(dealloc_pd_with_live_mr_fails_ebusy),
	T(dealloc_pd_with_live_qp_fails_ebusy),
	T(destroy_cq_in_use_by_qp_fails_ebusy),
	T(open_xrcd_is_unsupported),
	T(mw_type2_write_past_window_end_completes_rem_access_err),
	T(mw_type2_write_before_window_start_completes_rem_access_err),
	T(mw_type2_write_into_rest_of_mr_completes_rem_access_err),
	T(mw_type1_write_past_window_end_completes_rem_access_err),
	T(mw_type2_send_inv_only_from_the_windows_pd),
	T(recv_wc_flags_are_uverbs_bits),
	T(send_inv_of_an_mr_fails_rem_inv_req_err_and_key_is_restored),
	T(qkey_controlled_in_ud_wr_is_replaced_when_unprivileged),
	T(quota_cqe_refuses_enomem_and_frees_on_destroy),
	T(quota_wqe_refuses_enomem_and_frees_on_destroy),
};
#undef T

static int open_side(struct side *s)
{
	struct ibv_device **list;
	char path[512];
	FILE *f;
	int n, rc;

	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "ibv_get_device_list: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), s->name))
			s->ctx = ibv_open_device(list[i]);
	if (!s->ctx) {
		fprintf(stderr, "cannot open device %s (%s)\n", s->name,
			errno ? strerror(errno) : "not in the device list");
		ibv_free_device_list(list);
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/stellar_abi_version",
		 s->name);
	f = fopen(path, "r");
	if (f) {
		s->stellar = 1;
		fclose(f);
	}
	ibv_free_device_list(list);
	rc = ibv_query_device(s->ctx, &s->attr);
	if (!rc)
		rc = ibv_query_port(s->ctx, ib_port, &s->port);
	if (!rc)
		rc = ibv_query_gid(s->ctx, ib_port, gid_index, &s->gid);
	if (rc) {
		fprintf(stderr, "%s: query device/port/gid failed: %s\n", s->name,
			strerror(rc > 0 ? rc : errno));
		return -1;
	}
	if (s->port.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "%s: port %u is not ACTIVE (state %d)\n", s->name,
			ib_port, s->port.state);
		return -1;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd) {
		fprintf(stderr, "%s: ibv_alloc_pd: %s\n", s->name, strerror(errno));
		return -1;
	}
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -a DEV_A -b DEV_B [-g GID_INDEX] [-p PORT] [-t GLOB]... [-l]\n"
		"  -a  requester device (e.g. stellar0)\n"
		"  -b  responder device (e.g. stellar1 or rxe0)\n"
		"  -g  GID index of both devices (default 1: IPv4 RoCEv2)\n"
		"  -t  run only subtests whose name matches GLOB (repeatable)\n"
		"  -l  list subtests and exit\n", prog);
}

int main(int argc, char **argv)
{
	const char *only[64];
	int nonly = 0, passed = 0, failed = 0, skipped = 0, opt;
	char gid_a[INET6_ADDRSTRLEN];

	while ((opt = getopt(argc, argv, "a:b:g:p:t:lh")) != -1) {
		switch (opt) {
		case 'a':
			side_a.name = optarg;
			break;
		case 'b':
			side_b.name = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'p':
			ib_port = (uint8_t)atoi(optarg);
			break;
		case 't':
			if (nonly < 64)
				only[nonly++] = optarg;
			break;
		case 'l':
			for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
				printf("%s\n", tests[i].name);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (!side_a.name || !side_b.name) {
		usage(argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (open_side(&side_a) || open_side(&side_b)) {
		printf("FAIL setup: cannot open %s and %s\n0 passed, 1 failed\n",
		       side_a.name, side_b.name);
		return 1;
	}
	inet_ntop(AF_INET6, side_a.gid.raw, gid_a, sizeof(gid_a));
	printf("# A=%s (%s) B=%s (%s) port %u gid[%d] %s mtu %d atomic_cap %d/%d\n",
	       side_a.name, side_a.stellar ? "stellar" : "not stellar",
	       side_b.name, side_b.stellar ? "stellar" : "not stellar", ib_port,
	       gid_index, gid_a, path_mtu_bytes(), side_a.attr.atomic_cap,
	       side_b.attr.atomic_cap);

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		const struct test *t = &tests[i];
		char cmsg[256] = "";
		int r, want = !nonly;

		for (int k = 0; k < nonly && !want; k++)
			want = !fnmatch(only[k], t->name, 0);
		if (!want)
			continue;
		why[0] = 0;
		r = t->fn();
		if (release_all(cmsg, sizeof(cmsg)) && r == T_PASS) {
			r = T_FAIL;
			snprintf(why, sizeof(why), "%s", cmsg);
		}
		switch (r) {
		case T_PASS:
			printf("PASS %s\n", t->name);
			passed++;
			break;
		case T_SKIP:
			printf("SKIP %s: %s\n", t->name, why);
			skipped++;
			break;
		default:
			printf("FAIL %s: %s\n", t->name, why);
			failed++;
			break;
		}
	}
	if (skipped)
		printf("# %d skipped\n", skipped);
	printf("%d passed, %d failed\n", passed, failed);
	ibv_dealloc_pd(side_a.pd);
	ibv_dealloc_pd(side_b.pd);
	ibv_close_device(side_a.ctx);
	ibv_close_device(side_b.ctx);
	return failed ? 1 : 0;
}
