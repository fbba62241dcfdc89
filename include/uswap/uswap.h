/* SPDX-License-Identifier: MIT */
/*
 * uswap.h - the public API of libuswap, a user-space swap subsystem.
 *
 * This header is the only one the CLI and outside programs include. It
 * exposes opaque handles and plain value types. The allocator behind it is
 * the design the Linux swap developers reached in 2024-2026 (see
 * shared/seeds/ and docs/architecture.md): 512-slot clusters with their own
 * locks, per-device per-CPU cluster caches, orders 0..9, strict priorities
 * with round robin inside a priority through per-priority device rings.
 *
 * Conventions, for every function below unless it says otherwise:
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define USWAP_API __attribute__((visibility("default")))

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

/* ------------------------------------------------------------------------
 * Instances
 * ---------------------------------------------------------------------- */
struct uswap; /* one swap system: devices, rings, per-CPU state, stats */

struct uswap_config {
	/* Per-CPU arrays are sized by this (0 = the host's configured CPUs).
	 * CPU ids from sched_getcpu() are taken modulo nr_cpus. */
	unsigned int nr_cpus;
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
 * @cfg: settings, or NULL for all defaults. Copied.
 * @out: receives the new instance; the caller owns it and frees it with
 *       uswap_destroy().
 * Return: 0, -EINVAL (@out NULL, nr_cpus > USWAP_MAX_CPUS), -ENOMEM.
 * Thread-safety: any thread; instances are independent.
 */
USWAP_API int uswap_create(const struct uswap_config *cfg, struct uswap **out);

/*
 * uswap_destroy() - swap off every device (in-use slots are discarded with
 * them) and free the instance. NULL is a no-op.
 * Context: no other thread may use @u during or after the call.
 */
USWAP_API void uswap_destroy(struct uswap *u);

/*
 * uswap_thread_set_cpu() - pin the calling thread's per-CPU index.
 * @cpu: 0..nr_cpus-1 of every instance this thread uses, or -1 to go back
 *       to sched_getcpu().
 * Used by tests and the lab to emulate many CPUs on few threads; two
 * threads may share a CPU index (the per-CPU lock then serialises them).
 * Thread-local; no errors.
 */
USWAP_API void uswap_thread_set_cpu(int cpu);

/* ------------------------------------------------------------------------
 * Devices: swapon / swapoff
 * ---------------------------------------------------------------------- */
struct uswap_swapon_args {
	const char *name;          /* Filename column of uswap_swaps(); copied;
				      NULL gives "dev<type>" */
	uint64_t nr_slots;         /* slots including header slot 0, i.e. the
				      header's last_page + 1; at least
				      USWAP_MIN_CLUSTERS * 512, at most
				      UINT32_MAX */
	int prio;                  /* USWAP_PRIO_DEFAULT or 0..USWAP_PRIO_MAX */
	unsigned int flags;        /* reserved, must be 0 */
	const uint64_t *bad_slots; /* slots never to hand out (1..nr_slots-1),
				      or NULL; copied */
	size_t nr_bad;
};

/*
 * uswap_swapon() - add a device and make it available for allocation.
 * Slot 0 holds the header and every bad slot is marked USWAP map BAD; they
 * are never handed out. The device joins the ring of its priority; the new
 * ring is published with RCU, so allocators never see a half-built ring.
 * The lowest free type is used, as the kernel reuses swap_info[] slots.
 * Free clusters go on the free list in ascending order (seed "remove
 * contention workaround for swap cache"); clusters holding a bad slot
 * start on nonfull[0], as setup_clusters() does.
 * Return: the device type (0..31) on success; -EINVAL (@args NULL, nr_slots
 * outside the range above, prio outside -1..32767, flags set, a bad slot of
 * 0, past the end or listed twice), -EMFILE (all 32 types in use; the
 * kernel says -EPERM), -ENOSPC (every usable slot bad), -ENOMEM. On error
 * nothing changed.
 * Context: may sleep (an RCU grace period); serialised with swapoff.
 */
USWAP_API int uswap_swapon(struct uswap *u, const struct uswap_swapon_args *args);

/*
 * uswap_swapoff() - remove an empty device.
 * The device first leaves its ring (new ring published, grace period
 * waited), then every allocator that could still see it is waited out, so
 * once this returns no slot on @type is handed out again.
 * This is the kernel's swapoff order (clear SWP_WRITEOK, leave the avail
 * list, wait for allocators) with the RFC's ring republication (seed 5).
 * Return: 0; -ENOENT (@type not swapped on, or outside 0..31); -EBUSY
 * (slots in use: the device is put back exactly as it was). Moving used
 * slots away through an owner callback comes with the swap path.
 * Context: may sleep; serialised with swapon by the instance's swapon lock.
 */
USWAP_API int uswap_swapoff(struct uswap *u, int type);

/* ------------------------------------------------------------------------
 * Allocation and the swap_map
 *
 * Slot states (one byte each, as the kernel's swap_map): free; a reference
 * count 1..USWAP_COUNT_MAX (counts past 62 live in a per-cluster side
 * table); the HAS_CACHE pin held by the swap cache while a folio for the
 * slot is in memory; BAD. A slot is free again when both its count and its
 * HAS_CACHE pin are gone.
 * ---------------------------------------------------------------------- */

/*
 * uswap_alloc() - allocate 2^@order contiguous, naturally aligned slots.
 * The slots start with the HAS_CACHE pin and a count of 0, as in the
 * kernel's folio_alloc_swap(): the folio is entering the swap cache.
 * Devices are tried by priority, high to low; inside a priority the
 * calling CPU's ring reader picks the device (round robin by quota). A
 * large folio is retried on every same-priority peer before -E2BIG and
 * never falls to a lower priority because a peer is fragmented.
 * @order: 0..9.
 * @entry: receives the first slot's entry.
 * Return: 0; -E2BIG (order > 0 and no device of the serving priority has a
 * free aligned run: split the folio; swpout_fallback[order] was counted);
 * -ENOSPC (no device has a free slot); -EINVAL (order > 9).
 * Context: any thread; takes the per-CPU lock, then cluster locks, then
 * briefly a device list lock.
 */
USWAP_API int uswap_alloc(struct uswap *u, unsigned int order, uswap_entry_t *entry);

/*
 * uswap_put_folio() - drop the HAS_CACHE pin of the 2^@order slots that
 * start at @entry (put_swap_folio()); slots left with no count are freed.
 * All slots lie in one cluster, so this is one cluster-lock round trip.
 * Freed slots are filed at once: a cluster that empties goes to the free
 * list (so order 9 can use it), a full or frag one to nonfull.
 * Return: 0; -EINVAL (bad type/offset, misaligned, order > 9); -ENOENT (a
 * slot is not pinned by the cache: nothing changed; counted in bad_free).
 * Context: any thread; takes one cluster lock, maybe a device list lock.
 */
USWAP_API int uswap_put_folio(struct uswap *u, uswap_entry_t entry, unsigned int order);

/*
 * uswap_dup() - add one reference to an in-use slot (swap_duplicate()).
 * Counts past 62 move to a per-cluster side table (count continuation's
 * role; the newest kernel's extend_table), allocated on first need.
 * Return: 0; -EINVAL (bad entry); -ENOENT (slot free or BAD);
 * -EOVERFLOW (count already USWAP_COUNT_MAX; unchanged); -ENOMEM (the side
 * table could not be allocated; unchanged).
 * Context: any thread; takes one cluster lock.
 */
USWAP_API int uswap_dup(struct uswap *u, uswap_entry_t entry);

/*
 * uswap_free() - drop one reference from @nr slots starting at @entry
 * (swap_free_nr()); slots left with no count and no cache pin are freed.
 * The range must lie inside one cluster (one lock round trip).
 * Return: 0; -EINVAL (bad entry, nr 0, range crosses a cluster); -ENOENT
 * (a slot has no reference: nothing changed; reported once per process on
 * stderr, as the kernel's "Unused swap offset entry", and counted in
 * bad_free).
 * Context: any thread; takes one cluster lock, maybe a device list lock.
 */
USWAP_API int uswap_free(struct uswap *u, uswap_entry_t entry, unsigned int nr);

/*
 * uswap_cache_pin() - set the HAS_CACHE pin on an in-use slot
 * (swapcache_prepare(): whoever succeeds owns the swap-in).
 * Return: 0; -EINVAL; -ENOENT (slot free or BAD); -EEXIST (already pinned).
 * Context: any thread; takes one cluster lock.
 */
USWAP_API int uswap_cache_pin(struct uswap *u, uswap_entry_t entry);

/*
 * uswap_slot_count() - read one slot: its reference count, and whether
 * the cache pin is held. For tests and tools; the answer may be stale as
 * soon as it returns.
 * Return: the count (0..USWAP_COUNT_MAX); -EINVAL; -ENOENT (free);
 * -EIO (the slot is BAD).
 */
USWAP_API long uswap_slot_count(struct uswap *u, uswap_entry_t entry, bool *has_cache);

/* ------------------------------------------------------------------------
 * Statistics (readable while allocation runs)
 * ---------------------------------------------------------------------- */

/* Lock classes whose acquisitions are counted. "Shared" locks are those
 * every CPU may take: the device list locks and the global lock. */
enum uswap_lock_class {
	USWAP_LOCK_DEVICE,  /* si->lock: a device's cluster lists */
	USWAP_LOCK_CLUSTER, /* ci->lock: one cluster and its swap_map bytes */
	USWAP_LOCK_PERCPU,  /* the per-CPU lock (local_lock role) */
	USWAP_LOCK_GLOBAL,  /* the instance's swapon/swapoff lock */
	USWAP_LOCK_MAX
};

struct uswap_lock_stats {
	uint64_t acquired;  /* acquisitions */
	uint64_t contended; /* acquisitions that found the lock held */
};

#define USWAP_STATS_VERSION 1

/* Counters are per CPU, summed on read. A count updated by two threads
 * sharing a CPU index at the same instant can lose an increment. */
struct uswap_stats {
	uint32_t size;    /* sizeof(struct uswap_stats) */
	uint32_t version; /* USWAP_STATS_VERSION */
	uint64_t swpout[USWAP_NR_ORDERS];          /* folios allocated whole */
	uint64_t swpout_fallback[USWAP_NR_ORDERS]; /* -E2BIG returned */
	uint64_t alloc_fast;   /* served from the CPU's cached cluster */
	uint64_t alloc_slow;   /* needed a cluster from the lists */
	uint64_t alloc_fail;   /* -ENOSPC returned */
	uint64_t free_slots;   /* slots returned to free */
	uint64_t bad_free;     /* put/free of a slot not in use */
	uint64_t frag_scans;   /* frag-list clusters scanned */
	uint64_t cluster_moves;/* list moves (device list lock taken) */
	uint64_t ring_advance; /* ring readers moved to the next device */
	struct uswap_lock_stats locks[USWAP_LOCK_MAX];
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
	int prio;
	char name[64];
	uint64_t size_kb;         /* usable slots (pages) in KiB */
	uint64_t used_kb;         /* slots in use in KiB */
	uint64_t nr_slots;        /* as given to swapon (incl. header) */
	uint64_t pages;           /* usable slots: nr_slots - 1 - bad */
	uint64_t inuse;           /* slots in use */
	uint32_t nr_clusters;
	uint32_t free_clusters;   /* on the free list */
	uint32_t nonfull_clusters;/* on nonfull[*] */
	uint32_t frag_clusters;   /* on frag[*] */
	uint32_t full_clusters;   /* on the full list */
	uint32_t percpu_clusters; /* held as some CPU's current cluster */
	uint64_t metadata_bytes;  /* swap_map + cluster descriptors + lists +
				     per-CPU caches + count side tables */
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
 * Used in KiB, Type "partition" for every device for now.
 * Return: number of devices printed.
 * Context: any thread, while allocation runs.
 */
USWAP_API int uswap_swaps(struct uswap *u, FILE *out);

/*
 * uswap_check() - full consistency check of every device (debug aid and
 * test oracle): list membership matches flags, cluster counts match the
 * swap_map, inuse matches the sum. Expensive: O(slots).
 * Context: no allocation or free may run concurrently.
 * Return: 0, or -EUCLEAN with a description written to stderr.
 */
USWAP_API int uswap_check(struct uswap *u);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_USWAP_H */
