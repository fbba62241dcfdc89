/* SPDX-License-Identifier: MIT */
/*
 * bench_alloc.c - `uswap bench alloc`: options, swap-system setup and the
 * main thread's part of a run.
 *
 * A run: create an instance with --devices equal devices, start the
 * workers (bench_alloc_worker.c), let them fill their windows, read the
 * statistics and the clock, release them for the timed phase, stop them,
 * read the statistics again and report the deltas (bench_alloc_report.c).
 * Afterwards every live folio is freed and the devices must be empty.
 */
#include "bench_alloc.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "bench alloc"

#define MAX_WINDOW      (1u << 24)
#define MAX_WEIGHT      1000000u
#define MAX_DURATION_S  1e6
#define NS_PER_SEC      1000000000ull
#define TICK_NS         (100 * 1000000ull) /* main thread's polling period */
#define PROGRESS_AFTER_S 3.0               /* longer runs show progress */

static const char usage_text[] =
"Usage: uswap bench alloc [OPTIONS]\n"
"\n"
"Allocator benchmark: worker threads get swap slots for folios with\n"
"uswap_alloc() and free them with uswap_put_folio() on a swap system of\n"
"equal-sized in-memory devices. Reports alloc+free pairs per second, ns\n"
"per pair, fallback % per order, equal-priority balance, lock traffic and\n"
"metadata size, measured over the timed phase after a warm-up; metadata\n"
"per slot is given before any allocation (static), at the largest figure\n"
"sampled during the run (peak) and at its end.\n"
"\n"
"Workload:\n"
"  --threads N|LIST    worker threads (default 1); a comma list (1,2,4,8)\n"
"                      runs once per value, each on a fresh swap system,\n"
"                      and prints a scaling table: pairs/s, ns per pair,\n"
"                      speedup, shared locks and contended locks per 1k\n"
"  --orders SPEC       order mix ORDER[:WEIGHT],...; orders 0..9, e.g.\n"
"                      0:90,4:10 (default 0)\n"
"  --pattern P         fifo    keep WINDOW live folios, free the oldest\n"
"                      random  keep WINDOW live folios, free a random one\n"
"                      pair    free each folio right after allocating it\n"
"                      (default fifo)\n"
"  --window N          live folios kept per thread; for pair, warm-up\n"
"                      pairs (default 1024)\n"
"  --duration SECONDS  length of the timed phase (default 2)\n"
"  --ops N             total alloc+free pairs over all threads instead of\n"
"                      a duration\n"
"  --seed N            seed for the order and victim choices (default 1)\n"
"\n"
"Swap system:\n"
"  --devices N         number of devices, 1..32 (default 4)\n"
"  --device-size SIZE  size of each device, suffix K/M/G/T (default 1G,\n"
"                      i.e. 262144 slots of 4 KiB; at least 4M)\n"
"  --prio LIST         comma list of priorities per device, -1..32767; a\n"
"                      single value applies to all (default -1)\n"
"  --quota N           ring quota: allocations from one device before a\n"
"                      CPU moves to the next equal-priority device\n"
"                      (0 = library default, 64)\n"
"  --cpus N            CPUs the instance's per-CPU state is sized for\n"
"                      (uswap_config.nr_cpus; 0 = host CPUs)\n"
"  --pin-cpu           worker i uses per-CPU index i % CPUS instead of\n"
"                      sched_getcpu()\n"
"\n"
"Output:\n"
"  --json              print one JSON object on stdout (no progress line\n"
"                      unless stderr is a terminal)\n"
"  --check             run uswap_check() after freeing everything\n"
"  --svg FILE.svg      draw the scaling (pairs/s and ns per pair against\n"
"                      threads) with gnuplot; a note and no file without it\n"
"  --baseline FILE     a JSON report of this command (one run, or a\n"
"                      scaling's \"runs\") to compare with: its figures at\n"
"                      the same thread counts, and the ratio; repeatable\n"
"  -h, --help          show this help\n"
"\n"
"On -E2BIG a folio is split: 2^order order-0 slots are allocated instead\n"
"(counted as a fallback). On -ENOSPC the thread frees its oldest live folio\n"
"and retries (counted). A pair is one successful uswap_alloc() and the\n"
"uswap_put_folio() that frees it; ns per pair is elapsed * threads / pairs.\n"
"After the run every folio is freed and each device must be empty. Runs\n"
"longer than 3 s print a progress line on stderr every second.\n"
"\n"
"Exit status: 0 success, 1 runtime error, 2 usage error.\n";

enum {
	OPT_THREADS = 256, OPT_ORDERS, OPT_DEVICES, OPT_PRIO, OPT_DEVICE_SIZE,
	OPT_DURATION, OPT_OPS, OPT_WINDOW, OPT_PATTERN, OPT_QUOTA, OPT_CPUS,
	OPT_PIN_CPU, OPT_JSON, OPT_SEED, OPT_CHECK, OPT_SVG, OPT_BASELINE,
};

static const struct option long_options[] = {
	{ "threads",     required_argument, NULL, OPT_THREADS },
	{ "orders",      required_argument, NULL, OPT_ORDERS },
	{ "devices",     required_argument, NULL, OPT_DEVICES },
	{ "prio",        required_argument, NULL, OPT_PRIO },
	{ "device-size", required_argument, NULL, OPT_DEVICE_SIZE },
	{ "duration",    required_argument, NULL, OPT_DURATION },
	{ "ops",         required_argument, NULL, OPT_OPS },
	{ "window",      required_argument, NULL, OPT_WINDOW },
	{ "pattern",     required_argument, NULL, OPT_PATTERN },
	{ "quota",       required_argument, NULL, OPT_QUOTA },
	{ "cpus",        required_argument, NULL, OPT_CPUS },
	{ "pin-cpu",     no_argument,       NULL, OPT_PIN_CPU },
	{ "json",        no_argument,       NULL, OPT_JSON },
	{ "seed",        required_argument, NULL, OPT_SEED },
	{ "check",       no_argument,       NULL, OPT_CHECK },
	{ "svg",         required_argument, NULL, OPT_SVG },
	{ "baseline",    required_argument, NULL, OPT_BASELINE },
	{ "help",        no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const pattern_names[BENCH_PATTERN_MAX] = {
	[BENCH_PATTERN_FIFO] = "fifo",
	[BENCH_PATTERN_RANDOM] = "random",
	[BENCH_PATTERN_PAIR] = "pair",
};

const char *bench_pattern_name(enum bench_pattern p)
{
	return pattern_names[p];
}

/* ------------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------- */

/* Priorities are checked against --devices once every option is read. */
struct prio_arg {
	int vals[USWAP_MAX_DEVICES];
	int nr; /* 0 = not given */
};

static void opts_default(struct bench_alloc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->threads = 1;
	o->thread_list[0] = 1;
	o->nr_points = 1;
	o->order_weight[0] = 1;
	o->devices = 4;
	o->device_slots = (1ull << 30) / USWAP_PAGE_SIZE;
	o->duration_s = 2.0;
	o->window = 1024;
	o->pattern = BENCH_PATTERN_FIFO;
	o->seed = 1;
}

/* One "ORDER[:WEIGHT]" item of --orders at *@s; *@s is left after it. */
static int parse_mix_item(const char **s, unsigned int weight[])
{
	char *end;
	unsigned long order, w = 1;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	order = strtoul(*s, &end, 10);
	if (order > USWAP_MAX_ORDER || weight[order])
		return -ERANGE;
	if (*end == ':') {
		const char *ws = end + 1;

		if (*ws < '0' || *ws > '9')
			return -EINVAL;
		w = strtoul(ws, &end, 10);
		if (w < 1 || w > MAX_WEIGHT)
			return -ERANGE;
	}
	weight[order] = (unsigned int)w;
	*s = end;
	return 0;
}

static int parse_order_mix(const char *s, unsigned int weight[USWAP_NR_ORDERS])
{
	memset(weight, 0, USWAP_NR_ORDERS * sizeof(weight[0]));
	for (;;) {
		int err = parse_mix_item(&s, weight);

		if (err)
			return err;
		if (*s == '\0')
			return 0;
		if (*s++ != ',')
			return -EINVAL;
	}
}

static int parse_pattern(const char *s, enum bench_pattern *p)
{
	for (int i = 0; i < BENCH_PATTERN_MAX; i++) {
		if (!strcmp(s, pattern_names[i])) {
			*p = (enum bench_pattern)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_device_size(const char *s, uint64_t *slots)
{
	uint64_t bytes;
	int err = cli_parse_size(s, &bytes);

	if (err)
		return err;
	if (bytes % USWAP_PAGE_SIZE)
		return -EINVAL;
	*slots = bytes / USWAP_PAGE_SIZE;
	if (*slots < (uint64_t)USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS ||
	    *slots > UINT32_MAX)
		return -ERANGE;
	return 0;
}

/* --threads N or a comma list of them; the first is the single run's. */
static int parse_thread_list(struct bench_alloc_opts *o, const char *arg)
{
	int v[BENCH_MAX_POINTS];
	int n = cli_parse_int_list(arg, 1, BENCH_MAX_THREADS, v, BENCH_MAX_POINTS);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		o->thread_list[i] = (unsigned int)v[i];
	o->nr_points = (unsigned int)n;
	o->threads = o->thread_list[0];
	return 0;
}

/* Apply one parsed option. Return: 0 or -EINVAL/-ERANGE. */
static int apply_option(struct bench_alloc_opts *o, struct prio_arg *prio,
			int opt, const char *arg)
{
	switch (opt) {
	case OPT_THREADS:
		return parse_thread_list(o, arg);
	case OPT_ORDERS:
		return parse_order_mix(arg, o->order_weight);
	case OPT_DEVICES:
		return cli_parse_uint(arg, 1, USWAP_MAX_DEVICES, &o->devices);
	case OPT_PRIO:
		prio->nr = cli_parse_int_list(arg, USWAP_PRIO_DEFAULT, USWAP_PRIO_MAX,
					      prio->vals, USWAP_MAX_DEVICES);
		return prio->nr < 0 ? prio->nr : 0;
	case OPT_DEVICE_SIZE:
		return parse_device_size(arg, &o->device_slots);
	case OPT_DURATION:
		if (cli_parse_seconds(arg, &o->duration_s) ||
		    o->duration_s > MAX_DURATION_S)
			return -ERANGE;
		return 0;
	case OPT_OPS:
		return cli_parse_u64(arg, 1, UINT64_MAX, &o->ops);
	case OPT_WINDOW:
		return cli_parse_uint(arg, 1, MAX_WINDOW, &o->window);
	case OPT_PATTERN:
		return parse_pattern(arg, &o->pattern);
	case OPT_QUOTA:
		return cli_parse_uint(arg, 0, UINT32_MAX, &o->quota);
	case OPT_CPUS:
		return cli_parse_uint(arg, 0, USWAP_MAX_CPUS, &o->nr_cpus);
	case OPT_SEED:
		return cli_parse_u64(arg, 0, UINT64_MAX, &o->seed);
	case OPT_PIN_CPU:
		o->pin_cpu = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_CHECK:
		o->check = true;
		return 0;
	case OPT_SVG:
		o->svg = arg;
		return 0;
	case OPT_BASELINE:
		if (o->nr_baselines == BENCH_MAX_BASELINES)
			return -ERANGE;
		o->baseline[o->nr_baselines++] = arg;
		return 0;
	}
	return -EINVAL;
}

/* What a valid value looks like, for the usage error. */
static const char *option_hint(int opt)
{
	switch (opt) {
	case OPT_THREADS:     return "1..1024, or a comma list of up to 32 of them";
	case OPT_BASELINE:    return "at most 32 files";
	case OPT_ORDERS:      return "ORDER[:WEIGHT],..., orders 0..9 once each, "
				     "weights 1..1000000";
	case OPT_DEVICES:     return "1..32";
	case OPT_PRIO:        return "comma list of -1..32767";
	case OPT_DEVICE_SIZE: return "a multiple of 4K, at least 4M, below 16T";
	case OPT_DURATION:    return "seconds, > 0 and <= 1000000";
	case OPT_OPS:         return "at least 1";
	case OPT_WINDOW:      return "1..16777216";
	case OPT_PATTERN:     return "fifo, random or pair";
	case OPT_QUOTA:       return "0..4294967295";
	case OPT_CPUS:        return "0..1024";
	case OPT_SEED:        return "0..18446744073709551615";
	}
	return "see --help";
}

static int finish_prio(struct bench_alloc_opts *o, const struct prio_arg *prio)
{
	for (unsigned int i = 0; i < o->devices; i++) {
		if (prio->nr == 0)
			o->prio[i] = USWAP_PRIO_DEFAULT;
		else if (prio->nr == 1)
			o->prio[i] = prio->vals[0];
		else if ((unsigned int)prio->nr == o->devices)
			o->prio[i] = prio->vals[i];
		else
			return cli_usage_error(CMD, "--prio has %d values for %u devices "
					       "(give one, or one per device)",
					       prio->nr, o->devices);
	}
	return 0;
}

/*
 * parse_opts() - fill @o from the command line.
 * Return: 0 to run; CLI_EXIT_USAGE after a message; -1 when --help was
 * printed (exit 0).
 */
static int parse_opts(int argc, char **argv, struct bench_alloc_opts *o)
{
	struct prio_arg prio = { .nr = 0 };
	int opt;

	opts_default(o);
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":h", long_options, usage_text)) > 0)
		if (apply_option(o, &prio, opt, optarg))
			return cli_usage_error(CMD, "invalid --%s value '%s' (%s)",
					       cli_option_name(long_options, opt), optarg,
					       option_hint(opt));
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (o->svg && cli_plot_name(CMD, "--svg", o->svg))
		return CLI_EXIT_USAGE;
	return finish_prio(o, &prio);
}

/* ------------------------------------------------------------------------
 * The swap system
 * ---------------------------------------------------------------------- */

static unsigned int effective_cpus(const struct bench_alloc_opts *o)
{
	long host;

	if (o->nr_cpus)
		return o->nr_cpus;
	host = sysconf(_SC_NPROCESSORS_CONF);
	if (host < 1)
		return 1;
	return host > USWAP_MAX_CPUS ? USWAP_MAX_CPUS : (unsigned int)host;
}

static int make_instance(const struct bench_alloc_opts *o, struct uswap **out,
			 int types[])
{
	struct uswap_config cfg = { .nr_cpus = o->nr_cpus, .ring_quota = o->quota };
	struct uswap *u;
	int err;

	err = uswap_create(&cfg, &u);
	if (err)
		return cli_runtime_error(CMD, "uswap_create: %s", cli_errno_name(err));
	for (unsigned int i = 0; i < o->devices; i++) {
		struct uswap_swapon_args args = {
			.nr_slots = o->device_slots,
			.prio = o->prio[i],
		};
		int type = uswap_swapon(u, &args);

		if (type < 0) {
			uswap_destroy(u);
			return cli_runtime_error(CMD, "uswap_swapon(device %u): %s",
						 i, cli_errno_name(type));
		}
		types[i] = type;
	}
	*out = u;
	return 0;
}

/* ------------------------------------------------------------------------
 * The main thread's part of a run
 * ---------------------------------------------------------------------- */

struct bench_run {
	const struct bench_alloc_opts *opts;
	struct uswap *u;
	int types[USWAP_MAX_DEVICES];
	struct bench_sync sync;
	struct bench_worker *workers;
	struct uswap_stats before, after;
	uint64_t t0_ns;
	uint64_t meta_static; /* metadata_bytes summed before any allocation */
	uint64_t meta_peak;   /* largest sum sampled since (main thread) */
};

/* Sum the devices' metadata_bytes now. */
static uint64_t metadata_sum(const struct bench_run *r)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < r->opts->devices; i++) {
		struct uswap_device_info info;

		if (uswap_device_info(r->u, r->types[i], &info) == 0)
			sum += info.metadata_bytes;
	}
	return sum;
}

/* Keep the largest metadata figure seen: sampled every tick of the
 * timed phase and at its edges, when the windows are fullest. */
static void metadata_sample(struct bench_run *r)
{
	uint64_t now = metadata_sum(r);

	if (now > r->meta_peak)
		r->meta_peak = now;
}

static int read_stats(struct uswap *u, struct uswap_stats *st)
{
	int err;

	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	err = uswap_stats_get(u, st);
	if (err)
		return cli_runtime_error(CMD, "uswap_stats_get: %s", cli_errno_name(err));
	return 0;
}

static uint64_t sub(uint64_t after, uint64_t before)
{
	return after - before; /* counters only grow; wraps are not expected */
}

static void stats_delta(const struct uswap_stats *a, const struct uswap_stats *b,
			struct uswap_stats *d)
{
	memset(d, 0, sizeof(*d));
	d->size = a->size;
	d->version = a->version;
	for (int k = 0; k < USWAP_NR_ORDERS; k++) {
		d->swpout[k] = sub(a->swpout[k], b->swpout[k]);
		d->swpout_fallback[k] = sub(a->swpout_fallback[k], b->swpout_fallback[k]);
	}
	d->alloc_fast = sub(a->alloc_fast, b->alloc_fast);
	d->alloc_slow = sub(a->alloc_slow, b->alloc_slow);
	d->alloc_fail = sub(a->alloc_fail, b->alloc_fail);
	d->free_slots = sub(a->free_slots, b->free_slots);
	d->bad_free = sub(a->bad_free, b->bad_free);
	d->frag_scans = sub(a->frag_scans, b->frag_scans);
	d->cluster_moves = sub(a->cluster_moves, b->cluster_moves);
	d->ring_advance = sub(a->ring_advance, b->ring_advance);
	for (int c = 0; c < USWAP_LOCK_MAX; c++) {
		d->locks[c].acquired = sub(a->locks[c].acquired, b->locks[c].acquired);
		d->locks[c].contended = sub(a->locks[c].contended, b->locks[c].contended);
	}
}

static void sync_init(struct bench_sync *s, unsigned int threads)
{
	pthread_barrier_init(&s->ready, NULL, threads + 1);
	pthread_barrier_init(&s->go, NULL, threads + 1);
	atomic_init(&s->stop, false);
	atomic_init(&s->failed, false);
	atomic_init(&s->done, 0);
}

static void sync_fini(struct bench_sync *s)
{
	pthread_barrier_destroy(&s->ready);
	pthread_barrier_destroy(&s->go);
}

static int workers_create(struct bench_run *r)
{
	const struct bench_alloc_opts *o = r->opts;
	unsigned int nr_cpus = effective_cpus(o);

	r->workers = aligned_alloc(64, o->threads * sizeof(*r->workers));
	if (!r->workers)
		return cli_runtime_error(CMD, "out of memory");
	memset(r->workers, 0, o->threads * sizeof(*r->workers));
	for (unsigned int i = 0; i < o->threads; i++) {
		int cpu = o->pin_cpu ? (int)(i % nr_cpus) : -1;

		if (bench_worker_init(&r->workers[i], r->u, o, &r->sync, i, cpu))
			return cli_runtime_error(CMD, "out of memory for %u windows",
						 o->threads);
	}
	return 0;
}

/* The barriers count every worker: one that cannot start ends the run. */
static void workers_start(struct bench_run *r)
{
	for (unsigned int i = 0; i < r->opts->threads; i++) {
		int err = pthread_create(&r->workers[i].tid, NULL,
					 bench_worker_main, &r->workers[i]);

		if (err) {
			cli_runtime_error(CMD, "pthread_create: %s", strerror(err));
			exit(CLI_EXIT_RUNTIME);
		}
	}
}

static void workers_free(struct bench_run *r)
{
	if (!r->workers)
		return;
	for (unsigned int i = 0; i < r->opts->threads; i++)
		bench_worker_fini(&r->workers[i]);
	free(r->workers);
	r->workers = NULL;
}

static uint64_t pairs_so_far(const struct bench_run *r)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < r->opts->threads; i++)
		sum += atomic_load_explicit(&r->workers[i].progress,
					    memory_order_relaxed);
	return sum;
}

struct progress {
	bool enabled;
	uint64_t next_ns;     /* when the next line is due */
	uint64_t last_ns;
	uint64_t last_pairs;
};

/* Runs longer than PROGRESS_AFTER_S get one line per second on stderr. */
static void progress_init(struct progress *p, const struct bench_run *r)
{
	const struct bench_alloc_opts *o = r->opts;
	bool long_run = o->ops || o->duration_s > PROGRESS_AFTER_S;

	p->enabled = long_run && (!o->json || isatty(STDERR_FILENO));
	/* With --ops the length is unknown: stay quiet for the first seconds. */
	p->next_ns = r->t0_ns + (o->ops ? (uint64_t)PROGRESS_AFTER_S + 1 : 1) * NS_PER_SEC;
	p->last_ns = r->t0_ns;
	p->last_pairs = 0;
}

static void progress_tick(struct progress *p, const struct bench_run *r,
			  uint64_t now)
{
	uint64_t pairs;
	double dt;

	if (!p->enabled || now < p->next_ns)
		return;
	pairs = pairs_so_far(r);
	dt = (double)(now - p->last_ns) / NS_PER_SEC;
	fprintf(stderr, "uswap " CMD ": %5.0f s  %10.0f pairs/s  %llu pairs\n",
		(double)(now - r->t0_ns) / NS_PER_SEC,
		dt > 0 ? (double)(pairs - p->last_pairs) / dt : 0.0,
		(unsigned long long)pairs);
	p->last_ns = now;
	p->last_pairs = pairs;
	p->next_ns += NS_PER_SEC;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NS_PER_SEC), (long)(ns % NS_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Wait out the timed phase: the duration, the workers' --ops, or a failure. */
static void wait_timed_phase(struct bench_run *r)
{
	const struct bench_alloc_opts *o = r->opts;
	uint64_t deadline = UINT64_MAX;
	struct progress p;

	if (!o->ops)
		deadline = r->t0_ns + (uint64_t)(o->duration_s * NS_PER_SEC);
	progress_init(&p, r);
	for (;;) {
		uint64_t now = cli_now_ns();

		if (now >= deadline || atomic_load(&r->sync.failed) ||
		    atomic_load(&r->sync.done) == o->threads)
			break;
		progress_tick(&p, r, now);
		metadata_sample(r);
		sleep_until(min_u64(deadline, now + TICK_NS));
	}
	atomic_store(&r->sync.stop, true);
}

static int run_workers(struct bench_run *r)
{
	int err;

	sync_init(&r->sync, r->opts->threads);
	err = workers_create(r);
	if (err)
		return err;
	workers_start(r);
	pthread_barrier_wait(&r->sync.ready);
	metadata_sample(r); /* every window full after the warm-up */
	err = read_stats(r->u, &r->before);
	if (err)
		atomic_store(&r->sync.stop, true);
	r->t0_ns = cli_now_ns();
	pthread_barrier_wait(&r->sync.go);
	if (!err)
		wait_timed_phase(r);
	for (unsigned int i = 0; i < r->opts->threads; i++)
		pthread_join(r->workers[i].tid, NULL);
	metadata_sample(r);
	return err ? err : read_stats(r->u, &r->after);
}

/* Name the first failing worker; the others usually failed alike. */
static int report_worker_errors(const struct bench_run *r)
{
	const struct bench_worker *first = NULL;
	unsigned int nr_failed = 0;

	for (unsigned int i = 0; i < r->opts->threads; i++) {
		if (!r->workers[i].err)
			continue;
		if (!first)
			first = &r->workers[i];
		nr_failed++;
	}
	if (!first)
		return 0;
	if (first->starved)
		cli_runtime_error(CMD, "thread %u: no free slot for 2 s while holding "
				  "none (the other threads' windows hold every "
				  "slot): use a smaller --window, fewer --threads "
				  "or larger devices", first->id);
	else
		cli_runtime_error(CMD, "thread %u: %s(order %u) failed: %s",
				  first->id, first->err_call, first->err_order,
				  cli_errno_name(first->err));
	if (nr_failed > 1)
		fprintf(stderr, "uswap " CMD ": %u of %u threads failed\n",
			nr_failed, r->opts->threads);
	return CLI_EXIT_RUNTIME;
}

static void sum_counts(struct bench_counts *sum, const struct bench_counts *c)
{
	sum->requests += c->requests;
	sum->allocs += c->allocs;
	sum->frees += c->frees;
	sum->enospc += c->enospc;
	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		sum->split[k] += c->split[k];
}

static int collect_result(const struct bench_run *r, struct bench_alloc_result *res)
{
	const struct bench_alloc_opts *o = r->opts;
	uint64_t end_ns = r->t0_ns;

	memset(res, 0, sizeof(*res));
	for (unsigned int i = 0; i < o->threads; i++) {
		sum_counts(&res->counts, &r->workers[i].counts);
		if (r->workers[i].end_ns > end_ns)
			end_ns = r->workers[i].end_ns;
	}
	res->elapsed_s = (double)(end_ns - r->t0_ns) / NS_PER_SEC;
	stats_delta(&r->after, &r->before, &res->delta);
	res->quota = o->quota ? o->quota : USWAP_DEFAULT_RING_QUOTA;
	res->nr_cpus = effective_cpus(o);
	res->nr_devices = o->devices;
	res->metadata_static = r->meta_static;
	res->metadata_peak = r->meta_peak;
	for (unsigned int i = 0; i < o->devices; i++) {
		int err = uswap_device_info(r->u, r->types[i], &res->dev[i]);

		if (err)
			return cli_runtime_error(CMD, "uswap_device_info(%d): %s",
						 r->types[i], cli_errno_name(err));
	}
	return 0;
}

/* Free every live folio, then each device must be empty ("every freed
 * slot can be handed out again" starts with inuse 0). */
static int drain_and_verify(const struct bench_run *r)
{
	int rc = 0;

	for (unsigned int i = 0; i < r->opts->threads; i++)
		if (bench_worker_drain(&r->workers[i]))
			rc = report_worker_errors(r);
	for (unsigned int i = 0; i < r->opts->devices; i++) {
		struct uswap_device_info info;

		if (uswap_device_info(r->u, r->types[i], &info) || info.inuse == 0)
			continue;
		rc = cli_runtime_error(CMD, "device %s: %llu slots still in use "
				       "after every folio was freed", info.name,
				       (unsigned long long)info.inuse);
	}
	if (r->opts->check && uswap_check(r->u))
		rc = cli_runtime_error(CMD, "uswap_check failed (see above)");
	return rc;
}

/* One run of @o into @res; with @print the report goes out before the
 * folios are freed (the device table shows them in use). */
static int run_once(const struct bench_alloc_opts *o, struct bench_alloc_result *res,
		    bool print)
{
	struct bench_run r = { .opts = o };
	int rc;

	rc = make_instance(o, &r.u, r.types);
	if (rc)
		return rc;
	r.meta_static = metadata_sum(&r);
	r.meta_peak = r.meta_static;
	rc = run_workers(&r);
	if (!rc)
		rc = report_worker_errors(&r);
	if (!rc)
		rc = collect_result(&r, res);
	if (!rc && print && o->json)
		bench_alloc_print_json(o, res);
	else if (!rc && print)
		bench_alloc_print_table(o, res, r.u);
	if (!rc)
		rc = drain_and_verify(&r);
	workers_free(&r);
	sync_fini(&r.sync);
	uswap_destroy(r.u);
	return rc;
}

int bench_alloc_measure(const struct bench_alloc_opts *o, struct bench_alloc_result *res)
{
	return run_once(o, res, false);
}

int cmd_bench_alloc(int argc, char **argv)
{
	struct bench_alloc_opts opts;
	struct bench_alloc_result res;
	int rc = parse_opts(argc, argv, &opts);

	if (rc < 0)
		return CLI_EXIT_OK;
	if (rc)
		return rc;
	if (opts.nr_points > 1 || opts.svg || opts.nr_baselines)
		return bench_alloc_scale(&opts);
	return run_once(&opts, &res, true);
}
