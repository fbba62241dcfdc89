/* SPDX-License-Identifier: MIT */
/*
 * cli.h - helpers shared by the uswap subcommands.
 *
 * Declarations are grouped by the file that defines them: cli.c parses
 * arguments and reports errors with the CLI's exit codes, json.c writes
 * one JSON document to a stream. Parsers return 0 or -EINVAL / -ERANGE
 * and never print; the caller names the option in its message.
 */
#ifndef USWAP_TOOLS_CLI_H
#define USWAP_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct option; /* <getopt.h> */

/* Exit codes of every subcommand. */
#define CLI_EXIT_OK      0
#define CLI_EXIT_RUNTIME 1 /* the run failed (library error, no memory) */
#define CLI_EXIT_USAGE   2 /* bad command line: nothing was run */

/* One subcommand: argv[0] is its own name; returns an exit code. */
typedef int (*cli_cmd_fn)(int argc, char **argv);

/* ------------------------------------------------------------------------
 * cli.c
 * ---------------------------------------------------------------------- */

/* Parse a decimal integer in [min, max]; no sign for unsigned values. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int cli_parse_uint(const char *s, unsigned int min, unsigned int max,
		   unsigned int *out);
int cli_parse_int(const char *s, int min, int max, int *out);

/*
 * cli_parse_size() - a byte count with an optional binary suffix:
 * "4096", "64K", "64M", "1G", "2T" (K/M/G/T are powers of 1024; "KiB",
 * "MB" and lower case are accepted too), with a fraction of the unit:
 * "1.5G" (rounded down to bytes; not without a suffix).
 * Return: 0, -EINVAL (not a size), -ERANGE (past 2^64 - 1).
 */
int cli_parse_size(const char *s, uint64_t *bytes);
/*
 * cli_parse_mem_size() - cli_parse_size(), or a share of the machine's
 * physical memory as systemd's MemoryMax= takes it: "50%", "12.5%"
 * (0..100, rounded down to pages). Return: as cli_parse_size().
 */
int cli_parse_mem_size(const char *s, uint64_t *bytes);

/* A positive, finite number of seconds: "2", "0.5". */
int cli_parse_seconds(const char *s, double *seconds);

/*
 * cli_parse_int_list() - "a,b,c" of integers in [min, max].
 * Return: the number of values stored in @vals (1..@cap), -EINVAL on a
 * malformed list, -ERANGE on a value out of range or more than @cap.
 */
int cli_parse_int_list(const char *s, int min, int max, int *vals, int cap);

/*
 * cli_next_option() - getopt_long() with what every subcommand does the
 * same way: -h/--help prints @usage on stdout, a missing value or an
 * unknown option is a usage error naming it. The first call of a parse
 * must have optind = 0 (glibc's full re-initialisation, as a subcommand
 * parses after the main command did) and @shortopts must start with ':'.
 * Return: the next option for the caller to apply (optarg set), or
 * CLI_OPT_END, CLI_OPT_HELP (usage printed), CLI_OPT_ERROR (message
 * printed; the caller exits with CLI_EXIT_USAGE).
 */
#define CLI_OPT_END   (-1)
#define CLI_OPT_HELP  (-2)
#define CLI_OPT_ERROR (-3)
int cli_next_option(const char *cmd, int argc, char **argv, const char *shortopts,
		    const struct option *longopts, const char *usage);

/* The long name of option @val in @opts (for messages), or "?". */
const char *cli_option_name(const struct option *opts, int val);

/* cli_plot_name() - whether @path, given to option @opt, may receive an
 * SVG: its extension is ".svg" (any case) or it has none (a FIFO,
 * /dev/stdout). Plots are drawn in SVG only, and a file named .png must
 * not receive one. Return: 0, or CLI_EXIT_USAGE after saying so (as
 * @cmd). In cli.c: uswap-bench checks --svg with it too. */
int cli_plot_name(const char *cmd, const char *opt, const char *path);
/* cli_svg_open() - check @path, given to option @opt, with
 * cli_plot_name() and create it now, so that a path that cannot take the
 * SVG fails before the work that draws it (a FIFO: no wait for a
 * reader); *@made says whether it did not exist before. Return: 0, or
 * CLI_EXIT_USAGE after saying why (as @cmd). */
int cli_svg_open(const char *cmd, const char *opt, const char *path, bool *made);
/* cli_svg_draw() - draw --svg @path with gnuplot (lab_gnuplot_svg():
 * @data_fn writes the samples, @script_fn the script, both given @ctx).
 * Without gnuplot: a note on stderr, and @path removed if cli_svg_open()
 * @made it. Return: CLI_EXIT_OK, or the runtime-error status after
 * saying why (as @cmd). */
int cli_svg_draw(const char *cmd, const char *path, bool made,
		 int (*data_fn)(FILE *f, void *ctx),
		 void (*script_fn)(FILE *g, const char *data, const char *path, void *ctx),
		 void *ctx);

/*
 * cli_check_spec() - a device spec given as option @opt, checked without
 * opening anything (uswap_spec_parse()): a malformed one is a usage
 * error, printed with its reason. Return: 0 or CLI_EXIT_USAGE.
 */
int cli_check_spec(const char *cmd, const char *opt, const char *spec);

/*
 * cli_usage_error() - print "uswap <cmd>: <message>" and a hint to use
 * --help on stderr. Return: CLI_EXIT_USAGE, to be returned by the caller.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * cli_runtime_error() - print "uswap <cmd>: <message>" on stderr.
 * Return: CLI_EXIT_RUNTIME.
 */
int cli_runtime_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Human-readable name of a negative errno from the library ("ENOSPC"). */
const char *cli_errno_name(int err);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cli_now_ns(void);

/* ------------------------------------------------------------------------
 * run.c
 * ---------------------------------------------------------------------- */

/*
 * cli_run() - run @argv[0] (a path) with @argv, stdin from /dev/null, and
 * wait for it. With @output, its stdout and stderr are collected into a
 * new NUL-terminated string (*@output, the caller frees it; at most @max
 * bytes kept, the rest read and dropped); without, stdout goes to
 * /dev/null (our stdout may be JSON) and stderr stays ours.
 * Return: the exit status (0..255, 128 + signal), 127 when it could not
 * be executed, or -errno (fork, pipe, no memory).
 */
int cli_run(char *const argv[], char **output, size_t max);

/* ------------------------------------------------------------------------
 * swapfile.c
 * ---------------------------------------------------------------------- */

/*
 * cli_make_swap_file() - create @path (it must not exist; mode 0600),
 * write @size bytes of zeroes with dd and run util-linux mkswap on it.
 * Return: 0; -EEXIST (left alone); -ENOENT (no mkswap); another -errno or
 * -EIO (dd or mkswap failed; the file may be left behind for the caller
 * to remove). A message is put in @err.
 */
int cli_make_swap_file(const char *path, uint64_t size, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * swapon_cmd.c: `uswap swapon --dry-run SPEC`
 * ---------------------------------------------------------------------- */

int cmd_swapon(int argc, char **argv);

/* ------------------------------------------------------------------------
 * json.c: --json documents built with json-c, printed by cli_json_finish();
 * keys are ignored inside arrays
 * ---------------------------------------------------------------------- */

#define CLI_JSON_MAX_DEPTH 16
/* The "version" key every object document starts with: raised when a
 * key of a command's document is renamed or removed (uswap(1)). */
#define CLI_JSON_VERSION 1

struct json_object;

struct cli_json {
	FILE *out;
	int depth;                                  /* open containers */
	struct json_object *stack[CLI_JSON_MAX_DEPTH]; /* [0]: the document */
};

void cli_json_init(struct cli_json *j, FILE *out);
/* @key is NULL for the top-level value and inside arrays. @inline_ is a
 * hint for one-line output that json-c's printer does not take: every
 * container is printed one member a line. */
void cli_json_object_open(struct cli_json *j, const char *key, bool inline_);
void cli_json_object_close(struct cli_json *j);
void cli_json_array_open(struct cli_json *j, const char *key, bool inline_);
void cli_json_array_close(struct cli_json *j);
void cli_json_u64(struct cli_json *j, const char *key, uint64_t v);
void cli_json_i64(struct cli_json *j, const char *key, int64_t v);
/* Non-finite values (no measurement) are written as null. */
void cli_json_double(struct cli_json *j, const char *key, double v);
void cli_json_string(struct cli_json *j, const char *key, const char *s);
void cli_json_bool(struct cli_json *j, const char *key, bool v);
/* Print the document and a newline; every container must be closed. */
void cli_json_finish(struct cli_json *j);

/* ------------------------------------------------------------------------
 * plot_cmd.c: --plot FILE.svg of `uswap run` and `uswap stress`
 * ---------------------------------------------------------------------- */

#define CLI_PLOT_MAX_DEVICES 16
#define CLI_PLOT_PERIOD_MS   200 /* between samples */

struct cli_plot_sample {
	double t;                        /* seconds since cli_plot_new() */
	double resident_mib, limit_mib;  /* 0 when there is none */
	uint64_t out, in;                /* running totals; drawn per second */
	double used_mib[CLI_PLOT_MAX_DEVICES];
};

struct cli_plot {
	const char *path, *title, *out_label, *in_label;
	bool made;                       /* cli_plot_open() created the file */
	uint64_t t0;
	struct cli_plot_sample *s;
	size_t nr, cap;
	unsigned int nr_devices;
	char names[CLI_PLOT_MAX_DEVICES][64];
};

/* cli_plot_open() - check that @path for --plot is an SVG name
 * (cli_plot_name()) that can be created, and create it; *@made says
 * whether it did not exist before. Return: 0, or CLI_EXIT_USAGE after
 * saying why (as @cmd). */
int cli_plot_open(const char *cmd, const char *path, bool *made);

/* A plot to draw into @path (checked with cli_plot_open()); the strings
 * must outlive it and hold no single quote (they go into gnuplot's
 * script as they are). NULL when out of memory. */
struct cli_plot *cli_plot_new(const char *path, bool made, const char *title,
			      const char *out_label, const char *in_label);
/* A new sample (zeroed, its time set) for the caller to fill; NULL when
 * out of memory (the sample is dropped). */
struct cli_plot_sample *cli_plot_next(struct cli_plot *p);
/* Name device column @i (its title in the device-use panel). */
void cli_plot_device(struct cli_plot *p, unsigned int i, const char *name);
/* Draw and free @p. No gnuplot, or no sample, is a note on stderr and 0
 * (with no sample the empty file cli_plot_open() made is removed); else
 * lab_gnuplot_svg()'s -errno, also said on stderr. @cmd names the
 * subcommand in messages. */
int cli_plot_finish(struct cli_plot *p, const char *cmd);

#endif /* USWAP_TOOLS_CLI_H */
