// SPDX-License-Identifier: MIT
/*
 * swap_map.c - per-slot use counts and the HAS_CACHE pin (the kernel's
 * swap_map byte up to 7.0, include/linux/swap.h).
 *
 * A byte holds counts 0..62; a larger count sets MAP_CONTINUED and lives in
 * the cluster's side table ci->ext (the role of count continuation pages,
 * or the newest kernel's ci->extend_table), up to USWAP_COUNT_MAX. Every
 * operation validates all slots it touches before changing any, so a bad
 * call leaves the map exactly as it was.
 */
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "util/rcu.h"

unsigned int slot_count(const struct swap_cluster_info *ci, uint8_t b,
			       uint32_t ci_off)
{
	return b & MAP_CONTINUED ? ci->ext[ci_off] : b & MAP_COUNT_MASK;
}

static bool cluster_has_continued(const uint8_t *map)
{
	for (unsigned int i = 0; i < CLUSTER_SLOTS; i++)
		if (map[i] & MAP_CONTINUED)
			return true;
	return false;
}

/* The side table pointer is also read, without ci->lock, by the metadata
 * figure of uswap_device_info(): hence the atomic stores. */
void cluster_ext_free(struct swap_cluster_info *ci)
{
	free(ci->ext);
	__atomic_store_n(&ci->ext, NULL, __ATOMIC_RELAXED);
}

static bool cluster_ext_alloc(struct swap_cluster_info *ci)
{
	uint16_t *ext = ci->ext ? ci->ext : calloc(CLUSTER_SLOTS, sizeof(*ext));

	__atomic_store_n(&ci->ext, ext, __ATOMIC_RELAXED);
	return ext != NULL;
}

/* Store @count for the slot; the side table is allocated on first need and
 * freed when its last user drops back into the byte.
 * Return: 0, -ENOMEM (nothing changed). Context: ci->lock held. */
int slot_set_count(struct swap_device *si, struct swap_cluster_info *ci,
			  uint32_t off, unsigned int count)
{
	uint8_t *b = &si->swap_map[off];
	uint32_t ci_off = off % CLUSTER_SLOTS;
	uint8_t cache = *b & MAP_HAS_CACHE;

	if (count > MAP_COUNT_MAX) {
		if (!cluster_ext_alloc(ci))
			return -ENOMEM;
		ci->ext[ci_off] = (uint16_t)count;
		*b = cache | MAP_CONTINUED;
		return 0;
	}
	bool was_continued = *b & MAP_CONTINUED;

	*b = cache | (uint8_t)count;
	if (was_continued && !cluster_has_continued(si->swap_map + off - ci_off))
		cluster_ext_free(ci);
	return 0;
}

/*
 * slots_commit_locked() - the swap path's commit of a written folio: each
 * slot of [off, off + nr) gets its owner's first reference and, unless
 * @keep_cache (a clean copy stays in the swap cache), loses the HAS_CACHE
 * pin the allocation gave it. The slots stay in use either way.
 * Context: ci->lock held; every slot pinned with a count of 0.
 */
void slots_commit_locked(struct swap_device *si, struct swap_cluster_info *ci,
			 uint32_t off, unsigned int nr, bool keep_cache)
{
	lock_assert_held(&ci->lock);
	for (uint32_t i = off; i < off + nr; i++) {
		slot_set_count(si, ci, i, 1); /* 0 -> 1 never allocates */
		if (!keep_cache)
			si->swap_map[i] &= (uint8_t)~MAP_HAS_CACHE;
	}
}

/*
 * slot_pin_cache_locked() - set the HAS_CACHE pin of slot @off (kept if
 * already set), so that a slot whose last reference just went stays
 * allocated until the swap path has made its device forget the data.
 * Context: ci->lock held.
 */
void slot_pin_cache_locked(struct swap_device *si, struct swap_cluster_info *ci,
			   uint32_t off)
{
	lock_assert_held(&ci->lock);
	si->swap_map[off] |= MAP_HAS_CACHE;
}


/* Report a free of a slot that holds no reference once per instance-less
 * process (the kernel's "Unused swap offset entry") and count every one. */
static int bad_free(struct pcpu_stats *st, uswap_entry_t entry)
{
	stat_inc(&st->bad_free);
	WARN_ONCE(1, "free of unused swap entry type %u offset %llu",
		  uswap_entry_type(entry), (unsigned long long)uswap_entry_offset(entry));
	return -ENOENT;
}

/* Look up and lock the cluster holding [entry, entry + nr).
 * Return: the device, or NULL (-EINVAL) when the range is not inside one
 * cluster of a swapped-on device. Context: inside an RCU read section. */
struct swap_device *lock_range(struct uswap *u, uswap_entry_t entry,
				      unsigned int nr, struct pcpu_stats *st,
				      uint32_t *off, struct swap_cluster_info **ci)
{
	struct swap_device *si = device_lookup(u, entry, off);

	if (!si || nr == 0 || nr > CLUSTER_SLOTS ||
	    *off / CLUSTER_SLOTS != (*off + nr - 1) / CLUSTER_SLOTS ||
	    *off + nr > si->max)
		return NULL;
	*ci = cluster_of(si, *off);
	ci_lock(*ci, st);
	return si;
}

static void trace_freed(struct swap_device *si, uint32_t off, unsigned int nr);

/*
 * put_range() - drop one reference (@cache false) or the cache pin (@cache
 * true) of each slot in [off, off + nr) and free the slots left unused.
 * Return: 0 or -ENOENT (some slot lacks what is dropped; nothing changed).
 * Context: ci->lock held.
 */
int put_range(struct swap_device *si, struct swap_cluster_info *ci,
		     uint32_t off, unsigned int nr, bool cache, struct pcpu_stats *st)
{
	uint8_t *map = si->swap_map;
	unsigned int freed = 0;

	for (uint32_t i = off; i < off + nr; i++) {
		if (!slot_in_use(map[i]))
			return -ENOENT;
		if (cache ? !(map[i] & MAP_HAS_CACHE)
			  : !slot_count(ci, map[i], i % CLUSTER_SLOTS))
			return -ENOENT;
	}
	for (uint32_t i = off; i < off + nr; i++) {
		if (cache)
			map[i] &= (uint8_t)~MAP_HAS_CACHE;
		else /* shrinking never allocates, so this cannot fail */
			slot_set_count(si, ci, i, slot_count(ci, map[i], i % CLUSTER_SLOTS) - 1);
		if (map[i] == 0)
			freed++;
	}
	if (freed && unlikely(atomic_load_explicit(&si->owner->tracer, memory_order_relaxed)))
		trace_freed(si, off, nr);
	if (freed)
		cluster_slots_freed(si, ci, freed, st);
	return 0;
}

/* Tell the tracer of each run of slots in [off, off + nr) now free. */
static __cold void trace_freed(struct swap_device *si, uint32_t off, unsigned int nr)
{
	for (uint32_t i = off; i < off + nr;) {
		uint32_t j = i;

		if (si->swap_map[i]) {
			i++;
			continue;
		}
		while (j < off + nr && !si->swap_map[j])
			j++;
		trace_event(si->owner, USWAP_TRACE_FREE,
			    uswap_entry((unsigned int)si->type, i), j - i);
		i = j;
	}
}

/* put_entries() under LOCKING_DEVICE (alloc_policy.h): the free takes the
 * device lock before the cluster lock, as 6.12's frees went through
 * si->lock (one at a time here, not in return-cache batches). */
static __cold int put_entries_device_locked(struct uswap *u, uswap_entry_t entry,
					    unsigned int nr, bool cache)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	struct swap_device *si, *locked;
	struct swap_cluster_info *ci;
	uint32_t off;
	int err = -EINVAL;

	rcu_read_begin();
	locked = device_lookup(u, entry, &off);
	if (locked)
		spin_lock(&locked->alloc_lock, lstat(st, USWAP_LOCK_DEVICE));
	si = lock_range(u, entry, nr, st, &off, &ci);
	if (si) {
		err = put_range(si, ci, off, nr, cache, st);
		ci_unlock(ci);
	}
	if (locked)
		spin_unlock(&locked->alloc_lock);
	rcu_read_end(&u->rcu_hb);
	if (err == -EINVAL)
		return err;
	return err ? bad_free(st, entry) : 0;
}

static int put_entries(struct uswap *u, uswap_entry_t entry, unsigned int nr,
		       bool cache)
{
	struct pcpu_stats *st;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;
	int err;

	if (unlikely(u->policy.lock == USWAP_LOCKING_DEVICE))
		return put_entries_device_locked(u, entry, nr, cache);
	st = this_cpu_stats(u);
	rcu_read_begin();
	si = lock_range(u, entry, nr, st, &off, &ci);
	if (!si) {
		rcu_read_end(&u->rcu_hb);
		return -EINVAL;
	}
	err = put_range(si, ci, off, nr, cache, st);
	ci_unlock(ci);
	rcu_read_end(&u->rcu_hb);
	return err ? bad_free(st, entry) : 0;
}

/* slot_release() - drop the cache pin of one slot nobody was handed
 * (a slot cache's), which frees it. Context: inside an RCU read section. */
void slot_release(struct uswap *u, uswap_entry_t entry, struct pcpu_stats *st)
{
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;

	si = lock_range(u, entry, 1, st, &off, &ci);
	if (!si)
		return;
	WARN_ONCE(put_range(si, ci, off, 1, true, st), "slot cache held a free slot");
	ci_unlock(ci);
}

USWAP_API int uswap_put_folio(struct uswap *u, uswap_entry_t entry, unsigned int order)
{
	if (order >= NR_ORDERS || uswap_entry_offset(entry) % (1u << order))
		return -EINVAL;
	return put_entries(u, entry, 1u << order, true);
}

USWAP_API int uswap_free(struct uswap *u, uswap_entry_t entry, unsigned int nr)
{
	return put_entries(u, entry, nr, false);
}

/* Run @op on one slot with its cluster locked. */
static long with_slot(struct uswap *u, uswap_entry_t entry,
		      long (*op)(struct swap_device *, struct swap_cluster_info *,
				 uint32_t, void *),
		      void *arg)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;
	long ret = -EINVAL;

	rcu_read_begin();
	si = lock_range(u, entry, 1, st, &off, &ci);
	if (si) {
		ret = op(si, ci, off, arg);
		ci_unlock(ci);
	}
	rcu_read_end(&u->rcu_hb);
	return ret;
}

static long dup_op(struct swap_device *si, struct swap_cluster_info *ci,
		   uint32_t off, void *arg)
{
	uint8_t b = si->swap_map[off];
	unsigned int count;

	if (!slot_in_use(b))
		return -ENOENT;
	count = slot_count(ci, b, off % CLUSTER_SLOTS);
	if (count >= USWAP_COUNT_MAX)
		return -EOVERFLOW;
	return slot_set_count(si, ci, off, count + 1);
}

USWAP_API int uswap_dup(struct uswap *u, uswap_entry_t entry)
{
	return (int)with_slot(u, entry, dup_op, NULL);
}

static long pin_op(struct swap_device *si, struct swap_cluster_info *ci,
		   uint32_t off, void *arg)
{
	uint8_t *b = &si->swap_map[off];

	if (!slot_in_use(*b))
		return -ENOENT;
	if (*b & MAP_HAS_CACHE)
		return -EEXIST;
	*b |= MAP_HAS_CACHE;
	return 0;
}

USWAP_API int uswap_cache_pin(struct uswap *u, uswap_entry_t entry)
{
	return (int)with_slot(u, entry, pin_op, NULL);
}

static long count_op(struct swap_device *si, struct swap_cluster_info *ci,
		     uint32_t off, void *arg)
{
	uint8_t b = si->swap_map[off];
	bool *has_cache = arg;

	if (b == MAP_BAD)
		return -EIO;
	if (!b)
		return -ENOENT;
	if (has_cache)
		*has_cache = b & MAP_HAS_CACHE;
	return slot_count(ci, b, off % CLUSTER_SLOTS);
}

USWAP_API long uswap_slot_count(struct uswap *u, uswap_entry_t entry, bool *has_cache)
{
	return with_slot(u, entry, count_op, has_cache);
}
