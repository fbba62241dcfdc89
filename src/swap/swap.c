// SPDX-License-Identifier: MIT
/*
 * swap.c - the end of the swap path: uswap_swap_free() and
 * uswap_cache_drop() (swap_out.c and swap_in.c hold the I/O).
 *
 * Slot states along the path (swap table entry, see alloc/types.h):
 *   allocated       HAS_CACHE, count 0: being written; cached if KEEP_CACHE
 *   written         count 1 (the caller's reference), HAS_CACHE only while
 *                   a clean copy stays cached
 *   being freed     count 0, HAS_CACHE: the last reference is gone, the
 *                   device is told to forget the data, then the slot is
 *                   released; the pin keeps anyone from reusing the slot
 *                   before the device has forgotten it.
 * Each entry point runs inside one RCU read section, so swapoff cannot
 * free the device or close its backend while I/O on it is in flight.
 */
#include <string.h>

#include "swap/swap_internal.h"
#include "util/rcu.h"

/*
 * folio_cluster_lock() - enter an RCU read section and lock the cluster of the
 * folio of 2^@order slots at @entry. Return: the device, or NULL (bad
 * entry, misaligned, order > 9) with the read section already left.
 */
static struct swap_device *folio_cluster_lock(struct uswap *u, uswap_entry_t entry,
				      unsigned int order, struct pcpu_stats *st,
				      uint32_t *off, struct swap_cluster_info **ci)
{
	struct swap_device *si;

	if (order >= NR_ORDERS || uswap_entry_offset(entry) % (1u << order))
		return NULL;
	rcu_read_begin();
	si = lock_range(u, entry, 1u << order, st, off, ci);
	if (!si)
		rcu_read_end(&u->rcu_hb);
	return si;
}

/* Every slot of the folio must hold a reference (or be pinned by a cached
 * copy) for a swap-in to make sense. Context: ci->lock held. */
bool range_in_use(struct swap_cluster_info *ci, uint32_t off, unsigned int nr)
{
	for (uint32_t i = off; i < off + nr; i++)
		if (!slot_in_use(ci, i % CLUSTER_SLOTS))
			return false;
	return true;
}

static bool range_pinned(struct swap_cluster_info *ci, uint32_t off, unsigned int nr)
{
	for (uint32_t i = off; i < off + nr; i++)
		if (!slot_has_cache(ci, i % CLUSTER_SLOTS))
			return false;
	return true;
}

bool range_referenced(struct swap_cluster_info *ci, uint32_t off, unsigned int nr)
{
	for (uint32_t i = off; i < off + nr; i++)
		if (!slot_count(ci, i % CLUSTER_SLOTS))
			return false;
	return true;
}

/* A slot whose HAS_CACHE pin is someone else's: pinned (uswap_cache_pin()
 * or uswap_alloc()) with no copy of ours in the swap cache. That owner
 * lets go with uswap_put_folio(), which frees the slot; a free must not
 * drop the pin under it (free_swap_and_cache() leaves a slot that only
 * the cache holds to the folio's owner). Context: ci->lock held. */
static bool pin_held_elsewhere(struct swap_cluster_info *ci, uint32_t ci_off)
{
	return slot_has_cache(ci, ci_off) && !scache_lookup(ci, ci_off);
}

/*
 * put_refs_keep_pinned() - drop one reference from each slot. A slot
 * whose last reference goes keeps (or takes) the HAS_CACHE pin so nobody
 * can allocate it before the device has forgotten its data, and gets a
 * bit in @released, unless the pin is another owner's: that slot is left
 * pinned, for its owner to free. Return: 0, -ENOENT (a slot had no
 * reference: nothing changed). Context: ci->lock held.
 */
static int put_refs_keep_pinned(struct swap_device *si, struct swap_cluster_info *ci,
				uint32_t off, unsigned int nr, uint64_t *released)
{
	for (uint32_t i = off; i < off + nr; i++)
		if (!slot_in_use(ci, i % CLUSTER_SLOTS) || !slot_count(ci, i % CLUSTER_SLOTS))
			return -ENOENT;
	for (uint32_t i = off; i < off + nr; i++) {
		unsigned int count = slot_count(ci, i % CLUSTER_SLOTS) - 1;
		bool foreign = pin_held_elsewhere(ci, i % CLUSTER_SLOTS);

		slot_set_count(si, ci, i, count); /* shrinking needs no side table */
		if (count == 0 && !foreign) {
			slot_pin_cache_locked(si, ci, i);
			released[(i - off) / 64] |= UINT64_C(1) << ((i - off) % 64);
		}
	}
	return 0;
}

/* Tell the device to forget released slots, in runs, if it asked to be
 * told (zram's swap_slot_free_notify: the memory goes back at once). A
 * file's page discard works per cluster, and ram keeps its pages mapped:
 * an madvise per freed page would cost more than the memory is worth.
 * Context: no lock held. */
static void discard_released(struct swap_device *si, uint32_t off, unsigned int nr,
			     const uint64_t *released)
{
	struct backend *b = device_backend(si);

	if (!b || !b->free_notify)
		return;
	for (unsigned int i = 0; i < nr;) {
		unsigned int run = 0;

		while (i + run < nr && (released[(i + run) / 64] >> ((i + run) % 64) & 1))
			run++;
		if (run)
			b->ops->discard(b, off + i, run);
		i += run ? run : 1;
	}
}

/* Release pinned slots: drop their cached copies and the pins, which
 * frees them. Context: ci->lock held. */
static void release_pinned(struct swap_device *si, struct swap_cluster_info *ci,
			   uint32_t off, unsigned int nr, const uint64_t *released,
			   struct pcpu_stats *st)
{
	for (unsigned int i = 0; i < nr; i++) {
		if (!(released[i / 64] >> (i % 64) & 1))
			continue;
		scache_remove(ci, (off + i) % CLUSTER_SLOTS, 1);
		put_range(si, ci, off + i, 1, true, st);
	}
}

USWAP_API int uswap_swap_free(struct uswap *u, uswap_entry_t entry, unsigned int order)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	uint64_t released[CLUSTER_SLOTS / 64] = { 0 };
	unsigned int nr = 1u << order;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;
	int err;

	si = folio_cluster_lock(u, entry, order, st, &off, &ci);
	if (!si)
		return -EINVAL;
	err = put_refs_keep_pinned(si, ci, off, nr, released);
	ci_unlock(ci);
	if (!err) {
		discard_released(si, off, nr, released);
		ci_lock(ci, st);
		release_pinned(si, ci, off, nr, released, st);
		ci_unlock(ci);
		if (si->page_discard) /* what this free emptied */
			device_discard(si, UINT32_MAX, st);
	} else {
		stat_inc(&st->bad_free);
	}
	rcu_read_end(&u->rcu_hb);
	return err;
}

USWAP_API int uswap_cache_drop(struct uswap *u, uswap_entry_t entry, unsigned int order)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	unsigned int nr = 1u << order;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;
	int err = -ENOENT;

	si = folio_cluster_lock(u, entry, order, st, &off, &ci);
	if (!si)
		return -EINVAL;
	/* Only a clean copy whose slots still hold references: the data is
	 * on the device, so dropping it costs no I/O. The copy leaves the
	 * table before the pins go (a cached slot is always pinned). */
	if (scache_lookup(ci, off % CLUSTER_SLOTS) && range_referenced(ci, off, nr) &&
	    range_pinned(ci, off, nr)) {
		scache_remove(ci, off % CLUSTER_SLOTS, nr);
		err = put_range(si, ci, off, nr, true, st);
	}
	ci_unlock(ci);
	rcu_read_end(&u->rcu_hb);
	return err;
}
