// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: completion queues, plain and extended.
 *
 * Every CQ is a ring the module fills from the parent CQ's completion
 * handler (the rxe user ABI: elements are struct ib_uverbs_wc), mapped
 * into the process: ibv_poll_cq and the ibv_cq_ex interface read it with
 * no system call.  Arming (ibv_req_notify_cq) is the core command.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stellar.h"

/* The CQ ring's elements, as the module writes them. */
_Static_assert(sizeof(struct ib_uverbs_wc) <= 64, "a CQE fits its slot");

/*
 * ALLOC responses: the core answer, then the rxe driver data.  Unions,
 * because the core structs end in a flexible array.
 */
union stellar_create_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_create_cq_resp)];
		struct rxe_create_cq_resp drv;
	};
};

union stellar_create_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_ex_create_cq_resp)];
		struct rxe_create_cq_resp drv;
	};
};

union stellar_resize_cq_resp {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_resize_cq_resp)];
		struct rxe_resize_cq_resp drv;
	};
};

static struct stellar_cq *stellar_alloc_cq(bool locking, bool is_ex)
{
	struct stellar_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	cq->locking = locking;
	cq->is_ex = is_ex;
	return cq;
}

static void stellar_free_cq(struct stellar_cq *cq)
{
	stellar_ring_unmap(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

/* Map the new CQ's ring; on failure the CQ is destroyed again. */
static int stellar_cq_map(struct stellar_cq *cq, const struct mminfo *mi)
{
	int ret = stellar_ring_map(&cq->ring, cq->vcq.cq.context, mi);

	if (ret)
		ibv_cmd_destroy_cq(&cq->vcq.cq);
	return ret;
}

struct ibv_cq *stellar_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector)
{
	union stellar_create_cq_resp resp = {};
	struct ibv_create_cq cmd = {};
	struct stellar_cq *cq;
	int ret;

	cq = stellar_alloc_cq(true, false);
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (!ret)
		ret = stellar_cq_map(cq, &resp.drv.mi);
	if (ret) {
		stellar_free_cq(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

/* The module's ib_uverbs_wc as the application's ibv_wc. */
static void stellar_wc_from(struct ibv_wc *wc, const struct ib_uverbs_wc *k)
{
	*wc = (struct ibv_wc){
		.wr_id = k->wr_id,
		.status = k->status,
		.opcode = k->opcode,
		.vendor_err = k->vendor_err,
		.byte_len = k->byte_len,
		.imm_data = k->ex.imm_data,
		.qp_num = k->qp_num,
		.src_qp = k->src_qp,
		.wc_flags = k->wc_flags,
		.pkey_index = k->pkey_index,
		.slid = k->slid,
		.sl = k->sl,
		.dlid_path_bits = k->dlid_path_bits,
	};
}

/*
 * Take the oldest completion of the ring into @wc.  Returns false when the
 * ring is empty.  Called with cq->lock held (or a single-threaded CQ).
 */
static bool stellar_cq_take(struct stellar_cq *cq, struct ibv_wc *wc)
{
	struct stellar_ring_hdr *q = cq->ring.q;
	uint32_t cons = q->consumer_index & cq->ring.mask;

	/* The entry is read only after the index that shows it. */
	if (cons == (__atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE) &
		     cq->ring.mask))
		return false;
	stellar_wc_from(wc, stellar_ring_slot(&cq->ring, cons));
	/* Read before the module may reuse the slot. */
	__atomic_store_n(&q->consumer_index, (cons + 1) & cq->ring.mask,
			 __ATOMIC_RELEASE);
	return true;
}

/* The current completion for the read_* callbacks, or ENOENT. */
static int stellar_cq_fetch(struct stellar_cq *cq)
{
	if (!stellar_cq_take(cq, &cq->cur))
		return ENOENT;
	cq->vcq.cq_ex.status = cq->cur.status;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	return 0;
}

/* On any non-zero return the caller must not call end_poll: unlock here. */
static int stellar_start_poll(struct ibv_cq_ex *cq_ex,
			      struct ibv_poll_cq_attr *attr)
{
	struct stellar_cq *cq = to_stl_cq_ex(cq_ex);
	int ret;

	if (attr && attr->comp_mask)
		return EINVAL;

	if (cq->locking)
		pthread_spin_lock(&cq->lock);
	ret = stellar_cq_fetch(cq);
	if (ret && cq->locking)
		pthread_spin_unlock(&cq->lock);
	return ret;
}

static int stellar_next_poll(struct ibv_cq_ex *cq_ex)
{
	return stellar_cq_fetch(to_stl_cq_ex(cq_ex));
}

static void stellar_end_poll(struct ibv_cq_ex *cq_ex)
{
	struct stellar_cq *cq = to_stl_cq_ex(cq_ex);

	if (cq->locking)
		pthread_spin_unlock(&cq->lock);
}

static const struct ibv_wc *stellar_cur_wc(struct ibv_cq_ex *cq_ex)
{
	return &to_stl_cq_ex(cq_ex)->cur;
}

static enum ibv_wc_opcode stellar_read_opcode(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->opcode;
}

static uint32_t stellar_read_vendor_err(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->vendor_err;
}

static uint32_t stellar_read_byte_len(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->byte_len;
}

static __be32 stellar_read_imm_data(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->imm_data;
}

static uint32_t stellar_read_qp_num(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->qp_num;
}

static uint32_t stellar_read_src_qp(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->src_qp;
}

static unsigned int stellar_read_wc_flags(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->wc_flags;
}

static uint32_t stellar_read_slid(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->slid;
}

static uint8_t stellar_read_sl(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->sl;
}

static uint8_t stellar_read_dlid_path_bits(struct ibv_cq_ex *cq_ex)
{
	return stellar_cur_wc(cq_ex)->dlid_path_bits;
}

/*
 * What a struct ibv_wc carries.  Timestamps, CVLAN, flow tag and tag
 * matching information are not reported by the module: refused.
 */
#define STELLAR_CQ_WC_FLAGS                                                    \
	((uint64_t)(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |             \
		    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |            \
		    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |                  \
		    IBV_WC_EX_WITH_DLID_PATH_BITS))
#define STELLAR_CQ_COMP_MASK ((uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS)
/* IGNORE_OVERRUN would need the module's help: only the threading hint. */
#define STELLAR_CQ_FLAGS ((uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)

/*
 * libibverbs calls this through __lib_ibv_create_cq_ex, which initialises
 * the ibv_cq part (channel, cq_context, events) afterwards.
 */
struct ibv_cq_ex *stellar_create_cq_ex(struct ibv_context *ibctx,
				       struct ibv_cq_init_attr_ex *attr)
{
	union stellar_create_cq_ex_resp resp = {};
	struct ibv_create_cq_ex cmd = {};
	struct ibv_cq_init_attr_ex kattr;
	struct ibv_cq_ex *cq_ex;
	struct stellar_cq *cq;
	uint32_t flags = 0;
	int ret;

	if (attr->comp_mask & ~(STELLAR_CQ_COMP_MASK |
				IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;		/* bits this release does not know */
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		errno = EOPNOTSUPP;	/* needs a parent domain: none here */
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS)
		flags = attr->flags;
	if ((flags & ~STELLAR_CQ_FLAGS) ||
	    (attr->wc_flags & ~STELLAR_CQ_WC_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = stellar_alloc_cq(!(flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED),
			      true);
	if (!cq)
		return NULL;

	/* Nothing the kernel needs to see beyond size, channel and vector. */
	kattr = (struct ibv_cq_init_attr_ex){
		.cqe = attr->cqe,
		.cq_context = attr->cq_context,
		.channel = attr->channel,
		.comp_vector = attr->comp_vector,
	};
	ret = ibv_cmd_create_cq_ex(ibctx, &kattr,
#ifdef STELLAR_CMD_CREATE_CQ_EX_PROV_ATTR
				   NULL,
#endif
				   &cq->vcq, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0);
	if (!ret)
		ret = stellar_cq_map(cq, &resp.drv.mi);
	if (ret) {
		stellar_free_cq(cq);
		errno = ret;
		return NULL;
	}

	/*
	 * All readers are set whatever wc_flags asked for: a struct ibv_wc
	 * has every standard field, so none of them can be wrong.
	 */
	cq_ex = &cq->vcq.cq_ex;
	cq_ex->start_poll = stellar_start_poll;
	cq_ex->next_poll = stellar_next_poll;
	cq_ex->end_poll = stellar_end_poll;
	cq_ex->read_opcode = stellar_read_opcode;
	cq_ex->read_vendor_err = stellar_read_vendor_err;
	cq_ex->read_byte_len = stellar_read_byte_len;
	cq_ex->read_imm_data = stellar_read_imm_data;
	cq_ex->read_qp_num = stellar_read_qp_num;
	cq_ex->read_src_qp = stellar_read_src_qp;
	cq_ex->read_wc_flags = stellar_read_wc_flags;
	cq_ex->read_slid = stellar_read_slid;
	cq_ex->read_sl = stellar_read_sl;
	cq_ex->read_dlid_path_bits = stellar_read_dlid_path_bits;
	return cq_ex;
}

int stellar_destroy_cq(struct ibv_cq *ibcq)
{
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	stellar_free_cq(to_stl_cq(ibcq));
	return 0;
}

/* Returns the number of completions, or -1 with errno set. */
int stellar_poll_cq(struct ibv_cq *ibcq, int num_entries,
		    struct ibv_wc *wc)
{
	struct stellar_cq *cq = to_stl_cq(ibcq);
	int n = 0;

	if (num_entries < 0) {
		errno = EINVAL;
		return -1;
	}
	pthread_spin_lock(&cq->lock);
	while (n < num_entries && stellar_cq_take(cq, &wc[n]))
		n++;
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * ibv_resize_cq: the module makes a new ring, moves the completions not
 * yet polled into it and answers where it is; the old one is unmapped.
 * Returns 0 or an errno value.
 */
int stellar_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct stellar_cq *cq = to_stl_cq(ibcq);
	union stellar_resize_cq_resp resp = {};
	struct ibv_resize_cq cmd = {};
	struct stellar_ring old, nr = {};
	int ret;

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (!ret)
		ret = stellar_ring_map(&nr, ibcq->context, &resp.drv.mi);
	if (!ret) {
		old = cq->ring;
		cq->ring = nr;
	}
	pthread_spin_unlock(&cq->lock);
	if (!ret)
		stellar_ring_unmap(&old);
	return ret;
}
