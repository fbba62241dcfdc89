/* SPDX-License-Identifier: MIT */
/*
 * uswap/policy.h - the allocator's policy switches: each seed thread's "before"
 * behaviour, for the lab (chosen at uswap_create()).
 * Part of the public API; include <uswap/uswap.h> for all of it.
 */
#ifndef USWAP_POLICY_H
#define USWAP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Allocator policies: each seed thread's "before" as a switch, for the lab
 * (docs/lab.md has each switch's seed and kernel version). The zero value of every
 * field is the "after" design uswap uses; a zeroed struct uswap_policy is
 * the default. Chosen at uswap_create() and fixed for the instance.
 */
enum uswap_select_policy {
	USWAP_SELECT_RINGS = 0,     /* per-priority rings, per-CPU readers and
				       a quota (seed 5 "after") */
	USWAP_SELECT_GLOBAL_ROTATE, /* one list of every device, requeued under
				       one global lock on every slow-path
				       allocation (seed 4 "after", seed 5
				       "before") */
	USWAP_SELECT_LEGACY_PRIO,   /* default-priority devices numbered -2,
				       -3, ... in swapon order, per-node lists
				       promoting a node's own devices to -1
				       (seed 4 "before") */
};

enum uswap_percpu_policy {
	USWAP_PERCPU_PER_DEVICE = 0, /* per device per CPU cursors (seed 5) */
	USWAP_PERCPU_GLOBAL,         /* one (device, offset per order) per CPU
					across all devices (6.15..7.0) */
};

enum uswap_frag_policy {
	USWAP_FRAG_SCAN_ONE = 0, /* isolate one frag cluster (seed 2 "after") */
	USWAP_FRAG_SCAN_ALL,     /* walk the whole frag[k] list (before) */
};

enum uswap_cluster_policy {
	USWAP_PREFER_NONFULL = 0, /* nonfull, then free (seed 2 "after") */
	USWAP_PREFER_FREE,        /* free, then nonfull (seed 2 "before") */
};

enum uswap_freelist_policy {
	USWAP_FREELIST_ASCENDING = 0, /* clusters in index order (seed 3) */
	USWAP_FREELIST_INTERLEAVED,   /* 32 columns, successive clusters 32
					 apart (the old shuffle, seed 3
					 "before") */
};

enum uswap_lock_policy {
	USWAP_LOCKING_CLUSTER_FIRST = 0, /* cluster lock first (seed 1 "after") */
	USWAP_LOCKING_DEVICE,         /* device lock held for the whole
					 allocation, 64-slot per-CPU slot
					 cache for order 0 (seed 1 "before") */
};

enum uswap_discard_policy {
	USWAP_DISCARD_BOUNDED = 0, /* one cluster per failing allocation; the
				      rest by the thread whose free emptied
				      them (no background worker) */
	USWAP_DISCARD_SYNC_ALL,    /* an order-0 failure discards every
				      pending cluster of the first device
				      with any, synchronously (seed 5
				      "before") */
};

struct uswap_policy {
	enum uswap_select_policy select;
	enum uswap_percpu_policy percpu;
	enum uswap_frag_policy frag;
	enum uswap_cluster_policy cluster;
	enum uswap_freelist_policy freelist;
	enum uswap_lock_policy lock;
	enum uswap_discard_policy discard;
	unsigned int nr_nodes; /* emulated NUMA nodes for LEGACY_PRIO (0 = 1,
				  at most USWAP_MAX_NODES); CPU c is on node
				  c * nr_nodes / nr_cpus */
};

#define USWAP_MAX_NODES 64 /* policy.nr_nodes limit */
#define USWAP_SLOT_CACHE_SLOTS 64 /* per-CPU slot cache of LOCKING_DEVICE
				     (SWAP_BATCH) */

#ifdef __cplusplus
}
#endif
#endif /* USWAP_POLICY_H */
