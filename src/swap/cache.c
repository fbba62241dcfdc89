// SPDX-License-Identifier: MIT
/*
 * cache.c - the swap cache: a slot's cached folio is the pointer in its
 * swap table entry (alloc/table.c), next to its count and pin, as in the
 * kernel's swap table since phase III. The table lives as long as the
 * cluster holds slots, and a cached slot is always pinned, so the cache
 * allocates nothing of its own but the folio copies.
 */
#include <stdlib.h>
#include <string.h>

#include "swap/swap_internal.h"

/* Allocate a folio copy of @pages (2^order pages). Called without locks:
 * the copy must not happen under a spinlock. Return: NULL on no memory. */
struct scache_folio *scache_folio_new(const void *pages, unsigned int order)
{
	struct scache_folio *f = malloc(sizeof(*f) + folio_bytes(order));

	if (!f)
		return NULL;
	f->order = order;
	f->refs = 1; /* the creator's, until it is inserted */
	memcpy(f->data, pages, folio_bytes(order));
	return f;
}

void scache_get(struct scache_folio *folio)
{
	folio->refs++;
}

void scache_put(struct scache_folio *folio)
{
	if (--folio->refs == 0)
		free(folio);
}

/*
 * scache_insert() - make the 2^order slots starting at @ci_off point at
 * @folio, one reference per slot; the caller keeps its own. The pointer
 * goes into each slot's swap table entry, which the cluster already has
 * (its slots are allocated), so nothing is allocated here, under the lock.
 * Return: 0, -EEXIST (a slot already cached), -EOVERFLOW (@folio's
 * address does not fit a table entry: nothing cached).
 * Context: ci->lock held; the caller holds the slots' HAS_CACHE pins.
 */
int scache_insert(struct swap_cluster_info *ci, uint32_t ci_off,
		  struct scache_folio *folio)
{
	unsigned int nr = 1u << folio->order;

	lock_assert_held(&ci->lock);
	for (unsigned int i = 0; i < nr; i++)
		if (slot_cache_ptr(ci, ci_off + i))
			return -EEXIST;
	for (unsigned int i = 0; i < nr; i++)
		if (slot_cache_ptr_set(ci, ci_off + i, folio)) {
			while (i--)
				slot_cache_ptr_set(ci, ci_off + i, NULL);
			return -EOVERFLOW;
		}
	folio->refs += nr;
	return 0;
}

/* The folio cached for a slot, or NULL. Context: ci->lock held. */
struct scache_folio *scache_lookup(struct swap_cluster_info *ci, uint32_t ci_off)
{
	lock_assert_held(&ci->lock);
	return slot_cache_ptr(ci, ci_off);
}

static bool remove_range(struct swap_cluster_info *ci, uint32_t ci_off,
			 unsigned int nr)
{
	bool found = false;

	for (unsigned int i = ci_off; i < ci_off + nr; i++) {
		struct scache_folio *f = slot_cache_ptr(ci, i);

		if (!f)
			continue;
		slot_cache_ptr_set(ci, i, NULL);
		scache_put(f);
		found = true;
	}
	return found;
}

/*
 * scache_remove() - forget the cached copies of @nr slots.
 * Return: whether any slot was cached. Context: ci->lock held.
 */
bool scache_remove(struct swap_cluster_info *ci, uint32_t ci_off, unsigned int nr)
{
	lock_assert_held(&ci->lock);
	return remove_range(ci, ci_off, nr);
}

/* Drop everything a cluster caches (device teardown: nothing else runs). */
void scache_release_cluster(struct swap_cluster_info *ci)
{
	remove_range(ci, 0, CLUSTER_SLOTS);
}
