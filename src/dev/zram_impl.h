/* SPDX-License-Identifier: MIT */
/*
 * zram_impl.h - the zram backend's insides, shared by zram.c (the device)
 * and zram_wb.c (writeback to a lower device). Nothing outside src/dev/
 * includes it.
 */
#ifndef USWAP_DEV_ZRAM_IMPL_H
#define USWAP_DEV_ZRAM_IMPL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <lz4.h>
#include <zstd.h>

#include "dev/dev_internal.h"
#include "dev/zpool.h"
#include "dev/zram.h"

/* Slot flags; all but ZRAM_LOCK change only while ZRAM_LOCK is held. */
enum zram_slot_flag {
	ZRAM_LOCK = 1u << 0, /* the slot's lock */
	ZRAM_SAME = 1u << 1, /* element holds the repeated word; no object */
	ZRAM_HUGE = 1u << 2, /* the object is the page stored raw */
	ZRAM_WB = 1u << 3,   /* written back: the data is in the lower
				device's slot of the same index; no object */
	ZRAM_UNDER_WB = 1u << 4, /* being written back; any change to the
				    slot clears it, cancelling the move */
};

struct zram_slot {
	union {
		void *handle;        /* the object (zpool), or NULL */
		uint64_t element;    /* ZRAM_SAME: the repeated 8-byte word */
	};
	uint32_t size;               /* object bytes; 0 when no object */
	_Atomic uint32_t flags;      /* enum zram_slot_flag */
};
_Static_assert(sizeof(struct zram_slot) == 16, "zram slot metadata is 16 bytes");

/* A page's new contents, prepared before the slot lock is taken. */
struct zram_entry {
	void *handle;
	uint64_t element;
	uint32_t size;
	uint32_t flags;              /* ZRAM_SAME / ZRAM_HUGE / 0 */
};

/* One set of zstd contexts; pooled so each is used by one thread at a
 * time (ZSTD_CCtx/DCtx are not thread-safe) and reused across calls. */
struct zstd_ctx {
	struct zstd_ctx *next;       /* pool list; pool_lock */
	ZSTD_CCtx *cctx;             /* made on first compression */
	ZSTD_DCtx *dctx;             /* made on first decompression */
};

struct zram_backend;

struct zram_algo_ops {
	const char *name;
	/* Compress one page into @dst (@cap >= the algorithm's bound).
	 * Return: length > 0, or -ENOMEM/-EIO. */
	int (*compress)(struct zram_backend *zb, const void *src, void *dst, size_t cap);
	/* Decompress @len bytes into one page. Return: 0, -EIO (the object
	 * does not decode to exactly one page), -ENOMEM. */
	int (*decompress)(struct zram_backend *zb, const void *src, size_t len, void *dst);
};

struct zram_backend {
	struct backend b;            /* first */
	const struct zram_algo_ops *algo;
	struct zram_slot *slots;     /* nr_slots entries; calloc */
	int id;                      /* N of the name "zramN" (zram.c) */

	struct zpool *objs;          /* the compressed and huge objects */
	pthread_mutex_t pool_lock;   /* protects pool */
	struct zstd_ctx *pool;       /* idle zstd contexts */

	/* mm_stat; atomics, updated per page outside the slot locks */
	_Atomic uint64_t pages_stored;
	_Atomic uint64_t compr_data_size;
	_Atomic uint64_t mem_used;
	uint64_t mem_limit;          /* bytes, 0: none; set before any I/O */
	_Atomic uint64_t mem_used_max;
	_Atomic uint64_t same_pages;
	_Atomic uint64_t huge_pages;
	_Atomic uint64_t huge_pages_since;
	/* io_stat */
	_Atomic uint64_t num_reads;
	_Atomic uint64_t num_writes;
	_Atomic uint64_t failed_reads;
	_Atomic uint64_t failed_writes;
	_Atomic uint64_t notify_free;
	struct zram_wb *wb;          /* writeback (zram_wb.c), or NULL */
	struct zram_workers *workers; /* zram_workers.c, or NULL */
};

static inline struct zram_backend *to_zram(struct backend *b)
{
	return (struct zram_backend *)b;
}

/* zram_workers.c: the async ops, and the workers behind them. */
int zram_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n);
int zram_reap(struct backend *b, unsigned int min_complete);
void zram_workers_stop(struct zram_backend *zb);

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ------------------------------------------------------------------ */
/* Slot lock (zram_slot_lock(): a bit in the slot's flags) */

/* Take @s's lock; returns the slot's flags (without ZRAM_LOCK). Spins
 * briefly, then yields: the holder may be preempted on a small machine. */
static inline uint32_t slot_lock(struct zram_slot *s)
{
	unsigned int spins = 0;

	for (;;) {
		uint32_t f = atomic_fetch_or_explicit(&s->flags, ZRAM_LOCK,
						      memory_order_acquire);
		if (!(f & ZRAM_LOCK))
			return f;
		while (atomic_load_explicit(&s->flags, memory_order_relaxed) & ZRAM_LOCK) {
			if (++spins < 128)
				cpu_relax();
			else
				sched_yield();
		}
	}
}

/* Release @s's lock, publishing @flags as the slot's new flags. */
static inline void slot_unlock(struct zram_slot *s, uint32_t flags)
{
	atomic_store_explicit(&s->flags, flags & ~(uint32_t)ZRAM_LOCK,
			      memory_order_release);
}

/* ------------------------------------------------------------------ */
/* Statistics */

static inline void stat_add64(_Atomic uint64_t *v, uint64_t n)
{
	atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

static inline void stat_sub64(_Atomic uint64_t *v, uint64_t n)
{
	atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

/* zram.c */
void zram_account(struct zram_backend *zb, const struct zram_entry *e, int sign);

/* zram_wb.c. Context of touch/read/forget: as their callers in zram.c. */
struct zram_wb;
void zram_wb_touch(struct zram_backend *zb, uint64_t index);
int zram_wb_read(struct zram_backend *zb, uint64_t index, unsigned char *dst);
void zram_wb_forget(struct zram_backend *zb);
void zram_wb_stop(struct zram_backend *zb);

#endif /* USWAP_DEV_ZRAM_IMPL_H */
