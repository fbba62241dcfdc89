/* SPDX-License-Identifier: MIT */
/*
 * lab.c - `uswap lab list` and `uswap lab run NAME`: the seed experiments
 * of src/lab/ from the command line, as a table in the seed threads'
 * shape or as JSON, with an SVG of per-device use where a seed shows it.
 */
#include "cli.h"
#include "lab_cmd.h"

#include "lab/lab_internal.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CMD "lab run"

static const char run_usage_text[] =
"Usage: uswap lab run NAME [OPTIONS]\n"
"\n"
"Replay one seed thread's experiment: the same workload on libuswap\n"
"under each arm's allocator policy (\"before\" and \"after\"; A, B and C\n"
"for the RFC's progression), in virtual time on the seed machine's CPU\n"
"count, then the thread's table shape: metric, each arm, delta % against\n"
"the first arm, the direction the seed reports and whether ours agrees,\n"
"and each arm's lock table in perf lock's columns. 'uswap lab list'\n"
"names the experiments.\n"
"\n"
"Options:\n"
"  --vcpus N         virtual CPUs, 1..1024 (default: the seed machine's,\n"
"                    96, or 256 for per-priority-allocation-queues)\n"
"  --threads N       real threads that run the vCPUs, 1..64 (default 1);\n"
"                    in virtual time they take turns and every result is\n"
"                    the same for any N; with --wall-clock they run at\n"
"                    once and only N = 1 is exactly reproducible\n"
"  --slice N         with --wall-clock, operations a vCPU runs before its\n"
"                    thread switches to its next vCPU; in virtual time,\n"
"                    per-device use is sampled every vCPUs x N operations\n"
"                    (default 32)\n"
"  --scale X         multiply the workload's size (default 1; 0.1 for a\n"
"                    quick look)\n"
"  --seed N          seed of the workload's random streams (default 1)\n"
"  --before POLICY   replace the first arm's policy; POLICY is\n"
"                    key=value,... on top of uswap's default design:\n"
"                      select=rings|global-rotate|legacy-prio\n"
"                      percpu=per-device|global   frag=scan-one|scan-all\n"
"                      cluster=nonfull|free  freelist=ascending|interleaved\n"
"                      lock=cluster-first|device  discard=bounded|sync-all\n"
"                      nodes=N (emulated NUMA nodes)\n"
"  --after POLICY    the same for the last arm\n"
"  --workload PARAMS change the workload: key=value,... (docs/lab.md lists\n"
"                    the keys of each workload; devices=N for all)\n"
"  --cost KEY=NS,... change the virtual-time cost table (ns per step;\n"
"                    'uswap lab costs' lists the keys and defaults)\n"
"  --cost-profile P  the cost table measured on another machine:\n"
"                    2-vcpu (default) or 16-cores; --cost applies on top\n"
"  --wall-clock      the old mode: the vCPUs on real threads in real\n"
"                    time; times and contention are then this host's\n"
"                    two-core figures, not the seed machine's\n"
"  --trace-out FILE  write the first arm's swap operations to FILE as a\n"
"                    trace (version 1) for 'uswap lab replay'\n"
"  --svg FILE.svg    draw per-device use over time of every arm with\n"
"  --plot FILE.svg   the same (the name run and stress use)\n"
"                    gnuplot (skipped with a note if gnuplot is missing)\n"
"  --json            one JSON object on stdout: experiment, all_agree,\n"
"                    arms (each: policy, metrics, delta_pct,\n"
"                    direction_agrees, sys_s, real_s, locks, ...)\n"
"  -h, --help        show this help\n"
"\n"
"Progress lines go to stderr when an arm runs longer than 2 s.\n"
"Exit status: 0 success (whether or not the directions agree), 1 runtime\n"
"error, 2 usage error.\n";

static const char list_usage_text[] =
"Usage: uswap lab list [--json]\n"
"\n"
"List the experiments: name, seed thread (its linux-mm subject), summary.\n";

static const char lab_usage_text[] =
"Usage: uswap lab list [--json] | uswap lab costs [--json]\n"
"       uswap lab run NAME [OPTIONS]\n"
"       uswap lab sweep NAME [OPTIONS]\n"
"       uswap lab replay FILE --arm POLICY --arm POLICY [OPTIONS]\n"
"\n"
"The lab: each seed thread's before/after replayed on libuswap as policy\n"
"switches (docs/lab.md).\n"
"\n"
"  list        the experiments\n"
"  run NAME    run one; 'uswap lab run --help' for its options\n"
"  sweep NAME  run one over a grid of vCPUs, scales and workload seeds:\n"
"              where the seed's direction holds and where it flips;\n"
"              'uswap lab sweep --help'\n"
"  replay FILE replay a recorded trace of swap operations under two or\n"
"              more policies; 'uswap lab replay --help'\n"
"  costs       the virtual-time cost table's keys and defaults\n";

static const struct option run_options[] = {
	LAB_COMMON_OPTIONS,
	{ "threads", required_argument, NULL, LAB_OPT_THREADS },
	{ "slice",   required_argument, NULL, LAB_OPT_SLICE },
	{ "scale",   required_argument, NULL, LAB_OPT_SCALE },
	{ "before",  required_argument, NULL, LAB_OPT_BEFORE },
	{ "after",   required_argument, NULL, LAB_OPT_AFTER },
	{ "workload", required_argument, NULL, LAB_OPT_WORKLOAD },
	{ "wall-clock", no_argument,    NULL, LAB_OPT_WALL },
	{ "trace-out", required_argument, NULL, LAB_OPT_TRACE_OUT },
	{ NULL, 0, NULL, 0 },
};

/* ------------------------------------------------------------------------
 * list
 * ---------------------------------------------------------------------- */

static int cmd_lab_list(int argc, char **argv)
{
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(list_usage_text, stdout);
			return CLI_EXIT_OK;
		} else
			return cli_usage_error("lab list", "unknown argument '%s'", argv[i]);
	}
	if (json) {
		struct cli_json j;

		cli_json_init(&j, stdout);
		cli_json_array_open(&j, NULL, false);
		for (unsigned int i = 0; i < lab_nr_experiments(); i++) {
			const struct lab_experiment *e = lab_experiment_at(i);

			cli_json_object_open(&j, NULL, true);
			cli_json_string(&j, "name", e->name);
			cli_json_string(&j, "seed", e->thread);
			cli_json_string(&j, "summary", e->summary);
			cli_json_object_close(&j);
		}
		cli_json_array_close(&j);
		cli_json_finish(&j);
		return CLI_EXIT_OK;
	}
	printf("%-40s %s\n", "NAME", "SEED THREAD (linux-mm) / SUMMARY");
	for (unsigned int i = 0; i < lab_nr_experiments(); i++) {
		const struct lab_experiment *e = lab_experiment_at(i);

		printf("%-40s %s\n%-40s   %s\n", e->name, e->thread, "", e->summary);
	}
	return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------
 * costs: the virtual-time cost table's keys and defaults
 * ---------------------------------------------------------------------- */

static void cost_row(const char *key, const char *desc, double v, void *ctx)
{
	struct cli_json *j = ctx;

	if (j)
		cli_json_double(j, key, v);
	else
		printf("%-16s %8g  %s\n", key, v, desc);
}

static int cmd_lab_costs(int argc, char **argv)
{
	struct lab_cost c;
	const char *profile = "2-vcpu";
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--profile")) {
			if (i + 1 == argc)
				return cli_usage_error("lab costs", "option '--profile' needs a "
						       "value");
			profile = argv[++i];
		} else if (!strncmp(argv[i], "--profile=", 10))
			profile = argv[i] + 10;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs("Usage: uswap lab costs [--profile NAME] [--json]\n\nThe "
			      "virtual-time cost table: each key, its default (ns, but\n"
			      "handover_lines, pool_lines and jitter) and what it is; 'uswap "
			      "lab run --cost\nKEY=NS,...' changes them (docs/lab.md says "
			      "where each default comes from).\n--profile NAME: the table "
			      "measured on another machine, 2-vcpu (default)\nor 16-cores "
			      "(as 'uswap lab run --cost-profile NAME').\n", stdout);
			return CLI_EXIT_OK;
		} else
			return cli_usage_error("lab costs", "unknown argument '%s'", argv[i]);
	}
	if (lab_cost_profile(profile, &c))
		return cli_usage_error("lab costs", "--profile: unknown profile '%s' (%s)",
				       profile, lab_cost_profile_names());
	if (json) {
		struct cli_json j;

		cli_json_init(&j, stdout);
		cli_json_object_open(&j, NULL, false);
		lab_cost_each(cost_row, &c, &j);
		cli_json_object_close(&j);
		cli_json_finish(&j);
		return CLI_EXIT_OK;
	}
	printf("%-16s %8s  %s\n", "KEY", strcmp(profile, "2-vcpu") ? "VALUE" : "DEFAULT", "WHAT");
	lab_cost_each(cost_row, &c, NULL);
	return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------
 * run
 * ---------------------------------------------------------------------- */

static int parse_scale(const char *s, double *scale)
{
	int err = cli_parse_seconds(s, scale); /* a positive finite number */

	if (!err && *scale > 100)
		return -ERANGE;
	return err;
}

int lab_cmd_cost_option(const char *cmd, const char *profile, const char *cost_arg,
			struct lab_cost *c, const char **args, unsigned int *nr,
			unsigned int cap)
{
	char bad[64] = "";

	if (profile) {
		if (lab_cost_profile(profile, c))
			return cli_usage_error(cmd, "--cost-profile: unknown profile '%s' (%s)",
					       profile, lab_cost_profile_names());
		for (unsigned int i = 0; i < *nr; i++) /* checked when given */
			lab_cost_parse(args[i], c);
		return 0;
	}
	if (*nr == cap)
		return cli_usage_error(cmd, "--cost: more than %u times", cap);
	if (lab_cost_parse_why(cost_arg, c, bad, sizeof(bad)))
		return cli_usage_error(cmd, "--cost: bad item '%s' in '%s': expected "
				       "KEY=VALUE,... with keys from 'uswap lab costs', "
				       "0 <= VALUE <= 1e9 (jitter 0..1)", bad, cost_arg);
	args[(*nr)++] = cost_arg;
	return 0;
}

int lab_cmd_option(const char *cmd, int opt, const char *arg, struct run_opts *o)
{
	struct lab_vcpu_config *v = &o->lab.vcpu;

	switch (opt) {
	case LAB_OPT_VCPUS:
		if (cli_parse_uint(arg, 1, USWAP_MAX_CPUS, &v->nr_vcpus))
			return cli_usage_error(cmd, "--vcpus: expected 1..%d, got '%s'",
					       USWAP_MAX_CPUS, arg);
		o->vcpus_set = true;
		return 0;
	case LAB_OPT_THREADS:
		if (cli_parse_uint(arg, 1, LAB_MAX_THREADS, &v->nr_threads))
			return cli_usage_error(cmd, "--threads: expected 1..%d, got '%s'",
					       LAB_MAX_THREADS, arg);
		return 0;
	case LAB_OPT_SLICE:
		if (cli_parse_uint(arg, 1, 1u << 20, &v->slice_ops))
			return cli_usage_error(cmd, "--slice: expected 1..%u, got '%s'",
					       1u << 20, arg);
		return 0;
	case LAB_OPT_SCALE:
		if (parse_scale(arg, &o->lab.scale))
			return cli_usage_error(cmd, "--scale: expected a number in "
					       "(0, 100], got '%s'", arg);
		return 0;
	case LAB_OPT_SEED:
		if (cli_parse_u64(arg, 0, UINT64_MAX, &o->lab.seed))
			return cli_usage_error(cmd, "--seed: expected an integer, got '%s'",
					       arg);
		return 0;
	case LAB_OPT_BEFORE:
		o->before = arg;
		return 0;
	case LAB_OPT_AFTER:
		o->after = arg;
		return 0;
	case LAB_OPT_SVG:
		if (cli_plot_name(cmd, "--svg", arg))
			return CLI_EXIT_USAGE;
		o->svg = arg;
		return 0;
	case LAB_OPT_WORKLOAD:
		o->workload = arg;
		return 0;
	case LAB_OPT_JSON:
		o->json = true;
		return 0;
	case LAB_OPT_COST:
	case LAB_OPT_COST_PROFILE:
		o->cost_set = true;
		return lab_cmd_cost_option(cmd, opt == LAB_OPT_COST_PROFILE ? arg : NULL,
					   opt == LAB_OPT_COST ? arg : NULL, &o->lab.cost,
					   o->cost_args, &o->nr_cost_args, 16);
	case LAB_OPT_WALL:
		o->lab.wall_clock = true;
		return 0;
	case LAB_OPT_TRACE_OUT:
		o->trace_out = arg;
		return 0;
	}
	return cli_usage_error(cmd, "unknown option '%s'", arg ? arg : "");
}

static int override_policy(const char *what, const char *text, struct uswap_policy *p)
{
	struct uswap_policy np = { 0 };

	if (!text)
		return 0;
	if (lab_policy_parse(text, &np))
		return cli_usage_error(CMD, "--%s: bad policy '%s' (see --help)",
				       what, text);
	*p = np;
	return 0;
}

/* One arm's lock table: perf lock contention's columns. */
static void json_locks(struct cli_json *j, const struct lab_arm *a)
{
	cli_json_array_open(j, "locks", false);
	for (unsigned int i = 0; i < a->vt.nr_sites; i++) {
		const struct lab_lock_site *s = &a->vt.sites[i];

		cli_json_object_open(j, NULL, true);
		cli_json_string(j, "lock", s->lock);
		cli_json_string(j, "caller", s->site);
		cli_json_u64(j, "acquired", s->acquired);
		cli_json_u64(j, "contended", s->contended);
		cli_json_double(j, "total_wait_ns", s->wait_ns);
		cli_json_double(j, "max_wait_ns", s->max_wait_ns);
		cli_json_double(j, "avg_wait_ns", s->contended ?
				s->wait_ns / (double)s->contended : 0.0);
		cli_json_object_close(j);
	}
	cli_json_array_close(j);
}

static void json_counts(struct cli_json *j, const struct lab_arm *a)
{
	cli_json_u64(j, "folios", a->folios);
	cli_json_u64(j, "allocs", a->allocs);
	cli_json_u64(j, "frees", a->frees);
	cli_json_u64(j, "order4_requests", a->req[4]);
	cli_json_u64(j, "order4_split", a->split[4]);
	cli_json_u64(j, "enospc", a->enospc);
	cli_json_u64(j, "shared_locks", lab_shared_locks(&a->delta));
	cli_json_u64(j, "device_lock", a->delta.locks[USWAP_LOCK_DEVICE].acquired);
	cli_json_u64(j, "global_lock", a->delta.locks[USWAP_LOCK_GLOBAL].acquired);
	cli_json_u64(j, "cluster_moves", a->delta.cluster_moves);
	cli_json_u64(j, "list_scan_steps", a->delta.list_scan_steps);
	cli_json_u64(j, "alloc_slow", a->delta.alloc_slow);
	cli_json_array_open(j, "device_slots", true);
	for (unsigned int d = 0; a->series && d < a->series->nr_devices; d++)
		cli_json_u64(j, NULL, a->dev_slots[d]);
	cli_json_array_close(j);
	cli_json_array_open(j, "peak_use_slots", true);
	for (unsigned int d = 0; a->series && d < a->series->nr_devices; d++)
		cli_json_u64(j, NULL, a->at_peak[d]);
	cli_json_array_close(j);
}

/* Arm @k: its policy, metrics, deltas and agreement against arm 0, its
 * times and counts. Only "wall_s" depends on the host. */
static void json_arm(struct cli_json *j, const struct lab_result *res, unsigned int k)
{
	const struct lab_experiment *e = res->exp;
	const struct lab_arm *a = &res->arm[k];
	char policy[160];

	lab_policy_format(&a->policy, policy, sizeof(policy));
	cli_json_object_open(j, NULL, false);
	cli_json_string(j, "name", e->arms[k].name);
	cli_json_string(j, "what", e->arms[k].what);
	cli_json_string(j, "policy", policy);
	cli_json_object_open(j, "metrics", false);
	for (unsigned int i = 0; i < e->nr_metrics; i++)
		cli_json_double(j, e->metrics[i].name, res->value[k][i]);
	cli_json_object_close(j);
	if (k) {
		cli_json_object_open(j, "delta_pct", false);
		for (unsigned int i = 0; i < e->nr_metrics; i++)
			cli_json_double(j, e->metrics[i].name, res->delta_pct[k][i]);
		cli_json_object_close(j);
		cli_json_object_open(j, "seed_claim", false);
		for (unsigned int i = 0; i < e->nr_metrics; i++)
			cli_json_string(j, e->metrics[i].name,
					lab_claim_word(e->metrics[i].claim[k]));
		cli_json_object_close(j);
		cli_json_object_open(j, "direction_agrees", false);
		for (unsigned int i = 0; i < e->nr_metrics; i++)
			if (res->judged[k][i])
				cli_json_bool(j, e->metrics[i].name, res->agrees[k][i]);
		cli_json_object_close(j);
	}
	cli_json_double(j, "wall_s", a->elapsed_s);
	if (a->virtual_time) {
		cli_json_double(j, "sys_s", a->vt.cpu_ns / 1e9);
		cli_json_double(j, "real_s", a->vt.makespan_ns / 1e9);
		cli_json_u64(j, "model_overlaps", a->vt.overlaps);
	}
	json_counts(j, a);
	if (e->workload.kind == LAB_WL_REPLAY)
		cli_json_u64(j, "not_swapped_out", a->replay_not_out);
	if (a->virtual_time)
		json_locks(j, a);
	cli_json_object_close(j);
}

static void print_json(const struct lab_result *res, const struct run_opts *o,
		       const char *svg_status)
{
	const struct lab_experiment *e = res->exp;
	char cost[512];
	struct cli_json j;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_string(&j, "experiment", e->name);
	cli_json_string(&j, "seed", e->thread);
	cli_json_string(&j, "time", o->lab.wall_clock ? "wall-clock" : "virtual");
	cli_json_u64(&j, "vcpus", o->lab.vcpu.nr_vcpus);
	cli_json_u64(&j, "threads", o->lab.vcpu.nr_threads);
	cli_json_u64(&j, "slice", o->lab.vcpu.slice_ops);
	cli_json_double(&j, "scale", o->lab.scale);
	cli_json_u64(&j, "rng_seed", o->lab.seed);
	lab_cost_format(&o->lab.cost, cost, sizeof(cost));
	if (!o->lab.wall_clock)
		cli_json_string(&j, "cost", cost);
	if (e->workload.kind == LAB_WL_REPLAY) { /* no seed to agree with */
		cli_json_string(&j, "trace", e->thread);
		cli_json_u64(&j, "devices", e->workload.nr_devices);
		cli_json_double(&j, "fill", e->workload.replay_fill);
	} else {
		cli_json_bool(&j, "all_agree", lab_all_agree(res));
		cli_json_object_open(&j, "seed_figure", false);
		for (unsigned int i = 0; i < e->nr_metrics; i++)
			cli_json_string(&j, e->metrics[i].name, e->metrics[i].seed_figure);
		cli_json_object_close(&j);
	}
	cli_json_array_open(&j, "arms", false);
	for (unsigned int k = 0; k < res->nr_arms; k++)
		json_arm(&j, res, k);
	cli_json_array_close(&j);
	if (svg_status)
		cli_json_string(&j, "svg", svg_status);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

/* Draw the SVG if asked. Return: a status for the report, or NULL;
 * *@failed is set when it was asked for and could not be written. */
static const char *do_svg(const char *cmd, const struct lab_result *res, const char *path,
			  bool *failed)
{
	int err;

	if (!path)
		return NULL;
	if (!res->exp->plot)
		fprintf(stderr, "uswap %s: note: seed %s shows no device use; "
			"drawing it anyway\n", cmd, res->exp->thread);
	err = lab_have_gnuplot() ? lab_plot_svg(res, path) : -ENOPKG;
	if (err == -ENOPKG) {
		fprintf(stderr, "uswap %s: gnuplot not found (Debian: gnuplot-nox); "
			"no plot written\n", CMD);
		return "skipped: gnuplot not found";
	}
	if (err) {
		*failed = true;
		fprintf(stderr, "uswap %s: --svg %s: cannot write the plot: %s (%s)\n", cmd,
			path, err == -ENXIO ? "a FIFO that no process reads" : strerror(-err),
			cli_errno_name(err));
		return "failed";
	}
	return path;
}

/* What lab_run() checks of each workload (src/lab/workload_*.c). */
const char *lab_cmd_workload_rules(enum lab_workload_kind kind)
{
	switch (kind) {
	case LAB_WL_USEMEM:
		return "usemem needs tasks >= 1, rounds >= 1 and a splittable order";
	case LAB_WL_KBUILD:
		return "kbuild needs 1 <= job_min <= job_max, long_cap >= 1, "
		       "order4_pct <= 100 and long_pct + swapin_pct < 100";
	case LAB_WL_SWAPIN:
		return "swapin needs devices=1, 1 <= tasks <= --vcpus and readahead a "
		       "power of two up to 512";
	case LAB_WL_REPLAY:
		return "a replay needs virtual time and 0 < --fill <= 1";
	}
	return "see docs/lab.md";
}

int lab_cmd_report(const char *cmd, const struct lab_result *res, const struct run_opts *o)
{
	bool svg_failed = false;
	const char *svg_status = do_svg(cmd, res, o->svg, &svg_failed);

	if (o->json)
		print_json(res, o, svg_status);
	else {
		lab_report_print(res, stdout);
		if (svg_status)
			printf("\nsvg: %s\n", svg_status);
	}
	return svg_failed ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}

/* Open --trace-out FILE (as FILE.part until the run succeeds, so a run
 * that fails leaves an older FILE alone) and write the header.
 * Return: 0 or the exit status. */
static int open_trace_out(const char *cmd, struct run_opts *o, const char *what)
{
	if (!o->trace_out)
		return 0;
	if (o->lab.wall_clock)
		return cli_usage_error(cmd, "--trace-out needs virtual time (its times "
				       "are virtual), not --wall-clock");
	if (snprintf(o->trace_part, sizeof(o->trace_part), "%s.part", o->trace_out) >=
	    (int)sizeof(o->trace_part))
		return cli_usage_error(cmd, "--trace-out: name too long");
	o->lab.trace_out = fopen(o->trace_part, "w");
	if (!o->lab.trace_out)
		return cli_runtime_error(cmd, "--trace-out %s: %s", o->trace_part,
					 strerror(errno));
	lab_trace_header(o->lab.trace_out, what);
	return 0;
}

/* Close the trace; keep it (renamed to FILE) only if @ok and written. */
static int close_trace_out(const char *cmd, struct run_opts *o, bool ok)
{
	FILE *f = o->lab.trace_out;
	int bad;

	if (!f)
		return 0;
	o->lab.trace_out = NULL;
	bad = ferror(f) | fclose(f);
	if (ok && !bad && !rename(o->trace_part, o->trace_out))
		return 0;
	unlink(o->trace_part);
	if (!ok)
		return 0;
	return cli_runtime_error(cmd, "--trace-out %s: write failed", o->trace_out);
}

static int run_experiment(const struct lab_experiment *base, struct run_opts *o)
{
	struct lab_experiment exp = *base;
	struct lab_result res;
	int err;

	err = override_policy("before", o->before, &exp.arms[0].policy);
	if (!err)
		err = override_policy("after", o->after, &exp.arms[exp.nr_arms - 1].policy);
	if (err)
		return err;
	if (!o->vcpus_set && exp.vcpus)
		o->lab.vcpu.nr_vcpus = exp.vcpus;
	if (o->workload && lab_workload_parse(o->workload, &exp.workload))
		return cli_usage_error(CMD, "--workload: bad parameters '%s' (see "
				       "docs/lab.md)", o->workload);
	if (o->lab.vcpu.nr_threads > o->lab.vcpu.nr_vcpus)
		return cli_usage_error(CMD, "--threads %u is more than --vcpus %u",
				       o->lab.vcpu.nr_threads, o->lab.vcpu.nr_vcpus);
	if (o->lab.wall_clock && o->cost_set)
		return cli_usage_error(CMD, "--cost and --cost-profile are the virtual-time "
				       "model's: they mean nothing with --wall-clock");
	o->lab.progress = stderr;
	err = open_trace_out(CMD, o, exp.name);
	if (err)
		return err;
	err = lab_run(&exp, &exp.workload, &o->lab, &res);
	if (close_trace_out(CMD, o, !err)) {
		lab_result_fini(&res);
		return CLI_EXIT_RUNTIME;
	}
	if (err) {
		lab_result_fini(&res);
		if (err == -EINVAL)
			return cli_usage_error(CMD, "%s: the workload's parameters do not fit "
					       "this run: %s", exp.name,
					       lab_cmd_workload_rules(exp.workload.kind));
		return cli_runtime_error(CMD, "%s: %s", exp.name, cli_errno_name(err));
	}
	err = lab_cmd_report(CMD, &res, o);
	lab_result_fini(&res);
	return err;
}

static int cmd_lab_run(int argc, char **argv)
{
	const struct lab_experiment *exp;
	struct run_opts o = { 0 };
	int opt;

	lab_options_default(&o.lab);
	optind = 0; /* 0: a full reset, so options may follow NAME */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", run_options, NULL)) != -1) {
		int err;

		if (opt == 'h') {
			fputs(run_usage_text, stdout);
			return CLI_EXIT_OK;
		}
		if (opt == '?')
			return cli_usage_error(CMD, "unknown option or missing value: '%s'",
					       argv[optind - 1]);
		err = lab_cmd_option(CMD, opt, optarg, &o);
		if (err)
			return err;
	}
	if (optind >= argc)
		return cli_usage_error(CMD, "missing experiment name ('uswap lab list' "
				       "names them)");
	if (optind + 1 < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	exp = lab_experiment_find(argv[optind]);
	if (!exp)
		return cli_usage_error(CMD, "unknown experiment '%s' ('uswap lab list' "
				       "names them)", argv[optind]);
	return run_experiment(exp, &o);
}

int cmd_lab(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("lab", "missing 'list', 'run', 'sweep', 'replay' or 'costs'");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(lab_usage_text, stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "list"))
		return cmd_lab_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "run"))
		return cmd_lab_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sweep"))
		return cmd_lab_sweep(argc - 1, argv + 1);
	if (!strcmp(argv[1], "replay"))
		return cmd_lab_replay(argc - 1, argv + 1);
	if (!strcmp(argv[1], "costs"))
		return cmd_lab_costs(argc - 1, argv + 1);
	return cli_usage_error("lab", "unknown subcommand '%s' (list, run, sweep, replay, costs)",
			       argv[1]);
}
