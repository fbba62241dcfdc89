/* SPDX-License-Identifier: MIT */
/*
 * uswap/lab.h - the lab's switches (docs/lab.md): the allocator policies
 * of each seed's "before" (<uswap/policy.h>, chosen in struct
 * uswap_config), the calling thread's CPU index and probe
 * (<uswap/thread.h>), an instance's tracer, and the drain of the slot
 * caches that one of the policies keeps. The lab, `uswap run --trace`, the
 * tests and the benchmarks use them; an embedder never needs them, and
 * <uswap/uswap.h> does not include this header.
 */
#ifndef USWAP_LAB_H
#define USWAP_LAB_H

#include <uswap/alloc.h>
#include <uswap/policy.h>
#include <uswap/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Tracer: the instance reports each allocation handed out and each run
 * of slots that became free, for a trace of the swap stream (`uswap run
 * --trace`, docs/lab.md "Traces").
 */
enum uswap_trace_event {
	USWAP_TRACE_ALLOC, /* @n = the order; @entry its first slot */
	USWAP_TRACE_FREE,  /* @n slots from @entry are free again */
};

struct uswap_tracer {
	/* Called with allocator locks held (FREE) or just after the
	 * allocation (ALLOC), on the thread doing it: must not call libuswap,
	 * must not block for long. An ALLOC comes before any FREE of its
	 * slots. Slots parked in LOCKING_DEVICE's slot cache are reported
	 * free without an ALLOC. */
	void (*event)(void *ctx, enum uswap_trace_event ev, uswap_entry_t entry,
		      unsigned int n);
	void *ctx;
};

/*
 * uswap_set_tracer() - report @u's allocations and frees to @t, or stop
 * (NULL). @t must stay valid until replaced and no call is in flight
 * (the caller's business: set it before use, clear it when done).
 * Context: any thread; takes no lock. No errors.
 */
USWAP_API void uswap_set_tracer(struct uswap *u, const struct uswap_tracer *t);

/*
 * uswap_drain() - give back every slot parked in the per-CPU slot caches
 * (policy.lock == USWAP_LOCKING_DEVICE keeps up to USWAP_SLOT_CACHE_SLOTS
 * order-0 slots per CPU allocated but not yet handed out, as the kernel's
 * swap_slots cache did; they count as in use until drained). A no-op for
 * the other policies. uswap_swapoff() drains the device it removes by
 * itself; tests and the lab drain before comparing in-use counts.
 * Context: any thread; takes each CPU's lock in turn.
 */
USWAP_API void uswap_drain(struct uswap *u);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_LAB_H */
