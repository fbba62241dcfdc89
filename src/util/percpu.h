/* SPDX-License-Identifier: MIT */
/*
 * percpu.h - "per CPU" in user space: state indexed by sched_getcpu() (or
 * by an index the thread pinned with uswap_thread_set_cpu()), guarded by a
 * per-CPU lock that is uncontended unless a thread migrates mid-operation.
 * This is the role local_lock plays for the kernel's percpu_swap_cluster.
 */
#ifndef USWAP_UTIL_PERCPU_H
#define USWAP_UTIL_PERCPU_H

#include <sched.h>

/* initial-exec: read straight off %fs, not through __tls_get_addr, which
 * cost 10 % of an alloc+free pair in the shared library. */
extern _Thread_local int uswap_tls_cpu __attribute__((tls_model("initial-exec")));

/* current_cpu() - the calling thread's CPU index in 0..nr_cpus-1. The
 * answer may be stale by the time it is used; callers that need stability
 * take that CPU's lock and use the index they locked. */
static inline unsigned int current_cpu(unsigned int nr_cpus)
{
	int cpu = uswap_tls_cpu;

	if (cpu < 0) {
		cpu = sched_getcpu(); /* glibc reads rseq's cpu_id: no syscall */
		if (cpu < 0)
			cpu = 0;
	}
	return (unsigned int)cpu < nr_cpus ? (unsigned int)cpu
					   : (unsigned int)cpu % nr_cpus;
}

#endif /* USWAP_UTIL_PERCPU_H */
