/* SPDX-License-Identifier: MIT */
/*
 * zpool.h - the object pool zram keeps its compressed pages in (the role
 * of the kernel's zsmalloc).
 *
 * Objects of 1..USWAP_PAGE_SIZE bytes are rounded up to a size class (32
 * byte steps) and carved from 64 KiB blocks of that class; blocks come
 * from 2 MiB chunks mapped with MADV_HUGEPAGE. Why not malloc: a swap-out
 * storm allocates millions of objects of a few hundred bytes to a page;
 * glibc grows a thread arena for them a page at a time (mprotect and a
 * page fault per 4 KiB of fresh heap) and trims it back when they are
 * freed, so the same memory is faulted in again on the next storm. The
 * pool takes memory 2 MiB at a time (one huge-page fault where THP is
 * available) and keeps emptied blocks for reuse, giving back only what
 * exceeds a quarter of the blocks in use, 64 blocks at a time in runs of
 * adjacent blocks (MADV_FREE: free for the kernel to take, no fault when
 * reused before it does).
 */
#ifndef USWAP_DEV_ZPOOL_H
#define USWAP_DEV_ZPOOL_H

#include <stddef.h>
#include <stdint.h>

#define ZPOOL_STEP 32u /* size-class granularity, bytes */

struct zpool;

/* Figures of one pool, in bytes; moving snapshots while others run. */
struct zpool_stats {
	uint64_t mapped;      /* chunks mapped from the kernel */
	uint64_t blocks_used; /* blocks holding a class's objects */
	uint64_t blocks_idle; /* emptied blocks kept for reuse */
	uint64_t blocks_cold; /* emptied blocks whose memory was given back */
};

/* zpool_create() - an empty pool. Return: NULL when out of memory. */
struct zpool *zpool_create(void);

/* zpool_destroy() - unmap every chunk; every object becomes invalid.
 * NULL is a no-op. Context: no other thread may use @zp. */
void zpool_destroy(struct zpool *zp);

/*
 * zpool_alloc() - an object of @size bytes (1..USWAP_PAGE_SIZE), 8-byte
 * aligned, holding zpool_class_size(@size) usable bytes.
 * Return: the object, or NULL (size out of range, or no memory).
 * Thread-safety: any thread; one mutex per size class of each CPU's heap.
 */
void *zpool_alloc(struct zpool *zp, size_t size);

/* zpool_free() - give back @obj, allocated with the same @size. NULL is a
 * no-op. Thread-safety: any thread. */
void zpool_free(struct zpool *zp, void *obj, size_t size);

/* The bytes an object of @size really takes (its class size). */
static inline size_t zpool_class_size(size_t size)
{
	return (size + ZPOOL_STEP - 1) / ZPOOL_STEP * ZPOOL_STEP;
}

/* zpool_stats() - fill @st. Thread-safety: any thread. */
void zpool_stats(struct zpool *zp, struct zpool_stats *st);

#endif /* USWAP_DEV_ZPOOL_H */
