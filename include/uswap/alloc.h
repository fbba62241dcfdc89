/* SPDX-License-Identifier: MIT */
/*
 * uswap/alloc.h - the slot allocator (src/alloc/) as an embedder sees it:
 * geometry, swap entries, instances, statistics. Its own calls (slots,
 * references, pins) are in <uswap/slots.h>.
 * Part of the embedder's API; <uswap/uswap.h> includes it.
 */
#ifndef USWAP_ALLOC_H
#define USWAP_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uswap/api.h>
#include <uswap/policy.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Geometry (include/linux/swap.h values for x86-64 with 4 KiB pages)
 * ---------------------------------------------------------------------- */
#define USWAP_PAGE_SIZE       4096u  /* bytes per slot */
#define USWAP_CLUSTER_SHIFT   9
#define USWAP_CLUSTER_SLOTS   (1u << USWAP_CLUSTER_SHIFT) /* 512 = 2 MiB */
#define USWAP_NR_ORDERS       10     /* orders 0..9; 9 = one whole cluster */
#define USWAP_MAX_ORDER       (USWAP_NR_ORDERS - 1)
#define USWAP_MAX_DEVICES     32     /* type is 5 bits (MAX_SWAPFILES_SHIFT) */
#define USWAP_MIN_CLUSTERS    2      /* smallest device accepted by swapon */
#define USWAP_PRIO_DEFAULT    (-1)   /* DEF_SWAP_PRIO: shared by all
					unprioritised devices (round robin) */
#define USWAP_PRIO_MAX        32767  /* SWAP_FLAG_PRIO_MASK */
#define USWAP_COUNT_MAX       65535u /* references one slot can hold */
#define USWAP_MAX_CPUS        1024   /* per-CPU arrays are sized by nr_cpus */

/* ------------------------------------------------------------------------
 * Swap entries: (type, offset) packed as the kernel's swp_entry_t
 * ---------------------------------------------------------------------- */
#define USWAP_TYPE_SHIFT      58     /* offset in bits 0..57, type 58..62 */
#define USWAP_OFFSET_MASK     ((UINT64_C(1) << USWAP_TYPE_SHIFT) - 1)

typedef struct {
	uint64_t val; /* 0 is never a valid entry: slot 0 is the header */
} uswap_entry_t;

static inline uswap_entry_t uswap_entry(unsigned int type, uint64_t offset)
{
	uswap_entry_t e = { ((uint64_t)(type & 31) << USWAP_TYPE_SHIFT) |
			    (offset & USWAP_OFFSET_MASK) };
	return e;
}

static inline unsigned int uswap_entry_type(uswap_entry_t e)
{
	return (unsigned int)(e.val >> USWAP_TYPE_SHIFT) & 31;
}

static inline uint64_t uswap_entry_offset(uswap_entry_t e)
{
	return e.val & USWAP_OFFSET_MASK;
}

/* Whether @e uses only the type and offset bits: bit 63 is never part of
 * an entry uswap hands out, and every call taking an entry refuses one
 * with it set (-EINVAL) instead of masking it off. */
static inline bool uswap_entry_valid_bits(uswap_entry_t e)
{
	return (e.val >> (USWAP_TYPE_SHIFT + 5)) == 0;
}

/* ------------------------------------------------------------------------
 * Instances
 * ---------------------------------------------------------------------- */
struct uswap; /* one swap system: devices, rings, per-CPU state, stats */
struct uswap_backend; /* where a device's data lives: ram, zram, file, faulty */

struct uswap_config {
	/* Per-CPU arrays are sized by this (0 = the host's configured CPUs).
	 * CPU ids from sched_getcpu() are taken modulo nr_cpus. */
	unsigned int nr_cpus;
	/* Seed "before" switches for the lab; zero = uswap's design. */
	struct uswap_policy policy;
	/* Slots a CPU allocates from one device of a priority ring before
	 * its reader moves to the next device (0 = USWAP_DEFAULT_RING_QUOTA;
	 * docs/benchmarks.md says how the default was chosen). Charged in
	 * slots, so an order-k folio counts 2^k and mixed orders balance by
	 * space (seed 5's per-CPU quota rotation). */
	unsigned int ring_quota;
};

#define USWAP_DEFAULT_RING_QUOTA 64

/*
 * uswap_create() - make an empty swap system with no devices.
 * @cfg: settings, or NULL for all defaults. Copied, policy included: the
 *       policy is fixed for the instance's life (src/alloc/alloc_policy.h says
 *       what each switch does and which seed it comes from).
 * @out: receives the new instance; the caller owns it and frees it with
 *       uswap_destroy().
 * Return: 0, -EINVAL (@out NULL, nr_cpus > USWAP_MAX_CPUS, a policy field
 * outside its enum, policy.nr_nodes > USWAP_MAX_NODES), -ENOMEM.
 * Thread-safety: any thread; instances are independent.
 */
USWAP_API int uswap_create(const struct uswap_config *cfg, struct uswap **out);

/*
 * uswap_destroy() - swap off every device (in-use slots are discarded with
 * them) and free the instance. NULL is a no-op.
 * Context: no other thread may use @u during or after the call.
 */
USWAP_API void uswap_destroy(struct uswap *u);

/* ------------------------------------------------------------------------
 * Statistics (readable while allocation runs)
 * ---------------------------------------------------------------------- */

/* Lock classes whose acquisitions are counted. "Shared" locks are those
 * every CPU may take: the device locks and the global locks. */
enum uswap_lock_class {
	USWAP_LOCK_DEVICE,  /* si->lock: a device's cluster lists; with
			       USWAP_LOCKING_DEVICE also the device lock held
			       across a whole allocation (and each free) */
	USWAP_LOCK_CLUSTER, /* ci->lock: one cluster, its swap table and side
			       table */
	USWAP_LOCK_PERCPU,  /* the per-CPU lock (local_lock role) */
	USWAP_LOCK_GLOBAL,  /* the instance's swapon/swapoff lock, and the
			       global device list lock (swap_avail_lock) of
			       GLOBAL_ROTATE and LEGACY_PRIO */
	USWAP_LOCK_MAX
};

struct uswap_lock_stats {
	uint64_t acquired;  /* acquisitions */
	uint64_t contended; /* acquisitions that found the lock held */
};

#define USWAP_STATS_VERSION 3 /* 2: list_scan_steps and after; 3: table_refills and after */

/* Counters are per CPU, summed on read. A count updated by two threads
 * sharing a CPU index at the same instant can lose an increment. */
/*
 * The scalar counters of struct uswap_stats, in its order, each with what
 * it counts: one list, from which the struct below, the library's per-CPU
 * counters and their sum are all made (X(name, description)), so a
 * counter is added in one place. V2 came with USWAP_STATS_VERSION 2,
 * after locks[]; a new counter goes at the end of the last list, with a
 * version bump.
 */
#define USWAP_STATS_COUNTERS(X)                                              \
	X(alloc_fast, "served from the CPU's cached cluster")                \
	X(alloc_slow, "needed a cluster from the lists")                     \
	X(alloc_fail, "-ENOSPC returned")                                    \
	X(free_slots, "slots returned to free")                              \
	X(bad_free, "put/free of a slot not in use")                         \
	X(frag_scans, "frag-list clusters scanned")                          \
	X(cluster_moves, "list moves (device list lock taken)")              \
	X(ring_advance, "ring readers moved to the next device")             \
	X(swpin, "folios read back by uswap_swap_in()")                      \
	X(swpin_cached, "... of which served by the swap cache")             \
	X(write_errors, "failed device writes (folio retried)")              \
	X(read_errors, "failed device reads (-EIO returned)")                \
	X(unuse_slots, "slots handed to the unuse callback")

/* Version 2: what the lab's policies change (src/alloc/alloc_policy.h). */
#define USWAP_STATS_COUNTERS_V2(X)                                           \
	X(list_scan_steps, "clusters looked at on the cluster lists: each "   \
	  "step of an isolation walk (slow-path allocation, discard) and "     \
	  "each cluster visited by order-0 stealing")                          \
	X(avail_requeue, "devices requeued behind their peers on the global " \
	  "list (GLOBAL_ROTATE, LEGACY_PRIO; the global lock is held)")        \
	X(slot_cache_hits, "order-0 allocations served by the per-CPU slot "  \
	  "cache (LOCKING_DEVICE)")                                            \
	X(slot_cache_refills, "device-locked batches into it")                \
	X(discards, "clusters discarded by allocations")                      \
	X(sync_discards, "order-0 failures that discarded every pending "     \
	  "cluster of a device (SYNC_ALL)")                                    \
	X(table_refills, "walks stopped to refill a device's pool of swap "   \
	  "tables outside the locks")                                          \
	X(table_refill_fail, "allocations answered -ENOMEM because no swap "  \
	  "table could be allocated")

#define USWAP_STATS_FIELD_(name, description) uint64_t name;

struct uswap_stats {
	uint32_t size;    /* sizeof(struct uswap_stats) */
	uint32_t version; /* USWAP_STATS_VERSION */
	uint64_t swpout[USWAP_NR_ORDERS];          /* folios allocated whole */
	uint64_t swpout_fallback[USWAP_NR_ORDERS]; /* -E2BIG returned */
	USWAP_STATS_COUNTERS(USWAP_STATS_FIELD_)
	struct uswap_lock_stats locks[USWAP_LOCK_MAX];
	USWAP_STATS_COUNTERS_V2(USWAP_STATS_FIELD_)
};

/*
 * uswap_stats_get() - sum the per-CPU counters into @st.
 * @st->size must be set by the caller to sizeof(*st) (older, smaller
 * structs are filled up to their size).
 * Return: 0; -EINVAL (@st NULL or size too small to hold the header).
 * Context: any thread, while allocation runs; takes no lock.
 */
USWAP_API int uswap_stats_get(struct uswap *u, struct uswap_stats *st);

/* One device, as a row of /proc/swaps plus the allocator's view. */
struct uswap_device_info {
	int type;                 /* 0..31 */
	int prio;                 /* effective priority: as given, or the
				     -2, -3, ... of USWAP_SELECT_LEGACY_PRIO
				     (the per-node -1 promotion not shown,
				     as /proc/swaps did not) */
	char name[64];
	char kind[16];            /* Type column: "file" for a swap file,
				     else "partition" (as /proc/swaps) */
	uint64_t size_kb;         /* usable slots (pages) in KiB */
	uint64_t used_kb;         /* slots in use in KiB */
	uint64_t nr_slots;        /* as given to swapon (incl. header) */
	uint64_t pages;           /* usable slots: nr_slots - 1 - bad */
	uint64_t inuse;           /* slots in use (handed out: slots parked
				     in LOCKING_DEVICE's slot caches are not
				     counted) */
	uint32_t nr_clusters;
	uint32_t free_clusters;   /* on the free list */
	uint32_t nonfull_clusters;/* on nonfull[*] */
	uint32_t frag_clusters;   /* on frag[*] */
	uint32_t full_clusters;   /* on the full list */
	uint32_t percpu_clusters; /* held as some CPU's current cluster */
	uint64_t metadata_bytes;  /* device descriptor (with its lists) +
				     cluster descriptors + per-CPU cursors +
				     swap tables (attached and pooled) +
				     count side tables */
	int node;                 /* emulated NUMA node (swapon args) */
	uint32_t discard_clusters;/* emptied, waiting for a discard */
	uint64_t write_errors;    /* writes to this device that failed */
	uint64_t write_pauses;    /* times allocation began passing the
				     device over after a failed write */
	bool write_paused;        /* passed over now (the pause ends by
				     itself; see uswap_swap_out()) */
	uint64_t read_errors;     /* reads from this device that failed
				     (swap-ins answered -EIO) */
};

/*
 * uswap_device_info() - snapshot one device. inuse sums the cluster counts
 * (O(clusters) cluster-lock round trips), so it is exact when nothing runs
 * and a moving snapshot otherwise.
 * Return: 0; -ENOENT (@type not swapped on, or @info NULL).
 * Context: any thread; takes the swapon lock (waits for swapon/swapoff).
 */
USWAP_API int uswap_device_info(struct uswap *u, int type, struct uswap_device_info *info);

/*
 * uswap_swaps() - print the /proc/swaps-style table (Filename, Type, Size,
 * Used, Priority; sizes in KiB) of every device to @out.
 * The columns are those of the kernel's swap_show(), padded with spaces; Size and
 * Used in KiB, Type "file" for a swap file and "partition" for every other
 * device (as uswap_device_info()'s type).
 * Return: number of devices printed.
 * Context: any thread, while allocation runs.
 */
USWAP_API int uswap_swaps(struct uswap *u, FILE *out);

/*
 * uswap_check() - full consistency check of every device (debug aid and
 * test oracle): list membership matches flags, cluster counts match their
 * swap table entries, a cluster has a table exactly while it holds slots,
 * inuse matches the sum. Expensive: O(slots).
 * Context: no allocation or free may run concurrently.
 * Return: 0, or -EUCLEAN with a description written to stderr.
 */
USWAP_API int uswap_check(struct uswap *u);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_ALLOC_H */
