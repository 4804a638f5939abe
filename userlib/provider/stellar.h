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
#include <rdma/rdma_user_rxe.h>

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

/*
 * A queue mapped from the module: the rxe user ABI's layout (the kernel's
 * struct rxe_queue_buf: the element size and index mask, the producer and the
 * consumer index each in its own cache line, then the elements).  The
 * module writes the producer index of a CQ and the consumer index of a
 * work queue; this side writes the other.  Indices are masked.
 */
struct stellar_ring_hdr {
	uint32_t log2_elem_size;
	uint32_t index_mask;
	uint32_t pad_1[30];
	uint32_t producer_index;
	uint32_t pad_2[31];
	uint32_t consumer_index;
	uint32_t pad_3[31];
	uint8_t data[];
};

_Static_assert(offsetof(struct stellar_ring_hdr, producer_index) == 128 &&
		       offsetof(struct stellar_ring_hdr, consumer_index) == 256 &&
		       offsetof(struct stellar_ring_hdr, data) == 384,
	       "the rxe queue layout");

struct stellar_ring {
	struct stellar_ring_hdr *q;	/* the mapping */
	size_t map_size;
	uint32_t mask;			/* entries - 1 */
	uint32_t log2;			/* log2 of the element size */
};

static inline void *stellar_ring_slot(const struct stellar_ring *r,
				      uint32_t idx)
{
	return r->q->data + ((size_t)(idx & r->mask) << r->log2);
}

/*
 * Every CQ, plain or extended: its ring, read with no system call.  The
 * ibv_cq_ex interface copies one completion out of the ring into @cur at
 * start_poll and next_poll; the read_* callbacks answer from it.  @lock is
 * held from a successful start_poll to end_poll, as the API requires, unless
 * the CQ was created IBV_CREATE_CQ_ATTR_SINGLE_THREADED; ibv_poll_cq and
 * ibv_resize_cq always take it.
 */
struct stellar_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	bool locking;
	bool is_ex;
	struct stellar_ring ring;
	struct ibv_wc cur;
};

static inline struct stellar_cq *to_stl_cq(struct ibv_cq *ibcq)
{
	return stl_container_of(ibcq, struct stellar_cq, vcq.cq);
}

static inline struct stellar_cq *to_stl_cq_ex(struct ibv_cq_ex *cq_ex)
{
	return stl_container_of(cq_ex, struct stellar_cq, vcq.cq_ex);
}

/* An AH: the number UD send ring entries name it by (the module's). */
struct stellar_ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num;
};

static inline struct stellar_ah *to_stl_ah(struct ibv_ah *ibah)
{
	return stl_container_of(ibah, struct stellar_ah, ibv_ah);
}

/* An SRQ and its receive ring (posted to with no system call). */
struct stellar_srq {
	struct ibv_srq ibv_srq;
	pthread_spinlock_t lock;
	struct stellar_ring ring;
	uint32_t max_sge;
};

static inline struct stellar_srq *to_stl_srq(struct ibv_srq *ibsrq)
{
	return stl_container_of(ibsrq, struct stellar_srq, ibv_srq);
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

struct stellar_qp {
	struct verbs_qp vqp;

	/* The send ring (@sq_lock) and the receive ring (@rq_lock; none on an SRQ). */
	pthread_spinlock_t sq_lock, rq_lock;
	struct stellar_ring sq, rq;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline;		/* granted by the module */

	/*
	 * ibv_qp_ex builder state, from wr_start to wr_complete/wr_abort,
	 * guarded by @wr_lock.  The arrays are allocated at QP creation for
	 * a full send queue: a batch longer than the queue fails (ENOMEM).
	 */
	pthread_spinlock_t wr_lock;
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

/* stellar.c */
int stellar_cmd(struct ibv_context *ctx, void *cmd, size_t size, void *resp,
		size_t resp_size);
int stellar_doorbell(struct ibv_context *ctx, uint32_t command,
		     uint32_t handle);
int stellar_ring_map(struct stellar_ring *r, struct ibv_context *ibctx,
		     const struct mminfo *mi);
void stellar_ring_unmap(struct stellar_ring *r);

/* stellar_cq.c */
struct ibv_cq *stellar_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector);
struct ibv_cq_ex *stellar_create_cq_ex(struct ibv_context *ibctx,
				       struct ibv_cq_init_attr_ex *attr);
int stellar_destroy_cq(struct ibv_cq *ibcq);
int stellar_poll_cq(struct ibv_cq *ibcq, int num_entries,
		    struct ibv_wc *wc);
int stellar_resize_cq(struct ibv_cq *ibcq, int cqe);

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
int stellar_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		    struct ibv_mw_bind *mw_bind);
int stellar_ring_post_recv(struct stellar_ring *r, uint32_t max_sge,
			   struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

#endif /* STELLAR_H */
