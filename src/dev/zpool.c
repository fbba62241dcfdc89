// SPDX-License-Identifier: MIT
/*
 * zpool.c - size-class object pool for zram (zpool.h says why).
 *
 * Layout: a chunk is 2 MiB of small pages (chunk_map() says why not a
 * huge page), aligned to its size; it is cut into 32 blocks of 64 KiB. A
 * block serves one size class: a 64-byte header, then objects of the
 * class size, carved on first use (bump) and recycled through a free list
 * threaded through the freed objects' first word. The block of an object
 * is found by masking its address, so an object needs no header of its
 * own (zsmalloc's handle-free path, simplified: no compaction, so a block
 * with one live object keeps its 64 KiB; the 32-byte class steps bound
 * the waste inside objects to 31 bytes).
 *
 * Heaps: one set of classes per CPU (modulo 8), see this_heap().
 *
 * Locks: one mutex per class of a heap (its partial list and its blocks'
 * free lists); the pool mutex (chunks, idle blocks) is taken only when a class
 * needs a block or gives one back, so it is never held with a class lock.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <uswap/uswap.h>

#include "dev/zpool.h"
#include "util/compiler.h"

#define ZPOOL_BLOCK      (64u << 10)
#define ZPOOL_CHUNK      (2u << 20)
#define BLOCKS_PER_CHUNK (ZPOOL_CHUNK / ZPOOL_BLOCK)
#define BLOCK_HDR        64u
#define NR_CLASSES       (USWAP_PAGE_SIZE / ZPOOL_STEP)
#define NR_HEAPS         8u /* class sets, one per CPU (modulo) */
#define TRIM_BATCH       (2 * BLOCKS_PER_CHUNK) /* blocks given back at once */

struct zblock {
	struct zblock *prev, *next; /* class partial list; idle list (next) */
	void *free;                 /* freed objects, linked by first word */
	uint32_t bump;              /* offset of the next never-used object */
	uint16_t inuse;             /* objects handed out */
	uint8_t cls;                /* class index */
	uint8_t heap;               /* heap index */
};
_Static_assert(NR_CLASSES <= 256 && NR_HEAPS <= 256, "indices fit a byte");
_Static_assert(sizeof(struct zblock) <= BLOCK_HDR, "block header fits");
_Static_assert((ZPOOL_BLOCK - BLOCK_HDR) / USWAP_PAGE_SIZE >= 2,
	       "a block holds at least two objects of the largest class");

struct zclass {
	pthread_mutex_t lock;       /* this struct, its blocks but idle ones */
	struct zblock *partial;     /* blocks with room: free objects or bump */
	uint32_t size;              /* object bytes */
	uint32_t cap;               /* objects per block */
} __cacheline_aligned;

struct zpool {
	struct zclass cls[NR_HEAPS][NR_CLASSES];
	pthread_mutex_t lock;       /* everything below */
	struct zblock *idle;        /* emptied blocks, memory still there */
	size_t nr_idle;
	struct zblock *cold;        /* emptied blocks given back (MADV_FREE) */
	size_t nr_cold;
	size_t blocks_used;
	void **chunks;
	size_t nr_chunks, cap_chunks;
	size_t fresh;               /* blocks of the newest chunk not yet used */
};

/* ------------------------------------------------------------------ */
/* Chunks and blocks (pool lock) */

/* Map one chunk aligned to its size. Return: NULL on failure. */
static void *chunk_map(void)
{
	size_t span = 2 * (size_t)ZPOOL_CHUNK;
	char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *mem;
	size_t head;

	if (raw == MAP_FAILED)
		return NULL;
	mem = (char *)(((uintptr_t)raw + ZPOOL_CHUNK - 1) & ~(uintptr_t)(ZPOOL_CHUNK - 1));
	head = (size_t)(mem - raw);
	if (head)
		munmap(raw, head);
	munmap(mem + ZPOOL_CHUNK, span - head - ZPOOL_CHUNK);
	/* Small pages, even where THP is "always": a huge page is a fresh
	 * 2 MiB the kernel must find (compacting, with defrag "madvise") and
	 * clear on the first touch, while small pages come from those the
	 * pager has just given back by unmapping evicted folios. Measured in
	 * docs/benchmarks.md ("zram's pool without huge pages"): usemem
	 * 4 x 1 GiB at 64 KiB folios spent 29 % of its samples in that first
	 * touch; small pages made it 1.3x faster. A failure changes nothing
	 * else. */
	(void)madvise(mem, ZPOOL_CHUNK, MADV_NOHUGEPAGE);
	return mem;
}

static bool chunk_add(struct zpool *zp)
{
	void *mem;

	if (zp->nr_chunks == zp->cap_chunks) {
		size_t cap = zp->cap_chunks ? 2 * zp->cap_chunks : 16;
		void **c = realloc(zp->chunks, cap * sizeof(*c));

		if (!c)
			return false;
		zp->chunks = c;
		zp->cap_chunks = cap;
	}
	mem = chunk_map();
	if (!mem)
		return false;
	zp->chunks[zp->nr_chunks++] = mem;
	zp->fresh = BLOCKS_PER_CHUNK;
	return true;
}

/* An empty block for class @cls of heap @heap. Return: NULL when out of
 * memory. */
static struct zblock *block_get(struct zpool *zp, unsigned int heap, unsigned int cls)
{
	struct zblock *b = NULL;

	pthread_mutex_lock(&zp->lock);
	if (zp->idle) {
		b = zp->idle;
		zp->idle = b->next;
		zp->nr_idle--;
	} else if (zp->cold) {
		b = zp->cold;
		zp->cold = b->next;
		zp->nr_cold--;
	} else if (zp->fresh || chunk_add(zp)) {
		char *chunk = zp->chunks[zp->nr_chunks - 1];

		b = (struct zblock *)(chunk + (size_t)(BLOCKS_PER_CHUNK - zp->fresh) * ZPOOL_BLOCK);
		zp->fresh--;
	}
	if (b)
		zp->blocks_used++;
	pthread_mutex_unlock(&zp->lock);
	if (b) {
		memset(b, 0, sizeof(*b));
		b->bump = BLOCK_HDR;
		b->cls = (uint8_t)cls;
		b->heap = (uint8_t)heap;
	}
	return b;
}

static int addr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

/*
 * trim() - give the memory of @n idle blocks back to the kernel, one
 * madvise() per run of adjacent blocks (blocks empty in about the order
 * they were filled, so a mass free gives whole chunks: one call, no
 * huge page split, instead of 32), then file them as cold.
 * Context: the blocks are on no list, so no lock is needed for them.
 */
static void trim(struct zpool *zp, struct zblock **v, size_t n)
{
	qsort(v, n, sizeof(*v), addr_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && (char *)v[j] == (char *)v[j - 1] + ZPOOL_BLOCK)
			j++;
		(void)madvise(v[i], (j - i) * (size_t)ZPOOL_BLOCK, MADV_FREE);
		i = j;
	}
	pthread_mutex_lock(&zp->lock);
	for (size_t i = 0; i < n; i++) {
		v[i]->next = zp->cold;
		zp->cold = v[i];
	}
	zp->nr_cold += n;
	pthread_mutex_unlock(&zp->lock);
}

/* Keep an emptied block for reuse. Idle blocks past a quarter of those in
 * use (and past one chunk's worth) are trimmed TRIM_BATCH at a time. */
static void block_put(struct zpool *zp, struct zblock *b)
{
	struct zblock *v[TRIM_BATCH];
	size_t keep, n = 0;

	pthread_mutex_lock(&zp->lock);
	b->next = zp->idle;
	zp->idle = b;
	zp->nr_idle++;
	zp->blocks_used--;
	keep = zp->blocks_used / 4 > BLOCKS_PER_CHUNK ? zp->blocks_used / 4 : BLOCKS_PER_CHUNK;
	if (zp->nr_idle >= keep + TRIM_BATCH) {
		for (; n < TRIM_BATCH; n++) {
			v[n] = zp->idle;
			zp->idle = v[n]->next;
		}
		zp->nr_idle -= n;
	}
	pthread_mutex_unlock(&zp->lock);
	if (n)
		trim(zp, v, n);
}

/* ------------------------------------------------------------------ */
/* Classes (class lock) */

static void partial_add(struct zclass *c, struct zblock *b)
{
	b->prev = NULL;
	b->next = c->partial;
	if (c->partial)
		c->partial->prev = b;
	c->partial = b;
}

static void partial_del(struct zclass *c, struct zblock *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		c->partial = b->next;
	if (b->next)
		b->next->prev = b->prev;
}

static void *block_take(struct zblock *b, uint32_t size)
{
	void *obj = b->free;

	if (obj) {
		memcpy(&b->free, obj, sizeof(b->free));
	} else {
		obj = (char *)b + b->bump;
		b->bump += size;
	}
	b->inuse++;
	return obj;
}

/* Each CPU allocates from its own heap: objects a thread writes are read
 * back by it with no cache line to fetch from another core, and two CPUs
 * swapping out do not share class locks. A free goes back to the
 * object's own heap, from any CPU. */
static unsigned int this_heap(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : (unsigned int)cpu % NR_HEAPS;
}

void *zpool_alloc(struct zpool *zp, size_t size)
{
	unsigned int heap;
	struct zclass *c;
	struct zblock *b;
	void *obj;

	if (size == 0 || size > USWAP_PAGE_SIZE)
		return NULL;
	heap = this_heap();
	c = &zp->cls[heap][(size - 1) / ZPOOL_STEP];
	pthread_mutex_lock(&c->lock);
	b = c->partial;
	if (!b) {
		pthread_mutex_unlock(&c->lock);
		b = block_get(zp, heap, (unsigned int)(c - zp->cls[heap]));
		if (!b)
			return NULL;
		pthread_mutex_lock(&c->lock);
		partial_add(c, b);
	}
	obj = block_take(b, c->size);
	if (b->inuse == c->cap)
		partial_del(c, b);
	pthread_mutex_unlock(&c->lock);
	return obj;
}

void zpool_free(struct zpool *zp, void *obj, size_t size)
{
	struct zblock *b;
	struct zclass *c;
	bool was_full;

	(void)size; /* the block knows its class; kept for symmetry/checks */
	if (!obj)
		return;
	b = (struct zblock *)((uintptr_t)obj & ~(uintptr_t)(ZPOOL_BLOCK - 1));
	c = &zp->cls[b->heap][b->cls];
	uswap_assert_internal(c->size == zpool_class_size(size));
	pthread_mutex_lock(&c->lock);
	was_full = b->inuse == c->cap;
	memcpy(obj, &b->free, sizeof(b->free));
	b->free = obj;
	b->inuse--;
	if (b->inuse == 0) {
		if (!was_full)
			partial_del(c, b);
		pthread_mutex_unlock(&c->lock);
		block_put(zp, b);
		return;
	}
	if (was_full)
		partial_add(c, b);
	pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------------ */

struct zpool *zpool_create(void)
{
	struct zpool *zp = calloc(1, sizeof(*zp));

	if (!zp)
		return NULL;
	pthread_mutex_init(&zp->lock, NULL);
	for (unsigned int h = 0; h < NR_HEAPS; h++)
		for (unsigned int i = 0; i < NR_CLASSES; i++) {
			struct zclass *c = &zp->cls[h][i];

			pthread_mutex_init(&c->lock, NULL);
			c->size = (i + 1) * ZPOOL_STEP;
			c->cap = (ZPOOL_BLOCK - BLOCK_HDR) / c->size;
		}
	return zp;
}

void zpool_destroy(struct zpool *zp)
{
	if (!zp)
		return;
	for (size_t i = 0; i < zp->nr_chunks; i++)
		munmap(zp->chunks[i], ZPOOL_CHUNK);
	for (unsigned int h = 0; h < NR_HEAPS; h++)
		for (unsigned int i = 0; i < NR_CLASSES; i++)
			pthread_mutex_destroy(&zp->cls[h][i].lock);
	pthread_mutex_destroy(&zp->lock);
	free(zp->chunks);
	free(zp);
}

void zpool_stats(struct zpool *zp, struct zpool_stats *st)
{
	pthread_mutex_lock(&zp->lock);
	st->mapped = (uint64_t)zp->nr_chunks * ZPOOL_CHUNK;
	st->blocks_used = (uint64_t)zp->blocks_used * ZPOOL_BLOCK;
	st->blocks_idle = (uint64_t)zp->nr_idle * ZPOOL_BLOCK;
	st->blocks_cold = (uint64_t)zp->nr_cold * ZPOOL_BLOCK;
	pthread_mutex_unlock(&zp->lock);
}
