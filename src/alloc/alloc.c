// SPDX-License-Identifier: MIT
/*
 * alloc.c - uswap_alloc(): the fast path on this CPU's cached cluster and
 * the slow path that finds a new cluster inside one device. Choosing the
 * device is queue.c's job.
 *
 * The order of tries inside a device is the kernel's after "mm, swap:
 * improve cluster scan strategy" (seed 2): the CPU's cluster, then
 * nonfull[order], then one free cluster, then ONE frag[order] cluster
 * (never a walk of the whole frag list), then for order 0 only, slots
 * stolen from other orders' clusters.
 *
 * Lock order: per-CPU lock -> ci->lock -> si->lock (see types.h).
 */
#include "alloc/alloc.h"
#include "util/percpu.h"
#include "util/rcu.h"

/*
 * cursor_advance() - after an allocation attempt in the CPU's cluster @ci,
 * remember where to look next, or give the cluster up: a cluster with no
 * room for another folio of this order is filed by fill level and the
 * cursor cleared (the kernel stores next or SWAP_ENTRY_INVALID the same way).
 * Context: ci->lock and this CPU's lock held.
 */
static void cursor_advance(struct alloc_ctx *ctx, struct swap_device *si,
			   struct swap_cluster_info *ci, uint32_t off,
			   unsigned int order)
{
	uint32_t *next = &si->cursors[ctx->cpu].next[order];
	unsigned int nr = 1u << order;

	if (off && ci->count + nr <= CLUSTER_SLOTS) {
		uint32_t n = off + nr;

		*next = n % CLUSTER_SLOTS ? n : cluster_first(si, ci);
		return;
	}
	*next = 0;
	cluster_relocate(si, ci, ctx->st);
}

/*
 * alloc_fast() - allocate from this CPU's current cluster of @order on @si.
 * Takes only that cluster's lock. The cluster may have changed hands since
 * the cursor was set: if it is still a PERCPU cluster of this order, use
 * it; if it was emptied onto the free list, take it back (its slots are
 * hot); anything else means another CPU filed it, so forget it.
 */
static uint32_t alloc_fast(struct alloc_ctx *ctx, struct swap_device *si,
			   unsigned int order)
{
	uint32_t *next = &si->cursors[ctx->cpu].next[order];
	struct swap_cluster_info *ci;
	uint32_t off;

	if (!*next)
		return 0;
	ci = cluster_of(si, *next);
	ci_lock(ci, ctx->st);
	if (ci->flags == CLUSTER_FLAG_FREE) {
		cluster_move(si, ci, CLUSTER_FLAG_PERCPU, ctx->st);
	} else if (ci->flags != CLUSTER_FLAG_PERCPU || ci->order != order) {
		ci_unlock(ci);
		*next = 0;
		return 0;
	}
	off = cluster_alloc_range(si, ci, *next, order, true /* wrap */);
	cursor_advance(ctx, si, ci, off, order);
	ci_unlock(ci);
	return off;
}

/* Scan an isolated (locked, PERCPU) cluster from its start and make it
 * this CPU's cluster for @order, or file it again if it has no room. */
static uint32_t take_cluster(struct alloc_ctx *ctx, struct swap_device *si,
			     struct swap_cluster_info *ci, unsigned int order)
{
	uint32_t off = cluster_alloc_range(si, ci, cluster_first(si, ci), order,
					   false);

	cursor_advance(ctx, si, ci, off, order);
	ci_unlock(ci);
	return off;
}

/* Try up to @budget clusters of @l; each failed one is filed away (a failed
 * nonfull cluster goes to frag, as in the kernel). */
static uint32_t take_from_list(struct alloc_ctx *ctx, struct swap_device *si,
			       struct cluster_list *l, unsigned int order,
			       uint32_t budget)
{
	struct swap_cluster_info *ci;
	uint32_t off;

	while (budget-- && (ci = cluster_isolate(si, l, ctx->st))) {
		off = take_cluster(ctx, si, ci, order);
		if (off)
			return off;
	}
	return 0;
}

/* Order-0 stealing from one list of another order's clusters: the cluster
 * keeps its order and goes back by fill level; the CPU does not adopt it. */
static uint32_t steal_from_list(struct alloc_ctx *ctx, struct swap_device *si,
				struct cluster_list *l)
{
	uint32_t budget = __atomic_load_n(&l->nr, __ATOMIC_RELAXED);
	struct swap_cluster_info *ci;
	uint32_t off;

	while (budget-- && (ci = cluster_isolate(si, l, ctx->st))) {
		off = cluster_alloc_range(si, ci, cluster_first(si, ci), 0, false);
		cluster_relocate(si, ci, ctx->st);
		ci_unlock(ci);
		if (off)
			return off;
	}
	return 0;
}

/* Last resort for order 0 while the device is not marked full: free slots
 * sit in clusters the lists did not offer (other CPUs' current clusters, a
 * frag[0] cluster beyond the one tried). Visit every cluster; this runs
 * only when a device is all but full, so its cost is bounded by fullness. */
static uint32_t steal_any(struct alloc_ctx *ctx, struct swap_device *si)
{
	for (uint32_t i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];
		uint32_t off = 0;

		if (device_full(si))
			return 0;
		ci_lock(ci, ctx->st);
		if (ci->flags != CLUSTER_FLAG_FREE && ci->flags != CLUSTER_FLAG_DISCARD &&
		    ci->flags != CLUSTER_FLAG_DISCARDING && ci->count < CLUSTER_SLOTS) {
			off = cluster_alloc_range(si, ci, cluster_first(si, ci), 0, false);
			if (ci->count == CLUSTER_SLOTS && ci->flags != CLUSTER_FLAG_PERCPU)
				cluster_move(si, ci, CLUSTER_FLAG_FULL, ctx->st);
		}
		ci_unlock(ci);
		if (off)
			return off;
	}
	return 0;
}

static __cold uint32_t alloc_slow(struct alloc_ctx *ctx, struct swap_device *si,
				  unsigned int order)
{
	struct swap_cluster_info *ci;
	uint32_t off;

	stat_inc(&ctx->st->alloc_slow);
	/* Nonfull first: they gained room since last scanned, and using them
	 * keeps free clusters whole for large folios (seed 2, patch 3). */
	if (order < USWAP_MAX_ORDER) {
		off = take_from_list(ctx, si, &si->nonfull_clusters[order], order,
				     si->nr_clusters);
		if (off)
			return off;
	}
	off = take_from_list(ctx, si, &si->free_clusters, order, 1);
	if (off)
		return off;
	/* One frag cluster, never the whole list: scanning every fragmented
	 * cluster per failing allocation was seed 2's lock-contention bug. */
	if (order < USWAP_MAX_ORDER) {
		ci = cluster_isolate(si, &si->frag_clusters[order], ctx->st);
		if (ci) {
			stat_inc(&ctx->st->frag_scans);
			off = take_cluster(ctx, si, ci, order);
			if (off)
				return off;
		}
	}
	if (order > 0)
		return 0;
	for (unsigned int o = 1; o < NR_ORDERS; o++) {
		off = steal_from_list(ctx, si, &si->frag_clusters[o]);
		if (!off)
			off = steal_from_list(ctx, si, &si->nonfull_clusters[o]);
		if (off)
			return off;
	}
	return steal_any(ctx, si);
}

/*
 * device_alloc() - allocate 2^@order slots on @si for the CPU in @ctx.
 * Return: 0 with *@offset set, or -ENOSPC (nothing of that order here).
 * Context: this CPU's lock held; inside an RCU read section pinning @si.
 */
int device_alloc(struct alloc_ctx *ctx, struct swap_device *si,
		 unsigned int order, uint32_t *offset)
{
	uint32_t off = alloc_fast(ctx, si, order);

	if (likely(off))
		stat_inc(&ctx->st->alloc_fast);
	else
		off = alloc_slow(ctx, si, order);
	*offset = off;
	return off ? 0 : -ENOSPC;
}

USWAP_API int uswap_alloc(struct uswap *u, unsigned int order, uswap_entry_t *entry)
{
	struct alloc_ctx ctx = { .u = u };
	struct uswap_pcpu *pc;
	struct ring_set *rs;
	int rc = -ENOSPC;

	if (unlikely(order >= NR_ORDERS))
		return -EINVAL;
	ctx.cpu = current_cpu(u->nr_cpus);
	pc = &u->pcpu[ctx.cpu];
	ctx.st = &pc->stats;
	spin_lock(&pc->lock, lstat(ctx.st, USWAP_LOCK_PERCPU));

	rcu_read_begin();
	rs = rcu_deref(u->rings);
	/* Strict priority: a lower ring is tried only when every device of
	 * the higher one is full. A ring that has room but no run of this
	 * order answers -E2BIG, which ends the walk. */
	for (unsigned int i = 0; rs && i < rs->nr; i++) {
		rc = ring_alloc(&ctx, rs->rings[i], order, entry);
		if (rc != -ENOSPC)
			break;
	}
	rcu_read_end(&u->rcu_hb);

	if (likely(rc == 0))
		stat_inc(&ctx.st->swpout[order]);
	else if (rc == -E2BIG)
		stat_inc(&ctx.st->swpout_fallback[order]);
	else
		stat_inc(&ctx.st->alloc_fail);
	spin_unlock(&pc->lock);
	return rc;
}
