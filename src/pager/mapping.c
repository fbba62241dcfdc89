// SPDX-License-Identifier: MIT
/*
 * mapping.c - the program changed the mapping under a region it gave the
 * pager: uswap_region_replaced(), uswap_region_mlock(),
 * uswap_region_munlock().
 *
 * A caller that adopts the anonymous mappings a program makes for itself
 * (the JVM's heap and V8's pages: reserved PROT_NONE, then committed with
 * mprotect() or mmap(MAP_FIXED)) forwards what the program then does to
 * them (`uswap run`'s agent: src/agent/adopt.c):
 *  - a new mapping over part of a region (mmap(MAP_FIXED), munmap()): the
 *    kernel throws the old pages away, so their slots and their charge go
 *    too, and an anonymous replacement is registered again (a new vma has
 *    no userfaultfd);
 *  - a protection other than read-write (mprotect()): the evictor could
 *    not read a PROT_NONE folio, and UFFDIO_MOVE refuses to move between
 *    vmas of different protections, so the folios come in and stay in, as
 *    mlock()ed pages stay in the kernel's memory, until the range is
 *    read-write again. Their charge leaves the limit while they are
 *    locked (they can give no room back) and comes back when unlocked.
 *
 * A locked folio is never picked by the clock. The lock is a byte per
 * folio beside its state word: the locker stores it and then waits for
 * each folio to be idle, the clock claims a folio and then reads it; a
 * full fence on both sides means a claim that missed the lock is seen by
 * the locker's wait, and one that came after it sees the lock and gives
 * the folio back.
 */
#include <errno.h>

#include "pager/pager_internal.h"

/* The folios [*@first, *@last) of the region holding all of [@addr,
 * @addr + @len), which must be folio-aligned. Context: p->lock held. */
static int range_folios(struct uswap_pager *p, const void *addr, size_t len,
			struct pager_region **rp, size_t *first, size_t *last)
{
	uintptr_t start = (uintptr_t)addr, end = start + len, fb = p->folio_bytes;
	struct pager_region *r;

	if (!addr || !len || end < start || start % fb || len % fb)
		return -EINVAL;
	r = region_find(p, start);
	if (!r)
		return -ENOENT;
	if (end > (uintptr_t)r->base + r->size)
		return -EINVAL;
	*rp = r;
	*first = (start - (uintptr_t)r->base) / fb;
	*last = (end - (uintptr_t)r->base) / fb;
	return 0;
}

USWAP_API int uswap_region_replaced(struct uswap_pager *p, void *addr, size_t len,
				    bool anon)
{
	struct pager_region *r;
	size_t first, last;
	uint64_t uncharge = 0;
	int err;

	if (!p)
		return -EINVAL;
	pthread_rwlock_rdlock(&p->lock);
	err = range_folios(p, addr, len, &r, &first, &last);
	if (err) {
		pthread_rwlock_unlock(&p->lock);
		return err;
	}
	for (size_t idx = first; idx < last; idx++) {
		uint32_t s = folio_claim_any(&r->state[idx]);
		bool apart = folio_lock_drop_apart(p, r, idx, false);

		switch (pf_state(s)) {
		case PF_CLEAN:
			uncharge += apart ? 0 : p->nr;
			/* fall through */
		case PF_SWAPPED:
			folio_free_slots(p, r, idx, (s & PF_WHOLE) != 0);
			break;
		case PF_RESIDENT:
			uncharge += apart ? 0 : p->nr;
			break;
		}
		atomic_store_explicit(&r->state[idx], PF_NONE, memory_order_release);
	}
	if (uncharge)
		pager_uncharge(p, (unsigned int)uncharge);
	/* A write fault on a CLEAN folio waits for a wake: it finds the new
	 * mapping then. */
	uffd_wake(p->uffd, addr, len);
	if (anon)
		err = uffd_register(p->uffd, addr, len);
	pthread_rwlock_unlock(&p->lock);
	return err;
}

bool folio_lock_drop_apart(struct uswap_pager *p, struct pager_region *r, size_t idx,
			   bool keep_lock)
{
	uint8_t apart = FOLIO_LOCKED_APART;

	if (!atomic_compare_exchange_strong_explicit(&r->locked[idx], &apart,
						     keep_lock ? FOLIO_LOCKED : FOLIO_UNLOCKED,
						     memory_order_relaxed, memory_order_relaxed)) {
		if (!keep_lock)
			atomic_store_explicit(&r->locked[idx], FOLIO_UNLOCKED,
					      memory_order_relaxed);
		return false;
	}
	atomic_fetch_sub_explicit(&p->locked_apart, p->nr, memory_order_relaxed);
	return true;
}

/* Take the charge of the resident locked folios of [@first, @last) out of
 * the limit. The folio is claimed meanwhile, so a discard or a MAP_FIXED
 * cannot uncharge it between the look and the move. */
static void lock_apart(struct uswap_pager *p, struct pager_region *r, size_t first,
		       size_t last)
{
	uint64_t moved = 0;

	for (size_t idx = first; idx < last; idx++) {
		uint8_t held = FOLIO_LOCKED;
		uint32_t s = folio_claim_any(&r->state[idx]);

		if ((pf_state(s) == PF_RESIDENT || pf_state(s) == PF_CLEAN) &&
		    atomic_compare_exchange_strong_explicit(&r->locked[idx], &held,
							    FOLIO_LOCKED_APART,
							    memory_order_relaxed,
							    memory_order_relaxed))
			moved += p->nr;
		atomic_store_explicit(&r->state[idx], s, memory_order_release);
	}
	if (moved) {
		atomic_fetch_add_explicit(&p->locked_apart, moved, memory_order_relaxed);
		pager_uncharge(p, (unsigned int)moved);
	}
}

long region_lock_range(struct uswap_pager *p, struct pager_region *r, size_t first,
		       size_t last)
{
	long lost;

	for (size_t idx = first; idx < last; idx++) {
		uint8_t unlocked = FOLIO_UNLOCKED;

		atomic_compare_exchange_strong_explicit(&r->locked[idx], &unlocked,
							FOLIO_LOCKED, memory_order_relaxed,
							memory_order_relaxed);
	}
	atomic_thread_fence(memory_order_seq_cst);
	/* Waiting for each folio to be idle ends an eviction that began
	 * before the lock (SWAPPED then, or kept RESIDENT). */
	lost = region_load_range(p, r, first, last, true);
	lock_apart(p, r, first, last);
	return lost;
}

USWAP_API int uswap_region_mlock(struct uswap_pager *p, void *addr, size_t len)
{
	struct pager_region *r;
	size_t first, last;
	long lost = 0;
	int err;

	if (!p)
		return -EINVAL;
	pthread_rwlock_rdlock(&p->lock);
	err = range_folios(p, addr, len, &r, &first, &last);
	if (!err)
		lost = region_lock_range(p, r, first, last);
	pthread_rwlock_unlock(&p->lock);
	return err ? err : lost ? -EIO : 0;
}

USWAP_API int uswap_region_munlock(struct uswap_pager *p, void *addr, size_t len)
{
	struct pager_region *r;
	size_t first, last;
	uint64_t back = 0;
	int err;

	if (!p)
		return -EINVAL;

	pthread_rwlock_rdlock(&p->lock);
	err = range_folios(p, addr, len, &r, &first, &last);
	for (size_t idx = first; !err && idx < last; idx++)
		back += folio_lock_drop_apart(p, r, idx, false) ? p->nr : 0;
	/* Evictable again: charged again, over the limit until reclaim
	 * catches up. */
	if (back)
		pager_charge_mapped(p, back);
	pthread_rwlock_unlock(&p->lock);
	return err;
}
