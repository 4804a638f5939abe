/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar: differences between the kernels Stellar builds for.
 *
 * Stellar is tested on Debian 12's own kernel (6.1) and on its backports
 * kernel (6.12).  Every LINUX_VERSION_CODE check lives in this file; the
 * rest of the code uses the names below and builds unchanged on both.
 */
#ifndef STL_COMPAT_H
#define STL_COMPAT_H

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * ib_device_ops.create_cq: since 6.11 the core passes the whole uverbs
 * attribute bundle (the driver's data at &attrs->driver_udata, attrs NULL
 * for a kernel CQ) instead of the udata.  stl_create_cq() takes a
 * struct stl_create_cq_arg pointer and gets its udata with
 * stl_create_cq_udata().
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define stl_create_cq_arg uverbs_attr_bundle

/**
 * stl_create_cq_udata() - the driver data of a create_cq call
 * @attrs: the third argument of create_cq, NULL for a kernel CQ
 *
 * Return: the udata, or NULL for a kernel CQ.
 */
static inline struct ib_udata *
stl_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define stl_create_cq_arg ib_udata

static inline struct ib_udata *stl_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * Until 6.5, rxe calls a kernel CQ's completion handler from the CQ's own
 * tasklet with no lock held (rxe_send_complete()), so the handler may poll
 * the CQ at once; since then it calls it from rxe_cq_post() under the CQ's
 * lock, in process context.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
#define STL_RXE_COMP_UNLOCKED_TASKLET 1
#else
#define STL_RXE_COMP_UNLOCKED_TASKLET 0
#endif

/*
 * reg_user_mr_dmabuf gets the uverbs attribute bundle since 6.10 (the
 * udata before).  stl_reg_user_mr_dmabuf() takes a struct stl_dmabuf_arg
 * pointer and gets its udata with stl_dmabuf_udata().
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define stl_dmabuf_arg uverbs_attr_bundle
/**
 * stl_dmabuf_udata() - the driver data of a reg_user_mr_dmabuf call
 * @attrs: its last argument
 *
 * Return: the udata.
 */
static inline struct ib_udata *stl_dmabuf_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define stl_dmabuf_arg ib_udata
static inline struct ib_udata *stl_dmabuf_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * rxe before 6.4 keeps an MR's pages in maps of 256 entries and, after
 * copying to the very end of the last one, reads the pointer of the map
 * after it (rxe_mr_copy(); KASAN: slab-out-of-bounds): fast-registration
 * MRs get one entry to spare.  From 6.4 on that is gone, and Debian's 6.12
 * rxe keeps 16 bytes per 4 KiB piece of an MR's pages in one kcalloc()ed
 * array: at most KMALLOC_MAX_SIZE / 16 pieces per MR, whatever its page
 * size (a larger array warns in the page allocator and fails).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define STL_RXE_MR_SPARE	1
#define STL_RXE_MR_PIECES	0ULL
#else
#define STL_RXE_MR_SPARE	0
#define STL_RXE_MR_PIECES	((u64)KMALLOC_MAX_SIZE / 16)
#endif

/*
 * rxe before 6.4 raises a CQ's completion event from a tasklet that its
 * destroy_cq does not kill (stl_cq.c gives its parent CQs a grace period);
 * from 6.4 on it calls the handler directly.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define STL_RXE_CQ_TASKLET	1
#else
#define STL_RXE_CQ_TASKLET	0
#endif

/*
 * rxe before 6.4 runs a QP's responder and completer straight from the
 * packet that feeds them, and its destroy_qp waits for a running task to
 * mark itself idle but not for it to return: a task still on its way out
 * when the QP is freed writes its return code into freed memory.  Stellar
 * quiets such a parent QP before destroying it (stl_parent_qp_destroy()).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define STL_RXE_TASK_RACE	1
#else
#define STL_RXE_TASK_RACE	0
#endif

/*
 * vma->vm_flags is written through vm_flags_set() since 6.3 (a plain
 * store before).  Context: the mmap lock held for writing (an mmap call).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void stl_vm_flags_set(struct vm_area_struct *vma,
				    unsigned long flags)
{
	vma->vm_flags |= flags;
}
#else
#define stl_vm_flags_set vm_flags_set
#endif

#endif /* STL_COMPAT_H */
