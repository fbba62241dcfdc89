/* SPDX-License-Identifier: MIT */
/*
 * lab_replay.c - `uswap lab replay FILE --arm POLICY --arm POLICY ...`:
 * a recorded trace of swap operations (docs/lab.md, "Traces") replayed
 * in virtual time under two or more allocator policies, reported as the
 * lab reports an experiment (no seed to agree with).
 */
#include "cli.h"
#include "lab_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define CMD "lab replay"

static const char usage_text[] =
"Usage: uswap lab replay FILE --arm POLICY --arm POLICY [OPTIONS]\n"
"\n"
"Replay a recorded trace of swap operations (version 1: 'uswap lab run\n"
"NAME --trace-out FILE' writes one; docs/lab.md defines the format) in\n"
"virtual time, once per arm, and report each arm's metrics, its delta %\n"
"against the first arm and its lock table. Records run in the trace's\n"
"order, each on its CPU's virtual CPU, starting at its recorded time.\n"
"A trace with a bad record is refused with its line.\n"
"\n"
"Options:\n"
"  --arm POLICY      an arm: key=value,... on top of uswap's default design\n"
"                    (as 'uswap lab run --before'; 'default' for it);\n"
"                    2 to 4 of them, named A, B, C, D in order\n"
"  --devices N       equal-priority devices, 1..32 (default 1)\n"
"  --fill X          the trace's peak of swapped-out pages over the\n"
"                    devices' room, 0.01..1 (default 0.7)\n"
"  --vcpus N         virtual CPUs, 1..1024 (default: the trace's highest\n"
"                    CPU + 1); a record of CPU c runs on c mod N\n"
"  --cost KEY=NS,... change the cost table ('uswap lab run --help')\n"
"  --seed N          seed of the page costs' jitter (default 1)\n"
"  --svg FILE.svg    draw per-device use over the replay, a panel per arm\n"
"  --plot FILE.svg   the same (the name run and stress use)\n"
"  --json            one JSON object on stdout, as 'uswap lab run --json'\n"
"  -h, --help        show this help\n"
"\n"
"Exit status: 0 success, 1 runtime error (unreadable file), 2 usage error\n"
"(bad option, bad policy, bad trace).\n";

static const struct option replay_options[] = {
	LAB_COMMON_OPTIONS,
	{ "arm",     required_argument, NULL, LAB_OPT_ARM },
	{ "devices", required_argument, NULL, LAB_OPT_DEVICES },
	{ "fill",    required_argument, NULL, LAB_OPT_FILL },
	{ NULL, 0, NULL, 0 },
};

static const char *const arm_names[LAB_MAX_ARMS] = { "A", "B", "C", "D" };

struct replay_args {
	struct run_opts o;
	struct lab_experiment exp;
	const char *arm_text[LAB_MAX_ARMS];
	unsigned int devices;
	double fill;
};

static int replay_option(int opt, const char *arg, struct replay_args *a)
{
	struct lab_experiment *e = &a->exp;

	switch (opt) {
	case LAB_OPT_ARM:
		if (e->nr_arms == LAB_MAX_ARMS)
			return cli_usage_error(CMD, "--arm: at most %d arms", LAB_MAX_ARMS);
		if (lab_policy_parse(arg, &e->arms[e->nr_arms].policy))
			return cli_usage_error(CMD, "--arm: bad policy '%s' (see 'uswap lab "
					       "run --help')", arg);
		e->arms[e->nr_arms].name = arm_names[e->nr_arms];
		e->arms[e->nr_arms].what = "";
		a->arm_text[e->nr_arms++] = arg;
		return 0;
	case LAB_OPT_DEVICES:
		if (cli_parse_uint(arg, 1, USWAP_MAX_DEVICES, &a->devices))
			return cli_usage_error(CMD, "--devices: expected 1..%d, got '%s'",
					       USWAP_MAX_DEVICES, arg);
		return 0;
	case LAB_OPT_FILL:
		if (cli_parse_seconds(arg, &a->fill) || a->fill > 1 ||
		    a->fill < LAB_REPLAY_MIN_FILL)
			return cli_usage_error(CMD, "--fill: expected a number in [%g, 1], "
					       "got '%s'", LAB_REPLAY_MIN_FILL, arg);
		return 0;
	}
	return lab_cmd_option(CMD, opt, arg, &a->o);
}

static int parse(int argc, char **argv, struct replay_args *a, const char **file)
{
	int opt;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", replay_options, NULL)) != -1) {
		int err;

		if (opt == 'h') {
			fputs(usage_text, stdout);
			return -1;
		}
		if (opt == '?')
			return cli_usage_error(CMD, "unknown option or missing value: '%s'",
					       argv[optind - 1]);
		err = replay_option(opt, optarg, a);
		if (err)
			return err;
	}
	if (optind >= argc)
		return cli_usage_error(CMD, "missing the trace FILE");
	if (optind + 1 < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);
	*file = argv[optind];
	if (a->exp.nr_arms < 2)
		return cli_usage_error(CMD, "give two or more --arm POLICY (got %u)",
				       a->exp.nr_arms);
	return 0;
}

/* Read @path into @t. Return: 0 or the exit status. */
static int load(const char *path, struct lab_trace *t)
{
	char why[160];
	FILE *f = fopen(path, "r");
	int err;

	if (!f)
		return cli_runtime_error(CMD, "%s: %s", path, strerror(errno));
	err = lab_trace_read(f, t, why, sizeof(why));
	fclose(f);
	if (err == -EINVAL)
		return cli_usage_error(CMD, "%s: %s", path, why);
	return err ? cli_runtime_error(CMD, "%s: %s", path, strerror(-err)) : 0;
}

int cmd_lab_replay(int argc, char **argv)
{
	struct replay_args a = { .devices = 1, .fill = 0.7 };
	struct lab_trace trace;
	struct lab_result res;
	const char *file = NULL;
	int err;

	lab_options_default(&a.o.lab);
	lab_replay_experiment(&a.exp, "");
	err = parse(argc, argv, &a, &file);
	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	err = load(file, &trace);
	if (err)
		return err;
	a.exp.thread = file;
	a.exp.workload.trace = &trace;
	a.exp.workload.nr_devices = a.devices;
	a.exp.workload.replay_fill = a.fill;
	if (!a.o.vcpus_set)
		a.o.lab.vcpu.nr_vcpus = trace.nr_cpus;
	a.o.lab.vcpu.nr_threads = 1;
	a.o.lab.progress = stderr;
	err = lab_run(&a.exp, &a.exp.workload, &a.o.lab, &res);
	if (err) {
		lab_result_fini(&res);
		lab_trace_fini(&trace);
		return cli_runtime_error(CMD, "%s: %s", file, cli_errno_name(err));
	}
	err = lab_cmd_report(CMD, &res, &a.o);
	lab_result_fini(&res);
	lab_trace_fini(&trace);
	return err;
}
