/* SPDX-License-Identifier: MIT */
/*
 * bench_usemem.h - `uswap bench usemem`: vm-scalability's usemem on the
 * userfaultfd pager.
 *
 * Glossary:
 *  worker     one thread with its own region of --size bytes;
 *  pass       one sweep of a worker over every page of its region: a
 *             write pass stores every byte of every page, a read pass
 *             reads every byte back and checks it;
 *  round      a write pass, a read pass and (--read-again) a second read
 *             pass; --repeat rounds in all (--read-only: read passes only,
 *             over memory never written, which must read as zeroes);
 *  tag        the first 8 bytes of every page: pass generation, worker and
 *             page number, so a page from elsewhere or from an older pass
 *             is caught even when the data around it is the same.
 *
 * Declarations are grouped by the file that defines them.
 */
#ifndef USWAP_TOOLS_BENCH_USEMEM_H
#define USWAP_TOOLS_BENCH_USEMEM_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uswap/uswap.h>

#define USEMEM_MAX_WORKERS  255   /* worker number is 8 bits of the tag */
#define USEMEM_MAX_DEVICES  USWAP_MAX_DEVICES
#define USEMEM_MAX_PASSES   256
#define USEMEM_MAX_REPEAT   (USEMEM_MAX_PASSES / 3)

enum usemem_pass {
	USEMEM_PASS_WRITE,
	USEMEM_PASS_READ,
	USEMEM_PASS_MAX
};

/* The command line, validated. */
struct usemem_opts {
	unsigned int workers;        /* (=2) */
	uint64_t size;               /* bytes per worker (=256M) */
	uint64_t limit;              /* resident bytes; 0 = half the working set */
	unsigned int nr_devices;     /* 0 = the default set */
	const char *devices[USEMEM_MAX_DEVICES];
	unsigned int order;          /* folio order 0..4 (=0) */
	const char *data;            /* --data FILE, or NULL for the pattern */
	unsigned int repeat;         /* rounds (=1) */
	bool random;                 /* page order within a pass */
	bool read_only;
	bool read_again;
	unsigned int handlers;       /* 0 = one per worker */
	unsigned int spin_us;        /* 0 = library default */
	bool no_spin;
	bool no_kswapd;              /* USWAP_PAGER_NO_KSWAPD */
	bool no_move;                /* USWAP_PAGER_NO_MOVE */
	unsigned int readahead;      /* pages; 0 = off */
	unsigned int batch;          /* reclaim batch pages; 0 = default */
	bool keep_cache;             /* USWAP_SWAP_KEEP_CACHE */
	bool no_keep_clean;
	bool kernel_faults;          /* --uffd-kernel-faults */
	bool no_pager;               /* plain memory: the kernel's own swap */
	uint64_t seed;
	bool json;
};

/* Shared, read-only after setup: what every page should hold. */
struct usemem_content {
	const uint8_t *pat;          /* --data: the file repeated; NULL = pattern */
	uint64_t pat_len;            /* the file's length */
};

/* One worker. Cache-line aligned: workers never share a line. */
struct usemem_worker {
	_Alignas(64) const struct usemem_opts *opts;
	const struct usemem_content *content;
	struct usemem_sync *sync;
	unsigned int id;
	uint8_t *mem;                /* the region (or plain mapping) */
	uint64_t nr_pages;
	uint32_t *perm;              /* --random: page order of this pass */
	uint64_t rng;
	unsigned int nr_passes;
	enum usemem_pass pass_kind[USEMEM_MAX_PASSES];
	uint64_t pass_gen[USEMEM_MAX_PASSES]; /* generation written / checked */
	uint64_t pass_ns[USEMEM_MAX_PASSES];
	uint64_t start_ns, end_ns;
	uint64_t bytes;              /* touched: size x passes */
	_Atomic uint64_t progress;   /* pages done, all passes */
	uint64_t bad_pages;          /* pages that failed the check */
	uint64_t first_bad_page;
	unsigned int first_bad_pass;
	uint64_t first_bad_want, first_bad_got; /* tags */
	unsigned int cur_pass;       /* the pass running */
	bool sigbus;                 /* stopped by a SIGBUS: a page lost */
	void *bus_addr;              /* ... at this address */
	pthread_t tid;
};

struct usemem_sync {
	pthread_barrier_t start;
	atomic_uint done;
};

/* What the report needs. */
struct usemem_dev_peak {
	struct uswap_device_info info;  /* at the end of the run */
	uint64_t used_kb_peak;
};

struct usemem_result {
	unsigned int nr_workers;
	struct usemem_worker *w;
	double wall_s, user_s, sys_s;
	double pass_kbps[USEMEM_PASS_MAX]; /* bytes / elapsed over workers,
					      summed per pass kind */
	uint64_t bad_pages;
	unsigned int nr_devices;
	struct usemem_dev_peak dev[USEMEM_MAX_DEVICES];
	struct uswap_stats swap;           /* delta over the run */
	struct uswap_pager_stats pager;
	uint64_t limit_bytes;
	/* --no-pager: the kernel's counters (/proc/vmstat deltas) */
	uint64_t k_pswpout, k_pswpin;
	char kswaps[2048];                  /* /proc/swaps at the peak */
};

/* ------------------------------------------------------------------------
 * bench_usemem.c: options, setup, the run
 * ---------------------------------------------------------------------- */
int cmd_bench_usemem(int argc, char **argv);
/* `uswap bench fault` (bench_fault.c): the pager's fault round trip. */
int cmd_bench_fault(int argc, char **argv);
/* `uswap bench uffd` (bench_uffd.c): a fault served in-process against
 * across processes, with no swap path (the issue 23 design question). */
int cmd_bench_uffd(int argc, char **argv);
/* `uswap bench zap` (bench_zap.c): a zap batch, madvise() per range
 * against uswap_pager_zap_self(). */
int cmd_bench_zap(int argc, char **argv);

/* Load FILE as page contents (the file repeated past its length + one
 * page); errors are printed as `uswap CMD: ...`. Return: 0 or an exit
 * code. c->pat is malloc'ed and owned by the caller. Shared with
 * `uswap bench fault`. */
int usemem_load_data(const char *cmd, const char *path, struct usemem_content *c);
/* Say how to get userfaultfd permission; return CLI_EXIT_RUNTIME. */
int usemem_explain_eperm(const char *cmd);

/* ------------------------------------------------------------------------
 * bench_usemem_worker.c: passes, page contents, checks
 * ---------------------------------------------------------------------- */
/* Plan the passes of @w from the options. */
void usemem_worker_plan(struct usemem_worker *w);
void *usemem_worker_main(void *arg);
/* SIGBUS handler (SA_SIGINFO): a worker touching a lost page stops. */
void usemem_on_sigbus(int sig, siginfo_t *si, void *uc);

/* ------------------------------------------------------------------------
 * bench_usemem_report.c
 * ---------------------------------------------------------------------- */
void usemem_print_text(const struct usemem_opts *o, const struct usemem_result *res);
void usemem_print_json(const struct usemem_opts *o, const struct usemem_result *res);

#endif /* USWAP_TOOLS_BENCH_USEMEM_H */
