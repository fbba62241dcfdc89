/* SPDX-License-Identifier: MIT */
/*
 * lab_cmd.h - `uswap lab`: the seed experiments of src/lab/ (lab.c), their
 * sweep over machine and workload sizes (lab_sweep.c) and the replay of
 * recorded traces (lab_replay.c).
 */
#ifndef USWAP_TOOLS_LAB_CMD_H
#define USWAP_TOOLS_LAB_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include "lab/lab_internal.h"

/* `uswap lab list | run NAME | replay FILE [OPTIONS]`; argv[0] is "lab". */
int cmd_lab(int argc, char **argv);

/* What `lab run` and `lab replay` were asked for (lab.c). */
struct run_opts {
	struct lab_options lab;
	const char *svg;
	bool json;
	const char *before, *after; /* policy overrides, or NULL */
	const char *workload;       /* workload parameter changes, or NULL */
	bool vcpus_set;             /* --vcpus given: not the seed machine's */
	const char *trace_out;      /* --trace-out FILE, or NULL */
	char trace_part[4096];      /* FILE.part, written until the run ends */
	bool cost_set;              /* --cost or --cost-profile given */
	const char *cost_args[16];  /* every --cost, re-applied over a profile */
	unsigned int nr_cost_args;
};

/*
 * lab_cmd_option() - an option both commands take (--vcpus, --threads,
 * --slice, --scale, --seed, --cost, --svg, --json, --wall-clock, ...), by
 * its getopt value @opt. Return: 0, or the usage error's exit status.
 */
int lab_cmd_option(const char *cmd, int opt, const char *arg, struct run_opts *o);

/* getopt values of the shared options (lab.c's table). */
enum {
	LAB_OPT_VCPUS = 256, LAB_OPT_THREADS, LAB_OPT_SLICE, LAB_OPT_SCALE,
	LAB_OPT_SEED, LAB_OPT_BEFORE, LAB_OPT_AFTER, LAB_OPT_SVG, LAB_OPT_JSON,
	LAB_OPT_WORKLOAD, LAB_OPT_COST, LAB_OPT_WALL, LAB_OPT_TRACE_OUT,
	LAB_OPT_ARM, LAB_OPT_DEVICES, LAB_OPT_FILL, LAB_OPT_COST_PROFILE,
};

/* The getopt_long() entries of the options both commands take, for the
 * head of each command's table; lab_cmd_option() handles them. */
#define LAB_COMMON_OPTIONS \
	{ "vcpus", required_argument, NULL, LAB_OPT_VCPUS }, \
	{ "seed",  required_argument, NULL, LAB_OPT_SEED }, \
	{ "cost",  required_argument, NULL, LAB_OPT_COST }, \
	{ "cost-profile", required_argument, NULL, LAB_OPT_COST_PROFILE }, \
	{ "svg",   required_argument, NULL, LAB_OPT_SVG }, \
	{ "plot",  required_argument, NULL, LAB_OPT_SVG }, /* run's and stress's name */ \
	{ "json",  no_argument,       NULL, LAB_OPT_JSON }, \
	{ "help",  no_argument,       NULL, 'h' }

/*
 * lab_cmd_report() - what a run gives: the SVG if asked, then the table
 * or the JSON on stdout. Return: the exit status (runtime error when the
 * SVG was asked for and could not be written).
 */
int lab_cmd_report(const char *cmd, const struct lab_result *res, const struct run_opts *o);

/*
 * lab_cmd_cost_option() - --cost-profile NAME (@profile) or --cost
 * KEY=NS,... (@cost_arg) into @c, in any order: a profile replaces the
 * table and every --cost given so far (@args, @nr: they are kept there)
 * is applied again over it. Return: 0, or the usage error's exit status.
 */
int lab_cmd_cost_option(const char *cmd, const char *profile, const char *cost_arg,
			struct lab_cost *c, const char **args, unsigned int *nr,
			unsigned int cap);

/* What lab_run() checks of each workload (src/lab/workload_*.c), for the
 * usage error of a workload that does not fit a run (lab.c). */
const char *lab_cmd_workload_rules(enum lab_workload_kind kind);

/* `uswap lab sweep NAME [OPTIONS]` (lab_sweep.c): one experiment over a
 * grid of vCPUs, scales and workload seeds. */
int cmd_lab_sweep(int argc, char **argv);

/* `uswap lab replay FILE --arm POLICY --arm POLICY ...` (lab_replay.c). */
int cmd_lab_replay(int argc, char **argv);

#endif /* USWAP_TOOLS_LAB_CMD_H */
