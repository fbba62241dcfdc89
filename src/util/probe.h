/* SPDX-License-Identifier: MIT */
/*
 * probe.h - the calling thread's probe (uswap_thread_set_probe()): the
 * allocator's locks and steps reported to the lab's virtual time.
 *
 * The pointer is initial-exec thread-local, as uswap_tls_cpu, so the
 * check costs one %fs-relative load and a predicted branch when no probe
 * is installed.
 */
#ifndef USWAP_UTIL_PROBE_H
#define USWAP_UTIL_PROBE_H

#include <uswap/thread.h>

#include "util/compiler.h"

extern _Thread_local const struct uswap_probe *uswap_tls_probe
	__attribute__((tls_model("initial-exec")));

static inline void probe_step(enum uswap_probe_step step, uint64_t n)
{
	const struct uswap_probe *p = uswap_tls_probe;

	if (unlikely(p))
		p->step(p->ctx, step, n);
}

static inline void probe_lock(const void *lock, const char *name, const char *site)
{
	const struct uswap_probe *p = uswap_tls_probe;

	if (unlikely(p))
		p->lock(p->ctx, lock, name, site);
}

static inline void probe_unlock(const void *lock)
{
	const struct uswap_probe *p = uswap_tls_probe;

	if (unlikely(p))
		p->unlock(p->ctx, lock);
}

#endif /* USWAP_UTIL_PROBE_H */
