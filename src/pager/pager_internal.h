/* SPDX-License-Identifier: MIT */
/*
 * pager_internal.h - the pager's internals: regions of anonymous memory
 * registered with userfaultfd, the resident limit, the clock and the
 * fault handlers. (The public API is <uswap/pager.h>.)
 *
 * Glossary (docs/design.md terms):
 *  folio     2^order pages of a region, aligned to their size: the unit
 *            that is mapped, charged, evicted and brought back;
 *  charge    pages counted against the limit (p->resident): a folio is
 *            charged from just before it is mapped until just after it is
 *            unmapped, so the mapped pages never exceed the charge;
 *  clean     a folio read back from swap whose slots are kept, with the
 *            hash of its contents then (r->hash): mapped writable, and
 *            evicted without a write if it still hashes the same (the
 *            kernel's clean swap-cache page);
 *  busy      a folio owned by one thread for a transition (FAULTING,
 *            EVICTING, DROPPING, UNPROTECTING, MOVING): nobody else
 *            changes its state, its slots or its mapping until the owner
 *            publishes the next state.
 *
 * Folio state machine (the low 4 bits of the folio's state word, changed
 * only by compare-and-swap; the owner of a busy state is the only writer
 * of the folio's slot[] words and of its mapping). Each transition names
 * the function that makes it (file in brackets):
 *
 *   NONE --fault_missing()--> FAULTING --fault_zero()--> RESIDENT
 *        (dirty, no slots), or ZERO (a read: the zero page, write-
 *        protected, uncharged) [fault.c]
 *   ZERO --fault_wp() (the first write)--> UNPROTECTING --> RESIDENT
 *        (charged; the kernel copies the zero page on the retry) [fault.c]
 *   SWAPPED --fault_missing()--> FAULTING --fault_swapin(), swapin_done()-->
 *        RESIDENT (write fault: slots freed), or CLEAN (read fault: slots
 *        kept, contents hashed) [fault.c]
 *   RESIDENT --clock_pick()--> EVICTING --evict(): run_move() or
 *        run_protect(), evict_write(), run_zap()--> SWAPPED, or NONE when
 *        all zeros (mark_zero()) [reclaim.c, stage.c]
 *   EVICTING --victim_keep(): pinned, written meanwhile (CANCEL, set by
 *        fault_wp()) or the write failed--> RESIDENT [reclaim.c]
 *   CLEAN --clock_pick()--> EVICTING --evict(): as RESIDENT's, and
 *        check_clean(): the same hash--> SWAPPED on its old slots (no
 *        write); else the old slots freed, written as RESIDENT's; kept:
 *        CLEAN again [reclaim.c]
 *   CLEAN --fault_wp() (a stale protection)--> UNPROTECTING -->
 *        RESIDENT (slots freed) [fault.c]
 *   SWAPPED --unuse_folio()--> MOVING --move_folio()--> SWAPPED (new
 *        slots) or RESIDENT [unuse.c]
 *   SWAPPED --load_region()--> MOVING --load_folio()--> RESIDENT
 *        (uswap_pager_hold()) [hold.c]
 *   any --discard_run(): claim_any()--> DROPPING --> NONE [discard.c]
 *   FAULTING or MOVING --folio_poison()--> POISONED (poison markers:
 *        SIGBUS), or RESIDENT holding the poison fill [fault.c]
 *
 * The folio's slots are read, written and freed through folio_swap.c
 * (folio_swap_out(), folios_swap_in(), folio_free_slots()), by the owner.
 *
 * Locking: p->lock (rwlock) guards the region arrays. Every fault, every
 * reclaim pass and every unuse call runs with it read-held, from lookup to
 * the end of the folio transition, so a region cannot go away under them;
 * region create/destroy write-hold it. Nobody may wait for the write side
 * while read-holding it, nor take it twice (it prefers writers). Lock
 * order: p->lock -> p->hand_lock -> p->unuse_lock is never nested the
 * other way; no pager lock is held across a call that takes another.
 * A thread that finds a folio busy waits (yield) for its owner without
 * holding anything else than p->lock (read): owners never wait for a
 * handler, so this cannot deadlock.
 */
#ifndef USWAP_PAGER_PAGER_INTERNAL_H
#define USWAP_PAGER_PAGER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <uswap/uswap.h>

#include "util/compiler.h"

/* Folio states (the low bits of a state word) */
enum pfolio_state {
	PF_NONE,         /* never touched: no memory, no slots */
	PF_RESIDENT,     /* mapped, may be dirty; no slots */
	PF_CLEAN,        /* mapped; slots held, r->hash of their data */
	PF_SWAPPED,      /* not mapped; slots hold its data */
	PF_POISONED,     /* lost to a read error: poison mapped */
	PF_ZERO,         /* the shared zero page mapped write-protected (a
			    first read): no memory, so no charge, no slots */
	PF_BUSY_FIRST,
	PF_FAULTING = PF_BUSY_FIRST, /* a handler is mapping it */
	PF_EVICTING,     /* moved out or write-protected, being written,
			    then unmapped */
	PF_DROPPING,     /* being discarded (discard.c) */
	PF_UNPROTECTING, /* clean becoming dirty: slots freed, WP lifted */
	PF_MOVING,       /* swapoff is moving its slots */
	PF_STATE_MAX,
};
#define PF_STATE_MASK 0xfu
#define PF_REF    0x10u /* used since the clock hand passed (second chance) */
#define PF_CANCEL 0x20u /* written while EVICTING: the evictor keeps it */
#define PF_WHOLE  0x40u /* slots are one order-k allocation (else 2^k
			   order-0 ones, after -E2BIG) */
/* Laps the clock still gives the folio after its reference bit, from its
 * rank in the working set (workingset.c), counted down by the hand. */
#define PF_ACT_SHIFT 7
#define PF_ACT_MASK  0x3f80u
#define PF_ACT_ONE   (1u << PF_ACT_SHIFT)
#define WS_RANK_MAX  5   /* 2^(rank + 2) - 1 laps: up to 127, PF_ACT's largest */

static inline unsigned int pf_state(uint32_t s)
{
	return s & PF_STATE_MASK;
}

static inline bool pf_busy(uint32_t s)
{
	return pf_state(s) >= PF_BUSY_FIRST;
}

/* A sequential stream of faults in a region (fault.c): the folio it
 * would fault on next, and how many folios were taken ahead last time. */
struct pager_seq {
	_Atomic size_t next;
	_Atomic unsigned int window;
};

/* One region: a folio-aligned anonymous mapping registered with the
 * pager's userfaultfd. Fields other than the arrays' elements are set at
 * creation and read-only after. */
struct pager_region {
	struct uswap_pager *p;
	uint32_t id;              /* index in p->by_id; in rmap values */
	char *base;               /* first byte, folio-aligned */
	size_t size;              /* bytes: nr_folios whole folios */
	void *map;                /* the mmap (base plus alignment slack) */
	size_t map_len;
	size_t nr_folios;
	_Atomic size_t used;      /* one past the last folio ever taken out
				     of NONE (region_note_used()): every
				     folio from here on is NONE, so the
				     scans of the clock, hold, fork and
				     destroy stop here (a heap reserved at
				     8 GiB and using 20 MiB costs 20 MiB's
				     worth of scan, not 8 GiB's) */
	_Atomic uint32_t *state;  /* per folio: enum pfolio_state | PF_* */
	_Atomic uint64_t *slot;   /* per page: uswap_entry_t.val of its slot,
				     0 = none; written by the folio's owner */
	struct pager_seq ra;      /* readahead's stream (fault.c) */
	struct pager_seq zw;      /* first writes to zero-page folios: a
				     stream of them is charged ahead */
	_Atomic long nr_errors;   /* folios lost to read errors */
	_Atomic(void *) first_error; /* first address lost */
	_Atomic uint8_t *locked;  /* per folio: FOLIO_LOCKED* (mapping.c):
				     mlocked, never picked for eviction */
	uint32_t *shadow;         /* per folio: eviction clock and rank
				     (workingset.c); its owner's */
	uint64_t *hash;           /* per folio: folio_hash() of its contents
				     when it came back clean (PF_CLEAN), for
				     the evictor to tell whether it was
				     written since (reclaim.c) */
};

/* r->locked[] (mapping.c): a locked folio is never evicted. Once it is
 * resident its charge is taken out of the limit (LOCKED_APART), as it
 * can give no room back: a locked range larger than the limit would
 * otherwise leave every fault waiting for room that never comes. */
enum { FOLIO_UNLOCKED, FOLIO_LOCKED, FOLIO_LOCKED_APART };

#define PAGER_MAX_RA_PAGES 64 /* readahead window limit, pages */
#define PAGER_MAX_RA_FOLIOS PAGER_MAX_RA_PAGES

/* Fault service time histogram: log-linear, 8 buckets per power of two
 * (12.5 % resolution), in ns. */
#define LAT_SUB_BITS 3
#define LAT_BUCKETS  (62 * (1 << LAT_SUB_BITS))

/* One handler thread. */
struct pager_handler {
	struct uswap_pager *p;
	pthread_t tid;
	unsigned int id;
	void *buf;                /* 1 + ra_folios folios, page-aligned:
				     swap-in bounce */
	_Atomic uint64_t lat[LAT_BUCKETS]; /* fault service ns */
	_Atomic uint64_t lat_max;
	bool for_fork;            /* serving the forking thread (fork.c):
				     a swap-in maps clean, nothing after
				     its mapping ioctl but atomic stores */
} __cacheline_aligned;

/* Reverse map for swapoff: slot -> (region id + 1) << 32 | page index, in
 * chunks allocated on first use. Offsets past RMAP_MAX_OFFSET are not
 * recorded (unuse then scans the regions). */
#define RMAP_CHUNK_SHIFT 16
#define RMAP_CHUNK       (1u << RMAP_CHUNK_SHIFT)
#define RMAP_TOP         (1u << 16)
#define RMAP_MAX_OFFSET  ((uint64_t)RMAP_TOP * RMAP_CHUNK)

struct pager_rmap {
	_Atomic(_Atomic uint64_t **) top[USWAP_MAX_DEVICES];
};

/* A charge group (group.c), in memory shared by its member processes:
 * the layout is the same in all of them (one build of libuswap). */
#define PAGER_GROUP_MEMBERS 120
struct pager_group_member {
	_Atomic int32_t pid;       /* 0: free */
	uint32_t pad;
	_Atomic uint64_t start;    /* the process's start time (ticks); 0 while
				      it joins */
	_Atomic uint64_t image;    /* a random number per program image: a
				      slot of this pid from another image is
				      from before an exec */
	_Atomic uint64_t resident; /* pages it has charged */
};
struct pager_group {
	_Atomic uint32_t magic;
	_Atomic uint32_t pressure_seq;   /* bumped: a member needs room */
	uint64_t limit_pages;
	_Atomic uint64_t resident;       /* sum of the members' */
	_Atomic uint64_t peak;
	_Atomic uint64_t pressure;       /* times pressure_seq was bumped */
	_Atomic uint64_t over_limit;
	_Atomic uint64_t members;        /* ever joined */
	_Atomic uint64_t live;           /* slots in use */
	struct pager_group_member member[PAGER_GROUP_MEMBERS];
};

/* Counters, each an atomic bumped with a relaxed add. */
#define PAGER_COUNTERS(X) \
	X(faults)          \
	X(wp_faults)       \
	X(zero_fills)      \
	X(swapins)         \
	X(swapins_cached)  \
	X(evictions)       \
	X(evict_clean)     \
	X(evict_zero)      \
	X(evict_split)     \
	X(evict_cancelled) \
	X(evict_pinned)    \
	X(reclaim_waits)   \
	X(kswapd_wakeups)  \
	X(readahead)       \
	X(over_limit)      \
	X(read_errors)     \
	X(unuse_moved)     \
	X(unuse_loaded)    \
	X(fork_folded)     \
	X(fork_window)     \
	X(workingset_refault) \
	X(workingset_activate) \
	X(zero_written)

struct pager_counters {
#define X(name) _Atomic uint64_t name;
	PAGER_COUNTERS(X)
#undef X
};

struct uswap_pager {
	struct uswap *u;
	struct uswap_pager_config cfg;  /* copied, defaults applied */
	unsigned int order;             /* folio order */
	unsigned int nr;                /* pages per folio */
	size_t folio_bytes;
	int uffd;                       /* O_NONBLOCK */
	int stop_fd;                    /* eventfd: wakes handlers to exit */
	bool user_mode_only;            /* UFFD_USER_MODE_ONLY in force */
	bool use_poison;                /* UFFDIO_POISON for lost folios */
	bool has_move;                  /* UFFDIO_MOVE offered and wanted */
	bool thread_id;                 /* messages say the faulting thread */
	uint64_t spin_ns;               /* handler spin before poll(); 0 = none */
	uint64_t limit_pages;           /* whole folios */
	unsigned int batch_folios;      /* folios per reclaim pass */
	unsigned int ra_folios;         /* readahead window, folios; 0 = off */
	_Atomic bool stopping;

	/* Background reclaim, the kernel's kswapd: woken when fewer than
	 * wmark_low pages are left under the limit, it evicts until
	 * wmark_high are, so most faults find room without reclaiming. */
	bool kswapd_on;
	pthread_t kswapd;
	uint64_t wmark_low, wmark_high;  /* free pages (limit - resident) */
	_Atomic bool kswapd_active;      /* woken and not yet asleep again */
	pthread_mutex_t kswapd_lock;     /* kswapd_kick */
	pthread_cond_t kswapd_cond;
	bool kswapd_kick;                /* kswapd_lock */

	_Atomic uint64_t ws_clock;      /* folios evicted (workingset.c) */
	_Atomic uint64_t ws_protected;  /* folios the hand found with laps
					   left, over its last whole lap */
	uint64_t ws_lap_count;          /* ... over this lap; hand_lock */
	_Atomic uint64_t resident;      /* pages charged */
	_Atomic uint64_t resident_peak;
	_Atomic uint64_t locked_apart;  /* resident pages of locked folios,
					   not charged (FOLIO_LOCKED_APART) */
	/* The charge group (cfg.group), or NULL: the limit is then the
	 * group's, and each charge goes to the group and to gslot too. */
	struct pager_group *group;
	struct pager_group_member *gslot;
	uint32_t group_seq;             /* kswapd: pressure_seq last seen */
	/* Until this time (ns), reclaim offers no dirty folio to swap: the
	 * last swap-out failed (swap full or failing). Without the pause every
	 * fault would write-protect, fail and restore a whole batch again, and
	 * on this machine each protection costs a TLB flush IPI. The pause
	 * doubles with each failure in a row (SWAP_FULL_PAUSE_NS up to
	 * SWAP_FULL_PAUSE_MAX_NS; a successful write resets it) and ends early
	 * once SWAP_FULL_ROOM_PAGES pages of slots were freed meanwhile: a slot
	 * or two freed by swap-ins is not room for a batch. */
	_Atomic uint64_t swap_full_until;
	_Atomic uint64_t swap_full_pause_ns; /* the current pause's length */
	_Atomic uint64_t swap_full_room;     /* pages freed during the pause */
	_Atomic bool swap_full_idle;         /* a pass of this pause found no
						clean folio: skip the scan */
	/* uswap_pager_hold() calls in force: no eviction while > 0. */
	_Atomic unsigned int hold;
	/* Between uswap_pager_fork_prepare() and _parent(): the forking
	 * thread, which holds p->lock for writing (fork.c); 0: none. */
	_Atomic pid_t fork_tid;
	/* Between uswap_pager_share_prepare() and _parent(): the fork's
	 * record, where swap-ins are marked (share_note_swapin()). */
	struct uswap_pager_share *_Atomic fork_share;

	/* Regions. lock: write for create/destroy, read for everything that
	 * touches a region (see the top of this file). */
	pthread_rwlock_t lock;
	struct pager_region **regions;  /* sorted by base; lock */
	size_t nr_regions, cap_regions; /* lock */
	struct pager_region **by_id;    /* id -> region or NULL; lock */
	size_t nr_ids;                  /* lock */
	size_t total_folios;            /* over all regions; lock */

	/* The clock hand: the next folio to look at. hand_lock; positions
	 * are clamped when regions go (under lock held for write). */
	pthread_mutex_t hand_lock;
	size_t hand_region;             /* index in regions[] */
	size_t hand_folio;

	pthread_mutex_t unuse_lock;     /* unuse_buf, unuse_miss */
	void *unuse_buf;                /* one folio */
	uint64_t unuse_miss_val;        /* entry last not found ... */
	unsigned int unuse_miss;        /* ... and how many times in a row */

	/* Move-out eviction's staging area (stage.c); NULL without
	 * UFFDIO_MOVE: eviction write-protects, copies and zaps. For a
	 * target it is this process's memory that victims are read into
	 * (p->remote), never registered. */
	char *stage;
	size_t stage_slot_bytes;        /* batch_folios folios */
	unsigned int nr_stage;          /* slots */
	_Atomic uint64_t stage_busy;    /* bit per slot held by a pass */
	int stage_pagemap;              /* /proc/self/pagemap, or -1 */

	/* A target (target.c): the regions are another process's memory. */
	bool remote;
	struct uswap_pager_target target;
	int pagemap;                    /* the target's /proc/PID/pagemap */

	void *zero;                     /* 1 + ra_folios folios of zeroes */
	struct pager_rmap rmap;
	struct pager_counters cnt;
	unsigned int nr_handlers;
	struct pager_handler *handlers;
};

#define pager_count(p, name) \
	atomic_fetch_add_explicit(&(p)->cnt.name, 1, memory_order_relaxed)

/* Region memory is written by application threads and read by the
 * evictor with the kernel's write protection in between, an ordering
 * ThreadSanitizer cannot see: the evictor's reads of a protected folio
 * are hidden from it. */
#if defined(__SANITIZE_THREAD__)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define tsan_ignore_reads_begin() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define tsan_ignore_reads_end()   AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define tsan_ignore_reads_begin() do { } while (0)
#define tsan_ignore_reads_end()   do { } while (0)
#endif

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline char *folio_addr(const struct pager_region *r, size_t idx)
{
	return r->base + idx * r->p->folio_bytes;
}

/* ------------------------------------------------------------------------
 * uffd.c: the userfaultfd system interface (returns 0 or -errno)
 * ---------------------------------------------------------------------- */
struct uffd_info {
	bool user_mode_only;  /* opened with UFFD_USER_MODE_ONLY */
	bool poison;          /* UFFDIO_POISON usable */
	bool move;            /* UFFDIO_MOVE offered */
	bool thread_id;       /* messages say the faulting thread */
};

int uffd_open(unsigned int pager_flags, struct uffd_info *info);
int uffd_register(int fd, void *addr, size_t len);
int uffd_unregister(int fd, void *addr, size_t len);
int uffd_copy(int fd, void *dst, const void *src, size_t len, bool wp);
int uffd_move(int fd, void *dst, void *src, size_t len, size_t *moved);
int uffd_zeropage(int fd, void *dst, size_t len, bool wake);
int uffd_writeprotect(int fd, void *addr, size_t len, bool protect);
int uffd_wake(int fd, void *addr, size_t len);
int uffd_poison(int fd, void *addr, size_t len);

/* ------------------------------------------------------------------------
 * region.c
 * ---------------------------------------------------------------------- */
/* The region holding @addr, or NULL. Context: p->lock read-held. */
struct pager_region *region_find(struct uswap_pager *p, uintptr_t addr);
/* Folios below @end may leave NONE: raise r->used to @end. Call before
 * the state word of such a folio is published. Context: any. */
static inline void region_note_used(struct pager_region *r, size_t end)
{
	size_t cur = atomic_load_explicit(&r->used, memory_order_relaxed);

	while (cur < end && !atomic_compare_exchange_weak_explicit(&r->used, &cur, end,
								   memory_order_release,
								   memory_order_relaxed))
		;
}
/* The folios a scan of @r must look at: [0, region_used(r)). */
static inline size_t region_used(struct pager_region *r)
{
	return atomic_load_explicit(&r->used, memory_order_acquire);
}
/* Destroy every region (pager teardown). */
void region_destroy_all(struct uswap_pager *p);

/* ------------------------------------------------------------------------
 * fault.c: one message from the userfaultfd. Context: p->lock read-held.
 * ---------------------------------------------------------------------- */
void fault_handle(struct uswap_pager *p, struct pager_handler *h,
		  uintptr_t addr, uint64_t flags, uint64_t t0_ns);
/* Wait (yield) until the folio is not busy; returns its state word. */
uint32_t folio_wait_idle(_Atomic uint32_t *state);
/* Map a lost folio as poison and record the error. The folio is owned
 * (busy), uncharged and has no slots; leaves it POISONED, or RESIDENT
 * holding the poison fill without UFFDIO_POISON. */
void folio_poison(struct uswap_pager *p, struct pager_region *r, size_t idx,
		  void *buf, int err);

/* ------------------------------------------------------------------------
 * workingset.c: the refault distance. Context: the folio's owner.
 * ---------------------------------------------------------------------- */
/* A folio leaves memory (written, dropped clean, or all zeros): stamp its
 * shadow with the eviction clock. */
void workingset_evicted(struct uswap_pager *p, struct pager_region *r, size_t idx);
/* The faulting folio comes back (swap-in or zeros after an eviction):
 * the laps its new rank gives it, as PF_ACT bits for its state word. */
uint32_t workingset_refault(struct uswap_pager *p, struct pager_region *r, size_t idx);
/* The program let the folio go (discard): no shadow, no rank. */
void workingset_forget(struct pager_region *r, size_t idx);
/* The hand starts a new lap. Context: hand_lock held. */
void workingset_lap(struct uswap_pager *p);
/* Protected folios are at most this share of the limit. */
#define WS_PROTECT_NUM 3
#define WS_PROTECT_DEN 4

/* ------------------------------------------------------------------------
 * reclaim.c: the limit, the clock, eviction
 * ---------------------------------------------------------------------- */
/* Charge @nr pages before mapping them, reclaiming first when the limit
 * would be passed. Return: whether it had to reclaim. Context: p->lock
 * read-held; the caller owns a busy folio (which reclaim skips). */
bool pager_charge(struct uswap_pager *p, unsigned int nr);
void pager_uncharge(struct uswap_pager *p, unsigned int nr);
/* Charge @nr pages that are mapped already (an adopted region), over the
 * limit if need be, and wake background reclaim to bring it back down.
 * Context: any; takes no pager lock but kswapd's. */
void pager_charge_mapped(struct uswap_pager *p, uint64_t nr);
/* Evict about @want pages. Return: pages uncharged, 0 (nothing could be
 * picked now), or -ENOSPC/-EIO (swap-out failed: the swap is full or
 * broken). Context: p->lock read-held. */
long pager_reclaim(struct uswap_pager *p, uint64_t want);
/* Start / stop the background reclaim thread (if p->kswapd_on). */
int kswapd_start(struct uswap_pager *p);
void kswapd_stop(struct uswap_pager *p);

/* A folio's slots were freed: may end a swap-full pause. */
void reclaim_note_freed(struct uswap_pager *p);

/* ------------------------------------------------------------------------
 * folio_swap.c: a folio's slots, and the swap path for folios
 * ---------------------------------------------------------------------- */
/* Write 2^order pages at @src out as the folio's slots (split into
 * order-0 slots after -E2BIG). Stores slot[] and the rmap; *@whole says
 * how. Return: 0, or the swap-out error (nothing stored then).
 * Context: the caller owns the folio (busy). */
int folio_swap_out(struct uswap_pager *p, struct pager_region *r, size_t idx,
		   const void *src, bool *whole);
/* After a swap-out of the whole folio (uswap_swap_out_batch()) answered
 * @err with entry @e: record the slots, or split on -E2BIG. Return: 0
 * with *@whole, or the error (nothing recorded). Context: as above. */
int folio_swapped_out(struct uswap_pager *p, struct pager_region *r, size_t idx,
		      const void *src, int err, uswap_entry_t e, bool *whole);
/* Read the folio's slots into @buf. Return: 1 (all from the swap cache),
 * 0, or -EIO/-ENOENT. Context: the caller owns the folio. */
int folio_swap_in(struct uswap_pager *p, struct pager_region *r, size_t idx,
		  bool whole, void *buf);
/* folio_swap_in() of a folio known by its slots (@slot: p->nr entries'
 * values; one aligned run when @whole), which no region holds. */
int slots_swap_in(struct uswap_pager *p, const uint64_t *slot, bool whole, void *buf);
/* folio_swap_in() of the @n (<= 1 + PAGER_MAX_RA_FOLIOS) consecutive
 * folios from @idx into @buf, in one batch (uswap_swap_in_batch());
 * @whole[i] says how folio idx + i holds its slots, @rc[i] gets its
 * answer. Context: the caller owns every one of the folios. */
void folios_swap_in(struct uswap_pager *p, struct pager_region *r, size_t idx,
		    unsigned int n, const bool *whole, char *buf, int *rc);
/* Free the folio's slots (no-op if it has none) and clear slot[].
 * Context: the caller owns the folio, or the region is unreachable. */
void folio_free_slots(struct uswap_pager *p, struct pager_region *r, size_t idx,
		      bool whole);

/* ------------------------------------------------------------------------
 * hold.c, discard.c, mapping.c: folios taken whatever they are doing
 * ---------------------------------------------------------------------- */
/* Bring one SWAPPED folio this thread owns (MOVING, state word @s) in and
 * publish it RESIDENT; a read error poisons it as a fault would. @force
 * charges it over the limit without reclaiming (kswapd makes room).
 * Return: 0 or the read error. Context: p->unuse_lock held. */
int folio_load(struct uswap_pager *p, struct pager_region *r, size_t idx, uint32_t s,
	       bool force);
/* Bring the SWAPPED folios [@first, @last) of @r in (folio_load()),
 * waiting for busy ones first. Return: folios lost to read errors.
 * Context: p->lock read-held. */
long region_load_range(struct uswap_pager *p, struct pager_region *r, size_t first,
		       size_t last, bool force);
/* Own folio @state whatever its state (DROPPING); return the state word
 * it had. */
uint32_t folio_claim_any(_Atomic uint32_t *state);
/* mlock folios [@first, @last) of @r and bring the swapped ones in; the
 * charge of the resident ones leaves the limit. Return: folios lost to
 * read errors. Context: p->lock read-held. */
long region_lock_range(struct uswap_pager *p, struct pager_region *r, size_t first,
		       size_t last);
/* Folio @idx of @r, claimed and leaving its mapping (discard, MAP_FIXED,
 * munmap) or the pager: whether its charge was held apart (and so must
 * not be uncharged); it stays locked if @keep_lock. */
bool folio_lock_drop_apart(struct uswap_pager *p, struct pager_region *r, size_t idx,
			   bool keep_lock);

/* ------------------------------------------------------------------------
 * group.c: charge groups shared between processes
 * ---------------------------------------------------------------------- */
/* @mem as an initialised group, or NULL. */
struct pager_group *group_check(void *mem);
/* A member slot for this process (taking over its slot from before an
 * exec), or NULL when none is free. */
struct pager_group_member *group_join(struct pager_group *g);
void group_leave(struct pager_group *g, struct pager_group_member *m);
bool group_try_charge(struct pager_group *g, struct pager_group_member *m, unsigned int nr);
void group_force_charge(struct pager_group *g, struct pager_group_member *m, uint64_t nr,
			bool over);
void group_uncharge(struct pager_group *g, struct pager_group_member *m, uint64_t nr);
uint64_t group_free_pages(struct pager_group *g);
void group_raise_pressure(struct pager_group *g);
/* Does @m hold less than an equal share of the group's charge? */
bool group_below_share(struct pager_group *g, struct pager_group_member *m);
uint32_t group_pressure_seq(struct pager_group *g);

/* ------------------------------------------------------------------------
 * stage.c: where move-out eviction puts folios while they are written
 * ---------------------------------------------------------------------- */
/* Map and register the area (no-op without UFFDIO_MOVE or with
 * USWAP_PAGER_NO_MOVE). Return: 0, -ENOMEM or the register error. */
int stage_init(struct uswap_pager *p);
void stage_fini(struct uswap_pager *p);
/* A slot of p->stage_slot_bytes for one reclaim pass (waits for one if
 * all are held); stage_put() zaps its first @used bytes and frees it. */
char *stage_get(struct uswap_pager *p, unsigned int *slot);
void stage_put(struct uswap_pager *p, unsigned int slot, size_t used);
/* Move [@src, @src + @len) of a region to @dst in the stage, unsharing a
 * page shared with a fork() child once on the way. Return: bytes moved;
 * *@errp the error of the page at @src + return value when short (-EBUSY
 * after the retry: pinned). Context: the caller owns the folios. */
long stage_move_out(struct uswap_pager *p, char *dst, char *src, size_t len, int *errp);
/* Move @len staged bytes at @src back to the region at @dst (a copy if
 * the move fails). Return: 0 or the error (the data is lost then). */
int stage_move_back(struct uswap_pager *p, char *dst, char *src, size_t len);

/* ------------------------------------------------------------------------
 * target.c: region memory, this process's or a target's
 * ---------------------------------------------------------------------- */
/* Take @t (pager_create): dup its descriptor, open its pagemap. Return: 0,
 * -EINVAL (incomplete), -ESRCH (gone) or another -errno. */
int target_open(struct uswap_pager *p, const struct uswap_pager_target *t);
void target_close(struct uswap_pager *p);
/* Copy @len bytes of region memory at @src to @dst / from @src to region
 * memory at @addr. Return: 0 or -errno (-EFAULT: short). Context: a page
 * there that is not mapped faults, so either the range is mapped or no
 * pager lock is held. */
int mm_read(struct uswap_pager *p, void *dst, const void *src, size_t len);
int mm_write(struct uswap_pager *p, void *addr, const void *src, size_t len);
/* Zero @len (at most a folio) bytes at @addr of region memory. Return: 0
 * or -errno. Context: no pager lock held (it may fault). */
int mm_zero(struct uswap_pager *p, void *addr, size_t len);
/* Unmap the @n ranges @r (one request to a target). Return: 0 or -errno;
 * a target that is gone is 0. */
int mm_zap(struct uswap_pager *p, const struct iovec *r, unsigned int n);
/* mincore()'s answer for [@addr, @addr + @len): vec[i] & 1 when page i is
 * mapped (or, for a target, swapped out by the kernel). Return: 0 or
 * -errno (-ESRCH: the target is gone). */
int mm_present(struct uswap_pager *p, void *addr, size_t len, unsigned char *vec);
/* The runs of pages in [@addr, @addr + @len) that are mapped or swapped
 * out by the kernel, in address order, from one PAGEMAP_SCAN (Linux 6.7)
 * per @max runs: up to @max of them in @runs (iov_base, iov_len), and
 * *@next where the next call starts (@addr + @len when done). For a
 * region whose pages are few beside its size (a heap reserved at 8 GiB),
 * where mincore() would look at every page. Return: the runs found, or
 * -errno: -ENOTTY (or -EINVAL) where the kernel has no PAGEMAP_SCAN,
 * -ESRCH for a target that is gone. */
long mm_populated(struct uswap_pager *p, void *addr, size_t len, struct iovec *runs,
		  unsigned int max, char **next);

/* ------------------------------------------------------------------------
 * fork.c: the folios a fork child touched before its pager existed
 * ---------------------------------------------------------------------- */
/* @p's folio at @addr, mapped whole (adopted), is swapped out in the
 * parent's record with contents @was: every byte the child has not
 * written (zero: the pages read then are the zero page's, those mapped at
 * adoption zeros) becomes @was's; @now is a folio of scratch. Return: 0,
 * 1 if a page had been written (kept over @was), or -errno. Context:
 * p->lock write-held (the folio stays mapped), @p held (not evicted). */
int folio_fold(struct uswap_pager *p, char *addr, const char *was, char *now);

/* A folio's contents, hashed (XXH3, 64 bits): a clean folio's at swap-in
 * against its contents at eviction. */
uint64_t folio_hash(const struct uswap_pager *p, const void *data);

/* share.c: @n folios from @addr were just swapped in; during a fork's
 * window they are marked in its record. Context: p->lock read-held. */
void share_note_swapin(struct uswap_pager *p, const char *addr, unsigned int n);

/* /proc/PID/pagemap bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT        (1ull << 63)
#define PM_MMAP_EXCLUSIVE (1ull << 56)

/* ------------------------------------------------------------------------
 * unuse.c: swapoff of a device under live regions
 * ---------------------------------------------------------------------- */
int pager_unuse(void *ctx, uswap_entry_t entry);
void rmap_set(struct uswap_pager *p, uint64_t entry_val, uint64_t owner);
void rmap_clear(struct uswap_pager *p, uint64_t entry_val);
void rmap_free(struct uswap_pager *p);

/* ------------------------------------------------------------------------
 * pager.c
 * ---------------------------------------------------------------------- */
uint64_t pager_now_ns(void);
void pager_record_latency(struct pager_handler *h, uint64_t ns);

#endif /* USWAP_PAGER_PAGER_INTERNAL_H */
