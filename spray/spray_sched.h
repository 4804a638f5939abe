/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stellar spray: the scheduling core of one virtual RC QP carried over up to
 * SPRAY_MAX_PATHS parent QPs ("paths").
 *
 * RDMA WRITE and READ work requests are cut into chunks (spray_chunk_len());
 * spray_pick() puts each chunk on the path that would finish it soonest.
 * SEND, WRITE_WITH_IMM and atomics are "ordered": one chunk, posted only
 * once spray_order_may_post_ordered() says every earlier chunk is done.
 * spray_order_pop() hands WRs back in post order with their first error.
 * A path that errors or stalls is failed (spray_fail_path()): its in-flight
 * chunks come back to be posted on the others, and their late completions
 * from the failed path are recognised as stale by their wr_id.
 * spray_tune() adapts the chunk size and each path's credit to measured
 * completion times.
 *
 * Kernel-free: builds into stellar.ko and into tests/unit/.  No locking, no
 * allocation, no sleeping, no floating point: the caller owns every array
 * and serialises all calls on one virtual QP.  Times are nanoseconds from
 * any monotonic clock.
 */
#ifndef SPRAY_SCHED_H
#define SPRAY_SCHED_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#endif

#define SPRAY_MAX_PATHS		16
/* Chunk sizes: powers of two from 4 KiB to 1 GiB. */
#define SPRAY_CHUNK_FLOOR	4096U
#define SPRAY_CHUNK_CEIL	(1U << 30)
/* Largest credit a path may be given: 4 GiB. */
#define SPRAY_CREDIT_CEIL	(1ULL << 32)
/* Largest target latency and stall timeout: about 18 minutes. */
#define SPRAY_TIME_CEIL		(1ULL << 40)
/*
 * The round trip a credit covers is at most this many target latencies:
 * delay beyond it is queueing (a path that drops and retransmits reads as
 * seconds of it), and credit for it would only queue more.
 */
#define SPRAY_RTT_TARGETS	4
/* Completions a path needs since the last chunk size change to vote. */
#define SPRAY_TUNE_SAMPLES	8
/* Adjustments with votes after a shrink during which the size may not grow. */
#define SPRAY_TUNE_HOLD		4
/* Weight of a new sample in every moving average: 1/2^SPRAY_EWMA_SHIFT. */
#define SPRAY_EWMA_SHIFT	3
/*
 * Path 0's share of a cut work request (its tail), in 1/SPRAY_SHARE_ONE:
 * an even share at first, moved by SPRAY_SHARE_STEP per adjustment, at
 * most once per SPRAY_SHARE_TUNES tune periods (80 ms).  What the share
 * does shows in its signals only as the requests in flight complete, up
 * to a second later; moved every 10 ms it swung by a fifth of each
 * request around where it belongs (QP 0 between 1 and 7 MB/s on a 5 MB/s
 * class in the failover bench).
 */
#define SPRAY_SHARE_ONE		1024U
#define SPRAY_SHARE_STEP	2U
#define SPRAY_SHARE_TUNES	8U
/* Most chunk slots a table may have (slot index and wr_id stay 31 bits). */
#define SPRAY_CHUNKS_CEIL	(1U << 24)
#define SPRAY_CHUNK_NONE	0xffffffffU

/**
 * enum spray_path_state - whether new chunks may go on a path
 * @SPRAY_PATH_DOWN: no new chunks; chunks already posted may still complete
 * @SPRAY_PATH_UP: spray_pick() may choose it
 */
enum spray_path_state {
	SPRAY_PATH_DOWN,
	SPRAY_PATH_UP
};

/**
 * struct spray_path - one parent QP as the scheduler sees it
 * @state: up or down
 * @stalled: spray_stalled() has counted the current stall
 * @rate_busy: @ns_per_mib comes from back-to-back completions
 * @out_bytes: bytes posted and not completed
 * @out_chunks: chunks posted and not completed
 * @credit: bytes the path may have outstanding (one chunk always fits an
 *	idle path)
 * @ns_per_mib: moving average of the service time of 1 MiB (the inverse of
 *	the path's rate), 0 until measured
 * @lat_ns: moving average of a chunk's completion time (post to completion)
 * @excess_ns: moving average of what a completion time exceeds the service
 *	of the bytes ahead of it and its own: latency, per-chunk overhead and
 *	queueing elsewhere
 * @excess_floor_ns: least @excess_ns sample since the last chunk size
 *	change: the path's fixed cost per chunk
 * @base_ns: moving average of the excess since the path came up: its round
 *	trip beyond its own queue, which its credit must cover on top of the
 *	target latency (valid once @based)
 * @based: @base_ns holds a sample
 * @win_ns: start of the current window of back-to-back completions, 0
 *	for none
 * @win_bytes: bytes completed back to back since @win_ns
 * @tune_samples: samples of @excess_ns since the last chunk size change
 * @bytes: bytes completed successfully
 * @chunks: chunks completed successfully
 * @reposts: chunks taken back from the path to be posted elsewhere
 * @errors: chunks that completed with an error
 * @stalls: stalls spray_stalled() found
 * @last_post_ns: when a chunk was last posted
 * @last_done_ns: when a chunk last completed
 * @busy_since_ns: when the path last went from idle to busy
 */
struct spray_path {
	enum spray_path_state state;
	bool stalled;
	bool rate_busy;
	u64 out_bytes;
	u32 out_chunks;
	u64 credit;
	u64 ns_per_mib;
	u64 lat_ns;
	u64 excess_ns;
	u64 excess_floor_ns;
	u64 base_ns;
	bool based;
	u64 win_ns;
	u64 win_bytes;
	u32 tune_samples;
	u64 bytes;
	u64 chunks;
	u64 reposts;
	u64 errors;
	u64 stalls;
	u64 last_post_ns;
	u64 last_done_ns;
	u64 busy_since_ns;
};

/**
 * struct spray_params - bounds and starting values of a scheduler
 * @chunk_init: first chunk size (a power of two)
 * @chunk_min: smallest chunk size spray_tune() may choose (a power of two)
 * @chunk_max: largest one (a power of two)
 * @credit_init: credit of a path until it is measured, and after it comes
 *	back up
 * @credit_min: least credit spray_tune() gives (two chunks or more keeps a
 *	path's rate measurable)
 * @credit_max: most credit spray_tune() gives
 * @target_ns: the queueing a path's credit allows beyond its round trip:
 *	credit becomes rate times (round trip + @target_ns)
 * @stall_ns: a busy path without a completion for longer has stalled
 * @tune_ns: least time between two adjustments by spray_tune(), 0 for none
 * @rate_window_ns: least time back-to-back completions are summed over
 *	for a rate sample (0: every completion is one)
 */
struct spray_params {
	u32 chunk_init;
	u32 chunk_min;
	u32 chunk_max;
	u64 credit_init;
	u64 credit_min;
	u64 credit_max;
	u64 target_ns;
	u64 stall_ns;
	u64 tune_ns;
	u64 rate_window_ns;
};

/**
 * struct spray_sched - the paths of one virtual QP and their tuning
 * @path: the paths, @n_paths of them in use
 * @n_paths: paths in use
 * @chunk: current chunk size
 * @chunk_min: lower bound of @chunk
 * @chunk_max: upper bound of @chunk
 * @credit_init: credit of an unmeasured path
 * @credit_min: lower bound of a tuned credit
 * @credit_max: upper bound of a tuned credit
 * @target_ns: the latency credits are sized for
 * @stall_ns: stall timeout
 * @tune_ns: least time between two adjustments
 * @rate_window_ns: least window of a rate sample
 * @last_tune_ns: when spray_tune() last adjusted
 * @tuned: spray_tune() has adjusted at least once
 * @hold: adjustments left before the chunk size may grow again
 * @grows: chunk size doublings so far
 * @shrinks: chunk size halvings so far
 * @share: path 0's share of a cut work request's bytes (its tail, which
 *	it carries itself, outside spray_pick()), in 1/SPRAY_SHARE_ONE
 * @share_min: lower bound of @share (a quarter of an even share)
 * @share_max: upper bound of @share (three even shares, under 7/8)
 * @last_share_ns: when spray_share_tune() last adjusted @share
 * @share_tuned: spray_share_tune() has adjusted at least once
 */
struct spray_sched {
	struct spray_path path[SPRAY_MAX_PATHS];
	u32 n_paths;
	u32 chunk;
	u32 chunk_min;
	u32 chunk_max;
	u64 credit_init;
	u64 credit_min;
	u64 credit_max;
	u64 target_ns;
	u64 stall_ns;
	u64 tune_ns;
	u64 rate_window_ns;
	u64 last_tune_ns;
	bool tuned;
	u32 hold;
	u32 grows;
	u32 shrinks;
	u32 share;
	u32 share_min;
	u32 share_max;
	u64 last_share_ns;
	bool share_tuned;
};

/**
 * enum spray_chunk_state - where a chunk slot is in its life
 * @SPRAY_CHUNK_FREE: on the free list
 * @SPRAY_CHUNK_READY: allocated, to be posted (or reposted)
 * @SPRAY_CHUNK_POSTED: in flight on @path
 * @SPRAY_CHUNK_DONE: completed; the caller records it and frees the slot
 */
enum spray_chunk_state {
	SPRAY_CHUNK_FREE,
	SPRAY_CHUNK_READY,
	SPRAY_CHUNK_POSTED,
	SPRAY_CHUNK_DONE
};

/**
 * struct spray_chunk - one piece of a work request on one path
 * @offset: first byte within the work request
 * @posted_ns: when it was last posted
 * @ahead: bytes outstanding on its path when it was posted
 * @len: bytes
 * @seq: its work request's sequence number (struct spray_order)
 * @gen: bumped at every post and every failover: a completion that names an
 *	older generation is stale
 * @next: next free slot while on the free list
 * @posts: how many times it was posted (more than one: reposted)
 * @path: the path it was last posted on
 * @state: an enum spray_chunk_state
 */
struct spray_chunk {
	u64 offset;
	u64 posted_ns;
	u64 ahead;
	u32 len;
	u32 seq;
	u32 gen;
	u32 next;
	u16 posts;
	u8 path;
	u8 state;
};

/**
 * struct spray_chunks - a table of chunk slots, the caller's array
 * @c: the slots
 * @size: slots in @c
 * @free: first free slot, SPRAY_CHUNK_NONE when none
 * @used: slots not free
 */
struct spray_chunks {
	struct spray_chunk *c;
	u32 size;
	u32 free;
	u32 used;
};

/**
 * struct spray_wr - one work request of the virtual QP, in post order
 * @wr_id: the application's wr_id
 * @pending: chunks not completed yet
 * @status: first nonzero chunk status, 0 while all succeeded
 * @ordered: SEND, WRITE_WITH_IMM or atomic: posted behind a fence
 */
struct spray_wr {
	u64 wr_id;
	u32 pending;
	int status;
	bool ordered;
};

/**
 * struct spray_order - work requests between post and completion
 * @wr: ring of @mask + 1 slots, the caller's array
 * @mask: ring size minus one (the size is a power of two)
 * @head: sequence number of the oldest work request not popped
 * @done: sequence number of the oldest work request with chunks pending
 *	(@tail when none)
 * @tail: sequence number the next work request gets
 *
 * Sequence numbers are u32 and wrap; slot = seq & @mask.
 */
struct spray_order {
	struct spray_wr *wr;
	u32 mask;
	u32 head;
	u32 done;
	u32 tail;
};

/**
 * enum spray_tune_result - what spray_tune() did to the chunk size
 * @SPRAY_TUNE_KEPT: unchanged
 * @SPRAY_TUNE_GREW: doubled
 * @SPRAY_TUNE_SHRANK: halved
 */
enum spray_tune_result {
	SPRAY_TUNE_KEPT,
	SPRAY_TUNE_GREW,
	SPRAY_TUNE_SHRANK
};

int spray_sched_init(struct spray_sched *s, u32 n_paths,
		     const struct spray_params *p);
int spray_pick(const struct spray_sched *s, u32 len);
int spray_ordered_path(const struct spray_sched *s);
u32 spray_chunk_len(u32 chunk, u64 remaining);
u32 spray_chunk_count(u32 chunk, u64 len);
int spray_posted(struct spray_sched *s, struct spray_chunk *c, u32 path,
		 u64 now_ns);
int spray_completed(struct spray_sched *s, const struct spray_chunk *c,
		    u64 now_ns, bool ok);
int spray_path_down(struct spray_sched *s, u32 path);
int spray_path_up(struct spray_sched *s, u32 path);
u32 spray_stalled(struct spray_sched *s, u64 now_ns, u32 *mask_out);
enum spray_tune_result spray_tune(struct spray_sched *s, u64 now_ns);
u32 spray_share_tune(struct spray_sched *s, u64 now_ns, bool paths_full,
		     bool path0_full);
u64 spray_tail_len(const struct spray_sched *s, u64 len);

int spray_chunks_init(struct spray_chunks *t, struct spray_chunk *slots,
		      u32 size);
int spray_chunk_alloc(struct spray_chunks *t, u32 seq, u64 offset, u32 len);
void spray_chunk_free(struct spray_chunks *t, u32 idx);
int spray_chunk_post(struct spray_sched *s, struct spray_chunks *t, u32 idx,
		     u32 path, u64 now_ns, u64 *wr_id);
int spray_chunk_complete(struct spray_sched *s, struct spray_chunks *t,
			 u64 wr_id, u64 now_ns, bool ok);
u32 spray_fail_path(struct spray_sched *s, struct spray_chunks *t, u32 path,
		    u32 *out, u32 max);

int spray_order_init(struct spray_order *o, struct spray_wr *slots, u32 size,
		     u32 first_seq);
int spray_order_add(struct spray_order *o, u64 wr_id, u32 n_chunks,
		    bool ordered, u32 *seq);
int spray_order_chunk_done(struct spray_order *o, u32 seq, int status);
int spray_order_set_chunks(struct spray_order *o, u32 seq, u32 n_chunks);
int spray_order_pop(struct spray_order *o, u64 *wr_id, int *status);
bool spray_order_may_post_ordered(const struct spray_order *o, u32 seq);
u32 spray_order_count(const struct spray_order *o);

#endif /* SPRAY_SCHED_H */
