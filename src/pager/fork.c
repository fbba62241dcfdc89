// SPDX-License-Identifier: MIT
/*
 * fork.c - fork() without reading the swapped-out folios back in.
 *
 * The kernel's fork copies the page tables: a swapped-out page's swap
 * entry goes to the child too, its count raised (swap_duplicate()), and
 * each process reads its own copy in when it touches it. A userfaultfd
 * pager cannot follow its memory into the child (the child's mappings
 * lose the registration, and a missing page there reads as zeros), which
 * is why uswap_pager_hold() brings every folio in first.
 *
 * When every device is memory the process owns (ram, zram), the child
 * gets the same thing another way: fork() copies the instance itself,
 * devices, slots and swap cache, copy-on-write. The child keeps that copy
 * and starts a pager of its own on it; uswap_pager_inherit() then hands
 * it the parent pager's swapped-out folios, the same slots in the child's
 * copy of the devices. Nothing is read, and each process frees its slots
 * in its own copy. A device with an owner outside the process (a file,
 * an NBD export) is shared, not copied: the owner brings its folios in
 * with uswap_pager_hold() and does not use this.
 *
 * For the copy to be usable, nothing may be half done in it: between
 * uswap_pager_fork_prepare() and the fork, p->lock is write-held, which
 * waits for the reclaim passes and faults in flight (each runs with it
 * read-held) and keeps new ones out; eviction is stopped as by a hold.
 *
 * The child runs a little before its pager has the region: glibc's start
 * of the pager's own threads reads the program's locale data, which
 * lives in the heap. A page read there then is the kernel's zero page,
 * since nothing serves the child's range yet, and adoption maps the rest
 * of that folio as zeros. folio_fold() gives such a folio the parent's
 * contents back, byte by byte where the child has not written; the
 * share of swap it came with is then let go (the folio is resident).
 * The child's pager is held from its creation until the folios are
 * taken, so that nothing it adopted is evicted in between.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "pager/pager_internal.h"

USWAP_API int uswap_pager_fork_prepare(struct uswap_pager *p)
{
	if (!p || p->remote) /* a target forks on its own: not this process */
		return -EINVAL;
	atomic_fetch_add_explicit(&p->hold, 1, memory_order_acq_rel);
	pthread_rwlock_wrlock(&p->lock);
	if (p->thread_id)
		atomic_store_explicit(&p->fork_tid, gettid(), memory_order_release);
	return 0;
}

USWAP_API void uswap_pager_fork_parent(struct uswap_pager *p)
{
	if (!p)
		return;
	atomic_store_explicit(&p->fork_tid, 0, memory_order_release);
	pthread_rwlock_unlock(&p->lock);
	uswap_pager_release(p);
}

/* Move the slots of @old's folio @oidx of @ro to @p's folio @idx of @r,
 * which has no page present, and make it swapped out there. */
static void take_folio(struct uswap_pager *p, struct pager_region *r, size_t idx,
		       struct pager_region *ro, size_t oidx, uint32_t s)
{
	size_t page0 = idx * p->nr, opage0 = oidx * p->nr;

	region_note_used(r, idx + 1);
	for (unsigned int i = 0; i < p->nr; i++) {
		uint64_t v = atomic_exchange_explicit(&ro->slot[opage0 + i], 0,
						      memory_order_relaxed);

		atomic_store_explicit(&r->slot[page0 + i], v, memory_order_relaxed);
		if (v)
			rmap_set(p, v, ((uint64_t)(r->id + 1) << 32) | (uint64_t)(page0 + i));
	}
	atomic_store_explicit(&r->state[idx], PF_SWAPPED | (s & PF_WHOLE),
			      memory_order_release);
}

int folio_fold(struct uswap_pager *p, char *addr, const char *was, char *now)
{
	bool written = false;
	int err = mm_read(p, now, addr, p->folio_bytes);

	if (err)
		return err;
	for (size_t b = 0; b < p->folio_bytes; b++) {
		if (!now[b])
			now[b] = was[b];
		else if (now[b] != was[b])
			written = true;
	}
	err = mm_write(p, addr, now, p->folio_bytes);
	WARN_ONCE(!err && written, "pager: a fork child's copy of swapped-out memory at %p "
		  "differs from swap (written by the child before its pager began, or by "
		  "the parent during its fork); those bytes are kept", (void *)addr);
	return err ? err : written;
}

/* @old's swapped-out folio, mapped in @p (touched in the child before its
 * pager began): folded (folio_fold()) with @old's copy, into @buf's two
 * folios. Return: 0 or -errno. */
static int fold_folio(struct uswap_pager *p, struct uswap_pager *old,
		      struct pager_region *ro, size_t oidx, bool whole, char *buf)
{
	if (folio_swap_in(old, ro, oidx, whole, buf) < 0)
		return -EIO;
	pager_count(p, fork_folded);
	return folio_fold(p, folio_addr(ro, oidx), buf, buf + p->folio_bytes) < 0 ? -EIO : 0;
}

/* @old's folio @oidx of @ro: swapped out, into @p where @p has it with no
 * page present, folded into place where @p has it mapped (fold_folio()),
 * else read into place where @p has no region (plain memory in the child:
 * a region it could not adopt); a clean folio's slots (its page is mapped
 * in the child) freed. Return: 1 if taken, 0, or -EIO. */
static int inherit_folio(struct uswap_pager *p, struct uswap_pager *old,
			 struct pager_region *ro, size_t oidx, char *buf)
{
	uint32_t s = atomic_load_explicit(&ro->state[oidx], memory_order_acquire);
	bool whole = (s & PF_WHOLE) != 0;
	char *addr = folio_addr(ro, oidx);
	struct pager_region *r;
	int rc = 0;

	if (pf_state(s) == PF_FAULTING) {
		/* Left so by a fault of the forking thread served during the
		 * fork (pager.c): mapped, so copied to us; clean, so its
		 * slots are still in this copy of the instance. */
		folio_free_slots(old, ro, oidx, whole);
		atomic_store_explicit(&ro->state[oidx], PF_NONE, memory_order_relaxed);
		return 0;
	}
	if (pf_state(s) != PF_SWAPPED && pf_state(s) != PF_CLEAN)
		return 0;
	r = pf_state(s) == PF_SWAPPED ? region_find(p, (uintptr_t)addr) : NULL;
	if (r) {
		size_t idx = (size_t)(addr - r->base) / p->folio_bytes;
		uint32_t st = pf_state(atomic_load_explicit(&r->state[idx], memory_order_relaxed));

		if (st == PF_NONE) {
			take_folio(p, r, idx, ro, oidx, s);
			return 1;
		}
		if (st == PF_RESIDENT)
			rc = fold_folio(p, old, ro, oidx, whole, buf);
	} else if (pf_state(s) == PF_SWAPPED) {
		rc = folio_swap_in(old, ro, oidx, whole, addr) < 0 ? -EIO : 0;
	}
	folio_free_slots(old, ro, oidx, whole);
	atomic_store_explicit(&ro->state[oidx], PF_NONE, memory_order_relaxed);
	return rc;
}

/* No pager in the child: each swapped-out folio is read into place, as
 * plain memory (the child's mappings are not registered). */
static long load_all(struct uswap_pager *old)
{
	long lost = 0;

	for (size_t i = 0; i < old->nr_regions; i++) {
		struct pager_region *ro = old->regions[i];

		for (size_t idx = 0, end = region_used(ro); idx < end; idx++) {
			uint32_t s = atomic_load_explicit(&ro->state[idx], memory_order_acquire);
			bool whole = (s & PF_WHOLE) != 0;

			if (pf_state(s) == PF_SWAPPED)
				lost += folio_swap_in(old, ro, idx, whole, folio_addr(ro, idx)) < 0;
			if (pf_state(s) == PF_SWAPPED || pf_state(s) == PF_CLEAN)
				folio_free_slots(old, ro, idx, whole);
		}
	}
	return lost ? -EIO : 0;
}

USWAP_API long uswap_pager_inherit(struct uswap_pager *p, struct uswap_pager *old)
{
	long taken = 0, lost = 0;

	if (old && !p)
		return load_all(old);
	if (!p || !old || p == old || p->u != old->u || p->order != old->order)
		return -EINVAL;
	char *buf = malloc(2 * p->folio_bytes); /* fold_folio()'s */

	if (!buf)
		return -ENOMEM;
	/* @old's lock is the parent's, write-held since the fork: its
	 * arrays are still. Ours keeps our handlers and reclaim out. */
	pthread_rwlock_wrlock(&p->lock);
	for (size_t i = 0; i < old->nr_regions; i++) {
		struct pager_region *ro = old->regions[i];

		for (size_t idx = 0, end = region_used(ro); idx < end; idx++) {
			int rc = inherit_folio(p, old, ro, idx, buf);

			taken += rc > 0;
			lost += rc < 0;
		}
	}
	pthread_rwlock_unlock(&p->lock);
	free(buf);
	return lost ? -EIO : taken;
}
