// SPDX-License-Identifier: MIT
/*
 * discard.c - uswap_region_discard(): the pager's MADV_DONTNEED. Memory
 * the program let go of (a free()d buffer, an munmap()ed block under
 * `uswap run`) would otherwise stay charged, and be written to swap when
 * the clock reaches it: garbage evicted to make room for garbage.
 *
 * Every whole folio of the range is claimed (DROPPING, whatever it was,
 * NONE included, so no fault maps it meanwhile), the claimed run is
 * unmapped with one madvise() (one TLB flush), then each folio's slots
 * are freed, its charge dropped and it is published NONE: the next touch
 * zero-fills it, as after the kernel's MADV_DONTNEED of private anonymous
 * memory. The parts of folios at the ends are zeroed in place.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "pager/pager_internal.h"

#define DISCARD_RUN 64 /* folios claimed and unmapped together */

uint32_t folio_claim_any(_Atomic uint32_t *state)
{
	for (;;) {
		uint32_t s = folio_wait_idle(state);

		if (atomic_compare_exchange_strong_explicit(state, &s, PF_DROPPING,
							    memory_order_acquire,
							    memory_order_relaxed))
			return s;
	}
}

/* Discard folios [first, first + n) of @r. Context: p->lock read-held. */
static void discard_run(struct uswap_pager *p, struct pager_region *r, size_t first,
			unsigned int n)
{
	uint32_t was[DISCARD_RUN];
	unsigned int uncharge = 0;
	bool mapped = false;

	for (unsigned int i = 0; i < n; i++) {
		unsigned int st;

		was[i] = folio_claim_any(&r->state[first + i]);
		st = pf_state(was[i]);
		mapped |= st == PF_RESIDENT || st == PF_CLEAN || st == PF_POISONED ||
			  st == PF_ZERO;
	}
	if (mapped) {
		struct iovec range = { folio_addr(r, first), n * p->folio_bytes };
		int err = mm_zap(p, &range, 1);

		WARN_ONCE(err, "pager: discard: unmapping failed (%d)", err);
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned int st = pf_state(was[i]);

		if (st == PF_CLEAN || st == PF_SWAPPED)
			folio_free_slots(p, r, first + i, (was[i] & PF_WHOLE) != 0);
		/* A locked range stays locked (the program's protection is
		 * unchanged), with nothing resident to hold apart. */
		if ((st == PF_RESIDENT || st == PF_CLEAN) &&
		    !folio_lock_drop_apart(p, r, first + i, true))
			uncharge += p->nr;
		workingset_forget(r, first + i);
		atomic_store_explicit(&r->state[first + i], PF_NONE, memory_order_release);
	}
	if (uncharge)
		pager_uncharge(p, uncharge);
	/* A write fault on a CLEAN folio we took waits for this wake; it
	 * faults again as missing and gets zeros. */
	if (mapped)
		uffd_wake(p->uffd, folio_addr(r, first), n * p->folio_bytes);
}

USWAP_API int uswap_region_discard(struct uswap_pager *p, void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr, end = start + len, fb;
	struct pager_region *r;
	size_t first, last;
	int err = 0;

	if (!p || !addr || !len || end < start)
		return -EINVAL;
	fb = p->folio_bytes;
	pthread_rwlock_rdlock(&p->lock);
	r = region_find(p, start);
	if (!r || end > (uintptr_t)r->base + r->size) {
		pthread_rwlock_unlock(&p->lock);
		return r ? -EINVAL : -ENOENT;
	}
	first = (start - (uintptr_t)r->base + fb - 1) / fb;
	last = (end - (uintptr_t)r->base) / fb; /* one past the last whole */
	for (size_t idx = first; idx < last; idx += DISCARD_RUN)
		discard_run(p, r, idx, (unsigned int)(last - idx < DISCARD_RUN ?
						      last - idx : DISCARD_RUN));
	pthread_rwlock_unlock(&p->lock);
	/* The ends, outside the lock: zeroing them may fault them in, and a
	 * fault's handler takes the lock. */
	if (first >= last)
		return mm_zero(p, addr, len);
	if (start % fb && (err = mm_zero(p, addr, (uintptr_t)r->base + first * fb - start)))
		return err;
	if (end % fb)
		err = mm_zero(p, (char *)r->base + last * fb,
			      end - ((uintptr_t)r->base + last * fb));
	return err;
}
