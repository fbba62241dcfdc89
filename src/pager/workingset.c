// SPDX-License-Identifier: MIT
/*
 * workingset.c - telling a hot folio from a cold one by how soon it comes
 * back after eviction: the refault distance (the idea of the kernel's
 * mm/workingset.c, shadow entries and activation on refault).
 *
 * Why: the pager sees no use of a resident folio. A folio used at memory
 * speed never faults, so to the clock it looks as old as one nobody
 * touches, and it is evicted every other lap, only to fault straight
 * back: its refault is the only sign that it was hot. On this kernel user
 * space has no other: the hardware accessed bit is out of reach (no idle
 * page tracking, DAMON without virtual address monitoring, no
 * multi-generational LRU; see docs/pager.md), and PAGEMAP_SCAN reports
 * writes, not reads.
 *
 * So each eviction stamps the folio's shadow (r->shadow[]) with the
 * eviction clock, the number of folios evicted so far (p->ws_clock). When
 * the folio faults back, the folios evicted since then, its refault
 * distance, are how much more room it would have needed to stay. A
 * distance within the limit means it belongs to a working set that fits
 * (the kernel activates a refaulting page whose distance is within the
 * workingset's size): its rank goes up by one, up to WS_RANK_MAX, else
 * back to 0. A folio of rank k > 0 gets 2^(k+2) - 1 laps of the clock
 * more than another (PF_ACT, counted down by the hand after the reference
 * bit: 7, 15, ... 127), so a folio that keeps coming back stays longer
 * each time, about twice as long as the time before, while a stream or a
 * scan, whose distance is larger than memory, gets none and goes first.
 *
 * Protection is capped, as the kernel keeps an inactive list beside the
 * active one: while the hand found more than WS_PROTECT_NUM/DEN of the
 * limit's folios protected over its last lap, no folio gains rank (those
 * protected count down as before). So a working set larger than memory,
 * whose folios all come back within a limit's worth of evictions, cannot
 * protect all of memory and leave the hand nothing to evict; it goes in
 * the order it would without ranks.
 *
 * Shadow word: WS_VALID | eviction clock (28 bits, in folios) << 3 |
 * rank. While the folio is resident only the rank is kept; a discard (the
 * program let the memory go) clears it. Only the folio's owner (a busy
 * state) reads or writes its shadow, so it needs no atomics.
 */
#include "pager/pager_internal.h"

#define WS_VALID      0x80000000u
#define WS_RANK_MASK  7u
/* The laps a rank gives: the first activation 7 (a hot folio evicted
 * blindly comes back within a lap or two), then twice as many plus one
 * with each. */
#define ws_laps(rank) ((rank) ? (1u << ((rank) + 2)) - 1 : 0u)
#define WS_CLOCK_BITS 28
#define WS_CLOCK_MASK ((1u << WS_CLOCK_BITS) - 1)

_Static_assert(WS_RANK_MAX <= WS_RANK_MASK, "the rank fits its bits");
_Static_assert(((ws_laps(WS_RANK_MAX)) << PF_ACT_SHIFT) == PF_ACT_MASK,
	       "PF_ACT holds the laps of the highest rank");

void workingset_evicted(struct uswap_pager *p, struct pager_region *r, size_t idx)
{
	uint64_t now = atomic_fetch_add_explicit(&p->ws_clock, 1, memory_order_relaxed);

	if (p->cfg.flags & USWAP_PAGER_NO_WORKINGSET)
		return;
	r->shadow[idx] = WS_VALID | ((uint32_t)now & WS_CLOCK_MASK) << 3 |
			 (r->shadow[idx] & WS_RANK_MASK);
}

/* Over the last lap, more folios protected than the cap allows? */
static bool workingset_full(struct uswap_pager *p)
{
	uint64_t protected = atomic_load_explicit(&p->ws_protected, memory_order_relaxed);

	return protected * p->nr * WS_PROTECT_DEN > p->limit_pages * WS_PROTECT_NUM;
}

uint32_t workingset_refault(struct uswap_pager *p, struct pager_region *r, size_t idx)
{
	uint32_t sh = r->shadow[idx], rank = 0, distance, now;

	if (!(sh & WS_VALID))
		return 0;
	now = (uint32_t)atomic_load_explicit(&p->ws_clock, memory_order_relaxed);
	distance = (now - (sh >> 3)) & WS_CLOCK_MASK;
	pager_count(p, workingset_refault);
	if ((uint64_t)distance * p->nr <= p->limit_pages && !workingset_full(p)) {
		rank = (sh & WS_RANK_MASK) + 1;
		if (rank > WS_RANK_MAX)
			rank = WS_RANK_MAX;
		pager_count(p, workingset_activate);
	}
	r->shadow[idx] = rank;
	return ws_laps(rank) << PF_ACT_SHIFT;
}

void workingset_lap(struct uswap_pager *p)
{
	atomic_store_explicit(&p->ws_protected, p->ws_lap_count, memory_order_relaxed);
	p->ws_lap_count = 0;
}

void workingset_forget(struct pager_region *r, size_t idx)
{
	r->shadow[idx] = 0;
}
