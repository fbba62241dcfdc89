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

#include <xxhash.h>

#include "pager/pager_internal.h"

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

/* ------------------------------------------------------------------------
 * Readahead: a fault that continues a sequential stream brings in the next
 * folios of the same kind (never touched, or swapped out) with the
 * faulting one, in one mapping ioctl: the kernel's swap readahead
 * (vm.page-cluster) and fault-around. The window doubles while the stream
 * goes on (1, 2, 4 ... folios, up to cfg.readahead_pages) and closes on
 * the first fault elsewhere. Folios brought in ahead get no reference bit:
 * until used they are the first the clock takes.
 * ---------------------------------------------------------------------- */

/* How many folios to try ahead of @idx in stream @q of @r. */
static unsigned int seq_window(struct uswap_pager *p, struct pager_region *r,
			       struct pager_seq *q, size_t idx)
{
	size_t expect = atomic_load_explicit(&q->next, memory_order_relaxed);
	unsigned int w = atomic_load_explicit(&q->window, memory_order_relaxed);

	if (!p->ra_folios)
		return 0;
	if (idx != expect)
		w = 0;
	else
		w = w ? (2 * w < p->ra_folios ? 2 * w : p->ra_folios) : 1;
	if (w > r->nr_folios - idx - 1)
		w = (unsigned int)(r->nr_folios - idx - 1);
	return w;
}

/* Note what the fault at @idx took: @got folios ahead of a @window. */
static void seq_note(struct pager_seq *q, size_t idx, unsigned int window, unsigned int got)
{
	atomic_store_explicit(&q->next, idx + 1 + got, memory_order_relaxed);
	atomic_store_explicit(&q->window, window, memory_order_relaxed);
}

/* Claim up to @max folios after @idx that are in state @want, stopping at
 * the first that is not; their state words go to @prev. */
static unsigned int claim_ahead(struct pager_region *r, size_t idx, unsigned int want,
				unsigned int max, uint32_t *prev)
{
	unsigned int n = 0;

	while (n < max) {
		_Atomic uint32_t *state = &r->state[idx + 1 + n];
		uint32_t s = atomic_load_explicit(state, memory_order_acquire);

		if (pf_state(s) != want || !folio_claim(state, &s, PF_FAULTING))
			break;
		prev[n++] = s;
	}
	return n;
}

/* Give back the claims on folios [idx + 1 + from, idx + 1 + n) ahead
 * that were not read. A thread that faulted there meanwhile left its
 * message to a handler that saw FAULTING and counted on our mapping: wake
 * it to fault again. */
static void unclaim_ahead(struct uswap_pager *p, struct pager_region *r, size_t idx,
			  unsigned int from, unsigned int n, const uint32_t *prev)
{
	for (unsigned int j = from; j < n; j++)
		folio_publish(&r->state[idx + 1 + j], prev[j]);
	if (from < n)
		uffd_wake(p->uffd, folio_addr(r, idx + 1 + from),
			  (size_t)(n - from) * p->folio_bytes);
}

/* A first read: the shared zero page over @len bytes at @addr,
 * write-protected before anyone waiting is woken. The kernel's anonymous
 * read fault maps it and charges nothing, since it is no memory of the
 * program's; here too, and the write protection tells us of the first
 * write (fault_wp()), which is when the kernel allocates the page and we
 * charge it. Return: 0 (mapped, protected: ZERO), 1 (mapped, but not
 * protected: it must be charged, as RESIDENT), or -errno (nothing mapped).
 *
 * Another thread that writes to the range between the two ioctls gets its
 * page from the kernel without a fault of ours: that page stays uncharged
 * until its next write after the protection, and its data stays mapped
 * (ZERO is never evicted, and a discard unmaps it as any mapped folio). */
static int map_zero_page(struct uswap_pager *p, void *addr, size_t len)
{
	int err = uffd_zeropage(p->uffd, addr, len, false);

	if (err)
		return err;
	err = uffd_writeprotect(p->uffd, addr, len, true);
	uffd_wake(p->uffd, addr, len);
	return err ? 1 : 0;
}

/* Map @len bytes of zeroes at @addr: the zero page write-protected
 * (@zero_page: a read), or a zero-filled copy. Return: as
 * map_zero_page(); a copy is 0 or -errno. */
static int map_zero(struct uswap_pager *p, void *addr, size_t len, bool zero_page)
{
	if (zero_page)
		return map_zero_page(p, addr, len);
	return uffd_copy(p->uffd, addr, p->zero, len, false);
}

/* First touch: zeroes. A read maps the shared zero page, uncharged until
 * written (map_zero_page()); a write maps a zero-filled copy, charged
 * first, as a swap-in is. */
static void fault_zero(struct uswap_pager *p, struct pager_handler *h,
		       struct pager_region *r, size_t idx, bool write, uint64_t t0)
{
	bool zp = !write && !(p->cfg.flags & USWAP_PAGER_NO_ZEROPAGE);
	uint32_t prev[PAGER_MAX_RA_FOLIOS];
	unsigned int w = seq_window(p, r, &r->ra, idx);
	unsigned int n = claim_ahead(r, idx, PF_NONE, w, prev);
	size_t len = (size_t)(1 + n) * p->folio_bytes;
	void *addr = folio_addr(r, idx);
	uint32_t st;
	int rc;

	region_note_used(r, idx + 1 + n);
	if (!zp)
		pager_charge(p, (1 + n) * p->nr);
	rc = map_zero(p, addr, len, zp);
	if (rc < 0 && n) {
		/* The window crossed into another VMA (-ENOENT: the program
		 * split the region with mprotect or mmap(MAP_FIXED)), where
		 * one ioctl cannot map: the faulting folio alone. */
		unclaim_ahead(p, r, idx, 0, n, prev);
		if (!zp)
			pager_uncharge(p, n * p->nr);
		n = 0;
		rc = map_zero(p, addr, p->folio_bytes, zp);
	}
	/* Not protected (or not mapped, as ever): charged as RESIDENT. */
	if (zp && rc != 0)
		pager_charge_mapped(p, (uint64_t)(1 + n) * p->nr);
	seq_note(&r->ra, idx, w, n);
	pager_record_latency(h, pager_now_ns() - t0);
	WARN_ONCE(rc < 0, "pager: zero fill at %p failed: %d", addr, rc);
	atomic_fetch_add_explicit(&p->cnt.zero_fills, 1 + n, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->cnt.readahead, n, memory_order_relaxed);
	st = zp && rc == 0 ? PF_ZERO : PF_RESIDENT;
	for (unsigned int i = 1; i <= n; i++)
		folio_publish(&r->state[idx + i], st | workingset_refault(p, r, idx + i));
	folio_publish(&r->state[idx], st | PF_REF | workingset_refault(p, r, idx));
}

/*
 * swapin_batch() - read the faulting folio and the @n claimed ahead of it
 * into @buf in one batch (one submission per device: swap readahead's
 * point). A failure ahead ends the run there; the folios not used go
 * back as they were (a lost one fails when it is used, not when it was
 * merely near). Return: the faulting folio's answer (as folio_swap_in());
 * *@got: folios ahead read, *@cached: of them from the swap cache.
 */
static int swapin_batch(struct uswap_pager *p, struct pager_region *r, size_t idx,
			uint32_t s, unsigned int n, const uint32_t *prev, char *buf,
			unsigned int *got, unsigned int *cached)
{
	bool whole[PAGER_MAX_RA_FOLIOS + 1];
	int rc[PAGER_MAX_RA_FOLIOS + 1];
	unsigned int i;

	whole[0] = (s & PF_WHOLE) != 0;
	for (i = 0; i < n; i++)
		whole[1 + i] = (prev[i] & PF_WHOLE) != 0;
	folios_swap_in(p, r, idx, 1 + n, whole, buf, rc);
	for (i = 0; rc[0] >= 0 && i < n && rc[1 + i] >= 0; i++)
		*cached += (unsigned int)rc[1 + i];
	*got = i;
	unclaim_ahead(p, r, idx, i, n, prev);
	return rc[0];
}

uint64_t folio_hash(const struct uswap_pager *p, const void *data)
{
	return XXH3_64bits(data, p->folio_bytes);
}

/* Publish a folio just mapped from swap: clean (slots kept, its contents
 * hashed before the mapping) or dirty (slots freed). */
static void swapin_done(struct uswap_pager *p, struct pager_region *r, size_t idx,
			uint32_t s, bool keep, uint32_t ref)
{
	bool whole = (s & PF_WHOLE) != 0;

	if (keep) {
		folio_publish(&r->state[idx], PF_CLEAN | ref | (whole ? PF_WHOLE : 0));
		/* Something reclaim can drop without a write, swap full or
		 * not: its scan is worth running again. */
		if (atomic_load_explicit(&p->swap_full_idle, memory_order_relaxed))
			atomic_store_explicit(&p->swap_full_idle, false, memory_order_relaxed);
		return;
	}
	folio_free_slots(p, r, idx, whole);
	folio_publish(&r->state[idx], PF_RESIDENT | ref);
}

/*
 * fault_swapin() - bring an evicted folio back whole (and the folios
 * ahead of it in a sequential stream). A read fault keeps the slots and
 * the hash of the contents (clean: evicting it again costs no write if
 * the hash still matches then, reclaim.c); a write fault frees them.
 * Either way the folio is mapped writable: the kernel's write to a clean
 * page needs no trip to us, and none to its fault handler either.
 */
static void fault_swapin(struct uswap_pager *p, struct pager_handler *h,
			 struct pager_region *r, size_t idx, uint32_t s, bool write,
			 uint64_t t0)
{
	/* For the forking thread, clean: a dirty folio's slots would be
	 * freed after the mapping ioctl, when the thread may be copying the
	 * instance already (a clean one keeps them; its eviction compares). */
	bool keep = (!write && !(p->cfg.flags & USWAP_PAGER_NO_KEEP_CLEAN)) || h->for_fork;
	uint32_t prev[PAGER_MAX_RA_FOLIOS];
	void *addr = folio_addr(r, idx);
	unsigned int w, n, cached = 0;
	int rc, err;

	w = seq_window(p, r, &r->ra, idx);
	n = claim_ahead(r, idx, PF_SWAPPED, w, prev);
	rc = swapin_batch(p, r, idx, s, n, prev, h->buf, &n, &cached);
	if (rc < 0) {
		folio_free_slots(p, r, idx, (s & PF_WHOLE) != 0);
		folio_poison(p, r, idx, h->buf, rc);
		pager_record_latency(h, pager_now_ns() - t0);
		seq_note(&r->ra, idx, 0, 0);
		return;
	}
	pager_charge(p, (1 + n) * p->nr);
	for (unsigned int i = 0; keep && i <= n; i++)
		r->hash[idx + i] = folio_hash(p, (char *)h->buf + (size_t)i * p->folio_bytes);
	err = uffd_copy(p->uffd, addr, h->buf, (size_t)(1 + n) * p->folio_bytes, false);
	if (err && n) {
		/* Another VMA inside the window (as fault_zero()): the
		 * folios ahead stay on swap, read for nothing. */
		unclaim_ahead(p, r, idx, 0, n, prev);
		pager_uncharge(p, n * p->nr);
		n = 0;
		cached = 0;
		err = uffd_copy(p->uffd, addr, h->buf, p->folio_bytes, false);
	}
	seq_note(&r->ra, idx, w, n);
	pager_record_latency(h, pager_now_ns() - t0);
	WARN_ONCE(err, "pager: UFFDIO_COPY at %p failed: %d", addr, err);
	atomic_fetch_add_explicit(&p->cnt.swapins, 1 + n, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->cnt.swapins_cached, (rc == 1) + cached,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&p->cnt.readahead, n, memory_order_relaxed);
	share_note_swapin(p, addr, 1 + n);
	/* The folios ahead too: they were evicted, and come back (as the
	 * kernel's swap readahead reports its folios' refaults). */
	for (unsigned int i = 1; i <= n; i++)
		swapin_done(p, r, idx + i, prev[i - 1], keep, workingset_refault(p, r, idx + i));
	swapin_done(p, r, idx, s, keep, PF_REF | workingset_refault(p, r, idx));
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
		case PF_ZERO:
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

/*
 * The first write to a folio mapping the zero page: charged now (the
 * kernel allocates its page when the thread retries), then unprotected
 * and woken. Its rank in the working set is kept. A program that reads
 * fresh memory before writing it (`x[i] += v` over a new buffer) would
 * take two faults a folio; when these writes go in sequence, the zero
 * folios ahead are charged and unprotected with this one, in a window
 * that grows as readahead's does (the kernel then allocates their pages
 * on write with no fault of ours).
 */
static void folio_unzero(struct uswap_pager *p, struct pager_region *r, size_t idx,
			 uint32_t s)
{
	uint32_t prev[PAGER_MAX_RA_FOLIOS];
	unsigned int w = seq_window(p, r, &r->zw, idx);
	unsigned int n = claim_ahead(r, idx, PF_ZERO, w, prev);
	void *addr = folio_addr(r, idx);
	int err;

	pager_charge(p, (1 + n) * p->nr);
	/* Counted before the wake, as the fault it answers. */
	pager_count(p, zero_written);
	err = uffd_writeprotect(p->uffd, addr, (size_t)(1 + n) * p->folio_bytes, false);
	if (err && n) { /* across another VMA: this folio alone */
		unclaim_ahead(p, r, idx, 0, n, prev);
		pager_uncharge(p, n * p->nr);
		n = 0;
		err = uffd_writeprotect(p->uffd, addr, p->folio_bytes, false);
	}
	WARN_ONCE(err, "pager: un-write-protect at %p failed: %d", addr, err);
	seq_note(&r->zw, idx, w, n);
	atomic_fetch_add_explicit(&p->cnt.zero_written, n, memory_order_relaxed);
	for (unsigned int i = 1; i <= n; i++)
		folio_publish(&r->state[idx + i], PF_RESIDENT | (prev[i - 1] & PF_ACT_MASK));
	folio_publish(&r->state[idx], PF_RESIDENT | PF_REF | (s & PF_ACT_MASK));
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
		case PF_ZERO:
			if (folio_claim(state, &s, PF_UNPROTECTING)) {
				folio_unzero(p, r, idx, s);
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
