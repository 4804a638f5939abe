/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stellar provider: the private libibverbs provider ABI it is built against.
 *
 * Debian installs only the public half of rdma-core (<infiniband/verbs.h>);
 * the provider interface (infiniband/driver.h, infiniband/kern-abi.h) stays
 * inside the rdma-core tree.  What libstellar uses of it is declared here, by
 * hand, for exactly one release: rdma-core 44.0 (libibverbs 1.14.44.0),
 * private symbol tag IBVERBS_PRIVATE_34.  The tag covers releases 34..56,
 * but the structures below changed inside that range, so the Makefile pins
 * the release with pkg-config and passes STELLAR_RDMA_CORE_RELEASE, and every
 * size and offset libibverbs relies on is checked at the end of this file.
 */
#ifndef STELLAR_VERBS_ABI_H
#define STELLAR_VERBS_ABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#if !defined(STELLAR_RDMA_CORE_RELEASE) || STELLAR_RDMA_CORE_RELEASE != 44
#error "stellar-verbs-abi.h describes rdma-core 44.0 only; build with userlib/Makefile against libibverbs 1.14.44.0"
#endif

/* ------------------------------------------------------------------ */
/* Devices and matching (driver.h)                                      */
/* ------------------------------------------------------------------ */

/* ccan's struct list_node, which libibverbs links its lists with. */
struct stellar_list_node {
	struct stellar_list_node *next;
	struct stellar_list_node *prev;
};

enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* One uverbs device found in sysfs, filled in by libibverbs. */
struct verbs_sysfs_dev {
	struct stellar_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;		/* infiniband_verbs/uverbsN/abi_version */
	struct timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct stellar_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* ------------------------------------------------------------------ */
/* Objects the core looks inside (driver.h)                             */
/* ------------------------------------------------------------------ */

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

struct verbs_xrcd;

/* verbs_qp.comp_mask bits; ibv_qp_to_qp_ex() answers only with VERBS_QP_EX. */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

/* ibv_qp_to_qp_ex() reads comp_mask behind every ibv_qp. */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* ------------------------------------------------------------------ */
/* The context operations table (driver.h): 76 entries, sorted by name  */
/* ------------------------------------------------------------------ */

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(struct ibv_context *context,
					      struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(struct ibv_context *context,
						struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(struct ibv_context *context,
							  struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(struct ibv_context *context,
							  struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/* ------------------------------------------------------------------ */
/* Write-command buffers (kern-abi.h)                                   */
/*                                                                      */
/* Each is the uverbs header followed by the kernel's request struct    */
/* from <rdma/ib_user_verbs.h>; driver data would follow "core".        */
/* libstellar sends none.                                               */
/* ------------------------------------------------------------------ */

#define STELLAR_DECLARE_CMD(name, kabi)                                        \
	struct name {                                                          \
		struct ib_uverbs_cmd_hdr hdr;                                  \
		struct kabi core;                                              \
	};                                                                     \
	_Static_assert(offsetof(struct name, core) ==                          \
			       sizeof(struct ib_uverbs_cmd_hdr) &&             \
		       sizeof(struct name) ==                                  \
			       sizeof(struct ib_uverbs_cmd_hdr) +              \
				       sizeof(struct kabi),                    \
		       "layout of " #name)

STELLAR_DECLARE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
STELLAR_DECLARE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
STELLAR_DECLARE_CMD(ibv_create_cq, ib_uverbs_create_cq);
STELLAR_DECLARE_CMD(ibv_create_qp, ib_uverbs_create_qp);
STELLAR_DECLARE_CMD(ibv_create_srq, ib_uverbs_create_srq);
STELLAR_DECLARE_CMD(ibv_get_context, ib_uverbs_get_context);
STELLAR_DECLARE_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
STELLAR_DECLARE_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
STELLAR_DECLARE_CMD(ibv_query_port, ib_uverbs_query_port);
STELLAR_DECLARE_CMD(ibv_query_qp, ib_uverbs_query_qp);
STELLAR_DECLARE_CMD(ibv_query_srq, ib_uverbs_query_srq);
STELLAR_DECLARE_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
STELLAR_DECLARE_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
STELLAR_DECLARE_CMD(ibv_resize_cq, ib_uverbs_resize_cq);

/*
 * Extended write commands (kern-abi.h DECLARE_CMD_EX): both headers, then
 * the kernel's request struct.  Only ibv_cmd_create_cq_ex() takes one, and
 * it sends it only if the kernel lacks the ioctl CQ_CREATE method.
 */
struct ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

#define STELLAR_DECLARE_CMD_EX(name, kabi)                                     \
	struct name {                                                          \
		struct ex_hdr hdr;                                             \
		struct kabi core;                                              \
	};                                                                     \
	_Static_assert(offsetof(struct name, core) ==                          \
			       sizeof(struct ex_hdr) &&                        \
		       sizeof(struct name) ==                                  \
			       sizeof(struct ex_hdr) + sizeof(struct kabi) &&  \
		       sizeof(struct name) % 8 == 0,                           \
		       "layout of " #name)

STELLAR_DECLARE_CMD_EX(ibv_create_cq_ex, ib_uverbs_ex_create_cq);

/* ------------------------------------------------------------------ */
/* libibverbs functions exported at IBVERBS_PRIVATE_34                  */
/* ------------------------------------------------------------------ */

/* Logging: prints only under VERBS_LOG_LEVEL and VERBS_LOG_FILE. */
enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define verbs_err(ctx, format, ...)                                            \
	__verbs_log(ctx, VERBS_LOG_ERR, "%s: %s:%d: " format,                 \
		    (ctx)->context.device->name, __func__, __LINE__,           \
		    ##__VA_ARGS__)

/* What PROVIDER_DRIVER() calls from the provider's constructor. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);

int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);

int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
			  uint64_t iova, int fd, int access,
			  struct verbs_mr *vmr);

int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);

int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
/*
 * Accepts comp_mask PD | XRCD | SEND_OPS_FLAGS only (EINVAL otherwise);
 * resets qp->comp_mask, so VERBS_QP_EX is set after it returns.
 */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

/* ------------------------------------------------------------------ */
/* Layout checks: rdma-core 44.0 on x86_64 (docs/PLATFORM.md)           */
/* ------------------------------------------------------------------ */

#define STELLAR_CHECK_SIZE(type, size)                                         \
	_Static_assert(sizeof(struct type) == (size), "sizeof " #type)
#define STELLAR_CHECK_OFFSET(type, member, off)                                \
	_Static_assert(offsetof(struct type, member) == (off),                 \
		       "offsetof " #type "." #member)

_Static_assert(RDMA_DRIVER_UNKNOWN == 0, "RDMA_DRIVER_UNKNOWN");
_Static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *),
	       "verbs_context_ops holds 76 function pointers");
STELLAR_CHECK_OFFSET(verbs_device, device, 0);
STELLAR_CHECK_OFFSET(verbs_mr, ibv_mr, 0);
STELLAR_CHECK_OFFSET(verbs_qp, qp, 0);
STELLAR_CHECK_OFFSET(verbs_qp, qp_ex.qp_base, 0);
STELLAR_CHECK_OFFSET(verbs_cq, cq, 0);
STELLAR_CHECK_OFFSET(verbs_cq, cq_ex, 0);
STELLAR_CHECK_OFFSET(verbs_qp, comp_mask, sizeof(struct ibv_qp_ex));
_Static_assert(sizeof(struct verbs_cq) == sizeof(struct ibv_cq_ex),
	       "verbs_cq is the larger of ibv_cq and ibv_cq_ex");

/* ibv_cq_ex_to_cq() is a cast: ibv_cq_ex must begin with ibv_cq's fields. */
#define STELLAR_CHECK_CQ_EX(member)                                            \
	_Static_assert(offsetof(struct ibv_cq, member) ==                      \
			       offsetof(struct ibv_cq_ex, member),             \
		       "ibv_cq_ex." #member " overlays ibv_cq." #member)
STELLAR_CHECK_CQ_EX(context);
STELLAR_CHECK_CQ_EX(channel);
STELLAR_CHECK_CQ_EX(cq_context);
STELLAR_CHECK_CQ_EX(handle);
STELLAR_CHECK_CQ_EX(cqe);
STELLAR_CHECK_CQ_EX(mutex);
STELLAR_CHECK_CQ_EX(cond);
STELLAR_CHECK_CQ_EX(comp_events_completed);
STELLAR_CHECK_CQ_EX(async_events_completed);
#undef STELLAR_CHECK_CQ_EX

#if defined(__x86_64__) && defined(__LP64__)
STELLAR_CHECK_SIZE(ibv_device, 664);

STELLAR_CHECK_SIZE(verbs_device, 712);
STELLAR_CHECK_OFFSET(verbs_device, ops, 664);
STELLAR_CHECK_OFFSET(verbs_device, refcount, 672);
STELLAR_CHECK_OFFSET(verbs_device, entry, 680);
STELLAR_CHECK_OFFSET(verbs_device, sysfs, 696);
STELLAR_CHECK_OFFSET(verbs_device, core_support, 704);

STELLAR_CHECK_SIZE(verbs_device_ops, 72);
STELLAR_CHECK_OFFSET(verbs_device_ops, name, 0);
STELLAR_CHECK_OFFSET(verbs_device_ops, match_min_abi_version, 8);
STELLAR_CHECK_OFFSET(verbs_device_ops, match_max_abi_version, 12);
STELLAR_CHECK_OFFSET(verbs_device_ops, match_table, 16);
STELLAR_CHECK_OFFSET(verbs_device_ops, static_providers, 24);
STELLAR_CHECK_OFFSET(verbs_device_ops, match_device, 32);
STELLAR_CHECK_OFFSET(verbs_device_ops, alloc_context, 40);
STELLAR_CHECK_OFFSET(verbs_device_ops, import_context, 48);
STELLAR_CHECK_OFFSET(verbs_device_ops, alloc_device, 56);
STELLAR_CHECK_OFFSET(verbs_device_ops, uninit_device, 64);

STELLAR_CHECK_SIZE(verbs_match_ent, 24);
STELLAR_CHECK_OFFSET(verbs_match_ent, driver_data, 0);
STELLAR_CHECK_OFFSET(verbs_match_ent, u.modalias, 8);
STELLAR_CHECK_OFFSET(verbs_match_ent, u.driver_id, 8);
STELLAR_CHECK_OFFSET(verbs_match_ent, vendor, 16);
STELLAR_CHECK_OFFSET(verbs_match_ent, device, 18);
STELLAR_CHECK_OFFSET(verbs_match_ent, kind, 20);

STELLAR_CHECK_SIZE(verbs_sysfs_dev, 992);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, ibdev_name, 112);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, ibdev_path, 176);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, modalias, 432);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, node_guid, 944);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, driver_id, 952);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, node_type, 956);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, ibdev_idx, 960);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, num_ports, 964);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, abi_ver, 968);
STELLAR_CHECK_OFFSET(verbs_sysfs_dev, time_created, 976);

STELLAR_CHECK_SIZE(verbs_context, 648);
STELLAR_CHECK_OFFSET(verbs_context, priv, 208);
STELLAR_CHECK_OFFSET(verbs_context, sz, 312);
STELLAR_CHECK_OFFSET(verbs_context, context, 320);

STELLAR_CHECK_SIZE(verbs_mr, 56);
STELLAR_CHECK_OFFSET(verbs_mr, mr_type, 48);
STELLAR_CHECK_OFFSET(verbs_mr, access, 52);

STELLAR_CHECK_SIZE(verbs_qp, 368);
STELLAR_CHECK_OFFSET(verbs_qp, comp_mask, 352);
STELLAR_CHECK_OFFSET(verbs_qp, xrcd, 360);
STELLAR_CHECK_SIZE(verbs_cq, 288);
STELLAR_CHECK_SIZE(ex_hdr, 24);
STELLAR_CHECK_SIZE(ibv_create_cq_ex, 56);
STELLAR_CHECK_SIZE(verbs_context_ops, 608);
#endif

#undef STELLAR_CHECK_SIZE
#undef STELLAR_CHECK_OFFSET

#endif /* STELLAR_VERBS_ABI_H */
