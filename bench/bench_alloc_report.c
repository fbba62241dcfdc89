/* SPDX-License-Identifier: MIT */
/*
 * bench_alloc_report.c - the results of `uswap bench alloc`, as a table
 * for people or as one JSON object for scripts.
 *
 * Both outputs come from the same derived metrics (struct metrics):
 *   ops/s                pairs / elapsed
 *   ns per op            elapsed * threads / pairs (cost seen by a thread)
 *   fallback %           swpout_fallback[k] / (swpout[k] + swpout_fallback[k])
 *   balance              worst max/min of device inuse over the groups of
 *                        equal priority (end of the timed phase)
 *   locks per 1k allocs  lock acquisitions per 1000 successful uswap_alloc()
 *                        calls; "shared" = device list + global locks
 *   metadata per slot    sum of metadata_bytes / sum of nr_slots: at the
 *                        end, before any allocation (static) and the
 *                        largest sample of the run (peak)
 * Counters are deltas over the timed phase.
 */
#include "bench_alloc.h"
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const lock_names[USWAP_LOCK_MAX] = {
	[USWAP_LOCK_DEVICE] = "device",
	[USWAP_LOCK_CLUSTER] = "cluster",
	[USWAP_LOCK_PERCPU] = "percpu",
	[USWAP_LOCK_GLOBAL] = "global",
};

struct metrics {
	uint64_t pairs;
	double ops_per_sec;
	double ns_per_op;
	double fallback_pct[USWAP_NR_ORDERS];  /* NAN: order not requested */
	double balance;                        /* NAN: no group of two or more */
	int balance_prio;
	uint64_t balance_max, balance_min;     /* inuse in the worst group */
	double lock_per_1k[USWAP_LOCK_MAX];
	double shared_per_1k;
	double metadata_per_slot;
	double metadata_static_per_slot;
	double metadata_peak_per_slot;
	uint64_t lib_allocs;                   /* sum of swpout deltas */
	uint64_t lib_fallbacks;                /* sum of swpout_fallback deltas */
};

static double ratio(double num, double den)
{
	return den > 0 ? num / den : NAN;
}

static void compute_fallback(const struct bench_alloc_result *res, struct metrics *m)
{
	const struct uswap_stats *d = &res->delta;

	for (int k = 0; k < USWAP_NR_ORDERS; k++) {
		m->fallback_pct[k] = 100.0 * ratio((double)d->swpout_fallback[k],
			(double)(d->swpout[k] + d->swpout_fallback[k]));
		m->lib_allocs += d->swpout[k];
		m->lib_fallbacks += d->swpout_fallback[k];
	}
}

/* max/min inuse of the devices with priority @prio; NAN if fewer than 2. */
static double group_balance(const struct bench_alloc_result *res, int prio,
			    uint64_t *max, uint64_t *min)
{
	unsigned int nr = 0;

	*max = 0;
	*min = UINT64_MAX;
	for (unsigned int i = 0; i < res->nr_devices; i++) {
		if (res->dev[i].prio != prio)
			continue;
		nr++;
		if (res->dev[i].inuse > *max)
			*max = res->dev[i].inuse;
		if (res->dev[i].inuse < *min)
			*min = res->dev[i].inuse;
	}
	if (nr < 2)
		return NAN;
	if (*min == 0)
		return *max == 0 ? 1.0 : INFINITY;
	return (double)*max / (double)*min;
}

static void compute_balance(const struct bench_alloc_result *res, struct metrics *m)
{
	m->balance = NAN;
	for (unsigned int i = 0; i < res->nr_devices; i++) {
		uint64_t max, min;
		double b = group_balance(res, res->dev[i].prio, &max, &min);

		if (isnan(b) || (!isnan(m->balance) && b <= m->balance))
			continue;
		m->balance = b;
		m->balance_prio = res->dev[i].prio;
		m->balance_max = max;
		m->balance_min = min;
	}
}

static void compute_metrics(const struct bench_alloc_opts *opts,
			    const struct bench_alloc_result *res, struct metrics *m)
{
	const struct uswap_stats *d = &res->delta;
	double allocs = (double)res->counts.allocs;
	uint64_t meta = 0, slots = 0;

	memset(m, 0, sizeof(*m));
	m->pairs = res->counts.frees;
	m->ops_per_sec = ratio((double)m->pairs, res->elapsed_s);
	m->ns_per_op = ratio(res->elapsed_s * 1e9 * opts->threads, (double)m->pairs);
	compute_fallback(res, m);
	compute_balance(res, m);
	for (int c = 0; c < USWAP_LOCK_MAX; c++)
		m->lock_per_1k[c] = 1000.0 * ratio((double)d->locks[c].acquired, allocs);
	m->shared_per_1k = 1000.0 * ratio((double)(d->locks[USWAP_LOCK_DEVICE].acquired +
					  d->locks[USWAP_LOCK_GLOBAL].acquired), allocs);
	for (unsigned int i = 0; i < res->nr_devices; i++) {
		meta += res->dev[i].metadata_bytes;
		slots += res->dev[i].nr_slots;
	}
	m->metadata_per_slot = ratio((double)meta, (double)slots);
	m->metadata_static_per_slot = ratio((double)res->metadata_static, (double)slots);
	m->metadata_peak_per_slot = ratio((double)res->metadata_peak, (double)slots);
}

/* The library's own counts must match what the benchmark did. */
static void cross_check(const struct bench_alloc_result *res, const struct metrics *m)
{
	uint64_t splits = 0;

	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		splits += res->counts.split[k];
	if (m->lib_allocs != res->counts.allocs || m->lib_fallbacks != splits)
		fprintf(stderr, "uswap bench alloc: note: library stats count %llu "
			"allocations and %llu fallbacks, the benchmark made %llu "
			"and %llu\n", (unsigned long long)m->lib_allocs,
			(unsigned long long)m->lib_fallbacks,
			(unsigned long long)res->counts.allocs,
			(unsigned long long)splits);
	if (res->delta.bad_free)
		fprintf(stderr, "uswap bench alloc: note: library counted %llu bad "
			"frees\n", (unsigned long long)res->delta.bad_free);
}

/* snprintf() at *@used into @buf; output past @len is cut off. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n;
}

static void format_orders(const struct bench_alloc_opts *opts, char *buf, size_t len)
{
	unsigned int nr = 0;
	size_t used = 0;

	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		nr += opts->order_weight[k] != 0;
	buf[0] = '\0';
	for (int k = 0; k < USWAP_NR_ORDERS; k++) {
		if (!opts->order_weight[k])
			continue;
		if (nr == 1)
			append(buf, len, &used, "%d", k);
		else
			append(buf, len, &used, "%s%d:%u", used ? "," : "", k,
			       opts->order_weight[k]);
	}
}

static void format_prios(const struct bench_alloc_result *res, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < res->nr_devices; i++)
		append(buf, len, &used, "%s%d", i ? "," : "", res->dev[i].prio);
}

/* ------------------------------------------------------------------------
 * Table
 * ---------------------------------------------------------------------- */

static void print_header(const struct bench_alloc_opts *opts,
			 const struct bench_alloc_result *res)
{
	char orders[128], prios[256];

	format_orders(opts, orders, sizeof(orders));
	format_prios(res, prios, sizeof(prios));
	printf("uswap bench alloc: %u thread%s, pattern %s, window %u, orders %s\n",
	       opts->threads, opts->threads == 1 ? "" : "s",
	       bench_pattern_name(opts->pattern), opts->window, orders);
	printf("  %u devices x %llu MiB, prio %s, quota %u, nr_cpus %u (%s), seed %llu\n",
	       res->nr_devices,
	       (unsigned long long)(opts->device_slots * USWAP_PAGE_SIZE >> 20),
	       prios, res->quota, res->nr_cpus,
	       opts->pin_cpu ? "pinned" : "sched_getcpu",
	       (unsigned long long)opts->seed);
	printf("  timed %.3f s: %llu requests, %llu allocs, %llu frees\n\n",
	       res->elapsed_s, (unsigned long long)res->counts.requests,
	       (unsigned long long)res->counts.allocs,
	       (unsigned long long)res->counts.frees);
}

#define ROW "  %-30s "

static void print_fallback_rows(const struct bench_alloc_opts *opts,
				const struct bench_alloc_result *res,
				const struct metrics *m)
{
	for (int k = 0; k < USWAP_NR_ORDERS; k++) {
		char label[48];

		if (!opts->order_weight[k])
			continue;
		snprintf(label, sizeof(label), "fallback %% order %d", k);
		printf(ROW "%.2f  (%llu of %llu; %llu split)\n", label,
		       m->fallback_pct[k],
		       (unsigned long long)res->delta.swpout_fallback[k],
		       (unsigned long long)(res->delta.swpout[k] +
					    res->delta.swpout_fallback[k]),
		       (unsigned long long)res->counts.split[k]);
	}
}

static void print_balance_row(const struct metrics *m)
{
	char label[48];

	if (isnan(m->balance)) {
		printf(ROW "n/a (no two devices share a priority)\n", "balance max/min");
		return;
	}
	snprintf(label, sizeof(label), "balance max/min (prio %d)", m->balance_prio);
	if (isinf(m->balance))
		printf(ROW "inf  (inuse %llu / 0)\n", label,
		       (unsigned long long)m->balance_max);
	else
		printf(ROW "%.3f  (inuse %llu / %llu)\n", label, m->balance,
		       (unsigned long long)m->balance_max,
		       (unsigned long long)m->balance_min);
}

static void print_lock_table(const struct bench_alloc_result *res,
			     const struct metrics *m)
{
	printf("\n  %-10s %14s %14s %12s\n", "lock", "acquired", "per 1k allocs",
	       "contended");
	for (int c = 0; c < USWAP_LOCK_MAX; c++)
		printf("  %-10s %14llu %14.4g %12llu\n", lock_names[c],
		       (unsigned long long)res->delta.locks[c].acquired,
		       m->lock_per_1k[c],
		       (unsigned long long)res->delta.locks[c].contended);
}

static void print_counters(const struct bench_alloc_result *res)
{
	const struct uswap_stats *d = &res->delta;

	printf("\n  alloc fast %llu, slow %llu, fail %llu; cluster moves %llu, "
	       "frag scans %llu, ring advances %llu\n\n",
	       (unsigned long long)d->alloc_fast, (unsigned long long)d->alloc_slow,
	       (unsigned long long)d->alloc_fail,
	       (unsigned long long)d->cluster_moves,
	       (unsigned long long)d->frag_scans,
	       (unsigned long long)d->ring_advance);
}

void bench_alloc_print_table(const struct bench_alloc_opts *opts,
			     const struct bench_alloc_result *res,
			     struct uswap *u)
{
	struct metrics m;

	compute_metrics(opts, res, &m);
	print_header(opts, res);
	printf(ROW "%.0f\n", "ops/s (alloc+free pairs)", m.ops_per_sec);
	printf(ROW "%.1f\n", "ns per pair (per thread)", m.ns_per_op);
	print_fallback_rows(opts, res, &m);
	printf(ROW "%llu\n", "ENOSPC (oldest freed, retried)",
	       (unsigned long long)res->counts.enospc);
	print_balance_row(&m);
	printf(ROW "%.4g  (device %.4g + global %.4g)\n", "shared locks per 1k allocs",
	       m.shared_per_1k, m.lock_per_1k[USWAP_LOCK_DEVICE],
	       m.lock_per_1k[USWAP_LOCK_GLOBAL]);
	printf(ROW "%.4g\n", "cluster locks per 1k allocs",
	       m.lock_per_1k[USWAP_LOCK_CLUSTER]);
	printf(ROW "%.4f  (static %.4f, peak %.4f)\n", "metadata bytes per slot",
	       m.metadata_per_slot, m.metadata_static_per_slot, m.metadata_peak_per_slot);
	print_lock_table(res, &m);
	print_counters(res);
	fflush(stdout);
	uswap_swaps(u, stdout);
	fflush(stdout);
	cross_check(res, &m);
}

/* ------------------------------------------------------------------------
 * JSON
 * ---------------------------------------------------------------------- */

static void json_per_order(struct cli_json *j, const char *key,
			   const uint64_t v[USWAP_NR_ORDERS])
{
	cli_json_array_open(j, key, true);
	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		cli_json_u64(j, NULL, v[k]);
	cli_json_array_close(j);
}

/* An object keyed by the orders of the mix ("0", "4", ...). */
static void json_by_mix_order(struct cli_json *j, const char *key,
			      const struct bench_alloc_opts *opts,
			      const double *dv, const unsigned int *uv)
{
	cli_json_object_open(j, key, true);
	for (int k = 0; k < USWAP_NR_ORDERS; k++) {
		char name[4];

		if (!opts->order_weight[k])
			continue;
		snprintf(name, sizeof(name), "%d", k);
		if (dv)
			cli_json_double(j, name, dv[k]);
		else
			cli_json_u64(j, name, uv[k]);
	}
	cli_json_object_close(j);
}

static void json_config(struct cli_json *j, const struct bench_alloc_opts *opts,
			const struct bench_alloc_result *res)
{
	cli_json_u64(j, "threads", opts->threads);
	json_by_mix_order(j, "orders", opts, NULL, opts->order_weight);
	cli_json_u64(j, "devices", res->nr_devices);
	cli_json_u64(j, "device_slots", opts->device_slots);
	cli_json_string(j, "pattern", bench_pattern_name(opts->pattern));
	cli_json_u64(j, "window", opts->window);
	cli_json_u64(j, "quota", res->quota);
	cli_json_u64(j, "nr_cpus", res->nr_cpus);
	cli_json_bool(j, "pin_cpu", opts->pin_cpu);
	cli_json_u64(j, "seed", opts->seed);
}

/* Contended acquisitions of the shared locks (device list + global), or
 * of the cluster locks (@shared false), per 1000 allocations. */
static double contended_per_1k(const struct bench_alloc_result *res, bool shared)
{
	const struct uswap_stats *d = &res->delta;
	uint64_t n = shared ? d->locks[USWAP_LOCK_DEVICE].contended +
			      d->locks[USWAP_LOCK_GLOBAL].contended :
			      d->locks[USWAP_LOCK_CLUSTER].contended;

	return 1000.0 * ratio((double)n, (double)res->counts.allocs);
}

static void json_metrics(struct cli_json *j, const struct bench_alloc_opts *opts,
			 const struct bench_alloc_result *res, const struct metrics *m)
{
	cli_json_double(j, "elapsed_s", res->elapsed_s);
	cli_json_double(j, "ops_per_sec", m->ops_per_sec);
	cli_json_double(j, "ns_per_op", m->ns_per_op);
	json_by_mix_order(j, "fallback_pct", opts, m->fallback_pct, NULL);
	cli_json_double(j, "balance_max_min", m->balance);
	if (!isnan(m->balance)) {
		cli_json_i64(j, "balance_prio", m->balance_prio);
		cli_json_u64(j, "balance_inuse_max", m->balance_max);
		cli_json_u64(j, "balance_inuse_min", m->balance_min);
	}
	cli_json_double(j, "shared_lock_acq_per_1k", m->shared_per_1k);
	cli_json_double(j, "shared_contended_per_1k", contended_per_1k(res, true));
	cli_json_double(j, "cluster_lock_acq_per_1k", m->lock_per_1k[USWAP_LOCK_CLUSTER]);
	cli_json_double(j, "cluster_contended_per_1k", contended_per_1k(res, false));
	cli_json_double(j, "metadata_bytes_per_slot", m->metadata_per_slot);
	cli_json_double(j, "metadata_static_bytes_per_slot", m->metadata_static_per_slot);
	cli_json_double(j, "metadata_peak_bytes_per_slot", m->metadata_peak_per_slot);
}

static void json_counts(struct cli_json *j, const struct bench_alloc_result *res)
{
	const struct uswap_stats *d = &res->delta;

	cli_json_u64(j, "requests", res->counts.requests);
	cli_json_u64(j, "allocs", res->counts.allocs);
	cli_json_u64(j, "frees", res->counts.frees);
	cli_json_u64(j, "enospc", res->counts.enospc);
	json_per_order(j, "splits", res->counts.split);
	json_per_order(j, "swpout", d->swpout);
	json_per_order(j, "swpout_fallback", d->swpout_fallback);
	cli_json_object_open(j, "stats", true);
	cli_json_u64(j, "alloc_fast", d->alloc_fast);
	cli_json_u64(j, "alloc_slow", d->alloc_slow);
	cli_json_u64(j, "alloc_fail", d->alloc_fail);
	cli_json_u64(j, "free_slots", d->free_slots);
	cli_json_u64(j, "bad_free", d->bad_free);
	cli_json_u64(j, "frag_scans", d->frag_scans);
	cli_json_u64(j, "cluster_moves", d->cluster_moves);
	cli_json_u64(j, "ring_advance", d->ring_advance);
	cli_json_object_close(j);
	cli_json_object_open(j, "locks", false);
	for (int c = 0; c < USWAP_LOCK_MAX; c++) {
		cli_json_object_open(j, lock_names[c], true);
		cli_json_u64(j, "acquired", d->locks[c].acquired);
		cli_json_u64(j, "contended", d->locks[c].contended);
		cli_json_object_close(j);
	}
	cli_json_object_close(j);
}

static void json_devices(struct cli_json *j, const struct bench_alloc_result *res)
{
	cli_json_array_open(j, "devices_info", false);
	for (unsigned int i = 0; i < res->nr_devices; i++) {
		const struct uswap_device_info *info = &res->dev[i];

		cli_json_object_open(j, NULL, true);
		cli_json_string(j, "name", info->name);
		cli_json_i64(j, "type", info->type);
		cli_json_i64(j, "prio", info->prio);
		cli_json_u64(j, "size_kb", info->size_kb);
		cli_json_u64(j, "used_kb", info->used_kb);
		cli_json_u64(j, "inuse", info->inuse);
		cli_json_u64(j, "metadata_bytes", info->metadata_bytes);
		cli_json_u64(j, "nr_clusters", info->nr_clusters);
		cli_json_u64(j, "free_clusters", info->free_clusters);
		cli_json_u64(j, "nonfull_clusters", info->nonfull_clusters);
		cli_json_u64(j, "frag_clusters", info->frag_clusters);
		cli_json_u64(j, "full_clusters", info->full_clusters);
		cli_json_u64(j, "percpu_clusters", info->percpu_clusters);
		cli_json_object_close(j);
	}
	cli_json_array_close(j);
}

void bench_alloc_print_json(const struct bench_alloc_opts *opts,
			    const struct bench_alloc_result *res)
{
	struct cli_json j;
	struct metrics m;

	compute_metrics(opts, res, &m);
	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	bench_alloc_json_members(&j, opts, res);
	cli_json_object_close(&j);
	cli_json_finish(&j);
	cross_check(res, &m);
}

void bench_alloc_json_members(struct cli_json *j, const struct bench_alloc_opts *opts,
			      const struct bench_alloc_result *res)
{
	struct metrics m;

	compute_metrics(opts, res, &m);
	json_config(j, opts, res);
	json_metrics(j, opts, res, &m);
	json_counts(j, res);
	json_devices(j, res);
}

void bench_alloc_point_of(const struct bench_alloc_opts *opts,
			  const struct bench_alloc_result *res,
			  struct bench_alloc_point *pt)
{
	struct metrics m;

	compute_metrics(opts, res, &m);
	cross_check(res, &m);
	pt->threads = opts->threads;
	pt->ops_per_sec = m.ops_per_sec;
	pt->ns_per_op = m.ns_per_op;
	pt->shared_per_1k = m.shared_per_1k;
	pt->shared_contended_per_1k = contended_per_1k(res, true);
	pt->cluster_contended_per_1k = contended_per_1k(res, false);
}
