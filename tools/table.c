// SPDX-License-Identifier: MIT
/*
 * table.c - the CLI's tables through libsmartcols (util-linux's table
 * library, Debian's libsmartcols-dev), with util-linux's options: see
 * table.h. libsmartcols aligns, truncates nothing when the output is not
 * a terminal, and writes --raw and --json; this file maps a command's
 * column descriptions onto it, formats sizes one way everywhere, and
 * adds the JSON's version key.
 */
#include "cli.h"
#include "table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>
#include <libsmartcols/libsmartcols.h>

#define MAX_COLS 32

struct cli_table {
	struct libscols_table *tb;
	struct libscols_line *ln;       /* the current row */
	const struct cli_col *cols;
	struct libscols_column *shown[MAX_COLS]; /* by column index; NULL: hidden */
	const char *name;
	struct cli_table_opts o;
};

static int find_col(const struct cli_col *cols, size_t nr, const char *name, size_t len)
{
	for (size_t i = 0; i < nr; i++)
		if (strlen(cols[i].name) == len && !strncasecmp(cols[i].name, name, len))
			return (int)i;
	return -1;
}

int cli_table_check_output(const char *cmd, const struct cli_col *cols, size_t nr,
			   const char *list)
{
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (!len || find_col(cols, nr, p, len) < 0)
			return cli_usage_error(cmd, "unknown column '%.*s' (see --help for the "
					       "columns)", (int)len, p);
		p += len + (p[len] == ',');
	}
	return 0;
}

static int add_column(struct cli_table *t, int i)
{
	const struct cli_col *c = &t->cols[i];
	bool right = c->kind != CLI_COL_STR;
	struct libscols_column *cl;

	if (t->shown[i])
		return 0; /* named twice: shown once */
	cl = scols_table_new_column(t->tb, c->name, 0, right ? SCOLS_FL_RIGHT : 0);
	if (!cl)
		return -ENOMEM;
	scols_column_set_json_type(cl, right ? SCOLS_JSON_NUMBER : SCOLS_JSON_STRING);
	t->shown[i] = cl;
	return 0;
}

static int add_columns(struct cli_table *t, size_t nr, const char *list)
{
	if (!list) {
		for (size_t i = 0; i < nr; i++)
			if (add_column(t, (int)i))
				return -ENOMEM;
		return 0;
	}
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		int i = find_col(t->cols, nr, p, len);

		if (i >= 0 && add_column(t, i))
			return -ENOMEM;
		p += len + (p[len] == ',');
	}
	return 0;
}

struct cli_table *cli_table_new(const char *name, const struct cli_col *cols, size_t nr,
				const char *defaults, const struct cli_table_opts *o)
{
	struct cli_table *t = calloc(1, sizeof(*t));

	if (!t || nr > MAX_COLS || !(t->tb = scols_new_table())) {
		free(t);
		return NULL;
	}
	t->cols = cols;
	t->name = name;
	t->o = *o;
	scols_table_set_name(t->tb, name);
	scols_table_enable_raw(t->tb, o->raw);
	scols_table_enable_noheadings(t->tb, o->noheadings);
	scols_table_enable_json(t->tb, o->json);
	if (add_columns(t, nr, o->output_all ? NULL : o->output ? o->output : defaults)) {
		cli_table_free(t);
		return NULL;
	}
	return t;
}

void cli_table_free(struct cli_table *t)
{
	if (!t)
		return;
	scols_unref_table(t->tb);
	free(t);
}

void cli_table_row(struct cli_table *t)
{
	t->ln = scols_table_new_line(t->tb, NULL);
}

void cli_table_str(struct cli_table *t, int col, const char *s)
{
	if (t->ln && t->shown[col])
		scols_line_set_column_data(t->ln, t->shown[col], s ? s : "");
}

void cli_table_num(struct cli_table *t, int col, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cli_table_str(t, col, buf);
}

/* In JSON a size is always a number of bytes: a reader should not have
 * to parse "14.2M". */
void cli_table_size(struct cli_table *t, int col, uint64_t bytes)
{
	char buf[32];

	if (t->o.bytes || t->o.json)
		snprintf(buf, sizeof(buf), "%" PRIu64, bytes);
	else
		cli_human_size(bytes, buf, sizeof(buf));
	cli_table_str(t, col, buf);
}

void cli_table_float(struct cli_table *t, int col, double v, int decimals)
{
	char buf[48];

	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	cli_table_str(t, col, buf);
}

/* libsmartcols writes {"name": [...]}; the version goes beside it. */
static int print_json(struct cli_table *t, FILE *out, const char *text)
{
	json_object *in = json_tokener_parse(text), *rows, *doc;

	if (!in || !json_object_object_get_ex(in, t->name, &rows)) {
		json_object_put(in);
		return -EINVAL;
	}
	doc = json_object_new_object();
	json_object_object_add(doc, "version", json_object_new_int(CLI_TABLE_JSON_VERSION));
	json_object_object_add(doc, t->name, json_object_get(rows));
	fprintf(out, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								JSON_C_TO_STRING_SPACED));
	json_object_put(doc);
	json_object_put(in);
	return 0;
}

int cli_table_print(struct cli_table *t, FILE *out, const char *indent)
{
	char *text = NULL;
	int rc = 0;

	if (scols_print_table_to_string(t->tb, &text) || !text)
		return -ENOMEM;
	if (t->o.json) {
		rc = print_json(t, out, text);
	} else {
		for (char *line = text; *line;) {
			size_t n = strcspn(line, "\n");

			fprintf(out, "%s%.*s\n", indent ? indent : "", (int)n, line);
			line += n + (line[n] == '\n');
		}
	}
	free(text);
	return rc;
}

const char *cli_human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "BKMGTPE";
	double v = (double)bytes;
	int u = 0;
	char *dot;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f", v);
	if (u < 6 && atof(buf) >= 1024) /* 1023.96M rounds to 1024.0: that is 1G */
		snprintf(buf, len, "%.1f", v / 1024), u++;
	dot = strchr(buf, '.');
	if (dot && !strcmp(dot, ".0"))
		*dot = '\0';
	snprintf(buf + strlen(buf), len - strlen(buf), "%c", units[u]);
	return buf;
}
