// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: completion queues, plain and extended.
 *
 * Every CQ is one ib_uverbs CQ; ibv_create_cq_ex's polling callbacks are
 * built here on the same POLL_CQ command as ibv_poll_cq.  That command is
 * built in the CQ (no allocation per poll) and fetches a batch, which the
 * extended interface then hands out one completion at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stellar.h"

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */
/* ------------------------------------------------------------------ */

/* The write() form of POLL_CQ for STELLAR_CQ_BATCH completions. */
struct stellar_poll_cq_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_poll_cq core;
};

struct stellar_poll_cq_resp {
	struct ib_uverbs_poll_cq_resp core;
	struct ib_uverbs_wc wc[STELLAR_CQ_BATCH];
};

struct stellar_poll_cq_buf {
	struct stellar_poll_cq_cmd cmd;
	struct stellar_poll_cq_resp resp;
};

_Static_assert(sizeof(struct stellar_poll_cq_cmd) % 4 == 0 &&
		       sizeof(struct stellar_poll_cq_resp) % 4 == 0 &&
		       sizeof(struct stellar_poll_cq_resp) / 4 <= UINT16_MAX,
	       "POLL_CQ sizes are counted in 32-bit words");

static struct stellar_cq *stellar_alloc_cq(bool locking, bool is_ex)
{
	struct stellar_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	if (is_ex) {
		cq->cmd = calloc(1, sizeof(struct stellar_poll_cq_buf));
		if (!cq->cmd) {
			free(cq);
			return NULL;
		}
	}
	ret = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(cq->cmd);
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
	pthread_spin_destroy(&cq->lock);
	free(cq->cmd);
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

	cq = stellar_alloc_cq(false, false);
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

/*
 * One POLL_CQ command for up to @ne (<= STELLAR_CQ_BATCH) completions into
 * @wc.  Returns how many arrived, or -errno.
 */
static int stellar_cq_poll_cmd(struct stellar_cq *cq, int ne,
			       struct ibv_wc *wc)
{
	struct stellar_poll_cq_buf *b = cq->cmd;
	struct ibv_context *ibctx = cq->vcq.cq.context;
	uint32_t i, n;
	int ret;

	b->cmd = (struct stellar_poll_cq_cmd){
		.hdr = {
			.command = IB_USER_VERBS_CMD_POLL_CQ,
			.in_words = sizeof(b->cmd) / 4,
			.out_words = sizeof(b->resp) / 4,
		},
		.core = {
			.response = (uintptr_t)&b->resp,
			.cq_handle = cq->vcq.cq.handle,
			.ne = (uint32_t)ne,
		},
	};
	b->resp.core.count = 0;
	ret = stellar_cmd(ibctx, &b->cmd, sizeof(b->cmd), &b->resp,
			  sizeof(b->resp));
	if (ret)
		return -ret;

	n = b->resp.core.count;
	if (n > (uint32_t)ne)
		return -EIO;
	for (i = 0; i < n; i++) {
		const struct ib_uverbs_wc *k = &b->resp.wc[i];

		wc[i] = (struct ibv_wc){
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
	return (int)n;
}

/*
 * Make cq->wc[cq->head] the current completion: from what an earlier
 * POLL_CQ left, else from a new one.  Called with cq->lock held (or a
 * single-threaded CQ).
 */
static int stellar_cq_fetch(struct stellar_cq *cq)
{
	int n;

	if (!cq->count) {
		n = stellar_cq_poll_cmd(cq, STELLAR_CQ_BATCH, cq->wc);
		if (n < 0)
			return -n;
		if (n == 0)
			return ENOENT;
		cq->head = 0;
		cq->count = (unsigned int)n;
	}
	cq->vcq.cq_ex.status = cq->wc[cq->head].status;
	cq->vcq.cq_ex.wr_id = cq->wc[cq->head].wr_id;
	cq->cur = true;
	return 0;
}

/*
 * The current completion was handed to the application: drop it.  After a
 * next_poll that found nothing there is none, but end_poll still comes.
 */
static void stellar_cq_consume(struct stellar_cq *cq)
{
	if (!cq->cur)
		return;
	cq->cur = false;
	cq->head++;
	cq->count--;
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
	struct stellar_cq *cq = to_stl_cq_ex(cq_ex);

	stellar_cq_consume(cq);
	return stellar_cq_fetch(cq);
}

static void stellar_end_poll(struct ibv_cq_ex *cq_ex)
{
	struct stellar_cq *cq = to_stl_cq_ex(cq_ex);

	stellar_cq_consume(cq);
	if (cq->locking)
		pthread_spin_unlock(&cq->lock);
}

static const struct ibv_wc *stellar_cur_wc(struct ibv_cq_ex *cq_ex)
{
	struct stellar_cq *cq = to_stl_cq_ex(cq_ex);

	return &cq->wc[cq->head];
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
	struct stellar_cq *cq = to_stl_cq(ibcq);
	int n = 0, ret;

	if (num_entries < 0) {
		errno = EINVAL;
		return -1;
	}
	if (!cq->is_ex)
		return ibv_cmd_poll_cq(ibcq, num_entries, wc);

	/* An extended CQ may hold completions a batch fetched: those first. */
	if (cq->locking)
		pthread_spin_lock(&cq->lock);
	while (n < num_entries) {
		int want = num_entries - n;

		if (cq->count) {
			if ((unsigned int)want > cq->count)
				want = (int)cq->count;
			memcpy(wc + n, &cq->wc[cq->head], want * sizeof(*wc));
			cq->head += want;
			cq->count -= want;
			n += want;
			continue;
		}
		if (want > STELLAR_CQ_BATCH)
			want = STELLAR_CQ_BATCH;
		ret = stellar_cq_poll_cmd(cq, want, wc + n);
		if (ret < 0) {
			if (!n) {
				errno = -ret;
				n = -1;
			}
			break;
		}
		n += ret;
		if (ret < want)
			break;
	}
	if (cq->locking)
		pthread_spin_unlock(&cq->lock);
	return n;
}
