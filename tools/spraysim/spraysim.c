// SPDX-License-Identifier: GPL-2.0-only
/*
 * spraysim - flow-level simulator of a two-tier leaf-spine fabric that
 * compares ECMP (one hashed spine per connection), adaptive multipath
 * spraying over P spines, and spraying with link-failure detection and
 * failover.  Rates are weighted max-min fair (progressive filling over
 * every link direction), recomputed at every event.  See README.md.
 *
 * Exit status: 0 done; 1 out of memory or output file error; 2 usage error;
 * 3 some connections could never finish (stranded by failures).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spraysim.h"

#define MAX_LEAVES	4096
#define MAX_SPINES	1024
#define MAX_HOSTS	4096
#define MAX_RING_HOSTS	(1 << 20)
#define MAX_FLOWS	(1 << 24)
#define MAX_SUBFLOWS	(1 << 25)
#define MAX_BYTES	1000000000000000ULL	/* 1e15 */
#define MAX_GBPS	100000.0
#define MAX_MS		1e9

/* ------------------------------------------------------------------ */
/* Weighted max-min fairness (progressive filling)                     */

struct heap_ent {
	double key;
	int link;
	unsigned int ver;
};

struct wf {
	int nl, nf;
	const double *cap;
	const double *w;
	const int *off;		/* flow -> first link index in lk */
	const uint8_t *nlk;	/* flow -> number of links */
	const int *lk;
	const uint8_t *act;	/* flow takes part (NULL: all) */
	int *loff;		/* link -> flows CSR */
	int *lflow;
	double *W, *F;
	int *cnt;
	unsigned int *ver;
	uint8_t *frozen;
	uint8_t *dirty;
	int *touched;
	struct heap_ent *heap;
	size_t hn, hcap;
};

static void heap_push(struct wf *s, double key, int link)
{
	size_t i = s->hn++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (s->heap[p].key <= key)
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i].key = key;
	s->heap[i].link = link;
	s->heap[i].ver = s->ver[link];
}

static struct heap_ent heap_pop(struct wf *s)
{
	struct heap_ent top = s->heap[0];
	struct heap_ent last = s->heap[--s->hn];
	size_t i = 0, n = s->hn;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && s->heap[c + 1].key < s->heap[c].key)
			c++;
		if (last.key <= s->heap[c].key)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (n)
		s->heap[i] = last;
	return top;
}

static void wf_free(struct wf *s)
{
	free(s->loff);
	free(s->lflow);
	free(s->W);
	free(s->F);
	free(s->cnt);
	free(s->ver);
	free(s->frozen);
	free(s->dirty);
	free(s->touched);
	free(s->heap);
	memset(s, 0, sizeof(*s));
}

static int wf_alloc(struct wf *s, int nl, int nf, size_t nlinks_total)
{
	s->nl = nl;
	s->nf = nf;
	s->loff = calloc((size_t)nl + 1, sizeof(int));
	s->lflow = malloc((nlinks_total ? nlinks_total : 1) * sizeof(int));
	s->W = calloc(nl ? nl : 1, sizeof(double));
	s->F = calloc(nl ? nl : 1, sizeof(double));
	s->cnt = calloc(nl ? nl : 1, sizeof(int));
	s->ver = calloc(nl ? nl : 1, sizeof(unsigned int));
	s->dirty = calloc(nl ? nl : 1, 1);
	s->touched = malloc((nl ? nl : 1) * sizeof(int));
	s->frozen = calloc(nf ? nf : 1, 1);
	/* each link enters the heap once, plus once per freeze per link */
	s->hcap = (size_t)nl + nlinks_total + 1;
	s->heap = malloc(s->hcap * sizeof(*s->heap));
	if (!s->loff || !s->lflow || !s->W || !s->F || !s->cnt || !s->ver ||
	    !s->dirty || !s->touched || !s->frozen || !s->heap) {
		wf_free(s);
		return -1;
	}
	return 0;
}

/* Build the link -> flow incidence lists from the flow -> link lists. */
static void wf_build_inc(struct wf *s)
{
	int f, l, k;

	memset(s->loff, 0, ((size_t)s->nl + 1) * sizeof(int));
	for (f = 0; f < s->nf; f++)
		for (k = 0; k < s->nlk[f]; k++)
			s->loff[s->lk[s->off[f] + k] + 1]++;
	for (l = 0; l < s->nl; l++)
		s->loff[l + 1] += s->loff[l];
	for (l = 0; l < s->nl; l++)
		s->cnt[l] = s->loff[l];
	for (f = 0; f < s->nf; f++)
		for (k = 0; k < s->nlk[f]; k++)
			s->lflow[s->cnt[s->lk[s->off[f] + k]]++] = f;
}

static double wf_key(const struct wf *s, int l, double floor_key)
{
	double k = (s->cap[l] - s->F[l]) / s->W[l];

	return k < floor_key ? floor_key : k;
}

/* Fill rate[] for every active flow; inactive flows get 0. */
static void wf_solve(struct wf *s, double *rate)
{
	int f, l, k;

	memset(s->W, 0, s->nl * sizeof(double));
	memset(s->F, 0, s->nl * sizeof(double));
	memset(s->cnt, 0, s->nl * sizeof(int));
	s->hn = 0;
	for (f = 0; f < s->nf; f++) {
		rate[f] = 0;
		if ((s->act && !s->act[f]) || s->w[f] <= 0) {
			s->frozen[f] = 1;
			continue;
		}
		s->frozen[f] = 0;
		for (k = 0; k < s->nlk[f]; k++) {
			l = s->lk[s->off[f] + k];
			s->W[l] += s->w[f];
			s->cnt[l]++;
		}
	}
	for (l = 0; l < s->nl; l++) {
		s->ver[l]++;
		if (s->cnt[l])
			heap_push(s, wf_key(s, l, 0), l);
	}
	while (s->hn) {
		struct heap_ent e = heap_pop(s);
		int nt = 0, i, j;

		l = e.link;
		if (e.ver != s->ver[l] || !s->cnt[l])
			continue;
		for (i = s->loff[l]; i < s->loff[l + 1]; i++) {
			f = s->lflow[i];
			if (s->frozen[f])
				continue;
			s->frozen[f] = 1;
			rate[f] = s->w[f] * e.key;
			for (k = 0; k < s->nlk[f]; k++) {
				j = s->lk[s->off[f] + k];
				s->W[j] -= s->w[f];
				s->F[j] += rate[f];
				s->cnt[j]--;
				if (!s->dirty[j]) {
					s->dirty[j] = 1;
					s->touched[nt++] = j;
				}
			}
		}
		for (i = 0; i < nt; i++) {
			j = s->touched[i];
			s->dirty[j] = 0;
			s->ver[j]++;
			if (s->cnt[j] > 0 && s->hn < s->hcap)
				heap_push(s, wf_key(s, j, e.key), j);
		}
	}
}

int spray_maxmin(int nlinks, const double *cap, int nflows,
		 const double *w, const int *off, const int *lk, double *rate)
{
	struct wf s = { 0 };
	uint8_t *n = malloc(nflows ? nflows : 1);
	int f, ret = -1;

	if (!n)
		return -1;
	for (f = 0; f < nflows; f++)
		n[f] = (uint8_t)(off[f + 1] - off[f]);
	if (wf_alloc(&s, nlinks, nflows, off[nflows]) == 0) {
		s.cap = cap;
		s.w = w;
		s.off = off;
		s.nlk = n;
		s.lk = lk;
		wf_build_inc(&s);
		wf_solve(&s, rate);
		ret = 0;
	}
	wf_free(&s);
	free(n);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Topology, traffic, aggregation                                      */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

int spray_flow_hash(const struct spray_cfg *c, int src, int dst)
{
	uint64_t h = mix64(c->seed ^ mix64(((uint64_t)src << 32) | dst));

	return (int)(h % (uint64_t)c->spines);
}

const char *spray_mode_name(int mode)
{
	static const char *const n[] = { "ecmp", "spray", "spray-failover" };

	return mode >= 0 && mode < SPRAY_NMODES ? n[mode] : "?";
}

enum { SF_LIVE, SF_BLACK, SF_DEAD };

struct conn {
	int sleaf, dleaf;
	int sf0, nsf;		/* sub-flows sf0 .. sf0+nsf-1 */
	int nlive;		/* sub-flows not known dead */
	int base;		/* lowest spine of the path set */
	double w;		/* connections merged into this one */
	double rem;		/* bytes (all members) schedulable now */
	double rate;		/* Gbit/s on the wire, all members */
	double eff;
	uint8_t done, idle, stranded;
};

struct sim {
	const struct spray_cfg *c;
	int mode, L, S, H, N, P, agg;
	int nhl;		/* host links per direction */
	int nl;
	double *cap;
	double *bits;		/* bits carried per link */
	struct conn *cn;
	int ncn;
	/* sub-flows */
	int nsf;
	int *off, *lk, *sfconn, *spine;
	uint8_t *nlk, *state, *act;
	double *w, *rate, *stuck;
	struct wf wf;
	int dirty_inc;
};

static int link_hup(struct sim *m, int h)
{
	(void)m;
	return h;
}

static int link_hdn(struct sim *m, int h)
{
	return m->nhl + h;
}

static int link_up(struct sim *m, int leaf, int s)
{
	return 2 * m->nhl + leaf * m->S + s;
}

static int link_dn(struct sim *m, int s, int leaf)
{
	return 2 * m->nhl + m->L * m->S + s * m->L + leaf;
}

/* Offsets (from the flow's hash) of the P spines a sprayed flow uses. */
static void path_pattern(int S, int P, int *d)
{
	int k;

	for (k = 0; k < P; k++)
		d[k] = (int)((int64_t)k * S / P);
}

/* Smallest shift p (dividing S) that maps the pattern onto itself. */
static int pattern_period(int S, int P, const int *d)
{
	uint8_t *in = calloc(S, 1);
	int p, k, ok = 0;

	if (!in)
		return S;
	for (k = 0; k < P; k++)
		in[d[k]] = 1;
	for (p = 1; p < S; p++) {
		if (S % p)
			continue;
		ok = 1;
		for (k = 0; k < P && ok; k++)
			ok = in[(d[k] + p) % S];
		if (ok)
			break;
	}
	free(in);
	return ok ? p : S;
}

struct rawflow {
	uint64_t key;
	int src, dst;
};

static int cmp_raw(const void *a, const void *b)
{
	const struct rawflow *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->src - y->src;
}

/* Are all hosts of a leaf interchangeable (see README, aggregation)? */
static int agg_exact(struct sim *m, struct rawflow *f, size_t nf,
		     size_t ncls)
{
	size_t i, cls = 0, H = m->H, need = ncls * H;
	int *cs, *cd, ok = 1;

	if (ncls > (size_t)MAX_SUBFLOWS / H)
		return 0;
	cs = calloc(need, sizeof(int));
	cd = calloc(need, sizeof(int));
	if (!cs || !cd) {
		free(cs);
		free(cd);
		return 0;
	}
	for (i = 0; i < nf; i++) {
		if (i && f[i].key != f[i - 1].key)
			cls++;
		cs[cls * H + f[i].src / m->L]++;
		cd[cls * H + f[i].dst / m->L]++;
	}
	for (i = 0; i < need && ok; i++)
		ok = cs[i] == cs[i - i % H] && cd[i] == cd[i - i % H];
	free(cs);
	free(cd);
	return ok;
}

static int sim_build(struct sim *m)
{
	const struct spray_cfg *c = m->c;
	int d[SPRAY_MAX_PATHS], per, k;
	size_t nf, i, j, ncls;
	struct rawflow *f;
	int a, b;
	int64_t N = m->N;

	m->P = m->mode == SPRAY_MODE_ECMP ? 1 : c->paths;
	path_pattern(m->S, m->P, d);
	per = pattern_period(m->S, m->P, d);
	nf = c->traffic == SPRAY_TRAFFIC_RING ? (size_t)N :
		(size_t)(N * (N - 1));
	f = malloc(nf * sizeof(*f));
	if (!f)
		return 1;
	j = 0;
	for (a = 0; a < N; a++) {
		for (b = 0; b < N; b++) {
			int sl, dl, h = 0;

			if (c->traffic == SPRAY_TRAFFIC_RING) {
				if (b != (a + 1) % N)
					continue;
			} else if (a == b) {
				continue;
			}
			sl = a % m->L;
			dl = b % m->L;
			if (sl != dl)
				h = spray_flow_hash(c, a, b) % per;
			f[j].src = a;
			f[j].dst = b;
			f[j].key = ((uint64_t)sl * m->L + dl) * per + h;
			j++;
		}
	}
	nf = j;
	qsort(f, nf, sizeof(*f), cmp_raw);
	ncls = nf ? 1 : 0;
	for (i = 1; i < nf; i++)
		ncls += f[i].key != f[i - 1].key;
	m->agg = c->aggregate && ncls < nf && agg_exact(m, f, nf, ncls);

	m->ncn = (int)(m->agg ? ncls : nf);
	m->nhl = m->agg ? m->L : m->N;
	m->nl = 2 * m->nhl + 2 * m->L * m->S;
	if ((size_t)m->ncn * m->P > MAX_SUBFLOWS) {
		free(f);
		return 2;
	}
	m->cap = malloc(m->nl * sizeof(double));
	m->bits = calloc(m->nl, sizeof(double));
	m->cn = calloc(m->ncn ? m->ncn : 1, sizeof(*m->cn));
	m->nsf = 0;
	{
		size_t ms = (size_t)m->ncn * m->P + 1;

		m->off = malloc(ms * sizeof(int));
		m->lk = malloc(ms * 4 * sizeof(int));
		m->sfconn = malloc(ms * sizeof(int));
		m->spine = malloc(ms * sizeof(int));
		m->nlk = malloc(ms);
		m->state = malloc(ms);
		m->act = malloc(ms);
		m->w = malloc(ms * sizeof(double));
		m->rate = calloc(ms, sizeof(double));
		m->stuck = calloc(ms, sizeof(double));
	}
	if (!m->cap || !m->bits || !m->cn || !m->off || !m->lk ||
	    !m->sfconn || !m->spine || !m->nlk || !m->state || !m->act ||
	    !m->w || !m->rate || !m->stuck) {
		free(f);
		return 1;
	}
	for (k = 0; k < 2 * m->nhl; k++)
		m->cap[k] = c->host_gbps * (m->agg ? m->H : 1);
	for (; k < m->nl; k++)
		m->cap[k] = c->uplink_gbps;

	/* one connection per class (aggregated) or per flow */
	{
		int ci = 0;

		for (i = 0; i < nf; i = j) {
			struct conn *cn = &m->cn[ci++];
			int h, sh, dh, p, nsp;

			j = i + 1;
			if (m->agg)
				while (j < nf && f[j].key == f[i].key)
					j++;
			cn->sleaf = f[i].src % m->L;
			cn->dleaf = f[i].dst % m->L;
			cn->w = (double)(j - i);
			cn->rem = cn->w * (double)c->bytes;
			h = (int)(f[i].key % per);
			sh = m->agg ? cn->sleaf : f[i].src;
			dh = m->agg ? cn->dleaf : f[i].dst;
			nsp = cn->sleaf == cn->dleaf ? 1 : m->P;
			cn->eff = nsp > 1 ? c->path_overhead : 1.0;
			cn->sf0 = m->nsf;
			cn->nsf = nsp;
			cn->nlive = nsp;
			cn->base = m->S;
			for (p = 0; p < nsp; p++) {
				int s = m->nsf++;
				int *l = &m->lk[4 * s];

				m->off[s] = 4 * s;
				m->sfconn[s] = ci - 1;
				m->state[s] = SF_LIVE;
				m->w[s] = cn->w / nsp;
				l[0] = link_hup(m, sh);
				l[1] = link_hdn(m, dh);
				if (cn->sleaf == cn->dleaf) {
					m->nlk[s] = 2;
					m->spine[s] = -1;
					continue;
				}
				m->spine[s] = (h + d[p]) % m->S;
				if (m->spine[s] < cn->base)
					cn->base = m->spine[s];
				l[2] = link_up(m, cn->sleaf, m->spine[s]);
				l[3] = link_dn(m, m->spine[s], cn->dleaf);
				m->nlk[s] = 4;
			}
		}
	}
	free(f);
	if (wf_alloc(&m->wf, m->nl, m->nsf, (size_t)m->nsf * 4))
		return 1;
	m->wf.cap = m->cap;
	m->wf.w = m->w;
	m->wf.off = m->off;
	m->wf.nlk = m->nlk;
	m->wf.lk = m->lk;
	m->wf.act = m->act;
	wf_build_inc(&m->wf);
	return 0;
}

static void sim_free(struct sim *m)
{
	wf_free(&m->wf);
	free(m->cap);
	free(m->bits);
	free(m->cn);
	free(m->off);
	free(m->lk);
	free(m->sfconn);
	free(m->spine);
	free(m->nlk);
	free(m->state);
	free(m->act);
	free(m->w);
	free(m->rate);
	free(m->stuck);
}

/* ------------------------------------------------------------------ */
/* Failures                                                            */

static int pick_failures(const struct spray_cfg *c, int *cab)
{
	int n = 0, i, k, tot = c->leaves * c->spines;
	int *perm;
	uint64_t r = mix64(c->seed ^ 0xfa11u);

	for (i = 0; i < c->nfail_link; i++)
		cab[n++] = c->fail_link[i][0] * c->spines + c->fail_link[i][1];
	if (c->nfail) {
		perm = malloc(tot * sizeof(int));
		if (!perm)
			return -1;
		for (i = 0; i < tot; i++)
			perm[i] = i;
		for (i = 0; i < c->nfail; i++) {
			int t;

			r = mix64(r);
			k = i + (int)(r % (uint64_t)(tot - i));
			t = perm[i];
			perm[i] = perm[k];
			perm[k] = t;
			cab[n++] = perm[i];
		}
		free(perm);
	}
	/* drop duplicates */
	for (i = 0, k = 0; i < n; i++) {
		int j, dup = 0;

		for (j = 0; j < k && !dup; j++)
			dup = cab[j] == cab[i];
		if (!dup)
			cab[k++] = cab[i];
	}
	return k;
}

static int link_failed(struct sim *m, int l)
{
	return m->cap[l] <= 0;
}

static int sf_on_failed(struct sim *m, int s)
{
	int k;

	for (k = 0; k < m->nlk[s]; k++)
		if (link_failed(m, m->lk[m->off[s] + k]))
			return 1;
	return 0;
}

/* Links just failed: live sub-flows crossing them become black holes. */
static void apply_failure(struct sim *m)
{
	int i, s;

	for (i = 0; i < m->ncn; i++) {
		struct conn *cn = &m->cn[i];
		double rsum = 0, rem0 = cn->rem, moved = 0;
		int nl = 0, nhit = 0;

		if (cn->done || cn->stranded)
			continue;
		for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++) {
			if (m->state[s] != SF_LIVE)
				continue;
			nl++;
			rsum += m->rate[s];
			nhit += sf_on_failed(m, s);
		}
		if (!nhit)
			continue;
		for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++) {
			double frac;

			if (m->state[s] != SF_LIVE || !sf_on_failed(m, s))
				continue;
			/* bytes the sender had scheduled on this path */
			frac = rsum > 0 ? m->rate[s] / rsum : 1.0 / nl;
			m->stuck[s] += rem0 * frac;
			moved += rem0 * frac;
			m->state[s] = SF_BLACK;
			m->rate[s] = 0;
		}
		cn->rem = nhit == nl ? 0 : rem0 - moved;
		if (cn->rem < 0)
			cn->rem = 0;
	}
}

/* Re-hash a connection whose paths are all dead onto a live spine. */
static void rehash(struct sim *m, struct conn *cn)
{
	int k, s = cn->sf0;

	for (k = 1; k <= m->S; k++) {
		int sp = (cn->base + k) % m->S;
		int up = link_up(m, cn->sleaf, sp);
		int dn = link_dn(m, sp, cn->dleaf);

		if (link_failed(m, up) || link_failed(m, dn))
			continue;
		m->spine[s] = sp;
		m->lk[m->off[s] + 2] = up;
		m->lk[m->off[s] + 3] = dn;
		m->state[s] = SF_LIVE;
		m->w[s] = cn->w;
		cn->nlive = 1;
		m->dirty_inc = 1;
		return;
	}
	cn->stranded = 1;
}

/* Detection: black holes become dead, their bytes go back to the pool. */
static void apply_detect(struct sim *m)
{
	int i, s;

	for (i = 0; i < m->ncn; i++) {
		struct conn *cn = &m->cn[i];
		int hit = 0;

		if (cn->done || cn->stranded)
			continue;
		for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++) {
			if (m->state[s] != SF_BLACK)
				continue;
			m->state[s] = SF_DEAD;
			m->w[s] = 0;
			cn->rem += m->stuck[s];
			m->stuck[s] = 0;
			cn->nlive--;
			hit = 1;
		}
		if (!hit)
			continue;
		if (cn->rem > 0)
			cn->idle = 0;
		if (cn->nlive == 0) {
			rehash(m, cn);
			continue;
		}
		for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++)
			if (m->state[s] != SF_DEAD)
				m->w[s] = cn->w / cn->nlive;
	}
}

/* ------------------------------------------------------------------ */
/* Event loop                                                          */

static int seg_add(struct spray_result *r, size_t *cap, double t, double g)
{
	if (r->nseg == *cap) {
		size_t nc = *cap ? 2 * *cap : 256;
		struct spray_seg *p = realloc(r->seg, nc * sizeof(*p));

		if (!p)
			return -1;
		r->seg = p;
		*cap = nc;
	}
	r->seg[r->nseg].t_end = t;
	r->seg[r->nseg].gbps = g;
	r->nseg++;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int check_size(const struct spray_cfg *c)
{
	int64_t N = (int64_t)c->leaves * c->hosts;

	if (c->traffic == SPRAY_TRAFFIC_RING)
		return N <= MAX_RING_HOSTS;
	return N * (N - 1) <= MAX_FLOWS;
}

int spray_run(const struct spray_cfg *c, int mode, struct spray_result *r)
{
	struct sim m = { 0 };
	double t = 0, t0 = now_s(), bits_cap = 0, tot = 0;
	double t_fail = c->fail_at_ms * 1e-3;
	double t_det = t_fail + c->detect_ms * 1e-3;
	int failed = 0, detected = 0, ncab = 0, i, s, ret;
	int cab[SPRAY_MAX_FAIL_LINKS + MAX_LEAVES];
	int use_fail = mode != SPRAY_MODE_SPRAY;
	size_t segcap = 0;
	int left;

	memset(r, 0, sizeof(*r));
	r->mode = mode;
	if (!check_size(c))
		return 2;
	if (c->nfail > MAX_LEAVES)
		return 2;
	m.c = c;
	m.mode = mode;
	m.L = c->leaves;
	m.S = c->spines;
	m.H = c->hosts;
	m.N = c->leaves * c->hosts;
	ret = sim_build(&m);
	if (ret) {
		sim_free(&m);
		return ret;
	}
	if (use_fail) {
		ncab = pick_failures(c, cab);
		if (ncab < 0) {
			sim_free(&m);
			return 1;
		}
	}
	if (!ncab)
		failed = detected = 1;
	r->aggregated = m.agg;
	r->sim_conns = m.ncn;
	left = m.ncn;
	for (i = 0; i < m.ncn; i++)
		r->conns += (uint64_t)m.cn[i].w;

	for (;;) {
		double tn = INFINITY, dt, g = 0;
		int kind = 0;

		if (!failed && t >= t_fail) {
			for (i = 0; i < ncab; i++) {
				int l = cab[i] / m.S, sp = cab[i] % m.S;

				m.cap[link_up(&m, l, sp)] = 0;
				m.cap[link_dn(&m, sp, l)] = 0;
			}
			apply_failure(&m);
			failed = 1;
			r->events++;
		}
		if (failed && !detected && t >= t_det) {
			apply_detect(&m);
			detected = 1;
			r->events++;
			for (i = 0; i < m.ncn; i++)
				if (m.cn[i].stranded && !m.cn[i].done) {
					m.cn[i].done = 1;
					r->stranded += (uint64_t)m.cn[i].w;
					left--;
				}
		}
		if (!left)
			break;
		if (m.dirty_inc) {
			wf_build_inc(&m.wf);
			m.dirty_inc = 0;
		}
		for (i = 0; i < m.ncn; i++) {
			struct conn *cn = &m.cn[i];
			int a = !cn->done && !cn->idle;

			for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++)
				m.act[s] = a && m.state[s] != SF_DEAD;
		}
		wf_solve(&m.wf, m.rate);
		for (i = 0; i < m.ncn; i++) {
			struct conn *cn = &m.cn[i];
			double tc;

			cn->rate = 0;
			if (cn->done || cn->idle)
				continue;
			for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++)
				cn->rate += m.rate[s];
			if (cn->rate <= 0)
				continue;
			tc = t + cn->rem * 8 / (cn->rate * cn->eff * 1e9);
			if (tc < tn)
				tn = tc;
			g += cn->rate * cn->eff;
		}
		if (!failed && t_fail < tn) {
			tn = t_fail;
			kind = 1;
		} else if (failed && !detected && t_det < tn) {
			tn = t_det;
			kind = 1;
		}
		if (tn == INFINITY) {
			/* nothing can ever progress again */
			for (i = 0; i < m.ncn; i++)
				if (!m.cn[i].done)
					r->stranded += (uint64_t)m.cn[i].w;
			break;
		}
		dt = tn - t;
		if (seg_add(r, &segcap, tn, g)) {
			sim_free(&m);
			return 1;
		}
		for (i = 2 * m.nhl; i < m.nl; i++)
			m.bits[i] += m.wf.F[i] * 1e9 * dt;
		for (i = 0; i < m.ncn; i++) {
			struct conn *cn = &m.cn[i];
			double tc;

			if (cn->done || cn->idle || cn->rate <= 0)
				continue;
			tc = t + cn->rem * 8 / (cn->rate * cn->eff * 1e9);
			if (!kind && tc <= tn * (1 + 1e-12)) {
				/* drained */
				double st = 0;

				cn->rem = 0;
				for (s = cn->sf0; s < cn->sf0 + cn->nsf; s++)
					st += m.stuck[s];
				if (st > 0) {
					cn->idle = 1;
				} else {
					cn->done = 1;
					left--;
				}
				continue;
			}
			cn->rem -= cn->rate * cn->eff * 1e9 * dt / 8;
			if (cn->rem < 0)
				cn->rem = 0;
		}
		t = tn;
		r->events += !kind;
	}
	r->jct_s = r->stranded ? INFINITY : t;
	for (i = 2 * m.nhl; i < m.nl; i++) {
		double u = t > 0 ? m.bits[i] / (c->uplink_gbps * 1e9 * t) : 0;

		tot += u;
		bits_cap += 1;
		if (u > r->max_uplink)
			r->max_uplink = u;
	}
	r->util = bits_cap > 0 ? tot / bits_cap : 0;
	r->runtime_s = now_s() - t0;
	sim_free(&m);
	return 0;
}

void spray_result_free(struct spray_result *r)
{
	free(r->seg);
	r->seg = NULL;
	r->nseg = 0;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */

void spray_cfg_default(struct spray_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->leaves = 8;
	c->spines = 4;
	c->hosts = 4;
	c->host_gbps = 100;
	c->uplink_gbps = 100;
	c->bytes = 1 << 30;
	c->paths = 4;
	c->seed = 1;
	c->traffic = SPRAY_TRAFFIC_RING;
	c->detect_ms = 1;
	c->path_overhead = 1;
	c->nmodes = 3;
	c->modes[0] = SPRAY_MODE_ECMP;
	c->modes[1] = SPRAY_MODE_SPRAY;
	c->modes[2] = SPRAY_MODE_FAILOVER;
	c->aggregate = 1;
	c->buckets = 100;
}

static int bad(FILE *err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		fputs("spraysim: ", err);
		va_start(ap, fmt);
		vfprintf(err, fmt, ap);
		va_end(ap);
		fputc('\n', err);
	}
	return 2;
}

static int get_int(const char *opt, const char *v, long lo, long hi, int *out,
		   FILE *err)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		return bad(err, "%s: '%s' is not an integer in [%ld, %ld]",
			   opt, v, lo, hi);
	*out = (int)x;
	return 0;
}

static int get_dbl(const char *opt, const char *v, double lo, double hi,
		   int lo_open, double *out, FILE *err)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi ||
	    (lo_open && x <= lo))
		return bad(err, "%s: '%s' is not a number in %c%g, %g]",
			   opt, v, lo_open ? '(' : '[', lo, hi);
	*out = x;
	return 0;
}

/* Integer with an optional K, M, G or T suffix (powers of 1024). */
static int get_bytes(const char *v, uint64_t *out, FILE *err)
{
	unsigned long long x;
	uint64_t mul = 1;
	char *end;

	errno = 0;
	if (*v == '-' || *v == '+')
		return bad(err, "--bytes: '%s' is not a positive size", v);
	x = strtoull(v, &end, 10);
	if (errno || end == v)
		return bad(err, "--bytes: '%s' is not a positive size", v);
	switch (*end) {
	case 'k': case 'K':
		mul = 1ULL << 10; end++; break;
	case 'm': case 'M':
		mul = 1ULL << 20; end++; break;
	case 'g': case 'G':
		mul = 1ULL << 30; end++; break;
	case 't': case 'T':
		mul = 1ULL << 40; end++; break;
	}
	if (*end || x == 0 || x > MAX_BYTES / mul)
		return bad(err, "--bytes: '%s' must be 1 .. 1e15 bytes", v);
	*out = x * mul;
	return 0;
}

static int get_modes(struct spray_cfg *c, const char *v, FILE *err)
{
	char buf[128], *tok, *save = NULL;
	int seen[SPRAY_NMODES] = { 0 };

	if (strlen(v) >= sizeof(buf))
		return bad(err, "--mode: list too long");
	strcpy(buf, v);
	c->nmodes = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int m;

		for (m = 0; m < SPRAY_NMODES; m++)
			if (!strcmp(tok, spray_mode_name(m)))
				break;
		if (m == SPRAY_NMODES)
			return bad(err, "--mode: unknown mode '%s' (ecmp, spray, spray-failover)",
				   tok);
		if (seen[m]++)
			return bad(err, "--mode: '%s' given twice", tok);
		c->modes[c->nmodes++] = m;
	}
	if (!c->nmodes)
		return bad(err, "--mode: empty list");
	return 0;
}

static int get_fail_link(struct spray_cfg *c, const char *v, FILE *err)
{
	int l, s, n = 0;
	char tail;

	if (sscanf(v, "%d:%d%n%c", &l, &s, &n, &tail) != 2 || !n ||
	    v[n] || l < 0 || s < 0)
		return bad(err, "--fail-link: '%s' is not LEAF:SPINE", v);
	if (c->nfail_link >= SPRAY_MAX_FAIL_LINKS)
		return bad(err, "--fail-link: at most %d", SPRAY_MAX_FAIL_LINKS);
	c->fail_link[c->nfail_link][0] = l;
	c->fail_link[c->nfail_link][1] = s;
	c->nfail_link++;
	return 0;
}

int spray_load_calib(struct spray_cfg *c, const char *path, FILE *err)
{
	char line[256];
	FILE *f = fopen(path, "r");
	int ln = 0, rc = 0;

	if (!f)
		return bad(err, "--calib: %s: %s", path, strerror(errno));
	while (!rc && fgets(line, sizeof(line), f)) {
		char *k = line, *v, *e;

		ln++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = bad(err, "%s:%d: line too long", path, ln);
			break;
		}
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || *k == '\n' || *k == '\r' || !*k)
			continue;
		v = strchr(k, '=');
		if (!v) {
			rc = bad(err, "%s:%d: expected key=value", path, ln);
			break;
		}
		*v++ = 0;
		for (e = v + strlen(v); e > v && strchr(" \t\r\n", e[-1]); e--)
			;
		*e = 0;
		for (e = k + strlen(k); e > k && strchr(" \t", e[-1]); e--)
			;
		*e = 0;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcmp(k, "uplink_gbps"))
			rc = get_dbl(k, v, 0, MAX_GBPS, 1, &c->uplink_gbps, err);
		else if (!strcmp(k, "host_gbps"))
			rc = get_dbl(k, v, 0, MAX_GBPS, 1, &c->host_gbps, err);
		else if (!strcmp(k, "detect_ms"))
			rc = get_dbl(k, v, 0, MAX_MS, 0, &c->detect_ms, err);
		else if (!strcmp(k, "path_overhead"))
			rc = get_dbl(k, v, 0, 1, 1, &c->path_overhead, err);
		else
			rc = bad(err, "%s:%d: unknown key '%s'", path, ln, k);
	}
	fclose(f);
	return rc;
}

enum {
	OPT_LEAVES = 256, OPT_SPINES, OPT_HOSTS, OPT_HOSTG, OPT_UPG, OPT_BYTES,
	OPT_PATHS, OPT_SEED, OPT_TRAFFIC, OPT_FAIL, OPT_FAILLINK, OPT_FAILAT,
	OPT_DETECT, OPT_MODE, OPT_NOAGG, OPT_CSV, OPT_TIMELINE, OPT_GNUPLOT,
	OPT_CALIB, OPT_BUCKETS, OPT_OVERHEAD, OPT_HELP,
};

static const struct option spray_opts[] = {
	{ "leaves", required_argument, NULL, OPT_LEAVES },
	{ "spines", required_argument, NULL, OPT_SPINES },
	{ "hosts-per-leaf", required_argument, NULL, OPT_HOSTS },
	{ "host-gbps", required_argument, NULL, OPT_HOSTG },
	{ "uplink-gbps", required_argument, NULL, OPT_UPG },
	{ "bytes", required_argument, NULL, OPT_BYTES },
	{ "paths", required_argument, NULL, OPT_PATHS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "traffic", required_argument, NULL, OPT_TRAFFIC },
	{ "fail", required_argument, NULL, OPT_FAIL },
	{ "fail-link", required_argument, NULL, OPT_FAILLINK },
	{ "fail-at-ms", required_argument, NULL, OPT_FAILAT },
	{ "detect-ms", required_argument, NULL, OPT_DETECT },
	{ "path-overhead", required_argument, NULL, OPT_OVERHEAD },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "no-aggregate", no_argument, NULL, OPT_NOAGG },
	{ "csv", required_argument, NULL, OPT_CSV },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "gnuplot", required_argument, NULL, OPT_GNUPLOT },
	{ "buckets", required_argument, NULL, OPT_BUCKETS },
	{ "calib", required_argument, NULL, OPT_CALIB },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *o)
{
	fputs("usage: spraysim [options]\n"
	      "  --leaves L (8)  --spines S (4)  --hosts-per-leaf H (4)\n"
	      "  --host-gbps G (100)  --uplink-gbps G (100)\n"
	      "  --traffic ring|alltoall (ring)  --bytes N[K|M|G|T] (1G)\n"
	      "  --mode ecmp,spray,spray-failover (all)  --paths P (4)\n"
	      "  --seed N (1)  --fail N  --fail-link LEAF:SPINE (repeatable)\n"
	      "  --fail-at-ms T (0)  --detect-ms D (1)  --path-overhead E (1)\n"
	      "  --no-aggregate  --csv FILE  --timeline FILE  --gnuplot FILE.gp\n"
	      "  --buckets N (100)  --calib FILE\n"
	      "Exit: 0 ok, 1 out of memory/file error, 2 usage, 3 stranded.\n",
	      o);
}

static int parse_one(struct spray_cfg *c, int o, const char *a, FILE *err)
{
	unsigned long long u;
	char *end;

	switch (o) {
	case OPT_LEAVES:
		return get_int("--leaves", a, 1, MAX_LEAVES, &c->leaves, err);
	case OPT_SPINES:
		return get_int("--spines", a, 1, MAX_SPINES, &c->spines, err);
	case OPT_HOSTS:
		return get_int("--hosts-per-leaf", a, 1, MAX_HOSTS, &c->hosts,
			       err);
	case OPT_HOSTG:
		return get_dbl("--host-gbps", a, 0, MAX_GBPS, 1, &c->host_gbps,
			       err);
	case OPT_UPG:
		return get_dbl("--uplink-gbps", a, 0, MAX_GBPS, 1,
			       &c->uplink_gbps, err);
	case OPT_BYTES:
		return get_bytes(a, &c->bytes, err);
	case OPT_PATHS:
		return get_int("--paths", a, 1, SPRAY_MAX_PATHS, &c->paths, err);
	case OPT_SEED:
		errno = 0;
		u = strtoull(a, &end, 0);
		if (errno || end == a || *end || *a == '-')
			return bad(err, "--seed: '%s' is not an unsigned integer",
				   a);
		c->seed = u;
		return 0;
	case OPT_TRAFFIC:
		if (!strcmp(a, "ring"))
			c->traffic = SPRAY_TRAFFIC_RING;
		else if (!strcmp(a, "alltoall"))
			c->traffic = SPRAY_TRAFFIC_ALLTOALL;
		else
			return bad(err, "--traffic: '%s' is not ring or alltoall",
				   a);
		return 0;
	case OPT_FAIL:
		return get_int("--fail", a, 0, MAX_LEAVES, &c->nfail, err);
	case OPT_FAILLINK:
		return get_fail_link(c, a, err);
	case OPT_FAILAT:
		return get_dbl("--fail-at-ms", a, 0, MAX_MS, 0, &c->fail_at_ms,
			       err);
	case OPT_DETECT:
		return get_dbl("--detect-ms", a, 0, MAX_MS, 0, &c->detect_ms,
			       err);
	case OPT_OVERHEAD:
		return get_dbl("--path-overhead", a, 0, 1, 1, &c->path_overhead,
			       err);
	case OPT_MODE:
		return get_modes(c, a, err);
	case OPT_NOAGG:
		c->aggregate = 0;
		return 0;
	case OPT_CSV:
		c->csv = a;
		return 0;
	case OPT_TIMELINE:
		c->timeline = a;
		return 0;
	case OPT_GNUPLOT:
		c->gnuplot = a;
		return 0;
	case OPT_BUCKETS:
		return get_int("--buckets", a, 1, 100000, &c->buckets, err);
	case OPT_CALIB:
		return 0;	/* loaded first, see spray_parse_args() */
	case OPT_HELP:
		usage(stdout);
		return 1;
	}
	return bad(err, "unknown option (try --help)");
}

/*
 * Options are read twice: --calib first, so that explicit options given
 * on the command line override the calibration file.
 */
int spray_parse_args(struct spray_cfg *c, int argc, char **argv, FILE *err)
{
	int o, i, rc, spray = 0;
	int64_t N;

	spray_cfg_default(c);
	opterr = 0;
	optind = 0;
	while ((o = getopt_long(argc, argv, "", spray_opts, NULL)) != -1) {
		if (o == OPT_CALIB) {
			c->calib = optarg;
			rc = spray_load_calib(c, optarg, err);
			if (rc)
				return rc;
		}
	}
	optind = 0;
	while ((o = getopt_long(argc, argv, "", spray_opts, NULL)) != -1) {
		if (o == '?' || o == ':') {
			if (optopt)
				return bad(err, "bad or incomplete option '%s' (try --help)",
					   argv[optind - 1]);
			return bad(err, "unknown option '%s' (try --help)",
				   argv[optind - 1]);
		}
		rc = parse_one(c, o, optarg, err);
		if (rc)
			return rc;
	}
	if (optind < argc)
		return bad(err, "unexpected argument '%s'", argv[optind]);

	/* cross-checks */
	N = (int64_t)c->leaves * c->hosts;
	if (N < 2)
		return bad(err, "need at least 2 hosts (leaves x hosts-per-leaf)");
	if (c->traffic == SPRAY_TRAFFIC_RING && N > MAX_RING_HOSTS)
		return bad(err, "ring: at most %d hosts", MAX_RING_HOSTS);
	if (c->traffic == SPRAY_TRAFFIC_ALLTOALL && N * (N - 1) > MAX_FLOWS)
		return bad(err, "alltoall: at most %d flows (%lld hosts given)",
			   MAX_FLOWS, (long long)N);
	for (i = 0; i < c->nmodes; i++)
		spray |= c->modes[i] != SPRAY_MODE_ECMP;
	if (spray && c->paths > c->spines)
		return bad(err, "--paths %d exceeds --spines %d", c->paths,
			   c->spines);
	if (spray && N * c->paths > MAX_SUBFLOWS)
		return bad(err, "too many sub-flows");
	if (c->nfail > c->leaves * c->spines)
		return bad(err, "--fail %d: only %d leaf-spine links", c->nfail,
			   c->leaves * c->spines);
	for (i = 0; i < c->nfail_link; i++)
		if (c->fail_link[i][0] >= c->leaves ||
		    c->fail_link[i][1] >= c->spines)
			return bad(err, "--fail-link %d:%d: no such leaf:spine",
				   c->fail_link[i][0], c->fail_link[i][1]);
	return 0;
}

#ifndef SPRAYSIM_NO_MAIN
/* ------------------------------------------------------------------ */
/* Output                                                              */

static void fmt_row(FILE *o, const struct spray_result *r, int csv)
{
	char jct[32];

	if (isfinite(r->jct_s))
		snprintf(jct, sizeof(jct), "%.6f", r->jct_s * 1e3);
	else
		snprintf(jct, sizeof(jct), "inf");
	if (csv)
		fprintf(o, "%s,%s,%.3f,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%.3f\n", spray_mode_name(r->mode), jct,
			r->util * 100, r->max_uplink * 100, r->conns,
			r->events, r->stranded, r->sim_conns, r->runtime_s);
	else
		fprintf(o, "%-15s %14s %8.2f %9.2f %10" PRIu64 " %8" PRIu64
			" %8" PRIu64 " %9" PRIu64 " %8.3f\n",
			spray_mode_name(r->mode), jct, r->util * 100,
			r->max_uplink * 100, r->conns, r->events, r->stranded,
			r->sim_conns, r->runtime_s);
}

static const char csv_head[] =
	"mode,jct_ms,util_pct,max_uplink_pct,conns,events,stranded,sim_conns,runtime_s\n";

static int write_timeline(const struct spray_cfg *c,
			  const struct spray_result *r, int n)
{
	FILE *o = fopen(c->timeline, "w");
	double tmax = 0, w;
	int i, b;
	size_t *cur;

	if (!o) {
		fprintf(stderr, "spraysim: %s: %s\n", c->timeline,
			strerror(errno));
		return 1;
	}
	cur = calloc(n, sizeof(*cur));
	if (!cur) {
		fclose(o);
		return 1;
	}
	for (i = 0; i < n; i++)
		if (r[i].nseg && r[i].seg[r[i].nseg - 1].t_end > tmax)
			tmax = r[i].seg[r[i].nseg - 1].t_end;
	w = tmax / c->buckets;
	fprintf(o, "# t_ms");
	for (i = 0; i < n; i++)
		fprintf(o, " %s_gbps", spray_mode_name(r[i].mode));
	fprintf(o, "\n");
	for (b = 0; b < c->buckets && w > 0; b++) {
		double lo = b * w, hi = lo + w;

		fprintf(o, "%.6f", (lo + w / 2) * 1e3);
		for (i = 0; i < n; i++) {
			/* mean goodput over the bucket */
			double acc = 0, prev;
			size_t k = cur[i];

			while (k < r[i].nseg && r[i].seg[k].t_end <= lo)
				k++;
			cur[i] = k;
			for (; k < r[i].nseg; k++) {
				double a, e;

				prev = k ? r[i].seg[k - 1].t_end : 0;
				a = prev > lo ? prev : lo;
				e = r[i].seg[k].t_end < hi ? r[i].seg[k].t_end : hi;
				if (e > a)
					acc += r[i].seg[k].gbps * (e - a);
				if (r[i].seg[k].t_end >= hi)
					break;
			}
			fprintf(o, " %.3f", acc / w);
		}
		fprintf(o, "\n");
	}
	free(cur);
	if (fclose(o)) {
		fprintf(stderr, "spraysim: %s: write failed\n", c->timeline);
		return 1;
	}
	return 0;
}

static int write_gnuplot(const struct spray_cfg *c,
			 const struct spray_result *r, int n)
{
	FILE *o = fopen(c->gnuplot, "w");
	const char *data = c->timeline ? c->timeline : "timeline.dat";
	int i;

	if (!o) {
		fprintf(stderr, "spraysim: %s: %s\n", c->gnuplot,
			strerror(errno));
		return 1;
	}
	fprintf(o, "# spraysim timeline plot: gnuplot %s\n", c->gnuplot);
	fprintf(o, "set terminal pngcairo size 1000,500\n");
	fprintf(o, "set output '%s.png'\n", data);
	fprintf(o, "set xlabel 'time (ms)'\nset ylabel 'goodput (Gbit/s)'\n");
	fprintf(o, "set key outside\nset grid\n");
	fprintf(o, "plot ");
	for (i = 0; i < n; i++)
		fprintf(o, "%s'%s' using 1:%d with steps title '%s'",
			i ? ", \\\n     " : "", data, i + 2,
			spray_mode_name(r[i].mode));
	fprintf(o, "\n");
	if (fclose(o)) {
		fprintf(stderr, "spraysim: %s: write failed\n", c->gnuplot);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct spray_cfg c;
	struct spray_result r[SPRAY_NMODES];
	int i, rc, st = 0;
	FILE *csv = NULL;

	rc = spray_parse_args(&c, argc, argv, stderr);
	if (rc == 1)
		return 0;	/* --help */
	if (rc)
		return rc;
	if (c.gnuplot && !c.timeline)
		fprintf(stderr, "spraysim: note: --gnuplot without --timeline plots 'timeline.dat'\n");
	printf("# %d leaves x %d spines, %d hosts/leaf, host %g Gbit/s, uplink %g Gbit/s, %s %" PRIu64 " bytes, paths %d, seed %" PRIu64 "\n",
	       c.leaves, c.spines, c.hosts, c.host_gbps, c.uplink_gbps,
	       c.traffic == SPRAY_TRAFFIC_RING ? "ring" : "alltoall", c.bytes,
	       c.paths, c.seed);
	if (c.nfail || c.nfail_link)
		printf("# failures: %d random + %d given cables at %g ms, detect %g ms\n",
		       c.nfail, c.nfail_link, c.fail_at_ms, c.detect_ms);
	printf("%-15s %14s %8s %9s %10s %8s %8s %9s %8s\n", "mode", "jct_ms",
	       "util_%", "maxup_%", "conns", "events", "stranded",
	       "sim_conns", "run_s");
	for (i = 0; i < c.nmodes; i++) {
		rc = spray_run(&c, c.modes[i], &r[i]);
		if (rc) {
			fprintf(stderr, "spraysim: %s: %s\n",
				spray_mode_name(c.modes[i]),
				rc == 2 ? "instance too large" : "out of memory");
			while (i-- > 0)
				spray_result_free(&r[i]);
			return rc;
		}
		fmt_row(stdout, &r[i], 0);
		fflush(stdout);
		if (r[i].stranded)
			st = 3;
	}
	if (c.csv) {
		csv = fopen(c.csv, "w");
		if (!csv) {
			fprintf(stderr, "spraysim: %s: %s\n", c.csv,
				strerror(errno));
			st = 1;
		} else {
			fputs(csv_head, csv);
			for (i = 0; i < c.nmodes; i++)
				fmt_row(csv, &r[i], 1);
			if (fclose(csv)) {
				fprintf(stderr, "spraysim: %s: write failed\n",
					c.csv);
				st = 1;
			}
		}
	}
	if (c.timeline && write_timeline(&c, r, c.nmodes))
		st = 1;
	if (c.gnuplot && write_gnuplot(&c, r, c.nmodes))
		st = 1;
	for (i = 0; i < c.nmodes; i++)
		spray_result_free(&r[i]);
	return st;
}
#endif
