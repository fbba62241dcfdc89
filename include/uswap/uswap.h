/* SPDX-License-Identifier: MIT */
/*
 * uswap.h - the public API of libuswap, a user-space swap subsystem.
 *
 * This header is the only one the CLI and outside programs include. It
 * exposes opaque handles and plain value types. The allocator behind it is
 * the design the Linux swap developers reached in 2024-2026 on linux-mm
 * (docs/lab.md, docs/architecture.md): 512-slot clusters with their own
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

/*
 * uswap_unuse_fn - the slot owner's swapoff callback ("unuse").
 * Called by uswap_swapoff() for each in-use slot of the device going away,
 * @entry being that slot. The owner must stop referencing it: read the
 * data back (uswap_swap_in) and keep it in memory, or write it to another
 * device (uswap_swap_out) and switch its reference, then drop its
 * references to @entry (uswap_swap_free). Slots of one folio are offered
 * one by one; after the owner freed the whole folio the other slots are
 * no longer in use and are not offered again. A slot held only by its
 * HAS_CACHE pin (uswap_alloc() or uswap_cache_pin() with no reference
 * yet: uswap_slot_count() says 0) is offered too, once about 10 ms pass
 * with nothing freed (the swap path's own writes and frees finish without
 * the owner); the owner lets go of it with uswap_put_folio(), or finishes
 * with it and frees it. Returning 0 for a slot the owner does not know
 * is allowed: the slot is offered again on the next sweep.
 * Return: 0, or -errno to abort the swapoff (the device is put back).
 * Context: runs in the swapoff thread, without uswap locks held.
 */
typedef int (*uswap_unuse_fn)(void *ctx, uswap_entry_t entry);

/* uswap_progress_fn - swapoff progress: @left slots still in use. */
typedef void (*uswap_progress_fn)(void *ctx, uint64_t left);

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
 *       policy is fixed for the instance's life (src/alloc/policy.h says
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
 * uswap_drain() - give back every slot parked in the per-CPU slot caches
 * (policy.lock == USWAP_LOCKING_DEVICE keeps up to USWAP_SLOT_CACHE_SLOTS
 * order-0 slots per CPU allocated but not yet handed out, as the kernel's
 * swap_slots cache did; they count as in use until drained). A no-op for
 * the other policies. uswap_swapoff() drains the device it removes by
 * itself; tests and the lab drain before comparing in-use counts.
 * Context: any thread; takes each CPU's lock in turn.
 */
USWAP_API void uswap_drain(struct uswap *u);

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
	unsigned int flags;        /* 0 or USWAP_SWAPON_DISCARD */
	const uint64_t *bad_slots; /* slots never to hand out (1..nr_slots-1),
				      or NULL; copied */
	size_t nr_bad;
	struct uswap_backend *backend; /* data store, or NULL for a device
				      that only allocates (benchmarks, lab).
				      On success swapon owns it. With a
				      backend, nr_slots 0 means "the
				      backend's size" and its header's bad
				      slots are added to bad_slots. */
	int node;                  /* emulated NUMA node of the device,
				      0..policy.nr_nodes-1 (0 when nr_nodes
				      is 0 or 1): with USWAP_SELECT_LEGACY_PRIO
				      CPUs of this node prefer it (the bdev's
				      node_id in swap_node()); else only
				      shown in uswap_device_info() */
};

/* uswap_swapon_args.flags */
#define USWAP_SWAPON_DISCARD 0x10000 /* page discard (SWP_PAGE_DISCARD;
				    SWAP_FLAG_DISCARD's value) on a device
				    without a backend: each emptied cluster
				    waits on the discard list until an
				    allocation discards it (policy.discard
				    says how many at a time); for the lab.
				    A backend's own setting is kept either
				    way. */

/*
 * uswap_swapon() - add a device and make it available for allocation.
 * Slot 0 holds the header and every bad slot is marked USWAP map BAD; they
 * are never handed out. The device joins the ring of its priority; the new
 * ring is published with RCU, so allocators never see a half-built ring.
 * The lowest free type is used, as the kernel reuses swap_info[] slots.
 * Free clusters go on the free list in ascending order (seed "remove
 * contention workaround for swap cache"; interleaved in 32 columns under
 * USWAP_FREELIST_INTERLEAVED); clusters holding a bad slot start on
 * nonfull[0], as setup_clusters() does. With USWAP_SELECT_LEGACY_PRIO a
 * USWAP_PRIO_DEFAULT device gets the next of -2, -3, ... instead of -1.
 * Return: the device type (0..31) on success; -EINVAL (@args NULL, nr_slots
 * outside the range above, prio outside -1..32767, an unknown flag, node
 * outside 0..nr_nodes-1, a bad slot of 0, past the end or listed twice), -EMFILE (all 32 types in use; the
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
 * With slots in use and an owner callback (uswap_set_unuse()), every used
 * slot is handed to it until none is left (try_to_unuse()); meanwhile
 * swap-ins from the device keep working and no new slot is allocated on it.
 * Return: 0; -ENOENT (@type not swapped on, or outside 0..31); -EBUSY
 * (slots in use and no owner callback, or about 5 s of sweeps with nothing
 * freed: the device is put back, with what was already moved staying
 * moved); the callback's -errno (device put back, likewise).
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
 * never falls to a lower priority because a peer is fragmented. That is
 * the default policy; the lab's "before" policies (struct uswap_policy,
 * src/alloc/policy.h) change how the device is chosen: GLOBAL_ROTATE and
 * LEGACY_PRIO give -E2BIG after the first device with room, and
 * PERCPU_GLOBAL serves from the CPU's current cluster whatever its
 * device's priority. A device in a write pause (see uswap_swap_out()) is
 * passed over while a device of any priority has room, and used when
 * none has.
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
 * every CPU may take: the device locks and the global locks. */
enum uswap_lock_class {
	USWAP_LOCK_DEVICE,  /* si->lock: a device's cluster lists; with
			       USWAP_LOCKING_DEVICE also the device lock held
			       across a whole allocation (and each free) */
	USWAP_LOCK_CLUSTER, /* ci->lock: one cluster and its swap_map bytes */
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

#define USWAP_STATS_VERSION 2 /* 2: list_scan_steps and after */

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
	uint64_t swpin;        /* folios read back by uswap_swap_in() */
	uint64_t swpin_cached; /* ... of which served by the swap cache */
	uint64_t write_errors; /* failed device writes (folio retried) */
	uint64_t read_errors;  /* failed device reads (-EIO returned) */
	uint64_t unuse_slots;  /* slots handed to the unuse callback */
	struct uswap_lock_stats locks[USWAP_LOCK_MAX];
	/* Version 2: what the lab's policies change (src/alloc/policy.h). */
	uint64_t list_scan_steps; /* clusters looked at on the cluster lists:
				     each step of an isolation walk (slow-path
				     allocation, discard) and each cluster
				     visited by order-0 stealing */
	uint64_t avail_requeue;   /* devices requeued behind their peers on
				     the global list (GLOBAL_ROTATE,
				     LEGACY_PRIO; the global lock is held) */
	uint64_t slot_cache_hits; /* order-0 allocations served by the
				     per-CPU slot cache (LOCKING_DEVICE) */
	uint64_t slot_cache_refills; /* device-locked batches into it */
	uint64_t discards;        /* clusters discarded by allocations */
	uint64_t sync_discards;   /* order-0 failures that discarded every
				     pending cluster of a device (SYNC_ALL) */
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
	uint64_t metadata_bytes;  /* swap_map + cluster descriptors + lists +
				     per-CPU caches + count side tables */
	int node;                 /* emulated NUMA node (swapon args) */
	uint32_t discard_clusters;/* emptied, waiting for a discard */
	uint64_t write_errors;    /* writes to this device that failed */
	uint64_t write_pauses;    /* times allocation began passing the
				     device over after a failed write */
	bool write_paused;        /* passed over now (the pause ends by
				     itself; see uswap_swap_out()) */
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

/* ------------------------------------------------------------------------
 * Backends and device specs
 * ---------------------------------------------------------------------- */

/*
 * uswap_backend_open() - open the data store a spec names: "ram:512M",
 * "zram:1G", "zram:1G:zstd", "file:/path[:discard][:direct][:qd=N][:sync]",
 * "faulty:OPTS:INNER"; every spec may end in ":prio=N". A file must carry
 * a valid mkswap header (its bad pages become bad slots).
 * @out: receives the backend; the caller owns it until a successful
 *       uswap_swapon() takes it, and closes it with uswap_backend_close().
 * @prio: receives the spec's priority (USWAP_PRIO_DEFAULT without one);
 *       may be NULL.
 * @err: receives a one-line reason on failure (may be NULL).
 * Return: 0; -EINVAL (malformed spec or header; @err says which), -ENOENT,
 * -EACCES (the file), -ENOMEM, or the backend's error.
 */
USWAP_API int uswap_backend_open(const char *spec, struct uswap_backend **out,
				 int *prio, char *err, size_t errlen);

/* uswap_backend_close() - close a backend no device owns. NULL is a no-op. */
USWAP_API void uswap_backend_close(struct uswap_backend *b);

/* What a faulty: wrapper has injected: requests failed on purpose. */
struct uswap_fault_counts {
	uint64_t reads, writes, discards;                   /* requests seen */
	uint64_t read_errors, write_errors, discard_errors; /* ... failed */
};

/*
 * uswap_backend_faults() - the injection counts of a faulty: backend, so
 * a test can match the errors it saw against the errors that were made.
 * @b: from uswap_backend_open(); still valid after uswap_swapon() took it,
 *     until the device is swapped off.
 * Return: 0; -EINVAL (@b is not a faulty: backend, or @out NULL).
 * Thread-safety: any thread, while I/O runs (counts read one by one).
 */
USWAP_API int uswap_backend_faults(struct uswap_backend *b, struct uswap_fault_counts *out);

/*
 * uswap_swapon_spec() - open @spec's backend and swap it on at the spec's
 * priority. Return: the type, or -errno with a reason in @err.
 */
USWAP_API int uswap_swapon_spec(struct uswap *u, const char *spec, char *err,
				size_t errlen);

/* ------------------------------------------------------------------------
 * The swap path: folios of 2^order pages out to a device and back
 * ---------------------------------------------------------------------- */

#define USWAP_SWAP_KEEP_CACHE 0x1 /* keep a clean copy in the swap cache */

/*
 * uswap_swap_out() - store a folio: allocate 2^@order slots (as
 * uswap_alloc()), put the folio in the swap cache under the HAS_CACHE pin,
 * write it to the device, and on completion give the caller one reference
 * to each slot. Without USWAP_SWAP_KEEP_CACHE the cached copy is dropped
 * when the write completes; with it, a clean copy stays until
 * uswap_cache_drop() or the last uswap_swap_free(), and uswap_swap_in()
 * returns it with no I/O.
 * A failed write never loses data: the failed slots are freed again (a
 * failure such as zram's memory limit is not a bad sector; the kernel
 * marks nothing bad either), the device is passed over by allocation
 * while any other device has room, for a pause (10 ms, doubled by each
 * further failure up to 1.28 s, reset by a good write; counted in
 * uswap_device_info()'s write_errors and write_pauses), and the folio is
 * retried on the next device with room, up to 4 tries in all.
 * @pages: 2^order * USWAP_PAGE_SIZE bytes; read only, not kept.
 * Return: 0 with *@entry; -E2BIG (split the folio); -ENOSPC; -EIO (a
 * write failed and no other device could take the folio, or every retry
 * failed: the caller still has its pages); -EINVAL; -ENOMEM.
 * Context: any thread; sleeps on the device's I/O.
 */
USWAP_API int uswap_swap_out(struct uswap *u, const void *pages, unsigned int order,
			     unsigned int flags, uswap_entry_t *entry);

/*
 * uswap_swap_in() - read the folio of 2^@order pages at @entry into @buf:
 * from the swap cache when a copy is there, else from the device. The
 * caller keeps its references (free them with uswap_swap_free()).
 * Return: 1 (swap cache hit, no I/O), 0 (read from the device), -EIO (the
 * device failed: @buf holds nothing valid), -ENOENT (a slot not in use),
 * -EINVAL.
 * Context: any thread; sleeps on I/O.
 */
USWAP_API int uswap_swap_in(struct uswap *u, uswap_entry_t entry, unsigned int order,
			    void *buf);

/*
 * uswap_swap_free() - drop one reference to each slot of the folio
 * (free_swap_and_cache()): slots left without references lose any cached
 * copy, their data is discarded on the device (zram frees the memory at
 * once, as swap_slot_free_notify), and they become free. A slot whose
 * HAS_CACHE pin another caller holds (uswap_cache_pin() or uswap_alloc())
 * is left pinned with no references: it is freed when that owner calls
 * uswap_put_folio(); the device then forgets its data on reuse.
 * Return: 0; -ENOENT (a slot had no reference: nothing changed); -EINVAL.
 * Context: any thread; takes the folio's cluster lock twice.
 */
USWAP_API int uswap_swap_free(struct uswap *u, uswap_entry_t entry, unsigned int order);

/*
 * uswap_cache_drop() - drop the clean cached copy of a folio kept by
 * USWAP_SWAP_KEEP_CACHE (no I/O: the device has the data).
 * Return: 0; -ENOENT (no copy cached); -EINVAL.
 */
USWAP_API int uswap_cache_drop(struct uswap *u, uswap_entry_t entry, unsigned int order);

/*
 * uswap_set_unuse() - register the slot owner's swapoff callback (one per
 * instance; NULL unregisters). With it, uswap_swapoff() of a busy device
 * hands every in-use slot to @fn instead of refusing with -EBUSY.
 */
USWAP_API void uswap_set_unuse(struct uswap *u, uswap_unuse_fn fn, void *ctx);

/*
 * uswap_swapoff_progress() - uswap_swapoff() that reports the slots left
 * to @progress (may be NULL) after each one is moved, as try_to_unuse()'s
 * caller could. Return: as uswap_swapoff(), plus the callback's -errno.
 */
USWAP_API int uswap_swapoff_progress(struct uswap *u, int type,
				     uswap_progress_fn progress, void *ctx);

/* ------------------------------------------------------------------------
 * Swap headers: page 0 of a swap area made by util-linux mkswap
 *
 * The SWAPSPACE2 layout (include/linux/swap.h union swap_header): 1024
 * bytes left for boot loaders, then u32 version, last_page, nr_badpages,
 * a 16-byte uuid and a 16-byte label; the bad-page list (u32 each) from
 * byte 1536; the magic "SWAPSPACE2" in the last 10 bytes of the page.
 * The rules follow the kernel's read_swap_header() and util-linux
 * swapon(8), with these differences, each refused with its own message:
 * a byte-swapped header (the kernel converts it), bad pages in a regular
 * file (accepted here: the file backend skips them; the kernel refuses),
 * and areas under USWAP_MIN_CLUSTERS clusters (too small for uswap).
 * ---------------------------------------------------------------------- */

/* Room for the bad-page list: (4096 - 10 - 1536) / 4 (MAX_SWAP_BADPAGES) */
#define USWAP_HEADER_MAX_BADPAGES 637

struct uswap_header_info {
	uint32_t version;         /* 1 on success (SWAPSPACE2) */
	uint32_t last_page;       /* header's last_page: last slot of the area */
	uint64_t nr_slots;        /* last_page + 1, slots incl. header slot 0
				     (clamped to UINT32_MAX as the kernel does):
				     uswap_swapon_args.nr_slots */
	uint64_t usable_slots;    /* nr_slots - 1 - nr_badpages */
	uint32_t nr_badpages;
	uint64_t badpages[USWAP_HEADER_MAX_BADPAGES]; /* ascending, distinct,
				     1..last_page: uswap_swapon_args.bad_slots */
	uint8_t uuid[16];
	char uuid_str[37];        /* "01234567-89ab-cdef-0123-456789abcdef" */
	char label[17];           /* up to 16 bytes, NUL-terminated; "" = none */
	char byte_order[16];      /* "little-endian" or "big-endian": the
				     header's, always the host's on success */
	uint32_t page_size;       /* bytes per page of the header: 4096 */
	/* Set by uswap_header_read_file() only (0 from uswap_header_parse()): */
	bool is_block_device;
	uint64_t file_size;       /* bytes: st_size, or BLKGETSIZE64 */
	uint32_t mode;            /* permission bits, st_mode & 07777 */
	uint32_t uid;             /* owner */
	unsigned int nr_warnings; /* lines written to the warning buffer */
};

/*
 * uswap_header_parse() - check a swap header held in memory. Pure: no I/O,
 * no allocation, no global state; any byte string is safe input.
 * @page: the first @page_len bytes of the area; at least USWAP_PAGE_SIZE.
 *        Up to 65536 bytes let it recognise a header made for a larger
 *        page size (mkswap -p) and say so.
 * @area_bytes: size of the whole area in bytes; the header's last_page
 *        must fit in it.
 * @out: filled on success; undefined on error.
 * @err: receives a one-line reason on error (may be NULL).
 * Return: 0; -EINVAL (not a usable SWAPSPACE2 v1 header for 4 KiB pages:
 * the message says which rule failed); -EBUSY (the area holds a
 * hibernation image: swapping to it would destroy the image).
 * Source: kernel read_swap_header() and setup of the bad slots.
 */
USWAP_API int uswap_header_parse(const void *page, size_t page_len, uint64_t area_bytes,
				 struct uswap_header_info *out, char *err, size_t errlen);

/*
 * uswap_header_read_file() - open @path read-only (a regular file or a
 * block device), read its header and check it as uswap_header_parse()
 * does, then refuse a regular file with holes (st_blocks short of its
 * size, util-linux swapon's test; the kernel's swapon fails on any
 * unmapped block) and warn, without refusing, about permissions wider
 * than 0600 (0660 for a block device) and a file not owned by root, as
 * util-linux swapon(8) does.
 * @err: one-line reason on error, without the path (may be NULL).
 * @warn: warnings, one per line, no trailing newline; "" when none (may
 *        be NULL); out->nr_warnings counts them.
 * Return: 0; the errors of uswap_header_parse(); -EINVAL (not a regular
 * file or block device, smaller than one page, holes); -EIO (short read);
 * the negative errno of open(), fstat(), pread() or BLKGETSIZE64.
 * Thread-safety: any thread.
 */
USWAP_API int uswap_header_read_file(const char *path, struct uswap_header_info *out,
				     char *err, size_t errlen, char *warn, size_t warnlen);

/* ------------------------------------------------------------------------
 * Device specs: the strings every command takes to name a device
 *
 *   ram:SIZE[:prio=N]                  memory, uncompressed
 *   zram:SIZE[:lz4|:zstd][:prio=N]     compressed memory (default lz4)
 *   file:PATH[:prio=N][:discard][:direct][:qd=N][:sync]
 *                                      a mkswap'd file or block device;
 *                                      write ':' in PATH as '\:', '\' as '\\'
 *   faulty:OPTS:INNER                  fault injection around INNER (any
 *                                      spec); OPTS is comma-separated
 *                                      read=R,write=R,discard=R (fractions
 *                                      0..1), latency=MICROSECONDS, seed=N,
 *                                      read_slots=A+B+C, write_slots=A+B,
 *                                      discard_slots=A+B (these slots
 *                                      always fail), fail_nth=N (the Nth
 *                                      request fails), persistent (and
 *                                      every later one), prio=N; may be
 *                                      empty
 *
 * SIZE is bytes with an optional binary suffix K, M, G or T, a multiple
 * of USWAP_PAGE_SIZE, at least USWAP_MIN_CLUSTERS clusters (4M). prio is
 * -1 (default) to 32767. qd is the io_uring queue depth (1..4096, default
 * 32) of the backend's asynchronous interface, and sync makes that
 * interface use pread/pwrite; the swap path itself reads and writes a file
 * synchronously (pread/pwrite) today.
 * ---------------------------------------------------------------------- */

#define USWAP_SPEC_MAX_LEN    4096 /* longest spec accepted, bytes without NUL */
#define USWAP_SPEC_MAX_FAULTY 4    /* faulty wrappers one spec may nest */

struct uswap_spec_faulty {
	double read_error_rate;    /* 0..1: fraction of reads failing with -EIO */
	double write_error_rate;   /* 0..1 */
	double discard_error_rate; /* 0..1 */
	unsigned int latency_us;   /* added to every request (=0) */
	uint64_t seed;             /* seed of the fault draws (=1) */
	size_t nr_bad_read_slots;  /* slots in read_slots= (reads always fail) */
	size_t nr_bad_write_slots; /* slots in write_slots= */
	size_t nr_bad_discard_slots; /* slots in discard_slots= */
	uint64_t fail_nth;         /* the Nth request fails (1-based; 0 = off) */
	bool fail_persistent;      /* and every request after it */
};

struct uswap_spec_info {
	char canonical[2 * USWAP_SPEC_MAX_LEN]; /* normal form: defaults left
				      out, sizes in the largest exact unit;
				      parses back to the same spec */
	int prio;                  /* USWAP_PRIO_DEFAULT or 0..USWAP_PRIO_MAX */
	unsigned int nr_faulty;    /* fault wrappers, outermost first */
	struct uswap_spec_faulty faulty[USWAP_SPEC_MAX_FAULTY];
	/* The device under the wrappers: */
	char kind[8];              /* "ram", "zram" or "file" */
	uint64_t size_bytes;       /* ram, zram; 0 for file (see its header) */
	uint64_t nr_slots;         /* size_bytes / USWAP_PAGE_SIZE, incl. slot 0 */
	char algo[8];              /* zram: "lz4" or "zstd"; else "" */
	char path[USWAP_SPEC_MAX_LEN]; /* file: unescaped; else "" */
	unsigned int queue_depth;  /* file: io_uring entries (=32) */
	bool discard;              /* file: discard freed clusters */
	bool direct;               /* file: O_DIRECT */
	bool sync;                 /* file: pread/pwrite, no io_uring */
};

/*
 * uswap_spec_parse() - parse and check a device spec without opening
 * anything (files are not touched: use uswap_header_read_file()).
 * @out: filled on success; undefined on error.
 * @err: one-line reason on error (may be NULL).
 * Return: 0; -EINVAL (malformed: unknown kind or option, missing or bad
 * size or number, value out of range, option given twice, spec longer
 * than USWAP_SPEC_MAX_LEN or nesting deeper than USWAP_SPEC_MAX_FAULTY);
 * -ENOMEM.
 * Thread-safety: any thread.
 */
USWAP_API int uswap_spec_parse(const char *spec, struct uswap_spec_info *out,
			       char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * The pager: memory regions that swap through userfaultfd
 *
 * A pager owns one userfaultfd and a resident limit shared by all its
 * regions (the memory cgroup's memory.max role). A region is anonymous
 * memory registered with userfaultfd: its first touch maps zeroes, and
 * when the regions together hold more than the limit the pager evicts
 * folios of 2^order pages (clock order), writes them through
 * uswap_swap_out() and unmaps them; the next access faults and the folio
 * comes back whole through uswap_swap_in() (from the swap cache when it
 * is still there). Application threads may read and write region memory
 * at any time, eviction included: a page is write-protected before it is
 * copied out, so no write is ever lost.
 *
 * One pager per swap instance: the pager owns every slot of @u and
 * registers itself as its swapoff owner (uswap_set_unuse()), so
 * uswap_swapoff_progress() of a device under live regions moves their
 * folios to the other devices (or, when nothing else has room, back into
 * memory, above the limit) and reports progress.
 *
 * A device read error on swap-in makes the access fail with SIGBUS
 * (UFFDIO_POISON, kernel 6.6+); on kernels without it the folio is mapped
 * filled with USWAP_PAGER_POISON_BYTE instead. Either way the error is
 * recorded (uswap_region_error()) and passed to the config's on_error
 * callback before the faulting thread resumes; the data is lost, never
 * replaced by other data silently.
 *
 * Requirements: userfaultfd with write-protect support for anonymous
 * memory (Linux 5.7+). Without root (CAP_SYS_PTRACE) the pager asks for
 * user-mode-only faults first (UFFD_USER_MODE_ONLY, always allowed), then
 * for full userfaultfd (vm.unprivileged_userfaultfd=1), then
 * /dev/userfaultfd. In user-mode-only mode a system call given a region
 * address that is swapped out fails with EFAULT instead of faulting it in.
 * ---------------------------------------------------------------------- */

struct uswap_pager; /* one userfaultfd, handler threads, limit, clock */

#define USWAP_PAGER_MAX_ORDER 4      /* folios up to 16 pages (64 KiB) */
#define USWAP_PAGER_POISON_BYTE 0xA5 /* fill of a lost folio without UFFDIO_POISON */

/* uswap_pager_config.flags */
#define USWAP_PAGER_KERNEL_FAULTS 0x1 /* never user-mode-only: system calls
					 on region memory fault pages in
					 (needs root, the sysctl, or
					 /dev/userfaultfd) */
#define USWAP_PAGER_NO_POISON     0x2 /* use the poison-byte fallback even
					 where UFFDIO_POISON exists */
#define USWAP_PAGER_NO_KEEP_CLEAN 0x4 /* free the slots of every folio read
					 back (default: a folio read back
					 by a read fault keeps its slots and
					 is mapped write-protected, so it can
					 be evicted again with no write
					 until it is written) */
#define USWAP_PAGER_NO_ZEROPAGE   0x8 /* first read touches map a zero-filled
					 copy, not the shared zero page */
#define USWAP_PAGER_NO_SPIN       0x10 /* handlers block in poll() as soon
					 as the queue is empty */
#define USWAP_PAGER_NO_KSWAPD     0x20 /* no background reclaim thread:
					 faults reclaim for themselves when
					 the limit is reached (memory.max
					 without kswapd) */

/*
 * uswap_pager_error_fn - called once per folio lost to a read error, in a
 * handler thread, with the folio's first address and the error (-EIO).
 * Must not call back into the pager.
 */
typedef void (*uswap_pager_error_fn)(void *ctx, void *addr, int err);

struct uswap_pager_config {
	uint64_t limit_bytes;      /* resident bytes of all regions together
				      (rounded down to whole folios); at least
				      USWAP_PAGER_MIN_LIMIT_FOLIOS folios per
				      handler thread */
	unsigned int nr_handlers;  /* fault-handler threads (=1 when 0) */
	unsigned int order;        /* folio order 0..USWAP_PAGER_MAX_ORDER:
				      pages evicted and brought back together */
	unsigned int spin_us;      /* a handler with nothing to do keeps
				      polling the userfaultfd without sleeping
				      this long before it blocks in poll()
				      (=USWAP_PAGER_SPIN_DEFAULT when 0; see
				      USWAP_PAGER_NO_SPIN). Spinning costs CPU
				      but saves the ~25 us wake-up per fault. */
	unsigned int reclaim_batch;/* pages one reclaim pass evicts (=256 when
				      0), rounded up to whole folios, at most
				      a quarter of the limit */
	unsigned int swap_flags;   /* passed to uswap_swap_out(): 0 or
				      USWAP_SWAP_KEEP_CACHE (a clean copy stays
				      in the swap cache until the slots are
				      freed: memory outside the limit) */
	unsigned int flags;        /* USWAP_PAGER_* */
	uswap_pager_error_fn on_error; /* may be NULL */
	void *error_ctx;
	unsigned int readahead_pages; /* sequential readahead: a fault that
				      continues a sequential stream also maps
				      up to this many pages of the folios
				      after it that are in the same state
				      (never touched, or swapped out), in one
				      ioctl; the window doubles from one folio
				      as the stream goes on (0 = off; at most
				      64; less than a folio = off) */
};

#define USWAP_PAGER_SPIN_DEFAULT 50 /* us; see docs/pager.md */
#define USWAP_PAGER_MIN_LIMIT_FOLIOS 8

/*
 * uswap_pager_create() - open a userfaultfd, start the handler threads and
 * become @u's swapoff owner.
 * @u: the swap instance; must outlive the pager; its devices may come and
 *     go while the pager runs.
 * @cfg: settings (copied); NULL is not allowed (the limit has no default).
 * @out: receives the pager; free it with uswap_pager_destroy().
 * Return: 0; -EINVAL (bad order, limit too small for the handler count,
 * unknown flag); -EPERM (userfaultfd not permitted: see the section
 * comment for the three ways to allow it); -ENOSYS (no userfaultfd, or no
 * write-protect support for anonymous memory); -ENOMEM; -EAGAIN (threads).
 * Thread-safety: any thread.
 */
USWAP_API int uswap_pager_create(struct uswap *u, const struct uswap_pager_config *cfg,
				 struct uswap_pager **out);

/*
 * uswap_pager_destroy() - free every region still there (their slots
 * too), stop the handler threads, close the userfaultfd and unregister
 * the swapoff owner. NULL is a no-op.
 * Context: no thread may touch region memory or use the pager during or
 * after the call.
 */
USWAP_API void uswap_pager_destroy(struct uswap_pager *p);

/*
 * uswap_region_create() - map @size bytes of anonymous memory managed by
 * the pager. The memory reads as zeroes until written.
 * @size: bytes, rounded up to whole folios.
 * @addr: receives the address, aligned to the folio size. The pager owns
 *        the mapping: do not munmap, mremap, mprotect or madvise it.
 * Return: 0; -EINVAL (@size 0 or @addr NULL); -ENOMEM.
 * Thread-safety: any thread; waits for faults in flight on other regions
 * to finish.
 */
USWAP_API int uswap_region_create(struct uswap_pager *p, size_t size, void **addr);

/*
 * uswap_region_destroy() - unmap a region and free its swap slots.
 * @addr: as returned by uswap_region_create().
 * Return: 0; -ENOENT (no region starts at @addr).
 * Context: no thread may touch the region during or after the call.
 */
USWAP_API int uswap_region_destroy(struct uswap_pager *p, void *addr);

/*
 * uswap_region_error() - the read errors a region has seen.
 * @addr: the region's address.
 * @first: receives the first address lost (NULL if none); may be NULL.
 * Return: the number of folios lost to read errors (0 = none); -ENOENT.
 */
USWAP_API long uswap_region_error(struct uswap_pager *p, void *addr, void **first);

#define USWAP_PAGER_STATS_VERSION 1

struct uswap_pager_stats {
	uint32_t size;               /* sizeof(struct uswap_pager_stats) */
	uint32_t version;            /* USWAP_PAGER_STATS_VERSION */
	uint64_t limit_bytes;        /* effective limit */
	uint64_t resident_bytes;     /* charged now: mapped folios, and folios
					being brought in */
	uint64_t resident_peak_bytes;
	uint64_t regions;            /* live regions */
	uint64_t faults;             /* missing-page fault messages */
	uint64_t wp_faults;          /* write-protect fault messages */
	uint64_t zero_fills;         /* folios mapped on first touch */
	uint64_t swapins;            /* folios brought back */
	uint64_t swapins_cached;     /* ... from the swap cache (no I/O) */
	uint64_t evictions;          /* folios evicted */
	uint64_t evict_clean;        /* ... with no write: still on swap */
	uint64_t evict_split;        /* ... written as 2^order single pages
					after -E2BIG */
	uint64_t evict_cancelled;    /* evictions undone: written meanwhile,
					or the swap-out failed */
	uint64_t reclaim_waits;      /* faults that reclaimed before mapping */
	uint64_t kswapd_wakeups;     /* background reclaim rounds */
	uint64_t readahead;          /* folios mapped ahead of a fault (in
					zero_fills or swapins too) */
	uint64_t over_limit;         /* folios mapped above the limit because
					nothing could be evicted (swap full) */
	uint64_t read_errors;        /* folios lost to device read errors */
	uint64_t unuse_moved;        /* folios that left a device being swapped
					off without coming into memory: written
					to another device, or clean copies
					dropped */
	uint64_t unuse_loaded;       /* ... brought into memory instead (no
					other device had room) */
	/* Fault service time: from reading the fault message to the ioctl
	 * that maps the folio (and wakes the thread), in ns, over every
	 * resolved missing-page fault. 0 when none. */
	uint64_t fault_count;
	uint64_t fault_ns_p50;
	uint64_t fault_ns_p99;
	uint64_t fault_ns_max;
	/* Kernel features in use. */
	bool uffd_user_mode_only;    /* UFFD_USER_MODE_ONLY */
	bool uffd_poison;            /* UFFDIO_POISON for read errors */
	bool uffd_move;              /* UFFDIO_MOVE is offered (not used yet) */
	bool kswapd;                 /* background reclaim thread running */
};

/*
 * uswap_pager_stats_get() - counters since creation. @st->size must be
 * set to sizeof(*st). Return: 0; -EINVAL.
 * Context: any thread, while faults run; counts are moving snapshots.
 */
USWAP_API int uswap_pager_stats_get(struct uswap_pager *p, struct uswap_pager_stats *st);

/*
 * uswap_pager_reset_latency() - forget the fault service times so far
 * (to time one phase). Context: any thread.
 */
USWAP_API void uswap_pager_reset_latency(struct uswap_pager *p);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_USWAP_H */
