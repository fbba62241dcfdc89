// SPDX-License-Identifier: MIT
/*
 * cache.c - the swap cache: one table of folio pointers per cluster,
 * allocated when the cluster first caches a folio and freed when it caches
 * none (the kernel allocates its swap table with the cluster and frees it
 * when the cluster is free again; allocating on first cached folio keeps
 * clusters that never cache anything at zero cost).
 */
#include <stdlib.h>
#include <string.h>

#include "swap/swap_internal.h"

struct scache_table {
	struct scache_folio *slot[CLUSTER_SLOTS]; /* NULL: not cached */
	unsigned int nr;                          /* non-NULL entries */
};

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
 * @folio, one reference per slot; the caller keeps its own.
 * Return: 0, -ENOMEM (no table), -EEXIST (a slot already cached).
 * Context: ci->lock held; the caller holds the slots' HAS_CACHE pins.
 */
int scache_insert(struct swap_cluster_info *ci, uint32_t ci_off,
		  struct scache_folio *folio)
{
	unsigned int nr = 1u << folio->order;
	struct scache_table *t = ci->cache;

	lock_assert_held(&ci->lock);
	if (!t && !(t = ci->cache = calloc(1, sizeof(*t))))
		return -ENOMEM;
	for (unsigned int i = 0; i < nr; i++)
		if (t->slot[ci_off + i])
			return -EEXIST;
	for (unsigned int i = 0; i < nr; i++)
		t->slot[ci_off + i] = folio;
	t->nr += nr;
	folio->refs += nr;
	return 0;
}

/* The folio cached for a slot, or NULL. Context: ci->lock held. */
struct scache_folio *scache_lookup(struct swap_cluster_info *ci, uint32_t ci_off)
{
	lock_assert_held(&ci->lock);
	return ci->cache ? ci->cache->slot[ci_off] : NULL;
}

static bool remove_range(struct swap_cluster_info *ci, uint32_t ci_off,
			 unsigned int nr)
{
	struct scache_table *t = ci->cache;
	bool found = false;

	if (!t)
		return false;
	for (unsigned int i = ci_off; i < ci_off + nr; i++) {
		if (!t->slot[i])
			continue;
		scache_put(t->slot[i]);
		t->slot[i] = NULL;
		t->nr--;
		found = true;
	}
	if (!t->nr) {
		free(t);
		ci->cache = NULL;
	}
	return found;
}

/*
 * scache_remove() - forget the cached copies of @nr slots; the table goes
 * when its last entry does. Return: whether any slot was cached.
 * Context: ci->lock held.
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
