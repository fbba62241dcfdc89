// SPDX-License-Identifier: MIT
/*
 * swap.c - the swap path: uswap_swap_out(), uswap_swap_in(),
 * uswap_swap_free(), uswap_cache_drop().
 *
 * Slot states along the path (swap_map byte, see alloc/types.h):
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

#include "swap/swap.h"
#include "util/rcu.h"

#define SWAP_OUT_TRIES 4 /* fresh slots to try after write errors */

static int backend_write(struct swap_device *si, uint32_t off, unsigned int order,
			 const void *buf)
{
	struct backend *b = device_backend(si);

	return b ? b->ops->write(b, off, order, buf) : -EOPNOTSUPP;
}

/* Let go of the reference the creator of a cached copy holds: under the
 * cluster lock when the copy is in a table (@entry), else nobody else can
 * see it. Context: inside an RCU read section. */
static void drop_creator_ref(struct uswap *u, struct scache_folio *folio,
			     const uswap_entry_t *entry, struct pcpu_stats *st)
{
	struct swap_cluster_info *ci;
	uint32_t off;

	if (entry && lock_range(u, *entry, 1u << folio->order, st, &off, &ci)) {
		scache_put(folio);
		ci_unlock(ci);
		return;
	}
	scache_put(folio);
}

/* After the write: give the caller its reference and, unless a clean copy
 * is kept, drop the cache pin. Context: ci->lock held. */
static void swap_out_commit(struct swap_device *si, struct swap_cluster_info *ci,
			    uint32_t off, unsigned int nr, bool keep)
{
	for (uint32_t i = off; i < off + nr; i++) {
		slot_set_count(si, ci, i, 1); /* 0 -> 1 never allocates */
		if (!keep)
			si->swap_map[i] &= (uint8_t)~MAP_HAS_CACHE;
	}
}

/* One attempt on freshly allocated slots. With @folio, the copy is cached
 * while it is written and stays cached (clean) afterwards. Return: 0, or
 * the write error: the slots are then released, and a device whose write
 * failed is passed over for a while (device_write_failed()), so the retry
 * lands elsewhere. Context: inside an RCU read section. */
static int swap_out_try(struct uswap *u, uswap_entry_t entry, const void *pages,
			unsigned int order, struct scache_folio *folio,
			struct pcpu_stats *st)
{
	unsigned int nr = 1u << order;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	bool cached = false;
	uint32_t off;
	int err;

	si = lock_range(u, entry, nr, st, &off, &ci);
	if (!si)
		return -EINVAL; /* cannot happen: we just allocated it */
	if (folio)
		cached = scache_insert(ci, off % CLUSTER_SLOTS, folio) == 0;
	ci_unlock(ci);

	err = backend_write(si, off, order, folio ? folio->data : pages);

	if (!err)
		device_write_done(si);
	else if (err != -EOPNOTSUPP)
		device_write_failed(si);
	ci_lock(ci, st);
	if (!err) {
		swap_out_commit(si, ci, off, nr, cached);
	} else {
		if (cached)
			scache_remove(ci, off % CLUSTER_SLOTS, nr);
		put_range(si, ci, off, nr, true, st);
		if (err != -EOPNOTSUPP)
			stat_inc(&st->write_errors);
	}
	ci_unlock(ci);
	return err;
}

USWAP_API int uswap_swap_out(struct uswap *u, const void *pages, unsigned int order,
			     unsigned int flags, uswap_entry_t *entry)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	struct scache_folio *folio = NULL;
	int err = -EIO, write_err = 0;

	if (!pages || !entry || order >= NR_ORDERS || (flags & ~USWAP_SWAP_KEEP_CACHE))
		return -EINVAL;
	if (flags & USWAP_SWAP_KEEP_CACHE) {
		folio = scache_folio_new(pages, order);
		if (!folio)
			return -ENOMEM;
	}
	rcu_read_begin();
	for (int tries = 0; tries < SWAP_OUT_TRIES; tries++) {
		err = uswap_alloc(u, order, entry);
		if (err) {
			/* -E2BIG, -ENOSPC: the caller decides; after a write
			 * error, "no room left elsewhere" is that error. */
			if (err == -ENOSPC && write_err)
				err = write_err;
			break;
		}
		err = swap_out_try(u, *entry, pages, order, folio, st);
		if (!err || err == -EOPNOTSUPP)
			break;
		write_err = err;
	}
	if (folio)
		drop_creator_ref(u, folio, err ? NULL : entry, st);
	rcu_read_end(&u->rcu_hb);
	return err;
}

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
static bool range_in_use(struct swap_device *si, uint32_t off, unsigned int nr)
{
	for (uint32_t i = off; i < off + nr; i++)
		if (!slot_in_use(si->swap_map[i]))
			return false;
	return true;
}

USWAP_API int uswap_swap_in(struct uswap *u, uswap_entry_t entry, unsigned int order,
			    void *buf)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	unsigned int nr = 1u << order;
	struct scache_folio *folio = NULL;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	struct backend *b;
	uint32_t off;
	int err = 0;

	if (!buf)
		return -EINVAL;
	si = folio_cluster_lock(u, entry, order, st, &off, &ci);
	if (!si)
		return -EINVAL;
	if (!range_in_use(si, off, nr)) {
		ci_unlock(ci);
		err = -ENOENT;
		goto out;
	}
	folio = scache_lookup(ci, off % CLUSTER_SLOTS);
	if (folio && folio->order == order)
		scache_get(folio); /* copy it out without the lock held */
	else
		folio = NULL;
	ci_unlock(ci);

	stat_inc(&st->swpin);
	if (folio) {
		memcpy(buf, folio->data, folio_bytes(order));
		ci_lock(ci, st);
		scache_put(folio);
		ci_unlock(ci);
		stat_inc(&st->swpin_cached);
		err = 1;
		goto out;
	}
	b = device_backend(si);
	err = b ? b->ops->read(b, off, order, buf) : -EOPNOTSUPP;
	if (err) {
		stat_inc(&st->read_errors);
		err = err == -EOPNOTSUPP ? err : -EIO;
	}
out:
	rcu_read_end(&u->rcu_hb);
	return err;
}

/* A slot whose HAS_CACHE pin is someone else's: pinned (uswap_cache_pin()
 * or uswap_alloc()) with no copy of ours in the swap cache. That owner
 * lets go with uswap_put_folio(), which frees the slot; a free must not
 * drop the pin under it (free_swap_and_cache() leaves a slot that only
 * the cache holds to the folio's owner). Context: ci->lock held. */
static bool pin_held_elsewhere(struct swap_cluster_info *ci, uint8_t b, uint32_t off)
{
	return (b & MAP_HAS_CACHE) && !scache_lookup(ci, off % CLUSTER_SLOTS);
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
	uint8_t *map = si->swap_map;

	for (uint32_t i = off; i < off + nr; i++)
		if (!slot_in_use(map[i]) || !slot_count(ci, map[i], i % CLUSTER_SLOTS))
			return -ENOENT;
	for (uint32_t i = off; i < off + nr; i++) {
		unsigned int count = slot_count(ci, map[i], i % CLUSTER_SLOTS) - 1;
		bool foreign = pin_held_elsewhere(ci, map[i], i);

		slot_set_count(si, ci, i, count); /* shrinking cannot fail */
		if (count == 0 && !foreign) {
			map[i] |= MAP_HAS_CACHE;
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
	 * on the device, so dropping it costs no I/O. */
	if (scache_lookup(ci, off % CLUSTER_SLOTS) && range_in_use(si, off, nr) &&
	    put_range(si, ci, off, nr, true, st) == 0) {
		scache_remove(ci, off % CLUSTER_SLOTS, nr);
		err = 0;
	}
	ci_unlock(ci);
	rcu_read_end(&u->rcu_hb);
	return err;
}
