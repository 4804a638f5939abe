// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar spray: the paths of a virtual RC QP, and how two Stellar peers
 * agree on them.
 *
 * A virtual RC QP is parent QP 0, whose
 * number the application exchanges, plus up to SPRAY_MAX_PATHS - 1 more
 * parent RC QPs in the same parent PD: its paths.  Each path has its own
 * RoCEv2 UDP source port, chosen rather than hashed: the flow label of its
 * address vector (rxe and mlx5 derive the source port from it), set so
 * that path i leaves from path 0's port + i.  So one connection spans as
 * many ECMP paths (or tc classes) as it has paths.
 *
 * Paths exist only between two Stellar peers.  When QP 0 reaches RTR, its
 * side creates its paths and offers their numbers to the peer in a vendor
 * MAD on the parent's GSI QP (one MAD agent per parent port, registered
 * from the ib_client add callback), keyed by the two QPs' (GID, QPN):
 *
 *	OFFER(n, path QPNs)  ->  the peer connects its paths to ours,
 *	                         answers ANSWER(n', its path QPNs)
 *	ANSWER               ->  we connect ours (its are RTR): up,
 *	                         we send CONFIRM
 *	CONFIRM              ->  the peer is up too
 *
 * Both sides offer (whoever reaches RTR first is heard by the other once
 * it is at RTR too); crossing offers end in the same state.  Messages are
 * method Send both ways with our own retries every SPRAY_RETRY_MS; each
 * side answers duplicates again.  A plain RoCE peer never answers: after
 * SPRAY_TRIES tries the QP drops its paths and stays on path 0, unchanged;
 * so does a Stellar peer that answers with one path (n = 1: its paths are
 * off or gone).  A message is only taken from the address the QP is
 * connected to (the GRH source GID, the QPNs), and a peer that is up keeps
 * its paths: a second answer naming other QPs is dropped and counted.
 *
 * A path whose check fails (its QP in error: retries exhausted, the route
 * gone) is repaired: its side makes a new QP for it, with the path's
 * epoch + 1, and asks the peer to do the same:
 *
 *	REPAIR(path, epoch, our new QP)  ->  the peer makes a new QP for the
 *	                          path, connects it to ours, answers
 *	                          REPAIRED(path, epoch, its new QP)
 *	REPAIRED              ->  we connect ours to it; the path is checked
 *	                          again, up once a check comes back (counted
 *	                          as a recovery)
 *
 * An epoch at or below the path's is not repaired again (a duplicate is
 * answered; crossing repairs of one epoch meet), so a path that is down
 * keeps being repaired, once per check round, until it comes back.
 *
 * QP 0 going to RESET or ERROR takes its paths down; reaching RTR again
 * starts a new exchange.
 *
 * The data path (once up).  Every send work request of the QP goes through
 * a queue on its way to QP 0 (straight to QP 0 when nothing waits).  An
 * RDMA WRITE or READ of two chunks or more is cut: its chunks go on the
 * paths at once, each where spray_sched.c says it finishes soonest, and its
 * tail (the last bytes, about QP 0's share) goes on QP 0 once its chunks
 * are done and every request before it was posted there, with the
 * application's wr_id and flags.  So:
 *  - a request's completion comes from QP 0, in post order, after all its
 *    bytes arrived (its byte count is the request's: spray_wc_fixup());
 *  - a SEND, an immediate, an atomic or a fenced request follows every
 *    byte posted before it: it is never cut and waits its turn;
 *  - a cut WRITE waits for no earlier WRITE, a cut READ for no earlier
 *    READ: only then may a later request's chunks land before an earlier
 *    request's tail (the last bytes of each still land in post order).
 * A chunk's error fails its path: its chunks in flight go on the other
 * paths, and the path is repaired as above (a path that stalls, likewise).
 * A request whose chunk found no path goes on QP 0 whole.  QP 0's reset
 * or error ends the data path; requests waiting go to QP 0 (its error
 * state flushes them to the application).  The paths' CQ is armed; its
 * completions are polled in a work item (a parent may call its handler
 * with its CQ lock held), which posts what they let go.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/hashtable.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <rdma/ib_mad.h>

#include "kmod/stl.h"
#include "spray/spray_sched.h"

static_assert(SPRAY_MAX_PATHS == STL_SPRAY_MAX_PATHS);

/* Vendor class (range 2, with an OUI) and attribute of the exchange. */
#define SPRAY_MGMT_CLASS	0x4e
#define SPRAY_CLASS_VERSION	1
#define SPRAY_ATTR_PATHS	0x5350
#define SPRAY_MSG_VERSION	1
#define SPRAY_RETRY_MS		200
#define SPRAY_TRIES		10
/* Work requests a path QP holds (the scheduler's credit bounds it). */
#define SPRAY_PATH_WR		64
/* Each path is checked this often while up (a zero-length RDMA WRITE). */
#define SPRAY_PROBE_MS		1000
/*
 * Entries of the path QPs' CQ: room for two QPs per path (a repaired
 * path's old QP may leave completions behind).
 */
#define SPRAY_CQE(sq)		(2 * ((sq)->want - 1) * SPRAY_PATH_WR + 1)
/* Chunks one path QP holds at once (the rest of its queue: its check). */
#define SPRAY_PATH_CHUNKS	(SPRAY_PATH_WR - 2)
/* Most chunks a work request is cut into, its tail on QP 0 apart. */
#define SPRAY_WR_CHUNKS		16
/*
 * Requests are cut when they are about to go, not when posted: while fewer
 * chunks than this wait for a path.  So the chunk size and QP 0's share
 * they are cut with are those of now, not of a second ago.
 */
#define SPRAY_CUT_AHEAD		(2 * SPRAY_WR_CHUNKS)
/* QP 0's progress is known while its signaled completions came this late. */
#define SPRAY_Q0_KNOWN_NS	(200 * NSEC_PER_MSEC)
/* Most SGEs of a work request that is cut into chunks. */
#define SPRAY_SGE_MAX		4
/* Work requests on their way to QP 0, at most; chunk slots, at most. */
#define SPRAY_FIFO_MAX		4096U
#define SPRAY_SLOTS_MAX		8192U
/* Posts of one chunk before its work request goes whole on QP 0. */
#define SPRAY_CHUNK_POSTS	8
/*
 * A path QP that goes (replaced by a repair, or QP 0 reset) is parked and
 * destroyed this long after, by @probe_work with no lock held, never
 * under @lock nor in the MAD layer's completion work: rxe lets a QP's
 * packets hold references to it until the NIC gives them back, and its
 * destroy waits for them (50 s on 6.1 when they never come back, then
 * warns).  A repair waits while more than SPRAY_PARKED - SPRAY_MAX_PATHS
 * are parked, which leaves room for one QP's paths; beyond SPRAY_PARKED
 * (QP 0 reset again and again within SPRAY_PARK_MS) they are destroyed at
 * once.
 */
#define SPRAY_PARK_MS		2000
#define SPRAY_PARKED		(2 * SPRAY_MAX_PATHS)
/* Completions of the paths' CQ handled per run of its work. */
#define SPRAY_CQ_BUDGET		256
/* A path check's parent wr_id: this bit, the path << 1, the epoch parity. */
#define SPRAY_WRID_CHECK	BIT_ULL(63)
/*
 * Path QPs' own RC timers: ~268 ms local ACK timeout (QP 0's where longer:
 * a path's queues are as deep as QP 0's, and a timeout shorter than them
 * only resends), 5 retries: a path that answers nothing fails its check
 * within 1.6 s.  The timeout must outlast the gap between two ACKs: a
 * requester asks for one at the end of each message and every 128
 * packets (rxe), so a 64 KiB chunk on a 5 Mbit/s path is 105 ms without
 * one, and with ~67 ms (14) such a path resent its whole queue again and
 * again; 268 ms covers 128 KiB at 5 Mbit/s.  A path that stalls is also
 * taken down by spray_stalled().  (Not 7 retries: rxe takes a retry count
 * of 7 as "retry forever", as IBTA does for RNR.)
 */
#define SPRAY_PATH_TIMEOUT	16
#define SPRAY_PATH_RETRY	5

/* A CID-style identifier (locally administered bit set): "Stellar". */
static const u8 spray_oui[3] = { 0x0a, 0x57, 0x11 };

enum spray_op {
	SPRAY_OP_OFFER = 1,
	SPRAY_OP_ANSWER,
	SPRAY_OP_CONFIRM,
	SPRAY_OP_REPAIR,
	SPRAY_OP_REPAIRED,
};

/**
 * struct spray_msg - the exchange's payload (in the vendor MAD's data)
 * @version: SPRAY_MSG_VERSION
 * @op: enum spray_op
 * @n: the sender's paths, path 0 included (1: none, stay on one path)
 * @path: the path a REPAIR or REPAIRED is about (1 to @n - 1), else 0
 * @src_qpn: the sender's QP 0
 * @dst_qpn: the receiver's QP 0
 * @path_qpn: the sender's path QPs, [0] = @src_qpn
 * @src_gid: the sender's source GID of QP 0
 * @epoch: REPAIR and REPAIRED: the path's epoch after the repair
 * @rsvd: zero
 */
struct spray_msg {
	u8 version;
	u8 op;
	u8 n;
	u8 path;
	__be32 src_qpn;
	__be32 dst_qpn;
	__be32 path_qpn[SPRAY_MAX_PATHS];
	u8 src_gid[16];
	u8 epoch;
	u8 rsvd[3];
} __packed;

static_assert(sizeof(struct spray_msg) <= IB_MGMT_VENDOR_DATA);

/**
 * enum spray_state - where a QP's exchange stands
 * @SPRAY_IDLE: QP 0 is not at RTR yet (or was reset): nothing to do
 * @SPRAY_OFFERED: paths made, offered, no answer yet
 * @SPRAY_CONNECTED: our paths connected to the peer's; its confirmation due
 * @SPRAY_UP: both sides connected
 * @SPRAY_SINGLE: one path (no Stellar peer, it refused, or we failed)
 */
enum spray_state {
	SPRAY_IDLE,
	SPRAY_OFFERED,
	SPRAY_CONNECTED,
	SPRAY_UP,
	SPRAY_SINGLE,
};

static const char *const spray_state_names[] = {
	[SPRAY_IDLE] = "idle",
	[SPRAY_OFFERED] = "offered",
	[SPRAY_CONNECTED] = "connected",
	[SPRAY_UP] = "up",
	[SPRAY_SINGLE] = "single",
};

/**
 * struct spray_qp - the paths of one virtual RC QP
 * @node: entry in spray_qps, by (parent, QP 0's number)
 * @pdev: the parent (hash key; alive while the QP is)
 * @qpn: QP 0's number (hash key)
 * @ref: one for the hash table, one per message handler using it
 * @idle: completed when @ref drops to 0
 * @sqp: the virtual QP
 * @sdev: its device
 * @agent: the parent port's MAD agent
 * @work: resends the pending message, gives up after SPRAY_TRIES
 * @lock: guards everything below
 * @dead: being destroyed: no message is sent, no work queued
 * @state: enum spray_state
 * @want: paths we offer (path 0 included)
 * @n: paths in use (1 until connected)
 * @tries: messages sent for the pending step
 * @access: QP 0's access flags
 * @mtu: QP 0's path MTU
 * @timeout: QP 0's local ACK timeout (0 until set: the paths' own)
 * @have_av: @av holds QP 0's parent address vector
 * @av: QP 0's parent address vector (with a reference on its source GID)
 * @dqpn: the peer's QP 0
 * @cq: the parent CQ of the path QPs, polled directly (made at the first
 *	RTR, freed with the QP; a check's completion may outlive its path QP:
 *	harmless)
 * @pq: path QPs, [0] unused (QP 0 is @sqp's parent QP)
 * @peer: the peer's path QPs
 * @sport: UDP source port of each path
 * @probe_work: checks every path that is up, every SPRAY_PROBE_MS
 * @probe_busy: a path's check is outstanding
 * @probe_last: how a path's last check ended (enum spray_probe)
 * @probe_ok: a path's checks that came back
 * @epoch: each path's repairs (u8, compared modulo 256)
 * @repair_tries: REPAIR messages sent for a path's pending repair
 * @recovering: paths repaired whose first check has not come back yet
 * @recoveries: each path's repairs that ended in a check that came back
 * @dlock: guards the data path: everything below, and @pq while it is on
 * @don: the data path is on: work requests go through @fifo, WRITEs and
 *	READs in chunks over the paths that are up
 * @cq_off: the paths' CQ is going: its handler queues no more work
 * @cq_work: polls the paths' CQ (chunks and checks), posts what waits
 * @sched: the scheduler of the paths (path 0 stays down in it: QP 0
 *	carries only what goes through @fifo)
 * @chunks: the chunk slots
 * @order: the work requests through @fifo, with their chunks pending
 * @owr: @order's slots
 * @fifo: the work requests themselves (@fstride bytes each, slot = sequence
 *	number & @order.mask), on their way to QP 0
 * @fstride: bytes per @fifo entry
 * @bl: ring of chunk slots waiting for a path (@bl_mask + 1 entries)
 * @bl_mask: ring size - 1
 * @bl_head: first entry of @bl
 * @bl_tail: next free entry of @bl
 * @kinds: work requests in @fifo of each enum spray_kind
 * @cut_next: the oldest request in @fifo that may wait to be cut
 * @q0_bytes: bytes the data path posted on QP 0 (tails, and requests
 *	posted whole): with the paths' bytes, where the bytes went
 * @q0_last: bytes of the last tail or request posted on QP 0
 * @q0_done: @q0_bytes up to the last signaled request of QP 0 whose
 *	completion was polled (written under @fixlock): QP 0 has done that
 * @q0_seen: @fix_head at the last look (spray_cq_work())
 * @q0_seen_ns: when @fix_head was last seen to move
 * @cut_bytes: bytes of the work requests cut (chunks and tails)
 * @dkmem: bytes of the data path, charged to the device's kmem_quota
 * @max_send_wr: QP 0's send queue depth (the depth of @fifo)
 * @fixlock: guards @fix (taken inside @dlock, and inside the virtual CQ's
 *	lock, with interrupts off)
 * @fix: the signaled requests on QP 0, oldest first (struct spray_fix):
 *	a tail's completion reports the whole request's byte count, a
 *	request posted whole keeps its own (@fix_mask + 1 entries: four times
 *	QP 0's send queue, for completions the application has not polled
 *	yet)
 * @fix_mask: entries of @fix, minus 1
 * @fix_head: oldest entry of @fix
 * @fix_tail: next free entry of @fix
 * @fix_wait: a request of the queue waits for room on QP 0, in @fix or in
 *	its send queue (set by spray_kick()); the application's next poll
 *	of one of QP 0's send completions kicks the data path
 *	(spray_wc_fixup())
 * @parked: path QPs gone from use, destroyed SPRAY_PARK_MS later
 *	(spray_reap(); under @lock)
 * @parked_at: when each was parked (jiffies)
 * @n_parked: entries of @parked
 *
 * The paths' CQ is armed; its handler queues @cq_work, which polls it.
 * It is freed through stl_cq_release_parent(), after a grace period: rxe
 * of 6.1 schedules a tasklet per armed CQ's event, which destroying the
 * CQ does not kill (freeing it at once is a use-after-free).
 */
struct spray_qp {
	struct hlist_node node;
	struct ib_device *pdev;
	u32 qpn;
	refcount_t ref;
	struct completion idle;
	struct stl_qp *sqp;
	struct stl_dev *sdev;
	struct ib_mad_agent *agent;
	struct delayed_work work;
	struct mutex lock;
	bool dead;
	enum spray_state state;
	u8 want;
	u8 n;
	u8 tries;
	int access;
	enum ib_mtu mtu;
	u8 timeout;
	bool have_av;
	struct rdma_ah_attr av;
	u32 dqpn;
	struct ib_cq *cq;
	struct ib_qp *pq[SPRAY_MAX_PATHS];
	u32 peer[SPRAY_MAX_PATHS];
	u16 sport[SPRAY_MAX_PATHS];
	struct delayed_work probe_work;
	atomic_t probe_busy[SPRAY_MAX_PATHS];
	atomic_t probe_last[SPRAY_MAX_PATHS];
	atomic_t probe_ok[SPRAY_MAX_PATHS];
	u8 epoch[SPRAY_MAX_PATHS];
	u8 repair_tries[SPRAY_MAX_PATHS];
	unsigned long recovering;
	atomic_t recoveries[SPRAY_MAX_PATHS];
	spinlock_t dlock;
	bool don;
	bool cq_off;
	struct work_struct cq_work;
	struct spray_sched sched;
	struct spray_chunks chunks;
	struct spray_order order;
	struct spray_wr *owr;
	u8 *fifo;
	size_t fstride;
	u32 *bl;
	u32 bl_mask;
	u32 bl_head;
	u32 bl_tail;
	u32 kinds[3];
	u32 cut_next;
	u64 q0_bytes;
	u64 q0_last;
	u64 q0_done;
	u32 q0_seen;
	u64 q0_seen_ns;
	u64 cut_bytes;
	u64 dkmem;
	u32 max_send_wr;
	spinlock_t fixlock;
	struct spray_fix *fix;
	u32 fix_mask;
	u32 fix_head;
	u32 fix_tail;
	bool fix_wait;
	struct ib_qp *parked[SPRAY_PARKED];
	unsigned long parked_at[SPRAY_PARKED];
	u8 n_parked;
};

/**
 * struct spray_fix - a signaled request posted on QP 0 (from the data
 *	path's memory on: the first RTR), in post order: its completion is
 *	found by its place in the ring (QP 0 completes in post order), not by
 *	its wr_id alone, which an application may give to every request
 * @wr_id: the application's wr_id
 * @len: for a tail, the request's bytes, to report in its completion; 0
 *	for a request posted whole (its completion is left as it is)
 * @q0: the QP's @q0_bytes once it was posted
 */
struct spray_fix {
	u64 wr_id;
	u64 len;
	u64 q0;
};

/*
 * How a work request may be reordered against those before it: WRITEs
 * among WRITEs and READs among READs only (chunks of a later one may land
 * before the tail of an earlier one); anything else waits its turn.
 */
enum spray_kind {
	SPRAY_KIND_WRITE,
	SPRAY_KIND_READ,
	SPRAY_KIND_OTHER,
};

/**
 * struct spray_fwr - a work request on its way to QP 0
 * @b: the parent work request, whole (SGEs in @sge, or inline)
 * @len: its bytes
 * @tail: bytes at its end that go on QP 0 once its chunks are done (@len
 *	when it was not cut)
 * @kind: enum spray_kind
 * @uncut: to be cut, once few chunks wait (spray_cut_some())
 * @sge: its SGEs
 */
struct spray_fwr {
	struct stl_send_buf b;
	u64 len;
	u64 tail;
	u8 kind;
	bool uncut;
	struct ib_sge sge[];
};

/* How a path's last check ended. */
enum spray_probe {
	SPRAY_PROBE_NONE,
	SPRAY_PROBE_OK,
	SPRAY_PROBE_FAILED,
	SPRAY_PROBE_REPAIR,
};

static const char *const spray_probe_names[] = {
	[SPRAY_PROBE_NONE] = "probing",
	[SPRAY_PROBE_OK] = "up",
	[SPRAY_PROBE_FAILED] = "down",
	[SPRAY_PROBE_REPAIR] = "repairing",
};

/**
 * struct spray_agent - the MAD agent of one parent port
 * @entry: entry in spray_agents
 * @pdev: the parent
 * @port: its port
 * @agent: the registered agent
 */
struct spray_agent {
	struct list_head entry;
	struct ib_device *pdev;
	u32 port;
	struct ib_mad_agent *agent;
};

static DEFINE_MUTEX(spray_agents_lock);
static LIST_HEAD(spray_agents);

/* Virtual QPs with paths, by (parent, QP 0); lookups under spray_qps_lock. */
static DEFINE_HASHTABLE(spray_qps, 8);
static DEFINE_SPINLOCK(spray_qps_lock);

static int spray_paths_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (!n || n > SPRAY_MAX_PATHS) {
		pr_err("spray_paths=%u refused: 1 to %u\n", n, SPRAY_MAX_PATHS);
		return -EINVAL;
	}
	return param_set_uint(val, kp);
}

static const struct kernel_param_ops spray_paths_ops = {
	.set = spray_paths_set,
	.get = param_get_uint,
};

/*
 * Paths of a new device's RC QPs (its spray_paths attribute changes it):
 * 4, one per link of a typical leaf's uplinks; 1 turns spraying off.  A
 * QP whose peer is not a Stellar device has one; a ring device starts
 * with one (its spray_paths attribute gives it more).
 */
unsigned int spray_default_paths = 4;
module_param_cb(spray_paths, &spray_paths_ops, &spray_default_paths, 0644);
MODULE_PARM_DESC(spray_paths,
		 "network paths of each RC QP of a new stellar device, 1 (no spraying) to 16 (default 4)");

static u32 spray_hash(const struct ib_device *pdev, u32 qpn)
{
	return hash_ptr(pdev, 16) ^ qpn;
}

/* The QP 0 @qpn on @pdev, with a reference (spray_put()), or NULL. */
static struct spray_qp *spray_get(struct ib_device *pdev, u32 qpn)
{
	struct spray_qp *sq;

	spin_lock_bh(&spray_qps_lock);
	hash_for_each_possible(spray_qps, sq, node, spray_hash(pdev, qpn)) {
		if (sq->pdev == pdev && sq->qpn == qpn &&
		    refcount_inc_not_zero(&sq->ref)) {
			spin_unlock_bh(&spray_qps_lock);
			return sq;
		}
	}
	spin_unlock_bh(&spray_qps_lock);
	return NULL;
}

static void spray_put(struct spray_qp *sq)
{
	if (refcount_dec_and_test(&sq->ref))
		complete(&sq->idle);
}

static struct ib_mad_agent *spray_agent_of(struct ib_device *pdev, u32 port)
{
	struct ib_mad_agent *agent = NULL;
	struct spray_agent *a;

	mutex_lock(&spray_agents_lock);
	list_for_each_entry(a, &spray_agents, entry) {
		if (a->pdev == pdev && a->port == port) {
			agent = a->agent;
			break;
		}
	}
	mutex_unlock(&spray_agents_lock);
	return agent;
}

static void spray_send_done(struct ib_mad_agent *agent,
			    struct ib_mad_send_wc *wc)
{
	rdma_destroy_ah(wc->send_buf->ah, 0);
	ib_free_send_mad(wc->send_buf);
}

/* debugfs spray_lose_msgs: how many of the next messages sent are lost. */
static atomic_t spray_lose_msgs = ATOMIC_INIT(0);

/*
 * Send @op to the peer of @sq (about @path: REPAIR, REPAIRED).  Context:
 * process, sq->lock held.
 */
static void spray_send_path(struct spray_qp *sq, enum spray_op op, u8 path)
{
	struct rdma_ah_attr av = sq->av;
	struct ib_mad_send_buf *buf;
	struct ib_vendor_mad *mad;
	struct spray_msg *m;
	struct ib_ah *ah;
	unsigned int i;
	u8 n;

	lockdep_assert_held(&sq->lock);
	if (sq->dead || !sq->have_av || !sq->agent)
		return;
	if (atomic_add_unless(&spray_lose_msgs, -1, 0)) {
		/* Injected loss (debugfs): sent, and lost on the way. */
		ibdev_warn(&sq->sdev->ibdev, "QP %u: path exchange message %u lost (debugfs)\n",
			   sq->qpn, op);
		stl_count(sq->sdev, STL_CNT_SPRAY_MSGS_SENT, 1);
		return;
	}
	/* The peer's QP1 is reached as path 0 is (its flow label aside). */
	av.grh.flow_label = 0;
	ah = rdma_create_ah(sq->agent->qp->pd, &av, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		stl_dbg(sq->sdev, "QP %u: no address handle for the exchange: %ld\n",
			sq->qpn, PTR_ERR(ah));
		stl_count(sq->sdev, STL_CNT_SPRAY_SEND_FAILURES, 1);
		return;
	}
	buf = ib_create_send_mad(sq->agent, 1, 0, 0, IB_MGMT_VENDOR_HDR,
				 IB_MGMT_VENDOR_DATA, GFP_KERNEL,
				 IB_MGMT_BASE_VERSION);
	if (IS_ERR(buf)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		stl_count(sq->sdev, STL_CNT_SPRAY_SEND_FAILURES, 1);
		return;
	}
	buf->ah = ah;
	buf->timeout_ms = 0;
	buf->retries = 0;
	mad = buf->mad;
	mad->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	mad->mad_hdr.mgmt_class = SPRAY_MGMT_CLASS;
	mad->mad_hdr.class_version = SPRAY_CLASS_VERSION;
	mad->mad_hdr.method = IB_MGMT_METHOD_SEND;
	mad->mad_hdr.attr_id = cpu_to_be16(SPRAY_ATTR_PATHS);
	mad->mad_hdr.tid = cpu_to_be64(((u64)sq->qpn << 8) | op);
	memcpy(mad->oui, spray_oui, sizeof(spray_oui));
	m = (struct spray_msg *)mad->data;
	n = op == SPRAY_OP_OFFER ? sq->want : sq->n;
	m->version = SPRAY_MSG_VERSION;
	m->op = op;
	m->n = n;
	m->path = path;
	m->epoch = path ? sq->epoch[path] : 0;
	m->src_qpn = cpu_to_be32(sq->qpn);
	m->dst_qpn = cpu_to_be32(sq->dqpn);
	m->path_qpn[0] = m->src_qpn;
	for (i = 1; i < n; i++)
		m->path_qpn[i] = cpu_to_be32(sq->pq[i]->qp_num);
	memcpy(m->src_gid, sq->av.grh.sgid_attr->gid.raw, sizeof(m->src_gid));
	if (ib_post_send_mad(buf, NULL)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		ib_free_send_mad(buf);
		stl_count(sq->sdev, STL_CNT_SPRAY_SEND_FAILURES, 1);
		return;
	}
	stl_count(sq->sdev, STL_CNT_SPRAY_MSGS_SENT, 1);
}

static void spray_send(struct spray_qp *sq, enum spray_op op)
{
	spray_send_path(sq, op, 0);
}

/* ---- The data path: work requests over the paths ---- */

static struct spray_fwr *spray_fwr(struct spray_qp *sq, u32 seq)
{
	return (void *)(sq->fifo + (size_t)(seq & sq->order.mask) * sq->fstride);
}

static u64 spray_now(void)
{
	return ktime_get_ns();
}

static enum spray_kind spray_kind_of(const struct ib_send_wr *wr)
{
	if (wr->send_flags & IB_SEND_FENCE)
		return SPRAY_KIND_OTHER;
	if (wr->opcode == IB_WR_RDMA_WRITE)
		return SPRAY_KIND_WRITE;
	if (wr->opcode == IB_WR_RDMA_READ)
		return SPRAY_KIND_READ;
	return SPRAY_KIND_OTHER;
}

/*
 * The SGEs of bytes [@off, @off + @len) of a list of @n SGEs, into @out
 * (room for @n).  Return: their number.
 */
static int spray_slice(const struct ib_sge *sg, int n, u64 off, u64 len,
		       struct ib_sge *out)
{
	int i, k = 0;

	for (i = 0; i < n && len; i++) {
		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		out[k].addr = sg[i].addr + off;
		out[k].lkey = sg[i].lkey;
		out[k].length = min_t(u64, sg[i].length - off, len);
		len -= out[k].length;
		off = 0;
		k++;
	}
	return k;
}

/* A chunk's work request will not complete: its request goes whole. */
static void spray_chunk_lost(struct spray_qp *sq, u32 idx)
{
	spray_order_chunk_done(&sq->order, sq->chunks.c[idx].seq, -EIO);
	spray_chunk_free(&sq->chunks, idx);
}

static void spray_bl_push(struct spray_qp *sq, u32 idx)
{
	sq->bl[sq->bl_tail++ & sq->bl_mask] = idx;
}

/*
 * A chunk taken back from a failed path goes ahead of every chunk waiting:
 * its request is older than theirs, and completions come in post order, so
 * the application waits on it.  Behind the chunks of the requests posted
 * since (up to the whole send queue, seconds of traffic), it would stall
 * the QP that long.  Each chunk slot is in @bl at most once, so there is
 * room.  sq->dlock held.
 */
static void spray_bl_push_front(struct spray_qp *sq, u32 idx)
{
	sq->bl[--sq->bl_head & sq->bl_mask] = idx;
}

/*
 * Path @i failed (a chunk's error, a post refused, a stall, its repair):
 * down in the scheduler, its chunks in flight go first to the other paths,
 * the oldest request's first.  Its late completions are stale.  sq->dlock
 * held.
 */
static void spray_path_failed(struct spray_qp *sq, u32 i)
{
	u32 out[64], n, k, j, x;

	do {
		n = spray_fail_path(&sq->sched, &sq->chunks, i, out,
				    ARRAY_SIZE(out));
		/* Oldest request first (a path holds at most 62 chunks). */
		for (k = 1; k < n; k++) {
			x = out[k];
			for (j = k; j && (s32)(sq->chunks.c[out[j - 1]].seq -
					       sq->chunks.c[x].seq) > 0; j--)
				out[j] = out[j - 1];
			out[j] = x;
		}
		for (k = n; k--;)
			spray_bl_push_front(sq, out[k]);
		if (sq->don)
			stl_count(sq->sdev, STL_CNT_SPRAY_REPOSTS, n);
	} while (n == ARRAY_SIZE(out));
}

/*
 * Post chunk @idx on path @i.  Return: 0; 1 if the scheduler refused it;
 * the parent's error (the chunk counts as posted).  sq->dlock held.
 */
static int spray_post_chunk(struct spray_qp *sq, u32 idx, u32 i)
{
	struct spray_chunk *c = &sq->chunks.c[idx];
	struct spray_fwr *f = spray_fwr(sq, c->seq);
	struct ib_sge sge[SPRAY_SGE_MAX];
	struct ib_rdma_wr wr = f->b.wr.rdma;
	int ret;

	wr.wr.next = NULL;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.num_sge = spray_slice(f->sge, f->b.wr.send.num_sge, c->offset,
				    c->len, sge);
	wr.wr.sg_list = sge;
	wr.remote_addr += c->offset;
	if (spray_chunk_post(&sq->sched, &sq->chunks, idx, i, spray_now(),
			     &wr.wr.wr_id))
		return 1;
	ret = ib_post_send(sq->pq[i], &wr.wr, NULL);
	if (ret)
		return ret;
	stl_count(sq->sdev, STL_CNT_SPRAY_CHUNKS, 1);
	stl_count(sq->sdev, STL_CNT_SPRAY_CHUNK_BYTES, c->len);
	return 0;
}

/* @wr will complete on QP 0's CQ (the QP signals all, or @wr asks). */
static bool spray_signaled(const struct spray_qp *sq,
			   const struct ib_send_wr *wr)
{
	return sq->sqp->sig_all || (wr->send_flags & IB_SEND_SIGNALED);
}

/*
 * @wr goes on QP 0 now: if signaled, its completion's place in the fix
 * ring, with the byte count to report (@len, or 0 to leave it) and QP 0's
 * byte count once it is posted (@q0).  With the data path on,
 * spray_q0_post() posts nothing signaled while the ring is full; with it
 * off (no tails), a full ring loses the entry.  Returns whether a place
 * was taken.  sq->dlock held.
 */
static bool spray_fix_add(struct spray_qp *sq, const struct ib_send_wr *wr,
			  u64 len, u64 q0)
{
	unsigned long flags;
	bool added = false;

	if (!spray_signaled(sq, wr))
		return false;
	spin_lock_irqsave(&sq->fixlock, flags);
	if (sq->fix_tail - sq->fix_head <= sq->fix_mask) {
		sq->fix[sq->fix_tail & sq->fix_mask].wr_id = wr->wr_id;
		sq->fix[sq->fix_tail & sq->fix_mask].len = len;
		sq->fix[sq->fix_tail & sq->fix_mask].q0 = q0;
		sq->fix_tail++;
		added = true;
	}
	spin_unlock_irqrestore(&sq->fixlock, flags);
	return added;
}

/*
 * Post @wr (@bytes of it) on QP 0: counted in @q0_bytes, and its place in
 * the fix ring with @len to report (spray_fix_add()).  The place is taken
 * first: on a device with rings the parent's completion handler fills the
 * CQ ring and may look for it before ib_post_send() returns; it is given
 * back if the parent refuses @wr (the last place: sq->dlock keeps other
 * posts out, and no completion can name @wr).  Return: -ENOMEM when the
 * fix ring has no room for it, else the parent's answer.  sq->dlock held.
 */
static int spray_q0_post(struct spray_qp *sq, const struct ib_send_wr *wr,
			 u64 bytes, u64 len)
{
	unsigned long flags;
	bool added;
	int ret;

	/*
	 * Every signaled request keeps its place in the fix ring while the
	 * data path is on (a tail's byte count must not be lost): with the
	 * ring full of completions the application has not polled, QP 0
	 * counts as full (-ENOMEM: a request of the queue waits, one posted
	 * straight is refused, as by a full send queue).
	 */
	if (sq->don && spray_signaled(sq, wr) &&
	    sq->fix_tail - READ_ONCE(sq->fix_head) > sq->fix_mask)
		return -ENOMEM;
	added = spray_fix_add(sq, wr, len, sq->q0_bytes + bytes);
	ret = ib_post_send(sq->sqp->pqp, wr, NULL);
	if (ret) {
		if (added) {
			spin_lock_irqsave(&sq->fixlock, flags);
			sq->fix_tail--;
			spin_unlock_irqrestore(&sq->fixlock, flags);
		}
		return ret;
	}
	sq->q0_last = bytes;
	sq->q0_bytes += bytes;
	return 0;
}

/*
 * Post on QP 0 the oldest work request, whose chunks are all done: its
 * tail, or the whole request if a chunk was lost (WRITE and READ may move
 * the same bytes twice).  Return: 0, or the parent's error (it waits).
 */
static int spray_post_head(struct spray_qp *sq)
{
	struct spray_wr *w = &sq->order.wr[sq->order.head & sq->order.mask];
	struct spray_fwr *f = spray_fwr(sq, sq->order.head);
	struct ib_sge sge[SPRAY_SGE_MAX];
	struct ib_rdma_wr tail;
	const struct ib_send_wr *wr = &f->b.wr.send;
	bool tailed = false;

	if (f->tail < f->len && !w->status) {
		tail = f->b.wr.rdma;
		tail.wr.num_sge = spray_slice(f->sge, f->b.wr.send.num_sge,
					      f->len - f->tail, f->tail, sge);
		tail.wr.sg_list = sge;
		tail.remote_addr += f->len - f->tail;
		wr = &tail.wr;
		tailed = true;
	} else if (f->tail < f->len && sq->don) {
		stl_count(sq->sdev, STL_CNT_SPRAY_WHOLE, 1);
	}
	return spray_q0_post(sq, wr, tailed ? f->tail : f->len,
			     tailed ? f->len : 0);
}

/**
 * spray_wc_fixup() - a send completion of QP 0, as the application sees it
 * @sqp: the virtual QP
 * @wc: the completion
 *
 * The completion of a request's tail reports the request's byte count.
 * Context: the virtual CQ's lock held (interrupts off); RCU keeps
 * @sqp->spray (spray_qp_destroy()).
 */
void spray_wc_fixup(struct stl_qp *sqp, struct ib_wc *wc)
{
	struct spray_qp *sq = READ_ONCE(sqp->spray);
	struct spray_fix *x;

	if (!sq || !READ_ONCE(sq->fix))
		return;
	spin_lock(&sq->fixlock);
	if (sq->fix_head != sq->fix_tail) {
		x = &sq->fix[sq->fix_head & sq->fix_mask];
		if (x->wr_id == wc->wr_id) {
			if (x->len)
				wc->byte_len = min_t(u64, x->len, U32_MAX);
			WRITE_ONCE(sq->q0_done, x->q0);
			sq->fix_head++;
		}
	}
	spin_unlock(&sq->fixlock);
	/*
	 * Room again (in the fix ring, or in QP 0's send queue, which a
	 * completion frees) for what waits: the data path goes on.  Pairs
	 * with the barrier in spray_kick().
	 */
	smp_mb();
	if (READ_ONCE(sq->fix_wait) && !READ_ONCE(sq->cq_off)) {
		WRITE_ONCE(sq->fix_wait, false);
		queue_work(system_wq, &sq->cq_work);
	}
}

/*
 * Cut request @seq now: its tail is QP 0's share of it (spray_tail_len()),
 * the rest goes in chunks of the current size, at most SPRAY_WR_CHUNKS,
 * into the queue of chunks waiting.  Return: 0 (cut, or to go whole),
 * or -ENOSPC when there are not chunk slots enough (it waits).
 * sq->dlock held.
 */
static int spray_cut(struct spray_qp *sq, u32 seq)
{
	struct spray_fwr *f = spray_fwr(sq, seq);
	u32 k, cl, chunk = sq->sched.chunk, idx[SPRAY_WR_CHUNKS];
	u64 tail, off;
	int ret = 0;

	if (sq->chunks.size - sq->chunks.used < SPRAY_WR_CHUNKS)
		return -ENOSPC;
	tail = spray_tail_len(&sq->sched, f->len);
	if (spray_chunk_count(chunk, f->len - tail) > SPRAY_WR_CHUNKS)
		chunk = roundup_pow_of_two(DIV_ROUND_UP(f->len - tail,
						       SPRAY_WR_CHUNKS - 1));
	for (k = 0, off = 0; off < f->len - tail; k++, off += cl) {
		cl = spray_chunk_len(chunk, f->len - tail - off);
		ret = WARN_ON_ONCE(k >= SPRAY_WR_CHUNKS) ? -E2BIG :
		      spray_chunk_alloc(&sq->chunks, seq, off, cl);
		if (ret < 0)
			break;
		idx[k] = ret;
	}
	/*
	 * Slots short (checked above: never here) or too many chunks (the
	 * size above prevents it): the request goes whole.
	 */
	if (ret < 0 || WARN_ON_ONCE(spray_order_set_chunks(&sq->order, seq, k))) {
		while (k--)
			spray_chunk_free(&sq->chunks, idx[k]);
		f->uncut = false;
		spray_order_chunk_done(&sq->order, seq, 0);
		return 0;
	}
	f->uncut = false;
	f->tail = tail;
	stl_count(sq->sdev, STL_CNT_SPRAY_WRS, 1);
	sq->cut_bytes += f->len;
	while (k--)
		spray_bl_push(sq, idx[k]);
	return 0;
}

/*
 * Cut the requests waiting, oldest first, while fewer than SPRAY_CUT_AHEAD
 * chunks wait for a path.  Return: whether it cut any.  sq->dlock held.
 */
static bool spray_cut_some(struct spray_qp *sq)
{
	bool any = false;

	/* Requests before the head are gone (done, or never to be cut). */
	if ((s32)(sq->cut_next - sq->order.head) < 0)
		sq->cut_next = sq->order.head;
	while (sq->don && sq->cut_next != sq->order.tail &&
	       sq->bl_tail - sq->bl_head < SPRAY_CUT_AHEAD) {
		if (spray_fwr(sq, sq->cut_next)->uncut) {
			if (spray_cut(sq, sq->cut_next))
				break;
			any = true;
		}
		sq->cut_next++;
	}
	return any;
}

/* Chunks waiting onto paths with credit, oldest first.  sq->dlock held. */
static void spray_post_waiting(struct spray_qp *sq)
{
	int i, ret;
	u32 idx;

	while (sq->bl_head != sq->bl_tail) {
		idx = sq->bl[sq->bl_head & sq->bl_mask];
		i = spray_pick(&sq->sched, sq->chunks.c[idx].len);
		if (i == -EAGAIN)
			break;
		if (i < 0 || sq->chunks.c[idx].posts >= SPRAY_CHUNK_POSTS) {
			/* No path left for it: its request goes whole. */
			sq->bl_head++;
			spray_chunk_lost(sq, idx);
			continue;
		}
		if (sq->sched.path[i].out_chunks >= SPRAY_PATH_CHUNKS)
			break;
		ret = spray_post_chunk(sq, idx, i);
		sq->bl_head++;
		if (ret == 1) {
			spray_chunk_lost(sq, idx);
		} else if (ret) {
			ibdev_dbg(&sq->sdev->ibdev, "QP %u path %d: post refused (%d), path down\n",
				  sq->qpn, i, ret);
			/* Posted as far as the scheduler knows: taken back. */
			spray_path_failed(sq, i);
			if (atomic_read(&sq->probe_last[i]) != SPRAY_PROBE_REPAIR)
				atomic_set(&sq->probe_last[i], SPRAY_PROBE_FAILED);
		}
	}
}

/*
 * Move what waits: requests cut as the chunks waiting run short, chunks
 * onto paths with credit, then the work requests whose chunks are done
 * onto QP 0, in post order.  sq->dlock held.
 */
static void spray_kick(struct spray_qp *sq)
{
	struct spray_fwr *f;
	bool cut;
	int ret;

	/* Until the paths are full, or nothing is left to cut. */
	do {
		cut = spray_cut_some(sq);
		spray_post_waiting(sq);
	} while (cut && sq->bl_head == sq->bl_tail);
	while (sq->order.head != sq->order.done) {
		f = spray_fwr(sq, sq->order.head);
		ret = spray_post_head(sq);
		if (ret == -ENOMEM) {
			/*
			 * QP 0 is full: its next completion the application
			 * polls kicks again (spray_wc_fixup()).  Asked first,
			 * then tried again, so a completion polled in between
			 * is not missed.
			 */
			WRITE_ONCE(sq->fix_wait, true);
			/* Pairs with spray_wc_fixup()'s: flag, then room. */
			smp_mb();
			ret = spray_post_head(sq);
			if (ret == -ENOMEM)
				break;
		}
		if (ret)
			ibdev_dbg(&sq->sdev->ibdev, "QP %u: QP 0 refused a request (%d), dropped\n",
				  sq->qpn, ret);
		sq->kinds[f->kind]--;
		sq->order.head++;
	}
}

/*
 * Start the data path: every path up, QP 0 down in the scheduler (it
 * carries the tails).  sq->lock held; the data path's memory exists.
 */
static void spray_data_on(struct spray_qp *sq)
{
	const struct spray_params p = {
		.chunk_init = 64 << 10,
		.chunk_min = 16 << 10,
		.chunk_max = 1 << 20,
		.credit_init = 512 << 10,
		.credit_min = 256 << 10,
		.credit_max = 16 << 20,
		.target_ns = 20 * NSEC_PER_MSEC,
		.stall_ns = 2 * NSEC_PER_SEC,
		.tune_ns = 10 * NSEC_PER_MSEC,
		.rate_window_ns = 50 * NSEC_PER_MSEC,
	};
	u32 i;

	if (!sq->fifo)
		return;
	/* Nothing is left in the queue or the slots by spray_data_off(). */
	spin_lock_bh(&sq->dlock);
	if (!spray_sched_init(&sq->sched, sq->n, &p)) {
		spray_path_down(&sq->sched, 0);
		for (i = 1; i < sq->n; i++)
			spray_path_up(&sq->sched, i);
		sq->cut_next = sq->order.tail;
		sq->don = true;
	}
	spin_unlock_bh(&sq->dlock);
}

/*
 * Stop the data path before the paths go: chunks in flight are given up,
 * and every request waiting goes to QP 0, whole where it lost chunks (QP 0
 * in the error state flushes them to the application).  What QP 0 has no
 * room for stays in the queue, in order, and follows as QP 0 completes
 * (spray_kick() from @cq_work); requests posted meanwhile queue behind
 * it.  sq->lock held.
 */
static void spray_data_off(struct spray_qp *sq)
{
	u32 i, idx, seq;

	spin_lock_bh(&sq->dlock);
	if (sq->don) {
		sq->don = false;
		for (i = 1; i < sq->sched.n_paths; i++)
			spray_path_failed(sq, i);
		while (sq->bl_head != sq->bl_tail) {
			idx = sq->bl[sq->bl_head++ & sq->bl_mask];
			spray_chunk_lost(sq, idx);
		}
		/* Requests not cut yet go whole. */
		for (seq = sq->order.head; seq != sq->order.tail; seq++) {
			if (spray_fwr(sq, seq)->uncut) {
				spray_fwr(sq, seq)->uncut = false;
				spray_order_chunk_done(&sq->order, seq, 0);
			}
		}
		sq->cut_next = sq->order.tail;
		spray_kick(sq);
		if (sq->order.head != sq->order.tail)
			ibdev_dbg(&sq->sdev->ibdev, "QP %u: %u requests wait for room on QP 0\n",
				  sq->qpn, spray_order_count(&sq->order));
	}
	spin_unlock_bh(&sq->dlock);
}

/*
 * QP 0 was reset (or goes): the requests still waiting for it are
 * dropped, as a reset drops what its send queue held.
 */
static void spray_data_reset(struct spray_qp *sq)
{
	spin_lock_bh(&sq->dlock);
	sq->order.head = sq->order.tail;
	sq->order.done = sq->order.tail;
	sq->cut_next = sq->order.tail;
	memset(sq->kinds, 0, sizeof(sq->kinds));
	WRITE_ONCE(sq->fix_wait, false);
	spin_unlock_bh(&sq->dlock);
}

/**
 * spray_post_send() - post one checked send request of a QP with paths
 * @sqp: the virtual QP
 * @b: the request as it goes to the parent
 *
 * With the data path on, the request goes through the QP's queue to QP 0;
 * an RDMA WRITE or READ big enough is cut: its chunks go on the paths at
 * once, its tail on QP 0 when they are done and every request before it
 * was posted there, with the application's wr_id and flags.  So the
 * request's completion (on QP 0) says all its bytes arrived, completions
 * keep their post order, and SENDs, immediates and atomics follow every
 * byte posted before them.
 *
 * With the data path off but its memory there (from the first RTR, before
 * any request can be posted), the request goes straight to QP 0 and takes
 * its place in the fix ring: every signaled request on QP 0 has one, so
 * completions and places stay in step (spray_wc_fixup()).
 *
 * Return: 1 when the QP has no data path memory (the caller posts to QP 0
 * itself), 0 when posted, -ENOMEM when the QP's queue is full, or QP 0's
 * error.
 */
int spray_post_send(struct stl_qp *sqp, const struct stl_send_buf *b)
{
	struct spray_qp *sq = sqp->spray;
	const struct ib_send_wr *wr = &b->wr.send;
	u64 len = stl_wr_bytes(wr);
	enum spray_kind kind = spray_kind_of(wr);
	u32 seq;
	struct spray_fwr *f;
	bool cut;
	int ret = 0;

	/* No data path memory (no paths tried, or none to be had). */
	if (!sq || !smp_load_acquire(&sq->fix))
		return 1;
	spin_lock_bh(&sq->dlock);
	if (!sq->don && sq->order.head == sq->order.tail) {
		/* Straight to QP 0, in the fix ring (spray_fix_add()). */
		ret = spray_q0_post(sq, wr, len, 0);
		goto out;
	}
	/*
	 * Cut (when its turn comes: spray_cut_some()): a WRITE or READ of
	 * two chunks or more, not inline, not fenced, with nothing of another
	 * kind waiting before it.
	 */
	cut = sq->don && kind != SPRAY_KIND_OTHER &&
	      !(wr->send_flags & IB_SEND_INLINE) &&
	      wr->num_sge <= SPRAY_SGE_MAX &&
	      len >= 2 * (u64)sq->sched.chunk &&
	      !sq->kinds[SPRAY_KIND_OTHER] &&
	      !sq->kinds[kind == SPRAY_KIND_WRITE ? SPRAY_KIND_READ :
			 SPRAY_KIND_WRITE];
	/* Nothing waits and nothing to cut: straight to QP 0. */
	if (!cut && sq->order.head == sq->order.tail) {
		ret = spray_q0_post(sq, wr, len, 0);
		goto out;
	}
	if (spray_order_count(&sq->order) > sq->order.mask) {
		ret = -ENOMEM;
		goto out;
	}
	seq = sq->order.tail;
	f = spray_fwr(sq, seq);
	f->b.wr = b->wr;
	f->b.wr.send.next = NULL;
	if (wr->send_flags & IB_SEND_INLINE) {
		memcpy(f->b.inline_data, b->inline_data, b->inline_sge.length);
		f->b.inline_sge = b->inline_sge;
		f->b.inline_sge.addr = (uintptr_t)f->b.inline_data;
		f->b.wr.send.sg_list = &f->b.inline_sge;
	} else {
		memcpy(f->sge, wr->sg_list, wr->num_sge * sizeof(*f->sge));
		f->b.wr.send.sg_list = f->sge;
	}
	f->len = len;
	f->tail = len;
	f->kind = kind;
	f->uncut = cut;
	/* One pending chunk stands for the chunks it will be cut into. */
	spray_order_add(&sq->order, wr->wr_id, 1, false, &seq);
	sq->kinds[kind]++;
	if (!cut)
		spray_order_chunk_done(&sq->order, seq, 0);
	spray_kick(sq);
out:
	spin_unlock_bh(&sq->dlock);
	return ret;
}

/* A path check's completion.  sq->dlock held. */
static void spray_check_done(struct spray_qp *sq, const struct ib_wc *wc)
{
	unsigned int i = (wc->wr_id >> 1) & (SPRAY_MAX_PATHS - 1);

	if ((wc->wr_id & 1) != (READ_ONCE(sq->epoch[i]) & 1) ||
	    atomic_read(&sq->probe_last[i]) == SPRAY_PROBE_REPAIR)
		return;
	atomic_set(&sq->probe_busy[i], 0);
	if (wc->status == IB_WC_SUCCESS) {
		atomic_set(&sq->probe_last[i], SPRAY_PROBE_OK);
		atomic_inc(&sq->probe_ok[i]);
		stl_count(sq->sdev, STL_CNT_SPRAY_PROBES, 1);
		if (test_and_clear_bit(i, &sq->recovering)) {
			atomic_inc(&sq->recoveries[i]);
			stl_count(sq->sdev, STL_CNT_SPRAY_RECOVERIES, 1);
			if (sq->don && i < sq->sched.n_paths)
				spray_path_up(&sq->sched, i);
			stl_dbg(sq->sdev, "QP %u path %u: back up\n", sq->qpn, i);
		}
	} else if (wc->status != IB_WC_WR_FLUSH_ERR) {
		atomic_set(&sq->probe_last[i], SPRAY_PROBE_FAILED);
		stl_count(sq->sdev, STL_CNT_SPRAY_PROBE_FAILURES, 1);
		ibdev_dbg(&sq->sdev->ibdev, "QP %u path %u: check failed: %s\n",
			  sq->qpn, i, ib_wc_status_msg(wc->status));
	}
}

/*
 * A chunk's completion: done, or its path failed (it and the path's
 * other chunks wait for another path; the path is repaired).
 * sq->dlock held.
 */
static void spray_chunk_done(struct spray_qp *sq, const struct ib_wc *wc)
{
	bool ok = wc->status == IB_WC_SUCCESS;
	struct spray_chunk *c;
	int idx;
	u32 i;

	if (!sq->don)
		return;
	idx = spray_chunk_complete(&sq->sched, &sq->chunks, wc->wr_id,
				   spray_now(), ok);
	if (idx < 0)
		return;
	c = &sq->chunks.c[idx];
	if (ok) {
		spray_order_chunk_done(&sq->order, c->seq, 0);
		spray_chunk_free(&sq->chunks, idx);
		return;
	}
	i = c->path;
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		ibdev_notice_ratelimited(&sq->sdev->ibdev,
					 "QP %u path %u: chunk failed: %s (%d), reposted\n",
					 sq->qpn, i, ib_wc_status_msg(wc->status),
					 wc->status);
	c->state = SPRAY_CHUNK_READY;
	spray_path_failed(sq, i);
	spray_bl_push_front(sq, idx);
	stl_count(sq->sdev, STL_CNT_SPRAY_REPOSTS, 1);
	if (wc->status != IB_WC_WR_FLUSH_ERR &&
	    atomic_read(&sq->probe_last[i]) != SPRAY_PROBE_REPAIR)
		atomic_set(&sq->probe_last[i], SPRAY_PROBE_FAILED);
}

/*
 * Poll the paths' CQ: checks and chunks; then post what waits and tune.
 * At most SPRAY_CQ_BUDGET completions a run: with more, the work queues
 * itself again (the worker yields the CPU between runs), else the CQ is
 * armed again.  Context: process (a work item: a parent may call its CQ
 * handler with its CQ lock held, and polling takes it).
 */
/*
 * QP 0's share of the requests cut from now on, from where work waits
 * (spray_share_tune()): chunks left waiting after a kick (the paths are
 * full), or more than two of QP 0's tails or requests not done, as its
 * signaled completions tell.  Those say nothing when the application
 * signals rarely or polls late: the share stays unless they moved within
 * SPRAY_Q0_KNOWN_NS.  sq->dlock held.
 */
static void spray_q0_share(struct spray_qp *sq, u64 now)
{
	u32 seen = READ_ONCE(sq->fix_head);
	bool q0_full;

	if (seen != sq->q0_seen) {
		sq->q0_seen = seen;
		sq->q0_seen_ns = now;
	}
	/* Not known: the share stays. */
	if (now - sq->q0_seen_ns >= SPRAY_Q0_KNOWN_NS)
		return;
	q0_full = sq->q0_bytes - READ_ONCE(sq->q0_done) >
		  2 * max_t(u64, sq->q0_last, SZ_64K);
	spray_share_tune(&sq->sched, now, sq->bl_head != sq->bl_tail, q0_full);
}

static void spray_cq_work(struct work_struct *work)
{
	struct spray_qp *sq = container_of(work, struct spray_qp, cq_work);
	struct ib_wc wc[8];
	int n = 0, k, done = 0;
	u64 now;

	spin_lock_bh(&sq->dlock);
	while (done < SPRAY_CQ_BUDGET &&
	       (n = ib_poll_cq(sq->cq, ARRAY_SIZE(wc), wc)) > 0) {
		for (k = 0; k < n; k++) {
			if (wc[k].wr_id & SPRAY_WRID_CHECK)
				spray_check_done(sq, &wc[k]);
			else
				spray_chunk_done(sq, &wc[k]);
		}
		done += n;
	}
	if (sq->don) {
		spray_kick(sq);
		now = spray_now();
		spray_tune(&sq->sched, now);
		spray_q0_share(sq, now);
	} else if (sq->order.head != sq->order.tail) {
		/* Left by spray_data_off(): to QP 0 as it has room. */
		spray_kick(sq);
	}
	spin_unlock_bh(&sq->dlock);
	if (READ_ONCE(sq->cq_off))
		return;
	if (done >= SPRAY_CQ_BUDGET ||
	    ib_req_notify_cq(sq->cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0)
		queue_work(system_wq, &sq->cq_work);
}

static void spray_cq_comp(struct ib_cq *cq, void *ctx)
{
	struct spray_qp *sq = ctx;

	if (!READ_ONCE(sq->cq_off))
		queue_work(system_wq, &sq->cq_work);
}

/*
 * The data path's memory, made once, at the first RTR: a queue as deep as
 * QP 0's send queue, chunk slots for it.  Without it (no memory, kmem
 * quota) the QP's requests stay on QP 0.  sq->lock held.
 */
static void spray_data_alloc(struct spray_qp *sq, u32 max_send_wr)
{
	u32 depth = clamp_t(u32, roundup_pow_of_two(max_send_wr + 1), 16,
			    SPRAY_FIFO_MAX);
	u32 slots = min(depth * SPRAY_WR_CHUNKS, SPRAY_SLOTS_MAX);
	struct spray_fix *fix;
	struct spray_chunk *c;
	u64 kmem;

	if (sq->fifo)
		return;
	sq->fstride = ALIGN(sizeof(struct spray_fwr) +
			    max_t(u32, sq->sqp->max_send_sge, 1) *
			    sizeof(struct ib_sge), 8);
	kmem = (u64)depth * (sq->fstride + sizeof(*sq->owr) +
			     4 * sizeof(*sq->fix)) +
	       (u64)slots * (sizeof(*c) + sizeof(*sq->bl));
	if (stl_kmem_charge(sq->sdev, kmem))
		goto fail;
	sq->fifo = kvcalloc(depth, sq->fstride, GFP_KERNEL);
	sq->owr = kvcalloc(depth, sizeof(*sq->owr), GFP_KERNEL);
	c = kvcalloc(slots, sizeof(*c), GFP_KERNEL);
	sq->bl = kvcalloc(slots, sizeof(*sq->bl), GFP_KERNEL);
	fix = kvcalloc(4 * depth, sizeof(*fix), GFP_KERNEL);
	if (!sq->fifo || !sq->owr || !c || !sq->bl || !fix) {
		kvfree(sq->fifo);
		kvfree(sq->owr);
		kvfree(c);
		kvfree(sq->bl);
		kvfree(fix);
		sq->fifo = NULL;
		sq->owr = NULL;
		sq->bl = NULL;
		stl_kmem_uncharge(sq->sdev, kmem);
		goto fail;
	}
	sq->dkmem = kmem;
	spray_chunks_init(&sq->chunks, c, slots);
	spray_order_init(&sq->order, sq->owr, depth, 0);
	sq->bl_mask = slots - 1;
	sq->fix_mask = 4 * depth - 1;
	/* Last: spray_wc_fixup() reads the ring once this is set. */
	smp_store_release(&sq->fix, fix);
	return;
fail:
	stl_dbg(sq->sdev, "QP %u: no memory for the data path: its requests stay on QP 0\n",
		sq->qpn);
}

static void spray_data_free(struct spray_qp *sq)
{
	if (!sq->fifo)
		return;
	kvfree(sq->fifo);
	kvfree(sq->owr);
	kvfree(sq->chunks.c);
	kvfree(sq->bl);
	kvfree(sq->fix);
	sq->fifo = NULL;
	stl_kmem_uncharge(sq->sdev, sq->dkmem);
}

/*
 * Destroy a path QP and give back its queue quota.  Context: process; may
 * wait long in the parent (see SPRAY_PARK_MS).
 */
static void spray_qp_gone(struct spray_qp *sq, struct ib_qp *qp)
{
	stl_parent_qp_destroy(sq->sdev, qp);
	stl_quota_uncharge(sq->sdev, false, SPRAY_PATH_WR + 1);
}

/*
 * Destroy the parked path QPs, those parked SPRAY_PARK_MS ago or (@all)
 * every one, outside sq->lock: a destroy may wait long in the parent (see
 * SPRAY_PARK_MS), and the peer's messages, the QP's counters and the
 * check rounds must not wait with it.  Context: process, sq->lock not
 * held.  Return: how many stay parked.
 */
static unsigned int spray_reap(struct spray_qp *sq, bool all)
{
	struct ib_qp *qp[SPRAY_PARKED];
	unsigned int i, n = 0, kept = 0;

	mutex_lock(&sq->lock);
	for (i = 0; i < sq->n_parked; i++) {
		if (all || time_after_eq(jiffies, sq->parked_at[i] +
					 msecs_to_jiffies(SPRAY_PARK_MS))) {
			qp[n++] = sq->parked[i];
			continue;
		}
		sq->parked[kept] = sq->parked[i];
		sq->parked_at[kept++] = sq->parked_at[i];
	}
	sq->n_parked = kept;
	mutex_unlock(&sq->lock);
	for (i = 0; i < n; i++)
		spray_qp_gone(sq, qp[i]);
	return kept;
}

/*
 * A path QP out of use: moved to ERR now, destroyed SPRAY_PARK_MS later by
 * @probe_work (queued here; after the QP is dead, spray_qp_destroy()
 * reaps).  ERR at once: a QP replaced behind a black hole still resends
 * its chunks, and once the route is back they would land after the same
 * bytes went by another path and their request completed, over what the
 * application wrote there since; the peer's parked QP, in ERR too, drops
 * them.  Its flush completions are stale (its chunks were taken back, its
 * checks have the other epoch parity).  sq->lock held.
 */
static void spray_park(struct spray_qp *sq, struct ib_qp *qp)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	int ret;

	ret = ib_modify_qp(qp, &a, IB_QP_STATE);
	if (ret)
		ibdev_warn_ratelimited(&sq->sdev->ibdev,
				       "QP %u: parked path QP %u not moved to ERR: %d\n",
				       sq->qpn, qp->qp_num, ret);
	if (sq->n_parked == SPRAY_PARKED) {
		ibdev_dbg(&sq->sdev->ibdev, "QP %u: %u path QPs parked: one destroyed at once\n",
			  sq->qpn, sq->n_parked);
		spray_qp_gone(sq, qp);
		return;
	}
	sq->parked[sq->n_parked] = qp;
	sq->parked_at[sq->n_parked++] = jiffies;
	if (!sq->dead)
		queue_delayed_work(system_wq, &sq->probe_work,
				   msecs_to_jiffies(SPRAY_PROBE_MS));
}

/*
 * Destroy path QPs @from.. (not their CQ: freeing a CQ waits for its work,
 * which must not happen under sq->lock nor in the MAD layer's CQ work that
 * runs spray_recv(); the CQ lives as long as the QP).  sq->lock held.
 */
static void spray_drop_paths(struct spray_qp *sq, unsigned int from)
{
	unsigned int i;

	if (from <= 1)
		spray_data_off(sq);
	for (i = from; i < SPRAY_MAX_PATHS; i++) {
		if (!sq->pq[i])
			continue;
		spray_park(sq, sq->pq[i]);
		sq->pq[i] = NULL;
		sq->peer[i] = 0;
		sq->sport[i] = 0;
	}
	if (sq->n > from)
		sq->n = max(from, 1U);
}

/* One path, the exchange over.  sq->lock held. */
static void spray_single(struct spray_qp *sq, const char *why)
{
	spray_drop_paths(sq, 1);
	sq->n = 1;
	sq->state = SPRAY_SINGLE;
	stl_count(sq->sdev, STL_CNT_SPRAY_SINGLE, 1);
	stl_dbg(sq->sdev, "QP %u stays on one path: %s\n", sq->qpn, why);
}

/*
 * A new path QP in QP 0's parent PD, on the paths' CQ, at INIT, charged to
 * the device's WQE quota.  sq->lock held.
 */
static struct ib_qp *spray_path_qp(struct spray_qp *sq)
{
	struct stl_qp *sqp = sq->sqp;
	struct ib_pd *ppd = to_stl_pd(sqp->ibqp.pd)->ppd;
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr a = {};
	struct ib_qp *qp;
	int ret;

	init.send_cq = sq->cq;
	init.recv_cq = sq->cq;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.port_num = sq->sdev->pport;
	init.cap.max_send_wr = SPRAY_PATH_WR;
	init.cap.max_send_sge = sqp->max_send_sge;
	init.cap.max_recv_wr = 1;
	init.cap.max_recv_sge = 1;
	ret = stl_quota_charge(sq->sdev, false, SPRAY_PATH_WR + 1);
	if (ret)
		return ERR_PTR(ret);
	qp = ib_create_qp(ppd, &init);
	if (IS_ERR(qp)) {
		stl_quota_uncharge(sq->sdev, false, SPRAY_PATH_WR + 1);
		return qp;
	}
	a.qp_state = IB_QPS_INIT;
	a.port_num = sq->sdev->pport;
	a.qp_access_flags = sq->access;
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret) {
		ib_destroy_qp(qp);
		stl_quota_uncharge(sq->sdev, false, SPRAY_PATH_WR + 1);
		return ERR_PTR(ret);
	}
	return qp;
}

/* Make the path QPs (INIT), to offer their numbers.  sq->lock held. */
static int spray_make_paths(struct spray_qp *sq)
{
	struct ib_cq_init_attr ca = {};
	unsigned int i;
	int ret;

	if (!sq->cq) {
		/*
		 * Kept for the QP's life; see spray_drop_paths().  Paths are
		 * the tenant's queues too: charged to the device's quotas.
		 */
		ret = stl_quota_charge(sq->sdev, true, SPRAY_CQE(sq));
		if (ret)
			return ret;
		ca.cqe = SPRAY_CQE(sq);
		sq->cq = ib_create_cq(sq->pdev, spray_cq_comp, NULL, sq, &ca);
		if (IS_ERR(sq->cq)) {
			ret = PTR_ERR(sq->cq);
			sq->cq = NULL;
			stl_quota_uncharge(sq->sdev, true, SPRAY_CQE(sq));
			return ret;
		}
		ib_req_notify_cq(sq->cq, IB_CQ_NEXT_COMP);
	}
	spray_data_alloc(sq, sq->max_send_wr);
	for (i = 1; i < sq->want; i++) {
		atomic_set(&sq->probe_busy[i], 0);
		atomic_set(&sq->probe_last[i], SPRAY_PROBE_NONE);
		atomic_set(&sq->probe_ok[i], 0);
		atomic_set(&sq->recoveries[i], 0);
		sq->epoch[i] = 0;
		clear_bit(i, &sq->recovering);
		sq->pq[i] = spray_path_qp(sq);
		if (IS_ERR(sq->pq[i])) {
			ret = PTR_ERR(sq->pq[i]);
			sq->pq[i] = NULL;
			goto err;
		}
	}
	return 0;

err:
	spray_drop_paths(sq, 1);
	return ret;
}

/*
 * Connect path @i (INIT) to the peer's QP @peer_qpn (RTR, then RTS; both
 * PSNs 0), from UDP source port path 0's + @i.  sq->lock held.
 */
static int spray_connect_path(struct spray_qp *sq, unsigned int i,
			      u32 peer_qpn)
{
	const struct ib_device_attr *pa = &sq->pdev->attrs;
	struct ib_qp_attr a = {};
	u16 s;
	int ret;

	a.qp_state = IB_QPS_RTR;
	a.ah_attr = sq->av;
	/* Port low bits (sport0 + i): flow label (1 << 14) | (s ^ 1). */
	s = (sq->sport[0] + i) & 0x3fff;
	a.ah_attr.grh.flow_label = BIT(14) | (s ^ 1);
	a.path_mtu = sq->mtu;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = min_t(int, pa->max_qp_rd_atom, 16);
	a.min_rnr_timer = 12;
	ret = ib_modify_qp(sq->pq[i], &a, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0;
	/* QP 0's own ACK timeout where longer: queues on a path are its. */
	a.timeout = sq->timeout ? max_t(u8, sq->timeout, SPRAY_PATH_TIMEOUT) :
		    SPRAY_PATH_TIMEOUT;
	a.retry_cnt = SPRAY_PATH_RETRY;
	a.rnr_retry = 7;
	a.max_rd_atomic = min_t(int, pa->max_qp_init_rd_atom, 16);
	ret = ib_modify_qp(sq->pq[i], &a, IB_QP_STATE | IB_QP_SQ_PSN |
			   IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			   IB_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		return ret;
	sq->peer[i] = peer_qpn;
	sq->sport[i] = 0xc000 | s;
	return 0;
}

/*
 * Connect our paths to the peer's @peer[1..n-1] (RTR, then RTS), each
 * with its own source port; paths beyond @n go.  sq->lock held.
 */
static int spray_connect(struct spray_qp *sq, const __be32 *peer, u8 n)
{
	unsigned int i;
	u32 fl;
	int ret;

	fl = rdma_ah_read_grh(&sq->av)->flow_label;
	sq->sport[0] = rdma_get_udp_sport(fl, sq->qpn, sq->dqpn);
	spray_drop_paths(sq, n);
	for (i = 1; i < n; i++) {
		ret = spray_connect_path(sq, i, be32_to_cpu(peer[i]));
		if (ret)
			return ret;
	}
	sq->n = n;
	return 0;
}

/*
 * Replace path @i's QP by a new one at INIT (made first: when that fails
 * the old one stays).  A new QP rather than the old one through RESET:
 * rxe of 6.12 can hang resetting a QP that failed.  Its checks start
 * afresh; completions of the old QP still in the CQ have the other epoch
 * parity.  The old QP is parked, destroyed later (spray_park()).
 * sq->lock held.
 */
static int spray_renew_path(struct spray_qp *sq, unsigned int i)
{
	struct ib_qp *qp, *old;

	/* Room to park the old one, and all paths of a reset after it. */
	if (sq->n_parked > SPRAY_PARKED - SPRAY_MAX_PATHS)
		return -EBUSY;
	qp = spray_path_qp(sq);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	/* Its chunks wait for other paths; it is up again once checked. */
	spin_lock_bh(&sq->dlock);
	if (sq->don)
		spray_path_failed(sq, i);
	old = sq->pq[i];
	sq->pq[i] = qp;
	spin_unlock_bh(&sq->dlock);
	spray_park(sq, old);
	atomic_set(&sq->probe_busy[i], 0);
	return 0;
}

/*
 * Whether the peer's paths in @m are those we are connected to.  A repair
 * is about one path only: the others may be under repair too, on either
 * side, so their numbers may differ from ours (requiring them to match
 * would drop every message of two repairs that cross).
 */
static bool spray_same_peer(const struct spray_qp *sq,
			    const struct spray_msg *m)
{
	unsigned int i;

	/* An offer names all the peer's paths, the rest only those in use. */
	if (m->n < sq->n || (m->op != SPRAY_OP_OFFER && m->n != sq->n))
		return false;
	if (m->op >= SPRAY_OP_REPAIR)
		return true;
	for (i = 1; i < sq->n; i++)
		if (be32_to_cpu(m->path_qpn[i]) != sq->peer[i])
			return false;
	return true;
}

static void spray_arm(struct spray_qp *sq)
{
	sq->tries = 1;
	mod_delayed_work(system_wq, &sq->work, msecs_to_jiffies(SPRAY_RETRY_MS));
}

/*
 * Path @i is down: give it a new QP (INIT) for the next epoch and ask the
 * peer to do the same, naming ours (spray_probe() resends until it
 * answers; its answer names its new QP, which ours is then connected
 * to).  A new QP that cannot be made leaves the path down, tried again
 * next round.  sq->lock held.
 */
static void spray_repair(struct spray_qp *sq, unsigned int i)
{
	int ret;

	ret = spray_renew_path(sq, i);
	if (ret) {
		stl_count(sq->sdev, STL_CNT_SPRAY_PATH_FAILURES, 1);
		stl_dbg(sq->sdev, "QP %u path %u: no new QP for it: %d\n",
			sq->qpn, i, ret);
		return;
	}
	sq->epoch[i]++;
	atomic_set(&sq->probe_last[i], SPRAY_PROBE_REPAIR);
	sq->repair_tries[i] = 1;
	stl_count(sq->sdev, STL_CNT_SPRAY_REPAIRS, 1);
	stl_dbg(sq->sdev, "QP %u path %u: down, repairing (epoch %u)\n",
		sq->qpn, i, sq->epoch[i]);
	spray_send_path(sq, SPRAY_OP_REPAIR, i);
}

/*
 * Check every path of an up QP: a zero-length RDMA WRITE (no memory is
 * touched at either end, C9-88), signaled.  Its completion says the path
 * carries traffic both ways.  A path found down is repaired; a repair the
 * peer has not answered is asked again (every round for SPRAY_TRIES
 * rounds, then every 8th).
 */
static void spray_probe(struct work_struct *work)
{
	struct spray_qp *sq = container_of(to_delayed_work(work),
					   struct spray_qp, probe_work);
	struct ib_rdma_wr wr = {};
	u32 stalled = 0;
	unsigned int i;
	u8 t;

	mutex_lock(&sq->lock);
	if (sq->dead || sq->state != SPRAY_UP)
		goto out;
	/* Paths that stalled are failed (and so repaired below). */
	spin_lock_bh(&sq->dlock);
	if (sq->don) {
		spray_stalled(&sq->sched, spray_now(), &stalled);
		for (i = 1; i < sq->n; i++) {
			if (!(stalled & BIT(i)))
				continue;
			ibdev_dbg(&sq->sdev->ibdev, "QP %u path %u: stalled\n",
				  sq->qpn, i);
			spray_path_failed(sq, i);
			if (atomic_read(&sq->probe_last[i]) != SPRAY_PROBE_REPAIR)
				atomic_set(&sq->probe_last[i],
					   SPRAY_PROBE_FAILED);
		}
		/* A backstop: what waits for a queue that has room again. */
		spray_kick(sq);
	}
	spin_unlock_bh(&sq->dlock);
	wr.wr.opcode = IB_WR_RDMA_WRITE;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	for (i = 1; i < sq->n; i++) {
		switch (atomic_read(&sq->probe_last[i])) {
		case SPRAY_PROBE_FAILED:
			spray_repair(sq, i);
			continue;
		case SPRAY_PROBE_REPAIR:
			t = sq->repair_tries[i];
			if (t < U8_MAX)
				sq->repair_tries[i] = t + 1;
			if (t < SPRAY_TRIES || !(t % 8))
				spray_send_path(sq, SPRAY_OP_REPAIR, i);
			continue;
		default:
			break;
		}
		if (atomic_cmpxchg(&sq->probe_busy[i], 0, 1))
			continue;
		wr.wr.wr_id = SPRAY_WRID_CHECK | (i << 1) | (sq->epoch[i] & 1);
		if (ib_post_send(sq->pq[i], &wr.wr, NULL)) {
			atomic_set(&sq->probe_busy[i], 0);
			atomic_set(&sq->probe_last[i], SPRAY_PROBE_FAILED);
			stl_count(sq->sdev, STL_CNT_SPRAY_PROBE_FAILURES, 1);
		}
	}
	queue_delayed_work(system_wq, &sq->probe_work,
			   msecs_to_jiffies(SPRAY_PROBE_MS));
out:
	mutex_unlock(&sq->lock);
	/* Not up (reset, single): rounds go on while QPs are parked. */
	if (spray_reap(sq, false) && !READ_ONCE(sq->dead))
		queue_delayed_work(system_wq, &sq->probe_work,
				   msecs_to_jiffies(SPRAY_PROBE_MS));
}

/* Both sides are connected: the paths' checks begin.  sq->lock held. */
static void spray_up(struct spray_qp *sq)
{
	sq->state = SPRAY_UP;
	stl_count(sq->sdev, STL_CNT_SPRAY_UP, 1);
	spray_data_on(sq);
	mod_delayed_work(system_wq, &sq->probe_work, 0);
}

/*
 * The peer repaired path m->path (REPAIR: it asks us to do the same) or
 * answers our repair (REPAIRED).  Context: process, sq->lock held; @sq up.
 */
static void spray_handle_repair(struct spray_qp *sq,
				const struct spray_msg *m)
{
	unsigned int i = m->path;
	s8 d = (s8)(m->epoch - sq->epoch[i]);
	u32 peer = be32_to_cpu(m->path_qpn[i]);
	bool repairing;

	repairing = atomic_read(&sq->probe_last[i]) == SPRAY_PROBE_REPAIR;
	if (d < 0 || (d > 0 && m->op == SPRAY_OP_REPAIRED)) {
		stl_count(sq->sdev, STL_CNT_SPRAY_MSGS_DROPPED, 1);
		return;
	}
	if (!d && !repairing) {
		/* A duplicate: answered again if it names the same QP. */
		if (m->op == SPRAY_OP_REPAIR && peer == sq->peer[i])
			spray_send_path(sq, SPRAY_OP_REPAIRED, i);
		return;
	}
	if (d > 0) {
		/* The peer's repair: a new QP of ours for its new one. */
		if (spray_renew_path(sq, i)) {
			/* Ours stays down; our own repair follows. */
			atomic_set(&sq->probe_last[i], SPRAY_PROBE_FAILED);
			stl_count(sq->sdev, STL_CNT_SPRAY_PATH_FAILURES, 1);
			return;
		}
		sq->epoch[i] = m->epoch;
		stl_count(sq->sdev, STL_CNT_SPRAY_REPAIRS, 1);
	}
	/*
	 * Here our new QP (INIT) meets the peer's: the answer to our repair,
	 * the peer's repair crossing ours (one epoch), or a new repair.
	 */
	if (spray_connect_path(sq, i, peer)) {
		atomic_set(&sq->probe_last[i], SPRAY_PROBE_FAILED);
		stl_count(sq->sdev, STL_CNT_SPRAY_PATH_FAILURES, 1);
		return;
	}
	if (m->op == SPRAY_OP_REPAIR)
		spray_send_path(sq, SPRAY_OP_REPAIRED, i);
	set_bit(i, &sq->recovering);
	atomic_set(&sq->probe_busy[i], 0);
	atomic_set(&sq->probe_last[i], SPRAY_PROBE_NONE);
}

/* A peer's message for @sq.  Context: process, sq->lock held. */
static void spray_handle(struct spray_qp *sq, const struct spray_msg *m)
{
	u8 n = min(sq->want, m->n);
	int ret;

	switch (sq->state) {
	case SPRAY_OFFERED:
		if (m->op >= SPRAY_OP_CONFIRM)
			break;
		if (n < 2) {
			spray_single(sq, "the peer has one path");
			if (m->op == SPRAY_OP_OFFER)
				spray_send(sq, SPRAY_OP_ANSWER);
			break;
		}
		ret = spray_connect(sq, m->path_qpn, n);
		if (ret) {
			spray_single(sq, "connecting a path failed");
			stl_count(sq->sdev, STL_CNT_SPRAY_PATH_FAILURES, 1);
			if (m->op == SPRAY_OP_OFFER)
				spray_send(sq, SPRAY_OP_ANSWER);
			break;
		}
		if (m->op == SPRAY_OP_OFFER) {
			/* Ours answer theirs; theirs are RTR when they confirm. */
			sq->state = SPRAY_CONNECTED;
			spray_send(sq, SPRAY_OP_ANSWER);
			spray_arm(sq);
		} else {
			/* An answer: theirs are connected already. */
			spray_up(sq);
			spray_send(sq, SPRAY_OP_CONFIRM);
		}
		break;
	case SPRAY_CONNECTED:
	case SPRAY_UP:
		if (!spray_same_peer(sq, m)) {
			stl_count(sq->sdev, STL_CNT_SPRAY_MSGS_DROPPED, 1);
			break;
		}
		if (m->op == SPRAY_OP_OFFER) {
			spray_send(sq, SPRAY_OP_ANSWER);
			break;
		}
		/* Any other message says the peer is up. */
		if (sq->state == SPRAY_CONNECTED)
			spray_up(sq);
		if (m->op == SPRAY_OP_ANSWER)
			spray_send(sq, SPRAY_OP_CONFIRM);
		else if (m->op >= SPRAY_OP_REPAIR)
			spray_handle_repair(sq, m);
		break;
	case SPRAY_SINGLE:
		/* Tell an offering peer that we have no paths for it. */
		if (m->op == SPRAY_OP_OFFER)
			spray_send(sq, SPRAY_OP_ANSWER);
		break;
	case SPRAY_IDLE:
		/* Not at RTR: the peer retries, and we offer at RTR. */
		break;
	}
}

static bool spray_msg_valid(const struct spray_msg *m)
{
	unsigned int i;

	if (m->version != SPRAY_MSG_VERSION || m->op < SPRAY_OP_OFFER ||
	    m->op > SPRAY_OP_REPAIRED || !m->n || m->n > SPRAY_MAX_PATHS ||
	    m->path_qpn[0] != m->src_qpn)
		return false;
	/* A repair names one of the paths beyond path 0. */
	if (m->op >= SPRAY_OP_REPAIR && (!m->path || m->path >= m->n))
		return false;
	for (i = 0; i < m->n; i++)
		if (be32_to_cpu(m->path_qpn[i]) > 0xffffff ||
		    be32_to_cpu(m->path_qpn[i]) < 2)
			return false;
	return true;
}

/*
 * The source GID of a received MAD: its GRH, or for RoCEv2 over IPv4 the
 * IPv4 header in the GRH's last 20 bytes, as an IPv4-mapped GID.
 */
static int spray_src_gid(const struct ib_mad_recv_wc *wc, union ib_gid *sgid)
{
	const union rdma_network_hdr *hdr = (const void *)wc->recv_buf.grh;
	enum rdma_network_type type = RDMA_NETWORK_IB;
	union ib_gid dgid;

	if (!(wc->wc->wc_flags & IB_WC_GRH))
		return -EINVAL;
	if (wc->wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE)
		type = wc->wc->network_hdr_type;
	return ib_get_gids_from_rdma_hdr(hdr, type, sgid, &dgid);
}

static void spray_recv(struct ib_mad_agent *agent,
		       struct ib_mad_send_buf *send_buf,
		       struct ib_mad_recv_wc *wc)
{
	const struct ib_vendor_mad *mad = (void *)wc->recv_buf.mad;
	const struct spray_msg *m = (const void *)mad->data;
	const struct ib_global_route *grh;
	union ib_gid sgid;
	struct spray_qp *sq;

	if (mad->mad_hdr.method != IB_MGMT_METHOD_SEND ||
	    mad->mad_hdr.attr_id != cpu_to_be16(SPRAY_ATTR_PATHS) ||
	    mad->mad_hdr.class_version != SPRAY_CLASS_VERSION ||
	    memcmp(mad->oui, spray_oui, sizeof(spray_oui)) ||
	    !spray_msg_valid(m) || spray_src_gid(wc, &sgid)) {
		pr_debug("%s: malformed path exchange message dropped\n",
			 dev_name(&agent->device->dev));
		goto out;
	}
	sq = spray_get(agent->device, be32_to_cpu(m->dst_qpn));
	if (!sq)
		goto out;
	mutex_lock(&sq->lock);
	grh = rdma_ah_read_grh(&sq->av);
	stl_count(sq->sdev, STL_CNT_SPRAY_MSGS_RECEIVED, 1);
	/* Only from the address and QP that QP 0 is connected to. */
	if (sq->dead || !sq->have_av || be32_to_cpu(m->src_qpn) != sq->dqpn ||
	    memcmp(m->src_gid, grh->dgid.raw, sizeof(m->src_gid)) ||
	    memcmp(sgid.raw, grh->dgid.raw, sizeof(sgid.raw)))
		stl_count(sq->sdev, STL_CNT_SPRAY_MSGS_DROPPED, 1);
	else
		spray_handle(sq, m);
	mutex_unlock(&sq->lock);
	spray_put(sq);
out:
	ib_free_recv_mad(wc);
}

static void spray_retry(struct work_struct *work)
{
	struct spray_qp *sq = container_of(to_delayed_work(work),
					   struct spray_qp, work);

	mutex_lock(&sq->lock);
	if (sq->dead ||
	    (sq->state != SPRAY_OFFERED && sq->state != SPRAY_CONNECTED))
		goto out;
	if (sq->tries >= SPRAY_TRIES) {
		stl_count(sq->sdev, STL_CNT_SPRAY_TIMEOUTS, 1);
		spray_single(sq, "no answer from the peer");
		goto out;
	}
	sq->tries++;
	spray_send(sq, sq->state == SPRAY_OFFERED ? SPRAY_OP_OFFER :
		   SPRAY_OP_ANSWER);
	mod_delayed_work(system_wq, &sq->work, msecs_to_jiffies(SPRAY_RETRY_MS));
out:
	mutex_unlock(&sq->lock);
}

/**
 * spray_qp_kmem() - module memory of a QP's paths (its kmem charge)
 *
 * Return: bytes.
 */
size_t spray_qp_kmem(void)
{
	return sizeof(struct spray_qp);
}

/**
 * spray_qp_create() - give a new RC QP its path bookkeeping
 * @sqp: the virtual QP, its parent QP 0 made
 * @sdev: its device
 * @max_send_wr: QP 0's send queue depth (its data path's queue)
 *
 * Nothing is made on the parent yet: paths come at RTR.  A QP of a device
 * whose spray_paths is 1, or not RC, has none.
 *
 * Return: 0 or -ENOMEM.
 */
int spray_qp_create(struct stl_qp *sqp, struct stl_dev *sdev, u32 max_send_wr)
{
	struct spray_qp *sq;
	u8 want = READ_ONCE(sdev->spray_paths);

	if (sqp->ibqp.qp_type != IB_QPT_RC || want < 2)
		return 0;
	sq = kzalloc(sizeof(*sq), GFP_KERNEL);
	if (!sq)
		return -ENOMEM;
	sq->sqp = sqp;
	sq->sdev = sdev;
	sq->pdev = sdev->pdev;
	sq->qpn = sqp->pqp->qp_num;
	sq->want = want;
	sq->n = 1;
	sq->agent = spray_agent_of(sdev->pdev, sdev->pport);
	mutex_init(&sq->lock);
	INIT_DELAYED_WORK(&sq->work, spray_retry);
	INIT_DELAYED_WORK(&sq->probe_work, spray_probe);
	spin_lock_init(&sq->dlock);
	spin_lock_init(&sq->fixlock);
	INIT_WORK(&sq->cq_work, spray_cq_work);
	sq->max_send_wr = max_send_wr;
	init_completion(&sq->idle);
	refcount_set(&sq->ref, 1);
	spin_lock_bh(&spray_qps_lock);
	hash_add(spray_qps, &sq->node, spray_hash(sq->pdev, sq->qpn));
	spin_unlock_bh(&spray_qps_lock);
	sqp->spray = sq;
	return 0;
}

/**
 * spray_qp_destroy() - take a QP's paths down and free them
 * @sqp: the virtual QP (its parent QP 0 still exists)
 *
 * Context: process; waits for a message handler using it and for its
 * retry work.
 */
void spray_qp_destroy(struct stl_qp *sqp)
{
	struct spray_qp *sq = sqp->spray;

	if (!sq)
		return;
	spin_lock_bh(&spray_qps_lock);
	hash_del(&sq->node);
	spin_unlock_bh(&spray_qps_lock);
	mutex_lock(&sq->lock);
	sq->dead = true;
	mutex_unlock(&sq->lock);
	cancel_delayed_work_sync(&sq->work);
	cancel_delayed_work_sync(&sq->probe_work);
	spray_put(sq);
	wait_for_completion(&sq->idle);
	spray_drop_paths(sq, 1);
	spray_data_reset(sq);
	spray_reap(sq, true);
	/*
	 * Once RCU says so, pollers (spray_wc_fixup()) no longer see @sq and
	 * the CQ's handler queues no more work (a parent's handler runs in
	 * an RCU read-side section: softirq, or under its CQ lock); then the
	 * work is done, then the CQ goes (after a grace period on a parent
	 * that may still run a queued event of it).
	 */
	WRITE_ONCE(sqp->spray, NULL);
	WRITE_ONCE(sq->cq_off, true);
	synchronize_rcu();
	if (sq->cq) {
		cancel_work_sync(&sq->cq_work);
		if (stl_cq_release_parent(sq->sdev, sq->cq))
			ibdev_err(&sq->sdev->ibdev, "QP %u: the paths' CQ could not be destroyed: kept\n",
				  sq->qpn);
		else
			stl_quota_uncharge(sq->sdev, true, SPRAY_CQE(sq));
	}
	spray_data_free(sq);
	if (sq->have_av)
		rdma_destroy_ah_attr(&sq->av);
	sqp->spray = NULL;
	kfree(sq);
}

/**
 * spray_qp_modified() - follow QP 0 through its states
 * @sqp: the virtual QP, just modified (its modify_lock held)
 * @attr: the attributes as the application gave them
 * @pattr: the same for the parent (its address vector on the parent)
 * @mask: what changed
 *
 * Records what the paths copy from QP 0 (access flags, MTU, the address
 * vector and the peer's QP); at RTR makes the paths and offers them;
 * RESET or ERROR takes them down.
 */
void spray_qp_modified(struct stl_qp *sqp, const struct ib_qp_attr *attr,
		       const struct ib_qp_attr *pattr, int mask)
{
	struct spray_qp *sq = sqp->spray;
	int ret;

	if (!sq)
		return;
	mutex_lock(&sq->lock);
	if (mask & IB_QP_ACCESS_FLAGS)
		sq->access = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		sq->mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		sq->timeout = min_t(u8, attr->timeout, 31);
	if (mask & IB_QP_DEST_QPN)
		sq->dqpn = attr->dest_qp_num;
	if (mask & IB_QP_AV) {
		if (sq->have_av)
			rdma_destroy_ah_attr(&sq->av);
		rdma_copy_ah_attr(&sq->av, &pattr->ah_attr);
		sq->have_av = true;
	}
	if (!(mask & IB_QP_STATE))
		goto out;
	switch (attr->qp_state) {
	case IB_QPS_RESET:
	case IB_QPS_ERR:
		cancel_delayed_work(&sq->work);
		spray_drop_paths(sq, 1);
		/* A reset QP 0 completes nothing more. */
		if (attr->qp_state == IB_QPS_RESET) {
			spray_data_reset(sq);
			spin_lock_irq(&sq->fixlock);
			sq->fix_head = sq->fix_tail;
			spin_unlock_irq(&sq->fixlock);
		}
		sq->n = 1;
		sq->state = attr->qp_state == IB_QPS_RESET ? SPRAY_IDLE :
			    SPRAY_SINGLE;
		break;
	case IB_QPS_RTR:
		if (sq->state != SPRAY_IDLE || !sq->have_av || !sq->agent)
			break;
		ret = spray_make_paths(sq);
		if (ret) {
			stl_count(sq->sdev, STL_CNT_SPRAY_PATH_FAILURES, 1);
			spray_single(sq, "making the paths failed");
			break;
		}
		sq->state = SPRAY_OFFERED;
		spray_send(sq, SPRAY_OP_OFFER);
		spray_arm(sq);
		break;
	default:
		break;
	}
out:
	mutex_unlock(&sq->lock);
}

/**
 * spray_fill_res_qp_entry() - a QP's paths, for `rdma res show qp -dd`
 * @msg: the netlink message
 * @ibqp: the virtual QP
 *
 * Return: 0, or -EMSGSIZE if @msg is full.
 */
int spray_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct spray_qp *sq = to_stl_qp(ibqp)->spray;
	struct spray_path *pc;
	bool don;
	u32 chunk;
	struct nlattr *table;
	char name[24];
	unsigned int i;
	int ret = 0;

	table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (!sq) {
		if (rdma_nl_put_driver_string(msg, "spray", "off") ||
		    rdma_nl_put_driver_u32(msg, "spray_paths", 1))
			goto err;
		nla_nest_end(msg, table);
		return 0;
	}
	/* The scheduler's counters, copied under its lock. */
	pc = kmalloc_array(SPRAY_MAX_PATHS, sizeof(*pc), GFP_KERNEL);
	if (!pc) {
		nla_nest_cancel(msg, table);
		return -ENOMEM;
	}
	mutex_lock(&sq->lock);
	spin_lock_bh(&sq->dlock);
	don = sq->don;
	chunk = sq->sched.chunk;
	memcpy(pc, sq->sched.path, SPRAY_MAX_PATHS * sizeof(*pc));
	spin_unlock_bh(&sq->dlock);
	if (rdma_nl_put_driver_string(msg, "spray",
				      spray_state_names[sq->state]) ||
	    rdma_nl_put_driver_u32(msg, "spray_paths", sq->n) ||
	    rdma_nl_put_driver_string(msg, "spray_data", don ? "on" : "off") ||
	    (don && rdma_nl_put_driver_u32(msg, "spray_chunk", chunk)))
		ret = -EMSGSIZE;
	for (i = 1; !ret && i < sq->n; i++) {
		snprintf(name, sizeof(name), "path%u_qpn", i);
		if (rdma_nl_put_driver_u32(msg, name, sq->pq[i]->qp_num))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_peer_qpn", i);
		if (!ret && rdma_nl_put_driver_u32(msg, name, sq->peer[i]))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_sport", i);
		if (!ret && rdma_nl_put_driver_u32(msg, name, sq->sport[i]))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_state", i);
		if (!ret && rdma_nl_put_driver_string(msg, name,
				spray_probe_names[atomic_read(&sq->probe_last[i])]))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_checks", i);
		if (!ret && rdma_nl_put_driver_u32(msg, name,
						   atomic_read(&sq->probe_ok[i])))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_recoveries", i);
		if (!ret && rdma_nl_put_driver_u32(msg, name,
						   atomic_read(&sq->recoveries[i])))
			ret = -EMSGSIZE;
		if (!don)
			continue;
		snprintf(name, sizeof(name), "path%u_bytes", i);
		if (!ret && rdma_nl_put_driver_u64(msg, name, pc[i].bytes))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_chunks", i);
		if (!ret && rdma_nl_put_driver_u64(msg, name, pc[i].chunks))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_reposts", i);
		if (!ret && rdma_nl_put_driver_u64(msg, name, pc[i].reposts))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_errors", i);
		if (!ret && rdma_nl_put_driver_u64(msg, name, pc[i].errors))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_credit", i);
		if (!ret && rdma_nl_put_driver_u64(msg, name, pc[i].credit))
			ret = -EMSGSIZE;
		snprintf(name, sizeof(name), "path%u_data", i);
		if (!ret && rdma_nl_put_driver_string(msg, name,
				pc[i].state == SPRAY_PATH_UP ? "up" : "down"))
			ret = -EMSGSIZE;
	}
	mutex_unlock(&sq->lock);
	kfree(pc);
	if (ret)
		goto err;
	nla_nest_end(msg, table);
	return 0;
err:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

/**
 * spray_parent_add() - register the path exchange's MAD agent on a parent
 * @pdev: a new RDMA device (from the ib_client add callback)
 *
 * One agent per RoCE port.  A port where registration fails only loses
 * spraying (its QPs stay on one path); that is logged.
 */
void spray_parent_add(struct ib_device *pdev)
{
	struct ib_mad_reg_req req = {
		.mgmt_class = SPRAY_MGMT_CLASS,
		.mgmt_class_version = SPRAY_CLASS_VERSION,
	};
	struct ib_mad_agent *agent;
	struct spray_agent *a;
	u32 port;

	memcpy(req.oui, spray_oui, sizeof(spray_oui));
	set_bit(IB_MGMT_METHOD_SEND, req.method_mask);
	rdma_for_each_port(pdev, port) {
		if (!rdma_protocol_roce(pdev, port))
			continue;
		a = kzalloc(sizeof(*a), GFP_KERNEL);
		if (!a)
			return;
		agent = ib_register_mad_agent(pdev, port, IB_QPT_GSI, &req, 0,
					      spray_send_done, spray_recv,
					      NULL, 0);
		if (IS_ERR(agent)) {
			dev_info(&pdev->dev,
				 "port %u: no path exchange (MAD agent: %ld), its Stellar QPs use one path\n",
				 port, PTR_ERR(agent));
			kfree(a);
			continue;
		}
		a->pdev = pdev;
		a->port = port;
		a->agent = agent;
		mutex_lock(&spray_agents_lock);
		list_add_tail(&a->entry, &spray_agents);
		mutex_unlock(&spray_agents_lock);
	}
}

/**
 * spray_parent_remove() - unregister a parent's MAD agents
 * @pdev: the parent, whose Stellar devices (and so QPs) are all gone
 */
void spray_parent_remove(struct ib_device *pdev)
{
	struct spray_agent *a, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&spray_agents_lock);
	list_for_each_entry_safe(a, tmp, &spray_agents, entry)
		if (a->pdev == pdev)
			list_move(&a->entry, &gone);
	mutex_unlock(&spray_agents_lock);
	list_for_each_entry_safe(a, tmp, &gone, entry) {
		ib_unregister_mad_agent(a->agent);
		kfree(a);
	}
}

/*
 * debugfs spray_fail_path: "QPN PATH" takes path PATH of the up QP whose
 * QP 0 is parent QPN as failed, as a check that got no answer would, and
 * repairs it.  A fault to inject on one host, where rxe loops packets back
 * and no route can fail.
 */
static ssize_t spray_fail_path_write(struct file *file,
				     const char __user *ubuf, size_t len,
				     loff_t *ppos)
{
	struct spray_qp *sq, *found = NULL;
	unsigned int qpn, path, bkt;
	char buf[32];
	ssize_t ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (sscanf(buf, "%u %u", &qpn, &path) != 2)
		return -EINVAL;
	spin_lock_bh(&spray_qps_lock);
	hash_for_each(spray_qps, bkt, sq, node) {
		if (sq->qpn == qpn && refcount_inc_not_zero(&sq->ref)) {
			found = sq;
			break;
		}
	}
	spin_unlock_bh(&spray_qps_lock);
	if (!found)
		return -ENOENT;
	mutex_lock(&found->lock);
	if (found->dead || found->state != SPRAY_UP) {
		ret = -EAGAIN;
	} else if (!path || path >= found->n) {
		ret = -ERANGE;
	} else {
		ibdev_warn(&found->sdev->ibdev, "QP %u path %u: marked failed (debugfs)\n",
			   qpn, path);
		spray_repair(found, path);
		ret = len;
	}
	mutex_unlock(&found->lock);
	spray_put(found);
	return ret;
}

/*
 * debugfs spray_qps: one line per QP with paths, its data path's counters
 * per path, as in `rdma -dd res show qp` (keys and values), read without
 * netlink nor the QP's mutex: cheap enough to sample a failover with.
 */
static int spray_qps_show(struct seq_file *f, void *unused)
{
	struct spray_path *pc;
	struct spray_qp *sq;
	unsigned int bkt, i, n;
	u64 q0, cut;
	u32 chunk, share;
	bool don;

	pc = kmalloc_array(SPRAY_MAX_PATHS, sizeof(*pc), GFP_KERNEL);
	if (!pc)
		return -ENOMEM;
	spin_lock_bh(&spray_qps_lock);
	hash_for_each(spray_qps, bkt, sq, node) {
		spin_lock(&sq->dlock);
		don = sq->don;
		n = don ? sq->sched.n_paths : 0;
		memcpy(pc, sq->sched.path, SPRAY_MAX_PATHS * sizeof(*pc));
		chunk = sq->sched.chunk;
		share = sq->sched.share;
		q0 = sq->q0_bytes;
		cut = sq->cut_bytes;
		spin_unlock(&sq->dlock);
		seq_printf(f, "%s lqpn %u spray %s spray_paths %u spray_data %s chunk %u path0_share %u path0_bytes %llu cut_bytes %llu",
			   dev_name(&sq->sdev->ibdev.dev), sq->qpn,
			   spray_state_names[READ_ONCE(sq->state)],
			   READ_ONCE(sq->n), don ? "on" : "off",
			   don ? chunk : 0, don ? share : 0, q0, cut);
		for (i = 1; i < n; i++) {
			seq_printf(f, " path%u_bytes %llu path%u_chunks %llu path%u_reposts %llu path%u_data %s path%u_sport %u",
				   i, pc[i].bytes, i, pc[i].chunks, i,
				   pc[i].reposts, i,
				   pc[i].state == SPRAY_PATH_UP ? "up" : "down",
				   i, READ_ONCE(sq->sport[i]));
			/* What the scheduler measured and allows (rate KB/s). */
			seq_printf(f, " path%u_rate_kbs %llu path%u_credit %llu path%u_out %llu path%u_base_us %llu path%u_lat_us %llu path%u_errors %llu path%u_stalls %llu",
				   i, pc[i].ns_per_mib ?
				   div64_u64(1000000ULL << 20, pc[i].ns_per_mib) : 0,
				   i, pc[i].credit, i, pc[i].out_bytes,
				   i, div_u64(pc[i].base_ns, NSEC_PER_USEC),
				   i, div_u64(pc[i].lat_ns, NSEC_PER_USEC),
				   i, pc[i].errors, i, pc[i].stalls);
		}
		seq_putc(f, '\n');
	}
	spin_unlock_bh(&spray_qps_lock);
	kfree(pc);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(spray_qps);

static const struct file_operations spray_fail_path_fops = {
	.owner = THIS_MODULE,
	.write = spray_fail_path_write,
	.llseek = noop_llseek,
};

/**
 * spray_debugfs_init() - the spray files in the module's debugfs folder
 * @dir: that folder
 */
void spray_debugfs_init(struct dentry *dir)
{
	debugfs_create_file("spray_fail_path", 0200, dir, NULL,
			    &spray_fail_path_fops);
	debugfs_create_atomic_t("spray_lose_msgs", 0600, dir, &spray_lose_msgs);
	debugfs_create_file("spray_qps", 0400, dir, NULL, &spray_qps_fops);
}
