/* SPDX-License-Identifier: MIT */
/*
 * uswap.c - the `uswap` command: global options and subcommand dispatch.
 *
 * `uswap [--help | --version] COMMAND [ARGS]`. Each command is a
 * function taking its own argv (argv[0] = the command's name) and
 * returning an exit code: 0, 1 (runtime error), 2 (usage error).
 */
#include "cli.h"
#include "lab_cmd.h"
#include "run_cmd.h"
#include "status_cmd.h"
#include "stress_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	{ "run", cmd_run, "run a program with its heap swapped under a memory "
			  "limit" },
	{ "status", cmd_status, "show the swap state of running 'uswap run' programs" },
	{ "bench", cmd_bench, "run a benchmark of the library (uswap-bench)" },
	{ "lab", cmd_lab, "replay a seed thread's before/after experiment" },
	{ "stress", cmd_stress, "the whole stack under load and injected faults, "
				"against a shadow model" },
	{ "swapon", cmd_swapon, "check a device spec and its mkswap header "
				"(--dry-run)" },
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


static const struct command *find_command(const struct command *cmds,
					  const char *name)
{
	for (const struct command *c = cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* exec @path with @argv if it is there; returns only if it is not. */
static void try_exec(const char *path, char **argv)
{
	if (access(path, X_OK) == 0)
		execv(path, argv);
}

/*
 * `uswap bench BENCHMARK ...`: the benchmarks are their own program,
 * uswap-bench (bench/), so this CLI links none of the harness or the raw
 * codecs it measures against (git runs git-foo the same way). Looked for
 * in $USWAP_BENCH, beside this program (installed), in ../bench/ (the
 * build tree), then on PATH.
 */
static int cmd_bench(int argc, char **argv)
{
	char self[4096], path[4200];
	const char *env = getenv("USWAP_BENCH");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)argc;
	argv[0] = "uswap-bench";
	if (env && *env)
		try_exec(env, argv);
	if (n > 0) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		snprintf(path, sizeof(path), "%s/uswap-bench", self);
		try_exec(path, argv);
		snprintf(path, sizeof(path), "%s/../bench/uswap-bench", self);
		try_exec(path, argv);
	}
	execvp("uswap-bench", argv);
	return cli_runtime_error("bench", "uswap-bench (the benchmark harness) not found: "
				 "set USWAP_BENCH, or install it beside uswap or on PATH");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help",    no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *c;
	int opt, rc;

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
	rc = c->fn(argc - optind, argv + optind);
	/* A table or a JSON document that did not reach its reader is a
	 * failure (`uswap lab list > /dev/full`), not a success. */
	if ((fflush(stdout) || ferror(stdout)) && rc == CLI_EXIT_OK)
		return cli_runtime_error(NULL, "standard output: %s", strerror(errno ? errno : EIO));
	return rc;
}
