// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libstellar: the rdma-core provider for Stellar para-virtual RDMA devices.
 *
 * A Stellar device speaks the rxe user ABI: its CQs, send and receive
 * queues and SRQs are rings in pages the module maps into the process, in
 * the layout of rdma_user_rxe.h, so any release's own librxe can drive it
 * too.  This provider drives the same rings (stellar_cq.c, stellar_qp.c):
 * completions are polled and receives posted with no system call, a send
 * is a ring entry and a doorbell (POST_SEND with no work request).  What
 * it adds to librxe is what librxe cannot do: ibv_reg_dmabuf_mr (GPU
 * memory, eMTT), and claiming a device by its Stellar attribute rather
 * than by its name.
 *
 * Devices are recognised by the stellar_abi_version attribute that
 * stellar.ko puts in the device's sysfs directory, never by their name:
 * the name is chosen (and changeable) by whoever runs "rdma link add".
 *
 * Out of tree the provider is built against one libibverbs release's
 * private ABI, and that ABI's symbol version (IBVERBS_PRIVATE_34) spans
 * releases whose structures differ.  So before registering, the
 * constructor checks that the libibverbs it was loaded into is the very
 * file it was built against; under any other it prints one line and stays
 * out.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "stellar-abi.h"
#include "stellar.h"

/*
 * Execute the write()-form command @cmd (a struct ib_uverbs_cmd_hdr, then
 * the request; @size bytes in all) with its response in @resp.  Like
 * libibverbs, through the ioctl method INVOKE_WRITE: ib_uverbs refuses
 * write() from a process whose credentials changed since it opened the
 * device (setuid, capset), the ioctl path has no such rule.  An ioctl
 * attribute holds at most UINT16_MAX bytes: a longer request (a long post
 * list) goes as write(), whose limit is four times that.  Returns 0 or an
 * errno; the response is written even when the command fails (bad_wr).
 */
int stellar_cmd(struct ibv_context *ctx, void *cmd, size_t size, void *resp,
		size_t resp_size)
{
	const struct ib_uverbs_cmd_hdr *hdr = cmd;
	size_t req = size - sizeof(*hdr);
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr[3];
	} ioc;

	if (size < sizeof(*hdr) || req <= sizeof(uint64_t) ||
	    resp_size > UINT16_MAX)
		return EINVAL;
	if (req > UINT16_MAX) {
		ssize_t n = write(ctx->cmd_fd, cmd, size);

		if (n == (ssize_t)size)
			return 0;
		return n < 0 && errno ? errno : EIO;
	}
	memset(&ioc, 0, sizeof(ioc));
	ioc.hdr.object_id = UVERBS_OBJECT_DEVICE;
	ioc.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	ioc.hdr.num_attrs = resp_size ? 3 : 2;
	ioc.hdr.length = sizeof(ioc.hdr) + ioc.hdr.num_attrs * sizeof(ioc.attr[0]);
	ioc.hdr.driver_id = RDMA_DRIVER_RXE;	/* the rxe user ABI */
	ioc.attr[0].attr_id = UVERBS_ATTR_WRITE_CMD;
	ioc.attr[0].len = sizeof(uint64_t);
	ioc.attr[0].data = hdr->command;
	ioc.attr[1].attr_id = UVERBS_ATTR_CORE_IN;
	ioc.attr[1].len = (uint16_t)req;
	ioc.attr[1].data = (uintptr_t)(hdr + 1);
	if (resp_size) {
		ioc.attr[2].attr_id = UVERBS_ATTR_CORE_OUT;
		ioc.attr[2].len = (uint16_t)resp_size;
		ioc.attr[2].data = (uintptr_t)resp;
	}
	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &ioc))
		return errno ? errno : EIO;
	return 0;
}

/**
 * stellar_doorbell() - POST_SEND, POST_RECV or POST_SRQ_RECV with no request
 * @ctx: the context
 * @command: IB_USER_VERBS_CMD_POST_SEND, _POST_RECV or _POST_SRQ_RECV
 * @handle: the QP's or SRQ's handle
 *
 * The module then takes the ring's new entries.  The write() form, as
 * librxe rings it; the ioctl form where ib_uverbs refuses write() (a
 * process whose credentials changed since it opened the device).
 *
 * Return: 0 or an errno value.
 */
int stellar_doorbell(struct ibv_context *ctx, uint32_t command,
		     uint32_t handle)
{
	struct ib_uverbs_post_send_resp resp = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send core;
	} cmd = {
		.hdr = {
			.command = command,
			.in_words = sizeof(cmd) / 4,
			.out_words = sizeof(resp) / 4,
		},
		.core = {
			.response = (uintptr_t)&resp,
			.qp_handle = handle,
			.wqe_size = command == IB_USER_VERBS_CMD_POST_SEND ?
				    sizeof(struct ib_uverbs_send_wr) :
				    sizeof(struct ib_uverbs_recv_wr),
		},
	};
	ssize_t n;

	n = write(ctx->cmd_fd, &cmd, sizeof(cmd));
	if (n == (ssize_t)sizeof(cmd))
		return 0;
	if (n < 0 && errno == EACCES)
		return stellar_cmd(ctx, &cmd, sizeof(cmd), &resp, sizeof(resp));
	return n < 0 && errno ? errno : EIO;
}

/* The three requests share one layout: handle, counts, entry size. */
_Static_assert(sizeof(struct ib_uverbs_post_send) ==
		       sizeof(struct ib_uverbs_post_recv) &&
		       sizeof(struct ib_uverbs_post_recv) ==
		       sizeof(struct ib_uverbs_post_srq_recv) &&
		       offsetof(struct ib_uverbs_post_recv, qp_handle) ==
		       offsetof(struct ib_uverbs_post_send, qp_handle) &&
		       offsetof(struct ib_uverbs_post_srq_recv, srq_handle) ==
		       offsetof(struct ib_uverbs_post_send, qp_handle) &&
		       offsetof(struct ib_uverbs_post_recv, wqe_size) ==
		       offsetof(struct ib_uverbs_post_send, wqe_size),
	       "doorbell layouts");

/**
 * stellar_ring_map() - map a ring the module made
 * @r: filled in
 * @ibctx: the context whose command fd maps it
 * @mi: where the module said it is
 *
 * Return: 0 or an errno value.
 */
int stellar_ring_map(struct stellar_ring *r, struct ibv_context *ibctx,
		     const struct mminfo *mi)
{
	void *p;

	if (mi->size < sizeof(struct stellar_ring_hdr))
		return EPROTO;
	p = mmap(NULL, mi->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ibctx->cmd_fd, (off_t)mi->offset);
	if (p == MAP_FAILED)
		return errno;
	r->q = p;
	r->map_size = mi->size;
	r->mask = r->q->index_mask;
	r->log2 = r->q->log2_elem_size;
	/* The module's answer must describe the mapping it made. */
	if (r->log2 > 16 || (r->mask & (r->mask + 1)) ||
	    sizeof(*r->q) + (((size_t)r->mask + 1) << r->log2) > r->map_size) {
		stellar_ring_unmap(r);
		return EPROTO;
	}
	return 0;
}

void stellar_ring_unmap(struct stellar_ring *r)
{
	if (r->q)
		munmap(r->q, r->map_size);
	r->q = NULL;
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

/* libibverbs' version (pkg-config --modversion), set by the Makefile. */
#ifndef STELLAR_LIBIBVERBS_VERSION
#error "STELLAR_LIBIBVERBS_VERSION must name the libibverbs built against"
#endif
#define STELLAR_LIBIBVERBS_FILE "libibverbs.so." STELLAR_LIBIBVERBS_VERSION

static void stl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A library says nothing unless asked: warnings go to stderr only under
 * IBV_SHOW_WARNINGS, the switch libibverbs itself uses for devices that no
 * provider claims (which is what a refused device becomes).
 */
static void stl_warn(const char *fmt, ...)
{
	int saved_errno = errno;
	va_list args;

	if (!getenv("IBV_SHOW_WARNINGS"))
		return;
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

/* ibv_reg_dmabuf_mr: the kernel maps the buffer (stl_dmabuf.c). */
static struct ibv_mr *stellar_reg_dmabuf_mr(struct ibv_pd *pd,
					    uint64_t offset, size_t length,
					    uint64_t iova, int fd, int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr
#ifdef STELLAR_CMD_REG_DMABUF_MR_DRIVER
				    , NULL
#endif
				    );
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_rereg_mr: the module registers a new MR (new keys) from what changes
 * and what stays and puts it in the old one's place; on failure the old MR
 * is left as it was.  Returns 0 or an errno value (libibverbs turns it into
 * IBV_REREG_MR_ERR_CMD with errno set).
 */
static int stellar_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			    void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;
	int ret;

	ret = ibv_cmd_rereg_mr(vmr, (uint32_t)flags, addr, length,
			       (uintptr_t)addr, access, pd, &cmd, sizeof(cmd),
			       &resp, sizeof(resp));
	if (ret)
		errno = ret;
	return ret;
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

/*
 * Memory windows, types 1 and 2: the module keeps them (stl_mw.c); a bind
 * or a local invalidate is a send ring entry (stellar_qp.c).
 */
static struct ibv_mw *stellar_alloc_mw(struct ibv_pd *pd,
				       enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int stellar_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Address handles                                                     */
/* ------------------------------------------------------------------ */

union stellar_create_ah_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_create_ah_resp)];
		struct rxe_create_ah_resp drv;
	};
};

/* The module numbers every AH: UD send ring entries name it so. */
static struct ibv_ah *stellar_create_ah(struct ibv_pd *pd,
					struct ibv_ah_attr *attr)
{
	union stellar_create_ah_resp resp = {};
	struct stellar_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (!ret && !resp.drv.ah_num) {
		ibv_cmd_destroy_ah(&ah->ibv_ah);
		ret = EPROTO;
	}
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.drv.ah_num;
	return &ah->ibv_ah;
}

static int stellar_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;

	free(to_stl_ah(ibah));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Shared receive queues                                               */
/* ------------------------------------------------------------------ */

union stellar_create_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct {
		uint8_t core[sizeof(struct ib_uverbs_create_srq_resp)];
		struct rxe_create_srq_resp drv;
	};
};

/*
 * An SRQ is a receive ring: entries posted with no system call, taken to
 * the parent SRQ by the module, which checks every one (lkey, PD, bounds,
 * SGE count) and completes a refused one in error.  The parent's limit
 * event comes as IBV_EVENT_SRQ_LIMIT_REACHED.
 */
static struct ibv_srq *stellar_create_srq(struct ibv_pd *pd,
					  struct ibv_srq_init_attr *attr)
{
	union stellar_create_srq_resp resp = {};
	struct ibv_create_srq cmd;
	struct stellar_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	/* On success attr->attr holds what the module made. */
	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (!ret) {
		ret = stellar_ring_map(&srq->ring, pd->context, &resp.drv.mi);
		if (ret)
			ibv_cmd_destroy_srq(&srq->ibv_srq);
	}
	if (ret) {
		pthread_spin_destroy(&srq->lock);
		free(srq);
		errno = ret;
		return NULL;
	}
	srq->max_sge = attr->attr.max_sge;
	return &srq->ibv_srq;
}

static int stellar_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			      int mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

static int stellar_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int stellar_destroy_srq(struct ibv_srq *ibsrq)
{
	struct stellar_srq *srq = to_stl_srq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	stellar_ring_unmap(&srq->ring);
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

static int stellar_post_srq_recv(struct ibv_srq *ibsrq,
				 struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad_wr)
{
	struct stellar_srq *srq = to_stl_srq(ibsrq);
	struct ibv_recv_wr *first = wr;
	int ret, db;

	pthread_spin_lock(&srq->lock);
	ret = stellar_ring_post_recv(&srq->ring, srq->max_sge, wr, bad_wr);
	pthread_spin_unlock(&srq->lock);
	/* At the parent now: a message for a UD QP on it is not lost. */
	if (ret && *bad_wr == first)
		return ret;
	db = stellar_doorbell(ibsrq->context, IB_USER_VERBS_CMD_POST_SRQ_RECV,
			      ibsrq->handle);
	return ret ? ret : db;
}

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

static void stellar_free_context(struct ibv_context *ibctx);

/* Anything left NULL answers EOPNOTSUPP through libibverbs' dummy ops. */
static const struct verbs_context_ops stellar_ctx_ops = {
	.alloc_mw = stellar_alloc_mw,
	.alloc_pd = stellar_alloc_pd,
	.bind_mw = stellar_bind_mw,
	.create_ah = stellar_create_ah,
	.create_cq = stellar_create_cq,
	.create_cq_ex = stellar_create_cq_ex,
	.create_qp = stellar_create_qp,
	.create_qp_ex = stellar_create_qp_ex,
	.create_srq = stellar_create_srq,
	.dealloc_mw = stellar_dealloc_mw,
	.dealloc_pd = stellar_dealloc_pd,
	.dereg_mr = stellar_dereg_mr,
	.destroy_ah = stellar_destroy_ah,
	.destroy_cq = stellar_destroy_cq,
	.destroy_qp = stellar_destroy_qp,
	.destroy_srq = stellar_destroy_srq,
	.free_context = stellar_free_context,
	.modify_qp = stellar_modify_qp,
	.modify_srq = stellar_modify_srq,
	.poll_cq = stellar_poll_cq,
	.post_recv = stellar_post_recv,
	.post_send = stellar_post_send,
	.post_srq_recv = stellar_post_srq_recv,
	.query_device_ex = stellar_query_device_ex,
	.query_port = stellar_query_port,
	.query_qp = stellar_query_qp,
	.query_srq = stellar_query_srq,
	.reg_mr = stellar_reg_mr,
	.rereg_mr = stellar_rereg_mr,
	.reg_dmabuf_mr = stellar_reg_dmabuf_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
	.resize_cq = stellar_resize_cq,
};

static struct verbs_context *stellar_alloc_context(struct ibv_device *ibdev,
						   int cmd_fd,
						   void *private_data)
{
	union stellar_get_context_resp resp = {};
	struct ibv_get_context cmd = {};
	struct ibv_device_attr_ex dattr;
	struct stellar_context *ctx;
	int ret;

	(void)private_data;

	/* Consumes cmd_fd on failure.  The rxe driver id, as stellar.ko's. */
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
		(struct verbs_context *)offsetof(struct stellar_context, ibv_ctx),
		RDMA_DRIVER_RXE);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
#ifdef STELLAR_CMD_GET_CONTEXT_FD_ARR
				  NULL,
#endif
				  &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_uninit;

	if (resp.drv.abi_version != STELLAR_UVERBS_ABI_VERSION) {
		stl_warn("%s: kernel module speaks Stellar ABI %u, this provider %u\n",
			 ibdev->name, resp.drv.abi_version,
			 STELLAR_UVERBS_ABI_VERSION);
		verbs_err(&ctx->ibv_ctx,
			  "kernel module speaks Stellar ABI %u, this provider %u\n",
			  resp.drv.abi_version, STELLAR_UVERBS_ABI_VERSION);
		ret = EPROTO;
		goto err_uninit;
	}
	ctx->max_inline_data = resp.drv.max_inline_data;

	/*
	 * What QP creation needs from the device, asked once here rather
	 * than by a QUERY_DEVICE command per QP.
	 */
	ret = ibv_cmd_query_device_any(&ctx->ibv_ctx.context, NULL, &dattr,
				       sizeof(dattr.orig_attr), NULL, NULL);
	if (ret)
		goto err_uninit;
	ctx->atomic_cap = dattr.orig_attr.atomic_cap;

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
 * device libibverbs tries this provider on (plain rxe devices among
 * them), so absence is silent.
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

/*
 * Stellar devices carry rxe's driver id, and libibverbs tries a match by
 * driver id before any other, in provider load order: listed so, this
 * provider (loaded first under RDMAV_DRIVERS) is asked before librxe, and
 * stellar_match_device() then keeps only Stellar devices.  A plain rxe
 * device goes on to librxe.
 */
static const struct verbs_match_ent stellar_match_table[] = {
	{ .u.driver_id = RDMA_DRIVER_RXE, .kind = VERBS_MATCH_DRIVER_ID },
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

/*
 * Whether the libibverbs this process runs is the file the provider was
 * built against (libibverbs.so.<version>, after symlinks).  The private
 * symbol's address names the library that actually serves it.  Otherwise
 * print the one line a refused provider owes its user, whatever
 * IBV_SHOW_WARNINGS says: without it the devices would silently vanish.
 */
static bool stellar_libibverbs_matches(void)
{
	const char *name = "(unknown)";
	char *path = NULL;
	Dl_info info;
	bool ok = false;

	if (dladdr((void *)ibv_cmd_get_context, &info) && info.dli_fname) {
		const char *base;

		path = realpath(info.dli_fname, NULL);
		name = path ? path : info.dli_fname;
		base = strrchr(name, '/');
		base = base ? base + 1 : name;
		ok = !strcmp(base, STELLAR_LIBIBVERBS_FILE);
		name = base;
	}
	if (!ok)
		fprintf(stderr,
			"libstellar: built for libibverbs %s, running with %s: not registering\n",
			STELLAR_LIBIBVERBS_VERSION, name);
	free(path);
	return ok;
}

/*
 * What rdma-core's PROVIDER_DRIVER() does, behind the guard.  In-tree, the
 * release's driver.h names the registration call of its provider ABI.
 */
static void __attribute__((constructor)) stellar_register_driver(void)
{
	int saved_errno = errno;

	if (stellar_libibverbs_matches()) {
#ifdef STELLAR_IN_TREE
		verbs_register_driver(&stellar_dev_ops);
#else
		verbs_register_driver_34(&stellar_dev_ops);
#endif
	}
	errno = saved_errno;
}
