/* SPDX-License-Identifier: MIT */
/*
 * lab_internal.h - the lab: each seed thread's before/after, replayed on libuswap
 * as policy switches (docs/lab.md).
 *
 * Glossary (docs/design.md's terms):
 *   vCPU        a virtual CPU: a per-CPU index of the instance
 *               (uswap_thread_set_cpu()) and, in virtual time, a clock;
 *               the lab runs 96 or 256 of them, as the seeds' machines,
 *               on however many real threads it has
 *   slice       wall-clock mode: the operations one vCPU runs before its
 *               thread switches to its next vCPU; virtual time: vCPUs x
 *               slice operations between two samples of device use
 *   task        one process of a workload (a usemem worker, a compiler, a
 *               reader); it lives on one home vCPU
 *   arm         one run of a workload under one policy ("before", "after";
 *               seed 5's A, B, C; a replay's A..D)
 *   experiment  one seed thread: its arms' policies, workload, metrics and
 *               the sign of each metric's change that the thread reports
 *
 * The lab only uses the public API (include/uswap/uswap.h), so what it
 * measures is what any user of the library gets. Counts (lock
 * acquisitions, fallbacks, per-device use) come from uswap_stats_get()
 * deltas taken around the workload and from the lab's own bookkeeping,
 * never from calls that take allocator locks themselves.
 *
 * Declarations are grouped by the file that defines them.
 */
#ifndef USWAP_LAB_LAB_INTERNAL_H
#define USWAP_LAB_LAB_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uswap/lab.h>
#include <uswap/uswap.h>

#define LAB_DEFAULT_VCPUS   96   /* the seeds' machines run make -j96 */
#define LAB_DEFAULT_THREADS 1    /* virtual time gains nothing from more:
				    the threads take turns */
#define LAB_DEFAULT_SLICE   32   /* operations per vCPU slice */
#define LAB_MAX_THREADS     64
#define LAB_MAX_METRICS     8
#define LAB_MAX_SAMPLES     1024 /* per-device use samples of one arm */
#define LAB_REPLAY_MIN_FILL 0.01 /* devices at most 100x a trace's peak */

/* ------------------------------------------------------------------------
 * vcpu.c: virtual CPUs multiplexed on real threads
 * ---------------------------------------------------------------------- */

struct lab_vcpu_config {
	unsigned int nr_vcpus;   /* 1..USWAP_MAX_CPUS (=96) */
	unsigned int nr_threads; /* real threads, 1..LAB_MAX_THREADS (=1) */
	unsigned int slice_ops;  /* operations per slice (=32) */
};

/*
 * lab_step_fn - run one operation of vCPU @vcpu (its per-CPU index is
 * already set). @thread is the real thread, 0..nr_threads-1.
 * Return: 1 (done one, more to do), 0 (this vCPU has nothing left), or
 * -errno (stop every thread; lab_vcpu_run() returns it).
 */
typedef int (*lab_step_fn)(void *ctx, unsigned int vcpu, unsigned int thread);

/*
 * lab_round_fn - called once per round (one slice of every vCPU that
 * still runs), @round = 0, 1, ..., when every thread has finished it and
 * none has started the next: the state it sees does not depend on the
 * thread count. For sampling and progress; runs under the barrier's
 * lock, so it must be short and must not block.
 */
typedef void (*lab_round_fn)(void *ctx, uint64_t round);

/*
 * lab_vcpu_run() - run every vCPU until each says it is done.
 * Thread t owns vCPUs t, t + T, t + 2T, ... (T threads) and cycles through
 * them, a slice at a time, in that fixed order. Each vCPU's work must be
 * its own (its tasks and random stream), so the set of operations does
 * not depend on T; with T = 1 the interleaving, and so every count, is
 * exactly reproducible.
 * Return: 0; -EINVAL (bad config); -EAGAIN (threads); a step's -errno.
 */
int lab_vcpu_run(const struct lab_vcpu_config *cfg, lab_step_fn step,
		 lab_round_fn round, void *ctx);

/* splitmix64: the lab's PRNG, one stream per vCPU or task. */
uint64_t lab_rand(uint64_t *state);
/* A uniform value in [0, n). */
uint64_t lab_rand_below(uint64_t *state, uint64_t n);

/* ------------------------------------------------------------------------
 * vtime.c: virtual time (a clock per vCPU, costs, locks held in virtual
 * time); the scheduler that runs it is lab_vcpu_run_virtual()
 * ---------------------------------------------------------------------- */

/* Modelled cost of each step, in ns (docs/lab.md: where each comes from). */
struct lab_cost {
	double lock, line, handover_lines, list_step, list_move, map_line, slot, discard;
	double alloc, free, page_out, page_in, pool_lines, jitter;
};

void lab_cost_default(struct lab_cost *c);
/*
 * lab_cost_profile() - the cost table measured on one machine: "2-vcpu"
 * (this project's development machine, lab_cost_default()) or "16-cores"
 * (../shared/calibration/16-cores: its lock, line and hand-over costs).
 * Return: 0; -EINVAL (no such profile; @c unchanged).
 */
int lab_cost_profile(const char *name, struct lab_cost *c);
/* The profiles' names, for a usage message. */
const char *lab_cost_profile_names(void);
/*
 * lab_cost_parse() - change @c from "key=value,..." (the field names of
 * struct lab_cost, values in ns, 0..1e9).
 * Return: 0; -EINVAL (unknown key, bad number; @c may be partly changed).
 */
int lab_cost_parse(const char *s, struct lab_cost *c);
/* lab_cost_parse() that copies the first bad item into @bad. Empty items
 * (an empty string, a trailing comma) are bad; values are plain decimal
 * or floating point, no sign, no hex. */
int lab_cost_parse_why(const char *s, struct lab_cost *c, char *bad, size_t bad_len);
/* @c as "key=value,...", every key. */
void lab_cost_format(const struct lab_cost *c, char *buf, size_t len);
/* Call @fn for each key of @c, in table order, with its description. */
void lab_cost_each(void (*fn)(const char *key, const char *desc, double v, void *ctx),
		   const struct lab_cost *c, void *ctx);

#define LAB_MAX_LOCK_SITES 32

struct vt_lock; /* vtime.c's */

/* One row of the lock table: a lock at one call site, perf lock's
 * columns (acquired, contended, total/max wait; avg = wait / contended). */
struct lab_lock_site {
	char lock[32];     /* "si->lock", "ci->lock", "u->avail_lock", ... */
	char site[48];     /* the function that took it */
	uint64_t acquired;
	uint64_t contended; /* acquisitions that waited */
	double wait_ns;     /* total virtual wait */
	double max_wait_ns;
	double held_ns;     /* total virtual time held */
};

/* What one arm's virtual time gives. */
struct lab_vt_result {
	double cpu_ns;       /* the vCPUs' clocks summed, idle time taken
				out: "sys time" */
	double makespan_ns;  /* the largest clock: "real time" */
	uint64_t overlaps;   /* the model's error count (vtime.c) */
	unsigned int nr_sites;
	struct lab_lock_site sites[LAB_MAX_LOCK_SITES]; /* most wait first */
};

struct lab_vtime {
	struct lab_cost cost;
	unsigned int nr_vcpus;
	unsigned int cur;           /* the vCPU running now */
	double *clock;              /* [nr_vcpus], virtual ns */
	uint64_t *rng;              /* [nr_vcpus]: the page costs' jitter */
	struct vt_lock *locks;      /* hash on the lock's address */
	size_t nr_locks, nr_locks_cap;
	unsigned int nr_sites;
	struct lab_lock_site sites[LAB_MAX_LOCK_SITES];
	const char *site_keys[LAB_MAX_LOCK_SITES][2]; /* name, site constants */
	double horizon;             /* no vCPU's clock is earlier (set by
				       the scheduler before each operation) */
	uint64_t overlaps;          /* holdings that ran into a later one */
	double idle_ns;             /* clocks moved on with nothing to do
				       (a replay's gaps): not system time */
	int failed;                 /* -ENOMEM while running */
	struct uswap_probe probe;   /* installed on each running thread */
};

/* Return: 0; -ENOMEM. Clocks start at 0; @seed seeds each vCPU's jitter
 * stream. Free with lab_vt_fini(). */
int lab_vt_init(struct lab_vtime *vt, const struct lab_cost *cost, unsigned int nr_vcpus,
		uint64_t seed);
void lab_vt_fini(struct lab_vtime *vt);
/*
 * lab_vt_lock() - vCPU vt->cur takes the lock @id at its clock: if the
 * lock's last release is later, it waits until then (counted at the row
 * of @name/@site: both must be string constants); then it pays @cost.lock,
 * plus @cost.line when another vCPU held the lock last.
 */
void lab_vt_lock(struct lab_vtime *vt, const void *id, const char *name, const char *site);
/* lab_vt_lock() with @lines cache lines moved on a handover in place of
 * the cost table's handover_lines (a bare shared line rather than a lock
 * and its data). */
void lab_vt_lock_lines(struct lab_vtime *vt, const void *id, const char *name,
		       const char *site, double lines);
/* vCPU vt->cur releases @id at its clock. */
void lab_vt_unlock(struct lab_vtime *vt, const void *id);
/* Move vt->cur's clock on by @ns. */
void lab_vt_charge(struct lab_vtime *vt, double ns);
/* The same for page work: @ns varied by the cost table's jitter. */
void lab_vt_charge_page(struct lab_vtime *vt, double ns);
/* Sum the clocks and sort the lock table into @r. */
void lab_vt_result(const struct lab_vtime *vt, struct lab_vt_result *r);
/* A device or global lock, as lab_shared_locks() counts them. */
bool lab_lock_site_shared(const struct lab_lock_site *s);

/*
 * lab_vcpu_run_virtual() - run every vCPU in virtual time: always the
 * vCPU with the smallest clock (the lower number on a tie), one
 * operation at a time, until each says it is done. vCPU v runs on real
 * thread v % T; the threads take turns, so the order of operations, and
 * every result, is the same for any T. @round is called after every
 * nr_vcpus * slice_ops operations. Each thread runs with @vt's probe.
 * Return: as lab_vcpu_run(); -ENOMEM if the model ran out of memory.
 */
int lab_vcpu_run_virtual(const struct lab_vcpu_config *cfg, struct lab_vtime *vt,
			 lab_step_fn step, lab_round_fn round, void *ctx);

/* ------------------------------------------------------------------------
 * trace.c: recorded swap operations (format version 1, docs/lab.md)
 * ---------------------------------------------------------------------- */

enum lab_trace_op {
	LAB_TRACE_ALLOC,  /* "A": a folio of 2^order pages swapped out */
	LAB_TRACE_FREE,   /* "F": the folio's remaining pages freed */
	LAB_TRACE_SWAPIN, /* "I": one page of it swapped back in alone */
	LAB_TRACE_RESET,  /* "X": the swap system starts over (the process
			     exec'd): every live folio is gone */
};

struct lab_trace_rec {
	uint64_t t_ns;        /* non-decreasing */
	uint64_t id;          /* the folio's name in the trace */
	unsigned int cpu;     /* 0..USWAP_MAX_CPUS-1 */
	enum lab_trace_op op;
	unsigned int order;   /* ALLOC */
	unsigned int page;    /* SWAPIN */
	uint32_t slot;        /* the folio's place in the replay (set on read:
				 at most peak_folios places are used) */
};

struct lab_trace {
	struct lab_trace_rec *rec;
	size_t nr, cap;
	unsigned int nr_cpus;     /* highest CPU + 1 */
	uint32_t nr_slots;        /* folio places the replay needs */
	uint32_t nr_slots_epoch;  /* (while read) places since the last X */
	uint64_t live, peak_folios; /* folios alive (while read), the most */
	uint64_t slots, peak_slots; /* pages swapped out, the most at once */
};

/*
 * lab_trace_read() - read a version-1 trace from @f into @t, checking
 * every record (syntax, ranges, time order, that each ID is alive for F
 * and I and not for A, pages in range and not in twice).
 * Return: 0; -EINVAL with "line N: why" in @err; nothing kept on error.
 * Free with lab_trace_fini().
 */
int lab_trace_read(FILE *f, struct lab_trace *t, char *err, size_t err_len);
void lab_trace_fini(struct lab_trace *t);
/* The header line and a comment naming @what. */
void lab_trace_header(FILE *f, const char *what);
/* One record as a line. */
void lab_trace_write(FILE *f, const struct lab_trace_rec *r);

/* ------------------------------------------------------------------------
 * workload.c: the swap system of one arm, per-device use, the folio
 * allocation every workload shares
 * ---------------------------------------------------------------------- */

enum lab_workload_kind {
	LAB_WL_USEMEM, /* N tasks allocate SIZE then free it, repeated */
	LAB_WL_KBUILD, /* make -jN: short jobs and long-lived memory */
	LAB_WL_SWAPIN, /* swap out, then sequential swap-in from a disk model */
	LAB_WL_REPLAY, /* a recorded trace, in its order (workload_replay.c) */
};

/* usemem (vm-scalability) as an allocator-only replay. */
struct lab_usemem_params {
	unsigned int tasks;     /* processes (=31, the seed's -n 31) */
	uint64_t size_slots;    /* each task's memory in slots */
	unsigned int order;     /* folio order 0..9 (=0) */
	unsigned int rounds;    /* allocate-all-then-free-all repetitions */
	double fill;            /* peak demand / total capacity (=0.38) */
};

/* make -jN under a memory cgroup; see workload_kbuild.c for the mix. */
struct lab_kbuild_params {
	unsigned int jobs_per_vcpu;  /* compile jobs each vCPU runs */
	unsigned int job_min, job_max; /* folios per job, uniform */
	unsigned int long_pct;       /* % of folios that are long-lived */
	unsigned int long_cap;       /* long-lived folios per vCPU */
	unsigned int order4_pct;     /* % of folios that are order 4 */
	unsigned int swapin_pct;     /* % of operations that swap one page of
					a live folio back in, freeing its slot
					alone (4 KiB swap-in of mTHP) */
	double fill;                 /* expected live / capacity */
	unsigned int procs;          /* builders (make -jN) spread over the
					vCPUs; 0 = one per vCPU */
};

/* Seed 3: usemem -n 8 pushes its memory to an HDD, then reads it back. */
struct lab_swapin_params {
	unsigned int tasks;          /* processes (=8, the seed's nr_task) */
	uint64_t size_slots;         /* each task's memory in slots */
	double fill;                 /* demand / device capacity */
	unsigned int readahead;      /* slots per read, aligned (=8:
					vm.page-cluster 3) */
	/* Rotational model (defaults: a 7200 rpm SATA disk). */
	double seek_settle_us;       /* any non-sequential access (=1000) */
	double seek_us_per_mib;      /* plus this per MiB of distance (=50) */
	double rotation_us;          /* mean rotational latency (=4170) */
	double media_mb_s;           /* transfer rate (=150) */
};

struct lab_workload {
	enum lab_workload_kind kind;
	unsigned int nr_devices;     /* 1..USWAP_MAX_DEVICES */
	int prio;                    /* of every device */
	struct lab_usemem_params usemem;
	struct lab_kbuild_params kbuild;
	struct lab_swapin_params swapin;
	const struct lab_trace *trace; /* LAB_WL_REPLAY */
	double replay_fill;            /* its peak over the devices' room (=0.7,
					  LAB_REPLAY_MIN_FILL..1) */
};

/* Per-device use over the run (slots in use), sampled by the lab. */
struct lab_series {
	unsigned int nr_devices;
	unsigned int nr_samples;
	uint64_t ops[LAB_MAX_SAMPLES]; /* x: folios swapped out so far */
	uint64_t used[LAB_MAX_SAMPLES][USWAP_MAX_DEVICES];
};

/* What one arm measured. */
struct lab_arm {
	struct uswap_policy policy;
	double elapsed_s;             /* the workload's timed part */
	unsigned int threads;         /* real threads it ran on */
	uint64_t folios;              /* folios requested */
	uint64_t allocs;              /* successful uswap_alloc() calls */
	uint64_t frees;               /* uswap_put_folio() calls */
	uint64_t bytes;               /* bytes of folios swapped out */
	uint64_t req[USWAP_NR_ORDERS];   /* folios requested per order */
	uint64_t split[USWAP_NR_ORDERS]; /* of which split after -E2BIG */
	uint64_t enospc;              /* -ENOSPC seen (freed and retried) */
	struct uswap_stats delta;     /* counters over the timed part */
	uint64_t dev_slots[USWAP_MAX_DEVICES]; /* usable slots per device */
	uint64_t peak_total;          /* most slots in use at a sample */
	uint64_t at_peak[USWAP_MAX_DEVICES]; /* per device at that sample */
	double swapin_kb_s;           /* seed 3: mean per task */
	double swapin_seek_mib;       /* seed 3: mean seek distance */
	bool virtual_time;            /* vt holds the times (else elapsed_s) */
	uint64_t replay_not_out;      /* replay: A records that found no room */
	struct lab_vt_result vt;
	struct lab_series *series;    /* may be NULL (no memory) */
};

/* How a run is done: vCPUs, threads, seed, size. */
struct lab_options {
	struct lab_vcpu_config vcpu;
	uint64_t seed;               /* (=1) */
	double scale;                /* multiplies the workload's size (=1) */
	FILE *progress;              /* progress lines, or NULL */
	const char *label;           /* arm name in progress lines */
	FILE *trace_out;             /* write the arm's operations here as a
					trace (version 1), or NULL */
	bool wall_clock;             /* the old mode: real threads, real
					time (=false: virtual time) */
	struct lab_cost cost;        /* virtual time's (=lab_cost_default) */
};

void lab_options_default(struct lab_options *o);

/*
 * lab_workload_parse() - change @wl's parameters from "key=value,...":
 * devices=N for every workload; usemem: tasks, size (slots per task),
 * order, rounds, fill; kbuild: jobs, job_min, job_max, long_pct,
 * long_cap, order4_pct, fill, procs; swapin: tasks, size, fill, readahead,
 * settle_us, us_per_mib, rotation_us, media_mb_s. Checked again when the
 * workload starts. Return: 0; -EINVAL (unknown key, bad number).
 */
int lab_workload_parse(const char *s, struct lab_workload *wl);

/*
 * lab_run_arm() - build a swap system with @policy, run @wl on it and
 * fill @out (out->series is allocated; free with lab_arm_fini()).
 * Return: 0; -EINVAL (bad workload); -ENOMEM; a library -errno.
 */
int lab_run_arm(const struct lab_workload *wl, const struct uswap_policy *policy,
		const struct lab_options *opt, struct lab_arm *out);
void lab_arm_fini(struct lab_arm *a);

/* Shared-lock acquisitions: device list locks and the global lock. */
uint64_t lab_shared_locks(const struct uswap_stats *st);
/* Per-device use max/min at the sample of peak total use (inf if a device
 * held nothing then). */
double lab_use_ratio(const struct lab_arm *a);

/* ------------------------------------------------------------------------
 * experiments.c: one experiment per seed thread
 * ---------------------------------------------------------------------- */

/* What a metric is computed from. */
typedef double (*lab_metric_fn)(const struct lab_arm *a);

#define LAB_MAX_ARMS 4

/* What a seed says of a metric in one arm against the first arm. */
enum lab_claim {
	LAB_SAME = 0,     /* "about equal": within +-5 % */
	LAB_UP = 1,
	LAB_DOWN = -1,
	LAB_NO_CLAIM = 2, /* the seed gives nothing to compare with */
	LAB_AT_MOST = 3,  /* the seed gives this arm's figure only: agree
			     when the value is <= the metric's at_most */
};

struct lab_metric {
	const char *name;        /* JSON key, snake_case */
	const char *label;       /* table row */
	const char *unit;
	/* claim[i]: arm i against arm 0 (claim[0] is unused) */
	enum lab_claim claim[LAB_MAX_ARMS];
	lab_metric_fn fn;
	const char *seed_figure; /* the seed's numbers, quoted */
	double at_most;          /* for LAB_AT_MOST */
};

/* One arm: a name and the policy it runs (arm 0 is the base). */
struct lab_arm_spec {
	const char *name;        /* "before", "after"; seed 5's "A", "B", "C" */
	const char *what;        /* one line: which kernel state it is */
	struct uswap_policy policy;
};

struct lab_experiment {
	const char *name;        /* kebab-case, `uswap lab run NAME` */
	const char *thread;      /* the seed thread's subject on linux-mm
				    (lore.kernel.org/linux-mm) */
	const char *summary;     /* one line for `uswap lab list` */
	unsigned int nr_arms;    /* 2..LAB_MAX_ARMS */
	struct lab_arm_spec arms[LAB_MAX_ARMS];
	struct lab_workload workload;
	unsigned int vcpus;      /* the seed machine's CPUs (0 = 96) */
	unsigned int nr_metrics;
	struct lab_metric metrics[LAB_MAX_METRICS];
	bool plot;               /* the seed shows device use: SVG */
};

/* Every experiment, in seed order: lab_experiment_at(0 .. nr - 1). */
unsigned int lab_nr_experiments(void);
const struct lab_experiment *lab_experiment_at(unsigned int i);
/*
 * lab_replay_experiment() - an experiment with no arms yet for `uswap lab
 * replay`: the replay workload (one device, fill 0.7) and the seeds'
 * metrics with no claims; @what (the trace's name) must outlive @e. The
 * caller adds the arms and sets workload.trace.
 */
void lab_replay_experiment(struct lab_experiment *e, const char *what);
/* Return: the experiment called @name, or NULL. */
const struct lab_experiment *lab_experiment_find(const char *name);

/* ------------------------------------------------------------------------
 * report.c: the seed's table shape
 * ---------------------------------------------------------------------- */

struct lab_result {
	const struct lab_experiment *exp;
	unsigned int nr_arms;
	struct lab_arm arm[LAB_MAX_ARMS];
	double value[LAB_MAX_ARMS][LAB_MAX_METRICS];
	double delta_pct[LAB_MAX_ARMS][LAB_MAX_METRICS]; /* arm i against arm 0 */
	bool judged[LAB_MAX_ARMS][LAB_MAX_METRICS];      /* the seed claims something */
	bool agrees[LAB_MAX_ARMS][LAB_MAX_METRICS];      /* and ours matches it */
};

/* "up", "down", "same", "<=", or "-" (no claim). */
const char *lab_claim_word(enum lab_claim c);
/* Does every judged metric of every arm agree? */
bool lab_all_agree(const struct lab_result *res);

/*
 * lab_run() - run every arm of @exp and compute the report.
 * Return: 0 or the first arm's -errno. Free with lab_result_fini().
 */
int lab_run(const struct lab_experiment *exp, const struct lab_workload *wl,
	    const struct lab_options *opt, struct lab_result *res);
void lab_result_fini(struct lab_result *res);

/* Fill value/delta_pct/judged/agrees from the arms. */
void lab_report_compute(struct lab_result *res);
/* Does the sign of @delta_pct match @claim (LAB_UP, LAB_DOWN, LAB_SAME)?
 * Changes under 5 % count as "about equal". */
bool lab_direction_agrees(int claim, double delta_pct);
/* Each virtual-time arm's lock table, perf lock's columns. */
void lab_report_print_locks(const struct lab_result *res, FILE *out);
/* Metric, each arm, each delta %, the seed's claims, agrees. */
void lab_report_print(const struct lab_result *res, FILE *out);

/* ------------------------------------------------------------------------
 * policy.c: struct uswap_policy as text
 * ---------------------------------------------------------------------- */

/*
 * lab_policy_format() - the switches that differ from uswap's default,
 * as "key=value,..." (the form lab_policy_parse() reads), or "default".
 */
void lab_policy_format(const struct uswap_policy *p, char *buf, size_t len);

/*
 * lab_policy_parse() - read "key=value,..." on top of @p. Keys and values:
 * select=rings|global-rotate|legacy-prio, percpu=per-device|global,
 * frag=scan-one|scan-all, cluster=nonfull|free,
 * freelist=ascending|interleaved, lock=cluster-first|device,
 * discard=bounded|sync-all, nodes=N; "default" resets every switch.
 * Return: 0; -EINVAL (unknown key or value; @p may be partly changed).
 */
int lab_policy_parse(const char *s, struct uswap_policy *p);

/* ------------------------------------------------------------------------
 * plot.c: per-device use over time as SVG, through gnuplot
 * ---------------------------------------------------------------------- */

/* Is gnuplot on PATH? */
bool lab_have_gnuplot(void);
/*
 * lab_plot_svg() - write every arm's per-device use curves of @res to
 * @path as one SVG (one panel per arm).
 * Return: 0; -ENOENT (no gnuplot, or no such directory for @path: call
 * lab_have_gnuplot() first to tell them apart); -errno of opening or
 * writing @path (-ENOSPC of a full disk); -ENODATA (no samples); -EIO
 * (gnuplot failed or drew nothing); -errno of a temp file. Gnuplot's own
 * output never reaches the caller's stdout.
 */
int lab_plot_svg(const struct lab_result *res, const char *path);

/*
 * lab_gnuplot_svg() - the plumbing of any SVG drawn by gnuplot: create
 * @path (any name), write the samples with @data_fn into a temporary
 * file, feed gnuplot the script @script_fn writes (it gets the names of
 * the data file and of a temporary SVG, both safe inside single quotes),
 * then copy that SVG into @path, every write checked. Return: as
 * lab_plot_svg(), plus @data_fn's -errno. Used by `uswap run --plot` and
 * `uswap stress --plot` too.
 */
int lab_gnuplot_svg(const char *path, int (*data_fn)(FILE *f, void *ctx),
		    void (*script_fn)(FILE *g, const char *data, const char *path, void *ctx),
		    void *ctx);

#endif /* USWAP_LAB_LAB_INTERNAL_H */
