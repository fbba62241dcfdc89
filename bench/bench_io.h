/* SPDX-License-Identifier: MIT */
/*
 * bench_io.h - `uswap bench io`: swap-out and swap-in throughput per
 * backend, each beside the raw limit of the same medium measured in the
 * same run on the same data.
 *
 * Glossary:
 *  measurement  one (device spec, order, threads) triple: a fresh instance,
 *               the spec swapped on alone, every folio of the data swapped
 *               out (timed), swapped back in and verified (timed), freed;
 *  folio        2^order pages moved by one uswap_swap_out()/swap_in() call;
 *  share        the contiguous run of folios one thread moves;
 *  limit        what the medium does without uswap on the same bytes:
 *               memcpy (ram), the raw codec per 4 KiB page (zram), fio on
 *               the same file (file);
 *  MB/s         10^6 bytes per second of wall time, all threads together.
 *
 * Declarations are grouped by the file that defines them.
 */
#ifndef USWAP_TOOLS_BENCH_IO_H
#define USWAP_TOOLS_BENCH_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uswap/uswap.h>

#define BENCH_IO_MAX_DEVICES 32
#define BENCH_IO_MAX_THREADS 64
#define BENCH_IO_MAX_BATCH   256
#define BENCH_IO_ERR_LEN     512
/* Room for one compressed page of either codec (LZ4/ZSTD_COMPRESSBOUND
 * of 4 KiB are 4128 and 4174 bytes), cache-line aligned. */
#define BENCH_IO_COMP_STRIDE 4224u

/* The command line, validated. */
struct bench_io_opts {
	const char *devices[BENCH_IO_MAX_DEVICES]; /* specs; argv or defaults */
	unsigned int nr_devices;
	int orders[USWAP_NR_ORDERS];               /* (=0,4) */
	int nr_orders;
	int threads[BENCH_IO_MAX_THREADS];         /* (=1,2) */
	int nr_threads;
	uint64_t size_bytes;        /* bytes moved per measurement (=256M),
				       capped per device to what it holds */
	const char *data_path;      /* --data; NULL = default source */
	const char *file_path;      /* --file: adds file:PATH to the defaults */
	const char *make_file;      /* --make-file: create, mkswap, remove */
	uint64_t file_size;         /* --file-size (=1G) */
	bool keep;                  /* --keep: leave the made file */
	bool drop_caches;           /* --drop-caches before file reads */
	unsigned int repeat;        /* repetitions per row, median (=3) */
	unsigned int batch;         /* folios per swap call (=1: the single
				       calls; more: the batch calls) */
	bool queue;                 /* --queue: a swap queue of depth batch
				       kept full instead of batch calls */
	bool warm;                  /* --warm: an untimed swap-out and free
				       of the same data first */
	bool json;
};

/* The data every measurement moves; buffers are page aligned (mmap). */
struct bench_io_data {
	unsigned char *src;         /* size bytes: the page contents */
	unsigned char *dst;         /* size bytes: swap-in target */
	unsigned char *store;       /* size bytes: memcpy limit's "device";
				       made on first use */
	unsigned char *comp;        /* codec limit: one compressed page per
				       BENCH_IO_COMP_STRIDE; made on first use */
	uint32_t *comp_len;         /* compressed length of each page */
	size_t size;                /* bytes of each buffer but comp */
	char source[256];           /* file path, or a description */
	bool generated;             /* pseudo-random text, not a file */
};

/* fio figures for one file and access pattern; NAN = not measured. */
struct bench_io_fio {
	double seq_read_mbps;       /* rw=read, bs = folio bytes */
	double seq_write_mbps;      /* rw=write, bs = folio bytes */
	double rand_read_mbps;      /* rw=randread, bs = 4 KiB */
	double rand_write_mbps;     /* rw=randwrite, bs = 4 KiB */
	/* Not fio: the benchmark's own pwrite/pread loop on the same file
	 * with the same buffers and folios as the swap path (fio reuses one
	 * cache-hot buffer per job, the swap path moves distinct memory). */
	double loop_write_mbps;
	double loop_read_mbps;
	char params[160];           /* ioengine, numjobs, direct, ... */
};

#define BENCH_IO_MAX_REPEAT 15

/* The figures of one repetition of a row; a row reports their medians. */
struct bench_io_sample {
	double swapout_s, swapin_s;
	double swapout_mbps, swapin_mbps;
	double limit_out_mbps, limit_in_mbps;
	double compress_ratio;
	double memcpy_fresh_mbps;
	struct bench_io_fio fio;    /* params unused */
	double swapin_p50_us, swapin_p99_us; /* per uswap_swap_in() (batch 1) */
	double limit_in_p50_us, limit_in_p99_us; /* per read of the limit
						    (nbd: nbd_pread) */
};

/* One measurement and its limits. */
struct bench_io_row {
	char spec[USWAP_SPEC_MAX_LEN + 1];
	char backend[48];           /* label: ram, zram-lz4, file-direct, ... */
	char kind[8];               /* ram, zram, file (under faulty wrappers) */
	char algo[8];               /* zram: lz4 or zstd */
	bool direct;                /* file: O_DIRECT */
	unsigned int order;
	unsigned int threads;
	unsigned int batch;         /* folios per swap call (opts.batch) */
	bool queue;                 /* opts.queue */
	bool warm;                  /* opts.warm */
	uint64_t bytes;             /* moved each way */
	double swapout_s, swapin_s; /* wall time of each phase */
	double swapout_mbps, swapin_mbps;
	double limit_out_mbps;      /* NAN: no limit (fio missing, failed) */
	double limit_in_mbps;
	const char *limit_out_what; /* e.g. "memcpy", "LZ4_compress_default" */
	const char *limit_in_what;
	char limit_note[96];        /* why a limit is missing; "" */
	double compress_ratio;      /* zram limit: bytes in / compressed; NAN */
	double memcpy_fresh_mbps;   /* ram: memcpy of the folios into fresh
				       (unfaulted) memory, the ceiling of a
				       store that faults its pages in; NAN */
	double swapin_p50_us;       /* latency of one uswap_swap_in(), µs, with
				       --batch 1; NAN otherwise */
	double swapin_p99_us;
	double limit_in_p50_us;     /* nbd: latency of one nbd_pread() of a
				       folio on the same server; NAN */
	double limit_in_p99_us;
	struct bench_io_fio fio;    /* file only */
	bool drop_caches;           /* page cache dropped before swap-in */
	double target_out_pct;      /* the target; NAN = none */
	double target_in_pct;
	/* Summed over the repetitions: */
	uint64_t swpin_cached;      /* swap-ins served by the swap cache */
	uint64_t write_errors;      /* failed device writes (retried) */
	uint64_t read_errors;
	/* Per swapped-out folio, last repetition (counts, not times): */
	double cluster_locks_out;   /* cluster-lock acquisitions */
	double shared_locks_out;    /* device and global lock acquisitions */
	unsigned int rep;           /* repetition being measured (0-based) */
	unsigned int nr_runs;       /* repetitions done; figures are medians */
	struct bench_io_sample run[BENCH_IO_MAX_REPEAT];
};

struct bench_io_machine {
	long nproc;                 /* online CPUs */
	char kernel[128];           /* uname release */
	char arch[65];              /* uname machine */
	char cpu[128];              /* /proc/cpuinfo model name, or "" */
};

/* ------------------------------------------------------------------------
 * bench_io.c: options, the run, files and caches
 * ---------------------------------------------------------------------- */
int cmd_bench_io(int argc, char **argv);

/* Write "1" to /proc/sys/vm/drop_caches after sync(). Return: 0 or
 * -errno, with a reason in @err. */
int bench_io_drop_caches(char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * bench_io_run.c: the data and one uswap measurement
 * ---------------------------------------------------------------------- */

/* Fill @d with @size bytes from @path repeated (NULL: the default text
 * file, else generated text). Return: 0 or -errno with @err set. */
int bench_io_data_init(struct bench_io_data *d, size_t size, const char *path,
		       char *err, size_t errlen);
void bench_io_data_fini(struct bench_io_data *d);

/*
 * bench_io_measure() - the uswap part of @row (spec, order, threads set
 * by the caller; bytes is the wanted size and is lowered to what the
 * device holds). With @drop_caches the page cache is dropped between the
 * two phases. A swapped-in byte that differs from the source is an error.
 * Return: 0; -errno with a one-line reason in @err.
 */
int bench_io_measure(struct bench_io_data *d, struct bench_io_row *row,
		     bool drop_caches, char *err, size_t errlen);

/* Run @fn(arg, i) on @threads threads released together; returns the wall
 * time from the release to the last thread's end, in seconds. Used by the
 * uswap phases and by the limits alike, so both are timed the same way. */
typedef void (*bench_io_thread_fn)(void *arg, unsigned int i);
double bench_io_run_threads(unsigned int threads, bench_io_thread_fn fn, void *arg);

/* ------------------------------------------------------------------------
 * bench_io_limit.c: raw limits
 * ---------------------------------------------------------------------- */

/* Fill the limit fields of @row (after bench_io_measure(), same bytes).
 * Results are cached across rows where they cannot differ. Return: 0;
 * -errno with @err set (an error of the limit itself, not a missing fio). */
/* The nbd limit (bench_io_nbd.c): libnbd's nbd_pwrite/nbd_pread of the
 * same folios to the export at @uri, one connection per thread, with the
 * reads' latency percentiles. Built with libnbd only (meson option nbd);
 * without it no nbd spec is accepted, so nothing asks for this limit. */
#if USWAP_HAVE_NBD
int bench_io_limit_nbd(struct bench_io_data *d, struct bench_io_row *row,
		       const char *uri, char *err, size_t errlen);
#else
static inline int bench_io_limit_nbd(struct bench_io_data *d, struct bench_io_row *row,
				     const char *uri, char *err, size_t errlen)
{
	(void)d, (void)row, (void)uri;
	snprintf(err, errlen, "nbd limit: uswap-bench was built without libnbd");
	return -ENOTSUP;
}
#endif

/* p50 and p99 of @n latencies in ns (sorted in place), in µs
 * (bench_io_run.c). */
void bench_io_percentiles(uint64_t *ns, size_t n, double *p50_us, double *p99_us);

int bench_io_limit(struct bench_io_data *d, struct bench_io_row *row,
		   bool drop_caches, char *err, size_t errlen);
void bench_io_limit_fini(void);
/* Path of the fio executable, or NULL when it is not installed. */
const char *bench_io_fio_path(void);

/* ------------------------------------------------------------------------
 * bench_io_report.c: table and JSON
 * ---------------------------------------------------------------------- */
void bench_io_machine_get(struct bench_io_machine *m);
void bench_io_print_table(const struct bench_io_opts *opts,
			  const struct bench_io_data *d,
			  const struct bench_io_machine *m,
			  const struct bench_io_row *rows, unsigned int nr);
void bench_io_print_json(const struct bench_io_opts *opts,
			 const struct bench_io_data *d,
			 const struct bench_io_machine *m,
			 const struct bench_io_row *rows, unsigned int nr);

#endif /* USWAP_TOOLS_BENCH_IO_H */
