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
 * Each step has a "before" switch for the lab (alloc_policy.h): free before
 * nonfull, the whole frag list, a device lock around everything with a
 * per-CPU slot cache, one cluster cursor per CPU across devices, and
 * synchronous discard of everything on an order-0 failure.
 *
 * Lock order: per-CPU lock -> ci->lock -> si->lock (see types.h).
 */
#include "alloc/alloc_internal.h"
#include "alloc/alloc_policy.h"
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
			   unsigned int order, uint32_t *next)
{
	unsigned int nr = 1u << order;

	if (off && ci->count + nr <= CLUSTER_SLOTS) {
		uint32_t n = off + nr;

		*next = n % CLUSTER_SLOTS ? n : cluster_first(si, ci);
		return;
	}
	*next = 0;
	cluster_relocate(si, ci, ctx->st);
}

/* Take 2^@order slots of the locked cluster @ci and run the caller's hook
 * on them while the lock is still held. A cluster that needs a table
 * when the device's pool is dry gives nothing and asks for a refill
 * (ctx->table_si): the walk stops there, as for a discard. */
static uint32_t take_range(struct alloc_ctx *ctx, struct swap_device *si,
			   struct swap_cluster_info *ci, uint32_t start,
			   unsigned int order, bool wrap)
{
	uint32_t off = cluster_alloc_range(si, ci, start, order, wrap);

	if (unlikely(off == CLUSTER_NO_TABLE)) {
		if (!ctx->table_si)
			ctx->table_si = si;
		return 0;
	}
	if (off && ctx->hook) {
		ctx->hook->fn(ctx->hook, si, ci, off);
		ctx->hook->ran = true;
	}
	return off;
}

/*
 * alloc_fast() - allocate from this CPU's current cluster of @order on @si.
 * Takes only that cluster's lock. The cluster may have changed hands since
 * the cursor was set: if it is still a PERCPU cluster of this order, use
 * it; if it was emptied onto the free list, take it back (its slots are
 * hot); anything else means another CPU filed it, so forget it.
 */
static uint32_t alloc_fast(struct alloc_ctx *ctx, struct swap_device *si,
			   unsigned int order, uint32_t *next)
{
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
	off = take_range(ctx, si, ci, *next, order, true /* wrap */);
	cursor_advance(ctx, si, ci, off, order, next);
	ci_unlock(ci);
	return off;
}

/* Scan an isolated (locked, PERCPU) cluster from its start and make it
 * this CPU's cluster for @order, or file it again if it has no room. */
static uint32_t take_cluster(struct alloc_ctx *ctx, struct swap_device *si,
			     struct swap_cluster_info *ci, unsigned int order)
{
	uint32_t off = take_range(ctx, si, ci, cluster_first(si, ci), order, false);

	cursor_advance(ctx, si, ci, off, order, ctx->next);
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
		if (l == &si->frag_clusters[order])
			stat_inc(&ctx->st->frag_scans);
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
		off = take_range(ctx, si, ci, cluster_first(si, ci), 0, false);
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
		stat_inc(&ctx->st->list_scan_steps);
		probe_step(USWAP_STEP_LIST, 1);
		ci_lock(ci, ctx->st);
		if (ci->flags != CLUSTER_FLAG_FREE && ci->flags != CLUSTER_FLAG_DISCARD &&
		    ci->flags != CLUSTER_FLAG_DISCARDING && ci->count < CLUSTER_SLOTS) {
			off = take_range(ctx, si, ci, cluster_first(si, ci), 0, false);
			if (ci->count == CLUSTER_SLOTS && ci->flags != CLUSTER_FLAG_PERCPU)
				cluster_move(si, ci, CLUSTER_FLAG_FULL, ctx->st);
		}
		ci_unlock(ci);
		if (off)
			return off;
	}
	return 0;
}

/* Nonfull first: they gained room since last scanned, and using them
 * keeps free clusters whole for large folios (seed 2, patch 3).
 * PREFER_FREE (seed 2 "before") swaps the two. */
static uint32_t alloc_new_cluster(struct alloc_ctx *ctx, struct swap_device *si,
				  unsigned int order)
{
	bool free_first = ctx->u->policy.cluster == USWAP_PREFER_FREE;
	uint32_t off = 0;

	if (free_first)
		off = take_from_list(ctx, si, &si->free_clusters, order, 1);
	if (!off && order < USWAP_MAX_ORDER)
		off = take_from_list(ctx, si, &si->nonfull_clusters[order], order,
				     si->nr_clusters);
	if (!off && !free_first)
		off = take_from_list(ctx, si, &si->free_clusters, order, 1);
	return off;
}

/* One frag cluster, never the whole list: scanning every fragmented
 * cluster per failing allocation was seed 2's lock-contention bug.
 * SCAN_ALL brings it back: every cluster the list held when the walk
 * began (frag_cluster_nr), each failed one filed at the tail again. */
static uint32_t alloc_frag(struct alloc_ctx *ctx, struct swap_device *si,
			   unsigned int order)
{
	struct cluster_list *l = &si->frag_clusters[order];
	uint32_t budget = 1;

	if (ctx->u->policy.frag == USWAP_FRAG_SCAN_ALL)
		budget = __atomic_load_n(&l->nr, __ATOMIC_RELAXED);
	return take_from_list(ctx, si, l, order, budget);
}

/* BOUNDED discard: a device whose only room is in clusters waiting for
 * discard asks for one to be discarded (the RFC's bound): the walk stops
 * there (-EAGAIN), uswap_alloc() discards with this CPU's lock dropped
 * and walks again, and this device takes the cluster before any device
 * behind it. SYNC_ALL does nothing here (alloc_policy()). */
static void want_discard(struct alloc_ctx *ctx, struct swap_device *si)
{
	if (ctx->u->policy.discard == USWAP_DISCARD_BOUNDED && !ctx->no_discard &&
	    !ctx->discard_si && __atomic_load_n(&si->discard_clusters.nr, __ATOMIC_RELAXED))
		ctx->discard_si = si;
}

static __cold uint32_t alloc_slow(struct alloc_ctx *ctx, struct swap_device *si,
				  unsigned int order)
{
	uint32_t off;

	stat_inc(&ctx->st->alloc_slow);
	off = alloc_new_cluster(ctx, si, order);
	if (!off && order < USWAP_MAX_ORDER && !ctx->table_si)
		off = alloc_frag(ctx, si, order);
	if (!off)
		want_discard(ctx, si);
	if (off || order > 0 || ctx->discard_si || ctx->table_si)
		return off;
	for (unsigned int o = 1; o < NR_ORDERS; o++) {
		off = steal_from_list(ctx, si, &si->frag_clusters[o]);
		if (!off)
			off = steal_from_list(ctx, si, &si->nonfull_clusters[o]);
		if (off)
			return off;
	}
	return steal_any(ctx, si);
}

/* ------------------------------------------------------------------
 * PERCPU_GLOBAL and LOCKING_DEVICE (alloc_policy.h): the long way round
 * ------------------------------------------------------------------ */

/* PERCPU_GLOBAL: this CPU leaves its cluster of @order (on whatever
 * device) for one on another device: file the old one by fill level, as
 * the kernel's frag-list filing after every allocation would have.
 * Context: this CPU's lock held; inside an RCU read section. */
static void global_cursor_drop(struct alloc_ctx *ctx, unsigned int order)
{
	struct pcpu_global_cursor *gc = &ctx->pc->global;
	struct swap_device *old = gc->dev[order];
	struct swap_cluster_info *ci;

	if (old && gc->next[order]) {
		ci = cluster_of(old, gc->next[order]);
		ci_lock(ci, ctx->st);
		if (ci->flags == CLUSTER_FLAG_PERCPU && ci->order == order)
			cluster_relocate(old, ci, ctx->st);
		ci_unlock(ci);
	}
	gc->dev[order] = NULL;
	gc->next[order] = 0;
}

/* Move up to a slot cache's worth of order-0 slots of @si into this CPU's
 * cache, still under the device lock: one batch per refill, as
 * get_swap_pages(SWAP_BATCH) under si->lock. */
static void slot_cache_fill(struct alloc_ctx *ctx, struct swap_device *si)
{
	struct slot_cache *sc = ctx->pc->slot_cache;
	struct alloc_hook *hook = ctx->hook;
	uint32_t off;

	ctx->hook = NULL; /* the hook is for the slot returned, not these */
	sc->head = sc->nr = 0;
	while (sc->nr < USWAP_SLOT_CACHE_SLOTS) {
		off = alloc_fast(ctx, si, 0, ctx->next);
		if (off)
			stat_inc(&ctx->st->alloc_fast);
		else
			off = alloc_slow(ctx, si, 0);
		if (!off)
			break;
		sc->slots[sc->nr++] = uswap_entry((unsigned int)si->type, off);
	}
	atomic_fetch_add(&si->cached_slots, sc->nr);
	stat_inc(&ctx->st->slot_cache_refills);
	ctx->hook = hook;
}

/*
 * device_alloc_policy() - device_alloc() under PERCPU_GLOBAL and/or
 * LOCKING_DEVICE. GLOBAL: the CPU's one cursor of @order moves to @si
 * (the old cluster is filed) unless it is already there. DEVICE: the
 * device lock is held from before the fast path to after the slow path
 * and the slot-cache refill.
 * Context: as device_alloc().
 */
static __cold uint32_t device_alloc_policy(struct alloc_ctx *ctx,
					   struct swap_device *si,
					   unsigned int order)
{
	struct uswap *u = ctx->u;
	uint32_t off;

	if (policy_percpu_global(u)) {
		struct pcpu_global_cursor *gc = &ctx->pc->global;

		if (gc->dev[order] != si) {
			global_cursor_drop(ctx, order);
			gc->dev[order] = si;
		}
		ctx->next = &gc->next[order];
	} else {
		ctx->next = &si->cursors[ctx->cpu].next[order];
	}
	if (policy_device_lock(u))
		spin_lock(&si->alloc_lock, lock_stat_of(ctx->st, USWAP_LOCK_DEVICE));
	off = alloc_fast(ctx, si, order, ctx->next);
	if (off)
		stat_inc(&ctx->st->alloc_fast);
	else
		off = alloc_slow(ctx, si, order);
	if (off && ctx->refill) {
		ctx->refill = false;
		slot_cache_fill(ctx, si);
	}
	if (policy_device_lock(u))
		spin_unlock(&si->alloc_lock);
	return off;
}

/*
 * device_alloc() - allocate 2^@order slots on @si for the CPU in @ctx.
 * Return: 0 with *@offset set, or -ENOSPC (nothing of that order here).
 * Context: this CPU's lock held; inside an RCU read section pinning @si.
 */
int device_alloc(struct alloc_ctx *ctx, struct swap_device *si,
		 unsigned int order, uint32_t *offset)
{
	uint32_t off;

	if (unlikely(ctx->u->policy_device_alloc)) {
		off = device_alloc_policy(ctx, si, order);
	} else {
		uint32_t *next = &si->cursors[ctx->cpu].next[order];

		off = alloc_fast(ctx, si, order, next);
		if (likely(off)) {
			stat_inc(&ctx->st->alloc_fast);
		} else {
			ctx->next = next;
			off = alloc_slow(ctx, si, order);
		}
	}
	*offset = off;
	return off ? 0 : -ENOSPC;
}

/* PERCPU_GLOBAL fast path: the CPU's cluster of @order, on whichever
 * device it is, before any ring or list is consulted (swap_alloc_fast()).
 * Return: 0 with *@entry, or -ENOSPC (go choose a device). */
static int alloc_global_fast(struct alloc_ctx *ctx, unsigned int order,
			     uswap_entry_t *entry)
{
	struct pcpu_global_cursor *gc = &ctx->pc->global;
	struct swap_device *si = gc->dev[order];
	uint32_t off;

	if (!si || !gc->next[order] || !device_available(si) || device_passed_over(ctx, si))
		return -ENOSPC;
	ctx->next = &gc->next[order];
	if (policy_device_lock(ctx->u))
		spin_lock(&si->alloc_lock, lock_stat_of(ctx->st, USWAP_LOCK_DEVICE));
	off = alloc_fast(ctx, si, order, ctx->next);
	if (policy_device_lock(ctx->u))
		spin_unlock(&si->alloc_lock);
	if (!off)
		return -ENOSPC;
	stat_inc(&ctx->st->alloc_fast);
	*entry = uswap_entry((unsigned int)si->type, off);
	return 0;
}

/* Pop a slot this CPU's cache holds. A slot of a device that stopped
 * taking allocations (swapoff began) is given back instead. Return: true
 * with *@entry. Context: this CPU's lock held; inside an RCU section. */
static bool slot_cache_pop(struct alloc_ctx *ctx, uswap_entry_t *entry)
{
	struct slot_cache *sc = ctx->pc->slot_cache;

	while (sc->head < sc->nr) {
		uswap_entry_t e = sc->slots[sc->head++];
		struct swap_device *si = rcu_deref(ctx->u->devs[uswap_entry_type(e)]);

		if (WARN_ONCE(!si, "slot cache outlived its device"))
			continue;
		atomic_fetch_sub(&si->cached_slots, 1);
		if (atomic_load_explicit(&si->writeok, memory_order_relaxed)) {
			*entry = e;
			stat_inc(&ctx->st->slot_cache_hits);
			return true;
		}
		slot_release(ctx->u, e, ctx->st);
	}
	return false;
}

/*
 * slot_cache_drain() - give back the cached slots of this CPU that lie on
 * @si (every device when NULL).
 * Context: @pc's lock held; inside an RCU read section.
 */
void slot_cache_drain(struct uswap *u, struct uswap_pcpu *pc,
		      struct swap_device *si, struct pcpu_stats *st)
{
	struct slot_cache *sc = pc->slot_cache;
	unsigned int keep = 0;

	for (unsigned int i = sc->head; i < sc->nr; i++) {
		uswap_entry_t e = sc->slots[i];

		struct swap_device *dev = rcu_deref(u->devs[uswap_entry_type(e)]);

		if (si && dev != si) {
			sc->slots[keep++] = e;
			continue;
		}
		if (WARN_ONCE(!dev, "slot cache outlived its device"))
			continue;
		atomic_fetch_sub(&dev->cached_slots, 1);
		slot_release(u, e, st);
	}
	sc->head = 0;
	sc->nr = keep;
}

USWAP_API void uswap_drain(struct uswap *u)
{
	if (!u || !policy_device_lock(u))
		return;
	rcu_read_begin();
	for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++) {
		struct uswap_pcpu *pc = &u->pcpu[cpu];

		spin_lock(&pc->lock, lock_stat_of(&pc->stats, USWAP_LOCK_PERCPU));
		slot_cache_drain(u, pc, NULL, &pc->stats);
		spin_unlock(&pc->lock);
	}
	rcu_read_end(&u->rcu_hb);
}

/* SYNC_ALL: after an order-0 failure, discard every pending cluster of
 * the first device (in type order, as swap_active_head) that has any.
 * Return: true if something was discarded (worth a retry).
 * Context: inside an RCU read section; no lock held (uswap_alloc()). */
static bool sync_discard_all(struct alloc_ctx *ctx)
{
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct swap_device *si = rcu_deref(ctx->u->devs[type]);

		if (!si || !atomic_load_explicit(&si->writeok, memory_order_relaxed) ||
		    !__atomic_load_n(&si->discard_clusters.nr, __ATOMIC_RELAXED))
			continue;
		stat_inc(&ctx->st->sync_discards);
		return device_discard(si, UINT32_MAX, ctx->st) > 0;
	}
	return false;
}

/* Choose devices and allocate through the per-priority rings. */
static int alloc_rings(struct alloc_ctx *ctx, unsigned int order,
		       uswap_entry_t *entry)
{
	struct ring_set *rs;
	int rc = -ENOSPC;

	rs = rcu_deref(ctx->u->rings);
	/* Strict priority: a lower ring is tried only when every device of
	 * the higher one is full. A ring that has room but no run of this
	 * order answers -E2BIG, which ends the walk. */
	for (unsigned int i = 0; rs && i < rs->nr; i++) {
		rc = ring_alloc(ctx, rs->rings[i], order, entry);
		if (rc != -ENOSPC)
			break;
	}
	return rc;
}

/* Choose devices by the policy's rule: the rings or the global list. */
static int alloc_select(struct alloc_ctx *ctx, unsigned int order,
			uswap_entry_t *entry)
{
	if (policy_rings(ctx->u))
		return alloc_rings(ctx, order, entry);
	return avail_alloc(ctx, order, entry);
}

/* uswap_alloc() under any policy but the default (u->policy_slow). */
static __cold int alloc_policy(struct alloc_ctx *ctx, unsigned int order,
			       uswap_entry_t *entry)
{
	struct uswap *u = ctx->u;
	int rc;

	if (ctx->pc->slot_cache && order == 0) {
		if (slot_cache_pop(ctx, entry))
			return 0;
		ctx->refill = true;
	}
	if (policy_percpu_global(u) && alloc_global_fast(ctx, order, entry) == 0)
		return 0;
	rc = alloc_select(ctx, order, entry);
	ctx->refill = false;
	if (rc == -ENOSPC && order == 0 && !ctx->no_discard &&
	    u->policy.discard == USWAP_DISCARD_SYNC_ALL) {
		ctx->sync_discard = true; /* uswap_alloc() discards, unlocked */
		rc = -EAGAIN;
	}
	return rc;
}

static inline int alloc_walk(struct alloc_ctx *ctx, unsigned int order,
			     uswap_entry_t *entry)
{
	if (unlikely(ctx->u->policy_slow))
		return alloc_policy(ctx, order, entry);
	return alloc_rings(ctx, order, entry);
}

/* The walk stopped for a discard (ctx->discard_si or ctx->sync_discard)
 * or for a table (ctx->table_si): run the discard, or refill the
 * device's table pool, with this CPU's lock dropped (a file's discard is
 * a system call, a refill calls the allocator; other allocations on this
 * CPU go on meanwhile), then walk again. A BOUNDED walk may stop at
 * another device's pending discard next time; after 8 the walk goes on
 * without asking. A refill that finds no memory ends the allocation with
 * -ENOMEM: the caller keeps its folio. Context: this CPU's lock held
 * (dropped and retaken); inside an RCU read section, which keeps the
 * device alive. */
static __cold int alloc_after_discard(struct alloc_ctx *ctx, unsigned int order,
				      uswap_entry_t *entry)
{
	int rc = -EAGAIN;

	for (unsigned int round = 0; rc == -EAGAIN; round++) {
		struct swap_device *si = ctx->discard_si, *tsi = ctx->table_si;
		bool sync = ctx->sync_discard;

		ctx->discard_si = ctx->table_si = NULL;
		ctx->sync_discard = false;
		if (!tsi)
			ctx->no_discard = sync || round == 7;
		spin_unlock(&ctx->pc->lock);
		if (tsi) {
			stat_inc(&ctx->st->table_refills);
			rc = table_pool_refill(tsi);
			/* Refilled 64 times and emptied by others each time:
			 * give up rather than spin. */
			if (round >= 64)
				rc = -ENOMEM;
		} else if (sync) {
			sync_discard_all(ctx);
		} else {
			device_discard(si, 1, ctx->st);
		}
		spin_lock(&ctx->pc->lock, lock_stat_of(ctx->st, USWAP_LOCK_PERCPU));
		if (rc == -ENOMEM) {
			stat_inc(&ctx->st->table_refill_fail);
			return rc;
		}
		rc = alloc_walk(ctx, order, entry);
	}
	return rc;
}

/*
 * alloc_hooked() - uswap_alloc() that runs @hook (may be NULL) under the
 * cluster lock of the slots it returns (see struct alloc_hook).
 * Return and context: as uswap_alloc().
 */
int alloc_hooked(struct uswap *u, unsigned int order, uswap_entry_t *entry,
		 struct alloc_hook *hook)
{
	struct alloc_ctx ctx;
	struct uswap_pcpu *pc;
	int rc;

	if (unlikely(order >= NR_ORDERS))
		return -EINVAL;
	ctx.u = u;
	ctx.cpu = current_cpu(u->nr_cpus);
	pc = &u->pcpu[ctx.cpu];
	ctx.pc = pc;
	ctx.st = &pc->stats;
	ctx.refill = false; /* ctx.next is set before every use */
	ctx.use_paused = ctx.skipped_paused = false;
	ctx.discard_si = ctx.table_si = NULL;
	ctx.sync_discard = ctx.no_discard = false;
	ctx.hook = hook;
	if (hook)
		hook->ran = false;
	rcu_read_begin();
	if (unlikely(atomic_load_explicit(&u->tables_low, memory_order_relaxed)))
		table_pools_refill(u); /* before any lock: it allocates */
	spin_lock(&pc->lock, lock_stat_of(ctx.st, USWAP_LOCK_PERCPU));

	rc = alloc_walk(&ctx, order, entry);
	if (unlikely(rc == -EAGAIN))
		rc = alloc_after_discard(&ctx, order, entry);
	if (unlikely(rc == -ENOSPC && ctx.skipped_paused)) {
		/* Only devices that failed a write have room: better
		 * another try there than a full answer. */
		ctx.use_paused = true;
		rc = alloc_walk(&ctx, order, entry);
		if (unlikely(rc == -EAGAIN))
			rc = alloc_after_discard(&ctx, order, entry);
	}
	rcu_read_end(&u->rcu_hb);

	if (likely(rc == 0))
		stat_inc(&ctx.st->swpout[order]);
	else if (rc == -E2BIG)
		stat_inc(&ctx.st->swpout_fallback[order]);
	else
		stat_inc(&ctx.st->alloc_fail);
	spin_unlock(&pc->lock);
	if (likely(rc == 0))
		trace_event(u, USWAP_TRACE_ALLOC, *entry, order);
	return rc;
}

USWAP_API void uswap_set_tracer(struct uswap *u, const struct uswap_tracer *t)
{
	atomic_store_explicit(&u->tracer, t, memory_order_release);
}

USWAP_API int uswap_alloc(struct uswap *u, unsigned int order, uswap_entry_t *entry)
{
	return alloc_hooked(u, order, entry, NULL);
}
