// SPDX-License-Identifier: MIT
/*
 * reclaim.c - the resident limit, the clock, and eviction.
 *
 * The limit is a charge: pager_charge() before a folio is mapped,
 * pager_uncharge() after it is unmapped, so the pages mapped in the
 * regions never exceed p->resident, and p->resident never exceeds the
 * limit except when nothing at all can be evicted (swap full: counted in
 * over_limit). A fault that would pass the limit reclaims first, in the
 * handler thread (the kernel's direct reclaim from the charge path).
 *
 * Why a clock and not an LRU list: the pager never sees a hit. A page is
 * used by the application at memory speed with no fault, and user space
 * cannot read the hardware accessed bit (idle page tracking and
 * /proc/kpageflags need root and PFNs). The only uses the pager learns of
 * are faults (first touch, swap-in, a write to a write-protected clean
 * folio). An LRU ordered by those events alone would cost a list move per
 * fault under a shared lock and still not know about hits; the clock
 * (second chance) gets the same information from one reference bit per
 * folio, set by the fault path, cleared by the hand, with no list to keep:
 * the hand walks the regions' folio arrays in address order and evicts
 * the first resident folio whose bit is clear, clearing the bits it
 * passes. A folio faulted in since the hand last passed survives one more
 * lap, which is what keeps a hot folio that keeps faulting back in memory.
 * Picking is cheap (atomic loads under hand_lock); the writes happen
 * outside it, so several handlers reclaim in parallel.
 *
 * Eviction is race-free against application threads writing the folio,
 * and leaves alone a page the kernel holds pinned. Where the kernel has
 * UFFDIO_MOVE (6.8), a dirty folio is first moved out whole to a staging
 * slot (stage.c): atomic, so a thread that touches it afterwards faults
 * as missing and waits until the folio is SWAPPED (or back, if the write
 * failed); and refused for a pinned page, which then stays resident
 * (evict_pinned), as the kernel's reclaim keeps it. The copy is written
 * from the stage, and the stage is zapped, not the program's range.
 *
 * Without UFFDIO_MOVE (or with USWAP_PAGER_NO_MOVE), and for a folio
 * that cannot move for another reason (a hole, a read-only mapping), the
 * folio is write-protected (UFFDIO_WRITEPROTECT) before it is copied
 * out, so a writer blocks in a write-protect fault instead of changing
 * the page under the copy. The handler that gets that fault marks the
 * folio CANCEL; before unmapping, the evictor checks it and, if set, keeps
 * the folio (frees the new slots, lifts the protection, which wakes the
 * writer). If the write comes after the check, the folio is unmapped with
 * the writer still blocked; the evictor's final UFFDIO_WAKE makes it
 * retry, fault on the missing page and get the folio back from swap, with
 * the data it had when it was protected. Either way no write is lost and
 * the copy on swap is exactly the page that was unmapped. That path is
 * not pin-safe: MADV_DONTNEED unmaps a pinned page.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "pager/pager_internal.h"

#define RECLAIM_MAX_BATCH 1024         /* folios picked per pass */
#define CHARGE_STALL_NS   (2000000000ull) /* no progress this long: over limit */
#define DIRECT_BATCH_PAGES 64           /* see direct_batch() */
#define SWAP_FULL_PAUSE_NS     (10000000ull)   /* see p->swap_full_until */
#define SWAP_FULL_PAUSE_MAX_NS (1000000000ull) /* 1 s */
#define SWAP_FULL_ROOM_PAGES   256
#define GROUP_POLL_MS          10      /* kswapd looks at its group */

/* A folio's slots were freed (folio_swap.c): end a swap-full pause once
 * there is room for a batch (a load first: no shared write on every
 * free). */
void reclaim_note_freed(struct uswap_pager *p)
{
	if (atomic_load_explicit(&p->swap_full_until, memory_order_relaxed) &&
	    atomic_fetch_add_explicit(&p->swap_full_room, p->nr, memory_order_relaxed) + p->nr >=
		    SWAP_FULL_ROOM_PAGES)
		atomic_store_explicit(&p->swap_full_until, 0, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * The charge
 * ---------------------------------------------------------------------- */

static void note_peak(struct uswap_pager *p, uint64_t now)
{
	uint64_t peak = atomic_load_explicit(&p->resident_peak, memory_order_relaxed);

	while (now > peak &&
	       !atomic_compare_exchange_weak_explicit(&p->resident_peak, &peak, now,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

static bool try_charge(struct uswap_pager *p, unsigned int nr)
{
	uint64_t cur = atomic_load_explicit(&p->resident, memory_order_relaxed);

	if (p->group) { /* the group's limit; this pager's count follows */
		if (!group_try_charge(p->group, p->gslot, nr))
			return false;
		note_peak(p, atomic_fetch_add_explicit(&p->resident, nr,
						       memory_order_relaxed) + nr);
		return true;
	}
	while (cur + nr <= p->limit_pages) {
		if (atomic_compare_exchange_weak_explicit(&p->resident, &cur, cur + nr,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			note_peak(p, cur + nr);
			return true;
		}
	}
	return false;
}

static void force_charge(struct uswap_pager *p, unsigned int nr)
{
	uint64_t now = atomic_fetch_add_explicit(&p->resident, nr,
						 memory_order_relaxed) + nr;

	if (p->group)
		group_force_charge(p->group, p->gslot, nr, true);
	note_peak(p, now);
	pager_count(p, over_limit);
}

/* ------------------------------------------------------------------------
 * Background reclaim
 * ---------------------------------------------------------------------- */

static uint64_t free_pages(struct uswap_pager *p)
{
	uint64_t res = atomic_load_explicit(&p->resident, memory_order_relaxed);

	if (p->group)
		return group_free_pages(p->group);
	return res < p->limit_pages ? p->limit_pages - res : 0;
}

static void kswapd_wake(struct uswap_pager *p)
{
	if (atomic_exchange_explicit(&p->kswapd_active, true, memory_order_acq_rel))
		return; /* awake already: no lock on the fault path */
	pthread_mutex_lock(&p->kswapd_lock);
	p->kswapd_kick = true;
	pthread_cond_signal(&p->kswapd_cond);
	pthread_mutex_unlock(&p->kswapd_lock);
}

/* Evict until wmark_high pages are free, one batch per read-hold of
 * p->lock so region create/destroy can get in between. */
/* Evict until wmark_high pages are free (the group's, in a group), one
 * batch per read-hold of p->lock so region create/destroy can get in
 * between. In a group, only while this member holds at least an equal
 * share: the bigger members give room first (a member under its share
 * still evicts its own folios in direct reclaim when a charge fails).
 * Return: pages evicted. */
static uint64_t kswapd_balance(struct uswap_pager *p)
{
	uint64_t evicted = 0;

	while (free_pages(p) < p->wmark_high &&
	       !(p->group && group_below_share(p->group, p->gslot)) &&
	       !atomic_load_explicit(&p->stopping, memory_order_acquire)) {
		long got;

		pthread_rwlock_rdlock(&p->lock);
		got = pager_reclaim(p, (uint64_t)p->batch_folios * p->nr);
		pthread_rwlock_unlock(&p->lock);
		if (got <= 0)
			break; /* nothing to take now, or swap full: faults decide */
		evicted += (uint64_t)got;
	}
	return evicted;
}

/* In a group: is it short of room? After a member's call for room (a new
 * pressure_seq), down to wmark_high; otherwise below wmark_low, as for
 * our own faults. */
static bool group_short(struct uswap_pager *p)
{
	uint32_t seq = group_pressure_seq(p->group);

	if (seq != p->group_seq) {
		p->group_seq = seq;
		return free_pages(p) < p->wmark_high;
	}
	return free_pages(p) < p->wmark_low;
}

/* Sleep until kicked; in a group, also wake every GROUP_POLL_MS to look
 * at the group. Return: whether to balance. Context: kswapd_lock held. */
static bool kswapd_sleep(struct uswap_pager *p)
{
	struct timespec until;

	if (p->kswapd_kick)
		return true;
	if (!p->group) {
		pthread_cond_wait(&p->kswapd_cond, &p->kswapd_lock);
		return p->kswapd_kick;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += GROUP_POLL_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->kswapd_cond, &p->kswapd_lock, &until);
	if (p->kswapd_kick)
		return true;
	if (!group_short(p))
		return false;
	atomic_store_explicit(&p->kswapd_active, true, memory_order_release);
	return true;
}

static void *kswapd_main(void *arg)
{
	struct uswap_pager *p = arg;

	pthread_mutex_lock(&p->kswapd_lock);
	while (!atomic_load_explicit(&p->stopping, memory_order_acquire)) {
		uint64_t evicted;

		if (!kswapd_sleep(p))
			continue;
		p->kswapd_kick = false;
		pthread_mutex_unlock(&p->kswapd_lock);
		pager_count(p, kswapd_wakeups);
		evicted = kswapd_balance(p);
		atomic_store_explicit(&p->kswapd_active, false, memory_order_release);
		/* A fault that found us active did not kick: look again (in a
		 * group, only after progress: the group may be short of what
		 * other members hold, and the poll comes back anyway). */
		if (free_pages(p) < p->wmark_low && (evicted || !p->group) &&
		    !atomic_exchange_explicit(&p->kswapd_active, true, memory_order_acq_rel)) {
			pthread_mutex_lock(&p->kswapd_lock);
			p->kswapd_kick = true;
			continue;
		}
		pthread_mutex_lock(&p->kswapd_lock);
	}
	pthread_mutex_unlock(&p->kswapd_lock);
	return NULL;
}

int kswapd_start(struct uswap_pager *p)
{
	if (!p->kswapd_on)
		return 0;
	return -pthread_create(&p->kswapd, NULL, kswapd_main, p);
}

void kswapd_stop(struct uswap_pager *p)
{
	if (!p->kswapd_on)
		return;
	pthread_mutex_lock(&p->kswapd_lock);
	p->kswapd_kick = true;
	pthread_cond_signal(&p->kswapd_cond);
	pthread_mutex_unlock(&p->kswapd_lock);
	pthread_join(p->kswapd, NULL);
}

/* ------------------------------------------------------------------------
 * The charge
 * ---------------------------------------------------------------------- */

/* A fault that must make room itself takes a smaller batch than the
 * background thread: just enough to be past the kernel's single-page
 * flush ceiling (33 pages), so one TLB flush covers the batch, without
 * making the fault wait for a whole background batch. */
static uint64_t direct_batch(struct uswap_pager *p)
{
	uint64_t want = (uint64_t)p->batch_folios * p->nr;

	return want > DIRECT_BATCH_PAGES ? DIRECT_BATCH_PAGES : want;
}

bool pager_charge(struct uswap_pager *p, unsigned int nr)
{
	uint64_t stall_since = 0;
	bool waited = false;

	while (!try_charge(p, nr)) {
		if (p->kswapd_on)
			kswapd_wake(p);
		long got;

		if (!waited) {
			waited = true;
			pager_count(p, reclaim_waits);
			/* Others hold more than we do: they give room too. */
			if (p->group && group_below_share(p->group, p->gslot))
				group_raise_pressure(p->group);
		}
		got = pager_reclaim(p, direct_batch(p));
		if (got > 0) {
			stall_since = 0;
			continue;
		}
		if (got < 0) {
			/* Swap is full or failing: the folio cannot wait for
			 * room that will not come. */
			force_charge(p, nr);
			return true;
		}
		/* Everything resident is busy or being evicted by others:
		 * their uncharges are on the way. In a group, the room may be
		 * held by other members: ask them, and wait for their kswapd
		 * rather than spin. */
		if (p->group)
			group_raise_pressure(p->group);
		if (!stall_since)
			stall_since = pager_now_ns();
		else if (pager_now_ns() - stall_since > CHARGE_STALL_NS) {
			WARN_ONCE(1, "pager: nothing evictable for 2 s; mapping "
				  "above the limit");
			force_charge(p, nr);
			return true;
		}
		if (p->group) {
			struct timespec ms = { 0, 1000000L };

			nanosleep(&ms, NULL);
		} else {
			sched_yield();
		}
	}
	if (p->kswapd_on && free_pages(p) < p->wmark_low)
		kswapd_wake(p);
	return waited;
}

void pager_charge_mapped(struct uswap_pager *p, uint64_t nr)
{
	uint64_t now = atomic_fetch_add_explicit(&p->resident, nr,
						 memory_order_relaxed) + nr;

	if (p->group)
		group_force_charge(p->group, p->gslot, nr, false);
	note_peak(p, now);
	if (p->kswapd_on && free_pages(p) < p->wmark_low)
		kswapd_wake(p); /* without kswapd the next fault reclaims */
}

void pager_uncharge(struct uswap_pager *p, unsigned int nr)
{
	atomic_fetch_sub_explicit(&p->resident, nr, memory_order_relaxed);
	if (p->group)
		group_uncharge(p->group, p->gslot, nr);
}

/* ------------------------------------------------------------------------
 * The clock
 * ---------------------------------------------------------------------- */

struct victim {
	struct pager_region *r;
	size_t idx;
	char *data;        /* its bytes now: the region, or the stage */
	char *stage;       /* its place in the stage (NULL: none) */
	bool dirty;        /* a write needed (or, with clean, maybe) */
	bool clean;        /* came back clean: its old slots are still held,
			      and its hash tells whether it changed */
	bool whole;        /* slots as one allocation (after the write) */
	bool keep;         /* cancelled: stays resident */
	bool wp;           /* write-protected by this eviction */
	bool moved;        /* its pages are in the stage */
	bool written;      /* has new slots (to free if kept after all) */
	bool zero;         /* dirty, and all zeros: not written, it becomes
			      untouched (PF_NONE) and faults back as zeros */
};

/*
 * clock_pick() - claim up to @max folios for eviction, in hand order:
 * resident folios whose reference bit is clear and whose working-set
 * laps (PF_ACT, workingset.c) are used up become EVICTING; set bits are
 * cleared and laps counted down on the way (second chance, and more for
 * folios that came back soon after their last eviction). At most four
 * laps, so a pass ends even when every folio is busy or protected (the
 * protected ones are at most WS_PROTECT_NUM/DEN of the limit: the hand
 * frees some in every lap).
 * Context: p->lock read-held; takes hand_lock.
 */
static unsigned int clock_pick(struct uswap_pager *p, struct victim *v, unsigned int max)
{
	size_t budget;
	unsigned int n = 0;

	pthread_mutex_lock(&p->hand_lock);
	budget = 4 * p->total_folios + p->nr_regions + 1;
	while (n < max && budget-- && p->nr_regions) {
		struct pager_region *r;
		uint32_t s, next;
		size_t idx;

		if (p->hand_region >= p->nr_regions) {
			p->hand_region = 0;
			p->hand_folio = 0;
			workingset_lap(p);
		}
		r = p->regions[p->hand_region];
		if (p->hand_folio >= region_used(r)) {
			p->hand_region++;
			p->hand_folio = 0;
			continue;
		}
		idx = p->hand_folio++;
		s = atomic_load_explicit(&r->state[idx], memory_order_acquire);
		if ((pf_state(s) != PF_RESIDENT && pf_state(s) != PF_CLEAN) ||
		    atomic_load_explicit(&r->locked[idx], memory_order_relaxed))
			continue;
		if (s & (PF_REF | PF_ACT_MASK)) {
			/* A failed exchange means the folio changed: look at
			 * it again next lap. */
			next = s & PF_REF ? s & ~PF_REF : s - PF_ACT_ONE;
			p->ws_lap_count += !(s & PF_REF);
			atomic_compare_exchange_strong_explicit(&r->state[idx], &s, next,
								memory_order_relaxed,
								memory_order_relaxed);
			continue;
		}
		/* A clean folio too: it is mapped writable, so it is read
		 * as a dirty one is, and its hash says if it was written. */
		next = (s & ~PF_STATE_MASK & ~PF_CANCEL) | PF_EVICTING;
		if (!atomic_compare_exchange_strong_explicit(&r->state[idx], &s, next,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		/* mlocked meanwhile (region_lock_range()): give it back. With
		 * the locker's fence, one of us sees the other's store. */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&r->locked[idx], memory_order_relaxed)) {
			atomic_store_explicit(&r->state[idx], s, memory_order_release);
			continue;
		}
		v[n].r = r;
		v[n].idx = idx;
		v[n].dirty = true;
		v[n].clean = pf_state(s) == PF_CLEAN;
		v[n].whole = (s & PF_WHOLE) != 0;
		v[n].data = folio_addr(r, idx);
		v[n].stage = NULL;
		v[n].keep = false;
		v[n].wp = false;
		v[n].moved = false;
		v[n].written = false;
		v[n].zero = false;
		n++;
	}
	pthread_mutex_unlock(&p->hand_lock);
	return n;
}

/* Apply @fn to maximal runs of consecutive victims (same region, adjacent
 * folios) that @pred selects. Return: the first error of @fn, or 0. */
static int for_each_run(struct uswap_pager *p, struct victim *v, unsigned int n,
			bool (*pred)(const struct victim *),
			int (*fn)(struct uswap_pager *, struct victim *, unsigned int))
{
	int first_err = 0;

	for (unsigned int i = 0; i < n;) {
		unsigned int j = i + 1;

		if (!pred(&v[i])) {
			i++;
			continue;
		}
		while (j < n && pred(&v[j]) && v[j].r == v[i].r && v[j].idx == v[j - 1].idx + 1)
			j++;
		int err = fn(p, &v[i], j - i);

		if (err && !first_err)
			first_err = err;
		i = j;
	}
	return first_err;
}

static bool is_dirty(const struct victim *v)
{
	return v->dirty && !v->keep;
}

static bool needs_write(const struct victim *v)
{
	return is_dirty(v) && !v->zero;
}

/* Leaving, and still mapped in the region (not moved out). */
static bool needs_zap(const struct victim *v)
{
	return !v->keep && !v->moved;
}

static bool can_move(const struct victim *v)
{
	return is_dirty(v) && v->stage;
}

static bool any_dirty(const struct victim *v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (is_dirty(&v[i]))
			return true;
	return false;
}

/* Did any victim go through the stage (which then needs a zap)? */
static bool staged(const struct victim *v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (v[i].moved)
			return true;
	return false;
}

/* Dirty, leaving and not moved out: the write-protect path. */
static bool needs_protect(const struct victim *v)
{
	return is_dirty(v) && !v->moved;
}

static bool is_any(const struct victim *v)
{
	return true;
}

static int run_protect(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	int err = uffd_writeprotect(p->uffd, folio_addr(v->r, v->idx),
				    n * p->folio_bytes, true);

	for (unsigned int i = 0; i < n; i++) {
		v[i].wp = !err;
		if (err)
			v[i].keep = true; /* cannot evict it safely */
	}
	/* A target that exited meanwhile (ESRCH) is no error of ours. */
	WARN_ONCE(err && !(p->remote && err == -ESRCH), "pager: UFFDIO_WRITEPROTECT = %d", err);
	return 0;
}

/*
 * run_move() - move a run of dirty victims out to their stage places in
 * as few ioctls as the pages allow. A folio with a page that cannot move
 * gets its moved pages back: pinned (EBUSY), it is kept; for another
 * reason it takes the write-protect path.
 */
static int run_move(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	size_t len = n * p->folio_bytes, done = 0;
	char *dst = v->stage, *src = v->data; /* v->stage may be cleared below */

	while (done < len) {
		int err = 0;
		size_t k;

		done += (size_t)stage_move_out(p, dst + done, src + done, len - done, &err);
		if (!err)
			break;
		k = done / p->folio_bytes;
		stage_move_back(p, v[k].data, v[k].stage, done - k * p->folio_bytes);
		if (err == -EBUSY) {
			v[k].keep = true;
			pager_count(p, evict_pinned);
		}
		v[k].stage = NULL; /* not moved: kept, or protected */
		done = (k + 1) * p->folio_bytes;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (!v[i].stage)
			continue;
		v[i].moved = true;
		v[i].data = v[i].stage;
	}
	return 0;
}

/* A target's run of protected victims, copied into their stage places
 * (mm_read()): what the swap-out writes and mark_zero() reads. A run that
 * cannot be read is kept. */
static int run_fetch(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	int err = mm_read(p, v->stage, folio_addr(v->r, v->idx), n * p->folio_bytes);

	for (unsigned int i = 0; i < n; i++) {
		if (err)
			v[i].keep = true;
		else
			v[i].data = v[i].stage;
	}
	return err;
}

static bool needs_fetch(const struct victim *v)
{
	return is_dirty(v) && v->wp && v->stage;
}

/* Unmap every victim that leaves and is still mapped, one range per run,
 * in one mm_zap(): a single round trip to a target per pass. */
static void zap_victims(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	struct iovec r[RECLAIM_MAX_BATCH];
	unsigned int k = 0;
	int err;

	for (unsigned int i = 0; i < n;) {
		unsigned int j = i + 1;

		if (!needs_zap(&v[i])) {
			i++;
			continue;
		}
		while (j < n && needs_zap(&v[j]) && v[j].r == v[i].r && v[j].idx == v[j - 1].idx + 1)
			j++;
		r[k++] = (struct iovec){ folio_addr(v[i].r, v[i].idx), (j - i) * p->folio_bytes };
		i = j;
	}
	err = mm_zap(p, r, k);
	WARN_ONCE(err, "pager: unmapping victims failed (%d)", err);
}

static int run_wake(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	uffd_wake(p->uffd, folio_addr(v->r, v->idx), n * p->folio_bytes);
	return 0;
}

/* Undo a dirty victim's eviction: drop the new copy, lift the protection
 * (which wakes a blocked writer) and give it another lap. */
static void victim_keep(struct uswap_pager *p, struct victim *v, bool written)
{
	_Atomic uint32_t *state = &v->r->state[v->idx];
	uint32_t s;

	if (written)
		folio_free_slots(p, v->r, v->idx, v->whole);
	if (v->moved)
		stage_move_back(p, folio_addr(v->r, v->idx), v->stage, p->folio_bytes);
	if (v->wp)
		uffd_writeprotect(p->uffd, folio_addr(v->r, v->idx), p->folio_bytes, false);
	s = atomic_load_explicit(state, memory_order_relaxed);
	if (v->clean) /* its slots and hash still hold */
		atomic_store_explicit(state, (s & PF_WHOLE) | PF_CLEAN | PF_REF,
				      memory_order_release);
	else
		atomic_store_explicit(state, PF_RESIDENT | PF_REF, memory_order_release);
	if (v->wp || v->moved || written) /* not a swap-full pause's skip */
		pager_count(p, evict_cancelled);
}

/* A swap-out failed: pause dirty evictions; twice as long as the last
 * pause if nothing of this batch could be written either (@none). */
static void swap_full_pause(struct uswap_pager *p, bool none)
{
	uint64_t len = none ? atomic_load_explicit(&p->swap_full_pause_ns,
						   memory_order_relaxed) * 2 : 0;

	if (len < SWAP_FULL_PAUSE_NS)
		len = SWAP_FULL_PAUSE_NS;
	if (len > SWAP_FULL_PAUSE_MAX_NS)
		len = SWAP_FULL_PAUSE_MAX_NS;
	atomic_store_explicit(&p->swap_full_pause_ns, len, memory_order_relaxed);
	atomic_store_explicit(&p->swap_full_room, 0, memory_order_relaxed);
	atomic_store_explicit(&p->swap_full_idle, false, memory_order_relaxed);
	atomic_store_explicit(&p->swap_full_until, pager_now_ns() + len, memory_order_relaxed);
}

/*
 * evict_write() - write every dirty victim still leaving in one batch
 * (uswap_swap_out_batch(): one submission per device for all of them),
 * then record each one's slots; a folio that found no run of its order
 * is split and written page by page. A folio whose write failed is kept
 * and swap-outs pause (p->swap_full_until). Return: the first error, or 0.
 */
static int evict_write(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	struct uswap_swap_io io[RECLAIM_MAX_BATCH];
	unsigned int at[RECLAIM_MAX_BATCH], k = 0, written = 0;
	int first_err = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (!needs_write(&v[i]))
			continue;
		io[k] = (struct uswap_swap_io){ .pages = v[i].data, .order = p->order };
		at[k++] = i;
	}
	if (!k)
		return 0;
	/* The application's pages, read under write protection. */
	tsan_ignore_reads_begin();
	uswap_swap_out_batch(p->u, io, k, p->cfg.swap_flags);
	for (unsigned int j = 0; j < k; j++) {
		struct victim *vi = &v[at[j]];
		int err = folio_swapped_out(p, vi->r, vi->idx, io[j].pages, io[j].result,
					    io[j].entry, &vi->whole);

		if (!err) {
			vi->written = true;
			written++;
			continue;
		}
		vi->keep = true;
		first_err = first_err ? first_err : err;
	}
	tsan_ignore_reads_end();
	if (first_err)
		swap_full_pause(p, !written);
	else if (atomic_load_explicit(&p->swap_full_pause_ns, memory_order_relaxed))
		atomic_store_explicit(&p->swap_full_pause_ns, 0, memory_order_relaxed);
	return first_err;
}

/* Is the folio at @addr all zeros? */
static bool folio_is_zero(const void *addr, size_t len)
{
	const uint64_t *w = addr;

	for (size_t i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/*
 * check_clean() - of the victims that came back clean, those whose
 * contents, read in the stage or under their write protection, still hash
 * as at swap-in go without a write on their old slots; the others free
 * those and are written like any dirty folio (in a swap-full pause they
 * are kept instead, @paused).
 */
static void check_clean(struct uswap_pager *p, struct victim *v, unsigned int n, bool paused)
{
	tsan_ignore_reads_begin(); /* the application's pages */
	for (unsigned int i = 0; i < n; i++) {
		struct victim *vi = &v[i];

		if (!vi->clean || vi->keep || !(vi->wp || vi->moved))
			continue;
		if (folio_hash(p, vi->data) == vi->r->hash[vi->idx]) {
			vi->dirty = false;
			continue;
		}
		if (paused) {
			vi->keep = true;
			continue;
		}
		folio_free_slots(p, vi->r, vi->idx, vi->whole);
		vi->clean = false;
	}
	tsan_ignore_reads_end();
}

/*
 * mark_zero() - find the dirty victims that hold only zeros, read in the
 * stage or under their write protection: the kernel does not write such
 * a folio either (swpout_zero, 6.12), and here it needs no slot at all: it becomes
 * untouched again, and its next fault maps zeros. Common after a read
 * of untouched memory (the zero page) or a program's own clearing.
 */
static void mark_zero(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	tsan_ignore_reads_begin(); /* the application's pages */
	for (unsigned int i = 0; i < n; i++)
		if (is_dirty(&v[i]) && (v[i].wp || v[i].moved))
			v[i].zero = folio_is_zero(v[i].data, p->folio_bytes);
	tsan_ignore_reads_end();
}

/*
 * evict() - move the dirty victims out (or protect them), write them out
 * but those all zeros, keep the pinned ones, those written meanwhile and
 * those whose write failed, unmap the rest and publish them as SWAPPED
 * (all zeros: NONE). Return: pages uncharged, or the swap-out error when
 * nothing could be evicted because of it.
 */
static long evict(struct uswap_pager *p, struct victim *v, unsigned int n)
{
	unsigned int slot = 0;
	char *stage = NULL;
	int swap_err = 0;
	long freed = 0;

	bool paused = pager_now_ns() < atomic_load_explicit(&p->swap_full_until,
							     memory_order_relaxed);

	/* In a swap-full pause, only clean folios can go (those that came
	 * back clean are read first, check_clean()). */
	if (paused) {
		for (unsigned int i = 0; i < n; i++)
			if (v[i].dirty && !v[i].clean) {
				v[i].keep = true;
				swap_err = -ENOSPC;
			}
	}
	if (p->stage && any_dirty(v, n)) {
		stage = stage_get(p, &slot);
		for (unsigned int i = 0; i < n; i++)
			if (is_dirty(&v[i]))
				v[i].stage = stage + (size_t)i * p->folio_bytes;
		if (!p->remote)
			for_each_run(p, v, n, can_move, run_move);
	}
	for_each_run(p, v, n, needs_protect, run_protect);
	if (p->remote)
		for_each_run(p, v, n, needs_fetch, run_fetch);
	check_clean(p, v, n, paused);
	mark_zero(p, v, n);
	if (!swap_err)
		swap_err = evict_write(p, v, n);
	for (unsigned int i = 0; i < n; i++) {
		/* Written while we copied? Then the copy may be stale: keep
		 * the folio (the writer waits in its write-protect fault). */
		if (v[i].dirty && !v[i].keep &&
		    (atomic_load_explicit(&v[i].r->state[v[i].idx], memory_order_acquire) &
		     PF_CANCEL))
			v[i].keep = true;
		if (v[i].keep)
			victim_keep(p, &v[i], v[i].written);
	}
	zap_victims(p, v, n);
	for (unsigned int i = 0; i < n; i++) {
		if (v[i].keep)
			continue;
		workingset_evicted(p, v[i].r, v[i].idx);
		atomic_store_explicit(&v[i].r->state[v[i].idx],
				      v[i].zero ? PF_NONE
						: PF_SWAPPED | (v[i].whole ? PF_WHOLE : 0),
				      memory_order_release);
		pager_uncharge(p, p->nr);
		pager_count(p, evictions);
		if (!v[i].dirty)
			pager_count(p, evict_clean);
		if (v[i].zero)
			pager_count(p, evict_zero);
		freed += p->nr;
	}
	/* Writers that hit the protection after the CANCEL check sleep on a
	 * page that is gone now: make them fault again. */
	for_each_run(p, v, n, is_any, run_wake);
	if (stage)
		stage_put(p, slot, staged(v, n) ? (size_t)n * p->folio_bytes : 0);
	if (paused && !freed) /* the rest of this pause: no scan (pager_reclaim) */
		atomic_store_explicit(&p->swap_full_idle, true, memory_order_relaxed);
	if (!freed && swap_err)
		return swap_err == -E2BIG ? -ENOSPC : swap_err;
	return freed;
}

long pager_reclaim(struct uswap_pager *p, uint64_t want)
{
	struct victim v[RECLAIM_MAX_BATCH];
	unsigned int max = (unsigned int)((want + p->nr - 1) / p->nr);
	unsigned int n;

	if (atomic_load_explicit(&p->hold, memory_order_acquire))
		return -ENOSPC; /* held (hold.c): charges pass the limit */
	/* Swap full, and this pause's last pass found nothing clean to drop:
	 * scanning again per fault would only burn the CPU. */
	if (atomic_load_explicit(&p->swap_full_idle, memory_order_relaxed) &&
	    pager_now_ns() < atomic_load_explicit(&p->swap_full_until, memory_order_relaxed))
		return -ENOSPC;
	if (max > RECLAIM_MAX_BATCH)
		max = RECLAIM_MAX_BATCH;
	if (p->stage && max > p->batch_folios)
		max = p->batch_folios; /* a stage slot's size */
	if (!max)
		max = 1;
	n = clock_pick(p, v, max);
	if (!n)
		return 0;
	return evict(p, v, n);
}
