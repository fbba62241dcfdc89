// SPDX-License-Identifier: MIT
/*
 * lab_sweep.c - `uswap lab sweep NAME`: one experiment over a grid of
 * machine sizes (--vcpus), workload sizes (--scale) and workload seeds
 * (--seeds), in virtual time, and where the seed thread's direction holds
 * and where it flips (issue 25, item 2).
 *
 * Each cell of the grid (vCPUs x scale) runs the experiment once per
 * workload seed. For every metric the seed makes a claim of, in every arm
 * after the first, a cell's verdict is "holds" when every seed's run
 * agrees with the claim, "flips" when none does, "mixed" otherwise; the
 * cell shows the median delta over the seeds. The output is one table per
 * metric (scale down, vCPUs across), or one JSON object, and --svg draws
 * the same grids as heat maps (the share of seeds that agree) through the
 * lab's gnuplot plumbing (lab_gnuplot_svg()).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lab_cmd.h"

#define CMD "lab sweep"
#define MAX_AXIS 16 /* values of --vcpus and of --scale */
#define MAX_SEEDS 16

static const char sweep_usage_text[] =
"Usage: uswap lab sweep NAME [OPTIONS]\n"
"\n"
"Run one experiment ('uswap lab list') over a grid, in virtual time:\n"
"every number of vCPUs by every scale, once per workload seed, and say\n"
"where the seed thread's direction holds and where it flips. For each\n"
"metric the seed makes a claim of: a table with the scales down and the\n"
"vCPUs across, each cell the median delta % over the seeds against the\n"
"first arm and its verdict: + holds (every seed agrees with the seed\n"
"thread), x flips (none does), ~ mixed.\n"
"\n"
"Options:\n"
"  --vcpus LIST      comma list of vCPU counts, 1..1024 (default\n"
"                    8,16,32,64,96,256)\n"
"  --scale LIST      comma list of workload scales, (0, 100] (default\n"
"                    0.3,1)\n"
"  --seeds LIST      comma list of workload seeds (default 1,2,3)\n"
"  --workload PARAMS change the workload: key=value,... (docs/lab.md)\n"
"  --cost KEY=NS,... change the virtual-time cost table ('uswap lab\n"
"                    costs')\n"
"  --cost-profile P  the cost table of another machine: 2-vcpu (default)\n"
"                    or 16-cores; --cost applies on top\n"
"  --svg FILE.svg    draw each metric's grid as a heat map (the share of\n"
"                    seeds that agree) with gnuplot; a note without it\n"
"  --json            one JSON object on stdout: experiment, vcpus, scale,\n"
"                    seeds, metrics (each: arm, metric, claim, cells with\n"
"                    delta_pct per seed, median, agree and verdict; holds,\n"
"                    flips, mixed, none: cells with nothing to judge)\n"
"  -h, --help        show this help\n"
"\n"
"The default grid is 36 runs of every arm; at 256 vCPUs and scale 1 a\n"
"run takes minutes on a small machine. A line on stderr per run.\n"
"Exit status: 0 success (whatever the verdicts), 1 runtime error, 2 usage\n"
"error.\n";

enum {
	OPT_VCPUS = 300, OPT_SCALE, OPT_SEEDS, OPT_WORKLOAD, OPT_COST, OPT_COST_PROFILE,
	OPT_SVG, OPT_JSON,
};

static const struct option sweep_options[] = {
	{ "vcpus",    required_argument, NULL, OPT_VCPUS },
	{ "scale",    required_argument, NULL, OPT_SCALE },
	{ "seeds",    required_argument, NULL, OPT_SEEDS },
	{ "workload", required_argument, NULL, OPT_WORKLOAD },
	{ "cost",     required_argument, NULL, OPT_COST },
	{ "cost-profile", required_argument, NULL, OPT_COST_PROFILE },
	{ "svg",      required_argument, NULL, OPT_SVG },
	{ "json",     no_argument,       NULL, OPT_JSON },
	{ "help",     no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct sweep_opts {
	unsigned int vcpus[MAX_AXIS], nr_vcpus;
	double scale[MAX_AXIS];
	unsigned int nr_scale;
	uint64_t seeds[MAX_SEEDS];
	unsigned int nr_seeds;
	const char *workload, *svg;
	bool svg_made;             /* --svg's file did not exist before */
	struct lab_cost cost;
	const char *cost_args[16]; /* every --cost, re-applied over a profile */
	unsigned int nr_cost_args;
	bool json;
};

/* One run: arm k's delta and agreement for metric m. */
struct sweep_run {
	double delta[LAB_MAX_ARMS][LAB_MAX_METRICS];
	bool agrees[LAB_MAX_ARMS][LAB_MAX_METRICS];
};

struct sweep {
	const struct sweep_opts *o;
	struct lab_experiment exp;
	bool judged[LAB_MAX_ARMS][LAB_MAX_METRICS];
	struct sweep_run *runs; /* [scale][vcpus][seed] */
	char cost_text[512];    /* the cost table the runs used */
};

static struct sweep_run *run_at(const struct sweep *s, unsigned int si, unsigned int vi,
				unsigned int k)
{
	return &s->runs[((size_t)si * s->o->nr_vcpus + vi) * s->o->nr_seeds + k];
}

/* ------------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------- */

/* "a,b,c" into @v (at most @cap values); each checked by @ok.
 * Return: the count, or -EINVAL. */
static int parse_list(const char *s, double *v, unsigned int cap, bool (*ok)(double))
{
	unsigned int n = 0;

	for (;;) {
		char *end;
		double x;

		if (n == cap || !*s || *s == ',')
			return -EINVAL;
		errno = 0;
		x = strtod(s, &end);
		if (errno || end == s || !ok(x))
			return -EINVAL;
		v[n++] = x;
		if (!*end)
			return (int)n;
		if (*end != ',')
			return -EINVAL;
		s = end + 1;
	}
}

static bool ok_vcpus(double x)
{
	return x >= 1 && x <= USWAP_MAX_CPUS && x == floor(x);
}

static bool ok_scale(double x)
{
	return x > 0 && x <= 100;
}

static bool ok_seed(double x)
{
	return x >= 0 && x <= 9007199254740992.0 && x == floor(x); /* exact in a double */
}

static int set_axis(const char *opt, const char *arg, bool (*ok)(double), const char *want,
		    double *v, unsigned int cap, unsigned int *nr)
{
	int n = parse_list(arg, v, cap, ok);

	if (n < 0)
		return cli_usage_error(CMD, "--%s: expected a comma list of up to %u values, %s; "
				       "got '%s'", opt, cap, want, arg);
	*nr = (unsigned int)n;
	return 0;
}

static int apply_option(struct sweep_opts *o, int opt, const char *arg)
{
	double v[MAX_AXIS > MAX_SEEDS ? MAX_AXIS : MAX_SEEDS];
	int err;

	switch (opt) {
	case OPT_VCPUS:
		err = set_axis("vcpus", arg, ok_vcpus, "1..1024", v, MAX_AXIS, &o->nr_vcpus);
		for (unsigned int i = 0; !err && i < o->nr_vcpus; i++)
			o->vcpus[i] = (unsigned int)v[i];
		return err;
	case OPT_SCALE:
		return set_axis("scale", arg, ok_scale, "each in (0, 100]", o->scale, MAX_AXIS,
				&o->nr_scale);
	case OPT_SEEDS:
		err = set_axis("seeds", arg, ok_seed, "integers from 0", v, MAX_SEEDS,
			       &o->nr_seeds);
		for (unsigned int i = 0; !err && i < o->nr_seeds; i++) {
			o->seeds[i] = (uint64_t)v[i];
			for (unsigned int k = 0; k < i; k++)
				if (o->seeds[k] == o->seeds[i]) /* it would count twice */
					return cli_usage_error(CMD, "--seeds: %llu given twice",
							       (unsigned long long)o->seeds[i]);
		}
		return err;
	case OPT_WORKLOAD:
		o->workload = arg;
		return 0;
	case OPT_COST:
	case OPT_COST_PROFILE:
		return lab_cmd_cost_option(CMD, opt == OPT_COST_PROFILE ? arg : NULL,
					   opt == OPT_COST ? arg : NULL, &o->cost, o->cost_args,
					   &o->nr_cost_args, 16);
	case OPT_SVG:
		if (cli_plot_name(CMD, "--svg", arg))
			return CLI_EXIT_USAGE;
		o->svg = arg;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	}
	return CLI_EXIT_USAGE;
}

static void opts_default(struct sweep_opts *o)
{
	static const unsigned int vcpus[] = { 8, 16, 32, 64, 96, 256 };

	memset(o, 0, sizeof(*o));
	o->nr_vcpus = sizeof(vcpus) / sizeof(vcpus[0]);
	memcpy(o->vcpus, vcpus, sizeof(vcpus));
	o->scale[0] = 0.3;
	o->scale[1] = 1;
	o->nr_scale = 2;
	for (unsigned int i = 0; i < 3; i++)
		o->seeds[i] = i + 1;
	o->nr_seeds = 3;
	lab_cost_default(&o->cost);
}

/* ------------------------------------------------------------------------
 * The runs
 * ---------------------------------------------------------------------- */

static int run_cell(struct sweep *s, unsigned int si, unsigned int vi, unsigned int k)
{
	const struct sweep_opts *o = s->o;
	struct sweep_run *out = run_at(s, si, vi, k);
	struct lab_options lo;
	struct lab_result res;
	int err;

	lab_options_default(&lo);
	lo.vcpu.nr_vcpus = o->vcpus[vi];
	lo.scale = o->scale[si];
	lo.seed = o->seeds[k];
	lo.cost = o->cost;
	err = lab_run(&s->exp, &s->exp.workload, &lo, &res);
	if (err) {
		lab_result_fini(&res);
		if (err == -EINVAL)
			return cli_usage_error(CMD, "%s at %u vCPUs, scale %g: the workload's "
					       "parameters do not fit this run: %s", s->exp.name,
					       o->vcpus[vi], o->scale[si],
					       lab_cmd_workload_rules(s->exp.workload.kind));
		return cli_runtime_error(CMD, "%s: %s", s->exp.name, cli_errno_name(err));
	}
	for (unsigned int a = 1; a < res.nr_arms; a++)
		for (unsigned int m = 0; m < s->exp.nr_metrics; m++) {
			out->delta[a][m] = res.delta_pct[a][m];
			out->agrees[a][m] = res.agrees[a][m];
			s->judged[a][m] = res.judged[a][m];
		}
	lab_result_fini(&res);
	return 0;
}

static int run_grid(struct sweep *s)
{
	const struct sweep_opts *o = s->o;
	unsigned int total = o->nr_scale * o->nr_vcpus * o->nr_seeds, done = 0;

	for (unsigned int si = 0; si < o->nr_scale; si++)
		for (unsigned int vi = 0; vi < o->nr_vcpus; vi++)
			for (unsigned int k = 0; k < o->nr_seeds; k++) {
				uint64_t t0 = cli_now_ns();
				int rc = run_cell(s, si, vi, k);

				if (rc)
					return rc;
				fprintf(stderr, "uswap " CMD ": %u of %u: %u vCPUs, scale %g, "
					"seed %llu: %.1f s\n", ++done, total, o->vcpus[vi],
					o->scale[si], (unsigned long long)o->seeds[k],
					(double)(cli_now_ns() - t0) / 1e9);
			}
	return 0;
}

/* ------------------------------------------------------------------------
 * Verdicts
 * ---------------------------------------------------------------------- */

struct cell {
	double median;
	unsigned int agree; /* seeds whose run agrees */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct cell cell_of(const struct sweep *s, unsigned int si, unsigned int vi,
			   unsigned int a, unsigned int m)
{
	double d[MAX_SEEDS];
	struct cell c = { 0 };
	unsigned int n = s->o->nr_seeds;

	for (unsigned int k = 0; k < n; k++) {
		const struct sweep_run *r = run_at(s, si, vi, k);

		d[k] = r->delta[a][m];
		c.agree += r->agrees[a][m];
		if (isnan(d[k])) {
			c.median = NAN;
			return c;
		}
	}
	qsort(d, n, sizeof(d[0]), cmp_double);
	c.median = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
	return c;
}

/* "none" where a seed's run has no figure (nothing to judge: lab run's
 * "-"), else by how many seeds agree. */
static const char *verdict(const struct sweep *s, const struct cell *c)
{
	if (isnan(c->median))
		return "none";
	return c->agree == s->o->nr_seeds ? "holds" : c->agree == 0 ? "flips" : "mixed";
}

/* Index of a verdict in the counts: holds, flips, mixed, none. */
static unsigned int verdict_idx(const char *v)
{
	return v[0] == 'h' ? 0 : v[0] == 'f' ? 1 : v[0] == 'm' ? 2 : 3;
}

static const char *arm_name(const struct sweep *s, unsigned int a)
{
	return s->exp.arms[a].name;
}

/* ------------------------------------------------------------------------
 * Output
 * ---------------------------------------------------------------------- */

static void print_metric(const struct sweep *s, unsigned int a, unsigned int m)
{
	const struct sweep_opts *o = s->o;
	const struct lab_metric *lm = &s->exp.metrics[m];
	unsigned int n[4] = { 0 }; /* holds, flips, mixed, none */

	printf("\n%s vs %s: %s (seed: %s)\n", arm_name(s, a), arm_name(s, 0), lm->label,
	       lab_claim_word(lm->claim[a]));
	printf("%-8s", "scale");
	for (unsigned int vi = 0; vi < o->nr_vcpus; vi++)
		printf(" %10u v", o->vcpus[vi]);
	putchar('\n');
	for (unsigned int si = 0; si < o->nr_scale; si++) {
		printf("%-8g", o->scale[si]);
		for (unsigned int vi = 0; vi < o->nr_vcpus; vi++) {
			struct cell c = cell_of(s, si, vi, a, m);
			const char *v = verdict(s, &c);

			n[verdict_idx(v)]++;
			if (isnan(c.median))
				printf(" %11s  ", "-");
			else
				printf(" %+10.1f%% %c", c.median, "+x~"[verdict_idx(v)]);
		}
		putchar('\n');
	}
	printf("holds in %u of %u cells, flips in %u, mixed in %u", n[0],
	       o->nr_scale * o->nr_vcpus, n[1], n[2]);
	if (n[3])
		printf(", nothing to judge in %u (-)", n[3]);
	putchar('\n');
}

static void print_table(const struct sweep *s)
{
	const struct sweep_opts *o = s->o;

	printf("%s (linux-mm: %s)\n", s->exp.name, s->exp.thread);
	printf("cost table: %s\nworkload: %s\n", s->cost_text,
	       o->workload ? o->workload : "the seed's");
	printf("virtual time; each cell: median delta %% over seeds");
	for (unsigned int k = 0; k < o->nr_seeds; k++)
		printf("%s%llu", k ? "," : " ", (unsigned long long)o->seeds[k]);
	printf("; + holds (every seed agrees with the seed thread), x flips (none), "
	       "~ mixed\n");
	for (unsigned int a = 1; a < s->exp.nr_arms; a++)
		for (unsigned int m = 0; m < s->exp.nr_metrics; m++)
			if (s->judged[a][m])
				print_metric(s, a, m);
}

static void json_metric(struct cli_json *j, const struct sweep *s, unsigned int a,
			unsigned int m)
{
	const struct sweep_opts *o = s->o;
	unsigned int n[4] = { 0 };

	cli_json_object_open(j, NULL, false);
	cli_json_string(j, "arm", arm_name(s, a));
	cli_json_string(j, "metric", s->exp.metrics[m].name);
	cli_json_string(j, "claim", lab_claim_word(s->exp.metrics[m].claim[a]));
	cli_json_array_open(j, "cells", false);
	for (unsigned int si = 0; si < o->nr_scale; si++)
		for (unsigned int vi = 0; vi < o->nr_vcpus; vi++) {
			struct cell c = cell_of(s, si, vi, a, m);
			const char *v = verdict(s, &c);

			n[verdict_idx(v)]++;
			cli_json_object_open(j, NULL, true);
			cli_json_u64(j, "vcpus", o->vcpus[vi]);
			cli_json_double(j, "scale", o->scale[si]);
			cli_json_array_open(j, "delta_pct", true);
			for (unsigned int k = 0; k < o->nr_seeds; k++)
				cli_json_double(j, NULL, run_at(s, si, vi, k)->delta[a][m]);
			cli_json_array_close(j);
			cli_json_double(j, "median_delta_pct", c.median);
			cli_json_u64(j, "agree", c.agree);
			cli_json_string(j, "verdict", v);
			cli_json_object_close(j);
		}
	cli_json_array_close(j);
	cli_json_u64(j, "holds", n[0]);
	cli_json_u64(j, "flips", n[1]);
	cli_json_u64(j, "mixed", n[2]);
	cli_json_u64(j, "none", n[3]);
	cli_json_object_close(j);
}

static void print_json(const struct sweep *s)
{
	const struct sweep_opts *o = s->o;
	struct cli_json j;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_string(&j, "experiment", s->exp.name);
	cli_json_string(&j, "time", "virtual");
	cli_json_string(&j, "cost", s->cost_text);
	cli_json_string(&j, "workload", o->workload ? o->workload : "default");
	cli_json_array_open(&j, "vcpus", true);
	for (unsigned int i = 0; i < o->nr_vcpus; i++)
		cli_json_u64(&j, NULL, o->vcpus[i]);
	cli_json_array_close(&j);
	cli_json_array_open(&j, "scale", true);
	for (unsigned int i = 0; i < o->nr_scale; i++)
		cli_json_double(&j, NULL, o->scale[i]);
	cli_json_array_close(&j);
	cli_json_array_open(&j, "seeds", true);
	for (unsigned int i = 0; i < o->nr_seeds; i++)
		cli_json_u64(&j, NULL, o->seeds[i]);
	cli_json_array_close(&j);
	cli_json_array_open(&j, "metrics", false);
	for (unsigned int a = 1; a < s->exp.nr_arms; a++)
		for (unsigned int m = 0; m < s->exp.nr_metrics; m++)
			if (s->judged[a][m])
				json_metric(&j, s, a, m);
	cli_json_array_close(&j);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

/* One block per judged metric (gnuplot's index): column, row, share of
 * seeds that agree, the median delta as a label. */
static int svg_data(FILE *f, void *ctx)
{
	const struct sweep *s = ctx;
	const struct sweep_opts *o = s->o;

	for (unsigned int a = 1; a < s->exp.nr_arms; a++)
		for (unsigned int m = 0; m < s->exp.nr_metrics; m++) {
			if (!s->judged[a][m])
				continue;
			for (unsigned int si = 0; si < o->nr_scale; si++)
				for (unsigned int vi = 0; vi < o->nr_vcpus; vi++) {
					struct cell c = cell_of(s, si, vi, a, m);

					if (isnan(c.median)) /* a gap in the map */
						fprintf(f, "%u %u NaN \"-\"\n", vi, si);
					else
						fprintf(f, "%u %u %.3f \"%+.0f%%\"\n", vi, si,
							(double)c.agree / o->nr_seeds, c.median);
				}
			fputs("\n\n", f);
		}
	return ferror(f) ? -EIO : 0;
}

static void svg_script(FILE *g, const char *data, const char *path, void *ctx)
{
	const struct sweep *s = ctx;
	const struct sweep_opts *o = s->o;
	unsigned int panels = 0, idx = 0;

	for (unsigned int a = 1; a < s->exp.nr_arms; a++)
		for (unsigned int m = 0; m < s->exp.nr_metrics; m++)
			panels += s->judged[a][m];
	fprintf(g, "set terminal svg size 900,%u dynamic background rgb 'white'\n"
		   "set output '%s'\nset multiplot layout %u,1 title '%s: share of seeds "
		   "that agree with the seed thread (green: holds, red: flips)'\n"
		   "set palette defined (0 '#d73027', 0.5 '#fee08b', 1 '#1a9850')\n"
		   "set termoption noenhanced\nset cbrange [0:1]\nunset colorbox\nset xlabel 'vCPUs'\n"
		   "set ylabel 'scale'\nset xrange [-0.5:%u.5]\nset yrange [-0.5:%u.5]\n",
		220 * (panels ? panels : 1) + 60, path, panels ? panels : 1, s->exp.name,
		o->nr_vcpus - 1, o->nr_scale - 1);
	fputs("set xtics (", g);
	for (unsigned int vi = 0; vi < o->nr_vcpus; vi++)
		fprintf(g, "%s'%u' %u", vi ? ", " : "", o->vcpus[vi], vi);
	fputs(")\nset ytics (", g);
	for (unsigned int si = 0; si < o->nr_scale; si++)
		fprintf(g, "%s'%g' %u", si ? ", " : "", o->scale[si], si);
	fputs(")\n", g);
	for (unsigned int a = 1; a < s->exp.nr_arms; a++)
		for (unsigned int m = 0; m < s->exp.nr_metrics; m++) {
			if (!s->judged[a][m])
				continue;
			fprintf(g, "set title '%s vs %s: %s (seed: %s)'\n"
				   "plot '%s' index %u using 1:2:3 with image notitle, "
				   "'' index %u using 1:2:4 with labels notitle\n",
				arm_name(s, a), arm_name(s, 0), s->exp.metrics[m].label,
				lab_claim_word(s->exp.metrics[m].claim[a]), data, idx, idx);
			idx++;
		}
	fputs("unset multiplot\n", g);
}

static int draw_svg(const struct sweep *s)
{
	return cli_svg_draw(CMD, s->o->svg, s->o->svg_made, svg_data, svg_script, (void *)s);
}

/* ------------------------------------------------------------------------
 * The command
 * ---------------------------------------------------------------------- */

static int parse_opts(int argc, char **argv, struct sweep_opts *o, const char **name)
{
	int opt;

	opts_default(o);
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":h", sweep_options,
				      sweep_usage_text)) > 0) {
		int err = apply_option(o, opt, optarg);

		if (err)
			return err;
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (optind >= argc)
		return cli_usage_error(CMD, "missing experiment name ('uswap lab list' "
				       "names them)");
	if (optind + 1 < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	*name = argv[optind];
	return 0;
}

int cmd_lab_sweep(int argc, char **argv)
{
	const struct lab_experiment *exp;
	struct sweep_opts o;
	struct sweep s = { .o = &o };
	const char *name = NULL;
	int rc = parse_opts(argc, argv, &o, &name);

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	exp = lab_experiment_find(name);
	if (!exp)
		return cli_usage_error(CMD, "unknown experiment '%s' ('uswap lab list' "
				       "names them)", name);
	s.exp = *exp;
	if (o.workload && lab_workload_parse(o.workload, &s.exp.workload))
		return cli_usage_error(CMD, "--workload: bad parameters '%s' (see "
				       "docs/lab.md)", o.workload);
	if (o.svg && (rc = cli_svg_open(CMD, "--svg", o.svg, &o.svg_made)))
		return rc;
	lab_cost_format(&o.cost, s.cost_text, sizeof(s.cost_text));
	s.runs = calloc((size_t)o.nr_scale * o.nr_vcpus * o.nr_seeds, sizeof(*s.runs));
	if (!s.runs)
		return cli_runtime_error(CMD, "out of memory");
	rc = run_grid(&s);
	if (!rc && o.json)
		print_json(&s);
	else if (!rc)
		print_table(&s);
	if (!rc && o.svg)
		rc = draw_svg(&s);
	else if (rc && o.svg && o.svg_made)
		unlink(o.svg); /* the empty file made for a run that failed */
	free(s.runs);
	return rc;
}
