// SPDX-License-Identifier: MIT
/*
 * experiments.c - one experiment per seed thread (a linux-mm thread): the
 * arms' policies ("before" and "after", or the RFC's A, B, C), the
 * workload, the metrics and the sign of each metric's change against the
 * first arm that the thread reports; and the replay's metrics.
 *
 * The arms of an experiment carry the other switches of the seed's era
 * (docs/lab.md), so the only difference between them
 * is the change the thread made: seed 1 predates seed 2's nonfull-first
 * and seed 3's ascending free list, seeds 2-4 ran with one global per-CPU
 * cluster cache (6.15+) and the plist rotation, and so on.
 */
#include <math.h>
#include <string.h>

#include "lab/lab_internal.h"

/* ------------------------------------------------------------------------
 * Metrics
 * ---------------------------------------------------------------------- */

static double per_1k_allocs(uint64_t n, const struct lab_arm *a)
{
	return a->allocs ? (double)n * 1000.0 / (double)a->allocs : NAN;
}

static double m_shared_locks_per_1k(const struct lab_arm *a)
{
	return per_1k_allocs(lab_shared_locks(&a->delta), a);
}

static double m_shared_locks_per_alloc(const struct lab_arm *a)
{
	return a->allocs ? (double)lab_shared_locks(&a->delta) / (double)a->allocs : NAN;
}

/* Acquisitions that found a shared lock held: perf lock's "contended".
 * In virtual time, held in virtual time by another vCPU; in wall-clock
 * mode, held by the other real thread (a count of this host's
 * contention, not of 96 CPUs'). */
static double m_shared_contended_per_1k(const struct lab_arm *a)
{
	uint64_t n = 0;

	if (!a->virtual_time)
		return per_1k_allocs(a->delta.locks[USWAP_LOCK_DEVICE].contended +
				     a->delta.locks[USWAP_LOCK_GLOBAL].contended, a);
	for (unsigned int i = 0; i < a->vt.nr_sites; i++)
		if (lab_lock_site_shared(&a->vt.sites[i]))
			n += a->vt.sites[i].contended;
	return per_1k_allocs(n, a);
}

/* Virtual ns the vCPUs waited for shared locks, per allocation. */
static double m_shared_wait_per_alloc(const struct lab_arm *a)
{
	double w = 0;

	if (!a->virtual_time || !a->allocs)
		return NAN;
	for (unsigned int i = 0; i < a->vt.nr_sites; i++)
		if (lab_lock_site_shared(&a->vt.sites[i]))
			w += a->vt.sites[i].wait_ns;
	return w / (double)a->allocs;
}

/* The one lock every CPU shares: the global device list's (seed 5). */
static double m_global_lock_per_alloc(const struct lab_arm *a)
{
	return a->allocs ? (double)a->delta.locks[USWAP_LOCK_GLOBAL].acquired /
			   (double)a->allocs : NAN;
}

static double m_list_scan_per_1k(const struct lab_arm *a)
{
	return per_1k_allocs(a->delta.list_scan_steps, a);
}

/* CPU time per successful allocation, the frees, the swap-out and
 * swap-in work around them and every wait included: what the seeds'
 * system time measures. In virtual time, the vCPUs' clocks summed; in
 * wall-clock mode, two-core thread time. */
static double m_ns_per_alloc(const struct lab_arm *a)
{
	if (!a->allocs)
		return NAN;
	if (a->virtual_time)
		return a->vt.cpu_ns / (double)a->allocs;
	return a->elapsed_s * 1e9 * a->threads / (double)a->allocs;
}

/* The seeds' real time: the last vCPU's clock (virtual time only). */
static double m_real_s(const struct lab_arm *a)
{
	return a->virtual_time ? a->vt.makespan_ns / 1e9 : a->elapsed_s;
}


static double m_order4_fallback(const struct lab_arm *a)
{
	return (double)a->delta.swpout_fallback[4];
}

/* As the mTHP stats: swpout_fallback / (swpout + swpout_fallback). */
static double m_order4_fallback_pct(const struct lab_arm *a)
{
	uint64_t tries = a->delta.swpout[4] + a->delta.swpout_fallback[4];

	return tries ? 100.0 * (double)a->delta.swpout_fallback[4] / (double)tries : NAN;
}

static double m_swapin_kb_s(const struct lab_arm *a)
{
	return a->swapin_kb_s;
}

static double m_seek_mib(const struct lab_arm *a)
{
	return a->swapin_seek_mib;
}

static double m_use_ratio(const struct lab_arm *a)
{
	return lab_use_ratio(a);
}

/* usemem's sum throughput: bytes swapped out over the run's time (the
 * last vCPU's clock in virtual time). */
static double m_throughput_mb_s(const struct lab_arm *a)
{
	double s = a->virtual_time ? a->vt.makespan_ns / 1e9 : a->elapsed_s;

	return s > 0 ? (double)a->bytes / s / 1e6 : NAN;
}

/* ------------------------------------------------------------------------
 * Workload defaults (docs/lab.md says where each number comes from)
 * ---------------------------------------------------------------------- */

/* make -j96 (workload_kbuild.c): 96 jobs of 8..56 folios at a time, 20 %
 * of folios long-lived (2000 per vCPU), half the folios 64 KiB mTHP, 10 %
 * of operations a 4 KiB swap-in. FILL is the expected live data over the
 * devices' capacity: seeds 1 and 2 ran their devices full (seed 2's
 * 8 GiB device fell back ten times as often as its 10 GiB one), seed 5
 * ran a build in 2-3 GiB memcgs on eight devices, not full. Order-4
 * fallbacks here appear only within a percent or so of full: at 0.99 no
 * arm falls back (docs/lab.md). 300 jobs per vCPU keep the device full
 * for the second half of the run. */
#define KBUILD_MIX(FILL, PROCS) KBUILD_MIX_PAGES(FILL, PROCS, 50, 2000)
/* The same mix with ORDER4 % of folios 64 KiB and up to LONG long-lived
 * folios per vCPU. Seed 5 names no mTHP setting, and anonymous mTHP is
 * off unless enabled: its folios are 4 KiB (order4_pct 0), and its
 * long-lived set keeps the bytes of the 64 KiB mix (2000 folios of 8.5
 * pages on average are 17000 pages), so clusters still outnumber the
 * 96 x 8 per-CPU clusters. */
#define KBUILD_MIX_PAGES(FILL, PROCS, ORDER4, LONG) { .jobs_per_vcpu = 300, \
			   .job_min = 8, .job_max = 56, .long_pct = 20, \
			   .long_cap = (LONG), .order4_pct = (ORDER4), \
			   .swapin_pct = 10, .fill = (FILL), .procs = (PROCS) }

/* Seed 1's era (6.12 -> 6.14): plist rotation, per-device per-CPU
 * clusters, free clusters first, the whole frag list, the old shuffle. */
#define SEED1_ERA .select = USWAP_SELECT_GLOBAL_ROTATE, \
		  .cluster = USWAP_PREFER_FREE, .frag = USWAP_FRAG_SCAN_ALL, \
		  .freelist = USWAP_FREELIST_INTERLEAVED
/* Seeds 2 and 3 (6.17 -> 6.18): the global per-CPU cluster cache of
 * 6.15 and the plist rotation. */
#define SEED23_ERA .select = USWAP_SELECT_GLOBAL_ROTATE, \
		   .percpu = USWAP_PERCPU_GLOBAL

/* A two-arm metric's claim: after against before. */
#define VS(claim) { 0, (claim) }

static const struct lab_experiment experiments[] = {
{
	.name = "rework-swap-allocator-locks",
	.thread = "[PATCH 00/13] mm, swap: rework of swap allocator locks",
	.summary = "device lock for the whole allocation + 64-slot per-CPU "
		   "slot cache vs cluster lock first (make -j96, 64K mTHP)",
	.nr_arms = 2,
	.arms = {
		{ "before", "6.12: the device lock for the whole allocation",
		  { SEED1_ERA, .lock = USWAP_LOCKING_DEVICE } },
		{ "after", "6.13: cluster lock first",
		  { SEED1_ERA, .lock = USWAP_LOCKING_CLUSTER_FIRST } },
	},
	.workload = { .kind = LAB_WL_KBUILD, .nr_devices = 1,
		      .prio = USWAP_PRIO_DEFAULT, .kbuild = KBUILD_MIX(1.0, 0) },
	.nr_metrics = 5,
	.metrics = {
		{ "shared_locks_per_1k_allocs", "shared-lock acquisitions / 1k allocs",
		  "", VS(LAB_DOWN), m_shared_locks_per_1k,
		  "si->lock taken for every allocation before; after, only by "
		  "cluster_move / cluster_isolate_lock (perf lock callers)" },
		{ "shared_contended_per_1k_allocs", "shared-lock contentions / 1k allocs",
		  "", VS(LAB_DOWN), m_shared_contended_per_1k,
		  "\"lock contention on si->lock is nearly unobservable\" after "
		  "(perf lock: 91, 47, 23, 17 contended)" },
		{ "ns_per_alloc", "CPU ns per allocation (sys time)", "ns", VS(LAB_DOWN),
		  m_ns_per_alloc,
		  "sys time 73578.30 s -> 33314.76 s (-54.7%), 4K pages" },
		{ "real_s", "real time", "s", VS(LAB_DOWN), m_real_s,
		  "real time 864.05 s -> 437.67 s (-49.3%), 4K pages" },
		{ "order4_fallback_pct", "order-4 fallback %", "%", VS(LAB_DOWN),
		  m_order4_fallback_pct,
		  "-63.2% mTHP failure (64K mTHP, 1152M memcg)" },
	},
},
{
	.name = "improve-cluster-scan-strategy",
	.thread = "[PATCH v2 0/3] mm, swap: improve cluster scan strategy",
	.summary = "free clusters first + walk the whole frag list vs nonfull "
		   "first + one frag cluster (make -j96, 64K mTHP)",
	.nr_arms = 2,
	.arms = {
		{ "before", "6.17: free clusters first, the whole frag list",
		  { SEED23_ERA, .cluster = USWAP_PREFER_FREE,
		    .frag = USWAP_FRAG_SCAN_ALL } },
		{ "after", "6.18: nonfull first, one frag cluster", { SEED23_ERA } },
	},
	.workload = { .kind = LAB_WL_KBUILD, .nr_devices = 1,
		      .prio = USWAP_PRIO_DEFAULT, .kbuild = KBUILD_MIX(1.0, 0) },
	.nr_metrics = 4,
	.metrics = {
		{ "order4_swpout_fallback", "order-4 swpout_fallback", "", VS(LAB_DOWN),
		  m_order4_fallback, "64kB swpout_fallback 20917 -> 0" },
		{ "order4_fallback_pct", "order-4 fallback %", "%", VS(LAB_DOWN),
		  m_order4_fallback_pct,
		  "20917 / (1787051 + 20917) = 1.16% -> 0%" },
		{ "list_scan_steps_per_1k_allocs", "list scan steps / 1k allocs",
		  "", VS(LAB_DOWN), m_list_scan_per_1k,
		  "\"spent too much effort scanning the fragment list\"" },
		{ "ns_per_alloc", "CPU ns per allocation (sys time)", "ns", VS(LAB_DOWN),
		  m_ns_per_alloc, "sys time 11609.69 s -> 5587.53 s (-51.9%)" },
	},
},
{
	.name = "remove-swap-cache-contention-workaround",
	.thread = "[PATCH 7/9] mm, swap: remove contention workaround for swap cache",
	.summary = "free clusters interleaved in 32 columns vs ascending: "
		   "sequential swap-in from an HDD model (usemem -n 8)",
	.nr_arms = 2,
	.arms = {
		{ "before", "free clusters interleaved in 32 columns",
		  { SEED23_ERA, .freelist = USWAP_FREELIST_INTERLEAVED } },
		{ "after", "free clusters ascending",
		  { SEED23_ERA, .freelist = USWAP_FREELIST_ASCENDING } },
	},
	.workload = { .kind = LAB_WL_SWAPIN, .nr_devices = 1,
		      .prio = USWAP_PRIO_DEFAULT,
		      .swapin = { .tasks = 8, .size_slots = 8192, .fill = 0.9,
				  .readahead = 8, .seek_settle_us = 1000,
				  .seek_us_per_mib = 50, .rotation_us = 4170,
				  .media_mb_s = 150 } },
	.nr_metrics = 2,
	.metrics = {
		{ "swapin_kb_s", "swap-in KB/s per process", "KB/s", VS(LAB_UP),
		  m_swapin_kb_s,
		  "1270.92 -> 1849.54 KB/s per process (+45.5%, \"~40% faster\")" },
		{ "seek_mib", "mean seek distance", "MiB", VS(LAB_DOWN), m_seek_mib,
		  "\"shuffling IO is a bad idea for HDD\"" },
	},
},
{
	.name = "default-priority-round-robin",
	.thread = "[PATCH] mm/swapfile.c: select the swap device with default priority round robin",
	.summary = "default priorities -2, -3, ... with per-node lists vs all "
		   "-1 in round robin (usemem -n 31, 4 devices, 8 nodes)",
	.nr_arms = 2,
	.arms = {
		{ "before", "default priorities -2, -3, ..., per-node lists",
		  { .select = USWAP_SELECT_LEGACY_PRIO,
		    .percpu = USWAP_PERCPU_GLOBAL, .nr_nodes = 8 } },
		{ "after", "every default-priority device -1, in round robin",
		  { .select = USWAP_SELECT_GLOBAL_ROTATE,
		    .percpu = USWAP_PERCPU_GLOBAL, .nr_nodes = 8 } },
	},
	.workload = { .kind = LAB_WL_USEMEM, .nr_devices = 4,
		      .prio = USWAP_PRIO_DEFAULT,
		      .usemem = { .tasks = 31, .size_slots = 16384, .order = 0,
				  .rounds = 3, .fill = 0.38 } },
	.nr_metrics = 2,
	.metrics = {
		{ "device_use_max_min", "device use max/min at peak", "", VS(LAB_DOWN),
		  m_use_ratio,
		  "zram0..3 used 15.7G/3.4G/3.4G/2.6G (6.0) -> 12.6G each (1.0)" },
		{ "throughput_mb_s", "sum throughput", "MB/s", VS(LAB_UP),
		  m_throughput_mb_s, "3546.56 -> 4207.56 MB/s (+18.6%)" },
	},
	.plot = true,
},
{
	.name = "per-priority-allocation-queues",
	.thread = "[RFC PATCH v2 00/13] mm/swap: introduce per-priority allocation queues",
	.summary = "global per-CPU cluster + plist rotation under one lock vs "
		   "per-device per-CPU clusters + per-priority rings (make -j96, "
		   "8 devices)",
	.nr_arms = 3,
	.arms = {
		{ "A", "before the series: one global per-CPU cluster, plist "
		  "rotation under swap_avail_lock",
		  { .select = USWAP_SELECT_GLOBAL_ROTATE,
		    .percpu = USWAP_PERCPU_GLOBAL } },
		{ "B", "after patch 8: per-device per-CPU clusters, the old "
		  "plist rotation",
		  { .select = USWAP_SELECT_GLOBAL_ROTATE,
		    .percpu = USWAP_PERCPU_PER_DEVICE } },
		{ "C", "after patch 13: per-priority allocation queues",
		  { .select = USWAP_SELECT_RINGS,
		    .percpu = USWAP_PERCPU_PER_DEVICE } },
	},
	.workload = { .kind = LAB_WL_KBUILD, .nr_devices = 8,
		      .prio = USWAP_PRIO_DEFAULT, .kbuild = KBUILD_MIX_PAGES(0.7, 96, 0, 17000) },
	.vcpus = 256,
	.nr_metrics = 5,
	.metrics = {
		{ "ns_per_alloc", "CPU ns per allocation (sys time)", "ns",
		  { 0, LAB_UP, LAB_SAME }, m_ns_per_alloc,
		  "sys time A 40899.14 s, B 88712.52 s (+116.9%), C 41140.76 s "
		  "(+0.59%) in the 2 GiB memcg" },
		{ "shared_wait_ns_per_alloc", "shared-lock wait per allocation",
		  "ns", { 0, LAB_UP, LAB_NO_CLAIM }, m_shared_wait_per_alloc,
		  "B's rotation \"serializes cluster transitions on "
		  "swap_avail_lock\"; C's queue removes that contention" },
		{ "global_lock_per_alloc", "global-lock acquisitions / alloc",
		  "", { 0, LAB_NO_CLAIM, LAB_DOWN }, m_global_lock_per_alloc,
		  "the rings have no shared rotation point" },
		{ "shared_locks_per_alloc", "shared-lock acquisitions / alloc",
		  "", { 0, LAB_NO_CLAIM, LAB_DOWN }, m_shared_locks_per_alloc,
		  "no figure" },
		{ "device_use_max_min", "device use max/min at peak", "",
		  { 0, LAB_NO_CLAIM, LAB_AT_MOST }, m_use_ratio,
		  "largest/smallest peak 1.021 on average, worst 1.049 (the "
		  "complete series; A and B not given)", .at_most = 1.049 },
	},
	.plot = true,
},
};

#define NR_EXPERIMENTS (sizeof(experiments) / sizeof(experiments[0]))

/* A replay's metrics: what the seeds measure, with no claim to check. */
#define NO_CLAIMS { LAB_NO_CLAIM, LAB_NO_CLAIM, LAB_NO_CLAIM, LAB_NO_CLAIM }
#define REPLAY_METRIC(KEY, LABEL, UNIT, FN) { KEY, LABEL, UNIT, NO_CLAIMS, FN, "", 0 }

static const struct lab_metric replay_metrics[] = {
	REPLAY_METRIC("ns_per_alloc", "CPU ns per allocation (sys time)", "ns",
		      m_ns_per_alloc),
	REPLAY_METRIC("real_s", "real time", "s", m_real_s),
	REPLAY_METRIC("shared_locks_per_alloc", "shared-lock acquisitions / alloc", "",
		      m_shared_locks_per_alloc),
	REPLAY_METRIC("shared_contended_per_1k_allocs", "shared-lock contentions / 1k allocs",
		      "", m_shared_contended_per_1k),
	REPLAY_METRIC("shared_wait_ns_per_alloc", "shared-lock wait per allocation", "ns",
		      m_shared_wait_per_alloc),
	REPLAY_METRIC("order4_fallback_pct", "order-4 fallback %", "%", m_order4_fallback_pct),
	REPLAY_METRIC("list_scan_steps_per_1k_allocs", "list scan steps / 1k allocs", "",
		      m_list_scan_per_1k),
	REPLAY_METRIC("device_use_max_min", "device use max/min at peak", "", m_use_ratio),
};

void lab_replay_experiment(struct lab_experiment *e, const char *what)
{
	memset(e, 0, sizeof(*e));
	e->name = "replay";
	e->thread = what;
	e->summary = "a recorded trace under each arm's policy";
	e->workload.kind = LAB_WL_REPLAY;
	e->workload.nr_devices = 1;
	e->workload.prio = USWAP_PRIO_DEFAULT;
	e->workload.replay_fill = 0.7;
	e->nr_metrics = sizeof(replay_metrics) / sizeof(replay_metrics[0]);
	memcpy(e->metrics, replay_metrics, sizeof(replay_metrics));
	e->plot = true;
}

unsigned int lab_nr_experiments(void)
{
	return NR_EXPERIMENTS;
}

const struct lab_experiment *lab_experiment_at(unsigned int i)
{
	return i < NR_EXPERIMENTS ? &experiments[i] : NULL;
}

const struct lab_experiment *lab_experiment_find(const char *name)
{
	for (unsigned int i = 0; i < NR_EXPERIMENTS; i++)
		if (!strcmp(experiments[i].name, name))
			return &experiments[i];
	return NULL;
}
