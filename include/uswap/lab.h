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
 * uswap_trace_record_start() - record @u's swap stream on @fd (open for
 * writing; taken over: closed by uswap_trace_record_stop()) as a lab
 * trace, version 1 (docs/lab.md "Traces"): an A record per allocation,
 * F and I records as its slots are freed, each written with write(2) at
 * once. @t0_ns: 0 starts a trace (the header first; its time zero, CLOCK_MONOTONIC
 * ns, into *@t0_out if not NULL); else the time zero of the trace this
 * one goes on with (after an exec), whose records start with an X.
 * The books hold 2^21 folios swapped out at once (32 MiB of address space,
 * touched as used); past 70 % of that the recording stops early.
 * `uswap run --trace` uses it. Errors: -EINVAL, -EBUSY (this process
 * records already: one recording per process), -ENOMEM.
 * Context: before @u is shared between threads, or with no allocation in
 * flight; the tracer then runs on the threads allocating and freeing.
 */
USWAP_API int uswap_trace_record_start(struct uswap *u, int fd, uint64_t t0_ns,
				       uint64_t *t0_out);

/*
 * uswap_trace_record_stop() - stop recording @u's stream, write what is
 * buffered and close the file. Return: 0; -EOVERFLOW if the books ran out
 * (the trace stops early); a write or close error (-errno). 0 when not
 * recording. Context: once no allocation or free of @u is in flight.
 */
USWAP_API int uswap_trace_record_stop(struct uswap *u);

/*
 * uswap_trace_record_forget() - in a fork child: drop the parent's
 * recording (close this process's copy of its file, write nothing; the
 * records are the parent's). @u may be NULL. No errors.
 */
USWAP_API void uswap_trace_record_forget(struct uswap *u);

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
