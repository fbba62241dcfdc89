// SPDX-License-Identifier: MIT
/*
 * folio_swap.c - the glue between a folio and the swap path: which slots
 * hold a folio (its slot[] words and the reverse map swapoff reads),
 * writing a folio out (whole, or split into single pages after -E2BIG, the
 * kernel's swpout_fallback), reading one or a readahead batch of folios
 * back, and freeing a folio's slots.
 *
 * The fault path (fault.c), eviction (reclaim.c), swapoff (unuse.c) and
 * discard (discard.c) call these with the folio owned (busy), so nothing
 * here takes a pager lock; the swap path below does its own locking.
 */
#include <errno.h>

#include "pager/pager_internal.h"

static uint64_t rmap_owner(const struct pager_region *r, size_t page)
{
	return ((uint64_t)(r->id + 1) << 32) | (uint64_t)page;
}

/* Record the aligned run of slots at @e as the folio's (after a whole
 * swap-out). */
static void folio_set_slots(struct uswap_pager *p, struct pager_region *r, size_t idx,
			    uswap_entry_t e)
{
	size_t page0 = idx * p->nr;

	for (unsigned int i = 0; i < p->nr; i++) {
		uint64_t v = e.val + i;

		atomic_store_explicit(&r->slot[page0 + i], v, memory_order_relaxed);
		rmap_set(p, v, rmap_owner(r, page0 + i));
	}
}

/* No order-k run at the serving priority: the kernel splits the folio and
 * writes its pages one by one (swpout_fallback); here as one batch. */
static int folio_swap_out_split(struct uswap_pager *p, struct pager_region *r, size_t idx,
				const void *src)
{
	struct uswap_swap_io io[USWAP_CLUSTER_SLOTS];
	size_t page0 = idx * p->nr;
	int err = 0;

	for (unsigned int i = 0; i < p->nr; i++)
		io[i] = (struct uswap_swap_io){
			.pages = (char *)src + (size_t)i * USWAP_PAGE_SIZE, .order = 0,
		};
	uswap_swap_out_batch(p->u, io, p->nr, p->cfg.swap_flags);
	for (unsigned int i = 0; i < p->nr; i++) {
		if (io[i].result) {
			err = err ? err : io[i].result;
			continue;
		}
		atomic_store_explicit(&r->slot[page0 + i], io[i].entry.val, memory_order_relaxed);
		rmap_set(p, io[i].entry.val, rmap_owner(r, page0 + i));
	}
	if (err) {
		folio_free_slots(p, r, idx, false);
		return err;
	}
	pager_count(p, evict_split);
	return 0;
}

int folio_swapped_out(struct uswap_pager *p, struct pager_region *r, size_t idx,
			     const void *src, int err, uswap_entry_t e, bool *whole)
{
	if (!err) {
		folio_set_slots(p, r, idx, e);
		*whole = true;
		return 0;
	}
	if (err != -E2BIG || p->order == 0)
		return err;
	*whole = false;
	return folio_swap_out_split(p, r, idx, src);
}

int folio_swap_out(struct uswap_pager *p, struct pager_region *r, size_t idx,
		   const void *src, bool *whole)
{
	uswap_entry_t e = { 0 };
	int err = uswap_swap_out(p->u, src, p->order, p->cfg.swap_flags, &e);

	return folio_swapped_out(p, r, idx, src, err, e, whole);
}

void folios_swap_in(struct uswap_pager *p, struct pager_region *r, size_t idx,
		    unsigned int n, const bool *whole, char *buf, int *rc)
{
	struct uswap_swap_io io[PAGER_MAX_RA_PAGES + USWAP_CLUSTER_SLOTS];
	unsigned int first[PAGER_MAX_RA_FOLIOS + 2], k = 0;

	for (unsigned int i = 0; i < n; i++) {
		size_t page0 = (idx + i) * p->nr;
		char *dst = buf + (size_t)i * p->folio_bytes;
		/* Slots of a whole folio are one aligned run: one request. */
		unsigned int parts = whole[i] ? 1 : p->nr;

		first[i] = k;
		for (unsigned int j = 0; j < parts; j++)
			io[k++] = (struct uswap_swap_io){
				.pages = dst + (size_t)j * USWAP_PAGE_SIZE,
				.order = whole[i] ? p->order : 0,
				.entry = { atomic_load_explicit(&r->slot[page0 + j],
								memory_order_relaxed) },
			};
	}
	first[n] = k;
	uswap_swap_in_batch(p->u, io, k);
	for (unsigned int i = 0; i < n; i++) {
		rc[i] = 1;
		for (unsigned int j = first[i]; j < first[i + 1]; j++) {
			if (io[j].result < 0) {
				rc[i] = io[j].result;
				break;
			}
			rc[i] &= io[j].result;
		}
	}
}

int folio_swap_in(struct uswap_pager *p, struct pager_region *r, size_t idx,
		  bool whole, void *buf)
{
	int rc;

	folios_swap_in(p, r, idx, 1, &whole, buf, &rc);
	return rc;
}

int slots_swap_in(struct uswap_pager *p, const uint64_t *slot, bool whole, void *buf)
{
	struct uswap_swap_io io[USWAP_CLUSTER_SLOTS];
	unsigned int parts = whole ? 1 : p->nr;
	int rc = 1;

	for (unsigned int j = 0; j < parts; j++)
		io[j] = (struct uswap_swap_io){
			.pages = (char *)buf + (size_t)j * USWAP_PAGE_SIZE,
			.order = whole ? p->order : 0,
			.entry = { slot[j] },
		};
	uswap_swap_in_batch(p->u, io, parts);
	for (unsigned int j = 0; j < parts; j++) {
		if (io[j].result < 0)
			return io[j].result;
		rc &= io[j].result;
	}
	return rc;
}

void folio_free_slots(struct uswap_pager *p, struct pager_region *r, size_t idx,
		      bool whole)
{
	size_t page0 = idx * p->nr;
	uint64_t first = atomic_load_explicit(&r->slot[page0], memory_order_relaxed);
	int err;

	for (unsigned int i = 0; i < p->nr; i++) {
		uint64_t v = atomic_exchange_explicit(&r->slot[page0 + i], 0,
						      memory_order_relaxed);

		if (!v)
			continue;
		rmap_clear(p, v);
		if (!whole) {
			err = uswap_swap_free(p->u, (uswap_entry_t){ v }, 0);
			WARN_ONCE(err, "pager: swap_free(order 0) = %d", err);
		}
	}
	if (whole && first) {
		err = uswap_swap_free(p->u, (uswap_entry_t){ first }, p->order);
		WARN_ONCE(err, "pager: swap_free(order %u) = %d", p->order, err);
	}
	if (first)
		reclaim_note_freed(p);
}
