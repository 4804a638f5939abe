/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libstellar: the provider's internal types and prototypes, sectioned by
 * the file that defines them.
 */
#ifndef STELLAR_H
#define STELLAR_H

#include <pthread.h>

#ifdef STELLAR_IN_TREE
/*
 * Built as providers/stellar inside the rdma-core source of the target
 * release (userlib/rdma-core-provider.sh): that release's own provider ABI.
 */
#include <stddef.h>
#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
#else
#include "stellar-verbs-abi.h"
#endif

#define stl_container_of(ptr, type, member)                                    \
	((type *)((char *)(ptr) - offsetof(type, member)))

struct stellar_device {
	struct verbs_device ibv_dev;
};

static inline struct stellar_device *to_stl_dev(struct verbs_device *vdev)
{
	return stl_container_of(vdev, struct stellar_device, ibv_dev);
}

struct stellar_context {
	struct verbs_context ibv_ctx;
	uint32_t max_inline_data;	/* from the module, for information */
	enum ibv_atomic_cap atomic_cap;	/* queried once, for QP creation */
};

static inline struct stellar_context *to_stl_ctx(struct ibv_context *ibctx)
{
	return stl_container_of(ibctx, struct stellar_context, ibv_ctx.context);
}

/* Completions one POLL_CQ command fetches for the ibv_cq_ex interface. */
#define STELLAR_CQ_BATCH 32

/*
 * Every CQ, plain or extended.  The ibv_cq_ex poll interface is built on the
 * POLL_CQ command: start_poll/next_poll fetch up to STELLAR_CQ_BATCH
 * completions at once into @wc, and serve them one by one; @wc[@head] is
 * the one the read_* callbacks answer from, consumed by the next
 * next_poll or end_poll.  Completions fetched but not yet
 * handed out stay in @wc for the next start_poll (or ibv_poll_cq).  @lock is
 * held from a successful start_poll to end_poll, as the API requires, unless
 * the CQ was created IBV_CREATE_CQ_ATTR_SINGLE_THREADED; it also guards
 * @head, @count and @cmd.
 */
struct stellar_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	bool locking;
	bool is_ex;
	unsigned int head, count;	/* @wc[head...head+count) unconsumed */
	bool cur;			/* @wc[head] handed out, not consumed */
	struct ibv_wc wc[STELLAR_CQ_BATCH];
	void *cmd;			/* POLL_CQ command and response */
};

static inline struct stellar_cq *to_stl_cq(struct ibv_cq *ibcq)
{
	return stl_container_of(ibcq, struct stellar_cq, vcq.cq);
}

static inline struct stellar_cq *to_stl_cq_ex(struct ibv_cq_ex *cq_ex)
{
	return stl_container_of(cq_ex, struct stellar_cq, vcq.cq_ex);
}

/*
 * One WR of a QP's ibv_qp_ex work-request builder, between its op call and
 * wr_complete: its SGEs are sge[sge_first...], its inline data, if any,
 * inl[inl_off, inl_off + inl_len).  The WRs are linked and pointed at their
 * SGEs only in wr_complete.
 */
struct stellar_pending_wr {
	struct ibv_send_wr wr;
	size_t sge_first;
	size_t inl_off;
	uint32_t inl_len;
	bool is_inline;
};

/*
 * A POST_SEND or POST_RECV command under construction: allocated once per
 * QP, sized for the queue (at most what one command can carry), and
 * guarded by @lock while a command is built and written.
 */
struct stellar_cmd_buf {
	pthread_mutex_t lock;
	void *buf;
	size_t size;
};

struct stellar_qp {
	struct verbs_qp vqp;

	struct stellar_cmd_buf sq_cmd, rq_cmd;

	/*
	 * ibv_qp_ex builder state, from wr_start to wr_complete/wr_abort,
	 * guarded by @wr_lock.  The arrays are allocated at QP creation for
	 * a full send queue: a batch longer than the queue fails (ENOMEM).
	 */
	pthread_spinlock_t wr_lock;
	uint32_t max_inline;		/* granted by the module */
	int wr_err;			/* first error of this batch */
	struct stellar_pending_wr *wr;
	size_t nwr, wr_cap;
	struct ibv_sge *sge;
	size_t nsge, sge_cap;
	uint8_t *inl;
	size_t inl_len, inl_cap;
	uint32_t max_sge;		/* SGEs one builder WR may have */
};

static inline struct stellar_qp *to_stl_qp(struct ibv_qp *ibqp)
{
	return stl_container_of(ibqp, struct stellar_qp, vqp.qp);
}

static inline struct stellar_qp *to_stl_qp_ex(struct ibv_qp_ex *qpx)
{
	return stl_container_of(qpx, struct stellar_qp, vqp.qp_ex);
}

/* stellar_cq.c */
struct ibv_cq *stellar_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector);
struct ibv_cq_ex *stellar_create_cq_ex(struct ibv_context *ibctx,
				       struct ibv_cq_init_attr_ex *attr);
int stellar_cmd(struct ibv_context *ctx, void *cmd, size_t size, void *resp,
		size_t resp_size);
int stellar_destroy_cq(struct ibv_cq *ibcq);
int stellar_poll_cq(struct ibv_cq *ibcq, int num_entries,
		    struct ibv_wc *wc);

/* stellar_qp.c */
struct ibv_qp *stellar_create_qp(struct ibv_pd *pd,
				 struct ibv_qp_init_attr *attr);
struct ibv_qp *stellar_create_qp_ex(struct ibv_context *ibctx,
				    struct ibv_qp_init_attr_ex *attr);
int stellar_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr);
int stellar_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask);
int stellar_destroy_qp(struct ibv_qp *ibqp);
int stellar_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int stellar_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

#endif /* STELLAR_H */
