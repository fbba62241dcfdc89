/* SPDX-License-Identifier: MIT */
/*
 * stat.h - per-CPU statistics counters.
 *
 * One X-macro list (USWAP_COUNTERS) yields the per-CPU struct, the sum in
 * uswap_stats_get() and the printers, as mimalloc's stats do. A counter is
 * bumped with a relaxed load and store, not an atomic add: it lives in the
 * calling CPU's block, so only two threads sharing a CPU index at the same
 * instant can lose an increment, and the fast path stays free of locked
 * instructions. Readers sum the blocks while writers run.
 */
#ifndef USWAP_UTIL_STAT_H
#define USWAP_UTIL_STAT_H

#include <stdatomic.h>
#include <stdint.h>

#include <uswap/uswap.h>

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

struct lock_stat {
	stat_t acquired;
	stat_t contended;
};

/* Scalar counters of struct uswap_stats, in its order. */
#define USWAP_COUNTERS(X) \
	X(alloc_fast)     \
	X(alloc_slow)     \
	X(alloc_fail)     \
	X(free_slots)     \
	X(bad_free)       \
	X(frag_scans)     \
	X(cluster_moves)  \
	X(ring_advance)   \
	X(swpin)          \
	X(swpin_cached)   \
	X(write_errors)   \
	X(read_errors)    \
	X(unuse_slots)

/* Counters added in struct uswap_stats version 2, after locks[]: the
 * lab's policy counters (src/alloc/policy.h). A new counter goes at the
 * end of this list and of the public struct, with a version bump. */
#define USWAP_COUNTERS_V2(X)  \
	X(list_scan_steps)    \
	X(avail_requeue)      \
	X(slot_cache_hits)    \
	X(slot_cache_refills) \
	X(discards)           \
	X(sync_discards)

struct pcpu_stats {
	stat_t swpout[USWAP_NR_ORDERS];
	stat_t swpout_fallback[USWAP_NR_ORDERS];
#define X(name) stat_t name;
	USWAP_COUNTERS(X)
	USWAP_COUNTERS_V2(X)
#undef X
	struct lock_stat locks[USWAP_LOCK_MAX];
};

#endif /* USWAP_UTIL_STAT_H */
