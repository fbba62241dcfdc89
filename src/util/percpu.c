// SPDX-License-Identifier: MIT
/*
 * percpu.c - the thread's CPU index override and probe, the spinlock slow path and
 * the assertion reporter: the few out-of-line helpers of util/.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include <uswap/thread.h>

#include "util/compiler.h"
#include "util/lock.h"
#include "util/percpu.h"
#include "util/probe.h"

_Thread_local int uswap_tls_cpu __attribute__((tls_model("initial-exec"))) = -1;

USWAP_API void uswap_thread_set_cpu(int cpu)
{
	uswap_tls_cpu = cpu < 0 ? -1 : cpu;
}

_Thread_local const struct uswap_probe *uswap_tls_probe
	__attribute__((tls_model("initial-exec")));

USWAP_API void uswap_thread_set_probe(const struct uswap_probe *probe)
{
	uswap_tls_probe = probe;
}

/* Spin on a plain load (no cache-line ping-pong), then yield: a preempted
 * holder needs the CPU more than we do. */
void spin_lock_wait(struct spinlock *l)
{
	unsigned int spins = 0;

	for (;;) {
		while (atomic_load_explicit(&l->locked, memory_order_relaxed)) {
			if (++spins < 64)
				__builtin_ia32_pause();
			else
				sched_yield();
		}
		if (!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
			return;
	}
}

void uswap_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "uswap: assertion failed: %s (%s:%d)\n", expr, file, line);
	abort();
}
