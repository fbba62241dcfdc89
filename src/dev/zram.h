/* SPDX-License-Identifier: MIT */
/*
 * zram.h - what the zram backend exposes beyond backend.h: its memory
 * figures, the fields of the kernel's /sys/block/zramN/mm_stat.
 */
#ifndef USWAP_DEV_ZRAM_H
#define USWAP_DEV_ZRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/backend.h"

/* Compressed objects of this many bytes or more are not worth keeping
 * compressed: the page is stored raw and counted in huge_pages. The kernel
 * uses zsmalloc's huge_class_size (about 3264 bytes with 4 KiB pages); 3/4
 * of a page is the break-even point used here. */
#define ZRAM_HUGE_THRESHOLD (USWAP_PAGE_SIZE * 3 / 4)

/* Defaults and names accepted by backend_zram_open(@algo). */
#define ZRAM_DEFAULT_ALGO "lz4"
#define ZRAM_ZSTD_LEVEL   USWAP_ZRAM_ZSTD_LEVEL /* public: benchmarks use it */

/*
 * Memory figures of one zram backend, in bytes unless named _pages. All
 * are exact when no I/O runs; while I/O runs each field is a moving
 * snapshot (they are read one by one).
 *   orig_data_size  = pages_stored * USWAP_PAGE_SIZE (same pages included)
 *   compr_data_size = sum of stored object sizes: compressed length, or
 *                     USWAP_PAGE_SIZE for a huge page, 0 for a same page
 *   mem_used_total  = bytes the allocator holds for those objects
 *                     (each object's 32-byte size class in the pool,
 *                     zpool.c); >= compr_data_size, < it + 32 per object.
 *                     The pool's whole blocks, idle ones included, are
 *                     printed by print_stats as pool_* lines
 */
struct zram_mm_stat {
	uint64_t orig_data_size;   /* bytes of the pages stored */
	uint64_t compr_data_size;  /* bytes after compression */
	uint64_t mem_used_total;   /* bytes of memory used for the objects */
	uint64_t mem_limit;        /* cap on mem_used_total, 0: none (the
				      kernel's default; zram_set_mem_limit()) */
	uint64_t mem_used_max;     /* peak of mem_used_total since open */
	uint64_t same_pages;       /* pages stored as one repeated 8-byte word */
	uint64_t pages_compacted;  /* always 0: the pool does not compact */
	uint64_t huge_pages;       /* pages stored raw (incompressible) now */
	uint64_t huge_pages_since; /* pages ever stored raw since open */
	uint64_t pages_stored;     /* slots holding data (incl. same pages) */
};

/* Failure and traffic counters, as the kernel's io_stat and stat. */
struct zram_io_stat {
	uint64_t num_reads;        /* pages read */
	uint64_t num_writes;       /* pages written */
	uint64_t failed_reads;     /* pages whose read failed (bad object) */
	uint64_t failed_writes;    /* pages whose write failed (ENOMEM, ...) */
	uint64_t notify_free;      /* slots freed by discard */
};

/*
 * zram_mm_stat() - read the memory figures of zram backend @b into @st.
 * Return: 0; -EINVAL (@b is not a zram backend, or @st NULL).
 * Thread-safety: any thread, while I/O runs (see the struct comment).
 */
int zram_mm_stat(struct backend *b, struct zram_mm_stat *st);

/* zram_io_stat() - as zram_mm_stat(), for the traffic counters. */
int zram_io_stat(struct backend *b, struct zram_io_stat *st);

/*
 * zram_workers_start() - compress the writes of each submitted batch on
 * @n threads of the device's own (1..ZRAM_MAX_WORKERS), the submitter
 * helping while it reaps; 0 changes nothing (every request runs on the
 * submitting thread, as the kernel's zram). Reads and single requests
 * (the synchronous ops) always run on the caller's thread.
 * Return: 0; -EINVAL (@n too large); -ENOMEM or a pthread error (no
 * worker left running), with a message in @err.
 * Context: right after backend_zram_open(), before any I/O.
 */
#define ZRAM_MAX_WORKERS 8
int zram_workers_start(struct backend *b, unsigned int n, char *err, size_t errlen);
/* zram_nr_workers() - workers running on @b; *@by_workers (if not NULL):
 * requests they ran so far. */
unsigned int zram_nr_workers(const struct backend *b, uint64_t *by_workers);

/*
 * zram_set_mem_limit() - cap the memory the device's stored pages take
 * (mem_used_total, in bytes; 0: no cap), as zram's mem_limit: a write
 * that would take it past the cap fails with -ENOMEM and stores nothing
 * (the swap layer then pauses the device and the folio goes to another
 * one); a same-filled page takes no memory and is always stored. Checked
 * per page, so writes running at once may pass it by one page each.
 * Return: 0; -EINVAL (@b is not a zram backend).
 * Context: right after backend_zram_open(), before any I/O.
 */
int zram_set_mem_limit(struct backend *b, uint64_t bytes);

/* zram_algo() - the algorithm name ("lz4" or "zstd"), NULL if @b is not a
 * zram backend. The string is static. */
const char *zram_algo(struct backend *b);

/* ------------------------------------------------------------------------
 * Writeback to a lower device (zram_wb.c)
 * ---------------------------------------------------------------------- */

enum zram_wb_reason { ZRAM_WB_IDLE, ZRAM_WB_HUGE, ZRAM_WB_BUDGET, ZRAM_WB_REASONS };

struct zram_wb_opts {
	uint32_t idle_s;          /* pages unused this long go down; 0 = off */
	bool huge;                /* incompressible pages go down */
	uint64_t budget_bytes;    /* over this much pool memory, pages go
				     down until under it; 0 = off */
};

/* Writeback figures, the kernel's bd_stat plus why pages went down. */
struct zram_wb_stat {
	uint64_t bd_count;        /* pages on the lower device now */
	uint64_t bd_reads;        /* pages read back from it */
	uint64_t bd_writes;       /* pages written back */
	uint64_t failed;          /* lower writes that failed (page kept) */
	uint64_t idle, huge, budget; /* bd_writes by reason */
	uint64_t scans;           /* passes over the slots */
};

/*
 * zram_writeback_start() - give zram backend @b the lower device @lower
 * (taken: closed with @b) and start moving pages down by @opts in the
 * background. @lower must have at least as many slots as @b.
 * Return: 0; -EINVAL (not zram, @lower too small, no reason given);
 * -EBUSY (a lower device already); -ENOMEM; with a message in @err.
 */
int zram_writeback_start(struct backend *b, struct backend *lower,
			 const struct zram_wb_opts *opts, char *err, size_t errlen);

/* zram_wb_stat() - @b's writeback figures. Return: 0; -EINVAL (not zram,
 * or no writeback). Thread-safety: any thread. */
int zram_wb_stat(struct backend *b, struct zram_wb_stat *st);

#endif /* USWAP_DEV_ZRAM_H */
