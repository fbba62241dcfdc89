/* SPDX-License-Identifier: MIT */
/*
 * json.c - a small streaming JSON writer for --json output.
 *
 * The writer keeps, per open container, whether a member was written (so
 * the next one needs a comma) and whether the container is printed on one
 * line. Block containers put each member on its own line, indented by two
 * spaces per level. Misuse (closing more than was opened, nesting past
 * CLI_JSON_MAX_DEPTH) is a programming error and aborts.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>

void cli_json_init(struct cli_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->has_member[0] = false;
	j->is_inline[0] = false;
}

static void write_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* The comma, line break and indentation before a member, then its key. */
static void begin_member(struct cli_json *j, const char *key)
{
	int d = j->depth;

	if (d == 0)
		return;
	if (j->has_member[d])
		fputc(',', j->out);
	if (j->is_inline[d]) {
		if (j->has_member[d])
			fputc(' ', j->out);
	} else {
		fprintf(j->out, "\n%*s", 2 * d, "");
	}
	j->has_member[d] = true;
	if (key) {
		write_string(j->out, key);
		fputs(": ", j->out);
	}
}

static void open_container(struct cli_json *j, const char *key, bool inline_,
			   char brace)
{
	begin_member(j, key);
	if (j->depth + 1 >= CLI_JSON_MAX_DEPTH)
		abort();
	fputc(brace, j->out);
	j->depth++;
	j->has_member[j->depth] = false;
	/* Inside a one-line container everything stays on that line. */
	j->is_inline[j->depth] = inline_ || j->is_inline[j->depth - 1];
}

static void close_container(struct cli_json *j, char brace)
{
	int d = j->depth;

	if (d == 0)
		abort();
	if (!j->is_inline[d] && j->has_member[d])
		fprintf(j->out, "\n%*s", 2 * (d - 1), "");
	fputc(brace, j->out);
	j->depth--;
}

void cli_json_object_open(struct cli_json *j, const char *key, bool inline_)
{
	open_container(j, key, inline_, '{');
}

void cli_json_object_close(struct cli_json *j)
{
	close_container(j, '}');
}

void cli_json_array_open(struct cli_json *j, const char *key, bool inline_)
{
	open_container(j, key, inline_, '[');
}

void cli_json_array_close(struct cli_json *j)
{
	close_container(j, ']');
}

void cli_json_u64(struct cli_json *j, const char *key, uint64_t v)
{
	begin_member(j, key);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void cli_json_i64(struct cli_json *j, const char *key, int64_t v)
{
	begin_member(j, key);
	fprintf(j->out, "%lld", (long long)v);
}

void cli_json_double(struct cli_json *j, const char *key, double v)
{
	begin_member(j, key);
	if (isfinite(v))
		fprintf(j->out, "%.10g", v);
	else
		fputs("null", j->out);
}

void cli_json_string(struct cli_json *j, const char *key, const char *s)
{
	begin_member(j, key);
	write_string(j->out, s);
}

void cli_json_bool(struct cli_json *j, const char *key, bool v)
{
	begin_member(j, key);
	fputs(v ? "true" : "false", j->out);
}

void cli_json_finish(struct cli_json *j)
{
	if (j->depth != 0)
		abort();
	fputc('\n', j->out);
	fflush(j->out);
}
