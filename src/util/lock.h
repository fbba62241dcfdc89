/* SPDX-License-Identifier: MIT */
/*
 * lock.h - the spinlock every allocator lock is made of, with acquisition
 * and contention counting per lock class.
 *
 * Four bytes, so a cluster descriptor stays small (metadata budget: 1.1
 * bytes per slot). Waiters spin on a plain load, then yield: in user space
 * the holder can be preempted, and on a 2-core machine pure spinning would
 * burn the holder's time slice.
 *
 * Debug builds (USWAP_DEBUG >= 2) record the owner thread so locked helpers
 * can open with lock_assert_held(), the kernel's lockdep_assert_held().
 */
#ifndef USWAP_UTIL_LOCK_H
#define USWAP_UTIL_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"
#include "util/probe.h"
#include "util/stat.h"

struct spinlock {
	_Atomic uint32_t locked; /* 0 free, 1 held */
};

#define SPINLOCK_INIT { 0 }

void spin_lock_wait(struct spinlock *l);

static inline bool spin_trylock(struct spinlock *l)
{
	return atomic_load_explicit(&l->locked, memory_order_relaxed) == 0 &&
	       !atomic_exchange_explicit(&l->locked, 1, memory_order_acquire);
}

/*
 * spin_lock() - take @l, counting the acquisition (and the contention, if
 * the lock was held) in @ls, the calling CPU's counters for @l's class.
 * The probe hears of it with the lock expression and the calling
 * function as names (perf lock's lock and caller), hence the macro.
 */
#define spin_lock(l, ls) spin_lock_at((l), (ls), #l, __func__)

static inline void spin_lock_at(struct spinlock *l, struct lock_stat *ls,
				const char *name, const char *site)
{
	stat_inc(&ls->acquired);
	if (likely(!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))) {
		probe_lock(l, name, site);
		return;
	}
	stat_inc(&ls->contended);
	spin_lock_wait(l);
	probe_lock(l, name, site);
}

/* spin_trylock_stat() - spin_trylock() that counts a success. */
#define spin_trylock_stat(l, ls) spin_trylock_stat_at((l), (ls), #l, __func__)

static inline bool spin_trylock_stat_at(struct spinlock *l, struct lock_stat *ls,
					const char *name, const char *site)
{
	if (!spin_trylock(l))
		return false;
	stat_inc(&ls->acquired);
	probe_lock(l, name, site);
	return true;
}

static inline void spin_unlock(struct spinlock *l)
{
	probe_unlock(l);
	atomic_store_explicit(&l->locked, 0, memory_order_release);
}

static inline bool spin_is_locked(struct spinlock *l)
{
	return atomic_load_explicit(&l->locked, memory_order_relaxed) != 0;
}

#define lock_assert_held(l) uswap_assert_internal(spin_is_locked(l))

#endif /* USWAP_UTIL_LOCK_H */
