// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: the rdma-core provider for Stellar para-virtual RDMA devices.
 *
 * Stellar keeps all queue state in stellar.ko, so the provider is only glue:
 * every verb below is one ib_uverbs command (ibv_cmd_*), sent without driver
 * data.  The one exception is ALLOC_CONTEXT, whose response carries struct
 * stellar_alloc_ucontext_resp so that provider and module can refuse each
 * other when their Stellar ABI versions differ.
 *
 * The extended verbs (ibv_create_cq_ex's polling callbacks, ibv_create_qp_ex's
 * ibv_wr_* builder) live here in userspace on top of the same POLL_CQ and
 * POST_SEND commands: the module knows only the legacy data path.
 *
 * Devices are recognised by the stellar_abi_version attribute that
 * stellar.ko puts in the device's sysfs directory, never by their name:
 * the name is chosen (and changeable) by whoever runs "rdma link add".
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stellar-abi.h"
#include "stellar-verbs-abi.h"

/* ib_device_ops.uverbs_abi_ver of stellar.ko: uverbsN/abi_version. */
#define STELLAR_UVERBS_DRIVER_ABI 1

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
};

static inline struct stellar_context *to_stl_ctx(struct ibv_context *ibctx)
{
	return stl_container_of(ibctx, struct stellar_context, ibv_ctx.context);
}

/*
 * Every CQ, plain or extended.  The ibv_cq_ex poll interface is built on the
 * POLL_CQ command: each start_poll/next_poll fetches one completion into
 * @wc, and the read_* callbacks answer from it.  @lock is held from a
 * successful start_poll to end_poll, as the API requires, unless the CQ was
 * created IBV_CREATE_CQ_ATTR_SINGLE_THREADED.
 */
struct stellar_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	bool locking;
	struct ibv_wc wc;
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
 * inl[inl_off, inl_off + inl_len).  The arrays grow with realloc(), so the
 * WRs are linked and pointed at their SGEs only in wr_complete.
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

	/* ibv_qp_ex builder state, from wr_start to wr_complete/wr_abort. */
	pthread_spinlock_t wr_lock;
	uint32_t max_inline;		/* granted by the module */
	int wr_err;			/* first error of this batch */
	struct stellar_pending_wr *wr;
	size_t nwr, wr_cap;
	struct ibv_sge *sge;
	size_t nsge, sge_cap;
	uint8_t *inl;
	size_t inl_len, inl_cap;
};

static inline struct stellar_qp *to_stl_qp(struct ibv_qp *ibqp)
{
	return stl_container_of(ibqp, struct stellar_qp, vqp.qp);
}

static inline struct stellar_qp *to_stl_qp_ex(struct ibv_qp_ex *qpx)
{
	return stl_container_of(qpx, struct stellar_qp, vqp.qp_ex);
}

/*
 * ALLOC_CONTEXT response: the core answer, then Stellar's driver data.  A
 * union, because the core struct ends in a flexible array and so cannot be
 * followed by another member.
 */
union stellar_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_get_context_resp)];
		struct stellar_alloc_ucontext_resp drv;
	};
};

_Static_assert(offsetof(union stellar_get_context_resp, drv) ==
		       sizeof(struct ib_uverbs_get_context_resp),
	       "driver data must follow the core response directly");

static void stl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void stl_warn(const char *fmt, ...)
{
	int saved_errno = errno;
	va_list args;

	fputs("libstellar: ", stderr);
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	errno = saved_errno;
}

/* ------------------------------------------------------------------ */
/* Device and port                                                     */
/* ------------------------------------------------------------------ */

static int stellar_query_device_ex(struct ibv_context *ibctx,
				   const struct ibv_query_device_ex_input *input,
				   struct ibv_device_attr_ex *attr,
				   size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw_ver;
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw_ver = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (uint16_t)(fw_ver >> 32), (uint16_t)(fw_ver >> 16),
		 (uint16_t)fw_ver);
	return 0;
}

static int stellar_query_port(struct ibv_context *ibctx, uint8_t port_num,
			      struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port_num, attr, &cmd, sizeof(cmd));
}

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions                               */
/* ------------------------------------------------------------------ */

static struct ibv_pd *stellar_alloc_pd(struct ibv_context *ibctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd = {};
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(ibctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int stellar_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;

	free(pd);
	return 0;
}

static struct ibv_mr *stellar_reg_mr(struct ibv_pd *pd, void *addr,
				     size_t length, uint64_t hca_va,
				     int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int stellar_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

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

static struct ibv_cq *stellar_create_cq(struct ibv_context *ibctx, int cqe,
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
static struct ibv_cq_ex *stellar_create_cq_ex(struct ibv_context *ibctx,
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

static int stellar_destroy_cq(struct ibv_cq *ibcq)
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
static int stellar_poll_cq(struct ibv_cq *ibcq, int num_entries,
			   struct ibv_wc *wc)
{
	if (num_entries < 0) {
		errno = EINVAL;
		return -1;
	}
	return ibv_cmd_poll_cq(ibcq, num_entries, wc);
}

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */
/* ------------------------------------------------------------------ */

static struct stellar_qp *stellar_alloc_qp(void)
{
	struct stellar_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = pthread_spin_init(&qp->wr_lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	return qp;
}

static void stellar_free_qp(struct stellar_qp *qp)
{
	pthread_spin_destroy(&qp->wr_lock);
	free(qp->wr);
	free(qp->sge);
	free(qp->inl);
	free(qp);
}

static bool stellar_qp_type_ok(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		return true;
	default:
		return false;
	}
}

static struct ibv_qp *stellar_create_qp(struct ibv_pd *pd,
					struct ibv_qp_init_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd = {};
	struct stellar_qp *qp;
	int ret;

	if (!stellar_qp_type_ok(attr->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	qp = stellar_alloc_qp();
	if (!qp)
		return NULL;

	/* On success attr->cap holds the capacities the module granted. */
	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp, sizeof(resp));
	if (ret) {
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

/* ------------------------------------------------------------------ */
/* The ibv_qp_ex work-request builder                                  */
/*                                                                     */
/* Between wr_start and wr_complete the ibv_wr_* calls build a list of */
/* struct ibv_send_wr in the QP; wr_complete posts it with POST_SEND,  */
/* the same command as ibv_post_send.  Inline data is copied here and  */
/* handed to the module as one IBV_SEND_INLINE SGE, which the module   */
/* copies in turn before POST_SEND returns.  A builder call that fails */
/* only records its errno: wr_complete reports the first one and posts */
/* nothing.                                                            */
/* ------------------------------------------------------------------ */

/* WRs per POST_SEND at most: libibverbs builds that command on the stack. */
#define STELLAR_WR_CHUNK 256

static void stellar_wr_fail(struct stellar_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* Room for @need more @size-byte elements in *@arr, which holds *@cap. */
static int stellar_grow(void **arr, size_t *cap, size_t used, size_t need,
			size_t size)
{
	size_t ncap;
	void *p;

	if (need <= *cap - used)
		return 0;
	if (need > SIZE_MAX / size - used)
		return ENOMEM;
	ncap = *cap ? *cap : 16;
	while (ncap - used < need) {
		if (ncap > SIZE_MAX / 2 / size)
			return ENOMEM;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * size);
	if (!p)
		return ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Start a WR: opcode, and the wr_id and wr_flags the caller has set now. */
static struct ibv_send_wr *stellar_wr_new(struct ibv_qp_ex *qpx,
					  enum ibv_wr_opcode opcode)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;
	int ret;

	if (qp->wr_err)
		return NULL;
	ret = stellar_grow((void **)&qp->wr, &qp->wr_cap, qp->nwr, 1,
			   sizeof(*qp->wr));
	if (ret) {
		stellar_wr_fail(qp, ret);
		return NULL;
	}

	p = &qp->wr[qp->nwr++];
	*p = (struct stellar_pending_wr){
		.wr = {
			.wr_id = qpx->wr_id,
			.opcode = opcode,
			/* Inline comes from wr_set_inline_data*, not wr_flags. */
			.send_flags = qpx->wr_flags &
				      ~(unsigned int)IBV_SEND_INLINE,
		},
		.sge_first = qp->nsge,
		.inl_off = qp->inl_len,
	};
	return &p->wr;
}

/*
 * The WR the data setters apply to: the last one started.  Its SGEs and
 * inline bytes are the last in their arrays, so setting them again just
 * drops the previous ones.
 */
static struct stellar_pending_wr *stellar_wr_cur(struct stellar_qp *qp)
{
	struct stellar_pending_wr *p;

	if (qp->wr_err)
		return NULL;
	if (!qp->nwr) {
		stellar_wr_fail(qp, EINVAL);
		return NULL;
	}
	p = &qp->wr[qp->nwr - 1];
	qp->nsge = p->sge_first;
	qp->inl_len = p->inl_off;
	p->is_inline = false;
	p->inl_len = 0;
	p->wr.num_sge = 0;
	p->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
	return p;
}

static void stellar_wr_start(struct ibv_qp_ex *qpx)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);

	pthread_spin_lock(&qp->wr_lock);
	qp->wr_err = 0;
	qp->nwr = 0;
	qp->nsge = 0;
	qp->inl_len = 0;
}

static void stellar_wr_reset_unlock(struct stellar_qp *qp)
{
	qp->wr_err = 0;
	qp->nwr = 0;
	qp->nsge = 0;
	qp->inl_len = 0;
	pthread_spin_unlock(&qp->wr_lock);
}

static void stellar_wr_abort(struct ibv_qp_ex *qpx)
{
	stellar_wr_reset_unlock(to_stl_qp_ex(qpx));
}

static int stellar_wr_complete(struct ibv_qp_ex *qpx)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct ibv_send_wr *bad;
	size_t i, first;
	int ret = qp->wr_err;

	for (i = 0; !ret && i < qp->nwr; i++) {
		struct stellar_pending_wr *p = &qp->wr[i];
		struct ibv_send_wr *wr = &p->wr;

		/* POST_SEND on a UD QP reads every WR's AH handle. */
		if (qpx->qp_base.qp_type == IBV_QPT_UD && !wr->wr.ud.ah) {
			ret = EINVAL;
			break;
		}
		wr->sg_list = wr->num_sge ? &qp->sge[p->sge_first] : NULL;
		if (p->is_inline && wr->num_sge)
			qp->sge[p->sge_first] = (struct ibv_sge){
				.addr = (uintptr_t)(qp->inl + p->inl_off),
				.length = p->inl_len,
			};
		wr->next = (i + 1) % STELLAR_WR_CHUNK && i + 1 < qp->nwr ?
			   &qp->wr[i + 1].wr : NULL;
	}

	/* In order; the module stops at the first WR it refuses, as we do. */
	for (first = 0; !ret && first < qp->nwr; first += STELLAR_WR_CHUNK)
		ret = ibv_cmd_post_send(&qpx->qp_base, &qp->wr[first].wr, &bad);

	stellar_wr_reset_unlock(qp);
	return ret;
}

static void stellar_wr_send(struct ibv_qp_ex *qpx)
{
	stellar_wr_new(qpx, IBV_WR_SEND);
}

static void stellar_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void stellar_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			    uint32_t rkey, uint64_t remote_addr,
			    __be32 imm_data)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->wr.rdma.rkey = rkey;
	wr->imm_data = imm_data;
}

static void stellar_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr)
{
	stellar_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void stellar_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, __be32 imm_data)
{
	stellar_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
			imm_data);
}

static void stellar_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr)
{
	stellar_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void stellar_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
			      uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, opcode);

	if (!wr)
		return;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
	wr->wr.atomic.rkey = rkey;
}

static void stellar_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare,
				      uint64_t swap)
{
	stellar_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			  compare, swap);
}

static void stellar_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	stellar_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			  add, 0);
}

/* UD only: on RC/UC the address union holds the RDMA/atomic target. */
static void stellar_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct ibv_send_wr *wr;

	if (qp->wr_err)
		return;
	if (!qp->nwr) {
		stellar_wr_fail(qp, EINVAL);
		return;
	}
	if (qpx->qp_base.qp_type != IBV_QPT_UD)
		return;
	if (!ah) {
		stellar_wr_fail(qp, EINVAL);
		return;
	}
	wr = &qp->wr[qp->nwr - 1].wr;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

static void stellar_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				    const struct ibv_sge *sg_list)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;
	int ret;

	p = stellar_wr_cur(qp);
	if (!p)
		return;
	if (num_sge > INT32_MAX) {
		stellar_wr_fail(qp, EINVAL);
		return;
	}
	ret = stellar_grow((void **)&qp->sge, &qp->sge_cap, qp->nsge, num_sge,
			   sizeof(*qp->sge));
	if (ret) {
		stellar_wr_fail(qp, ret);
		return;
	}
	if (num_sge)
		memcpy(&qp->sge[qp->nsge], sg_list, num_sge * sizeof(*sg_list));
	qp->nsge += num_sge;
	p->wr.num_sge = (int)num_sge;
}

static void stellar_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			       uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = { .addr = addr, .length = length,
				     .lkey = lkey };

	stellar_wr_set_sge_list(qpx, 1, &sge);
}

static void stellar_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					    size_t num_buf,
					    const struct ibv_data_buf *buf_list)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;
	size_t i, total = 0;
	int ret;

	p = stellar_wr_cur(qp);
	if (!p)
		return;
	/* The module's limit, checked here so that the batch fails early. */
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - total) {
			stellar_wr_fail(qp, EINVAL);
			return;
		}
		total += buf_list[i].length;
	}
	ret = stellar_grow((void **)&qp->inl, &qp->inl_cap, qp->inl_len, total,
			   1);
	if (!ret)
		ret = stellar_grow((void **)&qp->sge, &qp->sge_cap, qp->nsge, 1,
				   sizeof(*qp->sge));
	if (ret) {
		stellar_wr_fail(qp, ret);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (!buf_list[i].length)
			continue;
		memcpy(qp->inl + qp->inl_len, buf_list[i].addr,
		       buf_list[i].length);
		qp->inl_len += buf_list[i].length;
	}
	p->is_inline = true;
	p->inl_len = (uint32_t)total;
	p->wr.send_flags |= IBV_SEND_INLINE;
	/* One SGE over the copy, filled in by wr_complete; none if empty. */
	if (total) {
		qp->nsge++;
		p->wr.num_sge = 1;
	}
}

static void stellar_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				       size_t length)
{
	const struct ibv_data_buf buf = { .addr = addr, .length = length };

	stellar_wr_set_inline_data_list(qpx, 1, &buf);
}

/*
 * What the device cannot do, or the QP was not created for: the call
 * still fails the batch rather than crash on a NULL pointer.
 */
static void stellar_wr_refuse(struct ibv_qp_ex *qpx)
{
	stellar_wr_fail(to_stl_qp_ex(qpx), EOPNOTSUPP);
}

static void stellar_wr_refuse_rkey(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_rdma(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr)
{
	(void)rkey;
	(void)remote_addr;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_rdma_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				       uint64_t remote_addr, __be32 imm_data)
{
	(void)rkey;
	(void)remote_addr;
	(void)imm_data;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	(void)imm_data;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare,
				      uint64_t swap)
{
	(void)rkey;
	(void)remote_addr;
	(void)compare;
	(void)swap;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	(void)rkey;
	(void)remote_addr;
	(void)add;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
				      uint32_t rkey,
				      const struct ibv_mw_bind_info *bind_info)
{
	(void)mw;
	(void)rkey;
	(void)bind_info;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_tso(struct ibv_qp_ex *qpx, void *hdr,
				  uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	stellar_wr_refuse(qpx);
}

static void stellar_wr_refuse_atomic_write(struct ibv_qp_ex *qpx,
					   uint32_t rkey, uint64_t remote_addr,
					   const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	stellar_wr_refuse(qpx);
}

/* The send_ops_flags each QP type can have: what the module posts. */
#define STELLAR_SEND_OPS_UD                                                    \
	((uint64_t)(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM))
#define STELLAR_SEND_OPS_UC                                                    \
	(STELLAR_SEND_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE |                     \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define STELLAR_SEND_OPS_ATOMIC                                                \
	((uint64_t)(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                        \
		    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
#define STELLAR_SEND_OPS_RC                                                    \
	(STELLAR_SEND_OPS_UC | IBV_QP_EX_WITH_RDMA_READ |                      \
	 STELLAR_SEND_OPS_ATOMIC)

static void stellar_set_send_ops(struct stellar_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qpx->wr_start = stellar_wr_start;
	qpx->wr_complete = stellar_wr_complete;
	qpx->wr_abort = stellar_wr_abort;

	qpx->wr_send = ops & IBV_QP_EX_WITH_SEND ?
		       stellar_wr_send : stellar_wr_refuse;
	qpx->wr_send_imm = ops & IBV_QP_EX_WITH_SEND_WITH_IMM ?
			   stellar_wr_send_imm : stellar_wr_refuse_imm;
	qpx->wr_rdma_write = ops & IBV_QP_EX_WITH_RDMA_WRITE ?
			     stellar_wr_rdma_write : stellar_wr_refuse_rdma;
	qpx->wr_rdma_write_imm = ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM ?
				 stellar_wr_rdma_write_imm :
				 stellar_wr_refuse_rdma_imm;
	qpx->wr_rdma_read = ops & IBV_QP_EX_WITH_RDMA_READ ?
			    stellar_wr_rdma_read : stellar_wr_refuse_rdma;
	qpx->wr_atomic_cmp_swp = ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP ?
				 stellar_wr_atomic_cmp_swp :
				 stellar_wr_refuse_cmp_swp;
	qpx->wr_atomic_fetch_add = ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD ?
				   stellar_wr_atomic_fetch_add :
				   stellar_wr_refuse_fetch_add;

	/* Never offered (refused at create time): fail the batch if called. */
	qpx->wr_bind_mw = stellar_wr_refuse_bind_mw;
	qpx->wr_local_inv = stellar_wr_refuse_rkey;
	qpx->wr_send_inv = stellar_wr_refuse_rkey;
	qpx->wr_send_tso = stellar_wr_refuse_tso;
	qpx->wr_set_xrc_srqn = stellar_wr_refuse_rkey;
	qpx->wr_atomic_write = stellar_wr_refuse_atomic_write;

	qpx->wr_set_ud_addr = stellar_wr_set_ud_addr;
	qpx->wr_set_sge = stellar_wr_set_sge;
	qpx->wr_set_sge_list = stellar_wr_set_sge_list;
	qpx->wr_set_inline_data = stellar_wr_set_inline_data;
	qpx->wr_set_inline_data_list = stellar_wr_set_inline_data_list;
}

/* 0, or the errno with which send_ops_flags @ops are refused on @attr's QP. */
static int stellar_check_send_ops(struct ibv_context *ibctx,
				  const struct ibv_qp_init_attr_ex *attr,
				  uint64_t ops)
{
	struct ibv_device_attr dattr;
	uint64_t sup;
	int ret;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
		sup = STELLAR_SEND_OPS_RC;
		break;
	case IBV_QPT_UC:
		sup = STELLAR_SEND_OPS_UC;
		break;
	default:
		sup = STELLAR_SEND_OPS_UD;
		break;
	}
	if (ops & ~sup)
		return EOPNOTSUPP;

	/* The module posts atomics only if the device underneath has them. */
	if (ops & STELLAR_SEND_OPS_ATOMIC) {
		ret = ibv_query_device(ibctx, &dattr);
		if (ret)
			return ret;
		if (dattr.atomic_cap == IBV_ATOMIC_NONE)
			return EOPNOTSUPP;
	}
	return 0;
}

#define STELLAR_QP_COMP_MASK_KNOWN                                             \
	((uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |              \
		    IBV_QP_INIT_ATTR_CREATE_FLAGS |                            \
		    IBV_QP_INIT_ATTR_MAX_TSO_HEADER |                          \
		    IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |    \
		    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))

static struct ibv_qp *stellar_create_qp_ex(struct ibv_context *ibctx,
					   struct ibv_qp_init_attr_ex *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_create_qp cmd = {};
	struct ibv_qp_init_attr_ex kattr;
	struct stellar_qp *qp;
	bool qp_ex;
	int ret;

	if (attr->comp_mask & ~STELLAR_QP_COMP_MASK_KNOWN) {
		errno = EINVAL;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	/* XRC, TSO and RSS have no Stellar counterpart, nor create flags. */
	if ((attr->comp_mask & (IBV_QP_INIT_ATTR_XRCD |
				IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				IBV_QP_INIT_ATTR_IND_TABLE |
				IBV_QP_INIT_ATTR_RX_HASH)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    !stellar_qp_type_ok(attr->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp_ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (qp_ex) {
		ret = stellar_check_send_ops(ibctx, attr, attr->send_ops_flags);
		if (ret) {
			errno = ret;
			return NULL;
		}
	}

	qp = stellar_alloc_qp();
	if (!qp)
		return NULL;

	/* The kernel sees a plain QP; send_ops_flags stay in userspace. */
	kattr = *attr;
	kattr.comp_mask = IBV_QP_INIT_ATTR_PD;
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd, sizeof(cmd),
				   &resp, sizeof(resp));
	if (ret) {
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}
	attr->cap = kattr.cap;

	if (qp_ex) {
		qp->max_inline = kattr.cap.max_inline_data;
		stellar_set_send_ops(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;
}

static int stellar_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			    int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int stellar_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			     int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int stellar_destroy_qp(struct ibv_qp *ibqp)
{
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	stellar_free_qp(to_stl_qp(ibqp));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Address handles                                                     */
/* ------------------------------------------------------------------ */

static struct ibv_ah *stellar_create_ah(struct ibv_pd *pd,
					struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ibv_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	return ah;
}

static int stellar_destroy_ah(struct ibv_ah *ah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ah);
	if (ret)
		return ret;

	free(ah);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

static void stellar_free_context(struct ibv_context *ibctx);

/* Anything left NULL answers EOPNOTSUPP through libibverbs' dummy ops. */
static const struct verbs_context_ops stellar_ctx_ops = {
	.alloc_pd = stellar_alloc_pd,
	.create_ah = stellar_create_ah,
	.create_cq = stellar_create_cq,
	.create_cq_ex = stellar_create_cq_ex,
	.create_qp = stellar_create_qp,
	.create_qp_ex = stellar_create_qp_ex,
	.dealloc_pd = stellar_dealloc_pd,
	.dereg_mr = stellar_dereg_mr,
	.destroy_ah = stellar_destroy_ah,
	.destroy_cq = stellar_destroy_cq,
	.destroy_qp = stellar_destroy_qp,
	.free_context = stellar_free_context,
	.modify_qp = stellar_modify_qp,
	.poll_cq = stellar_poll_cq,
	.post_recv = ibv_cmd_post_recv,
	.post_send = ibv_cmd_post_send,
	.query_device_ex = stellar_query_device_ex,
	.query_port = stellar_query_port,
	.query_qp = stellar_query_qp,
	.reg_mr = stellar_reg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
};

static struct verbs_context *stellar_alloc_context(struct ibv_device *ibdev,
						   int cmd_fd,
						   void *private_data)
{
	union stellar_get_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct stellar_context *ctx;
	int ret;

	(void)private_data;

	/* Consumes cmd_fd on failure.  Driver id 0 (UNKNOWN) as in stellar.ko. */
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
		(struct verbs_context *)offsetof(struct stellar_context, ibv_ctx),
		RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_uninit;

	if (resp.drv.abi_version != STELLAR_UVERBS_ABI_VERSION) {
		stl_warn("%s: kernel module speaks Stellar ABI %u, this provider %u\n",
			 ibdev->name, resp.drv.abi_version,
			 STELLAR_UVERBS_ABI_VERSION);
		ret = EPROTO;
		goto err_uninit;
	}
	ctx->max_inline_data = resp.drv.max_inline_data;

	verbs_set_ops(&ctx->ibv_ctx, &stellar_ctx_ops);
	return &ctx->ibv_ctx;

err_uninit:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

/* libibverbs passes the ibv_context embedded in our verbs_context. */
static void stellar_free_context(struct ibv_context *ibctx)
{
	struct stellar_context *ctx = to_stl_ctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/* ------------------------------------------------------------------ */
/* Devices and registration                                            */
/* ------------------------------------------------------------------ */

/*
 * Claim a device only if stellar.ko marked it with its ABI attribute and
 * the version is the one this provider speaks.  Called for every uverbs
 * device libibverbs has not matched by driver id, so absence is silent.
 */
static bool stellar_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	int saved_errno = errno;
	unsigned long ver;
	char buf[16];
	char *end;
	bool match = false;

	if (ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs_dev, "%s",
				      STELLAR_SYSFS_ABI_ATTR) <= 0)
		goto out;

	errno = 0;
	ver = strtoul(buf, &end, 10);
	if (errno || end == buf || *end != '\0') {
		stl_warn("%s: unreadable %s \"%s\", device ignored\n",
			 sysfs_dev->ibdev_name, STELLAR_SYSFS_ABI_ATTR, buf);
		goto out;
	}
	if (ver != STELLAR_UVERBS_ABI_VERSION) {
		stl_warn("%s: kernel module speaks Stellar ABI %lu, this provider %u; device ignored\n",
			 sysfs_dev->ibdev_name, ver, STELLAR_UVERBS_ABI_VERSION);
		goto out;
	}
	match = true;
out:
	errno = saved_errno;
	return match;
}

static struct verbs_device *
stellar_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct stellar_device *dev;

	(void)sysfs_dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void stellar_uninit_device(struct verbs_device *vdev)
{
	free(to_stl_dev(vdev));
}

/* libibverbs 44 walks match_table unconditionally: keep the sentinel. */
static const struct verbs_match_ent stellar_match_table[] = {
	{ .kind = VERBS_MATCH_SENTINEL },
};

static const struct verbs_device_ops stellar_dev_ops = {
	.name = STELLAR_DRIVER_NAME,
	.match_min_abi_version = STELLAR_UVERBS_DRIVER_ABI,
	.match_max_abi_version = STELLAR_UVERBS_DRIVER_ABI,
	.match_table = stellar_match_table,
	.match_device = stellar_match_device,
	.alloc_context = stellar_alloc_context,
	.alloc_device = stellar_alloc_device,
	.uninit_device = stellar_uninit_device,
};

/* What rdma-core's PROVIDER_DRIVER() does for an in-tree provider. */
static void __attribute__((constructor)) stellar_register_driver(void)
{
	verbs_register_driver_34(&stellar_dev_ops);
}
