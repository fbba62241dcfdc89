// SPDX-License-Identifier: MIT
/*
 * run_stats.c - the statistics of `uswap run`: every process of the tree
 * that had a pager appended one JSON object (a line) to the stats file
 * when it ended, and before each exec (src/agent/agent.c, exec.c): one
 * per pid and image, the last one of an image counting. They are added up here: counters
 * summed, the resident peak the largest of any process (the limit is per
 * process), fault service percentiles those of the process that served
 * the most faults (percentiles do not add), the device table that of the
 * process `uswap run` started. Parsed and written with json-c.
 */
#include "cli.h"
#include "run_cmd.h"
#include "status_cmd.h"
#include "table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include <uswap/uswap.h>

#define CMD "run"

static int64_t get_i64(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static double get_num(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

/* Add the per-order array @key of @line into @sum's. */
static void add_orders(json_object *sum, json_object *line, const char *key)
{
	json_object *a, *b;

	if (!json_object_object_get_ex(line, key, &b) || !json_object_is_type(b, json_type_array))
		return;
	if (!json_object_object_get_ex(sum, key, &a)) {
		a = json_object_new_array();
		json_object_object_add(sum, key, a);
	}
	for (size_t i = 0; i < json_object_array_length(b); i++) {
		int64_t v = json_object_get_int64(json_object_array_get_idx(b, i));

		if (i < json_object_array_length(a))
			v += json_object_get_int64(json_object_array_get_idx(a, i));
		json_object_array_put_idx(a, i, json_object_new_int64(v));
	}
}

static void add_i64(json_object *sum, json_object *line, const char *key)
{
	json_object_object_add(sum, key, json_object_new_int64(get_i64(sum, key) +
							       get_i64(line, key)));
}

static void max_i64(json_object *sum, json_object *line, const char *key)
{
	int64_t a = get_i64(sum, key), b = get_i64(line, key);

	json_object_object_add(sum, key, json_object_new_int64(a > b ? a : b));
}

/* The most memory the zram devices of one process's @line took, each at
 * its own peak (mem_used_max): the pools live in the process, so they are
 * part of its anonymous RSS that no pager holds. */
static int64_t zram_pool_peak(json_object *line)
{
	json_object *devs, *z;
	int64_t n = 0;

	if (!json_object_object_get_ex(line, "devices", &devs))
		return 0;
	for (size_t i = 0; i < json_object_array_length(devs); i++)
		if (json_object_object_get_ex(json_object_array_get_idx(devs, i), "zram", &z))
			n += get_i64(z, "mem_used_max");
	return n;
}

/* Copy @key of @line into @sum (sharing the value). */
static void take(json_object *sum, json_object *line, const char *key)
{
	json_object *v;

	if (json_object_object_get_ex(line, key, &v))
		json_object_object_add(sum, key, json_object_get(v));
}

static void add_line(json_object *sum, json_object *line, int64_t *most_faults)
{
	static const char *const sums[] = { "swpin", "evictions", "evict_zero", "evict_pinned",
					    "over_limit",
					    "read_errors", "heap_fallbacks", "fault_count",
					    "faults", "wp_faults", "zero_fills", "readahead",
					    "reclaim_waits", "workingset_refault",
					    "workingset_activate", "zero_written" };
	json_object *root, *daemon;
	const char *key;

	add_orders(sum, line, "swpout");
	add_orders(sum, line, "swpout_fallback");
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		add_i64(sum, line, sums[i]);
	max_i64(sum, line, "resident_peak_bytes");
	json_object_object_add(sum, "resident_peak_sum_bytes",
			       json_object_new_int64(get_i64(sum, "resident_peak_sum_bytes") +
						     get_i64(line, "resident_peak_bytes")));
	max_i64(sum, line, "limit_bytes");
	if (get_i64(line, "fault_count") >= *most_faults) {
		*most_faults = get_i64(line, "fault_count");
		take(sum, line, "fault_us_p50");
		take(sum, line, "fault_us_p99");
	}
	if (json_object_object_get_ex(line, "root", &root) && json_object_get_boolean(root)) {
		take(sum, line, "devices");
		take(sum, line, "daemon_slots_left_kb");
	}
	/* --daemon: the pools are uswap run's memory, not the tree's. */
	key = json_object_object_get_ex(line, "daemon", &daemon) &&
	      json_object_get_boolean(daemon) ? "daemon_zram_pool_peak_bytes"
					      : "zram_pool_peak_sum_bytes";
	json_object_object_add(sum, key, json_object_new_int64(get_i64(sum, key) +
							       zram_pool_peak(line)));
}

/* The file's lines by pid and image, in the order they first came: a
 * later line of the same image (its exit, after an exec that failed)
 * replaces the earlier (json-c replaces a key's value in place). */
static json_object *lines_by_image(FILE *f)
{
	json_object *lines = json_object_new_object();
	char *buf = NULL, key[64];
	size_t cap = 0;

	while (lines && getline(&buf, &cap, f) > 0) {
		json_object *line = json_tokener_parse(buf);

		if (!line)
			continue; /* a process killed in the middle of its write */
		snprintf(key, sizeof(key), "%lld/%lld", (long long)get_i64(line, "pid"),
			 (long long)get_i64(line, "image_ns"));
		json_object_object_add(lines, key, line);
	}
	free(buf);
	return lines;
}

/* The sum of the file's lines, or NULL when there are none. Processes
 * are counted by pid: the programs one execs are one process. */
static json_object *read_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	json_object *lines, *sum = NULL, *pids;
	int64_t most_faults = -1;

	if (!f)
		return NULL;
	lines = lines_by_image(f);
	fclose(f);
	pids = json_object_new_object();
	if (!lines || !pids) {
		json_object_put(lines);
		json_object_put(pids);
		return NULL;
	}
	json_object_object_foreach(lines, key, line) {
		char pid[24];

		(void)key;
		if (!sum)
			sum = json_object_new_object();
		add_line(sum, line, &most_faults);
		snprintf(pid, sizeof(pid), "%lld", (long long)get_i64(line, "pid"));
		json_object_object_add(pids, pid, NULL);
	}
	if (sum) {
		json_object_object_add(sum, "processes",
				       json_object_new_int64(json_object_object_length(pids)));
		if (!json_object_object_get_ex(sum, "devices", NULL))
			json_object_object_add(sum, "devices", json_object_new_array());
	}
	json_object_put(pids);
	json_object_put(lines);
	return sum;
}

static void print_orders(json_object *sum, const char *key)
{
	json_object *a;

	fprintf(stderr, "  %-16s", key);
	if (json_object_object_get_ex(sum, key, &a))
		for (size_t i = 0; i < json_object_array_length(a); i++)
			fprintf(stderr, "%s%lld", i ? ", " : "",
				(long long)json_object_get_int64(json_object_array_get_idx(a, i)));
	fprintf(stderr, "   (per order 0..9)\n");
}

/* Whether a backend's figure says something is wrong: a mirror leg's
 * "legN_state" other than healthy, or a device's own "state" other than
 * ok (an NBD export that timed out or lost its claim). */
static bool bad_state(const char *key, const char *value)
{
	size_t n = strlen(key);

	if (n >= 6 && !strcmp(key + n - 6, "_state"))
		return strcmp(value, "healthy") != 0;
	return !strcmp(key, "state") && strcmp(value, "ok") != 0;
}

/* One line per device with errors or a failed part (read and write
 * errors, a mirror's lost leg), after the table: a device that looks
 * healthy in the table must be. */
static void print_health(json_object *devs)
{
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i), *name, *backend;
		long long rd = get_i64(d, "read_errors"), wr = get_i64(d, "write_errors");
		bool said = false;

		json_object_object_get_ex(d, "name", &name);
		if (rd || wr) {
			fprintf(stderr, "  %-16s%s: %lld read errors, %lld write errors",
				"trouble", name ? json_object_get_string(name) : "?", rd, wr);
			said = true;
		}
		if (json_object_object_get_ex(d, "backend", &backend)) {
			json_object_object_foreach(backend, key, val) {
				const char *v = json_object_get_string(val);

				if (!bad_state(key, v))
					continue;
				if (!said)
					fprintf(stderr, "  %-16s%s:", "trouble",
						name ? json_object_get_string(name) : "?");
				fprintf(stderr, "%s %s %s", said ? ";" : "", key, v);
				said = true;
			}
		}
		if (said)
			fputc('\n', stderr);
	}
}

/* The root process's devices as swapon --show and zramctl print them
 * (at its exit). */
static void print_devices(json_object *sum)
{
	static const char indent[] = "                  ";
	const struct cli_table_opts t = { 0 };
	json_object *devs;

	if (!json_object_object_get_ex(sum, "devices", &devs))
		return;
	fprintf(stderr, "  devices\n");
	status_print_devices(stderr, sum, indent, &t);
	print_health(devs);
	for (size_t i = 0; i < json_object_array_length(devs); i++)
		if (json_object_object_get_ex(json_object_array_get_idx(devs, i), "zram", NULL)) {
			fprintf(stderr, "  zram\n");
			status_print_zram(stderr, sum, indent, &t);
			break;
		}
}

/* A byte count as util-linux prints sizes (the tables' style: 14.2M). */
static const char *size(int64_t bytes, char buf[32])
{
	return cli_human_size(bytes > 0 ? (uint64_t)bytes : 0, buf, 32);
}

/* The tree as the kernel saw it, and how much of its anonymous memory no
 * pager held: at least its peak less every process's resident peak. */
static void print_tree(json_object *sum)
{
	json_object *tree;
	int64_t peak;
	char a[32], b[32];

	if (!json_object_object_get_ex(sum, "tree", &tree) || !get_i64(tree, "samples"))
		return;
	peak = get_i64(tree, "anon_rss_peak_bytes");
	fprintf(stderr, "  %-16s%s anonymous RSS at its peak, %lld processes at most "
		"(sampled every %d ms)\n", "tree", size(peak, a),
		(long long)get_i64(tree, "processes_peak"), RUN_TREE_PERIOD_MS);
	fprintf(stderr, "  %-16s%s proportionally (Pss_Anon: a page shared after a fork "
		"counted once)\n", "", size(get_i64(tree, "anon_pss_peak_bytes"), b));
	fprintf(stderr, "  %-16s%s at least: memory no pager held (not swapped: see "
		"\"What is covered\" in docs/run.md)\n", "unmanaged",
		size(get_i64(sum, "unmanaged_anon_bytes_min"), a));
	if (get_i64(sum, "zram_pool_peak_sum_bytes"))
		fprintf(stderr, "  %-16szram pools up to %s: they live in the processes' own "
			"memory (each device at its peak, added up)\n", "",
			size(get_i64(sum, "zram_pool_peak_sum_bytes"), a));
	if (get_i64(sum, "daemon_zram_pool_peak_bytes"))
		fprintf(stderr, "  %-16szram pools up to %s, in uswap run (--daemon), outside "
			"the tree (each device at its peak, added up)\n", "",
			size(get_i64(sum, "daemon_zram_pool_peak_bytes"), a));
	if (get_i64(sum, "daemon_slots_left_kb"))
		fprintf(stderr, "  %-16s%s still in use on the devices after every process "
			"ended: slots leaked\n", "left",
			size(get_i64(sum, "daemon_slots_left_kb") << 10, a));
}

static void add_tree(json_object *sum, const struct run_tree *t)
{
	json_object *o = json_object_new_object();
	int64_t peak = (int64_t)t->anon_peak, held = get_i64(sum, "resident_peak_sum_bytes");

	json_object_object_add(o, "anon_rss_peak_bytes", json_object_new_int64(peak));
	json_object_object_add(o, "anon_pss_peak_bytes", json_object_new_int64((int64_t)t->pss_peak));
	json_object_object_add(o, "processes_peak", json_object_new_int64(t->procs_peak));
	json_object_object_add(o, "samples", json_object_new_int64(t->samples));
	json_object_object_add(o, "period_ms", json_object_new_int64(RUN_TREE_PERIOD_MS));
	json_object_object_add(sum, "tree", o);
	json_object_object_add(sum, "unmanaged_anon_bytes_min",
			       json_object_new_int64(peak > held ? peak - held : 0));
}

/* The tree's charge group: its limit and the resident peak of all its
 * processes together (none: the limit was per process). */
static void add_group(json_object *sum, const struct uswap_pager_group_stats *g)
{
	json_object *o;

	if (!g->limit_bytes)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "limit_bytes", json_object_new_int64((int64_t)g->limit_bytes));
	json_object_object_add(o, "resident_peak_bytes",
			       json_object_new_int64((int64_t)g->resident_peak_bytes));
	json_object_object_add(o, "pressure", json_object_new_int64((int64_t)g->pressure));
	json_object_object_add(o, "over_limit", json_object_new_int64((int64_t)g->over_limit));
	json_object_object_add(o, "members", json_object_new_int64((int64_t)g->members));
	json_object_object_add(sum, "group", o);
}

static void print_resident(json_object *sum)
{
	json_object *g;
	char a[32], b[32], c[32];

	if (json_object_object_get_ex(sum, "group", &g)) {
		fprintf(stderr, "  %-16s%s of a %s limit (the tree's, %lld processes "
			"with a pager; largest of one: %s)\n", "resident peak",
			size(get_i64(g, "resident_peak_bytes"), a), size(get_i64(g, "limit_bytes"), b),
			(long long)get_i64(g, "members"), size(get_i64(sum, "resident_peak_bytes"), c));
		return;
	}
	fprintf(stderr, "  %-16s%s of a %s limit (per process)\n", "resident peak",
		size(get_i64(sum, "resident_peak_bytes"), a), size(get_i64(sum, "limit_bytes"), b));
}

static void print_stats(json_object *sum, int status)
{
	fprintf(stderr, "uswap run: exit status %d\n", status);
	print_orders(sum, "swpout");
	print_orders(sum, "swpout_fallback");
	fprintf(stderr, "  %-16s%lld\n", "swpin", (long long)get_i64(sum, "swpin"));
	print_resident(sum);
	fprintf(stderr, "  %-16sp50 %.1f us, p99 %.1f us\n", "fault service",
		get_num(sum, "fault_us_p50"), get_num(sum, "fault_us_p99"));
	fprintf(stderr, "  %-16s%lld (all zeros, not written: %lld; refused, pinned by the "
		"kernel: %lld; over the limit: %lld; lost to read errors: %lld)\n", "evictions",
		(long long)get_i64(sum, "evictions"), (long long)get_i64(sum, "evict_zero"),
		(long long)get_i64(sum, "evict_pinned"), (long long)get_i64(sum, "over_limit"),
		(long long)get_i64(sum, "read_errors"));
	fprintf(stderr, "  %-16s%lld allocations served unswapped (heap full)\n",
		"heap fallbacks", (long long)get_i64(sum, "heap_fallbacks"));
	fprintf(stderr, "  %-16s%lld with a pager\n", "processes",
		(long long)get_i64(sum, "processes"));
	print_tree(sum);
	print_devices(sum);
}

/* Write @sum into @fd, the --json FILE @path that `uswap run` opened (and
 * kept open) before CMD started: a FIFO's reader gets it, or its end is
 * an error, never a wait for a reader that is gone. A regular file is
 * emptied first (it was opened without O_TRUNC), but not standard output
 * ("-"), which holds CMD's output before it. */
static int write_json(const char *path, int fd, json_object *sum)
{
	struct stat st;
	FILE *f;
	int flags = fcntl(fd, F_GETFL);

	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	if (strcmp(path, "-") && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) < 0))
		return cli_runtime_error(CMD, "--json %s: %s", path, strerror(errno));
	f = fdopen(dup(fd), "w");
	if (!f)
		return cli_runtime_error(CMD, "--json %s: %s", path, strerror(errno));
	json_object_object_add(sum, "version", json_object_new_int(RUN_JSON_VERSION));
	fprintf(f, "%s\n", json_object_to_json_string_ext(sum, JSON_C_TO_STRING_PLAIN));
	/* A write error of a full buffer shows in ferror() only. */
	if (fflush(f) || ferror(f)) {
		int err = errno;

		fclose(f);
		return cli_runtime_error(CMD, "--json %s: %s", path, strerror(err));
	}
	return fclose(f) ? cli_runtime_error(CMD, "--json %s: %s", path, strerror(errno)) : 0;
}

int run_stats_report(const char *stats, const char *cmd, bool print, const char *json,
		     int json_fd, int status, const struct run_tree *tree,
		     const struct uswap_pager_group_stats *group)
{
	json_object *sum = read_lines(stats);
	int rc = 0;

	if (!sum) {
		/* 126/127: CMD never ran, and said so already. */
		if ((print || json) && status != 126 && status != 127)
			fprintf(stderr, "uswap run: no statistics: %s ended by a signal, or "
				"exec'd a static program, or the agent could not start in "
				"it\n", cmd);
		sum = json_object_new_object(); /* the status, and no process */
		json_object_object_add(sum, "processes", json_object_new_int(0));
		print = false;
	}
	json_object_object_add(sum, "exit_status", json_object_new_int(status));
	add_tree(sum, tree);
	add_group(sum, group);
	if (print)
		print_stats(sum, status);
	if (json)
		rc = write_json(json, json_fd, sum);
	json_object_put(sum);
	return rc;
}
