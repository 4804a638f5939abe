// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * verbs_batch DEVICE [GID_INDEX]: libstellar's posting and polling paths
 * under load, against a real device (run in the test VM):
 *   - ibv_wr_complete posts a batch all or nothing, with one doorbell,
 *     and a batch longer than the send queue fails with ENOMEM;
 *   - long ibv_post_recv lists on a small thread stack;
 *   - a UD ibv_post_send without an AH fails with EINVAL;
 *   - ibv_cq_ex polling reads completions from the CQ's ring with no
 *     command, none lost;
 *   - QP creation sends no QUERY_DEVICE command.
 * Commands are counted by interposing write() and ioctl() on the context's
 * command file descriptor (this executable's definitions come first in
 * symbol lookup, for libibverbs and the provider alike).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "stl_tlib.h"

static int failures;

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s (errno %d: %s)\n",     \
				__func__, __LINE__, #cond, errno,              \
				strerror(errno));                              \
			failures++;                                            \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* Counting uverbs commands                                             */
/* ------------------------------------------------------------------ */

static int count_fd = -1;
static long ncmds;

ssize_t write(int fd, const void *buf, size_t len)
{
	if (fd == count_fd)
		__atomic_add_fetch(&ncmds, 1, __ATOMIC_RELAXED);
	return syscall(SYS_write, fd, buf, len);
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd == count_fd)
		__atomic_add_fetch(&ncmds, 1, __ATOMIC_RELAXED);
	return syscall(SYS_ioctl, fd, req, arg);
}

static long cmds(void)
{
	return __atomic_load_n(&ncmds, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	union ibv_gid gid;
	int gid_index;
};

#define BUF_LEN (1 << 20)
#define DST_OFF (BUF_LEN / 2)

static int connect_self(struct env *e, struct ibv_qp *qp)
{
	struct tlib_rc_peer self = {
		.qpn = qp->qp_num, .gid = e->gid,
		.sgid_index = e->gid_index, .mtu = IBV_MTU_1024,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	const char *step;

	return tlib_rc_connect(qp, &self, &step);
}

/* Completions on @cq within @ms milliseconds (at most @max). */
static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int max, int ms)
{
	struct timespec start, now;
	int got = 0, n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		n = ibv_poll_cq(cq, max - got < 16 ? max - got : 16, wc + got);
		if (n < 0)
			return -1;
		got += n;
		if (got >= max)
			return got;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000 > ms)
			return got;
	}
}

/* An RC QP with send ops, connected to itself, on @cq. */
static struct ibv_qp *rc_qp_ex(struct env *e, struct ibv_cq *cq,
			       uint32_t sq, uint32_t rq, uint32_t *granted)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = sq, .max_recv_wr = rq,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = e->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(e->ctx, &ia);

	if (!qp)
		return NULL;
	if (granted)
		*granted = ia.cap.max_send_wr;
	if (connect_self(e, qp)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static bool zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * @n RDMA WRITEs of 8 bytes, src[8i] -> dst[8i], signaled, wr_id i; WR
 * @bad_at (if < n) has two SGEs on a QP of one.  Returns wr_complete's
 * value.
 */
static int write_batch(struct env *e, struct ibv_qp *qp, int n, int bad_at)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	struct ibv_sge two[2];
	int i;

	ibv_wr_start(qpx);
	for (i = 0; i < n; i++) {
		qpx->wr_id = (uint64_t)i;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qpx, e->mr->rkey,
				  (uintptr_t)e->buf + DST_OFF + 8 * (size_t)i);
		if (i == bad_at) {
			two[0] = (struct ibv_sge){ (uintptr_t)e->buf + 8 * (size_t)i,
						   4, e->mr->lkey };
			two[1] = (struct ibv_sge){ (uintptr_t)e->buf + 8 * (size_t)i + 4,
						   4, e->mr->lkey };
			ibv_wr_set_sge_list(qpx, 2, two);
			continue;
		}
		ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf + 8 * (size_t)i,
			       8);
	}
	return ibv_wr_complete(qpx);
}

static void fill_src(struct env *e)
{
	size_t i;

	for (i = 0; i < DST_OFF; i++)
		e->buf[i] = (uint8_t)(i * 13 + 1);
	memset(e->buf + DST_OFF, 0, BUF_LEN - DST_OFF);
}

/* 1. A bad WR anywhere in a batch: nothing of it is posted. */
static void wr_complete_is_all_or_nothing(struct env *e)
{
	static const int bad_at[] = { 0, 5, 7 };
	struct ibv_wc wc[16];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	unsigned int t;
	int n, ret;

	cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	qp = cq ? rc_qp_ex(e, cq, 16, 1, NULL) : NULL;
	EXPECT(qp != NULL);
	if (!qp)
		goto out;

	for (t = 0; t < sizeof(bad_at) / sizeof(bad_at[0]); t++) {
		fill_src(e);
		ret = write_batch(e, qp, 8, bad_at[t]);
		EXPECT(ret == EINVAL);
		n = drain(cq, wc, 16, 500);
		/*
		 * The provider checks the whole batch before it writes any
		 * of it into the send ring.
		 */
		if (n != 0 || !zero(e->buf + DST_OFF, 64))
			fprintf(stderr, "bad WR %d of 8 (the WRs before it were posted): %d completions, %s\n",
				bad_at[t], n, zero(e->buf + DST_OFF, 64) ?
				"remote memory unchanged" :
				"remote memory written");
		EXPECT(n == 0);
		EXPECT(zero(e->buf + DST_OFF, 64));
	}

	/* The QP still works: a good batch lands whole. */
	fill_src(e);
	EXPECT(write_batch(e, qp, 8, -1) == 0);
	n = drain(cq, wc, 16, 10000);
	EXPECT(n == 8);
	for (t = 0; (int)t < n; t++)
		EXPECT(wc[t].status == IBV_WC_SUCCESS && wc[t].wr_id == t);
	EXPECT(memcmp(e->buf + DST_OFF, e->buf, 64) == 0);
	printf("wr_complete_is_all_or_nothing: done\n");
out:
	if (qp)
		EXPECT(ibv_destroy_qp(qp) == 0);
	if (cq)
		EXPECT(ibv_destroy_cq(cq) == 0);
}

/*
 * 2. A full send queue is one command (the ring, then one doorbell); one
 * WR more, or 5000, is ENOMEM.
 */
static void wr_batch_is_bounded_by_the_sq(struct env *e)
{
	static struct ibv_wc wc[1024];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint32_t granted = 0;
	long before;
	int n, sq, i;
	bool inorder = true;

	cq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	qp = cq ? rc_qp_ex(e, cq, 512, 1, &granted) : NULL;
	EXPECT(qp != NULL);
	if (!qp)
		goto out;
	/* What ibv_create_qp_ex reported is the bound. */
	sq = (int)granted;
	EXPECT(sq >= 512 && sq <= 1024);
	if (sq < 512 || sq > 1024)
		goto out;

	fill_src(e);
	EXPECT(write_batch(e, qp, sq + 1, -1) == ENOMEM);
	EXPECT(write_batch(e, qp, 5000, -1) == ENOMEM);
	EXPECT(drain(cq, wc, 1024, 500) == 0);
	EXPECT(zero(e->buf + DST_OFF, 8 * 5000));

	before = cmds();
	EXPECT(write_batch(e, qp, sq, -1) == 0);
	EXPECT(cmds() - before == 1);
	printf("wr_batch_is_bounded_by_the_sq: %d WRs in %ld command(s)\n", sq,
	       cmds() - before);
	n = drain(cq, wc, sq, 60000);
	EXPECT(n == sq);
	for (i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i)
			inorder = false;
	EXPECT(inorder);
	EXPECT(memcmp(e->buf + DST_OFF, e->buf, 8 * (size_t)sq) == 0);
out:
	if (qp)
		EXPECT(ibv_destroy_qp(qp) == 0);
	if (cq)
		EXPECT(ibv_destroy_cq(cq) == 0);
}

/* 3a. 4096 receive WRs in one ibv_post_recv on a 64 KiB stack. */
#define LONG_LIST 4096

struct recv_job {
	struct env *e;
	struct ibv_qp *qp;
	int ret;
	struct ibv_recv_wr *bad;
};

static void *post_long_recv_list(void *arg)
{
	struct recv_job *j = arg;
	struct ibv_recv_wr *wr = calloc(LONG_LIST, sizeof(*wr));
	struct ibv_sge *sge = calloc(LONG_LIST, sizeof(*sge));
	int i;

	j->ret = ENOMEM;
	if (!wr || !sge)
		goto out;
	for (i = 0; i < LONG_LIST; i++) {
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)j->e->buf + DST_OFF + 64 * (size_t)(i % 4096),
			.length = 64, .lkey = j->e->mr->lkey,
		};
		wr[i] = (struct ibv_recv_wr){
			.wr_id = (uint64_t)i, .sg_list = &sge[i], .num_sge = 1,
			.next = i + 1 < LONG_LIST ? &wr[i + 1] : NULL,
		};
	}
	j->ret = ibv_post_recv(j->qp, wr, &j->bad);
out:
	free(wr);
	free(sge);
	return NULL;
}

static int small_stack_child(struct env *e)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 1, .max_recv_wr = LONG_LIST,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	struct recv_job j = { .e = e };
	pthread_attr_t attr;
	pthread_t t;
	struct ibv_cq *cq;

	cq = ibv_create_cq(e->ctx, 2 * LONG_LIST, NULL, NULL, 0);
	if (!cq)
		return 2;
	ia.send_cq = ia.recv_cq = cq;
	j.qp = ibv_create_qp(e->pd, &ia);
	if (!j.qp) {
		perror("ibv_create_qp (RQ 4096)");
		return 2;
	}
	/* Receives are posted from INIT on. */
	if (ibv_modify_qp(j.qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return 2;
	if (pthread_attr_init(&attr) ||
	    pthread_attr_setstacksize(&attr, 64 * 1024) ||
	    pthread_create(&t, &attr, post_long_recv_list, &j) ||
	    pthread_join(t, NULL))
		return 2;
	if (j.ret) {
		fprintf(stderr, "ibv_post_recv of %d WRs: %s\n", LONG_LIST,
			strerror(j.ret));
		return 1;
	}
	return ibv_destroy_qp(j.qp) || ibv_destroy_cq(cq) ? 1 : 0;
}

/* 3b. A UD send without an AH. */
static int ud_null_ah_child(struct env *e)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr[2] = {
		{ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .next = &wr[1],
		  .wr.ud = { .ah = NULL, .remote_qpn = 1,
			     .remote_qkey = 0x11111111 } },
		{ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND },
	}, *bad = NULL;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	int ret;

	cq = ibv_create_cq(e->ctx, 8, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = cq;
	qp = cq ? ibv_create_qp(e->pd, &ia) : NULL;
	if (!qp)
		return 2;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret != EINVAL || bad != &wr[0]) {
		fprintf(stderr, "UD send, no AH: ret %d, bad_wr %p (wr %p)\n",
			ret, (void *)bad, (void *)wr);
		return 1;
	}
	return ibv_destroy_qp(qp) || ibv_destroy_cq(cq) ? 1 : 0;
}

static int env_open(struct env *e, const char *dev, int gid_index);
static void env_close(struct env *e);

/*
 * Run @fn in a child: a crash there is a failure, not the end of the run.
 * ib_uverbs refuses commands written by another process than the opener,
 * so the child opens the device itself.
 */
static void in_child(const char *name, int (*fn)(struct env *),
		     const char *dev, int gid_index)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		struct env ce;
		int ret;

		if (env_open(&ce, dev, gid_index))
			_exit(2);
		ret = fn(&ce);
		env_close(&ce);
		_exit(ret);
	}
	EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "%s: killed by signal %d\n", name,
			WTERMSIG(status));
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	printf("%s: %s\n", name, WIFEXITED(status) && !WEXITSTATUS(status) ?
	       "done" : "failed");
}

/* 4. ibv_cq_ex: batches per command, every completion once, in order. */
#define NCQE 256

static void cq_ex_polls_in_batches(struct env *e)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 2 * NCQE };
	struct ibv_poll_cq_attr pa = {};
	struct ibv_send_wr *wr = calloc(NCQE, sizeof(*wr));
	struct ibv_sge *sge = calloc(NCQE, sizeof(*sge));
	struct ibv_send_wr *bad;
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp = NULL;
	struct timespec start, now;
	long before, used, empty = 0;
	uint64_t next = 0;
	bool inorder = true;
	int i, ret, session = 0;

	cq = ibv_create_cq_ex(e->ctx, &ca);
	EXPECT(cq && wr && sge);
	if (!cq || !wr || !sge)
		goto out;
	qp = rc_qp_ex(e, ibv_cq_ex_to_cq(cq), NCQE, 1, NULL);
	EXPECT(qp != NULL);
	if (!qp)
		goto out;

	fill_src(e);
	for (i = 0; i < NCQE; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)e->buf + 8 * i,
					   .length = 8, .lkey = e->mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = (uint64_t)i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)e->buf +
						    DST_OFF + 8 * i,
				     .rkey = e->mr->rkey },
			.next = i + 1 < NCQE ? &wr[i + 1] : NULL,
		};
	}
	EXPECT(ibv_post_send(qp, wr, &bad) == 0);
	sleep(2);	/* let them all complete: count only fetches with data */

	/*
	 * Sessions of up to 5 completions, then end_poll with the rest of a
	 * fetched batch still unread; every third round ibv_poll_cq takes 2.
	 */
	before = cmds();
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (next < NCQE) {
		if (++session % 3 == 0) {
			struct ibv_wc w[2];
			int n = ibv_poll_cq(ibv_cq_ex_to_cq(cq), 2, w);

			for (i = 0; i < n; i++)
				if (w[i].wr_id != next++ ||
				    w[i].status != IBV_WC_SUCCESS)
					inorder = false;
			if (n == 0)
				empty++;
		} else {
			ret = ibv_start_poll(cq, &pa);
			if (ret == ENOENT) {
				empty++;
			} else if (ret) {
				EXPECT(ret == 0);
				break;
			} else {
				for (i = 0; !ret; i++) {
					if (cq->wr_id != next++ ||
					    cq->status != IBV_WC_SUCCESS)
						inorder = false;
					if (i == 4)
						break;
					ret = ibv_next_poll(cq);
				}
				if (ret == ENOENT)
					empty++;
				ibv_end_poll(cq);
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 30)
			break;
	}
	used = cmds() - before;
	ret = ibv_start_poll(cq, &pa);
	EXPECT(ret == ENOENT);
	if (!ret) {
		fprintf(stderr, "extra completion: wr_id %llu status %d\n",
			(unsigned long long)cq->wr_id, cq->status);
		ibv_end_poll(cq);
	}
	printf("cq_ex_polls_in_batches: %d completions, %ld commands (%ld empty polls)\n",
	       NCQE, used, empty);
	EXPECT(next == NCQE);
	EXPECT(inorder);
	/* All of them read from the CQ's ring: no command at all. */
	EXPECT(used == 0);
	EXPECT(memcmp(e->buf + DST_OFF, e->buf, 8 * NCQE) == 0);
out:
	if (qp)
		EXPECT(ibv_destroy_qp(qp) == 0);
	if (cq)
		EXPECT(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
	free(wr);
	free(sge);
}

/* 5. Creating QPs with atomics costs no QUERY_DEVICE each. */
static long create_qps(struct env *e, struct ibv_cq *cq, uint64_t ops, int n)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = e->pd, .send_ops_flags = ops,
	};
	long before = cmds();
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_qp *qp = ibv_create_qp_ex(e->ctx, &ia);

		EXPECT(qp != NULL);
		if (!qp)
			return -1;
		EXPECT(ibv_destroy_qp(qp) == 0);
	}
	return cmds() - before;
}

static void qp_create_does_not_query_device(struct env *e)
{
	struct ibv_device_attr da;
	struct ibv_cq *cq;
	long plain, atomic;

	EXPECT(ibv_query_device(e->ctx, &da) == 0);
	if (da.atomic_cap == IBV_ATOMIC_NONE) {
		printf("qp_create_does_not_query_device: SKIP (no atomics)\n");
		return;
	}
	cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	EXPECT(cq != NULL);
	if (!cq)
		return;
	plain = create_qps(e, cq, IBV_QP_EX_WITH_SEND, 100);
	atomic = create_qps(e, cq, IBV_QP_EX_WITH_SEND |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, 100);
	printf("qp_create_does_not_query_device: 100 QPs: %ld commands plain, %ld with atomics\n",
	       plain, atomic);
	EXPECT(plain > 0 && atomic >= plain && atomic - plain <= 1);
	EXPECT(ibv_destroy_cq(cq) == 0);
}

/* Context, PD, a BUF_LEN buffer registered for everything, the GID. */
static int env_open(struct env *e, const char *dev, int gid_index)
{
	memset(e, 0, sizeof(*e));
	e->gid_index = gid_index;
	e->ctx = tlib_open_device(dev);
	if (!e->ctx) {
		fprintf(stderr, "verbs_batch: cannot open %s\n", dev);
		return -1;
	}
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = aligned_alloc(4096, BUF_LEN);
	e->mr = e->pd && e->buf ? ibv_reg_mr(e->pd, e->buf, BUF_LEN,
					     IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ) : NULL;
	EXPECT(e->mr != NULL);
	EXPECT(ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid) == 0);
	return e->mr ? 0 : -1;
}

static void env_close(struct env *e)
{
	EXPECT(ibv_dereg_mr(e->mr) == 0);
	EXPECT(ibv_dealloc_pd(e->pd) == 0);
	EXPECT(ibv_close_device(e->ctx) == 0);
	free(e->buf);
}

int main(int argc, char **argv)
{
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct env e;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [GID_INDEX]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	if (env_open(&e, argv[1], gid_index))
		return 1;
	count_fd = e.ctx->cmd_fd;

	qp_create_does_not_query_device(&e);
	in_child("post_recv_4096_on_64k_stack", small_stack_child, argv[1],
		 gid_index);
	in_child("ud_post_send_without_ah_is_einval", ud_null_ah_child,
		 argv[1], gid_index);
	cq_ex_polls_in_batches(&e);
	wr_batch_is_bounded_by_the_sq(&e);
	wr_complete_is_all_or_nothing(&e);

	env_close(&e);
	printf("verbs_batch %s: %s\n", argv[1], failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
