/* SPDX-License-Identifier: MIT */
/*
 * alloc_policy.h - the lab's allocator switches (struct uswap_policy, docs/lab.md):
 * each seed thread's "before" behaviour, chosen at uswap_create() and fixed
 * for the instance. The zero value of every switch is uswap's own design
 * (the "after"), and the default path tests the policy only where a
 * switch changes what happens, mostly on slow paths.
 *
 * Where each switch acts:
 *
 * select (queue.c; uswap_alloc() in alloc.c dispatches)
 *   RINGS          per-priority rings of devices, a reader per CPU that
 *                  moves on after ring_quota slots; no shared rotation
 *                  point. Seed 5 "after" (RFC "per-priority allocation
 *                  queues", 2026, unmerged).
 *   GLOBAL_ROTATE  one list of every device with free slots, highest
 *                  priority first, under one global lock (swap_avail_lock;
 *                  counted in USWAP_LOCK_GLOBAL). Every device-choosing
 *                  allocation walks it and requeues the chosen device behind
 *                  its equal-priority peers before trying it
 *                  (swap_alloc_slow() + plist_requeue(), 6.15..7.0); a
 *                  large folio gives up after the first device it tries
 *                  (the caller splits). A device that fills is taken off the
 *                  list and put back on its first free (del_from_avail_list
 *                  / add_to_avail_list). Seed 4 "after", seed 5 "before".
 *                  With PERCPU_PER_DEVICE there is no device-independent
 *                  fast path, so every allocation walks the list, as
 *                  get_swap_pages() did per call in 6.12..6.14; with
 *                  PERCPU_GLOBAL only the allocations that miss the CPU's
 *                  cached cluster do (the kernel's slow path).
 *   LEGACY_PRIO    GLOBAL_ROTATE's list and walk, but a device swapped on
 *                  with USWAP_PRIO_DEFAULT gets the next of -2, -3, ...
 *                  (--least_priority), so default devices fill one after
 *                  another; swapoff moves the later ones up by one. With
 *                  policy.nr_nodes > 1 each emulated node has its own list in
 *                  which that node's default-priority devices rank -1, ahead
 *                  of every other default device (swap_node(), per-node
 *                  swap_avail_heads); a CPU walks its node's list. Seed 4
 *                  "before" (<= 6.18; "select the swap device with default
 *                  priority round robin", 6.19).
 *
 * percpu (alloc.c: alloc_global_fast(), device_alloc_policy())
 *   PER_DEVICE     a cursor per device per CPU per order: a CPU has a
 *                  current cluster on every device (<= 6.14; seed 5 RFC).
 *   GLOBAL         one (device, next offset) per order per CPU across all
 *                  devices (percpu_swap_cluster, 6.15..7.0): the fast path
 *                  tries that device first, whatever the ring or list says;
 *                  taking a cluster on another device files the old one.
 *                  Seed 5 "before".
 *
 * frag (alloc.c: alloc_slow())
 *   SCAN_ONE       isolate one frag[order] cluster per failing attempt.
 *                  Seed 2 "after" ("improve cluster scan strategy", 6.18).
 *   SCAN_ALL       walk every cluster on frag[order] (as many as the list
 *                  held when the walk began, frag_cluster_nr), 6.12..6.17.
 *
 * cluster (alloc.c: alloc_slow())
 *   PREFER_NONFULL nonfull[order], then one free cluster. Seed 2 "after".
 *   PREFER_FREE    one free cluster, then nonfull[order] (6.12..6.17):
 *                  breaks free clusters up for small orders, which is what
 *                  starves large folios. Seed 2 "before".
 *
 * freelist (device.c: setup_cluster_lists())
 *   ASCENDING      free clusters listed in index order (6.18, seed 3
 *                  "after": "remove contention workaround for swap cache").
 *   INTERLEAVED    32 columns: 0, 32, 64, ..., then 1, 33, ..., so
 *                  successive free clusters are 64 MiB apart (the shuffle
 *                  that spread the 64 MiB swap-cache address spaces,
 *                  <= 6.17). Seed 3 "before".
 *
 * lock (alloc.c: device_alloc_policy(), the slot cache; table.c frees)
 *   CLUSTER_FIRST  cluster lock first, the device list lock only to move
 *                  a cluster between lists (6.14+). Seed 1 "after".
 *   DEVICE         a device lock (si->alloc_lock, counted in
 *                  USWAP_LOCK_DEVICE as si->lock was) held across the whole
 *                  allocation on that device, cluster locks nested inside
 *                  (6.12). Order-0 requests are served from a per-CPU cache
 *                  of USWAP_SLOT_CACHE_SLOTS slots, refilled in one batch
 *                  under that lock (mm/swap_slots.c). Frees
 *                  (uswap_put_folio(), uswap_free()) take the device lock
 *                  before the cluster lock, one free at a time: 6.12 took
 *                  si->lock for freed slots too, but through a per-CPU return
 *                  cache flushed in batches; batching would delay the
 *                  moment a freed slot is free, which uswap's contract (a
 *                  freed slot can be handed out again at once) forbids.
 *                  The swap path's own frees (uswap_swap_free()) go straight
 *                  to the cluster. Seed 1 "before" ("rework of swap
 *                  allocator locks", 6.14).
 *
 * discard (alloc.c: want_discard(), alloc_after_discard(),
 * sync_discard_all()); both discard with the CPU's lock dropped
 *   BOUNDED        a device whose only room waits for discard stops the
 *                  walk, discards one pending cluster and takes it before
 *                  any device behind it (the RFC's bounded discard; the
 *                  swap path discards the rest as clusters empty).
 *   SYNC_ALL       nothing in the slow path; an order-0 failure
 *                  discards every pending cluster of the first device with
 *                  any, synchronously, then retries (swap_sync_discard(),
 *                  late 2025 .. 7.0). Seed 5 "before".
 */
#ifndef USWAP_ALLOC_POLICY_H
#define USWAP_ALLOC_POLICY_H

#include "alloc/types.h"

static inline bool policy_rings(const struct uswap *u)
{
	return u->policy.select == USWAP_SELECT_RINGS;
}

static inline bool policy_legacy(const struct uswap *u)
{
	return u->policy.select == USWAP_SELECT_LEGACY_PRIO;
}

static inline bool policy_percpu_global(const struct uswap *u)
{
	return u->policy.percpu == USWAP_PERCPU_GLOBAL;
}

static inline bool policy_device_lock(const struct uswap *u)
{
	return u->policy.lock == USWAP_LOCKING_DEVICE;
}

/* Lists of the global device list (one, or one per node for LEGACY). */
static inline unsigned int policy_nr_avail_lists(const struct uswap *u)
{
	return policy_legacy(u) && u->policy.nr_nodes > 1 ? u->policy.nr_nodes : 1;
}

/* The emulated node of @cpu: CPUs split into nr_nodes equal blocks. */
static inline unsigned int policy_node_of(const struct uswap *u, unsigned int cpu)
{
	return (unsigned int)((uint64_t)cpu * policy_nr_avail_lists(u) / u->nr_cpus);
}

/* policy_check() - every field inside its enum. Return: 0 or -EINVAL. */
static inline int policy_check(const struct uswap_policy *p)
{
	if ((unsigned int)p->select > USWAP_SELECT_LEGACY_PRIO ||
	    (unsigned int)p->percpu > USWAP_PERCPU_GLOBAL ||
	    (unsigned int)p->frag > USWAP_FRAG_SCAN_ALL ||
	    (unsigned int)p->cluster > USWAP_PREFER_FREE ||
	    (unsigned int)p->freelist > USWAP_FREELIST_INTERLEAVED ||
	    (unsigned int)p->lock > USWAP_LOCKING_DEVICE ||
	    (unsigned int)p->discard > USWAP_DISCARD_SYNC_ALL ||
	    p->nr_nodes > USWAP_MAX_NODES)
		return -EINVAL;
	return 0;
}

#define FREELIST_COLUMNS 32 /* SWAP_CLUSTER_COLS: 64 MiB / 2 MiB clusters */

#endif /* USWAP_ALLOC_POLICY_H */
