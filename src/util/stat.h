/* SPDX-License-Identifier: MIT */
/*
 * stat.h - per-CPU statistics counters.
 *
 * A layer keeps its counters in per-CPU blocks of stat_t (the allocator's:
 * struct pcpu_stats, alloc/types.h, made from the public list
 * USWAP_STATS_COUNTERS, as mimalloc's stats are). A counter is
 * bumped with a relaxed load and store, not an atomic add: it lives in the
 * calling CPU's block, so only two threads sharing a CPU index at the same
 * instant can lose an increment, and the fast path stays free of locked
 * instructions. Readers sum the blocks while writers run.
 */
#ifndef USWAP_UTIL_STAT_H
#define USWAP_UTIL_STAT_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t stat_t;

static inline void stat_add(stat_t *s, uint64_t n)
{
	atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline void stat_inc(stat_t *s)
{
	stat_add(s, 1);
}

static inline uint64_t stat_read(const stat_t *s)
{
	return atomic_load_explicit((stat_t *)s, memory_order_relaxed);
}

/* One lock class's counters (spin_lock() bumps them). */
struct lock_stat {
	stat_t acquired;
	stat_t contended;
};

#endif /* USWAP_UTIL_STAT_H */
