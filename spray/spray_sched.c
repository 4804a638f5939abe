// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stellar spray: path choice, chunking, failover, in-order completion and
 * online tuning of chunk size and credit for one virtual QP.
 *
 * Kernel-free: builds into stellar.ko and into tests/unit/.
 */
#include "spray/spray_sched.h"

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/math64.h>
#else
#include <errno.h>

static u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

static u64 div_u64_rem(u64 dividend, u32 divisor, u32 *remainder)
{
	*remainder = dividend % divisor;
	return dividend / divisor;
}
#endif

/* Longest time a sample may report: about 2.4 hours (keeps << 20 in u64). */
#define SPRAY_SAMPLE_CEIL	(1ULL << 43)
/* Slowest service a path may report: 2^30 ns per MiB, about 1 MiB/s. */
#define SPRAY_NS_PER_MIB_CEIL	(1ULL << 30)
#define SPRAY_GEN_MASK		0x7fffffffU

static bool spray_pow2(u64 v)
{
	return v && !(v & (v - 1));
}

static u64 spray_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

static u64 spray_ewma(u64 avg, u64 sample)
{
	return (avg * ((1U << SPRAY_EWMA_SHIFT) - 1) + sample) >>
	       SPRAY_EWMA_SHIFT;
}

/* A path's measurements, forgotten when it comes (back) up. */
static void spray_path_forget(struct spray_sched *s, struct spray_path *p)
{
	p->rate_busy = false;
	p->ns_per_mib = 0;
	p->lat_ns = 0;
	p->excess_ns = 0;
	p->excess_floor_ns = 0;
	p->base_ns = 0;
	p->based = false;
	p->win_ns = 0;
	p->win_bytes = 0;
	p->tune_samples = 0;
	p->credit = s->credit_init;
}

/**
 * spray_sched_init() - start a scheduler with every path up
 * @s: the scheduler
 * @n_paths: paths, 1 to SPRAY_MAX_PATHS
 * @p: bounds and starting values
 *
 * Chunk sizes must be powers of two from SPRAY_CHUNK_FLOOR to
 * SPRAY_CHUNK_CEIL with @p->chunk_min <= @p->chunk_init <= @p->chunk_max;
 * credits nonzero with @p->credit_min <= @p->credit_init <= @p->credit_max
 * <= SPRAY_CREDIT_CEIL; @p->target_ns and @p->stall_ns nonzero, they and
 * @p->tune_ns at most SPRAY_TIME_CEIL.
 *
 * Return: 0, or -EINVAL for any other value (@s is then left untouched).
 */
int spray_sched_init(struct spray_sched *s, u32 n_paths,
		     const struct spray_params *p)
{
	u32 i;

	if (!n_paths || n_paths > SPRAY_MAX_PATHS)
		return -EINVAL;
	if (!spray_pow2(p->chunk_min) || !spray_pow2(p->chunk_init) ||
	    !spray_pow2(p->chunk_max) || p->chunk_min < SPRAY_CHUNK_FLOOR ||
	    p->chunk_max > SPRAY_CHUNK_CEIL || p->chunk_min > p->chunk_init ||
	    p->chunk_init > p->chunk_max)
		return -EINVAL;
	if (!p->credit_min || p->credit_min > p->credit_init ||
	    p->credit_init > p->credit_max ||
	    p->credit_max > SPRAY_CREDIT_CEIL)
		return -EINVAL;
	if (!p->target_ns || p->target_ns > SPRAY_TIME_CEIL ||
	    !p->stall_ns || p->stall_ns > SPRAY_TIME_CEIL ||
	    p->tune_ns > SPRAY_TIME_CEIL ||
	    p->rate_window_ns > SPRAY_TIME_CEIL)
		return -EINVAL;

	s->n_paths = n_paths;
	s->chunk = p->chunk_init;
	s->chunk_min = p->chunk_min;
	s->chunk_max = p->chunk_max;
	s->credit_init = p->credit_init;
	s->credit_min = p->credit_min;
	s->credit_max = p->credit_max;
	s->target_ns = p->target_ns;
	s->stall_ns = p->stall_ns;
	s->tune_ns = p->tune_ns;
	s->rate_window_ns = p->rate_window_ns;
	s->last_tune_ns = 0;
	s->tuned = false;
	s->hold = 0;
	s->grows = 0;
	s->shrinks = 0;
	s->share = SPRAY_SHARE_ONE / n_paths;
	s->share_min = s->share / 4 ?: 1;
	s->share_max = spray_min(3 * s->share, SPRAY_SHARE_ONE * 7 / 8);
	if (s->share_max < s->share)
		s->share_max = s->share;
	s->last_share_ns = 0;
	s->share_tuned = false;
	for (i = 0; i < SPRAY_MAX_PATHS; i++) {
		s->path[i] = (struct spray_path){
			.state = i < n_paths ? SPRAY_PATH_UP : SPRAY_PATH_DOWN,
		};
		spray_path_forget(s, &s->path[i]);
	}
	return 0;
}

/**
 * spray_pick() - the path a chunk should go on
 * @s: the scheduler
 * @len: the chunk's bytes
 *
 * Among the up paths with credit left (outstanding bytes plus @len within
 * the path's credit; a path with nothing outstanding takes any one chunk),
 * the one that would finish the chunk soonest: least (outstanding bytes +
 * @len) times the path's measured ns per MiB.  A path not measured yet
 * counts as fast as the fastest measured one (as all equal when none is).
 * Ties go to the lowest index, so equal paths take turns.
 *
 * Return: the path's index; -EAGAIN when every up path is out of credit
 * (wait for a completion); -ENOLINK when no path is up.
 */
int spray_pick(const struct spray_sched *s, u32 len)
{
	const struct spray_path *p;
	u64 fast = 0, cost, best_cost = 0;
	bool any_up = false;
	int best = -1;
	u32 i;

	for (i = 0; i < s->n_paths; i++) {
		p = &s->path[i];
		if (p->state == SPRAY_PATH_UP && p->ns_per_mib &&
		    (!fast || p->ns_per_mib < fast))
			fast = p->ns_per_mib;
	}
	if (!fast)
		fast = 1;
	for (i = 0; i < s->n_paths; i++) {
		p = &s->path[i];
		if (p->state != SPRAY_PATH_UP)
			continue;
		any_up = true;
		if (p->out_chunks && p->out_bytes + len > p->credit)
			continue;
		cost = (p->out_bytes + len) * (p->ns_per_mib ?: fast);
		if (best < 0 || cost < best_cost) {
			best = i;
			best_cost = cost;
		}
	}
	if (best >= 0)
		return best;
	return any_up ? -EAGAIN : -ENOLINK;
}

/**
 * spray_ordered_path() - the path for SEND, WRITE_WITH_IMM and atomics
 * @s: the scheduler
 *
 * Ordered work requests go on path 0 while it is up, else on the lowest
 * path that is.
 *
 * Return: the path's index, or -ENOLINK when no path is up.
 */
int spray_ordered_path(const struct spray_sched *s)
{
	u32 i;

	for (i = 0; i < s->n_paths; i++)
		if (s->path[i].state == SPRAY_PATH_UP)
			return i;
	return -ENOLINK;
}

static u32 spray_chunk_clamp(u32 chunk)
{
	if (chunk < SPRAY_CHUNK_FLOOR)
		return SPRAY_CHUNK_FLOOR;
	if (chunk > SPRAY_CHUNK_CEIL)
		return SPRAY_CHUNK_CEIL;
	return chunk;
}

/**
 * spray_chunk_len() - bytes the next chunk of a work request takes
 * @chunk: the chunk size the work request is cut with (struct
 *	spray_sched.chunk when it was added; clamped to SPRAY_CHUNK_FLOOR ..
 *	SPRAY_CHUNK_CEIL)
 * @remaining: bytes of the work request not cut yet
 *
 * @chunk bytes, or all of @remaining when it is at most @chunk or when
 * what would be left is under a quarter of @chunk (no tiny tail: the last
 * chunk is then up to 1.25 * @chunk).
 *
 * Return: the chunk's bytes (0 only when @remaining is 0).
 */
u32 spray_chunk_len(u32 chunk, u64 remaining)
{
	chunk = spray_chunk_clamp(chunk);
	if (remaining <= chunk || remaining - chunk < chunk / 4)
		return remaining;
	return chunk;
}

/**
 * spray_chunk_count() - chunks spray_chunk_len() cuts a work request into
 * @chunk: the chunk size
 * @len: the work request's bytes
 *
 * Return: the number of chunks (saturated at U32_MAX); 1 for an empty work
 * request (one empty chunk carries it).
 */
u32 spray_chunk_count(u32 chunk, u64 len)
{
	u32 rem;
	u64 n;

	chunk = spray_chunk_clamp(chunk);
	if (len <= chunk)
		return 1;
	n = div_u64_rem(len, chunk, &rem);
	if (rem >= chunk / 4)
		n++;
	return n > 0xffffffffULL ? 0xffffffffU : (u32)n;
}

/**
 * spray_posted() - account a chunk posted on a path
 * @s: the scheduler
 * @c: the chunk; @c->len must be set, @c->path, @c->posted_ns and
 *	@c->ahead are set here for spray_completed()
 * @path: the path it was posted on
 * @now_ns: now
 *
 * Return: 0; -EINVAL for a path out of range; -ENOLINK for a path down.
 */
int spray_posted(struct spray_sched *s, struct spray_chunk *c, u32 path,
		 u64 now_ns)
{
	struct spray_path *p;

	if (path >= s->n_paths)
		return -EINVAL;
	p = &s->path[path];
	if (p->state != SPRAY_PATH_UP)
		return -ENOLINK;
	c->path = path;
	c->posted_ns = now_ns;
	c->ahead = p->out_bytes;
	if (!p->out_chunks)
		p->busy_since_ns = now_ns;
	p->out_bytes += c->len;
	p->out_chunks++;
	p->last_post_ns = now_ns;
	return 0;
}

/* ns per MiB of @ns spent on @len bytes, within [1, 2^30]. */
static u64 spray_per_mib(u64 ns, u32 len)
{
	u64 v = div64_u64(spray_min(ns, SPRAY_SAMPLE_CEIL) << 20, len);

	if (!v)
		return 1;
	return spray_min(v, SPRAY_NS_PER_MIB_CEIL);
}

/*
 * Learn from a successful completion.  On a parent QP chunks complete in
 * post order, so a chunk posted behind others (@c->ahead) started its
 * service when the one before it completed: the path was busy from that
 * completion to this one.  Such back-to-back completions are summed over
 * a window of at least @s->rate_window_ns (a parent may complete a burst
 * at once, and one gap says nothing then): bytes over the window's time
 * is a sample of the rate.  A chunk posted to an idle path also waited out
 * the path's latency and ends the window; such samples set the rate only
 * until a window is measured.  The excess is what the completion time
 * has beyond serving the bytes ahead and its own at the measured rate.
 */
static void spray_sample(const struct spray_sched *s, struct spray_path *p,
			 const struct spray_chunk *c, u64 lat, u64 now_ns)
{
	bool busy = c->ahead && p->last_done_ns >= c->posted_ns;
	u64 v, own, excess;

	if (!busy) {
		p->win_ns = 0;
		if (c->len && !p->rate_busy) {
			v = spray_per_mib(lat, c->len);
			p->ns_per_mib = p->ns_per_mib ?
					spray_ewma(p->ns_per_mib, v) : v;
		}
	} else if (c->len) {
		if (!p->win_ns) {
			p->win_ns = p->last_done_ns;
			p->win_bytes = 0;
		}
		p->win_bytes += c->len;
		if (now_ns > p->win_ns &&
		    now_ns - p->win_ns >= s->rate_window_ns) {
			v = spray_per_mib(now_ns - p->win_ns,
					  spray_min(p->win_bytes, 1U << 31));
			p->ns_per_mib = p->rate_busy ?
					spray_ewma(p->ns_per_mib, v) : v;
			p->rate_busy = true;
			p->win_ns = now_ns;
			p->win_bytes = 0;
		}
	}
	p->lat_ns = p->lat_ns ? spray_ewma(p->lat_ns, lat) : lat;
	if (!p->rate_busy)
		return;
	own = ((c->ahead + c->len) * p->ns_per_mib) >> 20;
	excess = lat > own ? lat - own : 0;
	excess = spray_min(excess, SPRAY_TIME_CEIL);
	/* An average, not the least: one early completion is not a trip. */
	p->base_ns = p->based ? spray_ewma(p->base_ns, excess) : excess;
	p->based = true;
	if (!p->tune_samples) {
		p->excess_ns = excess;
		p->excess_floor_ns = excess;
	} else {
		p->excess_ns = spray_ewma(p->excess_ns, excess);
		p->excess_floor_ns = spray_min(p->excess_floor_ns, excess);
	}
	if (p->tune_samples < 0xffffffffU)
		p->tune_samples++;
}

/**
 * spray_completed() - account a chunk's completion on its path
 * @s: the scheduler
 * @c: the chunk as spray_posted() left it
 * @now_ns: now
 * @ok: it succeeded
 *
 * Its bytes leave the path's outstanding counters.  A success counts its
 * bytes and updates the path's measurements; a failure counts an error.
 * Either is progress for stall detection.
 *
 * Return: 0, or -EINVAL for a path out of range.
 */
int spray_completed(struct spray_sched *s, const struct spray_chunk *c,
		    u64 now_ns, bool ok)
{
	struct spray_path *p;
	u64 lat;

	if (c->path >= s->n_paths)
		return -EINVAL;
	p = &s->path[c->path];
	lat = now_ns > c->posted_ns ? now_ns - c->posted_ns : 0;
	lat = spray_min(lat, SPRAY_SAMPLE_CEIL);
	p->out_bytes -= spray_min(p->out_bytes, c->len);
	if (p->out_chunks)
		p->out_chunks--;
	if (ok) {
		p->bytes += c->len;
		p->chunks++;
		spray_sample(s, p, c, lat, now_ns);
	} else {
		p->errors++;
	}
	p->last_done_ns = now_ns;
	p->stalled = false;
	return 0;
}

/**
 * spray_path_down() - take a path out of spray_pick()'s choice
 * @s: the scheduler
 * @path: the path
 *
 * Chunks already posted on it stay accounted there and may still complete
 * (a drain); spray_fail_path() takes them back instead.
 *
 * Return: 0, or -EINVAL for a path out of range.
 */
int spray_path_down(struct spray_sched *s, u32 path)
{
	if (path >= s->n_paths)
		return -EINVAL;
	s->path[path].state = SPRAY_PATH_DOWN;
	return 0;
}

/**
 * spray_path_up() - let a path take chunks again
 * @s: the scheduler
 * @path: the path
 *
 * A path that was down starts over unmeasured, with the initial credit;
 * its counters are kept.  A failed path must have been drained by
 * spray_fail_path() first.
 *
 * Return: 0, or -EINVAL for a path out of range.
 */
int spray_path_up(struct spray_sched *s, u32 path)
{
	struct spray_path *p;

	if (path >= s->n_paths)
		return -EINVAL;
	p = &s->path[path];
	if (p->state == SPRAY_PATH_UP)
		return 0;
	p->state = SPRAY_PATH_UP;
	p->stalled = false;
	spray_path_forget(s, p);
	return 0;
}

/**
 * spray_stalled() - the up paths that stopped completing
 * @s: the scheduler
 * @now_ns: now
 * @mask_out: if not NULL, gets bit i set for each stalled path i
 *
 * A path has stalled when it has chunks outstanding and neither completed
 * one nor went from idle to busy for more than the stall timeout.  Each
 * stall is counted once in the path's @stalls (until its next completion).
 *
 * Return: the number of stalled paths.
 */
u32 spray_stalled(struct spray_sched *s, u64 now_ns, u32 *mask_out)
{
	struct spray_path *p;
	u32 i, n = 0, mask = 0;
	u64 since;

	for (i = 0; i < s->n_paths; i++) {
		p = &s->path[i];
		if (p->state != SPRAY_PATH_UP || !p->out_chunks)
			continue;
		since = p->last_done_ns > p->busy_since_ns ?
			p->last_done_ns : p->busy_since_ns;
		if (now_ns <= since || now_ns - since <= s->stall_ns)
			continue;
		mask |= 1U << i;
		n++;
		if (!p->stalled) {
			p->stalled = true;
			p->stalls++;
		}
	}
	if (mask_out)
		*mask_out = mask;
	return n;
}

/**
 * spray_tune() - adapt the chunk size and the credits (AutoByte)
 * @s: the scheduler
 * @now_ns: now
 *
 * Does nothing when called within @s->tune_ns of the last adjustment.
 * Otherwise, over the up paths with a measured rate and at least
 * SPRAY_TUNE_SAMPLES completions since the last chunk size change:
 *
 * - need = chunk * ns_per_mib / 2^20, the time a chunk's bytes take;
 * - floor = the least excess seen: the fixed cost of a chunk (latency and
 *   per-chunk overhead the path's own queue does not explain);
 * - rise = average excess - floor: delay that has grown since.
 *
 * 1. If any path's rise exceeds the target latency (completion times went
 *    up: queueing the credits do not explain), halve the chunk size.
 * 2. Otherwise, if the sum of floors exceeds the sum of needs (a chunk's
 *    fixed cost outweighs its bytes), double it, unless one of the
 *    SPRAY_TUNE_HOLD adjustments (with votes) after a shrink is not over.
 * 3. Never beyond [chunk_min, chunk_max].  A change restarts every path's
 *    excess measurements (its rate is kept).
 *
 * Then every up path with a back-to-back rate gets credit = its rate times
 * its round trip (its average excess, at most SPRAY_RTT_TARGETS target
 * latencies) plus the target latency: (base_ns + target_ns) * 2^20 /
 * ns_per_mib, its bandwidth-delay product and target_ns of queue, clamped
 * to [credit_min, credit_max].  Without the cap, a path whose own queue
 * overflows (drops, retransmissions: seconds of excess) got more credit,
 * so more queue: 2 MiB on a 5 Mbit/s class, 3 s per chunk.
 * Credit for the target latency alone would starve a path whose round trip
 * is longer (a path of 5 MB/s and 50 ms carried 3.5 MB/s).
 *
 * Return: what became of the chunk size.
 */
enum spray_tune_result spray_tune(struct spray_sched *s, u64 now_ns)
{
	enum spray_tune_result res = SPRAY_TUNE_KEPT;
	u64 need, rise, sum_need = 0, sum_floor = 0, credit, rtt;
	bool voters = false, queueing = false;
	struct spray_path *p;
	u32 i;

	if (s->tuned && now_ns >= s->last_tune_ns &&
	    now_ns - s->last_tune_ns < s->tune_ns)
		return SPRAY_TUNE_KEPT;
	s->tuned = true;
	s->last_tune_ns = now_ns;

	for (i = 0; i < s->n_paths; i++) {
		p = &s->path[i];
		if (p->state != SPRAY_PATH_UP || !p->rate_busy ||
		    p->tune_samples < SPRAY_TUNE_SAMPLES)
			continue;
		voters = true;
		need = ((u64)s->chunk * p->ns_per_mib) >> 20;
		sum_need += need;
		sum_floor += p->excess_floor_ns;
		rise = p->excess_ns > p->excess_floor_ns ?
		       p->excess_ns - p->excess_floor_ns : 0;
		if (rise > s->target_ns)
			queueing = true;
	}
	if (voters && queueing) {
		if (s->chunk > s->chunk_min) {
			s->chunk >>= 1;
			s->shrinks++;
			res = SPRAY_TUNE_SHRANK;
		}
		s->hold = SPRAY_TUNE_HOLD;
	} else if (voters && s->hold) {
		s->hold--;
	} else if (voters && sum_floor > sum_need &&
		   s->chunk < s->chunk_max) {
		s->chunk <<= 1;
		s->grows++;
		res = SPRAY_TUNE_GREW;
	}

	for (i = 0; i < s->n_paths; i++) {
		p = &s->path[i];
		if (res != SPRAY_TUNE_KEPT) {
			p->tune_samples = 0;
			p->excess_ns = 0;
			p->excess_floor_ns = 0;
		}
		if (p->state != SPRAY_PATH_UP || !p->rate_busy)
			continue;
		rtt = spray_min(p->base_ns, SPRAY_RTT_TARGETS * s->target_ns);
		credit = div64_u64((s->target_ns + rtt) << 20, p->ns_per_mib);
		if (credit < s->credit_min)
			credit = s->credit_min;
		if (credit > s->credit_max)
			credit = s->credit_max;
		p->credit = credit;
	}
	return res;
}

/**
 * spray_share_tune() - move path 0's share of the work requests cut next
 * @s: the scheduler
 * @now_ns: now
 * @paths_full: chunks wait for credit on the other paths
 * @path0_full: work waits on path 0 (more than it should have in flight)
 *
 * Path 0 carries each cut request's tail itself, after the request's
 * chunks; its completions are the application's, and the scheduler does
 * not measure its rate.  What the caller sees is where work waits: on
 * path 0, it should take less; else, when chunks wait for the other
 * paths, they are the bottleneck and path 0 should take more; when
 * neither, the application sets the pace and the share stays.  Requests
 * are cut just before they go, so a change acts at once, but what it does
 * shows only as the requests in flight complete.  The share moves by
 * SPRAY_SHARE_STEP at most once per SPRAY_SHARE_TUNES * @s->tune_ns, within
 * [@s->share_min, @s->share_max]: it settles where neither side waits on
 * the other, at path 0's part of the paths' rates whatever they are.
 *
 * Return: the share, in 1/SPRAY_SHARE_ONE.
 */
u32 spray_share_tune(struct spray_sched *s, u64 now_ns, bool paths_full,
		     bool path0_full)
{
	if (s->share_tuned && now_ns >= s->last_share_ns &&
	    now_ns - s->last_share_ns < SPRAY_SHARE_TUNES * s->tune_ns)
		return s->share;
	s->share_tuned = true;
	s->last_share_ns = now_ns;
	if (path0_full)
		s->share = s->share >= s->share_min + SPRAY_SHARE_STEP ?
			   s->share - SPRAY_SHARE_STEP : s->share_min;
	else if (paths_full)
		s->share = spray_min(s->share + SPRAY_SHARE_STEP,
				     s->share_max);
	return s->share;
}

/**
 * spray_tail_len() - bytes of a cut work request that path 0 carries
 * @s: the scheduler
 * @len: the request's bytes
 *
 * @s->share of @len, rounded down to 4 KiB; at least 4 KiB (all of @len
 * if less), and at most @len less one chunk where that leaves 4 KiB (the
 * other paths always get some).
 *
 * Return: the tail's bytes.
 */
u64 spray_tail_len(const struct spray_sched *s, u64 len)
{
	u64 tail = ((len >> 12) * s->share / SPRAY_SHARE_ONE) << 12;
	u64 most = len > s->chunk ? (len - s->chunk) & ~4095ULL : 0;

	if (tail > most)
		tail = most;
	if (tail < 4096)
		tail = 4096;
	return spray_min(tail, len);
}

/**
 * spray_chunks_init() - start a table of chunk slots, all free
 * @t: the table
 * @slots: @size slots, owned by the caller
 * @size: 1 to SPRAY_CHUNKS_CEIL
 *
 * Return: 0, or -EINVAL for a bad @size.
 */
int spray_chunks_init(struct spray_chunks *t, struct spray_chunk *slots,
		      u32 size)
{
	u32 i;

	if (!size || size > SPRAY_CHUNKS_CEIL)
		return -EINVAL;
	for (i = 0; i < size; i++) {
		slots[i] = (struct spray_chunk){
			.next = i + 1 < size ? i + 1 : SPRAY_CHUNK_NONE,
			.state = SPRAY_CHUNK_FREE,
		};
	}
	t->c = slots;
	t->size = size;
	t->free = 0;
	t->used = 0;
	return 0;
}

/**
 * spray_chunk_alloc() - take a slot for a new chunk of a work request
 * @t: the table
 * @seq: the work request's sequence number
 * @offset: the chunk's first byte within the work request
 * @len: its bytes
 *
 * Return: the slot's index (the chunk is ready to post), or -ENOSPC when no
 * slot is free.
 */
int spray_chunk_alloc(struct spray_chunks *t, u32 seq, u64 offset, u32 len)
{
	struct spray_chunk *c;
	u32 idx = t->free;

	if (idx == SPRAY_CHUNK_NONE)
		return -ENOSPC;
	c = &t->c[idx];
	t->free = c->next;
	t->used++;
	c->next = SPRAY_CHUNK_NONE;
	c->offset = offset;
	c->len = len;
	c->seq = seq;
	c->posts = 0;
	c->path = 0;
	c->posted_ns = 0;
	c->ahead = 0;
	c->state = SPRAY_CHUNK_READY;
	return idx;
}

/**
 * spray_chunk_free() - give a slot back
 * @t: the table
 * @idx: the slot; one out of range or already free is ignored
 */
void spray_chunk_free(struct spray_chunks *t, u32 idx)
{
	struct spray_chunk *c;

	if (idx >= t->size || t->c[idx].state == SPRAY_CHUNK_FREE)
		return;
	c = &t->c[idx];
	c->state = SPRAY_CHUNK_FREE;
	c->gen = (c->gen + 1) & SPRAY_GEN_MASK;
	c->next = t->free;
	t->free = idx;
	t->used--;
}

/**
 * spray_chunk_post() - post (or repost) a ready chunk on a path
 * @s: the scheduler
 * @t: the table
 * @idx: the chunk's slot
 * @path: the path, usually spray_pick()'s choice
 * @now_ns: now
 * @wr_id: gets the wr_id to give the parent work request: the slot in bits
 *	0-31, the slot's generation in bits 32-62; bit 63 is always clear
 *
 * Return: 0; -EINVAL for a slot out of range or not ready, or a path out
 * of range; -ENOLINK for a path down.
 */
int spray_chunk_post(struct spray_sched *s, struct spray_chunks *t, u32 idx,
		     u32 path, u64 now_ns, u64 *wr_id)
{
	struct spray_chunk *c;
	int ret;

	if (idx >= t->size || t->c[idx].state != SPRAY_CHUNK_READY)
		return -EINVAL;
	c = &t->c[idx];
	ret = spray_posted(s, c, path, now_ns);
	if (ret)
		return ret;
	c->gen = (c->gen + 1) & SPRAY_GEN_MASK;
	c->state = SPRAY_CHUNK_POSTED;
	if (c->posts < 0xffff)
		c->posts++;
	*wr_id = ((u64)c->gen << 32) | idx;
	return 0;
}

/**
 * spray_chunk_complete() - a parent completion for a chunk
 * @s: the scheduler
 * @t: the table
 * @wr_id: the parent completion's wr_id
 * @now_ns: now
 * @ok: the parent completion succeeded
 *
 * A current completion is accounted on the chunk's path (spray_completed())
 * and leaves the chunk done: the caller then reports it with
 * spray_order_chunk_done() and frees the slot.  A completion for a chunk
 * taken back by spray_fail_path() (or freed) is stale: the caller drops it.
 *
 * Return: the chunk's slot, or -ESTALE.
 */
int spray_chunk_complete(struct spray_sched *s, struct spray_chunks *t,
			 u64 wr_id, u64 now_ns, bool ok)
{
	u32 idx = (u32)wr_id;
	struct spray_chunk *c;

	if (idx >= t->size)
		return -ESTALE;
	c = &t->c[idx];
	if (c->state != SPRAY_CHUNK_POSTED || c->gen != (u32)(wr_id >> 32))
		return -ESTALE;
	if (spray_completed(s, c, now_ns, ok))
		return -ESTALE;
	c->state = SPRAY_CHUNK_DONE;
	return idx;
}

/**
 * spray_fail_path() - drop a path and take back its chunks in flight
 * @s: the scheduler
 * @t: the table
 * @path: the path that errored or stalled
 * @out: gets the slots of up to @max chunks taken back
 * @max: room in @out
 *
 * Marks the path down.  Each chunk in flight on it becomes ready again (a
 * repost, not a new chunk: its work request's chunk count is unchanged),
 * its bytes leave the path's outstanding counters and count as a repost of
 * the path, and any completion the failed path still delivers for it is
 * stale.  Call again while it returns @max: the path is drained when it
 * returns less.
 *
 * Return: the number of slots written to @out.
 */
u32 spray_fail_path(struct spray_sched *s, struct spray_chunks *t, u32 path,
		    u32 *out, u32 max)
{
	struct spray_path *p;
	struct spray_chunk *c;
	u32 i, n = 0;

	if (path >= s->n_paths)
		return 0;
	p = &s->path[path];
	p->state = SPRAY_PATH_DOWN;
	for (i = 0; i < t->size && n < max; i++) {
		c = &t->c[i];
		if (c->state != SPRAY_CHUNK_POSTED || c->path != path)
			continue;
		c->state = SPRAY_CHUNK_READY;
		c->gen = (c->gen + 1) & SPRAY_GEN_MASK;
		p->out_bytes -= spray_min(p->out_bytes, c->len);
		if (p->out_chunks)
			p->out_chunks--;
		p->reposts++;
		out[n++] = i;
	}
	return n;
}

/**
 * spray_order_init() - start an empty ring of work requests
 * @o: the ring
 * @slots: @size slots, owned by the caller
 * @size: a power of two, at most 2^31
 * @first_seq: the sequence number of the first work request
 *
 * Return: 0, or -EINVAL for a bad @size.
 */
int spray_order_init(struct spray_order *o, struct spray_wr *slots, u32 size,
		     u32 first_seq)
{
	if (!spray_pow2(size) || size > (1U << 31))
		return -EINVAL;
	o->wr = slots;
	o->mask = size - 1;
	o->head = first_seq;
	o->done = first_seq;
	o->tail = first_seq;
	return 0;
}

/**
 * spray_order_count() - work requests added and not popped
 * @o: the ring
 *
 * Return: their number.
 */
u32 spray_order_count(const struct spray_order *o)
{
	return o->tail - o->head;
}

/**
 * spray_order_add() - a work request is posted to the virtual QP
 * @o: the ring
 * @wr_id: the application's wr_id
 * @n_chunks: its chunks, at least 1 (spray_chunk_count()); reposts of a
 *	chunk are not counted again
 * @ordered: SEND, WRITE_WITH_IMM or atomic
 * @seq: gets its sequence number
 *
 * Return: 0; -EINVAL for no chunks; -ENOSPC when the ring is full.
 */
int spray_order_add(struct spray_order *o, u64 wr_id, u32 n_chunks,
		    bool ordered, u32 *seq)
{
	struct spray_wr *w;

	if (!n_chunks)
		return -EINVAL;
	if (spray_order_count(o) > o->mask)
		return -ENOSPC;
	w = &o->wr[o->tail & o->mask];
	w->wr_id = wr_id;
	w->pending = n_chunks;
	w->status = 0;
	w->ordered = ordered;
	*seq = o->tail++;
	return 0;
}

static bool spray_order_holds(const struct spray_order *o, u32 seq)
{
	return seq - o->head < o->tail - o->head;
}

/**
 * spray_order_chunk_done() - one chunk of a work request completed
 * @o: the ring
 * @seq: the work request's sequence number
 * @status: 0 for success; the work request keeps its first nonzero one
 *
 * Return: 0; -EINVAL for a sequence number not in the ring or a work
 * request with no chunk pending.
 */
int spray_order_chunk_done(struct spray_order *o, u32 seq, int status)
{
	struct spray_wr *w;

	if (!spray_order_holds(o, seq))
		return -EINVAL;
	w = &o->wr[seq & o->mask];
	if (!w->pending)
		return -EINVAL;
	if (status && !w->status)
		w->status = status;
	w->pending--;
	while (o->done != o->tail && !o->wr[o->done & o->mask].pending)
		o->done++;
	return 0;
}

/**
 * spray_order_set_chunks() - the chunks a work request was cut into
 * @o: the ring
 * @seq: the work request's sequence number; added with one chunk pending
 *	that stands for them, none done yet
 * @n_chunks: its chunks, at least 1
 *
 * Return: 0; -EINVAL for a sequence number not in the ring, no chunks, or
 * a work request without exactly its one chunk pending.
 */
int spray_order_set_chunks(struct spray_order *o, u32 seq, u32 n_chunks)
{
	struct spray_wr *w;

	if (!spray_order_holds(o, seq) || !n_chunks)
		return -EINVAL;
	w = &o->wr[seq & o->mask];
	if (w->pending != 1)
		return -EINVAL;
	w->pending = n_chunks;
	return 0;
}

/**
 * spray_order_pop() - the oldest work request, once it is complete
 * @o: the ring
 * @wr_id: gets its wr_id
 * @status: gets its status (0, or its first chunk error)
 *
 * Work requests leave in post order, however their chunks completed.
 *
 * Return: 1 with @wr_id and @status set, or 0 when the oldest is not
 * complete (or the ring is empty).
 */
int spray_order_pop(struct spray_order *o, u64 *wr_id, int *status)
{
	struct spray_wr *w;

	if (o->head == o->done)
		return 0;
	w = &o->wr[o->head & o->mask];
	*wr_id = w->wr_id;
	*status = w->status;
	o->head++;
	return 1;
}

/**
 * spray_order_may_post_ordered() - the fence of an ordered work request
 * @o: the ring
 * @seq: the ordered work request's sequence number
 *
 * Return: true when every work request added before @seq has all its
 * chunks completed; false otherwise or for a @seq not in the ring.
 */
bool spray_order_may_post_ordered(const struct spray_order *o, u32 seq)
{
	if (!spray_order_holds(o, seq))
		return false;
	return seq - o->head <= o->done - o->head;
}
