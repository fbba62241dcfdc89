/* SPDX-License-Identifier: MIT */
/*
 * uswap/slots.h - the slot allocator's own calls (src/alloc/): allocate
 * slots, move their reference counts and HAS_CACHE pins, read them back.
 * A slot here is a bare number: no data moves.
 *
 * An embedder that stores pages never needs these: uswap_swap_out()
 * (<uswap/swap.h>) allocates the slots and writes them, uswap_swap_free()
 * drops the references and the data, uswap_cache_drop() the cached copy.
 * They are for callers that keep the data themselves, or none: the lab,
 * the benchmarks, the tests, and a swap path of one's own. Not included by
 * <uswap/uswap.h>. Mind the level in the names: uswap_free() drops slot
 * references only, uswap_swap_free() the folio too; uswap_cache_pin()
 * takes the pin a swap-in holds, uswap_cache_drop() drops a cached copy.
 */
#ifndef USWAP_SLOTS_H
#define USWAP_SLOTS_H

#include <stdbool.h>

#include <uswap/alloc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Allocation and the swap table
 *
 * Slot states (one 64-bit entry each in the cluster's swap table, as the
 * kernel's swap table once swap_map was removed): free (entry 0); a
 * reference count 1..USWAP_COUNT_MAX (bits 48..61; counts past 16382 live
 * in a per-cluster side table); the HAS_CACHE pin (bit 63) held by the
 * swap cache while a folio for the slot is in memory; BAD (bit 62); the
 * swap cache's folio (bits 0..47). A slot is free again when both its
 * count and its HAS_CACHE pin are gone. A cluster has its table (4 KiB)
 * only while it holds slots: taken from the device's pool, which is
 * refilled with no lock held, and given back when its count drops to 0.
 * ---------------------------------------------------------------------- */

/*
 * uswap_alloc() - allocate 2^@order contiguous, naturally aligned slots.
 * The slots start with the HAS_CACHE pin and a count of 0, as in the
 * kernel's folio_alloc_swap(): the folio is entering the swap cache.
 * Devices are tried by priority, high to low; inside a priority the
 * calling CPU's ring reader picks the device (round robin by quota). A
 * large folio is retried on every same-priority peer before -E2BIG and
 * never falls to a lower priority because a peer is fragmented. That is
 * the default policy; the lab's "before" policies (struct uswap_policy,
 * src/alloc/alloc_policy.h) change how the device is chosen: GLOBAL_ROTATE and
 * LEGACY_PRIO give -E2BIG after the first device with room, and
 * PERCPU_GLOBAL serves from the CPU's current cluster whatever its
 * device's priority. A device in a write pause (see uswap_swap_out()) is
 * passed over while a device of any priority has room, and used when
 * none has.
 * A cluster taking its first slot gets a swap table from the device's
 * pool; a dry pool is refilled with the per-CPU lock dropped and the walk
 * redone (table_refills).
 * @order: 0..9.
 * @entry: receives the first slot's entry.
 * Return: 0; -E2BIG (order > 0 and no device of the serving priority has a
 * free aligned run: split the folio; swpout_fallback[order] was counted);
 * -ENOSPC (no device has a free slot); -ENOMEM (no swap table could be
 * allocated: nothing changed; table_refill_fail was counted); -EINVAL
 * (order > 9).
 * Context: any thread; takes the per-CPU lock, then cluster locks, then
 * briefly a device list lock; allocates tables with no lock held.
 */
USWAP_API int uswap_alloc(struct uswap *u, unsigned int order, uswap_entry_t *entry);

/*
 * uswap_put_folio() - drop the HAS_CACHE pin of the 2^@order slots that
 * start at @entry (put_swap_folio()); slots left with no count are freed.
 * All slots lie in one cluster, so this is one cluster-lock round trip.
 * Freed slots are filed at once: a cluster that empties goes to the free
 * list (so order 9 can use it), a full or frag one to nonfull.
 * Return: 0; -EINVAL (bad type/offset, misaligned, order > 9); -ENOENT (a
 * slot is not pinned by the cache: nothing changed; counted in bad_free).
 * Context: any thread; takes one cluster lock, maybe a device list lock.
 */
USWAP_API int uswap_put_folio(struct uswap *u, uswap_entry_t entry, unsigned int order);

/*
 * uswap_dup() - add one reference to an in-use slot (swap_duplicate()).
 * Counts past 16382 (the most a table entry holds) move to a
 * per-cluster side table of 16-bit counts (count continuation's
 * role; the newest kernel's extend_table), which uswap_dup() allocates
 * outside the cluster lock on first need; the cluster frees it when its
 * last such count drops back.
 * Return: 0; -EINVAL (bad entry); -ENOENT (slot free or BAD);
 * -EOVERFLOW (count already USWAP_COUNT_MAX; unchanged); -ENOMEM (the count
 * would pass 16382 and the side table could not be allocated; unchanged).
 * Context: any thread; takes one cluster lock (again after allocating a
 * side table).
 */
USWAP_API int uswap_dup(struct uswap *u, uswap_entry_t entry);

/*
 * uswap_free() - drop one reference from @nr slots starting at @entry
 * (swap_free_nr()); slots left with no count and no cache pin are freed.
 * The range must lie inside one cluster (one lock round trip).
 * Return: 0; -EINVAL (bad entry, nr 0, range crosses a cluster); -ENOENT
 * (a slot has no reference: nothing changed; reported once per process on
 * stderr, as the kernel's "Unused swap offset entry", and counted in
 * bad_free).
 * Context: any thread; takes one cluster lock, maybe a device list lock.
 */
USWAP_API int uswap_free(struct uswap *u, uswap_entry_t entry, unsigned int nr);

/*
 * uswap_cache_pin() - set the HAS_CACHE pin on an in-use slot
 * (swapcache_prepare(): whoever succeeds owns the swap-in).
 * Return: 0; -EINVAL; -ENOENT (slot free or BAD); -EEXIST (already pinned).
 * Context: any thread; takes one cluster lock.
 */
USWAP_API int uswap_cache_pin(struct uswap *u, uswap_entry_t entry);

/*
 * uswap_slot_count() - read one slot: its reference count, and whether
 * the cache pin is held. For tests and tools; the answer may be stale as
 * soon as it returns.
 * Return: the count (0..USWAP_COUNT_MAX); -EINVAL; -ENOENT (free);
 * -EIO (the slot is BAD).
 */
USWAP_API long uswap_slot_count(struct uswap *u, uswap_entry_t entry, bool *has_cache);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_SLOTS_H */
