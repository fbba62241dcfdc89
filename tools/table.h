/* SPDX-License-Identifier: MIT */
/*
 * table.h - the CLI's tables, as util-linux prints them (table.c).
 *
 * swapon --show, zramctl and lsblk build their tables with libsmartcols;
 * so does uswap, and it takes their options the same way: --output (-o)
 * picks columns by name, --bytes (-b) prints sizes in bytes instead of
 * K/M/G, --noheadings (-n), --raw (-r), and --json prints the table in
 * lsblk's wrapped shape, {"NAME": [ {column: value, ...}, ... ]}, with
 * the version of that shape beside it (CLI_TABLE_JSON_VERSION).
 *
 * A command describes its columns once (struct cli_col) and fills the
 * cells of each row by column index; cells of columns not shown are
 * dropped. Sizes are given in bytes and shown as util-linux does:
 * powers of 1024 with a one-letter suffix and at most one decimal.
 */
#ifndef USWAP_TOOLS_TABLE_H
#define USWAP_TOOLS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bumped when a table's JSON changes shape (a key renamed or removed). */
#define CLI_TABLE_JSON_VERSION 1

enum cli_col_kind {
	CLI_COL_STR,   /* text, left-aligned; a JSON string */
	CLI_COL_NUM,   /* an integer, right-aligned; a JSON number */
	CLI_COL_SIZE,  /* bytes: K/M/G unless --bytes; a JSON number of bytes */
	CLI_COL_FLOAT, /* a decimal, right-aligned; a JSON number */
};

struct cli_col {
	const char *name; /* the header and the --output name ("NAME", "MEM-USED") */
	enum cli_col_kind kind;
	const char *help; /* what it shows: the man page's column list says the same */
};

struct cli_table_opts {
	bool bytes, noheadings, raw, json;
	const char *output; /* "NAME,SIZE", or NULL: the table's defaults */
	bool output_all;    /* every column */
};

struct cli_table;

/*
 * cli_table_check_output() - whether every name in @list (comma-separated,
 * case-insensitive) is one of @cols. For option parsing: an unknown
 * column is a usage error naming it. Return: 0 or CLI_EXIT_USAGE
 * (message printed).
 */
int cli_table_check_output(const char *cmd, const struct cli_col *cols, size_t nr,
			   const char *list);

/*
 * cli_table_new() - a table named @name (its JSON key) over @cols, showing
 * @o->output's columns, else @defaults' (a comma list), in that order.
 * The lists must have been checked (cli_table_check_output()).
 * Return: the table (free with cli_table_free()), or NULL: no memory.
 */
struct cli_table *cli_table_new(const char *name, const struct cli_col *cols, size_t nr,
				const char *defaults, const struct cli_table_opts *o);
void cli_table_free(struct cli_table *t);

/* Start a new row; the cells below fill it. */
void cli_table_row(struct cli_table *t);
/* Cell @col of the current row (a CLI_COL_STR column: any; others: by kind). */
void cli_table_str(struct cli_table *t, int col, const char *s);
void cli_table_num(struct cli_table *t, int col, int64_t v);
void cli_table_size(struct cli_table *t, int col, uint64_t bytes);
void cli_table_float(struct cli_table *t, int col, double v, int decimals);

/*
 * cli_table_print() - the table on @out, each line after @indent (not in
 * JSON), or as JSON ({"version": N, "name": [...]}) with --json.
 * Return: 0, or -errno (no memory, the JSON did not parse back).
 */
int cli_table_print(struct cli_table *t, FILE *out, const char *indent);

/* A size as util-linux prints it: "512B", "14M", "14.2M", "1G". */
const char *cli_human_size(uint64_t bytes, char *buf, size_t len);

#endif /* USWAP_TOOLS_TABLE_H */
