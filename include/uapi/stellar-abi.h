/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * Stellar: the one ABI shared by stellar.ko and the libstellar provider.
 *
 * Every structure here is made of fixed-size fields with explicit padding so
 * that 32- and 64-bit builds agree.  Bump STELLAR_UVERBS_ABI_VERSION on any
 * incompatible change; the provider refuses a kernel whose version differs.
 */
#ifndef STELLAR_ABI_USER_H
#define STELLAR_ABI_USER_H

#include <linux/types.h>

/* 2: every queue is a ring in the rxe user ABI (rdma_user_rxe.h). */
#define STELLAR_UVERBS_ABI_VERSION 2

/* ib_device_ops.uverbs_abi_ver of stellar.ko, read back by libibverbs from
 * /sys/class/infiniband_verbs/uverbsN/abi_version: rxe's
 * (RXE_UVERBS_ABI_VERSION), as Stellar devices speak its user ABI; the
 * provider matches exactly this version.
 */
#define STELLAR_UVERBS_DRIVER_ABI 2

/* Name of the sysfs attribute (in /sys/class/infiniband/<dev>/) that marks a
 * Stellar device; it reads back STELLAR_UVERBS_ABI_VERSION in decimal.
 */
#define STELLAR_SYSFS_ABI_ATTR "stellar_abi_version"

/* Driver name: library libstellar-rdmav34.so, file stellar.driver. */
#define STELLAR_DRIVER_NAME "stellar"

/* Most bytes of inline data one send work request may carry. */
#define STELLAR_MAX_INLINE_DATA 256

/**
 * struct stellar_alloc_ucontext_resp - driver data of ALLOC_CONTEXT
 * @abi_version: STELLAR_UVERBS_ABI_VERSION of the kernel module
 * @max_inline_data: largest inline payload a send WR may carry
 * @reserved: zero
 */
struct stellar_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 max_inline_data;
	__aligned_u64 reserved;
};

#endif /* STELLAR_ABI_USER_H */
