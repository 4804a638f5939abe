/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stl_dmabuf_exp: a test dma-buf exporter ("GPU-like" memory for the VM
 * tests), its user interface.  Shared by the module and the test programs.
 *
 * /dev/stl_dmabuf_exp hands out dma-bufs made of equal chunks (4 KiB,
 * 64 KiB or 2 MiB of physically contiguous memory each), zero-filled.  The
 * exporter is dynamic (pin/unpin): importers map under the reservation lock
 * and must honour move_notify.  A dma-buf can be mmap()ed (whole, offset 0)
 * to read and write its bytes; the mapping follows the buffer when it moves.
 */
#ifndef STL_DMABUF_EXP_H
#define STL_DMABUF_EXP_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define STL_EXP_DEV "/dev/stl_dmabuf_exp"

/* STL_EXP_IOC_CREATE: @size bytes (a multiple of @chunk) in @chunk pieces;
 * @chunk is 4096, 65536 or 2097152.  Returns the dma-buf in @fd
 * (O_RDWR | O_CLOEXEC).  Errors: EINVAL (sizes), ENOMEM.
 */
struct stl_exp_create {
	__u64 size;
	__u64 chunk;
	__s32 fd;
	__u32 reserved;
};

/* STL_EXP_IOC_MOVE modes */
enum {
	/* New chunks, contents copied, then move_notify; later maps get the
	 * new chunks and the old ones are freed.
	 */
	STL_EXP_MOVE = 0,
	/* move_notify; every later map fails with ENODEV (memory taken away
	 * for good).
	 */
	STL_EXP_REVOKE = 1,
};

struct stl_exp_move {
	__s32 fd;	/* a dma-buf of this exporter */
	__u32 mode;	/* STL_EXP_MOVE or STL_EXP_REVOKE */
};

/* STL_EXP_IOC_INFO: counters of one dma-buf (EINVAL if not ours). */
struct stl_exp_info {
	__s32 fd;
	__u32 revoked;		/* 1 after STL_EXP_REVOKE */
	__u64 maps;		/* map_dma_buf calls that succeeded */
	__u64 unmaps;		/* unmap_dma_buf calls */
	__u64 moves;		/* STL_EXP_MOVE / REVOKE done */
	__u64 attachments;	/* attachments now */
	__u64 first_pfn;	/* page frame number of the first chunk now */
};

#define STL_EXP_IOC_CREATE	_IOWR('S', 1, struct stl_exp_create)
#define STL_EXP_IOC_MOVE	_IOW('S', 2, struct stl_exp_move)
#define STL_EXP_IOC_INFO	_IOWR('S', 3, struct stl_exp_info)

#endif /* STL_DMABUF_EXP_H */
