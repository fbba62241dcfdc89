// SPDX-License-Identifier: MIT
/*
 * zram_wb.c - zram writeback: a zram device given a lower device moves
 * pages down to it in the background, as the kernel's zram does with its
 * backing_dev (CONFIG_ZRAM_WRITEBACK), here with the reasons chosen by
 * policy instead of by hand:
 *   idle    a page not read or written for idle_s seconds (the kernel's
 *           "echo all > idle" then "writeback idle", done continuously);
 *   huge    a page that did not compress (stored raw: ZRAM_HUGE);
 *   budget  while the pool's memory (mem_used_total) is over budget
 *           bytes, any page, in slot order.
 * A written-back slot keeps the same index on the lower device (the lower
 * device must be at least as large), so no block allocator is needed; the
 * slot is marked ZRAM_WB and its object freed. Reading it reads the lower
 * device; writing or discarding it simply replaces the mark.
 *
 * The move is made without holding the slot lock across the I/O: under
 * the lock the page is copied out (decompressed) and ZRAM_UNDER_WB set;
 * the copy is written to the lower device; under the lock again, the move
 * is committed only if ZRAM_UNDER_WB is still there. Any write or discard
 * of the slot in between rebuilds its flags without it, so a move never
 * replaces newer data; the stale copy on the lower device is never read.
 *
 * One thread per device scans every slot every WB_INTERVAL_MS, writing
 * back up to WB_BATCH pages per lower-device batch (backend_submit_batch).
 * A failed lower write leaves the page in memory (counted in failed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dev/zram_impl.h"

#define WB_INTERVAL_MS 200
#define WB_BATCH       64

struct zram_wb {
	struct backend *lower;        /* owned */
	struct zram_wb_opts opts;
	_Atomic uint32_t *atime;      /* per slot: last use, in ticks since start */
	uint64_t t0_ns;
	pthread_t thread;
	pthread_mutex_t lock;         /* stop, cond */
	pthread_cond_t cond;
	bool stop;
	unsigned char *buf;           /* WB_BATCH pages, the thread's */
	_Atomic uint64_t bd_count, bd_reads, bd_writes, failed;
	_Atomic uint64_t reason[ZRAM_WB_REASONS];
	_Atomic uint64_t scans;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock of atime: 1/16 s ticks (32 bits last 8 years), so "idle for
 * idle_s seconds" is exact to 1/16 s. */
#define WB_TICKS_PER_S 16u

static uint32_t now_ticks(const struct zram_wb *wb)
{
	return (uint32_t)((mono_ns() - wb->t0_ns) / (1000000000u / WB_TICKS_PER_S));
}

void zram_wb_touch(struct zram_backend *zb, uint64_t index)
{
	uint32_t t = now_ticks(zb->wb);

	/* Most touches find the tick already there: no store. */
	if (atomic_load_explicit(&zb->wb->atime[index], memory_order_relaxed) != t)
		atomic_store_explicit(&zb->wb->atime[index], t, memory_order_relaxed);
}

int zram_wb_read(struct zram_backend *zb, uint64_t index, unsigned char *dst)
{
	struct zram_wb *wb = zb->wb;
	int rc = wb->lower->ops->read(wb->lower, index, 0, dst);

	atomic_fetch_add_explicit(&wb->bd_reads, 1, memory_order_relaxed);
	return rc ? -EIO : 0;
}

void zram_wb_forget(struct zram_backend *zb)
{
	atomic_fetch_sub_explicit(&zb->wb->bd_count, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* The thread */

/* Why slot @i should go down now, or -1. Cheap checks on the flags word
 * and atime only; the slot lock decides for good. */
static int wb_reason(struct zram_backend *zb, uint64_t i, uint32_t now)
{
	struct zram_wb *wb = zb->wb;
	uint32_t f = atomic_load_explicit(&zb->slots[i].flags, memory_order_relaxed);

	if (f & (ZRAM_LOCK | ZRAM_SAME | ZRAM_WB | ZRAM_UNDER_WB))
		return -1;
	if (wb->opts.huge && (f & ZRAM_HUGE))
		return ZRAM_WB_HUGE;
	if (wb->opts.idle_s &&
	    now - atomic_load_explicit(&wb->atime[i], memory_order_relaxed) >=
	    wb->opts.idle_s * WB_TICKS_PER_S)
		return ZRAM_WB_IDLE;
	if (wb->opts.budget_bytes &&
	    atomic_load_explicit(&zb->mem_used, memory_order_relaxed) > wb->opts.budget_bytes)
		return ZRAM_WB_BUDGET;
	return -1;
}

/* Under the slot lock: copy slot @i's page into @dst and mark it
 * UNDER_WB. Return: the object being moved, or NULL (nothing to move). */
static void *wb_copy(struct zram_backend *zb, uint64_t i, unsigned char *dst)
{
	struct zram_slot *s = &zb->slots[i];
	uint32_t f = slot_lock(s);
	void *h = NULL;

	if (!(f & (ZRAM_SAME | ZRAM_WB | ZRAM_UNDER_WB)) && s->handle) {
		if (f & ZRAM_HUGE)
			memcpy(dst, s->handle, USWAP_PAGE_SIZE);
		if ((f & ZRAM_HUGE) || zb->algo->decompress(zb, s->handle, s->size, dst) == 0) {
			h = s->handle;
			f |= ZRAM_UNDER_WB;
		}
	}
	slot_unlock(s, f);
	return h;
}

/* Under the slot lock again: make the move final if nothing changed the
 * slot meanwhile (@ok: the lower write succeeded). */
static void wb_commit(struct zram_backend *zb, uint64_t i, void *h, bool ok, int reason)
{
	struct zram_wb *wb = zb->wb;
	struct zram_slot *s = &zb->slots[i];
	uint32_t f = slot_lock(s);
	struct zram_entry old = { 0 };
	bool moved = false;

	if ((f & ZRAM_UNDER_WB) && s->handle == h) {
		f &= ~(uint32_t)ZRAM_UNDER_WB;
		if (ok) {
			old.handle = s->handle;
			old.size = s->size;
			old.flags = f & ZRAM_HUGE;
			s->handle = NULL;
			s->size = 0;
			f = ZRAM_WB;
			moved = true;
		}
	}
	slot_unlock(s, f);
	if (moved) {
		zram_account(zb, &old, -1);
		zpool_free(zb->objs, old.handle, old.size);
		atomic_fetch_add_explicit(&wb->bd_count, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&wb->bd_writes, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&wb->reason[reason], 1, memory_order_relaxed);
	}
}

struct wb_io {
	struct backend_io io;
	_Atomic unsigned int *left;
};

static void wb_io_done(struct backend_io *io)
{
	atomic_fetch_sub_explicit(((struct wb_io *)io)->left, 1, memory_order_release);
}

/* Write the @n copied pages to the lower device as one batch and commit
 * each. */
static void wb_flush(struct zram_backend *zb, const uint64_t *idx, void *const *h,
		     const int *reason, unsigned int n)
{
	struct zram_wb *wb = zb->wb;
	struct wb_io io[WB_BATCH];
	struct backend_io *q[WB_BATCH];
	_Atomic unsigned int left = n;

	for (unsigned int k = 0; k < n; k++) {
		io[k] = (struct wb_io){
			.io = { .op = BACKEND_WRITE, .slot = idx[k], .order = 0,
				.buf = wb->buf + (size_t)k * USWAP_PAGE_SIZE,
				.done = wb_io_done },
			.left = &left,
		};
		q[k] = &io[k].io;
	}
	if (backend_submit_batch(wb->lower, q, n) == 0) {
		unsigned int l;

		while ((l = atomic_load_explicit(&left, memory_order_acquire)))
			if (wb->lower->ops->reap(wb->lower, l) <= 0)
				sched_yield();
	} else {
		for (unsigned int k = 0; k < n; k++)
			io[k].io.result = -EIO; /* cannot happen: no NULL request */
	}
	for (unsigned int k = 0; k < n; k++) {
		if (io[k].io.result)
			atomic_fetch_add_explicit(&wb->failed, 1, memory_order_relaxed);
		wb_commit(zb, idx[k], h[k], io[k].io.result == 0, reason[k]);
	}
}

/* One pass over every slot. */
static void wb_scan(struct zram_backend *zb)
{
	struct zram_wb *wb = zb->wb;
	uint64_t idx[WB_BATCH];
	void *h[WB_BATCH];
	int reason[WB_BATCH];
	unsigned int n = 0;
	uint32_t now = now_ticks(wb);

	atomic_fetch_add_explicit(&wb->scans, 1, memory_order_relaxed);
	for (uint64_t i = zb->b.first_slot; i < zb->b.nr_slots; i++) {
		int r = wb_reason(zb, i, now);

		if (r < 0)
			continue;
		h[n] = wb_copy(zb, i, wb->buf + (size_t)n * USWAP_PAGE_SIZE);
		if (!h[n])
			continue;
		idx[n] = i;
		reason[n++] = r;
		if (n == WB_BATCH) {
			wb_flush(zb, idx, h, reason, n);
			n = 0;
		}
	}
	if (n)
		wb_flush(zb, idx, h, reason, n);
}

static void *wb_main(void *arg)
{
	struct zram_backend *zb = arg;
	struct zram_wb *wb = zb->wb;

	pthread_mutex_lock(&wb->lock);
	while (!wb->stop) {
		struct timespec ts;

		pthread_mutex_unlock(&wb->lock);
		wb_scan(zb);
		pthread_mutex_lock(&wb->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WB_INTERVAL_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!wb->stop)
			pthread_cond_timedwait(&wb->cond, &wb->lock, &ts);
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

/* ------------------------------------------------------------------ */

void zram_wb_stop(struct zram_backend *zb)
{
	struct zram_wb *wb = zb->wb;

	if (!wb)
		return;
	pthread_mutex_lock(&wb->lock);
	wb->stop = true;
	pthread_cond_signal(&wb->cond);
	pthread_mutex_unlock(&wb->lock);
	pthread_join(wb->thread, NULL);
	wb->lower->ops->close(wb->lower);
	pthread_cond_destroy(&wb->cond);
	pthread_mutex_destroy(&wb->lock);
	free(wb->buf);
	free((void *)wb->atime);
	free(wb);
	zb->wb = NULL;
}

int zram_writeback_start(struct backend *b, struct backend *lower,
			 const struct zram_wb_opts *opts, char *err, size_t errlen)
{
	struct zram_backend *zb;
	struct zram_wb *wb;
	int rc;

	if (!zram_algo(b) || !lower || !opts)
		return backend_errf(err, errlen, -EINVAL, "writeback: needs a zram device "
				    "and a lower device");
	zb = (struct zram_backend *)b;
	if (zb->wb)
		return backend_errf(err, errlen, -EBUSY, "writeback: %s has a lower device "
				    "already", b->name);
	if (lower->nr_slots < b->nr_slots)
		return backend_errf(err, errlen, -EINVAL, "writeback: the lower device "
				    "(%llu slots) is smaller than %s (%llu): it must hold "
				    "every slot", (unsigned long long)lower->nr_slots, b->name,
				    (unsigned long long)b->nr_slots);
	if (!opts->idle_s && !opts->huge && !opts->budget_bytes)
		return backend_errf(err, errlen, -EINVAL, "writeback: say when (idle=S, "
				    "huge or budget=SIZE)");
	wb = calloc(1, sizeof(*wb));
	if (wb) {
		wb->atime = calloc(b->nr_slots, sizeof(*wb->atime));
		wb->buf = malloc((size_t)WB_BATCH * USWAP_PAGE_SIZE);
	}
	if (!wb || !wb->atime || !wb->buf) {
		if (wb) {
			free((void *)wb->atime);
			free(wb->buf);
		}
		free(wb);
		return backend_errf(err, errlen, -ENOMEM, "writeback: out of memory");
	}
	wb->lower = lower;
	wb->opts = *opts;
	wb->t0_ns = mono_ns();
	pthread_mutex_init(&wb->lock, NULL);
	pthread_cond_init(&wb->cond, NULL);
	zb->wb = wb;
	rc = pthread_create(&wb->thread, NULL, wb_main, zb);
	if (rc) {
		zb->wb = NULL;
		pthread_cond_destroy(&wb->cond);
		pthread_mutex_destroy(&wb->lock);
		free((void *)wb->atime);
		free(wb->buf);
		free(wb);
		return backend_errf(err, errlen, -rc, "writeback: cannot start its thread");
	}
	return 0;
}

int zram_wb_stat(struct backend *b, struct zram_wb_stat *st)
{
	struct zram_wb *wb;

	if (!zram_algo(b) || !st || !(wb = ((struct zram_backend *)b)->wb))
		return -EINVAL;
	st->bd_count = atomic_load(&wb->bd_count);
	st->bd_reads = atomic_load(&wb->bd_reads);
	st->bd_writes = atomic_load(&wb->bd_writes);
	st->failed = atomic_load(&wb->failed);
	st->idle = atomic_load(&wb->reason[ZRAM_WB_IDLE]);
	st->huge = atomic_load(&wb->reason[ZRAM_WB_HUGE]);
	st->budget = atomic_load(&wb->reason[ZRAM_WB_BUDGET]);
	st->scans = atomic_load(&wb->scans);
	return 0;
}
