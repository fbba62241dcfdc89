/* SPDX-License-Identifier: MIT */
/*
 * bench_alloc_scale.c - `uswap bench alloc --threads LIST`: the
 * allocator's scaling. One run per thread count, each on a fresh swap
 * system (bench_alloc_measure()), then one table (or one JSON object that
 * holds every run's full report under "runs"), the figures of earlier
 * reports at the same thread counts (--baseline; bench/anchors/ holds the
 * 16-core machine's) and a chart (--svg, gnuplot through the lab's
 * plumbing, lab_gnuplot_svg()).
 *
 * A baseline is any JSON this command printed: one run's object, or a
 * scaling's object with "runs". Its points are matched by thread count;
 * a workload that differs (devices, window, pattern) is said on stderr,
 * since its figures then compare nothing.
 */
#include "bench_alloc.h"
#include "cli.h"
#include "lab/lab_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#define CMD "bench alloc"
#define MAX_BASE_POINTS 256
#define MAX_BASELINE_BYTES (16 << 20) /* a run's report is under 8 KiB */

struct scale {
	const struct bench_alloc_opts *opts;
	struct bench_alloc_result *res;             /* one per thread count */
	struct bench_alloc_point pt[BENCH_MAX_POINTS];
	struct bench_alloc_point base[MAX_BASE_POINTS];
	unsigned int nr_base;
};

/* ------------------------------------------------------------------------
 * Baselines
 * ---------------------------------------------------------------------- */

static double num(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || (!json_object_is_type(v, json_type_double) &&
							!json_object_is_type(v, json_type_int)))
		return NAN;
	return json_object_get_double(v);
}

/* locks.NAME.contended, or 0 where the report has none. */
static double contended(struct json_object *o, const char *lock)
{
	struct json_object *locks, *l;

	if (!json_object_object_get_ex(o, "locks", &locks) ||
	    !json_object_object_get_ex(locks, lock, &l))
		return NAN;
	return num(l, "contended");
}

/* The contended-per-1k figures of a report that predates them. */
static double derived_per_1k(struct json_object *o, const char *key)
{
	double allocs = num(o, "allocs"), v = num(o, key);

	if (!isnan(v))
		return v;
	if (!(allocs > 0))
		return NAN;
	if (!strcmp(key, "shared_contended_per_1k"))
		return 1000.0 * (contended(o, "device") + contended(o, "global")) / allocs;
	return 1000.0 * contended(o, "cluster") / allocs;
}

/* A workload unlike this run's: its figures compare nothing. Say so. */
static void check_same_workload(const struct scale *s, struct json_object *o,
				const char *file)
{
	const struct bench_alloc_opts *opts = s->opts;
	struct json_object *p;
	double devices = num(o, "devices"), window = num(o, "window");

	if (!isnan(devices) && devices != opts->devices)
		fprintf(stderr, "uswap " CMD ": --baseline %s: %g devices, this run %u\n",
			file, devices, opts->devices);
	if (!isnan(window) && window != opts->window)
		fprintf(stderr, "uswap " CMD ": --baseline %s: window %g, this run %u\n",
			file, window, opts->window);
	if (json_object_object_get_ex(o, "pattern", &p) && json_object_is_type(p, json_type_string) &&
	    strcmp(json_object_get_string(p), bench_pattern_name(opts->pattern)))
		fprintf(stderr, "uswap " CMD ": --baseline %s: pattern %s, this run %s\n",
			file, json_object_get_string(p), bench_pattern_name(opts->pattern));
}

/* One run's object of @file into s->base; the workload is checked on
 * the file's @first. Return: 0 or CLI_EXIT_USAGE. */
static int add_base(struct scale *s, struct json_object *o, const char *file, bool first)
{
	struct bench_alloc_point *b;
	double threads = num(o, "threads");

	struct json_object *p;
	double ops = num(o, "ops_per_sec");

	if (isnan(threads) || isnan(ops) ||
	    (json_object_object_get_ex(o, "pattern", &p) && !json_object_is_type(p, json_type_string)))
		return cli_usage_error(CMD, "--baseline %s: not a report of uswap bench alloc "
				       "--json (no threads or ops_per_sec)", file);
	if (!(threads >= 1 && threads <= BENCH_MAX_THREADS) || threads != floor(threads) ||
	    !(ops > 0) || isinf(ops))
		return cli_usage_error(CMD, "--baseline %s: threads %g, ops_per_sec %g: expected "
				       "a whole number of threads from 1 to %d and pairs per "
				       "second above 0", file, threads, ops, BENCH_MAX_THREADS);
	if (s->nr_base == MAX_BASE_POINTS)
		return cli_usage_error(CMD, "--baseline: more than %d runs", MAX_BASE_POINTS);
	if (first)
		check_same_workload(s, o, file);
	b = &s->base[s->nr_base++];
	b->threads = (unsigned int)threads;
	b->ops_per_sec = num(o, "ops_per_sec");
	b->ns_per_op = num(o, "ns_per_op");
	b->shared_per_1k = num(o, "shared_lock_acq_per_1k");
	b->shared_contended_per_1k = derived_per_1k(o, "shared_contended_per_1k");
	b->cluster_contended_per_1k = derived_per_1k(o, "cluster_contended_per_1k");
	return 0;
}

/* A report is a regular file of modest size: not a FIFO that never
 * ends, not /dev/zero. */
static int check_baseline_file(const char *file)
{
	struct stat st;

	if (stat(file, &st))
		return cli_usage_error(CMD, "--baseline %s: %s", file, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return cli_usage_error(CMD, "--baseline %s: not a regular file", file);
	if (st.st_size > MAX_BASELINE_BYTES)
		return cli_usage_error(CMD, "--baseline %s: %lld bytes, more than a report of "
				       "%d runs can be", file, (long long)st.st_size,
				       MAX_BASE_POINTS);
	if (st.st_size == 0)
		return cli_usage_error(CMD, "--baseline %s: empty", file);
	return 0;
}

static int load_baseline(struct scale *s, const char *file)
{
	struct json_object *doc, *runs;
	int rc = check_baseline_file(file);

	if (rc)
		return rc;
	doc = json_object_from_file(file);
	if (!doc) {
		const char *why = json_util_get_last_err();

		/* json-c's message ends with a newline of its own. */
		return cli_usage_error(CMD, "--baseline %s: %.*s", file,
				       why ? (int)strcspn(why, "\n") : 24,
				       why ? why : "cannot be read as JSON");
	}
	if (json_object_object_get_ex(doc, "runs", &runs) &&
	    json_object_is_type(runs, json_type_array)) {
		if (!json_object_array_length(runs))
			rc = cli_usage_error(CMD, "--baseline %s: \"runs\" is empty", file);
		for (size_t i = 0; !rc && i < json_object_array_length(runs); i++)
			rc = add_base(s, json_object_array_get_idx(runs, i), file, i == 0);
	} else {
		rc = add_base(s, doc, file, true);
	}
	json_object_put(doc);
	return rc;
}

/* The first baseline run at @threads, or NULL. */
static const struct bench_alloc_point *base_at(const struct scale *s, unsigned int threads)
{
	for (unsigned int i = 0; i < s->nr_base; i++)
		if (s->base[i].threads == threads)
			return &s->base[i];
	return NULL;
}

/* ------------------------------------------------------------------------
 * Output
 * ---------------------------------------------------------------------- */

static void print_table(const struct scale *s)
{
	const struct bench_alloc_opts *o = s->opts;
	bool base = s->nr_base > 0;

	printf("uswap bench alloc: scaling, %u devices, window %u, %s\n", o->devices,
	       o->window, bench_pattern_name(o->pattern));
	printf("%7s %11s %9s %8s %10s %13s %15s", "THREADS", "M PAIRS/S", "NS/PAIR",
	       "SPEEDUP", "SHARED/1K", "CONTENDED/1K", "CLUSTER-CONT/1K");
	if (base)
		printf(" %11s %9s %10s", "BASE M/S", "BASE NS", "VS BASE");
	putchar('\n');
	for (unsigned int i = 0; i < o->nr_points; i++) {
		const struct bench_alloc_point *p = &s->pt[i], *b = base_at(s, p->threads);

		printf("%7u %11.2f %9.1f %8.2f %10.3g %13.3g %15.3g", p->threads,
		       p->ops_per_sec / 1e6, p->ns_per_op, p->ops_per_sec / s->pt[0].ops_per_sec,
		       p->shared_per_1k, p->shared_contended_per_1k, p->cluster_contended_per_1k);
		if (b && !isnan(b->ns_per_op))
			printf(" %11.2f %9.1f %9.2fx", b->ops_per_sec / 1e6, b->ns_per_op,
			       p->ops_per_sec / b->ops_per_sec);
		else if (b)
			printf(" %11.2f %9s %9.2fx", b->ops_per_sec / 1e6, "-",
			       p->ops_per_sec / b->ops_per_sec);
		else if (base)
			printf(" %11s %9s %10s", "-", "-", "-");
		putchar('\n');
	}
	if (base)
		printf("VS BASE: this run's pairs/s over the baseline's at the same thread "
		       "count (above 1: faster)\n");
	printf("SPEEDUP: pairs/s over the first row's; NS/PAIR is seen by one thread\n");
}

static void print_json(const struct scale *s)
{
	struct bench_alloc_opts one = *s->opts;
	struct cli_json j;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_array_open(&j, "threads", true);
	for (unsigned int i = 0; i < s->opts->nr_points; i++)
		cli_json_u64(&j, NULL, s->opts->thread_list[i]);
	cli_json_array_close(&j);
	cli_json_array_open(&j, "runs", false);
	for (unsigned int i = 0; i < s->opts->nr_points; i++) {
		const struct bench_alloc_point *b = base_at(s, s->pt[i].threads);

		one.threads = s->opts->thread_list[i];
		cli_json_object_open(&j, NULL, false);
		bench_alloc_json_members(&j, &one, &s->res[i]);
		cli_json_double(&j, "speedup", s->pt[i].ops_per_sec / s->pt[0].ops_per_sec);
		if (b)
			cli_json_double(&j, "vs_baseline", s->pt[i].ops_per_sec / b->ops_per_sec);
		cli_json_object_close(&j);
	}
	cli_json_array_close(&j);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

/* Columns: threads, M pairs/s, ns per pair, and the baseline's two (NaN
 * where it has no run at that count: a gap in its line). */
static int svg_data(FILE *f, void *ctx)
{
	const struct scale *s = ctx;

	for (unsigned int i = 0; i < s->opts->nr_points; i++) {
		const struct bench_alloc_point *p = &s->pt[i], *b = base_at(s, p->threads);

		fprintf(f, "%u %.4f %.2f %.4f %.2f\n", p->threads, p->ops_per_sec / 1e6,
			p->ns_per_op, b ? b->ops_per_sec / 1e6 : NAN, b ? b->ns_per_op : NAN);
	}
	return ferror(f) ? -EIO : 0;
}

static void svg_script(FILE *g, const char *data, const char *path, void *ctx)
{
	const struct scale *s = ctx;
	const char *base = s->nr_base ? "baseline" : NULL;

	fprintf(g, "set terminal svg size 800,700 dynamic background rgb 'white'\n"
		   "set output '%s'\nset multiplot layout 2,1 title 'uswap bench alloc: "
		   "%u devices, window %u, %s'\nset xlabel 'threads'\nset grid\n"
		   "set key top left\nset datafile missing 'nan'\n", path, s->opts->devices,
		s->opts->window, bench_pattern_name(s->opts->pattern));
	fprintf(g, "set title 'throughput'\nset ylabel 'M pairs/s'\nset yrange [0:*]\n"
		   "plot '%s' using 1:2 with linespoints lw 2 title 'this run'", data);
	if (base)
		fprintf(g, ", '%s' using 1:4 with linespoints dt 2 title '%s'", data, base);
	fprintf(g, "\nset title 'cost per pair, one thread'\nset ylabel 'ns'\n"
		   "plot '%s' using 1:3 with linespoints lw 2 title 'this run'", data);
	if (base)
		fprintf(g, ", '%s' using 1:5 with linespoints dt 2 title '%s'", data, base);
	fprintf(g, "\nunset multiplot\n");
}

static int draw_svg(const struct scale *s, bool made)
{
	return cli_svg_draw(CMD, s->opts->svg, made, svg_data, svg_script, (void *)s);
}

/* ------------------------------------------------------------------------
 * The runs
 * ---------------------------------------------------------------------- */

static int run_points(struct scale *s)
{
	const struct bench_alloc_opts *o = s->opts;

	for (unsigned int i = 0; i < o->nr_points; i++) {
		struct bench_alloc_opts one = *o;
		int rc;

		one.threads = o->thread_list[i];
		one.json = true; /* quiet: the progress lines are the runs' */
		rc = bench_alloc_measure(&one, &s->res[i]);
		if (rc)
			return rc;
		bench_alloc_point_of(&one, &s->res[i], &s->pt[i]);
		if (!o->json || isatty(STDERR_FILENO))
			fprintf(stderr, "uswap " CMD ": %u of %u: %u threads, %.2f M pairs/s\n",
				i + 1, o->nr_points, one.threads, s->pt[i].ops_per_sec / 1e6);
	}
	return 0;
}

int bench_alloc_scale(const struct bench_alloc_opts *opts)
{
	struct scale *s = calloc(1, sizeof(*s));
	bool made = false;
	int rc = 0;

	if (!s || !(s->res = calloc(opts->nr_points, sizeof(*s->res)))) {
		free(s);
		return cli_runtime_error(CMD, "out of memory");
	}
	s->opts = opts;
	if (opts->svg)
		rc = cli_svg_open(CMD, "--svg", opts->svg, &made);
	for (unsigned int i = 0; !rc && i < opts->nr_baselines; i++)
		rc = load_baseline(s, opts->baseline[i]);
	if (!rc)
		rc = run_points(s);
	if (!rc && opts->json)
		print_json(s);
	else if (!rc)
		print_table(s);
	if (!rc && opts->svg)
		rc = draw_svg(s, made);
	else if (rc && made)
		unlink(opts->svg); /* the empty file made for a run that failed */
	free(s->res);
	free(s);
	return rc;
}
