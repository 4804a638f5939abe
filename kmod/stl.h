/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar: para-virtual RDMA devices over a parent RDMA device.
 *
 * Internal types and prototypes, sectioned by the file that defines them.
 */
#ifndef STL_H
#define STL_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <linux/workqueue.h>
#include <linux/atomic.h>
#include <linux/interrupt.h>
#include <linux/irq_work.h>
#include <rdma/ib_verbs.h>

#include "kmod/stl_compat.h"

#include "include/uapi/stellar-abi.h"
#include "pvdma/pvdma.h"
#include "emtt/emtt.h"

/* Limits of one Stellar device, never above what the parent reports. */
#define STL_MAX_QP		4096
#define STL_MAX_CQ		4096
#define STL_MAX_PD		1024
#define STL_MAX_MR		16384
#define STL_MAX_AH		4096
#define STL_MAX_MW		4096
#define STL_MAX_SRQ		1024
#define STL_MAX_MR_PAGES	(1UL << 20)	/* 4 GiB of 4 KiB pages */
/* Longest MR: any start offset still fits in STL_MAX_MR_PAGES pages. */
#define STL_MAX_MR_SIZE		((STL_MAX_MR_PAGES - 1) << PAGE_SHIFT)
#define STL_MAX_MSG_SIZE	(1U << 31)
#define STL_REG_TIMEOUT_MS	10000
/* Devices whose name starts so speak the rxe user ABI (stl_ring.c). */
#define STL_RING_NAME_PREFIX	"rxe"
/* Most entries of one ring (a power of two; it holds one less). */
#define STL_RING_MAX_ENTRIES	(1U << 17)
/*
 * Default per-device quotas on queue entries (sysfs cqe_quota, wqe_quota):
 * each CQE costs a parent CQE plus a ring entry, each WQE a parent work
 * queue entry plus a ring entry, all kernel memory the tenant makes the host allocate.
 */
/*
 * GID table entries of a device: it holds only the addresses of its own
 * netdev (stl_add_gid()), a few at most; ib_core gives every entry three
 * sysfs files, most of an idle device's memory with rxe's 1024.
 */
#define STL_GID_TBL_LEN 32

/* Most addresses an explicit list (link_add addr=) may name. */
#define STL_MAX_ADDRS 8

/*
 * Bandwidth share between the devices of one parent (stl_share_bps()): a
 * device that posted within STL_SHARE_ACTIVE_NS counts; the sum of the
 * active weights is computed at most every STL_SHARE_PERIOD_NS.
 */
#define STL_SHARE_ACTIVE_NS	(100 * NSEC_PER_MSEC)
#define STL_SHARE_PERIOD_NS	(10 * NSEC_PER_MSEC)
#define STL_WEIGHT_DEFAULT	100
#define STL_WEIGHT_MAX		1000
#define STL_SHARE_MAX_BPS	(1ULL << 40)
#define STL_SHARE_YIELD_DEFAULT	75
#define STL_SHARE_YIELD_MAX	90

/**
 * struct stl_share - the bandwidth share of one parent's devices
 * @lock: guards @devs, @active_weight and @calc_ns
 * @devs: the parent's devices (stl_dev.share_entry)
 * @total_bps: bytes per second the parent's bulk-class devices share by
 *	weight (0: no share; sysfs share_total_bytes of any of them)
 * @active_weight: sum of the weights of the bulk devices active lately
 * @calc_ns: when @active_weight was computed
 * @yield_pct: percent of @total_bps the bulk devices give up while a
 *	latency-class device is active (sysfs share_yield_percent)
 * @latency_ns: when a latency-class device of the parent last posted
 */
struct stl_share {
	spinlock_t lock;
	struct list_head devs;
	u64 total_bps;
	u64 active_weight;
	u64 calc_ns;
	u32 yield_pct;
	u64 latency_ns;
};

/*
 * Longest a post_send system call waits for the rate cap (stellarN
 * devices), and the step it sleeps in (a fatal signal is seen within it).
 */
#define STL_RATE_MAX_WAIT_US	1000000ULL
#define STL_RATE_WAIT_STEP_US	100000ULL
#define STL_DEF_CQE_QUOTA	(1U << 18)
#define STL_DEF_WQE_QUOTA	(1U << 18)

enum stl_counter {
	STL_CNT_MR_REG,
	STL_CNT_MR_REG_FAIL,
	STL_CNT_MR_REUSE,
	STL_CNT_SEND_WRS,
	STL_CNT_RECV_WRS,
	STL_CNT_COMPLETIONS,
	STL_CNT_BAD_WRS,
	STL_CNT_CQE_QUOTA_REFUSALS,
	STL_CNT_WQE_QUOTA_REFUSALS,
	STL_CNT_REMOTE_INV_REFUSED,
	STL_CNT_KEYS_RESTORED,
	STL_CNT_OBJ_QUOTA_REFUSALS,
	STL_CNT_RATE_WAITS,
	STL_CNT_KMEM_REFUSALS,
	STL_CNT_PACED_BYTES,
	STL_CNT_EMTT_LARGE_PAGE_MRS,
	STL_CNT_DMABUF_MRS,
	STL_CNT_DMABUF_MOVES,
	STL_CNT_DMABUF_REMAPS,
	STL_CNT_DMABUF_REMAP_FAILURES,
	STL_CNT_DMABUF_INVALIDATE_NS,
	STL_CNT_DMABUF_REMAP_NS,
	STL_CNT_SPRAY_MSGS_SENT,
	STL_CNT_SPRAY_MSGS_RECEIVED,
	STL_CNT_SPRAY_MSGS_DROPPED,
	STL_CNT_SPRAY_SEND_FAILURES,
	STL_CNT_SPRAY_UP,
	STL_CNT_SPRAY_SINGLE,
	STL_CNT_SPRAY_TIMEOUTS,
	STL_CNT_SPRAY_PATH_FAILURES,
	STL_CNT_SPRAY_PROBES,
	STL_CNT_SPRAY_PROBE_FAILURES,
	STL_CNT_SPRAY_REPAIRS,
	STL_CNT_SPRAY_RECOVERIES,
	STL_CNT_SPRAY_WRS,
	STL_CNT_SPRAY_CHUNKS,
	STL_CNT_SPRAY_CHUNK_BYTES,
	STL_CNT_SPRAY_REPOSTS,
	STL_CNT_SPRAY_WHOLE,
	STL_NUM_COUNTERS
};

/* Kinds of objects with a per-device quota (stl_obj_charge()). */
enum stl_obj {
	STL_OBJ_PD,
	STL_OBJ_CQ,
	STL_OBJ_QP,
	STL_OBJ_SRQ,
	STL_OBJ_MR,
	STL_OBJ_MW,
	STL_OBJ_AH,
	STL_NUM_OBJ
};

struct stl_parent;

/**
 * struct stl_dev - one Stellar device
 * @ibdev: the device seen by ib_core and userspace
 * @parent: the parent this device lives on
 * @pdev: the parent's ib_device (alive while @parent is)
 * @pport: the parent's port backing our port 1
 * @ndev: the device's netdev for ib_core's address management and `rdma
 *	link` (reference held): @addr_ndev, or its real device if it is a VLAN
 * @addr_ndev: the netdev whose addresses (GIDs) the device may use, the one
 *	named at creation: the parent port's netdev or a device above it (a
 *	VLAN, macvlan or ipvlan); reference held (stl_add_gid())
 * @n_addrs: entries of @addrs; 0: every address of @addr_ndev
 * @addrs: the only addresses (as GIDs) the device may use, set at creation
 * @parent_entry: entry in @parent's list of children (stl_devs_lock)
 * @gone: dealloc_driver has run; never (re)added to @parent (stl_devs_lock)
 * @event_handler: receives the parent's port events
 * @ev_registered: @event_handler is registered on the parent
 * @reap_work: drops @parent's count once unregistration has fully ended
 * @mrs: lkey -> struct stl_mr of every registered MR, for WR validation
 * @qp_lifecycle: serialises parent QP creation with the CQ drain done when a
 *	parent QP is destroyed, so a freed parent QP's address cannot be reused
 *	while completions are filtered by it
 * @n_obj: objects of each kind (enum stl_obj) alive now
 * @rate_lock: guards @rate_tokens and @rate_ns
 * @rate_bps: cap on the bytes per second the device posts to the parent
 *	(0: none; sysfs rate_limit_bytes)
 * @rate_tokens: bytes that may be posted now; one request may take it
 *	below zero, the next one then waits
 * @rate_ns: when @rate_tokens was last refilled
 * @rate_eff: the rate @rate_tokens was last refilled at (cap or share)
 * @share: the bandwidth share of the parent's devices (the parent's)
 * @share_entry: in @share's list
 * @weight: the device's weight in @share (1..STL_WEIGHT_MAX)
 * @latency: latency class: never paced by @share, not counted in it
 * @active_ns: when the device last posted under @share (or, waiting for
 *	tokens, when it may post again)
 * @obj_quota: most objects of each kind the device may have (0: the
 *	module's maximum, STL_MAX_*); set by the operator (sysfs)
 * @emtt_entries: entries of the parent MRs the device holds (eMTT)
 * @emtt_extents: extents of those parent MRs
 * @n_cqe: CQ entries of the CQs alive now
 * @n_wqe: send and receive queue entries of the QPs alive now
 * @cqe_quota: most entries @n_cqe may reach (0: STL_DEF_CQE_QUOTA)
 * @wqe_quota: most entries @n_wqe may reach (0: STL_DEF_WQE_QUOTA)
 * @kmem: bytes of module memory the device's objects hold now (their
 *	estimates, stl_kmem_charge())
 * @kmem_quota: most bytes @kmem may reach (0: no limit; sysfs kmem_quota)
 * @pins: pinned pages, pin cache and pin quota of this device
 * @reg_flags: STL_REG_* bits: how far the parent still executes REG_MR and
 *	LOCAL_INV (atomic bitops, stl_mr.c)
 * @cnt: counters, indexed by enum stl_counter
 * @ahs: ah_num -> struct stl_ah, for UD work requests in a send ring
 * @ring_qps: QPs with rings, checked by @ring_work (@ring_lock)
 * @ring_srqs: SRQs with rings, checked by @ring_work (@ring_lock)
 * @ring_lock: guards @ring_qps and @ring_srqs
 * @ring_work: the backstop: pulls receive rings nobody rang for, flushes
 * @mws: rkey >> 8 -> struct stl_mw (devices with rings)
 * @mw_lock: serialises binds and invalidations of windows, and an MR's
 *	deregistration against binds to it
 * @spray_paths: paths of its new RC QPs (1: no spraying; spray/)
 * @cq_graves: parent CQs of destroyed CQs waiting out a grace period
 *	(struct stl_cq_grave; stl_cq.c)
 * @grave_lock: guards @cq_graves
 * @grave_work: destroys them when it is over
 */
struct stl_dev {
	struct ib_device ibdev;
	struct stl_parent *parent;
	struct ib_device *pdev;
	u32 pport;
	struct net_device *ndev;
	struct net_device *addr_ndev;
	u8 n_addrs;
	union ib_gid addrs[STL_MAX_ADDRS];
	struct list_head parent_entry;
	bool gone;
	struct ib_event_handler event_handler;
	bool ev_registered;
	struct work_struct reap_work;
	struct xarray mrs;
	struct mutex qp_lifecycle;
	atomic_t n_obj[STL_NUM_OBJ];
	u32 obj_quota[STL_NUM_OBJ];
	spinlock_t rate_lock;
	u64 rate_bps;
	s64 rate_tokens;
	u64 rate_ns;
	u64 rate_eff;
	struct stl_share *share;
	struct list_head share_entry;
	u32 weight;
	bool latency;
	u64 active_ns;
	atomic64_t emtt_entries, emtt_extents;
	atomic64_t n_cqe, n_wqe;
	u32 cqe_quota, wqe_quota;
	atomic64_t kmem;
	u64 kmem_quota;
	struct pvdma_cache pins;
	unsigned long reg_flags;
	atomic64_t cnt[STL_NUM_COUNTERS];
	struct xarray ahs;
	struct list_head ring_qps;
	struct list_head ring_srqs;
	struct mutex ring_lock;
	struct delayed_work ring_work;
	struct xarray mws;
	struct mutex mw_lock;
	u8 spray_paths;
	struct list_head cq_graves;
	spinlock_t grave_lock;
	struct delayed_work grave_work;
};

static inline struct stl_dev *to_stl_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct stl_dev, ibdev);
}

struct stl_ucontext {
	struct ib_ucontext ibuc;
};

/**
 * struct stl_pd - virtual PD
 * @ibpd: core object
 * @ppd: parent PD holding every parent object of this PD
 * @reg_lock: guards the registration QP and its CQ (lazily created)
 * @reg_cq: CQ of @reg_qp, polled directly
 * @reg_qp: parent RC QP connected to itself, posts REG_MR for this PD
 * @reg_rebuilt: jiffies of the last rebuild of @reg_qp after it failed a
 *	work request (rate-limits the retries; @reg_lock)
 */
struct stl_pd {
	struct ib_pd ibpd;
	struct ib_pd *ppd;
	struct mutex reg_lock;
	struct ib_cq *reg_cq;
	struct ib_qp *reg_qp;
	unsigned long reg_rebuilt;
};

static inline struct stl_pd *to_stl_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct stl_pd, ibpd);
}

struct stl_ah {
	struct ib_ah ibah;
	struct ib_ah *pah;
	u32 num;
};

static inline struct stl_ah *to_stl_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct stl_ah, ibah);
}

struct stl_ring_hdr;
struct stl_mmap;

/**
 * struct stl_ring - a queue mapped into the process, in librxe's layout
 * @mm: the mmap entry that owns the memory
 * @hdr: the queue: header (indices) then the entries
 * @mask: entries - 1 (a power of two minus one)
 * @log2: log2 of the size of one entry
 */
struct stl_ring {
	struct stl_mmap *mm;
	struct stl_ring_hdr *hdr;
	u32 mask;
	u32 log2;
};

/**
 * struct stl_uwr - what Stellar keeps of one work request it posted
 * @wr_id: the user's wr_id (the parent gets the ring index)
 * @signaled: the user wants its completion (send queue)
 * @bad: refused; completed with @status once the QP is flushed
 * @status: IB_WC_* status of a refused request
 * @psig: posted to the parent signalled (counted in the CQ's @inflight)
 */
struct stl_uwr {
	u64 wr_id;
	u8 signaled;
	u8 psig;
	u8 bad;
	u8 status;
};

/**
 * struct stl_uq - a send or receive queue of a QP with rings
 * @ring: the ring the process fills
 * @mutex: serialises taking entries out of @ring (@next, parent posts)
 * @next: ring index of the next entry to take
 * @done: ring index of the oldest entry not completed: the consumer index
 *	the process sees (the CQ's lock)
 * @wr: per ring slot, what was taken
 * @max_sge: most SGEs of an entry
 * @max_inline: most bytes of inline data (send queue)
 * @wqe: scratch copy of the entry being taken (@mutex)
 * @sbuf: send queue: the work request built from @wqe (@mutex)
 * @mm: the address space of the process that made the queue (compared,
 *	never dereferenced): its doorbells pull this receive queue too
 * @mm_node: in the table of receive queues by @mm (stl_ring.c)
 * @srq: the queue is an SRQ's (else a QP's receive queue)
 */
struct stl_uq {
	struct stl_ring ring;
	struct mutex mutex;
	u32 next;
	u32 done;
	struct stl_uwr *wr;
	u32 max_sge;
	u32 max_inline;
	void *wqe;
	struct stl_send_buf *sbuf;
	struct mm_struct *mm;
	struct hlist_node mm_node;
	bool srq;
};

/**
 * struct stl_srq - virtual shared receive queue
 * @ibsrq: core object
 * @psrq: the parent SRQ, in the PD's parent PD
 * @charged: entries charged to the device's wqe_quota
 * @kmem: bytes charged to the device's kmem_quota
 * @max_sge: most SGEs of a receive request
 * @rq: the ring the process fills (devices with rings)
 * @slot_lock: guards @slots, @free and @nfree
 * @slots: per parent slot, what the process posted there: the parent gets
 *	the slot number as wr_id, completions come back in any order
 * @free: stack of free slot numbers
 * @nfree: entries of @free
 * @nslots: entries of @slots (what the parent SRQ holds)
 * @ring_entry: in the device's ring_srqs
 * @work: pulls @rq in process context
 */
struct stl_srq {
	struct ib_srq ibsrq;
	struct ib_srq *psrq;
	u32 charged;
	u64 kmem;
	u32 max_sge;
	struct stl_uq rq;
	spinlock_t slot_lock;
	struct stl_uwr *slots;
	u32 *free;
	u32 nfree;
	u32 nslots;
	struct list_head ring_entry;
	struct work_struct work;
};

static inline struct stl_srq *to_stl_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct stl_srq, ibsrq);
}

/**
 * struct stl_cq_qref - how a CQ's completions name a QP
 * @stub: what completions carry in wc->qp; ib_uverbs reads only its qp_num.
 *	It lives as long as the CQ (recycled for later QPs), so a completion
 *	still being copied out while its QP is destroyed never points at
 *	freed memory
 * @entry: in the CQ's list of refs, free ones in the order they were freed
 * @busy: a live QP uses it
 */
struct stl_cq_qref {
	struct ib_qp stub;
	struct list_head entry;
	bool busy;
};

/**
 * struct stl_cq - virtual CQ
 * @ibcq: core object
 * @pcq: parent CQ
 * @lock: guards @uring and polling of @pcq
 * @dying: a parent QP being destroyed: its completions are dropped
 *	without reading the parent QP
 * @qrefs: every struct stl_cq_qref of this CQ
 * @charged: CQ entries charged to the device's cqe_quota
 * @kmem: bytes charged to the device's kmem_quota
 * @uring: the completion ring, mapped into the process
 * @uprod: producer index of @uring (ours; the mapped one is a copy)
 * @notify: IB_CQ_* the process armed the CQ for (@lock)
 * @overrun: @uring overflowed: completions were lost
 * @dead: the parent CQ is being destroyed: @fill touches nothing
 * @fill: runs stl_ring_cq_fill() for a parent completion handler called
 *	in interrupt context
 * @fill_irq: schedules @fill from a hard interrupt for rxe (6.5 and later),
 *	which calls its handler in process context under its CQ lock with
 *	interrupts off: the interrupt comes once that lock is dropped, and no
 *	thread has to be woken (as @fill_work would be)
 * @fill_work: the same for other parents calling in process context
 * @resize_lock: one resize at a time
 * @inflight: sends posted to the parent signalled and not completed yet
 *	(what a resize waits a moment for)
 */
struct stl_cq {
	struct ib_cq ibcq;
	struct ib_cq *pcq;
	spinlock_t lock;
	struct ib_qp *dying;
	struct list_head qrefs;
	u32 charged;
	u64 kmem;
	struct stl_ring uring;
	u32 uprod;
	u32 notify;
	bool overrun;
	bool dead;
	struct tasklet_struct fill;
	struct irq_work fill_irq;
	struct work_struct fill_work;
	struct mutex resize_lock;
	atomic_t inflight;
};

static inline struct stl_cq *to_stl_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct stl_cq, ibcq);
}

/**
 * struct stl_qp - virtual QP
 * @ibqp: core object (qp_num is the parent QP's number)
 * @pqp: parent QP
 * @sref: how the send CQ's completions name this QP
 * @rref: how the receive CQ's completions name it (@sref if the same CQ)
 * @max_send_sge: most SGEs of a send WR, checked at post time
 * @max_recv_sge: most SGEs of a receive WR
 * @max_inline: most bytes of inline data of a send WR
 * @qkey: the Q_Key last set by modify_qp (UD), sent in place of a
 *	controlled Q_Key an unprivileged user names in a work request
 * @charged: work queue entries charged to the device's wqe_quota
 * @kmem: bytes charged to the device's kmem_quota
 * @sq: send ring (devices with rings)
 * @rq: receive ring (devices with rings)
 * @sig_all: every send request completes (IB_SIGNAL_ALL_WR)
 * @marked: a flush marker went to the parent in this stay in the error
 *	state (stl_ring.c; under sq.mutex)
 * @fence: a refused send entry waits for the parent to complete the
 *	entries before it (STL_FENCE_*, stl_ring.c)
 * @err: the QP is in the error state: what the parent does not hold is
 *	flushed by Stellar
 * @rate_wait: send entries wait for the device's rate cap (stl_rate_take())
 *	or for room in the paths' queue (spray_post_send()); the device's
 *	backstop pulls the send ring again
 * @local_wait: a window entry waits for the entries before it (a marker
 *	follows them; under sq.mutex)
 * @ring_entry: in the device's ring_qps
 * @work: pulls the receive ring and flushes, in process context
 * @modify_lock: serialises the parent QP's state changes (modify_qp and
 *	@work's move to the error state): ib_core updates the parent QP's
 *	source GID reference (av_sgid_attr) without a lock, so two
 *	concurrent modifies with a path would lose one reference
 * @spray: its paths (RC QPs; spray/spray_path.c)
 */
struct stl_qp {
	struct ib_qp ibqp;
	struct ib_qp *pqp;
	struct stl_cq_qref *sref;
	struct stl_cq_qref *rref;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline;
	u32 qkey;
	u32 charged;
	u64 kmem;
	struct stl_uq sq;
	struct stl_uq rq;
	bool sig_all;
	bool marked;
	u8 fence;
	bool err;
	bool local_wait;
	bool rate_wait;
	struct list_head ring_entry;
	struct work_struct work;
	struct mutex modify_lock;
	struct spray_qp *spray;
};

static inline struct stl_qp *to_stl_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct stl_qp, ibqp);
}

/**
 * struct stl_fmr - a parent fast-register MR over pinned user pages
 * @park: how the pin cache keeps it while the region is deregistered
 * @pmr: the parent MR; its iova is the user's address
 * @sdev: the device it was built for (it outlives its pin cache)
 * @pdev: the parent device @sgt is mapped for
 * @sgt: the pages, mapped for the parent
 * @emtt: @sgt's extents and the page size @pmr was built with
 * @revivals: times it was parked and registered again under a new key
 */
struct stl_fmr {
	struct pvdma_parked park;
	struct ib_mr *pmr;
	struct stl_dev *sdev;
	struct ib_device *pdev;
	struct sg_table sgt;
	struct emtt_table emtt;
	unsigned int revivals;
};

/**
 * struct stl_mr - virtual MR backed by a parent fast-register MR
 * @ibmr: core object; lkey/rkey are the parent MR's
 * @fmr: the parent MR
 * @map: the pinned pages behind it (NULL for a dma-buf MR)
 * @dmabuf: the dma-buf behind it (stl_dmabuf.c), NULL for user memory
 * @pd: owning PD
 * @start: the user address it was registered at (for a rereg)
 * @iova: first address work requests may use
 * @length: bytes from @iova that work requests may use
 * @access: IB_ACCESS_* flags (changed by a rereg, under the mw_lock)
 * @num_mw: memory windows bound to it (under the device's mw_lock)
 * @kmem: bytes charged to the device's kmem_quota
 * @rcu: frees the object after lockless lookups are done
 */
struct stl_mr {
	struct ib_mr ibmr;
	struct stl_fmr *fmr;
	struct pvdma_map *map;
	struct stl_dmabuf *dmabuf;
	struct stl_pd *pd;
	u64 start;
	u64 iova;
	u64 length;
	int access;
	unsigned int num_mw;
	u64 kmem;
	struct rcu_head rcu;
};

/**
 * struct stl_mw - memory window: a parent fast-registration MR (stl_mw.c)
 * @ibmw: core object; its rkey is the parent MR's
 * @pmr: the parent MR
 * @mr: the MR it is bound to, NULL if none (under the device's mw_lock)
 * @pages: the bound pages, one reference each, until the parent has
 *	invalidated the binding
 * @npages: entries of @pages (0: nothing held)
 * @sgt: @pages mapped for the parent
 * @access: the access flags of the binding
 * @bound: valid at the parent as far as Stellar knows
 * @remote_inv: a peer's SEND with Invalidate freed it at the parent
 */
struct stl_mw {
	struct ib_mw ibmw;
	struct ib_mr *pmr;
	struct stl_mr *mr;
	struct page **pages;
	unsigned int npages;
	struct sg_table sgt;
	int access;
	bool bound;
	bool remote_inv;
};

static inline struct stl_mw *to_stl_mw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct stl_mw, ibmw);
}

/* The window fields of a BIND_MW send ring entry (kernel copy). */
struct stl_mw_wr {
	u64 addr;
	u64 length;
	u32 mr_lkey;
	u32 mw_rkey;
	u32 rkey;
	u32 access;
};

static inline struct stl_mr *to_stl_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct stl_mr, ibmr);
}

static inline void stl_count(struct stl_dev *sdev, enum stl_counter c, s64 n)
{
	atomic64_add(n, &sdev->cnt[c]);
}

/* stl_main.c */
struct stl_dev *stl_key_owner_get(struct ib_device *pdev, u32 rkey);
extern const struct ib_device_ops stl_dev_ops;

/* stl_verbs.c */
u64 stl_max_mr_size(struct stl_dev *sdev);
u64 stl_parent_pieces_max(struct stl_dev *sdev);
int stl_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata);
int stl_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr);
int stl_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *imm);
enum rdma_link_layer stl_get_link_layer(struct ib_device *ibdev, u32 port);
int stl_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
void stl_get_dev_fw_str(struct ib_device *ibdev, char *str);
int stl_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void stl_dealloc_ucontext(struct ib_ucontext *ibuc);
void stl_disassociate_ucontext(struct ib_ucontext *ibuc);
int stl_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int stl_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int stl_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata);
int stl_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int stl_destroy_ah(struct ib_ah *ibah, u32 flags);
int stl_add_gid(const struct ib_gid_attr *attr, void **context);
int stl_del_gid(const struct ib_gid_attr *attr, void **context);
int stl_ah_to_parent(struct stl_dev *sdev, const struct rdma_ah_attr *in,
		     struct rdma_ah_attr *out);
void stl_ah_from_parent(struct stl_dev *sdev, struct rdma_ah_attr *attr);
bool stl_udata_empty(struct ib_udata *udata);

/* stl_cq.c */
int stl_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct stl_create_cq_arg *arg);
int stl_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
void stl_cq_graves_init(struct stl_dev *sdev);
void stl_cq_graves_fini(struct stl_dev *sdev);
int stl_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int stl_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int stl_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
struct stl_cq_qref *stl_cq_qref_get(struct stl_cq *scq);
void stl_cq_qref_put(struct stl_cq *scq, struct stl_cq_qref *ref);
void stl_cq_mark_dying(struct stl_cq *scq, struct ib_qp *pqp);
void stl_cq_drain_qp(struct stl_cq *scq, bool destroyed);

/* stl_qp.c */
int stl_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata);
int stl_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int stl_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init);
int stl_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int stl_parent_qp_destroy(struct stl_dev *sdev, struct ib_qp *pqp);

/* stl_post.c */
int stl_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int stl_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
/* A send work request of any kind. */
union stl_send_wr {
	struct ib_send_wr send;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_ud_wr ud;
};

/* Scratch space for one translated send work request. */
struct stl_send_buf {
	union stl_send_wr wr;
	struct ib_sge inline_sge;
	u8 inline_data[STELLAR_MAX_INLINE_DATA];
};
int stl_prep_send(struct stl_dev *sdev, struct stl_qp *sqp,
		  const struct ib_send_wr *wr, struct stl_send_buf *b,
		  const u8 *kinline, u32 kinline_len);
int stl_parent_post_send(struct ib_qp *pqp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad);
int stl_parent_post_recv(struct ib_qp *pqp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad);
int stl_parent_post_srq_recv(struct ib_srq *psrq, const struct ib_recv_wr *wr,
			     const struct ib_recv_wr **bad);
int stl_post_recv_list(struct stl_dev *sdev, struct stl_pd *spd, u32 max_sge,
		       struct ib_qp *pqp, struct ib_srq *psrq,
		       const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
int stl_check_sges(struct stl_dev *sdev, struct stl_pd *spd,
		   const struct ib_sge *sg, int num, u32 max, int need);

/* stl_mr.c */
struct ib_mr *stl_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 virt_addr, int access,
			      struct ib_udata *udata);
struct ib_mr *stl_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 virt_addr, int access,
				struct ib_pd *pd, struct ib_udata *udata);
int stl_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int stl_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);
bool stl_reg_unusable(struct stl_dev *sdev);
int stl_mr_publish(struct stl_dev *sdev, struct stl_mr *smr);
int stl_mr_check_args(struct stl_dev *sdev, int access, int extra,
		      struct ib_udata *udata, u64 start, u64 length,
		      u64 virt_addr);
int stl_fmr_register(struct stl_dev *sdev, struct stl_pd *spd,
		     struct stl_fmr *fmr, int access);
int stl_fmr_invalidate(struct stl_dev *sdev, struct stl_pd *spd,
		       struct stl_fmr *fmr);
int stl_fmr_table(struct stl_dev *sdev, struct stl_fmr *fmr, u64 virt_addr,
		  bool merge);

/* Access flags an MR may have (windows: IB_ACCESS_MW_BIND on ring devices). */
#define STL_MR_ACCESS_SUPPORTED                                                \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |                      \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |                     \
	 IB_ACCESS_RELAXED_ORDERING)

/* stl_dmabuf.c */
struct ib_mr *stl_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				     u64 length, u64 virt_addr, int fd,
				     int access, struct stl_dmabuf_arg *arg);
void stl_dmabuf_mr_destroy(struct stl_dev *sdev, struct stl_mr *smr);
int stl_dmabuf_mr_restore(struct stl_dev *sdev, struct stl_mr *smr);
int stl_dmabuf_init(void);
void stl_dmabuf_exit(void);
void stl_pd_reg_teardown(struct stl_pd *spd);
int stl_pd_post_wait(struct stl_dev *sdev, struct stl_pd *spd,
		     struct ib_send_wr *wr);

/* stl_mw.c */
int stl_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int stl_dealloc_mw(struct ib_mw *ibmw);
int stl_mw_bind(struct stl_qp *sqp, const struct stl_mw_wr *mw);
int stl_mw_local_invalidate(struct stl_qp *sqp, u32 rkey);
bool stl_mw_remote_invalidated(struct stl_dev *sdev, struct ib_pd *pd,
			       u32 rkey);
int stl_mw_restore_key(struct stl_dev *sdev, u32 rkey);

/* stl_inv.c */
void stl_wc_remote_inv(struct stl_qp *sqp, struct ib_wc *wc);
void stl_inv_exit(void);
bool stl_mw_mr_busy(struct stl_dev *sdev, struct stl_mr *smr);
void stl_mr_parent_lost(struct stl_dev *sdev);
int stl_mr_restore_key(struct stl_dev *sdev, u32 rkey);

/* stl_ring.c */
int stl_mmap(struct ib_ucontext *uc, struct vm_area_struct *vma);
void stl_mmap_free(struct rdma_user_mmap_entry *entry);
int stl_ring_cq_create(struct stl_cq *scq, struct ib_udata *udata);
u32 stl_ring_cq_count(struct stl_cq *scq);
int stl_ring_cq_resize(struct stl_cq *scq, u32 num, struct ib_udata *udata);
void stl_ring_cq_quiesce(struct stl_cq *scq, bool dead);
void stl_ring_cq_destroy(struct stl_cq *scq);
void stl_ring_cq_fill(struct stl_cq *scq);
void stl_ring_cq_comp(struct stl_cq *scq);
int stl_ring_cq_notify(struct stl_cq *scq, enum ib_cq_notify_flags flags);
int stl_ring_qp_create(struct stl_qp *sqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata);
void stl_ring_qp_unlist(struct stl_qp *sqp);
void stl_ring_qp_destroy(struct stl_qp *sqp);
void stl_ring_qp_modified(struct stl_qp *sqp, const struct ib_qp_attr *attr,
			  int mask);
int stl_ring_doorbell(struct stl_qp *sqp);
void stl_ring_rq_doorbell(struct stl_qp *sqp);
void stl_ring_srq_doorbell(struct stl_srq *ssrq);
int stl_ring_srq_create(struct stl_srq *ssrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata);
void stl_ring_srq_destroy(struct stl_srq *ssrq);
void stl_ring_srq_free(struct stl_srq *ssrq);
int stl_ring_ah_created(struct stl_ah *sah, struct ib_udata *udata);
void stl_ring_ah_destroy(struct stl_ah *sah);
void stl_ring_init(void);
void stl_ring_dev_init(struct stl_dev *sdev);
void stl_ring_dev_fini(struct stl_dev *sdev);

/* stl_srq.c */
int stl_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata);
int stl_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int stl_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int stl_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int stl_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);

/* stl_stats.c */
struct rdma_hw_stats *stl_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port);
int stl_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index);
extern const struct attribute_group stl_attr_group;
u32 stl_quota(struct stl_dev *sdev, bool cqes);
int stl_quota_charge(struct stl_dev *sdev, bool cqes, u64 n);
u32 stl_obj_limit(struct stl_dev *sdev, enum stl_obj o);
bool stl_rate_take(struct stl_dev *sdev, u64 bytes);
u64 stl_wr_bytes(const struct ib_send_wr *wr);

/* Is @sdev paced by its parent's bandwidth share? */
static inline bool stl_shared(struct stl_dev *sdev)
{
	return READ_ONCE(sdev->share->total_bps) && !READ_ONCE(sdev->latency);
}

/*
 * May @wr go to the parent now?  Free when the device has no rate cap and
 * no share.
 */
static inline bool stl_rate_ok(struct stl_dev *sdev,
			       const struct ib_send_wr *wr)
{
	/* Bulk devices yield part of the share while this one is active. */
	if (READ_ONCE(sdev->latency) && READ_ONCE(sdev->share->total_bps))
		WRITE_ONCE(sdev->share->latency_ns, ktime_get_ns());
	return (!READ_ONCE(sdev->rate_bps) && !stl_shared(sdev)) ||
	       stl_rate_take(sdev, stl_wr_bytes(wr));
}

u64 stl_share_bps(struct stl_dev *sdev, u64 now);
void stl_share_init(struct stl_share *sh);
void stl_share_join(struct stl_dev *sdev, struct stl_share *sh);
void stl_share_leave(struct stl_dev *sdev);
int stl_rate_wait_send(struct stl_dev *sdev, const struct ib_send_wr *wr,
		       u64 *waited);
int stl_obj_charge(struct stl_dev *sdev, enum stl_obj o);

static inline void stl_obj_uncharge(struct stl_dev *sdev, enum stl_obj o)
{
	atomic_dec(&sdev->n_obj[o]);
}

void stl_quota_uncharge(struct stl_dev *sdev, bool cqes, s64 n);
int stl_kmem_charge(struct stl_dev *sdev, u64 bytes);
int stl_cq_release_parent(struct stl_dev *sdev, struct ib_cq *pcq);

static inline void stl_kmem_uncharge(struct stl_dev *sdev, u64 bytes)
{
	atomic64_sub(bytes, &sdev->kmem);
}

u64 stl_ring_cq_kmem(u32 cqe);
u64 stl_ring_qp_kmem(const struct ib_qp_init_attr *init, u32 max_inline);
u64 stl_ring_srq_kmem(u32 max_wr, u32 max_sge);

/*
 * ib_core exports it (6.1.0-57 and 6.12 alike: the `rdma system set
 * privileged-qkey` setting or CAP_NET_RAW) but declares it only in its
 * private core_priv.h.
 */
bool rdma_nl_get_privileged_qkey(void);

#define stl_dbg(sdev, fmt, ...) ibdev_dbg(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define stl_info(sdev, fmt, ...) \
	ibdev_info_ratelimited(&(sdev)->ibdev, fmt, ##__VA_ARGS__)

/* spray/spray_path.c; SPRAY_MAX_PATHS of spray/spray_sched.h */
#define STL_SPRAY_MAX_PATHS	16
struct spray_qp;
extern unsigned int spray_default_paths;
size_t spray_qp_kmem(void);
int spray_qp_create(struct stl_qp *sqp, struct stl_dev *sdev, u32 max_send_wr);
int spray_post_send(struct stl_qp *sqp, const struct stl_send_buf *b);
void spray_wc_fixup(struct stl_qp *sqp, struct ib_wc *wc);
void spray_qp_destroy(struct stl_qp *sqp);
void spray_qp_modified(struct stl_qp *sqp, const struct ib_qp_attr *attr,
		       const struct ib_qp_attr *pattr, int mask);
int spray_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
void spray_parent_add(struct ib_device *pdev);
void spray_parent_remove(struct ib_device *pdev);
void spray_debugfs_init(struct dentry *dir);

#endif /* STL_H */
