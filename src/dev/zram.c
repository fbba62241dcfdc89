// SPDX-License-Identifier: MIT
/*
 * zram.c - the "zram" backend: compressed memory, as the kernel's zram
 * block device stores swap pages.
 *
 * Every page (slot) is stored on its own, as zram does per 4 KiB page: an
 * order-k folio is 2^k independent pages. A page is kept in one of three
 * forms, chosen at write time:
 *   - same-filled: every 8-byte word of the page is equal (zero pages are
 *     the common case); only that word is kept, no memory is allocated
 *     (zram's ZRAM_SAME, counted in same_pages);
 *   - compressed with the device's algorithm (lz4 by default, or zstd),
 *     in an object of the pool (zpool.c: 32-byte size classes in 64 KiB
 *     blocks, as zsmalloc keeps zram's objects);
 *   - huge: the compressed length would be ZRAM_HUGE_THRESHOLD bytes or
 *     more, so the page is kept raw in a page-sized object (zram's
 *     ZRAM_HUGE, when the length reaches zsmalloc's huge_class_size).
 * A slot never written, or discarded, holds nothing and reads as zeroes.
 * Overwriting a slot and discarding it free the old object at once
 * (zram_slot_free() on write and on REQ_OP_DISCARD).
 *
 * The size is the disksize, rounded up to whole pages as zram does: slots
 * past it are refused (-EINVAL). Memory is not capped by the disksize;
 * mem_limit caps it (zram_set_mem_limit(), 0 = none, the default).
 *
 * Per-slot metadata is 16 bytes: the object pointer (or the same-filled
 * word), its length and a flags word whose bit 0 is the slot's lock (as
 * zram's ZRAM_LOCK bit), so different slots proceed in parallel and the
 * only shared state is the statistics (atomics) and the zstd context pool.
 * Compression runs before the slot lock is taken; decompression runs
 * under it, because the object may otherwise be freed by a concurrent
 * discard of the same slot.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lz4.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "dev/dev_internal.h"
#include "dev/zpool.h"
#include "dev/zram.h"
#include "dev/zram_impl.h"
#include "util/compiler.h"

/* Big enough for either algorithm's worst case on one page. */
#define ZRAM_BOUND (LZ4_COMPRESSBOUND(USWAP_PAGE_SIZE) > ZSTD_COMPRESSBOUND(USWAP_PAGE_SIZE) ? \
		    LZ4_COMPRESSBOUND(USWAP_PAGE_SIZE) : ZSTD_COMPRESSBOUND(USWAP_PAGE_SIZE))

/*
 * Device numbers: a new device takes the lowest number no open device of
 * this process has, as the kernel's zram_add() takes the lowest free
 * index, so a program that opens its devices after a throwaway check
 * (uswap run's) still names them zram0, zram1, ...
 */
#define ZRAM_MAX_IDS 1024

static pthread_mutex_t zram_ids_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t zram_ids[ZRAM_MAX_IDS / 64]; /* bit set: number in use */
static const struct backend_ops zram_ops;


/* Return: the lowest free number, or -EMFILE when ZRAM_MAX_IDS are open. */
static int zram_id_get(void)
{
	int id = -EMFILE;

	pthread_mutex_lock(&zram_ids_lock);
	for (unsigned int w = 0; w < ARRAY_SIZE(zram_ids) && id < 0; w++)
		if (~zram_ids[w]) {
			unsigned int bit = (unsigned int)__builtin_ctzll(~zram_ids[w]);

			zram_ids[w] |= UINT64_C(1) << bit;
			id = (int)(w * 64 + bit);
		}
	pthread_mutex_unlock(&zram_ids_lock);
	return id;
}

static void zram_id_put(int id)
{
	pthread_mutex_lock(&zram_ids_lock);
	zram_ids[id / 64] &= ~(UINT64_C(1) << (id % 64));
	pthread_mutex_unlock(&zram_ids_lock);
}

static void mem_used_add(struct zram_backend *zb, uint64_t n)
{
	uint64_t now = atomic_fetch_add_explicit(&zb->mem_used, n,
						 memory_order_relaxed) + n;
	uint64_t max = atomic_load_explicit(&zb->mem_used_max, memory_order_relaxed);

	while (now > max &&
	       !atomic_compare_exchange_weak_explicit(&zb->mem_used_max, &max, now,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* Account a page entering (@sign > 0) or leaving (@sign < 0) the device. */
void zram_account(struct zram_backend *zb, const struct zram_entry *e, int sign)
{
	uint64_t mem = e->handle != NULL ? zpool_class_size(e->size) : 0;

	if (sign > 0) {
		stat_add64(&zb->pages_stored, 1);
		stat_add64(&zb->compr_data_size, e->size);
		mem_used_add(zb, mem);
		if (e->flags & ZRAM_SAME)
			stat_add64(&zb->same_pages, 1);
		if (e->flags & ZRAM_HUGE) {
			stat_add64(&zb->huge_pages, 1);
			stat_add64(&zb->huge_pages_since, 1);
		}
	} else {
		stat_sub64(&zb->pages_stored, 1);
		stat_sub64(&zb->compr_data_size, e->size);
		stat_sub64(&zb->mem_used, mem);
		if (e->flags & ZRAM_SAME)
			stat_sub64(&zb->same_pages, 1);
		if (e->flags & ZRAM_HUGE)
			stat_sub64(&zb->huge_pages, 1);
	}
}

/* ------------------------------------------------------------------ */
/* Algorithms */

static int lz4_compress(struct zram_backend *zb, const void *src, void *dst, size_t cap)
{
	int len = LZ4_compress_default(src, dst, USWAP_PAGE_SIZE, (int)cap);

	(void)zb;
	return len > 0 ? len : -EIO;
}

static int lz4_decompress(struct zram_backend *zb, const void *src, size_t len, void *dst)
{
	int n = LZ4_decompress_safe(src, dst, (int)len, USWAP_PAGE_SIZE);

	(void)zb;
	return n == USWAP_PAGE_SIZE ? 0 : -EIO;
}

/* Take an idle context set from the pool, or make one. NULL: -ENOMEM. */
static struct zstd_ctx *zstd_ctx_get(struct zram_backend *zb)
{
	struct zstd_ctx *c;

	pthread_mutex_lock(&zb->pool_lock);
	c = zb->pool;
	if (c != NULL)
		zb->pool = c->next;
	pthread_mutex_unlock(&zb->pool_lock);
	if (c == NULL)
		c = calloc(1, sizeof(*c));
	return c;
}

static void zstd_ctx_put(struct zram_backend *zb, struct zstd_ctx *c)
{
	pthread_mutex_lock(&zb->pool_lock);
	c->next = zb->pool;
	zb->pool = c;
	pthread_mutex_unlock(&zb->pool_lock);
}

static int zstd_compress(struct zram_backend *zb, const void *src, void *dst, size_t cap)
{
	struct zstd_ctx *c = zstd_ctx_get(zb);
	size_t len;
	int rc;

	if (c == NULL)
		return -ENOMEM;
	if (c->cctx == NULL)
		c->cctx = ZSTD_createCCtx();
	if (c->cctx == NULL) {
		zstd_ctx_put(zb, c);
		return -ENOMEM;
	}
	len = ZSTD_compressCCtx(c->cctx, dst, cap, src, USWAP_PAGE_SIZE, ZRAM_ZSTD_LEVEL);
	if (!ZSTD_isError(len))
		rc = (int)len;
	else if (ZSTD_getErrorCode(len) == ZSTD_error_memory_allocation)
		rc = -ENOMEM;
	else
		rc = -EIO;
	zstd_ctx_put(zb, c);
	return rc;
}

static int zstd_decompress(struct zram_backend *zb, const void *src, size_t len, void *dst)
{
	struct zstd_ctx *c = zstd_ctx_get(zb);
	size_t n;

	if (c == NULL)
		return -ENOMEM;
	if (c->dctx == NULL)
		c->dctx = ZSTD_createDCtx();
	if (c->dctx == NULL) {
		zstd_ctx_put(zb, c);
		return -ENOMEM;
	}
	n = ZSTD_decompressDCtx(c->dctx, dst, USWAP_PAGE_SIZE, src, len);
	zstd_ctx_put(zb, c);
	if (!ZSTD_isError(n))
		return n == USWAP_PAGE_SIZE ? 0 : -EIO;
	return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
}

static const struct zram_algo_ops zram_algos[] = {
	{ "lz4", lz4_compress, lz4_decompress },
	{ "zstd", zstd_compress, zstd_decompress },
};

/* ------------------------------------------------------------------ */
/* Pages */

/* Whether an object of @size bytes would take the pool past mem_limit. */
static bool over_limit(struct zram_backend *zb, size_t size)
{
	return zb->mem_limit && atomic_load_explicit(&zb->mem_used, memory_order_relaxed) +
					zpool_class_size(size) > zb->mem_limit;
}

/*
 * prepare_page() - turn one page into what the slot will hold: the word of
 * a same-filled page, else a compressed object, else (compressed length
 * >= ZRAM_HUGE_THRESHOLD) a raw copy. zram_write_page()'s three cases.
 * Return: 0 and @e filled (the caller owns e->handle); -ENOMEM; -EIO.
 */
static int prepare_page(struct zram_backend *zb, const unsigned char *src,
			struct zram_entry *e)
{
	unsigned char tmp[ZRAM_BOUND];
	int len;

	memset(e, 0, sizeof(*e));
	if (page_same_filled(src, &e->element)) {
		e->flags = ZRAM_SAME;
		return 0;
	}
	len = zb->algo->compress(zb, src, tmp, sizeof(tmp));
	if (len < 0)
		return len;
	if (over_limit(zb, (size_t)len >= ZRAM_HUGE_THRESHOLD ? USWAP_PAGE_SIZE : (size_t)len))
		return -ENOMEM;
	if ((size_t)len >= ZRAM_HUGE_THRESHOLD) {
		e->handle = zpool_alloc(zb->objs, USWAP_PAGE_SIZE);
		if (e->handle == NULL)
			return -ENOMEM;
		memcpy(e->handle, src, USWAP_PAGE_SIZE);
		e->size = USWAP_PAGE_SIZE;
		e->flags = ZRAM_HUGE;
		return 0;
	}
	e->handle = zpool_alloc(zb->objs, (size_t)len);
	if (e->handle == NULL)
		return -ENOMEM;
	memcpy(e->handle, tmp, (size_t)len);
	e->size = (uint32_t)len;
	return 0;
}

/*
 * slot_replace() - install @new in slot @index (NULL: make it empty) and
 * free what it held before, fixing the statistics for both.
 * Return: true if the slot held data before.
 */
static bool slot_replace(struct zram_backend *zb, uint64_t index,
			 const struct zram_entry *new)
{
	struct zram_slot *s = &zb->slots[index];
	struct zram_entry old = { 0 };
	bool had;
	uint32_t f;

	f = slot_lock(s);
	had = (f & (ZRAM_SAME | ZRAM_WB)) || s->handle != NULL;
	if (f & ZRAM_WB) {
		old.flags = ZRAM_WB; /* nothing here: its copy below is dropped */
	} else if (had) {
		old.flags = f & (ZRAM_SAME | ZRAM_HUGE);
		old.size = s->size;
		if (f & ZRAM_SAME)
			old.element = s->element;
		else
			old.handle = s->handle;
	}
	if (new != NULL && (new->flags & ZRAM_SAME)) {
		s->element = new->element;
		s->size = 0;
		f = ZRAM_SAME;
	} else if (new != NULL) {
		s->handle = new->handle;
		s->size = new->size;
		f = new->flags & ZRAM_HUGE;
	} else {
		s->handle = NULL;
		s->size = 0;
		f = 0;
	}
	slot_unlock(s, f);

	/* Account the new page first so that pages_stored never dips below
	 * what is stored while a reader sums the figures. */
	if (new != NULL)
		zram_account(zb, new, +1);
	if (old.flags & ZRAM_WB) {
		zram_wb_forget(zb);
	} else if (had) {
		zram_account(zb, &old, -1);
		zpool_free(zb->objs, old.handle, old.size);
	}
	if (zb->wb)
		zram_wb_touch(zb, index);
	return had;
}

/* The pool scatters the objects of consecutive slots over the blocks of
 * their size classes, so a read starts on cold lines that the hardware
 * prefetcher only follows after a few misses: ask for all of them at once
 * (measured on `uswap bench io`, see docs/benchmarks.md). */
static void prefetch_object(const void *obj, uint32_t size)
{
	for (uint32_t off = 0; off < size; off += 64)
		__builtin_prefetch((const char *)obj + off);
}

/* Read slot @index into @dst. Return: 0 or -EIO / -ENOMEM. */
static int read_page(struct zram_backend *zb, uint64_t index, unsigned char *dst)
{
	struct zram_slot *s = &zb->slots[index];
	uint32_t f = slot_lock(s);
	int rc = 0;

	if (f & ZRAM_WB) {
		/* The lower device's slot holds it. Nobody changes this slot
		 * while we read it (the backend contract), and writeback
		 * never touches a WB slot: read without the lock. */
		slot_unlock(s, f);
		return zram_wb_read(zb, index, dst);
	}
	if (zb->wb)
		zram_wb_touch(zb, index);
	if (f & ZRAM_SAME)
		page_fill_word(dst, s->element);
	else if (s->handle == NULL)
		memset(dst, 0, USWAP_PAGE_SIZE);
	else if (f & ZRAM_HUGE)
		memcpy(dst, s->handle, USWAP_PAGE_SIZE);
	else {
		prefetch_object(s->handle, s->size);
		rc = zb->algo->decompress(zb, s->handle, s->size, dst);
	}
	slot_unlock(s, f);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Backend ops */

/*
 * zram_read() - decompress the 2^@order pages at @slot into @buf.
 * Return: 0; -EINVAL (range); -EIO (an object does not decode to a page:
 * memory corruption; the buffer is garbage); -ENOMEM (zstd context).
 * Thread-safety: any thread; takes each slot's lock in turn.
 */
static int zram_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	struct zram_backend *zb = to_zram(b);
	unsigned char *dst = buf;
	int rc = backend_check_io(b, slot, order);

	if (rc)
		return rc;
	for (uint64_t i = 0; i < (UINT64_C(1) << order); i++) {
		rc = read_page(zb, slot + i, dst + i * USWAP_PAGE_SIZE);
		if (rc) {
			stat_add64(&zb->failed_reads, 1);
			return rc;
		}
		stat_add64(&zb->num_reads, 1);
	}
	return 0;
}

/*
 * zram_write() - store the 2^@order pages of @buf at @slot, each page on
 * its own (same-filled / compressed / huge, see the file comment). The
 * previous contents of each slot are freed as it is replaced.
 * Return: 0; -EINVAL (range, nothing written); -ENOMEM (a page could not
 * be stored: the pages before it hold the new data, it and the pages after
 * it their old data).
 * Thread-safety: any thread; compresses without locks, then takes each
 * slot's lock for the pointer swap.
 */
static int zram_write(struct backend *b, uint64_t slot, unsigned int order,
		      const void *buf)
{
	struct zram_backend *zb = to_zram(b);
	const unsigned char *src = buf;
	struct zram_entry e;
	int rc = backend_check_io(b, slot, order);

	if (rc)
		return rc;
	for (uint64_t i = 0; i < (UINT64_C(1) << order); i++) {
		rc = prepare_page(zb, src + i * USWAP_PAGE_SIZE, &e);
		if (rc) {
			stat_add64(&zb->failed_writes, 1);
			return rc;
		}
		slot_replace(zb, slot + i, &e);
		stat_add64(&zb->num_writes, 1);
	}
	return 0;
}

/*
 * zram_discard() - free the slots [slot, slot + nr) at once (zram's
 * REQ_OP_DISCARD / swap_slot_free_notify): their memory goes back to the
 * allocator and they read as zeroes. Slots already empty are skipped.
 * Return: 0 or -EINVAL (range; nothing freed).
 * Thread-safety: any thread; takes each slot's lock in turn.
 */
static int zram_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct zram_backend *zb = to_zram(b);
	int rc = backend_check_range(b, slot, nr_slots);

	if (rc)
		return rc;
	for (uint64_t i = 0; i < nr_slots; i++)
		if (slot_replace(zb, slot + i, NULL))
			stat_add64(&zb->notify_free, 1);
	return 0;
}

static int zram_flush(struct backend *b)
{
	(void)b;
	return 0;
}

int zram_mm_stat(struct backend *b, struct zram_mm_stat *st)
{
	struct zram_backend *zb = to_zram(b);

	if (b == NULL || b->ops != &zram_ops || st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->pages_stored = atomic_load(&zb->pages_stored);
	st->orig_data_size = st->pages_stored * USWAP_PAGE_SIZE;
	st->compr_data_size = atomic_load(&zb->compr_data_size);
	st->mem_used_total = atomic_load(&zb->mem_used);
	st->mem_limit = zb->mem_limit;
	st->mem_used_max = atomic_load(&zb->mem_used_max);
	st->same_pages = atomic_load(&zb->same_pages);
	st->huge_pages = atomic_load(&zb->huge_pages);
	st->huge_pages_since = atomic_load(&zb->huge_pages_since);
	return 0;
}

int zram_io_stat(struct backend *b, struct zram_io_stat *st)
{
	struct zram_backend *zb = to_zram(b);

	if (b == NULL || b->ops != &zram_ops || st == NULL)
		return -EINVAL;
	st->num_reads = atomic_load(&zb->num_reads);
	st->num_writes = atomic_load(&zb->num_writes);
	st->failed_reads = atomic_load(&zb->failed_reads);
	st->failed_writes = atomic_load(&zb->failed_writes);
	st->notify_free = atomic_load(&zb->notify_free);
	return 0;
}

int zram_set_mem_limit(struct backend *b, uint64_t bytes)
{
	if (b == NULL || b->ops != &zram_ops)
		return -EINVAL;
	to_zram(b)->mem_limit = bytes;
	return 0;
}

const char *zram_algo(struct backend *b)
{
	if (b == NULL || b->ops != &zram_ops)
		return NULL;
	return to_zram(b)->algo->name;
}

/* "key value" lines: mm_stat's fields, then io_stat's. */
static void zram_print_stats(struct backend *b, FILE *out)
{
	struct zram_mm_stat mm = { 0 };
	struct zram_io_stat io = { 0 };
	struct zpool_stats pool;

	zram_mm_stat(b, &mm);
	zram_io_stat(b, &io);
	fprintf(out, "comp_algorithm %s\n", zram_algo(b));
	fprintf(out, "disksize %llu\n",
		(unsigned long long)b->nr_slots * USWAP_PAGE_SIZE);
#define P(st, f) fprintf(out, #f " %llu\n", (unsigned long long)(st).f)
	P(mm, orig_data_size);
	P(mm, compr_data_size);
	P(mm, mem_used_total);
	P(mm, mem_limit);
	P(mm, mem_used_max);
	P(mm, same_pages);
	P(mm, pages_compacted);
	P(mm, huge_pages);
	P(mm, huge_pages_since);
	P(mm, pages_stored);
	P(io, num_reads);
	P(io, num_writes);
	P(io, failed_reads);
	P(io, failed_writes);
	P(io, notify_free);
#undef P
	struct zram_wb_stat wb;

	if (zram_wb_stat(b, &wb) == 0)
		fprintf(out, "bd_count %llu\nbd_reads %llu\nbd_writes %llu\nwb_failed %llu\n"
			"wb_idle %llu\nwb_huge %llu\nwb_budget %llu\n",
			(unsigned long long)wb.bd_count, (unsigned long long)wb.bd_reads,
			(unsigned long long)wb.bd_writes, (unsigned long long)wb.failed,
			(unsigned long long)wb.idle, (unsigned long long)wb.huge,
			(unsigned long long)wb.budget);
	uint64_t by_workers;
	unsigned int nr_workers = zram_nr_workers(b, &by_workers);

	if (nr_workers)
		fprintf(out, "workers %u\nworker_requests %llu\n", nr_workers,
			(unsigned long long)by_workers);
	zpool_stats(to_zram(b)->objs, &pool);
	fprintf(out, "pool_mapped %llu\npool_blocks_used %llu\npool_blocks_idle %llu\n"
		"pool_blocks_cold %llu\n",
		(unsigned long long)pool.mapped, (unsigned long long)pool.blocks_used,
		(unsigned long long)pool.blocks_idle, (unsigned long long)pool.blocks_cold);
}

/* Context: no other thread may use @b. Frees every stored object. */
static void zram_close(struct backend *b)
{
	struct zram_backend *zb = to_zram(b);
	struct zstd_ctx *c;

	if (b == NULL)
		return;
	zram_workers_stop(zb); /* they finish what is queued */
	zram_wb_stop(zb); /* the writeback thread, and the lower device */
	zpool_destroy(zb->objs); /* every stored object with it */
	while ((c = zb->pool) != NULL) {
		zb->pool = c->next;
		ZSTD_freeCCtx(c->cctx);
		ZSTD_freeDCtx(c->dctx);
		free(c);
	}
	pthread_mutex_destroy(&zb->pool_lock);
	free(zb->slots);
	zram_id_put(zb->id);
	backend_release(b);
	free(zb);
}

static const struct backend_ops zram_ops = {
	.kind = "zram",
	.read = zram_read,
	.write = zram_write,
	.discard = zram_discard,
	.flush = zram_flush,
	.submit = backend_submit_sync,
	.submit_batch = zram_submit_batch,
	.reap = zram_reap,
	.print_stats = zram_print_stats,
	.close = zram_close,
};

/*
 * backend_zram_open() - a compressed-memory backend of @disksize_bytes
 * (rounded up to whole pages, as zram's disksize_store() does; slot 0
 * included, first_slot 1), compressing with @algo: "lz4" (also for NULL
 * or "") or "zstd" (level ZRAM_ZSTD_LEVEL), matched without regard to
 * case. Memory is allocated as pages are stored, not up front; only the
 * 16-byte-per-slot table is allocated here.
 * @out: receives the backend; the caller closes it with ops->close().
 * Return: 0; -EINVAL (@out NULL, fewer than 2 slots, unknown algorithm;
 * with a message in @err); -ENOMEM.
 * Thread-safety: any thread.
 */
int backend_zram_open(uint64_t disksize_bytes, const char *algo, struct backend **out,
		      char *err, size_t errlen)
{
	const struct zram_algo_ops *ops = NULL;
	struct zram_backend *zb;
	uint64_t nr_slots;
	char name[32];

	if (out == NULL)
		return backend_errf(err, errlen, -EINVAL, "zram: no output pointer");
	if (algo == NULL || *algo == '\0')
		algo = ZRAM_DEFAULT_ALGO;
	for (size_t i = 0; i < ARRAY_SIZE(zram_algos); i++)
		if (strcasecmp(algo, zram_algos[i].name) == 0)
			ops = &zram_algos[i];
	if (ops == NULL)
		return backend_errf(err, errlen, -EINVAL,
				    "zram: unknown compression algorithm '%s' (lz4, zstd)",
				    algo);
	nr_slots = disksize_bytes / USWAP_PAGE_SIZE +
		   (disksize_bytes % USWAP_PAGE_SIZE != 0);
	if (nr_slots < 2 || nr_slots > SIZE_MAX / sizeof(struct zram_slot))
		return backend_errf(err, errlen, -EINVAL,
				    "zram: disksize %llu bytes: need 2 pages at least",
				    (unsigned long long)disksize_bytes);
	zb = calloc(1, sizeof(*zb));
	if (zb == NULL)
		return backend_errf(err, errlen, -ENOMEM, "zram: out of memory");
	zb->slots = calloc(nr_slots, sizeof(*zb->slots));
	if (zb->slots == NULL) {
		free(zb);
		return backend_errf(err, errlen, -ENOMEM,
				    "zram: cannot allocate the table of %llu slots",
				    (unsigned long long)nr_slots);
	}
	zb->objs = zpool_create();
	if (zb->objs == NULL) {
		free(zb->slots);
		free(zb);
		return backend_errf(err, errlen, -ENOMEM, "zram: out of memory");
	}
	zb->id = zram_id_get();
	if (zb->id < 0) {
		zpool_destroy(zb->objs);
		free(zb->slots);
		free(zb);
		return backend_errf(err, errlen, -EMFILE, "zram: %d devices open already",
				    ZRAM_MAX_IDS);
	}
	pthread_mutex_init(&zb->pool_lock, NULL);
	zb->algo = ops;
	snprintf(name, sizeof(name), "zram%d", zb->id);
	backend_init(&zb->b, &zram_ops, name, nr_slots, 1);
	zb->b.free_notify = true; /* freed slots free their memory at once */
	*out = &zb->b;
	return 0;
}
