// SPDX-License-Identifier: MIT
/*
 * hold.c - uswap_pager_hold() / uswap_pager_release(): every folio in
 * memory, and kept there, for as long as a fork() takes.
 *
 * A fork child loses the userfaultfd registration, so what it must see
 * has to be mapped when the kernel copies the page tables. Swapping every
 * device off would do it, but a swapoff moves each folio to the devices
 * still on (N devices: up to N-1 rewrites) and its loads make room by
 * evicting others. Here eviction stops first (reclaim answers as if swap
 * were full, so charges pass the limit at once), the reclaim passes in
 * flight are waited for, and each swapped-out folio is read once and
 * mapped. Clean folios are mapped already and keep their slots.
 */
#include <errno.h>

#include "pager/pager_internal.h"

int folio_load(struct uswap_pager *p, struct pager_region *r, size_t idx, uint32_t s,
	       bool force)
{
	bool whole = (s & PF_WHOLE) != 0;
	void *buf = p->unuse_buf;
	int rc = folio_swap_in(p, r, idx, whole, buf);

	if (rc < 0) {
		folio_free_slots(p, r, idx, whole);
		folio_poison(p, r, idx, buf, rc);
		return rc;
	}
	if (force)
		pager_charge_mapped(p, p->nr);
	else
		pager_charge(p, p->nr); /* held: over the limit, no eviction */
	rc = uffd_copy(p->uffd, folio_addr(r, idx), buf, p->folio_bytes, false);
	WARN_ONCE(rc, "pager: UFFDIO_COPY in hold failed: %d", rc);
	folio_free_slots(p, r, idx, whole);
	atomic_store_explicit(&r->state[idx], PF_RESIDENT | PF_REF, memory_order_release);
	pager_count(p, unuse_loaded);
	return 0;
}

long region_load_range(struct uswap_pager *p, struct pager_region *r, size_t first,
		       size_t last, bool force)
{
	long lost = 0;

	for (size_t idx = first; idx < last; idx++) {
		_Atomic uint32_t *state = &r->state[idx];
		uint32_t s;

		do {
			s = folio_wait_idle(state);
			if (pf_state(s) != PF_SWAPPED)
				break;
		} while (!atomic_compare_exchange_strong_explicit(
				 state, &s, (s & PF_WHOLE) | PF_MOVING,
				 memory_order_acquire, memory_order_relaxed));
		if (pf_state(s) != PF_SWAPPED)
			continue;
		pthread_mutex_lock(&p->unuse_lock);
		lost += folio_load(p, r, idx, s, force) < 0;
		pthread_mutex_unlock(&p->unuse_lock);
	}
	return lost;
}

USWAP_API int uswap_pager_hold(struct uswap_pager *p)
{
	long lost = 0;

	if (!p)
		return -EINVAL;
	atomic_fetch_add_explicit(&p->hold, 1, memory_order_acq_rel);
	/* Wait for the reclaim passes that began before: each runs with the
	 * lock read-held. */
	pthread_rwlock_wrlock(&p->lock);
	pthread_rwlock_unlock(&p->lock);
	pthread_rwlock_rdlock(&p->lock);
	for (size_t i = 0; i < p->nr_regions; i++)
		lost += region_load_range(p, p->regions[i], 0, region_used(p->regions[i]),
					  false);
	pthread_rwlock_unlock(&p->lock);
	return lost ? -EIO : 0;
}

USWAP_API void uswap_pager_release(struct uswap_pager *p)
{
	if (!p)
		return;
	if (atomic_fetch_sub_explicit(&p->hold, 1, memory_order_acq_rel) == 1)
		pager_charge_mapped(p, 0); /* wakes reclaim if over the limit */
}
