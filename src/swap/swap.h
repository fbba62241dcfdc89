/* SPDX-License-Identifier: MIT */
/*
 * swap.h - the swap path's internals: the swap cache kept per cluster
 * (cache.c) and helpers shared by swap.c and unuse.c.
 *
 * The swap cache maps a slot to an in-memory copy of its folio while the
 * folio is being written, and afterwards for clean copies kept on purpose.
 * Each cluster has its own table, reached from the cluster descriptor and
 * guarded by the cluster lock, as the kernel's swap table (6.18+): a
 * lookup never takes a device-wide lock. A cached slot always holds the
 * HAS_CACHE pin in the swap_map, so the slot cannot be freed under it.
 */
#ifndef USWAP_SWAP_SWAP_H
#define USWAP_SWAP_SWAP_H

#include "alloc/alloc.h"
#include "dev/backend.h"

/* A folio's data in the cache. Shared by the table entries of its slots
 * and by readers copying it out; freed when the last one lets go. */
struct scache_folio {
	unsigned int order;
	unsigned int refs;     /* table entries + readers; ci->lock */
	unsigned char data[];  /* 2^order pages */
};

/* cache.c. Context for all: ci->lock held. */
struct scache_folio *scache_folio_new(const void *pages, unsigned int order);
int scache_insert(struct swap_cluster_info *ci, uint32_t ci_off,
		  struct scache_folio *folio);
struct scache_folio *scache_lookup(struct swap_cluster_info *ci, uint32_t ci_off);
void scache_get(struct scache_folio *folio);
void scache_put(struct scache_folio *folio);
bool scache_remove(struct swap_cluster_info *ci, uint32_t ci_off, unsigned int nr);
void scache_release_cluster(struct swap_cluster_info *ci);

/* io.c: one backend request of a batch call. The caller sets @b and
 * io's op, slot, order and buf; swap_bio_run() sets the rest. */
#define SWAP_BATCH 128 /* folios a batch call handles per round */

struct swap_bio_set;
struct swap_bio {
	struct backend_io io;
	struct backend *b;
	struct swap_bio_set *set;
	unsigned int bi;
};

/* Submit @n (<= SWAP_BATCH) requests, grouped by backend, and return when
 * every one has completed (io.result set). A single request runs through
 * the backend's synchronous read or write instead. Context: inside an RCU read
 * section (the backends stay open); no lock held. */
void swap_bio_run(struct swap_bio **bios, unsigned int n);

/* swap.c: the cluster checks shared by the swap-in and free paths. */
bool range_in_use(struct swap_device *si, uint32_t off, unsigned int nr);

static inline struct backend *device_backend(struct swap_device *si)
{
	return si->backend;
}

#endif /* USWAP_SWAP_SWAP_H */
