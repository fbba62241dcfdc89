// SPDX-License-Identifier: MIT
/*
 * report.c - run every arm of an experiment and report them in the seed
 * threads' shape: metric, each arm, each arm's delta % against the first,
 * and whether the sign of each change is the one the thread reports.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "lab/lab_internal.h"

/* A change smaller than this is "about equal": run-to-run noise of the
 * timed metrics on this machine is a few percent. */
#define EQUAL_BAND_PCT 5.0

bool lab_direction_agrees(int claim, double delta_pct)
{
	if (isnan(delta_pct))
		return false;
	if (claim == LAB_SAME)
		return fabs(delta_pct) < EQUAL_BAND_PCT;
	return claim == LAB_UP ? delta_pct > 0 : delta_pct < 0;
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

		for (unsigned int a = 0; a < res->nr_arms; a++)
			res->value[a][i] = m->fn(&res->arm[a]);
		for (unsigned int a = 1; a < res->nr_arms; a++) {
			enum lab_claim c = m->claim[a];

			res->delta_pct[a][i] = delta_pct(res->value[0][i], res->value[a][i]);
			res->judged[a][i] = c != LAB_NO_CLAIM;
			if (c == LAB_AT_MOST)
				res->agrees[a][i] = res->value[a][i] <= m->at_most;
			else if (c != LAB_NO_CLAIM)
				res->agrees[a][i] = lab_direction_agrees(c, res->delta_pct[a][i]);
		}
	}
}

bool lab_all_agree(const struct lab_result *res)
{
	for (unsigned int a = 1; a < res->nr_arms; a++)
		for (unsigned int i = 0; i < res->exp->nr_metrics; i++)
			if (res->judged[a][i] && !res->agrees[a][i])
				return false;
	return true;
}

int lab_run(const struct lab_experiment *exp, const struct lab_workload *wl,
	    const struct lab_options *opt, struct lab_result *res)
{
	struct lab_options o = *opt;
	int err;

	memset(res, 0, sizeof(*res));
	res->exp = exp;
	if (exp->nr_arms < 2 || exp->nr_arms > LAB_MAX_ARMS)
		return -EINVAL;
	for (unsigned int a = 0; a < exp->nr_arms; a++) {
		o.label = exp->arms[a].name;
		o.trace_out = a == 0 ? opt->trace_out : NULL; /* the first arm's */
		err = lab_run_arm(wl, &exp->arms[a].policy, &o, &res->arm[a]);
		res->nr_arms = a + 1;
		if (err)
			return err;
	}
	lab_report_compute(res);
	return 0;
}

void lab_result_fini(struct lab_result *res)
{
	for (unsigned int a = 0; a < LAB_MAX_ARMS; a++)
		lab_arm_fini(&res->arm[a]);
}

const char *lab_claim_word(enum lab_claim c)
{
	switch (c) {
	case LAB_UP:       return "up";
	case LAB_DOWN:     return "down";
	case LAB_SAME:     return "same";
	case LAB_AT_MOST:  return "<=";
	case LAB_NO_CLAIM: break;
	}
	return "-";
}

static void print_value(FILE *out, double v)
{
	if (isnan(v))
		fprintf(out, " %12s", "-");
	else if (isinf(v))
		fprintf(out, " %12s", v > 0 ? "inf" : "-inf");
	else if (fabs(v) >= 100)
		fprintf(out, " %12.0f", v);
	else
		fprintf(out, " %12.3f", v);
}

static void print_delta(FILE *out, double d)
{
	if (isnan(d) || isinf(d))
		fprintf(out, " %9s", "-");
	else
		fprintf(out, " %+8.1f%%", d);
}

/* One arm's lock table in perf lock contention's columns. */
static void print_locks(const char *arm, const struct lab_arm *a, FILE *out)
{
	fprintf(out, "\n%s: locks in virtual time (%.3f s sys, %.3f s real):\n"
		"%12s %12s %13s %12s %12s  %-16s %s\n", arm, a->vt.cpu_ns / 1e9,
		a->vt.makespan_ns / 1e9, "acquired", "contended", "total wait",
		"max wait", "avg wait", "lock", "caller");
	for (unsigned int i = 0; i < a->vt.nr_sites; i++) {
		const struct lab_lock_site *s = &a->vt.sites[i];

		fprintf(out, "%12llu %12llu %10.3f ms %9.2f us %9.0f ns  %-16s %s\n",
			(unsigned long long)s->acquired, (unsigned long long)s->contended,
			s->wait_ns / 1e6, s->max_wait_ns / 1e3,
			s->contended ? s->wait_ns / (double)s->contended : 0.0,
			s->lock, s->site);
	}
}

void lab_report_print_locks(const struct lab_result *res, FILE *out)
{
	for (unsigned int a = 0; a < res->nr_arms; a++)
		if (res->arm[a].virtual_time)
			print_locks(res->exp->arms[a].name, &res->arm[a], out);
}

static void print_header(const struct lab_result *res, FILE *out)
{
	const struct lab_experiment *exp = res->exp;

	if (exp->workload.kind == LAB_WL_REPLAY)
		fprintf(out, "replay of %s\n", exp->thread);
	else
		fprintf(out, "%s (linux-mm: %s)\n", exp->name, exp->thread);
	for (unsigned int a = 0; a < res->nr_arms; a++) {
		char policy[160];

		lab_policy_format(&res->arm[a].policy, policy, sizeof(policy));
		if (exp->arms[a].what[0])
			fprintf(out, "  %-7s %s\n  %-7s", exp->arms[a].name,
				exp->arms[a].what, "");
		else
			fprintf(out, "  %-7s", exp->arms[a].name);
		fprintf(out, " %s; %.2f s wall\n", policy, res->arm[a].elapsed_s);
	}
	fprintf(out, "  time: %s, %u thread(s)\n\n", res->arm[0].virtual_time ?
		"virtual (the cost table's, for the vCPUs' machine)" :
		"wall clock (this host's real threads)", res->arm[0].threads);
}

void lab_report_print(const struct lab_result *res, FILE *out)
{
	const struct lab_experiment *exp = res->exp;

	print_header(res, out);
	fprintf(out, "%-38s", "metric");
	for (unsigned int a = 0; a < res->nr_arms; a++)
		fprintf(out, " %12s", exp->arms[a].name);
	for (unsigned int a = 1; a < res->nr_arms; a++)
		fprintf(out, " %8s%%", exp->arms[a].name);
	fprintf(out, "  seed / agrees\n");
	for (unsigned int i = 0; i < exp->nr_metrics; i++) {
		const struct lab_metric *m = &exp->metrics[i];
		char label[64];

		snprintf(label, sizeof(label), "%s%s%s%s", m->label,
			 m->unit[0] ? " (" : "", m->unit, m->unit[0] ? ")" : "");
		fprintf(out, "%-38s", label);
		for (unsigned int a = 0; a < res->nr_arms; a++)
			print_value(out, res->value[a][i]);
		for (unsigned int a = 1; a < res->nr_arms; a++)
			print_delta(out, res->delta_pct[a][i]);
		fprintf(out, " ");
		for (unsigned int a = 1; a < res->nr_arms; a++)
			fprintf(out, " %s %s", lab_claim_word(m->claim[a]),
				!res->judged[a][i] ? "-" : res->agrees[a][i] ? "yes" : "NO");
		fputc('\n', out);
	}
	lab_report_print_locks(res, out);
	if (exp->workload.kind == LAB_WL_REPLAY) {
		fprintf(out, "\nfolios that found no room (stayed in memory):");
		for (unsigned int a = 0; a < res->nr_arms; a++)
			fprintf(out, " %s %llu", exp->arms[a].name,
				(unsigned long long)res->arm[a].replay_not_out);
		fputc('\n', out);
		return;
	}
	fprintf(out, "\nseed figures:\n");
	for (unsigned int i = 0; i < exp->nr_metrics; i++)
		fprintf(out, "  %s: %s\n", exp->metrics[i].name, exp->metrics[i].seed_figure);
}
