/* SPDX-License-Identifier: MIT */
/*
 * run_cmd.h - `uswap run` (run_cmd.c).
 */
#ifndef USWAP_TOOLS_RUN_CMD_H
#define USWAP_TOOLS_RUN_CMD_H

/* `uswap run [OPTIONS] -- CMD [ARG]...`; argv[0] is "run". */
int cmd_run(int argc, char **argv);

#include <stdbool.h>

/*
 * run_stats_report() - add up the agents' stats lines in @stats (one per
 * process that had a pager), print them on stderr if @print, write them
 * to @json (if not NULL) with @status as exit_status. With no line, say
 * why there may be none, and write @json with exit_status and
 * "processes": 0 only (never a stale file from an earlier run).
 * Return: 0, or the CLI's runtime-error status (@json not writable).
 */
/* run_plot.c: --plot FILE.svg. new: NULL when out of memory; sample:
 * one reading of @pid's status socket (nothing if it does not answer);
 * finish: draw and free; 0, or -errno of the drawing (said on stderr;
 * no gnuplot, or no sample, is a note and 0). */
#define PLOT_PERIOD_MS 200
struct run_plot;
struct run_plot *run_plot_new(const char *path);
void run_plot_sample(struct run_plot *p, long pid);
int run_plot_finish(struct run_plot *p);

int run_stats_report(const char *stats, const char *cmd, bool print, const char *json,
		     int status);

#endif /* USWAP_TOOLS_RUN_CMD_H */
