/* SPDX-License-Identifier: MIT */
/*
 * types.h - every structure of the slot allocator.
 *
 * Glossary (docs/design.md's terms; the kernel's names in parentheses):
 *   slot      one page of swap space; offset 0 is the header, never handed out
 *   cluster   512 slots (SWAPFILE_CLUSTER) with its own lock, use count,
 *             list flag and order (struct swap_cluster_info)
 *   device    one swap area (struct swap_info_struct), "si" in code
 *   table     per cluster, one 64-bit entry per slot: reference count,
 *             HAS_CACHE pin, BAD and the swap cache's folio (the kernel's
 *             swap table after phase III, which removed swap_map);
 *             attached while the cluster holds slots, NULL while it is free
 *   ring      the devices of one priority, immutable once published; each
 *             CPU keeps a reader (cursor + quota) into it (seed 5)
 *   cursor    per device, per CPU, per order: the next offset to try
 *             (percpu_cluster->next[order], per device again as in seed 5)
 *
 * Cluster states. A cluster is on exactly one list, or is a CPU's current
 * cluster (PERCPU, on no list):
 *
 *   FREE --isolate--> PERCPU --fills--> FULL --a free--> NONFULL
 *     ^                 |  \--scan fails--> FRAG --a free--> NONFULL
 *     |                 |                               |
 *     +-- count drops to 0 (from any state) <-----------+
 *
 * A PERCPU cluster differs from the kernel's (which files the CPU's current
 * cluster on frag[] after every allocation): it stays off every list while
 * its owner allocates from it, so neither that allocation nor a free into
 * it takes the device list lock. It is filed again (FULL, FRAG) by the CPU
 * that abandons it, and a free that empties it moves it to FREE at once so
 * an order-9 request can always find every wholly free cluster.
 *
 * Lock order (written once, here): per-CPU lock -> ci->lock -> si->lock.
 * Isolation takes si->lock first and only trylocks cluster locks. The
 * instance's swapon_lock is outermost and is never taken by allocation.
 * Policies (alloc_policy.h) add two locks: si->alloc_lock (LOCKING_DEVICE) goes
 * between the per-CPU lock and ci->lock; u->avail_lock (GLOBAL_ROTATE,
 * LEGACY_PRIO) is taken with no lock but the per-CPU one to pick a device,
 * and under ci->lock when a device fills or stops being full, so nothing
 * is ever taken while holding it.
 */
#ifndef USWAP_ALLOC_TYPES_H
#define USWAP_ALLOC_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uswap/alloc.h>
#include <uswap/lab.h>
#include <uswap/slots.h>
/* The swap layer's types the allocator keeps for it (struct uswap's unuse
 * callback, the swapon arguments device_swapon() takes): docs/design.md,
 * "Who owns per-slot and per-cluster storage". */
#include <uswap/swap.h>

#include "util/compiler.h"
#include "util/lock.h"
#include "util/stat.h"

#define CLUSTER_SLOTS USWAP_CLUSTER_SLOTS
#define NR_ORDERS     USWAP_NR_ORDERS
#define CLUSTER_NIL   UINT32_MAX /* list link: none */

_Static_assert(CLUSTER_SLOTS == 512, "a cluster holds one 2 MiB folio");
_Static_assert((1u << (NR_ORDERS - 1)) == CLUSTER_SLOTS,
	       "the largest order is exactly one cluster");
_Static_assert(USWAP_MAX_DEVICES == 32 && USWAP_TYPE_SHIFT == 58,
	       "type in 5 bits above a 58-bit offset");

/*
 * Swap table entry: one uint64_t per slot (the kernel's swap table entry
 * once phase III folded the count in). Zero is a free slot.
 *   bits  0..47  the swap cache's folio for this slot (a user-space
 *                pointer, opaque to alloc/), 0: none cached
 *   bits 48..61  reference count 0..ENT_COUNT_INLINE; ENT_COUNT_CONT: the
 *                count lives in the cluster's side table ci->ext
 *   bit  62      BAD: the header, a bad block or padding past the end
 *   bit  63      HAS_CACHE: pinned by the swap cache (or an allocation not
 *                yet committed)
 */
#define ENT_PTR_MASK      ((UINT64_C(1) << 48) - 1)
#define ENT_COUNT_SHIFT   48
#define ENT_COUNT_INLINE  0x3ffeu /* largest count the entry holds */
#define ENT_COUNT_CONT    0x3fffu /* count in ci->ext[ci_off] */
#define ENT_COUNT_MASK    ((uint64_t)ENT_COUNT_CONT << ENT_COUNT_SHIFT)
#define ENT_BAD           (UINT64_C(1) << 62)
#define ENT_HAS_CACHE     (UINT64_C(1) << 63)

/* One cluster's entries: 4 KiB, 8 bytes per slot of a cluster in use. */
struct swap_table {
	uint64_t ent[CLUSTER_SLOTS];
};

enum cluster_flag {
	CLUSTER_FLAG_FREE = 1,
	CLUSTER_FLAG_NONFULL, /* nonfull[order]: gained free slots since scanned */
	CLUSTER_FLAG_FRAG,    /* frag[order]: a scan for `order` failed here */
	CLUSTER_FLAG_PERCPU,  /* some CPU's current cluster; on no list */
	CLUSTER_FLAG_FULL,
	CLUSTER_FLAG_DISCARD, /* emptied on a page-discard device: waits on
				 discard_clusters for the device to forget
				 it before anyone may reuse it */
	CLUSTER_FLAG_DISCARDING, /* off the lists while its discard runs */
	CLUSTER_FLAG_MAX,
};

/* 32 bytes for 512 slots: 0.0625 bytes per slot, all the static
 * metadata a slot costs (the table comes with use). */
struct swap_cluster_info {
	struct spinlock lock; /* this struct (but prev/next), its table and
				 ext[] */
	uint16_t count;       /* slots in use incl. header/bad/padding; lock */
	uint8_t flags;        /* enum cluster_flag; changed under lock AND
				 si->lock, so either one suffices to read it */
	uint8_t order;        /* order served while not FREE; lock */
	uint32_t prev, next;  /* list links (cluster index); si->lock */
	uint16_t *ext;        /* counts past ENT_COUNT_INLINE, CLUSTER_SLOTS
				 entries, allocated on first use; lock */
	struct swap_table *table; /* NULL while every slot is free (but the
				 header and padding): taken from the
				 device's pool when a slot is allocated,
				 given back when the count drops to 0
				 (the header's and padding's cluster
				 keeps it once it has one); lock */
};

/*
 * device_hooks - what the layer above does for the allocator on a
 * device's behalf. alloc/ never reaches a backend or the swap cache: the
 * swap layer installs these at swapon (device_swapon()). Any may be NULL.
 */
struct device_hooks {
	/* The device is being freed: let go of @backend. */
	void (*close)(void *backend);
	/* Have @backend forget @nr slots from @first: an emptied cluster
	 * of a page-discard device. Return: 0 or -errno (the cluster is
	 * freed all the same). */
	int (*discard)(void *backend, uint64_t first, uint64_t nr);
	/* Device teardown: run completions of requests in flight on
	 * @backend (si->io_inflight falls as they finish). */
	void (*reap)(void *backend);
	/* Device teardown: drop what the swap cache keeps for @ci (its
	 * table's folio pointers). */
	void (*release_cluster)(struct swap_cluster_info *ci);
};

struct cluster_list {
	uint32_t head, tail; /* cluster indices or CLUSTER_NIL */
	uint32_t nr;
};

/* The per-CPU cursors of one device: one cache line per CPU. */
struct pcpu_cursor {
	uint32_t next[NR_ORDERS]; /* next offset to try, 0 = none; that CPU's
				     per-CPU lock */
} __cacheline_aligned;

/* nr_full: clusters with all 512 slots used; bit DEVICE_FULL is set (only
 * by a CAS from exactly nr_clusters) while every cluster is, so ring
 * readers skip the device (SWAP_USAGE_OFFLIST_BIT's role, moved from the
 * slot count to the full-cluster count: it changes once per cluster, not
 * once per slot, so no shared counter is written on the fast path). */
#define DEVICE_FULL (UINT32_C(1) << 31)

struct swap_device {
	int type;                 /* index in uswap->devs[] */
	int prio;                 /* -1 or 0..32767; LEGACY_PRIO: -2, -3, ...
				     for prio_auto devices; u->swapon_lock */
	bool prio_auto;           /* swapped on with USWAP_PRIO_DEFAULT */
	bool on_avail;            /* on the global device lists (GLOBAL_ROTATE,
				     LEGACY_PRIO); u->avail_lock */
	int node;                 /* emulated NUMA node */
	struct uswap *owner;      /* the instance (avail lists, policy) */
	char name[64];
	uint32_t max;             /* slots incl. header (nr_slots) */
	_Atomic uint32_t pages;   /* usable: max - 1 - bad */
	uint32_t nr_clusters;
	_Atomic bool writeok;     /* allocation allowed (SWP_WRITEOK); checked
				     under ci->lock by every allocation */
	_Atomic uint64_t write_pause_until; /* CLOCK_MONOTONIC ns until which
				     allocation passes the device over after
				     a failed write; 0: not paused */
	_Atomic uint32_t write_fail_streak; /* failed writes since the last
				     good one: each doubles the pause */
	struct swap_cluster_info *cluster_info; /* [nr_clusters] */
	struct pcpu_cursor *cursors; /* [nr_cpus] */
	unsigned int nr_cpus;

	void *backend;            /* where the data goes (dev/); owned; NULL
				     for a metadata-only device */
	const struct device_hooks *hooks; /* the swap layer's, for @backend */
	bool backend_is_file;     /* Type column: "file" or "partition" */
	bool page_discard;        /* empty clusters go to discard_clusters,
				     not free (SWP_PAGE_DISCARD) */
	bool unusing;             /* a swapoff is moving its slots away;
				     u->swapon_lock */

	/* Written when a cluster fills or stops being full: its own cache
	 * line, away from the read-mostly fields above. */
	_Atomic uint32_t nr_full __cacheline_aligned; /* see DEVICE_FULL */
	_Atomic uint32_t cached_slots; /* LOCKING_DEVICE: slots parked in slot
				     caches (allocated, handed to nobody) */
	_Atomic uint64_t write_errors; /* failed writes on this device */
	_Atomic uint64_t read_errors;  /* failed reads (swap-ins) from it */
	_Atomic uint64_t write_pauses; /* times it was passed over for them */
	_Atomic uint64_t io_inflight; /* swap-path requests submitted to
				     @backend and not yet done (swap/swapq.c);
				     swapoff waits for zero */

	/* Tables for clusters about to take slots: filled with no lock
	 * held (table.c), popped under ci->lock, so no allocation ever
	 * happens under a spinlock on the swap-out path. */
	struct spinlock table_lock; /* a leaf: the three fields below */
	struct lock_stat table_lstat; /* its acquisitions (no per-CPU class) */
	struct swap_table *table_pool; /* linked through ent[0] */
	_Atomic uint32_t table_pool_nr;
	uint32_t table_fail;     /* tests: refills left to fail (ENOMEM) */
	_Atomic uint32_t tables_used; /* attached to clusters */

	struct spinlock alloc_lock; /* LOCKING_DEVICE: held across a whole
				     allocation on this device and each
				     free; outside ci->lock */
	struct spinlock lock __cacheline_aligned; /* si->lock: the lists below
				     and every cluster's prev/next/flags */
	struct cluster_list free_clusters;
	struct cluster_list full_clusters;
	struct cluster_list discard_clusters;
	struct cluster_list nonfull_clusters[NR_ORDERS];
	struct cluster_list frag_clusters[NR_ORDERS];
};

/* One priority's devices. dev[] never changes after publication; readers[]
 * is each CPU's mutable position in it (that CPU's per-CPU lock). */
struct ring_reader {
	uint32_t cursor; /* index in dev[] of the device in use */
	uint32_t left;   /* slots left to allocate before moving on */
} __cacheline_aligned;

struct prio_ring {
	int prio;
	unsigned int nr;
	struct swap_device *dev[USWAP_MAX_DEVICES];
	struct ring_reader *readers; /* [nr_cpus] */
};

/* Every ring, highest priority first; replaced as a whole on swapon and
 * swapoff and published with RCU. */
struct ring_set {
	unsigned int nr;
	struct prio_ring *rings[USWAP_MAX_DEVICES];
};

/* PERCPU_GLOBAL: this CPU's current cluster per order, on any device
 * (percpu_swap_cluster). dev[order] stays valid while set: swapoff clears
 * every CPU's entries for a device before freeing it. */
struct pcpu_global_cursor {
	struct swap_device *dev[NR_ORDERS];
	uint32_t next[NR_ORDERS]; /* next offset to try on dev, 0 = none */
};

/* LOCKING_DEVICE: order-0 slots allocated (HAS_CACHE) but not yet handed
 * out, served from slots[head..nr) (swap_slots_cache). */
struct slot_cache {
	unsigned int head, nr;
	uswap_entry_t slots[USWAP_SLOT_CACHE_SLOTS];
};

/* One CPU's block of the allocator's counters: the public list
 * (USWAP_STATS_COUNTERS in <uswap/alloc.h>) yields struct uswap_stats,
 * this block and the sum in uswap_stats_get(). Bumped by the CPU's own
 * threads without a lock (util/stat.h), summed by readers while they run. */
struct pcpu_stats {
	stat_t swpout[USWAP_NR_ORDERS];
	stat_t swpout_fallback[USWAP_NR_ORDERS];
#define X(name, description) stat_t name;
	USWAP_STATS_COUNTERS(X)
	USWAP_STATS_COUNTERS_V2(X)
#undef X
	struct lock_stat locks[USWAP_LOCK_MAX];
};

struct uswap_pcpu {
	struct spinlock lock; /* the local_lock: held across one allocation;
				 covers everything below but stats */
	struct pcpu_stats stats;
	struct pcpu_global_cursor global;
	struct slot_cache *slot_cache; /* LOCKING_DEVICE only, else NULL */
} __cacheline_aligned;

/* GLOBAL_ROTATE / LEGACY_PRIO: devices with free slots, highest key first,
 * equal keys in requeue order (a plist of swap_avail_head). */
struct avail_list {
	unsigned int nr;
	struct swap_device *dev[USWAP_MAX_DEVICES];
	int key[USWAP_MAX_DEVICES]; /* effective priority on this list */
};

struct uswap {
	unsigned int nr_cpus;
	unsigned int ring_quota;
	struct uswap_policy policy;     /* fixed at uswap_create() */
	bool policy_device_alloc;       /* PERCPU_GLOBAL or LOCKING_DEVICE:
					   device_alloc() takes the long way */
	bool policy_slow;               /* any switch off its default:
					   uswap_alloc() takes the long way */
	int least_priority;             /* LEGACY_PRIO: last auto priority
					   given (starts at -1); swapon_lock */
	struct spinlock avail_lock;     /* avail[] and every si->on_avail */
	struct avail_list *avail;       /* [policy_nr_avail_lists()] */
	struct uswap_pcpu *pcpu;        /* [nr_cpus] */
	struct ring_set *rings;         /* RCU; written under swapon_lock */
	struct swap_device *devs[USWAP_MAX_DEVICES]; /* RCU; swapon_lock */
	pthread_mutex_t swapon_lock;    /* swapon/swapoff, the global lock */
	uswap_unuse_fn unuse;           /* slot owner's swapoff callback;
					   swapon_lock */
	void *unuse_ctx;
	_Atomic uint32_t tables_low;    /* bit per type: that device's table
					   pool fell below its low mark;
					   uswap_alloc() refills it first */
	char rcu_hb;                    /* TSan happens-before token (rcu.h) */
	const struct uswap_tracer *_Atomic tracer; /* NULL, or the swap
						      stream's recorder */
};

/*
 * A caller's step run under the cluster lock of a successful allocation,
 * so the slots never pass through an unlocked state between being taken
 * and being entered in the swap cache (folio_alloc_swap() allocates and
 * adds the folio to the swap table under one cluster lock). @fn gets the
 * device, the cluster (locked) and the first slot; @ran says it ran. Not
 * run for slots handed out of a slot cache (LOCKING_DEVICE), which were
 * taken earlier: the caller then locks the cluster itself.
 */
struct alloc_hook {
	void (*fn)(struct alloc_hook *h, struct swap_device *si,
		   struct swap_cluster_info *ci, uint32_t off);
	bool ran;
};

/* Everything one allocation carries down: the CPU it locked. */
struct alloc_ctx {
	struct uswap *u;
	unsigned int cpu;
	struct pcpu_stats *st;
	struct uswap_pcpu *pc;
	uint32_t *next;  /* the cursor device_alloc() works with */
	bool refill;     /* fill this CPU's slot cache after the first slot */
	bool use_paused; /* try devices in a write pause too (second walk) */
	bool skipped_paused; /* a device was passed over for its pause */
	/* Discards wanted before the walk can go on: they run with this
	 * CPU's lock dropped (uswap_alloc()), as the kernel discards after
	 * dropping its local lock. */
	struct swap_device *discard_si; /* BOUNDED: its only room waits */
	struct swap_device *table_si; /* its pool ran dry: refill, walk again */
	bool sync_discard;   /* SYNC_ALL: an order-0 walk found nothing */
	bool no_discard;     /* discarded already: walk without asking again */
	struct alloc_hook *hook; /* NULL, or run on the slots returned */
};

#endif /* USWAP_ALLOC_TYPES_H */
