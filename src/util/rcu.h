/* SPDX-License-Identifier: MIT */
/*
 * rcu.h - the little of RCU the allocator uses, on liburcu's "bulletproof"
 * flavour (urcu-bp): threads need no registration, which a library called
 * from arbitrary threads requires.
 *
 * Pointers are published with a release store and read with an acquire
 * load (a plain mov on x86), so ThreadSanitizer sees the publication. For
 * reclamation TSan cannot see liburcu's grace period, so in TSan builds
 * each read-side exit is a release on @hb and the writer acquires @hb
 * after synchronize: the happens-before the grace period really provides.
 */
#ifndef USWAP_UTIL_RCU_H
#define USWAP_UTIL_RCU_H

#include <urcu/urcu-bp.h>

#include "util/tsan.h"

#define rcu_publish(pp, v) __atomic_store_n((pp), (v), __ATOMIC_RELEASE)
#define rcu_deref(p)       __atomic_load_n(&(p), __ATOMIC_ACQUIRE)

static inline void rcu_read_begin(void)
{
	urcu_bp_read_lock();
}

static inline void rcu_read_end(void *hb)
{
	tsan_release(hb);
	urcu_bp_read_unlock();
}

/* rcu_wait_readers() - return once every read-side section that began
 * before the call has ended. May sleep. */
static inline void rcu_wait_readers(void *hb)
{
	urcu_bp_synchronize_rcu();
	tsan_acquire(hb);
}

/* rcu_fork_safe() - make RCU usable in a fork() child (rcu.c). Once per
 * process, from any thread; the handlers it registers run around every
 * later fork(). */
void rcu_fork_safe(void);

#endif /* USWAP_UTIL_RCU_H */
