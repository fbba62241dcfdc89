/* SPDX-License-Identifier: MIT */
/*
 * bench_alloc.h - `uswap bench alloc`: the allocator benchmark.
 *
 * Glossary (docs/design.md terms):
 *  request  one folio the benchmark wants swap slots for: an order drawn
 *           from the order mix; served by one uswap_alloc() of that order,
 *           or, after -E2BIG, by 2^order order-0 allocations (the split);
 *  pair     one successful uswap_alloc() and the uswap_put_folio() that
 *           frees it; "ops" in the output are pairs;
 *  window   the live folios one worker thread holds; fifo frees the oldest
 *           once the window is full, random a random one, pair keeps none.
 *
 * Declarations are grouped by the file that defines them.
 */
#ifndef USWAP_TOOLS_BENCH_ALLOC_H
#define USWAP_TOOLS_BENCH_ALLOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uswap/lab.h>
#include <uswap/slots.h>
#include <uswap/uswap.h>

enum bench_pattern {
	BENCH_PATTERN_FIFO,   /* free the oldest live folio */
	BENCH_PATTERN_RANDOM, /* free a random live folio */
	BENCH_PATTERN_PAIR,   /* free each folio right after allocating it */
	BENCH_PATTERN_MAX
};

#define BENCH_MAX_THREADS 1024 /* --threads */
#define BENCH_MAX_POINTS    32 /* thread counts of one --threads LIST */
#define BENCH_MAX_BASELINES 32 /* --baseline FILE given */

/* The command line, validated. */
struct bench_alloc_opts {
	unsigned int threads;                      /* worker threads of this run (=1) */
	unsigned int thread_list[BENCH_MAX_POINTS]; /* --threads LIST, in order */
	unsigned int nr_points;                    /* values in the list (=1) */
	const char *svg;                           /* --svg FILE, or NULL */
	const char *baseline[BENCH_MAX_BASELINES]; /* --baseline FILEs */
	unsigned int nr_baselines;
	unsigned int order_weight[USWAP_NR_ORDERS]; /* 0 = unused (=0:1) */
	unsigned int devices;                      /* (=4) */
	int prio[USWAP_MAX_DEVICES];               /* per device (=-1) */
	uint64_t device_slots;                     /* nr_slots incl. header (=262144) */
	double duration_s;                         /* timed phase (=2) */
	uint64_t ops;                              /* pairs over all threads; 0 = duration */
	unsigned int window;                       /* live folios per thread (=1024) */
	enum bench_pattern pattern;                /* (=fifo) */
	unsigned int quota;                        /* ring_quota; 0 = library default */
	unsigned int nr_cpus;                      /* config nr_cpus; 0 = host */
	bool pin_cpu;                              /* uswap_thread_set_cpu(i % nr_cpus) */
	bool json;                                 /* one JSON object on stdout */
	bool check;                                /* uswap_check() after the run */
	uint64_t seed;                             /* PRNG seed (=1) */
};

/* What one worker did in the timed phase; summed over workers. */
struct bench_counts {
	uint64_t requests;                  /* folios requested */
	uint64_t allocs;                    /* uswap_alloc() calls returning 0 */
	uint64_t frees;                     /* uswap_put_folio() calls: pairs */
	uint64_t enospc;                    /* -ENOSPC: oldest folio freed, retried */
	uint64_t split[USWAP_NR_ORDERS];    /* -E2BIG: served as order-0 slots */
};

/* One live folio in a worker's window. */
struct bench_folio {
	uint64_t val;       /* uswap_entry_t.val of the first slot */
	unsigned int order;
};

/* Shared by the main thread and the workers of one run. */
struct bench_sync {
	pthread_barrier_t ready; /* warm-up done: main reads stats, clock */
	pthread_barrier_t go;    /* timed phase starts */
	atomic_bool stop;        /* end of the timed phase, or a failure */
	atomic_bool failed;      /* some worker saw an unexpected error */
	atomic_uint done;        /* workers out of the timed phase */
};

/* Per-thread state, cache-line aligned so workers never share a line. */
struct bench_worker {
	_Alignas(64) struct uswap *u;
	const struct bench_alloc_opts *opts;
	struct bench_sync *sync;
	unsigned int id;
	int cpu;                     /* uswap_thread_set_cpu() value, or -1 */
	unsigned int keep;           /* live folios kept after each request */
	uint64_t rng;                /* splitmix64 state */
	unsigned int mix_nr;         /* orders in the mix */
	unsigned int mix_order[USWAP_NR_ORDERS];
	uint64_t mix_cum[USWAP_NR_ORDERS]; /* cumulative weights */
	struct bench_folio *ring;    /* window, oldest at head */
	size_t ring_mask;            /* capacity - 1 (a power of two) */
	size_t head, live;
	struct bench_counts counts;  /* timed phase only */
	_Atomic uint64_t progress;   /* counts.frees, published for progress */
	uint64_t end_ns;             /* CLOCK_MONOTONIC at end of timed phase */
	int err;                     /* first unexpected library error */
	const char *err_call;        /* the call that returned it */
	unsigned int err_order;
	bool starved;                /* -ENOSPC for too long, holding nothing */
	pthread_t tid;
};

/* Everything the report needs, read after the timed phase. */
struct bench_alloc_result {
	double elapsed_s;                  /* timed phase, slowest worker */
	struct bench_counts counts;        /* summed over workers */
	struct uswap_stats delta;          /* stats after - before */
	unsigned int nr_devices;
	struct uswap_device_info dev[USWAP_MAX_DEVICES]; /* at end of run */
	unsigned int quota;                /* effective ring quota */
	unsigned int nr_cpus;              /* effective nr_cpus */
	uint64_t metadata_static;          /* bytes, all devices, before use */
	uint64_t metadata_peak;            /* bytes, largest sample of the run */
};

/* ------------------------------------------------------------------------
 * bench_alloc.c: options, setup, the main thread's part of a run
 * ---------------------------------------------------------------------- */
int cmd_bench_alloc(int argc, char **argv);
/* `uswap bench lock` (bench_lock.c): lock and cache-line costs. */
int cmd_bench_lock(int argc, char **argv);
const char *bench_pattern_name(enum bench_pattern p);

/*
 * bench_alloc_measure() - one run of @opts (@opts->threads workers) with
 * nothing printed but errors: @res as the table reports it, every folio
 * freed and each device checked empty afterwards.
 * Return: 0, or CLI_EXIT_RUNTIME after saying why on stderr.
 */
int bench_alloc_measure(const struct bench_alloc_opts *opts,
			struct bench_alloc_result *res);

/* ------------------------------------------------------------------------
 * bench_alloc_scale.c: --threads LIST, --svg and --baseline
 * ---------------------------------------------------------------------- */

/* One row of the scaling table, from one run or from a baseline file. */
struct bench_alloc_point {
	unsigned int threads;
	double ops_per_sec;         /* pairs per second, all threads */
	double ns_per_op;           /* per thread: elapsed * threads / pairs */
	double shared_per_1k;       /* device + global lock acquisitions / 1k allocs */
	double shared_contended_per_1k; /* of them, found held */
	double cluster_contended_per_1k;
};

/*
 * bench_alloc_scale() - a run per thread count of @opts->thread_list,
 * each on a fresh instance, then the scaling table (or one JSON object
 * with every run's full report), the --baseline comparison and the --svg
 * chart. Return: the exit status (CLI_EXIT_*).
 */
int bench_alloc_scale(const struct bench_alloc_opts *opts);

/* ------------------------------------------------------------------------
 * bench_alloc_worker.c: the worker threads
 * ---------------------------------------------------------------------- */

/* Set up @w's window and order mix; @cpu is the per-CPU index to pin
 * (uswap_thread_set_cpu()), or -1 for sched_getcpu().
 * Return: 0 or -ENOMEM. */
int bench_worker_init(struct bench_worker *w, struct uswap *u,
		      const struct bench_alloc_opts *opts,
		      struct bench_sync *sync, unsigned int id, int cpu);
/* pthread entry: warm up, wait for the start, run the timed phase. */
void *bench_worker_main(void *arg);
/* Free every live folio (after the run, single-threaded). */
int bench_worker_drain(struct bench_worker *w);
void bench_worker_fini(struct bench_worker *w);

/* ------------------------------------------------------------------------
 * bench_alloc_report.c: human table and JSON
 * ---------------------------------------------------------------------- */
void bench_alloc_print_table(const struct bench_alloc_opts *opts,
			     const struct bench_alloc_result *res,
			     struct uswap *u);
void bench_alloc_print_json(const struct bench_alloc_opts *opts,
			    const struct bench_alloc_result *res);
struct cli_json;
/* The members of one run's JSON object (as --json prints), into @j's
 * open object. */
void bench_alloc_json_members(struct cli_json *j, const struct bench_alloc_opts *opts,
			      const struct bench_alloc_result *res);
/* The scaling table's row of one run. */
void bench_alloc_point_of(const struct bench_alloc_opts *opts,
			  const struct bench_alloc_result *res,
			  struct bench_alloc_point *pt);

#endif /* USWAP_TOOLS_BENCH_ALLOC_H */
