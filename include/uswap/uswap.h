/* SPDX-License-Identifier: MIT */
/*
 * uswap.h - the public API of libuswap, a user-space swap subsystem.
 *
 * This umbrella is the embedder's API: instances, devices by spec, the swap
 * path, swap queues, the pager and statistics. It pulls in one header per
 * layer (policy, alloc, dev, swap, pager), each declaring what its layer
 * defines; together they expose opaque handles and plain value types.
 * Headers for other audiences stand apart and are not included here:
 * <uswap/slots.h> (the allocator's own calls: slots, references and pins,
 * no data), <uswap/lab.h> (the lab's switches: tracer, slot-cache drain,
 * and <uswap/thread.h>, the calling thread's CPU index and probe) and
 * <uswap/status.h> (where `uswap run` publishes its state).
 *
 * The allocator behind it is the design the Linux swap developers reached
 * in 2024-2026 on linux-mm (docs/lab.md, docs/architecture.md): 512-slot
 * clusters with their own locks, per-device per-CPU cluster caches, orders
 * 0..9, strict priorities with round robin inside a priority through
 * per-priority device rings.
 *
 * Conventions, for every function of those headers unless it says otherwise:
 *  - int results are 0 (or a count) on success and a negative errno on
 *    failure; errno itself is never read or set;
 *  - units are in the names: nr_slots counts slots (one slot holds one
 *    page, USWAP_PAGE_SIZE bytes), _kb is KiB, _ns nanoseconds;
 *  - functions are thread-safe unless marked otherwise;
 *  - -E2BIG always means "no run of 2^order slots at the serving priority:
 *    split the folio" and nothing else.
 */
#ifndef USWAP_USWAP_H
#define USWAP_USWAP_H

/* One header per layer, in the order they build on each other. policy.h is
 * here for struct uswap_config's policy field (zero: the design). */
#include <uswap/policy.h>
#include <uswap/alloc.h>
#include <uswap/dev.h>
#include <uswap/swap.h>
#include <uswap/pager.h>

#endif /* USWAP_USWAP_H */
