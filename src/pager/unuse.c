// SPDX-License-Identifier: MIT
/*
 * unuse.c - swapoff of a device under live regions: the pager is the
 * instance's slot owner (uswap_set_unuse()), and uswap_swapoff() hands it
 * every slot in use on the device going away.
 *
 * Finding the folio of a slot is the kernel's page-table walk in
 * try_to_unuse(); here a reverse map records, for every slot the pager
 * holds, which region page holds it. For each slot offered:
 *  - a clean folio (mapped, slots kept only as a clean copy) just lets go
 *    of its slots and becomes dirty: no I/O;
 *  - a swapped-out folio is read and written again; allocation skips the
 *    device being swapped off, so the new slots are on another device;
 *  - when no other device has room, it is brought back into memory
 *    (charged; above the limit if need be, as the kernel's swapoff also
 *    brings pages in regardless of memory.max pressure).
 * Either way the old slots are freed, which is what swapoff waits for.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "pager/pager_internal.h"

#define UNUSE_MISS_LIMIT 20000 /* x 100 us: the slot is nobody's */

/* ------------------------------------------------------------------------
 * Reverse map
 * ---------------------------------------------------------------------- */

static _Atomic uint64_t *rmap_word(struct uswap_pager *p, uint64_t val, bool create)
{
	uswap_entry_t e = { val };
	unsigned int type = uswap_entry_type(e);
	uint64_t off = uswap_entry_offset(e);
	_Atomic uint64_t **top, *chunk;

	if (off >= RMAP_MAX_OFFSET)
		return NULL;
	top = atomic_load_explicit(&p->rmap.top[type], memory_order_acquire);
	if (!top) {
		_Atomic uint64_t **fresh;

		if (!create || !(fresh = calloc(RMAP_TOP, sizeof(*fresh))))
			return NULL;
		if (atomic_compare_exchange_strong_explicit(&p->rmap.top[type], &top, fresh,
							    memory_order_acq_rel,
							    memory_order_acquire))
			top = fresh;
		else
			free(fresh);
	}
	_Atomic(_Atomic uint64_t *) *slotp = (_Atomic(_Atomic uint64_t *) *)&top[off >> RMAP_CHUNK_SHIFT];

	chunk = atomic_load_explicit(slotp, memory_order_acquire);
	if (!chunk) {
		_Atomic uint64_t *fresh;

		if (!create || !(fresh = calloc(RMAP_CHUNK, sizeof(*fresh))))
			return NULL;
		if (atomic_compare_exchange_strong_explicit(slotp, &chunk, fresh,
							    memory_order_acq_rel,
							    memory_order_acquire))
			chunk = fresh;
		else
			free(fresh);
	}
	return &chunk[off & (RMAP_CHUNK - 1)];
}

void rmap_set(struct uswap_pager *p, uint64_t entry_val, uint64_t owner)
{
	_Atomic uint64_t *w = rmap_word(p, entry_val, true);

	if (w)
		atomic_store_explicit(w, owner, memory_order_relaxed);
}

void rmap_clear(struct uswap_pager *p, uint64_t entry_val)
{
	_Atomic uint64_t *w = rmap_word(p, entry_val, false);

	if (w)
		atomic_store_explicit(w, 0, memory_order_relaxed);
}

void rmap_free(struct uswap_pager *p)
{
	for (unsigned int type = 0; type < USWAP_MAX_DEVICES; type++) {
		_Atomic uint64_t **top = atomic_load(&p->rmap.top[type]);

		if (!top)
			continue;
		for (size_t i = 0; i < RMAP_TOP; i++)
			free((void *)atomic_load((_Atomic(_Atomic uint64_t *) *)&top[i]));
		free(top);
		atomic_store(&p->rmap.top[type], NULL);
	}
}

/* ------------------------------------------------------------------------
 * The owner's callback
 * ---------------------------------------------------------------------- */

/* The region page holding @val: the rmap, checked against the page's own
 * slot word; else a scan of every region (offsets past the rmap, or a
 * race with the folio's owner). Context: lock read-held. */
static struct pager_region *find_slot(struct uswap_pager *p, uint64_t val, size_t *page)
{
	_Atomic uint64_t *w = rmap_word(p, val, false);
	uint64_t owner = w ? atomic_load_explicit(w, memory_order_relaxed) : 0;

	if (owner) {
		size_t id = (size_t)(owner >> 32) - 1;
		struct pager_region *r = id < p->nr_ids ? p->by_id[id] : NULL;
		size_t pg = (size_t)(owner & 0xffffffffu);

		if (r && pg < r->size / USWAP_PAGE_SIZE &&
		    atomic_load_explicit(&r->slot[pg], memory_order_relaxed) == val) {
			*page = pg;
			return r;
		}
	}
	for (size_t i = 0; i < p->nr_regions; i++) {
		struct pager_region *r = p->regions[i];
		size_t nr_pages = r->size / USWAP_PAGE_SIZE;

		for (size_t pg = 0; pg < nr_pages; pg++) {
			if (atomic_load_explicit(&r->slot[pg], memory_order_relaxed) == val) {
				*page = pg;
				return r;
			}
		}
	}
	return NULL;
}

/* A SWAPPED folio we own (MOVING): read it, write it elsewhere, or bring
 * it in. Context: unuse_lock held (the buffer). */
static void move_folio(struct uswap_pager *p, struct pager_region *r, size_t idx,
		       uint32_t s)
{
	bool whole = (s & PF_WHOLE) != 0, new_whole;
	uint64_t old[1u << USWAP_PAGER_MAX_ORDER];
	void *buf = p->unuse_buf;
	int rc;

	rc = folio_swap_in(p, r, idx, whole, buf);
	if (rc < 0) {
		folio_free_slots(p, r, idx, whole);
		folio_poison(p, r, idx, buf, rc);
		return;
	}
	for (unsigned int i = 0; i < p->nr; i++)
		old[i] = atomic_load_explicit(&r->slot[idx * p->nr + i], memory_order_relaxed);
	rc = folio_swap_out(p, r, idx, buf, &new_whole);
	if (!rc) {
		/* slot[] and the rmap name the new slots now; free the old. */
		for (unsigned int i = 0; i < p->nr; i++)
			if (old[i] != atomic_load_explicit(&r->slot[idx * p->nr + i],
							   memory_order_relaxed))
				rmap_clear(p, old[i]);
		if (whole) {
			uswap_swap_free(p->u, (uswap_entry_t){ old[0] }, p->order);
		} else {
			for (unsigned int i = 0; i < p->nr; i++)
				uswap_swap_free(p->u, (uswap_entry_t){ old[i] }, 0);
		}
		atomic_store_explicit(&r->state[idx], PF_SWAPPED | (new_whole ? PF_WHOLE : 0),
				      memory_order_release);
		pager_count(p, unuse_moved);
		return;
	}
	/* Nowhere else to go: back into memory. */
	pager_charge(p, p->nr);
	rc = uffd_copy(p->uffd, folio_addr(r, idx), buf, p->folio_bytes, false);
	WARN_ONCE(rc, "pager: UFFDIO_COPY in unuse failed: %d", rc);
	folio_free_slots(p, r, idx, whole);
	atomic_store_explicit(&r->state[idx], PF_RESIDENT | PF_REF, memory_order_release);
	pager_count(p, unuse_loaded);
}

/* Make the folio at @page let go of @val. Return: whether it was found. */
static bool unuse_folio(struct uswap_pager *p, struct pager_region *r, size_t page,
			uint64_t val)
{
	size_t idx = page / p->nr;
	_Atomic uint32_t *state = &r->state[idx];

	for (;;) {
		uint32_t s = folio_wait_idle(state);
		uint32_t busy;

		if (atomic_load_explicit(&r->slot[page], memory_order_relaxed) != val)
			return true; /* let go of it meanwhile */
		if (pf_state(s) == PF_CLEAN)
			busy = PF_UNPROTECTING;
		else if (pf_state(s) == PF_SWAPPED)
			busy = PF_MOVING;
		else
			return false; /* cannot hold slots: a stale slot word */
		if (!atomic_compare_exchange_strong_explicit(state, &s,
							     (s & PF_WHOLE) | busy,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		if (busy == PF_UNPROTECTING) {
			folio_free_slots(p, r, idx, (s & PF_WHOLE) != 0);
			uffd_writeprotect(p->uffd, folio_addr(r, idx), p->folio_bytes, false);
			atomic_store_explicit(state, PF_RESIDENT | PF_REF, memory_order_release);
			pager_count(p, unuse_moved);
		} else {
			pthread_mutex_lock(&p->unuse_lock);
			move_folio(p, r, idx, s);
			pthread_mutex_unlock(&p->unuse_lock);
		}
		return true;
	}
}

int pager_unuse(void *ctx, uswap_entry_t entry)
{
	struct uswap_pager *p = ctx;
	struct pager_region *r;
	bool found = false;
	size_t page;

	pthread_rwlock_rdlock(&p->lock);
	r = find_slot(p, entry.val, &page);
	if (r)
		found = unuse_folio(p, r, page, entry.val);
	pthread_rwlock_unlock(&p->lock);
	if (found)
		return 0;
	/* Not ours (yet): a swap-out that started before swapoff stopped
	 * allocation on the device may not have recorded its slots. Let the
	 * sweep come back, but not forever. */
	pthread_mutex_lock(&p->unuse_lock);
	if (p->unuse_miss_val == entry.val) {
		p->unuse_miss++;
	} else {
		p->unuse_miss_val = entry.val;
		p->unuse_miss = 1;
	}
	found = p->unuse_miss < UNUSE_MISS_LIMIT;
	pthread_mutex_unlock(&p->unuse_lock);
	if (!found)
		return -EBUSY;
	nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	return 0;
}
