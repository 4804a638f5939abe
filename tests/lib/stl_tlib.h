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

/**
 * struct tlib_side - one end of an RC pair inside one test process
 * @ctx: the device
 * @pd: a PD
 * @cq: one CQ for sends and receives
 * @qp: an RC QP (16 WRs each way, one SGE, every send signaled)
 * @gid: the device's GID at the pair's GID index
 */
struct tlib_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

int tlib_side_open(struct tlib_side *s, const char *name, int gid_index,
		   char *why, size_t why_len);
int tlib_side_open_caps(struct tlib_side *s, const char *name, int gid_index,
			const struct ibv_qp_cap *cap, int sig_all, int cqe,
			char *why, size_t why_len);
int tlib_side_connect(struct tlib_side *s, const struct tlib_side *peer,
		      int gid_index, char *why, size_t why_len);

long long tlib_sysfs_read(const char *dev, const char *rel);
int tlib_sysfs_write(const char *dev, const char *rel, long long v);
long long tlib_hw_counter(const char *dev, const char *name);

#endif /* STL_TLIB_H */
