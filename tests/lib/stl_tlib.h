/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small helpers shared by Stellar's C test and benchmark programs.
 */
#ifndef STL_TLIB_H
#define STL_TLIB_H

#include <stdint.h>
#include <infiniband/verbs.h>

/**
 * struct tlib_rc_peer - what an RC QP needs to know of the other end
 * @qpn: the peer QP's number
 * @gid: the peer's GID
 * @sgid_index: our GID index to send from
 * @mtu: path MTU
 * @access: remote access granted to the peer (IBV_ACCESS_REMOTE_*)
 */
struct tlib_rc_peer {
	uint32_t qpn;
	union ibv_gid gid;
	int sgid_index;
	enum ibv_mtu mtu;
	int access;
};

struct ibv_context *tlib_open_device(const char *name);
int tlib_rc_connect(struct ibv_qp *qp, const struct tlib_rc_peer *peer,
		    const char **step);

const char *tlib_errno_name(int err);

#endif /* STL_TLIB_H */
