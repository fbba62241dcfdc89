// SPDX-License-Identifier: MIT
/*
 * queue.c - per-priority allocation queues (seed 5, "mm/swap: introduce
 * per-priority allocation queues"): device selection without a shared
 * rotation point.
 *
 * Each priority has a ring of its devices that never changes once
 * published. Each CPU keeps a reader into every ring and moves it to the
 * next device after `ring_quota` slots of allocations, so equal-priority devices
 * fill evenly (seed 4's round robin) while no two CPUs write the same
 * state. The quota is charged in slots, not folios, so devices stay even
 * by space when orders are mixed. swapon and swapoff build a new ring set and publish it with RCU;
 * a full device stays in its ring and is skipped (DEVICE_FULL).
 *
 * The "before" of seeds 4 and 5 lives here too (alloc_policy.h, GLOBAL_ROTATE
 * and LEGACY_PRIO): one list of the devices with free slots, by priority,
 * under one global lock, and every device choice requeues the chosen
 * device behind its equal-priority peers, the kernel's swap_avail_head
 * with plist_requeue(); LEGACY_PRIO keeps one such list per emulated node.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_policy.h"
#include "util/rcu.h"

void ring_set_free(struct ring_set *rs)
{
	if (!rs)
		return;
	for (unsigned int i = 0; i < rs->nr; i++) {
		free(rs->rings[i]->readers);
		free(rs->rings[i]);
	}
	free(rs);
}

static struct prio_ring *ring_new(struct uswap *u, int prio)
{
	struct prio_ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->prio = prio;
	r->readers = aligned_alloc(CACHELINE, u->nr_cpus * sizeof(*r->readers));
	if (!r->readers) {
		free(r);
		return NULL;
	}
	return r;
}

/* Start CPU c on device c mod nr, so CPUs spread over the ring at once. */
static void ring_init_readers(struct uswap *u, struct prio_ring *r)
{
	for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++) {
		r->readers[cpu].cursor = cpu % r->nr;
		r->readers[cpu].left = u->ring_quota;
	}
}

/* Find or append the ring for @prio, keeping rings[] highest first. */
static struct prio_ring *ring_set_get(struct uswap *u, struct ring_set *rs, int prio)
{
	unsigned int i;

	for (i = 0; i < rs->nr && rs->rings[i]->prio >= prio; i++)
		if (rs->rings[i]->prio == prio)
			return rs->rings[i];
	struct prio_ring *r = ring_new(u, prio);

	if (!r)
		return NULL;
	memmove(&rs->rings[i + 1], &rs->rings[i], (rs->nr - i) * sizeof(r));
	rs->rings[i] = r;
	rs->nr++;
	return r;
}

/*
 * ring_set_rebuild() - publish rings holding every writeok device, in
 * type order inside a priority, and free the old set after a grace
 * period. On return no allocator can still be using a device that is not
 * writeok (each allocation runs inside one RCU read section).
 * Return: 0, or -ENOMEM with the old set still published.
 * Context: u->swapon_lock held; may sleep.
 */
int ring_set_rebuild(struct uswap *u)
{
	struct ring_set *rs = calloc(1, sizeof(*rs)), *old;

	if (!rs)
		return -ENOMEM;
	avail_rebuild(u); /* before the grace period below */
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct swap_device *si = u->devs[type];
		struct prio_ring *r;

		if (!si || !atomic_load(&si->writeok))
			continue;
		r = ring_set_get(u, rs, si->prio);
		if (!r) {
			ring_set_free(rs);
			return -ENOMEM;
		}
		r->dev[r->nr++] = si;
	}
	for (unsigned int i = 0; i < rs->nr; i++)
		ring_init_readers(u, rs->rings[i]);

	old = u->rings;
	rcu_publish(&u->rings, rs);
	rcu_wait_readers(&u->rcu_hb);
	ring_set_free(old);
	return 0;
}

/*
 * ring_alloc() - allocate from the devices of one priority, starting at
 * this CPU's reader and visiting each peer once (the RFC's task-local
 * cursor: a retry walk sees every same-priority device exactly once).
 * Return: 0; -E2BIG when some device of the ring has room but none has a
 * run of this order (the caller must split, never fall lower); -ENOSPC
 * when every device is full or none could give an order-0 slot; -EAGAIN
 * when a device's only room waits for a discard (ctx->discard_si) or for
 * its table pool to be refilled (ctx->table_si).
 * Context: this CPU's lock held; inside an RCU read section.
 */
int ring_alloc(struct alloc_ctx *ctx, struct prio_ring *r, unsigned int order,
	       uswap_entry_t *entry)
{
	struct ring_reader *rd = &r->readers[ctx->cpu];
	unsigned int quota = ctx->u->ring_quota;
	bool any_room = false;
	uint32_t off;

	if (rd->left == 0) {
		rd->cursor = (rd->cursor + 1) % r->nr;
		rd->left = quota;
		stat_inc(&ctx->st->ring_advance);
	}
	for (unsigned int i = 0; i < r->nr; i++) {
		unsigned int idx = (rd->cursor + i) % r->nr;
		struct swap_device *si = r->dev[idx];

		if (!device_available(si) || device_passed_over(ctx, si))
			continue; /* full, going away or failing writes:
				     masked, not removed */
		if (device_alloc(ctx, si, order, &off)) {
			if (ctx->discard_si || ctx->table_si)
				return -EAGAIN; /* discard or refill first (alloc.c) */
			/* Room counts only if the device is still there: one
			 * that filled up or began swapoff meanwhile is no
			 * reason to split the folio. */
			any_room |= device_available(si);
			continue;
		}
		if (i) { /* the reader's device could not serve: move on */
			rd->cursor = idx;
			rd->left = quota;
			stat_inc(&ctx->st->ring_advance);
		}
		/* Charged in slots, so a mix of orders balances by space used:
		 * one order-9 folio spends a whole quota of 64. */
		rd->left = rd->left > (1u << order) ? rd->left - (1u << order) : 0;
		*entry = uswap_entry((unsigned int)si->type, off);
		return 0;
	}
	return any_room && order > 0 ? -E2BIG : -ENOSPC;
}

/* ------------------------------------------------------------------
 * GLOBAL_ROTATE and LEGACY_PRIO: the global device list(s)
 * ------------------------------------------------------------------ */

/* @si's priority on node @node's list: a node's own auto-numbered devices
 * rank -1 there, ahead of every other auto device (swap_node()). */
static int avail_key(struct uswap *u, struct swap_device *si, unsigned int node)
{
	if (policy_nr_avail_lists(u) > 1 && si->prio_auto && (unsigned int)si->node == node)
		return -1;
	return si->prio;
}

/* Insert behind every entry of an equal or higher key (plist_add()). */
static void avail_insert_locked(struct uswap *u, struct swap_device *si)
{
	for (unsigned int n = 0; n < policy_nr_avail_lists(u); n++) {
		struct avail_list *l = &u->avail[n];
		int key = avail_key(u, si, n);
		unsigned int i = 0;

		while (i < l->nr && l->key[i] >= key)
			i++;
		memmove(&l->dev[i + 1], &l->dev[i], (l->nr - i) * sizeof(l->dev[0]));
		memmove(&l->key[i + 1], &l->key[i], (l->nr - i) * sizeof(l->key[0]));
		l->dev[i] = si;
		l->key[i] = key;
		l->nr++;
	}
	si->on_avail = true;
}

static void avail_remove_locked(struct uswap *u, struct swap_device *si)
{
	for (unsigned int n = 0; n < policy_nr_avail_lists(u); n++) {
		struct avail_list *l = &u->avail[n];

		for (unsigned int i = 0; i < l->nr; i++) {
			if (l->dev[i] != si)
				continue;
			memmove(&l->dev[i], &l->dev[i + 1], (l->nr - i - 1) * sizeof(l->dev[0]));
			memmove(&l->key[i], &l->key[i + 1], (l->nr - i - 1) * sizeof(l->key[0]));
			l->nr--;
			break;
		}
	}
	si->on_avail = false;
}

/* Should @si be on the lists: taking allocations and not full. */
static bool avail_wanted(struct swap_device *si)
{
	return atomic_load(&si->writeok) && !device_full(si);
}

/*
 * avail_sync() - put @si on the global lists or take it off, to match
 * whether it is full now. Called after each change of the FULL mark, so
 * the last call sees the last change whatever the interleaving.
 * Context: ci->lock of the cluster that changed it held; takes avail_lock.
 */
void avail_sync(struct swap_device *si)
{
	struct uswap *u = si->owner;
	bool want;

	spin_lock(&u->avail_lock, lock_stat_of(this_cpu_stats(u), USWAP_LOCK_GLOBAL));
	want = avail_wanted(si);
	if (want && !si->on_avail)
		avail_insert_locked(u, si);
	else if (!want && si->on_avail)
		avail_remove_locked(u, si);
	spin_unlock(&u->avail_lock);
}

/*
 * avail_rebuild() - refill the global lists from u->devs[] (priorities
 * changed, a device came or is going). Rotation state starts over.
 * Context: u->swapon_lock held; the caller waits a grace period before
 * freeing a device taken off.
 */
void avail_rebuild(struct uswap *u)
{
	if (!u->avail)
		return;
	spin_lock(&u->avail_lock, lock_stat_of(this_cpu_stats(u), USWAP_LOCK_GLOBAL));
	for (unsigned int n = 0; n < policy_nr_avail_lists(u); n++)
		u->avail[n].nr = 0;
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct swap_device *si = u->devs[type];

		if (!si)
			continue;
		si->on_avail = false;
		if (avail_wanted(si))
			avail_insert_locked(u, si);
	}
	spin_unlock(&u->avail_lock);
}

/* Move entry @i behind the last entry of its key (plist_requeue()). */
static void avail_requeue_locked(struct avail_list *l, unsigned int i)
{
	struct swap_device *si = l->dev[i];
	unsigned int j = i;

	while (j + 1 < l->nr && l->key[j + 1] == l->key[i])
		j++;
	memmove(&l->dev[i], &l->dev[i + 1], (j - i) * sizeof(l->dev[0]));
	l->dev[j] = si;
}

/* The first device of @l not yet tried in this walk, requeued; NULL when
 * every one was. Context: avail_lock held. */
static struct swap_device *avail_next_locked(struct alloc_ctx *ctx, struct avail_list *l,
					     uint32_t tried)
{
	for (unsigned int i = 0; i < l->nr; i++) {
		struct swap_device *si = l->dev[i];

		if ((tried & (UINT32_C(1) << si->type)) || device_passed_over(ctx, si))
			continue;
		avail_requeue_locked(l, i);
		stat_inc(&ctx->st->avail_requeue);
		return si;
	}
	return NULL;
}

/*
 * avail_alloc() - choose a device the way the kernel's swap_alloc_slow()
 * does: under the global lock take the highest-priority device not tried
 * yet, requeue it behind its peers, drop the lock and try it; on failure
 * retake the lock and go on (the list may have changed meanwhile, so the
 * walk restarts from the head, skipping what was tried). A large folio
 * stops after the first device that still has room: the caller splits
 * (the "before" of the RFC's retry on every peer).
 * Return: as ring_alloc(). Context: this CPU's lock held; inside an RCU
 * read section, which keeps every device on the lists alive.
 */
int avail_alloc(struct alloc_ctx *ctx, unsigned int order, uswap_entry_t *entry)
{
	struct uswap *u = ctx->u;
	struct avail_list *l = &u->avail[policy_node_of(u, ctx->cpu)];
	uint32_t tried = 0, off;
	struct swap_device *si;

	for (;;) {
		spin_lock(&u->avail_lock, lock_stat_of(ctx->st, USWAP_LOCK_GLOBAL));
		si = avail_next_locked(ctx, l, tried);
		spin_unlock(&u->avail_lock);
		if (!si)
			return -ENOSPC;
		tried |= UINT32_C(1) << si->type;
		if (device_alloc(ctx, si, order, &off) == 0) {
			*entry = uswap_entry((unsigned int)si->type, off);
			return 0;
		}
		if (ctx->discard_si || ctx->table_si)
			return -EAGAIN; /* discard or refill first (alloc.c) */
		if (order > 0 && device_available(si))
			return -E2BIG;
	}
}
