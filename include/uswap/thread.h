/* SPDX-License-Identifier: MIT */
/*
 * uswap/thread.h - the calling thread's switches, kept by src/util/
 * (percpu.c): the CPU index the thread counts as, and the probe that hears
 * the allocator's locks and steps. For the lab, the tests and the
 * benchmarks, which emulate many CPUs on few threads and time them in
 * virtual time; <uswap/lab.h> includes it, <uswap/uswap.h> does not.
 * Includes nothing of uswap's but <uswap/api.h> (the export mark), so
 * src/util/ builds on it alone.
 */
#ifndef USWAP_THREAD_H
#define USWAP_THREAD_H

#include <stdint.h>

#include <uswap/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * uswap_thread_set_cpu() - pin the calling thread's per-CPU index.
 * @cpu: 0..nr_cpus-1 of every instance this thread uses, or -1 to go back
 *       to sched_getcpu().
 * Used by tests and the lab to emulate many CPUs on few threads; two
 * threads may share a CPU index (the per-CPU lock then serialises them).
 * Thread-local; no errors.
 */
USWAP_API void uswap_thread_set_cpu(int cpu);

/*
 * Probe: the allocator reports each lock it takes and each unit of work
 * it does to a probe the calling thread installed. The lab's virtual
 * time (docs/lab.md) is built on it: it charges each step a modelled
 * cost and treats each lock as a resource held in virtual time, which is
 * how it gives 96- and 256-CPU times and contention on a 2-core host.
 * No probe installed (the default) costs one thread-local load per lock
 * and per step.
 */
enum uswap_probe_step {
	USWAP_STEP_LIST,    /* one cluster looked at on a cluster-list walk
			       (the list_scan_steps counter) */
	USWAP_STEP_MOVE,    /* one cluster moved between lists (cluster_moves) */
	USWAP_STEP_MAP,     /* 64 slots of a cluster's swap table scanned for
			       a free run (the unit of one cache line of the
			       kernel's former swap_map; 8 lines of table) */
	USWAP_STEP_SLOT,    /* one slot's swap table entry taken or given
			       back */
	USWAP_STEP_DISCARD, /* one cluster discarded (discards) */
	USWAP_STEP_MAX
};

struct uswap_probe {
	/* @lock was just acquired (after any real wait). @name is the lock
	 * expression at the call site ("&si->lock"), @site the function
	 * taking it ("cluster_move"): perf lock's lock and caller. Both
	 * are string constants. */
	void (*lock)(void *ctx, const void *lock, const char *name, const char *site);
	/* @lock is about to be released. */
	void (*unlock)(void *ctx, const void *lock);
	/* @n units of @step were done. */
	void (*step)(void *ctx, enum uswap_probe_step step, uint64_t n);
	void *ctx;
};

/*
 * uswap_thread_set_probe() - install @probe for the calling thread's
 * allocator calls on every instance, or remove it (NULL). The probe is
 * called synchronously, with allocator locks held: it must not call
 * libuswap and must not block. @probe must stay valid until replaced.
 * Thread-local; no errors. Used by the lab's virtual time.
 */
USWAP_API void uswap_thread_set_probe(const struct uswap_probe *probe);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_THREAD_H */
