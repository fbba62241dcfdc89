/* SPDX-License-Identifier: MIT */
/*
 * json.c - --json output: the document is built with json-c as the
 * command goes and printed once, by cli_json_finish(), with json-c's
 * pretty printer (two-space indent, a space after each colon). Misuse
 * (closing more than was opened, a value with no container, nesting past
 * CLI_JSON_MAX_DEPTH) is a programming error and aborts; so does running
 * out of memory for the document.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

void cli_json_init(struct cli_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->stack[0] = NULL;
}

/* Put @v (NULL: null) in the open container, under @key in an object. At
 * depth 0 it becomes the document. */
static void add(struct cli_json *j, const char *key, struct json_object *v)
{
	struct json_object *parent;

	if (j->depth == 0) {
		if (j->stack[0])
			abort(); /* a second document */
		j->stack[0] = v;
		return;
	}
	parent = j->stack[j->depth];
	if (json_object_is_type(parent, json_type_array)) {
		if (json_object_array_add(parent, v))
			abort();
	} else if (!key || json_object_object_add(parent, key, v)) {
		abort();
	}
}

static struct json_object *made(struct json_object *v)
{
	if (!v)
		abort(); /* out of memory */
	return v;
}

static void open_container(struct cli_json *j, const char *key, struct json_object *c)
{
	if (j->depth + 1 >= CLI_JSON_MAX_DEPTH)
		abort();
	bool document = j->depth == 0;

	add(j, key, made(c));
	if (document && j->stack[0] != c)
		abort();
	j->stack[++j->depth] = c;
	/* Every document that is an object says its shape's version first. */
	if (document && json_object_is_type(c, json_type_object))
		add(j, "version", made(json_object_new_int(CLI_JSON_VERSION)));
}

static void close_container(struct cli_json *j, json_type type)
{
	if (j->depth == 0 || !json_object_is_type(j->stack[j->depth], type))
		abort();
	j->depth--;
}

void cli_json_object_open(struct cli_json *j, const char *key, bool inline_)
{
	(void)inline_;
	open_container(j, key, json_object_new_object());
}

void cli_json_object_close(struct cli_json *j)
{
	close_container(j, json_type_object);
}

void cli_json_array_open(struct cli_json *j, const char *key, bool inline_)
{
	(void)inline_;
	open_container(j, key, json_object_new_array());
}

void cli_json_array_close(struct cli_json *j)
{
	close_container(j, json_type_array);
}

void cli_json_u64(struct cli_json *j, const char *key, uint64_t v)
{
	add(j, key, made(json_object_new_uint64(v)));
}

void cli_json_i64(struct cli_json *j, const char *key, int64_t v)
{
	add(j, key, made(json_object_new_int64(v)));
}

void cli_json_double(struct cli_json *j, const char *key, double v)
{
	char text[32];

	if (!isfinite(v)) {
		add(j, key, NULL);
		return;
	}
	/* Ten significant digits, as measured figures deserve, instead of
	 * json-c's round-trip seventeen. */
	snprintf(text, sizeof(text), "%.10g", v);
	add(j, key, made(json_object_new_double_s(v, text)));
}

/* Length of the valid UTF-8 sequence at @s, or 0 (a stray byte). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
		 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong three- and four-byte forms, surrogates, past U+10FFFF. */
	if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
	    (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
		return 0;
	return n;
}

/* JSON text is UTF-8: a byte that is not (a spec or path typed in another
 * encoding) becomes U+FFFD, so the document stays valid. */
void cli_json_string(struct cli_json *j, const char *key, const char *s)
{
	size_t len = strlen(s), o = 0;
	char *clean = malloc(3 * len + 1);

	if (!clean)
		abort(); /* out of memory */
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);

		if (n) {
			memcpy(clean + o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(clean + o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	clean[o] = '\0';
	add(j, key, made(json_object_new_string(clean)));
	free(clean);
}

void cli_json_bool(struct cli_json *j, const char *key, bool v)
{
	add(j, key, made(json_object_new_boolean(v)));
}

void cli_json_finish(struct cli_json *j)
{
	const char *text;

	if (j->depth != 0 || !j->stack[0])
		abort();
	text = json_object_to_json_string_ext(j->stack[0], JSON_C_TO_STRING_PRETTY |
					      JSON_C_TO_STRING_SPACED |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	fputs(text, j->out);
	fputc('\n', j->out);
	fflush(j->out);
	json_object_put(j->stack[0]);
	j->stack[0] = NULL;
}
