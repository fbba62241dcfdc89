/* SPDX-License-Identifier: MIT */
/*
 * uswap.c - the `uswap` command: global options and subcommand dispatch.
 *
 * `uswap [--help | --version] COMMAND [ARGS]`. Each command is a
 * function taking its own argv (argv[0] = the command's name) and
 * returning an exit code: 0, 1 (runtime error), 2 (usage error).
 */
#include "bench_alloc.h"
#include "bench_usemem.h"
#include "bench_io.h"
#include "cli.h"
#include "lab_cmd.h"
#include "stress_cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#ifndef USWAP_VERSION
#define USWAP_VERSION "unknown"
#endif

struct command {
	const char *name;
	cli_cmd_fn fn;
	const char *summary;
};

static int cmd_bench(int argc, char **argv);

static const struct command commands[] = {
	{ "bench", cmd_bench, "run a benchmark of the library" },
	{ "lab", cmd_lab, "replay a seed thread's before/after experiment" },
	{ "stress", cmd_stress, "the whole stack under load and injected faults, "
				"against a shadow model" },
	{ "swapon", cmd_swapon, "check a device spec and its mkswap header "
				"(--dry-run)" },
	{ NULL, NULL, NULL },
};

static const struct command bench_commands[] = {
	{ "alloc", cmd_bench_alloc, "slot allocator: throughput, fallback, "
				    "balance, lock traffic" },
	{ "io", cmd_bench_io, "swap-out/swap-in MB/s per backend beside "
			      "its raw limit" },
	{ "usemem", cmd_bench_usemem, "vm-scalability's usemem on the "
				      "userfaultfd pager" },
	{ "fault", cmd_bench_fault, "the pager's fault round trip (swap-in "
				    "latency)" },
	{ NULL, NULL, NULL },
};

static void print_commands(const struct command *cmds)
{
	for (const struct command *c = cmds; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
}

static void main_usage(void)
{
	printf("Usage: uswap [--help | --version] COMMAND [ARGS]\n\n"
	       "Command-line tool of libuswap, a user-space swap subsystem.\n\n"
	       "Commands:\n");
	print_commands(commands);
	printf("\nRun 'uswap COMMAND --help' for a command's options.\n"
	       "Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

static void bench_usage(void)
{
	printf("Usage: uswap bench BENCHMARK [OPTIONS]\n\nBenchmarks:\n");
	print_commands(bench_commands);
	printf("\nRun 'uswap bench BENCHMARK --help' for its options.\n");
}

static const struct command *find_command(const struct command *cmds,
					  const char *name)
{
	for (const struct command *c = cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static bool is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

/* `uswap bench BENCHMARK ...`: a second level of dispatch. */
static int cmd_bench(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2)
		return cli_usage_error("bench", "missing benchmark name");
	if (is_help(argv[1])) {
		bench_usage();
		return CLI_EXIT_OK;
	}
	c = find_command(bench_commands, argv[1]);
	if (!c)
		return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
	return c->fn(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help",    no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *c;
	int opt;

	opterr = 0;
	/* "+": stop at the command; its options are its own. */
	while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
		if (opt == 'h') {
			main_usage();
			return CLI_EXIT_OK;
		}
		if (opt == 'V') {
			printf("uswap %s\n", USWAP_VERSION);
			return CLI_EXIT_OK;
		}
		return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
	}
	if (optind >= argc)
		return cli_usage_error(NULL, "missing command");
	c = find_command(commands, argv[optind]);
	if (!c)
		return cli_usage_error(NULL, "unknown command '%s'", argv[optind]);
	return c->fn(argc - optind, argv + optind);
}
