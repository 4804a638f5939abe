// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: queue pairs and the ibv_qp_ex work-request builder.
 *
 * Every QP is one ib_uverbs QP; the ibv_wr_* calls of an extended QP are
 * collected here and posted, all of a batch in one POST_SEND command.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stellar.h"

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* POST_SEND and POST_RECV, built in a per-QP buffer                   */
/*                                                                     */
/* libibverbs' ibv_cmd_post_send/recv build the command with alloca(), */
/* so a long list costs its whole size in stack; and one command can   */
/* carry at most UINT16_MAX 32-bit words.  Here each QP has one buffer */
/* per direction, allocated at creation for its queue depth (capped at */
/* that command limit), and a list is sent as one command, or on the   */
/* plain path as several when it does not fit.  The layout is the      */
/* write() command ib_uverbs decodes: header, core request, the WRs,   */
/* then all their SGEs.                                                */
/* ------------------------------------------------------------------ */

/*
 * The most bytes one command can be: in_words of the write() form is 16
 * bits (see stellar_cmd() for which form is used).
 */
#define STELLAR_CMD_MAX ((size_t)UINT16_MAX * 4 / 8 * 8)

struct stellar_post_send_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_send core;
};

struct stellar_post_recv_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_recv core;
};

#define STELLAR_SEND_WQE sizeof(struct ib_uverbs_send_wr)
#define STELLAR_RECV_WQE sizeof(struct ib_uverbs_recv_wr)
#define STELLAR_SGE sizeof(struct ib_uverbs_sge)

_Static_assert(sizeof(struct ib_uverbs_sge) == sizeof(struct ibv_sge),
	       "SGEs are copied as they are");
_Static_assert(sizeof(struct stellar_post_send_cmd) % 8 == 0 &&
		       sizeof(struct stellar_post_recv_cmd) % 8 == 0 &&
		       STELLAR_SEND_WQE % 8 == 0 && STELLAR_RECV_WQE % 8 == 0,
	       "POST commands stay a whole number of words");

/* A buffer for @nwr WRs of @nsge SGEs each, at most STELLAR_CMD_MAX. */
static int stellar_cmd_buf_init(struct stellar_cmd_buf *cb, size_t hdr,
				size_t wqe, uint32_t nwr, uint32_t nsge)
{
	size_t per = wqe + (size_t)(nsge ? nsge : 1) * STELLAR_SGE;
	size_t size = hdr + (size_t)(nwr ? nwr : 1) * per;
	int ret;

	if (size > STELLAR_CMD_MAX || (size - hdr) / per != (nwr ? nwr : 1))
		size = STELLAR_CMD_MAX;
	cb->buf = malloc(size);
	if (!cb->buf)
		return ENOMEM;
	ret = pthread_mutex_init(&cb->lock, NULL);
	if (ret) {
		free(cb->buf);
		cb->buf = NULL;
		return ret;
	}
	cb->size = size;
	return 0;
}

static void stellar_cmd_buf_free(struct stellar_cmd_buf *cb)
{
	if (!cb->buf)
		return;
	pthread_mutex_destroy(&cb->lock);
	free(cb->buf);
}


/*
 * How many WRs from @wr, at most @max, fit in @room bytes of a POST_SEND
 * command, and their SGEs (*@nsge).  *@bad is set to the first WR that
 * can never be posted (negative SGE count, a UD WR without an AH), which
 * ends the count.
 */
static uint32_t stellar_send_fit(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
				 size_t room, uint32_t max, uint32_t *nsge,
				 struct ibv_send_wr **bad)
{
	uint32_t n = 0;

	*nsge = 0;
	*bad = NULL;
	for (; wr && n < max; wr = wr->next) {
		size_t need;

		if (wr->num_sge < 0 ||
		    (ibqp->qp_type == IBV_QPT_UD && !wr->wr.ud.ah)) {
			*bad = wr;
			break;
		}
		need = STELLAR_SEND_WQE + (size_t)wr->num_sge * STELLAR_SGE;
		if (need > room)
			break;
		room -= need;
		*nsge += (uint32_t)wr->num_sge;
		n++;
	}
	return n;
}

/*
 * Post the first @nwr WRs of @wr (holding @nsge SGEs) as one POST_SEND
 * command.  On failure *@bad is the WR the module refused, or @wr.
 */
static int stellar_send_cmd(struct stellar_qp *qp, struct ibv_send_wr *wr,
			    uint32_t nwr, uint32_t nsge,
			    struct ibv_send_wr **bad)
{
	struct ibv_qp *ibqp = &qp->vqp.qp;
	struct stellar_post_send_cmd *cmd = qp->sq_cmd.buf;
	struct ib_uverbs_post_send_resp resp = {};
	struct ib_uverbs_send_wr *k = (void *)(cmd + 1);
	struct ib_uverbs_sge *sg = (void *)(k + nwr);
	size_t size = (size_t)((uint8_t *)(sg + nsge) - (uint8_t *)cmd);
	struct ibv_send_wr *i = wr;
	uint32_t n;
	int ret;

	*cmd = (struct stellar_post_send_cmd){
		.hdr = {
			.command = IB_USER_VERBS_CMD_POST_SEND,
			.in_words = (uint16_t)(size / 4),
			.out_words = sizeof(resp) / 4,
		},
		.core = {
			.response = (uintptr_t)&resp,
			.qp_handle = ibqp->handle,
			.wr_count = nwr,
			.sge_count = nsge,
			.wqe_size = STELLAR_SEND_WQE,
		},
	};
	for (n = 0; n < nwr; n++, i = i->next, k++) {
		*k = (struct ib_uverbs_send_wr){
			.wr_id = i->wr_id,
			.num_sge = (uint32_t)i->num_sge,
			.opcode = i->opcode,
			.send_flags = i->send_flags,
			.ex.imm_data = i->imm_data,
		};
		if (ibqp->qp_type == IBV_QPT_UD) {
			k->wr.ud.ah = i->wr.ud.ah->handle;
			k->wr.ud.remote_qpn = i->wr.ud.remote_qpn;
			k->wr.ud.remote_qkey = i->wr.ud.remote_qkey;
		} else if (i->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   i->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			k->wr.atomic.remote_addr = i->wr.atomic.remote_addr;
			k->wr.atomic.compare_add = i->wr.atomic.compare_add;
			k->wr.atomic.swap = i->wr.atomic.swap;
			k->wr.atomic.rkey = i->wr.atomic.rkey;
		} else {
			k->wr.rdma.remote_addr = i->wr.rdma.remote_addr;
			k->wr.rdma.rkey = i->wr.rdma.rkey;
		}
		if (i->num_sge) {
			memcpy(sg, i->sg_list, (size_t)i->num_sge * STELLAR_SGE);
			sg += i->num_sge;
		}
	}

	ret = stellar_cmd(ibqp->context, cmd, size, &resp, sizeof(resp));
	if (ret) {
		*bad = wr;
		if (resp.bad_wr && resp.bad_wr <= nwr)
			for (n = 1; n < resp.bad_wr; n++)
				*bad = (*bad)->next;
	}
	return ret;
}

/* ibv_post_send: as many commands as the list needs, in order. */
int stellar_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	struct stellar_qp *qp = to_stl_qp(ibqp);
	struct ibv_send_wr *invalid;
	uint32_t n, nsge;
	int ret = 0;

	pthread_mutex_lock(&qp->sq_cmd.lock);
	while (wr) {
		n = stellar_send_fit(ibqp, wr, qp->sq_cmd.size -
				     sizeof(struct stellar_post_send_cmd),
				     UINT32_MAX, &nsge, &invalid);
		if (!n) {
			/* Unpostable, or more SGEs than any command holds. */
			*bad_wr = invalid ? invalid : wr;
			ret = EINVAL;
			break;
		}
		ret = stellar_send_cmd(qp, wr, n, nsge, bad_wr);
		if (ret)
			break;
		while (n--)
			wr = wr->next;
	}
	pthread_mutex_unlock(&qp->sq_cmd.lock);
	return ret;
}

/* ibv_post_recv: as many commands as the list needs, in order. */
int stellar_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct stellar_qp *qp = to_stl_qp(ibqp);
	struct stellar_post_recv_cmd *cmd = qp->rq_cmd.buf;
	int ret = 0;

	pthread_mutex_lock(&qp->rq_cmd.lock);
	while (wr) {
		size_t room = qp->rq_cmd.size - sizeof(*cmd);
		struct ib_uverbs_post_recv_resp resp = {};
		struct ib_uverbs_recv_wr *k;
		struct ib_uverbs_sge *sg;
		struct ibv_recv_wr *i;
		uint32_t n = 0, nsge = 0, j;
		size_t size;

		for (i = wr; i; i = i->next) {
			size_t need;

			if (i->num_sge < 0)
				break;
			need = STELLAR_RECV_WQE + (size_t)i->num_sge * STELLAR_SGE;
			if (need > room)
				break;
			room -= need;
			nsge += (uint32_t)i->num_sge;
			n++;
		}
		if (!n) {
			*bad_wr = wr;
			ret = EINVAL;
			break;
		}

		k = (void *)(cmd + 1);
		sg = (void *)(k + n);
		size = (size_t)((uint8_t *)(sg + nsge) - (uint8_t *)cmd);
		*cmd = (struct stellar_post_recv_cmd){
			.hdr = {
				.command = IB_USER_VERBS_CMD_POST_RECV,
				.in_words = (uint16_t)(size / 4),
				.out_words = sizeof(resp) / 4,
			},
			.core = {
				.response = (uintptr_t)&resp,
				.qp_handle = ibqp->handle,
				.wr_count = n,
				.sge_count = nsge,
				.wqe_size = STELLAR_RECV_WQE,
			},
		};
		for (j = 0, i = wr; j < n; j++, i = i->next, k++) {
			*k = (struct ib_uverbs_recv_wr){
				.wr_id = i->wr_id,
				.num_sge = (uint32_t)i->num_sge,
			};
			if (i->num_sge) {
				memcpy(sg, i->sg_list,
				       (size_t)i->num_sge * STELLAR_SGE);
				sg += i->num_sge;
			}
		}
		ret = stellar_cmd(ibqp->context, cmd, size, &resp, sizeof(resp));
		if (ret) {
			*bad_wr = wr;
			if (resp.bad_wr && resp.bad_wr <= n)
				for (j = 1; j < resp.bad_wr; j++)
					*bad_wr = (*bad_wr)->next;
			break;
		}
		wr = i;
	}
	pthread_mutex_unlock(&qp->rq_cmd.lock);
	return ret;
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
	stellar_cmd_buf_free(&qp->sq_cmd);
	stellar_cmd_buf_free(&qp->rq_cmd);
	free(qp->wr);
	free(qp->sge);
	free(qp->inl);
	free(qp);
}

/*
 * Once the module granted @cap: the command buffers, and for an extended
 * QP the builder's arrays for a full send queue.
 */
static int stellar_qp_alloc_bufs(struct stellar_qp *qp,
				 const struct ibv_qp_cap *cap, bool qp_ex)
{
	uint32_t sq_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	int ret;

	ret = stellar_cmd_buf_init(&qp->sq_cmd,
				   sizeof(struct stellar_post_send_cmd),
				   STELLAR_SEND_WQE, cap->max_send_wr, sq_sge);
	if (ret)
		return ret;
	ret = stellar_cmd_buf_init(&qp->rq_cmd,
				   sizeof(struct stellar_post_recv_cmd),
				   STELLAR_RECV_WQE, cap->max_recv_wr,
				   cap->max_recv_sge);
	if (ret)
		return ret;
	if (!qp_ex)
		return 0;

	qp->max_inline = cap->max_inline_data;
	qp->max_sge = sq_sge;
	qp->wr_cap = cap->max_send_wr;
	qp->sge_cap = (size_t)qp->wr_cap * sq_sge;
	qp->inl_cap = (size_t)qp->wr_cap * qp->max_inline;
	/* Touched only as far as batches go: malloc, not calloc. */
	qp->wr = malloc((qp->wr_cap ? qp->wr_cap : 1) * sizeof(*qp->wr));
	qp->sge = malloc((qp->sge_cap ? qp->sge_cap : 1) * sizeof(*qp->sge));
	qp->inl = malloc(qp->inl_cap ? qp->inl_cap : 1);
	if (!qp->wr || !qp->sge || !qp->inl)
		return ENOMEM;
	return 0;
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

struct ibv_qp *stellar_create_qp(struct ibv_pd *pd,
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
	ret = stellar_qp_alloc_bufs(qp, &attr->cap, false);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
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

static void stellar_wr_fail(struct stellar_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* Start a WR: opcode, and the wr_id and wr_flags the caller has set now. */
static struct ibv_send_wr *stellar_wr_new(struct ibv_qp_ex *qpx,
					  enum ibv_wr_opcode opcode)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct stellar_pending_wr *p;

	if (qp->wr_err)
		return NULL;
	/* A batch is posted at once: it cannot be longer than the SQ. */
	if (qp->nwr >= qp->wr_cap) {
		stellar_wr_fail(qp, ENOMEM);
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

/*
 * The whole batch goes in one POST_SEND command, so that it is posted all
 * or nothing (man ibv_wr_post) as far as the module checks the whole
 * chain before posting any of it.
 */
static int stellar_wr_complete(struct ibv_qp_ex *qpx)
{
	struct stellar_qp *qp = to_stl_qp_ex(qpx);
	struct ibv_send_wr *bad, *invalid;
	uint32_t n, nsge;
	size_t i;
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
		wr->next = i + 1 < qp->nwr ? &qp->wr[i + 1].wr : NULL;
	}

	if (!ret && qp->nwr) {
		pthread_mutex_lock(&qp->sq_cmd.lock);
		n = stellar_send_fit(&qpx->qp_base, &qp->wr[0].wr,
				     qp->sq_cmd.size -
				     sizeof(struct stellar_post_send_cmd),
				     UINT32_MAX, &nsge, &invalid);
		if (invalid)
			ret = EINVAL;
		else if (n < qp->nwr)
			ret = ENOMEM;	/* more than one command can carry */
		else
			ret = stellar_send_cmd(qp, &qp->wr[0].wr, n, nsge,
					       &bad);
		pthread_mutex_unlock(&qp->sq_cmd.lock);
	}

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

/* The receiving side checks what it may invalidate. */
static void stellar_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = stellar_wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
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

	p = stellar_wr_cur(qp);
	if (!p)
		return;
	/* More than the QP has: the module would refuse the WR anyway. */
	if (num_sge > qp->max_sge) {
		stellar_wr_fail(qp, EINVAL);
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
	/* Each WR has max_inline bytes and max_sge >= 1 SGEs reserved. */
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

/* ibv_wr_atomic_write() is there from rdma-core 44, ibv_wr_flush() from 45. */
#if STELLAR_RDMA_CORE_RELEASE >= 44
static void stellar_wr_refuse_atomic_write(struct ibv_qp_ex *qpx,
					   uint32_t rkey, uint64_t remote_addr,
					   const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	stellar_wr_refuse(qpx);
}
#endif

#if STELLAR_RDMA_CORE_RELEASE >= 45
static void stellar_wr_refuse_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, size_t len,
				    uint8_t type, uint8_t level)
{
	(void)rkey;
	(void)remote_addr;
	(void)len;
	(void)type;
	(void)level;
	stellar_wr_refuse(qpx);
}
#endif

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
	 IBV_QP_EX_WITH_SEND_WITH_INV | STELLAR_SEND_OPS_ATOMIC)

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

	qpx->wr_send_inv = ops & IBV_QP_EX_WITH_SEND_WITH_INV ?
			   stellar_wr_send_inv : stellar_wr_refuse_rkey;

	/* Never offered (refused at create time): fail the batch if called. */
	qpx->wr_bind_mw = stellar_wr_refuse_bind_mw;
	qpx->wr_local_inv = stellar_wr_refuse_rkey;
	qpx->wr_send_tso = stellar_wr_refuse_tso;
	qpx->wr_set_xrc_srqn = stellar_wr_refuse_rkey;
#if STELLAR_RDMA_CORE_RELEASE >= 44
	qpx->wr_atomic_write = stellar_wr_refuse_atomic_write;
#endif
#if STELLAR_RDMA_CORE_RELEASE >= 45
	qpx->wr_flush = stellar_wr_refuse_flush;
#endif

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
	uint64_t sup;

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
	if ((ops & STELLAR_SEND_OPS_ATOMIC) &&
	    to_stl_ctx(ibctx)->atomic_cap == IBV_ATOMIC_NONE)
		return EOPNOTSUPP;
	return 0;
}

#define STELLAR_QP_COMP_MASK_KNOWN                                             \
	((uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |              \
		    IBV_QP_INIT_ATTR_CREATE_FLAGS |                            \
		    IBV_QP_INIT_ATTR_MAX_TSO_HEADER |                          \
		    IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |    \
		    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))

struct ibv_qp *stellar_create_qp_ex(struct ibv_context *ibctx,
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
	ret = stellar_qp_alloc_bufs(qp, &kattr.cap, qp_ex);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		stellar_free_qp(qp);
		errno = ret;
		return NULL;
	}

	if (qp_ex) {
		stellar_set_send_ops(qp, attr->send_ops_flags);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;
}

int stellar_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int stellar_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

int stellar_destroy_qp(struct ibv_qp *ibqp)
{
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	stellar_free_qp(to_stl_qp(ibqp));
	return 0;
}
