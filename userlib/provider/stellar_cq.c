// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: completion queues, plain and extended.
 *
 * Every CQ is one ib_uverbs CQ; ibv_create_cq_ex's polling callbacks are
 * built here on the same POLL_CQ command as ibv_poll_cq.
 */
#include <errno.h>
#include <stdlib.h>

#include "stellar.h"

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */
/* ------------------------------------------------------------------ */

static struct stellar_cq *stellar_alloc_cq(bool locking)
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
	return cq;
}

static void stellar_free_cq(struct stellar_cq *cq)
{
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

struct ibv_cq *stellar_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector)
{
	struct ib_uverbs_create_cq_resp resp;
	struct ibv_create_cq cmd = {};
	struct stellar_cq *cq;
	int ret;

	cq = stellar_alloc_cq(false);
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		stellar_free_cq(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

/* ibv_cq_ex polling: one completion per POLL_CQ command, into cq->wc. */

static int stellar_cq_fetch(struct stellar_cq *cq)
{
	int n;

	errno = 0;
	n = ibv_cmd_poll_cq(&cq->vcq.cq, 1, &cq->wc);
	if (n < 0)
		return errno ? errno : EIO;
	if (n == 0)
		return ENOENT;

	cq->vcq.cq_ex.status = cq->wc.status;
	cq->vcq.cq_ex.wr_id = cq->wc.wr_id;
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

static enum ibv_wc_opcode stellar_read_opcode(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.opcode;
}

static uint32_t stellar_read_vendor_err(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.vendor_err;
}

static uint32_t stellar_read_byte_len(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.byte_len;
}

static __be32 stellar_read_imm_data(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.imm_data;
}

static uint32_t stellar_read_qp_num(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.qp_num;
}

static uint32_t stellar_read_src_qp(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.src_qp;
}

static unsigned int stellar_read_wc_flags(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.wc_flags;
}

static uint32_t stellar_read_slid(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.slid;
}

static uint8_t stellar_read_sl(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.sl;
}

static uint8_t stellar_read_dlid_path_bits(struct ibv_cq_ex *cq_ex)
{
	return to_stl_cq_ex(cq_ex)->wc.dlid_path_bits;
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
	struct ib_uverbs_ex_create_cq_resp resp = {};
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

	cq = stellar_alloc_cq(!(flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED));
	if (!cq)
		return NULL;

	/* Nothing the kernel needs to see beyond size, channel and vector. */
	kattr = (struct ibv_cq_init_attr_ex){
		.cqe = attr->cqe,
		.cq_context = attr->cq_context,
		.channel = attr->channel,
		.comp_vector = attr->comp_vector,
	};
	ret = ibv_cmd_create_cq_ex(ibctx, &kattr, &cq->vcq, &cmd, sizeof(cmd),
				   &resp, sizeof(resp), 0);
	if (ret == EOPNOTSUPP || ret == ENOSYS) {
		struct ib_uverbs_create_cq_resp lresp;
		struct ibv_create_cq lcmd = {};

		ret = ibv_cmd_create_cq(ibctx, attr->cqe, attr->channel,
					attr->comp_vector, &cq->vcq.cq, &lcmd,
					sizeof(lcmd), &lresp, sizeof(lresp));
	}
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

/*
 * The POLL_CQ write command sizes its output from cmd.ne alone, so a
 * negative count must not reach it.  Returns the number of completions, or
 * -1 with errno set.
 */
int stellar_poll_cq(struct ibv_cq *ibcq, int num_entries,
		    struct ibv_wc *wc)
{
	if (num_entries < 0) {
		errno = EINVAL;
		return -1;
	}
	return ibv_cmd_poll_cq(ibcq, num_entries, wc);
}
