// SPDX-License-Identifier: MIT
/*
 * fault.c - one userfaultfd message: a missing-page fault (first touch,
 * or a folio that was evicted) or a write-protect fault (a write to a
 * clean folio, or to one being evicted).
 *
 * Messages can be stale: several threads faulting on one folio give one
 * message each, and a message may be read after another handler already
 * mapped the folio (the kernel woke its thread then). So every message is
 * taken as "something at this folio may need doing", decided by the
 * folio's state, and a message with nothing to do wakes the range, which
 * costs nothing when nobody waits there.
 *
 * The whole folio is always mapped by one ioctl, which wakes every thread
 * waiting anywhere in it; a folio is never partly mapped.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <string.h>

#include "pager/pager.h"

uint32_t folio_wait_idle(_Atomic uint32_t *state)
{
	uint32_t s;

	for (unsigned int spins = 0;; spins++) {
		s = atomic_load_explicit(state, memory_order_acquire);
		if (!pf_busy(s))
			return s;
		if (spins < 64)
			cpu_relax();
		else
			sched_yield();
	}
}

/* Claim a stable folio: @s -> @busy (keeping PF_WHOLE, dropping the
 * other flags). Return: whether this thread owns it now. */
static bool folio_claim(_Atomic uint32_t *state, uint32_t *s, unsigned int busy)
{
	uint32_t next = (*s & PF_WHOLE) | busy;

	return atomic_compare_exchange_strong_explicit(state, s, next,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static void folio_publish(_Atomic uint32_t *state, uint32_t s)
{
	atomic_store_explicit(state, s, memory_order_release);
}

static void record_error(struct uswap_pager *p, struct pager_region *r, void *addr,
			 int err)
{
	void *none = NULL;

	atomic_fetch_add_explicit(&r->nr_errors, 1, memory_order_relaxed);
	atomic_compare_exchange_strong(&r->first_error, &none, addr);
	pager_count(p, read_errors);
	if (p->cfg.on_error)
		p->cfg.on_error(p->cfg.error_ctx, addr, err);
}

void folio_poison(struct uswap_pager *p, struct pager_region *r, size_t idx,
		  void *buf, int err)
{
	void *addr = folio_addr(r, idx);
	uint32_t s = PF_POISONED;
	int rc = -EOPNOTSUPP;

	/* Recorded before the thread is woken: by the time it sees the
	 * failure, uswap_region_error() and the callback have seen it. */
	record_error(p, r, addr, err);
	if (p->use_poison)
		rc = uffd_poison(p->uffd, addr, p->folio_bytes);
	if (rc) {
		/* No UFFDIO_POISON: map a fill no program stores by accident,
		 * so the thread is not left waiting forever. From here on the
		 * fill is ordinary (charged, evictable) memory; the error is
		 * what tells the program. */
		pager_charge(p, p->nr);
		memset(buf, USWAP_PAGER_POISON_BYTE, p->folio_bytes);
		rc = uffd_copy(p->uffd, addr, buf, p->folio_bytes, false);
		WARN_ONCE(rc, "pager: mapping the poison fill failed: %d", rc);
		s = PF_RESIDENT | PF_REF;
	}
	folio_publish(&r->state[idx], s);
}

/* First touch: zeroes. A read maps the shared zero page (no memory until
 * written; the charge is taken all the same, since the write that follows
 * allocates without telling us). */
static void fault_zero(struct uswap_pager *p, struct pager_handler *h,
		       struct pager_region *r, size_t idx, bool write, uint64_t t0)
{
	void *addr = folio_addr(r, idx);
	int err;

	pager_charge(p, p->nr);
	if (!write && !(p->cfg.flags & USWAP_PAGER_NO_ZEROPAGE))
		err = uffd_zeropage(p->uffd, addr, p->folio_bytes);
	else
		err = uffd_copy(p->uffd, addr, p->zero, p->folio_bytes, false);
	pager_record_latency(h, pager_now_ns() - t0);
	WARN_ONCE(err, "pager: zero fill at %p failed: %d", addr, err);
	pager_count(p, zero_fills);
	folio_publish(&r->state[idx], PF_RESIDENT | PF_REF);
}

/*
 * fault_swapin() - bring an evicted folio back whole. A read fault keeps
 * the slots and maps the folio write-protected (clean: evicting it again
 * costs no write until it is written); a write fault frees them.
 */
static void fault_swapin(struct uswap_pager *p, struct pager_handler *h,
			 struct pager_region *r, size_t idx, uint32_t s, bool write,
			 uint64_t t0)
{
	bool keep = !write && !(p->cfg.flags & USWAP_PAGER_NO_KEEP_CLEAN);
	bool whole = (s & PF_WHOLE) != 0;
	void *addr = folio_addr(r, idx);
	int rc, err;

	rc = folio_swap_in(p, r, idx, whole, h->buf);
	if (rc < 0) {
		folio_free_slots(p, r, idx, whole);
		folio_poison(p, r, idx, h->buf, rc);
		pager_record_latency(h, pager_now_ns() - t0);
		return;
	}
	pager_charge(p, p->nr);
	err = uffd_copy(p->uffd, addr, h->buf, p->folio_bytes, keep);
	pager_record_latency(h, pager_now_ns() - t0);
	WARN_ONCE(err, "pager: UFFDIO_COPY at %p failed: %d", addr, err);
	pager_count(p, swapins);
	if (rc == 1)
		pager_count(p, swapins_cached);
	if (keep) {
		folio_publish(&r->state[idx], PF_CLEAN | PF_REF | (whole ? PF_WHOLE : 0));
		return;
	}
	folio_free_slots(p, r, idx, whole);
	folio_publish(&r->state[idx], PF_RESIDENT | PF_REF);
}

static void fault_missing(struct uswap_pager *p, struct pager_handler *h,
			  struct pager_region *r, size_t idx, bool write, uint64_t t0)
{
	_Atomic uint32_t *state = &r->state[idx];

	for (;;) {
		uint32_t s = atomic_load_explicit(state, memory_order_acquire);

		switch (pf_state(s)) {
		case PF_NONE:
			if (folio_claim(state, &s, PF_FAULTING)) {
				fault_zero(p, h, r, idx, write, t0);
				return;
			}
			continue;
		case PF_SWAPPED:
			if (folio_claim(state, &s, PF_FAULTING)) {
				fault_swapin(p, h, r, idx, s, write, t0);
				return;
			}
			continue;
		case PF_FAULTING:
			return; /* its mapping ioctl wakes our thread */
		case PF_RESIDENT:
		case PF_CLEAN:
		case PF_UNPROTECTING:
		case PF_POISONED:
			/* Stale: mapped already (or poisoned, which faults
			 * with SIGBUS, not to us). */
			uffd_wake(p->uffd, folio_addr(r, idx), p->folio_bytes);
			return;
		default:
			/* Being unmapped or moved: it will be SWAPPED or
			 * RESIDENT in a moment; decide then. */
			folio_wait_idle(state);
			continue;
		}
	}
}

/* Lift the protection of a mapped folio we own and make it dirty. */
static void folio_unprotect(struct uswap_pager *p, struct pager_region *r, size_t idx,
			    uint32_t s)
{
	void *addr = folio_addr(r, idx);
	int err;

	if (pf_state(s) == PF_CLEAN)
		folio_free_slots(p, r, idx, (s & PF_WHOLE) != 0);
	err = uffd_writeprotect(p->uffd, addr, p->folio_bytes, false); /* wakes */
	WARN_ONCE(err, "pager: un-write-protect at %p failed: %d", addr, err);
	folio_publish(&r->state[idx], PF_RESIDENT | PF_REF);
}

static void fault_wp(struct uswap_pager *p, struct pager_region *r, size_t idx)
{
	_Atomic uint32_t *state = &r->state[idx];

	for (;;) {
		uint32_t s = atomic_load_explicit(state, memory_order_acquire);

		switch (pf_state(s)) {
		case PF_CLEAN:
		case PF_RESIDENT:
			/* CLEAN: the first write since it came back. RESIDENT:
			 * a stale message, or a protection left by an undone
			 * eviction; lifting it again is harmless. */
			if (folio_claim(state, &s, PF_UNPROTECTING)) {
				folio_unprotect(p, r, idx, s);
				return;
			}
			continue;
		case PF_EVICTING:
			/* Written while being copied out: ask the evictor to
			 * keep it; it wakes us either way. */
			if (atomic_compare_exchange_strong_explicit(
				    state, &s, s | PF_CANCEL, memory_order_relaxed,
				    memory_order_relaxed))
				return;
			continue;
		case PF_DROPPING:
		case PF_UNPROTECTING:
			return; /* the owner's unmap + wake, or un-protect, wakes us */
		case PF_FAULTING:
		case PF_MOVING:
			folio_wait_idle(state); /* mapped write-protected just now? */
			continue;
		default:
			/* NONE, SWAPPED, POISONED: not mapped any more; the
			 * thread will fault again as missing. */
			uffd_wake(p->uffd, folio_addr(r, idx), p->folio_bytes);
			return;
		}
	}
}

void fault_handle(struct uswap_pager *p, struct pager_handler *h, uintptr_t addr,
		  uint64_t flags, uint64_t t0_ns)
{
	struct pager_region *r = region_find(p, addr);
	size_t idx;

	if (!r)
		return; /* a region destroyed since: nobody waits there */
	idx = (addr - (uintptr_t)r->base) / p->folio_bytes;
	if (flags & UFFD_PAGEFAULT_FLAG_WP) {
		pager_count(p, wp_faults);
		fault_wp(p, r, idx);
		return;
	}
	pager_count(p, faults);
	fault_missing(p, h, r, idx, (flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0, t0_ns);
}
