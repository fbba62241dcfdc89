// SPDX-License-Identifier: MIT
/*
 * report.c - run both arms of an experiment and report them in the seed
 * threads' shape: metric, before, after, delta %, and whether the sign of
 * the change is the one the thread reports.
 */
#include <math.h>
#include <string.h>

#include "lab/lab.h"

/* A change smaller than this is "about equal": run-to-run noise of the
 * timed metrics on this machine is a few percent. */
#define EQUAL_BAND_PCT 5.0

bool lab_direction_agrees(int expect, double delta_pct)
{
	if (isnan(delta_pct))
		return false;
	if (expect == 0)
		return fabs(delta_pct) < EQUAL_BAND_PCT;
	return expect > 0 ? delta_pct > 0 : delta_pct < 0;
}

static double delta_pct(double before, double after)
{
	if (isnan(before) || isnan(after))
		return NAN;
	if (before == after)
		return 0.0; /* 0 -> 0 and inf -> inf: no change */
	if (isinf(before))
		return -100.0; /* from "one device held nothing" to finite */
	if (before == 0)
		return after > 0 ? INFINITY : -INFINITY;
	return (after - before) / fabs(before) * 100.0;
}

void lab_report_compute(struct lab_result *res)
{
	const struct lab_experiment *exp = res->exp;

	for (unsigned int i = 0; i < exp->nr_metrics; i++) {
		const struct lab_metric *m = &exp->metrics[i];

		res->value[0][i] = m->fn(&res->before);
		res->value[1][i] = m->fn(&res->after);
		res->delta_pct[i] = delta_pct(res->value[0][i], res->value[1][i]);
		if (m->after_at_most > 0)
			res->agrees[i] = res->value[1][i] <= m->after_at_most;
		else
			res->agrees[i] = lab_direction_agrees(m->expect, res->delta_pct[i]);
	}
}

int lab_run(const struct lab_experiment *exp, const struct lab_workload *wl,
	    const struct lab_options *opt, struct lab_result *res)
{
	struct lab_options o = *opt;
	int err;

	memset(res, 0, sizeof(*res));
	res->exp = exp;
	o.label = "before";
	err = lab_run_arm(wl, &exp->before, &o, &res->before);
	if (err)
		return err;
	o.label = "after";
	err = lab_run_arm(wl, &exp->after, &o, &res->after);
	if (err)
		return err;
	lab_report_compute(res);
	return 0;
}

void lab_result_fini(struct lab_result *res)
{
	lab_arm_fini(&res->before);
	lab_arm_fini(&res->after);
}

static const char *sign_word(const struct lab_metric *m)
{
	if (m->after_at_most > 0)
		return "<=";
	return m->expect > 0 ? "up" : m->expect < 0 ? "down" : "same";
}

static void print_value(FILE *out, double v)
{
	if (isnan(v))
		fprintf(out, " %14s", "-");
	else if (isinf(v))
		fprintf(out, " %14s", v > 0 ? "inf" : "-inf");
	else if (fabs(v) >= 100)
		fprintf(out, " %14.0f", v);
	else
		fprintf(out, " %14.3f", v);
}

void lab_report_print(const struct lab_result *res, FILE *out)
{
	const struct lab_experiment *exp = res->exp;
	char before[160], after[160];

	lab_policy_format(&res->before.policy, before, sizeof(before));
	lab_policy_format(&res->after.policy, after, sizeof(after));
	fprintf(out, "%s (linux-mm: %s)\n  before: %s\n  after:  %s\n"
		"  before %.2f s, after %.2f s on %u thread(s)\n\n",
		exp->name, exp->thread, before, after, res->before.elapsed_s,
		res->after.elapsed_s, res->before.threads);
	fprintf(out, "%-40s %14s %14s %9s  %-5s %s\n", "metric", "before", "after",
		"delta %", "seed", "agrees");
	for (unsigned int i = 0; i < exp->nr_metrics; i++) {
		const struct lab_metric *m = &exp->metrics[i];
		char label[64];

		snprintf(label, sizeof(label), "%s%s%s%s", m->label,
			 m->unit[0] ? " (" : "", m->unit, m->unit[0] ? ")" : "");
		fprintf(out, "%-40s", label);
		print_value(out, res->value[0][i]);
		print_value(out, res->value[1][i]);
		if (isnan(res->delta_pct[i]) || isinf(res->delta_pct[i]))
			fprintf(out, " %9s", "-");
		else
			fprintf(out, " %+8.1f%%", res->delta_pct[i]);
		fprintf(out, "  %-5s %s\n", sign_word(m),
			res->agrees[i] ? "yes" : "NO");
	}
	fprintf(out, "\nseed figures:\n");
	for (unsigned int i = 0; i < exp->nr_metrics; i++)
		fprintf(out, "  %s: %s\n", exp->metrics[i].name, exp->metrics[i].seed_figure);
}
