/* SPDX-License-Identifier: MIT */
/*
 * status_cmd.h - `uswap status` (status_cmd.c), and its tables for the
 * commands that print the same things: `uswap run --stats`, `uswap
 * swapon --show`.
 */
#ifndef USWAP_TOOLS_STATUS_CMD_H
#define USWAP_TOOLS_STATUS_CMD_H

#include <stdio.h>

struct cli_table_opts; /* table.h */
struct json_object;

/* The version of `uswap status --json`'s full document. */
#define STATUS_JSON_VERSION 1

/* `uswap status [options] [PID]`; argv[0] is "status". */
int cmd_status(int argc, char **argv);

/*
 * status_swapon_show() - swapon --show's table of every running program's
 * devices (a PID column first), with @t's options; @cmd names the command
 * in messages. Return: an exit code (0, CLI_EXIT_RUNTIME, CLI_EXIT_USAGE:
 * a column that does not exist).
 */
int status_swapon_show(const char *cmd, const struct cli_table_opts *t);

/* status_ask_pid() - the state process @pid publishes on its status
 * socket (an object of `uswap status --json PID`'s "processes"), or NULL
 * with errno (nobody listens, a malformed answer). The caller puts it. */
struct json_object *status_ask_pid(long pid);

/*
 * status_print_devices(), status_print_zram() - the devices of @o (one
 * process's state) as swapon --show's table (NAME TYPE SIZE USED PRIO),
 * and its zram devices as zramctl's (NAME ALGORITHM DISKSIZE DATA COMPR
 * TOTAL; nothing without one), each line after @indent, with @t's options.
 * Return: 0 or -ENOMEM.
 */
int status_print_devices(FILE *out, struct json_object *o, const char *indent,
			 const struct cli_table_opts *t);
int status_print_zram(FILE *out, struct json_object *o, const char *indent,
		      const struct cli_table_opts *t);

#endif /* USWAP_TOOLS_STATUS_CMD_H */
